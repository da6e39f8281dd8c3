"""Issue 15: a registered pytree class built from differentiated values with arguments it keeps
in its aux data (flax's ApplyScope(variables, mutable=mutable): tree_flatten returns the
variables as children and `mutable` as aux data), then passed on. secant read C(...) as a tree
only when every argument was a child, and refused the rest; it now reads the children from the
call and the aux arguments as the structure (they must not be traced: refused, naming the
line, where JAX would carry their derivative). Checked against closed forms, float64 central
differences, a Python loop and eager."""
import copy
import functools

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import check_vmap, fd_grad

X = np.array([1.0, 2.0])


@tree_util.register_pytree_node_class
class Scaled:
    def __init__(self, w, scale=1.0, name="layer"):
        self.w, self.scale, self.name = w, scale, name

    def apply(self, x):
        return self.scale * self.w["k"] * x

    def tree_flatten(self):
        return (self.w,), (self.scale, self.name)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)


def run(m, x):
    return m.apply(x)


def loss(w, x, s):
    m = Scaled({"k": w}, scale=s, name="dense")
    return jnp.sum(run(m, x) ** 2)


def test_constructor_with_aux_keyword_passed_on(x64):
    w, s = 3.0, 2.0
    g = grad(loss)(jnp.asarray(w), jnp.asarray(X), s)
    np.testing.assert_allclose(g, 2 * w * s ** 2 * np.sum(X ** 2), rtol=1e-12)    # 120
    np.testing.assert_allclose(g, fd_grad(lambda w: loss(w, jnp.asarray(X), s),
                                          (jnp.asarray(w),)), rtol=1e-6)
    np.testing.assert_allclose(jit(grad(loss), static_argnums=2)(jnp.asarray(w), jnp.asarray(X),
                                                                  s), g, rtol=1e-12)
    ws = np.array([1.0, 3.0])
    got = vmap(loss, in_axes=(0, None, None))(jnp.asarray(ws), jnp.asarray(X), s)
    np.testing.assert_allclose(got, [np.sum((wi * s * X) ** 2) for wi in ws], rtol=1e-12)
    check_vmap(lambda x: run(Scaled({"k": jnp.asarray(w)}, s), x), (X,))


def make(w):
    return Scaled({"k": w}, 0.5, "out")         # aux given positionally


def test_constructor_with_aux_positional_returned(x64):
    f = lambda w, x: jnp.sum(run(make(w), x))
    np.testing.assert_allclose(grad(f)(jnp.asarray(3.0), jnp.asarray(X)), 0.5 * X.sum(),
                               rtol=1e-12)
    m = grad(lambda w: make(w).w["k"] * 2.0)(jnp.asarray(3.0))
    np.testing.assert_allclose(m, 2.0, rtol=1e-12)
    jac = secant.jacfwd(make)(jnp.asarray(3.0))
    assert type(jac) is Scaled and jac.scale == 0.5 and jac.name == "out"
    np.testing.assert_allclose(jac.w["k"], 1.0)


def traced_aux(w, x):
    m = Scaled({"k": w}, scale=w)
    return jnp.sum(run(m, x))


def test_traced_aux_argument_read_as_written(x64):
    # scale computed from w: the call is not read as a tree (its aux data would carry no
    # derivative) but as before, an object built of traced values: d/dw sum(w^2 x) = 2 w sum(x)
    g = grad(traced_aux)(jnp.asarray(3.0), jnp.asarray(X))
    np.testing.assert_allclose(g, 2 * 3.0 * X.sum(), rtol=1e-12)
    got = vmap(traced_aux, in_axes=(0, None))(jnp.asarray([1.0, 2.0]), jnp.asarray(X))
    np.testing.assert_allclose(got, [1.0 * X.sum(), 4.0 * X.sum()], rtol=1e-12)


# --- flax's bind: a plain object built in the function, a field set, the object returned ----------
class Lin:
    def __init__(self):
        self.scale = 2.0

    def __call__(self, x):
        return self.scale * self.w * x


