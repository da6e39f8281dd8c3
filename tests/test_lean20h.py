"""Lean derivatives (issue 20), this step: algebra on a cotangent's expression (ad/algebra.py):
Python-number coefficients multiplied into one, like terms added, a factor common to every
term written once, and a full reduction's `unreduce(t, a)` read as the scalar t where the
product's other factors (or the sum's other terms) provably have a shape a's broadcasts to.

Each derivative is checked against float64 central differences, jit and vmap against eager
and a loop, second order against differences of the first; the dtype and weak type of the
gradient against the input's (float32, float64 under x64, Python floats), and the generated
text for what the rewrite promises."""
import sys
from pathlib import Path

import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import lean_functions as funcs  # noqa: E402

RNG = np.random.default_rng(2008)


def polynomial(x):
    return snp.sum(3 * x ** 4 - 2 * x ** 3 + x ** 2 - 5 * x + 7)


def gaussian(mu, x):
    z = x - mu
    return snp.sum(-0.5 * z * z)


def broadcast_product(x, y):
    return snp.sum(x * y * 3 * 2)           # x (3,), y (2, 3): unreduce to x * y's shape


def scalar_times(x, k):
    return snp.sum(k * 2 * x * x * 0.5)     # k a scalar array


def int_constants(x):
    return snp.sum(2 * (3 * x) * 4 + x * 1)


def repeated(x):
    return snp.sum(x * x * x) + snp.sum(2 * x * x)


CASES = {
    "polynomial": (polynomial, lambda: [RNG.uniform(-1, 1, 4)]),
    "gaussian": (gaussian, lambda: [RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, (5, 3))]),
    "broadcast_product": (broadcast_product,
                          lambda: [RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, (2, 3))]),
    "scalar_times": (scalar_times, lambda: [RNG.uniform(-1, 1, 4), np.float64(1.7)]),
    "int_constants": (int_constants, lambda: [RNG.uniform(-1, 1, 4)]),
    "repeated": (repeated, lambda: [RNG.uniform(-1, 1, 4)]),
}


def _fd(f, args, k=0):
    return fd_grad(lambda v: f(*[v if i == k else a for i, a in enumerate(args)]), args[k])


