"""jax.numpy.ufunc and frompyfunc: a ufunc made from a scalar function. Calling it is
`vectorize(func)` (secant/numpy/vectorize.py, whose rules give grad, jvp and vmap); a binary
ufunc with one output also has reduce, accumulate, outer, at and reduceat, computed by folding
func as jax.numpy's generic ufunc methods do (secant/numpy/ufunc_methods.py). The transforms
read the methods as source (`__secant_by_source__`): their fold calls the ufunc, a vectorize
that generated code calls as a function known only at run time (secant/transforms.py
_dispatch_target_of: its rules, secant/vectorize_rules.py), so grad, jvp and vmap of a method
compose as JAX's do."""
from secant.backends.errors import SecantTypeError, SecantValueError, where
from secant.numpy import ufunc_methods as _methods
from secant.numpy.vectorize import Vectorized

__all__ = ["ufunc", "frompyfunc"]
__secant_by_source__ = True      # transforms read the methods like user code


class ufunc(Vectorized):
    """A universal function of `nin` scalar arguments and `nout` results (jax.numpy.ufunc):
    broadcasting calls, and for a binary function the reduction methods."""

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
                 reduce=None, accumulate=None, at=None, reduceat=None):
        if not callable(func):
            raise SecantTypeError(f"ufunc: func must be callable, got {func!r}{where()}")
        super().__init__(func, frozenset(), None)
        self.nin, self.nout = int(nin), int(nout)
        self.nargs = self.nin if nargs is None else int(nargs)
        self.identity = identity
        self.__name__ = self.__qualname__ = name or getattr(func, "__name__", "ufunc")
        self._own = {"reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat}

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:
            raise SecantTypeError(f"{self.__name__}: out and where are not supported (secant "
                                  f"arrays are immutable, as JAX's){_where()}")
        if len(args) != self.nin:
            raise SecantTypeError(f"{self.__name__}() takes {self.nin} positional arguments "
                                  f"but {len(args)} were given{_where()}")
        return super().__call__(*args)

    def _binary(self, method):
        if self.nin != 2 or self.nout != 1:
            raise SecantValueError(f"{method} is only supported for binary ufuncs with a "
                                   f"single output, got {self.__name__} with nin={self.nin} "
                                   f"and nout={self.nout}{_where()}")
        return self._own[method] if method in self._own else None

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        own = self._binary("reduce")
        if own is not None:
            return own(a, axis, dtype, out, keepdims, initial, where)
        if where is not None and initial is None:
            initial = self.identity
        return _methods._reduce(self, self.__name__, a, axis, dtype, out, keepdims, initial,
                                where)

    def accumulate(self, a, axis=0, dtype=None, out=None):
        own = self._binary("accumulate")
        if own is not None:
            return own(a, axis, dtype, out)
        return _methods._accumulate(self, self.__name__, a, axis, dtype, out)

    def outer(self, A, B, /):
        self._binary("outer")
        return _methods._outer(self, A, B)

    def at(self, a, indices, b=None, /, *, inplace=True):
        own = self._binary("at")
        if own is not None:
            return own(a, indices, b, inplace=inplace)
        return _methods._at(self, self.__name__, a, indices, b, inplace)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        own = self._binary("reduceat")
        if own is not None:
            return own(a, indices, axis, dtype, out)
        return _methods._reduceat(self, self.__name__, a, indices, axis, dtype, out)


_where = where


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ufunc from a scalar function (jax.numpy.frompyfunc)."""
    return ufunc(func, nin, nout, identity=identity)
