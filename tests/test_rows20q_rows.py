"""Issue 20: the gradient of a Python loop reading one row of an array per iteration (`x[i]`,
and the write form `out = out.at[i].set(g(x[i]))` / `out[i] = g(x[i])`) added each row's
cotangent by `x_bar = x_bar.at[i].add(x_item_bar)` in the reverse loop: a copy of x_bar per
row, quadratic eagerly. The rows are now gathered and added after the loop at once
(ad/helpers.py add_rows; ad/reverse.py _RowAdds). Values: float64 central differences, the
hand-written NumPy gradient, jit vs eager, vmap vs a loop, grad of grad vs its closed form."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd

W = np.linspace(0.1, 1.0, 4)
rng = np.random.default_rng(20)
X = rng.normal(size=(6, 4))
Y = rng.normal(size=(6, 4))


def row_sum(x):                         # the read form
    total = 0.0
    for i in range(x.shape[0]):
        total = total + snp.sum(snp.tanh(x[i]) * W)
    return total


def row_sum_grad_by_hand(x):
    return (1 - np.tanh(x) ** 2) * W


def row_sum_hessian_vector(x, v):       # d/dx sum(grad(row_sum)(x) * v)
    t = np.tanh(x)
    return -2 * t * (1 - t ** 2) * W * v


def row_set(x):                         # the write form, functional
    out = snp.zeros_like(x)
    for i in range(x.shape[0]):
        out = out.at[i].set(snp.tanh(x[i]) * W)
    return snp.sum(out ** 2)


def row_assign(x):                      # the write form, in place
    out = snp.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = snp.tanh(x[i]) * W
    return snp.sum(out ** 2)


def row_set_grad_by_hand(x):
    t = np.tanh(x)
    return 2 * t * W ** 2 * (1 - t ** 2)


def two_arrays(x, y):                   # two outer arrays read by row, x also read whole
    total = 0.0
    for i in range(x.shape[0]):
        total = total + snp.sum(snp.sin(x[i]) * y[i]) + 0.1 * snp.sum(x * x)
    return total


def two_arrays_grad_by_hand(x, y):
    n = x.shape[0]
    return np.cos(x) * y + 0.2 * n * x, np.sin(x)


def negative_rows(x):                   # rows read from the end, a stride of 2
    total = 0.0
    for i in range(-1, -x.shape[0] - 1, -2):
        total = total + snp.sum(snp.exp(x[i] * 0.5) * W)
    return total


def rows_in_a_branch(x):                # the read inside an if: left to the scatter per row
    total = 0.0
    for i in range(x.shape[0]):
        if i % 2 == 0:
            total = total + snp.sum(snp.sin(x[i]))
        else:
            total = total + snp.sum(x[i] ** 2)
    return total


def nested_rows(x):                     # a row loop inside a loop over passes
    total = 0.0
    for k in range(2):
        for i in range(x.shape[0]):
            total = total + snp.sum(snp.sin(x[i] * (k + 1)) * W)
    return total


def over_rows(x):                       # for row in x: a loop over x's indices
    total = 0.0
    for row in x:
        total = total + snp.sum(snp.tanh(row) * W)
    return total


def over_enumerate(x):
    total = 0.0
    for i, row in enumerate(x):
        total = total + snp.sum(snp.tanh(row) * W) * (i + 1)
    return total


def over_zip(x, y):
    total = 0.0
    for a, b in zip(x, y):
        total = total + snp.sum(snp.tanh(a) * b)
    return total


def over_a_list(xs):                    # xs a list of arrays: its cotangent a list
    total = 0.0
    for i in range(len(xs)):
        total = total + snp.sum(snp.tanh(xs[i])) * 2.0
    return total


def _close(got, want, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


def _as_np(f):
    """f run on float64 NumPy values (secant.numpy accepts them), for central differences."""
    return lambda *a: float(f(*a))


@pytest.mark.parametrize("f, by_hand, plain", [
    (row_sum, row_sum_grad_by_hand, row_sum), (row_set, row_set_grad_by_hand, row_set),
    (row_assign, row_set_grad_by_hand, row_set)],     # (out[i] = v runs under a transform only)
    ids=["read", "at_set", "assign"])
def test_row_loops_gradients(x64, f, by_hand, plain):
    g = secant.grad(f)
    got = g(X)
    _close(got, by_hand(X), rtol=1e-12)
    _close(got, grad_fd(_as_np(plain), X), rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(X), got, rtol=1e-12)
    xs = np.stack([X, 0.5 * X, -X])
    _close(secant.vmap(g)(xs), np.stack([by_hand(v) for v in xs]), rtol=1e-12)


@pytest.mark.parametrize("f", [row_sum, row_set, row_assign], ids=["read", "at_set", "assign"])
def test_the_rows_are_added_after_the_reverse_loop(x64, f):
    """The reverse loop appends each row's cotangent; one add_rows after each chunk of its rows
    (tests/test_rows20s_chunks.py), no scatter of x_bar per row."""
    src = secant.source(secant.grad(f))
    assert "x_rows_bar.append(x_item_bar)" in src
    assert "for i_chunk in reversed(row_chunks(i_range)):" in src
    assert 'add_rows(x_bar, x_rows_bar, i_chunk[::-1], mode="clip")' in src
    assert "x_bar.at[" not in src


def test_grad_of_grad_of_a_row_loop(x64):
    v = rng.normal(size=X.shape)
    gg = secant.grad(lambda x: snp.sum(secant.grad(row_sum)(x) * v))
    want = row_sum_hessian_vector(X, v)
    _close(gg(X), want, rtol=1e-10)
    _close(secant.jit(gg)(X), want, rtol=1e-10)
    # (its own reverse loops add their rows after them too)
    assert "add_rows(" in secant.source(secant.transforms.generate(
        secant.grad(row_sum), (0,), "vjp"))


def test_grad_of_grad_of_the_write_form(x64):
    v = rng.normal(size=X.shape)
    gg = secant.grad(lambda x: snp.sum(secant.grad(row_set)(x) * v))
    want = grad_fd(lambda x: float(np.sum(row_set_grad_by_hand(x) * v)), X)
    _close(gg(X), want, rtol=1e-6, atol=1e-8)


def test_jacfwd_of_grad_and_hessian_of_a_row_loop(x64):
    x = X[:3]
    want = np.diag(row_sum_hessian_vector(x, np.ones_like(x)).ravel()).reshape(x.shape * 2)
    _close(secant.jacfwd(secant.grad(row_sum))(x), want, rtol=1e-10, atol=1e-12)
    _close(secant.hessian(row_sum)(x), want, rtol=1e-10, atol=1e-12)


def test_two_arrays_read_by_row_and_one_read_whole(x64):
    gx, gy = secant.grad(two_arrays, argnums=(0, 1))(X, Y)
    wx, wy = two_arrays_grad_by_hand(X, Y)
    _close(gx, wx, rtol=1e-12)
    _close(gy, wy, rtol=1e-12)
    _close(gx, grad_fd(_as_np(two_arrays), X, Y), rtol=1e-6, atol=1e-7)
    src = secant.source(secant.grad(two_arrays, argnums=(0, 1)))
    assert "x_bar = add_rows(x_bar, x_rows_bar, i_range[::-1]" in src
    jx, jy = secant.jit(secant.grad(two_arrays, argnums=(0, 1)))(X, Y)
    _close(jx, wx, rtol=1e-12)
    _close(jy, wy, rtol=1e-12)


@pytest.mark.parametrize("f", [negative_rows, rows_in_a_branch, nested_rows],
                         ids=["negative_stride", "branch", "nested"])
def test_other_row_loops_against_central_differences(x64, f):
    g = secant.grad(f)
    want = grad_fd(_as_np(f), X)
    _close(g(X), want, rtol=1e-6, atol=1e-8)
    _close(secant.jit(g)(X), want, rtol=1e-6, atol=1e-8)
    xs = np.stack([X, 0.5 * X])
    _close(secant.vmap(g)(xs), np.stack([grad_fd(_as_np(f), v) for v in xs]),
           rtol=1e-6, atol=1e-8)


def test_loops_over_rows_enumerate_zip_and_a_list(x64):
    t = np.tanh(X)
    _close(secant.grad(over_rows)(X), (1 - t ** 2) * W, rtol=1e-12)
    _close(secant.grad(over_enumerate)(X), (1 - t ** 2) * W * np.arange(1, 7)[:, None],
           rtol=1e-12)
    gx, gy = secant.grad(over_zip, argnums=(0, 1))(X, Y)
    _close(gx, (1 - t ** 2) * Y, rtol=1e-12)
    _close(gy, t, rtol=1e-12)
    xs = [X[0], X[1][:3], X[2]]         # (rows of different lengths)
    g = secant.grad(over_a_list)(xs)
    assert type(g) is list and len(g) == 3
    for got, v in zip(g, xs):
        _close(got, 2 * (1 - np.tanh(v) ** 2), rtol=1e-12)


def test_a_loop_over_rows_of_a_parameter_adds_them_after_the_loop(x64):
    """(`for row in x`: x a list or an array, as it turns out when it runs: add_rows adds a
    list's items one by one; tests/test_rows20r_loops.py)"""
    assert "add_rows(" in secant.source(secant.grad(over_rows))


def test_negative_rows_untouched_rows_get_zero(x64):
    got = np.asarray(secant.grad(negative_rows)(X))
    want = np.zeros_like(X)
    want[-1::-2] = 0.5 * np.exp(0.5 * X[-1::-2]) * W
    _close(got, want, rtol=1e-12, atol=0)


def test_float32_rows_keep_the_input_dtype():
    x = X.astype(np.float32)
    got = secant.grad(row_sum)(x)
    assert got.dtype == np.float32
    _close(got, row_sum_grad_by_hand(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_two_thousand_rows_finish(x64):
    """2,000 rows: each reverse iteration copied x_bar before (quadratic); now it runs in
    about a second. No timing asserted: the values, against the hand-written gradient."""
    x = np.random.default_rng(3).normal(size=(2000, 4))
    _close(secant.grad(row_sum)(x), row_sum_grad_by_hand(x), rtol=1e-12)