@pytest.mark.parametrize("name", sorted(CASES))
def test_simplified_gradients_match_differences(name, x64):
    f, make = CASES[name]
    args = make()
    g = secant.grad(f)
    np.testing.assert_allclose(np.asarray(g(*args)), _fd(f, args), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(*args)), np.asarray(g(*args)),
                               rtol=1e-12)
    # second order: the gradient of a sum of the gradient, against differences of it
    gg = secant.grad(lambda *a: snp.sum(g(*a)))
    np.testing.assert_allclose(np.asarray(gg(*args)),
                               _fd(lambda *a: np.sum(np.asarray(g(*a))), args),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_simplified_gradients_under_vmap(name, x64):
    f, make = CASES[name]
    batch = [make() for _ in range(3)]
    stacked = [np.stack(col) for col in zip(*batch)]
    got = secant.vmap(secant.grad(f))(*stacked)
    want = [np.asarray(secant.grad(f)(*args)) for args in batch]
    np.testing.assert_allclose(np.asarray(got), np.stack(want), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["polynomial", "int_constants", "repeated"])
def test_dtype_and_weak_type_kept(name, dtype, x64_or_not):
    f, make = CASES[name]
    x = make()[0].astype(dtype)
    got = secant.grad(f)(x)
    want = snp.asarray(x).dtype          # (float64 narrowed to float32 without x64)
    assert got.dtype == want and not got.weak_type
    # a Python float: the same dtype and weak type as the seed times the closed form gives
    scalar = secant.grad(f)(0.3)
    assert scalar.dtype == snp.asarray(0.3).dtype
    np.testing.assert_allclose(float(scalar), float(secant.grad(f)(np.array([0.3]))[0]),
                               rtol=1e-6)


def test_bench_functions_match_differences(x64):
    for name in funcs.NAMES:
        f = getattr(funcs, name)
        args = list(funcs.inputs(name, np.random.default_rng(5), dtype=np.float64, small=True))
        g = secant.grad(f)
        got = g(*args)
        if isinstance(got, dict):
            for key, v in got.items():
                want = fd_grad(lambda w: f(dict(args[0], **{key: w}), *args[1:]), args[0][key])
                np.testing.assert_allclose(np.asarray(v), want, rtol=1e-5, atol=1e-7)
            continue
        np.testing.assert_allclose(np.asarray(got), _fd(f, args), rtol=1e-5, atol=1e-7,
                                   err_msg=name)
        static = (1,) if name in ("python_loop", "while_loop") else ()
        np.testing.assert_allclose(np.asarray(secant.jit(g, static_argnums=static)(*args)),
                                   np.asarray(got), rtol=1e-10, err_msg=name)


def test_written_as_a_person_would():
    src = secant.source(secant.grad(polynomial))
    assert "(-5 + 2 * x - 6 * x ** 2 + 12 * x ** 3) * grad_seed_like(x)" in src
    assert "unreduce" not in src
    # the unreduce stays where the other factor's shape may be smaller (y is x * y's)
    src = secant.source(secant.grad(broadcast_product))
    assert "unreduce(" in src and "6 * " in src
    # like terms: -0.5 * z * g + -0.5 * (g * z) is -z * g
    src = secant.source(secant.grad(gaussian))
    # (then read once: folded into mu_bar's -(...), the two signs cancelled: accumulate.py;
    # mu_bar then returned in place: fold.returned_in_place)
    assert "return unbroadcast(z * grad_seed_like(z), mu)" in src, src


# --- the rewrite on lines (ad/algebra.py), with a stand-in for the shape analysis -----------
class _Shapes:
    """transformer/shapes.py's `of` for the names of these lines: x and y of their own
    shapes, v one loop iteration's value."""
    local = {"v@loop": True}
    table = {"x": {"x"}, "y": {"y"}, "v": {"v@loop"}}

    def of(self, expr):
        import ast
        tree = ast.parse(expr.src, mode="eval")
        if any(isinstance(n, ast.Call) for n in ast.walk(tree)):
            return None                 # (an unreduce: a shape the analysis does not follow)
        names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
        return frozenset({frozenset().union(*(self.table.get(n, {n}) for n in names))})


def _simplified(*codes, cotangents=frozenset({"t_bar", "g", "s"})):
    from secant.ad import algebra
    from secant.transformer.walker import Line
    lines = [Line(c, 1) for c in codes]
    return [ln.code for ln in algebra.simplified_lines(lines, cotangents, _Shapes())]


@pytest.mark.parametrize("code, want", [
    ("t_bar = 3 * g * 4 * x ** 3", "t_bar = 12 * g * x ** 3"),
    ("t_bar = 5 * -g", "t_bar = -5 * g"),
    ("t_bar = -2 * -g", "t_bar = 2 * g"),
    ("t_bar = a * g + a * (g * b) - a * g", "t_bar = (a + a * b - a) * g"),
    ("t_bar = a + a + b", "t_bar = 2 * a + b"),
    ("t_bar = a + b * -g", "t_bar = a - b * g"),
    ("t_bar = a - b * -g", "t_bar = a + b * g"),
    ("t_bar = a + (-0.5) * g", "t_bar = a - 0.5 * g"),
    ("t_bar = 2 * x * unreduce(s, x)", "t_bar = 2 * x * s"),
    ("t_bar = -5 * unreduce(s, x) + 2 * x * unreduce(s, x)", "t_bar = (-5 + 2 * x) * s"),
    ("t_bar = unreduce(s, x) * x + unreduce(s, x) * 3", "t_bar = (x + 3) * s"),
    # the terms of x's shape alone: the sum keeps it (a term made smaller covers none)
    ("t_bar = unreduce(s, x) * 3 + unreduce(s, x) * 2", "t_bar = 5 * unreduce(s, x)"),
    ("t_bar = 0.5 * g * x + 0.5 * g * x", "t_bar = 1.0 * g * x"),
    ("t_bar = 0.5 * grad_seed(o) * x + 0.5 * grad_seed(o) * x", "t_bar = grad_seed(o) * x"),
])
def test_rewrites(code, want):
    assert _simplified(code) == [want]


@pytest.mark.parametrize("code, why", [
    ("t_bar = 0.1 * g * 0.9", "0.09000000000000001: not a coefficient a person writes"),
    ("t_bar = g * 65536 * 65536", "2 ** 32: more than a weak int32 holds"),
    ("t_bar = a + b + a", "a + b + a concatenates lists in order"),
    ("t_bar = xs * n + ys * n", "n may be an int repeating lists"),
    ("t_bar = [g] * 2 * 3", "a list"),
    ("t_bar = 2 * y * unreduce(s, x)", "y's shape may be smaller than x's"),
    ("t_bar = 2 * unreduce(s, x)", "nothing else has x's shape"),
    ("u = 3 * x * 4", "a forward value: the user's"),
])
def test_no_rewrite(code, why):
    assert _simplified(code) == [code], why


def test_a_named_unreduce_is_read_as_its_scalar_where_bound_once_at_the_top():
    got = _simplified("s = grad_seed_like(x)", "g = unreduce(s, x)", "t_bar = 2 * x * g")
    assert got[2] == "t_bar = 2 * x * s"
    # not where a's symbols stand for a loop iteration's value
    got = _simplified("s = grad_seed_like(v)", "g = unreduce(s, v)", "t_bar = 2 * v * g")
    assert got[2] == "t_bar = 2 * v * g"
    # not where what t reads is bound again
    got = _simplified("s = grad_seed_like(x)", "g = unreduce(s, x)", "s = s * 2",
                      "t_bar = 2 * x * g")
    assert got[3] == "t_bar = 2 * x * g"


def range_loop(x, n):
    acc = snp.zeros_like(x)
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def range_loop_kept(x, n):
    acc = snp.zeros_like(x)
    for i in range(n):
        acc = acc * snp.sin(x * i) + 1.0
    return snp.sum(acc)


def test_a_range_read_once_is_written_in_the_loop_header(x64):
    g = secant.grad(range_loop)
    src = secant.source(g)
    assert "for i in reversed(range(n)):" in src and "i_range" not in src, src
    x = RNG.uniform(-1, 1, 4)
    np.testing.assert_allclose(g(x, 5), fd_grad(lambda v: range_loop(v, 5), x), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(g, static_argnums=1)(x, 5), g(x, 5), rtol=1e-12)
    # the forward loop runs too (its values are read back): the range is bound once, for both
    g = secant.grad(range_loop_kept)
    src = secant.source(g)
    assert "i_range = range(n)" in src and "reversed(i_range)" in src, src
    np.testing.assert_allclose(g(x, 4), fd_grad(lambda v: range_loop_kept(v, 4), x),
                               rtol=1e-6)
