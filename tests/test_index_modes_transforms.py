"""`.at[...]` with `mode=` (and `fill_value=`) under grad, jvp, vmap, jit and their compositions:
the op carries the mode (ad/index_modes.py), so the rules read the cotangent back where the
index read or landed. Derivatives against float64 finite differences, vmap against a loop, jit
against eager; the rules' own clamping (`.add(g, mode="clip")`) against NumPy's reading of an
out-of-range index."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

N = 5
I = np.array([0, 7, -1, -9, 2])         # in range, past the end, from the end, before the start
W = np.array([1.0, -2.0, 0.5, 3.0, 1.5])


def _clamped(i, n):
    """A read's index: negatives count from the end, then clamp into the axis."""
    i = i + n if i < 0 else i
    return min(max(i, 0), n - 1)


def _in_range(i, n):
    return -n <= i < n


# --- the rules' clamped scatter is where a read reads ---------------------------------------------
@pytest.mark.parametrize("jit", [False, True])
def test_clip_scatter_adds_where_a_read_reads(jit):
    g = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    want = np.zeros(N)
    np.add.at(want, [_clamped(int(i), N) for i in I], g)

    def back(g, i):
        return snp.zeros(N).at[i].add(g, mode="clip")
    f = secant.jit(back) if jit else back
    np.testing.assert_array_equal(np.asarray(f(g, I)), want)
    x = np.arange(N) * 10.0
    read = secant.jit(lambda x, i: x[i]) if jit else (lambda x, i: snp.asarray(x)[i])
    np.testing.assert_array_equal(np.asarray(read(x, I)), x[[_clamped(int(i), N) for i in I]])
    for i in (7, -9, -1, 3):          # static ints: the read and the clamped scatter agree
        np.testing.assert_array_equal(np.asarray(snp.zeros(N).at[i].add(1.0, mode="clip")),
                                      np.eye(N)[_clamped(i, N)])
        assert float(snp.asarray(x)[i]) == x[_clamped(i, N)]


# --- user functions with modes -------------------------------------------------------------------
def fill_read(x, i):
    return snp.sum(snp.sin(x.at[i].get(mode="fill", fill_value=0.25)) * W)


def clip_read(x, i):
    return snp.sum(snp.sin(x.at[i].get(mode="clip")) * W)


def drop_set(x, v, i):
    return snp.sum(snp.cos(x.at[i].set(v * v, mode="drop")) * W)


def clip_add(x, v, i):
    return snp.sum(snp.sin(x.at[i].add(v * x[1], mode="clip")) * W)


def fill_read_numpy(x, i):
    got = np.array([x[int(k)] if _in_range(int(k), N) else 0.25 for k in i])
    return np.sum(np.sin(got) * W)


def clip_read_numpy(x, i):
    return np.sum(np.sin(x[[_clamped(int(k), N) for k in i]]) * W)


def drop_set_numpy(x, v, i):
    y = np.array(x, np.float64)
    for k, vk in zip(i, v):
        if _in_range(int(k), N):
            y[int(k)] = vk * vk
    return np.sum(np.cos(y) * W)


def clip_add_numpy(x, v, i):
    y = np.array(x, np.float64)
    for k, vk in zip(i, v):
        y[_clamped(int(k), N)] += vk * x[1]
    return np.sum(np.sin(y) * W)


CASES = [(fill_read, fill_read_numpy, 1), (clip_read, clip_read_numpy, 1),
         (drop_set, drop_set_numpy, 2), (clip_add, clip_add_numpy, 2)]
IDS = ["fill_read", "clip_read", "drop_set", "clip_add"]
RNG = np.random.default_rng(18)
XS = RNG.uniform(-1.0, 1.0, (3, N))
VS = RNG.uniform(0.5, 1.5, (3, N))
IS = np.array([I, [4, -6, 1, 5, -2], [9, 3, -5, -6, 1]])    # (no two kept sets collide)


def _args(k, nargs):
    return (XS[k], VS[k])[:nargs] + (IS[k],)


def _fd(f, args, wrt, eps=1e-6):
    out = []
    for j in wrt:
        a = np.asarray(args[j], np.float64)
        g = np.zeros_like(a)
        for p in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[p] = eps
            hi, lo = list(args), list(args)
            hi[j], lo[j] = a + e, a - e
            g[p] = (f(*hi) - f(*lo)) / (2 * eps)
        out.append(g)
    return out


