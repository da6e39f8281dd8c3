"""secant.random: JAX's explicit-key PRNG, bit for bit.

Keys are uint32[2] arrays (JAX's legacy "raw" keys): `PRNGKey(seed)` / `key(seed)` make one,
`split` and `fold_in` derive new ones, and every sampler is a pure function of its key. There
is no global state anywhere: the same key gives the same numbers eagerly (NumPy), under
`secant.jit` (XLA) and inside `lax.fori_loop` / `scan` bodies.

The generator is threefry-2x32 (20 rounds), written below with secant.lax's uint32 add / xor /
shift / or, and the stream is JAX's default one since jax 0.5 (`jax_threefry_partitionable`):
the counters of an output of shape `shape` are the row-major indices 0..size-1 (the high word
of the 64-bit counter is 0), and 32 random bits are the xor of the two threefry output words.
The samplers follow jax.random's recipes (uniform from mantissa bits, normal through erf_inv,
Gumbel-max categorical, sort-based permutation, ...), so values agree with jax.random's.

Every function here is plain Python over secant.lax / secant.numpy ops whose Python control
flow depends only on static things (shapes, dtypes, the `shape`/`dtype` arguments), so jit
traces them as they are and a source transform can read them.
"""
import math
import operator

import numpy as np

import secant.numpy as snp
from secant import dtypes as secant_dtypes
from secant import lax
from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import Tracer
from secant.backends.errors import ConcretizationError, SecantTypeError, SecantValueError, where
from secant.numpy.conversion import dtype_weak

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "threefry_2x32",
           "bits", "uniform", "normal", "bernoulli", "randint", "categorical", "choice",
           "permutation", "truncated_normal", "gumbel", "exponential", "cauchy", "laplace",
           "logistic", "rademacher", "maxwell", "orthogonal", "geometric", "poisson",
           "binomial", "multinomial", "clone", "key_impl", "key_dtype"]

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = 0x1BD11BDA


# --- keys ----------------------------------------------------------------------------------------
def _describe(x):
    dt, _ = dtype_weak(x)
    return f"{dt.name}{list(np.shape(x))}"


def _as_key_array(name, key):
    """The key as a secant array, or a SecantTypeError naming the user's line."""
    if isinstance(key, (Array, Tracer)):
        arr = key
    elif isinstance(key, (np.ndarray, np.generic, list, tuple)):
        arr = snp.asarray(key)
    else:
        raise SecantTypeError(f"{name}: expected a PRNG key (a uint32[2] array from "
                              f"secant.random.PRNGKey, key, split or fold_in), got "
                              f"{type(key).__name__}{where()}")
    if arr.dtype != dtypes.uint32 or arr.shape[-1:] != (2,):
        raise SecantTypeError(f"{name}: invalid PRNG key: expected a uint32[2] array (from "
                              f"secant.random.PRNGKey, key, split or fold_in), got "
                              f"{_describe(arr)}{where()}")
    return arr


class KeyBatch:
    """A batch of keys (uint32[..., 2]) handed to a sampler by vmap's helper
    (batching/helpers.py random_batched): the sampler hashes every key at once and its result
    gets the keys' batch shape in front. Only an explicit wrapper turns this on, so a plain
    key array passed by mistake is still an error."""

    def __init__(self, keys):
        self.keys = keys


def _check_key(name, key):
    if isinstance(key, KeyBatch):
        return _as_key_array(name, key.keys)
    arr = _as_key_array(name, key)
    if arr.shape != (2,):
        raise SecantTypeError(f"{name} accepts a single key, but was given a key array of "
                              f"shape {arr.shape[:-1]} (key data {_describe(arr)}); map over "
                              f"a batch of keys with vmap or a loop{where()}")
    return arr


# Every function below takes a key of shape batch + (2,): batch is () for one key, the batch
# shape under vmap (KeyBatch). Threefry is elementwise in the key words, so a batch of keys is
# the key words with the batch axes in front, broadcast against the counters: the same bits as
# one key at a time. Results carry the batch axes in front.
def _batch_ndim(key):
    return len(key.shape) - 1


def _key_words(key, rank=0):
    """The two uint32 words of a key (shape: the key's batch shape, then `rank` 1s, to
    broadcast against counters of that rank)."""
    shape = tuple(key.shape[:-1]) + (1,) * rank
    k1 = lax.reshape(lax.slice_in_dim(key, 0, 1, axis=-1), shape)
    k2 = lax.reshape(lax.slice_in_dim(key, 1, 2, axis=-1), shape)
    return k1, k2


def _make_key(hi, lo):
    return lax.concatenate([lax.expand_dims(hi, (hi.ndim,)), lax.expand_dims(lo, (lo.ndim,))],
                           hi.ndim)


# secant has JAX's default implementation only: threefry2x32 (JAX's tag for it: "fry")
IMPL = "threefry2x32"
_KEY_DTYPE = secant_dtypes.KeyDType(IMPL, "fry")


def _check_impl(name, impl):
    """impl= / dtype= of a key constructor: None or a spelling of threefry2x32."""
    if impl is None or impl == IMPL or impl == _KEY_DTYPE:
        return
    if isinstance(impl, str):
        raise SecantValueError(f"{name}: PRNG implementation {impl!r} is not available: secant "
                               f"has {IMPL!r} (JAX's default) only{where()}")
    raise SecantTypeError(f"{name}: unrecognized type {type(impl).__name__} for specifying a "
                          f"PRNG implementation{where()}")


def key_impl(keys):
    """The name of the PRNG implementation of keys (checked to be key data): 'threefry2x32'."""
    _as_key_array("key_impl", keys)
    return IMPL


key_impl.__secant_static_query__ = True      # (a name, whatever the keys' values)


def key_dtype(impl_spec=None):
    """The dtype of typed keys of the implementation (`key<fry>`; secant's keys themselves are
    uint32 key data): issubdtype(key_dtype(), dtypes.prng_key) is True, as in JAX."""
    _check_impl("key_dtype", impl_spec)
    return _KEY_DTYPE


