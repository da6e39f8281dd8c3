"""A guided tour of automatic differentiation, read from the code secant writes.

Each step shows a function, then the reverse-mode derivative `secant.grad` writes for it, then
the forward-mode one `secant.jvp_fn` writes, from a polynomial to the chain rule, a helper call,
a loop, a data-dependent `if` under jit, a `scan`, and a Hessian-vector product (forward mode
over reverse mode). Every derivative is checked against central finite differences (in float64)
and saved as a standalone module with `secant.save_source`.

Run: .venv/bin/python examples/teach_ad.py [--out DIR] [--steps 1,2,...] [--quiet]
"""
import argparse
import inspect
import os
import sys
import tempfile
import textwrap

import numpy as np

import secant
import secant.numpy as snp
from secant import lax

secant.config.update("enable_x64", True)     # float64, so finite differences are accurate
EPS = 1e-6
TOLERANCE = 1e-6


# --- the functions of the tour --------------------------------------------------------------

def poly(x):
    return 3.0 * x ** 3 - 2.0 * x ** 2 + x


def chain(x):
    return snp.sin(snp.exp(x) * x)


def softplus(z):
    return snp.log1p(snp.exp(z))


def layer_loss(w, x):
    return snp.sum(softplus(x @ w))


def horner(x, coeffs):
    """sum_i coeffs[i] * x ** (n - 1 - i), one multiply-add per coefficient."""
    acc = snp.zeros_like(x)
    for i in range(coeffs.shape[0]):
        acc = acc * x + coeffs[i]
    return snp.sum(acc)


def bounce(x):
    if snp.sum(x) > 0:
        y = x * x
    else:
        y = snp.sin(x)
    return snp.sum(y)


def rnn_sum(w, xs):
    def step(h, x):
        h = snp.tanh(w * h + x)
        return h, h
    h, hs = lax.scan(step, 0.0, xs)
    return snp.sum(hs)


def energy(x):
    return snp.sum(snp.sin(x) * x ** 2) + snp.sum(x[:-1] * x[1:])


# --- finite differences ---------------------------------------------------------------------

