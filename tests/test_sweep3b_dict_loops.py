"""Loops over a dict of parameters, as JAX users write them (an L2 penalty, a layer per key):
`for k in params: ... params[k]`, `sum(... for k in p)`, `for k in p.keys()`, `p.items()`,
`p.values()`. The loop's keys are Python values (a key is never differentiated nor batched);
they were read as the dict's differentiated or batched items ("an index computed from
differentiated values", KeyError 0, unhashable slice). Against float64 finite differences
and a Python loop over the examples."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def l2_generator(p):
    return sum(snp.sum(p[k] ** 2) for k in p)


def l2_loop(p):
    t = 0.0
    for k in p:
        t = t + snp.sum(snp.sin(p[k]) * p[k])
    return t


def l2_keys(p):
    t = 0.0
    for k in p.keys():
        t = t + snp.sum(p[k] ** 3)
    return t


def l2_items(p):
    t = 0.0
    for k, v in p.items():
        t = t + snp.sum(snp.cos(v)) * len(k)
    return t


def l2_values(p):
    t = 0.0
    for v in p.values():
        t = t + snp.sum(v * v * v)
    return t


def layers(x, p):
    y = x
    for name in p:
        y = snp.tanh(y * p[name])
    return snp.sum(y)


FUNCS = [l2_generator, l2_loop, l2_keys, l2_items, l2_values]
P = {"W": np.array([[0.3, -0.5], [1.1, 0.2]]), "bias": np.array([0.7, -0.4])}


def np_tree(p):
    return {k: np.asarray(v, dtype=np.float64) for k, v in p.items()}


def fd_grad(f, p, h=1e-6):
    out = {}
    for k, v in p.items():
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            e = np.zeros_like(v)
            e[i] = h
            g[i] = (float(f({**p, k: v + e})) - float(f({**p, k: v - e}))) / (2 * h)
        out[k] = g
    return out


@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
def test_grad_over_dict_loops_against_finite_differences(x64, f):
    got = secant.grad(f)(P)
    want = fd_grad(f, P)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
def test_vmap_over_dict_loops_against_a_loop(x64, f):
    batch = {"W": np.stack([P["W"], P["W"] * 0.5]), "bias": np.stack([P["bias"], -P["bias"]])}
    got = secant.vmap(f)(batch)
    want = [float(f({k: v[i] for k, v in batch.items()})) for i in range(2)]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)


def test_grad_and_vmap_of_layers_keyed_by_name(x64):
    x = np.array([0.4, -0.9])
    p = {"a": np.array([0.5, 1.2]), "b": np.array([-0.8, 0.3])}
    got = secant.grad(layers, 1)(x, p)
    want = fd_grad(lambda q: layers(x, q), p)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-6, atol=1e-8)
    xs = np.stack([x, x * 2.0])
    got = secant.vmap(secant.grad(layers, 1), (0, None))(xs, p)
    for i, xi in enumerate(xs):
        want = fd_grad(lambda q: layers(xi, q), p)
        for k in p:
            np.testing.assert_allclose(np.asarray(got[k][i]), want[k], rtol=1e-6, atol=1e-8)