def PRNGKey(seed, *, impl=None):
    """A PRNG key (uint32[2]) from an integer seed: `[seed >> 32, seed & 0xFFFFFFFF]`.

    As in JAX, a 32-bit seed (every seed unless x64 is enabled: a Python int then wraps to
    int32) gives `[0, seed mod 2**32]`; a 64-bit seed is split into its two words."""
    _check_impl("PRNGKey", impl)
    if type(seed) is bool or isinstance(seed, np.bool_):
        raise SecantTypeError(f"PRNG key seed must be an integer, got {seed!r}{where()}")
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 64:
            raise SecantValueError(f"PRNG key seed {seed} does not fit in 64 bits{where()}")
        if seed >= 2 ** 63:
            seed -= 2 ** 64
        if dtypes.x64_enabled():
            seed = snp.asarray(np.int64(seed))
        else:
            seed = snp.asarray(np.int64(seed).astype(np.int32))   # wraps, as jax does
    elif not isinstance(seed, (Array, Tracer)):
        seed = snp.asarray(seed)
    if np.ndim(seed) != 0:
        raise SecantTypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                              f"{np.shape(seed)}; map over seeds with vmap or a loop{where()}")
    dt = seed.dtype
    if not dtypes.is_int(dt):
        raise SecantTypeError(f"PRNG key seed must be an integer, got {_describe(seed)}{where()}")
    lo = lax.convert_element_type(seed, dtypes.uint32)            # the low word (wraps)
    if dt.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, 32), dtypes.uint32)
    else:
        hi = lax.full((), 0, dtypes.uint32)
    return _make_key(hi, lo)


def key(seed, *, impl=None, dtype=None):
    """Same as `PRNGKey`: secant's keys are raw uint32[2] arrays (JAX's typed key arrays are not
    modelled), so `key_data(key(s))` is the key itself."""
    _check_impl("key", impl)
    _check_impl("key", dtype)
    return PRNGKey(seed)


def key_data(keys):
    """The uint32 data of a key or an array of keys (shape (..., 2))."""
    return _as_key_array("key_data", keys)


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """A key (array) from its uint32 data; checks its shape and dtype."""
    _check_impl("wrap_key_data", impl)
    _check_impl("wrap_key_data", dtype)
    return _as_key_array("wrap_key_data", key_bits_array)


# --- threefry-2x32 -------------------------------------------------------------------------------
def _rotate_left(x, d):
    return lax.bitwise_or(lax.shift_left(x, d), lax.shift_right_logical(x, 32 - d))


def _threefry2x32(k1, k2, x0, x1):
    """The threefry-2x32 hash (20 rounds) of the counter pairs (x0, x1) under the key (k1, k2);
    all uint32, broadcast together. Returns the two output words."""
    k3 = lax.bitwise_xor(lax.bitwise_xor(k1, k2), _KS_PARITY)
    ks = (k1, k2, k3)
    x0 = lax.add(x0, k1)
    x1 = lax.add(x1, k2)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(x0, _rotate_left(x1, r))
        x0 = lax.add(x0, ks[(i + 1) % 3])
        x1 = lax.add(x1, lax.add(ks[(i + 2) % 3], i + 1))    # key injection: a scalar add first
    return x0, x1


def threefry_2x32(keypair, count):
    """jax.random.threefry_2x32: hashes a uint32 array `count` under a key. The flattened count
    is cut into halves (zero-padded when odd) that form the counter pairs; the result has
    `count`'s shape."""
    keypair = _check_key("threefry_2x32", keypair)
    count = snp.asarray(count)
    if count.dtype != dtypes.uint32:
        raise SecantTypeError(f"threefry_2x32 requires a uint32 count, got {_describe(count)}"
                              + where())
    shape = count.shape
    n = math.prod(shape)
    flat = lax.reshape(count, (n,))
    odd = n % 2
    if odd:
        flat = lax.concatenate([flat, lax.full((1,), 0, dtypes.uint32)], 0)
    half = (n + odd) // 2
    k1, k2 = _key_words(keypair)
    y0, y1 = _threefry2x32(k1, k2, lax.slice(flat, (0,), (half,)),
                           lax.slice(flat, (half,), (2 * half,)))
    out = lax.concatenate([y0, y1], 0)
    if odd:
        out = lax.slice(out, (0,), (n,))
    return lax.reshape(out, shape)


def _counters(shape):
    """The low words of the row-major counters 0..size-1 (JAX's iota_2x32_shape; the high words
    are 0 for every array that fits in memory)."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise SecantValueError(f"random arrays of 2**32 or more elements are not supported, got "
                               f"shape {shape}{where()}")
    if not shape:
        return lax.full((), 0, dtypes.uint32)
    return lax.reshape(lax.iota(dtypes.uint32, size), shape)


def _hash_shape(key, shape):
    k1, k2 = _key_words(key, len(shape))
    return _threefry2x32(k1, k2, 0, _counters(shape))


def _split(key, shape):
    return _make_key(*_hash_shape(key, shape))


def _two(key):
    keys = _split(key, (2,))
    batch = tuple(keys.shape[:-2])
    return lax.reshape(lax.slice_in_dim(keys, 0, 1, axis=-2), batch + (2,)), \
        lax.reshape(lax.slice_in_dim(keys, 1, 2, axis=-2), batch + (2,))


def _random_bits(key, bit_width, shape):
    b1, b2 = _hash_shape(key, shape)
    if bit_width == 64:
        hi = lax.convert_element_type(b1, dtypes.uint64)
        lo = lax.convert_element_type(b2, dtypes.uint64)
        return lax.bitwise_or(lax.shift_left(hi, 32), lo)
    out = lax.bitwise_xor(b1, b2)
    if bit_width != 32:
        out = lax.convert_element_type(out, _UINT[bit_width])
    return out


# --- argument checks ---------------------------------------------------------------------------
def _shape(name, shape):
    """A static shape tuple; an int stands for a 1-d shape, as in JAX."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise SecantTypeError(f"{name}: shape must be a tuple of non-negative integers, got "
                              f"{shape!r}{where()}")
    out = []
    for d in shape:
        if isinstance(d, Tracer):
            raise ConcretizationError(f"{name}: shape entries must be static Python integers, "
                                      f"got a traced value{where()}")
        try:
            d = operator.index(d)
        except TypeError:
            raise SecantTypeError(f"{name}: shape must be a tuple of non-negative integers, "
                                  f"got {shape!r}{where()}") from None
        if d < 0:
            raise SecantValueError(f"{name}: shape must be a tuple of non-negative integers, "
                                   f"got {tuple(shape)!r}{where()}")
        out.append(d)
    return tuple(out)


