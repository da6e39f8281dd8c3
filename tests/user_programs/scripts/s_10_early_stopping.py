"""Gradient descent with early stopping on a Python float of the validation loss."""
import jax
import jax.numpy as jnp


def loss(w, x, y):
    return jnp.mean((jnp.polyval(w, x) - y) ** 2)


@jax.jit
def step(w, x, y):
    l, g = jax.value_and_grad(loss)(w, x, y)
    return w - 0.1 * g, l


def main():
    x = jnp.linspace(-1, 1, 21)
    y = 0.5 * x ** 3 - x + 0.2
    x_val = jnp.linspace(-0.95, 0.95, 7)
    y_val = 0.5 * x_val ** 3 - x_val + 0.2
    w = jnp.zeros(4)
    best, best_w, patience, bad = float("inf"), w, 3, 0
    val_losses = []
    for it in range(200):
        w, _ = step(w, x, y)
        val = float(loss(w, x_val, y_val))
        val_losses.append(val)
        if val < best - 1e-3:
            best, best_w, bad = val, w, 0
        else:
            bad += 1
            if bad >= patience:
                break
    return {"stopped_at": it, "val_losses": val_losses, "best_w": best_w, "best": best}
