"""Issue 15, no silent wrong values (silent15r): random programs of tests/user_programs/fuzz.py
under eager, jit, grad, vmap, jvp, vmap(grad), grad(grad), jacfwd and jit(grad), against JAX
0.10.2's recorded outcomes (fuzz_expected.py, written by bench/fuzz_oracle.py --record: value,
dtype, shape and weak type, or the exception JAX raises). The default profile runs the 40
programs of fuzz.DEFAULT_SEEDS; HYPOTHESIS_PROFILE=thorough also fuzz.THOROUGH_SEEDS. Each
difference the fuzzer found has a named regression test below (fuzz.REGRESSIONS).
"""
import os

import numpy as np
import pytest
from user_programs import fuzz, numerics
from user_programs.fuzz_expected import EXPECTED

import secant
import secant.numpy as snp

SECANT = fuzz.backend("secant")
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"

# (seed or regression name, transform) -> why secant differs from JAX today (a strict xfail:
# a fix removes its entry)
_BOOL_JACFWD = ("jacfwd of a bool output: JAX fails inside jacfwd (TypeError 'a bytes-like "
                "object is required, not int', an accident, not a refusal: an int output "
                "passes); secant gives the zeros, as of an int output")
KNOWN = {
    **{(k, "jacfwd"): _BOOL_JACFWD for k in (11, 38, 115, 190, 193,
                                             "bool_output_of_a_callee")},
    (137, "grad_grad"): "JAX is wrong here: d2/dx2 sum(hypot(x, y)) at x = -2, y = [0.5, 3, 2] "
    "is sum(y**2 / (x**2 + y**2) ** 1.5) = 0.397322 (float64); secant 0.397322, JAX 0.220545 "
    "(its hypot is a composite of max/min of |x|, |y|)",
    **{(k, t): "nan where JAX's is inf at a singular point (a pole, an overflow): a zero "
       "tangent or cotangent that JAX keeps symbolic is materialised in the second derivative "
       "and multiplied by the inf of the rule's factor (0 * inf); the diagonal entry is inf "
       "(float64: -1 / (1 + x) ** 2 at x = -1, polygamma(1, 0), d2/dx2 |x| ** x at 1e4)"
       for k, t in (("log1p_second_derivative_at_minus_one", "jacrev_jacfwd"),
                    ("hessian_of_gammaln_at_its_pole", "jacrev_jacfwd"),
                    ("max_ignores_a_nan_tangent_not_chosen", "hessian"))},
    **{("bool_product_of_a_nan_cotangent", t): "the output is nan there (remainder(x, 0)); "
       "secant's and JAX's derivatives differ in how 0 * inf resolves: JAX transposes b * c (b "
       "a bool) as ct * float(b), secant as b * ct, a select as JAX's own primal b * inf is "
       "(0); secant's is the right one where the output is finite (grad of sum(sqrt(b * x)) "
       "at b = False: secant 0, JAX nan)"
       for t in ("grad", "vmap_grad", "jacrev_jacfwd", "vjp_dict")},
    **{("unread_carry_of_a_loop_overflows", t): "nan, JAX's (and float64's) 0: fori_loop's "
       "reverse pass (ad/rule_helpers.py fori_loop_vjp) carries the zero cotangent of the "
       "unread carry c[0] (inf after an overflow) through the body's vjp, whose c[1] cotangent "
       "gets 0 * c[0] = nan; JAX's loop drops a carry that no read output depends on (DCE). "
       "A fix: the body's carry dependencies at transform time, the cotangents of carries "
       "no read one depends on left out of the reverse loop"
       for t in ("grad", "vmap_grad", "jit_grad", "jacrev_jacfwd", "hessian", "grad3", "grad4",
                 "jacfwd_jacrev", "jit_hessian", "jit_vmap_grad", "jit_jacfwd_jacrev",
                 "vjp_dict")},
    ("remainder_by_zero_leaks_in_jacrev_jacfwd", "jacrev_jacfwd"): "nan in every output "
    "element's second derivative in x[1, 1], where remainder(0, 0) = nan; JAX 0 where the "
    "output element does not read x[1, 1] (the reverse pass of the batched jvp sums, over "
    "the tangent directions, zero cotangents times the nan of y // v2 at that element; JAX's "
    "floor_divide has a symbolic zero derivative); hessian (jacfwd of grad) matches",
    ("max_ignores_a_nan_tangent_not_chosen", "jacfwd"): "JAX's jacfwd is nan where its jvp is "
    "2.582 (under vmap XLA does not rewrite tangent * hits as a select, so the nan tangent of "
    "0 ** 0 not chosen reaches the max); secant selects under both",
}


