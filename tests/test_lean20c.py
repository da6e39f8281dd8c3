"""Lean reverse passes (issue 20): grad's seed read from a parameter's dtype when the output is
provably a scalar of it (transformer/dataflow.py scalar_like), values read for their shape only
read from a parameter of provably the same shape (transformer/shapes.py parameter_like), and
dead-code elimination by liveness (transformer/walker.py), which drops a forward loop whose
values nothing reads.

Every source check has a numerical twin: float64 central differences under grad, jit(grad),
vmap(grad) against a Python loop, and second order."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.default_rng(2020)


def fd_grad(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        out[idx] = (float(f(up)) - float(f(down))) / (2 * eps)
    return out


def polynomial(x):
    return snp.sum(3 * x ** 4 - 2 * x ** 3 + x ** 2 - 5 * x + 7)


def negative_mean(x):
    return -snp.mean(snp.sin(x) * 2.0) + 1.5


def loop(x, n):
    acc = snp.zeros_like(x)
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def scaled(x, k):
    return snp.sum(x * x) * k           # k's shape is unknown: the output may not be a scalar


def halving(x, n):
    i = 0
    while i < n:
        x = 0.9 * x + 0.1 * snp.sin(x)
        i = i + 1
    return snp.sum(x * x)


def code(source):
    """The statements of a generated function, its comments and `def` line left out."""
    return "\n".join(ln for ln in source.splitlines()[1:] if not ln.strip().startswith("#"))


@pytest.mark.parametrize("f", [polynomial, negative_mean])
def test_seed_from_the_parameter_runs_no_forward(x64, f):
    src = code(secant.source(secant.grad(f)))
    assert "grad_seed_like(x)" in src and "grad_seed(" not in src
    assert "snp.sum(" not in src and "snp.mean(" not in src      # the output is not computed
    x = RNG.normal(size=(2, 3))
    g = secant.grad(f)
    want = fd_grad(f, x)
    np.testing.assert_allclose(g(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g)(x), want, rtol=1e-6, atol=1e-8)
    xs = RNG.normal(size=(3, 2, 3))
    np.testing.assert_allclose(secant.vmap(g)(xs), np.stack([g(r) for r in xs]), rtol=1e-12)
    hess = secant.hessian(f)(x[0])
    h_fd = np.stack([fd_grad(lambda v: g(v)[k], x[0]) for k in range(3)])
    np.testing.assert_allclose(hess, h_fd, rtol=1e-5, atol=1e-6)


def test_seed_keeps_the_outputs_dtype_and_checks():
    x = RNG.normal(size=4).astype(np.float32)
    assert secant.grad(polynomial)(x).dtype == np.float32
    assert secant.jit(secant.grad(polynomial))(x).dtype == np.float32
    with pytest.raises(secant.SecantError, match="real-valued outputs"):
        secant.grad(polynomial)(x.astype(np.complex64))


def test_seed_kept_where_the_output_may_not_be_a_scalar(x64):
    src = secant.source(secant.grad(scaled))
    # (the seed checks k's shape, the output not computed for it: tests/test_lean20z_seed.py)
    assert "grad_seed_scaled(x, k)" in src and "grad_seed_like" not in src, src
    x = RNG.normal(size=3)
    np.testing.assert_allclose(secant.grad(scaled)(x, 2.5), fd_grad(lambda v: scaled(v, 2.5), x),
                               rtol=1e-6)
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.grad(scaled)(x, np.ones(2))


def test_dead_forward_loop_is_dropped(x64):
    src = secant.source(secant.grad(loop))
    forward = src.split("# Grad of")[0].split("\n", 1)[1]
    assert "for " not in forward and "acc" not in forward, src
    x = RNG.normal(size=3)
    for n in (0, 1, 4):
        want = fd_grad(lambda v: loop(v, n), x)
        np.testing.assert_allclose(secant.grad(loop)(x, n), want, rtol=1e-6, atol=1e-8)
    xs = RNG.normal(size=(2, 3))
    g = secant.grad(loop)
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None))(xs, 3),
                               np.stack([g(r, 3) for r in xs]), rtol=1e-12)


def test_live_forward_loop_and_its_counters_are_kept(x64):
    src = secant.source(secant.grad(halving))
    assert "while " in src and "for x in reversed(x_stack):" in src
    x = RNG.normal(size=3)
    for n in (0, 1, 5):
        want = fd_grad(lambda v: halving(v, n), x)
        np.testing.assert_allclose(secant.grad(halving)(x, n), want, rtol=1e-6, atol=1e-8)


# --- a callee's vjp takes the output its caller computed -----------------------------------------
def _layer(x, w, b):
    return snp.tanh(x @ w + b)


def _pair(x, w):
    s = snp.sin(x * w)
    return s * w, snp.exp(s)


def layered(w, b, x):
    h = _layer(x, w, b)
    return snp.sum(_layer(h, w, b) ** 2)


def paired(w, x):
    a, e = _pair(x, w)
    c, d = _pair(a, w)
    return snp.sum(a * e + c * d)


def gaussian(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma - 0.5 * snp.log(2 * snp.pi))


def test_callee_vjp_reads_the_callers_output(x64):
    g = secant.grad(layered)
    src = secant.source(g)
    # _layer's vjp, written in place (test_lean20n), reads the output its caller computed:
    # tanh's rule on _layer_out, no tanh computed again
    assert "(1 - _layer_out ** 2)" in src and "tanh" not in src.split("# Grad of")[1], src
    w, b, x = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3) * 0.1, RNG.normal(size=(4, 3))
    f = lambda v: layered(v, b, x)      # noqa: E731
    want = fd_grad(f, w)
    np.testing.assert_allclose(g(w, b, x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g)(w, b, x), want, rtol=1e-6, atol=1e-8)
    ws = RNG.normal(size=(2, 3, 3)) * 0.5
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None, None))(ws, b, x),
                               np.stack([g(v, b, x) for v in ws]), rtol=1e-12)
    hess = secant.hessian(lambda v: layered(v, b, x))(w)
    h_fd = fd_grad(lambda v: g(v, b, x)[0, 1], w)
    np.testing.assert_allclose(hess[0, 1], h_fd, rtol=1e-5, atol=1e-6)


def test_callee_returning_a_tuple(x64):
    g = secant.grad(paired)
    x = RNG.normal(size=4)
    w = 0.7
    np.testing.assert_allclose(g(w, x), fd_grad(lambda v: paired(v, x), np.array(w)), rtol=1e-6)
    np.testing.assert_allclose(secant.jacrev(g)(w, x),
                               fd_grad(lambda v: g(v, x), np.array(w)), rtol=1e-5)


def test_seed_from_a_value_sharing_the_outputs_symbols(x64):
    g = secant.grad(gaussian)
    src = code(secant.source(g))
    assert "grad_seed_like(z)" in src and "snp.sum(" not in src
    mu, ls, x = RNG.normal(size=3), RNG.normal(size=3) * 0.3, RNG.normal(size=(5, 3))
    np.testing.assert_allclose(g(mu, ls, x), fd_grad(lambda v: gaussian(v, ls, x), mu),
                               rtol=1e-6)
    assert secant.grad(gaussian)(*(a.astype(np.float32) for a in (mu, ls, x))).dtype == \
        np.float32
    # x an integer array: the output is still float (mu's dtype): the seed is read from z
    xi = np.arange(15).reshape(5, 3)
    np.testing.assert_allclose(g(mu, ls, xi), fd_grad(lambda v: gaussian(v, ls, xi), mu),
                               rtol=1e-6)
