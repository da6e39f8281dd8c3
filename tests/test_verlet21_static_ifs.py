"""Issue 15: higher derivatives of helpers whose `if` tests a dtype, ndim or size through a call
(a test functionalize cannot prove static), with a loop in each branch. A derivative's forward
`if cond:` appends to its stacks and stays a Python if; its reverse `if cond:` (a zip over the
stacks since lean20r) used to be staged as a lax.cond, and differentiating or re-staging that
cond passed in values bound only on the other path: UnboundLocalError under jit (diff's second
derivative in the spring-chain Verlet test). Now an if on a once-bound name a Python if tested
before stays a Python if, and a variable bound on some paths only and read nowhere after an if
is no operand of its cond. Checked against float64 central differences and eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

from central_differences import grad_fd, hessian_fd
from user_programs.checks import turns


def pairs(n):
    return [(i, i + 1) for i in range(n - 1)]


def chain(x):                     # a dtype test
    if snp.issubdtype(snp.result_type(x), snp.integer):
        out = snp.zeros((), x.dtype)
        for i, j in pairs(snp.shape(x)[0]):
            out = out + x[i] * x[j]
    else:
        out = 0.0
        for i, j in pairs(snp.shape(x)[0]):
            out = out + snp.sin(x[i]) * x[j]
    return out


def rows(x):                      # an ndim test
    if snp.ndim(x) == 1:
        acc = 0.0
        for k in range(snp.shape(x)[0]):
            acc = acc + snp.cos(x[k]) * x[k]
    else:
        acc = 0.0
        for k in range(snp.shape(x)[0]):
            acc = acc + snp.sum(snp.tanh(x[k]))
    return acc


def sized(x):                     # a size test
    if snp.size(x) > 100:
        s = 0.0
        for k, w in enumerate([1.0, 2.0]):
            s = s + w * snp.sum(x[k])
    else:
        s = 0.0
        for k, w in enumerate([1.0, 2.0, 3.0]):
            s = s + w * x[k] ** 3
    return s


def diffsq(q):                    # the library's diff: `if extra._is_bool(...)`
    return snp.sum(snp.diff(q) ** 2)


HELPERS = [chain, rows, sized, diffsq]
# each helper under one of the four compositions below in turn (rows: the third order, diffsq:
# vmap, where each failed); every helper under each under HYPOTHESIS_PROFILE=thorough
UNDER = turns(HELPERS, ["grad_of_grad", "third_order", "hessian", "vmap_of_grad_of_grad"])
X = np.array([0.3, -1.2, 0.7, 1.9])
XS = np.stack([X, 0.5 * X + 0.2])


def grad_norm(f):
    return lambda x: snp.sum(secant.grad(f)(x) ** 2)


@pytest.mark.parametrize("f", UNDER["grad_of_grad"], ids=lambda f: f.__name__)
def test_grad_of_grad_under_jit(x64, f):
    gg = grad_norm(f)
    want = grad_fd(lambda x: float(gg(x)), X)
    np.testing.assert_allclose(secant.grad(gg)(X), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(secant.jit(secant.grad(gg))(X), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", UNDER["third_order"], ids=lambda f: f.__name__)
def test_third_order_under_jit(x64, f):
    # rows: the reverse if of its first derivative, staged, passed the other branch's stacks
    third = lambda x: snp.sum(secant.grad(grad_norm(f))(x))
    want = grad_fd(lambda x: float(third(x)), X, h=1e-5)
    np.testing.assert_allclose(secant.jit(secant.grad(third))(X), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", UNDER["hessian"], ids=lambda f: f.__name__)
def test_hessian_under_jit(x64, f):
    want = hessian_fd(lambda x: float(f(x)), X)
    np.testing.assert_allclose(secant.jit(secant.hessian(f))(X), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", UNDER["vmap_of_grad_of_grad"], ids=lambda f: f.__name__)
def test_vmap_of_grad_of_grad_under_jit(x64, f):
    # diffsq: a slice index carried into the staged cond met vmap ("cannot convert slice")
    gg = grad_norm(f)
    want = np.stack([grad_fd(lambda x: float(gg(x)), x) for x in XS])
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(gg)))(XS), want,
                               rtol=1e-6, atol=1e-7)


def spring_chain(q):
    f = lambda q: snp.sum(snp.diff(q) ** 2)
    return snp.sum(secant.grad(f)(q) ** 2)


def test_spring_chain_closed_form(x64):
    # f = |Dq|^2, grad f = 2 D'D q, |grad f|^2 = 4 q'(D'D)^2 q: its gradient 8 (D'D)^2 q
    q = np.array([0.1, 1.2, 1.9, 3.2])
    d = np.diff(np.eye(4), axis=0)
    want = 8 * np.linalg.matrix_power(d.T @ d, 2) @ q
    np.testing.assert_allclose(secant.jit(secant.grad(spring_chain))(q), want, rtol=1e-12)


# --- user code: a variable bound on some paths only, dead after a traced if ------------------
def shaped(x):
    if x.shape[0] > 2:          # a static test: stays a Python if (t bound only on this path)
        t = x[0] * 3.0
    if snp.sum(x) > 0:          # a traced test: a lax.cond; t is read nowhere after it
        t = snp.sin(x[1])
        y = t * 2.0
    else:
        y = x[1] ** 2
    return y


def closure_scale(x):
    scale = 2.0
    h = lambda y: y * scale     # reads scale when called, after the if: still returned
    if snp.sum(x) > 0:
        scale = 3.0
    return h(x[0]) + x[1]


@pytest.mark.parametrize("f", [shaped, closure_scale], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [[0.5, 1.0], [-0.5, -1.0], [0.5, 1.0, 2.0]], ids=str)
def test_operand_bound_on_some_paths(x64, f, x):
    x = np.array(x)
    np.testing.assert_allclose(secant.jit(f)(x), f(x), rtol=1e-12)
    want = grad_fd(lambda v: float(f(v)), x)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x), want, rtol=1e-6, atol=1e-8)


def test_hessian_through_hstack(x64):
    f = lambda q: snp.sum(snp.hstack([q, q ** 2]) ** 2)      # noqa: E731
    x = np.array([0.3, -1.2, 0.7])
    np.testing.assert_allclose(secant.jacfwd(secant.grad(f))(x),
                               hessian_fd(lambda v: float(f(v)), x), rtol=1e-5, atol=1e-6)
