"""secant.scipy.cluster.vq.vq, as jax.scipy.cluster.vq's: each observation's nearest code
(Euclidean) and its distance. Written with secant.numpy's ops: grad (of the distances), jit
and vmap read it like user code."""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, where

__secant_by_source__ = True      # the transforms read this module like user code

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
    """(codes, distances): for each row of obs (M x N, or M points of one feature), the index
    of the nearest row of code_book (K x N) and the Euclidean distance to it."""
    obs, code_book = snp.asarray(obs), snp.asarray(code_book)
    dtype = snp.result_type(obs, code_book, float)
    obs, code_book = obs.astype(dtype), code_book.astype(dtype)
    if np.ndim(obs) != np.ndim(code_book):
        raise SecantValueError(f"Observation and code_book should have the same rank{where()}")
    if np.ndim(obs) == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if np.ndim(obs) != 2:
        raise SecantValueError(f"ndim different than 1 or 2 are not supported{where()}")
    dist = snp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = snp.argmin(dist, axis=-1)
    return code, snp.take_along_axis(dist, code[:, None], axis=1)[:, 0]
