"""Shape queries (`.shape[k]` with k negative or not, len, `.ndim`, `.size`) under vmap,
vmap(vmap), vmap(grad), jacfwd(grad) and hessian, on values batched or not, reached directly
and through comprehensions, starred calls, zip, enumerate, dict and list items, tuple unpacking
and helper calls (issue 15, fft15r). A transform that reads a per-example query from the wrong
axis gives another number, not an error: each example's per-example array is square (3, 3)
beside a batch of 4 (and 2 outer) and unbatched weights of other sizes, and every value is
checked against a Python loop over the examples and float64 central differences."""
import os

import numpy as np
import pytest

import secant
import secant.numpy as snp

from user_programs.checks import rotated

RNG = np.random.default_rng(1515)
N, B, OUTER = 3, 4, 2


# --- the programs: a scalar of x (N, N) and the weights w (a dict) --------------------------
def direct(x, w):
    return (snp.sum(snp.sin(x)) * x.shape[0] + x.shape[-1] * snp.sum(x ** 2) / x.ndim
            + x.size * snp.sum(x) + len(x) + x.shape[-2] * snp.sum(x @ x))


def weights_dict(x, w):
    h = w["hh"]
    return (snp.sum(snp.tanh(x @ w["hh"])) * w["hh"].shape[1] + h.shape[0] * snp.sum(x)
            + w["b"].shape[-1] * snp.sum(x ** 2) + len(w["b"]) + w["hh"].ndim * w["hh"].size)


def comprehension(x, w):
    ns = [c.shape[1] for c in [x, w["hh"]]]
    return snp.sum(x @ x) * ns[0] + ns[1] * snp.sum(x) + sum([c.ndim for c in [x, w["b"]]])


def starred(x, w):
    m = max(*[c.shape[0] + c.ndim for c in (x, w["hh"], w["b"])])
    k = min(*[len(c) for c in [w["b"], x]], 9)
    return snp.sum(x ** 2) * m + k * snp.sum(snp.cos(x))


def zipped(x, w):
    total = 0.0
    for a, b in zip([x, x.T], [w["hh"], w["b"]]):
        total = total + snp.sum(a) * b.shape[0] + a.shape[1] * snp.sum(a * a) + b.shape[-1]
    return total


def enumerated(x, w):
    total = snp.sum(x)
    for i, c in enumerate([x, w["b"], x @ x]):
        total = total + (i + 1) * c.shape[-1] * snp.sum(c) + c.size * snp.sum(x ** 2)
    return total


def dict_items(x, w):
    d = {"x": x, "h": w["hh"]}
    rows = {k: v.shape[0] for k, v in d.items()}
    return d["x"].shape[1] * snp.sum(d["x"] ** 2) + d["h"].shape[1] * snp.sum(x) \
        + rows["x"] * snp.sum(snp.sin(x)) + rows["h"]


def list_items(x, w):
    xs = [w["b"], x, w["hh"]]
    return (xs[0].shape[0] * snp.sum(xs[1]) + xs[1].shape[-1] * snp.sum(x * x)
            + xs[2].shape[1] * snp.sum(snp.exp(xs[1] / 4)) + xs[-1].shape[0])


def unpacked(x, w):
    a, (b, c) = x, (w["hh"], x.T @ x)
    return a.shape[0] * snp.sum(a) + b.shape[1] * snp.sum(c) + c.shape[-1] * snp.sum(a ** 2)


def rows(a):
    return a.shape[0]


def width(a):
    return a.shape[-1] * a.ndim + a.size


def scaled(a, v):
    return snp.sum(a * v) * a.shape[1] + len(v)


def helpers(x, w):
    return (rows(x) * snp.sum(x) + rows(w["hh"]) * snp.sum(x ** 2) + width(w["b"])
            + width(x) * snp.sum(snp.sin(x)) + scaled(x, x) + scaled(w["hh"], x[0]))


