"""Issue 15: a bad call (arguments its callee refuses) in the branch an `if` or a conditional
expression does not take is not refused; it raises, at its line, only when its branch runs."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

FLAG = False
X = np.array([0.5, 1.5, 2.5])


def ifexp_arg(x, n="sin"):
    return snp.sin(x, x) if n != "sin" else snp.sin(x)


def if_arg(x, n="sin"):
    if n != "sin":
        y = snp.sin(x, x)
    else:
        y = snp.sin(x)
    return y


def ifexp_getattr(x, n="sin"):
    g = getattr(snp, n)
    return g(x, x) if n != "sin" else g(x)


def if_global():
    def f(x):
        if FLAG:
            return snp.sin(x, x)
        return snp.sin(x)
    return f


def helper(x):
    return snp.cos(x)


def if_user_fn(x, k=2):
    if k == 3:
        y = helper(x, x)
    else:
        y = helper(x) * 2.0
    return y


def ifexp_constant(x):
    return snp.sum(x, 0, 0, 0, 0) if False else snp.sin(x)


def expected(fn, x):
    return {ifexp_arg: np.sin, if_arg: np.sin, ifexp_getattr: np.sin,
            if_user_fn: lambda v: 2 * np.cos(v), ifexp_constant: np.sin}.get(fn, np.sin)(x)


def derivative(fn, x):
    return {if_user_fn: lambda v: -2 * np.sin(v)}.get(fn, np.cos)(x)


CASES = [ifexp_arg, if_arg, ifexp_getattr, if_global(), if_user_fn, ifexp_constant]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__ if f.__name__ != "f"
                         else "if_global")
@pytest.mark.parametrize("transform", ["grad", "vmap", "jit", "jvp"])
def test_branch_not_taken_runs(fn, transform):
    x = X.astype(np.float32)
    if transform == "grad":
        got = secant.grad(lambda v: snp.sum(fn(v)))(x)
        want = derivative(fn, X)
    elif transform == "vmap":
        got = secant.vmap(fn)(x)
        want = expected(fn, X)
    elif transform == "jit":
        got = secant.jit(fn)(x)
        want = expected(fn, X)
    else:
        primal, tangent = secant.jvp(lambda v: snp.sum(fn(v)), (x,), (x,))
        np.testing.assert_allclose(primal, np.sum(expected(fn, X)), rtol=1e-5)
        got, want = tangent, np.sum(derivative(fn, X) * X)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


@pytest.mark.parametrize("transform", ["grad", "vmap", "jvp"])
@pytest.mark.parametrize("fn,kw,text", [
    (ifexp_arg, {"n": "cos"}, "snp.sin(x, x)"),
    (if_arg, {"n": "cos"}, "snp.sin(x, x)"),
    (ifexp_getattr, {"n": "cos"}, "g(x, x)"),
    (if_user_fn, {"k": 3}, "helper(x, x)"),
], ids=["ifexp_arg", "if_arg", "ifexp_getattr", "if_user_fn"])
def test_branch_taken_raises_at_its_line(fn, kw, text, transform):
    x = X.astype(np.float32)
    g = lambda v: fn(v, **kw)       # noqa: E731
    with pytest.raises((secant.SecantError, TypeError)) as info:
        if transform == "grad":
            secant.grad(lambda v: snp.sum(g(v)))(x)
        elif transform == "vmap":
            secant.vmap(g)(x)
        else:
            secant.jvp(lambda v: snp.sum(g(v)), (x,), (x,))
    _raised_at(info, fn, text)


def _raised_at(info, fn, text):
    """The error names the bad call's line: secant's message, or (Python's own TypeError when
    the function runs as written) the traceback's last frame."""
    message, line = str(info.value), _line_of(fn, text)
    print(type(info.value).__name__, message)
    assert "argument" in message, message
    if isinstance(info.value, secant.SecantError):
        assert f"{__file__}:{line}" in message, message
    else:
        last = info.traceback[-1]
        assert (str(last.path), last.lineno + 1) == (__file__, line), info.traceback


@pytest.mark.parametrize("transform", ["grad", "vmap", "jvp"])
def test_global_flag_taken_raises(transform, monkeypatch):
    monkeypatch.setitem(globals(), "FLAG", True)
    f = if_global()
    x = X.astype(np.float32)
    with pytest.raises((secant.SecantError, TypeError)) as info:
        if transform == "grad":
            secant.grad(lambda v: snp.sum(f(v)))(x)
        elif transform == "vmap":
            secant.vmap(f)(x)
        else:
            secant.jvp(lambda v: snp.sum(f(v)), (x,), (x,))
    _raised_at(info, if_global, "snp.sin(x, x)")
