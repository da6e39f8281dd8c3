"""Issue 15, effects15b: the user's Python effects (a note appended to a global list before and
after a call) run once per call under every transform, as Python runs them eagerly and JAX once
per trace (jit: on the first call only), where the loss reaches its layer through a callee known
only at run time: a method of an object, a dict of callables, getattr(module, name), a callable
class instance, functools.partial, a decorator-wrapped function. Two layers: the weights passed
through a global stack (traced at transform time), and a flax-like @compact module's apply
(its bound copy, known only at run time, pushes itself on a global stack, which no source
transform follows: the first call that meets it answers that callee from the values the call
computed, secant/transforms.py _Answer, never by running the user's function again; the loss is
traced whole from the next call). The module's layer reached through a dict or a
functools.partial is followed by that trace as through a method (its stand-ins run the user's
function through), and whether a callee's own source is its form is decided per transform
(vmap's does not decide grad's): every case passes in every order. Counted at the first,
second and third call of each transform; every call's value is checked against float64 central differences of a NumPy
reference (gradients, Jacobians, Hessians) or a Python loop (vmap)."""
import functools
import types

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, value_and_grad, vmap

from test_others10_modules import Dense, Module, compact
from user_programs.checks import rotated

NOTES = []
_STACK = []         # (the weights a layer pushes, read back by _top: a global flow)
RNG = np.random.default_rng(1515)
W = RNG.normal(size=8)              # a (3, 2) kernel and a bias of 2, flat
X = RNG.normal(size=3)
XS = RNG.normal(size=(2, 3))
T = RNG.normal(size=8)              # (jvp's tangent)
H = 1e-5


def note(tag):
    NOTES.append(tag)


def _top(x):
    w = _STACK[-1]
    return jnp.tanh(x @ jnp.reshape(w[:6], (3, 2)) + w[6:])


def stack_layer(w, x):
    """The weights passed to _top through a global stack."""
    _STACK.append(w)
    out = _top(x)
    _STACK.pop()
    return out


class Compact(Module):
    """A flax-like @compact module (pushes itself on a global stack; its Dense is made inline
    and bound to the running module when called, a copy known only at run time)."""
    def __init__(self):
        object.__setattr__(self, "scope", None)

    @compact
    def __call__(self, x):
        return jnp.tanh(Dense(2)(x))


def _module_layer():
    """The weights given to a module's apply (flax's model.apply({"params": ...}, x)): a
    fresh function and model for each test (what one test's transforms learn of them is not
    another's)."""
    model = Compact()

    def module_layer(w, x):
        params = {"Dense_0": {"kernel": jnp.reshape(w[:6], (3, 2)), "bias": w[6:]}}
        return model.apply({"params": params}, x)
    return module_layer


def _stack_layer():
    return stack_layer


LAYERS = {"stack": _stack_layer, "module": _module_layer}


def reference(w, x):
    """The loss in float64 NumPy."""
    return float(np.sum(np.tanh(x @ w[:6].reshape(3, 2) + w[6:]) ** 2))


class Net:
    def __init__(self, fn):
        self.fn = fn

    def apply(self, w, x):
        return self.fn(w, x)


class Call:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, w, x):
        return self.fn(w, x)


def _scaled(fn, scale, w, x):
    return fn(w * scale, x)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def _method(base):
    net = Net(base)

    def loss(w, x):
        note("before")
        out = net.apply(w, x)
        note("after")
        return jnp.sum(out ** 2)
    return loss, 1.0


def _dict(base):
    layers = {"dense": base}

    def loss(w, x):
        note("before")
        out = layers["dense"](w, x)
        note("after")
        return jnp.sum(out ** 2)
    return loss, 1.0


def _getattr(base):
    module, name = types.ModuleType("layers"), "dense"
    module.dense = base

    def loss(w, x):
        note("before")
        out = getattr(module, name)(w, x)
        note("after")
        return jnp.sum(out ** 2)
    return loss, 1.0


