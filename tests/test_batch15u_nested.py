"""Issue 15, section 4 (batch15u): vmap's batching helpers (batching/helpers.py parts_index,
batch_index, update_batched) under a second vmap. Each has a rule of its own for an outer
vmap (batching/rules.py HELPERS) instead of its source being vmapped, which read a tuple of
index parts as one batched array. Against a Python loop, and derivatives against float64
central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

XS = np.random.default_rng(8).normal(size=(3, 2, 4, 5))


def _loop2(fn, xs=XS):
    return np.array([[np.asarray(fn(xs[i, j])) for j in range(xs.shape[1])]
                     for i in range(xs.shape[0])])


# one example's index mixing an index per example (argmin) with ints, slices, None, Ellipsis
# and a list: parts_index builds it, and under a second vmap its rule
INDEXED = {
    "int_then_argmin": lambda x: x[0, snp.argmin(x[0])],
    "slice_then_argmin": lambda x: x[:, snp.argmin(x[0])],
    "list_then_argmax": lambda x: x[[0, 2], snp.argmax(x[1])],
    "argmin_then_slice": lambda x: x[snp.argmin(x[:, 0]), 1:4],
    "none_int_argmin": lambda x: x[None, 1, snp.argmin(x[1])],
    "ellipsis_argmin": lambda x: x[..., snp.argmin(x[0])],
    "at_get": lambda x: snp.asarray(x).at[1, snp.argmin(x[0])].get(),
    "at_set": lambda x: snp.asarray(x).at[:, snp.argmin(x[0])].set(0.0),
    "at_add": lambda x: snp.asarray(x).at[1, snp.argmin(x[0])].add(x[2, 0]),
}


@pytest.mark.parametrize("name", sorted(INDEXED))
def test_index_parts_under_vmap_of_vmap(x64, name):
    fn = INDEXED[name]
    got = secant.vmap(secant.vmap(fn))(XS)
    np.testing.assert_array_equal(np.asarray(got), _loop2(fn))


@pytest.mark.parametrize("name", ["slice_then_argmin", "at_add"])
def test_index_parts_under_jit_of_vmap_of_vmap(x64, name):
    fn = INDEXED[name]
    got = secant.jit(secant.vmap(secant.vmap(fn)))(XS)
    np.testing.assert_array_equal(np.asarray(got), _loop2(fn))


def test_index_parts_under_three_vmaps(x64):
    fn = INDEXED["argmin_then_slice"]
    x3 = np.stack([XS, 2 * XS[::-1]])
    got = secant.vmap(secant.vmap(secant.vmap(fn)))(x3)
    np.testing.assert_array_equal(np.asarray(got), np.stack([_loop2(fn, x) for x in x3]))


def _g(x):
    return snp.sum(snp.sin(x[:, snp.argmin(x[0])]) ** 2) + snp.sum(
        x[1, snp.argmax(x[2])] * x[0, 1:3])


def _g_np(x):
    return np.sum(np.sin(x[:, np.argmin(x[0])]) ** 2) + np.sum(
        x[1, np.argmax(x[2])] * x[0, 1:3])


def _central(f, x, h=1e-6):
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        out[k] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def test_grad_of_an_index_per_example_under_vmap(x64):
    """the reverse pass's `index_exp[:, i]` (the index as a value) with i per example: was
    'cannot convert IndexExpression to an array' under one vmap; now the tuple of its parts"""
    got = secant.vmap(secant.grad(_g))(XS[0])
    want = np.array([_central(_g_np, x) for x in XS[0]])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("how", ["vmap_vmap_grad", "jit_vmap_vmap_grad", "grad_of_vmap_vmap"])
def test_grad_of_an_index_per_example_under_vmap_of_vmap(x64, how):
    if how == "grad_of_vmap_vmap":
        got = secant.grad(lambda xs: snp.sum(secant.vmap(secant.vmap(_g))(xs)))(XS)
    else:
        fn = secant.vmap(secant.vmap(secant.grad(_g)))
        got = (secant.jit(fn) if how.startswith("jit") else fn)(XS)
    want = _loop2(lambda x: _central(_g_np, x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-8)


def test_vmap_of_hessian_of_an_index_per_example(x64):
    """hessian's forward pass over the reverse pass's scatter at an index per example (an
    index mixing a slice and an array), under vmap: against the loop and second differences"""
    def h(x):
        return snp.sum(x[:, snp.argmin(x[0])] ** 3)
    xs = XS[:, 0]
    got = np.asarray(secant.vmap(secant.hessian(h))(xs))
    loop = np.array([np.asarray(secant.hessian(h)(x)) for x in xs])
    np.testing.assert_allclose(got, loop, rtol=1e-14)
    for x, hx in zip(xs, got):
        column = np.where(np.arange(5) == np.argmin(x[0]), 1.0, 0.0)     # (fixed near x)
        want = _central(lambda y, c=column: (3 * c * y ** 2)[2, 1], x)
        np.testing.assert_allclose(hx[2, 1], want, atol=1e-6)


def test_update_at_an_outer_index_under_vmap_of_vmap(x64):
    """update_batched (the inner vmap's `base.at[i].add(v)` with v per example) under an
    outer vmap that batches i: its rule merges the two batch axes"""
    x3 = np.random.default_rng(3).normal(size=(3, 4, 5))

    def outer(x):
        i = snp.argmin(x[0])
        return secant.vmap(lambda v: x[1].at[i].add(v * 2.0))(x[:, 0])

    want = []
    for x in x3:
        rows = []
        for v in x[:, 0]:
            y = x[1].copy()
            y[np.argmin(x[0])] += 2.0 * v
            rows.append(y)
        want.append(rows)
    np.testing.assert_array_equal(np.asarray(secant.vmap(outer)(x3)), np.array(want))


def _logdet_np(a):
    return np.linalg.slogdet(a)[1]


@secant.custom_jvp
def _logdet(a):
    return snp.log(snp.linalg.det(a))


@_logdet.defjvp
def _logdet_jvp(primals, tangents):
    a, = primals
    a_dot, = tangents
    return _logdet(a), snp.trace(snp.linalg.solve(a, a_dot))


def _spd(w, x, lib):
    h = lib.tanh(x @ lib.diag(w))
    return h.T @ h + lib.eye(3) * (1.0 + w[0] ** 2)


def test_vmap_of_hessian_through_solve_in_a_custom_jvp_rule(x64):
    """deep15r cjvp_logdet_helper vmap_hessian: solve's row permutation's take_along_axis
    cotangent (update_batched, then batch_index) under the outer vmap was an UnsupportedError"""
    x = np.random.default_rng(5).normal(size=(4, 3))
    ws = np.random.default_rng(6).normal(size=(3, 3))
    got = np.asarray(secant.vmap(secant.hessian(lambda w: _logdet(_spd(w, x, snp))))(ws))
    f = lambda w: _logdet_np(_spd(w, x, np))
    for w, hw in zip(ws, got):
        for i in range(3):
            grad_i = lambda v, i=i: _central(f, v, 1e-5)[i]
            np.testing.assert_allclose(hw[i], _central(grad_i, w, 1e-4), rtol=1e-5, atol=1e-6)


# --- a loop's carry that is a list, read by an index per iteration (vmap asks when it runs) ---
def _scan_list_carry(x):
    c, _ = lax.scan(lambda c, t: ([c[0] * 0.5 + snp.sin(c[1]), c[1] + t], None),
                    [x, x * 0.5], snp.arange(3.0))
    out = 0.0
    for i in range(2):
        out = out + snp.sum(c[i] ** 2)
    return out


def _scan_list_carry_np(x):
    c = [x, x * 0.5]
    for t in range(3):
        c = [c[0] * 0.5 + np.sin(c[1]), c[1] + t]
    return sum(np.sum(ci ** 2) for ci in c)


def _list_rebuilt(ws, x):
    """deep15r loop_list_rebuilt: staged, its reverse pass carries the list through
    fori_loop_with_carries (a scan under jacfwd), then reads `vs[i]`"""
    vs = list(ws)
    for _ in range(2):
        vs = [snp.sin(v) + 0.1 * vs[0] for v in vs]
    return sum(snp.sum((x @ v) ** 2) for v in vs)


def _list_rebuilt_np(ws, x):
    vs = list(ws)
    for _ in range(2):
        vs = [np.sin(v) + 0.1 * vs[0] for v in vs]
    return sum(np.sum((x @ v) ** 2) for v in vs)


X43 = np.random.default_rng(0).normal(size=(4, 3))


def _list_rebuilt_at_x(ws):
    return _list_rebuilt(ws, X43)        # (its derivative a callee's, as deep15r's harness)


@pytest.mark.parametrize("jit", [False, True])
def test_scan_list_carry_read_by_index_under_vmap(x64, jit):
    """`c[i]` of lax.scan's list carry was `c[batch_index(i)]` (TypeError: list indices)"""
    wrap = secant.jit if jit else (lambda f: f)
    got = wrap(secant.vmap(_scan_list_carry))(X43)
    np.testing.assert_allclose(np.asarray(got), [_scan_list_carry_np(x) for x in X43],
                               rtol=1e-13)
    got = wrap(secant.vmap(secant.grad(_scan_list_carry)))(X43)
    np.testing.assert_allclose(np.asarray(got), [_central(_scan_list_carry_np, x) for x in X43],
                               rtol=1e-7, atol=1e-8)


def test_list_rebuilt_in_a_loop_under_jit_vmap_grad_and_jacfwd_grad(x64):
    rng = np.random.default_rng(1)
    ws = [rng.normal(size=(4, 3)), rng.normal(size=(4, 3))]    # 4 examples of [a, b]
    got = secant.jit(secant.vmap(secant.grad(_list_rebuilt_at_x)))(ws)
    for k in range(4):
        for j in range(2):
            def f(v, k=k, j=j):
                items = [ws[0][k], ws[1][k]]
                items[j] = v
                return _list_rebuilt_np(items, X43)
            np.testing.assert_allclose(np.asarray(got[j][k]), _central(f, ws[j][k]),
                                       rtol=1e-6, atol=1e-7)
    b = ws[1][0]
    hess = secant.jit(secant.jacfwd(secant.grad(_list_rebuilt_at_x)))([ws[0][0], b])[1][1]
    grad_np = lambda v: _central(lambda u: _list_rebuilt_np([ws[0][0], u], X43), v, 1e-5)
    want = np.array([_central(lambda v, i=i: grad_np(v)[i], b, 1e-4) for i in range(3)])
    np.testing.assert_allclose(np.asarray(hess), want, rtol=1e-5, atol=1e-5)


# batch15v: an int item of a batched list of (int, array) pairs read as a slice bound: the
# list is batched as a whole (its ints broadcast and noted, note_broadcast_int); the bound
# reads the int back (example_scalar), as JAX keeps it a Python int
def _zipped_bounds(x):
    parts = [x[:2], x[2:4]]
    starts = [0, 2]
    items = list(zip(starts, parts))
    out = 0.0
    for lo, p in items:
        out = out + snp.sum(snp.sin(x[lo:lo + 2]) * p)
    return out


def _zipped_bounds_np(x):
    return sum(np.sum(np.sin(x[lo:lo + 2]) * x[lo:lo + 2]) for lo in (0, 2))


X4 = np.random.default_rng(3).normal(size=(3, 4))


@pytest.mark.parametrize("how", ["vmap", "jit_vmap", "vmap_vmap"])
def test_int_items_of_a_batched_list_as_slice_bounds(x64, how):
    if how == "vmap_vmap":
        xs = np.stack([X4, 0.5 * X4[::-1]])
        got = secant.vmap(secant.vmap(_zipped_bounds))(xs)
        want = [[_zipped_bounds_np(x) for x in b] for b in xs]
    else:
        fn = secant.vmap(_zipped_bounds)
        got = (secant.jit(fn) if how == "jit_vmap" else fn)(X4)
        want = [_zipped_bounds_np(x) for x in X4]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)


