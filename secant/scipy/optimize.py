"""secant.scipy.optimize.minimize, as jax.scipy.optimize.minimize: method="BFGS" only, with
JAX's options (maxiter, norm, gtol, line_search_maxiter) and its OptimizeResults. The iteration
is a lax.while_loop (so it runs eagerly and under jit); each step searches for a point that
meets the strong Wolfe conditions (a bracketing phase, then a zoom by safeguarded quadratic
interpolation, one evaluation of fun and its gradient per line-search iteration)."""
from typing import NamedTuple

import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantTypeError, SecantValueError, where

_C1, _C2 = 1e-4, 0.9        # the Armijo and curvature constants (SciPy's and JAX's)
__secant_by_source__ = True     # vmap reads minimize like user code (a batched while_loop)


class OptimizeResults(NamedTuple):
    """x: the solution; success: converged without a failed line search; status: 0 converged,
    1 maxiter reached, 3 line search failed; fun, jac: the value and gradient at x; hess_inv:
    the BFGS inverse Hessian estimate; nfev, njev: evaluations of fun and of its gradient;
    nit: iterations."""
    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    if not isinstance(args, tuple):
        raise SecantTypeError(f"args argument to minimize must be a tuple, got {args!r}"
                              f"{where()}")
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise SecantValueError(f"Method {method} not recognized: secant's minimize has "
                               f"method='BFGS'{where()}")
    options = dict(options or {})
    unknown = set(options) - {"maxiter", "norm", "gtol", "line_search_maxiter"}
    if unknown:
        raise SecantTypeError(f"minimize(method='BFGS') takes the options maxiter, norm, gtol "
                              f"and line_search_maxiter, not {sorted(unknown)}{where()}")
    x0 = snp.asarray(x0)
    if x0.ndim != 1:
        raise SecantValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}"
                               f"{where()}")
    if not snp.issubdtype(x0.dtype, snp.floating):
        x0 = x0.astype(snp.result_type(float))
    return _bfgs(fun, x0, args, **options)


# its derivative through the iterations would be the iterates', not the optimum's (implicit):
# grad and jvp refuse it, as before (transformer/normalize.py)
minimize.__secant_batched_only__ = True


def _bfgs(fun, x0, args, maxiter=None, norm=snp.inf, gtol=1e-5, line_search_maxiter=10):
    from secant.transforms import value_and_grad
    value_and_gradient = value_and_grad(fun)
    d = x0.shape[0]
    maxiter = d * 200 if maxiter is None else maxiter
    f0, g0 = value_and_gradient(x0, *args)
    eye = snp.eye(d, dtype=x0.dtype)

    def step(state):
        x, f, g, h, old_f, k, nfev, _, _, _ = state
        p = -(h @ g)
        a, f1, g1, evals, ok = _line_search(value_and_gradient, args, x, p, f, g, old_f,
                                            line_search_maxiter)
        s = a * p
        y = g1 - g
        rho = 1.0 / snp.dot(y, s)
        w = eye - rho * snp.outer(s, y)
        h1 = snp.where(snp.isfinite(rho), w @ h @ w.T + rho * snp.outer(s, s), h)
        x1 = snp.where(ok, x + s, x)
        f1 = snp.where(ok, f1, f)
        g1 = snp.where(ok, g1, g)
        h1 = snp.where(ok, h1, h)
        converged = snp.linalg.norm(g1, ord=norm) < gtol
        return x1, f1, g1, h1, f, k + 1, nfev + evals, converged, ~ok, ok

    def going(state):
        k, converged, failed = state[5], state[7], state[8]
        return ~converged & ~failed & (k < maxiter)

    converged0 = snp.linalg.norm(g0, ord=norm) < gtol
    start = (x0, f0, g0, eye, f0 + snp.linalg.norm(g0) / 2, snp.asarray(0), snp.asarray(1),
             converged0, snp.asarray(False), snp.asarray(True))
    x, f, g, h, _, k, nfev, converged, failed, _ = lax.while_loop(going, step, start)
    status = snp.where(converged, 0, snp.where(failed, 3, snp.where(k >= maxiter, 1, -1)))
    return OptimizeResults(x=x, success=converged & ~failed, status=status, fun=f, jac=g,
                           hess_inv=h, nfev=nfev, njev=nfev, nit=k)


