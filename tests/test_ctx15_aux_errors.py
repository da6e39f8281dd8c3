"""Issue 15: a differentiated or batched value passed into a pytree's aux data (register_dataclass's
meta_fields, a flax struct field with pytree_node=False, `.replace(scale=x[1])`) is refused, as
it would carry no derivative or batch axis (a silent zero): the error names the aux field and
the user's file and line, never secant's generated code (`<secant: dynamic_call_vjp #2>`, the
dispatcher that transforms the replace only when it runs) nor the internal name of the
generated replace (replace_state_), and never jit's bare "Exception raised while checking
equality of metadata fields". More cases: tests/error_catalogue_cases.py group "aux"."""
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import fd_grad


@dataclasses.dataclass(frozen=True)
class State:
    w: object
    scale: object
    fn: object = None

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


tree_util.register_dataclass(State, data_fields=["w"], meta_fields=["scale", "fn"])
X = np.array([0.1, 0.2, 0.3])


def replaced(x):
    s = State(x, 1.0).replace(scale=x[1])
    return jnp.sum(s.w * s.scale)


def built(x):
    s = State(x, x[0] + 1.0)
    return jnp.sum(s.w * s.scale)


@pytest.mark.parametrize("f", [replaced, built])
@pytest.mark.parametrize("transform", ["grad", "jit(grad)", "vmap", "vmap(grad)"])
def test_traced_meta_field_is_refused_naming_the_users_line(x64, f, transform):
    run = {"grad": lambda: grad(f), "jit(grad)": lambda: jit(grad(f)), "vmap": lambda: vmap(f),
           "vmap(grad)": lambda: vmap(grad(f))}[transform]
    with pytest.raises(secant.SecantError) as info:
        run()(np.stack([X, 2 * X]) if transform.startswith("vmap") else X)
    msg = str(info.value)
    assert "test_ctx15_aux_errors.py:" in msg and "aux data" in msg
    assert "scale" in msg or "argument 2 of State" in msg
    assert "<secant" not in msg and "State_" not in msg and "replace_state" not in msg.split(
        "(in secant's")[0]


def with_static_fn(x):
    s = State(x, 2.0).replace(fn=jnp.tanh)
    return jnp.sum(s.fn(s.w * s.scale))


def test_a_static_function_in_a_meta_field_still_differentiates(x64):
    want = 2.0 / np.cosh(2.0 * X) ** 2
    np.testing.assert_allclose(fd_grad(with_static_fn, (X,)), want, rtol=1e-6)
    np.testing.assert_allclose(grad(with_static_fn)(X), want, rtol=1e-10)
    np.testing.assert_allclose(jit(grad(with_static_fn))(X), want, rtol=1e-10)
