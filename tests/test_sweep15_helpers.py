"""Helpers that generated code calls, read again by a second, third or fourth transform (issue
15, section 4): add_at and its transpose add_at_grad carry their own jvp / vjp / batching rules,
a value read field by field starts its cotangent as zeros_like_tree, and grad_of_fields_batched
is readable by vmap. Each against float64 finite differences, a Python loop or eager."""
import numpy as np

import secant
import secant.numpy as snp
from secant.ad.helpers import add_at, add_at_grad


def close(got, want, rtol=1e-7, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


def fd(f, x, h=1e-4):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def rows_of_dicts(x):
    rows = []
    for k in range(3):
        rows.append({"a": snp.sin(x * (k + 1.0)), "b": x ** 2})
    total = 0.0
    for r in rows:
        total = total + r["a"] * r["b"]
    return total


def sliced_items(x):
    out = []
    for k in range(4):
        out.append(snp.exp(x * (k + 1.0) * 0.3))
    rest = out[1:]
    return snp.sum(snp.stack(rest) ** 2) * out[0] + rest[-1]


def test_fourth_order_through_lists_of_dicts_and_slices_against_finite_differences(x64):
    for f in (rows_of_dicts, sliced_items):
        g3 = secant.grad(secant.grad(secant.grad(f)))
        g4 = secant.grad(g3)
        x = 0.4
        close(g4(x), fd(g3, x), rtol=1e-6, atol=1e-6)


def test_jit_of_grad_of_grad_over_a_loop_on_a_list_of_dicts_matches_eager(x64):
    g2 = secant.grad(secant.grad(rows_of_dicts))
    for x in (-0.3, 0.4, 1.1):
        close(secant.jit(g2)(x), float(g2(x)), rtol=1e-12)
        close(g2(x), fd(secant.grad(rows_of_dicts), x), rtol=1e-6, atol=1e-6)


def test_vmap_of_third_order_through_sliced_lists_matches_a_loop(x64):
    g3 = secant.grad(secant.grad(secant.grad(sliced_items)))
    xs = np.array([-0.4, 0.2, 0.9])
    close(secant.vmap(g3)(xs), np.array([float(g3(x)) for x in xs]), rtol=1e-10)


def test_add_at_and_add_at_grad_are_each_others_transpose(x64):
    """<add_at(0, idx, item), t> == <item, add_at_grad(t, idx, item)>, for an array (with the
    item broadcast), a list at an index and at a slice (items stacked), and a dict."""
    rng = np.random.default_rng(3)
    t = rng.normal(size=(4, 3))
    item = rng.normal(size=(1,))
    lhs = np.sum(np.asarray(add_at(snp.zeros((4, 3)), 2, item)) * t)
    close(lhs, np.sum(item * np.asarray(add_at_grad(snp.asarray(t), 2, item))))
    ts = [rng.normal(size=2) for _ in range(4)]
    items = rng.normal(size=(2, 2))
    zeros = [np.zeros(2) for _ in range(4)]
    lhs = sum(np.sum(np.asarray(a) * b) for a, b in zip(add_at(zeros, slice(1, 3), items), ts))
    close(lhs, np.sum(items * np.asarray(add_at_grad(ts, slice(1, 3), items))))
    close(add_at_grad(ts, -1, items[0]), ts[-1])
    close(add_at_grad({"a": ts[0], "b": ts[1]}, "b", items[0]), ts[1])


def test_jvp_vjp_and_vmap_of_add_at_against_references(x64):
    rng = np.random.default_rng(5)
    t, item = snp.asarray(rng.normal(size=(4, 3))), rng.normal(size=3)

    def f(t, item):
        return snp.sum(snp.sin(add_at(t, 1, item * item)))

    gt, gi = secant.grad(f, argnums=(0, 1))(t, item)
    want_t = np.cos(np.asarray(add_at(t, 1, item * item)))
    close(gt, want_t)
    close(gi, want_t[1] * 2 * item)
    _, tangent = secant.jvp(f, (t, item), (np.ones_like(t), np.zeros_like(item)))
    close(tangent, np.sum(want_t))
    ts = rng.normal(size=(5, 4, 3))
    close(secant.vmap(f, (0, None))(ts, item), np.array([float(f(snp.asarray(s), item)) for s in ts]))
    gi = secant.grad(f, argnums=1)
    close(secant.vmap(gi, (0, None))(ts, item),
          np.array([np.asarray(gi(snp.asarray(s), item)) for s in ts]))


def chosen_kind(x):
    out = []
    for k in range(3):
        out.append(snp.exp(x * k * 0.5))
    chosen = tuple(out) if snp.ndim(x) == 0 else out        # staged as a cond under jit
    return snp.mean(snp.stack(chosen)) + chosen[1] * chosen[2]


def test_tuple_of_a_staged_branch_parameter_under_jit_of_grad_of_grad(x64):
    """Under jit the `x if c else y` is a cond whose branch reads `tuple(out)` of a parameter
    of unknown kind: its cotangent goes back through kind_of(out), at every order."""
    g2 = secant.grad(secant.grad(chosen_kind))
    for x in (-0.2, 0.6):
        close(secant.jit(g2)(x), float(g2(x)), rtol=1e-12)
        close(g2(x), fd(secant.grad(chosen_kind), x), rtol=1e-6, atol=1e-6)
    close(secant.jit(secant.grad(g2))(0.6), fd(g2, 0.6), rtol=1e-6, atol=1e-6)



def reversed_layers(x, w):
    ws = [w, w * 2.0, snp.sin(w)]
    for v in reversed(ws):
        x = snp.tanh(x * v + 0.1)
    return x


def test_reversed_of_a_tracked_list_is_its_reversed_slice(x64):
    """reversed(ws) of a differentiated list (a jacrev's vjp of a loop over a list, read by
    jvp and grad again, did this): read as ws[::-1], against finite differences and a loop."""
    import composition_sweep_cases as cases
    x, w = 0.3, 0.7
    g = secant.grad(reversed_layers, argnums=1)
    close(g(x, w), fd(lambda v: reversed_layers(x, v), w), rtol=1e-6, atol=1e-8)
    close(secant.grad(g, argnums=1)(x, w), fd(lambda v: g(x, v), w), rtol=1e-6, atol=1e-6)
    ws = np.array([0.2, 0.7, 1.3])
    close(secant.vmap(g, (None, 0))(x, ws), np.array([float(g(x, v)) for v in ws]),
          rtol=1e-10)
    cases.check("list_params", ["jacrev", "jvp", "grad"])
    cases.check("list_params", ["jacrev", "jvp", "vmap"])
