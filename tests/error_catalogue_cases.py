"""The error catalogue: bad or awkward inputs, each a small user function written in this file,
with what secant must do: raise the exception type JAX raises there (so `except` clauses written
against JAX catch it) with a message naming this file and the line of the offending code (the
line marked `# !` in the function), or give the right value (an awkward input JAX accepts).

tests/test_error_catalogue.py runs every case; bench/error_catalogue_report.py counts outcomes.
Cases in SUBPROCESS_GROUPS (threads, limits, the command line) can crash or hang a process: they
run in a child process, all together, with a memory limit.

Outcomes (classify):
  correct    the expected exception type with this file's line in its message, or the right value
  line       a clear error naming the line, but not the type JAX raises (or an error for a value)
  noline     a clear error (a SecantError or the expected type) that does not name the line
  internal   any other exception (KeyError, AttributeError, RecursionError... from inside secant)
  wrong      no error for an invalid input, or a wrong value
"""
import dataclasses
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import threading

import numpy as np

import secant
import secant.numpy as snp
from secant import lax

HERE = os.path.abspath(__file__)
SUBPROCESS_GROUPS = ("threads", "limits", "cli")
OUTCOMES = ("correct", "line", "noline", "internal", "wrong")

CASES = {}      # case id -> Case


class Value:
    """An awkward input that has a right answer: `check(result)` says whether it is right."""

    def __init__(self, check, what="the right value"):
        self.check = check
        self.what = what


def close_to(expected, rtol=1e-5):
    return Value(lambda r: np.allclose(np.asarray(r), np.asarray(expected), rtol=rtol),
                 f"a value close to {expected!r}")


