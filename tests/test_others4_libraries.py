"""Issue 15, code written by others (fourth round): library-style code as small JAX libraries
are written: an equinox-like Module hierarchy (registered dataclass pytrees whose __call__
calls submodules), an optax-like GradientTransformation namedtuple of init/update closures
chained together, numpyro-like distribution classes with log_prob and a model's log density,
a tiny normalising-flow library (affine coupling layers, log-determinants), and a neural ODE
integrated by a hand-written RK4 solver; each under the transforms its author would use,
checked against float64 finite differences, a Python loop for vmap and eager for jit."""
import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jit, jvp, nn, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp, to_snp

RNG = np.random.default_rng(41414)


# --- an equinox-like Module hierarchy -------------------------------------------------------------
def module(cls):
    """Make a frozen dataclass a pytree: array fields are children, the rest static."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    static = [f.name for f in dataclasses.fields(cls) if f.metadata.get("static")]
    dynamic = [f for f in fields if f not in static]

    def flatten(m):
        return [getattr(m, f) for f in dynamic], tuple(getattr(m, f) for f in static)

    def unflatten(aux, children):
        return cls(**dict(zip(dynamic, children)), **dict(zip(static, aux)))
    tree_util.register_pytree_node(cls, flatten, unflatten)
    return cls


def static_field():
    return dataclasses.field(metadata={"static": True})


@module
class Linear:
    weight: Any
    bias: Any

    def __call__(self, x):
        return self.weight @ x + self.bias


@module
class MLPModule:
    layers: Any
    activation: Callable = static_field()

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


@module
class TanhMLP:
    layers: Any

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jnp.tanh(layer(x))
        return self.layers[-1](x)


def make_mlp(sizes, rng, cls=TanhMLP):
    layers = tuple(Linear(rng.normal(size=(o, i)) / np.sqrt(i), rng.normal(size=o) * 0.1)
                   for i, o in zip(sizes[:-1], sizes[1:]))
    return MLPModule(layers, jnp.tanh) if cls is MLPModule else cls(layers)


def np_mlp(m, x):
    for layer in m.layers[:-1]:
        x = np.tanh(np.asarray(layer.weight) @ x + np.asarray(layer.bias))
    last = m.layers[-1]
    return np.asarray(last.weight) @ x + np.asarray(last.bias)


def module_loss(model, x, y):
    pred = vmap(model)(x)
    return jnp.mean((pred[:, 0] - y) ** 2)


def test_equinox_like_module_tree(x64):
    model = make_mlp([3, 5, 4, 1], RNG)
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=6)
    want = np.mean((np.stack([np_mlp(model, xi) for xi in x])[:, 0] - y) ** 2)
    np.testing.assert_allclose(module_loss(to_snp(model), to_snp(x), to_snp(y)), want, rtol=1e-12)
    g = check_grad(module_loss, model, x, y)
    assert isinstance(g, TanhMLP) and isinstance(g.layers[0], Linear)
    check_vmap(lambda m, xi: m(xi), (model, x), in_axes=(None, 0))
    # per-example gradients with respect to the model
    per_ex = vmap(grad(lambda m, xi, yi: jnp.sum((m(xi) - yi) ** 2)), in_axes=(None, 0, 0))(
        to_snp(model), to_snp(x), to_snp(y))
    for i in range(3):
        gi = grad(lambda m: jnp.sum((m(to_snp(x[i])) - y[i]) ** 2))(to_snp(model))
        assert_trees_close(tree_util.tree_map(lambda v: v[i], per_ex), gi)


def test_equinox_like_static_function_field(x64):
    model = make_mlp([3, 5, 1], RNG, cls=MLPModule)
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=6)
    g = check_grad(module_loss, model, x, y)
    assert isinstance(g, MLPModule) and g.activation is jnp.tanh


def _scaled_tanh(v, scale):
    return scale * jnp.tanh(v / scale)


def test_static_field_holding_a_lambda_or_a_partial(x64):
    """The same field holding a lambda and a functools.partial of a user function: grad of the
    model called directly (no vmap), jit of it, vmap over examples of grad in the input, jvp."""
    sizes = [3, 4, 2]
    layers = make_mlp(sizes, RNG).layers
    x = RNG.normal(size=3)
    for act, np_act in ((lambda v: v * jnp.tanh(v), lambda v: v * np.tanh(v)),
                        (functools.partial(_scaled_tanh, scale=1.5),
                         lambda v: 1.5 * np.tanh(v / 1.5))):
        model = MLPModule(to_snp(layers), act)
        loss = lambda m, x: jnp.sum(jnp.sin(m(x)))
        h = np_act(np.asarray(layers[0].weight) @ x + np.asarray(layers[0].bias))
        want = np.sum(np.sin(np.asarray(layers[1].weight) @ h + np.asarray(layers[1].bias)))
        np.testing.assert_allclose(loss(model, to_snp(x)), want, rtol=1e-12)
        g = grad(loss)(model, to_snp(x))
        assert isinstance(g, MLPModule) and g.activation is act
        assert_trees_close(g, fd_grad(loss, (model, to_snp(x))))
        assert_trees_close(jit(grad(loss))(model, to_snp(x)), g)
        xs = RNG.normal(size=(4, 3))
        check_vmap(grad(loss, argnums=1), (model, xs), in_axes=(None, 0))
        t = RNG.normal(size=3)
        _, tan = jvp(lambda x: loss(model, x), (to_snp(x),), (to_snp(t),))
        np.testing.assert_allclose(tan, fd_jvp(lambda x: loss(model, x), (to_snp(x),),
                                               (to_snp(t),)), rtol=1e-6)


# --- an optax-like GradientTransformation chain -----------------------------------------------
class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
        zeros = tree_util.tree_map(jnp.zeros_like, params)
        return ScaleByAdamState(jnp.zeros([], jnp.int32), zeros, zeros)

    def update(updates, state, params=None):
        mu = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, updates)
        count = state.count + 1
        mu_hat = tree_util.tree_map(lambda m: m / (1 - b1 ** count), mu)
        nu_hat = tree_util.tree_map(lambda v: v / (1 - b2 ** count), nu)
        updates = tree_util.tree_map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay):
    def init(params):
        return ()

    def update(updates, state, params=None):
        return tree_util.tree_map(lambda g, p: g + weight_decay * p, updates, params), state
    return GradientTransformation(init, update)


def scale(step_size):
    return GradientTransformation(lambda params: (),
                                  lambda updates, state, params=None: (
                                      tree_util.tree_map(lambda g: step_size * g, updates), state))


def chain(*transforms):
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


def apply_updates(params, updates):
    return tree_util.tree_map(lambda p, u: p + u, params, updates)


def regression_loss(params, x, y):
    pred = jnp.tanh(x @ params["w1"]) @ params["w2"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def test_optax_like_chain_trains(x64):
    params = {"w1": RNG.normal(size=(3, 4)) * 0.5, "w2": RNG.normal(size=4) * 0.5,
              "b": np.array(0.0)}
    x = RNG.normal(size=(16, 3))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1]
    opt = chain(add_decayed_weights(1e-4), scale_by_adam(), scale(-0.05))
    check_grad(regression_loss, params, x, y)

    @jit
    def step(params, state, x, y):
        loss, g = value_and_grad(regression_loss)(params, x, y)
        updates, state = opt.update(g, state, params)
        return apply_updates(params, updates), state, loss

    def eager_step(params, state, x, y):
        loss, g = value_and_grad(regression_loss)(params, x, y)
        updates, state = opt.update(g, state, params)
        return apply_updates(params, updates), state, loss

    p, s = to_snp(params), opt.init(to_snp(params))
    pe, se = p, s
    losses = []
    for _ in range(60):
        p, s, loss = step(p, s, to_snp(x), to_snp(y))
        pe, se, _ = eager_step(pe, se, to_snp(x), to_snp(y))
        losses.append(float(loss))
    assert_trees_close(p, pe, rtol=1e-8, atol=1e-10)
    assert losses[-1] < 0.3 * losses[0]
    # the update is itself differentiable (a meta-gradient through one Adam step)
    def after_one_step(lr_scale):
        g = grad(regression_loss)(to_snp(params), to_snp(x), to_snp(y))
        u, _ = opt.update(g, opt.init(to_snp(params)), to_snp(params))
        new = tree_util.tree_map(lambda p, u: p + lr_scale * u, to_snp(params), u)
        return regression_loss(new, to_snp(x), to_snp(y))
    check_grad(after_one_step, 0.5)


# --- numpyro-like distributions and a model's log density ---------------------------------------
class Distribution:
    def log_prob(self, value):
        raise NotImplementedError


class Normal(Distribution):
    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        return -0.5 * z ** 2 - jnp.log(self.scale) - 0.5 * math.log(2 * math.pi)


class HalfCauchy(Distribution):
    def __init__(self, scale):
        self.scale = scale

    def log_prob(self, value):
        return math.log(2 / math.pi) - jnp.log(self.scale) - jnp.log1p((value / self.scale) ** 2)


class Bernoulli(Distribution):
    def __init__(self, logits):
        self.logits = logits

    def log_prob(self, value):
        return value * nn.log_sigmoid(self.logits) + (1 - value) * nn.log_sigmoid(-self.logits)


def model_log_density(params, x, y):
    """A hierarchical logistic regression: params are unconstrained."""
    tau = jnp.exp(params["log_tau"])
    lp = HalfCauchy(1.0).log_prob(tau) + params["log_tau"]       # + log|d tau / d log_tau|
    lp = lp + jnp.sum(Normal(0.0, tau).log_prob(params["w"]))
    lp = lp + Normal(0.0, 5.0).log_prob(params["b"])
    logits = x @ params["w"] + params["b"]
    return lp + jnp.sum(Bernoulli(logits).log_prob(y))


def np_model_log_density(params, x, y):
    tau = np.exp(params["log_tau"])
    lp = np.log(2 / np.pi) - np.log1p(tau ** 2) + params["log_tau"]
    lp += np.sum(-0.5 * (params["w"] / tau) ** 2 - np.log(tau) - 0.5 * np.log(2 * np.pi))
    lp += -0.5 * (params["b"] / 5) ** 2 - np.log(5.0) - 0.5 * np.log(2 * np.pi)
    logits = x @ params["w"] + params["b"]
    return lp + np.sum(y * -np.logaddexp(0, -logits) + (1 - y) * -np.logaddexp(0, logits))


def test_numpyro_like_distributions(x64):
    params = {"log_tau": np.array(-0.3), "w": RNG.normal(size=3), "b": np.array(0.2)}
    x = RNG.normal(size=(10, 3))
    y = (RNG.uniform(size=10) < 0.5).astype(np.float64)
    np.testing.assert_allclose(model_log_density(to_snp(params), to_snp(x), to_snp(y)),
                               np_model_log_density(params, x, y), rtol=1e-12)
    check_grad(model_log_density, params, x, y)
    # a Laplace approximation needs the Hessian of the flat log density
    flat = np.concatenate([[params["log_tau"]], params["w"], [params["b"]]])

    def flat_density(z):
        return model_log_density({"log_tau": z[0], "w": z[1:4], "b": z[4]}, to_snp(x), to_snp(y))
    h = hessian(flat_density)(to_snp(flat))
    for i in range(5):
        np.testing.assert_allclose(
            h[i], fd_grad(lambda z: grad(flat_density)(z)[i], (to_snp(flat),)), rtol=1e-5,
            atol=1e-6)
    # vmap over posterior samples (as an MCMC chain's log densities)
    samples = {"log_tau": RNG.normal(size=4) * 0.1, "w": RNG.normal(size=(4, 3)),
               "b": RNG.normal(size=4)}
    check_vmap(model_log_density, (samples, x, y), in_axes=(0, None, None))


# --- a tiny normalising-flow library -------------------------------------------------------------
class AffineCoupling:
    """RealNVP coupling: the second half is scaled and shifted by functions of the first."""

    def __init__(self, params, flip):
        self.params, self.flip = params, flip

    def _shift_and_log_scale(self, x1):
        h = jnp.tanh(x1 @ self.params["w"] + self.params["b"])
        out = h @ self.params["v"]
        d = out.shape[-1] // 2
        return out[..., :d], jnp.tanh(out[..., d:])

    def forward(self, x):
        d = x.shape[-1] // 2
        x1, x2 = (x[..., d:], x[..., :d]) if self.flip else (x[..., :d], x[..., d:])
        shift, log_scale = self._shift_and_log_scale(x1)
        y2 = x2 * jnp.exp(log_scale) + shift
        y = jnp.concatenate([y2, x1] if self.flip else [x1, y2], axis=-1)
        return y, jnp.sum(log_scale, axis=-1)


def flow_log_prob(params_list, x):
    log_det = 0.0
    z = x
    for i, params in enumerate(params_list):
        z, ld = AffineCoupling(params, flip=i % 2 == 1).forward(z)
        log_det = log_det + ld
    base = -0.5 * jnp.sum(z ** 2, axis=-1) - 0.5 * z.shape[-1] * math.log(2 * math.pi)
    return base + log_det


def make_flow(rng, dim=4, hidden=5, n=3):
    return [{"w": rng.normal(size=(dim // 2, hidden)) * 0.5, "b": rng.normal(size=hidden) * 0.1,
             "v": rng.normal(size=(hidden, dim)) * 0.3} for _ in range(n)]


def test_normalising_flow_with_a_flag_field(x64):
    flow = make_flow(RNG)
    x = RNG.normal(size=4)
    # the log-determinant equals log|det J| of the whole map
    def transform(x):
        z = x
        for i, p in enumerate(flow):
            z, _ = AffineCoupling(to_snp(p), flip=i % 2 == 1).forward(z)
        return z
    J = jacfwd(transform)(to_snp(x))
    lp = flow_log_prob(to_snp(flow), to_snp(x))
    z = transform(to_snp(x))
    want = -0.5 * np.sum(np.asarray(z) ** 2) - 2 * np.log(2 * np.pi) + np.linalg.slogdet(J)[1]
    np.testing.assert_allclose(lp, want, rtol=1e-10)
    nll = lambda flow, xs: -jnp.mean(flow_log_prob(flow, xs))
    xs = RNG.normal(size=(6, 4))
    check_grad(nll, flow, xs)
    check_grad(nll, flow, xs, argnum=1)
    check_vmap(flow_log_prob, (flow, xs), in_axes=(None, 0))
    # the score (grad of log p in x) by vmap(grad) against a loop
    check_vmap(grad(flow_log_prob, argnums=1), (flow, xs), in_axes=(None, 0))


class Dense:
    def __init__(self, w, use_bias, kind):
        self.w, self.use_bias, self.kind = w, use_bias, kind

    def __call__(self, x):
        y = x @ self.w["k"]
        if self.use_bias:
            y = y + self.w["b"]
        if self.kind == "tanh":
            y = jnp.tanh(y)
        return y


def dense_loss(w, x):
    m = Dense(w, use_bias=True, kind="tanh")
    return jnp.sum(m(x)) + jnp.sum(Dense(w, False, "linear")(x) ** 2)


def test_flag_and_string_fields_of_a_held_object(x64):
    """The same kind, another shape: a bool and a str field of an object held in a local and
    one built in place (called, not a method), read by ifs and a comparison; grad against
    finite differences, jit(grad) against eager, vmap over examples against a loop."""
    w = {"k": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    x = RNG.normal(size=(4, 3))
    want = np.sum(np.tanh(x @ w["k"] + w["b"])) + np.sum((x @ w["k"]) ** 2)
    np.testing.assert_allclose(dense_loss(to_snp(w), to_snp(x)), want, rtol=1e-12)
    g = check_grad(dense_loss, w, x)
    np.testing.assert_allclose(g["b"], np.sum(1 - np.tanh(x @ w["k"] + w["b"]) ** 2, axis=0),
                               rtol=1e-10)
    check_grad(dense_loss, w, x, argnum=1)
    check_vmap(dense_loss, (w, RNG.normal(size=(5, 4, 3))), in_axes=(None, 0))


class Coupling:
    """The same coupling as a small class hierarchy: the flipped layer a subclass that swaps
    the halves (no flag field)."""

    def __init__(self, params):
        self.params = params

    def split(self, x):
        d = x.shape[-1] // 2
        return x[..., :d], x[..., d:]

    def merge(self, x1, y2):
        return jnp.concatenate([x1, y2], axis=-1)

    def forward(self, x):
        x1, x2 = self.split(x)
        h = jnp.tanh(x1 @ self.params["w"] + self.params["b"])
        out = h @ self.params["v"]
        d = out.shape[-1] // 2
        log_scale = jnp.tanh(out[..., d:])
        y2 = x2 * jnp.exp(log_scale) + out[..., :d]
        return self.merge(x1, y2), jnp.sum(log_scale, axis=-1)


class FlippedCoupling(Coupling):
    def split(self, x):
        d = x.shape[-1] // 2
        return x[..., d:], x[..., :d]

    def merge(self, x1, y2):
        return jnp.concatenate([y2, x1], axis=-1)


def flow_log_prob_classes(params_list, x):
    log_det = 0.0
    z = x
    for i, params in enumerate(params_list):
        if i % 2:
            z, ld = FlippedCoupling(params).forward(z)
        else:
            z, ld = Coupling(params).forward(z)
        log_det = log_det + ld
    return -0.5 * jnp.sum(z ** 2, axis=-1) - 0.5 * z.shape[-1] * math.log(2 * math.pi) + log_det


def test_normalising_flow_class_hierarchy(x64):
    flow = make_flow(RNG)
    x = RNG.normal(size=4)

    def transform(x):
        z = x
        for i, p in enumerate(flow):
            z, _ = (FlippedCoupling if i % 2 else Coupling)(to_snp(p)).forward(z)
        return z
    J = jacfwd(transform)(to_snp(x))
    z = transform(to_snp(x))
    want = -0.5 * np.sum(np.asarray(z) ** 2) - 2 * np.log(2 * np.pi) + np.linalg.slogdet(J)[1]
    np.testing.assert_allclose(flow_log_prob_classes(to_snp(flow), to_snp(x)), want, rtol=1e-10)
    nll = lambda flow, xs: -jnp.mean(flow_log_prob_classes(flow, xs))
    xs = RNG.normal(size=(6, 4))
    check_grad(nll, flow, xs)
    check_grad(nll, flow, xs, argnum=1)
    check_vmap(flow_log_prob_classes, (flow, xs), in_axes=(None, 0))
    check_vmap(grad(flow_log_prob_classes, argnums=1), (flow, xs), in_axes=(None, 0))


# --- a neural ODE with a hand-written RK4 solver -------------------------------------------------
def rk4_step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt / 2 * k1, t + dt / 2, *args)
    k3 = f(y + dt / 2 * k2, t + dt / 2, *args)
    k4 = f(y + dt * k3, t + dt, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def odeint_rk4(f, y0, ts, *args):
    ys = [y0]
    y = y0
    for t0, t1 in zip(ts[:-1], ts[1:]):
        y = rk4_step(f, y, t0, t1 - t0, *args)
        ys.append(y)
    return jnp.stack(ys)


def dynamics(y, t, params):
    h = jnp.tanh(params["w1"] @ y + params["b1"] + t * params["wt"])
    return params["w2"] @ h


TS = tuple(np.linspace(0.0, 1.0, 6))


def node_loss(params, y0, target):
    ys = odeint_rk4(dynamics, y0, TS, params)
    return jnp.sum((ys[-1] - target) ** 2) + 0.01 * jnp.sum(ys ** 2)


def test_neural_ode_rk4(x64):
    params = {"w1": RNG.normal(size=(4, 2)), "b1": RNG.normal(size=4) * 0.1,
              "wt": RNG.normal(size=4) * 0.1, "w2": RNG.normal(size=(2, 4)) * 0.5}
    y0, target = RNG.normal(size=2), RNG.normal(size=2)
    check_grad(node_loss, params, y0, target)
    check_grad(node_loss, params, y0, target, argnum=1)
    # the flow's sensitivity to the initial state by forward mode
    flow = lambda y0: odeint_rk4(dynamics, y0, TS, to_snp(params))[-1]
    t = RNG.normal(size=2)
    _, tan = jvp(flow, (to_snp(y0),), (to_snp(t),))
    np.testing.assert_allclose(tan, fd_jvp(flow, (to_snp(y0),), (t,)), rtol=1e-6)
    check_vmap(node_loss, (params, RNG.normal(size=(3, 2)), target), in_axes=(None, 0, None))
