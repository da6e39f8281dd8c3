"""Second-order and composed derivatives through lax.scan / fori_loop / while_loop / map
(issue 15 section 4), each value against float64 central differences (of the function for a
hessian, of secant's first derivative for a jacobian of a gradient), vmap against a Python
loop, jit against eager (tests/scan2_cases.py)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

import scan2_cases as cases
from user_programs.checks import rotated


@pytest.mark.parametrize("cname", ["hessian", "grad_grad_sum", "jacrev_grad", "jacfwd_jacrev",
                                   "jacrev_jacrev", "vmap_hessian"])
def test_dict_carry_second_order(x64, cname):
    """Was a KeyError: the lowered scan of the derivative renamed the carry's dict key 's'
    (a name its step binds) along with the variable."""
    cases.check("scan_dict_carry", cname)


@pytest.mark.parametrize("fname", ["scan_closure", "scan_length", "scan_tuple_carry",
                                   "scan_reverse", "fori_lambda", "fori_tuple", "while_count",
                                   "map_closure", "fori_index"])
def test_vmap_of_hessian(x64, fname):
    """Was a refusal: vmap read grad_of_fields_batched's `type(out)(generator)`."""
    cases.check(fname, "vmap_hessian")


def test_keys_and_keywords_named_like_step_locals_are_kept(x64):
    """A carry whose dict keys and a call's keywords are spelled like the lowered step's own
    locals (`x`, `carry`, `s`): only variables are renamed."""
    def f(w):
        def step(c, x):
            return {"x": c["x"] * snp.sin(x * w), "carry": c["carry"] + x}, c["x"]
        c, ys = lax.scan(step, {"x": w, "carry": 0.0 * w}, snp.array([0.3, 1.2, -0.4]))
        return c["x"] * c["carry"] + snp.sum(ys ** 2)

    def central(g, x, h=1e-5):
        return (g(x + h) - g(x - h)) / (2 * h)
    d2 = secant.grad(secant.grad(f))(0.7)
    np.testing.assert_allclose(d2, central(lambda w: float(secant.grad(f)(w)), 0.7), rtol=1e-6)
    np.testing.assert_allclose(secant.hessian(f)(0.7), d2, rtol=1e-9)


# (each chain on the fori or the scan program in turn, both under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("chain, fname", [
    pytest.param(chain, fname, id=f"{chain}-{fname}") for chain, fname in rotated(
        ["jacrev/vmap", "jacrev/vmap0", "jacrev/vmap/vmap", "jacrev/jacrev/vmap"],
        ["fori", "scan"])])
def test_vmap_of_a_vmapped_loop_vjp(x64, fname, chain):
    """A loop's reverse pass batched twice: the closed-over values' zero cotangents take every
    vmap's batch axis (was a shape error), and the batched reverse scan's outputs are a tuple
    display another vmap reads (was a tuple `+` read as an array sum). Each against a Python
    loop over the inner function (tests/composition_sweep_cases.py)."""
    import composition_sweep_cases
    composition_sweep_cases.check(fname, chain.split("/"))


@pytest.mark.parametrize("fname", ["fori", "scan"])
def test_grad_of_jacrev_of_grad(x64, fname):
    """Third order: the batched reverse pass of a loop whose body's vjp reads no saved carry
    passed `batch_second(broadcast_batch(None, n))` for the carries (was 'scan needs xs or
    length' once lowered)."""
    import composition_sweep_cases
    composition_sweep_cases.check(fname, ["grad", "jacrev", "grad"])


@pytest.mark.parametrize("cname", ["hessian", "jit_hessian", "jacfwd_jacrev"])
def test_loop_counter_index_hessian(x64, cname):
    """A body indexing a closed-over array with the loop counter: the forward-over-reverse
    order meets an index mixing slices and arrays batched again, a clear refusal, and the
    Jacobian takes its other order (was an IndexError / a tracer conversion error)."""
    cases.check("fori_index", cname)


@pytest.mark.parametrize("fname", ["fori", "scan"])
def test_hessian_of_grad_of_grad(x64, fname):
    """Fourth order: vmap of fields_of_batched read a dict's or tuple's item as an array's
    (`tree_bar[batch_index(k)]`); it reads items with item_of, which each vmap reads past
    its own batch axis."""
    import composition_sweep_cases
    composition_sweep_cases.check(fname, ["grad", "grad", "hessian"])


@pytest.mark.parametrize("cname", ["hessian", "grad_grad_sum", "jacfwd_grad", "jacrev_jacrev",
                                   "vmap_vmap", "vmap_hessian"])
def test_odeint_compositions(x64, cname):
    """Were refusals: reverse over reverse differentiates odeint's adjoint rules, forward mode
    solves the sensitivity equations, vmap of vmap runs the per-example rule once per outer
    example, and a derivative of that rule is its body's (vmap of hessian) (the hessian against
    the closed form: scan2_cases._ode_hessian)."""
    cases.check("ode", cname)
