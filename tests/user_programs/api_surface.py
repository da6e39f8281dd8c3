"""The sixth battery (issue 15, explore15o): the JAX API itself as users combine it. lax control
flow (cond with pytree operands, switch of lambdas, while_loop, fori_loop, scan reversed, of a
length without xs, unrolled, over a dict carry, lax.map, associative_scan, cond in scan,
fori in while), custom_jvp/custom_vjp (defjvps, nondiff_argnums, pytree arguments, closures,
stop_gradient in a rule), the function transforms called inside a program (linearize,
linear_transpose, vjp/jvp/value_and_grad/jacfwd/jacrev with has_aux, argnums tuples, dict
outputs, hessian of a dict, eval_shape, checkpoint with static_argnums and a policy,
named_scope), vmap's arguments (in_axes dicts, negative axes, out_axes, axis_size, a None
leaf, axis_name with psum/pmean/axis_index), jax.random in vmap and scan, jnp.vectorize,
piecewise, select, tree_util (is_leaf, tree_reduce, structure/unflatten, Partial) and
lax.reduce / dot_general / conv. Each program is a scalar loss of its first argument.

JAX refuses reverse mode of a while_loop (cf_while_*, cf_fori_in_while); secant differentiates
it, so those programs are judged against central differences like the rest."""
import functools

import numpy as onp

import secant as jax
import secant.numpy as jnp
from secant import lax, random
from secant import tree_util as tu

from corpus import Case, vec

W3 = vec(1501, 3)
W33 = vec(1502, 3, 3) * 0.6
X = vec(1503, 5, 3)
Y = vec(1504, 5)
KEY = random.PRNGKey(7)


# --- lax control flow ---------------------------------------------------------------------------
def cf_cond_pytree_operands(w, x):
    def yes(ops):
        a, d = ops
        return jnp.sum(jnp.tanh(d["x"] @ a)) + d["s"]

    def no(ops):
        a, d = ops
        return jnp.sum((d["x"] @ a) ** 2) - d["s"]
    return lax.cond(jnp.sum(w) > 0.0, yes, no, (w, {"x": x, "s": jnp.sum(w ** 2)}))


def cf_switch_lambdas(w, x):
    idx = jnp.clip(jnp.floor(jnp.sum(jnp.abs(w)) * 2.0).astype(jnp.int32), 0, 2)
    branches = [lambda a: jnp.sum(jnp.sin(x @ a)),
                lambda a: jnp.sum(jnp.cos(x @ a)) * 2.0,
                lambda a: jnp.sum((x @ a) ** 3)]
    return lax.switch(idx, branches, w)


def cf_while_tuple_carry(w, x):
    def cond(c):
        i, _ = c
        return i < 3

    def body(c):
        i, h = c
        return i + 1, jnp.tanh(x.T @ (x @ h) * 0.3 + h)
    _, h = lax.while_loop(cond, body, (0, w))
    return jnp.sum(h ** 2)


def cf_fori_dict_carry(w, x):
    def body(i, c):
        h = jnp.tanh(x @ c["w"])
        return {"w": c["w"] - 0.1 * (x.T @ h), "loss": c["loss"] + jnp.sum(h ** 2)}
    out = lax.fori_loop(0, 3, body, {"w": w, "loss": 0.0})
    return out["loss"] + jnp.sum(out["w"])


def cf_scan_reverse(w, x):
    def step(h, xt):
        h = jnp.tanh(h * w + xt)
        return h, jnp.sum(h)
    h, ys = lax.scan(step, jnp.zeros(3), x, reverse=True)
    return jnp.sum(ys * jnp.arange(1.0, 6.0)) + jnp.sum(h)


def cf_scan_length_no_xs(w, x):
    def step(h, _):
        h = jnp.sin(h) + 0.5 * w
        return h, h[0]
    h, ys = lax.scan(step, w, None, length=4)
    return jnp.sum(h ** 2) + jnp.sum(ys)


