"""More programs of the kinds the deep compositions battery (deep.py) found failing (deep15s):
dict merges, isinstance on parameters, custom_vjp with pytree arguments, lax.map over pytrees,
helpers calling helpers. Each is a scalar loss of its first argument, judged as the others are
(the kind, not the instance)."""
import functools

import numpy as np
from corpus import Case, vec

import secant as jax
import secant.numpy as jnp
from secant import lax

X = vec(1700, 4, 3)
Y = vec(1701, 4)
W3 = vec(1702, 3)
DEFAULTS = {"scale": 1.5, "shift": -0.2}


# --- dict merges ---------------------------------------------------------------------------------
def dm_literal_between(params, x):
    """{**a, "k": v, **b}: a literal key between two spreads, computed from the parameters"""
    cfg = {**DEFAULTS, "bias": params["w"][0] * 0.5, **params}
    h = jnp.tanh(x @ cfg["w"]) * cfg["scale"] + cfg["shift"] + cfg["bias"]
    return jnp.sum(h ** 2)


def dm_or_operator(params, x):
    """`DEFAULTS | params` and `|=` over a loop of updates"""
    p = DEFAULTS | params
    for k in sorted(p):
        if k != "w":
            p |= {k: p[k] * 1.1}
    return jnp.sum(jnp.sin(x @ p["w"]) * p["scale"]) + p["shift"] ** 2


def _with_defaults(p, **overrides):
    return {"shift": 0.1, **p, **overrides}


def dm_in_helper(params, x, y):
    """a helper merging defaults and keyword overrides"""
    p = _with_defaults(params, scale=params["w"][1] + 1.0)
    pred = (x @ p["w"]) * p["scale"] + p["shift"]
    return jnp.mean((pred - y) ** 2)


# --- isinstance on parameters --------------------------------------------------------------------
def _apply_layer(p, h):
    if isinstance(p, dict):
        return jnp.tanh(h * p["a"] + p["b"])
    if isinstance(p, tuple):
        a, b = p
        return jnp.sin(h * a) + b
    return h * p


def isinst_layers(params, x):
    """a stack of layers whose kind is read from the parameters' type, in a helper"""
    h = x @ W3
    for p in params:
        h = _apply_layer(p, h)
    return jnp.sum(h ** 2)


def isinst_dict_values(params, x):
    """a dict whose values are arrays or lists of arrays, told apart by isinstance"""
    total = 0.0
    for k in sorted(params):
        v = params[k]
        if isinstance(v, list):
            for u in v:
                total = total + jnp.sum(jnp.cos(x @ u))
        else:
            total = total + jnp.sum((x @ v) ** 2) * 0.1
    return total


# --- custom_vjp with pytree arguments ------------------------------------------------------------
@jax.custom_vjp
def _pair_energy(pair):
    a, b = pair
    return jnp.sum(a * b) + jnp.sum(jnp.sin(a))


def _pair_energy_fwd(pair):
    a, b = pair
    return jnp.sum(a * b) + jnp.sum(jnp.sin(a)), (a, b)


def _pair_energy_bwd(res, g):
    a, b = res
    return ((g * (b + jnp.cos(a)), g * a),)


_pair_energy.defvjp(_pair_energy_fwd, _pair_energy_bwd)


def cvjp_tuple_arg(w, x):
    """a custom_vjp function of a tuple, its residuals a tuple"""
    return _pair_energy((jnp.tanh(x @ w), x[:, 0] * w[1]))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _scaled_norm(p, k):
    return k * (jnp.sum(p["u"] ** 2) + p["v"] ** 2)


def _scaled_norm_fwd(p, k):
    return _scaled_norm(p, k), p


def _scaled_norm_bwd(k, p, g):
    return ({"u": 2 * k * g * p["u"], "v": 2 * k * g * p["v"]},)


_scaled_norm.defvjp(_scaled_norm_fwd, _scaled_norm_bwd)


def cvjp_dict_nondiff(w, x):
    """a custom_vjp function of a dict with a nondiff_argnums scale; fwd calls the function"""
    return _scaled_norm({"u": jnp.sin(x @ w), "v": w[0] * w[2]}, 0.5)


# --- lax.map over pytrees ------------------------------------------------------------------------
def map_dict_xs(w, x):
    """lax.map over a dict of arrays (one row of each per step), the body returning a tuple"""
    def body(r):
        s = jnp.tanh(r["a"] @ w)
        return s * r["b"], s ** 2
    ys, zs = lax.map(body, {"a": x, "b": x[:, 1]})
    return jnp.sum(ys) + jnp.sum(zs * 0.5)


def map_closed_dict(params, x):
    """lax.map whose body closes over a dict of parameters"""
    def row(r):
        return jnp.sin(r @ params["w"]) * params["g"]
    return jnp.sum(lax.map(row, x) ** 2)


# --- helpers calling helpers ---------------------------------------------------------------------
def _inner(h, w, k=2):
    return jnp.tanh(h * w[k])


def _middle(h, w):
    return _inner(h, w) + _inner(h, w, k=0) * 0.5


def _outer(x, w):
    h = x @ w
    for _ in range(2):
        h = _middle(h, w)
    return h


def nested_helpers3(w, x):
    """three levels of helpers, a keyword default, a loop calling one"""
    return jnp.sum(_outer(x, w) ** 2)


