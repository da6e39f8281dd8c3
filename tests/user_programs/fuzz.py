"""Random small programs for differential fuzzing against JAX (silent15r, issue 15): a grammar
draws a program as source text (elementwise ops with broadcasting and weak Python scalars,
reductions, indexing and slicing, reshapes and joins, lax.cond / fori_loop / scan, a Python
`if` on a static shape, a loop over range(k), dtype mixing of float32, float16, int32 and bool,
and corner values: zeros, ties, negatives, large values). `run` executes it under a backend
(`backend("jax")` or `backend("secant")`: the names snp, lax and logsumexp the source reads)
and one of TRANSFORMS; numerics.judge compares the outcomes.

bench/fuzz_oracle.py runs both backends side by side (`--n N --seed S`) and records JAX's
outcomes of the fixed programs (`SEEDS`, `REGRESSIONS`) into fuzz_expected.py, which
tests/test_silent15r_fuzz.py compares secant against (the tests never import jax).
"""
import importlib.util
import itertools
import os
import random
import sys
import tempfile
from types import SimpleNamespace

import numpy as np

TRANSFORMS = ("eager", "jit", "grad", "vmap", "jvp", "vmap_grad", "grad_grad", "jacfwd",
              "jit_grad")

# the fixed programs the tests run (seeds of `generate`): the default profile's and the
# thorough profile's
DEFAULT_SEEDS = range(40)
THOROUGH_SEEDS = range(40, 200)


def backend(name):
    """The names a program reads (snp, lax, logsumexp) and the transforms (sx), of JAX or of
    secant."""
    if name == "jax":
        import jax as sx
        import jax.numpy as snp
        import jax.scipy.special as sp
        from jax import lax, nn
        from jax.scipy.special import logsumexp
    else:
        import secant as sx
        import secant.numpy as snp
        import secant.scipy.special as sp
        from secant import lax, nn
        from secant.scipy.special import logsumexp
    return SimpleNamespace(name=name, sx=sx, snp=snp, lax=lax, logsumexp=logsumexp, nn=nn,
                           sp=sp, tree_util=sx.tree_util)


# ------------------------------------------------------------------------------ the grammar

_FLOATS = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.5, 0.25, 1.5, 1e4, -1e4]
_INTS = [0, 1, -1, 2, -2, 3, 7, -7]
_SHAPES = [(), (3,), (2, 3)]


def _var(name, shape, kind, deps=()):
    return SimpleNamespace(name=name, shape=tuple(shape), kind=kind, deps=frozenset(deps))


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


_UNARY_F = ["snp.sin({a})", "snp.cos({a})", "snp.tanh({a})", "snp.exp({a})", "snp.log1p({a})",
            "snp.expm1({a})", "snp.abs({a})", "snp.sign({a})", "snp.square({a})", "-{a}",
            "{a} ** 2", "{a} ** 3", "{a} ** 0.5", "{a} ** 2.0", "snp.power({a}, 3)",
            "snp.sqrt(snp.abs({a}))", "snp.log1p(snp.abs({a}))", "snp.floor({a})",
            "snp.round({a})", "snp.maximum({a}, 0.0)", "snp.clip({a}, -1.0, 1.0)",
            "snp.clip({a}, 0.0, 2.0)", "snp.where({a} > 0, {a}, 0.0)",
            "snp.where({a} >= 1.0, {a} * 2, -{a})", "{a} * 2", "{a} + 1.5", "2.0 - {a}",
            "{a} / 3", "{a} * True", "1 / (1 + snp.exp(-{a}))", "{a} // 2", "{a} % 1.5",
            "snp.minimum({a}, 1.0)", "snp.abs({a}) ** 1.5"]
_UNARY_I = ["{a} * 2", "{a} + 1", "-{a}", "snp.abs({a})", "snp.sign({a})", "{a} // 2",
            "{a} % 3", "snp.maximum({a}, 0)", "snp.clip({a}, -1, 2)", "{a} ** 2",
            "snp.sin({a})", "{a} * 0.5", "{a} / 2", "snp.square({a})"]
_UNARY_B = ["snp.where({a}, 1.0, -1.0)", "{a} * 2", "{a} + 1.5", "~{a}", "{a} & True",
            "snp.logical_not({a})", "{a}.astype(snp.float32)"]
_BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "snp.maximum({a}, {b})",
           "snp.minimum({a}, {b})", "snp.power({a}, {b})", "snp.logaddexp({a}, {b})",
           "snp.arctan2({a}, {b})", "snp.floor_divide({a}, {b})", "snp.remainder({a}, {b})",
           "{a} // {b}", "{a} % {b}", "snp.where({a} > {b}, {a}, {b})",
           "snp.where({a} >= {b}, {a} * {b}, {a} - {b})", "snp.hypot({a}, {b})",
           "snp.abs({a}) ** {b}", "snp.clip({a}, {b}, 2.0)"]
_BINARY_B = ["{a} + {b}", "{a} * {b}", "snp.maximum({a}, {b})", "snp.minimum({a}, {b})",
             "snp.where({a} > {b}, {a}, {b})", "{a} & {b}", "{a} | {b}", "{a} ^ {b}",
             "{a} != {b}"]
_FLOAT_RESULT = {"/", "power", "logaddexp", "arctan2", "hypot", "** {b}"}
_CASTS = [("snp.float32", "f"), ("snp.float16", "f"), ("snp.int32", "i"), ("bool", "b")]


class Program:
    """A program being drawn: its input variables and statements, each statement one line (or
    a block) defining one variable, the variables it reads recorded (for minimising)."""

    def __init__(self, rng, wide=False):
        self.rng = rng
        self.wide = wide          # the wider grammar (generate's seeds from WIDE)
        self.vars = []
        self.lines = []           # (var, [source lines])

    def pick(self, kinds="fib", ndim_max=3):
        pool = [v for v in self.vars if v.kind in kinds and len(v.shape) <= ndim_max]
        if not pool:
            return None
        weights = [1 + 3 * (i >= len(pool) - 3) + 3 * ("x" in v.deps or v.name == "x")
                   for i, v in enumerate(pool)]
        return self.rng.choices(pool, weights)[0]

    def new(self, shape, kind, deps, lines):
        deps = set(deps).union(*(w.deps for w in self.vars if w.name in deps))
        v = _var(f"v{len(self.lines) + 1}", shape, kind, deps)
        self.lines.append((v, [ln.format(v=v.name) for ln in lines]))
        self.vars.append(v)
        return v


def _kind_of_binary(template, a, b):
    if any(k in template for k in _FLOAT_RESULT) or "f" in (a.kind, b.kind):
        return "f"
    return "i"