def cf_scan_unroll(w, x):
    def step(c, xt):
        return c + jnp.tanh(xt @ w), c
    c, cs = lax.scan(step, 0.0, x, unroll=2)
    return c ** 2 + jnp.sum(cs)


def cf_lax_map(w, x):
    return jnp.sum(lax.map(lambda r: jnp.tanh(r @ w) * r[0], x))


def cf_associative_scan(w, x):
    h = jnp.exp(0.3 * (x @ w))
    prods = lax.associative_scan(jnp.multiply, h)
    sums = lax.associative_scan(lambda a, b: a + b, x @ w, reverse=True)
    return jnp.sum(prods) + jnp.sum(sums ** 2)


def cf_scan_dict_carry(w, x):
    def step(c, xt):
        h = jnp.tanh(xt * c["w"] + c["b"])
        return {"w": c["w"] * 0.9 + 0.1 * h, "b": c["b"] + jnp.mean(h)}, h
    c, hs = lax.scan(step, {"w": w, "b": jnp.zeros(())}, x)
    return jnp.sum(c["w"]) + c["b"] + jnp.sum(hs ** 2)


def cf_cond_in_scan(w, x):
    def step(h, xt):
        h = lax.cond(jnp.sum(xt) > 0.0, lambda a: jnp.tanh(a + xt * w),
                     lambda a: a * 0.5 - w, h)
        return h, jnp.sum(h ** 2)
    _, ys = lax.scan(step, w, x)
    return jnp.sum(ys)


def cf_fori_in_while(w, x):
    def inner(j, h):
        return h + 0.1 * jnp.sin(h * (j + 1))

    def body(c):
        k, h = c
        return k + 1, lax.fori_loop(0, 2, inner, h)
    _, h = lax.while_loop(lambda c: c[0] < 2, body, (0, w))
    return jnp.sum(h ** 2)


def cf_scan_tuple_ys(w, x):
    def step(c, xt):
        z = xt @ w
        return c + z, (z, jnp.tanh(z) * xt)
    c, (zs, hs) = lax.scan(step, 0.0, x)
    return c + jnp.sum(zs ** 2) + jnp.sum(hs)


def cf_fori_traced_bound(w, x):
    n, xs = x.shape[0], jnp.asarray(x)

    def body(i, acc):
        return acc + jnp.tanh(xs[i] @ w) * (i + 1)
    return lax.fori_loop(0, n, body, 0.0)


def cf_while_convergence(w, x):
    """Newton for the root of t^3 + t - s, s from w; the while loop counts to a tolerance"""
    s = jnp.sum(w * w) + 0.5

    def cond(c):
        t, k = c
        return (jnp.abs(t ** 3 + t - s) > 1e-12) & (k < 50)

    def body(c):
        t, k = c
        return t - (t ** 3 + t - s) / (3 * t ** 2 + 1), k + 1
    t, _ = lax.while_loop(cond, body, (jnp.ones(()), 0))
    return t + jnp.sum(w)


# --- custom rules -------------------------------------------------------------------------------
@jax.custom_jvp
def _softclip(x):
    return jnp.tanh(x) * 2.0


_softclip.defjvps(lambda t, ans, x: t * 2.0 * (1 - jnp.tanh(x) ** 2))


def cr_custom_jvp_defjvps(w, x):
    return jnp.sum(_softclip(x @ w) ** 2)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _apply_power(p, x):
    return x ** p


