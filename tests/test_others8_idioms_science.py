"""Issue 15, code written by others (eighth round): JAX documentation idioms and scientific
programs of kinds earlier rounds did not cover. jax.linearize reused over many tangents, vjp
with has_aux, a batch-norm's running statistics returned as aux, jax.checkpoint on a scan body,
Hessian-vector products of a pytree MLP by jvp-of-grad; the CTC loss by a log-space forward
recursion in a scan against a brute-force sum over alignments, a quantum circuit's state vector
in complex arithmetic (its gradient against the parameter-shift rule), quaternion rotations,
molecular-mechanics bond / angle / dihedral energies (arccos, arctan2, cross products) and their
rotation-invariant forces, a GARCH(1,1) likelihood as a scan, Viterbi decoding with
backpointers followed by a reversed scan, a B-spline by the Cox-de Boor recursion against
SciPy, max and average pooling by lax.reduce_window, a Bradley-Terry ranking model, and an SIR
epidemic fitted through odeint. Checked against float64 finite differences, closed forms,
brute force, SciPy, a Python loop and eager."""
import itertools

import numpy as np
import scipy.integrate
import scipy.interpolate

import secant as jax
import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, lax, vmap
from secant.experimental.ode import odeint
from secant.scipy.special import logsumexp

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(8888)


# --- jax.linearize, vjp with has_aux ------------------------------------------------------------
def field(x):
    return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 2 + jnp.exp(0.5 * x[1]), x[0] * x[1] * x[2]])


def test_linearize_reused_and_vjp_with_aux(x64):
    x = jnp.asarray(RNG.normal(size=3))
    y, f_jvp = jax.linearize(field, x)
    np.testing.assert_allclose(y, field(x), rtol=1e-12)
    jac = jax.jacfwd(field)(x)
    for _ in range(3):
        t = jnp.asarray(RNG.normal(size=3))
        np.testing.assert_allclose(f_jvp(t), jac @ t, rtol=1e-12)
        np.testing.assert_allclose(jit(f_jvp)(t), jac @ t, rtol=1e-12)
    ts = jnp.asarray(RNG.normal(size=(4, 3)))
    np.testing.assert_allclose(vmap(f_jvp)(ts), ts @ jac.T, rtol=1e-12)

    def with_aux(x):
        y = field(x)
        return y, {"norm": jnp.linalg.norm(y)}
    y2, pullback, aux = jax.vjp(with_aux, x, has_aux=True)
    np.testing.assert_allclose(aux["norm"], np.linalg.norm(np.asarray(y)), rtol=1e-12)
    u = jnp.asarray(RNG.normal(size=3))
    np.testing.assert_allclose(pullback(u)[0], u @ jac, rtol=1e-12)


# --- batch norm: running statistics as aux -------------------------------------------------------
def batchnorm_mlp(params, state, x, momentum=0.9):
    h = x @ params["w1"]
    mean, var = jnp.mean(h, 0), jnp.var(h, 0)
    h = (h - mean) / jnp.sqrt(var + 1e-5) * params["gamma"] + params["beta"]
    new_state = {"mean": momentum * state["mean"] + (1 - momentum) * mean,
                 "var": momentum * state["var"] + (1 - momentum) * var}
    return jnp.tanh(h) @ params["w2"], new_state


def test_batchnorm_running_stats_as_aux(x64):
    params = {"w1": RNG.normal(size=(3, 4)), "gamma": np.ones(4), "beta": np.zeros(4),
              "w2": RNG.normal(size=(4, 1))}
    state = {"mean": np.zeros(4), "var": np.ones(4)}
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 1))

    def loss(params, state, x, y):
        pred, new_state = batchnorm_mlp(params, state, x)
        return jnp.mean((pred - y) ** 2), new_state
    (l, new_state), g = jax.value_and_grad(loss, has_aux=True)(to_snp(params), to_snp(state),
                                                                jnp.asarray(x), jnp.asarray(y))
    h = x @ params["w1"]
    np.testing.assert_allclose(new_state["mean"], 0.1 * h.mean(0), rtol=1e-12)
    np.testing.assert_allclose(new_state["var"], 0.9 + 0.1 * h.var(0), rtol=1e-12)
    check_grad(lambda p: loss(p, to_snp(state), jnp.asarray(x), jnp.asarray(y))[0], params)
    # gamma, beta: batch norm makes the loss invariant to w1's column scale
    gw = np.asarray(g["w1"])
    np.testing.assert_allclose(np.sum(gw * params["w1"], 0), 0.0, atol=1e-4)
    (jl, js), jg = jit(jax.value_and_grad(loss, has_aux=True))(to_snp(params), to_snp(state),
                                                                jnp.asarray(x), jnp.asarray(y))
    assert_trees_close((jl, js, jg), (l, new_state, g), rtol=1e-10)


