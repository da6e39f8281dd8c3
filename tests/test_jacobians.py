"""jacfwd, jacrev and hessian: JAX's shapes (out.shape + in.shape, pytrees of pytrees, tuples over
argnums), values against closed forms, agreement between forward and reverse, symmetric
Hessians, eagerly and under jit, through Python control flow and lax loops."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax


def tanh_map(w, x):
    return snp.tanh(w @ x)


def test_jacobian_of_a_map_closed_form(x64):
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(4, 3)), rng.normal(size=3)
    want_x = (1 - np.tanh(w @ x) ** 2)[:, None] * w
    for jac in (secant.jacfwd, secant.jacrev):
        got = jac(tanh_map, argnums=1)(w, x)
        assert got.shape == (4, 3)
        np.testing.assert_allclose(np.asarray(got), want_x, rtol=1e-12)
        gw = jac(tanh_map)(w, x)             # argnums=0: shape out.shape + w.shape
        assert gw.shape == (4, 4, 3)
        want_w = np.einsum("i,ij,k->ijk", 1 - np.tanh(w @ x) ** 2, np.eye(4), x)
        np.testing.assert_allclose(np.asarray(gw), want_w, rtol=1e-12)


def test_argnums_tuple_gives_a_tuple_of_jacobians(x64):
    w, x = np.ones((2, 3)) / 3, np.arange(3.0)
    for jac in (secant.jacfwd, secant.jacrev):
        gw, gx = jac(tanh_map, argnums=(0, 1))(w, x)
        assert gw.shape == (2, 2, 3) and gx.shape == (2, 3)
        one, = jac(tanh_map, argnums=(1,))(w, x)
        np.testing.assert_allclose(np.asarray(one), np.asarray(gx))


def mlp(params, x):
    return snp.tanh(x @ params["w"] + params["b"])


def pair_out(x, y):
    return snp.sin(x) * y, snp.sum(x * x)


def test_pytrees_in_and_out_are_shaped_as_jax(x64):
    params = {"w": np.ones((3, 2)) / 4, "b": np.zeros(2)}
    x = np.arange(3.0)
    fwd, rev = secant.jacfwd(mlp)(params, x), secant.jacrev(mlp)(params, x)
    assert set(fwd) == {"b", "w"} and fwd["w"].shape == (2, 3, 2) and fwd["b"].shape == (2, 2)
    for k in fwd:
        np.testing.assert_allclose(np.asarray(fwd[k]), np.asarray(rev[k]), rtol=1e-12)
    out = secant.jacfwd(pair_out, argnums=(0, 1))(np.arange(3.0), np.ones(3))
    assert isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], tuple)
    assert [a.shape for a in out[0]] == [(3, 3), (3, 3)] and [a.shape for a in out[1]] == [(3,),
                                                                                        (3,)]
    rev = secant.jacrev(pair_out, argnums=(0, 1))(np.arange(3.0), np.ones(3))
    for a, b in zip(secant.tree_util.tree_leaves(out), secant.tree_util.tree_leaves(rev)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def with_aux(x):
    return snp.sin(x), snp.sum(x)


def test_has_aux():
    x = np.array([0.1, 0.2], np.float32)
    for jac in (secant.jacfwd, secant.jacrev):
        j, aux = jac(with_aux, has_aux=True)(x)
        np.testing.assert_allclose(np.asarray(j), np.diag(np.cos(x)), rtol=1e-6)
        np.testing.assert_allclose(float(aux), 0.3, rtol=1e-6)


def test_integer_inputs_are_refused_with_the_user_line():
    with pytest.raises(TypeError, match="jacfwd requires") as info:
        secant.jacfwd(snp.sin)(np.arange(3))
    assert "test_jacobians.py" in str(info.value)
    with pytest.raises(TypeError, match="jacrev requires"):
        secant.jacrev(snp.sin)(np.arange(3))


# --- Hessians -------------------------------------------------------------------------------
def quartic(x):
    return snp.sum(x ** 4) + snp.sum(x[:-1] * x[1:])


def quartic_hessian(x):
    h = np.diag(12 * x ** 2)
    h += np.diag(np.ones(len(x) - 1), 1) + np.diag(np.ones(len(x) - 1), -1)
    return h


def test_hessian_is_symmetric_and_closed_form(x64):
    x = np.linspace(-1, 1, 5)
    h = np.asarray(secant.hessian(quartic)(x))
    np.testing.assert_allclose(h, quartic_hessian(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, h.T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.hessian(quartic))(x)),
                               quartic_hessian(x), rtol=1e-12, atol=1e-12)


def bilinear(x, y):
    return snp.sum(snp.sin(x) * y) + snp.sum(x ** 2 * y ** 2)


def test_hessian_argnums_blocks(x64):
    x, y = np.array([0.3, -0.2]), np.array([1.5, 0.5])
    (hxx, hxy), (hyx, hyy) = secant.hessian(bilinear, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(hxx), np.diag(-np.sin(x) * y + 2 * y ** 2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hxy), np.diag(np.cos(x) + 4 * x * y), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hyx), np.asarray(hxy).T, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hyy), np.diag(2 * x ** 2), rtol=1e-12)


def dict_loss(p, x):
    return snp.sum(snp.tanh(p["w"] @ x + p["b"]) ** 2)


def test_hessian_of_a_dict_of_parameters(x64):
    p = {"w": np.arange(6.0).reshape(3, 2) / 6, "b": np.array([0.1, -0.2, 0.3])}
    x = np.array([0.5, -1.0])
    h = secant.hessian(dict_loss)(p, x)
    assert h["w"]["w"].shape == (3, 2, 3, 2) and h["w"]["b"].shape == (3, 2, 3)
    np.testing.assert_allclose(np.asarray(h["w"]["b"]).reshape(6, 3),
                               np.asarray(h["b"]["w"]).reshape(3, 6).T, rtol=1e-10)
    # against forward over forward (a different composition of generated code)
    ff = secant.jacfwd(secant.jacfwd(dict_loss))(p, x)
    for a in "wb":
        for b in "wb":
            np.testing.assert_allclose(np.asarray(h[a][b]), np.asarray(ff[a][b]), rtol=1e-10,
                                       atol=1e-12)


def branchy(x):
    if snp.sum(x) > 0:          # data-dependent: a lax.cond under jit
        y = snp.sum(snp.sin(x) * x)
    else:
        y = snp.sum(x ** 3)
    return y


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hessian_through_a_data_dependent_if(sign, x64):
    x = sign * np.array([0.5, 1.2])
    want = np.diag(2 * np.cos(x) - x * np.sin(x)) if sign > 0 else np.diag(6 * x)
    np.testing.assert_allclose(np.asarray(secant.hessian(branchy)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.hessian(branchy))(x)), want,
                               rtol=1e-12)


def scanned(x):
    c, ys = lax.scan(lambda c, xi: (snp.sin(c) * xi, snp.sum(c * c)), x, snp.arange(1.0, 4.0))
    return snp.sum(ys) + snp.sum(c)


def scanned_numpy(x):
    c, total = x, 0.0
    for xi in (1.0, 2.0, 3.0):
        total += np.sum(c * c)
        c = np.sin(c) * xi
    return total + np.sum(c)


def fd_hessian(f, x, eps=1e-4):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * eps, np.eye(n)[j] * eps
            h[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j)
                       + f(x - e_i - e_j)) / (4 * eps ** 2)
    return h


@pytest.mark.parametrize("jit", [False, True])
def test_hessian_through_lax_scan(jit, x64):
    x = np.array([0.4, -0.9, 1.3])
    h = secant.hessian(scanned)
    got = np.asarray((secant.jit(h) if jit else h)(x))
    np.testing.assert_allclose(got, fd_hessian(scanned_numpy, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, got.T, atol=1e-12)


def fori(x):
    return snp.sum(lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * 0.9 + x, x))


def test_jacobian_compositions_agree(x64):
    x = np.array([0.4, -0.9])
    ref = np.asarray(secant.jacfwd(secant.jacfwd(fori))(x))
    for compose in ((secant.jacfwd, secant.jacrev), (secant.jacrev, secant.jacrev)):
        got = compose[0](compose[1](fori))(x)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.hessian(fori)(x)), ref, rtol=1e-10, atol=1e-12)


def test_jvp_of_a_jacobian(x64):
    x, v = np.array([0.3, 0.7]), np.array([1.0, -1.0])
    jac, jac_dot = secant.jvp(secant.jacrev(quartic), (x,), (v,))
    np.testing.assert_allclose(np.asarray(jac_dot), quartic_hessian(x) @ v, rtol=1e-12)


def test_three_deep_closed_form(x64):
    """No longer refused (more in test_jacobians_nested.py): the third derivative of sum(x**4)
    is 24 x on the diagonal; the product terms are quadratic."""
    x = np.array([0.3, -0.8])
    want = np.zeros((2, 2, 2))
    want[0, 0, 0], want[1, 1, 1] = 24 * x
    np.testing.assert_allclose(np.asarray(secant.jacfwd(secant.hessian(quartic))(x)), want,
                               rtol=1e-12, atol=1e-12)


def test_reverse_over_forward_through_fori(x64):
    x = np.array([0.4, -0.9])
    np.testing.assert_allclose(np.asarray(secant.jacrev(secant.jacfwd(fori))(x)),
                               np.asarray(secant.jacfwd(secant.jacfwd(fori))(x)), rtol=1e-10,
                               atol=1e-12)


def test_reverse_over_forward_through_scan(x64):
    x = np.array([0.4, -0.9, 1.3])
    np.testing.assert_allclose(np.asarray(secant.jacrev(secant.jacfwd(scanned))(x)),
                               fd_hessian(scanned_numpy, x), rtol=1e-6, atol=1e-6)
