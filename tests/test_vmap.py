"""vmap as a source transformation, checked.

1. Registry walk: every op of transformer/ops.py has a batching rule (batching/rules.py) or an
   explicit, tested "no batching rule" error; every template names only its op's parameters and
   known helpers.
2. Each kind of rule against a Python loop (`vmap(f)(xs) == stack([f(x) for x in xs])`), eagerly
   and under jit, with batched and unbatched operands of different ranks.
3. The API: JAX's in_axes/out_axes (ints, negative, None, pytrees), keyword arguments,
   axis_size, and its errors; the generated source.
4. Control flow: lax.cond/switch with batched and unbatched predicates, while_loop with a batched
   predicate, fori_loop/scan/map, Python control flow (eager and functionalised under jit).
5. Compositions: vmap(grad) (per-example gradients), grad of a vmapped mean, jit(vmap),
   vmap(jit), vmap(vmap), vmap(jvp_fn); collectives with axis_name.
"""
import ast
import collections
import re
import string

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.ad import helpers as ad_helpers
from secant.ad import index_modes
from secant.batching import helpers as batch_helpers
from secant.batching.rules import (AXIS, COLLECTIVES, DERIVATIVE_ONLY, ELEMENTWISE, HELPERS,
                                   NO_RULE, RULES, SEQUENCE, SPECIAL, UNBATCHED)
from secant.transformer.ops import OPS

RNG = np.random.default_rng(0)


def r(*shape):
    return RNG.normal(size=shape).astype(np.float32)


# --- 1. registry walk -----------------------------------------------------------------------
TABLES = {"ELEMENTWISE": ELEMENTWISE, "AXIS": AXIS, "RULES": RULES, "UNBATCHED": UNBATCHED,
          "SEQUENCE": SEQUENCE, "COLLECTIVES": COLLECTIVES, "SPECIAL": SPECIAL,
          "structure": {"field", "attribute"}, "DERIVATIVE_ONLY": DERIVATIVE_ONLY}


def test_every_op_has_a_batching_rule():
    missing = [n for n in OPS if not any(n in t for t in TABLES.values())]
    assert not missing, f"ops without a batching rule: {missing}"
    stale = [(k, n) for k, t in TABLES.items() for n in t if n not in OPS]
    stale += [("NO_RULE", n) for n in NO_RULE if n not in OPS]
    assert not stale, f"batching rules for ops that do not exist: {stale}"
    for name, (params, _) in NO_RULE.items():
        assert all(p in OPS[name].params for p in params), name


def _fields(template):
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


@pytest.mark.parametrize("op", sorted(RULES))
def test_batching_templates_name_only_parameters_and_known_helpers(op):
    spec = OPS[op]
    known = set(batch_helpers.by_name()) | set(ad_helpers.by_name()) | {
        "snp", "lax", "tuple", "len", "range", "int", "d", "p"}
    for key, template in RULES[op].items():
        assert key == "*" or key in spec.params, f"{op}: rule for {key}, not a parameter"
        allowed = set(spec.params) | {f"{p}_batched" for p in spec.params} | {
            "size", "static", "batched_idx", "strides", "lax"} | set(index_modes.KEYS)
        assert _fields(template) <= allowed, f"{op}: template names {_fields(template) - allowed}"
        fill = {f: f"p_{f}" for f in _fields(template)}
        fill.update(static="", strides="", batched_idx=":, 0", lax="")
        if "idx" in fill:
            fill["idx"] = "0"
        fill.update(index_modes.fill_keys(op, {"idx": "0", "mode": "'fill'"}))
        source = template.format(**fill)
        free = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        unknown = free - set(fill.values()) - known
        assert not unknown, f"{op}: template calls unknown names {unknown}"


def test_helper_templates_name_registered_helpers():
    names = set(batch_helpers.by_name()) | set(ad_helpers.by_name())
    for helper, template in HELPERS.items():
        assert helper in names
        fill = collections.defaultdict(lambda: "a", arg2_next="2", size="n",
                                       arg0_batched="True", arg4_next="2")
        called = {n.func.id for n in ast.walk(ast.parse(template.format_map(fill)))
                  if isinstance(n, ast.Call)}
        assert called <= names, called - names


def test_batching_helpers_are_registered_for_generated_code():
    for name, fn in batch_helpers.by_name().items():
        assert getattr(batch_helpers, name) is fn


def padded(x, c):
    return snp.pad(x, 1, constant_values=c)


