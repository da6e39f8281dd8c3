"""Python state under staged and traced derivatives (issue 15, silent15q): a transformed
function that reads or writes Python state (globals, nonlocals, object fields, an RNG object's
next(), a list appended to) where the derivative runs through a path other than the plain
generated source. Each case was a silent wrong value or count before; each is now JAX's value
with the state advanced as Python advances it, or a SecantError naming the user's line with
the state left as it was.

1. lax bodies and branches that read state they set (`k += 1; c * k`, `rng.next()`,
   `acc.append(1); len(acc)`): eagerly once per step, under jit and in derivatives once per
   trace: grad(f) read k=3 three times (27x for 6x), jit(grad(f)) traced it twice. Refused.
   Bodies that only update state (a log, a bumped counter never read) still run.
2. Functions with no source (exec): the trace ran their Python on a copy of the globals, so a
   global they set was never written, a counter they read was fixed at its first value, and a
   list they appended to got one recording value. Refused (a function traced on each call,
   which follows its callees, writes the globals they set back instead).
3. vjp's pullback and linearize's jvp computed the function again when called: a global
   rebound in between was read with its new value (JAX keeps the one its call read), and
   linearize ran a counter's function again (count 2 for 1, its value the second call's).
4. vmap's build and checkpoint: right (regression tests); building grad of a function traced
   on each call still runs it (strict xfail). jacrev, vjp and jacfwd of a lax loop whose body
   only updates state run its Python once per step (its replay form in the recompute).
5. Library state (builtin next, Python's random, np.random): a recompute drew again (vjp's
   gradient of the second draw). One draw per call now; a rerun refused as a counter's is.
"""
import importlib
import itertools
import random
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from tests.central_differences import grad_fd

X = np.array([0.3, -1.2, 2.0])
XS = np.stack([X, 0.5 * X])


# --- 1. lax bodies that read Python state they set -------------------------------------------

class Rng:
    """A counter-based random stream, as a user writes one."""

    def __init__(self):
        self.key = 0

    def next(self):
        self.key += 1
        return self.key * 0.1


class Box:
    n = 0


rng = Rng()
box = Box()
k = 0
acc = []
log = []


def tick():
    global k
    k += 1
    return k


def fori_body(i, c):                # reads the global it sets
    global k
    k += 1
    return c * k + snp.sin(c)


def while_body(c):                  # a field of a global object, set and read
    box.n += 1
    return c[0] + 1, c[1] * box.n


def scan_body(c, xi):               # an RNG object's next()
    return c + xi * rng.next(), c * xi


def acc_body(i, c):                 # a list appended to and read
    acc.append(i)
    return c * len(acc)


def yes(x):
    return snp.sin(x) * tick()


def no(x):
    return snp.cos(x)


def f_fori(x):
    return snp.sum(lax.fori_loop(0, 3, fori_body, x))


def f_while(x):
    return snp.sum(lax.while_loop(lambda c: c[0] < 3, while_body, (0, x))[1])


def f_scan(x):
    c, ys = lax.scan(scan_body, 0.0, x)
    return c + snp.sum(ys)


def f_map_lambda(x):                # a lambda written in the call
    return snp.sum(lax.map(lambda xi: xi * xi * rng.next(), x))


def f_acc(x):
    return snp.sum(lax.fori_loop(0, 3, acc_body, x))


def f_cond(x):
    return snp.sum(lax.cond(snp.sum(x) > 0.0, yes, no, x))


def f_switch(x):
    return snp.sum(lax.switch(1, [no, yes], x))


def f_local_nonlocal(x):            # a local def counting through nonlocal
    n = 0

    def body(i, c):
        nonlocal n
        n += 1
        return c * n
    return snp.sum(lax.fori_loop(0, 3, body, x))


def _reset():
    global k
    k = 0
    box.n = 0
    rng.key = 0
    acc.clear()
    log.clear()


def _state():
    return k, box.n, rng.key, len(acc), len(log)


