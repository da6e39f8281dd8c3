"""Gather/scatter primitives against a slow element-by-element reading of XLA's semantics, and
NumPy indexing (x[idx], x.at[idx], take, take_along_axis, nonzero) against NumPy, eagerly and
under jit."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends import dtypes
from secant.backends.errors import ConcretizationError, SecantTypeError
from secant.backends.primitives.indexing import (GatherDimensionNumbers, ScatterDimensionNumbers,
                                                 gather_p, scatter_add_p, scatter_max_p,
                                                 scatter_min_p, scatter_mul_p, scatter_p)


# --- the reference: XLA's gather and scatter, one element at a time ----------------------------
def ref_gather(operand, indices, dn, slice_sizes):
    rank = operand.ndim
    batch_shape = indices.shape[:-1]
    window = [d for d in range(rank)
              if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    out_rank = len(batch_shape) + len(window)
    batch_pos = [q for q in range(out_rank) if q not in dn.offset_dims]
    out_shape = [0] * out_rank
    for q, n in zip(batch_pos, batch_shape):
        out_shape[q] = n
    for q, d in zip(dn.offset_dims, window):
        out_shape[q] = slice_sizes[d]
    out = np.zeros(out_shape, operand.dtype)
    for out_index in np.ndindex(*out_shape):
        g = [out_index[q] for q in batch_pos]
        start = [0] * rank
        for k, d in enumerate(dn.start_index_map):
            i = int(indices[tuple(g) + (k,)])
            start[d] = min(max(i, 0), operand.shape[d] - slice_sizes[d])
        for od, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[od] = g[idim]
        for q, d in zip(dn.offset_dims, window):
            start[d] += out_index[q]
        out[out_index] = operand[tuple(start)]
    return out


def scatter_targets(operand_shape, indices, updates_shape, dn):
    """(update index, operand index or None when its window is dropped) for every update."""
    rank = len(operand_shape)
    scatter_dims = [d for d in range(len(updates_shape)) if d not in dn.update_window_dims]
    window = [d for d in range(rank)
              if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    window_size = {d: updates_shape[u] for d, u in zip(window, dn.update_window_dims)}
    for u_index in np.ndindex(*updates_shape):
        g = [u_index[d] for d in scatter_dims]
        start = [0] * rank
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start[d] = int(indices[tuple(g) + (k,)])
        for od, idim in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[od] = g[idim]
        if any(not 0 <= start[d] <= operand_shape[d] - window_size.get(d, 1) for d in range(rank)):
            yield u_index, None
            continue
        for d, u in zip(window, dn.update_window_dims):
            start[d] += u_index[u]
        yield u_index, tuple(start)


def ref_scatter(operand, indices, updates, dn, combine):
    out = operand.copy()
    for u_index, target in scatter_targets(operand.shape, indices, updates.shape, dn):
        if target is not None:
            out[target] = combine(out[target], updates[u_index])
    return out


COMBINE = {scatter_p: lambda old, new: new, scatter_add_p: lambda old, new: old + new,
           scatter_mul_p: lambda old, new: old * new, scatter_min_p: min, scatter_max_p: max}


# --- random cases ---------------------------------------------------------------------------------
def _dims_and_batching(rng):
    rank = int(rng.integers(0, 4))
    shape = tuple(int(s) for s in rng.integers(1, 5, rank))
    dims = [int(d) for d in rng.permutation(rank)]
    n_batching = int(rng.integers(0, min(rank, 2) + 1))
    batching = sorted(dims[:n_batching])
    rest = dims[n_batching:]
    dropped = sorted(d for d in rest if rng.random() < 0.4)
    index_map = tuple(int(d) for d in rng.permutation(rest) if rng.random() < 0.7)
    n_ibatch = n_batching + int(rng.integers(0, 3))
    ibatch_shape = [int(s) for s in rng.integers(1, 4, n_ibatch)]
    ibatching = [int(p) for p in rng.permutation(n_ibatch)[:n_batching]]
    for od, p in zip(batching, ibatching):
        ibatch_shape[p] = shape[od]
    indices = rng.integers(-2, max(shape, default=1) + 2, ibatch_shape + [len(index_map)])
    return shape, batching, dropped, index_map, ibatching, indices.astype(np.int32)


def gather_case(rng):
    shape, batching, collapsed, index_map, ibatching, indices = _dims_and_batching(rng)
    slice_sizes = tuple(1 if d in collapsed or d in batching else int(rng.integers(0, n + 1))
                        for d, n in enumerate(shape))
    n_window = len(shape) - len(collapsed) - len(batching)
    out_rank = indices.ndim - 1 + n_window
    offset_dims = tuple(sorted(int(q) for q in rng.choice(out_rank, n_window, replace=False)))
    dn = GatherDimensionNumbers(offset_dims, tuple(collapsed), index_map, tuple(batching),
                                tuple(ibatching))
    return shape, indices, dn, slice_sizes


def scatter_case(rng):
    shape, batching, inserted, index_map, ibatching, indices = _dims_and_batching(rng)
    window = [d for d in range(len(shape)) if d not in inserted and d not in batching]
    sizes = [int(rng.integers(1, shape[d] + 1)) for d in window]
    u_rank = indices.ndim - 1 + len(window)
    window_pos = sorted(int(q) for q in rng.choice(u_rank, len(window), replace=False))
    batch = iter(indices.shape[:-1])
    win = iter(sizes)
    u_shape = tuple(next(win) if q in window_pos else next(batch) for q in range(u_rank))
    dn = ScatterDimensionNumbers(tuple(window_pos), tuple(inserted), index_map, tuple(batching),
                                 tuple(ibatching))
    return shape, indices, u_shape, dn


DTYPES = [np.float32, np.int32, np.int8, dtypes.bfloat16, np.bool_]


def _values(rng, shape, dtype):
    return rng.integers(-3, 4, shape).astype(dtype)


@pytest.mark.parametrize("seed", range(24))
def test_gather_matches_reference(seed):
    rng = np.random.default_rng(seed)
    shape, indices, dn, sizes = gather_case(rng)
    operand = _values(rng, shape, DTYPES[seed % len(DTYPES)])
    expect = ref_gather(operand, indices, dn, sizes)
    eager = gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=sizes)
    jitted = secant.jit(lambda o, i: gather_p.bind(o, i, dimension_numbers=dn,
                                                   slice_sizes=sizes))(operand, indices)
    for got in (eager, jitted):
        assert got.dtype == operand.dtype and got.shape == expect.shape, (dn, sizes)
        np.testing.assert_array_equal(np.asarray(got), expect)


@pytest.mark.parametrize("seed", range(24))
def test_scatter_family_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    shape, indices, u_shape, dn = scatter_case(rng)
    dt = DTYPES[seed % len(DTYPES)]
    operand = _values(rng, shape, dt)
    updates = _values(rng, u_shape, dt)
    # for scatter (set) each update's value depends only on its target, so repeated indices agree
    set_updates = np.zeros(u_shape, dt)
    for u_index, target in scatter_targets(shape, indices, u_shape, dn):
        if target is not None:
            set_updates[u_index] = 1 + sum(target) % 3
    prims = [scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p]
    ups = [set_updates] + [updates] * 4

    def run_all(o, i, *us):
        return [p.bind(o, i, u, dimension_numbers=dn) for p, u in zip(prims, us)]

    jitted = secant.jit(run_all)(operand, indices, *ups)
    for p, u, got_jit in zip(prims, ups, jitted):
        expect = ref_scatter(operand, indices, u, dn, COMBINE[p])
        got = p.bind(operand, indices, u, dimension_numbers=dn)
        for g in (got, got_jit):
            assert g.dtype == operand.dtype, p
            np.testing.assert_array_equal(np.asarray(g), expect, err_msg=f"{p} {dn}")


def test_gather_clamps_and_scatter_drops_out_of_range_windows():
    t = np.arange(12, dtype=np.float32).reshape(4, 3)
    dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    sdn = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
    idx = np.array([[-1], [4], [9], [1]], np.int32)
    g = secant.jit(lambda t, i: gather_p.bind(t, i, dimension_numbers=dn, slice_sizes=(1, 3)))
    np.testing.assert_array_equal(np.asarray(g(t, idx)), t[[0, 3, 3, 1]])
    s = secant.jit(lambda t, i, u: scatter_add_p.bind(t, i, u, dimension_numbers=sdn))
    expect = t.copy()
    expect[1] += 1
    np.testing.assert_array_equal(np.asarray(s(t, idx, np.ones((4, 3), np.float32))), expect)
    # a 2-wide window starting at row 3 does not fit: all of it is dropped, none clipped
    sdn2 = ScatterDimensionNumbers(update_window_dims=(0, 1), scatter_dims_to_operand_dims=(0,))
    out = scatter_p.bind(t, np.array([3], np.int32), np.zeros((2, 3), np.float32),
                         dimension_numbers=sdn2)
    np.testing.assert_array_equal(np.asarray(out), t)


def test_gather_lowering_prints_batching_dims():
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                                operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    f = secant.jit(lambda o, i: gather_p.bind(o, i, dimension_numbers=dn, slice_sizes=(1, 1)))
    text = f.lower(np.zeros((2, 3), np.float32), np.zeros((2, 1), np.int32)).as_text()
    assert "operand_batching_dims = [0]" in text and "start_indices_batching_dims = [0]" in text
    assert "slice_sizes = array<i64: 1, 1>" in text


_F, _I = np.zeros((3, 4), np.float32), np.zeros((2, 1), np.int32)
_GDN = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_SDN = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                               scatter_dims_to_operand_dims=(0,))


@pytest.mark.parametrize("prim, args, params, message", [
    (gather_p, (_F, _I.astype(np.float32)), dict(dimension_numbers=_GDN, slice_sizes=(1, 4)),
     "indices must be integers"),
    (gather_p, (_F, np.zeros((2, 2), np.int32)), dict(dimension_numbers=_GDN, slice_sizes=(1, 4)),
     "index vector"),
    (gather_p, (_F, _I), dict(dimension_numbers=_GDN, slice_sizes=(1, 5)), "slice_sizes[1]"),
    (gather_p, (_F, _I), dict(dimension_numbers=_GDN._replace(offset_dims=()),
                              slice_sizes=(1, 4)), "offset_dims"),
    (gather_p, (_F, _I), dict(dimension_numbers=_GDN, slice_sizes=(1, np.int64(4))),
     "Python ints"),
    (gather_p, (_F, _I), dict(dimension_numbers=_GDN._replace(operand_batching_dims=(0,)),
                              slice_sizes=(1, 4)), "same length"),
    (scatter_add_p, (_F, _I, np.zeros((2, 4), np.int32)), dict(dimension_numbers=_SDN),
     "same dtype"),
    (scatter_p, (_F, _I, np.zeros((3, 4), np.float32)), dict(dimension_numbers=_SDN),
     "scatter dims"),
    (scatter_p, (_F, _I, np.zeros((2, 5), np.float32)), dict(dimension_numbers=_SDN), "larger"),
    (scatter_max_p, (np.zeros(3, np.complex64), _I, np.zeros(2, np.complex64)),
     dict(dimension_numbers=ScatterDimensionNumbers((), (0,), (0,))), "complex"),
])
def test_shape_rule_errors(prim, args, params, message):
    for run in (lambda: prim.bind(*args, **params),
                lambda: secant.jit(lambda *a: prim.bind(*a, **params))(*args)):
        with pytest.raises(SecantTypeError) as info:
            run()
        assert message in str(info.value) and "test_indexing.py" in str(info.value)


# --- x[idx] and x.at[idx] against NumPy -----------------------------------------------------------
class _Index:
    def __getitem__(self, idx):
        return idx


I = _Index()
A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

INDEXES = [
    I[1], I[-1], I[1, 2], I[1, -2, 3], I[()], I[...], I[:], I[1:], I[:-1], I[::2], I[::-1],
    I[::-2], I[2:0:-1], I[-1:, 1:4:2], I[5:], I[1:1], I[..., 0], I[..., ::-2], I[0, ..., 1],
    I[None], I[:, None], I[..., None], I[None, 1, None, :, -1], I[1, None],
    I[[0, 2]], I[[2, 0, 2]], I[[-1, 0]], I[[0, 2], 1], I[:, [1, 3]], I[:, [1, 3], 2],
    I[[0, 2], [1, 3]], I[[0, 2], :, [1, 3]], I[1, :, [1, 3]], I[:, 1, [1, 3]],
    I[[[0], [2]], [[1, 3]]], I[..., [4, 0, -1]], I[[0, 1], None, [1, 3]], I[1:, [[1, 3]], ::2],
    I[::2, [2], ::-1], I[np.array([[0, 1], [2, -3]])], I[np.int32(1)], I[:, np.array(2)],
    I[A[..., 0] > 20], I[A[:, :, 0] > 12, 1::2], I[1, A[1, :, 0] > 25], I[[True, False, True]],
    I[[]], I[snp.asarray([2, 0])], I[snp.asarray(A[:, 0, 0] > 0)],
]


def _ids(idx):
    return repr(idx).replace(" ", "")[:60]


def _updated(idx, vals):
    """NumPy's x[idx] = -1, np.add.at and np.maximum.at on copies of A."""
    set_ref, add_ref, max_ref = A.copy(), A.copy(), A.copy()
    set_ref[idx] = -1
    np.add.at(add_ref, idx, vals)
    np.maximum.at(max_ref, idx, vals + 30)
    return A[idx], set_ref, add_ref, max_ref, A[idx]


