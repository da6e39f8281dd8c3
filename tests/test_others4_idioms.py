"""Issue 15, code written by others (fourth round): Python idioms used heavily inside
differentiated code: dict and set comprehensions, **kwargs forwarding, sorted keys, f-strings
that the math ignores, enumerate/zip over parameters, early returns, while loops over Python
ints, recursion on static structure, classes with properties, operator overloading on a user
class wrapping arrays, stacked decorators; each under grad, jit, vmap, jvp and hessian as its
author would use them, checked against float64 finite differences, a Python loop and eager."""
import functools
import math

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, tree_util, value_and_grad, vjp, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(404040)


# --- dict and set comprehensions, sorted keys ---------------------------------------------------
def comprehension_loss(params, x):
    scaled = {k: v * (i + 1) for i, (k, v) in enumerate(sorted(params.items()))}
    names = {k.split("_")[0] for k in params}
    total = 0.0
    for name in sorted(names):
        group = [scaled[k] for k in sorted(scaled) if k.startswith(name)]
        total = total + jnp.sum(jnp.tanh(sum(group) * x))
    return total


def np_comprehension_loss(params, x):
    scaled = {k: v * (i + 1) for i, (k, v) in enumerate(sorted(params.items()))}
    total = 0.0
    for name in sorted({k.split("_")[0] for k in params}):
        total += np.sum(np.tanh(sum(scaled[k] for k in sorted(scaled) if k.startswith(name)) * x))
    return total


def test_dict_and_set_comprehensions(x64):
    params = {"w_a": RNG.normal(size=3), "w_b": RNG.normal(size=3), "b_a": RNG.normal(size=3)}
    x = RNG.normal(size=3)
    np.testing.assert_allclose(comprehension_loss(to_snp(params), to_snp(x)),
                               np_comprehension_loss(params, x), rtol=1e-12)
    check_grad(comprehension_loss, params, x)
    check_grad(comprehension_loss, params, x, argnum=1)
    check_vmap(comprehension_loss, (params, RNG.normal(size=(4, 3))), in_axes=(None, 0))


# --- **kwargs forwarding through layers of helpers -------------------------------------------
def activation(x, kind="tanh", slope=0.1):
    if kind == "tanh":
        return jnp.tanh(x)
    if kind == "leaky":
        return jnp.where(x > 0, x, slope * x)
    return x


def layer(w, x, **act_kwargs):
    return activation(x @ w, **act_kwargs)


def network(ws, x, **kwargs):
    for w in ws[:-1]:
        x = layer(w, x, **kwargs)
    return x @ ws[-1]


def kwargs_loss(ws, x, y, **kwargs):
    return jnp.mean((network(ws, x, **kwargs) - y) ** 2)


def test_kwargs_forwarding(x64):
    ws = [RNG.normal(size=(3, 4)), RNG.normal(size=(4, 4)), RNG.normal(size=(4,))]
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=6)
    for kw in ({}, {"kind": "leaky", "slope": 0.3}, {"kind": "linear"}):
        f = functools.partial(kwargs_loss, **kw)
        check_grad(f, ws, x, y)
        check_vmap(lambda ws, x, y: f(ws, x[None], y[None]), (ws, x, y), in_axes=(None, 0, 0))
    g = grad(lambda ws: kwargs_loss(ws, to_snp(x), to_snp(y), kind="leaky", slope=0.3))(to_snp(ws))
    assert_trees_close(g, fd_grad(lambda ws: kwargs_loss(ws, to_snp(x), to_snp(y), kind="leaky",
                                                         slope=0.3), (to_snp(ws),)))


# --- f-strings and logging that the math ignores ---------------------------------------------
LOG = []


def logged_loss(params, x):
    out = 0.0
    for i, (name, w) in enumerate(params.items()):
        key = f"layer{i}/{name}"
        contribution = jnp.sum(jnp.sin(w * x)) / (i + 1)
        if key.endswith("b"):
            contribution = contribution * 2.0
        out = out + contribution
    return out


def test_f_strings_and_keys(x64):
    params = {"a": RNG.normal(size=3), "b": RNG.normal(size=3), "c": RNG.normal(size=3)}
    x = RNG.normal(size=3)
    check_grad(logged_loss, params, x)
    check_grad(logged_loss, params, x, argnum=1)
    h = hessian(logged_loss, argnums=1)(to_snp(params), to_snp(x))
    want = np.diag(sum(-params[k] ** 2 * np.sin(params[k] * x) / (i + 1) * (2.0 if k == "b" else 1.0)
                       for i, k in enumerate(params)))
    np.testing.assert_allclose(h, want, rtol=1e-10, atol=1e-12)


