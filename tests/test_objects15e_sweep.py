"""A sweep of the styles users write their objects in (issue 15) x the transforms: dataclass
(registered), NamedTuple, a registered pytree class, a plain class with __init__ built inside
the function, __slots__, classmethod constructors, inheritance with super(), a `__call__`
module, and a container with __iter__/__len__/__getitem__. Each style's function takes an
array x (3,) and returns a scalar; grad and hessian are checked against float64 central
differences, vmap against a Python loop, jit against eager, jvp against the gradient."""
import dataclasses
import typing

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util

from user_programs.checks import rotated

X = np.array([0.3, -1.2, 0.8])
XB = np.stack([X, np.array([1.1, 0.4, -0.7]), np.array([-0.5, 0.9, 1.3])])


# --- the styles ----------------------------------------------------------------------------
@tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    w: object
    b: object

    def apply(self, x):
        return snp.tanh(self.w * x + self.b)


def dataclass_style(x):
    m = Affine(x * 2.0, snp.sin(x))
    return snp.sum(m.apply(x) ** 2)


class Polar(typing.NamedTuple):
    r: object
    t: object

    def xy(self):
        return self.r * snp.cos(self.t), self.r * snp.sin(self.t)


def namedtuple_style(x):
    p = Polar(snp.exp(x[0]), x[1] * x[2])
    a, b = p.xy()
    q = p._replace(r=p.r * 2.0)
    return a * b + q.r * x[2]


@tree_util.register_pytree_node_class
class Scaled:
    def __init__(self, v, k):
        self.v, self.k = v, k

    def tree_flatten(self):
        return (self.v,), self.k

    @classmethod
    def tree_unflatten(cls, k, children):
        return cls(children[0], k)

    def norm(self):
        return snp.sqrt(snp.sum(self.v * self.v) + 1.0) * self.k


def registered_style(x):
    s = Scaled(x * x, 3.0)
    return s.norm() + snp.sum(s.v * x)


class Plain:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def energy(self):
        return snp.sum(self.a * self.b) + snp.sum(self.a ** 2)


def plain_style(x):
    p = Plain(snp.sin(x), x[::-1])
    return p.energy() * x[0]


class Slotted:
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    def width(self):
        return self.hi - self.lo


def slots_style(x):
    s = Slotted(snp.min(x), snp.max(x) * x[1])
    return s.width() ** 2 + s.lo * x[2]


class Gauss:
    def __init__(self, mu, sigma):
        self.mu, self.sigma = mu, sigma

    @classmethod
    def standard(cls, shift):
        return cls(shift, 1.0)

    @classmethod
    def from_moments(cls, m1, m2):
        return cls(m1, snp.sqrt(m2 - m1 * m1))

    def logpdf(self, z):
        return -0.5 * ((z - self.mu) / self.sigma) ** 2 - snp.log(self.sigma)


def classmethod_style(x):
    g = Gauss.from_moments(snp.mean(x), snp.mean(x * x) + 1.0)
    h = Gauss.standard(x[0])
    return snp.sum(g.logpdf(x)) + h.logpdf(x[1])


class Base:
    def __init__(self, scale):
        self.scale = scale

    def f(self, x):
        return self.scale * snp.sin(x)


class Child(Base):
    def __init__(self, scale, shift):
        super().__init__(scale)
        self.shift = shift

    def f(self, x):
        return super().f(x) + self.shift * x


def inheritance_style(x):
    c = Child(x[0], x[1] * 0.5)
    return snp.sum(c.f(x) ** 2)


class Dense:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return snp.tanh(self.w @ x + self.b)


W = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6]])


def call_module_style(x):
    layer = Dense(W * x[0], snp.cos(x[:2]))
    return snp.sum(layer(x) ** 2)


