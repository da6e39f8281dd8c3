"""The fourth battery (issue 15, explore15k): programs from domains the first three left out,
written as their authors write them. Reinforcement learning (REINFORCE, GAE by a reversed
scan, PPO's clipped objective, soft Q-learning), finance (Black-Scholes by ndtr and erf, greeks
by grad and hessian, Monte Carlo with random.split), robotics and graphics (quaternions,
forward and inverse kinematics, ray-sphere hits, a soft rasteriser), graph networks
(segment_sum, `.at[idx].add`, attention, a GCN), PDE stencils (jnp.roll, slices,
`u.at[1:-1].set`), signal processing (FFT convolution, windowed frames), a Kalman filter in
lax.scan, EM for a Gaussian mixture, a VAE and a diffusion loss, ranking losses (sort,
argsort, top_k), interpolation (interp, searchsorted), Sinkhorn transport (fori_loop,
while_loop), InfoNCE, batch norm with a running state as aux, quantile/Huber losses, a
mixture density network; and Python styles: `from jax import numpy as jnp` and
`import jax.numpy as np`, functools.partial(jax.jit, static_argnames=...), tree_util.Partial,
generators, static and class methods, dataclass default factories, `match`, the walrus,
asserts on shapes, enumerate(zip(...)), `{**a, **b}`, sum() of a generator, chained
comparisons."""
import dataclasses
import functools
from typing import NamedTuple

import numpy as onp

import secant as jax
import secant.numpy as np            # the old `import jax.numpy as np`
from secant import lax, random, tree_util
from secant import numpy as jnp      # `from jax import numpy as jnp`
from secant.scipy.special import erf, logsumexp, ndtr
from secant.scipy.stats import norm

from corpus import Case, pos, vec

X = vec(1500, 6, 3)
Y = vec(1501, 6)


# --- reinforcement learning ------------------------------------------------------------------------
OBS = vec(1502, 6, 3)
ACTIONS = onp.array([0, 2, 1, 1, 0, 2])
RETURNS = onp.array([1.0, -0.5, 2.0, 0.3, -1.2, 0.8])


def rl_reinforce(theta, obs, actions, returns):
    """REINFORCE: -E[log pi(a|s) (G - baseline)]"""
    logits = obs @ theta
    logp = jax.nn.log_softmax(logits, axis=-1)
    logp_a = jnp.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    adv = returns - returns.mean()
    return -jnp.mean(logp_a * adv)


def rl_gae(values, rewards, dones):
    """generalised advantage estimation by a reversed scan; the value loss on its targets"""
    gamma, lam = 0.99, 0.95
    next_values = jnp.append(values[1:], 0.0)
    deltas = rewards + gamma * next_values * (1.0 - dones) - values

    def step(gae, inp):
        delta, done = inp
        gae = delta + gamma * lam * (1.0 - done) * gae
        return gae, gae

    _, advantages = lax.scan(step, 0.0, (deltas, dones), reverse=True)
    mc_returns = jnp.cumsum(rewards[::-1])[::-1]
    return jnp.sum(advantages ** 2) + 0.5 * jnp.mean((values - mc_returns) ** 2)


def _policy_logp(theta, obs, actions):
    logp = jax.nn.log_softmax(obs @ theta)
    return logp[jnp.arange(actions.shape[0]), actions]


THETA0 = vec(1503, 3, 3)
OLD_LOGP = onp.asarray(_policy_logp(THETA0, OBS, ACTIONS)) + onp.array(
    [0.5, -0.5, 0.0, 0.45, -0.6, 0.05])
ADV = onp.array([1.0, -0.7, 0.4, -1.1, 0.9, 0.6])


def rl_ppo_clip(theta, obs, actions, old_logp, adv):
    """PPO's clipped surrogate with an entropy bonus"""
    eps = 0.2
    logp = _policy_logp(theta, obs, actions)
    ratio = jnp.exp(logp - old_logp)
    clipped = jnp.clip(ratio, 1 - eps, 1 + eps)
    surrogate = jnp.minimum(ratio * adv, clipped * adv)
    probs = jax.nn.softmax(obs @ theta)
    entropy = -jnp.sum(probs * jnp.log(probs), axis=-1)
    return -jnp.mean(surrogate) - 0.01 * jnp.mean(entropy)


def rl_soft_q(w, s, s_next, rewards, actions, w_target):
    """soft Q-learning: the target network's soft value by logsumexp, held fixed"""
    tau, gamma = 0.5, 0.9
    q = s @ w
    v_next = tau * logsumexp(s_next @ lax.stop_gradient(w_target) / tau, axis=1)
    target = rewards + gamma * v_next
    q_sa = q[jnp.arange(q.shape[0]), actions]
    return jnp.mean((q_sa - target) ** 2)


# --- finance ---------------------------------------------------------------------------------------
def bs_call(S, K, T, r, sigma):
    d1 = (jnp.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * jnp.sqrt(T))
    d2 = d1 - sigma * jnp.sqrt(T)
    return S * ndtr(d1) - K * jnp.exp(-r * T) * ndtr(d2)


STRIKES = onp.array([90.0, 100.0, 110.0, 120.0])


def fin_bs_ndtr(sigma, strikes):
    """the prices of a strip of calls, one volatility each"""
    return jnp.sum(bs_call(100.0, strikes, 0.75, 0.02, sigma))


def _phi(x):
    return 0.5 * (1.0 + erf(x / jnp.sqrt(2.0)))


def fin_put_erf(spots):
    K, T, r, sigma = 100.0, 0.5, 0.03, 0.3
    d1 = (jnp.log(spots / K) + (r + sigma ** 2 / 2) * T) / (sigma * T ** 0.5)
    d2 = d1 - sigma * T ** 0.5
    put = K * jnp.exp(-r * T) * _phi(-d2) - spots * _phi(-d1)
    return jnp.sum(put)


def fin_greeks_by_grad(spots):
    """delta and gamma by grad, per spot by vmap, in a hedging-error objective"""
    price = lambda s: bs_call(s, 100.0, 0.5, 0.01, 0.25)
    delta = jax.vmap(jax.grad(price))(spots)
    gamma = jax.vmap(jax.grad(jax.grad(price)))(spots)
    return jnp.sum(delta * spots + 0.5 * gamma * spots ** 2)


def fin_hessian_greeks(x):
    """gamma, vanna and volga from the hessian of the price in (spot, vol)"""
    price = lambda p: bs_call(p[0], 100.0, 1.0, 0.01, p[1])
    h = jax.hessian(price)(x)
    return price(x) + h[0, 0] * 100.0 + h[0, 1] + 0.1 * h[1, 1]


