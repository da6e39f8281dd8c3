"""Issue 15, code written by others (fourth round): more Python written around JAX math:
functools.reduce over layers, map/sum over parameter lists, dict(zip(...)) and f-string keys,
generators that yield layers, getattr(self, f"layer{i}") on a model class, try/except KeyError
for optional parameters, a named_scope context manager, **config forwarded to a loss, sorted
with a key, max over a static range with a key, recursion over dict-of-dict trees; each under
grad, jit, vmap and jvp as its author would use them, checked against float64 finite
differences, a Python loop and eager."""
import functools
import operator
from typing import NamedTuple

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jit, named_scope, nn, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(90909)


# --- functools.reduce, map and sum over parameter lists --------------------------------------
def reduce_net(ws, x):
    return jnp.sum(functools.reduce(lambda h, w: jnp.tanh(h @ w), ws, x))


def weight_decay(ws):
    return sum(map(lambda w: jnp.sum(w ** 2), ws))


def product_of_norms(ws):
    return functools.reduce(operator.mul, [jnp.linalg.norm(w) for w in ws])


def test_reduce_map_sum(x64):
    ws = [RNG.normal(size=(3, 3)) * 0.7 for _ in range(3)]
    x = RNG.normal(size=3)
    h = x
    for w in ws:
        h = np.tanh(h @ w)
    np.testing.assert_allclose(reduce_net(to_snp(ws), to_snp(x)), h.sum(), rtol=1e-12)
    check_grad(reduce_net, ws, x)
    check_grad(reduce_net, ws, x, argnum=1)
    check_vmap(reduce_net, (ws, RNG.normal(size=(4, 3))), in_axes=(None, 0))
    g = check_grad(weight_decay, ws)
    assert_trees_close(g, [2 * w for w in ws])
    g = check_grad(product_of_norms, ws)
    norms = [np.linalg.norm(w) for w in ws]
    assert_trees_close(g, [np.prod(norms) / n ** 2 * w for n, w in zip(norms, ws)])


# --- dict(zip(...)), f-string keys and a generator of layers ------------------------------------
NAMES = ("encoder", "hidden", "decoder")


def build_and_apply(values, x):
    params = dict(zip(NAMES, values))
    for name in NAMES:
        x = jnp.tanh(x * params[name])
    return jnp.sum(x)


def f_string_params(params, x, n=3):
    for i in range(n):
        x = jnp.sin(x @ params[f"w{i}"] + params[f"b{i}"])
    return jnp.sum(x ** 2)


