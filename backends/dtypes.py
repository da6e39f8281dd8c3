"""JAX's dtype semantics: canonical 32-bit defaults, weakly typed Python scalars, the promotion lattice."""
import numpy as np
import ml_dtypes

from secant.backends.config import config
from secant.backends.errors import SecantTypeError, where

bfloat16 = np.dtype(ml_dtypes.bfloat16)
bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

SUPPORTED = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             bfloat16, float16, float32, float64, complex64, complex128)
_SUPPORTED_SET = frozenset(SUPPORTED)
# dtypes np.asarray of a device buffer reads right (the buffer protocol; ml_dtypes' kind "V" it
# does not): tested first on the hot path, a set look-up
BUFFER_PROTOCOL = _SUPPORTED_SET - {bfloat16}

# --- canonicalisation: without enable_x64 every 64-bit type becomes its 32-bit sibling --------------
_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def x64_enabled():
    return X64[0]


# [enable_x64], kept current (config.update is its only writer): read on eager hot paths, where
# a config look-up is a cost (issue 19: canonicalize_dtype's 370k look-ups in an ODE's third
# derivative)
X64 = [bool(config.read("enable_x64"))]
config.on_change(lambda name, value: X64.__setitem__(0, bool(value)) if name == "enable_x64"
                 else None)


def canonicalize_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError as e:      # (a string numpy does not know: named at the user's line)
        raise SecantTypeError(f"{e}{where()}") from None
    if dt not in _SUPPORTED_SET:
        raise SecantTypeError(f"dtype {dt} is not supported by secant; supported: "
                              + ", ".join(str(d) for d in SUPPORTED) + where())
    if not x64_enabled():
        return _NARROW.get(dt, dt)
    return dt


def default_float():
    return float64 if x64_enabled() else float32


def default_int():
    return int64 if x64_enabled() else int32


def default_complex():
    return complex128 if x64_enabled() else complex64


INEXACT = frozenset({bfloat16, float16, float32, float64, complex64, complex128})


def is_float(dt):
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == bfloat16


def is_complex(dt):
    return np.dtype(dt).kind == "c"


def is_inexact(dt):
    return is_float(dt) or is_complex(dt)


def is_int(dt):
    return np.dtype(dt).kind in "iu"


def is_unsigned(dt):
    return np.dtype(dt).kind == "u"


def is_bool(dt):
    return np.dtype(dt) == bool_


# --- the promotion lattice (jax/_src/dtypes.py); i*, f*, c* are the weakly typed Python scalars ----
_LATTICE = {
    "b1": ["i*"], "i*": ["u8", "i8"], "f*": ["c*", "f16", "bf16"], "c*": ["c64"],
    "u8": ["i16", "u16"], "u16": ["i32", "u32"], "u32": ["i64", "u64"], "u64": ["f*"],
    "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "bf16": ["f32"], "f16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
    "c64": ["c128"], "c128": [],
}
_NODE_OF = {bool_: "b1", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
            uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
            bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
            complex64: "c64", complex128: "c128"}
_DTYPE_OF = {v: k for k, v in _NODE_OF.items()}


def _upper_sets():
    ups = {}

    def visit(n):
        if n not in ups:
            s = {n}
            for m in _LATTICE[n]:
                s |= visit(m)
            ups[n] = s
        return ups[n]

    for n in _LATTICE:
        visit(n)
    return ups


_UPPER = _upper_sets()


def _node(dtype, weak):
    dt = np.dtype(dtype)
    if weak:
        if dt.kind in "iu":
            return "i*"
        if dt.kind == "f" or dt == bfloat16:
            return "f*"
        if dt.kind == "c":
            return "c*"
    return _NODE_OF[dt]


_JOIN_CACHE = {}


def _join(a, b):
    key = (a, b)
    r = _JOIN_CACHE.get(key)
    if r is None:
        common = _UPPER[a] & _UPPER[b]
        r = next(n for n in common if _UPPER[n] >= common)
        _JOIN_CACHE[key] = r
    return r


def _from_node(n):
    if n == "i*":
        return default_int(), True
    if n == "f*":
        return default_float(), True
    if n == "c*":
        return default_complex(), True
    return canonicalize_dtype(_DTYPE_OF[n]), False


def promote(*pairs):
    """(dtype, weak_type) pairs -> the (dtype, weak_type) of their combination, as JAX computes it."""
    node = None
    for dt, weak in pairs:
        n = _node(dt, weak)
        node = n if node is None else _join(node, n)
    return _from_node(node)


def promote_types(a, b):
    """jnp.promote_types: promotion of two strong dtypes."""
    return promote((np.dtype(a), False), (np.dtype(b), False))[0]


def python_scalar_dtype(x):
    """dtype of a Python scalar as a weakly typed value (bool is strong in JAX)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise SecantTypeError(f"not a Python scalar: {type(x).__name__}")


# --- StableHLO element type names ---------------------------------------------------------------
_IR_NAMES = {bool_: "i1", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
             uint8: "ui8", uint16: "ui16", uint32: "ui32", uint64: "ui64",
             bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
             complex64: "complex<f32>", complex128: "complex<f64>"}


def ir_name(dtype):
    return _IR_NAMES[np.dtype(dtype)]


def finfo(dtype):
    return ml_dtypes.finfo(dtype) if np.dtype(dtype) == bfloat16 else np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)
