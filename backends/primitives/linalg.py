"""Linear-algebra primitives: Cholesky, triangular solve, LU with partial pivoting.

Each works on the last two axes, batched over the leading ones (equal leading shapes, as
lax.linalg's). The NumPy implementations are what eager mode runs; jit lowers cholesky and
triangular_solve to the StableHLO ops of those names and lu to LAPACK's getrf, which jaxlib
registers with XLA (backends/lowering/linalg.py, backends/runtime.py lapack_target).
"""
import threading

import numpy as np

from secant.backends import dtypes
from secant.backends.core import Primitive, aval_of, register
from secant.backends.primitives.common import shape_error, type_error


def _define(name, rule, impl, **options):
    def checked_impl(*args, **params):
        rule(*[aval_of(a) for a in args], **params)
        return impl(*args, **params)
    return register(Primitive(name, rule, checked_impl, **options))


def _check_square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        shape_error(f"{name} needs square matrices in its last two axes, got shape {a.shape}")
    if not dtypes.is_inexact(a.dtype):
        type_error(f"{name} needs a floating-point or complex array, got {a.dtype}")


# --- cholesky -------------------------------------------------------------------------------------
def _cholesky_rule(a):
    _check_square("cholesky", a)
    return a


def _cholesky(a):
    """The lower Cholesky factor, read from a's lower triangle (LAPACK's potrf('L')); a matrix
    that is not positive definite gives NaNs, as under jit."""
    out = np.empty_like(a)
    if a.size == 0:         # 0 x 0 matrices (or an empty stack): nothing to factor
        return out
    flat_a, flat_out = a.reshape((-1,) + a.shape[-2:]), out.reshape((-1,) + a.shape[-2:])
    for i in range(flat_a.shape[0]):
        m = np.tril(flat_a[i])
        m = m + np.tril(m, -1).conj().T
        try:
            flat_out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            flat_out[i] = np.nan
    return out


cholesky_p = _define("cholesky", _cholesky_rule, _cholesky)