def differences(key, src, args):
    """{transform: "letter why"} where secant's outcome is not JAX's recorded one."""
    got = fuzz.outcomes(SECANT, src, args, list(EXPECTED[key]))
    judged = {t: numerics.judge(EXPECTED[key][t], got[t], relative=True) for t in got}
    return {t: f"{letter} {why}" for t, (letter, why) in judged.items() if letter not in ".j"}


def check(key):
    src, args = fuzz.REGRESSIONS[key] if isinstance(key, str) else fuzz.generate(key)
    wrong = differences(key, src, args)
    assert set(wrong) == {t for (k, t) in KNOWN if k == key}, (wrong, src)


@pytest.mark.parametrize("seed", list(fuzz.DEFAULT_SEEDS) + (
    list(fuzz.THOROUGH_SEEDS) if THOROUGH else []))
def test_fuzz_program_matches_jax(seed):
    check(seed)


def test_bool_output_of_a_callee():
    """grad of snp.sum(f(x, y)) where f returns a comparison gave 0.0: the output reads no
    differentiated input, so the seed (whose check refuses a bool or int output, as JAX's
    TypeError) was dead code. It stays as a statement of its own (ad/reverse.py). jvp's tangent
    of the bool output is float0, as JAX's, not a bool (secant/transforms.py
    _float0_tangents)."""
    check("bool_output_of_a_callee")


def test_var_tangent_of_a_shift():
    """jvp of x + snp.var(y) along ones (a shift of y: var's tangent is exactly 0) gave
    0.99967, JAX 1.0: var_jvp summed (a - mean(a)) * t without centring t, keeping the
    rounding of the centred 1e4-sized values (ad/jvp_helpers.py)."""
    check("var_tangent_of_a_shift")


def test_log1p_second_derivative_at_minus_one():
    """grad(grad) of snp.sum(snp.log1p(x)) through a callee at x = -1 gave nan, JAX -inf: the
    inner grad's unreduce(seed, f_out) reads f_out for its shape only, yet the outer grad sent
    it a zero cotangent, which log1p's rule divided by 1 + x = 0 (0 / 0). A derivative
    helper's shape operand gets no cotangent (JAX's symbolic zero; ad/reverse.py)."""
    check("log1p_second_derivative_at_minus_one")


def test_float16_square_scaled():
    """vmap(grad) of x * x * 1e-3 in float16 at x = 60000 gave inf, JAX 120.3: the rule
    wrote 2 * x * g (2 * x overflows float16 past 32752); JAX's g * x + x * g rounds each
    product then doubles, as x * g * 2 does (ad/reverse.py, ad/forward.py)."""
    check("float16_square_scaled")


def test_max_ignores_a_nan_tangent_not_chosen():
    """jvp of snp.max(snp.abs(x) ** x, axis=-1) gave nan for a row holding 0 (0 ** 0's
    tangent is nan) though the max is another element; JAX 2.582 (its jit compiles the
    tangent times the hit mask as a select). extremum_jvp selects (ad/jvp_helpers.py)."""
    check("max_ignores_a_nan_tangent_not_chosen")


def test_where_tangent_of_a_wider_operand():
    """jacfwd of snp.where(x > y, x, y) with x float16 and y float32 was float16, JAX's float32:
    the rule for one operand's tangent wrote where(c, x_dot, 0), x's dtype; the other operand's
    zero is now zeros_like(y), so the tangent has the output's dtype (ad/jvp_rules.py)."""
    check("where_tangent_of_a_wider_operand")


def test_python_loop_int_carry_becomes_float():
    """A Python loop under jit(grad) whose value starts int32 and becomes float32 (v = v * 0.5
    + snp.cos(v) * i), read by the output, after jit(grad) of the program where it is unread (a
    g of the same code): refused (CarryChanged), JAX unrolls it (fuzz seed 105). jit's trace
    again with the loop unrolled got the derivative of g staged with f's loop rolled from the
    code cache (secant/code_cache.py), whose key lacked the unrolled decision; alone it
    passed."""
    src, args = fuzz.REGRESSIONS["python_loop_int_carry_becomes_float_unread"]
    fuzz.outcomes(SECANT, src, args, ["jit_grad"])
    key = "python_loop_int_carry_becomes_float_read"
    src, args = fuzz.REGRESSIONS[key]
    assert not differences(key, src, args), differences(key, src, args)


