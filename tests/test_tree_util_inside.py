"""secant.tree_util called inside the functions secant transforms (tree_leaves, tree_flatten /
tree_unflatten, tree_map with a lambda or a function over one or several trees): gradients
against float64 finite differences with dict, list and tuple parameters, the cotangent shaped
as the pytree; jvp against the gradient; vmap against a Python loop; jit against eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util
from secant.backends.errors import SecantError


def l2_loss(params, x):
    l2 = sum(snp.sum(p ** 2) for p in secant.tree_util.tree_leaves(params))
    return 0.5 * l2 + snp.sum(snp.tanh(tree_util.tree_leaves(params)[-1] * x))


def sgd_step_loss(params, x):
    grads = tree_util.tree_map(snp.sin, params)
    new = tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return sum(snp.sum(snp.cos(p * x[0]) * p) for p in tree_util.tree_leaves(new))


def _square(p):
    return p * p


def flatten_loss(params, x):
    leaves, treedef = tree_util.tree_flatten(tree_util.tree_map(_square, params))
    back = tree_util.tree_unflatten(treedef, [snp.cos(leaf) for leaf in leaves])
    return snp.sum(tree_util.tree_leaves(back)[-1] * x[1]) + \
        sum(snp.sum(leaf) for leaf in tree_util.tree_leaves(back))


def three_trees_loss(params, x):
    scales = tree_util.tree_map(lambda p: 2.0 + 0.0 * p, params)
    out = tree_util.tree_map(lambda p, s, q: s * p * q, params, scales, params)
    return sum(snp.sum(leaf * x[2]) for leaf in tree_util.tree_leaves(out))


MODELS = [l2_loss, sgd_step_loss, flatten_loss, three_trees_loss]


def _params(kind):
    rng = np.random.default_rng(0)
    w, b, c = rng.normal(size=(3,)), rng.normal(size=(2,)), rng.normal(size=(3,))
    if kind == "dict":
        return {"w": snp.asarray(w), "b": snp.asarray(b), "c": snp.asarray(c)}
    if kind == "list":
        return [snp.asarray(w), [snp.asarray(b), snp.asarray(c)]]
    return (snp.asarray(w), (snp.asarray(b),), snp.asarray(c))


X = np.array([0.7, -1.3, 0.4])


def _fd(f, params, eps=1e-6):
    leaves, treedef = tree_util.tree_flatten(params)
    out = []
    for i, leaf in enumerate(leaves):
        leaf = np.asarray(leaf)
        g = np.zeros(leaf.shape)
        for j in range(leaf.size):
            e = np.zeros(leaf.size)
            e[j] = eps
            up, down = list(leaves), list(leaves)
            up[i] = snp.asarray(leaf + e.reshape(leaf.shape))
            down[i] = snp.asarray(leaf - e.reshape(leaf.shape))
            g.flat[j] = (float(f(tree_util.tree_unflatten(treedef, up)))
                         - float(f(tree_util.tree_unflatten(treedef, down)))) / (2 * eps)
        out.append(g)
    return tree_util.tree_unflatten(treedef, out)


def _close(got, want, **tol):
    assert tree_util.tree_structure(got) == tree_util.tree_structure(want)
    for a, b in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), **tol)


@pytest.mark.parametrize("kind", ["dict", "list", "tuple"])
@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_grad_against_finite_differences(x64, model, kind):
    params = _params(kind)
    got = secant.grad(model)(params, snp.asarray(X))
    assert type(got) is type(params)            # the cotangent is shaped as the pytree
    _close(got, _fd(lambda p: model(p, snp.asarray(X)), params), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_jit_of_grad_matches_eager(x64, model):
    params = _params("dict")
    _close(secant.jit(secant.grad(model))(params, snp.asarray(X)),
           secant.grad(model)(params, snp.asarray(X)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_jvp_matches_the_gradient(x64, model):
    params = _params("list")
    tangent = tree_util.tree_map(lambda p: snp.ones_like(p) * 0.5, params)
    _, dot = secant.jvp(lambda p: model(p, snp.asarray(X)), (params,), (tangent,))
    grads = secant.grad(model)(params, snp.asarray(X))
    want = sum(np.vdot(g, t) for g, t in zip(tree_util.tree_leaves(grads),
                                             tree_util.tree_leaves(tangent)))
    np.testing.assert_allclose(float(dot), want, rtol=1e-8)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_vmap_over_inputs_and_over_params_matches_a_loop(x64, model):
    params = _params("dict")
    xs = snp.asarray(np.stack([X, 2 * X, -X]))
    _close(secant.vmap(model, in_axes=(None, 0))(params, xs),
           snp.stack([model(params, xs[i]) for i in range(3)]), rtol=1e-10)
    batched = tree_util.tree_map(lambda p: snp.stack([p, 2 * p]), params)
    _close(secant.vmap(model, in_axes=(0, None))(batched, snp.asarray(X)),
           snp.stack([model(params, snp.asarray(X)),
                      model(tree_util.tree_map(lambda p: 2 * p, params), snp.asarray(X))]),
           rtol=1e-10)


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_per_example_grads_match_a_loop(x64, model):
    params = _params("tuple")
    xs = snp.asarray(np.stack([X, 2 * X]))
    got = secant.vmap(secant.grad(model), in_axes=(None, 0))(params, xs)
    want = [secant.grad(model)(params, xs[i]) for i in range(2)]
    _close(got, tree_util.tree_map(lambda *gs: snp.stack(gs), *want), rtol=1e-10)


def test_update_returns_the_pytree(x64):
    def update(params, grads):
        return secant.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    params = _params("dict")
    grads = tree_util.tree_map(lambda p: 3.0 * p, params)
    # d/dgrads of sum(update(params, grads)["w"] * x)
    got = secant.grad(lambda p, g: snp.sum(update(p, g)["w"] * X[0]), argnums=(0, 1))(params,
                                                                                      grads)
    _close(got[0], {"w": snp.full(3, X[0]), "b": snp.zeros(2), "c": snp.zeros(3)}, rtol=1e-12)
    _close(got[1], {"w": snp.full(3, -0.1 * X[0]), "b": snp.zeros(2), "c": snp.zeros(3)},
           rtol=1e-12)
    _close(secant.jit(update)(params, grads), update(params, grads), rtol=1e-12)


def test_mismatched_trees_are_an_error_not_a_value():
    def f(params, other):
        out = tree_util.tree_map(lambda p, q: p * q, params, other)
        return sum(snp.sum(leaf) for leaf in tree_util.tree_leaves(out))

    params = {"w": snp.ones(3), "b": snp.ones(2)}
    with pytest.raises(SecantError, match="does not match the first tree's structure"):
        secant.grad(f)(params, [snp.ones(3), snp.ones(2)])


def test_generated_source_reads_as_tree_code():
    src = secant.source(secant.grad(sgd_step_loss))
    assert "tree_unflatten(tree_structure(params), " in src
    assert "tree_leaves(params)" in src


def test_is_leaf_none_is_the_default_and_a_predicate_is_read(x64):
    def f(params):
        return sum(snp.sum(p ** 2) for p in tree_util.tree_leaves(params, is_leaf=None)) + \
            snp.sum(tree_util.tree_map(lambda p: p * 3.0, params, is_leaf=None)["w"])

    params = {"w": snp.asarray([0.5, -1.0]), "b": snp.asarray([2.0])}
    _close(secant.grad(f)(params), {"b": snp.asarray([4.0]), "w": snp.asarray([4.0, 1.0])},
           rtol=1e-12)

    def g(params):
        return snp.sum(tree_util.tree_map(lambda p: p * 3.0, params,
                                          is_leaf=lambda t: isinstance(t, list))["w"])

    _close(secant.grad(g)(params), {"b": snp.asarray([0.0]), "w": snp.asarray([3.0, 3.0])},
           rtol=1e-12)         # (is_leaf: tests/test_user_idioms.py)
