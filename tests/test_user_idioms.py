"""Idioms of code written by others (issue 15 §2-§4): a list of layer dicts split into hidden
layers and the last one, imports inside the function, `with ... as v`, tree_reduce and tree_map
with is_leaf, and secant.jvp of a lambda that closes over a local. Values against float64
finite differences, closed forms, Python loops and eager runs."""
import contextlib
import functools

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util


def _fd_grad(f, tree, eps=1e-6):
    """Central differences of the scalar f at every leaf of tree (float64)."""
    leaves, treedef = tree_util.tree_flatten(tree)
    leaves = [np.asarray(leaf, np.float64) for leaf in leaves]
    out = []
    for k, leaf in enumerate(leaves):
        g = np.zeros_like(leaf)
        for i in np.ndindex(leaf.shape):
            step = np.zeros_like(leaf)
            step[i] = eps
            up = [*leaves[:k], leaf + step, *leaves[k + 1:]]
            down = [*leaves[:k], leaf - step, *leaves[k + 1:]]
            g[i] = (float(f(tree_util.tree_unflatten(treedef, up)))
                    - float(f(tree_util.tree_unflatten(treedef, down)))) / (2 * eps)
        out.append(g)
    return tree_util.tree_unflatten(treedef, out)


def _close(got, want, tol=1e-6):
    for a, b in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# --- a list of layer dicts: hidden, last = params[:-1], params[-1] ------------------------------

def mlp(params, x):
    hidden, last = params[:-1], params[-1]
    for p in hidden:
        x = snp.tanh(x @ p["w"] + p["b"])
    return snp.sum(x @ last["w"] + last["b"])


def _layers(rng):
    sizes = [(2, 3), (3, 3), (3, 1)]
    return [{"w": rng.normal(size=s), "b": rng.normal(size=s[1])} for s in sizes]


def test_hidden_and_last_layers_of_a_list_parameter(x64):
    rng = np.random.default_rng(0)
    params, x = _layers(rng), rng.normal(size=2)
    want = _fd_grad(lambda p: mlp(p, x), params)
    got = secant.grad(mlp)(params, x)
    assert isinstance(got, list) and isinstance(got[0], dict)
    _close(got, want)
    _close(secant.jit(secant.grad(mlp))(params, x), want)
    tangent = tree_util.tree_map(np.ones_like, params)
    _, out_dot = secant.jvp(mlp, (params, x), (tangent, np.zeros(2)))
    np.testing.assert_allclose(float(out_dot), sum(float(np.sum(g)) for g in
                                                   tree_util.tree_leaves(want)), rtol=1e-6)


def test_hidden_and_last_layers_per_example(x64):
    rng = np.random.default_rng(1)
    params, xs = _layers(rng), rng.normal(size=(4, 2))
    got = secant.vmap(secant.grad(mlp), (None, 0))(params, xs)
    for k in range(4):
        _close(tree_util.tree_map(lambda g: g[k], got), secant.grad(mlp)(params, xs[k]))


# --- imports inside the function ----------------------------------------------------------------

def with_imports(x):
    import secant.numpy as jnp
    from math import pi
    from secant.numpy import cos
    return jnp.sin(x) * cos(x) + pi * x


def shadows_snp(x):
    import secant.numpy as snp      # the name generated code uses for itself
    return snp.exp(snp.sin(x))


def test_imports_inside_the_function(x64):
    x = 0.7
    want = np.cos(2 * x) + np.pi
    assert np.isclose(secant.grad(with_imports)(x), want)
    assert np.isclose(secant.jit(secant.grad(with_imports))(x), want)
    xs = np.array([0.1, 0.7])
    np.testing.assert_allclose(secant.vmap(with_imports)(xs),
                               [with_imports(v) for v in xs], rtol=1e-12)
    assert np.isclose(secant.grad(shadows_snp)(x), np.exp(np.sin(x)) * np.cos(x))
    assert np.isclose(secant.grad(secant.grad(shadows_snp))(x),
                      np.exp(np.sin(x)) * (np.cos(x) ** 2 - np.sin(x)))
    assert "import secant.numpy as jnp" in secant.source(secant.grad(with_imports))


def missing_import(x):
    import secant_no_such_module    # noqa: F401
    return x


