"""Issue 15, third battery (explore15j): the JAX documentation's own examples (stateful
computations, the advanced-autodiff cookbook, pytrees), equinox/haiku-like modules and
optax-like optimizers written by hand, training loops in lax.scan and fori_loop, science
(Gaussian processes, flows, Monte Carlo, odeint, Ising and molecular dynamics) and classroom
code (dual numbers, a tape, numpy-style Python) in tests/user_programs/jaxdocs_style.py,
modules_style.py, science_third.py and classroom.py, each through grad, hessian, grad∘grad,
jit, jit∘grad, vmap, vmap∘grad, jvp, jacrev and (scalar ones) grad∘grad∘grad, checked against
float64 central differences, a Python loop and the eager value (tests/user_programs/checks.py);
and the bad inputs of tests/user_programs/bad_inputs_third.py.

The default profile runs every program through one transform, rotating over the transforms;
HYPOTHESIS_PROFILE=thorough runs every pair. `.venv/bin/python bench/user_programs.py --third`
prints the whole table. Below: a named regression test for each fix the battery led to.
"""
import contextlib
import io

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import tree_util
from user_programs import THIRD, bad_inputs_third, checks

PER_PROGRAM = 1

_ALL = ("grad", "jit∘grad", "vmap", "vmap∘grad", "jvp", "grad∘grad", "jacrev", "hessian")
_WHY = [      # (program, its failing transforms, why)
    ("jd_hvp_by_hessian_matrix", ("hessian",),
     "4th order through prod's rule (vmap of jvp of vmap of cumprod's jvp): the batched callee "
     "reads the inner tangent as batched by the outer vmap (axis -1 out of bounds)"),
    ("mod_haiku_like", _ALL,
     "init/apply by a getter closure: `nonlocal key` in get, and a lambda closing over params "
     "passed on as a value"),
    ("cls_tape_ad", _ALL,
     "a tape of Var objects (a list of them, parents in tuples) built from differentiated "
     "values and passed on: refused"),
]
# (program, transform) -> why it fails today; strict: a fix must remove its entry
KNOWN_FAILURES = {(name, t): why for name, ts, why in _WHY for t in ts}
KNOWN_BAD_INPUTS = {}

test_program, test_bad_input = checks.battery(THIRD, checks.SECOND_TRANSFORMS, PER_PROGRAM,
                                              KNOWN_FAILURES, bad_inputs_third, KNOWN_BAD_INPUTS)


def test_battery_size():
    assert len(THIRD) >= 60 and len(bad_inputs_third.CASES) >= 15


# --- regression tests of what the battery found ---------------------------------------------------
class _Dual:
    def __init__(self, val, eps=0.0):
        self.val, self.eps = val, eps

    def __mul__(self, other):
        other = other if isinstance(other, _Dual) else _Dual(other)
        return _Dual(self.val * other.val, self.val * other.eps + self.eps * other.val)

    __rmul__ = __mul__


def _cube(d):
    return d * d * d


def _derivative(f, x):
    return f(_Dual(x, 1.0)).eps


def _dual_program(x):
    return _derivative(_cube, x) + x


def test_dual_numbers_through_a_function_passed_in(x64):
    """cls_dual_numbers: `f(Dual(x, 1.0)).eps` with f a parameter (a call of a function known
    only at run time) read `d * d` in f as an array product (its rule 2 * d * ct, which Dual's
    __rmul__ then took): grad was silently wrong (-0.05 for 11.3). The call site now says which
    operands are user objects with operators and the dispatcher reads f's operators on them
    as the class's; vjp of a function of user objects reads them so too."""
    for x in (0.7, -1.3):
        np.testing.assert_allclose(secant.grad(_dual_program)(x), 6 * x + 1, rtol=1e-12)
        np.testing.assert_allclose(secant.jit(secant.grad(_dual_program))(x), 6 * x + 1)
        np.testing.assert_allclose(secant.hessian(_dual_program)(x), 6.0, rtol=1e-12)
    _, pullback = secant.vjp(lambda d: d * d, _Dual(0.7, 1.0))
    ct = pullback(_Dual(0.0, 1.0))[0]
    assert (float(ct.val), float(ct.eps)) == pytest.approx((2.0, 1.4))


