"""Issue 15, code written by others (tenth round): module systems as library authors write them
on top of JAX. A flax-linen-like Module with setup()/__call__, self.param through a Scope, a
@compact decorator whose inline submodules find their parent through a global context stack,
a BatchNorm whose running statistics live in a mutable "batch_stats" collection (Variable
objects with .value assigned inside apply), model.init / model.apply with variables dicts;
numpyro-like effect handlers (a global handler stack of context managers: seed, trace,
substitute) turning a model into a log density; and stax combinators (serial, FanOut,
parallel, FanInSum) building a residual block. Each under grad, jit(grad), vmap and hessian as
its author would use them, checked against float64 central differences, NumPy written out, a
Python loop and eager."""
import copy
import functools

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, hessian, jit, random, tree_util, vmap
from secant.example_libraries import stax
from secant.scipy import stats

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_np, to_snp

RNG = np.random.default_rng(10010)


# --- a flax-linen-like module system --------------------------------------------------------------
_MODULE_STACK = []          # the module whose __call__ runs now (compact submodules attach to it)


class Scope:
    """Where a module's variables live: a root dict of collections and a path into it."""
    def __init__(self, root, rng=None, mutable=(), path=()):
        self.root, self.rng, self.mutable, self.path = root, rng, mutable, path

    def collection(self, col):
        d = self.root.setdefault(col, {})
        for name in self.path:
            d = d.setdefault(name, {})
        return d

    def child(self, name):
        return type(self)(self.root, self.rng, self.mutable, self.path + (name,))


class InitScope(Scope):
    """model.init: variables are created on first use."""
    def child(self, name):
        return InitScope(self.root, np.random.default_rng(len(self.path) * 31 + len(name)),
                         self.mutable, self.path + (name,))

    def get(self, col, name, init_fn, shape):
        store = self.collection(col)
        if name not in store:
            store[name] = init_fn(self.rng, shape) if col == "params" else init_fn(shape)
        return store[name]

    def is_mutable(self, col):
        return True


@tree_util.register_pytree_node_class
class ApplyScope(Scope):
    """model.apply: variables are read, never created."""
    def get(self, col, name, init_fn, shape):
        return self.collection(col)[name]

    def is_mutable(self, col):
        return col in self.mutable

    def tree_flatten(self):
        return (self.root,), (self.mutable, self.path)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], None, aux[0], aux[1])


class Variable:
    def __init__(self, store, col, name, mutable):
        self.store, self.col, self.name, self.mutable = store, col, name, mutable

    @property
    def value(self):
        return self.store[self.name]

    @value.setter
    def value(self, v):
        if not self.mutable:
            raise ValueError(f"collection {self.col} is not mutable")
        self.store[self.name] = v


class Module:
    def _bind(self, scope):
        bound = copy.copy(self)
        object.__setattr__(bound, "scope", scope)
        object.__setattr__(bound, "_autonames", {})
        bound.setup()
        return bound

    def setup(self):
        pass

    def __setattr__(self, name, value):
        if isinstance(value, Module) and getattr(self, "scope", None) is not None:
            value = value._bind(self.scope.child(name))
        object.__setattr__(self, name, value)

    def param(self, name, init_fn, *shape):
        return self.scope.get("params", name, init_fn, shape)

    def variable(self, col, name, init_fn, *shape):
        self.scope.get(col, name, init_fn, shape)
        return Variable(self.scope.collection(col), col, name, self.scope.is_mutable(col))

    def _attach_inline(self, sub):
        kind = type(sub).__name__
        i = self._autonames.get(kind, 0)
        self._autonames[kind] = i + 1
        return sub._bind(self.scope.child(f"{kind}_{i}"))

    def init(self, seed, *args, **kwargs):
        variables = {"params": {}}
        bound = self._bind(InitScope(variables, rng=np.random.default_rng(seed)))
        bound(*args, **kwargs)
        return variables

    def apply(self, variables, *args, mutable=(), **kwargs):
        variables = tree_util.tree_map(lambda v: v, variables)     # a fresh copy of the dicts
        bound = self._bind(ApplyScope(variables, mutable=mutable))
        out = bound(*args, **kwargs)
        if mutable:
            return out, {col: variables[col] for col in mutable}
        return out


