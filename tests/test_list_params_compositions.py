"""Python lists of parameters (and lists built from traced values) under vmap composed with
jvp and grad at second order: vmap∘jvp, vmap∘jvp∘grad, vmap∘grad∘grad, grad∘vmap∘grad.
Batched results against a Python loop over the examples; derivatives against float64
central differences. (Each once raised: `list indices must be integers or slices, not tuple`
where a derivative's alias of a list parameter was indexed, or `if on a batched value` where
a derivative's helper tested a dict key.)"""
import numpy as np
import pytest

import secant
import secant.numpy as snp

H = 1e-6


def rand(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape)


# --- pytrees of numpy leaves (lists, tuples, dicts), for the references ----------------------
def leaves(t):
    if isinstance(t, dict):
        return [leaf for k in sorted(t) for leaf in leaves(t[k])]
    if isinstance(t, (list, tuple)):
        return [leaf for item in t for leaf in leaves(item)]
    return [np.asarray(t, dtype=np.float64)]


def tmap(f, *ts):
    t = ts[0]
    if isinstance(t, dict):
        return {k: tmap(f, *(u[k] for u in ts)) for k in t}
    if isinstance(t, (list, tuple)):
        return type(t)(tmap(f, *items) for items in zip(*ts))
    return f(*ts)


def example(tree, b):
    return tmap(lambda leaf: np.asarray(leaf)[b], tree)


def stack(trees):
    return tmap(lambda *ls: np.stack([np.asarray(leaf) for leaf in ls]), *trees)


def close(got, want, tol=1e-6):
    for g, w in zip(leaves(got), leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), w, rtol=tol, atol=tol)


def fd_dir(f, p, v):
    """Central difference of scalar f at pytree p along pytree v."""
    return (float(f(tmap(lambda a, t: a + H * t, p, v)))
            - float(f(tmap(lambda a, t: a - H * t, p, v)))) / (2 * H)


def fd_hvp(f, p, v, h=1e-5):
    """H v of scalar f at p: central differences of its gradient along v, each gradient entry by
    central differences of f itself (float64 all through)."""
    def grad_fd(q):
        return tmap(lambda a: _grad_leaf(f, q, a), q)
    plus = grad_fd(tmap(lambda a, t: a + h * t, p, v))
    minus = grad_fd(tmap(lambda a, t: a - h * t, p, v))
    return tmap(lambda a, b: (a - b) / (2 * h), plus, minus)


def _grad_leaf(f, q, leaf):
    """d f / d leaf (leaf: one array of q, found by identity), central differences."""
    g = np.zeros_like(leaf)
    for i in np.ndindex(leaf.shape):
        def moved(d):
            def put(a):
                if a is not leaf:
                    return a
                b = a.copy()
                b[i] += d
                return b
            return tmap(put, q)
        g[i] = (float(f(moved(1e-5))) - float(f(moved(-1e-5)))) / 2e-5
    return g


def tree_vdot(a, b):
    total = 0.0
    for x, y in zip(secant.tree_util.tree_leaves(a), secant.tree_util.tree_leaves(b)):
        total = total + snp.sum(x * y)
    return total


# --- the functions: lists of parameters as users write them ---------------------------------
def mlp_pairs(params, x):
    for w, b in params[:-1]:
        x = snp.tanh(x @ w + b)
    w, b = params[-1]
    return snp.sum((x @ w + b) ** 2)


def hidden_last(params, x):
    hidden, last = params[:-1], params[-1]
    for p in hidden:
        x = snp.tanh(x @ p["w"] + p["b"])
    return snp.sum(snp.sin(x @ last["w"] + last["b"]))


def mlp_pairs_l2(params, x):
    reg = sum(snp.sum(w * w) for w, _ in params)
    return mlp_pairs(params, x) + 0.1 * reg


X = rand(1, 4, 3)
PAIRS = [(rand(2, 3, 4), rand(3, 4)), (rand(4, 4, 4), rand(5, 4)), (rand(6, 4, 2), rand(7, 2))]
LAYERS = [{"w": rand(8, 3, 3), "b": rand(9, 3)}, {"w": rand(10, 3, 2), "b": rand(11, 2)}]
B = 3

LIST_CASES = [pytest.param(mlp_pairs, PAIRS, id="mlp_pairs"),
              pytest.param(hidden_last, LAYERS, id="hidden_last"),
              pytest.param(mlp_pairs_l2, PAIRS, id="mlp_pairs_l2")]


def batch_of(params, seed):
    """B perturbed copies of params, each leaf stacked (a batched list of parameters)."""
    return stack([tmap(lambda a: a + 0.1 * rand(seed + b, *np.shape(a)), params)
                  for b in range(B)])


def bound(fn):
    def f1(p):
        return fn(p, X)
    return f1