def test_a_failing_import_names_the_users_line():
    with pytest.raises(secant.SecantError, match=r"test_user_idioms.py:\d+") as e:
        secant.grad(missing_import)(1.0)
    assert "secant_no_such_module" in str(e.value)


# --- with ... as v ------------------------------------------------------------------------------

LOG = []


@contextlib.contextmanager
def scaled(name):
    LOG.append(f"enter {name}")
    yield 2.0
    LOG.append(f"exit {name}")


def with_as(x):
    with scaled("a") as c, contextlib.suppress(KeyError):
        y = snp.sin(x) * c
    with np.errstate(all="ignore"):
        z = y * x
    return z


def test_with_as_runs_the_context_and_differentiates_its_body(x64):
    LOG.clear()
    x = 0.4
    assert np.isclose(secant.grad(with_as)(x), 2 * (np.cos(x) * x + np.sin(x)))
    assert LOG == ["enter a", "exit a"]
    assert np.isclose(secant.grad(secant.grad(with_as))(x),
                      2 * (2 * np.cos(x) - x * np.sin(x)))
    xs = np.array([0.4, -1.0])
    np.testing.assert_allclose(secant.vmap(with_as)(xs), [with_as(v) for v in xs], rtol=1e-12)
    assert "c = context.__enter__()" in secant.source(secant.grad(with_as))


# --- tree_reduce, tree_map with is_leaf ---------------------------------------------------------

def sum_of_squares(p):
    return tree_util.tree_reduce(lambda a, b: a + snp.sum(b ** 2), p, 0.0)


def largest(p):
    return tree_util.tree_reduce(snp.maximum, p) * 2.0


def pairs_product(p):
    q = tree_util.tree_map(lambda t: t[0] * snp.sin(t[1]), p,
                           is_leaf=lambda n: isinstance(n, tuple))
    return sum(tree_util.tree_leaves(q))


def test_tree_reduce(x64):
    p = {"a": np.array([1.0, -3.0]), "b": 2.0}
    _close(secant.grad(sum_of_squares)(p), {"a": 2 * p["a"], "b": 4.0})
    _close(secant.grad(largest)({"a": 1.0, "b": 2.0}), {"a": 0.0, "b": 2.0})
    _, t = secant.jvp(sum_of_squares, (p,), ({"a": np.ones(2), "b": 1.0},))
    assert np.isclose(t, 2 * (1 - 3) + 4.0)
    batch = {"a": np.arange(6.0).reshape(3, 2), "b": np.arange(3.0)}
    np.testing.assert_allclose(secant.vmap(sum_of_squares)(batch),
                               [sum_of_squares({"a": batch["a"][k], "b": batch["b"][k]})
                                for k in range(3)])
    assert "for b in tree_leaves(p)" in secant.source(secant.vmap(sum_of_squares)) or \
        "tree_leaves(p)" in secant.source(secant.vmap(sum_of_squares))


def test_tree_map_with_is_leaf(x64):
    p = {"a": (1.0, 2.0), "b": (3.0, 4.0)}
    want = _fd_grad(pairs_product, p)
    got = secant.grad(pairs_product)(p)
    assert isinstance(got["a"], tuple)
    _close(got, want)
    _close(secant.jit(secant.grad(pairs_product))(p), want)
    batch = {"a": (np.array([1.0, 2.0]), np.array([0.5, 1.0])),
             "b": (np.array([3.0, 1.0]), np.array([0.0, 2.0]))}
    np.testing.assert_allclose(
        secant.vmap(pairs_product)(batch),
        [pairs_product(tree_util.tree_map(lambda v: v[k], batch)) for k in range(2)],
        rtol=1e-12)


# --- secant.jvp of a lambda closing over a local ------------------------------------------------

def g(y, w):
    return snp.sin(y * w) * w


def directional(x, w):
    return secant.jvp(lambda y: g(y, w), (x,), (snp.ones_like(x),))[1]


def test_jvp_of_a_lambda_closing_over_a_local(x64):
    x, w = 0.3, 1.7
    assert np.isclose(directional(x, w), np.cos(x * w) * w * w)
    assert np.isclose(secant.grad(directional)(x, w), -np.sin(x * w) * w ** 3)
    assert np.isclose(secant.grad(directional, argnums=1)(x, w),
                      -np.sin(x * w) * x * w * w + 2 * w * np.cos(x * w))
    xs = np.array([0.3, 0.5])
    np.testing.assert_allclose(secant.vmap(directional, (0, None))(xs, w),
                               np.cos(xs * w) * w * w, rtol=1e-12)
    assert np.isclose(secant.jit(secant.grad(directional))(x, w), -np.sin(x * w) * w ** 3)


