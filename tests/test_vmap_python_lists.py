"""vmap (and vmap inside or outside grad) of Python code that loops over lists, builds lists and
updates arrays in place: vmap against a Python loop over the examples, derivatives against
float64 central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad.helpers import split_at
from secant.batching.helpers import update_per_example


def fd_grad(f, x, h=1e-6):
    """Central differences of scalar f at float64 x."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g


def loop(f, xs):
    return np.stack([np.asarray(f(x)) for x in xs])


def close(got, want, tol=1e-6):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=tol, atol=tol)


XS = np.array([[0.3, -0.2, 0.5], [0.1, 0.9, -0.4], [0.7, 0.2, 0.05]])


# --- user code --------------------------------------------------------------------------------
def append_loop(x):
    acc = []
    for i in range(3):
        acc.append(snp.sin(x * (i + 1)))
    return snp.sum(snp.stack(acc))


def python_sum_of_appended(x):
    terms = []
    for i in range(4):
        terms.append(snp.sum(x ** i))
    return sum(terms)


def list_indexed(x):
    parts = [x, x * x, x ** 3]
    return snp.sum(parts[1] + parts[-1])


def star_unpack(x):
    first, *rest = [x[0], x[1], x[2]]
    return first * rest[0] + rest[1] ** 2


def list_in_variable(x):
    a = snp.sin(x)
    b = [1.0, a * a, 2.0]
    return snp.sum(snp.array(b))


def sort_and_clip(x):
    s = snp.sort(x)
    return snp.sum(snp.clip(s, -0.8, 0.8) * snp.arange(1.0, 4.0))


def sort_rows(x):
    s = snp.sort(snp.reshape(x, (3, 1)) * snp.array([1.0, -2.0]), axis=0)
    return snp.sum(s * snp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))


def inplace_set(x):
    y = snp.zeros(3)
    y[0] = snp.sin(x[0])
    y[2] = x[1] * x[2]
    return snp.sum(y * y)


def rows_of(x):
    total = 0.0
    for row in x:
        total = total + snp.sum(row ** 2)
    return total


def over_items(items):
    total = 0.0
    for a in items:
        total = total + snp.sum(a) * len(items)
    return total


def first_non_none(x):
    total = None
    for i in range(3):
        total = x * i if total is None else total + x * i
    return total


# --- vmap against a loop ------------------------------------------------------------------------
@pytest.mark.parametrize("f", [append_loop, python_sum_of_appended, list_indexed, star_unpack,
                               sort_and_clip, sort_rows, rows_of, first_non_none])
def test_vmap_matches_a_loop(x64, f):
    close(secant.vmap(f)(XS), loop(f, XS))


@pytest.mark.parametrize("f", [append_loop, python_sum_of_appended, list_indexed, star_unpack])
def test_vmap_of_vmap_matches_nested_loops(x64, f):
    xss = np.stack([XS, XS[::-1] * 0.5])
    want = np.stack([loop(f, xs) for xs in xss])
    close(secant.vmap(secant.vmap(f))(xss), want)


def test_vmap_over_a_list_parameter_iterates_its_items(x64):
    """`for a in items` / len(items) of a list parameter: the list's items, each batched."""
    a, b = XS, XS[::-1] * 2.0
    got = secant.vmap(over_items)([a, b])
    close(got, np.array([over_items([a[k], b[k]]) for k in range(3)]))


def test_vmap_of_a_helper_slicing_a_list_parameter(x64):
    """split_at(g, n) (a list's cotangent split) with g a batched list: g[:n] of the list."""
    g = [XS, XS * 2.0, XS * 3.0]
    head, rest = secant.vmap(lambda g: split_at(g, 1))(g)
    assert len(head) == 1 and len(rest) == 2
    close(head[0], XS)
    close(rest[1], XS * 3.0)


def test_vmap_of_argsort_matches_a_loop(x64):
    close(secant.vmap(lambda x: snp.argsort(x))(XS), loop(np.argsort, XS))


def test_vmap_of_at_with_a_batched_index(x64):
    def scatter(x):
        i = snp.argsort(x)
        return snp.zeros(3).at[i].set(x * snp.arange(1.0, 4.0))
    close(secant.vmap(scatter)(XS), loop(scatter, XS))


def test_update_per_example_matches_a_loop(x64):
    a = XS.reshape(3, 3)
    i = np.array([[0, 2], [1, 1], [2, 0]])
    v = np.arange(6.0).reshape(3, 2)
    got = update_per_example(a, i, v, "add", 3)
    want = np.stack([np.asarray(snp.asarray(a[k]).at[i[k]].add(v[k])) for k in range(3)])
    close(got, want)