def test_no_batching_rule_is_a_clear_error_at_the_user_line():
    with pytest.raises(secant.SecantValueError,
                       match=r"(?s)no batching rule for a batched constant_values.*test_vmap.py"):
        secant.vmap(padded)(r(3, 2), r(3))
    got = secant.vmap(padded, in_axes=(0, None))(r(3, 2), 1.5)     # unbatched: fine
    assert np.shape(got) == (3, 4)


# --- 2. rules against a Python loop ---------------------------------------------------------
def loop_reference(f, args, in_axes, out_axes=0):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for i in range(n):
        example = [a if ax is None else snp.asarray(np.take(a, i, axis=ax))
                   for a, ax in zip(args, axes)]
        outs.append(np.asarray(f(*example)))
    return np.stack(outs, axis=out_axes)


def check(f, *args, in_axes=0, out_axes=0, jit=True, rtol=1e-5):
    want = loop_reference(f, args, in_axes, out_axes)
    g = secant.vmap(f, in_axes=in_axes, out_axes=out_axes)
    np.testing.assert_allclose(np.asarray(g(*args)), want, rtol=rtol, atol=1e-5)
    if jit:
        np.testing.assert_allclose(np.asarray(secant.jit(g)(*args)), want, rtol=rtol, atol=1e-5)
    return g


def elementwise(x, y):
    return snp.exp(x) * y + snp.maximum(x, 0.5) - snp.where(x > y, x, y) / (1.0 + y ** 2)


def scalar_times_vector(s, v):
    return s * v + snp.sin(s)


def comparisons(x, y):
    return ((x > 0) & (y <= 1.0)).astype(np.float32) + (x == x).astype(np.float32) + \
        snp.sign(x) + snp.floor(y)


def reductions(x):
    return snp.sum(x, axis=1) + snp.max(x) + x.mean(axis=-1) + snp.var(x, axis=(0, 1)) + \
        snp.argmax(x).astype(np.float32) + snp.argmin(x, axis=0).sum()


def cumulative(x):
    return snp.cumsum(x) + snp.sort(x.ravel()) + snp.cumprod(x, axis=0).ravel()


def shapes(x):
    y = x.reshape(3, 2).T
    z = snp.concatenate([y, snp.ones((2, 1))], axis=1)
    return snp.stack([z, z * 2], axis=-1)[:, 1:3] + snp.expand_dims(x, 0)[0, :2, None, None]


def more_shapes(x):
    y = snp.swapaxes(x, 0, 1)
    z = snp.moveaxis(y[None], 0, -1).squeeze()
    return snp.flip(z, axis=0) + snp.broadcast_to(z[0], z.shape) + snp.transpose(x, (1, 0))


def lax_shapes(x):
    y = lax.broadcast_in_dim(x, (2, 3, 4), (1, 2))
    z = lax.reshape(lax.transpose(y, (2, 1, 0)), (4, 6))
    s = lax.slice(z, (1, 0), (3, 6), (1, 2))
    return lax.reduce_sum(lax.rev(s, (0,)), (1,)) + lax.dynamic_slice(x, (1, 1), (2, 2))[0]


def indexing(x, i):
    return x[i] * 2 + x[1:3].sum() + x.at[0].set(5.0)[0] + x.at[1:].add(1.0)[-1]


def gather_per_example(x, i):
    return x[i]


def matmuls(a, b):
    return snp.tanh(a @ b) + snp.dot(a, b) + snp.tensordot(a, b, axes=1)


def matvec(m, v):
    return m @ v + snp.outer(v, v).sum(axis=0)[:1]


def helper(x, w):
    return snp.tanh(x @ w)


def calls_a_helper(x, w, b):
    return helper(x, w) + b


def zeros_like_is_unbatched(x):
    z = snp.zeros_like(x)
    return z + x * 2


