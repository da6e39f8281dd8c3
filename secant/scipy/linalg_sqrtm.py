"""scipy.linalg.sqrtm (re-exported by secant.scipy.linalg), read by the transforms as source.

The principal square root through the eigendecomposition, X = V diag(sqrt(w)) V^-1 (complex,
as jax.scipy.linalg.sqrtm's result), for diagonalizable matrices. Its derivative is the
Frechet derivative (secant.custom_jvp): dX solves X dX + dX X = dA, which in X's eigenbasis is
an elementwise division, dX = V ((V^-1 dA V) / (s_i + s_j)) V^-1 with s = sqrt(w). JAX's
sqrtm (through a Schur form) has no derivative; this one does, where s_i + s_j != 0.
"""
import secant
import secant.numpy as snp
from secant.numpy.linalg import _inexact

__secant_by_source__ = True      # transforms read this module like user code


def _complex(a):
    return a.astype(snp.result_type(a.dtype, snp.complex64))


def _eigen_sqrt(a):
    w, v = snp.linalg.eig(a)
    s = snp.sqrt(w)
    return s, v, snp.linalg.inv(v)


@secant.custom_jvp
def _sqrtm(a):
    s, v, v_inv = _eigen_sqrt(a)
    return (v * s[..., None, :]) @ v_inv


@_sqrtm.defjvp
def _sqrtm_jvp(primals, tangents):
    a, = primals
    a_dot, = tangents
    s, v, v_inv = _eigen_sqrt(a)
    x = (v * s[..., None, :]) @ v_inv
    rotated = v_inv @ _complex(a_dot) @ v
    x_dot = v @ (rotated / (s[..., :, None] + s[..., None, :])) @ v_inv
    return x, x_dot


def sqrtm(A, blocksize=1):
    """The principal matrix square root of each square matrix (stacked over leading axes): a
    complex array X with X @ X == A, as jax.scipy.linalg.sqrtm's."""
    if blocksize > 1:
        raise NotImplementedError("sqrtm: the blocked version (blocksize > 1) is not "
                                  "implemented, as in JAX")
    return _sqrtm(_complex(_inexact(A)))
