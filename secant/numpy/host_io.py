"""jax.numpy's arrays from host data: frombuffer, fromstring, from_dlpack, load (and NumPy's
save / savez, which jax.numpy re-exports). Each reads host bytes, text or a file once, where it
is called (at trace time under jit: the result is a constant of the program), and returns a
secant array with JAX's dtypes (64-bit values become 32-bit unless x64 is enabled). As in JAX,
fromiter and fromfile are refused: they may consume an iterator or a file, which is not pure."""
import numpy as np

from secant.backends import dtypes
from secant.backends.errors import UnsupportedError, where
from secant.numpy.conversion import asarray

__all__ = ["frombuffer", "fromstring", "from_dlpack", "load", "save", "savez", "fromiter",
           "fromfile"]

save = np.save
savez = np.savez


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-D array of the buffer's bytes read as dtype (NumPy's frombuffer), as a secant array."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """A 1-D array of the numbers written in `string`, separated by `sep`."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def from_dlpack(x, /, *, device=None, copy=None):
    """A secant array of a DLPack producer's data (an object with __dlpack__, e.g. a NumPy or
    torch CPU array). secant arrays are immutable, so the data is copied: a later in-place
    change of the producer's buffer does not reach the result (JAX shares it when it can)."""
    if copy is False:
        raise UnsupportedError("from_dlpack: copy=False is not supported (secant copies the "
                               f"producer's buffer, its arrays being immutable){where()}")
    return asarray(np.array(np.from_dlpack(x), copy=True))


def load(file, *args, **kwargs):
    """np.load, with a .npy file's array as a secant array (bfloat16, which NumPy saves as
    void16, restored); a .npz archive stays NumPy's, as in JAX."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2":
            out = out.view(dtypes.bfloat16)
        try:
            out = asarray(out)
        except TypeError:       # (a dtype secant has no arrays of: NumPy's array, as JAX)
            pass
    return out


def _impure(name):
    def refuse(*args, **kwargs):
        raise UnsupportedError(
            f"jax.numpy.{name}() is not implemented (as in JAX): it may consume an iterator or "
            f"a file, which is not pure and so unsafe under jit and the other transforms; write "
            f"snp.asarray(np.{name}(...)) outside the transformed function instead{where()}")
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Refused, as JAX's jnp.{name}: it is not a pure function."
    return refuse


fromiter = _impure("fromiter")
fromfile = _impure("fromfile")