class Bag:
    def __init__(self, *items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __iter__(self):
        return iter(self.items)


def container_style(x):
    bag = Bag(x[0] * x[1], snp.sin(x[2]), x[1] ** 2)
    total = 0.0
    for v in bag:
        total = total + v * v
    return total + bag[1] * len(bag) + bag[-1] * x[0]


STYLES = [dataclass_style, namedtuple_style, registered_style, plain_style, slots_style,
          classmethod_style, inheritance_style, call_module_style, container_style]
TRANSFORMS = ["grad", "vmap", "jit", "jvp", "hessian", "vmap_grad", "jit_grad"]


def _fd(f, x, h=1e-6):
    x = np.asarray(x, np.float64)
    return np.stack([(np.asarray(f(x + h * e), np.float64) - np.asarray(f(x - h * e),
                                                                        np.float64)) / (2 * h)
                     for e in np.eye(x.size)], axis=-1)


# (each style under two of the transforms in turn, every transform on some styles; every pair
# under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("f, how", [pytest.param(f, how, id=f"{f.__name__}-{how}")
                                    for f, how in rotated(STYLES, TRANSFORMS, 2)])
def test_style_under_transform(x64, f, how):
    if how == "grad":
        for x in XB:
            np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), _fd(f, x), rtol=1e-6,
                                       atol=1e-8)
    elif how == "jit_grad":
        g = secant.jit(secant.grad(f))
        for x in XB:
            np.testing.assert_allclose(np.asarray(g(x)), _fd(f, x), rtol=1e-6, atol=1e-8)
    elif how == "vmap":
        np.testing.assert_allclose(np.asarray(secant.vmap(f)(XB)), [float(f(x)) for x in XB],
                                   rtol=1e-12)
    elif how == "jit":
        for x in XB:
            np.testing.assert_allclose(float(secant.jit(f)(x)), float(f(x)), rtol=1e-12)
    elif how == "jvp":
        t = np.array([0.5, -1.0, 2.0])
        for x in XB:
            value, tangent = secant.jvp(f, (x,), (t,))
            np.testing.assert_allclose(float(value), float(f(x)), rtol=1e-12)
            np.testing.assert_allclose(float(tangent), _fd(f, x) @ t, rtol=1e-6, atol=1e-8)
    elif how == "hessian":
        g = secant.grad(f)
        for x in XB[:2]:
            np.testing.assert_allclose(np.asarray(secant.hessian(f)(x)), _fd(g, x, 1e-5),
                                       rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(XB)),
                                   [_fd(f, x) for x in XB], rtol=1e-6, atol=1e-8)


# --- objects passed in (registered classes) under the transforms ----------------------------
def affine_loss(m, x):
    return snp.sum(m.apply(x) ** 2)


def polar_loss(p, x):
    a, b = p.xy()
    return a * b + p.r * snp.sum(x)


PASSED = [(affine_loss, lambda x: Affine(x * 2.0, snp.sin(x)), "w"),
          (polar_loss, lambda x: Polar(snp.exp(x[0]), x[1] * x[2]), "r")]


# (each object under three of the transforms in turn, both under each; all six under thorough)
@pytest.mark.parametrize("loss, build, field, how", [
    pytest.param(*p, how, id=f"{name}-{how}") for (p, name), how in rotated(
        zip(PASSED, ["dataclass", "namedtuple"]),
        ["grad", "vmap", "jit_grad", "vmap_grad", "jvp", "hessian"], 3)])