def fin_mc_split(sigma):
    """a basket of three assets simulated in four steps, a fresh key per step"""
    key = random.PRNGKey(42)
    n, dt = 256, 0.25
    s = jnp.full((3, n), 100.0)
    for _ in range(4):
        key, sub = random.split(key)
        z = random.normal(sub, (3, n))
        s = s * jnp.exp((0.01 - 0.5 * sigma[:, None] ** 2) * dt
                        + sigma[:, None] * jnp.sqrt(dt) * z)
    payoff = jax.nn.softplus(s.mean(axis=0) - 100.0)
    return jnp.exp(-0.01) * jnp.mean(payoff)


def fin_mc_asian(log_vol):
    """an Asian call: keys split up front and looped over"""
    vol = jnp.exp(log_vol)
    keys = random.split(random.PRNGKey(7), 5)
    s = jnp.full(200, 1.0)
    path_sum = 0.0
    for k in keys:
        s = s * jnp.exp(-0.5 * vol ** 2 * 0.2 + vol * jnp.sqrt(0.2) * random.normal(k, (200,)))
        path_sum = path_sum + s
    return jnp.mean(jax.nn.softplus(10.0 * (path_sum / len(keys) - 1.0)) / 10.0)


def fin_cvar(w_logits, scenarios):
    """mean-CVaR portfolio: the mean of the worst quarter of the losses, by sort"""
    w = jax.nn.softmax(w_logits)
    losses = -(scenarios @ w)
    worst = jnp.sort(losses)[-scenarios.shape[0] // 4:]
    return jnp.mean(worst) - 0.5 * jnp.mean(-losses) + 0.1 * jnp.sum(w ** 2)


# --- robotics and graphics -------------------------------------------------------------------------
def quat_mul(q, r):
    w1, x1, y1, z1 = q
    w2, x2, y2, z2 = r
    return jnp.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                      w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                      w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                      w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


PTS = vec(1510, 4, 3)
PTS_TARGET = vec(1511, 4, 3)


def rb_quat_rotate(q, pts):
    """rotate points by q v q* and fit a target"""
    q = q / jnp.linalg.norm(q)
    q_conj = q * jnp.array([1.0, -1.0, -1.0, -1.0])
    rotated = [quat_mul(quat_mul(q, jnp.concatenate([jnp.zeros(1), p])), q_conj)[1:]
               for p in pts]
    return jnp.sum((jnp.stack(rotated) - PTS_TARGET) ** 2)


def quat_to_matrix(q):
    w, x, y, z = q / jnp.sqrt(jnp.sum(q ** 2))
    return jnp.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rb_quat_matrix(q, pts):
    R = quat_to_matrix(q)
    return jnp.sum((pts @ R.T - PTS_TARGET) ** 2) + jnp.trace(R)


LINKS = (1.0, 0.8, 0.5)
REACH = onp.array([1.2, 1.1])


def forward_kinematics(theta):
    x, y, phi = 0.0, 0.0, 0.0
    for length, t in zip(LINKS, theta):
        phi = phi + t
        x = x + length * jnp.cos(phi)
        y = y + length * jnp.sin(phi)
    return jnp.stack([x, y])


def rb_fk_3link(theta):
    return jnp.sum((forward_kinematics(theta) - REACH) ** 2) + 0.01 * jnp.sum(theta ** 2)


def rb_ik_step(theta):
    """one damped least-squares IK step with the Jacobian by jacfwd; the error after it"""
    err = REACH - forward_kinematics(theta)
    J = jax.jacfwd(forward_kinematics)(theta)
    dtheta = J.T @ jnp.linalg.solve(J @ J.T + 0.1 * jnp.eye(2), err)
    return jnp.sum((forward_kinematics(theta + dtheta) - REACH) ** 2)


_ang = onp.linspace(-0.5, 0.5, 4)
RAY_DIRS = onp.stack([onp.array([a, b, 1.0]) / onp.sqrt(a * a + b * b + 1.0)
                      for a in _ang for b in _ang])


def rb_ray_sphere(center, dirs):
    """depth of rays from the origin hitting a unit sphere; misses at depth 10 (the double
    where keeps sqrt's gradient finite where it is not taken)"""
    b = dirs @ center
    c = center @ center - 1.0
    disc = b ** 2 - c
    hit = disc > 0
    t = b - jnp.sqrt(jnp.where(hit, disc, 1.0))
    depth = jnp.where(hit, t, 10.0)
    return jnp.sum(depth) / dirs.shape[0]


_g = onp.linspace(-1.0, 1.0, 8)
PIXELS = onp.stack(onp.meshgrid(_g, _g), axis=-1).reshape(-1, 2)
TARGET_IMG = (onp.linalg.norm(PIXELS, axis=1) < 0.6).astype(float)


def rb_soft_raster(verts):
    """a soft rasteriser: each pixel's coverage by sigmoids of the three edge functions"""
    sigma = 0.05
    cover = jnp.ones(PIXELS.shape[0])
    for i in range(3):
        a, b = verts[i], verts[(i + 1) % 3]
        edge = (b[0] - a[0]) * (PIXELS[:, 1] - a[1]) - (b[1] - a[1]) * (PIXELS[:, 0] - a[0])
        cover = cover * jax.nn.sigmoid(edge / sigma)
    return jnp.mean((cover - TARGET_IMG) ** 2)


def skew(k):
    return jnp.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])


def rb_rodrigues(w, pts):
    theta = jnp.linalg.norm(w)
    K = skew(w / theta)
    R = jnp.eye(3) + jnp.sin(theta) * K + (1 - jnp.cos(theta)) * K @ K
    return jnp.sum((pts @ R.T - PTS_TARGET) ** 2)


# --- graph networks --------------------------------------------------------------------------------
SENDERS = onp.array([0, 1, 2, 3, 4, 0, 2, 1])
RECEIVERS = onp.array([1, 2, 3, 4, 0, 3, 0, 4])
NODES = vec(1520, 5, 3)


def gn_segment_sum(w, h):
    msgs = jnp.tanh(h[SENDERS] @ w)
    agg = jax.ops.segment_sum(msgs, RECEIVERS, num_segments=h.shape[0])
    h = h + agg
    return jnp.sum(h ** 2) / h.shape[0]


def gn_at_add(w, h):
    """two rounds of message passing by scatter-add, gather by jnp.take"""
    for _ in range(2):
        msgs = jnp.tanh(jnp.take(h, SENDERS, axis=0) @ w)
        h = 0.5 * h + jnp.zeros_like(h).at[RECEIVERS].add(msgs)
    return jnp.sum(jnp.tanh(h)) + jnp.sum(h[RECEIVERS] * h[SENDERS])


