"""Sample calls of every helper generated derivative and batched code calls (ad/helpers.py,
ad/jvp_helpers.py, ad/rule_helpers.py, batching/helpers.py `by_name()` tables), for the walk in
tests/test_composition_orders.py: each helper transformed by grad (vjp), jvp and vmap, checked
numerically. A case: (call source over the differentiated parameters, {parameter: value}).
Values are float64 arrays away from ties and kinks; statics are literals in the call."""
import numpy as np

from secant import tree_util

_rng = np.random.default_rng(7)


def r(*shape):
    return _rng.uniform(0.5, 1.5, size=shape)


def distinct(*shape):
    n = int(np.prod(shape))
    return (np.arange(1, n + 1) * 0.37 % 1.9 + 0.2 + 0.001 * np.arange(n)).reshape(shape)


A3 = distinct(3)
A23 = distinct(2, 3)
WELL3 = distinct(3, 3) - 1 + 3 * np.eye(3)          # far from singular, distinct pivots
SPD3 = WELL3 @ WELL3.T

CASES = {
    # ad/helpers.py
    "unbroadcast": ("unbroadcast(t, x)", {"t": r(2, 3), "x": r(1, 3)}),
    "unreduce": ("unreduce(t, a, axis=1)", {"t": r(2), "a": r(2, 3)}),
    "mean_grad": ("mean_grad(t, a, axis=0)", {"t": r(3), "a": r(2, 3)}),
    # (a reduction's rule reading an elementwise op's shape from its operands' shapes: t
    # broadcast over the shape of x * y (2, 3) summed over its last axis, then over (2, 3))
    "unreduce_to": ("unreduce_to(mean_grad_to(t, shape_of(x, y, axis=-1)), shape_of(x, y), "
                    "axis=-1) * y", {"t": r(), "x": r(2, 1), "y": r(3)}),
    "mean_grad_to": ("mean_grad_to(t, shape_of(x, y), axis=0) * x", {"t": r(3), "x": r(2, 1),
                                                                      "y": r(3)}),
    "shape_of": ("snp.broadcast_to(t, shape_of(x, y, axis=1, keepdims=True)) * x",
                 {"t": r(2, 1), "x": r(2, 1), "y": r(3)}),
    "broadcast_shape": ("snp.broadcast_to(t, broadcast_shape(snp.shape(x), snp.shape(y), "
                        "axis=1)) * snp.sum(x, axis=1)", {"t": r(2), "x": r(2, 1), "y": r(3)}),
    "grad_seed_like_of_two": ("grad_seed_like(x, y) * x", {"x": r(3), "y": r(3)}),
    "extremum_grad": ("extremum_grad(t, a, snp.max(a, axis=1), axis=1)", {"t": r(2), "a": A23}),
    "prod_grad": ("prod_grad(t, a, snp.prod(a, axis=1), axis=1)", {"t": r(2), "a": r(2, 3)}),
    "var_grad": ("var_grad(t, a, axis=1)", {"t": r(2), "a": r(2, 3)}),
    "std_grad": ("std_grad(t, a, snp.std(a, axis=1), axis=1)", {"t": r(2), "a": A23}),
    "max_share": ("max_share(x, y) * x", {"x": A3, "y": A3 + np.array([0.1, -0.1, 0.2])}),
    "hypot_share": ("hypot_share(x, snp.hypot(x, y)) * y",
                    {"x": A3, "y": A3 + np.array([0.1, -0.1, 0.2])}),
    "abs_sign": ("abs_sign(x - 1.0) * x", {"x": A3}),
    "power_scale": ("power_scale(x, 3) + power_scale(x, 2.5) * x", {"x": A3}),
    "power_log": ("power_log(x) * x", {"x": A3}),
    "min_share": ("min_share(x, y) * x", {"x": A3, "y": A3 + np.array([0.1, -0.1, 0.2])}),
    "clip_mask": ("clip_mask(a, 0.6, 1.2) * a", {"a": A3}),
    "matmul_grad_x": ("matmul_grad_x(t, x, y)", {"t": r(2, 4), "x": r(2, 3), "y": r(3, 4)}),
    "matmul_grad_y": ("matmul_grad_y(t, x, y)", {"t": r(2, 4), "x": r(2, 3), "y": r(3, 4)}),
    # (x @ k.T, the transpose not kept: k of shape (4, 3))
    "matmul_grad_x_of_t": ("matmul_grad_x_of_t(t, x, k)", {"t": r(2, 4), "x": r(2, 3),
                                                           "k": r(4, 3)}),
    "matmul_grad_t_y": ("matmul_grad_t_y(t, x, k)", {"t": r(2, 4), "x": r(2, 3), "k": r(4, 3)}),
    "dot_grad_a": ("dot_grad_a(t, a, b)", {"t": r(2, 4), "a": r(2, 3), "b": r(3, 4)}),
    "dot_grad_b": ("dot_grad_b(t, a, b)", {"t": r(2, 4), "a": r(2, 3), "b": r(3, 4)}),
    "reverse_cumsum": ("reverse_cumsum(t, axis=1)", {"t": r(2, 3)}),
    "untranspose": ("untranspose(t, (1, 0))", {"t": r(2, 3)}),
    "unconcatenate": ("unconcatenate(t, [snp.zeros(2), snp.zeros(3)])", {"t": r(5)}),
    "unstack": ("unstack(t)", {"t": r(2, 3)}),
    "grad_of_fields": ("grad_of_fields({'a': x, 'b': y}, {'a': t})", {"t": r(3), "x": r(3),
                                                                     "y": r(2)}),
    "object_of": ("object_of(WalkPair, {'a': t * x, 'b': snp.sin(x)}).b * t",
                  {"t": r(3), "x": r(3)}),       # (WalkPair: a plain class, the walk's module)
    "fields_of": ("fields_of({'a': t, 'b': x}, ('b', 'a'))", {"t": r(3), "x": r(2)}),
    "fields_at": ("fields_at({'a': t, 'b': x}, {'b': y, 'a': t})", {"t": r(3), "x": r(2),
                                                                   "y": r(2)}),
    "add_grads": ("add_grads([t, x], [x, t])", {"t": r(3), "x": r(3)}),
    "grads_as": ("grads_as([t, t * x], [x, x])[1] * x",
                 {"t": r(3), "x": r(3)}),
    "add_at": ("add_at(t, 1, x)", {"t": r(3, 2), "x": r(2)}),
    # (a reverse loop's row cotangents added after it: 7 clamped to 2, 5 dropped)
    "add_rows": ("add_rows(t, [x, y * x, y], [2, 7, 0], mode='clip') "
                 "+ add_rows(t, [x, y], [0, 5])", {"t": r(3, 2), "x": r(2), "y": r(2)}),
    # (a list's rows added one by one)
    "add_rows_of_a_list": ("add_rows([t, x, y], [x, y * x, t], range(2, -1, -1))[1] * x",
                           {"t": r(2), "x": r(2), "y": r(2)}),
    # (a reverse loop over its range's chunks: 600 rows in 19, of 32 rows but the last)
    "row_chunks": (("add_rows(t, [x, y], row_chunks(range(2, 0, -1))[0]) "
                    "* len(row_chunks(range(600))) + t * row_chunks(range(600))[2][-1]"),
                   {"t": r(3, 2), "x": r(2), "y": r(2)}),
    # (the rows a reverse loop's `out.at[i].set(v)` wrote, zeroed after it)
    "zero_rows": ("zero_rows(t * x, range(2)) + zero_rows(t, range(0))", {"t": r(3, 2), "x": r(2)}),
    "add_at_grad": ("add_at_grad(t, 1, x) + add_at_grad([t, x], 0, t)[0]",
                    {"t": r(3, 2), "x": r(1)}),
    "kind_of": ("kind_of(t)([t * x, x])", {"t": r(3), "x": r(3)}),
    "split_at": ("split_at([t, x, y], 1)", {"t": r(3), "x": r(3), "y": r(2)}),
    "unmerge": ("unmerge({'a': t, 'b': x}, {'a': y, 'b': t}, ['b'])", {"t": r(3), "x": r(3),
                                                                      "y": r(3)}),
    "unmerge_grad": ("unmerge_grad({'a': t, 'b': x}, {'a': y, 'b': t, 'c': x}, {'a': t, 'b': y}, "
                     "['b'])", {"t": r(3), "x": r(3), "y": r(3)}),
    "pick": ("pick({'a': t, 'b': x}, {'b': y})", {"t": r(3), "x": r(2), "y": r(2)}),
    "unstack_as": ("unstack_as(t, (x, y))", {"t": r(2, 3), "x": r(3), "y": r(3)}),
    "add_n_grad": ("add_n_grad(t, [x, y])", {"t": r(2, 3), "x": r(2, 3), "y": r(1, 3)}),
    "grad_seed": ("grad_seed(x) * x", {"x": r()}),
    "grad_seed_like": ("grad_seed_like(x) * x", {"x": r(3)}),
    # (an output scaled by k: k a scalar, its shape checked; vmap over k reads each example's)
    "grad_seed_scaled": ("grad_seed_scaled(x, k) * x * k", {"x": r(3), "k": r()}),
    "real_grad": ("real_grad(t, x) * x", {"t": r(3), "x": r(3)}),
    "cast_grad": ("cast_grad(t, x, snp.float64) * x", {"t": r(3), "x": r(3)}),
    "imag_grad": ("imag_grad(t, x) + t * x", {"t": r(3), "x": r(3)}),
    # ad/custom_checks.py (a custom rule's result checked: the identity on valid results)
    "custom_vjp_cotangents": ("custom_vjp_cotangents((t * x, y), (x, y), snp.sin)",
                              {"t": r(3), "x": r(3), "y": r(2)}),
    "custom_vjp_fwd_output": ("custom_vjp_fwd_output((t * x, y), t, snp.sin)",
                              {"t": r(3), "x": r(3), "y": r(2)}),
    "custom_vjp_fwd_pair": ("custom_vjp_fwd_pair((t * x, y), snp.sin)",
                            {"t": r(3), "x": r(3), "y": r(2)}),
    "body_replayed": ("body_replayed(snp.multiply, t, snp.sin(x), custom=snp.sin)",
                      {"t": r(3), "x": r(3)}),
    "custom_jvp_outputs": ("custom_jvp_outputs((t * x, y * t), snp.sin)",
                           {"t": r(3), "x": r(3), "y": r(3)}),
    "vjp_cotangent": ("vjp_cotangent((t * x, y), output_spec((snp.ones(3), snp.ones(2))))",
                      {"t": r(3), "x": r(3), "y": r(2)}),
    "out_axes_tree": ("out_axes_tree({'p': t * x, 'q': (y, t)}, {'p': 0, 'q': None})['p']",
                      {"t": r(3), "x": r(3), "y": r(2)}),
    # ad/rule_helpers.py
    "trigamma": ("trigamma(x)", {"x": r(3) + 0.5}),
    "integer_pow_scale": ("integer_pow_scale(t, x, 3)", {"t": r(3), "x": r(3)}),
    "clip_share": ("clip_share(a, 0.6, 1.2) * a", {"a": A3}),
    "clip_share_min": ("clip_share_min(a, 0.6, 1.2) * a", {"a": A3}),
    "clip_share_max": ("clip_share_max(a, 0.6, 1.2) * a", {"a": A3}),
    "product_grad": ("product_grad(t, a, axis=1)", {"t": r(2), "a": r(2, 3)}),
    "cumsum_grad": ("cumsum_grad(t, a, axis=1)", {"t": r(2, 3), "a": r(2, 3)}),
    "cumsum_transpose": ("cumsum_transpose(t, axis=1)", {"t": r(2, 3)}),
    "cumprod_grad": ("cumprod_grad(t, a, axis=1)", {"t": r(2, 3), "a": r(2, 3)}),
    "cumextremum_grad": ("cumextremum_grad(t, a, lax.cummax(a, 1), axis=1)",
                         {"t": r(2, 3), "a": A23}),
    "sort_grad": ("sort_grad(t, a)", {"t": r(3), "a": A3}),
    "take_grad": ("take_grad(t, a, np.array([2, 0]), axis=0)", {"t": r(2), "a": r(3)}),
    "take_along_axis_grad": ("take_along_axis_grad(t, a, np.array([[1], [0]]), 1)",
                             {"t": r(2, 1), "a": r(2, 3)}),
    "at_share_operand": ("at_share_operand(a, v, a.at[0].max(v), 0) * a",
                         {"a": A3, "v": r() + 2}),
    "at_share_values": ("at_share_values(a, v, a.at[0].max(v), 0) * v",
                        {"a": A3, "v": r() + 2}),
    "at_mul_others": ("at_mul_others(a, v, index_exp[np.array([0, 2, 0])]) * v",
                      {"a": A3, "v": r(3)}),
    "at_set_won": ("at_set_won(t, index_exp[np.array([0, 2, 0])]) * v", {"t": r(3), "v": r(3)}),
    "unpad": ("unpad(t, a, 1)", {"t": r(5), "a": r(3)}),
    "lax_unpad": ("lax_unpad(t, [(1, 1, 0)])", {"t": r(5)}),
    "where_examples": ("where_examples(np.array([True, False]), a, b)",
                       {"a": r(2, 3), "b": r(2, 3)}),
    "slice_transpose": ("slice_transpose(t, a, [1], [3])", {"t": r(2), "a": r(4)}),
    "unbroadcast_in_dim": ("unbroadcast_in_dim(t, a, (1,))", {"t": r(2, 3), "a": r(3)}),
    "lax_reshape_grad": ("lax_reshape_grad(t, a)", {"t": r(6), "a": r(2, 3)}),
    "dot_general_grad_lhs": ("dot_general_grad_lhs(t, x, y, (((1,), (0,)), ((), ())))",
                             {"t": r(2, 4), "x": r(2, 3), "y": r(3, 4)}),
    "dot_general_grad_rhs": ("dot_general_grad_rhs(t, x, y, (((1,), (0,)), ((), ())))",
                             {"t": r(2, 4), "x": r(2, 3), "y": r(3, 4)}),
    "tensordot_grad_a": ("tensordot_grad_a(t, a, b, 1)", {"t": r(2, 4), "a": r(2, 3),
                                                          "b": r(3, 4)}),
    "tensordot_grad_b": ("tensordot_grad_b(t, a, b, 1)", {"t": r(2, 4), "a": r(2, 3),
                                                          "b": r(3, 4)}),
    "zeros_like_tree": ("zeros_like_tree((t, x)) ", {"t": r(3), "x": r(2)}),
    "zeros_batched": ("zeros_batched((t, x), 2, False)[0] + t", {"t": r(3), "x": r(2)}),
    # (a loop's carry cotangent in the dtypes it entered with: the int leaf cast, no derivative)
    "cast_like": ("cast_like((t * x, x), (t, 0))[0]", {"t": r(3), "x": r(3)}),
    # secant.tree_util's functions (ops with rules: transformer/ops.py)
    "tree_leaves": ("tree_leaves({'a': t, 'b': x})[1] * tree_leaves((t, x))[0]",
                    {"t": r(3), "x": r(3)}),
    "tree_unflatten": ("tree_unflatten(tree_structure((t, x)), [x, t])[0]",
                       {"t": r(3), "x": r(3)}),
    "tree_structure": ("t * tree_structure((t, [x, x])).num_leaves", {"t": r(3), "x": r(3)}),
    "tree_leaves_as": ("tree_leaves_as((t, x), tree_structure((x, t)))[1] * t",
                       {"t": r(3), "x": r(3)}),
    "inverse_permutation": ("t.transpose(inverse_permutation((1, 0)))", {"t": r(2, 3)}),
    # ad/jvp_helpers.py
    "cast_jvp": ("cast_jvp(t, snp.float64) * x + cast_jvp(t, snp.int32)", {"t": r(3), "x": r(3)}),
    "broadcast_like": ("broadcast_like(t, x * t) * x", {"t": r(3), "x": r(2, 3)}),
    "float0_tangents": ("float0_tangents(((x, snp.sum(x) > 0), (t, snp.zeros((), bool))))[1][0]"
                        " * x", {"t": r(3), "x": r(3)}),
    "extremum_jvp": ("extremum_jvp(t, a, snp.max(a, axis=1), axis=1)", {"t": r(2, 3), "a": A23}),
    "prod_jvp": ("prod_jvp(t, a, axis=1)", {"t": r(2, 3), "a": r(2, 3)}),
    "var_jvp": ("var_jvp(t, a, axis=1)", {"t": r(2, 3), "a": r(2, 3)}),
    "cumprod_jvp": ("cumprod_jvp(t, a, axis=1)", {"t": r(2, 3), "a": r(2, 3)}),
    "cumextremum_jvp": ("cumextremum_jvp(t, a, lax.cummax(a, 1), axis=1)",
                        {"t": r(2, 3), "a": A23}),
    "sort_jvp": ("sort_jvp(t, a)", {"t": r(3), "a": A3}),
    "transpose_pairs": ("transpose_pairs(((t, x), (x, t)))", {"t": r(3), "x": r(3)}),
    # batching/helpers.py (batched values: batch axis 0)
    "broadcast_batch": ("broadcast_batch(x, 2)", {"x": r(3)}),
    "align": ("align(x, y) * y", {"x": r(2, 3), "y": r(4, 3)}),
    "align_batched": ("align_batched(x, y) * y", {"x": r(2), "y": r(2, 3)}),
    "flat_examples": ("flat_examples(x)", {"x": r(2, 3, 2)}),
    "flat_examples_if": ("flat_examples_if(x, None) + flat_examples_if(x, 1)[:, :1].sum()",
                         {"x": r(2, 3, 2)}),
    "transpose_batched": ("transpose_batched(x)", {"x": r(2, 3, 4)}),
    "squeeze_batched": ("squeeze_batched(x, 0)", {"x": r(2, 1, 3)}),
    "broadcast_batched": ("broadcast_batched(x, (4, 3))", {"x": r(2, 3)}),
    "matmul_batched": ("matmul_batched(x, y)", {"x": r(2, 3, 4), "y": r(2, 4)}),
    "dot_batched": ("dot_batched(a, b)", {"a": r(2, 3), "b": r(2, 3)}),
    "outer_batched": ("outer_batched(a, b)", {"a": r(2, 3), "b": r(2, 2)}),
    "tensordot_batched": ("tensordot_batched(a, b, 1)", {"a": r(2, 3), "b": r(2, 3, 2)}),
    "dot_general_batched": ("dot_general_batched(x, y, (((1,), (0,)), ((), ())))",
                            {"x": r(2, 2, 3), "y": r(2, 3, 4)}),
    "take_per_example": ("take_per_example(a, np.array([1, 0]))", {"a": r(2, 3)}),
    "parts_index": ("a[parts_index((slice(None), np.array([[2, 0], [1, 1]])), (False, True), "
                    "np.shape(a))]", {"a": r(2, 4, 3)}),
    "update_parts_per_example": ("update_parts_per_example(a, (slice(1, None), np.array([2, 0])),"
                                 " (False, True), v, 'add', 2)", {"a": r(2, 3, 3), "v": r(2, 2)}),
    "take_per_example_at": ("take_per_example_at(a, np.array([[1, -1], [0, 2]]), 1)",
                            {"a": r(2, 3, 3)}),
    "dynamic_slice_per_example": ("dynamic_slice_per_example(a, (np.array([0, 1]), "
                                  "np.array([2, 5])), (2, 2))", {"a": r(2, 3, 4)}),
    "dynamic_update_slice_per_example": ("dynamic_update_slice_per_example(a, u, "
                                         "(np.array([0, 1]), np.array([2, 0])), 2)",
                                         {"a": r(2, 3, 4), "u": r(2, 2, 2)}),
    "update_batched": ("update_batched(a, 1, v, 'set')", {"a": r(2, 3), "v": r(2)}),
    # (under an enclosing vmap of 2: a and v batched by both, the index by the outer one only)
    "update_batched_outer": ("update_batched_outer(a, np.array([2, 0]), v, 'add', True, None, "
                             "2, True, True, True)", {"a": r(2, 2, 3), "v": r(2, 2)}),
    "select_batched": ("select_batched(np.array([True, False]), x, y)", {"x": r(2, 3),
                                                                         "y": r(2, 3)}),
    "choose_batched": ("choose_batched(np.array([0, 1]), [x, y])", {"x": r(2, 3),
                                                                    "y": r(2, 3)}),
    "batch_second": ("batch_second(x)", {"x": r(2, 3)}),
    "batch_first": ("batch_first(x)", {"x": r(2, 3)}),
    "psum_scatter_batched": ("psum_scatter_batched(x, 1, True)", {"x": r(2, 3, 4)}),
    "batch_axis_to": ("batch_axis_to((x, y), 1)", {"x": r(2, 3), "y": r(2, 4)}),
    "grad_of_fields_batched": ("grad_of_fields_batched((x, y), {0: t}, 2, True)",
                               {"t": r(2, 3), "x": r(2, 3), "y": r(2, 1)}),
    "fields_of_batched": ("fields_of_batched(t, {0: None, 2: None}, 2, True)[1]",
                          {"t": r(2, 3)}),
    "grad_seed_batched": ("grad_seed_batched(x) * x", {"x": r(2)}),
    "grad_seed_like_batched": ("grad_seed_like_batched(x, 2) * x", {"x": r(2)}),
    "grad_seed_scaled_batched": ("grad_seed_scaled_batched(x, k, 2, False) * x * k",
                                 {"x": r(2), "k": r()}),
    "add_at_batched": ("add_at_batched(t, 1, x, 2, True)", {"t": r(2, 3), "x": r(2)}),
    "add_at_grad_batched": ("add_at_grad_batched(t, 1, x, 2, True, False)",
                            {"t": r(2, 3, 4), "x": r(1)}),
    "item_of": ("item_of(x, 1)", {"x": r(2, 3)}),
    "index_examples": ("index_examples(x, index_exp[1:])", {"x": r(2, 3)}),
    "update_per_example": ("update_per_example(x, np.array([[0, 2], [1, 1]]), y, 'add', 2)",
                           {"x": r(2, 3), "y": r(2, 2)}),
    "update_per_example_batched": ("update_per_example_batched(x, np.array([[0, 2], [1, 1]]), "
                                   "y, 'add', 2, True, True, 2, True, False, True)",
                                   {"x": r(2, 2, 3), "y": r(2, 2, 2)}),
    "example_len": ("x * example_len(x)", {"x": r(2, 3)}),
    "batch_size_of": ("x * batch_size_of(x)", {"x": r(2, 3)}),
    # (sized by the first tree holding an array: a function has no batch axis)
    "batch_size_of_first_array": ("x * batch_size_of(snp.tanh, y, x)",
                                  {"x": r(2, 3), "y": r(4, 3)}),
    "example_size": ("x * example_size(x)", {"x": r(2, 3)}),
    "example_shape": ("snp.reshape(x, (2,) + example_shape(x))", {"x": r(2, 3)}),
    "example_ndim": ("x * example_ndim(x)", {"x": r(2, 3)}),
    "batch_shape": ("snp.reshape(x, batch_shape(x, (3,)))", {"x": r(2, 3)}),
    "batch_axis": ("snp.sum(x, axis=batch_axis(0, x))", {"x": r(2, 3)}),
    "batch_flat_axis": ("snp.cumsum(flat_examples_if(x, None), axis=batch_flat_axis(None, x))[:, :3]"
                        " + snp.sum(x, axis=batch_flat_axis(1, x))",
                        {"x": r(2, 3, 2)}),
    "out_batch_axis": ("snp.moveaxis(x, 0, out_batch_axis(1, x))", {"x": r(2, 3)}),
    "batch_new_axis": ("snp.expand_dims(x, axis=batch_new_axis(-1, x))", {"x": r(2, 3)}),
    "batch_index": ("x[batch_index(1)]", {"x": r(2, 3)}),
    "pad_batched": ("snp.pad(x, pad_batched(1, x))", {"x": r(2, 3)}),
    "add_n_batched": ("add_n_batched([x, y])", {"x": r(2, 3), "y": r(2)}),
    "add_n_grad_batched": ("add_n_grad_batched(t, [x, y])", {"t": r(2, 3), "x": r(2, 3),
                                                             "y": r(2, 1)}),
    "stack_examples": ("stack_examples([x, y])", {"x": r(2, 3), "y": r(2, 3)}),
    "unconcatenate_batched": ("unconcatenate_batched(t, [snp.zeros((2, 2)), snp.zeros((2, 3))], "
                              "0, 2, True, True)", {"t": r(2, 5)}),
    # windowed operations (issue 17): lax.conv_general_dilated's transposes and batching
    "conv_grad_lhs": ("conv_grad_lhs(t, x, w, (2,), 'SAME', feature_group_count=2)",
                      {"t": r(1, 4, 3), "x": r(1, 2, 5), "w": r(4, 1, 2)}),
    "conv_grad_rhs": ("conv_grad_rhs(t, x, w, (1,), ((1, 0),), rhs_dilation=(2,))",
                      {"t": r(2, 3, 4), "x": r(2, 2, 5), "w": r(3, 2, 2)}),
    "conv_batched": ("conv_batched(x, w, True, True, (1,), 'VALID')",
                     {"x": r(2, 1, 2, 4), "w": r(2, 3, 2, 2)}),
    # ad/fft_rules.py (lax.fft's transpose; IRFFT's is an RFFT, complex: its imaginary part)
    "fft_transpose": ("snp.imag(fft_transpose(t, 'IRFFT', (5,)))", {"t": r(2, 5)}),
    # ad/linalg_rules.py (the linear-algebra ops' derivatives, each around its op)
    "cholesky_jvp": ("cholesky_jvp(t, lax.linalg.cholesky(a))", {"t": r(3, 3), "a": SPD3}),
    "cholesky_grad": ("cholesky_grad(t, lax.linalg.cholesky(a, symmetrize_input=False), False)",
                      {"t": r(3, 3), "a": SPD3}),
    "triangular_solve_jvp_a": ("triangular_solve_jvp_a(t, a, lax.linalg.triangular_solve(a, b, "
                               "True, True), True, True)",
                               {"t": r(3, 3), "a": WELL3, "b": r(3, 2)}),
    "triangular_solve_grad_a": ("triangular_solve_grad_a(t, a, lax.linalg.triangular_solve(a, b, "
                                "False, False, True), False, False, True)",
                                {"t": r(2, 3), "a": WELL3, "b": r(2, 3)}),
    "triangular_solve_grad_b": ("triangular_solve_grad_b(t, a, True, False, True, False, True)",
                                {"t": r(3, 2), "a": WELL3}),
    "lu_jvp": ("lu_jvp(t, a, lax.linalg.lu_factors(a))", {"t": r(3, 3), "a": WELL3}),
    "lu_grad": ("lu_grad(t, a, lax.linalg.lu_factors(a))", {"t": r(3, 3), "a": WELL3}),
    # (AuxPair: a registered class, a float in its aux data; the walk's module imports it)
    # (objects of AuxPair from the arrays by tree_unflatten, as generated code builds them)
    "attribute_dot": ("attribute_dot(tree_unflatten(AUX, [x]), tree_unflatten(AUX, [t]), 's') "
                      "* x + attribute_dot(tree_unflatten(AUX, [x]), "
                      "tree_unflatten(AUX, [t * x]), 'a')", {"t": r(3), "x": r(3)}),
    "static_attribute": ("t * static_attribute(tree_unflatten(AUX, [x]), 's') + x",
                         {"t": r(3), "x": r(3)}),
    "static_item": ("t * static_item({'n': 2, 'm': 'a'}, 'n') + x", {"t": r(3), "x": r(3)}),
    "static_truth": ("t * static_truth(True) + x", {"t": r(3), "x": r(3)}),
    "example_scalar": ("t * example_scalar(2.0) + x", {"t": r(3), "x": r(3)}),   # (type tests)
}


