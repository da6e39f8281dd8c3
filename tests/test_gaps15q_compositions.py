"""Issue 15 section 4 (gaps15q): known gaps closed, each checked by value.

- eval_shape inside a transformed program: a constant of every derivative (a static query);
  under vmap it is given each batched argument's per-example specs (batching/helpers.py
  example_spec), as JAX's eval_shape sees a batched tracer's aval; a function that reads
  batched values itself (a closure) is refused under vmap, not traced with the batch axis.
  Against float64 central differences, a Python loop and JAX's values (recorded)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from central_differences import grad_fd, hessian_fd

W = np.array([0.3, -0.2, 0.5])
X = np.arange(12.0).reshape(4, 3) / 10


def with_eval_shape(w, x):
    s = secant.eval_shape(lambda a, b: b @ a, w, x)
    out = snp.zeros(s.shape, s.dtype)
    return snp.sum((out + x @ w) ** 2) * s.shape[0]


def _rows(a, b):
    return {"rows": b @ a, "n": a}


def with_eval_shape_of_a_tree(w, x):
    s = secant.eval_shape(_rows, w, b=x)
    return snp.sum(snp.tanh(x @ w)) * s["rows"].shape[0] + s["n"].size * snp.sum(w ** 2)


@pytest.mark.parametrize("f", [with_eval_shape, with_eval_shape_of_a_tree],
                         ids=lambda f: f.__name__)
def test_eval_shape_under_grad_hessian_and_jit(x64, f):
    g = grad_fd(lambda w: f(w, X), W)
    np.testing.assert_allclose(secant.grad(f)(W, X), g, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(W, X), g, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.hessian(f)(W, X), hessian_fd(lambda w: f(w, X), W),
                               rtol=1e-4, atol=1e-5)
    value, tangent = secant.jvp(f, (W, X), (W, np.zeros_like(X)))
    np.testing.assert_allclose(tangent, g @ W, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [with_eval_shape, with_eval_shape_of_a_tree],
                         ids=lambda f: f.__name__)
def test_eval_shape_under_vmap_sees_one_example(x64, f):
    ws = np.stack([W, 2 * W, W - 1])
    xs = np.stack([X, X + 1, X * 2])
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(ws, X),
                               [f(w, X) for w in ws], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(f)(ws, xs), [f(w, x) for w, x in zip(ws, xs)],
                               rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.vmap(f, in_axes=(0, None)),
                                           in_axes=(0, None))(np.stack([ws, ws]), X),
                               [[f(w, X) for w in ws]] * 2, rtol=1e-12)
    for w, g in zip(ws, secant.vmap(secant.grad(f), in_axes=(0, None))(ws, X)):
        np.testing.assert_allclose(g, grad_fd(lambda v: f(v, X), w), rtol=1e-6, atol=1e-8)


def test_eval_shape_values_are_jaxs():
    """jax.vmap(prog)(ws, xs) and jax.hessian(prog)(W0, X) of with_eval_shape (jax 0.10.2,
    float32)."""
    w0 = np.ones(3, np.float32) * 0.3
    x = X.astype(np.float32)
    ws = np.stack([w0, w0 * 2])
    np.testing.assert_allclose(secant.vmap(with_eval_shape)(ws, np.stack([x, x + 1])),
                               [5.378401, 130.37761], rtol=1e-5)
    np.testing.assert_allclose(secant.hessian(with_eval_shape)(w0, x),
                               [[10.08, 11.52, 12.96], [11.52, 13.28, 15.04],
                                [12.96, 15.04, 17.12]], rtol=1e-5)


def test_eval_shape_of_a_closure_over_batched_values_is_refused():
    def reads_x(w, x):
        s = secant.eval_shape(lambda a: x @ a, w)
        return snp.sum(x @ w) * s.shape[0]
    np.testing.assert_allclose(secant.grad(reads_x)(W, X), X.sum(0) * 4, rtol=1e-6)
    with pytest.raises(secant.SecantError, match="may read batched values") as info:
        secant.vmap(reads_x, in_axes=(None, 0))(W, np.stack([X, X]))
    assert "test_gaps15q_compositions.py" in str(info.value)


def _mm(a, b):
    return b @ a


def with_eval_shape_of_a_global_starred(w, x):
    args = (w, x)
    s = secant.eval_shape(_mm, *args)
    return snp.sum(x @ w) * s.shape[0]


def test_eval_shape_of_a_global_function_with_starred_arguments(x64):
    f = with_eval_shape_of_a_global_starred
    ws = np.stack([W, 2 * W])
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(ws, X), [f(w, X) for w in ws],
                               rtol=1e-12)
    np.testing.assert_allclose(secant.grad(f)(W, X), X.sum(0) * 4, rtol=1e-10)
