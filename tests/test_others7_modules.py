"""Issue 15, code written by others (seventh round): flax/equinox-like modules written without
those libraries. Registered dataclasses with __call__, a Sequential of them, parameters filtered
by a predicate and recombined (eqx.partition / eqx.combine), tree_map with is_leaf, tree_leaves /
tree_structure / tree_transpose, dataclasses.replace on a registered module, and a model surgery
step (freeze a layer by stop_gradient of its filtered half). Each checked against float64 finite
differences, a Python loop for vmap, and eager for jit."""
import dataclasses
from typing import Any, Callable

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, jvp, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad

RNG = np.random.default_rng(77)


@dataclasses.dataclass
class Linear:
    weight: Any
    bias: Any

    def __call__(self, x):
        return self.weight @ x + self.bias


tree_util.register_dataclass(Linear, data_fields=["weight", "bias"], meta_fields=[])


@dataclasses.dataclass
class Activation:
    fn: Callable = jnp.tanh

    def __call__(self, x):
        return self.fn(x)


tree_util.register_dataclass(Activation, data_fields=[], meta_fields=["fn"])


@dataclasses.dataclass
class Sequential:
    layers: tuple

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


tree_util.register_dataclass(Sequential, data_fields=["layers"], meta_fields=[])


def make_model(sizes, act=jnp.tanh):
    layers = []
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(Linear(jnp.asarray(RNG.normal(size=(n, m)) / np.sqrt(m)),
                             jnp.asarray(RNG.normal(size=n) * 0.1)))
        if i < len(sizes) - 2:
            layers.append(Activation(act))
    return Sequential(tuple(layers))


def np_forward(model, x):
    for layer in model.layers:
        if isinstance(layer, Linear):
            x = np.asarray(layer.weight) @ x + np.asarray(layer.bias)
        else:
            x = np.tanh(x)
    return x


XS = RNG.normal(size=(6, 3))
YS = RNG.normal(size=(6, 2))


def loss(model, xs, ys):
    preds = vmap(model)(xs)
    return jnp.mean((preds - ys) ** 2)


def test_sequential_module_grad_is_a_module(x64):
    model = make_model([3, 5, 2])
    np.testing.assert_allclose(vmap(model)(XS), np.stack([np_forward(model, x) for x in XS]),
                               rtol=1e-12)
    g = check_grad(loss, model, XS, YS)
    assert isinstance(g, Sequential) and isinstance(g.layers[0], Linear)
    assert isinstance(g.layers[1], Activation) and g.layers[1].fn is jnp.tanh


def test_module_called_under_jit_with_the_module_as_argument(x64):
    model = make_model([3, 4, 4, 2])

    @jit
    def step(model, xs, ys):
        l, g = value_and_grad(loss)(model, xs, ys)
        return l, tree_util.tree_map(lambda p, d: p - 0.1 * d, model, g)

    l, new = step(model, XS, YS)
    np.testing.assert_allclose(l, np.mean((np.stack([np_forward(model, x) for x in XS]) - YS) ** 2),
                               rtol=1e-12)
    g = grad(loss)(model, XS, YS)
    assert_trees_close(new, tree_util.tree_map(lambda p, d: p - 0.1 * d, model, g), rtol=1e-12)


# --- eqx.partition / eqx.combine ---------------------------------------------------------------
def is_array(x):
    return isinstance(x, (np.ndarray, secant.Array)) or hasattr(x, "shape")


def partition(tree, filter_fn, is_leaf=None):
    keep = tree_util.tree_map(lambda x: x if filter_fn(x) else None, tree, is_leaf=is_leaf)
    rest = tree_util.tree_map(lambda x: None if filter_fn(x) else x, tree, is_leaf=is_leaf)
    return keep, rest


def _pick(*xs):
    for x in xs:
        if x is not None:
            return x
    return None


def combine(*trees):
    return tree_util.tree_map(_pick, *trees, is_leaf=lambda x: x is None)


