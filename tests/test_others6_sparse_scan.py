"""Issue 15, code written by others (sixth round): sparse and cumulative array code as users write
it with JAX: segment_sum / segment_max written with .at[].add and .at[].max, a message-passing
layer over an edge list with a segment softmax, a COO sparse matrix-vector product, top_k
pooling, sort and argsort inside a loss (a sorted-weights OWA loss, a rank-based Spearman
surrogate by argsort gathers), cumsum / cumprod / diff in a survival log-likelihood and a
piecewise-linear interpolation by searchsorted, a cumulative-max drawdown, bincount-style
histograms with weights, and an exclusive scan by lax.associative_scan; each under the
transforms its author would use, checked against float64 finite differences, NumPy written out,
a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, lax

from others15_check import assert_trees_close, check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(6161)


def segment_sum(data, segment_ids, num_segments):
    return jnp.zeros((num_segments,) + data.shape[1:], data.dtype).at[segment_ids].add(data)


def segment_max(data, segment_ids, num_segments):
    return jnp.full((num_segments,) + data.shape[1:], -jnp.inf, data.dtype).at[segment_ids].max(data)


# --- message passing ---------------------------------------------------------------------------------
SENDERS = np.array([0, 1, 2, 3, 0, 2, 4, 1])
RECEIVERS = np.array([1, 2, 3, 4, 4, 0, 2, 3])


def message_passing(params, nodes, edges):
    w_msg, w_upd, w_att = params
    msgs = jnp.tanh(jnp.concatenate([nodes[SENDERS], edges], axis=1) @ w_msg)
    logits = msgs @ w_att
    # segment softmax over each receiver's incoming edges
    logits = logits - segment_max(logits, RECEIVERS, 5)[RECEIVERS]
    weights = jnp.exp(logits)
    weights = weights / segment_sum(weights, RECEIVERS, 5)[RECEIVERS]
    agg = segment_sum(weights[:, None] * msgs, RECEIVERS, 5)
    return jnp.tanh(jnp.concatenate([nodes, agg], axis=1) @ w_upd)


def gnn_loss(params, nodes, edges, target):
    return jnp.sum((message_passing(params, nodes, edges) - target) ** 2)


def test_message_passing_with_segment_softmax(x64):
    params = (0.5 * RNG.normal(size=(5, 4)), 0.5 * RNG.normal(size=(7, 2)), RNG.normal(size=4))
    nodes, edges = RNG.normal(size=(5, 3)), RNG.normal(size=(8, 2))
    target = RNG.normal(size=(5, 2))
    check_grad(gnn_loss, params, nodes, edges, target)
    check_grad(gnn_loss, params, nodes, edges, target, argnum=1)
    # the aggregation against a loop over receivers
    w_msg, _, w_att = params
    msgs = np.tanh(np.concatenate([nodes[SENDERS], edges], 1) @ w_msg)
    logit = msgs @ w_att
    agg = np.zeros((5, 4))
    for r in range(5):
        sel = RECEIVERS == r
        if sel.any():
            w = np.exp(logit[sel] - logit[sel].max())
            agg[r] = (w / w.sum()) @ msgs[sel]
    want = np.tanh(np.concatenate([nodes, agg], 1) @ params[1])
    np.testing.assert_allclose(message_passing(to_snp(params), nodes, edges), want, rtol=1e-10)
    # a batch of graphs by vmap over node features
    check_vmap(lambda n: message_passing(params, n, edges), (RNG.normal(size=(3, 5, 3)),))


def coo_matvec(values, rows, cols, x, n):
    return segment_sum(values * x[cols], rows, n)


def test_coo_sparse_matvec(x64):
    rows, cols = np.array([0, 0, 1, 2, 2, 3]), np.array([1, 3, 0, 2, 3, 1])
    values, x = RNG.normal(size=6), RNG.normal(size=4)
    dense = np.zeros((4, 4))
    np.add.at(dense, (rows, cols), values)
    np.testing.assert_allclose(coo_matvec(values, rows, cols, x, 4), dense @ x, rtol=1e-12)
    loss = lambda v, x: jnp.sum(jnp.sin(coo_matvec(v, rows, cols, x, 4)))
    check_grad(loss, values, x)
    check_grad(loss, values, x, argnum=1)
    # jacfwd in x is the dense matrix
    assert_trees_close(jacfwd(lambda x: coo_matvec(jnp.asarray(values), rows, cols, x, 4))(jnp.asarray(x)),
                       dense)
    check_vmap(lambda x: coo_matvec(values, rows, cols, x, 4), (RNG.normal(size=(3, 4)),))


def test_segment_mean_readout_per_graph(x64):
    graph_ids = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    h = RNG.normal(size=(9, 3))

    def readout(h):
        sums = segment_sum(h, graph_ids, 3)
        counts = segment_sum(jnp.ones(h.shape[0]), graph_ids, 3)
        return sums / counts[:, None]
    want = np.stack([h[graph_ids == g].mean(0) for g in range(3)])
    np.testing.assert_allclose(readout(jnp.asarray(h)), want, rtol=1e-12)
    check_grad(lambda h: jnp.sum(readout(h) ** 3), h)
    assert_trees_close(jit(readout)(jnp.asarray(h)), want)


# --- top_k and sort -------------------------------------------------------------------------------
def topk_pool(scores_w, x, k=3):
    scores = jnp.tanh(x @ scores_w)
    vals, idx = lax.top_k(scores, k)
    return x[idx] * vals[:, None]


def test_top_k_pooling(x64):
    w = RNG.normal(size=3)
    x = RNG.normal(size=(7, 3))
    loss = lambda w, x: jnp.sum(topk_pool(w, x) ** 2)
    check_grad(loss, w, x)
    check_grad(loss, w, x, argnum=1)
    check_vmap(lambda x: topk_pool(w, x), (RNG.normal(size=(4, 7, 3)),))


def nearest_centroid_index(points, centroids):
    d = jnp.sum((points[:, None, :] - centroids[None]) ** 2, axis=-1)
    return jnp.argmin(d, axis=1)


def kmeans_objective(centroids, points):
    """The assignment comes from a helper (an int array computed from differentiated values,
    which the transform tracks): an index has no derivative, as in JAX."""
    idx = nearest_centroid_index(points, centroids)
    return jnp.sum((points - centroids[idx]) ** 2)


def test_int_index_from_a_helper_and_from_top_k(x64):
    """Regression: an index the transform tracks (a callee's int output, lax.top_k's indices)
    was refused ("an index computed from differentiated values has no derivative")."""
    centroids, points = RNG.normal(size=(3, 2)), RNG.normal(size=(10, 2))
    g = check_grad(kmeans_objective, centroids, points)
    idx = np.argmin(((points[:, None] - centroids[None]) ** 2).sum(-1), 1)
    want = np.stack([-2 * (points[idx == k] - centroids[k]).sum(0) for k in range(3)])
    assert_trees_close(g, want, rtol=1e-10)
    check_grad(kmeans_objective, centroids, points, argnum=1)
    h = hessian(kmeans_objective)(jnp.asarray(centroids), jnp.asarray(points))
    counts = np.bincount(idx, minlength=3)
    assert_trees_close(h.reshape(6, 6), np.diag(np.repeat(2.0 * counts, 2)), atol=1e-10)
    check_vmap(grad(kmeans_objective), (RNG.normal(size=(4, 3, 2)), points), in_axes=(0, None))
    t = jvp(kmeans_objective, (jnp.asarray(centroids), jnp.asarray(points)),
            (jnp.ones((3, 2)), jnp.zeros((10, 2))))[1]
    np.testing.assert_allclose(t, np.sum(want), rtol=1e-10)


def owa_loss(weights, errors):
    """Ordered weighted averaging: the largest errors weigh most."""
    return jnp.dot(weights, jnp.sort(jnp.abs(errors))[::-1])


def test_sorted_weights_owa(x64):
    weights = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    errors = RNG.normal(size=5)
    check_grad(owa_loss, weights, errors, argnum=1)
    # the gradient in the errors: each error's sign times its rank's weight
    order = np.argsort(-np.abs(errors))
    want = np.zeros(5)
    want[order] = weights * np.sign(errors[order])
    assert_trees_close(grad(owa_loss, argnums=1)(jnp.asarray(weights), jnp.asarray(errors)), want)
    check_vmap(owa_loss, (weights, RNG.normal(size=(4, 5))), in_axes=(None, 0))


def soft_rank_corr(pred, target):
    """Spearman-style: sort the predictions by the target's order and penalise inversions."""
    order = jnp.argsort(target)
    p = pred[order]
    diffs = p[1:] - p[:-1]
    return jnp.sum(jax_softplus(-diffs / 0.1))


