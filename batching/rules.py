"""Batching rules, one per op of transformer/ops.py, written as templates (the batching twin of
ad/jvp_rules.py).

Every batched value carries its batch axis at axis 0; unbatched values stay as they are. A rule
says how an op is written when some of its operands are batched. In a template:
  {x}        the operand or static argument `x` as the user wrote it (every parameter of the
             op by its name; left-out parameters take their defaults),
  {x_batched} True/False: whether operand x is batched (for helpers handling both),
  {size}     the batch size (a variable of the generated function),
  {static}   the keyword arguments the user gave that the template does not name.

ELEMENTWISE ops are written as the user wrote them; a batched operand that meets another
operand which is not a Python number is aligned first (`align(x, w) * w`), since an example may
have fewer axes than the other operand (a batched scalar times a vector).
AXIS[op] names the op's axis parameter(s) and what its `None` means ("reduce": every axis of an
example, "flatten": the flattened example, "insert": never None); the op is written as the user
wrote it with each axis moved past the batch axis (a literal `axis=0` becomes `axis=1`;
anything else, a negative literal included, goes through `batch_axis`, which checks it against
the example's rank; `batch_new_axis` for the NEW_AXIS ops, whose axis counts in the result).
RULES[op][param] is the template when `param` is the one batched operand; RULES[op]["*"] covers
any combination. UNBATCHED ops give a result with no batch axis (`snp.zeros_like(x)` is zeros
shaped like one example). SEQUENCE ops take a list: its unbatched items are broadcast.
"""

ELEMENTWISE = {
    # one array operand
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "cbrt", "square", "reciprocal", "absolute", "logistic", "rsqrt", "erf", "erf_inv", "lgamma",
    "real", "imag", "conj",
    "digamma", "negative", "positive", "identity", "sign", "floor", "ceil", "rint", "round", "trunc",
    "isnan", "isfinite", "isinf", "signbit", "stop_gradient", "invert", "astype",
    "optimization_barrier",
    "convert_element_type", "integer_pow",
    # several operands, broadcast per example
    "add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum", "arctan2",
    "hypot", "logaddexp", "floor_divide", "remainder", "rem", "lax_div", "where", "select",
    "clip", "clamp", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor",
}

# secant.numpy's existing functions (issue 17)
ELEMENTWISE |= {"left_shift", "right_shift", "nextafter"}
# secant.lax's bit operations and reduce_precision (transformer/ops.py LAX_BIT_OPS)
ELEMENTWISE |= {"population_count", "clz", "shift_left", "shift_right_logical",
                "shift_right_arithmetic", "bitcast_convert_type", "reduce_precision",
                "lax_round"}

# static parameters of elementwise ops that are arrays too (a condition): they take part in the
# alignment when they are not batched
ARRAY_STATICS = {"where": ("condition",), "select": ("pred",)}

AXIS = {
    **{n: (("axis",), "reduce") for n in ("sum", "mean", "max", "min", "prod", "var", "std",
                                          "flip", "any", "all")},
    **{n: (("axis",), "flatten") for n in ("argmax", "argmin", "cumsum", "cumprod", "sort",
                                           "argsort", "concatenate")},
    "expand_dims": (("axis",), "insert"),
    "stack": (("axis",), "insert"),
    "split": (("axis",), "insert"),
    "array_split": (("axis",), "insert"),
    "swapaxes": (("axis1", "axis2"), "insert"),
    "moveaxis": (("source", "destination"), "insert"),
    **{n: (("axes",), "reduce") for n in ("reduce_sum", "reduce_max", "reduce_min",
                                          "reduce_prod")},
    **{n: (("axis",), "insert") for n in ("lax_cumsum", "lax_cumprod", "lax_cummax",
                                          "lax_cummin")},
    "rev": (("dimensions",), "reduce"),
    "lax_squeeze": (("dimensions",), "reduce"),
    "lax_expand_dims": (("dimensions",), "insert"),
    "lax_concatenate": (("dimension",), "insert"),
    "take": (("axis",), "flatten"),
}

NEW_AXIS = {"expand_dims", "stack", "lax_expand_dims"}      # axis counts in the result

