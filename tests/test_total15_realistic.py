"""Realistic code written as others write it (an MLP with dict parameters, an RNN, an RK4 ODE
step, a class holding parameters, a functools.partial) under grad∘grad, vmap∘grad, jit∘vmap
and jacfwd∘jacrev (issue 15); checked against float64 finite differences, a Python loop and
eager; and a callee built from a differentiated value is never read as a constant."""
import functools

import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, jacfwd, jacrev, jit, vmap

RNG = np.random.default_rng(0)
PARAMS = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4), "w2": RNG.normal(size=4),
          "b2": 0.3}
X = RNG.normal(size=(4, 3))
WH, WX = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3) * 0.5


def mlp(x):
    h = snp.tanh(x @ PARAMS["w1"] + PARAMS["b1"])
    return (snp.dot(h, PARAMS["w2"]) + PARAMS["b2"]) ** 2


def np_mlp(x):
    h = np.tanh(x @ PARAMS["w1"] + PARAMS["b1"])
    return (h @ PARAMS["w2"] + PARAMS["b2"]) ** 2


def rnn(h):
    for t in range(3):
        h = snp.tanh(WH @ h + WX * (t + 1.0))
    return snp.sum(h)


def np_rnn(h):
    for t in range(3):
        h = np.tanh(WH @ h + WX * (t + 1.0))
    return np.sum(h)


class Model:
    def __init__(self, w):
        self.w = w

    def predict(self, x):
        return snp.tanh(self.w * x)

    def __call__(self, x):
        return snp.sum(self.predict(x) ** 2)


def _powsum(x, p):
    return snp.sum(x ** p)


CASES = {"mlp": (mlp, np_mlp), "rnn": (rnn, np_rnn),
         "model": (Model(0.8), lambda x: np.sum(np.tanh(0.8 * x) ** 2)),
         "partial": (functools.partial(_powsum, p=3), lambda x: np.sum(x ** 3))}


def _fd(f, x, h=1e-5):
    out = np.zeros(x.shape + np.shape(f(x)))
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_realistic_compositions(x64, name):
    fn, ref = CASES[name]
    x = X[0]
    g = lambda y: _fd(ref, y)   # noqa: E731
    np.testing.assert_allclose(grad(lambda y: snp.sum(grad(fn)(y)))(x),
                               _fd(lambda y: np.sum(_fd(ref, y, 1e-4)), x, 1e-4), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(vmap(grad(fn))(X), np.stack([g(r) for r in X]), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(jit(vmap(fn))(X), [ref(r) for r in X], rtol=1e-10)
    hess = _fd(lambda y: _fd(ref, y, 1e-4), x, 1e-4)
    np.testing.assert_allclose(jacfwd(jacrev(fn))(x), hess, rtol=1e-4, atol=1e-6)
    if name == "model":     # (a bound __call__: its generated name was `<locals>_call_vjp`)
        np.testing.assert_allclose(jacfwd(jacrev(fn.__call__))(x), hess, rtol=1e-4, atol=1e-6)


def _f_ode(y, k):
    return -k * y + snp.sin(y)


def _rk4(y, k, dt=0.1):
    k1 = _f_ode(y, k)
    k2 = _f_ode(y + dt / 2 * k1, k)
    k3 = _f_ode(y + dt / 2 * k2, k)
    k4 = _f_ode(y + dt * k3, k)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def simulate(k, y0=1.0):
    y = y0
    for _ in range(4):
        y = _rk4(y, k)
    return y


def _np_simulate(k):
    f, y = (lambda y: -k * y + np.sin(y)), 1.0
    for _ in range(4):
        k1 = f(y)
        k2 = f(y + 0.05 * k1)
        k3 = f(y + 0.05 * k2)
        k4 = f(y + 0.1 * k3)
        y = y + 0.1 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def test_ode_step_with_a_defaulted_parameter(x64):
    """jacfwd∘jacrev of a function with a defaulted parameter failed inside (its jvp's
    tangents are keyword-only after the defaulted primal, and were passed positionally)."""
    h = 1e-4
    d2 = (_np_simulate(0.7 + h) - 2 * _np_simulate(0.7) + _np_simulate(0.7 - h)) / h ** 2
    np.testing.assert_allclose(jacfwd(jacrev(simulate))(0.7), d2, rtol=1e-5)
    np.testing.assert_allclose(grad(grad(simulate))(0.7), d2, rtol=1e-5)
    ks = np.array([0.7, 1.3])
    np.testing.assert_allclose(jit(vmap(simulate))(ks), [_np_simulate(k) for k in ks],
                               rtol=1e-12)


def test_a_callee_built_from_a_differentiated_value_is_not_a_constant(x64):
    """Was silently wrong: `Model(w)(x)` read as a constant call (its arguments hold nothing
    differentiated), so grad with respect to w was 0."""
    def loss(w, x):
        return Model(w)(x)
    x = np.asarray(X[0], np.float64)
    t = np.tanh(0.8 * x)
    np.testing.assert_allclose(grad(loss)(0.8, X[0]), np.sum(2 * t * (1 - t * t) * x),
                               rtol=1e-10)      # (transformer/user_objects.py)


def _scaled(s):
    def deco(f):
        @functools.wraps(f)
        def inner(*a):
            return s * f(*a)
        return inner
    return deco


@_scaled(3.0)
def cube(x):
    return snp.sum(x ** 3)


def test_decorated_variadic_wrapper_under_compositions(x64):
    """A decorator whose wrapper takes *a: grad of it inside a function, and jacfwd∘jacrev of
    it, were refused (the wrapper read before it was shaped for the call)."""
    x = X[0]
    np.testing.assert_allclose(grad(lambda y: snp.sum(grad(cube)(y)))(x), 18 * x, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(jacrev(cube))(x), np.diag(18 * x), rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(cube))(X), 9 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(cube))(X), 3 * np.sum(X ** 3, 1), rtol=1e-12)
