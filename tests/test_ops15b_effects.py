"""Issue 15, ops15b: effects of the user's Python under a derivative that is retried as a
whole-function trace (flax15b, 9417b11: a derivative that meets a run-time callee no transform
takes, flax's `bound(x)` of a module whose @compact __call__ pushes itself on a global stack,
is traced whole with each call's arguments). Python runs a function's effects once per call;
JAX once per call eagerly and once per trace under jit. Counted here with an effectful helper
(appending to a global list) before and after `model.apply`.

Measured (eager grad, jit(grad), jvp, vmap(grad); this file): later calls run the effects as
JAX does (once per call; under jit none after the trace). The first call runs them once too:
the source derivative runs, meets the callee in its reverse pass (jvp: at the call), and that
callee alone is traced with the arguments its derivative was given (effects15, effects15b);
the function is traced whole from the next call on. (Which callee fails is known only when the
code runs: `bound` is a copy of the module made inside apply.)"""
import pytest

import secant.numpy as jnp
from secant import grad, jit, jvp, vmap

from others15_check import assert_trees_close, to_snp
from test_others10_modules import MLPCompact, X, Y

CALLS = []


def note(tag):
    CALLS.append(tag)


def _model_and_loss():
    """A fresh model and loss (the retry is decided once per function)."""
    model = MLPCompact((4, 3))
    params = to_snp(model.init(0, X)["params"])

    def loss(params, x, y):
        note("before")
        pred = model.apply({"params": params}, x)
        note("after")
        return jnp.mean((pred - y) ** 2)
    return params, loss


def _runner(mode, loss):
    if mode == "grad":
        return grad(loss)
    if mode == "jit_grad":
        return jit(grad(loss))
    if mode == "vmap_grad":
        return vmap(grad(loss), (None, 0, 0))
    return lambda p, x, y: jvp(loss, (p, x, y), (p, x, y))[1]


# effects of one call as Python/JAX run them: first call, later calls
EXPECTED = {"grad": (2, 2), "jit_grad": (2, 0), "vmap_grad": (2, 2), "jvp": (2, 2)}
MODES = list(EXPECTED)


def _counts(mode):
    params, loss = _model_and_loss()
    run = _runner(mode, loss)
    x, y = jnp.asarray(X), jnp.asarray(Y)
    counts, results = [], []
    for _ in range(3):
        CALLS.clear()
        results.append(run(params, x, y))
        counts.append(len(CALLS))
    return counts, results


@pytest.mark.parametrize("mode", MODES)
def test_later_calls_run_effects_once(x64, mode):
    counts, results = _counts(mode)
    assert counts[1:] == [EXPECTED[mode][1]] * 2, counts
    for r in results[1:]:       # (the same answer at every call)
        assert_trees_close(r, results[0], rtol=1e-12, atol=0)


# effects15, effects15b: every transform answers the failing callee by tracing it with the
# arguments its derivative was given (secant/transforms.py _Answer): the user's Python does not
# run again (jit(grad): the user's own callee traced, not its form staged for jit; vmap(grad):
# the batched vjp of that trace).
@pytest.mark.parametrize("mode", MODES)
def test_first_call_runs_effects_once(x64, mode):
    counts, _ = _counts(mode)
    assert counts[0] == EXPECTED[mode][0], counts
