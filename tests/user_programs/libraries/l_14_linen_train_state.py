"""flax.training.train_state.TrainState by hand: a dataclass pytree whose `apply_fn` and `tx`
are static (pytree_node=False metadata, register_dataclass), `create` classmethod and
`apply_gradients(grads=...)` method returning `self.replace(...)`; the optimizer an optax-like
(init, update) pair with momentum."""
import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


def field(pytree_node=True, **kwargs):
    return dataclasses.field(metadata={"static": not pytree_node}, **kwargs)


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def momentum(lr, beta=0.9):
    def init(params):
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(grads, state, params=None):
        state = jax.tree_util.tree_map(lambda m, g: beta * m + g, state, grads)
        return jax.tree_util.tree_map(lambda m: -lr * m, state), state
    return GradientTransformation(init, update)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TrainState:
    step: jax.Array
    params: Any
    opt_state: Any
    apply_fn: Callable = field(pytree_node=False)  # noqa: RUF009
    tx: GradientTransformation = field(pytree_node=False)  # noqa: RUF009

    def replace(self, **updates):
        return dataclasses.replace(self, **updates)

    @classmethod
    def create(cls, *, apply_fn, params, tx):
        return cls(jnp.array(0), params, tx.init(params), apply_fn, tx)

    def apply_gradients(self, *, grads):
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = jax.tree_util.tree_map(lambda p, u: p + u, self.params, updates)
        return self.replace(step=self.step + 1, params=params, opt_state=opt_state)


def apply_fn(params, x):
    return jnp.tanh(x @ params["w"] + params["b"]) @ params["v"]


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        return jnp.mean((state.apply_fn(params, x) - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def main():
    k1, k2 = jax.random.split(jax.random.PRNGKey(9))
    params = {"w": jax.random.normal(k1, (2, 4)), "b": jnp.zeros(4),
              "v": jax.random.normal(k2, (4,)) * 0.3}
    state = TrainState.create(apply_fn=apply_fn, params=params, tx=momentum(0.05))
    x = jnp.stack([jnp.linspace(-1, 1, 10), jnp.linspace(0, 2, 10)], axis=1)
    y = x[:, 0] ** 2 - 0.5 * x[:, 1]
    losses = []
    for _ in range(12):
        state, loss = train_step(state, x, y)
        losses.append(loss)
    return {"losses": jnp.stack(losses), "step": state.step, "v": state.params["v"],
            "mom_b": state.opt_state["b"]}
