"""Every reverse-mode rule, checked.

1. Registry walk: every differentiable primitive of `secant.backends.core.PRIMITIVES` is covered
   by a source-level op (transformer/ops.py PRIMITIVE_OPS) that has a rule; every differentiable
   op has a rule; every template names only parameters its op has and renders to valid Python.
2. Finite differences: for every op with a rule, a small user-style function (defined here, at
   module level: the transform reads source from disk) is differentiated with `secant.grad` and
   compared with central differences in float64, eagerly and under `secant.jit(secant.grad(f))`,
   and `secant.vjp` is checked against a directional derivative (<u, J v>).
   A registry test checks these functions together use every op with a rule.
3. Ties (max/min, maximum/minimum, clip) split the cotangent as JAX does.
"""
import ast
import inspect
import math
import string
from collections import namedtuple

import numpy as np
import pytest
from secant.transformer.ops import TREE_OPS  # tests/test_tree_util_inside.py
from secant.transformer.ops import LINALG_SPECTRAL

import secant
import secant.numpy as snp
from secant.ad import index_modes
from secant.ad.helpers import (add_grads, fields_of, grad_of_fields, pick, split_at, unmerge,
                               unmerge_grad)
from secant.batching.helpers import fields_of_batched
from secant.batching import helpers as batch_helpers
from secant.batching.helpers import grad_of_fields_batched

# (tolerance-based checks: XLA's LLVM optimisation off in the default profile, conftest)
pytestmark = pytest.mark.usefixtures("fast_compiles")
from secant import lax
from secant.ad import helpers, rule_helpers
from secant.ad.vjp_rules import SEQUENCE_VJP, SPECIAL, UNBROADCAST, VJP, ZERO
from secant.backends.core import PRIMITIVES
from secant.transformer import ir
from secant.transformer.normalize import normalise
from secant.transformer.ops import AT_METHODS, OPS, PRIMITIVE_OPS

# --- 1. the registry walk -------------------------------------------------------------------------
def _has_rule(op):
    return op in VJP or op in SEQUENCE_VJP or op in SPECIAL


def test_every_differentiable_primitive_has_an_op_with_a_rule():
    missing = []
    for name, prim in PRIMITIVES.items():
        if not prim.differentiable:
            continue
        op = PRIMITIVE_OPS.get(name)
        # a primitive whose derivative is zero wherever it exists (sign) is covered by an op
        # listed in ZERO: its result is a constant for the transform
        if op is None or op not in OPS or not (_has_rule(op) or op in ZERO):
            missing.append((name, op))
    assert not missing, f"differentiable primitives without a rule: {missing}"


def test_primitive_ops_names_only_registered_primitives():
    assert set(PRIMITIVE_OPS) <= set(PRIMITIVES)
    assert all(PRIMITIVES[p].differentiable for p in PRIMITIVE_OPS)


def test_every_differentiable_op_has_a_rule():
    missing = [n for n, spec in OPS.items() if spec.differentiable and not _has_rule(n)]
    assert not missing, f"differentiable ops without a rule: {missing}"
    marked = [n for n in ZERO if n in OPS and OPS[n].differentiable]
    assert not marked, f"ops with a zero derivative must be marked differentiable=False: {marked}"
    stale = [n for n in list(VJP) + list(SEQUENCE_VJP) + list(UNBROADCAST) if n not in OPS]
    assert not stale, f"rules for ops that do not exist: {stale}"


def test_at_methods_name_ops_with_rules():
    assert all(op in OPS and _has_rule(op) for op in AT_METHODS.values())


def _fields(template):
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


@pytest.mark.parametrize("op", sorted(set(VJP) | set(SEQUENCE_VJP)))
def test_templates_name_only_parameters_of_their_op(op):
    spec = OPS[op]
    templates = (list(VJP[op].items()) if op in VJP
                 else [(spec.sequence, SEQUENCE_VJP[op])])
    for param, template in templates:
        assert param in spec.params, f"{op}: rule for unknown parameter {param}"
        assert param in spec.arrays or param == spec.sequence, \
            f"{op}: rule for {param}, which is not an array operand"
        unknown = _fields(template) - set(spec.params) - {"g", "ans", "static"} \
            - set(index_modes.KEYS)
        assert not unknown, f"{op}: template names {unknown}"
        fill = {p: f"p_{p}" for p in spec.params}
        fill.update(g="g_bar", ans="ans", static=", axis=0")
        if "idx" in spec.params:
            fill["idx"] = "i, 1:3"
            fill.update(index_modes.fill_keys(op, {"idx": "i, 1:3", "mode": "'fill'"}))
            if fill.get("won"):      # (it names the cotangent, formatted as ad/reverse.py does)
                fill["won"] = fill["won"].format(g=fill["g"])
        source = template.format(**fill)
        ast.parse(source)            # renders to a Python expression
        free = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        unknown = free - set(fill.values()) - {"snp", "lax", "tuple", "int", "i"} \
            - set(helpers.NAMES) - set(helpers.TREE_NAMES) - set(batch_helpers.NAMES)
        assert not unknown, f"{op}: template calls unknown names {unknown}"


def test_rule_helpers_exist():
    for name in rule_helpers.NAMES:
        assert hasattr(rule_helpers, name)


# --- 2. finite differences ------------------------------------------------------------------------
def weights(shape):
    """Fixed, distinct weights: the cotangent of the output is not all ones."""
    n = int(np.prod(shape))
    return np.cos(np.arange(n, dtype=np.float64) * 1.3 + 0.2).reshape(shape) + 1.5


def wsum(y):
    return snp.sum(y * weights(y.shape))


IDX = np.array([0, 2, 2, 1])            # an integer array index with a duplicate
OUT = np.array([0, 5, -1, -4])          # out of range for 3 rows: past the end, before the start
IDX2 = np.array([[1, 0], [2, 2]])
SORTED_BY = np.array([[2, 0, 1], [1, 2, 0], [0, 0, 2]])
Pair = namedtuple("Pair", "w b")