def compact(fn):
    @functools.wraps(fn)
    def wrapped(self, *args, **kwargs):
        _MODULE_STACK.append(self)
        try:
            return fn(self, *args, **kwargs)
        finally:
            _MODULE_STACK.pop()
    return wrapped


class Inline:
    """Base for layers built inside a @compact __call__: bound to the running module on call."""
    def __call__(self, *args, **kwargs):
        if getattr(self, "scope", None) is None:
            parent = _MODULE_STACK[-1]
            return parent._attach_inline(self)(*args, **kwargs)
        return self.forward(*args, **kwargs)


def lecun_normal(rng, shape):
    return rng.normal(size=shape) / np.sqrt(shape[0])


def zeros_init(rng, shape):
    return np.zeros(shape)


class Dense(Inline, Module):
    def __init__(self, features, use_bias=True):
        object.__setattr__(self, "features", features)
        object.__setattr__(self, "use_bias", use_bias)

    def forward(self, x):
        kernel = self.param("kernel", lecun_normal, x.shape[-1], self.features)
        y = x @ kernel
        if self.use_bias:
            y = y + self.param("bias", zeros_init, self.features)
        return y


class LayerNorm(Inline, Module):
    def __init__(self, eps=1e-6):
        object.__setattr__(self, "eps", eps)

    def forward(self, x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        scale = self.param("scale", lambda r, s: np.ones(s), x.shape[-1])
        return (x - mean) / jnp.sqrt(var + self.eps) * scale


class MLPSetup(Module):
    """setup()-style: submodules assigned as attributes, named by them."""
    def __init__(self, widths):
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "scope", None)

    def setup(self):
        self.layers = [Dense(w) for w in self.widths]        # a list: bound one by one below
        self.norm = LayerNorm()
        self.head = Dense(1, use_bias=False)
        object.__setattr__(self, "layers",
                           [layer._bind(self.scope.child(f"layers_{i}"))
                            for i, layer in enumerate(self.layers)])

    def __call__(self, x):
        for layer in self.layers:
            x = jnp.tanh(layer(x))
        return self.head(self.norm(x))[..., 0]


class MLPCompact(Module):
    """@compact-style: submodules created inline, named Dense_0, Dense_1, ..."""
    def __init__(self, widths):
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "scope", None)

    @compact
    def __call__(self, x):
        for w in self.widths:
            x = jnp.tanh(Dense(w)(x))
        return Dense(1, use_bias=False)(LayerNorm()(x))[..., 0]


X = RNG.normal(size=(6, 3))
Y = np.sin(X.sum(axis=1))


def np_mlp(params, x, widths, names):
    for name in names[:-2]:
        x = np.tanh(x @ params[name]["kernel"] + params[name]["bias"])
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    x = (x - mu) / np.sqrt(var + 1e-6) * params[names[-2]]["scale"]
    return (x @ params[names[-1]]["kernel"])[..., 0]


def test_flax_like_setup_and_compact_modules(x64):
    for model, names in ((MLPSetup((4, 3)), ["layers_0", "layers_1", "norm", "head"]),
                         (MLPCompact((4, 3)), ["Dense_0", "Dense_1", "LayerNorm_0", "Dense_2"])):
        variables = model.init(0, X)
        assert sorted(variables["params"]) == sorted(names)
        params = variables["params"]
        want = np_mlp(params, X, (4, 3), names)
        np.testing.assert_allclose(model.apply({"params": to_snp(params)}, jnp.asarray(X)), want,
                                   rtol=1e-12)

        def loss(params, x, y):
            pred = model.apply({"params": params}, x)
            return jnp.mean((pred - y) ** 2)

        g = check_grad(loss, params, X, Y)
        assert sorted(g) == sorted(names)
        # per-example predictions by vmap over x, against a loop
        check_vmap(lambda x: model.apply({"params": params}, x), (X,))
        # per-example gradients: vmap of grad over (x, y) pairs
        per_ex = vmap(grad(loss), in_axes=(None, 0, 0))(to_snp(params), jnp.asarray(X[:, None]),
                                                         jnp.asarray(Y[:, None]))
        mean_g = tree_util.tree_map(lambda v: np.mean(np.asarray(v), axis=0), per_ex)
        assert_trees_close(mean_g, g, rtol=1e-9, atol=1e-12)
        # a jitted SGD step lowers the loss
        step = jit(lambda p, x, y: tree_util.tree_map(lambda a, b: a - 0.1 * b, p,
                                                      grad(loss)(p, x, y)))
        new = step(to_snp(params), jnp.asarray(X), jnp.asarray(Y))
        assert float(loss(new, jnp.asarray(X), jnp.asarray(Y))) < float(
            loss(to_snp(params), jnp.asarray(X), jnp.asarray(Y)))


