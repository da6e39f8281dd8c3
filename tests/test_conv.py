"""lax.conv_general_dilated / conv_transpose / reduce_window and nn's pooling beyond the shared
table (tests/library_cases/conv.py): SciPy's correlate, the StableHLO they lower to, the
transposes against the dot-product identity, vmap over each operand against a loop, second
order, a small CNN's gradient, errors."""
import numpy as np
import pytest
import scipy.signal

import secant
import secant.numpy as snp
import secant.nn as nn
from secant import lax
from secant.ad.conv_helpers import conv_grad_lhs, conv_grad_rhs
from tests.library_cases.conv import ref_conv

RNG = np.random.default_rng(0)


def normal(*shape, dtype=np.float64):
    return RNG.normal(size=shape).astype(dtype)


def test_single_channel_conv_is_scipy_correlate(x64):
    x, w = normal(9, 7), normal(3, 4)
    out = lax.conv_general_dilated(x[None, None], w[None, None], (1, 1), "VALID")
    np.testing.assert_allclose(np.asarray(out)[0, 0], scipy.signal.correlate(x, w, "valid"),
                               rtol=1e-12)
    full = lax.conv(x[None, None], w[None, None], (1, 1), ((2, 2), (3, 3)))
    np.testing.assert_allclose(np.asarray(full)[0, 0], scipy.signal.correlate(x, w, "full"),
                               rtol=1e-12)



@pytest.mark.parametrize("xs, ws, kw", [
    ((2, 4, 7), (6, 2, 3), dict(strides=(2,), padding="SAME", feature_group_count=2)),
    ((1, 2, 5, 6), (3, 2, 2, 3), dict(strides=(1, 2), padding=((1, 0), (0, 2)),
                                      rhs_dilation=(2, 1))),
    ((1, 2, 4, 5, 3), (1, 2, 2, 2, 2), dict(strides=(1, 1, 1), padding=[(1, 1)] * 3)),
    ((2, 4, 5, 4, 4), (4, 2, 2, 3, 2), dict(strides=(1, 2, 1), padding=((0, 1), (1, 0), (0, 0)),
                                            rhs_dilation=(2, 1, 1), lhs_dilation=(1, 1, 2),
                                            feature_group_count=2)),
    ((1, 5, 4, 3, 2), (3, 2, 2, 2, 3), dict(strides=(1, 1, 1), padding="SAME",
                                            dimension_numbers=("NDHWC", "DHWIO", "NCDHW"))),
], ids=["1d-groups", "2d-dilated", "3d", "3d-groups-dilated", "3d-ndhwc"])
def test_eager_and_jit_agree_with_a_loop_in_1_2_and_3_spatial_dimensions(x64, xs, ws, kw):
    """Eager 3-d convolutions failed (the einsum's spatial letters took 'c', the channel's),
    while jit's stablehlo.convolution gave the answer."""
    x, w = normal(*xs), normal(*ws)
    strides, padding = kw.pop("strides"), kw.pop("padding")
    want = ref_conv(x, w, strides, padding, **kw)
    got = lax.conv_general_dilated(x, w, strides, padding, **kw)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
    jitted = secant.jit(lambda x, w: lax.conv_general_dilated(x, w, strides, padding, **kw))
    np.testing.assert_allclose(np.asarray(jitted(x, w)), want, rtol=1e-10, atol=1e-12)


def test_lowers_to_stablehlo_convolution_and_reduce_window():
    x, w = normal(2, 5, 5, 3, dtype=np.float32), normal(3, 3, 3, 4, dtype=np.float32)

    def f(x, w):
        y = lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return snp.sum(nn.max_pool(y, (2, 2), padding="SAME"))
    text = secant.jit(f).lower(x, w).as_text()
    assert "stablehlo.convolution" in text and "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->" \
        "[b, 0, 1, f]" in text
    assert "stablehlo.reduce_window" in text
    assert float(secant.jit(f)(x, w)) == pytest.approx(float(f(x, w)), rel=1e-5)
    # the derivative's transposes are convolutions too
    grad_text = secant.jit(secant.grad(lambda x, w: snp.sum(lax.conv_general_dilated(
        x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2),
        argnums=(0, 1))).lower(x, w).as_text()
    assert grad_text.count("stablehlo.convolution") == 3


def conv_kw(window_strides, padding, lhs_dilation=None, rhs_dilation=None,
            dimension_numbers=None, feature_group_count=1, batch_group_count=1):
    """lax.conv_general_dilated's static arguments as one dict (transformed code is called with
    them spelled out: `**kw` is not read by the transforms)."""
    return dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                feature_group_count=feature_group_count, batch_group_count=batch_group_count)


