"""`[a] + ns` and `{} | p`: Python concatenates lists and merges dicts, NumPy adds and ors
arrays. secant must know which, or say it cannot (it once added: grad of `[a] + ns` came out as
a sum over a wrong-length array; `{} | p` was a bitwise or, its gradient zero)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import SecantError

NS = [2.0, 3.0]
W = np.array([2.0, 3.0])
WEIGHTS = np.arange(1.0, 4.0)


def concat_global(a):
    return snp.sum(snp.stack([a] + NS) * WEIGHTS)


def add_global_array(a):
    return snp.sum(snp.stack([a] + W) * WEIGHTS[:2])


def concat_list_call(a, ns):
    return snp.sum(snp.stack([a] + list(ns)) * WEIGHTS)


def concat_param(a, ns):
    return snp.sum(snp.stack([a] + ns) * WEIGHTS)


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_global_list_concatenates():
    assert float(secant.grad(concat_global)(1.0)) == pytest.approx(1.0)
    assert float(secant.jit(secant.grad(concat_global))(1.0)) == pytest.approx(1.0)


def test_global_array_adds_as_numpy():
    assert float(secant.grad(add_global_array)(1.0)) == pytest.approx(3.0)
    f = lambda a: float(np.sum((np.array([a]) + W) * WEIGHTS[:2]))
    assert float(secant.grad(add_global_array)(1.0)) == pytest.approx(_fd(f, 1.0), rel=1e-5)


def test_list_of_a_parameter_concatenates():
    assert float(secant.grad(concat_list_call)(1.0, [2.0, 3.0])) == pytest.approx(1.0)


def test_tracked_list_parameter_concatenates():
    ga, gns = secant.grad(concat_param, argnums=(0, 1))(1.0, [2.0, 3.0])
    np.testing.assert_allclose([ga, *gns], [1.0, 2.0, 3.0])


def concat_param_add(a, ns):
    return snp.sum(snp.stack([a, 2 * a] + ns) * WEIGHTS[:2])


def test_unknown_kind_is_asked_when_it_runs():
    """`[a] + ns`, ns not differentiated and of a kind known only at run time: concatenated
    when ns is a list or tuple (checked then); an array (NumPy adds) is a clear error there,
    never a wrong derivative (it was refused when transformed)."""
    ns = [2.0, 3.0]
    assert float(secant.grad(concat_param)(1.0, ns)) == pytest.approx(1.0)
    assert float(secant.jit(secant.grad(concat_param))(1.0, ns)) == pytest.approx(1.0)
    # d2/da2 of a * (a + 2 * 2 + 3 * 3) = 2
    assert float(secant.grad(secant.grad(lambda a: concat_param(a, ns) * a))(1.0)) == \
        pytest.approx(2.0)
    np.testing.assert_allclose(secant.vmap(secant.grad(concat_param), in_axes=(0, None))(
        np.arange(3.0), [2.0, 3.0]), [1.0, 1.0, 1.0])
    with pytest.raises(SecantError, match=r"NumPy adds them"):
        secant.grad(concat_param_add)(1.0, np.array([2.0, 3.0]))


# --- `|` of dicts: `{} | p`, `e | p` merge (they were NumPy's bitwise_or: zero gradients) ----
def merge_display(p):
    q = {} | p | {"b": p["a"] * 2}
    return q["a"] * q["b"]


def merge_local(p):
    e = {}
    q = e | p
    return q["a"] * 2


def test_dict_merge_with_a_display_is_differentiated():
    g = secant.grad(merge_display)({"a": 3.0})
    assert float(g["a"]) == pytest.approx(12.0)     # d(2 a^2)/da
    np.testing.assert_allclose(secant.vmap(merge_display)({"a": np.arange(3.0)}),
                               [0.0, 2.0, 8.0])


def test_dict_merge_with_a_local_dict_is_differentiated():
    assert float(secant.grad(merge_local)({"a": 3.0})["a"]) == pytest.approx(2.0)
