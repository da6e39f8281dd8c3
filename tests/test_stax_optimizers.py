"""secant.example_libraries.stax and .optimizers: JAX's interface, secant's own code.

Layers are checked against NumPy (and a few numbers computed with jax 0.10.2's own stax, which
draws parameters from the same keys the same way), gradients against float64 finite
differences, jit against eager, vmap against a Python loop; every optimizer's steps against the
update written out in NumPy."""
import pickle

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import random
from secant.example_libraries import optimizers, stax

KEY = random.PRNGKey(0)


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def leaves(tree):
    return [np.asarray(x) for x in secant.tree_util.tree_leaves(tree)]


def fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


# --- layers -----------------------------------------------------------------------------------
def test_dense_draws_jax_parameters_and_computes_x_w_plus_b():
    init, apply = stax.Dense(3)
    shape, (W, b) = init(KEY, (-1, 2))
    assert shape == (-1, 3)
    # jax.example_libraries.stax.Dense(3)[0](jax.random.PRNGKey(0), (-1, 2)), jax 0.10.2
    close(W, [[0.6768398, -0.6133092, -0.50878036], [-0.78330404, -0.59027076, 0.40191162]])
    close(b, [-0.02442456, -0.0203568, 0.00205544])
    x = np.random.RandomState(0).randn(4, 2).astype(np.float32)
    close(apply((W, b), x), x @ np.asarray(W) + np.asarray(b))


def _conv_nhwc(x, w, stride, pads):
    x = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    kh, kw, _, o = w.shape
    oh = (x.shape[1] - kh) // stride[0] + 1
    ow = (x.shape[2] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def test_conv_is_a_nhwc_convolution():
    x = np.random.RandomState(1).randn(2, 7, 6, 3).astype(np.float32)
    init, apply = stax.Conv(4, (3, 2), strides=(2, 1), padding="SAME")
    shape, (W, b) = init(KEY, x.shape)
    assert W.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
    y = apply((W, b), x)
    assert shape == y.shape == (2, 4, 6, 4)
    # SAME: out = ceil(in / stride); pad total (out - 1) * stride + k - in, less before
    want = _conv_nhwc(x, np.asarray(W), (2, 1), ((1, 1), (0, 1))) + np.asarray(b)
    close(y, want, rtol=1e-4, atol=1e-5)


def test_transposed_and_general_convolution_shapes_as_jax():
    # output shapes of jax's stax for the same layers (jax 0.10.2)
    x = np.ones((2, 8, 8, 3), np.float32)
    for layer, want in ((stax.ConvTranspose(4, (3, 3), strides=(2, 2), padding="SAME"),
                         (2, 16, 16, 4)),
                        (stax.ConvTranspose(2, (2, 3), strides=(1, 2)), (2, 9, 17, 2)),
                        (stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (2, 2), padding="SAME"),
                         (2, 4, 8, 3))):
        shape, params = layer[0](KEY, x.shape)
        assert tuple(shape) == want
        assert layer[1](params, x).shape == want
    shape, params = stax.Conv1DTranspose(2, (3,), strides=(2,))[0](KEY, (2, 8, 3))
    assert tuple(shape) == (2, 17, 2)
    assert stax.Conv1DTranspose(2, (3,), strides=(2,))[1](params, x[:, 0]).shape == (2, 17, 2)


def test_pooling_layers_against_numpy():
    x = np.random.RandomState(2).randn(2, 4, 6, 3).astype(np.float32)
    blocks = x.reshape(2, 2, 2, 3, 2, 3)
    for layer, reduce in ((stax.MaxPool, np.max), (stax.SumPool, np.sum),
                          (stax.AvgPool, np.mean)):
        init, apply = layer((2, 2), strides=(2, 2))
        shape, params = init(KEY, x.shape)
        y = apply(params, x)
        assert shape == y.shape == (2, 2, 3, 3)
        close(y, reduce(blocks, axis=(2, 4)))
    # AvgPool with SAME padding divides by the window's size inside the input (as JAX's)
    init, apply = stax.AvgPool((3, 3), strides=(1, 1), padding="SAME")
    y = np.asarray(apply((), x))
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cp = np.pad(np.ones(x.shape[1:3]), 1)
    want = np.zeros_like(x)
    for i in range(4):
        for j in range(6):
            want[:, i, j] = xp[:, i:i + 3, j:j + 3].sum((1, 2)) / cp[i:i + 3, j:j + 3].sum()
    close(y, want)
    # spec: the channels somewhere else
    init, apply = stax.MaxPool((2, 2), spec="NCHW")
    close(apply((), x.transpose(0, 3, 1, 2)),
          stax.MaxPool((2, 2))[1]((), x).transpose(0, 3, 1, 2))
    # a -1 batch in the input shape is 0 in the pooled shape, as jax's stax gives
    assert stax.MaxPool((2, 2))[0](KEY, (-1, 4, 6, 3))[0] == (0, 3, 5, 3)


