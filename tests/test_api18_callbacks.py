"""jax.pure_callback under vmap (each vmap_method as JAX documents it) and grad (JAX's error;
a custom_jvp around it differentiates), jax.debug.callback under vmap: checked against the
callback's own results and the shapes it was called with."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

XS = np.arange(6.0, dtype=np.float32).reshape(3, 2)
W = np.array([10.0, 20.0], np.float32)


def recorder():
    seen = []

    def host(x, w):
        seen.append((np.shape(x), np.shape(w)))
        return np.asarray(np.sin(x) * w, np.float32)
    return host, seen


def call(host, method):
    def f(x, w):
        shape = secant.ShapeDtypeStruct(snp.shape(x), snp.float32)
        if method is None:
            return secant.pure_callback(host, shape, x, w)
        return secant.pure_callback(host, shape, x, w, vmap_method=method)
    return f


EXPECTED = np.sin(XS) * W


@pytest.mark.parametrize("method, shapes", [
    ("sequential", [((2,), (2,))] * 3),
    ("sequential_unrolled", [((2,), (2,))] * 3),
    ("expand_dims", [((3, 2), (1, 2))]),
    ("broadcast_all", [((3, 2), (3, 2))]),
    ("legacy_vectorized", [((3, 2), (2,))])])
def test_pure_callback_vmap_methods(method, shapes):
    host, seen = recorder()
    f = call(host, method)
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(XS, W), EXPECTED, rtol=1e-6)
    assert seen == shapes
    seen.clear()
    np.testing.assert_allclose(secant.jit(secant.vmap(f, in_axes=(0, None)))(XS, W), EXPECTED,
                               rtol=1e-6)
    assert seen == shapes
    seen.clear()            # a batch axis elsewhere: moved to the front
    np.testing.assert_allclose(secant.vmap(f, in_axes=(1, None))(XS.T, W), EXPECTED, rtol=1e-6)
    assert seen == shapes


def test_pure_callback_vmap_without_a_method_and_grad_are_jax_s_errors():
    host, _ = recorder()
    with pytest.raises(NotImplementedError, match="vmap_method"):
        secant.vmap(call(host, None), in_axes=(0, None))(XS, W)
    f = call(host, "sequential")
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        secant.grad(lambda x: snp.sum(f(x, W)))(XS[0])
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        secant.jvp(lambda x: f(x, W), (XS[0],), (XS[0],))


@secant.custom_jvp
def host_sin(x):
    return secant.pure_callback(lambda v: np.sin(v).astype(np.float32),
                                secant.ShapeDtypeStruct(snp.shape(x), snp.float32), x,
                                vmap_method="sequential")


@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return host_sin(x), snp.cos(x) * x_dot


def test_pure_callback_inside_custom_jvp_differentiates_and_batches():
    g = secant.grad(lambda x: snp.sum(host_sin(x)))(XS[1])
    np.testing.assert_allclose(g, np.cos(XS[1]), rtol=1e-6)
    gs = secant.vmap(secant.grad(lambda x: snp.sum(host_sin(x))))(XS)
    np.testing.assert_allclose(gs, np.cos(XS), rtol=1e-6)


def test_debug_callback_under_vmap_sees_each_example():
    seen = []

    def f(x):
        secant.debug.callback(lambda v: seen.append(np.asarray(v)), x)
        return x * 2
    np.testing.assert_allclose(secant.vmap(f)(XS), XS * 2)
    assert [s.tolist() for s in seen] == XS.tolist()
    seen.clear()
    np.testing.assert_allclose(secant.jit(secant.vmap(f))(XS), XS * 2)
    assert [s.tolist() for s in seen] == XS.tolist()
