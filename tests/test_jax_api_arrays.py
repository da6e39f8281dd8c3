"""JAX's API around arrays and tracing, as JAX programs use it: one trace cache per function (the
sharp-bits page's global-variable example), Array.sharding/.devices()/.device/
.addressable_shards/.is_fully_replicated, block_until_ready on pytrees, named_call, named_scope,
ensure_compile_time_eval, eval_shape and ShapeDtypeStruct."""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as snp

g = 0.0


def impure_uses_globals(x):
    return x + g


def test_sharp_bits_global_variable_example():
    """JAX's "JAX sharp bits" page, pure functions: jit(f) written anew each call shares f's trace
    cache, so the second call still sees g = 0 (JAX prints 4.0, 5.0, [14.])."""
    global g
    g = 0.0
    try:
        first = secant.jit(impure_uses_globals)(4.0)
        g = 10.0
        second = secant.jit(impure_uses_globals)(5.0)
        third = secant.jit(impure_uses_globals)(snp.array([4.0]))   # new shape: traced again
        assert float(first) == 4.0
        assert float(second) == 5.0
        np.testing.assert_array_equal(np.asarray(third), [14.0])
        # one JitFunction object or a new one: the same cache
        assert float(secant.jit(impure_uses_globals)(5.0)) == 5.0
    finally:
        g = 0.0


def test_trace_cache_is_per_function_and_per_static_arguments():
    calls = []

    def f(x, n):
        calls.append(n)
        return x * n
    assert float(secant.jit(f, static_argnums=1)(2.0, 3)) == 6.0
    assert float(secant.jit(f, static_argnums=1)(2.0, 3)) == 6.0
    assert calls == [3]
    assert float(secant.jit(f, static_argnums=1)(2.0, 4)) == 8.0        # another static value
    assert calls == [3, 4]
    # a partial (a new object each time, as in JAX) traces again
    h = functools.partial(f, n=2)
    assert float(secant.jit(h, static_argnames="n")(1.0)) == 2.0
    assert float(secant.jit(functools.partial(f, n=2), static_argnames="n")(1.0)) == 2.0
    assert calls == [3, 4, 2, 2]


# --- placement: what JAX programs read off an array ---------------------------------------------
def test_sharding_devices_device_and_shards_of_a_one_device_array():
    x = secant.jit(lambda x: x * 2)(np.arange(3.0, dtype=np.float32))
    dev = secant.devices()[0]
    assert x.devices() == {dev} and x.device == dev
    s = x.sharding
    assert repr(s) == f"SingleDeviceSharding(device={dev!r}, memory_kind=device)"   # (JAX's)
    assert s.device_set == {dev} and s.num_devices == 1 and s.is_fully_replicated
    assert s.devices_indices_map((3,)) == {dev: (slice(None),)}
    assert x.is_fully_replicated and x.is_fully_addressable
    shards = x.addressable_shards
    assert len(shards) == 1
    sh = shards[0]
    assert sh.device == dev and sh.index == (slice(None),) and sh.replica_id == 0
    np.testing.assert_array_equal(np.asarray(sh.data), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(x[sh.index]), np.asarray(sh.data))


def test_block_until_ready_on_pytrees_returns_them():
    x = secant.jit(lambda x: x + 1)(np.ones(2, np.float32))
    tree = {"a": x, "b": [x, 1.0], "c": (np.ones(1),)}
    out = secant.block_until_ready(tree)
    assert out is tree and all(a.is_ready() for a in (x,))


# --- tracing helpers ----------------------------------------------------------------------------
def test_shape_dtype_struct():
    s = secant.ShapeDtypeStruct((2, 3), np.float32)
    assert s.shape == (2, 3) and s.dtype == np.float32 and s.ndim == 2 and s.size == 6
    assert len(s) == 2 and not s.weak_type
    assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"       # (JAX's repr)
    assert s == secant.ShapeDtypeStruct([2, 3], "float32") and hash(s) == hash(
        secant.ShapeDtypeStruct((2, 3), np.float32))
    assert s != secant.ShapeDtypeStruct((2, 3), np.float64)
    with pytest.raises(TypeError):
        len(secant.ShapeDtypeStruct((), np.float32))


def test_eval_shape_traces_without_computing():
    calls = []

    def f(a, b):
        calls.append(1)
        return a @ b, snp.sum(a), {"n": snp.arange(4)}
    out = secant.eval_shape(f, secant.ShapeDtypeStruct((2, 3), np.float32), np.ones((3, 4)))
    # JAX: (ShapeDtypeStruct(shape=(2, 4), dtype=float32), ShapeDtypeStruct(shape=(), ...), ...)
    assert out[0] == secant.ShapeDtypeStruct((2, 4), np.float32)
    assert out[1] == secant.ShapeDtypeStruct((), np.float32)
    assert out[2]["n"] == secant.ShapeDtypeStruct((4,), np.int32)
    assert calls == [1]
    weak = secant.eval_shape(lambda a: a * 2, 1.0)
    assert weak.shape == () and weak.dtype == np.float32 and weak.weak_type
    with pytest.raises(secant.SecantError):
        secant.eval_shape(lambda a, b: a @ b, secant.ShapeDtypeStruct((2, 3), np.float32),
                          secant.ShapeDtypeStruct((2, 3), np.float32))


def layer(x):
    with secant.named_scope("layer"):
        y = snp.sin(x) * 3.0
    with secant.ensure_compile_time_eval():
        c = snp.arange(3.0).sum()           # concrete: computed now, even under jit
    return y * c


def test_named_scope_and_ensure_compile_time_eval_compute_the_same():
    x = 0.7
    want = np.sin(x) * 3.0 * 3.0
    assert float(layer(x)) == pytest.approx(want, rel=1e-6)
    assert float(secant.jit(layer)(x)) == pytest.approx(want, rel=1e-6)
    assert float(secant.grad(layer)(x)) == pytest.approx(np.cos(x) * 9.0, rel=1e-6)
    got = secant.vmap(layer)(np.array([0.1, 0.7], np.float32))
    np.testing.assert_allclose(np.asarray(got), np.sin([0.1, 0.7]) * 9.0, rtol=1e-6)
    with pytest.raises(TypeError, match="must be a string"):
        with secant.named_scope(3):
            pass


def test_named_call_computes_what_the_function_computes():
    sq = secant.named_call(lambda x: x ** 2 + 1.0, name="square")
    assert float(sq(3.0)) == 10.0
    assert float(secant.grad(sq)(3.0)) == 6.0
    assert float(secant.jit(sq)(2.0)) == 5.0
