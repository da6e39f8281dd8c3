"""Issue 15: a call of the user's @contextlib.contextmanager generator is judged by its own
generator's source, whichever context was read first. Every such context's wrapper shares
contextlib's one code object, and the effects check (nonlocals.mutates_outside) cached what it
read under that code: after `scope(name, log)` (which appends to its argument) was read,
`timing("fit")` (which appends to a global log only) was refused as changing an object it is
given, and a with around a helper branching on its argument could not be differentiated. A
call bound once keeps the user's name: `context = scaled('a')`, never `scaled_out = ...`.
Checked against closed forms and float64 central differences."""
import numpy as np

import secant.numpy as jnp
from secant import grad, source
from secant.transformer import nonlocals

from others15_check import fd_grad
from test_ctx15_generator_contexts import (
    test_a_generator_sharing_no_state_with_the_callees_is_spelled_out as timed_branch_checked,
    timed_branch, timing)
from test_explore15f_pystyle import scope


def logged(x):
    log = []
    with scope("layer", log) as nm:
        y = jnp.tanh(x) * len(nm)
    return y * y + len(log)


def test_each_context_is_read_from_its_own_generator_in_either_order():
    for first in (scope, timing):
        nonlocals._MUTATES.clear()
        nonlocals._WRITES_STATE.clear()
        nonlocals.mutates_outside(first)
        assert nonlocals.mutates_outside(scope) == "write"     # (its argument, appended to)
        assert nonlocals.mutates_outside(timing) is False      # (a global log only)
        assert nonlocals.writes_state(timing) is False


def test_a_logging_context_after_one_changing_its_argument(x64):
    nonlocals._MUTATES.clear()
    x = 0.3
    want = 2 * (5 * np.tanh(x)) * 5 * (1 - np.tanh(x) ** 2)
    np.testing.assert_allclose(grad(logged)(x), want, rtol=1e-12)
    np.testing.assert_allclose(fd_grad(logged, (np.float64(x),)), want, rtol=1e-6)
    timed_branch_checked(x64)     # (timing's with, read after scope's, spelled out)


CALLS = []


def get(name):
    CALLS.append(name)
    return {"w": 2.0, "b": 0.5}[name]


def getter(x):
    w = get("w")
    return jnp.sin(x * w) * w


def test_a_call_bound_once_keeps_the_users_name(x64):
    CALLS.clear()
    x = 0.7
    np.testing.assert_allclose(grad(getter)(x), 4 * np.cos(2 * x), rtol=1e-12)
    assert CALLS == ["w"]
    text = source(grad(getter))
    assert "w = get('w')" in text and "get_out" not in text
    assert "context = timing('fit')" in source(grad(timed_branch))
