"""Lean derivatives (issue 20), lean20's accumulation across user lines (ad/accumulate.py).

A cotangent's contributions from consecutive user lines are summed in one expression, the
`# Grad of:` comments of the lines joined (in the user's order), where nothing between changes
what the first contribution reads. Each derivative is checked against float64 central
differences, jit against eager, vmap against a loop, the second order against differences of
the first."""
import numpy as np

import secant
import secant.numpy as snp
from secant.ad.accumulate import summed
from secant.transformer.walker import Line
from test_lean20c import fd_grad

RNG = np.random.default_rng(2021)


def _fd(f, args, k):
    return fd_grad(lambda v: f(*[v if i == k else a for i, a in enumerate(args)]), args[k])


def three_projections(x, wq, wk, wv):
    q = x @ wq
    k = x @ wk
    v = x @ wv
    return snp.sum(q * k) + snp.sum(snp.tanh(v))


def leapfrog(q, p, c):
    h = p - c * q
    n = q + c * h
    return snp.sum(n * h)


def mse_like(pred, target):
    diff = pred - target
    return snp.mean(diff * diff)


def _body(fn):
    return secant.source(secant.grad(fn)).splitlines()


def test_three_contributions_summed_under_one_comment(x64):
    lines = _body(three_projections)
    k = next(i for i, ln in enumerate(lines) if ln.strip().startswith("x_bar ="))
    # (v_bar, read once, folded in too: the sum continued on a second row, before its `+`)
    assert [ln.strip() for ln in lines[k:k + 2]] == [
        "x_bar = (matmul_grad_x(plus_sum_q_times_k_bar * (1 - tanh_v ** 2), x, wv)",
        "+ matmul_grad_x(k_bar, x, wk) + matmul_grad_x(q_bar, x, wq))"], "\n".join(lines)
    assert not any(ln.strip().startswith("v_bar =") for ln in lines), "\n".join(lines)
    assert "    # Grad of: q = x @ wq; k = x @ wk; v = x @ wv; return snp.sum(q * k) + " \
        "snp.sum(snp.tanh(v))" in lines
    args = [RNG.normal(size=s) for s in ((5, 3), (3, 4), (3, 4), (3, 4))]
    np.testing.assert_allclose(secant.grad(three_projections)(*args),
                               _fd(three_projections, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(three_projections))(*args),
                               secant.grad(three_projections)(*args), rtol=1e-12)
    xs = RNG.normal(size=(3, 5, 3))
    got = secant.vmap(secant.grad(three_projections), in_axes=(0, None, None, None))(
        xs, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(got[b], _fd(three_projections, [xs[b], *args[1:]], 0),
                                   rtol=1e-6, atol=1e-8)


def test_a_section_with_other_lines_joined_whole(x64):
    lines = _body(leapfrog)
    # (q_bar's one sum, returned in place: fold.returned_in_place; its two unbroadcasts of
    # values of one shape, {p, c, q}, one: ad/algebra.py unbroadcasts_merged)
    assert lines[-1] == "    return unbroadcast(n_bar - c * (n * sum_n_times_h_bar + c * n_bar), q)", \
        "\n".join(lines)
    assert not any(ln.strip().startswith("q_bar =") for ln in lines), "\n".join(lines)
    assert "    # Grad of: h = p - c * q; n = q + c * h; return snp.sum(n * h)" in lines
    args = [RNG.normal(size=4), RNG.normal(size=4), 0.3]
    np.testing.assert_allclose(secant.grad(leapfrog)(*args), _fd(leapfrog, args, 0),
                               rtol=1e-6, atol=1e-8)
    # second order: the Hessian's rows against differences of the gradient
    hess = secant.jacfwd(secant.grad(leapfrog))(*args)
    for i in range(4):
        e = np.zeros(4)
        e[i] = 1e-5
        fd = (secant.grad(leapfrog)(args[0] + e, *args[1:]) -
              secant.grad(leapfrog)(args[0] - e, *args[1:])) / 2e-5
        np.testing.assert_allclose(hess[:, i], fd, rtol=1e-5, atol=1e-7)


def _lines(*rows):
    out = []
    for indent, kind, code in rows:
        out.append(Line(code, indent, kind))
    return out


def test_not_merged_past_a_change_of_what_the_contribution_reads():
    rows = [(1, "comment", "# Grad of: k = x @ wk"),
            (1, "stmt", "x_bar = f(k_bar, w)"),
            (1, "comment", "# Grad of: w = g(u)"),
            (1, "stmt", "w = w_2"),
            (1, "stmt", "x_bar = x_bar + h(q_bar)")]
    got = [ln.code for ln in summed(_lines(*rows), {"x_bar", "k_bar", "q_bar"})]
    assert got == [code for _, _, code in rows]


def test_not_merged_past_a_loop_or_into_a_non_accumulation():
    rows = [(1, "comment", "# Grad of: k = x @ wk"),
            (1, "stmt", "x_bar = f(k_bar)"),
            (1, "comment", "# Grad of: for i in range(n):"),
            (1, "block", "for i in range(n):"),
            (2, "stmt", "y_bar = y_bar + 1"),
            (1, "stmt", "x_bar = x_bar + h(q_bar)")]
    assert [ln.code for ln in summed(_lines(*rows), {"x_bar", "y_bar"})] == \
        [code for _, _, code in rows]
    rows = [(1, "comment", "# Grad of: k = x @ wk"),
            (1, "stmt", "x_bar = f(k_bar)"),
            (1, "comment", "# Grad of: q = x @ wq"),
            (1, "stmt", "x_bar = x_bar * h(q_bar)")]
    assert [ln.code for ln in summed(_lines(*rows), {"x_bar"})] == [c for _, _, c in rows]


def test_merged_with_parentheses_where_precedence_needs_them():
    rows = [(1, "comment", "# Grad of: k = x @ wk"),
            (1, "stmt", "x_bar = a if c else b"),
            (1, "comment", "# Grad of: q = x @ wq"),
            (1, "stmt", "x_bar = q_bar + x_bar")]
    got = [ln.code for ln in summed(_lines(*rows), {"x_bar"})]
    assert got == ["# Grad of: q = x @ wq; k = x @ wk", "x_bar = q_bar + (a if c else b)"]


def test_a_cotangent_read_once_in_the_next_line_folded_there(x64):
    lines = _body(mse_like)
    assert lines[3:5] == ["    # Grad of: diff = pred - target; return snp.mean(diff * diff)",
                          "    return unbroadcast(diff * mean_grad(grad_seed_like(diff), diff)"
                          " * 2, pred)"], "\n".join(lines)
    args = [RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))]
    np.testing.assert_allclose(secant.grad(mse_like)(*args), _fd(mse_like, args, 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(mse_like))(*args),
                               secant.grad(mse_like)(*args), rtol=1e-12)


