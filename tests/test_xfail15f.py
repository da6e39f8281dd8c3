"""Issue 15 known gaps fixed at their cause (xfail15f): each a named regression test of the
kind, a second example of another shape, checked against float64 finite differences, a Python
loop or eager."""
import itertools

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, vmap

from others15_check import check_grad, fd_grad, to_snp

RNG = np.random.default_rng(151515)


# --- a loop-variable return over an empty iterable falls through, as in Python ---------------
def first_scaled(x, xs):
    for v in xs:
        return x * v
    return jnp.sin(x)


def first_positive(w, scales, rows):
    for i, (c, v) in enumerate(zip(scales, rows)):
        if c > 0:
            return jnp.sum(w * v) * (i + 1.0)
    return jnp.sum(jnp.cos(w))


def test_loop_variable_return_over_an_empty_iterable(x64):
    x = 0.7
    for xs in ([], [2.0, 3.0], ()):
        want = x * xs[0] if xs else np.sin(x)
        np.testing.assert_allclose(first_scaled(x, xs), want, rtol=1e-12)
        np.testing.assert_allclose(jit(first_scaled)(x, xs), want, rtol=1e-12)
        np.testing.assert_allclose(grad(first_scaled)(x, xs),
                                   fd_grad(lambda x: first_scaled(x, xs), (x,)), rtol=1e-6)
        np.testing.assert_allclose(jit(grad(first_scaled))(x, xs),
                                   grad(first_scaled)(x, xs), rtol=1e-12)
    w = RNG.normal(size=3)
    for scales in ([], [-1.0, 2.0, 3.0, 0.5], [-1.0, -2.0]):
        rows = to_snp(RNG.normal(size=(len(scales), 3)))
        check_grad(lambda w: first_positive(w, scales, rows), w)
        ws = RNG.normal(size=(3, 3))
        np.testing.assert_allclose(
            vmap(grad(first_positive), in_axes=(0, None, None))(to_snp(ws), scales, rows),
            np.stack([grad(first_positive)(to_snp(v), scales, rows) for v in ws]), rtol=1e-12)


# --- a generator that never ends: a clear error at its loop, never a hang ----------------------
def naturals(x):
    k = 0.0
    while True:
        yield x * k
        k += 1.0


def take_three(x):
    total = x
    for term, _ in zip(naturals(x), range(3)):
        total = total * 1.5 + term
    return total


def counted(x):
    for k in itertools.count(1):
        yield jnp.sin(x) / k


def first_counted(w):
    return jnp.sum(next(counted(w)))


def halvings(x, n):
    k = 0
    while True:         # left by its return: not endless
        if k == n:
            return
        yield x / 2.0 ** k
        k += 1


def sum_halvings(x):
    total = 0.0
    for h in halvings(x, 3):
        total = total + jnp.sin(h)
    return total


@pytest.mark.parametrize("f, line", [(take_three, "while True:"),
                                     (first_counted, "for k in itertools.count(1):")])
def test_an_endless_generator_is_refused_at_its_loop(f, line):
    assert np.isfinite(float(f(jnp.asarray(0.5))))           # eager: Python's lazy generator
    for transform in (grad, vmap, lambda f: jit(grad(f))):
        with pytest.raises(secant.SecantError, match="never ends") as info:
            x = jnp.ones(3) if transform is vmap or f is first_counted else jnp.asarray(0.5)
            transform(f)(x)
        assert f"{__file__}:" in str(info.value) and line in str(info.value)


def test_a_generator_left_by_a_return_inside_while_true_still_runs(x64):
    x = 0.8
    g = check_grad(sum_halvings, x)
    np.testing.assert_allclose(g, sum(np.cos(x / 2 ** k) / 2 ** k for k in range(3)), rtol=1e-12)
    xs = RNG.normal(size=4)
    np.testing.assert_allclose(vmap(sum_halvings)(to_snp(xs)), [sum_halvings(v) for v in xs],
                               rtol=1e-12)


# --- a staged `if` that flips a Python int: per-output activity of the cond ---------------------
def halve_steps(x, k):
    if k > 2:            # staged by jit into a cond of (x, k): k stays a Python int (range(k))
        x = x * 0.5
        k = k - 2
    total = x
    for _ in range(k):
        total = jnp.sin(total) * x
    return total


def halve_steps_np(x, k):
    if k > 2:
        x, k = x * 0.5, k - 2
    total = x
    for _ in range(k):
        total = np.sin(total) * x
    return total


@pytest.mark.parametrize("k", [5, 2])
def test_staged_if_flipping_a_python_int_read_by_range(x64, k):
    f = lambda x: halve_steps(x, k)
    x = 0.7
    fd = (halve_steps_np(x + 1e-6, k) - halve_steps_np(x - 1e-6, k)) / 2e-6
    for g in (grad(f), jit(grad(f)), jit(jacrev(f))):
        np.testing.assert_allclose(g(x), fd, rtol=1e-7)
    np.testing.assert_allclose(jit(lambda x: jvp(f, (x,), (1.0,))[1])(x), fd, rtol=1e-7)
    h = fd_grad(grad(f), (x,))
    for hh in (jit(hessian(f)), jit(jacfwd(grad(f))), jit(grad(grad(f)))):
        np.testing.assert_allclose(hh(x), h, rtol=1e-5)
    xs = RNG.normal(size=4)
    np.testing.assert_allclose(jit(vmap(f))(to_snp(xs)), [halve_steps_np(v, k) for v in xs],
                               rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad(f)))(to_snp(xs)), [grad(f)(v) for v in xs],
                               rtol=1e-12)


