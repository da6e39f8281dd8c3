"""jax.test_util's gradient checks: check_grads, check_jvp, check_vjp.

As JAX's: derivatives are checked in one random direction (NumPy RandomState(0)) against central
finite differences with step `eps`: the jvp's tangent against the numerical jvp, the vjp through
the dot-product identity <u, J v> == <J^T u, v> (J v numerical), each recursively to `order`
(the jvp of the jvp, the vjp of the vjp). Tolerances are JAX's (per dtype, scaled by the number
of elements); a mismatch raises AssertionError.
"""
import functools
import operator

import numpy as np

from secant import tree_util
from secant.backends import dtypes as _dtypes

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

_default_tolerance = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.int16): 0,
    np.dtype(np.int32): 0, np.dtype(np.int64): 0, np.dtype(np.uint8): 0,
    np.dtype(np.uint16): 0, np.dtype(np.uint32): 0, np.dtype(np.uint64): 0,
    np.dtype(_dtypes.bfloat16): 1e-2, np.dtype(np.float16): 1e-3,
    np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}

default_gradient_tolerance = {
    np.dtype(_dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _dtype(x):
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if isinstance(x, (bool, int, float, complex)):
        return _dtypes.canonicalize_dtype(np.asarray(x).dtype)
    return np.asarray(x).dtype


def _is_python_scalar(x):
    return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _tolerance(dtype, tol):
    if tol is None:
        tol = {}
    if not isinstance(tol, dict):
        return tol
    tol = {np.dtype(k): v for k, v in tol.items()}
    dtype = _dtypes.canonicalize_dtype(np.dtype(dtype))
    return tol.get(dtype, _default_tolerance.get(dtype, 0))


def _assert_close(a, b, atol=None, rtol=None, err_msg=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{err_msg}: shapes differ: {a.shape} vs {b.shape}"
    atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
    rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
    if a.dtype == _dtypes.bfloat16:
        a = a.astype(np.float32)
    if b.dtype == _dtypes.bfloat16:
        b = b.astype(np.float32)
    kw = {}
    if atol:
        kw["atol"] = atol * a.size
    if rtol:
        kw["rtol"] = rtol * b.size
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, **kw, err_msg=err_msg)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    tree_util.tree_map(functools.partial(_assert_close, atol=atol, rtol=rtol, err_msg=err_msg),
                       xs, ys)


def _check_dtypes_match(xs, ys):
    def match(x, y):
        assert _dtypes.canonicalize_dtype(_dtype(x)) == _dtypes.canonicalize_dtype(_dtype(y)), \
            f"dtypes differ: {_dtype(x)} vs {_dtype(y)}"
    tree_util.tree_map(match, xs, ys)


def inner_prod(xs, ys):
    def contract(x, y):
        x, y = np.asarray(x), np.asarray(y)
        return np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))
    return functools.reduce(np.add, tree_util.tree_leaves(tree_util.tree_map(contract, xs, ys)))


def _preserve_input_types(f):
    def wrapped(*args):
        result = np.array(f(*[np.asarray(a) for a in args]), dtype=_dtype(args[0]))
        return result.item() if all(_is_python_scalar(a) for a in args) else result
    return wrapped


def _safe_subtract(x, y):
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(x, y), np.array(0, x.dtype), np.subtract(x, y, dtype=x.dtype))


def _tree(f):
    return functools.partial(tree_util.tree_map, f)


_add = _tree(_preserve_input_types(operator.add))
_sub = _tree(_preserve_input_types(operator.sub))
_safe_sub = _tree(_safe_subtract)
_conj = _tree(_preserve_input_types(np.conj))


def _scalar_mul(xs, a):
    def mul(x):
        dtype = _dtype(x)
        result = np.multiply(np.asarray(x), np.array(a, dtype=dtype), dtype=dtype)
        return result.item() if _is_python_scalar(x) else result
    return tree_util.tree_map(mul, xs)


def rand_like(rng, x):
    shape, dtype = np.shape(x), _dtype(x)
    result = np.asarray(rng.randn(*shape), dtype=dtype)
    if np.issubdtype(dtype, np.complexfloating):
        result = result + dtype.type(1.0j) * np.asarray(rng.randn(*shape), dtype=dtype)
    return result.item() if _is_python_scalar(x) else result


