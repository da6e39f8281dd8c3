"""Issue 15 (dyn15): a method call with a side effect on a differentiated object
(`m.record(y)`, its result dropped) inside a branch that never runs was refused when the
transform was built; JAX runs only the branches the program takes. Now the branch's test is
read when the derivative runs (a static one, a Python flag or a shape, as written; a traced one
concretely under grad) and the refusal is raised only where that branch runs, naming the
user's line. Gradients against a closed form and float64 central differences, vmap against a
Python loop; the same branch taken raises the same clear SecantError."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(1515)


class Model:
    def __init__(self, w):
        self.w = w
        self.log = []

    def record(self, v):
        self.log.append(v)

    def __call__(self, x):
        return jnp.sum(jnp.tanh(self.w * x))


def with_a_flag(w, x, debug=False):
    m = Model(w)
    y = m(x)
    if debug:
        m.record(y)
    return y


def with_a_traced_test(w, x):
    m = Model(w)
    y = m(x)
    if y > 100.0:
        m.record(y)
    return y * y


def with_a_shape_test(w, x):
    m = Model(w)
    y = m(x)
    if x.shape[0] > 5:
        m.record(y)
    return jnp.sin(y)


def closed_form(f, w, x):
    y = np.sum(np.tanh(w * x))
    dy = x / np.cosh(w * x) ** 2
    return {with_a_flag: dy, with_a_traced_test: 2 * y * dy, with_a_shape_test: np.cos(y) * dy}[f]


@pytest.mark.parametrize("f", [with_a_flag, with_a_traced_test, with_a_shape_test])
def test_side_effect_in_a_branch_not_taken(x64, f):
    w, x = RNG.normal(size=3), RNG.normal(size=3)
    g = check_grad(f, w, x)          # (and jit(grad))
    np.testing.assert_allclose(g, closed_form(f, w, x), rtol=1e-12)
    check_vmap(lambda w_: grad(f)(w_, jnp.asarray(x)), (RNG.normal(size=(4, 3)),), jit=False)


def test_side_effect_in_a_branch_taken_is_refused_when_it_runs():
    w, x = to_snp((RNG.normal(size=3), RNG.normal(size=3)))
    g = grad(with_a_flag)                   # built: the branch is not read as refused
    np.testing.assert_allclose(g(w, x), grad(with_a_flag)(w, x, False))
    with pytest.raises(secant.SecantError, match="side effects") as info:
        g(w, x, True)
    assert "m.record(y)" in str(info.value)
    with pytest.raises(secant.SecantError, match="side effects"):
        grad(with_a_shape_test)(jnp.ones(6), jnp.ones(6))
    # (jit traces the function as written, the effect run on tracers, as JAX's jit does)
    np.testing.assert_allclose(jit(grad(with_a_flag), static_argnums=2)(w, x, True), g(w, x),
                               rtol=1e-6)
