"""Haiku's transform_with_state: `get_state`/`set_state` on a global frame for an
exponential moving average of the inputs (a running normalizer); apply returns (out, state);
the loss returns the new state as aux data; jit and value_and_grad(has_aux=True) over it."""
import jax
import jax.numpy as jnp

_STACK = []


def get_state(name, init_value):
    frame = _STACK[-1]
    if name not in frame["state"]:
        frame["state"][name] = init_value
    return frame["state"][name]


def set_state(name, value):
    _STACK[-1]["state"][name] = value


def transform_with_state(f):
    def init(x):
        _STACK.append({"state": {}})
        try:
            f({"w": jnp.zeros((x.shape[-1],))}, x)
            return _STACK[-1]["state"]
        finally:
            _STACK.pop()

    def apply(params, state, x):
        _STACK.append({"state": dict(state)})
        try:
            out = f(params, x)
            return out, _STACK[-1]["state"]
        finally:
            _STACK.pop()
    return init, apply


def forward(params, x):
    mean = get_state("mean", jnp.zeros(x.shape[-1]))
    count = get_state("count", jnp.zeros((), jnp.int32))
    new_mean = 0.8 * mean + 0.2 * x.mean(0)
    set_state("mean", new_mean)
    set_state("count", count + 1)
    return (x - new_mean) @ params["w"]


init, apply = transform_with_state(forward)


def loss(params, state, x, y):
    out, state = apply(params, state, x)
    return jnp.mean((out - y) ** 2), state


@jax.jit
def step(params, state, x, y):
    (value, state), g = jax.value_and_grad(loss, has_aux=True)(params, state, x, y)
    return {"w": params["w"] - 0.1 * g["w"]}, state, value


def main():
    x = jax.random.normal(jax.random.PRNGKey(43), (6, 8, 3)) + jnp.array([1.0, -2.0, 0.5])
    y = (x - jnp.array([1.0, -2.0, 0.5])) @ jnp.array([0.5, 1.0, -1.0])
    params = {"w": jnp.zeros(3)}
    state = init(x[0])
    losses = []
    for i in range(6):
        params, state, value = step(params, state, x[i], y[i])
        losses.append(value)
    return {"losses": jnp.stack(losses), "w": params["w"], "state": state, "left": len(_STACK)}
