"""Forward mode (secant.jvp and the generated jvp source), checked.

1. Registry walk: every differentiable op of transformer/ops.py has a forward rule
   (ad/jvp_rules.py), every template names only parameters of its op and renders to Python that
   calls only known names.
2. Dot-product test per op: for every user-style function of tests/test_grad_rules.py (which
   together use every op with a rule), <u, J v> from the generated jvp equals <J^T u, v> from
   the generated vjp and the finite-difference directional derivative, in float64; a sample
   also under jit.
3. The API: JAX's semantics and errors for jvp, linearize, jvp_fn; readable generated code;
   Python and lax control flow; compositions with grad and jit.
"""
import ast
import re
import string

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.ad import helpers, index_modes, jvp_helpers
from secant.batching import helpers as batch_helpers
from secant.ad.jvp_rules import BROADCAST, JOINT, JVP, LINEAR, SEQUENCE, SPECIAL
from secant.ad.vjp_rules import ZERO
from secant.transformer.ops import OPS

from test_grad_rules import CASES, _as_secant, _leaves_and_rebuild, _value


# --- 1. registry walk -----------------------------------------------------------------------------
def _has_forward_rule(op):
    return op in JVP or op in SEQUENCE or op in SPECIAL


def test_every_differentiable_op_has_a_forward_rule():
    missing = [n for n, spec in OPS.items() if spec.differentiable and not _has_forward_rule(n)]
    assert not missing, f"differentiable ops without a forward rule: {missing}"
    stale = [n for n in list(JVP) + list(JOINT) + list(SEQUENCE) + list(BROADCAST) + list(SPECIAL)
             if n not in OPS]
    assert not stale, f"forward rules for ops that do not exist: {stale}"
    zero = [n for n in JVP if n in ZERO]
    assert not zero, f"ops with a zero derivative need no forward rule: {zero}"


def _fields(template):
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


@pytest.mark.parametrize("op", sorted(JVP))
def test_forward_templates_name_only_parameters_of_their_op(op):
    spec = OPS[op]
    templates = list(JVP[op].items()) + ([("*", JOINT[op])] if op in JOINT else [])
    for param, template in templates:
        if param != "*":
            assert param in spec.arrays, f"{op}: rule for {param}, not an array operand"
        if template == LINEAR:
            continue
        allowed = set(spec.params) | {f"{p}_dot" for p in spec.arrays} | {"ans", "static"} \
            | set(index_modes.KEYS)
        unknown = _fields(template) - allowed
        assert not unknown, f"{op}: template names {unknown}"
        if param != "*":
            assert f"{param}_dot" in _fields(template), f"{op}: {param}'s rule ignores its tangent"
        fill = {p: f"p_{p}" for p in spec.params}
        fill.update({f"{p}_dot": f"p_{p}_dot" for p in spec.arrays}, ans="ans",
                    static=", axis=0")
        if "idx" in spec.params:
            fill["idx"] = "i, 1:3"
            fill.update(index_modes.fill_keys(op, {"idx": "i, 1:3", "mode": "'fill'"}))
        source = template.format(**fill)
        free = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        unknown = free - set(fill.values()) - {"snp", "lax", "tuple", "i"} - set(helpers.by_name()) \
            - set(batch_helpers.by_name())      # (generated code sees both)
        assert not unknown, f"{op}: template calls unknown names {unknown}"


def test_jvp_helpers_are_registered_for_generated_code():
    names = helpers.by_name()
    for name in jvp_helpers.NAMES:
        assert names[name] is getattr(jvp_helpers, name)


# --- 2. dot-product test: jvp against vjp and finite differences, per op ---------------------
def _random_like(rng, arg):
    leaves, treedef = _leaves_and_rebuild(arg)
    return [rng.normal(size=leaf.shape) for leaf in leaves], leaves, treedef


