"""The two factorisations multivariate_normal and gaussian_kde need, written with secant.numpy's
ops over the static matrix size, so the transforms differentiate and batch them like the rest.
(secant.scipy.linalg's cholesky and solve_triangular, with their own rules, can replace them.)"""
import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def cholesky_lower(a):
    """L with L @ L.T == a, for a symmetric positive definite (n, n) matrix (column by column)."""
    n = a.shape[-1]
    rows = snp.arange(n)
    cols = []
    for j in range(n):
        c = a[:, j]
        for k in range(j):
            c = c - cols[k] * cols[k][j]
        col = snp.where(rows >= j, c / snp.sqrt(c[j]), 0.0)
        cols.append(col)
    return snp.stack(cols, axis=1)


def solve_lower(lower, r):
    """z with lower @ z[..., :, None] == r[..., :, None] (forward substitution over the last
    axis of r, which may carry leading batch axes)."""
    n = lower.shape[-1]
    zs = []
    for i in range(n):
        acc = r[..., i]
        for k in range(i):
            acc = acc - lower[i, k] * zs[k]
        zs.append(acc / lower[i, i])
    return snp.stack(zs, axis=-1)


def log_diagonal_sum(lower):
    """sum(log(diag(lower))): half the log-determinant of lower @ lower.T."""
    total = 0.0
    for i in range(lower.shape[-1]):
        total = total + snp.log(lower[i, i])
    return total
