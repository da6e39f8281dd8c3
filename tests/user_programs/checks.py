"""What each user program is run through, and against what: the corpus harness's compositions
(grad, jit, jit∘grad, vmap, vmap∘grad, jvp, grad∘grad: references from the eager function
only), plus jacrev (against finite differences) and hessian (contracted with a direction and
compared with mixed central differences of the eager function)."""
import numpy as np

import secant
from secant import tree_util

from corpus import harness


def _zero_tangent(a):
    """JAX's zero tangent of a pytree: float0 for integer leaves (labels, indices)"""
    def zero(leaf):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.integer) or leaf.dtype == bool:
            return np.zeros(leaf.shape, secant.dtypes.float0)
        return np.zeros(leaf.shape)
    return tree_util.tree_map(zero, a)


def c_jvp(case):
    """the corpus's jvp, with float0 tangents for integer arguments as JAX requires"""
    ts = tuple(harness._v(case) if j == case.argnums else _zero_tangent(a)
               for j, a in enumerate(case.args))
    got = secant.jvp(case.fn, case.args, ts)
    want = (case.eager(*case.args),
            harness.fd_dir(case.eager, case.args, case.argnums, harness._v(case)))
    return tuple(got), want


def c_jacrev(case):
    got = secant.jacrev(case.fn, argnums=case.argnums)(*case.args)
    return got, harness.fd_grad(case.eager, case.args, case.argnums)


def c_hessian(case):
    """hessian(f)(x) contracted with v: H[i][j] (the leaves of x, row major) has shape
    x_i.shape + x_j.shape."""
    x, v = harness._x(case), harness._v(case)
    h = secant.hessian(harness.bound(case))(x)
    v_leaves, v_def = tree_util.tree_flatten(v)
    h_leaves = tree_util.tree_leaves(h)
    n = len(v_leaves)
    if len(h_leaves) != n * n:
        raise harness.WrongValue(f"hessian has {len(h_leaves)} blocks, want {n * n}")
    hv = []
    for i in range(n):
        row = 0.0
        for j, vj in enumerate(v_leaves):
            vj = np.asarray(vj, dtype=np.float64)
            row = row + np.tensordot(np.asarray(h_leaves[i * n + j], dtype=np.float64), vj,
                                     axes=vj.ndim)
        hv.append(row)
    got = tree_util.tree_unflatten(v_def, hv)
    want = harness._hv_ref(case)
    if case.scalar:
        got = float(np.asarray(h)) * v
    return got, want


_CORPUS = ("grad", "jit", "jit∘grad", "vmap", "vmap∘grad")
TRANSFORMS = {name: harness.COMPOSITIONS[name] for name in _CORPUS}
TRANSFORMS["jvp"] = (1, harness._any, c_jvp)
TRANSFORMS["grad∘grad"] = harness.COMPOSITIONS["grad∘grad"]
TRANSFORMS["jacrev"] = (1, harness._any, c_jacrev)
TRANSFORMS["hessian"] = (2, harness._one_view, c_hessian)
# the second battery (explore15i) adds the third derivative of its scalar programs
SECOND_TRANSFORMS = dict(TRANSFORMS)
SECOND_TRANSFORMS["grad∘grad∘grad"] = harness.COMPOSITIONS["grad∘grad∘grad"]


# (program, transform) pairs JAX itself refuses: secant must refuse them with a SecantError
JAX_REFUSES = {
    ("custom_vjp_user", "jvp"): "forward mode of a custom_vjp function",
    ("jd_clip_gradient", "jvp"): "forward mode of a custom_vjp function",
    **{("st_assert_values", t): "an assert on a traced value (TracerBoolConversionError)"
       for t in ("jit", "jit∘grad", "vmap", "vmap∘grad")},
}


def applicable(case, transforms=TRANSFORMS):
    return [n for n, (_, applies, _) in transforms.items() if applies(case)]


def run(case, name):
    """Runs transform `name` on `case`; WrongValue on a mismatch, the transform's own exception
    when it refuses."""
    got, want = SECOND_TRANSFORMS[name][2](case)
    harness.check(harness.as_np(got), harness.as_np(want), **harness.tolerance("grad∘grad" if name == "hessian" else name))