def _dot_product_case(case, jit=False):
    args = case.inputs(seed=3)
    rng = np.random.default_rng(4)
    sargs = [_as_secant(a) for a in args]
    directions = [_random_like(rng, a) for a in args]
    tangents = [_as_secant(secant.tree_util.tree_unflatten(t, vs)) for vs, _, t in directions]
    jvp = secant.jit(lambda *a: secant.jvp(case.fn, a[:len(args)], a[len(args):])) if jit else \
        (lambda *a: secant.jvp(case.fn, a[:len(args)], a[len(args):]))
    out, out_dot = jvp(*sargs, *tangents)
    np.testing.assert_allclose(float(out), _value(case.fn, args), rtol=1e-12)
    u = 0.7
    _, vjp_fun = secant.vjp(case.fn, *sargs)
    cts = vjp_fun(snp.asarray(u))
    rhs = sum(float(np.sum(np.asarray(ct, dtype=np.float64) * v))
              for (vs, _, _), c in zip(directions, cts)
              for ct, v in zip(secant.tree_util.tree_leaves(c), vs))
    eps = 1e-6

    def moved(sign):
        return [secant.tree_util.tree_unflatten(t, [lf + sign * eps * v for lf, v in zip(ls, vs)])
                for vs, ls, t in directions]
    fd = (_value(case.fn, moved(1)) - _value(case.fn, moved(-1))) / (2 * eps)
    lhs = u * float(out_dot)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9, err_msg="<u, J v> != <J^T u, v>")
    np.testing.assert_allclose(float(out_dot), fd, rtol=1e-5, atol=1e-6,
                               err_msg="jvp != finite differences")


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_jvp_dot_product_with_vjp(case, x64):
    _dot_product_case(case)


JIT_SAMPLE = ["f_sin", "f_multiply", "f_true_divide", "f_matmul", "f_max", "f_prod", "f_cumprod",
              "f_getitem", "f_at_set", "f_concatenate", "f_cond", "f_fori_loop", "f_scan",
              "f_while_loop", "f_dict", "f_call", "f_sort", "f_lax_cummax"]


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.fn.__name__ in JIT_SAMPLE])
def test_jit_jvp_dot_product_with_vjp(case, x64):
    _dot_product_case(case, jit=True)


def test_dot_product_cases_use_every_forward_rule():
    from test_grad_rules import COLLECTIVE_OPS, DERIVATIVE_HELPER_OPS, GENERATED_ONLY_OPS, _ops_used
    used = set()
    for c in CASES:
        used |= _ops_used(c.fn, c.argnums)
    from secant.transformer.ops import TREE_OPS     # tests/test_tree_util_inside.py
    from secant.transformer.ops import LINALG_SPECTRAL      # tests/test_linalg_spectral.py
    used |= {"linalg_" + n for n in LINALG_SPECTRAL}
    used |= DERIVATIVE_HELPER_OPS   # (only in derivatives differentiated again: see test_grad_rules)
    used |= GENERATED_ONLY_OPS      # (see test_grad_rules)
    used |= COLLECTIVE_OPS          # (inside vmap: tests/test_carry15l_collectives.py)
    missing = sorted(n for n in set(JVP) | SEQUENCE | SPECIAL if n not in used and n not in TREE_OPS)
    assert not missing, f"forward rules no dot-product case exercises: {missing}"


# --- 3. the API ---------------------------------------------------------------------------------
def poly(x, y):
    z = x * y + snp.sin(x)
    return snp.sum(z * z)