@_apply_power.defjvp
def _apply_power_jvp(p, primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** p, p * x ** (p - 1) * t


def cr_custom_jvp_nondiff(w, x):
    return jnp.sum(_apply_power(3, x @ w)) + jnp.sum(_apply_power(2, w))


@jax.custom_vjp
def _dict_energy(p):
    return jnp.sum(p["a"] ** 2) * jnp.sum(jnp.cos(p["b"]))


def _dict_energy_fwd(p):
    return _dict_energy(p), p


def _dict_energy_bwd(p, g):
    sa, cb = jnp.sum(p["a"] ** 2), jnp.sum(jnp.cos(p["b"]))
    return ({"a": g * 2 * p["a"] * cb, "b": -g * sa * jnp.sin(p["b"])},)


_dict_energy.defvjp(_dict_energy_fwd, _dict_energy_bwd)


def cr_custom_vjp_pytree(w, x):
    return _dict_energy({"a": w, "b": x[0] * jnp.sum(w)})


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _scaled_sq(x, k):
    return k * x ** 2


def _scaled_sq_fwd(x, k):
    return _scaled_sq(x, k), x


def _scaled_sq_bwd(k, x, g):
    return (g * 2 * k * x,)


_scaled_sq.defvjp(_scaled_sq_fwd, _scaled_sq_bwd)


def cr_custom_vjp_nondiff(w, x):
    return jnp.sum(_scaled_sq(x @ w, 3.0))


SCALE = onp.sum(X ** 2, axis=0)


def cr_custom_jvp_closure(w, x):
    scale = SCALE * 0.5

    @jax.custom_jvp
    def f(v):
        return jnp.sum(scale * jnp.sin(v))

    @f.defjvp
    def f_jvp(primals, tangents):
        (v,), (t,) = primals, tangents
        return f(v), jnp.sum(scale * jnp.cos(v) * t)
    return f(w) + f(w * w)


@jax.custom_vjp
def _clip_grad(x):
    return x


def _clip_grad_fwd(x):
    return x, jnp.ones_like(x)


def _clip_grad_bwd(ones, g):
    return (jnp.clip(g, -1.0, 1.0) * lax.stop_gradient(ones),)


_clip_grad.defvjp(_clip_grad_fwd, _clip_grad_bwd)


def cr_custom_vjp_stop_gradient(w, x):
    return jnp.sum(jnp.sin(_clip_grad(x @ w) * 0.5))


@jax.custom_jvp
def _logsumexp_stable(v):
    m = lax.stop_gradient(jnp.max(v))
    return m + jnp.log(jnp.sum(jnp.exp(v - m)))


@_logsumexp_stable.defjvp
def _lse_jvp(primals, tangents):
    (v,), (t,) = primals, tangents
    out = _logsumexp_stable(v)
    return out, jnp.sum(jnp.exp(v - out) * t)


def cr_custom_jvp_in_scan(w, x):
    def step(c, xt):
        return c + _logsumexp_stable(xt * w), None
    c, _ = lax.scan(step, 0.0, x)
    return c


# --- function transforms called inside ------------------------------------------------------------
def ft_linearize(w, x):
    y, f_jvp = jax.linearize(lambda v: jnp.tanh(x @ v), w)
    return jnp.sum(y) + jnp.sum(f_jvp(jnp.ones(3)) ** 2)


def ft_linear_transpose(w, x):
    f_t = jax.linear_transpose(lambda v: x @ v, jnp.zeros(3))
    (back,) = f_t(jnp.tanh(x @ w))
    return jnp.sum(back * w)


def ft_vjp_has_aux(w, x):
    def f(v):
        z = x @ v
        return jnp.tanh(z), {"z": z}
    y, pull, aux = jax.vjp(f, w, has_aux=True)
    (g,) = pull(jnp.ones_like(y))
    return jnp.sum(g * w) + jnp.sum(aux["z"] ** 2)


def ft_jvp_pytree(w, x):
    def f(p):
        return jnp.sum(jnp.sin(x @ p["a"]) * p["b"])
    y, dy = jax.jvp(f, ({"a": w, "b": jnp.ones(5)},), ({"a": jnp.ones(3), "b": x[:, 0]},))
    return y + dy ** 2


def ft_value_and_grad_aux_argnums(w, x):
    def loss(a, b):
        r = x @ a + b
        return jnp.mean(r ** 2), jnp.max(r)
    (v, mx), (ga, gb) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, 0.3)
    return v + mx + jnp.sum(ga ** 2) + gb


def ft_jacfwd_has_aux(w, x):
    def f(v):
        z = jnp.tanh(x @ v)
        return z, jnp.sum(z)
    jac, s = jax.jacfwd(f, has_aux=True)(w)
    return jnp.sum(jac ** 2) + s


