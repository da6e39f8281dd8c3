"""Issue 15, code written by others (sixth round): generative models as users write them with JAX:
a RealNVP affine coupling whose log-determinant is checked against slogdet of jacfwd, a planar
flow stack, a VAE with the reparameterisation trick and an analytic KL, denoising score matching
with noise levels, sliced score matching with jvp (a Hutchinson-style trace), a DDPM noising
loss with a cosine schedule, a mixture density network's negative log-likelihood by logsumexp,
Gumbel-softmax with a straight-through hard sample (stop_gradient), and the empirical neural
tangent kernel by jacobian contractions and by vmap of jvp; each under the transforms its author
would use, checked against float64 finite differences, closed forms, a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jacfwd, jacrev, jit, jvp, lax, random, vmap, value_and_grad
from secant.scipy.special import logsumexp

from others15_check import assert_trees_close, check_grad, check_vmap, to_snp

RNG = np.random.default_rng(6060)


def dense(params, x):
    w, b = params
    return x @ w + b


def mlp(params, x):
    *hidden, last = params
    for layer in hidden:
        x = jnp.tanh(dense(layer, x))
    return dense(last, x)


def init(sizes, scale=0.5):
    return [(scale * RNG.normal(size=(m, n)), 0.1 * RNG.normal(size=n))
            for m, n in zip(sizes[:-1], sizes[1:])]


# --- normalising flows ---------------------------------------------------------------------------
def coupling_forward(params, x, mask):
    """RealNVP: y = x_masked + (1 - mask) * (x * exp(s) + t), s and t from the masked half."""
    x_masked = x * mask
    st = mlp(params, x_masked)
    s, t = jnp.split(st, 2, axis=-1)
    s = jnp.tanh(s) * (1 - mask)
    t = t * (1 - mask)
    y = x_masked + (1 - mask) * (x * jnp.exp(s) + t)
    return y, jnp.sum(s, axis=-1)


def flow_log_prob(layers, x):
    masks = [jnp.array([1.0, 0.0, 1.0, 0.0]), jnp.array([0.0, 1.0, 0.0, 1.0])]
    log_det = 0.0
    for i, params in enumerate(layers):
        x, ld = coupling_forward(params, x, masks[i % 2])
        log_det = log_det + ld
    base = -0.5 * jnp.sum(x ** 2, axis=-1) - 0.5 * x.shape[-1] * jnp.log(2 * jnp.pi)
    return base + log_det


def test_realnvp_logdet_matches_slogdet_of_jacfwd(x64):
    params = to_snp(init([4, 6, 8]))
    mask = jnp.array([1.0, 0.0, 1.0, 0.0])
    x = jnp.asarray(RNG.normal(size=4))
    _, log_det = coupling_forward(params, x, mask)
    jac = jacfwd(lambda x: coupling_forward(params, x, mask)[0])(x)
    sign, logabs = jnp.linalg.slogdet(jac)
    assert float(sign) == 1.0
    np.testing.assert_allclose(log_det, logabs, rtol=1e-10)
    # and jacrev gives the same matrix
    assert_trees_close(jacrev(lambda x: coupling_forward(params, x, mask)[0])(x), jac)


def test_realnvp_nll_grad_vmap_jit(x64):
    layers = [init([4, 6, 8]) for _ in range(3)]
    xs = RNG.normal(size=(5, 4))
    nll = lambda layers, xs: -jnp.mean(flow_log_prob(layers, xs))
    check_grad(nll, layers, xs)
    check_vmap(flow_log_prob, (layers, xs), in_axes=(None, 0))


def planar(params, z):
    u, w, b = params
    # the invertibility fix of Rezende & Mohamed: u_hat with w.u_hat >= -1
    wu = jnp.dot(w, u)
    u_hat = u + (-1 + jnp.log1p(jnp.exp(wu)) - wu) * w / jnp.sum(w ** 2)
    a = jnp.dot(z, w) + b
    z_new = z + u_hat * jnp.tanh(a)
    psi = (1 - jnp.tanh(a) ** 2) * w
    return z_new, jnp.log(jnp.abs(1 + jnp.dot(psi, u_hat)))


def planar_stack(flows, z):
    total = 0.0
    for params in flows:
        z, ld = planar(params, z)
        total += ld
    return z, total


def test_planar_flow_logdet_and_grad(x64):
    flows = [tuple(RNG.normal(size=3) for _ in range(2)) + (RNG.normal(),) for _ in range(3)]
    z = jnp.asarray(RNG.normal(size=3))
    f = to_snp(flows)
    _, ld = planar_stack(f, z)
    _, logabs = jnp.linalg.slogdet(jacfwd(lambda z: planar_stack(f, z)[0])(z))
    np.testing.assert_allclose(ld, logabs, rtol=1e-9)
    objective = lambda flows, z: jnp.sum(planar_stack(flows, z)[0] ** 2) - planar_stack(flows, z)[1]
    check_grad(objective, flows, np.asarray(z))
    check_grad(objective, flows, np.asarray(z), argnum=1)


# --- VAE --------------------------------------------------------------------------------------------
def vae_loss(params, x, eps):
    enc, dec = params
    h = mlp(enc, x)
    mu, log_var = h[..., :2], h[..., 2:]
    z = mu + jnp.exp(0.5 * log_var) * eps               # reparameterisation
    logits = mlp(dec, z)
    recon = jnp.sum(jnp.maximum(logits, 0) - logits * x + jnp.log1p(jnp.exp(-jnp.abs(logits))), -1)
    kl = -0.5 * jnp.sum(1 + log_var - mu ** 2 - jnp.exp(log_var), axis=-1)
    return jnp.mean(recon + kl)


def test_vae_elbo_grad_and_per_example(x64):
    params = (init([5, 4, 4]), init([2, 4, 5]))
    x = (RNG.uniform(size=(6, 5)) > 0.5).astype(float)
    eps = RNG.normal(size=(6, 2))
    check_grad(vae_loss, params, x, eps)
    # per-example gradients by vmap(grad) against a loop
    per_ex = lambda p, x, e: grad(vae_loss)(p, x[None], e[None])
    check_vmap(per_ex, (params, x, eps), in_axes=(None, 0, 0))


def test_vae_with_keys_split_in_the_step(x64):
    params = to_snp((init([5, 4, 4]), init([2, 4, 5])))
    x = jnp.asarray((RNG.uniform(size=(6, 5)) > 0.5).astype(float))

    @jit
    def step(params, key):
        key, sub = random.split(key)
        eps = random.normal(sub, (x.shape[0], 2))
        loss, g = value_and_grad(vae_loss)(params, x, eps)
        params = [[(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(p, gp)]
                  for p, gp in zip(params, g)]
        return params, key, loss

    key = random.PRNGKey(0)
    p, k, loss = step(params, key)
    # the same step without jit, with the same key: identical
    sub = random.split(key)[1]
    eps = random.normal(sub, (6, 2))
    np.testing.assert_allclose(loss, vae_loss(params, x, eps), rtol=1e-12)
    assert_trees_close(k, random.split(key)[0])


# --- score matching and diffusion -------------------------------------------------------------------
def score_net(params, x, sigma):
    return mlp(params, jnp.concatenate([x, jnp.log(sigma)[None]])) / sigma


def dsm_loss(params, xs, noise, sigmas):
    def one(x, n, sigma):
        x_tilde = x + sigma * n
        target = -(x_tilde - x) / sigma ** 2
        return sigma ** 2 * jnp.sum((score_net(params, x_tilde, sigma) - target) ** 2)
    return jnp.mean(vmap(one)(xs, noise, sigmas))


def test_denoising_score_matching(x64):
    params = init([3, 8, 2])
    xs, noise = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    sigmas = np.exp(RNG.uniform(-1, 0.5, size=5))
    check_grad(dsm_loss, params, xs, noise, sigmas)
    # the loss written as a Python loop
    p = to_snp(params)
    loop = np.mean([float(s ** 2 * jnp.sum((score_net(p, jnp.asarray(x + s * n), jnp.asarray(s)) + n / s) ** 2))
                    for x, n, s in zip(xs, noise, sigmas)])
    np.testing.assert_allclose(dsm_loss(p, xs, noise, sigmas), loop, rtol=1e-10)


def energy(params, x):
    return mlp(params, x)[0]


def sliced_score_loss(params, xs, vs):
    """Sliced score matching: v.(ds/dx)v + 0.5 (v.s)^2 with s = -grad E; the jvp of the score gives
    (ds/dx) v without forming the Jacobian."""
    score = lambda x: -grad(energy, argnums=1)(params, x)

    def one(x, v):
        s, jv = jvp(score, (x,), (v,))
        return jnp.dot(v, jv) + 0.5 * jnp.dot(v, s) ** 2
    return jnp.mean(vmap(one)(xs, vs))


def test_sliced_score_matching_with_jvp(x64):
    params = init([3, 6, 1])
    xs, vs = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    p = to_snp(params)
    # the trace term against the Hessian written out
    hess = jacfwd(lambda x: -grad(energy, argnums=1)(p, x))
    want = np.mean([v @ np.asarray(hess(jnp.asarray(x))) @ v
                    + 0.5 * float(jnp.dot(v, -grad(energy, argnums=1)(p, jnp.asarray(x)))) ** 2
                    for x, v in zip(xs, vs)])
    np.testing.assert_allclose(sliced_score_loss(p, xs, vs), want, rtol=1e-10)
    check_grad(sliced_score_loss, params, xs, vs)


def cosine_alpha_bar(t, s=0.008):
    return jnp.cos((t + s) / (1 + s) * jnp.pi / 2) ** 2 / jnp.cos(s / (1 + s) * jnp.pi / 2) ** 2


def ddpm_loss(params, x0, t, noise):
    a = cosine_alpha_bar(t)[:, None]
    x_t = jnp.sqrt(a) * x0 + jnp.sqrt(1 - a) * noise
    inputs = jnp.concatenate([x_t, t[:, None]], axis=1)
    return jnp.mean((mlp(params, inputs) - noise) ** 2)


def test_ddpm_noise_prediction_loss(x64):
    params = init([3, 6, 2])
    x0, noise = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    t = RNG.uniform(0.05, 0.95, size=5)
    check_grad(ddpm_loss, params, x0, t, noise)
    check_grad(ddpm_loss, params, x0, t, noise, argnum=2)  # d/dt through the schedule


# --- mixture density network ------------------------------------------------------------------------
def mdn_nll(params, x, y, k=3):
    out = mlp(params, x)
    logits, mu, log_sigma = out[:, :k], out[:, k:2 * k], out[:, 2 * k:]
    log_pi = logits - logsumexp(logits, axis=1, keepdims=True)
    log_norm = -0.5 * ((y[:, None] - mu) / jnp.exp(log_sigma)) ** 2 - log_sigma - 0.5 * jnp.log(2 * jnp.pi)
    return -jnp.mean(logsumexp(log_pi + log_norm, axis=1))


def test_mixture_density_network(x64):
    params = init([2, 5, 9])
    x, y = RNG.normal(size=(6, 2)), RNG.normal(size=6)
    check_grad(mdn_nll, params, x, y)
    # the density written with numpy
    out = np.asarray(mlp(to_snp(params), jnp.asarray(x)))
    pi = np.exp(out[:, :3]) / np.exp(out[:, :3]).sum(1, keepdims=True)
    mu, sig = out[:, 3:6], np.exp(out[:, 6:])
    dens = (pi * np.exp(-0.5 * ((y[:, None] - mu) / sig) ** 2) / (sig * np.sqrt(2 * np.pi))).sum(1)
    np.testing.assert_allclose(mdn_nll(to_snp(params), x, y), -np.mean(np.log(dens)), rtol=1e-10)
    check_grad(mdn_nll, params, x, y, argnum=2)


# --- Gumbel softmax and straight-through ---------------------------------------------------------
def gumbel_softmax(logits, g, tau=0.5, hard=False):
    y = jax_softmax((logits + g) / tau)
    if hard:
        y_hard = jnp.eye(logits.shape[-1])[jnp.argmax(y, axis=-1)]
        y = lax.stop_gradient(y_hard - y) + y
    return y


def jax_softmax(z):
    z = z - jnp.max(z, axis=-1, keepdims=True)
    return jnp.exp(z) / jnp.sum(jnp.exp(z), axis=-1, keepdims=True)


def test_gumbel_softmax_soft_and_straight_through(x64):
    logits = RNG.normal(size=(4, 3))
    g = -np.log(-np.log(RNG.uniform(size=(4, 3))))
    values = np.arange(3.0)
    soft = lambda l: jnp.sum(gumbel_softmax(l, g) * values)
    hard = lambda l: jnp.sum(gumbel_softmax(l, g, hard=True) * values)
    gs = check_grad(soft, logits)
    # straight-through: forward is one-hot, gradient is the soft one's
    y = gumbel_softmax(jnp.asarray(logits), g, hard=True)
    assert set(np.unique(np.asarray(y))) <= {0.0, 1.0}
    assert_trees_close(grad(hard)(jnp.asarray(logits)), gs, rtol=1e-10)
    assert_trees_close(jit(grad(hard))(jnp.asarray(logits)), gs, rtol=1e-10)
    check_vmap(lambda l, g: gumbel_softmax(l, g, hard=True), (logits, g))


def test_gumbel_softmax_with_random_keys(x64):
    logits = jnp.asarray(RNG.normal(size=5))

    def sample_loss(logits, key):
        g = random.gumbel(key, logits.shape)
        return jnp.sum(gumbel_softmax(logits, g, tau=0.7) * jnp.arange(5.0))

    keys = random.split(random.PRNGKey(3), 4)
    est = lambda l: jnp.mean(vmap(sample_loss, in_axes=(None, 0))(l, keys))
    loop = lambda l: sum(sample_loss(l, k) for k in keys) / 4
    assert_trees_close(grad(est)(logits), grad(loop)(logits), rtol=1e-10)
    check_grad(lambda l: loop(l), np.asarray(logits))


# --- neural tangent kernel --------------------------------------------------------------------------
def net(params, x):
    return mlp(params, x)[..., 0]


def ntk_by_jacobians(params, x1, x2):
    j1 = jacrev(net)(params, x1)
    j2 = jacrev(net)(params, x2)
    from secant import tree_util
    prods = tree_util.tree_map(lambda a, b: jnp.tensordot(a, b, axes=(tuple(range(1, a.ndim)),) * 2), j1, j2)
    return sum(tree_util.tree_leaves(prods))


def ntk_by_jvp(params, x1, x2):
    """Implicit NTK: for each tangent basis direction of x2's outputs, a vjp then a jvp."""
    from secant import vjp
    _, pull = vjp(lambda p: net(p, x2), params)

    def column(ct):
        (p_dir,) = pull(ct)
        return jvp(lambda p: net(p, x1), (params,), (p_dir,))[1]
    return vmap(column, out_axes=1)(jnp.eye(x2.shape[0]))


