"""Lean derivatives (issue 20), lean20i's steps.

- A value one elementwise op computes and one op reads (transformer/dataflow.py
  read_once_at_top) takes its cotangent unsummed where its own rule (ad/vjp_rules.py
  TAKES_UNSUMMED) sums each operand's contribution down anyway: unbroadcast(unbroadcast(t, a), b)
  is unbroadcast(t, b), and a is not kept for its shape (gaussian's `z = (x - mu) / ...`).
- grad's seed from the value a mean reduces where that is provably inexact (a log's, a float
  literal's product: transformer/dataflow.py _inexact), through a sign: `-snp.mean(...)` is not
  computed for the seed.
- An accumulation `x_bar = E`, `x_bar = x_bar + b` merged into `x_bar = E + b` past a line
  that reads E's inputs last (ad/fold.py: nothing lives longer, a local lives until bound
  again; attention's e_bar).
- A matmul's result read twice keeps the unbroadcast of each contribution: the two could have
  two shapes that x @ w broadcasts to, whose sum broadcasts to a third (transformer/dataflow.py
  read_once_at_top: matmul_grad summed that sum down once, counting each contribution as often
  as the other's extra rows: a silently wrong gradient).

Each derivative is checked against float64 central differences, jit and vmap against eager
and a loop, second order against differences of the first."""
import numpy as np

import secant
import secant.numpy as snp
from secant.ad.fold import folded
from secant.transformer import ir
from test_lean20c import fd_grad
from test_lean20d import _code, _lines
from test_lean20g import O, V, _op, _seed_source

RNG = np.random.default_rng(2020)


def _fd(f, args, k):
    return fd_grad(lambda v: f(*[v if i == k else a for i, a in enumerate(args)]), args[k])


def _check(f, args, argnums, rtol=1e-6, atol=1e-8):
    got = secant.grad(f, argnums=argnums)(*args)
    for k, g in zip(argnums, got):
        np.testing.assert_allclose(np.asarray(g), _fd(f, args, k), rtol=rtol, atol=atol)


def matmul_read_twice(w, x, b1, b2):
    v = x @ w
    return snp.sum(v + b1) + snp.sum(v * b2)


def test_a_matmul_read_twice_sums_each_contribution_to_its_shape(x64):
    # x @ w is (1, 4); b1 broadcasts it to (5, 4), b2 to (3, 1, 4): the two cotangents add to
    # (3, 5, 4), which summed down to (1, 4) counted the first 3 times and the second 5 times
    args = [RNG.normal(size=s) for s in ((3, 4), (1, 3), (5, 4), (3, 1, 4))]
    _check(matmul_read_twice, args, (0, 1))


# --- unbroadcast(unbroadcast(t, a), b) is unbroadcast(t, b) -------------------------------------


def gaussian(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma)


def chain(x, y, c):
    # x * y and sin of it each read once: the cotangent comes unsummed through both
    return snp.sum(snp.sin(x * y) * c)


def chain_divided(x, y, c, d):
    return snp.sum(snp.tanh(snp.exp(x - y) / d + c))


def complex_reader(x, y, c):
    # x * y is real: the reader's complex contribution has its real part taken at x
    return snp.sum(snp.real(c * (x * y)) ** 2)


# every way the operands broadcast: the first is differentiated, the reader broadcasts more
CHAIN_SHAPES = {
    "same": ((3,), (3,), (3,), (3,)),
    "reader broadcasts up": ((3,), (3,), (4, 3), (3,)),
    "operand and reader": ((1, 3), (2, 1), (4, 2, 3), (2, 3)),
    "size-1 axes": ((2, 1), (1, 3), (2, 3), (5, 1, 1)),
    "scalar operand": ((), (3,), (2, 3), ()),
}