@pytest.mark.parametrize("fn, params", LIST_CASES)
def test_vmap_of_jvp_over_list_params(x64, fn, params):
    f1 = bound(fn)

    def dir_deriv(p, t):
        return secant.jvp(f1, (p,), (t,))[1]
    ps, ts = batch_of(params, 100), batch_of(tmap(np.zeros_like, params), 200)
    got = secant.vmap(dir_deriv)(ps, ts)
    want = np.array([fd_dir(f1, example(ps, b), example(ts, b)) for b in range(B)])
    close(got, want)


def _hv_fns(fn, params):
    f1, v = bound(fn), tmap(lambda a: 0.5 * np.ones_like(a), params)
    g1 = secant.grad(f1)

    def hv(p):                  # v . grad f: its gradient is H v
        return tree_vdot(g1(p), v)

    def hvp(p):                 # jvp of grad f along v: H v
        return secant.jvp(g1, (p,), (v,))[1]
    return f1, v, hv, hvp


@pytest.mark.parametrize("fn, params", LIST_CASES)
@pytest.mark.parametrize("how", ["vmap∘grad∘grad", "vmap∘jvp∘grad", "grad∘vmap∘grad"])
def test_second_order_of_list_params_batched(x64, fn, params, how):
    f1, v, hv, hvp = _hv_fns(fn, params)
    ps = batch_of(params, 300)
    if how == "vmap∘grad∘grad":
        got = secant.vmap(secant.grad(hv))(ps)
    elif how == "vmap∘jvp∘grad":
        got = secant.vmap(hvp)(ps)
    else:
        vf = secant.vmap(hv)
        got = secant.grad(lambda qs: snp.sum(vf(qs)))(ps)
    want = stack([fd_hvp(f1, example(ps, b), v) for b in range(B)])
    close(got, want, tol=1e-4)


# --- lists built from a traced argument, at second order under vmap ------------------------
def list_indexed(x):
    parts = [x, x * x, x ** 3]
    return snp.sum(parts[1] + parts[-1])


def star_unpack(x):
    first, *rest = [x[0], x[1], x[2]]
    return first * rest[0] + rest[1] ** 2


def hess_list_indexed(x):     # closed form: d/dx (x^2 + x^3) = 2x + 3x^2; again: 2 + 6x
    return np.diag(2 + 6 * x)


def hess_star_unpack(x):      # x0 x1 + x2^2
    return np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])


XS = np.array([[0.3, -0.2, 0.5], [0.1, 0.9, -0.4], [0.7, 0.2, 0.05]])
V = np.array([0.4, -1.0, 0.25])


@pytest.mark.parametrize("fn, hess", [(list_indexed, hess_list_indexed),
                                      (star_unpack, hess_star_unpack)])
@pytest.mark.parametrize("how", ["vmap∘grad∘grad", "vmap∘jvp∘grad"])
def test_second_order_of_built_lists_batched(x64, fn, hess, how):
    g1 = secant.grad(fn)
    if how == "vmap∘grad∘grad":
        got = secant.vmap(secant.grad(lambda x: snp.sum(g1(x) * V)))(XS)
    else:
        got = secant.vmap(lambda x: secant.jvp(g1, (x,), (V,))[1])(XS)
    want = np.stack([hess(x) @ V for x in XS])
    close(got, want)
    # the closed forms against float64 central differences of the function itself
    for x in XS:
        close(fd_hvp(fn, x, V), hess(x) @ V, tol=1e-4)


# --- a dict's keys stay Python values under vmap -------------------------------------------
def keyed_sum(d, x):
    """d: a dict of arrays, not differentiated; its keys tested in a Python if."""
    total = 0.0
    for k, v in d.items():
        if k == "scale":
            total = total + snp.sum(v * x ** 2)
        else:
            total = total + snp.sum(snp.sin(v * x))
    return total


def test_vmap_of_grad_over_dict_items(x64):
    """grad wrt x loops over d.items() (d not differentiated) by its keys; vmap over d and x
    keeps `k == "scale"` a Python test (it was an `if on a batched value`)."""
    ds = {"scale": rand(20, B, 3), "freq": rand(21, B, 3)}
    got = secant.vmap(secant.grad(keyed_sum, 1))(ds, XS)
    for b in range(B):
        d = example(ds, b)
        want = 2 * d["scale"] * XS[b] + d["freq"] * np.cos(d["freq"] * XS[b])
        close(got[b], want)
        close(want, np.array([fd_dir(lambda x: keyed_sum(d, x), XS[b], e)
                              for e in np.eye(3)]), tol=1e-5)


def test_grad_source_loops_over_keys():
    """The derivative reads `for k, v in d.items()` of an undifferentiated dict as a loop over
    its keys: the key is a name of its own, never a field of a batched pair."""
    src = secant.source(secant.grad(keyed_sum, 1))
    assert "keys = list(d.keys())" in src
    assert "for k in keys:" in src
    assert "v = d[k]" in src
