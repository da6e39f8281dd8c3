"""Issue 15, code written by others (ninth round): Python as users write it around JAX code. A
`match` statement on a config string, the walrus operator, activations looked up by
getattr(np, name) beside lambdas in a dict, a dataclass whose __post_init__ derives a field,
recursion over a nested-tuple tree of weights, closures made in a loop (with the default-argument
idiom against late binding), a shape helper under functools.lru_cache, staticmethod and
classmethod helpers, jit(grad(f)) called from several threads at once, and keyword-only
hyperparameters passed through **kwargs. Checked against float64 central differences, NumPy
written out, a Python loop and eager."""
import dataclasses
import functools
import threading

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, vmap

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(3909)


# --- match on a config string -------------------------------------------------------------------
def activation(x, kind):
    match kind:
        case "relu":
            return jnp.maximum(x, 0.0)
        case "tanh":
            return jnp.tanh(x)
        case "softplus" | "smooth":
            return jnp.logaddexp(x, 0.0)
        case _:
            return x


def test_match_statement_on_a_config_string(x64):
    x = RNG.normal(size=5)
    refs = {"relu": np.maximum(x, 0), "tanh": np.tanh(x), "smooth": np.logaddexp(x, 0),
            "none": x}
    for kind, want in refs.items():
        f = lambda x, kind=kind: jnp.sum(activation(x, kind) ** 2)
        np.testing.assert_allclose(activation(jnp.asarray(x), kind), want, rtol=1e-12)
        check_grad(f, x)
        check_vmap(lambda x: activation(x, kind), (RNG.normal(size=(3, 5)),))
        np.testing.assert_allclose(jit(activation, static_argnums=1)(jnp.asarray(x), kind), want,
                                   rtol=1e-12)


# --- the walrus operator ------------------------------------------------------------------------
def normalised_energy(x):
    if (n := x.shape[0]) > 2:
        scale = 1.0 / n
    else:
        scale = 1.0
    return scale * jnp.sum((centered := x - jnp.mean(x)) ** 2) + jnp.max(centered)


def test_walrus_operator(x64):
    for size in (2, 5):
        x = RNG.normal(size=size)
        c = x - x.mean()
        want = (1 / size if size > 2 else 1.0) * np.sum(c ** 2) + c.max()
        np.testing.assert_allclose(normalised_energy(jnp.asarray(x)), want, rtol=1e-12)
        check_grad(normalised_energy, x)
        check_vmap(normalised_energy, (RNG.normal(size=(3, size)),))


# --- activations by name, beside lambdas ---------------------------------------------------------
ACTIVATIONS = {
    "sin": getattr(jnp, "sin"),
    "tanh": getattr(jnp, "tanh"),
    "square": lambda x: x * x,
    "swish": lambda x: x * secant.nn.sigmoid(x),
}


def mixed_features(w, x, names=("sin", "square", "tanh", "swish")):
    return jnp.stack([ACTIVATIONS[name](x @ w[i]) for i, name in enumerate(names)])


def test_activations_by_name_and_lambdas(x64):
    w, x = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    z = w @ x
    want = np.array([np.sin(z[0]), z[1] ** 2, np.tanh(z[2]), z[3] / (1 + np.exp(-z[3]))])
    np.testing.assert_allclose(mixed_features(jnp.asarray(w), jnp.asarray(x)), want, rtol=1e-12)
    c = RNG.normal(size=4)
    loss = lambda w, x: jnp.dot(c, mixed_features(w, x))
    check_grad(loss, w, x)
    check_grad(loss, w, x, argnum=1)
    check_vmap(lambda x: mixed_features(jnp.asarray(w), x), (RNG.normal(size=(5, 3)),))
    h = secant.hessian(loss, argnums=1)(jnp.asarray(w), jnp.asarray(x))
    np.testing.assert_allclose(h, np.asarray(h).T, atol=1e-12)


# --- a dataclass with __post_init__ -----------------------------------------------------------------
@dataclasses.dataclass
class Gaussian:
    mean: object
    log_std: object
    precision: object = None

    def __post_init__(self):
        self.precision = jnp.exp(-2.0 * self.log_std)

    def log_prob(self, x):
        return jnp.sum(-0.5 * (x - self.mean) ** 2 * self.precision - self.log_std
                       - 0.5 * jnp.log(2 * jnp.pi))


