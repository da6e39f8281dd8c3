"""Regression tests for what tests/user_programs/ found refused (issue 15, explore15h), each
checked against a closed form, a Python loop or the eager value:

- a walrus inside a conditional expression (`(s := e) * s if c else s`, `a if (n := k) else b`)
  (transformer/desugar.py hoist: the test's walrus hoisted, the branches' left to the
  statements the choice becomes);
- a nested def decorated with @jax.checkpoint, @jax.jit or @partial(jax.jit, static_argnums=...)
  closing over differentiated or batched values (transformer/remat_calls.py: the decorator
  read as the identity it is on values);
- `loss = functools.partial(global_fn, x=x, y=y)` (or of a lambda) with x, y carrying tangents
  or a batch axis (transformer/desugar.py _inline_partials: calls of it read as calls of
  global_fn, the lambda named first);
- np.int64(x.shape[0]) of a tracked x, {**defaults, **params} under vmap and hessian, lax.switch
  over a local list of lambdas inside a loop under jit(grad) (see each test).
"""
import functools

import numpy as np
import pytest

import secant
import secant as jax
import secant.numpy as jnp
from user_programs.extras import nested_jit

W = np.array([0.3, -0.2, 0.5])
X = np.arange(12.0).reshape(4, 3) / 10 - 0.4
Y = np.array([0.1, -0.3, 0.2, 0.4])


# --- walrus in a conditional expression ---------------------------------------------------------
def walrus_in_branches(x):
    y = (t := jnp.sin(x)) * t if x > 0 else (u := jnp.cos(x)) + u
    return y


def walrus_in_test(x):
    return (n * x if (n := x.shape[0]) > 2 else x).sum()


def walrus_in_loop(w, x):
    total = 0.0
    for row in x:
        total = total + ((s := jnp.dot(row, w)) * s if len(row) > 2 else 0.0)
    return total


@pytest.mark.parametrize("x", [0.7, -0.4])
def test_walrus_in_conditional_expression(x64, x):
    want = 2 * np.sin(x) * np.cos(x) if x > 0 else -2 * np.sin(x)
    np.testing.assert_allclose(secant.grad(walrus_in_branches)(x), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(walrus_in_branches)(x), walrus_in_branches(x))
    xs = np.array([0.7, -0.4, 1.3])
    np.testing.assert_allclose(secant.vmap(walrus_in_branches)(xs),
                               [walrus_in_branches(v) for v in xs], rtol=1e-12)


def test_walrus_in_the_test_of_a_choice(x64):
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(secant.grad(walrus_in_test)(x), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(secant.jit(walrus_in_test)(x), 18.0)


def test_walrus_in_a_loop_choice(x64):
    np.testing.assert_allclose(secant.grad(walrus_in_loop)(W, X), 2 * (X @ W) @ X, rtol=1e-12)
    ws = np.stack([W, 2 * W])
    np.testing.assert_allclose(secant.vmap(walrus_in_loop, in_axes=(0, None))(ws, X),
                               [np.sum((X @ w) ** 2) for w in ws], rtol=1e-12)


def walrus_in_if_test_branch(x):
    if (x if x.shape[0] > 5 else (m := jnp.sum(x))) > 0:
        return m * x.sum()
    return x.sum()


def test_walrus_in_a_choice_of_an_if_test_still_refused(x64):
    with pytest.raises(secant.SecantError, match="walrus"):
        secant.grad(walrus_in_if_test_branch)(np.array([1.0, 2.0]))


# --- decorated nested defs closing over traced values -------------------------------------------
def checkpointed(w, x):
    @jax.checkpoint
    def block(h):
        return jnp.tanh(h * w[0]) + jnp.sin(h * w[1])
    h = x @ w
    for _ in range(2):
        h = block(h)
    return jnp.sum(h ** 2)


def checkpointed_policy(w, x):
    @jax.checkpoint(prevent_cse=False)
    def block(h):
        return jnp.sin(h * w[0])
    return jnp.sum(block(x @ w))


def _fd(f, w, eps=1e-6):
    return np.array([(f(w + eps * e, X) - f(w - eps * e, X)) / (2 * eps) for e in np.eye(3)])


@pytest.mark.parametrize("f", [checkpointed, checkpointed_policy, nested_jit])
def test_decorated_nested_def_closing_over_the_argument(x64, f):
    np.testing.assert_allclose(secant.grad(f)(W, X), _fd(f, W), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(W, X), _fd(f, W), rtol=1e-6)
    ws = np.stack([W, -W, 0.5 * W])
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(ws, X),
                               [f(w, X) for w in ws], rtol=1e-12)
    v = np.array([1.0, -0.5, 0.25])
    np.testing.assert_allclose(secant.jvp(lambda w: f(w, X), (W,), (v,))[1],
                               _fd(f, W) @ v, rtol=1e-6)


