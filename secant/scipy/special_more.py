"""More of jax.scipy.special (re-exported by secant.scipy.special): dawsn, sici, spence,
fresnel, owens_t, wofz, bessel_jn, hyp1f1, hyp2f1 and sph_harm_y, written with secant.numpy's
ops, `lax.while_loop` and `lax.scan` (read by the transforms like user code, as
secant/scipy/special.py), so each runs eagerly, under jit and under vmap.

The rational approximations are Cephes' (dawsn: Cody, Paciorek and Thacher; sici, spence,
fresnel), as SciPy's and JAX's; wofz is Weideman's N = 32 rational approximation and owens_t
Patefield and Tandy's 13-point quadrature (method T5), both as JAX's. The derivatives are
closed forms (secant.custom_jvp); hyp1f1's and hyp2f1's in their parameters are the series
differentiated term by term (as JAX's).

Where JAX's value is wrong these give SciPy's (and say so): bessel_jn at z = 0 (JAX: nan),
hyp1f1 for x < 0 (Kummer's transformation; JAX's series loses every digit below about -30),
hyp2f1 for x < 0 (Pfaff's transformation; JAX's series diverges below -1) and spence's
derivative (JAX: nan above 1.5).
"""
import math

import numpy as np

import secant
import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantValueError, where as _where
from secant.scipy.special import _eps, _polevl, gamma

__secant_by_source__ = True      # transforms read this module like user code



def _float(x):
    """x as a real float array (int -> float32/float64 as secant.numpy promotes)."""
    out = snp.asarray(x) * 1.0
    if out.dtype.kind == "c":
        raise SecantValueError("this function of jax.scipy.special takes real input, got "
                               f"{out.dtype.name}" + _where())
    return out


def _one(x):
    """1 in x's dtype: a while loop's counter (a Python 1.0 would be float64 under x64)."""
    return snp.ones((), x.dtype)


# --- Dawson's integral -----------------------------------------------------------------------------
@secant.custom_jvp
def _dawsn(x):
    ax = snp.abs(x)
    inner = ax < 3.25
    middle = (ax >= 3.25) & (ax < 6.25)
    a1 = snp.where(inner, ax, 1.0)
    s1 = a1 * a1
    v1 = a1 * _polevl(s1, _DAWSN_AN) / _polevl(s1, _DAWSN_AD)
    a2 = snp.where(middle, ax, 4.0)
    t2 = 1 / (a2 * a2)
    v2 = 0.5 / a2 * (1 + t2 * _polevl(t2, _DAWSN_BN) / _polevl(t2, _DAWSN_BD))
    a3 = snp.where(ax >= 6.25, ax, 7.0)
    t3 = 1 / (a3 * a3)
    v3 = 0.5 / a3 * (1 + t3 * _polevl(t3, _DAWSN_CN) / _polevl(t3, _DAWSN_CD))
    return snp.sign(x) * snp.where(inner, v1, snp.where(middle, v2, v3))


@_dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    out = _dawsn(x)
    return out, (1 - 2 * x * out) * x_dot