def exc_type(name):
    """An exception class by name: secant.errors first (JAX's names), then secant's own
    modules, then builtins; None when no module defines it (yet)."""
    import builtins

    from secant.backends import errors as backend_errors
    for where in (getattr(secant, "errors", None), backend_errors, builtins):
        cls = getattr(where, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return cls
    return None


class Case:
    def __init__(self, cid, group, run, expect, marked, line=None, file=HERE):
        self.id = cid
        self.group = group
        self.run = run              # () -> result; raises for a bad input
        self.expect = expect        # exception class name (str) or a Value
        self.marked = marked        # the function whose `# !` line is the offending one
        self._line = line
        self.file = file

    @property
    def line(self):
        if self._line is None:
            lines, first = inspect.getsourcelines(self.marked)
            hits = [i for i, text in enumerate(lines) if text.rstrip().endswith("# !")]
            assert len(hits) == 1, f"{self.id}: mark exactly one line of {self.marked} with # !"
            self._line = first + hits[0]
        return self._line

    @property
    def location(self):
        return f"{self.file}:{self.line}"


def add(cid, group, run, expect, marked, **kw):
    assert cid not in CASES, cid
    CASES[cid] = Case(cid, group, run, expect, marked, **kw)


def classify(case):
    """(outcome, detail) for one case, run in this process."""
    try:
        result = case.run()
        if hasattr(result, "block_until_ready"):
            result.block_until_ready()
    except BaseException as e:     # noqa: BLE001 (a catalogue: every exception is an outcome)
        if isinstance(e, (KeyboardInterrupt, SystemExit)) and case.group != "cli":
            raise
        return _classify_error(case, e)
    if isinstance(case.expect, Value):
        try:
            ok = case.expect.check(result)
        except Exception as e:  # noqa: BLE001
            return "wrong", f"result {result!r} could not be checked: {type(e).__name__}: {e}"
        return ("correct", "") if ok else ("wrong", f"got {result!r}, expected {case.expect.what}")
    return "wrong", f"no error (expected {case.expect}); returned {_short(result)}"


def _classify_error(case, e):
    msg = str(e)
    named = case.location in msg
    detail = f"{type(e).__name__}: {_short(msg.replace(HERE, os.path.basename(HERE)), 300)}"
    expected = None if isinstance(case.expect, Value) else exc_type(case.expect)
    if expected is not None and isinstance(e, expected) and named:
        return "correct", ""
    clear = isinstance(e, secant.SecantError) or (expected is not None and isinstance(e, expected))
    if clear:
        return ("line" if named else "noline"), detail
    return "internal", detail


def _short(x, n=120):
    s = str(x).replace("\n", " | ")
    return s if len(s) <= n else s[:n] + "..."


# =================================================================================================
# How a user function of one float is run: each transform a user reaches for.
X = 2.0
XS = np.array([2.0, 3.0], np.float32)


def _eager(f):
    return f(X)


def _jit(f):
    return secant.jit(f)(X)


def _grad(f):
    return secant.grad(f)(X)


def _vmap(f):
    return secant.vmap(f)(XS)


def _jit_grad(f):
    return secant.jit(secant.grad(f))(X)


def _vmap_grad(f):
    return secant.vmap(secant.grad(f))(XS)


def _grad_jit(f):
    return secant.grad(secant.jit(f))(X)


def _vmap_jit(f):
    return secant.vmap(secant.jit(f))(XS)


RUNNERS = {"eager": _eager, "jit": _jit, "grad": _grad, "vmap": _vmap, "jit-grad": _jit_grad,
           "vmap-grad": _vmap_grad, "grad-jit": _grad_jit, "vmap-jit": _vmap_jit}
SHAPE_RUNS = ("eager", "jit", "grad", "vmap", "jit-grad", "vmap-grad")


def over(group, expect, runs=SHAPE_RUNS):
    """Registers a user function f(x) under each of `runs`; `expect` is one expectation for all
    or a dict run -> expectation (a missing run is not registered)."""
    def deco(f):
        for r in runs:
            e = expect.get(r) if isinstance(expect, dict) else expect
            if e is None:
                continue
            add(f"{group}-{f.__name__}-{r}", group, (lambda f=f, r=r: RUNNERS[r](f)), e, f)
        return f
    return deco


# =================================================================================================
# Shapes and dtypes: one offending line each, under every transform. JAX's types: lax's shape
# rules raise TypeError (jnp.add of (3,) and (4,), matmul, reshape, concatenate); jax.numpy's own
# checks raise ValueError (axis out of bounds, broadcast_to, split, stack); secant's ShapeError
# is both, so the expectation is the JAX one.
@over("shape", "TypeError")
def add_mismatch(x):
    a = x * snp.ones(3)
    return snp.sum(a + snp.ones(4))  # !


@over("shape", "TypeError")
def mul_mismatch(x):
    a = x * snp.ones((2, 3))
    return snp.sum(a * snp.ones((3, 2)))  # !


@over("shape", "TypeError")
def sub_mismatch(x):
    return snp.sum(snp.ones(3) - x * snp.ones(2))  # !


@over("shape", "TypeError")
def divide_mismatch(x):
    return snp.sum(snp.divide(x * snp.ones(5), snp.ones(4)))  # !


@over("shape", "TypeError")
def maximum_mismatch(x):
    return snp.sum(snp.maximum(x * snp.ones(3), snp.zeros(2)))  # !


@over("shape", "TypeError")
def matmul_mismatch(x):
    m = x * snp.ones((2, 3))
    return snp.sum(m @ m)  # !


@over("shape", "TypeError")
def dot_mismatch(x):
    return snp.dot(x * snp.ones(3), snp.ones(4))  # !


@over("shape", "TypeError")
def matmul_vec_mismatch(x):
    return snp.sum(snp.matmul(x * snp.ones((4, 3)), snp.ones(4)))  # !


@over("shape", "TypeError")
def inner_mismatch(x):
    return snp.inner(x * snp.ones(2), snp.ones(3))  # !


@over("shape", "TypeError")
def tensordot_mismatch(x):
    return snp.sum(snp.tensordot(x * snp.ones((2, 3)), snp.ones((2, 3)), axes=1))  # !


@over("shape", "ValueError")
def einsum_mismatch(x):
    return snp.sum(snp.einsum("ij,jk->ik", x * snp.ones((2, 3)), snp.ones((2, 3))))  # !


@over("shape", "TypeError")
def reshape_size(x):
    return snp.sum(snp.reshape(x * snp.ones(6), (4, 2)))  # !


@over("shape", "TypeError")
def reshape_method_size(x):
    return snp.sum((x * snp.ones(6)).reshape(5))  # !


@over("shape", "TypeError")
def reshape_minus_one(x):
    return snp.sum(snp.reshape(x * snp.ones(6), (-1, 4)))  # !


@over("shape", "ValueError")
def reshape_two_minus_ones(x):
    return snp.sum(snp.reshape(x * snp.ones(6), (-1, -1)))  # !


@over("shape", "TypeError")
def concat_mismatch(x):
    return snp.sum(snp.concatenate([x * snp.ones((2, 3)), snp.ones((2, 2))]))  # !


@over("shape", "TypeError")
def concat_rank(x):
    return snp.sum(snp.concatenate([x * snp.ones((2, 3)), snp.ones(3)]))  # !


@over("shape", "ValueError")
def concat_scalars(x):
    return snp.sum(snp.concatenate([x, x]))  # !


@over("shape", "ValueError")
def stack_mismatch(x):
    return snp.sum(snp.stack([x * snp.ones(3), snp.ones(4)]))  # !


@over("shape", "TypeError")
def vstack_mismatch(x):
    return snp.sum(snp.vstack([x * snp.ones(3), snp.ones(4)]))  # !


@over("shape", "ValueError")
def broadcast_to_bad(x):
    return snp.sum(snp.broadcast_to(x * snp.ones(3), (4,)))  # !


@over("shape", "ValueError")
def sum_axis_oob(x):
    return snp.sum(x * snp.ones(3), axis=1)  # !


@over("shape", "ValueError")
def mean_axis_negative_oob(x):
    return snp.sum(snp.mean(x * snp.ones((2, 3)), axis=-3))  # !


@over("shape", "ValueError")
def max_repeated_axis(x):
    return snp.sum(snp.max(x * snp.ones((2, 3)), axis=(0, 0)))  # !


@over("shape", "ValueError")
def cumsum_axis_oob(x):
    return snp.sum(snp.cumsum(x * snp.ones(3), axis=2))  # !


@over("shape", "ValueError")
def expand_dims_oob(x):
    return snp.sum(snp.expand_dims(x * snp.ones(3), 3))  # !


@over("shape", "ValueError")
def squeeze_not_one(x):
    return snp.sum(snp.squeeze(x * snp.ones((2, 3)), axis=0))  # !


@over("shape", "ValueError")
def swapaxes_oob(x):
    return snp.sum(snp.swapaxes(x * snp.ones(3), 0, 2))  # !


@over("shape", "ValueError")
def split_unequal(x):
    a, b = snp.split(x * snp.ones(3), 2)  # !
    return snp.sum(a) + snp.sum(b)


@over("shape", "ValueError")
def argmax_axis_oob(x):
    return snp.sum(snp.argmax(x * snp.ones(3), axis=1)) * x  # !


@over("shape", "IndexError")
def index_oob(x):
    # (an index out of range clamps, as JAX; an axis of size 0 has no element to clamp to)
    return (x * snp.ones((0, 3)))[0]  # !


@over("shape", "IndexError")
def too_many_indices(x):
    return (x * snp.ones(3))[0, 0]  # !


@over("shape", "TypeError")
def float_index(x):
    return (x * snp.ones(3))[snp.array([0.0, 1.0])].sum()  # !


@over("shape", "TypeError")
def at_set_mismatch(x):
    return snp.sum((x * snp.ones(3)).at[:2].set(snp.ones(3)))  # !


@over("shape", "TypeError")
def where_mismatch(x):
    a = x * snp.ones(3)
    return snp.sum(snp.where(a > 0, a, snp.ones(4)))  # !


@over("shape", "TypeError")
def lax_add_dtypes(x):
    return snp.sum(lax.add(x * snp.ones(3), snp.ones(3, dtype=snp.int32)))  # !


@over("shape", "TypeError")
def lax_dot_rank(x):
    return snp.sum(lax.dot(x * snp.ones((2, 2, 2)), snp.ones(2)))  # !


@over("shape", "TypeError")
def bitwise_float(x):
    return snp.sum(snp.bitwise_and(x * snp.ones(3), snp.ones(3)))  # !


@over("shape", "TypeError")
def grad_vector_output(x):
    return x * snp.ones(3)  # !
# (only grad-like runs raise here; eager/jit/vmap give the vector)


for _r in ("eager", "jit", "vmap"):
    CASES[f"shape-grad_vector_output-{_r}"].expect = Value(
        lambda r, _r=_r: np.shape(r) == ((2, 3) if _r == "vmap" else (3,)), "the vector")


# =================================================================================================
# Tracers: Python needs a concrete value (bool, int, a NumPy array, a shape). JAX raises its
# conversion errors under jit and vmap; secant rewrites some of these (an `if` or `while` on a
# traced value, range of a traced bound), which is the right value.
TRACER_RUNS = ("jit", "vmap", "jit-grad", "vmap-jit")


@over("tracer", "TracerBoolConversionError", TRACER_RUNS)
def bool_call(x):
    b = bool(x > 0)  # !
    return x * 2.0 if b else x


@over("tracer", "TracerBoolConversionError", TRACER_RUNS)
def and_of_comparisons(x):
    return snp.where((x > 0) and (x < 3), x, -x)  # !


@over("tracer", "TracerBoolConversionError", TRACER_RUNS)
def assert_traced(x):
    assert x > 0  # !
    return x * 2.0


@over("tracer", "TracerBoolConversionError", TRACER_RUNS)
def raise_if_traced(x):
    if x > 100:  # !
        raise ValueError("x is too large")
    return x * 2.0


@over("tracer", "TracerIntegerConversionError", TRACER_RUNS)
def int_call(x):
    n = int(x)  # !
    return x * n


@over("tracer", "TracerIntegerConversionError", ("jit", "vmap", "vmap-jit"))
def list_index_traced(x):
    table = [1.0, 2.0, 3.0]
    return x * table[(x > 2).astype(snp.int32)]  # !


@over("tracer", "ConcretizationTypeError", TRACER_RUNS)
def float_call(x):
    return x * float(x)  # !


@over("tracer", "ConcretizationTypeError", TRACER_RUNS)
def complex_call(x):
    return x * complex(x).real  # !


@over("tracer", {"jit": "TracerArrayConversionError", "jit-grad": close_to(4.0),
                 "vmap-jit": close_to([4.0, 9.0])}, ("jit", "jit-grad", "vmap-jit"))
def numpy_asarray(x):
    return x * np.asarray(x).sum()  # !


@over("tracer", "NonConcreteBooleanIndexError", ("jit", "vmap", "vmap-jit"))
def boolean_mask(x):
    v = x * snp.arange(4.0)
    return snp.sum(v[v > 2.0])  # !


@over("tracer", "ConcretizationTypeError", ("jit", "vmap", "vmap-jit"))
def nonzero_no_size(x):
    v = x * snp.arange(4.0)
    return snp.sum(snp.nonzero(v)[0]) * x  # !


@over("tracer", "ConcretizationTypeError", ("jit", "vmap", "vmap-jit"))
def arange_traced(x):
    return snp.sum(snp.arange(x))  # !


@over("tracer", "ConcretizationTypeError", ("jit", "vmap", "vmap-jit"))
def zeros_traced_shape(x):
    n = (x * 2).astype(snp.int32)
    return snp.sum(snp.zeros(n)) + x  # !


@over("tracer", "TypeError", ("jit", "vmap", "grad"))
def len_of_scalar(x):
    return x * len(x)  # !


@over("tracer", "TypeError", ("jit", "vmap", "grad"))
def iterate_scalar(x):
    total = 0.0
    for v in x:  # !
        total = total + v
    return total


@over("tracer", "TypeError", ("jit",))
def hash_traced(x):
    d = {x: 1.0}  # !
    return x * len(d)


@over("tracer", {r: close_to(v) for r, v in [("jit", 4.0), ("vmap", [4.0, 6.0]), ("grad", 2.0),
                                             ("jit-grad", 2.0), ("vmap-grad", [2.0, 2.0])]},
      ("jit", "vmap", "grad", "jit-grad", "vmap-grad"))
def if_on_traced(x):
    if x > 0:  # !
        return x * 2.0
    return -x


@over("tracer", {r: close_to(v) for r, v in [("jit", 16.0), ("vmap", [16.0, 12.0]),
                                             ("grad", 8.0), ("jit-grad", 8.0)]},
      ("jit", "vmap", "grad", "jit-grad"))
def while_on_traced(x):
    while x < 10.0:  # !
        x = x * 2.0
    return x


@over("tracer", {"jit": close_to(1.0), "vmap": "TracerIntegerConversionError"}, ("jit", "vmap"))
def range_of_traced(x):
    n = (x - 1.0).astype(snp.int32)
    total = 0.0
    for i in range(n + 1):  # !
        total = total + i
    return total


# Concretizations on a value that is not the argument itself, from a helper function.
def _helper_bool(v):
    return bool(v)  # !


@over("tracer", "TracerBoolConversionError", ("jit", "vmap-jit"))
def bool_in_helper(x):
    return x * 2.0 if _helper_bool(x > 1) else x


for _r in ("jit", "vmap-jit"):
    CASES[f"tracer-bool_in_helper-{_r}"].marked = _helper_bool


# =================================================================================================
# API misuse: the offending line is the call of the API.
def api(expect, cid=None):
    def deco(f):
        add(f"api-{cid or f.__name__}", "api", f, expect, f)
        return f
    return deco


def _scalar(x):
    return x * x


def _two(x, y):
    return x * y


@api("TypeError")
def grad_argnums_too_large():
    return secant.grad(_scalar, argnums=3)(2.0)  # !


@api("TypeError")
def grad_argnums_tuple_too_large():
    return secant.grad(_two, argnums=(0, 2))(2.0, 3.0)  # !


@api("TypeError")
def grad_argnums_string():
    return secant.grad(_scalar, argnums="x")(2.0)  # !


@api("TypeError")
def grad_of_int():
    return secant.grad(_scalar)(3)  # !


@api("TypeError")
def grad_of_int_array():
    return secant.grad(lambda v: snp.sum(v * v))(snp.arange(3))  # !


@api("TypeError")
def grad_of_bool():
    return secant.grad(_scalar)(True)  # !


@api("TypeError")
def grad_noncallable():
    return secant.grad(3.0)  # !


@api("TypeError")
def jit_noncallable():
    return secant.jit("f")  # !


@api("TypeError")
def vmap_noncallable():
    return secant.vmap(None)  # !


@api("TypeError")
def value_and_grad_noncallable():
    return secant.value_and_grad([1, 2])  # !


@api("TypeError")
def jacfwd_noncallable():
    return secant.jacfwd(1)  # !


@api("TypeError")
def grad_vector_out():
    return secant.grad(lambda v: v * 2.0)(snp.ones(3))  # !


@api("TypeError")
def grad_string_arg():
    return secant.grad(lambda s: s * 2.0)("abc")  # !


@api(Value(lambda r: r is None, "None (no leaves to differentiate)"))
def grad_none_arg():
    return secant.grad(lambda s: 2.0)(None)  # !


@api("ValueError")
def vmap_size_mismatch():
    return secant.vmap(_two)(snp.ones(3), snp.ones(4))  # !


@api("ValueError")
def vmap_in_axes_too_many():
    return secant.vmap(_two, in_axes=(0, 0, 0))(snp.ones(3), snp.ones(3))  # !


@api("ValueError")
def vmap_in_axes_too_few():
    return secant.vmap(_two, in_axes=(0,))(snp.ones(3), snp.ones(3))  # !


@api("ValueError")
def vmap_axis_out_of_range():
    return secant.vmap(_scalar, in_axes=1)(snp.ones(3))  # !


@api("ValueError")
def vmap_scalar_mapped():
    return secant.vmap(_scalar)(2.0)  # !


@api("ValueError")
def vmap_all_none():
    return secant.vmap(_scalar, in_axes=None)(snp.ones(3))  # !


@api("TypeError")
def vmap_in_axes_float():
    return secant.vmap(_scalar, in_axes=0.5)(snp.ones(3))  # !


@api("ValueError")
def vmap_in_axes_dict_mismatch():
    return secant.vmap(lambda d: d["a"] * 2, in_axes=({"b": 0},))({"a": snp.ones(3)})  # !


@api("ValueError")
def vmap_out_axes_oob():
    return secant.vmap(_scalar, out_axes=2)(snp.ones(3))  # !


@api("ValueError")
def vmap_empty_call():
    return secant.vmap(lambda: 1.0)()  # !


@api("TypeError")
def jvp_primals_not_tuple():
    return secant.jvp(_scalar, 2.0, 1.0)  # !


@api("TypeError")
def jvp_length_mismatch():
    return secant.jvp(_two, (2.0, 3.0), (1.0,))  # !


@api("TypeError")
def jvp_tangent_dtype():
    return secant.jvp(_scalar, (snp.float32(2.0),), (snp.int32(1),))  # !


@api("ValueError")
def jvp_tangent_shape():
    return secant.jvp(lambda v: v * 2, (snp.ones(3),), (snp.ones(4),))  # !


@api("TypeError")
def jit_too_many_args():
    return secant.jit(_scalar)(1.0, 2.0)  # !


@api("TypeError")
def jit_missing_arg():
    return secant.jit(_two)(1.0)  # !


@api("TypeError")
def jit_unexpected_keyword():
    return secant.jit(_scalar)(1.0, z=2.0)  # !


@api("TypeError")
def jit_string_arg():
    return secant.jit(_scalar)("abc")  # !


@api("TypeError")
def jit_object_arg():
    return secant.jit(_scalar)(object())  # !


@api("ValueError")
def jit_static_argnums_oob():
    return secant.jit(_scalar, static_argnums=3)(2.0)  # !


@api("ValueError")
def jit_unhashable_static():
    return secant.jit(lambda x, s: x * len(s), static_argnums=1)(2.0, [1, 2])  # !


@api("TypeError")
def grad_missing_arg():
    return secant.grad(_two)(1.0)  # !


@api("TypeError")
def grad_output_list():
    return secant.grad(lambda v: [v, v])(1.0)  # !


@api("TypeError")
def grad_output_int():
    return secant.grad(lambda v: 3)(1.0)  # !


@api("TypeError")
def grad_complex_output():
    return secant.grad(lambda v: v * (1 + 2j))(1.0)  # !


@api("TypeError")
def grad_has_aux_not_pair():
    return secant.grad(lambda v: v * 2.0, has_aux=True)(1.0)  # !


@api("TypeError")
def vjp_cotangent_structure():
    out, pullback = secant.vjp(lambda v: (v, v), 2.0)
    return pullback(1.0)  # !


@api("ValueError")
def vjp_cotangent_shape():
    out, pullback = secant.vjp(lambda v: v * 2.0, snp.ones(3))
    return pullback(snp.ones(4))  # !


@api("ValueError")
def tree_map_mismatch():
    return secant.tree_util.tree_map(lambda a, b: a + b, (1.0, 2.0), [1.0, 2.0])  # !


@api("ValueError")
def tree_map_length_mismatch():
    return secant.tree_util.tree_map(lambda a, b: a + b, (1.0, 2.0), (1.0,))  # !


@api("ValueError")
def tree_unflatten_too_few():
    treedef = secant.tree_util.tree_structure((1, 2, 3))
    return secant.tree_util.tree_unflatten(treedef, [1, 2])  # !


@api("TypeError")
def random_float_key():
    return secant.random.normal(1.5, (3,))  # !


@api("TypeError")
def random_bad_shape():
    return secant.random.normal(secant.random.PRNGKey(0), shape=3.5)  # !


@api("TypeError")
def random_seed_float():
    return secant.random.PRNGKey(1.5)  # !


@api("TypeError")
def random_split_not_key():
    return secant.random.split(snp.ones(3))  # !


@api("TypeError")
def snp_array_of_strings():
    return snp.array(["a", "b"])  # !


@api("TypeError")
def snp_array_ragged():
    return snp.array([[1.0, 2.0], [3.0]])  # !


@api("TypeError")
def snp_bad_dtype():
    return snp.ones(3, dtype="not_a_dtype")  # !


@api("ValueError")
def snp_negative_shape():
    return snp.zeros((-1, 3))  # !


@api("TypeError")
def snp_float_shape():
    return snp.zeros((2.5, 3))  # !


@api("TypeError")
def array_item_assignment():
    a = snp.ones(3)
    a[0] = 2.0  # !
    return a


@api("TypeError")
def lax_cond_structure():
    return lax.cond(True, lambda v: (v, v), lambda v: v, 1.0)  # !


@api("TypeError")
def lax_cond_dtype():
    return lax.cond(True, lambda v: v, lambda v: v.astype(snp.int32), snp.float32(1.0))  # !


@api("TypeError")
def lax_cond_non_scalar_pred():
    return lax.cond(snp.array([True, False]), lambda v: v, lambda v: -v, 1.0)  # !


@api("TypeError")
def lax_switch_float_index():
    return lax.switch(1.5, [lambda v: v, lambda v: -v], 1.0)  # !


@api("ValueError")
def lax_switch_no_branches():
    return lax.switch(0, [], 1.0)  # !


# A weakly typed carry (the Python int 1) may take the dtype the body gives it: JAX's while_loop
# promotes weakly typed inputs to the body's output dtype (_promote_weak_typed_inputs) and traces
# again, so this gives 16.0 there; a strongly typed carry that changes dtype is the error below.
@api(close_to(16.0))
def lax_while_carry_change():
    return lax.while_loop(lambda c: c < 10, lambda c: c * 2.0, 1)  # !


@api("TypeError")
def lax_while_carry_dtype_strong():
    return lax.while_loop(lambda c: c < 10, lambda c: (c * 2).astype(snp.int32),  # !
                          snp.float32(1.0))


@api("TypeError")
def lax_while_cond_not_bool():
    return lax.while_loop(lambda c: c, lambda c: c - 1.0, 3.0)  # !


# JAX's fori_loop needs bounds of one dtype, not integers: float bounds run (its index is then a
# float; concrete bounds run as a scan of int(upper) - int(lower) steps); mixed ones are the error.
@api(close_to(3.0))
def lax_fori_float_bounds():
    return lax.fori_loop(0.0, 3.0, lambda i, c: c + 1.0, 0.0)  # !


@api("TypeError")
def lax_fori_mixed_bounds():
    return lax.fori_loop(0, 3.0, lambda i, c: c + 1.0, 0.0)  # !


@api("TypeError")
def lax_fori_carry_change():
    return lax.fori_loop(0, 3, lambda i, c: (c, c), 0.0)  # !


@api("ValueError")
def lax_scan_length_mismatch():
    return lax.scan(lambda c, x: (c + x, x), 0.0, (snp.ones(3), snp.ones(4)))  # !


@api("TypeError")
def lax_scan_body_not_pair():
    return lax.scan(lambda c, x: c + x, 0.0, snp.ones(3))  # !


@api("TypeError")
def lax_scan_carry_shape_change():
    return lax.scan(lambda c, x: (snp.stack([c, x]), x), 0.0, snp.ones(3))  # !


@api("ValueError")
def lax_scan_no_length():
    return lax.scan(lambda c, x: (c, c), 0.0, None)  # !


@api("TypeError")
def checkpoint_not_callable():
    return secant.checkpoint(5)  # !


@api("TypeError")
def custom_vjp_not_callable():
    return secant.custom_vjp(5)  # !


@api(Value(lambda r: np.shape(r) == (3, 3, 3) and not np.any(np.asarray(r)), "zeros (3, 3, 3)"))
def hessian_vector_output():
    return secant.hessian(lambda v: v * 2.0)(snp.ones(3))  # !


@api("TypeError")
def jacrev_complex_output():
    return secant.jacrev(lambda v: v * 1j)(snp.ones(2))  # !


@api("ValueError")
def pmap_too_many_devices():
    return secant.pmap(_scalar)(snp.ones((secant.device_count() + 1,)))  # !


@api("TypeError")
def pmap_noncallable():
    return secant.pmap(3)  # !


# Unsupported Python constructs under grad and vmap: a SecantError at the construct's line (JAX
# runs them by tracing; secant reads the source and says what it cannot transform).
def _construct(f, runs=("grad", "vmap")):
    for r in runs:
        add(f"syntax-{f.__name__}-{r}", "syntax", (lambda f=f, r=r: RUNNERS[r](f)),
            "SecantError", f)
    return f


@_construct
def uses_global(x):
    global _G
    _G = x  # !
    return x * 2.0


@_construct
def defines_class(x):
    class Local:  # !
        scale = x   # (a class reading the function's locals; one that does not is made once)
    return x * Local.scale


@_construct
def generator_function(x):
    yield x * 2.0  # !


@_construct
def fstring_of_tracked(x):
    label = f"{x}"  # noqa: F841  # !
    return x * 2.0


@_construct
def append_dropped(x, acc=[]):  # noqa: B006
    acc.append(x)  # !
    return x * 2.0


@_construct
def async_inner(x):
    async def inner():  # !
        pass
    return x * 2.0


def dynamic_callee(x):
    fns = [snp.sin, snp.cos]
    return fns[(x > 0).astype(snp.int32)](x)  # !


_construct(dynamic_callee, ("vmap",))       # one function per example: not batchable
add("syntax-dynamic_callee-grad", "syntax", lambda: secant.grad(dynamic_callee)(X),
    close_to(-np.sin(X)), dynamic_callee)


# Awkward Python that secant transforms (JAX traces it): the right value.
def _works(expected):
    def deco(f):
        for r, v in expected.items():
            add(f"syntax-{f.__name__}-{r}", "syntax", (lambda f=f, r=r: RUNNERS[r](f)),
                close_to(v), f)
        return f
    return deco


@_works({"grad": 2.0, "vmap": [4.0, 6.0], "jit": 4.0})
def nonlocal_update(x):
    z = x

    def double():
        nonlocal z
        z = z * 2.0  # !

    double()
    return z


@_works({"grad": 2.0, "vmap": [4.0, 6.0], "jit": 4.0})
def attribute_store(x):     # (a field of an object of a class made at run time: the trace)
    box = type("Box", (), {})()
    box.v = x  # !
    return box.v * 2.0


@_works({"grad": 2.0, "vmap": [4.0, 6.0], "jit": 4.0})
def try_except(x):
    try:
        y = x * 2.0  # !
    except ValueError:
        y = x
    return y


@_works({"grad": 3.0, "vmap": [6.0, 9.0], "jit": 6.0})
def generator_sum(x):
    return sum(x * i for i in range(3))  # !


@_works({"grad": 4.0, "vmap": [4.0, 9.0], "jit": 4.0})
def star_unpack(x):
    a, *rest = (x, x, x)  # !
    return a * rest[0]


@_works({"grad": 8.0, "vmap": [16.0, 24.0], "jit": 16.0})
def recursion_static_depth(x, n=3):
    if n == 0:
        return x
    return recursion_static_depth(x * 2.0, n - 1)  # !


@_works({"grad": 1.0, "vmap": [2.0, 3.0], "jit": 2.0})
def walrus(x):
    if (y := x * 1.0) > 0:  # !
        return y
    return x


# =================================================================================================
# Custom rules: what a user hands in is checked against the primals, as JAX does.
def _custom_case(expect, runs=("grad",)):
    def deco(f):
        for r in runs:
            add(f"custom-{f.__name__}-{r}", "custom", (lambda f=f, r=r: RUNNERS[r](f())),
                expect, f)
        return f
    return deco


def _vjp_fn(fwd, bwd):
    @secant.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(fwd, bwd)
    return f


@_custom_case("TypeError")
def bwd_too_many():
    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):  # !
        x, y = res
        return g * y, g * x, g

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