def layers_of(params):
    for i in range(len(params) // 2):
        yield params[f"w{i}"], params[f"b{i}"]


def generator_net(params, x):
    for w, b in layers_of(params):
        x = jnp.sin(x @ w + b)
    return jnp.sum(x ** 2)


def _f_params():
    return {**{f"w{i}": RNG.normal(size=(3, 3)) * 0.6 for i in range(3)},
            **{f"b{i}": RNG.normal(size=3) * 0.1 for i in range(3)}}


def test_dict_zip_and_f_string_keys(x64):
    values = [RNG.normal(size=2) for _ in NAMES]
    x = RNG.normal(size=2)
    check_grad(build_and_apply, values, x)
    check_vmap(build_and_apply, (values, RNG.normal(size=(3, 2))), in_axes=(None, 0))
    params = _f_params()
    xs = RNG.normal(size=3)
    check_grad(f_string_params, params, xs)
    check_grad(f_string_params, params, xs, argnum=1)
    check_vmap(f_string_params, (params, RNG.normal(size=(4, 3))), in_axes=(None, 0))


def test_generator_of_layers(x64):
    params = _f_params()
    xs = RNG.normal(size=3)
    np.testing.assert_allclose(generator_net(to_snp(params), to_snp(xs)),
                               f_string_params(to_snp(params), to_snp(xs)), rtol=1e-12)
    check_grad(generator_net, params, xs)



# the same kind, other shapes: `yield from`, a return that ends a generator early, a generator
# def inside the differentiated function, a generator read by zip and a comprehension
def neighbours(xs):
    for i in range(len(xs) - 1):
        yield xs[i], xs[i + 1]


def differences(xs):
    for a, b in neighbours(xs):
        yield b - a


def first_scaled(xs, limit):
    for k, v in enumerate(xs):
        if k >= limit:
            return
        yield v * (k + 1)
    yield from differences(xs)


def chain_energy(xs, x):
    total = 0.0
    for a, b in neighbours(xs):
        total = total + jnp.sum((a - b) ** 2 * x)
    for v, w in zip(first_scaled(xs, 2), xs):
        total = total + jnp.sum(jnp.sin(v * w * x))
    return total + sum([jnp.sum(v * x) for v in first_scaled(xs, 9)])


def local_generator(x, n=4):
    def powers(m):
        p = x
        for _ in range(m):
            yield p
            p = jnp.sin(p) * x
    total = 0.0
    for p in powers(n):
        total = total + p
    return total


def test_generators_of_other_shapes(x64):
    xs = [RNG.normal(size=2) for _ in range(4)]
    x = RNG.normal(size=2)
    check_grad(chain_energy, xs, x)
    check_grad(chain_energy, xs, x, argnum=1)
    check_vmap(chain_energy, (xs, RNG.normal(size=(3, 2))), in_axes=(None, 0))
    g = check_grad(local_generator, 0.7)
    np.testing.assert_allclose(g, fd_grad(local_generator, (jnp.asarray(0.7),)), rtol=1e-6)
    check_vmap(local_generator, (RNG.normal(size=5),))


# --- getattr(self, f"layer{i}") on a model class ----------------------------------------------
class Stack:
    def __init__(self, depth):
        self.depth = depth

    def __call__(self, params, x):
        for i in range(self.depth):
            layer = getattr(self, f"layer{i}")
            x = layer(params[i], x)
        return x

    def layer0(self, p, x):
        return jnp.tanh(x @ p)

    def layer1(self, p, x):
        return nn.softplus(x @ p)

    def layer2(self, p, x):
        return x @ p


def test_getattr_dispatch_on_self(x64):
    model = Stack(3)
    params = [RNG.normal(size=(3, 4)), RNG.normal(size=(4, 4)), RNG.normal(size=(4, 1))]
    x = RNG.normal(size=(5, 3))
    loss = lambda p, x: jnp.mean(model(p, x) ** 2)
    check_grad(loss, params, x)
    check_vmap(lambda p, x: model(p, x), (params, x), in_axes=(None, 0))


# --- try/except for optional parameters, a named scope, **config --------------------------------
def optional_bias(params, x):
    try:
        b = params["bias"]
    except KeyError:
        b = 0.0
    with named_scope("dense"):
        y = x @ params["kernel"] + b
    return jnp.sum(jnp.tanh(y))


def configured_loss(params, x, y, *, l2=0.0, huber_delta=None, reduction="mean"):
    err = x @ params["w"] - y
    if huber_delta is None:
        per = err ** 2
    else:
        a = jnp.abs(err)
        per = jnp.where(a < huber_delta, 0.5 * err ** 2, huber_delta * (a - 0.5 * huber_delta))
    total = jnp.mean(per) if reduction == "mean" else jnp.sum(per)
    return total + l2 * jnp.sum(params["w"] ** 2)


def train_loss(params, batch, **config):
    x, y = batch
    return configured_loss(params, x, y, **config)


def test_named_scope_with_optional_bias_present(x64):
    with_bias = {"kernel": RNG.normal(size=(3, 2)), "bias": RNG.normal(size=2)}
    x = RNG.normal(size=(4, 3))
    check_grad(optional_bias, with_bias, x)
    check_vmap(optional_bias, (with_bias, RNG.normal(size=(2, 4, 3))), in_axes=(None, 0))


def test_try_except_for_an_optional_parameter(x64):
    without = {"kernel": RNG.normal(size=(3, 2))}
    x = RNG.normal(size=(4, 3))
    g = check_grad(optional_bias, without, x)
    assert set(g) == {"kernel"}
    check_vmap(optional_bias, (without, RNG.normal(size=(2, 4, 3))), in_axes=(None, 0))


def test_config_as_keywords(x64):
    params = {"w": RNG.normal(size=3)}
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=6)
    for f in (lambda p: configured_loss(p, to_snp(x), to_snp(y)),
              lambda p: configured_loss(p, to_snp(x), to_snp(y), l2=0.1),
              lambda p: configured_loss(p, to_snp(x), to_snp(y), huber_delta=0.5,
                                        reduction="sum")):
        g = grad(f)(to_snp(params))
        assert_trees_close(g, fd_grad(f, (to_snp(params),)))
        assert_trees_close(jit(grad(f))(to_snp(params)), g)