RULES = {
    "add_grads": {"*": "add_grads({x}, {y})",
                  "x": "add_grads({x}, broadcast_batch({y}, {size}))",
                  "y": "add_grads(broadcast_batch({x}, {size}), {y})"},
    "reshape": {"a": "{a}.reshape(batch_shape({a}, {newshape}))"},
    "ravel": {"a": "flat_examples({a})"},
    "transpose": {"a": "transpose_batched({a}, {axes})"},
    "squeeze": {"a": "squeeze_batched({a}, {axis})"},
    "broadcast_to": {"array": "broadcast_batched({array}, {shape})"},
    "fliplr": {"m": "snp.flip({m}, 2)"},
    "vsplit": {"ary": "snp.split({ary}, {indices_or_sections}, axis=1)"},
    "hsplit": {"ary": "snp.split({ary}, {indices_or_sections}, axis=1 + int(snp.ndim({ary}) > 2))"},
    "dsplit": {"ary": "snp.split({ary}, {indices_or_sections}, axis=3)"},
    "flipud": {"m": "snp.flip({m}, 1)"},
    "matmul": {"*": "matmul_batched({x}, {y}, {x_batched}, {y_batched})"},
    "dot": {"*": "dot_batched({a}, {b}, {a_batched}, {b_batched}{lax})"},    # {lax}: lax.dot
    "outer": {"*": "outer_batched({a}, {b}, {a_batched}, {b_batched})"},
    "tensordot": {"*": "tensordot_batched({a}, {b}, {axes}, {a_batched}, {b_batched})"},
    "dot_general": {"*": "dot_general_batched({lhs}, {rhs}, {dimension_numbers}, "
                         "{lhs_batched}, {rhs_batched}{static})"},
    "getitem": {"a": "{a}[{batched_idx}]",
                "idx": "{a}[{idx}]",
                "*": "take_per_example({a}, {idx})"},
    "take_along_axis": {
        "arr": "snp.take_along_axis({arr}, broadcast_batch({indices}, {size}), "
               "batch_axis({axis}, {arr}){static})",
        "indices": "snp.take_along_axis(broadcast_batch({arr}, {size}), {indices}, "
                   "batch_axis({axis}, {indices}){static})",
        "*": "snp.take_along_axis({arr}, {indices}, batch_axis({axis}, {arr}){static})"},
    "pad": {"array": "snp.pad({array}, pad_batched({pad_width}, {array}), {mode}{static})"},
    "lax_pad": {"operand": "lax.pad({operand}, {padding_value}, "
                           "((0, 0, 0),) + tuple({padding_config}))"},
    "lax_slice": {"operand": "lax.slice({operand}, (0,) + tuple({start_indices}), "
                             "(len({operand}),) + tuple({limit_indices}){strides})"},
    "dynamic_slice": {"operand": "lax.dynamic_slice({operand}, (0,) + tuple({start_indices}), "
                                 "(len({operand}),) + tuple({slice_sizes}))"},
    "dynamic_update_slice": {
        "operand": "lax.dynamic_update_slice({operand}, broadcast_batch({update}, {size}), "
                   "(0,) + tuple({start_indices}))",
        "update": "lax.dynamic_update_slice(broadcast_batch({operand}, {size}), {update}, "
                  "(0,) + tuple({start_indices}))",
        "*": "lax.dynamic_update_slice({operand}, {update}, (0,) + tuple({start_indices}))"},
    "grad_of_fields": {"*": "grad_of_fields_batched({tree}, {fields}, {size}, {tree_batched})"},
    "fields_of": {"tree": "fields_of_batched({tree}, {keys}, {size}, True)"},
    "split_at": {"x": "split_at({x}, {n})"},       # every leaf batched: as written
    "broadcast_in_dim": {"operand": "lax.broadcast_in_dim({operand}, (len({operand}),) + "
                                    "tuple({shape}), (0,) + tuple(d + 1 for d in "
                                    "{broadcast_dimensions}))"},
    "lax_reshape": {"operand": "lax.reshape({operand}, (len({operand}),) + tuple({new_sizes}))"},
    "lax_transpose": {"operand": "lax.transpose({operand}, (0,) + tuple(p + 1 for p in "
                                 "{permutation}))"},
    # (.at[...]'s keywords as the user wrote them: {static}, {get_kw}; {helper_kw}: mode=,
    # fill_value=; ad/index_modes.py)
    "at_get": {"a": "{a}.at[{batched_idx}].get({get_kw})",
               "idx": "{a}.at[{idx}].get({get_kw})",
               "*": "take_per_example({a}, {idx}{helper_kw})"},
    **{name: {"a": "{a}.at[{batched_idx}]." + method + "({values}{static})",
              "values": "update_batched(broadcast_batch({a}, {size}), index_exp[{idx}], "
                        "{values}, '" + method + "'{helper_kw})",
              "*": "update_batched({a}, index_exp[{idx}], {values}, '" + method + "'{helper_kw})"}
       for name, method in (("at_set", "set"), ("at_add", "add"), ("at_mul", "mul"),
                            ("at_min", "min"), ("at_max", "max"))},
    # --- windowed operations (issue 17; batching/conv_helpers.py) ---
    "conv_general_dilated": {"*": "conv_batched({lhs}, {rhs}, {lhs_batched}, {rhs_batched}, "
                                  "{window_strides}, {padding}{static})"},
    # linear algebra: the batch axis is one more leading (batch) axis of the matrices
    "cholesky": {"x": "lax.linalg.cholesky({x}{static})"},
    "triangular_solve": {
        "a": "lax.linalg.triangular_solve({a}, broadcast_batch({b}, {size}){static})",
        "b": "lax.linalg.triangular_solve(broadcast_batch({a}, {size}), {b}{static})",
        "*": "lax.linalg.triangular_solve({a}, {b}{static})"},
    "lu_factors": {"x": "lax.linalg.lu_factors({x})"},
    "lu_pivots": {"x": "lax.linalg.lu_pivots({x})"},
    "lu_pivots_to_permutation": {
        "pivots": "lax.linalg.lu_pivots_to_permutation({pivots}{static})"},
}

