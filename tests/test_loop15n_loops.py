"""Issue 15 (loop15n): a name each loop iteration binds afresh, read after the loop.

`for g in fs: v1 = g(v1)` then `v1 = g(v1)`: after the loop g is the last iteration's value,
so the cotangent of its read there belongs to the last iteration alone. The loop variable of a
loop over a list, a tuple, the rows of an array, a dict's items (bound from each item, not
assigned in the body) was not carried: reverse mode added that cotangent into every
iteration's g (6x^3 for 4x^3 silently, a tree_map mismatch for two different lambdas), then
refused it (ad/reverse.py _refuse_read_after_loop); jacrev of jacfwd failed inside
('Unset' object has no attribute 'shape'). Such a name read after the loop is now carried as
the names the body assigns are (transformer/normalize.py _loop): the reverse loop starts with
its cotangent for the last iteration and zeros for the others. The kinds that already were
carried (a range index, zip/enumerate targets, a name the body assigns, while loops) are
checked beside them. Every program against float64 central differences (and a Python loop
over the batch) under grad, jacrev, hessian, jit(grad), vmap(grad), grad(grad)."""
import numpy as np
import pytest

import secant
from test_random_programs import load
from test_random_programs2 import _program, check_chain

ROWS = "ws = snp.stack([v0, 2.0 * v0, snp.sin(v0)])"

PROGRAMS = {
    # a loop variable bound from each item and read after the loop (refused before)
    "one_lambda_twice": ["h = lambda t: t * v0", "fs = [h, h]", "v1 = v0", "for g in fs:",
                         "    v1 = g(v1)", "v1 = g(v1)"],
    "two_lambdas": ["fs = [lambda t: snp.cos(t), lambda t: t * v0]", "v1 = v0",
                    "for g in fs:", "    v1 = g(v1)", "v1 = g(v1)"],
    "tuple_of_functions": ["fs = (snp.sin, lambda t: t * v0, snp.tanh)", "v1 = v0",
                           "for g in fs:", "    v1 = g(v1) + 0.5 * v1", "v1 = g(v1) * v0"],
    "array_rows": [ROWS, "v1 = v0", "for w in ws:", "    v1 = snp.sin(w * v1)", "v1 = v1 * w"],
    "reversed_rows": [ROWS, "v1 = v0", "for w in reversed(ws):", "    v1 = snp.sin(w * v1)",
                      "v1 = v1 * w"],
    "bound_before_the_loop": [ROWS, "w = 0.5 * v0", "v1 = v0 * w", "for w in ws:",
                              "    v1 = snp.sin(w * v1)", "v1 = v1 * w"],
    "inner_loop_of_a_loop": [ROWS, "v1 = v0", "for j in range(2):", "    for w in ws:",
                             "        v1 = snp.sin(w * v1)", "    v1 = v1 * w + 0.1 * j"],
    "list_of_arrays": ["xs = [v0, snp.cos(v0), v0 * v0]", "v1 = v0", "for x in xs:",
                       "    v1 = snp.sin(x * v1)", "v1 = v1 * x"],
    "enumerate_list": ["xs = [v0, snp.cos(v0), v0 * v0]", "v1 = v0",
                       "for k, x in enumerate(xs):", "    v1 = snp.sin(x * v1) * (k + 1)",
                       "v1 = v1 * x * k"],
    "pairs": ["pairs = [(v0, 0.5), (snp.sin(v0), 2.0)]", "v1 = v0", "for w, c in pairs:",
              "    v1 = snp.sin(w * v1) + c", "v1 = v1 * w * c"],
    "dict_items": ["d = {'a': v0, 'b': snp.cos(v0)}", "v1 = v0", "for k, p in d.items():",
                   "    v1 = v1 + p * snp.sin(v1)", "v1 = v1 * p"],
    "after_a_continue": [ROWS, "v1 = v0", "for k, w in enumerate(ws):", "    if k == 1:",
                         "        continue", "    v1 = snp.sin(w * v1)", "v1 = v1 * w"],
    "after_a_break": [ROWS, "v1 = v0", "for k, w in enumerate(ws):",     # (refused before)
                      "    v1 = snp.sin(w * v1)", "    if k == 1:", "        break",
                      "v1 = v1 * w * k"],
    "read_under_an_if": [ROWS, "v1 = v0", "for w in ws:", "    if FLAG:",
                         "        v1 = snp.sin(w * v1)", "    else:",
                         "        v1 = snp.cos(w * v1)", "if not FLAG:", "    v1 = v1 * w"],
    "in_a_helper": [ROWS, "v1 = _last(ws, v0)"],
    # the kinds already carried
    "range_index": ["v1 = v0", "for i in range(3):", "    v1 = snp.sin(v1) * (i + 1)",
                    "v1 = v1 * i"],
    "zip": [ROWS, "v1 = v0", "for a, w in zip([0.5, 1.0, 2.0], ws):",
            "    v1 = snp.sin(w * v1) * a", "v1 = v1 * w * a"],
    "enumerate_rows": [ROWS, "v1 = v0", "for k, w in enumerate(ws):",
                       "    v1 = snp.sin(w * v1) + k", "v1 = v1 * w * k"],
    "body_assigned": ["v1 = v0", "for i in range(3):", "    u = snp.cos(v1) * v0",
                      "    v1 = v1 + 0.5 * u", "v1 = v1 * u"],
    "while": ["v1 = v0", "k = 0", "while k < 3:", "    u = snp.cos(v1) * v0",
              "    v1 = v1 + 0.5 * u", "    k = k + 1", "v1 = v1 * u"],
    "while_assigned_under_an_if": ["v1 = v0", "k = 0", "while k < 3:", "    if k % 2 == 0:",
                                   "        u = snp.cos(v1) * v0", "    v1 = v1 + 0.5 * u",
                                   "    k = k + 1", "v1 = v1 * u"],
}

