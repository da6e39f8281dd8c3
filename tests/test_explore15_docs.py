"""Issue 15, a new user coming from JAX: small programs in the style of the autodiff cookbook,
the sharp-bits page, custom derivative rules and stateful computations, written as JAX users
write them (`import secant as jax`), run under grad, jit(grad), vmap, vmap(grad) and jacfwd(grad);
checked against float64 central differences, closed forms, NumPy or a Python loop."""
import collections
import functools

import numpy as np
import pytest

import secant as jax
import secant.numpy as jnp
from secant import lax, random

from others15_check import (assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp,
                            to_np, to_snp)

RNG = np.random.default_rng(2015)


# --- autodiff cookbook -------------------------------------------------------------------------

def energy(x):
    return jnp.sum(jnp.sin(x) * x ** 2) + jnp.dot(x, x) ** 2 / 4


def energy_hessian(x):
    x = np.asarray(x)
    d2 = (2 - x ** 2) * np.sin(x) + 4 * x * np.cos(x)
    s = x @ x
    return np.diag(d2) + 2 * np.outer(x, x) + s * np.eye(len(x))


def hvp_fwd_over_rev(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


def hvp_rev_over_rev(f, x, v):
    return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)


def hvp_vjp_of_grad(f, x, v):
    _, pullback = jax.vjp(jax.grad(f), x)
    return pullback(v)[0]


@pytest.mark.parametrize("hvp", [hvp_fwd_over_rev, hvp_rev_over_rev, hvp_vjp_of_grad])
def test_hessian_vector_products_three_ways(x64, hvp):
    x, v = to_snp((RNG.normal(size=4), RNG.normal(size=4)))
    want = energy_hessian(x) @ np.asarray(v)
    np.testing.assert_allclose(hvp(energy, x, v), want, rtol=1e-10)
    np.testing.assert_allclose(jax.jit(functools.partial(hvp, energy))(x, v), want, rtol=1e-10)
    vs = to_snp(RNG.normal(size=(3, 4)))
    got = jax.vmap(hvp, in_axes=(None, None, 0))(energy, x, vs)
    np.testing.assert_allclose(got, np.asarray(vs) @ energy_hessian(x).T, rtol=1e-10)
    # f a parameter holding a function, under grad (third derivatives) and vmap over x
    check_grad(lambda x: jnp.sum(hvp(energy, x, v) ** 2), x)
    xs = RNG.normal(size=(3, 4))
    check_vmap(lambda x: hvp(energy, x, v), (xs,))


def dict_model(params):
    w, b = params["w"], params["b"]
    h = jnp.tanh(w * 2.0 + b)
    return {"mean": jnp.sum(h) / h.shape[0], "sq": h ** 2}


def test_jvp_and_vjp_of_dict_valued_function(x64):
    params = to_snp({"w": RNG.normal(size=3), "b": RNG.normal(size=3)})
    tangent = to_snp({"w": RNG.normal(size=3), "b": RNG.normal(size=3)})
    out, out_dot = jax.jvp(dict_model, (params,), (tangent,))
    assert_trees_close(out, to_np(dict_model(params)))
    assert_trees_close(out_dot, fd_jvp(dict_model, (params,), (tangent,)), rtol=1e-6)
    out2, pullback = jax.vjp(dict_model, params)
    ct = to_snp({"mean": 0.7, "sq": RNG.normal(size=3)})
    got, = pullback(ct)

    def scal(p):
        o = dict_model(p)
        return o["mean"] * 0.7 + jnp.sum(o["sq"] * ct["sq"])

    assert_trees_close(got, fd_grad(scal, (params,)), rtol=1e-6)
    # the transpose identity <ct, J t> == <J^T ct, t>
    lhs = 0.7 * float(out_dot["mean"]) + float(np.sum(np.asarray(out_dot["sq"]) * np.asarray(ct["sq"])))
    rhs = sum(float(np.sum(np.asarray(got[k]) * np.asarray(tangent[k]))) for k in ("w", "b"))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_linearize(x64):
    def f(x):
        return jnp.sin(x) * jnp.cos(x[::-1]) + x ** 3

    x = to_snp(RNG.normal(size=5))
    y, f_jvp = jax.linearize(f, x)
    np.testing.assert_allclose(y, f(x))
    for _ in range(2):
        t = to_snp(RNG.normal(size=5))
        np.testing.assert_allclose(f_jvp(t), jax.jvp(f, (x,), (t,))[1], rtol=1e-12)
        np.testing.assert_allclose(f_jvp(t), fd_jvp(f, (x,), (t,)), rtol=1e-6)
    ts = to_snp(RNG.normal(size=(3, 5)))
    np.testing.assert_allclose(jax.vmap(f_jvp)(ts), np.stack([f_jvp(t) for t in ts]), rtol=1e-12)
    # has_aux: (output, f_jvp, aux), aux as the function returned it
    y, g_jvp, aux = jax.linearize(lambda x: (f(x), {"norm": jnp.sum(x ** 2)}), x, has_aux=True)
    np.testing.assert_allclose(y, f(x))
    np.testing.assert_allclose(aux["norm"], np.sum(np.asarray(x) ** 2))
    np.testing.assert_allclose(g_jvp(ts[0]), f_jvp(ts[0]), rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(g_jvp)(ts), jax.vmap(f_jvp)(ts), rtol=1e-12)


