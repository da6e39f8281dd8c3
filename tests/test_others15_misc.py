"""Issue 15, code written by others: more common user programs (pairwise distances by nested
vmap, a Lennard-Jones energy and its forces, a Gaussian mixture with scipy's logsumexp and
norm.logpdf, linear algebra losses, model ensembling by vmap over parameters, checkpoint,
stop_gradient for a target network, lax.map, dynamic_slice in a loop, einsum, sort and cumsum),
under grad, vmap, jit and their compositions; checked against float64 finite differences, a
Python loop and eager."""
import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jacfwd, jit, lax, tree_util, vmap
from secant.scipy.special import logsumexp
from secant.scipy.stats import norm

from others15_check import (assert_trees_close, check_grad, check_jit, check_vmap, fd_grad,
                            fd_jvp, to_snp)

RNG = np.random.default_rng(15015)


def dist(a, b):
    return jnp.sqrt(jnp.sum((a - b) ** 2) + 1e-12)


pairwise = vmap(vmap(dist, in_axes=(None, 0)), in_axes=(0, None))


def test_pairwise_distances_nested_vmap(x64):
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))
    want = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1) + 1e-12)
    np.testing.assert_allclose(pairwise(to_snp(a), to_snp(b)), want, rtol=1e-12)
    np.testing.assert_allclose(jit(pairwise)(to_snp(a), to_snp(b)), want, rtol=1e-12)
    check_grad(lambda a, b: jnp.sum(pairwise(a, b) ** 2), a, b)
    check_grad(lambda a, b: jnp.sum(pairwise(a, b) ** 2), a, b, argnum=1)
    # out_axes=1 on the outer map: the transpose
    t = vmap(vmap(dist, in_axes=(None, 0)), in_axes=(0, None), out_axes=1)(to_snp(a), to_snp(b))
    np.testing.assert_allclose(t, want.T, rtol=1e-12)


def lj_energy(positions):
    n = positions.shape[0]
    d = pairwise(positions, positions)
    mask = 1.0 - jnp.eye(n)
    r = jnp.where(mask > 0, d, 1.0)
    e = 4.0 * ((1.0 / r) ** 12 - (1.0 / r) ** 6)
    return 0.5 * jnp.sum(e * mask)


def forces(positions):
    return -grad(lj_energy)(positions)


def test_lennard_jones_forces(x64):
    pos = np.array([[0.0, 0.0, 0.0], [1.1, 0.0, 0.0], [0.0, 1.2, 0.1], [1.0, 1.0, 0.9]])
    check_grad(lj_energy, pos, rtol=1e-5)
    f = forces(to_snp(pos))
    np.testing.assert_allclose(np.sum(np.asarray(f), axis=0), 0.0, atol=1e-9)   # Newton's third law
    configs = pos + 0.05 * RNG.normal(size=(3, 4, 3))
    check_vmap(forces, (configs,))
    # the force's Jacobian (the negative Hessian) against finite differences of the forces
    J = jacfwd(forces)(to_snp(pos))
    v = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(np.tensordot(np.asarray(J), v, axes=2),
                               fd_jvp(forces, (to_snp(pos),), (v,)), rtol=1e-5, atol=1e-6)


def gmm_log_likelihood(params, x):
    logits, means, log_stds = params["logits"], params["means"], params["log_stds"]
    log_w = logits - logsumexp(logits)
    comp = norm.logpdf(x[:, None], means[None, :], jnp.exp(log_stds)[None, :])
    return jnp.sum(logsumexp(comp + log_w[None, :], axis=1))


GMM = {"logits": np.array([0.1, -0.3, 0.5]), "means": np.array([-1.0, 0.2, 1.5]),
       "log_stds": np.array([-0.2, 0.1, -0.5])}


def test_gaussian_mixture(x64):
    x = RNG.normal(size=7)
    w = np.exp(GMM["logits"]) / np.exp(GMM["logits"]).sum()
    s = np.exp(GMM["log_stds"])
    dens = (w * np.exp(-0.5 * ((x[:, None] - GMM["means"]) / s) ** 2) / (s * np.sqrt(2 * np.pi)))
    np.testing.assert_allclose(gmm_log_likelihood(to_snp(GMM), to_snp(x)),
                               np.log(dens.sum(1)).sum(), rtol=1e-12)
    check_grad(gmm_log_likelihood, GMM, x)
    check_grad(gmm_log_likelihood, GMM, x, argnum=1)
    check_vmap(gmm_log_likelihood, (GMM, RNG.normal(size=(3, 7))), in_axes=(None, 0))
    check_vmap(grad(gmm_log_likelihood), (GMM, RNG.normal(size=(3, 7))), in_axes=(None, 0))


def linalg_loss(A):
    S = A @ A.T + jnp.eye(A.shape[0])
    sign, logdet = jnp.linalg.slogdet(S)
    x = jnp.linalg.solve(S, jnp.arange(1.0, A.shape[0] + 1))
    return logdet + jnp.sum(x ** 2) + jnp.trace(jnp.linalg.inv(S)) + jnp.linalg.det(S) * 0.01


def eigh_loss(A):
    S = (A + A.T) / 2
    w, v = jnp.linalg.eigh(S)
    return jnp.sum(w ** 3) + jnp.sum(jnp.abs(v[:, 0]) ** 4)