def _dtype(name, dtype, kind, default, error=SecantValueError):
    """The canonical dtype asked for (`default` when None), checked against `kind`."""
    if dtype is None:
        dtype = default()
    try:
        dt = dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise SecantTypeError(f"{name}: {dtype!r} is not a dtype{where()}") from None
    ok = {"float": dtypes.is_float, "inexact": dtypes.is_inexact, "int": dtypes.is_int,
          "uint": dtypes.is_unsigned}[kind](dt)
    if not ok:
        what = {"float": "a float", "inexact": "a float or complex", "int": "an integer",
                "uint": "an unsigned integer"}[kind]
        raise error(f"dtype argument to `{name}` must be {what} dtype, got "
                               f"{dt.name}{where()}")
    return dt


def _default_uint():
    return dtypes.uint64 if dtypes.x64_enabled() else dtypes.uint32


def _check_shape(name, shape, *param_shapes):
    """The parameters must broadcast to exactly `shape`."""
    if param_shapes:
        try:
            full = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            full = None
        if full != tuple(shape):
            raise SecantValueError(
                f"{name}: parameter shapes {', '.join(str(tuple(s)) for s in param_shapes)} must "
                f"broadcast to the shape argument {tuple(shape)}{where()}")


def _broadcast_to_rank(x, rank):
    nd = np.ndim(x)
    if nd >= rank:
        return x
    return lax.reshape(x, (1,) * (rank - nd) + tuple(np.shape(x)))


# --- samplers ------------------------------------------------------------------------------------
def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers (default uint32, uint64 under x64)."""
    key = _check_key("bits", key)
    dtype = _dtype("bits", dtype, "uint", _default_uint)
    shape = _shape("bits", shape)
    return _random_bits(key, dtype.itemsize * 8, shape)


def _uniform(key, shape, dtype, minval, maxval):
    finfo = dtypes.finfo(dtype)
    nbits, nmant = int(finfo.bits), int(finfo.nmant)
    rng_bits = nbits if nmant >= 8 else 8
    uint_dtype = _UINT[nbits]
    rbits = _random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        rbits = lax.convert_element_type(rbits, uint_dtype)
    # random mantissa bits under the exponent of 1.0: a float in [1, 2), minus 1
    one_bits = int(np.array(1.0, dtype).view(uint_dtype))
    float_bits = lax.bitwise_or(lax.shift_right_logical(rbits, rng_bits - nmant), one_bits)
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), 1.0)
    minval = _broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
    maxval = _broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
    _check_shape("uniform", shape, minval.shape, maxval.shape)
    scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
    return lax.max(minval, scaled)      # broadcast: minval has shape's rank


def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
    """Uniform floats in [minval, maxval) (default float32, float64 under x64)."""
    key = _check_key("uniform", key)
    shape = _shape("uniform", shape)
    dtype = _dtype("uniform", dtype, "float", dtypes.default_float)
    return _uniform(key, shape, dtype, minval, maxval)


def _minus_one_up(dtype):
    """nextafter(-1, 0) in `dtype`: the open lower end normal() samples from."""
    return -(1.0 - float(dtypes.finfo(dtype).epsneg))


def _normal_real(key, shape, dtype):
    u = _uniform(key, shape, dtype, _minus_one_up(dtype), 1.0)
    return lax.mul(lax.erf_inv(u), float(np.sqrt(2)))


def normal(key, shape=(), dtype=None):
    """Standard normal floats (or complex values with independent real and imaginary parts of
    variance 1/2): sqrt(2) * erf_inv(u) with u uniform in (-1, 1)."""
    key = _check_key("normal", key)
    shape = _shape("normal", shape)
    dtype = _dtype("normal", dtype, "inexact", dtypes.default_float)
    if dtypes.is_complex(dtype):
        real_dtype = np.array(0, dtype).real.dtype
        key_re, key_im = _two(key)
        re = lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
        im = lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
        z = lax.add(re, lax.mul(im, 1j))
        return lax.div(z, complex(np.sqrt(2)))
    return _normal_real(key, shape, dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal floats conditioned on lower < x < upper (the result's shape broadcasts
    lower and upper when `shape` is None)."""
    key = _check_key("truncated_normal", key)
    dtype = _dtype("truncated_normal", dtype, "float", dtypes.default_float)
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(lower), np.shape(upper)))
    else:
        shape = _shape("truncated_normal", shape)
        _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    sqrt2 = float(np.sqrt(2))
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = _uniform(key, shape, dtype, a, b)
    out = lax.mul(lax.erf_inv(u), sqrt2)
    # keep the result inside the open interval despite rounding
    lo = lax.nextafter(lax.stop_gradient(lower), np.inf)     # (bounds of rounding: constants)
    hi = lax.nextafter(lax.stop_gradient(upper), -np.inf)
    return snp.clip(out, lo, hi)


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability p (`uniform < p`, in p's float dtype)."""
    key = _check_key("bernoulli", key)
    dt, _ = dtype_weak(p)
    if not dtypes.is_float(dt):
        raise SecantTypeError(f"bernoulli probability `p` must have a floating dtype, got "
                              f"{dt.name}{where()}")
    p = lax.convert_element_type(p, dt)
    if shape is None:
        shape = p.shape
    else:
        shape = _shape("bernoulli", shape)
        _check_shape("bernoulli", shape, p.shape)
    return lax.lt(_uniform(key, shape, dt, 0.0, 1.0), p)


def _convert_and_clip_integer(val, dtype):
    """`val` (integer) converted to the integer `dtype`, clipping to its range instead of
    wrapping."""
    lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(val.dtype).min))
    hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(val.dtype).max))
    return lax.convert_element_type(snp.clip(val, lo, hi), dtype)


def _rem(x, span):
    """x % span, with x % 0 == x (XLA's rule for integers, spelled out so NumPy agrees)."""
    return lax.select(lax.eq(span, 0), x, lax.rem(x, lax.select(lax.eq(span, 0),
                                                                lax.full_like(span, 1), span)))


