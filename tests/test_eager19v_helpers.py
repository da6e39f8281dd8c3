"""Issue 19 (eager19v): the eager derivative's helpers for float matrices give what the helpers
give.

grad's eager run calls matmul_grad_x, matmul_grad_y and unbroadcast in versions for eager float
arrays of one dtype (secant/raw_eager.py helpers_version): each must give the helper's own
result (values bit for bit, dtype, shape, weak type) and hand anything else to the helper. The
transforms still read the helpers as written (grad of grad). No timings here."""
import functools

import numpy as np
import pytest
from secant.ad import helpers
from secant.backends.array import Array
from secant.backends.core import quiet_enter, quiet_exit

import secant
import secant.numpy as snp
from secant import raw_eager

_FAST = [(helpers.matmul_grad_x, raw_eager._fast_matmul_grad_x),
         (helpers.matmul_grad_y, raw_eager._fast_matmul_grad_y)]


def _value(shape, dtype, seed):
    v = np.random.default_rng(seed).normal(size=shape)
    return v.astype(dtype) if shape else dtype(v)


def _array(shape, dtype, weak, seed):
    """An eager Array of that shape and dtype, weakly typed or not (as a Python number's)."""
    return Array._wrap(np.asarray(_value(shape, dtype, seed)), weak)


def _same(got, want):
    assert type(got) is type(want)
    if isinstance(want, type):      # (the same error)
        assert got is want
        return
    if type(want) is not Array:     # (NumPy's values: the helper's own computation)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype, got.weak_type) == (w.shape, w.dtype, want.weak_type)
    np.testing.assert_array_equal(g, w)


def _run(fn, *args):
    token = quiet_enter()       # (grad's eager run holds the quiet state)
    try:
        return fn(*args)
    except Exception as e:      # noqa: BLE001  (the helper's own error is the answer)
        return type(e)
    finally:
        quiet_exit(token)


# (t's shape, x's shape, y's shape): matrices (the fast case), t broadcast from x @ y's shape,
# vectors, stacks, shapes that do not fit
_MATMUL_SHAPES = [((3, 4), (3, 5), (5, 4)), ((1, 1), (1, 2), (2, 1)), ((2, 3, 4), (3, 5), (5, 4)),
                  ((3, 1), (3, 5), (5, 4)), ((4,), (5,), (5, 4)), ((3,), (3, 5), (5,)),
                  ((2, 3, 4), (2, 3, 5), (2, 5, 4)), ((3, 4), (3, 5), (6, 4)), ((), (5,), (5,))]


@pytest.mark.parametrize("shapes", _MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [(np.float32,) * 3, (np.float64,) * 3,
                                    (np.float32, np.float64, np.float32),
                                    (np.float16,) * 3, (np.int32,) * 3], ids=str)
def test_matmul_grads_are_the_helpers(shapes, dtypes, x64_or_not):
    for weak in [(False, False, False), (True, True, True), (True, False, True),
                 (False, True, False), (True, True, False), (False, False, True)]:
        args = [_array(s, d, w, i) for i, (s, d, w) in enumerate(zip(shapes, dtypes, weak))]
        for helper, fast in _FAST:
            _same(_run(fast, *args), _run(helper, *args))
        # NumPy arrays and Python numbers go to the helper as they are
        plain = [np.asarray(a) for a in args]
        for helper, fast in _FAST:
            _same(_run(fast, *plain), _run(helper, *plain))


_UNBROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (1, 4)), ((3, 4), (3, 1)),
                       ((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 1, 1)), ((3, 4), ()),
                       ((3, 4), (5,)), ((4,), (3, 4)), ((1, 4), (4,)), ((3, 0), (0,))]


@pytest.mark.parametrize("shapes", _UNBROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [(np.float32,) * 2, (np.float64,) * 2,
                                    (np.float64, np.float32), (np.float32, np.float16),
                                    (np.float32, np.int32), (np.complex64, np.float32)], ids=str)