def _statement(p):
    rng = p.rng
    r = rng.random()
    a = p.pick()
    if r < 0.30:                                        # elementwise unary / weak scalars
        t = rng.choice({"f": _UNARY_F, "i": _UNARY_I, "b": _UNARY_B}[a.kind])
        e = t.format(a=a.name)
        kind = a.kind
        if a.kind == "i" and any(s in t for s in ("sin", "0.5", "/")):
            kind = "f"
        if a.kind == "b":
            kind = "b" if t in ("~{a}", "{a} & True", "snp.logical_not({a})") else (
                "i" if t == "{a} * 2" else "f")
        return p.new(a.shape, kind, [a.name], [f"{{v}} = {e}"])
    if r < 0.50:                                        # binary, broadcasting
        b = p.pick()
        shape = _broadcast(a.shape, b.shape)
        if shape is None:
            b = _var("1.0", (), "f")
            shape = a.shape
        t = rng.choice(_BINARY)
        if p.wide and a.kind == "b" == b.kind:          # bool with bool: a bool (JAX's and,
            t = rng.choice(_BINARY_B)                   # or, xor), not an int
            return p.new(shape, "b", [a.name] + ([b.name] if b.name[0] in "vxy" else []),
                         [f"{{v}} = {t.format(a=a.name, b=b.name)}"])
        if "b" in (a.kind, b.kind) and not any(s in t for s in ("+", "*", "where")):
            t = "{a} * {b}"
        kind = _kind_of_binary(t, a, b)
        if "b" in (a.kind, b.kind) and t == "{a} * {b}":
            kind = "f" if "f" in (a.kind, b.kind) else "i"
        deps = [a.name] + ([b.name] if b.name[0] in "vxy" else [])
        return p.new(shape, kind, deps, [f"{{v}} = {t.format(a=a.name, b=b.name)}"])
    if r < 0.58:                                        # comparison: a bool
        b = p.pick("fi")
        shape = _broadcast(a.shape, b.shape)
        if a.kind == "b" or shape is None:
            b, shape = _var("0.5", (), "f"), a.shape
            if a.kind == "b":
                return p.new(a.shape, "b", [a.name], [(f"{{v}} = snp.logical_and({a.name}, "
                                                       f"snp.logical_not({a.name}))")])
        op = rng.choice([">", ">=", "<", "==", "!="])
        return p.new(shape, "b", [a.name, b.name] if b.name[0] in "vxy" else [a.name],
                     [f"{{v}} = {a.name} {op} {b.name}"])
    if r < 0.68:                                        # reduction
        a = p.pick("fi") or a
        red = rng.choice(["sum", "mean", "max", "min", "prod", "var", "std", "logsumexp",
                          "sum", "max"])
        axes = [None] + ([0, -1] if a.shape else []) + ([(0, 1)] if len(a.shape) == 2 else [])
        axis = rng.choice(axes)
        keep = rng.random() < 0.3
        fn = "logsumexp" if red == "logsumexp" else f"snp.{red}"
        args = ([] if axis is None else [f"axis={axis}"]) + (["keepdims=True"] if keep else [])
        shape = _reduced(a.shape, axis, keep)
        kind = "f" if red in ("mean", "var", "std", "logsumexp") or a.kind == "f" else "i"
        if rng.random() < 0.3 and red in ("sum", "max", "min", "prod", "mean"):
            e = f"{a.name}.{red}({', '.join(args)})"
        else:
            e = f"{fn}({', '.join([a.name] + args)})"
        return p.new(shape, kind, [a.name], [f"{{v}} = {e}"])
    if r < 0.76:                                        # indexing and slicing
        if not a.shape:
            return p.new((1,), a.kind, [a.name], [f"{{v}} = {a.name}[None]"])
        n = a.shape[0]
        choices = [("[0]", a.shape[1:]), ("[-1]", a.shape[1:]), ("[1:]", (n - 1,) + a.shape[1:]),
                   ("[::-1]", a.shape), ("[:-1]", (n - 1,) + a.shape[1:])]
        if len(a.shape) < 3:
            choices.append(("[None]", (1,) + a.shape))
        if len(a.shape) == 2:
            m = a.shape[1]
            choices += [("[:, 1]", (n,)) if m > 1 else ("[:, 0]", (n,)),
                        ("[1, ::-1]", (m,)) if n > 1 else ("[0, ::-1]", (m,)),
                        ("[..., -1]", (n,)), ("[:, None]", (n, 1, m))]
        ix, shape = rng.choice(choices)
        if 0 in shape:
            ix, shape = "[::-1]", a.shape
        return p.new(shape, a.kind, [a.name], [f"{{v}} = {a.name}{ix}"])
    if r < 0.84:                                        # reshape, transpose, joins
        size = int(np.prod(a.shape))
        choices = [(f"{a.name}.reshape(-1)", (size,)),
                   (f"snp.stack([{a.name}, {a.name} * 2])", (2,) + a.shape),
                   (f"{a.name}.T", a.shape[::-1])]
        if a.shape:
            choices.append((f"snp.concatenate([{a.name}, {a.name}[::-1]])",
                            (2 * a.shape[0],) + a.shape[1:]))
            choices.append((f"snp.concatenate([{a.name}, -{a.name}], axis=-1)",
                            a.shape[:-1] + (2 * a.shape[-1],)))
        if size == 6:
            choices.append((f"{a.name}.reshape(3, 2)", (3, 2)))
            choices.append((f"snp.reshape({a.name}, (2, 3))", (2, 3)))
        if len(a.shape) == 2:
            choices.append((f"snp.transpose({a.name})", a.shape[::-1]))
        if a.kind == "b" or len(a.shape) == 3:
            choices = choices[:1] + choices[2:3]
        e, shape = rng.choice(choices)
        return p.new(shape, a.kind, [a.name], [f"{{v}} = {e}"])
    if r < 0.90:                                        # lax control flow
        a = p.pick("f") or a
        if a.kind != "f":
            return p.new(a.shape, "f", [a.name], [f"{{v}} = {a.name} * 1.0"])
        c = rng.random()
        if c < 0.4:
            pred = rng.choice([f"snp.sum({a.name}) > 0", f"snp.max({a.name}) >= 1.0",
                               f"{a.name}.mean() < 0.5"])
            t, f = rng.sample(["lambda t: t * 2.0", "lambda t: snp.sin(t)", "lambda t: -t",
                               "lambda t: snp.maximum(t, 0.5)", "lambda t: t * t"], 2)
            return p.new(a.shape, "f", [a.name],
                         [f"{{v}} = lax.cond({pred}, {t}, {f}, {a.name})"])
        if c < 0.7 or not a.shape:
            body = rng.choice(["c * 0.5 + snp.sin(c)", "c + i", "snp.maximum(c, i * 0.5)",
                               "c * c * 0.25 + 0.1", "snp.where(c > 0, c, c * 0.1)"])
            k = rng.choice([0, 1, 3])
            return p.new(a.shape, "f", [a.name],
                         [f"{{v}} = lax.fori_loop(0, {k}, lambda i, c: {body}, {a.name})"])
        body = rng.choice(["(c * 0.9 + r, c * r)", "(snp.maximum(c, r), c + r)",
                           "(c + snp.sin(r), snp.tanh(c))", "(c * r, r - c)"])
        take = rng.choice(["{v}, _", "_, {v}"])
        shape = a.shape[1:] if take.startswith("{v}") else a.shape
        return p.new(shape, "f", [a.name],
                     [f"{take} = lax.scan(lambda c, r: {body}, {a.name}[0] * 0.5, {a.name})"])
    if r < 0.95:                                        # Python if on a static value
        cond = rng.choice([f"{a.name}.ndim > 0", f"{a.name}.shape == ()",
                           f"len({a.name}.shape) == 2", f"{a.name}.size > 2"])
        one, other = (rng.sample(["{a} * 2", "{a} - 1", "-{a}", "{a} * {a}"], 2)
                      if a.kind != "b" else ("{a} * 1.0", "{a} * 2.0"))
        kind = "f" if a.kind == "b" else a.kind
        return p.new(a.shape, kind, [a.name],
                     [f"if {cond}:", f"    {{v}} = {one.format(a=a.name)}", "else:",
                      f"    {{v}} = {other.format(a=a.name)}"])
    a = p.pick("fi") or a                               # Python loop over range(k)
    if a.kind == "b":
        return p.new(a.shape, "f", [a.name], [f"{{v}} = {a.name} * 1.5"])
    k = rng.choice([1, 2, 3])
    body = rng.choice(["{v} * 0.5 + snp.cos({v}) * i", "{v} + i", "snp.maximum({v}, i)",
                       "{v} * {v} - i"])
    kind = "f" if "cos" in body else a.kind
    return p.new(a.shape, kind, [a.name],
                 [f"{{v}} = {a.name}", f"for i in range({k}):",
                  f"    {{v}} = {body.format(v='{v}')}"])