def _randint(key, shape, minval, maxval, dtype):
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    minval = snp.asarray(minval)
    maxval = snp.asarray(maxval)
    if not dtypes.is_int(minval.dtype):
        minval = minval.astype(dtypes.default_int())
    if not dtypes.is_int(maxval.dtype):
        maxval = maxval.astype(dtypes.default_int())
    top = _convert_and_clip_integer(snp.asarray(int(dtypes.iinfo(dtype).max), dtype),
                                    maxval.dtype)
    maxval_out_of_range = lax.gt(maxval, top)
    minval = _broadcast_to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
    maxval = _broadcast_to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
    nbits = int(dtypes.iinfo(dtype).bits)
    # 2 * nbits random bits per value, to make the modulus' bias small
    k1, k2 = _two(key)
    higher_bits = _random_bits(k1, nbits, shape)
    lower_bits = _random_bits(k2, nbits, shape)
    unsigned = _UINT[nbits]
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)    # minval always
    # a maxval beyond the dtype's range widens the span by one (wrapping to 0 = everything)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, 1), span)
    # (hi * 2**nbits + lo) % span, with 2**nbits % span computed without overflow
    multiplier = _rem(lax.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = _rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(_rem(higher_bits, span), multiplier), _rem(lower_bits, span))
    offset = _rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in [minval, maxval) (default int32, int64 under x64). As JAX's, it
    reduces 2 * nbits random bits modulo the span (8- and 16-bit types are sampled at 32)."""
    key = _check_key("randint", key)
    dtype = _dtype("randint", dtype, "int", dtypes.default_int, SecantTypeError)
    shape = _shape("randint", shape)
    info = dtypes.iinfo(dtype)
    if info.bits < 32:
        minval = snp.clip(snp.asarray(minval).astype(dtypes.int32), int(info.min), int(info.max))
        maxval = snp.clip(snp.asarray(maxval).astype(dtypes.int32), int(info.min),
                          int(info.max) + 1)
        return lax.convert_element_type(_randint(key, shape, minval, maxval, dtypes.int32),
                                        dtype)
    return _randint(key, shape, minval, maxval, dtype)


def _gumbel(key, shape, dtype, mode):
    finfo = dtypes.finfo(dtype)
    if mode == "high":
        both = _uniform(key, (2,) + shape, dtype, 0.0, 1.0)
        out_shape = tuple(key.shape[:-1]) + shape
        high = lax.reshape(lax.slice_in_dim(both, 0, 1, axis=-len(shape) - 1), out_shape)
        low = lax.reshape(lax.slice_in_dim(both, 1, 2, axis=-len(shape) - 1), out_shape)
        refined = lax.add(lax.add(high, lax.mul(low, float(2.0 ** -int(finfo.nmant)))),
                          float(finfo.tiny))
        x = lax.select(lax.ge(high, 0.5), high, refined)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform(key, shape, dtype, float(finfo.tiny), 1.0)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("low", "high"):
        raise SecantValueError(f"gumbel: mode must be 'low' or 'high', got {mode!r} ('highest' "
                               f"is not supported){where()}")
    return mode


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats, -log(-log(u)); mode='high' draws two uniforms per value for a
    wider range of large values."""
    key = _check_key("gumbel", key)
    dtype = _dtype("gumbel", dtype, "float", dtypes.default_float)
    shape = _shape("gumbel", shape)
    return _gumbel(key, shape, dtype, _gumbel_mode(mode))