CASES = [
    ("elementwise", elementwise, (r(4, 3), r(3)), (0, None)),
    ("elementwise both", elementwise, (r(4, 3), r(4, 3)), 0),
    ("scalar times vector", scalar_times_vector, (r(4), r(3)), (0, None)),
    ("scalar times batched vector", scalar_times_vector, (r(4), r(4, 3)), 0),
    ("comparisons", comparisons, (r(5, 2), r(5, 2)), 0),
    ("reductions", reductions, (r(4, 2, 3),), 0),
    ("cumulative", cumulative, (r(3, 2, 2),), 0),
    ("shapes in_axes=1", shapes, (r(6, 5),), 1),
    ("more shapes", more_shapes, (r(2, 3, 4),), 0),
    ("lax shapes", lax_shapes, (r(3, 5, 4),), 1),
    ("indexing", indexing, (r(4, 5), 2), (0, None)),
    ("batched index", gather_per_example, (r(4, 5), np.array([0, 3, 2, 4])), 0),
    ("batched index into unbatched", gather_per_example, (r(5), np.array([0, 3, 2, 4])),
     (None, 0)),
    ("matmul both batched", matmuls, (r(4, 3, 2), r(4, 2, 2)), 0),
    ("matmul batched lhs", matmuls, (r(4, 3, 2), r(2, 2)), (0, None)),
    ("matmul batched rhs", matmuls, (r(3, 2), r(4, 2, 2)), (None, 0)),
    ("matvec", matvec, (r(4, 3, 3), r(4, 3)), 0),
    ("matvec unbatched matrix", matvec, (r(3, 3), r(4, 3)), (None, 0)),
    ("a helper's own batched function", calls_a_helper, (r(4, 3), r(3, 2), r(2)),
     (0, None, None)),
    ("zeros_like", zeros_like_is_unbatched, (r(3, 2),), 0),
]


@pytest.mark.parametrize("name,f,args,in_axes", CASES, ids=[c[0] for c in CASES])
def test_vmap_matches_a_python_loop(name, f, args, in_axes):
    check(f, *args, in_axes=in_axes)


def test_unbatched_values_stay_unbatched():
    text = secant.source(secant.vmap(zeros_like_is_unbatched))
    assert "z = snp.zeros(x.shape[1:], x.dtype)" in text
    text = secant.source(secant.vmap(calls_a_helper, in_axes=(0, None, None)))
    assert "broadcast" not in text
    assert "helper_vmap(x, w)" in text


# --- 3. the API ----------------------------------------------------------------------------------
def affine(x, w, b):
    h = x @ w
    return snp.tanh(h + b)


def test_generated_source_reads_like_the_function():
    g = secant.vmap(affine, in_axes=(1, None, None), out_axes=-1)
    text = secant.source(g)
    assert text.startswith("def affine_vmap(x, w, b):")
    assert "x = snp.moveaxis(x, 1, 0)" in text
    assert "# Batched: h = x @ w" in text
    assert "h = matmul_batched(x, w, True, False)" in text
    assert "return snp.moveaxis(" in text
    x, w, b = r(3, 5), r(3, 2), r(2)
    got = g(x, w, b)
    assert np.shape(got) == (2, 5)
    np.testing.assert_allclose(np.asarray(got), np.tanh(x.T @ w + b).T, rtol=1e-5)


def test_in_axes_and_out_axes_as_jax():
    x, y = r(2, 3), r(4)
    check(lambda a, b: a.sum() * b, x, y, in_axes=(-1, None), out_axes=1)
    a, b = secant.vmap(lambda u, v: (u, v * 2), in_axes=(1, None), out_axes=(1, None))(x, y)
    assert np.shape(a) == (2, 3) and np.shape(b) == (4,)
    out = secant.vmap(lambda p, u: p["w"] * u + p["b"],
                      in_axes=({"w": 0, "b": None}, 0))({"w": np.arange(3.0), "b": 1.0},
                                                         np.ones(3))
    np.testing.assert_allclose(np.asarray(out), [1.0, 2.0, 3.0])
    out = secant.vmap(lambda u: {"a": u, "b": u.sum()}, out_axes={"a": 1, "b": 0})(x)
    assert np.shape(out["a"]) == (3, 2) and np.shape(out["b"]) == (2,)
    scaled = secant.vmap(lambda u, scale=1.0: u * scale)(np.ones(3), scale=np.arange(3.0))
    np.testing.assert_allclose(np.asarray(scaled), [0.0, 1.0, 2.0])
    g = secant.vmap(lambda u: u.sum(), in_axes=None, axis_size=3)
    np.testing.assert_allclose(np.asarray(g(np.ones(2))), [2.0, 2.0, 2.0])


