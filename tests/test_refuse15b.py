"""Issue 15 ("never refuses or answers wrongly"), three gaps: a conditional expression inside a
comprehension's item (refused under every transform), NumPy's in-place idioms as statements
(`snp.add.at(x, i, v)`, `np.put(a, i, v)`: dropped with their unused result under grad/vmap/
jvp), and object.__setattr__ of a property of the object's class (stored past the property in
the trace, where Python runs its setter or raises)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import SecantError

@pytest.fixture(autouse=True)
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


P = {"w1": np.array([0.3, -1.2]), "b": np.array([0.7, 1.1]), "w2": np.array([2.0, 0.4])}


def _fd_grad(f, p, eps=1e-6):
    out = {}
    for k, v in p.items():
        g = np.zeros_like(v)
        for i in range(v.size):
            up = {kk: vv.copy() for kk, vv in p.items()}
            down = {kk: vv.copy() for kk, vv in p.items()}
            up[k][i] += eps
            down[k][i] -= eps
            g[i] = (float(f(up)) - float(f(down))) / (2 * eps)
        out[k] = g
    return out


def _close(a, b, rtol=1e-6, atol=1e-8):
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_allclose(np.asarray(a[k]), b[k], rtol=rtol, atol=atol)


# --- 1. a conditional expression inside a comprehension --------------------------------------------
def sum_of_choices(params):
    return sum(snp.sum(params[k] ** 2 if k.startswith("w") else snp.sin(params[k]))
               for k in params)


def stacked_choices(params):
    return snp.sum(snp.stack([snp.sum(params[k] ** 3 if k.startswith("w") else params[k] * 3)
                              for k in params]))


def nested_choices(params):
    terms = [snp.sum(params[k] ** 2 if k == "w1" else (snp.cos(params[k]) if k == "b"
                                                       else params[k] * 5))
             for k in params]
    return sum(terms)


def loop_choice(params):
    total = 0.0
    for k in params:
        total = total + snp.sum(params[k] ** 2 if k.startswith("w") else params[k])
    return total


@pytest.mark.parametrize("f", [sum_of_choices, stacked_choices, nested_choices, loop_choice])
def test_choice_in_comprehension_grad_jit_jvp_hessian(f):
    expected = _fd_grad(f, P)
    g = secant.grad(f)(P)
    _close(g, expected)
    _close(secant.jit(secant.grad(f))(P), {k: np.asarray(v) for k, v in g.items()}, rtol=1e-10)
    tangent = {k: np.full_like(v, 0.5) for k, v in P.items()}
    value, t = secant.jvp(f, (P,), (tangent,))
    assert float(value) == pytest.approx(float(f(P)), rel=1e-12)
    assert float(t) == pytest.approx(sum(float(np.sum(expected[k] * tangent[k])) for k in P),
                                     rel=1e-6)
    h = secant.hessian(f)(P)
    for k in P:         # each row of the hessian: central differences of the gradient
        for i in range(P[k].size):
            up = {kk: vv.copy() for kk, vv in P.items()}
            down = {kk: vv.copy() for kk, vv in P.items()}
            up[k][i] += 1e-5
            down[k][i] -= 1e-5
            gu, gd = secant.grad(f)(up), secant.grad(f)(down)
            for j in P:
                np.testing.assert_allclose(np.asarray(h[j][k])[:, i],
                                           (np.asarray(gu[j]) - np.asarray(gd[j])) / 2e-5,
                                           rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", [sum_of_choices, stacked_choices])
def test_choice_in_comprehension_vmap_grad(f):
    batch = {k: np.stack([v, v * 0.5 + 0.1, -v]) for k, v in P.items()}
    got = secant.vmap(secant.grad(f))(batch)
    for n in range(3):
        one = secant.grad(f)({k: v[n] for k, v in batch.items()})
        for k in P:
            np.testing.assert_allclose(np.asarray(got[k])[n], np.asarray(one[k]), rtol=1e-10)


def traced_test(xs):
    return sum(snp.sum(v ** 2) if snp.sum(v) > 0 else snp.sum(snp.sin(v)) for v in xs)


def test_choice_on_a_traced_test_eagerly():
    xs = [np.array([0.5, 1.0]), np.array([-0.5, -1.0])]
    g = secant.grad(traced_test)(xs)
    np.testing.assert_allclose(np.asarray(g[0]), 2 * xs[0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g[1]), np.cos(xs[1]), rtol=1e-12)


# --- 2. NumPy's in-place idioms as statements ----------------------------------------------------
def add_at(x):
    y = x * 2.0
    snp.add.at(y, 0, 1.0)
    return snp.sum(y ** 2)


def np_add_at(x):
    y = x * 2.0
    np.add.at(y, 0, 1.0)
    return snp.sum(y ** 2)


def put(x):
    y = x * 2.0
    snp.put(y, 0, 1.0)
    return snp.sum(y ** 2)


def np_place(x):
    y = x * 2.0
    np.place(y, y > 0, 1.0)
    return snp.sum(y ** 2)


def fill_diagonal(x):
    y = snp.outer(x, x)
    np.fill_diagonal(y, 1.0)
    return snp.sum(y ** 2)


def copyto(x):
    y = x * 2.0
    np.copyto(y, 1.0)
    return snp.sum(y ** 2)


def shuffle(x):
    y = x * 2.0
    np.random.shuffle(y)
    return snp.sum(y * snp.arange(2.0))


IN_PLACE = [add_at, np_add_at, put, np_place, fill_diagonal, copyto, shuffle]
TRANSFORMS = {
    "grad": lambda f, x: secant.grad(f)(x),
    "jit_grad": lambda f, x: secant.jit(secant.grad(f))(x),
    "vmap": lambda f, x: secant.vmap(f)(np.stack([x, x + 1])),
    "vmap_grad": lambda f, x: secant.vmap(secant.grad(f))(np.stack([x, x + 1])),
    "jvp": lambda f, x: secant.jvp(f, (x,), (x,)),
}


@pytest.mark.parametrize("how", list(TRANSFORMS))
@pytest.mark.parametrize("f", IN_PLACE, ids=lambda f: f.__name__)
def test_in_place_statement_refused_under_every_transform(f, how):
    with pytest.raises(SecantError, match="in place") as info:
        TRANSFORMS[how](f, np.array([1.0, 2.0]))
    assert "test_refuse15b.py" in str(info.value)


def test_in_place_statement_refused_eagerly_and_under_jit():
    x = np.array([1.0, 2.0])
    for f in (add_at, put):
        with pytest.raises(ValueError, match="in-place"):
            f(x)
        with pytest.raises(ValueError, match="in-place"):
            secant.jit(f)(x)


def not_in_place(x):
    y = snp.add.at(x * 2.0, 0, 1.0, inplace=False)
    y = snp.put(y, 1, y[0] * 3.0, inplace=False)
    return snp.sum(y ** 2)


def test_inplace_false_keeps_working():
    x = np.array([0.4, -0.9, 1.5])
    expected = [(float(not_in_place(x + e)) - float(not_in_place(x - e))) / 2e-6
                for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(np.asarray(secant.grad(not_in_place)(x)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(not_in_place))(x)), expected,
                               rtol=1e-6)


def test_in_place_refused_in_a_trace():
    ns = {"snp": snp}       # (no source file: secant traces the function)
    exec("def f(x):\n    y = x * 2.0\n    snp.add.at(y, 0, 1.0)\n    return snp.sum(y ** 2)\n",
         ns)
    for how in ("grad", "vmap"):
        with pytest.raises(SecantError, match="in place"):
            TRANSFORMS[how](ns["f"], np.array([1.0, 2.0]))


def in_place_in_untaken_branch(x, debug=False):
    y = x * 2.0
    if debug:
        snp.add.at(y, 0, 1.0)
    return snp.sum(y ** 2)


def test_in_place_in_a_branch_refused_only_where_it_runs():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(np.asarray(secant.grad(in_place_in_untaken_branch)(x)), 8 * x)


# --- 3. object.__setattr__ of a property ---------------------------------------------------------
class NoSetter:
    def __init__(self, w):
        object.__setattr__(self, "w", w)

    @property
    def scale(self):
        return 2.0

    def apply(self, x):
        return self.w * x * self.scale


class WithSetter:
    def __init__(self, w):
        object.__setattr__(self, "w", w)
        self._s = 1.0

    @property
    def scale(self):
        return self._s

    @scale.setter
    def scale(self, v):
        self._s = v * 10.0

    def apply(self, x):
        return self.w * x


def set_no_setter(x):
    m = NoSetter(x)
    object.__setattr__(m, "scale", x)
    return snp.sum(m.apply(x))


def set_through_setter(x):
    m = WithSetter(x)
    object.__setattr__(m, "scale", x)
    return snp.sum(m.apply(x) * m.scale)


def assign_no_setter(x):
    m = NoSetter(x)
    m.scale = x
    return snp.sum(m.apply(x))


def assign_through_setter(x):
    m = WithSetter(x)
    m.scale = x
    return snp.sum(m.w * m.scale)


# (`m.scale = x` under a transform: the per-call trace meets Python's own AttributeError and
# raises it, as JAX's trace would (norm15o's trace_source.pythons_own); object.__setattr__ is
# refused, the refusal quoting Python's error)
@pytest.mark.parametrize("f, kind", [(set_no_setter, SecantError),
                                     (assign_no_setter, AttributeError)])
def test_property_without_setter_raises_as_python(f, kind):
    x = np.array([1.0, 2.0])
    with pytest.raises(AttributeError, match="has no setter"):
        f(x)
    for how in ("grad", "vmap", "jvp"):
        with pytest.raises(kind, match="has no setter") as info:
            TRANSFORMS[how](f, x)
        assert isinstance(info.value, SecantError) == (kind is SecantError)


@pytest.mark.parametrize("f", [set_through_setter, assign_through_setter])
def test_property_setter_runs_as_python(f):
    x = np.array([0.6, -1.3])
    expected = [(float(f(x + e)) - float(f(x - e))) / 2e-6 for e in np.eye(2) * 1e-6]
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(np.stack([x, 2 * x]))),
                               [float(f(x)), float(f(2 * x))], rtol=1e-10)


def test_choice_on_a_traced_test_under_jit_keeps_jax_error():
    xs = [np.array([0.5, 1.0]), np.array([-0.5, -1.0])]
    for f in (secant.jit(traced_test), secant.jit(secant.grad(traced_test))):
        with pytest.raises(SecantError, match=r"bool\(\) of a traced value"):
            f(xs)
