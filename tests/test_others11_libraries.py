"""Issue 15, code written by others (eleventh round): library machinery as flax, optax, equinox
and distrax write it on top of JAX. A flax.struct-like dataclass decorator (frozen, registered,
fields marked static by metadata, `.replace`) and a PyTreeNode base class registering its
subclasses in __init_subclass__, used for a TrainState with apply_gradients and a create
classmethod; optax's inject_hyperparams (a wrapper that reads the inner factory's signature and
keeps numeric hyperparameters in the optimiser state, schedules called with the step count);
equinox's filter_jit / filter_grad (decorators that partition arguments into arrays and statics
by a predicate); and a distrax-like Bijector hierarchy (Chain of ScalarAffine, Tanh, Exp) inside
a Transformed distribution. Each under grad, jit(grad), vmap and a second-order composition,
checked against float64 central differences, NumPy written out, SciPy, a Python loop and eager."""
import dataclasses
import functools
import inspect
from typing import Any, Callable, NamedTuple

import numpy as np
import scipy.stats

import secant
import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_np, to_snp


# --------------------------------------------------------------------------------------------
# flax.struct written by hand


def field(pytree_node=True, **kwargs):
    return dataclasses.field(metadata={"pytree_node": pytree_node}, **kwargs)


def struct_dataclass(clz):
    data_clz = dataclasses.dataclass(frozen=True)(clz)
    meta_fields, data_fields = [], []
    for f in dataclasses.fields(data_clz):
        (data_fields if f.metadata.get("pytree_node", True) else meta_fields).append(f.name)

    def replace(self, **updates):
        return dataclasses.replace(self, **updates)

    data_clz.replace = replace

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, data):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, data))
        return data_clz(**kwargs)

    tree_util.register_pytree_node(data_clz, flatten, unflatten)
    return data_clz


class PyTreeNode:
    def __init_subclass__(cls, **kwargs):
        struct_dataclass(cls)
        super().__init_subclass__(**kwargs)


# optax-like transformations that the TrainState holds


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class TraceState(NamedTuple):
    trace: Any


def sgd(learning_rate, momentum=0.0):
    def init(params):
        return TraceState(trace=tree_util.tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        trace = tree_util.tree_map(lambda g, t: g + momentum * t, updates, state.trace)
        return tree_util.tree_map(lambda t: -learning_rate * t, trace), TraceState(trace=trace)

    return GradientTransformation(init, update)


def apply_updates(params, updates):
    return tree_util.tree_map(lambda p, u: p + u, params, updates)


class TrainState(PyTreeNode):
    step: Any
    apply_fn: Callable = field(pytree_node=False)
    params: Any = field(pytree_node=True)
    tx: GradientTransformation = field(pytree_node=False)
    opt_state: Any = field(pytree_node=True)

    def apply_gradients(self, *, grads, **kwargs):
        updates, new_opt_state = self.tx.update(grads, self.opt_state, self.params)
        new_params = apply_updates(self.params, updates)
        return self.replace(step=self.step + 1, params=new_params, opt_state=new_opt_state, **kwargs)

    @classmethod
    def create(cls, *, apply_fn, params, tx, **kwargs):
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx, opt_state=tx.init(params), **kwargs)