# elementwise, one operand
def f_sin(x): return wsum(np.sin(x))
def f_snp_sin(x): return wsum(snp.sin(x))
def f_cos(x): return wsum(np.cos(x))
def f_tan(x): return wsum(np.tan(x))
def f_arcsin(x): return wsum(np.arcsin(x))
def f_arccos(x): return wsum(snp.arccos(x))
def f_arctan(x): return wsum(np.arctan(x))
def f_sinh(x): return wsum(np.sinh(x))
def f_cosh(x): return wsum(np.cosh(x))
def f_tanh(x): return wsum(np.tanh(x))
def f_arcsinh(x): return wsum(np.arcsinh(x))
def f_arccosh(x): return wsum(np.arccosh(x))
def f_arctanh(x): return wsum(np.arctanh(x))
def f_exp(x): return wsum(np.exp(x))
def f_exp2(x): return wsum(np.exp2(x))
def f_expm1(x): return wsum(np.expm1(x))
def f_log(x): return wsum(np.log(x))
def f_log2(x): return wsum(np.log2(x))
def f_log10(x): return wsum(np.log10(x))
def f_log1p(x): return wsum(np.log1p(x))
def f_sqrt(x): return wsum(np.sqrt(x))
def f_cbrt(x): return wsum(np.cbrt(x))
def f_square(x): return wsum(np.square(x))
def f_reciprocal(x): return wsum(np.reciprocal(x))
def f_absolute(x): return wsum(np.abs(x) + abs(x))
def f_complex_parts(x): return wsum(np.real(x) * x + np.imag(x) + snp.conj(x))   # real x
def f_logistic(x): return wsum(snp.logistic(x))
def f_erf(x): return wsum(lax.erf(x))
def f_rsqrt(x): return wsum(snp.rsqrt(x))
def f_negative(x): return wsum(-x)
def f_positive(x): return wsum(np.positive(x))
def f_identity(x):
    y = x
    return wsum(y * y)
def f_astype(x): return wsum(x.astype(np.float64) * 2.0)
def f_optimization_barrier(x): return wsum(snp.sin(lax.optimization_barrier(x)) * x)
# (with float64's own widths the rounding is the identity; the rule is JAX's: linear)
def f_reduce_precision(x): return wsum(snp.sin(lax.reduce_precision(x, 11, 52)) * x)
def f_grad_of_fields(x):         # what a derivative differentiated again contains
    pair = grad_of_fields((x, x), {0: snp.sin(x) * x})
    return wsum(pair[0] + pair[1])
def f_grad_of_fields_batched(x):     # ... and in a batched derivative differentiated again
    pair = grad_of_fields_batched((x, x), {0: snp.sin(x) * x}, 3, True)
    return wsum(pair[0] + pair[1])
def f_unmerge(x):                   # the dict merge's cotangent helpers and their transposes
    d = {"a": snp.sin(x), "b": x * x, "c": x}
    back = unmerge(d, {"a": x, "b": x}, ["a"])
    grads = unmerge_grad({"a": x * 3.0, "b": snp.cos(back["b"])}, d, {"a": x, "b": x}, ["a"])
    picked = pick(d, {"c": x, "a": x})          # (d's entries at the keys of the dict merged in)
    return wsum(back["b"] + grads["a"] + grads["b"] * 2.0 + grads["c"]
                + snp.sin(picked["c"]) * picked["a"])
def f_split(x):                     # a list of pieces: its cotangent is joined back
    a, b, c = snp.vsplit(x, 3)
    d, e = snp.hsplit(snp.sin(x), 2)
    f, g = snp.array_split(x, [1], axis=1)
    h = snp.split(x * x, 2, axis=1)
    i, j = snp.dsplit(x.reshape((3, 2, 2)), 2)
    return wsum(a * c + b) + wsum(d * e) + wsum(g * 2.0) + wsum(h[1]) + wsum(i * j) + wsum(f)
def f_einsum(x):                    # its rules are einsums computed from the subscripts
    y = snp.einsum('ij,kj->ik', x, snp.sin(x)) + snp.einsum('ij,ij,...j->...i', x, x, x)
    return wsum(y) + snp.einsum('ij,ij', x, snp.cos(x)) * snp.einsum('ji->', x ** 2)
def f_erf_inv(x): return wsum(lax.erf_inv(x))
def f_lgamma(x): return wsum(lax.lgamma(x))
def f_digamma(x): return wsum(lax.digamma(x))
def f_integer_pow(x): return wsum(lax.integer_pow(x, 3) + lax.integer_pow(x, 2) + lax.integer_pow(x, 1) + lax.integer_pow(x, 0))
def f_convert_element_type(x): return wsum(lax.convert_element_type(x, np.float64))
def f_sign_is_constant(x): return wsum(np.sign(x) * x)
def f_math_sin(x): return math.sin(x) * 2.0


# elementwise, two operands (with broadcasting)
def f_add(x, y): return wsum(x + y)
def f_subtract(x, y): return wsum(x - y)
def f_multiply(x, y): return wsum(x * y)
def f_true_divide(x, y): return wsum(x / y)
def f_power(x, y): return wsum(x ** y)
def f_power_literal(x): return wsum(x ** 3 + x ** 2 + x ** 0.5)
def f_maximum(x, y): return wsum(np.maximum(x, y) + snp.maximum(y, x))
def f_minimum(x, y): return wsum(np.minimum(x, y) + lax.min(x, y + 0.0))
def f_arctan2(x, y): return wsum(np.arctan2(x, y))
def f_hypot(x, y): return wsum(np.hypot(x, y))
def f_logaddexp(x, y): return wsum(np.logaddexp(x, y))
def f_remainder(x, y): return wsum(x % y + np.remainder(x, y))
def f_rem(x, y): return wsum(lax.rem(x, y))
def f_lax_div(x, y): return wsum(lax.div(x, y))
def f_where(x, y): return wsum(np.where(x > 0, x, y))
def f_select(x, y): return wsum(lax.select(x > 0, x, y))
def f_clip(x): return wsum(np.clip(x, -0.5, 0.7) + x.clip(-0.2, 0.3) + snp.clip(x, a_max=0.1))
def f_clip_bounds(x, lo, hi): return wsum(np.clip(x, lo, hi))
def f_clamp(lo, x, hi): return wsum(lax.clamp(lo, x, hi))
def f_add_n(x, y): return wsum(sum([x, y, x * y]))


