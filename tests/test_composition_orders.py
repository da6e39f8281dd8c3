"""Composition at any order (issue 15, section 4): grad to the 4th and 5th order against closed
forms; higher orders through helpers, Python loops and ifs against float64 finite differences;
jacfwd / hessian / jvp / vmap / jit of derivatives; vmap of vjp's pullback; and a walk of every
helper generated code calls, under grad (vjp), jvp and vmap."""
import importlib.util
import math

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax, tree_util

from helper_walk_cases import CASES, NOT_ARRAY_FUNCTIONS, TAKE_FUNCTIONS


def nth_grad(f, n):
    for _ in range(n):
        f = secant.grad(f)
    return f


def fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


# --- every order against closed forms -------------------------------------------------------
def poly(x):
    return x ** 5


def exp2(x):
    return snp.exp(2.0 * x)


def tanh(x):
    return snp.tanh(x)


def log(x):
    return snp.log(x)


def _tanh_derivatives(t, n):
    """d^k tanh / dx^k for k = 0..n as polynomials in t = tanh(x): d/dx p(t) = p'(t)(1 - t^2)."""
    p = np.polynomial.Polynomial([0, 1])
    out = []
    for _ in range(n + 1):
        out.append(p(t))
        p = p.deriv() * np.polynomial.Polynomial([1, 0, -1])
    return out


CLOSED = {
    "x**5": (poly, lambda x, n: math.perm(5, n) * x ** (5 - n)),
    "sin": (snp.sin, lambda x, n: np.sin(x + n * np.pi / 2)),
    "exp(2x)": (exp2, lambda x, n: 2.0 ** n * np.exp(2 * x)),
    "tanh": (tanh, lambda x, n: _tanh_derivatives(np.tanh(x), n)[n]),
    "log": (log, lambda x, n: (-1) ** (n - 1) * math.factorial(n - 1) / x ** n),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_grad_to_the_fifth_order_closed_forms(x64, name, n):
    f, want = CLOSED[name]
    x = 0.7
    close(nth_grad(f, n)(x), want(x, n), rtol=1e-9)


def test_fourth_order_under_jit_matches_eager(x64):
    for name in ("sin", "tanh", "x**5"):
        g4 = nth_grad(CLOSED[name][0], 4)
        close(secant.jit(g4)(0.3), np.asarray(g4(0.3)), rtol=1e-12)


# --- higher orders through chains, helpers, Python loops and ifs (finite differences) ---------
def chain(x):
    return snp.log(1.0 + snp.exp(snp.tanh(x) * snp.sin(x)))


def helper(a, b):
    return snp.tanh(a * b) + a / b


def calls_helper(x):
    return helper(snp.exp(x) * 0.5, x + 2.0)


def python_for(x):
    for i in range(3):
        x = snp.sin(x) * 1.1 + 0.1 * i
    return x


def python_while(x):
    n = 0
    while n < 3:
        x = snp.sin(x) * x + 0.5
        n = n + 1
    return x


def two_carries(x):
    y = x * 0.5
    for i in range(4):
        y = y * snp.cos(x) + 0.1 * i
        x = x + 0.1 * y
    return x * y


def loop_calls_helper(x):
    for _ in range(2):
        x = helper(x, x + 1.0)
    return x


def if_without_else(x):
    y = x * 2.0
    if x > 0:
        y = snp.sin(x) * y
    return y


def if_in_loop(x):
    for i in range(3):
        if i > 0:
            x = x * snp.exp(-x)
    return x


FD_CASES = {"chain": (chain, 5), "helper": (calls_helper, 4), "for": (python_for, 4),
            "while": (python_while, 4), "two carries": (two_carries, 4),
            "loop calls helper": (loop_calls_helper, 4), "if without else": (if_without_else, 4),
            "if in loop": (if_in_loop, 2)}


@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_every_order_against_finite_differences_of_the_one_below(x64, name):
    f, top = FD_CASES[name]
    for x in (0.7, -0.4):
        for n in range(1, top + 1):
            below = nth_grad(f, n - 1)
            want = fd(lambda v: float(below(v)), x)
            close(nth_grad(f, n)(x), want, rtol=1e-6, atol=1e-6)


def test_loop_derivatives_to_the_fourth_order_under_jit_vmap_and_jvp(x64):
    xs = np.array([0.7, -0.4, 0.2])
    for f in (python_for, python_while, two_carries):
        g2, g3 = nth_grad(f, 2), nth_grad(f, 3)
        want2 = np.array([float(g2(x)) for x in xs])
        close(secant.vmap(g2)(xs), want2, rtol=1e-12)
        close(secant.jit(g2)(0.7), want2[0], rtol=1e-12)
        close(secant.jit(nth_grad(f, 4))(0.7), np.asarray(nth_grad(f, 4)(0.7)), rtol=1e-10)
        value, tangent = secant.jvp(g2, (0.7,), (1.0,))
        close(value, want2[0], rtol=1e-12)
        close(tangent, np.asarray(g3(0.7)), rtol=1e-10)
        close(secant.jacfwd(secant.grad(f))(0.7), want2[0], rtol=1e-10)
        close(secant.hessian(f)(0.7), want2[0], rtol=1e-10)


def nested_loops(x):
    for _ in range(2):
        for _ in range(2):
            x = snp.sin(x) + x
    return x


def test_reverse_over_reverse_through_nested_python_loops(x64):
    """(refused until loops15: 'reverse mode through nested Python loops of a derivative')"""
    want = fd(lambda v: float(secant.grad(nested_loops)(v)), 0.7)
    close(secant.grad(secant.grad(nested_loops))(0.7), want, rtol=1e-6)
    close(secant.jacfwd(secant.grad(nested_loops))(0.7), want, rtol=1e-6)
    close(secant.hessian(nested_loops)(0.7), want, rtol=1e-6)


def lax_fori(x):
    return lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * c, x)


