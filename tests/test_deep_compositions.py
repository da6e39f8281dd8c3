"""The deepest compositions (issue 15, section 4): third to fifth order through a Jacobian's
source form, lax loops lowered for higher orders, and custom_jvp rules, each against float64
finite differences or closed forms.

What they pin down: a derivative never clobbers a variable called `_` that it reads (jacfwd's
`_, columns = columns_of(...)`, a scan's `_, ys`); a helper asking `isinstance(x, (tuple,
list))` gets container cotangents (added leaf by leaf, not concatenated); the cotangent read
by `fields_of` is a container; a lax loop lowered for a higher order keeps the values it passes
apart from its step function's own locals (`carry`, `j`, `_`)."""
import math
import os

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

import composition_sweep_cases as cases

# (tolerance-based checks: XLA's LLVM optimisation off in the default profile, conftest)
pytestmark = pytest.mark.usefixtures("fast_compiles")


def nth_grad(f, n):
    for _ in range(n):
        f = secant.grad(f)
    return f


def fd(f, x, h=1e-4):
    return (f(x + h) - f(x - h)) / (2 * h)


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


# --- the sweep's deepest chains (innermost first), checked one layer deep by the sweep -------
# (helper_call's hessian/hessian/grad, 24 CPU s, is the check test_fifth_order_through_a_helper_
# against_the_fourth makes below: grad of sum(hessian(hessian(helper_call))) at cases.X against
# central differences of the fourth order; under HYPOTHESIS_PROFILE=thorough both run)
_SAME_AS_FIFTH_ORDER = ("helper_call", ("hessian", "hessian", "grad"))


