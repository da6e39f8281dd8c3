"""Calls of functions that update a local array in place (`y[i] = v`), made by generated code
for their value (a derivative's primal replay, vjp's primal output, a batched function calling
them), reach their desugared form at any depth (transformer/runnable.py); checked against
float64 finite differences and Python loops."""
import numpy as np
import pytest

import secant
from secant import numpy as snp


def fill(x):
    y = snp.zeros(3)
    y[0] = snp.sin(x[0])
    y[2] += x[1] * x[2]
    return snp.sum(y * y)


def middle(x):
    return 2.0 * fill(x)


def outer(x):
    return middle(x) + 1.0


class _Holder:
    fill = staticmethod(fill)


def by_attribute(x):
    return _Holder.fill(x) * 3.0


def _eager(x):
    x = np.asarray(x, dtype=np.float64)
    y = np.zeros(3)
    y[0] = np.sin(x[0])
    y[2] += x[1] * x[2]
    return np.sum(y * y)


def _outer_np(x):
    return 2.0 * _eager(x) + 1.0


def _fd_grad(f, x, h=1e-6):
    x = np.asarray(x, dtype=np.float64)
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


def _fd_hvp(f, x, v, h=1e-4):
    return (_fd_grad(f, x + h * v) - _fd_grad(f, x - h * v)) / (2 * h)


X = np.array([0.3, 0.5, 0.7])
V = np.array([1.0, 2.0, 3.0])


def test_grad_through_two_callers(x64):
    got = secant.grad(outer)(snp.array(X))
    np.testing.assert_allclose(got, _fd_grad(_outer_np, X), rtol=1e-6)


def test_grad_of_grad_through_callers(x64):
    g = secant.grad(outer)

    def hv(x):
        return snp.sum(g(x) * V)
    np.testing.assert_allclose(secant.grad(hv)(snp.array(X)), _fd_hvp(_outer_np, X, V),
                               rtol=1e-5)
    # vjp of the gradient: the same H v
    _, pull = secant.vjp(g, snp.array(X))
    np.testing.assert_allclose(pull(snp.array(V))[0], _fd_hvp(_outer_np, X, V), rtol=1e-5)


def test_grad_of_grad_of_jit(x64):
    g = secant.grad(secant.jit(outer))

    def hv(x):
        return snp.sum(g(x) * V)
    np.testing.assert_allclose(secant.grad(hv)(snp.array(X)), _fd_hvp(_outer_np, X, V),
                               rtol=1e-5)


def test_vjp_primal_and_vmap_of_its_pullback(x64):
    out, pull = secant.vjp(outer, snp.array(X))
    np.testing.assert_allclose(out, _outer_np(X), rtol=1e-12)
    cts = np.array([1.0, -2.0, 0.5])
    got = secant.vmap(pull)(snp.array(cts))[0]
    want = np.stack([c * _fd_grad(_outer_np, X) for c in cts])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_callee_reached_by_attribute(x64):
    got = secant.grad(by_attribute)(snp.array(X))
    np.testing.assert_allclose(got, 3.0 * _fd_grad(_eager, X), rtol=1e-6)
    g = secant.grad(by_attribute)
    hv = secant.grad(lambda x: snp.sum(g(x) * V))(snp.array(X))
    np.testing.assert_allclose(hv, 3.0 * _fd_hvp(_eager, X, V), rtol=1e-5)


def test_vmap_calls_the_callee_on_unbatched_values(x64):
    def f(x, w):
        return fill(w) * x       # fill's argument is not batched: called for its value
    xs = np.array([1.0, 2.0, -1.0])
    got = secant.vmap(f, in_axes=(0, None))(snp.array(xs), snp.array(X))
    np.testing.assert_allclose(got, [_eager(X) * x for x in xs], rtol=1e-12)


def test_generated_code_names_the_users_callee():
    text = secant.source(secant.grad(outer))
    assert "middle_out = middle(x)" in text