def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt; d/dx = 1 - 2 x dawsn(x)."""
    return _dawsn(_float(x))


# --- sine and cosine integrals ---------------------------------------------------------------------
_EULER = 0.57721566490153286061


def _sici_parts(x):
    """(Si(|x|), Ci(|x|)): the rational series up to 4, the asymptotic f, g forms to 1e9,
    then the leading terms."""
    z = snp.abs(x)
    small = z <= 4
    zs = snp.where(small & (z > 0), z, 1.0)
    t = zs * zs
    si_small = zs * _polevl(t, _SICI_SN) / _polevl(t, _SICI_SD)
    ci_small = _EULER + snp.log(zs) + t * _polevl(t, _SICI_CN) / _polevl(t, _SICI_CD)
    mid = (z > 4) & (z <= 1e9)
    zm = snp.where(mid, z, 5.0)
    s, c = snp.sin(zm), snp.cos(zm)
    u = 1 / (zm * zm)
    f = snp.where(zm < 8, _polevl(u, _SICI_FN4) / (zm * _polevl(u, _SICI_FD4)),
                  _polevl(u, _SICI_FN8) / (zm * _polevl(u, _SICI_FD8)))
    g = snp.where(zm < 8, u * _polevl(u, _SICI_GN4) / _polevl(u, _SICI_GD4),
                  u * _polevl(u, _SICI_GN8) / _polevl(u, _SICI_GD8))
    si_mid = math.pi / 2 - f * c - g * s
    ci_mid = f * s - g * c
    zl = snp.where(mid | small | snp.isinf(z), 2e9, z)
    si_large = snp.where(snp.isinf(z), math.pi / 2, math.pi / 2 - snp.cos(zl) / zl)
    ci_large = snp.where(snp.isinf(z), 0.0, snp.sin(zl) / zl)
    si = snp.where(z == 0, 0.0, snp.where(small, si_small, snp.where(mid, si_mid, si_large)))
    ci = snp.where(z == 0, -snp.inf, snp.where(small, ci_small, snp.where(mid, ci_mid, ci_large)))
    return si, ci


@secant.custom_jvp
def _si(x):
    return snp.sign(x) * _sici_parts(x)[0]


@_si.defjvp
def _si_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _si(x), snp.sinc(x / math.pi) * x_dot


@secant.custom_jvp
def _ci(x):
    # below 0: Ci(|x|), the real part (SciPy's and JAX's); nan at -inf
    return snp.where(x == -snp.inf, snp.nan, _sici_parts(x)[1])


@_ci.defjvp
def _ci_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    # cos(x)/x, but the largest float at 0 for inf: sici's vjp meets this rule with a zero
    # cotangent when only Si is used, and inf * 0 would make grad of Si nan there
    big = float(snp.finfo(x.dtype).max)
    slope = snp.where(x == 0, big, snp.cos(x) / snp.where(x == 0, 1.0, x))
    return _ci(x), slope * x_dot


def sici(x):
    """(Si(x), Ci(x)): the sine integral int_0^x sin(t)/t dt and the cosine integral
    gamma + log x + int_0^x (cos t - 1)/t dt (for x < 0, Ci(|x|): the real part, as SciPy's and
    JAX's); d/dx Si = sin(x)/x, d/dx Ci = cos(x)/x (at 0 the largest float, not inf: JAX
    gives inf)."""
    x = _float(x)
    return _si(x), _ci(x)


# --- Spence's function (the dilogarithm) -----------------------------------------------------------
@secant.custom_jvp
def _spence(x):
    inside = (x > 0) & snp.isfinite(x)
    v = snp.where(inside, x, 1.0)
    above2 = v > 2.0
    v = snp.where(above2, 1 / v, v)
    over = v > 1.5
    under = v < 0.5
    flip = above2 | over
    vo = snp.where(over, v, 2.0)
    vu = snp.where(under, v, 0.25)
    w = snp.where(over, 1 / vo - 1, snp.where(under, -vu, v - 1))
    y = -w * _polevl(w, _SPENCE_A) / _polevl(w, _SPENCE_B)
    y = snp.where(under, math.pi ** 2 / 6 - snp.log(vu) * snp.log1p(-vu) - y, y)
    y = snp.where(flip, -0.5 * snp.log(v) ** 2 - y, y)
    out = snp.where(x == 0, math.pi ** 2 / 6, snp.where(x == 1, 0.0, y))
    return snp.where((x < 0) | ~snp.isfinite(x), snp.nan, out)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    near_one = snp.abs(x - 1) < 1e-4
    safe = snp.where(near_one, 2.0, x)
    # log(x) / (1 - x) (-1 at x = 1: its series 1 - (x-1)/2 + (x-1)^2/3 near it)
    d = x - 1
    slope = snp.where(near_one, -(1 - d / 2 + d * d / 3), snp.log(safe) / (1 - safe))
    return _spence(x), slope * x_dot


def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt for real x >= 0 (nan below 0, as
    SciPy's real and JAX's spence); d/dx = log(x) / (1 - x) (-1 at 1)."""
    x = snp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"spence: x.dtype={x.dtype.name} is not supported (float32 or float64, "
                        "as JAX's)" + _where())
    return _spence(x)


# --- Fresnel integrals -----------------------------------------------------------------------------
def _sincos_pi_half_squared(x):
    """(sin(pi x^2 / 2), cos(pi x^2 / 2)), the argument reduced mod 2 exactly (as SciPy's
    sinpi/cospi): r = (s (|x| - s/2)) mod 2 with s = |x| mod 2."""
    x = snp.abs(x)
    s = snp.fmod(x, 2.0)
    r = snp.fmod(s * (x - s / 2), 2.0)
    sinpi = snp.where(r < 0.5, snp.sin(math.pi * r),
                      snp.where(r > 1.5, snp.sin(math.pi * (r - 2.0)),
                                -snp.sin(math.pi * (r - 1.0))))
    cospi = snp.where(r == 0.5, 0.0, snp.where(r < 1.0, -snp.sin(math.pi * (r - 0.5)),
                                               snp.sin(math.pi * (r - 1.5))))
    return sinpi, cospi


def _fresnel_parts(xx):
    """(S(|x|), C(|x|)), Cephes' fresnl (fresnlf's coefficients in float32)."""
    single = xx.dtype.itemsize < 8
    x = snp.abs(xx)
    x2 = x * x
    small = x2 < 2.5625
    xs = snp.where(small, x, 0.0)
    t = xs * xs * xs * xs
    if single:
        s_small = xs * xs * xs * _polevl(t, _FRESNEL_F32_SN)
        c_small = xs * _polevl(t, _FRESNEL_F32_CN)
    else:
        s_small = xs * xs * xs * _polevl(t, _FRESNEL_SN) / _polevl(t, _FRESNEL_SD)
        c_small = xs * _polevl(t, _FRESNEL_CN) / _polevl(t, _FRESNEL_CD)
    large = x > 36974.0
    other = ~small & ~large & snp.isfinite(x)
    xo = snp.where(other, x, 2.0)
    sinpi, cospi = _sincos_pi_half_squared(xo)
    to = math.pi * xo * xo
    u = 1 / (to * to)
    if single:
        f = 1 - u * _polevl(u, _FRESNEL_F32_FN)
        g = _polevl(u, _FRESNEL_F32_GN) / to
    else:
        f = 1 - u * _polevl(u, _FRESNEL_FN) / _polevl(u, _FRESNEL_FD)
        g = _polevl(u, _FRESNEL_GN) / _polevl(u, _FRESNEL_GD) / to
    c_other = 0.5 + (f * sinpi - g * cospi) / (math.pi * xo)
    s_other = 0.5 - (f * cospi + g * sinpi) / (math.pi * xo)
    if single:
        s_large = 0.5
        c_large = 0.5
    else:
        xl = snp.where(large & snp.isfinite(x), x, 4e4)
        sin_l, cos_l = _sincos_pi_half_squared(xl)
        c_large = 0.5 + sin_l / (math.pi * xl)
        s_large = 0.5 - cos_l / (math.pi * xl)
    s = snp.where(small, s_small, snp.where(other, s_other, snp.where(snp.isinf(x), 0.5, s_large)))
    c = snp.where(small, c_small, snp.where(other, c_other, snp.where(snp.isinf(x), 0.5, c_large)))
    return s, c