def test_batchnorm_standardises_over_its_axes():
    x = np.random.RandomState(3).randn(5, 3, 4).astype(np.float32) * 3 + 1
    init, apply = stax.BatchNorm(axis=(0, 1))
    shape, (beta, gamma) = init(KEY, x.shape)
    assert shape == x.shape and beta.shape == gamma.shape == (4,)
    beta, gamma = beta + 0.5, gamma * 2.0
    mean, var = x.mean((0, 1)), x.var((0, 1))
    close(apply((beta, gamma), x), 2.0 * (x - mean) / np.sqrt(var + 1e-5) + 0.5, rtol=1e-4,
          atol=1e-5)
    # center=False, scale=False: no parameters (empty tuples, no leaves, no cotangents)
    init, apply = stax.BatchNorm(axis=(0,), center=False, scale=False)
    _, params = init(KEY, (5, 3))
    assert params == ((), ())
    g = secant.grad(lambda p, x: snp.sum(snp.sin(apply(p, x))))(params, x[:, 0])
    assert g == ((), ())


def test_elementwise_layers_are_the_nn_functions():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    for layer, fn in ((stax.Relu, secant.nn.relu), (stax.Tanh, np.tanh), (stax.Exp, np.exp),
                      (stax.Sigmoid, secant.nn.sigmoid), (stax.Elu, secant.nn.elu),
                      (stax.LeakyRelu, secant.nn.leaky_relu), (stax.Selu, secant.nn.selu),
                      (stax.Gelu, secant.nn.gelu), (stax.Softplus, secant.nn.softplus),
                      (stax.Identity[1], None)):
        if fn is None:
            close(layer((), x), x)
            continue
        shape, params = layer[0](KEY, x.shape)
        assert shape == x.shape and params == ()
        close(layer[1](params, x), fn(x))
    e = np.exp(x - x.max(-1, keepdims=True))
    close(stax.Softmax[1]((), x), e / e.sum(-1, keepdims=True))
    close(stax.LogSoftmax[1]((), x), np.log(e / e.sum(-1, keepdims=True)), atol=1e-5)


def test_flatten_fanout_parallel_fanin():
    x = np.random.RandomState(4).randn(2, 3, 4).astype(np.float32)
    assert stax.Flatten[0](KEY, (-1, 3, 4))[0] == (-1, 12)
    close(stax.Flatten[1]((), x), x.reshape(2, 12))
    init, apply = stax.serial(stax.FanOut(3), stax.parallel(stax.Identity, stax.Exp, stax.Tanh),
                              stax.FanInSum)
    shape, params = init(KEY, x.shape)
    assert shape == x.shape
    close(apply(params, x), x + np.exp(x) + np.tanh(x))
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Identity, stax.Dense(5)),
                              stax.FanInConcat(axis=-1))
    shape, params = init(KEY, x.shape)
    assert shape == (2, 3, 9)
    W, b = params[1][1]
    close(apply(params, x), np.concatenate([x, x @ np.asarray(W) + np.asarray(b)], -1),
          rtol=1e-5)
    # shape_dependent: the layer made from the input's shape
    init, apply = stax.shape_dependent(lambda s: stax.Dense(2 * s[-1]))
    shape, (W, b) = init(KEY, x.shape)
    assert shape == (2, 3, 8) and W.shape == (4, 8)
    close(apply((W, b), x), x @ np.asarray(W) + np.asarray(b), rtol=1e-5)