def lax_scan(x):
    return lax.scan(lambda c, t: (snp.sin(c) + t, c), x, snp.arange(3.0))[0]


def lax_while(x):
    return lax.while_loop(lambda c: c[1] < 3, lambda c: (snp.sin(c[0]) * c[0], c[1] + 1),
                          (x, 0))[0]


@pytest.mark.parametrize("f", [lax_fori, lax_scan, lax_while])
def test_second_order_through_lax_loops_by_every_composition(x64, f):
    want = fd(lambda v: float(secant.grad(f)(v)), 0.7)
    close(secant.hessian(f)(0.7), want, rtol=1e-6)
    close(secant.jacfwd(secant.jacfwd(f))(0.7), want, rtol=1e-6)
    close(secant.grad(lambda x: secant.jvp(f, (x,), (1.0,))[1])(0.7), want, rtol=1e-6)
    close(secant.grad(secant.grad(f))(0.7), want, rtol=1e-6)   # reverse over reverse
    close(secant.jvp(secant.grad(f), (0.7,), (1.0,))[1], want, rtol=1e-6)


# --- compositions the issue lists --------------------------------------------------------------
def sum_of_where(x):
    return snp.sum(snp.where(x > 0, x ** 3, x))


def sum_abs_cubed(x):
    return snp.sum(snp.abs(x) ** 3)


def test_hessian_of_where_and_abs(x64):
    x = np.array([0.5, -1.5, 2.0])
    close(secant.hessian(sum_of_where)(x), np.diag(np.where(x > 0, 6 * x, 0.0)), rtol=1e-12)
    close(secant.hessian(sum_abs_cubed)(x), np.diag(6 * np.abs(x)), rtol=1e-12)
    close(secant.grad(secant.grad(lambda v: snp.abs(v) ** 3))(-0.5), 3.0, rtol=1e-12)


def squared_helper(y):
    return snp.sin(y) * y


def sum_sq_helper(x):
    return snp.sum(squared_helper(x) ** 2)


def test_jacfwd_of_grad_through_a_helper(x64):
    x = np.array([0.3, 0.5])
    h, h1, h2 = x * np.sin(x), np.sin(x) + x * np.cos(x), 2 * np.cos(x) - x * np.sin(x)
    want = np.diag(2 * (h1 ** 2 + h * h2))
    close(secant.jacfwd(secant.grad(sum_sq_helper))(x), want, rtol=1e-12)
    close(secant.jacrev(secant.grad(sum_sq_helper))(x), want, rtol=1e-12)
    close(secant.jit(secant.jacfwd(secant.grad(sum_sq_helper)))(x), want, rtol=1e-12)


def affine(x):
    return x * 2.0 + 1.0


def test_vmap_of_vmap_with_out_axes_one():
    x = np.arange(6.0).reshape(2, 3)
    got = secant.vmap(secant.vmap(affine), out_axes=1)(x)
    np.testing.assert_allclose(np.asarray(got), (x * 2 + 1).T)
    got = secant.jit(secant.vmap(secant.vmap(affine), out_axes=1))(x)
    np.testing.assert_allclose(np.asarray(got), (x * 2 + 1).T)


def dict_loss(p):
    return p["a"] * p["b"] ** 2 + snp.sin(p["a"])


