"""Issue 15 (SILENT WRONG VALUE): `m.p` of a pytree object m whose class is known only when the
code runs (m a parameter), p a property, a cached_property or a class-level constant rather than
a field. Read as a field, jvp ran the getter on the tangent object (and read a class constant as
a tangent); the read now goes through attribute_reader (transformer/properties.py), which picks
the getter, the constant or the field when it runs. Checked under jvp, grad, vmap, hessian,
jit(grad), vmap(grad) against float64 finite differences, a Python loop and eager; a field of
the same name on another class is still read as a field."""
import dataclasses
import functools
from collections import namedtuple

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, tree_util, vmap
from secant.backends.errors import SecantTypeError

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp

RNG = np.random.default_rng(1515)


@tree_util.register_pytree_node_class
class Softplus:
    """A positive weight computed from a raw parameter by a property."""

    def __init__(self, raw, bias):
        self.raw, self.bias = raw, bias

    @property
    def weight(self):
        return jnp.logaddexp(self.raw, 0.0)

    def tree_flatten(self):
        return (self.raw, self.bias), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_pytree_node_class
class Cached:
    """A cached_property computed from the fields."""

    def __init__(self, raw):
        self.raw = raw

    @functools.cached_property
    def scale(self):
        return jnp.exp(self.raw)

    def tree_flatten(self):
        return (self.raw,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Point(namedtuple("Point", "x y")):
    """A namedtuple subclass with a property."""

    @property
    def radius(self):
        return jnp.sqrt(self.x ** 2 + self.y ** 2)


@tree_util.register_pytree_node_class
class Constant:
    """A class-level constant (not a field) read as m.factor."""
    factor = 3.0

    def __init__(self, w):
        self.w = w

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_dataclass
@dataclasses.dataclass
class Plain:
    """A dataclass whose FIELD is named like Softplus's property, with a default (a class
    attribute of that name too): read as a field."""
    raw: object
    weight: object = 1.0


def softplus_model(shape=(3, 2)):
    return Softplus(jnp.asarray(RNG.normal(size=shape)), jnp.asarray(RNG.normal(size=shape[-1])))


def weighted(m):
    return jnp.sum(jnp.sin(m.weight) * m.bias)


def test_property_jvp_grad_hessian(x64):
    m, t = softplus_model(), softplus_model()
    _, got = jvp(weighted, (m,), (t,))
    assert_trees_close(got, fd_jvp(weighted, (m,), (t,)), rtol=1e-6)
    g = check_grad(weighted, m)
    assert isinstance(g, Softplus)
    h = hessian(lambda r: weighted(Softplus(r, m.bias)))(m.raw)
    want = np.stack([np.asarray(fd_grad(lambda r: grad(lambda q: weighted(Softplus(q, m.bias)))(r)
                                        .ravel()[i], (m.raw,))).ravel() for i in range(6)])
    assert_trees_close(h.reshape(6, 6), want, rtol=1e-5, atol=1e-7)


def test_property_vmap_and_vmap_grad(x64):
    m = Softplus(jnp.asarray(RNG.normal(size=(5, 3, 2))), jnp.asarray(RNG.normal(size=(5, 2))))
    check_vmap(weighted, (m,))
    per_model = vmap(grad(weighted))(m)
    for i in range(5):
        mi = tree_util.tree_map(lambda v: v[i], m)
        assert_trees_close(tree_util.tree_map(lambda v: v[i], per_model), grad(weighted)(mi),
                           rtol=1e-10)
    assert_trees_close(jit(vmap(grad(weighted)))(m), per_model, rtol=1e-10)


def test_cached_property(x64):
    m = Cached(jnp.asarray(RNG.normal(size=4)))
    t = Cached(jnp.asarray(RNG.normal(size=4)))
    f = lambda m: jnp.sum(m.scale ** 2)
    _, got = jvp(f, (m,), (t,))
    assert_trees_close(got, fd_jvp(f, (m,), (t,)), rtol=1e-6)
    check_grad(f, m)
    check_vmap(f, (Cached(jnp.asarray(RNG.normal(size=(3, 4)))),))


def test_namedtuple_subclass_property(x64):
    p = Point(jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3)))
    t = Point(jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3)))
    f = lambda p: jnp.sum(p.radius * p.x)
    _, got = jvp(f, (p,), (t,))
    assert_trees_close(got, fd_jvp(f, (p,), (t,)), rtol=1e-6)
    g = check_grad(f, p)
    assert isinstance(g, Point)
    check_vmap(f, (Point(RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))),))


def test_class_constant_is_not_a_tangent(x64):
    m, t = Constant(jnp.asarray(RNG.normal(size=3))), Constant(jnp.asarray(RNG.normal(size=3)))
    f = lambda m: jnp.sum(m.factor * m.w ** 2)
    _, got = jvp(f, (m,), (t,))
    assert_trees_close(got, fd_jvp(f, (m,), (t,)), rtol=1e-6)
    check_grad(f, m)
    check_vmap(f, (Constant(RNG.normal(size=(4, 3))),))


def test_field_named_like_another_class_property(x64):
    """Plain.weight is a field (Softplus.weight a property): read as the field, its tangent the
    tangent's field."""
    m = Plain(jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3)))
    t = Plain(jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3)))
    f = lambda m: jnp.sum(m.weight * jnp.tanh(m.raw))
    _, got = jvp(f, (m,), (t,))
    assert_trees_close(got, fd_jvp(f, (m,), (t,)), rtol=1e-6)
    g = check_grad(f, m)
    assert isinstance(g, Plain)
    check_vmap(f, (Plain(RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))),))


def test_jit_matches_eager(x64):
    m = softplus_model()
    assert_trees_close(jit(weighted)(m), weighted(m), rtol=1e-12)