def test_jvp_matches_grad_and_finite_differences(x64):
    rng = np.random.default_rng(0)
    x, y, vx, vy = (rng.normal(size=3) for _ in range(4))
    out, out_dot = secant.jvp(poly, (x, y), (vx, vy))
    gx, gy = secant.grad(poly, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(float(out), float(poly(x, y)))
    np.testing.assert_allclose(float(out_dot), np.dot(gx, vx) + np.dot(gy, vy), rtol=1e-12)
    eps = 1e-6
    fd = (float(poly(x + eps * vx, y + eps * vy)) - float(poly(x - eps * vx, y - eps * vy))) \
        / (2 * eps)
    np.testing.assert_allclose(float(out_dot), fd, rtol=1e-6)


def test_generated_jvp_reads_like_the_maths():
    text = secant.source(secant.jvp_fn(poly))
    assert text.startswith("def poly_jvp(x, y, x_dot, y_dot):")
    assert "# Jvp of: z = x * y + snp.sin(x)" in text
    assert "x_times_y_dot = x_dot * y + x * y_dot" in text
    assert "sin_x_dot = x_dot * snp.cos(x)" in text
    assert "z_dot = x_times_y_dot + sin_x_dot" in text
    assert "return sum_z_sq, sum_z_sq_dot" in text
    assert "0 + " not in text and "* 1.0" not in text and "zeros" not in text


def only_x(x, y):
    return snp.sum(snp.exp(x) * y + y ** 2)


def test_symbolic_zeros_leave_inactive_values_without_tangent_code():
    text = secant.source(secant.jvp_fn(only_x, argnums=0))
    assert text.startswith("def only_x_jvp(x, y, x_dot):")
    assert not re.search(r"\by_dot\b", text) and "zeros" not in text
    assert "y_sq_dot" not in text           # y ** 2 does not depend on x: no tangent at all
    out, out_dot = secant.jvp_fn(only_x, argnums=0)(np.ones(2), np.ones(2), np.ones(2))
    np.testing.assert_allclose(float(out_dot), 2 * np.e, rtol=1e-6)


def broadcast_add(x, b):
    return x + b


def test_lone_tangent_is_broadcast_to_the_result():
    out, out_dot = secant.jvp(broadcast_add, (np.ones(()), np.ones(3)), (np.ones(()), np.zeros(3)))
    assert np.shape(out_dot) == (3,)
    f = secant.jvp_fn(broadcast_add, argnums=0)
    out, out_dot = f(np.float32(1.0), np.ones(3, np.float32), np.float32(2.0))
    np.testing.assert_allclose(np.asarray(out_dot), [2.0, 2.0, 2.0])


def with_aux(x):
    return snp.sum(x ** 2), snp.sqrt(snp.sum(x ** 2))


def test_jvp_has_aux():
    out, out_dot, aux = secant.jvp(with_aux, (np.ones(3, np.float32),),
                                   (np.ones(3, np.float32),), has_aux=True)
    np.testing.assert_allclose(float(out_dot), 6.0)
    np.testing.assert_allclose(float(aux), np.sqrt(3.0), rtol=1e-6)


def test_jvp_errors_are_jax_s():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="must be tuples or lists; found ndarray and ndarray"):
        secant.jvp(poly, x, x)
    with pytest.raises(TypeError, match="same tree structure") as info:
        secant.jvp(poly, (x, x), (x,))
    assert "test_jvp.py" in str(info.value)         # the user's line
    with pytest.raises(TypeError, match="dtypes must be equal"):
        secant.jvp(poly, (x, x), (x, x.astype(np.int32)))
    with pytest.raises(ValueError, match="different primal and tangent shapes"):
        secant.jvp(poly, (x, x), (x, np.ones(2, np.float32)))
    with pytest.raises(secant.SecantError):
        secant.jvp(poly, (x, x), (x, x.astype(np.int32)))


def scaled(x, n):
    return x * n


def test_integer_primals_take_float0_tangents():
    float0 = np.dtype([("float0", np.void, 0)])
    out, out_dot = secant.jvp(scaled, (np.ones(2, np.float32), 3),
                              (np.ones(2, np.float32), np.zeros((), float0)))
    np.testing.assert_allclose(np.asarray(out_dot), [3.0, 3.0])
    with pytest.raises(TypeError, match="float0"):
        secant.jvp(scaled, (np.ones(2, np.float32), 3), (np.ones(2, np.float32), 1.0))


def test_linearize():
    x, y = np.arange(3.0, dtype=np.float32), np.ones(3, np.float32)
    out, f_jvp = secant.linearize(poly, x, y)
    np.testing.assert_allclose(float(out), float(poly(x, y)), rtol=1e-6)
    v = np.ones(3, np.float32)
    np.testing.assert_allclose(float(f_jvp(v, v)), float(secant.jvp(poly, (x, y), (v, v))[1]))
    assert secant.source(f_jvp).startswith("def poly_jvp(x, y, x_dot, y_dot):")
    with pytest.raises(ValueError, match="inconsistent with the original primal values"):
        f_jvp(v)


def test_jvp_under_jit_matches_eager():
    x, v = np.linspace(-1, 1, 4).astype(np.float32), np.ones(4, np.float32)
    eager = secant.jvp(poly, (x, x), (v, v))
    jitted = secant.jit(lambda a, b: secant.jvp(poly, (a, a), (b, b)))(x, v)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6)
    f = secant.jit(secant.jvp_fn(poly))
    np.testing.assert_allclose(np.asarray(f(x, x, v, v)[1]), np.asarray(eager[1]), rtol=1e-6)


