"""Library functions and secant's own helpers that generated code calls, at every order (issue
15, section 4): each function eager, under jit, grad, grad of grad (a Hessian-vector product),
jvp of grad, vmap and grad of vmap of grad, against float64 finite differences, Python loops and
eager values. Covered: snp.einsum ('...', implicit output, several operands, broadcast labels),
the split family, argsort / any / all under vmap, NumPy ufuncs inside jit, a dict built key by
key (unmerge at second order), jvp of jvp of functions with defaults and recursion (hygiene of
tangent names), vmap of `.at[i]` with a batched index, and grad of vmap of grad of a tuple (the
batched cotangent of a container, grad_of_fields_batched)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

H = 1e-6


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want), rtol=rtol,
                               atol=atol)


def fd_grad(f, x, h=H):
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[idx] = h
        out[idx] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


def fd_along(g, x, v, h=1e-5):
    return (np.asarray(g(x + h * v)) - np.asarray(g(x - h * v))) / (2 * h)


def every_order(f, x, v, xs):
    """f: array -> scalar; v a direction like x; xs a batch of points."""
    x, v, xs = (np.asarray(a, dtype=np.float64) for a in (x, v, xs))
    want = float(f(x))
    close(secant.jit(f)(x), want, rtol=1e-12)
    g = secant.grad(f)
    close(g(x), fd_grad(f, x), rtol=1e-6, atol=1e-7)
    close(secant.jit(g)(x), np.asarray(g(x)), rtol=1e-12)

    def hv(y):
        return snp.sum(g(y) * v)
    hv_want = fd_along(g, x, v)
    close(secant.grad(hv)(x), hv_want, rtol=1e-5, atol=1e-6)
    close(secant.jvp(g, (x,), (v,))[1], hv_want, rtol=1e-5, atol=1e-6)
    close(secant.vmap(f)(xs), np.array([float(f(e)) for e in xs]), rtol=1e-12)
    got = secant.grad(lambda ys: snp.sum(secant.vmap(hv)(ys)))(xs)
    close(got, np.stack([fd_along(g, e, v) for e in xs]), rtol=1e-5, atol=1e-6)


RNG = np.random.default_rng(15)


def rand(*shape):
    return RNG.uniform(0.2, 1.2, size=shape)


# --- einsum --------------------------------------------------------------------------------------
A = rand(3, 3)


def einsum_bilinear(x):
    return snp.einsum("i,ij,j->", x, A, x) + snp.sum(snp.einsum("ij,jk->ik", A * x, A))


def einsum_implicit_and_ellipsis(x):
    m = x.reshape((2, 3))
    y = snp.einsum("...j,...j", m, snp.sin(m))          # implicit output: '...'
    z = snp.einsum("ij,kj", m, m)                      # implicit output: 'ik'
    return snp.sum(y * y) + snp.sum(z ** 2) * 0.1


def einsum_summed_label_and_broadcast(x):
    m = x.reshape((2, 3))
    s = snp.einsum("ij->", snp.tanh(m))                # a label summed from one operand only
    b = snp.einsum("ij,kj->ij", m[:1], m)              # a size-1 label broadcast (as NumPy)
    return s + snp.sum(b * m)


@pytest.mark.parametrize("f, n", [(einsum_bilinear, 3), (einsum_implicit_and_ellipsis, 6),
                                  (einsum_summed_label_and_broadcast, 6)])
def test_einsum_at_every_order(x64, f, n):
    every_order(f, rand(n), rand(n) - 0.5, rand(4, n))


def test_einsum_rules_are_einsums():
    src = secant.source(secant.grad(einsum_bilinear))
    assert "unbroadcast(snp.einsum(',ij,j->i', plus_einsum_x_bar, A, x), x)" in src
    vsrc = secant.source(secant.vmap(einsum_bilinear))
    assert "snp.einsum('Zi,ij,Zj->Z', x, A, x)" in vsrc


def einsum_diagonal(x):
    m = x.reshape((3, 3))
    return snp.sum(snp.einsum("ii->i", m) ** 3) + snp.einsum("ii", m * m)


def test_einsum_with_a_repeated_label_in_one_operand_at_every_order(x64):
    # the cotangent of a diagonal lands on the diagonal (an identity matrix ties the labels)
    every_order(einsum_diagonal, rand(9), rand(9) - 0.5, rand(4, 9))
    assert "snp.eye(m.shape[1], dtype=m.dtype)" in secant.source(secant.grad(einsum_diagonal))


# --- the split family ----------------------------------------------------------------------------
def splits(x):
    m = x.reshape((2, 4))
    a, b = snp.split(m, 2, axis=1)
    c, d = snp.hsplit(snp.sin(m), 2)
    e, f = snp.vsplit(m, 2)
    p = snp.array_split(x, [4])      # (pieces of unequal shapes: see the note below)
    g, h = snp.dsplit(m.reshape((2, 2, 2)), 2)
    return snp.sum(a * d + b * c) + snp.sum(e * f) + snp.sum(p[0] ** 3) + snp.sum(g * h * p[1][0])


def concat_of_list(x):
    y = snp.concatenate([x, 2.0 * x, snp.sin(x)])
    return snp.sum(y * y)


@pytest.mark.parametrize("f", [splits, concat_of_list])
def test_split_at_every_order(x64, f):
    every_order(f, rand(8), rand(8) - 0.5, rand(3, 8))


def unequal_pieces(x):
    p = snp.array_split(x, [3])
    return snp.sum(p[0] ** 3) + snp.sum(snp.sin(p[1]))


def test_unequal_pieces_below_grad_of_vmap_of_grad(x64):
    x, v = rand(8), rand(8) - 0.5
    g = secant.grad(unequal_pieces)
    close(g(x), fd_grad(unequal_pieces, x), rtol=1e-6)
    close(secant.jvp(g, (x,), (v,))[1], fd_along(g, x, v), rtol=1e-5, atol=1e-6)
    xs = rand(3, 8)
    close(secant.vmap(g)(xs), np.stack([np.asarray(g(e)) for e in xs]), rtol=1e-12)


def test_unequal_pieces_grad_of_vmap_of_grad(x64):
    g = secant.grad(unequal_pieces)
    secant.grad(lambda ys: snp.sum(secant.vmap(lambda y: snp.sum(g(y)))(ys)))(rand(3, 8))


# --- constants for grad that vmap must batch: argsort, any, all ----------------------------------
def sorted_weights(x):
    i = snp.argsort(x)
    j = snp.argsort(x, descending=True)
    on = snp.where(snp.any(x > 0.9) & snp.all(x > 0.0), 1.0, 0.5)
    return snp.sum(x[i] * snp.arange(5.0)) + on * snp.sum(x[j] ** 2 * snp.arange(5.0))


def test_argsort_any_all_at_every_order(x64):
    x = np.array([0.3, 1.1, 0.7, 0.2, 0.5])
    xs = np.array([[0.3, 1.1, 0.7, 0.2, 0.5], [0.4, 0.1, 0.8, 0.6, 0.25],
                   [0.95, 0.35, 0.15, 0.55, 0.65]])
    every_order(sorted_weights, x, rand(5) - 0.5, xs)


# --- NumPy's own functions inside jit ------------------------------------------------------------
def numpy_ufuncs(x):
    return np.sum(np.sin(x) * np.exp(x)) + np.float64(2.0) * np.tanh(x[0])


def test_numpy_functions_of_traced_values_under_jit(x64):
    x = rand(3)
    close(secant.jit(numpy_ufuncs)(x), float(numpy_ufuncs(x)), rtol=1e-12)
    close(secant.jit(np.sin)(0.4), np.sin(0.4), rtol=1e-12)
    close(secant.jit(secant.grad(numpy_ufuncs))(x), fd_grad(numpy_ufuncs, x), rtol=1e-6)
    with pytest.raises(secant.SecantError, match="Converting to a NumPy array"):
        secant.jit(lambda v: np.asarray_chkfinite(v))(x)    # no secant.numpy function of that name


# --- a dict built key by key: its cotangent helpers at second order ------------------------------
def dict_comprehension(x):
    d = {k: x * v for k, v in zip("abc", [1.0, 2.0, 3.0])}
    return snp.sum(d["a"] * d["c"] + snp.sin(d["b"]))


def tuple_unpack(x):
    t = (snp.sin(x), snp.cos(x))
    a, b = t
    return snp.sum(a * b)


@pytest.mark.parametrize("f", [dict_comprehension, tuple_unpack])
def test_containers_at_every_order(x64, f):
    every_order(f, rand(3), rand(3) - 0.5, rand(3, 3))


# --- jvp of jvp: tangent names of functions with defaults, and of recursion ----------------------
def _with_defaults(x, p=2, c=0.5):
    return snp.sum(c * x ** p)


def default_args(x):
    return _with_defaults(x) + _with_defaults(x, 3)


def _power(x, n):
    if n == 0:
        return 1.0
    return x * _power(x, n - 1)


def recursion(x):
    return snp.sum(_power(x, 4))


@pytest.mark.parametrize("f", [default_args, recursion])
def test_jvp_of_jvp_and_every_order(x64, f):
    x, v = rand(3), rand(3) - 0.5
    every_order(f, x, v, rand(3, 3))

    def dv(y):
        return secant.jvp(f, (y,), (v,))[1]
    want = float(np.sum(fd_along(secant.grad(f), x, v) * v))
    close(secant.jvp(dv, (x,), (v,))[1], want, rtol=1e-5)

    def hv(y):
        return snp.sum(secant.grad(f)(y) * v)
    close(secant.jit(secant.grad(hv))(x), np.asarray(secant.grad(hv)(x)), rtol=1e-12)


# --- vmap of .at[i] with a batched index ---------------------------------------------------------
def scatter(x, i):
    return snp.zeros(4).at[i].add(x * x)


def test_vmap_of_an_update_at_a_batched_index(x64):
    xs, idx = rand(3, 2), np.array([[0, 3], [2, 2], [1, 0]])
    got = secant.vmap(scatter)(xs, idx)
    close(got, np.stack([np.asarray(scatter(x, i)) for x, i in zip(xs, idx)]), rtol=1e-12)
    g = secant.vmap(secant.grad(lambda x, i: snp.sum(scatter(x, i) ** 2)))(xs, idx)
    want = [fd_grad(lambda y: snp.sum(scatter(y, i) ** 2), x) for x, i in zip(xs, idx)]
    close(g, np.stack(want), rtol=1e-6)
    # vmap of vmap, the index batched by the inner one (and by both)
    close(secant.vmap(secant.vmap(scatter))(xs[None], idx[None])[0], got, rtol=1e-12)
    loop = [[np.asarray(scatter(x, i)) for i in idx] for x in xs]
    close(secant.vmap(secant.vmap(scatter, (None, 0)), (0, None))(xs, idx), np.array(loop),
          rtol=1e-12)


# --- regression: a vmap whose batched form cannot be generated is never read as its inner
# function (functools.wraps copied the inner jvp's generated function onto the vmap: jvp of a
# hessian returned the unbatched jvp's (3, 3) zeros for a (3, 3, 3) Hessian, silently)
def at_set(x, w):
    y = x.at[1].set(x[0] * w[1])
    return y.at[0].add(snp.sin(x[2]))


def test_jvp_of_a_hessian_is_right_or_refused(x64):
    x, w = np.array([0.3, -0.7, 1.1]), np.array([1.5, -0.5, 2.0])
    hess = secant.hessian(at_set)
    want = np.zeros((3, 3, 3))
    want[0, 2, 2] = -np.sin(1.1)
    close(hess(x, w), want, rtol=1e-12)
    try:
        primal, _ = secant.jvp(lambda y: hess(y, w), (x,), (np.ones(3),))
    except secant.SecantError:
        return
    close(primal, want, rtol=1e-12)
