"""Reverse-mode rules, one per op of transformer/ops.py, written as templates of the maths.

In a template, {g} is the cotangent of the op's result, {ans} the result itself, and each of
the op's parameters appears by name; {static} stands for the keyword arguments the user gave
(axis=..., keepdims=...). The transform fills in the user's variable names, so
`y = np.sin(x)` gives `x_bar = y_bar * snp.cos(x)`.
"""
UNBROADCAST = {"add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum",
               "arctan2", "hypot", "logaddexp", "remainder", "where", "clip", "rem", "clamp",
               "lax_div"}
# ops whose rules sum the cotangent they are given down to their result's shape themselves
# (ad/helpers.py matmul_grad_x): an elementwise op's operand computed by one needs no
# unbroadcast of its own (transformer/dataflow.py summed_by_own_rule)
SUMS_COTANGENT = {"matmul"}
# elementwise ops whose rules may take their result's cotangent unsummed (of a shape the result
# broadcasts to) and sum each operand's contribution down to the operand's shape instead: each
# contribution is the cotangent times factors of the result's shape at most (constant along the
# summed axes: summing before or after the product is the same sum), and the result is complex
# exactly when an operand is (a real part taken at the operand is the one taken at the result).
# A value one of them computes, read once, has no unbroadcast of its own: its reader's
# contribution is summed where this rule sums (unbroadcast(unbroadcast(t, a), b) is
# unbroadcast(t, b)), and the value is not kept for the shape (ad/reverse.py)
TAKES_UNSUMMED = {"add", "subtract", "multiply", "true_divide", "negative", "positive", "sin",
                  "cos", "tanh", "exp", "log", "sqrt"}

