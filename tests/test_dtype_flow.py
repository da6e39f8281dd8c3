"""transformer/dtype_flow.py (issue 20): forward mode writes `broadcast_like(x_dot, ans)` for a
lone tangent of a + b only where b may widen a's shape or dtype. An operand computed from a's
own dtype's values and weak Python numbers (`sin(x) + ones_like(x) * 3.0`) leaves it out; any
other array (a float32 parameter beside float16 x, an int, a complex, a bfloat16, a strong
NumPy scalar) keeps it.

The numerical checks are those of test_silent15r_fuzz's test_tangent_promoted_before_it_is_scaled:
the sum is scaled by 1000 after the lone tangent is formed, so a tangent left in float16 (or
bfloat16) overflows or rounds: each tangent must have its primal output's dtype (JAX's
invariant; the primal is secant's, checked against jax 0.10.2 when these cases were written)
and the closed-form value."""
import re

import ml_dtypes
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.transformer.dtype_flow import PROMOTING, UNARY

BF16 = np.dtype(ml_dtypes.bfloat16)

_HOW = {"eager": lambda f, x, t: secant.jvp(f, (x,), (t,)),
        "jit": lambda f, x, t: secant.jit(lambda x, t: secant.jvp(f, (x,), (t,)))(x, t),
        "vmap": lambda f, x, t: tuple(o[0] for o in secant.vmap(
            lambda x, t: secant.jvp(f, (x,), (t,)))(x[None], t[None])),
        "linearize": lambda f, x, t: (f(x), secant.linearize(f, x)[1](t))}

C32 = np.array([1.0, -2.0, 0.5], np.float32)
K32 = np.array([1, -2, 3], np.int32)
Z64 = np.array([1 + 1j, -2, 0.5j], np.complex64)


def _ones_of_c(x):
    m = snp.ones_like(C32) * 3.0        # C32's dtype, x's shape
    return (snp.sin(x) + m) * 1000.0


def _widening_loop(x):
    acc = snp.ones_like(x)              # x's dtype, then C32's after one step
    for _ in range(2):
        acc = acc + C32
    return (snp.sin(x) + acc) * 1000.0


# name -> (f, dtype of x, whether the generated jvp may leave the wrapper out)
CASES = {
    "float32_parameter": (lambda x: (snp.sin(x) + C32) * 1000.0, np.float16, False),
    "ones_like_of_a_float32": (_ones_of_c, np.float16, False),
    "int_array": (lambda x: (snp.sin(x) + K32) * 1000.0, np.float16, False),
    "int_cast_to_float": (lambda x: (snp.sin(x) + K32.astype(np.float32)) * 1000.0,
                          np.float16, False),
    "complex_array": (lambda x: snp.real((snp.sin(x) + Z64) * 1000.0), np.float32, False),
    "bfloat16_and_float32": (lambda x: (snp.sin(x) + C32) * 1000.0, BF16, False),
    "strong_numpy_scalar": (lambda x: (snp.sin(x) + np.float32(3.0)) * 1000.0, np.float16, False),
    "loop_widening_a_carry": (_widening_loop, np.float16, False),
    "sum_of_a_list_with_float32": (lambda x: sum([snp.sin(x), C32]) * 1000.0, np.float16, False),
    # the same dtype: no wrapper
    "weak_python_float": (lambda x: (snp.sin(x) + 3.0) * 1000.0, np.float16, True),
    "ones_like_x_scaled": (lambda x: (snp.sin(x) + snp.ones_like(x) * 3.0) * 1000.0,
                           np.float16, True),
    "math_of_x": (lambda x: (snp.sin(x) - snp.exp(snp.cos(x) * 2) / 3) * 1000.0,
                  np.float16, True),
    "bfloat16_weak": (lambda x: (snp.sin(x) + snp.zeros_like(x) - 0.5) * 1000.0, BF16, True),
    "complex_weak": (lambda x: snp.real((snp.sin(x) + snp.ones_like(x) * 2.0) * 1000.0),
                     np.complex64, True),
    "sum_of_a_list_weak": (lambda x: sum([snp.sin(x), snp.ones_like(x) * 2.0, 1.0]) * 1000.0,
                           np.float16, True),
}


# each case's tangent dtype as jax 0.10.2's jvp gives it (recorded with /tmp/jaxenv, the same
# functions over jax.numpy): float16 + int32 stays float16, a strong float32 scalar widens
JAX_DTYPES = {
    "float32_parameter": "float32", "ones_like_of_a_float32": "float32", "int_array": "float16",
    "int_cast_to_float": "float32", "complex_array": "float32", "bfloat16_and_float32": "float32",
    "strong_numpy_scalar": "float32", "loop_widening_a_carry": "float32",
    "weak_python_float": "float16", "ones_like_x_scaled": "float16", "math_of_x": "float16",
    "bfloat16_weak": "bfloat16", "complex_weak": "float32",
    "sum_of_a_list_with_float32": "float32", "sum_of_a_list_weak": "float16"}


def _want(name, x, t):
    """The tangent in closed form, in float64 (before the cast to the output's dtype)."""
    t = t.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    x = x.astype(t.dtype)
    if name == "math_of_x":
        return (np.cos(x) * t + 2 / 3 * np.exp(np.cos(x) * 2) * np.sin(x) * t) * 1000.0
    out = np.cos(x) * t * 1000.0
    return out.real if name.startswith("complex") else out