def ft_jacrev_dict_out(w, x):
    def f(v):
        return {"lin": x @ v, "sq": v ** 2}
    j = jax.jacrev(f)(w)
    return jnp.sum(j["lin"] * x) + jnp.sum(jnp.diag(j["sq"]))


def ft_hessian_dict_params(w, x):
    def f(p):
        return jnp.sum(jnp.tanh(x @ p["w"]) * p["c"]) + jnp.sum(p["w"] ** 4)
    h = jax.hessian(f)({"w": w, "c": 0.5})
    return jnp.sum(h["w"]["w"] * jnp.eye(3)) + jnp.sum(h["w"]["c"])


def ft_eval_shape(w, x):
    spec = jax.eval_shape(lambda a, b: b @ a, w, x)
    out = jnp.zeros(spec.shape, spec.dtype)
    return jnp.sum((out + x @ w) ** 2) * spec.shape[0]


def _block(h, depth):
    for _ in range(depth):
        h = jnp.tanh(h) * 1.1
    return h


def ft_checkpoint_static(w, x):
    f = jax.checkpoint(_block, static_argnums=(1,))
    return jnp.sum(f(x @ w, 2) ** 2)


def ft_checkpoint_policy(w, x):
    @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable)
    def layer(v, h):
        return jnp.sin(h * v)
    return jnp.sum(layer(w, layer(w, x)))


def ft_named_scope(w, x):
    with jax.named_scope("encoder"):
        h = jnp.tanh(x @ W33 * w)
    with jax.named_scope("head"):
        out = jnp.sum(h ** 2)
    return out


def ft_grad_inside_vmap_inside(w, x):
    per = jax.vmap(jax.grad(lambda v, r: jnp.tanh(r @ v)), in_axes=(None, 0))(w, x)
    return jnp.sum(per ** 2)


# --- vmap's arguments -------------------------------------------------------------------------------
def vm_in_axes_dict(w, x):
    def f(p):
        return jnp.tanh(p["x"] @ p["w"])
    out = jax.vmap(f, in_axes=({"x": 0, "w": None},))({"x": x, "w": w})
    return jnp.sum(out ** 2)


def vm_negative_axes(w, x):
    out = jax.vmap(lambda col, v: col * v, in_axes=(-1, 0), out_axes=-1)(x, w)
    return jnp.sum(jnp.sin(out) * jnp.arange(15.0).reshape(5, 3))


def vm_out_axes_tuple(w, x):
    a, b = jax.vmap(lambda r: (r * w, jnp.sum(r * w)), out_axes=(1, 0))(x)
    return jnp.sum(a[0] ** 2) + jnp.sum(jnp.tanh(b))


def vm_axis_size(w, x):
    out = jax.vmap(lambda v: jnp.sin(v), in_axes=None, axis_size=4)(w)
    return jnp.sum(out * jnp.arange(4.0)[:, None])


def vm_vmap_of_vmap_axes(w, x):
    f = lambda a, b: jnp.tanh(a * b)
    out = jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(None, 1))(x[:, 0], w * x[:3].T)
    return jnp.sum(out ** 2)


def vm_none_leaf(w, x):
    def f(p):
        extra = 0.0 if p["skip"] is None else p["skip"]
        return jnp.sum(p["h"] * w) + extra
    out = jax.vmap(f)({"h": x, "skip": None})
    return jnp.sum(jnp.tanh(out))


def vm_axis_name_psum(w, x):
    def normalise(r):
        z = jnp.exp(r @ w)
        return z / lax.psum(z, "batch")
    return jnp.sum(jax.vmap(normalise, axis_name="batch")(x) * jnp.arange(5.0))


def vm_axis_name_pmean(w, x):
    def centre(r):
        z = r * w
        return z - lax.pmean(z, axis_name="i")
    return jnp.sum(jax.vmap(centre, axis_name="i")(x) ** 2)


