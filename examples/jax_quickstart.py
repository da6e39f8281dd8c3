"""The JAX quickstart (docs.jax.dev/en/latest/quickstart.html), unchanged but for its %timeit
lines: run it on secant with

    python -m secant run examples/jax_quickstart.py
    python -m secant run --show-source quickstart_src examples/jax_quickstart.py
"""
import numpy as np

import jax.numpy as jnp


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


x = jnp.arange(5.0)
print(selu(x))

from jax import random  # noqa: E402

key = random.key(1701)
x = random.normal(key, (1_000_000,))
selu(x).block_until_ready()

from jax import jit  # noqa: E402

selu_jit = jit(selu)
_ = selu_jit(x)  # compiles on first call
selu_jit(x).block_until_ready()

from jax import grad  # noqa: E402


def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


x_small = jnp.arange(3.)
derivative_fn = grad(sum_logistic)
print(derivative_fn(x_small))


def first_finite_differences(f, x, eps=1E-3):
    return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                      for v in jnp.eye(len(x))])


print(first_finite_differences(sum_logistic, x_small))

print(grad(jit(grad(jit(grad(sum_logistic)))))(1.0))

from jax import jacobian  # noqa: E402

print(jacobian(jnp.exp)(x_small))

from jax import jacfwd, jacrev  # noqa: E402


def hessian(fun):
    return jit(jacfwd(jacrev(fun)))


print(hessian(sum_logistic)(x_small))

key1, key2 = random.split(key)
mat = random.normal(key1, (150, 100))
batched_x = random.normal(key2, (10, 100))


def apply_matrix(x):
    return jnp.dot(mat, x)


def naively_batched_apply_matrix(v_batched):
    return jnp.stack([apply_matrix(v) for v in v_batched])


naively_batched_apply_matrix(batched_x).block_until_ready()


@jit
def batched_apply_matrix(batched_x):
    return jnp.dot(batched_x, mat.T)


np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                           batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
batched_apply_matrix(batched_x).block_until_ready()

from jax import vmap  # noqa: E402


@jit
def vmap_batched_apply_matrix(batched_x):
    return vmap(apply_matrix)(batched_x)


np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                           vmap_batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
vmap_batched_apply_matrix(batched_x).block_until_ready()
print("quickstart: all checks passed")