@pytest.mark.parametrize("fname,chain", [
    pytest.param(f, c, id=f"{f}-{'/'.join(c)}") for f, c in cases.DEEP_CHAINS
    if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" or (f, c) != _SAME_AS_FIFTH_ORDER])
def test_deep_sweep_chains(x64, fname, chain):
    cases.check(fname, list(chain))


def test_fifth_order_through_a_helper_against_the_fourth(x64):
    """grad(sum(hessian(hessian(f)))): the item_of helper's cotangent of a tuple, added twice."""
    f = lambda x: cases.helper_call(x, cases.W3)        # noqa: E731
    h4 = secant.hessian(secant.hessian(f))
    g = secant.grad(lambda x: snp.sum(h4(x)))
    x = cases.X
    want = np.array([fd(lambda t: float(np.sum(np.asarray(h4(x + t * e)))), 0.0, 1e-4)
                     for e in np.eye(3)])
    close(g(x), want, rtol=2e-5, atol=1e-6)


# --- a variable called `_` that the function reads -------------------------------------------
def reads_underscore(x):
    _, ys = lax.scan(lambda c, t: (c * snp.sin(t) + t, c * t), 0.5, x)
    return _ * snp.sum(ys)


def test_a_read_underscore_survives_every_order(x64):
    x = np.array([0.3, -0.7, 1.1])
    g = secant.grad(reads_underscore)
    h = secant.hessian(reads_underscore)
    want_h = np.stack([fd(lambda t: np.asarray(g(x + t * e)), 0.0, 1e-5) for e in np.eye(3)])
    close(h(x), want_h, rtol=1e-6)
    close(secant.jacrev(g)(x), want_h, rtol=1e-6)
    g3 = secant.grad(lambda x: snp.sum(h(x)))
    want3 = np.array([fd(lambda t: float(np.sum(np.asarray(h(x + t * e)))), 0.0, 1e-4)
                      for e in np.eye(3)])
    close(g3(x), want3, rtol=1e-5, atol=1e-6)
    close(secant.jit(g3)(x), np.asarray(g3(x)), rtol=1e-12)


# --- fourth order: closed forms, custom_jvp, while loops -------------------------------------
@pytest.mark.parametrize("f,d4", [(snp.sin, math.sin), (lambda x: x ** 5, lambda x: 120 * x),
                                  (snp.exp, math.exp)])
def test_fourth_order_closed_forms(x64, f, d4):
    for x in (0.7, -1.3):
        close(nth_grad(f, 4)(x), d4(x), rtol=1e-12)
        close(secant.jit(nth_grad(f, 4))(x), d4(x), rtol=1e-12)


def test_sinc_fourth_order_at_zero_eager_and_jitted(x64):
    g4 = nth_grad(snp.sinc, 4)
    close(g4(0.0), np.pi ** 4 / 5, rtol=1e-12)
    close(secant.jit(g4)(0.0), np.pi ** 4 / 5, rtol=1e-12)


@secant.custom_jvp
def softplus(x):
    return snp.log(1.0 + snp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return softplus(x), x_dot / (1.0 + snp.exp(-x))


def _sigmoid_derivatives(x):
    """d^1..d^4 of softplus: sigmoid s and its derivatives s', s'', s'''."""
    s = 1.0 / (1.0 + math.exp(-x))
    d1 = s * (1 - s)
    d2 = d1 * (1 - 2 * s)
    d3 = d1 * (1 - 6 * s + 6 * s * s)
    return [s, d1, d2, d3]


@pytest.mark.parametrize("x", [0.0, 0.8, -1.7])
def test_user_custom_jvp_to_the_fourth_order(x64, x):
    want = _sigmoid_derivatives(x)
    for n in range(1, 5):
        close(nth_grad(softplus, n)(x), want[n - 1], rtol=1e-10, atol=1e-12)
    close(secant.jit(nth_grad(softplus, 4))(x), want[3], rtol=1e-10, atol=1e-12)
    close(secant.jacfwd(nth_grad(softplus, 3))(x), want[3], rtol=1e-10, atol=1e-12)


@secant.custom_jvp
def doubled_sin(x):
    return snp.sin(x)


@doubled_sin.defjvp
def _doubled_sin_jvp(primals, tangents):       # twice the true derivative: a rule dropped at
    (x,), (t,) = primals, tangents             # some order shows in the value
    return doubled_sin(x), 2.0 * snp.cos(x) * t


@secant.custom_jvp
def ruled_sin(x):
    return snp.sin(x)


@ruled_sin.defjvp
def _ruled_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return ruled_sin(x), snp.cos(x) * t


def _hessian_of_hessian_sum(g):
    """hessian(lambda x: sum(hessian(f)(x))) for f = sum(g(x) * g(2x)): its diagonal is the
    fourth derivative of g(x) g(2x) at each x (before the fix: vmap of the jvp of
    grad_of_fields_batched read the tuple of tangents' cotangents as an array, a TypeError)."""
    def f(x):
        return snp.sum(g(x) * g(x * 2.0))
    h = secant.hessian(f)
    return secant.hessian(lambda x: snp.sum(h(x)))


def test_hessian_of_a_hessian_through_a_custom_jvp(x64):
    x = np.array([0.3, -0.5, 0.7])
    # the rule's derivatives (JAX's meaning: the rule differentiated again at higher order):
    # doubled_sin^(k) = 2 sin^(k) for k >= 1; d^4 [g(x) g(2x)] by Leibniz's rule
    sin_k = [np.sin, np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v), np.sin]
    for g, c in ((doubled_sin, 2.0), (ruled_sin, 1.0)):
        d = [lambda v, k=k: (c if k else 1.0) * sin_k[k](v) for k in range(5)]
        d4 = sum(math.comb(4, k) * d[k](x) * 2.0 ** (4 - k) * d[4 - k](2 * x) for k in range(5))
        hh = _hessian_of_hessian_sum(g)
        got = hh(x)
        close(got, np.diag(d4), rtol=1e-10, atol=1e-12)
        close(secant.jit(hh)(x), got, rtol=1e-10, atol=1e-12)
    # the true derivative's: against float64 central differences of sum(hessian(f)) written
    # out (d^2 [sin x sin 2x] = (9 cos 3x - cos x) / 2, each x on its own)
    def s(v):
        return np.sum((9.0 * np.cos(3.0 * v) - np.cos(v)) / 2.0)
    h, eye = 1e-3, np.eye(3)
    want = np.array([[(s(x + h * (eye[i] + eye[j])) - s(x + h * (eye[i] - eye[j]))
                       - s(x - h * (eye[i] - eye[j])) + s(x - h * (eye[i] + eye[j]))) / (4 * h * h)
                      for j in range(3)] for i in range(3)])
    close(got, want, rtol=1e-5, atol=1e-6)


def python_while(x):
    n = 0
    while n < 3:
        x = snp.sin(x) * x + 0.5
        n = n + 1
    return x


def lax_while(x):
    return lax.while_loop(lambda c: c[1] < 3, lambda c: (snp.sin(c[0]) * c[0], c[1] + 1),
                          (x, 0))[0]


@pytest.mark.parametrize("f", [python_while, lax_while])
def test_while_loops_to_the_fourth_order_eager_and_jitted(x64, f):
    g3, g4 = nth_grad(f, 3), nth_grad(f, 4)
    for x in (0.7, -0.4):
        eager = float(g4(x))
        close(eager, fd(lambda v: float(g3(v)), x, 1e-5), rtol=1e-5)
        close(secant.jit(g4)(x), eager, rtol=1e-10)


# --- a lowered loop's step function does not shadow what it is passed -----------------------
def closes_over_carry(x):
    carry = x * 0.5
    j = x + 0.25
    return lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * carry + j * c, x)


def closes_over_carry_while(x):
    carry = x * 0.5
    return lax.while_loop(lambda c: c[1] < 3,
                          lambda c: (snp.sin(c[0]) * carry + 0.3 * c[0], c[1] + 1), (x, 0))[0]


@pytest.mark.parametrize("f", [closes_over_carry, closes_over_carry_while])
def test_values_named_like_a_step_local_keep_their_meaning(x64, f):
    g1, g2, g3 = nth_grad(f, 1), nth_grad(f, 2), nth_grad(f, 3)
    for x in (0.6, -0.9):
        close(g2(x), fd(lambda v: float(g1(v)), x, 1e-5), rtol=1e-6)
        got = g3(x)
        close(got, fd(lambda v: float(g2(v)), x, 1e-5), rtol=1e-5)
        close(secant.jit(g3)(x), np.asarray(got), rtol=1e-10)


# --- a nested def reading an enclosing value that its caller's parameter shadows -------------
def shadowed_by_a_parameter(x):
    c = x * 0.5

    def g(y):
        return snp.sin(y) * c

    def h(c):
        return g(c) + c
    return h(x * 2.0)


def shadowed_in_a_scan_step(x):
    c = x * 0.5

    def g(y):
        return snp.sin(y) * c

    def step(c, t):
        return g(c) + t, c
    return lax.scan(step, x, snp.arange(3.0))[0]


def _reference(f):
    """f written without the shadowing (its nested functions' own c renamed d)."""
    def plain(x):
        c = x * 0.5
        if f is shadowed_by_a_parameter:
            return snp.sin(x * 2.0) * c + x * 2.0
        d = x
        for t in range(3):
            d = snp.sin(d) * c + t
        return d
    return plain


@pytest.mark.parametrize("f", [shadowed_by_a_parameter, shadowed_in_a_scan_step])
def test_nested_def_reads_the_enclosing_value_not_the_callers_parameter(x64, f):
    """Was silently wrong under grad, jvp and vmap: g's `c` read as h's parameter `c`."""
    ref = _reference(f)
    xs = np.array([0.7, -0.4])
    for x in xs:
        close(f(x), float(ref(x)), rtol=1e-12)
        close(secant.grad(f)(x), fd(lambda v: float(ref(v)), x, 1e-6), rtol=1e-7)
        close(secant.jvp(f, (x,), (1.0,))[1], np.asarray(secant.grad(f)(x)), rtol=1e-12)
        close(secant.grad(secant.grad(f))(x), fd(lambda v: float(secant.grad(ref)(v)), x, 1e-5),
              rtol=1e-6)
    close(secant.vmap(f)(xs), [float(ref(x)) for x in xs], rtol=1e-12)
    close(secant.jit(secant.grad(f))(0.7), np.asarray(secant.grad(f)(0.7)), rtol=1e-12)
