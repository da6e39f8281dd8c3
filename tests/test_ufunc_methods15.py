"""Issue 15: jax.numpy's ufunc methods (reduce, accumulate, outer, at, reduceat) on
secant.numpy's ufuncs, and NumPy's (np.add.reduce) in user code, under every transform:
grad against float64 central differences (and a second order), vmap against a Python loop,
jit against eager, values against NumPy's own."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

X = np.array([0.5, 1.5, -2.0, 3.0])
M = np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.7]])
IDX = np.array([0, 2, 1])

CASES = {
    "snp_add_reduce": lambda x: snp.add.reduce(x * x),
    "np_add_reduce": lambda x: np.add.reduce(x * x),
    "subtract_reduce": lambda x: snp.subtract.reduce(x * x),
    "subtract_reduce_axis_keepdims": lambda x: snp.subtract.reduce(
        snp.reshape(x, (2, 2)) ** 2, axis=1, keepdims=True).sum(),
    "multiply_reduce_initial": lambda x: snp.multiply.reduce(x, initial=2.0),
    "add_reduce_where": lambda x: snp.add.reduce(x * x, where=np.array([1, 0, 1, 1], bool)),
    "maximum_reduce": lambda x: np.maximum.reduce(x * x),
    "minimum_reduce_where": lambda x: snp.minimum.reduce(x, where=np.array([1, 0, 1, 0], bool),
                                                         initial=5.0),
    "np_multiply_outer": lambda x: np.multiply.outer(x, x).sum(),
    "hypot_outer": lambda x: snp.hypot.outer(x, x).sum(),
    "np_add_accumulate": lambda x: (np.add.accumulate(x) ** 2).sum(),
    "maximum_accumulate": lambda x: (snp.maximum.accumulate(x) ** 2).sum(),
    "divide_accumulate": lambda x: (snp.divide.accumulate(x) ** 2).sum(),
    "add_at": lambda x: (snp.add.at(x, snp.array([0, 2, 0]), x[1] * x[3], inplace=False)
                         ** 2).sum(),
    "subtract_at_repeated": lambda x: (snp.subtract.at(x, np.array([0, 2, 0]), x[1] * x[3],
                                                       inplace=False) ** 2).sum(),
    "add_reduceat": lambda x: (snp.add.reduceat(x * x, snp.array(IDX)) ** 2).sum(),
    "np_multiply_reduceat": lambda x: (np.multiply.reduceat(x, np.array([0, 2])) ** 2).sum(),
}
# the same with NumPy's own ufuncs on float64 arrays (np.subtract.at updates in place)
NUMPY = {
    "snp_add_reduce": lambda x: np.add.reduce(x * x),
    "subtract_reduce": lambda x: np.subtract.reduce(x * x),
    "subtract_reduce_axis_keepdims": lambda x: np.subtract.reduce(
        np.reshape(x, (2, 2)) ** 2, axis=1, keepdims=True).sum(),
    "multiply_reduce_initial": lambda x: np.multiply.reduce(x, initial=2.0),
    "add_reduce_where": lambda x: np.add.reduce(x * x, where=np.array([1, 0, 1, 1], bool)),
    "minimum_reduce_where": lambda x: np.minimum.reduce(x, where=np.array([1, 0, 1, 0], bool),
                                                        initial=5.0),
    "hypot_outer": lambda x: np.hypot.outer(x, x).sum(),
    "maximum_accumulate": lambda x: (np.maximum.accumulate(x) ** 2).sum(),
    "divide_accumulate": lambda x: (np.divide.accumulate(x) ** 2).sum(),
    "add_reduceat": lambda x: (np.add.reduceat(x * x, IDX) ** 2).sum(),
}


def _at_numpy(x, ufunc):
    y = x.copy()
    ufunc.at(y, np.array([0, 2, 0]), x[1] * x[3])
    return (y ** 2).sum()


def _fd(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (float(f(snp.asarray(x + e))) - float(f(snp.asarray(x - e)))) / (2 * h)
    return out


@pytest.fixture
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


@pytest.mark.parametrize("name", list(CASES))
def test_value_against_numpy(name, x64):
    f = CASES[name]
    if name in NUMPY:
        np.testing.assert_allclose(float(f(snp.asarray(X))), NUMPY[name](X), rtol=1e-12)
    if name == "add_at":
        np.testing.assert_allclose(float(f(snp.asarray(X))), _at_numpy(X, np.add), rtol=1e-12)
    if name == "subtract_at_repeated":
        np.testing.assert_allclose(float(f(snp.asarray(X))), _at_numpy(X, np.subtract),
                                   rtol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_transforms(name, x64):
    f = CASES[name]
    x = snp.asarray(X)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), _fd(f, X), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(float(secant.jit(f)(x)), float(f(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)),
                               np.asarray(secant.grad(f)(x)), rtol=1e-12)
    xs = np.stack([X, 2 * X + 0.1, -X])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(snp.asarray(xs))),
                               [float(f(snp.asarray(r))) for r in xs], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(snp.asarray(xs))),
                               [np.asarray(secant.grad(f)(snp.asarray(r))) for r in xs],
                               rtol=1e-12)

    def g(y):
        return secant.grad(f)(y).sum()
    np.testing.assert_allclose(np.asarray(secant.grad(g)(x)), _fd(g, X, 1e-5), rtol=1e-4,
                               atol=1e-5)


def test_ufunc_methods_of_a_matrix_along_an_axis(x64):
    m = snp.asarray(M)
    np.testing.assert_allclose(np.asarray(snp.subtract.accumulate(m, axis=1)),
                               np.subtract.accumulate(M, axis=1))
    np.testing.assert_allclose(np.asarray(snp.maximum.reduceat(m, np.array([0, 2]), axis=1)),
                               np.maximum.reduceat(M, [0, 2], axis=1))
    np.testing.assert_allclose(np.asarray(snp.power.outer(snp.abs(m[0]), m[1])),
                               np.power.outer(np.abs(M[0]), M[1]))
    np.testing.assert_allclose(np.asarray(snp.subtract.reduce(m, axis=None)),
                               np.subtract.reduce(M.ravel()))
    jac = secant.jacrev(lambda m: snp.subtract.accumulate(m, axis=1))(m)
    assert jac.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(np.asarray(jac)[1, 2], [[0, 0, 0], [1, -1, -1]])


def test_in_place_and_out_are_refused_naming_the_line():
    x = snp.asarray(X)

    def at_in_place(x):
        return snp.add.at(x, np.array([0]), 1.0)     # HERE

    def reduce_out(x):
        return snp.subtract.reduce(x, out=x)        # HERE
    for f, what in ((at_in_place, "inplace=False"), (reduce_out, "out argument")):
        for t in (lambda f: f, secant.grad, secant.jit, secant.vmap):
            with pytest.raises(secant.SecantError, match=what) as e:
                t(f)(x if t is not secant.vmap else snp.stack([x, x]))
            assert "HERE" in str(e.value), str(e.value)
    with pytest.raises(secant.SecantError, match="initial"):
        snp.maximum.reduce(x, where=x > 1)
