"""Gradients of models whose parameters are a list of (w, b) pairs, written the ways users
coming from JAX write them: `for w, b in params`, `for layer in params`, an index loop with
`w, b = params[i]`, nested unpacking, and `sum(... for w, _ in params)` for an L2 term. Each is
checked against finite differences and against the same model written with explicit names,
eagerly and under jit; the gradient has the params' structure (a list of tuples)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def make_params(dtype=np.float64, sizes=(3, 4, 4, 2), seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(m, n)).astype(dtype) / np.sqrt(m), rng.normal(size=n).astype(dtype))
            for m, n in zip(sizes[:-1], sizes[1:])]


def make_x(dtype=np.float64, seed=1):
    return np.random.default_rng(seed).normal(size=(5, 3)).astype(dtype)


def explicit(params, x):
    (w1, b1), (w2, b2), (w3, b3) = params[0], params[1], params[2]
    h = snp.tanh(x @ w1 + b1)
    h = snp.tanh(h @ w2 + b2)
    out = h @ w3 + b3
    l2 = snp.sum(w1 * w1) + snp.sum(w2 * w2) + snp.sum(w3 * w3)
    return snp.mean(out ** 2) + 0.1 * l2


def pairs_loop(params, x):
    for w, b in params[:-1]:
        x = snp.tanh(x @ w + b)
    w, b = params[-1]
    out = x @ w + b
    return snp.mean(out ** 2) + 0.1 * sum(snp.sum(w * w) for w, _ in params)


def layer_loop(params, x):
    n = len(params)
    k = 0
    l2 = 0.0
    for layer in params:
        if k < n - 1:
            x = snp.tanh(x @ layer[0] + layer[1])
        else:
            x = x @ layer[0] + layer[1]
        l2 = l2 + snp.sum(layer[0] * layer[0])
        k = k + 1
    return snp.mean(x ** 2) + 0.1 * l2


def index_loop(params, x):
    for i in range(len(params) - 1):
        w, _ = params[i][0], None
        _, b = params[i]
        x = snp.tanh(x @ w + b)
    l2 = 0.0
    for i in range(len(params)):
        w, _ = params[i]
        l2 = l2 + snp.sum(w * w)
    w, b = params[len(params) - 1]
    return snp.mean((x @ w + b) ** 2) + 0.1 * l2


def nested_unpack(params, x):
    (w1, b1), (w2, b2), (w3, b3) = params
    h = snp.tanh(x @ w1 + b1)
    h = snp.tanh(h @ w2 + b2)
    return snp.mean((h @ w3 + b3) ** 2) + 0.1 * sum([snp.sum(w * w) for w, b in params])


MODELS = [pairs_loop, layer_loop, index_loop, nested_unpack]


def numeric_grad(f, params, x, eps=1e-6):
    out = []
    for li, layer in enumerate(params):
        grads = []
        for ai, a in enumerate(layer):
            g = np.zeros_like(a)
            for idx in np.ndindex(a.shape):
                def at(delta):
                    p = [list(lay) for lay in params]
                    p[li][ai] = a.copy()
                    p[li][ai][idx] += delta
                    return float(f([tuple(lay) for lay in p], x))
                g[idx] = (at(eps) - at(-eps)) / (2 * eps)
            grads.append(g)
        out.append(tuple(grads))
    return out


def assert_tree_close(got, want, **tol):
    assert type(got) is list and len(got) == len(want)
    for g_layer, w_layer in zip(got, want):
        assert type(g_layer) is tuple and len(g_layer) == len(w_layer)
        for g, w in zip(g_layer, w_layer):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), **tol)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_grad_matches_finite_differences(model, x64):
    params, x = make_params(), make_x()
    np.testing.assert_allclose(float(model(params, x)), float(explicit(params, x)), rtol=1e-12)
    got = secant.grad(model)(params, x)
    assert_tree_close(got, numeric_grad(model, params, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_grad_matches_explicit_names_eager_and_jit(model):
    params, x = make_params(np.float32), make_x(np.float32)
    want = secant.grad(explicit)(params, x)
    assert_tree_close(secant.grad(model)(params, x), want, rtol=1e-5, atol=1e-6)
    assert_tree_close(secant.jit(secant.grad(model))(params, x), want, rtol=1e-5, atol=1e-6)
    value, grads = secant.value_and_grad(model)(params, x)
    np.testing.assert_allclose(float(value), float(explicit(params, x)), rtol=1e-5)
    assert_tree_close(grads, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_jvp_matches_explicit_names(model):
    params, x = make_params(np.float32), make_x(np.float32)
    tangent = make_params(np.float32, seed=7)
    out, out_dot = secant.jvp(model, (params, x), (tangent, np.zeros_like(x)))
    want, want_dot = secant.jvp(explicit, (params, x), (tangent, np.zeros_like(x)))
    np.testing.assert_allclose(float(out), float(want), rtol=1e-5)
    np.testing.assert_allclose(float(out_dot), float(want_dot), rtol=1e-4)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_vmap_of_the_model(model):
    params, xs = make_params(np.float32), make_x(np.float32)[:, None, :]
    got = secant.vmap(model, in_axes=(None, 0))(params, xs)
    want = [float(explicit(params, x)) for x in xs]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_per_example_grads_of_nested_unpacking():
    params, xs = make_params(np.float32), make_x(np.float32)[:, None, :]
    got = secant.vmap(secant.grad(nested_unpack), in_axes=(None, 0))(params, xs)
    for k, x in enumerate(xs):
        one = secant.grad(explicit)(params, x)
        assert_tree_close([tuple(np.asarray(a)[k] for a in layer) for layer in got], one,
                          rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_per_example_grads_through_a_loop(model, x64):
    # the derivative's reverse pass replays the loop from a stack of batched values
    params, xs = make_params(), make_x()[:, None, :]
    for g in (secant.vmap(secant.grad(model), in_axes=(None, 0)),
              secant.jit(secant.vmap(secant.grad(model), in_axes=(None, 0)))):
        got = g(params, xs)
        for k, x in enumerate(xs):
            assert_tree_close([tuple(np.asarray(a)[k] for a in layer) for layer in got],
                              secant.grad(model)(params, x), rtol=1e-10, atol=1e-12)


def test_loop_over_a_list_of_arrays_keeps_a_list():
    ws = [np.ones((2, 2), np.float32), np.ones((3,), np.float32)]

    def f(ws):
        total = 0.0
        for v in ws:
            total = total + snp.sum(v * v)
        return total
    g = secant.grad(f)(ws)
    assert type(g) is list and [np.shape(a) for a in g] == [(2, 2), (3,)]
    np.testing.assert_allclose(np.asarray(g[1]), 2 * ws[1])
    g = secant.jit(secant.grad(f))(ws)
    np.testing.assert_allclose(np.asarray(g[0]), 2 * ws[0])


def test_loop_over_an_array_iterates_its_rows():
    def h(x):
        total = 0.0
        for row in x:
            total = total + snp.sum(row * row)
        return total
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(np.asarray(secant.grad(h)(x)), 2 * x)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(h))(x)), 2 * x)


def test_index_loop_over_an_array_keeps_the_array_idiom():
    def h(x):
        total = 0.0
        for i in range(x.shape[0]):
            total = total + snp.sum(x[i] * x[i])
        return total
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(np.asarray(secant.grad(h)(x)), 2 * x)
    assert ".at[i].add(" in secant.source(secant.grad(h))


def test_generated_source_reads_like_the_loop():
    text = secant.source(secant.grad(pairs_loop))
    assert "# Grad of: for w, b in params[:-1]:" in text
    assert "return add_at(params_bar, index_exp[:-1], params_item_bar)" in text
    assert "params_item_bar = add_at(params_item_bar, i, params_item_i_bar)" in text
    assert "w = params_item_i[0]" in text and "b = params_item_i[1]" in text
    assert "# Grad of: return snp.mean(out ** 2) + 0.1 * sum(snp.sum(w * w) for w, _ in params)" \
        in text
    assert "zeros_like(params)" not in text.replace("zeros_like_tree(params)", "")
    text = secant.source(secant.grad(nested_unpack))
    assert "w1 = params_0[0]" in text


def test_comprehensions_over_params_are_differentiated():
    # (these raised "write the loop out" before containers became values: issue 15)
    def stacked(params):
        return snp.sum(snp.stack([snp.sum(w) for w, b in params]))

    def filtered(params):
        return sum(snp.sum(w) for w, b in params if w.ndim == 2)
    params = make_params(np.float32)
    for f in (stacked, filtered):
        g = secant.grad(f)(params)
        for (gw, gb), (w, b) in zip(g, params):
            np.testing.assert_allclose(np.asarray(gw), np.ones_like(w))
            np.testing.assert_allclose(np.asarray(gb), np.zeros_like(b))


def test_comprehension_variables_stay_local():
    def f(params, w):
        l2 = sum(snp.sum(w * w) for w, _ in params)
        return l2 + snp.sum(w)
    params, w = make_params(np.float32), np.full(3, 2.0, np.float32)
    gp, gw = secant.grad(f, argnums=(0, 1))(params, w)
    np.testing.assert_allclose(np.asarray(gw), np.ones(3))
    np.testing.assert_allclose(np.asarray(gp[0][0]), 2 * params[0][0], rtol=1e-6)


def _predict(params, x):
    for w, b in params[:-1]:
        x = snp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def test_container_read_by_a_helper_and_a_loop_adds_leaf_by_leaf():
    def loss(params, x):
        return snp.mean(_predict(params, x) ** 2) + 0.1 * sum(snp.sum(w * w) for w, _ in params)
    params, x = make_params(np.float32), make_x(np.float32)
    want = secant.grad(explicit)(params, x)
    assert_tree_close(secant.grad(loss)(params, x), want, rtol=1e-5, atol=1e-6)
    assert_tree_close(secant.jit(secant.grad(loss))(params, x), want, rtol=1e-5, atol=1e-6)
    assert "return add_grads(params_bar, " in secant.source(secant.grad(loss))


def _tuple_of_layers(ws, x):
    h = x
    for i in range(3):
        h = snp.tanh(h @ ws[i])
    return snp.sum(h)


def test_index_loop_over_a_tuple_of_weights_gives_a_tuple():
    rng = np.random.default_rng(0)
    stacked = rng.normal(size=(3, 4, 4)).astype(np.float32) / 2
    x = np.ones(4, np.float32)
    want = np.asarray(secant.grad(_tuple_of_layers)(stacked, x))     # the array form
    for g in (secant.grad(_tuple_of_layers), secant.jit(secant.grad(_tuple_of_layers))):
        got = g(tuple(stacked), x)
        assert isinstance(got, tuple) and len(got) == 3
        np.testing.assert_allclose(np.stack([np.asarray(a) for a in got]), want, rtol=1e-5)
    src = secant.source(secant.grad(_tuple_of_layers))     # (add_rows: a tuple's items one
    assert "ws_rows_bar.append(" in src and "add_rows(ws_bar, ws_rows_bar, " in src  # by one)