def gn_attention(a, h):
    """graph attention with a softmax over each node's incoming edges by segment_sum"""
    pair = jnp.concatenate([h[SENDERS], h[RECEIVERS]], axis=1)
    e = jnp.exp(jnp.tanh(pair @ a))
    denom = jax.ops.segment_sum(e, RECEIVERS, num_segments=5)
    alpha = e / denom[RECEIVERS]
    out = jax.ops.segment_sum(alpha[:, None] * h[SENDERS], RECEIVERS, num_segments=5)
    return jnp.sum(out ** 2)


def gn_gcn(w, x):
    """a GCN layer with the normalised adjacency built by .at[].set"""
    n = x.shape[0]
    A = jnp.zeros((n, n)).at[SENDERS, RECEIVERS].set(1.0)
    A = jnp.minimum(A + A.T, 1.0) + jnp.eye(n)
    d = 1.0 / jnp.sqrt(A.sum(axis=1))
    A_hat = d[:, None] * A * d[None, :]
    h = jnp.tanh(A_hat @ x @ w)
    return jnp.sum(jnp.mean(h, axis=0) ** 2)


# --- PDEs ------------------------------------------------------------------------------------------
GRID = onp.linspace(0.0, 1.0, 12)


def pde_heat_roll(u):
    """periodic explicit heat steps by jnp.roll"""
    r = 0.2
    for _ in range(10):
        u = u + r * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1))
    return jnp.sum(jnp.sin(u) * GRID)


def pde_wave_slices(u0):
    """the leapfrog wave equation with fixed ends: u.at[1:-1].set(...)"""
    c2 = 0.25
    u0 = jnp.asarray(u0)
    u_prev, u = u0, u0
    for _ in range(8):
        u_next = u.at[1:-1].set(2 * u[1:-1] - u_prev[1:-1]
                                + c2 * (u[2:] - 2 * u[1:-1] + u[:-2]))
        u_next = u_next.at[0].set(0.0).at[-1].set(0.0)
        u_prev, u = u, u_next
    return jnp.sum(u ** 2) + jnp.sum((u[1:] - u[:-1]) ** 2)


def pde_poisson_jacobi(f):
    """Jacobi sweeps for -lap u = f on a 6x6 grid in fori_loop"""
    h2 = (1.0 / 5) ** 2

    def sweep(i, u):
        return u.at[1:-1, 1:-1].set(0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                            + u[1:-1, :-2] + h2 * f[1:-1, 1:-1]))
    u = lax.fori_loop(0, 20, sweep, jnp.zeros_like(f))
    return jnp.sum(u ** 2) * 100.0


U0 = onp.sin(onp.pi * onp.linspace(0.0, 1.0, 8))


def pde_diffusivity(log_kappa, u0):
    """a conservative diffusion step with a diffusivity per cell face (an inverse problem)"""
    kappa = jnp.exp(log_kappa)
    u = jnp.asarray(u0)
    for _ in range(5):
        flux = kappa * (u[1:] - u[:-1])
        u = u.at[1:-1].add(0.1 * (flux[1:] - flux[:-1]))
    return jnp.sum((u - 0.5 * u0) ** 2)


# --- signal ----------------------------------------------------------------------------------------
SIG = vec(1530, 16)
SIG_TARGET = vec(1531, 20)


def sig_fft_conv(k, x):
    """linear convolution by zero-padded rfft/irfft"""
    n = x.shape[0] + k.shape[0] - 1
    y = jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n)
    return jnp.sum((y - SIG_TARGET[:n]) ** 2)


def sig_frames(x):
    """overlapping Hann-windowed frames gathered by an index grid, their log power spectrum"""
    frame, hop = 8, 4
    n_frames = 1 + (x.shape[0] - frame) // hop
    idx = jnp.arange(n_frames)[:, None] * hop + jnp.arange(frame)[None, :]
    frames = x[idx] * jnp.hanning(frame)
    spec = jnp.abs(jnp.fft.rfft(frames, axis=-1)) ** 2
    return jnp.sum(jnp.log1p(spec))


def sig_autocorr(x):
    """autocorrelation by FFT (Wiener-Khinchin), normalised by lag 0"""
    n = x.shape[0]
    xc = x - x.mean()
    f = jnp.fft.fft(xc, 2 * n)
    ac = jnp.fft.ifft(f * jnp.conj(f)).real[:n]
    return jnp.sum(ac[1:4] ** 2) / ac[0] ** 2


# --- Kalman filter, EM, VAE, diffusion -------------------------------------------------------------
YS = onp.cumsum(vec(1540, 10)) * 0.5


def kf_scan(log_params, ys):
    """constant-velocity Kalman filter in lax.scan; -log likelihood in (log q, log r)"""
    q, r = jnp.exp(log_params[0]), jnp.exp(log_params[1])
    F = jnp.array([[1.0, 1.0], [0.0, 1.0]])
    H = jnp.array([1.0, 0.0])
    Q = q * jnp.array([[1 / 3, 1 / 2], [1 / 2, 1.0]])

    def step(carry, y):
        m, P = carry
        m, P = F @ m, F @ P @ F.T + Q
        S = H @ P @ H + r
        K = P @ H / S
        resid = y - H @ m
        ll = -0.5 * (jnp.log(2 * jnp.pi * S) + resid ** 2 / S)
        m = m + K * resid
        P = P - jnp.outer(K, H @ P)
        return (m, P), ll

    _, lls = lax.scan(step, (jnp.zeros(2), jnp.eye(2)), ys)
    return -jnp.sum(lls)


GMM_X = onp.concatenate([vec(1541, 8) - 1.5, vec(1542, 8) + 1.5])


def em_gmm(mus, x):
    """three EM steps of a 1-D two-component mixture from the initial means mus"""
    log_pi = jnp.log(jnp.array([0.5, 0.5]))
    sig = 0.8
    for _ in range(3):
        log_r = log_pi + norm.logpdf(x[:, None], mus[None, :], sig)
        log_r = log_r - logsumexp(log_r, axis=1, keepdims=True)
        r = jnp.exp(log_r)
        nk = r.sum(axis=0)
        mus = (r * x[:, None]).sum(axis=0) / nk
        log_pi = jnp.log(nk / x.shape[0])
    return -jnp.sum(logsumexp(log_pi + norm.logpdf(x[:, None], mus, sig), axis=1))


BIN_X = (vec(1543, 5, 4) > 0).astype(float)


def vae_bernoulli(params, x):
    """a VAE on binary data: reparameterised z, Bernoulli decoder by log_sigmoid"""
    h = jnp.tanh(x @ params["enc"])
    mu, logvar = h[:, :2], h[:, 2:]
    eps = random.normal(random.PRNGKey(3), mu.shape)
    z = mu + jnp.exp(0.5 * logvar) * eps
    logits = z @ params["dec"] + params["bias"]
    rec = jnp.sum(x * jax.nn.log_sigmoid(logits) + (1 - x) * jax.nn.log_sigmoid(-logits), axis=1)
    kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar), axis=1)
    return -jnp.mean(rec - kl)


