"""Issue 15, code written by others (second round): whole training and simulation scripts as
users write them: an equinox-like module registered as a dataclass pytree, a training loop as
lax.scan over steps with the optimizer state in the carry, lax.fori_loop SGD with a schedule,
early stopping with lax.while_loop, a spring-mass simulation with an energy check, a VAE-style
loss with the reparameterisation trick; checked against float64 finite differences, a Python
loop for vmap and eager for jit."""
import dataclasses

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, lax, nn, random, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(2525)
X = RNG.normal(size=(8, 2))
Y = np.tanh(X @ np.array([1.5, -0.5])) + 0.1


# --- an equinox-like module: a registered dataclass whose fields are the parameters -------------
@dataclasses.dataclass
class MLPModule:
    w1: object
    b1: object
    w2: object
    act: str = "tanh"

    def __call__(self, x):
        h = getattr(jnp, self.act)(x @ self.w1 + self.b1)
        return h @ self.w2


tree_util.register_dataclass(MLPModule, data_fields=["w1", "b1", "w2"], meta_fields=["act"])
MODULE = MLPModule(RNG.normal(size=(2, 4)) * 0.5, np.zeros(4), RNG.normal(size=4) * 0.5)


def module_loss(model, x, y):
    return jnp.mean((model(x) - y) ** 2)       # (the module applies to a batch as written)


def vmapped_module_loss(model, x, y):
    return jnp.mean((vmap(model)(x) - y) ** 2)


def test_registered_dataclass_module(x64):
    m = to_snp(MODULE)
    g = grad(module_loss)(m, to_snp(X), to_snp(Y))
    assert isinstance(g, MLPModule) and g.act == "tanh"
    assert_trees_close(g, fd_grad(module_loss, (m, to_snp(X), to_snp(Y))), rtol=1e-6)
    # an SGD step with tree_map keeps the class; jit equal to eager
    step = lambda m, x, y: tree_util.tree_map(lambda p, g: p - 0.1 * g, m,
                                              grad(module_loss)(m, x, y))
    new = jit(step)(m, to_snp(X), to_snp(Y))
    assert isinstance(new, MLPModule)
    assert_trees_close(new, step(m, to_snp(X), to_snp(Y)), rtol=1e-10)
    sin_model = dataclasses.replace(m, act="sin")
    check_grad(module_loss, sin_model, X, Y)


def test_vmap_of_a_module_inside_the_loss(x64):
    """vmap(model)(x) with the model a parameter (equinox style): read as vmap(lambda a:
    model(a))(x), the model unmapped; getattr(jnp, self.act)(...) a call found at run time."""
    m = to_snp(MODULE)
    np.testing.assert_allclose(vmapped_module_loss(m, to_snp(X), to_snp(Y)),
                               module_loss(m, to_snp(X), to_snp(Y)), rtol=1e-12)
    check_grad(vmapped_module_loss, MODULE, X, Y, argnum=1)
    check_vmap(vmapped_module_loss, (MODULE, X[:, None], Y[:, None]), in_axes=(None, 0, 0))
    _, t = secant.jvp(lambda x: vmapped_module_loss(m, x, to_snp(Y)), (to_snp(X),),
                      (jnp.ones((8, 2)),))
    np.testing.assert_allclose(t, np.sum(fd_grad(vmapped_module_loss, (m, to_snp(X), to_snp(Y)),
                                                 argnum=1)), rtol=1e-6)


def test_grad_in_the_module_of_vmap_model(x64):
    """grad in the model of vmap(model)(x): the vjp of the batched form the dispatcher finds
    (secant/transforms.py _generate_batched_dispatch_vjp), the model as self."""
    check_grad(vmapped_module_loss, MODULE, X, Y)
    check_grad(vmapped_module_loss, MODULE, X, Y, argnum=1)
    # (vmap of this derivative and grad of grad are not supported yet: the derivative of the
    # batched dispatcher is itself a dispatcher with no batched form or derivative)


def test_jvp_in_the_module_of_vmap_model(x64):
    m, x, y = to_snp((MODULE, X, Y))
    t = tree_util.tree_map(lambda a: 0.5 * np.ones(np.shape(a)) - 0.1 * a, m)
    value, tangent = secant.jvp(lambda mm: vmapped_module_loss(mm, x, y), (m,), (t,))
    np.testing.assert_allclose(value, module_loss(m, x, y), rtol=1e-12)
    h = 1e-6
    up = vmapped_module_loss(tree_util.tree_map(lambda a, b: a + h * b, m, t), x, y)
    down = vmapped_module_loss(tree_util.tree_map(lambda a, b: a - h * b, m, t), x, y)
    np.testing.assert_allclose(tangent, (up - down) / (2 * h), rtol=1e-6)


