"""The source-level vocabulary: every call or operator the transforms understand.

Each op has a signature (to bind the user's arguments), the names of its array operands, how
generated code writes it (always through secant's API, whatever the user wrote), and the objects
that resolve to it (numpy's, secant.numpy's, math's functions, builtins, array methods).
ad/ and batching/ key their rule tables by these names.
"""
import inspect
import math
import operator

import numpy as np


class OpSpec:
    def __init__(self, name, signature, arrays, code=None, differentiable=True, sequence=None,
                 conditions=()):
        self.name = name
        self.signature = inspect.signature(eval(f"lambda {signature}: None"))  # noqa: S307
        self.params = list(self.signature.parameters)
        self.arrays = tuple(arrays)          # operand parameters (differentiable inputs)
        self.sequence = sequence             # a parameter holding a list of arrays, if any
        self.code = code                     # format string; None: snp.<name>(...)
        self.differentiable = differentiable
        # array inputs with no derivative (a condition): they may depend on differentiated
        # values, as in JAX, where a comparison's result has no tangent
        self.conditions = tuple(conditions)

    def render(self, operands, statics, spelling=""):
        """Source of a call: operands maps array params to source, statics param -> source.
        `spelling` (ir.Op.spelling): the lax function written instead, its arguments positional
        (`lax.add(x, y)`), so lax's checks of the arguments run.

        Parameters the user left out take their defaults in a code template; in the default
        form (snp.<name>(...)) operands are positional until the first one left out, then
        keywords, so `np.clip(x, a_max=1.0)` stays `snp.clip(x, a_max=1.0)`."""
        if spelling:
            args = [operands[p] if p in operands else statics[p] for p in self.params
                    if p in operands or p in statics]
            return f"{spelling}({', '.join(args)})"
        if self.code is not None:
            defaults = {p: repr(self.signature.parameters[p].default) for p in self.params
                        if p not in operands and p not in statics
                        and self.signature.parameters[p].default is not inspect.Parameter.empty}
            return self.code.format(**defaults, **operands, **statics,
                                    static=_static_kwargs(statics, self.code)
                                    ).replace("(, ", "(")      # (x.at[i].get(mode=...))
        present = [i for i, p in enumerate(self.params) if p in operands]
        last_operand = present[-1] if present else -1
        parts = []
        positional = True
        for i, p in enumerate(self.params):
            if p not in operands and p not in statics:
                positional = False
                continue
            value = operands[p] if p in operands else statics[p]
            if self.signature.parameters[p].kind == inspect.Parameter.KEYWORD_ONLY:
                positional = False
            if positional and i <= last_operand:
                parts.append(value)
            else:
                positional = False
                parts.append(f"{p}={value}")
        return f"snp.{self.name}({', '.join(parts)})"


def _static_kwargs(statics, code):
    used = {k for k in statics if "{" + k + "}" in code}
    return "".join(f", {k}={v}" for k, v in statics.items() if k not in used)


OPS = {}


def op(name, signature="x", arrays=("x",), **kw):
    OPS[name] = OpSpec(name, signature, arrays, **kw)


# --- elementwise, one array operand ---------------------------------------------------------
for _n in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
           "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
           "cbrt", "square", "reciprocal", "absolute", "logistic", "rsqrt"):
    op(_n)
op("erf", code="lax.erf({x})")          # no numpy function: written through lax
for _n in ("real", "imag", "conj"):     # complex parts (JAX's convention: ad/vjp_rules.py)
    op(_n)
op("negative", code="-{x}")
op("positive", code="{x}")
op("identity", code="{x}")
for _n in ("sign", "floor", "ceil", "rint", "trunc", "isnan", "isfinite", "isinf", "signbit"):
    op(_n, differentiable=False)
op("round", "x, decimals=0", ("x",), differentiable=False)     # (rint, to decimals places)

# --- elementwise, two array operands (operators keep operator syntax) --------------------------
BINARY_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
                    "power": "**", "matmul": "@"}
for _n, _sym in BINARY_OPERATORS.items():
    op(_n, "x, y", ("x", "y"), code="{x} " + _sym + " {y}")
for _n in ("maximum", "minimum", "arctan2", "hypot", "logaddexp"):
    op(_n, "x, y", ("x", "y"))
op("floor_divide", "x, y", ("x", "y"), code="{x} // {y}", differentiable=False)
op("remainder", "x, y", ("x", "y"), code="{x} % {y}")
op("where", "condition, x, y", ("x", "y"), conditions=("condition",))
op("clip", "a, a_min=None, a_max=None", ("a", "a_min", "a_max"))

