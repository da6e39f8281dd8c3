"""lax.reduce with a computation of the user's own (not a known monoid) and with several
operands, eagerly, under jit, vmap and grad, against NumPy; lax.associative_scan of a tuple
under vmap and grad against a Python loop and finite differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

A = np.random.RandomState(0).randn(5, 3)
B = np.random.RandomState(1).randn(5, 3)


@pytest.fixture(autouse=True)
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


def close(a, b, rtol=1e-9, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def logsumexp_reduce(x):
    return lax.reduce(x, -np.inf, lambda a, b: snp.logaddexp(a, b), (0,))


def argmax_reduce(x):
    idx = lax.broadcasted_iota(np.int32, x.shape, 0)

    def pick(a, b):
        first = a[0] >= b[0]
        return snp.where(first, a[0], b[0]), snp.where(first, a[1], b[1])
    return lax.reduce((x, idx), (-np.inf, 0), pick, (0,))


def test_reduce_with_a_custom_computation():
    expected = np.log(np.exp(A).sum(0))
    close(logsumexp_reduce(A), expected)
    close(secant.jit(logsumexp_reduce)(A), expected)
    close(secant.vmap(logsumexp_reduce)(np.stack([A, B])),
          [expected, np.log(np.exp(B).sum(0))])
    close(secant.grad(lambda x: snp.sum(logsumexp_reduce(x)))(A),
          np.exp(A) / np.exp(A).sum(0))
    # several axes, an odd count of elements, and the init combined once
    x = np.arange(1.0, 8.0).reshape(7, 1)
    close(lax.reduce(x, 2.0, lambda a, b: a * b, (0, 1)), 2.0 * np.prod(x))
    # order kept: a non-commutative associative computation (the later of the two)
    close(lax.reduce(A, 0.0, lambda a, b: b, (0,)), A[-1])


def test_reduce_of_several_operands():
    value, index = argmax_reduce(A)
    close(value, A.max(0))
    assert np.asarray(index).tolist() == A.argmax(0).tolist()
    jv, ji = secant.jit(argmax_reduce)(A)
    close(jv, A.max(0))
    assert np.asarray(ji).tolist() == A.argmax(0).tolist()
    bv, bi = secant.vmap(argmax_reduce)(np.stack([A, B]))
    assert np.asarray(bi).tolist() == [A.argmax(0).tolist(), B.argmax(0).tolist()]
    onehot = np.zeros_like(A)
    onehot[A.argmax(0), np.arange(3)] = 1
    close(secant.grad(lambda x: snp.sum(argmax_reduce(x)[0]))(A), onehot)


def linear_recurrence(a, b):        # h_t = a_t h_{t-1} + b_t, as an associative scan
    return lax.associative_scan(lambda x, y: (x[0] * y[0], x[1] * y[0] + y[1]), (a, b))[1]


def loop_recurrence(a, b):
    h, out = 0.0, []
    for at, bt in zip(a, b):
        h = at * h + bt
        out.append(h)
    return np.array(out)


def test_associative_scan_of_a_tuple_under_vmap_and_grad():
    a, b = A.T * 0.5, B.T            # 3 sequences of length 5
    expected = [loop_recurrence(x, y) for x, y in zip(a, b)]
    close(secant.vmap(linear_recurrence)(a, b), expected)
    close(secant.jit(secant.vmap(linear_recurrence))(a, b), expected)
    close(secant.vmap(linear_recurrence, in_axes=(1, 1), out_axes=1)(a.T, b.T),
          np.array(expected).T)
    g = secant.grad(lambda x: snp.sum(linear_recurrence(x, b[0])))(a[0])
    eps = 1e-6
    fd = [(loop_recurrence(a[0] + eps * e, b[0]).sum() - loop_recurrence(a[0] - eps * e,
                                                                          b[0]).sum()) / (2 * eps)
          for e in np.eye(5)]
    close(g, fd, rtol=1e-6)
    gv = secant.vmap(secant.grad(lambda x, y: snp.sum(linear_recurrence(x, y))))(a, b)
    close(gv[0], g)