def test_a_returned_cotangent_or_one_read_twice_not_folded():
    rows = [(1, "comment", "# Grad of: k = x @ wk"),
            (1, "stmt", "x_bar = f(k_bar)"),
            (1, "comment", "# Grad of: q = x @ wq"),
            (1, "stmt", "y_bar = h(x_bar)"),
            (1, "stmt", "return x_bar, y_bar")]
    assert [ln.code for ln in summed(_lines(*rows), {"x_bar", "y_bar"})] == \
        [code for _, _, code in rows]
    rows[-1] = (1, "stmt", "return y_bar")
    got = [ln.code for ln in summed(_lines(*rows), {"x_bar", "y_bar"})]
    assert got == ["# Grad of: q = x @ wq; k = x @ wk", "y_bar = h(f(k_bar))", "return y_bar"]
    assert [ln.code for ln in summed(_lines(*rows), {"x_bar", "y_bar"}, kept={"x_bar"})] == \
        [code for _, _, code in rows]


def test_a_difference_merged_and_a_long_comment_wrapped():
    long_a = "a = e / snp.sum(e, axis=-1, keepdims=True) + another_long_name_for_the_width"
    rows = [(1, "comment", "# Grad of: " + long_a),
            (1, "stmt", "q_bar = f(a_bar)"),
            (1, "comment", "# Grad of: e = snp.exp(s - snp.max(s, axis=-1, keepdims=True))"),
            (1, "stmt", "q_bar = q_bar - g(e_bar)")]
    got = [ln.code for ln in summed(_lines(*rows), {"q_bar"})]
    assert got == ["# Grad of: e = snp.exp(s - snp.max(s, axis=-1, keepdims=True));\n"
                   "#          " + long_a, "q_bar = f(a_bar) - g(e_bar)"]
    # (the read on the right of a difference is not an accumulation: `v = B - v`)
    rows[-1] = (1, "stmt", "q_bar = g(e_bar) - q_bar")
    assert [ln.code for ln in summed(_lines(*rows), {"q_bar"})] == [c for _, _, c in rows]


