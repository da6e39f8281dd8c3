"""Issue 15, code written by others (eighth round): graph networks, sparse matrices, flows and
mixtures as their authors write them with JAX. A jraph-like GraphsTuple namedtuple through a
GraphNetwork (edge, node and global updates, aggregation by a segment_sum written with
.at[].add), padded graph batches read out by jnp.repeat(..., total_repeat_length=...), a
max-aggregating GraphSAGE layer whose empty segments are masked, CSR / COO sparse products,
a Dirichlet energy whose hessian is the graph Laplacian, PageRank by power iteration; a Glow-like
flow (actnorm, an LU-parameterised 1x1 mixing, an affine coupling), a MADE autoregressive flow
with a triangular Jacobian, a full-rank Gaussian SVI guide, a Gaussian mixture's gradient against
Fisher's identity and stick-breaking weights. Checked against float64 finite differences, closed
forms, NumPy written out, a Python loop and eager."""
from collections import namedtuple

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jit, lax, random, vmap
from secant.scipy.special import logsumexp

from others15_check import assert_trees_close, check_grad, check_vmap, to_snp

RNG = np.random.default_rng(808)


def mlp_init(sizes, scale=0.4):
    return [(RNG.normal(size=(m, n)) * scale, RNG.normal(size=n) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:])]