# results with no batch axis: what one example gives is the same for every example
UNBATCHED = {
    # (shape and dtype: one example's, unless the call gives them; vectorize.py fills them in)
    "zeros_like": "snp.zeros({shape}, {dtype})",
    "ones_like": "snp.ones({shape}, {dtype})",
    "empty_like": "snp.zeros({shape}, {dtype})",
    "tree_structure": "tree_structure({tree}{static})",     # every leaf batched: one structure
}

SEQUENCE = {"concatenate", "stack", "lax_concatenate", "add_n"}

# collectives over the vmapped axis (vmap's axis_name): the reduction over the batch axis; the
# result is the same for every example, so it is unbatched
COLLECTIVES = {
    "psum": {"x": "snp.sum({x}, axis=0)", "unbatched": "{x} * {size}"},
    "pmean": {"x": "snp.mean({x}, axis=0)", "unbatched": "{x}"},
    "pmax": {"x": "snp.max({x}, axis=0)", "unbatched": "{x}"},
    "pmin": {"x": "snp.min({x}, axis=0)", "unbatched": "{x}"},
    "all_gather": {"x": "all_gather_batched({x}, {axis}, {tiled})",
                   "unbatched": "all_gather_batched(broadcast_batch({x}, {size}), {axis}, "
                                "{tiled})"},
    "axis_index": {"unbatched": "snp.arange({size})"},
    "axis_size": {"unbatched": "{size}"},       # (a Python int, as JAX's)
    "psum_scatter": {"x": "psum_scatter_batched({x}, {scatter_dimension}, {tiled})",
                     "unbatched": "psum_scatter_batched(broadcast_batch({x}, {size}), "
                                  "{scatter_dimension}, {tiled})"},
}

# a secant.random call with a batched key or argument (batching/helpers.py random_batched):
# the call as the user wrote it, through the helper; `batched=` names the batched arguments when
# they are more than the key. A call of random_batched itself (nested vmap) stays as it is when
# only its key is batched again: it hashes keys of any batch shape at once.
RANDOM = "random_batched({sampler}, {args}{batched})"

