"""Issue 15, operators of the user's own classes that are not (yet) pytrees: a dataclass and a
plain class with __add__/__mul__/__rmul__/__sub__/__neg__/__matmul__, used as `Vec(x) + Vec(y)
* 2.0` or `Vec(x) @ Vec(y)` inside a transformed function. Python calls the class's methods, so
the transforms must (transformer/operators.py), also the first time the class is met (a plain
class is read as a pytree only once an object of it has been seen: before, `Vec(x) + Vec(y)`
was read as an array sum, "dtype object is not supported"). Each test uses classes of its own,
so that its transform is the first to meet them. Checked against float64 central differences,
a Python loop and eager. Also: a class holding a descriptor is refused naming the descriptor."""
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, jvp, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp, to_snp

X = np.array([0.3, -1.2, 0.8])
Y = np.array([1.1, 0.4, -0.7])
XS = np.array([[0.3, -1.2, 0.8], [0.5, 0.1, -0.2], [1.5, -0.4, 0.9], [-0.6, 0.7, 0.2]])


def vector_class(dataclass):
    """A fresh 3-vector class with operators: a dataclass, or a plain class."""
    class Vec:
        def __init__(self, v):
            self.v = v

        def __add__(self, o):
            return Vec(self.v + o.v)

        def __sub__(self, o):
            return Vec(self.v - o.v)

        def __mul__(self, s):
            return Vec(self.v * s)

        def __rmul__(self, s):
            return Vec(s * self.v)

        def __neg__(self):
            return Vec(-self.v)

        def __matmul__(self, o):
            return jnp.sum(self.v * o.v)

    if dataclass:
        del Vec.__init__
        Vec.__annotations__ = {"v": object}
        Vec = dataclasses.dataclass(Vec)
    return Vec


VecA, VecB, VecC, VecD = (vector_class(True) for _ in range(4))
PlainA, PlainB, PlainC, PlainD = (vector_class(False) for _ in range(4))


def combo_a(x, y):
    w = VecA(x) + VecA(y) * 2.0
    return jnp.sum(jnp.sin(w.v) * w.v) + VecA(x) @ VecA(x)


def combo_b(x, y):
    d = VecB(x) - 0.5 * VecB(y)
    return -d @ VecB(jnp.exp(x)) + (-VecB(x)).v[0] ** 3


def combo_c(x, y):
    w = VecC(x) + VecC(y) * 2.0
    return jnp.tanh(w.v) * (VecC(x) @ VecC(y))


def combo_d(x, y):
    w = VecD(x * x) + VecD(y) * 2.0
    return jnp.sum(jnp.cos(w.v))


def plain_a(x, y):
    w = PlainA(x) + PlainA(y) * 2.0
    return jnp.sum(jnp.sin(w.v) * w.v) + PlainA(x) @ PlainA(x)


def plain_b(x, y):
    d = PlainB(x) - 0.5 * PlainB(y)
    return -d @ PlainB(jnp.exp(x)) + (-PlainB(x)).v[0] ** 3


def plain_c(x, y):
    w = PlainC(x) + PlainC(y) * 2.0
    return jnp.tanh(w.v) * (PlainC(x) @ PlainC(y))


def plain_d(x, y):
    w = PlainD(x * x) + PlainD(y) * 2.0
    return jnp.sum(jnp.cos(w.v))


def closed_a(x, y):       # combo_a and plain_a without the class
    w = x + 2.0 * y
    return np.sum(np.sin(w) * w) + np.sum(x * x)


@pytest.mark.parametrize("f", [combo_a, plain_a], ids=["dataclass", "plain"])
def test_grad_first_use(x64, f):
    # was: dtype object is not supported (`w = Vec(x) + Vec(y) * 2.0` read as arrays)
    x, y = to_snp((X, Y))
    g = grad(f)(x, y)
    assert_trees_close(g, fd_grad(f, (x, y)), rtol=1e-5, atol=1e-6)
    assert_trees_close(g, fd_grad(closed_a, (X, Y)), rtol=1e-5, atol=1e-6)
    assert_trees_close(grad(f, argnums=1)(x, y), fd_grad(f, (x, y), 1), rtol=1e-5, atol=1e-6)
    check_grad(f, X, Y)


