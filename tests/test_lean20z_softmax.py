"""Issue 20 (lean20z): softmax and log-softmax written out (e = exp(u); s = sum(e, axis=A,
keepdims=True); then e / s, or u - log(s)) take one rule that reads their result alone
(transformer/dataflow.py normalised_exps, ad/vjp_rules.py NORMALISED_VJP):
softmax u_bar = a * (a_bar - sum(a_bar * a, A)), log-softmax u_bar = l_bar - sum(l_bar, A) *
exp(l). The exp and the sum are then not kept for the reverse pass (they fold into the forward
line that reads them). Values against float64 central differences, a Python loop and eager."""
import os
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.codegen.program import program
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import lean  # noqa: E402
import lean_functions as funcs  # noqa: E402

RNG = np.random.default_rng(2026)


def _statements(f):
    return sum(lean.count_statements(t) for _, t in program(secant.grad(f)))


@pytest.mark.parametrize("name, count", [("softmax_xent", 4), ("attention", 11),
                                         ("mlp_loss", 12)])
def test_bench_statement_counts(name, count, x64):
    f = getattr(funcs, name)
    assert _statements(f) == count, secant.source(secant.grad(f))
    args = funcs.inputs(name, RNG, np.float64, small=True)
    got = secant.grad(f)(*args)
    if name == "mlp_loss":
        for k, v in args[0].items():
            np.testing.assert_allclose(np.asarray(got[k]), fd_grad(
                lambda w, k=k: f({**args[0], k: w}, *args[1:]), v), rtol=1e-5, atol=1e-7)
        return
    np.testing.assert_allclose(np.asarray(got), fd_grad(lambda v: f(v, *args[1:]), args[0]),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(*args)), np.asarray(got),
                               rtol=1e-10, atol=1e-12)


def test_sources_read_the_normalised_value():
    src = secant.source(secant.grad(funcs.softmax_xent))
    assert "return logp_bar - snp.sum(logp_bar, axis=-1, keepdims=True) * snp.exp(logp)" in src
    assert "exp_z =" not in src and "sum_exp_z" not in src, src
    src = secant.source(secant.grad(funcs.attention))
    assert "a * (a_bar - snp.sum(a_bar * a, axis=-1, keepdims=True))" in src, src
    assert "a = e / snp.sum(e, axis=-1, keepdims=True)" in src and "sum_e" not in src, src


def log_softmax_axis0(x, w):
    z = x - snp.max(x, axis=0, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=0, keepdims=True))
    return snp.sum(w * logp)


def log_softmax_all(x, w):                  # (no axis: every axis, kept)
    logp = x - snp.log(snp.sum(snp.exp(x), keepdims=True))
    return snp.sum(w * logp * logp)


def softmax_axis0(x, w):                    # (no shift; the quotient squared)
    e = snp.exp(x)
    a = e / snp.sum(e, axis=0, keepdims=True)
    return snp.sum(w * a * a)


def softmax_input_read_again(x, w):         # (u read by the exp and by the output)
    u = snp.sin(x)
    e = snp.exp(u)
    a = e / snp.sum(e, axis=-1, keepdims=True)
    return snp.sum(w * a) + snp.sum(u * u)


def log_softmax_3d(x, w):
    logp = x - snp.log(snp.sum(snp.exp(x), axis=(0, 2), keepdims=True))
    return snp.sum(snp.tanh(logp) * w)


NORMALISED = [log_softmax_axis0, log_softmax_all, softmax_axis0, softmax_input_read_again,
              log_softmax_3d]


def _args(f):
    shape = (2, 3, 4) if f is log_softmax_3d else (3, 4)
    return RNG.normal(size=shape), RNG.normal(size=shape)


@pytest.mark.parametrize("f", NORMALISED)
def test_normalised_values_against_float64_differences(f, x64):
    src = secant.source(secant.grad(f))
    assert "snp.sum(" in src and ("* snp.exp(logp)" in src or "a * (a_bar - " in src), src
    x, w = _args(f)
    g = secant.grad(f)
    want = fd_grad(lambda v: f(v, w), x)
    np.testing.assert_allclose(np.asarray(g(x, w)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(x, w)), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", NORMALISED)
def test_normalised_second_order_and_vmap(f, x64):
    x, w = _args(f)
    g = secant.grad(f)
    hess = np.asarray(secant.hessian(f)(x, w))
    idx = (1,) * x.ndim
    np.testing.assert_allclose(hess[idx], fd_grad(lambda v: np.asarray(g(v, w))[idx], x),
                               rtol=1e-5, atol=1e-6)
    xs = RNG.normal(size=(3,) + x.shape)
    batched = np.asarray(secant.vmap(g, in_axes=(0, None))(xs, w))
    for b in range(3):
        np.testing.assert_allclose(batched[b], np.asarray(g(xs[b], w)), rtol=1e-10, atol=1e-12)
    jitted = np.asarray(secant.jit(secant.vmap(g, in_axes=(0, None)))(xs, w))
    np.testing.assert_allclose(jitted, batched, rtol=1e-10, atol=1e-12)


def exp_read_elsewhere(x):                  # (e read by the output too: not the pattern)
    e = snp.exp(x)
    a = e / snp.sum(e, axis=-1, keepdims=True)
    return snp.sum(a * a) + snp.sum(e)


def sum_read_elsewhere(x):                  # (s read by the output too)
    s = snp.sum(snp.exp(x), axis=-1, keepdims=True)
    logp = x - snp.log(s)
    return snp.sum(logp * logp) + snp.sum(s)


def sum_without_kept_dims(x):               # (a column sum of a row vector's exp)
    e = snp.exp(x)
    return snp.sum(e / snp.sum(e, axis=0) * x)


def other_operand_order(x):                 # (s / e is no softmax)
    e = snp.exp(x)
    return snp.sum(snp.sum(e, axis=-1, keepdims=True) / e)


@pytest.mark.parametrize("f", [exp_read_elsewhere, sum_read_elsewhere, sum_without_kept_dims,
                               other_operand_order])
def test_other_chains_keep_their_op_rules(f, x64):
    src = secant.source(secant.grad(f))
    assert "* snp.exp(logp)" not in src and " * (a_bar - snp.sum(" not in src, src
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), fd_grad(f, x), rtol=1e-6,
                               atol=1e-8)


def test_float32_softmax_keeps_its_dtype(x64):
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    w = RNG.normal(size=(3, 4)).astype(np.float32)
    got = secant.grad(softmax_axis0)(x, w)
    assert np.asarray(got).dtype == np.float32
    want = fd_grad(lambda v: softmax_axis0(v, w.astype(np.float64)), x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-4)

