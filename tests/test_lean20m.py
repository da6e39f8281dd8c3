"""Lean derivatives (issue 20): a field's cotangent read once, by its structure's cotangent
(grad_of_fields(params, {...})), is written as that entry even where the field's rule stands
under another user line's comment (ad/fold.py _entry), as hand-written mlp_loss returns its
dict of gradients; a cotangent read once by any other line of another comment stays a line of
its own. Every source check has a numerical twin: float64 central differences, jit against
eager, vmap against a Python loop."""
import numpy as np

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2023)


def three_layer(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    g = snp.tanh(h @ params["w2"] + params["b2"])
    out = g @ params["w3"] + params["b3"]
    return snp.sum((out - y) ** 2)


def _params():
    sizes = (3, 4, 5, 2)
    out = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]), 1):
        out[f"w{i}"] = RNG.normal(size=(m, n)) / np.sqrt(m)
        out[f"b{i}"] = RNG.normal(size=n)
    return out


def _fd(params, x, y):
    out = {}
    for k in params:
        def f(v, k=k):
            return three_layer({**params, k: v}, x, y)
        out[k] = fd_grad(f, params[k])
    return out


def test_every_field_written_in_the_dict(x64):
    src = secant.source(secant.grad(three_layer))
    lines = [ln.strip() for ln in src.splitlines()]
    for k in ("w1", "b1", "w2", "b2", "w3", "b3"):     # no line of its own: an entry
        assert not any(ln.startswith(f"{k}_bar =") for ln in lines), src
        assert any(ln.startswith(f"'{k}': ") and not ln.startswith(f"'{k}': {k}_bar")
                   for ln in lines), src
    # a cotangent another comment's line (not the dict) reads once keeps its line
    assert any(ln.startswith("g_bar = ") or ln.startswith("h_bar = ") for ln in lines), src
    params, x, y = _params(), RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))
    got = secant.grad(three_layer)(params, x, y)
    want = _fd(params, x, y)
    for k in params:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8)
    jitted = secant.jit(secant.grad(three_layer))(params, x, y)
    for k in params:
        np.testing.assert_allclose(jitted[k], got[k], rtol=1e-12)
    xs = RNG.normal(size=(3, 6, 3))
    batched = secant.vmap(secant.grad(three_layer), in_axes=(None, 0, None))(params, xs, y)
    for b in range(3):
        one = secant.grad(three_layer)(params, xs[b], y)
        for k in params:
            np.testing.assert_allclose(batched[k][b], one[k], rtol=1e-12)


def read_twice(params, x):
    h = snp.tanh(x @ params["w"])
    return snp.sum(h * params["b"]) + snp.sum(params["w"] ** 2)


def test_a_field_read_twice_keeps_its_name(x64):
    params = {"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)}
    x = RNG.normal(size=(5, 3))
    got = secant.grad(read_twice)(params, x)
    for k in params:
        want = fd_grad(lambda v, k=k: read_twice({**params, k: v}, x), params[k])
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)
