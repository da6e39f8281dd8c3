"""Issue 15's library gaps: secant.ops's segment reductions (jax.ops), snp.pad's NumPy modes,
snp.vectorize under grad. Values against NumPy loops / np.pad, gradients against float64
central differences, vmap against a Python loop, jit against eager."""

import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import check_unary

rng = np.random.default_rng(15)


# --- secant.ops ---------------------------------------------------------------------------------
def _segment_loop(name, data, ids, n):
    """NumPy loop: JAX's segment reduction (ids out of [0, n) dropped; identity when empty)."""
    op, init = {"segment_sum": (np.add, 0.0), "segment_prod": (np.multiply, 1.0),
                "segment_max": (np.maximum, -np.inf), "segment_min": (np.minimum, np.inf)}[name]
    out = np.full((n,) + data.shape[1:], init)
    for row, i in zip(data, ids):
        if 0 <= i < n:
            out[i] = op(out[i], row)
    return out


SEGMENTS = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
IDS = np.array([0, 2, 0, 1, -1, 5, 2, 0])


@pytest.mark.parametrize("name", SEGMENTS)
def test_segment_values_grad_jit_vmap(name, x64):
    f = getattr(secant.ops, name)
    data = rng.normal(size=(8, 3))
    ref = lambda d: _segment_loop(name, d, IDS, 4)                                  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(data, IDS, 4)), ref(data))
    np.testing.assert_allclose(np.asarray(secant.jit(f, static_argnums=2)(data, IDS, 4)),
                               ref(data))
    # segment 3 is empty (+-inf for max/min): leave it out of the loss
    check_unary(lambda d: f(d, IDS, 4)[:3], data, lambda d: ref(d)[:3])
    # ids batched (and both), against a loop
    idss = np.stack([IDS, IDS[::-1], np.roll(IDS, 3)])
    datas = rng.normal(size=(3, 8, 3))
    out = secant.vmap(lambda i: f(data, i, 4))(idss)
    np.testing.assert_allclose(np.asarray(out), [_segment_loop(name, data, i, 4) for i in idss])
    out = secant.vmap(lambda d, i: f(d, i, 4))(datas, idss)
    np.testing.assert_allclose(np.asarray(out),
                               [_segment_loop(name, d, i, 4) for d, i in zip(datas, idss)])


@pytest.mark.parametrize("name", SEGMENTS)
def test_segment_higher_order_and_jvp(name, x64):
    f = getattr(secant.ops, name)
    data = rng.normal(size=6)
    ids = np.array([1, 0, 1, 2, 2, 0])
    loss = lambda d: snp.sum(f(d, ids, 3) ** 3)                                    # noqa: E731
    ref = lambda d: np.sum(_segment_loop(name, d, ids, 3) ** 3)                     # noqa: E731
    h0 = np.stack([_fd_grad(lambda d: np.asarray(secant.grad(loss)(d))[k], data)
                   for k in range(6)])
    np.testing.assert_allclose(np.asarray(secant.hessian(loss)(data)), h0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.grad(loss)(data)), _fd_grad(ref, data),
                               rtol=1e-6, atol=1e-8)
    t = rng.normal(size=6)
    _, tan = secant.jvp(lambda d: f(d, ids, 3), (data,), (t,))
    h = 1e-6
    fd = (_segment_loop(name, data + h * t, ids, 3) - _segment_loop(name, data - h * t, ids, 3))
    np.testing.assert_allclose(np.asarray(tan), fd / (2 * h), rtol=1e-5, atol=1e-7)


def _fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_segment_sum_default_num_segments_and_refusals(x64):
    data = np.arange(5.0)
    ids = np.array([0, 3, 3, 1, 0])
    np.testing.assert_allclose(np.asarray(secant.ops.segment_sum(data, ids)),
                               [4.0, 3.0, 0.0, 3.0])
    # num_segments is needed under jit when the ids are traced, as in JAX
    with pytest.raises(secant.SecantError, match="test_lib15.py"):
        secant.jit(lambda d, i: secant.ops.segment_sum(d, i))(data, ids)
    with pytest.raises(secant.SecantError, match="test_lib15.py"):
        secant.vmap(lambda i: secant.ops.segment_sum(data, i))(np.stack([ids, ids]))


# --- snp.vectorize written in place -------------------------------------------------------------
def _mul(a, b):
    return a * b


VECTORIZED = {  # loss of v, the same loss in NumPy
    "lambda": (lambda v: snp.sum(snp.vectorize(lambda a, b: a * b)(v, v)),
               lambda v: np.sum(v * v)),
    "named": (lambda v: snp.sum(snp.vectorize(_mul)(snp.sin(v), v[::-1])),
              lambda v: np.sum(np.sin(v) * v[::-1])),
    "signature": (lambda v: snp.sum(snp.vectorize(lambda a, b: snp.dot(a, b) ** 2,
                                                  signature="(n),(n)->()")(
                      snp.reshape(v, (2, 2)), v[:2])),
                  lambda v: np.sum((v.reshape(2, 2) @ v[:2]) ** 2)),
    "excluded": (lambda v: snp.sum(snp.vectorize(lambda a, k: a ** k, excluded={1})(v, 3)),
                 lambda v: np.sum(v ** 3)),
}