def mlp(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


# --- a jraph-like GraphNetwork ------------------------------------------------------------------
GraphsTuple = namedtuple("GraphsTuple", ["nodes", "edges", "receivers", "senders", "globals",
                                         "n_node", "n_edge"])


def segment_sum(data, segment_ids, num_segments):
    return jnp.zeros((num_segments,) + data.shape[1:], data.dtype).at[segment_ids].add(data)


def graph_network_update(params, graph):
    nodes, edges, receivers, senders, globals_, n_node, n_edge = graph
    n = nodes.shape[0]
    g_edges = jnp.broadcast_to(globals_, (edges.shape[0], globals_.shape[-1]))
    edges = mlp(params["edge"], jnp.concatenate(
        [edges, nodes[senders], nodes[receivers], g_edges], axis=-1))
    received = segment_sum(edges, receivers, n)
    g_nodes = jnp.broadcast_to(globals_, (n, globals_.shape[-1]))
    nodes = mlp(params["node"], jnp.concatenate([nodes, received, g_nodes], axis=-1))
    globals_ = mlp(params["global"], jnp.concatenate(
        [jnp.sum(nodes, 0), jnp.sum(edges, 0), globals_], axis=-1))
    return nodes, edges, globals_


def graph_network(params, graph):
    nodes, edges, globals_ = graph_network_update(params, graph)
    return GraphsTuple(nodes=nodes, edges=edges, receivers=graph.receivers, senders=graph.senders,
                       globals=globals_, n_node=graph.n_node, n_edge=graph.n_edge)


def graph_network_replace(params, graph):
    """jraph's own spelling."""
    nodes, edges, globals_ = graph_network_update(params, graph)
    return graph._replace(nodes=nodes, edges=edges, globals=globals_)


SENDERS = np.array([0, 1, 2, 3, 0, 2])
RECEIVERS = np.array([1, 2, 3, 0, 2, 1])


def a_graph(node_features):
    return GraphsTuple(nodes=node_features, edges=jnp.asarray(RNG.normal(size=(6, 2))),
                       receivers=RECEIVERS, senders=SENDERS, globals=jnp.asarray([0.3]),
                       n_node=np.array([4]), n_edge=np.array([6]))


GN_PARAMS = {"edge": mlp_init([2 + 3 + 3 + 1, 4, 3]), "node": mlp_init([3 + 3 + 1, 4, 3]),
             "global": mlp_init([3 + 3 + 1, 2])}


def np_graph_network(params, nodes, edges, glob):
    def np_mlp(ps, x):
        for w, b in ps[:-1]:
            x = np.tanh(x @ w + b)
        return x @ ps[-1][0] + ps[-1][1]
    new_edges = np.stack([np_mlp(params["edge"], np.concatenate(
        [edges[e], nodes[SENDERS[e]], nodes[RECEIVERS[e]], glob])) for e in range(6)])
    received = np.zeros((4, 3))
    for e in range(6):
        received[RECEIVERS[e]] += new_edges[e]
    new_nodes = np.stack([np_mlp(params["node"], np.concatenate([nodes[i], received[i], glob]))
                          for i in range(4)])
    return np_mlp(params["global"], np.concatenate([new_nodes.sum(0), new_edges.sum(0), glob]))


def test_graph_network_on_a_graphs_tuple(x64):
    nodes = RNG.normal(size=(4, 3))
    graph = a_graph(jnp.asarray(nodes))
    out = graph_network(to_snp(GN_PARAMS), graph)
    assert isinstance(out, GraphsTuple) and out.senders is graph.senders
    nodes_in = graph.nodes
    want = np_graph_network(GN_PARAMS, nodes, np.asarray(graph.edges), np.asarray(graph.globals))
    np.testing.assert_allclose(out.globals, want, rtol=1e-12)
    np.testing.assert_allclose(jit(graph_network)(to_snp(GN_PARAMS), graph).globals, want, rtol=1e-12)

    def with_nodes(nodes):
        return GraphsTuple(nodes, graph.edges, graph.receivers, graph.senders, graph.globals,
                           graph.n_node, graph.n_edge)

    def loss(params, nodes):
        return jnp.sum(graph_network(params, with_nodes(nodes)).globals ** 2)
    check_grad(loss, GN_PARAMS, nodes)
    check_grad(loss, GN_PARAMS, nodes, argnum=1)
    # a batch of node features over the same graph
    check_vmap(lambda x: graph_network(to_snp(GN_PARAMS), with_nodes(x)).globals,
               (RNG.normal(size=(3, 4, 3)),))
    assert nodes_in is graph.nodes


def test_graph_network_replace(x64):
    graph = a_graph(jnp.asarray(RNG.normal(size=(4, 3))))
    np.testing.assert_allclose(graph_network_replace(to_snp(GN_PARAMS), graph).globals,
                               graph_network(to_snp(GN_PARAMS), graph).globals)
    check_grad(lambda p: jnp.sum(graph_network_replace(p, graph).globals ** 2), GN_PARAMS)


# --- padded batches of graphs: per-graph readout -------------------------------------------------
def graph_mean_readout(node_values, n_node):
    n_graph = n_node.shape[0]
    graph_idx = jnp.repeat(jnp.arange(n_graph), n_node, total_repeat_length=node_values.shape[0])
    sums = segment_sum(node_values, graph_idx, n_graph)
    counts = segment_sum(jnp.ones_like(node_values[:, 0]), graph_idx, n_graph)
    return sums / jnp.maximum(counts, 1.0)[:, None]


def test_padded_graph_batch_readout(x64):
    n_node = jnp.asarray([3, 2, 1])       # the last graph is the padding graph
    values = RNG.normal(size=(6, 2))
    want = np.stack([values[:3].mean(0), values[3:5].mean(0), values[5:].mean(0)])
    np.testing.assert_allclose(graph_mean_readout(jnp.asarray(values), n_node), want, rtol=1e-12)
    np.testing.assert_allclose(jit(graph_mean_readout)(jnp.asarray(values), n_node), want,
                               rtol=1e-12)
    w = RNG.normal(size=(3, 2))
    g = check_grad(lambda v: jnp.sum(w * graph_mean_readout(v, n_node)), values)
    np.testing.assert_allclose(g[:3], np.broadcast_to(w[0] / 3, (3, 2)), rtol=1e-12)
    check_vmap(lambda v: graph_mean_readout(v, n_node), (RNG.normal(size=(2, 6, 2)),))
    # the graph sizes traced too (jit's argument): the same gradient
    g_traced = jit(grad(lambda v, n: jnp.sum(w * graph_mean_readout(v, n))))(jnp.asarray(values), n_node)
    np.testing.assert_allclose(g_traced, g, rtol=1e-12)
    other = jnp.asarray([1, 1, 4])
    np.testing.assert_allclose(jit(graph_mean_readout)(jnp.asarray(values), other),
                               np.stack([values[0], values[1], values[2:].mean(0)]), rtol=1e-12)


def test_padded_graph_batch_readout_sizes_batched(x64):
    # repeat's static-counts branch (int() of the counts) is never taken: it raises only if run
    check_vmap(graph_mean_readout, (RNG.normal(size=(2, 6, 2)), np.array([[3, 2, 1], [1, 1, 4]])))


# --- GraphSAGE with max aggregation --------------------------------------------------------------
def segment_max(data, segment_ids, num_segments):
    init = jnp.full((num_segments,) + data.shape[1:], -jnp.inf)
    return init.at[segment_ids].max(data)


def sage_layer(params, x, senders, receivers):
    w_self, w_neigh = params
    agg = segment_max(x[senders], receivers, x.shape[0])
    agg = jnp.where(jnp.isfinite(agg), agg, 0.0)       # a node with no in-edges
    h = jax.nn.relu(x @ w_self + agg @ w_neigh)
    return h / (jnp.linalg.norm(h, axis=-1, keepdims=True) + 1e-6)


def test_graphsage_max_aggregation(x64):
    senders, receivers = np.array([0, 1, 2, 2]), np.array([1, 2, 0, 1])   # node 3 isolated
    x = RNG.normal(size=(4, 3))
    params = (RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)))
    agg = np.zeros((4, 3))
    for r in range(4):
        rows = [x[s] for s, rr in zip(senders, receivers) if rr == r]
        if rows:
            agg[r] = np.max(rows, axis=0)
    h = np.maximum(x @ params[0] + agg @ params[1], 0)
    want = h / (np.linalg.norm(h, axis=-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(sage_layer(to_snp(params), jnp.asarray(x), senders, receivers),
                               want, rtol=1e-12)
    c = RNG.normal(size=(4, 4))
    loss = lambda p, x: jnp.sum(c * sage_layer(p, x, senders, receivers))
    check_grad(loss, params, x)
    check_grad(loss, params, x, argnum=1)
    check_vmap(lambda x: sage_layer(to_snp(params), x, senders, receivers),
               (RNG.normal(size=(3, 4, 3)),))


# --- sparse matrices -------------------------------------------------------------------------------
def csr_matvec(data, indices, indptr, x):
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))    # static structure
    return segment_sum(data * x[indices], rows, len(indptr) - 1)


