"""Issue 20, row loops' memory and column loops (after tests/test_rows20r_loops.py).

Memory: the reverse loop of a row loop appended every row's cotangent to one list, added after
the loop (add_rows): all n rows' arrays held at once, 7-11 times the hand-written gradient's
peak memory (bench/row_loops.py, 10,000 rows of 16 float32s). It now runs over row_chunks of
its range (n/32 rows, 32 at least), each chunk's rows added after it by one scatter.

Columns: `x[:, j]` read, or `out = out.at[:, j].set(v)` written, in a `for j in range(n)` loop:
each reverse iteration scattered into x's cotangent (`x_bar.at[:, j].add(...)`), or zeroed out's
(`out_2_bar.at[:, j].set(0)`), a copy of the whole array per column; and a `total = total + ...`
in the same loop stacked `total` once per column for its shape (dataflow.reads read `:, j` as
reading anything). The same analysis now covers the row or column of any axis that every axis
before it is taken whole: `x[:, j]`, `x[:, :, k]`, `x[i, :]`.

Values: closed forms, float64 central differences, jit vs eager, vmap vs a Python loop, grad of
grad (a Hessian-vector product) vs its closed form."""
import gc
import tracemalloc

import numpy as np
import pytest
from secant.ad.helpers import row_chunks

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd

rng = np.random.default_rng(20)
X = rng.normal(size=(4, 5))
V = rng.normal(size=(4, 5))
W5 = np.linspace(0.5, 1.5, 5)


def _t(x):
    return np.tanh(np.asarray(x))


def _close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


