"""Jacobians nested to any depth (jacfwd(jacfwd(jacrev(f))), hessian(hessian(f)), jvp of a
hessian): third- and fourth-order derivative tensors against closed forms and against float64
central differences of the lower-order result, over every mix of jacfwd and jacrev, pytree
arguments and argnums, Python loops and lax loops, eagerly and under jit."""
import itertools

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantError

X = np.array([0.3, -1.2, 0.7])
JACS = (secant.jacfwd, secant.jacrev)


def sin_x2(x):
    return snp.sum(snp.sin(x) * x ** 2)


def _d3_sin_x2(x):      # (x^2 sin x)''' and ''''
    s, c = np.sin(x), np.cos(x)
    return 6 * c - 6 * x * s - x ** 2 * c


def _d4_sin_x2(x):
    s, c = np.sin(x), np.cos(x)
    return -12 * s - 8 * x * c + x ** 2 * s


def _diag(values, order):
    out = np.zeros((len(values),) * order)
    for i, v in enumerate(values):
        out[(i,) * order] = v
    return out


def _fd(fn, x, h=1e-5):
    """Central differences of fn (array in, array out) along each element of x: shape
    fn(x).shape + x.shape."""
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * h))
    return np.moveaxis(np.stack(cols), 0, -1).reshape(np.shape(fn(x)) + x.shape)


@pytest.mark.parametrize("kinds", list(itertools.product(JACS, repeat=3)),
                         ids=lambda ks: "/".join(k.__name__ for k in ks))
def test_third_derivative_is_diagonal_closed_form(x64, kinds):
    a, b, c = kinds
    got = np.asarray(a(b(c(sin_x2)))(X))
    assert got.shape == (3, 3, 3)
    np.testing.assert_allclose(got, _diag(_d3_sin_x2(X), 3), rtol=1e-12, atol=1e-12)


def test_third_derivative_through_hessian_and_grad(x64):
    want = _diag(_d3_sin_x2(X), 3)
    for t in (secant.jacfwd(secant.hessian(sin_x2)), secant.jacrev(secant.hessian(sin_x2)),
              secant.hessian(secant.grad(sin_x2)), secant.hessian(secant.jacrev(sin_x2))):
        np.testing.assert_allclose(np.asarray(t(X)), want, rtol=1e-12, atol=1e-12)


def test_fourth_derivative_closed_form(x64):
    want = _diag(_d4_sin_x2(X), 4)
    for t in (secant.hessian(secant.hessian(sin_x2)),
              secant.jacrev(secant.jacfwd(secant.jacrev(secant.jacfwd(sin_x2)))),
              secant.jacfwd(secant.jacfwd(secant.hessian(sin_x2)))):
        got = np.asarray(t(X))
        assert got.shape == (3, 3, 3, 3)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def coupled(x):
    """Not separable: every third derivative is non-zero somewhere off the diagonal."""
    return snp.sin(x[0] * x[1]) * snp.exp(x[2]) + x[0] ** 2 * x[1] * x[2] + snp.tanh(x[1] - x[2])


def test_third_and_fourth_order_against_differences_of_the_hessian(x64):
    hess = secant.hessian(coupled)
    third = secant.jacfwd(hess)
    want3 = _fd(hess, X)
    assert np.abs(want3).max() > 0.1 and np.count_nonzero(np.abs(want3) > 1e-3) > 10
    for t in (third, secant.jacrev(hess), secant.jacrev(secant.jacfwd(secant.jacrev(coupled)))):
        np.testing.assert_allclose(np.asarray(t(X)), want3, rtol=1e-6, atol=1e-7)
    got3 = np.asarray(third(X))        # symmetric in all three indices, as it must be
    for perm in itertools.permutations(range(3)):
        np.testing.assert_allclose(got3, np.transpose(got3, perm), rtol=1e-12, atol=1e-12)
    want4 = _fd(third, X)
    np.testing.assert_allclose(np.asarray(secant.hessian(hess)(X)), want4, rtol=1e-6,
                               atol=1e-7)


def vector_out(x):
    return snp.stack([snp.sum(snp.sin(x) * x[::-1]), snp.prod(x) + x[0] ** 3])


def test_vector_output_third_order(x64):
    inner = secant.jacfwd(secant.jacrev(vector_out))
    got = np.asarray(secant.jacrev(inner)(X))
    assert got.shape == (2, 3, 3, 3)
    np.testing.assert_allclose(got, _fd(inner, X), rtol=1e-6, atol=1e-7)


def two_args(x, y):
    return snp.sum(snp.exp(x) * y ** 3) + snp.dot(x, y) ** 2


def test_argnums_differ_at_each_level(x64):
    y = np.array([0.5, 0.2, -0.4])
    # d/dy d/dx d/dy of two_args
    t = secant.jacrev(secant.jacfwd(secant.jacrev(two_args, argnums=1), argnums=0), argnums=1)
    got = np.asarray(t(X, y))
    assert got.shape == (3, 3, 3)
    lower = secant.jacfwd(secant.jacrev(two_args, argnums=1), argnums=0)
    np.testing.assert_allclose(got, _fd(lambda v: lower(X, v), y), rtol=1e-6, atol=1e-7)