def coo_matmat(data, row, col, shape, b):
    return jnp.zeros((shape[0], b.shape[1])).at[row].add(data[:, None] * b[col])


def test_csr_and_coo_products(x64):
    dense = np.array([[1.0, 0, 2], [0, 0, 3], [4, 5, 0], [0, 6, 0]])
    indptr = np.array([0, 2, 3, 5, 6])
    indices = np.array([0, 2, 2, 0, 1, 1])
    data = dense[dense != 0]
    x = RNG.normal(size=3)
    np.testing.assert_allclose(csr_matvec(jnp.asarray(data), indices, indptr, jnp.asarray(x)),
                               dense @ x, rtol=1e-12)
    row, col = np.nonzero(dense)
    b = RNG.normal(size=(3, 2))
    np.testing.assert_allclose(coo_matmat(jnp.asarray(data), row, col, (4, 3), jnp.asarray(b)),
                               dense @ b, rtol=1e-12)
    # d(y . A x)/d data_k = y[row_k] x[col_k]
    y = RNG.normal(size=4)
    g = check_grad(lambda d: jnp.dot(y, csr_matvec(d, indices, indptr, jnp.asarray(x))), data)
    np.testing.assert_allclose(g, y[row] * x[col], rtol=1e-12)
    check_grad(lambda x: jnp.sum(jnp.sin(csr_matvec(jnp.asarray(data), indices, indptr, x))), x)
    check_grad(lambda d, b: jnp.sum(coo_matmat(d, row, col, (4, 3), b) ** 2), data, b, argnum=1)
    check_vmap(lambda x: csr_matvec(jnp.asarray(data), indices, indptr, x), (RNG.normal(size=(3, 3)),))
    check_vmap(lambda d: coo_matmat(d, row, col, (4, 3), jnp.asarray(b)), (RNG.normal(size=(2, 6)),))