def test_row_chunks_cover_the_range_in_order():
    for r in (range(0), range(3), range(600), range(10, 0, -3), range(5, 9000, 2),
              range(100_000)):
        chunks = row_chunks(r)
        assert [i for c in chunks for i in c] == list(r)
        assert all(isinstance(c, range) for c in chunks)
        assert len(chunks) <= max(1, -(-len(r) // 32)) and len(chunks) <= 32
    assert [len(c) for c in row_chunks(range(600))] == [32] * 18 + [24]
    assert [len(c) for c in row_chunks(range(100_000))] == [3125] * 32


# --- columns: x[:, j] read, out.at[:, j].set(v) written -------------------------------------
def column_sum(x):
    total = 0.0
    for j in range(x.shape[1]):
        total = total + snp.sum(snp.tanh(x[:, j]) * W5[j])
    return total


def column_set(x):
    out = snp.zeros_like(x)
    for j in range(x.shape[1]):
        out = out.at[:, j].set(snp.tanh(x[:, j]) * W5[j])
    return snp.sum(out ** 2 * V)


def row_sum_tuple_index(x):         # x[i, :]: a row, as x[i]
    total = 0.0
    for i in range(x.shape[0]):
        total = total + snp.sum(snp.tanh(x[i, :]) * W5)
    return total


CLOSED = {
    column_sum: (lambda x: (1 - _t(x) ** 2) * W5,
                 lambda x, v: -2 * _t(x) * (1 - _t(x) ** 2) * W5 * v),
    column_set: (lambda x: 2 * _t(x) * W5 ** 2 * V * (1 - _t(x) ** 2),
                 lambda x, v: 2 * W5 ** 2 * V * (1 - 3 * _t(x) ** 2) * (1 - _t(x) ** 2) * v),
    row_sum_tuple_index: (lambda x: (1 - _t(x) ** 2) * W5,
                          lambda x, v: -2 * _t(x) * (1 - _t(x) ** 2) * W5 * v),
}
IDS = ["column_read", "column_write", "row_tuple_index"]


@pytest.mark.parametrize("f", list(CLOSED), ids=IDS)
def test_column_loops_values(x64, f):
    grad_of, hvp_of = CLOSED[f]
    g = secant.grad(f)
    _close(g(X), grad_of(X))
    _close(g(X), grad_fd(lambda x: float(f(x)), X), rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(X), grad_of(X))
    if f is not column_set:         # (V is shaped like one example)
        xs = np.stack([X, 0.5 * X, -X])
        _close(secant.vmap(g)(xs), np.stack([grad_of(v) for v in xs]))
        _close(secant.jit(secant.vmap(g))(xs), np.stack([grad_of(v) for v in xs]))
    gg = secant.grad(lambda x: snp.sum(secant.grad(f)(x) * V))
    _close(gg(X), hvp_of(X, V), rtol=1e-9, atol=1e-11)
    _close(secant.jit(gg)(X), hvp_of(X, V), rtol=1e-9, atol=1e-11)


def test_column_write_under_vmap(x64):
    xs = np.stack([X, 0.5 * X])
    g = secant.grad(column_set)
    _close(secant.vmap(g)(xs), np.stack([CLOSED[column_set][0](v) for v in xs]))


def test_column_read_adds_its_columns_after_the_loop(x64):
    src = secant.source(secant.grad(column_sum))
    assert "x_columns_bar.append(" in src
    assert 'x_bar = add_rows(x_bar, x_columns_bar, j_chunk[::-1], mode="clip", axis=1)' in src
    assert ".at[:, j].add(" not in src
    assert "total_stack" not in src         # (total is not recorded for its shape)


def test_column_write_zeroes_no_column_per_iteration(x64):
    src = secant.source(secant.grad(column_set))
    assert ".set(0)" not in src and "out_2_bar" not in src
    assert 'add_rows(x_bar, x_columns_bar, j_chunk[::-1], mode="clip", axis=1)' in src


def test_a_tuple_index_row_is_a_row(x64):
    src = secant.source(secant.grad(row_sum_tuple_index))
    assert 'add_rows(x_bar, x_rows_bar, i_chunk[::-1], mode="clip")' in src
    assert "total_stack" not in src


def test_the_last_axis_of_a_3d_array(x64):
    x = rng.normal(size=(2, 3, 4))
    w = np.linspace(0.5, 1.5, 4)

    def f(x):
        total = 0.0
        for k in range(x.shape[2]):
            total = total + snp.sum(snp.sin(x[:, :, k]) * w[k])
        return total
    g = secant.grad(f)
    _close(g(x), np.cos(x) * w)
    _close(secant.jit(g)(x), np.cos(x) * w)
    assert "axis=2" in secant.source(g)


def element_of_row(x):
    total = 0.0
    for j in range(x.shape[1] - 1):
        total = total + snp.sum(snp.tanh(x[j, 0]) * (j + 1.5))
    return total


def next_column(x):
    total = 0.0
    for j in range(x.shape[1] - 1):
        total = total + snp.sum(snp.tanh(x[:, j + 1]) * (j + 1.5))
    return total


def part_of_column(x):
    total = 0.0
    for j in range(x.shape[1] - 1):
        total = total + snp.sum(snp.tanh(x[1:, j]) * (j + 1.5))
    return total


@pytest.mark.parametrize("f", [element_of_row, next_column, part_of_column],
                         ids=["x[j, 0]", "x[:, j + 1]", "x[1:, j]"])
def test_not_a_row_nor_a_column_of_the_counter(x64, f):
    """An index that picks no whole row or column at the counter keeps a scatter per
    iteration: the values still right."""
    x = rng.normal(size=(4, 5))
    g = secant.grad(f)
    _close(g(x), grad_fd(lambda a: float(f(a)), x), rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(x), g(x))
    assert "add_rows(" not in secant.source(g)


def test_many_columns_in_two_chunks(x64):
    x = np.random.default_rng(3).normal(size=(2, 300))
    w = np.linspace(-1.0, 1.0, 300)

    def f(x):
        out = snp.zeros_like(x)
        for j in range(x.shape[1]):
            out = out.at[:, j].set(snp.sin(x[:, j]) * w[j])
        return snp.sum(out)
    g = secant.grad(f)
    _close(g(x), np.cos(x) * w)
    _close(secant.vmap(g)(np.stack([x, -x])), np.stack([np.cos(x) * w, np.cos(-x) * w]))


# --- memory ----------------------------------------------------------------------------------
D = 16
W16 = np.linspace(0.1, 1.0, D).astype(np.float32)


def over_rows(x):
    total = 0.0
    for row in x:
        total = total + snp.sum(snp.tanh(row) * W16)
    return total


def _by_hand(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        t = np.tanh(x[i])
        g[i] = (1 - t * t) * W16
    return g


def _peak(fn, x):
    fn(x)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn(x)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def test_peak_memory_of_a_row_loop_gradient():
    """3,000 rows: the gradient's peak memory within 4 times the hand-written one's (3.1:
    two copies of the cotangent while a chunk is added, a chunk's rows, the eager calls' own);
    every row's cotangent held at once peaked at 7 to 11 times."""
    x = np.random.default_rng(0).normal(size=(3000, D)).astype(np.float32)
    g = secant.grad(over_rows)
    np.testing.assert_allclose(np.asarray(g(x)), _by_hand(x), rtol=1e-4, atol=1e-6)
    ratio = _peak(g, x) / _peak(_by_hand, x)
    assert ratio < 4.0, ratio


# --- higher order ----------------------------------------------------------------------------
def test_grad_of_grad_over_three_chunks(x64):
    """70 rows: three chunks (32, 32, 6). The second-order reverse loops over each chunk's rows
    add them after the chunk too (a loop over row_chunks' pieces reads as one over a range),
    no scatter of the whole cotangent per row."""
    x = np.random.default_rng(6).normal(size=(70, 3))
    w = np.array([0.5, -1.0, 2.0])
    v = np.random.default_rng(7).normal(size=x.shape)

    def f(x):
        total = 0.0
        for row in x:
            total = total + snp.sum(snp.tanh(row) * w)
        return total
    want = -2 * _t(x) * (1 - _t(x) ** 2) * w * v
    gg = secant.grad(lambda x: snp.sum(secant.grad(f)(x) * v))
    _close(gg(x), want)
    _close(secant.jit(gg)(x), want)
    _close(secant.vmap(secant.grad(f))(np.stack([x, -x])),
           np.stack([(1 - _t(x) ** 2) * w, (1 - _t(-x) ** 2) * w]))
    src = secant.source(secant.transforms.generate(secant.grad(f), (0,), "vjp"))
    assert src.count("add_rows(") == 3 and "add_at(" not in src and ".at[i_1]" not in src


# --- chunked reverse loops over Python lists and tuples, under vmap --------------------------
# A helper's `for v in vs[1:]` / `for g in fs` over a list or tuple parameter: its derivative's
# reverse loop runs over `for i_chunk in reversed(row_chunks(i_range))` then
# `for i in reversed(i_chunk)`. vmap read `vs_rest[i]`, `fs_dot[i]` as a batched array's
# row (`vs_rest[batch_index(i)]`: "tuple indices must be integers or slices, not tuple",
# "list indices ...") where the unchunked loop's counter was known to count the list's items
# (normalize._list_like_params: i_chunk now a range of the same list, through _chunks_of).
W3 = np.array([0.5, -1.0, 2.0])
XS = np.random.default_rng(21).normal(size=(2, 3))


def _spread(vs):
    total = 0.0
    for v in vs[1:]:
        total = total + snp.sum((v - vs[0]) ** 2 * W3)
    return total


def tuple_spread(x):
    return _spread((x, snp.sin(x), x * x))


def _spread_grad(x):
    return 2 * W3 * ((np.sin(x) - x) * (np.cos(x) - 1) + (x * x - x) * (2 * x - 1))


def _spread_hessian(x):         # (diagonal: every term elementwise)
    return np.diag(2 * W3 * ((np.cos(x) - 1) ** 2 - (np.sin(x) - x) * np.sin(x)
                             + (2 * x - 1) ** 2 + 2 * (x * x - x)))


def _apply_all(fs, x):
    return sum(g(x) for g in fs)


def lambdas_to_a_helper(x):
    fs = [lambda t: snp.cos(t), lambda t: t * x]
    return snp.sum(_apply_all(fs, x) ** 2)


def _lambdas_grad(x):
    return 2 * (np.cos(x) + x * x) * (2 * x - np.sin(x))


def _lambdas_hessian(x):
    return np.diag(2 * (2 * x - np.sin(x)) ** 2 + 2 * (np.cos(x) + x * x) * (2 - np.cos(x)))


@pytest.mark.parametrize("f, grad_of, hessian_of", [
    (tuple_spread, _spread_grad, _spread_hessian),
    (lambdas_to_a_helper, _lambdas_grad, _lambdas_hessian),
], ids=["tuple_rest", "list_of_lambdas"])
def test_vmap_of_a_chunked_loop_over_a_list_parameter(x64, f, grad_of, hessian_of):
    """vmap(grad), jit(vmap(grad)) and vmap(hessian) against the closed forms per example (a
    Python loop), which float64 central differences confirm."""
    _close(grad_of(XS[0]), grad_fd(lambda a: float(f(a)), XS[0]), rtol=1e-6, atol=1e-8)
    grads = np.stack([grad_of(x) for x in XS])
    hessians = np.stack([hessian_of(x) for x in XS])
    _close(secant.vmap(secant.grad(f))(XS), grads)
    _close(secant.jit(secant.vmap(secant.grad(f)))(XS), grads)
    _close(secant.vmap(secant.hessian(f))(XS), hessians)


_RNG = np.random.default_rng(22)
PS = [_RNG.normal(size=(3, 2)) for _ in range(3)]
VS = [_RNG.normal(size=(3, 2)) for _ in range(3)]
XM = _RNG.normal(size=(4, 3))
TS = np.array([-0.1, 0.05, 0.2])


def generator_sum(params, x):       # (tests/user_programs/extras.py's)
    return sum(snp.sum(snp.tanh(x @ p) ** 2) for p in params)


def along_line(t):                  # params + t * v, the list passed on to the helper
    return generator_sum([p + t * v for p, v in zip(PS, VS)], XM)


def _along_derivatives(t):
    """(h'(t), h''(t)) of along_line: d/dt tanh(a)^2 = 2 tanh sech^2 b, b = x @ v."""
    d1 = d2 = 0.0
    for p, v in zip(PS, VS):
        a, b = XM @ p + t * (XM @ v), XM @ v
        th, s2 = np.tanh(a), 1 - np.tanh(a) ** 2
        d1 += np.sum(2 * th * s2 * b)
        d2 += np.sum(2 * s2 * (1 - 3 * th ** 2) * b * b)
    return d1, d2


def test_generator_over_a_list_parameter_under_vmap_of_derivatives(x64):
    """deep15r's generator_sum (a list of matrices passed to a helper summing a generator over
    it) under vmap(grad(grad)), vmap(hessian), jit(vmap(grad)) along a line, and vmap(grad)
    over a batch of lists, against the closed forms (and central differences)."""
    d1 = np.array([_along_derivatives(t)[0] for t in TS])
    d2 = np.array([_along_derivatives(t)[1] for t in TS])
    h = 1e-5
    _close(d1, [(float(along_line(t + h)) - float(along_line(t - h))) / (2 * h) for t in TS],
           rtol=1e-7, atol=1e-9)
    _close(secant.vmap(secant.grad(secant.grad(along_line)))(TS), d2)
    _close(secant.vmap(secant.hessian(along_line))(TS), d2)
    _close(secant.jit(secant.vmap(secant.grad(along_line)))(TS), d1)
    batch = [np.stack([p, -0.5 * p]) for p in PS]
    got = secant.vmap(secant.grad(generator_sum), in_axes=(0, None))(batch, XM)
    for k in range(2):
        want = secant.grad(generator_sum)([b[k] for b in batch], XM)
        rest = [b[k] for b in batch[1:]]
        for g, w in zip(got, want):
            _close(np.asarray(g)[k], w)
        _close(want[0], grad_fd(lambda a, rest=rest: float(generator_sum([a] + rest, XM)),
                                batch[0][k]), rtol=1e-6, atol=1e-8)
