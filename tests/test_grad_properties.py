"""Property tests for reverse mode: for random straight-line programs over random shapes,
written out as Python *source* (the transform reads source from disk), `secant.grad` agrees with
central finite differences computed in float64, eagerly and under `secant.jit`; higher-order
derivatives of scalar functions agree with closed forms.

Each program is generated as text, written to a module in a temporary folder, imported, and
differentiated. The finite differences come from a NumPy interpreter of the same program (not
from secant), so a bug in secant's forward ops cannot hide a bug in its derivatives.
"""
import importlib.util
import itertools
import math
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import assume, given, note, strategies as st

import secant

_TMP = None
_COUNTER = itertools.count()


def setup_module():
    global _TMP
    _TMP = tempfile.mkdtemp(prefix="secant_grad_props_")


def teardown_module():
    shutil.rmtree(_TMP, ignore_errors=True)


def load(source, name="f"):
    """Write `source` to a fresh module file, import it and return its function `name`."""
    path = f"{_TMP}/prog_{next(_COUNTER)}.py"
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(f"secant_prop_{next(_COUNTER)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


class enable_x64:
    """64-bit types for the body of a hypothesis test (function-scoped fixtures and @given do
    not mix, so this is the tests/conftest.py `x64` fixture as a context manager)."""

    def __enter__(self):
        secant.config.update("enable_x64", True)

    def __exit__(self, *exc):
        secant.config.update("enable_x64", False)


def _logistic(x):
    return 1 / (1 + np.exp(-x))


# --- the op vocabulary: (source spellings, NumPy reference) -----------------------------------
# `{m}` is the module prefix the program uses for its calls (`snp` or plain `np`: both resolve to
# the same primitives). Several spellings per op exercise normalisation (operators, methods,
# nested calls on one line).
UNARY = {
    "sin": (["{m}.sin({a})"], np.sin),
    "tanh": (["{m}.tanh({a})"], np.tanh),
    "exp_tanh": (["{m}.exp({m}.tanh({a}))"], lambda a: np.exp(np.tanh(a))),
    "logistic": (["lax.logistic({a})"], _logistic),
    "square": (["{m}.square({a})", "{a} * {a}", "{a} ** 2"], np.square),
    "neg": (["-{a}", "{m}.negative({a})"], np.negative),
    "cube": (["{a} ** 3", "{m}.power({a}, 3)"], lambda a: a ** 3),
}
BINARY = {
    "add": (["{a} + {b}", "{m}.add({a}, {b})"], np.add),
    "sub": (["{a} - {b}", "{m}.subtract({a}, {b})"], np.subtract),
    "mul": (["{a} * {b}", "{m}.multiply({a}, {b})"], np.multiply),
    "maximum": (["{m}.maximum({a}, {b})"], np.maximum),
    "scaled": (["0.5 * {a} + {b}", "{a} - 2.0 * {b}"], None),  # literal numbers mixed in
}
REDUCE = {
    "sum": (["{m}.sum({a}{kw})", "{a}.sum({kwm})"], np.sum),
    "mean": (["{m}.mean({a}{kw})", "{a}.mean({kwm})"], np.mean),
}
MATMUL = ["{a} @ {b}", "{m}.matmul({a}, {b})"]


def _broadcastable(*shapes):
    try:
        np.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def _matmul_shape(sa, sb):
    """Shape of a @ b for NumPy's matmul (both at least 1-D), or None if incompatible."""
    if not sa or not sb:
        return None
    a2 = sa if len(sa) > 1 else (1,) + sa
    b2 = sb if len(sb) > 1 else sb + (1,)
    if a2[-1] != b2[-2] or not _broadcastable(a2[:-2], b2[:-2]):
        return None
    out = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return out


@st.composite
def programs(draw, max_ndim=3):
    """A random straight-line program: inputs x, y (broadcastable) and w (square, for matmul),
    then steps whose operands are chosen among the values already defined, by tracked shape.

    Returns (source text, numpy interpreter, input shapes)."""
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    k = draw(st.integers(0, ndim))
    shape_y = tuple(d if draw(st.booleans()) else 1 for d in shape[k:])
    d = shape[-1] if shape else draw(st.integers(1, 3))
    shapes = {"x": shape, "y": shape_y, "w": (d, d)}
    m = draw(st.sampled_from(["snp", "np"]))

    names, vals = ["x", "y", "w"], [shape, shape_y, (d, d)]
    lines, steps = [], []   # steps: (target, kind, op, operand names, extra)
    for n in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["u", "u", "b", "b", "r", "m"]))
        target = f"v{n}"
        i = draw(st.integers(0, len(names) - 1))
        a, sa = names[i], vals[i]
        if kind == "m":
            cands = [(nb, _matmul_shape(sa, sb)) for nb, sb in zip(names, vals)
                     if _matmul_shape(sa, sb) is not None and len(_matmul_shape(sa, sb)) <= 3
                     and math.prod(_matmul_shape(sa, sb)) <= 64]
            if not cands:
                kind = "u"
            else:
                b, out = draw(st.sampled_from(cands))
                expr = draw(st.sampled_from(MATMUL)).format(m=m, a=a, b=b)
                steps.append((target, "m", None, (a, b), None))
        if kind == "u":
            op = draw(st.sampled_from(sorted(UNARY)))
            expr = draw(st.sampled_from(UNARY[op][0])).format(m=m, a=a)
            out = sa
            steps.append((target, "u", op, (a,), None))
        elif kind == "b":
            cands = [nb for nb, sb in zip(names, vals) if _broadcastable(sa, sb)]
            b = draw(st.sampled_from(cands))
            op = draw(st.sampled_from(sorted(BINARY)))
            template = draw(st.sampled_from(BINARY[op][0]))
            expr = template.format(m=m, a=a, b=b)
            out = np.broadcast_shapes(sa, vals[names.index(b)])
            steps.append((target, "b", op, (a, b), template))
        elif kind == "r":
            op = draw(st.sampled_from(sorted(REDUCE)))
            # keepdims=True keeps every value broadcastable; axis=None without keepdims gives a
            # scalar, which broadcasts with anything
            choice = draw(st.sampled_from(["axis", "axes", "all_keep", "all"]) if sa else
                          st.just("all"))
            if choice == "axis":
                axis = draw(st.integers(-len(sa), len(sa) - 1))
                keep = True
            elif choice == "axes":
                axis = tuple(sorted(set(draw(st.lists(st.integers(0, len(sa) - 1),
                                                      min_size=1, max_size=len(sa))))))
                keep = True
            else:
                axis, keep = None, choice == "all_keep"
            kw = (f", axis={axis!r}" if axis is not None else "") + \
                 (", keepdims=True" if keep else "")
            expr = draw(st.sampled_from(REDUCE[op][0])).format(
                m=m, a=a, kw=kw, kwm=kw[2:])
            out = np.sum(np.zeros(sa), axis=axis, keepdims=keep).shape
            steps.append((target, "r", op, (a,), (axis, keep)))
        lines.append(f"    {target} = {expr}")
        names.append(target)
        vals.append(out)
    final = draw(st.sampled_from(["sum", "mean", "method"]))
    last = names[-1]
    ret = {"sum": f"{m}.sum({last})", "mean": f"{m}.mean({last})",
           "method": f"{last}.sum()"}[final]
    source = "\n".join(["import numpy as np", "import secant.numpy as snp",
                        "from secant import lax", "", "", "def f(x, y, w):", *lines,
                        f"    return {ret}", ""])

    def reference(x, y, w):
        env = {"x": x, "y": y, "w": w}
        gaps = []   # |a - b| at every maximum, to keep finite differences off the kinks
        for target, kind, op, operands, extra in steps:
            args = [env[o] for o in operands]
            if kind == "u":
                v = UNARY[op][1](args[0])
            elif kind == "b":
                if op == "scaled":
                    v = 0.5 * args[0] + args[1] if extra.startswith("0.5") else \
                        args[0] - 2.0 * args[1]
                else:
                    v = BINARY[op][1](*args)
                if op == "maximum":
                    gaps.append(np.abs(args[0] - args[1]))
            elif kind == "r":
                axis, keep = extra
                v = REDUCE[op][1](args[0], axis=axis, keepdims=keep)
            else:
                v = np.matmul(*args)
            env[target] = v
        return (np.sum(env[last]) if final != "mean" else np.mean(env[last])), gaps

    return source, reference, shapes


