"""What users hand in is validated as JAX validates it (issue 16): custom_vjp / custom_jvp rules'
results against the primals (eagerly, under jit, under vmap and at second order), grad of a
complex output, integer negative powers, a float switch index, cond branches that disagree (eagerly
too), checkpoint of a non-callable, loop bodies returning one value where a tuple is needed. Each
error is a SecantError of JAX's exception type (TypeError / ValueError) whose message names this
file and the right line: the rule's or body's def line, or the user's call. And the values of
integer division by zero and of abs's derivative at 0 are JAX's, eagerly and under jit."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

HERE = __file__.rstrip("c")
with open(HERE) as _f:
    _LINES = _f.read().splitlines()


def line_of(marker):
    """The line of this file that carries the comment `# <marker>`."""
    hits = [i for i, text in enumerate(_LINES, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def def_line(fn):
    """The line of fn's `def` (past decorators)."""
    line = fn.__code__.co_firstlineno
    while not _LINES[line - 1].lstrip().startswith("def "):
        line += 1
    return line


def raises(kind, fn, line):
    """fn() raises a SecantError that is a `kind` (JAX's type) naming this file at `line`."""
    with pytest.raises(secant.SecantError) as info:
        fn()
    assert isinstance(info.value, kind), type(info.value).__mro__
    assert f"{HERE}:{line}" in str(info.value), (line, str(info.value))
    return str(info.value)


def modes(f):
    """f eagerly and under jit."""
    return [("eager", f), ("jit", secant.jit(f))]


X = snp.array([0.3, 0.5, 0.7])
Y = snp.array([1.0, 2.0, 3.0])
XB = snp.stack([X, 2 * X])
YB = snp.stack([Y, Y + 1])


# --- custom_vjp bwd rules -----------------------------------------------------------------------
def make_vjp(bwd):
    @secant.custom_vjp
    def f(x, y):
        return snp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (x, y)
    f.defvjp(f_fwd, bwd)
    return f


def bwd_one_too_many(res, g):
    x, y = res
    return snp.cos(x) * y * g, snp.sin(x) * g, g


def bwd_one_too_few(res, g):
    x, y = res
    return (snp.cos(x) * y * g,)


def bwd_wrong_shape(res, g):
    x, y = res
    return snp.ones(5), snp.sin(x) * g


def bwd_one_value(res, g):
    x, y = res
    return snp.cos(x) * y * g


def bwd_int_cotangent(res, g):
    x, y = res
    return snp.ones(3, dtype=snp.int32), snp.sin(x) * g


BAD_BWD = [(bwd_one_too_many, TypeError, "a tuple of 3"),
           (bwd_one_too_few, TypeError, "a tuple of 1"),
           (bwd_one_value, TypeError, "one value"),
           (bwd_wrong_shape, ValueError, "5]"),        # (float32[5]; [2, 5] under vmap)
           (bwd_int_cotangent, ValueError, "int32[")]


def _loss(f):
    return lambda x, y: snp.sum(f(x, y) * x)


@pytest.mark.parametrize("bwd, kind, words", BAD_BWD, ids=lambda c: getattr(c, "__name__", ""))
def test_bad_bwd_rule_is_an_error_naming_the_rule(bwd, kind, words):
    loss = _loss(make_vjp(bwd))
    cases = modes(secant.grad(loss, (0, 1))) + [
        ("vmap", secant.vmap(secant.grad(loss, (0, 1)))),
        ("second order", secant.grad(lambda x, y: snp.sum(secant.grad(loss)(x, y)), (0, 1))),
        ("jit second order", secant.jit(secant.grad(
            lambda x, y: snp.sum(secant.grad(loss)(x, y)), (0, 1))))]
    for how, g in cases:
        args = (XB, YB) if how == "vmap" else (X, Y)
        msg = raises(kind, lambda: g(*args), def_line(bwd))
        assert "bwd rule" in msg and bwd.__name__ in msg and words in msg, (how, msg)
        assert "as in JAX" in msg


