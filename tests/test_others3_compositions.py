"""Issue 15, code written by others (third round): the scalar programs of the other
test_others3_* files under deeper compositions: grad to the 4th order (against differences of
the 3rd), jvp of grad, jacfwd of jacrev, vmap of jit of grad, jit of vmap of grad of grad, and
grad of vmap; each against float64 finite differences, a Python loop and eager."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, lax, vmap
from secant.scipy.stats import norm

from user_programs.checks import turns

# (tolerance-based checks: XLA's LLVM optimisation off in the default profile, conftest)
pytestmark = pytest.mark.usefixtures("fast_compiles")

EPS = 1e-4


def kepler(M, e=0.3):
    E = M
    for _ in range(6):
        E = E - (E - e * jnp.sin(E) - M) / (1 - e * jnp.cos(E))
    return E


def rk4_decay(k):
    y = 1.0
    for _ in range(10):
        f = lambda y: -k * y + jnp.sin(y)
        k1 = f(y)
        k2 = f(y + 0.05 * k1)
        k3 = f(y + 0.05 * k2)
        k4 = f(y + 0.1 * k3)
        y = y + 0.1 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def bs_call(S):
    d1 = (jnp.log(S / 95.0) + 0.05) / 0.25
    return S * norm.cdf(d1) - 95.0 * jnp.exp(-0.01) * norm.cdf(d1 - 0.25)


def heat_mean(a):
    u = jnp.exp(-jnp.linspace(-2.0, 2.0, 8) ** 2)
    for _ in range(5):
        u = u + a * (jnp.roll(u, 1) + jnp.roll(u, -1) - 2 * u)
    return jnp.sum(u ** 3)


def scan_logistic(r):
    def step(x, _):
        x = r * x * (1 - x)
        return x, x
    _, xs = lax.scan(step, 0.3, None, length=6)
    return jnp.sum(xs)


def fori_newton_sqrt(a):
    return lax.fori_loop(0, 6, lambda i, x: 0.5 * (x + a / x), a)


def while_cubic(a):
    def body(c):
        i, x = c
        return i + 1, x - (x ** 3 - a) / (3 * x ** 2)
    return lax.while_loop(lambda c: c[0] < 8, body, (0, a))[1]


def soft_min(x):
    xs = jnp.array([x, 2 * x - 1, jnp.sin(x)])
    return -0.2 * jnp.log(jnp.sum(jnp.exp(-xs / 0.2)))


def list_history(x):
    hist = []
    for i in range(4):
        hist.append(jnp.tanh(x * (i + 1)))
        if len(hist) > 2:
            hist.pop(0)
    return sum(h * h for h in hist) + hist[-1] * x


def where_piecewise(x):
    return jnp.where(x > 0.5, x ** 3, jnp.sin(x) + 0.5 ** 3 - jnp.sin(0.5))


PROGRAMS = {"kepler": (kepler, 1.1), "rk4_decay": (rk4_decay, 0.8), "bs_call": (bs_call, 100.0),
            "heat_mean": (heat_mean, 0.2), "scan_logistic": (scan_logistic, 2.9),
            "fori_newton_sqrt": (fori_newton_sqrt, 2.0), "while_cubic": (while_cubic, 2.0),
            "soft_min": (soft_min, 0.7), "list_history": (list_history, 0.4),
            "where_piecewise": (where_piecewise, 0.9)}


# each program under the mixed compositions or to the fourth order, in turn (both under
# HYPOTHESIS_PROFILE=thorough; heat_mean's fourth order, 30 CPU s, there only)
UNDER = turns(sorted(PROGRAMS), ["mixed", "fourth_order"])


def fd(f, x, h=EPS):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


@pytest.mark.parametrize("name", UNDER["fourth_order"])
def test_fourth_order(x64, name):
    f, x = PROGRAMS[name]
    g1, g2, g3, g4 = grad(f), grad(grad(f)), grad(grad(grad(f))), grad(grad(grad(grad(f))))
    scale = max(1.0, abs(float(x)))
    for lo, hi in ((f, g1), (g1, g2), (g2, g3), (g3, g4)):
        top = hi(x)
        np.testing.assert_allclose(top, fd(lo, x, EPS * scale), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(jit(g4)(x), top, rtol=1e-9, atol=1e-12)     # (top: g4(x))


@pytest.mark.parametrize("name", UNDER["mixed"])
def test_mixed_compositions(x64, name):
    f, x = PROGRAMS[name]
    g2 = grad(grad(f))(x)
    np.testing.assert_allclose(jvp(grad(f), (x,), (1.0,))[1], g2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad(lambda x: jvp(f, (x,), (1.0,))[1])(x), g2, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(jacfwd(jacrev(f))(x), g2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hessian(f)(x), g2, rtol=1e-9, atol=1e-12)
    xs = jnp.asarray(np.asarray(x) * np.array([0.9, 1.0, 1.1]))
    loop1 = np.array([float(grad(f)(v)) for v in xs])
    loop2 = np.array([float(grad(grad(f))(v)) for v in xs])
    np.testing.assert_allclose(vmap(jit(grad(f)))(xs), loop1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad(grad(f))))(xs), loop2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad(lambda v: jnp.sum(vmap(f)(v)))(xs), loop1, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(vmap(lambda v: jvp(grad(f), (v,), (1.0,))[1])(xs), loop2,
                               rtol=1e-9, atol=1e-12)