@pytest.mark.parametrize("f, ref, nargs", CASES, ids=IDS)
def test_values_eager_and_jit(f, ref, nargs, x64):
    for k in range(3):
        args = _args(k, nargs)
        want = ref(*args)
        np.testing.assert_allclose(float(f(*map(snp.asarray, args))), want, rtol=1e-12)
        np.testing.assert_allclose(float(secant.jit(f)(*args)), want, rtol=1e-12)


@pytest.mark.parametrize("f, ref, nargs", CASES, ids=IDS)
def test_grad_and_jvp_against_finite_differences(f, ref, nargs, x64):
    wrt = tuple(range(nargs))
    for k in range(3):
        args = _args(k, nargs)
        want = _fd(ref, args, wrt)
        got = secant.grad(f, argnums=wrt)(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-8)
        jitted = secant.jit(secant.grad(f, argnums=wrt))(*args)
        for g, w in zip(jitted, got):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-14)
        tangents = tuple(RNG.uniform(-1, 1, N) for _ in wrt)
        _, dot = secant.jvp(lambda *a: f(*a, args[-1]), args[:-1], tangents)
        np.testing.assert_allclose(float(dot), sum(np.sum(w * t) for w, t in zip(want, tangents)),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, ref, nargs", CASES, ids=IDS)
@pytest.mark.parametrize("batched", ["x", "i", "all"])
def test_vmap_against_a_loop(f, ref, nargs, batched, x64):
    axes = tuple(0 if batched == "all" or (batched == "x" and j == 0) or
                 (batched == "i" and j == nargs) else None for j in range(nargs + 1))
    full = (XS, VS)[:nargs] + (IS,)
    args = tuple(a if ax == 0 else a[0] for a, ax in zip(full, axes))

    def pick(k):
        return tuple(a[k] if ax == 0 else a for a, ax in zip(args, axes))
    got = secant.vmap(f, in_axes=axes)(*args)
    np.testing.assert_allclose(np.asarray(got), [ref(*pick(k)) for k in range(3)], rtol=1e-12)
    # vmap of grad: each example's gradient, as a loop of grads gives it
    gx = secant.vmap(secant.grad(f), in_axes=axes)(*args)
    want = np.stack([_fd(ref, pick(k), (0,))[0] for k in range(3)])
    np.testing.assert_allclose(np.asarray(gx), want, rtol=1e-6, atol=1e-8)
    # grad of the vmapped sum, under jit
    wrt = tuple(j for j in range(nargs) if axes[j] == 0) or (0,)

    def total(*a):
        return snp.sum(secant.vmap(f, in_axes=axes)(*a))
    got = secant.jit(secant.grad(total, argnums=wrt))(*args)
    for j, g in zip(wrt, got):
        if axes[j] == 0:
            w = np.stack([_fd(ref, pick(k), (j,))[0] for k in range(3)])
        else:
            w = sum(_fd(ref, pick(k), (j,))[0] for k in range(3))
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-8)


def test_batched_update_values_and_second_order(x64):
    """vmap over the values alone, and the Hessian-vector product of an update with mode."""
    x = XS[0]
    got = secant.vmap(lambda v: drop_set(x, v, I))(VS)
    np.testing.assert_allclose(np.asarray(got), [drop_set_numpy(x, v, I) for v in VS],
                               rtol=1e-12)
    g = secant.grad(clip_add, argnums=0)
    v = RNG.uniform(-1, 1, N)
    _, hv = secant.jvp(lambda x: g(x, VS[0], I), (x,), (v,))
    eps = 1e-5
    want = (np.asarray(g(x + eps * v, VS[0], I)) - np.asarray(g(x - eps * v, VS[0], I))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(hv), want, rtol=1e-5, atol=1e-7)


def test_a_mode_inside_a_lax_loop(x64):
    def f(x, i):
        def body(k, acc):
            return acc + x.at[i + k].get(mode="fill", fill_value=0.0) ** 2
        return snp.sum(lax.fori_loop(0, 3, body, snp.zeros(3)))
    i = np.array([1, 3, 4])

    def ref(x, i):
        return sum(x[int(j) + k] ** 2 if int(j) + k < N else 0.0 for k in range(3) for j in i)
    x = XS[1]
    np.testing.assert_allclose(float(f(snp.asarray(x), i)), ref(x, i), rtol=1e-12)
    np.testing.assert_allclose(float(secant.jit(f)(x, i)), ref(x, i), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x, i)), _fd(ref, (x, i), (0,))[0],
                               rtol=1e-6, atol=1e-8)