def bwd_none_for_y(res, g):
    x, y = res
    return snp.cos(x) * y * g, None


def test_none_cotangent_means_zero():
    """As in JAX: None in a bwd rule's output is a zero cotangent for that argument."""
    loss = _loss(make_vjp(bwd_none_for_y))
    want_x = np.cos(np.asarray(X)) * np.asarray(Y) * np.asarray(X) + \
        np.sin(np.asarray(X)) * np.asarray(Y)
    for _, g in modes(secant.grad(loss, (0, 1))):
        gx, gy = g(X, Y)
        np.testing.assert_allclose(gx, want_x, rtol=1e-6)
        np.testing.assert_array_equal(gy, np.zeros(3, np.float32))
        assert np.asarray(gy).dtype == np.float32
    gx, gy = secant.grad(loss, 1)(X, Y), secant.grad(loss, 0)(X, Y)
    np.testing.assert_array_equal(gx, np.zeros(3))
    np.testing.assert_allclose(gy, want_x, rtol=1e-6)
    for in_axes in (0, (0, None)):
        ys = YB if in_axes == 0 else Y
        gx, gy = secant.vmap(secant.grad(loss, (0, 1)), in_axes=in_axes)(XB, ys)
        for i in range(2):
            lx, ly = secant.grad(loss, (0, 1))(XB[i], ys[i] if in_axes == 0 else ys)
            np.testing.assert_allclose(gx[i], lx, rtol=1e-6)
            np.testing.assert_array_equal(gy[i], ly)
    # second order: d/dy of sum(grad_x loss) = cos(x) x (the y path through f is the rule's 0)
    gg = secant.grad(lambda x, y: snp.sum(secant.grad(loss)(x, y)), 1)(X, Y)
    np.testing.assert_allclose(gg, np.cos(np.asarray(X)) * np.asarray(X), rtol=1e-6)


def test_none_cotangent_for_a_dict_argument_is_zeros_of_its_structure():
    @secant.custom_vjp
    def f(p, x):
        return p["w"] * x + p["b"]

    def f_fwd(p, x):
        return f(p, x), (p, x)

    def f_bwd(res, g):
        p, x = res
        return {"w": snp.sum(g * x), "b": None}, None
    f.defvjp(f_fwd, f_bwd)
    p = {"w": snp.asarray(2.0), "b": snp.asarray(1.0)}
    for _, g in modes(secant.grad(lambda p, x: snp.sum(f(p, x)), (0, 1))):
        gp, gx = g(p, X)
        np.testing.assert_allclose(gp["w"], np.sum(np.asarray(X)), rtol=1e-6)
        assert float(gp["b"]) == 0.0
        np.testing.assert_array_equal(gx, np.zeros(3))


def fwd_wrong_output(x):
    return (snp.sin(x), snp.sin(x)), x


def fwd_not_a_pair(x):
    return snp.sin(x)


@pytest.mark.parametrize("fwd", [fwd_wrong_output, fwd_not_a_pair], ids=lambda f: f.__name__)
def test_fwd_output_disagreeing_with_the_function_is_an_error(fwd):
    @secant.custom_vjp
    def f(x):
        return snp.sin(x)

    def f_bwd(res, g):
        return (snp.cos(res) * g,)
    f.defvjp(fwd, f_bwd)
    loss = lambda x: snp.sum(f(x))      # noqa: E731
    for _, g in modes(secant.grad(loss)) + [("vmap", secant.vmap(secant.grad(loss)))]:
        msg = raises(TypeError, lambda: g(XB if g.__name__.endswith("vmap") else X),
                     def_line(fwd))
        assert "fwd rule" in msg and fwd.__name__ in msg


def fwd_wrong_dtype(x):
    return snp.sin(x) * 1j, x