def diffusion_loss(params, x0):
    """DDPM's denoising loss: noise x0 at a step t per example, predict the noise"""
    T = 10
    betas = jnp.linspace(1e-3, 0.2, T)
    alpha_bar = jnp.cumprod(1.0 - betas)
    t = jnp.array([1, 4, 7, 9, 2])
    eps = random.normal(random.PRNGKey(11), x0.shape)
    a = alpha_bar[t][:, None]
    xt = jnp.sqrt(a) * x0 + jnp.sqrt(1 - a) * eps
    temb = jnp.stack([jnp.sin(t / T), jnp.cos(t / T)], axis=1)
    h = jnp.tanh(jnp.concatenate([xt, temb], axis=1) @ params["w1"])
    pred = h @ params["w2"]
    return jnp.mean((pred - eps) ** 2)


# --- ranking ---------------------------------------------------------------------------------------
FEATS = vec(1550, 7, 3)
REL = onp.array([3.0, 0.0, 1.0, 2.0, 0.5, 4.0, 1.5])


def rank_listnet(w, feats, rel):
    scores = feats @ w
    return -jnp.sum(jax.nn.softmax(rel) * jax.nn.log_softmax(scores))


def rank_sorted_match(x):
    """1-D Wasserstein: sorted predictions against sorted targets"""
    return jnp.sum((jnp.sort(x) - jnp.sort(REL / 2.0)) ** 2)


def rank_argsort_pairwise(w, feats, rel):
    """a pairwise logistic loss in the ideal order (argsort of the labels), DCG discounts"""
    order = jnp.argsort(-rel)
    scores = (feats @ w)[order]
    n = scores.shape[0]
    discount = 1.0 / jnp.log2(jnp.arange(n) + 2.0)
    diff = scores[None, :] - scores[:, None]
    mask = jnp.triu(jnp.ones((n, n)), k=1)
    return jnp.sum(mask * discount[:, None] * jax.nn.softplus(diff))


def rank_top_k(w, feats):
    scores = feats @ w
    top, idx = lax.top_k(scores, 3)
    return jnp.sum(top) - logsumexp(scores) + jnp.sum(feats[idx] ** 2 * w)


# --- interpolation ---------------------------------------------------------------------------------
XP = onp.linspace(0.0, 2.0, 6)
FP = onp.sin(XP)
XQ = onp.array([0.13, 0.55, 0.91, 1.27, 1.66, 1.93])


def interp_table(fp, xq):
    return jnp.sum(jnp.sin(jnp.interp(xq, XP, fp)) * xq)


def interp_query(xq):
    return jnp.sum(jnp.interp(xq, XP, FP) ** 2)


def interp_searchsorted(xq, fp):
    """linear interpolation written out: searchsorted, then a gather of the two knots"""
    xp = jnp.asarray(XP)
    i = jnp.clip(jnp.searchsorted(xp, xq) - 1, 0, xp.shape[0] - 2)
    t = (xq - xp[i]) / (xp[i + 1] - xp[i])
    y = (1 - t) * fp[i] + t * fp[i + 1]
    return jnp.sum(y ** 3)


# --- Sinkhorn, InfoNCE -----------------------------------------------------------------------------
OT_Y = vec(1560, 5, 2)


def _sinkhorn_cost(x, y):
    return jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


def ot_sinkhorn_fori(x, y):
    """log-domain Sinkhorn in fori_loop; the transport cost of the plan"""
    eps = 0.5
    C = _sinkhorn_cost(x, y)
    log_a = -jnp.log(x.shape[0]) * jnp.ones(x.shape[0])
    log_b = -jnp.log(y.shape[0]) * jnp.ones(y.shape[0])

    def body(i, fg):
        f, g = fg
        f = -eps * logsumexp((g[None, :] - C) / eps + log_b[None, :], axis=1)
        g = -eps * logsumexp((f[:, None] - C) / eps + log_a[:, None], axis=0)
        return f, g

    f, g = lax.fori_loop(0, 30, body, (jnp.zeros(x.shape[0]), jnp.zeros(y.shape[0])))
    P = jnp.exp((f[:, None] + g[None, :] - C) / eps + log_a[:, None] + log_b[None, :])
    return jnp.sum(P * C)


def ot_sinkhorn_while(x, y):
    """Sinkhorn in a while_loop with an iteration counter in the carry (forward mode only in
    JAX: reverse mode of while_loop is refused)"""
    eps = 0.5
    C = _sinkhorn_cost(x, y)
    K = jnp.exp(-C / eps)
    a = jnp.ones(x.shape[0]) / x.shape[0]
    b = jnp.ones(y.shape[0]) / y.shape[0]

    def cond(state):
        i, _, _ = state
        return i < 40

    def body(state):
        i, u, v = state
        u = a / (K @ v)
        v = b / (K.T @ u)
        return i + 1, u, v

    _, u, v = lax.while_loop(cond, body, (0, jnp.ones_like(a), jnp.ones_like(b)))
    return jnp.sum(u[:, None] * K * v[None, :] * C)


X2 = X + 0.1 * vec(1561, 6, 3)


