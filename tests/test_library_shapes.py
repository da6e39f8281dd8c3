"""Hypothesis over shapes for the library: every case in tests/library_cases/ whose function
takes arrays of any shape (elementwise and broadcasting functions, reductions, the softmax
family, distributions, ...) is run at shapes, dtypes and values hypothesis draws.

A case's shape family is found by probing, once per public function: its first case whose
arguments all share one shape, whose reference (NumPy/SciPy) and secant function both accept
that shape at other ranks and sizes, is the function's representative; the ranks both accept
are the family, and when both also accept mutually broadcastable shapes (several arguments),
hypothesis draws broadcasting shapes. A drawn shape the reference refuses (a cross product of
1-vectors) is discarded: the family is what NumPy/SciPy accept, and secant must accept it too.
For each drawn example (float32 without x64 or float64
with it; complex64/complex128 for complex cases):
- value: secant against the reference, and float32 inputs give float32 (complex64) results;
- jit against eager;
- vmap over a batch of 2 against a Python loop;
- grad (differentiable cases, 64-bit draws, small inputs) against central finite differences.

Sizing: one test per public function, each running the profile's max_examples shared out over
the functions, and at least PER_FUNCTION_DEFAULT: a few per function in the default profile
(`make test`), 10,000 examples in all in the thorough one (HYPOTHESIS_PROFILE=thorough). `python -m
tests.test_library_shapes` prints how many public functions the shape property covers.
"""
import functools
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings, strategies as st
import hypothesis.extra.numpy as hn

import secant
from tests.test_library_cases import CASES as _PARAMS, _fd, _loss

# XLA compiles are over half this file's CPU time (13.0 of 22.3 CPU s, 261 compiles, in a
# third of its tests; bench/pytest_cpu.py): compiled with LLVM's optimisation off in the default
# profile (conftest; its checks are tolerance-based)
pytestmark = pytest.mark.usefixtures("fast_compiles")

PER_FUNCTION_DEFAULT = 2
MAX_SIDE = 3
PROBE_SIZES = (2, 3, 1)            # a probe shape of rank q is PROBE_SIZES[:q]

_CASES = [p.values[0] for p in _PARAMS]
_NAMES = sorted({c.name for c in _CASES})


def _cast(make, rng, shape, case, dtype):
    base = np.dtype(np.complex128 if case.complex else np.float64)
    x = np.asarray((make or _uniform)(rng, shape, base))
    return x.astype(dtype) if x.dtype.kind in "fc" else x


def _uniform(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dtype)


