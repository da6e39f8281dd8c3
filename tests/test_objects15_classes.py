"""Issue 15 (objects15): ordinary user classes built from differentiated or batched values where
they are used. A dataclass whose __post_init__ derives a field (frozen ones setting it by
object.__setattr__, InitVar parameters, init=False fields), a method handing its own object to
a transform (vmap(self), vmap(self.one), grad(self)), a transform of a bound method of an
object built in place (vmap(Model(w).one)), and a namedtuple or a registered class whose
method passes self on to a helper. Each under grad (against float64 central differences or a
closed form), jit(grad), vmap (against a Python loop) and jacfwd(grad)."""
import dataclasses
import typing

import numpy as np

import secant.numpy as jnp
from secant import grad, jacfwd, lax, tree_util, vmap

from others15_check import check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(1515)


def fd_hessian(f, x):
    """Central differences of grad(f) (a Hessian whose grad is itself checked against f)."""
    g = grad(f)
    return np.stack([fd_grad(lambda v: g(v)[i], (x,)) for i in range(len(x))])


# --- a frozen dataclass whose __post_init__ derives a field -------------------------------------------
@dataclasses.dataclass(frozen=True)
class Scaled:
    log_scale: object
    w: object
    scale: object = None

    def __post_init__(self):
        object.__setattr__(self, "scale", jnp.exp(self.log_scale))

    def apply(self, x):
        return jnp.sum(self.scale * jnp.tanh(self.w * x))


def scaled_loss(log_scale, w, x):
    return Scaled(log_scale, w).apply(x)


def test_frozen_dataclass_post_init_derived_field(x64):
    log_scale, w, x = RNG.normal(size=3) * 0.5, RNG.normal(size=3), RNG.normal(size=3)
    want = np.sum(np.exp(log_scale) * np.tanh(w * x))
    np.testing.assert_allclose(scaled_loss(*to_snp((log_scale, w, x))), want, rtol=1e-12)
    g = check_grad(scaled_loss, log_scale, w, x)        # (and jit(grad))
    np.testing.assert_allclose(g, np.exp(log_scale) * np.tanh(w * x), rtol=1e-12)
    g = check_grad(scaled_loss, log_scale, w, x, argnum=1)
    np.testing.assert_allclose(g, np.exp(log_scale) * x / np.cosh(w * x) ** 2, rtol=1e-12)
    check_vmap(lambda s: scaled_loss(s, jnp.asarray(w), jnp.asarray(x)),
               (RNG.normal(size=(4, 3)),))
    h = jacfwd(grad(scaled_loss))(*to_snp((log_scale, w, x)))     # diagonal: the value itself
    np.testing.assert_allclose(h, np.diag(np.exp(log_scale) * np.tanh(w * x)), rtol=1e-12,
                               atol=1e-14)
    f = lambda w_: scaled_loss(jnp.asarray(log_scale), w_, jnp.asarray(x))
    np.testing.assert_allclose(jacfwd(grad(f))(jnp.asarray(w)), fd_hessian(f, w), rtol=1e-6,
                               atol=1e-8)


# --- InitVar and an init=False field set by __post_init__ ---------------------------------------------
@dataclasses.dataclass
class Softplus:
    w: object
    raw: dataclasses.InitVar[object]
    beta: object = dataclasses.field(init=False)
    offset: float = 0.5

    def __post_init__(self, raw_beta):
        self.beta = jnp.logaddexp(raw_beta, 0.0) + self.offset

    def __call__(self, x):
        return jnp.sum(jnp.logaddexp(self.beta * self.w * x, 0.0) / self.beta)


def softplus_loss(w, raw, x):
    return Softplus(w, raw)(x) + Softplus(w, raw, offset=1.0)(x)


def softplus_np(w, raw, x):
    out = 0.0
    for off in (0.5, 1.0):
        beta = np.logaddexp(raw, 0.0) + off
        out += np.sum(np.logaddexp(beta * w * x, 0.0) / beta)
    return out


def test_dataclass_initvar_and_init_false_field(x64):
    w, x, raw = RNG.normal(size=3), RNG.normal(size=3), 0.3
    np.testing.assert_allclose(softplus_loss(*to_snp((w, raw, x))), softplus_np(w, raw, x),
                               rtol=1e-12)
    check_grad(softplus_loss, w, raw, x)
    check_grad(softplus_loss, w, raw, x, argnum=1)
    check_vmap(lambda w_: softplus_loss(w_, raw, jnp.asarray(x)), (RNG.normal(size=(3, 3)),))
    f = lambda w_: softplus_loss(w_, raw, jnp.asarray(x))
    np.testing.assert_allclose(jacfwd(grad(f))(jnp.asarray(w)), fd_hessian(f, w), rtol=1e-6,
                               atol=1e-8)