def dict_grad_sum(p):
    g = secant.grad(dict_loss)(p)
    return g["a"] + g["b"]


def list_loss(p):
    return p[0] * p[1] ** 2


def list_grad_product(p):
    g = secant.grad(list_loss)(p)
    return g[0] * g[1]


def test_grad_of_grad_with_dict_list_and_tuple_parameters(x64):
    a, b = 0.5, 1.5
    got = secant.grad(dict_grad_sum)({"a": a, "b": b})
    assert set(got) == {"a", "b"}
    close(got["a"], -np.sin(a) + 2 * b)
    close(got["b"], 2 * b + 2 * a)
    for container in (list, tuple):
        got = secant.grad(list_grad_product)(container([a, b]))     # d(2ab^3)
        assert type(got) is container and len(got) == 2
        close(got[0], 2 * b ** 3)
        close(got[1], 6 * a * b ** 2)
    h = secant.hessian(dict_loss)({"a": a, "b": b})
    close(h["a"]["a"], -np.sin(a))
    close(h["a"]["b"], 2 * b)
    close(h["b"]["b"], 2 * a)


def stacked_cubes(p):
    return snp.sum(snp.stack(p) ** 3)


def test_grad_of_a_list_passed_whole_to_stack(x64):
    for container in (list, tuple):
        got = secant.grad(stacked_cubes)(container([0.5, 1.5]))
        assert type(got) is container and len(got) == 2
        close(got[0], 0.75)
        close(got[1], 6.75)


def tanh_cubed(x):
    return snp.tanh(x) ** 3


def test_jvp_vmap_and_jit_of_grad_of_grad(x64):
    g2, g3 = nth_grad(tanh_cubed, 2), nth_grad(tanh_cubed, 3)
    xs = np.array([0.1, 0.3, -0.4])
    want2 = np.array([float(g2(x)) for x in xs])
    value, tangent = secant.jvp(g2, (0.3,), (1.0,))
    close(value, want2[1], rtol=1e-12)
    close(tangent, np.asarray(g3(0.3)), rtol=1e-12)
    close(tangent, fd(lambda v: float(g2(v)), 0.3), rtol=1e-6)
    close(secant.vmap(g2)(xs), want2, rtol=1e-12)
    close(secant.jit(secant.vmap(g2))(xs), want2, rtol=1e-12)
    close(secant.vmap(secant.grad(g2))(xs), np.array([float(g3(x)) for x in xs]), rtol=1e-12)


def scaled(x):
    return x * 2.0


def sin_times(x, w):
    return snp.sin(x) * w, x


def test_vmap_of_the_pullback_vjp_returns(x64):
    _, pullback = secant.vjp(scaled, np.ones(3))
    got, = secant.vmap(pullback)(np.eye(3))
    close(got, 2 * np.eye(3))
    x, w = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    out, pullback, aux = secant.vjp(sin_times, x, w, has_aux=True)
    cts = np.arange(9.0).reshape(3, 3)
    gx, gw = secant.vmap(pullback)(cts)
    close(gx, cts * np.cos(x) * w)
    close(gw, cts * np.sin(x))
    gx_jit, gw_jit = secant.jit(secant.vmap(pullback))(cts)
    close(gx_jit, gx, rtol=1e-12)
    close(gw_jit, gw, rtol=1e-12)
    loop = [pullback(c) for c in cts]
    close(gx, np.stack([g[0] for g in loop]), rtol=1e-12)
    # a pullback is a function like any other: its gradient in the cotangent
    g = secant.grad(lambda c: snp.sum(pullback(c)[0] ** 2))(np.ones(3))
    close(g, 2 * (np.cos(x) * w) ** 2)


# --- every helper generated code calls, under grad (vjp), jvp and vmap ------------------------
def _helper_module(tmp_path_factory):
    lines = ["import numpy as np", "import secant.numpy as snp", "from secant import lax",
             "from secant.ad.helpers import by_name as _ad",
             "from secant.batching.helpers import by_name as _batch",
             "globals().update(_ad())", "globals().update(_batch())", "",
             "from helper_walk_cases import AUX",     # (attribute_dot's case)
             "class WalkPair:", "    pass", ""]     # (a plain class: object_of's case)
    for name, (call, params) in CASES.items():
        lines += [f"def w_{name}({', '.join(params)}):", f"    return {call}", ""]
    path = tmp_path_factory.mktemp("helper_walk") / "helper_walk_wrappers.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("helper_walk_wrappers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def wrappers(tmp_path_factory):
    return _helper_module(tmp_path_factory)