# --- a Jacobian of a callee with Python side effects runs them once per call ------------------
LOG = []


class Meter:
    reads = 0


METER = Meter()


def logged_energy(p):
    LOG.append("energy")
    METER.reads += 1
    return jnp.sum(p["k"] * jnp.tanh(p["x"]) ** 2)


def relaxed(x, k):
    p = {"x": x, "k": k}
    for _ in range(2):
        p = {"x": p["x"] - 0.1 * jnp.cos(p["x"]) * logged_energy(p), "k": p["k"]}
    return logged_energy(p)


def _runs(f, *args):
    LOG.clear()
    METER.reads = 0
    out = f(*args)
    assert len(LOG) == METER.reads
    return METER.reads, out


def test_jacobians_of_a_callee_with_side_effects_run_them_once_per_call(x64):
    x, k = to_snp(RNG.normal(size=3)), to_snp(np.abs(RNG.normal(size=3)))
    assert _runs(relaxed, x, k)[0] == 3
    h_fd = np.stack([fd_grad(lambda x: grad(relaxed)(x, k)[i], (x,)) for i in range(3)])
    for name, t in [("hessian", hessian(relaxed)), ("jacfwd(grad)", jacfwd(grad(relaxed))),
                    ("jacrev(jacrev)", jacrev(jacrev(relaxed))),
                    ("jacfwd(jacfwd)", jacfwd(jacfwd(relaxed)))]:
        calls, h = _runs(t, x, k)
        assert calls == 3, name
        np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-7, err_msg=name)
    # (under jit the loop is staged: its body's effects run per trace of it, not per step)
    np.testing.assert_allclose(jit(hessian(relaxed))(x, k), h_fd, rtol=1e-5, atol=1e-7)
    calls, j = _runs(jacfwd(relaxed), x, k)
    assert calls == 3
    np.testing.assert_allclose(j, grad(relaxed)(x, k), rtol=1e-10)
    v = to_snp(RNG.normal(size=3))
    calls, (h, h_dot) = _runs(lambda x: jvp(lambda x: hessian(relaxed)(x, k), (x,), (v,)), x)
    assert calls == 3
    np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-7)
    step = 1e-5 * np.asarray(v)
    h_fd_dot = (np.asarray(hessian(relaxed)(x + step, k))
                - np.asarray(hessian(relaxed)(x - step, k))) / 2e-5
    np.testing.assert_allclose(h_dot, h_fd_dot, rtol=1e-4, atol=1e-7)


# --- reverse over reverse through a Python loop carrying a dict (was silently wrong) ----------
def dict_carry(x):
    p = {"x": x}
    for _ in range(2):
        p = {"x": p["x"] * 0.5 + jnp.sin(p["x"])}
    return p["x"] ** 2


def dict_carry_np(x):
    for _ in range(2):
        x = x * 0.5 + np.sin(x)
    return x ** 2


def pair_carry(w, k):
    state = {"w": w, "k": k}
    for i in range(3):
        state = {"w": state["w"] - 0.2 * jnp.tanh(state["w"] * state["k"]), "k": state["k"] * 1.1}
    return jnp.sum(state["w"] ** 2 * state["k"])


def test_grad_of_grad_through_a_loop_carrying_a_dict(x64):
    x = 0.7
    d1 = lambda x: (dict_carry_np(x + 1e-5) - dict_carry_np(x - 1e-5)) / 2e-5
    np.testing.assert_allclose(grad(grad(dict_carry))(x), (d1(x + 1e-4) - d1(x - 1e-4)) / 2e-4,
                               rtol=1e-5)
    w, k = to_snp(RNG.normal(size=3)), to_snp(np.abs(RNG.normal(size=3)))
    want = np.stack([fd_grad(lambda w: grad(pair_carry)(w, k)[i], (w,)) for i in range(3)])
    for t in (jacrev(grad(pair_carry)), hessian(pair_carry), jacrev(jacrev(pair_carry))):
        np.testing.assert_allclose(t(w, k), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grad(lambda k: jnp.sum(grad(pair_carry)(w, k)))(k),
                               fd_grad(lambda k: jnp.sum(grad(pair_carry)(w, k)), (k,)),
                               rtol=1e-5, atol=1e-7)


# --- a staged `if` inside a Python loop under jit(hessian) (was test_jit_of_hessian_of_roll) ---
def shifted(x, shifts=(1, 0, 2)):
    for s in shifts:
        n = x.shape[0]
        if s % n:       # staged by jit: a cond whose outputs all read as batched made the
            x = jnp.concatenate([x[n - s:], x[:n - s]]) * 1.1   # loop's stack read per example
    return jnp.sum(jnp.sin(x) * x ** 2)


def test_jit_of_hessian_through_a_staged_if_in_a_loop(x64):
    x = to_snp(RNG.normal(size=4))
    want = np.stack([fd_grad(lambda x: grad(shifted)(x)[i], (x,)) for i in range(4)])
    np.testing.assert_allclose(hessian(shifted)(x), want, rtol=1e-5, atol=1e-7)
    for t in (jit(hessian(shifted)), jit(jacfwd(grad(shifted))), jit(jacrev(grad(shifted)))):
        np.testing.assert_allclose(t(x), hessian(shifted)(x), rtol=1e-10)
