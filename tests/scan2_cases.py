"""Higher-order and composed derivatives through lax loops (scan, fori_loop, while_loop, map)
and odeint: small functions f(x) of a float64 vector x (a scalar out), and the compositions
tests/test_scan2_compositions.py checks. Run as a script for the table of what passes.

Each check is against numbers computed without the composition: a hessian or a grad of grad
against central differences of f itself; jacobians of a gradient against central differences
of secant.grad(f) (one layer); vmap against a Python loop; jit against eager."""
import numpy as np

import secant
import secant.numpy as snp
from secant import lax
from secant.experimental.ode import odeint

W = np.array([0.8, -0.6, 1.3])
X = np.array([0.3, -0.7, 1.1])
XB = np.stack([X, X * 0.9 + 0.05])


def scan_closure(x):
    """xs given, the step closes over x (differentiated)."""
    def step(c, xi):
        c = snp.sin(c) * x[0] + xi * c
        return c, c * x[1]
    c, ys = lax.scan(step, x[2], x * W)
    return c + snp.sum(ys ** 2)


def scan_length(x):
    """Only length, no xs; the step closes over x."""
    def step(c, _):
        return snp.tanh(c * x + 0.3), snp.sum(c)
    c, ys = lax.scan(step, x, None, length=4)
    return snp.sum(c ** 2) + snp.sum(ys)


def scan_tuple_carry(x):
    def step(carry, xi):
        a, b = carry
        a = a + 0.1 * snp.sin(b) * xi
        b = b * snp.cos(a)
        return (a, b), a * b
    (a, b), ys = lax.scan(step, (x[0], x[1]), x * W)
    return a * b + snp.sum(ys)


def scan_dict_carry(x):
    def step(carry, xi):
        h = snp.tanh(carry["h"] * W + xi)
        return {"h": h, "s": carry["s"] + snp.sum(h)}, h[0]
    out, ys = lax.scan(step, {"h": x, "s": 0.0 * x[0]}, x[::-1] * 2.0)
    return out["s"] + snp.sum(out["h"] ** 2) + snp.sum(ys)


def scan_reverse(x):
    def step(c, t):
        c = snp.sin(c) * t + c
        return c, c * t
    c, ys = lax.scan(step, x[0], x, reverse=True)
    return c + snp.sum(ys ** 2)


def fori_lambda(x):
    return snp.sum(lax.fori_loop(0, 3, lambda i, y: snp.sin(y) * W + x, x) ** 2)


def fori_tuple(x):
    def body(i, state):
        th, om = state
        om = om - 0.1 * snp.sin(th) * x[0]
        th = th + 0.1 * om
        return th, om
    th, om = lax.fori_loop(0, 5, body, (x, 0.0 * x))
    return snp.sum(th ** 2 + om ** 2)


def fori_index(x):
    def body(i, acc):
        return acc * 0.5 + x[i] * snp.sin(acc)
    return snp.sum(lax.fori_loop(0, 3, body, x[0] + 0.0 * x))


def while_count(x):
    def body(s):
        i, y = s
        return i + 1, snp.sin(y) * x[0] + x
    _, y = lax.while_loop(lambda s: s[0] < 3, body, (0, x))
    return snp.sum(y ** 2)


def map_closure(x):
    return snp.sum(lax.map(lambda r: snp.sin(r * x[0]) * r, x * W) ** 2)


TS = np.array([0.0, 0.4, 1.1])


def ode(x):
    def rhs(y, t, k):
        return -k * y * snp.cos(t)
    ys = odeint(rhs, x[0], TS, x[1])
    return ys[-1] + x[2] * ys[1]


FUNCTIONS = {f.__name__: f for f in (
    scan_closure, scan_length, scan_tuple_carry, scan_dict_carry, scan_reverse, fori_lambda,
    fori_tuple, fori_index, while_count, map_closure, ode)}


