"""Issue 15: out-of-range indices at each entry point, against JAX's own semantics (jax/_src/lax/
slicing.py and jax/_src/numpy/indexing.py, read with the search tool):

- lax.gather: mode=None is PROMISE_IN_BOUNDS (not GatherScatterMode.from_any(None)), which XLA
  clamps, as 'clip' does; 'fill' (or 'drop', GatherScatterMode.FILL_OR_DROP) gives a window not
  wholly inside the operand fill_value: NaN for inexact types, the most negative value for
  signed integers, the largest for unsigned ones, True for bool.
- lax.scatter*: mode=None is from_any(None) = FILL_OR_DROP: a window not wholly inside is
  dropped; 'clip' clamps its start.
- x[idx] and x.at[idx].get(): mode None reaches lax.gather as None (clamped), negative indices
  wrapped first; .at[idx].get(mode='fill') fills. x.at[idx].set / add: dropped.
- jnp.take / take_along_axis: mode None is 'fill'; 'clip' clamps (negative indices too).
The expected values are written out by hand from those rules."""
import numpy as np
import pytest

import secant
import secant.lax as lax
import secant.numpy as snp

NAN = np.nan
X = np.arange(5.0)
IDX = np.array([0, 4, 7, -1, -9])
DN = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
SDN = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
GI = np.array([[0], [4], [7], [-1]])


def _same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("how, want", [
    ("x[idx]", [0, 4, 4, 4, 0]),                   # -1 wraps to 4, -9 to -4, clamped to 0
    ("at.get", [0, 4, 4, 4, 0]),
    ("at.get clip", [0, 4, 4, 4, 0]),
    ("at.get fill", [0, 4, NAN, 4, NAN]),
    ("take", [0, 4, NAN, 4, NAN]),
    ("take clip", [0, 4, 4, 0, 0]),                # 'clip' does not wrap: -1 clamps to 0
    ("take_along_axis", [0, 4, NAN, 4, NAN]),
    ("at.set", [10, 1, 2, 3, 10]),                 # 7 and -4 dropped
    ("at.add", [10, 1, 2, 3, 24]),
])
def test_numpy_entry_points(how, want):
    x = snp.asarray(X)
    idx = snp.asarray(IDX)
    fns = {
        "x[idx]": lambda x: x[idx],
        "at.get": lambda x: x.at[idx].get(),
        "at.get clip": lambda x: x.at[idx].get(mode="clip"),
        "at.get fill": lambda x: x.at[idx].get(mode="fill"),
        "take": lambda x: snp.take(x, idx),
        "take clip": lambda x: snp.take(x, idx, mode="clip"),
        "take_along_axis": lambda x: snp.take_along_axis(x, idx, axis=0),
        "at.set": lambda x: x.at[idx].set(10.0),
        "at.add": lambda x: x.at[idx].add(10.0),
    }
    _same(fns[how](x), want)
    _same(secant.jit(fns[how])(x), want)


def _gather(x, mode=None, fill_value=None):
    return lax.gather(x, GI, DN, (1,), mode=mode, fill_value=fill_value)


@pytest.mark.parametrize("mode, fill_value, want", [
    (None, None, [0, 4, 4, 0]),
    ("clip", None, [0, 4, 4, 0]),
    ("promise_in_bounds", None, [0, 4, 4, 0]),
    (lax.GatherScatterMode.CLIP, None, [0, 4, 4, 0]),
    ("fill", None, [0, 4, NAN, NAN]),
    ("drop", None, [0, 4, NAN, NAN]),
    (lax.GatherScatterMode.FILL_OR_DROP, -2.5, [0, 4, -2.5, -2.5]),
])
def test_lax_gather_modes(mode, fill_value, want):
    _same(_gather(snp.asarray(X), mode, fill_value), want)
    _same(secant.jit(lambda x: _gather(x, mode, fill_value))(X), want)


@pytest.mark.parametrize("dtype, fill", [("int32", np.iinfo(np.int32).min),
                                         ("uint8", 255), ("bool", True)])
def test_lax_gather_fill_defaults(dtype, fill):
    x = snp.asarray(np.array([1, 0, 1, 0, 1]).astype(dtype))
    got = _gather(x, "fill")
    assert np.asarray(got).dtype == np.dtype(dtype)
    _same(got, np.array([1, 1, fill, fill]).astype(dtype))


def test_lax_gather_fill_windows():
    """A window of 2 rows: any start past shape - 2 (or below 0) fills the whole window; with
    'clip' it is moved inside."""
    x = np.arange(12.0).reshape(4, 3)
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                    start_index_map=(0,))
    starts = np.array([[0], [2], [3], [-1]])
    fill = lax.gather(x, starts, dn, (2, 3), mode="fill", fill_value=-1.0)
    clip = lax.gather(x, starts, dn, (2, 3), mode="clip")
    _same(fill, [x[0:2], x[2:4], np.full((2, 3), -1.0), np.full((2, 3), -1.0)])
    _same(clip, [x[0:2], x[2:4], x[2:4], x[0:2]])


def test_lax_gather_fill_grad_vmap(x64):
    """grad: 1 where a window is read, 0 where it is filled; vmap against a loop."""
    def f(x):
        return snp.sum(_gather(x, "fill", 0.0) ** 2)
    _same(secant.grad(f)(X), 2 * X * np.array([1, 0, 0, 0, 1]))
    xs = np.stack([X, 2 * X + 1])
    _same(secant.vmap(lambda x: _gather(x, "fill", -1.0))(xs),
          [np.asarray(_gather(x, "fill", -1.0)) for x in xs])


@pytest.mark.parametrize("name, mode, want", [
    ("scatter", None, [9, 1, 2, 3, 9]),            # 7 and -1 dropped
    ("scatter_add", None, [9, 1, 2, 3, 13]),
    ("scatter_add", "drop", [9, 1, 2, 3, 13]),
    ("scatter_add", "clip", [18, 1, 2, 3, 22]),    # 7 -> 4, -1 -> 0
    ("scatter_max", "clip", [9, 1, 2, 3, 9]),
    ("scatter_mul", "clip", [0, 1, 2, 3, 324]),
])
def test_lax_scatter_modes(name, mode, want):
    op = getattr(lax, name)
    updates = np.full(4, 9.0)
    _same(op(X, GI, updates, SDN, mode=mode), want)
    _same(secant.jit(lambda x: op(x, GI, updates, SDN, mode=mode))(X), want)


def test_lax_scatter_clip_grad(x64):
    """d/du of scatter_add(x, clipped, u): every update lands (clamped), so its gradient is the
    cotangent at the clamped row."""
    def f(u):
        return snp.sum(lax.scatter_add(X, GI, u, SDN, mode="clip") * np.arange(1.0, 6.0))
    _same(secant.grad(f)(np.ones(4)), [1, 5, 5, 1])


def test_unknown_mode_refused():
    with pytest.raises(secant.SecantError, match="mode"):
        _gather(snp.asarray(X), "wrap")
    with pytest.raises(secant.SecantError, match="mode"):
        lax.scatter(X, GI, np.ones(4), SDN, mode="wrap")
