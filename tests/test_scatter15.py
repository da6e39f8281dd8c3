"""Issue 15: lax.gather and lax.scatter / scatter_add / scatter_mul / scatter_min / scatter_max
under grad (any order), jvp, vmap (in_axes on operand, indices or updates), their compositions
and jit; x.at[i].set's cotangent with repeated indices, x.at[i].mul's third derivative with
several zero updates on one element, and errors from a traced function naming the user's line.
Checked against float64 central differences, JAX x64 values (hard-coded), Python loops and eager.
"""
import inspect
import math

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant import lax_scatter_sources as sources

SD, GD = lax.ScatterDimensionNumbers, lax.GatherDimensionNumbers


@pytest.fixture
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


def central(f, args, i, eps=1e-6):
    """d f / d args[i] by float64 central differences (f scalar)."""
    args = [np.asarray(a, np.float64) for a in args]
    g = np.zeros_like(args[i])
    for k in np.ndindex(args[i].shape):
        hi = [a.copy() for a in args]
        lo = [a.copy() for a in args]
        hi[i][k] += eps
        lo[i][k] -= eps
        g[k] = (float(f(*hi)) - float(f(*lo))) / (2 * eps)
    return g


# (operand shape, indices, dimension numbers, updates shape): repeated indices, windows, an
# out-of-range start (dropped), an index vector of two, operand batching dims
SCATTERS = {
    "repeated": ((5,), np.array([[0], [3], [0], [7], [-1]]),
                 SD(update_window_dims=(), inserted_window_dims=(0,),
                    scatter_dims_to_operand_dims=(0,)), (5,)),
    "rows": ((5, 4), np.array([[0], [3], [0]]),
             SD(update_window_dims=(1,), inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0,)), (3, 4)),
    "pairs": ((5, 4), np.array([[0, 1], [3, 2], [0, 3], [2, 1]]),
              SD(update_window_dims=(1,), inserted_window_dims=(0,),
                 scatter_dims_to_operand_dims=(0, 1)), (4, 2)),
    "windows": ((5, 4), np.array([[[0, 1], [3, 2]], [[1, 0], [1, 1]]]),
                SD(update_window_dims=(0, 3), inserted_window_dims=(),
                   scatter_dims_to_operand_dims=(1, 0)), (2, 2, 2, 2)),
    "batching": ((3, 5), np.array([[1], [4], [1]]),
                 SD(update_window_dims=(), inserted_window_dims=(1,),
                    scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                    scatter_indices_batching_dims=(0,)), (3,)),
}
GATHERS = {
    "points": ((5,), np.array([[0], [3], [4], [-1]]),
               GD(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,)), (1,)),
    "rows": ((5, 4), np.array([[0], [3], [9]]),
             GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4)),
    "windows": ((5, 4), np.array([[[0, 1], [3, 2]], [[4, 3], [1, 1]]]),
                GD(offset_dims=(0, 3), collapsed_slice_dims=(), start_index_map=(1, 0)),
                (2, 2)),
    "batching": ((3, 5), np.array([[1], [4], [0]]),
                 GD(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                    operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 1)),
}
KINDS = ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")


@pytest.mark.parametrize("case", sorted(SCATTERS))
@pytest.mark.parametrize("kind", KINDS)
def test_scatter_source_computes_the_primitive_values(kind, case):
    shape, ind, dn, ushape = SCATTERS[case]
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    u = rng.normal(size=ushape).astype(np.float32)
    want = np.asarray(getattr(lax, kind)(x, ind, u, dn))
    got = np.asarray(getattr(sources, kind)(snp.asarray(x), ind, u, dn))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(GATHERS))
def test_gather_source_computes_the_primitive_values(case):
    shape, ind, dn, sizes = GATHERS[case]
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    want = np.asarray(lax.gather(x, ind, dn, sizes))
    np.testing.assert_array_equal(np.asarray(sources.gather(snp.asarray(x), ind, dn, sizes)),
                                  want)


@pytest.mark.parametrize("case", sorted(SCATTERS))
@pytest.mark.parametrize("kind", KINDS)
def test_scatter_grad_matches_central_differences(x64, kind, case):
    shape, ind, dn, ushape = SCATTERS[case]
    rng = np.random.default_rng(hash((kind, case)) % 2**32)
    x, u, w = rng.normal(size=shape), rng.normal(size=ushape), rng.normal(size=shape)

    def f(x, u):
        return snp.sum(snp.sin(getattr(lax, kind)(x, ind, u, dn)) * w)
    want = central(f, [x, u], 0), central(f, [x, u], 1)
    for got in (secant.grad(f, argnums=(0, 1))(x, u),
                secant.jit(secant.grad(f, argnums=(0, 1)))(x, u)):
        np.testing.assert_allclose(np.asarray(got[0]), want[0], atol=1e-6)
        np.testing.assert_allclose(np.asarray(got[1]), want[1], atol=1e-6)
    dx, du = rng.normal(size=shape), rng.normal(size=ushape)      # forward mode
    _, tangent = secant.jvp(f, (x, u), (dx, du))
    np.testing.assert_allclose(float(tangent), np.sum(want[0] * dx) + np.sum(want[1] * du),
                               atol=1e-6)