@_custom_case("TypeError")
def bwd_too_few():
    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):  # !
        x, y = res
        return (g * y,)

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


@_custom_case("TypeError")
def bwd_not_tuple():
    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):  # !
        x, y = res
        return g * y

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


@_custom_case("ValueError")
def bwd_wrong_shape():
    @secant.custom_vjp
    def f(v):
        return snp.sum(v * v)

    def fwd(v):
        return snp.sum(v * v), v

    def bwd(v, g):  # !
        return (g * snp.ones(5),)

    f.defvjp(fwd, bwd)
    return lambda x: f(x * snp.ones(3))


@_custom_case(close_to(3.0))
def bwd_none_is_zero():
    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):  # !
        x, y = res
        return g * y, None

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


@_custom_case("ValueError")
def bwd_wrong_dtype():
    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):  # !
        x, y = res
        return (g * y).astype(snp.int32), g * x

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


@_custom_case("TypeError")
def fwd_not_pair():
    def fwd(x, y):  # !
        return x * y

    def bwd(res, g):
        return g, g

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


@_custom_case("TypeError")
def fwd_output_disagrees():
    def fwd(x, y):  # !
        return (x * y, x), (x, y)

    def bwd(res, g):
        x, y = res
        return g * y, g * x

    f = _vjp_fn(fwd, bwd)
    return lambda x: f(x, 3.0)


