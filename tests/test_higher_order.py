"""Functions as values (higher-order helpers, factories, decorators) and star unpacking.

A local lambda or nested def that closes over a differentiated value and is passed to a user
helper is read as a call of the helper specialised to it (transformer/higher_order.py), its
closure's values passed as arguments; a function known only when the code runs goes through
the run-time dispatcher; a decorator's `inner(*args, **kw)` is specialised per call shape.
Each case: grad against float64 finite differences or a closed form, jvp, vmap against a
loop, jit(grad) against eager; grad of grad for the ODE case.
"""
import functools
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp

GOLDEN = pathlib.Path(__file__).parent / "golden" / "higher_order"


def _check_golden(name, text):
    import os
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# --- helpers taking functions ------------------------------------------------------------------
def rk4(f, y, dt):
    k1 = f(y); k2 = f(y + dt / 2 * k1); k3 = f(y + dt / 2 * k2); k4 = f(y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def odeint(f, y, dt, steps=5):
    for _ in range(steps):
        y = rk4(f, y, dt)           # f passed on: rk4 is specialised in turn
    return y


def apply(fn, x):
    return fn(x)


def apply_twice(x, fn=None):
    return fn(fn(x))


def my_fn(x):
    return snp.sin(x) * x


def make_loss(scale):
    def loss(w):
        return scale * snp.sum(w ** 2)
    return loss


# --- the functions differentiated --------------------------------------------------------------
def simulate(theta):
    f = lambda y: -theta * y
    y = 1.0
    for _ in range(10):
        y = rk4(f, y, 0.1)
    return y


def simulate_nested(theta):
    def decay(y):
        return -theta * y + snp.sin(theta) * 0.1
    return odeint(decay, 1.0, 0.1)


def pass_by_keyword(theta):
    def g(y):
        return theta * snp.sin(y)
    return apply_twice(theta, fn=g)


def nested_def_passed(theta):
    def g(y):
        return theta * y * y
    return apply(g, 3.0) + apply(g, theta)


def global_passed(x):
    return apply(my_fn, x) + apply(snp.tanh, x)


def factory_in_place(w):
    return make_loss(2.0)(w)


def factory_named(w):
    loss_fn = make_loss(3.0)
    return loss_fn(w)


def no_closure_lambda(x):
    sq = lambda y: y * y        
    return apply(sq, x) * x


def inline_lambda(theta):
    y = odeint(lambda y: -theta * y * y, 1.0, 0.1)   # named `f`, lifted, odeint specialised
    return y + apply(lambda y: theta * snp.sin(y), theta)


def stored_nested_def(theta):
    def g(y):
        return theta * y
    fs = [g]
    return apply(fs[0], 3.0)


def _exact_simulate(theta):
    """simulate in float64 NumPy."""
    y = 1.0
    for _ in range(10):
        f = lambda y: -theta * y
        y = rk4(f, y, 0.1)
    return y


def _np(fn):
    """`fn` run with NumPy in float64 (secant.numpy calls on floats give NumPy values)."""
    return lambda t: float(fn(np.float64(t)))


SCALAR_CASES = {
    "simulate": (simulate, 0.5),
    "simulate_nested": (simulate_nested, 0.7),
    "pass_by_keyword": (pass_by_keyword, 0.6),
    "nested_def_passed": (nested_def_passed, 0.8),
    "global_passed": (global_passed, 0.4),
    "no_closure_lambda": (no_closure_lambda, 1.3),
    "inline_lambda": (inline_lambda, 0.9),
}


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_grad_against_finite_differences(name, x64):
    fn, x = SCALAR_CASES[name]
    want = fd(_np(fn), x)
    assert float(secant.grad(fn)(x)) == pytest.approx(want, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_jvp_and_jit_grad(name, x64):
    fn, x = SCALAR_CASES[name]
    want = fd(_np(fn), x)
    value, tangent = secant.jvp(fn, (x,), (1.0,))
    assert float(value) == pytest.approx(_np(fn)(x), rel=1e-9)
    assert float(tangent) == pytest.approx(want, rel=1e-6, abs=1e-8)
    eager = float(secant.grad(fn)(x))
    assert float(secant.jit(secant.grad(fn))(x)) == pytest.approx(eager, rel=1e-9)


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_vmap_against_loop(name, x64):
    fn, x = SCALAR_CASES[name]
    xs = np.asarray([x, x + 0.1, x - 0.2])
    out = np.asarray(secant.vmap(fn)(xs))
    assert out == pytest.approx([_np(fn)(v) for v in xs], rel=1e-9)
    grads = np.asarray(secant.vmap(secant.grad(fn))(xs))
    assert grads == pytest.approx([fd(_np(fn), v) for v in xs], rel=1e-6, abs=1e-8)


def test_simulate_closed_form_and_second_order(x64):
    # RK4 with step h on y' = -theta y multiplies by p(z) = 1 + z + z^2/2 + z^3/6 + z^4/24,
    # z = -theta h: y = p(z)^10, dy/dtheta = 10 p^9 p'(z) (-h)
    theta, h = 0.5, 0.1
    z = -theta * h
    p = 1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24
    dp = 1 + z + z ** 2 / 2 + z ** 3 / 6
    ddp = 1 + z + z ** 2 / 2
    assert float(secant.grad(simulate)(theta)) == pytest.approx(10 * p ** 9 * dp * -h, rel=1e-10)
    second = h * h * (90 * p ** 8 * dp ** 2 + 10 * p ** 9 * ddp)
    assert float(secant.grad(secant.grad(simulate))(theta)) == pytest.approx(second, rel=1e-9)
    assert float(secant.jacfwd(secant.grad(simulate))(theta)) == pytest.approx(second, rel=1e-9)


def test_simulate_source_reads_as_a_specialised_call():
    from test_golden import generated_program
    text = generated_program(secant.grad(simulate))
    assert "rk4_f(y, 0.1, theta)" in text and "rk4_f_vjp(" in text
    assert "def rk4_f_vjp(" in text and "lambda" not in text.split("\n\n\n")[0]
    _check_golden("simulate_grad", text)


def test_factories(x64):
    w = np.asarray([0.5, -1.0, 2.0])
    assert np.asarray(secant.grad(factory_in_place)(w)) == pytest.approx(4.0 * w)
    assert np.asarray(secant.grad(factory_named)(w)) == pytest.approx(6.0 * w)
    assert np.asarray(secant.jit(secant.grad(factory_named))(w)) == pytest.approx(6.0 * w)
    assert np.asarray(secant.vmap(factory_named)(np.stack([w, 2 * w]))) == \
        pytest.approx([3.0 * np.sum(w ** 2), 12.0 * np.sum(w ** 2)])
    _, tangent = secant.jvp(factory_in_place, (w,), (np.ones(3),))
    assert float(tangent) == pytest.approx(4.0 * np.sum(w))


def test_a_closing_function_stored_as_a_value_carries_its_derivative(x64):
    # g, stored in a list, is an object holding theta (transformer/closures.py): d(3 theta) = 3
    assert float(secant.grad(stored_nested_def)(0.5)) == pytest.approx(3.0, rel=1e-12)
    assert float(secant.jit(secant.grad(stored_nested_def))(0.5)) == pytest.approx(3.0)
    assert np.asarray(secant.vmap(secant.grad(stored_nested_def))(np.asarray([0.5, 2.0]))) == \
        pytest.approx([3.0, 3.0])


def test_a_partial_of_a_closing_function_passed_on_carries_its_derivative(x64):
    def with_partial(theta):
        def g(a, y):
            return a * theta * y
        h = functools.partial(g, 2.0)       # (read as def h(y): return g(2.0, y=y))
        return apply(h, 3.0)
    assert float(secant.grad(with_partial)(0.5)) == pytest.approx(6.0, rel=1e-12)
    assert float(secant.jit(secant.grad(with_partial))(0.5)) == pytest.approx(6.0, rel=1e-12)


# --- decorators whose wrapper is variadic ------------------------------------------------------
def dec(scale):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kw):
            return scale * fn(*args, **kw)
        return inner
    return wrap


@dec(2.0)
def sq(x):
    return x * x


@dec(0.5)
def weighted(x, w=3.0):
    return snp.sin(x) * w


def calls_decorated(x):
    return sq(x) + weighted(x, w=2.0)


def test_decorated_with_a_variadic_wrapper(x64):
    assert float(secant.grad(sq)(3.0)) == pytest.approx(12.0)
    assert float(secant.jit(secant.grad(sq))(3.0)) == pytest.approx(12.0)
    assert np.asarray(secant.vmap(sq)(np.arange(3.0))) == pytest.approx(2 * np.arange(3.0) ** 2)
    value, tangent = secant.jvp(sq, (3.0,), (1.0,))
    assert (float(value), float(tangent)) == pytest.approx((18.0, 12.0))
    assert float(secant.grad(secant.grad(sq))(3.0)) == pytest.approx(4.0)
    assert float(secant.grad(weighted)(0.3)) == pytest.approx(1.5 * np.cos(0.3))
    # the wrapper called from another function: specialised per call shape there too
    x = 0.7
    want = 4 * x + np.cos(x)
    assert float(secant.grad(calls_decorated)(x)) == pytest.approx(want)
    assert float(secant.jit(secant.grad(calls_decorated))(x)) == pytest.approx(want)
    xs = np.asarray([0.1, 0.7])
    assert np.asarray(secant.vmap(secant.grad(calls_decorated))(xs)) == \
        pytest.approx(4 * xs + np.cos(xs))


# --- star unpacking ----------------------------------------------------------------------------
def predict(params, x):
    *hidden, last = params
    for layer in hidden:
        x = snp.tanh(x @ layer["w"] + layer["b"])
    return x @ last["w"] + last["b"]


def mlp_loss(params, x):
    return snp.sum(predict(params, x) ** 2)


def first_rest(xs):
    first, *rest = xs
    return first * snp.sum(snp.stack(rest))


def middle(x):
    a, *mid, b = [x, 2 * x, 3 * x, x * x]
    return a * b + mid[0] * mid[1]


def _mlp_params(rng):
    return [{"w": rng.normal(size=(m, n)) * 0.5, "b": rng.normal(size=n) * 0.1}
            for m, n in ((3, 4), (4, 4), (4, 2))]


def test_star_unpacking_of_a_list_of_layers(x64):
    rng = np.random.default_rng(0)
    params, x = _mlp_params(rng), rng.normal(size=(5, 3))
    g = secant.grad(mlp_loss)(params, x)
    leaves, tree = secant.tree_util.tree_flatten(params)
    for i, leaf in enumerate(leaves):
        for idx in np.ndindex(leaf.shape):
            def at(e):
                new = [np.array(v, dtype=float) for v in leaves]
                new[i][idx] += e
                return float(mlp_loss(secant.tree_util.tree_unflatten(tree, new), x))
            got = secant.tree_util.tree_leaves(g)[i][idx]
            assert float(got) == pytest.approx(fd(at, 0.0), rel=1e-6, abs=1e-8)
    jitted = secant.jit(secant.grad(mlp_loss))(params, x)
    for a, b in zip(secant.tree_util.tree_leaves(jitted), secant.tree_util.tree_leaves(g)):
        assert np.asarray(a) == pytest.approx(np.asarray(b), rel=1e-9)
    per = secant.vmap(mlp_loss, in_axes=(None, 0))(params, x[:, None])
    assert np.asarray(per) == pytest.approx([float(mlp_loss(params, r[None])) for r in x])


def test_star_unpacking_first_rest_and_middle(x64):
    xs = [1.0, 2.0, 3.0]
    assert [float(v) for v in secant.grad(first_rest)(xs)] == pytest.approx([5.0, 1.0, 1.0])
    # a * b + mid[0] * mid[1] = x^3 + 6 x^2
    assert float(secant.grad(middle)(2.0)) == pytest.approx(3 * 4 + 12 * 2)
    assert float(secant.jit(secant.grad(middle))(2.0)) == pytest.approx(36.0)
    assert float(secant.jvp(middle, (2.0,), (1.0,))[1]) == pytest.approx(36.0)
    assert np.asarray(secant.vmap(middle)(np.asarray([1.0, 2.0]))) == pytest.approx([7.0, 32.0])