def test_partition_and_combine_trainable_only(x64):
    """Regression: eqx.combine's tree_map(_pick, *trees, is_leaf=...) with starred trees had no
    rule (combine specialised for two trees spells them out now), and the derivative of _pick's
    loop over a tuple holding None built snp.zeros_like(None) (a branch's zero of a value not
    read as an array is zeros_like_tree's)."""
    model = make_model([3, 4, 2])
    # freeze the biases: trainable = weights (2-d arrays)
    trainable, frozen = partition(model, lambda x: is_array(x) and x.ndim == 2)

    def split_loss(trainable, frozen, xs, ys):
        return loss(combine(trainable, frozen), xs, ys)

    g = grad(split_loss)(trainable, frozen, XS, YS)
    assert g.layers[0].bias is None and g.layers[0].weight.shape == (4, 3)
    full = grad(loss)(model, XS, YS)
    np.testing.assert_allclose(g.layers[0].weight, full.layers[0].weight, rtol=1e-12)
    np.testing.assert_allclose(g.layers[2].weight, full.layers[2].weight, rtol=1e-12)
    gj = jit(grad(split_loss))(trainable, frozen, XS, YS)
    assert_trees_close(gj, g, rtol=1e-12)
    # second order: the weights' hessian-vector product against finite differences of grad
    v = tree_util.tree_map(lambda w: jnp.ones_like(w), trainable)
    hvp = jvp(lambda t: grad(split_loss)(t, frozen, XS, YS), (trainable,), (v,))[1]
    eps = 1e-6
    shifted = [grad(split_loss)(tree_util.tree_map(lambda w: w + s * eps, trainable), frozen,
                                XS, YS) for s in (1.0, -1.0)]
    fd = tree_util.tree_map(lambda a, b: (a - b) / (2 * eps), *shifted)
    assert_trees_close(hvp, fd, rtol=1e-5, atol=1e-7)
    # vmap over examples of the recombined model's loss, against a loop
    per = vmap(lambda x, y: loss(combine(trainable, frozen), x[None], y[None]))(XS, YS)
    np.testing.assert_allclose(per, [loss(model, x[None], y[None]) for x, y in zip(XS, YS)],
                               rtol=1e-12)


def test_tree_map_is_leaf_over_layers(x64):
    """A weight-norm reparameterisation applied to every Linear found by is_leaf."""
    model = make_model([3, 4, 2])

    def weight_norm(layer):
        if isinstance(layer, Linear):
            w = layer.weight / jnp.linalg.norm(layer.weight, axis=1, keepdims=True)
            return Linear(w, layer.bias)
        return layer

    def wn_loss(model, xs, ys):
        model = tree_util.tree_map(weight_norm, model, is_leaf=lambda x: isinstance(x, Linear))
        return loss(model, xs, ys)

    check_grad(wn_loss, model, XS, YS)
    # the gradient of a weight-normalised row is orthogonal to that row
    g = grad(wn_loss)(model, XS, YS)
    w = np.asarray(model.layers[0].weight)
    np.testing.assert_allclose(np.sum(np.asarray(g.layers[0].weight) * w, axis=1), 0.0, atol=1e-12)


def test_tree_transpose_of_per_example_grads(x64):
    """A list (over examples) of dicts turned into a dict of lists by tree_transpose, summed."""
    params = {"w": jnp.asarray([0.3, -0.5, 0.2]), "b": jnp.asarray(0.1)}
    f = lambda p, x, y: (jnp.dot(p["w"], x) + p["b"] - y) ** 2
    per = [grad(f)(params, x, y) for x, y in zip(XS, YS[:, 0])]
    outer = tree_util.tree_structure([0] * len(per))
    inner = tree_util.tree_structure(params)
    by_param = tree_util.tree_transpose(outer, inner, per)
    summed = tree_util.tree_map(lambda *g: sum(g), *per)
    np.testing.assert_allclose(sum(by_param["w"]), summed["w"], rtol=1e-12)
    batched = vmap(grad(f), in_axes=(None, 0, 0))(params, XS, YS[:, 0])
    np.testing.assert_allclose(batched["w"], np.stack(by_param["w"]), rtol=1e-12)
    np.testing.assert_allclose(batched["b"], np.stack(by_param["b"]), rtol=1e-12)


def test_head_swapped_by_the_constructor_inside_the_loss(x64):
    """A fine-tuning loss that swaps the last layer's bias: a new Linear, a new Sequential."""
    model = make_model([3, 4, 2])

    def head_loss(model, new_bias, xs, ys):
        last = Linear(model.layers[-1].weight, new_bias)
        model = Sequential((*model.layers[:-1], last))
        return loss(model, xs, ys)

    b = jnp.asarray([0.5, -0.5])
    g = check_grad(head_loss, model, b, XS, YS, argnum=1)
    # the bias gradient of a mean squared error over 2 outputs is the mean residual
    m = Sequential(model.layers[:-1] + (Linear(model.layers[-1].weight, b),))
    resid = np.stack([np_forward(m, x) for x in XS]) - YS
    np.testing.assert_allclose(g, resid.mean(0), rtol=1e-10)
    g_model = check_grad(head_loss, model, b, XS, YS, argnum=0)
    np.testing.assert_allclose(g_model.layers[-1].bias, 0.0)
    assert isinstance(g_model.layers[1], Activation)


