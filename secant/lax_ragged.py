"""jax.lax.ragged_dot / ragged_dot_general (the grouped matmul of mixture-of-experts layers),
read by the transforms as source (`__secant_by_source__`): grad in lhs and rhs, jvp and vmap
follow from the ops. Rows of lhs are split into consecutive groups of group_sizes rows; each
group is multiplied by its own rhs matrix; rows past sum(group_sizes) give zeros (as JAX's).
Computed densely (a one-hot of each row's group), so the cost is m * g * k * n."""
import dataclasses
import enum

import secant.numpy as snp
from secant.backends.errors import SecantValueError, UnsupportedError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["ragged_dot", "ragged_dot_general", "RaggedDotDimensionNumbers",
           "DotAlgorithmPreset", "RandomAlgorithm", "AccuracyMode", "Tolerance"]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """The ragged, group and dot dimensions of ragged_dot_general (jax.lax's)."""
    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


# ragged_dot's: lhs (m, k) ragged in m, rhs (g, k, n) grouped in g
_BASIC = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """(m, n): row i of lhs (m, k) times rhs[j] (k, n) for the group j holding row i (groups
    of group_sizes (g,) consecutive rows); rows past the groups give zeros."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision,
                              preferred_element_type, group_offset, out_sharding)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """ragged_dot with its dimension numbers: secant has ragged_dot's own (lhs (m, k) ragged
    in m, rhs (g, k, n)); other layouts are refused."""
    if ragged_dot_dimension_numbers != _BASIC:
        raise UnsupportedError(f"ragged_dot_general: secant has ragged_dot's dimension numbers "
                               f"only ({_BASIC}), got {ragged_dot_dimension_numbers}{where()}")
    if group_offset is not None:
        raise UnsupportedError(f"ragged_dot: group_offset is not supported{where()}")
    lhs, rhs = snp.asarray(lhs), snp.asarray(rhs)
    group_sizes = snp.asarray(group_sizes)
    if snp.ndim(lhs) != 2 or snp.ndim(rhs) != 3 or snp.ndim(group_sizes) != 1:
        raise SecantValueError(f"ragged_dot: expected lhs (m, k), rhs (g, k, n) and group_sizes "
                               f"(g,), got {snp.shape(lhs)}, {snp.shape(rhs)} and "
                               f"{snp.shape(group_sizes)}{where()}")
    m, k = snp.shape(lhs)
    g, k_rhs, n = snp.shape(rhs)
    if k != k_rhs or snp.shape(group_sizes)[0] != g:
        raise SecantValueError(f"ragged_dot: lhs {snp.shape(lhs)}, rhs {snp.shape(rhs)} and "
                               f"group_sizes {snp.shape(group_sizes)} do not match: k and g "
                               f"must agree{where()}")
    if not snp.issubdtype(group_sizes.dtype, snp.integer):
        raise SecantValueError(f"ragged_dot: group_sizes must be integers, got "
                               f"{group_sizes.dtype}{where()}")
    ends = snp.cumsum(group_sizes)
    group_of_row = snp.searchsorted(ends, snp.arange(m), side="right")
    one_hot = (group_of_row[:, None] == snp.arange(g)[None, :])
    dtype = snp.result_type(lhs.dtype, rhs.dtype)
    out = snp.einsum("mk,gkn,mg->mn", lhs.astype(dtype), rhs.astype(dtype),
                     one_hot.astype(dtype))
    if preferred_element_type is not None:
        out = out.astype(preferred_element_type)
    return out


class DotAlgorithmPreset(enum.Enum):
    """jax.lax.DotAlgorithmPreset: accepted as a `precision=` and ignored, as every precision
    (XLA's CPU dots compute in the operands' type)."""
    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __str__(self):
        return self.name


class RandomAlgorithm(enum.IntEnum):
    """jax.lax.RandomAlgorithm (rng_bit_generator's algorithms)."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


class AccuracyMode(enum.Enum):
    """jax.lax.AccuracyMode (of the transcendental functions' accuracy= argument)."""
    HIGHEST = 1
    DEFAULT = 2


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """jax.lax.Tolerance: an accuracy= request (atol, rtol, ulps)."""
    atol: float = 0.0
    rtol: float = 0.0
    ulps: int = 0


