"""Issue 15, seventh round of code written by others: one regression test per fix the batch
tests/test_others7_*.py needed (each fails without its fix)."""
import dataclasses
import operator
from typing import Any

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, lax, tree_util, vmap
from test_others7_modules import Activation  # (a registered dataclass with no data fields)


def test_a_registered_class_with_no_data_fields_gets_a_cotangent_of_its_class(x64):
    """A module holding only its activation function (no leaves) read as self.fn under grad:
    its cotangent is an Activation (was: 'cannot build the cotangent of a Activation')."""
    act = Activation()
    g_act, g_x = grad(lambda m, x: m(x), argnums=(0, 1))(act, 0.5)
    assert isinstance(g_act, Activation) and g_act.fn is jnp.tanh
    np.testing.assert_allclose(g_x, 1 - np.tanh(0.5) ** 2, rtol=1e-12)
    xs = jnp.asarray([0.1, -0.4])
    np.testing.assert_allclose(grad(lambda m, x: jnp.sum(vmap(m)(x)))(act, xs).fn(0.0), 0.0)
    np.testing.assert_allclose(jit(grad(lambda x: jnp.sum(vmap(act)(x))))(xs),
                               1 - np.tanh(np.asarray(xs)) ** 2, rtol=1e-12)


@dataclasses.dataclass
class State:
    mean: Any
    var: Any


tree_util.register_dataclass(State, data_fields=["mean", "var"], meta_fields=[])
S0 = State(np.float64(2.0), np.float64(1.0))


def scaled_in_a_branch(x, s):
    def branch(s):
        return State(x * s.mean, s.var)
    return lax.cond(x > 0, branch, lambda s: s, s).mean


def scaled_in_a_loop(x, s):
    def body(i, s):
        return State(x * s.mean, s.var + s.mean)
    out = lax.fori_loop(0, 2, body, s)
    return out.mean + out.var


def update(x, s, train=True):
    if train:                   # a Python bool (default): staged as a cond by jit's rewrite
        s = State(0.9 * s.mean + 0.1 * x, s.var)
    return s


def after_update(x, s):
    return update(x, s).mean * 3.0


def test_a_registered_class_built_in_a_nested_def_of_a_lax_branch_or_loop(x64):
    """State(...) built from differentiated values in a nested def passed to lax.cond /
    lax.fori_loop (or in an `if` jit stages as a cond): the lifted def is desugared like the
    user's code it is, so the constructor is read as a pytree (was: 'secant cannot
    differentiate through the object State(...)')."""
    for fn, want in ((scaled_in_a_branch, 2.0),
                     # mean: 2 x^2, var: 1 + 2 + 2x: d/dx at 1.5 = 4x + 2
                     (scaled_in_a_loop, 4 * 1.5 + 2.0),
                     (after_update, 0.3)):
        np.testing.assert_allclose(grad(fn)(1.5, S0), want, rtol=1e-12)
        np.testing.assert_allclose(jit(grad(fn))(1.5, S0), want, rtol=1e-12)
    xs = jnp.asarray([1.5, 2.0])
    np.testing.assert_allclose(vmap(grad(scaled_in_a_loop), in_axes=(0, None))(xs, S0),
                               4 * np.asarray(xs) + 2.0, rtol=1e-12)


def starred_middle(b, ls):
    layers = (*ls[:-1], b, *ls)
    return layers[1] * 10.0 + layers[2] * 100.0 + layers[-1] * 1000.0 + layers[0]


def starred_empty_first(b, ls):
    layers = (*ls[:0], b, *ls)          # b is item 0: not where the display writes it
    return layers[0] * 7.0 + layers[1] * 10.0 + layers[2]


def starred_list(b, ls):
    layers = [*ls, b]
    return sum(layer * (i + 1) for i, layer in enumerate(layers))


def test_a_display_with_starred_items_of_differentiated_values(x64):
    """`(*a, b, *c)` holding differentiated values: read as tuple(a) + (b,) + tuple(c), so each
    item's cotangent is taken where it really is (was: generated code that did not parse)."""
    ls = (jnp.asarray(1.0), jnp.asarray(2.0))
    b = jnp.asarray(5.0)
    cases = ((starred_middle, 10.0, (101.0, 1000.0)), (starred_empty_first, 7.0, (10.0, 1.0)),
             (starred_list, 3.0, [1.0, 2.0]))
    for fn, g_b, g_ls in cases:
        args = (b, ls if fn is not starred_list else list(ls))
        got_b, got_ls = grad(fn, argnums=(0, 1))(*args)
        np.testing.assert_allclose(got_b, g_b)
        assert type(got_ls) is type(args[1])
        np.testing.assert_allclose(got_ls, g_ls)
        np.testing.assert_allclose(jit(grad(fn))(*args), g_b)
        np.testing.assert_allclose(vmap(grad(fn), in_axes=(0, None))(jnp.asarray([1.0, 2.0]), args[1]),
                                   [g_b, g_b])


@dataclasses.dataclass
class Scaled:
    state: State
    scale: float = 1.0
    steps: int = dataclasses.field(default=0, init=False)


tree_util.register_dataclass(Scaled, data_fields=["state", "scale"], meta_fields=[])


