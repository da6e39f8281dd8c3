"""Derivative rules of your own: a numerically stable function with secant.custom_jvp and a
gradient clipper with secant.custom_vjp, and the generated source that calls them by name.

- log1pexp(x) = log(1 + e^x) (softplus). Written naively, its derivative e^x / (1 + e^x) is
  inf / inf = nan for large x in float32. The custom_jvp rule states the derivative as
  sigmoid(x), which is stable; reverse mode transposes that rule, so grad uses it too.
- clip_gradient(lo, hi, x) is the identity going forward; going backward its custom_vjp clips
  the cotangent to [lo, hi] (lo and hi are nondiff_argnums, as in JAX's example).

Run: .venv/bin/python examples/custom_rules.py [--quiet]
"""
import argparse
import functools
import inspect

import numpy as np

import secant
import secant.numpy as snp


# --- a stable softplus with a custom_jvp ----------------------------------------------------

def naive_log1pexp(x):
    return snp.log(1.0 + snp.exp(x))


@secant.custom_jvp
def log1pexp(x):
    return snp.maximum(x, 0.0) + snp.log1p(snp.exp(-snp.abs(x)))   # no overflow for large x


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    sigmoid = 0.5 * (snp.tanh(0.5 * x) + 1.0)                  # stable for either sign of x
    return log1pexp(x), sigmoid * x_dot


def softplus_loss(x):
    return snp.sum(log1pexp(x) * 2.0)


def naive_loss(x):
    return snp.sum(naive_log1pexp(x) * 2.0)


# --- a gradient clipper with a custom_vjp ---------------------------------------------------

@functools.partial(secant.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x                                                    # the identity going forward


def clip_gradient_fwd(lo, hi, x):
    return x, None                                              # no residuals needed


def clip_gradient_bwd(lo, hi, residuals, g):
    return (snp.clip(g, lo, hi),)                               # clip the cotangent going back


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def cube_loss(x):
    """sum(x^3) with the gradient flowing into x clipped to [-1, 1] per element."""
    y = clip_gradient(-1.0, 1.0, x)
    return snp.sum(y ** 3)


def generated_callee(fn, name):
    """The source of the generated function `name` that the generated `fn` calls (found among
    the names it closes over, following the chain of generated calls)."""
    todo, seen = [getattr(fn, "__secant_generated__", fn)], set()
    while todo:
        f = todo.pop()
        if id(f) in seen or not inspect.isfunction(f):
            continue
        seen.add(id(f))
        names = inspect.getclosurevars(f)
        found = {**names.globals, **names.nonlocals}
        if name in found:
            return secant.source(found[name])
        todo.extend(v for k, v in found.items() if k.endswith(("_vjp", "_jvp", "_jvp_1")))
    raise LookupError(name)


def show(quiet, title, text):
    if not quiet:
        print(f"\n--- {title} " + "-" * max(0, 73 - len(title)))
        print(text.rstrip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quiet", action="store_true", help="print only the checks")
    args = ap.parse_args(argv)
    x = np.array([-100.0, -3.0, 0.0, 2.0, 30.0, 100.0], np.float32)

    # 1. custom_jvp: the transforms call log1pexp_jvp, the rule written above, by name.
    grad_loss = secant.grad(softplus_loss)
    jvp_loss = secant.jvp_fn(softplus_loss)
    show(args.quiet, "secant.source(secant.grad(softplus_loss))", secant.source(grad_loss))
    show(args.quiet, "secant.source(secant.jvp_fn(softplus_loss))", secant.source(jvp_loss))
    for name in ("log1pexp_vjp", "log1pexp_tangent_vjp"):
        show(args.quiet, f"{name}, the generated function it calls",
             generated_callee(grad_loss, name))
    show(args.quiet, "log1pexp_jvp_1, the generated function it calls",
         generated_callee(jvp_loss, "log1pexp_jvp_1"))

    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.asarray(secant.grad(naive_loss)(x))
        naive_value = np.asarray(naive_log1pexp(x))
    stable = np.asarray(grad_loss(x))
    want = 2.0 / (1.0 + np.exp(-x.astype(np.float64)))
    value_want = np.logaddexp(0.0, x.astype(np.float64))
    print(f"x                    = {x}")
    print(f"naive log1pexp(x)    = {naive_value}")
    print(f"log1pexp(x)          = {np.asarray(log1pexp(x))}")
    print(f"grad, naive          = {naive}")
    print(f"grad, custom_jvp     = {stable}")
    grad_err = float(np.max(np.abs(stable - want)))
    jit_err = float(np.max(np.abs(np.asarray(secant.jit(grad_loss)(x)) - want)))
    tangent = np.ones_like(x)
    _, out_dot = jvp_loss(x, tangent)
    jvp_err = abs(float(out_dot) - float(want.sum())) / float(want.sum())
    value_err = float(np.max(np.abs(np.asarray(log1pexp(x)) - value_want)))
    print(f"custom_jvp: grad max error {grad_err:.2e} (jit {jit_err:.2e}), jvp relative error "
          f"{jvp_err:.2e}, value max error {value_err:.2e}; the naive grad has "
          f"{int(np.isnan(naive).sum())} nan")
    assert np.isnan(naive).any() and np.isfinite(stable).all()
    assert grad_err < 1e-6 and jit_err < 1e-6 and jvp_err < 1e-6 and value_err < 1e-5

    # 2. custom_vjp: the derivative's forward pass calls the generated clip_gradient_fwd_checked,
    #    which calls clip_gradient_fwd by name, and keeps its residuals; its reverse pass calls
    #    clip_gradient_bwd_checked on them, which calls clip_gradient_bwd by name.
    grad_cube = secant.grad(cube_loss)
    show(args.quiet, "secant.source(secant.grad(cube_loss))", secant.source(grad_cube))
    for name in ("clip_gradient_fwd_checked", "clip_gradient_bwd_checked"):
        show(args.quiet, f"{name}, the generated function it calls",
             generated_callee(grad_cube, name))
    xs = np.array([-2.0, -0.5, 0.1, 0.5, 0.7, 3.0], np.float32)
    clipped = np.asarray(grad_cube(xs))
    want = np.clip(3.0 * xs ** 2, -1.0, 1.0)
    clip_err = float(np.max(np.abs(clipped - want)))
    clip_jit_err = float(np.max(np.abs(np.asarray(secant.jit(grad_cube)(xs)) - want)))
    print(f"x                    = {xs}")
    print(f"3 x^2 (unclipped)    = {3.0 * xs ** 2}")
    print(f"grad, custom_vjp     = {clipped}")
    print(f"custom_vjp: clipped grad max error {clip_err:.2e} (jit {clip_jit_err:.2e}); forward "
          f"value unchanged: {float(cube_loss(xs)) == float(np.sum(xs ** 3))}")
    assert clip_err < 1e-6 and clip_jit_err < 1e-6
    assert float(cube_loss(xs)) == float(np.sum(xs ** 3))
    print("custom rules: all checks passed")


if __name__ == "__main__":
    main()