def _all_forms(x, idx, v):
    return x[idx], x.at[idx].set(-1), x.at[idx].add(v), x.at[idx].max(v + 30), x.at[idx].get()


def _values_for(idx):
    return np.random.default_rng(0).integers(-5, 5, A[idx].shape).astype(np.float32)


@pytest.mark.parametrize("idx", INDEXES, ids=_ids)
def test_getitem_and_at_match_numpy_eagerly(idx):
    vals = _values_for(idx)
    got = _all_forms(snp.asarray(A), idx, vals)
    for g, expect in zip(got, _updated(idx, vals)):
        assert g.shape == expect.shape and g.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(g), expect)


def test_getitem_and_at_match_numpy_under_jit():
    # one jit for every index form: one XLA compile instead of one per form keeps this fast
    vals = [_values_for(idx) for idx in INDEXES]
    got = secant.jit(lambda x, vs: [_all_forms(x, idx, v) for idx, v in zip(INDEXES, vs)])(A, vals)
    for idx, v, forms in zip(INDEXES, vals, got):
        for g, expect in zip(forms, _updated(idx, v)):
            assert g.shape == expect.shape, idx
            np.testing.assert_array_equal(np.asarray(g), expect, err_msg=repr(idx))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, dtypes.bfloat16, np.uint8])
