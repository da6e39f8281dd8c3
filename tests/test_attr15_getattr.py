"""Issue 15, attr15: a user __getattr__ that answers every name it is asked for from a dict
(`return self._table[name] * self.scale`), raising KeyError, not AttributeError, for a name
it does not hold, or answering any name (`.get(name, 0.0)`). secant's own probes of the
object (`hasattr(tree, "shape")`, `getattr(t, "dtype", None)`, copy.copy's `__setstate__`)
ran the hook: grad stopped with the user's KeyError or a RecursionError (copy.copy of such an
object recurses in plain Python too). JAX's checks of pytree leaves run no user hook; now
secant's look on the object's dict and class only (transformer/properties.py has_attr,
get_attr, copy_object). Values: derivatives against float64 central differences, vmap
against a Python loop."""
import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, hessian, jit, jvp, tree_util, vmap
from test_mod15_getattr import B, BS, S, SS, W, WS, _fd, _obj, f, f_np


def _make(kind):
    """A fresh class per test (what one test's transforms learn of it is not another's)."""
    if kind == "keyerror":
        class Table:
            def __init__(self, w, b, scale):
                self._table = {"w15m": w, "b15m": b}
                self.scale = scale

            def __getattr__(self, name):
                return self._table[name] * self.scale
    else:
        class Table:
            def __init__(self, w, b, scale):
                self._table = {"w15m": w, "b15m": b}
                self.scale = scale

            def __getattr__(self, name):
                if name.startswith("__"):
                    raise AttributeError(name)
                return self._table.get(name, 0.0) * self.scale

    tree_util.register_pytree_node(
        Table, lambda m: ((m._table["w15m"], m._table["b15m"], m.scale), None),
        lambda _, c: Table(*c))
    return Table


@pytest.mark.parametrize("kind", ["keyerror", "default"])
@pytest.mark.parametrize("how", ["grad", "jit_grad", "jvp", "vmap", "vmap_grad"])
def test_hook_answering_every_name(x64, kind, how):
    Table = _make(kind)
    for _ in range(2):          # (the first call and a later one)
        if how in ("grad", "jit_grad"):
            g = (grad(f) if how == "grad" else jit(grad(f)))(_obj(Table))
            dw, db, ds = _fd(W, B, S)
            assert type(g) is Table
            np.testing.assert_allclose(np.asarray(g._table["w15m"]), dw, rtol=1e-6)
            np.testing.assert_allclose(np.asarray(g._table["b15m"]), db, rtol=1e-6)
            np.testing.assert_allclose(float(g.scale), ds, rtol=1e-6)
        elif how == "jvp":
            tw, tb, ts = np.array([1.0, -0.5, 2.0]), np.array([0.3, 0.0, 1.0]), 0.7
            value, tangent = jvp(f, (_obj(Table),), (_obj(Table, tw, tb, ts),))
            dw, db, ds = _fd(W, B, S)
            np.testing.assert_allclose(float(value), f_np(W, B, S), rtol=1e-12)
            np.testing.assert_allclose(float(tangent), dw @ tw + db @ tb + ds * ts, rtol=1e-6)
        elif how == "vmap":
            got = np.asarray(vmap(f)(_obj(Table, WS, BS, SS)))
            np.testing.assert_allclose(got, [f_np(*a) for a in zip(WS, BS, SS)], rtol=1e-12)
        else:
            g = vmap(grad(f))(_obj(Table, WS, BS, SS))
            want = [_fd(*a) for a in zip(WS, BS, SS)]
            for i, key in enumerate(("w15m", "b15m")):
                np.testing.assert_allclose(np.asarray(g._table[key]), [w[i] for w in want],
                                           rtol=1e-6)
            np.testing.assert_allclose(np.asarray(g.scale), [w[2] for w in want], rtol=1e-6)


@pytest.mark.parametrize("kind", ["keyerror", "default"])
def test_hook_answering_every_name_hessian(x64, kind):
    """The object built inside the function: hessian right on the first call and after."""
    Table = _make(kind)
    h = hessian(lambda w: f(Table(w, snp.asarray(B), snp.asarray(S))))
    want = np.stack([(_fd(W + 1e-4 * e, B, S)[0] - _fd(W - 1e-4 * e, B, S)[0]) / 2e-4
                     for e in np.eye(3)])
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(h(snp.asarray(W))), want, rtol=1e-4, atol=1e-6)


def test_copy_object_keeps_state_without_running_the_hook():
    """properties.copy_object of such an object: a new object, its fields the same (plain
    copy.copy recurses on it)."""
    from secant.transformer.properties import copy_object, get_attr, has_attr
    Table = _make("keyerror")
    t = _obj(Table)
    c = copy_object(t)
    assert type(c) is Table and c is not t and c._table is t._table and c.scale is t.scale
    assert not has_attr(t, "shape") and get_attr(t, "dtype", "none") == "none"
    assert has_attr(t, "scale") and get_attr(t, "scale") is t.scale