@pytest.mark.parametrize("case", ["repeated", "windows"])
@pytest.mark.parametrize("kind", KINDS)
def test_scatter_second_order(x64, kind, case):
    """hessian against differences of grad; jacfwd(grad) against jacrev(grad)."""
    shape, ind, dn, ushape = SCATTERS[case]
    rng = np.random.default_rng(3)
    x, u = rng.normal(size=shape), rng.normal(size=ushape)

    def f(x, u):
        return snp.sum(snp.sin(getattr(lax, kind)(x, ind, u, dn)) ** 2)
    h = np.asarray(secant.hessian(f, argnums=1)(x, u)).reshape(u.size, u.size)
    g = secant.grad(f, argnums=1)
    want = np.stack([central(lambda x, u: g(x, u).ravel()[k], [x, u], 1).ravel()
                     for k in range(u.size)])
    np.testing.assert_allclose(h, want, atol=1e-5)
    fwd = secant.jacfwd(secant.grad(f, argnums=0), argnums=0)(x, u)
    rev = secant.jacrev(secant.grad(f, argnums=0), argnums=0)(x, u)
    np.testing.assert_allclose(np.asarray(fwd), np.asarray(rev), atol=1e-10)


@pytest.mark.parametrize("case", sorted(GATHERS))
def test_gather_grad_and_hessian(x64, case):
    shape, ind, dn, sizes = GATHERS[case]
    rng = np.random.default_rng(4)
    x = rng.normal(size=shape)

    def f(x):
        y = lax.gather(x, ind, dn, sizes)
        return snp.sum(snp.sin(y) * snp.arange(y.size).reshape(y.shape))
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), central(f, [x], 0), atol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)),
                               central(f, [x], 0), atol=1e-6)
    h = np.asarray(secant.hessian(f)(x)).reshape(x.size, x.size)
    g = secant.grad(f)
    want = np.stack([central(lambda x: g(x).ravel()[k], [x], 0).ravel() for k in range(x.size)])
    np.testing.assert_allclose(h, want, atol=1e-5)


def test_jax_x64_values(x64):
    """Ties of scatter_max / scatter_min share the cotangent equally (operand and updates),
    a repeated scatter's losing update gets none, a clamped gather's window goes back whole:
    values from JAX 0.4 with jax_enable_x64."""
    dn = SD(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [0], [1], [2]])
    x, u, w = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.5, 2.0, 3.0]), np.array([1., 10., 100.])
    jax_values = {"scatter_max": (321.0, [0.5, 5.0, 50.0], [0.5, 0.0, 5.0, 50.0]),
                  "scatter_min": (320.5, [0.0, 5.0, 50.0], [0.0, 1.0, 5.0, 50.0])}
    for kind, (value, gx, gu) in jax_values.items():
        def f(x, u, kind=kind):
            return snp.sum(w * getattr(lax, kind)(x, idx, u, dn))
        assert float(f(x, u)) == value
        got = secant.grad(f, argnums=(0, 1))(x, u)
        np.testing.assert_allclose(np.asarray(got[0]), gx, atol=1e-12)
        np.testing.assert_allclose(np.asarray(got[1]), gu, atol=1e-12)

    idx2, u2 = np.array([[0], [2], [0]]), np.array([0.3, 0.7, 1.1])

    def g(x, u):
        return snp.sum(w * snp.sin(lax.scatter(x, idx2, u, dn)))
    got = secant.grad(g, argnums=(0, 1))(x, u2)
    np.testing.assert_allclose(float(g(x, u2)), 74.40595035208736, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[0]), [0.0, -4.16146837, 0.0], atol=1e-8)
    np.testing.assert_allclose(np.asarray(got[1]), [0.0, 76.48421873, 0.45359612], atol=1e-8)

    def m(x, u):       # (JAX refuses the updates' derivative here: repeated indices)
        return snp.sum(w * snp.sin(lax.scatter_mul(x, idx2, u, dn)))
    got = secant.grad(m, argnums=(0, 1))(x, u2)
    np.testing.assert_allclose(np.asarray(got[0]), [0.31219397, -4.16146837, -35.33922732],
                               atol=1e-8)
    np.testing.assert_allclose(np.asarray(got[1]), central(m, [x, u2], 1), atol=1e-6)

    G = GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    X, gi = np.arange(12.0).reshape(4, 3) / 7, np.array([[0], [3], [5], [-2]])

    def h(X):
        return snp.sum(snp.sin(lax.gather(X, gi, G, (1, 3), mode="clip"))
                       * np.arange(12.0).reshape(4, 3))
    np.testing.assert_allclose(float(h(X)), 37.75572459383095, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.grad(h)(X)),
                               [[9.0, 10.8879459, 12.4729876], [0, 0, 0], [0, 0, 0],
                                [2.53112564, 1.55920487, -8.21917969e-03]], atol=1e-7)


