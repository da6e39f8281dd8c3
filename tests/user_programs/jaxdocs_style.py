"""Programs after the JAX documentation's own examples (issue 15, explore15j, the third battery):
"Stateful computations" (a counter class made functional, PRNG keys threaded through a loop),
the "Advanced autodiff" cookbook (Hessian-vector products four ways, a Jacobian of a Jacobian,
stop_gradient tricks, per-example gradients with vmap(grad), custom_vjp gradient clipping,
custom_jvp log1pexp and logsumexp, checkpoint, linearize, vjp) and "Pytrees" (a registered
class, tree_map over nested parameters, None leaves, tree_transpose, paths)."""
import dataclasses
import functools
from typing import NamedTuple

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax, random, tree_util

from corpus import Case, vec

X = vec(900, 5, 3)
Y = vec(901, 5)
V3 = vec(902, 3)


# --- Stateful computations ---------------------------------------------------------------------
class CounterV2:
    """the tutorial's counter with its state passed in and out"""

    def count(self, n):
        return n + 1, n + 1

    def reset(self):
        return 0


def jd_counter_state(w):
    counter = CounterV2()
    state = counter.reset()
    total = 0.0
    for _ in range(3):
        value, state = counter.count(state)
        total = total + value * jnp.sum(jnp.sin(w * value))
    return total


class LinearState(NamedTuple):
    params: jnp.ndarray
    count: int


def jd_state_namedtuple(w, x, y):
    """an update that returns a new state (the tutorial's linear regression), three steps"""
    def loss(params, x, y):
        return jnp.mean((x @ params - y) ** 2)

    def update(state, x, y):
        g = jax.grad(loss)(state.params, x, y)
        return LinearState(state.params - 0.1 * g, state.count + 1)

    state = LinearState(w, 0)
    for _ in range(3):
        state = update(state, x, y)
    return loss(state.params, x, y) * state.count


def jd_prng_threading(w):
    key = random.PRNGKey(0)
    total = 0.0
    for _ in range(3):
        key, subkey = random.split(key)
        noise = random.normal(subkey, w.shape)
        total = total + jnp.sum(jnp.tanh(w + 0.1 * noise) ** 2)
    return total


def jd_prng_split_many(w):
    keys = random.split(random.PRNGKey(42), 4)
    samples = jnp.stack([random.uniform(k, w.shape, minval=-0.1, maxval=0.1) for k in keys])
    return jnp.mean(jnp.sum(jnp.cos(w[None, :] + samples), axis=1))


# --- Advanced autodiff: Hessian-vector products four ways ---------------------------------------
def _f(x):
    return jnp.sum(jnp.sin(x) * x ** 2) + jnp.prod(jnp.cos(x))


def hvp_fwd_rev(f, primals, tangents):
    return jax.jvp(jax.grad(f), primals, tangents)[1]


def hvp_rev_fwd(f, primals, tangents):
    g = lambda primals: jax.jvp(f, primals, tangents)[1]
    return jax.grad(g)(primals)


def hvp_rev_rev(f, x, v):
    return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)


def jd_hvp_fwd_over_rev(x):
    return jnp.sum(hvp_fwd_rev(_f, (x,), (V3,)) ** 2)


def jd_hvp_rev_over_fwd(x):
    (h,) = hvp_rev_fwd(_f, (x,), (V3,))
    return jnp.sum(h * jnp.cos(x))


def jd_hvp_rev_over_rev(x):
    return jnp.sum(jnp.tanh(hvp_rev_rev(_f, x, V3)))


def jd_hvp_by_hessian_matrix(x):
    h = jax.jacfwd(jax.jacrev(_f))(x)
    return V3 @ h @ V3 + jnp.trace(h)


def _g(x):
    return jnp.stack([x[0] * x[1], jnp.sin(x[1] * x[2]), jnp.exp(0.3 * x[0])])


def jd_jacobian_of_jacobian(x):
    jj = jax.jacfwd(jax.jacrev(_g))(x)                 # (3, 3, 3)
    return jnp.sum(jj * jnp.arange(27.0).reshape(3, 3, 3) / 27.0)


def jd_linearize(x):
    y, f_jvp = jax.linearize(_g, x)
    return jnp.sum(y) + jnp.sum(f_jvp(V3) ** 2)


def jd_vjp_cotangent(x):
    y, f_vjp = jax.vjp(_g, x)
    (ct,) = f_vjp(jnp.ones_like(y))
    return jnp.sum(ct * x) + jnp.sum(y ** 2)