# ------------------------------------------------------------------------------ the wider grammar
# (seeds from WIDE, fuzz15s): more of the library people use -- snp.linalg on symmetric
# positive definite matrices built from a variable, fft, scipy.special, nn, cumulative and
# sorting ops, where with broadcasting, integer powers, matmul/einsum/tensordot, pytrees through
# callees -- and the transforms jacrev(jacfwd), vmap(vmap) and hessian besides.

WIDE = 10000
WIDE_TRANSFORMS = ("jacrev_jacfwd", "vmap_vmap", "hessian")

_SPECIAL = ["sp.erf({a})", "sp.gammaln({a})", "sp.expit({a})", "sp.logit(sp.expit({a}))",
            "sp.logit({a})", "sp.erfc({a})", "sp.log_ndtr({a})", "sp.ndtr({a})",
            "sp.gammaln(snp.abs({a}) + 0.5)", "sp.digamma(snp.abs({a}) + 0.5)"]
_NN = ["nn.relu({a})", "nn.gelu({a})", "nn.gelu({a}, approximate=False)", "nn.softplus({a})",
       "nn.silu({a})", "nn.sigmoid({a})", "nn.elu({a})", "nn.leaky_relu({a})",
       "nn.log_sigmoid({a})", "nn.relu6({a})", "nn.hard_tanh({a})"]
_NN_AXIS = ["nn.softmax({a}, axis={ax})", "nn.log_softmax({a}, axis={ax})",
            "nn.standardize({a}, axis={ax})", "sp.logsumexp({a}, axis={ax}, keepdims=True)"]
_IPOW_F = ["{a} ** -1", "{a} ** 4", "{a} ** -2", "snp.power({a}, -2)", "lax.integer_pow({a}, 3)",
           "lax.integer_pow({a}, -1)", "{a} ** 0", "{a} ** 1", "snp.power({a}, 5)",
           "snp.reciprocal({a})", "snp.float_power({a}, 2)"]
_IPOW_I = ["{a} ** 3", "snp.power({a}, 2)", "lax.integer_pow({a}, 2)", "{a} ** 0",
           "{a} ** -1"]

# callees taking pytrees (dicts, tuples, lists): appended to every program's source
HELPERS = '''

def tree_fn(p):
    return p["w"] * snp.sin(p["b"]) + p["b"]


def pair_fn(t):
    a, b = t
    return a * b - b


def dict_loop(d):
    out = 0.0
    for k in sorted(d):
        out = out + d[k] * 0.5
    return out


def nested_fn(p):
    (a, b), c = p["ab"], p["c"]
    return snp.tanh(a) * c[0] + b * c[1]
'''


def _same_shape(p, a, kinds="fi"):
    """A variable of a's shape (other than a, where one is) to pair with a."""
    pool = [v for v in p.vars if v.shape == a.shape and v.kind in kinds and v is not a]
    return p.rng.choice(pool) if pool else None


def _spd(p, a):
    """A symmetric positive definite matrix variable built from float a (well conditioned:
    tanh bounds it)."""
    if len(a.shape) == 1:
        n = a.shape[0]
        e = f"snp.outer(snp.tanh({a.name}), snp.tanh({a.name})) + 2.0 * snp.eye({n})"
    elif len(a.shape) == 2:
        n = a.shape[0]
        e = f"snp.tanh({a.name}) @ snp.tanh({a.name}).T + snp.eye({n})"
    else:
        n = 2
        e = f"snp.array([[2.0, 0.5], [0.5, 1.0]]) * ({a.name} * {a.name} + 1.0)"
    v = p.new((n, n), "f", [a.name], [f"{{v}} = {e}"])
    v.spd = True
    return v


def _linalg(p, a):
    rng = p.rng
    spd = [v for v in p.vars if getattr(v, "spd", False)]
    if not spd or rng.random() < 0.35:
        if rng.random() < 0.3:                  # a norm of any float
            axis = rng.choice([""] + ([", axis=-1"] if a.shape else []) +
                              ([", ord='fro'"] if len(a.shape) == 2 else []) +
                              ([", ord=1"] if len(a.shape) == 1 else []))
            shape = a.shape[:-1] if "axis" in axis else ()
            return p.new(shape, "f", [a.name], [f"{{v}} = snp.linalg.norm({a.name}{axis})"])
        return _spd(p, a)
    m = rng.choice(spd)
    n = m.shape[0]
    ops = [("snp.linalg.det({m})", ()), ("snp.linalg.slogdet({m})[1]", ()),
           ("snp.linalg.slogdet({m})[0]", ()), ("snp.linalg.inv({m})", (n, n)),
           ("snp.linalg.cholesky({m})", (n, n)), ("snp.trace({m})", ()),
           ("snp.linalg.solve({m}, {b})", (n,)), ("snp.linalg.solve({m}, {m} * 0.5)", (n, n)),
           ("snp.linalg.eigvalsh({m})", (n,)), ("snp.linalg.norm({m}, ord=2)", ())]
    t, shape = rng.choice(ops)
    pool = [v for v in p.vars if v.shape == (n,) and v.kind in "fi"]
    b = rng.choice(pool).name if pool else f"{m.name}[0]"
    return p.new(shape, "f", [m.name, b.split("[")[0]], [f"{{v}} = {t.format(m=m.name, b=b)}"])