# --- reductions ------------------------------------------------------------------------------
for _n in ("sum", "mean", "max", "min", "prod"):
    op(_n, "a, axis=None, keepdims=False", ("a",))
for _n in ("var", "std"):
    op(_n, "a, axis=None, ddof=0, keepdims=False", ("a",))
op("argmax", "a, axis=None, keepdims=None", ("a",), differentiable=False)
op("argmin", "a, axis=None, keepdims=None", ("a",), differentiable=False)
op("cumsum", "a, axis=None", ("a",))
op("argsort", "a, axis=-1, kind=None, order=None, *, stable=True, descending=False", ("a",),
   differentiable=False)
for _n in ("any", "all"):
    op(_n, "a, axis=None, keepdims=False", ("a",), differentiable=False)

# --- products ----------------------------------------------------------------------------------
op("dot", "a, b", ("a", "b"))
op("outer", "a, b", ("a", "b"))

# --- shapes ----------------------------------------------------------------------------------
op("reshape", "a, newshape", ("a",), code="{a}.reshape({newshape})")
op("ravel", "a", ("a",))
op("transpose", "a, axes=None", ("a",))
op("swapaxes", "a, axis1, axis2", ("a",))
op("expand_dims", "a, axis", ("a",))
op("squeeze", "a, axis=None", ("a",))
op("broadcast_to", "array, shape", ("array",))
op("concatenate", "arrays, axis=0", (), sequence="arrays")
op("stack", "arrays, axis=0", (), sequence="arrays")
op("astype", "x, dtype", ("x",), code="{x}.astype({dtype})")
# ops whose result is a list of arrays (a container value)
SPLIT_OPS = ("split", "array_split", "hsplit", "vsplit", "dsplit")
for _n in SPLIT_OPS:
    op(_n, "ary, indices_or_sections" + (", axis=0" if _n.endswith("y_split") or _n == "split"
                                         else ""), ("ary",))

# --- indexing and structure ---------------------------------------------------------------------
op("getitem", "a, idx", ("a",), code="{a}[{idx}]")
# (.at[...] methods carry the user's keywords: `mode` says what an out-of-range index does,
# ad/index_modes.py what that means for the rules)
_AT_KW = "indices_are_sorted=False, unique_indices=False, mode=None"
op("at_get", "a, idx, " + _AT_KW + ", fill_value=None", ("a",), code="{a}.at[{idx}].get({static})")
op("at_set", "a, idx, values, " + _AT_KW, ("a", "values"),
   code="{a}.at[{idx}].set({values}{static})")
op("at_add", "a, idx, values, " + _AT_KW, ("a", "values"),
   code="{a}.at[{idx}].add({values}{static})")
op("field", "tree, key", ("tree",), code="{tree}[{key}]")
op("attribute", "tree, name", ("tree",), code="{tree}.{name}")
# getattr(tree, k) with a name known only when the code runs (a loop over field names): the
# attribute read, its cotangent the container's with that attribute set (grad_of_fields)
op("getattr", "tree, name", ("tree",), code="getattr({tree}, {name})")
op("add_n", "arrays", (), code="sum({arrays})", sequence="arrays")
# the cotangent of a container from its fields' cotangents (ad/helpers.py), in generated code
# that is differentiated again (second order): linear in the fields
op("grad_of_fields", "tree, fields", (), code="grad_of_fields({tree}, {fields})",
   sequence="fields")
# the cotangent of x in the dict merge `x | {k: v}` (ad/helpers.py unmerge: grads' entries at
# x's keys, zeros at the replaced ones) and its transpose: linear in grads, x a structure only
op("unmerge", "grads, x, keys", ("grads", "x"), code="unmerge({grads}, {x}, {keys})")
op("unmerge_grad", "t, grads, x, keys", ("t", "grads", "x"),
   code="unmerge_grad({t}, {grads}, {x}, {keys})")
# the cotangent of dict y in the merge `x | y` (ad/helpers.py pick: grads' entries at y's
# keys): linear in grads, y a structure only; unmerge(grads, y, ()) by another name
op("pick", "grads, y", ("grads", "y"), code="pick({grads}, {y})")
# ... and its batched form (batching/helpers.py), in a batched derivative differentiated again
op("grad_of_fields_batched", "tree, fields, n, tree_batched", (),
   code="grad_of_fields_batched({tree}, {fields}, {n}, {tree_batched})", sequence="fields")
