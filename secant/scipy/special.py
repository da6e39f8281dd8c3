"""jax.scipy.special, written with secant.numpy's ops.

The transforms read this module like user code (`__secant_by_source__`, see
secant/numpy/composite.py): grad, jvp and vmap of a function here follow from the ops it calls.
`secant.custom_jvp` gives the rule where the plain derivative would be unstable or where the
value comes from a series or a rational approximation (erfc, ndtri, log_ndtr, i0e, i1e,
gammainc, gammaincc, zeta, polygamma), so generated derivatives call that rule by name.

The rational and Chebyshev approximations are Cephes' (S. L. Moshier's coefficients, as SciPy
and XLA use them), the series and continued fractions are written with secant.numpy's ops and
`lax.while_loop`, so every function runs eagerly, under jit and under vmap, and needs nothing
beyond the primitives it calls (whose eager erf, erf_inv, lgamma, digamma and logistic still use
scipy.special when it is installed: backends/primitives/elementwise.py; under jit they lower to
CHLO and need no SciPy).

Derivatives that do not exist here (transforming with respect to them is an error naming the
argument, never a silent zero): zeta in `x`, polygamma in `n`.
"""
import functools
import math
from fractions import Fraction

import numpy as np

import secant
import secant.numpy as snp
from secant.backends.errors import (SecantTypeError as _SecantTypeError,
                                    SecantValueError as _SecantValueError, where as _where)
from secant import lax
from secant.scipy.special_expint import exp1, expi, expn  # noqa: F401  (jax.scipy.special's)

__secant_by_source__ = True      # transforms read this module like user code


# --- helpers --------------------------------------------------------------------------------------
def _axes(axis, ndim):
    """The reduced axes of `axis` (None, an int or a tuple) as a tuple of non-negative ints."""
    if axis is None:
        dims = tuple(range(ndim))
    elif isinstance(axis, (tuple, list)):
        dims = tuple(d % ndim if ndim else d for d in axis)
    else:
        dims = (axis % ndim if ndim else axis,)
    return dims


def _polevl(x, coefs):
    """coefs[0] x**n + ... + coefs[n] (Horner)."""
    out = coefs[0] + 0.0 * x
    for c in coefs[1:]:
        out = out * x + c
    return out


def _p1evl(x, coefs):
    """x**n + coefs[0] x**(n-1) + ... (a leading coefficient 1 left out of the table)."""
    out = x + coefs[0]
    for c in coefs[1:]:
        out = out * x + c
    return out


def _chbevl(x, coefs):
    """The Chebyshev series sum' coefs[k] T_k(x/2), highest order first (Clenshaw)."""
    b0 = coefs[0] + 0.0 * x
    b1 = 0.0 * x
    b2 = 0.0 * x
    for c in coefs[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _broadcast(a, b):
    """a and b broadcast against each other, as floats."""
    return a + snp.zeros_like(b), b + snp.zeros_like(a)


def _eps(x):
    return float(snp.finfo(x.dtype).eps)


# --- logsumexp ------------------------------------------------------------------------------------
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) over `axis` (of the elements where `where` is true), shifted by the
    (constant) maximum real part so that neither the value nor its derivative (softmax)
    overflows. With `return_sign`, (log|s|, sign(s)); otherwise a negative real sum gives nan,
    as in JAX. A complex `a` gives the complex logarithm of the sum (with `return_sign`, log|s|
    and the complex phase s / |s|), as JAX's."""
    a = snp.asarray(a)
    if where is not None:
        a = snp.where(where, a, 0)
    dims = _axes(axis, snp.ndim(a))
    if b is None:
        shifted = snp.real(a)
    else:
        a = a + 0.0 * b                      # broadcast (and promote) a with b
        shifted = snp.where(b != 0, snp.real(a), -snp.inf)
    if where is not None:
        shifted = snp.where(where, shifted, -snp.inf)
    if any(snp.shape(shifted)[d] == 0 for d in dims):      # an empty sum: log(0) = -inf, as JAX
        amax = snp.zeros([1 if d in dims else n for d, n in enumerate(snp.shape(shifted))])
    else:
        amax = snp.max(shifted, axis=dims, keepdims=True)
    amax = lax.stop_gradient(snp.where(snp.isfinite(amax), amax, 0.0))
    if b is None:
        exp_a = snp.exp(a - amax)
    else:                                    # a term with b == 0 counts for nothing
        exp_a = b * snp.exp(snp.where(b != 0, a, snp.minimum(snp.real(a), amax)) - amax)
    if where is not None:
        exp_a = snp.where(where, exp_a, 0)
    sumexp = snp.sum(exp_a, axis=dims, keepdims=keepdims)
    if not keepdims:
        amax = snp.squeeze(amax, axis=dims)
    sign = lax.stop_gradient(snp.sign(sumexp))
    complex_a = a.dtype.kind == "c"
    if return_sign or not complex_a:
        sumexp = snp.abs(sumexp)
    out = snp.log(sumexp) + amax
    if return_sign:
        result = (out, sign)
    elif b is not None and not complex_a:
        result = snp.where(sign < 0, snp.nan, out)
    else:
        result = out
    return result