def nce_infonce(W, x1, x2):
    def embed(x):
        z = x @ W
        return z / jnp.linalg.norm(z, axis=1, keepdims=True)
    logits = embed(x1) @ embed(x2).T / 0.1
    labels = jnp.arange(x1.shape[0])
    logp = jax.nn.log_softmax(logits, axis=1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


# --- batch norm with state, quantile/Huber, MDN ----------------------------------------------------
def _bn_loss(params, state, x):
    h = x @ params["w"]
    mu, var = h.mean(axis=0), h.var(axis=0)
    y = (h - mu) / jnp.sqrt(var + 1e-5) * params["gamma"] + params["beta"]
    new_state = {"mean": 0.9 * state["mean"] + 0.1 * mu, "var": 0.9 * state["var"] + 0.1 * var}
    return jnp.mean(jnp.tanh(y) ** 2) + 0.1 * jnp.mean(y), new_state


def bn_has_aux(params, x):
    """two SGD steps of a batch-norm layer; value_and_grad(has_aux=True) threads its running
    statistics"""
    state = {"mean": jnp.zeros(4), "var": jnp.ones(4)}
    for _ in range(2):
        (loss, state), g = jax.value_and_grad(_bn_loss, has_aux=True)(params, state, x)
        params = tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
    return loss + jnp.sum(state["var"]) + jnp.sum(state["mean"] ** 2)


QUANTILES = onp.array([0.1, 0.5, 0.9])


def loss_pinball(w, x, y):
    e = y - x @ w
    q = jnp.asarray(QUANTILES)
    return jnp.mean(jnp.maximum(q * e[:, None], (q - 1) * e[:, None]))


def loss_huber_where(w, x, y, delta=0.5):
    e = x @ w - y
    quad = 0.5 * e ** 2
    lin = delta * (jnp.abs(e) - 0.5 * delta)
    return jnp.mean(jnp.where(jnp.abs(e) <= delta, quad, lin))


def mdn_nll(params, x, y):
    """a mixture density network: logits, means and log-scales of 3 Gaussians per input"""
    h = jnp.tanh(x @ params["w1"])
    out = h @ params["w2"]
    logit_pi, mu, log_sigma = jnp.split(out, 3, axis=1)
    log_prob = (jax.nn.log_softmax(logit_pi, axis=1)
                - 0.5 * ((y[:, None] - mu) / jnp.exp(log_sigma)) ** 2
                - log_sigma - 0.5 * jnp.log(2 * jnp.pi))
    return -jnp.mean(logsumexp(log_prob, axis=1))


# --- Python styles ---------------------------------------------------------------------------------
def st_np_alias(w, x):
    """the old `import jax.numpy as np` alias, NumPy-looking code"""
    h = np.tanh(np.dot(x, w))
    return np.sum(h ** 2) + np.linalg.norm(w) ** 2


@functools.partial(jax.jit, static_argnames=("n_steps", "act"))
def _rollout(x, w, n_steps=3, act="tanh"):
    f = jnp.tanh if act == "tanh" else jnp.sin
    for _ in range(n_steps):
        x = f(x @ w)
    return x


def st_partial_jit_static(w, x):
    return jnp.sum(_rollout(x, w, n_steps=4) ** 2) + jnp.sum(_rollout(x, w, act="sin"))


def _mse_to(target, pred):
    return jnp.mean((pred - target) ** 2)


def _apply_loss(loss_fn, w, x):
    return loss_fn(jnp.tanh(x @ w))


def st_tree_partial(w, x, y):
    loss_fn = tree_util.Partial(_mse_to, y)
    return _apply_loss(loss_fn, w, x)


def _layers(params):
    for w, b in params:
        yield w, b


def st_generator_layers(params, x):
    """layers yielded by a generator and consumed by a for loop"""
    h = x
    for w, b in _layers(params):
        h = jnp.tanh(h @ w + b)
    return jnp.sum(h ** 2)


class Net:
    scale = 0.5

    @staticmethod
    def act(h):
        return jnp.tanh(h)

    @classmethod
    def apply(cls, w, x):
        return cls.scale * cls.act(x @ w)

    @classmethod
    def loss(cls, w, x, y):
        return jnp.mean((cls.apply(w, x)[:, 0] - y) ** 2)


def st_class_static_methods(w, x, y):
    return Net.loss(w, x, y)


@dataclasses.dataclass
class TrainConfig:
    widths: list = dataclasses.field(default_factory=lambda: [3, 2])
    decay: dict = dataclasses.field(default_factory=lambda: {"w": 0.1})
    lr: float = 0.05


def st_dataclass_factory(w, x, y):
    cfg = TrainConfig()
    assert cfg.widths[0] == x.shape[1]
    pred = x @ w
    return jnp.mean((pred - y) ** 2) + cfg.decay["w"] * jnp.sum(w ** 2) - cfg.lr * jnp.sum(w)


def _activation(name, h):
    match name:
        case "relu":
            return jax.nn.relu(h)
        case "tanh" | "th":
            return jnp.tanh(h)
        case _:
            return h


def st_match(w, x):
    match x.shape:
        case (n, d) if d == w.shape[0]:
            h = x @ w
        case _:
            raise ValueError("bad shape")
    return jnp.sum(_activation("tanh", h) ** 2) / n + jnp.sum(_activation("id", h))


def st_walrus(w, x):
    if (n := x.shape[0]) > 2:
        h = (z := x @ w) * jnp.tanh(z)
    else:
        h = x @ w
    return jnp.sum(h) / n + jnp.sum(z ** 2)


def st_assert_shapes(w, x, y):
    assert x.shape == (6, 3), f"x has shape {x.shape}"
    assert w.ndim == 1 and w.shape[0] == x.shape[1]
    pred = x @ w
    assert pred.shape == y.shape
    return jnp.mean((pred - y) ** 2)


def st_enumerate_zip(ws, x):
    h = x
    for i, (w, scale) in enumerate(zip(ws, (1.0, 0.5))):
        h = jnp.tanh(h @ w) * scale + i
    return jnp.sum(h ** 2)


DEFAULTS = {"w": onp.ones(3) * 0.1, "b": 0.0}


def st_dict_merge(p, x, y):
    params = {**DEFAULTS, **p}
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def st_sum_generator(params):
    return sum(jnp.sum(w ** 2) for w in params.values()) + sum(
        jnp.sum(jnp.sin(w)) for w in params.values() if w.ndim > 1)


def st_chained_compare(w, x):
    if 1 <= x.ndim <= 2 and 0 < w.shape[0] < 10:
        h = x @ w
    else:
        h = jnp.sum(x, axis=-1)
    lo, hi = -0.5, 0.5
    inside = (lo < h) & (h < hi)
    return jnp.sum(jnp.where(inside, h ** 2, jnp.abs(h)))



# --- more of the styles, harder ---------------------------------------------------------------------
def st_match_mapping(params, x):
    """`match` on a params dict by mapping patterns, a class pattern on the config"""
    match params:
        case {"w": w, "b": b}:
            h = x @ w + b
        case {"w": w}:
            h = x @ w
    match TrainConfig():
        case TrainConfig(lr=lr, widths=[first, *_]):
            scale = lr * first
    return jnp.sum(jnp.tanh(h) ** 2) * scale


def _blocks(ws):
    yield from ((w, jnp.tanh) for w in ws[:-1])
    yield ws[-1], (lambda h: h)


def st_yield_from(ws, x):
    h = x
    for w, act in _blocks(ws):
        h = act(h @ w)
    return jnp.sum(h ** 2)


def st_walrus_comprehension(ws, x):
    hs = [h for w in ws if (h := jnp.tanh(x @ w)).shape[1] == 3]
    return sum((jnp.sum(h ** 2) for h in hs), start=jnp.zeros(()))


def st_enumerate_start(ws, x):
    total = 0.0
    for depth, (w, sign) in enumerate(zip(ws, (1, -1, 1)), start=1):
        total = total + sign * jnp.sum(jnp.sin(x @ w)) / depth
    return total


class Scorer:
    def __init__(self, w, temperature):
        self.w, self.temperature = w, temperature

    @classmethod
    def from_config(cls, w, cfg):
        return cls(w, cfg["temperature"])

    def __call__(self, feats):
        return feats @ self.w / self.temperature


def st_classmethod_constructor(w, feats, rel):
    scorer = Scorer.from_config(w, {"temperature": 0.5})
    scores = scorer(feats)
    return -jnp.sum(jax.nn.softmax(rel) * jax.nn.log_softmax(scores))


def rank_argsort_gather(w, feats):
    """the scores in their own sorted order by argsort and take_along_axis"""
    scores = feats @ w
    order = jnp.argsort(scores)
    ranked = jnp.take_along_axis(scores, order, axis=0)
    weights = jnp.linspace(0.1, 1.0, scores.shape[0])
    return jnp.sum(weights * ranked) + jnp.sum(jnp.sort(-scores)[:2])


LABELS = onp.array([0, 2, 1, 1, 0, 2])


def xent_one_hot(w, x, labels):
    logits = x @ w
    onehot = jax.nn.one_hot(labels, 3)
    return -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(logits), axis=-1))


