"""A DQN-style learner: online and target parameter dicts, a TD loss whose target goes
through the target network under stop_gradient, double-Q action selection by argmax of the
online network, Polyak averaging of the target by tree_map, Huber loss; replay batches
sampled with jax.random.choice."""
import jax
import jax.numpy as jnp


def q_net(params, obs):
    return jnp.tanh(obs @ params["w1"] + params["b1"]) @ params["w2"]


def huber(x, delta=1.0):
    a = jnp.abs(x)
    return jnp.where(a < delta, 0.5 * x ** 2, delta * (a - 0.5 * delta))


def td_loss(online, target, batch, gamma=0.9):
    obs, act, rew, nxt, done = batch
    q = jnp.take_along_axis(q_net(online, obs), act[:, None], axis=1)[:, 0]
    best = jnp.argmax(q_net(online, nxt), axis=1)
    q_next = jnp.take_along_axis(q_net(target, nxt), best[:, None], axis=1)[:, 0]
    y = rew + gamma * (1.0 - done) * jax.lax.stop_gradient(q_next)
    return jnp.mean(huber(q - y))


@jax.jit
def update(online, target, batch, tau=0.2):
    value, g = jax.value_and_grad(td_loss)(online, target, batch)
    online = jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, online, g)
    target = jax.tree_util.tree_map(lambda t, o: (1 - tau) * t + tau * o, target, online)
    return online, target, value


def main():
    key = jax.random.PRNGKey(49)
    k1, k2, k3 = jax.random.split(key, 3)
    online = {"w1": jax.random.normal(k1, (3, 8)) * 0.5, "b1": jnp.zeros(8),
              "w2": jax.random.normal(k2, (8, 2)) * 0.5}
    target = jax.tree_util.tree_map(lambda x: x, online)
    n = 40
    obs = jax.random.normal(k3, (n, 3))
    act = (obs[:, 0] > 0).astype(jnp.int32)
    rew = jnp.where(act == 1, obs[:, 1], -obs[:, 2])
    nxt = jnp.roll(obs, 1, axis=0)
    done = (jnp.arange(n) % 10 == 9).astype(jnp.float32)
    losses = []
    for i in range(10):
        idx = jax.random.choice(jax.random.fold_in(key, i), n, (16,), replace=False)
        batch = (obs[idx], act[idx], rew[idx], nxt[idx], done[idx])
        online, target, value = update(online, target, batch)
        losses.append(value)
    return {"losses": jnp.stack(losses), "target_w2": target["w2"], "online_b1": online["b1"]}