# its transpose (ad/helpers.py fields_of): the fields at `keys` of a container's cotangent, as a
# tuple, in a derivative differentiated again (third order): linear in tree
op("fields_of", "tree, keys", ("tree",), code="fields_of({tree}, {keys})")
# ... and its batched form (batching/helpers.py; a batched cotangent: its last argument True)
op("fields_of_batched", "tree, keys, n", ("tree",),
   code="fields_of_batched({tree}, {keys}, {n}, True)")
# the cotangents of `a + b` of lists (ad/helpers.py split_at): (x[:n], x[n:]), linear in x
op("split_at", "x, n", ("x",), code="split_at({x}, {n})")
# containers of tracked values (transformer/containers.py): a list/tuple/dict literal bound to a
# name or returned, `a + b` of lists (a loop's `out.append(v)`), `d | {k: v}` of dicts
op("pack", "items", (), code="{items}", sequence="items")
op("concat_seq", "x, y", ("x", "y"), code="{x} + {y}")
op("dict_merge", "x, y", ("x", "y"), code="{x} | {y}")
# tuple(c) / list(c) of a tracked list / tuple: the other kind of container (`back`: the
# kind it was, for its cotangent)
op("seq_as", "x, kind, back", ("x",), code="{kind}({x})")
# a cotangent added into a container's item (ad/helpers.py add_at: `tree.at[idx].add(item)` for
# an array), in a derivative differentiated again: linear in tree and item; its transpose in
# item (add_at_grad: the item at idx of a cotangent, shaped as item) is linear in t
op("add_at", "tree, key, item", ("tree", "item"), code="add_at({tree}, {key}, {item})")
op("add_at_grad", "t, key, item", ("t", "item"), code="add_at_grad({t}, {key}, {item})")
# the sum of two cotangents that may be containers (ad/helpers.py add_grads), in a derivative
# differentiated again: linear in both
op("add_grads", "x, y", ("x", "y"), code="add_grads({x}, {y})")
# secant.tree_util inside a transformed function: the pytree's leaves as a list and a tree
# rebuilt from a list (the structure is a run-time value; ad/helpers.py names them). tree_map
# and tree_reduce are written with these by transformer/desugar.py
TREE_OPS = ("tree_leaves", "tree_unflatten", "tree_structure", "tree_leaves_as")
# derivative helpers (ad/helpers.py) read as ops in a derivative differentiated again: their
# operands are pytrees, kept as they are, and their results dicts
DICT_HELPER_OPS = ("unmerge", "unmerge_grad", "pick")
op("tree_leaves", "tree", ("tree",), code="tree_leaves({tree})")
op("tree_unflatten", "treedef, leaves", ("leaves",), code="tree_unflatten({treedef}, {leaves})")
op("tree_leaves_as", "tree, treedef, strict=False", ("tree",),
   code="tree_leaves_as({tree}, {treedef}{static})")
op("tree_structure", "tree, is_leaf=None", ("tree",), code="tree_structure({tree}{static})",
   differentiable=False)
op("stop_gradient", differentiable=False, code="lax.stop_gradient({x})")
# lax.stop_gradient of a pytree of tracked values (normalize.py op_call): same structure out
op("stop_gradient_tree", "tree", ("tree",), differentiable=False,
   code="lax.stop_gradient({tree})")
op("optimization_barrier", code="lax.optimization_barrier({x})")

# --- ones and zeros are constants whatever their argument -----------------------------------------
for _n in ("zeros_like", "ones_like", "empty_like"):
    op(_n, "x, dtype=None, shape=None", ("x",), differentiable=False)

# a call of another user function (rendered by the transform, which knows its generated name)
op("call", "*args", (), differentiable=True)

# secant.lax control flow: calls taking functions (the transform resolves them, lifting inline
# lambdas into functions of their own); rendered and differentiated by the transform itself
CONTROL_FLOW = ("cond", "switch", "fori_loop", "scan", "map", "while_loop")
for _n in CONTROL_FLOW:
    op(_n, "*args", ())

# --- more of the differentiable vocabulary: every differentiable primitive is reachable ----------
# (PRIMITIVE_OPS below names, per primitive, the op that covers it)
op("cumprod", "a, axis=None", ("a",))
op("flip", "m, axis=None", ("m",))
op("fliplr", "m", ("m",))
op("flipud", "m", ("m",))
op("sort", "a, axis=-1, kind=None, order=None, *, stable=True, descending=False", ("a",))
op("argsort", "a, axis=-1, kind=None, order=None, *, stable=True, descending=False", ("a",),
   differentiable=False)