# --- Dirichlet energy: its hessian is the Laplacian ----------------------------------------------
def dirichlet_energy(x, weights, senders, receivers):
    diff = x[senders] - x[receivers]
    return 0.5 * jnp.sum(weights * diff ** 2)


def test_dirichlet_energy_hessian_is_the_laplacian(x64):
    senders, receivers = np.array([0, 1, 2, 3, 0]), np.array([1, 2, 3, 0, 2])
    weights = np.array([1.0, 2.0, 0.5, 1.5, 3.0])
    lap = np.zeros((4, 4))
    for s, r, w in zip(senders, receivers, weights):
        lap[s, s] += w
        lap[r, r] += w
        lap[s, r] -= w
        lap[r, s] -= w
    x = RNG.normal(size=4)
    f = lambda x: dirichlet_energy(x, jnp.asarray(weights), senders, receivers)
    np.testing.assert_allclose(hessian(f)(jnp.asarray(x)), lap, atol=1e-12)
    np.testing.assert_allclose(jit(hessian(f))(jnp.asarray(x)), lap, atol=1e-12)
    np.testing.assert_allclose(grad(f)(jnp.asarray(x)), lap @ x, rtol=1e-12)
    # in the weights: d E / d w_e = 0.5 (x_s - x_r)^2
    g = check_grad(lambda w: dirichlet_energy(jnp.asarray(x), w, senders, receivers), weights)
    np.testing.assert_allclose(g, 0.5 * (x[senders] - x[receivers]) ** 2, rtol=1e-12)
    check_vmap(grad(f), (RNG.normal(size=(3, 4)),))


# --- PageRank by power iteration --------------------------------------------------------------------
def pagerank(edge_weights, senders, receivers, n, damping=0.85, iters=60):
    senders, receivers = np.asarray(senders), np.asarray(receivers)
    out_weight = segment_sum(edge_weights, senders, n)
    norm_w = edge_weights / out_weight[senders]

    def step(_, r):
        return (1 - damping) / n + damping * segment_sum(norm_w * r[senders], receivers, n)
    return lax.fori_loop(0, iters, step, jnp.full(n, 1.0 / n))


def test_pagerank_and_its_sensitivity_to_edge_weights(x64):
    senders, receivers = (0, 0, 1, 2, 3, 3), (1, 2, 2, 0, 0, 2)     # tuples: static arguments
    w = np.array([1.0, 2.0, 1.0, 1.0, 0.5, 1.5])
    transition = np.zeros((4, 4))
    out = np.bincount(senders, weights=w, minlength=4)
    for s, r, we in zip(senders, receivers, w):
        transition[r, s] += we / out[s]
    want = np.linalg.solve(np.eye(4) - 0.85 * transition, np.full(4, 0.15 / 4))
    r = pagerank(jnp.asarray(w), senders, receivers, 4)
    np.testing.assert_allclose(r, want, rtol=1e-8)
    np.testing.assert_allclose(jit(pagerank, static_argnums=(1, 2, 3))(jnp.asarray(w), senders,
                                                                       receivers, 4), want, rtol=1e-8)
    check_grad(lambda w: pagerank(w, senders, receivers, 4)[2], w, rtol=1e-5)
    tangent = RNG.normal(size=6)
    _, r_dot = jax.jvp(lambda w: pagerank(w, senders, receivers, 4), (jnp.asarray(w),),
                       (jnp.asarray(tangent),))
    np.testing.assert_allclose(r_dot, jacfwd(lambda w: pagerank(w, senders, receivers, 4))(
        jnp.asarray(w)) @ tangent, rtol=1e-9)
    check_vmap(lambda w: pagerank(w, senders, receivers, 4), (RNG.uniform(0.5, 2, size=(3, 6)),))