def test_linear_algebra_losses(x64):
    A = RNG.normal(size=(3, 3))
    check_grad(linalg_loss, A, rtol=1e-5)
    check_vmap(linalg_loss, (RNG.normal(size=(2, 3, 3)),))
    check_vmap(grad(linalg_loss), (RNG.normal(size=(2, 3, 3)),))
    check_grad(eigh_loss, A, rtol=1e-5)
    check_vmap(grad(eigh_loss), (RNG.normal(size=(2, 3, 3)),))


def mlp(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def make_params(seed):
    r = np.random.default_rng(seed)
    return [(r.normal(size=(3, 4)), r.normal(size=4)), (r.normal(size=(4, 2)), r.normal(size=2))]


def test_ensemble_vmap_over_parameters(x64):
    members = [make_params(s) for s in range(3)]
    stacked = tree_util.tree_map(lambda *xs: np.stack(xs), *members)
    x = RNG.normal(size=(5, 3))
    out = check_vmap(mlp, (stacked, x), in_axes=(0, None))
    assert out.shape == (3, 5, 2)
    loss = lambda p, x: jnp.mean(mlp(p, x) ** 2)
    check_grad(loss, members[0], x)
    check_vmap(grad(loss), (stacked, x), in_axes=(0, None))
    ens_loss = lambda p: jnp.mean(vmap(loss, in_axes=(0, None))(p, to_snp(x)))
    check_grad(ens_loss, stacked)


def test_checkpoint_layer(x64):
    @secant.checkpoint
    def layer(w, x):
        return jnp.sin(x @ w) * jnp.cos(x)

    def net(w, x):
        for _ in range(3):
            x = layer(w, x)
        return jnp.sum(x ** 2)

    w, x = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    check_grad(net, w, x)
    check_grad(net, w, x, argnum=1)
    check_vmap(grad(net), (w, RNG.normal(size=(4, 3))), in_axes=(None, 0))


def td_loss(params, target_params, s, r, s_next, gamma=0.9):
    """A DQN-style loss: the target network's value is held fixed by stop_gradient."""
    q = jnp.tanh(s @ params)
    target = r + gamma * lax.stop_gradient(jnp.tanh(s_next @ target_params))
    return jnp.mean((q - target) ** 2)


def test_stop_gradient_target_network(x64):
    p = RNG.normal(size=3)
    s, s_next, r = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3)), RNG.normal(size=6)
    # with the same parameters: the gradient flows through q only
    g = grad(td_loss)(to_snp(p), to_snp(p), to_snp(s), to_snp(r), to_snp(s_next))
    fixed_target = r + 0.9 * np.tanh(s_next @ p)
    want = fd_grad(lambda p: jnp.mean((jnp.tanh(to_snp(s) @ p) - fixed_target) ** 2), (to_snp(p),))
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad(td_loss, argnums=1)(to_snp(p), to_snp(p), to_snp(s), to_snp(r),
                                                        to_snp(s_next)), 0.0)
    check_vmap(grad(td_loss), (RNG.normal(size=(2, 3)), p, s, r, s_next),
               in_axes=(0, None, None, None, None))


def test_lax_map_and_dynamic_slice(x64):
    def window_sums(x, width=3):
        def body(i, acc):
            return acc.at[i].set(jnp.sum(lax.dynamic_slice(x, (i,), (width,)) ** 2))

        return lax.fori_loop(0, x.shape[0] - width + 1, body, jnp.zeros(x.shape[0] - width + 1))

    def mapped(x):
        return jnp.sum(lax.map(lambda row: jnp.prod(jnp.sin(row)), x))

    x = RNG.normal(size=7)
    check_grad(lambda x: jnp.sum(window_sums(x) * jnp.arange(5.0)), x)
    check_vmap(window_sums, (RNG.normal(size=(3, 7)),))
    check_jit(window_sums, x)
    m = RNG.normal(size=(4, 3))
    check_grad(mapped, m)
    check_vmap(grad(mapped), (RNG.normal(size=(2, 4, 3)),))


def test_einsum_sort_cumsum(x64):
    def f(A, x):
        bil = jnp.einsum("i,ij,j->", x, A, x)
        batched = jnp.einsum("bi,ij->bj", A, A)
        s = jnp.sort(x)
        return bil + jnp.sum(batched ** 2) * 0.1 + jnp.sum(s * jnp.arange(1.0, 4.0)) \
            + jnp.sum(jnp.cumsum(x) ** 2)

    A, x = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    check_grad(f, A, x)
    check_grad(f, A, x, argnum=1)
    check_vmap(f, (A, RNG.normal(size=(4, 3))), in_axes=(None, 0))
    check_vmap(grad(f, argnums=1), (A, RNG.normal(size=(4, 3))), in_axes=(None, 0))


def test_jacfwd_dict_input_and_output(x64):
    def f(p):
        return {"y": jnp.sin(p["a"]) * p["b"], "z": jnp.sum(p["a"] ** 2)}

    p = to_snp({"a": RNG.normal(size=2), "b": 0.7})
    J = jacfwd(f)(p)
    Jr = secant.jacrev(f)(p)
    assert_trees_close(J, Jr, rtol=1e-12)
    np.testing.assert_allclose(J["y"]["a"], np.diag(np.cos(np.asarray(p["a"])) * 0.7), rtol=1e-12)
    np.testing.assert_allclose(J["y"]["b"], np.sin(np.asarray(p["a"])), rtol=1e-12)
    np.testing.assert_allclose(J["z"]["a"], 2 * np.asarray(p["a"]), rtol=1e-12)
    assert_trees_close(jit(jacfwd(f))(p), J)