def test_errors_name_the_user_line():
    with pytest.raises(secant.SecantValueError,
                       match=r"(?s)inconsistent sizes.*size 3.*size 4.*test_vmap.py"):
        secant.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(secant.SecantValueError, match=r"(?s)len\(in_axes\)=1, len\(args\)=2"):
        secant.vmap(lambda a, b: a + b, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(secant.SecantValueError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        secant.vmap(lambda a, b: a + b, in_axes=[0])(np.ones(3), np.ones(3))  # a list: a tuple
    with pytest.raises(secant.SecantValueError, match="rank should be at least 2"):
        secant.vmap(lambda a: a, in_axes=1)(np.ones(3))
    with pytest.raises(secant.SecantValueError, match="tree prefix"):
        secant.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": np.ones(3)})
    with pytest.raises(secant.SecantValueError, match="at least one non-None value"):
        secant.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(secant.SecantValueError, match="out_axes=None for an output that is"):
        secant.vmap(lambda a: a * 2, out_axes=None)(np.ones(3))


def branch_on_batched(x):
    if snp.sum(x) > 0:
        y = x * 2
    else:
        y = -x
    return y


def test_python_if_on_a_batched_value():
    # the `if` is functionalised into lax.cond, which vmap turns into both branches and a select
    xs = r(6, 3)
    want = loop_reference(branch_on_batched, (xs,), 0)
    for g in (secant.vmap(branch_on_batched), secant.jit(secant.vmap(branch_on_batched))):
        np.testing.assert_allclose(np.asarray(g(xs)), want, rtol=1e-6)
    assert "select_batched(" in secant.source(secant.vmap(branch_on_batched))


# --- 4. control flow --------------------------------------------------------------------------
def cond_on_batched(x):
    return lax.cond(snp.sum(x) > 0, lambda v: v * 2, lambda v: -v, x)


def cond_on_flag(p, x):
    return lax.cond(p, lambda v: v * 2, lambda v: -v, x)


def switch_on_batched(i, x):
    return lax.switch(i, [lambda v: v, lambda v: v * 2, lambda v: v - 1], x)


def while_batched(limit):
    return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1.0, c[1] * 2), (0.0, 1.0))


def fori(x):
    return lax.fori_loop(0, 3, lambda i, c: c * x + i, 1.0)


def scanned(x):
    c, ys = lax.scan(lambda c, xi: (c + xi, c * xi), 0.0, x)
    return ys + c


def mapped(x):
    return lax.map(lambda row: snp.sum(row) * row, x)


def static_python(x, flag):
    if flag:
        y = x * 2
    else:
        y = x * 0.0 + 1.0
    for i in range(3):
        y = y + x[i]
    return y


def python_while(x):
    n = 0.0
    while snp.sum(x) < 10.0:
        x = x * 2
        n = n + 1
    return x * n


@pytest.mark.parametrize("f,args,in_axes", [
    (cond_on_batched, (r(6, 3),), 0),
    (cond_on_flag, (True, r(6, 3)), (None, 0)),
    (switch_on_batched, (np.array([0, 1, 2, 5, -1]), r(5, 2)), 0),
    (fori, (np.array([1.0, 3.0, 0.5, 5.0]),), 0),
    (scanned, (r(4, 5),), 0),
    (mapped, (r(4, 3, 2),), 0),
    (static_python, (r(4, 3), False), (0, None)),
    (static_python, (r(4, 3), True), (0, None)),
], ids=lambda v: getattr(v, "__name__", None))
def test_control_flow_matches_a_python_loop(f, args, in_axes):
    jit = not any(isinstance(a, bool) for a in args) or f is cond_on_flag
    check(f, *args, in_axes=in_axes, jit=jit)


def test_while_loop_with_a_batched_predicate_runs_until_every_example_stops():
    limits = np.array([1.0, 3.0, 0.5, 5.0])
    for g in (secant.vmap(while_batched), secant.jit(secant.vmap(while_batched))):
        n, v = g(limits)
        np.testing.assert_allclose(np.asarray(n), [1.0, 3.0, 1.0, 5.0])
        np.testing.assert_allclose(np.asarray(v), [2.0, 8.0, 2.0, 32.0])
    assert "any_example" in secant.source(secant.vmap(while_batched))


def test_functionalised_python_while_on_batched_values():
    xs = np.abs(r(4, 3)) + 0.1
    for g in (secant.vmap(python_while), secant.jit(secant.vmap(python_while))):
        np.testing.assert_allclose(np.asarray(g(xs)), loop_reference(python_while, (xs,), 0),
                                   rtol=1e-5)


