"""Objects of the user's pytree classes with operators (issue 15, after tests/test_ops15b_
operators.py): passed in as parameters and differentiated twice, a function that calls grad of
them differentiated (was refused "dtype object is not supported": the inner derivative was the
one written for arrays, whose `p + q` rule is an array sum's, differentiated again). Checked
against float64 central differences and closed forms."""
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, jvp, tree_util, vmap

from others15_check import assert_trees_close, fd_grad, fd_jvp

X = np.array([0.3, -1.2, 0.8])
Y = np.array([1.1, 0.4, -0.7])


@tree_util.register_dataclass
@dataclasses.dataclass
class Pair:
    a: object

    def __add__(self, o):
        return Pair(self.a * o.a)

    def __mul__(self, s):
        return Pair(jnp.sin(self.a) * s)


class Box:
    def __init__(self, v):
        self.v = v

    def __add__(self, o):
        return Box(self.v + o.v)

    def __mul__(self, s):
        return Box(self.v * s)


tree_util.register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, ch: Box(*ch))


def pair_loss(p, q):
    return jnp.sum((p + q * 3.0).a ** 2)


def box_loss(p, q):
    return jnp.sum((p + q * 3.0).v ** 2)


def pair_twice(p, q):
    return jnp.sum(grad(pair_loss)(p, q).a ** 2)


def box_twice(p, q):
    g = grad(box_loss)(p, q)
    return jnp.sum(g.v * p.v)


def pair_twice_np(pa, qa):         # pair_twice's closed form: (p + q * 3).a = pa * 3 sin(qa)
    s = 3.0 * np.sin(qa)
    return np.sum((2.0 * pa * s * s) ** 2)


def box_twice_np(pa, qa):          # box_twice's: 2 (pa + 3 qa) . pa
    return np.sum(2.0 * (pa + 3.0 * qa) * pa)


CASES = [(pair_twice, pair_twice_np, Pair), (box_twice, box_twice_np, Box)]


@pytest.mark.parametrize("f, closed, cls", CASES, ids=["register_dataclass", "register_node"])
def test_grad_of_grad_of_objects_passed_in(x64, f, closed, cls):
    p, q = cls(jnp.asarray(X)), cls(jnp.asarray(Y))
    np.testing.assert_allclose(float(f(p, q)), closed(X, Y), rtol=1e-12)
    want = fd_grad(closed, (X, Y))
    for g in (grad(f)(p, q), jit(grad(f))(p, q)):
        assert isinstance(g, cls)
        assert_trees_close(tree_util.tree_leaves(g)[0], want, rtol=1e-5, atol=1e-6)
    g = grad(f, argnums=1)(p, q)
    assert_trees_close(tree_util.tree_leaves(g)[0], fd_grad(closed, (X, Y), 1), rtol=1e-5,
                       atol=1e-6)


@pytest.mark.parametrize("f, closed, cls", CASES, ids=["register_dataclass", "register_node"])
def test_jvp_of_grad_of_objects_passed_in(x64, f, closed, cls):
    p, q = cls(jnp.asarray(X)), cls(jnp.asarray(Y))
    t = np.array([1.0, -0.5, 2.0])
    _, got = jvp(f, (p, q), (cls(jnp.asarray(t)), cls(jnp.zeros(3))))
    np.testing.assert_allclose(float(got), fd_grad(closed, (X, Y)) @ t, rtol=1e-5, atol=1e-6)
    inner = grad(pair_loss if cls is Pair else box_loss)
    _, got = jvp(inner, (p, q), (cls(jnp.asarray(t)), cls(jnp.zeros(3))))
    want = fd_jvp(inner, (p, q), (cls(t), cls(np.zeros(3))))
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_of_grad_of_objects(x64):
    p, q = Pair(jnp.asarray(np.stack([X, Y]))), Pair(jnp.asarray(np.stack([Y, X])))
    got = vmap(grad(pair_twice))(p, q).a
    want = [fd_grad(pair_twice_np, (a, b)) for a, b in zip([X, Y], [Y, X])]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_hessian_of_grad_of_objects(x64):
    got = secant.hessian(pair_twice)(Pair(jnp.asarray(X)), Pair(jnp.asarray(Y))).a.a
    # central differences of the closed-form gradient 8 pa s^4 (s = 3 sin(qa)), itself checked
    # against central differences of pair_twice_np
    s4 = (3.0 * np.sin(Y)) ** 4
    np.testing.assert_allclose(8.0 * X * s4, fd_grad(pair_twice_np, (X, Y)), rtol=1e-6)
    want = np.stack([(8.0 * (X + 1e-4 * e) * s4 - 8.0 * (X - 1e-4 * e) * s4) / 2e-4
                     for e in np.eye(3)], -1)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)
    p, q = Box(jnp.asarray(X)), Box(jnp.asarray(Y))      # box_twice: 2 (pa + 3 qa) . pa
    np.testing.assert_allclose(np.asarray(secant.hessian(box_twice)(p, q).v.v), 4.0 * np.eye(3),
                               rtol=1e-12, atol=1e-12)


