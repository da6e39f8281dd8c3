"""Forward-mode rules, one per differentiable op of transformer/ops.py, written as templates of
the maths (the forward twin of ad/vjp_rules.py).

JVP[op] maps each array operand to its *contribution* to the result's tangent, given that
operand's tangent. In a template:
  {x}      the operand `x` itself (every parameter of the op appears by its name),
  {x_dot}  the tangent of operand `x` (`<param>_dot`),
  {ans}    the op's result,
  {static} the keyword arguments the user gave that the template does not name.
The transform adds up the contributions of the operands that have tangents; an operand without
one (a constant, or a value that does not depend on the differentiated inputs) contributes
nothing: no `0 + ...`, no zeros. So `y = np.sin(x)` gives `y_dot = x_dot * snp.cos(x)`.

LINEAR instead of a template: the op is linear in that operand, and the contribution is the op
itself applied to the operand's tangent (the other operands and statics as the user wrote them):
`snp.sum(a, axis=0)` gives `snp.sum(a_dot, axis=0)`, `x @ w` gives `x_dot @ w`.

JOINT[op] is the tangent when *every* array operand has one, where that reads better than the
sum (`snp.where(c, x_dot, y_dot)`); LINEAR there means the op applied to all the tangents.
SEQUENCE ops (concatenate, stack) are linear in their list: the op over the items' tangents,
zeros for items without one.
"""
LINEAR = "linear"

