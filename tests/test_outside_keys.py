"""params[key] with the key read from outside the function - a closure, a global, a parameter,
an attribute of one - indexes a dict or a list as often as an array: its cotangent is built by
add_at, which asks when the code runs (was `snp.zeros_like(params).at[key]`: a SecantTypeError
for a dict). Checked against float64 central finite differences (grad, jit(grad), jvp) and a
Python loop (vmap, vmap(grad)). The functions live at module level: the transforms read their
source."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

KEY = "w"


def make_loss(key):
    def loss(params, x):
        return snp.sum(snp.sin(params[key] * x))
    return loss


closure_key = make_loss("w")


def global_key(params, x):
    return snp.sum(snp.sin(params[KEY] * x))


def param_key(params, x, key="w"):
    return snp.sum(snp.sin(params[key] * x))


class Named:
    def __init__(self, name):
        self.name = name

    def __call__(self, params, x):
        return snp.sum(snp.sin(params[self.name] * x))


attribute_key = Named("w")


def inner(q, x):
    return snp.sum(q["w"] ** 2 * x) * q["b"]


def key_of_a_derivative(params, x, key="w"):
    return snp.sum(secant.grad(inner)(params, x)[key] * x)


FUNCTIONS = [closure_key, global_key, param_key, lambda p, x: attribute_key(p, x),
             key_of_a_derivative]
IDS = ["closure", "global", "parameter", "attribute", "derivative"]
P = {"w": np.array([0.3, -0.4]), "b": np.float64(1.5)}
X = np.array([1.0, 2.0])


def _fd(f, p, x, h=1e-6):
    out = {}
    for k, v in p.items():
        flat = np.array(v, dtype=np.float64).reshape(-1)
        g = np.zeros_like(flat)
        for j in range(flat.size):
            up, down = flat.copy(), flat.copy()
            up[j] += h
            down[j] -= h
            fu = f({**p, k: up.reshape(np.shape(v))}, x)
            fd = f({**p, k: down.reshape(np.shape(v))}, x)
            g[j] = (float(fu) - float(fd)) / (2 * h)
        out[k] = g.reshape(np.shape(v))
    return out


def _close(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_grad_jit_grad_jvp(f, x64):
    want = _fd(f, P, X)
    _close(secant.grad(f)(P, X), want)
    _close(secant.jit(secant.grad(f))(P, X), want)
    tangent = {"w": np.array([1.0, 0.5]), "b": np.float64(-1.0)}
    _, t = secant.jvp(lambda p: f(p, X), (P,), (tangent,))
    np.testing.assert_allclose(float(t), sum(np.sum(want[k] * tangent[k]) for k in want),
                               rtol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_vmap_and_vmap_grad(f, x64):
    xs = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.1]])
    np.testing.assert_allclose(np.asarray(secant.vmap(f, (None, 0))(P, xs)),
                               [float(f(P, x)) for x in xs], rtol=1e-12)
    got = secant.vmap(secant.grad(f), (None, 0))(P, xs)
    for k in P:
        np.testing.assert_allclose(np.asarray(got[k]), [_fd(f, P, x)[k] for x in xs],
                                   rtol=1e-6, atol=1e-8)


def item(xs, i):
    return snp.sin(xs[i]) * xs[0]


def test_an_int_key_into_a_list_gives_a_list(x64):
    """grad in a list indexed by a parameter: a list of cotangents, as JAX returns."""
    xs = [np.float64(0.3), np.float64(0.7)]
    g = secant.grad(item)(xs, 1)
    assert isinstance(g, list) and len(g) == 2
    np.testing.assert_allclose([float(v) for v in g], [np.sin(0.7), np.cos(0.7) * 0.3],
                               rtol=1e-12)
    a = np.array([0.3, 0.7])
    np.testing.assert_allclose(secant.grad(item)(a, 1), [np.sin(0.7), np.cos(0.7) * 0.3],
                               rtol=1e-12)
    np.testing.assert_allclose(                 # a batched index: each example's own item
        secant.vmap(secant.grad(item), (None, 0))(a, np.array([0, 1, 1])),
        [[np.sin(0.3) + np.cos(0.3) * 0.3, 0.0]] + [[np.sin(0.7), np.cos(0.7) * 0.3]] * 2,
        rtol=1e-12)