def test_dataclasses_replace_of_a_differentiated_object(x64):
    """dataclasses.replace of a differentiated registered dataclass (refused before: its
    source updates a dict in place): the class built from the fields and the changes when the
    code runs; d(b**3 * var)/db = 3 b**2 var under grad, jit, grad(grad), vmap and vmap(grad)."""
    def f(b, s):
        s = dataclasses.replace(s, mean=b * b)
        return s.mean * s.var * b

    b = jnp.asarray(1.5)
    np.testing.assert_allclose(grad(f)(b, S0), 3 * 1.5 ** 2)
    np.testing.assert_allclose(jit(grad(f))(b, S0), 3 * 1.5 ** 2)
    np.testing.assert_allclose(grad(grad(f))(b, S0), 6 * 1.5)
    g_s = grad(f, argnums=1)(b, S0)
    assert isinstance(g_s, State)
    np.testing.assert_allclose([g_s.mean, g_s.var], [0.0, 1.5 ** 3])   # mean replaced: no gradient
    bs = jnp.asarray([0.5, 1.0, 2.0])
    np.testing.assert_allclose(vmap(f, in_axes=(0, None))(bs, S0), bs ** 3)
    np.testing.assert_allclose(vmap(grad(f), in_axes=(0, None))(bs, S0), 3 * bs ** 2)
    # a differentiated object replaced, fields with init=False left to __init__
    def g(b, s):
        t = dataclasses.replace(Scaled(s), scale=b)
        return t.state.var * t.scale ** 2 + t.steps
    np.testing.assert_allclose(grad(g)(b, S0), 2 * 1.5)
    with pytest.raises(ValueError, match="init=False"):
        grad(lambda b: dataclasses.replace(Scaled(S0, b), steps=1).scale)(b)
    with pytest.raises(TypeError, match="dataclass instances"):
        grad(lambda b: dataclasses.replace(b, steps=1))(b)


def logged_layer(w, x, log):
    h = jnp.tanh(x @ w)
    log.append(f"h: {h.shape} {h.dtype}")
    return jnp.sum(h)


def test_an_f_string_of_a_differentiated_values_shape_logged_into_a_list(x64):
    """log.append(f"h: {h.shape}") reads only what a trace knows: run as written under grad
    (was: 'receives the differentiated value h, but its result is dropped') and vmap (was:
    'cannot batch through a JoinedStr'), the per-example shape under vmap as JAX traces it."""
    w, x = jnp.asarray([[1.0, 2.0], [0.5, -1.0]]), jnp.asarray([0.3, -0.2])
    log = []
    g = grad(lambda w: logged_layer(w, x, log))(w)
    np.testing.assert_allclose(g, np.outer(x, 1 - np.tanh(np.asarray(x) @ np.asarray(w)) ** 2),
                               rtol=1e-12)
    assert log == ["h: (2,) float64"]
    log.clear()
    xs = jnp.asarray([[0.3, -0.2], [1.0, 2.0], [0.0, 0.5]])
    out = vmap(lambda x: logged_layer(w, x, log))(xs)
    np.testing.assert_allclose(out, np.tanh(np.asarray(xs) @ np.asarray(w)).sum(1), rtol=1e-12)
    assert log == ["h: (2,) float64"]
    # a value itself (not its shape) in the message is still refused under grad
    with pytest.raises(secant.SecantError, match="JoinedStr|dropped"):
        grad(lambda x: (log.append(f"{x}"), jnp.sum(x ** 2))[1])(x)


first = operator.itemgetter(0)
w_and_b = operator.itemgetter("w", "b")
mean_of = operator.attrgetter("mean")


def getter_loss(params, s):
    w, b = w_and_b(params)
    return jnp.sum(first(w) ** 2) + b * mean_of(s)


def test_operator_itemgetter_and_attrgetter_as_callees(x64):
    """get(p) of get = operator.itemgetter(k) / attrgetter(name) read as p[k] / p.name (was:
    'secant does not know the derivative of first')."""
    params = {"w": jnp.asarray([[1.0, 2.0], [3.0, 4.0]]), "b": jnp.asarray(0.5)}
    g = grad(getter_loss, argnums=(0, 1))(params, S0)
    np.testing.assert_allclose(g[0]["w"], [[2.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(g[0]["b"], 2.0)
    assert isinstance(g[1], State)
    np.testing.assert_allclose(g[1].mean, 0.5)
    np.testing.assert_allclose(jit(grad(getter_loss))(params, S0)["w"], g[0]["w"])
    bs = jnp.asarray([0.5, 1.0, -1.0])
    np.testing.assert_allclose(vmap(lambda b: getter_loss({"w": params["w"], "b": b}, S0))(bs),
                               5.0 + 2.0 * np.asarray(bs))


def appends_to(x, log):
    log.append(f"called with {x.shape}")
    return jnp.sum(x ** 2)


def test_a_log_list_passed_as_an_argument_to_grad_is_the_callers_own(x64):
    """grad(f)(x, log): a container of no arrays passed as a non-differentiated
    argument is passed itself, as JAX passes it, so what f appends is seen by the caller (was:
    a copy, silently dropping the log); one holding NumPy arrays is still converted."""
    log = []
    g = grad(appends_to)(jnp.asarray([1.0, 2.0]), log)
    np.testing.assert_allclose(g, [2.0, 4.0])
    assert log == ["called with (2,)"]
    secant.value_and_grad(appends_to)(jnp.asarray([1.0, 2.0]), log)
    assert len(log) == 2
    consts = [np.array([1.0, 2.0])]
    np.testing.assert_allclose(grad(lambda x, c: jnp.sum(x * c[0]))(jnp.asarray([3.0, 4.0]), consts),
                               [1.0, 2.0])
