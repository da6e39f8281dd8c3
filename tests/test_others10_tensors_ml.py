"""Issue 15, code written by others (tenth round): einsum-heavy and second-order ML code of kinds
earlier rounds did not cover. A matrix-product-state amplitude contracted site by site with
lax.scan and einsum, a Tucker decomposition's reconstruction loss, Newton-Schulz
orthogonalisation (the Muon optimiser's quintic iteration) of a gradient, the empirical neural
tangent kernel from jacrev of a dict-parameter network contracted with tree_map, an influence
function from Hessian-vector products solved by conjugate gradients in a fori_loop, and a policy
gradient with random.categorical actions (the score-function estimator against its
log-probability gradient written in NumPy). Checked against float64 central differences, NumPy
einsum and loops, closed forms, a Python loop for vmap and eager for jit."""
import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacrev, jit, jvp, lax, nn, random, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(10030)


# --- a matrix product state ---------------------------------------------------------------------------
N_SITES, BOND, PHYS = 5, 3, 2
MPS = RNG.normal(size=(N_SITES, BOND, PHYS, BOND)) * 0.6


def mps_amplitude(tensors, config):
    """<config|psi> with periodic boundary: trace of the product of the selected matrices."""
    def site(carry, inputs):
        A, s = inputs
        M = jnp.einsum("apb,p->ab", A, nn.one_hot(s, PHYS))
        return jnp.einsum("ab,bc->ac", carry, M), None
    prod, _ = lax.scan(site, jnp.eye(BOND), (tensors, config))
    return jnp.einsum("aa->", prod)


def np_amplitude(tensors, config):
    m = np.eye(BOND)
    for A, s in zip(tensors, config):
        m = m @ A[:, s, :]
    return np.trace(m)


CONFIGS = np.array([[0, 1, 1, 0, 1], [1, 1, 0, 0, 0], [0, 0, 0, 1, 1], [1, 0, 1, 0, 1]])


def log_norm_amp(tensors, config):
    return jnp.log(mps_amplitude(tensors, config) ** 2)


def test_mps_amplitude_scan_einsum(x64):
    for c in CONFIGS:
        np.testing.assert_allclose(mps_amplitude(jnp.asarray(MPS), jnp.asarray(c)),
                                   np_amplitude(MPS, c), rtol=1e-12)
    check_grad(log_norm_amp, MPS, CONFIGS[0])
    check_vmap(lambda c: mps_amplitude(MPS, c), (CONFIGS,))
    g_batch = check_vmap(lambda c: grad(log_norm_amp)(MPS, c), (CONFIGS,), jit=False)
    # the amplitude is linear in each site tensor: d amp / d A_k contracted with A_k is amp
    g = np.asarray(grad(mps_amplitude)(jnp.asarray(MPS), jnp.asarray(CONFIGS[1])))
    for k in range(N_SITES):
        np.testing.assert_allclose(np.sum(g[k] * MPS[k]), np_amplitude(MPS, CONFIGS[1]),
                                   rtol=1e-10)
    assert g_batch.shape == (4,) + MPS.shape


# --- a Tucker decomposition ---------------------------------------------------------------------------
TENSOR = RNG.normal(size=(4, 3, 5))


def tucker_loss(params):
    core, U1, U2, U3 = params["core"], params["U1"], params["U2"], params["U3"]
    recon = jnp.einsum("abc,ia,jb,kc->ijk", core, U1, U2, U3)
    ortho = sum(jnp.sum((U.T @ U - jnp.eye(U.shape[1])) ** 2) for U in (U1, U2, U3))
    return jnp.sum((recon - TENSOR) ** 2) + 0.1 * ortho


TUCKER = {"core": RNG.normal(size=(2, 2, 3)), "U1": RNG.normal(size=(4, 2)) * 0.5,
          "U2": RNG.normal(size=(3, 2)) * 0.5, "U3": RNG.normal(size=(5, 3)) * 0.5}


def test_tucker_reconstruction_loss(x64):
    p = TUCKER
    recon = np.einsum("abc,ia,jb,kc->ijk", p["core"], p["U1"], p["U2"], p["U3"])
    want = np.sum((recon - TENSOR) ** 2) + 0.1 * sum(
        np.sum((U.T @ U - np.eye(U.shape[1])) ** 2) for U in (p["U1"], p["U2"], p["U3"]))
    np.testing.assert_allclose(tucker_loss(to_snp(p)), want, rtol=1e-12)
    g = check_grad(tucker_loss, p)
    # the core's gradient in closed form: 2 * residual contracted with the factors
    resid = recon - TENSOR
    np.testing.assert_allclose(g["core"], 2 * np.einsum("ijk,ia,jb,kc->abc", resid, p["U1"],
                                                        p["U2"], p["U3"]), rtol=1e-10)
    # a Hessian-vector product by jvp of grad against differences of grad
    v = tree_util.tree_map(lambda a: RNG.normal(size=a.shape), p)
    _, hv = jvp(grad(tucker_loss), (to_snp(p),), (to_snp(v),))
    eps = 1e-6
    up = grad(tucker_loss)(tree_util.tree_map(lambda a, b: jnp.asarray(a + eps * b), p, v))
    dn = grad(tucker_loss)(tree_util.tree_map(lambda a, b: jnp.asarray(a - eps * b), p, v))
    assert_trees_close(hv, tree_util.tree_map(lambda a, b: (a - b) / (2 * eps), up, dn),
                       rtol=1e-5, atol=1e-6)


