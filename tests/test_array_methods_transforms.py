"""Issue 15: every method of an array that secant's arrays have is transformed as the call
Python makes, the secant.numpy function the method is (`x.repeat(2, axis=0)` is
`snp.repeat(x, 2, axis=0)`): under grad against float64 finite differences, under vmap and
vmap(grad) against a Python loop. A method arrays do not have is a clear error at its line."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad

from others15_check import check_grad, check_vmap

RNG = np.random.default_rng(151515)

METHOD_PROGRAMS = {
    "repeat": lambda x: jnp.sum(x.repeat(2, axis=1) ** 2 * jnp.arange(6.0)),
    "trace": lambda x: x.trace() * jnp.sum(x ** 2),
    "trace_offset": lambda x: x.trace(offset=1) ** 2 + x.trace(1, axis1=1, axis2=0),
    "diagonal": lambda x: jnp.sum(jnp.sin(x.diagonal())),
    "ptp": lambda x: x.ptp(axis=0).sum() + x.ptp(),
    "round": lambda x: jnp.sum(x * x.round(1)) + jnp.sum(x ** 2 * jnp.round(x, 2)),
    "around": lambda x: jnp.sum(x ** 3 * jnp.around(x)),
    "all_any": lambda x: jnp.sum(jnp.where((x > -5).all() & (x > 0).any(), x ** 2, x)),
    "copy": lambda x: jnp.sum(jnp.sin(x.copy()) * x),
    "argpartition": lambda x: jnp.sum(
        jnp.take_along_axis(x, x.argpartition(1, axis=1), axis=1)[:, :2] ** 2),
    "searchsorted": lambda x: jnp.sum(x ** 2) * jnp.sort(x[0]).searchsorted(0.1),
}


@pytest.mark.parametrize("name", sorted(METHOD_PROGRAMS))
def test_array_method_grad_vmap(x64, name):
    f = METHOD_PROGRAMS[name]
    check_grad(f, RNG.normal(size=(3, 3)))
    check_vmap(f, (RNG.normal(size=(2, 3, 3)),))
    check_vmap(grad(f), (RNG.normal(size=(2, 3, 3)),))


def test_round_is_not_rint(x64):
    """snp.round(x, decimals) is its own op (it was read as rint, which takes no decimals)."""
    x = RNG.normal(size=4) * 10
    want = np.round(x, 1) * 3 * x ** 2
    np.testing.assert_allclose(grad(lambda x: jnp.sum(x ** 3 * x.round(1)))(jnp.asarray(x)),
                               want, rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(lambda x: jnp.round(x, 1))(jnp.asarray(x)),
                               np.round(x, 1), rtol=1e-12)


def test_method_arrays_do_not_have(x64):
    def f(x):
        return jnp.sum(x.fill(0.0))
    # (a method no array has may be a function held by a pytree, known when it runs: as in
    # JAX, Python's AttributeError then, with the user's line in its notes)
    with pytest.raises(AttributeError, match="fill") as info:
        grad(f)(jnp.ones(3))
    notes = "\n".join(getattr(info.value, "__notes__", [])) + str(info.value)
    assert "test_array_methods_transforms.py, line" in notes