# --- gaps15t: custom rules with pytrees, generators and loops at fourth order --------------------
@jax.custom_jvp
def _dict_softplus(p):
    """softplus of a dict's leaves, summed: a custom_jvp of a dict, its tangent a dict"""
    return jnp.sum(jnp.log1p(jnp.exp(p["u"]))) + jnp.log1p(jnp.exp(p["v"]))


@_dict_softplus.defjvp
def _dict_softplus_jvp(primals, tangents):
    p, = primals
    t, = tangents
    s_u, s_v = jax.nn.sigmoid(p["u"]), jax.nn.sigmoid(p["v"])
    return _dict_softplus(p), jnp.sum(s_u * t["u"]) + s_v * t["v"]


def cjvp_dict_arg(w, x):
    """a custom_jvp function of a dict built from the parameters"""
    return _dict_softplus({"u": jnp.tanh(x @ w), "v": w[1] * w[2]})


@jax.custom_jvp
def _logdet_spd(a):
    return jnp.log(jnp.linalg.det(a))


@_logdet_spd.defjvp
def _logdet_spd_jvp(primals, tangents):
    a, = primals
    a_dot, = tangents
    return _logdet_spd(a), jnp.trace(jnp.linalg.solve(a, a_dot))


def cjvp_logdet_helper(w, x):
    """a custom_jvp whose rule calls linalg (solve) and whose function calls det, of a 3x3
    SPD matrix built from the parameters"""
    h = jnp.tanh(x @ jnp.diag(w))                  # (4, 3)
    a = h.T @ h + jnp.eye(3) * (1.0 + w[0] ** 2)
    return _logdet_spd(a) + 0.1 * jnp.sum(h ** 2)


@jax.custom_vjp
def _pair_stats(d):
    """a custom_vjp of a dict returning a tuple (two outputs), its residuals a dict"""
    return jnp.sum(d["a"] ** 2), jnp.sum(jnp.sin(d["a"]) * d["b"])


def _pair_stats_fwd(d):
    return _pair_stats(d), {"a": d["a"], "b": d["b"]}


def _pair_stats_bwd(res, g):
    g1, g2 = g
    return ({"a": 2 * g1 * res["a"] + g2 * jnp.cos(res["a"]) * res["b"],
             "b": g2 * jnp.sin(res["a"])},)


_pair_stats.defvjp(_pair_stats_fwd, _pair_stats_bwd)


def cvjp_tuple_out(w, x):
    """a custom_vjp with a tuple output, both outputs used"""
    m, s = _pair_stats({"a": x @ w, "b": jnp.cos(x[:, 0] * w[2])})
    return m * 0.3 + s ** 2


def gen_zip_layers(params, x):
    """a generator over zip of a list of (w, b) layers and Python scales"""
    h = x
    outs = []
    for (w, b), s in zip(params, (1.0, 0.5)):
        h = jnp.tanh(h @ w + b) * s
        outs.append(jnp.sum(h ** 2))
    return sum(o * (k + 1) for k, o in enumerate(outs))


def gen_dict_items(params, x):
    """a generator over a dict's sorted items, each a weight vector, inside a helper"""
    def term(k, w):
        return jnp.sum(jnp.cos(x @ w)) * (2.0 if k == "a" else 1.0)
    return sum(term(k, w) for k, w in sorted(params.items()))


def loop_list_rebuilt(ws, x):
    """a Python loop rebuilding a list of arrays each step (a list comprehension), then summed"""
    vs = list(ws)
    for _ in range(2):
        vs = [jnp.sin(v) + 0.1 * vs[0] for v in vs]
    return sum(jnp.sum((x @ v) ** 2) for v in vs)


CASES = [
    Case("dm_literal_between", dm_literal_between, ({"w": W3, "shift": np.array(0.3)}, X)),
    Case("dm_or_operator", dm_or_operator, ({"w": W3, "scale": np.array(0.7)}, X)),
    Case("dm_in_helper", dm_in_helper, ({"w": W3}, X, Y)),
    Case("isinst_layers", isinst_layers,
         ([{"a": np.array(0.8), "b": np.array(0.1)}, (np.array(1.2), np.array(-0.3)),
           np.array(0.9)], X)),
    Case("isinst_dict_values", isinst_dict_values,
         ({"a": [W3, W3 * 0.5], "b": vec(1703, 3)}, X)),
    Case("cvjp_tuple_arg", cvjp_tuple_arg, (W3, X)),
    Case("cvjp_dict_nondiff", cvjp_dict_nondiff, (W3, X)),
    Case("map_dict_xs", map_dict_xs, (W3, X)),
    Case("map_closed_dict", map_closed_dict, ({"w": W3, "g": np.array(1.3)}, X)),
    Case("nested_helpers3", nested_helpers3, (W3, X)),
    Case("cjvp_dict_arg", cjvp_dict_arg, (W3, X)),
    Case("cjvp_logdet_helper", cjvp_logdet_helper, (W3, X)),
    Case("cvjp_tuple_out", cvjp_tuple_out, (W3, X)),
    Case("gen_zip_layers", gen_zip_layers,
         ([(vec(1704, 3, 3), vec(1705, 3)), (vec(1706, 3, 2), vec(1707, 2))], X)),
    Case("gen_dict_items", gen_dict_items, ({"a": W3, "b": vec(1708, 3)}, X)),
    Case("loop_list_rebuilt", loop_list_rebuilt, ([W3, vec(1709, 3)], X)),
]