def test_dropout_keeps_with_probability_rate_and_needs_a_key():
    x = snp.arange(1., 9.)
    init, apply = stax.Dropout(0.7)
    # jax's stax.Dropout(0.7)[1]((), jnp.arange(1., 9.), rng=jax.random.PRNGKey(3)), jax 0.10.2
    close(apply((), x, rng=random.PRNGKey(3)),
          [1.4285715, 0., 4.285714, 0., 7.1428576, 8.571428, 10., 11.428572])
    with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
        apply((), x)
    init, apply = stax.Dropout(0.7, mode="test")
    close(apply((), x, rng=KEY), x)
    big = apply((), snp.ones(20000), rng=KEY)
    kept = stax.Dropout(0.7)[1]((), snp.ones(20000), rng=KEY)
    close(big, np.ones(20000))
    close(np.unique(np.asarray(kept)), [0.0, 1 / 0.7])
    assert abs(float(snp.mean(kept != 0)) - 0.7) < 0.02
    # serial splits its key between the layers
    init, apply = stax.serial(stax.Dense(6), stax.Dropout(0.5), stax.Dense(3))
    _, params = init(KEY, (5, 4))
    a = apply(params, np.ones((5, 4), np.float32), rng=random.PRNGKey(1))
    b = apply(params, np.ones((5, 4), np.float32), rng=random.PRNGKey(2))
    assert not np.allclose(np.asarray(a), np.asarray(b))
    close(secant.jit(apply)(params, np.ones((5, 4), np.float32), rng=random.PRNGKey(1)), a)


CNN = stax.serial(stax.Conv(2, (3, 3), strides=(2, 2), padding="SAME"), stax.Relu,
                  stax.AvgPool((2, 2), padding="SAME"), stax.Flatten, stax.Dense(3))


def test_a_cnn_gives_jax_s_values():
    init, apply = CNN
    shape, params = init(random.PRNGKey(1), (-1, 9, 9, 1))
    assert shape == (0, 3)          # (jax's stax: the pooled -1 batch is 0)
    x = np.arange(2 * 9 * 9, dtype=np.float32).reshape(2, 9, 9, 1) / 100.
    # the same model in jax 0.10.2 (stax, random.PRNGKey(1))
    close(apply(params, x), [[-0.00557764, 0.00237997, 0.00633913],
                             [0.00545332, -0.00925883, 0.03308197]], rtol=1e-4, atol=1e-7)
    close(secant.jit(apply)(params, x), apply(params, x), rtol=1e-5, atol=1e-7)


def test_gradients_of_a_model_match_finite_differences(x64):
    init, apply = stax.serial(stax.Conv(2, (2, 2), padding="SAME"), stax.Tanh,
                              stax.MaxPool((2, 2)), stax.BatchNorm(axis=(0, 1, 2)),
                              stax.Flatten, stax.Dense(3), stax.Gelu, stax.Dense(2),
                              stax.LogSoftmax)
    _, params = init(KEY, (3, 4, 4, 1))
    params = secant.tree_util.tree_map(lambda p: snp.asarray(p, snp.float64), params)
    x = np.random.RandomState(5).randn(3, 4, 4, 1)

    def loss(params, x):
        return -snp.sum(apply(params, x)[:, 0])
    g = secant.grad(loss, argnums=(0, 1))(params, x)
    close(g[1], fd_grad(lambda x: loss(params, x), x), rtol=1e-5, atol=1e-7)
    flat, tree = secant.tree_util.tree_flatten(params)
    for k, leaf in enumerate(flat):
        def loss_k(v, k=k):
            return loss(tree.unflatten(flat[:k] + [v] + flat[k + 1:]), x)
        close(leaves(g[0])[k], fd_grad(loss_k, leaf), rtol=1e-5, atol=1e-7)
    # jit(grad) as eager grad
    for a, b in zip(leaves(secant.jit(secant.grad(loss))(params, x)), leaves(g[0])):
        close(a, b, rtol=1e-9, atol=1e-10)