# --- jax.checkpoint on a scan body ------------------------------------------------------------------
def rnn_cell(params, h, x):
    w, u = params
    h = jnp.tanh(h @ w + x @ u)
    return h, jnp.sum(h ** 2)


remat_cell = jax.checkpoint(rnn_cell)


def rnn_loss(params, xs, remat):
    cell = remat_cell if remat else rnn_cell
    _, losses = lax.scan(lambda h, x: cell(params, h, x), jnp.zeros(params[0].shape[0]), xs)
    return jnp.sum(losses)


def rnn_loss_chosen_body(params, xs, remat):
    w, u = params

    def cell(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, jnp.sum(h ** 2)
    body = jax.checkpoint(cell) if remat else cell
    _, losses = lax.scan(body, jnp.zeros(w.shape[0]), xs)
    return jnp.sum(losses)


def test_checkpointed_scan_body(x64):
    params = (RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(2, 3)) * 0.5)
    xs = RNG.normal(size=(5, 2))
    g = check_grad(lambda p: rnn_loss(p, jnp.asarray(xs), True), params)
    assert_trees_close(g, grad(rnn_loss)(to_snp(params), jnp.asarray(xs), False), rtol=1e-12)
    check_vmap(lambda xs: grad(rnn_loss)(to_snp(params), xs, True), (RNG.normal(size=(2, 5, 2)),))
    # policies as the docs write them
    pol = jax.checkpoint(lambda p: rnn_loss(p, jnp.asarray(xs), False), prevent_cse=False)
    np.testing.assert_allclose(grad(pol)(to_snp(params))[0], g[0], rtol=1e-12)


def test_checkpointed_scan_body_chosen_by_a_flag(x64):
    params = to_snp((RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(2, 3)) * 0.5))
    xs = jnp.asarray(RNG.normal(size=(5, 2)))
    want = grad(rnn_loss)(params, xs, False)
    for remat in (True, False):
        assert_trees_close(grad(rnn_loss_chosen_body)(params, xs, remat), want, rtol=1e-12)
    assert_trees_close(grad(rnn_loss_checkpoint_in_the_call)(params, xs), want, rtol=1e-12)
    # forward mode and vmap read the same rewrite
    t = to_snp((RNG.normal(size=(3, 3)), RNG.normal(size=(2, 3))))
    _, dot = jvp(lambda p: rnn_loss_chosen_body(p, xs, True), (params,), (t,))
    want_dot = sum(float(jnp.sum(g * v)) for g, v in zip(want, t))
    np.testing.assert_allclose(dot, want_dot, rtol=1e-10)
    check_vmap(lambda xs: rnn_loss_chosen_body(params, xs, True), (RNG.normal(size=(2, 5, 2)),))


