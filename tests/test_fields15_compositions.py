"""Issue 15, section 4: derivatives of Python containers (lists, tuples, dicts, .at[] updates)
under second and third transforms, where the derivative helpers that build or read containers
(grad_of_fields_batched, split_at, item_of) are themselves read by vmap and differentiated
again.

Each value is checked one layer deep by tests/composition_sweep_cases.py (float64 central
differences, a Python loop for vmap), or here against float64 central differences of a lower
derivative, or against a Python loop.
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.batching.helpers import item_of

import composition_sweep_cases as cases


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


# --- the thorough profile's internal errors, as named regressions ---------------------------
@pytest.mark.parametrize("fname,chain", [
    ("at_set", "hessian/jvp"),      # vmap of a jvp of grad_of_fields_batched (type(out)(...))
    ("at_set", "hessian/vmap/hessian"),     # item_of of a dict cotangent ("unhashable slice")
    ("list_append", "grad/vmap/jacrev"),    # split_at's (head, tail) unpacked under vmap
    # jvp of jvp of stack_examples (recursive for nested lists): its recursive call's
    # signature counts the keyword-only tangent (IndexError)
    ("list_append", "vmap/jvp/jvp"),
    ("list_append", "vmap/hessian/hessian"),
])
def test_container_compositions_of_the_sweep(x64, fname, chain):
    cases.check(fname, chain.split("/"))


def test_item_of_reads_a_dict_field():
    d = {0: snp.ones((2, 3)), 2: snp.zeros((2,))}
    assert item_of(d, 0) is d[0] and item_of(d, 2, 2) is d[2]
    close(item_of(snp.arange(6.0).reshape(2, 3), 1), [1.0, 4.0])


# --- third order through containers, against finite differences of the second ------------------
def list_appended(x):
    out = []
    for i in range(3):
        out.append(snp.sin(x[i]) * x[(i + 1) % 3])
    return snp.sum(snp.stack(out) ** 2)


def dict_fields(x):
    d = {"a": x[0] * x[1], "b": snp.cos(x[2])}
    return d["a"] * d["b"] + d["a"] ** 2


def tuple_unpacked(x):
    t = (x[0] ** 2, x[1] * x[2])
    a, b = t
    return snp.sin(a) * b


def at_updated(x):
    y = x.at[1].set(x[0] * x[2])
    return snp.sum(snp.sin(y.at[0].add(x[1] ** 2)) * y)


THIRD = [list_appended, dict_fields, tuple_unpacked, at_updated]
X = np.array([0.3, -0.7, 1.1])


def fd_jacobian(g, x, eps=1e-5):
    cols = [(np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * eps)
            for e in np.eye(x.size) * eps]
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("f", THIRD, ids=lambda f: f.__name__)
def test_jacfwd_of_hessian_matches_finite_differences(x64, f):
    want = fd_jacobian(secant.hessian(f), X)
    close(secant.jacfwd(secant.hessian(f))(X), want, 1e-5)


@pytest.mark.parametrize("f", THIRD, ids=lambda f: f.__name__)
def test_vmap_of_hessian_matches_a_python_loop(x64, f):
    xs = np.stack([X, X * 0.5 + 0.2, -X])
    h = secant.hessian(f)
    close(secant.vmap(h)(xs), np.stack([np.asarray(h(x)) for x in xs]), 1e-10)


@pytest.mark.parametrize("f", THIRD, ids=lambda f: f.__name__)
def test_hessian_of_vmapped_grad_matches_finite_differences(x64, f):
    # hessian(grad(f)) through vmap of vmap of the derivative's container helpers
    third = secant.hessian(lambda x: snp.sum(secant.grad(f)(x)))
    close(third(X), fd_jacobian(secant.jacrev(lambda x: snp.sum(secant.grad(f)(x))), X), 1e-5)
