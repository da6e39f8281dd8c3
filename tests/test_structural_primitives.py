"""Structural primitives: eager results against plain NumPy, jit results against eager, shape-rule
errors. Primitives are bound directly (no secant.numpy layer in between). The x64 fixture comes
from conftest.py."""
import os

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends import runtime
from secant.backends.primitives import structural as S
from secant.backends.tracer import Trace

HERE = os.path.basename(__file__)
I32 = np.dtype(np.int32)


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        values = rng.random(shape) < 0.5
    elif dt.kind in "iu":
        values = rng.integers(0 if dt.kind == "u" else -5, 6, size=shape)
    else:
        values = rng.standard_normal(shape)
    return np.asarray(values, dt)


def assert_same(actual, expected, exact=True):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if exact or expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected)
    else:
        rtol = 1e-12 if expected.dtype == np.float64 else 2e-5
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol)


def check(prim, args, params, expected, exact=True):
    """Eager result == `expected`; jit result == eager (to rounding when `exact` is False)."""
    eager = prim.bind(*[snp.asarray(a) for a in args], **params)
    jitted = secant.jit(lambda *xs: prim.bind(*xs, **params))(*args)
    if not prim.multiple_results:
        eager, jitted, expected = [eager], [jitted], [expected]
    for e, j, ref in zip(eager, jitted, expected):
        assert_same(e, ref, exact)
        assert_same(j, e, exact)


def rule_error(fn, *args):
    """fn(*args) must raise SecantTypeError pointing at this test file, eagerly and under jit."""
    with pytest.raises(secant.SecantTypeError, match=HERE):
        fn(*[snp.asarray(a) for a in args])
    with pytest.raises(secant.SecantTypeError, match=HERE):
        secant.jit(fn)(*args)


BASIC = [np.float32, np.int32, np.bool_]


# --- shape changes --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("in_shape, shape, bdims", [
    ((3,), (2, 3), (1,)), ((), (2, 2), ()), ((1, 3), (4, 3), (0, 1)), ((2, 1), (2, 3, 5), (0, 2)),
    ((2, 1), (2, 0), (0, 1)), ((4,), (4,), (0,))])
def test_broadcast_in_dim(dtype, in_shape, shape, bdims):
    x = sample(in_shape, dtype)
    kept = [1] * len(shape)
    for d, b in zip(in_shape, bdims):
        kept[b] = d
    check(S.broadcast_in_dim_p, [x], dict(shape=shape, broadcast_dimensions=bdims),
          np.broadcast_to(x.reshape(kept), shape))


@pytest.mark.parametrize("in_shape, shape, bdims", [
    ((3,), (2, 4), (1,)), ((3,), (3, 3), ()), ((2, 3), (3, 2), (1, 0)), ((3,), (3,), (1,))])
def test_broadcast_in_dim_errors(in_shape, shape, bdims):
    rule_error(lambda x: S.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bdims),
               np.zeros(in_shape, np.float32))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("in_shape, new", [
    ((3, 4), (2, 6)), ((), (1, 1)), ((1, 1), ()), ((2, 3, 4), (24,)), ((0, 3), (3, 0)),
    ((6,), (3, 2))])
def test_reshape(dtype, in_shape, new):
    x = sample(in_shape, dtype)
    check(S.reshape_p, [x], dict(new_sizes=new), x.reshape(new))