def _is_array(x):
    return isinstance(x, (np.ndarray, jnp.ndarray))


def _filtered(w):
    model = {"w": w, "scale": 0.5}
    arrays = tree_util.tree_map(lambda v: v if _is_array(v) else None, model)
    return jnp.sum(arrays["w"] ** 3) * model["scale"]


def test_a_type_predicate_helper_has_no_derivative(x64):
    """mod_partition_combine: equinox's `is_array(x)` (a helper returning isinstance(...)) was a
    differentiated value under grad∘grad and vmap, so `x if is_array(x) else None` was refused
    (bool() of a differentiated value); a helper whose body returns only type tests is now run
    as written."""
    w = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(secant.hessian(_filtered)(w), np.diag(3.0 * w), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(_filtered)(np.stack([w, 2 * w])),
                               [_filtered(w), _filtered(2 * w)], rtol=1e-12)


def _sgd_on_arrays(w, x):
    """equinox's filtered update: only the leaves that are arrays move."""
    model = {"w": w, "steps": 2}
    for _ in range(model["steps"]):
        g = secant.grad(lambda m: jnp.sum((x @ m["w"]) ** 2))(
            tree_util.tree_map(lambda v: v if _is_array(v) else None, model))
        model = {"w": model["w"] - 0.1 * g["w"], "steps": model["steps"]}
    return jnp.sum(model["w"] ** 2)


def test_a_traced_value_is_an_array_under_jit(x64):
    """mod_partition_combine under jit was SILENTLY WRONG: isinstance(tracer, jnp.ndarray) was
    False inside jit (JAX: True), so the filter dropped w and the SGD steps did nothing. Now
    secant.Array / jnp.ndarray accept jit's traced values; NumPy arrays and numbers stay out."""
    seen = []

    def kinds(x):
        seen.append((isinstance(x, jnp.ndarray), isinstance(x, secant.Array),
                     isinstance(2.0, jnp.ndarray), isinstance(np.ones(2), secant.Array)))
        return x * 2
    kinds(jnp.ones(3))
    secant.jit(kinds)(jnp.ones(3))
    assert seen == [(True, True, False, False)] * 2
    # grad traces kinds whole (it stores into `seen`): the recorded jnp.ndarray is a class there
    np.testing.assert_allclose(secant.grad(lambda x: jnp.sum(kinds(x)))(jnp.ones(3)), 2.0)
    assert {kind[:3] for kind in seen[2:]} == {(True, True, False)}   # (np.ones is recorded)

    def branch(x):
        return jnp.sum(x * 2.0 if isinstance(x, jnp.ndarray) else x * 3.0)
    for run in (secant.grad(branch), secant.jit(secant.grad(branch)),
                secant.vmap(secant.grad(branch))):
        np.testing.assert_allclose(run(jnp.ones(3)), 2.0 * np.ones(3))
    w, x = np.array([0.3, -0.2, 0.5]), np.eye(3)[:2] + 0.1
    eager = _sgd_on_arrays(w, x)
    assert abs(float(eager) - float(np.sum(w ** 2))) > 1e-3     # the steps moved w
    np.testing.assert_allclose(secant.jit(_sgd_on_arrays)(w, x), eager, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(_sgd_on_arrays))(w, x),
                               secant.grad(_sgd_on_arrays)(w, x), rtol=1e-10)