def test_config_forwarded_by_kwargs(x64):
    params = {"w": RNG.normal(size=3)}
    batch = (RNG.normal(size=(6, 3)), RNG.normal(size=6))
    for config in ({}, {"l2": 0.1}, {"huber_delta": 0.5, "reduction": "sum"}):
        f = lambda p, config=config: train_loss(p, to_snp(batch), **config)
        g = grad(f)(to_snp(params))
        assert_trees_close(g, fd_grad(f, (to_snp(params),)))
        assert_trees_close(jit(grad(f))(to_snp(params)), g)


class Trainer:
    def __init__(self, **config):
        self.config = config

    def loss(self, params, batch):
        return train_loss(params, batch, **self.config)


def test_config_held_by_an_object_forwarded_by_kwargs(x64):
    """The same kind, another shape: the config an object's field (`**self.config`), the
    trainer's loss a bound method; grad and jit(grad) against finite differences and eager,
    vmap over the data against a loop, and an unknown key Python's TypeError."""
    params = {"w": RNG.normal(size=3)}
    batch = (RNG.normal(size=(6, 3)), RNG.normal(size=6))
    for trainer in (Trainer(), Trainer(l2=0.3, reduction="sum")):
        f = lambda p: trainer.loss(p, to_snp(batch))
        g = grad(f)(to_snp(params))
        assert_trees_close(g, fd_grad(f, (to_snp(params),)))
        assert_trees_close(jit(grad(f))(to_snp(params)), g)
        check_vmap(lambda x, y: trainer.loss(to_snp(params), (x, y)),
                   (RNG.normal(size=(2, 6, 3)), RNG.normal(size=(2, 6))))
    with pytest.raises(TypeError, match="momentum"):
        grad(lambda p: Trainer(momentum=0.9).loss(p, to_snp(batch)))(to_snp(params))


def _norm_layer(x, gamma, beta, eps=1e-5):
    return gamma * x / jnp.sqrt(jnp.mean(x ** 2) + eps) + beta


LN_CONFIG = {"gamma": 2.0, "beta": 0.5}
LN_WRONG = {"gamma": 2.0, "beta": 0.5, "momentum": 0.9}


def test_double_star_keys_the_callee_does_not_take_are_pythons_type_error(x64):
    """`f(x, **d)` is spelled out as the keywords f takes; a key of d that f does not take is
    Python's TypeError (never silently ignored): at transform time when d is a constant, when
    the code runs when d is a value passed in (a parameter dict too, differentiated), under
    grad and jit(grad). The keys f takes still give the gradient finite differences give."""
    x = RNG.normal(size=3)
    static = lambda x, d=None: jnp.sum(_norm_layer(x, **LN_CONFIG))
    passed = lambda x, d: jnp.sum(_norm_layer(x, **d))
    tracked = lambda p, x: jnp.sum(_norm_layer(x, **p["ln"]))
    p = {"ln": {"gamma": 2.0, "beta": 0.5}}
    assert_trees_close(grad(static)(to_snp(x)), fd_grad(static, (to_snp(x),)))
    assert_trees_close(grad(passed)(to_snp(x), LN_CONFIG), grad(static)(to_snp(x)), rtol=1e-12)
    g = grad(tracked)(to_snp(p), to_snp(x))
    assert_trees_close(g, fd_grad(tracked, (to_snp(p), to_snp(x))))
    assert_trees_close(jit(grad(tracked))(to_snp(p), to_snp(x)), g)
    wrong = {"ln": {**p["ln"], "momentum": 0.9}}
    for run in (lambda: grad(lambda x: jnp.sum(_norm_layer(x, **LN_WRONG)))(to_snp(x)),
                lambda: grad(passed)(to_snp(x), LN_WRONG),
                lambda: jit(grad(passed))(to_snp(x), LN_WRONG),
                lambda: grad(tracked)(to_snp(wrong), to_snp(x)),
                lambda: jit(grad(tracked))(to_snp(wrong), to_snp(x))):
        with pytest.raises(TypeError, match="unexpected keyword argument 'momentum'"):
            run()
    with pytest.raises(TypeError, match="unexpected keyword argument 'momentum'"):
        _norm_layer(to_snp(x), **LN_WRONG)          # (as Python itself)


# --- sorted with a key, max over a static range with a key ----------------------------------------
def ordered_layers(params, x):
    for name in sorted(params, key=lambda k: int(k.split("_")[1])):
        x = jnp.tanh(params[name] @ x)
    return jnp.sum(x)


