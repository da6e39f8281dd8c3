"""transformer/shapes.py read where values are not ops (issue 20): an inactive value the
normaliser keeps as a plain statement (`m = snp.ones_like(x) * 3.0`) is the broadcast of its
parts, and forward mode asks the same analysis before it broadcasts a tangent.

Each generated-source check has a numerical twin against float64 central differences on
broadcasting arguments, the case a wrongly dropped broadcast or unbroadcast gets wrong."""
import re

import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.default_rng(21)


def fd_directional(f, args, argnum, direction, eps=1e-6):
    args = [np.array(a, dtype=np.float64) for a in args]
    up = list(args)
    down = list(args)
    up[argnum] = args[argnum] + eps * direction
    down[argnum] = args[argnum] - eps * direction
    return (float(f(*up)) - float(f(*down))) / (2 * eps)


def fd_grad(f, args, argnum, eps=1e-6):
    x = np.array(args[argnum], dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = 1.0
        out[idx] = fd_directional(f, args, argnum, e, eps)
    return out


def shifted(x, w):
    m = snp.ones_like(x) * 3.0          # inactive: kept as written, with x's shape
    return snp.sum((snp.sin(x) + m) * (snp.cos(x) + w))


def shifted_wide(x, w):
    m = snp.ones_like(w) * 3.0          # w's shape, which may be wider than x's
    return snp.sum((snp.sin(x) + m) * snp.cos(x))


def accumulated(x, n):
    acc = snp.zeros_like(x)
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def test_a_lone_tangent_takes_the_results_shape_and_dtype():
    """A lone tangent of `a + b` takes the result's shape and dtype (`broadcast_like`) where b
    may widen either: another parameter w may promote a's dtype even at a's shape (float16 a +
    float32 b; issue 15's silent float16 overflow, test_silent15r_fuzz
    test_tangent_promoted_before_it_is_scaled); m = ones_like(x) * 3.0 has x's shape and dtype
    (transformer/dtype_flow.py), and a Python number widens neither (tests/test_dtype_flow.py)."""
    src = secant.source(secant.jvp_fn(shifted, argnums=(0,)))
    assert not re.search(r"broadcast_like\(sin_x_dot", src), src
    assert re.search(r"broadcast_like\(cos_x_dot", src), src      # w may be wider than x
    assert "broadcast_to(" not in src, src
    src = secant.source(secant.jvp_fn(lambda x: snp.sum(snp.sin(x) + 3.0), argnums=(0,)))
    assert "broadcast_like(" not in src, src                     # a Python number: no promotion
    src = secant.source(secant.jvp_fn(shifted_wide, argnums=(0,)))
    assert re.search(r"broadcast_like\(sin_x_dot", src), src
    src = secant.source(secant.grad(accumulated))
    assert "unbroadcast(" not in src, src       # acc starts as zeros of x's shape


@pytest.mark.parametrize("f, shapes", [
    (shifted, [(3,), ()]),
    (shifted, [(3, 1), (1, 4)]),
    (shifted_wide, [(3,), (2, 3)]),
    (shifted_wide, [(3, 1), (4,)]),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_jvp_and_grad_where_shapes_may_differ(x64, f, shapes):
    x, w = (RNG.normal(size=s) for s in shapes)
    d = RNG.normal(size=shapes[0])
    value, tangent = secant.jvp_fn(f, argnums=(0,))(x, w, d)
    np.testing.assert_allclose(tangent, fd_directional(f, [x, w], 0, d), rtol=1e-6)
    for transform in (lambda g: g, secant.jit):
        got = transform(secant.grad(f))(x, w)
        assert np.shape(got) == np.shape(x)
        np.testing.assert_allclose(got, fd_grad(f, [x, w], 0), rtol=1e-6, atol=1e-8)


def test_accumulated_gradient(x64):
    x = RNG.normal(size=(3,))
    np.testing.assert_allclose(secant.grad(accumulated)(x, 4),
                               fd_grad(lambda x: accumulated(x, 4), [x], 0), rtol=1e-6)


def test_one_argument_where_is_not_elementwise():
    """snp.where(c) gives index arrays, not c's shape: the analysis does not follow it."""
    from secant.transformer import ir
    from secant.transformer.shapes import Shapes
    s = Shapes(ir.Function("f", "x, c", ["x", "c"], [], None))
    assert s.needs_unbroadcast([ir.Var("x"), ir.Expr("snp.where(c)")], "x")
    assert s.needs_unbroadcast([ir.Var("x"), ir.Expr("snp.where(c, x, c)")], "x")
    assert not s.needs_unbroadcast([ir.Var("x"), ir.Expr("snp.where(x, x, 1.0)")], "x")
