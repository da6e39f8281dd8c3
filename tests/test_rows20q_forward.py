"""Issue 19: grad, value_and_grad and vjp of a function whose reverse pass secant refuses (it
would run a call that sets Python state again: ad/reverse.py _state_error) are computed by
forward mode instead (secant/transforms.py _forward_instead), one jvp per input element. Past
secant.transforms.FORWARD_FALLBACK_LIMIT elements that silently took n runs of the function;
it now raises a SecantError saying why, before any user code runs. Both sides of the limit,
eager, jit, vmap and vjp; values against float64 central differences of a Python replay."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import transforms
from tests.central_differences import grad_fd

calls = 0


def gstep(x):
    global calls
    calls += 1
    return snp.sum(snp.sin(x)) * calls


def loop_range(x):          # three calls of a counter's function: reverse mode is refused
    y = 0.0
    for i in range(3):
        y = y + gstep(x) * (i + 1)
    return y


def loop_range_b(x):        # (the same program, its own derivative cache)
    y = 0.0
    for i in range(3):
        y = y + gstep(x) * (i + 1)
    return y


def _reset():
    global calls
    calls = 0


def _want(x):
    """Float64 central differences of the Python replay, the counter reset per evaluation."""
    def value(v):
        _reset()
        return float(loop_range(v))
    return grad_fd(value, np.asarray(x, np.float64))


RUNS = {
    "grad": lambda f, x: secant.grad(f)(x),
    "value_and_grad": lambda f, x: secant.value_and_grad(f)(x)[1],
    "vjp": lambda f, x: secant.vjp(f, x)[1](1.0)[0],
    "jit_grad": lambda f, x: secant.jit(secant.grad(f))(x),
    "vmap_grad": lambda f, x: secant.vmap(secant.grad(f))(np.stack([x, 2 * x]))[0],
}


def test_the_limit_is_documented_and_in_the_source(x64):
    assert transforms.FORWARD_FALLBACK_LIMIT == 4096
    src = secant.source(secant.grad(loop_range))
    assert "basis_like(x, limit=4096)" in src
    assert "# by forward mode" in src


@pytest.mark.parametrize("run", sorted(RUNS))
def test_below_the_limit_forward_mode_answers(x64, monkeypatch, run):
    """At the limit (8 here) the gradient is forward mode's, right, the counter once a call."""
    monkeypatch.setattr(transforms, "FORWARD_FALLBACK_LIMIT", 8)
    x = np.linspace(-1.0, 1.3, 8)
    want = _want(x)
    _reset()
    got = np.asarray(RUNS[run](loop_range_b, x))
    assert calls == 3
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_past_the_limit_refused_before_user_code_runs(x64, monkeypatch, run):
    """One element more: a SecantError naming forward mode, the limit and the user's line,
    and the counter untouched (no run of the function)."""
    monkeypatch.setattr(transforms, "FORWARD_FALLBACK_LIMIT", 8)
    x = np.linspace(-1.0, 1.3, 9)
    _reset()
    with pytest.raises(secant.SecantError, match=r"forward mode.*9 elements.*"
                       r"FORWARD_FALLBACK_LIMIT = 8") as info:
        RUNS[run](loop_range_b, x)
    assert calls == 0
    assert __file__ in str(info.value)


def test_default_limit_refuses_4097_elements(x64):
    x = np.linspace(-1.0, 1.0, 4097)
    _reset()
    with pytest.raises(secant.SecantError, match="4097 elements.*FORWARD_FALLBACK_LIMIT = 4096"):
        secant.grad(loop_range)(x)
    assert calls == 0


def pair_loop(p):
    y = 0.0
    for i in range(3):
        y = y + gstep(p["a"]) * gstep(p["b"])
    return y


def test_a_pytree_input_counts_all_its_leaves(x64, monkeypatch):
    monkeypatch.setattr(transforms, "FORWARD_FALLBACK_LIMIT", 8)
    too_big = {"a": np.linspace(0.1, 0.5, 4), "b": np.linspace(0.2, 0.9, 5)}
    _reset()
    with pytest.raises(secant.SecantError, match="9 elements"):
        secant.grad(pair_loop)(too_big)
    assert calls == 0


@pytest.mark.parametrize("run", ["grad", "value_and_grad", "jit_grad"])
def test_grad_by_forward_mode_of_a_dict_input(x64, run):
    """Was an internal error: the generated `from_columns(columns, p) * grad_seed(out[0])`
    multiplied a dict by a scalar ('dtype object is not supported'); the seed is now checked,
    not multiplied in. pair_loop is 44 * S(a) * S(b), S the sum of sines (calls 1..6)."""
    ok = {"a": np.linspace(0.1, 0.5, 4), "b": np.linspace(0.2, 0.9, 4)}
    _reset()
    got = RUNS[run](pair_loop, ok)
    assert calls == 6 and set(got) == {"a", "b"}
    sa, sb = np.sum(np.sin(ok["a"])), np.sum(np.sin(ok["b"]))
    np.testing.assert_allclose(np.asarray(got["a"]), 44 * np.cos(ok["a"]) * sb, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got["b"]), 44 * sa * np.cos(ok["b"]), rtol=1e-12)


def test_an_explicit_jacfwd_has_no_limit(x64, monkeypatch):
    """Forward mode asked for is not the fallback: jacfwd past the limit still runs."""
    monkeypatch.setattr(transforms, "FORWARD_FALLBACK_LIMIT", 8)
    x = np.linspace(-1.0, 1.3, 9)
    _reset()
    got = np.asarray(secant.jacfwd(loop_range_b)(x))
    assert calls == 3
    np.testing.assert_allclose(got, _want(x), rtol=1e-6, atol=1e-8)
