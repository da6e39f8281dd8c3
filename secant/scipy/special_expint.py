"""The exponential integrals of jax.scipy.special (re-exported by secant.scipy.special): exp1,
expi and expn, written with secant.numpy's ops and `lax.while_loop` (read by the transforms like
user code, as secant/scipy/special.py).

E_n(x) = int_1^inf e^(-x t) / t^n dt by its power series for x <= 1 and its continued fraction
(modified Lentz) above (Numerical Recipes' expint); Ei(x) by its power series up to
x = -log(eps) and its asymptotic series above, Ei(x) = -E_1(-x) below 0. The derivatives are
closed forms (secant.custom_jvp): d/dx E_n = -E_(n-1) (E_0 = e^-x / x), d/dx Ei = e^x / x.
expn is not differentiable in n (an integer order).
"""
import functools

import numpy as np

import secant
import secant.numpy as snp
from secant import lax

__secant_by_source__ = True      # transforms read this module like user code

_EULER = 0.57721566490153286061


def _eps(x):
    return float(snp.finfo(x.dtype).eps)


def _expn_series(n, x, eps):
    """E_n(x) for 0 < x <= 1 (n >= 1): the series of (-x)^k / ((k - n + 1) k!), whose term at
    k = n - 1 is (-x)^(n-1) / (n-1)! (psi(n) - log x)."""
    nm1 = n - 1
    psi = lax.digamma(snp.maximum(n, 1.0))
    first = snp.where(nm1 == 0, -snp.log(x) - _EULER, 1 / snp.where(nm1 == 0, 1.0, nm1))

    def cond(state):
        i, _, _, term = state
        return (i < 1000) & snp.any(snp.abs(term) >= snp.abs(state[1]) * eps)

    def body(state):
        i, total, fact, _ = state
        fact = -fact * x / i
        at_pole = i == nm1
        term = snp.where(at_pole, fact * (psi - snp.log(x)),
                         -fact / snp.where(at_pole, 1.0, i - nm1))
        return i + 1, total + term, fact, term

    state = (1.0, first, 1.0 + 0.0 * x, 1.0 + 0.0 * x)
    return lax.while_loop(cond, body, state)[1]


def _expn_fraction(n, x, eps):
    """E_n(x) for x > 1: e^-x / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))."""
    tiny = 1e-300 if x.dtype.itemsize == 8 else 1e-30
    b = x + n
    d = 1 / b

    def cond(state):
        i, _, _, _, _, delta = state
        return (i < 1000) & snp.any(snp.abs(delta - 1) >= eps)

    def body(state):
        i, b, c, d, h, _ = state
        an = -i * (n - 1 + i)
        b = b + 2
        d = 1 / (an * d + b)
        c = b + an / c
        delta = c * d
        return i + 1, b, c, d, h * delta, delta

    state = (1.0, b, 1 / tiny + 0.0 * x, d, d, 0.0 * x)
    return lax.while_loop(cond, body, state)[4] * snp.exp(-x)


@functools.partial(secant.custom_jvp, nondiff_argnums=(0,))
def _expn(n, x):
    eps = _eps(x)
    positive = n >= 1
    small = _expn_series(snp.where(positive, n, 1.0), snp.where((x > 0) & (x <= 1), x, 0.5),
                         eps)
    large = _expn_fraction(snp.where(positive, n, 1.0), snp.where(x > 1, x, 2.0), eps)
    out = snp.where(x <= 1, small, large)
    out = snp.where(n == 0, snp.exp(-x) / x, out)
    at_zero = snp.where(n > 1, 1 / snp.where(n > 1, n - 1, 1.0), snp.inf)
    out = snp.where(x == 0, at_zero, snp.where(x == snp.inf, 0.0, out))
    bad = (x < 0) | (n < 0) | (n != snp.floor(n)) | snp.isnan(x) | snp.isnan(n)
    return snp.where(bad, snp.nan, out)


@_expn.defjvp
def _expn_jvp(n, primals, tangents):
    x, = primals
    x_dot, = tangents
    e0_slope = -snp.exp(-x) * (x + 1) / (x * x)          # d/dx e^-x / x
    slope = snp.where(n == 0, e0_slope, -_expn(snp.maximum(n - 1, 0.0), x))
    return _expn(n, x), slope * x_dot


def expn(n, x):
    """The generalised exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt for integers
    n >= 0 and x >= 0 (nan elsewhere, as SciPy); d/dx = -E_(n-1)(x). Not differentiable in n."""
    n, x = snp.asarray(n) * 1.0, snp.asarray(x) * 1.0
    shape = snp.broadcast_shapes(snp.shape(n), snp.shape(x))
    return _expn(snp.broadcast_to(n, shape), snp.broadcast_to(x, shape))


def exp1(x):
    """E_1(x) = int_x^inf e^-t / t dt for x >= 0 (inf at 0, nan below, as SciPy's real
    exp1); d/dx = -e^-x / x."""
    x = snp.asarray(x) * 1.0
    return _expn(snp.ones_like(x), x)


def _expi_series(x, eps):
    """Ei(x) for 0 < x: Euler's gamma + log x + sum x^k / (k k!)."""
    def cond(state):
        i, total, _, term = state
        return (i < 1000) & snp.any(term >= total * eps)

    def body(state):
        i, total, fact, _ = state
        fact = fact * x / i
        term = fact / i
        return i + 1, total + term, fact, term

    state = (1.0, 0.0 * x, 1.0 + 0.0 * x, 1.0 + 0.0 * x)
    return _EULER + snp.log(x) + lax.while_loop(cond, body, state)[1]


def _expi_asymptotic(x, eps):
    """Ei(x) for large x: e^x / x sum_k k! / x^k, up to its smallest term."""
    def cond(state):
        i, _, term, previous = state
        return (i < 1000) & snp.any((term >= eps) & (term < previous))

    def body(state):
        i, total, term, _ = state
        new = term * i / x
        keep = new < term
        return i + 1, total + snp.where(keep, new, 0.0), snp.where(keep, new, 0.0), term

    state = (1.0, 1.0 + 0.0 * x, 1.0 + 0.0 * x, 2.0 + 0.0 * x)
    return snp.exp(x) / x * lax.while_loop(cond, body, state)[1]


# -log(eps): where Ei's asymptotic series reaches its precision before its terms grow
_SERIES_UP_TO = {size: -float(np.log(np.finfo(f"f{size}").eps)) for size in (2, 4, 8)}


@secant.custom_jvp
def _expi(x):
    eps = _eps(x)
    switch = _SERIES_UP_TO[x.dtype.itemsize]
    series = _expi_series(snp.where((x > 0) & (x <= switch), x, 1.0), eps)
    asymptotic = _expi_asymptotic(snp.where(x > switch, x, 2 * switch), eps)
    positive = snp.where(x <= switch, series, asymptotic)
    negative = -_expn(snp.ones_like(x), snp.where(x < 0, -x, 1.0))
    out = snp.where(x > 0, positive, negative)
    out = snp.where(x == 0, -snp.inf, snp.where(x == snp.inf, snp.inf, out))
    return snp.where(snp.isnan(x), snp.nan, out)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _expi(x), snp.exp(x) / x * x_dot


def expi(x):
    """The exponential integral Ei(x) = -int_-x^inf e^-t / t dt (principal value), -E_1(-x)
    for x < 0, -inf at 0; d/dx = e^x / x."""
    return _expi(snp.asarray(x) * 1.0)
