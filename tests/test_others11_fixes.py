"""Issue 15, eleventh round: the minimal cases of what the eleventh round's programs
(tests/test_others11_*.py) found.

- grad of a function whose inner grad calls a function held by the differentiated object (a
  flax TrainState's `state.apply_fn`, an equinox module's activation field, read in a closure
  the inner grad differentiates) raised "secant does not know the derivative of dispatch": the
  outer transform differentiated the inner derivative's dispatcher in its callee too, and no
  rule did that (secant/transforms.py _generate_dispatch_derivative now generates, on first
  use, the derivative of what the dispatcher finds, the held function passed first).
"""
import dataclasses

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, jvp, tree_util, vmap

from others15_check import assert_trees_close, fd_grad


@dataclasses.dataclass
class Layer:
    w: object
    act: object

    def __call__(self, x):
        return self.act(self.w * x)


tree_util.register_dataclass(Layer, data_fields=["w"], meta_fields=["act"])


def _act(v):
    return jnp.sin(v) * v


def _inner_grad_through_held_function(m, x):
    g = grad(lambda w: jnp.sum(m.act(w * x) ** 2))(m.w)
    return jnp.sum(g * m.w)


def test_grad_of_an_inner_grad_calling_a_held_function(x64):
    m = Layer(jnp.asarray([0.3, 0.5]), _act)
    x = jnp.asarray([1.2, -0.7])
    f = _inner_grad_through_held_function
    want = fd_grad(lambda w: f(Layer(w, _act), x), (m.w,))
    g = grad(f)(m, x)
    assert isinstance(g, Layer) and g.act is _act
    assert_trees_close(g.w, want, rtol=1e-6, atol=1e-8)
    assert_trees_close(jit(grad(f))(m, x).w, want, rtol=1e-6, atol=1e-8)
    t = jvp(f, (m, x), (Layer(jnp.ones(2), _act), jnp.zeros(2)))[1]
    np.testing.assert_allclose(t, np.sum(want), rtol=1e-6)


# - flax.struct's `def replace(self, **updates): return dataclasses.replace(self, **updates)`
#   was refused ("with the changes given by name"): a function specialised for a call's
#   keywords (transformer/callees.py _Substitute) now spells `f(**{"a": a})` out as `f(a=a)`.
# - Building a registered class with an argument its flatten keeps in the aux data (a flax
#   struct field with pytree_node=False, register_dataclass's meta_fields: the replace above
#   passes `apply_fn=obj.apply_fn`) was refused: transformer/objects.py constructor_children
#   required every argument to be a child. Such an argument is static, as in JAX.


@dataclasses.dataclass(frozen=True)
class State:
    w: object
    fn: object
    count: object

    def replace(self, **updates):
        return dataclasses.replace(self, **updates)


tree_util.register_dataclass(State, data_fields=["w", "count"], meta_fields=["fn"])


def _step(state, x):
    g = grad(lambda w: jnp.sum(state.fn(w * x)))(state.w)
    return state.replace(w=state.w - 0.1 * g, count=state.count + 1.0)


def test_struct_replace_with_kwargs_and_a_static_field(x64):
    x = jnp.asarray([0.5, -1.5])

    def loss(w):
        s = State(w, jnp.tanh, jnp.asarray(0.0))
        for _ in range(2):
            s = _step(s, x)
        return jnp.sum(s.w ** 2) + s.count

    w = jnp.asarray([0.3, 0.7])
    want = fd_grad(loss, (w,))
    assert_trees_close(grad(loss)(w), want, rtol=1e-6, atol=1e-8)
    assert_trees_close(jit(grad(loss))(w), want, rtol=1e-6, atol=1e-8)
    s = _step(State(w, jnp.tanh, jnp.asarray(0.0)), x)
    assert s.fn is jnp.tanh and float(s.count) == 1.0


# - vmap of a derivative whose callee is held by the batched object (vmap over a stack of
#   train states of `grad(lambda p: state.apply_fn(p, x))`) raised "bad arguments for
#   apply: missing a required argument": secant/transforms.py _generate_batched_dispatch made
#   the callee an operand (self) without counting it in the call's shape.


def _apply(p, x):
    return jnp.tanh(p * x)


def test_vmap_of_a_grad_calling_a_function_held_by_the_batched_object(x64):
    x = jnp.asarray([0.5, -1.5])
    states = State(jnp.asarray([[0.3, 0.7], [1.0, -0.2], [0.1, 0.1]]), _apply, jnp.zeros(3))

    def g(state):
        return grad(lambda p: jnp.sum(state.fn(p, x)))(state.w)

    got = vmap(g)(states)
    want = np.stack([(1 - np.tanh(w * np.asarray(x)) ** 2) * np.asarray(x)
                     for w in np.asarray(states.w)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(g))(states), want, rtol=1e-12)


# - A generator expression's variable in a loop and again after it (`sum(a * k for a, k in
#   zip(row, ks))` in a Runge-Kutta stage loop, then `sum(b * k ...)` for the solution) was
#   taken for a variable of the function the loop carries: grad raised "cannot access local
#   variable 'k' ... no iteration of the loop assigned it" (transformer/normalize.py _loop now
#   leaves a comprehension's own variables out).

_A = ((0.5,), (0.0, 0.75))
_B = (0.2, 0.3, 0.5)


def _rk_like(y0):
    ks = [-0.8 * y0]
    for a_row in _A:
        yi = y0 + sum(a * k for a, k in zip(a_row, ks))
        ks.append(-0.8 * yi)
    return jnp.sum(y0 + sum(b * k for b, k in zip(_B, ks)))


def test_a_generator_variable_used_in_a_loop_and_after_it(x64):
    y = jnp.asarray([0.3, 0.2])
    np.testing.assert_allclose(grad(_rk_like)(y), [0.44, 0.44], rtol=1e-12)
    np.testing.assert_allclose(jit(grad(_rk_like))(y), [0.44, 0.44], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(_rk_like))(jnp.ones((3, 2))), np.full((3, 2), 0.44),
                               rtol=1e-12)


# - lax.cond(pred, f, g, operand=x) (JAX's named operand, as blackjax writes it) was a
#   TypeError: secant/lax_control_flow.py cond / switch and transformer/normalize.py
#   control_flow take it.


def test_cond_and_switch_with_the_operand_keyword(x64):
    from secant import lax

    def f(x, p):
        a = lax.cond(p > 0, lambda v: v ** 2, lambda v: -v, operand=x)
        b = lax.switch(1, [jnp.sin, jnp.cos], operand=x)
        return jnp.sum(a + b)

    x = jnp.asarray([0.5, 1.5])
    for p, want in ((1.0, 2 * np.asarray(x) - np.sin(x)), (-1.0, -1.0 - np.sin(x))):
        np.testing.assert_allclose(grad(f)(x, p), want, rtol=1e-12)
        np.testing.assert_allclose(jit(grad(f))(x, p), want, rtol=1e-12)
    np.testing.assert_allclose(f(x, 1.0), np.sum(np.asarray(x) ** 2 + np.cos(x)), rtol=1e-12)
    import pytest
    import secant
    with pytest.raises(secant.SecantError, match="operand"):
        lax.cond(True, lambda v: v, lambda v: v, x, operand=x)