def test_fwd_output_of_another_dtype_is_an_error():
    @secant.custom_vjp
    def f(x):
        return snp.sin(x)
    f.defvjp(fwd_wrong_dtype, lambda res, g: (g,))
    for _, g in modes(secant.grad(lambda x: snp.sum(f(x)))):
        msg = raises(TypeError, lambda: g(X), def_line(fwd_wrong_dtype))
        assert "complex64[3]" in msg and "float32[3]" in msg


def test_an_integer_output_beside_a_float_one_is_fine():
    @secant.custom_vjp
    def f(x):
        return snp.sin(x), snp.argmax(x)

    def f_fwd(x):
        return f(x), x

    def f_bwd(x, g):
        return (snp.cos(x) * g[0],)
    f.defvjp(f_fwd, f_bwd)

    def loss(x):
        y, i = f(x)
        return snp.sum(y) + i
    for _, g in modes(secant.grad(loss)):
        np.testing.assert_allclose(g(X), np.cos(np.asarray(X)), rtol=1e-6)


# --- custom_jvp rules ---------------------------------------------------------------------------
def make_jvp(rule):
    @secant.custom_jvp
    def f(x):
        return snp.sin(x)
    f.defjvp(rule)
    return f


def jvp_int_tangent(primals, tangents):
    x, = primals
    t, = tangents
    return snp.sin(x), (snp.cos(x) * t).astype(snp.int32)


def jvp_wrong_shape(primals, tangents):
    x, = primals
    return snp.sin(x), snp.ones(5)


def jvp_wrong_structure(primals, tangents):
    x, = primals
    t, = tangents
    return snp.sin(x), (snp.cos(x) * t, t)


def jvp_not_a_pair(primals, tangents):
    x, = primals
    return snp.sin(x)


@pytest.mark.parametrize("rule, words", [
    (jvp_int_tangent, "int32["), (jvp_wrong_shape, "5]"),
    (jvp_wrong_structure, "structures"), (jvp_not_a_pair, "pair")],
    ids=lambda c: getattr(c, "__name__", ""))
def test_bad_jvp_rule_is_an_error_naming_the_rule(rule, words):
    f = make_jvp(rule)
    jvp = lambda x: secant.jvp(f, (x,), (snp.ones_like(x),))   # noqa: E731
    loss = lambda x: snp.sum(f(x) * x)                          # noqa: E731
    cases = modes(jvp) + modes(secant.grad(loss)) + modes(secant.jacfwd(f)) + [
        ("vmap jvp", secant.vmap(jvp)), ("hessian", secant.hessian(loss))]
    for how, g in cases:
        msg = raises(TypeError, lambda: g(XB if how.startswith("vmap") else X), def_line(rule))
        assert "custom_jvp rule" in msg and rule.__name__ in msg and words in msg, (how, msg)


def test_good_custom_rules_still_give_the_right_values():
    def good_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return snp.sin(x), snp.cos(x) * t
    f = make_jvp(good_jvp)
    loss = lambda x: snp.sum(f(x) * x)      # noqa: E731
    x = np.asarray(X, np.float64)
    want = np.cos(x) * x + np.sin(x)
    for _, g in modes(secant.grad(loss)):
        np.testing.assert_allclose(g(X), want, rtol=1e-6)
    np.testing.assert_allclose(secant.hessian(loss)(X), np.diag(2 * np.cos(x) - x * np.sin(x)),
                               rtol=1e-5)
    np.testing.assert_allclose(secant.vmap(secant.grad(loss))(XB)[1],
                               np.cos(2 * x) * 2 * x + np.sin(2 * x), rtol=1e-6)


# --- grad of a complex output, integer powers, switch, cond, checkpoint, loop bodies -----------
def complex_out(x):
    return snp.sum(x * (1 + 2j))    # complex output


def test_grad_of_a_complex_output_needs_holomorphic():
    for _, g in modes(secant.grad(complex_out)):
        msg = raises(TypeError, lambda: g(X), line_of("complex output"))
        assert "grad requires real-valued outputs" in msg and "holomorphic=True" in msg
    got = secant.grad(complex_out, holomorphic=True)(X.astype(snp.complex64))
    np.testing.assert_allclose(got, np.full(3, 1 + 2j))