# --- 5. compositions ---------------------------------------------------------------------------
def mlp_loss(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    err = pred - y
    return snp.mean(err * err)


def _mlp(rng_seed=1):
    rng = np.random.default_rng(rng_seed)
    params = {"w1": rng.normal(size=(3, 4)) / 2, "b1": rng.normal(size=4) / 2,
              "w2": rng.normal(size=(4, 2)) / 2, "b2": rng.normal(size=2) / 2}
    return params, rng.normal(size=(6, 3)), rng.normal(size=(6, 2))


def test_per_example_gradients_equal_a_loop_of_grads(x64):
    params, xs, ys = _mlp()
    per_example = secant.vmap(secant.grad(mlp_loss), in_axes=(None, 0, 0))
    for g in (per_example, secant.jit(per_example)):
        got = g(params, xs, ys)
        for i in range(len(xs)):
            want = secant.grad(mlp_loss)(params, xs[i], ys[i])
            for k in params:
                np.testing.assert_allclose(np.asarray(got[k][i]), np.asarray(want[k]),
                                           rtol=1e-10, atol=1e-12)
    assert secant.source(per_example).startswith("def mlp_loss_grad_vmap(params, x, y):")


batched_loss = secant.vmap(mlp_loss, in_axes=(None, 0, 0))


def mean_of_batched_losses(params, xs, ys):
    return snp.mean(batched_loss(params, xs, ys))


def test_grad_of_a_vmapped_mean_is_the_mean_of_grads(x64):
    params, xs, ys = _mlp(2)
    got = secant.grad(mean_of_batched_losses)(params, xs, ys)
    grads = [secant.grad(mlp_loss)(params, x, y) for x, y in zip(xs, ys)]
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), np.mean([g[k] for g in grads], axis=0),
                                   rtol=1e-10)
    jitted = secant.jit(secant.grad(mean_of_batched_losses))(params, xs, ys)
    for k in params:
        np.testing.assert_allclose(np.asarray(jitted[k]), np.asarray(got[k]), rtol=1e-10)


def times_sin(x, y):
    return x * snp.sin(y)


def test_vmap_of_vmap_jit_and_jvp():
    a, b = r(5), r(3, 2)
    vv = secant.vmap(secant.vmap(times_sin, in_axes=(0, None)), in_axes=(None, 0))
    want = np.stack([np.stack([ai * np.sin(bj) for ai in a]) for bj in b])
    np.testing.assert_allclose(np.asarray(vv(a, b)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(vv)(a, b)), want, rtol=1e-6)
    xs, w = r(4, 3), r(3, 2)
    vj = secant.vmap(secant.jit(helper), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(vj(xs, w)), np.tanh(xs @ w), rtol=1e-5)
    vs = r(4, 3)
    jf = secant.jvp_fn(helper)
    out, out_dot = secant.vmap(jf, in_axes=(0, None, 0, None))(xs, w, vs, np.zeros_like(w))
    for i in range(4):
        o, od = jf(xs[i], w, vs[i], np.zeros_like(w))
        np.testing.assert_allclose(np.asarray(out_dot[i]), np.asarray(od), rtol=1e-5)


# --- collectives ---------------------------------------------------------------------------------
def normalised(x):
    return (x - lax.pmean(x, "i")) / lax.psum(x * x, "i") + lax.axis_index("i")


def extremes(x):
    return lax.pmax(x, "i") - lax.pmin(x, "i") + lax.all_gather(x, "i").sum(axis=0)


def test_collectives_reduce_over_the_mapped_axis():
    x = np.arange(1.0, 5.0)
    got = secant.vmap(normalised, axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), (x - x.mean()) / (x * x).sum() + np.arange(4),
                               rtol=1e-6)
    m = r(4, 3)
    for g in (secant.vmap(extremes, axis_name="i"), secant.jit(secant.vmap(extremes,
                                                                             axis_name="i"))):
        want = m.max(0) - m.min(0) + m.sum(0)
        np.testing.assert_allclose(np.asarray(g(m)), np.broadcast_to(want, m.shape), rtol=1e-5)


def two_axes(x):
    return x - lax.pmean(x, "rows") + lax.psum(x, "cols")


def test_nested_axis_names_and_unbound_names():
    x = r(3, 4)
    f = secant.vmap(secant.vmap(two_axes, axis_name="cols"), axis_name="rows")
    np.testing.assert_allclose(np.asarray(f(x)),
                               x - x.mean(0, keepdims=True) + x.sum(1, keepdims=True), rtol=1e-5)
    with pytest.raises(secant.SecantValueError, match=r"(?s)unbound axis name: 'i'.*test_vmap"):
        lax.psum(np.ones(3), "i")
    with pytest.raises(secant.SecantValueError, match="unbound axis name: 'j'"):
        secant.vmap(lambda a: lax.psum(a, "j"), axis_name="i")(np.ones(3))


def per_example_loss(w, x):
    return snp.sum(snp.tanh(x @ w) ** 2)


def loss_with_vmap_in_place(w, xs):
    return snp.mean(secant.vmap(per_example_loss, in_axes=(None, 0))(w, xs))