def test_jacfwd_jacrev_of_pytree_functions(x64):
    def f(p):
        a, (b, c) = p["a"], p["bc"]
        return {"u": a * jnp.sum(b), "v": (jnp.exp(c) * a[0], jnp.dot(b, b))}

    p = to_snp({"a": RNG.normal(size=2), "bc": (RNG.normal(size=3), RNG.normal(size=2))})
    jf, jr = jax.jacfwd(f)(p), jax.jacrev(f)(p)
    assert_trees_close(jf, jr, rtol=1e-12, atol=1e-12)
    assert jf["u"]["a"].shape == (2, 2) and jf["u"]["bc"][0].shape == (2, 3)
    assert jf["v"][0]["bc"][1].shape == (2, 2) and jf["v"][1]["a"].shape == (2,)
    a, b, c = (np.asarray(v) for v in (p["a"], p["bc"][0], p["bc"][1]))
    np.testing.assert_allclose(jf["u"]["a"], np.eye(2) * b.sum())
    np.testing.assert_allclose(jf["u"]["bc"][0], np.outer(a, np.ones(3)))
    np.testing.assert_allclose(jf["v"][0]["a"], np.stack([np.exp(c), np.zeros(2)], 1))
    np.testing.assert_allclose(jf["v"][1]["bc"][0], 2 * b)
    assert_trees_close(jax.jit(jax.jacrev(f))(p), jr)


def test_td0_update_with_stop_gradient(x64):
    def value(theta, s):
        return jnp.tanh(jnp.dot(theta, s))

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value(theta, s_tm1)
        target = r_t + 0.9 * value(theta, s_t)
        return -0.5 * (lax.stop_gradient(target) - v_tm1) ** 2

    theta = to_snp(RNG.normal(size=3))
    s_tm1, s_t = to_snp((RNG.normal(size=3), RNG.normal(size=3)))
    r_t = 0.4
    g = jax.grad(td_loss)(theta, s_tm1, r_t, s_t)
    v1 = np.tanh(np.asarray(theta) @ np.asarray(s_tm1))
    v2 = np.tanh(np.asarray(theta) @ np.asarray(s_t))
    want = (r_t + 0.9 * v2 - v1) * (1 - v1 ** 2) * np.asarray(s_tm1)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(td_loss))(theta, s_tm1, r_t, s_t), want, rtol=1e-12)
    batch = to_snp((RNG.normal(size=(4, 3)), RNG.normal(size=4), RNG.normal(size=(4, 3))))
    got = jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0))(theta, *batch)
    loop = np.stack([jax.grad(td_loss)(theta, batch[0][i], batch[1][i], batch[2][i]) for i in range(4)])
    np.testing.assert_allclose(got, loop, rtol=1e-12)


def test_per_example_grads_over_a_batch_dict(x64):
    def loss(params, example):
        pred = jnp.dot(example["x"], params["w"]) + params["b"]
        return (pred - example["y"]) ** 2

    params = to_snp({"w": RNG.normal(size=3), "b": 0.25})
    batch = {"x": RNG.normal(size=(5, 3)), "y": RNG.normal(size=5)}
    got = check_vmap(lambda ex: jax.grad(loss)(params, ex), (batch,))
    r = np.asarray(batch["x"]) @ np.asarray(params["w"]) + 0.25 - batch["y"]
    np.testing.assert_allclose(got["w"], 2 * r[:, None] * batch["x"], rtol=1e-12)
    np.testing.assert_allclose(got["b"], 2 * r, rtol=1e-12)
    got2 = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, {"x": 0, "y": 0})))(params, to_snp(batch))
    assert_trees_close(got2, got)


