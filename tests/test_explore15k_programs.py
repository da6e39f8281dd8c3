"""Issue 15, fourth battery (explore15k): programs from domains the first three left out, in
tests/user_programs/domains.py: reinforcement learning (REINFORCE, GAE by a reversed scan,
PPO's clipped objective), finance (Black-Scholes by ndtr/erf, greeks by grad and hessian,
Monte Carlo with random.split), robotics and graphics (quaternions, kinematics, ray-sphere
hits, a soft rasteriser), graph networks (segment_sum, .at[].add), PDE stencils, FFT signal
processing, a Kalman filter in scan, EM, a VAE, a diffusion loss, ranking (sort, argsort,
top_k), interpolation, Sinkhorn (fori_loop, while_loop), InfoNCE, batch norm with a running
state as aux, quantile/Huber losses, an MDN; and Python styles (match, the walrus,
generators, dataclass default factories, partial(jit, static_argnames), tree_util.Partial,
{**a, **b}). Each runs through grad, hessian, grad∘grad, jit, jit∘grad, vmap, vmap∘grad, jvp
and jacrev, checked against float64 central differences, a Python loop and the eager value
(tests/user_programs/checks.py); and the bad inputs of tests/user_programs/bad_inputs_fourth.py.

The default profile runs every program through one transform, rotating over the transforms;
HYPOTHESIS_PROFILE=thorough runs every pair. `.venv/bin/python bench/user_programs.py --fourth`
prints the whole table. Below: a named regression test for each fix the battery led to.
"""
import dataclasses
import functools

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import lax
from user_programs import FOURTH, bad_inputs_fourth, checks

PER_PROGRAM = 1

_WHY = [      # (program, its failing transforms, why)
]
# (program, transform) -> why it fails today; strict: a fix must remove its entry
KNOWN_FAILURES = {(name, t): why for name, ts, why in _WHY for t in ts}
KNOWN_BAD_INPUTS = {}

# two programs that differentiate Black-Scholes themselves (greeks) under jit by default: their
# turns (grad∘grad: a fourth derivative, 12 CPU s; jacrev: a third, 5.5) run under thorough
TURNS = {"fin_greeks_by_grad": "jit", "fin_hessian_greeks": "jit"}
test_program, test_bad_input = checks.battery(FOURTH, checks.SECOND_TRANSFORMS, PER_PROGRAM,
                                              KNOWN_FAILURES, bad_inputs_fourth, KNOWN_BAD_INPUTS,
                                              turns=TURNS)


def test_battery_size():
    assert len(FOURTH) >= 50 and len(bad_inputs_fourth.CASES) >= 15


# --- regression tests of what the battery found ---------------------------------------------------
def _gae_value_loss(values, frozen, rewards):
    """the GAE value loss with its targets held by stop_gradient; `frozen` is what the targets
    are computed from (values itself inside the program; fixed when taking differences)"""
    gamma, lam = 0.99, 0.95
    deltas = rewards + gamma * jnp.append(frozen[1:], 0.0) - frozen

    def step(gae, delta):
        gae = delta + gamma * lam * gae
        return gae, gae
    _, adv = lax.scan(step, 0.0, deltas, reverse=True)
    return jnp.mean((values - (adv + frozen)) ** 2)


def _gae_stopped(values, rewards):
    return _gae_value_loss(values, lax.stop_gradient(values), rewards)


def test_stop_gradient_of_a_reversed_scan_holds_the_targets(x64):
    """rl_gae as first written (targets = stop_gradient(advantages + values)): the battery's
    finite differences cannot see stop_gradient, so the check is here: the gradient is that of
    the loss with the targets frozen at the current values."""
    v, r = np.array([0.5, -0.2, 0.8, 0.1, 0.3]), np.array([1.0, 0.0, -0.5, 0.2, 0.7])
    want = checks.fd(lambda u: float(_gae_value_loss(u, v, r)), v)
    for run in (secant.grad(_gae_stopped), secant.jit(secant.grad(_gae_stopped))):
        np.testing.assert_allclose(run(v, r), want, rtol=1e-6, atol=1e-9)


DEFAULTS = {"w": np.array([0.1, 0.1, 0.1]), "b": 0.0}


def _merged_loss(p, x, y):
    params = {**DEFAULTS, **p}
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


def test_a_merge_with_a_global_dict_under_vmap(x64):
    """st_dict_merge: `{**DEFAULTS, **p}` (DEFAULTS a module's dict) under vmap read as
    `DEFAULTS | align(p, DEFAULTS)`, NumPy's `|` of arrays ("cannot convert dict (object dtype)
    to an array"); and hessian's `zeros_like_tree(DEFAULTS) | p_dot` so. `{**a, **b}` is a
    dict merge whatever its operands' names hold, and a global dict is a dict."""
    x, y = np.linspace(-1.0, 1.0, 12).reshape(4, 3), np.array([0.2, -0.1, 0.4, 0.0])
    ws = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3]])
    got = secant.vmap(_merged_loss, in_axes=({"w": 0}, None, None))({"w": ws}, x, y)
    np.testing.assert_allclose(got, [_merged_loss({"w": w}, x, y) for w in ws], rtol=1e-12)
    h = secant.hessian(_merged_loss)({"w": ws[0]}, x, y)["w"]["w"]
    np.testing.assert_allclose(h, 2 * x.T @ x / x.shape[0], rtol=1e-10)
    g = secant.vmap(secant.grad(_merged_loss), in_axes=({"w": 0}, None, None))({"w": ws}, x, y)
    np.testing.assert_allclose(g["w"], [2 * x.T @ (x @ w - y) / 4 for w in ws], rtol=1e-10)