# --- functools.partial of a nested function that closes over a differentiated local ------------

def partial_of_closure(x, w):
    def layer(a, scale):
        return snp.tanh(a * w) * scale
    g = functools.partial(layer, scale=2.0)
    return g(x) + g(x * 2)


def test_partial_of_a_nested_function_closing_over_a_parameter(x64):
    x, w = 0.5, 1.5

    def f(x, w):
        return 2 * np.tanh(x * w) + 2 * np.tanh(2 * x * w)
    eps = 1e-6
    dw = (f(x, w + eps) - f(x, w - eps)) / (2 * eps)
    dx = (f(x + eps, w) - f(x - eps, w)) / (2 * eps)
    assert np.isclose(secant.grad(partial_of_closure, argnums=1)(x, w), dw, rtol=1e-7)
    assert np.isclose(secant.grad(partial_of_closure)(x, w), dx, rtol=1e-7)
    ws = np.array([1.5, -0.3])
    np.testing.assert_allclose(secant.vmap(partial_of_closure, (None, 0))(x, ws),
                               [f(x, v) for v in ws], rtol=1e-12)
    assert "layer(x, scale=2.0, w=w)" in secant.source(secant.grad(partial_of_closure, argnums=1))


def test_second_derivative_of_a_jvp_of_a_closure(x64):
    x, w = 0.3, 1.7
    assert np.isclose(secant.grad(secant.grad(directional))(x, w), -np.cos(x * w) * w ** 4)
    assert np.isclose(secant.grad(secant.grad(directional), argnums=1)(x, w),
                      _fd_grad(lambda v: secant.grad(directional)(x, float(v)), np.array(w)),
                      rtol=1e-6)


# --- a helper returning a nested tuple with batched and unbatched values (was silently wrong) ---

def _pair_and_value(x, c):
    return (x * 2.0, c + 1.0), x


def uses_nested_outputs(x, c):
    (p, q), r = _pair_and_value(x, c)
    return q * p + r


def test_vmap_of_a_helper_returning_a_nested_tuple_of_mixed_values():
    # q does not depend on x: vmap must still give it a batch axis where its tuple is batched
    # (it was returned as is and read as a batch of scalars: shape (3,), not (3, 3))
    xs, c = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    got = secant.vmap(uses_nested_outputs, (0, None))(xs, c)
    want = np.stack([uses_nested_outputs(x, c) for x in xs])
    assert np.shape(got) == (3, 3)
    np.testing.assert_allclose(got, want)


def sum_of_outer_squares(x):
    return snp.sum(snp.outer(x, x) ** 2, axis=0)


def test_jit_of_a_hessian_runs_secants_helpers_as_written(x64):
    # jit staged the helpers' `if a_batched` (a Python bool) as lax.cond, which vmap then
    # batched: "the truth value of an array ... is ambiguous"
    x = np.array([0.3, -0.7, 1.1])
    eager = secant.hessian(sum_of_outer_squares)(x)
    np.testing.assert_allclose(secant.jit(secant.hessian(sum_of_outer_squares))(x), eager,
                               rtol=1e-12)
    # output j is x_j^2 S with S = sum_i x_i^2: its Hessian is 2 S [j=k=m] + 4 x_j x_m [j=k]
    # + 4 x_j x_k [j=m] + 2 x_j^2 [k=m]
    d, S = np.eye(3), np.sum(x ** 2)
    want = (2 * S * np.einsum("jk,jm->jkm", d, d) + 4 * np.einsum("j,m,jk->jkm", x, x, d)
            + 4 * np.einsum("j,k,jm->jkm", x, x, d) + 2 * np.einsum("j,km->jkm", x ** 2, d))
    np.testing.assert_allclose(eager, want, rtol=1e-12)


# --- vmap with in_axes per pytree leaf, read by another transform (was silently wrong) ----------

def _square_of_sum(p):
    return snp.sum(p["a"]) ** 2