def jax_softplus(x):
    return jnp.logaddexp(x, 0.0)


def test_argsort_gathers_under_grad_and_hessian(x64):
    pred, target = RNG.normal(size=6), RNG.normal(size=6)
    check_grad(soft_rank_corr, pred, target)
    h = hessian(soft_rank_corr)(jnp.asarray(pred), jnp.asarray(target))
    eps = 1e-5
    g = lambda p: np.asarray(grad(soft_rank_corr)(jnp.asarray(p), jnp.asarray(target)))
    fd = np.stack([(g(pred + eps * e) - g(pred - eps * e)) / (2 * eps) for e in np.eye(6)])
    assert_trees_close(h, fd, rtol=1e-5, atol=1e-6)
    # gradient w.r.t. target is zero: argsort is piecewise constant
    assert_trees_close(grad(soft_rank_corr, argnums=1)(jnp.asarray(pred), jnp.asarray(target)), np.zeros(6))


def trimmed_mean(x, trim=1):
    s = jnp.sort(x)
    return jnp.mean(s[trim:-trim])


def test_trimmed_mean_grad_vmap(x64):
    x = RNG.normal(size=7)
    check_grad(trimmed_mean, x)
    check_vmap(trimmed_mean, (RNG.normal(size=(5, 7)),))
    t = jvp(trimmed_mean, (jnp.asarray(x),), (jnp.ones(7),))[1]
    np.testing.assert_allclose(t, 1.0, rtol=1e-12)   # a shift moves the mean by the same


