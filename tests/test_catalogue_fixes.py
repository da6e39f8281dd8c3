"""Fixes of error-catalogue cases (issue 16) that the catalogue itself does not pin down:
nested functions rebinding the enclosing function's locals (nonlocal), negative and out-of-range
axes under vmap, vjp cotangent checks, lax validation under every transform."""
import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp

HERE = __file__


def line_of(tag):
    with open(HERE) as f:
        for k, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# --- nonlocal ------------------------------------------------------------------------------------
def two_rebinds(x):
    z = x
    w = x + 1.0

    def update(a):
        nonlocal z, w
        if a > 0:
            z = z * a
        w = w * z
    update(3.0)
    update(2.0)
    return z + w


def test_nonlocal_rebinding_is_differentiated(x64):
    for x in (0.5, 2.0):
        assert_allclose(secant.grad(two_rebinds)(x), fd(two_rebinds, x), rtol=1e-6)
        assert_allclose(secant.jit(secant.grad(two_rebinds))(x), fd(two_rebinds, x), rtol=1e-6)
    xs = np.array([0.5, 2.0, -1.0])
    assert_allclose(secant.vmap(two_rebinds)(xs), [two_rebinds(x) for x in xs])
    assert_allclose(secant.vmap(secant.grad(two_rebinds))(xs), [fd(two_rebinds, x) for x in xs],
                    rtol=1e-6)


def rebinds_and_returns(x):
    z = x

    def double():
        nonlocal z
        z = z * 2.0
        return 1.0
    double()
    return z


def rebinds_stored(x):
    z = x

    def double():
        nonlocal z  # rebinds-and-returns
        z = z * 2.0
        return 1.0
    fns = [double]
    fns[0]()
    return z


def test_nonlocal_rebinding_that_returns_is_differentiated(x64):
    """(state15s) a nested def rebinding a local and returning a value, once refused, is
    rewritten to return both (transformer/nonlocals.py thread_rebound): d(2x)/dx = 2."""
    assert_allclose(secant.grad(rebinds_and_returns)(0.5), 2.0, rtol=1e-12)
    xs = np.array([0.5, 2.0, -1.0])
    assert_allclose(secant.vmap(rebinds_and_returns)(xs), 2.0 * xs, rtol=1e-12)


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_nonlocal_rebinding_not_rewritten_is_refused(transform):
    """A nested def rebinding a local that cannot be rewritten to return it (stored in a
    list): an error naming its nonlocal line, never a derivative that misses the rebinding."""
    with pytest.raises(secant.SecantError) as info:
        getattr(secant, transform)(rebinds_stored)(np.ones(2, np.float32)
                                                   if transform == "vmap" else 1.0)
    assert f"{HERE}:{line_of('rebinds-and-returns')}" in str(info.value)
    assert "nonlocal" in str(info.value)


# --- axes under vmap -----------------------------------------------------------------------------
def _axis_fns():
    y = np.arange(6, dtype=np.float32).reshape(2, 3) + 1.0
    return {
        "sum": lambda x, a: snp.sum(x, axis=a),
        "mean": lambda x, a: snp.mean(x, axis=a),
        "max": lambda x, a: snp.max(x, axis=a),
        "argmax": lambda x, a: snp.argmax(x, axis=a),
        "cumsum": lambda x, a: snp.cumsum(x, axis=a),
        "concatenate": lambda x, a: snp.concatenate([x, x * 2.0], axis=a),
        "concatenate_unbatched": lambda x, a: snp.concatenate([x, y], axis=a),
        "stack": lambda x, a: snp.stack([x, x * 2.0], axis=a),
        "expand_dims": lambda x, a: snp.expand_dims(x, a),
        "squeeze": lambda x, a: snp.squeeze(snp.expand_dims(x, 0), axis=a),
        "take": lambda x, a: snp.take(x, snp.array([1, 0]), axis=a),
        "flip": lambda x, a: snp.flip(x, axis=a),
        "moveaxis": lambda x, a: snp.moveaxis(x, a, 0),
        "swapaxes": lambda x, a: snp.swapaxes(x, a, 1),
        "sort": lambda x, a: snp.sort(x, axis=a),
        "transpose": lambda x, a: snp.transpose(x, (a, 1)),
    }


