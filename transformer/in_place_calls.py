"""Calls whose NumPy meaning is a change in place of their first argument (`np.add.at(x, i, v)`,
`np.put(a, i, v)`, `np.copyto(dst, src)`, `np.random.shuffle(x)`): on secant's immutable arrays
(as on JAX's) they cannot do what NumPy does. jax.numpy's own (`jnp.put`, `jnp.add.at`, ...)
raise unless given inplace=False, and return the updated array; written as a bare statement
(NumPy's idiom) their result is dropped, which a transform would otherwise drop with the call,
silently. The normaliser (a bare call statement) and the trace (a recorded call) ask here."""
import numpy as np

_HOW = "pass inplace=False and use the array it returns"


def _table():
    import secant.numpy as snp
    return {
        snp.put: ("jax.numpy.put", f"{_HOW}: a = snp.put(a, ind, v, inplace=False)"),
        snp.place: ("jax.numpy.place", f"{_HOW}: a = snp.place(a, mask, v, inplace=False)"),
        snp.fill_diagonal: ("jax.numpy.fill_diagonal",
                            f"{_HOW}: a = snp.fill_diagonal(a, v, inplace=False)"),
        snp.put_along_axis: ("jax.numpy.put_along_axis",
                             f"{_HOW}: a = snp.put_along_axis(a, i, v, axis, inplace=False)"),
        np.copyto: ("numpy.copyto", "write dst = snp.broadcast_to(src, dst.shape) (or "
                    "snp.where(mask, src, dst))"),
        np.putmask: ("numpy.putmask", "write a = snp.where(mask, v, a)"),
        np.random.shuffle: ("numpy.random.shuffle",
                            "write x = secant.random.permutation(key, x)"),
    }


_TABLE = None


def refusal(obj, inplace=True):
    """The message refusing a call of `obj` (NumPy's function or secant.numpy's) that would
    change an array in place (`inplace`: the value of its inplace= argument, True when not
    given), else None."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _table()
    from secant.numpy.counterparts import counterpart
    try:
        hash(obj)
    except TypeError:
        return None
    mine = counterpart(obj)
    if mine is not None and obj not in _TABLE:
        obj = mine[0]
    ufunc = getattr(obj, "__self__", None)
    if isinstance(ufunc, np.ufunc) and getattr(obj, "__name__", "") == "at":
        name = f"numpy.{ufunc.__name__}.at"       # NumPy's own np.add.at (no inplace=)
    elif getattr(obj, "__module__", None) == "secant.numpy.ufunc_methods" and \
            str(getattr(obj, "__qualname__", "")).rsplit(".", 1)[-1] == "at":
        name = f"jax.numpy.{obj.__qualname__.split('.')[0]}.at" \
            if "." in obj.__qualname__ else "jax.numpy.ufunc.at"
    else:
        entry = _TABLE.get(obj)
        if entry is None:
            return None
        name, how = entry
        if inplace is not True and name.startswith("jax."):
            return None
        return (f"{name} would change its array in place, but secant arrays are immutable (as "
                f"JAX's; in NumPy this is an in-place update, and as a statement its result "
                f"would be dropped): {how}")
    if inplace is not True and name.startswith("jax."):
        return None
    return (f"{name}() cannot operate in place like NumPy's ufunc.at: secant arrays are "
            "immutable (as JAX's; as a statement its result would be dropped). Pass "
            "inplace=False and capture the result; e.g. x = snp.add.at(x, i, v, inplace=False)")
