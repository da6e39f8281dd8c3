"""Issue 15: an index mixing integer arrays batched by vmap with slices, ints, None, Ellipsis
and unbatched arrays (`log_emit[:, o]` with o per example, as JAX gathers it): one gather (or
scatter, for x.at[...]) at the index batching/helpers.py parts_index builds, where NumPy puts
each example's axes; snp.take with batched indices likewise, in each of its modes, and
lax.dynamic_slice / dynamic_update_slice with starts per example. Each form against a Python
loop, under vmap, vmap of grad, grad of vmap (against float64 finite differences) and vmap of
vmap."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, lax, vmap

from others15_check import check_grad, check_vmap

RNG = np.random.default_rng(1515)
T = RNG.normal(size=(3, 4, 5))
TS = RNG.normal(size=(4, 3, 4, 5))
O = np.array([0, 3, 2, 1])
O2 = np.array([[0, -1], [3, 2], [2, 2], [-4, 1]])       # (negative indices wrap, as NumPy)

FORMS = {
    "slice_then_int": lambda t, o: jnp.sum(jnp.sin(t[:, o]) * t[0, o]),
    "strided_slices": lambda t, o: jnp.sum(t[1:, o, ::-1] ** 2),
    "ellipsis_and_none": lambda t, o: jnp.sum(t[..., o] * t[None, :, :, o])
    + jnp.sum(t[None, 1, 2:, o] ** 2),
    "int_apart": lambda t, o: jnp.sum(jnp.tanh(t[o, :, -1]) * t[-1, 2, o]),
    "with_unbatched_array": lambda t, o: jnp.sum(t[:, np.array([1, 0, 3]), o] ** 3),
    "with_a_python_list": lambda t, o: jnp.sum(t[[0, 2], :, o] ** 2),
    "negated_batched": lambda t, o: jnp.sum(t[:, -o - 1] ** 2),
    "at_get_pair": lambda t, o: jnp.sum(t.at[1, :, o].get() * t[0, :, o]),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_index_mixing_a_batched_integer(x64, name):
    f = FORMS[name]
    check_vmap(f, (TS, O))                                   # both batched
    check_vmap(f, (T, O), in_axes=(None, 0))                 # only the index
    check_vmap(grad(f), (TS, O))
    check_vmap(grad(f), (T, O), in_axes=(None, 0))
    check_grad(lambda t: jnp.sum(vmap(f, in_axes=(None, 0))(t, O) ** 2), T)
    got = vmap(vmap(f, in_axes=(None, 0)), in_axes=(0, None))(jnp.asarray(TS), O)
    want = [[float(f(jnp.asarray(t), o)) for o in O] for t in TS]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_an_index_of_batched_rows(x64):
    """o with a shape per example: its axes where NumPy puts them (adjacent: in place)."""
    f = lambda t, o: jnp.sum(t[:, o] * jnp.arange(1.0, 3.0)[:, None])
    check_vmap(f, (T[:, :, :1].repeat(1, 0), O2[:, :, None].repeat(1, 2)), in_axes=(None, 0))
    check_vmap(lambda t, o: t[1, o, 1:3], (TS, O2))


UPDATES = {
    "add": lambda t, o, v: jnp.sum(t.at[:, o].add(v) ** 2),
    "set_sliced": lambda t, o, v: jnp.sum(jnp.sin(t.at[1:, o].set(v))),
    "get_clip": lambda t, o, v: jnp.sum(t.at[:, o].get(mode="clip") * v),
    "mul_rows": lambda t, o, v: jnp.sum(t.at[o % 3, 1:].mul(v) ** 2),
}


@pytest.mark.parametrize("axes", [(0, 0, 0), (None, 0, None), (None, 0, 0), (0, 0, None)])
@pytest.mark.parametrize("name", sorted(UPDATES))
def test_at_update_mixing_a_batched_integer(x64, name, axes):
    f = UPDATES[name]
    ts, vs = RNG.normal(size=(4, 3, 5)), RNG.normal(size=(4,))
    args = tuple(a if ax == 0 else a[0] for a, ax in zip((ts, O, vs), axes))
    check_vmap(f, args, in_axes=axes)
    check_vmap(grad(f), args, in_axes=axes)


def test_batched_boolean_or_slice_bound_is_refused(x64):
    with pytest.raises(secant.SecantError, match="slice bound"):
        vmap(lambda t, k: t[1:k, 0], in_axes=(None, 0))(jnp.asarray(T), jnp.asarray(O))
    with pytest.raises(secant.SecantError, match="slice bound that is batched"):
        vmap(lambda t, k: t[1:k, k], in_axes=(None, 0))(jnp.asarray(T), jnp.asarray(O))
    mask = np.array([True, False, True])
    with pytest.raises(secant.SecantError, match="boolean mask"):
        vmap(lambda t, o: t[mask, o], in_axes=(None, 0))(jnp.asarray(T), jnp.asarray(O))


def _take(axis, mode):
    fill = -7.0 if mode in (None, "fill") else None
    f = lambda t, o: jnp.take(t, o, axis=axis, mode=mode, fill_value=fill)
    return f, lambda t, o: jnp.sum(f(t, o) ** 2)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("mode", [None, "clip", "wrap", "fill"])
def test_take_with_batched_indices(x64, mode, axis):
    """snp.take(t, o, axis) with o per example (negative and out-of-range ones too, each mode
    as take reads them): one gather; its derivative's scatter (take_grad) batched as well."""
    t, ts = RNG.normal(size=(3, 5)), RNG.normal(size=(4, 3, 5))
    o = np.array([[0, 4], [-1, 2], [7, -6], [3, 1]])
    f, g = _take(axis, mode)
    check_vmap(f, (ts, o))
    check_vmap(f, (t, o), in_axes=(None, 0))
    check_vmap(grad(g), (ts, o))
    check_vmap(grad(g), (t, o), in_axes=(None, 0))
    check_grad(lambda t: jnp.sum(vmap(g, in_axes=(None, 0))(t, o)), t)