def _line_search(value_and_gradient, args, x, p, f0, g0, old_f0, maxiter):
    """A step a along p meeting the strong Wolfe conditions: (a, f, g at x + a p, evaluations,
    found)."""
    dphi0 = snp.dot(g0, p)
    guess = 1.01 * 2 * (f0 - old_f0) / dphi0
    a1 = snp.where((guess > 0) & snp.isfinite(guess), snp.minimum(1.0, guess), 1.0)
    zero = snp.zeros_like(f0)
    # state: i, zooming, lo (a, phi, dphi), hi (a, phi), previous (a, phi), next a,
    #        done, result (a, phi, g)
    state = (snp.asarray(0), snp.asarray(False), zero, f0, dphi0, zero, f0, zero, f0,
             a1 * snp.ones_like(f0), snp.asarray(False), zero, f0, g0)

    def trial(s):
        _, zooming, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, _, _, a_next = s[:10]
        width = a_hi - a_lo
        denominator = 2 * (phi_hi - phi_lo - dphi_lo * width)
        quad = a_lo - dphi_lo * width * width / snp.where(denominator == 0, 1.0, denominator)
        lo_edge = snp.minimum(a_lo + 0.1 * width, a_hi - 0.1 * width)
        hi_edge = snp.maximum(a_lo + 0.1 * width, a_hi - 0.1 * width)
        safe = (denominator > 0) & (quad >= lo_edge) & (quad <= hi_edge)
        zoom_at = snp.where(safe, quad, a_lo + width / 2)
        return snp.where(zooming, zoom_at, a_next)

    def body(s):
        i, zooming, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, a_prev, phi_prev, a_next = s[:10]
        a = trial(s)
        phi, g = value_and_gradient(x + a * p, *args)
        dphi = snp.dot(g, p)
        armijo_fails = (phi > f0 + _C1 * a * dphi0) | (zooming & (phi >= phi_lo)) | \
            (~zooming & (i > 0) & (phi >= phi_prev))
        curvature = snp.abs(dphi) <= -_C2 * dphi0
        done = ~armijo_fails & curvature & snp.isfinite(phi)
        # bracketing: [a_prev, a] when the decrease fails, [a, a_prev] when dphi >= 0
        to_zoom_low = ~zooming & armijo_fails
        to_zoom_high = ~zooming & ~armijo_fails & ~curvature & (dphi >= 0)
        # zooming: a replaces hi when the decrease fails, else lo (hi moves to lo first when
        # the slope points back)
        flip = zooming & ~armijo_fails & ~curvature & (dphi * (a_hi - a_lo) >= 0)
        new_lo_a = snp.where(to_zoom_low, a_prev, snp.where(
            to_zoom_high | (zooming & ~armijo_fails), a, a_lo))
        new_lo_phi = snp.where(to_zoom_low, phi_prev, snp.where(
            to_zoom_high | (zooming & ~armijo_fails), phi, phi_lo))
        dphi_prev = snp.where(i > 0, dphi_lo, dphi0)     # (kept in the lo slot while bracketing)
        new_lo_dphi = snp.where(to_zoom_low, dphi_prev, snp.where(
            to_zoom_high | (zooming & ~armijo_fails), dphi, dphi_lo))
        new_hi_a = snp.where(to_zoom_low, a, snp.where(to_zoom_high, a_prev, snp.where(
            zooming & armijo_fails, a, snp.where(flip, a_lo, a_hi))))
        new_hi_phi = snp.where(to_zoom_low, phi, snp.where(to_zoom_high, phi_prev, snp.where(
            zooming & armijo_fails, phi, snp.where(flip, phi_lo, phi_hi))))
        still_bracketing = ~zooming & ~to_zoom_low & ~to_zoom_high
        # while bracketing, the lo slot carries the previous point's slope
        new_lo_dphi = snp.where(still_bracketing, dphi, new_lo_dphi)
        return (i + 1, zooming | to_zoom_low | to_zoom_high, new_lo_a, new_lo_phi, new_lo_dphi,
                new_hi_a, new_hi_phi, a, phi, snp.where(still_bracketing, 2 * a, a_next),
                done, a, phi, g)

    def going(s):
        return ~s[10] & (s[0] < maxiter)

    out = lax.while_loop(going, body, state)
    return out[11], out[12], out[13], out[0], out[10]