# --- enumerate / zip over parameters and early returns ---------------------------------------
def piecewise(x, knots=(-1.0, 0.0, 1.5)):
    """Early returns inside a for loop over a static tuple (x is a scalar)."""
    for i, k in enumerate(knots):
        if x < k:
            return (i + 1) * jnp.sin(x - k)
    return x ** 2


def zipped(ws, bs, x):
    out = x
    for i, (w, b) in enumerate(zip(ws, bs)):
        if i == len(ws) - 1:
            return jnp.sum(out * w + b)
        out = jnp.tanh(out * w + b)
    return out


def test_early_return_in_a_loop_over_knots(x64):
    for x0 in (-2.0, -0.5, 0.7, 2.0):
        g = grad(piecewise)(x0)
        want = fd_grad(piecewise, (jnp.asarray(x0),))
        np.testing.assert_allclose(g, want, rtol=1e-6)
        np.testing.assert_allclose(grad(grad(piecewise))(x0),
                                   fd_grad(grad(piecewise), (jnp.asarray(x0),)), rtol=1e-5)
    xs = np.array([-2.0, -0.5, 0.7, 2.0])
    check_vmap(piecewise, (xs,))
    check_vmap(grad(piecewise), (xs,))


def test_enumerate_zip_with_a_return_in_the_last_step(x64):
    ws = [RNG.normal(size=3) for _ in range(3)]
    bs = [RNG.normal(size=3) for _ in range(3)]
    x = RNG.normal(size=3)
    check_grad(zipped, ws, bs, x)
    check_grad(zipped, ws, bs, x, argnum=1)
    check_vmap(zipped, (ws, bs, RNG.normal(size=(5, 3))), in_axes=(None, None, 0))



# the same kind (a return reading the loop variable of a loop over a parameter), other shapes:
# a differentiated list iterated directly, a return two loops deep, an iterable from a call
def first_active(ws, x):
    for w in ws:
        if jnp.sum(w * x) > 0.2:
            return jnp.sum(jnp.tanh(w * x)) * w[0]
    return jnp.sum(x)


def two_loops_deep(x, rows=((0.5, 1.0), (1.5, 2.5))):
    acc = 0.0
    for j, row in enumerate(rows):
        for k in row:
            acc = acc + jnp.sin(k * x)
            if acc > k:
                return acc * k + j
    return acc


def pairs_of(x):
    return [(1.0, x), (2.0, x * x), (3.0, jnp.sin(x))]


def from_a_call(x):
    for i, (c, v) in enumerate(pairs_of(x)):
        if c * v > 0.6:
            return c * v + i
    return x


def test_return_of_the_loop_variable_of_a_parameter_or_call(x64):
    ws = [RNG.normal(size=3) for _ in range(3)]
    for x in (RNG.normal(size=3), -np.ones(3), np.zeros(3)):    # returns at some w, or at none
        check_grad(first_active, ws, x)
        check_grad(first_active, ws, x, argnum=1)
    check_vmap(first_active, (ws, RNG.normal(size=(6, 3))), in_axes=(None, 0))
    check_vmap(first_active, ([RNG.normal(size=(6, 3)) for _ in range(3)], RNG.normal(size=3)),
               in_axes=(0, None))
    for x0 in (0.1, 0.4, 1.0, 3.0):     # returns in the first row, in the second, or not at all
        x0 = jnp.asarray(x0)
        np.testing.assert_allclose(grad(two_loops_deep)(x0), fd_grad(two_loops_deep, (x0,)),
                                   rtol=1e-6)
        np.testing.assert_allclose(hessian(two_loops_deep)(x0),     # (grad(grad) of nested
                                   fd_grad(grad(two_loops_deep), (x0,)), rtol=1e-5)  # loops: no)
        check_grad(from_a_call, x0)
    xs = np.array([0.1, 0.5, 0.9, 1.4])
    check_vmap(from_a_call, (xs,))
    # over no w the loop never runs nor returns, as in Python: the cotangent of [] is []
    assert grad(first_active)([], jnp.ones(3)) == []
    np.testing.assert_allclose(grad(first_active, argnums=1)([], jnp.ones(3)), np.ones(3))


