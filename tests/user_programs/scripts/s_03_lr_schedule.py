"""SGD with a warmup + cosine schedule computed from the step count inside jit."""
import jax
import jax.numpy as jnp

TOTAL = 30
WARMUP = 5


def schedule(step):
    warm = 0.1 * (step + 1) / WARMUP
    progress = (step - WARMUP) / (TOTAL - WARMUP)
    cosine = 0.05 * (1 + jnp.cos(jnp.pi * progress))
    return jnp.where(step < WARMUP, warm, cosine)


def loss_fn(w, x, y):
    logits = x @ w
    return jnp.mean(jnp.logaddexp(0.0, -y * logits))


@jax.jit
def train_step(w, step, x, y):
    lr = schedule(step)
    g = jax.grad(loss_fn)(w, x, y)
    return w - lr * g, lr


def main():
    key = jax.random.PRNGKey(3)
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (40, 4))
    y = jnp.sign(x @ jnp.array([1.0, -1.0, 2.0, 0.0]) + 0.1)
    w = 0.01 * jax.random.normal(kw, (4,))
    lrs, losses = [], []
    for step in range(TOTAL):
        w, lr = train_step(w, step, x, y)
        lrs.append(lr)
        losses.append(loss_fn(w, x, y))
    return {"lrs": jnp.array(lrs), "losses": jnp.array(losses), "w": w}