# --- stop_gradient tricks ----------------------------------------------------------------------------
def jd_logsumexp_shift(x):
    """the max shift behind stop_gradient: the gradient is the unshifted one"""
    m = lax.stop_gradient(jnp.max(x))
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


def jd_normalized_by_detached_norm(x):
    """a scale computed behind stop_gradient at the point differentiated"""
    return jnp.sum(x ** 3) / lax.stop_gradient(jnp.sum(x ** 2))


def _normalized_frozen(x):
    return jnp.sum(x ** 3) / float(np.sum(V3 ** 2))


def jd_per_example_grads(w, x, y):
    """vmap(grad) per example, then the mean squared norm of the per-example gradients"""
    def loss(w, xi, yi):
        return (jnp.tanh(xi @ w) - yi) ** 2
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, x, y)
    return jnp.mean(jnp.sum(per_example ** 2, axis=1))


# --- custom rules ---------------------------------------------------------------------------------------
@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def jd_clip_gradient(w):
    """the cookbook's clip_gradient, its bounds outside the cotangents here (sin's: |g| <= 1)"""
    return jnp.sum(jnp.sin(clip_gradient(-5.0, 5.0, w)))


@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
    return ans, ans_dot


def jd_log1pexp(x):
    return jnp.sum(log1pexp(3.0 * x) * x)


@jax.custom_jvp
def my_logsumexp(x):
    m = jnp.max(x)
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


@my_logsumexp.defjvp
def _my_logsumexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    ans = my_logsumexp(x)
    return ans, jnp.sum(jnp.exp(x - ans) * t)


def jd_custom_logsumexp(x):
    return my_logsumexp(x) + my_logsumexp(2.0 * x) ** 2


def jd_checkpoint_chain(x):
    @jax.checkpoint
    def g(x):
        y = jnp.sin(x)
        z = jnp.sin(y)
        return z

    for _ in range(3):
        x = g(x) + 0.5 * x
    return jnp.sum(x ** 2)


def jd_vg_has_aux(w, x, y):
    def loss(w):
        pred = x @ w
        return jnp.mean((pred - y) ** 2), {"pred": pred, "norm": jnp.sum(w ** 2)}
    (val, aux), g = jax.value_and_grad(loss, has_aux=True)(w)
    return val + 0.1 * aux["norm"] + jnp.sum(g * aux["pred"][:3])


# --- Pytrees ------------------------------------------------------------------------------------------
@tree_util.register_pytree_node_class
class Affine:
    def __init__(self, weight, bias):
        self.weight = weight
        self.bias = bias

    def tree_flatten(self):
        return (self.weight, self.bias), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __call__(self, x):
        return x @ self.weight + self.bias


def jd_pytree_class_arg(layer, x):
    """the differentiated argument is itself an instance of a registered class"""
    return jnp.sum(jnp.tanh(layer(x)) ** 2)


def jd_tree_map_nested(params, x):
    """the tutorial's MLP: a list of dicts, an SGD step by tree_map, the loss after it"""
    def forward(params, x):
        *hidden, last = params
        for layer in hidden:
            x = jax.nn.relu(x @ layer["weights"] + layer["biases"])
        return x @ last["weights"] + last["biases"]

    def loss_fn(params, x):
        return jnp.mean(forward(params, x) ** 2)

    grads = jax.grad(loss_fn)(params, x)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
    return loss_fn(params, x)


def jd_none_leaves(params, x):
    """a bias left out as None: tree_map passes over it"""
    def layer(p, x):
        out = x @ p["w"]
        return out if p["b"] is None else out + p["b"]
    h = jnp.tanh(layer(params["l1"], x))
    scaled = tree_util.tree_map(lambda a: 0.5 * a, params["l2"])
    return jnp.sum(layer(scaled, h) ** 2)


def jd_tree_transpose(rows):
    """a list of dicts turned into a dict of lists by tree_transpose"""
    outer = tree_util.tree_structure([0, 0, 0])
    inner = tree_util.tree_structure({"a": 0, "b": 0})
    cols = tree_util.tree_transpose(outer, inner, rows)
    return sum(jnp.sum(a * b) for a, b in zip(cols["a"], cols["b"])) + jnp.sum(cols["a"][0] ** 3)


