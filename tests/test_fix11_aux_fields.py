"""Issue 15: a registered class rebuilt with an argument it keeps in its aux data (a flax
struct's `replace`, `dataclasses.replace(self, **updates)`, copies `fn=obj.fn` of a meta field).
The copy is read when the code runs (ad/helpers.py static_attribute): a meta field passes (a
function, a float kept static), a traced value put in a meta field is refused, naming the line,
never read as a constant (a silent zero derivative)."""
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import assert_trees_close, fd_grad


@dataclasses.dataclass(frozen=True)
class State:
    w: object
    fn: object
    scale: object

    def replace(self, **updates):
        return dataclasses.replace(self, **updates)


tree_util.register_dataclass(State, data_fields=["w"], meta_fields=["fn", "scale"])

X = np.array([0.5, -1.5])


def _step(state):
    return state.replace(w=state.w * state.scale - 0.1 * state.fn(state.w))


def loss(w):
    s = State(w, jnp.tanh, 0.5)          # a float meta field: static, copied by replace
    for _ in range(2):
        s = _step(s)
    return jnp.sum(s.w ** 2 * X)


def test_meta_fields_copied_by_replace(x64):
    w = jnp.asarray([0.3, 0.7])
    want = fd_grad(loss, (w,))
    assert_trees_close(grad(loss)(w), want, rtol=1e-6, atol=1e-8)
    assert_trees_close(jit(grad(loss))(w), want, rtol=1e-6, atol=1e-8)
    ws = np.array([[0.3, 0.7], [-0.2, 1.1]])
    got = vmap(loss)(jnp.asarray(ws))
    np.testing.assert_allclose(got, [float(loss(jnp.asarray(r))) for r in ws], rtol=1e-12)


def traced_scale(w, a):
    s = State(w, jnp.tanh, 0.5).replace(scale=a)    # a traced float into a meta field
    return jnp.sum(_step(s).w)


def test_traced_float_into_a_meta_field_by_replace_refused(x64):
    w = jnp.asarray([0.3, 0.7])
    # d/da would be sum(w) (0.3 + 0.7): aux data carries none, so secant must refuse, not 0
    # (the message names the aux argument, State and the user's line: tests/test_ctx15_aux_errors)
    named = r"(?s)argument scale= of State.*aux data.*test_fix11_aux_fields\.py:"
    with pytest.raises(secant.SecantError, match=named):
        grad(traced_scale, argnums=1)(w, jnp.asarray(2.0))
    with pytest.raises(secant.SecantError, match=named):
        vmap(traced_scale, in_axes=(None, 0))(w, jnp.asarray([2.0, 3.0]))


def leaf_into_meta(other, w):
    s = State(w, jnp.tanh, other.w)     # a leaf of a differentiated object kept as aux data
    return jnp.sum(_step(s).w)


def test_leaf_of_a_parameter_into_a_meta_field_refused(x64):
    other = State(jnp.asarray(2.0), jnp.sin, 1.0)
    w = jnp.asarray([0.3, 0.7])
    with pytest.raises(secant.SecantError) as e:
        grad(leaf_into_meta)(other, w)
    assert "test_fix11_aux_fields.py" in str(e.value)
    with pytest.raises(secant.SecantError):
        vmap(leaf_into_meta, in_axes=(0, None))(State(jnp.asarray([1.0, 2.0]), jnp.sin, 1.0), w)