# --- cumulative sums and products ---------------------------------------------------------------
def survival_nll(log_hazard, events):
    """Discrete-time survival: S(t) = prod_{s<=t} (1 - h_s); an event at t contributes h_t S(t-1),
    censoring S(t)."""
    h = 1 / (1 + jnp.exp(-log_hazard))
    log_surv = jnp.cumsum(jnp.log1p(-h))
    prev = jnp.concatenate([jnp.zeros(1), log_surv[:-1]])
    return -jnp.sum(events * (jnp.log(h) + prev) + (1 - events) * log_surv)


def test_survival_likelihood_by_cumsum(x64):
    lh, events = RNG.normal(size=6), (RNG.uniform(size=6) > 0.5).astype(float)
    check_grad(survival_nll, lh, events)
    check_vmap(survival_nll, (RNG.normal(size=(3, 6)), events), in_axes=(0, None))
    # the survival curve by cumprod agrees with exp(cumsum(log))
    h = 1 / (1 + np.exp(-lh))
    assert_trees_close(jnp.cumprod(1 - jnp.asarray(h)), np.exp(np.cumsum(np.log1p(-h))))
    check_grad(lambda l: jnp.sum(jnp.cumprod(1 - 1 / (1 + jnp.exp(-l))) * jnp.arange(6.0)), lh)


def interp1d(xp, fp, x):
    """np.interp written by hand with searchsorted, as one does for a custom extrapolation."""
    i = jnp.clip(jnp.searchsorted(xp, x) - 1, 0, xp.shape[0] - 2)
    t = (x - xp[i]) / (xp[i + 1] - xp[i])
    return fp[i] * (1 - t) + fp[i + 1] * t


def test_searchsorted_interpolation(x64):
    xp = np.sort(RNG.uniform(0, 5, size=6))
    xp[0], xp[-1] = 0.0, 5.0
    fp = RNG.normal(size=6)
    x = RNG.uniform(0.1, 4.9, size=8)
    np.testing.assert_allclose(interp1d(jnp.asarray(xp), jnp.asarray(fp), jnp.asarray(x)),
                               np.interp(x, xp, fp), rtol=1e-12)
    assert_trees_close(jnp.interp(jnp.asarray(x), jnp.asarray(xp), jnp.asarray(fp)), np.interp(x, xp, fp))
    loss = lambda fp, x: jnp.sum(interp1d(jnp.asarray(xp), fp, x) ** 2)
    check_grad(loss, fp, x)
    check_grad(loss, fp, x, argnum=1)
    # knots as parameters too
    check_grad(lambda xp: jnp.sum(interp1d(xp, jnp.asarray(fp), jnp.asarray(x))), xp)
    # (the knots closed over as secant arrays: a NumPy array indexed by a traced index fails
    # under jit, in JAX too)
    xp_, fp_ = jnp.asarray(xp), jnp.asarray(fp)
    check_vmap(lambda x: interp1d(xp_, fp_, x), (x,))