# products
def f_matmul(x, y): return wsum(x @ y)
def f_matmul_vec(x, v): return wsum(x @ v) + v @ v
def f_dot(x, y): return wsum(np.dot(x, y) + x.dot(y))
def f_outer(x, y): return wsum(np.outer(x, y))
def f_tensordot(x, y): return wsum(np.tensordot(x, y, axes=([0, 2], [1, 0])) + snp.tensordot(x, y, 1)[0, :, 0])
def f_dot_general(x, y): return wsum(lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))))
def f_lax_dot(x, y): return wsum(lax.dot(x, y))


# reductions
def f_sum(x): return wsum(np.sum(x, axis=0)) + x.sum() + wsum(snp.sum(x, axis=(0, 2), keepdims=True))
def f_mean(x): return wsum(np.mean(x, axis=-1)) + x.mean() + wsum(x.mean(axis=1, keepdims=True))
def f_max(x): return wsum(np.max(x, axis=1)) + x.max() + wsum(np.amax(x, axis=(0, 1), keepdims=True))
def f_min(x): return wsum(np.min(x, axis=0)) + x.min() + wsum(snp.min(x, axis=2, keepdims=True))
def f_prod(x): return wsum(np.prod(x, axis=1)) + x.prod() + wsum(np.prod(x, axis=(0, 2), keepdims=True))
def f_var(x): return wsum(np.var(x, axis=0)) + x.var() + wsum(np.var(x, axis=1, ddof=1, keepdims=True))
def f_std(x): return wsum(np.std(x, axis=1)) + x.std() + wsum(np.std(x, axis=0, ddof=1))
def f_cumsum(x): return wsum(np.cumsum(x, axis=1)) + wsum(x.cumsum()) + wsum(np.cumsum(x, axis=0))
def f_cumprod(x): return wsum(np.cumprod(x, axis=1)) + wsum(x.cumprod()) + wsum(snp.cumprod(x, axis=0))
def f_lax_cumsum(x): return wsum(lax.cumsum(x) + lax.cumsum(x, 1, reverse=True))
def f_lax_cumprod(x): return wsum(lax.cumprod(x, axis=1) + lax.cumprod(x, 0, True))
def f_lax_cummax(x): return wsum(lax.cummax(x, 1) + lax.cummax(x, 0, reverse=True))
def f_lax_cummin(x): return wsum(lax.cummin(x, 0) + lax.cummin(x, 1, reverse=True))
def f_reduce(x):
    return (wsum(lax.reduce_sum(x, (0,))) + wsum(lax.reduce_max(x, (1,)))
            + wsum(lax.reduce_min(x, (0, 1))) + wsum(lax.reduce_prod(x, [1])))


# shapes
def f_reshape(x): return wsum(np.reshape(x, (4, 3)) * x.reshape((2, 6))[0, 0] + x.reshape((12,))[3])
def f_ravel(x): return wsum(np.ravel(x) * x.flatten() + x.ravel())
def f_transpose(x): return wsum(x.T * 2.0) + wsum(np.transpose(x, (1, 2, 0))[0])
def f_swapaxes(x): return wsum(np.swapaxes(x, 0, 2) + x.swapaxes(0, 2))
def f_expand_dims(x): return wsum(np.expand_dims(x, 1) * np.expand_dims(x, (0, 3)))
def f_squeeze(x): return wsum(np.squeeze(x) + x.squeeze(axis=0)[:, 0])
def f_broadcast_to(x): return wsum(np.broadcast_to(x, (2, 3, 4)))
def f_concatenate(x, y): return wsum(np.concatenate([x, y, x], axis=1) + np.concatenate((y, x, y), 1))
def f_concatenate_none(x, y): return wsum(np.concatenate([x, y], axis=None))
def f_stack(x, y): return wsum(np.stack([x, y, x * y]) + np.stack((y, x, y), axis=-1)[..., 0])
def f_flip(x): return wsum(np.flip(x) + np.flip(x, axis=1) + np.fliplr(x) + np.flipud(x))
def f_moveaxis(x): return wsum(np.moveaxis(x, 0, -1))
def f_pad(x): return wsum(np.pad(x, ((1, 2), (0, 3)))) + wsum(np.pad(x, 1, constant_values=0.5))
def f_pad_value(x, c): return wsum(snp.pad(x, ((1, 0), (2, 1)), constant_values=c))
def f_lax_pad(x, c): return wsum(lax.pad(x, c, ((1, 2, 1), (0, -1, 0))))
def f_lax_slice(x): return wsum(lax.slice(x, (0, 1), (3, 4)) + lax.slice(x, (1, 0), (3, 4), (1, 2)).sum())
def f_lax_concatenate(x, y): return wsum(lax.concatenate([x, y, x], 1))
def f_broadcast_in_dim(x): return wsum(lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)))
def f_lax_reshape(x): return wsum(lax.reshape(x, (4, 3)) + lax.reshape(x, (4, 3), (1, 0)))
def f_lax_transpose(x): return wsum(lax.transpose(x, (2, 0, 1)))
def f_lax_squeeze(x): return wsum(lax.squeeze(x, (0,)) + lax.expand_dims(x[0], (0,))[0])
def f_rev(x): return wsum(lax.rev(x, (0, 1)) + lax.rev(x, (1,)))


