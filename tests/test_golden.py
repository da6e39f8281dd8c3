"""Golden-file tests: the generated gradient source of the documented functions in
tests/golden/functions.py is checked in as tests/golden/<case>_grad.py.txt and compared exactly,
so every change to generated code is seen and reviewed as a diff.

Each golden file holds the source of the gradient function (`secant.source(secant.grad(...))`)
followed by the source of every generated function it calls (helpers' vjps such as
`_dense_vjp`), in the order they are first called.

When the code generator changes on purpose, regenerate the files and review the diff:

    SECANT_UPDATE_GOLDEN=1 .venv/bin/pytest -q tests/test_golden.py
    git diff tests/golden/

With SECANT_UPDATE_GOLDEN=1 the comparison tests rewrite the files instead of comparing.
Every golden gradient is also checked numerically against central finite differences in
float64, so a golden file can never hold wrong code that merely looks right.
"""
import os
import pathlib

import numpy as np
import pytest

import secant
from golden import functions as F     # tests/ is on sys.path under pytest

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"


def _inputs(name, rng):
    """Positional arguments for each case (float64 arrays; static flags as Python values)."""
    r = lambda *shape: rng.normal(size=shape)          # noqa: E731
    if name == "polynomial":
        return (r(5),)
    if name == "mlp_loss":
        params = {"w1": r(3, 4) / 2, "b1": r(4) / 2, "w2": r(4, 2) / 2, "b2": r(2) / 2}
        return (params, r(5, 3), r(5, 2))
    if name == "softmax_cross_entropy":
        labels = np.eye(3)[rng.integers(0, 3, size=4)]
        return (r(4, 3), labels)
    if name == "with_helper":
        return (r(3, 3) / 2, r(3) / 2, r(2, 3))
    if name.startswith("static_branch"):
        x = r(2, 3) if name.endswith("2d") else r(3)
        return (x, r(3), name.startswith("static_branch_normalise"))
    if name == "static_loop":
        return (r(3), r(3) / 2)
    if name == "grow_until_large":
        return (np.abs(r(3)) * 0.3 + 0.1, np.asarray(1.2 + abs(rng.normal()) / 5))
    raise KeyError(name)


# case name -> (function, argnums)
CASES = {
    "polynomial": (F.polynomial, 0),
    "mlp_loss": (F.mlp_loss, 0),
    "softmax_cross_entropy": (F.softmax_cross_entropy, 0),
    "with_helper": (F.with_helper, (0, 1)),
    "static_branch": (F.static_branch, (0, 1)),
    "static_loop": (F.static_loop, (0, 1)),
}
# what jit(grad(f)) traces: the derivative of the functionalised f (<case>_jit_grad.py.txt)
JIT_CASES = {
    "static_loop": (F.static_loop, (0, 1)),
    "grow_until_large": (F.grow_until_large, (0, 1)),
}

# (case, inputs) pairs for the numerical check: the static branch is run both ways
NUMERIC = ["polynomial", "mlp_loss", "softmax_cross_entropy", "with_helper",
           "static_branch_plain_1d", "static_branch_plain_2d", "static_branch_normalise_1d",
           "static_branch_normalise_2d", "static_loop"]


def generated_program(g):
    """The gradient's source, then the source of each generated function it calls, each under
    the name its caller uses; two different functions a reader would see under one name (two
    vjps of one helper for different arguments, called from different callers) each named by
    what they differentiate (secant/codegen/program.py)."""
    from secant.codegen.program import program_source
    return program_source(g)


@pytest.mark.parametrize("case", sorted(CASES) + [f"{c}_jit" for c in sorted(JIT_CASES)])
def test_generated_source_matches_golden(case):
    if case.endswith("_jit"):
        fn, argnums = JIT_CASES[case[:-4]]
        text = generated_program(secant.grad(fn, argnums=argnums).__secant_staged__())
    else:
        fn, argnums = CASES[case]
        text = generated_program(secant.grad(fn, argnums=argnums))
    path = GOLDEN / f"{case}_grad.py.txt"
    if UPDATE:
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run SECANT_UPDATE_GOLDEN=1 pytest {__file__}"
    expected = path.read_text()
    assert text == expected, (
        f"the generated source of grad({fn.__name__}) changed; if that is intended, regenerate "
        f"with SECANT_UPDATE_GOLDEN=1 and review `git diff tests/golden/`")


def test_golden_files_compile():
    """Every golden file is valid Python (a reader can paste it)."""
    for path in sorted(GOLDEN.glob("*_grad.py.txt")):
        compile(path.read_text(), str(path), "exec")