def finite_differences(fn, args, h=1e-6):
    """Central differences of scalar fn in float64, one element at a time."""
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            step = h * max(1.0, abs(a[idx]))
            up, down = [b.copy() for b in args], [b.copy() for b in args]
            up[i][idx] += step
            down[i][idx] -= step
            g[idx] = (fn(*up) - fn(*down)) / (2 * step)
        grads.append(g)
    return grads


def inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.5, 1.5, size=shapes[n]) for n in ("x", "y", "w")]


def check_close(got, want, what):
    for name, g, r in zip("xyw", got, want):
        g = np.asarray(g)
        assert g.shape == r.shape, f"{what}: d/d{name} has shape {g.shape}, expected {r.shape}"
        assert g.dtype == np.float64, f"{what}: d/d{name} has dtype {g.dtype} under x64"
        scale = 1.0 + np.max(np.abs(r), initial=0.0)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6 * scale,
                                   err_msg=f"{what}: d/d{name}")


def _prepare(program, seed):
    source, reference, shapes = program
    note(source)
    args = inputs(shapes, seed)
    _, gaps = reference(*args)
    # keep central differences away from the kinks of maximum (exact ties are fine: the central
    # difference at a tie equals JAX's convention of splitting the cotangent)
    assume(all(np.all((gap == 0) | (gap > 1e-3)) for gap in gaps))
    fd = finite_differences(lambda *a: reference(*a)[0], args)
    assume(all(np.all(np.isfinite(g)) for g in fd))
    return load(source), args, fd