def gaussian_nll(mean, log_std, data):
    return -jnp.sum(vmap(Gaussian(mean, log_std).log_prob)(data))


def test_dataclass_post_init(x64):
    import scipy.stats
    mean, log_std = RNG.normal(size=2), RNG.normal(size=2) * 0.3
    data = RNG.normal(size=(7, 2))
    want = -scipy.stats.norm.logpdf(data, mean, np.exp(log_std)).sum()
    np.testing.assert_allclose(gaussian_nll(jnp.asarray(mean), jnp.asarray(log_std), data), want,
                               rtol=1e-12)
    check_grad(gaussian_nll, mean, log_std, data)
    g = check_grad(gaussian_nll, mean, log_std, data, argnum=1)
    s2 = np.exp(2 * log_std)
    np.testing.assert_allclose(g, 7 - np.sum((data - mean) ** 2, 0) / s2, rtol=1e-10)
    # vmap over means against a loop; jacfwd(grad) against the closed-form Hessian in log_std
    check_vmap(lambda m: gaussian_nll(m, jnp.asarray(log_std), jnp.asarray(data)),
               (RNG.normal(size=(3, 2)),))
    h = secant.jacfwd(grad(gaussian_nll, argnums=1), argnums=1)(
        jnp.asarray(mean), jnp.asarray(log_std), jnp.asarray(data))
    np.testing.assert_allclose(h, np.diag(2 * np.sum((data - mean) ** 2, 0) / s2), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(jit(gaussian_nll)(jnp.asarray(mean), jnp.asarray(log_std),
                                                 jnp.asarray(data)), want, rtol=1e-12)


# --- recursion over a nested-tuple tree -------------------------------------------------------------
def tree_net(tree, x):
    """A leaf is a weight vector; a node (left, right, mix) combines its two children."""
    if len(tree) == 1:
        return jnp.tanh(jnp.dot(tree[0], x))
    left, right, mix = tree
    return mix[0] * tree_net(left, x) + mix[1] * tree_net(right, x) * tree_net(left, x)


def tree_net_np(tree, x):
    if len(tree) == 1:
        return np.tanh(np.dot(tree[0], x))
    left, right, mix = tree
    return mix[0] * tree_net_np(left, x) + mix[1] * tree_net_np(right, x) * tree_net_np(left, x)


def test_recursion_over_a_nested_tuple_tree(x64):
    leaf = lambda: (RNG.normal(size=3),)
    tree = ((leaf(), leaf(), RNG.normal(size=2)), leaf(), RNG.normal(size=2))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(tree_net(to_snp(tree), jnp.asarray(x)), tree_net_np(tree, x),
                               rtol=1e-12)
    check_grad(tree_net, tree, x)
    check_grad(tree_net, tree, x, argnum=1)
    check_vmap(lambda x: tree_net(to_snp(tree), x), (RNG.normal(size=(4, 3)),))


# --- closures made in a loop --------------------------------------------------------------------------
def make_terms(freqs):
    terms = []
    for f in freqs:
        terms.append(lambda x, f=f: jnp.sin(f * x))      # the default binds this f
    late = [lambda x: jnp.cos(f * x) for f in freqs]      # every one reads the last f
    return terms, late


def signal(x, freqs=(1.0, 2.0, 3.0)):
    terms, late = make_terms(freqs)
    return sum(t(x) for t in terms) + sum(t(x) for t in late)


def test_closures_made_in_a_loop_keep_pythons_binding(x64):
    x = 0.7
    want = np.sin(x) + np.sin(2 * x) + np.sin(3 * x) + 3 * np.cos(3 * x)
    np.testing.assert_allclose(signal(x), want, rtol=1e-12)
    dwant = np.cos(x) + 2 * np.cos(2 * x) + 3 * np.cos(3 * x) - 9 * np.sin(3 * x)
    np.testing.assert_allclose(grad(signal)(x), dwant, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(signal))(x), dwant, rtol=1e-12)
    xs = np.array([0.1, 0.7, 1.3])
    np.testing.assert_allclose(vmap(grad(signal))(jnp.asarray(xs)),
                               [float(grad(signal)(v)) for v in xs], rtol=1e-12)
    d2 = -np.sin(x) - 4 * np.sin(2 * x) - 9 * np.sin(3 * x) - 27 * np.cos(3 * x)
    np.testing.assert_allclose(grad(grad(signal))(x), d2, rtol=1e-12)


