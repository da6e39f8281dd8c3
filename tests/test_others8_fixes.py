"""Issue 15, eighth round of code written by others: one regression test per fix the batch
tests/test_others8_*.py needed (each fails without its fix)."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jit, vmap


def quad(f, lo, hi, *args):
    x = jnp.linspace(lo, hi, 5)
    return jnp.sum(f(x, *args))


def integral(a, b):
    return quad(lambda x, a: jnp.exp(-a * x), 0.0, b, a)      # the lambda's own `a`


def test_a_lambdas_parameter_is_not_the_outer_name_it_shadows(x64):
    """(was: 'secant cannot differentiate through a Lambda expression', the lambda's parameter
    `a` taken for the differentiated `a` of the enclosing function)"""
    x = np.linspace(0.0, 2.0, 5)
    np.testing.assert_allclose(grad(integral)(1.3, 2.0), np.sum(-x * np.exp(-1.3 * x)), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(integral))(1.3, 2.0), np.sum(-x * np.exp(-1.3 * x)), rtol=1e-12)
    np.testing.assert_allclose(vmap(integral)(jnp.asarray([1.0, 2.0]), jnp.asarray([2.0, 2.0])),
                               [integral(1.0, 2.0), integral(2.0, 2.0)], rtol=1e-12)


def layers(x, depth=2):
    basis = [x, 2 * x, 3 * x]
    for _ in range(depth):
        new = []                    # a new list each iteration, appended to, then handed on
        for i in range(len(basis) - 1):
            new.append(x * basis[i] + basis[i + 1])
        basis = new
    return basis[0]


def test_a_list_rebuilt_each_iteration_and_handed_on(x64):
    """(was: 'new.append(...) receives the differentiated value basis, but its result is
    dropped', the alias `basis = new` taken to see later appends)"""
    # basis after one pass: [x^2 + 2x, 2x^2 + 3x]; after two: x (x^2 + 2x) + 2x^2 + 3x
    x = 0.7
    np.testing.assert_allclose(layers(x), x ** 3 + 4 * x ** 2 + 3 * x, rtol=1e-12)
    np.testing.assert_allclose(grad(layers)(x), 3 * x ** 2 + 8 * x + 3, rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(layers))(jnp.asarray([0.7, -1.0])), [3 * 0.49 + 5.6 + 3, 3 - 8 + 3],
                               rtol=1e-12)


def complex_diagonal(t):
    d = jnp.diag(jnp.stack([jnp.exp(-0.5j * t), jnp.exp(0.5j * t)]))
    return jnp.sum(jnp.real(d) * jnp.array([[1.0, 3.0], [2.0, 4.0]]))


def test_second_derivative_of_a_complex_diag_under_jit(x64):
    """(was: 'secant does not know the derivative of snp.eye (in secant's ...v_bar_if_false)':
    jit's staged form of diag's derivative made its `if` a cond whose operands included the
    shape-derived n)"""
    want = -0.25 * np.cos(0.5 * 0.3) * 5.0          # d2/dt2 of 5 cos(t/2)
    slope = lambda t: grad(complex_diagonal)(t)         # (check_grad's form of it)
    np.testing.assert_allclose(grad(slope)(0.3), want, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(slope))(0.3), want, rtol=1e-12)


def per_graph_sums(values, n_node):
    idx = jnp.repeat(jnp.arange(n_node.shape[0]), n_node, total_repeat_length=values.shape[0])
    return jnp.zeros(n_node.shape[0]).at[idx].add(values)


def test_repeat_with_counts_known_only_when_it_runs(x64):
    """jraph's readout under jit: repeats traced, total_repeat_length static (was:
    ConcretizationError 'repeat needs static repeats')."""
    values = jnp.asarray([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(jit(per_graph_sums)(values, jnp.asarray([2, 3])), [3.0, 12.0])
    np.testing.assert_allclose(jit(per_graph_sums)(values, jnp.asarray([4, 1])), [10.0, 5.0])
    g = jit(grad(lambda v, n: jnp.sum(per_graph_sums(v, n) * jnp.asarray([1.0, 10.0]))))(
        values, jnp.asarray([1, 4]))
    np.testing.assert_allclose(g, [1.0, 10.0, 10.0, 10.0, 10.0])
    # as JAX: places beyond sum(repeats) take the last element; counts past the total are cut
    np.testing.assert_array_equal(jnp.repeat(jnp.asarray([7, 8]), jnp.asarray([1, 1]), total_repeat_length=4),
                                  [7, 8, 8, 8])
    np.testing.assert_array_equal(jit(lambda r: jnp.repeat(jnp.asarray([7, 8]), r, total_repeat_length=2))(
        jnp.asarray([3, 1])), [7, 7])