@pytest.mark.parametrize("name", VECTORIZED)
def test_vectorize_in_place_under_grad(name, x64):
    loss, ref = VECTORIZED[name]
    x = np.array([0.3, -1.2, 0.7, 2.0])
    g0 = _fd_grad(ref, x)
    np.testing.assert_allclose(np.asarray(secant.grad(loss)(x)), g0, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(loss))(x)), g0, rtol=1e-6,
                               atol=1e-8)
    xs = np.stack([x, 1.5 * x])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(loss))(xs)),
                               [_fd_grad(ref, v) for v in xs], rtol=1e-6, atol=1e-8)
    h0 = np.stack([_fd_grad(lambda v: np.asarray(secant.grad(loss)(v))[k], x)
                   for k in range(4)])
    np.testing.assert_allclose(np.asarray(secant.hessian(loss)(x)), h0, rtol=1e-5, atol=1e-6)


_TWO = snp.vectorize(lambda a, b: (snp.sin(a) * snp.sum(b), a * snp.dot(b, b)),
                     signature="(),(n)->(),()")

TWO_OUTPUTS = {  # loss of v reading the outputs of a two-output vectorize, the same in NumPy
    "both": (lambda v: (lambda o: snp.sum(o[0] * o[1]))(_TWO(v[:2], snp.reshape(v, (2, 2)))),
             lambda v: np.sum(np.sin(v[:2]) * v.reshape(2, 2).sum(1) * v[:2]
                              * (v.reshape(2, 2) ** 2).sum(1))),
    "second": (lambda v: snp.sum(_TWO(v[:2], snp.reshape(v, (2, 2)))[1] ** 2),
               lambda v: np.sum((v[:2] * (v.reshape(2, 2) ** 2).sum(1)) ** 2)),
}


@pytest.mark.parametrize("name", TWO_OUTPUTS)
def test_vectorize_two_outputs_grad_jvp_hessian(name, x64):
    """A signature with two outputs: reverse mode (before: 'not supported yet') and the jvp
    under hessian (before: 'must return 4 outputs' from the (outputs, tangents) pair)."""
    loss, ref = TWO_OUTPUTS[name]
    x = np.array([0.3, -1.2, 0.7, 2.0])
    g0 = _fd_grad(ref, x)
    np.testing.assert_allclose(np.asarray(secant.grad(loss)(x)), g0, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(loss))(x)), g0, rtol=1e-6,
                               atol=1e-8)
    xs = np.stack([x, 0.5 * x])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(loss))(xs)),
                               [_fd_grad(ref, v) for v in xs], rtol=1e-6, atol=1e-8)
    t = np.array([1.0, -0.5, 0.25, 2.0])
    _, tan = secant.jvp(loss, (x,), (t,))
    np.testing.assert_allclose(float(tan), g0 @ t, rtol=1e-6)
    h0 = np.stack([_fd_grad(lambda v: np.asarray(secant.grad(loss)(v))[k], x)
                   for k in range(4)])
    np.testing.assert_allclose(np.asarray(secant.hessian(loss)(x)), h0, rtol=1e-5, atol=1e-6)


# --- snp.pad's modes ----------------------------------------------------------------------------
PAD_X = np.array([[0.3, -1.2, 0.7, 2.0], [1.0, 0.5, -0.4, 0.9], [0.2, 0.1, 1.3, -2.2]])
PADS = {  # mode, keywords, pad_width (((1, 2), (3, 5)): wider than an axis, reflected twice)
    "edge": ("edge", {}), "reflect": ("reflect", {}), "symmetric": ("symmetric", {}),
    "wrap": ("wrap", {}), "reflect_odd": ("reflect", {"reflect_type": "odd"}),
    "symmetric_odd": ("symmetric", {"reflect_type": "odd"}),
    "linear_ramp": ("linear_ramp", {"end_values": (1.0, -2.0)}),
    "maximum": ("maximum", {}), "minimum": ("minimum", {"stat_length": 3}),
    "mean": ("mean", {"stat_length": 2}), "median": ("median", {}),
}


