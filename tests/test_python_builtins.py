"""Python builtins over traced values (issue 15, section 3): `for row in x`, zip/enumerate with
an array, enumerate(zip(...)), dict(a=x), dict(zip(keys, values)), sorted(d), d.get(k, default),
functools.reduce, max()/min() of several values, under grad, jvp, vmap and jit: gradients
against float64 central differences, vmap against a Python loop, jit against eager."""
import functools
import operator

import numpy as np
import pytest

import secant
import secant.numpy as snp

X = np.array([0.3, 0.9, -0.4])
M = np.array([[0.3, -0.7], [1.1, 0.4], [-0.2, 0.8]])


def for_rows(x):
    acc = 0.0
    for row in x:
        acc = acc + snp.sum(row ** 2) * snp.max(row)
    return acc


def zip_array(x):
    ws = [0.5, 1.0, 2.0]
    acc = 0.0
    for xi, w in zip(x, ws):
        acc = acc + w * snp.sin(xi)
    return acc


def enumerate_zip(x):
    ws = [0.5, 1.0, 2.0]
    acc = 0.0
    for i, (xi, w) in enumerate(zip(x, ws)):
        acc = acc + w * xi ** (i + 1)
    return acc


def enumerate_array(x):
    acc = 0.0
    for i, xi in enumerate(x):
        acc = acc + (i + 1.0) * snp.cos(xi)
    return acc


def over_list_display(x):
    comps = [snp.sin(v) * v for v in [x[0], x[1] * x[2]]]
    return comps[0] + comps[1]


def dict_keywords(x):
    d = dict(a=x, b=snp.cos(x))
    total = 0.0
    for i, k in enumerate(sorted(d)):
        total = total + (i + 1.0) * snp.sum(d[k])
    return total + snp.sum(tuple([x, x * x])[1])


def dict_of_zip(x):
    d = dict(zip(["u", "v"], [x * 2.0, snp.exp(x)]))
    return snp.sum(d["u"] * d["v"])


def dict_get(x):
    d = {"a": x, "b": x ** 2}
    return snp.sum(d.get("b", x)) + snp.sum(d.get("z", 3.0 * x)) + snp.sum(d.get("a") * 0.5)


def reduce_display(x):
    return snp.sum(functools.reduce(operator.mul, [x, x, snp.cos(x)]))


def reduce_lambda_init(x):
    return snp.sum(functools.reduce(lambda a, b: a * b + 1.0, [x, snp.sin(x), x * x], 0.5))


def reduce_variable(x):
    parts = [x, snp.sin(x), x * x]
    return snp.sum(functools.reduce(operator.add, parts))


def reduce_rows(x):
    return snp.sum(functools.reduce(lambda a, r: a * r, x, 1.0))


def sliced_list_loop(x):
    parts = [x, snp.sin(x), x * x]
    acc = parts[0]
    for p in parts[1:]:
        acc = acc * p
    return snp.sum(acc)


def max_min_many(x):
    return max(x[0], x[1], x[2]) + min([x[0] * 2.0, x[1]]) + max(x[0] ** 2, x[2])


def max_of_list(x):
    vals = [x[0], snp.sin(x[1]), x[2] * 0.5]
    return max(vals) + min(x)


VECTOR_CASES = [for_rows, zip_array, enumerate_zip, enumerate_array, over_list_display,
                dict_keywords, dict_of_zip, dict_get, reduce_display, reduce_lambda_init,
                reduce_variable, reduce_rows, sliced_list_loop, max_min_many, max_of_list]


def _arg(fn):
    return M if fn is for_rows or fn is reduce_rows else X


def _fd_grad(fn, x, h=1e-6):
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.reshape(-1)[k] = h
        out.reshape(-1)[k] = (float(fn(x + e)) - float(fn(x - e))) / (2 * h)
    return out


