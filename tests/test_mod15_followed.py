"""Issue 15, mod15: a flax-like module's apply reached through a dict, a tuple or a
functools.partial, under transforms whose first call traces the loss whole (its bound module
pushes itself on a global stack: secant/transforms.py traced_for_call_instead), and in an order
where one transform (jit of vmap) decides a callee's form before another (grad) needs its own.
Values against float64 central differences of a NumPy reference, vmap against a Python loop;
the user's dict written once per call, with the user's own objects."""
import functools

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, jvp, vmap

from test_effects15b_sweep import (NOTES, W, X, XS, T, _module_layer, _getattr, _method,
                                   fd_grad, note, reference)


def _fd(scale=1.0, x=X):
    return fd_grad(lambda v: reference(v * scale, x), W)


def _run3(fn, *args):
    out = []
    for _ in range(3):
        NOTES.clear()
        out.append((np.asarray(fn(*args)), len(NOTES)))
    return out


def test_grad_after_jit_vmap_of_another_loss(x64):
    """jit(grad(.)) of one loss, then jit(vmap(.)) of another, makes their module's __call__ its own source, callees traced per
    call (possible batched); grad of another loss, the module through getattr, cannot take
    that form (a differentiated module stored in a global) and traces its loss whole."""
    first, _ = _method(_module_layer())
    for _ in range(3):     # (jit(grad(.)) of one loss: traced whole per call from the second)
        np.testing.assert_allclose(np.asarray(jit(grad(first))(jnp.asarray(W),
                                                               jnp.asarray(X))),
                                   _fd(), rtol=1e-6, atol=1e-8)
    second, _ = _method(_module_layer())
    batched = jit(vmap(second, (None, 0)))
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(batched(jnp.asarray(W), jnp.asarray(XS))),
                                   [reference(W, x) for x in XS], rtol=1e-12)
    loss, _ = _getattr(_module_layer())
    for g, notes in _run3(grad(loss), jnp.asarray(W), jnp.asarray(X)):
        np.testing.assert_allclose(g, _fd(), rtol=1e-6, atol=1e-8)
        assert notes == 2


def test_layers_in_a_tuple(x64):
    """Two module layers in a tuple, applied in a loop: followed through the tuple."""
    layers = (_module_layer(), _module_layer())

    def loss(w, x):
        note("in")
        out = 0.0
        for layer in layers:
            out = out + jnp.sum(layer(w, x) ** 2)
        return out
    for g, notes in _run3(grad(loss), jnp.asarray(W), jnp.asarray(X)):
        np.testing.assert_allclose(g, 2 * _fd(), rtol=1e-6, atol=1e-8)
        assert notes == 1
    w, t = jnp.asarray(W), jnp.asarray(T)
    for _ in range(2):
        NOTES.clear()
        tangent = jvp(lambda v: loss(v, jnp.asarray(X)), (w,), (t,))[1]
        np.testing.assert_allclose(float(tangent), 2 * float(_fd() @ T), rtol=1e-6)
        assert len(NOTES) == 1


def test_partial_with_a_keyword(x64):
    """functools.partial binding a keyword of the layer's caller: its value passed through."""
    base = _module_layer()

    def scaled(w, x, *, scale):
        return base(w * scale, x)
    layer = functools.partial(scaled, scale=0.5)

    def loss(w, x):
        note("in")
        return jnp.sum(layer(w, x) ** 2)
    for g, notes in _run3(grad(loss), jnp.asarray(W), jnp.asarray(X)):
        np.testing.assert_allclose(g, _fd(0.5), rtol=1e-6, atol=1e-8)
        assert notes == 1
    out = vmap(grad(loss), (None, 0))(jnp.asarray(W), jnp.asarray(XS))
    np.testing.assert_allclose(np.asarray(out), np.stack([_fd(0.5, x) for x in XS]),
                               rtol=1e-6, atol=1e-8)


def test_dict_written_by_the_traced_loss(x64):
    """A dict of layers the loss also writes (its last layer, a count): the user's dict gets
    each write once per call, holding the user's own function, as Python's run would."""
    dense = _module_layer()
    layers = {"dense": dense, "calls": 0}

    def loss(w, x):
        layers["calls"] = layers["calls"] + 1
        layers["last"] = layers["dense"]
        return jnp.sum(layers["dense"](w, x) ** 2)
    g = grad(loss)
    for k in range(3):
        np.testing.assert_allclose(np.asarray(g(jnp.asarray(W), jnp.asarray(X))), _fd(),
                                   rtol=1e-6, atol=1e-8)
        assert layers["calls"] == k + 1
        assert layers["last"] is dense