def scan_no_xs(w):
    """lax.scan with xs=None and length=: a linear recurrence unrolled 5 steps"""
    def step(h, _):
        h = jnp.tanh(w @ h + 0.1)
        return h, jnp.sum(h)
    h, sums = lax.scan(step, jnp.ones(3), None, length=5)
    return jnp.sum(sums) + jnp.sum(h ** 2)


def cond_dict_operand(w, x):
    """lax.cond over a dict operand, the predicate from data"""
    state = {"h": x @ w, "scale": jnp.sum(w)}
    state = lax.cond(jnp.sum(x) > 0,
                     lambda s: {"h": jnp.tanh(s["h"]), "scale": s["scale"] * 2},
                     lambda s: {"h": jnp.sin(s["h"]), "scale": s["scale"]}, state)
    return jnp.sum(state["h"] ** 2) * state["scale"]


def gn_segment_sum_sorted(w, h):
    """segment_sum with indices_are_sorted and a mean by counts"""
    order = onp.argsort(RECEIVERS, kind="stable")
    recv, send = RECEIVERS[order], SENDERS[order]
    msgs = jnp.tanh(h[send] @ w)
    total = jax.ops.segment_sum(msgs, recv, num_segments=5, indices_are_sorted=True)
    counts = jax.ops.segment_sum(jnp.ones(recv.shape[0]), recv, num_segments=5)
    return jnp.sum((total / jnp.maximum(counts, 1.0)[:, None]) ** 2)


def at_add_duplicates(v, idx_w):
    """scatter-add with repeated indices, then .at[].multiply and .at[].get"""
    idx = onp.array([0, 2, 2, 4, 0, 1])
    out = jnp.zeros(5).at[idx].add(v * idx_w)
    out = out.at[onp.array([1, 3])].multiply(2.0)
    return jnp.sum(out ** 2) + jnp.sum(out.at[idx].get() * v)


def pde_roll_2d(u):
    """a 2-D periodic diffusion step by jnp.roll on both axes, and the gradient energy"""
    for _ in range(3):
        lap = (jnp.roll(u, 1, axis=0) + jnp.roll(u, -1, axis=0) + jnp.roll(u, 1, axis=1)
               + jnp.roll(u, -1, axis=1) - 4 * u)
        u = u + 0.1 * lap
    dx = jnp.diff(u, axis=1)
    return jnp.sum(u ** 3) + jnp.sum(dx ** 2)


def sig_stft_overlap_add(x):
    """frames by reshape (no overlap), a window, rfft, a spectral gain, irfft, overlap-add"""
    frames = x.reshape(4, 4) * jnp.hanning(4)
    spec = jnp.fft.rfft(frames, axis=1)
    gain = jnp.abs(spec) / (jnp.abs(spec) + 0.5)
    y = jnp.fft.irfft(spec * gain, n=4, axis=1).reshape(-1)
    return jnp.sum((y - SIG) ** 2)


# --- library corners: associative_scan, lax.sort with a payload, segment_max, windows ------------
def lin_recurrence_assoc(a_logit, b):
    """h_t = a_t h_{t-1} + b_t by lax.associative_scan (the parallel form of a Kalman/SSM)"""
    a = jax.nn.sigmoid(a_logit)

    def combine(left, right):
        a1, b1 = left
        a2, b2 = right
        return a2 * a1, a2 * b1 + b2
    _, h = lax.associative_scan(combine, (a, b))
    return jnp.sum(h ** 2)


def sort_with_payload(keys, payload):
    """lax.sort of (keys, payload) by the keys: the payload in the keys' order"""
    sorted_keys, carried = lax.sort((keys, payload), num_keys=1)
    w = jnp.linspace(1.0, 2.0, keys.shape[0])
    return jnp.sum(w * sorted_keys * carried) + jnp.sum(jnp.cumsum(carried) ** 2)


def gn_segment_max(w, h):
    """max-pooling of messages per receiver by segment_max"""
    msgs = h[SENDERS] @ w
    pooled = jax.ops.segment_max(msgs, RECEIVERS, num_segments=5)
    return jnp.sum(jnp.tanh(pooled) ** 2)


def pool_reduce_window(x):
    """2x2 average and max pooling by lax.reduce_window"""
    avg = lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), "VALID") / 4.0
    mx = lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID")
    return jnp.sum(avg ** 2) + jnp.sum(jnp.sin(mx))


def hard_em_argmax(mus, x):
    """hard EM: each point to its nearest mean by argmax, the means by a one-hot average"""
    for _ in range(2):
        d = -(x[:, None] - mus[None, :]) ** 2
        z = jnp.argmax(d, axis=1)
        r = jax.nn.one_hot(z, mus.shape[0])
        mus = (r * x[:, None]).sum(0) / r.sum(0) * 0.5 + 0.5 * mus
    return jnp.sum(jnp.min((x[:, None] - mus[None, :]) ** 2, axis=1))


def cumsum_reverse(x):
    """reward-to-go by lax.cumsum(reverse=True) and by flipping"""
    rtg = lax.cumsum(x, reverse=True)
    rtg2 = jnp.flip(jnp.cumsum(jnp.flip(x)))
    return jnp.sum(rtg * rtg2 * jnp.arange(1, x.shape[0] + 1))


def slogdet_eigh(a):
    """a log-determinant by slogdet and the top eigenvalue by eigh of a PSD matrix"""
    m = a @ a.T + jnp.eye(a.shape[0])
    sign, logdet = jnp.linalg.slogdet(m)
    evals, evecs = jnp.linalg.eigh(m)
    return sign * logdet + evals[-1] + jnp.sum(evecs[:, -1] ** 4)


def xlogy_entropy(logits):
    from secant.scipy.special import entr, xlogy
    p = jax.nn.softmax(logits)
    return jnp.sum(entr(p)) + jnp.sum(xlogy(p, p + 0.5))