def rnn_loss_checkpoint_in_the_call(params, xs):
    w, u = params

    def cell(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, jnp.sum(h ** 2)
    _, losses = lax.scan(jax.checkpoint(cell, prevent_cse=False), jnp.zeros(w.shape[0]), xs)
    return jnp.sum(losses)


# --- Hessian-vector products of a pytree MLP -----------------------------------------------------------
def mlp_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = jax.nn.gelu(h @ layer["w"] + layer["b"])
    pred = h @ params[-1]["w"] + params[-1]["b"]
    return jnp.mean((pred - y) ** 2)


def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def test_hvp_of_a_pytree_mlp(x64):
    params = [{"w": RNG.normal(size=(2, 3)) * 0.5, "b": RNG.normal(size=3) * 0.1},
              {"w": RNG.normal(size=(3, 1)) * 0.5, "b": np.zeros(1)}]
    x, y = jnp.asarray(RNG.normal(size=(5, 2))), jnp.asarray(RNG.normal(size=(5, 1)))
    f = lambda p: mlp_loss(p, x, y)
    v = jax.tree_util.tree_map(lambda a: RNG.normal(size=a.shape), params)
    got = hvp(f, (to_snp(params),), (to_snp(v),))
    # against finite differences of the gradient along v
    eps = 1e-6
    plus = jax.tree_util.tree_map(lambda p, t: jnp.asarray(p + eps * t), params, v)
    minus = jax.tree_util.tree_map(lambda p, t: jnp.asarray(p - eps * t), params, v)
    want = jax.tree_util.tree_map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps), grad(f)(plus),
                                  grad(f)(minus))
    assert_trees_close(got, want, rtol=1e-6, atol=1e-8)
    assert_trees_close(jit(lambda p, t: hvp(f, (p,), (t,)))(to_snp(params), to_snp(v)), got, rtol=1e-10)
    # reverse-over-reverse agrees
    rr = grad(lambda p: jax.tree_util.tree_reduce(
        lambda a, b: a + b, jax.tree_util.tree_map(lambda g, t: jnp.sum(g * t), grad(f)(p), to_snp(v))))(
        to_snp(params))
    assert_trees_close(rr, got, rtol=1e-9, atol=1e-12)


# --- CTC loss ---------------------------------------------------------------------------------------------
BLANK = 0


def ctc_loss(log_probs, labels):
    """-log p(labels | inputs): the forward recursion over the blank-extended labels."""
    ext = jnp.zeros(2 * labels.shape[0] + 1, dtype=labels.dtype).at[1::2].set(labels)
    s = ext.shape[0]
    skip_ok = jnp.concatenate([jnp.zeros(2, bool), (ext[2:] != BLANK) & (ext[2:] != ext[:-2])])
    neg_inf = -1e30
    alpha0 = jnp.full(s, neg_inf).at[0].set(log_probs[0, BLANK]).at[1].set(log_probs[0, ext[1]])

    def step(alpha, lp):
        prev1 = jnp.concatenate([jnp.full(1, neg_inf), alpha[:-1]])
        prev2 = jnp.where(skip_ok, jnp.concatenate([jnp.full(2, neg_inf), alpha[:-2]]), neg_inf)
        alpha = logsumexp(jnp.stack([alpha, prev1, prev2]), axis=0) + lp[ext]
        return alpha, None
    alpha, _ = lax.scan(step, alpha0, log_probs[1:])
    return -logsumexp(alpha[-2:])


def brute_force_ctc(log_probs, labels):
    t, v = log_probs.shape
    total = []
    for path in itertools.product(range(v), repeat=t):
        collapsed = [k for k, _ in itertools.groupby(path) if k != BLANK]
        if collapsed == list(labels):
            total.append(sum(log_probs[i, p] for i, p in enumerate(path)))
    return -np.logaddexp.reduce(total)


def test_ctc_loss_against_all_alignments(x64):
    logits = RNG.normal(size=(5, 3))
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    for labels in ([1, 2], [1, 1], [2]):
        np.testing.assert_allclose(ctc_loss(jnp.asarray(log_probs), jnp.asarray(labels)),
                                   brute_force_ctc(log_probs, labels), rtol=1e-10)
    labels = jnp.asarray([1, 1])
    loss = lambda logits: ctc_loss(jax.nn.log_softmax(logits), labels)
    check_grad(loss, logits)
    check_vmap(loss, (RNG.normal(size=(3, 5, 3)),))
    # a batch of label sequences of one length
    np.testing.assert_allclose(vmap(ctc_loss, (None, 0))(jnp.asarray(log_probs), jnp.asarray([[1, 2], [2, 2]])),
                               [brute_force_ctc(log_probs, [1, 2]), brute_force_ctc(log_probs, [2, 2])], rtol=1e-10)


# --- a quantum circuit simulated with complex numbers ----------------------------------------------
def ry(theta):
    c, s = jnp.cos(theta / 2), jnp.sin(theta / 2)
    return jnp.array([[c, -s], [s, c]]).astype(jnp.complex128)


def rz(theta):
    return jnp.diag(jnp.stack([jnp.exp(-0.5j * theta), jnp.exp(0.5j * theta)]))