@secant.custom_jvp
def _fresnel_s(x):
    return snp.sign(x) * _fresnel_parts(x)[0]


@_fresnel_s.defjvp
def _fresnel_s_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _fresnel_s(x), _sincos_pi_half_squared(x)[0] * x_dot


@secant.custom_jvp
def _fresnel_c(x):
    return snp.sign(x) * _fresnel_parts(x)[1]


@_fresnel_c.defjvp
def _fresnel_c_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _fresnel_c(x), _sincos_pi_half_squared(x)[1] * x_dot


def fresnel(x):
    """(S(x), C(x)): int_0^x sin(pi t^2 / 2) dt and int_0^x cos(pi t^2 / 2) dt (real x);
    d/dx S = sin(pi x^2 / 2), d/dx C = cos(pi x^2 / 2)."""
    x = _float(x)
    return _fresnel_s(x), _fresnel_c(x)


# --- Owen's T --------------------------------------------------------------------------------------
_SQRT2 = math.sqrt(2.0)


def _owens_t_quadrature(h, a):
    """a sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i)."""
    r = snp.expand_dims(a * a, -1) * snp.asarray(_OWENS_T_QUAD_PTS, dtype=a.dtype)
    integrand = snp.exp(-0.5 * snp.expand_dims(h * h, -1) * (1.0 + r)) / (1.0 + r)
    return a * snp.sum(integrand * snp.asarray(_OWENS_T_QUAD_WTS, dtype=a.dtype), axis=-1)


@secant.custom_jvp
def _owens_t(h, a):
    h = snp.abs(h)
    abs_a = snp.abs(a)
    inner = abs_a <= 1.0
    mod_a = snp.where(inner, abs_a, 1 / snp.where(abs_a == 0, 1.0, abs_a))
    mod_h = snp.where(inner, h, abs_a * h)
    safe_h = snp.where(snp.isfinite(mod_h), mod_h, 0.0)
    out = _owens_t_quadrature(safe_h, mod_a)
    out = snp.where(mod_h == 0, snp.arctan(mod_a) / (2 * math.pi), out)
    out = snp.where(mod_a == 1.0, 0.125 * lax.erfc(-mod_h / _SQRT2) * lax.erfc(mod_h / _SQRT2),
                    out)
    h_normed = h / _SQRT2
    normh = lax.erfc(h_normed)
    normah = lax.erfc(abs_a * h_normed)
    ah = snp.where(snp.isnan(abs_a * h), 0.0, abs_a * h)        # (inf * 0: a = inf, h = 0)
    outer = snp.where(ah <= 0.67,
                      0.25 - 0.25 * lax.erf(h_normed) * lax.erf(snp.where(h == 0, 0.0, abs_a * h_normed))
                      - out,
                      0.25 * (normh + normah - normh * normah) - out)
    out = snp.where(abs_a > 1.0, outer, out)
    out = snp.where(snp.isinf(h), 0.0, out)
    return snp.where(snp.isnan(a) | snp.isnan(h), snp.nan, snp.sign(a) * out)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    h, a = primals
    h_dot, a_dot = tangents
    dh = -snp.exp(-0.5 * h * h) * lax.erf(a * h / _SQRT2) / (2 * math.sqrt(2 * math.pi))
    da = snp.exp(-0.5 * (a * a + 1) * h * h) / (2 * math.pi * (a * a + 1))
    return _owens_t(h, a), dh * h_dot + da * a_dot


def owens_t(h, a):
    """Owen's T function (1 / 2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt, by
    Patefield and Tandy's 13-point quadrature (as JAX's); d/dh = -phi(h) erf(a h / sqrt 2) / 2,
    d/da = exp(-(1 + a^2) h^2 / 2) / (2 pi (1 + a^2))."""
    h, a = _float(h), _float(a)
    shape = snp.broadcast_shapes(snp.shape(h), snp.shape(a))
    return _owens_t(snp.broadcast_to(h, shape), snp.broadcast_to(a, shape))


# --- the Faddeeva function -------------------------------------------------------------------------
_WOFZ_L = 4.7568284600108841


def _wofz_upper(z):
    """w(z) for Im z >= 0: 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)), Z = (L + iz) / (L - iz)."""
    iz = 1j * z
    denom = _WOFZ_L - iz
    big_z = (_WOFZ_L + iz) / denom
    return 2 * _polevl(big_z, _WOFZ_C) / (denom * denom) + (1 / math.sqrt(math.pi)) / denom