# --- a BatchNorm with a mutable batch_stats collection --------------------------------------------
class BatchNorm(Inline, Module):
    def __init__(self, momentum=0.9, eps=1e-5):
        object.__setattr__(self, "momentum", momentum)
        object.__setattr__(self, "eps", eps)

    def forward(self, x, train):
        ra_mean = self.variable("batch_stats", "mean", np.zeros, x.shape[-1])
        ra_var = self.variable("batch_stats", "var", np.ones, x.shape[-1])
        gamma = self.param("scale", lambda r, s: np.ones(s), x.shape[-1])
        beta = self.param("bias", zeros_init, x.shape[-1])
        if train:
            mean, var = jnp.mean(x, axis=0), jnp.var(x, axis=0)
            ra_mean.value = self.momentum * ra_mean.value + (1 - self.momentum) * mean
            ra_var.value = self.momentum * ra_var.value + (1 - self.momentum) * var
        else:
            mean, var = ra_mean.value, ra_var.value
        return (x - mean) / jnp.sqrt(var + self.eps) * gamma + beta


class Net(Module):
    def __init__(self):
        object.__setattr__(self, "scope", None)

    @compact
    def __call__(self, x, train=True):
        x = Dense(4)(x)
        x = BatchNorm()(x, train)
        return jnp.sum(jnp.tanh(x), axis=-1)


def test_batchnorm_mutable_collection_with_has_aux(x64):
    net = Net()
    variables = net.init(1, X)
    params, stats0 = variables["params"], variables["batch_stats"]

    def loss(params, batch_stats, x, y):
        pred, updates = net.apply({"params": params, "batch_stats": batch_stats}, x,
                                  mutable=("batch_stats",))
        return jnp.mean((pred - y) ** 2), updates["batch_stats"]

    (l, new_stats), g = secant.value_and_grad(loss, has_aux=True)(to_snp(params), to_snp(stats0),
                                                                   jnp.asarray(X), jnp.asarray(Y))
    h = X @ params["Dense_0"]["kernel"] + params["Dense_0"]["bias"]
    m, v = h.mean(0), h.var(0)
    # (init ran the layer in training mode, so stats0 holds one update already: 0.1 m, 0.9 + 0.1 v)
    s0 = to_np(stats0)["BatchNorm_0"]
    np.testing.assert_allclose(s0["mean"], 0.1 * m, rtol=1e-12)
    np.testing.assert_allclose(new_stats["BatchNorm_0"]["mean"], 0.9 * s0["mean"] + 0.1 * m,
                               rtol=1e-12)
    np.testing.assert_allclose(new_stats["BatchNorm_0"]["var"], 0.9 * s0["var"] + 0.1 * v,
                               rtol=1e-12)
    assert_trees_close(new_stats, loss(to_snp(params), to_snp(stats0), X, Y)[1], rtol=1e-12,
                       atol=0)      # (eager)
    want_pred = np.tanh((h - m) / np.sqrt(v + 1e-5)).sum(-1)
    np.testing.assert_allclose(l, np.mean((want_pred - Y) ** 2), rtol=1e-12)
    assert_trees_close(g, fd_grad(lambda p: loss(p, to_snp(stats0), X, Y)[0], (to_snp(params),)),
                       rtol=1e-5, atol=1e-7)
    # the same under jit, and eval mode reading the running statistics
    (l2, s2), g2 = jit(secant.value_and_grad(loss, has_aux=True))(
        to_snp(params), to_snp(stats0), jnp.asarray(X), jnp.asarray(Y))
    assert_trees_close((l2, s2, g2), (l, new_stats, g), rtol=1e-10, atol=1e-12)
    ev = net.apply({"params": to_snp(params), "batch_stats": to_snp(new_stats)}, jnp.asarray(X),
                   train=False)
    st = new_stats["BatchNorm_0"]
    want = np.tanh((h - np.asarray(st["mean"])) / np.sqrt(np.asarray(st["var"]) + 1e-5)).sum(-1)
    np.testing.assert_allclose(ev, want, rtol=1e-10)
    # eval mode is per-example: vmap over rows against a loop
    check_vmap(lambda x: net.apply({"params": params, "batch_stats": new_stats}, x, train=False),
               (X,))