def test_hessian_of_gammaln_at_its_pole():
    """hessian of snp.sum(sp.gammaln(x)) at x = 0 (a pole) gave nan on the diagonal, JAX's inf
    (polygamma(1, 0) = +inf): the jvp of grad's unreduce(seed, out) passed out's tangent, which
    unreduce reads for its shape only, so the seed's tangent was a zero times digamma(0) = nan.
    It gets no tangent from it now (JAX's symbolic zero; ad/forward.py, as ad/reverse.py)."""
    check("hessian_of_gammaln_at_its_pole")


def test_index_at_an_argmin():
    """x[0, snp.argmin(x[0])] under each transform: JAX's values, but for vmap(grad) (a
    refusal) and vmap(vmap) (an internal error), KNOWN (fuzz15s, seed 10357)."""
    check("index_at_an_argmin")


def test_float16_refusals_of_rfft_and_ndtr():
    """rfft of a float16 array (XLA's RFFT takes float32 and float64 only) and ndtr of one
    (JAX's ndtr, log_ndtr and ndtri take float32 and float64 only): JAX raises under every
    transform, secant computed them (fuzz15t, seeds 10350 and 10354); it refuses them now
    (secant/numpy/fft.py _real_kind, secant/scipy/special.py _float_kind)."""
    check("rfft_of_float16")
    check("ndtr_of_float16")


def test_dead_integer_negative_power():
    """y ** -1 of an int32 y, unread: JAX raises its TypeError under every transform. secant
    raised eagerly, under jit and grad, and gave the value under vmap, jvp, vmap(grad) and
    vmap(vmap) (fuzz15t, seed 10325): the derivatives drop the dead power. They now keep a
    check of its base's dtype in its place (transformer/walker.py _power_check: the power
    itself stays dropped) and raise JAX's TypeError under every transform (sem15v)."""
    check("dead_integer_negative_power")


def test_cumprod_second_derivative_at_a_zero():
    """hessian and jacrev(jacfwd) of snp.sum(snp.cumprod(x)) at x = [1.5, 0, 0.5] were wrong
    (d2/dx0dx1 and d2/dx1dx2 0, not 1.5; fuzz15s, seed 10045): cumprod_grad and cumprod_jvp
    replaced the first zero by 1.0, so their own derivatives lost it. Both are now linear
    recurrences of products and sums (ad/rule_helpers.py linear_recurrence), exact at every
    order; test_cumprod_derivatives_at_every_order checks more."""
    check("cumprod_second_derivative_at_a_zero")


def _central(fun, x, h=1e-6):
    """d fun / d x by float64 central differences, x's axes first."""
    out = np.zeros(x.shape + np.shape(fun(x)))
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h)
    return out


@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_derivatives_at_every_order(x64, reverse):
    """cumprod's derivatives with zeros (one, two in a row, a trailing one) along axis 1,
    forwards and reversed (lax.cumprod): the hessian against central differences of the
    gradient; a third and fourth derivative against the closed form of
    s + 2 s**3 + s**4 = sum(cumprod([s, s**2, 1 + s])); vmap(grad(grad)) against a loop."""
    cum = (lambda x: secant.lax.cumprod(x, axis=1, reverse=True)) if reverse else \
        (lambda x: snp.cumprod(x, axis=1))
    w = np.arange(12.0).reshape(3, 4) / 5

    def g(x):
        return snp.sum(snp.sin(cum(x)) * w)
    x = np.array([[1.2, 0.0, 0.7, 2.0], [0.0, 0.0, 1.1, 0.9], [0.5, 1.3, -0.4, 0.0]])
    dg = secant.grad(g)
    np.testing.assert_allclose(dg(x), _central(g, x), atol=1e-8)
    want = _central(lambda v: np.asarray(dg(v)), x).reshape(12, 12)
    np.testing.assert_allclose(np.asarray(secant.hessian(g)(x)).reshape(12, 12), want.T,
                               atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.jacfwd(dg))(x)).reshape(12, 12),
                               want.T, atol=1e-7)

    def h(s):
        return snp.sum(snp.cumprod(snp.stack([s, s * s, 1 + s])))
    d3 = secant.grad(secant.grad(secant.grad(h)))
    assert np.isclose(d3(0.7), 12 + 24 * 0.7) and np.isclose(secant.grad(d3)(0.7), 24)
    s = np.array([0.7, 0.0, -1.3])
    np.testing.assert_allclose(secant.vmap(secant.grad(secant.grad(h)))(s), 12 * s + 12 * s * s)


_WIDER = {"eager": lambda f, x, t: secant.jvp(f, (x,), (t,))[1],
          "jit": lambda f, x, t: secant.jit(lambda x, t: secant.jvp(f, (x,), (t,)))(x, t)[1],
          "vmap": lambda f, x, t: secant.vmap(lambda x, t: secant.jvp(f, (x,), (t,)))(
              x[None], t[None])[1][0],
          "linearize": lambda f, x, t: secant.linearize(f, x)[1](t)}