def nested(x, w):
    m = max(*[sum([e.shape[0] for e in [c, c]]) for c in [x, w["hh"]]])
    n = sum([sum([e.shape[-1] for e in (c, w["b"])]) for c in [x]])
    return snp.sum(x ** 2) * m + n * snp.sum(x)


def doubled_weights(x, w):
    return w["hh"] * 2.0


def unbatched_items(x, w):
    # d is a callee's output that turns out unbatched: a comprehension over [c, d] in an
    # expression reads each item's own shape (d broadcast there), and one over weights only
    # with a variable of the same name as a batched one (e) reads the weights whole
    d = doubled_weights(x, w)
    n = max(*[sum([e.shape[0] + e.shape[1] for e in [c, d]]) for c in [x, d]], 0)
    m = sum([e.shape[1] for e in (w["b2"], w["hh"])])
    k = sum([e.shape[0] for e in [d, d]])
    return (n + 10 * m + 100 * k) * snp.sum(snp.sin(x)) + snp.sum(x @ d)


def named_loop(x, w):
    n = 0
    for c in [x, w["hh"]]:
        items = [e.shape[0] * e.ndim for e in (c, w["b2"])]
        n = n + sum(items) + c.shape[-1]
    return n * snp.sum(x ** 2)


def inner_enumerate_zip(x, w):
    # comprehensions inside a comprehension's item stay expressions: their variables drawn
    # through enumerate and zip from lists of batched and unbatched values
    ns = [sum([(i + 1) * e.shape[0] for i, e in enumerate([c, w["b2"]])]) for c in [x, w["b2"]]]
    ms = [sum([a.shape[1] * b.shape[0] for a, b in zip([c, w["b2"]], [w["b"], c])]) for c in [x]]
    return ns[0] * snp.sum(x) + ns[1] * snp.sum(snp.cos(x)) + ms[0] * snp.sum(x ** 2)


def clash(x, w):
    e = doubled_weights(x, w)       # unbatched, queried whole; the comprehension's e per example
    n = e.shape[1] + 10 * sum([e.shape[0] + e.shape[1] for e in [x, e]])
    return n * snp.sum(x * x)



PROGRAMS = [direct, weights_dict, comprehension, starred, zipped, enumerated, dict_items,
            list_items, unpacked, helpers, nested, unbatched_items, named_loop,
            inner_enumerate_zip, clash]


W = {"hh": RNG.normal(size=(N, N)), "b": RNG.normal(size=(6,)), "b2": RNG.normal(size=(5, 2))}
X = RNG.normal(size=(OUTER, B, N, N))


def _loop(f, xs, *rest):
    return np.stack([np.asarray(f(x, *rest)) for x in xs])