# --- triangular_solve -----------------------------------------------------------------------------
def _triangular_solve_rule(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_square("triangular_solve", a)
    if a.dtype != b.dtype:
        type_error(f"triangular_solve needs a and b of one dtype, got {a.dtype} and {b.dtype}")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        shape_error(f"triangular_solve needs a and b with the same leading (batch) axes, got "
                    f"shapes {a.shape} and {b.shape}")
    m = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != m:
        shape_error(f"triangular_solve: a of shape {a.shape} does not fit b of shape {b.shape} "
                    f"(left_side={left_side})")
    return b


def _triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """By substitution (a singular a gives inf / NaN, as under jit, not an error); above
    16 x 16, the compiled StableHLO op jit runs."""
    if a.shape[-1] > _LOOP_SIZE:
        from secant.backends import compiled_kernels
        return compiled_kernels.run(triangular_solve_p, [a, b], dict(
            left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
            unit_diagonal=unit_diagonal))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(a.shape[-1], dtype=a.dtype) + np.eye(a.shape[-1], dtype=a.dtype)
    if conjugate_a:
        t = t.conj()
    if transpose_a:
        t, lower = np.swapaxes(t, -1, -2), not lower
    if left_side:
        x = _substitute(t, b, lower)
    else:       # x t = b  <=>  t^T x^T = b^T
        x = np.swapaxes(_substitute(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not lower),
                        -1, -2)
    return x.astype(b.dtype)


def _substitute(t, b, lower):
    """x with t x = b, t lower (forward substitution) or upper (backward) triangular."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(t, b))
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        known = slice(0, i) if lower else slice(i + 1, n)
        rest = (t[..., i:i + 1, known] @ x[..., known, :])[..., 0, :]
        x[..., i, :] = (b[..., i, :] - rest) / t[..., i, i:i + 1]
    return x


triangular_solve_p = _define("triangular_solve", _triangular_solve_rule, _triangular_solve)


# --- lu ---------------------------------------------------------------------------------------------
def _lu_rule(a):
    """m x n matrices (square or not): the packed factors (m x n) and min(m, n) pivots."""
    if a.ndim < 2:
        shape_error(f"lu needs matrices in its last two axes, got shape {a.shape}")
    if not dtypes.is_inexact(a.dtype):
        type_error(f"lu needs a floating-point or complex array, got {a.dtype}")
    k = min(a.shape[-2:])
    return [a, a.update(shape=a.shape[:-2] + (k,), dtype=np.int32, weak_type=False)]


_last_lu = threading.local()     # this thread's last factorisation: (input copy, outputs)


def _lu(a):
    """LU with partial pivoting (LAPACK's getrf): the packed factors (L below the diagonal, its
    unit diagonal implied, U on and above it) and the 0-based row swapped with row k at step k.

    lax.linalg.lu binds this twice (its factors and its pivots are two ops): the second call of
    a run with an equal input reuses the first's outputs (compared by value, so a NumPy array
    changed in place in between is factored again)."""
    last = getattr(_last_lu, "hit", None)
    if last is not None and last[0].shape == a.shape and last[0].dtype == a.dtype \
            and np.array_equal(last[0], a):
        return list(last[1])
    out = _lu_factor(a)
    _last_lu.hit = (np.array(a, copy=True), tuple(out))
    return out


def _lu_factor(a):
    n = max(a.shape[-2:])
    if n > _LOOP_SIZE:        # LAPACK's getrf, compiled once per signature (as jit runs it)
        from secant.backends import compiled_kernels
        return compiled_kernels.run(lu_p, [a], {})
    return _lu_loop(a)


_LOOP_SIZE = 16     # up to this size a NumPy loop over the pivots beats compiling getrf


def _pivot_size(x):
    """What getrf's i?amax compares: |re| + |im| (|x| for real x), the first largest; a NaN is
    never larger (it wins only in the first place, which i?amax starts from)."""
    size = np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)
    size = np.where(np.isnan(size), -1.0, size)
    size[..., 0] = np.where(size[..., 0] < 0, np.inf, size[..., 0])
    return size


def _lu_loop(a):
    lu = np.array(a, copy=True)
    m, n = a.shape[-2:]
    flat = lu.reshape((int(np.prod(a.shape[:-2])), m, n))     # (n = 0 too)
    pivots = np.zeros((flat.shape[0], min(m, n)), np.int32)
    rows = np.arange(flat.shape[0])
    for k in range(min(m, n)):
        p = k + np.argmax(_pivot_size(flat[:, k:, k]), axis=1)
        pivots[:, k] = p
        top, pivot_row = flat[rows, k].copy(), flat[rows, p].copy()
        flat[rows, k], flat[rows, p] = pivot_row, top
        d = flat[:, k, k]
        safe = np.where(d == 0, 1, d)
        flat[:, k + 1:, k] = np.where((d == 0)[:, None], flat[:, k + 1:, k],
                                      flat[:, k + 1:, k] / safe[:, None])
        flat[:, k + 1:, k + 1:] -= flat[:, k + 1:, k:k + 1] * flat[:, k:k + 1, k + 1:]
    return [lu, pivots.reshape(a.shape[:-2] + (min(m, n),))]


lu_p = _define("lu", _lu_rule, _lu, multiple_results=True)


# --- lu_pivots_to_permutation -------------------------------------------------------------------
def _permutation_rule(pivots, permutation_size):
    if pivots.ndim < 1 or pivots.dtype != np.int32:
        type_error(f"lu_pivots_to_permutation needs int32 pivots, got {pivots.dtype}{pivots.shape}")
    if pivots.shape[-1] > permutation_size:
        shape_error(f"lu_pivots_to_permutation: {pivots.shape[-1]} pivots for a permutation of "
                    f"size {permutation_size}")
    return pivots.update(shape=pivots.shape[:-1] + (permutation_size,), weak_type=False)


def _permutation(pivots, permutation_size):
    """The permutation the row swaps make of range(permutation_size): step k swaps entries k and
    pivots[k]."""
    batch = pivots.shape[:-1]
    flat = pivots.reshape((int(np.prod(batch)), pivots.shape[-1]))     # (size 0 too)
    perm = np.broadcast_to(np.arange(permutation_size, dtype=np.int32),
                           (flat.shape[0], permutation_size)).copy()
    rows = np.arange(flat.shape[0])
    for k in range(flat.shape[1]):
        j = flat[:, k]
        perm_k = perm[:, k].copy()
        perm[:, k] = perm[rows, j]
        perm[rows, j] = perm_k
    return perm.reshape(batch + (permutation_size,))


lu_pivots_to_permutation_p = _define("lu_pivots_to_permutation", _permutation_rule, _permutation,
                                     weak="never", differentiable=False)
