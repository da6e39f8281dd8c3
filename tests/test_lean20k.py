"""Lean derivatives (issue 20): a structure's cotangent (grad_of_fields(params, {...})) takes
each field's expression where that field's cotangent is read once there, under one comment, as
a person writes the dict of gradients; a line past 90 columns is laid out one field a line
(ad/fold.py display, laid_out). Every source check has a numerical twin: float64 central
differences, jit against eager, vmap against a Python loop."""
import ast

import numpy as np

import secant
import secant.numpy as snp
from secant.ad import fold
from secant.transformer.walker import Line
from test_lean20c import fd_grad

RNG = np.random.default_rng(2022)


def two_layer(params, x, y):
    hidden = snp.tanh(x @ params["weights_in"] + params["bias_in"])
    out = hidden @ params["weights_out"] + params["bias_out"]
    return snp.sum((out - y) ** 2)


def _params():
    return {"weights_in": RNG.normal(size=(3, 4)), "bias_in": RNG.normal(size=4),
            "weights_out": RNG.normal(size=(4, 2)), "bias_out": RNG.normal(size=2)}


def _fd(params, x, y):
    out = {}
    for k in params:
        def f(v, k=k):
            return two_layer({**params, k: v}, x, y)
        out[k] = fd_grad(f, params[k])
    return out


def test_fields_read_once_written_in_the_dict(x64):
    src = secant.source(secant.grad(two_layer))
    lines = src.splitlines()
    assert max(len(ln) for ln in lines) <= 4 + fold.MAX_LENGTH, src
    assert "    return grad_of_fields(params, {" in lines, src
    entries = [ln.strip() for ln in lines if ln.startswith("        '")]
    assert entries[:2] == [
        "'weights_in': matmul_grad_y(plus_x_matmul_weights_in_bar, x, "
        "params['weights_in']),",
        "'bias_in': unbroadcast(plus_x_matmul_weights_in_bar, params['bias_in']),"], src
    assert not any(ln.strip().startswith(("weights_in_bar =", "bias_in_bar =")) for ln in lines)
    params, x, y = _params(), RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    got = secant.grad(two_layer)(params, x, y)
    want = _fd(params, x, y)
    for k in params:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8)
    jitted = secant.jit(secant.grad(two_layer))(params, x, y)
    for k in params:
        np.testing.assert_allclose(jitted[k], got[k], rtol=1e-12)
    xs = RNG.normal(size=(3, 5, 3))
    batched = secant.vmap(secant.grad(two_layer), in_axes=(None, 0, None))(params, xs, y)
    for b in range(3):
        one = secant.grad(two_layer)(params, xs[b], y)
        for k in params:
            np.testing.assert_allclose(batched[k][b], one[k], rtol=1e-10)


def test_laid_out_one_field_a_line():
    code = ("params_bar = grad_of_fields(params, {'w1': matmul_grad_y(a_bar, x, params['w1']), "
            "'b1': unbroadcast(a_bar, params['b1']), 'w2': w2_bar})")
    assert len(code) > fold.MAX_LENGTH
    text = fold.laid_out(code)
    assert text.splitlines() == [
        "params_bar = grad_of_fields(params, {",
        "    'w1': matmul_grad_y(a_bar, x, params['w1']),",
        "    'b1': unbroadcast(a_bar, params['b1']),",
        "    'w2': w2_bar})"]
    assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(code))
    short = "params_bar = grad_of_fields(params, {'w1': w1_bar, 'b1': b1_bar})"
    assert fold.laid_out(short) == short
    for other in ("t = f(a, {**rest, 'w': " + "w_bar_" * 16 + "})",     # (a ** entry)
                  "t = f(a, {'w': w_bar}, key=" + "k" * 90 + ")",      # (keywords)
                  "t = f(a, {'w': " + "w_bar_" * 16 + "})"):            # (one entry)
        assert fold.laid_out(other) == other


def test_an_entry_within_the_limits():
    """Each field's expression is held to fold's limits of a line, and the rest of the line."""
    value = "unbroadcast(" + " + ".join(["a_bar"] * 6) + ", params['b1'])"
    line = Line("params_bar = grad_of_fields(params, {'w1': w1_bar, 'b1': " + value + "})", 1)
    assert fold._within_limits(line, None, layout=True) is None         # 6 operations
    fits = Line("params_bar = grad_of_fields(params, {'w1': matmul_grad_y(a_bar, x, w1), "
                "'b1': unbroadcast(a_bar + c_bar, params['b1'])})", 1)
    assert fold._within_limits(fits, None, layout=True) is fits
    assert fold._within_limits(fits, None, layout=False) is None        # 94 columns as one