@pytest.mark.parametrize("f", [combo_b, plain_b], ids=["dataclass", "plain"])
def test_grad_of_grad_rmul_neg_matmul(x64, f):
    x, y = to_snp((X, Y))
    h = grad(lambda x, y: jnp.sum(grad(f)(x, y) ** 2))(x, y)
    first = lambda x, y: jnp.sum(grad(f)(x, y) ** 2)  # noqa: E731
    assert_trees_close(h, fd_grad(first, (x, y)), rtol=1e-4, atol=1e-5)
    check_grad(f, X, Y)


@pytest.mark.parametrize("f", [combo_c, plain_c], ids=["dataclass", "plain"])
def test_vmap_and_jit(x64, f):
    got = vmap(f)(*to_snp((XS, XS[::-1])))
    want = np.stack([np.asarray(f(*to_snp((a, b)))) for a, b in zip(XS, XS[::-1])])
    assert_trees_close(got, want)
    check_vmap(f, (XS, XS[::-1]))
    assert_trees_close(jit(f)(*to_snp((X, Y))), f(*to_snp((X, Y))))


@pytest.mark.parametrize("f", [combo_d, plain_d], ids=["dataclass", "plain"])
def test_jvp(x64, f):
    args, tangents = to_snp((X, Y)), to_snp((np.array([1.0, -0.5, 2.0]), np.ones(3)))
    out, t = jvp(f, args, tangents)
    assert_trees_close(out, f(*args))
    assert_trees_close(t, fd_jvp(f, args, tangents), rtol=1e-5, atol=1e-6)
    # forward over reverse: a Hessian-vector product (was: grad read Vec(...) + ... as arrays)
    df = grad(f)
    out, t = jvp(df, args, tangents)
    assert_trees_close(out, fd_grad(f, args), rtol=1e-5, atol=1e-6)
    assert_trees_close(t, fd_jvp(df, args, tangents), rtol=1e-5, atol=1e-6)


# --- a descriptor of the user's: refused, naming it -------------------------------------------
class Positive:
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        return getattr(obj, self.name)

    def __set__(self, obj, value):
        setattr(obj, self.name, jnp.exp(value))


class Scaled:
    sigma = Positive()

    def __init__(self, raw):
        self.sigma = raw


def with_descriptor(x):
    return jnp.sum(Scaled(x).sigma * x)


def test_descriptor_refusal_names_the_descriptor(x64):
    # was: "... used as a value (returned, passed on, stored) ...", not the cause
    for transform, x in ((grad, X), (vmap, XS)):
        with pytest.raises(secant.SecantError, match=r"sigma is a descriptor \(Positive") as e:
            transform(with_descriptor)(jnp.asarray(x))
        assert "used as a value" not in str(e.value).split("\n")[0]


# --- v[i]: the class's __getitem__ ------------------------------------------------------------
@dataclasses.dataclass
class Indexed:
    v: object

    def __getitem__(self, i):
        return self.v[i] * 2.0


@secant.tree_util.register_pytree_node_class
class Registered:
    def __init__(self, v):
        self.v = v

    def __getitem__(self, i):
        return jnp.sin(self.v[i])

    def tree_flatten(self):
        return (self.v,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def indexed(x):
    w = Indexed(x)
    return w[1] ** 2 * Indexed(jnp.exp(x))[2]


def indexed_slice(x):
    return jnp.sum(jnp.cos(Indexed(x)[1:]) * Indexed(x)[::2][0])


def registered_param(p):
    return p[0] * p[2] ** 2


def test_getitem(x64):
    # was: "cannot build the cotangent of a Indexed read field by field"
    x = jnp.asarray(X)
    assert_trees_close(grad(indexed)(x), fd_grad(indexed, (x,)), rtol=1e-5, atol=1e-6)
    first = lambda x: jnp.sum(grad(indexed)(x) ** 2)  # noqa: E731
    assert_trees_close(grad(first)(x), fd_grad(first, (x,)), rtol=1e-4, atol=1e-5)
    check_vmap(indexed, (XS,))
    assert_trees_close(grad(indexed_slice)(x), fd_grad(indexed_slice, (x,)), rtol=1e-5, atol=1e-6)
    check_vmap(indexed_slice, (XS,))
    p = Registered(x)
    g = grad(registered_param)(p)
    assert isinstance(g, Registered)
    assert_trees_close(g.v, fd_grad(lambda v: registered_param(Registered(v)), (x,)),
                       rtol=1e-5, atol=1e-6)
    assert_trees_close(jit(registered_param)(p), registered_param(p))