def test_tuple_argnums_give_nested_tuples(x64):
    y = np.array([0.5, 0.2, -0.4])
    t = secant.jacfwd(secant.hessian(two_args, argnums=(0, 1)), argnums=(0, 1))
    got = t(X, y)
    hess = secant.hessian(two_args, argnums=(0, 1))
    for i in range(2):
        for j in range(2):
            for k, (fn, at) in enumerate(((lambda v: hess(v, y)[i][j], X),
                                          (lambda v: hess(X, v)[i][j], y))):
                assert got[i][j][k].shape == (3, 3, 3)
                np.testing.assert_allclose(np.asarray(got[i][j][k]), _fd(fn, at), rtol=1e-6,
                                           atol=1e-7)


def dict_model(params, x):
    return snp.sum(snp.tanh(params["w"] * x + params["b"]) ** 2)


def test_dict_parameters_third_order(x64):
    params = {"w": np.array([0.4, -0.3, 0.9]), "b": np.array(0.1)}
    got = secant.jacfwd(secant.hessian(dict_model), argnums=1)(params, X)
    lower = secant.hessian(dict_model)
    want = _fd(lambda v: lower(params, v)["w"]["b"], X)
    assert got["w"]["b"].shape == (3, 3)
    np.testing.assert_allclose(np.asarray(got["w"]["b"]), want, rtol=1e-6, atol=1e-7)
    want = _fd(lambda v: lower(params, v)["w"]["w"], X)
    np.testing.assert_allclose(np.asarray(got["w"]["w"]), want, rtol=1e-6, atol=1e-7)


def loop_cubes(x):
    acc = 0.0
    for i in range(3):
        acc = acc + snp.sum(x ** 3) * (i + 1)
    return acc


def scan_cubes(x):
    def step(c, xi):
        return c + xi ** 4, xi
    return lax.scan(step, 0.0, x)[0]


def test_through_a_python_loop_and_lax_scan(x64):
    # sum(6 x^3)''' = 36 on the diagonal; sum(x^4)'''' = 24 on the diagonal
    np.testing.assert_allclose(np.asarray(secant.jacrev(secant.hessian(loop_cubes))(X)),
                               _diag(np.full(3, 36.0), 3), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.hessian(secant.hessian(scan_cubes))(X)),
                               _diag(np.full(3, 24.0), 4), rtol=1e-12)


def test_jvp_of_a_hessian(x64):
    t = np.array([1.0, -2.0, 0.5])
    hess = secant.hessian(coupled)
    value, tangent = secant.jvp(hess, (X,), (t,))
    np.testing.assert_allclose(np.asarray(value), np.asarray(hess(X)), rtol=1e-12)
    h = 1e-5
    want = (np.asarray(hess(X + h * t)) - np.asarray(hess(X - h * t))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-6, atol=1e-7)


def test_under_jit_as_eagerly(x64):
    for t in (secant.jacfwd(secant.hessian(coupled)), secant.hessian(secant.hessian(sin_x2))):
        np.testing.assert_allclose(np.asarray(secant.jit(t)(X)), np.asarray(t(X)), rtol=1e-12,
                                   atol=1e-12)


def test_float32_without_x64():
    got = np.asarray(secant.jacfwd(secant.jacfwd(secant.jacrev(sin_x2)))(X.astype(np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _diag(_d3_sin_x2(X), 3), rtol=1e-4, atol=1e-5)


def aux_fn(x):
    return snp.sum(snp.sin(x) ** 3), x


def test_has_aux_inside_a_deep_nest_is_a_clear_error(x64):
    with pytest.raises(SecantError, match="has_aux"):
        secant.jacfwd(secant.jacfwd(secant.jacrev(aux_fn, has_aux=True)))(X)


def test_vmap_grad_and_jvp_of_a_third_derivative(x64):
    third = secant.jacfwd(secant.hessian(sin_x2))
    xs = np.stack([X, np.array([0.1, 0.2, -0.3])])
    got = np.asarray(secant.vmap(third)(xs))
    for i in range(2):
        np.testing.assert_allclose(got[i], _diag(_d3_sin_x2(xs[i]), 3), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.grad(lambda x: snp.sum(third(x)))(X)),
                               _d4_sin_x2(X), rtol=1e-12, atol=1e-12)
    t = np.array([1.0, -2.0, 0.5])
    got = np.asarray(secant.jvp(lambda x: third(x), (X,), (t,))[1])
    np.testing.assert_allclose(got, _diag(_d4_sin_x2(X) * t, 3), rtol=1e-12, atol=1e-12)


def test_integer_argument_inside_the_nest_is_refused(x64):
    f = secant.jacfwd(secant.hessian(lambda x, n: snp.sum(x ** 3) * n, argnums=1))
    with pytest.raises(TypeError, match="argument 1 has dtype int"):
        f(X, 2)