def numeric_grad(f, args, argnum=0):
    """Central differences of scalar f with respect to args[argnum]."""
    x = np.asarray(args[argnum], np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += EPS
        minus[i] -= EPS
        hi = list(args)
        lo = list(args)
        hi[argnum], lo[argnum] = plus, minus
        out[i] = (float(f(*hi)) - float(f(*lo))) / (2 * EPS)
    return out


def numeric_directional(f, args, tangents):
    """Central difference of f along the tangents (one per argument)."""
    hi = [np.asarray(a) + EPS * np.asarray(t) for a, t in zip(args, tangents)]
    lo = [np.asarray(a) - EPS * np.asarray(t) for a, t in zip(args, tangents)]
    return (np.asarray(f(*hi)) - np.asarray(f(*lo))) / (2 * EPS)


def max_error(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# --- printing -------------------------------------------------------------------------------

class Printer:
    def __init__(self, quiet, color):
        self.quiet = quiet
        self.color = color

    def heading(self, text):
        print(f"\n{'=' * 78}\n{text}\n{'=' * 78}")

    def say(self, text):
        if not self.quiet:
            print(textwrap.fill(" ".join(text.split()), 78))

    def code(self, title, text):
        if self.quiet:
            return
        print(f"\n--- {title} " + "-" * max(0, 73 - len(title)))
        text = text.rstrip() + "\n"
        if self.color:
            from pygments import highlight
            from pygments.formatters import TerminalFormatter
            from pygments.lexers import PythonLexer
            text = highlight(text, PythonLexer(), TerminalFormatter())
        print(text, end="")

    def result(self, text):
        print(text)


def check(label, got, want):
    err = max_error(got, want)
    assert err < TOLERANCE, f"{label}: max error {err:.3g} against finite differences"
    return err


def save(fn, out_dir, name):
    return secant.save_source(fn, os.path.join(out_dir, name + ".py"))


# --- the tour -------------------------------------------------------------------------------

def show_both(p, f, argnums=0):
    """Print f, secant.grad(f) and secant.jvp_fn(f); return (grad function, jvp function)."""
    g = secant.grad(f, argnums=argnums)
    j = secant.jvp_fn(f)
    p.code(f"your function {f.__name__}", inspect.getsource(f))
    p.code(f"reverse mode: secant.source(secant.grad({f.__name__}))", secant.source(g))
    p.code(f"forward mode: secant.source(secant.jvp_fn({f.__name__}))", secant.source(j))
    return g, j


def check_both(p, f, g, j, args, argnum, out_dir, rng, name=None):
    """grad against per-coordinate differences, jvp against a directional difference; save both."""
    name = name or f.__name__
    grad_err = check(f"grad({name})", g(*args), numeric_grad(f, args, argnum))
    tangents = [rng.normal(size=np.shape(a)) if k == argnum else np.zeros(np.shape(a))
                for k, a in enumerate(args)]
    tangents = [t if np.ndim(a) else float(t) for t, a in zip(tangents, args)]
    primal_out, tangent_out = j(*args, *tangents)
    jvp_err = check(f"jvp({name})", tangent_out, numeric_directional(f, args, tangents))
    assert max_error(primal_out, f(*args)) < TOLERANCE
    saved = [save(g, out_dir, f"{name}_grad"), save(j, out_dir, f"{name}_jvp")]
    names = ", ".join(map(os.path.basename, saved))
    p.result(f"[{name}] grad max error {grad_err:.2e}, jvp max error {jvp_err:.2e} "
             f"(central differences, eps={EPS:g}); saved {names}")
    return grad_err, jvp_err


def step_polynomial(p, out_dir, rng):
    p.heading("1. A polynomial")
    p.say("""Reverse mode runs your function forward, then walks its lines backwards: each
    variable v gets a cotangent v_bar, the derivative of the output with respect to v. The
    '# Grad of:' comments quote the line each block differentiates. Forward mode instead
    carries a tangent v_dot beside every value, in the same order as your code.""")
    g, j = show_both(p, poly)
    return check_both(p, poly, g, j, (0.7,), 0, out_dir, rng)


def step_chain(p, out_dir, rng):
    p.heading("2. The chain rule")
    p.say("""A composition is differentiated one primitive at a time: the cotangent of
    sin's argument is the output's cotangent times cos, then the product rule splits it
    between exp(x) and x, and the two contributions to x_bar are added.""")
    g, j = show_both(p, chain)
    return check_both(p, chain, g, j, (0.4,), 0, out_dir, rng)


def step_helper(p, out_dir, rng):
    p.heading("3. A call to your own helper")
    p.say("""A helper you wrote is not inlined: the derivative calls softplus_vjp (reverse)
    or softplus_jvp (forward), generated functions of their own. The saved module holds the
    helper's derivative next to the caller's, shown here.""")
    g, j = show_both(p, layer_loss)
    args = (rng.normal(size=(3, 2)), rng.normal(size=(4, 3)))
    errs = check_both(p, layer_loss, g, j, args, 0, out_dir, rng)
    with open(os.path.join(out_dir, "layer_loss_grad.py"), encoding="utf-8") as fh:
        p.code("the saved module layer_loss_grad.py", fh.read())
    return errs


def step_loop(p, out_dir, rng):
    p.heading("4. A loop")
    p.say("""A Python for loop over a range runs as Python. Reverse mode pushes each value
    the loop overwrites onto a stack on the way forward and pops it on the way back (the loop
    runs in reverse); forward mode carries the tangent through the same loop.""")
    g, j = show_both(p, horner)
    args = (rng.normal(size=3), np.array([0.5, -1.0, 2.0, 0.25]))
    errs = check_both(p, horner, g, j, args, 0, out_dir, rng)
    p.say("""Under jit the loop is rewritten first (secant.lax.fori_loop), so jit(grad(f))
    compiles one loop forward and one backward; it computes the same gradient:""")
    p.code("secant.source(secant.jit(secant.grad(horner)))", secant.source(secant.jit(g)))
    jit_err = check("jit(grad(horner))", secant.jit(g)(*args), numeric_grad(horner, args))
    p.result(f"[horner] jit(grad) max error {jit_err:.2e}")
    return errs


def step_branch(p, out_dir, rng):
    p.heading("5. A data-dependent if, under jit")
    p.say("""Eagerly, `if snp.sum(x) > 0` is a Python if on a concrete value, and both
    derivatives replay the branch that ran. Under jit the condition is a traced value, so jit
    first rewrites the function: each branch becomes a function and the if becomes
    secant.lax.cond (one stablehlo.if). secant.source(secant.jit(f)) shows that rewritten
    (functionalised) form, and jit(grad(f)) differentiates it, calling the vjp of each branch.""")
    g, j = show_both(p, bounce)
    fast = secant.jit(bounce)
    p.code("secant.source(secant.jit(bounce)): the functionalised form", secant.source(fast))
    fast_grad = secant.jit(g)
    p.code("secant.source(secant.jit(secant.grad(bounce)))", secant.source(fast_grad))
    with open(os.path.join(out_dir, "bounce_functionalised.py"), "w", encoding="utf-8") as fh:
        fh.write(secant.source(fast))
    errs = []
    for sign in (1.0, -1.0):                   # one point on each side of the branch
        args = (sign * np.abs(rng.normal(size=3)),)
        errs.append(check_both(p, bounce, g, j, args, 0, out_dir, rng))
        jit_err = check("jit(grad(bounce))", fast_grad(*args), numeric_grad(bounce, args))
        jit_err = max(jit_err, check("jit(bounce)", fast(*args), bounce(*args)))
        p.result(f"[bounce] sum(x) {'>' if sign > 0 else '<'} 0: jit(grad) max error "
                 f"{jit_err:.2e}")
    return tuple(max(e) for e in zip(*errs))


def step_scan(p, out_dir, rng):
    p.heading("6. A scan")
    p.say("""lax.scan threads a carry through a step function. Reverse mode runs the scan
    forward saving the carries (scan_with_carries), then a reverse scan of the generated
    step_vjp. Forward mode scans step_jvp over (carry, tangent) pairs.""")
    g, j = show_both(p, rnn_sum)
    args = (0.8, rng.normal(size=6))
    errs = check_both(p, rnn_sum, g, j, args, 0, out_dir, rng)
    jit_err = check("jit(grad(rnn_sum))", secant.jit(g)(*args), numeric_grad(rnn_sum, args))
    p.result(f"[rnn_sum] jit(grad) max error {jit_err:.2e}")
    return errs


def step_hvp(p, out_dir, rng):
    p.heading("7. A Hessian-vector product: forward mode over reverse mode")
    p.say("""secant.grad(energy) is a Python function like any other, so jvp_fn can
    differentiate it again: energy_grad_jvp(x, v) returns the gradient and H @ v, the Hessian
    times v, at the cost of about two gradients and without forming H.""")
    g = secant.grad(energy)
    hvp = secant.jvp_fn(g)
    p.code("your function energy", inspect.getsource(energy))
    p.code("secant.source(secant.grad(energy))", secant.source(g))
    p.code("secant.source(secant.jvp_fn(secant.grad(energy)))", secant.source(hvp))
    x, v = rng.normal(size=5), rng.normal(size=5)
    grad_x, hv = hvp(x, v)
    grad_err = check("grad(energy)", g(x), numeric_grad(energy, (x,)))
    hvp_err = check("hvp(energy)", hv, numeric_directional(g, (x,), (v,)))
    full = max_error(hv, np.asarray(secant.hessian(energy)(x)) @ v)
    assert full < 1e-10 and max_error(grad_x, g(x)) < 1e-12
    jit_err = max_error(secant.jit(hvp)(x, v)[1], hv)
    assert jit_err < 1e-10
    saved = [save(g, out_dir, "energy_grad"), save(hvp, out_dir, "energy_hvp")]
    p.result(f"[energy] grad max error {grad_err:.2e}, hvp max error {hvp_err:.2e} "
             f"(central differences of the gradient); against hessian(energy)(x) @ v "
             f"{full:.1e}; saved {', '.join(map(os.path.basename, saved))}")
    return grad_err, hvp_err


STEPS = [step_polynomial, step_chain, step_helper, step_loop, step_branch, step_scan, step_hvp]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the saved derivatives (default: a new temp dir)")
    ap.add_argument("--steps", help="comma-separated step numbers to run (default: all)")
    ap.add_argument("--quiet", action="store_true", help="print only the checks")
    ap.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                    help="highlight the code with pygments (default: when printing to a tty)")
    args = ap.parse_args(argv)
    out_dir = args.out or tempfile.mkdtemp(prefix="secant_teach_ad_")
    os.makedirs(out_dir, exist_ok=True)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    if color:
        try:
            import pygments  # noqa: F401
        except ImportError:
            color = False
    chosen = STEPS if not args.steps else [STEPS[int(s) - 1] for s in args.steps.split(",")]
    p = Printer(args.quiet, color)
    rng = np.random.default_rng(0)
    worst = 0.0
    for step in chosen:
        worst = max(worst, *step(p, out_dir, rng))
    print(f"\nall {len(chosen)} steps match finite differences: max error {worst:.2e} "
          f"(tolerance {TOLERANCE:g})")
    print(f"generated sources saved in {out_dir}: "
          f"{', '.join(sorted(os.listdir(out_dir)))}")


if __name__ == "__main__":
    main()