def _jvp_fn(rule):
    @secant.custom_jvp
    def f(x):
        return snp.sin(x)

    f.defjvp(rule)
    return f


@_custom_case("TypeError", ("grad", "jit-grad"))
def jvp_tangent_int():
    def rule(primals, tangents):  # !
        (x,), (t,) = primals, tangents
        return snp.sin(x), (snp.cos(x) * t).astype(snp.int32)

    return _jvp_fn(rule)


@_custom_case("TypeError", ("grad", "jit-grad"))
def jvp_rule_tangent_shape():
    def rule(primals, tangents):  # !
        (x,), (t,) = primals, tangents
        return snp.sin(x), snp.cos(x) * t * snp.ones(3)

    return _jvp_fn(rule)


@_custom_case("TypeError", ("grad", "jit-grad"))
def jvp_rule_not_pair():
    def rule(primals, tangents):  # !
        (x,), (t,) = primals, tangents
        return snp.cos(x) * t

    return _jvp_fn(rule)


@_custom_case("TypeError", ("grad", "jit-grad"))
def jvp_primal_out_shape():
    def rule(primals, tangents):  # !
        (x,), (t,) = primals, tangents
        return snp.sin(x) * snp.ones(2), snp.cos(x) * t

    return _jvp_fn(rule)


