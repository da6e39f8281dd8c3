"""Issue 20 (lean20w): a sum's or mean's rule reads its operand's shape from the operand's
operands (`unreduce_to(t, shape_of(labels, logp), axis=-1)`, ad/reverse.py _shape_source), so
softmax cross-entropy's `labels * logp` is not computed for its shape alone. Under vmap
(jacfwd, jacrev, vmap of the derivative) each batched argument's shape is read per example
(transformer/normalize.py _PerExampleQueries): it was read with its batch axis where the
user's module imports secant.numpy under another name (`jnp`), and jacrev(jacfwd(f)) gave a
Hessian diagonal times the rows. Every value is checked against float64 central differences
or a Python loop, in a module that calls secant.numpy `jnp`."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2026)


def xent(logits, labels):
    z = logits - jnp.max(logits, axis=-1, keepdims=True)
    logp = z - jnp.log(jnp.sum(jnp.exp(z), axis=-1, keepdims=True))
    return -jnp.mean(jnp.sum(labels * logp, axis=-1))


def weighted(x, y):
    return jnp.sum(jnp.sin(x) * y)


def quadratic(x, y):        # (derivatives calling no secant.numpy function by name)
    return jnp.sum(x * x * y)


def _fd_hessian(f, x, eps=1e-5):
    x = np.asarray(x, np.float64)
    rows = []
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        rows.append((np.asarray(secant.grad(f)(up)) - np.asarray(secant.grad(f)(down)))
                    / (2 * eps))
    return np.stack(rows, axis=-1).reshape(x.shape + x.shape)


def _labels(shape, k):
    n = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return np.eye(k)[RNG.integers(0, k, n)].reshape(shape[:-1] + (k,)) if shape else None


def test_source_reads_the_shape_not_the_product():
    src = secant.source(secant.grad(xent))
    assert "shape_of(labels, logp" in src
    assert "labels_times_logp =" not in src and "labels * logp\n" not in src
    assert "shape_of(x, y)" in secant.source(secant.grad(weighted))


@pytest.mark.parametrize("label_shape", [(5, 4), (4,), (5, 1)])
def test_xent_gradient_matches_float64_differences(x64, label_shape):
    logits = RNG.normal(size=(5, 4))
    labels = RNG.uniform(size=label_shape)
    want = fd_grad(lambda v: xent(v, labels), logits)
    np.testing.assert_allclose(np.asarray(secant.grad(xent)(logits, labels)), want,
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(xent))(logits, labels)), want,
                               rtol=1e-6, atol=1e-9)


def test_vmap_of_grad_matches_a_loop(x64):
    logits = RNG.normal(size=(3, 5, 4))
    labels = _labels((5, 4), 4)
    g = secant.grad(xent)
    want = np.stack([np.asarray(g(v, labels)) for v in logits])
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None))(logits, labels)),
                               want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(g, in_axes=(0, None)))(
        logits, labels)), want, rtol=1e-12)
    both = RNG.uniform(size=(3, 5, 4))
    want = np.stack([np.asarray(g(v, y)) for v, y in zip(logits, both)])
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(logits, both)), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["hessian", "jacrev-jacfwd", "jacfwd-jacrev", "jacrev-jacrev"])
def test_second_order_matches_differences_of_the_gradient(x64, name):
    labels = RNG.uniform(size=(3, 4))
    logits = RNG.normal(size=(3, 4))
    f = lambda v: xent(v, labels)       # noqa: E731
    t = {"jacrev": secant.jacrev, "jacfwd": secant.jacfwd}
    h = secant.hessian(f) if name == "hessian" else \
        t[name.split("-")[0]](t[name.split("-")[1]](f))
    np.testing.assert_allclose(np.asarray(h(logits)), _fd_hessian(f, logits), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("name", ["jacrev-jacfwd", "jacfwd-jacrev", "hessian"])
def test_weighted_sum_second_order_closed_form(x64, name):
    """sum(sin(x) * y): the Hessian is diag(-sin(x) * y) (y broadcast over x's rows)."""
    x = RNG.normal(size=(2, 3))
    y = RNG.normal(size=(3,))
    t = {"jacrev": secant.jacrev, "jacfwd": secant.jacfwd, "hessian": secant.hessian}
    h = t["hessian"](weighted) if name == "hessian" else \
        t[name.split("-")[0]](t[name.split("-")[1]](weighted))
    want = np.diag((-np.sin(x) * y).ravel()).reshape(x.shape + x.shape)
    np.testing.assert_allclose(np.asarray(h(x, y)), want, rtol=1e-12, atol=1e-12)
    vg = secant.vmap(secant.grad(weighted), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(vg(x, y)), np.cos(x) * y, rtol=1e-12)


@pytest.mark.parametrize("name", ["jacrev-jacfwd", "jacfwd-jacrev", "jacrev-jacrev", "hessian"])
def test_quadratic_second_order_closed_form(x64, name):
    """sum(x * x * y): the Hessian is diag(2 y) (y broadcast over x's rows); jacrev(jacfwd)
    read the per-example shape with its batch axis (3 rows: 3x the diagonal) before."""
    x = RNG.normal(size=(2, 3))
    y = RNG.normal(size=(3,))
    t = {"jacrev": secant.jacrev, "jacfwd": secant.jacfwd}
    h = secant.hessian(quadratic) if name == "hessian" else \
        t[name.split("-")[0]](t[name.split("-")[1]](quadratic))
    want = np.diag(np.broadcast_to(2 * y, x.shape).ravel()).reshape(x.shape + x.shape)
    np.testing.assert_allclose(np.asarray(h(x, y)), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(h)(x, y)), want, rtol=1e-12, atol=1e-12)


def test_non_broadcasting_shapes_name_the_users_line():
    with pytest.raises(secant.SecantError) as info:
        secant.grad(weighted)(np.ones(3, np.float32), np.ones(4, np.float32))
    assert "test_lean20w.py" in str(info.value) or "weighted" in str(info.value)