def _calling(dense, scale=1.0):
    """The loss calling `dense`, a callable object, a partial or a decorator's wrapper."""
    def loss(w, x):
        note("before")
        out = dense(w, x)
        note("after")
        return jnp.sum(out ** 2)
    return loss, scale


def _instance(base):
    return _calling(Call(base))


def _partial(base):
    return _calling(functools.partial(_scaled, base, 0.5), 0.5)


def _decorated(base):
    return _calling(logged(base))


KINDS = {"method": _method, "dict": _dict, "getattr": _getattr, "instance": _instance,
         "partial": _partial, "decorated": _decorated}


def fd_grad(f, w):
    g = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = H
        g[i] = (f(w + e) - f(w - e)) / (2 * H)
    return g


def fd_hessian(f, w, h=1e-4):
    return np.stack([(fd_grad(f, w + e) - fd_grad(f, w - e)) / (2 * h)
                     for e in np.eye(w.size) * h])


def _expected(mode, scale):
    def f(w, x):
        return reference(w * scale, x)
    g = fd_grad(lambda v: f(v, X), W)
    if mode in ("grad", "jacfwd", "jacrev", "jit_grad"):
        return g, 1e-6
    if mode == "value_and_grad":
        return (f(W, X), g), 1e-6
    if mode == "jvp":
        return float(g @ T), 1e-6
    if mode == "hessian":
        return fd_hessian(lambda v: f(v, X), W), 1e-5
    if mode in ("vmap", "jit_vmap"):
        return np.array([f(W, x) for x in XS]), 1e-9
    return np.stack([fd_grad(lambda v: f(v, x), W) for x in XS]), 1e-6      # vmap_grad


def _runner(mode, loss):
    w, x, xs, t = jnp.asarray(W), jnp.asarray(X), jnp.asarray(XS), jnp.asarray(T)
    return {
        "grad": lambda: grad(loss),
        "value_and_grad": lambda: value_and_grad(loss),
        "jit_grad": lambda: jit(grad(loss)),
        "jacfwd": lambda: jacfwd(loss),
        "jacrev": lambda: jacrev(loss),
        "hessian": lambda: hessian(loss),
        "vmap": lambda: vmap(loss, (None, 0)),
        "jit_vmap": lambda: jit(vmap(loss, (None, 0))),
        "vmap_grad": lambda: vmap(grad(loss), (None, 0)),
        "jvp": lambda: lambda a, b: jvp(lambda v: loss(v, b), (a,), (t,))[1],
    }[mode](), (w, xs if "vmap" in mode else x)


# effects of the first call and of later ones, as JAX runs them (jit: traced on the first call)
WANT = {"grad": (2, 2), "value_and_grad": (2, 2), "jvp": (2, 2), "jacfwd": (2, 2),
        "jacrev": (2, 2), "hessian": (2, 2), "vmap": (2, 2), "vmap_grad": (2, 2),
        "jit_grad": (2, 0), "jit_vmap": (2, 0)}


# (each (layer, kind) under four of the ten modes in turn, each mode on four or five of the
# twelve; every triple under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("layer, kind, mode", [
    pytest.param(layer, kind, mode, id=f"{layer}-{kind}-{mode}")
    for (layer, kind), mode in rotated(
        [(layer, kind) for layer in LAYERS for kind in KINDS], WANT, 4)])
def test_effects_once_per_call(x64, layer, kind, mode):
    loss, scale = KINDS[kind](LAYERS[layer]())
    run, args = _runner(mode, loss)
    counts, results = [], []
    for _ in range(3):
        NOTES.clear()
        results.append(run(*args))
        counts.append(len(NOTES))
    want, rtol = _expected(mode, scale)
    for r in results:
        if mode == "value_and_grad":
            np.testing.assert_allclose(float(r[0]), want[0], rtol=1e-12)
            np.testing.assert_allclose(np.asarray(r[1]), want[1], rtol=rtol, atol=1e-8)
        else:
            np.testing.assert_allclose(np.asarray(r), want, rtol=rtol, atol=1e-6)
    assert counts == [WANT[mode][0]] + [WANT[mode][1]] * 2, counts
    assert not _STACK
