"""secant.numpy.linalg: numpy.linalg's functions, as JAX's jax.numpy.linalg.

Written with secant.numpy and secant.lax.linalg's ops (cholesky, triangular_solve, the LU
factors and pivots), so grad, jvp and vmap read these functions' source: their derivatives
follow from the ops' rules (ad/linalg_rules.py). Every function takes stacks of matrices
(leading axes), as NumPy's. The spectral family (qr, eigh, svd, ...) is
secant/numpy/linalg_spectral.py, re-exported here.
"""
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.custom import custom_jvp as _custom_jvp

__secant_by_source__ = True      # transforms read this module like user code


def _constant(fn):
    """Mark a helper computing integers (indices, signs) from an LU's pivots: no derivative."""
    fn.__secant_constant__ = True
    return fn


def _square(shape, name):
    """Refuse a stack of non-square matrices, from its shape (lax.linalg.lu factors any m x n:
    these need n x n)."""
    from secant.backends.errors import SecantValueError, where
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise SecantValueError(f"{name} needs square matrices in its last two axes, got shape "
                               f"{shape}{where()}")


def _inexact(x):
    """x as an inexact array: integers become the default float type, as in JAX."""
    if snp.result_type(x).kind not in "fc":
        x = snp.asarray(x).astype(snp.result_type(0.0))
    return x


def _diagonal(x):
    """The diagonals of a stack of square matrices (..., n)."""
    return snp.sum(snp.where(np.eye(np.shape(x)[-1], dtype=bool), x, 0), axis=-1)


@_constant
def _row_indices(perm, shape):
    return snp.broadcast_to(perm[..., :, None], shape)


def _permute_rows(x, perm):
    """P x: row i is row perm[i] of x (perm from an LU)."""
    return snp.take_along_axis(x, _row_indices(perm, np.shape(x)), axis=-2)


def _lu_solve(lu, perm, b):
    """x with A x = b, from P A = L U: x = U^-1 L^-1 P b (b a stack of matrices like lu's)."""
    y = lax.linalg.triangular_solve(lu, _permute_rows(b, perm), left_side=True, lower=True,
                                    unit_diagonal=True)
    return lax.linalg.triangular_solve(lu, y, left_side=True, lower=False)


@_constant
def _lu_sign(pivots, dtype):
    """The sign of the permutation the pivots make: (-1) ** (number of swaps)."""
    n = np.shape(pivots)[-1]
    swaps = snp.sum(pivots != snp.arange(n, dtype=snp.int32), axis=-1)
    return (1 - 2 * (swaps % 2)).astype(dtype)


def solve(a, b):
    """x with a @ x = b (b a vector when 1-D, else a stack of matrices), by LU."""
    shape = np.shape(a)
    _square(shape, "solve")
    a, b = _inexact(a), _inexact(b)
    dtype = snp.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    vector = np.ndim(b) == 1
    if vector:
        b = b[:, None]
    batch = np.broadcast_shapes(np.shape(a)[:-2], np.shape(b)[:-2])
    a = snp.broadcast_to(a, batch + np.shape(a)[-2:])
    b = snp.broadcast_to(b, batch + np.shape(b)[-2:])
    lu, _, perm = lax.linalg.lu(a)
    x = _lu_solve(lu, perm, b)
    if vector:
        x = x[..., 0]
    return x


def inv(a):
    """The inverse of each square matrix of a, by LU."""
    shape = np.shape(a)
    _square(shape, "inv")
    a = _inexact(a)
    n = np.shape(a)[-1]
    return solve(a, snp.broadcast_to(snp.eye(n, dtype=a.dtype), np.shape(a)))


def _cofactor_solve(a, b):
    """(det(a), det(a) a^-1 b) for each square a (b a stack of matrices like a), finite also
    at a singular a of rank n - 1, where det(a) a^-1 is the adjugate (JAX's _cofactor_solve):
    from P a = L U, U's last pivot is replaced by 1 / (the product of the others, with P's
    sign), and the first n - 1 rows of L^-1 P b are scaled by det(a) before the back solve.
    An a of lower rank (another pivot 0) gives 0, as JAX."""
    n = np.shape(a)[-1]
    if n == 0:          # the empty product: det 1, adj the empty matrix
        return snp.ones(np.shape(a)[:-2], a.dtype), b
    if n == 1:
        return a[..., 0, 0], b
    lu, pivots, perm = lax.linalg.lu(a)
    partial = snp.cumprod(_diagonal(lu), axis=-1) * _lu_sign(pivots, a.dtype)[..., None]
    lu = lu.at[..., -1, -1].set(1 / partial[..., -2])
    ones = snp.ones(np.shape(a)[:-2] + (1, n), dtype=a.dtype)
    probe = lax.linalg.triangular_solve(lu, ones, left_side=False, lower=False)
    low_rank = snp.any(~snp.isfinite(probe), axis=(-2, -1))[..., None, None]
    x = _permute_rows(snp.where(low_rank, 0, b), perm)
    x = lax.linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = snp.concatenate([x[..., :-1, :] * partial[..., -1, None, None], x[..., -1:, :]],
                        axis=-2)
    x = lax.linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return partial[..., -1], snp.where(low_rank, 0, x)