def test_the_walk_covers_every_helper():
    from secant.ad import helpers
    from secant.batching import helpers as batch_helpers
    every = set(helpers.by_name()) | set(batch_helpers.by_name())
    assert every - set(CASES) - TAKE_FUNCTIONS - NOT_ARRAY_FUNCTIONS == set()


def _leaves(tree):
    return [np.asarray(leaf, dtype=np.float64) for leaf in tree_util.tree_leaves(tree)]


def _eager(fn, values):
    return fn(*[snp.asarray(v) for v in values])


# Known gaps, each a strict xfail: the walk fails as soon as one starts working (then drop it
# here). Every one fails with a clear SecantError naming the helper's line, never a wrong value.
KNOWN = {}
# Known gaps that still fail with an internal error (each one a bug to fix, listed so the walk
# stays strict).
INTERNAL = {}


@pytest.mark.parametrize("transform", ["vjp", "jvp", "vmap"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_helper_transforms(x64, wrappers, name, transform):
    fn = getattr(wrappers, f"w_{name}")
    if (name, transform) in KNOWN or (name, transform) in INTERNAL:
        # fails with a SecantError (never a wrong value), or the listed internal error
        with pytest.raises(INTERNAL.get((name, transform), secant.SecantError)):
            _walk(fn, name, transform)
        pytest.xfail(KNOWN.get((name, transform), "internal error (INTERNAL)"))
    _walk(fn, name, transform)


def _walk(fn, name, transform):
    values = [np.asarray(v, dtype=np.float64) for v in CASES[name][1].values()]
    rng = np.random.default_rng(1)
    out = _eager(fn, values)
    h = 1e-6
    if transform == "vjp":
        _, pullback = secant.vjp(fn, *values)
        ct = tree_util.tree_map(lambda o: snp.asarray(rng.normal(size=np.shape(o))), out)
        got = pullback(ct)
        for k, v in enumerate(values):
            want = np.zeros(v.shape)
            for idx in np.ndindex(v.shape):
                e = np.zeros(v.shape)
                e[idx] = h
                up = _eager(fn, values[:k] + [v + e] + values[k + 1:])
                down = _eager(fn, values[:k] + [v - e] + values[k + 1:])
                want[idx] = sum(np.sum(c * (u - d)) for c, u, d in
                                zip(_leaves(ct), _leaves(up), _leaves(down))) / (2 * h)
            close(got[k], want, rtol=1e-5, atol=1e-6)
    elif transform == "jvp":
        tangents = [rng.normal(size=v.shape) for v in values]
        primal, tangent = secant.jvp(fn, tuple(values), tuple(tangents))
        up = _eager(fn, [v + h * t for v, t in zip(values, tangents)])
        down = _eager(fn, [v - h * t for v, t in zip(values, tangents)])
        for p, o in zip(_leaves(primal), _leaves(out)):
            close(p, o, rtol=1e-12)
        for t, u, d in zip(_leaves(tangent), _leaves(up), _leaves(down)):
            close(t, (u - d) / (2 * h), rtol=1e-5, atol=1e-6)
    else:
        batch = [np.stack([v, v * 1.01 + 0.003]) for v in values]
        got = secant.vmap(fn)(*batch)
        loop = [_eager(fn, [b[i] for b in batch]) for i in range(2)]
        for g, *each in zip(_leaves(got), *[_leaves(one) for one in loop]):
            close(g, np.stack(each), rtol=1e-12)


def swap_pairs(pairs):
    (a, b), (c, d) = pairs
    return a * d + b * c


def calls_with_nested_tuple(x, y):
    return swap_pairs(((x, y), (y * 2.0, x)))


def test_a_nested_tuple_of_differentiated_values_passed_to_a_function_is_differentiated(x64):
    # regression: f(((x, y), z)) was read as a constant call (gradient zeros, silently)
    x, y = 0.5, 1.5         # x * x + y * 2y = x^2 + 2 y^2
    gx, gy = secant.grad(calls_with_nested_tuple, argnums=(0, 1))(x, y)
    close(gx, 2 * x)
    close(gy, 4 * y)
    _, tangent = secant.jvp(calls_with_nested_tuple, (x, y), (1.0, 0.0))
    close(tangent, 2 * x)


# --- custom pytree classes as parameters -------------------------------------------------------
import dataclasses  # noqa: E402
from collections import namedtuple  # noqa: E402

Pair = namedtuple("Pair", "w b")


class Layer:
    def __init__(self, w, b):
        self.w, self.b = w, b


tree_util.register_pytree_node(Layer, lambda l: ((l.w, l.b), None), lambda _, ch: Layer(*ch))


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: object
    b: object


tree_util.register_dataclass(Frozen, data_fields=["w", "b"], meta_fields=[])


def attr_loss(p):
    return snp.sum(snp.tanh(p.w * 2.0) * p.b)


def index_loss(p):
    return snp.sum(snp.tanh(p[0] * 2.0) * p[1])


def grad_norm(p):
    g = secant.grad(attr_loss)(p)
    return snp.sum(g.w * g.w) + snp.sum(g.b)


def _pytree_want(w, b):
    s = 1 - np.tanh(2 * w) ** 2
    grad = (2 * b * s, np.tanh(2 * w))
    ds = -4 * s * np.tanh(2 * w)
    second = (2 * (2 * b * s) * (2 * b * ds) + 2 * s, 2 * (2 * b * s) * (2 * s))
    return grad, second


@pytest.mark.parametrize("cls", [Pair, Layer, Frozen])
def test_pytree_class_parameters_get_cotangents_of_their_class(x64, cls):
    w, b = np.array([0.3, 0.5]), np.array([1.0, 2.0])
    (gw, gb), (hw, hb) = _pytree_want(w, b)
    p = cls(w, b)
    for g in (secant.grad(attr_loss)(p), secant.jit(secant.grad(attr_loss))(p)):
        assert type(g) is cls
        close(g.w, gw, rtol=1e-12)
        close(g.b, gb, rtol=1e-12)
    if cls is Pair:
        g = secant.grad(index_loss)(p)
        assert type(g) is Pair
        close(g.w, gw, rtol=1e-12)
    g2 = secant.grad(grad_norm)(p)                 # second order: still the class
    assert type(g2) is cls
    close(g2.w, hw, rtol=1e-10)
    close(g2.b, hb, rtol=1e-10)
    h = secant.hessian(attr_loss)(p)
    assert type(h) is cls and type(h.w) is cls
    close(h.w.w, np.diag(2 * b * -4 * (1 - np.tanh(2 * w) ** 2) * np.tanh(2 * w)), rtol=1e-10)
    close(h.w.b, np.diag(2 * (1 - np.tanh(2 * w) ** 2)), rtol=1e-10)
    batch = cls(np.stack([w, w * 0.5]), np.stack([b, b + 1]))
    got = secant.vmap(secant.grad(attr_loss))(batch)
    assert type(got) is cls
    for i in range(2):
        one = secant.grad(attr_loss)(cls(batch.w[i], batch.b[i]))
        close(got.w[i], one.w, rtol=1e-12)
        close(got.b[i], one.b, rtol=1e-12)


# --- complex numbers, as JAX ---------------------------------------------------------------------
def square(z):
    return z * z


def cube(z):
    return z * z * z


def complex_abs(z):
    return snp.abs(z)


def test_grad_of_a_complex_output_needs_holomorphic(x64):
    z = np.complex128(3 + 4j)
    with pytest.raises(TypeError, match="holomorphic=True"):
        secant.grad(square)(z)          # was 6+8j, silently
    close_c = lambda got, want: np.testing.assert_allclose(complex(got), want, rtol=1e-12)  # noqa
    close_c(secant.grad(square, holomorphic=True)(z), 2 * z)
    close_c(secant.grad(snp.sin, holomorphic=True)(z), np.cos(z))
    value, g = secant.value_and_grad(cube, holomorphic=True)(z)
    close_c(value, z ** 3)
    close_c(g, 3 * z ** 2)
    close_c(secant.jit(secant.grad(cube, holomorphic=True))(z), 3 * z ** 2)
    with pytest.raises(TypeError, match="complex dtype"):
        secant.grad(square, holomorphic=True)(3.0)
    with pytest.raises(TypeError, match="real-valued outputs"):
        secant.jacrev(square)(np.array([z]))
    for jac in (secant.jacrev, secant.jacfwd):
        np.testing.assert_allclose(np.asarray(jac(square, holomorphic=True)(np.array([z]))),
                                   [[2 * z]], rtol=1e-12)


def test_abs_of_a_complex_input_is_never_silently_wrong(x64):
    # JAX: grad(abs)(z) = conj(z) / |z| (0.6 - 0.8j here), never z / |z|
    np.testing.assert_allclose(secant.grad(complex_abs)(np.complex128(3 + 4j)), 0.6 - 0.8j)
    close(secant.grad(lambda x: snp.abs(x) ** 3)(-2.0), -12.0)
    close(secant.grad(lambda x: snp.real(x) * 2.0 + snp.imag(x))(1.5), 2.0)