def _fd(fn, x, h):
    """d fn / d x by central differences, shape fn(x).shape + x.shape."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def _f64(fn):
    return lambda x: np.asarray(fn(snp.asarray(x)), dtype=np.float64)


def _hess_fd(f, x):
    if f is ode:        # (second differences of an adaptive solve are its tolerance / h^2)
        return _ode_hessian(x)
    return _fd(lambda y: _fd(_f64(f), y, 1e-4), x, 1e-4)


def _ode_hessian(x):
    """ode's hessian in closed form: y(t) = y0 exp(-k sin t), f = y(T2) + x2 y(T1)."""
    y0, k, w = x
    (s1, s2), (e1, e2) = np.sin(TS[1:]), np.exp(-k * np.sin(TS[1:]))
    return np.array([[0.0, -(s2 * e2 + w * s1 * e1), e1],
                     [-(s2 * e2 + w * s1 * e1), y0 * (s2 ** 2 * e2 + w * s1 ** 2 * e1),
                      -y0 * s1 * e1],
                     [e1, -y0 * s1 * e1, 0.0]])


def _grad_fd(f, x):
    """One layer: central differences of secant's own first derivative."""
    return _fd(_f64(secant.grad(f)), x, 1e-6)


# name -> (build(f) -> function of x, reference(f, x), batched)
COMPOSITIONS = {
    "hessian": (secant.hessian, _hess_fd, False),
    "grad_grad_sum": (lambda f: secant.grad(lambda x: snp.sum(secant.grad(f)(x) * W)),
                      lambda f, x: _hess_fd(f, x) @ W, False),
    "jacrev_grad": (lambda f: secant.jacrev(secant.grad(f)), _grad_fd, False),
    "jacfwd_grad": (lambda f: secant.jacfwd(secant.grad(f)), _grad_fd, False),
    "jacfwd_jacrev": (lambda f: secant.jacfwd(secant.jacrev(f)), _grad_fd, False),
    "jacrev_jacrev": (lambda f: secant.jacrev(secant.jacrev(f)), _grad_fd, False),
    "jit_hessian": (lambda f: secant.jit(secant.hessian(f)), _hess_fd, False),
    "vmap_hessian": (lambda f: secant.vmap(secant.hessian(f)),
                     lambda f, xb: np.stack([_hess_fd(f, x) for x in xb]), True),
    "vmap_grad": (lambda f: secant.vmap(secant.grad(f)),
                  lambda f, xb: np.stack([_fd(_f64(f), x, 1e-6) for x in xb]), True),
    "grad_vmap": (lambda f: secant.grad(lambda x: snp.sum(secant.vmap(f)(snp.stack([x, 2 * x])))),
                  lambda f, x: _fd(lambda y: float(f(snp.asarray(y))) + float(
                      f(snp.asarray(2 * y))), x, 1e-6), False),
    "vmap_vmap": (lambda f: secant.vmap(secant.vmap(f)),
                  lambda f, xs: np.stack([[_f64(f)(x) for x in xb] for xb in xs]), "twice"),
}
TOL = {"hessian": 2e-5, "grad_grad_sum": 2e-5, "jit_hessian": 2e-5, "vmap_hessian": 2e-5}


def check(fname, cname):
    """Raises AssertionError on a wrong value (any other exception is secant's refusal)."""
    f = FUNCTIONS[fname]
    build, ref, batched = COMPOSITIONS[cname]
    x = XB if batched is True else np.stack([XB, XB]) if batched == "twice" else X
    got = np.asarray(build(f)(snp.asarray(x)))
    want = np.asarray(ref(f, x))
    tol = TOL.get(cname, 1e-6)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


if __name__ == "__main__":
    import signal
    import sys
    import time

    secant.config.update("enable_x64", True)
    fnames = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else list(FUNCTIONS)
    cnames = sys.argv[2].split(",") if len(sys.argv) > 2 else list(COMPOSITIONS)

    def alarm(*_):
        raise TimeoutError("over 120 s")
    signal.signal(signal.SIGALRM, alarm)
    ok = n = 0
    for cname in cnames:
        for fname in fnames:
            t0 = time.time()
            signal.alarm(120)
            try:
                check(fname, cname)
                status, msg = "ok", ""
            except AssertionError as e:
                status, msg = "WRONG", str(e).strip().splitlines()[0][:150]
            except Exception as e:      # noqa: BLE001
                status = type(e).__name__
                msg = (str(e).strip().splitlines() or [""])[0][:150]
            signal.alarm(0)
            n += 1
            ok += status == "ok"
            print(f"{status:16s} {fname:18s} {cname:14s} {time.time() - t0:5.1f}s {msg}",
                  flush=True)
    print(f"{ok}/{n} pass")
