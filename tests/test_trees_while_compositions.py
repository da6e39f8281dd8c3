"""Second order and vmap through tree_map(..., is_leaf=...) and through lax.while_loop.

- The cotangent of tree_unflatten(treedef, leaves) is flattened up to treedef (an is_leaf
  tree_map's "leaves" are subtrees): at second order the first derivative's own
  tree_unflatten is transposed, and flattening it fully gave a list of a different length.
- A while loop's derivative under vmap: vmap of its vjp (the forward loop unbatched), grad of
  its vmap (a callee's parameter that item_of reads may be a tuple: its cotangents add leaf
  by leaf), and grad of vmap of grad (the lowered while_loop_vjp with per-example trip counts:
  an example that had stopped passes its cotangent through the extra steps unchanged).
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax, tree_util


# --- tree_map with is_leaf ----------------------------------------------------------------------
def pair_map(p):
    q = tree_util.tree_map(lambda t: t[0] * snp.sin(t[1]), p,
                           is_leaf=lambda n: isinstance(n, tuple))
    return snp.sum(q["a"] + q["b"])


def _params(seed):
    r = np.random.RandomState(seed)
    return {k: (r.randn(3), r.randn(3)) for k in ("a", "b")}


def _np_grad(p):
    """pair_map's gradient in NumPy: d/dt0 = sin t1, d/dt1 = t0 cos t1."""
    return {k: (np.sin(t1), t0 * np.cos(t1)) for k, (t0, t1) in p.items()}


def _grad_total(p):
    """The sum of pair_map's gradient's leaves, and its gradient (closed form)."""
    total = sum(float(np.sum(l)) for t in _np_grad(p).values() for l in t)
    return total, {k: (np.cos(t1), np.cos(t1) - t0 * np.sin(t1)) for k, (t0, t1) in p.items()}


def _fd_grad_total(p, eps=1e-6):
    def total(q):
        return sum(float(np.sum(l)) for t in _np_grad(q).values() for l in t)
    out = {}
    for k, t in p.items():
        parts = []
        for j in range(2):
            g = np.zeros(3)
            for i in range(3):
                up = {kk: tuple(np.array(l) for l in tt) for kk, tt in p.items()}
                dn = {kk: tuple(np.array(l) for l in tt) for kk, tt in p.items()}
                up[k][j][i] += eps
                dn[k][j][i] -= eps
                g[i] = (total(up) - total(dn)) / (2 * eps)
            parts.append(g)
        out[k] = tuple(parts)
    return out


def _assert_tree_close(got, want, tol=1e-6):
    assert tree_util.tree_structure(got) == tree_util.tree_structure(want)
    for a, b in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=tol, atol=tol)


def _leaf_sum(tree):
    return tree_util.tree_reduce(lambda a, b: a + snp.sum(b), tree, 0.0)


def test_grad_of_grad_through_is_leaf_tree_map(x64):
    p = _params(0)
    g = secant.grad(pair_map)
    _assert_tree_close(g(p), _np_grad(p))
    gg = secant.grad(lambda q: _leaf_sum(g(q)))(p)
    _assert_tree_close(gg, _grad_total(p)[1])
    _assert_tree_close(gg, _fd_grad_total(p), tol=1e-5)


def test_jit_of_grad_of_grad_and_grad_of_jit(x64):
    p = _params(1)
    g = secant.grad(pair_map)
    want = _grad_total(p)[1]
    _assert_tree_close(secant.jit(secant.grad(lambda q: _leaf_sum(g(q))))(p), want)
    gj = secant.grad(secant.jit(pair_map))
    _assert_tree_close(secant.grad(lambda q: _leaf_sum(gj(q)))(p), want)


def test_vjp_of_grad_through_is_leaf_tree_map(x64):
    p = _params(2)
    out, pull = secant.vjp(secant.grad(pair_map), p)
    _assert_tree_close(out, _np_grad(p))
    ct = _params(3)     # a cotangent of the gradient: same structure
    (got,) = pull(ct)
    # pair_map's Hessian is block-diagonal per (t0, t1) pair, element by element:
    # [[0, cos t1], [cos t1, -t0 sin t1]]
    want = {k: (np.cos(t1) * c1, np.cos(t1) * c0 - t0 * np.sin(t1) * c1)
            for (k, (t0, t1)), (c0, c1) in zip(p.items(), ct.values())}
    _assert_tree_close(got, want)


