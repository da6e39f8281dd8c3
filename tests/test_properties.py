"""Property tests: random compositions of ops over random shapes give the same result eagerly
(NumPy) and under jit (XLA), and eager results match a float64 NumPy reference."""
import numpy as np
from hypothesis import given, strategies as st

import secant
import secant.numpy as snp

# ops total on the reals (so no NaN enters and comparisons stay exact), with their NumPy twins
UNARY = [
    ("sin", snp.sin, np.sin), ("cos", snp.cos, np.cos), ("tanh", snp.tanh, np.tanh),
    ("arctan", snp.arctan, np.arctan), ("abs", snp.abs, np.abs), ("neg", snp.negative, np.negative),
    ("square_clip", lambda x: snp.clip(x * x, -4.0, 4.0), lambda x: np.clip(x * x, -4, 4)),
    ("logistic", secant.lax.logistic, lambda x: 1 / (1 + np.exp(-x))),
    ("exp_tanh", lambda x: snp.exp(snp.tanh(x)), lambda x: np.exp(np.tanh(x))),
]
BINARY = [
    ("add", snp.add, np.add), ("sub", snp.subtract, np.subtract),
    ("mul", snp.multiply, np.multiply), ("max", snp.maximum, np.maximum),
    ("min", snp.minimum, np.minimum),
    ("where", lambda x, y: snp.where(x > y, x, y * 0.5), lambda x, y: np.where(x > y, x, y * 0.5)),
    ("hypot", snp.hypot, np.hypot),
]
REDUCE = [
    # keepdims: every value stays broadcastable against every other
    ("sum", lambda x, a: snp.sum(x, axis=a, keepdims=True),
     lambda x, a: np.sum(x, axis=a, keepdims=True)),
    ("max", lambda x, a: snp.max(x, axis=a, keepdims=True),
     lambda x, a: np.max(x, axis=a, keepdims=True)),
    ("mean", lambda x, a: snp.mean(x, axis=a, keepdims=True),
     lambda x, a: np.mean(x, axis=a, keepdims=True)),
]


@st.composite
def programs(draw):
    """A random straight-line program over 2 inputs whose shapes broadcast together."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    # the second input drops leading dims and sets some dims to 1: NumPy broadcasting
    k = draw(st.integers(0, ndim))
    shape2 = tuple(d if draw(st.booleans()) else 1 for d in shape[k:])
    steps = draw(st.lists(st.tuples(st.sampled_from(["u", "b", "r"]), st.integers(0, 100),
                                    st.integers(0, 100), st.integers(0, 100)),
                          min_size=1, max_size=8))
    seed = draw(st.integers(0, 2 ** 31 - 1))
    return shape, shape2, steps, seed


def run(program, x, y, lib):
    """Interpret the program with secant (lib=0) or NumPy (lib=1)."""
    _, _, steps, _ = program
    vals = [x, y]
    for kind, i, j, k in steps:
        a = vals[i % len(vals)]
        if kind == "u":
            vals.append(UNARY[j % len(UNARY)][1 + lib](a))
        elif kind == "b":
            b = vals[j % len(vals)]
            vals.append(BINARY[k % len(BINARY)][1 + lib](a, b))
        elif a.ndim > 0:
            axis = j % a.ndim
            vals.append(REDUCE[k % len(REDUCE)][1 + lib](a, axis))
    return vals[-1]


@given(programs())
def test_jit_agrees_with_eager_and_numpy(program):
    shape, shape2, _, seed = program
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    y = rng.uniform(-2, 2, shape2).astype(np.float32)
    eager = run(program, snp.asarray(x), snp.asarray(y), 0)
    jitted = secant.jit(lambda a, b: run(program, a, b, 0))(x, y)
    expected = run(program, x.astype(np.float64), y.astype(np.float64), 1)
    assert eager.shape == jitted.shape == np.shape(expected)
    assert eager.dtype == jitted.dtype == np.float32
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-4, atol=1e-4)


@given(st.sampled_from([np.float32, np.int32, np.int8, np.uint8, np.bool_]),
       st.sampled_from([np.float32, np.int32, np.int16, np.uint32, np.bool_]),
       st.sampled_from([None, 1, 2.5, True]))
def test_promotion_agrees_between_eager_and_jit(dt1, dt2, scalar):
    x = np.ones((2,), dt1)
    y = np.ones((2,), dt2)

    def f(a, b):
        out = a * b if dt1 != np.bool_ or dt2 != np.bool_ else a & b
        return out if scalar is None else out + scalar

    eager = f(snp.asarray(x), snp.asarray(y))
    jitted = secant.jit(f)(x, y)
    assert eager.dtype == jitted.dtype
    assert eager.weak_type == jitted.weak_type
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(jitted))
