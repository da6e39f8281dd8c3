"""Issue 15, mod15: a global callee rebound during the call (`global act` in a setup the
function calls first) under more transforms than test_effects15b_rebound's: read when the line
runs, each call runs the user's Python once (jit: on its first call only, as JAX traces once),
and the value is what Python computes (tanh, the callee bound when the line runs), against
float64 central differences; vmap against a Python loop."""
import numpy as np
import pytest

import secant

from test_effects15b_rebound import REBINDS, _module


def _ref(x):
    return np.tanh(x) * x


def _d(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


A, XS = 0.7, np.array([0.7, -0.3, 1.2])
CASES = {
    "jacrev": (lambda f: secant.jacrev(f), A, lambda: _d(_ref, A), 1),
    "hessian": (lambda f: secant.hessian(f), A, lambda: _d(lambda x: _d(_ref, x, 1e-4), A, 1e-4),
                1),
    "grad_grad": (lambda f: secant.grad(secant.grad(f)), A,
                  lambda: _d(lambda x: _d(_ref, x, 1e-4), A, 1e-4), 1),
    "vmap_grad": (lambda f: secant.vmap(secant.grad(f)), XS,
                  lambda: [_d(_ref, x) for x in XS], 1),
    "jit": (lambda f: secant.jit(f), A, lambda: _ref(A), 0),
    "jit_grad": (lambda f: secant.jit(secant.grad(f)), A, lambda: _d(_ref, A), 0),
    "jit_vmap": (lambda f: secant.jit(secant.vmap(f)), XS, lambda: [_ref(x) for x in XS], 0),
    "value_and_grad": (lambda f: lambda a: secant.value_and_grad(f)(a)[1], A,
                       lambda: _d(_ref, A), 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_rebound_callee_effects_once(tmp_path, monkeypatch, x64, case):
    mod = _module(tmp_path, monkeypatch, REBINDS)
    make, arg, want, later = CASES[case]
    run = make(mod.f)
    counts = []
    for _ in range(3):
        mod.CALLS.clear()
        got = np.asarray(run(arg))
        counts.append(len(mod.CALLS))
        np.testing.assert_allclose(got, want(), rtol=1e-5 if "grad_grad" in case
                                   or case == "hessian" else 1e-8)
    assert counts == [1, later, later]


def test_rebound_callee_in_a_closure_factory_module(tmp_path, monkeypatch, x64):
    """The rebinding is in another function of the module than the one that calls (a setup
    called before the transform's call): each call reads the callee bound then."""
    mod = _module(tmp_path, monkeypatch, REBINDS + '''

def use(a):
    return act(a) * 2.0


def switch(name):
    global act
    act = getattr(snp, name)
''')
    g = secant.grad(mod.use)
    np.testing.assert_allclose(float(g(A)), 2 * np.cos(A), rtol=1e-12)
    mod.switch("tanh")
    np.testing.assert_allclose(float(g(A)), 2 * (1 - np.tanh(A) ** 2), rtol=1e-12)
    mod.switch("sin")
    out = secant.vmap(mod.use)(XS)
    np.testing.assert_allclose(np.asarray(out), 2 * np.sin(XS), rtol=1e-12)