# --- Newton-Schulz orthogonalisation (Muon) ------------------------------------------------------------
def newton_schulz(G, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G / (jnp.linalg.norm(G) + 1e-7)
    transpose = G.shape[0] > G.shape[1]
    if transpose:
        X = X.T
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A
        X = a * X + B @ X
    return X.T if transpose else X


def np_newton_schulz(G, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G / (np.linalg.norm(G) + 1e-7)
    t = G.shape[0] > G.shape[1]
    X = X.T if t else X
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if t else X


def test_newton_schulz_orthogonalisation(x64):
    for shape in ((3, 5), (5, 3)):
        G = RNG.normal(size=shape)
        O = newton_schulz(jnp.asarray(G))
        np.testing.assert_allclose(O, np_newton_schulz(G), rtol=1e-10)
        # singular values pushed towards 1 (Muon's quintic lands in about [0.7, 1.2])
        s = np.linalg.svd(np.asarray(O), compute_uv=False)
        assert np.all((s > 0.5) & (s < 1.3))
        check_grad(lambda G: jnp.sum(newton_schulz(G) * jnp.arange(G.size).reshape(G.shape)), G)
    Gs = RNG.normal(size=(3, 4, 2))
    check_vmap(newton_schulz, (Gs,))
    # a Muon-like update inside a jitted step: equal to eager
    W = RNG.normal(size=(4, 3))
    loss = lambda W: jnp.sum(jnp.tanh(W) ** 2)
    step = lambda W: W - 0.1 * newton_schulz(grad(loss)(W))
    np.testing.assert_allclose(jit(step)(jnp.asarray(W)), step(jnp.asarray(W)), rtol=1e-10)


# --- the empirical neural tangent kernel ---------------------------------------------------------------
NTK_PARAMS = {"W1": RNG.normal(size=(3, 4)) / np.sqrt(3), "b1": np.zeros(4),
              "w2": RNG.normal(size=4) / 2.0}


def net(params, x):
    return jnp.tanh(x @ params["W1"] + params["b1"]) @ params["w2"]


def empirical_ntk(params, x1, x2):
    j1 = jacrev(net)(params, x1)            # a dict of (n1, ...) per parameter
    j2 = jacrev(net)(params, x2)
    per_leaf = tree_util.tree_map(
        lambda a, b: jnp.einsum("i...,j...->ij", a, b), j1, j2)
    return sum(tree_util.tree_leaves(per_leaf))


def ntk_by_jvp_vjp(params, x1, x2):
    """The same kernel column by column: vjp of a one-hot, then jvp along it."""
    def column(j):
        _, pullback = secant.vjp(lambda p: net(p, x2), params)
        (ct,) = pullback(jnp.zeros(x2.shape[0]).at[j].set(1.0))
        return jvp(lambda p: net(p, x1), (params,), (ct,))[1]
    return jnp.stack([column(j) for j in range(x2.shape[0])], axis=1)


def test_empirical_ntk(x64):
    x1, x2 = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3))
    K = empirical_ntk(to_snp(NTK_PARAMS), jnp.asarray(x1), jnp.asarray(x2))
    assert K.shape == (4, 3)
    # against the Jacobians written out by central differences
    def fd_jac(x):
        rows = [fd_grad(lambda p: net(p, jnp.asarray(x))[i], (to_snp(NTK_PARAMS),))
                for i in range(x.shape[0])]
        return np.stack([np.concatenate([np.ravel(r[k]) for k in sorted(r)]) for r in rows])
    np.testing.assert_allclose(K, fd_jac(x1) @ fd_jac(x2).T, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ntk_by_jvp_vjp(to_snp(NTK_PARAMS), jnp.asarray(x1),
                                              jnp.asarray(x2)), K, rtol=1e-10)
    # symmetric positive semi-definite on one set; jit equals eager
    Kxx = jit(empirical_ntk)(to_snp(NTK_PARAMS), jnp.asarray(x1), jnp.asarray(x1))
    np.testing.assert_allclose(Kxx, np.asarray(Kxx).T, rtol=1e-10)
    assert np.linalg.eigvalsh(np.asarray(Kxx)).min() > -1e-10
    # an NTK regression prediction's gradient in the test input against fd
    y2 = RNG.normal(size=3)
    pred = lambda x: (empirical_ntk(NTK_PARAMS, x[None], x2)
                      @ jnp.linalg.solve(empirical_ntk(NTK_PARAMS, x2, x2) + 0.1 * jnp.eye(3),
                                         y2))[0]
    check_grad(pred, x1[0])


# --- an influence function by conjugate gradients on Hessian-vector products ---------------------------
XD = RNG.normal(size=(12, 3))
YD = (XD @ np.array([1.0, -1.0, 0.5]) + 0.3 * RNG.normal(size=12) > 0).astype(float)


