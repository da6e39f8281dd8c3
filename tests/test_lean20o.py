"""Lean derivatives (issue 20): a parameter's cotangent returned right after its last
assignment is returned in place (ad/fold.py returned_in_place), `return E` for `x_bar = E;
return x_bar`, as a person returns the expression. Each derivative is checked against float64
central differences, jit against eager, vmap against a loop; the refusals keep the name."""
import numpy as np

import secant
import secant.numpy as snp
from secant.ad.fold import returned_in_place
from secant.transformer.walker import Line
from test_lean20c import fd_grad

RNG = np.random.default_rng(2026)


def _fd(f, args, k):
    return fd_grad(lambda v: f(*[v if i == k else a for i, a in enumerate(args)]), args[k])


def _body(f, **kw):
    return secant.source(secant.grad(f, **kw)).splitlines()


def tanh_loss(w, x, y):
    pred = snp.tanh(x @ w)
    err = pred - y
    return snp.mean(err * err)


def accumulated(x):
    y = snp.sin(x) * x
    return snp.sum(y * x)


def two_layer(params, x):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return snp.sum(out * out)


def test_a_returned_cotangent_is_its_expression(x64):
    lines = _body(tanh_loss)
    assert lines[-1] == "    return matmul_grad_y(err_bar * (1 - pred ** 2), x, w)", \
        "\n".join(lines)
    assert not any(ln.strip().startswith("w_bar") for ln in lines)
    args = [RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3)), RNG.normal(size=(4, 2))]
    g = secant.grad(tanh_loss)
    np.testing.assert_allclose(g(*args), _fd(tanh_loss, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g)(*args), g(*args), rtol=1e-12)
    ws = RNG.normal(size=(3, 3, 2))
    got = secant.vmap(g, in_axes=(0, None, None))(ws, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(got[b], _fd(tanh_loss, [ws[b], *args[1:]], 0),
                                   rtol=1e-6, atol=1e-8)


def test_an_accumulation_returned_in_place(x64):
    lines = _body(accumulated)
    assert lines[-1] == "    return x_bar + sin_x * y_bar + y_bar * x * snp.cos(x)", \
        "\n".join(lines)
    x = RNG.normal(size=5)
    np.testing.assert_allclose(secant.grad(accumulated)(x), _fd(accumulated, [x], 0),
                               rtol=1e-6, atol=1e-8)
    # the derivative of the derivative reads the returned expression
    h = secant.jacfwd(secant.grad(accumulated))(x)
    fd = np.stack([(secant.grad(accumulated)(x + e) - secant.grad(accumulated)(x - e)) / 2e-6
                   for e in np.eye(5) * 1e-6], axis=1)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


def test_a_structure_returned_laid_out(x64):
    lines = _body(two_layer)
    k = lines.index("    return grad_of_fields(params, {")
    assert lines[k + 1].startswith("        'w1': ") and lines[-1].endswith("})"), "\n".join(lines)
    params = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4),
              "w2": RNG.normal(size=(4, 2)), "b2": RNG.normal(size=2)}
    x = RNG.normal(size=(5, 3))
    got = secant.grad(two_layer)(params, x)
    jitted = secant.jit(secant.grad(two_layer))(params, x)
    for key, v in params.items():
        def f(v, key=key):
            return two_layer(dict(params, **{key: v}), x)
        np.testing.assert_allclose(got[key], fd_grad(f, v), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(jitted[key], got[key], rtol=1e-12)


def test_refusals_keep_the_name():
    kept = {"x_bar", "y_bar"}
    plain = [Line("x_bar = a_bar * 2", 1), Line("return x_bar", 1)]
    assert [ln.code for ln in returned_in_place(plain, kept)] == ["return a_bar * 2"]
    assert returned_in_place(plain, set()) is plain                 # not a parameter's
    several = [Line("x_bar = a_bar * 2", 1), Line("return x_bar, y_bar", 1)]
    assert returned_in_place(several, kept) is several
    unpacked = [Line("x_bar, y_bar = f(a_bar)", 1), Line("return x_bar", 1)]
    assert returned_in_place(unpacked, kept) is unpacked
    in_loop = [Line("for i in range(3):", 1, "block"), Line("x_bar = x_bar + i", 2),
               Line("return x_bar", 1)]
    assert returned_in_place(in_loop, kept) is in_loop
    closure = [Line("g = lambda: x_bar", 1), Line("x_bar = a_bar * 2", 1),
               Line("return x_bar", 1)]
    assert returned_in_place(closure, kept) is closure
    other = [Line("y_bar = a_bar * 2", 1), Line("return x_bar", 1)]
    assert returned_in_place(other, kept) is other


# --- a fold on one row may take up to MAX_ONE_ROW_OPERATIONS (ad/fold.py) -------------------
def attention(x, wq, wk, wv):
    q = x @ wq
    k = x @ wk
    v = x @ wv
    s = q @ k.T / snp.sqrt(float(q.shape[-1]))
    e = snp.exp(s - snp.max(s, axis=-1, keepdims=True))
    a = e / snp.sum(e, axis=-1, keepdims=True)
    out = a @ v
    return snp.sum(out * out)


def dense_sigmoid(z):
    return snp.sum(1.0 / (1.0 + snp.exp(-z)))


def test_attention_scores_cotangent_on_one_row(x64):
    lines = _body(attention)
    # (softmax's rule reads a alone, folded into the scale's on two rows: `axis=-1` no
    # operation: tests/test_lean20z_softmax.py)
    assert "    q_matmul_k_T_bar = (a * (a_bar - snp.sum(a_bar * a, axis=-1, keepdims=True))" \
        in lines, "\n".join(lines)
    assert not any(ln.strip().startswith("sum_e_bar") for ln in lines)
    assert max(map(len, lines)) <= 100
    args = [RNG.normal(size=(4, 3))] + [RNG.normal(size=(3, 3)) / 2 for _ in range(3)]
    for k in range(4):
        g = secant.grad(attention, argnums=k)
        np.testing.assert_allclose(g(*args), _fd(attention, args, k), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(secant.jit(g)(*args), g(*args), rtol=1e-10)
    xs = RNG.normal(size=(3, 4, 3))
    got = secant.vmap(secant.grad(attention), in_axes=(0, None, None, None))(xs, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(got[b], _fd(attention, [xs[b], *args[1:]], 0),
                                   rtol=1e-6, atol=1e-8)


def test_one_row_limit_and_its_refusals():
    from secant.ad import fold
    d = Line("t_bar = a_bar / s + u_bar * e", 1)
    use = Line("y_bar = t_bar * e / snp.sqrt(n)", 1)     # 4 + 3 operations, one row
    got = fold._substituted(d, use, one_row=True)
    assert got.code == "y_bar = (a_bar / s + u_bar * e) * e / snp.sqrt(n)"
    assert fold._substituted(d, use) is None    # (the first passes keep MAX_OPERATIONS)
    assert fold._substituted(d, use, wrap=True, one_row=True) is None   # (a second row too)
    big = Line("y_bar = t_bar * e / snp.sqrt(n) + f(g(b))", 1)     # 4 + 5 operations
    assert fold._substituted(d, big, one_row=True) is None
    wide = Line("y_bar = t_bar * a_long_name_of_a_value / snp.sqrt(another_long_name_of_one)"
                " + x_bar_one", 1)                               # 7 operations, > 90 columns
    assert fold._substituted(d, wide, one_row=True) is None
