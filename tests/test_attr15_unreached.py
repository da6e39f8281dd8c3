"""Issue 15, attr15: a property of a class the function meets only when it runs (its module
imported by name inside the function, or its class made by a function called at run time):
the object is built inside the function, so no argument check sees it before the call, and
grad/jvp/hessian read `obj.total` as a field. They refused it on the first call and were right
from the next; now the refusal (ad/helpers.py field_in_aux, marked met_in_call) runs the call
once more with the code generated now, which reads it through the property's getter
(secant/transforms.py rerun_if_met): right on the first call, as JAX. Values against float64
central differences; later calls run the function once each."""
import sys

import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, hessian, jit, jvp, vmap

MODULE = '''
import secant.numpy as snp


class Pair:
    def __init__(self, u, v):
        self.u, self.v = u, v

    @property
    def total(self):            # (not elementwise)
        return snp.sum(snp.stack([self.u, self.v]) ** 2) * self.u
'''


def _factory():
    class Local:
        def __init__(self, u, v):
            self.u, self.v = u, v

        @property
        def total(self):
            return snp.sum(snp.stack([self.u, self.v]) ** 2) * self.u
    return Local


def value(a):
    return float((np.sin(a) ** 2 + a ** 4) * np.sin(a))


def slope(a, h=1e-5):
    return (value(a + h) - value(a - h)) / (2 * h)


def curvature(a, h=1e-4):
    return (slope(a + h) - slope(a - h)) / (2 * h)


@pytest.mark.parametrize("where", ["importlib", "factory"])
@pytest.mark.parametrize("how", ["grad", "jvp", "hessian", "vmap_grad", "grad_of_grad"])
def test_property_of_an_unreached_class_right_on_the_first_call(x64, tmp_path, monkeypatch,
                                                                where, how):
    import importlib
    (tmp_path / "attr15_unreached.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []

    def f(a):
        calls.append(1)
        cls = importlib.import_module("attr15_unreached").Pair if where == "importlib" \
            else _factory()
        return cls(snp.sin(a), a * a).total

    xs = np.array([0.3, 0.7, -1.1])
    try:
        for i in range(2):
            before = len(calls)
            if how == "grad":
                got, want = grad(f)(0.7), slope(0.7)
            elif how == "jvp":
                got, want = jvp(f, (0.7,), (2.0,))[1], 2.0 * slope(0.7)
            elif how == "hessian":
                got, want = hessian(f)(0.7), curvature(0.7)
            elif how == "grad_of_grad":
                got, want = grad(grad(f))(0.7), curvature(0.7)
            else:
                got, want = vmap(grad(f))(xs), [slope(x) for x in xs]
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
            if i:           # (the class met: the function runs once a call from then on)
                assert len(calls) - before == 1
    finally:
        sys.modules.pop("attr15_unreached", None)


def test_vmap_and_jit_of_the_unreached_property(x64):
    """vmap (batched getter, not elementwise) against a loop, jit(vmap) too; jit(grad) of the
    class made per call (`_factory()(...)`, made once: tests/test_obj15k_factory.py)."""
    def f(a):
        return _factory()(snp.sin(a), a * a).total

    xs = np.array([0.3, 0.7, -1.1])
    np.testing.assert_allclose(np.asarray(vmap(f)(xs)), [value(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jit(vmap(f))(xs)), [value(x) for x in xs],
                               rtol=1e-12)
    np.testing.assert_allclose(float(jit(grad(f))(0.7)), slope(0.7), rtol=1e-5)