op("pad", "array, pad_width, mode='constant', constant_values=0", ("array", "constant_values"))
op("take", "a, indices, axis=None, mode=None, fill_value=None", ("a",), conditions=("indices",))
op("take_along_axis", "arr, indices, axis, mode=None, fill_value=None", ("arr",),
   conditions=("indices",))
op("moveaxis", "a, source, destination", ("a",))
op("tensordot", "a, b, axes=2", ("a", "b"))
# einsum's operands in slots x0, x1, ... (written back as snp.einsum('ij,jk->ik', a, b)); its
# rules are computed from the subscripts (ad/einsum_rules.py)
EINSUM_OPERANDS = tuple(f"x{i}" for i in range(8))
op("einsum", "subscripts, " + ", ".join(f"{p}=None" for p in EINSUM_OPERANDS)
   + ", *, optimize=None, precision=None, preferred_element_type=None", EINSUM_OPERANDS)
op("at_mul", "a, idx, values, " + _AT_KW, ("a", "values"),
   code="{a}.at[{idx}].mul({values}{static})")
op("at_min", "a, idx, values, " + _AT_KW, ("a", "values"),
   code="{a}.at[{idx}].min({values}{static})")
op("at_max", "a, idx, values, " + _AT_KW, ("a", "values"),
   code="{a}.at[{idx}].max({values}{static})")

# secant.lax, written as lax calls (lax names with numpy's meaning resolve to the numpy op)
for _n in ("erf_inv", "lgamma", "digamma"):
    op(_n, code="lax." + _n + "({x})")
op("integer_pow", "x, y", ("x",), code="lax.integer_pow({x}, {y})")
op("rem", "x, y", ("x", "y"), code="lax.rem({x}, {y})")
op("clamp", "min, x, max", ("min", "x", "max"), code="lax.clamp({min}, {x}, {max})")
for _n in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
    op(_n, "operand, axes", ("operand",), code="lax." + _n + "({operand}, {axes})")
for _n in ("cumsum", "cumprod", "cummax", "cummin"):
    op("lax_" + _n, "operand, axis=0, reverse=False", ("operand",),
       code="lax." + _n + "({operand}{static})")
op("dot_general", "lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None",
   ("lhs", "rhs"), code="lax.dot_general({lhs}, {rhs}, {dimension_numbers}{static})")
op("dynamic_slice", "operand, start_indices, slice_sizes", ("operand",),
   code="lax.dynamic_slice({operand}, {start_indices}, {slice_sizes})")
op("dynamic_update_slice", "operand, update, start_indices", ("operand", "update"),
   code="lax.dynamic_update_slice({operand}, {update}, {start_indices})")
op("lax_pad", "operand, padding_value, padding_config", ("operand", "padding_value"),
   code="lax.pad({operand}, {padding_value}, {padding_config})")
op("lax_slice", "operand, start_indices, limit_indices, strides=None", ("operand",),
   code="lax.slice({operand}, {start_indices}, {limit_indices}{static})")
op("lax_concatenate", "operands, dimension", (), sequence="operands",
   code="lax.concatenate({operands}, {dimension})")
op("broadcast_in_dim", "operand, shape, broadcast_dimensions", ("operand",),
   code="lax.broadcast_in_dim({operand}, {shape}, {broadcast_dimensions})")
op("lax_reshape", "operand, new_sizes, dimensions=None", ("operand",),
   code="lax.reshape({operand}, {new_sizes}{static})")
op("lax_transpose", "operand, permutation", ("operand",),
   code="lax.transpose({operand}, {permutation})")
op("lax_squeeze", "array, dimensions", ("array",), code="lax.squeeze({array}, {dimensions})")
op("lax_expand_dims", "array, dimensions", ("array",),
   code="lax.expand_dims({array}, {dimensions})")
op("rev", "operand, dimensions", ("operand",), code="lax.rev({operand}, {dimensions})")
op("lax_div", "x, y", ("x", "y"), code="lax.div({x}, {y})")
op("select", "pred, on_true, on_false", ("on_true", "on_false"),
   code="lax.select({pred}, {on_true}, {on_false})", conditions=("pred",))
op("convert_element_type", "operand, new_dtype", ("operand",),
   code="lax.convert_element_type({operand}, {new_dtype})")

# comparisons and bitwise operators: constants for the derivative transforms (they read them as
# plain source), but values that carry a batch axis under vmap (only its normaliser emits them)
COMPARE_OPERATORS = {"Gt": ("greater", ">"), "GtE": ("greater_equal", ">="), "Lt": ("less", "<"),
                     "LtE": ("less_equal", "<="), "Eq": ("equal", "=="),
                     "NotEq": ("not_equal", "!=")}