# structural and composite ops the builder handles itself (batching/vectorize.py)
SPECIAL = {"field", "attribute", "getattr", "call", "cond", "switch", "fori_loop", "scan", "map",
           "while_loop", "pack", "concat_seq", "dict_merge", "seq_as", "tree_leaves",
           "tree_unflatten", "tree_leaves_as", "einsum", "stop_gradient_tree"}

# ops only the derivative transforms read (their helpers' calls in a derivative differentiated
# again); under vmap these calls stay helper calls, written by HELPERS below
DERIVATIVE_ONLY = {"unmerge", "unmerge_grad", "pick", "grad_of_fields_batched", "fields_of_batched",
                   "add_at", "add_at_grad"}

# ops with no batching rule for some operand: (operands, why), raised as a clear error
NO_RULE = {
    "pad": (("constant_values",), "a batched constant_values of snp.pad"),
    "lax_pad": (("padding_value",), "a batched padding_value of lax.pad"),
}

# helpers of generated code that build or read containers (ad/helpers.py, item_of above):
# written by these templates instead of being read as source ({arg0}, {arg1}: the call's
# arguments, batched ones with every leaf batched, left-out ones at their defaults; {arg1_opt}:
# `, <the argument>` where it is given, nothing where it is left out; {arg2_next}:
# an int argument plus one; {size}: the batch size)
HELPERS = {
    "grad_of_fields": "grad_of_fields_batched({arg0}, {arg1_b}, {size}, {arg0_batched})",
    "add_grads": "add_grads({arg0_b}, {arg1_b})",     # (a transpose sums an unbatched one)
    "add_at": "add_at_batched({arg0}, {arg1}, {arg2}, {size}, {arg0_batched}, {arg1_batched}, "
              "{arg2_batched})",
    "add_at_grad": "add_at_grad_batched({arg0}, {arg1}, {arg2}, {size}, {arg0_batched}, "
                   "{arg2_batched})",
    "grads_as": "grads_as({arg0_b}, {arg1})",     # (x's dtypes only; t batched as the result)
    "zeros_like_tree": "zeros_like_tree({arg0})",
    "grad_seed": "grad_seed_batched({arg0})",
    "grad_seed_like": "grad_seed_like_batched({arg0}, {size}{arg1_opt})",
    "grad_seed_scaled": "grad_seed_scaled_batched({arg0}, {arg1}, {size}, {arg1_batched})",
    "item_of": "item_of({arg0}, {arg1}, {arg2_next})",     # one more batch axis in front
    "stack_examples": "stack_examples({arg0}, {arg1_next}, {arg2_next})",
    "index_examples": "index_examples({arg0}, {arg1}, {arg2_next})",
    # a batched index's parts (index_parts) under one more vmap: their outer axis in front
    "parts_index": "parts_index({arg0}, {arg1}, {arg2}, {arg3}, {arg4_next})",
    "batch_index": "batch_index({arg0})",   # (slice(None),) + idx: its items batched, as they are
    "update_batched": "update_batched_outer({arg0}, {arg1}, {arg2}, {arg3}, {arg4}, {arg5}, "
                      "{size}, {arg0_batched}, {arg1_batched}, {arg2_batched})",
    "custom_vmap_outputs": "custom_vmap_outputs({arg0}, {arg1}, {arg2}, {arg3}, {arg4_next})",
    # custom rules' results checked (ad/custom_checks.py): every argument with its batch axis,
    # so that the shapes compared are the whole batch's
    "custom_vjp_cotangents": "custom_vjp_cotangents({arg0_b}, {arg1_b}, {arg2})",
    "custom_vjp_fwd_output": "custom_vjp_fwd_output({arg0_b}, {arg1_b}, {arg2}, {arg3}, "
                             "{arg4_b}, {arg5_next})",     # (f's output type: past the axis)
    "custom_vjp_fwd_pair": "custom_vjp_fwd_pair({arg0_b}, {arg1}, {arg2}, {arg3_b}, "
                           "{arg4_next})",     # (f's output type: past the axis)
    "custom_jvp_outputs": "custom_jvp_outputs({arg0_b}, {arg1})",
    "out_axes_tree": "out_axes_tree({arg0_b}, {arg1})",     # (the structure only)
    "custom_jvp_rule_checked": "custom_jvp_rule_checked({arg0}, {arg1}, {arg2_b}, {arg3_b}, "
                               "{arg4}, {arg5_next}, {arg6} + {arg4_batched})",
    "vjp_cotangent": "vjp_cotangent({arg0_b}, {arg1}, {arg2_next})",     # past the batch axis
    "batch_axis_to": "batch_axis_to({arg0_b}, {arg1}, {arg2_next})",     # an inner vmap's out_axes
    # cotangents of containers (ad/helpers.py): every leaf batched, so as written (the stacked
    # axis one further in)
    "unstack": "unstack({arg0_b}, {arg1_next})",
    "unstack_as": "unstack_as({arg0_b}, {arg1}, {arg2_next}, {arg3_next})",
    "update_per_example": "update_per_example_batched({arg0}, {arg1}, {arg2}, {arg3}, {arg4}, "
                          "{arg5}, {arg6}, {size}, {arg0_batched}, {arg1_batched}, "
                          "{arg2_batched})",      # (a vmap of a vmapped x.at[i])
    "unconcatenate": "unconcatenate_batched({arg0}, {arg1}, {arg2}, {size}, {arg0_batched}, "
                     "{arg1_batched})",
    "add_n_grad": "add_n_grad_batched({arg0}, {arg1}, {arg0_batched}, {arg1_batched}, {size})",
    "split_at": "split_at({arg0}, {arg1})",
    # (the zeros at the replaced keys are x's, at g's: with the batch axis the result has, as
    # every leaf of a batched container does, where x or g is one no vmap batches)
    "unmerge": "unmerge({arg0_b}, {arg1_b}, {arg2})",
    "unmerge_grad": "unmerge_grad({arg0_b}, {arg1_b}, {arg2}, {arg3})",
    "pick": "pick({arg0}, {arg1})",
    "fields_of": "fields_of_batched({arg0}, {arg1}, {size}, {arg0_batched})",
}