def numerical_jvp(f, primals, tangents, eps=EPS):
    """Central differences: (f(x + eps t) - f(x - eps t)) / (2 eps)."""
    delta = _scalar_mul(tangents, eps)
    f_pos = f(*_add(primals, delta))
    f_neg = f(*_sub(primals, delta))
    return _scalar_mul(_safe_sub(f_pos, f_neg), 0.5 / eps)


def _merge_tolerance(tol, default):
    if tol is None:
        return default
    if not isinstance(tol, dict):
        return tol
    out = dict(default)
    out.update({np.dtype(k): v for k, v in tol.items()})
    return out


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """The jvp `f_jvp(args, tangents)` of f against central differences, in one random
    direction; AssertionError when they differ."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rng = np.random.RandomState(0)
    tangent = tree_util.tree_map(functools.partial(rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes_match(v_out, t_out)
    v_out_expected = f(*args)
    _check_dtypes_match(v_out, v_out_expected)
    t_out_expected = numerical_jvp(f, args, tangent, eps=eps)
    check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} primal" if err_msg else "primal")
    check_close(t_out, t_out_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """The vjp `f_vjp(*args) -> (out, vjp_fun)` of f, through <u, J v> == <J^T u, v> with J v
    from central differences; AssertionError when they differ."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rand = functools.partial(rand_like, np.random.RandomState(0))
    v_out, vjpfun = f_vjp(*args)
    v_out_expected = f(*args)
    check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} primal" if err_msg else "primal")
    tangent = tree_util.tree_map(rand, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_util.tree_map(rand, v_out)
    cotangent_out = _conj(vjpfun(_conj(cotangent)))
    ip = inner_prod(tangent, cotangent_out)
    ip_expected = inner_prod(tangent_out, cotangent)
    check_close(ip, ip_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} cotangent projection" if err_msg
                else "cotangent projection")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check f's derivatives up to `order` in `modes` ('fwd': jvp, 'rev': vjp) against finite
    differences at `args`; AssertionError when they differ (JAX's semantics and tolerances)."""
    from secant.transforms import jvp, vjp
    args = tuple(args)
    eps = eps or EPS
    _check_jvp = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    _check_vjp = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def _check_grads(f, args, order, err_msg=""):
        if "fwd" in modes:
            fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
            _check_jvp(f, functools.partial(jvp, f), args, err_msg=fwd_msg)
            if order > 1:
                _check_grads(_jvp_of(f, len(args)), (args, args), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
            _check_vjp(f, functools.partial(vjp, f), args, err_msg=rev_msg)
            if order > 1:
                _check_grads(_vjp_of(f, len(args), vjp), args, order - 1, rev_msg)

    _check_grads(f, args, order)


def _vjp_of(f, n, vjp):
    """JAX's `f_vjp(*args) = vjp_fun(out)` of `(out, vjp_fun) = vjp(f, *args)`, written as the
    transforms read it: for real outputs vjp_fun(out) = J(x)^T f(x) is the gradient of
    0.5 * |f(x)|^2 (its derivatives are f's second-order reverse ones, as JAX's)."""
    from secant.codegen import loader
    from secant.transforms import grad
    import secant.numpy as snp
    params = ", ".join(f"x{i}" for i in range(n))
    argnums = tuple(range(n))
    source = (f"def f_vjp({params}):\n"
              f"    return grad(half_squared_norm, argnums={argnums})({params})\n")
    norm = (f"def half_squared_norm({params}):\n"
            f"    total = 0.0\n"
            f"    for out in tree_leaves(f({params})):\n"
            f"        total = total + 0.5 * snp.sum(snp.real(out * snp.conj(out)))\n"
            f"    return total\n")
    half = loader.load(norm, "half_squared_norm", {}, {"f": f, "snp": snp,
                                                       "tree_leaves": tree_util.tree_leaves})
    return loader.load(source, "f_vjp", {}, {"grad": grad, "half_squared_norm": half})


def _jvp_of(f, n):
    """JAX's `partial(jvp, f)`, a function of (primals, tangents), written as the transforms
    read a jvp call (tuple literals)."""
    from secant.codegen import loader
    ps = ", ".join(f"p{i}" for i in range(n))
    ts = ", ".join(f"t{i}" for i in range(n))
    c = "," if n == 1 else ""
    source = (f"def f_jvp(primals, tangents):\n"
              f"    {ps}{c} = primals\n"
              f"    {ts}{c} = tangents\n"
              f"    return secant.jvp(f, ({ps}{c}), ({ts}{c}))\n")
    import secant
    return loader.load(source, "f_jvp", {}, {"secant": secant, "f": f})