# --- a training loop as lax.scan, the optimizer state in the carry ------------------------------
def lin_loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w[:2] + w[2]) - y) ** 2)


def train_scan(w0, x, y, lr=0.3, steps=6):
    def step(carry, _):
        w, v = carry
        loss, g = value_and_grad(lin_loss)(w, x, y)
        v = 0.8 * v + g
        return (w - lr * v, v), loss

    (w, _), losses = lax.scan(step, (w0, jnp.zeros_like(w0)), None, length=steps)
    return w, losses


def test_training_loop_as_scan(x64):
    w0 = to_snp(np.array([0.1, 0.2, 0.0]))
    w, losses = train_scan(w0, to_snp(X), to_snp(Y))
    # the same loop in Python
    wp, vp, lp = w0, jnp.zeros(3), []
    for _ in range(6):
        l, g = value_and_grad(lin_loss)(wp, to_snp(X), to_snp(Y))
        vp = 0.8 * vp + g
        wp = wp - 0.3 * vp
        lp.append(l)
    np.testing.assert_allclose(w, wp, rtol=1e-10)
    np.testing.assert_allclose(losses, lp, rtol=1e-10)
    assert float(losses[-1]) < float(losses[0])
    wj, lj = jit(train_scan)(w0, to_snp(X), to_snp(Y))
    np.testing.assert_allclose(wj, w, rtol=1e-10)
    # the final loss differentiated in the data, through six optimizer steps
    final = lambda x: lin_loss(train_scan(w0, x, to_snp(Y))[0], x, to_snp(Y))
    check_grad(final, X, rtol=1e-4, atol=1e-6)


# --- fori_loop SGD with a learning-rate schedule, vmapped over seeds of the initial weights ------
def fit_fori(w0, x, y, steps=10):
    def body(i, w):
        lr = 0.5 / (1.0 + 0.1 * i)
        return w - lr * grad(lin_loss)(w, x, y)
    return lax.fori_loop(0, steps, body, w0)


def test_fori_loop_sgd_schedule(x64):
    w0 = np.array([0.1, -0.2, 0.05])
    want = to_snp(w0)
    for i in range(10):
        want = want - 0.5 / (1.0 + 0.1 * i) * grad(lin_loss)(want, to_snp(X), to_snp(Y))
    np.testing.assert_allclose(fit_fori(to_snp(w0), to_snp(X), to_snp(Y)), want, rtol=1e-10)
    check_vmap(fit_fori, (RNG.normal(size=(3, 3)) * 0.2, X, Y), in_axes=(0, None, None))
    # forward-mode sensitivity of the fit to the targets
    _, t = secant.jvp(lambda y: fit_fori(to_snp(w0), to_snp(X), y), (to_snp(Y),), (jnp.ones(8),))
    eps = 1e-6
    fd = (np.asarray(fit_fori(to_snp(w0), to_snp(X), to_snp(Y + eps))) -
          np.asarray(fit_fori(to_snp(w0), to_snp(X), to_snp(Y - eps)))) / (2 * eps)
    np.testing.assert_allclose(t, fd, rtol=1e-5, atol=1e-8)


# --- early stopping with while_loop --------------------------------------------------------------
def fit_until(w0, x, y, tol=1e-3, max_steps=200):
    def cond(c):
        w, loss, prev, i = c
        return (jnp.abs(prev - loss) > tol) & (i < max_steps)

    def body(c):
        w, loss, _, i = c
        loss_new, g = value_and_grad(lin_loss)(w, x, y)
        return w - 0.5 * g, loss_new, loss, i + 1

    w, loss, _, steps = lax.while_loop(cond, body, (w0, jnp.inf, 0.0, 0))
    return w, steps