VJP = {
    # a sum of cotangents that may be containers (linear, no broadcasting): each operand's in
    # its own float dtype (a float32 cotangent met a float64 one), as a cast transposes
    "add_grads": {"x": "grads_as({g}, {x})", "y": "grads_as({g}, {y})"},
    # a cotangent added into a container's item, and its transpose (each the other's)
    "add_at": {"tree": "{g}", "item": "add_at_grad({g}, {key}, {item})"},
    "add_at_grad": {"t": "add_at(zeros_like_tree({t}), {key}, {g})"},
    # tuple(c) of a list c (list(c) of a tuple): the cotangent as c's kind
    "seq_as": {"x": "{back}({g})"},
    # the dict merge's cotangent helpers, each the other's transpose (x, grads: structure only)
    "unmerge": {"grads": "unmerge_grad({g}, {grads}, {x}, {keys})"},
    "unmerge_grad": {"t": "unmerge({g}, {x}, {keys})"},
    "pick": {"grads": "unmerge_grad({g}, {grads}, {y}, ())"},     # (y: its keys only)
    "split_at": {"x": "{g}[0] + {g}[1]"},     # lists (or tuples) joined again
    # a pytree's leaves (a list): the cotangent rebuilt in the tree's structure, and back
    "tree_leaves": {"tree": "tree_unflatten(tree_structure({tree}), {g})"},
    "tree_unflatten": {"leaves": "tree_leaves_as({g}, {treedef})"},   # up to treedef (is_leaf)
    "tree_leaves_as": {"tree": "tree_unflatten({treedef}, {g})"},
    # elementwise, one operand
    "sin": {"x": "{g} * snp.cos({x})"},
    "cos": {"x": "-{g} * snp.sin({x})"},
    "tan": {"x": "{g} / snp.cos({x}) ** 2"},
    "arcsin": {"x": "{g} / snp.sqrt(1 - {x} ** 2)"},
    "arccos": {"x": "-{g} / snp.sqrt(1 - {x} ** 2)"},
    "arctan": {"x": "{g} / (1 + {x} ** 2)"},
    "sinh": {"x": "{g} * snp.cosh({x})"},
    "cosh": {"x": "{g} * snp.sinh({x})"},
    "tanh": {"x": "{g} * (1 - {ans} ** 2)"},
    "arcsinh": {"x": "{g} / snp.sqrt({x} ** 2 + 1)"},
    "arccosh": {"x": "{g} / snp.sqrt({x} ** 2 - 1)"},
    "arctanh": {"x": "{g} / (1 - {x} ** 2)"},
    "exp": {"x": "{g} * {ans}"},
    "exp2": {"x": "{g} * {ans} * 0.6931471805599453"},
    "expm1": {"x": "{g} * ({ans} + 1)"},
    "log": {"x": "{g} / {x}"},
    "log2": {"x": "{g} / ({x} * 0.6931471805599453)"},
    "log10": {"x": "{g} / ({x} * 2.302585092994046)"},
    "log1p": {"x": "{g} / (1 + {x})"},
    "sqrt": {"x": "{g} / (2 * {ans})"},
    "cbrt": {"x": "{g} / (3 * {ans} ** 2)"},
    "rsqrt": {"x": "-0.5 * {g} * {ans} / {x}"},
    "square": {"x": "2 * {x} * {g}"},
    "reciprocal": {"x": "-{g} * {ans} ** 2"},
    # complex x (JAX's convention: the cotangent u of a real-valued f pairs as Re(u dz), so
    # grad(abs)(z) = conj(z) / |z|, grad(real) = 1, grad(imag) = -1j); conj is the identity on
    # real arrays, so real x reads as before
    "absolute": {"x": "{g} * snp.conj(abs_sign({x}))"},
    "real": {"x": "real_grad({g}, {x})"},
    "imag": {"x": "imag_grad({g}, {x})"},
    "conj": {"x": "snp.conj({g})"},
    "logistic": {"x": "{g} * {ans} * (1 - {ans})"},
    "erf": {"x": "{g} * 1.1283791670955126 * snp.exp(-{x} ** 2)"},
    "negative": {"x": "-{g}"},
    "positive": {"x": "{g}"},
    "identity": {"x": "{g}"},
    "optimization_barrier": {"x": "{g}"},
    "reduce_precision": {"operand": "lax.reduce_precision({g}, {exponent_bits}, {mantissa_bits})"},
    "astype": {"x": "cast_grad({g}, {x}, {dtype})"},   # (none to integers)
    # elementwise, two operands (the transform adds unbroadcast where shapes may differ)
    "add": {"x": "{g}", "y": "{g}"},
    "subtract": {"x": "{g}", "y": "-{g}"},
    "multiply": {"x": "{g} * {y}", "y": "{x} * {g}"},
    "true_divide": {"x": "{g} / {y}", "y": "-{g} * {ans} / {y}"},
    "power": {"x": "{g} * power_scale({x}, {y})", "y": "{g} * {ans} * power_log({x})"},
    "maximum": {"x": "{g} * max_share({x}, {y})", "y": "{g} * max_share({y}, {x})"},
    "minimum": {"x": "{g} * min_share({x}, {y})", "y": "{g} * min_share({y}, {x})"},
    "arctan2": {"x": "{g} * {y} / ({x} ** 2 + {y} ** 2)",
                "y": "-{g} * {x} / ({x} ** 2 + {y} ** 2)"},
    "hypot": {"x": "{g} * hypot_share({x}, {ans})", "y": "{g} * hypot_share({y}, {ans})"},
    "logaddexp": {"x": "{g} * snp.exp({x} - {ans})", "y": "{g} * snp.exp({y} - {ans})"},
    "remainder": {"x": "{g}", "y": "-{g} * ({x} // {y})"},
    "where": {"x": "snp.where({condition}, {g}, 0)", "y": "snp.where({condition}, 0, {g})"},
    "clip": {"a": "{g} * clip_share({a}, {a_min}, {a_max})",
             "a_min": "{g} * clip_share_min({a}, {a_min}, {a_max})",
             "a_max": "{g} * clip_share_max({a}, {a_min}, {a_max})"},
    "matmul": {"x": "matmul_grad_x({g}, {x}, {y})", "y": "matmul_grad_y({g}, {x}, {y})"},
    "dot": {"a": "dot_grad_a({g}, {a}, {b})", "b": "dot_grad_b({g}, {a}, {b})"},
    "outer": {"a": "snp.dot({g}, snp.ravel({b})).reshape(snp.shape({a}))",
              "b": "snp.dot(snp.ravel({a}), {g}).reshape(snp.shape({b}))"},
    # reductions
    "sum": {"a": "unreduce({g}, {a}{static})"},
    "mean": {"a": "mean_grad({g}, {a}{static})"},
    "max": {"a": "extremum_grad({g}, {a}, {ans}{static})"},
    "min": {"a": "extremum_grad({g}, {a}, {ans}{static})"},
    "prod": {"a": "product_grad({g}, {a}{static})"},
    "var": {"a": "var_grad({g}, {a}{static})"},
    "std": {"a": "std_grad({g}, {a}, {ans}{static})"},
    "cumsum": {"a": "cumsum_grad({g}, {a}{static})"},
    # shapes
    # (snp.shape: `a` may be a Python number, under grad of grad)
    "reshape": {"a": "{g}.reshape(snp.shape({a}))"},
    "ravel": {"a": "{g}.reshape(snp.shape({a}))"},
    "expand_dims": {"a": "{g}.reshape(snp.shape({a}))"},
    "squeeze": {"a": "{g}.reshape(snp.shape({a}))"},
    "transpose": {"a": "untranspose({g}{static})"},
    "swapaxes": {"a": "snp.swapaxes({g}, {axis1}, {axis2})"},
    "broadcast_to": {"array": "unbroadcast({g}, {array})"},
    # (a list of pieces: its cotangent is a list, joined back)
    "split": {"ary": "snp.concatenate({g}, axis={axis})"},
    "array_split": {"ary": "snp.concatenate({g}, axis={axis})"},
    "hsplit": {"ary": "snp.concatenate({g}, axis=int(snp.ndim({ary}) > 1))"},
    "vsplit": {"ary": "snp.concatenate({g}, axis=0)"},
    "dsplit": {"ary": "snp.concatenate({g}, axis=2)"},
    # indexing
    # (out-of-range indices, ad/index_modes.py: {back} sends a clamped read's cotangent where
    # it read, {pick} gives the values of a dropped update none)
    "getitem": {"a": "snp.zeros_like({a}).at[{idx}].add({g}{back})"},
    "at_get": {"a": "snp.zeros_like({a}).at[{idx}].add({g}{back})"},
    "at_set": {"a": "{g}.at[{idx}].set(0{static})", "values": "unbroadcast({g}{pick}{won}, {values})"},
    "at_add": {"a": "{g}", "values": "unbroadcast({g}{pick}, {values})"},
    # (each update's derivative: a's element times the other updates landing there)
    "at_mul": {"a": "{g} * snp.ones_like({a}).at[{idx}].mul({values}{static})",
               "values": "unbroadcast({g}{pick} * at_mul_others({a}, {values}, "
                         "index_exp[{idx}]{helper_kw}), {values})"},
    "at_min": {"a": "{g} * at_share_operand({a}, {values}, {ans}, index_exp[{idx}])",
               "values": "unbroadcast({g}{pick} * at_share_values({a}, {values}, {ans}, "
                         "index_exp[{idx}]), {values})"},
    "at_max": {"a": "{g} * at_share_operand({a}, {values}, {ans}, index_exp[{idx}])",
               "values": "unbroadcast({g}{pick} * at_share_values({a}, {values}, {ans}, "
                         "index_exp[{idx}]), {values})"},
    "take": {"a": "take_grad({g}, {a}, {indices}, {axis}, {mode})"},
    "take_along_axis": {"arr": "take_along_axis_grad({g}, {arr}, {indices}, {axis}, {mode})"},
    # more elementwise ops
    "erf_inv": {"x": "{g} * 0.886226925452758 * snp.exp({ans} ** 2)"},
    "lgamma": {"x": "{g} * lax.digamma({x})"},
    "digamma": {"x": "{g} * trigamma({x})"},
    "integer_pow": {"x": "integer_pow_scale({g}, {x}, {y})"},
    "rem": {"x": "{g}", "y": "-{g} * snp.trunc({x} / {y})"},
    "lax_div": {"x": "{g} / {y}", "y": "-{g} * {ans} / {y}"},
    "clamp": {"min": "snp.where(({min} > {x}) & ({min} < {max}), {g}, 0.0)",
              "x": "snp.where(({x} > {min}) & ({x} < {max}), {g}, 0.0)",
              "max": "snp.where({max} < {x}, {g}, 0.0)"},
    "select": {"on_true": "snp.where({pred}, {g}, 0.0)",
               "on_false": "snp.where({pred}, 0.0, {g})"},
    "convert_element_type": {"operand": "cast_grad({g}, {operand}, {new_dtype})"},
    # more reductions and cumulative ops
    "reduce_sum": {"operand": "unreduce({g}, {operand}, tuple({axes}))"},
    "reduce_max": {"operand": "extremum_grad({g}, {operand}, {ans}, tuple({axes}))"},
    "reduce_min": {"operand": "extremum_grad({g}, {operand}, {ans}, tuple({axes}))"},
    "reduce_prod": {"operand": "product_grad({g}, {operand}, tuple({axes}))"},
    "cumprod": {"a": "cumprod_grad({g}, {a}{static})"},
    "lax_cumsum": {"operand": "cumsum_transpose({g}, {axis}, {reverse})"},
    "lax_cumprod": {"operand": "cumprod_grad({g}, {operand}, {axis}, {reverse})"},
    "lax_cummax": {"operand": "cumextremum_grad({g}, {operand}, {ans}, {axis}, {reverse})"},
    "lax_cummin": {"operand": "cumextremum_grad({g}, {operand}, {ans}, {axis}, {reverse})"},
    "sort": {"a": "sort_grad({g}, {a}{static})"},
    # more products
    "dot_general": {"lhs": "dot_general_grad_lhs({g}, {lhs}, {rhs}, {dimension_numbers})",
                    "rhs": "dot_general_grad_rhs({g}, {lhs}, {rhs}, {dimension_numbers})"},
    "tensordot": {"a": "tensordot_grad_a({g}, {a}, {b}, {axes})",
                  "b": "tensordot_grad_b({g}, {a}, {b}, {axes})"},
    # more structure
    "flip": {"m": "snp.flip({g}{static})"},
    "fliplr": {"m": "snp.fliplr({g})"},
    "flipud": {"m": "snp.flipud({g})"},
    "rev": {"operand": "lax.rev({g}, {dimensions})"},
    # collectives over a mapped axis, as JAX transposes them: a cotangent of every example's
    # psum reaches each example's operand summed over the axis (the derivative of the sum of
    # the examples' results); all_gather and psum_scatter are each the other's transpose
    "psum": {"x": "lax.psum({g}, {axis_name})"},
    "pmean": {"x": "lax.pmean({g}, {axis_name})"},
    "all_gather": {"x": "lax.psum_scatter({g}, {axis_name}, scatter_dimension={axis}, "
                        "tiled={tiled})"},
    "psum_scatter": {"x": "lax.all_gather({g}, {axis_name}, axis={scatter_dimension}, "
                          "tiled={tiled})"},
    "moveaxis": {"a": "snp.moveaxis({g}, {destination}, {source})"},
    "pad": {"array": "unpad({g}, {array}, {pad_width})",
            "constant_values": "snp.sum({g}) - snp.sum(unpad({g}, {array}, {pad_width}))"},
    "lax_pad": {"operand": "lax_unpad({g}, {padding_config})",
                "padding_value": "snp.sum({g}) - snp.sum(lax_unpad({g}, {padding_config}))"},
    "lax_slice": {"operand": "slice_transpose({g}, {operand}, {start_indices}, {limit_indices}, "
                             "{strides})"},
    "dynamic_slice": {"operand": "lax.dynamic_update_slice(snp.zeros_like({operand}), {g}, "
                                 "{start_indices})"},
    "dynamic_update_slice": {
        "operand": "lax.dynamic_update_slice({g}, snp.zeros_like({update}), {start_indices})",
        "update": "lax.dynamic_slice({g}, {start_indices}, snp.shape({update}))"},
    "broadcast_in_dim": {"operand": "unbroadcast_in_dim({g}, {operand}, {broadcast_dimensions})"},
    "lax_reshape": {"operand": "lax_reshape_grad({g}, {operand}, {dimensions})"},
    "lax_transpose": {"operand": "lax.transpose({g}, inverse_permutation({permutation}))"},
    "lax_squeeze": {"array": "{g}.reshape(snp.shape({array}))"},
    "lax_expand_dims": {"array": "{g}.reshape(snp.shape({array}))"},
    # --- windowed operations (issue 17; ad/conv_helpers.py: the transposes are convolutions) ---
    "conv_general_dilated": {
        "lhs": "conv_grad_lhs({g}, {lhs}, {rhs}, {window_strides}, {padding}{static})",
        "rhs": "conv_grad_rhs({g}, {lhs}, {rhs}, {window_strides}, {padding}{static})"},
    # linear algebra (ad/linalg_rules.py states each formula)
    "cholesky": {"x": "cholesky_grad({g}, {ans}, {symmetrize_input})"},
    "triangular_solve": {
        "a": "triangular_solve_grad_a({g}, {a}, {ans}, {left_side}, {lower}, {transpose_a}, "
             "{conjugate_a}, {unit_diagonal})",
        "b": "triangular_solve_grad_b({g}, {a}, {left_side}, {lower}, {transpose_a}, "
             "{conjugate_a}, {unit_diagonal})"},
    "lu_factors": {"x": "lu_grad({g}, {x}, {ans})"},
}