def test_straight_through_estimator(x64):
    def round_ste(x):
        zero = x - lax.stop_gradient(x)
        return zero + lax.stop_gradient(jnp.round(x))

    def f(x):
        return jnp.sum(round_ste(x) ** 2)

    x = to_snp(np.array([0.2, 1.7, -2.4]))
    np.testing.assert_allclose(f(x), 0 + 4 + 4)
    # the gradient flows as if round were the identity: 2 * round(x)
    np.testing.assert_allclose(jax.grad(f)(x), 2 * np.round(np.asarray(x)))
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x), 2 * np.round(np.asarray(x)))
    np.testing.assert_allclose(jax.vmap(jax.grad(lambda v: round_ste(v) * v))(x),
                               np.round(np.asarray(x)) + np.asarray(x))


def test_holomorphic_complex_grad(x64):
    def f(z):
        return jnp.sin(z) * z ** 2

    z = 0.3 + 0.8j
    want = np.cos(z) * z ** 2 + 2 * z * np.sin(z)
    np.testing.assert_allclose(jax.grad(f, holomorphic=True)(z), want, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(f, holomorphic=True))(z), want, rtol=1e-12)
    zs = jnp.array([0.1 + 0.2j, -1.0 + 0.5j, 2.0 - 1.0j])
    zn = np.asarray(zs)
    np.testing.assert_allclose(jax.vmap(jax.grad(f, holomorphic=True))(zs),
                               np.cos(zn) * zn ** 2 + 2 * zn * np.sin(zn), rtol=1e-12)
    # the gradient of a real loss of a complex input is the conjugate of the Wirtinger one
    g = jax.grad(lambda z: jnp.abs(z) ** 2)(z)
    np.testing.assert_allclose(g, 2 * np.conj(z), rtol=1e-12)


# --- sharp bits --------------------------------------------------------------------------------

def test_out_of_bounds_indexing_clamps(x64):
    x = jnp.arange(10.0)
    np.testing.assert_allclose(x[11], 9.0)
    np.testing.assert_allclose(jax.jit(lambda x, i: x[i])(x, 11), 9.0)
    # an out-of-bounds update is dropped
    np.testing.assert_allclose(x.at[11].set(100.0), np.arange(10.0))
    np.testing.assert_allclose(jax.jit(lambda x: x.at[11].set(100.0))(x), np.arange(10.0))
    # the gradient of a clamped read lands on the last element
    g = jax.grad(lambda x, i: x[i] * 3.0)(x, 11)
    np.testing.assert_allclose(g, np.eye(10)[9] * 3.0)
    got = jax.vmap(lambda i: x[i])(jnp.array([0, 5, 12]))
    np.testing.assert_allclose(got, [0.0, 5.0, 9.0])