def test_class_registered_after_the_transform(x64):
    """f reads m.late_gamma as a field when transformed (no pytree class computes it); a class
    registered later with a property of that name makes the derivative be generated again."""
    Holder = namedtuple("Holder", "late_gamma")
    f = lambda m: jnp.sum(jnp.sin(m.late_gamma))
    h, ht = Holder(jnp.asarray(RNG.normal(size=3))), Holder(jnp.asarray(RNG.normal(size=3)))
    assert_trees_close(jvp(f, (h,), (ht,))[1], fd_jvp(f, (h,), (ht,)), rtol=1e-6)

    @tree_util.register_pytree_node_class
    class Late:
        def __init__(self, raw):
            self.raw = raw

        @property
        def late_gamma(self):
            return jnp.exp(self.raw)

        def tree_flatten(self):
            return (self.raw,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    m, t = Late(jnp.asarray(RNG.normal(size=3))), Late(jnp.asarray(RNG.normal(size=3)))
    assert_trees_close(jvp(f, (m,), (t,))[1], fd_jvp(f, (m,), (t,)), rtol=1e-6)
    check_grad(f, m)
    assert_trees_close(jvp(f, (h,), (ht,))[1], fd_jvp(f, (h,), (ht,)), rtol=1e-6)


def squares_by_name(m):
    total = 0.0
    for k in ("weight", "bias"):        # names known only when the loop runs
        total = total + jnp.sum(getattr(m, k) ** 2)
    return total


def test_getattr_of_a_property_by_a_name_known_when_it_runs(x64):
    m, t = softplus_model(), softplus_model()
    _, got = jvp(squares_by_name, (m,), (t,))
    assert_trees_close(got, fd_jvp(squares_by_name, (m,), (t,)), rtol=1e-6)
    check_grad(squares_by_name, m)
    check_vmap(squares_by_name, (Softplus(RNG.normal(size=(4, 3, 2)), RNG.normal(size=(4, 2))),))


@tree_util.register_pytree_node_class
class Sized:
    """A property named like an array's static attribute."""

    def __init__(self, w):
        self.w = w

    @property
    def size(self):
        return self.w.shape[0]

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_property_named_size_under_vmap_is_refused(x64):
    """m.size of a batched pytree object was read as an array's per-example size (np.shape of
    the object is (): 1, a wrong value); it is refused clearly. grad and jvp read the getter."""
    f = lambda m: jnp.sum(m.w) * m.size
    m = Sized(jnp.asarray(RNG.normal(size=3)))
    check_grad(f, m)
    with pytest.raises(TypeError, match="size of a batched Sized"):
        vmap(f)(Sized(jnp.asarray(RNG.normal(size=(4, 3)))))


# --- vmap: m.shape / m.ndim computed by a pytree class -----------------------------------------
@pytest.fixture
def grid_class():
    """A pytree class whose shape and ndim are properties (not its array's): registered for the
    test only, so the rest of the process keeps the plain `x.shape[1:]` form."""
    class Grid:
        def __init__(self, w, rows, cols):
            self.w, self.rows, self.cols = w, rows, cols

        @property
        def shape(self):
            return (self.rows, self.cols)

        @property
        def ndim(self):
            return 2

    tree_util.register_pytree_node(Grid, lambda g: ((g.w,), (g.rows, g.cols)),
                                   lambda aux, ch: Grid(ch[0], *aux))
    yield Grid
    tree_util._node_types.discard(Grid)


def test_batched_object_shape_property_is_refused_not_misread(x64, grid_class):
    """vmap would read m.shape[1:] / m.ndim - 1 off the batched object: (3,) and 1 where the
    getter gives (2, 3) and 2 -- a wrong value; it is refused with the user's line."""
    def energy(g):
        return jnp.sum(g.w) * g.shape[0] + g.ndim
    g = grid_class(jnp.asarray(RNG.normal(size=(4, 6))), 2, 3)
    with pytest.raises(SecantTypeError, match=r"\.shape|\.ndim"):
        vmap(energy)(g)


def test_array_shape_queries_unchanged_while_such_a_class_exists(x64, grid_class):
    def f(x):
        return x * x.shape[0] + x.ndim + x.shape[-1]
    xs = RNG.normal(size=(3, 4))
    want = [f(np.asarray(x)) for x in xs]
    np.testing.assert_allclose(vmap(f)(jnp.asarray(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(vmap(vmap(f))(jnp.asarray(xs[:, None, :] * np.ones((1, 2, 1)))),
                               [[f(np.asarray(x))] * 2 for x in xs], rtol=1e-12)


def test_vmap_made_before_the_class_is_made_again(x64):
    """A batched function generated while no class computed `shape` is generated again once one
    does (properties.PlainReads), so it refuses the new class's objects."""
    def energy(g):
        return jnp.sum(g.w) * g.shape[0]
    fn = vmap(energy)

    class Early:            # shape: a plain attribute, the array's
        def __init__(self, w):
            self.w, self.shape = w, np.shape(w)

    class Late:             # shape: a property, not the array's
        def __init__(self, w):
            self.w = w

        @property
        def shape(self):
            return (7,)

    tree_util.register_pytree_node(Early, lambda g: ((g.w,), None), lambda aux, ch: Early(*ch))
    try:
        np.testing.assert_allclose(fn(Early(jnp.ones((2, 3, 5)))), [45.0, 45.0])
        tree_util.register_pytree_node(Late, lambda g: ((g.w,), None), lambda aux, ch: Late(*ch))
        with pytest.raises(SecantTypeError, match=r"\.shape"):
            fn(Late(jnp.ones((2, 3, 5))))
    finally:
        tree_util._node_types.discard(Early)
        tree_util._node_types.discard(Late)