def mse_mlp(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    err = h @ params["w2"] - y
    return snp.mean(err * err)


def test_seed_of_a_mean_through_a_matmul_reads_a_dtype(x64):
    """A matmul with an inexact operand is inexact (JAX's promotion), so the mean of err * err
    has err's dtype: the seed reads it, the loss is not computed for it (it was
    grad_seed(snp.mean(err * err)))."""
    src = secant.source(secant.grad(mse_mlp))
    code = [ln for ln in src.splitlines() if not ln.strip().startswith("#")]
    assert "grad_seed_like(err)" in src and not any("snp.mean" in ln for ln in code), src
    params = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4),
              "w2": RNG.normal(size=(4, 2))}
    x, y = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    got = secant.grad(mse_mlp)(params, x, y)
    for k in params:
        want = fd_grad(lambda v, k=k: mse_mlp({**params, k: v}, x, y), params[k])
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)
        assert got[k].dtype == np.float64
    # float32 parameters, float64 targets: the output (and its seed) is float64
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    got32 = secant.grad(mse_mlp)(p32, x.astype(np.float32), y)
    ref32 = {k: secant.grad(mse_mlp)({**params, k: p32[k].astype(np.float64)},
                                     x.astype(np.float32).astype(np.float64), y)[k]
             for k in params}
    for k in params:
        assert got32[k].dtype == np.float32
        np.testing.assert_allclose(got32[k], ref32[k], rtol=1e-5, atol=1e-6)
    jitted = secant.jit(secant.grad(mse_mlp))(params, x, y)
    for k in params:
        np.testing.assert_allclose(jitted[k], got[k], rtol=1e-12)


def test_vmap_of_the_seed_from_a_dtype(x64):
    """vmap of grad_seed_like by its rule (grad_seed_like_batched): one seed an example."""
    params = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4),
              "w2": RNG.normal(size=(4, 2))}
    xs, ys = RNG.normal(size=(4, 5, 3)), RNG.normal(size=(4, 5, 2))
    batched = secant.vmap(secant.grad(mse_mlp), in_axes=(None, 0, 0))
    assert "grad_seed_like_batched(err, " in secant.source(batched)
    got = batched(params, xs, ys)
    for b in range(4):
        one = secant.grad(mse_mlp)(params, xs[b], ys[b])
        for k in params:
            np.testing.assert_allclose(got[k][b], one[k], rtol=1e-10)
    jitted = secant.jit(batched)(params, xs, ys)
    for k in params:
        np.testing.assert_allclose(jitted[k], got[k], rtol=1e-12)


def log_softmax_dot(z, y):
    s = snp.sum(snp.exp(z), axis=-1, keepdims=True)
    logp = z - snp.log(s)
    return snp.sum(logp * y)


def test_a_kept_dims_unreduce_reads_as_its_cotangent(x64):
    """unreduce(s_bar, exp_z, axis=-1, keepdims=True) * exp_z is s_bar * exp_z (s_bar has
    exp_z's shape with the summed axis of size 1: it broadcasts as the unreduce did); s_bar is
    then read once and folds into z_bar's line."""
    src = secant.source(secant.grad(log_softmax_dot))
    code = [ln.strip() for ln in src.splitlines() if not ln.strip().startswith("#")]
    assert not any("keepdims=True)" in ln and "unreduce(" in ln for ln in code), src
    assert "s_bar" not in src, src
    # (log-softmax's rule reads logp alone: tests/test_lean20z_softmax.py)
    assert "return logp_bar - snp.sum(logp_bar, axis=-1, keepdims=True) * snp.exp(logp)" in \
        code, src
    for yshape in ((4, 3), (3,), (2, 4, 3)):
        z, y = RNG.normal(size=(4, 3)), RNG.normal(size=yshape)
        got = secant.grad(log_softmax_dot)(z, y)
        np.testing.assert_allclose(got, fd_grad(lambda v: log_softmax_dot(v, y), z),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(secant.jit(secant.grad(log_softmax_dot))(z, y), got,
                                   rtol=1e-12)
    zs, y = RNG.normal(size=(3, 4, 5)), RNG.normal(size=(4, 5))
    batched = secant.vmap(secant.grad(log_softmax_dot), in_axes=(0, None))(zs, y)
    for b in range(3):
        np.testing.assert_allclose(batched[b], secant.grad(log_softmax_dot)(zs[b], y),
                                   rtol=1e-10)


class _Shapes:
    """transformer/shapes.py's `of` for these lines: x, y of their own shapes."""
    local = {}

    def of(self, expr):
        tree = ast.parse(expr.src, mode="eval")
        if any(isinstance(n, ast.Call) for n in ast.walk(tree)):
            return None
        return frozenset({frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))})