LAX_STATE = {"fori_global": (f_fori, "fori_loop", "k"),
             "while_field": (f_while, "while_loop", "box.n"),
             "scan_rng": (f_scan, "scan", "Rng.next"),
             "map_lambda_rng": (f_map_lambda, "map", "Rng.next"),
             "fori_list": (f_acc, "fori_loop", "acc"),
             "cond_branch": (f_cond, "cond", "tick"),
             "switch_branch": (f_switch, "switch", "tick"),
             "local_nonlocal": (f_local_nonlocal, "fori_loop", "n")}

MODES = {"eager": lambda f: f(X),
         "jit": lambda f: secant.jit(f)(X),
         "grad": lambda f: secant.grad(f)(X),
         "vjp": lambda f: secant.vjp(f, X)[1](1.0),
         "vmap": lambda f: secant.vmap(f)(XS)}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", list(LAX_STATE))
def test_lax_body_reading_state_it_sets_is_refused(x64, case, mode):
    """Silently wrong before (fori_global: eager 9.74, jit 2.07, grad 42.7 vs jacfwd 15.6 vs
    jacrev 229; fori_list: grad 27 where Python's is 6): refused in every mode, the state left
    as it was, the message naming the lax call's line in this file."""
    f, kind, what = LAX_STATE[case]
    _reset()
    refusal = rf"lax\.{kind}'s .* reads Python state"
    if case == "local_nonlocal" and mode not in ("eager", "jit"):
        refusal += "|is a local variable"       # (the transforms' own refusal, before)
    with pytest.raises(secant.SecantError, match=refusal) as e:
        MODES[mode](f)
    assert _state() == (0, 0, 0, 0, 0)
    assert __file__ in str(e.value)
    assert what in str(e.value) or "is a local variable" in str(e.value)


def _python(f, x):
    """f's value at x with the state reset first: Python's answer."""
    _reset()
    return float(f(x))


def log_body(i, c):                 # only appends: never reads the log
    log.append(1)
    return c * 1.1 + snp.sin(c)


def bump_body(c):                   # only bumps a counter it never reads
    global k
    k += 1
    return c[0] + 1, snp.sin(c[1]) * 1.5


def f_log(x):
    return snp.sum(lax.fori_loop(0, 3, log_body, x))


def f_bump(x):
    return snp.sum(lax.while_loop(lambda c: c[0] < 3, bump_body, (0, x))[1])


def f_log_closed(x):
    def body(i, c):                 # closes over x: its replay form takes x after (i, c)
        log.append(1)
        return c * 0.9 + snp.sin(c) * x
    return snp.sum(lax.fori_loop(0, 3, body, x))


def f_scan_closed(x):
    def step(c, xi):
        log.append(1)
        return c * snp.cos(xi) + 0.5 * x, c
    return snp.sum(lax.scan(step, x, snp.stack([x, 0.5 * x, -x]))[0])


def f_while_closed(x):
    def body(c):                    # while_loop_vjp recomputes carries with the replay too
        log.append(1)
        return c[0] + 1, snp.sin(c[1]) * x
    return snp.sum(lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1])


UPDATE_ONLY = {"fori_log": (f_log, lambda: len(log)), "while_bump": (f_bump, lambda: k),
               "fori_log_closed": (f_log_closed, lambda: len(log)),
               "while_closed": (f_while_closed, lambda: len(log)),
               "scan_closed": (f_scan_closed, lambda: len(log))}


@pytest.mark.parametrize("case", list(UPDATE_ONLY))
def test_lax_body_that_only_updates_state_still_runs(x64, case):
    """A body that updates state it never reads computes the same values however often it
    runs: eager, jit and the derivatives agree, grad against central differences; eagerly
    the update runs once per step, as Python runs it."""
    f, count = UPDATE_ONLY[case]
    want = _python(f, X)
    assert count() == 3
    _reset()
    np.testing.assert_allclose(float(secant.jit(f)(X)), want, rtol=1e-12)
    fd = grad_fd(lambda v: _python(f, v), X)
    _reset()
    np.testing.assert_allclose(np.asarray(secant.grad(f)(X)), fd, rtol=1e-6)
    assert count() == 3
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(X)), fd, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jacfwd(f)(X)), fd, rtol=1e-6)