@tree_util.register_pytree_node_class
class AuxPair:
    """`a` a leaf, `s` a number in the aux data (ad/helpers.py attribute_dot's case)."""
    def __init__(self, a, s):
        self.a, self.s = a, s

    def tree_flatten(self):
        return (self.a,), self.s

    @classmethod
    def tree_unflatten(cls, s, children):
        return cls(children[0], s)

# helpers that take functions (a lax loop's reverse pass): what they do is covered by the loop
# tests; differentiating a derivative through them again is refused with a message naming the
# compositions that work (secant.hessian, jacfwd(jacfwd(f)), grad of jvp)
TAKE_FUNCTIONS = {"fori_loop_with_carries", "fori_loop_vjp", "scan_with_carries", "scan_vjp",
                  "map_vjp", "while_loop_with_carries", "while_loop_vjp", "random_batched",
                  "custom_vmap_outputs"}
# not functions of arrays
NOT_ARRAY_FUNCTIONS = {"index_exp", "any_example", "all_gather_batched",
                       "unset_in_branch", "unbound_before_loop", "check_bound", "output_spec",
                       "custom_jvp_rule_checked",        # (runs a rule for its checks: no value)
                       "for_each_example",      # (calls debug.print per example: no value)
                       "read_back_mode", "pick_mode",      # (a mode's name from a mode's name)
                       "count_items",       # (a container's item count, an int)
                       "trip_count",        # (a while loop's step count, an int or None)
                       "check_unpacked",    # (checks an unpacking's count: no value)
                       "check_index",       # (checks an index's dtype: no value)
                       "check_integer_power",   # (checks a dead power's base dtype: no value)
                       "example_spec"}      # (eval_shape's per-example ShapeDtypeStructs)


AUX = tree_util.tree_structure(AuxPair(0.0, 3.0))