# Python control flow: tangents are carried like the variables themselves
def branchy(x, flag):
    if flag:
        y = snp.sin(x) * 2.0
    else:
        y = 3.0 * snp.ones(x.shape)
    return y


def looped(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + snp.sin(x) * i
        x = x * 1.5
    return acc


def whiled(x):
    k = 0
    while k < 3:
        x = snp.tanh(x) + x
        k = k + 1
    return x


def test_python_if_for_while():
    x, v = np.array([0.3, -0.7], np.float32), np.array([1.0, 2.0], np.float32)
    out, out_dot = secant.jvp(branchy, (x, True), (v, np.zeros((), [("float0", np.void, 0)])))
    np.testing.assert_allclose(np.asarray(out_dot), 2 * np.cos(x) * v, rtol=1e-6)
    f = secant.jvp_fn(branchy, argnums=0)
    np.testing.assert_allclose(np.asarray(f(x, False, v)[1]), [0.0, 0.0])
    assert "zeros_like_tree(y)" in secant.source(f)     # the branch without a tangent
    text = secant.source(secant.jvp_fn(looped, argnums=0))
    assert "for i in i_range:" in text and "acc_1_dot = zeros_like_tree(acc_1)" in text
    for fn, args in ((looped, (x, 3)), (whiled, (x,))):
        out, out_dot = secant.jvp_fn(fn, argnums=0)(*args, v)
        eps = 1e-3
        fd = (np.asarray(fn(x + eps * v, *args[1:])) - np.asarray(fn(x - eps * v, *args[1:]))) \
            / (2 * eps)
        np.testing.assert_allclose(np.asarray(out_dot), fd, rtol=2e-3, atol=2e-3)


# lax control flow: the lax function runs the body's generated jvp on (primal, tangent) pairs
W = np.array([0.5, -0.3])


def lax_cond(x, w):
    return lax.cond(x[0] > 0, lambda a: snp.sin(a) * w, lambda a: a * 2.0, x)


def lax_switch(x, w):
    return lax.switch(1, [lambda a: a * w, lambda a: snp.cos(a) + w], x)


def lax_fori(x, w):
    return lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * w + i, x)


def lax_while(x, w):
    return lax.while_loop(lambda c: snp.sum(c) < 10.0, lambda c: c * 1.5 + w, x)


def lax_scan(x, w):
    c, ys = lax.scan(lambda c, xi: (c * xi + w, snp.sum(c * c)), x, snp.arange(3.0))
    return c, ys


def lax_scan_one_name(x, w):
    out = lax.scan(lambda c, xi: (c * xi + w, snp.sum(c)), x, snp.arange(3.0))
    return out[1]


def lax_map(x, w):
    return lax.map(lambda r: snp.sin(r) * w, snp.stack([x, x * 2.0]))


def body(i, c, w):
    return snp.sin(c) * w


def lax_fori_def(x, w):
    def step(i, c):
        return body(i, c, w) + x
    return lax.fori_loop(0, 2, step, x)


@pytest.mark.parametrize("fn", [lax_cond, lax_switch, lax_fori, lax_while, lax_scan,
                                lax_scan_one_name, lax_map, lax_fori_def])