def test_unbroadcast_is_the_helper(shapes, dtypes, x64_or_not):
    for weak in [(False, False), (True, False), (False, True)]:
        t, x = [_array(s, d, w, i) for i, (s, d, w) in enumerate(zip(shapes, dtypes, weak))]
        _same(_run(raw_eager._fast_unbroadcast, t, x), _run(helpers.unbroadcast, t, x))
        _same(_run(raw_eager._fast_unbroadcast, t, np.asarray(x)),
              _run(helpers.unbroadcast, t, np.asarray(x)))


def _mlp(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    logp = logits - snp.log(snp.sum(snp.exp(logits), axis=1, keepdims=True))
    return -snp.mean(snp.sum(logp * y, axis=1))


def _mlp_data(dtype=np.float32):
    rng = np.random.default_rng(0)
    params = {"w1": rng.normal(size=(6, 5)) / 3, "b1": rng.normal(size=5),
              "w2": rng.normal(size=(5, 3)) / 3, "b2": rng.normal(size=(3,))}
    params = {k: v.astype(dtype) for k, v in params.items()}
    x = rng.normal(size=(4, 6)).astype(dtype)
    y = np.eye(3, dtype=dtype)[[0, 2, 1, 2]]
    return params, x, y


def test_mlp_gradient_is_the_helpers_one_and_the_derivative():
    """grad of an MLP loss (dict parameters, matrix products, biases) with the fast helpers:
    bit for bit the run with the helpers as written, and within float32 rounding of float64
    central differences."""
    params, x, y = _mlp_data()
    g = secant.grad(_mlp)
    got = g(params, x, y)
    gen = g.__secant_current__()
    fast = raw_eager.helpers_version(gen)
    assert fast is not gen and fast.__code__ is gen.__code__      # (its helpers replaced)
    asarrays = {k: snp.asarray(v) for k, v in params.items()}
    token = quiet_enter()
    try:
        want = gen(asarrays, snp.asarray(x), snp.asarray(y))        # the helpers as written
    finally:
        quiet_exit(token)
    assert list(got) == sorted(params)
    for k in params:
        _same(got[k], want[k])
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    f64 = (lambda p: float(np.asarray(_mlp(p, x.astype(np.float64), y.astype(np.float64)))))
    with _x64():
        for k, v in p64.items():
            fd = np.zeros_like(v)
            for i in np.ndindex(v.shape):
                e = np.zeros_like(v)
                e[i] = 1e-6
                fd[i] = (f64({**p64, k: v + e}) - f64({**p64, k: v - e})) / 2e-6
            np.testing.assert_allclose(np.asarray(got[k]), fd, rtol=2e-4, atol=2e-6)


class _x64:
    def __enter__(self):
        secant.config.update("enable_x64", True)

    def __exit__(self, *exc):
        secant.config.update("enable_x64", False)


def test_second_order_reads_the_helpers_as_written():
    """The hessian of a matrix product's loss (the transforms read matmul_grad_y's source: its
    eager version is not theirs) against the closed form: d2/dw2 sum((x @ w)**2) =
    2 x.T x on each column."""
    x = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    w = np.random.default_rng(2).normal(size=(3, 2)).astype(np.float32)
    hess = secant.hessian(lambda w: snp.sum((x @ w) ** 2))(w)
    want = np.zeros((3, 2, 3, 2), np.float32)
    for j in range(2):
        want[:, j, :, j] = 2 * x.T @ x
    np.testing.assert_allclose(np.asarray(hess), want, rtol=1e-5, atol=1e-5)
    # grad of grad: the eager derivative of a derivative that calls the helpers
    gg = secant.grad(lambda w: snp.sum(secant.grad(lambda v: snp.sum(snp.sin(x @ v)))(w) ** 2))
    got = np.asarray(gg(w))
    w64, x64 = w.astype(np.float64), x.astype(np.float64)

    def f64(v):
        return np.sum((x64.T @ np.cos(x64 @ v)) ** 2)
    fd = np.zeros_like(w64)
    for i in np.ndindex(w.shape):
        e = np.zeros_like(w64)
        e[i] = 1e-6
        fd[i] = (f64(w64 + e) - f64(w64 - e)) / 2e-6
    np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-4)