def test_reshape_errors():
    rule_error(lambda x: S.reshape_p.bind(x, new_sizes=(5,)), np.zeros((3, 4), np.float32))
    rule_error(lambda x: S.reshape_p.bind(x, new_sizes=(-1, 4)), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("in_shape, perm", [
    ((2, 3, 4), (2, 0, 1)), ((), ()), ((0, 3), (1, 0)), ((2, 3), (0, 1))])
def test_transpose(dtype, in_shape, perm):
    x = sample(in_shape, dtype)
    check(S.transpose_p, [x], dict(permutation=perm), np.transpose(x, perm))


def test_transpose_errors():
    rule_error(lambda x: S.transpose_p.bind(x, permutation=(0, 0)), np.zeros((2, 2), np.float32))
    rule_error(lambda x: S.transpose_p.bind(x, permutation=(0,)), np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("in_shape, dims", [
    ((3, 4), (0,)), ((3, 4), (0, 1)), ((3, 4), ()), ((0,), (0,)), ((), ())])
def test_rev(dtype, in_shape, dims):
    x = sample(in_shape, dtype)
    expected = x
    for d in dims:
        expected = expected[(slice(None),) * d + (slice(None, None, -1),)]
    check(S.rev_p, [x], dict(dimensions=dims), expected)


def test_rev_errors():
    rule_error(lambda x: S.rev_p.bind(x, dimensions=(2,)), np.zeros((2, 2), np.float32))
    rule_error(lambda x: S.rev_p.bind(x, dimensions=(1, 1)), np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("in_shape, dims, out_shape", [
    ((1, 3, 1), (0, 2), (3,)), ((1,), (0,), ()), ((2, 1, 0), (1,), (2, 0)), ((2, 3), (), (2, 3))])
def test_squeeze(dtype, in_shape, dims, out_shape):
    x = sample(in_shape, dtype)
    check(S.squeeze_p, [x], dict(dimensions=dims), x.reshape(out_shape))


def test_squeeze_errors():
    rule_error(lambda x: S.squeeze_p.bind(x, dimensions=(0,)), np.zeros((2, 1), np.float32))
    rule_error(lambda x: S.squeeze_p.bind(x, dimensions=(-1,)), np.zeros((2, 1), np.float32))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("in_shape, dims, out_shape", [
    ((3,), (0, 2), (1, 3, 1)), ((), (0,), (1,)), ((2, 0), (1,), (2, 1, 0)), ((2,), (), (2,))])
def test_expand_dims(dtype, in_shape, dims, out_shape):
    x = sample(in_shape, dtype)
    check(S.expand_dims_p, [x], dict(dimensions=dims), x.reshape(out_shape))


def test_expand_dims_errors():
    rule_error(lambda x: S.expand_dims_p.bind(x, dimensions=(3,)), np.zeros((2,), np.float32))


# --- reductions -----------------------------------------------------------------------------------
REDUCTIONS = {
    "reduce_sum": (S.reduce_sum_p, lambda x, a: np.add.reduce(x, a, dtype=x.dtype)),
    "reduce_prod": (S.reduce_prod_p, lambda x, a: np.multiply.reduce(x, a, dtype=x.dtype)),
    "reduce_max": (S.reduce_max_p,
                   lambda x, a: np.maximum.reduce(x, a, initial=S.lowest(x.dtype))),
    "reduce_min": (S.reduce_min_p,
                   lambda x, a: np.minimum.reduce(x, a, initial=S.highest(x.dtype))),
    "reduce_and": (S.reduce_and_p, lambda x, a: np.logical_and.reduce(x, a)),
    "reduce_or": (S.reduce_or_p, lambda x, a: np.logical_or.reduce(x, a)),
}
REDUCTION_DTYPES = {
    "reduce_sum": [np.float32, np.int32, np.uint8], "reduce_prod": [np.float32, np.int32],
    "reduce_max": [np.float32, np.int32, np.uint8, np.bool_],
    "reduce_min": [np.float32, np.int32, np.uint8, np.bool_],
    "reduce_and": [np.bool_], "reduce_or": [np.bool_],
}
REDUCTION_SHAPES = [((3, 4), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2)), ((3, 4), ()),
                    ((), ()), ((0, 3), (0,)), ((2, 0), (0, 1)), ((5,), (0,))]


@pytest.mark.parametrize("name, dtype", [(n, d) for n, ds in REDUCTION_DTYPES.items() for d in ds])
@pytest.mark.parametrize("shape, axes", REDUCTION_SHAPES)
def test_reductions(name, dtype, shape, axes):
    prim, ref = REDUCTIONS[name]
    x = sample(shape, dtype)
    check(prim, [x], dict(axes=axes), ref(x, axes), exact=False)


def test_reductions_empty_give_identity():
    x = np.zeros((0, 2), np.float32)
    assert np.asarray(S.reduce_max_p.bind(snp.asarray(x), axes=(0,))).tolist() == [-np.inf] * 2
    jitted = secant.jit(lambda v: S.reduce_min_p.bind(v, axes=(0,)))(x)
    assert np.asarray(jitted).tolist() == [np.inf] * 2


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "reduce_sum"])
def test_reductions_propagate_nan(name):
    prim, ref = REDUCTIONS[name]
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], np.float32)
    check(prim, [x], dict(axes=(1,)), ref(x, (1,)), exact=False)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_float64(x64, name):
    prim, ref = REDUCTIONS[name]
    x = sample((4, 5), np.bool_ if name in ("reduce_and", "reduce_or") else np.float64)
    check(prim, [x], dict(axes=(1,)), ref(x, (1,)), exact=False)