def test_an_append_before_an_alias_is_batched(x64):
    """An append followed by an alias of the list (rewritten to `out = out + [v]` past the
    alias) keeps vmap's batch axis: its value is the loop's."""
    def aliased(x):
        out = []
        for i in range(2):
            out.append(x * i)
        res = tuple(out) if x.ndim > 5 else out
        return snp.stack(res)
    close(secant.vmap(aliased)(XS), np.stack([aliased(x) for x in XS]))


def test_list_insert_on_a_batched_value_is_followed(x64):
    """out.insert(0, x * 2.0), its result dropped: once refused (vmap could not follow the batch
    axis through it), now rewritten to build a new list (others10: container_updates), and
    checked against a loop."""
    def inserted(x):
        out = [x]
        out.insert(0, x * 2.0)
        return snp.stack(out)
    close(secant.vmap(inserted)(XS), np.stack([inserted(x) for x in XS]))
    np.testing.assert_allclose(np.asarray(secant.vmap(inserted)(XS))[:, 0], 2 * XS)


# --- derivatives ----------------------------------------------------------------------------------
@pytest.mark.parametrize("f", [append_loop, python_sum_of_appended, list_indexed, star_unpack,
                               sort_and_clip])
def test_grad_of_vmap_sum_matches_differences(x64, f):
    vf = secant.vmap(f)
    close(secant.grad(lambda xs: snp.sum(vf(xs)))(XS),
          fd_grad(lambda xs: np.sum(loop(f, xs)), XS), 1e-5)


@pytest.mark.parametrize("f", [append_loop, sort_and_clip, sort_rows])
def test_vmap_of_grad_matches_differences(x64, f):
    got = secant.vmap(secant.grad(f))(XS)
    close(got, np.stack([fd_grad(f, x) for x in XS]), 1e-5)


@pytest.mark.parametrize("f", [append_loop, python_sum_of_appended])
def test_vmap_of_grad_of_grad_matches_differences(x64, f):
    v = np.array([1.0, 2.0, -1.0])

    def hv(x):
        return snp.sum(secant.grad(f)(x) * v)
    got = secant.vmap(secant.grad(hv))(XS)
    want = np.stack([fd_grad(lambda y: np.sum(np.asarray(secant.grad(f)(y)) * v), x)
                     for x in XS])
    close(got, want, 1e-5)


@pytest.mark.parametrize("f", [append_loop, python_sum_of_appended, sort_and_clip])
def test_grad_of_vmap_of_grad_matches_differences(x64, f):
    vg = secant.vmap(secant.grad(f))
    w = np.arange(1.0, 10.0).reshape(3, 3)
    got = secant.grad(lambda xs: snp.sum(vg(xs) * w))(XS)
    want = fd_grad(lambda xs: np.sum(np.asarray(vg(xs)) * w), XS)
    close(got, want, 1e-5)


def test_list_of_scalars_under_vmap_of_grad_and_grad_of_grad(x64):
    """b = [1.0, a * a, 2.0] of a scalar a: d/dx sin(x)^2 = sin(2x), d2 = 2 cos(2x)."""
    xs = np.array([0.1, 0.4, 0.7])
    close(secant.vmap(list_in_variable)(xs), np.array([3.0 + np.sin(x) ** 2 for x in xs]))
    close(secant.vmap(secant.grad(list_in_variable))(xs), np.sin(2 * xs))
    close(secant.vmap(secant.grad(secant.grad(list_in_variable)))(xs), 2 * np.cos(2 * xs))


def test_grad_of_grad_of_an_appended_list(x64):
    v = np.array([1.0, 2.0, 3.0])
    x = XS[0]
    got = secant.grad(lambda y: snp.sum(secant.grad(append_loop)(y) * v))(x)
    want = -sum((i + 1) ** 2 * np.sin(x * (i + 1)) for i in range(3)) * v     # diagonal H
    close(got, want)


# --- in-place updates -----------------------------------------------------------------------------
def _inplace_set_ref(x):
    y = snp.zeros(3)
    y = y.at[0].set(snp.sin(x[0]))
    y = y.at[2].set(x[1] * x[2])
    return snp.sum(y * y)


def test_inplace_update_under_jit_and_vjp(x64):
    x = XS[0]
    want = float(_inplace_set_ref(x))
    close(secant.jit(inplace_set)(x), want)
    out, pull = secant.vjp(inplace_set, x)
    close(out, want)
    close(pull(1.0)[0], fd_grad(_inplace_set_ref, x))