# --- a Glow-like flow: actnorm, an LU 1x1 mixing, an affine coupling ------------------------------
D = 4
P_PERM = np.eye(D)[[2, 0, 3, 1]]


def glow_forward(params, x):
    # actnorm
    y = (x + params["an_bias"]) * jnp.exp(params["an_logs"])
    logdet = jnp.sum(params["an_logs"])
    # invertible 1x1 "convolution" as W = P L (U + diag(s))
    lower = jnp.tril(params["lu_l"], -1) + jnp.eye(D)
    upper = jnp.triu(params["lu_u"], 1) + jnp.diag(params["lu_sign"] * jnp.exp(params["lu_logs"]))
    w = P_PERM @ lower @ upper
    y = y @ w.T
    logdet += jnp.sum(params["lu_logs"])
    # affine coupling: transform the second half conditioned on the first
    y1, y2 = jnp.split(y, 2, axis=-1)
    h = jnp.tanh(y1 @ params["c_w1"] + params["c_b1"])
    log_scale = jnp.tanh(h @ params["c_ws"])
    y2 = y2 * jnp.exp(log_scale) + h @ params["c_wt"]
    logdet += jnp.sum(log_scale)
    return jnp.concatenate([y1, y2], axis=-1), logdet


def glow_log_prob(params, x):
    z, logdet = glow_forward(params, x)
    return jnp.sum(jax.scipy.stats.norm.logpdf(z)) + logdet


GLOW = {"an_bias": RNG.normal(size=D) * 0.1, "an_logs": RNG.normal(size=D) * 0.1,
        "lu_l": RNG.normal(size=(D, D)) * 0.3, "lu_u": RNG.normal(size=(D, D)) * 0.3,
        "lu_logs": RNG.normal(size=D) * 0.2, "c_w1": RNG.normal(size=(2, 3)) * 0.5,
        "c_b1": np.zeros(3), "c_ws": RNG.normal(size=(3, 2)) * 0.5,
        "c_wt": RNG.normal(size=(3, 2)) * 0.5}


def test_glow_flow_log_det_and_likelihood_gradients(x64):
    params = dict(to_snp(GLOW), lu_sign=np.array([1.0, -1.0, 1.0, 1.0]))
    x = jnp.asarray(RNG.normal(size=D))
    z, logdet = glow_forward(params, x)
    jac = jacfwd(lambda x: glow_forward(params, x)[0])(x)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(np.asarray(jac))[1], rtol=1e-10)
    np.testing.assert_allclose(jit(glow_log_prob)(params, x), glow_log_prob(params, x), rtol=1e-12)
    xs = RNG.normal(size=(5, D))
    nll = lambda p: -jnp.mean(vmap(lambda x: glow_log_prob(dict(p, lu_sign=params["lu_sign"]), x))(xs))
    check_grad(nll, GLOW)
    check_vmap(lambda x: glow_log_prob(params, x), (xs,))
    check_vmap(grad(lambda x: glow_log_prob(params, x)), (xs,))


# --- MADE: a masked autoregressive flow ------------------------------------------------------------
def made_masks(d, hidden):
    deg_in = np.arange(1, d + 1)
    deg_h = np.arange(hidden) % (d - 1) + 1
    m1 = (deg_h[None, :] >= deg_in[:, None]).astype(float)
    m2 = (deg_in[None, :] > deg_h[:, None]).astype(float)
    return m1, m2


M1, M2 = made_masks(3, 6)


def maf_inverse(params, x):
    """x -> u with u_i = (x_i - mu_i(x_<i)) * exp(-alpha_i(x_<i))."""
    w1, b1, w_mu, w_alpha = params
    h = jnp.tanh(x @ (w1 * M1) + b1)
    mu = h @ (w_mu * M2)
    alpha = jnp.tanh(h @ (w_alpha * M2))
    u = (x - mu) * jnp.exp(-alpha)
    return u, -jnp.sum(alpha)