@pytest.mark.parametrize("case", list(UPDATE_ONLY))
@pytest.mark.parametrize("transform", ["jacrev", "vjp", "jacfwd"])
def test_lax_body_updating_state_runs_once_per_step_under_jacobians(x64, transform, case):
    """jacrev, vjp (its pullback) and jacfwd of a lax loop whose body only updates state ran
    the body's Python twice per step (6 appends for 3): the primal run, then the vjp's
    recompute of the loop ran the body as written (a recompute's loop now calls the body's
    replay form, without its effects, given the values the body closes over: deep15t). The
    derivative against central differences."""
    f, count = UPDATE_ONLY[case]
    fd = grad_fd(lambda v: _python(f, v), X)
    _reset()
    got = {"jacrev": lambda: secant.jacrev(f)(X), "jacfwd": lambda: secant.jacfwd(f)(X),
           "vjp": lambda: secant.vjp(f, X)[1](1.0)[0]}[transform]()
    assert count() == 3
    np.testing.assert_allclose(np.asarray(got), fd, rtol=1e-6)


def test_lax_body_reading_a_global_it_does_not_set_still_runs(x64):
    """A body reading a global nobody sets in the loop (a constant scale) is not state."""
    def body(i, c):
        return c * SCALE + snp.sin(c)

    def f(x):
        return snp.sum(lax.fori_loop(0, 3, body, x))

    fd = grad_fd(lambda v: float(f(v)), X)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(X)), fd, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(X)), fd, rtol=1e-6)


SCALE = 0.7


# --- 2. functions with no source (exec) ------------------------------------------------------

EXEC_SOURCE = """
calls = 0
scale = 2.0
log = []


def sets_global(x):
    global calls
    calls += 1
    return snp.sum(snp.sin(x)) * scale


def reads_its_count(x):
    global calls
    calls += 1
    return snp.sum(snp.sin(x)) * calls


def appends(x):
    log.append(1)
    return snp.sum(snp.sin(x)) * len(log)


def appends_only(x):
    log.append(1)
    return snp.sum(snp.sin(x))


class Rng:
    def __init__(self):
        self.key = 0

    def next(self):
        self.key += 1
        return self.key * 0.1


rng = Rng()


def draws(x):
    return snp.sum(snp.sin(x)) * rng.next()


def make():
    n = 0

    def step(x):
        nonlocal n
        n += 1
        return snp.sum(snp.sin(x)) * n
    return step, lambda: n


step, step_count = make()


def reads_scale(x):
    return snp.sum(snp.sin(x)) * scale


class Layer:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return snp.sum(snp.sin(x)) * self.calls


layer = Layer()
"""


@pytest.fixture
def ns():
    space = {"snp": snp}
    exec(EXEC_SOURCE, space)       # noqa: S102 (no file: secant traces these functions)
    return space


def _exec_state(space):
    return space["calls"], len(space["log"]), space["rng"].key, space["step_count"]()


EXEC_MODES = {"grad": lambda f: secant.grad(f)(X),
              "vjp": lambda f: secant.vjp(f, X)[1](1.0),
              "jit_grad": lambda f: secant.jit(secant.grad(f))(X),
              "vmap": lambda f: secant.vmap(f)(XS)}


@pytest.mark.parametrize("mode", list(EXEC_MODES))
@pytest.mark.parametrize("name, what", [
    ("sets_global", "global calls"), ("reads_its_count", "global calls"),
    ("step", "nonlocal n"), ("appends", "log"), ("appends_only", "log"), ("draws", "rng")])
def test_exec_function_setting_state_is_refused(ns, x64, name, what, mode):
    """Silently wrong before: grad of sets_global left calls at 0 (never written),
    reads_its_count's gradient stayed cos(x) * 1 at every call (Python's: * 2 at the second),
    appends put a recording value in the user's list once and never again, draws read
    key 1 forever. Refused now, the state as it was."""
    with pytest.raises(secant.SecantError, match="no source secant can read") as e:
        EXEC_MODES[mode](ns[name])
    assert what in str(e.value)
    assert _exec_state(ns) == (0, 0, 0, 0)


