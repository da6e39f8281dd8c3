"""Sources the transforms read (a by-source module, secant/numpy/composite.py): lax.sort of
several operands (and lax.sort_key_val) is the permutation that sorts the keys (a stable
argsort; lexsort for num_keys > 1) taken along the dimension from every operand, so each
operand's derivative is its cotangent moved back through that permutation, as JAX's; one
operand is the sort op itself."""
import secant.numpy as snp
from secant import lax
from secant.numpy.composite import source_for

__secant_by_source__ = True      # transforms read this module like user code


@source_for(lax.sort)
def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    if not isinstance(operand, (tuple, list)):
        return snp.sort(operand, axis=dimension, stable=is_stable)
    if num_keys == 1:
        perm = snp.argsort(operand[0], axis=dimension, stable=True)
    else:
        perm = snp.lexsort(tuple(operand[:num_keys])[::-1], axis=dimension)
    return tuple(snp.take_along_axis(x, perm, axis=dimension) for x in operand)


@source_for(lax.sort_key_val)
def sort_key_val(keys, values, dimension=-1, is_stable=True):
    perm = snp.argsort(keys, axis=dimension, stable=True)
    return (snp.take_along_axis(keys, perm, axis=dimension),
            snp.take_along_axis(values, perm, axis=dimension))
