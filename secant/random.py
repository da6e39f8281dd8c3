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
from secant import lax
from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import Tracer
from secant.backends.errors import ConcretizationError, SecantTypeError, SecantValueError, where
from secant.numpy.conversion import dtype_weak

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "threefry_2x32",
           "bits", "uniform", "normal", "bernoulli", "randint", "categorical", "choice",
           "permutation", "truncated_normal", "gumbel", "exponential"]

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


def PRNGKey(seed):
    """A PRNG key (uint32[2]) from an integer seed: `[seed >> 32, seed & 0xFFFFFFFF]`.

    As in JAX, a 32-bit seed (every seed unless x64 is enabled: a Python int then wraps to
    int32) gives `[0, seed mod 2**32]`; a 64-bit seed is split into its two words."""
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


def key(seed):
    """Same as `PRNGKey`: secant's keys are raw uint32[2] arrays (JAX's typed key arrays are not
    modelled), so `key_data(key(s))` is the key itself."""
    return PRNGKey(seed)


def key_data(keys):
    """The uint32 data of a key or an array of keys (shape (..., 2))."""
    return _as_key_array("key_data", keys)


def wrap_key_data(key_bits_array):
    """A key (array) from its uint32 data; checks its shape and dtype."""
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
    lo = lax.nextafter(lower, np.inf)
    hi = lax.nextafter(upper, -np.inf)
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


# How vmap batches a call with a batched key (batching/helpers.py random_batched): "keys" hash
# the whole batch of keys at once (KeyBatch); "map" calls the function once per example.
for _name in __all__:
    globals()[_name].__secant_random__ = "map" if _name in (
        "PRNGKey", "key", "key_data", "wrap_key_data", "threefry_2x32") else "keys"
