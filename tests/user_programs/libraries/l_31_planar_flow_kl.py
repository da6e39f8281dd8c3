"""A normalizing flow of planar layers (a list of dict params, each layer a class method
returning (z, log_det)), fit by reverse KL to an unnormalized 2-d target density; samples from
a base Normal pushed through with a Python loop over layers, the whole objective vmapped over
base samples and differentiated."""
import jax
import jax.numpy as jnp


class Planar:
    @staticmethod
    def init(key):
        k1, k2 = jax.random.split(key)
        return {"u": 0.1 * jax.random.normal(k1, (2,)), "w": 0.1 * jax.random.normal(k2, (2,)),
                "b": jnp.zeros(())}

    @staticmethod
    def apply(p, z):
        w, b = p["w"], p["b"]
        wu = w @ p["u"]
        u_hat = p["u"] + (jax.nn.softplus(wu) - 1 - wu) * w / (w @ w + 1e-8)
        a = jnp.tanh(z @ w + b)
        z_new = z + u_hat * a
        psi = (1 - a ** 2) * w
        return z_new, jnp.log(jnp.abs(1 + psi @ u_hat) + 1e-8)


def log_target(z):
    r = jnp.linalg.norm(z)
    return -0.5 * ((r - 2.0) / 0.4) ** 2


def flow(layers, z):
    total = 0.0
    for p in layers:
        z, ld = Planar.apply(p, z)
        total = total + ld
    return z, total


def reverse_kl(layers, eps):
    def one(e):
        log_q0 = -0.5 * jnp.sum(e ** 2) - jnp.log(2 * jnp.pi)
        z, ld = flow(layers, e)
        return log_q0 - ld - log_target(z)
    return jnp.mean(jax.vmap(one)(eps))


@jax.jit
def step(layers, key):
    eps = jax.random.normal(key, (32, 2))
    value, g = jax.value_and_grad(reverse_kl)(layers, eps)
    return jax.tree_util.tree_map(lambda p, d: p - 0.01 * d, layers, g), value


def main():
    layers = [Planar.init(k) for k in jax.random.split(jax.random.PRNGKey(39), 4)]
    key = jax.random.PRNGKey(40)
    losses = []
    for _ in range(8):
        key, sub = jax.random.split(key)
        layers, value = step(layers, sub)
        losses.append(value)
    z, _ = jax.vmap(lambda e: flow(layers, e))(jnp.eye(2))
    return {"losses": jnp.stack(losses), "u0": layers[0]["u"], "z": z}