def test_per_example_gradients_by_vmap_are_the_loop():
    init, apply = stax.serial(stax.Conv(3, (3, 3), padding="SAME"), stax.Relu,
                              stax.MaxPool((2, 2)), stax.Flatten, stax.Dense(4),
                              stax.LogSoftmax)
    _, params = init(KEY, (-1, 6, 6, 1))
    x = np.random.RandomState(6).randn(5, 6, 6, 1).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0]]

    def loss(p, xi, yi):
        return -snp.sum(apply(p, xi[None]) * yi)
    per = secant.vmap(secant.grad(loss), in_axes=(None, 0, 0))(params, x, y)
    loop = [leaves(secant.grad(loss)(params, x[i], y[i])) for i in range(5)]
    for k, got in enumerate(leaves(per)):
        close(got, np.stack([l[k] for l in loop]), rtol=1e-4, atol=1e-6)
    out = secant.vmap(lambda xi: apply(params, xi[None])[0])(x)
    close(out, apply(params, x), rtol=1e-5, atol=1e-6)


def _train(init, apply, opt, x, y, steps):
    _, params = init(KEY, (-1,) + x.shape[1:])
    opt_init, opt_update, get_params = opt

    def loss(params, batch):
        inputs, targets = batch
        return -snp.mean(snp.sum(apply(params, inputs) * targets, axis=1))

    @secant.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, secant.grad(loss)(params, batch), opt_state)
    state = opt_init(params)
    losses = [float(loss(params, (x, y)))]
    for i in range(steps):
        state = update(i, state, (x, y))
        losses.append(float(loss(get_params(state), (x, y))))
    return losses


def test_an_mlp_trains_as_jax_s_does():
    r = np.random.RandomState(0)
    x = r.randn(64, 20).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[r.randint(0, 10, 64)]
    init, apply = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(10), stax.LogSoftmax)
    _, params = init(KEY, (-1, 20))
    losses = _train(init, apply, optimizers.adam(1e-2), x, y, 50)
    # the same program on jax 0.10.2: 2.668155 before, 0.0800399 after 50 adam steps
    close(losses[0], 2.668155, rtol=1e-5)
    close(losses[-1], 0.0800399, rtol=2e-3)
    assert all(b < a for a, b in zip(losses[:20], losses[1:20]))


def test_a_cnn_trains_under_jit_grad():
    r = np.random.RandomState(1)
    x = r.randn(32, 8, 8, 1).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[(x[:, :4].sum((1, 2, 3)) > 0).astype(int)
                                    + (x[:, :, :4].sum((1, 2, 3)) > 0).astype(int)]
    init, apply = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(),
                              stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)), stax.Flatten,
                              stax.Dense(16), stax.Relu, stax.Dense(3), stax.LogSoftmax)
    losses = _train(init, apply, optimizers.momentum(0.05, 0.9), x, y, 30)
    assert losses[-1] < 0.5 * losses[0]


# --- optimizers ---------------------------------------------------------------------------------
PARAMS = {"w": np.array([[0.3, -1.2], [0.8, 2.0], [-0.5, 0.1]], np.float32),
          "b": (np.array([0.4, -0.7], np.float32), np.float32(0.5))}


def _loss(p):
    return snp.sum(snp.sin(p["w"]) ** 2) + snp.sum(p["b"][0] ** 3) + p["b"][1] ** 2


def _grad_np(p):
    return {"w": np.sin(2 * p["w"]), "b": (3 * p["b"][0] ** 2, 2 * p["b"][1])}


def _np_steps(update, init, n=4):
    """n steps of a NumPy optimizer, one state per leaf: the parameters after each."""
    flat, tree = secant.tree_util.tree_flatten(PARAMS)
    states = [init(np.asarray(x, np.float64)) for x in flat]
    out = []
    for i in range(n):
        xs = [s[0] for s in states]
        g = secant.tree_util.tree_leaves(_grad_np(tree.unflatten(xs)))
        states = [update(i, gi, s) for gi, s in zip(g, states)]
        out.append([s[0] for s in states])
    return out


def _sgd(lr):
    return (lambda x: (x,), lambda i, g, s: (s[0] - lr(i) * g,))


def _momentum(lr, mass, nesterov=False):
    def update(i, g, s):
        x, v = s
        v = mass * v + g
        return (x - lr(i) * (mass * v + g if nesterov else v), v)
    return (lambda x: (x, 0 * x), update)