@pytest.mark.parametrize("mode", ["grad", "vjp", "vmap"])
def test_exec_callable_object_counting_its_calls_is_refused(ns, x64, mode):
    """Raised Python's TypeError from inside the trace before (`+=: '_Named' and 'int'`)."""
    with pytest.raises(secant.SecantError, match="no source secant can read"):
        EXEC_MODES[mode](ns["layer"])
    assert ns["layer"].calls == 0


def test_exec_function_under_jit_sets_state_once_per_trace(ns, x64):
    """jit traces the function itself (no source needed): the global is set at the trace, as
    JAX sets it, and the value read is the trace's."""
    jf = secant.jit(ns["reads_its_count"])
    np.testing.assert_allclose(float(jf(X)), np.sin(X).sum(), rtol=1e-12)
    np.testing.assert_allclose(float(jf(X)), np.sin(X).sum(), rtol=1e-12)
    assert ns["calls"] == 1


def test_exec_function_reading_a_rebound_global(ns, x64):
    """A global the function only reads, rebound between calls: each gradient reads it."""
    g = secant.grad(ns["reads_scale"])
    np.testing.assert_allclose(np.asarray(g(X)), 2.0 * np.cos(X), rtol=1e-12)
    ns["scale"] = 3.0
    np.testing.assert_allclose(np.asarray(g(X)), 3.0 * np.cos(X), rtol=1e-12)


REBINDS = '''
import secant.numpy as snp

CALLS = []
act = snp.sin


def note():
    CALLS.append(1)


def setup(x):
    global act
    act = snp.tanh
    return x * 1.0


def f(a):                           # traced on each call: note() changes Python state
    note()
    y = setup(a)
    return act(y) * a
'''

_count = itertools.count()


@pytest.fixture
def rebinds(tmp_path, monkeypatch):
    name = f"silent15q_rebinds_{next(_count)}"
    (tmp_path / f"{name}.py").write_text(REBINDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    yield mod
    sys.modules.pop(name, None)


@pytest.mark.parametrize("mode", ["grad", "jvp", "vmap"])
def test_traced_each_call_writes_back_the_global_a_callee_sets(rebinds, x64, mode):
    """f is traced on each call (its callees followed): setup's `global act; act = snp.tanh`
    ran on the trace's copy of the module and was lost, so the user's act stayed snp.sin
    after the call (Python's: snp.tanh). Written back now, once per call."""
    a = 0.7
    made = {"grad": secant.grad, "jvp": lambda f: f, "vmap": secant.vmap}[mode](rebinds.f)
    rebinds.CALLS.clear()       # (building vmap runs it)
    rebinds.act = snp.sin
    if mode == "grad":
        got = float(made(a))
        h = 1e-6
        want = (np.tanh(a + h) * (a + h) - np.tanh(a - h) * (a - h)) / (2 * h)
    elif mode == "jvp":
        got = float(secant.jvp(rebinds.f, (a,), (1.0,))[1])
        want = np.tanh(a) + a / np.cosh(a) ** 2
    else:
        got = np.asarray(made(X))
        want = np.tanh(X) * X
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert rebinds.act is snp.tanh
    assert len(rebinds.CALLS) == 1


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "both"])
def test_building_a_transform_of_a_function_traced_each_call_runs_nothing(rebinds, x64,
                                                                          transform):
    """Building grad or value_and_grad of a function traced on each call (its callee changes
    Python state) traced it at build time: note() ran twice before any call (state15s: the
    trace is taken at the first call now, as JAX's grad runs nothing until called). Each call
    then runs it once, its global write kept, the gradient against central differences."""
    made = [getattr(secant, t)(rebinds.f) for t in (
        ["grad", "value_and_grad"] if transform == "both" else [transform])]
    assert rebinds.CALLS == [] and rebinds.act is snp.sin
    a, h = 0.7, 1e-6
    want = (np.tanh(a + h) * (a + h) - np.tanh(a - h) * (a - h)) / (2 * h)
    for k, g in enumerate(made, 1):
        out = g(a)
        got = out[1] if isinstance(out, tuple) else out
        np.testing.assert_allclose(float(got), want, rtol=1e-6)
        assert len(rebinds.CALLS) == k and rebinds.act is snp.tanh
        rebinds.act = snp.sin
    if transform == "grad":
        np.testing.assert_allclose(float(made[0](a)), want, rtol=1e-6)
        assert len(rebinds.CALLS) == 2


