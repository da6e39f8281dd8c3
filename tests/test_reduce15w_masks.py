"""Issue 15 (reduce15w): jnp's reductions with where= and initial= (sum, prod, max, min, mean,
var, std; methods too) and where(c, size=n) under grad, jit(grad), vmap(grad), jvp and hessian.
Every transform refused them ("bad arguments for mean: got an unexpected keyword argument
'where'"); the normaliser now writes them in ops with every rule (normalize's
masked_reduction). Oracles: JAX's values and gradients recorded by
`/tmp/jaxenv/bin/python bench/reduce15w_oracle.py` (tests/reduce15w_expected.py), float64
central differences, and a Python loop for vmap. Programs: tests/reduce15w_cases.py."""
import numpy as np
import pytest
import reduce15w_cases as C
import reduce15w_expected as E
from central_differences import grad_fd, hessian_fd
from user_programs.checks import rotated

import secant
import secant.numpy as snp

pytestmark = pytest.mark.usefixtures("fast_compiles")
CASES = C.cases(snp)
# a small step where x ** 2 crosses the mask x < 2 (none does at X): central differences
STEP = 1e-6


def _fd_ok(name):
    return not name.startswith("where_one_arg")     # (piecewise: fine, the selection is fixed)


_TIE = ("max/min(a, where=m, initial=v) fill the masked-out entries with v (jnp: -inf/inf, "
        "then maximum with v): the same values, but at an exact tie of a kept entry with v the "
        "masked-out entries take a share of its derivative (1/6 where JAX gives 1/2); a fill "
        "of the dtype's lowest value needs an op that knows a's dtype in generated code")
TIES = C.tie_cases(snp)


@pytest.mark.parametrize("name", list(CASES) + [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_TIE)) for n in TIES])
def test_grad_matches_jax_and_central_differences(x64, name):
    f = CASES[name] if name in CASES else TIES[name]
    value, grad = E.GRADS[name]
    np.testing.assert_allclose(float(f(C.X)), value, rtol=1e-12)
    g = np.asarray(secant.grad(f)(C.X))
    np.testing.assert_allclose(g, grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, grad_fd(f, C.X.copy(), h=STEP), rtol=1e-5, atol=1e-6)


_KINDS = ("jit_grad", "vmap_grad", "jvp", "hessian")


@pytest.mark.parametrize("name, kind", rotated(list(CASES), _KINDS))
def test_transforms_of_masked_reductions(x64, name, kind):
    f = CASES[name]
    want = np.asarray(E.GRADS[name][1])
    if kind == "jit_grad":
        np.testing.assert_allclose(secant.jit(secant.grad(f))(C.X), want, rtol=1e-10,
                                   atol=1e-12)
    elif kind == "vmap_grad":
        xs = np.stack([C.X, C.X * 1.1, C.X - 0.25])
        loop = np.stack([np.asarray(secant.grad(f)(x)) for x in xs])
        np.testing.assert_allclose(secant.vmap(secant.grad(f))(xs), loop, rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(loop[0], want, rtol=1e-10, atol=1e-12)
    elif kind == "jvp":
        v = np.array([[0.3, -1.0, 0.5], [2.0, 0.25, -0.7]])
        primal, tangent = secant.jvp(f, (C.X,), (v,))
        np.testing.assert_allclose(primal, E.GRADS[name][0], rtol=1e-12)
        np.testing.assert_allclose(tangent, (want * v).sum(), rtol=1e-10, atol=1e-12)
    else:
        h = np.asarray(secant.hessian(f)(C.X))
        np.testing.assert_allclose(h, hessian_fd(f, C.X.copy()), rtol=1e-4, atol=1e-5)


_FLOAT_INITIAL = ("jnp casts initial to the array's dtype (max(int32, initial=2.5) is int32, "
                  "initial 2); the rewrite's maximum(max(where(m, a, 2.5)), 2.5) promotes to "
                  "float (eager snp.max casts, as jnp)")
_INT_MEAN = ("under x64 jnp's mean/var of int32 is float32 (to_inexact of int32), secant's float64; "
             "eager snp.mean(int32 array) without where= too (not the mask's rewrite)")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason=_INT_MEAN)) if n in ("int_mean_where", "int_var_where") else
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_FLOAT_INITIAL))
    if n == "int_max_float_initial" else n for n in E.DTYPES])
def test_int_and_bool_inputs_match_jax_dtypes(x64, name):
    f = C.dtype_cases(snp)[name]
    dtype, value = E.DTYPES[name]
    xs = np.stack([C.X, C.X])       # vmap: the source transform (jit traces the library)
    for out in (f(C.X), secant.vmap(f)(xs)[1], secant.jit(secant.vmap(f))(xs)[0]):
        assert str(out.dtype) == dtype
        np.testing.assert_allclose(np.asarray(out, float), value, rtol=1e-6)


def test_mean_of_an_empty_row_is_nan_as_jax():
    def f(x):
        return snp.mean(x * 2.0, where=C.EMPTY_ROW, axis=1)
    for out in (f(C.X), secant.jit(f)(C.X)):
        np.testing.assert_allclose(out, [8.0 / 2, np.nan])
    # (JAX: no derivative reaches the masked row; the kept row's is 2 / 2 each)
    g = secant.grad(lambda x: f(x)[0])(C.X)
    np.testing.assert_allclose(g, [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])


def test_max_where_without_initial_is_refused_as_jax():
    with pytest.raises(secant.SecantError, match="specify 'initial'"):
        secant.grad(lambda x: snp.max(x, where=C.M))(C.X)


def test_initial_of_mean_is_refused():
    with pytest.raises(secant.SecantError, match="bad arguments for mean.*initial"):
        secant.grad(lambda x: snp.mean(x, initial=1.0))(C.X)


def test_float32_mask_gradient_keeps_the_dtype():
    x = C.X.astype(np.float32)
    g = secant.grad(lambda a: snp.mean(a * a, where=C.M, axis=1).sum())(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.where(C.M, x, 0), rtol=1e-6)    # 2 x / 2 kept a row


def masked_mean_loss(pred, target, mask):
    """Squared error averaged over each padded sequence's kept steps, then over sequences."""
    err = (pred - target) ** 2
    return snp.mean(snp.mean(err, where=mask, axis=1))


def test_masked_mean_gradient_source_is_locked(x64):
    """The generated gradient of a masked loss reads as written by hand (golden), and its
    numbers are the closed form 2 (pred - target) m / (count_row * rows)."""
    import os
    import pathlib

    from test_golden import generated_program
    grad = secant.grad(masked_mean_loss)
    text = generated_program(grad)
    path = pathlib.Path(__file__).parent / "golden" / "reduce15w" / "masked_mean_loss_grad.py.txt"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), ("the generated source of grad(masked_mean_loss) changed; "
                                      "regenerate with SECANT_UPDATE_GOLDEN=1 and review it")
    pred, target = C.X, C.X[::-1] * 0.5
    mask = C.M2
    want = 2 * (pred - target) * mask / (mask.sum(axis=1, keepdims=True) * 2)
    np.testing.assert_allclose(grad(pred, target, mask), want, rtol=1e-12)
    np.testing.assert_allclose(grad(pred, target, mask),
                               grad_fd(masked_mean_loss, pred.copy(), target, mask),
                               rtol=1e-6, atol=1e-8)
