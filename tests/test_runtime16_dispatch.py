"""Issue 15, values whose kind only the running program knows (runtime16): a callee picked by
data called with *params or **kw of differentiated values, spelled out when the code runs. Each
checked against float64 finite differences or closed forms, vmap against a Python loop, jit
against eager."""
import collections
import dataclasses
import functools
from typing import Any

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, tree_util

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp


def mul(a, b, scale=1.0):
    return a * jnp.sin(b) * scale


def power(a, b):
    return a ** 3 * b


REG = {"mul": mul, "power": power, "add": lambda a, b: a + b * b}


def by_name(params, name):
    return REG[name](*params)


def by_name_kw(x, kw, name):
    return REG[name](x, **kw)


def by_name_list(x, rest, name):
    return REG[name](x, *rest)


P = (1.5, 0.3)


@pytest.mark.parametrize("name", sorted(REG))
def test_a_callee_by_name_with_starred_params(x64, name):
    """Regression: `REG[name](*params)`, params differentiated, was refused ("params holds
    differentiated values, unpacked into a call of a function whose parameters secant does not
    know"): the call is spelled out for params' length when it runs."""
    f = lambda p: by_name(p, name)
    g = check_grad(f, P)
    assert type(g) is tuple
    h = hessian(f)(to_snp(P))
    for i in range(2):
        want = fd_grad(lambda p: grad(f)(p)[i], (to_snp(P),))
        assert_trees_close(h[i], want, rtol=1e-5, atol=1e-7)
        assert_trees_close(grad(lambda p: grad(f)(p)[i])(to_snp(P)), want, rtol=1e-5, atol=1e-7)
    batch = (np.array([0.5, 1.0, 2.0]), np.array([0.3, -0.4, 0.1]))
    check_vmap(lambda a, b: f((a, b)), batch)
    check_vmap(lambda a, b: grad(f)((a, b))[1], batch)
    t = jvp(f, (to_snp(P),), ((jnp.asarray(1.0), jnp.asarray(0.5)),))[1]
    g = grad(f)(to_snp(P))
    np.testing.assert_allclose(t, g[0] + 0.5 * g[1], rtol=1e-12)


def test_starred_list_and_double_starred_dict(x64):
    x, kw = 2.0, {"b": 0.3, "scale": 2.0}
    f_kw = lambda x, kw: by_name_kw(x, kw, "mul")
    g = check_grad(f_kw, x, kw, argnum=1)
    assert set(g) == {"b", "scale"}
    np.testing.assert_allclose([g["b"], g["scale"]], [2 * np.cos(0.3) * 2, 2 * np.sin(0.3)])
    check_grad(f_kw, x, kw, argnum=0)
    g = check_grad(lambda x, rest: by_name_list(x, rest, "mul"), x, [0.3, 2.0], argnum=1)
    assert type(g) is list
    check_vmap(lambda b: f_kw(x, {"b": b, "scale": 2.0}), (np.array([0.1, 0.2]),))
    # d/db of d/dx of x sin(b) scale: cos(b) scale
    np.testing.assert_allclose(grad(grad(f_kw), argnums=1)(jnp.asarray(x), to_snp(kw))["b"],
                               np.cos(0.3) * 2.0)


def test_jit_of_the_starred_call(x64):
    f = jit(grad(by_name), static_argnums=1)
    assert_trees_close(f(to_snp(P), "power"), grad(by_name)(to_snp(P), "power"), rtol=1e-12)
    np.testing.assert_allclose(f(to_snp(P), "power"), (3 * 1.5 ** 2 * 0.3, 1.5 ** 3))


# --- a registered pytree class picked from a registry by name, built from *params ------------
FAMILIES = {}


@dataclasses.dataclass
class Normal:
    loc: Any
    log_scale: Any

    def log_prob(self, x):
        z = (x - self.loc) / jnp.exp(self.log_scale)
        return -0.5 * z ** 2 - self.log_scale - 0.5 * jnp.log(2 * jnp.pi)

    def nll(self, xs):
        return -jnp.sum(self.log_prob(xs))


@dataclasses.dataclass
class Laplace:
    loc: Any
    log_scale: Any

    def nll(self, xs):
        return jnp.sum(jnp.abs(xs - self.loc) / jnp.exp(self.log_scale) + self.log_scale
                       + jnp.log(2.0))


for _cls in (Normal, Laplace):
    tree_util.register_dataclass(_cls, data_fields=["loc", "log_scale"], meta_fields=[])
    FAMILIES[_cls.__name__.lower()] = _cls


def family_nll(params, xs, family):
    dist = FAMILIES[family](*params)
    return dist.nll(xs)


