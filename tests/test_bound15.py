"""Issue 15: methods of an Array passed as the function to a transform (`vmap(W.dot)`,
`grad(v.__rmul__)`, `grad(Array.__pow__)`), checked against NumPy, loops and float64 central
differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.array import Array

W_NP = np.arange(6.0).reshape(2, 3) / 4 - 0.5
V_NP = np.array([0.5, 1.25, 2.0])
XS_NP = np.arange(12.0).reshape(4, 3) / 5 + 0.25


def _central(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


BINARY = [("__add__", np.add, False), ("__radd__", np.add, True),
          ("__sub__", np.subtract, False), ("__rsub__", np.subtract, True),
          ("__mul__", np.multiply, False), ("__rmul__", np.multiply, True),
          ("__truediv__", np.divide, False), ("__rtruediv__", np.divide, True),
          ("__pow__", np.power, False), ("__rpow__", np.power, True)]


@pytest.mark.parametrize("name,ref,swapped", BINARY)
def test_vmap_of_a_bound_operator(name, ref, swapped):
    v = snp.asarray(V_NP)
    out = secant.vmap(getattr(v, name))(snp.asarray(XS_NP))
    want = np.stack([ref(x, V_NP) if swapped else ref(V_NP, x) for x in XS_NP])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)


@pytest.mark.parametrize("name,ref,swapped", BINARY)
def test_jacfwd_and_jacrev_of_a_bound_operator(name, ref, swapped):
    v = snp.asarray(V_NP)
    x = XS_NP[1]
    want = np.stack([_central(lambda x: (ref(x, V_NP) if swapped else ref(V_NP, x))[i], x)
                     for i in range(3)])
    for jac in (secant.jacfwd, secant.jacrev):
        np.testing.assert_allclose(np.asarray(jac(getattr(v, name))(snp.asarray(x))), want,
                                   rtol=1e-3, atol=1e-4)


def test_dot_bound_to_a_constant_under_every_transform():
    w, v = snp.asarray(W_NP), snp.asarray(V_NP)
    xs = snp.asarray(XS_NP)
    np.testing.assert_allclose(np.asarray(secant.vmap(w.dot)(xs)),
                               np.stack([W_NP @ x for x in XS_NP]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.grad(v.dot)(xs[0])), V_NP, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jacfwd(w.dot)(xs[0])), W_NP, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jacrev(w.dot)(xs[0])), W_NP, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(v.dot))(xs)),
                               np.tile(V_NP, (4, 1)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(w.dot)(xs[0])), W_NP @ XS_NP[0],
                               rtol=1e-5)
    primal, tangent = secant.jvp(w.dot, (xs[0],), (snp.ones(3),))
    np.testing.assert_allclose(np.asarray(primal), W_NP @ XS_NP[0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tangent), W_NP.sum(1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.vmap(v.__matmul__)(xs)), XS_NP @ V_NP,
                               rtol=1e-5)


def test_clip_and_getitem_bound_to_a_constant():
    v = snp.asarray(V_NP)
    lo, hi = np.array([-2.0, 0.0, 0.6, 1.0]), np.array([0.0, 1.0, 1.5, 3.0])
    out = secant.vmap(v.clip)(snp.asarray(lo), snp.asarray(hi))
    np.testing.assert_allclose(np.asarray(out), [np.clip(V_NP, a, b) for a, b in zip(lo, hi)])
    idx = np.array([2, 0, 1])
    np.testing.assert_allclose(np.asarray(secant.vmap(v.__getitem__)(snp.asarray(idx))),
                               V_NP[idx])


def test_unbound_methods_with_self_transformed():
    v = snp.asarray(V_NP)
    np.testing.assert_allclose(np.asarray(secant.grad(Array.sum)(v)), np.ones(3))
    np.testing.assert_allclose(np.asarray(secant.grad(Array.__rmul__, argnums=1)(1.5, 2.5)),
                               1.5)
    np.testing.assert_allclose(np.asarray(secant.grad(Array.__rsub__)(2.5, 4.0)), -1.0)
    np.testing.assert_allclose(np.asarray(secant.grad(Array.__pow__)(1.5, 3.0)), 3 * 1.5 ** 2,
                               rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(secant.vmap(Array.__rmul__)(snp.asarray(XS_NP), snp.asarray(XS_NP))),
        XS_NP * XS_NP, rtol=1e-6)
    out = secant.vmap(Array.reshape, in_axes=(0, None))(snp.asarray(XS_NP), (3, 1))
    np.testing.assert_allclose(np.asarray(out), XS_NP.reshape(4, 3, 1))
    cube = np.arange(24.0).reshape(4, 2, 3)
    np.testing.assert_allclose(np.asarray(secant.vmap(Array.transpose)(snp.asarray(cube))),
                               cube.transpose(0, 2, 1))


def test_method_of_a_constant_array_called_with_traced_values():
    # (a constant w's method, not passed but called: vmap and grad read it as the op's call)
    w, v = snp.asarray(W_NP), snp.asarray(V_NP)
    xs = snp.asarray(XS_NP)
    np.testing.assert_allclose(np.asarray(secant.vmap(lambda x: w.dot(x))(xs)),
                               XS_NP @ W_NP.T, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.grad(lambda x: v.dot(x) ** 2)(xs[0])),
                               2 * (V_NP @ XS_NP[0]) * V_NP, rtol=1e-5)
    lo, hi = np.array([-2.0, 0.0, 0.6, 1.0]), np.array([0.0, 1.0, 1.5, 3.0])
    out = secant.vmap(lambda a, b: v.clip(a, b))(snp.asarray(lo), snp.asarray(hi))
    np.testing.assert_allclose(np.asarray(out), [np.clip(V_NP, a, b) for a, b in zip(lo, hi)])
    g = secant.grad(lambda hi: v.clip(0.0, hi).sum())(1.0)
    np.testing.assert_allclose(float(g), 2.0)       # 1.25 and 2.0 clipped at hi


def test_at_update_bound_to_a_constant():
    v = snp.asarray(V_NP)
    vals = np.arange(4.0) - 1.5
    out = secant.vmap(v.at[1].set)(snp.asarray(vals))
    want = np.stack([np.where(np.arange(3) == 1, s, V_NP) for s in vals])
    np.testing.assert_allclose(np.asarray(out), want)
    out = secant.vmap(v.at[1].add)(snp.asarray(vals))
    np.testing.assert_allclose(np.asarray(out), want + np.eye(3)[1] * V_NP[1])
    idx = snp.asarray(np.array([0, 2]))
    jac = secant.jacrev(v.at[idx].multiply)(snp.asarray(np.array([2.0, 3.0])))
    np.testing.assert_allclose(np.asarray(jac), [[V_NP[0], 0.0], [0.0, 0.0], [0.0, V_NP[2]]])
    jac = secant.jacfwd(v.at[1:].set)(snp.asarray(np.array([2.0, 3.0])))
    np.testing.assert_allclose(np.asarray(jac), [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])


def test_errors_in_a_bound_methods_function_name_the_users_line():
    v = snp.asarray(V_NP)
    with pytest.raises(secant.SecantError) as e:
        secant.vmap(snp.ones((4, 6)).reshape)(snp.asarray(np.array([[2, 3]])))   # THIS LINE
    assert "test_bound15.py" in str(e.value) and "THIS LINE" in str(e.value), str(e.value)
    assert "<secant:" not in str(e.value)
    with pytest.raises(secant.SecantError) as e:
        secant.grad(v.__getitem__)(1)                                           # THIS LINE
    assert "test_bound15.py" in str(e.value) and "THIS LINE" in str(e.value), str(e.value)


def test_builtins_passed_as_the_function():
    np.testing.assert_allclose(float(secant.grad(pow)(2.0, 3.0)), 12.0, rtol=1e-6)
    np.testing.assert_allclose(float(secant.grad(pow, argnums=1)(2.0, 3.0)), 8 * np.log(2.0),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.vmap(pow)(snp.asarray(V_NP),
                                                           snp.asarray(XS_NP[0]))),
                               V_NP ** XS_NP[0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.vmap(abs)(snp.asarray(-V_NP))), V_NP)
    np.testing.assert_allclose(float(secant.grad(abs)(-2.0)), -1.0)
    # float() of a traced value: JAX's concretization error, at the user's line
    for transform in (secant.grad, secant.vmap):
        with pytest.raises(secant.SecantError) as e:
            transform(float)(snp.asarray(V_NP) if transform is secant.vmap else 2.0)  # HERE
        assert "float()" in str(e.value) and "HERE" in str(e.value), str(e.value)


def test_numpy_ufunc_methods_passed_as_the_function():
    xs = snp.asarray(XS_NP)
    np.testing.assert_allclose(np.asarray(secant.vmap(np.add.reduce)(xs)), XS_NP.sum(1),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(np.maximum.reduce)(xs)), XS_NP.max(1))
    x = XS_NP[1]
    np.testing.assert_allclose(np.asarray(secant.grad(np.multiply.reduce)(snp.asarray(x))),
                               _central(lambda x: np.multiply.reduce(x), x), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(secant.jacfwd(np.add.accumulate)(snp.asarray(x))),
                               np.tril(np.ones((3, 3))))
    out = secant.vmap(np.subtract.outer)(xs, xs[::-1])
    np.testing.assert_allclose(np.asarray(out),
                               np.stack([np.subtract.outer(a, b) for a, b in
                                         zip(XS_NP, XS_NP[::-1])]), rtol=1e-6)
    jac = secant.jacrev(np.multiply.outer)(snp.asarray(x), snp.asarray(V_NP))
    np.testing.assert_allclose(np.asarray(jac), np.einsum("ik,j->ijk", np.eye(3), V_NP))
    with pytest.raises(secant.SecantError, match="numpy.add.at"):
        secant.vmap(np.add.at)(xs, xs)