def test_the_real_jit_and_checkpoint_still_run_the_function(x64):
    """(the decorators stripped only where the transform reads the nested def: eager runs them)"""
    np.testing.assert_allclose(nested_jit(W, X), np.sum((np.tanh(X @ W * W[0]) + W[1]) ** 2))


# --- functools.partial of a global function over arguments with tangents ------------------------
def quad(w, x, y):
    return jnp.mean((x @ w - y) ** 2) + 0.1 * jnp.sum(jnp.sin(w))


def partial_loss(w, x, y):
    loss = functools.partial(quad, x=x, y=y)
    return loss(w)


def partial_positional(w, x, y):
    residual = functools.partial(lambda_free_residual, x)
    return jnp.sum(residual(w, y) ** 2)


def lambda_free_residual(x, w, y):
    return x @ w - y


def partial_of_a_lambda(w, x, y):
    loss = functools.partial(lambda w, x, y: jnp.sum((x @ w - y) ** 2), x=x, y=y)
    return loss(w)


@pytest.mark.parametrize("f", [partial_loss, partial_positional, partial_of_a_lambda])
def test_partial_of_a_global_function_under_jvp_and_vmap(x64, f):
    tx, ty = np.ones_like(X) * 0.1, np.linspace(-1, 1, 4)
    eps = 1e-6
    want = (f(W, X + eps * tx, Y + eps * ty) - f(W, X - eps * tx, Y - eps * ty)) / (2 * eps)
    out, dot = secant.jvp(f, (W, X, Y), (np.zeros(3), tx, ty))
    np.testing.assert_allclose(out, f(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(dot, want, rtol=1e-6)
    xs, ys = np.stack([X, 2 * X]), np.stack([Y, -Y])
    np.testing.assert_allclose(secant.vmap(f, in_axes=(None, 0, 0))(W, xs, ys),
                               [f(W, a, b) for a, b in zip(xs, ys)], rtol=1e-12)


# --- np.int64(x.shape[0]) of a tracked x: Python's call on a static int ---------------------------
def numpy_scalar_of_a_shape(w, x):
    n = np.int64(x.shape[0])
    return jnp.float64(0.5) * jnp.sum((x @ w) ** 2) / n


def test_numpy_scalar_type_of_a_shape_is_static(x64):
    """(jvp of x wrote `x.shape[0].astype(np.int64)`: an AttributeError on an int)"""
    t = np.full_like(X, 0.1)
    out, dot = secant.jvp(numpy_scalar_of_a_shape, (W, X), (np.zeros(3), t))
    np.testing.assert_allclose(out, 0.5 * np.sum((X @ W) ** 2) / 4, rtol=1e-12)
    np.testing.assert_allclose(dot, np.sum((X @ W) * (t @ W)) / 4, rtol=1e-12)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(secant.vmap(numpy_scalar_of_a_shape, in_axes=(None, 0))(W, xs),
                               [numpy_scalar_of_a_shape(W, a) for a in xs], rtol=1e-12)


# --- {**defaults, **params} under vmap: a dict merge, not an elementwise `|` ---------------------
def merged_defaults(params, x):
    defaults = {"scale": 1.0, "shift": 0.0}
    p = {**defaults, **params}
    return jnp.sum(x @ p["w"]) * p["scale"] + p["shift"]


def test_dict_merge_with_a_local_dict_under_vmap(x64):
    """(vmap wrote `defaults | align(params, defaults)`: 'cannot convert dict to an array')"""
    ws = np.stack([W, -W, 2 * W])
    params = {"w": ws, "shift": np.array([0.1, 0.2, 0.3])}
    got = secant.vmap(merged_defaults, in_axes=(0, None))(params, X)
    want = [np.sum(X @ w) + s for w, s in zip(ws, params["shift"])]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    g = secant.vmap(secant.grad(merged_defaults), in_axes=(0, None))(params, X)
    np.testing.assert_allclose(g["w"], np.tile(X.sum(0), (3, 1)), rtol=1e-12)
    np.testing.assert_allclose(g["shift"], np.ones(3))


# --- lax.switch over a local list of lambdas, inside a loop jit lowers ------------------------------
def switch_in_a_loop(w, x):
    branches = [lambda v: jnp.sin(v), lambda v: v ** 2, lambda v: jnp.exp(-v)]
    total = 0.0
    for i in range(3):
        total = total + jnp.sum(jax.lax.switch(i, branches, x @ w))
    return total


def test_switch_over_a_local_list_inside_a_loop_under_jit_grad(x64):
    """(jit∘grad lifted the loop into a function taking `branches` as a parameter: refused)"""
    h = X @ W
    want = (np.cos(h) + 2 * h - np.exp(-h)) @ X
    np.testing.assert_allclose(secant.grad(switch_in_a_loop)(W, X), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(switch_in_a_loop))(W, X), want,
                               rtol=1e-12)
    np.testing.assert_allclose(secant.jit(switch_in_a_loop)(W, X), switch_in_a_loop(W, X),
                               rtol=1e-12)


def merged_defaults_mse(params, x, y):
    defaults = {"scale": 1.0, "shift": 0.0}
    p = {**defaults, **params}
    return jnp.mean(((x @ p["w"]) * p["scale"] + p["shift"] - y) ** 2)


def test_dict_merge_with_a_local_dict_under_hessian(x64):
    """(jacfwd's vmap of the jvp met `zeros_like_tree(defaults) | params_dot`)"""
    h = secant.hessian(merged_defaults_mse)({"w": W, "shift": np.array(0.2)}, X, Y)
    np.testing.assert_allclose(h["w"]["w"], 2 / 4 * X.T @ X, rtol=1e-12)
    np.testing.assert_allclose(h["shift"]["shift"], 2.0, rtol=1e-12)
    np.testing.assert_allclose(h["w"]["shift"], 2 / 4 * X.sum(0), rtol=1e-12)


# --- f = jnp.vectorize(h) bound to a local, then called ------------------------------------------
def vectorized_local(w, x):
    def piece(a, b):
        return jnp.sin(a) * b + a ** 2
    f = jnp.vectorize(piece)
    return jnp.sum(f(x @ w, x[:, 0]))


def test_vectorize_bound_to_a_local(x64):
    """(refused: 'no derivative or batching rule for <vectorize(piece)>, a function known only
    at run time')"""
    h = X @ W
    want = (np.cos(h) * X[:, 0] + 2 * h) @ X
    np.testing.assert_allclose(secant.grad(vectorized_local)(W, X), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(vectorized_local))(W, X), want,
                               rtol=1e-12)
    ws = np.stack([W, -W])
    np.testing.assert_allclose(secant.vmap(vectorized_local, in_axes=(0, None))(ws, X),
                               [vectorized_local(w, X) for w in ws], rtol=1e-12)