def test_int_items_of_a_batched_list_as_slice_bounds_under_derivatives(x64):
    """the reverse pass's `index_exp[lo:lo + 2]` and hessian's tangent `x_dot[:, lo:lo + 2]`
    (a statement kept as written: no vmap batches the basis) read the int back too"""
    got = secant.vmap(secant.grad(_zipped_bounds))(X4)
    np.testing.assert_allclose(np.asarray(got), [_central(_zipped_bounds_np, x) for x in X4],
                               rtol=1e-7, atol=1e-8)
    got = secant.vmap(secant.hessian(_zipped_bounds))(X4)
    want = [np.diag(2 * np.cos(x) - x * np.sin(x)) for x in X4]    # d2/dx2 x sin x
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
    xs = np.stack([X4, X4[::-1] * 0.5])
    got = secant.vmap(secant.vmap(secant.grad(_zipped_bounds)))(xs)
    np.testing.assert_allclose(np.asarray(got), np.cos(xs) * xs + np.sin(xs), rtol=1e-13)
    got = secant.grad(lambda xs: snp.sum(secant.vmap(_zipped_bounds)(xs)))(X4)
    np.testing.assert_allclose(np.asarray(got), _central(
        lambda xs: sum(_zipped_bounds_np(x) for x in xs), X4), rtol=1e-7, atol=1e-8)