@pytest.mark.parametrize("how", list(_WIDER))
def test_tangent_of_a_sum_with_a_wider_constant(how):
    """jvp of x + c with x float16 and c a float32 array: JAX's tangent is float32, the output's
    dtype; secant's was x's float16 (fuzz15s, seeds 10400 and 10768): the generated jvp passed
    x_dot through `x + c`. A lone operand's tangent of add, subtract, remainder and a sum of
    terms is now broadcast_like(x_dot, ans): ans's shape and dtype (ad/jvp_helpers.py)."""
    c = np.array([1.0, -2.0, 0.5], np.float32)
    x, t = np.array([0.5, 1.5, -3.0], np.float16), np.array([1.0, 0.25, -2.0], np.float16)
    out = _WIDER[how](lambda x: x * 2 + c, x, t)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, t.astype(np.float32) * 2)


_PROMOTING = {"subtract": lambda x, c: (c - x) * 1000.0,
              "remainder": lambda x, c: snp.remainder(x, c + 10.0) * 1000.0,
              "sum": lambda x, c: sum([x, c]) * 1000.0,
              "complex": lambda x, c: snp.real((x + c.astype(np.complex64)) * 1000.0)}


@pytest.mark.parametrize("how", list(_WIDER))
@pytest.mark.parametrize("op", list(_PROMOTING))
def test_tangent_promoted_before_it_is_scaled(op, how):
    """The tangent of x + c (x float16, c float32) is float32 where it is computed, not only at
    the output: scaled by 1000 after the sum, a tangent of 100 is 1e5 (float16's largest is
    65504: it was inf, eager jvp's cast of its output came too late) for -, remainder, a sum
    of a list and a complex c (a complex tangent)."""
    c = np.array([1.0, -2.0, 0.5], np.float32)
    x, t = np.array([0.5, 1.5, -3.0], np.float16), np.array([100.0, 0.25, -2.0], np.float16)
    out = _WIDER[how](lambda x: _PROMOTING[op](x, c), x, t)
    want = t.astype(np.float32) * (-1000.0 if op == "subtract" else 1000.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_at_divide_and_power():
    """x.at[i].divide(v) and x.at[i].power(v) under grad, vmap, jvp, hessian, ... were refused
    (SourceError, fuzz15v seed 20013); they are JAX's x / ones_like(x).at[i].mul(v) (and x **
    ...) now (transformer/normalize.py at_update). JAX's outcomes, and the derivative in the
    updated values (which JAX refuses: scatter_mul gradients need unique_indices=True) against
    the closed forms -x1 / v**2 and x1**v log(x1)."""
    check("at_divide_and_power")
    x, v = np.array([1.5, 2.0, 0.5], np.float32), np.float32(3.0)
    d = secant.grad(lambda v: snp.sum(snp.asarray(x).at[1].divide(v)))(v)
    np.testing.assert_allclose(d, -2.0 / 9.0, rtol=1e-6)
    p = secant.grad(lambda v: snp.sum(snp.asarray(x).at[1:].power(v)))(v)
    np.testing.assert_allclose(p, 8 * np.log(2.0) + 0.125 * np.log(0.5), rtol=1e-6)


def test_bool_product_of_a_nan_cotangent():
    """remainder(x, (y > 0) * x) at y = [1, -1]: the second output is nan (remainder by 0);
    JAX's derivatives there differ from secant's under grad, vmap(grad), jacrev(jacfwd) and
    vjp, KNOWN (fuzz15v, seed 11016)."""
    check("bool_product_of_a_nan_cotangent")


def test_unread_carry_of_a_loop_overflows():
    """fori_loop(0, 2, lambda i, c: (c[0] * c[1], tanh(c[1])), (x, sum(x) * 0.5))[1] at x[0] =
    3e38 (c[0] overflows, unread): every reverse-mode derivative is nan, JAX's 0, KNOWN
    (fuzz15v, seed 20030); forward mode (jvp, jacfwd, linearize) matches."""
    check("unread_carry_of_a_loop_overflows")


def test_remainder_by_zero_leaks_in_jacrev_jacfwd():
    """jacrev(jacfwd) of remainder(y, 2 * maximum(x, y)) with one element remainder(0, 0):
    its nan reaches every output element's derivative in that x element, KNOWN (fuzz15v,
    seed 11077); every other transform matches JAX."""
    check("remainder_by_zero_leaks_in_jacrev_jacfwd")
