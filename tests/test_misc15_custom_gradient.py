"""vmap of a secant.custom_gradient function whose body branches on a traced value (no single
trace can follow its vjp function): vmap and vmap of grad run it once per example
(secant/custom_gradient.per_example), against a Python loop of the eager function and of its
grad (the user's rule); jit of it refuses the branch as jax.jit does; transforming the
per-example form again (jacrev, grad of vmap) is a clear error."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

XS = np.array([-1.1, 0.3, 0.8, 2.0])


@secant.custom_gradient
def branchy(x):
    if x > 0:
        return x * x, lambda g: 3.0 * g * x      # a rule of its own (not 2x)
    return snp.sin(x), lambda g: -g


@secant.custom_gradient
def branchy_pair(x, y):
    if snp.sum(x) > 0:
        return snp.sum(x * y), lambda g: (g * y, 2.0 * g * x)
    return snp.sum(x), lambda g: (g * snp.ones_like(x), g * snp.zeros_like(y))


def _rule(x):
    return 3.0 * x if x > 0 else -1.0


def test_vmap_and_vmap_of_grad_run_per_example(x64):
    np.testing.assert_allclose(np.asarray(secant.vmap(branchy)(XS)),
                               [float(branchy(x)) for x in XS], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(branchy))(XS)),
                               [_rule(x) for x in XS], rtol=1e-12)
    assert [float(secant.grad(branchy)(x)) for x in XS] == [_rule(x) for x in XS]


def test_vmap_with_in_axes_and_an_unbatched_argument(x64):
    xs = np.array([[0.5, -0.2, 1.0], [-1.0, -2.0, 0.5]])
    y = np.array([2.0, 3.0, -1.0])
    got = secant.vmap(secant.grad(branchy_pair, argnums=(0, 1)), in_axes=(0, None))(xs, y)
    for k, x in enumerate(xs):
        gx, gy = secant.grad(branchy_pair, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(np.asarray(got[0][k]), np.asarray(gx), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(got[1][k]), np.asarray(gy), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1][0]), 2.0 * xs[0], rtol=1e-12)   # the rule's
    np.testing.assert_allclose(np.asarray(secant.vmap(branchy_pair, in_axes=(1, None))(
        xs.T, y)), [float(branchy_pair(x, y)) for x in xs], rtol=1e-12)


def test_jit_refuses_the_branch_as_jax_does():
    with pytest.raises(secant.SecantError, match="traced value"):
        secant.jit(secant.vmap(branchy))(XS)


def test_transforming_the_per_example_form_again_says_why():
    for run in (lambda: secant.vmap(secant.jacrev(branchy))(XS),
                lambda: secant.grad(lambda x: snp.sum(secant.vmap(branchy)(x)))(XS)):
        with pytest.raises(secant.SecantError, match="could not trace branchy"):
            run()
