"""Issue 15 (dyn15): an item set on a dict read from a parameter (`layer = params["layer"];
layer[name] = v`) or on a parameter dict itself (`params[name] = v`). The desugarer rewrote
every `y[i] = v` of a local to `y = y.at[i].set(v)` (an array's update), even in a branch that
never runs, and left a parameter's refused when the transform was built. Now a string key is a
dict's functional copy (`d = d | {k: v}`, as a transform's copy of its arguments sees it), and
a key that may index either (a name) is `if isinstance(d, dict): d = d | {k: v} / else: <the
array's update>` (a parameter array's refused when that branch runs). Each against float64
central differences or a closed form, jit(grad), and vmap(grad) against a Python loop. An update
that the container it was read from would see in Python (that container read after it) is
refused, not silently dropped."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(1515)


def params_np():
    return {"layer": {"w": RNG.normal(size=3), "b": np.asarray(0.3)}}


def in_a_branch_never_taken(params, x):
    layer = params["layer"]
    if jnp.sum(x) > 100.0:              # a traced test: jit and vmap read both branches
        layer["w"] = layer["w"] * 2.0
    return jnp.sum(jnp.tanh(layer["w"] * x)) + layer["b"]


def by_a_name(params, x, name="w"):
    layer = params["layer"]
    layer[name] = jnp.tanh(layer[name])
    return jnp.sum(layer["w"] * x) + layer["b"] ** 2


def by_a_name_augmented(params, x, name="w"):
    layer = params["layer"]
    layer[name] += x
    return jnp.sum(layer["w"] ** 2) * layer["b"]


def parameter_dict_in_a_loop(layer, x, names=("w", "b")):
    for name in names:
        layer[name] = layer[name] * 2.0
    return jnp.sum(jnp.sin(layer["w"] * x)) + layer["b"]


def parameter_dict_static_flag(layer, x, clip=False):
    if clip:
        layer["w"] = jnp.clip(layer["w"], -0.5, 0.5)
    return jnp.sum(layer["w"] ** 2 * x) + layer["b"]


def fd(f, params, x, eps=1e-6):
    """Central differences of f in every leaf of params (float64)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out[k] = fd(lambda p, x_: f({**params, k: p}, x_), v, x, eps)
            continue
        g = np.zeros_like(v)
        for idx in np.ndindex(np.shape(v)):
            vals = []
            for sign in (1.0, -1.0):
                moved = np.array(v, dtype=np.float64)
                moved[idx] += sign * eps
                vals.append(float(f(to_snp({**params, k: moved}), jnp.asarray(x))))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        out[k] = g
    return out


def assert_close(got, want, rtol=1e-6, atol=1e-8):
    assert sorted(got) == sorted(want)
    for k in want:
        if isinstance(want[k], dict):
            assert_close(got[k], want[k], rtol, atol)
        else:
            np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=rtol, atol=atol)


@pytest.mark.parametrize("f", [in_a_branch_never_taken, by_a_name, by_a_name_augmented])
def test_item_set_on_a_dict_read_from_a_parameter(x64, f):
    params, x = params_np(), RNG.normal(size=3)
    g = grad(f)(to_snp(params), jnp.asarray(x))
    assert_close(g, fd(f, params, x))
    assert_close(jit(grad(f))(to_snp(params), jnp.asarray(x)), fd(f, params, x))
    check_vmap(lambda x_: grad(f)(to_snp(params), x_), (RNG.normal(size=(4, 3)),))


def test_item_set_by_a_name_closed_form(x64):
    params, x = params_np(), RNG.normal(size=3)
    w, b = params["layer"]["w"], params["layer"]["b"]
    g = grad(by_a_name)(to_snp(params), jnp.asarray(x))
    np.testing.assert_allclose(g["layer"]["w"], x / np.cosh(w) ** 2, rtol=1e-12)
    np.testing.assert_allclose(g["layer"]["b"], 2 * b, rtol=1e-12)


@pytest.mark.parametrize("f", [parameter_dict_in_a_loop, parameter_dict_static_flag])
def test_item_set_on_a_parameter_dict(x64, f):
    layer, x = params_np()["layer"], RNG.normal(size=3)
    fd_layer = fd(lambda p, x_: f(p["layer"], x_), {"layer": layer}, x)["layer"]
    g = check_grad(f, layer, x)
    assert_close(g, fd_layer)
    check_vmap(lambda x_: grad(f)(to_snp(layer), x_), (RNG.normal(size=(4, 3)),))
    if f is parameter_dict_in_a_loop:
        w = layer["w"]
        np.testing.assert_allclose(g["w"], 2 * x * np.cos(2 * w * x), rtol=1e-12)
        np.testing.assert_allclose(g["b"], 2.0, rtol=1e-12)


def test_static_flag_taken(x64):
    layer, x = {"w": np.array([0.2, -0.9, 0.7]), "b": np.asarray(0.1)}, RNG.normal(size=3)
    f = lambda p, x_: parameter_dict_static_flag(p, x_, clip=True)     # noqa: E731
    g = check_grad(f, layer, x)
    np.testing.assert_allclose(g["w"], [2 * 0.2 * x[0], 0.0, 0.0], atol=1e-12)
    # the caller's dict is left as it was: the derivative's forward pass once ran the function
    # as written, which clipped the caller's w in place (the gradient then read w clipped)
    held = to_snp(layer)
    g = grad(f)(held, jnp.asarray(x))
    np.testing.assert_allclose(g["w"], [2 * 0.2 * x[0], 0.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(held["w"], layer["w"])


def array_item_by_a_name(x, i):
    x[i] = 1.0
    return jnp.sum(x)


def test_array_parameter_item_set_by_a_name_refused_when_it_runs():
    with pytest.raises(secant.SecantError, match="immutable") as info:
        grad(array_item_by_a_name)(jnp.ones(3), 1)
    assert "x[i] = 1.0" in str(info.value)


def array_local_item(x, i):
    y = x * 2.0
    y[i] = 0.0
    return jnp.sum(y ** 2)


def test_array_local_item_set_stays_an_array_update(x64):
    x = RNG.normal(size=3)
    g = grad(array_local_item)(jnp.asarray(x), 1)
    np.testing.assert_allclose(g, 8 * x * np.array([1.0, 0.0, 1.0]), rtol=1e-12)


def read_again(params, x):
    layer = params["layer"]
    layer["w"] = layer["w"] * 2.0
    return jnp.sum(params["layer"]["w"] * x)


def test_update_the_source_container_would_see_is_refused():
    """Python's params sees layer's change; the rewrite (a new layer) once dropped it silently
    (grad x, not 2 x)."""
    with pytest.raises(secant.SecantError, match="read again after this line"):
        grad(read_again)(to_snp(params_np()), jnp.ones(3))