def test_take_raise_with_batched_indices_is_refused(x64):
    with pytest.raises(secant.SecantError, match="mode='raise'"):
        vmap(lambda o: jnp.take(jnp.arange(4.0), o, mode="raise"))(jnp.asarray([1, 2]))


DYNAMIC = {
    "slice": lambda t, o: jnp.sum(jnp.sin(lax.dynamic_slice(t, (0, o), (3, 2))) ** 2),
    "slice_by_array": lambda t, o: jnp.sum(lax.dynamic_slice(t, jnp.stack([o % 2, o]), (2, 3))
                                           ** 3),
    "update": lambda t, o: jnp.sum(lax.dynamic_update_slice(t, jnp.cos(t[:, :1]), (0, o)) ** 2),
}


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_dynamic_slices_with_batched_starts(x64, name):
    """lax.dynamic_slice / dynamic_update_slice with a start per example (out-of-range ones
    clamped, as lax does): one gather or scatter."""
    f = DYNAMIC[name]
    t, ts = RNG.normal(size=(3, 5)), RNG.normal(size=(4, 3, 5))
    o = np.array([0, 4, 2, 9])
    check_vmap(f, (ts, o))
    check_vmap(f, (t, o), in_axes=(None, 0))
    check_vmap(grad(f), (ts, o))
    check_vmap(grad(f), (t, o), in_axes=(None, 0))
    check_grad(lambda t: jnp.sum(vmap(f, in_axes=(None, 0))(t, o)), t)


@pytest.mark.parametrize("idx", [(Ellipsis, slice(1, 3)), (Ellipsis, 0), Ellipsis,
                                 (0, Ellipsis, slice(0, 2))])
@pytest.mark.parametrize("g_batched", [True, False])
def test_add_at_batched_with_an_ellipsis_index(x64, idx, g_batched):
    """A derivative's add_at(t_bar, (..., a:b), g) under vmap (the third derivative of odeint's
    `flat[..., start:start + size]`): the index counts its axes from the end, so the batch axis
    stays in front; against add_at example by example."""
    from secant.ad.helpers import add_at
    from secant.batching.helpers import add_at_batched
    t = RNG.normal(size=(4, 2, 3))
    g_one = np.zeros((2, 3))[idx]
    g = RNG.normal(size=(4,) + g_one.shape) if g_batched else RNG.normal(size=g_one.shape)
    got = add_at_batched(jnp.asarray(t), idx, jnp.asarray(g), 4, True, False, g_batched)
    want = [add_at(jnp.asarray(t[b]), idx, jnp.asarray(g[b] if g_batched else g))
            for b in range(4)]
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(w) for w in want]),
                               rtol=1e-12)
