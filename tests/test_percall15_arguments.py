"""Issue 15: a function traced on each call (a differentiated value passes through a global,
secant/transforms.py _traced_instead) whose parameters are a function, a container or an int:
a recording value cannot stand in for them, so it is traced with each call's own arguments
(arrays recorded, containers taken apart item by item, functions, objects and ints passed as
themselves: transformer/trace_source.py record(arguments=...)), by a dispatcher the transforms
write in its place (_per_call_dispatcher). Checked against float64 central differences, a
Python loop, eager and closed forms; an object holding arrays passed as a parameter is refused,
never read as constants."""
import collections

import numpy as np

import secant
import secant.numpy as snp
from secant import grad, hessian, jit, jvp

from others15_check import assert_trees_close, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(1515)
_SCALES = []        # a stack of scales, pushed by one function, read by another


def scaled_sin(x):
    return snp.sin(x) * _SCALES[-1]


def with_scale(fn, params, x, n):
    _SCALES.append(params["s"])
    try:
        for _ in range(n):
            x = fn(x)
        return x
    finally:
        _SCALES.pop()


def loss(params, x):
    return snp.sum(with_scale(scaled_sin, params, x, 2) * params["w"])


def np_loss(p, x):
    for _ in range(2):
        x = np.sin(x) * p["s"]
    return np.sum(x * p["w"])


def test_a_function_and_a_dict_passed_to_a_function_traced_per_call(x64):
    p = {"s": 1.3, "w": RNG.normal(size=4)}
    x = RNG.normal(size=4)
    np.testing.assert_allclose(loss(to_snp(p), x), np_loss(p, x), rtol=1e-12)
    g = grad(loss)(to_snp(p), x)
    assert not _SCALES
    assert_trees_close(g, fd_grad(loss, (to_snp(p), x)), rtol=1e-6, atol=1e-8)
    assert_trees_close(jit(grad(loss))(to_snp(p), x), g, rtol=1e-10, atol=1e-12)
    # in x too, and its jvp against the gradient
    gx = grad(loss, argnums=1)(to_snp(p), x)
    assert_trees_close(gx, fd_grad(loss, (to_snp(p), x), argnum=1), rtol=1e-6, atol=1e-8)
    t = RNG.normal(size=4)
    _, dot = jvp(lambda v: loss(to_snp(p), v), (snp.asarray(x),), (snp.asarray(t),))
    np.testing.assert_allclose(dot, np.dot(gx, t), rtol=1e-10)
    # a batch of parameter dicts: vmap against a loop, of the loss and of its gradient
    batch = {"s": 1 + RNG.random(3), "w": RNG.normal(size=(3, 4))}
    check_vmap(lambda q: loss(q, x), (batch,))
    check_vmap(lambda q: grad(loss)(q, x), (batch,))
    # second order: d2/ds2 against central differences of the gradient
    h = hessian(lambda s: loss({"s": s, "w": snp.asarray(p["w"])}, x))(1.3)
    eps = 1e-5
    gs = lambda s: float(grad(loss)({"s": s, "w": snp.asarray(p["w"])}, x)["s"])   # noqa: E731
    np.testing.assert_allclose(h, (gs(1.3 + eps) - gs(1.3 - eps)) / (2 * eps), rtol=1e-6)
    assert not _SCALES
    assert with_scale in secant.transforms._TRACED_WITH_ARGUMENTS      # (traced so)


def test_an_int_argument_is_passed_as_itself_each_call_its_own_trace(x64):
    def deep(params, x, n):
        return snp.sum(with_scale(scaled_sin, params, x, n))

    p = {"s": 0.7}
    x = RNG.normal(size=3)
    for n in (1, 3, 2):
        def np_deep(s, n=n):
            v = x
            for _ in range(n):
                v = np.sin(v) * s
            return v.sum()
        g = grad(deep)(to_snp(p), x, n)
        eps = 1e-6
        np.testing.assert_allclose(g["s"], (np_deep(0.7 + eps) - np_deep(0.7 - eps)) / (2 * eps),
                                   rtol=1e-6)


class _Holder:
    def __init__(self, w):
        self.w = w


def _use_holder(holder, s, x, act):
    _SCALES.append(s)
    try:
        return snp.sum(holder.w * act(x))
    finally:
        _SCALES.pop()


def test_an_object_passed_as_itself_its_arrays_read_where_not_differentiated(x64):
    """A parameter that is a plain object (not a pytree) is passed to the trace as itself: its
    arrays are the trace's constants, right where nothing differentiates them (JAX takes such
    an argument where grad does not differentiate it)."""
    x = RNG.normal(size=3)
    for w in (RNG.normal(size=3), RNG.normal(size=3)):
        holder = _Holder(snp.asarray(w))
        g = grad(_use_holder, argnums=1)(holder, 1.5, x, scaled_sin)
        np.testing.assert_allclose(g, np.sum(w * np.sin(x)), rtol=1e-12)
        gx = grad(_use_holder, argnums=2)(holder, 1.5, x, scaled_sin)
        np.testing.assert_allclose(gx, w * np.cos(x) * 1.5, rtol=1e-12)
    assert not _SCALES
    assert _use_holder in secant.transforms._TRACED_WITH_ARGUMENTS     # (traced so)


class _Pair(collections.namedtuple("_Pair", "w s")):
    pass


def _use_pair(pair, x, act):
    _SCALES.append(pair.s)
    try:
        return snp.sum(pair.w * act(x))
    finally:
        _SCALES.pop()


def test_a_namedtuple_of_differentiated_arrays_is_taken_apart_not_read_as_constants(x64):
    w, x = RNG.normal(size=3), RNG.normal(size=3)
    g = grad(_use_pair)(_Pair(snp.asarray(w), 1.5), x, scaled_sin)
    assert isinstance(g, _Pair)
    np.testing.assert_allclose(g.w, np.sin(x) * 1.5, rtol=1e-12)
    np.testing.assert_allclose(g.s, np.sum(w * np.sin(x)), rtol=1e-12)
    assert _use_pair in secant.transforms._TRACED_WITH_ARGUMENTS     # (traced so)
