"""A call of a function known only at run time (`fn(x)` with fn a parameter) under a vmap of a
derivative of a batched derivative: vmap(vmap(grad)), vmap(hessian), vmap(jacrev(grad)). The
batched derivative's dispatcher (batch_dispatch) returns generated code, which the further
transform reads as any function known at run time (issue 15; odeint's rules call the user's
rhs this way). Against closed forms and a Python loop of the same composition."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def scaled_sin(y, k):
    return snp.sin(y) * k


def apply(fn, x, k):
    return fn(x, k) * x


def f(x, k):
    """k x sin x, through a callee known only when `apply` runs."""
    return apply(scaled_sin, x, k)


def f_vec(v):
    return f(v[0], v[1])


def exact_hessian(x, k):
    return np.array([[k * (2 * np.cos(x) - x * np.sin(x)), np.sin(x) + x * np.cos(x)],
                     [np.sin(x) + x * np.cos(x), 0.0]])


V = np.array([[0.3, 0.5], [0.7, 0.9], [-1.1, 1.3]])


def test_vmap_of_vmap_of_grad(x64):
    xs, ks = V[:, :1] * np.array([1.0, 2.0]), V[:, 1:] * np.array([1.0, -1.0])
    got = secant.vmap(secant.vmap(secant.grad(f)))(xs, ks)
    np.testing.assert_allclose(got, ks * (np.sin(xs) + xs * np.cos(xs)), rtol=1e-12)
    got3 = secant.vmap(secant.vmap(secant.vmap(secant.grad(f))))(xs[None], ks[None])
    np.testing.assert_allclose(got3[0], got, rtol=1e-12)


@pytest.mark.parametrize("how", ["hessian", "jacrev_grad", "jacfwd_grad"])
def test_vmap_of_a_second_derivative(x64, how):
    inner = {"hessian": secant.hessian(f_vec),
             "jacrev_grad": secant.jacrev(secant.grad(f_vec)),
             "jacfwd_grad": secant.jacfwd(secant.grad(f_vec))}[how]
    got = np.asarray(secant.vmap(inner)(V))
    np.testing.assert_allclose(got, [exact_hessian(*v) for v in V], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, [inner(v) for v in V], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(secant.jit(secant.vmap(inner))(V), got, rtol=1e-12, atol=1e-14)