# softmax and log-softmax written out (exp(u), its sum over axes A keeping them, then the quotient
# or u - log of the sum: transformer/dataflow.py normalised_exps): u's cotangent from the result
# v alone ({keep}: ", axis=A, keepdims=True"), so the exp and the sum need not be kept for it
NORMALISED_VJP = {
    "softmax": "{ans} * ({g} - snp.sum({g} * {ans}{keep}))",
    "log_softmax": "{g} - snp.sum({g}{keep}) * snp.exp({ans})",
}

# x @ y where y = transpose(k) is read by this matmul alone (transformer/dataflow.py
# transposed_operands): the cotangents of x and of k, k's transpose not kept for them
TRANSPOSED_VJP = {"x": "matmul_grad_x_of_t({g}, {x}, {k})", "k": "matmul_grad_t_y({g}, {x}, {k})"}

# ops over a sequence of arrays: one template for all the pieces (a list, in order)
# rules that read these operands for their shape (and real-or-complex kind) only: another value
# of provably the same shape may stand in for them (ad/reverse.py _shape_of), so the forward
# value itself need not be kept for the reverse pass
SHAPE_ONLY = {"sum": {"a"}, "mean": {"a"}, "reshape": {"a"}, "ravel": {"a"},
              "expand_dims": {"a"}, "reduce_sum": {"operand"}}