XS = np.random.default_rng(16).normal(size=7)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_registered_class_known_only_at_run_time(x64, family):
    """Regression: `FAMILIES[family](*params)`: a class known only when the code runs (its
    constructor called through a dispatcher, read as user code's call of the class is), with
    *params of differentiated values; hessian adds the cotangents of two bound methods."""
    from scipy import stats
    f = functools.partial(family_nll, family=family)
    p = (0.3, -0.2)
    want = -(stats.norm if family == "normal" else stats.laplace).logpdf(
        XS, 0.3, np.exp(-0.2)).sum()
    np.testing.assert_allclose(f(to_snp(p), XS), want, rtol=1e-10)
    check_grad(f, p, XS)
    h = hessian(f)(to_snp(p), jnp.asarray(XS))
    for i in range(2):
        assert_trees_close(h[i], fd_grad(lambda q: grad(f)(q, XS)[i], (to_snp(p),)),
                           rtol=1e-5, atol=1e-6)
    check_vmap(lambda a, b: f((a, b), XS), (np.array([0.1, -0.3]), np.array([0.2, 0.5])))
    check_vmap(lambda a, b: grad(f)((a, b), XS)[1], (np.array([0.1, -0.3]),
                                                     np.array([0.2, 0.5])))


# --- a table of bound methods of a differentiated object, read by a key known at run time ------
@dataclasses.dataclass
class Poly:
    a: Any
    b: Any

    def sq(self, x):
        return (self.a * x) ** 2

    def cube(self, x):
        return self.b * x ** 3


tree_util.register_dataclass(Poly, data_fields=["a", "b"], meta_fields=[])


def by_method(x, which):
    m = Poly(jnp.sin(x), x)
    table = {"sq": m.sq, "cube": m.cube}
    return table[which](x)


def test_a_table_of_bound_methods(x64):
    """Regression (a silent wrong gradient): the zero cotangent of the methods not picked from
    `{"sq": m.sq, "cube": m.cube}` was the method itself, bound to the primal object, which
    grad_of_fields then added into m's cotangent as if it were one (d/dx x**4 came out 1.77
    at 0.4, not 0.256); it is the method bound to the object's zeros."""
    x = 0.4
    for which, g1, g2 in (("cube", 4 * x ** 3, 12 * x ** 2),
                          ("sq", 2 * np.sin(x) * np.cos(x) * x ** 2 + 2 * np.sin(x) ** 2 * x,
                           None)):
        f = functools.partial(by_method, which=which)
        np.testing.assert_allclose(grad(f)(jnp.asarray(x)), g1, rtol=1e-12)
        np.testing.assert_allclose(jit(grad(f))(jnp.asarray(x)), g1, rtol=1e-12)
        want2 = g2 if g2 is not None else fd_grad(grad(f), (jnp.asarray(x),))
        np.testing.assert_allclose(grad(grad(f))(jnp.asarray(x)), want2, rtol=1e-6)
        check_vmap(f, (np.array([0.3, -0.7, 1.1]),))
        check_vmap(grad(f), (np.array([0.3, -0.7, 1.1]),))


# --- the neighbourhood, as users write it: each case under grad, jit, grad(grad), vmap and
# vmap(grad), against finite differences, eager and a Python loop -----------------------------
Pair = collections.namedtuple("Pair", "u v")
KINDS = {"poly": Poly}


def getattr_by_parameter(x, name="cube"):
    m = Poly(x, 2.0 * x)
    return getattr(m, name)(x)


def getattr_with_default(x, name="missing"):
    m = Poly(x, 2.0)
    return getattr(m, name, 3.0) * x + getattr(m, "a", 0.0) * x


def methods_by_name_in_a_loop(x):
    m = Poly(x, jnp.cos(x))
    return sum(getattr(m, n)(x) for n in ("sq", "cube"))


def type_of_a_pytree_rebuilt(x):
    m = Poly(x, x * x)
    n = type(m)(m.a * 2.0, m.b + 1.0)
    return n.cube(x) + n.sq(x)


def class_by_name_from_fields(x, kind="poly"):
    fields = {"a": jnp.sin(x), "b": x * 3.0}
    return KINDS[kind](**fields).cube(x)


def namedtuple_replace(x):
    p = Pair(x, 2.0 * x)
    q = p._replace(v=jnp.sin(x))
    return q.u * q.v + p.v


def tree_map_over_trees_with_none(x):
    a = {"p": x, "q": None, "r": 2.0 * x}
    b = {"p": jnp.sin(x), "q": None, "r": x}
    s = tree_util.tree_map(lambda u, v: u * v, a, b)
    return s["p"] + s["r"]