def test_early_stopping_while_loop(x64):
    w0 = to_snp(np.array([0.0, 0.0, 0.0]))
    w, steps = fit_until(w0, to_snp(X), to_snp(Y))
    wj, steps_j = jit(fit_until)(w0, to_snp(X), to_snp(Y))
    assert int(steps) == int(steps_j) and 1 < int(steps) < 200
    np.testing.assert_allclose(wj, w, rtol=1e-10)
    # the same loop in Python
    wp, loss, prev, n = w0, np.inf, 0.0, 0
    while abs(prev - loss) > 1e-3 and n < 200:
        l, g = value_and_grad(lin_loss)(wp, to_snp(X), to_snp(Y))
        wp, prev, loss, n = wp - 0.5 * g, loss, float(l), n + 1
    assert n == int(steps)
    np.testing.assert_allclose(w, wp, rtol=1e-10)
    # per-dataset stopping under vmap: each example stops at its own step
    Ys = np.stack([Y, 0.5 * Y, -Y])
    ws, ns = vmap(fit_until, in_axes=(None, None, 0))(w0, to_snp(X), to_snp(Ys))
    for k in range(3):
        wk, nk = fit_until(w0, to_snp(X), to_snp(Ys[k]))
        assert int(ns[k]) == int(nk)
        np.testing.assert_allclose(ws[k], wk, rtol=1e-10)


# --- a spring-mass chain: forces as -grad of the energy, velocity Verlet ------------------------
def spring_energy(q, k, rest):
    stretch = jnp.diff(q) - rest
    return 0.5 * jnp.sum(k * stretch ** 2) + 0.5 * k[0] * q[0] ** 2


def verlet(q, p, k, rest, dt=0.01, n=50):
    force = lambda q: -grad(spring_energy)(q, k, rest)
    for _ in range(n):
        p = p + 0.5 * dt * force(q)
        q = q + dt * p
        p = p + 0.5 * dt * force(q)
    return q, p


def total_energy(q, p, k, rest):
    return spring_energy(q, k, rest) + 0.5 * jnp.sum(p ** 2)


def test_spring_chain_verlet(x64):
    q0, p0 = np.array([0.1, 1.2, 1.9, 3.2]), np.zeros(4)
    k, rest = np.array([1.0, 2.0, 1.5]), 1.0
    q, p = verlet(*to_snp((q0, p0, k)), rest)
    e0 = total_energy(*to_snp((q0, p0, k)), rest)
    np.testing.assert_allclose(total_energy(q, p, to_snp(k), rest), e0, rtol=1e-3)
    qj, pj = jit(verlet, static_argnums=(3, 4, 5))(*to_snp((q0, p0, k)), rest, 0.01, 50)
    np.testing.assert_allclose(qj, q, rtol=1e-10)
    # the final position's sensitivity to the spring constants
    final = lambda k: jnp.sum(verlet(to_snp(q0), to_snp(p0), k, rest, n=20)[0] ** 2)
    check_grad(final, k, rtol=1e-5)
    check_vmap(lambda k: verlet(to_snp(q0), to_snp(p0), k, rest, n=10)[0],
               (np.array([[1.0, 2.0, 1.5], [0.5, 0.5, 3.0]]),))


# --- a VAE-style loss with the reparameterisation trick --------------------------------------------
def encoder(p, x):
    h = nn.relu(x @ p["enc"])
    return h @ p["mu"], h @ p["logvar"]


def elbo(p, x, eps):
    mu, logvar = encoder(p, x)
    z = mu + jnp.exp(0.5 * logvar) * eps
    recon = jnp.tanh(z @ p["dec"])
    rec = jnp.sum((recon - x) ** 2)
    kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar))
    return rec + kl


VAE = {"enc": RNG.normal(size=(3, 4)) * 0.5, "mu": RNG.normal(size=(4, 2)) * 0.5,
       "logvar": RNG.normal(size=(4, 2)) * 0.1, "dec": RNG.normal(size=(2, 3)) * 0.5}


def test_vae_reparameterisation(x64):
    x = np.array([0.4, -1.1, 0.8])
    eps = np.asarray(random.normal(random.PRNGKey(0), (2,), dtype=jnp.float64))
    check_grad(elbo, VAE, x, eps)
    # a Monte Carlo ELBO over several noise draws: vmap over keys inside the loss
    def mc_elbo(p, x, key):
        keys = random.split(key, 4)
        eps = vmap(lambda k: random.normal(k, (2,), dtype=jnp.float64))(keys)
        return jnp.mean(vmap(elbo, in_axes=(None, None, 0))(p, x, eps))

    key = random.PRNGKey(1)
    g = grad(mc_elbo)(to_snp(VAE), to_snp(x), key)
    assert_trees_close(g, fd_grad(mc_elbo, (to_snp(VAE), to_snp(x), key)), rtol=1e-5)
    assert_trees_close(jit(grad(mc_elbo))(to_snp(VAE), to_snp(x), key), g, rtol=1e-10)
    xs = RNG.normal(size=(3, 3))
    check_vmap(grad(elbo), (VAE, xs, eps), in_axes=(None, 0, None))