SEQUENCE_VJP = {
    "concatenate": "unconcatenate({g}, {arrays}{static})",
    "stack": "unstack({g}{static})",
    "lax_concatenate": "unconcatenate({g}, {operands}, {dimension})",
    "grad_of_fields": "fields_of({g}, {fields})",
    # (every leaf of its result is batched)
    "grad_of_fields_batched": "fields_of_batched({g}, {fields}, {n}, True)",
}

# the same for a tracked list or tuple passed whole (snp.stack(out), out built in a loop): the
# cotangent of the container, item by item
CONTAINER_VJP = {
    "concatenate": "unconcatenate({g}, {arrays}{static})",
    "stack": "unstack_as({g}, {arrays}{static})",
    "lax_concatenate": "unconcatenate({g}, {operands}, {dimension})",
    "grad_of_fields": "fields_at({g}, {fields})",     # the fields' cotangents, a dict
}

# structural and composite ops the transform handles itself (ad/reverse.py)
SPECIAL = {"field", "attribute", "getattr", "call", "add_n", "cond", "switch", "fori_loop",
           "scan", "map",
           "while_loop", "pack", "concat_seq", "dict_merge", "einsum", "fields_of",
           "fields_of_batched"}

# ops whose derivative is zero everywhere it exists: their results are constants
ZERO = {"sign", "floor", "ceil", "rint", "trunc", "isnan", "isfinite", "isinf", "signbit",
        "argmax", "argmin", "argsort", "any", "all", "floor_divide", "zeros_like", "ones_like",
        "empty_like", "stop_gradient", "lu_pivots", "lu_pivots_to_permutation"}