def vm_axis_index(w, x):
    def f(r):
        k = lax.axis_index("rows")
        return jnp.sum(r * w) * (k + 1.0)
    return jnp.sum(jnp.sin(jax.vmap(f, axis_name="rows")(x)))


def vm_spmd_axis_name(w, x):
    out = jax.vmap(lambda r: jnp.tanh(r @ w), spmd_axis_name="data")(x)
    return jnp.sum(out ** 2)


# --- jax.random ---------------------------------------------------------------------------------------
def rn_split_in_vmap(w, x):
    keys = random.split(KEY, 5)
    noise = jax.vmap(lambda k: random.normal(k, (3,)))(keys)
    return jnp.sum(jnp.tanh((x + 0.1 * noise) @ w))


def rn_fold_in_scan(w, x):
    def step(c, i):
        k = random.fold_in(KEY, i)
        eps = random.normal(k, w.shape)
        return c + jnp.sum(jnp.sin(w + 0.05 * eps)), None
    c, _ = lax.scan(step, 0.0, jnp.arange(4))
    return c


def rn_categorical(w, x):
    logits = x @ w
    idx = random.categorical(random.PRNGKey(3), lax.stop_gradient(logits), shape=(6,))
    return jnp.sum(jax.nn.log_softmax(logits)[idx])


def rn_normal_shape_from_arg(w, x):
    eps = random.normal(KEY, (x.shape[0], w.shape[0]))
    return jnp.mean(jnp.sum((x + eps * 0.1) * w, axis=1) ** 2)


def rn_uniform_dropout(w, x):
    keep = random.bernoulli(random.PRNGKey(11), 0.7, x.shape)
    h = jnp.where(keep, x / 0.7, 0.0)
    return jnp.sum(jnp.tanh(h @ w) ** 2)


# --- numpy API ----------------------------------------------------------------------------------------------
def np_vectorize_signature(w, x):
    dot = jnp.vectorize(lambda a, b: jnp.sum(a * b), signature="(n),(n)->()")
    return jnp.sum(jnp.tanh(dot(x, w)))


def np_piecewise(w, x):
    z = x @ w
    out = jnp.piecewise(z, [z < -0.3, z > 0.3], [lambda t: -t ** 2, lambda t: t ** 3, 0.5])
    return jnp.sum(out) + jnp.sum(w ** 2)


def np_select(w, x):
    z = x @ w
    out = jnp.select([z < 0.0, z < 0.5], [jnp.sin(z), z ** 2], default=jnp.exp(z))
    return jnp.sum(out)


def np_where_three(w, x):
    z = x @ w
    return jnp.sum(jnp.where(z > 0.0, jnp.log1p(z ** 2), -z)) + jnp.sum(jnp.where(w > 0, w, 0.0))


def np_vectorize_plain(w, x):
    f = jnp.vectorize(lambda a, b: jnp.sin(a) * b)
    return jnp.sum(f(x, w))


# --- tree_util ------------------------------------------------------------------------------------------------
def tu_tree_map_is_leaf(w, x):
    params = {"l1": (w, 0.5), "l2": (w * 2.0, -0.3)}
    out = tu.tree_map(lambda pair: jnp.sum(jnp.tanh(x @ pair[0]) * pair[1]), params,
                      is_leaf=lambda n: isinstance(n, tuple))
    return out["l1"] + out["l2"]


def tu_tree_reduce(w, x):
    tree = {"a": w, "b": [x @ w, w ** 2]}
    return tu.tree_reduce(lambda acc, leaf: acc + jnp.sum(jnp.sin(leaf)), tree, 0.0)


def tu_structure_unflatten(w, x):
    p = {"w": w, "b": jnp.ones(5)}
    leaves, treedef = tu.tree_flatten(p)
    struct = tu.tree_structure(p)
    assert struct == treedef
    q = tu.tree_unflatten(struct, [leaf * 0.5 for leaf in leaves])
    return jnp.sum(jnp.tanh(x @ q["w"] + q["b"]))


def _affine(a, b, v):
    return jnp.tanh(a @ v + b)