def test_empirical_ntk_two_ways(x64):
    params = to_snp(init([3, 5, 1]))
    x1, x2 = jnp.asarray(RNG.normal(size=(4, 3))), jnp.asarray(RNG.normal(size=(2, 3)))
    k = ntk_by_jacobians(params, x1, x2)
    assert k.shape == (4, 2)
    assert_trees_close(ntk_by_jvp(params, x1, x2), k, rtol=1e-10)
    assert_trees_close(jit(ntk_by_jacobians)(params, x1, x2), k)
    # the kernel of one pair from per-parameter finite differences
    flat = lambda p, x: net(p, x[None])[0]
    from others15_check import fd_grad
    g1 = fd_grad(flat, (params, x1[1]))
    g2 = fd_grad(flat, (params, x2[0]))
    from secant import tree_util
    want = sum(float(np.sum(a * b)) for a, b in zip(tree_util.tree_leaves(g1), tree_util.tree_leaves(g2)))
    np.testing.assert_allclose(k[1, 0], want, rtol=1e-6)


def test_grad_of_vmap_of_closure_over_starred_layer_list(x64):
    """Regression: grad through vmap of a closure over a list of (w, b) layers unpacked as
    `*hidden, last = params` treated params as an array in the vmapped function's vjp
    (`snp.zeros_like(params)`: a shape error); vmap's `items = list(hidden)` now marks hidden,
    and so params, as a container."""
    def loss(params, xs):
        return jnp.mean(vmap(lambda x: jnp.sum(mlp(params, x) ** 2))(xs))
    for sizes in ([3, 2], [3, 4, 2]):
        check_grad(loss, init(sizes), RNG.normal(size=(4, 3)))