# --- an object carried by a loop jit rolls into a lax loop ----------------------------------------
class Step:                         # a plain class (not registered): read as its fields
    def __init__(self, d):
        self.d = d

    def __add__(self, o):
        return Step(self.d * o.d)

    def __mul__(self, s):
        return Step(self.d + s)


def carried(x, y):
    s = Step(x)
    for i in range(3):
        s = s * jnp.cos(s.d) + Step(y * 0.5 + i)
    return jnp.sum(s.d)


def carried_np(x, y):
    d = x
    for i in range(3):
        d = (d + np.cos(d)) * (y * 0.5 + i)
    return np.sum(d)


@pytest.mark.parametrize("how", ["grad", "jit_grad", "jit", "vmap", "jit_vmap", "vmap_grad",
                                 "jvp", "grad_of_grad"])
def test_object_carried_by_a_staged_loop(x64, how):
    x, y = jnp.asarray(X), jnp.asarray(Y)
    xs, ys = np.stack([X, Y, X * 0.5]), np.stack([Y, X, Y * 2.0])
    if how in ("grad", "jit_grad"):
        g = grad(carried, argnums=(0, 1))
        got = (jit(g) if how == "jit_grad" else g)(x, y)
        assert_trees_close(got, (fd_grad(carried_np, (X, Y)), fd_grad(carried_np, (X, Y), 1)),
                           rtol=1e-5, atol=1e-6)
    elif how == "jit":
        np.testing.assert_allclose(float(jit(carried)(x, y)), carried_np(X, Y), rtol=1e-12)
    elif how in ("vmap", "jit_vmap"):
        v = vmap(carried)
        got = (jit(v) if how == "jit_vmap" else v)(jnp.asarray(xs), jnp.asarray(ys))
        np.testing.assert_allclose(np.asarray(got), [carried_np(a, b) for a, b in zip(xs, ys)],
                                   rtol=1e-12)
    elif how == "vmap_grad":
        got = vmap(grad(carried))(jnp.asarray(xs), jnp.asarray(ys))
        want = [fd_grad(carried_np, (a, b)) for a, b in zip(xs, ys)]
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    elif how == "jvp":
        t = (jnp.asarray([1.0, -0.5, 2.0]), jnp.ones(3))
        _, got = jvp(carried, (x, y), t)
        np.testing.assert_allclose(float(got), float(fd_jvp(carried_np, (X, Y), (
            np.asarray(t[0]), np.ones(3)))), rtol=1e-5, atol=1e-6)
    else:
        first = lambda a, b: jnp.sum(grad(carried)(a, b) ** 2)  # noqa: E731
        first_np = lambda a, b: np.sum(fd_grad(carried_np, (a, b)) ** 2)  # noqa: E731
        np.testing.assert_allclose(np.asarray(grad(first)(x, y)), _fd2(first_np, X, Y),
                                   rtol=1e-4, atol=1e-5)


def _fd2(f, x, y, h=1e-4):
    """Central differences of f(x, y) in x (f itself central differences: a wider step)."""
    return np.array([(f(x + h * e, y) - f(x - h * e, y)) / (2 * h) for e in np.eye(len(x))])