def test_made_autoregressive_flow_triangular_jacobian(x64):
    params = (RNG.normal(size=(3, 6)), RNG.normal(size=6) * 0.1, RNG.normal(size=(6, 3)),
              RNG.normal(size=(6, 3)))
    x = jnp.asarray(RNG.normal(size=3))
    jac = np.asarray(jacfwd(lambda x: maf_inverse(to_snp(params), x)[0])(x))
    np.testing.assert_allclose(np.triu(jac, 1), 0.0, atol=1e-14)     # autoregressive
    logdet = maf_inverse(to_snp(params), x)[1]
    np.testing.assert_allclose(logdet, np.sum(np.log(np.abs(np.diag(jac)))), rtol=1e-12)
    np.testing.assert_allclose(jax.jacrev(lambda x: maf_inverse(to_snp(params), x)[0])(x), jac,
                               rtol=1e-12)

    def log_prob(params, x):
        u, logdet = maf_inverse(params, x)
        return jnp.sum(-0.5 * u ** 2 - 0.5 * jnp.log(2 * jnp.pi)) + logdet
    xs = RNG.normal(size=(4, 3))
    check_grad(lambda p: -jnp.sum(vmap(log_prob, (None, 0))(p, xs)), params)
    check_vmap(lambda x: log_prob(to_snp(params), x), (xs,))


# --- SVI with a full-rank Gaussian guide -----------------------------------------------------------
def elbo(guide, key, x_design, y, n_samples=16):
    loc, raw_tril = guide
    scale_tril = jnp.tril(raw_tril, -1) + jnp.diag(jax.nn.softplus(jnp.diag(raw_tril)))
    eps = random.normal(key, (n_samples, loc.shape[0]))
    w = loc + eps @ scale_tril.T

    def log_joint(w):
        prior = jnp.sum(jax.scipy.stats.norm.logpdf(w))
        return prior + jnp.sum(jax.scipy.stats.norm.logpdf(y, x_design @ w, 0.5))
    entropy = 0.5 * loc.shape[0] * (1 + jnp.log(2 * jnp.pi)) + jnp.sum(jnp.log(jnp.diag(scale_tril)))
    return jnp.mean(vmap(log_joint)(w)) + entropy


def test_full_rank_svi_elbo(x64):
    xd = RNG.normal(size=(8, 2))
    y = xd @ np.array([1.0, -0.5]) + 0.5 * RNG.normal(size=8)
    guide = (RNG.normal(size=2) * 0.1, RNG.normal(size=(2, 2)) * 0.3)
    key = random.PRNGKey(3)
    f = lambda g: elbo(g, key, xd, y)
    check_grad(f, guide)
    np.testing.assert_allclose(jit(f)(to_snp(guide)), f(to_snp(guide)), rtol=1e-12)
    # at the exact posterior, for the same draws eps: grad in loc = -prec (L mean(eps)), and
    # the ELBO = log evidence + d/2 - mean |eps|^2 / 2
    prec = np.eye(2) + xd.T @ xd / 0.25
    cov = np.linalg.inv(prec)
    mean = cov @ xd.T @ y / 0.25
    chol = np.linalg.cholesky(cov)
    raw = np.tril(chol, -1) + np.diag(np.log(np.expm1(np.diag(chol))))
    post = (jnp.asarray(mean), jnp.asarray(raw))
    eps = np.asarray(random.normal(key, (16, 2)))
    np.testing.assert_allclose(grad(f)(post)[0], -prec @ chol @ eps.mean(0), rtol=1e-9, atol=1e-12)
    ev = jax.scipy.stats.multivariate_normal.logpdf(y, np.zeros(8), xd @ xd.T + 0.25 * np.eye(8))
    np.testing.assert_allclose(f(post), ev + 1.0 - 0.5 * np.mean(np.sum(eps ** 2, 1)), rtol=1e-10)
    # per-key ELBOs by vmap over keys against a loop
    keys = random.split(random.PRNGKey(0), 3)
    many = vmap(lambda k: elbo(post, k, xd, y))(keys)
    np.testing.assert_allclose(many, [elbo(post, k, xd, y) for k in keys], rtol=1e-12)