JVP = {
    "add_grads": {"x": "{x_dot}", "y": "{y_dot}"},
    "add_at": {"tree": "{tree_dot}", "item": "add_at(zeros_like_tree({tree}), {key}, {item_dot})"},
    "add_at_grad": {"t": LINEAR},      # (item: a structure only)
    # elementwise, one operand
    "sin": {"x": "{x_dot} * snp.cos({x})"},
    "cos": {"x": "-{x_dot} * snp.sin({x})"},
    "tan": {"x": "{x_dot} / snp.cos({x}) ** 2"},
    "arcsin": {"x": "{x_dot} / snp.sqrt(1 - {x} ** 2)"},
    "arccos": {"x": "-{x_dot} / snp.sqrt(1 - {x} ** 2)"},
    "arctan": {"x": "{x_dot} / (1 + {x} ** 2)"},
    "sinh": {"x": "{x_dot} * snp.cosh({x})"},
    "cosh": {"x": "{x_dot} * snp.sinh({x})"},
    "tanh": {"x": "{x_dot} * (1 - {ans} ** 2)"},
    "arcsinh": {"x": "{x_dot} / snp.sqrt({x} ** 2 + 1)"},
    "arccosh": {"x": "{x_dot} / snp.sqrt({x} ** 2 - 1)"},
    "arctanh": {"x": "{x_dot} / (1 - {x} ** 2)"},
    "exp": {"x": "{x_dot} * {ans}"},
    "exp2": {"x": "{x_dot} * {ans} * 0.6931471805599453"},
    "expm1": {"x": "{x_dot} * ({ans} + 1)"},
    "log": {"x": "{x_dot} / {x}"},
    "log2": {"x": "{x_dot} / ({x} * 0.6931471805599453)"},
    "log10": {"x": "{x_dot} / ({x} * 2.302585092994046)"},
    "log1p": {"x": "{x_dot} / (1 + {x})"},
    "sqrt": {"x": "{x_dot} / (2 * {ans})"},
    "cbrt": {"x": "{x_dot} / (3 * {ans} ** 2)"},
    "rsqrt": {"x": "-0.5 * {x_dot} * {ans} / {x}"},
    "square": {"x": "2 * {x} * {x_dot}"},
    "reciprocal": {"x": "-{x_dot} * {ans} ** 2"},
    "absolute": {"x": "snp.real({x_dot} * snp.conj(abs_sign({x})))"},   # (complex x too)
    "logistic": {"x": "{x_dot} * {ans} * (1 - {ans})"},
    "erf": {"x": "{x_dot} * 1.1283791670955126 * snp.exp(-{x} ** 2)"},
    "erf_inv": {"x": "{x_dot} * 0.886226925452758 * snp.exp({ans} ** 2)"},
    "lgamma": {"x": "{x_dot} * lax.digamma({x})"},
    "digamma": {"x": "{x_dot} * trigamma({x})"},
    "integer_pow": {"x": "integer_pow_scale({x_dot}, {x}, {y})"},
    "negative": {"x": "-{x_dot}"},
    "real": {"x": LINEAR},
    "imag": {"x": LINEAR},
    "conj": {"x": LINEAR},
    "positive": {"x": "{x_dot}"},
    "identity": {"x": "{x_dot}"},
    "seq_as": {"x": "{kind}({x_dot})"},
    "fields_of": {"tree": "fields_of({tree_dot}, {keys})"},
    "fields_of_batched": {"tree": "fields_of_batched({tree_dot}, {keys}, {n}, True)"},
    "split_at": {"x": "split_at({x_dot}, {n})"},
    "tree_leaves": {"tree": "tree_leaves({tree_dot})"},
    "unmerge": {"grads": LINEAR},
    "unmerge_grad": {"t": LINEAR},
    "pick": {"grads": LINEAR},
    "tree_unflatten": {"leaves": "tree_unflatten({treedef}, {leaves_dot})"},
    "tree_leaves_as": {"tree": "tree_leaves_as({tree_dot}, {treedef})"},
    "optimization_barrier": {"x": "{x_dot}"},
    "reduce_precision": {"operand": LINEAR},
    "astype": {"x": "cast_jvp({x_dot}, {dtype})"},   # (none to integers)
    "convert_element_type": {"operand": "cast_jvp({operand_dot}, {new_dtype})"},
    # elementwise, two operands (the transform broadcasts a lone tangent up to the result's
    # shape where another operand may broadcast it: ops of BROADCAST below)
    "add": {"x": "{x_dot}", "y": "{y_dot}"},
    "subtract": {"x": "{x_dot}", "y": "-{y_dot}"},
    "multiply": {"x": "{x_dot} * {y}", "y": "{x} * {y_dot}"},
    "true_divide": {"x": "{x_dot} / {y}", "y": "-{y_dot} * {ans} / {y}"},
    "lax_div": {"x": "{x_dot} / {y}", "y": "-{y_dot} * {ans} / {y}"},
    "power": {"x": "{x_dot} * power_scale({x}, {y})", "y": "{y_dot} * {ans} * power_log({x})"},
    "maximum": {"x": "{x_dot} * max_share({x}, {y})", "y": "{y_dot} * max_share({y}, {x})"},
    "minimum": {"x": "{x_dot} * min_share({x}, {y})", "y": "{y_dot} * min_share({y}, {x})"},
    "arctan2": {"x": "{x_dot} * {y} / ({x} ** 2 + {y} ** 2)",
                "y": "-{y_dot} * {x} / ({x} ** 2 + {y} ** 2)"},
    "hypot": {"x": "{x_dot} * hypot_share({x}, {ans})",
              "y": "{y_dot} * hypot_share({y}, {ans})"},
    "logaddexp": {"x": "{x_dot} * snp.exp({x} - {ans})", "y": "{y_dot} * snp.exp({y} - {ans})"},
    "remainder": {"x": "{x_dot}", "y": "-{y_dot} * ({x} // {y})"},
    "rem": {"x": "{x_dot}", "y": "-{y_dot} * snp.trunc({x} / {y})"},
    # (the other operand's zero in its own dtype: the tangent has the output's dtype, as JAX's)
    "where": {"x": "snp.where({condition}, {x_dot}, snp.zeros_like({y}))",
              "y": "snp.where({condition}, snp.zeros_like({x}), {y_dot})"},
    "select": {"on_true": "snp.where({pred}, {on_true_dot}, 0)",
               "on_false": "snp.where({pred}, 0, {on_false_dot})"},
    "clip": {"a": "{a_dot} * clip_share({a}, {a_min}, {a_max})",
             "a_min": "{a_min_dot} * clip_share_min({a}, {a_min}, {a_max})",
             "a_max": "{a_max_dot} * clip_share_max({a}, {a_min}, {a_max})"},
    "clamp": {"min": "snp.where(({min} > {x}) & ({min} < {max}), {min_dot}, 0)",
              "x": "snp.where(({x} > {min}) & ({x} < {max}), {x_dot}, 0)",
              "max": "snp.where({max} < {x}, {max_dot}, 0)"},
    # products: linear in each operand
    "matmul": {"x": LINEAR, "y": LINEAR},
    "dot": {"a": LINEAR, "b": LINEAR},
    "outer": {"a": LINEAR, "b": LINEAR},
    "tensordot": {"a": LINEAR, "b": LINEAR},
    "dot_general": {"lhs": LINEAR, "rhs": LINEAR},
    # reductions
    "sum": {"a": LINEAR},
    "mean": {"a": LINEAR},
    "reduce_sum": {"operand": LINEAR},
    "max": {"a": "extremum_jvp({a_dot}, {a}, {ans}{static})"},
    "min": {"a": "extremum_jvp({a_dot}, {a}, {ans}{static})"},
    "reduce_max": {"operand": "extremum_jvp({operand_dot}, {operand}, {ans}, tuple({axes}))"},
    "reduce_min": {"operand": "extremum_jvp({operand_dot}, {operand}, {ans}, tuple({axes}))"},
    "prod": {"a": "prod_jvp({a_dot}, {a}{static})"},
    "reduce_prod": {"operand": "prod_jvp({operand_dot}, {operand}, tuple({axes}))"},
    "var": {"a": "var_jvp({a_dot}, {a}{static})"},
    "std": {"a": "var_jvp({a_dot}, {a}{static}) / (2 * {ans})"},
    # cumulative ops
    "cumsum": {"a": LINEAR},
    "lax_cumsum": {"operand": LINEAR},
    "cumprod": {"a": "cumprod_jvp({a_dot}, {a}{static})"},
    "lax_cumprod": {"operand": "cumprod_jvp({operand_dot}, {operand}, {axis}, {reverse})"},
    "lax_cummax": {"operand": "cumextremum_jvp({operand_dot}, {operand}, {ans}, {axis}, "
                              "{reverse})"},
    "lax_cummin": {"operand": "cumextremum_jvp({operand_dot}, {operand}, {ans}, {axis}, "
                              "{reverse})"},
    "sort": {"a": "sort_jvp({a_dot}, {a}{static})"},
    # collectives over a mapped axis: linear (the collective of the tangents)
    **{name: {"x": LINEAR} for name in ("psum", "pmean", "all_gather", "psum_scatter")},
    # shapes: linear
    **{name: {p: LINEAR} for name, p in (
        ("reshape", "a"), ("ravel", "a"), ("transpose", "a"), ("swapaxes", "a"),
        ("expand_dims", "a"), ("squeeze", "a"), ("broadcast_to", "array"), ("moveaxis", "a"),
        ("flip", "m"), ("fliplr", "m"), ("flipud", "m"), ("rev", "operand"),
        ("broadcast_in_dim", "operand"), ("lax_reshape", "operand"),
        ("lax_transpose", "operand"), ("lax_squeeze", "array"), ("lax_expand_dims", "array"),
        ("lax_slice", "operand"), ("dynamic_slice", "operand"), ("getitem", "a"))},
    **{name: {"ary": LINEAR} for name in ("split", "array_split", "hsplit", "vsplit", "dsplit")},
    # indexing (linear in the array; out-of-range places of a filled take get tangent 0)
    "take": {"a": "snp.take({a_dot}, {indices}, {axis}, {mode}, 0)"},
    "take_along_axis": {"arr": "snp.take_along_axis({arr_dot}, {indices}, {axis}, {mode}, 0)"},
    "at_get": {"a": "{a_dot}.at[{idx}].get({get_kw_dot})"},     # (a filled read's tangent: 0)
    "at_set": {"a": "{a_dot}.at[{idx}].set(0{static})",
               "values": "snp.zeros_like({a}).at[{idx}].set({values_dot}{static})"},
    "at_add": {"a": "{a_dot}",
               "values": "snp.zeros_like({a}).at[{idx}].add({values_dot}{static})"},
    # (each update's derivative: a's element times the other updates landing there)
    "at_mul": {"a": "{a_dot}.at[{idx}].mul({values}{static})",
               "values": "snp.zeros_like({a}).at[{idx}].add(at_mul_others({a}, {values}, "
                         "index_exp[{idx}]{helper_kw}) * {values_dot}{static})"},
    "at_min": {"a": "{a_dot} * at_share_operand({a}, {values}, {ans}, index_exp[{idx}])",
               "values": "snp.zeros_like({a}).at[{idx}].add({values_dot} * at_share_values("
                         "{a}, {values}, {ans}, index_exp[{idx}]))"},
    "at_max": {"a": "{a_dot} * at_share_operand({a}, {values}, {ans}, index_exp[{idx}])",
               "values": "snp.zeros_like({a}).at[{idx}].add({values_dot} * at_share_values("
                         "{a}, {values}, {ans}, index_exp[{idx}]))"},
    "pad": {"array": "snp.pad({array_dot}, {pad_width}, {mode})",
            "constant_values": "snp.pad(snp.zeros_like({array}), {pad_width}, {mode}, "
                               "constant_values={constant_values_dot})"},
    "lax_pad": {"operand": "lax.pad({operand_dot}, snp.zeros_like({padding_value}), "
                           "{padding_config})",
                "padding_value": "lax.pad(snp.zeros_like({operand}), {padding_value_dot}, "
                                 "{padding_config})"},
    "dynamic_update_slice": {
        "operand": "lax.dynamic_update_slice({operand_dot}, snp.zeros_like({update}), "
                   "{start_indices})",
        "update": "lax.dynamic_update_slice(snp.zeros_like({operand}), {update_dot}, "
                  "{start_indices})"},
    # --- windowed operations (issue 17): bilinear ---
    "conv_general_dilated": {"lhs": LINEAR, "rhs": LINEAR},
    # linear algebra (ad/linalg_rules.py states each formula)
    "cholesky": {"x": "cholesky_jvp({x_dot}, {ans}, {symmetrize_input})"},
    "triangular_solve": {
        "a": "triangular_solve_jvp_a({a_dot}, {a}, {ans}, {left_side}, {lower}, {transpose_a}, "
             "{conjugate_a}, {unit_diagonal})",
        "b": LINEAR},
    "lu_factors": {"x": "lu_jvp({x_dot}, {x}, {ans})"},
}

