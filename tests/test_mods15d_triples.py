"""Issue 15 (mods15d): "at any order and in any composition" with modules (user classes holding
arrays and functions: flax/equinox-like layers, mixins, properties).

- jacfwd(vmap(grad(loss))) of a module holding its activation (`self.act = snp.tanh`) when a
  registered class computes that name (m.act read through attribute_reader): the reader's
  derivative, batched twice, called grad_of_fields_batched's batched form with the fields
  `{'act': act_bar}` (a function: no arrays) as its only batched argument, which then sized its
  batch by them: "the batch size of a value with no arrays in it ... is unknown". A batched
  function whose batched parameters may hold no array now takes its caller's batch size
  (batching/vectorize.py build: `batch_size=None`, batch_size_of(..., default=batch_size)).
- vmap(jacfwd(grad(loss))) of a Dense module passed in (a registered dataclass with W, b): a
  Jacobian read by another transform (its source form, ad/helpers.py basis_like, from_columns,
  from_rows) took arrays only: "dtype object is not supported" (jacfwd), "'DenseDC' object has
  no attribute 'reshape'" (jacrev). Its argument and output may now be any pytree.
- the sweep: module-holding classes of tests/test_order15_computed_names.py,
  tests/test_ctx15_function_fields.py and tests/test_others6_classes.py through triples of
  {grad, jacfwd, jacrev, vmap, jit} (grad of a non-scalar: of its sum, as a user writes a
  third-order grad), each level checked against float64 central differences of the level
  below it (vmap against a Python loop, jit against eager). The default profile runs
  representative triples; MODS15D_ALL_TRIPLES=1 or HYPOTHESIS_PROFILE=thorough runs all 125 for
  every module."""
import dataclasses
import itertools
import os

import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, hessian, jacfwd, jacrev, jit, tree_util, vmap

from others15_check import fd_grad
from test_ctx15_function_fields import Dense, Eqx, Sequential, lambda_child, swish
from test_order15_computed_names import Sequential15o
from test_others6_classes import (Block, Diamond, Frozen, Linear, Positive, PositiveLinear,
                                  PytreeResidualReluLinear, ResidualReluLinear, Shifted)

XC = np.array([0.3, -0.5, 0.7])
W = np.array([0.4, 1.1, -0.6])
X2 = np.array([[0.2, -0.4, 0.9], [0.5, 0.1, -0.3]])
EPS = 1e-6


# --- 1. jacfwd(vmap(grad)) on the attribute_reader path -------------------------------------------
@dataclasses.dataclass
class Dense15d:
    """flax-like: its activation a meta field, whose name a registered class computes."""
    w: object
    act15d: object

    def __call__(self, x):
        return self.act15d(self.w * x)


tree_util.register_dataclass(Dense15d, data_fields=["w"], meta_fields=["act15d"])


@tree_util.register_pytree_node_class
class Computes15d:
    """A class constant `act15d`: every `m.act15d` of a differentiated m is read through
    attribute_reader (transformer/normalize.py)."""
    act15d = "tanh"

    def tree_flatten(self):
        return (), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls()


def module_loss(m):
    return snp.sum(m(XC) ** 2)


def direct_loss(m):
    return snp.sum(m.act15d(m.w * XC) ** 2)


def sequential15d(w):
    return snp.sum(Sequential15o([Dense15d(w, snp.tanh), Dense15d(w, swish)])(XC))


def _fd_jacobian(f, w, eps=EPS):
    """Central differences of f (any array output) in every element of w: out.shape + w.shape."""
    w = np.asarray(w, dtype=np.float64)
    cols = []
    for idx in np.ndindex(w.shape):
        e = np.zeros_like(w)
        e[idx] = eps
        cols.append((np.asarray(f(w + e), dtype=np.float64)
                     - np.asarray(f(w - e), dtype=np.float64)) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + w.shape)


def _w(h):
    while hasattr(h, "w"):
        h = h.w
    return np.asarray(h)


GAP1 = {"tanh": (module_loss, lambda w: Dense15d(w, snp.tanh)),
        "swish": (module_loss, lambda w: Dense15d(w, swish)),
        "direct": (direct_loss, lambda w: Dense15d(w, snp.tanh)),
        "sequential": (sequential15d, lambda w: w)}