def _simplified(code):
    from secant.ad import algebra
    return algebra.simplified_lines([Line(code, 1)], frozenset({"t_bar", "s"}),
                                    _Shapes())[0].code


def test_kept_dims_unreduce_rewrites_and_refusals():
    assert _simplified("t_bar = unreduce(s, x, axis=-1, keepdims=True) * x") == "t_bar = s * x"
    assert _simplified("t_bar = x + unreduce(s, x, axis=1, keepdims=True)") == "t_bar = x + s"
    for code in ("t_bar = unreduce(s, x, axis=-1) * x",              # axis dropped: no
                 "t_bar = unreduce(s, x, axis=-1, keepdims=False) * x",
                 "t_bar = unreduce(s, x, axis=-1, keepdims=k) * x",  # (not known True)
                 "t_bar = unreduce(s, x, axis=-1, keepdims=True) * y",   # y may be smaller
                 "t_bar = unreduce(s, x, axis=-1, keepdims=True)"):      # nothing else
        assert _simplified(code) == code, code


def test_a_sum_inside_a_product_reads_the_product_s_factors():
    """A sum that is a factor of a product broadcasts with its other factors: an unreduce
    in it reads as its cotangent where they cover a's shape (attention's softmax:
    (a_bar / sum_e + unreduce(sum_e_bar, e, axis=-1, keepdims=True)) * e)."""
    assert _simplified("t_bar = (g / c + unreduce(s, x, axis=-1, keepdims=True)) * x") == \
        "t_bar = (g / c + s) * x"
    assert _simplified("t_bar = (g + unreduce(s, x)) * x") == "t_bar = (g + s) * x"
    for code in ("t_bar = (g + unreduce(s, x, axis=-1, keepdims=True)) * y",
                 "t_bar = (g + unreduce(s, x, axis=-1, keepdims=True)) / x"):  # (not a product)
        assert _simplified(code) == code, code


def attention_like(s, v):
    e = snp.exp(s - snp.max(s, axis=-1, keepdims=True))
    a = e / snp.sum(e, axis=-1, keepdims=True)
    out = a @ v
    return snp.sum(out * out)


def test_softmax_inside_attention_without_the_broadcast(x64):
    src = secant.source(secant.grad(attention_like))
    code = [ln.strip() for ln in src.splitlines() if not ln.strip().startswith("#")]
    # (the max's cotangent is zero, test_lean20l: s's cotangent is this line, returned)
    assert any(ln.endswith((" = (a_bar / sum_e + sum_e_bar) * e",
                            "return (a_bar / sum_e + sum_e_bar) * e",
                            "return (a_bar / sum_e + unbroadcast(-a_bar * a / sum_e, sum_e)) * e",
                            # (softmax's rule: tests/test_lean20z_softmax.py)
                            "return a * (a_bar - snp.sum(a_bar * a, axis=-1, keepdims=True))"))
               for ln in code), src
    s, v = RNG.normal(size=(4, 4)), RNG.normal(size=(4, 3))
    got = secant.grad(attention_like)(s, v)
    np.testing.assert_allclose(got, fd_grad(lambda u: attention_like(u, v), s),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(attention_like))(s, v), got, rtol=1e-12)
    ss = RNG.normal(size=(2, 4, 4))
    batched = secant.vmap(secant.grad(attention_like), in_axes=(0, None))(ss, v)
    for b in range(2):
        np.testing.assert_allclose(batched[b], secant.grad(attention_like)(ss[b], v),
                                   rtol=1e-10)
