"""vmap of a derivative dispatched at run time (a function passed as an argument, called inside)
reads the derivative's parameters once, not at every call (secant.transforms._parameter_names);
the values stay those of a Python loop over the examples."""
import inspect
import traceback

import numpy as np

import secant
import secant.numpy as snp
from secant import transforms, tree_util


@tree_util.register_pytree_node_class
class Scale:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return snp.sin(self.w * x) * x

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def held(x):
    m = Scale(1.5)
    return m(x) + x * x


def curve(x):
    return snp.sin(x) * x


def apply(fn, x):
    return fn(x) + x * x


class _Counting:
    """inspect as secant.transforms sees it, counting signature calls by the dispatchers."""
    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        return getattr(inspect, name)

    def signature(self, *args, **kwargs):
        if {"_dispatch", "_batch_dispatched"} & {f.name for f in traceback.extract_stack()}:
            self.calls += 1
        return inspect.signature(*args, **kwargs)


def _check(f, x, want, monkeypatch):
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5)
    counting = _Counting()
    monkeypatch.setattr(transforms, "inspect", counting)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5)
    monkeypatch.undo()
    assert counting.calls == 0


XS = np.array([0.3, -0.4, 1.1], np.float32)


def test_dispatched_vmap_of_grad_reads_signatures_once(monkeypatch):
    g = secant.vmap(secant.grad(apply, 1), (None, 0))
    want = [float(secant.grad(apply, 1)(curve, x)) for x in XS]
    _check(lambda v: g(curve, v), XS, want, monkeypatch)
    exact = [np.sin(x) + x * np.cos(x) + 2 * x for x in XS.astype(np.float64)]
    np.testing.assert_allclose(want, exact, rtol=1e-5)


def test_dispatched_grad_of_a_held_object_matches_a_loop():
    f = secant.vmap(secant.grad(held))
    want = [float(secant.grad(held)(x)) for x in XS]
    exact = [1.5 * x * np.cos(1.5 * x) + np.sin(1.5 * x) + 2 * x for x in XS.astype(np.float64)]
    np.testing.assert_allclose(want, exact, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(f(XS)), want, rtol=1e-5)