# the tangent when every array operand has one (where it reads better than the sum)
JOINT = {
    "add_grads": "add_grads({x_dot}, {y_dot})",
    "add_at": LINEAR,
    "true_divide": "({x_dot} - {ans} * {y_dot}) / {y}",
    "lax_div": "({x_dot} - {ans} * {y_dot}) / {y}",
    "where": "snp.where({condition}, {x_dot}, {y_dot})",
    "select": "lax.select({pred}, {on_true_dot}, {on_false_dot})",
    "at_set": LINEAR,
    "at_add": LINEAR,
    "pad": LINEAR,
    "lax_pad": LINEAR,
    "dynamic_update_slice": LINEAR,
}

# ops over a sequence of arrays: linear in the list
SEQUENCE = {"concatenate", "stack", "lax_concatenate", "add_n", "grad_of_fields",
            "grad_of_fields_batched"}

# ops whose lone-operand contribution is the bare tangent: broadcast it to the result's shape
# when another operand may be larger
BROADCAST = {"add", "subtract", "remainder", "rem", "where", "select"}

# structural and composite ops the transform handles itself (ad/forward.py)
SPECIAL = {"field", "attribute", "getattr", "call", "cond", "switch", "fori_loop", "scan", "map",
           "while_loop", "pack", "concat_seq", "dict_merge", "einsum"}