AXIS_FNS = _axis_fns()


def _literal(fn, axis):
    """fn with the axis written as a literal (how users write it, and what vmap's codegen reads)."""
    import types
    src = {"sum": "snp.sum(x, axis={a})", "mean": "snp.mean(x, axis={a})",
           "max": "snp.max(x, axis={a})", "argmax": "snp.argmax(x, axis={a})",
           "cumsum": "snp.cumsum(x, axis={a})",
           "concatenate": "snp.concatenate([x, x * 2.0], axis={a})",
           "concatenate_unbatched": "snp.concatenate([x, Y], axis={a})",
           "stack": "snp.stack([x, x * 2.0], axis={a})",
           "expand_dims": "snp.expand_dims(x, {a})",
           "squeeze": "snp.squeeze(snp.expand_dims(x, 0), axis={a})",
           "take": "snp.take(x, snp.array([1, 0]), axis={a})",
           "flip": "snp.flip(x, axis={a})",
           "moveaxis": "snp.moveaxis(x, {a}, 0)", "swapaxes": "snp.swapaxes(x, {a}, 1)",
           "sort": "snp.sort(x, axis={a})", "transpose": "snp.transpose(x, ({a}, 1))"}[fn]
    import linecache
    name = f"<axis sweep {fn} {axis}>"
    text = f"def f(x):\n    return {src.format(a=axis)}\n"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    scope = {"snp": snp, "Y": np.arange(6, dtype=np.float32).reshape(2, 3) + 1.0}
    exec(compile(text, name, "exec"), scope)
    f = scope["f"]
    assert isinstance(f, types.FunctionType)
    return f


@pytest.mark.parametrize("fn", sorted(AXIS_FNS))
@pytest.mark.parametrize("axis", [-4, -3, -2, -1, 1, 2, 3])
@pytest.mark.parametrize("how", ["literal", "argument"])
@pytest.mark.parametrize("jitted", [False, True])
def test_axes_under_vmap_match_a_loop_or_raise(fn, axis, how, jitted):
    """Each example is (2, 3): a negative axis counts from the end of the example, never into
    the batch axis; one out of range raises ValueError as the loop does."""
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3) - 5.0
    if how == "literal":
        f = _literal(fn, axis)
        g = secant.vmap(f)
    else:
        f = lambda x: AXIS_FNS[fn](x, axis)     # noqa: E731
        g = secant.vmap(f)
    if jitted:
        g = secant.jit(g)
    try:
        expected = np.stack([np.asarray(f(x)) for x in xs])
    except (ValueError, IndexError):
        with pytest.raises(ValueError) as info:
            g(xs)
        if how == "literal":        # at the user's line
            assert f"<axis sweep {fn} {axis}>:2" in str(info.value)
        return
    assert_allclose(np.asarray(g(xs)), expected)


