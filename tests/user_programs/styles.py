"""Optimizers written by hand (Adam, momentum, an optax-like chain of closures) and the spread
of Python styles users write: lambdas beside lambdas, getattr(jnp, name), their own decorators,
methods, static and class methods, properties, dicts of parameters, helpers calling helpers,
*args/**kwargs, keyword-only and default arguments, functools.partial, closure factories."""
import functools
from typing import Callable, NamedTuple

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax

from corpus import Case, vec

X = vec(300, 4, 3)
Y = vec(301, 4)


def quad_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2) + 0.1 * jnp.sum(jnp.sin(w))


# --- optimizers by hand --------------------------------------------------------------------------
def adam_meta(w0, x, y):
    """three Adam steps from w0; the loss after them (a meta-gradient w.r.t. w0)"""
    b1, b2, lr, eps = 0.9, 0.999, 0.1, 1e-8
    m = jnp.zeros_like(w0)
    v = jnp.zeros_like(w0)
    w = w0
    for t in range(1, 4):
        g = jax.grad(quad_loss)(w, x, y)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        w = w - lr * m_hat / (jnp.sqrt(v_hat) + eps)
    return quad_loss(w, x, y)


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def scale_by_momentum(beta):
    def init(params):
        return jnp.zeros_like(params)

    def update(updates, state):
        state = beta * state + updates
        return state, state
    return GradientTransformation(init, update)


def scale(step_size):
    def init(params):
        return ()

    def update(updates, state):
        return step_size * updates, state
    return GradientTransformation(init, update)


def chain(*transforms):
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state):
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


OPT = chain(scale_by_momentum(0.9), scale(-0.05))


def optax_like_chain(w, x, y):
    state = OPT.init(w)
    for _ in range(2):
        g = jax.grad(quad_loss)(w, x, y)
        updates, state = OPT.update(g, state)
        w = w + updates
    return quad_loss(w, x, y)


def momentum_dict(params, x, y):
    """SGD with momentum on a dict of parameters via tree_map"""
    def loss(p):
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
    vel = jax.tree_util.tree_map(jnp.zeros_like, params)
    for _ in range(2):
        g = jax.grad(loss)(params)
        vel = jax.tree_util.tree_map(lambda v, gi: 0.9 * v + gi, vel, g)
        params = jax.tree_util.tree_map(lambda p, v: p - 0.1 * v, params, vel)
    return loss(params)


def lr_meta(log_lr, x, y):
    lr = jnp.exp(log_lr)
    w = jnp.zeros(x.shape[1])

    def body(i, w):
        return w - lr * jax.grad(quad_loss)(w, x, y)
    w = lax.fori_loop(0, 3, body, w)
    return quad_loss(w, x, y)


# --- lambdas, getattr, decorators ------------------------------------------------------------------------
def lambdas(w, x):
    act = lambda z: jnp.tanh(z)
    sq = lambda z: z * z
    model = lambda w, x: act(x @ w)
    return jnp.sum(sq(model(w, x))) + (lambda a, b: a * b)(2.0, jnp.sum(w))


def getattr_names(w, x):
    total = 0.0
    for name in ["sin", "cos", "tanh"]:
        total = total + jnp.sum(getattr(jnp, name)(x @ w))
    return total


ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh, "softplus": jax.nn.softplus}


def activation_table(w, x):
    h = x @ w
    return sum(jnp.sum(ACTIVATIONS[k](h)) for k in ("tanh", "softplus"))


def scaled(factor):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return factor * fn(*args, **kwargs)
        return wrapper
    return decorator


@scaled(0.5)
def decorated_loss(w, x, y):
    return jnp.sum((x @ w - y) ** 2)


def uses_decorated(w, x, y):
    return decorated_loss(w, x, y) + jnp.sum(w ** 2)


# --- classes --------------------------------------------------------------------------------------------
class MLP:
    def __init__(self, activation=jnp.tanh):
        self.activation = activation

    def apply(self, params, x):
        h = self.activation(x @ params["w1"] + params["b1"])
        return h @ params["w2"]

    def loss(self, params, x, y):
        return jnp.mean((self.apply(params, x)[:, 0] - y) ** 2)


MODEL = MLP()
MLP_P = {"w1": vec(310, 3, 3), "b1": vec(311, 3), "w2": vec(312, 3, 1)}


def method_loss(params, x, y):
    return MODEL.loss(params, x, y)


class Regularizer:
    weight = 0.1

    @staticmethod
    def l2(p):
        return jnp.sum(p ** 2)

    @classmethod
    def penalty(cls, p):
        return cls.weight * cls.l2(p)

    @property
    def scale(self):
        return 2.0


REG = Regularizer()


def static_class_property(w, x, y):
    return REG.scale * quad_loss(w, x, y) + Regularizer.penalty(w)


# --- dicts, helpers, argument styles --------------------------------------------------------------------
def dict_comprehension(params, x, y):
    scaled_params = {k: v * 2.0 for k, v in params.items()}
    h = jnp.tanh(x @ scaled_params["w1"] + scaled_params["b1"])
    return jnp.sum((h @ scaled_params["w2"])[:, 0] * y)


def _affine(x, w, b):
    return x @ w + b


def _hidden(params, x):
    return jnp.tanh(_affine(x, params["w1"], params["b1"]))


def _predict(params, x):
    return _affine(_hidden(params, x), params["w2"], 0.0)[:, 0]