_LAST = "def _last(ws, x):\n    for w in ws:\n        x = snp.sin(w * x)\n    return x * w\n\n\n" \
    "def f(v0):"

# innermost first: jacfwd(jacrev f) is the hessian; grad(grad f) on a scalar input
CHAINS = (["grad"], ["jacrev"], ["jacrev", "jacfwd"], ["grad", "jit"], ["grad", "vmap"],
          ["jacfwd", "jacrev"], ["vmap"], ["jit"])


@pytest.mark.parametrize("case", list(PROGRAMS))
def test_a_name_each_iteration_binds_read_after_the_loop(x64, case):
    source = _program(PROGRAMS[case]).replace("def f(v0):", _LAST)
    for names in CHAINS:
        check_chain(source, (3,), names)
    check_chain(source, (), ["grad", "grad"])


def test_one_lambda_applied_twice_then_after_the_loop_has_the_closed_form_gradient(x64):
    """Regression (silent before the refusal): g(t) = t * x applied three times, v1 = x**4,
    f = sum(x**5 + x**4); reverse mode gave the after-loop cotangent to both iterations."""
    f = load(_program(PROGRAMS["one_lambda_twice"]))
    x = np.array([0.3, -0.2, 0.5])
    want = 5 * x ** 4 + 4 * x ** 3
    for got in (secant.grad(f)(x), secant.jit(secant.grad(f))(x),
                secant.vjp(f, x)[1](np.float64(1.0))[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(secant.hessian(f)(x), np.diag(20 * x ** 3 + 12 * x ** 2),
                               rtol=1e-12, atol=1e-14)


def test_the_last_row_alone_gets_the_cotangent_after_the_loop(x64):
    """`for w in ws: v1 = sin(w * v1)` then `v1 * w`: the after-loop read of w is ws[-1]'s,
    so d/dws of v1 * w there reaches the last row only (against a closed form)."""
    source = _program(["v1 = v0", "for w in ws:", "    v1 = v1 + w", "v1 = v1 * w"]).replace(
        "def f(v0):", "def f(ws):\n    v0 = ws[0]").replace(
        "return snp.sum(v1 * v0 + v1)", "return snp.sum(v1)")
    f = load(source)
    ws = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.7]])
    # v1 = ws[0] + ws[0] + ws[1] + ws[2], f = sum(v1 * ws[2])
    s = 2 * ws[0] + ws[1] + ws[2]
    want = np.stack([2 * ws[2], ws[2], ws[2] + s])
    for t in (secant.grad, lambda g: secant.jit(secant.grad(g))):
        np.testing.assert_allclose(t(f)(ws), want, rtol=1e-12)