def test_values_summed_once_differentiate_right(x64):
    for label, shapes in CHAIN_SHAPES.items():
        for f, n in ((chain, 3), (chain_divided, 4), (complex_reader, 3)):
            args = [RNG.uniform(0.5, 1.5, size=s) for s in shapes[:n]]
            if f is complex_reader:
                args[2] = args[2] + 1j * RNG.uniform(0.5, 1.5, size=shapes[2])
            nums = tuple(range(2 if f is complex_reader else n))
            _check(f, args, nums)
            got = secant.jit(secant.grad(f, argnums=nums))(*args)
            want = secant.grad(f, argnums=nums)(*args)
            for a, b in zip(got, want):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    mu, log_sigma, x = RNG.normal(size=3), 0.3 * RNG.normal(size=3), RNG.normal(size=(6, 3))
    _check(gaussian, [mu, log_sigma, x], (0, 1, 2))


def test_values_summed_once_vmap_and_second_order(x64):
    x, y, c = RNG.uniform(0.5, 1.5, size=(2, 3)), RNG.uniform(0.5, 1.5, size=(3,)), \
        RNG.uniform(0.5, 1.5, size=(4, 2, 3))
    dx = secant.grad(chain)
    batched = secant.vmap(dx, in_axes=(0, None, None))(x, y, c)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(batched[k]), np.asarray(dx(x[k], y, c)),
                                   rtol=1e-12)
    hess = np.asarray(secant.hessian(chain)(x[0], y, c))
    for i in range(3):
        want = fd_grad(lambda v: np.asarray(dx(v, y, c))[i], x[0])
        np.testing.assert_allclose(hess[i], want, rtol=1e-5, atol=1e-7)
    mu, log_sigma, xs = RNG.normal(size=3), 0.3 * RNG.normal(size=3), RNG.normal(size=(6, 3))
    hess = np.asarray(secant.hessian(gaussian)(mu, log_sigma, xs))
    dmu = secant.grad(gaussian)
    for i in range(3):
        want = fd_grad(lambda v: np.asarray(dmu(v, log_sigma, xs))[i], mu)
        np.testing.assert_allclose(hess[i], want, rtol=1e-5, atol=1e-7)


def test_float16_and_float32_cotangents_keep_their_dtype():
    for dt in (np.float16, np.float32):
        x, y = np.ones(3, dt), np.full(3, 2.0, dt)
        got = secant.grad(chain, argnums=(0, 1))(x, y, np.ones((4, 3), np.float32))
        assert [np.asarray(g).dtype for g in got] == [dt, dt]
        np.testing.assert_allclose(np.asarray(got[0], np.float64), 4 * 2 * np.cos(2.0),
                                   rtol=1e-2 if dt is np.float16 else 1e-6)


def test_the_value_is_not_kept_for_its_shape():
    code = secant.source(secant.grad(gaussian))
    assert "z = (x - mu) / exp_log_sigma" in code         # x - mu folded: read nowhere else
    assert code.count("unbroadcast(") == 1                 # summed once, down to mu
    code = secant.source(secant.grad(chain))
    assert code.count("unbroadcast(") == 1 and "sin_x_times_y" not in code


def softmax_xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def test_no_unbroadcast_more_where_the_rule_would_not_sum():
    # logp's rule gives z its cotangent as it is (z has logp's shape): summing logp's there
    # instead would add an unbroadcast, so logp's reader sums it
    code = secant.source(secant.grad(softmax_xent))
    assert "unbroadcast(logp_bar, z)" not in code
    assert "logp_bar = unbroadcast(" in code


# --- grad's seed without the mean computed for it -----------------------------------------------


def nll(w, x, y):
    logp = snp.log(snp.exp(x @ w) + 1.0)
    return -snp.mean(snp.sum(logp * y, axis=1))


def counted(w, x):
    # a mean of integers is a float: its seed is the float output's (zeros for w)
    return snp.mean(snp.sum((x @ w > 0).astype(snp.int32), axis=1)) + 0.0 * snp.sum(w)