def tu_partial(w, x):
    f = tu.Partial(_affine, x, 0.1)
    g = tu.Partial(jnp.multiply, 2.0)
    return jnp.sum(g(f(w)) ** 2)


def tu_jax_tree_leaves_all(w, x):
    p = {"a": w, "b": (x @ w, {"c": w[0]})}
    return sum(jnp.sum(leaf ** 2) for leaf in jax.tree.leaves(p)) + \
        jnp.sum(jax.tree.map(lambda t: t * 2.0, p)["b"][0])


# --- lax ops --------------------------------------------------------------------------------------------------
def lx_reduce(w, x):
    z = x * w
    s = lax.reduce(z, 0.0, lax.add, (0,))
    m = lax.reduce(z, -jnp.inf, lax.max, (1,))
    return jnp.sum(s ** 2) + jnp.sum(m)


def lx_dot_general(w, x):
    a = jnp.stack([x, x * 0.5])                      # (2, 5, 3)
    b = jnp.stack([W33 * w, W33.T * w])              # (2, 3, 3)
    out = lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))
    return jnp.sum(jnp.tanh(out))


def lx_conv(w, x):
    lhs = x.T[None]                                  # (1, 3, 5): N, C, W
    rhs = jnp.stack([w[:, None] * jnp.ones((3, 2)), jnp.ones((3, 2)) * 0.1])   # (2, 3, 2)
    out = lax.conv(lhs, rhs, (1,), "VALID")
    return jnp.sum(jnp.tanh(out) ** 2)


def lx_select_clamp(w, x):
    z = x @ w
    return jnp.sum(lax.select(z > 0.0, lax.clamp(-0.5, z, 0.5), z * 0.1)) + \
        jnp.sum(lax.integer_pow(w, 3))


def lx_cumulative(w, x):
    z = x @ w
    return jnp.sum(lax.cumsum(z) ** 2) + jnp.sum(lax.cumprod(1.0 + 0.1 * z)) + \
        jnp.sum(lax.cummax(z))