def test_closure_cells_are_read_live_and_plain_derivatives_kept():
    """A derivative's own closure cells are kept (a nonlocal read when it runs, not frozen by
    helpers_version); a derivative that calls none of the helpers is run as it is."""
    scale = [2.0]
    w0 = np.ones((3, 2), np.float32)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def make():
        k = snp.asarray(np.float32(scale[0]))

        def loss(w):
            return snp.sum((x @ w) * k)

        def set_k(v):
            nonlocal k
            k = snp.asarray(np.float32(v))
        return loss, set_k
    loss, set_k = make()
    g = secant.grad(loss)
    np.testing.assert_allclose(np.asarray(g(w0)), 2.0 * x.T @ np.ones((2, 2)), rtol=1e-6)
    set_k(3.0)
    np.testing.assert_allclose(np.asarray(g(w0)), 3.0 * x.T @ np.ones((2, 2)), rtol=1e-6)

    def no_helpers(a, b):
        return a * b
    assert raw_eager.helpers_version(no_helpers) is no_helpers


def test_dict_parameters_keep_their_order_and_dtypes(x64_or_not):
    """grad's wrapper converts a dict of NumPy parameters and returns their cotangents without
    a tree_map where each is in its parameter's dtype: the dict in the registry's key order,
    as before; mixed dtypes (float16, float64 without x64) take the general path."""
    rng = np.random.default_rng(3)
    params = {"z": rng.normal(size=(3,)).astype(np.float32),
              "a": rng.normal(size=(2, 3)).astype(np.float32),
              "m": rng.normal(size=(3,)).astype(np.float16),
              "d": rng.normal(size=(3,))}            # float64
    x = rng.normal(size=(2, 3)).astype(np.float32)

    def loss(p, x):
        return snp.sum(snp.sin(x * p["a"] + p["z"]) * p["m"]) + snp.sum(p["d"] ** 2)
    got = secant.grad(loss)(params, x)
    assert list(got) == sorted(params)
    wide = np.float64 if secant.config.read("enable_x64") else np.float32
    assert {k: np.asarray(v).dtype for k, v in got.items()} == {
        "z": np.float32, "a": np.float32, "m": np.float16, "d": wide}
    a, z, m, d = (params[k].astype(np.float64) for k in "azmd")
    u = x * a + z
    np.testing.assert_allclose(np.asarray(got["a"]), np.cos(u) * m * x, rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(got["z"]), (np.cos(u) * m).sum(0), rtol=2e-3,
                               atol=1e-3)
    np.testing.assert_allclose(np.asarray(got["m"]), np.sin(u).sum(0), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(got["d"]), 2 * d, rtol=1e-5)
    # one dtype throughout: the fast path, the same keys and values as a tree_map's
    same = {k: v.astype(np.float32) for k, v in params.items()}
    got = secant.grad(loss)(same, x)
    assert list(got) == sorted(same)
    assert all(np.asarray(v).dtype == np.float32 for v in got.values())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=str)
def test_mean_grad_to_and_seed_are_the_helpers(dtype, x64_or_not):
    held = [Array._wrap_ndarray(dtype(-1.5), False), Array._wrap_ndarray(dtype(2.0), True),
            Array._wrap(np.asarray(0.25, dtype), False), Array._wrap(np.ones(3, dtype), False)]
    for t in held:
        for shape in [(), (3,), (2, 3), (0, 3), (1, 1), (2, 3, 4)]:
            for kw in [{}, {"summed": 1}, {"summed": (0,)}, {"axis": 0}, {"keepdims": True}]:
                if ("axis" in kw or "summed" in kw) and not shape:
                    continue
                _same(_run(functools.partial(raw_eager._fast_mean_grad_to, t, shape, **kw)),
                      _run(functools.partial(helpers.mean_grad_to, t, shape, **kw)))
    for x in held:
        for y in held + [np.ones(2, dtype), Array._wrap(np.ones(2, np.int32), False)]:
            _same(_run(raw_eager._fast_grad_seed_like, x, y), _run(helpers.grad_seed_like, x, y))
        _same(_run(raw_eager._fast_grad_seed_like, x), _run(helpers.grad_seed_like, x))


def test_helpers_version_of_a_method_is_the_method():
    class Holder:
        def loss_grad(self, t, x, y):
            return helpers.matmul_grad_x(t, x, y)
    m = Holder().loss_grad
    assert raw_eager.helpers_version(m) is m