# --- a held dataclass with __post_init__, its derived field read -------------------------------------
@dataclasses.dataclass
class Normal:
    mean: object
    log_std: object
    precision: object = None

    def __post_init__(self):
        self.precision = jnp.exp(-2.0 * self.log_std)

    def log_prob(self, x):
        return jnp.sum(-0.5 * (x - self.mean) ** 2 * self.precision - self.log_std)


def held_normal(mean, log_std, x):
    d = Normal(mean, log_std)
    return d.log_prob(x) + jnp.sum(d.precision)


def test_held_dataclass_post_init(x64):
    mean, log_std, x = RNG.normal(size=2), RNG.normal(size=2) * 0.3, RNG.normal(size=2)
    s2 = np.exp(2 * log_std)
    want = np.sum(-0.5 * (x - mean) ** 2 / s2 - log_std) + np.sum(1 / s2)
    np.testing.assert_allclose(held_normal(*to_snp((mean, log_std, x))), want, rtol=1e-12)
    g = check_grad(held_normal, mean, log_std, x, argnum=1)
    np.testing.assert_allclose(g, (x - mean) ** 2 / s2 - 1 - 2 / s2, rtol=1e-10)
    check_vmap(lambda m: held_normal(m, jnp.asarray(log_std), jnp.asarray(x)),
               (RNG.normal(size=(3, 2)),))


# --- a method handing its own object (or a method of it) to a transform ------------------------------
class Curve:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return jnp.sin(self.w * x) + self.b * x ** 2

    def one(self, x):
        return (self(x) - 1.0) ** 2

    def batch_loss(self, xs):
        return jnp.sum(vmap(self.one)(xs))

    def slope_sum(self, xs):
        return jnp.sum(vmap(grad(self))(xs))


def test_method_passes_self_to_vmap_and_grad(x64):
    w, b = 0.7, -0.3
    xs = RNG.normal(size=5)
    loss = lambda p: Curve(p[0], p[1]).batch_loss(jnp.asarray(xs))
    r = np.sin(w * xs) + b * xs ** 2 - 1.0
    np.testing.assert_allclose(loss(jnp.asarray([w, b])), np.sum(r ** 2), rtol=1e-12)
    g = check_grad(loss, np.array([w, b]))
    np.testing.assert_allclose(g, [np.sum(2 * r * xs * np.cos(w * xs)), np.sum(2 * r * xs ** 2)],
                               rtol=1e-10)
    check_vmap(loss, (RNG.normal(size=(3, 2)),))
    np.testing.assert_allclose(jacfwd(grad(loss))(jnp.asarray([w, b])),
                               fd_hessian(loss, np.array([w, b])), rtol=1e-6, atol=1e-8)
    # grad(self) inside a method: d/dx of the curve, its derivative in w and b
    slope = lambda p: Curve(p[0], p[1]).slope_sum(jnp.asarray(xs))
    np.testing.assert_allclose(slope(jnp.asarray([w, b])),
                               np.sum(w * np.cos(w * xs) + 2 * b * xs), rtol=1e-12)
    g = check_grad(slope, np.array([w, b]))
    np.testing.assert_allclose(g, [np.sum(np.cos(w * xs) - w * xs * np.sin(w * xs)),
                                   np.sum(2 * xs)], rtol=1e-10)


def bound_method_loss(w, x, xs):
    # the method's parameter is named x too: the object is built from the outer x
    return jnp.sum(vmap(Curve(w, x).one)(xs))


def test_transform_of_a_bound_method_built_in_place(x64):
    w, x, xs = 0.4, 0.2, RNG.normal(size=4)
    want = np.sum((np.sin(w * xs) + x * xs ** 2 - 1.0) ** 2)
    np.testing.assert_allclose(bound_method_loss(w, x, jnp.asarray(xs)), want, rtol=1e-12)
    check_grad(bound_method_loss, w, x, xs)
    check_grad(bound_method_loss, w, x, xs, argnum=1)
    check_grad(bound_method_loss, w, x, xs, argnum=2)
    check_vmap(lambda w_: bound_method_loss(w_, x, jnp.asarray(xs)), (RNG.normal(size=4),))


# --- a namedtuple and a registered class whose method passes self on to a helper ---------------------
def spring_energy(s):
    return jnp.sum(s.k * (s.x - s.x0) ** 2)


class Spring(typing.NamedTuple):
    k: object
    x0: object
    x: object

    def energy(self):
        return spring_energy(self)

    def force_norm(self):
        return jnp.sum(grad(lambda x: spring_energy(Spring(self.k, self.x0, x)))(self.x) ** 2)