@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_grad_matches_finite_differences(program, seed):
    with enable_x64():
        f, args, fd = _prepare(program, seed)
        grads = secant.grad(f, argnums=(0, 1, 2))(*args)
        check_close(grads, fd, "eager grad")


@given(programs(), st.integers(0, 2 ** 32 - 1),
       st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
def test_grad_of_some_arguments(program, seed, argnums):
    """Any subset of the arguments, in any order (activity analysis drops the others)."""
    with enable_x64():
        f, args, fd = _prepare(program, seed)
        got = secant.grad(f, argnums=tuple(argnums))(*args)   # a tuple, even of one (JAX)
        assert isinstance(got, tuple) and len(got) == len(argnums)
        if len(argnums) == 1:
            np.testing.assert_array_equal(np.asarray(secant.grad(f, argnums=argnums[0])(*args)),
                                          np.asarray(got[0]))
        for i, g in zip(argnums, got):
            np.testing.assert_allclose(np.asarray(g), fd[i], rtol=1e-5,
                                       atol=1e-6 * (1 + np.max(np.abs(fd[i]), initial=0)),
                                       err_msg=f"d/d{'xyw'[i]} with argnums={argnums}")


@given(programs(max_ndim=0), st.integers(0, 2 ** 32 - 1), st.sampled_from([0, 1]))
def test_second_order_matches_finite_differences_of_grad(program, seed, argnum):
    """grad(grad(f)) for random scalar programs: central differences of the (already checked)
    first derivative."""
    source, reference, shapes = program
    with enable_x64():
        f, args, _ = _prepare(program, seed)
        df = secant.grad(f, argnums=argnum)
        d2f = secant.grad(df, argnums=argnum)
        h = 1e-5 * max(1.0, abs(float(args[argnum])))
        up, down = list(args), list(args)
        up[argnum] = args[argnum] + h
        down[argnum] = args[argnum] - h
        # no kink of maximum between the two points (first derivatives jump there)
        for point in (up, down):
            assume(all(np.all((gap == 0) | (gap > 1e-3)) for gap in reference(*point)[1]))
        want = (float(df(*up)) - float(df(*down))) / (2 * h)
        got = d2f(*args)
        assert np.shape(got) == ()
        np.testing.assert_allclose(float(got), want, rtol=1e-4, atol=1e-5 * (1 + abs(want)))


@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_jit_grad_matches_finite_differences(program, seed):
    with enable_x64():
        f, args, fd = _prepare(program, seed)
        g = secant.grad(f, argnums=(0, 1, 2))
        check_close(secant.jit(g)(*args), fd, "jit(grad)")


@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_value_and_grad_agrees_with_function(program, seed):
    """value_and_grad returns f's own value and the same gradient as grad."""
    with enable_x64():
        f, args, fd = _prepare(program, seed)
        value, grads = secant.value_and_grad(f, argnums=(0, 1, 2))(*args)
        np.testing.assert_allclose(np.asarray(value), np.asarray(f(*args)), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(value), program[1](*args)[0], rtol=1e-10,
                                   atol=1e-12)
        check_close(grads, fd, "value_and_grad")


# --- scalar functions against closed forms ------------------------------------------------------
# name: (body, [f', f'', f'''] as NumPy functions)
SCALAR = {
    "cube": ("x ** 3", [lambda x: 3 * x ** 2, lambda x: 6 * x, lambda x: 6.0 + 0 * x]),
    "x_sin_x": ("snp.sin(x) * x", [
        lambda x: np.cos(x) * x + np.sin(x),
        lambda x: 2 * np.cos(x) - x * np.sin(x),
        lambda x: -3 * np.sin(x) - x * np.cos(x)]),
    "exp_2x": ("snp.exp(2 * x)", [
        lambda x: 2 * np.exp(2 * x), lambda x: 4 * np.exp(2 * x), lambda x: 8 * np.exp(2 * x)]),
    "tanh": ("snp.tanh(x)", [
        lambda x: 1 - np.tanh(x) ** 2,
        lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
        lambda x: -2 * (1 - np.tanh(x) ** 2) * (1 - 3 * np.tanh(x) ** 2)]),
    "poly": ("3.0 * x ** 4 - 2.0 * x * x + x - 7.0", [
        lambda x: 12 * x ** 3 - 4 * x + 1, lambda x: 36 * x ** 2 - 4, lambda x: 72 * x]),
}
_SCALAR_FNS = {}


def scalar_fn(name):
    if name not in _SCALAR_FNS:
        _SCALAR_FNS[name] = load("import secant.numpy as snp\n\n\ndef f(x):\n"
                                 f"    return {SCALAR[name][0]}\n")
    return _SCALAR_FNS[name]


def _nth_grad(f, n):
    for _ in range(n):
        f = secant.grad(f)
    return f


scalars = st.floats(-2.0, 2.0, allow_nan=False)


@pytest.mark.parametrize("name", sorted(SCALAR))
@given(x=scalars)
def test_first_derivative_closed_form(name, x):
    with enable_x64():
        want = SCALAR[name][1][0](x)
        np.testing.assert_allclose(float(secant.grad(scalar_fn(name))(x)), want,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(float(secant.jit(secant.grad(scalar_fn(name)))(x)), want,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SCALAR))
@given(x=scalars)
def test_second_derivative_closed_form(name, x):
    with enable_x64():
        want = SCALAR[name][1][1](x)
        g2 = _nth_grad(scalar_fn(name), 2)
        np.testing.assert_allclose(float(g2(x)), want, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(float(secant.jit(g2)(x)), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(SCALAR))
@given(x=scalars)
def test_third_derivative_closed_form(name, x):
    with enable_x64():
        want = SCALAR[name][1][2](x)
        np.testing.assert_allclose(float(_nth_grad(scalar_fn(name), 3)(x)), want,
                                   rtol=1e-9, atol=1e-9)
