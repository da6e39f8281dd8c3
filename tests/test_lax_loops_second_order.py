"""Every second-order composition through lax loops (issue 15 section 4).

The first derivative of a lax loop calls loop helpers (fori_loop_with_carries, fori_loop_vjp,
scan_vjp, ...) that take the body or its generated vjp; differentiated again they are read as
the lax.scan / while_loop they run (transformer/loop_lowering.py), the nested functions their
steps call closure-converted. Each check here is against float64 central finite differences of
the first derivative (never another secant transform), jit against eager, vmap against a loop.
"""
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

GOLDEN = pathlib.Path(__file__).parent / "golden" / "lax_loops" / "pendulum_fori_grad_grad.py.txt"


def pendulum_fori(theta0):
    def body(i, state):
        th, om = state
        om = om - 0.1 * snp.sin(th)
        th = th + 0.1 * om
        return th, om
    th, om = lax.fori_loop(0, 8, body, (theta0, 0.0 * theta0))
    return snp.sum(th ** 2 + om ** 2)


def rnn_scan(w, xs):
    def step(h, x):             # closes over w, which is differentiated
        h = snp.tanh(w * h + x)
        return h, snp.sum(h)
    h, ys = lax.scan(step, snp.zeros(3), xs)
    return snp.sum(h ** 2) + snp.sum(ys)


def rnn_of_w(w):
    return rnn_scan(w, XS)


XS = np.array([[0.5, -0.2, 0.9], [0.1, 0.3, -0.6]])


def fori_index_closure(c):
    """The body indexes a closed-over differentiated array with the loop counter."""
    def body(i, acc):
        return acc * 0.5 + c[i] * snp.sin(acc)
    return snp.sum(lax.fori_loop(0, 3, body, c[0] + 0.0 * c))


def scan_reverse_xs(x):
    """A reverse scan whose xs are differentiated too."""
    def f(carry, t):
        carry = snp.sin(carry) * t + carry
        return carry, carry * t
    c, ys = lax.scan(f, x[0], x, reverse=True)
    return c + snp.sum(ys ** 2)


def map_closure(w):
    return snp.sum(lax.map(lambda t: snp.sin(w * t) * w, snp.arange(1.0, 4.0)))


def python_loop(x):             # the normaliser (jit: functionalize) turns it into a lax loop
    for _ in range(3):
        x = snp.sin(x) + 0.5 * x
    return x


def newton_sqrt_while(a):
    def cond(state):
        i, _ = state
        return i < 5

    def body(state):
        i, y = state
        return i + 1, 0.5 * (y + a / y)
    _, y = lax.while_loop(cond, body, (0, snp.ones_like(a)))
    return snp.sum(y)


def _fd_hvp(f, x, v, eps=1e-6):
    """(grad f(x + eps v) - grad f(x - eps v)) / 2 eps: H v by central differences."""
    g = secant.grad(f)
    return (np.asarray(g(x + eps * v)) - np.asarray(g(x - eps * v))) / (2 * eps)


def _vhv(f, v):
    """x -> v . grad f(x), whose gradient is H v."""
    g = secant.grad(f)
    return lambda x: snp.sum(g(x) * v)


ARRAY_CASES = {
    "pendulum_fori": (pendulum_fori, np.array([0.3, -0.7, 1.1])),
    "rnn_scan": (rnn_of_w, np.array([0.4, -0.3, 0.8])),
    "fori_index_closure": (fori_index_closure, np.array([0.6, -0.4, 0.9])),
    "scan_reverse_xs": (scan_reverse_xs, np.array([0.3, 0.5, -0.2, 0.7])),
    "map_closure": (map_closure, np.array(0.7)),
}


@pytest.mark.parametrize("name", sorted(ARRAY_CASES))
def test_reverse_over_reverse_and_forward_over_reverse(x64, name):
    f, x = ARRAY_CASES[name]
    v = np.linspace(0.5, -0.5, x.size).reshape(x.shape) if x.ndim else np.array(1.0)
    want = _fd_hvp(f, x, v)
    hv = _vhv(f, v)
    np.testing.assert_allclose(np.asarray(secant.grad(hv)(x)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(hv))(x)), want, rtol=1e-6,
                               atol=1e-8)
    _, tangent = secant.jvp(secant.grad(f), (x,), (v,))
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-6, atol=1e-8)
    _, pullback = secant.vjp(secant.grad(f), x)
    if x.ndim:      # the Hessian is symmetric: v^T H = H v
        np.testing.assert_allclose(np.asarray(pullback(snp.asarray(v))[0]), want, rtol=1e-6,
                                   atol=1e-8)


def test_hessian_and_jit_of_jvp_of_grad(x64):
    x = np.array([0.3, -0.7, 1.1])
    eye = np.eye(3)
    want = np.stack([_fd_hvp(pendulum_fori, x, e) for e in eye], axis=1)
    np.testing.assert_allclose(np.asarray(secant.hessian(pendulum_fori)(x)), want, rtol=1e-6,
                               atol=1e-8)
    g = secant.grad(pendulum_fori)
    hvp = secant.jit(lambda x, v: secant.jvp(g, (x,), (v,))[1])
    np.testing.assert_allclose(np.asarray(hvp(x, eye[1])), want[:, 1], rtol=1e-6, atol=1e-8)


def test_vmap_of_grad_of_grad_of_a_scalar_loop_matches_a_loop(x64):
    gg = secant.grad(secant.grad(python_loop))
    xs = np.array([0.7, -0.4, 0.2])
    np.testing.assert_allclose(np.asarray(secant.vmap(gg)(xs)),
                               [float(gg(x)) for x in xs], rtol=1e-12)


def test_python_loop_staged_by_jit_to_the_fourth_order(x64):
    """jit stages the Python loop as a lax loop: its derivatives are derivatives of lax loops."""
    g = python_loop
    for n in range(1, 5):
        below, g = g, secant.grad(g)
        eps = 1e-5
        want = (float(below(0.7 + eps)) - float(below(0.7 - eps))) / (2 * eps)
        got = float(secant.jit(g)(0.7))
        np.testing.assert_allclose(got, float(g(0.7)), rtol=1e-10)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_while_loop_forward_over_reverse(x64):
    """JAX has no reverse mode through a while_loop; forward over reverse is what runs there
    (secant's reverse over reverse recomputes each carry, eagerly and under jit)."""
    a = np.array([2.0, 3.0])
    v = np.array([1.0, 0.5])
    want = -v / (4 * a ** 1.5)          # d/da of 1 / (2 sqrt(a)) after 5 Newton steps
    _, tangent = secant.jvp(secant.grad(newton_sqrt_while), (a,), (v,))
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tangent), _fd_hvp(newton_sqrt_while, a, v), rtol=1e-6)
    jvp_grad = secant.jit(lambda a, v: secant.jvp(secant.grad(newton_sqrt_while), (a,), (v,))[1])
    np.testing.assert_allclose(np.asarray(jvp_grad(a, v)), want, rtol=1e-6)
    hv = _vhv(newton_sqrt_while, v)
    np.testing.assert_allclose(np.asarray(secant.grad(hv)(a)), want, rtol=1e-6)


def test_second_order_source_reads_as_scans(x64):
    """The readable form: the derivative's loop helpers written out as the scans they run."""
    src = secant.source(secant.grad(secant.grad(pendulum_fori)))
    assert "        return (body(i, carry), carry)" in src
    assert "def body_vjp_back(bars, step):" in src
    assert GOLDEN.read_text() == src, "regenerate tests/golden/lax_loops/ if this is intended"