def test_namedtuple_method_passing_self_to_a_helper(x64):
    x = RNG.normal(size=3)
    energy = lambda x: Spring(2.0, 0.5, x).energy()
    np.testing.assert_allclose(energy(jnp.asarray(x)), 2 * np.sum((x - 0.5) ** 2), rtol=1e-12)
    g = check_grad(energy, x)
    np.testing.assert_allclose(g, 4 * (x - 0.5), rtol=1e-12)
    check_vmap(energy, (RNG.normal(size=(4, 3)),))
    force = lambda x: Spring(2.0, 0.5, x).force_norm()      # sum (4 (x - x0))^2
    g = check_grad(force, x)
    np.testing.assert_allclose(g, 32 * (x - 0.5), rtol=1e-10)
    np.testing.assert_allclose(jacfwd(grad(force))(jnp.asarray(x)), 32 * np.eye(3),
                               rtol=1e-10)
    by_k = lambda k: Spring(k, 0.5, jnp.asarray(x)).energy()
    np.testing.assert_allclose(check_grad(by_k, 1.5), np.sum((x - 0.5) ** 2), rtol=1e-10)


def test_method_of_a_namedtuple_rebuilt_in_place_by_tree_unflatten(x64):
    """tree_unflatten(treedef, [2.0, 0.5, x]).energy(): a method of the object a library call
    rebuilt, read where it is made. Its gradient was zeros (the call read as a constant: the
    container path handed the dispatcher no receiver); now 4 (x - x0), as when it is held."""
    treedef = tree_util.tree_structure(Spring(1.0, 1.0, 1.0))
    energy = lambda x: tree_util.tree_unflatten(treedef, [2.0, 0.5, x]).energy()
    x = RNG.normal(size=3)
    g = check_grad(energy, x)
    np.testing.assert_allclose(g, 4 * (x - 0.5), rtol=1e-12)
    check_vmap(grad(energy), (RNG.normal(size=(4, 3)),))


def quadratic_form(q, x):
    return jnp.dot(x, q.a @ x) * q.gain


@tree_util.register_pytree_node_class
class Quadratic:
    def __init__(self, a, gain):
        self.a, self.gain = a, gain

    def tree_flatten(self):
        return (self.a,), self.gain

    @classmethod
    def tree_unflatten(cls, gain, children):
        return cls(children[0], gain)

    def __call__(self, x):
        return quadratic_form(self, x)


def test_registered_class_method_passing_self_to_a_helper(x64):
    a, x = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    f = lambda a: Quadratic(a, 2.0)(jnp.asarray(x))
    np.testing.assert_allclose(f(jnp.asarray(a)), 2 * x @ a @ x, rtol=1e-12)
    g = check_grad(f, a)
    np.testing.assert_allclose(g, 2 * np.outer(x, x), rtol=1e-12)
    check_vmap(f, (RNG.normal(size=(3, 3, 3)),))
    fx = lambda x: Quadratic(jnp.asarray(a), 2.0)(x)
    np.testing.assert_allclose(jacfwd(grad(fx))(jnp.asarray(x)), 2 * (a + a.T), rtol=1e-12)


# --- a method passing a bound method of its object to lax.scan and lax.map --------------------------
class Decay:
    def __init__(self, rate, gain):
        self.rate, self.gain = rate, gain

    def step(self, h, x):
        h = jnp.tanh(self.rate * h + self.gain * x)
        return h, h * x

    def one(self, x):
        return jnp.sin(self.rate * x)

    def run(self, xs):
        h, ys = lax.scan(self.step, 0.0, xs)
        return h + jnp.sum(ys) + jnp.sum(lax.map(self.one, xs))


def decay_np(p, xs):
    rate, gain = p
    h, total = 0.0, 0.0
    for x in xs:
        h = np.tanh(rate * h + gain * x)
        total += h * x
    return h + total + np.sum(np.sin(rate * xs))


def test_method_passes_bound_methods_to_scan_and_map(x64):
    xs, p = RNG.normal(size=5), np.array([0.7, 0.4])
    loss = lambda p: Decay(p[0], p[1]).run(jnp.asarray(xs))
    np.testing.assert_allclose(loss(jnp.asarray(p)), decay_np(p, xs), rtol=1e-12)
    g = check_grad(loss, p)
    np.testing.assert_allclose(g, fd_grad(lambda q: decay_np(np.asarray(q), xs), (p,)),
                               rtol=1e-6)
    check_vmap(loss, (RNG.normal(size=(3, 2)) * 0.5,))