@pytest.mark.parametrize("fn", VECTOR_CASES, ids=lambda f: f.__name__)
def test_grad_against_finite_differences(x64, fn):
    x = _arg(fn)
    np.testing.assert_allclose(secant.grad(fn)(x), _fd_grad(fn, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", VECTOR_CASES, ids=lambda f: f.__name__)
def test_jvp_against_finite_differences(x64, fn):
    x = _arg(fn)
    v = np.random.default_rng(0).uniform(-1, 1, x.shape)
    _, t = secant.jvp(fn, (x,), (v,))
    h = 1e-6
    want = (float(fn(x + h * v)) - float(fn(x - h * v))) / (2 * h)
    np.testing.assert_allclose(t, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", VECTOR_CASES, ids=lambda f: f.__name__)
def test_vmap_against_a_loop(x64, fn):
    x = _arg(fn)
    xs = np.stack([x, 0.5 * x + 0.1, -x + 0.2])
    np.testing.assert_allclose(secant.vmap(fn)(xs), [fn(e) for e in xs], rtol=1e-12)
    g = secant.grad(fn)
    np.testing.assert_allclose(secant.vmap(g)(xs), np.stack([g(e) for e in xs]), rtol=1e-12)


@pytest.mark.parametrize("fn", VECTOR_CASES, ids=lambda f: f.__name__)
def test_jit_of_grad_against_eager(x64, fn):
    x = _arg(fn)
    np.testing.assert_allclose(secant.jit(secant.grad(fn))(x), secant.grad(fn)(x),
                               rtol=1e-12)


def test_dict_get_present_and_absent_keys(x64):
    # d.get("b", x) reads d["b"] (2x); d.get("z", 3x) the default (3); d.get("a") * 0.5
    np.testing.assert_allclose(secant.grad(dict_get)(X), 2 * X + 3.0 + 0.5)


def test_reduce_closed_form(x64):
    # sum(x * x * cos x): 2x cos x - x^2 sin x
    np.testing.assert_allclose(secant.grad(reduce_display)(X),
                               2 * X * np.cos(X) - X ** 2 * np.sin(X))


def test_for_over_rows_reads_the_source_as_a_loop_over_indices():
    src = secant.source(secant.vmap(for_rows))
    # len(x) and its rows ask when they run whether x is a list parameter or an array
    assert "range(example_len(x))" in src and "row = item_of(x, i)" in src


# --- regressions: second order through containers ----------------------------------------------
def mean_of_list(x):
    return snp.mean(snp.array([x, x + 2.0]))


def array_of_list(x):
    v = snp.array([x[0], 2.0 * x[1], x[0] * x[2]])
    return snp.sum(v ** 2)


def test_grad_of_grad_of_mean_of_a_list(x64):
    """unstack's results are arrays: x_bar + y_bar in grad's code is an addition (it was read
    as a list concatenation: len() of a 0-d array)."""
    assert float(secant.grad(secant.grad(mean_of_list))(0.7)) == 0.0
    f = lambda x: snp.mean(snp.array([x * x, x ** 3]))        # noqa: E731
    got = secant.grad(secant.grad(mean_of_list_cubic))(0.7)
    np.testing.assert_allclose(got, (2.0 + 6 * 0.7) / 2)
    del f


def mean_of_list_cubic(x):
    return snp.mean(snp.array([x * x, x ** 3]))


def test_vmap_of_grad_of_grad_reads_fields_past_the_batch_axis(x64):
    """vmap of fields_of (the vjp of grad_of_fields) indexed the batch axis: a silent wrong
    Hessian-vector product (array_of_list, vmap∘grad∘grad)."""
    v = np.array([0.3, -0.5, 0.8])
    g1 = secant.grad(array_of_list)

    def hv(x):
        return snp.sum(g1(x) * v)

    xs = np.stack([X, 0.5 * X + 0.1, -X + 0.2])
    want = np.stack([_fd_grad(lambda e: float(np.sum(np.asarray(g1(e)) * v)), e, 1e-5)
                     for e in xs])
    np.testing.assert_allclose(secant.vmap(secant.grad(hv))(xs), want, rtol=1e-6, atol=1e-7)