def exponential(key, shape=(), dtype=None):
    """Standard exponential floats, -log1p(-u)."""
    key = _check_key("exponential", key)
    dtype = _dtype("exponential", dtype, "float", dtypes.default_float)
    shape = _shape("exponential", shape)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def _axis(name, axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise SecantValueError(f"{name}: axis {axis} is out of bounds for an array of "
                               f"dimension {ndim}{where()}")
    return axis % max(ndim, 1)


def _top_k_indices(x, k):
    """Indices of the k largest entries along the last axis, largest first (lax.top_k's order:
    equal values keep their index order)."""
    order = snp.argsort(lax.neg(x), axis=-1, stable=True)
    return lax.slice_in_dim(order, 0, k, axis=-1)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples of categories with unnormalised log-probabilities `logits` (along `axis`): the
    Gumbel-max trick, or Gumbel top-k when replace=False."""
    key = _check_key("categorical", key)
    logits = snp.asarray(logits)
    ndim = logits.ndim
    if ndim == 0:
        raise SecantValueError(f"categorical: logits must have at least one dimension{where()}")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise SecantValueError(f"categorical: axis {axis} is out of bounds for logits of "
                               f"dimension {ndim}{where()}")
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    mode = _gumbel_mode(mode)
    if not dtypes.is_float(logits.dtype):
        raise SecantValueError(f"categorical: logits must be floats, got {logits.dtype.name}"
                               + where())
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        neg_axis = axis - ndim if axis >= 0 else axis
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(neg_axis % ndim, logits.shape[neg_axis])
        g = _gumbel(key, (*prefix, *logits_shape), logits.dtype, mode)
        shifted = lax.add(g, lax.expand_dims(logits, tuple(range(len(prefix)))))
        return snp.argmax(shifted, axis=neg_axis)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise SecantValueError(f"categorical: number of samples without replacement ({k}) "
                               f"cannot exceed number of categories "
                               f"({logits.shape[axis]}){where()}")
    perturbed = lax.add(logits, _gumbel(key, logits.shape, logits.dtype, mode))
    indices = _top_k_indices(snp.moveaxis(perturbed, axis - ndim if axis >= 0 else axis, -1), k)
    indices = lax.convert_element_type(indices, dtypes.int32)
    nd, b = indices.ndim, _batch_ndim(key)      # the k samples go first, after the keys' batch
    return lax.reshape(indices, tuple(key.shape[:-1]) + shape,
                       (*range(b), nd - 1, *range(b, nd - 1)))


def _shuffle(key, x, axis):
    """x shuffled along `axis` by sorting on fresh random 32-bit keys, repeated
    ceil(3 ln(n) / ln(2**32 - 1)) times so that ties between keys are all but impossible."""
    shape = x.shape
    size = math.prod(shape)
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        key, subkey = _two(key)
        sort_keys = _random_bits(subkey, 32, shape)
        if x.shape != sort_keys.shape:      # a batch of keys: one x per key
            x = snp.broadcast_to(x, sort_keys.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis + _batch_ndim(key))
    return x


def _take(arr, ind, axis, key):
    """snp.take(arr, ind, axis), with the keys' batch axes of ind moved to the front."""
    out = snp.take(arr, ind, axis=axis)
    b = _batch_ndim(key)
    if b and axis:
        out = snp.moveaxis(out, tuple(range(axis, axis + b)), tuple(range(b)))
    return out


def _concrete_int(name, x):
    if isinstance(x, Tracer):
        raise ConcretizationError(f"{name}: an integer x must be a static Python integer under "
                                  f"jit, not a traced value{where()}")
    return int(x)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x) (an integer x), or of x's entries along `axis`
    (each slice independently when `independent`)."""
    key = _check_key("permutation", key)
    if np.ndim(x) == 0:
        if not dtypes.is_int(dtype_weak(x)[0]):
            raise SecantTypeError(f"permutation: x must be an integer or at least "
                                  f"1-dimensional, got {_describe(x)}{where()}")
        n = _concrete_int("permutation", x)
        return _shuffle(key, snp.arange(n), 0)
    x = snp.asarray(x)
    axis = _axis("permutation", axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, snp.arange(x.shape[axis]), 0)
    return _take(x, ind, axis, key)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples of a's entries along `axis` (of range(a) for an integer a), uniformly or with
    probabilities p, with or without replacement."""
    key = _check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise SecantTypeError(f"shape argument of choice must be a sequence, got {shape!r}"
                              + where())
    shape = _shape("choice", shape)
    arr = snp.asarray(a)
    if arr.ndim == 0:
        n_inputs = _concrete_int("choice", a)
    else:
        axis = _axis("choice", axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    batch = tuple(key.shape[:-1])
    if n_draws == 0:
        return snp.zeros(batch + shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise SecantValueError("choice: a must be greater than 0 unless no samples are taken"
                               + where())
    if not replace and n_draws > n_inputs:
        raise SecantValueError(f"choice: cannot take a larger sample (size {n_draws}) than the "
                               f"population (size {n_inputs}) when replace=False{where()}")
    if p is None:
        if replace:
            ind = _randint(key, shape, 0, n_inputs, dtypes.default_int())
            result = ind if arr.ndim == 0 else _take(arr, ind, axis, key)
        else:
            perm = permutation(KeyBatch(key), n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis + len(batch))
    else:
        p_arr = snp.asarray(p)
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(dtypes.default_float())
        if p_arr.shape != (n_inputs,):
            raise SecantValueError(f"choice: p must be None or a 1-d vector with the same size "
                                   f"as a.shape[axis]; p has shape {p_arr.shape} and "
                                   f"a.shape[axis] is {n_inputs}{where()}")
        if replace:
            p_cuml = snp.cumsum(p_arr)
            total = lax.slice_in_dim(p_cuml, n_inputs - 1, n_inputs)
            r = lax.mul(lax.reshape(total, ()),
                        lax.sub(1.0, _uniform(key, shape, p_cuml.dtype, 0.0, 1.0)))
            # searchsorted(p_cuml, r, side='left'): how many cumulative sums lie below r
            below = lax.lt(p_cuml, lax.expand_dims(r, (r.ndim,)))
            ind = snp.sum(below, axis=-1).astype(dtypes.default_int())
        else:
            g = lax.add(_gumbel(key, (n_inputs,), p_arr.dtype, _gumbel_mode(mode)),
                        snp.log(p_arr))
            ind = _top_k_indices(g, n_draws).astype(dtypes.default_int())
        result = ind if arr.ndim == 0 else _take(arr, ind, axis, key)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return snp.reshape(result, batch + out_shape)


def split(key, num=2):
    """`num` new keys (an int, or a shape tuple) as a uint32[*num, 2] array; key i is the
    threefry hash of the counter i (so split(k)[i] equals fold_in(k, i) for i < 2**32)."""
    key = _check_key("split", key)
    shape = _shape("split", num)
    return _split(key, shape)


def fold_in(key, data):
    """A new key from a key and a 32-bit integer: the threefry hash of the counter (0, data)."""
    key = _check_key("fold_in", key)
    if np.ndim(data) != 0:
        raise SecantTypeError(f"fold_in accepts a scalar, but was given an array of shape "
                              f"{np.shape(data)}; map over data with vmap or a loop{where()}")
    if isinstance(data, int) and not isinstance(data, bool):
        if not 0 <= data < 2 ** 32:
            raise SecantValueError(f"fold_in: Python integer {data} is out of bounds for "
                                   f"uint32{where()}")
        data = np.uint32(data)
    data = lax.convert_element_type(data, dtypes.uint32)
    k1, k2 = _key_words(key)
    y0, y1 = _threefry2x32(k1, k2, 0, data)
    return _make_key(y0, y1)


# --- more distributions (jax.random's recipes, so the numbers are jax's) -------------------------
# The samplers with parameters that have a derivative (gamma, beta, pareto, t, ...) live in
# secant/random_dists.py, read by the transforms as source; the ones below only transform
# noise, or give integers, and are constants for grad as every sampler above.
def _float_sampler(name, key, shape, dtype):
    return (_check_key(name, key), _shape(name, shape),
            _dtype(name, dtype, "float", dtypes.default_float))


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy floats, tan(pi * (u - 1/2)) with u uniform in [eps, 1)."""
    key, shape, dtype = _float_sampler("cauchy", key, shape, dtype)
    u = _uniform(key, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    return lax.tan(lax.mul(lax.sub(u, 0.5), float(np.pi)))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace floats, sign(u) * log1p(-|u|) with u uniform in (-1, 1)."""
    key, shape, dtype = _float_sampler("laplace", key, shape, dtype)
    u = _uniform(key, shape, dtype, _minus_one_up(dtype), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
    """Standard logistic floats, log(u) - log1p(-u) with u uniform in [tiny, 1)."""
    key, shape, dtype = _float_sampler("logistic", key, shape, dtype)
    u = _uniform(key, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def rademacher(key, shape=(), dtype=None):
    """-1 or 1 with equal probability (default int32): 2 * bernoulli(0.5) - 1."""
    key = _check_key("rademacher", key)
    shape = _shape("rademacher", shape)
    dtype = dtypes.canonicalize_dtype(dtypes.default_int() if dtype is None else dtype)
    b = lax.convert_element_type(
        lax.lt(_uniform(key, shape, dtypes.default_float(), 0.0, 1.0), 0.5), dtype)
    return lax.convert_element_type(lax.sub(lax.mul(b, 2), 1), dtype)


def maxwell(key, shape=(), dtype=None):
    """Maxwell floats: the length of a standard normal 3-vector."""
    key, shape, dtype = _float_sampler("maxwell", key, shape, dtype)
    z = _normal_real(key, shape + (3,), dtype)
    return lax.sqrt(snp.sum(lax.mul(z, z), axis=-1))


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Random (n, m) matrices (m defaults to n) with orthonormal columns (rows when n < m),
    Haar distributed: the Q of a normal matrix's QR, its columns' signs set by R's diagonal."""
    key, shape, dtype = _float_sampler("orthogonal", key, shape, dtype)
    n = _concrete_int("orthogonal", n)
    m = n if m is None else _concrete_int("orthogonal", m)
    z = _normal_real(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = snp.linalg.qr(z)
    d = snp.diagonal(r, axis1=-2, axis2=-1)
    x = lax.mul(q, lax.expand_dims(lax.sign(d), (d.ndim - 1,)))
    return snp.swapaxes(x, -1, -2) if n < m else x


def _param_shape(name, shape, *param_shapes):
    """`shape` (a static tuple), or the parameters' broadcast shape when it is None."""
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*param_shapes))
        except ValueError:
            raise SecantValueError(f"{name}: parameter shapes "
                                   f"{', '.join(str(tuple(s)) for s in param_shapes)} do not "
                                   f"broadcast together{where()}") from None
    shape = _shape(name, shape)
    _check_shape(name, shape, *param_shapes)
    return shape


def _batched(key, x):
    """x (a parameter of the sample's shape) with the keys' batch axes in front."""
    batch = tuple(key.shape[:-1])
    return snp.broadcast_to(x, batch + tuple(np.shape(x))) if batch else x


def _int_dtype(name, dtype):
    return _dtype(name, dtype, "int", dtypes.default_int)


def geometric(key, p, shape=None, dtype=None):
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...; default int32):
    floor(log(u) / log1p(-p)) + 1."""
    key = _check_key("geometric", key)
    dtype = _int_dtype("geometric", dtype)
    shape = _param_shape("geometric", shape, np.shape(p))
    p = snp.asarray(p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float())
    u = _uniform(key, shape, p.dtype, 0.0, 1.0)
    log_u = lax.log(snp.where(lax.eq(u, 0.0), 1.0, u).astype(p.dtype))
    g = lax.add(lax.floor(lax.div(log_u, lax.log1p(lax.neg(p)))), 1.0)
    return lax.convert_element_type(g, dtype)


def _while_per_key(key, going, body, state):
    """lax.while_loop(any(going), body, state) for each key of a batch (key: batch + (2,);
    `going` elementwise, batch + shape): a key's loop runs while any of its elements goes on,
    and a key whose loop has stopped keeps its state, as vmap of the one-key loop does (these
    loops' bodies also update elements already done, so when a loop stops matters)."""
    b = _batch_ndim(key)
    if not b:
        return lax.while_loop(lambda s: snp.any(going(s)), body, state)

    def running(s):
        g = going(s)
        return snp.any(g, axis=tuple(range(b, g.ndim)))

    def step(s):
        run = running(s)
        new = body(s)
        return tuple(snp.where(lax.reshape(run, run.shape + (1,) * (x.ndim - b)), n, x)
                     for n, x in zip(new, s))
    return lax.while_loop(lambda s: snp.any(running(s)), step, state)


def _poisson_knuth(key, lam, shape):
    def body(carry):
        k, rng, log_prod = carry
        rng, sub = _two(rng)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, 1), k)
        u = _uniform(sub, shape, dtypes.float32, 0.0, 1.0)
        return k, rng, lax.add(log_prod, lax.log(u))

    state = (snp.zeros(lam.shape, dtypes.int32), key, snp.zeros(lam.shape, dtypes.float32))
    out = _while_per_key(key, lambda c: lax.gt(c[2], lax.neg(lam)), body, state)
    return lax.sub(out[0], 1)


def _poisson_rejection(key, lam, shape):
    log_lam = lax.log(lam)
    b = lax.add(lax.mul(lax.sqrt(lam), 2.53), 0.931)
    a = lax.add(lax.mul(b, 0.02483), -0.059)
    inv_alpha = lax.add(lax.div(1.1328, lax.sub(b, 3.4)), 1.1239)
    v_r = lax.sub(0.9277, lax.div(3.6224, lax.sub(b, 2.0)))

    def body(carry):
        k_out, accepted, rng = carry
        keys = _split(rng, (3,))
        rng, k0, k1 = (_nth_key(keys, j) for j in range(3))
        u = lax.sub(_uniform(k0, shape, lam.dtype, 0.0, 1.0), 0.5)
        v = _uniform(k1, shape, lam.dtype, 0.0, 1.0)
        us = lax.sub(0.5, lax.abs(u))
        k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(2.0, a), us), b), u),
                                      lam), 0.43))
        s = lax.log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        t = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)), lax.lgamma(lax.add(k, 1.0)))
        accept1 = lax.bitwise_and(lax.ge(us, 0.07), lax.le(v, v_r))
        reject = lax.bitwise_or(lax.lt(k, 0.0),
                                lax.bitwise_and(lax.lt(us, 0.013), lax.gt(v, us)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject),
                                                         lax.le(s, t)))
        return lax.select(accept, k, k_out), lax.bitwise_or(accepted, accept), rng

    state = (snp.full(lam.shape, -1.0, lam.dtype), snp.zeros(lam.shape, dtypes.bool_), key)
    out = _while_per_key(key, lambda c: lax.bitwise_not(c[1]), body, state)
    return out[0]