def apply_one(state, gate, wire):
    state = jnp.moveaxis(state, wire, 0)
    state = jnp.tensordot(gate, state, axes=1)
    return jnp.moveaxis(state, 0, wire)


CNOT = np.eye(4)[[0, 1, 3, 2]].reshape(2, 2, 2, 2)


def circuit_expectation(params):
    state = jnp.zeros((2, 2), jnp.complex128).at[0, 0].set(1.0)
    state = apply_one(state, ry(params[0]), 0)
    state = apply_one(state, ry(params[1]), 1)
    state = jnp.tensordot(CNOT, state, axes=2)
    state = apply_one(state, rz(params[2]), 0)
    state = apply_one(state, ry(params[3]), 0)
    z = jnp.array([1.0, -1.0])
    probs = jnp.abs(state) ** 2
    return jnp.sum(probs * z[:, None] * z[None, :])       # <Z0 Z1>


def test_quantum_circuit_parameter_shift(x64):
    params = RNG.uniform(-np.pi, np.pi, size=4)
    g = check_grad(circuit_expectation, params)
    shift = np.eye(4) * np.pi / 2
    ps = [0.5 * (circuit_expectation(jnp.asarray(params + s)) - circuit_expectation(jnp.asarray(params - s)))
          for s in shift]
    np.testing.assert_allclose(g, ps, rtol=1e-10, atol=1e-12)
    check_vmap(circuit_expectation, (RNG.uniform(-3, 3, size=(3, 4)),))
    check_vmap(grad(circuit_expectation), (RNG.uniform(-3, 3, size=(2, 4)),))
    h = hessian(circuit_expectation)(jnp.asarray(params))
    np.testing.assert_allclose(h, np.asarray(h).T, atol=1e-12)
    np.testing.assert_allclose(h[0], fd_grad(lambda p: grad(circuit_expectation)(p)[0], (jnp.asarray(params),)),
                               rtol=1e-6, atol=1e-8)


# --- quaternions -------------------------------------------------------------------------------------------
def quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return jnp.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                      w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_rotate(q, v):
    q = q / jnp.linalg.norm(q)
    conj = q * jnp.array([1.0, -1.0, -1.0, -1.0])
    return quat_mul(quat_mul(q, jnp.concatenate([jnp.zeros(1), v])), conj)[1:]