def test_jacrev_after_a_refusal_says_why(x64):
    """cls_tape_ad / cls_operator_getters under jacrev after grad refused them: jacrev's trace
    of the refused function with the call's arguments failed on its stand-ins (an internal
    TypeError "'_Value' object is not callable" at the user's line); now the refusal itself."""
    from user_programs import classroom
    for name in ("cls_tape_ad",):     # (cls_operator_getters now passes: test_pop15_refusals)
        case = next(c for c in classroom.CASES if c.name == name)
        for transform in (secant.grad, secant.jacrev, secant.jacrev):
            with pytest.raises(secant.SecantError, match="cannot differentiate through"):
                transform(case.fn)(*case.args)


def _hvp_rev_fwd(f, x, v):
    return secant.grad(lambda q: secant.jvp(f, (q,), (v,))[1])(x)


def _uses_hvp(x):
    return jnp.sum(_hvp_rev_fwd(lambda y: jnp.sum(jnp.sin(y) * y ** 2), x, jnp.ones(3)) ** 2)


def test_jvp_of_a_function_passed_in_under_grad(x64):
    """jd_hvp_rev_over_fwd: the cookbook's reverse-over-forward hvp, f a parameter of the
    helper: grad of it refused `jvp_closed(f)` (no rule); it is now a call of a function known
    at run time."""
    x = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(secant.grad(_uses_hvp)(x), checks.fd(_uses_hvp, x), rtol=1e-6)


def _linearized(x):
    y, f_jvp = secant.linearize(lambda z: jnp.sin(z) * z, x)
    return jnp.sum(y) + jnp.sum(f_jvp(jnp.ones(3)) ** 2)


def test_linearize_inside_a_transformed_function(x64):
    """jd_linearize: `y, f_jvp = linearize(f, x)` in a function grad reads was refused; it
    reads as `y = f(x)` and f_jvp(t) as jvp(f, (x,), (t,))[1]."""
    x = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(secant.grad(_linearized)(x), checks.fd(_linearized, x), rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(_linearized)(np.stack([x, -x])),
                               [_linearized(x), _linearized(-x)], rtol=1e-12)


def _transposed(rows):
    cols = tree_util.tree_transpose(tree_util.tree_structure([0, 0]),
                                    tree_util.tree_structure({"a": 0, "b": 0}), rows)
    return jnp.sum(cols["a"][0] * cols["b"][1]) + jnp.sum(cols["a"][1] ** 3)


def test_tree_transpose_under_the_transforms(x64):
    """jd_tree_transpose: tree_transpose had no derivative; it reads as the leaves it reorders
    (and hessian of its columns read list items by batch_index: the items of a tree_unflatten
    are now read as a list's or an array's when the code runs)."""
    a0, b0, a1, b1 = (np.array([0.1, 0.2]) * k for k in (1, 2, 3, 4))
    rows = [{"a": a0, "b": b0}, {"a": a1, "b": b1}]
    g = secant.grad(_transposed)(rows)
    np.testing.assert_allclose(g[0]["a"], b1)
    np.testing.assert_allclose(g[1]["b"], a0)
    np.testing.assert_allclose(g[1]["a"], 3 * a1 ** 2)
    h = secant.hessian(_transposed)(rows)
    np.testing.assert_allclose(h[1]["a"][1]["a"], np.diag(6 * a1))
    with pytest.raises(TypeError, match="Mismatch"):
        tree_util.tree_transpose(tree_util.tree_structure([0, 0, 0]),
                                 tree_util.tree_structure({"a": 0, "b": 0}), rows)


@pytest.mark.parametrize("name", ["opt_adam_tree", "opt_clip_chain"])
def test_hessian_of_a_loop_over_a_tuple_state(x64, name):
    """opt_adam_tree / opt_clip_chain: hessian of an optax-like chain (`for t, s in
    zip(transforms, state)` in its update): vmap of the jvp read the tangent state_dot (a
    keyword-only parameter) as an array, `state_dot[batch_index(i)]` of a tuple (TypeError)."""
    case = next(c for c in THIRD if c.name == name)
    with contextlib.redirect_stdout(io.StringIO()):
        checks.run(case, "hessian")