@pytest.mark.parametrize("name", list(GAP1))
def test_jacfwd_of_vmap_of_grad_of_a_module_holding_its_activation(x64, name):
    """Per example the Hessian of the loss (a block diagonal over the batch), against central
    differences of float64 central-difference gradients."""
    f, make = GAP1[name]
    ws = np.stack([W, 2 * W, -W])
    got = _w(_w(jacfwd(vmap(grad(f)))(make(ws))))
    want = np.zeros((3, 3, 3, 3))
    for i, w in enumerate(ws):
        want[i, :, i, :] = _fd_jacobian(lambda v: _w(fd_grad(lambda u: f(make(u)), (v,))), w,
                                        eps=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --- 2. vmap(jacfwd(grad)) of a Dense layer ------------------------------------------------------
@dataclasses.dataclass
class DenseLayer:
    """A registered dataclass, as a user writes a layer for JAX."""
    W: object
    b: object

    def __call__(self, x):
        return snp.tanh(x @ self.W + self.b)


tree_util.register_dataclass(DenseLayer, data_fields=["W", "b"], meta_fields=[])


class PlainDense:
    """A plain class: built inside the loss from the arrays differentiated."""

    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return snp.tanh(x @ self.W + self.b)


def layer_loss(layer, x):
    return snp.sum(layer(x) ** 2)


def plain_loss(W, b, x):
    return snp.sum(PlainDense(W, b)(x) ** 2)


_rng = np.random.default_rng(15)
W0, B0 = _rng.normal(size=(3, 2)), _rng.normal(size=2)
XS = _rng.normal(size=(4, 3))


def _flat(tree):
    return np.concatenate([np.ravel(np.asarray(v)) for v in tree_util.tree_leaves(tree)])


def _per_example_hessians(loss_of_flat, x_rows):
    """The Hessian in the flattened parameters (W then b) of each example's loss."""
    p = np.concatenate([W0.ravel(), B0])
    return [_fd_jacobian(lambda q: _fd_jacobian(lambda r: loss_of_flat(r, x), q), p, eps=1e-4)
            for x in x_rows]


def _flat_loss(q, x):
    return float(layer_loss(DenseLayer(snp.asarray(q[:6].reshape(3, 2)), snp.asarray(q[6:])),
                            snp.asarray(x)))


def _hessian_matrix(outer_by_inner, example, out_shapes, in_shapes):
    """(8, 8) from blocks[i][j] of shape (batch, *out_shapes[i], *in_shapes[j])."""
    return np.block([[np.asarray(outer_by_inner[i][j])[example].reshape(
        int(np.prod(out_shapes[i])), int(np.prod(in_shapes[j])))
        for j in range(len(in_shapes))] for i in range(len(out_shapes))])


SHAPES = [(3, 2), (2,)]


def _blocks_of_layers(h):
    """h: a DenseLayer (outer: the gradient's W, b) of DenseLayers (inner: the parameters')."""
    return [[h.W.W, h.W.b], [h.b.W, h.b.b]]


def _blocks_of_dicts(h):
    return [[h["W"]["W"], h["W"]["b"]], [h["b"]["W"], h["b"]["b"]]]


def dict_loss(p, x):
    return plain_loss(p["W"], p["b"], x)


def _blocks_of_tuples(h):
    return [[h[0][0], h[0][1]], [h[1][0], h[1][1]]]


DENSE_TRANSFORMS = {
    "vmap(jacfwd(grad))": lambda: _blocks_of_layers(
        vmap(jacfwd(grad(layer_loss)), in_axes=(None, 0))(DenseLayer(W0, B0), XS)),
    "vmap(jacrev(grad))": lambda: _blocks_of_layers(
        vmap(jacrev(grad(layer_loss)), in_axes=(None, 0))(DenseLayer(W0, B0), XS)),
    "vmap(hessian)": lambda: _blocks_of_layers(
        vmap(hessian(layer_loss), in_axes=(None, 0))(DenseLayer(W0, B0), XS)),
    "jit(vmap(jacfwd(grad)))": lambda: _blocks_of_layers(
        jit(vmap(jacfwd(grad(layer_loss)), in_axes=(None, 0)))(DenseLayer(W0, B0), XS)),
    "vmap(jacfwd(grad)) in a dict": lambda: _blocks_of_dicts(
        vmap(jacfwd(grad(dict_loss)), in_axes=(None, 0))({"W": W0, "b": B0}, XS)),
    "plain class vmap(jacfwd(grad, argnums=(0, 1)))": lambda: _blocks_of_tuples(
        vmap(jacfwd(grad(plain_loss, argnums=(0, 1)), argnums=(0, 1)),
             in_axes=(None, None, 0))(W0, B0, XS)),
    "plain class vmap(hessian(argnums=(0, 1)))": lambda: _blocks_of_tuples(
        vmap(hessian(plain_loss, argnums=(0, 1)), in_axes=(None, None, 0))(W0, B0, XS)),
}


@pytest.mark.parametrize("transform", list(DENSE_TRANSFORMS))
def test_per_example_hessians_of_a_dense_layer(x64, transform):
    """A registered dataclass layer passed in, or a plain class built from W, b: each
    example's Hessian in (W, b) against central differences of central differences."""
    blocks = DENSE_TRANSFORMS[transform]()
    want = _per_example_hessians(_flat_loss, XS)
    for k in range(len(XS)):
        np.testing.assert_allclose(_hessian_matrix(blocks, k, SHAPES, SHAPES), want[k],
                                   rtol=1e-5, atol=1e-5, err_msg=f"example {k}")


def test_jacobians_of_module_valued_functions_read_by_another_transform(x64):
    """jacfwd / jacrev of a function of a module (pytree in, array out) under vmap and grad:
    a Jacobian's source form reads the module's leaves (it raised AttributeError: 'DenseLayer'
    object has no attribute 'reshape')."""
    def out(layer, x):
        return layer(x)

    for jac in (jacfwd, jacrev):
        got = vmap(jac(out), in_axes=(None, 0))(DenseLayer(W0, B0), XS)
        for k, x in enumerate(XS):
            want_w = _fd_jacobian(lambda w: out(DenseLayer(snp.asarray(w), B0), x), W0)
            want_b = _fd_jacobian(lambda b: out(DenseLayer(W0, snp.asarray(b)), x), B0)
            np.testing.assert_allclose(np.asarray(got.W)[k], want_w, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(np.asarray(got.b)[k], want_b, rtol=1e-6, atol=1e-8)

    def total(layer, x):
        return snp.sum(vmap(jacrev(grad(layer_loss)), in_axes=(None, 0))(layer, x).W.b)

    g = grad(total)(DenseLayer(W0, B0), XS[:2])
    want = fd_grad(lambda l: total(l, XS[:2]), (DenseLayer(W0, B0),))
    np.testing.assert_allclose(g.W, want.W, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.b, want.b, rtol=1e-5, atol=1e-6)


# --- 3. the sweep: module-holding classes through triples of transforms -----------------------------
XR = np.array([[0.3, -0.8], [0.6, 0.4]])           # (ReLU inputs away from its kink)
XD = np.array([[0.2, -0.4, 0.9], [0.5, 0.1, -0.3]])


def o15_module(w):
    return module_loss(Dense15d(w, snp.tanh))         # m.act15d read by attribute_reader


def o15_sequential(w):
    return sequential15d(w)


def ctx_child(w):
    return snp.sum(Eqx(w, snp.tanh)(XC) ** 2)


def ctx_dense_swish(w):
    return snp.sum(Dense(w, swish)(XC) ** 2)


def ctx_sequential(w):
    return snp.sum(Sequential([Eqx(w, snp.tanh), Dense(w, swish)])(XC))


def ctx_lambda_child(w):
    return lambda_child(w)


def o6_mixins(w):
    layer = ResidualReluLinear(snp.reshape(w, (2, 2)), np.array([0.1, 0.2]))
    return snp.sum(snp.tanh(layer(layer(XR))) ** 2)


def o6_pytree_mixins(w):
    layer = PytreeResidualReluLinear(snp.reshape(w, (2, 2)), np.array([0.1, 0.2]))
    return snp.sum(snp.tanh(layer(XR)) ** 2)


def o6_diamond(w):
    return Diamond(w)(XD)


def o6_super_init(w):
    return snp.sum(Shifted(w, 0.3, 0.7, 0.2)(XD) ** 2)


def o6_property(w):
    return snp.mean((PositiveLinear(w, 0.1)(XD) - 0.5) ** 2)


def o6_block(w):
    block = Block(Linear(snp.stack([w, 0.5 * w], axis=1), 0.1), scale=2.0,
                  second=Positive(w[:2], 0.3))
    return snp.sum(block(XD) ** 2) + snp.sum(Frozen(Linear(snp.stack([w, -w], axis=1), 0.2))(XD))


SWEEP_CASES = {f.__name__: (f, w) for f, w in [
    (o15_module, W), (o15_sequential, W), (ctx_child, W), (ctx_dense_swish, W),
    (ctx_sequential, W), (ctx_lambda_child, W), (o6_mixins, np.array([0.4, -0.3, 0.2, 0.9])),
    (o6_pytree_mixins, np.array([0.4, -0.3, 0.2, 0.9])), (o6_diamond, W), (o6_super_init, W),
    (o6_property, W), (o6_block, W)]}


def _summed(g):
    def summed(w):
        return snp.sum(g(w))
    return summed


# grad of a non-scalar: of its sum (a third-order grad as a user writes it)
TRANSFORMS = {"grad": lambda g: grad(_summed(g)), "jacfwd": jacfwd, "jacrev": jacrev,
              "vmap": vmap, "jit": jit}


def _reference(name, g, x):
    """What transform `name` of g gives at x, computed from g's values alone."""
    if name == "grad":
        return _fd_jacobian(lambda v: np.sum(np.asarray(g(v))), x)
    if name in ("jacfwd", "jacrev"):
        return _fd_jacobian(g, x)
    if name == "vmap":
        return np.stack([np.asarray(g(v)) for v in x])
    return np.asarray(g(x))         # jit: eager


def _batched(w, n):
    for _ in range(n):
        w = np.stack([w, 0.7 * w + 0.05])
    return w


# representative triples: each transform at each position and the gaps' compositions, one
# per module (and the attribute_reader path's grad(grad(jacrev)) and jacrev(vmap(grad)), whose
# run-time dispatchers pass their caller's batch size on: the batched form of a derivative
# dispatcher, and the batched form of any call of a function known only at run time, which
# jacrev's vmap batches in a function's cotangent alone); every triple of every module with
# MODS15D_ALL_TRIPLES=1 or under HYPOTHESIS_PROFILE=thorough
REPRESENTATIVE = [("jacfwd", "vmap", "grad"), ("vmap", "jacfwd", "grad"),
                  ("jacrev", "jacfwd", "grad"), ("grad", "grad", "grad"),
                  ("jit", "vmap", "jacrev"), ("vmap", "jit", "grad"), ("grad", "vmap", "jacfwd"),
                  ("grad", "jacrev", "jacfwd"), ("jacrev", "grad", "vmap"),
                  ("vmap", "vmap", "jacrev"), ("jit", "jacrev", "grad"),
                  ("grad", "jacfwd", "vmap")]
ALL_TRIPLES = bool(os.environ.get("MODS15D_ALL_TRIPLES")) or \
    os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
if ALL_TRIPLES:
    SWEEP = [(c, t) for c in SWEEP_CASES for t in itertools.product(TRANSFORMS, repeat=3)]
else:
    SWEEP = [(c, REPRESENTATIVE[i % len(REPRESENTATIVE)]) for i, c in enumerate(SWEEP_CASES)]
    SWEEP += [("o15_module", ("grad", "grad", "jacrev")),
              ("o15_sequential", ("jacfwd", "vmap", "grad")),
              ("o15_module", ("jacrev", "vmap", "grad"))]
# The full sweep (MODS15D_ALL_TRIPLES=1) of o15_sequential (Sequential15o: a loop over its list
# of layers, each holding its activation) failed 18 triples (strict xfails before reland15);
# those run by default now, one group per cause:
# - add_grads / tree_leaves_as of two cotangents of Sequential15o, its layers a list in one and
#   a tuple in the other (`a, b = layers` differentiated builds a tuple): tree_util.kinds_as;
# - 'cannot convert Dense15d (object dtype) to an array': a branch of a batched add_at's
#   derivative for arrays gave a layer added into the list of layers snp.zeros_like (and +):
#   ad/reverse.py _tree_items;
# - an internal TypeError 'list indices must be integers or slices, not tuple' (jacfwd over
#   jacfwd or jacrev, a vmap/jacfwd between): gone on the re-landed base.
# The default profile runs the first triple of each group, the thorough profile every triple.
FIXED = {"list as tuple": ["grad-grad-grad", "grad-jacrev-grad", "grad-jacrev-jacfwd",
                           "grad-vmap-jacrev", "jacrev-grad-grad", "jacrev-jacrev-grad",
                           "jacrev-vmap-jacrev"],
         "object dtype": ["grad-grad-jacrev", "jacrev-grad-jacrev", "grad-jacrev-jacrev"],
         "list index": ["grad-jacfwd-jacfwd", "grad-jacfwd-jacrev", "jacfwd-grad-jacfwd",
                        "jacfwd-grad-jacrev", "jacfwd-jit-jacfwd", "jacfwd-jit-jacrev",
                        "vmap-jacfwd-jacfwd", "vmap-jacfwd-jacrev"]}
if not ALL_TRIPLES:
    SWEEP += [("o15_sequential", tuple(triples[0].split("-"))) for triples in FIXED.values()
              if ("o15_sequential", tuple(triples[0].split("-"))) not in SWEEP]
XFAIL = {}      # (case, triple) -> the error it raises


@pytest.mark.parametrize("case,triple", [
    pytest.param(c, t, marks=pytest.mark.xfail(strict=True, reason=XFAIL[c, t]))
    if (c, t) in XFAIL else (c, t) for c, t in SWEEP], ids=lambda v: "-".join(v)
    if isinstance(v, tuple) else v)
def test_triples_of_transforms_of_modules(x64, case, triple):
    """Each level of T1(T2(T3(f))) against its outermost transform computed from the level
    below's values: central differences (grad of the sum, jacfwd, jacrev), a Python loop
    (vmap), eager (jit)."""
    f, w = SWEEP_CASES[case]
    levels = [f]
    for name in reversed(triple):
        levels.append(TRANSFORMS[name](levels[-1]))
    for k, name in enumerate(reversed(triple), start=1):
        x = _batched(w, list(reversed(triple))[:k].count("vmap"))
        got = np.asarray(levels[k](x))
        want = _reference(name, levels[k - 1], x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{case}: level {k} ({name}) of {triple}")


# --- 4. a dispatcher's batched form bound to its caller's size: transformed again once --------
@pytest.mark.parametrize("name", ["grad(vmap(grad))", "jacfwd(vmap(grad))",
                                  "jacrev(vmap(grad))", "grad(grad(vmap))"])
def test_a_size_bound_batched_form_is_generated_once_not_at_every_call(x64, name):
    """Where a run-time dispatcher hands its caller's batch size to the batched form it finds
    (functools.partial), a further transform of that form reads the same object at every call:
    it is generated on the first call only (before: every call generated 4 to 7 functions
    again), and later calls give the first call's values."""
    from secant import transforms
    comps = {"grad(vmap(grad))": grad(_summed(vmap(grad(o15_module)))),
             "jacfwd(vmap(grad))": jacfwd(vmap(grad(o15_module))),
             "jacrev(vmap(grad))": jacrev(vmap(grad(o15_module))),
             "grad(grad(vmap))": grad(_summed(grad(_summed(vmap(o15_module)))))}
    g, x = comps[name], _batched(W, 1)
    first = np.asarray(g(x))
    seen = []

    def hook(fn, mode, wrt, staged, gen):
        seen.append(gen.__name__)
    transforms.GENERATE_HOOKS.append(hook)
    try:
        again = [np.asarray(g(x)) for _ in range(3)]
    finally:
        transforms.GENERATE_HOOKS.remove(hook)
    assert seen == []
    for a in again:
        np.testing.assert_array_equal(a, first)