# --- while loops over Python ints -------------------------------------------------------------
def horner_while(coeffs, x):
    n = len(coeffs)
    i = n - 1
    acc = coeffs[i]
    while i > 0:
        i -= 1
        acc = acc * x + coeffs[i]
    return acc


def collatz_like(x, n=6):
    steps = 0
    while n != 1:
        x = jnp.sin(x) + 0.5 * x if n % 2 == 0 else jnp.cos(x) * x
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return x * steps


def test_while_over_python_ints(x64):
    coeffs = RNG.normal(size=5)
    x = 0.7
    np.testing.assert_allclose(horner_while(list(to_snp(coeffs)), x),
                               np.polyval(coeffs[::-1], x), rtol=1e-12)
    np.testing.assert_allclose(grad(horner_while, argnums=1)(list(to_snp(coeffs)), x),
                               np.polyval(np.polyder(coeffs[::-1]), x), rtol=1e-10)
    np.testing.assert_allclose(grad(grad(horner_while, argnums=1), argnums=1)(list(to_snp(coeffs)), x),
                               np.polyval(np.polyder(coeffs[::-1], 2), x), rtol=1e-10)
    g = grad(lambda c: horner_while(list(c), 0.7))(to_snp(coeffs))
    np.testing.assert_allclose(g, 0.7 ** np.arange(5), rtol=1e-12)
    check_vmap(lambda x: horner_while(list(to_snp(coeffs)), x), (RNG.normal(size=4),), jit=False)
    check_grad(collatz_like, 0.3)
    np.testing.assert_allclose(grad(grad(collatz_like))(0.3),
                               fd_grad(grad(collatz_like), (jnp.asarray(0.3),)), rtol=1e-5)
    check_vmap(collatz_like, (RNG.normal(size=4),))


def test_jit_grad_of_a_while_loop_over_a_list_index(x64):
    coeffs = RNG.normal(size=5)
    check_grad(lambda c: horner_while(list(c), 0.7), coeffs)
    check_vmap(lambda x: horner_while(list(to_snp(coeffs)), x), (RNG.normal(size=4),))



# the same kind, other shapes: a counter indexing a tuple of Python floats (a default), a
# counter stepping by two through a list of arrays and a second list
def scaled_walk(x, scales=(0.5, 1.5, 2.5)):
    k = 0
    y = x
    while k < len(scales):
        y = jnp.sin(y * scales[k]) + x
        k += 1
    return y


def pairs_walk(ws, x):
    i = 0
    out = 0.0
    while i + 1 < len(ws):
        out = out + jnp.sum(jnp.tanh(ws[i] * x) * ws[i + 1])
        i += 2
    return out


def test_jit_of_a_while_counter_indexing_a_tuple_or_list(x64):
    check_grad(scaled_walk, 0.4)
    check_vmap(scaled_walk, (RNG.normal(size=5),))
    np.testing.assert_allclose(jit(scaled_walk)(0.4), scaled_walk(0.4), rtol=1e-12)
    ws = [RNG.normal(size=3) for _ in range(5)]
    x = RNG.normal(size=3)
    check_grad(pairs_walk, ws, x)
    check_grad(pairs_walk, ws, x, argnum=1)
    check_vmap(pairs_walk, (ws, RNG.normal(size=(4, 3))), in_axes=(None, 0))
    np.testing.assert_allclose(jit(pairs_walk)(to_snp(ws), to_snp(x)),
                               pairs_walk(to_snp(ws), to_snp(x)), rtol=1e-12)


# --- recursion on static structure --------------------------------------------------------------
def tree_reduce(tree, x):
    """A nested tuple tree: leaves are arrays, inner nodes combine their children."""
    if not isinstance(tree, (tuple, list)):
        return jnp.tanh(tree * x)
    left, right = tree
    return tree_reduce(left, x) * tree_reduce(right, x) + tree_reduce(left, x)


def np_tree_reduce(tree, x):
    if not isinstance(tree, (tuple, list)):
        return np.tanh(tree * x)
    a, b = np_tree_reduce(tree[0], x), np_tree_reduce(tree[1], x)
    return a * b + a