@_custom_case("TypeError", ("grad",))
def jvp_rule_three_outputs():
    def rule(primals, tangents):  # !
        (x,), (t,) = primals, tangents
        return snp.sin(x), snp.cos(x) * t, t

    return _jvp_fn(rule)


# =================================================================================================
# Leaked tracers: a value from a finished trace used later is an UnexpectedTracerError naming
# where it is used (JAX's name; defined by the leaked-tracer work of issue 16).
_LEAKED = []


def _leaker():
    """A function that leaks its traced argument, new at each call: jit keeps one trace cache per
    function (as JAX), so the same function jitted again with the same signature would not run
    (nor leak) again."""
    def _leak_global(x):
        _LEAKED.append(x * 2.0)
        return x
    return _leak_global


def leak_add():
    _LEAKED.clear()
    secant.jit(_leaker())(1.0)
    return _LEAKED[0] + 1.0  # !


def leak_sin():
    _LEAKED.clear()
    secant.jit(_leaker())(1.0)
    return snp.sin(_LEAKED[0])  # !


def leak_in_new_jit():
    _LEAKED.clear()
    secant.jit(_leaker())(1.0)
    return secant.jit(lambda y: y + _LEAKED[0])(1.0)  # !


def leak_float():
    _LEAKED.clear()
    secant.jit(_leaker())(1.0)
    return float(_LEAKED[0])  # !


