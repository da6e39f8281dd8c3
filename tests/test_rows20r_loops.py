"""Issue 20, row loops (after tests/test_rows20q_rows.py): `for row in x`, `range(len(x))`,
`zip(x, y)` and `enumerate(x)` read x row by row where x may be a list or an array (known when
it runs): their reverse loops added each row by `x_bar = add_at(x_bar, i, row_bar)`, a copy of
x_bar per row for an array. The rows are now appended to a list and added after the loop by
add_rows, which adds a list's items one by one. The write form `out = out.at[i].set(v)` over
range(n) zeroed out_bar's row per iteration (`out_2_bar.at[i].set(0)`, a copy per row) and
numbered the updates (at_set_won, a scatter over out's shape per row): both gone.
Values: the closed-form gradient, float64 central differences, jit vs eager, vmap vs a loop,
grad of grad (a Hessian-vector product) vs its closed form; lists and tuples as well as arrays."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd
from tests.test_rows20q_rows import over_enumerate, over_rows, over_zip

W = np.linspace(0.1, 1.0, 4)
rng = np.random.default_rng(21)
X = rng.normal(size=(5, 4))
Y = rng.normal(size=(5, 4))
V = rng.normal(size=(5, 4))


def over_len(x):
    total = 0.0
    for i in range(len(x)):
        total = total + snp.sum(snp.tanh(x[i]) * W)
    return total


def _t(x):
    return np.tanh(np.asarray(x))


# f -> (its gradient in x, its Hessian-vector product with v), closed forms, x an array
CLOSED = {
    over_rows: (lambda x: (1 - _t(x) ** 2) * W,
                lambda x, v: -2 * _t(x) * (1 - _t(x) ** 2) * W * v),
    over_len: (lambda x: (1 - _t(x) ** 2) * W,
               lambda x, v: -2 * _t(x) * (1 - _t(x) ** 2) * W * v),
    over_enumerate: (lambda x: (1 - _t(x) ** 2) * W * np.arange(1, len(x) + 1)[:, None],
                     lambda x, v: -2 * _t(x) * (1 - _t(x) ** 2) * W * v
                     * np.arange(1, len(x) + 1)[:, None]),
}
ONE = [over_rows, over_len, over_enumerate]
IDS = ["for_row", "range_len", "enumerate"]


def _close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("f", ONE, ids=IDS)
def test_an_array_read_by_its_rows(x64, f):
    grad_of, hvp_of = CLOSED[f]
    g = secant.grad(f)
    _close(g(X), grad_of(X))
    _close(g(X), grad_fd(lambda x: float(f(x)), X), rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(X), grad_of(X))
    xs = np.stack([X, 0.5 * X, -X])
    _close(secant.vmap(g)(xs), np.stack([grad_of(v) for v in xs]))
    _close(secant.jit(secant.vmap(g))(xs), np.stack([grad_of(v) for v in xs]))
    gg = secant.grad(lambda x: snp.sum(secant.grad(f)(x) * V))
    _close(gg(X), hvp_of(X, V))
    _close(secant.jit(gg)(X), hvp_of(X, V))
    src = secant.source(g)
    assert "add_rows(x_bar, x_rows_bar, " in src and "add_at(" not in src


@pytest.mark.parametrize("f", ONE, ids=IDS)
@pytest.mark.parametrize("kind", [list, tuple])
def test_a_list_or_tuple_read_by_its_items(x64, f, kind):
    grad_of, hvp_of = CLOSED[f]
    xs = kind(X[k] for k in range(3))
    g = secant.grad(f)
    for got in (g(xs), secant.jit(g)(xs)):
        assert type(got) is kind and len(got) == 3
        _close(np.stack(got), grad_of(X[:3]))
    gg = secant.grad(lambda x: sum(snp.sum(d * v) for d, v in zip(secant.grad(f)(x), V)))
    got = gg(xs)
    assert type(got) is kind
    _close(np.stack(got), hvp_of(X[:3], V[:3]))


def test_a_list_of_items_of_different_lengths(x64):
    def f(xs):
        total = 0.0
        for i in range(len(xs)):
            total = total + snp.sum(snp.tanh(xs[i]) * W[:xs[i].shape[0]]) * (i + 1)
        return total
    xs = [X[0], X[1][:3], X[2][:1]]
    want = [(1 - np.tanh(v) ** 2) * W[:len(v)] * (k + 1) for k, v in enumerate(xs)]
    for got in (secant.grad(f)(xs), secant.jit(secant.grad(f))(xs)):
        assert type(got) is list
        for a, b in zip(got, want):
            _close(a, b)


def test_zip_of_two_arrays_and_of_a_list_and_an_array(x64):
    t = np.tanh(X)
    g = secant.grad(over_zip, argnums=(0, 1))
    for x in (X, list(X)):
        gx, gy = g(x, Y)
        _close(np.stack(list(gx)), (1 - t ** 2) * Y)
        _close(gy, t)
        jx, jy = secant.jit(g)(x, Y)
        _close(np.stack(list(jx)), (1 - t ** 2) * Y)
        _close(jy, t)
    gx, gy = g(X, Y)
    _close(gx, grad_fd(lambda x: float(over_zip(x, Y)), X), rtol=1e-6, atol=1e-8)
    xs, ys = np.stack([X, 2 * X]), np.stack([Y, -Y])
    bx, by = secant.vmap(g)(xs, ys)
    for k in range(2):
        _close(bx[k], (1 - np.tanh(xs[k]) ** 2) * ys[k])
        _close(by[k], np.tanh(xs[k]))
    src = secant.source(g)
    assert "x_bar = add_rows(x_bar, x_rows_bar, " in src
    assert "y_bar = add_rows(y_bar, y_rows_bar, " in src


def test_a_dict_loop_and_a_list_built_here_keep_add_at(x64):
    def over_dict(d):
        total = 0.0
        for k in d:
            total = total + snp.sum(snp.sin(d[k]) * W)
        return total

    def over_built(x):
        parts = [x[0] * 2.0, snp.cos(x[1])]
        total = 0.0
        for p in parts:
            total = total + snp.sum(p * p)
        return total
    d = {"a": X[0], "b": X[1]}
    got = secant.grad(over_dict)(d)
    for k, v in d.items():
        _close(got[k], np.cos(v) * W)
    want = np.zeros_like(X)
    want[0] = 8 * X[0]
    want[1] = -2 * np.cos(X[1]) * np.sin(X[1])
    _close(secant.grad(over_built)(X), want)
    _close(secant.jit(secant.grad(over_built))(X), want)


# --- the write form -----------------------------------------------------------------------
def row_set(x):
    out = snp.zeros_like(x)
    for i in range(x.shape[0]):
        out = out.at[i].set(snp.tanh(x[i]) * W)
    return snp.sum(out ** 2 * V)


def row_set_grad(x):
    t = np.tanh(x)
    return 2 * t * W ** 2 * V * (1 - t ** 2)


def row_set_past_the_end(x):            # rows n, n + 1 dropped (and read back as 0)
    out = snp.ones_like(x)
    for i in range(x.shape[0] + 2):
        out = out.at[i].set(snp.sin(x[i % x.shape[0]]) * W)
    return snp.sum(out ** 2 * V)


def row_set_over_x(x):                 # out starts as 2x: the rows set get none of it
    out = snp.asarray(x) * 2.0
    for i in range(x.shape[0] - 2):
        out = out.at[i].set(snp.sin(x[i]) * W)
    return snp.sum(out ** 2 * V)


def row_set_twice(x):                   # range(-n, n): each row set twice (not rewritten)
    out = snp.zeros_like(x)
    n = x.shape[0]
    for i in range(-n, n):
        out = out.at[i].set(snp.sin(x[i]) * (i + 3.0))
    return snp.sum(out ** 2 * V)


def row_set_reading_out(x):             # out read in the loop too (not rewritten)
    out = snp.ones_like(x)
    for i in range(1, x.shape[0]):
        out = out.at[i].set(snp.sin(x[i]) * out[i - 1])
    return snp.sum(out * V)


def test_the_write_form_zeroes_no_row_per_iteration(x64):
    g = secant.grad(row_set)
    _close(g(X), row_set_grad(X))
    _close(g(X), grad_fd(lambda x: float(row_set(x)), X), rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(X), row_set_grad(X))
    xs = np.stack([X, 0.5 * X, -X])
    _close(secant.vmap(g)(xs), np.stack([row_set_grad(v) for v in xs]))
    src = secant.source(g)
    assert ".set(0)" not in src and "at_set_won" not in src and "out_2_bar" not in src
    assert 'out_bar.at[i].get(mode="fill", fill_value=0)' in src


def test_grad_of_grad_and_jacfwd_of_the_write_form(x64):
    u = rng.normal(size=X.shape)
    gg = secant.grad(lambda x: snp.sum(secant.grad(row_set)(x) * u))
    want = grad_fd(lambda x: float(np.sum(row_set_grad(x) * u)), X)
    _close(gg(X), want, rtol=1e-6, atol=1e-8)
    _close(secant.jit(gg)(X), want, rtol=1e-6, atol=1e-8)
    x = X[:2]
    jf = secant.jacfwd(secant.grad(lambda x: snp.sum(row_set(snp.concatenate([x, X[2:]])))))
    t = np.tanh(x)
    diag = (2 * W ** 2 * V[:2] * ((1 - t ** 2) ** 2 - 2 * t ** 2 * (1 - t ** 2))).ravel()
    _close(jf(x), np.diag(diag).reshape(x.shape * 2), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("f", [row_set_past_the_end, row_set_over_x, row_set_twice,
                               row_set_reading_out],
                         ids=["past_the_end", "over_x", "each_row_twice", "reading_out"])
def test_other_write_loops_against_central_differences(x64, f):
    g = secant.grad(f)
    want = grad_fd(lambda x: float(f(x)), X)
    _close(g(X), want, rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(X), want, rtol=1e-6, atol=1e-8)
    xs = np.stack([X, 0.5 * X])
    _close(secant.vmap(g)(xs), np.stack([grad_fd(lambda x: float(f(x)), v) for v in xs]),
           rtol=1e-6, atol=1e-8)
    if f is row_set_over_x:     # (its rows zeroed after the reverse loop)
        assert "out_bar = zero_rows(out_bar, i_range)" in secant.source(g)


def test_vmap_of_the_write_form_over_a_batched_row_index(x64):
    """The index a batched value (vmap over the rows it sets): at_set_won stays, and it runs."""
    def set_row(x, k):
        out = snp.zeros_like(x)
        for i in range(2):
            out = out.at[k + i].set(snp.tanh(x[i]) * W)
        return snp.sum(out ** 2 * V)
    ks = np.array([0, 1, 3])
    g = secant.vmap(secant.grad(set_row), in_axes=(None, 0))
    want = np.stack([grad_fd(lambda x, k=k: float(set_row(x, int(k))), X) for k in ks])
    _close(g(X, ks), want, rtol=1e-6, atol=1e-8)


def test_more_rows_than_one_scatter_adds(x64):
    """300 rows: the reverse loop runs over row_chunks (each chunk's rows added by one scatter
    after it), ten chunks of 32 rows here; under jit, vmap and grad of grad too."""
    x = np.random.default_rng(4).normal(size=(300, 2))
    w = np.array([0.5, -1.5])

    def f(x):
        total = 0.0
        for row in x:
            total = total + snp.sum(snp.sin(row) * w)
        return total
    g = secant.grad(f)
    _close(g(x), np.cos(x) * w)
    _close(secant.jit(g)(x), np.cos(x) * w)
    _close(secant.vmap(g)(np.stack([x, -x])), np.stack([np.cos(x) * w, np.cos(-x) * w]))
    v = np.random.default_rng(5).normal(size=x.shape)
    gg = secant.grad(lambda x: snp.sum(secant.grad(f)(x) * v))
    _close(gg(x), -np.sin(x) * w * v)


@pytest.mark.parametrize("f", ONE, ids=IDS)
def test_vmap_over_a_list_and_grad_of_vmap(x64, f):
    grad_of = CLOSED[f][0]
    b = np.stack([X, 0.5 * X])
    got = secant.vmap(secant.grad(f))([b[:, k] for k in range(3)])     # items batched
    assert type(got) is list
    for k, a in enumerate(got):
        _close(a, np.stack([grad_of(b[j, :3])[k] for j in range(2)]))
    _close(secant.grad(lambda x: snp.sum(secant.vmap(f)(x)))(b), np.stack([grad_of(v) for v in b]))


def test_writes_at_counters_and_slices_number_no_updates(x64):
    """out.at[i, j] in two range loops, out.at[:, j]: one element per update (the counters are
    ints), so no at_set_won (a scatter over out's shape per iteration)."""
    def cells(x):
        out = snp.zeros_like(x)
        for i in range(2):
            for j in range(x.shape[1]):
                out = out.at[i, j].set(snp.sin(x[i, j]) * (j + 1.0))
        return snp.sum(out ** 2 * V)

    def columns(x):
        out = snp.ones_like(x)
        for j in range(x.shape[1]):
            out = out.at[:, j].set(snp.tanh(x[:, j]) * W[j])
        return snp.sum(out ** 2 * V)
    for f in (cells, columns):
        g = secant.grad(f)
        want = grad_fd(lambda x, f=f: float(f(x)), X)
        _close(g(X), want, rtol=1e-6, atol=1e-8)
        _close(secant.jit(g)(X), want, rtol=1e-6, atol=1e-8)
        assert "at_set_won" not in secant.source(g)