def test_dataclasses_replace_inside_the_loss(x64):
    """Regression: dataclasses.replace of a differentiated registered dataclass was refused
    (its source updates a dict in place); it builds the class from the fields when it runs."""
    model = make_model([3, 4, 2])

    def head_loss(model, new_bias, xs, ys):
        last = dataclasses.replace(model.layers[-1], bias=new_bias)
        return loss(dataclasses.replace(model, layers=(*model.layers[:-1], last)), xs, ys)

    check_grad(head_loss, model, jnp.asarray([0.5, -0.5]), XS, YS, argnum=1)


def test_combine_with_a_nested_varargs_picker(x64):
    def combine_nested(*trees):
        def pick(*xs):
            for x in xs:
                if x is not None:
                    return x
            return None
        return tree_util.tree_map(pick, *trees, is_leaf=lambda x: x is None)
    model = make_model([3, 4, 2])
    trainable, frozen = partition(model, lambda x: is_array(x) and x.ndim == 2)
    g = grad(lambda t: loss(combine_nested(t, frozen), XS, YS))(trainable)
    np.testing.assert_allclose(g.layers[0].weight, grad(loss)(model, XS, YS).layers[0].weight,
                               rtol=1e-12)


def test_tuple_field_concatenated_with_a_display(x64):
    """Regression: `model.layers[:-1] + (last,)` with model not differentiated: the left side,
    of a kind known only at run time (tuple or array), was refused; it is checked then."""
    model = make_model([3, 4, 2])

    def head_loss(model, new_bias, xs, ys):
        last = Linear(model.layers[-1].weight, new_bias)
        return loss(Sequential(model.layers[:-1] + (last,)), xs, ys)

    check_grad(head_loss, model, jnp.asarray([0.5, -0.5]), XS, YS, argnum=1)


@dataclasses.dataclass
class Ensemble:
    members: Linear          # weights stacked on a leading axis

    def __call__(self, x):
        return vmap(lambda m: m(x))(self.members)


tree_util.register_dataclass(Ensemble, data_fields=["members"], meta_fields=[])


def test_ensemble_of_stacked_modules(x64):
    ws, bs = RNG.normal(size=(4, 2, 3)), RNG.normal(size=(4, 2))
    ens = Ensemble(Linear(jnp.asarray(ws), jnp.asarray(bs)))
    x = jnp.asarray(XS[0])
    np.testing.assert_allclose(ens(x), np.einsum("kij,j->ki", ws, XS[0]) + bs, rtol=1e-12)
    f = lambda ens, x: jnp.sum(jnp.tanh(ens(x)) ** 2)
    g = check_grad(f, ens, x)
    assert isinstance(g, Ensemble) and g.members.weight.shape == (4, 2, 3)
    check_grad(f, ens, x, argnum=1)
    check_vmap(lambda x: f(ens, x), (XS,))


def ravel_module(model):
    """(the leaves as one vector, the function rebuilding a module from such a vector)."""
    leaves, treedef = tree_util.tree_flatten(model)
    shapes = [leaf.shape for leaf in leaves]
    sizes = [int(np.prod(s)) for s in shapes]

    def unravel(v):
        out, start = [], 0
        for shape, size in zip(shapes, sizes):
            out.append(v[start:start + size].reshape(shape))
            start += size
        return tree_util.tree_unflatten(treedef, out)
    return jnp.concatenate([jnp.ravel(leaf) for leaf in leaves]), unravel


def test_tree_leaves_and_structure_to_rebuild(x64):
    """Flatten a module to a vector of leaves and back (ravel_pytree by hand): the gradient of
    the flat function is the module's gradient raveled."""
    model = make_model([2, 2, 1])
    xs, ys = jnp.asarray(XS[:, :2]), jnp.asarray(YS[:, :1])
    flat, unravel = ravel_module(model)
    flat_loss = lambda v: loss(unravel(v), xs, ys)
    g = grad(flat_loss)(flat)
    g_fd = fd_grad(flat_loss, (flat,))
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(flat_loss))(flat), g, rtol=1e-12)
    assert tree_util.tree_structure(unravel(flat)) == tree_util.tree_structure(model)
    g_tree = grad(loss)(model, xs, ys)
    np.testing.assert_allclose(unravel(g).layers[0].weight, g_tree.layers[0].weight, rtol=1e-12)


