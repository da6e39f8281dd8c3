"""More programs in the styles users write: a VAE's ELBO with the reparameterisation trick, a
switch over a list of lambdas, lax.scan over a dict in reverse, functools.reduce with operator,
dict merging, gradients of two arguments inside, a recursive tree-structured network, Python
if on a traced value under grad (JAX accepts it there: grad's values are concrete), SVD, a
partial of a lambda, tree_util.Partial, isinstance on parameters, sorted items."""
import functools
import math
import operator

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax, random

from corpus import Case, vec

X = vec(500, 4, 3)
Y = vec(501, 4)
W3 = vec(502, 3)
EPS_NOISE = random.normal(random.PRNGKey(42), (4, 2))


def vae_elbo(params, x):
    h = jnp.tanh(x @ params["enc"])
    mu, logvar = h[:, :2], h[:, 2:]
    z = mu + jnp.exp(0.5 * logvar) * EPS_NOISE
    recon = jnp.tanh(z @ params["dec"])
    log_lik = -0.5 * jnp.sum((recon - x) ** 2)
    kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar))
    return -(log_lik - kl) / x.shape[0]


VAE = {"enc": vec(503, 3, 4), "dec": vec(504, 2, 3)}


def switch_lambdas(w, x):
    branches = [lambda v: jnp.sin(v), lambda v: v ** 2, lambda v: jnp.exp(-v)]
    total = 0.0
    for i in range(3):
        total = total + jnp.sum(lax.switch(i, branches, x @ w))
    return total


def scan_dict_reverse(w, x):
    def step(carry, inp):
        carry = jnp.tanh(carry * inp["a"] + inp["b"] @ w)
        return carry, carry
    xs = {"a": x[:, 0], "b": x}
    last, ys = lax.scan(step, 0.5, xs, reverse=True)
    return last + jnp.sum(ys ** 2)


def reduce_operator(w, x):
    terms = [jnp.sum(jnp.sin(x @ w)), jnp.sum(w ** 2), math.pi * w[0]]
    return functools.reduce(operator.add, terms)


def dict_merge(params, x, y):
    defaults = {"scale": 1.0, "shift": 0.0}
    p = {**defaults, **params}
    pred = (x @ p["w"]) * p["scale"] + p["shift"]
    return jnp.mean((pred - y) ** 2)


def grad_two_args_inside(w, x, y):
    def loss(w, b):
        return jnp.mean((x @ w + b - y) ** 2)
    gw, gb = jax.grad(loss, argnums=(0, 1))(w, 0.1)
    return jnp.sum(gw ** 2) + gb ** 2


def tree_net(w, x, depth=2):
    """a recursive tree-structured network over a static depth"""
    if depth == 0:
        return jnp.tanh(x @ w)
    left = tree_net(w, x[: x.shape[0] // 2], depth - 1)
    right = tree_net(w * 0.5, x[x.shape[0] // 2:], depth - 1)
    return jnp.sum(left) * jnp.sum(right) + jnp.sum(left ** 2)


def python_if_under_grad(w, x):
    total = 0.0
    for row in x:
        s = jnp.dot(row, w)
        if s > 0:
            total = total + s ** 2
        else:
            total = total - jnp.sin(s)
    return total


def nuclear_norm(a):
    return jnp.sum(jnp.linalg.svd(a, compute_uv=False))


def partial_lambda(w, x, y):
    loss = functools.partial(lambda w, x, y: jnp.sum((x @ w - y) ** 2), x=x, y=y)
    return loss(w)


def tree_util_partial(w, x):
    act = jax.tree_util.Partial(jnp.multiply, 0.5)
    return jnp.sum(act(jnp.tanh(x @ w)))


def isinstance_params(params, x):
    total = 0.0
    for p in params:
        if isinstance(p, dict):
            total = total + jnp.sum(jnp.tanh(x @ p["w"]))
        elif isinstance(p, (tuple, list)):
            total = total + jnp.sum(x @ p[0]) * p[1]
        else:
            total = total + jnp.sum(p)
    return total


def sorted_items(params, x):
    out = x
    for name, w in sorted(params.items()):
        out = jnp.tanh(out @ w) if name != "z_last" else out @ w
    return jnp.sum(out ** 2)


def ellipsis_newaxis(w, x):
    h = x[..., None] * w[None, None, :]
    g = jnp.einsum("...ij,j->...i", h, w)
    return jnp.sum(g[:, jnp.newaxis] ** 2)


def dynamic_slice_window(w, x):
    total = 0.0
    for start in range(2):
        win = lax.dynamic_slice(x, (start, 0), (2, 3))
        total = total + jnp.sum(jnp.tanh(win @ w))
    return total


def scan_unroll(w, x):
    def step(c, row):
        c = c * 0.9 + jnp.sin(row @ w)
        return c, c ** 2
    c, ys = lax.scan(step, 0.0, x, unroll=2)
    return c + ys.sum()


def numpy_scalars(w, x):
    scale = np.float64(0.5)
    n = np.int64(x.shape[0])
    return scale * jnp.sum((x @ w) ** 2) / n + np.sqrt(2.0) * w[0]


CASES = [
    Case("vae_elbo", vae_elbo, (VAE, X)),
    Case("switch_lambdas", switch_lambdas, (W3, X)),
    Case("scan_dict_reverse", scan_dict_reverse, (W3, X)),
    Case("reduce_operator", reduce_operator, (W3, X)),
    Case("dict_merge", dict_merge, ({"w": W3, "shift": np.array(0.2)}, X, Y)),
    Case("grad_two_args_inside", grad_two_args_inside, (W3, X, Y)),
    Case("tree_net", tree_net, (W3, X)),
    Case("python_if_under_grad", python_if_under_grad, (W3, X)),
    Case("nuclear_norm", nuclear_norm, (vec(505, 3, 2),)),
    Case("partial_lambda", partial_lambda, (W3, X, Y)),
    Case("tree_util_partial", tree_util_partial, (W3, X)),
    Case("isinstance_params", isinstance_params,
         ([{"w": W3}, (W3 * 0.5, np.array(0.3)), vec(506, 2)], X)),
    Case("sorted_items", sorted_items, ({"b": vec(507, 3, 3), "a": vec(508, 3, 3),
                                         "z_last": vec(509, 3, 2)}, X)),
    Case("ellipsis_newaxis", ellipsis_newaxis, (W3, X)),
    Case("dynamic_slice_window", dynamic_slice_window, (W3, X)),
    Case("scan_unroll", scan_unroll, (W3, X)),
    Case("numpy_scalars", numpy_scalars, (W3, X)),
]