# --- numpy.linalg, spectral family (secant/numpy/linalg_spectral_rules.py states each rule)
JVP.update({
    "linalg_eigh_values": {"a": "snp.linalg_spectral.eigh_values_jvp({a_dot}, {a})"},
    "linalg_eigh_vectors": {"a": "snp.linalg_spectral.eigh_vectors_jvp({a_dot}, {a})"},
    "linalg_svd_values": {"a": "snp.linalg_spectral.svd_values_jvp({a_dot}, {a})"},
    "linalg_svd_u": {"a": "snp.linalg_spectral.svd_u_jvp({a_dot}, {a}, {full_matrices})"},
    "linalg_svd_vh": {"a": "snp.linalg_spectral.svd_vh_jvp({a_dot}, {a}, {full_matrices})"},
    "linalg_qr_q": {"a": "snp.linalg_spectral.qr_q_jvp({a_dot}, {a}, {mode})"},
    "linalg_qr_r": {"a": "snp.linalg_spectral.qr_r_jvp({a_dot}, {a}, {mode})"},
    "linalg_eig_values": {"a": "snp.linalg_spectral.eig_values_jvp({a_dot}, {a})"},
    "linalg_eig_vectors": {"a": "snp.linalg_spectral.eig_vectors_jvp({a_dot}, {a})"},
    "linalg_pinv": {"a": "snp.linalg_spectral.pinv_jvp({a_dot}, {a}, {ans}, {hermitian})"},
})
# --- complex numbers and the Fourier transform (issue 17: complex, numpy.fft) -------------------
JVP.update({
    "lax_complex": {"x": "lax.complex({x_dot}, snp.zeros_like({x_dot}))",
                    "y": "lax.complex(snp.zeros_like({y_dot}), {y_dot})"},
    "lax_fft": {"x": LINEAR},           # (real-linear for RFFT and IRFFT)
})
JOINT.update({"lax_complex": "lax.complex({x_dot}, {y_dot})"})
BROADCAST.add("lax_complex")
