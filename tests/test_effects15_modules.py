"""Issue 15, effects15: the user's Python effects (a note appended to a global list) run once
per call under grad, value_and_grad, jvp, jit(grad) and vmap(grad) of losses over the flax-like
module systems of tests/test_others10_modules.py (@compact modules pushing themselves on a global
stack, setup() modules) and tests/test_flax15_scopes.py (a module bound to a scope), as Python
and JAX run them: once per call eagerly, once per trace under jit. A derivative whose callee
dispatches on a callee known only at run time that no transform takes (flax's `bound(x)` in
`model.apply`) is traced whole from the second call on; on the first call every transform
finishes from the values the call computed, tracing that callee with the arguments its
derivative was given (secant/transforms.py _Answer; vmap(grad): the batched form of that
trace's vjp). Each first call's value is checked against float64 central differences, so an
answer taken that way can be wrong only visibly."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, jit, jvp, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, fd_grad, to_snp
import test_flax15_scopes as scopes
import test_others10_modules as modules

NOTES = []


def note(tag):
    NOTES.append(tag)


def _note_around(model):
    """loss calling `model`, a parameter of this function: the derivative dispatches on
    type(model).apply known only at run time."""
    def loss(params, x, y):
        note("before")
        pred = model.apply({"params": params}, x)
        note("after")
        return jnp.mean((pred - y) ** 2)
    return loss


def _compact():
    model = modules.MLPCompact((4, 3))      # (a local of known class: MLPCompact.apply)

    def loss(params, x, y):
        note("before")
        pred = model.apply({"params": params}, x)
        note("after")
        return jnp.mean((pred - y) ** 2)
    return loss, to_snp(model.init(0, modules.X)["params"]), modules.X, modules.Y


def _compact_passed():
    model = modules.MLPCompact((4, 3))
    return _note_around(model), to_snp(model.init(0, modules.X)["params"]), modules.X, \
        modules.Y


def _setup_passed():
    model = modules.MLPSetup((3,))
    return _note_around(model), to_snp(model.init(0, modules.X)["params"]), modules.X, \
        modules.Y


def _scoped():
    model = scopes.CopiedModel()

    def loss(params, x, y):
        note("before")
        pred = model.apply({"params": params}, x)
        note("after")
        return jnp.mean((pred - y) ** 2)
    return loss, to_snp(scopes.VARIABLES["params"]), scopes.X, scopes.Y


MODELS = {"compact": _compact, "compact_passed": _compact_passed,
          "setup_passed": _setup_passed, "scoped": _scoped}


def _run(mode, loss):
    if mode == "grad":
        return grad(loss)
    if mode == "value_and_grad":
        return lambda p, x, y: value_and_grad(loss)(p, x, y)[1]
    if mode == "jit_grad":
        return jit(grad(loss))
    if mode == "vmap_grad":
        return lambda p, x, y: vmap(grad(loss), (None, 0, 0))(p, x[None], y[None])
    # jvp along the params (its tangent: the params themselves, x and y fixed): d loss . params
    return lambda p, x, y: jvp(loss, (p, x, y), (p, 0 * x, 0 * y))[1]


# effects of the first and of later calls, as Python and JAX run them
WANT = {"grad": (2, 2), "value_and_grad": (2, 2), "jvp": (2, 2), "jit_grad": (2, 0),
        "vmap_grad": (2, 2)}
def _expected(loss, mode, params, x, y):
    """The float64 central-difference answer of `mode` at (params, x, y)."""
    g = fd_grad(lambda p: loss(p, x, y), (params,))
    if mode == "vmap_grad":
        return g
    if mode == "jvp":
        return sum(float(np.vdot(a, np.asarray(b))) for a, b in
                   zip(tree_util.tree_leaves(g), tree_util.tree_leaves(params)))
    return g


@pytest.mark.parametrize("name,mode", [pytest.param(name, mode, id=f"{name}-{mode}")
                                       for name in MODELS for mode in WANT])
def test_effects_once_per_call_and_first_value_right(x64, name, mode):
    loss, params, x, y = MODELS[name]()
    run = _run(mode, loss)
    x, y = jnp.asarray(x), jnp.asarray(y)
    counts, results = [], []
    for _ in range(3):
        NOTES.clear()
        results.append(run(params, x, y))
        counts.append(len(NOTES))
    want = _expected(loss, mode, params, np.asarray(x), np.asarray(y))
    if mode == "vmap_grad":     # (a batch of one)
        results = [tree_util.tree_map(lambda a: a[0], r) for r in results]
    for r in results:
        assert_trees_close(r, want, rtol=1e-6, atol=1e-8)
    assert counts == [WANT[mode][0]] + [WANT[mode][1]] * 2, counts