def test_grad_through_a_vmap_written_in_place(x64):
    w, xs = np.random.default_rng(3).normal(size=(3, 2)), np.random.default_rng(4).normal(
        size=(5, 3))
    got = secant.grad(loss_with_vmap_in_place)(w, xs)
    want = np.mean([np.asarray(secant.grad(per_example_loss)(w, x)) for x in xs], axis=0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(loss_with_vmap_in_place))(
        w, xs)), want, rtol=1e-10)


def test_source_of_a_vmap_that_cannot_be_generated_reports_why():
    def not_batchable(x):
        return snp.pad(x, 1, constant_values=x[0])
    with pytest.raises(secant.SecantError, match="constant_values"):
        secant.source(secant.vmap(not_batchable))


def _tanh_loss(w, x):
    return snp.sum(snp.tanh(x @ w) ** 2)


def _grad_in_place(w, x):
    return secant.grad(_tanh_loss)(w, x)


def test_grad_written_in_place_under_vmap():
    w = np.full((3, 2), 0.3)
    xs = r(4, 3)
    want = np.stack([np.asarray(secant.grad(_tanh_loss)(w, x)) for x in xs])
    for g in (secant.vmap(_grad_in_place, in_axes=(None, 0)),
              secant.jit(secant.vmap(_grad_in_place, in_axes=(None, 0)))):
        np.testing.assert_allclose(np.asarray(g(w, xs)), want, rtol=1e-5)


def _sum_trailing(x, k):
    return snp.sum(x * x, axis=tuple(range(k, x.ndim))) + snp.max(x, axis=None)


def test_nested_vmap_of_computed_and_none_axes():
    # the inner vmap writes batch_axis(...) for these axes; the outer one reads it again
    xs = r(2, 3, 4, 5)
    f = secant.vmap(secant.vmap(_sum_trailing, in_axes=(0, None)), in_axes=(0, None))
    want = np.stack([np.stack([np.asarray(_sum_trailing(xs[i, j], 1)) for j in range(3)])
                     for i in range(2)])
    np.testing.assert_allclose(np.asarray(f(xs, 1)), want, rtol=1e-6)


def test_hessian_through_a_broadcast_scalar(x64):
    def f(x, w):
        return snp.sum(snp.exp(snp.tanh(x + w)))
    x, w = 0.3, np.array([[0.1, -0.2], [0.4, 0.05]])
    e = 1e-5
    g = secant.grad(f)
    fd = (float(g(x + e, w)) - float(g(x - e, w))) / (2 * e)
    for h in (secant.hessian(f), secant.jit(secant.hessian(f))):
        np.testing.assert_allclose(float(h(x, w)), fd, rtol=1e-6)


def _two_layers(ws, x):
    h = snp.tanh(x @ ws[0])
    return snp.sum(snp.tanh(h @ ws[1]) ** 2)


def test_per_example_gradients_of_weights_read_by_index():
    # ws unbatched, read at ws[0] and ws[1]: each example's cotangent lands at its index
    ws, xs = r(2, 3, 3), r(4, 3)
    want = np.stack([np.asarray(secant.grad(_two_layers)(ws, x)) for x in xs])
    for g in (secant.vmap(secant.grad(_two_layers), in_axes=(None, 0)),
              secant.jit(secant.vmap(secant.grad(_two_layers), in_axes=(None, 0)))):
        np.testing.assert_allclose(np.asarray(g(ws, xs)), want, rtol=1e-5, atol=1e-6)
    both = secant.vmap(secant.grad(_two_layers))(np.stack([ws] * 4), xs)     # ws batched too
    np.testing.assert_allclose(np.asarray(both), want, rtol=1e-5, atol=1e-6)


# --- per-example gradients through Python loops: the derivative's reverse pass replays the loop
# from a stack (x_stack.append(x) ... x = x_stack.pop()); a batched value pushed comes back batched

