"""Checks shared by tests/test_others15_*.py (issue 15, code written as JAX users write it).

Every check compares a transform with something computed without it: grad with float64 central
finite differences, vmap with a Python loop, jit with eager. Arguments are pytrees of NumPy
float64 arrays; run the tests with the `x64` fixture."""
import numpy as np

import secant
import secant.numpy as snp
from secant import tree_util

EPS = 1e-6


def to_np(tree):
    return tree_util.tree_map(lambda v: np.asarray(v, dtype=np.float64), tree)


def to_snp(tree):
    return tree_util.tree_map(snp.asarray, tree)


def assert_trees_close(got, want, rtol=1e-6, atol=1e-7):
    g_leaves, g_def = tree_util.tree_flatten(got)
    w_leaves, w_def = tree_util.tree_flatten(want)
    assert g_def == w_def, (g_def, w_def)
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def fd_grad(f, args, argnum=0):
    """Central differences of the scalar f(*args) with respect to each leaf of args[argnum]."""
    leaves, treedef = tree_util.tree_flatten(args[argnum])
    leaves = [np.array(leaf, dtype=np.float64) for leaf in leaves]
    out = []
    for i, leaf in enumerate(leaves):
        g = np.zeros_like(leaf)
        for idx in np.ndindex(leaf.shape):
            vals = []
            for sign in (1.0, -1.0):
                moved = [l.copy() for l in leaves]
                moved[i][idx] += sign * EPS
                new = list(args)
                new[argnum] = tree_util.tree_unflatten(treedef, [snp.asarray(m) for m in moved])
                vals.append(float(f(*new)))
            g[idx] = (vals[0] - vals[1]) / (2 * EPS)
        out.append(g)
    return tree_util.tree_unflatten(treedef, out)


def fd_jvp(f, args, tangents):
    """Central difference of f (any pytree output) along `tangents` (one per argument)."""
    def moved(sign):
        return tuple(tree_util.tree_map(lambda a, t: snp.asarray(np.asarray(a) + sign * EPS * np.asarray(t)),
                                        a, t) for a, t in zip(args, tangents))
    hi, lo = to_np(f(*moved(1.0))), to_np(f(*moved(-1.0)))
    return tree_util.tree_map(lambda h, l: (h - l) / (2 * EPS), hi, lo)


def check_grad(f, *args, argnum=0, rtol=1e-5, atol=1e-6):
    """grad against finite differences, jit(grad) against grad; returns the gradient."""
    args = to_snp(args)
    g = secant.grad(f, argnums=argnum)(*args)
    assert_trees_close(g, fd_grad(f, args, argnum), rtol=rtol, atol=atol)
    assert_trees_close(secant.jit(secant.grad(f, argnums=argnum))(*args), g)
    return g


def check_jit(f, *args, static_argnums=()):
    args = to_snp(args) if not static_argnums else args
    want = f(*args)
    assert_trees_close(secant.jit(f, static_argnums=static_argnums)(*args), want)
    return want


def check_vmap(f, args, in_axes=0, out_axes=0, jit=True):
    """vmap(f) (and jit(vmap(f))) against a Python loop over the mapped axis."""
    args = to_snp(args)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    n = next(tree_util.tree_leaves(a)[0].shape[ax] for a, ax in zip(args, axes) if ax is not None)
    rows = []
    for i in range(n):
        one = [a if ax is None else tree_util.tree_map(lambda v: v[i] if ax == 0 else snp.take(v, i, axis=ax), a)
               for a, ax in zip(args, axes)]
        rows.append(to_np(f(*one)))
    want = tree_util.tree_map(lambda *r: np.stack(r, axis=out_axes), *rows)
    got = secant.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    assert_trees_close(got, want)
    if jit:
        assert_trees_close(secant.jit(secant.vmap(f, in_axes=in_axes, out_axes=out_axes))(*args), want)
    return got
