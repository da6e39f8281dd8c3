"""A custom_jvp rule's outputs are checked in every composition that uses the rule, not only
the first: vmap of grad of a function whose rule returns an integer tangent used to return
zeros silently (the batched derivative dropped the unread check)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


@secant.custom_jvp
def bad(x):
    return snp.sin(x)


@bad.defjvp
def bad_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return snp.sin(x), (x_dot * 2).astype(snp.int32)


@secant.custom_jvp
def good(x):
    return snp.sin(x)


@good.defjvp
def good_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return snp.sin(x), 2.0 * snp.cos(x) * x_dot     # twice the true derivative: the rule's


X = np.linspace(0.1, 0.9, 3).astype(np.float32)


@pytest.mark.parametrize("compose", [
    lambda f: secant.grad(lambda x: snp.sum(f(x))),
    lambda f: secant.vmap(secant.grad(f)),
    lambda f: secant.jit(secant.vmap(secant.grad(f))),
    lambda f: secant.jacrev(f),
    lambda f: secant.jacfwd(f),
], ids=["grad", "vmap_grad", "jit_vmap_grad", "jacrev", "jacfwd"])
def test_an_integer_tangent_is_refused_in_every_composition(compose):
    with pytest.raises(secant.SecantTypeError, match="custom_jvp rule bad_jvp"):
        compose(bad)(X)


def test_a_valid_rule_is_used_in_the_same_compositions():
    want = 2.0 * np.cos(X)
    np.testing.assert_allclose(secant.vmap(secant.grad(good))(X), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(good)))(X), want, rtol=1e-6)
    np.testing.assert_allclose(np.diag(secant.jacrev(good)(X)), want, rtol=1e-6)