def test_reduction_keeps_weak_type():
    out = S.reduce_sum_p.bind(snp.asarray(2.0) + np.zeros(3, np.float32), axes=(0,))
    assert not out.weak_type
    weak = S.reduce_max_p.bind(snp.asarray(2.0), axes=())
    assert weak.weak_type


def test_reduction_errors():
    rule_error(lambda x: S.reduce_sum_p.bind(x, axes=(2,)), np.zeros((2, 2), np.float32))
    rule_error(lambda x: S.reduce_sum_p.bind(x, axes=(0, 0)), np.zeros((2, 2), np.float32))
    rule_error(lambda x: S.reduce_and_p.bind(x, axes=(0,)), np.zeros((2,), np.int32))
    rule_error(lambda x: S.reduce_sum_p.bind(x, axes=(0,)), np.zeros((2,), np.bool_))


# --- argmax / argmin ------------------------------------------------------------------------------
ARG = {"argmax": (S.argmax_p, np.argmax), "argmin": (S.argmin_p, np.argmin)}


@pytest.mark.parametrize("name", sorted(ARG))
@pytest.mark.parametrize("dtype", BASIC + [np.uint8])
@pytest.mark.parametrize("shape, axis", [((3, 4), 0), ((3, 4), 1), ((7,), 0), ((2, 3, 4), 1)])
def test_argmax_argmin(name, dtype, shape, axis):
    prim, ref = ARG[name]
    x = sample(shape, dtype)
    check(prim, [x], dict(axis=axis, index_dtype=I32), ref(x, axis).astype(np.int32))


@pytest.mark.parametrize("name", sorted(ARG))
@pytest.mark.parametrize("values", [
    [1.0, 7.0, 3.0, 7.0, -7.0, -7.0], [np.nan, 1.0, np.nan], [2.0, np.nan, 5.0, np.nan],
    [-np.inf, -np.inf], [np.inf, np.inf, 0.0], [-0.0, 0.0, -0.0]])
def test_argmax_argmin_first_occurrence_and_nan(name, values):
    prim, ref = ARG[name]
    x = np.array(values, np.float32)
    check(prim, [x], dict(axis=0, index_dtype=I32), np.int32(ref(x)))
    x2 = np.stack([x, x[::-1]], 1)          # the same along an inner axis
    check(prim, [x2], dict(axis=0, index_dtype=I32), ref(x2, 0).astype(np.int32))


def test_argmax_is_never_weak():
    out = S.argmax_p.bind(snp.asarray(np.array([1, 3, 2], np.int32)), axis=0, index_dtype=I32)
    assert not out.weak_type and out.dtype == np.int32


def test_argmax_errors():
    rule_error(lambda x: S.argmax_p.bind(x, axis=0, index_dtype=I32), np.zeros((0, 2), np.float32))
    rule_error(lambda x: S.argmin_p.bind(x, axis=2, index_dtype=I32), np.zeros((3, 2), np.float32))
    rule_error(lambda x: S.argmin_p.bind(x, axis=0, index_dtype=np.dtype(np.float32)),
               np.zeros((3, 2), np.float32))