def leak_from_closure():
    box = {}

    def f(x):
        box["v"] = x
        return x

    secant.jit(f)(1.0)
    return box["v"] * 3.0  # !


# JAX traces scan's body even eagerly, so a carry stored outside is a tracer there and using it
# raises UnexpectedTracerError. secant runs an eager scan as the Python loop it means (as JAX's
# disable_jit does): the stored carry is a real value, the first one (0.0), and using it is
# right, never a leaked tracer (tests/test_leaked_tracers.py keeps the carries of an eager scan).
# Under jit the body is traced and such a store is a leak (leak_in_new_jit, leak_from_closure).
def leak_scan_carry():
    box = []

    def body(c, x):
        box.append(c)
        return c + x, x

    lax.scan(body, 0.0, snp.ones(3))
    return box[0] + 1.0  # !


for _f in (leak_add, leak_sin, leak_in_new_jit, leak_float, leak_from_closure):
    add(f"leak-{_f.__name__}", "leak", _f, "UnexpectedTracerError", _f)
add("leak-leak_scan_carry", "leak", leak_scan_carry, close_to(1.0), leak_scan_carry)


def leak_scan_carry_jit():
    box = []

    def body(c, x):
        box.append(c)
        return c + x, x

    secant.jit(lambda xs: lax.scan(body, 0.0, xs))(snp.ones(3))
    return box[-1] + 1.0  # !


add("leak-leak_scan_carry_jit", "leak", leak_scan_carry_jit, "UnexpectedTracerError",
    leak_scan_carry_jit)