def _adagrad(lr, mom=0.9):
    def update(i, g, s):
        x, gsq, m = s
        gsq = gsq + g ** 2
        m = (1 - mom) * g * np.where(gsq > 0, 1 / np.sqrt(gsq), 0) + mom * m
        return (x - lr(i) * m, gsq, m)
    return (lambda x: (x, 0 * x, 0 * x), update)


def _rmsprop(lr, gamma=0.9, eps=1e-8):
    def update(i, g, s):
        x, a = s
        a = gamma * a + (1 - gamma) * g ** 2
        return (x - lr(i) * g / np.sqrt(a + eps), a)
    return (lambda x: (x, 0 * x), update)


def _rmsprop_momentum(lr, gamma=0.9, eps=1e-8, mom=0.9):
    def update(i, g, s):
        x, a, m = s
        a = gamma * a + (1 - gamma) * g ** 2
        m = mom * m + lr(i) * g / np.sqrt(a + eps)
        return (x - m, a, m)
    return (lambda x: (x, 0 * x, 0 * x), update)


def _adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(i, g, s):
        x, m, v = s
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        return (x - lr(i) * mhat / (np.sqrt(vhat) + eps), m, v)
    return (lambda x: (x, 0 * x, 0 * x), update)


def _adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(i, g, s):
        x, m, u = s
        m = (1 - b1) * g + b1 * m
        u = np.maximum(b2 * u, np.abs(g))
        return (x - lr(i) / (1 - b1 ** (i + 1)) * m / (u + eps), m, u)
    return (lambda x: (x, 0 * x, 0 * x), update)


def _sm3(lr, mom=0.9):
    def init(x):
        x1 = np.atleast_1d(x)
        return (x1, 0 * x1, [np.zeros(n) for n in x1.shape], np.shape(x))

    def update(i, g, s):
        x, m, vs, shape = s
        g = np.reshape(g, x.shape)
        acc = np.full(x.shape, np.inf)
        for ax, v in enumerate(vs):         # the smallest of the per-axis accumulators
            acc = np.minimum(acc, np.expand_dims(v, [a for a in range(x.ndim) if a != ax]))
        acc = acc + g ** 2
        m = (1 - mom) * g * np.where(acc > 0, 1 / np.sqrt(acc), 0) + mom * m
        vs = [acc.max(axis=tuple(a for a in range(x.ndim) if a != ax)) for ax in range(x.ndim)]
        return (x - lr(i) * m, m, vs, shape)
    return init, update


def const(c):
    return lambda i: c