def _nth_key(keys, j):
    """Key j of keys split along the second-to-last axis."""
    batch = tuple(keys.shape[:-2])
    return lax.reshape(lax.slice_in_dim(keys, j, j + 1, axis=-2), batch + (2,))


def poisson(key, lam, shape=None, dtype=None):
    """Poisson counts with rate lam (default int32): Knuth's product of uniforms below 10,
    Hormann's transformed rejection from 10 on (as jax, TensorFlow and NumPy)."""
    key = _check_key("poisson", key)
    dtype = _int_dtype("poisson", dtype)
    shape = _param_shape("poisson", shape, np.shape(lam))
    lam = lax.convert_element_type(snp.broadcast_to(lam, shape), dtypes.float32)
    lam = _batched(key, lam)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, 10.0))
    knuth = _poisson_knuth(key, lax.select(use_knuth, lam, lax.full_like(lam, 0.0)), shape)
    rejection = _poisson_rejection(key, lax.select(use_knuth, lax.full_like(lam, 1e5), lam),
                                   shape)
    out = lax.select(use_knuth, lax.convert_element_type(knuth, dtype),
                     lax.convert_element_type(rejection, dtype))
    return lax.select(lax.eq(lam, 0.0), lax.full_like(out, 0), out)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
    table = snp.asarray(np.array(_STIRLING_TAIL), dtype=k.dtype)
    k9 = lax.clamp(0.0, k, 9.0)
    kp1sq = lax.mul(lax.add(k9, 1.0), lax.add(k9, 1.0))
    approx = lax.div(lax.sub(1.0 / 12, lax.div(lax.sub(1.0 / 360, lax.div(1.0 / 1260, kp1sq)),
                                              kp1sq)), lax.add(k9, 1.0))
    tail = snp.take(table, lax.convert_element_type(lax.floor(k9), dtypes.int32))
    return lax.select(lax.le(k, 9.0), tail, approx)


