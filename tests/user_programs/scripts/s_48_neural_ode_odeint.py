"""A neural ODE fitted to a spiral with jax.experimental.ode.odeint: the gradient through the
adaptive solver (its adjoint), a few SGD steps."""
import jax
import jax.numpy as jnp
from jax.experimental.ode import odeint

TS = jnp.linspace(0.0, 1.0, 6)
TRUE_A = jnp.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = jnp.array([1.0, 0.0])


def true_dynamics(y, t):
    return TRUE_A @ y


def model_dynamics(y, t, params):
    return params["a"] @ jnp.tanh(y) + params["b"]


def loss(params, target):
    pred = odeint(model_dynamics, Y0, TS, params, rtol=1e-6, atol=1e-6)
    return jnp.mean((pred - target) ** 2)


def main():
    target = odeint(true_dynamics, Y0, TS, rtol=1e-6, atol=1e-6)
    params = {"a": jnp.array([[0.0, 1.0], [-1.0, 0.0]]), "b": jnp.zeros(2)}
    vg = jax.jit(jax.value_and_grad(loss))
    losses = []
    for _ in range(5):
        l, g = vg(params, target)
        losses.append(l)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, g)
    return {"target": target, "losses": jnp.stack(losses), "params": params}