@pytest.mark.parametrize("how", list(_HOW))
@pytest.mark.parametrize("name", list(CASES))
def test_lone_tangent_has_the_outputs_dtype(name, how):
    f, dtype, _ = CASES[name]
    x = np.array([0.5, 1.5, -3.0], dtype)
    wider = np.dtype(f(x).dtype) != x.dtype         # (else 1e5 overflows float16 as in JAX)
    t = np.array([100.0 if wider else 10.0, 0.25, -2.0], dtype)
    out, out_dot = _HOW[how](f, x, t)
    assert np.dtype(out_dot.dtype) == np.dtype(out.dtype) == np.dtype(JAX_DTYPES[name]), (
        out.dtype, out_dot.dtype)
    want = _want(name, x, t)
    tol = {np.dtype(np.float16): 2e-3, BF16: 2e-2}.get(x.dtype, 1e-5)     # (cos(x) in x's)
    np.testing.assert_allclose(np.asarray(out_dot, np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CASES))
def test_wrapper_only_where_the_dtype_may_differ(name):
    f, _, lean = CASES[name]
    src = secant.source(secant.jvp_fn(f, argnums=(0,)))
    assert ("broadcast_like(" not in src) == lean, src


def test_float32_and_float64_parameter(x64):
    """float32 x + float64 c is float64 (x64): its tangent too, not float32's rounding."""
    c = np.array([1.0, -2.0, 0.5])

    def f(x):
        return (snp.sin(x) + c) * 1000.0
    x = np.array([0.5, 1.5, -3.0], np.float32)
    t = np.array([0.1, 0.3, -0.7], np.float32)
    assert "broadcast_like(sin_x_dot" in secant.source(secant.jvp_fn(f, argnums=(0,)))
    for how, run in _HOW.items():
        out, out_dot = run(f, x, t)
        assert out.dtype == out_dot.dtype == np.float64, how
        want = np.cos(x.astype(np.float32)).astype(np.float64) * t.astype(np.float64) * 1000.0
        np.testing.assert_allclose(out_dot, want, rtol=1e-6)
    # the same parameter on its own dtype's side: no wrapper
    src = secant.source(secant.jvp_fn(lambda x, c: snp.sum(snp.sin(x) + snp.cos(x) * 2.0),
                                      argnums=(0,)))
    assert "broadcast_like(" not in src


_STATICS = {"reshape": {"newshape": "(3,)"}, "swapaxes": {"axis1": "0", "axis2": "0"},
            "expand_dims": {"axis": "0"}, "broadcast_to": {"shape": "(2, 3)"},
            "where": {"condition": "x > 0"}}
_NO_COMPLEX = {"arctan2", "hypot", "logaddexp", "remainder", "rem", "maximum", "minimum",
               "clip", "clamp", "cbrt", "erf", "logistic", "max", "min", "lax_div", "arcsinh",
               "arccosh", "arctanh", "exp2", "log2", "log10"}
_BINARY_ARGS = {"clip": ("a", "a_min", "a_max"), "clamp": ("x", "min", "max"),
                "dot": ("a", "b"), "outer": ("a", "b")}


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.complex64], ids=str)
def test_the_tables_ops_keep_an_inexact_dtype(dtype):
    """Every op dtype_flow.py says keeps an inexact dtype does, eager and under jit, on its own
    dtype's operands and with a weak Python number (the table can be wrong: this reads it)."""
    from secant.transformer.ops import OPS
    x = snp.asarray(np.array([0.3, 0.6, 0.9], dtype))       # (an operator on NumPy's: NumPy's)
    checked = 0
    for name in sorted(UNARY | PROMOTING):
        if np.dtype(dtype).kind == "c" and name in _NO_COMPLEX:
            continue
        spec = OPS[name]
        params = _BINARY_ARGS.get(name) or [p for p in spec.arrays]
        for second in ("x", "2") if name not in ("matmul", "dot", "outer") else ("x",):           # the same array, or a Python number
            operands = {p: ("x" if i == 0 else second) for i, p in enumerate(params)}
            code = spec.render(operands, dict(_STATICS.get(name, {})))
            fn = eval(f"lambda x: {code}", {"snp": snp, "lax": lax})
            for run in (fn, secant.jit(fn)):
                got = run(x)
                assert np.dtype(got.dtype) == np.dtype(dtype), (name, code, got.dtype)
            checked += 1
            if len(params) == 1:
                break
    assert checked > 50


def test_lean_sources_read_as_before():
    """The tangent of `sin(x) + m` with m = ones_like(x) * 3.0 (a plain statement) is
    sin(x)'s, as written before dtypes were asked; w, another parameter, keeps it."""
    def shifted(x, w):
        m = snp.ones_like(x) * 3.0
        return snp.sum((snp.sin(x) + m) * (snp.cos(x) + w))
    src = secant.source(secant.jvp_fn(shifted, argnums=(0,)))
    assert re.search(r"sin_x_plus_m_dot = sin_x_dot\n", src), src
    assert "broadcast_like(cos_x_dot, cos_x_plus_w)" in src, src


def test_grad_of_a_bfloat16_input_is_bfloat16():
    """unbroadcast casts a float32 cotangent back to bfloat16 x's dtype (JAX's: bfloat16 [1000
    1000 1000]); it read bfloat16 (NumPy kind 'V') as no float and returned float32."""
    x = np.array([0.5, 1.5, -3.0], BF16)
    for g in (secant.grad(lambda x: snp.sum((x + C32) * 1000.0)),
              secant.jit(secant.grad(lambda x: snp.sum((x + C32) * 1000.0)))):
        got = g(x)
        assert np.dtype(got.dtype) == BF16
        np.testing.assert_array_equal(np.asarray(got, np.float32), [1000.0] * 3)