# --- setup() submodules and a mutable batch_stats collection as flax's apply returns it -----------
class SetupBlock(Module):
    """nn.Module-like: submodules assigned in setup() (bound and named by __setattr__), a
    BatchNorm among them; apply(..., mutable=["batch_stats"]) returns (out, updates)."""
    def __init__(self, width):
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "scope", None)

    def setup(self):
        self.dense1 = Dense(self.width)
        self.bn = BatchNorm(momentum=0.8)
        self.dense2 = Dense(1, use_bias=False)

    def __call__(self, x, train=True):
        h = jnp.tanh(self.bn(self.dense1(x), train))
        return self.dense2(h)[..., 0] + jnp.sum(x, axis=-1)


def np_setup_block(params, stats, x):
    """(out, new batch_stats) of SetupBlock.apply in training mode, in NumPy."""
    d1, bn, d2 = params["dense1"], params["bn"], params["dense2"]
    h = x @ d1["kernel"] + d1["bias"]
    m, v = h.mean(0), h.var(0)
    new = {"bn": {"mean": 0.8 * stats["bn"]["mean"] + 0.2 * m,
                  "var": 0.8 * stats["bn"]["var"] + 0.2 * v}}
    h = np.tanh((h - m) / np.sqrt(v + 1e-5) * bn["scale"] + bn["bias"])
    return (h @ d2["kernel"])[..., 0] + x.sum(-1), new


def test_setup_submodules_with_mutable_batch_stats(x64):
    block = SetupBlock(5)
    variables = block.init(3, X)
    assert sorted(variables["params"]) == ["bn", "dense1", "dense2"]
    params = to_np(variables["params"])
    params["bn"]["scale"] = params["bn"]["scale"] + RNG.normal(size=5) * 0.3   # (not all ones)
    params["bn"]["bias"] = RNG.normal(size=5) * 0.3
    stats = to_np(variables["batch_stats"])

    def loss(params, stats, x, y):
        out, updates = block.apply({"params": params, "batch_stats": stats}, x,
                                   mutable=["batch_stats"])
        return jnp.mean((out - y) ** 2), updates["batch_stats"]

    out, new = np_setup_block(params, stats, X)
    (l, got), g = secant.value_and_grad(loss, has_aux=True)(to_snp(params), to_snp(stats),
                                                             jnp.asarray(X), jnp.asarray(Y))
    np.testing.assert_allclose(l, np.mean((out - Y) ** 2), rtol=1e-12)
    assert_trees_close(got, new, rtol=1e-12, atol=0)
    # the gradient in the parameters and in the running statistics (which the loss does not
    # read in training mode: zeros) against float64 central differences
    assert_trees_close(g, fd_grad(lambda p: loss(p, to_snp(stats), X, Y)[0], (to_snp(params),)),
                       rtol=1e-5, atol=1e-7)
    gs = grad(lambda s: loss(to_snp(params), s, X, Y)[0])(to_snp(stats))
    assert_trees_close(gs, tree_util.tree_map(np.zeros_like, stats), atol=0)
    # jit(grad) against grad
    f = lambda p, s, x, y: loss(p, s, x, y)[0]
    assert_trees_close(jit(grad(f))(to_snp(params), to_snp(stats), jnp.asarray(X),
                                    jnp.asarray(Y)), g, rtol=1e-10, atol=1e-12)
    # vmap(grad) over (x, y) pairs, each a batch of 2 rows, against a Python loop of grad
    xb, yb = X.reshape(3, 2, 3), Y.reshape(3, 2)
    per = vmap(grad(f), in_axes=(None, None, 0, 0))(to_snp(params), to_snp(stats),
                                                     jnp.asarray(xb), jnp.asarray(yb))
    for i in range(3):
        one = grad(f)(to_snp(params), to_snp(stats), jnp.asarray(xb[i]), jnp.asarray(yb[i]))
        assert_trees_close(tree_util.tree_map(lambda v: np.asarray(v)[i], per), one,
                           rtol=1e-10, atol=1e-12)
    # eval mode reads the updated statistics: per example, vmap against a loop
    check_vmap(lambda x: block.apply({"params": params, "batch_stats": new}, x, train=False),
               (X,))


