"""Issue 15 (dyn15): a method called on an object a library call rebuilt
(`tree_unflatten(treedef, leaves).energy()`, in place or held in a name) goes through the run-time
dispatcher (dynamic_call). Its second derivatives: jacfwd(grad), hessian (jacfwd(jacrev)),
jacrev(grad) and jvp(grad), each against a closed form and float64 central differences of the
gradient. The tangent of `obj.energy` is the method bound to the tangent object, and the
cotangent the method bound to the cotangent object: the batched helpers read the batch size of
such a method from its object, and broadcast it by its object (they once read it as a function
with no arrays: "the batch size ... is unknown", and a Hessian's "cannot reshape (1,) into
(3,)")."""
import typing

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, tree_util

from others15_check import check_grad, fd_grad, to_snp

RNG = np.random.default_rng(1515)


def spring_energy(s):
    return jnp.sum(s.k * (s.x - s.x0) ** 2)


class Spring(typing.NamedTuple):
    k: object
    x0: object
    x: object

    def energy(self):
        return spring_energy(self)


def wobble_energy(s, scale):
    return jnp.sum(s.k * s.x ** 4 / 4 + jnp.sin(s.x)) * scale


class Wobble(typing.NamedTuple):
    k: object
    x: object

    def energy(self, scale=1.0):
        return wobble_energy(self, scale)


SPRING = tree_util.tree_structure(Spring(1.0, 1.0, 1.0))
WOBBLE = tree_util.tree_structure(Wobble(1.0, 1.0))


def spring_in_place(x):
    return tree_util.tree_unflatten(SPRING, [2.0, 0.5, x]).energy()


def spring_held(x):
    s = tree_util.tree_unflatten(SPRING, [2.0, 0.5, x])
    return s.energy()


def wobble_in_place(x):
    return tree_util.tree_unflatten(WOBBLE, [1.5, x]).energy(2.0)


def wobble_held(x):
    w = tree_util.tree_unflatten(WOBBLE, [1.5, x])
    return w.energy(scale=2.0)


def spring_hessian(x):
    return 4.0 * np.eye(len(x))


def wobble_hessian(x):
    return np.diag(2.0 * (3 * 1.5 * x ** 2 - np.sin(x)))


CASES = [(spring_in_place, spring_hessian), (spring_held, spring_hessian),
         (wobble_in_place, wobble_hessian), (wobble_held, wobble_hessian)]


def fd_hessian(f, x):
    g = grad(f)
    return np.stack([fd_grad(lambda v: g(v)[i], (x,)) for i in range(len(x))])


@pytest.mark.parametrize("f, want", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_second_derivatives_of_a_method_of_a_rebuilt_object(x64, f, want):
    x = RNG.normal(size=3)
    check_grad(f, x)
    xs = to_snp(x)
    h = want(x)
    np.testing.assert_allclose(fd_hessian(f, xs), h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jacfwd(grad(f))(xs), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacrev(grad(f))(xs), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hessian(f)(xs), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jit(hessian(f))(xs), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jit(jacfwd(grad(f)))(xs), h, rtol=1e-12, atol=1e-12)
    t = RNG.normal(size=3)
    g, g_dot = jvp(grad(f), (xs,), (to_snp(t),))
    np.testing.assert_allclose(g, grad(f)(xs), rtol=1e-12)
    np.testing.assert_allclose(g_dot, h @ t, rtol=1e-12, atol=1e-12)


# --- a registered class rebuilt by tree_unflatten, its method taking an argument ---------------------
def quad_value(q, x):
    return jnp.sum(q.a * jnp.sin(x) ** 2) * q.gain


@tree_util.register_pytree_node_class
class Quad:
    def __init__(self, a, gain):
        self.a, self.gain = a, gain

    def tree_flatten(self):
        return (self.a,), self.gain

    @classmethod
    def tree_unflatten(cls, gain, children):
        return cls(children[0], gain)

    def value(self, x):
        return quad_value(self, x)


QUAD = tree_util.tree_structure(Quad(jnp.ones(3), 2.0))
A = np.array([0.5, 1.0, 2.0])


def quad_in_place(x):
    return tree_util.tree_unflatten(QUAD, [jnp.asarray(A)]).value(x)


def quad_held(x):
    q = tree_util.tree_unflatten(QUAD, [jnp.asarray(A)])
    return q.value(x)


def quad_of_a(a, x):
    return tree_util.tree_unflatten(QUAD, [a]).value(x)


@pytest.mark.parametrize("f", [quad_in_place, quad_held], ids=lambda f: f.__name__)
def test_second_derivatives_of_a_registered_class_method(x64, f):
    x = RNG.normal(size=3)
    g = check_grad(f, x)
    np.testing.assert_allclose(g, 2.0 * A * np.sin(2 * x), rtol=1e-12)
    h = np.diag(4.0 * A * np.cos(2 * x))
    xs = to_snp(x)
    np.testing.assert_allclose(fd_hessian(f, xs), h, rtol=1e-5, atol=1e-6)
    for t in (hessian, lambda f_: jacfwd(grad(f_)), lambda f_: jacrev(grad(f_))):
        np.testing.assert_allclose(t(f)(xs), h, rtol=1e-12, atol=1e-12)
    a = RNG.normal(size=3)
    g = check_grad(quad_of_a, a, x)
    np.testing.assert_allclose(g, 2.0 * np.sin(x) ** 2, rtol=1e-12)
    np.testing.assert_allclose(hessian(quad_of_a)(*to_snp((a, x))), np.zeros((3, 3)), atol=1e-14)
