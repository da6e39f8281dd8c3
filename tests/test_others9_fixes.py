"""Issue 15, ninth round: the minimal cases of what the ninth round's programs found.

- int()/bool()/float() of a batched or differentiated value in a branch of a static `if` that
  the call never takes (snp.repeat's static-counts branch under vmap of the counts) raised at
  transform time; as in JAX it raises only when that branch runs (vmap; grad still refuses it
  when transforming, as its derivative would meet it after the function itself ran).
- `jit(f)(x)` / `jit(lambda y: ...)(x)` written in place inside a function grad or vmap reads
  ("secant does not know the derivative of jit(f)"): read as f, as a jitted callee is."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, hessian, jit, vmap


def scale_by_first(x, k):
    if k > 0:
        y = x * int(x[0])       # needs a concrete x[0]: an error only where it runs
    else:
        y = x * 2.0
    return y


def test_conversion_in_a_branch_not_taken_is_no_error(x64):
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(vmap(scale_by_first, in_axes=(0, None))(xs, 0), 2 * xs)
    # the branch that runs: the error JAX raises, naming the user's line
    with pytest.raises(secant.SecantError, match="int\\(\\) of a batched value") as info:
        vmap(scale_by_first, in_axes=(0, None))(xs, 1)
    assert isinstance(info.value, TypeError)            # JAX's TracerIntegerConversionError
    assert "y = x * int(x[0])" in str(info.value)
    with pytest.raises(secant.SecantError, match="int\\(\\)"):
        grad(lambda x, k: jnp.sum(scale_by_first(x, k)))(jnp.asarray(xs[0]), 1)


def test_repeat_with_batched_counts_and_a_total_length(x64):
    v = np.arange(12.0).reshape(2, 6)
    n = np.array([[3, 2, 1], [1, 1, 4]])

    def readout(v, n):
        idx = jnp.repeat(jnp.arange(3), n, total_repeat_length=6)
        return jnp.zeros(3).at[idx].add(v)

    want = np.stack([np.add.reduceat(v[i], np.r_[0, np.cumsum(n[i])[:-1]]) for i in range(2)])
    np.testing.assert_allclose(vmap(readout)(v, n), want)
    np.testing.assert_allclose(jit(vmap(readout))(v, n), want)


def smooth(x):
    return jnp.exp(jnp.sin(x))


def test_jit_written_in_place_inside_a_transformed_function(x64):
    x = 0.3
    d1 = np.exp(np.sin(x)) * np.cos(x)
    d2 = np.exp(np.sin(x)) * (np.cos(x) ** 2 - np.sin(x))
    np.testing.assert_allclose(grad(lambda x: secant.jit(smooth)(x))(x), d1, rtol=1e-12)
    np.testing.assert_allclose(grad(grad(lambda x: jit(smooth)(x)))(x), d2, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(lambda x: jit(smooth)(x)))(x), d1, rtol=1e-12)
    xs = np.array([0.1, 0.3, 0.7])
    np.testing.assert_allclose(vmap(lambda x: jit(smooth)(x))(xs), np.exp(np.sin(xs)),
                               rtol=1e-12)
    # a lambda closing over the differentiated w, and jit's options
    g = grad(lambda x, w: jit(lambda y: jnp.sin(y * w))(x), argnums=1)(x, 2.0)
    np.testing.assert_allclose(g, x * np.cos(2 * x), rtol=1e-12)
    h = hessian(lambda x, k: jit(lambda y, k: jnp.sin(k * y), static_argnums=1)(x, k))(x, 2.0)
    np.testing.assert_allclose(h, -4 * np.sin(2 * x), rtol=1e-12)


def test_tree_map_with_path_under_grad_vmap_and_jit(x64):
    """tree_map_with_path (optax's masks, weight decay by a leaf's name) in a differentiated
    function: read as tree_map is, the static key paths zipped in first."""
    from secant import tree_util
    params = {"dense": {"w": jnp.asarray([[1.0, -2.0], [0.5, 3.0]]), "b": jnp.asarray([0.3, -0.1])},
              "out": {"w": jnp.asarray([2.0, -1.0])}}

    def l2_of_weights(p):
        decayed = tree_util.tree_map_with_path(
            lambda path, v: jnp.sum(v ** 2) if path[-1].key == "w" else 0.0 * jnp.sum(v), p)
        return sum(tree_util.tree_leaves(decayed))

    def scaled(p, scales):
        return tree_util.tree_map_with_path(
            lambda path, v, s: v * s if tree_util.keystr(path).endswith("['w']") else v,
            p, scales)

    want = {"dense": {"w": 2 * np.asarray(params["dense"]["w"]), "b": np.zeros(2)},
            "out": {"w": 2 * np.asarray(params["out"]["w"])}}
    for g in (grad(l2_of_weights), jit(grad(l2_of_weights))):
        out = g(params)
        for k in want:
            for name in want[k]:
                np.testing.assert_allclose(out[k][name], want[k][name], rtol=1e-12)
    scales = tree_util.tree_map(lambda v: 3.0, params)
    got = grad(lambda p: jnp.sum(scaled(p, scales)["dense"]["w"]))(params)
    np.testing.assert_allclose(got["dense"]["w"], 3.0 * np.ones((2, 2)))
    np.testing.assert_allclose(got["dense"]["b"], 0.0)
    batch = tree_util.tree_map(lambda v: jnp.stack([v, 2 * v]), params)
    out = vmap(l2_of_weights)(batch)
    np.testing.assert_allclose(out, [float(l2_of_weights(params)), 4 * float(l2_of_weights(params))],
                               rtol=1e-12)


def test_matrix_transpose_attribute_mT(x64):
    """x.mT (JAX's array attribute: the last two axes swapped) was refused by the transforms
    ('the attribute .mT is not supported here')."""
    rng = np.random.default_rng(9)
    a = rng.normal(size=(2, 3, 3))

    def gram_trace(a):
        return jnp.sum(jnp.sin(a @ a.mT))

    b = jnp.asarray(a)
    np.testing.assert_allclose(gram_trace(b), np.sum(np.sin(a @ np.swapaxes(a, -1, -2))),
                               rtol=1e-12)
    g = grad(gram_trace)(b)
    fd = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = 1e-6
        fd[idx] = (float(gram_trace(jnp.asarray(a + e))) - float(gram_trace(jnp.asarray(a - e)))) \
            / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(gram_trace))(b), g, rtol=1e-12)
    # per example (the batch axis first, then last): the example's own last two axes swap
    np.testing.assert_allclose(vmap(lambda m: m.mT)(b), np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(vmap(lambda m: m.mT, in_axes=2, out_axes=2)(b),
                               np.swapaxes(a, 0, 1))
    np.testing.assert_allclose(vmap(grad(gram_trace))(jnp.stack([b, 2 * b])),
                               np.stack([g, grad(gram_trace)(2 * b)]), rtol=1e-12)


def test_at_update_in_a_function_with_no_source(x64):
    """A function defined in exec (a notebook cell run by a tool, python -c) is traced into
    source: `x.at[i].multiply(v)` raised an internal TypeError ('_Named' object is not
    subscriptable) there."""
    ns = {"jnp": jnp}
    exec("def bump(x, i):\n    return x.at[-1].multiply(3.0).at[i].add(x[0] ** 2)\n", ns)
    bump = ns["bump"]
    x = jnp.asarray([1.0, 2.0, 0.5])
    np.testing.assert_allclose(bump(x, 1), [1.0, 3.0, 1.5])
    loss = lambda x: jnp.sum(jnp.sin(bump(x, 1)))
    g = grad(loss)(x)
    c = np.cos(np.asarray(bump(x, 1)))
    np.testing.assert_allclose(g, [c[0] + c[1] * 2 * 1.0, c[1], 3 * c[2]], rtol=1e-12)
    np.testing.assert_allclose(jit(grad(loss))(x), g, rtol=1e-12)
    xs = jnp.asarray([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])
    np.testing.assert_allclose(vmap(bump, in_axes=(0, None))(xs, 1),
                               np.stack([bump(xs[0], 1), bump(xs[1], 1)]))
    _, t = secant.jvp(lambda x: bump(x, 1), (x,), (jnp.ones(3),))
    np.testing.assert_allclose(t, [1.0, 1.0 + 2.0, 3.0])


IN_AXIS = 1


def test_vmap_in_axes_tuple_naming_a_constant_inside_grad(x64):
    """vmap(f, in_axes=(IN_AXIS, None))(...) written in a function grad reads: a tuple holding
    a named constant was refused ('its other arguments are literals')."""
    def f(x, w):
        return jnp.sin(x * w)

    def loss(w, xs):
        return jnp.sum(vmap(f, in_axes=(IN_AXIS, None))(xs, w))

    xs = np.arange(6.0).reshape(2, 3) / 5
    want = np.sum(xs * np.cos(xs * 0.7))
    np.testing.assert_allclose(grad(loss)(0.7, xs), want, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(loss))(0.7, xs), want, rtol=1e-12)
    np.testing.assert_allclose(vmap(lambda w: loss(w, xs))(jnp.asarray([0.7, 0.3])),
                               [loss(0.7, xs), loss(0.3, xs)], rtol=1e-12)
