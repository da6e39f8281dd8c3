"""Issue 15, mod15: a user __getattr__ that computes the attributes it looks up in a dict by
name (`return self._table[name] * self.scale`), no name written in its code. Read as plain
fields, vmap ran it on the batched object (a wrong broadcast), grad dropped the derivative
(zeros) and jvp ran it on the tangent object (zero), all silently. Now found when a call
meets such an object (transformer/properties.py reads_computed, _hook_computes) and read
through the class's own code (attribute_reader) from that call on; where a call meets it only
inside the derivative (hessian's inner transform), the read is refused clearly and read
through the code from the next call. Values: vmap against a Python loop, derivatives against
float64 central differences, jit against eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import grad, hessian, jit, jvp, tree_util, vmap


def _make():
    """A fresh class per test (what one test's transforms learn of it is not another's)."""
    class Table:
        def __init__(self, w, b, scale):
            self._table = {"w15m": w, "b15m": b}
            self.scale = scale

        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            if name not in self._table:
                raise AttributeError(name)
            return self._table[name] * self.scale

    tree_util.register_pytree_node(
        Table, lambda m: ((m._table["w15m"], m._table["b15m"], m.scale), None),
        lambda _, c: Table(*c))
    return Table


def f(m):
    return snp.sum(snp.sin(m.w15m) * m.b15m)


def f_np(w, b, s):
    return float(np.sum(np.sin(w * s) * b * s))


W, B, S = np.array([0.3, -1.2, 0.8]), np.array([1.5, 0.2, -0.4]), 1.7
WS = np.stack([W, 2 * W, -W])
BS = np.stack([B, B, 3 * B])
SS = np.array([1.7, 0.5, 2.0])


def _fd(w, b, s, h=1e-6):
    """(d/dw, d/db, d/ds) of f_np by float64 central differences."""
    dw = np.array([(f_np(w + h * e, b, s) - f_np(w - h * e, b, s)) / (2 * h) for e in np.eye(3)])
    db = np.array([(f_np(w, b + h * e, s) - f_np(w, b - h * e, s)) / (2 * h) for e in np.eye(3)])
    return dw, db, (f_np(w, b, s + h) - f_np(w, b, s - h)) / (2 * h)


def _obj(cls, w=W, b=B, s=S):
    return cls(snp.asarray(w), snp.asarray(b), snp.asarray(s))


@pytest.mark.parametrize("how", ["vmap", "jit_vmap", "grad", "jit_grad", "jvp", "vmap_grad",
                                 "jit"])
def test_table_getattr_first_and_later_calls(x64, how):
    Table = _make()
    for _ in range(2):          # (the first call and a later one)
        if how in ("vmap", "jit_vmap"):
            t = vmap(f) if how == "vmap" else jit(vmap(f))
            got = np.asarray(t(_obj(Table, WS, BS, SS)))
            np.testing.assert_allclose(got, [f_np(*a) for a in zip(WS, BS, SS)], rtol=1e-12)
        elif how in ("grad", "jit_grad"):
            g = (grad(f) if how == "grad" else jit(grad(f)))(_obj(Table))
            dw, db, ds = _fd(W, B, S)
            np.testing.assert_allclose(np.asarray(g._table["w15m"]), dw, rtol=1e-6)
            np.testing.assert_allclose(np.asarray(g._table["b15m"]), db, rtol=1e-6)
            np.testing.assert_allclose(float(g.scale), ds, rtol=1e-6)
        elif how == "jvp":
            tw, tb, ts = np.array([1.0, -0.5, 2.0]), np.array([0.3, 0.0, 1.0]), 0.7
            value, tangent = jvp(f, (_obj(Table),), (_obj(Table, tw, tb, ts),))
            dw, db, ds = _fd(W, B, S)
            np.testing.assert_allclose(float(value), f_np(W, B, S), rtol=1e-12)
            np.testing.assert_allclose(float(tangent), dw @ tw + db @ tb + ds * ts, rtol=1e-6)
        elif how == "vmap_grad":
            g = vmap(grad(f))(_obj(Table, WS, BS, SS))
            want = [_fd(*a) for a in zip(WS, BS, SS)]
            np.testing.assert_allclose(np.asarray(g._table["w15m"]), [w[0] for w in want],
                                       rtol=1e-6)
            np.testing.assert_allclose(np.asarray(g.scale), [w[2] for w in want], rtol=1e-6)
        else:
            np.testing.assert_allclose(float(jit(f)(_obj(Table))), f_np(W, B, S), rtol=1e-12)


def test_table_getattr_hessian_refused_then_right(x64):
    """hessian meets the object inside its inner derivative: refused clearly on that call
    (never a wrong value), right from the next one."""
    Table = _make()
    h = hessian(lambda w: f(Table(w, snp.asarray(B), snp.asarray(S))))
    got = None
    for _ in range(3):
        try:
            got = np.asarray(h(snp.asarray(W)))
        except secant.SecantError as e:
            assert "__getattr__ computes it from the name" in str(e)
    want = np.stack([(_fd(W + 1e-4 * e, B, S)[0] - _fd(W - 1e-4 * e, B, S)[0]) / 2e-4
                     for e in np.eye(3)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