def energy(q, p, k):
    p_half = p - 0.5 * k * q
    q_new = q + p_half
    p_new = p_half - 0.5 * k * q_new
    return 0.5 * snp.sum(p_new * p_new) + 0.5 * k * snp.sum(q_new * q_new)


def test_leapfrog_energy_against_differences(x64):
    src = secant.source(secant.grad(energy))
    assigned = [ln.split(" = ")[0].strip() for ln in src.splitlines() if " = " in ln]
    # (q_bar returned in place: its two unbroadcasts one, ad/algebra.py unbroadcasts_merged)
    assert assigned.count("q_bar") == 0 and assigned.count("q_new_bar") == 1, src
    assert "return unbroadcast(q_new_bar - times_k * (p_new_bar + q_new_bar), q)" in src, src
    args = [RNG.normal(size=5), RNG.normal(size=5), 1.3]
    np.testing.assert_allclose(secant.grad(energy)(*args), _fd(energy, args, 0), rtol=1e-6,
                               atol=1e-8)
    qs = RNG.normal(size=(3, 5))
    got = secant.vmap(secant.grad(energy), in_axes=(0, None, None))(qs, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(got[b], _fd(energy, [qs[b], *args[1:]], 0), rtol=1e-6,
                                   atol=1e-8)


def gaussian(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma)


def test_two_signs_cancelled_where_a_read_once_folds(x64):
    from secant.ad.accumulate import _signs_cancelled
    ln = _signs_cancelled(Line("t_bar = unbroadcast(-(-z * g / e), mu) - -(a * b)"), {"t_bar"})
    assert ln.code == "t_bar = unbroadcast(z * g / e, mu) - -(a * b)"
    same = Line("t_bar = -(a / -b) + -(-a)")     # (only a first factor's sign cancels)
    assert _signs_cancelled(same, {"t_bar"}) is same
    src = secant.source(secant.grad(gaussian))
    # (the seed divided, not z again: tests/test_lean20t.py, XLA's (a / b) / c overflows)
    assert "return unbroadcast(grad_seed_like(z) / exp_log_sigma * z, mu)" in src, src
    args = [RNG.normal(size=3), RNG.normal(size=3) / 3, RNG.normal(size=(6, 3))]
    for k in (0, 1):
        np.testing.assert_allclose(secant.grad(gaussian, argnums=k)(*args),
                                   _fd(gaussian, args, k), rtol=1e-6, atol=1e-8)
    for dtype in (np.float32, np.float64):
        a32 = [a.astype(dtype) for a in args]
        got = secant.grad(gaussian)(*a32)
        assert got.dtype == dtype
        np.testing.assert_allclose(secant.jit(secant.grad(gaussian))(*a32), got, rtol=1e-6)


def test_not_folded_into_an_item_of_a_tuple():
    rows = [(1, "comment", "# Grad of: return snp.sum(w ** 3) + snp.sum(v[:, 0] ** 2)"),
            (1, "stmt", "w_bar = 3 * g * w ** 2"),
            (1, "comment", "# Grad of: w, v = snp.linalg.eigh(a)"),
            (1, "stmt", "a_bar = eigh_vjp((w_bar, v_bar), a)")]
    assert [ln.code for ln in summed(_lines(*rows), {"w_bar", "v_bar", "a_bar"})] == \
        [c for _, _, c in rows]