# derivative helpers (ad/helpers.py) whose result has the shape of their argument at this
# position: what is derived from both needs no alignment (grad of vmap reads less noisily)
SHAPED_LIKE = {"grad_seed": 0, "unbroadcast": 1, "unreduce": 1, "mean_grad": 1,
               "extremum_grad": 1, "prod_grad": 1, "var_grad": 1, "std_grad": 1,
               "matmul_grad_x": 1, "matmul_grad_y": 2, "dot_grad_a": 1, "dot_grad_b": 2,
               "reverse_cumsum": 0}


def opaque(helpers_by_name):
    """The helper functions HELPERS writes by rule (the normaliser keeps their calls)."""
    return tuple(helpers_by_name[n] for n in HELPERS if n in helpers_by_name)


# --- numpy.linalg, spectral family: the ops take stacks of matrices (leading axes), so a batched
# operand (its batch axis in front) is written as it is
RULES.update({
    **{"linalg_" + n: {"a": f"snp.linalg_spectral.{n}({{a}})"}
       for n in ("eigh_values", "eigh_vectors", "svd_values", "eig_values", "eig_vectors")},
    "linalg_svd_u": {"a": "snp.linalg_spectral.svd_u({a}, {full_matrices})"},
    "linalg_svd_vh": {"a": "snp.linalg_spectral.svd_vh({a}, {full_matrices})"},
    "linalg_qr_q": {"a": "snp.linalg_spectral.qr_q({a}, {mode})"},
    "linalg_qr_r": {"a": "snp.linalg_spectral.qr_r({a}, {mode})"},
    "linalg_pinv": {"a": "snp.linalg_spectral.pinv({a}, {rtol}, {hermitian}, rcond={rcond})"},
})
# --- complex numbers and the Fourier transform (issue 17: complex, numpy.fft) -------------------
# lax.fft transforms trailing axes: the batch axis in front is free
ELEMENTWISE.add("lax_complex")
RULES.update({"lax_fft": {"x": "lax.fft({x}, {fft_type}, {fft_lengths})"}})