def _mse_to(target, pred):
    return jnp.mean((pred - target) ** 2)


def _apply(loss_fn, w, x):
    return loss_fn(jnp.tanh(x @ w))


def _tree_partial(w, x, y):
    loss_fn = secant.tree_util.Partial(_mse_to, y)
    return _apply(loss_fn, w, x)


def _functools_partial(w, x, y):
    loss_fn = functools.partial(_mse_to, y)
    return _apply(loss_fn, w, x)


@pytest.mark.parametrize("program", [_tree_partial, _functools_partial])
def test_a_partial_of_a_differentiated_value_passed_on(x64, program):
    """st_tree_partial under jvp: `loss_fn = tree_util.Partial(_mse_to, y)` with y
    differentiated, passed to a helper, was refused ("does not know the derivative of
    tree_util.Partial"; functools.partial: "cannot differentiate through the object"). A
    partial of a global Python function reads as a nested def calling it, as one of a nested
    def did. (Written in place, `_apply(Partial(_mse_to, y), w, x)`, it reads as the named one:
    tests/test_zip15_partials.py.)"""
    w, x = np.eye(3) * 0.5 + 0.1, np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    y = np.linspace(0.2, -0.3, 12).reshape(4, 3)
    want = checks.fd(lambda t: float(program(w, x, t)), y)
    np.testing.assert_allclose(secant.grad(program, argnums=2)(w, x, y), want, rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(secant.jit(secant.grad(program, argnums=2))(w, x, y), want,
                               rtol=1e-6, atol=1e-9)
    _, tangent = secant.jvp(program, (w, x, y), (np.zeros_like(w), np.zeros_like(x), y))
    np.testing.assert_allclose(tangent, np.sum(want * y), rtol=1e-6)


@dataclasses.dataclass(frozen=True)
class _Frozen:
    w: object
    b: object


def _replace_loop(w):
    p = _Frozen(w, jnp.zeros(3))
    for i in range(3):
        p = dataclasses.replace(p, b=p.b + jnp.sin(p.w) * i)
    return jnp.sum(p.b ** 2)


def _write_frozen(w):
    p = _Frozen(w, w)
    p.b = w * 2
    return jnp.sum(p.b)


def test_a_frozen_dataclass_stepped_by_replace(x64):
    """dataclass_replace: a @dataclass(frozen=True) of parameters stepped by
    dataclasses.replace in a Python loop. jit failed inside (KeyError: dtype('O'): the loop,
    a fori_loop in the generated code, lifted the object as a constant); grad and vmap refused
    it (its __setattr__ is its own). Now generated code's fori_loop over a range carrying an
    object that is no pytree runs unrolled, as Python runs it; a frozen dataclass reads as its
    fields; and `p.b = v` on one is refused as Python refuses it."""
    w = np.array([0.3, -0.2, 0.5])
    want = 18.0 * np.sin(w) * np.cos(w)          # b = 3 sin(w), d/dw sum(b^2)
    np.testing.assert_allclose(secant.jit(_replace_loop)(w), _replace_loop(w), rtol=1e-12)
    for run in (secant.grad(_replace_loop), secant.jit(secant.grad(_replace_loop))):
        np.testing.assert_allclose(run(w), want, rtol=1e-10)
    ws = np.stack([w, 2 * w])
    np.testing.assert_allclose(secant.vmap(_replace_loop)(ws),
                               [_replace_loop(w), _replace_loop(2 * w)], rtol=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        _write_frozen(w)
    for transform in (secant.grad, secant.vmap):
        with pytest.raises(secant.SecantError, match=r"p\.b = "):     # (the user's line)
            transform(_write_frozen)(w if transform is secant.grad else ws)
    # a lax.fori_loop the user wrote with such a carry: JAX refuses it (not a valid JAX type);
    # read through generated code (where it is a Python loop's) it runs unrolled, the same value
    np.testing.assert_allclose(
        secant.jit(lambda v: lax.fori_loop(0, 2, lambda i, p: _Frozen(p.w * 2, p.b),
                                           _Frozen(v, v)).w)(w), 4 * w)


def _two_keys(x):
    flags = jnp.array([1, 0, 1, 0, 1])
    _, by_flag = lax.sort((flags, x), num_keys=2)
    return jnp.sum(by_flag * jnp.arange(5.0))


def _key_val(k, v):
    a, b = lax.sort_key_val(k, v)
    return jnp.sum(a * b * jnp.arange(5.0))


def test_lax_sort_of_several_operands(x64):
    """sort_with_payload: lax.sort((keys, payload), num_keys=1) and sort_key_val had no
    derivative or batching rule (refused); they read as the keys' sorting permutation taken
    from every operand (secant/lax_sort_sources.py)."""
    x, v = np.array([0.3, -1.2, 0.7, 0.1, 2.0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(secant.grad(_two_keys)(x), checks.fd(_two_keys, x), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(_two_keys))(x), [2, 0, 3, 1, 4])
    np.testing.assert_allclose(secant.vmap(_two_keys)(np.stack([x, -x])),
                               [_two_keys(x), _two_keys(-x)], rtol=1e-12)
    for argnums, arg in ((0, x), (1, v)):
        g = secant.grad(_key_val, argnums=argnums)(x, v)
        want = checks.fd(lambda t: _key_val(t, v) if argnums == 0 else _key_val(x, t), arg)
        np.testing.assert_allclose(g, want, rtol=1e-6)


def _vectorized_rows(w, x):
    f = jnp.vectorize(lambda row, m: jnp.tanh(m @ row), signature="(n),(n,n)->(n)")
    return jnp.sum(f(x, w) ** 2)


def test_a_vectorized_lambda_bound_to_a_local(x64):
    """vectorize_signature: `f = jnp.vectorize(lambda row, m: ..., signature=...)` then f(x, w)
    was refused under every transform but jit (no rule for the vectorized lambda, a function
    known only at run time); it now reads as the vectorize written in place, as a named
    function's did."""
    w, x = np.eye(3) * 0.5 + 0.1, np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    want = checks.fd(lambda t: float(_vectorized_rows(t.reshape(3, 3), x)), w.ravel()).reshape(3, 3)
    np.testing.assert_allclose(secant.grad(_vectorized_rows)(w, x), want, rtol=1e-6)
    ws = np.stack([w, 2 * w])
    np.testing.assert_allclose(secant.vmap(_vectorized_rows, in_axes=(0, None))(ws, x),
                               [_vectorized_rows(v, x) for v in ws], rtol=1e-12)


def _walrus_countdown(w):
    n, h = 4, jnp.ones(3)
    while (n := n - 1) > 0:
        h = jnp.tanh(w @ h) + 0.1 * n
    return jnp.sum(h ** 2)


def _countdown_by_hand(w):
    h = np.ones(3)
    for n in (3, 2, 1):
        h = np.tanh(w @ h) + 0.1 * n
    return np.sum(h ** 2)


def test_a_walrus_in_a_while_test(x64):
    """st_walrus_while: `while (n := n - 1) > 0:` was refused by grad and vmap ('cannot be
    transformed yet') and failed inside jit (UnboundLocalError: the functionalised cond
    assigned n, a local of its own). The test's assignments now run before the loop and at
    the end of its body (a body that continues is still refused); jit keeps the loop Python's
    (a test on a traced value: TracerBoolConversionError, as JAX)."""
    w = np.eye(3) * 0.4 + 0.1
    want = checks.fd(lambda t: _countdown_by_hand(t.reshape(3, 3)), w.ravel()).reshape(3, 3)
    np.testing.assert_allclose(secant.jit(_walrus_countdown)(w), _countdown_by_hand(w))
    for run in (secant.grad(_walrus_countdown), secant.jit(secant.grad(_walrus_countdown))):
        np.testing.assert_allclose(run(w), want, rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(_walrus_countdown)(np.stack([w, 2 * w])),
                               [_countdown_by_hand(w), _countdown_by_hand(2 * w)])


def _first_middle_last(layers, x):
    match layers:
        case [first, *middle, last]:
            h = jnp.tanh(x @ first)
            for w in middle:
                h = jnp.tanh(h @ w)
            return jnp.sum((h @ last) ** 2)
        case _:
            return jnp.sum(x)


def test_a_star_pattern_under_vmap(x64):
    """st_match_star: `case [first, *middle, last]` on a list of layers under vmap failed
    inside (TypeError: list indices must be integers or slices, not tuple: the pattern's
    `v[1:len(v) - 1]` and `v[len(v) - 1]` read as a batched array's). They read list(v)[1:-1]
    and list(v)[-1] now: items of a list."""
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    layers = [np.eye(3) * 0.5, np.eye(3)[::-1] * 0.3, np.ones((3, 2)) * 0.2]
    batch = [np.stack([a, 1.5 * a]) for a in layers]
    got = secant.vmap(_first_middle_last, in_axes=(0, None))(batch, x)
    np.testing.assert_allclose(got, [_first_middle_last(layers, x),
                                     _first_middle_last([1.5 * a for a in layers], x)])
    g = secant.vmap(secant.grad(_first_middle_last), in_axes=(0, None))(batch, x)
    np.testing.assert_allclose(g[1][0], secant.grad(_first_middle_last)(layers, x)[1])