# --- numpy.linalg, spectral family: the rules (stated in their docstrings) are functions of
# secant/numpy/linalg_spectral_rules.py, written with secant.numpy's ops (differentiable again)
VJP.update({
    "linalg_eigh_values": {"a": "snp.linalg_spectral.eigh_values_vjp({g}, {a})"},
    "linalg_eigh_vectors": {"a": "snp.linalg_spectral.eigh_vectors_vjp({g}, {a})"},
    "linalg_svd_values": {"a": "snp.linalg_spectral.svd_values_vjp({g}, {a})"},
    "linalg_svd_u": {"a": "snp.linalg_spectral.svd_u_vjp({g}, {a}, {full_matrices})"},
    "linalg_svd_vh": {"a": "snp.linalg_spectral.svd_vh_vjp({g}, {a}, {full_matrices})"},
    "linalg_qr_q": {"a": "snp.linalg_spectral.qr_q_vjp({g}, {a}, {mode})"},
    "linalg_qr_r": {"a": "snp.linalg_spectral.qr_r_vjp({g}, {a}, {mode})"},
    "linalg_eig_values": {"a": "snp.linalg_spectral.eig_values_vjp({g}, {a})"},
    "linalg_eig_vectors": {"a": "snp.linalg_spectral.eig_vectors_vjp({g}, {a})"},
    "linalg_pinv": {"a": "snp.linalg_spectral.pinv_vjp({g}, {a}, {ans}, {hermitian})"},
})
# --- complex numbers and the Fourier transform (issue 17: complex, numpy.fft) -------------------
# (JAX's convention: transposes, not adjoints. complex(x, y) = x + 1j y gives real(g), -imag(g);
# the transpose of an FFT is an FFT of the same kind, RFFT's and IRFFT's handle the
# Hermitian-symmetric half: ad/fft_rules.py)
VJP.update({
    "lax_complex": {"x": "snp.real({g})", "y": "-snp.imag({g})"},
    "lax_fft": {"x": "fft_transpose({g}, {fft_type}, {fft_lengths})"},
})
UNBROADCAST.add("lax_complex")