def test_every_golden_file_has_a_case():
    stale = {p.name for p in GOLDEN.glob("*_grad.py.txt")} - {f"{c}_grad.py.txt" for c in CASES} \
        - {f"{c}_jit_grad.py.txt" for c in JIT_CASES}
    assert not stale, f"golden files without a case (delete them): {sorted(stale)}"


# --- numerical checks ---------------------------------------------------------------------------
def finite_difference_grad(fn, args, argnum, eps=1e-6):
    """Central differences of scalar fn with respect to args[argnum] (same structure back)."""
    arg = args[argnum]

    def f_at(new_arg):
        a = list(args)
        a[argnum] = new_arg
        return float(np.asarray(fn(*a)))

    def grad_leaf(leaf, key):
        out = np.zeros_like(leaf)
        for i in np.ndindex(leaf.shape):
            plus, minus = leaf.copy(), leaf.copy()
            plus[i] += eps
            minus[i] -= eps
            if key is None:
                out[i] = (f_at(plus) - f_at(minus)) / (2 * eps)
            else:
                out[i] = (f_at({**arg, key: plus}) - f_at({**arg, key: minus})) / (2 * eps)
        return out
    if isinstance(arg, dict):
        return {k: grad_leaf(arg[k], k) for k in arg}
    return grad_leaf(arg, None)


def _close(actual, expected):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected)
        for k in expected:
            _close(actual[k], expected[k])
        return
    actual = np.asarray(actual)
    assert actual.dtype == np.float64
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", NUMERIC)
def test_golden_gradient_matches_finite_differences(case, x64):
    name = "static_branch" if case.startswith("static_branch") else case
    fn, argnums = CASES[name]
    args = _inputs(case, np.random.default_rng(sum(map(ord, case))))
    grads = secant.grad(fn, argnums=argnums)(*args)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not isinstance(argnums, tuple):
        grads = (grads,)
    assert len(grads) == len(nums)
    for g, i in zip(grads, nums):
        _close(g, finite_difference_grad(fn, args, i))


@pytest.mark.parametrize("case", sorted(JIT_CASES))
def test_golden_staged_gradient_under_jit_matches_finite_differences(case, x64):
    fn, argnums = JIT_CASES[case]
    args = _inputs(case, np.random.default_rng(sum(map(ord, case))))
    grads = secant.jit(secant.grad(fn, argnums=argnums))(*args)
    for g, i in zip(grads, argnums):
        _close(g, finite_difference_grad(fn, args, i))


def test_golden_gradients_under_jit(x64):
    """The same generated code traced into XLA agrees with the eager run."""
    args = _inputs("mlp_loss", np.random.default_rng(1))
    g = secant.grad(F.mlp_loss)
    eager, jitted = g(*args), secant.jit(g)(*args)
    for k in eager:
        np.testing.assert_allclose(np.asarray(jitted[k]), np.asarray(eager[k]), rtol=1e-10)


# --- vmap: the generated batched source (<case>_vmap.py.txt), checked against a Python loop ----
VMAP_CASES = {
    "polynomial": (F.polynomial, 0),
    "softmax_cross_entropy": (F.softmax_cross_entropy, 0),
    "with_helper": (F.with_helper, (None, None, 0)),
    # per-example gradients: the batched source of a generated derivative
    "mlp_loss_grad": (secant.grad(F.mlp_loss), (None, 0, 0)),
}


@pytest.mark.parametrize("case", sorted(VMAP_CASES))
def test_generated_vmap_matches_golden(case):
    fn, in_axes = VMAP_CASES[case]
    text = generated_program(secant.vmap(fn, in_axes=in_axes))
    path = GOLDEN / f"{case}_vmap.py.txt"
    if UPDATE:
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run SECANT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), (
        f"the generated source of vmap({fn.__name__}) changed; if that is intended, regenerate "
        "with SECANT_UPDATE_GOLDEN=1 and review `git diff tests/golden/`")
    compile(text, str(path), "exec")


@pytest.mark.parametrize("case", sorted(VMAP_CASES))
def test_golden_vmap_equals_a_python_loop(case, x64):
    fn, in_axes = VMAP_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    examples = [_inputs(case.removesuffix("_grad"), rng) for _ in range(3)]
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(examples[0])
    args = [np.stack([ex[i] for ex in examples]) if ax is not None else examples[0][i]
            for i, ax in enumerate(axes)]
    want = [fn(*[ex[i] if ax is not None else examples[0][i] for i, ax in enumerate(axes)])
            for ex in examples]
    got = secant.vmap(fn, in_axes=in_axes)(*args)
    leaves = secant.tree_util.tree_leaves
    for k, g in enumerate(leaves(got)):
        np.testing.assert_allclose(np.asarray(g), np.stack([np.asarray(leaves(w)[k])
                                                            for w in want]), rtol=1e-12)
