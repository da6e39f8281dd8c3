"""`u, w = p` (tuple unpacking) of the user's container objects (issue 15, star15): a plain
class with __iter__/__len__/__getitem__, a registered pytree, a NamedTuple subclass with
methods; as a parameter, built in the function, passed to a helper, in a lambda, in a loop
body; under grad, jvp, vjp, vmap, vmap(vmap), jit, jacfwd(grad), hessian and vmap(grad).
Values against float64 central differences, Python loops over the examples and eager runs;
square (3, 3) examples beside a batch of 4, so a wrong axis gives another number. An object
whose __iter__ is not its __getitem__, and a container of another length, are refused as
Python refuses the unpacking (never read item by item as other values)."""
import typing

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util
from central_differences import check_first_order, grad_fd, hessian_fd

RNG = np.random.default_rng(1515015)
N, B = 3, 4


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        return iter((self.a, self.b))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.a, self.b)[i]


class Registered(Pair):
    pass


tree_util.register_pytree_node(Registered, lambda m: ((m.a, m.b), None),
                               lambda _, c: Registered(*c))


class Fields(typing.NamedTuple):
    u: typing.Any
    v: typing.Any

    def total(self):
        return snp.sum(self.u * self.u) + snp.sum(self.v)


class Swapped(Pair):
    def __iter__(self):         # unpacking gives (b, a); p[0] is a
        return iter((self.b, self.a))


tree_util.register_pytree_node(Swapped, lambda m: ((m.a, m.b), None), lambda _, c: Swapped(*c))


def unpack_param(p, x):
    u, w = p
    return snp.sum(snp.tanh(u @ x) * w) + snp.sum(u * u * w[0])


def plain_built(x, w):
    p = Pair(x * 2.0, w)
    u, v = p
    return snp.sum(u @ v) + snp.sum(snp.sin(u) * v.T)


def registered_in_a_helper(x, w):
    return unpack_param(Registered(x, w @ x), w)


def namedtuple_with_methods(x, w):
    p = Fields(snp.cos(x), w * x)
    u, v = p
    return p.total() * snp.sum(u * v) + snp.sum(u @ v)


def in_a_lambda(x, w):
    fn = lambda q: unpack_param(q, w) * 2.0
    return fn(Pair(x, x @ w))


def in_a_loop(x, w):
    t = 0.0
    for k in range(2):
        u, v = Registered(x * (k + 1), w)
        t = t + snp.sum(snp.tanh(u @ v))
    for p in [Pair(x, w), Fields(w, x)]:
        a, b = p
        t = t + snp.sum(a * b.T)
    return t


PROGRAMS = [plain_built, registered_in_a_helper, namedtuple_with_methods, in_a_lambda,
            in_a_loop]
CLASSES = [Pair, Registered, Fields]

W = RNG.normal(size=(N, N)) * 0.5
X = RNG.normal(size=(2, B, N, N)) * 0.5
WB = RNG.normal(size=(B, N, N)) * 0.5
ids = dict(ids=lambda f: f.__name__)


