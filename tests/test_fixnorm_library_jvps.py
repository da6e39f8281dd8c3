"""Second derivatives under jit of functions whose derivatives call a library helper's generated
jvp (a secant.* function: snp.roll, snp.fft.fft, odeint's flat solve) and unpack its
(primal, tangent): under vmap (hessian's jacfwd) whether each of the two is batched is what the
batched callee the vectorizer writes says (its __secant_out_batched__), the normaliser reading
the same answer (a primal batched there but read as unbatched raised a ShapeError, and could
as well have given a wrong value). jit(hessian) and jit(vmap(hessian)) against float64 central
differences of the function's own values."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.experimental.ode import odeint

from user_programs.checks import turns

TS = np.array([0.0, 0.4, 1.1])


def roll_energy(x):
    return snp.sum(snp.roll(x, 1) * x ** 2)


def parseval(x):
    return snp.sum(snp.abs(snp.fft.fft(x)) ** 2 * snp.cos(x))


def rhs(y, t, k):
    return -k * y * snp.cos(t)


def decay(x):
    ys = odeint(rhs, x[0], TS, x[1], rtol=1e-12, atol=1e-12)
    return ys[-1] + x[2] * ys[1]


FUNCTIONS = {"roll": (roll_energy, 4), "fft": (parseval, 5), "odeint": (decay, 3)}
# each function under jit(vmap(hessian)) or jit(hessian) in turn, odeint's the unbatched one
# (jit(vmap(hessian)) of it: 24 of the file's 37 CPU s); both under HYPOTHESIS_PROFILE=thorough
UNDER = turns(sorted(FUNCTIONS), ["jit_vmap_hessian", "jit_hessian"])


def central_hessian(f, x, h=1e-3):
    """(f(x + h e_i + h e_j) - f(x + h e_i - h e_j) - f(x - h e_i + h e_j)
    + f(x - h e_i - h e_j)) / 4 h^2, in float64."""
    n = len(x)
    e = np.eye(n) * h
    value = lambda z: float(f(snp.asarray(z)))      # noqa: E731
    return np.array([[(value(x + e[i] + e[j]) - value(x + e[i] - e[j])
                       - value(x - e[i] + e[j]) + value(x - e[i] - e[j])) / (4 * h * h)
                      for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("name", UNDER["jit_hessian"])
def test_jit_of_hessian(x64, name):
    f, n = FUNCTIONS[name]
    x = np.random.default_rng(7).uniform(0.3, 1.2, n)
    got = np.asarray(secant.jit(secant.hessian(f))(x))
    np.testing.assert_allclose(got, central_hessian(f, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", UNDER["jit_vmap_hessian"])
def test_jit_of_vmap_of_hessian(x64, name):
    f, n = FUNCTIONS[name]
    xs = np.random.default_rng(8).uniform(0.3, 1.2, (2, n))
    got = np.asarray(secant.jit(secant.vmap(secant.hessian(f)))(xs))
    assert got.shape == (2, n, n)
    for x, h in zip(xs, got):
        np.testing.assert_allclose(h, central_hessian(f, x), rtol=1e-5, atol=1e-5)