BIT_OPERATORS = {"BitAnd": ("bitwise_and", "&"), "BitOr": ("bitwise_or", "|"),
                 "BitXor": ("bitwise_xor", "^")}
for _n, _sym in list(COMPARE_OPERATORS.values()) + list(BIT_OPERATORS.values()):
    op(_n, "x, y", ("x", "y"), code="{x} " + _sym + " {y}", differentiable=False)
op("invert", code="~{x}", differentiable=False)

# collectives over a named mapped axis (vmap's axis_name, pmap's): `axis_name` is static.
# psum, pmean, all_gather and psum_scatter are linear, with JAX's transposes (ad/vjp_rules.py);
# pmax and pmin have no derivative (nor in JAX): the normaliser refuses them on differentiated
# values (grad of the vmapped function works: vmap writes them as reductions)
for _n in ("psum", "pmean", "pmax", "pmin"):
    op(_n, "x, axis_name", ("x",), code="lax." + _n + "({x}, {axis_name})",
       differentiable=_n in ("psum", "pmean"))
op("all_gather", "x, axis_name, axis=0, tiled=False", ("x",),
   code="lax.all_gather({x}, {axis_name}{static})")
op("axis_index", "axis_name", (), code="lax.axis_index({axis_name})", differentiable=False)
op("axis_size", "axis_name", (), code="lax.axis_size({axis_name})", differentiable=False)
op("psum_scatter", "x, axis_name, scatter_dimension=0, tiled=False", ("x",),
   code="lax.psum_scatter({x}, {axis_name}{static})")
COLLECTIVES = ("psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "axis_size",
               "psum_scatter")

# --- windowed operations (issue 17: convolutions; secant/lax_windows.py) -------------------------
# lax.conv_general_dilated: bilinear in (lhs, rhs); its transposes are convolutions
# (ad/conv_helpers.py), its batching folds the batch axis in (batching/conv_helpers.py)
op("conv_general_dilated", "lhs, rhs, window_strides, padding, lhs_dilation=None, "
   "rhs_dilation=None, dimension_numbers=None, feature_group_count=1, batch_group_count=1, "
   "precision=None, preferred_element_type=None", ("lhs", "rhs"),
   code="lax.conv_general_dilated({lhs}, {rhs}, {window_strides}, {padding}{static})")
WINDOW_LAX_NAMES = {"conv_general_dilated": "conv_general_dilated"}
# --- linear algebra (secant.lax.linalg; secant.numpy.linalg and secant.scipy.linalg are
# written with these, their derivatives in ad/linalg_rules.py) --------------------------------------
LINALG_OPS = ("cholesky", "triangular_solve", "lu_factors", "lu_pivots",
              "lu_pivots_to_permutation")
op("cholesky", "x, symmetrize_input=True", ("x",), code="lax.linalg.cholesky({x}{static})")
op("triangular_solve", "a, b, left_side=False, lower=False, transpose_a=False, "
   "conjugate_a=False, unit_diagonal=False", ("a", "b"),
   code="lax.linalg.triangular_solve({a}, {b}{static})")
op("lu_factors", "x", ("x",), code="lax.linalg.lu_factors({x})")
op("lu_pivots", "x", ("x",), code="lax.linalg.lu_pivots({x})", differentiable=False)
op("lu_pivots_to_permutation", "pivots, permutation_size", ("pivots",),
   code="lax.linalg.lu_pivots_to_permutation({pivots}{static})", differentiable=False)

# x.at[idx].<method>(values) -> op
AT_METHODS = {"set": "at_set", "add": "at_add", "mul": "at_mul", "multiply": "at_mul",
              "min": "at_min", "max": "at_max"}