def test_indexing_keeps_dtype(dtype):
    a = (np.arange(24).reshape(4, 6) % 3).astype(dtype)
    for idx in (I[1, ::2], I[[0, 3], 1:], I[::-1, [5, 0]]):
        for got in (snp.asarray(a)[idx], secant.jit(lambda x: x[idx])(a)):
            assert got.dtype == dtype
            np.testing.assert_array_equal(np.asarray(got), a[idx])
    ref = a.copy()
    ref[[0, 3], 1:] = 1
    got = secant.jit(lambda x: x.at[[0, 3], 1:].set(1))(a)
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.asarray(got), ref)


def test_at_add_mul_min_accumulate_duplicates():
    a = np.arange(5, dtype=np.float32) + 1
    idx = np.array([1, 1, -1, 3, 1])
    v = np.array([2, 3, 4, 5, 6], np.float32)
    refs = {}
    for name, ufunc in (("add", np.add), ("mul", np.multiply), ("min", np.minimum)):
        r = a.copy()
        ufunc.at(r, idx, v)
        refs[name] = r
    f = secant.jit(lambda x, i, v: (x.at[i].add(v), x.at[i].multiply(v), x.at[i].min(v)))
    for got in (f(a, idx, v), (snp.asarray(a).at[idx].add(v), snp.asarray(a).at[idx].mul(v),
                               snp.asarray(a).at[idx].min(v))):
        for g, name in zip(got, ("add", "mul", "min")):
            np.testing.assert_array_equal(np.asarray(g), refs[name])