def int_negative_power(x):
    return x ** -1      # int negative power


def int_negative_power_fn(x):
    return snp.power(x, -2)     # snp.power negative


def test_integer_negative_power_is_a_type_error_eagerly_and_under_jit():
    n = snp.array([2, 3])
    for _, g in modes(int_negative_power):
        msg = raises(TypeError, lambda: g(n), line_of("int negative power"))
        assert "Integers cannot be raised to negative powers" in msg
    for _, g in modes(int_negative_power_fn):
        raises(TypeError, lambda: g(n), line_of("snp.power negative"))
    for _, g in modes(int_negative_power):         # floats are fine
        np.testing.assert_allclose(g(snp.array([2.0, 4.0])), [0.5, 0.25])
    # an integer array of exponents: XLA's values (1 and -1 keep their powers, else 0), eagerly
    # as under jit
    base, exp = snp.array([1, -1, -1, 3, 5]), snp.array([-1, -2, -3, 2, -1])
    for _, g in modes(lambda a, b: a ** b):
        np.testing.assert_array_equal(g(base, exp), [1, 1, -1, 9, 0])


def float_switch_index(i, x):
    return lax.switch(i, [lambda x: x + 1, lambda x: x * 2], x)     # float index


def test_a_float_switch_index_is_a_type_error():
    for _, g in modes(float_switch_index):
        msg = raises(TypeError, lambda: g(1.0, 3.0), line_of("float index"))
        assert "integer" in msg
        assert float(g(1, 3.0)) == 6.0
        assert float(g(snp.int32(0), 3.0)) == 4.0


def cond_structures(p, x):
    return lax.cond(p, lambda x: x, lambda x: (x, x), x)    # cond structures


def cond_shapes(p, x):
    return lax.cond(p, lambda x: x, lambda x: snp.ones(3), x)     # cond shapes


def cond_dtypes(p, x):
    return lax.cond(p, lambda x: x, lambda x: snp.int32(1), x)    # cond dtypes


def switch_shapes(i, x):
    return lax.switch(i, [lambda x: x, lambda x: x, lambda x: snp.ones(2)], x)   # switch shapes


@pytest.mark.parametrize("fn, marker", [
    (cond_structures, "cond structures"), (cond_shapes, "cond shapes"),
    (cond_dtypes, "cond dtypes"), (switch_shapes, "switch shapes")],
    ids=lambda c: getattr(c, "__name__", str(c)))      # (no addresses: xdist workers agree)
def test_branches_that_disagree_are_an_error_eagerly_too(fn, marker):
    """As in JAX, which traces every branch: the branch not taken is checked too."""
    for pred in (True, False) if fn.__name__.startswith("cond") else (0, 2):
        for _, g in modes(fn):
            msg = raises(TypeError, lambda: g(pred, 1.0), line_of(marker))
            assert "must return the same structure, shapes and dtypes" in msg
            assert f"{HERE}:{line_of(marker)})" in msg      # the branches' own line


def cond_python_branches(p, x):
    def big(x):
        if x.shape[0] > 2:          # Python control flow on a static shape is fine
            return x * 2
        return x
    return lax.cond(p, big, lambda x: x - 1, x)


def test_branches_that_agree_still_run_eagerly():
    for _, g in modes(cond_python_branches):
        np.testing.assert_allclose(g(True, X), 2 * np.asarray(X), rtol=1e-6)
        np.testing.assert_allclose(g(False, X), np.asarray(X) - 1, rtol=1e-6)


def checkpoint_of_5():
    return secant.checkpoint(5)     # checkpoint of 5


def test_checkpoint_of_a_non_callable_is_a_type_error():
    msg = raises(TypeError, checkpoint_of_5, line_of("checkpoint of 5"))
    assert "expects a function" in msg
    with pytest.raises(TypeError):
        secant.custom_vjp(3)
    with pytest.raises(TypeError):
        make_vjp(bwd_none_for_y).defvjp(None, bwd_none_for_y)