# indexing and updates
def f_getitem(x): return wsum(x[0] * 2.0) + wsum(x[1:, ::2]) + wsum(x[::-1, 1]) + wsum(x[IDX]) + x[1, 2] + wsum(x[IDX2, -1])
def f_getitem_mixed(x): return wsum(x[:, None, 1:3]) + wsum(x[..., 0]) + wsum(x[IDX, 1:])
def f_at_set(x, v): return wsum(x.at[1].set(v[0]) + x.at[:, 1:3].set(v[:, :2]))
def f_at_set_array(x, v): return wsum(x.at[np.array([0, 2])].set(v[:2]))
def f_at_add(x, v): return wsum(x.at[IDX].add(v[:1]) + x.at[0, 1].add(v[2, 3]))
def f_at_mul(x, v): return wsum(x.at[1:, 0].mul(v[1:, 0]) + x.at[np.array([0, 2])].mul(v[1]))
def f_at_max(x, v): return wsum(x.at[IDX].max(v))
def f_at_min(x, v): return wsum(x.at[1:, 2].min(v[0, :2]))
def f_at_get(x): return wsum(x.at[OUT].get(mode="fill", fill_value=2.0)) + wsum(x.at[OUT].get(mode="clip"))   # noqa: E501
def f_at_modes(x, v): return wsum(x.at[OUT].set(v[0], mode="drop") + x.at[OUT, 1].add(v[1, :4], mode="clip"))   # noqa: E501
def f_take(x): return wsum(np.take(x, IDX) + np.take(x, IDX, axis=1)[0] + x.take(IDX2, axis=0)[0, 0])
def f_take_along_axis(x): return wsum(np.take_along_axis(x, SORTED_BY, axis=1) + np.take_along_axis(x, SORTED_BY[:1], 0))
def f_dynamic_slice(x): return wsum(lax.dynamic_slice(x, (1, 2), (2, 2)))
def f_dynamic_update_slice(x, u): return wsum(lax.dynamic_update_slice(x, u, (1, 1)) * x)
def f_sort(x): return wsum(np.sort(x) + np.sort(x, axis=0) + x.sort(axis=1) + snp.sort(x, descending=True))
def f_sort_flat(x): return wsum(np.sort(x, axis=None))


# containers and user functions (SPECIAL ops)
def f_field(p, x):
    x = x * 1.0
    w, b = p
    return wsum(w * x + b)
def f_dict(p, x): return wsum(p["w"] * x + p["b"])
def f_attribute(p, x): return wsum(p.w * x + p.b)
def f_getattr(p, x):                                # getattr with a name known when it runs
    s = 0.0
    for k in ("w", "b"):
        s = s + wsum(getattr(p, k) * x)
    return s
def f_pack(x, y):
    b = [x, 2.0, snp.sin(y)]
    return wsum(b[0] * b[2] + b[1])
def f_concat_seq(x, y): return wsum(snp.stack([x] + [snp.sin(y)]))
def f_add_grads(x, y): return wsum(add_grads(x * y, snp.sin(y)))
def f_fields_of(x, y):          # a derivative's fields_of, differentiated again (third order)
    pair = (snp.sin(x), x * y)
    a, b = fields_of(pair, {0: None, 1: None})
    return wsum(a * b)
def f_fields_of_batched(x, y):  # a batched derivative's fields_of, differentiated again
    pair = (snp.sin(x), x * y)
    a, b = fields_of_batched(pair, {0: None, 1: None}, 2, True)
    return wsum(a * b)
def f_split_at(x, y):           # a list's cotangent split at an append, differentiated again
    items = [x, snp.sin(y), x * y]
    head, tail = split_at(items, 1)
    return wsum(head[0] * tail[0] + tail[1])
def f_seq_as(x, y):
    t = tuple([x, snp.sin(y)] + [x * y])     # a list made a tuple (seq_as), then read
    return wsum(t[0] * t[1] + t[2])
def f_dict_merge(x, y):
    d = {"a": x} | {"b": y * y}
    return wsum(d["a"] * d["b"])
def helper_poly(a, b): return a * a * b + snp.sin(b)
def f_call(x, y): return wsum(helper_poly(x, y) + helper_poly(y, b=x))
# secant.lax control flow (more in tests/test_grad_control_flow.py)
def f_cond(x, y): return wsum(lax.cond(snp.sum(x) > 0, lambda a, b: a * b, lambda a, b: a - b, x, y))
def f_switch(x): return wsum(lax.switch(1, [snp.sin, lambda a: a * a], x))
def f_fori_loop(x, y): return wsum(lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * y, x))
def f_scan(x, y): return wsum(lax.scan(lambda c, v: (c * v, snp.sin(c)), x, y)[1])
def f_while_loop(x, y):
    return wsum(lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, snp.sin(c[1]) * y),
                               (0, x))[1])
def f_map(x): return wsum(lax.map(lambda v: v * snp.cos(v), x))


N = "normal"
POS = "positive"
UNIT = "unit"       # |x| < 0.8
GT1 = "gt1"         # 1.5 .. 3
AWAY = "away"       # |x| in 0.3 .. 2, random signs