# Every differentiable primitive of the registry (secant.backends.core.PRIMITIVES), and the
# source-level op whose rule covers it (tests/test_grad_rules.py checks this table is complete).
PRIMITIVE_OPS = {
    "abs": "absolute", "neg": "negative", "sign": "sign",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
    "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "exp": "exp", "exp2": "exp2", "expm1": "expm1",
    "log": "log", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt",
    "logistic": "logistic", "erf": "erf", "erf_inv": "erf_inv", "lgamma": "lgamma",
    "digamma": "digamma", "integer_pow": "integer_pow",
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
    "max": "maximum", "min": "minimum", "atan2": "arctan2", "rem": "rem",
    "select": "where", "clamp": "clip", "convert_element_type": "astype",
    "reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod",
    "cumsum": "cumsum", "cumprod": "cumprod", "cummax": "lax_cummax", "cummin": "lax_cummin",
    "dot_general": "dot_general", "broadcast_in_dim": "broadcast_to", "reshape": "reshape",
    "transpose": "transpose", "squeeze": "squeeze", "expand_dims": "expand_dims",
    "rev": "flip", "slice": "getitem", "concatenate": "concatenate", "pad": "pad",
    "dynamic_slice": "dynamic_slice", "dynamic_update_slice": "dynamic_update_slice",
    "gather": "getitem", "scatter": "at_set", "scatter_add": "at_add", "scatter_mul": "at_mul",
    "scatter_min": "at_min", "scatter_max": "at_max", "sort": "sort",
    "optimization_barrier": "optimization_barrier",
    "conv_general_dilated": "conv_general_dilated",
    # linear algebra
    "cholesky": "cholesky", "triangular_solve": "triangular_solve", "lu": "lu_factors",
}

# --- secant.numpy's existing functions (issue 17): integer-only elementwise ops, no derivative
for _n in ("left_shift", "right_shift", "nextafter"):
    op(_n, "x, y", ("x", "y"), differentiable=False)
# `x << n` / `x >> n`: those ops under vmap, as the bit operators (a batched shift was read as
# an unbatched value and broadcast: every example got the whole batch)
SHIFT_OPERATORS = {"LShift": "left_shift", "RShift": "right_shift"}

# keywords an op's functions accept under another name than its rule's parameter
# (snp.reshape(a, shape=...), JAX's newer spelling of newshape)
KEYWORD_ALIASES = {"reshape": {"shape": "newshape"},
                   "clip": {"min": "a_min", "max": "a_max"}}   # (jnp.clip's newer spelling)

# NumPy's positional order of a reduction's parameters (sum(a, axis, dtype, out, keepdims)): a
# positional argument past `a` is bound by its NumPy name before the op's signature reads it
# (sum(x, 0, f32) bound f32 to keepdims); dtype= becomes a cast (normalize's reduction_dtype)
_SUM_LIKE = ("a", "axis", "dtype", "out", "keepdims")
_MAX_LIKE = ("a", "axis", "out", "keepdims")
NUMPY_POSITIONAL = {**{n: _SUM_LIKE for n in ("sum", "prod", "mean")},
                    **{n: _MAX_LIKE for n in ("max", "min", "any", "all", "argmax", "argmin")},
                    **{n: ("a", "axis", "dtype", "out", "ddof", "keepdims") for n in ("var",
                                                                                       "std")},
                    **{n: ("a", "axis", "dtype", "out") for n in ("cumsum", "cumprod")}}

# --- resolution: which Python objects mean which op ---------------------------------------------
NUMPY_ALIASES = {"absolute": ("abs", "absolute", "fabs"), "true_divide": ("true_divide", "divide"),
                 "max": ("max", "amax"), "min": ("min", "amin"), "arcsin": ("arcsin", "asin"),
                 "arccos": ("arccos", "acos"), "arctan": ("arctan", "atan"),
                 "arctan2": ("arctan2", "atan2"), "arcsinh": ("arcsinh", "asinh"),
                 "arccosh": ("arccosh", "acosh"), "arctanh": ("arctanh", "atanh"),
                 "round": ("round", "around"), "conj": ("conj", "conjugate")}
MATH_NAMES = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
              "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp",
              "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
              "log1p": "log1p", "sqrt": "sqrt", "fabs": "absolute", "atan2": "arctan2",
              "hypot": "hypot", "erf": "erf", "floor": "floor", "ceil": "ceil", "trunc": "trunc"}
BUILTINS = {abs: "absolute", sum: "add_n", max: "maximum", min: "minimum"}
# the operator module's functions: what the operator they name means
OPERATOR_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                  "pow": "power", "matmul": "matmul", "neg": "negative", "pos": "positive",
                  "abs": "absolute", "floordiv": "floor_divide", "mod": "remainder",
                  "getitem": "getitem"}
# methods of arrays -> op (the array is the first operand)
METHODS = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod",
           "var": "var", "std": "std", "argmax": "argmax", "argmin": "argmin",
           "cumsum": "cumsum", "dot": "dot", "reshape": "reshape", "ravel": "ravel",
           "flatten": "ravel", "transpose": "transpose", "swapaxes": "swapaxes",
           "squeeze": "squeeze", "astype": "astype", "clip": "clip", "cumprod": "cumprod",
           "sort": "sort", "argsort": "argsort", "take": "take",
           "copy": "identity"}         # (arrays are immutable: a copy is the value)
