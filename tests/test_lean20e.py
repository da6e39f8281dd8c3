"""Lean derivatives (issue 20), this step: a derivative transformed again (grad of grad, vmap of
grad, jvp of grad) reads the lines before folding (ad/fold.py), so the next order names each
value as the first order did (`om_sq_bar`), never after a call (`unbroadcast_out`), while
`secant.source` of the first order shows the folded text it runs.

Every source check has a numerical twin: float64 central differences of the first derivative,
vmap(grad) against a Python loop."""
import re

import numpy as np

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2021)
# a name made after a derivative helper's call, not after the user's variable
_HELPER_NAMED = re.compile(r"\b(unbroadcast|unreduce|grad_seed|mean_grad)\w*_out(_\d+)?\b")


def energy(x):
    th = snp.tanh(x)
    om = snp.sin(x)
    return snp.sum(th ** 2 + om ** 2)


def mse(w, x, y):
    err = x @ w - y
    return snp.mean(err * err)


def test_first_order_shows_the_folded_text(x64):
    src = secant.source(secant.grad(energy))
    # the seed is written in its one use
    assert "th_sq_plus_om_sq_bar = unreduce(grad_seed_like(x), x)" in src, src


def test_second_order_names_come_from_the_first_orders_variables(x64):
    gg = secant.grad(lambda x: snp.sum(secant.grad(energy)(x) ** 2))
    src = secant.source(secant.grad(secant.grad(energy)))
    assert not _HELPER_NAMED.search(src), src
    assert "sum_th_sq_plus_om_sq_bar = grad_seed_like(x)" in src, src   # as the first order
    assert "unreduce_vjp(th_sq_plus_om_sq_bar_bar, sum_th_sq_plus_om_sq_bar, x)" in src, src
    x = RNG.normal(size=4)
    np.testing.assert_allclose(gg(x), fd_grad(lambda x: np.sum(np.asarray(
        secant.grad(energy)(x)) ** 2), x), rtol=1e-6, atol=1e-8)
    # the second order of the folded first order: the same numbers eagerly and under jit
    hvp = secant.grad(lambda x: snp.vdot(secant.grad(energy)(x), snp.ones(4)))
    want = fd_grad(lambda x: np.sum(np.asarray(secant.grad(energy)(x))), x)
    np.testing.assert_allclose(hvp(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(hvp)(x), want, rtol=1e-6, atol=1e-8)


def test_vmap_of_grad_names_come_from_the_first_orders_variables(x64):
    g = secant.grad(mse)
    batched = secant.vmap(g, in_axes=(None, 0, 0))
    src = secant.source(batched)
    assert not _HELPER_NAMED.search(src), src
    assert "err_sq_bar = mean_grad_vmap(" in src, src
    w, xs, ys = RNG.normal(size=3), RNG.normal(size=(5, 4, 3)), RNG.normal(size=(5, 4))
    loop = np.stack([np.asarray(g(w, x, y)) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(batched(w, xs, ys), loop, rtol=1e-10)
    for x, y, row in zip(xs, ys, loop):
        np.testing.assert_allclose(row, fd_grad(lambda w: mse(w, x, y), w), rtol=1e-6)


def test_jvp_of_grad_reads_the_unfolded_lines(x64):
    gen = secant.grad(energy).__secant_generated__
    canonical = "\n".join(gen.__secant_source__.lines)
    seed = "sum_th_sq_plus_om_sq_bar = grad_seed_like(x)"
    assert seed in canonical, canonical      # what a transform reads
    assert seed not in secant.source(secant.grad(energy))     # what runs
    x, v = RNG.normal(size=3), RNG.normal(size=3)
    _, tangent = secant.jvp(secant.grad(energy), (x,), (v,))
    want = (np.asarray(secant.grad(energy)(x + 1e-6 * v)) -
            np.asarray(secant.grad(energy)(x - 1e-6 * v))) / 2e-6
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)