def jd_tree_with_path(params):
    """weight decay on the leaves whose key is "w" only (tree_map_with_path)"""
    def decay(path, leaf):
        return 0.1 * jnp.sum(leaf ** 2) if path[-1].key == "w" else 0.0 * jnp.sum(leaf)
    penalties = tree_util.tree_leaves(tree_util.tree_map_with_path(decay, params))
    fit = jnp.sum(jnp.sin(params["layer"]["w"]) * params["layer"]["b"])
    return fit + sum(penalties)


@functools.partial(tree_util.register_dataclass, data_fields=["mu", "log_sigma"],
                   meta_fields=["n"])
@dataclasses.dataclass
class Gaussian:
    mu: jnp.ndarray
    log_sigma: jnp.ndarray
    n: int


def jd_registered_dataclass(mu, x):
    dist = Gaussian(mu, 0.1 * mu, 3)
    z = (x[:dist.n, 0] - dist.mu) / jnp.exp(dist.log_sigma)
    return jnp.sum(0.5 * z ** 2 + dist.log_sigma)


def jd_tree_reduce_flatten(params):
    leaves, treedef = tree_util.tree_flatten(params)
    leaves = [jnp.tanh(l) for l in leaves]
    params = tree_util.tree_unflatten(treedef, leaves)
    return tree_util.tree_reduce(lambda a, b: a + jnp.sum(b ** 2), params, 0.0)


def _affine():
    return Affine(vec(903, 3, 2), vec(904, 2))


CASES = [
    Case("jd_counter_state", jd_counter_state, (V3,)),
    Case("jd_state_namedtuple", jd_state_namedtuple, (V3, X, Y)),
    Case("jd_prng_threading", jd_prng_threading, (V3,)),
    Case("jd_prng_split_many", jd_prng_split_many, (V3,)),
    Case("jd_hvp_fwd_over_rev", jd_hvp_fwd_over_rev, (vec(905, 3),)),
    Case("jd_hvp_rev_over_fwd", jd_hvp_rev_over_fwd, (vec(906, 3),)),
    Case("jd_hvp_rev_over_rev", jd_hvp_rev_over_rev, (vec(907, 3),)),
    Case("jd_hvp_by_hessian_matrix", jd_hvp_by_hessian_matrix, (vec(908, 3),)),
    Case("jd_jacobian_of_jacobian", jd_jacobian_of_jacobian, (vec(909, 3),)),
    Case("jd_linearize", jd_linearize, (vec(910, 3),)),
    Case("jd_vjp_cotangent", jd_vjp_cotangent, (vec(911, 3),)),
    Case("jd_logsumexp_shift", jd_logsumexp_shift, (vec(912, 6),)),
    Case("jd_normalized_by_detached_norm", jd_normalized_by_detached_norm, (V3,),
         ref=_normalized_frozen, vmappable=False),
    Case("jd_per_example_grads", jd_per_example_grads, (V3, X, Y)),
    Case("jd_clip_gradient", jd_clip_gradient, (vec(913, 4),)),
    Case("jd_log1pexp", jd_log1pexp, (vec(914, 4),)),
    Case("jd_custom_logsumexp", jd_custom_logsumexp, (vec(915, 5),)),
    Case("jd_checkpoint_chain", jd_checkpoint_chain, (vec(916, 4),)),
    Case("jd_vg_has_aux", jd_vg_has_aux, (V3, X, Y)),
    Case("jd_pytree_class_arg", jd_pytree_class_arg, (_affine(), X)),
    Case("jd_tree_map_nested", jd_tree_map_nested,
         ([{"weights": vec(917, 3, 4), "biases": vec(918, 4)},
           {"weights": vec(919, 4, 2), "biases": vec(920, 2)}], X)),
    Case("jd_none_leaves", jd_none_leaves,
         ({"l1": {"w": vec(921, 3, 4), "b": None}, "l2": {"w": vec(922, 4, 2), "b": vec(923, 2)}},
          X)),
    Case("jd_tree_transpose", jd_tree_transpose,
         ([{"a": vec(924 + i, 2), "b": vec(930 + i, 2)} for i in range(3)],)),
    Case("jd_tree_with_path", jd_tree_with_path,
         ({"layer": {"w": vec(936, 3), "b": vec(937, 3)}, "head": {"w": vec(938, 2)}},)),
    Case("jd_registered_dataclass", jd_registered_dataclass, (V3, X)),
    Case("jd_tree_reduce_flatten", jd_tree_reduce_flatten,
         ({"a": vec(939, 3), "b": [vec(940, 2, 2), vec(941, 1)]},)),
]