def mlp_apply(variables, x):
    p = variables["params"]
    h = jnp.tanh(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"])
    return h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"]


def _mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    return {"Dense_0": {"kernel": rng.normal(size=(3, 5)) * 0.5, "bias": rng.normal(size=5) * 0.1},
            "Dense_1": {"kernel": rng.normal(size=(5, 2)) * 0.5, "bias": rng.normal(size=2) * 0.1}}


def _batch(seed=1, n=8):
    rng = np.random.default_rng(seed)
    return {"image": rng.normal(size=(n, 3)), "label": rng.normal(size=(n, 2))}


def _loss_of(state_apply, params, batch):
    pred = state_apply({"params": params}, batch["image"])
    return jnp.mean((pred - batch["label"]) ** 2)


@jit
def train_step(state, batch):
    def loss_fn(params):
        return _loss_of(state.apply_fn, params, batch)

    loss, grads = secant.value_and_grad(loss_fn)(state.params)
    state = state.apply_gradients(grads=grads)
    return state, loss


def _numpy_mlp_grad(p, batch):
    x, y = batch["image"], batch["label"]
    z = x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"]
    h = np.tanh(z)
    pred = h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"]
    d = 2.0 * (pred - y) / pred.size
    dh = d @ p["Dense_1"]["kernel"].T * (1 - h ** 2)
    return {"Dense_0": {"kernel": x.T @ dh, "bias": dh.sum(0)},
            "Dense_1": {"kernel": h.T @ d, "bias": d.sum(0)}}


def test_flax_like_train_state_apply_gradients_under_jit(x64):
    params = to_snp(_mlp_params())
    batch = to_snp(_batch())
    state = TrainState.create(apply_fn=mlp_apply, params=params, tx=sgd(0.1, momentum=0.9))
    np_params, np_trace = to_np(params), tree_util.tree_map(np.zeros_like, to_np(params))
    for _ in range(4):
        state, loss = train_step(state, batch)
        g = _numpy_mlp_grad(np_params, to_np(batch))
        np_trace = tree_util.tree_map(lambda g_, t: g_ + 0.9 * t, g, np_trace)
        np_params = tree_util.tree_map(lambda p, t: p - 0.1 * t, np_params, np_trace)
    assert int(state.step) == 4
    assert state.apply_fn is mlp_apply and isinstance(state, TrainState)
    assert_trees_close(state.params, np_params, rtol=1e-10, atol=1e-12)
    assert_trees_close(state.opt_state.trace, np_trace, rtol=1e-10, atol=1e-12)


def test_train_state_differentiated_and_vmapped(x64):
    params = to_snp(_mlp_params())
    batch = to_snp(_batch())
    state = TrainState.create(apply_fn=mlp_apply, params=params, tx=sgd(0.05, momentum=0.5))

    def loss_after_two_steps(state, batch):
        for _ in range(2):
            grads = grad(lambda p: _loss_of(state.apply_fn, p, batch))(state.params)
            state = state.apply_gradients(grads=grads)
        return _loss_of(state.apply_fn, state.params, batch)

    def meta_loss(params, state, batch):        # (grad of a state holding the int step is
        return loss_after_two_steps(state.replace(params=params), batch)   # refused, as in JAX)

    g = check_grad(meta_loss, params, state, batch)
    assert set(g) == {"Dense_0", "Dense_1"}
    # an ensemble of train states stepped by vmap, against a loop
    tx = sgd(0.1)       # (one optimiser: its closures are the states' aux data)
    stacked = tree_util.tree_map(lambda *v: jnp.stack(v), *[
        TrainState.create(apply_fn=mlp_apply, params=to_snp(_mlp_params(s)), tx=tx) for s in range(3)])
    out = vmap(train_step, in_axes=(0, None))(stacked, batch)
    for i in range(3):
        one = tree_util.tree_map(lambda v: v[i], stacked)
        want_state, want_loss = train_step(one, batch)
        assert_trees_close(tree_util.tree_map(lambda v: v[i], out[0].params), want_state.params)
        np.testing.assert_allclose(out[1][i], want_loss, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# optax.inject_hyperparams written by hand


class InjectHyperparamsState(NamedTuple):
    count: Any
    hyperparams: dict
    inner_state: Any


def inject_hyperparams(inner_factory):
    sig = inspect.signature(inner_factory)

    @functools.wraps(inner_factory)
    def wrapped(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        sched_hps, numeric_hps, other_hps = {}, {}, {}
        for name, value in bound.arguments.items():
            if callable(value):
                sched_hps[name] = value
            elif isinstance(value, (int, float)) or hasattr(value, "shape"):
                numeric_hps[name] = value
            else:
                other_hps[name] = value

        def schedule_fn(count, dtype):
            return {k: jnp.asarray(f(count), dtype=dtype) for k, f in sched_hps.items()}

        def init_fn(params):
            count = jnp.zeros([], jnp.int32)
            dtype = tree_util.tree_leaves(params)[0].dtype
            hparams = {k: jnp.asarray(v, dtype=dtype) for k, v in numeric_hps.items()}
            hparams.update(schedule_fn(count, dtype))
            return InjectHyperparamsState(count, hparams, inner_factory(**other_hps, **hparams).init(params))

        def update_fn(updates, state, params=None):
            dtype = tree_util.tree_leaves(updates)[0].dtype
            hparams = {k: state.hyperparams[k] for k in numeric_hps}
            hparams.update(schedule_fn(state.count, dtype))
            updates, inner_state = inner_factory(**other_hps, **hparams).update(updates, state.inner_state, params)
            return updates, InjectHyperparamsState(state.count + 1, hparams, inner_state)

        return GradientTransformation(init_fn, update_fn)

    return wrapped


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
        z = tree_util.tree_map(jnp.zeros_like, params)
        return ScaleByAdamState(jnp.zeros([], jnp.int32), z, z)

    def update(updates, state, params=None):
        mu = tree_util.tree_map(lambda g, m: (1 - b1) * g + b1 * m, updates, state.mu)
        nu = tree_util.tree_map(lambda g, v: (1 - b2) * g ** 2 + b2 * v, updates, state.nu)
        count = state.count + 1
        mu_hat = tree_util.tree_map(lambda m: m / (1 - b1 ** count), mu)
        nu_hat = tree_util.tree_map(lambda v: v / (1 - b2 ** count), nu)
        new = tree_util.tree_map(lambda m, v: -learning_rate * m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return new, ScaleByAdamState(count, mu, nu)

    return GradientTransformation(init, update)


def cosine_decay(init_value, decay_steps):
    def schedule(count):
        frac = jnp.minimum(count, decay_steps) / decay_steps
        return init_value * 0.5 * (1 + jnp.cos(jnp.pi * frac))
    return schedule


def _quad_loss(params, target):
    return jnp.sum((params["w"] - target) ** 2) + jnp.sum(params["b"] ** 4)


def test_inject_hyperparams_schedule_against_numpy(x64):
    target = jnp.asarray([1.0, -2.0, 0.5])
    params = {"w": jnp.zeros(3), "b": jnp.asarray([0.3, -0.2])}
    opt = inject_hyperparams(adam)(learning_rate=cosine_decay(0.1, 5), b1=0.8)
    state = opt.init(params)
    assert set(state.hyperparams) == {"learning_rate", "b1", "b2", "eps"}

    @jit
    def step(params, state):
        g = grad(_quad_loss)(params, target)
        updates, state = opt.update(g, state, params)
        return apply_updates(params, updates), state

    p_np = to_np(params)
    m = tree_util.tree_map(np.zeros_like, p_np)
    v = tree_util.tree_map(np.zeros_like, p_np)
    for k in range(7):
        params, state = step(params, state)
        g = {"w": 2 * (p_np["w"] - np.asarray(target)), "b": 4 * p_np["b"] ** 3}
        m = tree_util.tree_map(lambda g_, m_: 0.2 * g_ + 0.8 * m_, g, m)
        v = tree_util.tree_map(lambda g_, v_: 0.001 * g_ ** 2 + 0.999 * v_, g, v)
        lr = 0.1 * 0.5 * (1 + np.cos(np.pi * min(k, 5) / 5))
        p_np = tree_util.tree_map(lambda p, m_, v_: p - lr * (m_ / (1 - 0.8 ** (k + 1)))
                                  / (np.sqrt(v_ / (1 - 0.999 ** (k + 1))) + 1e-8), p_np, m, v)
        np.testing.assert_allclose(state.hyperparams["learning_rate"], lr, rtol=1e-12)
    assert_trees_close(params, p_np, rtol=1e-9, atol=1e-12)
    assert int(state.count) == 7


def test_hypergradient_of_an_injected_learning_rate(x64):
    """The learning rate lives in the state, so a user differentiates the loss after a few steps
    with respect to state.hyperparams['learning_rate'] (and the second derivative by grad of grad)."""
    target = jnp.asarray([1.0, -2.0, 0.5])
    params = {"w": jnp.zeros(3), "b": jnp.asarray([0.3, -0.2])}
    opt = inject_hyperparams(sgd)(learning_rate=0.05, momentum=0.5)

    def loss_after(lr):
        state = opt.init(params)
        state = state._replace(hyperparams={**state.hyperparams, "learning_rate": lr})
        p = params
        for _ in range(3):
            updates, state = opt.update(grad(_quad_loss)(p, target), state, p)
            p = apply_updates(p, updates)
        return _quad_loss(p, target)

    check_grad(loss_after, 0.05)
    g2 = grad(grad(loss_after))(jnp.asarray(0.05))
    want = (grad(loss_after)(jnp.asarray(0.05 + 1e-5)) - grad(loss_after)(jnp.asarray(0.05 - 1e-5))) / 2e-5
    np.testing.assert_allclose(g2, want, rtol=1e-5)
    check_vmap(grad(loss_after), (np.asarray([0.01, 0.05, 0.1]),))


# --------------------------------------------------------------------------------------------
# equinox's filter_jit / filter_grad written by hand


def is_array(x):
    return isinstance(x, (secant.Array, np.ndarray)) or hasattr(x, "aval")


def is_inexact_array(x):
    return is_array(x) and jnp.issubdtype(x.dtype, jnp.inexact)


def partition(pytree, filter_spec):
    filt = tree_util.tree_map(filter_spec, pytree)
    dyn = tree_util.tree_map(lambda keep, x: x if keep else None, filt, pytree)
    static = tree_util.tree_map(lambda keep, x: None if keep else x, filt, pytree)
    return dyn, static


def combine(*pytrees):
    def pick(*xs):
        for x in xs:
            if x is not None:
                return x
        return None
    return tree_util.tree_map(pick, *pytrees, is_leaf=lambda x: x is None)


class _Static:
    """A hashable box for the static half (equinox wraps it so jit can use it as a static arg)."""

    def __init__(self, value):
        self.value = value
        self._leaves, self._def = tree_util.tree_flatten(value)

    def __hash__(self):
        return hash((self._def, tuple(id(x) if callable(x) else x for x in self._leaves)))

    def __eq__(self, other):
        return isinstance(other, _Static) and hash(self) == hash(other)


def filter_jit(fun):
    @functools.partial(jit, static_argnums=1)
    def inner(dynamic, static):
        args, kwargs = combine(dynamic, static.value)
        return fun(*args, **kwargs)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        dynamic, static = partition((args, kwargs), is_array)
        return inner(dynamic, _Static(static))

    return wrapper


def filter_grad(fun):
    @functools.wraps(fun)
    def wrapper(x, *args, **kwargs):
        diff_x, nondiff_x = partition(x, is_inexact_array)

        def call(d):
            return fun(combine(d, nondiff_x), *args, **kwargs)

        return grad(call)(diff_x)

    return wrapper


@dataclasses.dataclass
class Linear:
    weight: Any
    bias: Any
    activation: Callable
    use_bias: bool
    name: str

    def __call__(self, x):
        y = self.weight @ x
        if self.use_bias:
            y = y + self.bias
        return self.activation(y)


tree_util.register_dataclass(Linear, data_fields=["weight", "bias", "activation", "use_bias", "name"],
                             meta_fields=[])


@dataclasses.dataclass
class MLPModule:
    layers: list
    steps: Any  # an int array: counted, never differentiated

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


tree_util.register_dataclass(MLPModule, data_fields=["layers", "steps"], meta_fields=[])


def _module(seed=0):
    rng = np.random.default_rng(seed)
    return MLPModule(
        layers=[Linear(jnp.asarray(rng.normal(size=(4, 3))), jnp.asarray(rng.normal(size=4)),
                       jnp.tanh, True, "l0"),
                Linear(jnp.asarray(rng.normal(size=(1, 4))), jnp.asarray(rng.normal(size=1)),
                       lambda y: y, False, "l1")],
        steps=jnp.asarray(3, dtype=jnp.int32))


@filter_jit
@filter_grad
def grads_of(model, x, y):
    pred = vmap(model)(x)[:, 0]
    return jnp.mean((pred - y) ** 2)


def test_filter_grad_and_filter_jit(x64):
    model = _module()
    rng = np.random.default_rng(2)
    x, y = jnp.asarray(rng.normal(size=(6, 3))), jnp.asarray(rng.normal(size=6))

    def loss(model):
        return jnp.mean((vmap(model)(x)[:, 0] - y) ** 2)

    g = grads_of(model, x, y)
    assert isinstance(g, MLPModule)
    # the non-arrays and the int array come back as None, as in equinox
    assert g.steps is None and g.layers[0].activation is None and g.layers[1].name is None
    assert g.layers[1].use_bias is None
    eager = filter_grad(loss)(model)
    for got_l, want_l, layer in zip(g.layers, eager.layers, model.layers):
        w_fd = fd_grad(lambda w: loss(_swap(model, layer, weight=w)), (layer.weight,))
        b_fd = fd_grad(lambda b: loss(_swap(model, layer, bias=b)), (layer.bias,))
        assert_trees_close(got_l.weight, w_fd, rtol=1e-5, atol=1e-7)
        assert_trees_close(want_l.weight, w_fd, rtol=1e-5, atol=1e-7)
        assert_trees_close(got_l.bias, b_fd, rtol=1e-5, atol=1e-7)
    # the second layer does not use its bias: zero gradient, not None
    np.testing.assert_array_equal(g.layers[1].bias, np.zeros(1))


def _swap(model, layer, **changes):
    return dataclasses.replace(model, layers=[dataclasses.replace(l, **changes) if l is layer else l
                                              for l in model.layers])


# --------------------------------------------------------------------------------------------
# distrax-like bijectors and distributions


class Jittable:
    """distrax's base: every subclass a pytree of its __dict__ (rebuilt without __init__)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        tree_util.register_pytree_node(cls, _jittable_flatten, functools.partial(_jittable_unflatten, cls))


def _jittable_flatten(obj):
    return (dict(vars(obj)),), None


def _jittable_unflatten(cls, aux, children):
    obj = object.__new__(cls)
    obj.__dict__.update(children[0])
    return obj


class Bijector(Jittable):
    def forward(self, x):
        return self.forward_and_log_det(x)[0]

    def inverse(self, y):
        return self.inverse_and_log_det(y)[0]

    def forward_log_det_jacobian(self, x):
        return self.forward_and_log_det(x)[1]

    def inverse_and_log_det(self, y):
        raise NotImplementedError(type(self).__name__)


class ScalarAffine(Bijector):
    def __init__(self, shift, scale):
        self.shift, self.scale = shift, scale

    def forward_and_log_det(self, x):
        return self.scale * x + self.shift, jnp.log(jnp.abs(self.scale)) * jnp.ones_like(x)

    def inverse_and_log_det(self, y):
        return (y - self.shift) / self.scale, -jnp.log(jnp.abs(self.scale)) * jnp.ones_like(y)


class Exp(Bijector):
    def forward_and_log_det(self, x):
        return jnp.exp(x), x

    def inverse_and_log_det(self, y):
        x = jnp.log(y)
        return x, -x


class Tanh(Bijector):
    def forward_and_log_det(self, x):
        return jnp.tanh(x), 2.0 * (jnp.log(2.0) - x - secant.nn.softplus(-2.0 * x))

    def inverse_and_log_det(self, y):
        x = jnp.arctanh(y)
        return x, -self.forward_log_det_jacobian(x)


class Chain(Bijector):
    """Applies the bijectors right to left, as distrax.Chain does."""

    def __init__(self, bijectors):
        self._bijectors = list(bijectors)

    def forward_and_log_det(self, x):
        x, log_det = self._bijectors[-1].forward_and_log_det(x)
        for b in reversed(self._bijectors[:-1]):
            x, ld = b.forward_and_log_det(x)
            log_det = log_det + ld
        return x, log_det

    def inverse_and_log_det(self, y):
        y, log_det = self._bijectors[0].inverse_and_log_det(y)
        for b in self._bijectors[1:]:
            y, ld = b.inverse_and_log_det(y)
            log_det = log_det + ld
        return y, log_det


class Distribution(Jittable):
    def log_prob(self, value):
        raise NotImplementedError

    def sample_and_log_prob(self, *, seed, sample_shape=()):
        x = self.sample(seed=seed, sample_shape=sample_shape)
        return x, self.log_prob(x)


class Normal(Distribution):
    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        return -0.5 * z ** 2 - jnp.log(self.scale) - 0.5 * jnp.log(2 * jnp.pi)

    def sample(self, *, seed, sample_shape=()):
        shape = tuple(sample_shape) + jnp.shape(self.loc)
        return self.loc + self.scale * secant.random.normal(seed, shape)


class Transformed(Distribution):
    def __init__(self, distribution, bijector):
        self.distribution, self.bijector = distribution, bijector

    def log_prob(self, value):
        x, ildj = self.bijector.inverse_and_log_det(value)
        return self.distribution.log_prob(x) + ildj

    def sample(self, *, seed, sample_shape=()):
        return self.bijector.forward(self.distribution.sample(seed=seed, sample_shape=sample_shape))

    def sample_and_log_prob(self, *, seed, sample_shape=()):
        x = self.distribution.sample(seed=seed, sample_shape=sample_shape)
        y, fldj = self.bijector.forward_and_log_det(x)
        return y, self.distribution.log_prob(x) - fldj


def test_transformed_log_normal_against_scipy(x64):
    y = jnp.asarray([0.3, 1.0, 2.5])

    def log_prob(params, y):
        dist = Transformed(Normal(0.0, 1.0), Chain([Exp(), ScalarAffine(params["loc"], params["scale"])]))
        return dist.log_prob(y)

    params = {"loc": jnp.asarray(0.2), "scale": jnp.asarray(0.7)}
    want = scipy.stats.lognorm(s=0.7, scale=np.exp(0.2)).logpdf(np.asarray(y))
    np.testing.assert_allclose(log_prob(params, y), want, rtol=1e-12)
    np.testing.assert_allclose(jit(log_prob)(params, y), want, rtol=1e-12)
    check_grad(lambda p: jnp.sum(log_prob(p, y)), params)
    # per-point gradients by vmap against a loop
    check_vmap(lambda yy: grad(lambda p: log_prob(p, yy))(params), (np.asarray(y),))


def test_tanh_squashed_normal_sample_and_log_prob(x64):
    """A SAC-style policy: a tanh-squashed affine normal; log_prob of its own sample matches the
    one sample_and_log_prob returns, and the reparameterised loss is differentiated."""
    key = secant.random.PRNGKey(0)

    def policy(params):
        base = Normal(jnp.zeros(2), jnp.ones(2))
        return Transformed(base, Chain([Tanh(), ScalarAffine(params["mu"], jnp.exp(params["log_std"]))]))

    params = {"mu": jnp.asarray([0.1, -0.3]), "log_std": jnp.asarray([-0.5, -1.0])}
    act, lp = policy(params).sample_and_log_prob(seed=key, sample_shape=(5,))
    np.testing.assert_allclose(policy(params).log_prob(act), lp, rtol=1e-9, atol=1e-9)

    def loss(params):
        a, logp = policy(params).sample_and_log_prob(seed=key, sample_shape=(5,))
        return jnp.mean(0.2 * jnp.sum(logp, -1) - jnp.sum(a ** 2, -1))

    check_grad(loss, params)
    keys = secant.random.split(key, 3)
    check_vmap(lambda k: policy(params).sample_and_log_prob(seed=k, sample_shape=(2,)), (keys,))
