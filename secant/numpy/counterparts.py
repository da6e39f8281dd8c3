"""secant.numpy's function for a NumPy function: user code may call `np.linalg.det(a)` as well
as `snp.linalg.det(a)` (DESIGN: name resolution maps the callee object to secant's). The
transforms read, and generated code names, secant's function (`snp.linalg.det`), so the code
they write runs under jit; traced arrays route NumPy calls the same way (backends/core.py)."""
import sys

import numpy as np

# (NumPy's module, secant.numpy's module as generated code spells it)
_MODULES = (("numpy", "snp"), ("numpy.linalg", "snp.linalg"), ("numpy.fft", "snp.fft"))
_TABLE = None
_ABSENT = ()    # NumPy modules not imported when the table was built (none of their functions
#                 can be called before they are: the table is built again once one is)


def _build():
    global _ABSENT
    import secant.numpy as snp
    table = {}
    _ABSENT = tuple(np_name for np_name, _ in _MODULES if np_name not in sys.modules)
    for np_name, spelled in _MODULES:
        np_mod = sys.modules.get(np_name)
        if np_mod is None:      # (numpy.fft is imported on first use: not for this table)
            continue
        ours = snp if spelled == "snp" else getattr(snp, spelled.split(".")[1])
        # (the module's own dict: getattr on every name of dir(numpy) would import numpy's lazy
        # submodules, f2py and testing among them, 0.1 s in a jitted function's first call)
        for name, theirs in list(vars(np_mod).items()):
            if name.startswith("_"):
                continue
            mine = getattr(ours, name, None)
            if mine is None or mine is theirs or isinstance(theirs, type) \
                    or not callable(theirs) or not callable(mine) or isinstance(mine, type(np)):
                continue        # (dtypes and classes are not functions to swap)
            table.setdefault(id(theirs), (theirs, mine, f"{spelled}.{name}"))
    return table


def counterpart(obj):
    """(secant.numpy's function, how generated code names it) for a NumPy function of numpy,
    numpy.linalg or numpy.fft that secant.numpy has under the same name; else None."""
    global _TABLE
    ufunc = getattr(obj, "__self__", None)
    if isinstance(ufunc, np.ufunc) and type(obj) is type(np.add.reduce):   # np.add.reduce
        if obj.__name__ == "at":        # (NumPy's updates in place: left refused)
            return None
        import secant.numpy as snp
        mine = getattr(getattr(snp, ufunc.__name__, None), obj.__name__, None)
        return None if mine is None else (mine, f"snp.{ufunc.__name__}.{obj.__name__}")
    if _TABLE is None or _ABSENT and any(m in sys.modules for m in _ABSENT):
        _TABLE = _build()
    try:
        hit = _TABLE.get(id(obj))
    except TypeError:
        return None
    return hit[1:] if hit is not None and hit[0] is obj else None