# --- dot_general ----------------------------------------------------------------------------------
DOTS = [  # lhs shape, rhs shape, dimension_numbers, einsum spec
    ((2, 3), (3, 4), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((3,), (3,), (((0,), (0,)), ((), ())), "i,i->"),
    ((3,), (4,), (((), ()), ((), ())), "i,j->ij"),
    ((5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ((3, 5, 2), (2, 5), (((2,), (0,)), ((1,), (1,))), "ibj,jb->bi"),
    ((3, 4, 2), (2, 6, 3), (((0, 2), (2, 0)), ((), ())), "kij,jlk->il"),
    ((2, 0), (0, 3), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((4, 2, 3), (3, 4), (((2,), (0,)), ((0,), (1,))), "bij,jb->bi"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("lhs_shape, rhs_shape, dims, spec", DOTS)
def test_dot_general(dtype, lhs_shape, rhs_shape, dims, spec):
    lhs, rhs = sample(lhs_shape, dtype, 1), sample(rhs_shape, dtype, 2)
    expected = np.einsum(spec, lhs, rhs).astype(dtype)
    check(S.dot_general_p, [lhs, rhs], dict(dimension_numbers=dims), expected, exact=False)


def test_dot_general_float64(x64):
    lhs, rhs = sample((3, 4), np.float64), sample((4, 2), np.float64, 1)
    check(S.dot_general_p, [lhs, rhs], dict(dimension_numbers=(((1,), (0,)), ((), ()))), lhs @ rhs,
          exact=False)


def test_dot_general_preferred_element_type():
    lhs, rhs = sample((3, 4), np.int32), sample((4, 2), np.int32, 1)
    params = dict(dimension_numbers=(((1,), (0,)), ((), ())),
                  preferred_element_type=np.dtype(np.float32))
    check(S.dot_general_p, [lhs, rhs], params, (lhs @ rhs).astype(np.float32), exact=False)


def test_dot_general_errors():
    dims = (((1,), (0,)), ((), ()))
    f = lambda a, b: S.dot_general_p.bind(a, b, dimension_numbers=dims)  # noqa: E731
    rule_error(f, np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32))
    rule_error(f, np.zeros((2, 3), np.float32), np.zeros((3, 2), np.int32))
    batched = (((1,), (0,)), ((1,), (0,)))
    g = lambda a, b: S.dot_general_p.bind(a, b, dimension_numbers=batched)  # noqa: E731
    rule_error(g, np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))


# --- slicing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shape, start, limit, strides", [
    ((5, 6), (1, 0), (4, 6), (2, 3)), ((5, 6), (1, 2), (3, 5), None), ((), (), (), None),
    ((5,), (2,), (2,), (1,)), ((4, 3), (0, 0), (4, 3), None), ((7,), (1,), (7,), (4,))])
def test_slice(dtype, shape, start, limit, strides):
    x = sample(shape, dtype)
    steps = strides or (1,) * len(shape)
    expected = x[tuple(slice(s, l, st) for s, l, st in zip(start, limit, steps))]
    check(S.slice_p, [x], dict(start_indices=start, limit_indices=limit, strides=strides), expected)


def test_slice_errors():
    x = np.zeros((4, 3), np.float32)
    rule_error(lambda v: S.slice_p.bind(v, start_indices=(0, 0), limit_indices=(5, 3)), x)
    rule_error(lambda v: S.slice_p.bind(v, start_indices=(2, 0), limit_indices=(1, 3)), x)
    rule_error(lambda v: S.slice_p.bind(v, start_indices=(0,), limit_indices=(1,)), x)
    rule_error(lambda v: S.slice_p.bind(v, start_indices=(0, 0), limit_indices=(1, 1),
                                        strides=(0, 1)), x)


def _clamped(starts, shape, sizes):
    return [int(np.clip(s, 0, d - n)) for s, d, n in zip(starts, shape, sizes)]


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shape, starts, sizes", [
    ((5, 6), (1, 2), (2, 3)), ((5, 6), (-1, 10), (2, 3)), ((5, 6), (4, 4), (5, 0)),
    ((4,), (np.int8(3),), (4,)), ((), (), ())])