def test_object_passed_in(x64, loss, build, field, how):
    """grad/jvp/hessian in the object's leaves (checked through x: f(x) = loss(build(x), x)
    with the chain rule done by the transforms over the object) and vmap over a batch of
    objects."""
    def through(x):
        return loss(build(x), x)

    def leaf_fd(x):          # d loss / d field, by central differences of that leaf
        m = build(x)
        v = np.asarray(getattr(m, field), np.float64)

        def at(u):
            return float(loss(m.__class__(**{**_fields(m), field: u}), x))
        if v.ndim == 0:
            return (at(v + 1e-6) - at(v - 1e-6)) / 2e-6
        return _fd(at, v)

    x = X
    if how == "grad":
        got = getattr(secant.grad(loss)(build(x), x), field)
        np.testing.assert_allclose(np.asarray(got), leaf_fd(x), rtol=1e-6, atol=1e-8)
    elif how == "jit_grad":
        got = getattr(secant.jit(secant.grad(loss))(build(x), x), field)
        np.testing.assert_allclose(np.asarray(got), leaf_fd(x), rtol=1e-6, atol=1e-8)
    elif how == "vmap":
        ms = tree_util.tree_map(lambda *v: snp.stack(v), *[build(v) for v in XB])
        np.testing.assert_allclose(np.asarray(secant.vmap(loss)(ms, XB)),
                                   [float(through(v)) for v in XB], rtol=1e-12)
    elif how == "vmap_grad":
        ms = tree_util.tree_map(lambda *v: snp.stack(v), *[build(v) for v in XB])
        got = getattr(secant.vmap(secant.grad(loss))(ms, XB), field)
        np.testing.assert_allclose(np.asarray(got), [leaf_fd(v) for v in XB], rtol=1e-6,
                                   atol=1e-8)
    elif how == "jvp":
        t = np.array([0.5, -1.0, 2.0])
        _, got = secant.jvp(through, (x,), (t,))
        np.testing.assert_allclose(float(got), _fd(through, x) @ t, rtol=1e-6, atol=1e-8)
    else:
        np.testing.assert_allclose(np.asarray(secant.hessian(through)(x)),
                                   _fd(secant.grad(through), x, 1e-5), rtol=1e-5, atol=1e-6)


def _fields(m):
    return m._asdict() if hasattr(m, "_asdict") else dataclasses.asdict(m)


# --- more styles passed in: registered with super(), __slots__, a __call__ module, a container --
class Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return snp.tanh(self.w @ x)


class Residual(Layer):
    def __init__(self, w, gate):
        super().__init__(w)
        self.gate = gate

    def __call__(self, x):
        return x + self.gate * super().__call__(x)


class Pairs:
    __slots__ = ("first", "second")

    def __init__(self, first, second):
        self.first, self.second = first, second

    def __iter__(self):
        return iter((self.first, self.second))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.first, self.second)[i]


tree_util.register_pytree_node(Residual, lambda m: ((m.w, m.gate), None),
                               lambda _, c: Residual(*c))
tree_util.register_pytree_node(Pairs, lambda m: ((m.first, m.second), None),
                               lambda _, c: Pairs(*c))


def residual_loss(m, x):
    return snp.sum(m(x) ** 2)


def pairs_loss(p, x):
    total = 0.0
    for v in p:
        total = total + snp.sum(v * x)
    return total * p[0][0] + len(p) * snp.sum(p[-1] ** 2)


R0 = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [0.3, 0.2, 0.1]])
MORE = [(residual_loss, lambda: Residual(snp.asarray(R0), snp.asarray(0.7)), ["w", "gate"]),
        (pairs_loss, lambda: Pairs(snp.asarray(X * 0.5), snp.asarray(X[::-1])),
         ["first", "second"])]


def _leaf_grads(loss, m, fields, x):
    out = []
    for name in fields:
        v = np.asarray(getattr(m, name), np.float64)

        def at(u, name=name, shape=v.shape):
            leaves = [u.reshape(shape) if n == name else getattr(m, n) for n in fields]
            return float(loss(type(m)(*leaves), x))
        out.append(_fd(at, v.reshape(-1)).reshape(v.shape) if v.ndim else
                   (at(v + 1e-6) - at(v - 1e-6)) / 2e-6)
    return out


# (as test_object_passed_in: three transforms an object in turn, all six under thorough)
@pytest.mark.parametrize("loss, build, fields, how", [
    pytest.param(*p, how, id=f"{name}-{how}") for (p, name), how in rotated(
        zip(MORE, ["super_call_module", "slots_container"]),
        ["grad", "jit_grad", "vmap", "vmap_grad", "jvp", "hessian"], 3)])
