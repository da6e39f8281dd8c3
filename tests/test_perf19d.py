"""Issue 19 (perf19d): grad's eager seed taken at once for float outputs (grad_seed of a 0-d
array, grad_seed_like of a float array) gives what the general path gives: same value, dtype,
shape and weak type, and the same refusals. No timings here."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad.helpers import grad_seed, grad_seed_like
from secant.backends.array import Array


def _zero_d_arrays(dtype):
    """0-d Arrays of `dtype` held as 0-d ndarrays (not as NumPy scalars), strong and weak."""
    strong = Array._wrap(np.asarray(0.5, dtype))
    weak = Array._wrap(np.asarray(0.5, dtype), True)
    reduced = snp.sum(snp.ones((3,), dtype))
    return [strong, weak, reduced]


def _same(got, want):
    assert type(got) is Array
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert type(np.asarray(got)) is np.ndarray


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_grad_seed_of_a_zero_d_array_is_ones_like(dtype, x64_or_not):
    for out in _zero_d_arrays(dtype):
        _same(grad_seed(out), snp.ones_like(out))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_seed_like_is_the_seed_of_a_scalar_of_that_dtype(dtype, x64_or_not):
    for x in (snp.asarray(np.linspace(0, 1, 4, dtype=dtype)), snp.asarray(np.asarray(2.0, dtype)),
              snp.sin(snp.asarray(np.dtype(dtype).type(0.3))), snp.asarray(1.5),
              Array._wrap(np.ones((2, 3), dtype), True)):
        want = snp.ones_like(snp.zeros((), snp.result_type(x)))
        _same(grad_seed_like(x), want)


def test_seeds_still_refuse_int_and_complex_outputs():
    with pytest.raises(secant.SecantError, match="floating-point"):
        grad_seed_like(snp.arange(3))
    with pytest.raises(secant.SecantError, match="holomorphic"):
        grad_seed(Array._wrap(np.asarray(1 + 2j, np.complex64)))
    with pytest.raises(secant.SecantError, match="scalar output"):
        grad_seed(snp.ones((2,)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_of_a_summed_chain_matches_the_closed_form(dtype, x64_or_not):
    def chain(x):
        for _ in range(3):
            x = snp.sin(x)
        return snp.sum(x)
    x = np.linspace(-1, 1, 5, dtype=dtype)
    got = secant.grad(chain)(x)
    assert got.dtype == snp.asarray(x).dtype and got.shape == (5,) and not got.weak_type
    v, d = x.astype(np.float64), np.ones(5)
    for _ in range(3):
        v, d = np.sin(v), d * np.cos(v)
    np.testing.assert_allclose(np.asarray(got), d, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(chain))(x)), d, rtol=1e-5)


# --- C++ dispatch of calls with NumPy arguments (SECANT_CPP_DISPATCH=0: off): the same results
# as the Python warm path --------------------------------------------------------------------------
def _jits(fn, monkeypatch):
    """(jit through jaxlib's C++ dispatcher, jit through the Python path) of `fn`."""
    from secant import api
    monkeypatch.setattr(api, "_CPP_DISPATCH", True)
    with_cpp = secant.jit(fn)
    monkeypatch.setattr(api, "_CPP_DISPATCH", False)
    plain = secant.jit(fn)
    if api._cpp_dispatcher(with_cpp) is None:
        pytest.skip("this jaxlib has no C++ dispatcher, or several devices")
    return with_cpp, plain


def _agree(got, want):
    assert type(got) is Array and type(want) is Array
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _g(a, b):
    return a * b + snp.sum(a) + 1.5


def _plus(a, b):
    return a + b        # a weak float32 array and a float16 one: float16 (strong: float32)


def test_cpp_dispatch_matches_the_python_path_for_each_kind_of_argument(monkeypatch):
    with_cpp, plain = _jits(_g, monkeypatch)
    a32 = np.linspace(0, 1, 4, dtype=np.float32)
    b32 = np.linspace(1, 2, 4, dtype=np.float32)
    dev_a, dev_b = secant.device_put((a32, b32))
    weak = secant.jit(lambda v: v * 2.0)(snp.asarray(1.0))     # a weak device array
    assert weak.weak_type and weak._buf is not None
    cases = [(a32, b32), (dev_a, dev_b), (dev_a, b32), (snp.asarray(a32), b32),
             (a32.astype(np.float64), b32), (np.arange(4), np.arange(4)),
             (np.arange(4, dtype=np.int32), b32), (weak, b32), (a32, 2.0), (a32[:2], b32[:2]),
             (np.float32(3.0), b32), (True, b32)]
    for _ in range(3):      # first calls miss, later ones hit C++'s cache where it took them
        for args in cases:
            _agree(with_cpp(*args), plain(*args))
    assert with_cpp._cpp._cache_size() > 0      # the C++ path really ran
    out = with_cpp(dev_a, dev_b)                # its output, fed back in
    _agree(with_cpp(out, out), plain(out, out))
    with_cpp, plain = _jits(_plus, monkeypatch)
    h16 = np.ones(4, np.float16)
    for _ in range(2):
        for args in [(dev_a, h16), (weak, h16), (h16, weak), (weak, weak), (dev_a, dev_a)]:
            _agree(with_cpp(*args), plain(*args))


def test_cpp_dispatch_steps_aside_under_x64(monkeypatch, x64):
    with_cpp, plain = _jits(_g, monkeypatch)
    a = np.linspace(0, 1, 4)
    for _ in range(2):
        _agree(with_cpp(a, a), plain(a, a))
        assert with_cpp(a, a).dtype == np.float64
        _agree(with_cpp(a.astype(np.float32), a), plain(a.astype(np.float32), a))


def test_cpp_dispatch_after_x64_was_on_and_off(monkeypatch):
    def make_ones(a):
        return a + snp.ones(a.shape)        # float64 under x64, float32 without
    with_cpp, plain = _jits(make_ones, monkeypatch)
    a = np.ones(3, np.float32)
    _agree(with_cpp(a), plain(a))
    secant.config.update("enable_x64", True)
    try:
        _agree(with_cpp(a), plain(a))
        assert with_cpp(a).dtype == np.float64
    finally:
        secant.config.update("enable_x64", False)
    _agree(with_cpp(a), plain(a))
    assert with_cpp(a).dtype == np.float32


def test_cpp_dispatch_keeps_the_cache_bound(monkeypatch):
    traces = []

    def h(x):
        traces.append(x.shape)
        return x + 1
    with_cpp, _ = _jits(h, monkeypatch)
    old = secant.config.read("jit_cache_size")
    secant.config.update("jit_cache_size", 1)
    try:
        a1, a2 = np.zeros(1, np.float32), np.zeros(2, np.float32)
        for _ in range(2):
            with_cpp(a1)
        assert traces == [(1,)] and with_cpp._cpp._cache_size() == 1
        with_cpp(a2)                # drops a1's entry: C++ forgets its signatures too
        assert with_cpp._cpp._cache_size() <= 1
        np.testing.assert_array_equal(np.asarray(with_cpp(a1)), [1])
        assert traces == [(1,), (2,), (1,)] and with_cpp._cache_size() == 1
    finally:
        secant.config.update("jit_cache_size", old)


def test_cpp_dispatch_results_do_not_see_numpy_inputs_changed_after_the_call(monkeypatch):
    def f(a, b):
        return (a * b + a) * 2.0 - b
    with_cpp, _ = _jits(f, monkeypatch)
    a, b = np.ones(2_000_000, np.float32), np.ones(2_000_000, np.float32)
    with_cpp(a, b), with_cpp(a, b)
    assert with_cpp._cpp._cache_size() == 1        # what follows runs in C++
    for _ in range(10):     # (C++ reads NumPy memory in place: without waiting, most differ)
        a[:] = 1.0
        out = with_cpp(a, b)
        a[:] = 100.0
        assert np.all(np.asarray(out) == 3.0)


# --- hygiene.copy_tree: copy.deepcopy of a syntax tree, faster -----------------------------------
@pytest.mark.parametrize("kind", ["ast", "gast"])
def test_copy_tree_is_deepcopy_of_a_syntax_tree(kind):
    import ast
    import copy
    import gast
    from secant.transformer import hygiene, normalize
    mod = ast if kind == "ast" else gast
    with open(normalize.__file__) as f:
        tree = mod.parse(f.read())
    shared = tree.body[0]
    tree.body.append(shared)            # a subtree reached twice: copied once, as deepcopy does
    tree.body[0].extra = {"a": [1]}     # an attribute of another kind: deep-copied
    got, want = hygiene.copy_tree(tree), copy.deepcopy(tree)
    assert mod.dump(got, include_attributes=True) == mod.dump(want, include_attributes=True)
    originals = {id(n) for n in ast.walk(tree)}
    assert not any(id(n) in originals for n in ast.walk(got))
    assert got.body[0] is got.body[-1] and got.body[0] is not shared
    assert got.body[0].extra == {"a": [1]} and got.body[0].extra is not shared.extra
    assert [type(n) for n in ast.walk(got)] == [type(n) for n in ast.walk(tree)]


def test_cpp_dispatch_gives_way_to_the_python_path_for_calls_it_cannot_take(monkeypatch):
    seen = []

    def two(a, b):      # a host callback: C++ cannot take the signature
        secant.debug.callback(lambda v: seen.append(float(v)), snp.sum(b))
        return a + b, a * b
    with_cpp, plain = _jits(two, monkeypatch)
    a = np.arange(3, dtype=np.float32)
    for i in range(12):
        got, want = with_cpp(a, a + i), plain(a, a + i)
        for g, w in zip(got, want):
            _agree(g, w)
    assert not with_cpp._cpp_ok         # after a few refusals: the Python path only
    assert seen == [3.0 + 3 * i for i in range(12) for _ in range(2)]   # each call ran it