# =================================================================================================
# Threads (run in a child process, from a cold start): 8 threads using jit, grad and vmap at once
# give what a sequential run gives.
def _thread_results(work, n=8):
    out, errors = [None] * n, []

    def run(i):
        try:
            out[i] = work(i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def _thread_fn(v):
    return snp.sum(snp.sin(v) * v)  # !


def threads_jit():
    return _thread_results(lambda i: secant.jit(_thread_fn)(snp.ones(i + 1)))  # !


def threads_grad():
    return _thread_results(lambda i: secant.grad(_thread_fn)(snp.ones(i + 1)))  # !


def threads_vmap():
    return _thread_results(lambda i: secant.vmap(_thread_fn)(snp.ones((3, i + 1))))  # !


def threads_jit_grad():
    return _thread_results(lambda i: secant.jit(secant.grad(_thread_fn))(snp.ones(i + 2)))  # !


def threads_mixed():
    kinds = (secant.jit(_thread_fn), secant.grad(_thread_fn), secant.vmap(_thread_fn))
    return _thread_results(lambda i: kinds[i % 3](snp.ones((2, 3)) if i % 3 == 2  # !
                                                    else snp.ones(3)))


def _expected(work):
    return Value(lambda r: all(np.allclose(np.asarray(a), np.asarray(work(i)))
                               for i, a in enumerate(r)), "the sequential results")


for _f, _w in ((threads_jit, lambda i: _thread_fn(snp.ones(i + 1))),
               (threads_grad, lambda i: (snp.sin(1.0) + snp.cos(1.0)) * snp.ones(i + 1)),
               (threads_vmap, lambda i: snp.full(3, (i + 1) * np.sin(1.0))),
               (threads_jit_grad, lambda i: (snp.sin(1.0) + snp.cos(1.0)) * snp.ones(i + 2)),
               (threads_mixed, lambda i: [_thread_fn(snp.ones(3)),
                                          (snp.sin(1.0) + snp.cos(1.0)) * snp.ones(3),
                                          snp.full(2, 3 * np.sin(1.0))][i % 3])):
    add(f"threads-{_f.__name__}", "threads", _f, _expected(_w), _f)


# =================================================================================================
# Limits: depth and size that come from user code are errors or results, never crashes.
def deep_expression():
    terms = 1500
    src = "def deep(x):\n    return " + " + ".join(["x"] * terms) + "\n"
    path = _user_file("deep_expression", src)
    deep = _load(path, "deep")
    return secant.grad(deep)(1.0)


def deep_expression_jit():
    src = "def deep(x):\n    return " + " * 1.0 + ".join(["x"] * 1500) + "\n"
    deep = _load(_user_file("deep_expression_jit", src), "deep")
    return secant.jit(deep)(1.0)


def _recurse_on_traced(x):
    return _recurse_on_traced(x * 0.5) if x > 1.0 else x  # !


def recursion_on_traced():
    return secant.jit(_recurse_on_traced)(8.0)


def huge_zeros_under_jit():
    return secant.jit(lambda x: snp.zeros((2 ** 19, 2 ** 19))[0, :4] + x)(1.0)  # !


def huge_ones_sum_under_jit():
    return secant.jit(lambda x: snp.ones((2 ** 20, 2 ** 20), dtype=snp.float32)[:2, 0] * x)(3.0)  # !


def _user_file(name, src):
    folder = tempfile.mkdtemp(prefix="secant_catalogue_")
    path = os.path.join(folder, f"{name}.py")
    with open(path, "w") as fh:
        fh.write(src)
    return path


def _load(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


add("limits-deep_expression-grad", "limits", deep_expression, close_to(1500.0), deep_expression,
    line=0)
add("limits-deep_expression-jit", "limits", deep_expression_jit, close_to(1500.0),
    deep_expression_jit, line=0)
add("limits-recursion_on_traced", "limits", recursion_on_traced, "SecantError",
    _recurse_on_traced)
add("limits-huge_zeros_under_jit", "limits", huge_zeros_under_jit, close_to([1.0] * 4),
    huge_zeros_under_jit)
add("limits-huge_ones_under_jit", "limits", huge_ones_sum_under_jit, close_to([3.0] * 2),
    huge_ones_sum_under_jit)


# The command line: a file with a syntax error is named with its line, without a traceback.
class CliResult:
    def __init__(self, proc, path, line):
        self.proc, self.path, self.line = proc, path, line


def _cli(src, line, target="grad"):
    path = _user_file("cli_input", src)
    proc = subprocess.run([sys.executable, "-m", "secant", target, f"{path}:f"],
                          capture_output=True, text=True, timeout=120)
    return CliResult(proc, path, line)


def _cli_check(res):
    err = res.proc.stderr
    return res.proc.returncode != 0 and "Traceback" not in err and f"{res.path}" in err \
        and f"{res.line}" in err


add("cli-syntax_error", "cli", lambda: _cli("def f(x):\n    return x +\n", 2),
    Value(_cli_check, "exit status != 0, the file and line 2, no traceback"), _cli, line=0)
add("cli-indentation_error", "cli", lambda: _cli("def f(x):\n  y = x\n    return y\n", 3),
    Value(_cli_check, "exit status != 0, the file and line 3, no traceback"), _cli, line=0)
add("cli-unsupported_construct", "cli",
    lambda: _cli("def f(x):\n    global G\n    G = x\n    return x * 2.0\n", 3),
    Value(_cli_check, "exit status != 0, the file and line 3, no traceback"), _cli, line=0)


# =================================================================================================
# Added when issue 16 was closed: threads sharing a live trace's values, custom rules checked
# against the function (and kept under vmap), pytrees of user classes, keyword misuse.
def _live_trace_in_other_thread(use):
    """Thread A jits a function that stores its tracer and waits; thread B runs `use` on it
    while A's trace is live; B's exception (or result) is returned."""
    box, stored, release, out = {}, threading.Event(), threading.Event(), {}

    def f(x):
        box["t"] = x * 2.0
        stored.set()
        release.wait(60)
        return x

    def b():
        stored.wait(60)
        try:
            out["r"] = use(box["t"])
        except BaseException as e:  # noqa: BLE001
            out["e"] = e
        release.set()

    ta = threading.Thread(target=lambda: secant.jit(f)(snp.ones(2)))
    tb = threading.Thread(target=b)
    ta.start()
    tb.start()
    ta.join(120)
    tb.join(120)
    if "e" in out:
        raise out["e"]
    return out.get("r")


def threads_tracer_other_thread():
    return _live_trace_in_other_thread(lambda t: t + 1.0)  # !


def threads_tracer_other_thread_jit():
    return _live_trace_in_other_thread(lambda t: secant.jit(lambda y: y * t)(1.0))  # !


def threads_tracer_other_thread_bool():
    return _live_trace_in_other_thread(lambda t: bool(t[0] > 0))  # !


for _f in (threads_tracer_other_thread, threads_tracer_other_thread_jit,
           threads_tracer_other_thread_bool):
    add(f"threads-{_f.__name__}", "threads", _f, "UnexpectedTracerError", _f)


@secant.custom_vjp
def _thread_custom(x):
    return snp.sin(x)


def _thread_custom_fwd(x):
    return snp.sin(x), x


def _thread_custom_bwd(x, g):
    return (2.0 * g * snp.cos(x),)


_thread_custom.defvjp(_thread_custom_fwd, _thread_custom_bwd)


def threads_custom_vjp_grad():
    return _thread_results(lambda i: secant.vmap(secant.grad(_thread_custom))(  # !
        snp.full(i + 1, 0.5)))


def threads_static_args():
    g = secant.jit(lambda x, n: x * n, static_argnums=1)
    return _thread_results(lambda i: g(snp.ones(2), i))  # !


add("threads-threads_custom_vjp_grad", "threads", threads_custom_vjp_grad,
    _expected(lambda i: 2.0 * np.cos(0.5) * np.ones(i + 1)), threads_custom_vjp_grad)
add("threads-threads_static_args", "threads", threads_static_args,
    _expected(lambda i: i * np.ones(2)), threads_static_args)


# custom rules: fwd's primal output against f's own output type
@_custom_case("TypeError", ("grad", "jit-grad", "vmap-grad"))
def fwd_int_primal():
    @secant.custom_vjp
    def f(x):
        return snp.sin(x)

    def fwd(x):  # !
        return snp.sin(x).astype(snp.int32), x

    def bwd(x, g):
        return (g * snp.cos(x),)

    f.defvjp(fwd, bwd)
    return f


@_custom_case("TypeError", ("grad", "jit-grad"))
def fwd_primal_shape():
    @secant.custom_vjp
    def f(x):
        return x * 2.0

    def fwd(x):  # !
        return x * snp.ones(3), x

    def bwd(x, g):
        return (2.0 * snp.sum(g),)

    f.defvjp(fwd, bwd)
    return f


@_custom_case(close_to(6.0 * np.cos(X)), ("grad", "jit-grad"))
def fwd_int_output_beside_float():
    @secant.custom_vjp
    def f(x):
        return snp.sin(x), snp.floor(x).astype(snp.int32)

    def fwd(x):  # !
        return (snp.sin(x), snp.floor(x).astype(snp.int32)), x

    def bwd(x, g):
        return (3.0 * g[0] * snp.cos(x),)

    f.defvjp(fwd, bwd)
    return lambda x: 2.0 * f(x)[0]


def _tripled_vjp():
    @secant.custom_vjp
    def f(x):
        return snp.sin(x)

    def fwd(x):
        return snp.sin(x), x

    def bwd(x, g):
        return (3.0 * g * snp.cos(x),)

    f.defvjp(fwd, bwd)
    return f


def vmapped_custom_vjp_keeps_rule():
    f = _tripled_vjp()
    return secant.grad(lambda v: snp.sum(secant.vmap(f)(v)))(XS)  # !


def vmapped_custom_jvp_keeps_rule():
    @secant.custom_jvp
    def f(x):
        return snp.sin(x)

    @f.defjvp
    def rule(p, t):
        return snp.sin(p[0]), 3.0 * snp.cos(p[0]) * t[0]

    return secant.jvp(secant.vmap(f), (XS,), (snp.ones(2),))[1]  # !


add("custom-vmapped_custom_vjp_keeps_rule", "custom", vmapped_custom_vjp_keeps_rule,
    close_to(3.0 * np.cos(XS)), vmapped_custom_vjp_keeps_rule)
add("custom-vmapped_custom_jvp_keeps_rule", "custom", vmapped_custom_jvp_keeps_rule,
    close_to(3.0 * np.cos(XS)), vmapped_custom_jvp_keeps_rule)


# pytrees of the user's classes
class _Unregistered:
    def __init__(self, a):
        self.a = a


@secant.tree_util.register_pytree_node_class
class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@secant.tree_util.register_pytree_node_class
class _BadFlatten:
    def __init__(self, a):
        self.a = a

    def tree_flatten(self):
        return self.a          # not a pair (children, aux_data)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def pytree_unregistered_jit():
    return secant.jit(lambda p: p.a * 2.0)(_Unregistered(1.0))  # !


def pytree_unregistered_grad():
    return secant.grad(lambda p: p.a * 2.0)(_Unregistered(1.0))  # !


def pytree_bad_flatten_jit():
    return secant.jit(lambda p: p.a * 2.0)(_BadFlatten(1.0))  # !


def pytree_bad_flatten_grad():
    return secant.grad(lambda p: p.a * 2.0)(_BadFlatten(1.0))  # !


def pytree_registered_grad():
    return secant.grad(lambda p: p.a * p.b)(_Pair(2.0, 3.0)).b  # !


def pytree_registered_vmap():
    return secant.vmap(lambda p: p.a * p.b)(_Pair(XS, XS))  # !


for _f, _e in ((pytree_unregistered_jit, "TypeError"), (pytree_unregistered_grad, "TypeError"),
               (pytree_bad_flatten_jit, "ValueError"), (pytree_bad_flatten_grad, "ValueError"),
               (pytree_registered_grad, close_to(2.0)),
               (pytree_registered_vmap, close_to(XS * XS))):
    add(f"pytree-{_f.__name__}", "pytree", _f, _e, _f)


# a differentiated or batched value passed into a pytree's aux data (register_dataclass's
# meta_fields, a flax struct field with pytree_node=False): it would carry no derivative or batch
# axis (a silent zero), so it is refused, naming the user's line (not secant's generated code)
@dataclasses.dataclass(frozen=True)
class _Meta:
    w: object
    scale: object

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)  # !


secant.tree_util.register_dataclass(_Meta, data_fields=["w"], meta_fields=["scale"])


@dataclasses.dataclass(frozen=True)
class _Leaves:
    w: object
    k: object


secant.tree_util.register_dataclass(_Leaves, data_fields=["w", "k"], meta_fields=[])
_V = np.array([0.1, 0.2, 0.3])
_VS = np.stack([_V, 2 * _V])


def aux_meta_built(x):
    s = _Meta(x, x[0] + 1.0)  # !
    return snp.sum(s.w * s.scale)


def aux_meta_replaced(x):
    s = dataclasses.replace(_Meta(x, 1.0), scale=x[1])  # !
    return snp.sum(s.w * s.scale)


def aux_meta_replace_method(x):
    s = _Meta(x, 1.0).replace(scale=x[1])
    return snp.sum(s.w * s.scale)


def _built_in_a_helper(w, k):
    return _Meta(w, k)  # !


def aux_meta_built_in_a_helper(x):
    s = _built_in_a_helper(x, 2.0 * x[0])
    return snp.sum(s.w * s.scale)


def aux_meta_from_a_leaf(b):
    s = _Meta(b.w, b.k)  # !
    return snp.sum(s.w * s.scale)


_AUX_RUNS = {"grad": lambda f, x: secant.grad(f)(x),
             "jit-grad": lambda f, x: secant.jit(secant.grad(f))(x),
             "vmap": lambda f, x: secant.vmap(f)(x),
             "vmap-grad": lambda f, x: secant.vmap(secant.grad(f))(x),
             "jvp": lambda f, x: secant.jvp(f, (x,), (x,))[1]}
for _f, _marked in ((aux_meta_built, aux_meta_built), (aux_meta_replaced, aux_meta_replaced),
                    (aux_meta_replace_method, _Meta.replace),
                    (aux_meta_built_in_a_helper, _built_in_a_helper),
                    (aux_meta_from_a_leaf, aux_meta_from_a_leaf)):
    for _r, _run in _AUX_RUNS.items():
        _one, _batch = (_Leaves(_V, 0.5), _Leaves(_VS, np.array([0.5, 0.7]))) \
            if _f is aux_meta_from_a_leaf else (_V, _VS)
        _line = None
        if _f is aux_meta_replace_method and _r == "jit-grad":     # (the derivative's own
            _src, _first = inspect.getsourcelines(_f)             # check, at the call)
            _line = _first + next(i for i, t in enumerate(_src) if ".replace(" in t)
        add(f"aux-{_f.__name__}-{_r}", "aux",
            lambda f=_f, run=_run, x=(_batch if _r.startswith("vmap") else _one): run(f, x),
            "SecantError", _marked, line=_line)


# keyword misuse: the API called with what it does not take
def _kw(x, y=1.0):
    return x * y


def kw_grad_argnum_typo():
    return secant.grad(_kw, argnum=0)  # !


def kw_vmap_out_axis_typo():
    return secant.vmap(_kw, out_axis=1)  # !


def kw_jit_donate_not_int():
    return secant.jit(_kw, donate_argnums="x")  # !


def kw_jit_static_argnums_float():
    return secant.jit(_kw, static_argnums=1.0)  # !


def kw_grad_unknown_keyword():
    return secant.grad(_kw)(2.0, z=3.0)  # !


def kw_grad_duplicate_keyword():
    return secant.value_and_grad(_kw)(2.0, 3.0, y=3.0)  # !


def kw_vmap_keyword_sizes():
    return secant.vmap(_kw)(XS, y=XS[:1])  # !


def kw_jvp_keyword():
    return secant.jvp(_kw, (2.0,), (1.0,), has_axu=True)  # !


def kw_keyword_argument_value():
    return secant.grad(_kw)(2.0, y=3.0)  # !


def kw_jit_keyword_argument_value():
    return secant.jit(_kw)(x=2.0, y=4.0)  # !


for _f, _e in ((kw_grad_argnum_typo, "TypeError"), (kw_vmap_out_axis_typo, "TypeError"),
               (kw_jit_donate_not_int, "TypeError"), (kw_jit_static_argnums_float, "TypeError"),
               (kw_grad_unknown_keyword, "TypeError"), (kw_grad_duplicate_keyword, "TypeError"),
               (kw_vmap_keyword_sizes, "ValueError"), (kw_jvp_keyword, "TypeError"),
               (kw_keyword_argument_value, close_to(3.0)),
               (kw_jit_keyword_argument_value, close_to(8.0))):
    add(f"api-{_f.__name__}", "api", _f, _e, _f)


# variadic library functions handed to a transform directly
def variadic_vmap_atleast_3d():
    return secant.vmap(snp.atleast_3d)(XS.reshape(2, 1))[:, 0, 0, 0]  # !


def variadic_jvp_meshgrid():
    return secant.jvp(snp.meshgrid, (XS, XS), (XS, XS))[1][0][0]  # !


add("api-variadic_vmap_atleast_3d", "api", variadic_vmap_atleast_3d, close_to(XS),
    variadic_vmap_atleast_3d)
add("api-variadic_jvp_meshgrid", "api", variadic_jvp_meshgrid, close_to(XS),
    variadic_jvp_meshgrid)


# =================================================================================================
# Running the cases that may crash: all in one child process with a memory limit; each outcome
# is printed (and flushed) as it is known, so a crash loses only the cases after it.
def run_in_child(ids, timeout=240, memory_gib=12):
    """{case id: (outcome, detail)} for `ids`, run in a fresh Python (a cold start)."""
    code = textwrap.dedent(f"""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({memory_gib} << 30, {memory_gib} << 30))
        sys.setrecursionlimit(3000)
        sys.path.insert(0, {os.path.dirname(HERE)!r})
        import error_catalogue_cases as c
        for cid in {list(ids)!r}:
            print("@@", json.dumps([cid, *c.classify(c.CASES[cid])]), flush=True)
    """)
    results = {}
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = "timed out", "timeout"
    import json
    for line in out.splitlines():
        if line.startswith("@@ "):
            cid, outcome, detail = json.loads(line[3:])
            results[cid] = (outcome, detail)
    for cid in ids:
        if cid not in results:
            results[cid] = ("internal", f"the child process died (exit {rc}): "
                                        f"{_short(err[-400:], 400)}")
    return results


def in_child(case):
    return case.group in SUBPROCESS_GROUPS


assert len(CASES) >= 300, len(CASES)