@_custom_jvp
def _det(a):
    lu, pivots, _ = lax.linalg.lu(a)
    return _lu_sign(pivots, a.dtype) * snp.prod(_diagonal(lu), axis=-1)


@_det.defjvp
def _det_jvp(primals, tangents):
    a, = primals
    a_dot, = tangents
    return _det(a), snp.sum(_adjugate(a) * snp.swapaxes(a_dot, -1, -2), axis=(-2, -1))


@_custom_jvp
def _adjugate(a):
    """adj(a) = det(a) a^-1, finite at every a (a^-1 is never formed: _cofactor_solve)."""
    n = np.shape(a)[-1]
    return _cofactor_solve(a, snp.broadcast_to(snp.eye(n, dtype=a.dtype), np.shape(a)))[1]


@_adjugate.defjvp
def _adjugate_jvp(primals, tangents):
    """d adj(a)[e] at any a, of any rank. With a = u diag(s) vh (SVD, u and vh held fixed):
    adj(a + e) = c vh^H adj(diag(s) + f) u^H exactly, f = u^H e vh^H and c = det(u) det(vh);
    the derivative of adj at a diagonal matrix reads off f: on the diagonal
    sum_(k != i) f_kk prod_(l != i, k) s_l, off it -f_ij prod_(l != i, j) s_l. Only products
    of singular values: no division, no derivative of the SVD."""
    a, = primals
    e, = tangents
    n = np.shape(a)[-1]
    u, s, vh = svd(lax.stop_gradient(a))
    s = s.astype(a.dtype)
    f = _mH(u) @ e @ _mH(vh)
    keep = ~(np.eye(n, dtype=bool)[:, None, :] | np.eye(n, dtype=bool)[None, :, :])
    # q[i, j] = prod of s without s_i and s_j (0 on the diagonal: no k = i term)
    q = snp.prod(snp.where(keep, s[..., None, None, :], 1), axis=-1)
    q = snp.where(np.eye(n, dtype=bool), 0, q)
    diagonal = snp.sum(q * _diagonal(f)[..., None, :], axis=-1)
    d_adj_s = snp.where(np.eye(n, dtype=bool), diagonal[..., :, None], -f * q)
    c = (det(u) * det(vh))[..., None, None]
    return _adjugate(a), c * (_mH(vh) @ d_adj_s @ _mH(u))