DN_ROWS = SD(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
GD_ROWS = GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
B = 3
XB = np.random.default_rng(5).normal(size=(B, 5, 4)).astype(np.float32)
UB = np.random.default_rng(6).normal(size=(B, 3, 4)).astype(np.float32)
IB = np.array([[[0], [3], [0]], [[1], [1], [4]], [[2], [7], [2]]])


def _op(kind):
    if kind == "gather":
        return lambda x, ind, u: snp.sin(lax.gather(x, ind, GD_ROWS, (1, 4))) * u
    return lambda x, ind, u: snp.sin(getattr(lax, kind)(x, ind, u, DN_ROWS))


def _loop(fn, args, axes):
    outs = [fn(*[a[b] if ax == 0 else a for a, ax in zip(args, axes)]) for b in range(B)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


@pytest.mark.parametrize("axes", [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0)])
@pytest.mark.parametrize("kind", KINDS + ("gather",))
def test_vmap_and_vmap_of_grad_match_a_loop(kind, axes):
    f = _op(kind)
    args = [a if ax == 0 else a[0] for a, ax in zip((XB, IB, UB), axes)]
    np.testing.assert_allclose(np.asarray(secant.vmap(f, in_axes=axes)(*args)),
                               _loop(f, args, axes), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f, in_axes=axes))(*args)),
                               _loop(f, args, axes), rtol=1e-5, atol=1e-6)
    g = secant.grad(lambda x, ind, u: snp.sum(f(x, ind, u) ** 2), argnums=(0, 2))
    got = secant.vmap(g, in_axes=axes)(*args)
    for a, b in zip(got, _loop(g, args, axes)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS + ("gather",))
def test_vmap_of_vmap(kind):
    f = _op(kind)
    xx = np.stack([XB, XB + 1])
    got = secant.vmap(secant.vmap(f, in_axes=(0, 0, None)), in_axes=(0, None, None))(
        xx, IB, UB[0])
    want = np.stack([np.stack([np.asarray(f(xx[i, j], IB[j], UB[0])) for j in range(B)])
                     for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_issue_script():
    """The issue's calls: grad, jit(grad), vmap, hessian of scatter_add; grad and vmap of
    scatter_mul (each refused before)."""
    dn = SD(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    ind = np.array([[0], [2], [0]])
    x, u = np.arange(4.0), np.array([1.0, 2.0, 3.0])

    def f(x, u):
        return snp.sum(snp.sin(lax.scatter_add(x, ind, u, dn)))
    c4, c1 = math.cos(4.0), math.cos(1.0)
    for gx, gu in (secant.grad(f, argnums=(0, 1))(x, u),
                   secant.jit(secant.grad(f, argnums=(0, 1)))(x, u)):
        np.testing.assert_allclose(np.asarray(gx), [c4, c1, c4, math.cos(3.0)], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(gu), [c4, c4, c4], rtol=1e-6)
    v = secant.vmap(f, in_axes=(None, 0))(x, np.stack([u, 2 * u]))
    np.testing.assert_allclose(np.asarray(v), [float(f(x, u)), float(f(x, 2 * u))], rtol=1e-6)
    s4 = -math.sin(4.0)
    np.testing.assert_allclose(np.asarray(secant.hessian(f, argnums=1)(x, u)),
                               [[s4, 0, s4], [0, s4, 0], [s4, 0, s4]], rtol=1e-5)

    def g(x, u):
        return snp.sum(lax.scatter_mul(x, ind, u, dn) ** 2)
    gx, gu = secant.grad(g, argnums=(0, 1))(x + 1, u)
    np.testing.assert_allclose(np.asarray(gx), [18.0, 4.0, 24.0, 8.0])
    np.testing.assert_allclose(np.asarray(gu), [18.0, 36.0, 6.0])


def test_at_set_repeated_index_cotangent_goes_to_the_update_kept(x64):
    """x.at[idx].set(u) with idx [0, 2, 0]: u[2] is written last at 0, u[0] is overwritten and
    has no derivative (it had the element's cotangent too: -0.99 for 0)."""
    idx = np.array([0, 2, 0])
    w = np.arange(1.0, 5.0)

    def f(x, u):
        return snp.sum(snp.sin(snp.asarray(x).at[idx].set(u)) * w)
    x, u = np.arange(4.0), np.array([1.0, 2.0, 3.0])
    gx, gu = secant.grad(f, argnums=(0, 1))(x, u)
    np.testing.assert_allclose(np.asarray(gu), central(f, [x, u], 1), atol=1e-6)
    np.testing.assert_allclose(np.asarray(gu), [0.0, 3 * math.cos(2.0), math.cos(3.0)])
    np.testing.assert_allclose(np.asarray(gx), [0.0, 2 * math.cos(1.0), 0.0, 4 * math.cos(3.0)])
    # under vmap (the indices batched too) and jit
    us = np.stack([u, u + 1])
    got = secant.vmap(secant.grad(f, argnums=1), in_axes=(None, 0))(x, us)
    want = np.stack([np.asarray(secant.grad(f, argnums=1)(x, v)) for v in us])
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f, argnums=1))(x, u)),
                               [0.0, 3 * math.cos(2.0), math.cos(3.0)])


