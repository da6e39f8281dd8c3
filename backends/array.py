"""secant.Array: an immutable array holding either a NumPy value (eager) or a device buffer (jit)."""
import math

import numpy as np

from secant.backends import core, dtypes
from secant.backends.core import ShapedArray
from secant.backends.errors import SecantTypeError, SecantValueError, where


_new = object.__new__
_BUFFER_PROTOCOL = dtypes.BUFFER_PROTOCOL
# the same, the commonest first: `dt in` a tuple compares by identity before equality, where a
# set hashes the dtype (~0.1 µs per np.asarray of a jit result: issue 19)
_BUFFER_ORDER = tuple(sorted(_BUFFER_PROTOCOL, key=lambda d: (
    d != np.float32, d != np.int32, d != np.bool_, d.kind, d.itemsize, d.name)))


def _to_numpy(buf, dtype):
    """runtime.to_numpy, which replaces this function on first use (runtime loads jaxlib, which
    eager-only programs never import; np.asarray of a jit result then costs no import)."""
    global _to_numpy
    from secant.backends.runtime import to_numpy
    _to_numpy = to_numpy
    return to_numpy(buf, dtype)


class Array:
    """An immutable n-dimensional array.

    Eager operations produce Arrays backed by NumPy; jitted functions return Arrays backed by a
    device buffer, copied to the host only when asked (`np.asarray(x)`, printing, eager ops), so
    handing them back to a jitted function costs no transfer.
    """
    __slots__ = ("_npy", "_buf", "_aval", "weak_type", "_committed", "_sharded", "_shard_axis",
                 "__weakref__")
    __array_priority__ = 100

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def _wrap(cls, value, weak=False):
        """From a NumPy value whose dtype is already canonical (the eager hot path)."""
        self = object.__new__(cls)
        if type(value) is not np.ndarray:
            value = np.asarray(value)
        self._npy = value
        self._buf = None
        self._aval = None
        self.weak_type = weak     # (_committed and _sharded stay unset: the eager hot path)
        return self

    @staticmethod
    def _wrap_ndarray(value, weak):
        """_wrap for a value known to be a canonical-dtype ndarray, or the NumPy scalar of a 0-d
        one (eager fast paths: see _value)."""
        self = _new(Array)
        self._npy = value
        self._buf = None
        self._aval = None
        self.weak_type = weak
        return self

    @classmethod
    def _from_buffer(cls, buf, aval, committed=False):
        self = object.__new__(cls)
        self._npy = None
        self._buf = buf
        self._aval = aval
        self.weak_type = aval.weak_type
        self._committed = committed
        self._sharded = None
        return self

    @classmethod
    def _from_shards(cls, sharded, aval, axis=0):
        """An array split over several devices along `axis` (pmap's outputs): a
        runtime.ShardedBuffer whose shard k is `index k along axis` of this array."""
        self = object.__new__(cls)
        self._npy = None
        self._buf = None
        self._aval = aval
        self.weak_type = aval.weak_type
        self._committed = True
        self._sharded = sharded
        self._shard_axis = axis
        return self

    def __init__(self, *a, **k):
        raise SecantTypeError("create arrays with secant.numpy.array/asarray, not secant.Array()")

    # --- data -----------------------------------------------------------------------------------
    def _value(self):
        """The value as a NumPy array. `_npy` holds it on the host: an ndarray, or for a 0-d array
        made by an eager fast path the NumPy scalar NumPy computed (kept as is: converting it
        costs as much as the operation; this gives a fresh 0-d array of it)."""
        v = self._npy
        if type(v) is np.ndarray:
            return v
        if v is not None:
            return np.asarray(v)
        if self._buf is None:     # split over devices: assembled from its shards, once
            dt = self._aval.dtype
            v = np.stack([_to_numpy(b, dt) for b in self._sharded.shards], axis=self._shard_axis)
            v.flags.writeable = False
            self._npy = v
        else:
            v = self._npy = _to_numpy(self._buf, self._aval.dtype)
        return v

    @property
    def aval(self):
        a = self._aval
        if a is None:
            v = self._npy
            a = self._aval = ShapedArray(v.shape, v.dtype, self.weak_type)
        return a

    @property
    def shape(self):
        return self._npy.shape if self._npy is not None else self._aval.shape

    @property
    def dtype(self):
        return self._npy.dtype if self._npy is not None else self._aval.dtype

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    itemsize = property(lambda self: self.dtype.itemsize)

    def __array__(self, dtype=None, copy=None):
        v = self._npy
        if type(v) is not np.ndarray:
            b = self._buf
            if v is None and b is not None and self._aval.dtype in _BUFFER_ORDER:
                v = self._npy = np.asarray(b)   # (_value and runtime.to_numpy, written out)
            else:
                v = self._value()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def tolist(self):
        return self._value().tolist()

    def __setitem__(self, index, value):
        raise SecantTypeError("secant arrays are immutable (as JAX's): instead of x[idx] = y, "
                              "write x = x.at[idx].set(y)" + where())

    def item(self, *args):
        return self._value().item(*args)

    def copy(self):
        return Array._wrap(self._value().copy(), self.weak_type)

    def _sharded_buffer(self):
        return getattr(self, "_sharded", None)

    def block_until_ready(self):
        b = self._buf
        if b is not None:
            b.block_until_ready()
        elif self._sharded_buffer() is not None:
            self._sharded.block_until_ready()
        return self

    def is_ready(self):
        if self._sharded_buffer() is not None:
            return self._sharded.is_ready()
        return self._buf is None or self._buf.is_ready()

    def devices(self):
        from secant.backends import runtime
        if self._sharded_buffer() is not None:
            return set(self._sharded.devices)
        return {runtime.device_of(self._buf) if self._buf is not None else runtime.default_device()}

    @property
    def device(self):
        if self._sharded_buffer() is not None:
            raise SecantTypeError("this array is split over several devices (a pmap output): "
                                  "use .devices(), or .addressable_shards for each shard"
                                  + where())
        return next(iter(self.devices()))

    @property
    def committed(self):
        """True when the array was placed on its device(s) on purpose (device_put with a device,
        or computed from such arrays): jit then runs where it lives."""
        return getattr(self, "_committed", False)

    @property
    def sharding_devices(self):
        """The devices of a pmap output, in shard order (None for one-device arrays)."""
        sb = self._sharded_buffer()
        return None if sb is None else list(sb.devices)

    @property
    def addressable_shards(self):
        """One Shard per device (its .data a single-device Array): shard k is index k of the
        sharded axis of a pmap output; a one-device array is its own single shard."""
        from secant.backends.sharding import Shard
        sb = self._sharded_buffer()
        if sb is None:
            return [Shard(self.device, (slice(None),) * self.ndim, self)]
        from secant.backends.core import ShapedArray
        aval = ShapedArray(sb.aval.shape, sb.aval.dtype, self.weak_type)
        head = (slice(None),) * getattr(self, "_shard_axis", 0)
        return [Shard(d, head + (k,), Array._from_buffer(b, aval, True))
                for k, (d, b) in enumerate(zip(sb.devices, sb.shards))]

    @property
    def sharding(self):
        """Where the array lives: SingleDeviceSharding(device), or PmapSharding (a pmap output
        split over devices)."""
        from secant.backends import sharding
        sb = self._sharded_buffer()
        if sb is None:
            return sharding.SingleDeviceSharding(self.device)
        return sharding.PmapSharding(sb.devices, getattr(self, "_shard_axis", 0))

    @property
    def is_fully_replicated(self):
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self):
        return True

    def _device_buffer(self, device):
        """The buffer to hand to an executable on `device` (None when it must be put first)."""
        b = self._buf
        if b is not None:
            from secant.backends import runtime
            if runtime.device_of(b) is device:
                return b
        return None

    # --- Python protocol ----------------------------------------------------------------------
    def __len__(self):
        if not self.shape:
            raise SecantTypeError("len() of unsized object (a 0-d array)" + where())
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise SecantTypeError("iteration over a 0-d array" + where())
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        v = self._value()
        if v.size != 1:     # NumPy's and JAX's ValueError, at the user's line
            raise SecantValueError(f"the truth value of an array of shape {v.shape} is ambiguous: "
                                   f"use .any() or .all(){where()}")
        return bool(v)

    def __int__(self):
        return int(self._value())

    def __float__(self):
        return float(self._value())

    def __complex__(self):
        return complex(self._value())

    def __index__(self):
        if not dtypes.is_int(self.dtype) or self.shape:
            raise SecantTypeError("only integer scalar arrays can be converted to an index" + where())
        return int(self._value())

    __hash__ = None

    def __repr__(self):
        body = np.array2string(self._value(), separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Array({body}, dtype={self.dtype.name}{weak})"

    def __str__(self):
        return str(self._value())

    def __format__(self, spec):
        if not self.shape:
            return format(self._value().item(), spec)
        return format(str(self), spec)

    def __reduce__(self):
        return (_rebuild, (self._value(), self.weak_type))

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


def _rebuild(value, weak):
    return Array._wrap(value, weak)


core._Array = Array


class _ArrayType(type):
    def __instancecheck__(cls, value):
        return isinstance(value, (Array, core.Tracer))

    def __subclasscheck__(cls, kind):
        return issubclass(kind, (Array, core.Tracer))


class PublicArray(metaclass=_ArrayType):
    """secant.Array and secant.numpy.ndarray, as jax.Array: the type users test values against.
    isinstance is True for an array and for a traced value inside jit (a Tracer, as JAX's), so
    `x if isinstance(x, jnp.ndarray) else None` (equinox's filters) takes the same branch under
    jit as eagerly; False for NumPy arrays and Python numbers. secant's own code tests against
    Array, the concrete class."""

    def __new__(cls, *a, **k):
        raise SecantTypeError("create arrays with secant.numpy.array/asarray, not secant.Array()")


PublicArray.__name__ = PublicArray.__qualname__ = "Array"
PublicArray.__module__ = "secant"