def _mlp_pairs(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = snp.tanh(h @ w + b)
    w, b = params[-1]
    return snp.sum((h @ w + b - y) ** 2)


def _range_loop(ws, x, y):
    h = x
    for i in range(3):
        h = snp.tanh(h @ ws[i])
    return snp.sum((h - y) ** 2)


def _while_loop(w, x, y):
    h = x
    n = 0
    while n < 3:
        h = snp.sin(h @ w) + h
        n += 1
    return snp.sum((h - y) ** 2)


def _nested_loops(ws, x, y):
    h = x
    for i in range(2):
        for j in range(2):
            h = snp.tanh(h @ ws[2 * i + j]) * y
    return snp.sum(h ** 2)


def _looping_helper(ws, h):
    for w in ws:
        h = snp.tanh(h @ w)
    return h


def _calls_a_looping_helper(ws, x, y):
    return snp.sum((_looping_helper(ws, x) - y) ** 2)


def _unbatched_carry(ws, x, y):
    h, c = x, ws[0]
    for i in range(3):
        c = c * 0.5 + ws[i]             # pushed unbatched: stays unbatched
        h = snp.tanh(h @ c)
    return snp.sum((h - y) ** 2)


def _per_example_loop(f, params, x, y):
    from secant import tree_util
    each = [secant.grad(f)(params, x[k], y[k]) for k in range(x.shape[0])]
    return tree_util.tree_map(lambda *g: np.stack([np.asarray(a) for a in g]), *each)


def _assert_same_tree(got, want):
    from secant import tree_util
    got_leaves, got_def = tree_util.tree_flatten(got)
    want_leaves, want_def = tree_util.tree_flatten(want)
    assert got_def == want_def
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


def _loop_cases():
    rng = np.random.default_rng(3)
    pairs = [(rng.normal(size=(3, 4)), rng.normal(size=4)), (rng.normal(size=(4, 4)),
             rng.normal(size=4)), (rng.normal(size=(4, 3)), rng.normal(size=3))]
    ws = [rng.normal(size=(3, 3)) / 2 for _ in range(4)]
    return [(_mlp_pairs, pairs), (_range_loop, ws), (_range_loop, np.stack(ws)),
            (_while_loop, ws[0]), (_nested_loops, ws), (_nested_loops, np.stack(ws)),
            (_calls_a_looping_helper, ws), (_calls_a_looping_helper, np.stack(ws)),
            (_unbatched_carry, ws), (_unbatched_carry, np.stack(ws))]


@pytest.mark.parametrize("case", range(10))
def test_per_example_gradients_through_python_loops(case, x64):
    f, params = _loop_cases()[case]
    rng = np.random.default_rng(case)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    want = _per_example_loop(f, params, x, y)
    per_example = secant.vmap(secant.grad(f), in_axes=(None, 0, 0))
    _assert_same_tree(per_example(params, x, y), want)
    _assert_same_tree(secant.jit(per_example)(params, x, y), want)


def test_batched_source_of_a_loop_stack():
    text = secant.source(secant.vmap(secant.grad(_range_loop), in_axes=(None, 0, 0)))
    # (the carry h takes x's name where x is dead after `h = x`: lean20u's _into_dead_source)
    assert "x_stack.append(x_1)" in text and "= x_stack.pop()" in text, text
    assert "broadcast_batch(x_stack" not in text


def test_unbatched_values_on_a_stack_stay_unbatched():
    text = secant.source(secant.vmap(secant.grad(_unbatched_carry), in_axes=(None, 0, 0)))
    popped = re.search(r"(c_\w+) = c_1_stack\.pop\(\)", text).group(1)
    assert f"broadcast_batch({popped}" not in text
    assert re.search(rf"times_c_\w+ = {popped} \* 0\.5", text)      # written as for one example


# --- per-example gradients through lax loops: the loop derivative's rule helpers are called
# again with the batched vjp of the body (batching/vectorize.py loop_vjp) ------------------------
def _scan_rnn(params, x, y):
    w, u = params

    def step(h, x_t):
        h = snp.tanh(h @ w + x_t @ u)
        return h, snp.sum(h * h)
    h, ys = lax.scan(step, snp.zeros(3), x)
    return snp.sum((h - y) ** 2) + snp.sum(ys)


def _fori_recurrence(ws, x, y):
    h = lax.fori_loop(0, 3, lambda i, h: snp.tanh(h @ ws[i]) * y + h, x)
    return snp.sum(h * h)


def _fori_tuple_carry(w, x, y):
    def body(i, c):
        h, s = c
        h = snp.sin(h @ w) + y
        return h, s + snp.sum(h * h)
    h, s = lax.fori_loop(0, 4, body, (x, 0.0))
    return s + snp.sum(h)


def _mapped(w, x, y):
    ys = lax.map(lambda row: snp.tanh(row @ w), x)
    return snp.sum((ys - y) ** 2)


def _while_counted(w, x, y):
    def body(c):
        h, n = c
        return snp.sin(h @ w) + h * y, n + 1
    h, n = lax.while_loop(lambda c: c[1] < 3, body, (x, 0))
    return snp.sum(h * h)


def _lax_loop_cases():
    rng = np.random.default_rng(11)
    return [(_scan_rnn, (rng.normal(size=(3, 3)) / 2, rng.normal(size=(2, 3))), (4, 2), (3,)),
            (_fori_recurrence, rng.normal(size=(3, 3, 3)) / 2, (3,), (3,)),
            (_fori_tuple_carry, rng.normal(size=(3, 3)) / 2, (3,), (3,)),
            (_mapped, rng.normal(size=(2, 3)), (4, 2), (4, 3)),
            (_while_counted, rng.normal(size=(3, 3)) / 2, (3,), (3,)),
            (_while_per_example, 1.0 + rng.uniform(size=3), (3,), (3,))]


def _while_per_example(w, x, y):     # a trip count that differs from example to example
    h = lax.while_loop(lambda h: snp.sum(h * h) < 50.0, lambda h: h * w + y, x)
    return snp.sum(h)


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("argnums", [0, 1])
def test_per_example_gradients_through_lax_loops(case, argnums, x64):
    f, params, x_shape, y_shape = _lax_loop_cases()[case]
    rng = np.random.default_rng(case)
    x, y = rng.normal(size=(5,) + x_shape), rng.normal(size=(5,) + y_shape)
    g = secant.grad(f, argnums=argnums)
    from secant import tree_util
    each = [g(params, x[k], y[k]) for k in range(5)]
    want = tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *each)
    per_example = secant.vmap(g, in_axes=(None, 0, 0))
    _assert_same_tree(per_example(params, x, y), want)
    _assert_same_tree(secant.jit(per_example)(params, x, y), want)


