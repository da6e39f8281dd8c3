"""zip15 (issue 15): a tree_util.Partial / functools.partial written in place as a helper's
argument with a differentiated value bound (read as the named one: transformer/desugar.py
_partials_as_defs), and a `lambda *a, **k` closing over a differentiated value passed on —
under grad, hessian and jvp against float64 central differences, under vmap against a Python
loop; where the function has no readable source (piped to `python -`), the refusal says what
to write."""
import functools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util
from test_zip15_transpose import _fd


def _mse_to(target, pred):
    return snp.mean((pred - target) ** 2)


def _apply_loss(loss_fn, w, x):
    return loss_fn(snp.tanh(x @ w))


def _apply_loss_kw(w, x, loss_fn=None):
    return loss_fn(snp.sin(x @ w))


def partial_in_place(w, x, y):
    return _apply_loss(tree_util.Partial(_mse_to, y), w, x)


def functools_partial_as_keyword(w, x, y):
    return 2.0 * _apply_loss_kw(w, x, loss_fn=functools.partial(_mse_to, y))


def two_partials_in_one_line(w, x, y):
    return _apply_loss(tree_util.Partial(_mse_to, y), w, x) + \
        _apply_loss(tree_util.Partial(_mse_to, 0.5 * x), w, x)


def closure_kwargs_passed(w, x, y):
    loss_fn = lambda *a, **k: _mse_to(y, *a, **k)      # noqa: E731
    return _apply_loss(loss_fn, w, x)


PROGRAMS = [partial_in_place, functools_partial_as_keyword, two_partials_in_one_line,
            closure_kwargs_passed]
RNG = np.random.default_rng(15)
W, X, Y = RNG.normal(size=(2, 2)), RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("argnum", [0, 2])
def test_grad(x64, fn, argnum):
    args = [W, X, Y]

    def at(v):
        return float(fn(*(v if k == argnum else a for k, a in enumerate(args))))
    np.testing.assert_allclose(secant.grad(fn, argnums=argnum)(W, X, Y), _fd(at, args[argnum]),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian_in_y(x64, fn):
    g = secant.grad(fn, argnums=2)
    np.testing.assert_allclose(secant.hessian(fn, argnums=2)(W, X, Y),
                               _fd(lambda y: g(W, X, y), Y), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_jvp_every_argument(x64, fn):
    tw, tx, ty = (RNG.normal(size=a.shape) for a in (W, X, Y))
    value, tangent = secant.jvp(fn, (W, X, Y), (tw, tx, ty))
    want = _fd(lambda s: float(fn(W + s[0] * tw, X + s[0] * tx, Y + s[0] * ty)),
               np.zeros(1))[0]
    np.testing.assert_allclose(value, fn(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_over_y(x64, fn):
    ys = RNG.normal(size=(4,) + Y.shape)
    np.testing.assert_allclose(secant.vmap(fn, in_axes=(None, None, 0))(W, X, ys),
                               [fn(W, X, y) for y in ys], rtol=1e-12)


def test_closure_kwargs_passed_without_source_says_what_to_write():
    """a script piped to `python -` has no source secant can read: the refusal names the
    closed-over value and how to write it (a file run as a script works: the tests above)"""
    script = textwrap.dedent("""
        import numpy as np, secant, secant.numpy as snp
        def mse(target, pred):
            return snp.mean((pred - target) ** 2)
        def apply(loss_fn, w):
            return loss_fn(snp.tanh(w))
        def f(w, y):
            loss_fn = lambda *a, **k: mse(y, *a, **k)
            return apply(loss_fn, w)
        try:
            secant.grad(f, argnums=1)(np.ones(2), np.zeros(2))
        except secant.SecantError as e:
            print(e)
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True,
                         cwd=root, timeout=300)
    assert "closes over the traced y" in out.stdout, out.stdout + out.stderr
    assert "pass y to the function as an argument" in out.stdout
    assert "python file.py" in out.stdout
