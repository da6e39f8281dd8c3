"""A derivative that calls a function known only at run time (`fn(x)` with fn an argument)
dispatches at every call (secant/transforms.py _dispatch); its check of the call against the
callee's signature (_check_call_shape) runs once per signature and argument structure, and the
signature itself is remembered (callees.signature_of), not read again at each call because
is_variadic's read of the same function without follow_wrapped evicted it (issue 19). Values
stay the closed form's; a callee whose code changes is checked again."""
import inspect

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.transformer import callees


def curve(x):
    return snp.sin(x) * x


def apply(fn, x):
    return fn(x) + x * x


def _exact(x):
    x = np.float64(x)
    return np.sin(x) + x * np.cos(x) + 2 * x


def test_signature_of_keeps_both_reads():
    def f(a, b=2):
        return a + b
    s1 = callees.signature_of(f)
    s0 = callees.signature_of(f, follow_wrapped=False)
    assert callees.signature_of(f) is s1
    assert callees.signature_of(f, follow_wrapped=False) is s0
    f.__defaults__ = (3,)       # (what it is computed from changed: computed again)
    s2 = callees.signature_of(f)
    assert s2 is not s1 and s2.parameters["b"].default == 3


def test_dispatched_call_reads_no_signature_when_warm(monkeypatch):
    g = secant.grad(apply, 1)
    for x in (0.3, -0.7):
        np.testing.assert_allclose(float(g(curve, x)), _exact(x), rtol=1e-5)
    counts = {"signature": 0, "bind": 0}
    signature, bind = inspect.signature, inspect.Signature.bind

    def counted_signature(*a, **k):
        counts["signature"] += 1
        return signature(*a, **k)

    def counted_bind(self, *a, **k):
        counts["bind"] += 1
        return bind(self, *a, **k)
    monkeypatch.setattr(inspect, "signature", counted_signature)
    monkeypatch.setattr(inspect.Signature, "bind", counted_bind)
    for x in (0.3, 1.1, -0.4):
        np.testing.assert_allclose(float(g(curve, x)), _exact(x), rtol=1e-5)
    monkeypatch.undo()
    assert counts == {"signature": 0, "bind": 0}


def test_callee_with_new_code_is_checked_again():
    def callee(x):
        return snp.sin(x) * x
    g = secant.grad(apply, 1)
    np.testing.assert_allclose(float(g(callee, 0.3)), _exact(0.3), rtol=1e-5)
    code = callee.__code__

    def two(x, y):
        return x * y
    callee.__code__ = two.__code__
    with pytest.raises(TypeError):
        g(callee, 0.3)
    callee.__code__ = code
    np.testing.assert_allclose(float(g(callee, 0.5)), _exact(0.5), rtol=1e-5)
