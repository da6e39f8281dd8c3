"""Straight-line functions, read from their bytecode: what jit's functionalisation
(transformer/functionalize.py) would leave as it is, known without reading, parsing and walking
the source (issue 19: most of the first call's transform time of a function without control
flow went there).

A function is plain when its code has no jump (no if, loop, conditional expression, `and`/`or`,
chained comparison, assert, try or with), no nested code (lambda, comprehension, def), stores
nothing but its own locals (no `x[i] = v`, which jit rewrites, no attribute or global store),
and every free name it reads, and every attribute chain read from one, is an object through
which no user function can be reached: numbers, strings, NumPy values, modules, and numpy's,
secant's and Python's own functions and types. Any instruction or object not known to be safe
answers False: the source is then read as before. (This is conservative on purpose: a False
costs time, a wrong True would skip a rewrite jit needs.)"""
import builtins
import dis
import inspect
import types

import numpy as np

from secant.transformer.callees import UNRESOLVED, _attribute

# the instructions of straight-line code that stores only locals (names of CPython 3.11-3.13;
# an instruction of another version not listed here is simply not plain)
_OPS = frozenset("""
    RESUME NOP CACHE EXTENDED_ARG PUSH_NULL PRECALL CALL CALL_KW KW_NAMES CALL_FUNCTION_EX
    COPY_FREE_VARS LOAD_FAST LOAD_FAST_CHECK LOAD_FAST_LOAD_FAST LOAD_CONST LOAD_SMALL_INT
    LOAD_GLOBAL LOAD_DEREF LOAD_ATTR LOAD_METHOD STORE_FAST STORE_FAST_LOAD_FAST
    STORE_FAST_STORE_FAST POP_TOP COPY SWAP BINARY_OP UNARY_NEGATIVE UNARY_INVERT UNARY_NOT
    UNARY_POSITIVE TO_BOOL BINARY_SUBSCR BINARY_SLICE BUILD_TUPLE BUILD_LIST BUILD_MAP
    BUILD_CONST_KEY_MAP BUILD_SLICE BUILD_STRING FORMAT_VALUE FORMAT_SIMPLE LIST_EXTEND
    LIST_TO_TUPLE DICT_UPDATE DICT_MERGE UNPACK_SEQUENCE UNPACK_EX COMPARE_OP IS_OP CONTAINS_OP
    RETURN_VALUE RETURN_CONST
""".split())
_ATOMS = frozenset([int, float, complex, bool, str, bytes, type(None), type(Ellipsis)])
_LIBRARIES = frozenset(["builtins", "numpy", "secant", "ml_dtypes"])
_ATTRIBUTES = frozenset(["LOAD_ATTR", "LOAD_METHOD"])
_FREE = frozenset(["LOAD_GLOBAL", "LOAD_DEREF"])


def plain(fn):
    """Whether jit's functionalisation has nothing to rewrite in `fn` (a types.FunctionType),
    as its bytecode shows; False whenever that is not certain."""
    code = fn.__code__
    if code.co_cellvars or any(inspect.iscode(c) for c in code.co_consts):
        return False
    owner = fn.__qualname__.rpartition(".")[0]
    if owner and "<" not in owner:      # a method: `self.helper(x)` may be staged
        return False
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    # (a local named as a global: functionalize resolves call names without their scope)
    for name in code.co_varnames:
        found, value = _free(fn, cells, name)
        if found and not _safe(value):
            return False
    reached = UNRESOLVED        # what the attribute chain being read has reached
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op not in _OPS:
            return False
        if op in _ATTRIBUTES:
            if reached is not UNRESOLVED:
                reached = _attribute(reached, ins.argval)
                if reached is UNRESOLVED or not _safe(reached):
                    return False
            continue
        reached = UNRESOLVED
        if op in _FREE:
            found, reached = _free(fn, cells, ins.argval)
            if not found or not _safe(reached):
                return False
    return True


def _free(fn, cells, name):
    """(found, value) of free name `name` as `fn` reads it: its closure cell, else its global,
    else a builtin."""
    if name in cells:
        try:
            return True, cells[name].cell_contents
        except ValueError:      # an empty cell
            return False, None
    g = fn.__globals__
    if name in g:
        return True, g[name]
    b = fn.__builtins__ if isinstance(fn.__builtins__, dict) else vars(builtins)
    if name in b:
        return True, b[name]
    return False, None


def _safe(obj):
    """Whether no user function is reachable through `obj` (read or called)."""
    t = type(obj)
    if t in _ATOMS or t is types.ModuleType or isinstance(obj, (np.ndarray, np.generic, np.dtype,
                                                                np.ufunc)):
        return True
    if t is types.FunctionType:     # (exactly functionalize's test of a user function)
        return (obj.__module__ or "").split(".")[0] in ("secant", "numpy")
    if t is types.BuiltinFunctionType:
        return obj is not builtins.getattr      # (getattr(mod, "f") is resolved)
    if isinstance(obj, type):
        return (obj.__module__ or "").split(".")[0] in _LIBRARIES
    return False
