"""Issue 20 (lean20w): a sum's or mean's rule reads its operand's shape from the operand's
operands (`unreduce_to(t, shape_of(labels, logp), axis=-1)`, ad/reverse.py _shape_source), so
softmax cross-entropy's `labels * logp` is not computed for its shape alone. Under vmap
(jacfwd, jacrev, vmap of the derivative) each batched argument's shape is read per example
(transformer/normalize.py _PerExampleQueries): it was read with its batch axis where the
user's module imports secant.numpy under another name (`jnp`), and jacrev(jacfwd(f)) gave a
Hessian diagonal times the rows. Every value is checked against float64 central differences
or a Python loop, in a module that calls secant.numpy `jnp`."""
import os
import sys

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
from lean_functions import helpers  # noqa: E402  (mse(layer(layer(x))): bench/lean.py's)

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
    assert "shape_of(labels, logits" in src     # (logp's stand-in: tests/test_lean20x.py)
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


# grad's seed through a helper's call (transformer/dataflow.py output_dtype, _through_call):
# the helper's own canonical form proves its output a scalar of its arguments' promoted dtype,
# so the caller does not compute the output for the seed (bench/lean_functions.py helpers)

def _squares(pred, target):         # not a scalar: grad refuses it, as before
    return (pred - target) ** 2


def not_scalar(w, target):
    return _squares(jnp.tanh(w), target)


def _scaled_sum(a, k):              # a scalar only where k is one: not proven
    return jnp.sum(a) * k


def scaled(w, k):
    return _scaled_sum(jnp.sin(w), k)


def _helper_args(dtype=np.float64):
    return (RNG.normal(size=(4, 4)).astype(dtype) * 0.5, RNG.normal(size=4).astype(dtype) * 0.1,
            RNG.normal(size=(5, 4)).astype(dtype), RNG.normal(size=(5, 4)).astype(dtype))


def test_helper_seed_source_does_not_call_the_helper_for_it():
    src = secant.source(secant.grad(helpers))
    assert "_mse_out = _mse(" not in src and "grad_seed(" not in src
    assert "grad_seed_like(_layer_out, target)" in src
    # not proven: the output computed for grad_seed's checks, as before
    assert "grad_seed(_scaled_sum_out)" in secant.source(secant.grad(scaled))


def test_helper_gradient_matches_float64_differences(x64):
    w, b, x, target = _helper_args()
    want = fd_grad(lambda v: helpers(v, b, x, target), w)
    np.testing.assert_allclose(np.asarray(secant.grad(helpers)(w, b, x, target)), want,
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(helpers))(w, b, x, target)),
                               want, rtol=1e-6, atol=1e-9)
    ws = np.stack([w, 0.5 * w, -w])
    g = secant.grad(helpers)
    np.testing.assert_allclose(
        np.asarray(secant.vmap(g, in_axes=(0, None, None, None))(ws, b, x, target)),
        np.stack([np.asarray(g(v, b, x, target)) for v in ws]), rtol=1e-12)
    f = lambda v: helpers(v, b, x, target)      # noqa: E731
    h = np.asarray(secant.hessian(f)(w)).reshape(16, 16)
    np.testing.assert_allclose(h, _fd_hessian(f, w).reshape(16, 16), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target_dtype", [np.float32, np.float64, np.int32])
def test_helper_seed_dtype_follows_the_output(x64, target_dtype):
    w, b, x, target = _helper_args(np.float32)
    target = (target * 3).astype(target_dtype)
    got = secant.grad(helpers)(w, b, x, target)
    assert np.asarray(got).dtype == np.float32          # (w's dtype, as JAX's)
    want = fd_grad(lambda v: helpers(v, b.astype(np.float64), x.astype(np.float64),
                                     target.astype(np.float64)), w)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-4)
    out = helpers(w, b, x, target)
    value, grad = secant.value_and_grad(helpers)(w, b, x, target)
    assert np.asarray(value).dtype == np.asarray(out).dtype


def test_a_helper_output_not_proven_scalar_is_refused_as_before():
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.grad(not_scalar)(np.ones(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.grad(scaled)(np.ones(3, np.float32), np.ones(2, np.float32))
    g = secant.grad(scaled)(np.ones(3), 2.0)
    np.testing.assert_allclose(np.asarray(g), 2.0 * np.cos(np.ones(3)), rtol=1e-6)


def _printing_mse(pred, target):
    print("mse ran")
    diff = pred - target
    return jnp.mean(diff * diff)


def printing(w, target):
    return _printing_mse(jnp.tanh(w), target)


def test_a_helper_with_an_effect_still_runs_for_the_seed(capsys):
    """The seed reads through a helper made of ops alone: one that prints is called, and
    prints once per call, as before."""
    g = secant.grad(printing)
    assert "_printing_mse_out = _printing_mse(" in secant.source(g)
    capsys.readouterr()
    got = g(np.ones(3, np.float32), np.zeros(3, np.float32))
    assert capsys.readouterr().out.count("mse ran") == 1
    t = np.tanh(1.0)
    np.testing.assert_allclose(np.asarray(got), 2 * t * (1 - t * t) / 3, rtol=1e-6)