def rotation(cases, transforms, per_program, thorough, turns=None):
    """(case, transform name) pairs a test file runs: every applicable pair when `thorough`,
    else `per_program` transforms per program, rotating so that every transform meets the
    programs in turn; `turns` ({program: transform}) overrides a program's turn in the default
    profile (a program whose turn would cost seconds where its other transforms take a
    fraction of one: a derivative of a program that differentiates itself)."""
    names = list(transforms)
    turns = turns or {}
    for i, case in enumerate(cases):
        todo = [n for n in names if n in applicable(case, transforms)]
        if not thorough and case.name in turns:
            todo = [turns[case.name]]
        for name in todo if thorough else _turn(todo, i, per_program):
            yield case, name


def _turn(todo, i, k):
    return [todo[(i + j) % len(todo)] for j in range(min(k, len(todo)))]


def rotated(items, kinds, per_item=1):
    """(item, kind) pairs for a parametrize: every pair under HYPOTHESIS_PROFILE=thorough, else
    `per_item` kinds per item, rotating, so that each item and each kind still run (the
    default profile's share of a cross product; item i starts at kind i * per_item, so that
    two items of three kinds each cover six)."""
    import os
    thorough = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
    kinds = list(kinds)
    return [(item, kind) for i, item in enumerate(items)
            for kind in (kinds if thorough else _turn(kinds, i * per_item, per_item))]


def turns(items, kinds, per_item=1):
    """rotated's pairs by kind: {kind: the items it runs on}, for a file whose kinds are
    separate test functions (each parametrized by its list): every item under every kind
    under HYPOTHESIS_PROFILE=thorough, else each item under `per_item` of them, each kind
    on its share of the items."""
    out = {kind: [] for kind in kinds}
    for item, kind in rotated(items, kinds, per_item):
        out[kind].append(item)
    return out


def pytest_params(cases, transforms, per_program, thorough, known, turns=None):
    """rotation's pairs as pytest params, a pair in `known` ((program, transform) -> why it
    fails today) a strict xfail."""
    import pytest
    for case, name in rotation(cases, transforms, per_program, thorough, turns):
        marks = [pytest.mark.xfail(strict=True, raises=Exception, reason=known[case.name, name])
                 ] if (case.name, name) in known else []
        yield pytest.param(case, name, id=f"{case.name}-{name}", marks=marks)


def battery(cases, transforms, per_program, known=None, bad_inputs=None, known_bad=None,
            refuses=None, turns=None):
    """A battery file's tests, to bind in it: `test_program, test_bad_input = battery(...)`.
    test_program runs each (program, transform) pair of `rotation` (every applicable pair when
    HYPOTHESIS_PROFILE=thorough): a pair JAX refuses (JAX_REFUSES) must raise a SecantError, a
    pair in `known` ((program, transform) -> why it fails today) is a strict xfail.
    test_bad_input (None without a `bad_inputs` module) asserts that each of its CASES is
    classified "correct", a case in `known_bad` (id -> why) a strict xfail. `refuses` adds a
    battery's own pairs to JAX_REFUSES. `turns`: {program: transform} run by default instead of
    the program's turn (see rotation)."""
    import contextlib
    import io
    import os

    import pytest
    thorough = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
    refuses = {**JAX_REFUSES, **(refuses or {})}

    @pytest.mark.parametrize("case, name", list(pytest_params(
        cases, transforms, per_program, thorough, known or {}, turns)))
    def test_program(x64, case, name):
        with contextlib.redirect_stdout(io.StringIO()):      # with_debug_print prints
            if (case.name, name) in refuses:
                with pytest.raises(secant.SecantError):
                    run(case, name)
            else:
                run(case, name)

    if bad_inputs is None:
        return test_program, None
    known_bad = known_bad or {}

    @pytest.mark.parametrize("cid", [
        pytest.param(cid, marks=[pytest.mark.xfail(strict=True, reason=known_bad[cid])]
                     if cid in known_bad else []) for cid in bad_inputs.CASES])
    def test_bad_input(x64, cid):
        outcome, detail = bad_inputs.classify(bad_inputs.CASES[cid])
        assert outcome == "correct", detail

    return test_program, test_bad_input


def fd(f, x, h=1e-6):
    """Float64 central differences of the scalar f at x (any shape)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        out.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out
