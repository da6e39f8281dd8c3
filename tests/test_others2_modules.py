"""Issue 15, code written by others (second round): models written as classes by hand, in the
styles of flax and haiku without them: dataclass layers with __call__, methods calling methods,
parameters in dicts of dicts built by @staticmethod / @classmethod init, a Sequential holding
layers, haiku-like closures (a transform(f) returning init/apply), a callable object passed to
grad; checked against float64 finite differences, a Python loop for vmap and eager for jit."""
import dataclasses
from typing import Callable, Sequence

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, nn, tree_util, value_and_grad

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(2020)
X = RNG.normal(size=(5, 3))
Y = RNG.normal(size=5)


# --- flax-like dataclass layers -------------------------------------------------------------------
@dataclasses.dataclass
class Dense:
    features: int
    use_bias: bool = True

    def init(self, rng, in_features):
        p = {"kernel": rng.normal(size=(in_features, self.features)) / np.sqrt(in_features)}
        if self.use_bias:
            p["bias"] = rng.normal(size=self.features) * 0.1
        return p

    def __call__(self, params, x):
        y = x @ params["kernel"]
        if self.use_bias:
            y = y + params["bias"]
        return y


@dataclasses.dataclass
class MLP:
    widths: Sequence[int]
    activation: Callable = jnp.tanh

    def layers(self):
        return [Dense(w) for w in self.widths]

    def init(self, rng, in_features):
        params = {}
        for i, layer in enumerate(self.layers()):
            params[f"Dense_{i}"] = layer.init(rng, in_features)
            in_features = layer.features
        return {"params": params}

    def hidden(self, params, x):
        layers = self.layers()
        for i, layer in enumerate(layers[:-1]):
            x = self.activation(layer(params[f"Dense_{i}"], x))
        return x

    def __call__(self, variables, x):
        params = variables["params"]
        h = self.hidden(params, x)
        last = len(self.widths) - 1
        return self.layers()[-1](params[f"Dense_{last}"], h)

    def apply(self, variables, x):
        return self(variables, x)


MODEL = MLP([4, 4, 1])
VARS = MODEL.init(RNG, 3)


def mlp_loss(variables, x, y):
    return jnp.mean((MODEL.apply(variables, x)[:, 0] - y) ** 2)


def test_flax_like_dataclass_mlp(x64):
    check_grad(mlp_loss, VARS, X, Y)
    check_grad(mlp_loss, VARS, X, Y, argnum=1)
    one = lambda v, x: MODEL.apply(v, x)[0]
    check_vmap(one, (VARS, X), in_axes=(None, 0))
    check_vmap(grad(lambda v, x, y: (one(v, x) - y) ** 2), (VARS, X, Y), in_axes=(None, 0, 0))
    assert_trees_close(jit(mlp_loss)(*to_snp((VARS, X, Y))), mlp_loss(*to_snp((VARS, X, Y))))


def test_flax_like_relu_activation_field(x64):
    model = MLP([3, 2], activation=nn.gelu)
    v = model.init(RNG, 3)
    loss = lambda v, x: jnp.sum(model(v, x) ** 2)
    check_grad(loss, v, X)
    check_vmap(grad(loss), (v, X[:, None, :]), in_axes=(None, 0))


# --- parameters built by @staticmethod / @classmethod, methods calling methods ------------------
class LayerNorm:
    def __init__(self, eps=1e-5):
        self.eps = eps

    @staticmethod
    def init(dim):
        return {"scale": np.ones(dim) + 0.1 * RNG.normal(size=dim), "shift": 0.1 * RNG.normal(size=dim)}

    def normalize(self, x):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + self.eps)

    def __call__(self, p, x):
        return self.normalize(x) * p["scale"] + p["shift"]


class Block:
    def __init__(self, dim):
        self.dim = dim
        self.norm = LayerNorm()

    @classmethod
    def create(cls, dim):
        block = cls(dim)
        params = {"norm": LayerNorm.init(dim),
                  "ff": {"w1": RNG.normal(size=(dim, 2 * dim)) * 0.5,
                         "w2": RNG.normal(size=(2 * dim, dim)) * 0.5}}
        return block, params

    def feed_forward(self, p, x):
        return nn.relu(x @ p["w1"]) @ p["w2"]

    def __call__(self, params, x):
        return x + self.feed_forward(params["ff"], self.norm(params["norm"], x))


BLOCK, BLOCK_PARAMS = Block.create(3)