def scan_body(c, a):
    return c + a


def scan_one_value(xs):
    return lax.scan(scan_body, 0.0, xs)


def while_body(c):
    return c[0] + 1


def while_one_value(x):
    return lax.while_loop(lambda c: c[0] < 3, while_body, (0, x))


def fori_body(i, c):
    return c[0] + 1.0


def fori_one_value(x):
    return lax.fori_loop(0, 3, fori_body, (0.0, x))


@pytest.mark.parametrize("fn, body, words", [
    (scan_one_value, scan_body, "must return a pair (carry, y)"),
    (while_one_value, while_body, "a tuple of 2 values"),
    (fori_one_value, fori_body, "a tuple of 2 values")], ids=lambda c: getattr(c, "__name__", ""))
def test_a_body_returning_one_value_where_a_tuple_is_needed_names_the_body(fn, body, words):
    for _, g in modes(fn):
        msg = raises(TypeError, lambda: g(snp.ones(3) if fn is scan_one_value else 1.0),
                     def_line(body))
        assert words in msg and "one value" in msg


# --- values: integer division by zero, abs at 0 -------------------------------------------------
def test_integer_floor_division_and_remainder_by_zero_are_jaxs_values():
    """jnp.floor_divide of ints is where(sign(x) != sign(y) & rem(x, y) != 0, div - 1, div) with
    XLA's div(x, 0) = -1 and rem(x, 0) = x: x // 0 is -2 for x != 0 and -1 for 0; jnp.remainder
    replaces a zero divisor by 1: x % 0 is 0. Eagerly (NumPy would give 0 and warn) as under
    jit."""
    a = snp.array([7, -7, 0, 5, -2 ** 31], dtype=snp.int32)
    b = snp.array([0, 0, 0, 2, -1], dtype=snp.int32)
    for _, g in modes(lambda x, y: (x // y, x % y, snp.fmod(x, y), lax.div(x, y),
                                    lax.rem(x, y))):
        fdiv, rem, fmod, div, lrem = (np.asarray(v) for v in g(a, b))
        np.testing.assert_array_equal(fdiv, [-2, -2, -1, 2, -2 ** 31])
        np.testing.assert_array_equal(rem, [0, 0, 0, 1, 0])
        np.testing.assert_array_equal(fmod, [0, 0, 0, 1, 0])
        np.testing.assert_array_equal(div, [-1, -1, -1, 2, -2 ** 31])     # XLA's
        np.testing.assert_array_equal(lrem, [7, -7, 0, 1, 0])
    u = snp.array([7, 0, 5], dtype=snp.uint32)
    v = snp.array([0, 0, 2], dtype=snp.uint32)
    for _, g in modes(lambda x, y: (x // y, x % y)):
        fdiv, rem = (np.asarray(t) for t in g(u, v))
        np.testing.assert_array_equal(fdiv, [2 ** 32 - 1, 2 ** 32 - 1, 2])
        np.testing.assert_array_equal(rem, [0, 0, 1])


def test_derivative_of_abs_at_zero_is_one_as_jax():
    """JAX's abs jvp is select(x >= 0, t, -t): 1 at 0 (and at -0.0)."""
    for _, g in modes(secant.grad(lambda x: snp.abs(x))):
        assert float(g(0.0)) == 1.0
        assert float(g(-0.0)) == 1.0
        assert float(g(-2.0)) == -1.0
    for _, g in modes(lambda x: secant.jvp(snp.abs, (x,), (snp.ones_like(x),))[1]):
        np.testing.assert_array_equal(g(snp.array([-1.0, 0.0, 2.0])), [-1.0, 1.0, 1.0])
    np.testing.assert_array_equal(secant.vmap(secant.grad(snp.abs))(snp.array([-1.0, 0.0, 2.0])),
                                  [-1.0, 1.0, 1.0])