def _leaves(p):
    return [np.asarray(v) for v in (p if isinstance(p, tuple) else (p.a, p.b))]


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_grad_jvp_vjp(x64, f):
    check_first_order(f, X[0, 0], W, RNG.normal(size=(N, N)))


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_vmap_and_vmap_of_vmap(x64, f):
    want = np.stack([f(x, W) for x in X[0]])
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(X[0], W), want, rtol=1e-9)
    np.testing.assert_allclose(secant.vmap(f)(X[0], WB),
                               np.stack([f(X[0, i], WB[i]) for i in range(B)]), rtol=1e-9)
    vv = secant.vmap(secant.vmap(f, in_axes=(0, None)), in_axes=(0, None))
    np.testing.assert_allclose(vv(X, W), np.stack([[f(x, W) for x in xs] for xs in X]),
                               rtol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_vmap_of_grad_and_jit(x64, f):
    want = np.stack([grad_fd(f, x, W) for x in X[0]])
    np.testing.assert_allclose(secant.vmap(secant.grad(f), in_axes=(0, None))(X[0], W), want,
                               rtol=1e-6, atol=1e-6)
    x = X[1, 2]
    np.testing.assert_allclose(secant.jit(f)(x, W), f(x, W), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x, W), secant.grad(f)(x, W),
                               rtol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
@pytest.mark.parametrize("second", ["jacfwd_grad", "hessian"])
def test_second_order(x64, f, second):
    x = X[1, 3]
    h = (secant.jacfwd(secant.grad(f)) if second == "jacfwd_grad" else secant.hessian(f))(x, W)
    np.testing.assert_allclose(h, hessian_fd(f, x, W), rtol=1e-4, atol=1e-4)


# --- the container as the transformed function's parameter ----------------------------------
@pytest.mark.parametrize("cls", CLASSES, **ids)
def test_parameter_grad(x64, cls):
    a, b = X[0, 0], X[0, 1]
    g = secant.grad(unpack_param)(cls(a, b), W)
    assert type(g) is cls
    want_a = grad_fd(lambda t: unpack_param(cls(t, b), W), a)
    want_b = grad_fd(lambda t: unpack_param(cls(a, t), W), b)
    for got, want in zip(_leaves(g), [want_a, want_b]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    va, vb = RNG.normal(size=a.shape), RNG.normal(size=b.shape)
    primal, tangent = secant.jvp(unpack_param, (cls(a, b), W), (cls(va, vb), snp.zeros_like(W)))
    np.testing.assert_allclose(primal, unpack_param(cls(a, b), W), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(want_a * va) + np.sum(want_b * vb), rtol=1e-6)


@pytest.mark.parametrize("cls", CLASSES, **ids)
def test_parameter_vmap_and_vmap_of_grad(x64, cls):
    ps = cls(X[0], X[1])
    want = [unpack_param(cls(X[0, i], X[1, i]), W) for i in range(B)]
    np.testing.assert_allclose(secant.vmap(unpack_param, in_axes=(0, None))(ps, W), want,
                               rtol=1e-9)
    g = secant.vmap(secant.grad(unpack_param), in_axes=(0, None))(ps, W)
    for k, got in enumerate(_leaves(g)):
        want = [grad_fd(lambda t: unpack_param(cls(*[t if j == k else X[j, i] for j in (0, 1)]),
                                               W), X[k, i]) for i in range(B)]
        np.testing.assert_allclose(got, np.stack(want), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls", CLASSES, **ids)
def test_parameter_hessian(x64, cls):
    b = X[0, 1]
    f = lambda a: unpack_param(cls(a, b), W)
    np.testing.assert_allclose(secant.hessian(f)(X[0, 0]), hessian_fd(f, X[0, 0]), rtol=1e-4,
                               atol=1e-4)


# --- refused as Python refuses ---------------------------------------------------------------
@pytest.mark.parametrize("how", ["grad", "jvp", "vmap", "vmap_grad"])
def test_iter_other_than_getitem_is_refused(how):
    """Swapped's unpacking gives (b, a) while p[0] is a: refused at the user's line, never
    read item by item."""
    p = Swapped(X[0, 0], X[0, 1])
    ps = Swapped(X[0], X[1])
    run = {"grad": lambda: secant.grad(unpack_param)(p, W),
           "jvp": lambda: secant.jvp(unpack_param, (p, W), (p, W)),
           "vmap": lambda: secant.vmap(unpack_param, in_axes=(0, None))(ps, W),
           "vmap_grad": lambda: secant.vmap(secant.grad(unpack_param), in_axes=(0, None))(ps, W)}
    with pytest.raises(secant.SecantError, match=r"`a, b = ` a Swapped \(its __iter__\)"):
        run[how]()


@pytest.mark.parametrize("how", ["eager", "grad", "jvp", "vmap", "jit"])
@pytest.mark.parametrize("items", [3, 1])
def test_other_length_is_refused(how, items):
    """As Python: `u, w = p` of a tuple of 3 (or 1) items is a ValueError, not its first two."""
    p = tuple(X[0, :items])
    run = {"eager": lambda: unpack_param(p, W),
           "grad": lambda: secant.grad(unpack_param)(p, W),
           "jvp": lambda: secant.jvp(unpack_param, (p, W), (p, W)),
           "vmap": lambda: secant.vmap(unpack_param, in_axes=(None, 0))(p, WB),
           "jit": lambda: secant.jit(unpack_param)(p, W)}
    with pytest.raises(ValueError, match="values to unpack"):
        run[how]()