def test_more_objects_passed_in(x64, loss, build, fields, how):
    m = build()
    if how in ("grad", "jit_grad"):
        t = secant.grad(loss) if how == "grad" else secant.jit(secant.grad(loss))
        g = t(m, X)
        for name, want in zip(fields, _leaf_grads(loss, m, fields, X)):
            np.testing.assert_allclose(np.asarray(getattr(g, name)), want, rtol=1e-6, atol=1e-8)
    elif how == "vmap":         # a batch of x, one object
        np.testing.assert_allclose(np.asarray(secant.vmap(loss, in_axes=(None, 0))(m, XB)),
                                   [float(loss(m, x)) for x in XB], rtol=1e-12)
    elif how == "vmap_grad":    # per-example gradients in the object
        g = secant.vmap(secant.grad(loss), in_axes=(None, 0))(m, XB)
        for k, x in enumerate(XB):
            for name, want in zip(fields, _leaf_grads(loss, m, fields, x)):
                np.testing.assert_allclose(np.asarray(getattr(g, name))[k], want, rtol=1e-6,
                                           atol=1e-8)
    elif how == "jvp":
        t = np.array([0.5, -1.0, 2.0])
        _, got = secant.jvp(lambda x: loss(m, x), (X,), (t,))
        np.testing.assert_allclose(float(got), _fd(lambda x: loss(m, x), X) @ t, rtol=1e-6,
                                   atol=1e-8)
    else:
        def f(x):
            return loss(m, x)
        np.testing.assert_allclose(np.asarray(secant.hessian(f)(X)), _fd(secant.grad(f), X, 1e-5),
                                   rtol=1e-5, atol=1e-6)


# --- `for v in obj` of the user's container: read item by item, checked against __iter__ ------
class Doubling:
    """__iter__ yields computed items; no __getitem__."""
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        yield self.a * 2.0
        yield snp.sin(self.b)

    def __len__(self):
        return 2


class Swapped(Doubling):
    """__getitem__ gives other items than __iter__ yields (b first)."""
    def __getitem__(self, i):
        return (self.b, self.a)[i]


for _cls in (Doubling, Swapped):
    tree_util.register_pytree_node(_cls, lambda m: ((m.a, m.b), None),
                                   lambda _, c, cls=_cls: cls(*c))


def loop_loss(p, x):
    total = 0.0
    for v in p:
        total = total + snp.sum(v * x)
    return total


@pytest.mark.parametrize("cls", [Doubling, Swapped])
@pytest.mark.parametrize("how", ["grad", "jvp", "vmap_batched_object", "vmap_grad"])
def test_loop_over_a_container_whose_iter_is_not_its_items_is_refused(x64, cls, how):
    """Read as p[0], p[1] the loop would see other values (Swapped: silently wrong before)."""
    m = cls(snp.asarray(X), snp.asarray(X[::-1]))
    ms = cls(snp.asarray(XB[:2]), snp.asarray(XB[1:]))
    run = {"grad": lambda: secant.grad(loop_loss)(m, X),
           "jvp": lambda: secant.jvp(lambda a: loop_loss(cls(a, m.b), X), (m.a,), (X,)),
           "vmap_batched_object": lambda: secant.vmap(loop_loss, in_axes=(0, None))(ms, X),
           "vmap_grad": lambda: secant.vmap(secant.grad(loop_loss), in_axes=(0, None))(ms, X)}
    with pytest.raises(secant.SecantError, match="__iter__"):
        run[how]()


def test_loop_over_a_batch_of_containers(x64):
    """Pairs (__iter__ = its items): vmap over a batch of them, and its per-example grads."""
    ms = Pairs(snp.asarray(XB[:2]), snp.asarray(XB[1:]))
    got = secant.vmap(pairs_loss, in_axes=(0, None))(ms, X)
    want = [float(pairs_loss(Pairs(XB[k], XB[k + 1]), X)) for k in range(2)]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    g = secant.vmap(secant.grad(loop_loss), in_axes=(0, None))(ms, X)
    np.testing.assert_allclose(np.asarray(g.first), np.stack([X, X]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g.second), np.stack([X, X]), rtol=1e-12)