def _draw(rng, shape, kind):
    if callable(kind):
        return np.asarray(kind(rng), dtype=np.float64)
    if kind == N:
        return rng.normal(size=shape)
    if kind == POS:
        return rng.uniform(0.5, 2.0, size=shape)
    if kind == UNIT:
        return rng.uniform(-0.8, 0.8, size=shape)
    if kind == GT1:
        return rng.uniform(1.5, 3.0, size=shape)
    if kind == AWAY:
        return rng.uniform(0.3, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    raise ValueError(kind)


class Case:
    def __init__(self, fn, *args, argnums=None, marks=(), rtol=1e-5):
        self.fn, self.args, self.marks, self.rtol = fn, args, marks, rtol
        self.argnums = tuple(range(len(args))) if argnums is None else argnums

    def param(self):
        return pytest.param(self, id=self.fn.__name__[2:], marks=self.marks)

    def inputs(self, seed=0):
        rng = np.random.default_rng(seed)
        out = []
        for a in self.args:
            if callable(a):
                out.append(a(rng))
            else:
                shape, kind = a
                out.append(_draw(rng, shape, kind))
        return out


S = (3, 4)
CASES = [
    Case(f_sin, (S, N)), Case(f_snp_sin, (S, N)), Case(f_cos, (S, N)), Case(f_tan, (S, UNIT)),
    Case(f_arcsin, (S, UNIT)), Case(f_arccos, (S, UNIT)), Case(f_arctan, (S, N)),
    Case(f_sinh, (S, N)), Case(f_cosh, (S, N)), Case(f_tanh, (S, N)), Case(f_arcsinh, (S, N)),
    Case(f_arccosh, (S, GT1)), Case(f_arctanh, (S, UNIT)), Case(f_exp, (S, N)),
    Case(f_exp2, (S, N)), Case(f_expm1, (S, N)), Case(f_log, (S, POS)), Case(f_log2, (S, POS)),
    Case(f_log10, (S, POS)), Case(f_log1p, (S, POS)), Case(f_sqrt, (S, POS)),
    Case(f_cbrt, (S, AWAY)), Case(f_square, (S, N)), Case(f_reciprocal, (S, AWAY)),
    Case(f_absolute, (S, AWAY)), Case(f_complex_parts, (S, N)), Case(f_logistic, (S, N)), Case(f_erf, (S, N)),
    Case(f_rsqrt, (S, POS)), Case(f_negative, (S, N)), Case(f_positive, (S, N)),
    Case(f_identity, (S, N)), Case(f_astype, (S, N)), Case(f_optimization_barrier, (S, N)),
    Case(f_reduce_precision, (S, N)),
    Case(f_grad_of_fields, (S, N)), Case(f_grad_of_fields_batched, (S, N)),
    Case(f_einsum, (S, N)), Case(f_unmerge, (S, N)), Case(f_split, (S, N)),
    Case(f_erf_inv, (S, UNIT)),
    Case(f_lgamma, (S, POS)), Case(f_lgamma, ((5,), GT1)), Case(f_digamma, (S, POS)),
    Case(f_digamma, (S, lambda r: r.uniform(-2.9, -2.1, size=S))),
    Case(f_digamma, ((8,), lambda r: r.uniform(3.0, 30.0, size=8))),
    Case(f_integer_pow, (S, N)), Case(f_convert_element_type, (S, N)),
    Case(f_sign_is_constant, (S, AWAY)), Case(f_math_sin, ((), N)),
    # two operands, broadcasting both ways
    Case(f_add, (S, N), ((4,), N)), Case(f_subtract, ((3, 1), N), ((1, 4), N)),
    Case(f_multiply, (S, N), ((4,), N)), Case(f_multiply, ((), N), (S, N)),
    Case(f_true_divide, (S, N), ((3, 1), AWAY)), Case(f_power, (S, POS), ((4,), N)),
    Case(f_power_literal, (S, POS)),
    Case(f_maximum, (S, N), (S, N)), Case(f_minimum, (S, N), ((4,), N)),
    Case(f_arctan2, (S, N), (S, AWAY)), Case(f_hypot, (S, AWAY), ((4,), AWAY)),
    Case(f_logaddexp, (S, N), ((3, 1), N)),
    Case(f_remainder, (S, lambda r: r.uniform(0.1, 0.9, size=S) + r.integers(-3, 3, size=S)),
         ((4,), lambda r: np.ones(4))),
    Case(f_rem, (S, lambda r: r.uniform(0.1, 0.9, size=S) + r.integers(-3, 3, size=S)),
         (S, lambda r: r.uniform(1.2, 1.4, size=S) * r.choice([-1.0, 1.0], size=S))),
    Case(f_lax_div, (S, N), (S, AWAY)),
    Case(f_where, (S, AWAY), ((4,), N)), Case(f_select, (S, AWAY), (S, N)),
    Case(f_clip, (S, lambda r: r.uniform(-1, 1, size=S))),
    Case(f_clip_bounds, (S, N), ((4,), lambda r: np.array([-0.5, -0.2, 0.1, 0.3])),
         ((), lambda r: np.array(0.45))),
    Case(f_clamp, ((), lambda r: np.array(-0.35)), (S, N), ((), lambda r: np.array(0.55))),
    Case(f_add_n, (S, N), ((4,), N)),
    # products
    Case(f_matmul, (S, N), ((4, 2), N)), Case(f_matmul, ((2, 3, 4), N), ((4, 2), N)),
    Case(f_matmul_vec, (S, N), ((4,), N)), Case(f_dot, (S, N), ((4, 2), N)),
    Case(f_outer, ((3,), N), ((2, 2), N)), Case(f_tensordot, ((4, 3, 2), N), ((2, 4, 3), N)),
    Case(f_dot_general, ((2, 3, 4), N), ((2, 4, 5), N)), Case(f_lax_dot, (S, N), ((4,), N)),
    # reductions
    Case(f_sum, ((2, 3, 4), N)), Case(f_mean, ((2, 3, 4), N)), Case(f_max, ((2, 3, 4), N)),
    Case(f_min, ((2, 3, 4), N)), Case(f_prod, ((2, 3, 2), AWAY)),
    Case(f_prod, ((2, 3, 2), lambda r: np.where(r.random((2, 3, 2)) < 0.3, 0.0,
                                                 r.normal(size=(2, 3, 2))))),
    Case(f_var, (S, N)), Case(f_std, (S, N)), Case(f_cumsum, (S, N)),
    Case(f_cumprod, (S, AWAY)),
    Case(f_cumprod, (S, lambda r: np.array([[1.5, 0.0, 2.0, -1.2], [0.0, 0.7, 0.0, 1.1],
                                             [0.9, -1.3, 1.4, 0.0]]))),
    Case(f_lax_cumsum, (S, N)), Case(f_lax_cumprod, (S, AWAY)), Case(f_lax_cummax, (S, N)),
    Case(f_lax_cummin, (S, N)), Case(f_reduce, (S, AWAY)),
    # shapes
    Case(f_reshape, (S, N)), Case(f_ravel, (S, N)), Case(f_transpose, ((2, 3, 4), N)),
    Case(f_swapaxes, ((2, 3, 4), N)), Case(f_expand_dims, (S, N)),
    Case(f_squeeze, ((1, 3, 1), N)), Case(f_broadcast_to, ((3, 1), N)),
    Case(f_concatenate, ((3, 2), N), ((3, 2), N)), Case(f_concatenate_none, (S, N), ((2,), N)),
    Case(f_stack, (S, N), (S, N)), Case(f_flip, ((3, 3), N)), Case(f_moveaxis, ((2, 3, 4), N)),
    Case(f_pad, (S, N)), Case(f_pad_value, (S, N), ((), N)), Case(f_lax_pad, (S, N), ((), N)),
    Case(f_lax_slice, (S, N)), Case(f_lax_concatenate, ((3, 2), N), ((3, 1), N)),
    Case(f_broadcast_in_dim, ((3, 1), N)), Case(f_lax_reshape, (S, N)),
    Case(f_lax_transpose, ((2, 3, 4), N)), Case(f_lax_squeeze, ((1, 3, 4), N)),
    Case(f_rev, (S, N)),
    # indexing
    Case(f_getitem, (S, N)), Case(f_getitem_mixed, (S, N)), Case(f_at_set, (S, N), (S, N)),
    Case(f_at_set_array, (S, N), ((2, 4), N)), Case(f_at_add, (S, N), (S, N)),
    Case(f_at_mul, (S, N), (S, N)),
    Case(f_at_get, (S, N)), Case(f_at_modes, (S, N), (S, N)),
    Case(f_at_max, (S, N), ((4, 4), N)),
    Case(f_at_min, (S, N), (S, N)),
    Case(f_take, (S, N)), Case(f_take_along_axis, ((3, 3), N)), Case(f_dynamic_slice, (S, N)),
    Case(f_dynamic_update_slice, (S, N), ((2, 2), N)), Case(f_sort, ((3, 3), N)),
    Case(f_sort_flat, (S, N)),
    # containers and user functions
    Case(f_field, (lambda r: (r.normal(size=S), r.normal(size=(4,)))), (S, N)),
    Case(f_dict, (lambda r: {"w": r.normal(size=S), "b": r.normal(size=(4,))}), (S, N)),
    Case(f_attribute, (lambda r: Pair(r.normal(size=S), r.normal(size=(4,)))), (S, N)),
    Case(f_getattr, (lambda r: Pair(r.normal(size=S), r.normal(size=S))), (S, N)),
    Case(f_call, (S, N), ((4,), N)),
    Case(f_pack, (S, N), (S, N)), Case(f_concat_seq, (S, N), (S, N)),
    Case(f_dict_merge, (S, N), (S, N)), Case(f_add_grads, (S, N), (S, N)),
    Case(f_seq_as, (S, N), (S, N)), Case(f_fields_of, (S, N), (S, N)),
    Case(f_fields_of_batched, (S, N), (S, N)),
    Case(f_split_at, (S, N), (S, N)),
    Case(f_cond, (S, N), (S, N)), Case(f_switch, (S, N)), Case(f_fori_loop, (S, N), (S, N)),
    Case(f_while_loop, (S, N), (S, N)),
    Case(f_scan, ((4,), N), (S, N)), Case(f_map, (S, N)),
]


# windowed operations (issue 17): a strided, padded, grouped convolution in both operands
def f_conv_general_dilated(x, w):
    return wsum(lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (0, 1)), rhs_dilation=(1, 2),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         feature_group_count=2))


