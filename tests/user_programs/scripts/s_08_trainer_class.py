"""A Trainer class whose bound method is jitted in __init__ (jax.jit(self.step))."""
import jax
import jax.numpy as jnp


class Trainer:
    def __init__(self, lr, l2):
        self.lr = lr
        self.l2 = l2
        self.step = jax.jit(self._step)
        self.eval = jax.jit(self._loss)

    def _loss(self, params, x, y):
        logits = x @ params["w"] + params["b"]
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.mean(jnp.sum(jax.nn.one_hot(y, 3) * logp, axis=-1))
        return nll + self.l2 * jnp.sum(params["w"] ** 2)

    def _step(self, params, x, y):
        g = jax.grad(self._loss)(params, x, y)
        return {k: params[k] - self.lr * g[k] for k in params}

    def fit(self, params, x, y, epochs):
        history = []
        for _ in range(epochs):
            params = self.step(params, x, y)
            history.append(self.eval(params, x, y))
        return params, history


def main():
    kx, kc = jax.random.split(jax.random.PRNGKey(1))
    x = jax.random.normal(kx, (45, 4))
    y = jnp.argmax(x[:, :3] + 0.5 * jax.random.normal(kc, (45, 3)), axis=1)
    trainer = Trainer(lr=0.3, l2=1e-3)
    params = {"w": jnp.zeros((4, 3)), "b": jnp.zeros(3)}
    params, history = trainer.fit(params, x, y, epochs=10)
    return {"history": jnp.array(history), "params": params, "labels": y}
