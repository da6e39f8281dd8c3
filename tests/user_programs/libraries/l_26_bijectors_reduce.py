"""Distrax-like bijectors: classes with forward, inverse and forward_log_det_jacobian,
composed with functools.reduce into a Chain; a TransformedDistribution whose log_prob is the
base log density at the inverse minus the log-det; its parameters fitted by maximum likelihood
with grad (affine scale through softplus), samples drawn through forward."""
import functools

import jax
import jax.numpy as jnp


class Affine:
    def __init__(self, shift, log_scale):
        self.shift, self.log_scale = shift, log_scale

    def forward(self, x):
        return self.shift + jnp.exp(self.log_scale) * x

    def inverse(self, y):
        return (y - self.shift) * jnp.exp(-self.log_scale)

    def forward_log_det_jacobian(self, x):
        return jnp.broadcast_to(self.log_scale, jnp.shape(x))


class Sinh:
    def forward(self, x):
        return jnp.sinh(x)

    def inverse(self, y):
        return jnp.arcsinh(y)

    def forward_log_det_jacobian(self, x):
        return jnp.log(jnp.cosh(x))


class Chain:
    """Applies the bijectors last to first, as distrax.Chain does."""
    def __init__(self, bijectors):
        self.bijectors = bijectors

    def forward(self, x):
        return functools.reduce(lambda acc, b: b.forward(acc), reversed(self.bijectors), x)

    def inverse(self, y):
        return functools.reduce(lambda acc, b: b.inverse(acc), self.bijectors, y)

    def inverse_and_log_det(self, y):
        def back(carry, b):
            y, ld = carry
            x = b.inverse(y)
            return x, ld - b.forward_log_det_jacobian(x)
        return functools.reduce(back, self.bijectors, (y, jnp.zeros_like(y)))


class StandardNormal:
    def log_prob(self, x):
        return -0.5 * x ** 2 - 0.5 * jnp.log(2 * jnp.pi)

    def sample(self, key, n):
        return jax.random.normal(key, (n,))


class Transformed:
    def __init__(self, base, bijector):
        self.base, self.bijector = base, bijector

    def log_prob(self, y):
        x, ld = self.bijector.inverse_and_log_det(y)
        return self.base.log_prob(x) + ld

    def sample(self, key, n):
        return self.bijector.forward(self.base.sample(key, n))


def make_dist(params):
    return Transformed(StandardNormal(), Chain([
        Affine(params["shift2"], params["log_scale2"]), Sinh(),
        Affine(params["shift1"], params["log_scale1"])]))


def nll(params, data):
    return -jnp.mean(make_dist(params).log_prob(data))


@jax.jit
def step(params, data):
    value, g = jax.value_and_grad(nll)(params, data)
    return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g), value


def main():
    data = jnp.sinh(jax.random.normal(jax.random.PRNGKey(31), (64,)) * 0.8 + 0.3) * 1.5 - 0.2
    params = {"shift1": jnp.array(0.0), "log_scale1": jnp.array(0.0),
              "shift2": jnp.array(0.0), "log_scale2": jnp.array(0.0)}
    losses = []
    for _ in range(15):
        params, value = step(params, data)
        losses.append(value)
    samples = make_dist(params).sample(jax.random.PRNGKey(32), 5)
    roundtrip = make_dist(params).bijector.inverse(make_dist(params).bijector.forward(samples))
    return {"losses": jnp.stack(losses), "params": params, "samples": samples,
            "roundtrip": roundtrip}