def _mH(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def _det_2x2(a):
    return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
    return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
            + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
            + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
            - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
            - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
            - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def det(a):
    """The determinant of each square matrix: for 2 x 2 and 3 x 3, the products of their
    entries (JAX's closed forms: the same rounding, det([[1, 2], [2, 4]]) is 0.0, the LU's
    -0.0); else the sign of P times the product of U's diagonal (P a = L U). Its derivative is
    tr(adj(a) da) (JAX's rule), finite also at a singular a of rank n - 1 (where det(a) a^-T
    would be 0 * inf); its second derivative, adj's, is exact at every a, of any rank
    (_adjugate_jvp)."""
    shape = np.shape(a)
    _square(shape, "det")
    if shape[-1] == 2:
        return _det_2x2(_inexact(a))
    if shape[-1] == 3:
        return _det_3x3(_inexact(a))
    return _det(_inexact(a))


def slogdet(a):
    """(sign, log|det|) of each square matrix, from its LU: the sign of P times the signs of
    U's diagonal, and the sum of the logs of its magnitudes. d log|det| = tr(a^-1 da)."""
    shape = np.shape(a)
    _square(shape, "slogdet")
    a = _inexact(a)
    lu, pivots, _ = lax.linalg.lu(a)
    d = _diagonal(lu)
    magnitude = snp.abs(d)
    if snp.result_type(a).kind == "c":
        sign = _lu_sign(pivots, a.dtype) * snp.prod(d / magnitude, axis=-1)
    else:
        sign = _lu_sign(pivots, a.dtype) * snp.prod(snp.sign(d), axis=-1)
    logabsdet = snp.sum(snp.log(magnitude), axis=-1)
    return sign, logabsdet


def cholesky(a, upper=False):
    """The lower Cholesky factor L (a = L L^H) of each Hermitian positive-definite matrix, or
    its conjugate transpose (upper). As JAX, a is symmetrised first: (a + a^H) / 2."""
    a = _inexact(a)
    factor = lax.linalg.cholesky(a)
    if upper:
        factor = snp.conj(snp.swapaxes(factor, -1, -2))
    return factor


@_constant
def _binary_digits(n):
    """n's binary digits, lowest first."""
    return tuple(int(c) for c in bin(n)[:1:-1])


def matrix_power(a, n):
    """a @ a @ ... (n times, n a Python int) by repeated squaring; n < 0: of inv(a)."""
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}")
    size = np.shape(a)[-1]
    if n < 0:
        a = inv(a)
        n = -n
    if n == 0:
        out = snp.broadcast_to(snp.eye(size, dtype=snp.result_type(a)), np.shape(a))
    else:
        bits = _binary_digits(n)
        power = a
        out = a
        first = True
        for i in range(len(bits)):
            if bits[i]:
                if first:
                    out = power
                    first = False
                else:
                    out = out @ power
            if i + 1 < len(bits):
                power = power @ power
    return out


def multi_dot(arrays):
    """arrays[0] @ arrays[1] @ ...: a 1-D first (last) array is a row (column) vector."""
    if len(arrays) < 2:
        raise ValueError("multi_dot needs at least two arrays")
    out = arrays[0]
    for x in arrays[1:]:
        out = out @ x
    return out


def _abs_squared(x):
    if snp.result_type(x).kind == "c":
        out = snp.real(x * snp.conj(x))
    else:
        out = x * x
    return out


def _matrix_norm(x, ord, axis, keepdims):
    rows, cols = axis
    if ord is None or ord == "fro":
        out = snp.sqrt(snp.sum(_abs_squared(x), axis=axis, keepdims=True))
    elif ord in (1, -1):
        sums = snp.sum(snp.abs(x), axis=rows, keepdims=True)
        if ord == 1:
            out = snp.max(sums, axis=cols, keepdims=True)
        else:
            out = snp.min(sums, axis=cols, keepdims=True)
    elif ord in (np.inf, -np.inf):
        sums = snp.sum(snp.abs(x), axis=cols, keepdims=True)
        if ord == np.inf:
            out = snp.max(sums, axis=rows, keepdims=True)
        else:
            out = snp.min(sums, axis=rows, keepdims=True)
    else:
        out = _spectral_matrix_norm(x, ord, axis)
    if not keepdims:
        out = snp.squeeze(out, axis=axis)
    return out