CASES = [
    Case("cf_cond_pytree_operands", cf_cond_pytree_operands, (W3, X)),
    Case("cf_switch_lambdas", cf_switch_lambdas, (W3, X)),
    Case("cf_while_tuple_carry", cf_while_tuple_carry, (W3, X)),
    Case("cf_fori_dict_carry", cf_fori_dict_carry, (W3, X)),
    Case("cf_scan_reverse", cf_scan_reverse, (W3, X)),
    Case("cf_scan_length_no_xs", cf_scan_length_no_xs, (W3, X)),
    Case("cf_scan_unroll", cf_scan_unroll, (W3, X)),
    Case("cf_lax_map", cf_lax_map, (W3, X)),
    Case("cf_associative_scan", cf_associative_scan, (W3, X)),
    Case("cf_scan_dict_carry", cf_scan_dict_carry, (W3, X)),
    Case("cf_cond_in_scan", cf_cond_in_scan, (W3, X)),
    Case("cf_fori_in_while", cf_fori_in_while, (W3, X)),
    Case("cf_scan_tuple_ys", cf_scan_tuple_ys, (W3, X)),
    Case("cf_fori_traced_bound", cf_fori_traced_bound, (W3, X)),
    Case("cf_while_convergence", cf_while_convergence, (W3, X)),
    Case("cr_custom_jvp_defjvps", cr_custom_jvp_defjvps, (W3, X)),
    Case("cr_custom_jvp_nondiff", cr_custom_jvp_nondiff, (W3, X)),
    Case("cr_custom_vjp_pytree", cr_custom_vjp_pytree, (W3, X)),
    Case("cr_custom_vjp_nondiff", cr_custom_vjp_nondiff, (W3, X)),
    Case("cr_custom_jvp_closure", cr_custom_jvp_closure, (W3, X)),
    Case("cr_custom_vjp_stop_gradient", cr_custom_vjp_stop_gradient, (W3, X)),
    Case("cr_custom_jvp_in_scan", cr_custom_jvp_in_scan, (W3, X)),
    Case("ft_linearize", ft_linearize, (W3, X)),
    Case("ft_linear_transpose", ft_linear_transpose, (W3, X)),
    Case("ft_vjp_has_aux", ft_vjp_has_aux, (W3, X)),
    Case("ft_jvp_pytree", ft_jvp_pytree, (W3, X)),
    Case("ft_value_and_grad_aux_argnums", ft_value_and_grad_aux_argnums, (W3, X)),
    Case("ft_jacfwd_has_aux", ft_jacfwd_has_aux, (W3, X)),
    Case("ft_jacrev_dict_out", ft_jacrev_dict_out, (W3, X)),
    Case("ft_hessian_dict_params", ft_hessian_dict_params, (W3, X)),
    Case("ft_eval_shape", ft_eval_shape, (W3, X)),
    Case("ft_checkpoint_static", ft_checkpoint_static, (W3, X)),
    Case("ft_checkpoint_policy", ft_checkpoint_policy, (W3, X)),
    Case("ft_named_scope", ft_named_scope, (W3, X)),
    Case("ft_grad_inside_vmap_inside", ft_grad_inside_vmap_inside, (W3, X)),
    Case("vm_in_axes_dict", vm_in_axes_dict, (W3, X)),
    Case("vm_negative_axes", vm_negative_axes, (W3, X)),
    Case("vm_out_axes_tuple", vm_out_axes_tuple, (W3, X)),
    Case("vm_axis_size", vm_axis_size, (W3, X)),
    Case("vm_vmap_of_vmap_axes", vm_vmap_of_vmap_axes, (W3, X)),
    Case("vm_none_leaf", vm_none_leaf, (W3, X)),
    Case("vm_axis_name_psum", vm_axis_name_psum, (W3, X)),
    Case("vm_axis_name_pmean", vm_axis_name_pmean, (W3, X)),
    Case("vm_axis_index", vm_axis_index, (W3, X)),
    Case("vm_spmd_axis_name", vm_spmd_axis_name, (W3, X)),
    Case("rn_split_in_vmap", rn_split_in_vmap, (W3, X)),
    Case("rn_fold_in_scan", rn_fold_in_scan, (W3, X)),
    Case("rn_categorical", rn_categorical, (W3, X)),
    Case("rn_normal_shape_from_arg", rn_normal_shape_from_arg, (W3, X)),
    Case("rn_uniform_dropout", rn_uniform_dropout, (W3, X)),
    Case("np_vectorize_signature", np_vectorize_signature, (W3, X)),
    Case("np_piecewise", np_piecewise, (W3, X)),
    Case("np_select", np_select, (W3, X)),
    Case("np_where_three", np_where_three, (W3, X)),
    Case("np_vectorize_plain", np_vectorize_plain, (W3, X)),
    Case("tu_tree_map_is_leaf", tu_tree_map_is_leaf, (W3, X)),
    Case("tu_tree_reduce", tu_tree_reduce, (W3, X)),
    Case("tu_structure_unflatten", tu_structure_unflatten, (W3, X)),
    Case("tu_partial", tu_partial, (W3, X)),
    Case("tu_jax_tree_leaves_all", tu_jax_tree_leaves_all, (W3, X)),
    Case("lx_reduce", lx_reduce, (W3, X)),
    Case("lx_dot_general", lx_dot_general, (W3, X)),
    Case("lx_conv", lx_conv, (W3, X)),
    Case("lx_select_clamp", lx_select_clamp, (W3, X)),
    Case("lx_cumulative", lx_cumulative, (W3, X)),
]

# (program, transform) pairs JAX itself refuses (secant must refuse them with a SecantError)
JAX_REFUSES = {
    **{(name, t): "forward mode of a custom_vjp function"
       for name in ("cr_custom_vjp_pytree", "cr_custom_vjp_nondiff") for t in ("jvp", "hessian")},
    ("cr_custom_vjp_stop_gradient", "jvp"): "forward mode of a custom_vjp function",
}
