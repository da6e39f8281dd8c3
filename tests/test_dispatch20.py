"""Issue 19 (dispatch20): jit's warm path for device arrays recognises the last signature by its
avals' identity. It must give what the full path gives: same values, the x64 state of the call,
the cache bound and LRU order, donated arrays refused, several outputs. No timings here."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.array import Array


def _dev(*xs):
    return secant.device_put(tuple(np.asarray(x, np.float32) for x in xs))


@pytest.fixture
def two_entries():
    """(jit of x + 1 that records each trace's shape, that record, device arrays of 1, 2 and 3
    zeros) under jit_cache_size 2."""
    old = secant.config.read("jit_cache_size")
    secant.config.update("jit_cache_size", 2)
    traces = []

    def h(x):
        traces.append(x.shape)
        return x + 1
    yield secant.jit(h), traces, _dev(np.zeros(1), np.zeros(2), np.zeros(3))
    secant.config.update("jit_cache_size", old)


def test_the_last_signature_fed_back_gives_the_loops_values():
    step = secant.jit(lambda x, y: x * 0.5 + y)
    x, y = _dev(np.arange(4.0), np.ones(4))
    want = np.arange(4.0, dtype=np.float32)
    for _ in range(5):          # x is the previous output: the same aval object each time
        x = step(x, y)
        want = want * np.float32(0.5) + np.float32(1)
        assert type(x) is Array and x.dtype == np.float32 and not x.weak_type
        np.testing.assert_array_equal(np.asarray(x), want)
    assert step._cache.last is not None        # (the path under test really ran)


def test_the_last_signature_follows_enable_x64():
    def f(a):
        return a + snp.ones(a.shape)        # float64 under x64, float32 without
    g = secant.jit(f)
    (a,) = _dev(np.ones(3))
    for _ in range(2):
        assert g(a).dtype == np.float32
    secant.config.update("enable_x64", True)
    try:
        assert g(a).dtype == np.float64 and g(a).dtype == np.float64
    finally:
        secant.config.update("enable_x64", False)
    assert g(a).dtype == np.float32


def test_the_last_signature_keeps_the_lru_order_and_bound(two_entries):
    g, traces, (a1, a2, a3) = two_entries
    g(a1), g(a2), g(a1), g(a1), g(a1)      # hits on a1 keep it the most recent
    g(a3)                                   # evicts a2
    assert traces == [(1,), (2,), (3,)]
    g(a1), g(a1)
    assert len(traces) == 3
    np.testing.assert_array_equal(np.asarray(g(a2)), [1, 1])
    assert len(traces) == 4 and g._cache_size() == 2
    g(a2), g(a2)
    np.testing.assert_array_equal(np.asarray(g(a3)), [1, 1, 1])     # a1 was dropped
    assert len(traces) == 5


def test_a_donated_array_is_refused_on_the_warm_path():
    g = secant.jit(lambda x: x * 2)
    donating = secant.jit(lambda x: x + 1, donate_argnums=0)
    (a,) = _dev(np.ones(3))
    g(a), g(a)
    b = donating(a)
    np.testing.assert_array_equal(np.asarray(b), [2, 2, 2])
    with pytest.raises(secant.SecantError, match="donated"):
        g(a)
    np.testing.assert_array_equal(np.asarray(g(b)), [4, 4, 4])


def test_the_last_signature_with_several_outputs_and_eager_arrays():
    g = secant.jit(lambda x, y: (x + y, x * y))
    x, y = _dev(np.arange(3.0), np.full(3, 2.0))
    for _ in range(3):
        s, p = g(x, y)
        np.testing.assert_array_equal(np.asarray(s), [2, 3, 4])
        np.testing.assert_array_equal(np.asarray(p), [0, 2, 4])
    e = snp.asarray(np.arange(3.0, dtype=np.float32))       # eager: no device buffer
    for _ in range(2):
        s, p = g(e, y)
        np.testing.assert_array_equal(np.asarray(p), [0, 2, 4])
    s, p = g(x, 3.0)                    # a Python scalar in the same place
    np.testing.assert_array_equal(np.asarray(p), [0, 3, 6])


def test_a_hit_on_the_last_signature_refreshes_its_lru_place(two_entries):
    g, traces, (a1, a2, a3) = two_entries
    g(a1), g(a1)            # a1: the last signature
    g(x=a2)                 # (a keyword: the full path) a2 the most recent
    g(a1)                   # the last signature's hit: a1 the most recent again
    g(x=a3)                 # evicts a2, not a1
    assert len(traces) == 3
    g(a1)
    assert len(traces) == 3


def test_np_asarray_of_jit_outputs_of_each_dtype():
    import ml_dtypes
    for dt in (np.float32, np.int32, np.bool_, np.complex64, np.float16, ml_dtypes.bfloat16):
        g = secant.jit(lambda x: x + x)
        x = np.asarray([1, 0, 3], dt)
        for _ in range(2):          # (the second call: C++'s)
            got = np.asarray(g(x))
            assert got.dtype == np.dtype(dt)
            np.testing.assert_array_equal(got.astype(np.complex128), (x + x).astype(np.complex128))
    donating = secant.jit(lambda x: x + 1, donate_argnums=0)
    (a,) = _dev(np.ones(3))
    donating(a)
    with pytest.raises(secant.SecantError, match="donated"):
        np.asarray(a)


def test_numpy_arguments_c_plus_plus_narrows_as_secant_does():
    g = secant.jit(lambda x, y: x * y)
    for x in (np.linspace(0, 1, 4), np.arange(4), np.arange(4, dtype=np.uint64),
              np.linspace(0, 1, 4) + 1j):
        for _ in range(3):
            got = g(x, x)
            want = snp.asarray(x) * snp.asarray(x)
            assert got.dtype == want.dtype and got.dtype.itemsize <= 8
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    if g._cpp is not None:      # (one device: the calls after the first ran in C++)
        assert g._cpp._cache_size() == 4


def test_outputs_do_not_alias_numpy_inputs_put_by_c_plus_plus():
    # C++ puts NumPy arguments without a copy: an output that is an input (or a view of one)
    # must still be its own memory, unchanged when the caller writes the input afterwards
    for fn in (lambda x: x, lambda x: x.reshape(2, 2), lambda x: x[1:]):
        g = secant.jit(fn)
        for _ in range(3):
            a = np.arange(4, dtype=np.float32)
            out = g(a)
            a[:] = 100
            np.testing.assert_array_equal(np.asarray(out).ravel(), np.arange(4)[4 - out.size:])


def test_several_outputs_through_c_plus_plus_keep_their_structure():
    from secant import api
    x = np.arange(3, dtype=np.float32)
    for fn in (lambda x, y: (x + y,), lambda x, y: [x * y], lambda x, y: {"a": x, "b": (y, x)},
               lambda x, y: (x - y, {"p": [x * y]}), lambda x, y: x + y):
        g = secant.jit(fn)
        old = api._CPP_DISPATCH
        api._CPP_DISPATCH = False
        try:
            plain = secant.jit(fn)
        finally:
            api._CPP_DISPATCH = old
        for _ in range(3):
            got, want = g(x, x + 1), plain(x, x + 1)
            gl, gt = secant.tree_util.tree_flatten(got)
            wl, wt = secant.tree_util.tree_flatten(want)
            assert gt == wt and all(type(v) is Array for v in gl)
            for a, b in zip(gl, wl):
                assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type)
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        if g._cpp is not None:
            assert g._cpp._cache_size() == 1