# (other methods: the secant.numpy function the array's method is, secant/numpy/methods.py)
STATIC_ATTRIBUTES = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes"}
# secant.lax functions -> op (lax names meaning what the numpy op means map to that op)
LAX_NAMES = {
    **{n: n for n in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "exp2", "expm1", "log",
                      "log1p", "sqrt", "rsqrt", "cbrt", "logistic", "erf", "erf_inv", "lgamma",
                      "digamma", "sign", "floor", "ceil", "integer_pow", "rem", "clamp", "add",
                      "dot_general", "dynamic_slice", "dynamic_update_slice", "broadcast_in_dim",
                      "rev", "select", "convert_element_type", "reduce_sum", "reduce_max",
                      "reduce_min", "reduce_prod", "stop_gradient", "dot",
                      "optimization_barrier", "nextafter")},
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "abs": "absolute", "neg": "negative",
    "sub": "subtract", "mul": "multiply", "div": "lax_div", "pow": "power", "max": "maximum",
    "min": "minimum", "atan2": "arctan2", "is_finite": "isfinite",
    "cumsum": "lax_cumsum", "cumprod": "lax_cumprod", "cummax": "lax_cummax",
    "cummin": "lax_cummin", "pad": "lax_pad", "slice": "lax_slice",
    "concatenate": "lax_concatenate", "reshape": "lax_reshape", "transpose": "lax_transpose",
    "squeeze": "lax_squeeze", "expand_dims": "lax_expand_dims",
    **{n: n for n in COLLECTIVES},
    **WINDOW_LAX_NAMES,
}
# secant.lax functions resolved to an op whose generated code keeps the lax call (ir.Op.spelling):
# lax checks what numpy promotes or accepts (operands of one dtype; lax.dot's ranks) and the
# generated code must raise where the user's code does
LAX_CHECKED = {"add", "sub", "mul", "pow", "max", "min", "atan2", "dot"}


def lax_spelling(obj):
    """`lax.add` for secant.lax.add (a LAX_CHECKED function, by identity), else ""."""
    from secant import lax
    name = getattr(obj, "__name__", "")
    return f"lax.{name}" if name in LAX_CHECKED and getattr(lax, name, None) is obj else ""


# ops that no numpy/secant.numpy function of the same name means
_NOT_NUMPY = {"identity", "field", "attribute", "getattr", "call", "add_n", "select", "invert",
              "pack",
              "grad_of_fields_batched", "fields_of_batched", "unmerge", "unmerge_grad", "pick",
              "concat_seq", "dict_merge", "add_grads", "add_at", "add_at_grad", "seq_as",
              "tree_leaves",
              "tree_unflatten", "tree_structure", "tree_leaves_as"}
BINOPS = {"Add": "add", "Sub": "subtract", "Mult": "multiply", "Div": "true_divide",
          "Pow": "power", "MatMult": "matmul", "FloorDiv": "floor_divide", "Mod": "remainder"}


def _resolution_table():
    from secant import lax
    import secant.numpy as snp
    table = {}
    for name, spec in OPS.items():
        if name in _NOT_NUMPY or (spec.code or "").startswith("lax."):
            continue
        for alias in NUMPY_ALIASES.get(name, (name,)):
            for module in (np, snp):
                obj = getattr(module, alias, None)
                if obj is not None and callable(obj):
                    table.setdefault(id(obj), (obj, name))
    for mname, name in MATH_NAMES.items():
        obj = getattr(math, mname)
        table[id(obj)] = (obj, name)
    for lname, name in LAX_NAMES.items():
        obj = getattr(lax, lname, None)
        if obj is not None:
            table[id(obj)] = (obj, name)
    for obj, name in BUILTINS.items():
        table[id(obj)] = (obj, name)
    from secant import tree_util
    for name in ("tree_leaves", "tree_unflatten", "tree_structure", "tree_leaves_as"):
        obj = getattr(tree_util, name)
        table[id(obj)] = (obj, name)
    from secant import lax_linalg
    for name in LINALG_OPS:
        obj = getattr(lax_linalg, name)
        table[id(obj)] = (obj, name)
    for oname, name in OPERATOR_NAMES.items():
        obj = getattr(operator, oname)
        table[id(obj)] = (obj, name)
    table.update(_submodule_table())
    return table


_TABLE = None


