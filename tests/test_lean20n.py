"""Lean derivatives (issue 20): a small helper's vjp (at most INLINE_STATEMENTS statements,
called by its bare name at most INLINE_CALLS times) is written in place in its caller's
derivative (ad/reverse.py _inlined, secant/transforms.py InlineForm): the chain rule where the
call is, as a person writes it, its values named after the caller's (a helper's `x_bar` of the
caller's h is `h_bar`). Every source check has a numerical twin: float64 central differences,
jit against eager, vmap against a Python loop, hessian against differences of the gradient."""
import ast

import numpy as np

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2026)


def _affine(x, w, b):
    return x @ w + b


def _layer(x, w, b):
    return snp.tanh(_affine(x, w, b))


def _mse(pred, target):
    diff = pred - target
    return snp.mean(diff * diff)


def two_layers(w, b, x, target):
    h = _layer(x, w, b)
    return _mse(_layer(h, w, b), target)


def _statements(text):
    return sum(isinstance(n, ast.stmt) for n in ast.walk(ast.parse(text))) - 1


def _inputs(target_shape=(5, 3)):
    return (RNG.normal(size=(3, 3)) / 2, RNG.normal(size=3), RNG.normal(size=(5, 3)),
            RNG.normal(size=target_shape))


def _check_all(f, args, rtol=1e-6):
    """grad for every argument against float64 central differences, and jit against eager."""
    argnums = tuple(range(len(args)))
    got = secant.grad(f, argnums=argnums)(*args)
    for i, a in enumerate(args):
        def fi(v, i=i):
            return f(*args[:i], v, *args[i + 1:])
        np.testing.assert_allclose(got[i], fd_grad(fi, a), rtol=rtol, atol=1e-8)
    jitted = secant.jit(secant.grad(f, argnums=argnums))(*args)
    for g, j in zip(got, jitted):
        np.testing.assert_allclose(np.asarray(j), g, rtol=1e-10, atol=1e-12)
    return got


def test_helpers_written_in_place(x64):
    g = secant.grad(two_layers)
    src = secant.source(g)
    # no derivative of a helper called: each one's rule in place, named after the caller's
    assert "_vjp" not in src, src
    # (h_bar, read once, folded into the return: a second row, before its `+`)
    assert "+ matmul_grad_y(matmul_grad_x(" in src and "diff = _layer_out - target" in src, src
    assert _statements(src) <= 9, src
    assert all(len(ln.strip()) <= 90 for ln in src.splitlines()), src   # (fold.MAX_LENGTH)
    args = _inputs()
    _check_all(two_layers, args)
    # a target broadcast against the prediction: the helper's unbroadcast kept
    _check_all(two_layers, _inputs((1, 3)))
    _check_all(two_layers, _inputs((3,)))


def test_vmap_and_hessian_of_the_inlined_gradient(x64):
    w, b, x, target = _inputs()
    targets = RNG.normal(size=(4, 5, 3))
    per = secant.vmap(secant.grad(two_layers), in_axes=(None, None, None, 0))(w, b, x, targets)
    loop = np.stack([np.asarray(secant.grad(two_layers)(w, b, x, t)) for t in targets])
    np.testing.assert_allclose(np.asarray(per), loop, rtol=1e-10, atol=1e-12)

    def of_b(v):
        return two_layers(w, v, x, target)
    hess = np.asarray(secant.hessian(of_b)(b))
    want = np.stack([fd_grad(lambda v, k=k: secant.grad(of_b)(v)[k], b) for k in range(3)])
    np.testing.assert_allclose(hess, want, rtol=1e-5, atol=1e-7)


def _cube(x):
    y = x * x
    return y * x


def _scaled(x, s):
    return x * s


def _pair(x):
    return snp.sin(x), x * 2.0


def with_names_shared(x, y):
    # the helper's own `y` and `x` are not the caller's: each value under a fresh name
    x_bar_1 = _cube(y)
    a, b = _pair(x)
    return snp.sum(_scaled(x_bar_1 * a, 2.0) + b * y)


def test_names_literals_and_tuples(x64):
    src = secant.source(secant.grad(with_names_shared, argnums=(0, 1)))
    assert "_vjp" not in src, src
    _check_all(with_names_shared, (RNG.normal(size=4), RNG.normal(size=4)))


def thrice(x):
    return snp.sum(_cube(x) + _cube(2.0 * x) + _cube(x + 1.0))


def keyword_call(w, b, x):
    return snp.sum(_affine(x, w=w, b=b) ** 2)


def test_a_helper_called_often_keeps_its_name_and_keywords(x64):
    src = secant.source(secant.grad(thrice))
    assert "_cube_vjp(" in src, src
    _check_all(thrice, (RNG.normal(size=4),))
    src = secant.source(secant.grad(keyword_call, argnums=(0, 1)))
    assert "_vjp" not in src, src
    _check_all(keyword_call, (RNG.normal(size=(3, 2)), RNG.normal(size=2),
                              RNG.normal(size=(4, 3))))


def test_float32_gradient_of_the_inlined_helpers():
    args = [a.astype(np.float32) for a in _inputs()]
    got = secant.grad(two_layers)(*args)
    assert np.asarray(got).dtype == np.float32
    want = secant.grad(two_layers)(*[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-6)


def _sin_cos(x):
    return snp.sin(x), snp.cos(x)


def one_output_read(x):
    a, b = _sin_cos(x)
    return snp.sum(a * 3.0)


def test_an_output_nobody_reads_keeps_the_named_vjp(x64):
    # its cotangent is zeros: written in place, its rules would compute zeros in sight
    src = secant.source(secant.grad(one_output_read))
    assert "_sin_cos_vjp((a_bar, zeros_like_tree(b)), x)" in src, src
    _check_all(one_output_read, (RNG.normal(size=4),))
