"""A GAN's alternating updates: generator and discriminator as (init, apply) pairs, two
optax-like optimizer states, the discriminator step differentiating its own params only and the
generator step differentiating through the discriminator (its params held fixed); non-saturating
losses via jax.nn.softplus; both steps jitted."""
import jax
import jax.numpy as jnp


def gen_apply(p, z):
    return jnp.tanh(z @ p["w1"]) @ p["w2"] + p["b"]


def disc_apply(p, x):
    return (jax.nn.leaky_relu(x @ p["w1"], 0.2) @ p["w2"])[:, 0]


def sgd_momentum(lr, beta=0.5):
    def init(params):
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(g, m):
        m = jax.tree_util.tree_map(lambda a, b: beta * a + b, m, g)
        return jax.tree_util.tree_map(lambda a: -lr * a, m), m
    return init, update


g_init, g_update = sgd_momentum(0.05)
d_init, d_update = sgd_momentum(0.05)


def d_loss(dp, gp, real, z):
    fake = gen_apply(gp, z)
    return jnp.mean(jax.nn.softplus(-disc_apply(dp, real))) + jnp.mean(
        jax.nn.softplus(disc_apply(dp, fake)))


def g_loss(gp, dp, z):
    return jnp.mean(jax.nn.softplus(-disc_apply(dp, gen_apply(gp, z))))


@jax.jit
def train_step(gp, dp, gs, ds, real, key):
    kd, kg = jax.random.split(key)
    dl, dg = jax.value_and_grad(d_loss)(dp, gp, real, jax.random.normal(kd, (real.shape[0], 2)))
    du, ds = d_update(dg, ds)
    dp = jax.tree_util.tree_map(jnp.add, dp, du)
    gl, gg = jax.value_and_grad(g_loss)(gp, dp, jax.random.normal(kg, (real.shape[0], 2)))
    gu, gs = g_update(gg, gs)
    gp = jax.tree_util.tree_map(jnp.add, gp, gu)
    return gp, dp, gs, ds, dl, gl


def main():
    ks = jax.random.split(jax.random.PRNGKey(50), 5)
    gp = {"w1": jax.random.normal(ks[0], (2, 8)) * 0.5, "w2": jax.random.normal(ks[1], (8, 2)) * 0.5,
          "b": jnp.zeros(2)}
    dp = {"w1": jax.random.normal(ks[2], (2, 8)) * 0.5, "w2": jax.random.normal(ks[3], (8, 1)) * 0.5}
    gs, ds = g_init(gp), d_init(dp)
    real = jax.random.normal(ks[4], (16, 2)) * 0.3 + jnp.array([1.0, -1.0])
    key = jax.random.PRNGKey(51)
    dls, gls = [], []
    for _ in range(8):
        key, sub = jax.random.split(key)
        gp, dp, gs, ds, dl, gl = train_step(gp, dp, gs, ds, real, sub)
        dls.append(dl)
        gls.append(gl)
    return {"d": jnp.stack(dls), "g": jnp.stack(gls), "gen_b": gp["b"]}