# --- numpyro-like effect handlers -------------------------------------------------------------------
_HANDLERS = []


class Messenger:
    def __init__(self, fn=None):
        self.fn = fn

    def __enter__(self):
        _HANDLERS.append(self)
        return self

    def __exit__(self, *exc):
        assert _HANDLERS.pop() is self

    def process(self, msg):
        pass

    def postprocess(self, msg):
        pass

    def __call__(self, *args, **kwargs):
        with self:
            return self.fn(*args, **kwargs)


class trace(Messenger):
    def __enter__(self):
        super().__enter__()
        self.sites = {}
        return self.sites

    def postprocess(self, msg):
        self.sites[msg["name"]] = dict(msg)

    def get_trace(self, *args, **kwargs):
        self(*args, **kwargs)
        return self.sites


class substitute(Messenger):
    def __init__(self, fn=None, data=None):
        super().__init__(fn)
        self.data = data

    def process(self, msg):
        if msg["name"] in self.data:
            msg["value"] = self.data[msg["name"]]


class seed(Messenger):
    def __init__(self, fn=None, rng_seed=0):
        super().__init__(fn)
        self.key = random.PRNGKey(rng_seed)

    def process(self, msg):
        if msg["value"] is None:
            self.key, sub = random.split(self.key)
            msg["key"] = sub


class Normal:
    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def sample(self, key):
        return self.loc + self.scale * random.normal(key, jnp.shape(self.loc))

    def log_prob(self, x):
        return stats.norm.logpdf(x, self.loc, self.scale)


class HalfCauchy:
    def __init__(self, scale):
        self.scale = scale

    def sample(self, key):
        return jnp.abs(self.scale * random.cauchy(key))

    def log_prob(self, x):
        return jnp.log(2.0) + stats.cauchy.logpdf(x, 0.0, self.scale)


def sample(name, dist, obs=None):
    msg = {"name": name, "dist": dist, "value": obs, "is_observed": obs is not None, "key": None}
    for h in reversed(_HANDLERS):
        h.process(msg)
    if msg["value"] is None:
        msg["value"] = dist.sample(msg["key"])
    for h in _HANDLERS:
        h.postprocess(msg)
    return msg["value"]


def eight_schools(sigma, y=None):
    mu = sample("mu", Normal(0.0, 5.0))
    tau = sample("tau", HalfCauchy(5.0))
    theta = sample("theta", Normal(mu * jnp.ones(len(sigma)), tau))
    return sample("obs", Normal(theta, sigma), obs=y)


SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
Y8 = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])


def log_density(model, params, *args):
    tr = trace(substitute(model, data=params)).get_trace(*args)
    total = 0.0
    for site in tr.values():
        total = total + jnp.sum(site["dist"].log_prob(site["value"]))
    return total


def potential(params):
    return -log_density(eight_schools, params, SIGMA, Y8)


def np_potential(p):
    from scipy import stats as sst
    mu, tau, theta = p["mu"], p["tau"], p["theta"]
    lp = sst.norm.logpdf(mu, 0, 5) + np.log(2) + sst.cauchy.logpdf(tau, 0, 5)
    lp += sst.norm.logpdf(theta, mu, tau).sum() + sst.norm.logpdf(Y8, theta, SIGMA).sum()
    return -lp