def max_drawdown(returns):
    wealth = jnp.cumprod(1 + returns)
    peak = lax.cummax(wealth, axis=0)
    return jnp.max(1 - wealth / peak)


def test_drawdown_with_cummax(x64):
    r = 0.05 * RNG.normal(size=12)
    w = np.cumprod(1 + r)
    np.testing.assert_allclose(max_drawdown(jnp.asarray(r)), np.max(1 - w / np.maximum.accumulate(w)),
                               rtol=1e-12)
    check_grad(max_drawdown, r)
    check_vmap(max_drawdown, (0.05 * RNG.normal(size=(4, 12)),))


def total_variation(x):
    return jnp.sum(jnp.sqrt(jnp.diff(x) ** 2 + 1e-3)) + jnp.sum(jnp.diff(x, n=2) ** 2)


def test_diff_total_variation(x64):
    x = RNG.normal(size=8)
    check_grad(total_variation, x)
    h = jacfwd(jacrev(total_variation))(jnp.asarray(x))
    assert_trees_close(h, hessian(total_variation)(jnp.asarray(x)))
    np.testing.assert_allclose(h, np.asarray(h).T, rtol=1e-10, atol=1e-12)
    check_vmap(total_variation, (RNG.normal(size=(3, 8)),))


def weighted_histogram(x, w, edges):
    idx = jnp.clip(jnp.searchsorted(edges, x, side="right") - 1, 0, edges.shape[0] - 2)
    return jnp.zeros(edges.shape[0] - 1).at[idx].add(w)


def test_weighted_histogram(x64):
    edges = np.linspace(-2, 2, 6)
    x, w = RNG.uniform(-1.9, 1.9, size=20), RNG.uniform(size=20)
    want, _ = np.histogram(x, edges, weights=w)
    np.testing.assert_allclose(weighted_histogram(jnp.asarray(x), jnp.asarray(w), jnp.asarray(edges)),
                               want, rtol=1e-12)
    loss = lambda w: jnp.sum(weighted_histogram(jnp.asarray(x), w, jnp.asarray(edges)) ** 2)
    check_grad(loss, w)
    assert_trees_close(jnp.bincount(jnp.asarray([0, 2, 2, 4]), weights=jnp.asarray([1.0, 2.0, 3.0, 4.0]),
                                    length=5), np.array([1.0, 0.0, 5.0, 0.0, 4.0]))
    check_grad(lambda w: jnp.sum(jnp.bincount(jnp.asarray([0, 2, 2, 4]), weights=w, length=5) ** 2),
               np.array([1.0, 2.0, 3.0, 4.0]))


def exclusive_cumsum(x):
    inclusive = lax.associative_scan(jnp.add, x)
    return jnp.concatenate([jnp.zeros(1), inclusive[:-1]])


def linear_recurrence(a, b):
    """h_t = a_t h_{t-1} + b_t by associative_scan on (a, b) pairs."""
    def combine(left, right):
        a1, b1 = left
        a2, b2 = right
        return a1 * a2, a2 * b1 + b2
    return lax.associative_scan(combine, (a, b))[1]


def test_associative_scans(x64):
    x = RNG.normal(size=7)
    assert_trees_close(exclusive_cumsum(jnp.asarray(x)), np.concatenate([[0], np.cumsum(x)[:-1]]))
    check_grad(lambda x: jnp.sum(exclusive_cumsum(x) ** 2), x)
    a, b = RNG.uniform(0.5, 0.9, size=7), RNG.normal(size=7)
    h, want = 0.0, []
    for at, bt in zip(a, b):
        h = at * h + bt
        want.append(h)
    assert_trees_close(linear_recurrence(jnp.asarray(a), jnp.asarray(b)), np.array(want))
    loss = lambda a, b: jnp.sum(linear_recurrence(a, b) ** 2)
    check_grad(loss, a, b)
    check_grad(loss, a, b, argnum=1)
    check_vmap(linear_recurrence, (RNG.uniform(0.5, 0.9, size=(3, 7)), RNG.normal(size=(3, 7))))
    t = jvp(linear_recurrence, (jnp.asarray(a), jnp.asarray(b)), (jnp.ones(7), jnp.zeros(7)))[1]
    assert_trees_close(t, fd_jvp(linear_recurrence, (a, b), (np.ones(7), np.zeros(7))), rtol=1e-6)