@pytest.mark.parametrize("jit", [False, True])
def test_lax_control_flow_matches_finite_differences(fn, jit, x64):
    x, vx, vw = np.array([1.0, 2.0]), np.array([0.3, -1.0]), np.array([0.1, 0.2])
    run = secant.jit(secant.jvp_fn(fn)) if jit else secant.jvp_fn(fn)
    out, out_dot = run(x, W, vx, vw)
    eps = 1e-6
    up, down = fn(x + eps * vx, W + eps * vw), fn(x - eps * vx, W - eps * vw)
    fd = secant.tree_util.tree_map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps),
                                   up, down)
    for got, want in zip(secant.tree_util.tree_leaves(out_dot), secant.tree_util.tree_leaves(fd)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
    text = secant.source(secant.jvp_fn(fn))
    assert "lax." in text and "_jvp" in text


def test_while_loop_jvp_source():
    text = re.sub(r"\(\s+", "(", " ".join(secant.source(secant.jvp_fn(lax_while)).split()))
    assert ("while_loop_out, while_loop_out_dot = lax.while_loop(lambda carry: "
            "cond_fun(carry[0], w), lambda carry: body_fun_jvp(carry[0], w, carry[1], w_dot), "
            "(x, x_dot))") in text


# user functions: their own generated jvp
def dense(w, b, x):
    return snp.tanh(x @ w + b)


def two_layers(w, b, x, scale=2.0):
    h = dense(w, b, x)
    return snp.sum(dense(w, b=b, x=h) * scale)


def test_user_function_calls_use_the_callee_jvp(x64):
    rng = np.random.default_rng(1)
    w, b, x = rng.normal(size=(3, 3)) / 2, rng.normal(size=3), rng.normal(size=(2, 3))
    vw, vb = rng.normal(size=(3, 3)), rng.normal(size=3)
    out, out_dot = secant.jvp(two_layers, (w, b, x), (vw, vb, np.zeros_like(x)))
    gw, gb = secant.grad(two_layers, argnums=(0, 1))(w, b, x)
    np.testing.assert_allclose(float(out_dot), np.sum(gw * vw) + np.sum(gb * vb), rtol=1e-10)
    text = secant.source(secant.jvp_fn(two_layers, argnums=(0, 1)))
    assert "h, h_dot = dense_jvp(w, b, x, w_dot, b_dot)" in text
    assert "(w, b=b, x=h, w_dot=w_dot, b_dot=b_dot, x_dot=h_dot)" in text      # by keyword


def test_tangent_parameters_follow_defaults_as_keywords():
    text = secant.source(secant.jvp_fn(two_layers, argnums=(0,)))
    assert text.startswith("def two_layers_jvp(w, b, x, scale=2.0, *, w_dot):")


# compositions
def cube_sin(x):
    return snp.sum(snp.sin(x) * x ** 3)


def test_jvp_of_grad_is_a_hessian_vector_product(x64):
    x, v = np.array([1.0, 2.0]), np.array([1.0, 0.5])
    _, hvp = secant.jvp(secant.grad(cube_sin), (x,), (v,))
    h = np.diag(6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x))
    np.testing.assert_allclose(np.asarray(hvp), h @ v, rtol=1e-12)
    jitted = secant.jit(lambda a, b: secant.jvp(secant.grad(cube_sin), (a,), (b,))[1])(x, v)
    np.testing.assert_allclose(np.asarray(jitted), h @ v, rtol=1e-12)


CUBE_SIN_JVP = secant.jvp_fn(cube_sin)
V = np.array([1.0, 0.5])


def tangent_of_cube_sin(x):
    out, out_dot = CUBE_SIN_JVP(x, V)
    return out_dot


def test_grad_and_jvp_of_a_function_calling_a_jvp(x64):
    x = np.array([1.0, 2.0])
    h = np.diag(6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x))
    np.testing.assert_allclose(np.asarray(secant.grad(tangent_of_cube_sin)(x)), h @ V,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(tangent_of_cube_sin))(x)),
                               h @ V, rtol=1e-12)
    _, second = secant.jvp(tangent_of_cube_sin, (x,), (V,))      # jvp of jvp: V^T H V
    np.testing.assert_allclose(float(second), V @ h @ V, rtol=1e-12)


def tangent_via_secant_jvp(x):
    out, out_dot = secant.jvp(cube_sin, (x,), (V,))
    return out_dot


def prod_all(x):
    return snp.prod(x)


PROD_JVP = secant.jvp_fn(prod_all)


def prod_tangent(x):
    out, out_dot = PROD_JVP(x, np.ones(3))
    return out_dot


def test_grad_through_a_jvp_helper(x64):
    x = np.array([0.5, -1.0, 2.0])
    want = np.array([-1.0 + 2.0, 0.5 + 2.0, 0.5 - 1.0])       # d/dx_i sum_j prod_{k!=j} x_k
    np.testing.assert_allclose(np.asarray(secant.grad(prod_tangent)(x)), want)