def test_at_updates_with_repeated_indices(x64):
    x = to_snp(np.array([1.0, 2.0, 3.0, 4.0]))
    idx = jnp.array([0, 2, 0, 0])
    v = to_snp(np.array([10.0, -1.0, 0.5, 3.0]))
    np.testing.assert_allclose(x.at[idx].add(v), [14.5, 2.0, 2.0, 4.0])
    np.testing.assert_allclose(x.at[idx].mul(v), [15.0, 2.0, -3.0, 4.0])
    np.testing.assert_allclose(x.at[idx].min(v), [0.5, 2.0, -1.0, 4.0])
    np.testing.assert_allclose(x.at[idx].max(v), [10.0, 2.0, 3.0, 4.0])
    for op in ("add", "mul", "min", "max"):
        f = jax.jit(lambda x, v, op=op: getattr(x.at[idx], op)(v))
        np.testing.assert_allclose(f(x, v), getattr(x.at[idx], op)(v))

    def loss(x, v):
        return jnp.sum(x.at[idx].add(v * x[1]) ** 2)

    check_grad(loss, x, v, argnum=0)
    check_grad(loss, x, v, argnum=1)

    def loss_mul(x, v):
        return jnp.sum(jnp.sin(x.at[idx].mul(v)))

    check_grad(loss_mul, x, v, argnum=0)
    check_grad(loss_mul, x, v, argnum=1)
    # repeated and dropped (out-of-range) updates, updates that are 0: second derivatives too
    idx5 = jnp.array([0, 2, 0, 9, 0])
    t = to_snp(np.array([0.3, -0.2, 0.7, 1.1, 0.4]))

    def sin_mul(v):
        return jnp.sum(jnp.sin(x.at[idx5].mul(v)))

    for vv in ([10.0, -1.0, 0.5, 3.0, 2.0], [0.0, -1.0, 0.5, 3.0, 2.0], [0.0, -1.0, 0.0, 3.0, 2.0],
               [0.0, -1.0, 0.0, 3.0, 0.0]):
        vv = to_snp(np.array(vv))
        check_grad(sin_mul, vv)
        np.testing.assert_allclose(jax.jvp(lambda v: x.at[idx5].mul(v), (vv,), (t,))[1],
                                   fd_jvp(lambda v: x.at[idx5].mul(v), (vv,), (t,)), atol=1e-6)
        hess = np.stack([fd_grad(lambda v, i=i: jax.grad(sin_mul)(v)[i], (vv,)) for i in range(5)])
        np.testing.assert_allclose(jax.jacfwd(jax.grad(sin_mul))(vv), hess, atol=1e-5)
        np.testing.assert_allclose(jax.hessian(sin_mul)(vv), hess, atol=1e-5)
    np.testing.assert_allclose(jax.grad(lambda s: jnp.sum(x.at[jnp.array([1, 1, 1])].mul(s)))(1.5),
                               3 * 1.5 ** 2 * 2.0)
    xs = RNG.normal(size=(3, 4))
    check_vmap(lambda v: jax.grad(sin_mul)(v), (RNG.normal(size=(3, 5)),))
    check_vmap(lambda x: x.at[idx].add(v), (xs,))
    check_vmap(lambda x: jax.grad(loss)(x, v), (xs,))


def test_weak_type_promotion(x64_or_not):
    x32 = jnp.ones(3, dtype=jnp.float32)
    assert (x32 * 2.0).dtype == jnp.float32
    assert (x32 + 1).dtype == jnp.float32
    assert jax.jit(lambda x: x * 2.5 + 1)(x32).dtype == jnp.float32
    i8 = jnp.array([1, 2], dtype=jnp.int8)
    assert (i8 + 3).dtype == jnp.int8
    assert (i8 * 1.5).dtype == jnp.float32 if not jax.config.read("jax_enable_x64") else True
    bf = jnp.ones(2, dtype=jnp.bfloat16)
    assert (bf * 3.0).dtype == jnp.bfloat16
    assert jax.grad(lambda x: jnp.sum(x * 2.0))(x32).dtype == jnp.float32
    assert jax.vmap(lambda x: x + 1.0)(x32).dtype == jnp.float32


def test_nan_checks_and_in_place_update(x64):
    def safe_log(x):
        return jnp.where(x > 0, jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)

    xs = to_snp(np.array([-1.0, 0.0, 2.0]))
    g = jax.vmap(jax.grad(safe_log))(xs)
    assert not np.any(np.isnan(g))
    np.testing.assert_allclose(g, [0.0, 0.0, 0.5])
    assert jnp.isnan(jnp.log(-1.0))
    assert bool(jnp.any(jnp.isnan(jnp.sqrt(xs))))

    def update(x, i, v):
        x = x.at[i].set(v)
        return x * 2

    x = to_snp(np.zeros(4))
    np.testing.assert_allclose(update(x, 2, 5.0), [0, 0, 10.0, 0])
    np.testing.assert_allclose(jax.jit(update)(x, 2, 5.0), [0, 0, 10.0, 0])
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(update(x, 1, v) ** 2))(3.0), 24.0)
    def prefix_adds(x):
        for i in range(3):
            x = x.at[i].add(x[i + 1])
        return x

    xs = RNG.normal(size=(3, 4))
    check_grad(lambda x: jnp.sum(prefix_adds(x) ** 2), xs[0])
    check_vmap(prefix_adds, (xs,))
    with pytest.raises(Exception) as info:
        x[0] = 1.0
    assert "at[" in str(info.value) or "immutable" in str(info.value).lower()


