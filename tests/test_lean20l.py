"""Lean derivatives (issue 20): a value the outputs provably do not depend on has no cotangent
written (transformer/dataflow.py shift_only). Softmax's and log-softmax's stabilising max,
m = max(x, axis, keepdims=True) in x - m, changes what reads it by a shift along that axis that
z - log(sum(exp(z))) and exp(z) / sum(exp(z)) cancel: its cotangent is zero, and the
derivative leaves out the max's rule (extremum_grad), as the hand-written gradient does and as
JAX's log_softmax stops its gradient. Where the shift does not cancel, the max's rule stays.
Every source check has a numerical twin: float64 central differences, jit against eager, vmap
against a Python loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2026)


def xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def attention_like(s, v):
    e = snp.exp(s - snp.max(s, axis=1, keepdims=True))
    a = e / snp.sum(e, axis=1, keepdims=True)
    out = a @ v
    return snp.sum(out * out)


def centred_softmax(x, w):
    e = snp.exp(x - snp.mean(x, axis=0, keepdims=True))
    return snp.sum(w * (e / snp.sum(e, axis=0, keepdims=True)))


def min_shifted_logsumexp(x):
    z = x - snp.min(x, axis=-1, keepdims=True)
    lse = snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return snp.sum((z - lse) * (z - lse))


# the shift does not cancel: the max's rule must stay (its cotangent is not zero)
def squared_shift(x):
    z = x - snp.max(x, axis=-1, keepdims=True)
    return snp.sum(z * z)


def unnormalised(x):
    return snp.sum(snp.exp(x - snp.max(x, axis=-1, keepdims=True)))


def other_axis(x):
    e = snp.exp(x - snp.max(x, axis=-1, keepdims=True))
    return snp.sum(snp.log(e / snp.sum(e, axis=0, keepdims=True)) ** 2)


def shift_returned_too(x):
    z = x - snp.max(x, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return snp.sum(logp * logp) + 0.5 * snp.sum(z)


def max_read_again(x):
    m = snp.max(x, axis=-1, keepdims=True)
    z = x - m
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return snp.sum(logp * logp) + snp.sum(m * m)


def shift_in_a_loop(x):
    z = x - snp.max(x, axis=-1, keepdims=True)
    acc = snp.zeros_like(x)
    for _ in range(2):
        acc = acc + z
    return snp.sum(acc * acc)


def _check(f, *args, wrt_shape=None):
    got = secant.grad(f)(*args)
    want = fd_grad(lambda v: f(v, *args[1:]), args[0])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(*args), got, rtol=1e-10, atol=1e-12)
    return got


def test_softmax_cross_entropy_without_the_max_rule(x64):
    src = secant.source(secant.grad(xent))
    assert "extremum_grad" not in src and "max_logits_bar" not in src, src
    assert src.rstrip().endswith(      # (log-softmax's rule: tests/test_lean20z_softmax.py)
        "return logp_bar - snp.sum(logp_bar, axis=-1, keepdims=True) * snp.exp(logp)"), src
    logits = RNG.normal(size=(5, 4))
    labels = np.eye(4)[RNG.integers(0, 4, 5)]
    got = _check(xent, logits, labels)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(got, (p - labels) / 5, rtol=1e-12, atol=1e-14)
    batch = RNG.normal(size=(3, 5, 4))
    batched = secant.vmap(secant.grad(xent), in_axes=(0, None))(batch, labels)
    for b in range(3):
        np.testing.assert_allclose(batched[b], secant.grad(xent)(batch[b], labels),
                                   rtol=1e-12, atol=1e-14)


def test_attention_softmax_without_the_max_rule(x64):
    src = secant.source(secant.grad(attention_like))
    assert "extremum_grad" not in src and "    max_s_bar =" not in src, src
    assert src.rstrip().endswith(      # (softmax's rule: tests/test_lean20z_softmax.py)
        "return a * (a_bar - snp.sum(a_bar * a, axis=1, keepdims=True))"), src
    s, v = RNG.normal(size=(4, 4)), RNG.normal(size=(4, 3))
    _check(attention_like, s, v)


@pytest.mark.parametrize("f", [centred_softmax, min_shifted_logsumexp])
def test_other_shifts_that_cancel(f, x64):
    src = secant.source(secant.grad(f))
    assert "extremum_grad" not in src and "mean_grad" not in src, src
    args = (RNG.normal(size=(4, 3)),) + ((RNG.normal(size=(4, 3)),) if f is centred_softmax
                                          else ())
    _check(f, *args)


@pytest.mark.parametrize("f", [squared_shift, unnormalised, other_axis, shift_returned_too,
                               max_read_again, shift_in_a_loop])
def test_shifts_that_do_not_cancel_keep_the_max_rule(f, x64):
    src = secant.source(secant.grad(f))
    assert "extremum_grad" in src, src
    _check(f, RNG.normal(size=(3, 4)))


def test_float32_values_against_float64(x64):
    logits = RNG.normal(size=(6, 5)).astype(np.float32)
    labels = np.eye(5, dtype=np.float32)[RNG.integers(0, 5, 6)]
    got = secant.grad(xent)(logits, labels)
    assert got.dtype == np.float32
    want = fd_grad(lambda v: xent(v, labels.astype(np.float64)), logits.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def with_aux(x):
    z = x - snp.max(x, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return snp.sum(logp * logp), z


def test_an_aux_output_reading_the_shift_keeps_the_max_rule(x64):
    g = secant.grad(with_aux, has_aux=True)
    assert "extremum_grad" in secant.source(g), secant.source(g)
    x = RNG.normal(size=(3, 4))
    got, aux = g(x)
    np.testing.assert_allclose(got, fd_grad(lambda v: with_aux(v)[0], x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(aux, x - x.max(-1, keepdims=True), rtol=1e-12)


def test_second_order_through_the_lean_gradient(x64):
    x, labels = RNG.normal(size=(2, 3)), np.eye(3)[[0, 2]]
    g = secant.grad(xent)
    eps, want = 1e-6, np.zeros((2, 3, 2, 3))
    for i in np.ndindex(2, 3):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        want[(...,) + i] = (np.asarray(g(up, labels)) - np.asarray(g(down, labels))) / (2 * eps)
    for jac in (secant.jacfwd, secant.jacrev):
        np.testing.assert_allclose(jac(g)(x, labels), want, rtol=1e-6, atol=1e-8)