def _argmax_bound(x):
    lo = snp.argmax(x)
    return snp.sum(x[lo:lo + 2])


def test_a_slice_bound_per_example_is_still_refused():
    """a bound that differs per example (no noted int to read back) is refused, as JAX's"""
    with pytest.raises(secant.SecantError, match="slice bounds"):
        secant.vmap(_argmax_bound)(X4)


# batch15v: the cotangent of a dict merge's replaced key (unmerge's zeros, of x's leaf) under
# two vmaps: its batching rule broadcasts x (and g) where no vmap batches it, so the zeros have
# the batch axis every leaf of the batched result has (a scalar leaf's cotangent kept only the
# outer vmap's axis: ShapeError in jacrev's rows, deep15r dm_or_operator vmap_hessian)
_DEFAULTS = {"scale": 1.5, "shift": -0.2}


def _merged(params, x):
    p = _DEFAULTS | params
    for k in sorted(p):
        if k != "w":
            p |= {k: p[k] * 1.1}
    return snp.sum(snp.sin(x @ p["w"]) * p["scale"]) + p["shift"] ** 2


def _merged_hessian_np(w, scale, x):
    """d2/d(w, scale)2 of sum(sin(x @ w)) * 1.1 scale + const, in closed form"""
    s, c = np.sin(x @ w), np.cos(x @ w)
    return {"w": {"w": -1.1 * scale * (x.T * s) @ x, "scale": 1.1 * x.T @ c},
            "scale": {"w": 1.1 * x.T @ c, "scale": 0.0}}


