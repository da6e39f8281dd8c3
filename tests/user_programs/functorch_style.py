"""Programs after PyTorch functorch's tutorials (issue 15, explore15i), with the transforms
inside the user's function: per-sample gradients and their norms, model ensembling by vmap over
stacked parameters, jacobians of model outputs (jacrev, jacfwd) as penalties, an empirical NTK,
a Hessian-vector product by forward-over-reverse, a WGAN gradient penalty."""
import secant as jax
import secant.numpy as jnp

from corpus import Case, vec

X = vec(740, 4, 3)
Y = vec(741, 4)
W = {"w1": vec(742, 3, 4), "w2": vec(743, 4)}


def model(params, x):
    return jnp.tanh(x @ params["w1"]) @ params["w2"]


def sample_loss(params, x, y):
    return (model(params, x) - y) ** 2


def ft_per_sample_grad_norms(params, x, y):
    grads = jax.vmap(jax.grad(sample_loss), in_axes=(None, 0, 0))(params, x, y)
    norms = sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1)
                for g in jax.tree_util.tree_leaves(grads))
    return jnp.mean(norms)


def ft_clipped_dp_grad(params, x, y):
    grads = jax.vmap(jax.grad(sample_loss), in_axes=(None, 0, 0))(params, x, y)
    flat = jnp.concatenate([g.reshape(g.shape[0], -1) for g in jax.tree_util.tree_leaves(grads)],
                           axis=1)
    scale = 1.0 / jnp.maximum(1.0, jnp.linalg.norm(flat, axis=1) / 0.5)
    return jnp.sum(jnp.mean(flat * scale[:, None], axis=0) ** 2)


def ft_ensemble(stacked, x):
    preds = jax.vmap(model, in_axes=(0, None))(stacked, x)
    return jnp.mean(preds ** 2) + jnp.var(preds, axis=0).sum()


ENSEMBLE = {"w1": vec(744, 3, 3, 4), "w2": vec(745, 3, 4)}


def ft_jacrev_penalty(params, x):
    def f(inp):
        return jnp.tanh(inp @ params["w1"])
    jac = jax.jacrev(f)(x[0])
    return jnp.sum(jac ** 2) + jnp.sum(model(params, x))


def ft_jacfwd_penalty(params, x):
    jac = jax.jacfwd(model, argnums=1)(params, x[0])
    return jnp.sum(jac ** 2) + 0.1 * jnp.sum(model(params, x) ** 2)


def ft_per_sample_jacobians(params, x):
    def f(inp):
        return jnp.tanh(inp @ params["w1"])
    jacs = jax.vmap(jax.jacrev(f))(x)
    return jnp.sum(jnp.einsum("bij,bij->b", jacs, jacs))


def ft_empirical_ntk(params, x):
    def f(p):
        return model(p, x)
    jac = jax.jacrev(f)(params)
    flat = jnp.concatenate([j.reshape(x.shape[0], -1) for j in jax.tree_util.tree_leaves(jac)],
                           axis=1)
    ntk = flat @ flat.T
    return jnp.trace(ntk) + 0.1 * jnp.sum(ntk)


def ft_hvp_inside(w, x):
    def loss(v):
        return jnp.sum(jnp.tanh(x @ v) ** 2)
    direction = jnp.ones(3)
    hv = jax.jvp(jax.grad(loss), (w,), (direction,))[1]
    return jnp.sum(hv ** 2) + loss(w)


def ft_gradient_penalty(w, x):
    def critic(inp):
        return jnp.sum(jnp.tanh(inp * w) @ w)
    g = jax.vmap(jax.grad(critic))(x)
    norms = jnp.sqrt(jnp.sum(g ** 2, axis=1) + 1e-12)
    return jnp.mean((norms - 1.0) ** 2) + jnp.mean(jax.vmap(critic)(x))


def ft_value_and_grad_step(w, x):
    def loss(v):
        return jnp.sum(jnp.sin(x @ v) ** 2)
    for _ in range(2):
        val, g = jax.value_and_grad(loss)(w)
        w = w - 0.1 * g
    return loss(w) + 0.0 * val


CASES = [
    Case("ft_per_sample_grad_norms", ft_per_sample_grad_norms, (W, X, Y)),
    Case("ft_clipped_dp_grad", ft_clipped_dp_grad, (W, X, Y)),
    Case("ft_ensemble", ft_ensemble, (ENSEMBLE, X)),
    Case("ft_jacrev_penalty", ft_jacrev_penalty, (W, X)),
    Case("ft_jacfwd_penalty", ft_jacfwd_penalty, (W, X)),
    Case("ft_per_sample_jacobians", ft_per_sample_jacobians, (W, X)),
    Case("ft_empirical_ntk", ft_empirical_ntk, (W, X)),
    Case("ft_hvp_inside", ft_hvp_inside, (vec(746, 3), X)),
    Case("ft_gradient_penalty", ft_gradient_penalty, (vec(747, 3), X)),
    Case("ft_value_and_grad_step", ft_value_and_grad_step, (vec(748, 3), X)),
]