def test_flat_hessian_through_vmap_of_a_module(x64):
    """Regression: second order through vmap(model) of a callable object (a dynamic call): the
    derivative of the batched dispatcher's derivative had no rule ("secant does not know the
    derivative of batched_derivative"), and vmap of its kind_of(layers)(items) dispatched on
    the class tuple."""
    xs, ys = jnp.asarray(XS[:, :2]), jnp.asarray(YS[:, :1])
    flat, unravel = ravel_module(make_model([2, 2, 1]))
    flat_loss = lambda v: loss(unravel(v), xs, ys)
    H = secant.hessian(flat_loss)(flat)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)
    for i in (0, 3, flat.size - 1):
        np.testing.assert_allclose(H[i], fd_grad(lambda v: grad(flat_loss)(v)[i], (flat,)),
                                   rtol=1e-6, atol=1e-8)
    col = jvp(grad(flat_loss), (flat,), (jnp.eye(flat.size)[3],))[1]
    np.testing.assert_allclose(col, H[:, 3], rtol=1e-10, atol=1e-12)


@dataclasses.dataclass
class BatchNormState:
    mean: Any
    var: Any


tree_util.register_dataclass(BatchNormState, data_fields=["mean", "var"], meta_fields=[])


def batchnorm(x, state, momentum=0.9, train=True):
    if train:
        mean, var = jnp.mean(x, 0), jnp.var(x, 0)
        state = BatchNormState(momentum * state.mean + (1 - momentum) * mean,
                               momentum * state.var + (1 - momentum) * var)
    else:
        mean, var = state.mean, state.var
    return (x - mean) / jnp.sqrt(var + 1e-5), state


def test_batchnorm_state_threaded_with_has_aux(x64):
    w = jnp.asarray(RNG.normal(size=(3, 2)))
    state0 = BatchNormState(jnp.zeros(2), jnp.ones(2))

    def bn_loss(w, state, xs, ys):
        h, state = batchnorm(xs @ w, state)
        return jnp.mean((h - ys) ** 2), state

    (l, state), g = value_and_grad(bn_loss, has_aux=True)(w, state0, XS, YS)
    h = XS @ np.asarray(w)
    np.testing.assert_allclose(state.mean, 0.1 * h.mean(0), rtol=1e-12)
    np.testing.assert_allclose(state.var, 0.9 + 0.1 * h.var(0), rtol=1e-12)
    np.testing.assert_allclose(g, fd_grad(lambda w: bn_loss(w, state0, XS, YS)[0], (w,)), rtol=1e-6)
    (lj, sj), gj = jit(value_and_grad(bn_loss, has_aux=True))(w, state0, XS, YS)
    np.testing.assert_allclose(gj, g, rtol=1e-12)
    assert_trees_close(sj, state, rtol=1e-12)
    # eval mode: a Python bool keyword, static under jit
    ev = jit(lambda x, s: batchnorm(x, s, train=False)[0])(XS[:, :2], state)
    np.testing.assert_allclose(ev, (XS[:, :2] - np.asarray(state.mean)) / np.sqrt(np.asarray(state.var) + 1e-5),
                               rtol=1e-12)


class Module:
    """A base class whose subclasses are registered pytrees by __init_subclass__ (equinox)."""
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(cls)
        fields = [f.name for f in dataclasses.fields(cls)]
        static = [f for f in fields if f in getattr(cls, "static", ())]
        tree_util.register_dataclass(cls, data_fields=[f for f in fields if f not in static],
                                     meta_fields=static)


class MLP(Module):
    static = ("depth",)
    layers: list
    depth: int

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < self.depth - 1:
                x = jax_relu(x)
        return x


def jax_relu(x):
    return jnp.maximum(x, 0.0)


def test_init_subclass_registration_and_static_depth(x64):
    lin = [Linear(jnp.asarray(RNG.normal(size=(4, 3))), jnp.asarray(RNG.normal(size=4))),
           Linear(jnp.asarray(RNG.normal(size=(1, 4))), jnp.asarray(RNG.normal(size=1)))]
    mlp = MLP(lin, 2)
    f = lambda m, x: jnp.sum(m(x) ** 2)
    g = check_grad(f, mlp, XS[0])
    assert isinstance(g, MLP) and g.depth == 2
    check_vmap(lambda x: f(mlp, x), (XS,))
    gv = vmap(grad(f), in_axes=(None, 0))(mlp, XS)
    for i, x in enumerate(XS):
        assert_trees_close(tree_util.tree_map(lambda t: t[i], gv), grad(f)(mlp, jnp.asarray(x)), rtol=1e-12)