# --- the generated code reads as JAX code ---------------------------------------------------------
def test_generated_rules_read_like_jax():
    text = secant.source(secant.grad(fill_read))
    assert "snp.zeros_like(x).at[i].add(x_item_bar)" in text    # a filled read: dropped there
    assert "at[i].get(mode='fill', fill_value=0.25)" in text
    text = secant.source(secant.grad(clip_read))
    assert 'snp.zeros_like(x).at[i].add(x_item_bar, mode="clip")' in text
    text = secant.source(secant.grad(drop_set, argnums=(0, 1)))
    assert ".at[i].set(0, mode='drop')" in text
    assert '.at[i].get(mode="fill", fill_value=0)' in text
    text = secant.source(secant.grad(clip_add, argnums=1))
    assert "[i]" in text and "get(mode=" not in text.split("# Grad of")[-1]
    text = secant.source(secant.grad(lambda x: snp.sum(x[1:3] ** 2)))
    assert "snp.zeros_like(x).at[1:3].add(" in text and "mode=" not in text


def test_min_max_with_clip_mode_is_refused_under_grad():
    def f(x, v):
        return snp.sum(x.at[np.array([0, 9])].max(v, mode="clip"))
    with pytest.raises(secant.SecantError, match="mode='clip'"):
        secant.grad(f)(np.ones(3), np.ones(2))


# --- vmap of grad through take_along_axis (the rule's index helper is read by vmap) -------
def _sorted_weighted(x):
    idx = snp.argsort(x, axis=1)
    return snp.sum(snp.take_along_axis(x, idx, axis=1) ** 2 * snp.arange(1.0, 4.0))


def _sorted_weighted_numpy(x):
    return np.sum(np.take_along_axis(x, np.argsort(x, axis=1), axis=1) ** 2 * np.arange(1.0, 4.0))


@pytest.mark.parametrize("mode", ["wrap", "clip", "fill"])
def test_vmap_of_grad_through_take_with_batched_indices(mode, x64):
    xs = RNG.normal(size=(3, 4, 3))
    got = secant.vmap(secant.grad(_sorted_weighted))(xs)
    want = np.stack([_fd(_sorted_weighted_numpy, (x,), (0,))[0] for x in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
    idx = np.array([[0, 6, -1], [2, -8, 3]])        # per example; out of range for 4

    def f(x, i):
        return snp.sum(snp.sin(snp.take_along_axis(x, i, axis=0, mode=mode)) * snp.arange(1.0, 4.0))

    def ref(x, i):
        n = x.size
        i = np.asarray(i)
        if mode == "wrap":
            v = np.sin(x[np.mod(i, n)])
        elif mode == "clip":
            v = np.sin(x[np.clip(i, 0, n - 1)])
        else:
            j = np.where(i < 0, i + n, i)
            v = np.where((j >= 0) & (j < n), np.sin(x[np.clip(j, 0, n - 1)]), np.nan)
            v = np.where(np.isnan(v), 0.0, v)       # (the fill is a constant: no derivative)
        return np.sum(v * np.arange(1.0, 4.0))
    x2 = RNG.normal(size=(2, 4))
    got = secant.vmap(secant.grad(f))(x2, idx)
    want = np.stack([_fd(ref, (x, i), (0,))[0] for x, i in zip(x2, idx)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)


# --- vmap of m[()] (an empty tuple index) on a 0-d loop carry, and written-out tuple indices --
def test_vmap_of_an_empty_tuple_index_in_a_while_loop(x64):
    def g(x):
        def cond(c):
            return c[1] < 3

        def body(c):
            m, k = c
            return (m * 2.0 + m[()], k + 1)
        m, _ = lax.while_loop(cond, body, (x, 0))
        return m[()]
    xs = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(xs)), [float(g(snp.asarray(x)))
                                                                 for x in xs], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(xs)), 27.0 * xs, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(g))(xs)), [27.0] * 3,
                               rtol=1e-12)
    ms = RNG.normal(size=(3, 2, 4))
    got = secant.vmap(lambda m: m[(1, 2)] + m[(0, slice(1, 3))].sum())(ms)
    np.testing.assert_allclose(np.asarray(got), [m[1, 2] + m[0, 1:3].sum() for m in ms],
                               rtol=1e-12)


def test_grad_of_take_along_axis_with_fewer_indices_than_the_axis(x64):
    """The rule's scatter shape keeps arr's length along the axis (it broadcast it with the
    indices' length before: a shape error)."""
    def f(x, i):
        return snp.sum(snp.sin(snp.take_along_axis(x, i, axis=0)) * snp.arange(1.0, 4.0))
    x, i = RNG.normal(size=4), np.array([0, 2, 2])
    want = np.zeros(4)
    np.add.at(want, i, np.cos(x[i]) * np.arange(1.0, 4.0))
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x, i)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x, i)), want, rtol=1e-12)
