"""REINFORCE on a two-armed contextual bandit over short episodes: actions by
jax.random.categorical, discounted returns by a reversed lax.scan, the policy-gradient loss
with a baseline under lax.stop_gradient, jax.vmap over episodes."""
import jax
import jax.numpy as jnp
from jax import lax

T = 5


def rollout(params, key):
    def step(carry, key):
        state = carry
        logits = params[state]
        k_a, k_s = jax.random.split(key)
        a = jax.random.categorical(k_a, logits)
        reward = jnp.where(a == state % 2, 1.0, -0.2)
        logp = jax.nn.log_softmax(logits)[a]
        nxt = jax.random.randint(k_s, (), 0, 3)
        return nxt, (reward, logp)
    _, (rewards, logps) = lax.scan(step, 0, jax.random.split(key, T))
    return rewards, logps


def returns(rewards, gamma=0.9):
    def back(g, r):
        g = r + gamma * g
        return g, g
    _, out = lax.scan(back, 0.0, rewards, reverse=True)
    return out


def pg_loss(params, keys):
    rewards, logps = jax.vmap(rollout, in_axes=(None, 0))(params, keys)
    g = jax.vmap(returns)(rewards)
    adv = lax.stop_gradient(g - jnp.mean(g, axis=0))
    return -jnp.mean(jnp.sum(logps * adv, axis=1)), jnp.mean(jnp.sum(rewards, axis=1))


@jax.jit
def update(params, key):
    keys = jax.random.split(key, 8)
    (l, avg_reward), g = jax.value_and_grad(pg_loss, has_aux=True)(params, keys)
    return params - 0.5 * g, avg_reward


def main():
    params = jnp.zeros((3, 2))
    key = jax.random.PRNGKey(1)
    rewards = []
    for _ in range(15):
        key, sub = jax.random.split(key)
        params, r = update(params, sub)
        rewards.append(r)
    return {"rewards": jnp.stack(rewards), "params": params}