# --- a shape helper under lru_cache, staticmethod and classmethod ---------------------------------
@functools.lru_cache(maxsize=None)
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))


class CausalMean:
    scale = 2.0

    @staticmethod
    def masked(x, mask):
        return jnp.where(mask, x, 0.0)

    @classmethod
    def apply(cls, x):
        n = x.shape[0]
        m = causal_mask(n)
        rows = cls.masked(jnp.broadcast_to(x, (n, n)), m)
        return cls.scale * jnp.sum(rows, axis=1) / jnp.arange(1, n + 1)


def test_lru_cache_staticmethod_and_classmethod(x64):
    x = RNG.normal(size=5)
    want = 2.0 * np.cumsum(x) / np.arange(1, 6)
    np.testing.assert_allclose(CausalMean.apply(jnp.asarray(x)), want, rtol=1e-12)
    np.testing.assert_allclose(jit(CausalMean.apply)(jnp.asarray(x)), want, rtol=1e-12)
    c = RNG.normal(size=5)
    g = check_grad(lambda x: jnp.dot(c, CausalMean.apply(x)), x)
    np.testing.assert_allclose(g, 2.0 * np.array([np.sum(c[i:] / np.arange(i + 1, 6))
                                                  for i in range(5)]), rtol=1e-12)
    check_vmap(CausalMean.apply, (RNG.normal(size=(3, 5)),))


# --- jit(grad(f)) from several threads -----------------------------------------------------------------
def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_jit_grad_called_from_threads(x64):
    g = jit(grad(rosenbrock))
    h = secant.hessian(rosenbrock)
    points = [RNG.normal(size=4) for _ in range(8)]
    results = [None] * 8
    errors = []

    def work(i):
        try:
            results[i] = (np.asarray(g(jnp.asarray(points[i]))),
                          np.asarray(h(jnp.asarray(points[i]))))
        except Exception as e:       # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for p, (gi, hi) in zip(points, results):
        np.testing.assert_allclose(gi, grad(rosenbrock)(jnp.asarray(p)), rtol=1e-12)
        np.testing.assert_allclose(hi, secant.jacfwd(grad(rosenbrock))(jnp.asarray(p)),
                                   rtol=1e-12)


# --- keyword-only hyperparameters through **kwargs --------------------------------------------------------
def elastic_net(w, x, y, *, l1=0.0, l2=0.0):
    r = x @ w - y
    return 0.5 * jnp.mean(r ** 2) + l1 * jnp.sum(jnp.sqrt(w ** 2 + 1e-8)) + l2 * jnp.sum(w ** 2)


def objective(w, x, y, **hyper):
    return elastic_net(w, x, y, **hyper)


def test_keyword_only_hyperparameters_through_kwargs(x64):
    w, x, y = RNG.normal(size=3), RNG.normal(size=(6, 3)), RNG.normal(size=6)
    for hyper in ({}, {"l2": 0.3}, {"l1": 0.1, "l2": 0.2}):
        g = check_grad(lambda w, x, y: objective(w, x, y, **hyper), w, x, y)
        want = x.T @ (x @ w - y) / 6 + hyper.get("l1", 0) * w / np.sqrt(w ** 2 + 1e-8) \
            + 2 * hyper.get("l2", 0) * w
        np.testing.assert_allclose(g, want, rtol=1e-9)
    per = vmap(lambda w: grad(objective)(w, jnp.asarray(x), jnp.asarray(y), l2=0.5))(
        jnp.asarray(RNG.normal(size=(3, 3))))
    assert per.shape == (3, 3)
    f = functools.partial(objective, l1=0.05)
    check_grad(f, w, x, y)
