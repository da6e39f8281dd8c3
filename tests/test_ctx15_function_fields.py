"""Issue 15: a module (a registered pytree object) holding a function as a field (`self.act =
snp.tanh` as a flax module's meta field or an equinox module's child) under jacfwd(grad),
hessian, vmap(grad), jacrev(jacfwd). `self.act(z)` is called through a dispatcher whose
callee `fn` and tangent `fn_dot` are parameters of the derivative; vmap of that derivative
sized its batch by fn_dot, the first batched parameter, which holds no arrays: jacfwd(grad(f))
raised "the batch size of a value with no arrays in it ... is unknown" naming secant's
generated `tanh_held_jvp`. Functions carry no derivative and have no batch axis: the batch is
now sized by the first batched parameter holding an array when it runs (batching/vectorize.py
build). Which classes the process registered decides whether `self.act` is read as a field or
through attribute_reader (tests/test_order15_computed_names.py checks both paths).
Checked against closed forms and float64 central differences."""
import dataclasses

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, tree_util, vmap

from others15_check import fd_grad


def swish(x):
    return x * jnp.tanh(x)


@dataclasses.dataclass
class Dense:
    """flax-like: the activation a meta field (pytree_node=False)."""
    w: object
    act: object

    def __call__(self, x):
        return self.act(self.w * x)


tree_util.register_dataclass(Dense, data_fields=["w"], meta_fields=["act"])


@tree_util.register_pytree_node_class
class Eqx:
    """equinox-like: every field a child, the activation one of them."""
    def __init__(self, w, act):
        self.w, self.act = w, act

    def tree_flatten(self):
        return (self.w, self.act), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __call__(self, x):
        return self.act(self.w * x)


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


XC = np.array([0.3, -0.5, 0.7])
W = np.array([0.4, 1.1, -0.6])
PARAMS = {"act": jnp.tanh, "scale": 1.0}


def child(w):
    return jnp.sum(Eqx(w, jnp.tanh)(XC) ** 2)


def aux_of_an_argument(m):
    return jnp.sum(m(XC) ** 2)


def in_a_dict(w):
    return jnp.sum(PARAMS["act"](w * XC * PARAMS["scale"]) ** 2)


def _closing(act):
    def f(w):
        return jnp.sum(act(w * XC) ** 2)
    return f


in_a_closure = _closing(jnp.tanh)


def lambda_child(w):
    return jnp.sum(Eqx(w, lambda z: jnp.sin(z) * z)(XC) ** 2)


def sequential(w):
    return jnp.sum(Sequential([Eqx(w, jnp.tanh), Dense(w, swish)])(XC))


def _tanh_hessian(w):
    """d2/dw2 of sum(tanh(w x)^2), diagonal: 2 x^2 (s^2 - 2 t^2 s), t = tanh(w x), s = 1 - t^2."""
    t = np.tanh(w * XC)
    s = 1 - t ** 2
    return np.diag(2 * XC ** 2 * (s ** 2 - 2 * t ** 2 * s))


def _fd_hessian(f, w, eps=1e-4):
    return np.stack([(fd_grad(f, (w + e,)) - fd_grad(f, (w - e,))) / (2 * eps)
                     for e in np.eye(w.size) * eps], axis=1)


# (f, how the argument is made from w, how w's part is read from a derivative)
CASES = {
    "child": (child, lambda w: w, lambda h: h),
    "aux_of_an_argument": (aux_of_an_argument, lambda w: Dense(w, jnp.tanh), lambda h: h.w),
    "user_function_aux": (aux_of_an_argument, lambda w: Dense(w, swish), lambda h: h.w),
    "in_a_dict": (in_a_dict, lambda w: w, lambda h: h),
    "in_a_closure": (in_a_closure, lambda w: w, lambda h: h),
    "lambda_child": (lambda_child, lambda w: w, lambda h: h),
    "sequential": (sequential, lambda w: w, lambda h: h),
}
TRANSFORMS = {"jacfwd(grad)": lambda f: jacfwd(grad(f)), "hessian": hessian,
              "jacrev(jacfwd)": lambda f: jacrev(jacfwd(f)),
              "jacfwd(jacrev)": lambda f: jacfwd(jacrev(f)),
              "jit(jacfwd(grad))": lambda f: jit(jacfwd(grad(f)))}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_second_derivatives_of_a_module_holding_a_function(x64, name, transform):
    f, make, part = CASES[name]
    of_w = lambda w: f(make(w))
    want = _fd_hessian(of_w, W)
    if name in ("child", "aux_of_an_argument", "in_a_dict", "in_a_closure"):
        np.testing.assert_allclose(want, _tanh_hessian(W), atol=1e-6)
        want = _tanh_hessian(W)
    got = part(part(TRANSFORMS[transform](f)(make(W))))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_of_grad_of_a_module_holding_a_function(x64, name):
    f, make, part = CASES[name]
    ws = np.stack([W, 2 * W, -W])
    got = part(vmap(grad(f))(make(ws)))
    want = np.stack([fd_grad(lambda w: f(make(w)), (w,)) for w in ws])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def dict_argument(p):
    return jnp.sum(p["act"](p["w"] * XC) ** 2)


def test_a_function_among_the_mapped_or_differentiated_leaves_is_refused(x64):
    """As JAX (a function is not a valid JAX type): a TypeError naming the line, never
    vmap's 'rank should be at least 1, but is only 0' for the function."""
    import secant
    named = r"(?s)function.*test_ctx15_function_fields\.py"
    with pytest.raises(secant.SecantTypeError, match=named):
        vmap(grad(dict_argument))({"w": np.stack([W, 2 * W]), "act": jnp.tanh})
    with pytest.raises(secant.SecantTypeError, match=named):
        grad(dict_argument)({"w": W, "act": jnp.tanh})
    got = vmap(grad(dict_argument), in_axes=({"w": 0, "act": None},))(
        {"w": np.stack([W, 2 * W]), "act": jnp.tanh})
    want = [fd_grad(lambda w: dict_argument({"w": w, "act": jnp.tanh}), (w,))
            for w in (W, 2 * W)]
    np.testing.assert_allclose(got["w"], want, rtol=1e-6, atol=1e-8)