def _quiet(f, *xs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(*xs)


def _runs(case, shapes):
    """Whether the reference and the secant function both accept arrays of these shapes
    (float64 values from the case's maker), giving arrays (not tuples) of one shape."""
    rng = np.random.default_rng(0)
    secant.config.update("enable_x64", True)
    try:
        xs = [_cast(case.make, rng, s, case, np.complex128 if case.complex else np.float64)
              for s in shapes]
        want = np.asarray(_quiet(case.ref, *xs))
        got = np.asarray(_quiet(case.fn, *xs))
    except Exception:
        return False
    finally:
        secant.config.update("enable_x64", False)
    return want.dtype != object and want.shape == got.shape


@functools.lru_cache(maxsize=None)
def family(name):
    """(case, ranks, broadcast) for the public function `name`, or None when no case of it
    takes arrays of any shape."""
    for case in _CASES:
        if case.name != name or case.ref is None or not case.shapes or \
                len(set(map(tuple, case.shapes))) != 1:
            continue
        k = len(case.shapes)
        runs = [q for q in range(4) if _runs(case, [PROBE_SIZES[:q]] * k)]
        if not runs:
            continue
        low = runs[-1]                  # the ranks both accept: a run ending at the highest
        while low - 1 in runs:
            low -= 1
        if low == runs[-1]:
            continue                    # one rank only: not a family of shapes
        ranks = (low, runs[-1])
        broadcast = k > 1 and ranks[-1] >= 2 and _runs(
            case, [(2, 3)] + [(3,) if i % 2 else (2, 1) for i in range(1, k)])
        return case, ranks, broadcast
    return None


def _tolerances(case, dtype):
    if np.dtype(dtype) in (np.float32, np.complex64):
        return max(case.rtol, 2e-3), max(case.atol, 2e-4)
    return case.rtol, case.atol


def _close(got, want, rtol, atol, what):
    got, want = np.asarray(got), np.asarray(want)
    scale = max(1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


@st.composite
def examples(draw, name):
    case, ranks, broadcast = family(name)
    k = len(case.shapes)
    if broadcast and draw(st.booleans()):
        shapes = draw(hn.mutually_broadcastable_shapes(
            num_shapes=k, min_dims=ranks[0], max_dims=ranks[-1], max_side=MAX_SIDE)).input_shapes
    else:
        shapes = (draw(hn.array_shapes(min_dims=ranks[0], max_dims=ranks[-1], min_side=1,
                                       max_side=MAX_SIDE)),) * k
    wide = draw(st.booleans())
    dtype = ((np.complex128 if case.complex else np.float64) if wide else
             (np.complex64 if case.complex else np.float32))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return case, [tuple(s) for s in shapes], np.dtype(dtype), seed


def _examples_per_function():
    """At least PER_FUNCTION_DEFAULT each; the profile's max_examples shared out over the
    covered functions when it is larger (10,000 in all for the thorough profile)."""
    total = settings().max_examples
    return max(PER_FUNCTION_DEFAULT, math.ceil(total / max(1, coverage()[0])))


# counts of values in bins whose edges are computed in the input's dtype (as NumPy's and JAX's
# are): a float64 reference moves a value lying on an edge (a constant input's middle, always)
# into the next bin, so the reference runs in the input's dtype too
_REF_IN_INPUT_DTYPE = ("numpy.histogram",)


def _check(case, shapes, dtype, seed):
    x64 = dtype.itemsize == 8 and dtype.kind == "f" or dtype.itemsize == 16
    rtol, atol = _tolerances(case, dtype)
    rng = np.random.default_rng(seed)
    xs = [_cast(case.make, rng, s, case, dtype) for s in shapes]
    secant.config.update("enable_x64", x64)
    try:
        try:
            want = _quiet(case.ref, *[x.astype(np.complex128 if x.dtype.kind == "c" else
                                                np.float64) if x.dtype.kind in "fc" and
                                      case.name not in _REF_IN_INPUT_DTYPE else x for x in xs])
        except Exception:
            reject()            # shapes the reference refuses (cross of 1-vectors) are not
        #                         in the family: the draw is discarded
        out = _quiet(case.fn, *xs)
        _close(out, want, rtol, atol, f"value at {shapes} {dtype}")
        out_dtype = np.asarray(out).dtype
        if not x64 and out_dtype.kind in "fc" and np.size(out):
            assert out_dtype.itemsize == (8 if out_dtype.kind == "c" else 4), \
                f"{dtype} inputs gave a {out_dtype} result"
        _close(_quiet(secant.jit(case.fn), *xs), out, rtol, atol, "jit against eager")
        batch = [np.stack([x, _cast(case.make, rng, s, case, dtype)]) for x, s in
                 zip(xs, shapes)]
        loop = [_quiet(case.fn, *[b[i] for b in batch]) for i in range(2)]
        batched = _quiet(secant.vmap(case.fn), *batch)
        several = isinstance(out, (tuple, list))     # a list of arrays (gradient of a matrix)
        for j in range(len(out) if several else 1):
            pick = (lambda v: v[j]) if several else (lambda v: v)
            _close(pick(batched), np.stack([np.asarray(pick(v)) for v in loop]), rtol, atol,
                   "vmap against a loop")
        if case.differentiable and x64 and not several and \
                sum(math.prod(s) for s in shapes) <= 24:
            _check_grad(case, xs, rng, rtol, atol)
    finally:
        secant.config.update("enable_x64", False)


# a standard deviation over one element (or equal elements) is sqrt at 0: no derivative there
# (NaN, as in JAX), while its finite difference is 0
_SQRT_OF_ZERO_SPREAD = ("numpy.std", "numpy.nanstd")


def _check_grad(case, xs, rng, rtol, atol):
    out = np.asarray(case.fn(*xs))
    if not np.all(np.isfinite(out)) or case.name in _SQRT_OF_ZERO_SPREAD and np.any(out == 0):
        return
    weights = rng.uniform(-1, 1, out.shape)
    if out.dtype.kind == "c":
        weights = weights + 1j * rng.uniform(-1, 1, out.shape)
    loss = _loss(case, weights)
    k = int(rng.integers(len(xs)))
    want = _quiet(_fd, loss, xs, k)
    if np.all(np.isfinite(want)):
        _close(secant.grad(loss, argnums=k)(*xs), want, max(rtol, 1e-5), max(atol, 1e-7),
               f"grad in argument {k}")


@pytest.mark.parametrize("name", [n for n in _NAMES if family(n) is not None])
def test_shape_property(name):
    """(functions none of whose cases takes arrays of any shape are listed by
    `python -m tests.test_library_shapes`)"""
    @settings(max_examples=_examples_per_function(), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(name))
    def run(example):
        _check(*example)

    run()


def coverage():
    """(covered public functions, public functions with a Case)."""
    return sum(family(n) is not None for n in _NAMES), len(_NAMES)


if __name__ == "__main__":
    covered, total = coverage()
    print(f"shape property: {covered} of {total} public functions with Cases")
    for n in _NAMES:
        if family(n) is None:
            print("  not covered:", n)
