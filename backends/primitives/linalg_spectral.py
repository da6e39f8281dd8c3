"""Spectral linear-algebra primitives (numpy.linalg's qr, eigh, svd, eig), batched over leading
axes. Each is the LAPACK kernel XLA runs under jit (backends/lowering/linalg_spectral.py); the
NumPy implementation runs it eagerly. They have no rules of their own: secant.numpy.linalg's
functions are ops with rules (secant/numpy/linalg_spectral.py), the primitives compute values.

- eigh(a) -> (w, v): a Hermitian (its lower triangle is read), w real ascending, a = v diag(w) v^H;
- svd(a, full_matrices, compute_uv) -> (s, u, vh) (or (s,)): s descending, a = u diag(s) vh;
- geqrf(a) -> (packed, tau): LAPACK's Householder QR (R above the diagonal, reflectors below);
- householder_product(packed, tau) -> q: the first packed.shape[-1] columns of H_1 ... H_k
  (k = tau.shape[-1] reflectors);
- eig(a) -> (w, v): a complex square, a v = v diag(w), columns of v of unit norm.

Where LAPACK fails on a matrix (eigh, svd, eig: no convergence, or a NaN/inf input) its results
are NaN, eagerly and under jit, as JAX's.
"""
import numpy as np

from secant.backends import dtypes
from secant.backends.core import Primitive, ShapedArray, register
from secant.backends.primitives.common import type_error


def _matrix(name, a, square=False):
    if a.ndim < 2:
        type_error(f"{name} needs an array of at least 2 dimensions (a stack of matrices), got "
                   f"shape {a.shape}")
    if a.dtype not in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128):
        type_error(f"{name} needs float32, float64, complex64 or complex128 matrices, got "
                   f"{a.dtype.name}")
    if square and a.shape[-1] != a.shape[-2]:
        type_error(f"{name} needs square matrices, got shape {a.shape}")
    return a.shape[:-2], a.shape[-2], a.shape[-1]


def _real(dt):
    return np.dtype({dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(
        np.dtype(dt), dt))


_LOOP_SIZE = 16     # larger matrices run jit's LAPACK kernel eagerly (compiled once per shape)


def define(name, rule, impl):
    """Register a primitive whose eager implementation is `impl` (NumPy) for matrices up to
    16 x 16, and above that the compiled LAPACK call jit makes (backends/compiled_kernels.py):
    as fast as jit, and the same kernel (NaN where it fails, as under jit)."""
    def checked(*args, **params):
        rule(*[ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args], **params)
        args = [np.asarray(a) for a in args]
        if max(args[0].shape[-2:]) > _LOOP_SIZE and args[0].size:
            from secant.backends import compiled_kernels
            return compiled_kernels.run(prim, args, params)
        return impl(*args, **params)
    prim = register(Primitive(name, rule, checked, multiple_results=True, weak="never",
                              differentiable=False))
    return prim


def per_matrix(fn, a, results):
    """fn(a) for a stack of matrices; where NumPy's LAPACK call fails (LinAlgError: no
    convergence) or a matrix is not finite, that matrix's results are NaN, as jit's (the
    kernel's `info` is not 0). `results`: the outputs' (shape, dtype) for NaN-filling."""
    finite = np.isfinite(a).all(axis=(-2, -1))
    if finite.all():
        try:
            return fn(a)
        except np.linalg.LinAlgError:
            pass
    batch = a.shape[:-2]
    outs = [np.full(batch + tuple(shape), np.nan, dtype) for shape, dtype in results]
    for idx in np.ndindex(batch):
        if not finite[idx]:
            continue
        try:
            one = fn(a[idx])
        except np.linalg.LinAlgError:
            continue
        for o, v in zip(outs, one):
            o[idx] = v
    return outs


# --- eigh ---------------------------------------------------------------------------------------
def _eigh_rule(a):
    batch, n, _ = _matrix("eigh", a, square=True)
    return [ShapedArray(batch + (n,), _real(a.dtype)), ShapedArray(a.shape, a.dtype)]


def _eigh(a):
    def fn(x):
        w, v = np.linalg.eigh(x, UPLO="L")
        return [w.astype(_real(a.dtype)), v.astype(a.dtype)]
    n = a.shape[-1]
    return per_matrix(fn, a, [((n,), _real(a.dtype)), ((n, n), a.dtype)])


eigh_p = define("eigh", _eigh_rule, _eigh)


# --- svd ----------------------------------------------------------------------------------------
def _svd_rule(a, full_matrices, compute_uv):
    batch, m, n = _matrix("svd", a)
    k = min(m, n)
    s = ShapedArray(batch + (k,), _real(a.dtype))
    if not compute_uv:
        return [s]
    cu, cv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, cu), a.dtype), ShapedArray(batch + (cv, n), a.dtype)]