def block_loss(params, x):
    return jnp.sum(jnp.sin(BLOCK(params, x)))


def test_classmethod_init_residual_block(x64):
    check_grad(block_loss, BLOCK_PARAMS, X)
    check_grad(block_loss, BLOCK_PARAMS, X, argnum=1)
    check_vmap(lambda p, x: BLOCK(p, x), (BLOCK_PARAMS, X), in_axes=(None, 0))
    check_vmap(grad(block_loss), (BLOCK_PARAMS, X[:, None]), in_axes=(None, 0))


# --- a Sequential of callable layers, parameters a list of dicts --------------------------------
class Sequential:
    def __init__(self, *layers):
        self.layers = layers

    def __call__(self, params, x):
        for layer, p in zip(self.layers, params):
            x = layer(p, x)
        return x


class Activation:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, params, x):
        return self.fn(x)


SEQ = Sequential(Dense(4), Activation(nn.softplus), Dense(2), Activation(jnp.sin), Dense(1))
SEQ_PARAMS = [Dense(4).init(RNG, 3), {}, Dense(2).init(RNG, 4), {}, Dense(1).init(RNG, 2)]


def test_sequential_list_of_layer_params(x64):
    loss = lambda params, x: jnp.mean(SEQ(params, x) ** 2)
    g = check_grad(loss, SEQ_PARAMS, X)
    assert g[1] == {} and g[3] == {}
    check_vmap(lambda p, x: SEQ(p, x), (SEQ_PARAMS, X), in_axes=(None, 0))
    # SGD step under jit over the list of dicts
    step = jit(lambda p, x: tree_util.tree_map(lambda a, b: a - 0.1 * b, p, grad(loss)(p, x)))
    got = step(to_snp(SEQ_PARAMS), to_snp(X))
    want = tree_util.tree_map(lambda a, b: a - 0.1 * b, to_snp(SEQ_PARAMS), g)
    assert_trees_close(got, want, rtol=1e-10)


# --- haiku-like: a transform(f) returning init/apply over a parameter-collecting context --------
class _Frame:
    def __init__(self, params=None, rng=None):
        self.params = {} if params is None else params
        self.rng = rng
        self.counts = {}


_FRAMES = []


def get_parameter(name, shape, init_scale=0.5):
    frame = _FRAMES[-1]
    if frame.rng is not None and name not in frame.params:
        frame.params[name] = frame.rng.normal(size=shape) * init_scale
    return frame.params[name]


def linear(x, size, name):
    w = get_parameter(name + "/w", (x.shape[-1], size))
    b = get_parameter(name + "/b", (size,), 0.1)
    return x @ w + b


def transform(f):
    def init(rng, *args):
        _FRAMES.append(_Frame(rng=rng))
        try:
            f(*args)
            return _FRAMES[-1].params
        finally:
            _FRAMES.pop()

    def apply(params, *args):
        _FRAMES.append(_Frame(params=params))
        try:
            return f(*args)
        finally:
            _FRAMES.pop()

    return init, apply


def forward(x):
    h = jnp.tanh(linear(x, 4, "l1"))
    return linear(h, 1, "l2")[..., 0]


INIT, APPLY = transform(forward)
HK_PARAMS = INIT(np.random.default_rng(3), X)


def hk_loss(params, x, y):
    return jnp.mean((APPLY(params, x) - y) ** 2)


def test_haiku_like_transform_jit(x64):
    """init/apply with a frame stack: jit traces it as JAX does."""
    assert sorted(HK_PARAMS) == ["l1/b", "l1/w", "l2/b", "l2/w"]
    p, x, y = to_snp((HK_PARAMS, X, Y))
    h = np.tanh(X @ HK_PARAMS["l1/w"] + HK_PARAMS["l1/b"])
    want = np.mean(((h @ HK_PARAMS["l2/w"] + HK_PARAMS["l2/b"])[:, 0] - Y) ** 2)
    np.testing.assert_allclose(hk_loss(p, x, y), want, rtol=1e-12)
    np.testing.assert_allclose(jit(hk_loss)(p, x, y), want, rtol=1e-12)


def test_haiku_like_transform_grad(x64):
    """Parameters passed through a global frame stack (_FRAMES.append(_Frame(params=params)),
    read back by get_parameter in another function): secant differentiates the trace of apply
    (its calls followed into forward, linear, get_parameter), taken again on each call
    (tests/test_traced_globals15.py)."""
    check_grad(hk_loss, HK_PARAMS, X, Y)
    check_vmap(lambda p, x: APPLY(p, x), (HK_PARAMS, X), in_axes=(None, 0))