def test_dynamic_slice(dtype, shape, starts, sizes):
    x = sample(shape, dtype)
    lo = _clamped(starts, shape, sizes)
    expected = x[tuple(slice(s, s + n) for s, n in zip(lo, sizes))]
    idx = [s if isinstance(s, np.generic) else np.int32(s) for s in starts]
    check(S.dynamic_slice_p, [x, *idx], dict(slice_sizes=sizes), expected)


def test_dynamic_slice_mixed_index_types():
    x = sample((5, 6), np.float32)
    check(S.dynamic_slice_p, [x, np.int8(2), np.int32(3)], dict(slice_sizes=(2, 2)), x[2:4, 3:5])


def test_dynamic_slice_errors():
    x = np.zeros((4, 3), np.float32)
    rule_error(lambda v, i: S.dynamic_slice_p.bind(v, i, i, slice_sizes=(5, 1)), x, np.int32(0))
    rule_error(lambda v, i: S.dynamic_slice_p.bind(v, i, slice_sizes=(1, 1)), x, np.int32(0))
    rule_error(lambda v, i: S.dynamic_slice_p.bind(v, i, i, slice_sizes=(1, 1)), x,
               np.float32(0))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shape, update_shape, starts", [
    ((5, 6), (2, 3), (1, 2)), ((5, 6), (2, 3), (-3, 9)), ((5, 6), (5, 6), (1, 1)),
    ((5, 6), (0, 3), (2, 2)), ((), (), ())])
def test_dynamic_update_slice(dtype, shape, update_shape, starts):
    x, update = sample(shape, dtype), sample(update_shape, dtype, 7)
    expected = x.copy()
    lo = _clamped(starts, shape, update_shape)
    expected[tuple(slice(s, s + n) for s, n in zip(lo, update_shape))] = update
    check(S.dynamic_update_slice_p, [x, update, *map(np.int32, starts)], {}, expected)


def test_dynamic_update_slice_errors():
    f = lambda x, u, i: S.dynamic_update_slice_p.bind(x, u, i, i)  # noqa: E731
    rule_error(f, np.zeros((4, 3), np.float32), np.zeros((5, 1), np.float32), np.int32(0))
    rule_error(f, np.zeros((4, 3), np.float32), np.zeros((1, 1), np.int32), np.int32(0))


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shapes, dim", [
    (((2, 3), (2, 1), (2, 4)), 1), (((2, 3), (0, 3)), 0), (((3,),), 0), (((2,), (3,)), 0)])
def test_concatenate(dtype, shapes, dim):
    xs = [sample(s, dtype, i) for i, s in enumerate(shapes)]
    check(S.concatenate_p, xs, dict(dimension=dim), np.concatenate(xs, dim))


def test_concatenate_errors():
    f = lambda a, b: S.concatenate_p.bind(a, b, dimension=0)  # noqa: E731
    rule_error(f, np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))
    rule_error(f, np.zeros((2,), np.float32), np.zeros((2,), np.int32))
    rule_error(lambda a: S.concatenate_p.bind(a, dimension=0), np.float32(1))


def _pad_reference(x, value, config):
    """Element i of each axis lands at lo + i * (interior + 1); the rest is padding."""
    shape = [lo + hi + d + max(d - 1, 0) * it for d, (lo, hi, it) in zip(x.shape, config)]
    out = np.full(shape, value, x.dtype)
    src, dst = [], []
    for d, n, (lo, _, it) in zip(x.shape, shape, config):
        pos = lo + np.arange(d) * (it + 1)
        keep = (pos >= 0) & (pos < n)
        src.append(np.nonzero(keep)[0])
        dst.append(pos[keep])
    out[np.ix_(*dst)] = x[np.ix_(*src)]
    return out


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shape, config", [
    ((3, 4), ((1, 2, 0), (0, 0, 1))), ((3, 4), ((-1, 1, 0), (2, -2, 2))), ((5,), ((-4, 2, 0),)),
    ((0, 2), ((1, 1, 3), (0, 0, 0))), ((3,), ((-5, 0, 1),)), ((2,), ((0, 0, 0),))])
