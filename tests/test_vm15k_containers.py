"""Python containers under vmap (issue 15, vm15k): tuples, sets and lists built from filtered
generators of static ints (`tuple(i for i in range(z.ndim) if a and b)`, built as a list
under vmap before: `outer + (0, 1)` raised TypeError), containers people build from a batched
array's rows (dict comprehensions, zip of two lists, enumerate, map, star unpacking, pops),
a choice between constants whose test reads a shape (`2.0 if x.ndim > 2 else 1.0`, refused
under grad and vmap before), and the refusals JAX makes too (any()/all() and sorted() of
batched values, a choice on a batched test), each with a clear SecantError. Values against a
Python loop over the examples, gradients against float64 central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from central_differences import grad_fd

RNG = np.random.default_rng(15)
X = RNG.normal(size=(4, 3, 2))
Y = RNG.normal(size=(4, 3, 2))


def _loop(f, *args):
    return np.stack([np.asarray(f(*a)) for a in zip(*args)])


# --- tuples, sets and lists of static ints from filtered generators ---------------------------
def axes_last(z):
    outer = tuple(i for i in range(snp.ndim(z)) if i != 0 and i != 1)
    return snp.transpose(z, outer + (0, 1))


def summed_over_a_set(z):
    outer = set(i for i in range(snp.ndim(z)) if i != 0 and i != 1)
    return snp.sum(z ** 2, axis=tuple(sorted(outer)))


def tuple_of_a_list_comprehension(z):
    outer = tuple([i for i in range(z.ndim) if i > 0 and i < 2])
    return snp.sum(snp.sin(z), axis=outer + (0,))


def reshaped_by_dict_values(z):
    d = {i: z.shape[i] for i in range(z.ndim) if i != 0 and i != 1}
    return z.reshape(z.shape[:2] + tuple(d.values())) * 2.0


STATIC_INTS = [axes_last, summed_over_a_set, tuple_of_a_list_comprehension,
               reshaped_by_dict_values]


@pytest.mark.parametrize("f", STATIC_INTS, ids=lambda f: f.__name__)
def test_static_int_containers_under_vmap(f):
    z = RNG.normal(size=(5, 2, 3, 4))
    want = _loop(f, z)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(z)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f))(z)), want, rtol=1e-6)


def test_a_filtered_generator_s_tuple_under_vmap_of_grad(x64):
    def f(z):
        outer = tuple(i for i in range(z.ndim) if i != 0 and i != 1)
        return snp.sum(snp.sin(snp.transpose(z, outer + (0, 1))) * snp.arange(24.0).reshape(
            4, 2, 3))
    z = RNG.normal(size=(3, 2, 3, 4))
    want = np.stack([grad_fd(f, e) for e in z])
    np.testing.assert_allclose(secant.grad(f)(z[0]), want[0], rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(z), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(f)))(z), want, rtol=1e-6)


# --- containers built from a batched array's rows --------------------------------------------
def dict_of_rows(x, y):
    d = {i: row * 2.0 for i, row in enumerate(x)}
    return sum(snp.sum(d[i] * y[i]) for i in d)


def zip_of_two_lists(x, y):
    a = [r for r in x]
    b = [snp.sin(r) for r in y]
    return sum(snp.sum(p * q) for p, q in zip(a, b))


def enumerate_rows(x, y):
    t = 0.0
    for i, r in enumerate(x):
        t = t + (i + 1) * snp.sum(r * y[i])
    return t


def mapped_rows(x, y):
    return sum(map(lambda r: snp.sum(r ** 2), x)) * snp.sum(y)


def star_unpacked_rows(x, y):
    a, *rest = x
    return snp.sum(a) * sum(snp.sum(r * r) for r in rest) + snp.sum(y)


def popped_and_inserted(x, y):
    xs = list(x)
    last = xs.pop()
    xs.insert(0, y[0])
    return snp.sum(last) * sum(snp.sum(r) * (i + 1) for i, r in enumerate(xs))


def dict_of_zipped_sums(x, y):
    d = {k: snp.sum(v * v) for k, v in zip("abc", x)}
    return d["a"] * d["c"] + sum(d.values()) * snp.sum(y)


def extremes_of_batched_scalars(x, y):
    return min(snp.sum(r) for r in x) * max([snp.sum(r ** 2) for r in y])


def either_of_two_shapes(x, y):
    return snp.sum(x * y) * (2.0 if any(d > 2 for d in x.shape) else 1.0) \
        + snp.sum(x) * (3.0 if x.ndim > 2 else 0.5)


ROWS = [dict_of_rows, zip_of_two_lists, enumerate_rows, mapped_rows, star_unpacked_rows,
        popped_and_inserted, dict_of_zipped_sums, extremes_of_batched_scalars,
        either_of_two_shapes]


@pytest.mark.parametrize("f", ROWS, ids=lambda f: f.__name__)
def test_row_containers_under_vmap_and_vmap_of_grad(x64, f):
    want = np.array([float(f(a, b)) for a, b in zip(X, Y)])
    np.testing.assert_allclose(secant.vmap(f)(X, Y), want, rtol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.vmap(f))(X, Y), want, rtol=1e-10)
    grads = np.stack([grad_fd(f, a, b) for a, b in zip(X, Y)])
    np.testing.assert_allclose(secant.grad(f)(X[0], Y[0]), grads[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(X, Y), grads, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(f)))(X, Y), grads,
                               rtol=1e-6, atol=1e-8)


def test_a_choice_between_constants_on_a_shape_is_each_example_s():
    """x.shape under vmap is each example's: (2, 2) examples give 1.0, the batch's (5, 2, 2)
    would give 2.0."""
    def f(x):
        return snp.sum(x) * (2.0 if any(d > 2 for d in x.shape) else 1.0)
    x = np.ones((5, 2, 2))
    np.testing.assert_allclose(secant.vmap(f)(x), [4.0] * 5)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(f)))(x), np.ones((5, 2, 2)))


# --- refused, as JAX refuses them (bool() of a vmapped tracer) ---------------------------------
def any_of_batched_tests(x, y):
    cs = [snp.sum(r) > 0 for r in x]
    return snp.where(any(cs), snp.sum(x * y), snp.sum(y))


def all_of_a_generator(x, y):
    if all(snp.sum(r) > 0 for r in x):
        return snp.sum(x * y)
    return -snp.sum(y)


def choice_on_a_batched_test(x, y):
    return snp.sum(x * y) * (2.0 if snp.sum(x) > 0 else 1.0)


def sorted_batched_scalars(x, y):
    s = sorted([snp.sum(r) for r in x])
    return s[0] * snp.sum(y)


@pytest.mark.parametrize("f, match", [
    (any_of_batched_tests, r"any\(\) needs the truth value of each item"),
    (all_of_a_generator, r"all\(\) needs the truth value of each item"),
    (choice_on_a_batched_test, r"`a if c else b` needs the truth value of a batched value"),
    (sorted_batched_scalars, r"sorted\(\) of batched values")], ids=lambda v: getattr(
        v, "__name__", ""))
def test_truth_values_of_batched_values_are_refused(f, match):
    f(X[0], Y[0])       # (eagerly a Python bool: fine)
    for t in (secant.vmap(f), secant.jit(secant.vmap(f)), secant.vmap(secant.grad(f))):
        with pytest.raises(secant.SecantError, match=match) as e:
            t(X, Y)
        assert "test_vm15k_containers.py" in str(e.value)


def test_a_choice_on_a_traced_test_under_grad_and_jit():
    """grad reads the choice between constants as a constant (its test a Python bool when it
    runs); jit(grad) refuses the traced test's truth value, as jax.jit does."""
    f = choice_on_a_batched_test
    np.testing.assert_allclose(secant.grad(f)(X[0], Y[0]),
                               Y[0] * (2.0 if np.sum(X[0]) > 0 else 1.0), rtol=1e-6)
    with pytest.raises(secant.SecantError, match="bool"):
        secant.jit(secant.grad(f))(X[0], Y[0])


