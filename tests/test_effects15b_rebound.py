"""Issue 15, effects15b: first calls that ran the user's Python more than once under a
transform, now once, as JAX traces a function once per transformation call. (1) A call during
which the user's code rebinds a global callee (`global act` in a setup it calls first): such a
name, assigned under a `global` declaration in its module, is read when the line runs (a callee
known only at run time: transformer/global_writes.py rebound_callee), never resolved when the
function is transformed, so the call is not run again by code generated for the new callee
(secant/transforms.py rerun_if_rebound, which still answers a name rebound otherwise).
(2) A function traced on each call because it changes Python state its callees read (a global
note list): traced once per call (trace_source.once_per_call: jvp's generation and its guard,
jacfwd's output layout and its jvp, share the call's trace). Each value is checked against
float64 central differences of what Python computes, vmap against a Python loop."""
import importlib
import itertools
import sys

import numpy as np
import pytest

import secant

REBINDS = '''
import secant.numpy as snp

CALLS = []
act = snp.sin


def setup(x):                       # (rebinds the callee f reads next; counts its runs)
    global act
    act = snp.tanh
    CALLS.append(1)
    return x * 1.0


def f(a):
    y = setup(a)
    return act(y) * a
'''

NOTES = '''
import secant.numpy as snp

CALLS = []
act = snp.sin


def note():
    CALLS.append(1)


def setup(x):
    global act
    act = snp.tanh
    return x * 1.0


def f(a):                           # (traced on each call: note() changes Python state, and
    note()                          # setup is called too)
    y = setup(a)
    return act(y) * a
'''

_count = itertools.count()


def _module(tmp_path, monkeypatch, source):
    """A fresh module (no transform has seen its functions)."""
    name = f"effects15b_rebound_{next(_count)}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


@pytest.fixture
def rebinds(tmp_path, monkeypatch):
    yield _module(tmp_path, monkeypatch, REBINDS)


@pytest.fixture
def notes(tmp_path, monkeypatch):
    yield _module(tmp_path, monkeypatch, NOTES)


def _fd(f, a, h=1e-6):
    return (f(a + h) - f(a - h)) / (2 * h)


def _ref(x):
    return np.tanh(x) * x


A, XS = 0.7, np.array([0.7, -0.3, 1.2])
TRANSFORMS = {"grad": lambda f: secant.grad(f), "jacfwd": lambda f: secant.jacfwd(f),
              "jvp": lambda f: lambda a: secant.jvp(f, (a,), (1.0,))[1],
              "vmap": lambda f: secant.vmap(f)}


def _run(mod, transform):
    run = TRANSFORMS[transform](mod.f)
    counts, values = [], []
    for _ in range(3):
        mod.CALLS.clear()
        values.append(np.asarray(run(XS if transform == "vmap" else A)))
        counts.append(len(mod.CALLS))
    want = [_ref(x) for x in XS] if transform == "vmap" else _fd(_ref, A)
    for v in values:
        np.testing.assert_allclose(v, want, rtol=1e-7)
    for m in list(sys.modules):
        if m == mod.__name__:
            del sys.modules[m]
    return counts


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_rebinding_call_later_calls_run_effects_once(rebinds, x64, transform):
    assert _run(rebinds, transform)[1:] == [1, 1]


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_rebinding_first_call_runs_effects_once(rebinds, x64, transform):
    assert _run(rebinds, transform)[0] == 1


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_function_traced_each_call_runs_effects_once(notes, x64, transform):
    assert _run(notes, transform) == [1, 1, 1]