def _binomial_inversion(key, count, prob, shape):
    log1mp = lax.log1p(lax.neg(prob))

    def body(carry):
        num_geom, geom_sum, rng = carry
        keys = _split(rng, (2,))
        sub, rng = _nth_key(keys, 0), _nth_key(keys, 1)
        num_geom = lax.select(lax.le(geom_sum, count), lax.add(num_geom, 1.0), num_geom)
        u = _uniform(sub, shape, prob.dtype, 0.0, 1.0)
        geom_sum = lax.add(geom_sum, lax.ceil(lax.div(lax.log(u), log1mp)))
        return num_geom, geom_sum, rng

    zeros = snp.zeros(prob.shape, prob.dtype)
    out = _while_per_key(key, lambda c: lax.le(c[1], count), body, (zeros, zeros, key))
    return lax.sub(out[0], 1.0)


def _btrs(key, count, prob, shape):
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), lax.sub(1.0, prob)))
    b = lax.add(lax.mul(stddev, 2.53), 1.15)
    a = lax.add(lax.add(lax.mul(b, 0.0248), -0.0873), lax.mul(prob, 0.01))
    c = lax.add(lax.mul(count, prob), 0.5)
    v_r = lax.sub(0.92, lax.div(4.2, b))
    r = lax.div(prob, lax.sub(1.0, prob))
    alpha = lax.mul(lax.add(lax.div(5.1, b), 2.83), stddev)
    m = lax.floor(lax.mul(lax.add(count, 1.0), prob))

    def body(carry):
        k_out, accepted, rng = carry
        keys = _split(rng, (3,))
        rng, k0, k1 = (_nth_key(keys, j) for j in range(3))
        u = _uniform(k0, shape, prob.dtype, 0.0, 1.0)
        v = _uniform(k1, shape, prob.dtype, 0.0, 1.0)
        u = lax.sub(u, 0.5)
        us = lax.sub(0.5, lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, 0.07), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(2.0, a), us), b), u), c))
        reject = lax.bitwise_or(lax.lt(k, 0.0), lax.gt(k, count))
        v = lax.log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        ub = lax.mul(lax.add(m, 0.5),
                     lax.log(lax.div(lax.add(m, 1.0),
                                     lax.mul(r, lax.add(lax.sub(count, m), 1.0)))))
        ub = lax.add(ub, lax.mul(lax.add(count, 1.0),
                                 lax.log(lax.div(lax.add(lax.sub(count, m), 1.0),
                                                 lax.add(lax.sub(count, k), 1.0)))))
        ub = lax.add(ub, lax.mul(lax.add(k, 0.5),
                                 lax.log(lax.div(lax.mul(r, lax.add(lax.sub(count, k), 1.0)),
                                                 lax.add(k, 1.0)))))
        ub = lax.add(ub, _stirling_approx_tail(m))
        ub = lax.add(ub, _stirling_approx_tail(lax.sub(count, m)))
        ub = lax.sub(ub, _stirling_approx_tail(k))
        ub = lax.sub(ub, _stirling_approx_tail(lax.sub(count, k)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(v, ub)))
        return lax.select(accept, k, k_out), lax.bitwise_or(accepted, accept), rng

    state = (snp.full(prob.shape, -1.0, prob.dtype), snp.zeros(prob.shape, dtypes.bool_), key)
    out = _while_per_key(key, lambda c: lax.bitwise_not(c[1]), body, state)
    return out[0]


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial counts (as floats, default float32) of n trials with success probability p:
    geometric inversion where n * min(p, 1 - p) <= 10, BTRS rejection above (as jax and
    TensorFlow Probability); nan for p outside [0, 1] or n < 0, inf for n = inf."""
    key = _check_key("binomial", key)
    dtype = _dtype("binomial", dtype, "float", dtypes.default_float)
    shape = _param_shape("binomial", shape, np.shape(n), np.shape(p))
    prob = snp.asarray(p)
    if not dtypes.is_inexact(prob.dtype):
        prob = prob.astype(dtypes.default_float())
    count = _batched(key, snp.broadcast_to(lax.convert_element_type(n, prob.dtype), shape))
    prob = _batched(key, snp.broadcast_to(prob, shape))
    p_lt_half = lax.lt(prob, 0.5)
    q = lax.select(p_lt_half, prob, lax.sub(1.0, prob))
    count_nan_or_neg = lax.bitwise_or(lax.ne(count, count), lax.lt(count, 0.0))
    count_inf = snp.isinf(count)
    q_is_nan = lax.ne(q, q)
    q_l_0 = lax.lt(q, 0.0)
    q = lax.select(lax.bitwise_or(q_is_nan, q_l_0), lax.full_like(q, 0.01), q)
    use_inversion = lax.bitwise_or(count_nan_or_neg, lax.le(lax.mul(count, q), 10.0))
    count = lax.floor(count)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    samples = lax.select(use_inversion,
                         lax.convert_element_type(_binomial_inversion(key, count_inv, q, shape),
                                                  dtype),
                         lax.convert_element_type(_btrs(key, count_btrs, q_btrs, shape), dtype))
    invalid = lax.bitwise_or(lax.bitwise_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, lax.full_like(samples, np.nan), samples)
    samples = lax.select(lax.bitwise_and(count_inf, lax.bitwise_not(invalid)),
                         lax.full_like(samples, np.inf), samples)
    keep = lax.bitwise_or(lax.bitwise_or(p_lt_half, count_nan_or_neg),
                          lax.bitwise_or(q_is_nan, count_inf))
    return lax.select(keep, samples, lax.sub(lax.convert_element_type(count, dtype), samples))


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of n draws over the categories of p (last axis; floats, default float32): one
    binomial per category, of the draws left, with its probability among those left."""
    key = _check_key("multinomial", key)
    dtype = _dtype("multinomial", dtype, "float", dtypes.default_float)
    n, p = snp.asarray(n), snp.asarray(p)
    ft = np.result_type(*(dt if dtypes.is_inexact(dt) else dtypes.default_float()
                          for dt in (n.dtype, p.dtype)))
    n, p = n.astype(ft), p.astype(ft)
    shape = p.shape if shape is None else _shape("multinomial", shape)
    n = snp.broadcast_to(n, shape[:-1])
    p = snp.moveaxis(snp.broadcast_to(p, shape), -1, 0)
    remaining = snp.flip(snp.cumsum(snp.flip(p, 0), axis=0), 0)
    ratios = lax.div(p, snp.where(lax.eq(remaining, 0.0), 1.0, remaining).astype(p.dtype))
    keys = _split(key, (ratios.shape[0],))
    remainder = n
    counts = []
    for i in range(ratios.shape[0]):
        count = binomial(keys[i], remainder, snp.clip(ratios[i], 0, 1), shape[:-1],
                         remainder.dtype)
        remainder = lax.sub(remainder, count)
        counts.append(count)
    return lax.convert_element_type(snp.stack(counts, axis=-1), dtype)