@pytest.mark.parametrize("name", PADS)
def test_pad_modes_values_grad_jit_vmap(name, x64):
    """Against np.pad: eager, jit, weighted gradient (central differences of np.pad), vmap
    over rows. Before: UnsupportedError 'pad supports mode='constant' only'."""
    mode, kw = PADS[name]
    widths = ((1, 2), (3, 5))
    check_unary(lambda a: snp.pad(a, widths, mode, **kw), PAD_X,
                lambda a: np.pad(a, widths, mode, **kw))
    # np.pad written in user code is secant's under the transforms, keyword mode too
    w = np.arange(72.0).reshape(6, 12) % 7 - 3
    g0 = _fd_grad(lambda a: np.sum(np.pad(a, widths, mode, **kw) ** 2 * w), PAD_X)
    g = secant.grad(lambda a: snp.sum(np.pad(a, widths, mode=mode, **kw) ** 2 * w))(PAD_X)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["reflect", "wrap", "maximum"])
def test_pad_mode_from_a_parameter_hessian_jvp(mode, x64):
    """The mode a parameter holds (unknown when the function is read): read through the
    modes' source, never the constant mode's rule (which reads as unpad: a silent wrong
    gradient)."""
    x = np.array([0.3, -1.2, 0.7, 2.0])
    w = np.arange(1.0, 11.0)

    def loss(a, m):
        return snp.sum(np.pad(a, 3, mode=m) ** 3 * w)

    ref = lambda a: np.sum(np.pad(a, 3, mode=mode) ** 3 * w)                        # noqa: E731
    g0 = _fd_grad(ref, x)
    np.testing.assert_allclose(np.asarray(secant.grad(loss)(x, mode)), g0, rtol=1e-6)
    h0 = np.stack([_fd_grad(lambda a: np.asarray(secant.grad(loss)(a, mode))[k], x)
                   for k in range(4)])
    np.testing.assert_allclose(np.asarray(secant.hessian(lambda a: loss(a, mode))(x)), h0,
                               rtol=1e-5, atol=1e-6)
    t = np.array([1.0, -2.0, 0.5, 0.25])
    _, tan = secant.jvp(lambda a: loss(a, mode), (x,), (t,))
    np.testing.assert_allclose(float(tan), g0 @ t, rtol=1e-6)


def test_pad_empty_and_refusals(x64):
    x = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(snp.pad(x, 2, "empty")), np.pad(x, 2))
    with pytest.raises(secant.SecantError, match="mode must be one of"):
        snp.pad(x, 1, "mirror")
    with pytest.raises(secant.SecantError, match="empty axis"):
        snp.pad(np.zeros((0, 2)), 1, "edge")


# --- found by the sweep of jax.numpy's names ----------------------------------------------------
def test_logical_or_of_differentiated_values(x64):
    """snp.logical_or's source read `a | b` as a dict merge under grad (AttributeError from
    ad/helpers.unmerge); its gradient is zero (a boolean result), its values NumPy's."""
    x = np.array([0.3, -1.2, 0.0, 2.0])
    loss = lambda a: snp.sum(snp.logical_or(a, a[::-1] - 2.0) * a)                  # noqa: E731
    g0 = _fd_grad(lambda a: np.sum(np.logical_or(a, a[::-1] - 2.0) * a), x)
    np.testing.assert_allclose(np.asarray(secant.grad(loss)(x)), g0, atol=1e-8)
    xs = np.stack([x, -x])
    np.testing.assert_array_equal(
        np.asarray(secant.vmap(lambda a: snp.logical_or(a, a[::-1] - 2.0))(xs)),
        [np.logical_or(a, a[::-1] - 2.0) for a in xs])


def test_spacing_has_zero_derivative(x64):
    """spacing is piecewise constant (central differences: 0); its source's `nextafter(x,
    inf) - x` read as derivative 0 - 1 = -1."""
    x = np.array([0.3, -1.2, 0.7, 2.0])
    np.testing.assert_allclose(np.asarray(snp.spacing(x)), np.spacing(x))
    np.testing.assert_array_equal(np.asarray(secant.grad(lambda a: snp.sum(snp.spacing(a)))(x)),
                                  np.zeros(4))
    _, tan = secant.jvp(snp.spacing, (x,), (np.ones(4),))
    np.testing.assert_array_equal(np.asarray(tan), np.zeros(4))
    np.testing.assert_allclose(np.asarray(secant.vmap(snp.spacing)(np.stack([x, 2 * x]))),
                               [np.spacing(x), np.spacing(2 * x)])


def test_iscomplexobj_isrealobj_under_transforms(x64):
    """Dtype queries: constants under grad and vmap (before: 'secant does not know the
    derivative of fn')."""
    x = np.array([0.5, 2.0])
    fns = (snp.iscomplexobj, snp.isrealobj)
    for fn, want in zip(fns, (0.0, 1.0)):
        np.testing.assert_array_equal(
            np.asarray(secant.grad(lambda a: snp.sum(a * a * fn(a)))(x)), 2 * x * want)
        np.testing.assert_array_equal(
            np.asarray(secant.vmap(lambda a: a * fn(a))(np.stack([x, -x]))),
            np.stack([x, -x]) * want)