def test_rebinding_a_global_callee_is_seen(x64):
    import sys
    mod = sys.modules[__name__]
    g = secant.grad(outer)
    before = np.asarray(g(snp.array(X)))
    old = mod.fill

    def fill_twice(x):
        y = snp.zeros(3)
        y[0] = 2.0 * snp.sin(x[0])
        return snp.sum(y * y)
    try:
        mod.fill = fill_twice
        out, _ = secant.vjp(outer, snp.array(X))
        np.testing.assert_allclose(out, 2.0 * 4.0 * np.sin(X[0]) ** 2 + 1.0, rtol=1e-12)
        got = secant.grad(outer)(snp.array(X))
        np.testing.assert_allclose(got, [16 * np.sin(X[0]) * np.cos(X[0]), 0, 0], atol=1e-12)
    finally:
        mod.fill = old
    np.testing.assert_allclose(g(snp.array(X)), before, rtol=1e-12)


@pytest.mark.parametrize("name", ["inplace_set", "inplace_add_loop"])
def test_corpus_inplace_under_second_order(name, x64):
    from tests.corpus.syntax import inplace_add_loop, inplace_set
    f = {"inplace_set": inplace_set, "inplace_add_loop": inplace_add_loop}[name]

    def wrapper(x):
        return f(x)
    g = secant.grad(wrapper)

    def hv(x):
        return snp.sum(g(x) * V)
    ref = {"inplace_set": _eager, "inplace_add_loop": lambda x: np.sum(
        (np.asarray(x) * np.array([1.0, 2.0, 3.0])) ** 2)}[name]
    np.testing.assert_allclose(secant.grad(hv)(snp.array(X)), _fd_hvp(ref, X, V), rtol=1e-5)


# --- vmap of a pullback whose primal is not batched: add_n_grad of an unbatched list ---------
def python_sum_of_list(x):
    terms = []
    for i in range(4):
        terms.append(snp.sum(x ** i))
    return sum(terms)


def test_vmap_of_vjp_through_python_sum(x64):
    out, pull = secant.vjp(python_sum_of_list, snp.array(X))
    cts = np.array([1.0, -2.0, 0.5])
    got = secant.vmap(pull)(snp.array(cts))[0]
    grad = np.array([sum(i * X[k] ** (i - 1) for i in range(1, 4)) for k in range(3)])
    want = np.stack([pull(snp.array(c))[0] for c in cts])        # a Python loop
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, np.outer(cts, grad), rtol=1e-12)


def test_add_n_grad_batched_of_unbatched_items():
    from secant.batching.helpers import add_n_grad_batched
    t = np.arange(6.0).reshape(2, 3)                # 2 examples of a (3,) cotangent
    items = [np.zeros(3), np.zeros(()), np.zeros((1,))]
    got = add_n_grad_batched(snp.array(t), items, True, False, 2)
    np.testing.assert_allclose(got[0], t)
    np.testing.assert_allclose(got[1], t.sum(axis=1))
    np.testing.assert_allclose(got[2], t.sum(axis=1, keepdims=True))
    # t not batched, the items batched: the same cotangent for each example
    got = add_n_grad_batched(snp.array(t[0]), [np.zeros((2, 3)), np.zeros((2,))], False, True, 2)
    np.testing.assert_allclose(got[0], np.stack([t[0], t[0]]))
    np.testing.assert_allclose(got[1], [t[0].sum(), t[0].sum()])


# --- shape queries of items of batched values (w["hh"].shape[0], x[0].shape, len(ws[0])) ------
def rnn(w, xs):
    h = snp.zeros(w["hh"].shape[0])
    for t in range(xs.shape[0]):
        h = snp.tanh(w["hh"] @ h + w["xh"] @ xs[t] + w["b"])
    return snp.sum(h ** 2)


