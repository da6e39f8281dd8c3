"""jax.nn's block-scaled matmul family: scaled_matmul, scaled_dot_general and
get_scaled_dot_general_config, read by the transforms as source (`__secant_by_source__`).

scaled_matmul is the product its documentation defines, computed in float32: each operand
times its scales repeated over their blocks of the contracting axis, then
einsum('BMK,BNK->BMN'). (JAX runs it through cuDNN only, on Blackwell GPUs; secant runs the
definition everywhere, so grad, jvp and vmap follow from the ops.) scaled_dot_general without
configs is lax.dot_general, as JAX's; its quantizing configs (mxfp8, nvfp4) need float8/float4
arithmetic secant does not have, and are refused."""
import dataclasses

import ml_dtypes
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantValueError, UnsupportedError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["scaled_matmul", "scaled_dot_general", "get_scaled_dot_general_config"]


@dataclasses.dataclass
class BlockScaleConfig:
    """A quantization config of scaled_dot_general (as jax.nn's)."""
    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """(B, M, N) = einsum('BMK,BNK->BMN', lhs * lhs_scales, rhs * rhs_scales) in float32,
    each scale (B, M or N, K_s) repeated over K // K_s elements of the contracting axis."""
    lhs, rhs = snp.asarray(lhs), snp.asarray(rhs)
    lhs_scales, rhs_scales = snp.asarray(lhs_scales), snp.asarray(rhs_scales)
    for x in (lhs, rhs, lhs_scales, rhs_scales):
        if snp.ndim(x) != 3:
            raise SecantValueError(f"scaled_matmul requires all inputs to be 3-dimensional "
                                   f"arrays, got shape {snp.shape(x)}{where()}")
    (b, m, k), (b_r, n, k_r) = snp.shape(lhs), snp.shape(rhs)
    (b_ls, m_s, k_ls), (b_rs, n_s, k_rs) = snp.shape(lhs_scales), snp.shape(rhs_scales)
    if k != k_r or b != b_r:
        raise SecantValueError(f"scaled_matmul requires inputs a and b to have matching batch "
                               f"(B) and contract (K) dimensions, but got shapes "
                               f"{snp.shape(lhs)} and {snp.shape(rhs)}{where()}")
    if k_ls != k_rs or b_ls != b_rs:
        raise SecantValueError(f"scaled_matmul requires scales to have matching batch (B) and "
                               f"contract (K) dimensions, but got shapes "
                               f"{snp.shape(lhs_scales)} and {snp.shape(rhs_scales)}{where()}")
    if m_s != m or n_s != n or k % k_ls:
        raise SecantValueError(f"scaled_matmul requires scales to match non-contract "
                               f"dimensions of inputs (and K to be a multiple of the scales' "
                               f"K), but got shapes a: {snp.shape(lhs)}, b: {snp.shape(rhs)}, "
                               f"a_scales: {snp.shape(lhs_scales)}, b_scales: "
                               f"{snp.shape(rhs_scales)}{where()}")
    block = k // k_ls
    a = lhs.astype(np.float32) * snp.repeat(lhs_scales.astype(np.float32), block, axis=-1)
    b_scaled = rhs.astype(np.float32) * snp.repeat(rhs_scales.astype(np.float32), block,
                                                   axis=-1)
    return snp.einsum("bmk,bnk->bmn", a, b_scaled).astype(preferred_element_type)


def get_scaled_dot_general_config(mode, global_scale=None):
    """The quantization config of mode 'mxfp8' or 'nvfp4' (jax.nn's)."""
    if mode == "nvfp4":
        one = snp.ones((1,), dtype=np.float32)
        return BlockScaleConfig("nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn,
                                one if global_scale is None else global_scale, False)
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu,
                                None, False)
    raise SecantValueError(f"Unsupported mode: {mode}{where()}")


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
    """lax.dot_general(lhs, rhs, dimension_numbers) with preferred_element_type when configs
    is None (as JAX's); quantizing configs are refused."""
    if configs is not None:
        raise UnsupportedError("scaled_dot_general: quantizing configs (mxfp8, nvfp4) need "
                               "float8/float4 arithmetic, which secant does not have (JAX runs "
                               "them on cuDNN only); pass configs=None for lax.dot_general"
                               f"{where()}")
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