def power_by_squaring(x, n):
    if n == 0:
        return jnp.ones_like(x)
    half = power_by_squaring(x, n // 2)
    return half * half * (x if n % 2 else 1.0)


def test_recursion_on_static_structure(x64):
    tree = ((RNG.normal(size=2), RNG.normal(size=2)), (RNG.normal(size=2), RNG.normal(size=2)))
    x = RNG.normal(size=2)
    np.testing.assert_allclose(tree_reduce(to_snp(tree), to_snp(x)), np_tree_reduce(tree, x),
                               rtol=1e-12)
    f = lambda t, x: jnp.sum(tree_reduce(t, x))
    check_grad(f, tree, x)
    check_grad(f, tree, x, argnum=1)
    check_vmap(f, (tree, RNG.normal(size=(3, 2))), in_axes=(None, 0))
    for n in (1, 5, 8):
        np.testing.assert_allclose(grad(power_by_squaring)(1.3, n), n * 1.3 ** (n - 1), rtol=1e-12)
        np.testing.assert_allclose(grad(grad(power_by_squaring))(1.3, n),
                                   n * (n - 1) * 1.3 ** max(n - 2, 0), rtol=1e-12)
    check_vmap(lambda x: power_by_squaring(x, 7), (RNG.normal(size=4),))


# --- a class with properties -------------------------------------------------------------------
class Gaussian:
    def __init__(self, loc, log_scale):
        self.loc = loc
        self.log_scale = log_scale

    @property
    def scale(self):
        return jnp.exp(self.log_scale)

    @property
    def variance(self):
        return self.scale ** 2

    def log_prob(self, x):
        return -0.5 * (x - self.loc) ** 2 / self.variance - self.log_scale - 0.5 * math.log(2 * math.pi)


def gaussian_nll(params, xs):
    dist = Gaussian(params["loc"], params["log_scale"])
    return -jnp.mean(dist.log_prob(xs))


def test_class_with_properties(x64):
    params = {"loc": np.array(0.3), "log_scale": np.array(-0.2)}
    xs = RNG.normal(size=20) * 1.5 + 1.0
    g = check_grad(gaussian_nll, params, xs)
    s2 = np.exp(-0.4)
    np.testing.assert_allclose(g["loc"], -np.mean(xs - 0.3) / s2, rtol=1e-10)
    h = hessian(gaussian_nll)(to_snp(params), to_snp(xs))
    np.testing.assert_allclose(h["loc"]["loc"], 1 / s2, rtol=1e-10)
    check_vmap(gaussian_nll, (params, RNG.normal(size=(3, 20))), in_axes=(None, 0))


# --- operator overloading on a user class wrapping arrays --------------------------------------
@tree_util.register_pytree_node_class
class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        return Vec(self.data + (other.data if isinstance(other, Vec) else other))

    __radd__ = __add__

    def __mul__(self, other):
        return Vec(self.data * (other.data if isinstance(other, Vec) else other))

    __rmul__ = __mul__

    def __sub__(self, other):
        return self + (-1.0) * other

    def __matmul__(self, other):
        return jnp.dot(self.data, other.data)

    def __neg__(self):
        return Vec(-self.data)

    def __abs__(self):
        return jnp.sqrt(self @ self)

    def tree_flatten(self):
        return (self.data,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def spring_energy(pos, anchor):
    d = Vec(pos) - Vec(anchor)
    stretch = abs(d) - 1.0
    return 0.5 * 3.0 * stretch ** 2 + 0.1 * (d @ Vec(jnp.ones_like(pos)))


def vec_loss(v, w):
    return abs(2.0 * v + w - Vec(jnp.ones(3)))


def test_operator_overloading_user_class(x64):
    pos, anchor = RNG.normal(size=3), RNG.normal(size=3)
    check_grad(spring_energy, pos, anchor)
    check_vmap(spring_energy, (RNG.normal(size=(4, 3)), anchor), in_axes=(0, None))
    h = hessian(spring_energy)(to_snp(pos), to_snp(anchor))
    for i in range(3):
        np.testing.assert_allclose(
            h[i], fd_grad(lambda p: grad(spring_energy)(p, to_snp(anchor))[i], (to_snp(pos),)),
            rtol=1e-5, atol=1e-7)
    v, w = Vec(to_snp(RNG.normal(size=3))), Vec(to_snp(RNG.normal(size=3)))
    g = grad(vec_loss)(v, w)
    assert isinstance(g, Vec)
    np.testing.assert_allclose(g.data, fd_grad(lambda d: vec_loss(Vec(d), w), (v.data,)), rtol=1e-6)
    gj = jit(grad(vec_loss))(v, w)
    np.testing.assert_allclose(gj.data, g.data, rtol=1e-12)
    out, tan = jvp(vec_loss, (v, w), (Vec(jnp.ones(3)), Vec(jnp.zeros(3))))
    np.testing.assert_allclose(tan, np.sum(g.data), rtol=1e-10)


# --- stacked decorators on models -------------------------------------------------------------
def count_calls(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return fn(*args, **kwargs)
    wrapper.calls = 0
    return wrapper


def scaled(factor):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return factor * fn(*args, **kwargs)
        return wrapper
    return deco


@scaled(3.0)
@count_calls
def decorated_loss(w, x):
    return jnp.sum(jnp.sin(w * x) ** 2)


@functools.partial(jit, static_argnums=(2,))
def static_power_loss(w, x, p):
    return jnp.sum((w * x) ** p) / p


def test_stacked_decorators(x64):
    w, x = RNG.normal(size=4), RNG.normal(size=4)
    g = check_grad(decorated_loss, w, x)
    np.testing.assert_allclose(g, 3.0 * 2 * np.sin(w * x) * np.cos(w * x) * x, rtol=1e-10)
    check_vmap(decorated_loss, (RNG.normal(size=(3, 4)), x), in_axes=(0, None))
    counter = decorated_loss.__wrapped__
    before = counter.calls
    grad(decorated_loss)(to_snp(w), to_snp(x))
    assert counter.calls > before           # the side effect runs (see the test below)
    for p in (2, 3):
        gs = grad(static_power_loss)(to_snp(w), to_snp(x), p)
        np.testing.assert_allclose(gs, (w * x) ** (p - 1) * x, rtol=1e-10)
        gv = vmap(grad(static_power_loss), in_axes=(0, None, None))(
            to_snp(np.stack([w, 2 * w])), to_snp(x), p)
        np.testing.assert_allclose(gv[1], (2 * w * x) ** (p - 1) * x, rtol=1e-10)


def test_a_callees_side_effect_runs_once_under_grad(x64):
    counter = decorated_loss.__wrapped__
    before = counter.calls
    grad(decorated_loss)(jnp.ones(3), jnp.ones(3))
    assert counter.calls == before + 1


# the same kind, other shapes: a callee that appends to a module list and bumps an object's
# counter, called twice by its caller, under each transform. Semantics: as JAX traces a
# function once, each call the user's program makes runs its Python side effects once: the
# caller's primal call runs them; what a derivative recomputes (a vjp's forward pass, a
# reverse loop's replayed iteration, vjp's pullback) calls the callee's replay form instead,
# its forward pass without them (ad/reverse.py, logged_step_replay)
EFFECTS = []


class Tally:
    calls = 0


TALLY = Tally()


def logged_step(x):
    EFFECTS.append("step")
    TALLY.calls += 1
    return jnp.sum(jnp.sin(x) * x)


def two_logged_steps(x):
    y = logged_step(x)
    return y * y + logged_step(2.0 * x)


def _effects(f, *args):
    EFFECTS.clear()
    TALLY.calls = 0
    out = f(*args)
    return len(EFFECTS), TALLY.calls, out


def test_side_effects_run_once_per_call_under_each_transform(x64):
    x = jnp.asarray(RNG.normal(size=3))
    assert _effects(two_logged_steps, x)[:2] == (2, 2)
    n, calls, g = _effects(grad(two_logged_steps), x)
    assert (n, calls) == (2, 2)
    np.testing.assert_allclose(g, fd_grad(two_logged_steps, (x,)), rtol=1e-6)
    assert _effects(value_and_grad(two_logged_steps), x)[:2] == (2, 2)
    assert _effects(lambda x: jvp(two_logged_steps, (x,), (x,)), x)[:2] == (2, 2)
    assert _effects(vmap(grad(two_logged_steps)), jnp.ones((4, 3)))[:2] == (2, 2)


def logged_loop(x):
    for _ in range(3):
        x = x + 0.1 * logged_step(x)
    return jnp.sum(x)


def test_side_effects_of_a_callee_in_a_loop_or_at_second_order_run_once(x64):
    x = jnp.asarray(RNG.normal(size=3))
    n, calls, g = _effects(grad(logged_loop), x)
    assert (n, calls) == (3, 3)
    np.testing.assert_allclose(g, fd_grad(logged_loop, (x,)), rtol=1e-6)    # replay: same values
    assert _effects(lambda x: vjp(two_logged_steps, x)[1](1.0), x)[:2] == (2, 2)
    assert _effects(grad(lambda x: jnp.sum(grad(two_logged_steps)(x))), x)[:2] == (2, 2)
