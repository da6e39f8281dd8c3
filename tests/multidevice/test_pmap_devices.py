"""pmap on 4 CPU devices. The device count is fixed when the PJRT client is created, so these
run in their own pytest process with XLA_FLAGS=--xla_force_host_platform_device_count=4
(tests/test_pmap.py starts it); in any other process they are skipped.

1. Values: pmap against a Python loop over the mapped axis; in_axes/out_axes (None, non-zero,
   pytrees), static arguments, keyword arguments, device subsets.
2. Collectives against NumPy, and the same function under vmap(axis_name=...) gives the same.
3. Sharded outputs feed the next pmap without a host copy; one trace and compile per signature.
4. Composition: pmap(grad), grad + pmean inside pmap, pmap(jit), vmap inside pmap.
5. Safety: bad sizes, devices, shard placement and shapes are SecantValueErrors naming this file.
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.backends import runtime

pytestmark = pytest.mark.skipif(runtime.requested_cpu_devices() != 4,
                                reason="needs a process with 4 CPU devices (tests/test_pmap.py)")

RNG = np.random.default_rng(0)


def r(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def ids(devices):
    return [d.id for d in devices]


# --- 1. values ---------------------------------------------------------------------------------
def affine(w, x, b):
    return snp.tanh(x @ w) + b


def test_matches_a_loop_and_splits_outputs_over_the_devices():
    w, x, b = r(4, 3, 2), r(4, 5, 3), r(4, 2)
    out = secant.pmap(affine)(w, x, b)
    want = np.stack([np.tanh(x[k] @ w[k]) + b[k] for k in range(4)])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)
    assert out.shape == (4, 5, 2) and out.dtype == np.float32
    assert ids(out.sharding_devices) == [0, 1, 2, 3]
    shards = out.addressable_shards
    assert [ids(s.devices()) for s in shards] == [[0], [1], [2], [3]]
    for k, s in enumerate(shards):
        assert s.shape == (5, 2)
        np.testing.assert_allclose(np.asarray(s), want[k], rtol=1e-5, atol=1e-6)
    with pytest.raises(secant.SecantTypeError, match="split over several devices"):
        out.device


def test_in_axes_none_and_nonzero_and_pytrees():
    w, x = r(3, 2), r(5, 4, 3)         # w broadcast, x mapped along axis 1
    out = secant.pmap(lambda w, x: x @ w, in_axes=(None, 1))(w, x)
    np.testing.assert_allclose(np.asarray(out), np.stack([x[:, k] @ w for k in range(4)]),
                               rtol=1e-5)
    params = {"w": r(3, 2), "b": r(4, 2)}
    f = secant.pmap(lambda p, x: x @ p["w"] + p["b"], in_axes=({"w": None, "b": 0}, 0))
    xs = r(4, 6, 3)
    np.testing.assert_allclose(np.asarray(f(params, xs)),
                               np.stack([xs[k] @ params["w"] + params["b"][k]
                                         for k in range(4)]), rtol=1e-5)
    x = r(4, 3)
    out = secant.pmap(lambda a: (a * 2, a.sum()), out_axes=(1, 0))(x)
    np.testing.assert_allclose(np.asarray(out[0]), (x * 2).T)
    np.testing.assert_allclose(np.asarray(out[1]), x.sum(1), rtol=1e-5)
    neg = secant.pmap(lambda a: a + 1, in_axes=-1, out_axes=-1)(x.T)
    np.testing.assert_allclose(np.asarray(neg), x.T + 1)


def test_out_axes_none_static_arguments_and_keywords():
    x = r(4, 3)
    total = secant.pmap(lambda a: lax.psum(a, "i"), axis_name="i", out_axes=None)(x)
    assert total.shape == (3,)
    np.testing.assert_allclose(np.asarray(total), x.sum(0), rtol=1e-5)
    scale = secant.pmap(lambda a, k: a * k, static_broadcasted_argnums=1)
    np.testing.assert_allclose(np.asarray(scale(x, 3)), x * 3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scale(x, 5)), x * 5, rtol=1e-6)
    assert scale._cache_size() == 2
    kw = secant.pmap(lambda a, b=None: a - b)(x, b=x * 2)
    np.testing.assert_allclose(np.asarray(kw), -x)


def test_runs_on_the_first_n_devices_or_the_given_ones():
    d = secant.devices()
    idx = secant.pmap(lambda a: lax.axis_index("i") + 0 * a.astype(np.int32), axis_name="i")
    two = idx(np.zeros((2, 1), np.float32))
    assert ids(two.sharding_devices) == [0, 1]
    np.testing.assert_array_equal(np.asarray(two), [[0], [1]])
    on = secant.pmap(lambda a: lax.psum(a, "i") + lax.axis_index("i"), axis_name="i",
                     devices=[d[3], d[1]])
    out = on(np.array([1.0, 2.0], np.float32))
    assert ids(out.sharding_devices) == [3, 1]
    np.testing.assert_allclose(np.asarray(out), [3.0, 4.0])     # replica ids 0, 1


def test_python_control_flow_is_staged_per_device():
    def clipped(a):
        if a.sum() > 0:
            a = a - 1.0
        else:
            a = a + 1.0
        return a
    x = np.array([[1.0, 2.0], [-3.0, 1.0], [5.0, -9.0], [0.5, 0.5]], np.float32)
    got = secant.pmap(clipped)(x)
    np.testing.assert_allclose(np.asarray(got), np.stack([clipped(v) for v in x]))


# --- 2. collectives --------------------------------------------------------------------------
def reductions(x):
    return (lax.psum(x, "i"), lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"),
            lax.axis_index("i"), (x - lax.pmean(x, "i")) / lax.psum(x * x, "i"))


def gathers(x):
    return (lax.all_gather(x, "i"), lax.all_gather(x, "i", axis=1),
            lax.all_gather(x, "i", tiled=True))


@pytest.mark.parametrize("fn", [reductions, gathers])
def test_collectives_match_numpy_and_vmap(fn):
    x = r(4, 3, 2)
    got = secant.pmap(fn, axis_name="i")(x)
    same = secant.vmap(fn, axis_name="i")(x)
    for g, s in zip(got, same):
        np.testing.assert_allclose(np.asarray(g), np.asarray(s), rtol=1e-5, atol=1e-6)
    if fn is reductions:
        want = (x.sum(0), x.mean(0), x.max(0), x.min(0))
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.broadcast_to(w, x.shape), rtol=1e-5)
        np.testing.assert_array_equal(np.asarray(got[4]), np.arange(4))
        assert got[4].dtype == np.int32
    else:
        np.testing.assert_allclose(np.asarray(got[0]), np.broadcast_to(x, (4,) + x.shape))
        np.testing.assert_allclose(np.asarray(got[1]),
                                   np.broadcast_to(x.transpose(1, 0, 2), (4, 3, 4, 2)))
        np.testing.assert_allclose(np.asarray(got[2]),
                                   np.broadcast_to(x.reshape(12, 2), (4, 12, 2)))


def test_psum_of_constants_ints_and_pytrees():
    f = secant.pmap(lambda a: (lax.psum(1, "i"), lax.psum(a, "i"),
                               lax.psum({"u": a, "v": 2 * a}, "i")), axis_name="i")
    ones, ints, tree = f(np.arange(8, dtype=np.int32).reshape(4, 2))
    np.testing.assert_array_equal(np.asarray(ones), [4, 4, 4, 4])
    np.testing.assert_array_equal(np.asarray(ints), np.broadcast_to([12, 16], (4, 2)))
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(tree["v"]), np.broadcast_to([24, 32], (4, 2)))


def test_ppermute_and_all_to_all():
    x = r(4, 4, 3)
    ring = [(k, (k + 1) % 4) for k in range(4)]
    got = secant.pmap(lambda a: (lax.ppermute(a, "i", ring), lax.ppermute(a, "i", [(0, 2)])),
                      axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got[0]), np.roll(x, 1, axis=0))
    partial = np.zeros_like(x)
    partial[2] = x[0]                  # only index 2 receives; the others get zeros
    np.testing.assert_allclose(np.asarray(got[1]), partial)
    a2a = secant.pmap(lambda a: lax.all_to_all(a, "i", 0, 0), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(a2a), x.transpose(1, 0, 2))   # out[j][i] = x[i][j]
    y = r(4, 8, 3)
    tiled = secant.pmap(lambda a: lax.all_to_all(a, "i", 0, 1, tiled=True), axis_name="i")(y)
    want = np.stack([np.concatenate([y[i, 2 * j:2 * j + 2] for i in range(4)], axis=1)
                     for j in range(4)])
    np.testing.assert_allclose(np.asarray(tiled), want)
    with pytest.raises(secant.SecantTypeError, match="ppermute"):
        secant.pmap(lambda a: lax.ppermute(a, "i", [(0, 1), (2, 1)]), axis_name="i")(x)


# --- 3. sharded outputs and caching ----------------------------------------------------------
def test_sharded_outputs_feed_the_next_call_without_a_copy(monkeypatch):
    step = secant.pmap(lambda a: a * 2 + lax.axis_index("i"), axis_name="i")
    x = r(4, 3)
    a = step(x)
    puts = []
    real = runtime.put_sharded
    monkeypatch.setattr(runtime, "put_sharded", lambda *s: puts.append(1) or real(*s))
    b = step(a)
    c = step(b)
    assert puts == []                      # no host-to-device copy
    assert a._npy is None and b._npy is None     # nor a device-to-host one
    assert [s.devices() for s in c.addressable_shards] == [{d} for d in secant.devices()]
    k = np.arange(4)[:, None]
    np.testing.assert_allclose(np.asarray(c), ((x * 2 + k) * 2 + k) * 2 + k, rtol=1e-6)
    assert step._cache_size() == 1
    step(r(4, 5))
    assert step._cache_size() == 2


def test_lowered_text_and_source_show_the_per_device_program():
    def per_device(a):
        return lax.psum(snp.sin(a), "i")
    p = secant.pmap(per_device, axis_name="i")
    text = p.lower(r(4, 3)).as_text()
    assert "mhlo.num_replicas = 4" in text and "tensor<3xf32>" in text
    assert '"stablehlo.all_reduce"' in text and "replica_groups = dense<[[0, 1, 2, 3]]>" in text
    assert "test_pmap_devices.py" in text          # locations name the user's lines
    assert "def per_device(a):" in secant.source(p)
    assert 'lax.psum(snp.sin(a), "i")' in p.lower(r(4, 3)).source()


# --- 4. composition --------------------------------------------------------------------------
def loss(w, x):
    return snp.mean((snp.tanh(x @ w) - 1.0) ** 2)


def test_pmap_of_grad_matches_a_loop_of_grads():
    w, x = r(3, 2), r(4, 5, 3)
    got = secant.pmap(secant.grad(loss), in_axes=(None, 0))(w, x)
    want = np.stack([np.asarray(secant.grad(loss)(w, x[k])) for k in range(4)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


grad_loss = secant.grad(loss)


def test_grad_inside_pmap_with_pmean_of_the_gradients():
    def step(w, x):
        g = grad_loss(w, x)
        g = lax.pmean(g, "i")
        return w - 0.5 * g
    w, x = r(3, 2), r(4, 5, 3)
    new = secant.pmap(step, axis_name="i", in_axes=(None, 0))(w, x)
    mean_grad = np.mean([np.asarray(secant.grad(loss)(w, x[k])) for k in range(4)], axis=0)
    for k in range(4):
        np.testing.assert_allclose(np.asarray(new)[k], w - 0.5 * mean_grad, rtol=1e-5,
                                   atol=1e-6)
    same = secant.vmap(step, axis_name="i", in_axes=(None, 0))(w, x)
    np.testing.assert_allclose(np.asarray(new), np.asarray(same), rtol=1e-5, atol=1e-6)


def test_pmap_of_jit_and_vmap_inside_pmap():
    x = r(4, 5, 3)
    jf = secant.jit(lambda a: snp.sin(a) * a.sum())
    np.testing.assert_allclose(np.asarray(secant.pmap(jf)(x)),
                               np.stack([np.sin(v) * v.sum() for v in x]), rtol=1e-5)
    rows = secant.pmap(lambda a: secant.vmap(lambda row: row @ row)(a))
    np.testing.assert_allclose(np.asarray(rows(x)), (x * x).sum(-1), rtol=1e-5)
    # a collective over the pmap axis inside the vmapped function: vmap writes it as is
    across = secant.pmap(lambda a: secant.vmap(lambda row: lax.psum(row, "i"))(a),
                         axis_name="i")
    np.testing.assert_allclose(np.asarray(across(x)), np.broadcast_to(x.sum(0), x.shape),
                               rtol=1e-5)


def test_grad_inside_pmap_through_collectives_matches_vmap():
    """grad inside pmap of a loss calling psum / all_gather over the pmap axis (carry15l): the
    transposes are collectives again (psum's psum, all_gather's psum_scatter), so each device
    gets the derivative of every device's loss summed, as vmap(axis_name=...) gives it and as
    central differences of that sum, written without collectives, give it."""
    x = RNG.normal(size=(4, 3))

    def loss(a):
        return snp.sum(lax.psum(a, "i") ** 2 * snp.sin(a)) + snp.sum(
            lax.all_gather(a, "i") ** 2 * snp.arange(4.0)[:, None])

    def total(X):
        return sum(np.sum(X.sum(0) ** 2 * np.sin(a)) for a in X) + 4 * np.sum(
            X ** 2 * np.arange(4.0)[:, None])
    got = np.asarray(secant.pmap(secant.grad(loss), axis_name="i")(x))
    h, want = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        want[idx] = (total(x + e) - total(x - e)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    same = secant.vmap(secant.grad(loss), axis_name="i")(x)
    np.testing.assert_allclose(got, np.asarray(same), rtol=1e-5, atol=1e-5)


# --- 5. safety ---------------------------------------------------------------------------------
def test_sizes_and_devices_are_checked():
    d = secant.devices()
    with pytest.raises(secant.SecantValueError, match=r"(?s)size 5.*only 4 device.*"
                                                      r"test_pmap_devices"):
        secant.pmap(lambda a: a)(r(5, 2))
    with pytest.raises(secant.SecantValueError, match="given 2 devices"):
        secant.pmap(lambda a: a, devices=d[:2])(r(4, 2))
    with pytest.raises(secant.SecantValueError, match="inconsistent sizes"):
        secant.pmap(lambda a, b: a + b)(r(4, 2), r(3, 2))
    with pytest.raises(secant.SecantValueError, match="several shards on device"):
        secant.pmap(lambda a: a, devices=[d[0], d[0]])
    with pytest.raises(secant.SecantValueError, match="unbound axis name: 'j'"):
        secant.pmap(lambda a: lax.psum(a, "j"), axis_name="i")(r(4, 2))


def test_misplaced_shards_are_an_error_not_a_crash():
    d = secant.devices()
    a = secant.pmap(lambda v: v + 1)(r(4, 2))
    with pytest.raises(secant.SecantValueError,
                       match=r"(?s)another order.*test_pmap_devices"):
        secant.pmap(lambda v: v, devices=[d[1], d[0], d[3], d[2]])(a)
    b = secant.pmap(lambda v: v, devices=[d[2], d[3]])(r(2, 2))
    with pytest.raises(secant.SecantValueError, match="other devices"):
        secant.pmap(lambda v: v)(b)
    # re-split through the host, as the message says
    np.testing.assert_allclose(np.asarray(secant.pmap(lambda v: v)(np.asarray(b))),
                               np.asarray(b))


def test_the_runtime_validates_every_multi_device_execute():
    prog, _ = secant.pmap(lambda a: a * 2)._program((r(4, 3),), {})
    exe = prog.exe
    d = secant.devices()
    one = np.ones(3, np.float32)
    cases = [
        (runtime.put_sharded([one] * 3, d[:3]), "3 shards, but the program runs on 4"),
        (runtime.put_sharded([one] * 4, [d[1], d[0], d[2], d[3]]), "devices out of order"),
        (runtime.put_sharded([np.ones(4, np.float32)] * 4, d), r"float32\[4\], but"),
        (runtime.put_sharded([np.ones(3, np.int32)] * 4, d), r"int32\[3\], but"),
    ]
    for sb, msg in cases:
        with pytest.raises(secant.SecantValueError, match=msg):
            exe([sb])
    with pytest.raises(secant.SecantValueError, match="takes 1 arrays, got 0"):
        exe([])
    good = runtime.put_sharded([one * k for k in range(4)], d)
    out = exe([good])[0]
    np.testing.assert_allclose([np.asarray(s) for s in out.shards],
                               [one * 2 * k for k in range(4)])


def test_transforms_of_a_pmapped_function_are_refused_clearly():
    p = secant.pmap(lambda a: a * 2)
    with pytest.raises(secant.UnsupportedError, match="put the transform inside pmap"):
        secant.grad(p)(r(4))
    with pytest.raises(secant.UnsupportedError, match="pmap inside jit"):
        secant.jit(p)(r(4, 2))