OPTIMIZERS = {
    "sgd": (optimizers.sgd(0.1), _sgd(const(0.1))),
    "momentum": (optimizers.momentum(0.1, 0.9), _momentum(const(0.1), 0.9)),
    "nesterov": (optimizers.nesterov(0.1, 0.9), _momentum(const(0.1), 0.9, nesterov=True)),
    "adagrad": (optimizers.adagrad(0.1, momentum=0.8), _adagrad(const(0.1), 0.8)),
    "rmsprop": (optimizers.rmsprop(0.1, gamma=0.8), _rmsprop(const(0.1), 0.8)),
    "rmsprop_momentum": (optimizers.rmsprop_momentum(0.1), _rmsprop_momentum(const(0.1))),
    "adam": (optimizers.adam(0.1, b1=0.8), _adam(const(0.1), b1=0.8)),
    "adamax": (optimizers.adamax(0.1), _adamax(const(0.1))),
    "sm3": (optimizers.sm3(0.1), _sm3(const(0.1))),
    "sgd_exponential_decay": (optimizers.sgd(optimizers.exponential_decay(0.1, 2, 0.5)),
                              _sgd(lambda i: 0.1 * 0.5 ** (i / 2))),
    "sgd_inverse_time_decay": (optimizers.sgd(optimizers.inverse_time_decay(0.1, 2, 0.5)),
                               _sgd(lambda i: 0.1 / (1 + 0.5 * i / 2))),
    "sgd_inverse_time_staircase": (
        optimizers.sgd(optimizers.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
        _sgd(lambda i: 0.1 / (1 + 0.5 * np.floor(i / 2)))),
    "sgd_polynomial_decay": (optimizers.sgd(optimizers.polynomial_decay(0.1, 3, 0.01, 2.0)),
                             _sgd(lambda i: (1 - min(i, 3) / 3) ** 2 * 0.09 + 0.01)),
    "sgd_piecewise_constant": (
        optimizers.sgd(optimizers.piecewise_constant([1, 2], [0.1, 0.05, 0.01])),
        _sgd(lambda i: [0.1, 0.05, 0.01][int(i > 1) + int(i > 2)])),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_are_the_numpy_update(name, x64):
    (opt_init, opt_update, get_params), (np_init, np_update) = OPTIMIZERS[name]
    want = _np_steps(np_update, np_init)
    params = secant.tree_util.tree_map(lambda x: np.asarray(x, np.float64), PARAMS)

    def step(i, state):
        return opt_update(i, secant.grad(_loss)(get_params(state)), state)
    jitted = secant.jit(step)
    eager_state = jit_state = opt_init(params)
    for i in range(4):
        eager_state = step(i, eager_state)
        jit_state = jitted(i, jit_state)
        for got_e, got_j, w in zip(leaves(get_params(eager_state)),
                                   leaves(get_params(jit_state)), want[i]):
            assert got_e.dtype == np.float64
            # (rtol 1e-7: piecewise_constant's values are float32, made before x64 was on)
            close(got_e, np.reshape(w, np.shape(got_e)), rtol=1e-7, atol=1e-9)
            close(got_j, got_e, rtol=1e-10, atol=1e-12)
    assert secant.tree_util.tree_structure(get_params(jit_state)) == \
        secant.tree_util.tree_structure(PARAMS)


def test_optimizer_state_is_a_pytree_and_packs_for_pickling():
    opt_init, opt_update, get_params = optimizers.momentum(0.1, 0.9)
    state = opt_init(PARAMS)
    assert isinstance(state, optimizers.OptimizerState)
    assert len(secant.tree_util.tree_leaves(state)) == 2 * len(secant.tree_util.tree_leaves(
        PARAMS))
    state = opt_update(0, secant.grad(_loss)(get_params(state)), state)
    packed = pickle.loads(pickle.dumps(optimizers.unpack_optimizer_state(state)))
    again = optimizers.pack_optimizer_state(packed)
    assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
    for a, b in zip(leaves(again), leaves(state)):
        close(a, b)
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        opt_update(1, {"w": PARAMS["w"]}, state)
    # sm3's state passes through jit and its parameters come back in their shapes
    opt_init, opt_update, get_params = optimizers.sm3(0.1)
    p = secant.jit(lambda s: get_params(s))(opt_init(PARAMS))
    assert [np.shape(x) for x in leaves(p)] == [np.shape(x) for x in leaves(PARAMS)]


def test_schedules_and_utilities():
    assert optimizers.constant(0.3)(7) == 0.3
    assert optimizers.make_schedule(0.2)(5) == 0.2
    sched = optimizers.exponential_decay(1.0, 10, 0.5)
    assert optimizers.make_schedule(sched) is sched
    close(sched(20), 0.25)
    with pytest.raises(TypeError):
        optimizers.make_schedule(np.ones(2))
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [0.1, 0.2])
    pw = optimizers.piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    close([pw(i) for i in (0, 10, 11, 20, 25)], [1.0, 1.0, 0.5, 0.5, 0.1])
    close(secant.jit(pw)(15), 0.5)
    g = _grad_np(PARAMS)
    norm = np.sqrt(sum(np.sum(np.square(x)) for x in secant.tree_util.tree_leaves(g)))
    close(optimizers.l2_norm(g), norm)
    clipped = optimizers.clip_grads(g, 1.0)
    for a, b in zip(leaves(clipped), secant.tree_util.tree_leaves(g)):
        close(a, b / norm)
    for a, b in zip(leaves(optimizers.clip_grads(g, 100.0)), secant.tree_util.tree_leaves(g)):
        close(a, b)
    close(secant.grad(lambda w: optimizers.l2_norm({"w": w}))(np.array([3.0, 4.0])),
          [0.6, 0.8])