def test_pad(dtype, shape, config):
    x = sample(shape, dtype)
    value = np.array(sample((), dtype, 3), dtype)[()]
    check(S.pad_p, [x, value], dict(padding_config=config), _pad_reference(x, value, config))


def test_pad_0d():
    check(S.pad_p, [np.float32(2), np.float32(0)], dict(padding_config=()), np.float32(2))


def test_pad_errors():
    x = np.zeros((3,), np.float32)
    f = lambda v, p: S.pad_p.bind(v, p, padding_config=((-4, 0, 0),))  # noqa: E731
    rule_error(f, x, np.float32(0))
    g = lambda v, p: S.pad_p.bind(v, p, padding_config=((0, 0, 0),))  # noqa: E731
    rule_error(g, x, np.int32(0))
    h = lambda v, p: S.pad_p.bind(v, p, padding_config=((0, 0, -1),))  # noqa: E731
    rule_error(h, x, np.float32(0))


# --- iota -----------------------------------------------------------------------------------------
def _run_nullary(prim, **params):
    """Trace and compile a primitive with no operands (bind alone would run it eagerly)."""
    trace = Trace("nullary")
    out = trace.emit(prim, (), params)
    text, avals = trace.module([out])
    (buf,) = runtime.Executable(text, avals)([])
    return runtime.to_numpy(buf, avals[0].dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8])
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((2, 3), 1), ((2, 3), 0), ((0, 4), 1)])
def test_iota(dtype, shape, dim):
    params = dict(dtype=np.dtype(dtype), shape=shape, dimension=dim)
    steps = np.arange(shape[dim], dtype=dtype)
    expected = np.broadcast_to(steps.reshape([-1 if i == dim else 1 for i in range(len(shape))]),
                               shape)
    eager = S.iota_p.bind(**params)
    assert not eager.weak_type
    assert_same(eager, expected)
    assert_same(_run_nullary(S.iota_p, **params), expected)


def test_iota_errors():
    with pytest.raises(secant.SecantTypeError, match=HERE):
        S.iota_p.bind(dtype=I32, shape=(2, 3), dimension=2)
    with pytest.raises(secant.SecantTypeError, match=HERE):
        S.iota_p.bind(dtype=np.dtype(np.bool_), shape=(2,), dimension=0)


# --- cumulative reductions ------------------------------------------------------------------------
CUMULATIVE = {"cumsum": (S.cumsum_p, np.add), "cumprod": (S.cumprod_p, np.multiply),
              "cummax": (S.cummax_p, np.maximum), "cummin": (S.cummin_p, np.minimum)}


def _cumulative_reference(ufunc, x, axis, reverse):
    """Element i folds every element at or before i (at or after, in reverse) along `axis`."""
    n = x.shape[axis]
    if n == 0:
        return x
    parts = []
    for i in range(n):
        window = range(i, n) if reverse else range(i + 1)
        part = np.take(x, list(window), axis=axis)
        parts.append(ufunc.reduce(part, axis=axis, dtype=x.dtype))
    return np.stack(parts, axis=axis).astype(x.dtype)


@pytest.mark.parametrize("name, dtype", [(n, d) for n in sorted(CUMULATIVE)
                                         for d in [np.float32, np.int32]]
                         + [("cummax", np.bool_), ("cummin", np.bool_), ("cumsum", np.uint8)])
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((0, 3), 0),
                                         ((3, 1), 1), ((2, 0), 0)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative(name, dtype, shape, axis, reverse):
    prim, ufunc = CUMULATIVE[name]
    x = sample(shape, dtype)
    check(prim, [x], dict(axis=axis, reverse=reverse),
          _cumulative_reference(ufunc, x, axis, reverse), exact=False)