def test_effect_handlers_log_density(x64):
    p = {"mu": 4.0, "tau": 3.0, "theta": RNG.normal(size=8) * 3 + 4}
    np.testing.assert_allclose(potential(to_snp(p)), np_potential(p), rtol=1e-12)
    assert not _HANDLERS
    g = grad(potential)(to_snp(p))
    assert not _HANDLERS
    assert_trees_close(g, fd_grad(potential, (to_snp(p),)), rtol=1e-5, atol=1e-7)
    # closed forms of two of the partials
    want_mu = p["mu"] / 25 - np.sum(p["theta"] - p["mu"]) / p["tau"] ** 2
    np.testing.assert_allclose(g["mu"], want_mu, rtol=1e-10)
    want_theta = (p["theta"] - p["mu"]) / p["tau"] ** 2 - (Y8 - p["theta"]) / SIGMA ** 2
    np.testing.assert_allclose(g["theta"], want_theta, rtol=1e-10)
    # chains as a batch: vmap over a batch of parameter dicts, against a loop
    batch = {"mu": RNG.normal(size=3), "tau": 1 + RNG.random(3), "theta": RNG.normal(size=(3, 8))}
    check_vmap(potential, (batch,))
    check_vmap(grad(potential), (batch,))
    # the hessian in mu: 1/25 + 8/tau^2
    hmu = hessian(lambda mu: potential({**to_snp(p), "mu": mu}))(4.0)
    np.testing.assert_allclose(hmu, 1 / 25 + 8 / p["tau"] ** 2, rtol=1e-10)
    assert not _HANDLERS


def test_effect_handlers_seeded_prior_sample_under_jit(x64):
    def prior_draw(seed_):
        tr = trace(seed(eight_schools, rng_seed=seed_)).get_trace(SIGMA)
        return {k: v["value"] for k, v in tr.items()}

    draw = prior_draw(3)
    assert sorted(draw) == ["mu", "obs", "tau", "theta"]
    assert draw["theta"].shape == (8,) and float(draw["tau"]) > 0
    # keys are split in site order: mu gets the first subkey of PRNGKey(3)
    k = random.PRNGKey(3)
    k, sub = random.split(k)
    np.testing.assert_allclose(draw["mu"], 5.0 * random.normal(sub, ()), rtol=1e-12)
    # the log density of a prior draw (observations included), eager against jit
    f = lambda d: log_density(eight_schools, d, SIGMA)
    np.testing.assert_allclose(jit(f)(draw), f(draw), rtol=1e-12)
    assert not _HANDLERS


# --- stax combinators: a residual block -------------------------------------------------------------
def ResBlock(width):
    main = stax.serial(stax.Dense(width), stax.Tanh, stax.Dense(width))
    return stax.serial(stax.FanOut(2), stax.parallel(main, stax.Identity), stax.FanInSum,
                       stax.Tanh)


init_fun, apply_fun = stax.serial(stax.Dense(3), ResBlock(3), ResBlock(3), stax.Dense(1))


def test_stax_residual_blocks(x64):
    out_shape, params = init_fun(random.PRNGKey(0), (-1, 3))
    assert out_shape == (-1, 1)
    params = to_np(params)

    def np_apply(params, x):
        (W0, b0), blk1, blk2, (W3, b3) = params
        x = x @ W0 + b0
        for blk in (blk1, blk2):
            _, ((( Wa, ba), _, (Wb, bb)), _), _, _ = blk
            x = np.tanh(x + (np.tanh(x @ Wa + ba) @ Wb + bb))
        return x @ W3 + b3

    np.testing.assert_allclose(apply_fun(to_snp(params), jnp.asarray(X)), np_apply(params, X),
                               rtol=1e-12)

    def loss(params, x, y):
        return jnp.mean((apply_fun(params, x)[:, 0] - y) ** 2)

    check_grad(loss, params, X, Y)
    check_vmap(lambda x: apply_fun(params, x), (X,))
    # a second derivative through both blocks: hessian in the first bias
    f = lambda b: loss(((params[0][0], b),) + tuple(params[1:]), X, Y)
    b0 = np.asarray(params[0][1])
    H = hessian(f)(jnp.asarray(b0))
    eye = np.eye(b0.size) * 1e-6
    Hfd = np.stack([(np.asarray(grad(f)(b0 + e)) - np.asarray(grad(f)(b0 - e))) / 2e-6
                    for e in eye])
    np.testing.assert_allclose(H, Hfd, rtol=1e-5, atol=1e-7)
