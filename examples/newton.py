"""Newton's method with secant.hessian on L2-regularised logistic regression, in float64.

The loss is strictly convex, so Newton's method, w <- w - H(w)^-1 g(w), converges
quadratically: a handful of steps take the gradient norm below 1e-5 (in fact to rounding error).
The gradient is `secant.grad`, the Hessian `secant.hessian` (forward mode over the generated
reverse mode), both jitted; each is checked against the closed forms X^T (p - y) / n + lam w and
X^T diag(p (1 - p)) X / n + lam I.

Run: .venv/bin/python examples/newton.py [--n 2000] [--d 20]
"""
import argparse
import os
import time

import numpy as np

import secant
import secant.numpy as snp

secant.config.update("enable_x64", True)


def loss(w, x, y, lam):
    """Mean logistic loss (labels 0/1) plus lam / 2 * |w|^2."""
    z = x @ w
    return snp.mean(snp.logaddexp(0.0, z) - y * z) + 0.5 * lam * snp.sum(w * w)


grad = secant.jit(secant.grad(loss))
hessian = secant.jit(secant.hessian(loss))
value = secant.jit(loss)


def closed_forms(w, x, y, lam):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    n, d = x.shape
    return x.T @ (p - y) / n + lam * w, (x.T * (p * (1 - p))) @ x / n + lam * np.eye(d)


def make_data(rng, n, d):
    x = rng.normal(size=(n, d))
    x[:, -1] = 1.0                                     # a bias column
    w_true = rng.normal(size=d) * 1.5
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(x @ w_true)))).astype(np.float64)
    return x, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=int(os.environ.get("N", 2000)), help="examples")
    ap.add_argument("--d", type=int, default=int(os.environ.get("D", 20)), help="features")
    ap.add_argument("--lam", type=float, default=1e-2, help="L2 strength")
    ap.add_argument("--tol", type=float, default=1e-5, help="stop at gradient norm below this")
    ap.add_argument("--max-steps", type=int, default=20)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    x, y = make_data(rng, args.n, args.d)
    w = np.zeros(args.d)

    g, h = grad(w, x, y, args.lam), hessian(w, x, y, args.lam)
    g_want, h_want = closed_forms(w, x, y, args.lam)
    g_err = float(np.max(np.abs(np.asarray(g) - g_want)))
    h_err = float(np.max(np.abs(np.asarray(h) - h_want)))
    print(f"grad against the closed form: max error {g_err:.2e}; hessian: max error {h_err:.2e}")
    assert g_err < 1e-12 and h_err < 1e-12

    start = time.perf_counter()
    for step in range(1, args.max_steps + 1):
        g, h = np.asarray(grad(w, x, y, args.lam)), np.asarray(hessian(w, x, y, args.lam))
        w = w - np.linalg.solve(h, g)                 # the Newton step
        g_norm = float(np.linalg.norm(np.asarray(grad(w, x, y, args.lam))))
        print(f"step {step}: loss {float(value(w, x, y, args.lam)):.12f}, "
              f"gradient norm {g_norm:.3e}", flush=True)
        if g_norm < args.tol:
            break
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(((x @ w) > 0) == (y > 0.5)))
    print(f"converged in {step} Newton steps ({seconds:.2f} s): gradient norm {g_norm:.2e} "
          f"< {args.tol:g}, training accuracy {accuracy:.3f}")
    assert g_norm < args.tol and step <= 10


if __name__ == "__main__":
    main()