def bind(w):                    # flax15's Model._bind: bound = Model(); bound.scope = scope
    m = Lin()
    m.w = w
    return m


PROTO = Lin()


def bind_copy(w):               # flax's: bound = copy.copy(self); object.__setattr__(bound, ...)
    m = copy.copy(PROTO)
    object.__setattr__(m, "w", w)
    return m


def twice(w):
    m = Lin()
    m.w = w
    m.w = m.w * m.scale + w     # 3 w
    return m


@pytest.mark.parametrize("make", [bind, bind_copy])
def test_field_set_on_a_new_plain_object_returned(x64, make):
    def loss(w, x):
        m = make(w)
        return jnp.sum(m(x) ** 2)

    w = 3.0
    g = grad(loss)(jnp.asarray(w), jnp.asarray(X))
    np.testing.assert_allclose(g, 2 * w * 4.0 * np.sum(X ** 2), rtol=1e-12)        # 120
    np.testing.assert_allclose(g, fd_grad(lambda w: loss(w, jnp.asarray(X)), (jnp.asarray(w),)),
                               rtol=1e-6)
    np.testing.assert_allclose(jit(grad(loss))(jnp.asarray(w), jnp.asarray(X)), g, rtol=1e-12)
    ws = np.array([1.0, 3.0])
    got = vmap(loss, in_axes=(0, None))(jnp.asarray(ws), jnp.asarray(X))
    np.testing.assert_allclose(got, [np.sum((2 * wi * X) ** 2) for wi in ws], rtol=1e-12)
    jac = secant.jacfwd(make)(jnp.asarray(w))
    assert type(jac) is Lin
    np.testing.assert_allclose(jac.w, 1.0)
    assert PROTO.__dict__ == {"scale": 2.0}         # (the copy's field set, not the original's)


def test_field_set_twice(x64):
    np.testing.assert_allclose(grad(lambda w: twice(w).w ** 2)(jnp.asarray(3.0)), 2 * 9 * 3.0,
                               rtol=1e-12)


# --- a registered class whose __call__ a variadic functools.wraps decorator wraps -----------------
_STACK = []


def compact(fn):
    @functools.wraps(fn)
    def wrapped(self, *args, **kwargs):
        _STACK.append(self)             # a global stack (flax's module context)
        try:
            return fn(self, *args, **kwargs)
        finally:
            _STACK.pop()
    return wrapped


@tree_util.register_pytree_node_class
class Net:
    def __init__(self, w):
        self.w = w

    @compact
    def __call__(self, x):
        return self.w * x

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def make_net(w):
    return Net(w)


def net_loss(w, x):
    m = make_net(w)
    return jnp.sum(m(x) ** 2)


def test_wrapped_call_with_a_global_stack(x64):
    # the wrapper's source transform refuses the global stack; its trace was taken of its form
    # specialised for the call, whose `orig(self, args_0)` called the wrapper again: a
    # RecursionError, then a SecantError. Now the trace runs the user's wrapper through as
    # written (transformer/trace_source.py _user_wrapper): d/dw sum((w x)^2) = 2 w sum(x^2)
    np.testing.assert_allclose(net_loss(jnp.asarray(2.0), jnp.asarray(X)), 4.0 * 5.0)
    np.testing.assert_allclose(grad(net_loss)(jnp.asarray(2.0), jnp.asarray(X)), 2 * 2.0 * 5.0,
                               rtol=1e-12)
    assert not _STACK
    np.testing.assert_allclose(secant.jit(grad(net_loss))(jnp.asarray(3.0), jnp.asarray(X)),
                               2 * 3.0 * 5.0, rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(net_loss), (0, None))(jnp.asarray([2.0, -1.5]),
                                                               jnp.asarray(X)),
                               [20.0, -15.0], rtol=1e-12)
    assert not _STACK