def op_for(obj):
    """The op name a Python object stands for, or None."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _resolution_table()
    hit = _TABLE.get(id(obj))
    return hit[1] if hit is not None and hit[0] is obj else None


def control_flow_for(obj):
    """'cond', 'switch', 'fori_loop', 'scan', 'map' or 'while_loop' for secant.lax's function of
    that name (the object itself, by identity), else None."""
    from secant import lax_control_flow
    for name in CONTROL_FLOW:
        if getattr(lax_control_flow, name) is obj:
            return name
    return None


# --- numpy.linalg, spectral family (secant/numpy/linalg_spectral.py): one op per output of each
# decomposition (the public functions are sources calling them, secant/numpy/linalg_spectral_rules.py)
LINALG_SPECTRAL = {"eigh_values": "a", "eigh_vectors": "a", "svd_values": "a",
                   "svd_u": "a, full_matrices=False", "svd_vh": "a, full_matrices=False",
                   "qr_q": "a, mode='reduced'", "qr_r": "a, mode='reduced'",
                   "eig_values": "a", "eig_vectors": "a",
                   "pinv": "a, rtol=None, hermitian=False, *, rcond=None"}
for _n, _sig in LINALG_SPECTRAL.items():
    _statics = [p.split("=")[0].strip() for p in _sig.split(",")[1:] if p.strip() != "*"]
    op("linalg_" + _n, _sig, ("a",), code=f"snp.linalg_spectral.{_n}({{a}}"
       + "".join(f", {{{p}}}" for p in _statics if _n != "pinv") + "{static})")


def _submodule_table():
    """Ops written `snp.<module>.<function>(...)`: that function of secant.numpy's submodule."""
    import importlib
    table = {}
    for name, spec in OPS.items():
        code = spec.code or ""
        if code.startswith("snp.") and code.count(".", 0, code.find("(")) == 2:
            module, fn = code[4:code.find("(")].split(".")
            obj = getattr(importlib.import_module(f"secant.numpy.{module}"), fn)
            table[id(obj)] = (obj, name)
    return table
# --- complex numbers and the Fourier transform (issue 17: complex, numpy.fft) -------------------
# secant.lax.fft (the one primitive under secant.numpy.fft, whose functions are read as source)
# and secant.lax.complex; lax.real/imag/conj mean the numpy ops
op("lax_fft", "x, fft_type, fft_lengths", ("x",), code="lax.fft({x}, {fft_type}, {fft_lengths})")
op("lax_complex", "x, y", ("x", "y"), code="lax.complex({x}, {y})")
LAX_NAMES.update({"fft": "lax_fft", "complex": "lax_complex", "real": "real", "imag": "imag",
                  "conj": "conj"})
PRIMITIVE_OPS.update({"real": "real", "imag": "imag", "conj": "conj", "complex": "lax_complex",
                      "fft": "lax_fft"})
METHODS.update({"conj": "conj", "conjugate": "conj"})      # z.conj() (z.real, z.imag: normalize)


# --- lax's bit operations (no derivative) and reduce_precision (linear: its tangent and its
# cotangent are rounded the same way, as JAX's)
LAX_BIT_OPS = {"population_count": "x", "clz": "x", "shift_left": "x, y",
               "shift_right_logical": "x, y", "shift_right_arithmetic": "x, y"}
for _n, _sig in LAX_BIT_OPS.items():
    op(_n, _sig, tuple(_sig.split(", ")), differentiable=False,
       code=f"lax.{_n}(" + ", ".join("{" + p + "}" for p in _sig.split(", ")) + ")")
op("bitcast_convert_type", "operand, new_dtype", ("operand",), differentiable=False,
   code="lax.bitcast_convert_type({operand}, {new_dtype})")     # (equal widths: elementwise)
op("reduce_precision", "operand, exponent_bits, mantissa_bits", ("operand",),
   code="lax.reduce_precision({operand}, {exponent_bits}, {mantissa_bits})")
LAX_NAMES.update({n: n for n in (*LAX_BIT_OPS, "bitcast_convert_type", "reduce_precision")})
# (lax's bitwise functions mean the bit operators' ops: lax checks the dtypes first)
LAX_NAMES.update({"bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
                  "bitwise_xor": "bitwise_xor", "bitwise_not": "invert"})
PRIMITIVE_OPS["reduce_precision"] = "reduce_precision"
# lax.round (half away from zero by default; elementwise, derivative zero as jnp.round's)
op("lax_round", "x, rounding_method=0", ("x",), differentiable=False,
   code="lax.round({x}{static})")
LAX_NAMES["round"] = "lax_round"