def test_at_divide_power_and_value_casting():
    x = snp.asarray(np.arange(6, dtype=np.float32))
    np.testing.assert_allclose(np.asarray(x.at[[1, 1, 4]].divide(2.0)), [0, .25, 2, 3, 2, 5])
    np.testing.assert_allclose(np.asarray(x.at[2:4].power(2)), [0, 1, 4, 9, 4, 5])
    i = snp.asarray(np.arange(4, dtype=np.int32))
    got = i.at[1].set(7.9)            # cast to the array's dtype, as JAX does
    assert got.dtype == np.int32 and got.tolist() == [0, 7, 2, 3]
    got = i.at[:2].add(np.array([[1, 1]]))   # leading size-1 dims of the values are dropped
    assert got.tolist() == [1, 2, 2, 3]
    with pytest.raises(SecantTypeError, match="cannot broadcast"):
        i.at[:2].set(np.ones(3))


def test_traced_integer_indices():
    x = A

    @secant.jit
    def f(x, i, j):
        return x[i], x[i, 1:, j], x[:, j], x[i, ::2, j], x[1:, i, ::-2]

    for i, j in ((np.int32(1), np.array([0, -1, 3])), (np.int32(-1), np.array([[2], [-4]]))):
        got = f(x, i, j)
        for g, e in zip(got, (x[i], x[i, 1:, j], x[:, j], x[i, ::2, j], x[1:, i, ::-2])):
            np.testing.assert_array_equal(np.asarray(g), e)
    g = secant.jit(lambda x, i, v: x.at[i, 2].add(v))(x, np.array([0, 0, -1]), np.float32(1))
    expect = x.copy()
    np.add.at(expect, (np.array([0, 0, -1]), 2), 1)
    np.testing.assert_array_equal(np.asarray(g), expect)