def quat_to_matrix(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_quaternion_rotation_fit(x64):
    q, v = RNG.normal(size=4), RNG.normal(size=3)
    np.testing.assert_allclose(quat_rotate(jnp.asarray(q), jnp.asarray(v)), quat_to_matrix(q) @ v, rtol=1e-12)
    pts = RNG.normal(size=(5, 3))
    target = pts @ quat_to_matrix(np.array([0.9, 0.1, -0.3, 0.2])).T
    loss = lambda q: jnp.sum((vmap(lambda p: quat_rotate(q, p))(jnp.asarray(pts)) - target) ** 2)
    g = check_grad(loss, q)
    np.testing.assert_allclose(jnp.dot(g, q), 0.0, atol=1e-10)     # invariant to |q|
    check_vmap(quat_rotate, (RNG.normal(size=(3, 4)), RNG.normal(size=(3, 3))))
    jac = jax.jacfwd(quat_rotate, argnums=1)(jnp.asarray(q), jnp.asarray(v))
    np.testing.assert_allclose(jac, quat_to_matrix(q), rtol=1e-12, atol=1e-14)


# --- molecular mechanics: bonds, angles, dihedrals --------------------------------------------------
def bond_angle_dihedral_energy(pos, k_b=100.0, r0=1.0, k_a=20.0, theta0=1.9, k_d=2.0):
    b1, b2, b3 = pos[1] - pos[0], pos[2] - pos[1], pos[3] - pos[2]
    bonds = jnp.stack([jnp.linalg.norm(b1), jnp.linalg.norm(b2), jnp.linalg.norm(b3)])
    e_bond = 0.5 * k_b * jnp.sum((bonds - r0) ** 2)

    def angle(u, w):
        cos = jnp.dot(-u, w) / (jnp.linalg.norm(u) * jnp.linalg.norm(w))
        return jnp.arccos(jnp.clip(cos, -1.0, 1.0))
    e_angle = 0.5 * k_a * ((angle(b1, b2) - theta0) ** 2 + (angle(b2, b3) - theta0) ** 2)
    n1, n2 = jnp.cross(b1, b2), jnp.cross(b2, b3)
    m1 = jnp.cross(n1, b2 / jnp.linalg.norm(b2))
    phi = jnp.arctan2(jnp.dot(m1, n2), jnp.dot(n1, n2))
    e_dihedral = k_d * (1 + jnp.cos(3 * phi))
    return e_bond + e_angle + e_dihedral, phi


def rotation(axis, angle):
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def test_molecular_mechanics_forces(x64):
    pos = np.array([[0.0, 0.0, 0.0], [1.0, 0.1, 0.0], [1.4, 1.0, 0.1], [2.3, 1.2, 0.9]])
    pos += 0.05 * RNG.normal(size=pos.shape)
    energy = lambda p: bond_angle_dihedral_energy(p)[0]
    forces = -check_grad(energy, pos)
    np.testing.assert_allclose(forces.sum(0), 0.0, atol=1e-10)                     # translation
    np.testing.assert_allclose(np.cross(pos, forces).sum(0), 0.0, atol=1e-9)       # rotation
    rot = rotation(np.array([0.3, -1.0, 0.5]), 0.7)
    np.testing.assert_allclose(-grad(energy)(jnp.asarray(pos @ rot.T)), forces @ rot.T, rtol=1e-9, atol=1e-11)
    # the dihedral against the textbook formula
    b1, b2, b3 = pos[1] - pos[0], pos[2] - pos[1], pos[3] - pos[2]
    n1, n2 = np.cross(b1, b2), np.cross(b2, b3)
    want = np.arctan2(np.dot(np.cross(n2, n1), b2 / np.linalg.norm(b2)), np.dot(n1, n2))
    np.testing.assert_allclose(bond_angle_dihedral_energy(jnp.asarray(pos))[1], want, rtol=1e-12)
    frames = pos + 0.05 * RNG.normal(size=(3, 4, 3))
    check_vmap(grad(energy), (frames,), jit=False)     # (jit of it: 18 s of compiling)
    h = hessian(energy)(jnp.asarray(pos))
    np.testing.assert_allclose(np.asarray(h).reshape(12, 12).sum(0), 0.0, atol=1e-8)


# --- GARCH(1,1) ---------------------------------------------------------------------------------------------
def garch_nll(params, returns):
    omega, alpha, beta = jnp.exp(params[0]), jax.nn.sigmoid(params[1]), jax.nn.sigmoid(params[2])

    def step(var, r):
        nll = 0.5 * (jnp.log(2 * jnp.pi * var) + r ** 2 / var)
        return omega + alpha * r ** 2 + beta * var, nll
    _, nlls = lax.scan(step, jnp.var(returns), returns)
    return jnp.sum(nlls)


def test_garch_likelihood(x64):
    returns = 0.1 * RNG.normal(size=12)
    params = np.array([-5.0, -2.0, 1.0])
    om, al, be = np.exp(-5.0), 1 / (1 + np.exp(2.0)), 1 / (1 + np.exp(-1.0))
    var, want = returns.var(), 0.0
    for r in returns:
        want += 0.5 * (np.log(2 * np.pi * var) + r ** 2 / var)
        var = om + al * r ** 2 + be * var
    np.testing.assert_allclose(garch_nll(jnp.asarray(params), jnp.asarray(returns)), want, rtol=1e-12)
    check_grad(garch_nll, params, returns)
    check_grad(garch_nll, params, returns, argnum=1)
    check_vmap(lambda r: garch_nll(jnp.asarray(params), r), (0.1 * RNG.normal(size=(3, 12)),))
    h = hessian(garch_nll)(jnp.asarray(params), jnp.asarray(returns))
    np.testing.assert_allclose(h[1], check_grad(lambda p: grad(garch_nll)(p, jnp.asarray(returns))[1], params),
                               rtol=1e-6, atol=1e-8)


# --- Viterbi decoding ---------------------------------------------------------------------------------------
def viterbi(log_init, log_trans, log_emit, obs):
    def forward(score, o):
        cand = score[:, None] + log_trans
        return jnp.max(cand, 0) + log_emit[:, o], jnp.argmax(cand, 0)
    score, backptrs = lax.scan(forward, log_init + log_emit[:, obs[0]], obs[1:])
    last = jnp.argmax(score)

    def backward(state, bp):
        prev = bp[state]
        return prev, state
    first, path = lax.scan(backward, last, backptrs, reverse=True)
    return jnp.concatenate([first[None], path]), jnp.max(score)


def test_viterbi_against_brute_force(x64):
    k, t = 3, 5
    li = np.log(RNG.dirichlet(np.ones(k)))
    lt = np.log(RNG.dirichlet(np.ones(k), size=k))
    le = np.log(RNG.dirichlet(np.ones(4), size=k))
    obs = RNG.integers(0, 4, size=t)
    best, best_score = None, -np.inf
    for path in itertools.product(range(k), repeat=t):
        s = li[path[0]] + le[path[0], obs[0]] + sum(lt[path[i - 1], path[i]] + le[path[i], obs[i]]
                                                    for i in range(1, t))
        if s > best_score:
            best, best_score = path, s
    args = tuple(map(jnp.asarray, (li, lt, le, obs)))
    path, score = viterbi(*args)
    np.testing.assert_array_equal(path, best)
    np.testing.assert_allclose(score, best_score, rtol=1e-12)
    jpath, jscore = jit(viterbi)(*args)
    np.testing.assert_array_equal(jpath, best)
    many = RNG.integers(0, 4, size=(3, t))
    vpaths, _ = vmap(viterbi, (None, None, None, 0))(*args[:3], jnp.asarray(many))
    np.testing.assert_array_equal(vpaths, [viterbi(*args[:3], jnp.asarray(o))[0] for o in many])
    # the best score's gradient in the emissions counts the best path's (state, symbol) pairs
    g = grad(lambda le: viterbi(args[0], args[1], le, args[3])[1])(args[2])
    want = np.zeros((k, 4))
    for i, s in enumerate(best):
        want[s, obs[i]] += 1
    np.testing.assert_allclose(g, want)


# --- B-splines by the Cox-de Boor recursion ---------------------------------------------------------------
def bspline_basis(x, knots, degree):
    n = len(knots) - 1
    basis = [jnp.where((knots[i] <= x) & (x < knots[i + 1]), 1.0, 0.0) for i in range(n)]
    for d in range(1, degree + 1):
        new = []
        for i in range(n - d):
            left = (x - knots[i]) / (knots[i + d] - knots[i]) if knots[i + d] > knots[i] else 0.0
            right = (knots[i + d + 1] - x) / (knots[i + d + 1] - knots[i + 1]) \
                if knots[i + d + 1] > knots[i + 1] else 0.0
            new.append(left * basis[i] + right * basis[i + 1])
        basis = new
    return jnp.stack(basis, axis=-1)


KNOTS = np.array([0, 0, 0, 0, 0.3, 0.6, 1, 1, 1, 1.0])


def spline_curve(coefs, x):
    return bspline_basis(x, KNOTS, 3) @ coefs


def test_bspline_cox_de_boor_against_scipy(x64):
    coefs = RNG.normal(size=6)
    x = np.linspace(0.05, 0.95, 7)
    ref = scipy.interpolate.BSpline(KNOTS, coefs, 3)
    np.testing.assert_allclose(spline_curve(jnp.asarray(coefs), jnp.asarray(x)), ref(x), rtol=1e-12)
    np.testing.assert_allclose(jit(spline_curve)(jnp.asarray(coefs), jnp.asarray(x)), ref(x), rtol=1e-12)
    slope = vmap(grad(spline_curve, argnums=1), (None, 0))(jnp.asarray(coefs), jnp.asarray(x))
    np.testing.assert_allclose(slope, ref.derivative()(x), rtol=1e-9)
    y = np.sin(3 * x)
    check_grad(lambda c: jnp.sum((spline_curve(c, jnp.asarray(x)) - y) ** 2), coefs)
    check_vmap(lambda c: spline_curve(c, jnp.asarray(x)), (RNG.normal(size=(3, 6)),))


# --- pooling by lax.reduce_window ----------------------------------------------------------------------------
def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID")


def avg_pool(x):
    return lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID") / 4.0


def test_pooling_by_reduce_window(x64):
    x = RNG.normal(size=(4, 6))
    np.testing.assert_allclose(max_pool(jnp.asarray(x)), x.reshape(2, 2, 3, 2).max(axis=(1, 3)))
    want_avg = (x[:-1, :-1] + x[1:, :-1] + x[:-1, 1:] + x[1:, 1:]) / 4
    np.testing.assert_allclose(avg_pool(jnp.asarray(x)), want_avg, rtol=1e-12)
    g = check_grad(lambda x: jnp.sum(max_pool(x) * jnp.arange(6.0).reshape(2, 3)), x)
    blocks = x.reshape(2, 2, 3, 2).transpose(0, 2, 1, 3).reshape(2, 3, 4)
    assert np.count_nonzero(g) == 5          # one winner a window (the zero-weight window: none)
    assert np.argmax(blocks[0, 1]) == np.argmax(np.asarray(g).reshape(2, 2, 3, 2).transpose(0, 2, 1, 3).reshape(2, 3, 4)[0, 1])
    check_grad(lambda x: jnp.sum(jnp.sin(avg_pool(x))), x)
    check_vmap(max_pool, (RNG.normal(size=(2, 4, 6)),))
    check_vmap(grad(lambda x: jnp.sum(avg_pool(x) ** 2)), (RNG.normal(size=(2, 4, 6)),))


# --- Bradley-Terry ranking -------------------------------------------------------------------------------------
def bradley_terry_nll(skills, winners, losers, l2=0.1):
    diff = skills[winners] - skills[losers]
    return -jnp.sum(jax.nn.log_sigmoid(diff)) + l2 * jnp.sum(skills ** 2)


def test_bradley_terry(x64):
    winners, losers = np.array([0, 0, 1, 2, 3, 1, 2]), np.array([1, 2, 2, 3, 0, 3, 1])
    skills = RNG.normal(size=4)
    g = check_grad(bradley_terry_nll, skills, winners, losers)
    s = 1 / (1 + np.exp(skills[winners] - skills[losers]))
    want = 0.2 * skills
    np.add.at(want, winners, -s)
    np.add.at(want, losers, s)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    h = hessian(bradley_terry_nll)(jnp.asarray(skills), winners, losers)
    w = s * (1 - s)
    lap = 0.2 * np.eye(4)
    for a, b, ww in zip(winners, losers, w):
        lap[a, a] += ww
        lap[b, b] += ww
        lap[a, b] -= ww
        lap[b, a] -= ww
    np.testing.assert_allclose(h, lap, rtol=1e-10, atol=1e-13)
    check_vmap(lambda s: grad(bradley_terry_nll)(s, winners, losers), (RNG.normal(size=(3, 4)),))


# --- an SIR epidemic fitted through odeint ------------------------------------------------------------------------
def sir(y, t, beta, gamma):
    s, i, r = y
    return jnp.stack([-beta * s * i, beta * s * i - gamma * i, gamma * i])


def sir_loss(log_params, ts, observed):
    beta, gamma = jnp.exp(log_params)
    ys = odeint(sir, jnp.asarray([0.99, 0.01, 0.0]), ts, beta, gamma, rtol=1e-10, atol=1e-10)
    return jnp.mean((ys[:, 1] - observed) ** 2)


def test_sir_fit_through_odeint(x64):
    ts = jnp.linspace(0.0, 6.0, 4)
    observed = np.asarray(odeint(sir, jnp.asarray([0.99, 0.01, 0.0]), ts, 1.5, 0.4,
                                 rtol=1e-10, atol=1e-10)[:, 1])
    ref = scipy.integrate.solve_ivp(
        lambda t, y: [-1.5 * y[0] * y[1], 1.5 * y[0] * y[1] - 0.4 * y[1], 0.4 * y[1]], (0, 6),
        [0.99, 0.01, 0.0], t_eval=np.asarray(ts), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(observed, ref.y[1], rtol=1e-6, atol=1e-9)
    log_params = np.log([1.2, 0.5])
    g = grad(sir_loss)(jnp.asarray(log_params), ts, jnp.asarray(observed))
    np.testing.assert_allclose(g, fd_grad(sir_loss, (jnp.asarray(log_params), ts, jnp.asarray(observed))),
                               rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(grad(sir_loss)(jnp.asarray(np.log([1.5, 0.4])), ts, jnp.asarray(observed)), 0.0,
                               atol=1e-7)     # at the truth