def fold_in_noise(w):
    """a fresh key per layer by random.fold_in"""
    key = random.PRNGKey(0)
    h = jnp.ones(3)
    for i in range(3):
        noise = random.normal(random.fold_in(key, i), (3,))
        h = jnp.tanh(w @ h + 0.1 * noise)
    return jnp.sum(h ** 2)


def vectorize_signature(w, x):
    """jnp.vectorize with a gufunc signature: a per-row matrix-vector product"""
    f = jnp.vectorize(lambda row, m: jnp.tanh(m @ row), signature="(n),(n,n)->(n)")
    return jnp.sum(f(x, w) ** 2)


def piecewise_rate(x):
    """a piecewise rate with jnp.piecewise (no kink at the example points)"""
    y = jnp.piecewise(x, [x < -0.3, x > 0.4], [lambda v: v ** 2, lambda v: jnp.sin(v),
                                                 lambda v: 0.5 * v])
    return jnp.sum(y * x)


class Carry(NamedTuple):
    h: object
    c: object


def scan_namedtuple_carry(w, xs):
    """an LSTM-ish cell with a NamedTuple carry updated by _replace"""
    def step(carry, x):
        c = carry.c * jax.nn.sigmoid(x @ w) + jnp.tanh(x @ w)
        carry = carry._replace(c=c)
        carry = carry._replace(h=jnp.tanh(carry.c))
        return carry, carry.h.sum()
    carry, out = lax.scan(step, Carry(jnp.zeros(3), jnp.zeros(3)), xs)
    return jnp.sum(out) + jnp.sum(carry.h ** 2)


@dataclasses.dataclass(frozen=True)
class Params:
    w: object
    b: object


def dataclass_replace(w, x):
    """a frozen dataclass of parameters stepped by dataclasses.replace"""
    p = Params(w=w, b=jnp.zeros(3))
    for _ in range(2):
        g = jnp.mean(jnp.tanh(x @ p.w + p.b), axis=0)
        p = dataclasses.replace(p, b=p.b - 0.1 * g)
    return jnp.sum(jnp.tanh(x @ p.w + p.b) ** 2)


def kwargs_model(p, x):
    """a model taking its parameters as **kwargs"""
    def model(x, *, w, b):
        return jnp.tanh(x @ w + b)
    return jnp.sum(model(x, **p) ** 2)


# --- round three: Python control flow on values, star patterns -------------------------------------
def st_assert_values(w, x):
    """asserts on values (Python control flow on concrete values, as grad allows in JAX)"""
    h = jnp.tanh(x @ w)
    assert jnp.all(jnp.abs(h) <= 1.0), "tanh out of range"
    assert float(jnp.max(jnp.abs(w))) < 10.0
    return jnp.sum(h ** 2)


def st_walrus_while(w):
    n, h = 4, jnp.ones(3)
    while (n := n - 1) > 0:
        h = jnp.tanh(w @ h) + 0.1 * n
    return jnp.sum(h ** 2)


def st_match_star(layers, x):
    """`match` with a star pattern over a list of layers"""
    match layers:
        case [first, *middle, last]:
            h = jnp.tanh(x @ first)
            for w in middle:
                h = jnp.tanh(h @ w)
            return jnp.sum((h @ last) ** 2)
        case [only]:
            return jnp.sum((x @ only) ** 2)


def st_partial_inline(w, x, y):
    """a tree_util.Partial made in place as a helper's argument"""
    return _apply_loss(tree_util.Partial(_mse_to, y), w, x)


def st_closure_kwargs_passed(w, x, y):
    """a closure over y taking *args/**kwargs, passed to a helper"""
    loss_fn = lambda *a, **k: _mse_to(y, *a, **k)
    return _apply_loss(loss_fn, w, x)


def st_while_value(x):
    """a Python while on a value: halve until small (concrete under grad, as in JAX)"""
    steps = 0
    while jnp.max(jnp.abs(x)) > 0.1:
        x = x * 0.5
        steps += 1
    return jnp.sum(jnp.sin(x)) * steps

W3 = vec(1570, 3)
W33 = vec(1571, 3, 3)