CASES.append(Case(f_conv_general_dilated, ((1, 4, 4, 2), N), ((2, 2, 1, 4), N)))
# complex numbers and the Fourier transform (issue 17: complex, numpy.fft); the RFFT / IRFFT /
# FFT / IFFT kinds one after another (tests/test_fft.py checks each alone)
def f_lax_fft(x):
    z = lax.fft(x, "RFFT", (4,))
    w = lax.fft(lax.fft(z * z, "IFFT", (3, 3)), "FFT", (3,))
    return wsum(lax.fft(w, "IRFFT", (4,)))
def f_lax_complex(x, y): return wsum(snp.real(lax.complex(x, y) ** 2) + snp.imag(lax.complex(y, x)))
CASES += [Case(f_lax_fft, (S, N)), Case(f_lax_complex, (S, N), ((4,), N))]
# --- linear algebra (secant.lax.linalg's ops) -------------------------------------------------
def _spd_3(rng):
    a = rng.normal(size=(3, 3))
    return a @ a.T + 3 * np.eye(3)


def _well_3(rng):
    return rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)


def f_cholesky(a): return wsum(lax.linalg.cholesky(a) + lax.linalg.cholesky(a, symmetrize_input=False))
def f_triangular_solve(a, b): return wsum(lax.linalg.triangular_solve(a, b, left_side=True, lower=True) + lax.linalg.triangular_solve(a, b, left_side=True, transpose_a=True, unit_diagonal=True))
def f_lu_factors(a): return wsum(lax.linalg.lu_factors(a))


CASES += [Case(f_cholesky, _spd_3), Case(f_triangular_solve, _well_3, ((3, 2), N)),
          Case(f_lu_factors, _well_3)]
_IDS = [c.fn.__name__ for c in CASES]


def _as_secant(x):
    return secant.tree_util.tree_map(lambda leaf: snp.asarray(leaf), x)


def _leaves_and_rebuild(x):
    leaves, treedef = secant.tree_util.tree_flatten(x)
    return [np.asarray(leaf, dtype=np.float64) for leaf in leaves], treedef


def _value(fn, args):
    return float(np.asarray(fn(*[_as_secant(a) for a in args])))


