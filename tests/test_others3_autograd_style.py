"""Issue 15, code written by others (third round): the small functions another AD library
(autograd) checks in its test_numpy.py / test_scipy.py / test_systematic.py, written here in
JAX style: indexing (ints, slices, lists, fan-out), reshapes, concatenation, reductions with
axes and keepdims, max with ties, prod, cumsum, sort, var/std with ddof, tensordot, einsum,
outer, trace, diag, triu, roll, clip, where, nan_to_num, and scipy.special / scipy.stats
functions. Each runs under grad (against float64 finite differences), jvp, vmap (against a
Python loop), jit (against eager) and forward-over-reverse second order."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, jit, jvp, vmap
from secant.scipy import special, stats

from others15_check import assert_trees_close, fd_grad, fd_jvp, to_np, to_snp

RNG = np.random.default_rng(3300)
M = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 2))


def pos(shape):
    return RNG.uniform(0.5, 2.0, size=shape)


# name -> (function, input); each function takes one array and returns an array or scalar
CASES = {
    "index_ints": (lambda x: x[1, 2] * x[0, 0], M),
    "index_slice": (lambda x: x[1:, ::2] ** 2, M),
    "index_lists": (lambda x: x[[0, 2, 2], [1, 1, 3]], M),
    "index_mixed": (lambda x: x[[2, 0], 1:3], M),
    "index_slice_fanout": (lambda x: x[:, 1] * x[:, 1] + x[:, 1:2].sum(), M),
    "index_multiple_slices": (lambda x: x[1:][:, 2:][0], M),
    "index_bool_mask_where": (lambda x: jnp.where(x > 0, x, 0.1 * x), M),
    "reshape_method": (lambda x: x.reshape((2, 6)) @ np.ones((6, 2)), M),
    "reshape_call": (lambda x: jnp.reshape(x, (4, 3)).T, M),
    "ravel_flatten": (lambda x: jnp.ravel(x) * x.flatten()[::-1], M),
    "transpose_swapaxes": (lambda x: jnp.swapaxes(x[None], 0, 2) * 2.0, M),
    "concatenate_axis0": (lambda x: jnp.concatenate([x, x ** 2], axis=0), M),
    "concatenate_axis1": (lambda x: jnp.concatenate((x, jnp.sin(x)), axis=1), M),
    "stack_vstack_hstack": (lambda x: jnp.vstack([x, x]) @ jnp.hstack([x[0], x[1]])[:4], M),
    "split": (lambda x: sum(p.sum() ** 2 for p in jnp.split(x, 2, axis=1)), M),
    "sum_axis_keepdims": (lambda x: x / jnp.sum(x ** 2, axis=1, keepdims=True), M),
    "mean_axes": (lambda x: jnp.mean(x, axis=(0, 1)) + jnp.mean(x, axis=0), M),
    "max_axis": (lambda x: jnp.max(x, axis=1), M),
    "max_with_ties": (lambda x: jnp.max(jnp.round(x)), np.array([1.2, 0.3, 1.1, -0.2])),
    "min_keepdims": (lambda x: x - jnp.min(x, axis=0, keepdims=True), M),
    "amax_minimum": (lambda x: jnp.maximum(x, 0.3) + jnp.minimum(x, -0.2), M),
    "prod_all": (lambda x: jnp.prod(x), pos((2, 3))),
    "prod_axis": (lambda x: jnp.prod(x, axis=0), M),
    "cumsum_axis0": (lambda x: jnp.cumsum(x, axis=0), M),
    "cumprod": (lambda x: jnp.cumprod(x), pos(5)),
    "sort_rows": (lambda x: jnp.sort(x, axis=1) * np.arange(4.0), M),
    "var_ddof": (lambda x: jnp.var(x, axis=1, ddof=1), M),
    "std_ddof": (lambda x: jnp.std(x, ddof=1), M),
    "tensordot": (lambda x: jnp.tensordot(x, B, axes=([1], [0])), M),
    "tensordot_two_axes": (lambda x: jnp.tensordot(x, M * 2.0, axes=2), M),
    "einsum_matmul_trace": (lambda x: jnp.einsum("ij,kj->ik", x, x) + jnp.einsum("ii", x[:, :3]),
                            M),
    "outer_inner": (lambda x: jnp.outer(x[0], x[1]) * jnp.inner(x[0], x[2]), M),
    "dot_matmul": (lambda x: jnp.dot(x, B) + x @ B, M),
    "trace_diag": (lambda x: jnp.trace(x[:, :3]) * jnp.diag(x[:, :3]), M),
    "make_diagonal": (lambda x: jnp.diag(x[0]) @ x.T, M),
    "triu_tril": (lambda x: jnp.triu(x) - 2 * jnp.tril(x, k=-1), M),
    "roll": (lambda x: jnp.roll(x, 2, axis=1) * x, M),
    "flip_rot90": (lambda x: jnp.flip(x, axis=0) + jnp.rot90(x, 2), M),
    "clip": (lambda x: jnp.clip(x, -0.5, 0.7), M),
    "abs_sign": (lambda x: jnp.abs(x) * jnp.sign(x) ** 2, M),
    "exp_log_sqrt": (lambda x: jnp.exp(-x) * jnp.log(x) + jnp.sqrt(x), pos((3, 4))),
    "hyperbolic": (lambda x: jnp.sinh(x) + jnp.cosh(x) * jnp.tanh(x), M),
    "inverse_trig": (lambda x: jnp.arcsin(x / 3) + jnp.arctan(x) + jnp.arctan2(x, 2.0), M),
    "log1p_expm1": (lambda x: jnp.log1p(x) * jnp.expm1(x), pos((3, 4))),
    "power_reciprocal": (lambda x: x ** 3 / (1 + x ** 2) + jnp.reciprocal(x), pos((3, 4))),
    "logaddexp": (lambda x: jnp.logaddexp(x, 2 * x) + jnp.logaddexp2(x, 1.0), M),
    "hypot_sinc": (lambda x: jnp.hypot(x, 1.0) * jnp.sinc(x), M),
    "nan_to_num": (lambda x: jnp.nan_to_num(jnp.log(x)), pos((3, 4))),
    "atleast_expand": (lambda x: jnp.atleast_2d(x[0]) * jnp.expand_dims(x[1], 0), M),
    "tile_repeat": (lambda x: jnp.tile(x[0], 2) * jnp.repeat(x[1], 2), M),
    "pad": (lambda x: jnp.pad(x, ((1, 0), (0, 2))) ** 2, M),
    "linalg_norm_det_inv": (lambda x: jnp.linalg.norm(x) * jnp.linalg.det(x[:, :3])
                            + jnp.sum(jnp.linalg.inv(x[:, :3] + 3 * np.eye(3))), M),
    "special_gammaln_digamma": (lambda x: special.gammaln(x) + special.digamma(x), pos((3, 4))),
    "special_erf_ndtr": (lambda x: special.erf(x) * special.ndtr(x) + special.erfc(x), M),
    "special_expit_logit": (lambda x: special.expit(x) + special.logit(special.expit(x) * 0.9),
                            M),
    "special_logsumexp_axis": (lambda x: special.logsumexp(x, axis=1), M),
    "special_xlogy_betaln": (lambda x: special.xlogy(x, x + 1) + special.betaln(x, 2.0),
                             pos((3, 4))),
    "stats_norm": (lambda x: stats.norm.logpdf(x, 0.5, 2.0) + stats.norm.cdf(x), M),
    "stats_t_logpdf": (lambda x: stats.t.logpdf(x, 4.0), M),
    "stats_gamma_logpdf": (lambda x: stats.gamma.logpdf(x, 2.5), pos((3, 4))),
    "stats_multivariate_normal": (lambda x: stats.multivariate_normal.logpdf(
        x, np.zeros(4), np.eye(4) + 0.5), M),
}


def _loss(f, w):
    return lambda x: jnp.sum(f(x) * w)


@pytest.mark.parametrize("name", sorted(CASES))
def test_autograd_style(x64, name):
    f, x = CASES[name]
    x = to_snp(np.asarray(x, dtype=np.float64))
    out = to_np(f(x))
    w = to_snp(RNG.normal(size=np.shape(out)))
    loss = _loss(f, w)
    # grad against finite differences; jit(grad) against grad
    g = grad(loss)(x)
    assert_trees_close(g, fd_grad(loss, (x,)), rtol=1e-5, atol=1e-6)
    assert_trees_close(jit(grad(loss))(x), g, rtol=1e-10, atol=1e-12)
    # jvp against finite differences, jit against eager
    t = to_snp(RNG.normal(size=np.shape(x)))
    primal, tangent = jvp(f, (x,), (t,))
    assert_trees_close(primal, out, rtol=1e-12)
    assert_trees_close(tangent, fd_jvp(f, (x,), (t,)), rtol=1e-5, atol=1e-6)
    assert_trees_close(jit(f)(x), out, rtol=1e-10, atol=1e-12)
    # vmap over a batch of three inputs against a Python loop
    xs = to_snp(np.stack([np.asarray(x) * s for s in (1.0, 0.9, 1.1)]))
    want = np.stack([to_np(f(xs[i])) for i in range(3)])
    assert_trees_close(vmap(f)(xs), want, rtol=1e-10, atol=1e-12)
    # forward over reverse: a Hessian-vector product against differences of the gradient
    hvp = jvp(grad(loss), (x,), (t,))[1]
    assert_trees_close(hvp, fd_jvp(grad(loss), (x,), (t,)), rtol=1e-4, atol=1e-5)


# --- test_systematic-style binary functions with broadcasting: the gradient of each argument
# is summed back to its own shape (unbroadcast), under grad, vmap and jit --------------------
BINARY = {
    "add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply,
    "true_divide": jnp.true_divide, "power": lambda a, b: jnp.power(jnp.abs(a) + 0.5, b),
    "maximum": jnp.maximum, "minimum": jnp.minimum, "arctan2": jnp.arctan2,
    "hypot": jnp.hypot, "logaddexp": jnp.logaddexp, "logaddexp2": jnp.logaddexp2,
    "where_gt": lambda a, b: jnp.where(a > b, a * b, a - b),
    "mean_product": lambda a, b: jnp.mean(a * b, axis=-1, keepdims=True) * jnp.sin(b),
}
SHAPES = [((3, 1), (1, 4)), ((4,), (3, 4)), ((), (2, 3)), ((2, 1, 3), (4, 1)), ((3, 4), ())]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(x64, name, shapes):
    f = BINARY[name]
    a = RNG.normal(size=shapes[0]) + 0.1
    b = RNG.normal(size=shapes[1]) + 0.1
    if name == "true_divide":
        b = np.sign(b) * (np.abs(b) + 0.5)
    out = np.asarray(f(*to_snp((a, b))))
    w = to_snp(RNG.normal(size=out.shape))
    loss = lambda a, b: jnp.sum(f(a, b) * w)
    for argnum in (0, 1):
        g = grad(loss, argnums=argnum)(*to_snp((a, b)))
        assert np.shape(g) == np.shape((a, b)[argnum])
        assert_trees_close(g, fd_grad(loss, to_snp((a, b)), argnum), rtol=1e-5, atol=1e-6)
    ga, gb = jit(grad(loss, argnums=(0, 1)))(*to_snp((a, b)))
    assert_trees_close((ga, gb), (fd_grad(loss, to_snp((a, b)), 0),
                                  fd_grad(loss, to_snp((a, b)), 1)), rtol=1e-5, atol=1e-6)
    # vmap over a leading axis of b (a shared), against a loop
    bs = to_snp(np.stack([b, 2 * b, b - 0.3]))
    want = np.stack([np.asarray(f(to_snp(a), bs[i])) for i in range(3)])
    assert_trees_close(vmap(f, in_axes=(None, 0))(to_snp(a), bs), want, rtol=1e-12)
    gw = np.stack([np.asarray(grad(loss)(to_snp(a), bs[i])) for i in range(3)])
    assert_trees_close(vmap(grad(loss), in_axes=(None, 0))(to_snp(a), bs), gw, rtol=1e-10)