def _rnn_np(w, xs):
    h = np.zeros(w["hh"].shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(w["hh"] @ h + w["xh"] @ xs[t] + w["b"])
    return np.sum(h ** 2)


def _ws(rng, *lead):
    return {"hh": rng.normal(size=lead + (3, 3)) * 0.5, "xh": rng.normal(size=lead + (3, 2)),
            "b": rng.normal(size=lead + (3,))}


def _pick(w, *i):
    return {k: v[i] for k, v in w.items()}


@pytest.mark.parametrize("batch", [2, 4])
def test_vmap_over_a_dict_whose_item_shape_is_read(batch, x64):
    rng = np.random.default_rng(0)
    w, xs = _ws(rng, batch), rng.normal(size=(4, 2))
    got = secant.vmap(rnn, in_axes=(0, None))(w, xs)
    np.testing.assert_allclose(got, [_rnn_np(_pick(w, b), xs) for b in range(batch)],
                               rtol=1e-12)


def test_vmap_of_vmap_over_a_dict_whose_item_shape_is_read(x64):
    rng = np.random.default_rng(1)
    w, xs = _ws(rng, 2, 3), rng.normal(size=(4, 2))

    def f1(w):
        return rnn(w, xs)
    got = secant.vmap(secant.vmap(f1))(w)
    want = [[_rnn_np(_pick(w, i, j), xs) for j in range(3)] for i in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def item_queries(x, ws):
    ones = snp.ones(x[0].shape)                     # an array's row
    n = len(ws[0]) + ws[1].shape[-1] + x[1:].shape[0] + x[0].ndim + x[0].size
    return snp.sum(ones) * x[0, 0] * n + snp.sum(ws[1])


def _item_queries_np(x, ws):
    n = len(ws[0]) + ws[1].shape[-1] + x[1:].shape[0] + x[0].ndim + x[0].size
    return np.sum(np.ones(x[0].shape)) * x[0, 0] * n + np.sum(ws[1])


def test_vmap_of_queries_of_items(x64):
    rng = np.random.default_rng(2)
    x, ws = rng.normal(size=(4, 3, 2)), [rng.normal(size=(4, 5)), rng.normal(size=(4, 3))]
    got = secant.vmap(item_queries)(x, ws)
    want = [_item_queries_np(x[b], [ws[0][b], ws[1][b]]) for b in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    xx = rng.normal(size=(2, 4, 3, 2))
    wws = [rng.normal(size=(2, 4, 5)), rng.normal(size=(2, 4, 3))]
    got = secant.vmap(secant.vmap(item_queries))(xx, wws)
    want = [[_item_queries_np(xx[a, b], [wws[0][a, b], wws[1][a, b]]) for b in range(4)]
            for a in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --- derivatives of a derivative whose output is constant: grad_seed(out) kept as a check ----
def cubic(x):
    return x ** 3 - 2.0 * x


@pytest.mark.parametrize("fn, derivs", [
    (snp.abs, [1.0, 0.0, 0.0, 0.0]),                     # at 0.7
    (cubic, [3 * 0.49 - 2.0, 6 * 0.7, 6.0, 0.0]),
])
def test_fourth_order_through_a_constant_derivative(fn, derivs, x64):
    g = fn
    for n, want in enumerate(derivs):
        g = secant.grad(g)
        np.testing.assert_allclose(g(0.7), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(secant.jit(g)(0.7), want, rtol=1e-12, atol=1e-12)
    fifth = secant.grad(g)
    np.testing.assert_allclose(fifth(0.7), 0.0, atol=1e-12)
    jvp4 = secant.jvp(g, (0.7,), (1.0,))[1]
    np.testing.assert_allclose(jvp4, 0.0, atol=1e-12)
    np.testing.assert_allclose(secant.vmap(g)(snp.array([0.7, -0.3])), [derivs[-1]] * 2,
                               atol=1e-12)


def test_jacfwd_through_a_kept_grad_seed_check():
    g = secant.grad(secant.grad(lambda x: 2.0 * x))     # its grad_seed(out) kept

    def h(x):
        return g(x) * snp.ones(2)       # its kept check sees a scalar
    assert np.allclose(secant.jacfwd(h)(0.5), 0.0)