def clone(key):
    """A copy of the key (secant's keys are immutable arrays: the same key)."""
    return _check_key("clone", key) if not isinstance(key, KeyBatch) else key.keys


# --- gamma: Marsaglia and Tsang's rejection sampler, one loop per element, all at once -----------
def _gamma_flat(keys, alpha, log_space):
    """A gamma sample per key (keys: (N, 2), alpha: (N,)), as jax's _gamma_one for each pair;
    the rejection loops run side by side and stop when every element is done."""
    dtype = alpha.dtype
    boost_mask = lax.ge(alpha, 1.0)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, 1.0))
    d = lax.sub(alpha, 1.0 / 3.0)
    c = lax.div(snp.asarray(1.0 / 3.0, dtype), lax.sqrt(d))
    pair = _split(keys, (2,))
    keys, subkey = _nth_key(pair, 0), _nth_key(pair, 1)

    def going(state):
        _, X, V, U = state
        return lax.bitwise_and(
            lax.ge(U, lax.sub(1.0, lax.mul(0.0331, lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, 0.5),
                                       lax.mul(d, lax.add(lax.sub(1.0, V), lax.log(V))))))

    def body(state):
        run = going(state)
        three = _split(state[0], (3,))
        key, x_key, u_key = (_nth_key(three, j) for j in range(3))

        def next_x(kxv):
            pair = _split(kxv[0], (2,))
            x = _normal_real(_nth_key(pair, 1), (), dtype)
            v = lax.add(1.0, lax.mul(x, c))
            again = lax.le(kxv[2], 0.0)
            return (lax.select(_key_mask(again), _nth_key(pair, 0), kxv[0]),
                    lax.select(again, x, kxv[1]), lax.select(again, v, kxv[2]))

        start_v = lax.select(run, lax.full_like(d, -1.0), lax.full_like(d, 1.0))
        _, x, v = lax.while_loop(lambda kxv: snp.any(lax.le(kxv[2], 0.0)), next_x,
                                 (x_key, lax.full_like(d, 0.0), start_v))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _uniform(u_key, (), dtype, 0.0, 1.0)
        return (lax.select(_key_mask(run), key, state[0]), lax.select(run, X, state[1]),
                lax.select(run, V, state[2]), lax.select(run, U, state[3]))

    start = (keys, lax.full_like(d, 0.0), lax.full_like(d, 1.0), lax.full_like(d, 2.0))
    _, _, V, _ = lax.while_loop(lambda s: snp.any(going(s)), body, start)
    if log_space:
        log_samples = lax.neg(lax.log1p(lax.neg(_uniform(subkey, (), dtype, 0.0, 1.0))))
        log_samples = lax.neg(log_samples)
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, 0.0)),
                               lax.full_like(d, 0.0),
                               lax.mul(log_samples, lax.div(1.0, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(1.0, _uniform(subkey, (), dtype, 0.0, 1.0))
    boost = lax.select(boost_mask, lax.full_like(d, 1.0),
                       lax.pow(samples, lax.div(1.0, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _key_mask(mask):
    """A per-element mask broadcast over the two key words."""
    return snp.broadcast_to(lax.expand_dims(mask, (mask.ndim,)), tuple(mask.shape) + (2,))


def _gamma_sample(key, a, log_space=False):
    """Gamma(a) samples (log samples when `log_space`) of a's shape and dtype, as jax's
    random_gamma_p: the key is split into one key per element, each drawn by its own
    rejection loop."""
    key = _check_key("gamma", key)
    a = snp.asarray(a)
    shape = tuple(a.shape)
    a = snp.broadcast_to(a, tuple(key.shape[:-1]) + shape)
    n = math.prod(a.shape)
    keys = lax.reshape(_split(key, (math.prod(shape),)), (n, 2))
    out = _gamma_flat(keys, lax.reshape(a, (n,)), log_space)
    return lax.reshape(out, tuple(a.shape))


# How vmap batches a call with a batched key (batching/helpers.py random_batched): "keys" hash
# the whole batch of keys at once (KeyBatch); "map" calls the function once per example.
for _name in __all__:
    globals()[_name].__secant_random__ = "map" if _name in (
        "PRNGKey", "key", "key_data", "wrap_key_data", "threefry_2x32", "multinomial",
        "key_impl", "key_dtype") \
        else "keys"
_gamma_sample.__secant_random__ = "keys"

# The samplers whose parameters have a derivative (gamma, beta, t, pareto, ...) are in
# secant/random_dists.py, read by the transforms as source; it adds them to this module once
# secant.custom_jvp and secant.nn exist (secant/__init__.py imports it last).
