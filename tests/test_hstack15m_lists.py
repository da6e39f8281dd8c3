"""Issue 15: library functions that take a list, the list mixing items a transform batches
(the differentiated q, or its vmapped examples) with items it does not (a closed-over constant,
an unbatched argument), under jacfwd(grad), hessian, vmap(grad) and jit(vmap(grad)). The vmap of
a jvp used to read hstack's primal list as batched when only some of its items were, and
concatenated along the wrong axis (verlet21's strict xfail). Checked against float64 central
differences and Python loops over the examples."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

from central_differences import grad_fd, hessian_fd

C = np.array([0.5, -1.0, 2.0])
M = np.array([[1.0, 2.0], [3.0, -1.0]])
MASK = [True, False, True]

PROGRAMS = {
    "hstack": lambda q: snp.sum(snp.hstack([q, q ** 2, C]) ** 2),
    "hstack_of_a_scalar": lambda q: snp.sum(snp.hstack([q[0], C, snp.sin(q)]) ** 2),
    "vstack": lambda q: snp.sum(snp.sin(snp.vstack([C, q * q, q])) * C),
    "dstack": lambda q: snp.sum(snp.dstack([q, C, q ** 3]) ** 2),
    "column_stack": lambda q: snp.sum(snp.column_stack([q, C, snp.cos(q)]) ** 3),
    "concatenate": lambda q: snp.sum(snp.concatenate([C, q ** 2, q]) ** 2),
    "concatenate_axis1": lambda q: snp.sum(
        snp.concatenate([M, snp.outer(q[:2], q[1:])], axis=1) ** 2),
    "stack_axis1": lambda q: snp.sum(snp.stack([q, C, q ** 2], axis=1) ** 2),
    "stack": lambda q: snp.sum(snp.stack([C, q ** 2]) ** 3),
    "block": lambda q: snp.sum(snp.block([[snp.outer(q[:2], q[:2]), M], [M, M]]) ** 2),
    "append_to_a_constant": lambda q: snp.sum(snp.append(C, q ** 2) ** 2),
    "append_a_constant": lambda q: snp.sum(snp.append(q, C) ** 3),
    "insert": lambda q: (snp.sum(snp.insert(C, 1, q[0] ** 2) * snp.arange(4.0) ** 2)
                         + snp.sum(snp.insert(q, 2, 1.5) ** 3)),
    "meshgrid": lambda q: sum(snp.sum(g ** 2) for g in snp.meshgrid(q, C)),
    "meshgrid_product": lambda q: snp.sum(snp.meshgrid(C, q ** 2)[0] * snp.meshgrid(C, q ** 2)[1]),
    "einsum_of_three": lambda q: snp.einsum("i,i,i->", q, C, q) ** 2,
    "einsum_outer": lambda q: snp.sum(snp.einsum("i,j,j->i", C, q, q) ** 2),
    "where_of_a_list_mask": lambda q: snp.sum(snp.where(MASK, q ** 2, C) ** 2),
    "where_of_a_list_value": lambda q: snp.sum(snp.where(snp.array(MASK), [1.0, 2.0, 3.0], q) ** 3),
    "array_of_a_list": lambda q: snp.sum(snp.array([q[0], 2.0, q[1] ** 2]) ** 2),
}
NAMES = list(PROGRAMS)
X = np.array([0.3, -1.2, 0.7])
EXAMPLES = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.6]])


def scalar(f):
    return lambda v: float(f(v))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("second", ["jacfwd(grad)", "hessian"])
def test_second_derivative(x64, name, second):
    f = PROGRAMS[name]
    h = secant.jacfwd(secant.grad(f)) if second == "jacfwd(grad)" else secant.hessian(f)
    np.testing.assert_allclose(h(X), hessian_fd(scalar(f), X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("jit", [False, True], ids=["vmap(grad)", "jit(vmap(grad))"])
def test_per_example_gradients(x64, name, jit):
    f = PROGRAMS[name]
    g = secant.vmap(secant.grad(f))
    want = np.stack([grad_fd(scalar(f), e) for e in EXAMPLES])
    np.testing.assert_allclose((secant.jit(g) if jit else g)(EXAMPLES), want,
                               rtol=1e-5, atol=1e-6)


def mixed(q, c):                  # c is an argument vmap leaves unbatched (in_axes None)
    rows = snp.vstack([q, c, q * c])
    wide = snp.hstack([c, snp.tanh(q)])
    return snp.sum(rows ** 2) + snp.sum(snp.concatenate([wide, c[:1]]) ** 3)


@pytest.mark.parametrize("jit", [False, True], ids=["vmap(grad)", "jit(vmap(grad))"])
def test_an_unbatched_argument_in_the_lists(x64, jit):
    g = secant.vmap(secant.grad(mixed), in_axes=(0, None))
    want = np.stack([grad_fd(lambda v: float(mixed(v, C)), e) for e in EXAMPLES])
    np.testing.assert_allclose((secant.jit(g) if jit else g)(EXAMPLES, C), want,
                               rtol=1e-5, atol=1e-6)
    h = secant.vmap(secant.hessian(mixed), in_axes=(0, None))(EXAMPLES, C)
    want = np.stack([hessian_fd(lambda v: float(mixed(v, C)), e) for e in EXAMPLES])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-6)
