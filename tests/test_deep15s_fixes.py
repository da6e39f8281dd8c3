"""deep15s: the deep compositions battery's refusals fixed (issue 15, section 4), each pair
against JAX's recorded outcome (tests/user_programs/deep_expected.py), whatever pairs the
battery's default rotation runs; and the smallest programs showing each cause."""
import contextlib
import io

import numpy as np
import pytest
import user_programs
from user_programs import deep, deep_expected

import secant
import secant.numpy as snp
from secant import lax

pytestmark = pytest.mark.usefixtures("fast_compiles")

FIXED = [
    ("cf_lax_map", "jacrev_jacfwd"),         # lax.map's reverse pass of a jvp'd body
    ("dict_merge", "grad4"),                 # {**defaults, **params} at the fourth order
    ("dict_merge", "vmap_vmap"),             # ... under vmap of vmap
    ("custom_vjp_user", "jvp_grad"),         # forward over reverse of a custom_vjp function
    ("dm_literal_between", "vmap_hessian"),  # new programs of those kinds
    ("map_dict_xs", "jacrev_jacfwd"),
]


@pytest.mark.parametrize("name, comp", FIXED, ids=[f"{n}-{c}" for n, c in FIXED])
def test_fixed_pair_matches_jax(x64, name, comp):
    with contextlib.redirect_stdout(io.StringIO()):
        got = deep.outcome(user_programs.BY_NAME[name], comp)
    letter, why = deep.judge(deep_expected.EXPECTED[name, comp], got)
    assert letter == ".", f"{letter} {why}"


X = np.random.default_rng(0).normal(size=(4, 3))
V = np.random.default_rng(2).normal(size=3)


def _map_loss(w):
    return snp.sum(lax.map(lambda r: snp.tanh(r @ w) * r[0], X))


def _map_tangent(w):
    return secant.jvp(_map_loss, (w,), (V,))[1]


def test_grad_of_jvp_through_lax_map(x64):
    """the reverse pass of `ys, ys_dot = lax.map(body_jvp, xs)` hands the body's vjp both
    outputs' cotangents (it had only the first's: 'iteration over a 0-d array')"""
    w = np.random.default_rng(1).normal(size=3)

    def tangent(w):         # d/dw of sum_i tanh(x_i w) x_i0 along V, by hand
        return np.sum((1 - np.tanh(X @ w) ** 2) * (X @ V) * X[:, 0])
    e = 1e-6
    fd = [(tangent(w + e * np.eye(3)[i]) - tangent(w - e * np.eye(3)[i])) / (2 * e)
          for i in range(3)]
    np.testing.assert_allclose(np.asarray(secant.grad(_map_tangent)(w)), fd, rtol=1e-6)


def _merged(params, x):
    p = {"scale": 1.0, "shift": 0.5, **params}
    return snp.sum(snp.sin(x @ p["w"]) * p["scale"]) + p["shift"] ** 3


def test_third_order_dict_merge_against_closed_form(x64):
    """d^3/dt^3 of a `{**defaults, **params}` loss along a line, against its closed form
    (the merge's cotangent helper pick now has rules, its keys `[k]` accepted)"""
    w0 = np.array([0.3, -0.2, 0.5])

    def along(t):
        return _merged({"w": w0 + t * V, "shift": 0.2 + t}, X)
    got = secant.grad(secant.grad(secant.grad(along)))(0.1)
    u, c = X @ (w0 + 0.1 * V), X @ V
    want = np.sum(-np.cos(u) * c ** 3) + 6.0       # (shift ** 3)''' = 6
    np.testing.assert_allclose(float(got), want, rtol=1e-9)