def test_vmap_of_grad_of_grad_through_is_leaf_tree_map(x64):
    ps = [_params(10 + b) for b in range(3)]
    stacked = tree_util.tree_map(lambda *ls: np.stack(ls), *ps)
    g = secant.grad(pair_map)
    got = secant.vmap(secant.grad(lambda q: _leaf_sum(g(q))))(stacked)
    want = tree_util.tree_map(lambda *ls: np.stack(ls), *[_grad_total(p)[1] for p in ps])
    _assert_tree_close(got, want)


# --- lax.while_loop: Newton's square root (a fixed trip count) ----------------------------------
def newton_sqrt(a):
    def cond(state):
        i, _ = state
        return i < 5

    def body(state):
        i, y = state
        return i + 1, 0.5 * (y + a / y)
    _, y = lax.while_loop(cond, body, (0, snp.ones_like(a)))
    return snp.sum(y)


def newton_np(a):
    y = np.ones_like(a)
    for _ in range(5):
        y = 0.5 * (y + a / y)
    return y


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


XS = np.array([[1.0, 2.0, 3.0], [1.5, 2.5, 3.5], [4.0, 5.0, 6.0]])


def test_grad_of_vmap_sum_through_while(x64):
    """Was: tree_map: tree 2 does not match (the carry's cotangents joined as tuples by +)."""
    total = secant.grad(lambda xs: snp.sum(secant.vmap(newton_sqrt)(xs)))
    want = _fd(newton_np, XS)
    np.testing.assert_allclose(np.asarray(total(XS)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(total)(XS)), want, rtol=1e-6)


def test_vmap_of_vjp_through_while(x64):
    """Was: vmap of while_loop_vjp: secant cannot see the loop's condition (the forward loop
    is unbatched: only the cotangent is)."""
    x = XS[0]
    _, pull = secant.vjp(newton_sqrt, x)
    cts = np.array([1.0, -2.0, 0.5])
    want = np.stack([pull(c)[0] for c in cts])      # a Python loop
    (got,) = secant.vmap(pull)(cts)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(want, np.outer(cts, _fd(newton_np, x)), rtol=1e-6)
    (got_jit,) = secant.jit(secant.vmap(pull))(cts)
    np.testing.assert_allclose(np.asarray(got_jit), want, rtol=1e-12)


def test_grad_of_vmap_of_grad_through_while(x64):
    """Was: second order through generated Lambda (the vmapped loop's lambdas)."""
    g = secant.grad(newton_sqrt)
    got = secant.grad(lambda xs: snp.sum(secant.vmap(g)(xs)))(XS)
    want = _fd(lambda a: _fd(newton_np, a, 1e-4), XS, 1e-4)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


# --- lax.while_loop with a trip count per example ------------------------------------------------
def grow(a):
    """a ** n for the first n with a ** n >= 10: the loop runs n(a) steps."""
    def cond(s):
        return s[1] < 10.0

    def body(s):
        i, y = s
        return i + 1, y * a
    _, y = lax.while_loop(cond, body, (0, snp.ones_like(a)))
    return y


def _steps(a):
    n, y = 0, 1.0
    while y < 10.0:
        n, y = n + 1, y * a
    return n


A = np.array([1.5, 2.0, 3.0, 4.5])      # 6, 4, 3 and 2 steps


def _grow_fd2(a, eps=1e-4):
    """grow's second derivative by finite differences (n is constant near each a)."""
    n = _steps(a)
    return ((a + eps) ** n - 2 * a ** n + (a - eps) ** n) / eps ** 2


@pytest.mark.parametrize("jit", [False, True])
def test_grad_of_vmap_of_grad_with_trip_counts_per_example(x64, jit):
    """The lowered reverse pass runs the steps of the longest example: an example that had
    stopped must pass its cotangent through the others' extra steps unchanged."""
    g = secant.grad(grow)
    h = secant.grad(lambda xs: snp.sum(secant.vmap(g)(xs)))
    got = (secant.jit(h) if jit else h)(A)
    want = np.array([_steps(a) * (_steps(a) - 1) * a ** (_steps(a) - 2) for a in A])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    np.testing.assert_allclose(want, [_grow_fd2(a) for a in A], rtol=1e-5)
    loop = np.array([secant.grad(g)(a) for a in A])     # a Python loop
    np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-10)


def test_vmap_of_vjp_with_trip_counts(x64):
    _, pull = secant.vjp(grow, 2.0)
    cts = np.array([1.0, -2.0, 0.5])
    (got,) = secant.vmap(pull)(cts)
    np.testing.assert_allclose(np.asarray(got), [pull(c)[0] for c in cts], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got), 4 * 2.0 ** 3 * cts, rtol=1e-12)
