"""Issue 15 leftovers: recursion through a different argument pattern under jvp, early returns
in by-source library modules (secant.numpy.* with __secant_by_source__), third order through a
list built by append and read back (out[-1]).

Every value is checked against float64 central differences, a Python loop (vmap) or eager (jit).
"""
import importlib.util
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp


def fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (float(f(snp.asarray(x + e))) - float(f(snp.asarray(x - e)))) / (2 * eps)
    return g


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


# --- 1. recursion with another argument pattern (defaults: keyword-only tangents) -------------
def roll_like(a, shift, axis=None):
    if axis is None:
        return roll_like(a.ravel(), shift, 0).reshape(a.shape)
    return snp.sin(a) * shift


def roll_like_kw(a, shift, *, axis=None):
    if axis is None:
        return roll_like_kw(a.ravel(), shift, axis=0).reshape(a.shape)
    return snp.sin(a) * shift


@pytest.mark.parametrize("r", [roll_like, roll_like_kw], ids=lambda r: r.__name__)
def test_recursion_with_other_arguments_jvp_grad_vmap(x64, r):
    x = np.arange(6.0).reshape(2, 3) / 4
    t = np.linspace(-1, 1, 6).reshape(2, 3)
    out, out_dot = secant.jvp(lambda x: r(x, 2.0), (snp.asarray(x),), (snp.asarray(t),))
    close(out, 2 * np.sin(x))
    close(out_dot, 2 * np.cos(x) * t)
    # the tangent of the other argument, and jit of the jvp
    _, s_dot = secant.jvp(lambda s: r(snp.asarray(x), s), (2.0,), (1.0,))
    close(s_dot, np.sin(x))
    close(secant.jit(lambda x: secant.jvp(lambda x: r(x, 2.0), (x,), (snp.asarray(t),))[1])(
        snp.asarray(x)), 2 * np.cos(x) * t)

    def f(x):
        return snp.sum(r(x, 2.0) ** 2)
    close(secant.grad(f)(snp.asarray(x)), fd_grad(f, x), 1e-5)
    close(secant.jacfwd(secant.grad(f))(snp.asarray(x)),
          secant.hessian(f)(snp.asarray(x)), 1e-8)
    xs = np.stack([x, x + 1])
    close(secant.vmap(lambda x: r(x, 2.0))(snp.asarray(xs)), [2 * np.sin(v) for v in xs])


# --- 2. early returns: user code (static and traced conditions) and by-source modules ---------
def total(a, axis=None):
    if axis is None:
        return snp.sum(snp.sin(a))
    return snp.sum(snp.sin(a), axis)


def branchy(x):
    if snp.sum(x) > 0:
        return snp.sum(snp.sin(x))
    return snp.sum(x ** 2)


def test_early_return_in_user_code(x64):
    x = np.arange(6.0).reshape(2, 3) / 5 - 0.3
    for f in (total, lambda a: snp.sum(total(a, 1) ** 2), branchy, lambda a: branchy(-a)):
        close(secant.grad(f)(snp.asarray(x)), fd_grad(f, x), 1e-5)
        close(secant.jit(secant.grad(f))(snp.asarray(x)), secant.grad(f)(snp.asarray(x)), 1e-8)
        close(secant.jvp(f, (snp.asarray(x),), (snp.ones((2, 3)),))[1],
              fd_grad(f, x).sum(), 1e-5)
    xs = np.stack([x, -x - 1.0])     # one example takes each branch
    close(secant.vmap(branchy)(snp.asarray(xs)), [float(branchy(snp.asarray(v))) for v in xs])
    close(secant.vmap(secant.grad(branchy))(snp.asarray(xs)),
          [fd_grad(branchy, v) for v in xs], 1e-5)


BY_SOURCE = '''
import secant.numpy as snp

__secant_by_source__ = True


def lib_total(a, axis=None):
    if axis is None:
        return snp.sum(snp.sin(a))
    return snp.sum(snp.sin(a), axis)


def lib_branchy(a):
    if snp.sum(a) > 0:
        return snp.sum(snp.sin(a))
    return snp.sum(a ** 2)
'''


@pytest.fixture(scope="module")
def by_source(tmp_path_factory):
    """A by-source library module named under secant.numpy (as a library's sources are): its
    functions are read like user code, early returns included."""
    path = tmp_path_factory.mktemp("by_source") / "leftovers_sources.py"
    path.write_text(BY_SOURCE)
    name = "secant.numpy._leftovers15_sources"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules[name]


def test_early_return_in_a_by_source_library_module(x64, by_source):
    x = np.arange(6.0).reshape(2, 3) / 5 - 0.3
    fs = [lambda a: by_source.lib_total(a), lambda a: snp.sum(by_source.lib_total(a, 0) ** 2),
          lambda a: by_source.lib_branchy(a), lambda a: by_source.lib_branchy(-a)]
    for f in fs:
        close(secant.grad(f)(snp.asarray(x)), fd_grad(f, x), 1e-5)
        close(secant.jvp(f, (snp.asarray(x),), (snp.ones((2, 3)),))[1],
              fd_grad(f, x).sum(), 1e-5)
    xs = np.stack([x, -x - 1.0])
    f = fs[2]
    close(secant.vmap(f)(snp.asarray(xs)), [float(f(snp.asarray(v))) for v in xs])


# --- 3. higher order through a list appended to in a loop ------------------------------------
def appended(x, w):
    out = []
    for i in range(3):
        out.append(snp.sin(x[i]) * x[i] ** 3 * w[i])
    return snp.sum(snp.stack(out))


def test_third_order_through_appended_list(x64):
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5, 2.0])
    third = secant.hessian(secant.grad(appended))(snp.asarray(x), snp.asarray(w))
    # d3/dx3 of x^3 sin x
    want = w * (6 * np.sin(x) + 18 * x * np.cos(x) - 9 * x ** 2 * np.sin(x) - x ** 3 * np.cos(x))
    close(third, np.einsum("i,ij,ik->ijk", want, np.eye(3), np.eye(3)), 1e-8)


def chained(x, w):
    out = [x[0]]
    for i in range(3):
        out.append(snp.sin(out[-1]) * w[i])     # reads the list it appends to
    return snp.sum(snp.stack(out))


def test_third_order_through_a_list_read_while_appended(x64):
    """The second derivative's loop stacks begin inside a branch of add_at's derivative; the
    third derivative pops their cotangents after the if (an unbound name before)."""
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5, 2.0])

    def s(x0):
        y, tot = x0, x0
        for wi in w:
            y = np.sin(y) * wi
            tot += y
        return tot

    def d(f, h):
        return lambda a: (f(a + h) - f(a - h)) / (2 * h)
    s3 = d(d(d(s, 1e-5), 1e-4), 1e-3)(x[0])
    want = np.zeros(3)
    want[0] = s3
    g = secant.grad(lambda x, w: snp.sum(secant.grad(lambda x, w: snp.sum(
        secant.grad(chained)(x, w)))(x, w)))
    close(g(snp.asarray(x), snp.asarray(w)), want, 1e-4)
    third = secant.hessian(secant.grad(chained))(snp.asarray(x), snp.asarray(w))
    close(np.asarray(third)[0, 0, 0], s3, 1e-4)
    assert np.count_nonzero(np.asarray(third)) == 1