def _spectral_matrix_norm(x, ord, axis):
    """ord 2, -2 and 'nuc' need singular values (secant/numpy/linalg_spectral.py)."""
    if ord not in (2, -2, "nuc"):
        raise ValueError(f"norm: matrix order {ord!r} is not supported (None, 'fro', 1, -1, inf, "
                         "-inf, 2, -2, 'nuc')")
    return matrix_norm_spectral(x, ord, axis, keepdims=True)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms (ord None/2, inf, -inf, 0, 1, any p) over one axis, matrix norms (None/'fro',
    1, -1, inf, -inf) over two, as numpy.linalg.norm: axis None means the whole vector or
    matrix (x 1-D or 2-D; with ord None, the 2-norm of the flattened x)."""
    x = _inexact(x)
    nd = np.ndim(x)
    if axis is None and ord is None:
        out = snp.sqrt(snp.sum(_abs_squared(x), keepdims=keepdims))
    else:
        if axis is None:
            if nd not in (1, 2):
                raise ValueError("norm: an order needs a 1-D or 2-D x, or an axis")
            axis = tuple(range(nd))
        if isinstance(axis, (int, np.integer)):
            axis = (int(axis),)
        axis = tuple(int(a) % nd for a in axis)
        if len(axis) == 1:
            out = vector_norm(x, axis=axis[0], keepdims=keepdims, ord=ord)
        elif len(axis) == 2:
            if axis[0] == axis[1]:
                raise ValueError("norm: duplicate axes")
            out = _matrix_norm(x, ord, axis, keepdims)
        else:
            raise ValueError(f"norm: axis must name one or two axes, got {axis}")
    return out



# --- the Array API spellings jax.numpy.linalg adds (matrix_norm, vector_norm, ...) --------------
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The p-norm of x over `axis` (an int, a tuple, or None: every axis), as a vector's:
    ord 2 (None), inf, -inf, 0, 1 or any p."""
    x = _inexact(x)
    if ord is None or ord == 2:
        out = snp.sqrt(snp.sum(_abs_squared(x), axis=axis, keepdims=keepdims))
    elif ord == np.inf:
        out = snp.max(snp.abs(x), axis=axis, keepdims=keepdims)
    elif ord == -np.inf:
        out = snp.min(snp.abs(x), axis=axis, keepdims=keepdims)
    elif ord == 0:
        out = snp.sum(x != 0, axis=axis, keepdims=keepdims).astype(snp.abs(x).dtype)
    elif ord == 1:
        out = snp.sum(snp.abs(x), axis=axis, keepdims=keepdims)
    elif isinstance(ord, str):
        raise ValueError(f"vector_norm: invalid order {ord!r} for a vector norm")
    else:
        out = snp.sum(snp.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
    return out


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """norm over the last two axes (a stack of matrices)."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along `axis`."""
    if np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3:
        raise ValueError(f"cross: both arrays must be (arrays of) 3-vectors along axis {axis}, "
                         f"got shapes {np.shape(x1)} and {np.shape(x2)}")
    return snp.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
    """The outer product of two 1-D arrays."""
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError(f"outer: the arrays must be one-dimensional, got {np.ndim(x1)}-D and "
                         f"{np.ndim(x2)}-D")
    return snp.outer(x1, x2)


def trace(x, /, *, offset=0, dtype=None):
    """The sums of the diagonals of a stack of matrices (last two axes)."""
    return snp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    """The diagonals of a stack of matrices (last two axes)."""
    return snp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matmul(x1, x2, /):
    return snp.matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return snp.tensordot(x1, x2, axes=axes)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along `axis` (x1 conjugated)."""
    return snp.vecdot(x1, x2, axis=axis)


def matrix_transpose(x, /):
    return snp.matrix_transpose(x)


def cond(x, p=None):
    """The condition number of a stack of matrices in the norm `p` (None and 2: the ratio of
    extreme singular values; -2 its inverse; else norm(x) * norm(inv(x))). inf where x is
    singular (the nan of inv's norm), nan where x holds a nan."""
    x = _inexact(x)
    if np.ndim(x) < 2:
        raise ValueError(f"cond: x must be at least 2-dimensional, got shape {np.shape(x)}")
    if p is None or p == 2:
        s = svdvals(x)
        r = s[..., 0] / s[..., -1]
    elif p == -2:
        s = svdvals(x)
        r = s[..., -1] / s[..., 0]
    else:
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    return snp.where(snp.isnan(r) & ~snp.any(snp.isnan(x), axis=(-2, -1)), snp.inf, r)


def tensorinv(a, ind=2):
    """The inverse of a tensor read as a matrix: the first `ind` axes against the rest."""
    rows, cols = np.shape(a)[:ind], np.shape(a)[ind:]
    if ind <= 0 or int(np.prod(rows)) != int(np.prod(cols)):
        raise ValueError(f"tensorinv: the product of the first ind={ind} axes must equal that of "
                         f"the others, got shape {np.shape(a)}")
    flat = snp.reshape(a, (int(np.prod(rows)), int(np.prod(cols))))
    return snp.reshape(inv(flat), tuple(cols) + tuple(rows))


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) == b."""
    if axes is not None:
        a = snp.moveaxis(a, axes, (np.ndim(a) - 1,) * len(axes))
    out_shape = tuple(np.shape(a)[np.ndim(b):])
    if tuple(np.shape(a)[:np.ndim(b)]) != tuple(np.shape(b)) or \
            int(np.prod(np.shape(b))) != int(np.prod(out_shape)):
        raise ValueError(f"tensorsolve: a's leading shape must be b's {np.shape(b)} and hold as "
                         f"many elements as the rest, got a of shape {np.shape(a)}")
    flat = snp.reshape(a, (int(np.prod(np.shape(b))), int(np.prod(out_shape))))
    return snp.reshape(solve(flat, snp.ravel(b)), out_shape)

from secant.numpy.linalg_spectral import *  # noqa: F401,F403,E402
from secant.numpy.linalg_spectral import matrix_norm_spectral, svd, svdvals  # noqa: E402
