"""Items of a differentiated array read at constant indices (x[0], x[2]), read again by a
second and third transform (issue 15, composition sweep): the transpose of grad_of_fields is
fields_of(g, [keys]), the keys alone, so that a vmap or derivative of the derivative never sees
the fields' values as the keys it loops over (a batched key was "no batching rule for getattr",
a differentiated one "getattr with a traced attribute name"). Against float64 finite
differences and a Python loop."""
import numpy as np

import secant
import secant.numpy as snp

import composition_sweep_cases as cases

W = 0.7


def at_updates(x):
    y = x.at[1].set(x[0] * W)
    return snp.sum(y.at[0].add(snp.sin(x[2])) * x)


def fd_hessian(f, x, h=1e-4):
    def grad(y):
        return np.array([(f(y + e) - f(y - e)) / (2 * h) for e in np.eye(len(y)) * h])
    return np.stack([(grad(x + e) - grad(x - e)) / (2 * h) for e in np.eye(len(x)) * h], -1)


def f_np(x):
    y = x.copy()
    y[1] = x[0] * W
    y[0] += np.sin(x[2])
    return float(np.sum(y * x))


def test_vmap_of_jacrev_of_grad_through_items_against_finite_differences(x64):
    xs = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]])
    for jac in (secant.jacrev, secant.jacfwd):
        got = secant.vmap(jac(secant.grad(at_updates)))(snp.asarray(xs))
        want = np.stack([fd_hessian(f_np, x) for x in xs])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_sweep_chains_through_at_set(x64):
    for chain in ("grad/jacrev/vmap", "grad/hessian/vmap0", "jacrev/grad/vmap",
                  "jacrev/grad/vmap0"):
        cases.check("at_set", chain.split("/"))
