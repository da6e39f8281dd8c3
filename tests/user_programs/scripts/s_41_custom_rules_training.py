"""A training loop through user derivative rules: a custom_jvp safe norm (zero gradient at 0)
and a custom_vjp gradient clipper inside the loss."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def safe_norm(x):
    return jnp.sqrt(jnp.sum(x ** 2))


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    n = safe_norm(x)
    return n, jnp.where(n > 0, jnp.dot(x, t) / jnp.where(n > 0, n, 1.0), 0.0)


@jax.custom_vjp
def clip_grad(x, bound):
    return x


def clip_fwd(x, bound):
    return x, bound


def clip_bwd(bound, g):
    return jnp.clip(g, -bound, bound), None


clip_grad.defvjp(clip_fwd, clip_bwd)


def loss(w, x, y):
    pred = clip_grad(x @ w, 0.05)
    return jnp.mean((pred - y) ** 2) + 0.1 * safe_norm(w)


@jax.jit
def step(w, x, y):
    l, g = jax.value_and_grad(loss)(w, x, y)
    return w - 0.5 * g, l, g


def main():
    x = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, -1.0]])
    y = jnp.array([1.0, -1.0, 0.0, 3.0])
    w = jnp.zeros(2)
    losses, grads = [], []
    for _ in range(10):
        w, l, g = step(w, x, y)
        losses.append(l)
        grads.append(g)
    return {"losses": jnp.stack(losses), "grads": jnp.stack(grads), "w": w}