per_leaf = secant.vmap(secant.grad(_square_of_sum), in_axes=({"a": 0},))


def uses_per_leaf_vmap(xs):
    return snp.sum(per_leaf({"a": xs})["a"] ** 2)


def test_a_transform_of_a_vmap_with_per_leaf_axes_never_reads_the_unbatched_function():
    # the vmap wrapper copied grad(f)'s attributes (functools.wraps): grad and vmap of a caller
    # read the unbatched gradient (grad gave 360 everywhere for FD's 72 / 288)
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(per_leaf({"a": xs})["a"], [[6.0] * 3, [24.0] * 3])
    assert np.isclose(secant.jit(uses_per_leaf_vmap)(xs), 1836.0)
    # read leaf by leaf (secant/batch.py _leafwise): d/dx_ij of sum_i 3 (2 S_i)^2 = 24 S_i
    want = np.repeat([[72.0], [288.0]], 3, axis=1)
    np.testing.assert_allclose(secant.grad(uses_per_leaf_vmap)(xs), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(uses_per_leaf_vmap))(xs), want, rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(uses_per_leaf_vmap)(np.stack([xs, 2 * xs])),
                               [1836.0, 4 * 1836.0], rtol=1e-6)


def test_a_holomorphic_gradient_read_by_another_transform():
    g = secant.grad(lambda z: z ** 3, holomorphic=True)
    assert np.isclose(g(1.0 + 2.0j), 3 * (1.0 + 2.0j) ** 2)
    zs = snp.asarray([1.0 + 2.0j, 2.0 - 1.0j])
    np.testing.assert_allclose(secant.vmap(g)(zs), 3 * np.asarray(zs) ** 2, rtol=1e-6)
    with pytest.raises(secant.SecantError, match=r"holomorphic=True\) with has_aux"):
        secant.vmap(secant.grad(lambda z: (z ** 3, z), holomorphic=True, has_aux=True))(zs)


# --- a lambda in the middle of a statement that spans lines -------------------------------------

LOSSES = {"sin": lambda q: snp.sum(snp.sin(q)), "sq": lambda q: snp.sum(q ** 2),
          "mixed": lambda q: snp.sum(snp.sin(q) * q)}


def test_lambdas_inside_a_statement_spanning_lines(x64):
    x = np.array([0.3, -1.2])
    grads = {name: secant.grad(fn)(x) for name, fn in LOSSES.items()}
    np.testing.assert_allclose(grads["sin"], np.cos(x))
    np.testing.assert_allclose(grads["sq"], 2 * x)
    np.testing.assert_allclose(grads["mixed"], np.cos(x) * x + np.sin(x))


# --- a list or dict parameter passed whole to a helper twice (was silently wrong) ---------------

def _doubled(ws):
    return [w * 2.0 for w in ws]


def list_to_helper_twice(ws):
    u = _doubled(ws)
    v = _doubled(ws)
    return u[0] * v[1]


def field_to_helper_twice(p):
    u = _doubled(p["ws"])
    v = _doubled(p["ws"])
    return u[0] * v[1] + snp.sin(p["ws"][1])


def nested_dict_read_twice(x):
    params = {"enc": {"w": x[:2], "b": x[2]}, "dec": {"w": x[3:]}}
    h = snp.tanh(params["enc"]["w"] * params["enc"]["b"])
    return snp.sum(h * params["dec"]["w"])


def test_cotangents_of_a_list_used_twice_add_leaf_by_leaf(x64):
    # ws_bar + ws_bar_1 of two lists concatenated them: a gradient list twice as long
    got = secant.grad(list_to_helper_twice)([1.5, 0.5])
    assert len(got) == 2
    _close(got, [2.0 * 2.0 * 0.5, 2.0 * 2.0 * 1.5])
    got = secant.grad(field_to_helper_twice)({"ws": [1.5, 0.5]})
    assert len(got["ws"]) == 2
    _close(got, {"ws": [2.0, 6.0 + np.cos(0.5)]})
    x = np.array([0.3, -0.5, 0.8, 1.1, -0.4])
    _close(secant.grad(nested_dict_read_twice)(x), _fd_grad(nested_dict_read_twice, x))
    _close(secant.jit(secant.grad(nested_dict_read_twice))(x), _fd_grad(nested_dict_read_twice, x))