def conv_fn(kw):
    s, p, ld, rd, dn, fg, bg = kw.values()

    def f(x, w):
        return lax.conv_general_dilated(x, w, s, p, ld, rd, dn, fg, bg)
    return f


@pytest.mark.parametrize("kw, xs, ws", [
    (conv_kw((2, 1), "SAME", rhs_dilation=(1, 2)), (2, 3, 7, 6), (4, 3, 3, 2)),
    (conv_kw((1, 2), ((1, 0), (2, -1)), lhs_dilation=(2, 1),
             dimension_numbers=("NHWC", "HWIO", "NHWC")), (2, 7, 6, 3), (3, 2, 3, 4)),
    (conv_kw((2,), "VALID", feature_group_count=2), (2, 4, 7), (6, 2, 3)),
    (conv_kw((1,), "SAME", batch_group_count=2), (4, 3, 7), (6, 3, 3)),
])
def test_transposes_satisfy_the_dot_product_identity(x64, kw, xs, ws):
    """<g, conv(dx, w)> == <conv_grad_lhs(g), dx> and likewise for w: the transposes are
    exact (conv is bilinear)."""
    x, w, dx, dw = normal(*xs), normal(*ws), normal(*xs), normal(*ws)
    y = np.asarray(lax.conv_general_dilated(x, w, **kw))
    g = normal(*y.shape)
    lhs = np.sum(g * np.asarray(lax.conv_general_dilated(dx, w, **kw)))
    assert lhs == pytest.approx(np.sum(np.asarray(conv_grad_lhs(g, x, w, **kw)) * dx), rel=1e-10)
    rhs = np.sum(g * np.asarray(lax.conv_general_dilated(x, dw, **kw)))
    assert rhs == pytest.approx(np.sum(np.asarray(conv_grad_rhs(g, x, w, **kw)) * dw), rel=1e-10)
    # and the secant.vjp of the op is these
    _, pullback = secant.vjp(conv_fn(kw), x, w)
    gx, gw = pullback(g)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(conv_grad_lhs(g, x, w, **kw)),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(conv_grad_rhs(g, x, w, **kw)),
                               rtol=1e-12)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 2)])
@pytest.mark.parametrize("groups", [dict(), dict(feature_group_count=2),
                                    dict(batch_group_count=2)])
def test_vmap_against_a_loop(in_axes, groups):
    kw = conv_kw((2, 1), "SAME", **groups)
    x = normal(4, 4, 5, 4, dtype=np.float32)
    w = normal(4, 2 if groups.get("feature_group_count") else 4, 2, 3, dtype=np.float32)
    xs = np.stack([x, x + 1, x * 2]) if in_axes[0] is not None else x
    ws = np.stack([w, w - 1, w * 0.5]) if in_axes[1] is not None else w
    xs = np.moveaxis(xs, 0, in_axes[0]) if in_axes[0] is not None else xs
    ws = np.moveaxis(ws, 0, in_axes[1]) if in_axes[1] is not None else ws

    f = conv_fn(kw)
    got = secant.vmap(f, in_axes=in_axes)(xs, ws)
    want = np.stack([np.asarray(f(np.take(xs, i, in_axes[0]) if in_axes[0] is not None else xs,
                                  np.take(ws, i, in_axes[1]) if in_axes[1] is not None else ws))
                     for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f, in_axes=in_axes))(xs, ws)),
                               want, rtol=1e-5, atol=1e-5)