XM = np.random.default_rng(4).normal(size=(4, 3))
PM = {"w": np.random.default_rng(5).normal(size=(3, 3)), "scale": np.array([0.7, -0.4, 1.2])}


def test_vmap_of_hessian_through_a_dict_merge_in_a_loop(x64):
    got = secant.vmap(secant.hessian(lambda p: _merged(p, XM)))(PM)
    for i in range(3):
        want = _merged_hessian_np(PM["w"][i], PM["scale"][i], XM)
        for a in want:
            for b in want[a]:
                np.testing.assert_allclose(np.asarray(got[a][b][i]), want[a][b], rtol=1e-12,
                                           atol=1e-14)
    # and the first derivative under vmap of jacrev against central differences
    rows = secant.vmap(secant.jacrev(lambda p: _merged(p, XM)))(PM)
    for i in range(3):
        w, scale = PM["w"][i], PM["scale"][i]
        np.testing.assert_allclose(np.asarray(rows["w"][i]),
                                   _central(lambda v, s=scale: _merged_np(v, s), w), rtol=1e-7)
        np.testing.assert_allclose(float(rows["scale"][i]), (_merged_np(w, scale + 1e-6) -
                                   _merged_np(w, scale - 1e-6)) / 2e-6, rtol=1e-7)


def _merged_np(w, scale):
    return np.sum(np.sin(XM @ w)) * 1.1 * scale + 0.22 ** 2