# --- vjp's pullback checks its cotangent ---------------------------------------------------------
def test_vjp_pullback_checks_the_cotangent_under_every_transform():
    out, pullback = secant.vjp(lambda v: v * 2.0, snp.ones(3))
    with pytest.raises(ValueError) as info:
        pullback(snp.ones(3, dtype=snp.int32))  # int-cotangent
    assert f"{HERE}:{line_of('int-cotangent')}" in str(info.value)
    with pytest.raises(ValueError) as info:
        secant.vmap(pullback)(snp.ones((5, 4)))  # vmapped-cotangent
    assert f"{HERE}:{line_of('vmapped-cotangent')}" in str(info.value)
    with pytest.raises(ValueError) as info:
        secant.jit(pullback)(snp.ones(2))  # jitted-cotangent
    assert f"{HERE}:{line_of('jitted-cotangent')}" in str(info.value)
    with pytest.raises(TypeError) as info:
        pullback([snp.ones(3)])  # list-cotangent
    assert f"{HERE}:{line_of('list-cotangent')}" in str(info.value)
    cts = np.arange(15, dtype=np.float32).reshape(5, 3)
    assert_allclose(secant.vmap(pullback)(cts)[0], 2 * cts)
    assert_allclose(secant.vmap(secant.vmap(pullback))(cts[None])[0], 2 * cts[None])
    assert_allclose(secant.jit(pullback)(cts[0])[0], 2 * cts[0])
    assert_allclose(secant.grad(lambda c: snp.sum(pullback(c)[0] ** 2))(cts[1]), 8 * cts[1])
    # another float precision is the output's (as JAX casts it)
    assert pullback(np.ones(3, np.float64))[0].dtype == np.float32


def test_vjp_pullback_of_a_tuple_output_needs_a_tuple():
    out, pullback = secant.vjp(lambda v: (v, v * 3.0), 2.0)
    with pytest.raises(TypeError, match="structure"):
        pullback(1.0)
    assert_allclose(pullback((1.0, 2.0))[0], 7.0)


# --- fori_loop bounds, as JAX's: one dtype, floats allowed ----------------------------------------
def test_fori_loop_bounds_share_a_dtype_eagerly_and_under_jit():
    body = lambda i, c: c + i       # noqa: E731
    assert_allclose(secant.lax.fori_loop(0.0, 3.0, body, 0.0), 3.0)
    assert_allclose(secant.jit(lambda c: secant.lax.fori_loop(0.0, 3.0, body, c))(0.0), 3.0)
    assert_allclose(secant.jit(lambda c: secant.lax.fori_loop(0, snp.int32(3), body, c))(0.0),
                    3.0)
    with pytest.raises(TypeError, match="equal types"):
        secant.lax.fori_loop(0, 3.0, body, 0.0)
    with pytest.raises(TypeError, match="equal types"):
        secant.jit(lambda c: secant.lax.fori_loop(0, 3.0, body, c))(0.0)


# --- vmap's out_axes -----------------------------------------------------------------------------
def _outer(x):
    return x * snp.ones((2, 3))


@pytest.mark.parametrize("k", [0, 1, 2, -1, -3])
def test_out_axes_move_the_batch_axis_also_inside_another_vmap_and_grad(k):
    xs = np.arange(4.0, dtype=np.float32)
    loop = np.stack([np.asarray(_outer(x)) for x in xs])
    assert_allclose(secant.vmap(_outer, out_axes=k)(xs), np.moveaxis(loop, 0, k))
    X = np.arange(20.0, dtype=np.float32).reshape(5, 4)
    inner = np.stack([np.moveaxis(np.stack([np.asarray(_outer(x)) for x in row]), 0, k)
                      for row in X])
    assert_allclose(secant.vmap(secant.vmap(_outer, out_axes=k))(X), inner)
    assert_allclose(secant.jit(secant.vmap(secant.vmap(_outer, out_axes=k), out_axes=1))(X),
                    np.moveaxis(inner, 0, 1))
    w = np.moveaxis(np.arange(24.0, dtype=np.float32).reshape(4, 2, 3), 0, k)
    assert_allclose(secant.grad(lambda x: snp.sum(secant.vmap(_outer, out_axes=k)(x) * w))(xs),
                    np.moveaxis(w, k, 0).sum(axis=(1, 2)))


@pytest.mark.parametrize("k", [3, -4])
def test_out_axes_out_of_range_name_the_vmapped_call(k):
    with pytest.raises(ValueError, match="out_axes") as info:
        secant.vmap(_outer, out_axes=k)(np.ones(4, np.float32))  # out-axes-call
    assert f"{HERE}:{line_of('out-axes-call')}" in str(info.value)