def tree_map_is_leaf_none(x):
    a = {"p": x, "q": None}
    b = {"p": None, "q": x * x}
    s = tree_util.tree_map(lambda u, v: u if v is None else v, a, b,
                           is_leaf=lambda leaf: leaf is None)
    return s["p"] * s["q"]


NEIGHBOURHOOD = [getattr_by_parameter, getattr_with_default, methods_by_name_in_a_loop,
                 type_of_a_pytree_rebuilt, class_by_name_from_fields, namedtuple_replace,
                 tree_map_over_trees_with_none, tree_map_is_leaf_none]


def _fd(f, x, eps=1e-6):
    return (float(f(jnp.asarray(x + eps))) - float(f(jnp.asarray(x - eps)))) / (2 * eps)


@pytest.mark.parametrize("f", NEIGHBOURHOOD, ids=lambda f: f.__name__)
def test_values_known_at_run_time_under_every_transform(x64, f):
    """Regressions: getattr(m, name)(x) with name a parameter, type(m)(...), KINDS[k](**f)(x)
    were refused ("computed from differentiated values", "no derivative of type(m)"), as were
    getattr(m, name, default) and a namedtuple's _replace."""
    x = jnp.asarray(0.4)
    np.testing.assert_allclose(grad(f)(x), _fd(f, 0.4), rtol=1e-6)
    np.testing.assert_allclose(jit(f)(x), f(x), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(f))(x), grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(grad(grad(f))(x), _fd(grad(f), 0.4), rtol=1e-5)
    np.testing.assert_allclose(grad(grad(grad(f)))(x), _fd(grad(grad(f)), 0.4), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(jvp(grad(f), (x,), (jnp.asarray(1.0),))[1],
                               grad(grad(f))(x), rtol=1e-12)
    xs = np.array([0.3, -0.7, 1.1])
    check_vmap(f, (xs,))
    check_vmap(grad(f), (xs,))


def cubic_model(x):
    m = Poly(x, 2.0 * x)
    return m.cube(x) + m.sq(x)      # 2 x**4 + x**4


def test_third_order_through_a_model_object(x64):
    """Regressions: `m.cube(x)` of a registered pytree object built in place was refused ("the
    method .cube() of a container ... is not supported"), and grad(grad(grad(f))) through a
    call of an object built from differentiated values failed ('secant does not know the
    derivative of dispatch'): the second order passes `dispatch(fn, ...)` to the derivative's
    dispatcher, read now as the constant it is (the call passes fn too)."""
    xs = np.array([0.3, -0.7, 1.1])
    check_vmap(cubic_model, (xs,))
    check_vmap(grad(cubic_model), (xs,))
    np.testing.assert_allclose(jit(grad(cubic_model))(jnp.asarray(0.4)), 12 * 0.4 ** 3)
    for x in (0.4, -1.3):
        np.testing.assert_allclose(grad(grad(grad(cubic_model)))(jnp.asarray(x)), 72 * x,
                                   rtol=1e-10)
        np.testing.assert_allclose(grad(grad(grad(grad(cubic_model))))(jnp.asarray(x)), 72.0,
                                   rtol=1e-10)


Graph = collections.namedtuple("Graph", "nodes edges n_node")
GRAPH = Graph(jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.5, -0.5]), np.array([3]))


def update_graph(w, graph):
    nodes = jnp.tanh(graph.nodes * w[0])
    edges = graph.edges * w[1]
    return graph._replace(nodes=nodes, edges=edges)


@dataclasses.dataclass
class Versioned:
    level: Any

    def _replace(self, level):             # its own _replace, not a namedtuple's
        return Versioned(level * 2.0)


tree_util.register_dataclass(Versioned, data_fields=["level"], meta_fields=[])


def test_replace_of_a_namedtuple_not_differentiated(x64):
    """jraph's graph._replace(nodes=..., edges=...) of a graph closed over or passed, not
    differentiated, with differentiated fields (the dispatcher read collections' own _replace
    and refused); a class's own _replace method is called as written."""
    f = lambda w: jnp.sum(update_graph(w, GRAPH).nodes ** 2) + jnp.sum(update_graph(w, GRAPH).edges)
    g = check_grad(f, np.array([0.7, 1.3]))
    np.testing.assert_allclose(g[1], 0.0, atol=1e-12)       # sum(edges * w1) = 0
    check_vmap(lambda w0: f(jnp.stack([w0, 1.0])), (np.array([0.1, 0.5, 0.9]),))
    np.testing.assert_allclose(grad(versioned)(jnp.asarray(0.4)), 2 * np.cos(0.4), rtol=1e-12)
    np.testing.assert_allclose(versioned(jnp.asarray(0.4)), 2 * np.sin(0.4), rtol=1e-12)


def versioned(x):
    v = Versioned(x * x)
    return v._replace(level=jnp.sin(x)).level