def _grad_fd(f, x, w, h=1e-6):
    """float64 central differences of f at x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e, w)) - float(f(x - e, w))) / (2 * h)
    return g


def _jac_fd(g, x, w, h=1e-6):
    out = np.zeros(x.shape + x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[(...,) + i] = (np.asarray(g(x + e, w)) - np.asarray(g(x - e, w))) / (2 * h)
    return out


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap(x64, f):
    xs = X[0]
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(xs, W), _loop(f, xs, W),
                               rtol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_of_vmap(x64, f):
    vv = secant.vmap(secant.vmap(f, in_axes=(0, None)), in_axes=(0, None))
    want = np.stack([_loop(f, xs, W) for xs in X])
    np.testing.assert_allclose(vv(X, W), want, rtol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_of_grad(x64, f):
    xs = X[0]
    want = np.stack([_grad_fd(f, x, W) for x in xs])
    np.testing.assert_allclose(secant.vmap(secant.grad(f), in_axes=(0, None))(xs, W), want,
                               rtol=1e-6, atol=1e-6)


# (each program under jacfwd(grad) or hessian in turn, both under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("f, second", [
    pytest.param(f, second, id=f"{second}-{f.__name__}")
    for f, second in rotated(PROGRAMS, ["jacfwd_grad", "hessian"])])
def test_second_order(x64, f, second):
    x = X[1, 2]
    h = (secant.jacfwd(secant.grad(f)) if second == "jacfwd_grad" else secant.hessian(f))(x, W)
    want = _jac_fd(lambda x, w: _grad_fd(f, x, w, 1e-4), x, W, 1e-4)
    np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-4)


WB = {k: RNG.normal(size=(B,) + v.shape) for k, v in W.items()}


# (each program with the weights batched, or both arguments, in turn; both under thorough)
@pytest.mark.parametrize("f, in_axes", [
    pytest.param(f, in_axes, id=f"{f.__name__}-{'weights' if in_axes[0] is None else 'both'}")
    for f, in_axes in rotated(PROGRAMS, [(None, 0), (0, 0)])])
def test_vmap_of_batched_weights(x64, f, in_axes):
    xs = X[0] if in_axes[0] == 0 else X[0, 0]
    want = np.stack([f(xs[i] if in_axes[0] == 0 else xs, {k: v[i] for k, v in WB.items()})
                     for i in range(B)])
    np.testing.assert_allclose(secant.vmap(f, in_axes=in_axes)(xs, WB), want, rtol=1e-9)


def test_jit_of_vmap(x64):
    for f in (unbatched_items, nested, clash):
        want = _loop(f, X[0], W)
        np.testing.assert_allclose(secant.jit(secant.vmap(f, in_axes=(0, None)))(X[0], W),
                                   want, rtol=1e-9)


def starred_over_enumerate(x, w):
    return max(*[sum([(i + 1) * e.shape[0] for i, e in enumerate([c, w["b"]])])
                 for c in [x, w["hh"]]], 0) * snp.sum(x)


def rows_of_a_list_of_lists(x, w):
    ns = [sum([e.shape[0] for e in c]) for c in [[x, w["b2"]], [x]]]
    return ns[0] * snp.sum(x) + ns[1]


def test_rows_of_a_list_of_lists():
    """Was refused (star15: each row's items are batched where the rows are written): each
    example's gradient, ns[0] = 3 + 5 (x's rows and b2's) times ones."""
    xs = X[0].astype(np.float32)
    out = secant.vmap(secant.grad(rows_of_a_list_of_lists), in_axes=(0, None))(xs, W)
    np.testing.assert_allclose(out, np.full(xs.shape, 8.0), rtol=1e-6)


def starred_over_a_named_list(x, w):
    ns = [sum([(i + 1) * e.shape[0] for i, e in enumerate([c, w["b"]])]) for c in [x, w["hh"]]]
    return max(*ns, 0) * snp.sum(x)


@pytest.mark.parametrize("f", [starred_over_enumerate, starred_over_a_named_list],
                         ids=lambda f: f.__name__)
def test_a_starred_list(f):
    """max(*[...]) written in the call (star15: was refused) or named on its own line first:
    vmap(grad) is each example's gradient (k * ones, k the largest count: 3 + 2 * 3 for x's
    rows and b's)."""
    xs = X[0].astype(np.float32)
    k = max(sum((i + 1) * e.shape[0] for i, e in enumerate([c, W["b"]]))
            for c in [xs[0], W["hh"]])
    out = secant.vmap(secant.grad(f), in_axes=(0, None))(xs, W)
    np.testing.assert_allclose(out, np.full(xs.shape, float(k)), rtol=1e-6)


# (vmap of hessian compiles long: the comprehension programs by default, all when thorough)
HESSIAN = PROGRAMS if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else [
    weights_dict, unbatched_items, inner_enumerate_zip, clash]


@pytest.mark.parametrize("f", HESSIAN, ids=lambda f: f.__name__)
def test_vmap_of_hessian(x64, f):
    """Each example's hessian (itself checked against central differences above)."""
    xs = X[0][:2]
    want = np.stack([np.asarray(secant.hessian(f)(x, W)) for x in xs])
    np.testing.assert_allclose(secant.vmap(secant.hessian(f), in_axes=(0, None))(xs, W), want,
                               rtol=1e-9, atol=1e-12)