def best_of_static_candidates(x, scales=(0.5, 1.0, 2.0, 3.0)):
    best = max(range(len(scales)), key=lambda i: abs(scales[i] - 1.7))
    return jnp.sum(jnp.sin(scales[best] * x))


def test_sorted_with_key_and_static_max(x64):
    params = {f"layer_{i}": RNG.normal(size=(3, 3)) * 0.7 for i in (10, 2, 1)}
    x = RNG.normal(size=3)
    want = x
    for i in (1, 2, 10):
        want = np.tanh(params[f"layer_{i}"] @ want)
    np.testing.assert_allclose(ordered_layers(to_snp(params), to_snp(x)), want.sum(), rtol=1e-12)
    check_grad(ordered_layers, params, x)
    check_vmap(ordered_layers, (params, RNG.normal(size=(3, 3))), in_axes=(None, 0))
    g = check_grad(best_of_static_candidates, x)
    np.testing.assert_allclose(g, 3.0 * np.cos(3.0 * x), rtol=1e-12)     # |3.0 - 1.7| largest
    check_vmap(best_of_static_candidates, (RNG.normal(size=(3, 3)),))


# --- recursion over a dict-of-dicts tree ---------------------------------------------------------
def tree_model(node, x):
    if "leaf" in node:
        return jnp.dot(node["leaf"], x)
    gate = nn.sigmoid(jnp.dot(node["gate"], x))
    return gate * tree_model(node["left"], x) + (1 - gate) * tree_model(node["right"], x)


def make_tree(depth, rng):
    if depth == 0:
        return {"leaf": rng.normal(size=3)}
    return {"gate": rng.normal(size=3), "left": make_tree(depth - 1, rng),
            "right": make_tree(depth - 1, rng)}


def np_tree_model(node, x):
    if "leaf" in node:
        return node["leaf"] @ x
    g = 1 / (1 + np.exp(-(node["gate"] @ x)))
    return g * np_tree_model(node["left"], x) + (1 - g) * np_tree_model(node["right"], x)


def test_soft_decision_tree_recursion(x64):
    tree = make_tree(2, RNG)
    x = RNG.normal(size=3)
    np.testing.assert_allclose(tree_model(to_snp(tree), to_snp(x)), np_tree_model(tree, x),
                               rtol=1e-12)
    check_grad(tree_model, tree, x)
    check_grad(tree_model, tree, x, argnum=1)
    check_vmap(tree_model, (tree, RNG.normal(size=(4, 3))), in_axes=(None, 0))
    h = hessian(tree_model, argnums=1)(to_snp(tree), to_snp(x))
    for i in range(3):
        np.testing.assert_allclose(
            h[i], fd_grad(lambda x: grad(tree_model, argnums=1)(to_snp(tree), x)[i],
                          (to_snp(x),)), rtol=1e-5, atol=1e-7)


# --- a mixture density network returning a namedtuple ----------------------------------------
class MixtureParams(NamedTuple):
    logits: object
    means: object
    log_scales: object


def mdn_head(params, x):
    h = jnp.tanh(x @ params["w"])
    out = h @ params["head"]
    k = out.shape[-1] // 3
    return MixtureParams(out[..., :k], out[..., k:2 * k], out[..., 2 * k:])


def mdn_nll(params, x, y):
    mix = mdn_head(params, x)
    log_w = nn.log_softmax(mix.logits, axis=-1)
    z = (y[..., None] - mix.means) / jnp.exp(mix.log_scales)
    comp = -0.5 * z ** 2 - mix.log_scales - 0.5 * jnp.log(2 * jnp.pi)
    return -jnp.mean(nn.logsumexp(log_w + comp, axis=-1))


def test_mixture_density_network(x64):
    params = {"w": RNG.normal(size=(2, 5)), "head": RNG.normal(size=(5, 9)) * 0.3}
    x, y = RNG.normal(size=(7, 2)), RNG.normal(size=7)
    check_grad(mdn_nll, params, x, y)
    check_grad(mdn_nll, params, x, y, argnum=1)
    check_vmap(mdn_head, (params, x), in_axes=(None, 0))
    per = vmap(grad(mdn_nll), in_axes=(None, 0, 0))(to_snp(params), to_snp(x[:, None]),
                                                     to_snp(y[:, None]))
    for i in range(3):
        assert_trees_close({k: v[i] for k, v in per.items()},
                           grad(mdn_nll)(to_snp(params), to_snp(x[i:i + 1]), to_snp(y[i:i + 1])))