def test_at_mul_third_order_with_two_zero_updates_on_one_element(x64):
    """u[0] and u[2] are 0 and land on element 0 with u[3]: d3/du0 du2 du3 of
    sum(x.at[idx].mul(u)) is x[0] = 1.3 (it was 0 in two of its six orders)."""
    idx = np.array([0, 2, 0, 0])
    x = snp.array([1.3, 0.7, -0.4, 2.0])

    def f(u):
        return snp.sum(x.at[idx].mul(u))
    u = snp.array([0.0, 1.5, 0.0, 0.8])
    want = np.zeros((4, 4, 4))
    for p in ((0, 2, 3), (0, 3, 2), (2, 0, 3), (2, 3, 0), (3, 0, 2), (3, 2, 0)):
        want[p] = 1.3
    jf, jr = secant.jacfwd, secant.jacrev
    for t in (jf(jf(jf(f))), jr(jr(secant.grad(f))), jf(jr(secant.grad(f)))):
        np.testing.assert_allclose(np.asarray(t(u)), want, atol=1e-12)

    def g(u):           # through sin: against differences of the hessian
        return snp.sum(snp.sin(x.at[idx].mul(u)) * snp.array([1.0, 2.0, 3.0, 4.0]))
    h = secant.hessian(g)
    eps = 1e-5
    fd = np.stack([(np.asarray(h(u + eps * e)) - np.asarray(h(u - eps * e))) / (2 * eps)
                   for e in np.eye(4)], -1)
    np.testing.assert_allclose(np.asarray(jf(h)(u)), fd, atol=1e-7)


def test_error_in_a_traced_function_names_the_users_line():
    """A value through a module's function with no rule (math.gamma): the function is traced,
    and the error names this file and line, not the trace's generated line."""
    def f(x):
        y = snp.sin(x)
        return math.gamma(y)
    line = inspect.getsourcelines(f)[1] + 2
    with pytest.raises(secant.SecantError) as e:
        secant.grad(f)(1.0)
    assert f"{__file__}:{line}" in str(e.value) and "<secant" not in str(e.value)
    assert "math.gamma(y)" in str(e.value)


def test_modes_under_the_transforms_too():
    """grad and vmap read the sources, which follow lax's modes as the primitives' calls do: a
    filled gather (not the clamped one), a clipped scatter; a mode secant lacks is refused."""
    ind = np.array([[0], [5]])
    dn = SD(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))

    def f(x, mode="fill"):
        return snp.sum(lax.gather(x, ind, GD(offset_dims=(), collapsed_slice_dims=(0,),
                                             start_index_map=(0,)), (1,), mode=mode,
                                  fill_value=0.0))

    def g(x, mode="clip"):
        return snp.sum(lax.scatter_add(x, ind, x[:2], dn, mode=mode))
    xs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]])
    np.testing.assert_allclose(secant.grad(f)(xs[0]), [1, 0, 0])      # x[0] + 0 (filled)
    np.testing.assert_allclose(secant.vmap(f)(xs), xs[:, 0])
    np.testing.assert_allclose(secant.grad(g)(xs[0]), [2, 2, 1])      # 5 clipped to 2
    np.testing.assert_allclose(secant.vmap(g)(xs), xs.sum(1) + xs[:, 0] + xs[:, 1])
    for fn in (lambda x: f(x, "wrap"), lambda x: g(x, "wrap")):
        for run in (lambda: secant.grad(fn)(np.ones(3)),
                    lambda: secant.vmap(fn)(np.ones((2, 3)))):
            with pytest.raises(secant.SecantError, match="supports modes"):
                run()