CASES = [
    Case("rl_reinforce", rl_reinforce, (W33, OBS, ACTIONS, RETURNS)),
    Case("rl_gae", rl_gae, (vec(1504, 6), RETURNS, onp.array([0., 0., 1., 0., 0., 0.]))),
    Case("rl_ppo_clip", rl_ppo_clip, (THETA0, OBS, ACTIONS, OLD_LOGP, ADV)),
    Case("rl_soft_q", rl_soft_q, (W33, OBS, vec(1505, 6, 3), RETURNS, ACTIONS, THETA0)),
    Case("fin_bs_ndtr", fin_bs_ndtr, (0.15 + 0.2 * pos(1506, 4), STRIKES)),
    Case("fin_put_erf", fin_put_erf, (onp.array([85.0, 97.0, 104.0, 118.0]),)),
    Case("fin_greeks_by_grad", fin_greeks_by_grad, (onp.array([90.0, 101.0, 112.0]),)),
    Case("fin_hessian_greeks", fin_hessian_greeks, (onp.array([95.0, 0.3]),)),
    Case("fin_mc_split", fin_mc_split, (onp.array([0.2, 0.3, 0.25]),)),
    Case("fin_mc_asian", fin_mc_asian, (onp.array(-1.5),)),
    Case("fin_cvar", fin_cvar, (vec(1507, 4), vec(1508, 16, 4))),
    Case("rb_quat_rotate", rb_quat_rotate, (onp.array([0.9, 0.2, -0.3, 0.1]), PTS)),
    Case("rb_quat_matrix", rb_quat_matrix, (onp.array([0.8, -0.1, 0.4, 0.3]), PTS)),
    Case("rb_fk_3link", rb_fk_3link, (onp.array([0.3, 0.5, -0.4]),)),
    Case("rb_ik_step", rb_ik_step, (onp.array([0.3, 0.5, -0.4]),)),
    Case("rb_ray_sphere", rb_ray_sphere, (onp.array([0.1, -0.2, 3.0]), RAY_DIRS)),
    Case("rb_soft_raster", rb_soft_raster, (onp.array([[-0.5, -0.4], [0.6, -0.3], [0.0, 0.7]]),)),
    Case("rb_rodrigues", rb_rodrigues, (onp.array([0.3, -0.5, 0.2]), PTS)),
    Case("gn_segment_sum", gn_segment_sum, (W33, NODES)),
    Case("gn_at_add", gn_at_add, (W33, NODES)),
    Case("gn_attention", gn_attention, (vec(1521, 6), NODES)),
    Case("gn_gcn", gn_gcn, (W33, NODES)),
    Case("pde_heat_roll", pde_heat_roll, (vec(1522, 12),)),
    Case("pde_wave_slices", pde_wave_slices, (onp.concatenate([[0.], vec(1523, 8), [0.]]),)),
    Case("pde_poisson_jacobi", pde_poisson_jacobi, (vec(1524, 6, 6),)),
    Case("pde_diffusivity", pde_diffusivity, (vec(1525, 7, scale=0.5), U0)),
    Case("sig_fft_conv", sig_fft_conv, (vec(1532, 5), SIG)),
    Case("sig_frames", sig_frames, (SIG,)),
    Case("sig_autocorr", sig_autocorr, (SIG,)),
    Case("kf_scan", kf_scan, (onp.array([-1.0, -0.5]), YS)),
    Case("em_gmm", em_gmm, (onp.array([-0.5, 0.7]), GMM_X)),
    Case("vae_bernoulli", vae_bernoulli,
         ({"enc": vec(1544, 4, 4, scale=0.5), "dec": vec(1545, 2, 4), "bias": vec(1546, 4)},
          BIN_X)),
    Case("diffusion_loss", diffusion_loss,
         ({"w1": vec(1547, 5, 4), "w2": vec(1548, 4, 3)}, vec(1549, 5, 3))),
    Case("rank_listnet", rank_listnet, (W3, FEATS, REL)),
    Case("rank_sorted_match", rank_sorted_match, (vec(1551, 7),)),
    Case("rank_argsort_pairwise", rank_argsort_pairwise, (W3, FEATS, REL)),
    Case("rank_top_k", rank_top_k, (W3, FEATS)),
    Case("interp_table", interp_table, (FP + 0.1 * vec(1552, 6), XQ)),
    Case("interp_query", interp_query, (XQ,)),
    Case("interp_searchsorted", interp_searchsorted, (XQ, FP)),
    Case("ot_sinkhorn_fori", ot_sinkhorn_fori, (vec(1562, 4, 2), OT_Y)),
    Case("ot_sinkhorn_while", ot_sinkhorn_while, (vec(1563, 4, 2), OT_Y)),
    Case("nce_infonce", nce_infonce, (W33, X, X2)),
    Case("bn_has_aux", bn_has_aux,
         ({"w": vec(1564, 3, 4), "gamma": pos(1565, 4), "beta": vec(1566, 4)}, X)),
    Case("loss_pinball", loss_pinball, (W3, X, Y)),
    Case("loss_huber_where", loss_huber_where, (W3, X, Y)),
    Case("mdn_nll", mdn_nll, ({"w1": vec(1567, 3, 4), "w2": vec(1568, 4, 9, scale=0.5)}, X, Y)),
    Case("st_np_alias", st_np_alias, (W33, X)),
    Case("st_partial_jit_static", st_partial_jit_static, (W33, X)),
    Case("st_tree_partial", st_tree_partial, (W33, X, vec(1572, 6, 3))),
    Case("st_generator_layers", st_generator_layers,
         ([(W33, W3), (vec(1573, 3, 2), vec(1574, 2))], X)),
    Case("st_class_static_methods", st_class_static_methods, (vec(1575, 3, 2), X, Y)),
    Case("st_dataclass_factory", st_dataclass_factory, (W3, X, Y)),
    Case("st_match", st_match, (W33, X)),
    Case("st_walrus", st_walrus, (W33, X)),
    Case("st_assert_shapes", st_assert_shapes, (W3, X, Y)),
    Case("st_enumerate_zip", st_enumerate_zip, ([W33, vec(1576, 3, 3)], X)),
    Case("st_dict_merge", st_dict_merge, ({"w": W3}, X, Y)),
    Case("st_sum_generator", st_sum_generator, ({"a": W33, "b": W3},)),
    Case("st_chained_compare", st_chained_compare, (W3, X)),
    Case("st_match_mapping", st_match_mapping, ({"w": vec(1577, 3, 3), "b": vec(1578, 3)}, X)),
    Case("st_yield_from", st_yield_from, ([W33, vec(1579, 3, 2)], X)),
    Case("st_walrus_comprehension", st_walrus_comprehension, ([W33, vec(1580, 3, 2)], X)),
    Case("st_enumerate_start", st_enumerate_start, ([W33, vec(1581, 3, 3), vec(1582, 3, 3)], X)),
    Case("st_classmethod_constructor", st_classmethod_constructor, (W3, FEATS, REL)),
    Case("rank_argsort_gather", rank_argsort_gather, (W3, FEATS)),
    Case("xent_one_hot", xent_one_hot, (W33, X, LABELS)),
    Case("scan_no_xs", scan_no_xs, (W33,)),
    Case("cond_dict_operand", cond_dict_operand, (W33, X)),
    Case("gn_segment_sum_sorted", gn_segment_sum_sorted, (W33, NODES)),
    Case("at_add_duplicates", at_add_duplicates, (vec(1583, 6), vec(1584, 6))),
    Case("pde_roll_2d", pde_roll_2d, (vec(1585, 5, 5),)),
    Case("sig_stft_overlap_add", sig_stft_overlap_add, (SIG,)),
    Case("lin_recurrence_assoc", lin_recurrence_assoc, (vec(1586, 6), vec(1587, 6))),
    Case("sort_with_payload", sort_with_payload, (vec(1588, 6), vec(1589, 6))),
    Case("gn_segment_max", gn_segment_max, (W33, NODES)),
    Case("pool_reduce_window", pool_reduce_window, (vec(1590, 4, 6),)),
    Case("hard_em_argmax", hard_em_argmax, (onp.array([-0.5, 0.7]), GMM_X)),
    Case("cumsum_reverse", cumsum_reverse, (vec(1591, 6),)),
    Case("slogdet_eigh", slogdet_eigh, (vec(1592, 3, 3),)),
    Case("xlogy_entropy", xlogy_entropy, (vec(1593, 5),)),
    Case("fold_in_noise", fold_in_noise, (W33,)),
    Case("vectorize_signature", vectorize_signature, (W33, X)),
    Case("piecewise_rate", piecewise_rate, (onp.array([-0.8, -0.5, 0.0, 0.2, 0.6, 0.9]),)),
    Case("scan_namedtuple_carry", scan_namedtuple_carry, (W33, vec(1594, 4, 3))),
    Case("dataclass_replace", dataclass_replace, (W33, X)),
    Case("kwargs_model", kwargs_model, ({"w": W33, "b": W3}, X)),
    Case("st_assert_values", st_assert_values, (W33, X)),
    Case("st_walrus_while", st_walrus_while, (W33,)),
    Case("st_match_star", st_match_star, ([W33, vec(1595, 3, 3), vec(1596, 3, 2)], X)),
    Case("st_partial_inline", st_partial_inline, (W33, X, vec(1572, 6, 3))),
    Case("st_closure_kwargs_passed", st_closure_kwargs_passed, (W33, X, vec(1572, 6, 3))),
    Case("st_while_value", st_while_value, (onp.array([0.7, -0.35, 0.45]),)),
]