def test_haiku_like_frame_stack_vmap(x64):
    """vmap over the inputs alone (params unbatched) and over the parameters (stored in the
    frame stack: the trace is batched) agree with a Python loop."""
    check_vmap(lambda x: APPLY(to_snp(HK_PARAMS), x), (X,))
    stacked = {k: np.stack([v, 2 * v, -v]) for k, v in HK_PARAMS.items()}
    check_vmap(lambda p, x: APPLY(p, x), (stacked, X), in_axes=(0, None))


# --- a haiku-like closure over hyperparameters: a net factory -----------------------------------
def make_net(depth, width, act=jnp.tanh):
    def init(rng, d_in):
        sizes = [d_in] + [width] * depth + [1]
        return [(rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n))
                for m, n in zip(sizes[:-1], sizes[1:])]

    def apply(params, x):
        *hidden, (w_out, b_out) = params
        for w, b in hidden:
            x = act(x @ w + b)
        return (x @ w_out + b_out)[..., 0]

    return init, apply


def test_closure_net_factory_tuple_params(x64):
    init, apply = make_net(2, 3, act=nn.silu)
    params = init(RNG, 3)
    loss = lambda p, x, y: jnp.mean((apply(p, x) - y) ** 2)
    g = check_grad(loss, params, X, Y)
    assert isinstance(g, list) and isinstance(g[0], tuple)
    check_vmap(apply, (params, X), in_axes=(None, 0))
    value, g2 = jit(value_and_grad(loss))(*to_snp((params, X, Y)))
    assert_trees_close(g2, g, rtol=1e-10)


# --- a callable object (its parameters as attributes) passed to grad ----------------------------
class QuadraticForm:
    def __init__(self, A, b):
        self.A = jnp.asarray(A)
        self.b = jnp.asarray(b)

    def energy(self, x):
        return 0.5 * x @ self.A @ x - self.b @ x

    def __call__(self, x):
        return self.energy(x) + 0.1 * jnp.sum(x ** 4)


def test_callable_object_passed_to_grad(x64):
    M = RNG.normal(size=(3, 3))
    A = M @ M.T + 3 * np.eye(3)
    q = QuadraticForm(A, RNG.normal(size=3))
    x = RNG.normal(size=3)
    g = check_grad(q, x)
    np.testing.assert_allclose(g, A @ x - np.asarray(q.b) + 0.4 * x ** 3, rtol=1e-10)
    check_vmap(grad(q), (RNG.normal(size=(4, 3)),))
    H = secant.hessian(q)(to_snp(x))
    np.testing.assert_allclose(H, A + np.diag(1.2 * x ** 2), rtol=1e-10)
    # the bound method, too
    check_grad(q.energy, x)
    # gradient descent on the object's energy: approaches A^-1 b for the quadratic part
    step = jit(lambda x: x - 0.05 * grad(q.energy)(x))
    xs = jnp.zeros(3)
    for _ in range(300):
        xs = step(xs)
    np.testing.assert_allclose(xs, np.linalg.solve(A, np.asarray(q.b)), rtol=1e-4)


# --- a pytree-registered module: the module itself is the parameter -----------------------------
@tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, b, name="linear"):
        self.w, self.b, self.name = w, b, name

    def tree_flatten(self):
        return (self.w, self.b), self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(*children, name=name)

    def __call__(self, x):
        return jnp.tanh(x @ self.w + self.b)


def test_module_as_pytree_parameter(x64):
    lin = Linear(RNG.normal(size=(3, 2)), RNG.normal(size=2))
    loss = lambda m, x: jnp.sum(m(x) ** 2)
    g = secant.grad(loss)(to_snp(lin), to_snp(X))
    assert isinstance(g, Linear) and g.name == "linear"
    fd = fd_grad(loss, (to_snp(lin), to_snp(X)))
    assert_trees_close(g, fd, rtol=1e-5)
    check_vmap(loss, (lin, X), in_axes=(None, 0))
    # an SGD step returns a Linear
    new = jit(lambda m, x: tree_util.tree_map(lambda p, g: p - 0.1 * g, m, grad(loss)(m, x)))(
        to_snp(lin), to_snp(X))
    assert isinstance(new, Linear)
    np.testing.assert_allclose(new.w, np.asarray(lin.w) - 0.1 * np.asarray(fd.w), rtol=1e-5)
