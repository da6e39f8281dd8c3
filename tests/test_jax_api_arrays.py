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