def test_seed_of_a_mean_of_an_inexact_value_reads_its_dtype(x64):
    w, x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 3)), RNG.uniform(size=(5, 4))
    code = secant.source(secant.grad(nll))
    assert "grad_seed_like(" in code and "grad_seed(" not in code, code
    _check(nll, [w, x, y], (0,))
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(nll))(w, x, y)),
                               np.asarray(secant.grad(nll)(w, x, y)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.grad(counted)(w, x)), 0.0)


def test_seed_dtype_follows_the_output():
    w, x, y = (RNG.normal(size=s).astype(np.float16) for s in ((3, 4), (5, 3), (5, 4)))
    assert np.asarray(secant.grad(nll)(w, x, y)).dtype == np.float16


def test_seed_source_reads_through_signs_and_means_of_inexact_values():
    sq = _op("s", "multiply", "x", "x")
    red = ir.Op(["o"], "sum", {"a": V("s")}, {}, O)
    neg = ir.Op(["n"], "negative", {"x": V("o")}, {}, O)
    assert _seed_source([sq, red, neg], "n") == "x"
    # a mean of an inexact value (a log's) keeps its dtype; of a parameter's square, unknown
    log = ir.Op(["l"], "log", {"x": V("x")}, {}, O)
    mean = ir.Op(["m"], "mean", {"a": V("p")}, {}, O)
    part = ir.Op(["p"], "sum", {"a": V("l")}, {"axis": "1"}, O)
    assert _seed_source([log, part, mean, ir.Op(["n"], "negative", {"x": V("m")}, {}, O)],
                        "n") == "l"
    assert _seed_source([sq, ir.Op(["m"], "mean", {"a": V("s")}, {}, O)], "m") is None
    # a float literal makes integers floats; an int literal does not
    for lit, want in (("0.5", "t"), ("2", None)):
        t = ir.Op(["t"], "multiply", {"x": V("x"), "y": ir.Expr(lit)}, {}, O)
        assert _seed_source([t, ir.Op(["m"], "mean", {"a": V("t")}, {}, O)], "m") == want


# --- an accumulation merged past a line that reads its inputs last ------------------------------


def test_an_accumulation_merges_past_the_last_read_of_its_inputs():
    # a_bar's last read was the middle line: merged, a_bar / sum_e is computed at the second
    # assignment, where a_bar is still bound (a local lives until bound again or the return),
    # and e_bar's first value no longer lives between the two
    lines = _lines((1, "sum_e = snp.sum(e, axis=-1, keepdims=True)"),
                   (1, "a_bar = matmul_grad_x(out_bar, a, v)"),
                   (1, "# Grad of: a = e / snp.sum(e, axis=-1, keepdims=True)"),
                   (1, "e_bar = a_bar / sum_e"),
                   (1, "sum_e_bar = unbroadcast(-a_bar * a / sum_e, sum_e)"),
                   (1, "e_bar = e_bar + unreduce(sum_e_bar, e, axis=-1, keepdims=True)"),
                   (1, "return e_bar"))
    assert _code(folded(lines, set(), kept={"e_bar"}))[3:5] == [
        (1, "sum_e_bar = unbroadcast(-a_bar * a / sum_e, sum_e)"),
        (1, "e_bar = a_bar / sum_e + unreduce(sum_e_bar, e, axis=-1, keepdims=True)")]


def attention(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    s = q @ k.T / snp.sqrt(float(q.shape[-1]))
    e = snp.exp(s - snp.max(s, axis=-1, keepdims=True))
    a = e / snp.sum(e, axis=-1, keepdims=True)
    out = a @ v
    return snp.sum(out * out)


def test_attention_accumulates_in_one_line(x64):
    args = [RNG.normal(size=(4, 3))] + [RNG.normal(size=(3, 3)) / 2 for _ in range(3)]
    code = secant.source(secant.grad(attention))
    # (softmax's rule reads a alone: tests/test_lean20z_softmax.py)
    assert "a * (a_bar - snp.sum(a_bar * a, axis=-1, keepdims=True))" in code, code
    _check(attention, args, (0, 1, 2, 3))