def numeric_grad(fn, args, i, eps=1e-6):
    """Central differences of fn with respect to args[i] (a pytree of float64 arrays)."""
    leaves, treedef = _leaves_and_rebuild(args[i])
    out = []
    for k, leaf in enumerate(leaves):
        g = np.zeros_like(leaf)
        for j in np.ndindex(leaf.shape):
            vals = []
            for sgn in (1, -1):
                bumped = [lf.copy() for lf in leaves]
                bumped[k][j] += sgn * eps
                new = list(args)
                new[i] = secant.tree_util.tree_unflatten(treedef, bumped)
                vals.append(_value(fn, new))
            g[j] = (vals[0] - vals[1]) / (2 * eps)
        out.append(g)
    return out


def _check_against(case, args, got, what):
    if len(case.argnums) == 1:
        got = (got,)
    for i, g in zip(case.argnums, got):
        expected = numeric_grad(case.fn, args, i)
        got_leaves = [np.asarray(leaf, dtype=np.float64)
                      for leaf in secant.tree_util.tree_leaves(g)]
        assert len(got_leaves) == len(expected)
        for a, e in zip(got_leaves, expected):
            np.testing.assert_allclose(a, e, rtol=case.rtol, atol=1e-6,
                                       err_msg=f"{what}: d{case.fn.__name__}/d arg {i}")


def _argnums(case):
    return case.argnums[0] if len(case.argnums) == 1 else case.argnums


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_grad_matches_finite_differences(case, x64):
    args = case.inputs()
    g = secant.grad(case.fn, argnums=_argnums(case))
    _check_against(case, args, g(*[_as_secant(a) for a in args]), "eager grad")
    gj = secant.jit(secant.grad(case.fn, argnums=_argnums(case)))
    _check_against(case, args, gj(*[_as_secant(a) for a in args]), "jit(grad)")


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_vjp_dot_product(case, x64):
    """<u, J v> from secant.vjp equals the finite-difference directional derivative."""
    args = case.inputs(seed=1)
    rng = np.random.default_rng(2)
    sargs = [_as_secant(a) for a in args]
    out, vjp_fun = secant.vjp(case.fn, *sargs)
    u = 0.7
    cts = vjp_fun(snp.asarray(u))
    lhs = 0.0
    directions = []
    for i, a in enumerate(args):
        leaves, treedef = _leaves_and_rebuild(a)
        vs = [rng.normal(size=leaf.shape) for leaf in leaves]
        directions.append((leaves, treedef, vs))
        for ct, v in zip(secant.tree_util.tree_leaves(cts[i]), vs):
            lhs += float(np.sum(np.asarray(ct, dtype=np.float64) * v))
    eps = 1e-6

    def moved(sign):
        return [secant.tree_util.tree_unflatten(treedef, [lf + sign * eps * v
                                                          for lf, v in zip(leaves, vs)])
                for leaves, treedef, vs in directions]
    jv = (_value(case.fn, moved(1)) - _value(case.fn, moved(-1))) / (2 * eps)
    np.testing.assert_allclose(lhs, u * jv, rtol=1e-5, atol=1e-6)


def _ops_used(fn, argnums):
    found = set()

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ir.Op):
                found.add(s.op)
                if s.op == "call" and not getattr(s.callee, "__secant_dispatch__", None):
                    params = list(inspect.signature(s.callee).parameters)
                    visit(normalise(s.callee, tuple(range(len(params)))).body)
            elif isinstance(s, ir.If):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                visit(s.body)
    visit(normalise(fn, argnums).body)
    return found


# ops only a derivative differentiated again contains (its add_at helper calls): checked against
# closed forms to the fourth order in test_appends_higher_order.py and test_sweep15_helpers.py
DERIVATIVE_HELPER_OPS = {"add_at", "add_at_grad"}
# getattr(tree, k) with k known only when it runs is the getattr op in generated code only; the
# user's (f_getattr) is read through attribute_reader (transformer/properties.py), by k's class
GENERATED_ONLY_OPS = {"getattr"}
# collectives need a mapped axis bound (vmap or pmap with axis_name): checked against central
# differences of the examples' summed losses in test_carry15l_collectives.py
COLLECTIVE_OPS = {"psum", "pmean", "all_gather", "psum_scatter"}


def test_finite_difference_cases_use_every_rule():
    used = set()
    for case in CASES:
        used |= _ops_used(case.fn, case.argnums)
    missing = (set(VJP) | set(SEQUENCE_VJP) | SPECIAL) - used - set(TREE_OPS)  # their own file
    # numpy.linalg's spectral ops: tests/library_cases/linalg_spectral.py, test_linalg_spectral.py
    missing -= {"linalg_" + n for n in LINALG_SPECTRAL}
    missing -= DERIVATIVE_HELPER_OPS | GENERATED_ONLY_OPS | COLLECTIVE_OPS
    assert not missing, f"ops with a rule but no finite-difference test: {sorted(missing)}"


# --- known front-end issues (transformer/normalize.py, the lead's): minimal repros ----------------
def r_unpack_first(p, x):
    w, b = p
    return snp.sum(w * x + b)


def r_tuple_item(p, x):
    return snp.sum(p[0] * x + p[1])


def test_unpacking_a_parameter_first(x64):
    w, b = snp.asarray(np.ones((3, 4))), snp.asarray(np.ones(4))
    gw, gb = secant.grad(r_unpack_first)((w, b), snp.asarray(np.full((3, 4), 2.0)))
    np.testing.assert_allclose(np.asarray(gw), 2.0)


def test_indexing_a_tuple_parameter(x64):
    w, b = snp.asarray(np.ones((3, 4))), snp.asarray(np.ones(4))
    gw, gb = secant.grad(r_tuple_item)((w, b), snp.asarray(np.full((3, 4), 2.0)))
    np.testing.assert_allclose(np.asarray(gw), 2.0)
    np.testing.assert_allclose(np.asarray(gb), 3.0)


# --- the same derivative whatever the callee's spelling -------------------------------------------
def g_np(x, y): return np.sum(np.sin(x) * np.exp(y) + np.tanh(x * y))
def g_snp(x, y): return snp.sum(snp.sin(x) * snp.exp(y) + snp.tanh(x * y))
def g_mixed(x, y): return (np.sin(x) * snp.exp(y) + lax.tanh(x * y)).sum()


