"""Cases of test_sem15v_semantics run by JAX (bench/sem15v_oracle.py --record writes
sem15v_expected.py) and by secant: dtypes and weak types of promotions (DTYPE_CASES) and the
derivatives of functions with a pole or a branch point there (POLE_CASES).

Each case is written against a backend `B` (B.snp, B.sp, B.lax, B.sx: the transforms):
fuzz.backend("jax") or fuzz.backend("secant")."""
import numpy as np

# name -> (function of (B, u, v), u, v): u and v as given to the function (a Python number, or
# ("int32" | "float32" | ..., values) for an array)
DTYPE_CASES = {
    "int / int32 array": (lambda B, u, v: u / v, 3, ("int32", [0, 1, 2, 3])),
    "int32 array / int": (lambda B, u, v: u / v, ("int32", [0, 1, 2, 3]), 3),
    "float / int32 array": (lambda B, u, v: u / v, 3.0, ("int32", [0, 1, 2, 3])),
    "true_divide(int, int32 array)": (lambda B, u, v: B.snp.true_divide(u, v), 3,
                                      ("int32", [0, 1, 2, 3])),
    "divide(int, int32 array)": (lambda B, u, v: B.snp.divide(u, v), 3, ("int32", [1, 2])),
    "int / bool array": (lambda B, u, v: u / v, 3, ("bool", [True, False])),
    "int / int": (lambda B, u, v: B.snp.true_divide(u, v), 3, 2),
    "float ** int32 array": (lambda B, u, v: u ** v, 2.0, ("int32", [0, 1, 2])),
    "float ** int32 scalar array": (lambda B, u, v: u ** v, 2.0, ("int32", 3)),
    "int32 array ** float": (lambda B, u, v: u ** v, ("int32", [0, 1, 2]), 0.5),
    "float16 array ** int32 array": (lambda B, u, v: u ** v, ("float16", [1.0, 2.0]),
                                     ("int32", [2, 3])),
    "int32 array ** int": (lambda B, u, v: u ** v, ("int32", [0, 1, 2]), 2),
    "mean of int32 array": (lambda B, u, v: B.snp.mean(u), ("int32", [0, 1, 2]), 0),
    "mean of int32 array, axis 0": (lambda B, u, v: B.snp.mean(u, axis=0),
                                    ("int32", [[0, 1], [2, 3]]), 0),
    "var of int32 array": (lambda B, u, v: B.snp.var(u), ("int32", [0, 1, 2]), 0),
    "arctan2(int32, int32)": (lambda B, u, v: B.snp.arctan2(u, v), ("int32", [1, 2]),
                              ("int32", [2, 1])),
    "arctan2(int, int32 array)": (lambda B, u, v: B.snp.arctan2(u, v), 3, ("int32", [1, 2])),
    "arctan2(int32 array, int)": (lambda B, u, v: B.snp.arctan2(u, v), ("int32", [1, 2]), 3),
    "arctan2(int, int)": (lambda B, u, v: B.snp.arctan2(u, v), 3, 2),
    "logaddexp(int, int32 array)": (lambda B, u, v: B.snp.logaddexp(u, v), 3,
                                    ("int32", [1, 2])),
    "hypot(int, int32 array)": (lambda B, u, v: B.snp.hypot(u, v), 3, ("int32", [1, 2])),
}

# name -> (function of (B, x), the point): a scalar function at its pole or branch point
POLE_CASES = {
    "log at 0": (lambda B, x: B.snp.log(x), 0.0),
    "log1p at -1": (lambda B, x: B.snp.log1p(x), -1.0),
    "gammaln at 0": (lambda B, x: B.sp.gammaln(x), 0.0),
    "gammaln at -1": (lambda B, x: B.sp.gammaln(x), -1.0),
    "gammaln at -2": (lambda B, x: B.sp.gammaln(x), -2.0),
    "digamma at 0": (lambda B, x: B.sp.digamma(x), 0.0),
    "digamma at -1": (lambda B, x: B.sp.digamma(x), -1.0),
    "xlogy(x, x) at 0": (lambda B, x: B.sp.xlogy(x, x), 0.0),
    "xlogy(2, x) at 0": (lambda B, x: B.sp.xlogy(2.0, x), 0.0),
    "sqrt at 0": (lambda B, x: B.snp.sqrt(x), 0.0),
    "rsqrt at 0": (lambda B, x: B.lax.rsqrt(x), 0.0),
    "arctanh at 1": (lambda B, x: B.snp.arctanh(x), 1.0),
    "arctanh at -1": (lambda B, x: B.snp.arctanh(x), -1.0),
}

POLE_TRANSFORMS = ("value", "grad", "grad_grad", "jacfwd_jacrev", "jacrev_jacfwd", "hessian",
                   "jit_grad_grad")


def as_value(B, spec):
    if isinstance(spec, tuple):
        dtype, values = spec
        return B.snp.asarray(np.array(values, dtype))
    return spec


def dtype_outcome(B, name, how):
    """('ok', dtype name, weak_type) or ('raises', exception type name)."""
    f, u, v = DTYPE_CASES[name]
    u, v = as_value(B, u), as_value(B, v)
    call = (lambda a, b: f(B, a, b)) if how == "eager" else B.sx.jit(lambda a, b: f(B, a, b))
    try:
        out = call(u, v)
    except Exception as e:      # noqa: BLE001  (the outcome recorded)
        return ("raises", type(e).__name__)
    return ("ok", np.dtype(out.dtype).name, bool(getattr(out, "weak_type", False)))


def pole_outcome(B, name, transform):
    """The float value (nan, inf included) of `transform` of the case at its point, or
    ('raises', exception type name)."""
    f, x = POLE_CASES[name]

    def g(x):
        return f(B, x)
    made = {
        "value": g,
        "grad": B.sx.grad(g),
        "grad_grad": B.sx.grad(B.sx.grad(g)),
        "jacfwd_jacrev": B.sx.jacfwd(B.sx.jacrev(g)),
        "jacrev_jacfwd": B.sx.jacrev(B.sx.jacfwd(g)),
        "hessian": B.sx.hessian(g),
        "jit_grad_grad": B.sx.jit(B.sx.grad(B.sx.grad(g))),
    }[transform]
    try:
        return float(np.asarray(made(np.float32(x))))
    except Exception as e:      # noqa: BLE001
        return ("raises", type(e).__name__)