# --- Gaussian mixture: the gradient is Fisher's identity ------------------------------------------
def gmm_loglik(means, log_weights, x, sigma=0.7):
    log_w = jax.nn.log_softmax(log_weights)
    sq = jnp.sum((x[:, None, :] - means[None]) ** 2, -1)
    comp = log_w - 0.5 * sq / sigma ** 2 - x.shape[-1] * jnp.log(sigma * jnp.sqrt(2 * jnp.pi))
    return jnp.sum(logsumexp(comp, axis=1))


def test_gmm_gradient_is_fishers_identity(x64):
    x = RNG.normal(size=(10, 2))
    means, logw = RNG.normal(size=(3, 2)), RNG.normal(size=3)
    g_means, g_logw = check_grad(gmm_loglik, means, logw, x), check_grad(gmm_loglik, means, logw, x, argnum=1)
    sq = ((x[:, None] - means[None]) ** 2).sum(-1)
    w = np.exp(logw) / np.exp(logw).sum()
    resp = w * np.exp(-0.5 * sq / 0.49)
    resp /= resp.sum(1, keepdims=True)
    np.testing.assert_allclose(g_means, np.einsum("nk,nkd->kd", resp, x[:, None] - means[None]) / 0.49,
                               rtol=1e-10)
    np.testing.assert_allclose(g_logw, resp.sum(0) - 10 * w, rtol=1e-10, atol=1e-12)
    check_vmap(lambda m: gmm_loglik(m, jnp.asarray(logw), jnp.asarray(x)), (RNG.normal(size=(3, 3, 2)),))
    v = RNG.normal(size=(3, 2))
    hvp = jax.jvp(grad(lambda m: gmm_loglik(m, jnp.asarray(logw), jnp.asarray(x))),
                  (jnp.asarray(means),), (jnp.asarray(v),))[1]
    np.testing.assert_allclose(hvp, np.tensordot(np.asarray(hessian(
        lambda m: gmm_loglik(m, jnp.asarray(logw), jnp.asarray(x)))(jnp.asarray(means))), v, 2),
        rtol=1e-9)


# --- stick-breaking weights -------------------------------------------------------------------------
def stick_breaking(logits):
    v = jax.nn.sigmoid(logits)
    log_rest = jnp.concatenate([jnp.zeros(1), jnp.cumsum(jnp.log1p(-v))])
    return jnp.exp(jnp.log(jnp.concatenate([v, jnp.ones(1)])) + log_rest)


def test_stick_breaking_weights(x64):
    logits = RNG.normal(size=4)
    v = 1 / (1 + np.exp(-logits))
    want = [v[0]]
    for k in range(1, 4):
        want.append(v[k] * np.prod(1 - v[:k]))
    want.append(np.prod(1 - v))
    w = stick_breaking(jnp.asarray(logits))
    np.testing.assert_allclose(w, want, rtol=1e-12)
    np.testing.assert_allclose(jnp.sum(w), 1.0, rtol=1e-12)
    target = np.array([0.1, 0.3, 0.2, 0.3, 0.1])
    check_grad(lambda l: -jnp.sum(target * jnp.log(stick_breaking(l))), logits)
    g_sum = grad(lambda l: jnp.sum(stick_breaking(l)))(jnp.asarray(logits))
    np.testing.assert_allclose(g_sum, 0.0, atol=1e-12)        # the weights always sum to one
    check_vmap(stick_breaking, (RNG.normal(size=(3, 4)),))
    assert_trees_close(jacfwd(stick_breaking)(jnp.asarray(logits)),
                       jax.jacrev(stick_breaking)(jnp.asarray(logits)), rtol=1e-10, atol=1e-12)