def _svd(a, full_matrices, compute_uv):
    m, n = a.shape[-2:]
    k = min(m, n)
    s_shape = ((k,), _real(a.dtype))
    if not compute_uv:
        return per_matrix(lambda x: [np.linalg.svd(x, compute_uv=False).astype(_real(a.dtype))],
                          a, [s_shape])

    def fn(x):
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
        return [s.astype(_real(a.dtype)), u.astype(a.dtype), vh.astype(a.dtype)]
    cu, cv = (m, n) if full_matrices else (k, k)
    return per_matrix(fn, a, [s_shape, ((m, cu), a.dtype), ((cv, n), a.dtype)])


svd_p = define("svd", _svd_rule, _svd)


# --- QR: Householder factorisation and the product of its reflectors ----------------------------------
def _geqrf_rule(a):
    batch, m, n = _matrix("geqrf", a)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (min(m, n),), a.dtype)]


def _geqrf(a):
    m, n = a.shape[-2:]
    packed = np.empty(a.shape, a.dtype)
    tau = np.empty(a.shape[:-2] + (min(m, n),), a.dtype)
    for idx in np.ndindex(a.shape[:-2]):
        h, t = np.linalg.qr(a[idx], mode="raw")       # LAPACK's geqrf, h transposed
        packed[idx], tau[idx] = h.T, t
    return [packed, tau]


geqrf_p = define("geqrf", _geqrf_rule, _geqrf)


def _householder_product_rule(packed, tau):
    batch, m, n = _matrix("householder_product", packed)
    if tau.shape[:-1] != batch or tau.shape[-1] > n or tau.dtype != packed.dtype or n > m:
        type_error(f"householder_product: reflectors {packed} (m >= n) and at most n factors, "
                   f"got {tau}")
    return [ShapedArray(packed.shape, packed.dtype)]


def _householder_product(packed, tau):
    m, n = packed.shape[-2:]
    q = np.empty(packed.shape, packed.dtype)
    for idx in np.ndindex(packed.shape[:-2]):
        h, t = packed[idx], tau[idx]
        out = np.eye(m, n, dtype=packed.dtype)
        for i in reversed(range(t.shape[0])):          # H_1 (H_2 (... (H_k I)))
            v = np.zeros(m, packed.dtype)
            v[i] = 1
            v[i + 1:] = h[i + 1:, i]
            out = out - t[i] * np.outer(v, v.conj() @ out)
        q[idx] = out
    return [q]


householder_product_p = define("householder_product", _householder_product_rule,
                               _householder_product)


# --- eig ----------------------------------------------------------------------------------------
def _eig_rule(a):
    batch, n, _ = _matrix("eig", a, square=True)
    if not dtypes.is_complex(a.dtype):
        type_error(f"eig (the primitive) takes complex matrices, got {a.dtype.name}")
    return [ShapedArray(batch + (n,), a.dtype), ShapedArray(a.shape, a.dtype)]


def _eig(a):
    def fn(x):
        w, v = np.linalg.eig(x)
        return [w.astype(a.dtype), v.astype(a.dtype)]
    n = a.shape[-1]
    return per_matrix(fn, a, [((n,), a.dtype), ((n, n), a.dtype)])


eig_p = define("eig", _eig_rule, _eig)


# --- schur and hessenberg: no NumPy equivalent; eagerly, the compiled LAPACK kernel jit calls ----
def define_compiled(name, rule):
    """A primitive that runs, eagerly too, the LAPACK call of its lowering (compiled once per
    signature, backends/compiled_kernels.py): the values eager and jit give are the same."""
    def compiled(*args, **params):
        rule(*[ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args], **params)
        from secant.backends import compiled_kernels
        return compiled_kernels.run(prim, [np.asarray(a) for a in args], params)
    prim = register(Primitive(name, rule, compiled, multiple_results=True, weak="never",
                              differentiable=False))
    return prim


def _schur_rule(a):
    """schur(a) -> (t, z): a = z t z^H, t upper (quasi-)triangular (LAPACK's gees, unsorted;
    real a: the real Schur form, 2 x 2 blocks for complex pairs)."""
    _matrix("schur", a, square=True)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape, a.dtype)]


def _hessenberg_rule(a):
    """hessenberg(a) -> (packed, tau): LAPACK's gehrd (h on and above the first subdiagonal,
    the reflectors below it; n - 1 factors)."""
    batch, n, _ = _matrix("hessenberg", a, square=True)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (max(n - 1, 0),), a.dtype)]


schur_p = define_compiled("schur", _schur_rule)
hessenberg_p = define_compiled("hessenberg", _hessenberg_rule)