def _wide_statement(p):
    rng = p.rng
    r = rng.random()
    a = p.pick()
    af = p.pick("f") or a
    if r < 0.45:                                        # the first grammar's statements
        return _statement(p)
    if r < 0.52:
        return _linalg(p, af) if af.kind == "f" else _statement(p)
    if r < 0.56 and af.shape and af.kind == "f":        # fft along the last axis
        n = af.shape[-1]
        t, shape = rng.choice([
            ("snp.fft.fft({a}).real", af.shape), ("snp.fft.fft({a}).imag", af.shape),
            ("snp.fft.ifft({a}).real", af.shape),
            ("snp.fft.rfft({a}).real", af.shape[:-1] + (n // 2 + 1,)),
            ("snp.fft.irfft(snp.fft.rfft({a}), n={n})", af.shape),
            ("snp.abs(snp.fft.rfft({a}))", af.shape[:-1] + (n // 2 + 1,))])
        return p.new(shape, "f", [af.name], [f"{{v}} = {t.format(a=af.name, n=n)}"])
    if r < 0.62:                                        # scipy.special
        if rng.random() < 0.25:
            b = _same_shape(p, a, "fib") or a
            t = rng.choice(["sp.xlogy({a}, {b})", "sp.xlogy({a}, snp.abs({b}))",
                            "sp.xlog1py({a}, snp.abs({b}))", "sp.entr(snp.abs({a}))"])
            e = t.format(a=a.name, b=b.name)
            return p.new(a.shape, "f", [a.name, b.name], [f"{{v}} = {e}"])
        return p.new(a.shape, "f", [a.name], [f"{{v}} = {rng.choice(_SPECIAL).format(a=a.name)}"])
    if r < 0.69:                                        # nn
        if a.shape and rng.random() < 0.4 and a.kind != "b":
            ax = rng.choice([-1, 0])
            t = rng.choice(_NN_AXIS)
            shape = a.shape if "keepdims" not in t else tuple(
                1 if i == ax % len(a.shape) else d for i, d in enumerate(a.shape))
            return p.new(shape, "f", [a.name], [f"{{v}} = {t.format(a=a.name, ax=ax)}"])
        t = rng.choice(_NN)
        kind = "i" if a.kind == "i" and t in ("nn.relu({a})",) else "f"
        if a.kind == "b":
            t, kind = "nn.relu({a} * 1.0)", "f"
        return p.new(a.shape, kind, [a.name], [f"{{v}} = {t.format(a=a.name)}"])
    if r < 0.76 and a.shape and a.kind != "b":          # cumulative, sorting, arg-reductions
        ax = rng.choice([-1, 0])
        n = a.shape[ax]
        ops = [(f"snp.cumsum({{a}}, axis={ax})", a.shape, a.kind),
               (f"snp.cumprod({{a}}, axis={ax})", a.shape, a.kind),
               ("snp.sort({a}, axis=-1)", a.shape, a.kind),
               ("snp.take_along_axis({a}, snp.argsort({a}, axis=-1), axis=-1)", a.shape, a.kind),
               ("snp.take_along_axis({a}, snp.argmax({a}, axis=-1, keepdims=True), axis=-1)",
                a.shape[:-1] + (1,), a.kind),
               (f"snp.argmax({{a}}, axis={ax})", tuple(d for i, d in enumerate(a.shape)
                                                      if i != ax % len(a.shape)), "i"),
               ("snp.argmin({a})", (), "i"),
               ("{a}[snp.argmax({a})]" if len(a.shape) == 1 else "{a}[0, snp.argmin({a}[0])]",
                (), a.kind),
               (f"lax.cummax({{a}}, axis={ax % len(a.shape)})", a.shape, a.kind)]
        if n >= 2:
            ops.append((f"snp.diff({{a}}, axis={ax})", tuple(
                d - 1 if i == ax % len(a.shape) else d for i, d in enumerate(a.shape)), a.kind))
        t, shape, kind = rng.choice(ops)
        return p.new(shape, kind, [a.name], [f"{{v}} = {t.format(a=a.name)}"])
    if r < 0.81:                                        # where with broadcasting
        bools = [v for v in p.vars if v.kind == "b"]
        c = rng.choice(bools).name if bools and rng.random() < 0.6 else f"{a.name} > 0"
        cshape = next((v.shape for v in p.vars if v.name == c), a.shape)
        b = p.pick()
        shape = _broadcast(cshape, a.shape, b.shape)
        if shape is None:
            return _statement(p)
        kinds = {a.kind, b.kind}
        kind = "f" if "f" in kinds else "i" if "i" in kinds else "b"
        other = rng.choice(["{b}", "0.0", "{b} * 2"] if kind != "b" else ["{b}", "False"])
        if other == "0.0" and kind != "f":
            other = "{b}"
        e = f"snp.where({c}, {a.name}, {other.format(b=b.name)})"
        deps = [a.name, b.name] + [c] if c[0] == "v" else [a.name, b.name]
        return p.new(shape, kind, deps, [f"{{v}} = {e}"])
    if r < 0.86 and a.kind != "b":                      # integer powers
        t = rng.choice(_IPOW_F if a.kind == "f" else _IPOW_I)
        kind = "f" if a.kind == "f" or t in ("snp.reciprocal({a})",) else "i"
        return p.new(a.shape, kind, [a.name], [f"{{v}} = {t.format(a=a.name)}"])
    if r < 0.93 and af.shape and af.kind == "f":        # matmul, einsum, tensordot
        b = _same_shape(p, af)
        bn = b.name if b is not None else f"snp.cos({af.name})"
        if len(af.shape) == 1:
            n = af.shape[0]
            ops = [("{a} @ {b}", ()), ("snp.dot({a}, {b})", ()), ('snp.einsum("i,i->", {a}, {b})',
                                                                 ()),
                   ("snp.outer({a}, {b})", (n, n)), ("snp.tensordot({a}, {b}, axes=1)", ()),
                   ('snp.einsum("i,j->ij", {a}, {b})', (n, n)), ("snp.inner({a}, {b})", ()),
                   ("snp.matmul({a}, snp.ones(({n}, 2)))", (2,))]
        elif len(af.shape) == 2:
            m, n = af.shape
            ops = [("{a} @ {b}.T", (m, m)), ("{a}.T @ {b}", (n, n)),
                   ('snp.einsum("ij,ij->i", {a}, {b})', (m,)),
                   ('snp.einsum("ij,kj->ik", {a}, {b})', (m, m)),
                   ("snp.tensordot({a}, {b}, axes=2)", ()),
                   ("snp.tensordot({a}, {b}, axes=([1], [1]))", (m, m)),
                   ("snp.matmul({a}, {b}[0])", (m,)), ('snp.einsum("ij->ji", {a})', (n, m)),
                   ('snp.einsum("ii->", {a} @ {b}.T)', ()), ("snp.vdot({a}, {b})", ())]
        else:
            return _statement(p)
        t, shape = rng.choice(ops)
        deps = [af.name] + ([b.name] if b is not None else [])
        return p.new(shape, "f", deps, [f"{{v}} = {t.format(a=af.name, b=bn, n=af.shape[0])}"])
    # pytrees through callees and tree_util
    b = p.pick("f") or a
    shape = _broadcast(a.shape, b.shape)
    if shape is None or a.kind == "b" or b.kind == "b":
        return _statement(p)
    kind = "f" if "f" in (a.kind, b.kind) else "i"
    t = rng.choice([('tree_fn({{"w": {a}, "b": {b}}})', "f"), ("pair_fn(({a}, {b}))", kind),
                    ("pair_fn([{b}, {a}])", kind),
                    ('dict_loop({{"u": {a}, "t": {b}}})', "f"),
                    ('nested_fn({{"ab": ({a}, {b}), "c": (2.0, -1.0)}})', "f"),
                    ('tree_util.tree_map(lambda u: u * 2.0, {{"a": {a}, "b": {b}}})["b"]', "f"),
                    ('sum(tree_util.tree_leaves({{"p": {a}, "q": ({b}, {a} * 0.5)}}))', "f")])
    e, kind = t[0].format(a=a.name, b=b.name), t[1]
    if "tree_map" in e:
        shape = b.shape
    e = e.replace("{", "{{").replace("}", "}}")        # (p.new formats the line)
    return p.new(shape, kind, [a.name, b.name], [f"{{v}} = {e}"])


# ------------------------------------------------------------------------------ the third grammar
# (seeds from IDIOM, fuzz15v): the idioms of JAX code written by others -- pytrees of parameters
# (dicts of dicts, lists of tuples, namedtuples) through helpers that call helpers, methods and
# callable objects, functools.partial, getattr(snp, name), lambdas beside lambdas, decorators,
# early returns, comprehensions, .at[] updates, lax.scan / fori_loop / while_loop / cond /
# switch with tuple carries -- under deeper compositions (IDIOM_TRANSFORMS: grad of grad up to
# the fourth, jacfwd(jacrev), vmap of vmap with in_axes / out_axes, jit of those, linearize,
# vjp with a dict cotangent), each program under a sample of them (`applicable`).

IDIOM = 20000
IDIOM_TRANSFORMS = ("grad3", "grad4", "jacfwd_jacrev", "vmap_axes", "jit_vmap_axes",
                    "jit_hessian", "jit_vmap_grad", "jit_jacfwd_jacrev", "linearize", "vjp_dict")

# callees of the third grammar: appended to its programs' source after HELPERS
IDIOM_HELPERS = '''

import functools  # noqa: E402
from typing import NamedTuple  # noqa: E402


class Pair(NamedTuple):
    w: object
    b: object


def dense(p, h):
    return snp.tanh(h * p["w"] + p["b"])


def mlp(params, h):
    for layer in params["layers"]:
        h = dense(layer, h)
    return h * params["scale"]


def pair_apply(pr, h):
    return h * pr.w + pr.b


def tuple_list(ps, h):
    out = h
    for w, b in ps:
        out = out * w - b
    return out


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, h):
        return h * self.k

    def apply(self, h, b):
        return self(h) + snp.sin(b)


def twice(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return fn(*a, **kw) * 2.0
    return wrapper


@twice
def decorated(h):
    return snp.cos(h) + h


def early(h):
    if h.ndim == 0:
        return h * 3.0
    return h - snp.mean(h)


def scaled_sum(h, k=1.0, shift=0.0):
    return h * k + shift


def by_name(name, h):
    return getattr(snp, name)(h)
'''


def _esc(e):
    """e with its braces doubled (p.new formats its lines)."""
    return e.replace("{", "{{").replace("}", "}}")


def _idiom_statement(p):
    rng = p.rng
    r = rng.random()
    a = p.pick()
    af = p.pick("f") or a
    if r < 0.40:                                        # the wider grammar's statements
        return _wide_statement(p)
    b = p.pick("f") or af
    shape = _broadcast(af.shape, b.shape)
    if shape is None:
        b, shape = af, af.shape
    fl = af.kind == "f"
    deps = [af.name, b.name]
    if r < 0.52 and fl:                                 # pytrees of parameters through helpers
        t, sh = rng.choice([
            (('mlp({{"layers": [{{"w": {a}, "b": 0.5}}, {{"w": 1.5, "b": {b}}}], '
              '"scale": 2.0}}, {a})'), shape),
            ('mlp({{"layers": [], "scale": {b}}}, {a})', shape),
            ("pair_apply(Pair({a}, {b}), {a})", shape),
            ("pair_apply(Pair(w=2.0, b={b}), {a})", shape),
            ("tuple_list([({a}, 0.5), (2.0, {b})], {a})", shape),
            (('tree_util.tree_reduce(lambda s, u: s + snp.sum(u), {{"p": {{"q": {a}}}, '
              '"r": [{b}, ({a}, 1.0)]}}, 0.0)'), ()),
            ('sum(u.sum() for u in tree_util.tree_leaves(Pair({a}, {{"k": {b}}})))', ())])
        return p.new(sh, "f", deps, ["{v} = " + _esc(t.format(a=af.name, b=b.name))])
    if r < 0.62:                                        # callables: methods, partial, getattr
        if a.kind == "b":
            return p.new(a.shape, "f", [a.name], [f"{{v}} = {a.name} * 1.0"])
        ops = [("Scale(2.0)({a})", a.shape, "f"), ("Scale({b}).apply({a}, {b})", shape, "f"),
               ("Scale(0.5)(Scale({a})({a}))", a.shape, "f"),
               ("functools.partial(scaled_sum, k=2.0)({a})", a.shape, "f"),
               ("functools.partial(scaled_sum, shift={b})({a}, k=0.5)", shape, "f"),
               ('getattr(snp, "sin")({a})', a.shape, "f"),
               ('by_name("tanh", {a}) + by_name("abs", {a})', a.shape, "f"),
               ("decorated({a})", a.shape, "f"), ("early({a})", a.shape, "f"),
               ("(lambda u: u * 2.0)({a}) + (lambda u: snp.sin(u))({b})", shape, "f"),
               ("snp.maximum(*(lambda u, w: (u, w * 2.0))({a}, {b}))", shape, "f"),
               ("sorted([{a}, {a} * 2.0], key=lambda u: 0)[1]", a.shape, "f")]
        t, sh, kind = rng.choice(ops)
        if "{b}" in t and _broadcast(a.shape, b.shape) is None:
            t, sh, kind = ops[0]
        sh = _broadcast(a.shape, b.shape) if "{b}" in t else sh
        return p.new(sh, kind, [a.name] + [b.name] * ("{b}" in t),
                     ["{v} = " + _esc(t.format(a=a.name, b=b.name))])
    if r < 0.70:                                        # comprehensions, two-lambda lines
        if a.kind == "b":
            return p.new(a.shape, "i", [a.name], [f"{{v}} = {a.name} * 3"])
        ops = [("sum([{a} * i for i in range(3)])", a.shape, a.kind),
               ('sum(u for u in {{k: {a} * j for j, k in enumerate("pq")}}.values())', a.shape,
                a.kind),
               ("snp.stack([u * 2.0 for u in ({a}, {a} + 1.0)], axis=-1)", a.shape + (2,), "f"),
               ("[snp.sin(u) for u in [{a}, {a} * 0.5] if u.ndim >= 0][-1]", a.shape, "f")]
        if a.shape:
            n = a.shape[0]
            ops += [(f"snp.stack([snp.sin({{a}}[i]) * i for i in range({n})])", a.shape, "f"),
                    ("snp.array([r.sum() for r in {a}])", (n,), a.kind)]
        if a.kind == "f":
            ops.append(("(lambda u: u * u)({a}) - (lambda u: u * u * u)({a}) / 4", a.shape, "f"))
        t, sh, kind = rng.choice(ops)
        return p.new(sh, kind, [a.name], ["{v} = " + _esc(t.format(a=a.name))])
    if r < 0.80:                                        # .at[] updates
        if not a.shape:
            return p.new((1,), a.kind, [a.name], [f"{{v}} = {a.name}[None]"])
        if a.kind == "b":
            return p.new(a.shape, "b", [a.name], [f"{{v}} = {a.name}.at[0].set(True)"])
        val = "1.5" if a.kind == "f" else "2"
        ops = [f"{{a}}.at[0].set({val})", f"{{a}}.at[-1].add({val})", "{a}.at[1:].multiply(2)",
               "{a}.at[::-1].get()", "{a}.at[0].set({a}[-1])", f"{{a}}.at[:1].add({val}) * 2",
               f"{{a}}.at[0].max({val})", f"{{a}}.at[-1].min({val})",
               f"{{a}}.at[snp.argmax({{a}}.reshape(-1)) % {a.shape[0]}].set(0)",
               f"{{a}}.at[5].get(mode='fill', fill_value={val}) + {{a}}",
               "{a}.at[0].add({a}[1]) if {a}.shape[0] > 1 else {a}"]
        if a.kind == "f":
            ops += ["{a}.at[0].divide(4.0)", "{a}.at[0].power(2)"]
        if len(a.shape) == 2:
            ops += [f"{{a}}.at[:, 0].add({val})", "{a}.at[0, ::2].set({a}[-1, ::2] * 2)",
                    "{a}.at[..., -1].multiply({a}[..., 0])"]
        if af is not a and af.shape == a.shape[1:] and a.kind == "f":
            ops.append(f"{{a}}.at[0].add({af.name})")
        t = rng.choice(ops)
        deps = [a.name] + [af.name] * (f".add({af.name})" in t)
        return p.new(a.shape, a.kind, deps, ["{v} = " + _esc(t.format(a=a.name))])
    if r < 0.94 and fl:                                 # lax control flow, tuple carries
        a = af
        c = rng.random()
        if c < 0.2:
            body = rng.choice(["(c[0] * 0.5 + c[1], c[1] * 0.9)",
                               "(snp.sin(c[0]) + i, c[1] + c[0].sum() * 0.1)",
                               "(c[0] * c[1], snp.tanh(c[1]))"])
            k = rng.choice([0, 2, 3])
            e = (f"lax.fori_loop(0, {k}, lambda i, c: {body}, ({a.name}, "
                 f"snp.sum({a.name}) * 0.5))[{rng.choice([0, 1])}]")
            sh = a.shape if e.endswith("[0]") else ()
            return p.new(sh, "f", [a.name], ["{v} = " + _esc(e)])
        if c < 0.35:
            body = rng.choice(["(c[0] * 0.5 + 1.0, c[1] + 1)", "(snp.sin(c[0]), c[1] + 2)"])
            e = (f"lax.while_loop(lambda c: c[1] < {rng.choice([0, 3])}, lambda c: {body}, "
                 f"({a.name}, 0))[0]")
            return p.new(a.shape, "f", [a.name], ["{v} = " + _esc(e)])
        if c < 0.5:
            pred = rng.choice([f"snp.sum({a.name}) > 0", f"{a.name}.max() >= 1.0"])
            e = (f"lax.cond({pred}, lambda t: (t[0] * 2.0, t[1]), lambda t: (t[1] * 1.0, "
                 f"snp.cos(t[0])), ({a.name}, snp.sin({a.name})))[{rng.choice([0, 1])}]")
            return p.new(a.shape, "f", [a.name], ["{v} = " + _esc(e)])
        if c < 0.7:
            idx = rng.choice([f"(snp.sum({a.name}) > 0).astype(snp.int32) * 2",
                              f"snp.argmax({a.name}.reshape(-1)) + 1",
                              "y.reshape(-1)[0].astype(snp.int32)" if p.vars[1].kind != "f"
                              else f"snp.argmin({a.name}.reshape(-1)) - 1"])
            e = (f"lax.switch({idx}, [lambda u: u * 2.0, lambda u: snp.sin(u), "
                 f"lambda u: -u + 1.0], {a.name})")
            return p.new(a.shape, "f", [a.name], ["{v} = " + _esc(e)])
        if a.shape:
            take = rng.choice(["[1]", "[0][0]", "[0][1]"])
            e = (f"lax.scan(lambda c, r: ((c[0] + r, c[1] * 0.5 + snp.sin(r)), c[0] * r), "
                 f"({a.name}[0] * 0.0, {a.name}[0]), {a.name}){take}")
            return p.new(a.shape if take == "[1]" else a.shape[1:], "f", [a.name],
                         ["{v} = " + _esc(e)])
        e = f"lax.scan(lambda c, _: (c * 0.9 + 0.1, c * c), {a.name}, None, length=3)[1]"
        return p.new((3,) + a.shape, "f", [a.name], ["{v} = " + _esc(e)])
    if r < 0.993:                                       # augmented assignment
        if a.kind == "b":
            return p.new(a.shape, "b", [a.name], [f"{{v}} = {a.name} | False"])
        sh = _broadcast(a.shape, b.shape)
        if sh is None or sh != a.shape:
            return p.new(a.shape, a.kind, [a.name], [f"{{v}} = {a.name} * 1", "{v} *= 2"])
        kind = "f" if "f" in (a.kind, b.kind) else a.kind
        if kind != a.kind:
            return p.new(a.shape, "f", [a.name, b.name],
                         [f"{{v}} = {a.name} * 1.0", f"{{v}} += {b.name}"])
        return p.new(a.shape, a.kind, [a.name, b.name],
                     [f"{{v}} = {a.name} + 0", f"{{v}} -= {b.name}"])
    # in-place item assignment: JAX refuses it (its arrays are immutable), rarely drawn
    return p.new(a.shape or (1,), a.kind, [a.name],
                 [f"{{v}} = {a.name}.reshape(-1)", "{v}[0] += 1"])


def _reduced(shape, axis, keep):
    if axis is None:
        return tuple(1 for _ in shape) if keep else ()
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(1 if i in axes else d for i, d in enumerate(shape)
                 if keep or i not in axes)


def _input(rng, name, kinds):
    shape = rng.choice(_SHAPES)
    dtype = rng.choice(kinds)
    n = int(np.prod(shape))
    if dtype in ("float32", "float16"):
        pool = _FLOATS if dtype == "float32" else [v for v in _FLOATS if abs(v) < 1e4] + [300.0]
        values = [rng.choice(pool) for _ in range(n)]
    elif dtype == "int32":
        values = [rng.choice(_INTS) for _ in range(n)]
    else:
        values = [rng.random() < 0.5 for _ in range(n)]
    kind = "f" if dtype.startswith("float") else "i" if dtype == "int32" else "b"
    return (values, dtype, shape), _var(name, shape, kind)


def generate(seed):
    """(source, args) of random program `seed`: source defines f(x, y) and g(x, y) =
    snp.sum(f(x, y)); args are ((values, dtype, shape), ...) for `arrays`. Seeds from WIDE
    draw from the wider grammar."""
    rng = random.Random(seed)
    p = Program(rng, wide=seed >= WIDE)
    statement = (_idiom_statement if seed >= IDIOM else _wide_statement if p.wide
                 else _statement)
    xa, xv = _input(rng, "x", ["float32"] * 4 + ["float16"])
    ya, yv = _input(rng, "y", ["float32", "float32", "int32", "bool", "float16"])
    p.vars = [xv, yv]
    first = True
    for _ in range(rng.randint(1, 5) + p.wide + (seed >= IDIOM)):
        while True:
            v = statement(p)
            if not first or "x" in v.deps:
                break
            for w in p.vars[p.vars.index(v):]:    # the first statement reads x (a gradient
                p.vars.remove(w)                  # to follow; a matrix it built dropped too)
                p.lines.pop()
        first = False
    last = [v for v in p.vars if "x" in v.deps][-1]      # the last that reads x
    ret = last.name + (" * 1.0" if last.kind != "f" and rng.random() < 0.7 else "")
    return source([ln for _, lns in p.lines for ln in lns], ret, seed >= IDIOM), (xa, ya)


def source(lines, ret, idiom=False):
    """f's source of `lines` returning `ret`, g, and the helpers (the third grammar's too)."""
    return ("def f(x, y):\n" + "".join(f"    {ln}\n" for ln in lines) + f"    return {ret}\n"
            "\n\ndef g(x, y):\n    return snp.sum(f(x, y))\n" + HELPERS +
            (IDIOM_HELPERS if idiom else ""))


def statements(src):
    """The statements of f in `src` (a block with its indented lines) and its return
    expression: what `minimise` drops from."""
    body = src.split("def f(x, y):\n", 1)[1].split("\n\n\ndef g", 1)[0].splitlines()
    ret = body.pop()[len("    return "):]
    out = []
    for ln in body:
        ln = ln[4:]
        if ln.startswith((" ", "else:")):
            out[-1] += "\n" + ln
        else:
            out.append(ln)
    return out, ret


# ------------------------------------------------------------------------------ running

def arrays(B, args):
    return tuple(B.snp.asarray(np.array(values, dtype).reshape(shape))
                 for values, dtype, shape in args)


def _other(a):
    """A second row for a vmap batch: a's values rolled (negated when a is a scalar)"""
    a = np.asarray(a)
    if a.ndim == 0:
        return ~a if a.dtype == bool else -a
    return np.roll(a.ravel(), 1).reshape(a.shape)


def batch(B, args):
    return tuple(B.snp.stack([B.snp.asarray(a), B.snp.asarray(_other(a))]) for a in args)


def tangents(B, args):
    def one(a):
        if np.issubdtype(np.asarray(a).dtype, np.inexact):
            return B.snp.ones_like(a)
        return np.zeros(np.shape(a), B.sx.dtypes.float0)
    return tuple(one(a) for a in args)


_DIR = tempfile.mkdtemp(prefix="secant_fuzz_")
_count = itertools.count()


def load(B, src):
    """The module of `src` (imported from a file, so secant reads real source) with B's names
    bound."""
    name = f"fuzz_program_{os.getpid()}_{next(_count)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.snp, mod.lax, mod.logsumexp = B.snp, B.lax, B.logsumexp
    mod.nn, mod.sp, mod.tree_util = B.nn, B.sp, B.tree_util
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def apply(B, mod, args, t):
    """Program `mod` under transform `t` on `args` (raises what the transform raises)."""
    sx, f, g = B.sx, mod.f, mod.g
    xs = arrays(B, args)
    xs2 = (batch(B, batch(B, xs))[0], batch(B, xs)[1])
    return {"eager": lambda: f(*xs),
            "jit": lambda: sx.jit(f)(*xs),
            "grad": lambda: sx.grad(g)(*xs),
            "vmap": lambda: sx.vmap(f)(*batch(B, xs)),
            "jvp": lambda: sx.jvp(f, xs, tangents(B, xs)),
            "vmap_grad": lambda: sx.vmap(sx.grad(g))(*batch(B, xs)),
            "grad_grad": lambda: sx.grad(sx.grad(g))(*xs),
            "jacfwd": lambda: sx.jacfwd(f)(*xs),
            "jit_grad": lambda: sx.jit(sx.grad(g))(*xs),
            "jacrev_jacfwd": lambda: sx.jacrev(sx.jacfwd(f))(*xs),
            "vmap_vmap": lambda: sx.vmap(sx.vmap(f))(*batch(B, batch(B, xs))),
            "hessian": lambda: sx.hessian(g)(*xs),
            "grad3": lambda: sx.grad(_summed_grads(sx, g, 2))(*xs),
            "grad4": lambda: sx.grad(_summed_grads(sx, g, 3))(*xs),
            "jacfwd_jacrev": lambda: sx.jacfwd(sx.jacrev(f))(*xs),
            "vmap_axes": lambda: _vmap_axes(B, f)(*xs2),
            "jit_vmap_axes": lambda: sx.jit(_vmap_axes(B, f))(*xs2),
            "jit_hessian": lambda: sx.jit(sx.hessian(g))(*xs),
            "jit_vmap_grad": lambda: sx.jit(sx.vmap(sx.grad(g)))(*batch(B, xs)),
            "jit_jacfwd_jacrev": lambda: sx.jit(sx.jacfwd(sx.jacrev(f)))(*xs),
            "linearize": lambda: _linearized(B, f, xs),
            "vjp_dict": lambda: _vjp_dict(B, f, xs)}[t]()


def _summed_grads(sx, g, k):
    """g's gradient k times over, each summed to a scalar (grad of it is a k+1-th derivative)."""
    if k == 0:
        return g
    inner = _summed_grads(sx, g, k - 1)
    return lambda x, y: sx.numpy.sum(sx.grad(inner)(x, y))


def _vmap_axes(B, f):
    """vmap of vmap with in_axes and out_axes: x batched twice (the outer along axis 1), y
    once (the inner holds it unbatched), the outer batch axis last in the output."""
    return B.sx.vmap(B.sx.vmap(f, in_axes=(0, None)), in_axes=(1, 0), out_axes=-1)


def _linearized(B, f, xs):
    """linearize in x (y held): the primal output and the linear map at ones."""
    x, y = xs
    out, lin = B.sx.linearize(lambda x: f(x, y), x)
    return out, lin(B.snp.ones_like(x))


def _vjp_dict(B, f, xs):
    """vjp of a dict output (a dict inside a dict) with a dict cotangent (float0 where an
    output is an integer or a bool)."""
    def h(x, y):
        out = f(x, y)
        return {"f": out, "more": {"twice": out * 2}}
    out, pull = B.sx.vjp(h, *xs)

    def ct(o, c):
        if B.snp.issubdtype(o.dtype, B.snp.inexact):
            return B.snp.full_like(o, c)
        return np.zeros(np.shape(o), B.sx.dtypes.float0)
    return (out["f"],) + tuple(pull({"f": ct(out["f"], 1.0),
                                     "more": {"twice": ct(out["more"]["twice"], 0.5)}}))


def outcomes(B, src, args, transforms=None):
    """{transform: ("value", leaves) or ("raises", classes)} of program `src` under each of
    `transforms` (its applicable ones by default), in numerics.judge's form."""
    from user_programs import numerics
    mod = load(B, src)
    return {t: numerics.recorded(lambda t=t: apply(B, mod, args, t))
            for t in transforms or applicable(args)}


def applicable(args, key=None):
    """The transforms program `key` (a seed or a regression's name) with `args` runs under: the
    wider grammar's seeds and the regressions also under WIDE_TRANSFORMS."""
    wide = isinstance(key, str) or isinstance(key, int) and key >= WIDE
    idiom = isinstance(key, int) and key >= IDIOM or key in IDIOM_REGRESSIONS
    ts = [t for t in TRANSFORMS + (WIDE_TRANSFORMS if wide else ()) + (
        IDIOM_TRANSFORMS if idiom else ()) if t != "grad_grad" or tuple(args[0][2]) == ()]
    if isinstance(key, int) and key >= IDIOM:          # a sample (each program a different one)
        rest = random.Random(key).sample(ts[4:], 8)
        ts = [t for t in ts if t in ts[:4] or t in rest]
    return ts


def _f32(*values, dtype="float32"):
    return (list(values), dtype, () if len(values) == 1 else (len(values),))


# the regressions run under IDIOM_TRANSFORMS too (found by the third grammar)
IDIOM_REGRESSIONS = {"at_divide_and_power", "bool_product_of_a_nan_cotangent",
                     "unread_carry_of_a_loop_overflows"}

# programs the fuzzer found secant differing from JAX on (minimised), each with a named test in
# tests/test_silent15r_fuzz.py: name -> (source, args)
REGRESSIONS = {
    # grad of a callee's bool output gave 0.0 (the unread seed's check dropped as dead code);
    # jvp's tangent of a bool output was a bool, JAX's float0
    "bool_output_of_a_callee": (source(["v1 = x // x"], "v1 == v1"),
                                (_f32(0.5), _f32(3.0))),
    # jvp of var along a shift (tangent ones) was 1 - 3e-4, not 1: <a - mean(a), t> kept the
    # rounding of centring large values; JAX centres t too (exactly 0)
    "var_tangent_of_a_shift": (source(["v2 = snp.var(y, axis=(0, 1))"], "x + v2"),
                               (_f32(1.5, 3.0, -1.0),
                                ([1.0, -1e4, -1.0, -1.0, -2.0, -1e4], "float32", (2, 3)))),
    # grad(grad) of log1p at -1 was nan, JAX's -inf: unreduce(seed, f_out)'s zero cotangent
    # for f_out (read for its shape) went through log1p's rule, 0 / (1 + x) = 0 / 0
    "log1p_second_derivative_at_minus_one": (source(["v1 = snp.log1p(x)"], "v1"),
                                             (_f32(-1.0), ([False, True, True], "bool", (3,)))),
    # vmap(grad) of x * x * 1e-3 in float16 overflowed past 32752 (2 * x * g), JAX's
    # g * x + x * g does not
    "float16_square_scaled": (source([], "x * x * 1e-3"),
                              (_f32(300.0, 60000.0, dtype="float16"), _f32(1.0))),
    # jvp of a max along an axis was nan where an element not chosen had a nan tangent
    # (0 ** 0's): tangent * hits multiplied it in; JAX's jit selects
    "max_ignores_a_nan_tangent_not_chosen": (
        source(["v1 = snp.abs(x) ** x"], "snp.max(v1, axis=-1)"),
        (([1.5, 1.5, 0.0, -1.0, 1e4, 1.5], "float32", (2, 3)), _f32(1.0))),
    # jacfwd of where(x > y, x, y), x float16, y float32 was float16 (the tangent
    # where(c, x_dot, 0) kept x's dtype), JAX's float32 (fuzz15s)
    "where_tangent_of_a_wider_operand": (source([], "snp.where(x > y, x, y)"),
                                         (_f32(1.0, dtype="float16"),
                                          _f32(-1e4, 1e4, -0.5))),
    # jit(grad) of a Python loop whose value goes from int32 to float32 was refused
    # (CarryChanged, seed 105); JAX unrolls it
    **{f"python_loop_int_carry_becomes_float_{k}": (
        source(["v3 = x[:-1]", "v4 = y", "for i in range(2):",
                "    v4 = v4 * 0.5 + snp.cos(v4) * i"], ret),
        (([0.25, -1e4, 1.0, 0.0, -0.5, -3.5], "float32", (2, 3)),
         ([-2, -1, 3, -1, -1, 1], "int32", (2, 3)))) for k, ret in (("unread", "v3"),
                                                                    ("read", "v4 * x"))},
    # hessian (jacfwd of grad) of sum(gammaln(x)) at its pole x = 0 was nan on the diagonal,
    # JAX's inf (polygamma(1, 0)): the seed's unreduce(seed, out) passed out's tangent, read for
    # its shape only, and its zero times digamma(0) = nan (fuzz15s, seed 10359)
    "hessian_of_gammaln_at_its_pole": (source([], "sp.gammaln(x)"),
                                       (_f32(-3.5, 0.0, 1.0), _f32(0.0, 3.0, 0.0))),
    # not fixed (strict known): x[0, snp.argmin(x[0])], a static and a traced index, under
    # vmap(grad) is refused (an IndexExpression converted to an array) and under vmap(vmap) an
    # internal ValueError (batching/helpers.py align) (fuzz15s, seed 10357)
    "index_at_an_argmin": (source([], "x[0, snp.argmin(x[0])]"),
                           (([-0.5, 300.0, 0.25, 2.0, 0.5, 300.0], "float32", (2, 3)),
                            _f32(1.0))),
    # the hessian of sum(cumprod(x)) at x = [1.5, 0, 0.5] was [[0, 0, 0], [1.5, 0, 1.5],
    # [0, 0, 0]], JAX's (and the closed form's) [[0, 1.5, 0], [1.5, 0, 1.5], [0, 1.5, 0]]:
    # cumprod's rules replaced the first zero by 1.0, so their own derivatives lost that element
    # (fuzz15s, seed 10045); they are now linear recurrences of products and sums
    "cumprod_second_derivative_at_a_zero": (source([], "snp.cumprod(x, axis=0)"),
                                            (_f32(1.5, 0.0, 0.5), _f32(1.0))),
    # JAX refuses a float16 (or bfloat16) input to rfft (XLA's RFFT: ValueError) and to ndtr,
    # log_ndtr and ndtri (float32 and float64 only, integers refused too: TypeError); secant
    # computed them (fuzz15t, seeds 10350 and 10354)
    "rfft_of_float16": (source([], "snp.fft.irfft(snp.fft.rfft(x), n=3)"),
                        (_f32(-3.5, 300.0, 2.0, dtype="float16"), _f32(1.0))),
    "ndtr_of_float16": (source(["v1 = snp.where(y > 0, y, 0.0)"], "sp.ndtr(v1) * x"),
                        (_f32(0.5, -1.0, 2.0), _f32(1.5, -0.5, 3.0, dtype="float16"))),
    # an integer raised to a negative power in a statement nothing reads: JAX raises its
    # TypeError under every transform (it traces the statement); secant's generated jvp and
    # vmap dropped it as dead code and gave the value (fuzz seed 10325); a check of the base's
    # dtype now stands in its place
    "dead_integer_negative_power": (source(["v1 = y ** -1"], "x * 2"),
                                    (_f32(1.5, -0.5, 2.0), ([3, -1, 2], "int32", (3,)))),
    # x.at[i].divide(v) and .power(v) under any derivative were refused (SourceError: "the
    # derivative of .at[...].divide() is not supported yet"); JAX's x / ones.at[i].mul(v)
    # (fuzz15v, seed 20013)
    "at_divide_and_power": (source(["v1 = x.at[0].divide(4.0)", "v2 = v1.at[1:].power(2)"],
                                   "v2 * y", idiom=True),
                            (_f32(1.5, -2.0, 0.5), _f32(3.0))),
    # not fixed (strict known): grad through b * c (b a bool) where c's cotangent is inf: JAX
    # transposes the product as ct * float(b) (0 * inf = nan), secant as b * ct, a select
    # like JAX's own primal b * inf (0) (fuzz15v, seed 11016)
    "bool_product_of_a_nan_cotangent": (source(["v1 = snp.remainder(x, (y > 0) * x)"], "v1",
                                               idiom=True),
                                        (_f32(0.5), _f32(1.0, -1.0))),
    # not fixed (strict known): the derivative of a fori_loop's second carry, where the first
    # (unread, and not read by the second) overflows to inf: nan (the reverse pass multiplies
    # its zero cotangent by inf, 0 * inf), JAX 0 (its loop drops the unread carry; the float64
    # derivative is 0: tanh saturates) (fuzz15v, seed 20030)
    "unread_carry_of_a_loop_overflows": (
        source([("v1 = lax.fori_loop(0, 2, lambda i, c: (c[0] * c[1], snp.tanh(c[1])), "
                 "(x, snp.sum(x) * 0.5))[1]")], "v1", idiom=True),
        (_f32(3e38, 2.0), _f32(1.0))),
    # not fixed (strict known): jacrev(jacfwd) of remainder(y, 2 * maximum(x, y)) where one
    # element is remainder(0, 0) = nan: the second derivatives in that element of x are nan
    # for every output element, JAX's 0 where the output does not depend on it (fuzz15v,
    # seed 11077)
    "remainder_by_zero_leaks_in_jacrev_jacfwd": (
        source(["v1 = snp.maximum(x, y)", "v2 = v1 * 2"], "snp.remainder(y, v2)"),
        (([1.0, 0.25, 1.0, 1e4, -2.0, 0.25], "float32", (2, 3)),
         ([-2, 1, -2, 7, 0, 2], "int32", (2, 3)))),
}