def test_a_user_s_pair_still_has_its_length_checked_under_vmap():
    """The staged loop's own carry tuple is unpacked with no check (golden data_while_vmap); a
    parameter the user passes is checked as Python unpacks it."""
    def f(p):
        a, b = p
        return a * b
    np.testing.assert_allclose(secant.vmap(f)((X[:, 0, 0], X[:, 0, 1])), X[:, 0, 0] * X[:, 0, 1])
    with pytest.raises(ValueError, match="too many values to unpack"):
        secant.vmap(f)((X[:, 0, 0], X[:, 0, 1], X[:, 1, 0]))


def test_a_row_item_written_in_an_expression_in_a_staged_loop(x64):
    """star15's in_a_loop (`[[x * k, w], [x]]` in a loop's body, read inside an expression):
    jit stages the loop, whose nested def's text vmap refused ('a shape query of e ... in a
    comprehension written inside an expression'); the def is batched on its own when lifted."""
    from test_star15_lists import W, X as XS, in_a_loop
    want = np.stack([grad_fd(in_a_loop, x, W) for x in XS[0]])
    for t in (secant.vmap, lambda g, **kw: secant.jit(secant.vmap(g, **kw))):
        np.testing.assert_allclose(t(in_a_loop, in_axes=(0, None))(XS[0], W),
                                   [in_a_loop(x, W) for x in XS[0]], rtol=1e-12)
        np.testing.assert_allclose(t(secant.grad(in_a_loop), in_axes=(0, None))(XS[0], W), want,
                                   rtol=1e-6, atol=1e-6)