def test_float32_gradient_and_jit_against_float64_finite_differences():
    x, w = normal(1, 2, 5, 5, dtype=np.float32), normal(3, 2, 3, 3, dtype=np.float32)

    def loss(x, w):
        return snp.sum(snp.tanh(lax.conv(x, w, (1, 1), "SAME")) ** 2)
    gx, gw = secant.grad(loss, argnums=(0, 1))(x, w)
    gxj, gwj = secant.jit(secant.grad(loss, argnums=(0, 1)))(x, w)
    assert np.asarray(gx).dtype == np.float32
    np.testing.assert_allclose(np.asarray(gxj), np.asarray(gx), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gwj), np.asarray(gw), rtol=1e-4, atol=1e-5)

    def loss64(w):
        y = ref_conv(x.astype(np.float64), w, (1, 1), "SAME")
        return np.sum(np.tanh(y) ** 2)
    eps, fd = 1e-6, np.zeros(w.shape)
    for idx in np.ndindex(w.shape):
        e = np.zeros(w.shape)
        e[idx] = eps
        fd[idx] = (loss64(w + e) - loss64(w - e)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(gw), fd, rtol=1e-3, atol=1e-4)


def test_second_order_through_a_convolution(x64):
    """The Hessian-vector product of a conv loss (reverse over reverse, through conv_grad_*
    read as source) against finite differences of the gradient."""
    x, w, v = normal(1, 2, 5, 4), normal(3, 2, 2, 2), normal(3, 2, 2, 2)

    def loss(w):
        return snp.sum(snp.sin(lax.conv_general_dilated(x, w, (1, 2), "SAME",
                                                        rhs_dilation=(2, 1))))
    g = secant.grad(loss)
    hvp = secant.grad(lambda w: snp.sum(g(w) * v))(w)
    eps = 1e-5
    fd = (np.asarray(g(w + eps * v)) - np.asarray(g(w - eps * v))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(hvp), fd, rtol=1e-6, atol=1e-8)
    fwd = secant.jvp(g, (w,), (v,))[1]
    np.testing.assert_allclose(np.asarray(fwd), fd, rtol=1e-6, atol=1e-8)