# --- 3. vjp's pullback and linearize's jvp, called later -------------------------------------

scale = 2.0


def scaled(x):
    return snp.sum(snp.sin(x)) * scale


def scaled_vector(x):
    return snp.sin(x) * scale


def _set_scale(v):
    global scale
    scale = v


def test_vjp_pullback_after_a_global_is_rebound_is_refused(x64):
    """The pullback computes the function again: it read scale = 3.0 (3 cos x) where JAX's
    keeps the 2.0 its vjp call read (2 cos x). Refused, naming the pullback's line."""
    _set_scale(2.0)
    try:
        _, pullback = secant.vjp(scaled, X)
        _set_scale(3.0)
        with pytest.raises(secant.SecantError, match="scale was rebound since vjp") as e:
            pullback(1.0)
        assert __file__ in str(e.value)
    finally:
        _set_scale(2.0)


def test_vjp_pullback_with_the_global_unchanged(x64):
    _set_scale(2.0)
    out, pullback = secant.vjp(scaled, X)
    np.testing.assert_allclose(float(out), 2.0 * np.sin(X).sum(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pullback(1.0)[0]), 2.0 * np.cos(X), rtol=1e-12)
    _set_scale(2.0)         # (rebound to the same value: the same number)
    np.testing.assert_allclose(np.asarray(pullback(3.0)[0]), 6.0 * np.cos(X), rtol=1e-12)


@pytest.mark.parametrize("f", [scaled, scaled_vector], ids=["scalar", "vector"])
def test_linearize_after_a_global_is_rebound_is_refused(x64, f):
    _set_scale(2.0)
    try:
        _, f_jvp = secant.linearize(f, X)
        np.testing.assert_allclose(np.asarray(f_jvp(np.ones(3))),
                                   np.asarray(2.0 * np.cos(X) if f is scaled_vector
                                              else 2.0 * np.cos(X).sum()), rtol=1e-12)
        _set_scale(3.0)
        with pytest.raises(secant.SecantError, match="scale was rebound since linearize") as e:
            f_jvp(np.ones(3))
        assert __file__ in str(e.value)
    finally:
        _set_scale(2.0)


calls = 0


def counted(x):                     # a global counter whose value is used
    global calls
    calls += 1
    return snp.sin(x) * calls


def drawn(x):                       # an RNG object's draw
    return snp.sin(x) * rng.next()


def logged(x):                      # a list appended to and read
    acc.append(1)
    return snp.sin(x) * len(acc)


def _reset_all():
    global calls
    calls = 0
    _reset()


LINEARIZED = {"global_counter": (counted, lambda: calls),
              "rng_object": (drawn, lambda: rng.key),
              "list_read": (logged, lambda: len(acc))}


@pytest.mark.parametrize("case", list(LINEARIZED))
def test_linearize_of_a_stateful_function_runs_it_once(x64, case):
    """linearize's jvp ran the function again at each call: the counter advanced twice (and
    again per call), and the jvp was the second call's (2 cos(x) t where JAX's, traced once,
    is cos(x) t). Now the Jacobian is taken at linearize's one call."""
    f, count = LINEARIZED[case]
    _reset_all()
    out = np.asarray(f(X))
    factor = out[0] / np.sin(X[0])
    _reset_all()
    value, f_jvp = secant.linearize(f, X)
    t = np.array([1.0, 2.0, -0.5])
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f_jvp(t)), factor * np.cos(X) * t, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(value), out, rtol=1e-12)
    assert count() == 1