def test_random_keys_split_and_fold_in(x64):
    key = random.PRNGKey(0)
    k1, k2 = random.split(key)
    a = random.normal(k1, (3,))
    b = random.normal(k2, (3,))
    assert not np.allclose(a, b)
    np.testing.assert_allclose(random.normal(k1, (3,)), a)
    f0, f1 = random.fold_in(key, 0), random.fold_in(key, 1)
    assert not np.array_equal(np.asarray(random.key_data(f0) if hasattr(random, "key_data") else f0),
                              np.asarray(random.key_data(f1) if hasattr(random, "key_data") else f1))

    def draw(key, i):
        return random.uniform(random.fold_in(key, i), (2,))

    steps = jnp.arange(4)
    got = jax.vmap(draw, in_axes=(None, 0))(key, steps)
    loop = np.stack([draw(key, i) for i in range(4)])
    np.testing.assert_allclose(got, loop)
    np.testing.assert_allclose(jax.jit(draw)(key, 3), loop[3])
    keys = random.split(key, 5)
    got = jax.vmap(lambda k: random.normal(k, ()))(keys)
    np.testing.assert_allclose(got, np.stack([random.normal(k, ()) for k in keys]))


# --- custom derivative rules -------------------------------------------------------------------

@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


log1pexp.defjvps(lambda t, ans, x: (1 - 1 / (1 + jnp.exp(x))) * t)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def clip_grad(bound, x):
    return x


def clip_grad_fwd(bound, x):
    return x, None


def clip_grad_bwd(bound, _, g):
    return (jnp.clip(g, -bound, bound),)


clip_grad.defvjp(clip_grad_fwd, clip_grad_bwd)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def apply_twice(f, x):
    return f(f(x))


@apply_twice.defjvp
def apply_twice_jvp(f, primals, tangents):
    x, = primals
    t, = tangents
    y, dy = jax.jvp(f, (x,), (t,))
    return jax.jvp(f, (y,), (dy,))


def test_custom_rules_defjvps_and_nondiff_argnums(x64):
    xs = to_snp(np.array([-2.0, 0.5, 50.0]))
    np.testing.assert_allclose(jax.vmap(jax.grad(log1pexp))(xs), 1 / (1 + np.exp(-np.asarray(xs))),
                               rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(log1pexp))(500.0), 1.0)
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(jax.jacfwd(jax.grad(log1pexp))(0.5), s * (1 - s), rtol=1e-10)

    def f(x):
        return clip_grad(0.5, jnp.sin(x)) * 3.0

    t = to_snp(np.linspace(-1, 1, 4))
    got = jax.vmap(jax.grad(f))(t)
    np.testing.assert_allclose(got, 0.5 * np.cos(np.asarray(t)), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(t), got)

    g = jax.grad(lambda x: apply_twice(jnp.sin, x))(0.7)
    np.testing.assert_allclose(g, np.cos(np.sin(0.7)) * np.cos(0.7), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: apply_twice(jnp.sin, x)))(0.7), g)


def fixed_point(f, a, x_guess):
    def cond(carry):
        x_prev, x = carry
        return jnp.abs(x_prev - x) > 1e-12

    def body(carry):
        _, x = carry
        return x, f(a, x)

    _, x_star = lax.while_loop(cond, body, (x_guess, f(a, x_guess)))
    return x_star


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point_vjp(f, a, x_guess):
    return fixed_point(f, a, x_guess)


def fp_fwd(f, a, x_guess):
    x_star = fixed_point(f, a, x_guess)
    return x_star, (a, x_star)


def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


