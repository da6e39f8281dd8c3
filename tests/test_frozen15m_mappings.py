"""Issue 15 (frozen15m): the kind of the fifth battery's last gaps: Mapping pytrees (a
flax-like FrozenDict whose __getitem__ wraps a dict item, built from differentiated values,
read by tree_leaves / tree_map, given to grad) and lists, tuples and dicts of callables holding
lambdas that close over differentiated values (`[Scale(.5), jnp.tanh, lambda h: h @ w]`),
under grad, jit, jit∘grad, jvp, vmap, vmap∘grad and hessian, each checked against float64
central differences, a Python loop over the batch and the eager value.
"""
import os

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import tree_util
from test_obj15l_stateful_getters import _check, _fd
from user_programs import habits


FrozenDict, Scale, _compose = habits.FrozenDict, habits.Scale, habits._compose


# A: a FrozenDict of differentiated values, read by key and by tree_leaves
def frozen_leaves(x):
    variables = FrozenDict({"params": {"w": x, "b": x[0]}})
    p = variables["params"]
    h = jnp.tanh(x * p["w"] + p["b"])
    return jnp.sum(h ** 2) + sum(jnp.sum(jnp.sin(v)) for v in tree_util.tree_leaves(variables))


# B: tree_map over a FrozenDict, then read back by key
def frozen_tree_map(x):
    p = FrozenDict({"a": x, "b": jnp.cos(x)})
    q = tree_util.tree_map(lambda v: v * v, p)
    return jnp.sum(q["a"] * q["b"]) + jnp.sum(p["b"])


# C: a list of callables with a lambda closing over the differentiated x, passed on
def lambdas_in_list(x):
    layers = [Scale(0.5), jnp.tanh, lambda h: h * x[0], Scale(2.0)]
    return jnp.sum(_compose(layers, x) ** 2)


# D: a dict of callables, one a lambda over x, read by key in a helper
def _apply(acts, h):
    return acts["inner"](jnp.sin(h)) + acts["outer"](h)


def dict_of_lambdas(x):
    acts = {"inner": lambda h: h * x[1], "outer": jnp.tanh}
    return jnp.sum(_apply(acts, x) ** 2)


# E: a list display of lambdas passed directly to a user helper
def lambdas_passed_in_place(x):
    out = _compose([lambda h: h + x[0], jnp.sin, lambda h: h * x[1]], x)
    return jnp.sum(out)


# F: a helper returning a tuple of lambdas over its argument
def _pair(w):
    return (lambda h: h * w, lambda h: jnp.cos(h) + w)


def tuple_of_lambdas_returned(x):
    f, g = _pair(x[0])
    return jnp.sum(g(f(x)) ** 2)


# G: a FrozenDict of params and a list of layers together (a flax-like apply)
def frozen_and_layers(x):
    params = FrozenDict({"dense": {"kernel": x}})
    k = params["dense"]["kernel"]
    layers = [lambda h: h @ k, jnp.tanh, Scale(3.0)]
    return jnp.sum(_compose(layers, x[:, 0]) ** 2)


THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
TRANSFORMS = ("grad", "jit", "jit∘grad", "jvp", "vmap", "vmap∘grad", "hessian")
PROGRAMS = [frozen_leaves, frozen_tree_map, lambdas_in_list, dict_of_lambdas,
            lambdas_passed_in_place, tuple_of_lambdas_returned, frozen_and_layers]


def _pairs():
    """every (program, transform) under HYPOTHESIS_PROFILE=thorough; by default each program
    through two transforms, rotating"""
    for i, p in enumerate(PROGRAMS):
        for k, t in enumerate(TRANSFORMS):
            if THOROUGH or k in (i % len(TRANSFORMS), (i + 3) % len(TRANSFORMS)):
                yield p, t


@pytest.mark.parametrize("program, transform", [
    pytest.param(p, t, id=f"{p.__name__}-{t}") for p, t in _pairs()])
def test_program(x64, program, transform):
    _check(program, transform)


# --- named regression tests -----------------------------------------------------------------------
def _dense_loss(params, x):
    h = jnp.tanh(x @ params["dense1"]["kernel"] + params["dense1"]["bias"])
    return jnp.sum((h @ params["dense2"]["kernel"]) ** 2)


def test_grad_of_a_frozen_dict_is_a_frozen_dict_of_the_dicts_grads(x64):
    """A FrozenDict of params given to grad: its __getitem__ wraps the dict item, whose
    cotangent (a FrozenDict) adds into the dict's by key (was an internal tree_map mismatch)."""
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    plain = {"dense1": {"kernel": np.linspace(0.1, 0.9, 12).reshape(3, 4),
                        "bias": np.linspace(-0.2, 0.2, 4)},
             "dense2": {"kernel": np.linspace(-0.5, 0.5, 8).reshape(4, 2)}}
    g = secant.grad(_dense_loss)(FrozenDict(plain), x)
    assert isinstance(g, FrozenDict)
    for layer, name in (("dense1", "kernel"), ("dense1", "bias"), ("dense2", "kernel")):
        def f(t, layer=layer, name=name):
            p = {k: dict(v) for k, v in plain.items()}
            p[layer][name] = t
            return _dense_loss(p, x)
        np.testing.assert_allclose(g[layer][name], _fd(f, plain[layer][name]), rtol=1e-6,
                                   atol=1e-8)


def test_a_generator_summed_in_a_trace_is_read_each_call(x64):
    """sum(f(v) for v in tree_leaves(FrozenDict(...))) in a function traced on each call: the
    trace writes the generator's items (it kept the generator object, a new one each trace,
    so the derivative was never reused and a stale generator could be read)."""
    g = secant.grad(frozen_leaves)
    for s in (1.0, 2.0):
        x = s * np.linspace(-0.4, 0.8, 6).reshape(2, 3)
        np.testing.assert_allclose(g(x), _fd(frozen_leaves, x), rtol=1e-6, atol=1e-8)