def test_per_example_gradients_with_batched_weights_through_a_scan(x64):
    rng = np.random.default_rng(5)
    params = (rng.normal(size=(5, 3, 3)) / 2, rng.normal(size=(5, 2, 3)))
    x, y = rng.normal(size=(4, 2)), rng.normal(size=3)
    g = secant.grad(_scan_rnn)
    want = [g((params[0][k], params[1][k]), x, y) for k in range(5)]
    got = secant.vmap(g, in_axes=(0, None, None))(params, x, y)
    for j in range(2):
        np.testing.assert_allclose(np.asarray(got[j]), np.stack([w[j] for w in want]),
                                   rtol=1e-10)


def test_batched_source_of_a_scan_derivative():
    text = secant.source(secant.vmap(secant.grad(_scan_rnn), in_axes=(None, 0, 0)))
    assert "scan_with_carries(" in text and "scan_vjp(" in text
    assert re.search(r"scan_vjp\(\s*step_vjp_vmap", text)
    assert "batch_size=batch_size" in text and "closed_batched=(False, False)" in text


def test_jit_vmap_grad_of_a_python_loop_over_an_array_stays_rolled(x64):
    rng = np.random.default_rng(2)
    ws = rng.normal(size=(3, 3, 3)) / 2
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    per_example = secant.jit(secant.vmap(secant.grad(_range_loop), in_axes=(None, 0, 0)))
    rolled = secant.jit(secant.grad(_range_loop)).lower(ws, x[0], y[0]).as_text()
    text = per_example.lower(ws, x, y).as_text()
    # the forward loop and its reverse pass, as jit(grad) has them (not unrolled)
    assert text.count("stablehlo.while") == rolled.count("stablehlo.while") == 2
    _assert_same_tree(per_example(ws, x, y), _per_example_loop(_range_loop, ws, x, y))


def test_batched_source_of_a_while_loop_derivative_with_a_trip_count_per_example():
    text = secant.source(secant.vmap(secant.grad(_while_per_example), in_axes=(None, 0, 0)))
    assert "while_loop_with_carries(" in text and "any_example(" in text
    assert re.search(r"while_loop_vjp\(\s*lambda", text) and "active=lambda" in text


def _pair(x):
    return x * 2, x + 1


def _pair_through_a_helper(x):
    return _pair(x)


def _pair_unpacked(x):
    a, b = _pair(x)
    return a, b


@pytest.mark.parametrize("f", [_pair_through_a_helper, _pair_unpacked])
def test_one_out_axis_for_a_tuple_of_outputs(f):
    xs = r(2, 3)
    for g in (secant.vmap(f, out_axes=1), secant.jit(secant.vmap(f, out_axes=-1))):
        got = g(xs)
        assert isinstance(got, tuple) and len(got) == 2
        np.testing.assert_allclose(np.asarray(got[0]), (2 * xs).T, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got[1]), (xs + 1).T, rtol=1e-6)