def test_linearize_of_a_stateful_function_of_two_primals_is_refused(x64):
    def two(x, y):
        return counted(x) * y

    _reset_all()
    with pytest.raises(secant.SecantError, match="sets Python state") as e:
        secant.linearize(two, X, X)
    assert __file__ in str(e.value)
    assert calls == 0


def test_vjp_of_a_counter_with_two_primals(x64):
    """vjp of several primals of a function whose counter value is used: the counter once per
    call, each pullback that call's (JAX's: traced once)."""
    def two(x, y):
        return snp.sum(counted(x) * y)

    _reset_all()
    for n in (1, 2):
        out, pullback = secant.vjp(two, X, 0.5 * X)
        gx, gy = pullback(2.0)
        assert calls == n
        np.testing.assert_allclose(float(out), n * np.sum(np.sin(X) * 0.5 * X), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gx), 2.0 * n * np.cos(X) * 0.5 * X, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gy), 2.0 * n * np.sin(X), rtol=1e-12)


def test_jacrev_and_hessian_of_a_counter_value(x64):
    """jacrev and hessian of a function whose counter value is used: once per call, the
    derivative of that call's count."""
    def loss(x):
        return snp.sum(counted(x))

    _reset_all()
    for n in (1, 3):
        np.testing.assert_allclose(np.asarray(secant.jacrev(counted)(X)),
                                   np.diag(n * np.cos(X)), rtol=1e-12, atol=1e-15)
        assert calls == n
        np.testing.assert_allclose(np.asarray(secant.hessian(loss)(X)),
                                   np.diag(-(n + 1) * np.sin(X)), rtol=1e-12, atol=1e-15)
        assert calls == n + 1


# --- 4. vmap's build and checkpoint: right (regression) --------------------------------------

@pytest.mark.parametrize("build", ["vmap", "vmap_grad", "jacfwd", "checkpoint"])
def test_building_a_transform_runs_no_python(x64, build, capsys):
    """Building the transformed function runs none of the user's Python (before: vmap traced
    f at build time, a count ahead and a print at build); calling it runs it once per call."""
    def noisy(x):
        print("ran")
        return snp.sum(counted(x))

    _reset_all()
    made = {"vmap": lambda: secant.vmap(noisy),
            "vmap_grad": lambda: secant.vmap(secant.grad(noisy)),
            "jacfwd": lambda: secant.jacfwd(noisy),
            "checkpoint": lambda: secant.grad(secant.checkpoint(noisy))}[build]()
    assert calls == 0 and capsys.readouterr().out == ""
    made(XS if build.startswith("vmap") else X)
    assert calls == 1 and capsys.readouterr().out.count("ran") == 1


@pytest.mark.parametrize("f", [counted, drawn, logged], ids=["global", "rng", "list"])
def test_checkpoint_of_a_counter_draws_once_per_call(x64, f):
    """grad(checkpoint(f)): the rematerialisation does not draw again: the count once per
    call and the gradient of that call's draw."""
    def loss(x):
        return snp.sum(secant.checkpoint(f)(x))

    _reset_all()
    g = secant.grad(loss)
    for n in (1, 2):
        factor = n * (0.1 if f is drawn else 1.0)
        np.testing.assert_allclose(np.asarray(g(X)), factor * np.cos(X), rtol=1e-12)
        assert (calls, rng.key, len(acc)) == {counted: (n, 0, 0), drawn: (0, n, 0),
                                              logged: (0, 0, n)}[f]


# --- 5. library state: builtin next, Python's random, NumPy's global np.random ----------------


stream = iter(range(1, 100))


def _reset_library():
    global stream
    stream = iter(range(1, 100))
    random.seed(0)
    np.random.seed(0)


def _library_state():
    return stream.__length_hint__(), random.getstate()[1][:4], \
        int(np.random.get_state()[2])


def uses_next(x):
    return snp.sum(snp.sin(x)) * next(stream)


def uses_random(x):
    return snp.sum(snp.sin(x)) * random.random()