def test_grad_of_a_function_calling_secant_jvp(x64):
    x = np.array([1.0, 2.0])
    h = np.diag(6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x))
    got = secant.grad(tangent_via_secant_jvp)(x)
    np.testing.assert_allclose(np.asarray(got), h @ V, rtol=1e-12)
    eps = 1e-6
    fd = [(tangent_via_secant_jvp(x + eps * e) - tangent_via_secant_jvp(x - eps * e)) / (2 * eps)
          for e in np.eye(2)]
    np.testing.assert_allclose(np.asarray(got), fd, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(tangent_via_secant_jvp))(x)),
                               np.asarray(got), rtol=1e-12)



def jvp_with_keywords(x):
    out, out_dot = secant.jvp(cube_sin, (x,), (V,), has_aux=False)
    return out_dot


def test_grad_of_an_unreadable_secant_jvp_call_names_the_line():
    with pytest.raises(secant.SecantError, match=r"(?s)secant.jvp_fn\(f\).*test_jvp.py:\d+"):
        secant.grad(jvp_with_keywords)(np.array([1.0, 2.0]))

def bad_jvp_line(x):
    y = snp.sin(x)
    return y @ snp.ones(3)


def test_errors_name_the_user_line():
    with pytest.raises(Exception) as info:
        secant.jvp(bad_jvp_line, (np.ones(2, np.float32),), (np.ones(2, np.float32),))
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "test_jvp.py" in text


# --- golden files: the generated jvp source, reviewed as a diff (see tests/test_golden.py) --------
def loop_and_branch(x, w):
    """Python control flow and a lax loop in one function."""
    if x.ndim == 2:
        x = snp.sum(x, axis=0)
    h = lax.fori_loop(0, 3, lambda i, c: snp.tanh(c * w), x)
    return snp.sum(h ** 2)


def _golden_cases():
    from golden import functions as F
    return {"polynomial": (F.polynomial, 0), "mlp_loss": (F.mlp_loss, 0),
            "with_helper": (F.with_helper, (0, 1)), "loop_and_branch": (loop_and_branch, (0, 1))}


@pytest.mark.parametrize("case", ["polynomial", "mlp_loss", "with_helper", "loop_and_branch"])
def test_generated_jvp_matches_golden(case):
    import os
    import pathlib
    from test_golden import generated_program
    fn, argnums = _golden_cases()[case]
    text = generated_program(secant.jvp_fn(fn, argnums=argnums))
    path = pathlib.Path(__file__).parent / "golden" / f"{case}_jvp.py.txt"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1":
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run SECANT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), (
        f"the generated jvp of {fn.__name__} changed; if that is intended, regenerate with "
        "SECANT_UPDATE_GOLDEN=1 and review `git diff tests/golden/`")
    compile(text, str(path), "exec")
    code = [ln for ln in text.splitlines() if not ln.strip().startswith("#")]
    for ln in code:     # no zero accumulators, no multiplications by one
        assert not re.search(r"(?<![\w.])0(\.0)? \+ |\* 1(\.0)?\b|\+ 0(\.0)?$", ln), ln


def test_golden_jvps_are_right(x64):
    from golden import functions as F
    rng = np.random.default_rng(5)
    params = {"w1": rng.normal(size=(3, 4)), "b1": rng.normal(size=4),
              "w2": rng.normal(size=(4, 2)), "b2": rng.normal(size=2)}
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    v = secant.tree_util.tree_map(lambda a: rng.normal(size=np.shape(a)), params)
    _, out_dot = secant.jvp_fn(F.mlp_loss, argnums=0)(params, x, y, v)
    g = secant.grad(F.mlp_loss)(params, x, y)
    np.testing.assert_allclose(float(out_dot), sum(float(np.sum(np.asarray(g[k]) * v[k]))
                                                   for k in g), rtol=1e-10)
    xs, w = rng.normal(size=(2, 3)), rng.normal(size=3)
    vx, vw = rng.normal(size=(2, 3)), rng.normal(size=3)
    _, out_dot = secant.jvp_fn(loop_and_branch)(xs, w, vx, vw)
    gx, gw = secant.grad(loop_and_branch, argnums=(0, 1))(xs, w)
    np.testing.assert_allclose(float(out_dot), np.sum(gx * vx) + np.sum(gw * vw), rtol=1e-10)