# --- x log y --------------------------------------------------------------------------------------
@secant.custom_jvp
def _xlogy(x, y):
    return snp.where((x == 0) & (y == y), 0.0, x * snp.log(y))     # y = nan gives nan


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    return _xlogy(x, y), x_dot * snp.log(y) + y_dot * x / y


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (also at y == 0; nan at y = nan, as in SciPy and JAX); its
    derivative is JAX's: d/dx = log(y), d/dy = x / y."""
    return _xlogy(x, y)


@secant.custom_jvp
def _xlog1py(x, y):
    return snp.where((x == 0) & (y == y), 0.0, x * snp.log1p(y))   # y = nan gives nan


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    return _xlog1py(x, y), x_dot * snp.log1p(y) + y_dot * x / (1 + y)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (also at y == -1); d/dx = log1p(y), d/dy = x / (1 + y)."""
    return _xlog1py(x, y)


def _real(x, name, error=_SecantValueError, complaint="does not support complex-valued inputs"):
    """x as a real float array (bools and ints promoted); complex x raises as JAX's `name`."""
    x = snp.asarray(x) * 1.0
    if x.dtype.kind == "c":
        raise error(f"{name} {complaint}, got {x.dtype.name}{_where()}")
    return x


@secant.custom_jvp
def _entr(x):
    safe = snp.where(x > 0, x, 1.0)
    # x < 0 gives -inf, x == 0 gives -0.0 (JAX's -xlogy(0, 0)), x = nan stays nan
    return snp.where(x < 0, -snp.inf, snp.where(x == 0, -0.0, -x * snp.log(safe)))