def test_conv_transpose_is_the_gradient_of_conv(x64):
    """conv_transpose(g, w, strides, 'SAME', transpose_kernel=True) is the input gradient of
    the strided forward conv (when the stride divides the input)."""
    x, w = normal(2, 6, 6, 3), normal(3, 3, 3, 5)
    dn = ("NHWC", "HWIO", "NHWC")
    y, pullback = secant.vjp(lambda x: lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                                               dimension_numbers=dn), x)
    g = normal(*y.shape)
    want = pullback(g)[0]
    got = lax.conv_transpose(g, w, (2, 2), "SAME", dimension_numbers=dn, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_max_pool_gradient_routes_to_each_window_maximum():
    x = RNG.permutation(24).astype(np.float32).reshape(1, 4, 6, 1)
    g = secant.grad(lambda x: snp.sum(nn.max_pool(x, (2, 2), (2, 2)) * 1.0))(x)
    want = np.zeros_like(x)
    for i in range(2):
        for j in range(3):
            window = x[0, 2 * i:2 * i + 2, 2 * j:2 * j + 2, 0]
            a, b = np.unravel_index(np.argmax(window), (2, 2))
            want[0, 2 * i + a, 2 * j + b, 0] = 1
    np.testing.assert_array_equal(np.asarray(g), want)
    gj = secant.jit(secant.grad(lambda x: snp.sum(nn.max_pool(x, (2, 2), (2, 2)))))(x)
    np.testing.assert_array_equal(np.asarray(gj), want)


def test_a_small_cnn_trains_with_readable_generated_code(x64):
    def cnn(params, x):
        w1, w2 = params
        h = nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC")))
        h = nn.avg_pool(h, (2, 2), (2, 2))
        logits = snp.reshape(h, (h.shape[0], -1)) @ w2
        return -snp.mean(nn.log_softmax(logits)[:, 0])
    x = normal(2, 4, 4, 1)
    params = [normal(3, 3, 1, 2) * 0.5, normal(8, 3) * 0.5]
    grads = secant.grad(cnn)(params, x)
    eps = 1e-6
    for k, p in enumerate(params):
        fd = np.zeros(p.shape)
        for idx in np.ndindex(p.shape):
            e = np.zeros(p.shape)
            e[idx] = eps
            up = [q + e if i == k else q for i, q in enumerate(params)]
            down = [q - e if i == k else q for i, q in enumerate(params)]
            fd[idx] = (float(cnn(up, x)) - float(cnn(down, x))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(grads[k]), fd, rtol=1e-5, atol=1e-8)
    src = secant.source(secant.grad(cnn))
    assert "conv_grad_lhs(" not in src         # nobody asked for x's cotangent
    assert "conv_grad_rhs(" in src and "avg_pool_vjp(" in src and "relu_vjp(" in src


def test_errors_name_the_problem():
    x, w = normal(1, 3, 5, 5), normal(2, 2, 3, 3)
    with pytest.raises(secant.SecantError, match="feature"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME")
    with pytest.raises(secant.SecantError, match="lhs_dilation"):
        lax.conv_general_dilated(x, normal(2, 3, 3, 3), (1, 1), "SAME", lhs_dilation=(2, 2))
    with pytest.raises(secant.SecantError, match="dimension_numbers"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW"))
    with pytest.raises(secant.SecantError, match="computation"):
        lax.reduce_window(x, 1.0, lax.mul, (1, 1, 2, 2), (1, 1, 1, 1), "VALID")
    with pytest.raises(secant.SecantError, match="init_value 0"):
        lax.reduce_window(x, 1.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID")


def test_reduce_window_max_with_a_non_identity_init_and_integers():
    x = np.array([[-3.0, -1.0, -2.0], [-5.0, 4.0, -6.0]], np.float32)
    out = lax.reduce_window(x, 0.0, lax.max, (1, 2), (1, 1), "VALID")
    np.testing.assert_array_equal(np.asarray(out), [[0, 0], [4, 4]])
    jitted = secant.jit(lambda x: lax.reduce_window(x, 0.0, lax.max, (1, 2), (1, 1), "VALID"))(x)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(out))
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    s = lax.reduce_window(ints, 0, lax.add, (2, 2), (1, 2), "VALID")
    assert s.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(s), [[10, 18], [26, 34]])
    np.testing.assert_array_equal(np.asarray(secant.jit(
        lambda a: lax.reduce_window(a, 0, lax.add, (2, 2), (1, 2), "VALID"))(ints)), [[10, 18],
                                                                                    [26, 34]])


# --- the generated source, locked ----------------------------------------------------------------
def cnn_loss(params, images, labels):
    """conv -> relu -> max pool -> dense -> softmax cross-entropy (NHWC / HWIO)."""
    features = lax.conv_general_dilated(images, params["kernel"], (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    pooled = nn.max_pool(nn.relu(features), (2, 2), (2, 2))
    logits = snp.reshape(pooled, (pooled.shape[0], -1)) @ params["dense"]
    return -snp.mean(snp.sum(nn.log_softmax(logits) * labels, axis=-1))


def test_cnn_gradient_source_matches_golden(x64):
    import os
    import pathlib
    from test_golden import generated_program, finite_difference_grad
    path = pathlib.Path(__file__).parent / "golden" / "nn" / "cnn_loss_grad.py.txt"
    text = generated_program(secant.grad(cnn_loss)) + "\n"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), "the generated source of grad(cnn_loss) changed; " \
        "regenerate with SECANT_UPDATE_GOLDEN=1 and review the diff"
    compile(text, str(path), "exec")
    params = {"kernel": normal(3, 3, 1, 2) * 0.5, "dense": normal(8, 3) * 0.5}
    args = (params, normal(2, 4, 4, 1), np.eye(3)[[0, 2]])
    got = secant.grad(cnn_loss)(*args)
    want = finite_difference_grad(cnn_loss, args, 0)
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-5, atol=1e-8)
    jitted = secant.jit(secant.grad(cnn_loss))(*args)
    for k in params:
        np.testing.assert_allclose(np.asarray(jitted[k]), want[k], rtol=1e-5, atol=1e-8)
