"""Compositions of the sweep (tests/test_composition_sweep.py) that used to fail, each one a
regression test of the shared mechanism it fixed; every value is checked one layer deep against
float64 finite differences (composition_sweep_cases.check), a closed form or a Python loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

import composition_sweep_cases as cases


def close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **{"rtol": 1e-9, "atol": 1e-9, **kw})


# --- jit of jit: the call reads the function under every JitFunction layer ---------------------
@pytest.mark.parametrize("chain", [["jit", "jit", "grad"], ["jit", "jit", "jit", "grad"],
                                   ["jit", "jit", "vmap"], ["jit", "jit", "jvp"]])
def test_transform_of_jit_of_jit(x64, chain):
    cases.check("fori", chain)
    cases.check("chain", chain)


def test_grad_of_jit_of_jit_closed_form(x64):
    f = secant.jit(secant.jit(lambda x: lax.fori_loop(0, 3, lambda i, y: snp.sin(y), x)))
    x = 0.4
    y1 = np.sin(x)
    y2 = np.sin(y1)
    close(secant.grad(f)(x), np.cos(y2) * np.cos(y1) * np.cos(x))
    close(secant.grad(lambda x: f(x) * 2.0)(x), 2 * np.cos(y2) * np.cos(y1) * np.cos(x))


# --- third order through a list built by appends (forward mode of unmerge: no tangent from the
# structure-only operand) and the structure-only arguments of the field helpers ---------------
@pytest.mark.parametrize("fname,chain", [
    ("list_append", ["grad", "hessian"]),
    ("list_append", ["vmap", "jacrev", "grad"]),      # split_at's operand: a list
    ("slices", ["grad", "jacrev", "grad"]),           # add_grads of batched and unbatched
    ("slices", ["hessian", "grad", "grad"]),
    ("list_params", ["jvp", "jacrev", "grad"]),       # grad_of_fields_batched's tree
    ("dict_params", ["jvp", "hessian", "grad"]),
    ("scan", ["jacrev", "jit", "jacfwd"]),            # vmap of item_of's jvp (x_dot a tuple)
])
def test_higher_order_compositions(x64, fname, chain):
    cases.check(fname, chain)


def test_fourth_order_through_appends_closed_form(x64):
    """grad four times of sum(x_k^k) built by appends (it refused before the forward mode of
    unmerge gave no tangent to its structure-only operand)."""
    def f(x):
        out = []
        for k in range(1, 4):
            out.append(x ** k)
        return snp.sum(snp.stack(out))
    g4 = secant.grad(secant.grad(secant.grad(secant.grad(f))))
    close(g4(0.7), 0.0)
    g3 = secant.grad(secant.grad(secant.grad(f)))
    close(g3(0.7), 6.0)


def test_vjp_of_vmapped_add_of_batched_and_unbatched(x64):
    """vmap of a derivative adds an unbatched cotangent to a batched one (add_grads): a reverse
    pass through it sums the unbatched one's cotangent over the batch (it was passed whole)."""
    w = np.array([0.8, -0.6, 1.3])
    x = np.array([0.3, -0.7, 1.1])

    def g(x):
        return snp.sum(x[1:] * x[:-1] + x[0] * w[2])
    jac = secant.jacrev(secant.grad(g))           # vmap of the vjp of grad's source
    got = secant.grad(lambda x: snp.sum(jac(x) * snp.arange(9.0).reshape(3, 3)))(x)
    # g is quadratic: its Hessian is constant, so this gradient is zero
    close(got, np.zeros(3))
    got = secant.grad(lambda x: snp.sum(jac(x * x)))(x)
    close(got, np.zeros(3))


# --- a static test written with and/or of isinstance/hasattr (helpers do it) -----------------
def test_and_of_isinstance_and_hasattr_under_vmap_and_grad(x64):
    def f(x):
        if hasattr(x, "shape") and not isinstance(x, (list, tuple)):
            y = snp.sin(x) * 2.0
        else:
            y = x
        return y
    xs = np.array([[0.1, 0.2], [0.3, -0.4]])
    close(secant.vmap(f)(xs), np.sin(xs) * 2.0)
    close(secant.grad(lambda x: snp.sum(f(x)))(xs[0]), 2 * np.cos(xs[0]))


def test_a_shadowed_isinstance_is_not_a_truth_value(x64):
    """Only the builtins are: a function of the user's called isinstance returns a value that
    `and` may return, never read as a constant. Eager grad reads its truth when it runs (as
    for an `if` on a value); jit and vmap, where it is not known, refuse."""
    def isinstance(a, b):       # noqa: A001
        return a * 2.0

    def f(x):
        return isinstance(x, 1) and x
    assert float(secant.grad(f)(1.0)) == 1.0        # 2.0 is true: `and` returns x
    assert float(secant.grad(f)(0.0)) == 2.0        # 0.0 is false: it returns 2 * x
    with pytest.raises(secant.SecantError):
        secant.jit(secant.grad(f))(1.0)
    with pytest.raises(secant.SecantError):
        secant.vmap(f)(np.array([0.0, 1.0]))
