"""items15n: a call the user's code makes for its effect, its result dropped (`fn(x)` of a
function parameter, as haiku's init calls `forward(get, x)`), is written in the jvp as the call
alone, from the op that knows it (ad/forward.py assign), not by cutting generated lines at
" = ". Its effects run once per call; the jvp's value is checked against the closed form.
"""
import numpy as np

import secant
import secant.numpy as jnp
from test_items15n_object_list_items import _helper

log = []


def _noisy(v):
    log.append(1)
    return v * 2.0


def _run(fn, x):
    fn(x)
    fn(x * 3.0)
    return jnp.sum(jnp.sin(x) * x)


def outer(x):
    return _run(_noisy, x)


X = np.array([0.3, -0.5, 1.2])
V = np.array([1.0, 0.5, -2.0])


def test_the_jvp_keeps_the_calls_made_for_their_effect(x64):
    f = secant.jvp_fn(outer)
    del log[:]
    out, out_dot = f(X, V)
    assert len(log) == 2                # each call once, as the user's code runs it
    np.testing.assert_allclose(out, np.sum(np.sin(X) * X), rtol=1e-12)
    np.testing.assert_allclose(out_dot, np.sum((np.cos(X) * X + np.sin(X)) * V), rtol=1e-12)
    lines = [ln.split("#")[0].strip() for ln in _helper(f, "_run_jvp").splitlines()]
    calls = [ln for ln in lines if ln.startswith("dynamic_call_jvp(fn, ")]
    assert calls == ["dynamic_call_jvp(fn, x, x_dot)",
                     "dynamic_call_jvp(fn, x_times_3, x_times_3_dot)"], lines
    assert not any(ln.startswith(("fn_out", "_noisy_out")) for ln in lines), lines


def test_jvp_of_grad_with_the_effect_call(x64):
    del log[:]
    _, hv = secant.jvp(secant.grad(outer), (X,), (V,))
    h = np.diag(2 * np.cos(X) - np.sin(X) * X)
    np.testing.assert_allclose(hv, h @ V, rtol=1e-10)
    assert log          # the effect ran