@_entr.defjvp
def _entr_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _entr(x), -(1 + snp.log(x)) * x_dot


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below; d/dx = -(1 + log x) (+inf at 0)."""
    return _entr(_real(x, "entr"))


# --- gamma family ---------------------------------------------------------------------------------
def gammaln(x):
    """log |Gamma(x)|."""
    return lax.lgamma(snp.asarray(x) * 1.0)


def digamma(x):
    """psi(x) = d/dx log Gamma(x)."""
    return lax.digamma(snp.asarray(x) * 1.0)


def betaln(a, b):
    """log |B(a, b)| = log Gamma(a) + log Gamma(b) - log Gamma(a + b)."""
    return lax.lgamma(a * 1.0) + lax.lgamma(b * 1.0) - lax.lgamma(a + b * 1.0)


def gammasgn(x):
    """The sign of Gamma(x): 1 for x > 0 (and +0), alternating between the poles below 0,
    -1 at -0, nan at the poles (0 > x == floor(x)) and at nan."""
    x = snp.asarray(x) * 1.0
    floor_x = snp.floor(x)
    negative = x < 0
    one = snp.ones_like(x)          # (in x's dtype: where of two Python floats would be weak)
    out = snp.where((negative & (floor_x % 2 != 0)) | ((x == 0) & snp.signbit(x)), -one, one)
    return snp.where((negative & (x == floor_x)) | snp.isnan(x), snp.nan, out)


def gamma(x):
    """Gamma(x) = gammasgn(x) exp(log |Gamma(x)|) for real x; complex x as JAX's, by Lanczos'
    approximation with the reflection formula (nan+nan j at the poles)."""
    x = snp.asarray(x) * 1.0
    if x.dtype.kind == "c":
        return _complex_gamma(x)
    return gammasgn(x) * snp.exp(lax.lgamma(x))


# Lanczos' approximation, g = 7 and 9 coefficients (GSL's lanczos_7_c, as JAX's)
_LANCZOS_G = 7.0
_LANCZOS_COEFFS = np.array([0.99999999999980993, 676.5203681218851, -1259.1392167224028,
                            771.32342877765313, -176.61502916214059, 12.507343278686905,
                            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7])


def _complex_loggamma_lanczos(z):
    """A log Gamma(z) of complex z (Lanczos; the reflection formula for Re z < 0.5), as JAX's
    _complex_loggamma: not the principal branch left of Re z = 0.5."""
    reflect = snp.real(z) < 0.5
    zz = snp.where(reflect, 1.0 - z, z) - 1.0
    coeffs = snp.asarray(_LANCZOS_COEFFS, dtype=z.dtype)
    ks = snp.arange(1, 9).astype(z.dtype)
    ag = coeffs[0] + snp.sum(coeffs[1:] / (snp.expand_dims(zz, -1) + ks), axis=-1)
    t = zz + (_LANCZOS_G + 0.5)
    log_gamma = 0.5 * math.log(2.0 * math.pi) + (zz + 0.5) * snp.log(t) - t + snp.log(ag)
    # (z in the branch not taken is 0.5: no nan there to reach a derivative through where)
    z_safe = snp.where(reflect, z, 0.5)
    reflected = math.log(math.pi) - snp.log(snp.sin(math.pi * z_safe)) - log_gamma
    return snp.where(reflect, reflected, log_gamma)


def _complex_sinpi(z):
    """sin(pi z) with sin(pi x) and cos(pi x) exactly 0 where they vanish (SciPy's sinpi): on
    the negative real axis the sign of a rounded 0 would pick log's branch."""
    x, y = snp.real(z), snp.imag(z)
    x = x - 2 * snp.round(x / 2)          # (exact: the same sin and cos, x in [-1, 1])
    sin_x = snp.where(x == snp.round(x), 0.0, snp.sin(math.pi * x))
    cos_x = snp.where(snp.abs(x) == 0.5, 0.0, snp.cos(math.pi * x))
    return lax.complex(sin_x * snp.cosh(math.pi * y), cos_x * snp.sinh(math.pi * y))


def _complex_loggamma(z):
    """The principal branch of log Gamma(z): Lanczos for Re z >= 0.5; left of it the reflection
    formula with SciPy's branch correction 2 pi i sign(Im z) floor(Re z / 2 + 1 / 4) (SciPy's
    loggamma); nan+nan j at the poles and at nan."""
    re = snp.real(z)
    bad = ((snp.imag(z) == 0) & (re == snp.floor(re)) & (re <= 0)) | snp.isnan(z)
    z = snp.where(bad, snp.ones_like(z), z)
    reflect = snp.real(z) < 0.5
    log_gamma = _complex_loggamma_lanczos(snp.where(reflect, 1.0 - z, z))
    z_safe = snp.where(reflect, z, 0.5)
    turns = snp.where(snp.signbit(snp.imag(z)), -2 * math.pi, 2 * math.pi) \
        * snp.floor(0.5 * snp.real(z) + 0.25)
    reflected = lax.complex(snp.full_like(turns, math.log(math.pi)), turns) \
        - snp.log(_complex_sinpi(z_safe)) - log_gamma
    value = snp.where(reflect, reflected, log_gamma)
    return snp.where(bad, snp.asarray(complex(np.nan, np.nan), dtype=z.dtype), value)


def _complex_gamma(z):
    """Gamma of complex z: exp of _complex_loggamma_lanczos, nan+nan j at the poles (z = 0, -1,
    -2, ...) and at nan, as JAX's and SciPy's."""
    re = snp.real(z)
    bad = ((snp.imag(z) == 0) & (re == snp.floor(re)) & (re <= 0)) | snp.isnan(z)
    safe_z = snp.where(bad, snp.ones_like(z), z)
    value = snp.exp(_complex_loggamma_lanczos(safe_z))
    return snp.where(bad, snp.asarray(complex(np.nan, np.nan), dtype=z.dtype), value)


def loggamma(x):
    """log Gamma(x) for real x > 0 (nan elsewhere, as the principal branch is complex); complex x:
    the principal branch (one cut, on the negative real axis), as SciPy's and JAX's."""
    x = snp.asarray(x) * 1.0
    if x.dtype.kind == "c":
        return _complex_loggamma(x)
    return snp.where(x > 0, lax.lgamma(x), snp.nan)


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), with its sign."""
    a, b = _broadcast(snp.asarray(a) * 1.0, snp.asarray(b) * 1.0)
    return gammasgn(a) * gammasgn(b) * gammasgn(a + b) * snp.exp(betaln(a, b))


def factorial(n, exact=False):
    """n! = Gamma(n + 1) (0 for n < 0), as floats; exact=True is not supported (as JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True is not supported (as in JAX)" + _where())
    n = snp.asarray(n) * 1.0
    return snp.where(n < 0, 0.0, snp.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
    """The binomial coefficient N choose k through log-gamma (0 outside 0 <= k <= N);
    with repetition, N + k - 1 choose k."""
    N, k = _broadcast(snp.asarray(N) * 1.0, snp.asarray(k) * 1.0)
    if repetition:
        out = snp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    else:
        inside = (k <= N) & (N >= 0) & (k >= 0)
        safe_n = snp.where(inside, N, 0.0)
        safe_k = snp.where(inside, k, 0.0)
        out = snp.exp(lax.lgamma(safe_n + 1) - lax.lgamma(safe_k + 1)
                      - lax.lgamma(safe_n + 1 - safe_k))
        out = snp.where(inside, out, 0.0)
    return out


def poch(z, m):
    """The rising factorial (z)_m = Gamma(z + m) / Gamma(z) (1 where m == 0)."""
    z, m = _broadcast(snp.asarray(z) * 1.0, snp.asarray(m) * 1.0)
    return snp.where(m == 0.0, 1.0, gamma(z + m) / gamma(z))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p == 0 <= q; inf elsewhere. d/dp = log(p / q) + 1,
    d/dq = -p / q (as JAX's)."""
    p, q = _broadcast(_real(p, "rel_entr"), _real(q, "rel_entr"))
    both = (p > 0) & (q > 0)
    safe_p = snp.where(both, p, 1.0)
    safe_q = snp.where(both, q, 1.0)
    value = safe_p * snp.log(safe_p) - _xlogy(safe_p, safe_q)
    return snp.where(both, value, snp.where((p == 0) & (q >= 0), 0.0, snp.inf))


def kl_div(p, q):
    """rel_entr(p, q) - p + q."""
    p, q = _broadcast(_real(p, "kl_div"), _real(q, "kl_div"))
    return rel_entr(p, q) - p + q


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (a static int):
    d (d - 1) / 4 log(pi) + sum_j log Gamma(a - j / 2), j = 0 .. d-1."""
    out = d * (d - 1) / 4 * math.log(math.pi) + lax.lgamma(a * 1.0)
    for j in range(1, d):
        out = out + lax.lgamma(a - j / 2)
    return out


# Hurwitz zeta: (2k)! / B_2k, the Euler-Maclaurin correction's denominators (Cephes' table A)
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
              Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
              Fraction(-236364091, 2730))
_ZETA_A = tuple(float(math.factorial(2 * k + 2) / b) for k, b in enumerate(_BERNOULLI))


def bernoulli(n):
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2, as SciPy), exact fractions rounded once
    (a static table: n is a Python int)."""
    n = int(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer" + _where())
    numbers = [Fraction(1)]
    for m in range(1, n + 1):        # sum_k C(m + 1, k) B_k = 0
        numbers.append(-sum(math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
    return snp.asarray([float(b) for b in numbers])


@functools.partial(secant.custom_jvp, nondiff_argnums=(0,))
def _zeta(x, q):
    # Euler-Maclaurin: sum_{k<N} (q + k)^-x, then the tail from w = q + N: its integral, half
    # its first term and 12 corrections (Cephes zeta)
    terms = 10
    s = 0.0 * q
    for k in range(terms):
        s = s + snp.power(q + k, -x)
    w = q + terms
    b = snp.power(w, -x)
    s = s + b * w / (x - 1) + 0.5 * b
    rising = 1.0 + 0.0 * x               # x (x + 1) ... (x + 2k - 2), one factor at a time
    shift = 0.0
    for denominator in _ZETA_A:
        rising = rising * (x + shift)
        b = b / w
        s = s + rising * b / denominator
        shift = shift + 1.0
        rising = rising * (x + shift)
        b = b / w
        shift = shift + 1.0
    integer_pole = (q <= 0) & (q == snp.floor(q))
    out = snp.where(x == 1, snp.inf, snp.where(x < 1, snp.nan, s))
    return snp.where(integer_pole, snp.inf, out)


@_zeta.defjvp
def _zeta_jvp(x, primals, tangents):
    q, = primals
    q_dot, = tangents
    return _zeta(x, q), -x * _zeta(x + 1, q) * q_dot


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q)^-x (Riemann's when q is None), for x > 1.
    Differentiable in q (d/dq = -x zeta(x + 1, q)); not in x."""
    if q is None:
        q = 1.0 + 0.0 * x
    return _zeta(x * 1.0, q * 1.0)


@functools.partial(secant.custom_jvp, nondiff_argnums=(0,))
def _polygamma(n, x):
    factorial = snp.exp(lax.lgamma(n + 1.0))
    sign = snp.where(n - 2 * snp.floor(n / 2) == 0, -1.0, 1.0)          # (-1)^(n + 1)
    higher = sign * factorial * _zeta(n + 1.0, snp.where(n == 0, 2.0, x))
    return snp.where(n == 0, lax.digamma(x), higher)


@_polygamma.defjvp
def _polygamma_jvp(n, primals, tangents):
    x, = primals
    x_dot, = tangents
    return _polygamma(n, x), _polygamma(n + 1, x) * x_dot


def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative integer, array or static); d/dx is
    polygamma(n + 1, x); not differentiable in n."""
    return _polygamma(n * 1.0, x * 1.0)


# --- incomplete gamma -----------------------------------------------------------------------------
_BIG = 4.503599627370496e15
_BIGINV = 2.22044604925031308085e-16


def _igam_series(a, x, eps):
    """P(a, x) by its power series (Cephes igam): x^a e^-x / Gamma(a + 1) sum_n x^n / (a+1)_n."""
    def cond(state):
        i, r, c, total = state
        return (i < 2000) & snp.any(c > eps * total)

    def body(state):
        i, r, c, total = state
        r = r + 1
        c = c * x / r
        return i + 1, r, c, total + c

    _, _, _, total = lax.while_loop(cond, body, (0, a, 1.0 + 0.0 * x, 1.0 + 0.0 * x))
    log_ax = a * snp.log(x) - x - lax.lgamma(a + 1)
    return total * snp.exp(log_ax)


def _igamc_fraction(a, x, eps):
    """Q(a, x) by its continued fraction (Cephes igamc)."""
    y = 1 - a
    z = x + y + 1
    state = (0, 0.0 * x, y, z, 1.0 + 0.0 * x, x, x + 1, z * x, (x + 1) / (z * x),
             1.0 + 0.0 * x)

    def cond(state):
        return (state[0] < 2000) & snp.any(state[9] > eps)

    def body(state):
        i, c, y, z, pkm2, qkm2, pkm1, qkm1, ans, t = state
        c = c + 1
        y = y + 1
        z = z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        r = pk / snp.where(nonzero, qk, 1.0)
        t = snp.where(nonzero, snp.abs((ans - r) / snp.where(r == 0, 1.0, r)), 1.0)
        ans = snp.where(nonzero, r, ans)
        scale = snp.where(snp.abs(pk) > _BIG, _BIGINV, 1.0)
        return i + 1, c, y, z, pkm1 * scale, qkm1 * scale, pk * scale, qk * scale, ans, t

    ans = lax.while_loop(cond, body, state)[8]
    log_ax = a * snp.log(x) - x - lax.lgamma(a)
    return ans * snp.exp(log_ax)


def _igam_series_da(a, x, eps):
    """d/da of the series: with c_n = c_(n-1) x / (a + n), dc_n = dc_(n-1) x / (a + n) - c_n / (a + n),
    summed beside the series (all dc_n < 0: no cancellation)."""
    def cond(state):
        i, r, c, dc, total, dtotal = state
        return (i < 2000) & snp.any((c > eps * total) | (snp.abs(dc) > eps * snp.abs(dtotal)))

    def body(state):
        i, r, c, dc, total, dtotal = state
        r = r + 1
        c = c * x / r
        dc = dc * x / r - c / r
        return i + 1, r, c, dc, total + c, dtotal + dc

    one, zero = 1.0 + 0.0 * x, 0.0 * x
    _, _, _, _, total, dtotal = lax.while_loop(cond, body, (0, a, one, zero, one, zero))
    ax = snp.exp(a * snp.log(x) - x - lax.lgamma(a + 1))
    return ax * (total * (snp.log(x) - lax.digamma(a + 1)) + dtotal)


def _igamc_fraction_da(a, x, eps):
    """d/da of the continued fraction: each recurrence p_k = p_(k-1) z - p_(k-2) y c carried
    with its derivative (dy/da = dz/da = -1)."""
    y = 1 - a
    z = x + y + 1
    zero = 0.0 * x
    qkm1 = z * x
    state = (0, zero, y, z, 1.0 + zero, x, x + 1, qkm1, zero, zero, zero, -x,
             (x + 1) / qkm1, (x + 1) * x / (qkm1 * qkm1), 1.0 + zero)

    def cond(state):
        return (state[0] < 2000) & snp.any(state[14] > eps)

    def body(state):
        i, c, y, z, pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1, ans, dans, t = state
        c = c + 1
        y = y + 1
        z = z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        nonzero = qk != 0
        safe_qk = snp.where(nonzero, qk, 1.0)
        r = pk / safe_qk
        dr = (dpk - r * dqk) / safe_qk
        # the derivative's convergents carry round-off of some tens of eps: it is done at
        # 256 eps (relative), the value at eps
        change = snp.maximum(snp.abs((ans - r) / snp.where(r == 0, 1.0, r)),
                             snp.abs((dans - dr) / snp.where(dr == 0, 1.0, dr)) / 256)
        t = snp.where(nonzero, change, 1.0)
        ans = snp.where(nonzero, r, ans)
        dans = snp.where(nonzero, dr, dans)
        s = snp.where(snp.abs(pk) > _BIG, _BIGINV, 1.0)
        return (i + 1, c, y, z, pkm1 * s, qkm1 * s, pk * s, qk * s, dpkm1 * s, dqkm1 * s,
                dpk * s, dqk * s, ans, dans, t)

    out = lax.while_loop(cond, body, state)
    ax = snp.exp(a * snp.log(x) - x - lax.lgamma(a))
    return ax * (out[12] * (snp.log(x) - lax.digamma(a)) + out[13])


def _igam_da(a, x):
    """d/da P(a, x) (the negative of d/da Q(a, x)), from the method the value uses; 0 at x == 0
    and x == inf."""
    a, x = _broadcast(a, x)
    inside = (x > 0) & snp.isfinite(x) & (a > 0) & snp.isfinite(a)
    a_safe = snp.where(inside, a, 1.0)
    x_safe = snp.where(inside, x, 1.0)
    eps = _eps(x)
    use_series = (x_safe < 1) | (x_safe <= a_safe)
    dp = _igam_series_da(a_safe, snp.where(use_series, x_safe, 0.5 * a_safe), eps)
    dq = _igamc_fraction_da(a_safe, snp.where(use_series, a_safe + 1.0, x_safe), eps)
    out = snp.where(inside, snp.where(use_series, dp, -dq), 0.0)
    return snp.where((a < 0) | (x < 0) | snp.isnan(a) | snp.isnan(x), snp.nan, out)


def _igam_parts(a, x):
    """(P, Q): each element from the series or the continued fraction, whichever converges."""
    eps = _eps(x)
    use_series = (x < 1) | (x <= a)
    # elements the other method handles get an argument on which this one stops at once
    p = _igam_series(a, snp.where(use_series, x, 0.5 * a), eps)
    q = _igamc_fraction(a, snp.where(use_series, a + 1.0, x), eps)
    return p, q, use_series


def _igam_edges(a, x, value, at_zero, at_inf):
    """SciPy's values off the interior: P(a, 0) = 0 and P(a, inf) = 1 for a > 0, P(0, x) = 1
    for x > 0, P(inf, x) = 0 for finite x; nan for a < 0, x < 0 and P(0, 0)."""
    out = snp.where(x == 0, at_zero, snp.where(x == snp.inf, at_inf, value))
    out = snp.where(a == 0, at_inf, snp.where(a == snp.inf, at_zero, out))
    bad = (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | ((a == snp.inf) & (x == snp.inf))
    return snp.where(bad | snp.isnan(a) | snp.isnan(x), snp.nan, out)


@secant.custom_jvp
def _gammainc(a, x):
    a, x = _broadcast(a, x)
    safe = snp.where((x > 0) & snp.isfinite(x) & (a > 0) & snp.isfinite(a), x, 1.0)
    p, q, use_series = _igam_parts(snp.where((a > 0) & snp.isfinite(a), a, 1.0), safe)
    return _igam_edges(a, x, snp.where(use_series, p, 1 - q), 0.0, 1.0)


@secant.custom_jvp
def _gammaincc(a, x):
    a, x = _broadcast(a, x)
    safe = snp.where((x > 0) & snp.isfinite(x) & (a > 0) & snp.isfinite(a), x, 1.0)
    p, q, use_series = _igam_parts(snp.where((a > 0) & snp.isfinite(a), a, 1.0), safe)
    return _igam_edges(a, x, snp.where(use_series, 1 - p, q), 1.0, 0.0)


def _igam_density(a, x):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)."""
    return snp.exp((a - 1) * snp.log(x) - x - lax.lgamma(a))


@_gammainc.defjvp
def _gammainc_jvp(primals, tangents):
    a, x = primals
    a_dot, x_dot = tangents
    return _gammainc(a, x), _igam_da(a, x) * a_dot + _igam_density(a, x) * x_dot


@_gammaincc.defjvp
def _gammaincc_jvp(primals, tangents):
    a, x = primals
    a_dot, x_dot = tangents
    return _gammaincc(a, x), -_igam_da(a, x) * a_dot - _igam_density(a, x) * x_dot


def gammainc(a, x):
    """The regularised lower incomplete gamma function P(a, x). Its derivative in x is the
    gamma density; in a, the series or continued fraction differentiated term by term (forward
    mode, beside the value's recurrences), as XLA's igamma_grad_a does."""
    return _gammainc(a * 1.0, x * 1.0)


def gammaincc(a, x):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x), computed directly
    (accurate where Q is tiny); derivatives as gammainc's, negated."""
    return _gammaincc(a * 1.0, x * 1.0)


# --- error function and the normal distribution --------------------------------------------------
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)


def _log_erfc_ratio(z):
    """log(erfc(z) e^(z^2)) for z >= 1, where Cephes' rational approximations hold."""
    z = snp.maximum(z, 1.0)
    near_z = snp.minimum(z, 8.0)
    near = _polevl(near_z, _ERFC_P) / _p1evl(near_z, _ERFC_Q)
    # R(z) / S(z) written in r = 1 / z (both divided by z^6), so that neither overflows for a
    # large z and z = inf gives log(0) = -inf (erfc(inf) = 0), not inf / inf = nan
    r = 1 / z
    far = r * _polevl(r, _ERFC_R[::-1]) / _polevl(r, _ERFC_S[::-1] + (1.0,))
    return snp.log(snp.where(z < 8, near, far))


@secant.custom_jvp
def _erfc(x):
    z = snp.abs(x)
    tail = snp.exp(-z * z + _log_erfc_ratio(z))
    tail = snp.where(x < 0, 2 - tail, tail)
    return snp.where(z < 1, 1 - lax.erf(x), tail)


@_erfc.defjvp
def _erfc_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _erfc(x), -1.1283791670955126 * snp.exp(-x * x) * x_dot


def erf(x):
    return lax.erf(snp.asarray(x) * 1.0)


def erfc(x):
    """1 - erf(x), accurate where it is tiny (x up to about 26 in float64)."""
    return _erfc(snp.asarray(x) * 1.0)


@secant.custom_jvp
def _erfcx(x):
    z = snp.abs(x)
    ratio = snp.where(z > 1e8, 0.5641895835477563 / snp.maximum(z, 1.0),   # 1 / (z sqrt(pi))
                      snp.exp(_log_erfc_ratio(z)))
    small = snp.exp(x * x) * (1 - lax.erf(snp.where(z < 1, x, 0.0)))
    negative = 2 * snp.exp(x * x) - ratio
    return snp.where(z < 1, small, snp.where(x < 0, negative, ratio))


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    out = _erfcx(x)
    return out, (2 * x * out - 1.1283791670955126) * x_dot


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), accurate for large x (where
    it is about 1 / (x sqrt(pi))); d/dx = 2 x erfcx(x) - 2 / sqrt(pi)."""
    x = snp.asarray(x) * 1.0
    if x.dtype.kind == "c":
        return wofz(1j * x)         # (exp(x^2) erfc(x) = w(ix), as JAX's)
    return _erfcx(x)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    nonzero = snp.where(lmbda == 0, 1.0, lmbda)
    return snp.where(lmbda == 0, snp.log(x), snp.expm1(nonzero * snp.log(x)) / nonzero)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda == 0."""
    nonzero = snp.where(lmbda == 0, 1.0, lmbda)
    return snp.where(lmbda == 0, snp.log1p(x), snp.expm1(nonzero * snp.log1p(x)) / nonzero)


def erfinv(x):
    return lax.erf_inv(snp.asarray(x) * 1.0)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return lax.logistic(snp.asarray(x) * 1.0)


def logit(x):
    """log(x / (1 - x))."""
    x = snp.asarray(x) * 1.0
    return snp.log(x) - snp.log1p(-x)


_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _float_kind(dtype, name, more=", see docstring for supported types."):
    """`dtype`, where float32 or float64: JAX's ndtr, log_ndtr and ndtri refuse any other
    (float16, bfloat16, integers: TypeError), and so does secant. A static query."""
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise _SecantTypeError(f"{name}: x.dtype={np.dtype(dtype).name} is not supported{more}"
                              f" (as jax.scipy.special){_where()}")
    return dtype


_float_kind.__secant_static_query__ = True


def _float_input(x, name, more=", see docstring for supported types."):
    x = snp.asarray(x)
    return x.astype(_float_kind(x.dtype, name, more))


def ndtr(x):
    """The standard normal CDF, accurate in both tails (through erfc)."""
    z = _float_input(x, "ndtr") * _SQRT_HALF
    return snp.where(snp.abs(z) < _SQRT_HALF, 0.5 + 0.5 * lax.erf(z),
                     snp.where(z > 0, 1 - 0.5 * _erfc(z), 0.5 * _erfc(-z)))


@secant.custom_jvp
def _log_ndtr(x):
    z = x * _SQRT_HALF
    # z below -1: log(erfc(-z) / 2) without forming the tiny erfc; above: log1p(-erfc(z) / 2)
    lower = math.log(0.5) - z * z + _log_erfc_ratio(-z)
    upper = snp.log1p(-0.5 * _erfc(snp.maximum(z, -1.0)))
    return snp.where(z < -1, lower, upper)


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    out = _log_ndtr(x)
    # phi(x) / Phi(x); in the lower tail Phi(x) = exp(-z^2) R(-z) / 2 with z = x / sqrt(2), so
    # the ratio is sqrt(2 / pi) / R(-z), with no exp(-z^2) to cancel
    z = x * _SQRT_HALF
    lower = 0.7978845608028654 / snp.exp(_log_erfc_ratio(-z))
    upper = snp.exp(-0.5 * x * x - _LOG_SQRT_2PI - out)
    return out, snp.where(z < -1, lower, upper) * x_dot


def log_ndtr(x, series_order=3):
    """log(ndtr(x)), accurate in both tails (log_ndtr(-40) = -804.6...), its derivative
    exp(log phi(x) - log_ndtr(x)) too. `series_order` is accepted for JAX's signature; the
    lower tail uses Cephes' rational approximation of erfc instead of an asymptotic series."""
    return _log_ndtr(_float_input(x, "log_ndtr", "."))


_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)
_EXP_M2 = 0.13533528323661269189                 # exp(-2)


@secant.custom_jvp
def _ndtri(p):
    upper = p > 1 - _EXP_M2
    y = snp.where(upper, 1 - p, p)
    # the centre: p within 3/8 of 1/2
    w = y - 0.5
    w2 = w * w
    centre = (w + w * (w2 * _polevl(w2, _NDTRI_P0) / _p1evl(w2, _NDTRI_Q0))) * 2.50662827463100050242
    # the tails: t = sqrt(-2 log y), two rational approximations in 1/t
    t = snp.sqrt(-2 * snp.log(snp.where((y > 0) & (y <= _EXP_M2), y, _EXP_M2)))
    r = 1 / t
    near = r * _polevl(r, _NDTRI_P1) / _p1evl(r, _NDTRI_Q1)
    far = r * _polevl(r, _NDTRI_P2) / _p1evl(r, _NDTRI_Q2)
    tail = t - snp.log(t) / t - snp.where(t < 8, near, far)
    tail = snp.where(upper, tail, -tail)
    out = snp.where(y > _EXP_M2, centre, tail)
    out = snp.where(p == 0, -snp.inf, snp.where(p == 1, snp.inf, out))
    return snp.where((p >= 0) & (p <= 1), out, snp.nan)      # nan outside [0, 1] and at nan


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    p, = primals
    p_dot, = tangents
    x = _ndtri(p)
    return x, 2.50662827463100050242 * snp.exp(0.5 * x * x) * p_dot


def ndtri(p):
    """The inverse of ndtr: the x with ndtr(x) = p; d/dp = sqrt(2 pi) exp(x^2 / 2)."""
    return _ndtri(_float_input(p, "ndtri"))


# --- exponentially scaled Bessel functions -------------------------------------------------------
_I0_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
         1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
         -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
         9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
         -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
         1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
         -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
         1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
         -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
         1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
         3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
         1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
         -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
         7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
         -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
         3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
         2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
         8.04490411014108831608E-1)
_I1_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
         -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
         3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
         -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
         9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
         -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
         4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
         -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
         2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
         -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
         -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
         -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
         4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
         -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
         3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
         -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
         -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
         7.78576235018280120474E-1)


@secant.custom_jvp
def _i0e(x):
    z = snp.abs(x)
    small = _chbevl(z / 2 - 2, _I0_A)
    large = _chbevl(32 / snp.maximum(z, 8.0) - 2, _I0_B) / snp.sqrt(snp.maximum(z, 8.0))
    return snp.where(z <= 8, small, large)


@secant.custom_jvp
def _i1e(x):
    z = snp.abs(x)
    small = _chbevl(z / 2 - 2, _I1_A) * z
    large = _chbevl(32 / snp.maximum(z, 8.0) - 2, _I1_B) / snp.sqrt(snp.maximum(z, 8.0))
    return snp.sign(x) * snp.where(z <= 8, small, large)


@_i0e.defjvp
def _i0e_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    out = _i0e(x)
    return out, (_i1e(x) - snp.sign(x) * out) * x_dot


@_i1e.defjvp
def _i1e_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    out = _i1e(x)
    safe = snp.where(x == 0, 1.0, x)
    slope = snp.where(x == 0, 0.5, _i0e(x) - out * (snp.sign(x) + 1 / safe))
    return out, slope * x_dot


_NOT_COMPLEX = "does not accept complex dtypes (as JAX's bessel_i0e and bessel_i1e)"


def i0e(x):
    """exp(-|x|) I0(x); d/dx = i1e(x) - sign(x) i0e(x)."""
    return _i0e(_real(x, "i0e", _SecantTypeError, _NOT_COMPLEX))


def i1e(x):
    """exp(-|x|) I1(x); d/dx = i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at 0."""
    return _i1e(_real(x, "i1e", _SecantTypeError, _NOT_COMPLEX))


def i0(x):
    """I0(x) = exp(|x|) i0e(x)."""
    x = _real(x, "i0", _SecantTypeError, _NOT_COMPLEX)
    return snp.exp(snp.abs(x)) * _i0e(x)


def i1(x):
    """I1(x) = exp(|x|) i1e(x)."""
    x = _real(x, "i1", _SecantTypeError, _NOT_COMPLEX)
    return snp.exp(snp.abs(x)) * _i1e(x)


# --- incomplete beta ------------------------------------------------------------------------------
_TINY = 1e-30


def _nonzero(v):
    return snp.where(snp.abs(v) < _TINY, _TINY, v)


def _betacf(a, b, x, eps):
    """The continued fraction of I_x(a, b) (modified Lentz, Numerical Recipes' betacf), for
    x < (a + 1) / (a + b + 2), where it converges quickly."""
    qab = a + b
    d = 1 / _nonzero(1 - qab * x / (a + 1))
    one = 1.0 + 0.0 * x

    def cond(state):
        i, m, c, d, h, delta = state
        return (i < 1000) & snp.any(snp.abs(delta - 1) > eps)

    def body(state):
        i, m, c, d, h, delta = state
        m2 = 2 * m
        even = m * (b - m) * x / ((a - 1 + m2) * (a + m2))
        d = 1 / _nonzero(1 + even * d)
        c = _nonzero(1 + even / c)
        h = h * d * c
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (a + 1 + m2))
        d = 1 / _nonzero(1 + odd * d)
        c = _nonzero(1 + odd / c)
        delta = d * c
        return i + 1, m + 1, c, d, h * delta, delta

    state = (0, one, one, d, d, 2 * one)
    return lax.while_loop(cond, body, state)[4]


@functools.partial(secant.custom_jvp, nondiff_argnums=(0, 1))
def _betainc(a, b, x):
    a, x = _broadcast(a, x)
    b, x = _broadcast(b, x)
    a, b = _broadcast(a, b)
    inside = (x > 0) & (x < 1) & (a > 0) & (b > 0) & snp.isfinite(a) & snp.isfinite(b)
    # the fraction converges below the mean; above it, I_x(a, b) = 1 - I_(1-x)(b, a)
    flip = x > (a + 1) / (a + b + 2)
    fa = snp.where(inside, snp.where(flip, b, a), 1.0)
    fb = snp.where(inside, snp.where(flip, a, b), 1.0)
    fx = snp.where(inside, snp.where(flip, 1 - x, x), 0.5)
    front = snp.exp(fa * snp.log(fx) + fb * snp.log1p(-fx) - betaln(fa, fb)) / fa
    tail = front * _betacf(fa, fb, fx, _eps(fx))
    out = snp.where(flip, 1 - tail, tail)
    # the edges as SciPy and JAX: I_0 = 0, I_1 = 1; a == 0 puts all mass at 0, b == 0 at 1
    out = snp.where(x == 0, 0.0, snp.where(x == 1, 1.0, out))
    out = snp.where((a == 0) & (b > 0), 1.0, snp.where((b == 0) & (a > 0), 0.0, out))
    bad = (a < 0) | (b < 0) | ((a == 0) & (b == 0)) | (x < 0) | (x > 1)
    return snp.where(bad | snp.isnan(a) | snp.isnan(b) | snp.isnan(x), snp.nan, out)


@_betainc.defjvp
def _betainc_jvp(a, b, primals, tangents):
    x, = primals
    x_dot, = tangents
    density = snp.exp(_xlogy(a - 1, x) + _xlog1py(b - 1, -x) - betaln(a, b))
    return _betainc(a, b, x), density * x_dot


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b), by its
    continued fraction (modified Lentz) on the side of the mean where it converges fast.
    Differentiable in x (d/dx is the beta density x^(a-1) (1-x)^(b-1) / B(a, b)); as in JAX,
    not in a or b (transforming with respect to them is an error naming the argument)."""
    return _betainc(a * 1.0, b * 1.0, x * 1.0)


snp.i0 = i0     # jax.numpy.i0 is jax.scipy.special.i0 (secant.numpy is imported first)
if "i0" not in snp.__all__:
    snp.__all__.append("i0")

# (at the end: special_more reads this module's helpers)
from secant.scipy.special_more import (bessel_jn, dawsn, fresnel, hyp1f1, hyp2f1,  # noqa: E402,F401
                                       owens_t, sici, spence, sph_harm_y, wofz)