def test_numpy_and_secant_numpy_callees_give_the_same_derivative(x64):
    rng = np.random.default_rng(3)
    x, y = snp.asarray(rng.normal(size=S)), snp.asarray(rng.normal(size=S))
    results = [secant.grad(f, argnums=(0, 1))(x, y) for f in (g_np, g_snp, g_mixed)]
    for r in results[1:]:
        for a, b in zip(results[0], r):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)

    def code(f):        # the generated code without its def line and `# Grad of:` comments
        lines = secant.source(secant.grad(f)).splitlines()[1:]
        return [ln for ln in lines if not ln.strip().startswith("#")]
    assert code(g_np) == code(g_snp)


# --- second order: the rule helpers are themselves transformable -----------------------------------
def h_digamma(x): return lax.digamma(x) * x
def h_lgamma(x): return lax.lgamma(x * x)
def h_integer_pow(x): return lax.integer_pow(x, 3) + lax.integer_pow(x, 0)
def h_cumprod(x): return snp.sum(snp.cumprod(x * snp.array([1.0, 2.0, 0.5])))
def h_prod(x): return snp.sum(snp.prod(snp.outer(x, snp.array([1.0, 2.0, 0.5])), axis=1))
def h_dot_general(x):
    a = snp.outer(x, snp.array([1.0, 2.0]))
    return snp.sum(lax.dot_general(a, a * x, (((1,), (1,)), ((), ()))))
def h_lax_reshape(x): return snp.sum(lax.reshape(snp.outer(x * snp.array([1.0, 2.0]), snp.array([1.0, 3.0, 2.0])), (3, 2), (1, 0)) ** 3)
def h_take(x): return snp.sum(snp.take(x * snp.array([1.0, 2.0, 3.0]), IDX[:3]) ** 2)
def h_cummax(x): return snp.sum(lax.cummax(x * snp.array([1.0, -2.0, 3.0])) ** 2)
def h_pad(x): return snp.sum(lax.pad(x * snp.array([1.0, 2.0]), x, ((1, 1, 1),)) ** 2)


@pytest.mark.parametrize("fn", [h_digamma, h_integer_pow, h_cumprod, h_prod,
                                h_dot_general, h_lax_reshape, h_take, h_cummax, h_pad],
                         ids=lambda f: f.__name__[2:])
def test_second_derivative_matches_finite_differences(fn, x64):
    x, eps = 1.3, 1e-5
    g = secant.grad(fn)
    expected = (float(g(snp.asarray(x + eps))) - float(g(snp.asarray(x - eps)))) / (2 * eps)
    np.testing.assert_allclose(float(secant.grad(secant.grad(fn))(snp.asarray(x))), expected,
                               rtol=1e-6)


def test_second_derivative_of_lgamma_reaches_trigamma(x64):
    """lgamma's rule calls lax.digamma, whose rule calls trigamma: psi'(x) = sum 1/(x+k)^2."""
    x = 1.3
    expected = 2 * lax.digamma(snp.asarray(x * x)) + 4 * x * x * sum(
        1 / (x * x + k) ** 2 for k in range(200000))
    np.testing.assert_allclose(float(secant.grad(secant.grad(h_lgamma))(snp.asarray(x))),
                               float(expected), rtol=1e-5)


# --- 3. ties ----------------------------------------------------------------------------------------
def t_max(x): return np.max(x)
def t_max_axis(x): return np.sum(np.max(x, axis=1) * np.array([1.0, 2.0]))
def t_maximum(x, y): return np.sum(np.maximum(x, y))
def t_minimum(x, y): return np.sum(np.minimum(x, y))
def t_clip(x): return np.sum(np.clip(x, 0.0, 1.0))
def t_builtin_max(x, y): return max(x, y)


def test_max_reduction_splits_ties_equally(x64):
    x = snp.asarray([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_allclose(np.asarray(secant.grad(t_max)(x)), [0, 0.5, 0.5, 0])
    x2 = snp.asarray([[1.0, 5.0, 5.0], [4.0, 4.0, 4.0]])
    np.testing.assert_allclose(np.asarray(secant.grad(t_max_axis)(x2)),
                               [[0, 0.5, 0.5], [2 / 3, 2 / 3, 2 / 3]])
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(t_max_axis))(x2)),
                               [[0, 0.5, 0.5], [2 / 3, 2 / 3, 2 / 3]])


def test_maximum_minimum_split_ties_in_half(x64):
    x, y = snp.asarray([1.0, 2.0, 3.0]), snp.asarray([1.0, 5.0, 0.0])
    gx, gy = secant.grad(t_maximum, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(gx), [0.5, 0, 1])
    np.testing.assert_allclose(np.asarray(gy), [0.5, 1, 0])
    gx, gy = secant.grad(t_minimum, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(gx), [0.5, 1, 0])
    np.testing.assert_allclose(np.asarray(gy), [0.5, 0, 1])
    one = snp.asarray(2.0)
    # Python's max(x, y) keeps the first of equal values, and so does jax.grad of it (1.0 and
    # 0.0, checked in /tmp/jaxenv): only snp.maximum splits the tie
    assert secant.grad(t_builtin_max)(one, one) == 1.0
    assert secant.grad(t_builtin_max, argnums=1)(one, one) == 0.0


def test_clip_ties_as_jax(x64):
    """jnp.clip is minimum(maximum(x, lo), hi): at a bound x gets half the cotangent."""
    x = snp.asarray([-1.0, 0.0, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(secant.grad(t_clip)(x)), [0, 0.5, 1, 0.5, 0])


def test_sort_permutes_the_cotangent_back(x64):
    x = snp.asarray([3.0, 1.0, 2.0])
    g = secant.grad(f_sort_flat)(x)
    np.testing.assert_allclose(np.asarray(g), weights((3,))[[2, 0, 1]])