def helpers_chain(params, x, y):
    return jnp.mean((_predict(params, x) - y) ** 2)


def combine(*terms, weights=None):
    if weights is None:
        weights = [1.0] * len(terms)
    return sum(w * t for w, t in zip(weights, terms))


def star_args(w, x, y):
    data = jnp.mean((x @ w - y) ** 2)
    reg = jnp.sum(w ** 2)
    smooth = jnp.sum(jnp.diff(w) ** 2)
    return combine(data, reg, smooth, weights=[1.0, 0.1, 0.01])


def layer(x, w, **options):
    h = x @ w
    if options.get("activation") == "relu":
        h = jax.nn.relu(h)
    elif options.get("activation") == "tanh":
        h = jnp.tanh(h)
    return h * options.get("scale", 1.0)


def star_kwargs(w, x, y):
    opts = {"activation": "tanh", "scale": 2.0}
    return jnp.sum((layer(x, w, **opts) - y) ** 2)


def huber(r, *, delta=1.0):
    a = jnp.abs(r)
    return jnp.where(a < delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))


def kwonly_huber(w, x, y):
    return jnp.mean(huber(x @ w - y, delta=0.5))


def partial_helper(w, x, y):
    loss = functools.partial(quad_loss, x=x, y=y)
    return loss(w)


def make_loss(l2):
    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2) + l2 * jnp.sum(w ** 2)
    return loss


REG_LOSS = make_loss(0.3)


def closure_factory(w, x, y):
    return REG_LOSS(w, x, y)


def zip_enumerate(params, x):
    for i, (w, b) in enumerate(zip(params["ws"], params["bs"])):
        x = jnp.tanh(x @ w + b) if i < len(params["ws"]) - 1 else x @ w + b
    return jnp.sum(x ** 2)


ZIP_P = {"ws": [vec(320, 3, 3), vec(321, 3, 2)], "bs": [vec(322, 3), vec(323, 2)]}


def at_updates(w, x):
    h = jnp.dot(x, w)
    h = h.at[0].set(0.0)
    h = h.at[1:].multiply(2.0)
    h = h.at[-1].add(jnp.sum(w))
    return jnp.sum(h ** 2)


def cond_piecewise(w, x):
    s = jnp.sum(x @ w)
    return lax.cond(s > 0, lambda v: v ** 2, lambda v: jnp.sin(v), s)


def vmap_inside(w, x, y):
    per_example = jax.vmap(lambda xi, yi: (xi @ w - yi) ** 2)(x, y)
    return jnp.mean(per_example)


def polyval_fit(coeffs, x):
    return jnp.sum(jnp.polyval(coeffs, x) ** 2)


def unpack_and_index(theta, x):
    a, b, c = theta
    return jnp.sum(a * x ** 2 + b * x + c) + theta[-1] * theta[0]


def numpy_methods(w, x):
    h = (x @ w).clip(-1.0, 1.0)
    return h.sum() + (h ** 2).mean() + h.max() + w.dot(w) + h.T.prod()


def ternary_and_walrus(w, x):
    total = 0.0
    for row in x:
        total = total + ((s := jnp.dot(row, w)) * s if len(row) > 2 else s)
    return total


def string_dispatch(w, x):
    def apply(kind, z):
        if kind == "square":
            return z ** 2
        if kind == "exp":
            return jnp.exp(z)
        return z
    return sum(jnp.sum(apply(k, x @ w)) for k in ["square", "exp", "id"])


W3 = vec(330, 3)

CASES = [
    Case("adam_meta", adam_meta, (W3, X, Y)),
    Case("optax_like_chain", optax_like_chain, (W3, X, Y)),
    Case("momentum_dict", momentum_dict, ({"w": W3, "b": np.array(0.1)}, X, Y)),
    Case("lr_meta", lr_meta, (np.array(-2.0), X, Y)),
    Case("lambdas", lambdas, (W3, X)),
    Case("getattr_names", getattr_names, (W3, X)),
    Case("activation_table", activation_table, (W3, X)),
    Case("decorator_wraps", uses_decorated, (W3, X, Y)),
    Case("method_loss", method_loss, (MLP_P, X, Y)),
    Case("static_class_property", static_class_property, (W3, X, Y)),
    Case("dict_comprehension", dict_comprehension, (MLP_P, X, Y)),
    Case("helpers_chain", helpers_chain, (MLP_P, X, Y)),
    Case("star_args", star_args, (W3, X, Y)),
    Case("star_kwargs", star_kwargs, (W3, X, Y)),
    Case("kwonly_huber", kwonly_huber, (W3, X, Y)),
    Case("partial_helper", partial_helper, (W3, X, Y)),
    Case("closure_factory", closure_factory, (W3, X, Y)),
    Case("zip_enumerate", zip_enumerate, (ZIP_P, X)),
    Case("at_updates", at_updates, (W3, X)),
    Case("cond_piecewise", cond_piecewise, (W3, X)),
    Case("vmap_inside", vmap_inside, (W3, X, Y)),
    Case("polyval_fit", polyval_fit, (vec(331, 4), vec(332, 5))),
    Case("unpack_and_index", unpack_and_index, (W3, vec(333, 5))),
    Case("numpy_methods", numpy_methods, (W3, X)),
    Case("ternary_and_walrus", ternary_and_walrus, (W3, X)),
    Case("string_dispatch", string_dispatch, (W3, X)),
]