@secant.custom_jvp
def _wofz(z):
    upper = snp.imag(z) >= 0
    w_upper = _wofz_upper(snp.where(upper, z, -z))
    return snp.where(upper, w_upper, 2 * snp.exp(-z * z) - w_upper)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    z, = primals
    z_dot, = tangents
    out = _wofz(z)
    return out, (-2 * z * out + 2j / math.sqrt(math.pi)) * z_dot


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz) (complex; real z is taken as complex),
    by Weideman's N = 32 rational approximation (as JAX's); dw/dz = -2 z w + 2i / sqrt(pi)."""
    z = snp.asarray(z)
    if z.dtype.kind != "c":
        z = z * (1.0 + 0j)
    return _wofz(z)


# --- Bessel functions of the first kind ------------------------------------------------------------
def bessel_jn(z, *, v, n_iter=50):
    """J_0(z) ... J_v(z) (shape (v + 1, *z.shape)) by Miller's backward recurrence from order
    n_iter, normalised by J_0 + 2 (J_2 + J_4 + ...) = 1 (Zhang and Jin's BJNDD, as JAX's); at
    z = 0, J_0 = 1 and J_k = 0 (JAX's gives nan there). Derivatives follow the recurrence."""
    z = _float(z)
    v = int(v)
    n_iter = int(n_iter)
    if v < 0 or n_iter < v:
        raise SecantValueError(f"bessel_jn needs 0 <= v <= n_iter, got v={v}, n_iter={n_iter}"
                               + _where())
    safe = snp.where(z == 0, 1.0, z)

    def step(carry, k):
        f0, f1, total = carry
        f = 2.0 * (k + 1.0) * f1 / safe - f0
        total = total + snp.where(k % 2 == 0, 2.0 * f, 0.0)
        return (f1, f, total), f

    init = (0.0 * safe, 1e-16 + 0.0 * safe, 0.0 * safe)
    orders = snp.arange(n_iter, -1, -1).astype(z.dtype)
    (_, _, total), values = lax.scan(step, init, orders)
    values = snp.flip(values, 0)[:v + 1]
    out = values / (total - values[0])
    at_zero = snp.reshape(snp.arange(v + 1) == 0, (v + 1,) + (1,) * snp.ndim(z))
    return snp.where(z == 0, at_zero.astype(z.dtype), out)


# --- the confluent hypergeometric function 1F1 -----------------------------------------------------
_SERIES_TERMS = 1000


def _hyp1f1_series(a, b, x, eps):
    """sum_k (a)_k / (b)_k x^k / k!."""
    def cond(state):
        k, total, term = state
        return (k < _SERIES_TERMS) & snp.any(snp.abs(term) > eps * snp.abs(total))

    def body(state):
        k, total, term = state
        total = total + term
        return k + 1, total, term * (a + k) / (b + k) * x / (k + 1)

    return lax.while_loop(cond, body, (_one(x), 1.0 + 0.0 * x, a / b * x))[1]


def _hyp1f1_asymptotic(a, b, x, eps):
    """The large-x expansion's sum, sum_k (b - a)_k (1 - a)_k / k! x^-k (Pearson, Olver and
    Porter 2017, eq. 3.8), up to its smallest term."""
    def cond(state):
        k, total, term, _ = state
        return (k < 250) & snp.any((snp.abs(term) > eps * snp.abs(total)) & ~state[3])

    def body(state):
        k, total, term, done = state
        new = term * (b - a + k) * (1 - a + k) / (k + 1) / x
        done = done | (snp.abs(new) > snp.abs(term))          # the series turned: stop there
        total = snp.where(done, total, total + term)
        return k + 1, total, new, done

    state = (_one(x), 1.0 + 0.0 * x, (b - a) * (1 - a) / x, x != x)
    return lax.while_loop(cond, body, state)[1]


def _hyp1f1_positive(a, b, y, shift):
    """e^shift 1F1(a; b; y) for y >= 0: the series below 100, the asymptotic form above (its
    e^y taken with e^shift, so that Kummer's e^x e^-x does not overflow)."""
    eps = _eps(y)
    near = y < 100
    series = _hyp1f1_series(a, b, snp.where(near, y, 0.0), eps)
    yf = snp.where(near, 100.0, y)
    far = (gamma(b) / gamma(a) * snp.exp(yf + shift) * snp.power(yf, a - b)
           * _hyp1f1_asymptotic(a, b, yf, eps))
    return snp.where(near, snp.exp(shift) * series, far)


def _hyp1f1_value(a, b, x):
    # Kummer: 1F1(a; b; x) = e^x 1F1(b - a; b; -x), so the series only meets x >= 0
    negative = x < 0
    value = _hyp1f1_positive(snp.where(negative, b - a, a), b, snp.abs(x),
                             snp.where(negative, x, 0.0))
    out = snp.where(a == 0, 1.0, snp.where(a == b, snp.exp(x), value))
    return snp.where((b == 0) & (a != 0), snp.inf, out)


def _hyp1f1_param_series(a, b, y):
    """(d/da, d/db) of 1F1(a; b; y), y >= 0, the series differentiated term by term (each
    term's derivative by the product rule, so a terminating series stays finite)."""
    eps = _eps(y)

    def cond(state):
        k, term, da_term, db_term, da, db = state
        return (k < 4 * _SERIES_TERMS) & snp.any(
            (snp.abs(da_term) > eps * snp.abs(da)) | (snp.abs(db_term) > eps * snp.abs(db))
            | (k < 3))

    def body(state):
        k, term, da_term, db_term, da, db = state
        ratio = y / ((b + k - 1) * k)
        new = term * (a + k - 1) * ratio
        da_term = (da_term * (a + k - 1) + term) * ratio
        db_term = db_term * (a + k - 1) * ratio - new / (b + k - 1)
        return k + 1, new, da_term, db_term, da + da_term, db + db_term

    zero = 0.0 * y
    state = (_one(y), 1.0 + zero, zero, zero, zero, zero)
    out = lax.while_loop(cond, body, state)
    return out[4], out[5]


@secant.custom_jvp
def _hyp1f1(a, b, x):
    return _hyp1f1_value(a, b, x)


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    a, b, x = primals
    a_dot, b_dot, x_dot = tangents
    negative = x < 0
    da1, db1 = _hyp1f1_param_series(snp.where(negative, b - a, a), b, snp.abs(x))
    # through Kummer's transformation for x < 0: d/da = -e^x M_1, d/db = e^x (M_1 + M_2)
    ex = snp.exp(snp.minimum(x, 0.0))
    da = snp.where(negative, -ex * da1, da1)
    db = snp.where(negative, ex * (da1 + db1), db1)
    dx = a / b * _hyp1f1(a + 1, b + 1, x)
    return _hyp1f1(a, b, x), da * a_dot + db * b_dot + dx * x_dot


def _broadcast_floats(a, b, x):
    """a, b and x as floats of one dtype and shape."""
    a, b, x = _float(a), _float(b), _float(x)
    shape = snp.broadcast_shapes(snp.shape(a), snp.shape(b), snp.shape(x))
    dtype = snp.result_type(a, b, x)
    return (snp.broadcast_to(a.astype(dtype), shape), snp.broadcast_to(b.astype(dtype), shape),
            snp.broadcast_to(x.astype(dtype), shape))


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!
    (real inputs): its series for |x| < 100, the asymptotic expansion above, and Kummer's
    transformation e^x 1F1(b - a; b; -x) for x < 0 (JAX's loses all accuracy there). 1 at
    a = 0 (also a = b = 0, as JAX's, unlike SciPy), inf at b = 0. d/dx = a/b 1F1(a+1; b+1; x);
    d/da and d/db by the series differentiated term by term."""
    a, b, x = _broadcast_floats(a, b, x)
    return _hyp1f1(a, b, x)


# --- the Gauss hypergeometric function 2F1 ---------------------------------------------------------
def _hyp2f1_series(a, b, c, z):
    """sum_k (a)_k (b)_k / (c)_k z^k / k! for 0 <= z < 1 (terminating where a or b is a
    non-positive integer: its terms become 0)."""
    eps = _eps(z)

    def cond(state):
        k, total, term = state
        return (k < 8 * _SERIES_TERMS) & snp.any(snp.abs(term) > eps * snp.abs(total))

    def body(state):
        k, total, term = state
        total = total + term
        return k + 1, total, term * (a + k) * (b + k) / (c + k) / (k + 1) * z

    return lax.while_loop(cond, body, (_one(z), 1.0 + 0.0 * z, a * b / c * z))[1]


def _near_int(v, eps):
    return snp.abs(v - snp.round(v)) < 50 * eps


def _hyp2f1_unit(a, b, c, z):
    """2F1(a; b; c; z) for 0 <= z < 1: above 0.9, where d = c - a - b is not an integer, the
    transformation to 1 - z (Abramowitz and Stegun 15.3.6); else Euler's (1-z)^d
    2F1(c-a; c-b; c; z) where d < 0, so that the series' terms fall at least as 1/k^2."""
    eps = _eps(z)
    d = c - a - b
    far = (z > 0.9) & ~(snp.abs(d - snp.round(d)) < 0.05)
    zs = snp.where(far, 0.5, z)
    euler = d < 0
    series = _hyp2f1_series(snp.where(euler, c - a, a), snp.where(euler, c - b, b), c, zs)
    series = snp.where(euler, snp.power(1 - zs, d) * series, series)
    w = 1 - snp.where(far, z, 0.95)
    df = snp.where(far, d, 0.5)
    first = gamma(c) * gamma(df) / (gamma(c - a) * gamma(c - b)) * _hyp2f1_series(
        a, b, 1 - df, w)
    second = gamma(c) * gamma(-df) / (gamma(a) * gamma(b)) * snp.power(w, df) * _hyp2f1_series(
        c - a, c - b, 1 + df, w)
    # a terminating series (a or b a non-positive integer) never needs the transformation
    terminating = ((a <= 0) & _near_int(a, eps)) | ((b <= 0) & _near_int(b, eps))
    return snp.where(far & ~terminating, first + second, series)


def _hyp2f1_value(a, b, c, x):
    eps = _eps(x)
    d = c - a - b
    negative = x < 0
    # Pfaff: 2F1(a; b; c; x) = (1-x)^-a 2F1(a; c-b; c; x/(x-1)), x/(x-1) in [0, 1) for x < 0
    z = snp.where(negative, x / (x - 1), snp.where(x < 1, x, 0.5))
    inner = _hyp2f1_unit(a, snp.where(negative, c - b, b), c, z)
    value = snp.where(negative, snp.power(1 - x, -a) * inner, inner)
    at_one = snp.where(d > 0, gamma(c) * gamma(snp.where(d > 0, d, 1.0))
                       / (gamma(c - a) * gamma(c - b)), snp.inf)
    out = snp.where(x == 1, at_one, snp.where(x > 1, snp.inf, value))
    pole = (c == 0) | ((c < 0) & _near_int(c, eps))
    out = snp.where(pole, snp.inf, out)
    return snp.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 1.0, out)


def _hyp2f1_param_series(p, q, r, z):
    """(d/dp, d/dq, d/dr) of 2F1(p; q; r; z), 0 <= z < 1, term by term (product rule)."""
    eps = _eps(z)

    def cond(state):
        k, term, dp_term, dq_term, dr_term, dp, dq, dr = state
        big = ((snp.abs(dp_term) > eps * snp.abs(dp)) | (snp.abs(dq_term) > eps * snp.abs(dq))
               | (snp.abs(dr_term) > eps * snp.abs(dr)))
        return (k < 8 * _SERIES_TERMS) & snp.any(big | (k < 3))

    def body(state):
        k, term, dp_term, dq_term, dr_term, dp, dq, dr = state
        pk, qk, rk = p + k - 1, q + k - 1, r + k - 1
        ratio = z / (rk * k)
        new = term * pk * qk * ratio
        dp_term = (dp_term * pk + term) * qk * ratio
        dq_term = (dq_term * qk + term) * pk * ratio
        dr_term = dr_term * pk * qk * ratio - new / rk
        return (k + 1, new, dp_term, dq_term, dr_term, dp + dp_term, dq + dq_term,
                dr + dr_term)

    zero = 0.0 * z
    out = lax.while_loop(cond, body, (_one(z), 1.0 + zero, zero, zero, zero, zero, zero, zero))
    return out[5], out[6], out[7]


@secant.custom_jvp
def _hyp2f1(a, b, c, x):
    return _hyp2f1_value(a, b, c, x)


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
    a, b, c, x = primals
    a_dot, b_dot, c_dot, x_dot = tangents
    negative = x < 0
    z = snp.where(negative, x / (x - 1), snp.where(x < 1, x, 0.0))
    dp, dq, dr = _hyp2f1_param_series(a, snp.where(negative, c - b, b), c, z)
    # through Pfaff's transformation for x < 0: F = (1-x)^-a G(a, c-b, c, z)
    scale = snp.power(1 - snp.minimum(x, 0.0), -a)
    value = _hyp2f1(a, b, c, x)
    da = snp.where(negative, -snp.log1p(-snp.minimum(x, 0.0)) * value + scale * dp, dp)
    db = snp.where(negative, -scale * dq, dq)
    dc = snp.where(negative, scale * (dq + dr), dr)
    dx = a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x)
    return value, da * a_dot + db * b_dot + dc * c_dot + dx * x_dot


def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1(a; b; c; x) = sum_k (a)_k (b)_k / (c)_k x^k / k! for
    real inputs and x <= 1: its series, with Pfaff's transformation for x < 0 (JAX's series
    diverges below -1), Euler's where c - a - b < 0 and the transformation to 1 - x above 0.9;
    as JAX's: 1 at x = 0 or a = 0 or b = 0 (c != 0), inf for x > 1 and where c is a non-positive
    integer, Gamma(c) Gamma(c-a-b) / (Gamma(c-a) Gamma(c-b)) at x = 1. d/dx = a b / c
    2F1(a+1; b+1; c+1; x); d/da, d/db, d/dc by the series differentiated term by term (slow
    to converge as x nears 1, as JAX's)."""
    a, b, c, x = _float(a), _float(b), _float(c), _float(x)
    shape = snp.broadcast_shapes(snp.shape(a), snp.shape(b), snp.shape(c), snp.shape(x))
    dtype = snp.result_type(a, b, c, x)
    return _hyp2f1(snp.broadcast_to(a.astype(dtype), shape),
                   snp.broadcast_to(b.astype(dtype), shape),
                   snp.broadcast_to(c.astype(dtype), shape),
                   snp.broadcast_to(x.astype(dtype), shape))


# --- spherical harmonics ---------------------------------------------------------------------------
def _legendre_table(n_max, x):
    """The orthonormalised associated Legendre functions with the Condon-Shortley phase,
    table[m][l] = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!) P_l^m(x), for 0 <= m <= l <= n_max (0 for
    m > l), by the standard three-term recurrences."""
    s = snp.sqrt(snp.maximum(1 - x * x, 0.0))
    table = []
    diagonal = 0.0 * x + math.sqrt(1 / (4 * math.pi))
    for m in range(n_max + 1):
        if m > 0:
            diagonal = -math.sqrt((2 * m + 1) / (2 * m)) * s * diagonal
        column = [diagonal]                   # column[l - m] is P_l^m
        if m + 1 <= n_max:
            column.append(math.sqrt(2 * m + 3) * x * diagonal)
        for l in range(m + 2, n_max + 1):
            a_l = math.sqrt((4 * l * l - 1) / (l * l - m * m))
            a_prev = math.sqrt((4 * (l - 1) ** 2 - 1) / ((l - 1) ** 2 - m * m))
            column.append(a_l * (x * column[l - 1 - m] - column[l - 2 - m] / a_prev))
        below = snp.zeros((m,) + snp.shape(x), dtype=x.dtype)
        table.append(snp.concatenate([below, snp.stack(column)]))
    return snp.stack(table)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonic Y_n^m(theta, phi) (theta the polar angle, phi the azimuth, as
    SciPy's sph_harm_y), complex, elementwise over the broadcast arguments (a 1-D result, as
    JAX's). n_max (JAX's extra argument: the largest n, static) defaults to max(n), which must
    then be concrete; n above it is clipped to it, as JAX's. diff_n is not supported (as JAX)."""
    if diff_n is not None:
        raise NotImplementedError("The 'diff_n' argument to sph_harm_y is not supported (as in "
                                  "JAX)" + _where())
    if n_max is None:
        n_max = int(np.max(np.asarray(n)))
    n_max = int(n_max)
    n = snp.asarray(n)
    m = snp.asarray(m)
    theta = _float(theta)
    phi = _float(phi)
    shape = snp.broadcast_shapes(snp.shape(n), snp.shape(m), snp.shape(theta), snp.shape(phi))
    shape = shape if len(shape) else (1,)
    n = snp.ravel(snp.broadcast_to(snp.minimum(n, n_max), shape))
    m = snp.ravel(snp.broadcast_to(m, shape))
    theta = snp.ravel(snp.broadcast_to(theta, shape))
    phi = snp.ravel(snp.broadcast_to(phi, shape))
    table = _legendre_table(n_max, snp.cos(theta))
    abs_m = snp.abs(m)
    value = table[snp.minimum(abs_m, n_max), n, snp.arange(theta.shape[0])]
    value = snp.where(abs_m <= n, value, 0.0)
    angle = abs_m * phi
    harmonic = value * snp.cos(angle) + 1j * (value * snp.sin(angle))
    sign = 1.0 - 2.0 * (abs_m % 2)
    return snp.where(m < 0, sign * snp.conj(harmonic), harmonic)


# --- coefficient tables (Cephes; Weideman; Patefield and Tandy: copied as JAX has them) -----------
_DAWSN_AN = (1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
             9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
             -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
             9.99999999999999994612e-1)
_DAWSN_AD = (2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
             1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
             3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
             5.74918629489320327824e-1, 1.00000000000000000539e0)
_DAWSN_BN = (5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
             -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
             3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
             -2.40274520828250956942e-9, 3.59233385440928410398e-11)
_DAWSN_BD = (1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
             -5.31806367003223277662e-2, 8.48041718586295374409e-3, -9.47996768486665330168e-4,
             7.81025592944552338085e-5, -4.55875153252442634831e-6, 1.89100358111421846170e-7,
             -4.91324691331920606875e-9, 7.18466403235734541950e-11)
_DAWSN_CN = (-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
             1.64837047825189632310e-2, -4.86827613020462700845e-4)
_DAWSN_CD = (1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
             -3.93708582281939493482e-1, 3.44278924041233391079e-2, -9.73655226040941223894e-4)
_WOFZ_C = (-1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12,
           -2.1543593557490879e-11, -5.5442449963237932e-11, 1.165824698850374e-10,
           4.1537441121999766e-10, -5.2310202114920615e-10, -3.2080151339721323e-09,
           8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
           -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
           4.4015317312832251e-06, 6.8210319443575151e-06, -2.1409619201999998e-05,
           -0.00013075449254579421, -0.00024532980270038237, 0.00039259136070109705,
           0.0045195411053493093, 0.019006155784845501, 0.057304403529837282, 0.14060716226893755,
           0.29544451071508743, 0.54601397206393376, 0.9019254893648001, 1.3455441692345449,
           1.8256696296324815, 2.2635372999002676, 2.5722534081245696)
_OWENS_T_QUAD_PTS = (0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
                     0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
                     0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
                     0.99178832974629704)
_OWENS_T_QUAD_WTS = (0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
                     0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
                     0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239, 0.0038862217010742058,
                     0.0016793031084546090)
_SICI_SN = (-8.39167827910303881427E-11, 4.62591714427012837309E-8, -9.75759303843632795789E-6,
            9.76945438170435310816E-4, -4.13470316229406538752E-2, 1.00000000000000000302E0)
_SICI_SD = (2.03269266195951942049E-12, 1.27997891179943299903E-9, 4.41827842801218905784E-7,
            9.96412122043875552487E-5, 1.42085239326149893930E-2, 9.99999999999999996984E-1)
_SICI_CN = (2.02524002389102268789E-11, -1.35249504915790756375E-8, 3.59325051419993077021E-6,
            -4.74007206873407909465E-4, 2.89159652607555242092E-2, -1.00000000000000000080E0)
_SICI_CD = (4.07746040061880559506E-12, 3.06780997581887812692E-9, 1.23210355685883423679E-6,
            3.17442024775032769882E-4, 5.10028056236446052392E-2, 4.00000000000000000080E0)
_SICI_FN4 = (4.23612862892216586994E0, 5.45937717161812843388E0, 1.62083287701538329132E0,
             1.67006611831323023771E-1, 6.81020132472518137426E-3, 1.08936580650328664411E-4,
             5.48900223421373614008E-7)
_SICI_FD4 = (1, 8.16496634205391016773E0, 7.30828822505564552187E0, 1.86792257950184183883E0,
             1.78792052963149907262E-1, 7.01710668322789753610E-3, 1.10034357153915731354E-4,
             5.48900252756255700982E-7)
_SICI_GN4 = (8.71001698973114191777E-2, 6.11379109952219284151E-1, 3.97180296392337498885E-1,
             7.48527737628469092119E-2, 5.38868681462177273157E-3, 1.61999794598934024525E-4,
             1.97963874140963632189E-6, 7.82579040744090311069E-9)
_SICI_GD4 = (1, 1.64402202413355338886E0, 6.66296701268987968381E-1, 9.88771761277688796203E-2,
             6.22396345441768420760E-3, 1.73221081474177119497E-4, 2.02659182086343991969E-6,
             7.82579218933534490868E-9)
_SICI_FN8 = (4.55880873470465315206E-1, 7.13715274100146711374E-1, 1.60300158222319456320E-1,
             1.16064229408124407915E-2, 3.49556442447859055605E-4, 4.86215430826454749482E-6,
             3.20092790091004902806E-8, 9.41779576128512936592E-11, 9.70507110881952024631E-14)
_SICI_FD8 = (1.0, 9.17463611873684053703E-1, 1.78685545332074536321E-1, 1.22253594771971293032E-2,
             3.58696481881851580297E-4, 4.92435064317881464393E-6, 3.21956939101046018377E-8,
             9.43720590350276732376E-11, 9.70507110881952025725E-14)
_SICI_GN8 = (6.97359953443276214934E-1, 3.30410979305632063225E-1, 3.84878767649974295920E-2,
             1.71718239052347903558E-3, 3.48941165502279436777E-5, 3.47131167084116673800E-7,
             1.70404452782044526189E-9, 3.85945925430276600453E-12, 3.14040098946363334640E-15)
_SICI_GD8 = (1.0, 1.68548898811011640017E0, 4.87852258695304967486E-1, 4.67913194259625806320E-2,
             1.90284426674399523638E-3, 3.68475504442561108162E-5, 3.57043223443740838771E-7,
             1.72693748966316146736E-9, 3.87830166023954706752E-12, 3.14040098946363335242E-15)
_SPENCE_A = (4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0)
_SPENCE_B = (6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1)
_FRESNEL_F32_SN = (+1.647629463788700e-9, -1.522754752581096e-7, +8.424748808502400e-6, -3.120693124703272e-4,
                   +7.244727626597022e-3, -9.228055941124598e-2, +5.235987735681432e-1)
_FRESNEL_F32_CN = (+1.416802502367354e-8, -1.157231412229871e-6, +5.387223446683264e-5, -1.604381798862293e-3,
                   +2.818489036795073e-2, -2.467398198317899e-1, +9.999999760004487e-1)
_FRESNEL_F32_FN = (-1.903009855649792e12, +1.355942388050252e11, -4.158143148511033e9, +7.343848463587323e7,
                   -8.732356681548485e5, +8.560515466275470e3, -1.032877601091159e2, +2.999401847870011e0)
_FRESNEL_F32_GN = (-1.860843997624650e11, +1.278350673393208e10, -3.779387713202229e8, +6.492611570598858e6,
                   -7.787789623358162e4, +8.602931494734327e2, -1.493439396592284e1, +9.999841934744914e-1)
_FRESNEL_SN = (-2.99181919401019853726e3, +7.08840045257738576863e5, -6.29741486205862506537e7,
               +2.54890880573376359104e9, -4.42979518059697779103e10, +3.18016297876567817986e11)
_FRESNEL_SD = (+1.00000000000000000000e0, +2.81376268889994315696e2, +4.55847810806532581675e4,
               +5.17343888770096400730e6, +4.19320245898111231129e8, +2.24411795645340920940e10,
               +6.07366389490084639049e11)
_FRESNEL_CN = (-4.98843114573573548651e-8, +9.50428062829859605134e-6, -6.45191435683965050962e-4,
               +1.88843319396703850064e-2, -2.05525900955013891793e-1, +9.99999999999999998822e-1)
_FRESNEL_CD = (+3.99982968972495980367e-12, +9.15439215774657478799e-10, +1.25001862479598821474e-7,
               +1.22262789024179030997e-5, +8.68029542941784300606e-4, +4.12142090722199792936e-2,
               +1.00000000000000000118e0)
_FRESNEL_FN = (+4.21543555043677546506e-1, +1.43407919780758885261e-1, +1.15220955073585758835e-2,
               +3.45017939782574027900e-4, +4.63613749287867322088e-6, +3.05568983790257605827e-8,
               +1.02304514164907233465e-10, +1.72010743268161828879e-13, +1.34283276233062758925e-16,
               +3.76329711269987889006e-20)
_FRESNEL_FD = (+1.00000000000000000000e0, +7.51586398353378947175e-1, +1.16888925859191382142e-1,
               +6.44051526508858611005e-3, +1.55934409164153020873e-4, +1.84627567348930545870e-6,
               +1.12699224763999035261e-8, +3.60140029589371370404e-11, +5.88754533621578410010e-14,
               +4.52001434074129701496e-17, +1.25443237090011264384e-20)
_FRESNEL_GN = (+5.04442073643383265887e-1, +1.97102833525523411709e-1, +1.87648584092575249293e-2,
               +6.84079380915393090172e-4, +1.15138826111884280931e-5, +9.82852443688422223854e-8,
               +4.45344415861750144738e-10, +1.08268041139020870318e-12, +1.37555460633261799868e-15,
               +8.36354435630677421531e-19, +1.86958710162783235106e-22)
_FRESNEL_GD = (+1.00000000000000000000e0, +1.47495759925128324529e0, +3.37748989120019970451e-1,
               +2.53603741420338795122e-2, +8.14679107184306179049e-4, +1.27545075667729118702e-5,
               +1.04314589657571990585e-7, +4.60680728146520428211e-10, +1.10273215066240270757e-12,
               +1.38796531259578871258e-15, +8.39158816283118707363e-19, +1.86958710162783236342e-22)
