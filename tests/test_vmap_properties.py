"""Property tests for vmap over the random programs of tests/test_grad_properties.py (straight-line
compositions of unary, binary, reduction and matmul ops over random broadcast shapes, written out
as source): for random in_axes (each argument batched along a random axis, negative ones
included, or not batched) and random out_axes, `vmap(f)(xs)` equals stacking `f` over a Python
loop of the examples, eagerly and under jit. The programs return their last value (any shape)
or its sum, so out_axes moves arrays of every rank."""
import numpy as np
from hypothesis import given, note, strategies as st

import secant

import test_grad_properties as gp
from test_grad_properties import enable_x64, programs


def setup_module():
    gp.setup_module()


def teardown_module():
    gp.teardown_module()


@st.composite
def batched_programs(draw):
    source, _, shapes = draw(programs())
    if draw(st.booleans()):             # return the last value itself, not its reduction
        lines = source.splitlines()
        last = [ln for ln in lines if ln.startswith("    v")][-1].split("=")[0].strip()
        lines = [f"    return {last}" if ln.startswith("    return") else ln for ln in lines]
        source = "\n".join(lines) + "\n"
    size = draw(st.integers(1, 3))
    in_axes = []
    for name in ("x", "y", "w"):
        nd = len(shapes[name])
        in_axes.append(draw(st.one_of(st.none(), st.integers(-(nd + 1), nd))))
    if all(a is None for a in in_axes):
        in_axes[0] = 0
    return source, shapes, size, tuple(in_axes), draw(st.integers(0, 2 ** 32 - 1))


def _check(case, jit):
    source, shapes, size, in_axes, seed = case
    note(source)
    note(f"in_axes={in_axes}, size={size}")
    f = gp.load(source)
    rng = np.random.default_rng(seed)
    examples = [[rng.uniform(-1.5, 1.5, size=shapes[n]) for n in ("x", "y", "w")]
                for _ in range(size)]
    args = [np.stack([ex[i] for ex in examples], axis=ax) if ax is not None else examples[0][i]
            for i, ax in enumerate(in_axes)]
    per_example = [np.asarray(f(*[ex[i] if ax is not None else examples[0][i]
                                  for i, ax in enumerate(in_axes)])) for ex in examples]
    rank = np.ndim(per_example[0])
    out_axis = int(rng.integers(-(rank + 1), rank + 1))
    note(f"out_axes={out_axis}")
    want = np.stack(per_example, axis=out_axis)
    g = secant.vmap(f, in_axes=in_axes, out_axes=out_axis)
    got = np.asarray((secant.jit(g) if jit else g)(*args))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@given(batched_programs())
def test_vmap_matches_a_python_loop(case):
    with enable_x64():
        _check(case, jit=False)


@given(batched_programs())
def test_jit_vmap_matches_a_python_loop(case):
    with enable_x64():
        _check(case, jit=True)