@pytest.mark.parametrize("name", sorted(CUMULATIVE))
def test_cumulative_float64(x64, name):
    prim, ufunc = CUMULATIVE[name]
    x = sample((3, 6), np.float64)
    check(prim, [x], dict(axis=1, reverse=True), _cumulative_reference(ufunc, x, 1, True),
          exact=False)


def test_cumulative_nan():
    x = np.array([1.0, np.nan, 3.0, -2.0], np.float32)
    for name, (prim, ufunc) in CUMULATIVE.items():
        check(prim, [x], dict(axis=0, reverse=False), _cumulative_reference(ufunc, x, 0, False))


def test_cumulative_errors():
    rule_error(lambda x: S.cumsum_p.bind(x, axis=1, reverse=False), np.zeros((3,), np.float32))
    rule_error(lambda x: S.cumsum_p.bind(x, axis=0, reverse=False), np.zeros((3,), np.bool_))
    rule_error(lambda x: S.cummax_p.bind(x, axis=0, reverse=False), np.float32(1))


# --- sort -----------------------------------------------------------------------------------------
def _sorted_by(order_keys, operands, axis):
    order = np.lexsort(order_keys[::-1], axis=axis)
    return [np.take_along_axis(o, order, axis=axis) for o in operands]


@pytest.mark.parametrize("dtype", BASIC + [np.uint8])
@pytest.mark.parametrize("shape, dim", [((9,), 0), ((4, 5), 0), ((4, 5), 1), ((0, 3), 0),
                                        ((3, 0), 1)])
def test_sort_one_key_with_payload(dtype, shape, dim):
    keys = sample(shape, dtype)
    payload = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    params = dict(dimension=dim, is_stable=True, num_keys=1)
    check(S.sort_p, [keys, payload], params, _sorted_by([keys], [keys, payload], dim))


def test_sort_nan_last_and_signed_zeros():
    keys = np.array([3.0, np.nan, 1.0, -0.0, 0.0, 2.0, -np.nan, np.inf, -np.inf, 0.0, -0.0],
                    np.float32)
    payload = np.arange(keys.size, dtype=np.int32)
    params = dict(dimension=0, is_stable=True, num_keys=1)
    expected = _sorted_by([keys], [keys, payload], 0)
    check(S.sort_p, [keys, payload], params, expected)
    assert np.isnan(np.asarray(expected[0])[-2:]).all()


def test_sort_single_operand_unstable():
    x = sample((6, 3), np.float32)
    check(S.sort_p, [x], dict(dimension=0, is_stable=False, num_keys=1), [np.sort(x, 0)])


@pytest.mark.parametrize("dim", [0, 1])
def test_sort_lexicographic(dim):
    k0 = sample((6, 6), np.int32) % 2
    k1 = sample((6, 6), np.float32, 1).round()
    k1[0, 0] = np.nan
    payload = sample((6, 6), np.float32, 2)
    params = dict(dimension=dim, is_stable=True, num_keys=2)
    check(S.sort_p, [k0, k1, payload], params, _sorted_by([k0, k1], [k0, k1, payload], dim))


def test_sort_float64(x64):
    x = sample((7,), np.float64)
    check(S.sort_p, [x], dict(dimension=0, is_stable=True, num_keys=1), [np.sort(x)])


def test_sort_errors():
    f = lambda a, b: S.sort_p.bind(a, b, dimension=0, is_stable=True, num_keys=1)  # noqa: E731
    rule_error(f, np.zeros((3,), np.float32), np.zeros((4,), np.float32))
    g = lambda a: S.sort_p.bind(a, dimension=0, is_stable=True, num_keys=2)  # noqa: E731
    rule_error(g, np.zeros((3,), np.float32))
    h = lambda a: S.sort_p.bind(a, dimension=0, is_stable=True, num_keys=1)  # noqa: E731
    rule_error(h, np.float32(1))
