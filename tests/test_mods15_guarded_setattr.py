"""Issue 15: a class with a __setattr__ of its own that guards or records what is assigned
(flax's Module: frozen once bound, submodules bound on assignment), its objects copied and
given their fields with object.__setattr__ (flax's _bind), then a method reading self.params
under grad. secant refused the cotangent of `self` (ad/helpers.py grad_of_fields: a class with
its own attribute access is not read as its fields). Reads through the default
__getattribute__ find the fields in the object's __dict__, and an object rebuilt as
object.__new__ + that __dict__ holds what the original held, as JAX's register_dataclass
rebuilds one: such a class is now read as a pytree of its fields (secant/tree_util.py
plain_refusal(read=True)). Writes that would run its __setattr__ (m.w = v, setattr) are still
not read as a new object: refused, naming the line. Checked against float64 central
differences, a Python loop and eager."""
import copy

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import assert_trees_close, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(1515)
X = RNG.normal(size=(4, 3))
P = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}


class Layer:
    """Frozen once bound: its __setattr__ guards and records (flax's Module)."""
    def __init__(self, width):
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "assigned", [])

    def __setattr__(self, name, value):
        if getattr(self, "params", None) is not None:
            raise AttributeError(f"{name}: a bound Layer is frozen")
        self.assigned.append(name)
        object.__setattr__(self, name, value)

    def forward(self, x):
        return jnp.tanh(x @ self.params["w"] + self.params["b"]) * self.width


def bind(layer, params):
    bound = copy.copy(layer)
    object.__setattr__(bound, "params", params)
    object.__setattr__(bound, "calls", {})      # (an untraced field set after a traced one)
    return bound


LAYER = Layer(2.0)


def loss(params, x):
    return jnp.sum(bind(LAYER, params).forward(x) ** 2)


def np_loss(params, x):
    return np.sum((np.tanh(x @ params["w"] + params["b"]) * 2.0) ** 2)


def test_method_of_a_bound_guarded_object_under_grad_jit_vmap(x64):
    np.testing.assert_allclose(loss(to_snp(P), jnp.asarray(X)), np_loss(P, X), rtol=1e-12)
    g = grad(loss)(to_snp(P), jnp.asarray(X))
    assert sorted(g) == ["b", "w"]
    assert_trees_close(g, fd_grad(lambda p: np_loss(p, X), (P,)), rtol=1e-6, atol=1e-8)
    # closed form in b: sum over rows of 2 * y * width * (1 - tanh^2)
    t = np.tanh(X @ P["w"] + P["b"])
    np.testing.assert_allclose(g["b"], np.sum(2 * (2.0 * t) * 2.0 * (1 - t ** 2), axis=0),
                               rtol=1e-10)
    assert_trees_close(jit(grad(loss))(to_snp(P), jnp.asarray(X)), g, rtol=1e-10, atol=1e-12)
    # per-row losses by vmap over x, against a loop
    check_vmap(lambda x: loss(P, x), (X,))
    # per-example gradients: vmap of grad over rows, summed, is the batch's gradient
    per_ex = vmap(grad(loss), in_axes=(None, 0))(to_snp(P), jnp.asarray(X[:, None]))
    assert_trees_close(tree_util.tree_map(lambda v: np.sum(np.asarray(v), axis=0), per_ex), g,
                       rtol=1e-9, atol=1e-12)
    assert LAYER.assigned == [] and not hasattr(LAYER, "params")     # the prototype untouched


def test_forward_mode_through_a_bound_guarded_object(x64):
    t = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    _, got = secant.jvp(lambda p: loss(p, jnp.asarray(X)), (to_snp(P),), (to_snp(t),))
    eps = 1e-6
    moved = [np_loss({k: P[k] + s * eps * t[k] for k in P}, X) for s in (1.0, -1.0)]
    np.testing.assert_allclose(got, (moved[0] - moved[1]) / (2 * eps), rtol=1e-6)


class Tripled:
    """A __setattr__ that changes what it keeps: setting through it is not a plain field set."""
    def __init__(self):
        object.__setattr__(self, "scale", 1.0)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 3.0)

    def out(self, x):
        return jnp.sum(self.w * x)


PROTO = Tripled()


def assigned(w, x):
    m = copy.copy(PROTO)
    m.w = w
    return m.out(x)


def set_by_setattr(w, x):
    m = copy.copy(PROTO)
    setattr(m, "w", w)
    return m.out(x)


@pytest.mark.parametrize("f, line", [(assigned, "m.w = w"), (set_by_setattr, "setattr(m")])
def test_a_field_set_through_the_class_setattr_is_refused_not_bypassed(x64, f, line):
    x, w = np.arange(3.0), np.ones(3)
    assert float(f(w, x)) == 9.0        # eager: w kept tripled
    for transformed, ws in ((grad(f), w), (jit(grad(f)), w),
                            (vmap(f, in_axes=(0, None)), np.ones((2, 3)))):
        with pytest.raises(secant.SecantError, match="Tripled") as e:
            transformed(ws, x)
        assert "test_mods15_guarded_setattr.py" in str(e.value) and line in str(e.value)