def test_out_of_range_arrays_clamp_on_get_and_drop_on_update():
    x = snp.asarray(A)
    idx = np.array([7, -9])
    np.testing.assert_array_equal(np.asarray(x[idx]), A[[2, 0]])
    np.testing.assert_array_equal(np.asarray(secant.jit(lambda x, i: x[i])(A, idx)), A[[2, 0]])
    for got in (x.at[idx].set(0), secant.jit(lambda x, i: x.at[i].add(1))(A, idx)):
        np.testing.assert_array_equal(np.asarray(got), A)
    got = x.at[idx].set(0, mode="clip")
    ref = A.copy()
    ref[[2, 0]] = 0
    np.testing.assert_array_equal(np.asarray(got), ref)
    filled = x[0, 0].at[np.array([1, 5])].get(mode="fill", fill_value=-1)
    np.testing.assert_array_equal(np.asarray(filled), [1, -1])


def test_index_errors():
    x = snp.asarray(A)
    with pytest.raises(IndexError, match="out of bounds"):     # (an axis of size 0: no element)
        snp.zeros((0, 2))[0]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(TypeError, match="integers or booleans"):
        x[np.array([0.5])]
    with pytest.raises(TypeError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(ConcretizationError, match="boolean mask") as info:
        secant.jit(lambda x: x[x > 3])(A)
    assert "test_indexing.py" in str(info.value) and "snp.where" in str(info.value)


# --- take, take_along_axis, nonzero ---------------------------------------------------------------
def test_take():
    x = snp.asarray(A)
    idx = np.array([[0, 2], [-1, 2]])
    for axis in (None, 0, 1, -1):
        expect = np.take(A, idx, axis=axis)
        np.testing.assert_array_equal(np.asarray(snp.take(x, idx, axis=axis)), expect)
        got = secant.jit(lambda x, i: snp.take(x, i, axis=axis))(A, idx)
        np.testing.assert_array_equal(np.asarray(got), expect)
    oob = np.array([1, 9, -10])
    np.testing.assert_array_equal(np.asarray(snp.take(x, oob, axis=1, mode="clip")),
                                  np.take(A, oob, axis=1, mode="clip"))
    np.testing.assert_array_equal(np.asarray(snp.take(x, oob, axis=1, mode="wrap")),
                                  np.take(A, oob, axis=1, mode="wrap"))
    got = secant.jit(lambda x, i: snp.take(x, i, axis=2, fill_value=-7))(A, oob)
    expect = np.take(A, [1, 0, 0], axis=2)
    expect[..., 1:] = -7
    np.testing.assert_array_equal(np.asarray(got), expect)
    assert np.isnan(np.asarray(snp.take(x, [100]))).all()


def test_take_along_axis():
    rng = np.random.default_rng(1)
    for axis in (0, 1, 2, -1):
        shape = list(A.shape)
        shape[axis] = 3
        idx = rng.integers(0, A.shape[axis], shape)
        expect = np.take_along_axis(A, idx, axis)
        np.testing.assert_array_equal(np.asarray(snp.take_along_axis(snp.asarray(A), idx, axis)),
                                      expect)
        got = secant.jit(lambda x, i: snp.take_along_axis(x, i, axis))(A, idx)
        np.testing.assert_array_equal(np.asarray(got), expect)
    idx = np.argsort(-A, axis=1)[:, :1, :]        # broadcasting over a size-1 dim of indices
    np.testing.assert_array_equal(np.asarray(snp.take_along_axis(snp.asarray(A), idx, 1)),
                                  np.take_along_axis(A, idx, 1))
    np.testing.assert_array_equal(np.asarray(snp.take_along_axis(A, np.array([3, -1]), None)),
                                  np.take_along_axis(A, np.array([3, 59]), None))


def test_nonzero_family():
    m = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 5, 6]], np.float32)
    for got, expect in zip(snp.nonzero(m), np.nonzero(m)):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got), expect)
    np.testing.assert_array_equal(np.asarray(snp.argwhere(m)), np.argwhere(m))
    np.testing.assert_array_equal(np.asarray(snp.flatnonzero(m)), np.flatnonzero(m))
    np.testing.assert_array_equal(np.asarray(snp.where(snp.asarray(m) > 1)[1]),
                                  np.nonzero(m > 1)[1])
    rows, cols = secant.jit(lambda m: snp.nonzero(m, size=7, fill_value=-1))(m)
    np.testing.assert_array_equal(np.asarray(rows), [0, 0, 1, 2, 2, -1, -1])
    np.testing.assert_array_equal(np.asarray(cols), [1, 3, 0, 2, 3, -1, -1])
    got = secant.jit(lambda m: snp.argwhere(m > 0, size=3))(m)
    np.testing.assert_array_equal(np.asarray(got), np.argwhere(m)[:3])
    got = secant.jit(lambda m: snp.flatnonzero(m, size=6))(m)
    np.testing.assert_array_equal(np.asarray(got), [1, 3, 4, 10, 11, 0])
    eager = snp.nonzero(m, size=2)
    np.testing.assert_array_equal(np.asarray(eager[1]), [1, 3])
    with pytest.raises(ConcretizationError, match="size="):
        secant.jit(lambda m: snp.nonzero(m))(m)


def test_int64_indices_with_x64(x64):
    a = np.arange(10, dtype=np.float64)
    idx = np.array([9, -2, 0], np.int64)
    got = secant.jit(lambda a, i: (a[i], a.at[i].add(1.0)))(a, idx)
    np.testing.assert_array_equal(np.asarray(got[0]), a[idx])
    ref = a.copy()
    np.add.at(ref, idx, 1.0)
    np.testing.assert_array_equal(np.asarray(got[1]), ref)