def uses_np_random(x):
    return snp.sum(snp.sin(x)) * np.random.rand()


def helper_next(x):
    return snp.sum(snp.sin(x)) * next(stream)


def calls_helper_next(x):           # reaches next() through a callee
    return helper_next(x) * 2.0


LIBRARY = {"next": uses_next, "random": uses_random, "np_random": uses_np_random,
           "callee_next": calls_helper_next}
LIBRARY_RIGHT = {"grad": lambda f: secant.grad(f)(X),
                 "vjp": lambda f: secant.vjp(f, X)[1](1.0)[0],
                 "jit_grad": lambda f: secant.jit(secant.grad(f))(X)}


@pytest.mark.parametrize("mode", list(LIBRARY_RIGHT))
@pytest.mark.parametrize("case", list(LIBRARY))
def test_library_state_draws_once(x64, case, mode):
    """next(it), random.random(), np.random.rand(): a recompute drew again before (vjp of
    uses_next: the gradient of the second draw, 2 cos x for cos x; vjp of uses_random 0.758
    for 0.844; grad of calls_helper_next 4 cos x for 2 cos x, the iterator two ahead). Now
    one draw per call, its gradient against central differences of a replay."""
    f = LIBRARY[case]

    def replay(v):
        _reset_library()
        return float(f(v))
    want = grad_fd(replay, X)
    _reset_library()
    f(X)
    after = _library_state()
    _reset_library()
    np.testing.assert_allclose(np.asarray(LIBRARY_RIGHT[mode](f)), want, rtol=1e-6)
    assert _library_state() == after


@pytest.mark.parametrize("mode", ["jacrev", "hessian"])
@pytest.mark.parametrize("case", list(LIBRARY))
def test_library_state_rerun_is_refused(x64, case, mode):
    """Where a derivative runs the function again (jacrev's recompute, jacfwd's layout),
    refused as a user's counter is (tests/test_state15o_counters.py), the state untouched."""
    _reset_library()
    before = _library_state()
    with pytest.raises(secant.SecantError, match="sets Python state") as e:
        getattr(secant, mode)(LIBRARY[case])(X)
    assert __file__ in str(e.value)
    assert _library_state() == before


PARAMS = {"w": 1.5, "b": 0.5}


def first_value(x):                 # next(iter(d)): a fresh iterator, no state
    w = next(iter(PARAMS.values()))
    return snp.sum(snp.sin(x) * w)


def first_through_callee(x):
    return first_value(x) * 2.0


@pytest.mark.parametrize("mode", ["jacrev", "hessian", "vjp"])
@pytest.mark.parametrize("f", [first_value, first_through_callee], ids=["own", "callee"])
def test_next_of_a_fresh_iterator_is_no_state(x64, f, mode):
    scale = 1.5 * (2.0 if f is first_through_callee else 1.0)
    got = {"jacrev": lambda: secant.jacrev(f)(X),
           "hessian": lambda: np.diag(secant.hessian(f)(X)) / -np.tan(X),
           "vjp": lambda: secant.vjp(f, X)[1](1.0)[0]}[mode]()
    np.testing.assert_allclose(np.asarray(got), scale * np.cos(X), rtol=1e-12)


def np_random_body(i, c):
    return c * np.random.rand()


def random_body(i, c):
    return c * random.random()


def next_body(i, c):
    return c * next(stream)


@pytest.mark.parametrize("mode", ["eager", "grad"])
@pytest.mark.parametrize("body", [np_random_body, random_body, next_body],
                         ids=["np_random", "random", "next"])
def test_lax_body_drawing_library_state_is_refused(x64, body, mode):
    """A lax body drawing from np.random, random or a kept iterator: eagerly a draw per step,
    under jit and derivatives one per trace (the values would disagree): refused."""
    def f(x):
        return snp.sum(lax.fori_loop(0, 3, body, x))

    _reset_library()
    before = _library_state()
    with pytest.raises(secant.SecantError, match="reads Python state") as e:
        MODES[mode](f)
    assert __file__ in str(e.value)
    assert _library_state() == before