def fp_bwd(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fixed_point(functools.partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


fixed_point_vjp.defvjp(fp_fwd, fp_bwd)


def newton_sqrt_step(a, x):
    return 0.5 * (x + a / x)


def test_custom_vjp_implicit_fixed_point(x64):
    def sqrt(a):
        return fixed_point_vjp(newton_sqrt_step, a, a)

    np.testing.assert_allclose(sqrt(2.0), np.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(jax.grad(sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)
    np.testing.assert_allclose(jax.jit(jax.grad(sqrt))(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)
    aa = to_snp(np.array([1.0, 4.0, 9.0]))
    np.testing.assert_allclose(jax.vmap(jax.grad(sqrt))(aa), 0.5 / np.sqrt(np.asarray(aa)), rtol=1e-8)


# --- stateful computations ---------------------------------------------------------------------

class CounterV2:
    def count(self, n):
        return n + 1, n + 1

    def reset(self):
        return 0


def test_counter_state_threaded_explicitly(x64):
    counter = CounterV2()
    state = counter.reset()
    count = jax.jit(counter.count)
    got = []
    for _ in range(3):
        value, state = count(state)
        got.append(int(value))
    assert got == [1, 2, 3]


Params = collections.namedtuple("Params", ["weight", "bias"])


def test_linear_regression_training_loop(x64):
    xs = RNG.normal(size=(20,))
    ys = 3 * xs - 1 + 0.01 * RNG.normal(size=20)

    def init():
        return Params(jnp.asarray(0.0), jnp.asarray(0.0))

    def loss(params, x, y):
        pred = params.weight * x + params.bias
        return jnp.mean((pred - y) ** 2)

    @jax.jit
    def update(params, x, y):
        grad = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grad)

    def update_eager(params, x, y):
        grad = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grad)

    g = jax.grad(loss)(init(), to_snp(xs), to_snp(ys))
    assert isinstance(g, Params)
    assert_trees_close(g, fd_grad(loss, (init(), to_snp(xs), to_snp(ys))), rtol=1e-6)
    params, eager = init(), init()
    for _ in range(200):
        params = update(params, to_snp(xs), to_snp(ys))
    for _ in range(5):
        eager = update_eager(eager, to_snp(xs), to_snp(ys))
    assert isinstance(params, Params)
    np.testing.assert_allclose(params.weight, 3.0, atol=0.05)
    np.testing.assert_allclose(params.bias, -1.0, atol=0.05)
    p5 = init()
    for _ in range(5):
        p5 = update(p5, to_snp(xs), to_snp(ys))
    assert_trees_close(p5, eager, rtol=1e-12)


def td_step(theta, transition):
    s, r, s_next = transition
    delta = r + 0.9 * lax.stop_gradient(jnp.dot(theta, s_next)) - jnp.dot(theta, s)
    return theta + 0.1 * delta * s, delta


def test_td0_updates_in_a_scan_equal_a_python_loop(x64):
    def td_scan(theta, traj):
        return jnp.sum(lax.scan(td_step, theta, traj)[1] ** 2)

    def td_loop(theta, traj):
        deltas = []
        for i in range(traj[0].shape[0]):
            theta, d = td_step(theta, (traj[0][i], traj[1][i], traj[2][i]))
            deltas.append(d)
        return jnp.sum(jnp.stack(deltas) ** 2)

    traj = to_snp((RNG.normal(size=(4, 2)), np.array([1.0, 0.0, 1.0, 0.5]), RNG.normal(size=(4, 2))))
    theta = to_snp(np.array([0.1, 0.2]))
    want = jax.grad(td_loop)(theta, traj)
    np.testing.assert_allclose(jax.grad(td_scan)(theta, traj), want, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(td_scan))(theta, traj), want, rtol=1e-12)
    thetas = to_snp(RNG.normal(size=(3, 2)))
    np.testing.assert_allclose(jax.vmap(jax.grad(td_scan), in_axes=(0, None))(thetas, traj),
                               np.stack([jax.grad(td_loop)(t, traj) for t in thetas]), rtol=1e-12)


@jax.custom_vjp
def affine(p, x):
    return p["a"] * x + p["b"]


def affine_fwd(p, x):
    return affine(p, x), (p, x)


def affine_bwd(res, g):
    p, x = res
    return {"a": jnp.sum(g * x), "b": jnp.sum(g)}, g * p["a"]


affine.defvjp(affine_fwd, affine_bwd)


@jax.custom_jvp
def sin_times(x, y):
    return jnp.sin(x) * y


sin_times.defjvps(lambda x_dot, ans, x, y: jnp.cos(x) * x_dot * y, None)   # y: no derivative


def test_custom_rules_with_dict_params_and_a_none_jvp(x64):
    def loss(p, x):
        return jnp.sum(affine(p, jnp.sin(x)) ** 2)

    p = to_snp({"a": 2.0, "b": 0.5})
    x = to_snp(RNG.normal(size=3))
    check_grad(loss, p, x, argnum=0)
    check_grad(loss, p, x, argnum=1)
    check_vmap(lambda x: jax.grad(loss)(p, x), (RNG.normal(size=(2, 3)),))
    gx, gy = jax.grad(sin_times, (0, 1))(0.3, 2.0)
    np.testing.assert_allclose(gx, np.cos(0.3) * 2.0)
    np.testing.assert_allclose(gy, 0.0)        # the rule says y has none, as JAX's would
    np.testing.assert_allclose(jax.vmap(jax.grad(sin_times))(jnp.array([0.1, 0.2]), jnp.array([1.0, 2.0])),
                               np.cos([0.1, 0.2]) * [1.0, 2.0])
