"""issue 15 (lib15e): jax's top-level names secant lacked: the configuration states as context
managers (enable_x64 switching dtypes, states that only change speed or logging accepted,
states whose other values secant does not have refused at the user's line), disable_jit
(jit(f) runs f eagerly inside, compiles again after), typeof, linear_transpose (against the
matrix's transpose; a nonlinear function refused), checkpoint_policies (the same gradients as
no checkpoint), host_count / host_id / process_indices, float0, print_environment_info."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

rng = np.random.default_rng(15)
M = rng.normal(size=(3, 4)).astype(np.float32)


def test_enable_x64_as_a_context_manager():
    assert not secant.enable_x64.value
    with secant.enable_x64():
        assert secant.enable_x64.value and snp.ones(2).dtype == np.float64
        with secant.enable_x64(False):
            assert snp.arange(3).dtype == np.int32
        assert snp.arange(3).dtype == np.int64
    assert snp.ones(2).dtype == np.float32 and not secant.enable_x64.value


def test_states_that_change_no_result_are_accepted_and_restored():
    f = secant.jit(lambda a, b: a @ b)
    want = M @ M.T
    with secant.default_matmul_precision("highest"), secant.log_compiles(), \
            secant.numpy_rank_promotion("allow"), secant.default_device(secant.devices()[0]), \
            secant.transfer_guard("allow"), secant.checking_leaks():
        assert secant.default_matmul_precision.value == "highest"
        np.testing.assert_allclose(np.asarray(f(M, M.T)), want, rtol=1e-5)
    assert secant.default_matmul_precision.value is None
    assert not secant.log_compiles.value and not secant.check_tracer_leaks.value


@pytest.mark.parametrize("state, value", [("debug_nans", True), ("numpy_rank_promotion", "raise"),
                                          ("default_prng_impl", "rbg"),
                                          ("numpy_dtype_promotion", "strict")])
def test_states_secant_does_not_have_are_refused(state, value):
    with pytest.raises(secant.UnsupportedError, match=f"{state}") as info:
        with getattr(secant, state)(value):
            pass
    assert "test_lib15e_api.py" in str(info.value)
    assert getattr(secant, state).value != value        # (left as it was)


def test_disable_jit_runs_the_function_eagerly():
    seen = []

    @secant.jit
    def f(x):
        seen.append(type(x).__name__)
        return snp.sin(x) * 2
    x = np.linspace(0, 1, 3).astype(np.float32)
    with secant.disable_jit():
        eager = f(x)
        assert seen == ["ndarray"]
        with secant.disable_jit(False):
            pass
        f(x)
        assert seen == ["ndarray", "ndarray"]
    np.testing.assert_allclose(np.asarray(eager), 2 * np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x)), 2 * np.sin(x), rtol=1e-6)
    assert seen[-1] == "Tracer"         # (compiled again once the block is left)


def test_typeof():
    assert secant.typeof(snp.ones((2, 3))).shape == (2, 3)
    assert secant.typeof(snp.ones((2, 3))).dtype == np.float32
    assert secant.typeof(1.0).weak_type and not secant.typeof(np.float32(1)).weak_type


def test_linear_transpose_of_a_matrix_product_is_the_transpose():
    t = secant.linear_transpose(lambda x: snp.dot(M, x), np.zeros(4, np.float32))
    ct = rng.normal(size=3).astype(np.float32)
    (got,) = t(ct)
    np.testing.assert_allclose(np.asarray(got), M.T @ ct, rtol=1e-5)
    two = secant.linear_transpose(lambda x, y: (x[0] * 3.0, snp.sum(x) + 2 * y),
                                  secant.ShapeDtypeStruct((2,), np.float32), 1.0)
    gx, gy = two((np.float32(2.0), np.float32(1.0)))
    np.testing.assert_allclose(np.asarray(gx), [7.0, 1.0])
    np.testing.assert_allclose(float(gy), 2.0)
    # a constant term is dropped, as JAX's
    (shifted,) = secant.linear_transpose(lambda x: x + 1.0, np.zeros(2, np.float32))(np.ones(2))
    np.testing.assert_allclose(np.asarray(shifted), [1.0, 1.0])


def test_linear_transpose_refuses_what_is_not_linear():
    with pytest.raises(secant.SecantValueError, match="not linear"):
        secant.linear_transpose(lambda x: x * x, np.ones(2, np.float32))
    with pytest.raises(secant.SecantTypeError, match="float or complex"):
        secant.linear_transpose(lambda x: x, np.ones(2, np.int32))


def layer(w, x):
    return snp.sum(snp.tanh(w @ snp.tanh(w @ x)))


@pytest.mark.parametrize("policy", [
    secant.checkpoint_policies.dots_saveable, secant.checkpoint_policies.nothing_saveable,
    secant.checkpoint_policies.everything_saveable,
    secant.checkpoint_policies.save_only_these_names("hidden")])
def test_checkpoint_policies_give_the_same_gradients(policy):
    w = rng.normal(size=(3, 3))
    x = rng.normal(size=3)
    want = secant.grad(layer)(w, x)
    got = secant.grad(secant.checkpoint(layer, policy=policy))(w, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    jitted = secant.jit(secant.grad(secant.remat(layer, policy=policy)))(w, x)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_process_names_and_environment():
    assert secant.process_indices() == list(range(secant.process_count()))
    assert secant.host_count() == secant.process_count() and secant.host_id() == 0
    assert secant.host_ids() == [0]
    assert secant.float0 == secant.dtypes.float0
    text = secant.print_environment_info(return_string=True)
    assert "secant:" in text and "numpy:" in text


def _doubled_but_first(s):
    r = s * 3.0
    factors = np.full(snp.shape(r)[-1], 2.0)     # a NumPy constant, changed in place
    factors[0] = 1.0
    return r * factors


def test_a_callee_s_numpy_constant_changed_in_place():
    x = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(_doubled_but_first(x)), [0.0, 6.0, 12.0])
    g = secant.grad(lambda s: snp.sum(_doubled_but_first(s)))(x)
    np.testing.assert_allclose(np.asarray(g), [3.0, 6.0, 6.0])


def _axes_last(z):
    outer = tuple(i for i in range(snp.ndim(z)) if i != 0 and i != 1)
    return snp.transpose(z, outer + (0, 1))


def test_a_tuple_of_a_filtered_generator_under_vmap():
    # tuple(i for i in ... if a and b) of static ints is a tuple (it was built as a list under
    # vmap: `outer + (0, 1)` raised TypeError, can only concatenate list)
    z = rng.normal(size=(5, 2, 3, 4))
    want = np.stack([np.transpose(a, (2, 0, 1)) for a in z])
    for f in (secant.vmap(_axes_last), secant.jit(secant.vmap(_axes_last))):
        np.testing.assert_allclose(np.asarray(f(z)), want, rtol=1e-6)


def test_sequential_vmap_runs_one_example_at_a_time():
    seen = []

    @secant.custom_batching.sequential_vmap
    def f(x, w):
        seen.append(np.shape(x))
        return snp.sin(x) * w
    xs = rng.normal(size=(3, 2)).astype(np.float32)
    want = np.sin(xs) * 2.0
    np.testing.assert_allclose(np.asarray(secant.vmap(f, in_axes=(0, None))(xs, 2.0)), want,
                               rtol=1e-6)
    assert seen == [(2,)] * 3
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f, in_axes=(0, None)))(xs, 2.0)),
                               want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(xs[0], 2.0)), want[0], rtol=1e-6)
    assert secant.custom_derivatives.custom_jvp is secant.custom_jvp
    assert secant.custom_batching.custom_vmap is secant.custom_vmap


def test_typing_device_and_lax_dtype():
    def f(x: secant.typing.ArrayLike, dt: secant.typing.DTypeLike = None):
        return x
    assert f.__annotations__["x"] is secant.typing.ArrayLike
    assert all(isinstance(d, secant.Device) for d in secant.devices())
    assert secant.lax.dtype(1.0) == np.float32 and secant.lax.dtype(np.int64(3)) == np.int32
    with secant.enable_x64():
        assert secant.lax.dtype(1.0) == np.float64
    got = secant.vmap(lambda x: x * np.ones((), secant.lax.dtype(x)))(np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(got), [0.0, 1.0, 2.0])
    with pytest.raises(secant.SecantTypeError, match="Cannot determine dtype"):
        secant.lax.dtype([1, 2])


def test_debug_log_goes_through_logging(caplog):
    def f(x):
        secant.debug.log("x is {x}", x=x)
        return snp.sum(x * x)
    x = np.arange(3.0, dtype=np.float32)
    with caplog.at_level("INFO", logger="secant.debug"):
        f(x)
        secant.jit(f)(x)
        np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), 2 * x)
    logged = [r.getMessage() for r in caplog.records if r.name == "secant.debug"]
    assert len(logged) == 3 and all(m == "x is [0. 1. 2.]" for m in logged)