def example_loss(w, x, y):
    z = x @ w
    return jnp.logaddexp(0.0, z) - y * z


def train_loss(w):
    return jnp.mean(vmap(example_loss, (None, 0, 0))(w, XD, YD)) + 0.05 * jnp.sum(w ** 2)


def hvp(w, v):
    return jvp(grad(train_loss), (w,), (v,))[1]


def cg_solve(w, b, iters=8):
    def body(i, state):
        x, r, p, rs = state
        Ap = hvp(w, p)
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + rs_new / rs * p
        return x, r, p, rs_new
    x0 = jnp.zeros_like(b)
    return lax.fori_loop(0, iters, body, (x0, b, b, b @ b))[0]


def influence(w, x_test, y_test, i):
    g_test = grad(example_loss)(w, x_test, y_test)
    s_test = cg_solve(w, g_test)
    return -s_test @ grad(example_loss)(w, XD[i], YD[i])


def test_influence_function_cg_on_hvp(x64):
    w = jnp.asarray([0.3, -0.2, 0.1])
    H = hessian(train_loss)(w)
    for i in range(3):
        want = -np.linalg.solve(H, grad(example_loss)(w, XD[5], YD[5])) @ np.asarray(
            grad(example_loss)(w, XD[i], YD[i]))
        np.testing.assert_allclose(influence(w, jnp.asarray(XD[5]), YD[5], i), want, rtol=1e-8)
    # hvp against H @ v, and under vmap over a batch of vectors
    vs = RNG.normal(size=(3, 3))
    np.testing.assert_allclose(vmap(lambda v: hvp(w, v))(jnp.asarray(vs)), vs @ np.asarray(H).T,
                               rtol=1e-10)
    np.testing.assert_allclose(jit(influence, static_argnums=3)(w, jnp.asarray(XD[5]), YD[5], 0),
                               influence(w, jnp.asarray(XD[5]), YD[5], 0), rtol=1e-10)
    # the influence's gradient in the test input (third order through cg): against fd
    check_grad(lambda x: influence(w, x, 1.0, 2), XD[5])


# --- a policy gradient with categorical sampling --------------------------------------------------------
N_STATES, N_ACTIONS = 4, 3
REWARD = np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 0.0], [-1.0, 0.5, 1.0], [0.3, 0.3, 0.3]])


def rollout_surrogate(theta, key, n=64):
    k1, k2 = random.split(key)
    states = random.randint(k1, (n,), 0, N_STATES)
    logits = theta[states]
    actions = random.categorical(k2, logits)
    logp = nn.log_softmax(logits)[jnp.arange(n), actions]
    rewards = jnp.asarray(REWARD)[states, actions]
    baseline = jnp.mean(rewards)
    return jnp.mean(lax.stop_gradient(rewards - baseline) * logp), (states, actions, rewards)


def test_policy_gradient_score_function(x64):
    theta = RNG.normal(size=(N_STATES, N_ACTIONS)) * 0.3
    key = random.PRNGKey(7)
    (_, (s, a, r)), g = secant.value_and_grad(rollout_surrogate, has_aux=True)(
        jnp.asarray(theta), key)
    s, a, r = np.asarray(s), np.asarray(a), np.asarray(r)
    assert s.min() >= 0 and s.max() < N_STATES and a.min() >= 0 and a.max() < N_ACTIONS
    np.testing.assert_allclose(r, REWARD[s, a])
    # the estimator written in NumPy: mean of (r - b) * (onehot(a) - softmax(theta[s]))
    p = np.exp(theta[s]) / np.exp(theta[s]).sum(-1, keepdims=True)
    want = np.zeros_like(theta)
    for si, ai, ri, pi in zip(s, a, r, p):
        want[si] += (ri - r.mean()) * (np.eye(N_ACTIONS)[ai] - pi) / len(s)
    np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
    # jit: same key, same samples, same gradient
    g_jit = jit(grad(lambda t, k: rollout_surrogate(t, k)[0]))(jnp.asarray(theta), key)
    np.testing.assert_allclose(g_jit, g, rtol=1e-10, atol=1e-12)
    # independent rollouts by vmap over keys, against a loop
    keys = random.split(key, 3)
    check_vmap(lambda k: grad(lambda t: rollout_surrogate(t, k)[0])(jnp.asarray(theta)), (keys,),
               jit=False)
    # many rollouts' mean gradient approaches the exact policy gradient
    grads = vmap(lambda k: grad(lambda t: rollout_surrogate(t, k, n=256)[0])(jnp.asarray(theta)))(
        random.split(key, 32))
    pexact = np.exp(theta) / np.exp(theta).sum(-1, keepdims=True)
    exact = np.zeros_like(theta)
    for si in range(N_STATES):          # d/dtheta of E_s E_a[r], s uniform
        ev = pexact[si] @ REWARD[si]
        exact[si] = pexact[si] * (REWARD[si] - ev) / N_STATES
    np.testing.assert_allclose(np.mean(np.asarray(grads), axis=0), exact, atol=0.06)
