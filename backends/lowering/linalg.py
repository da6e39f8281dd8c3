"""StableHLO for the linear-algebra primitives (backends/primitives/linalg.py).

cholesky and triangular_solve are StableHLO ops. lu is LAPACK's getrf as a typed-FFI custom
call to the kernel jaxlib registers with XLA (backends/runtime.py lapack_target registers it
before the target name is used): LAPACK is column-major, so the matrix operand and result carry
the layout {rank-2, rank-1, rank-3, ..., 0}; the results are (lu, 1-based pivots, info).
lu_pivots_to_permutation is a StableHLO while loop over the pivots.
"""
import numpy as np

from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import lowering
from secant.backends.lowering.structural import _reduction


def _lower_mask(b, aval):
    """A bool mask of aval's shape: True on and below the diagonal of each matrix."""
    shape_t = tensor_type(aval.shape, np.int32)
    row = b.op(f"stablehlo.iota dim = {aval.ndim - 2} : {shape_t}")
    col = b.op(f"stablehlo.iota dim = {aval.ndim - 1} : {shape_t}")
    return b.op(f"stablehlo.compare GE, {row}, {col}, SIGNED : ({shape_t}, {shape_t}) -> "
                f"{tensor_type(aval.shape, np.bool_)}")


@lowering("cholesky")
def _cholesky(b, avals, out, a):
    factor = b.op(f'"stablehlo.cholesky"({a}) {{lower = true}} : ({ttype(out)}) -> {ttype(out)}')
    # the other triangle is implementation-defined: zeros, as LAPACK's and NumPy's
    zeros = b.constant(0, out.dtype, out.shape)
    lower = b.op(f"stablehlo.select {_lower_mask(b, out)}, {factor}, {zeros} : "
                 f"{tensor_type(out.shape, np.bool_)}, {ttype(out)}")
    # a matrix that is not positive definite: NaN everywhere, as eagerly (the sum of
    # factor * 0 over each matrix is 0, or NaN when any entry is not finite)
    batch = out.update(shape=out.shape[:-2])
    nd = out.ndim
    flags = _reduction("sum")(b, [out], batch,
                              b.op(f"stablehlo.multiply {factor}, {zeros} : {ttype(out)}"),
                              (nd - 2, nd - 1))
    flags = b.op(f"stablehlo.broadcast_in_dim {flags}, dims = {list(range(nd - 2))} : "
                 f"({ttype(batch)}) -> {ttype(out)}")
    return b.op(f"stablehlo.add {lower}, {flags} : {ttype(out)}")


@lowering("triangular_solve")
def _triangular_solve(b, avals, out, a, rhs, left_side, lower, transpose_a, conjugate_a,
                      unit_diagonal):
    a_aval = avals[0]
    complex_ = a_aval.dtype.kind == "c"
    if conjugate_a and complex_ and not transpose_a:
        a = b.op(f"chlo.conj {a} : {ttype(a_aval)} -> {ttype(a_aval)}")
    mode = ("ADJOINT" if conjugate_a and complex_ else "TRANSPOSE") if transpose_a \
        else "NO_TRANSPOSE"
    flag = lambda v: "true" if v else "false"  # noqa: E731
    return b.op(f'"stablehlo.triangular_solve"({a}, {rhs}) {{left_side = {flag(left_side)}, '
                f"lower = {flag(lower)}, unit_diagonal = {flag(unit_diagonal)}, "
                f"transpose_a = #stablehlo<transpose {mode}>}} : "
                f"({ttype(a_aval)}, {ttype(avals[1])}) -> {ttype(out)}")


def _layout(dims):
    return f"dense<{list(dims)}> : tensor<{len(dims)}xindex>" if dims else \
        "dense<> : tensor<0xindex>"


@lowering("lu")
def _lu(b, avals, outs, a):
    from secant.backends import runtime
    aval = avals[0]
    lu_aval, piv_aval = outs
    r = aval.ndim
    target = runtime.lapack_target("getrf", aval.dtype)
    matrix_layout = _layout([r - 2, r - 1] + list(range(r - 3, -1, -1)))
    info_t = tensor_type(aval.shape[:-2], np.int32)
    res = b.op_multi(
        f"stablehlo.custom_call @{target}({a}) {{api_version = 4 : i32, backend_config = {{}}, "
        f"operand_layouts = [{matrix_layout}], output_operand_aliases = "
        f"[#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, "
        f"operand_tuple_indices = []>], result_layouts = [{matrix_layout}, "
        f"{_layout(list(range(r - 2, -1, -1)))}, {_layout(list(range(r - 3, -1, -1)))}]}} : "
        f"({ttype(aval)}) -> ({ttype(lu_aval)}, {ttype(piv_aval)}, {info_t})", 3)
    one = b.constant(1, np.int32, piv_aval.shape)
    pivots = b.op(f"stablehlo.subtract {res[1]}, {one} : {ttype(piv_aval)}")
    # as JAX: NaN factors only where info < 0 (an illegal argument); info > 0 (an exactly zero
    # pivot, a singular matrix) is a valid factorisation, whose solves give inf / NaN
    from secant.backends.lowering.linalg_spectral import nan_where_failed
    (factors,) = nan_where_failed(b, res[2], aval.shape[:-2],
                                  [(res[0], lu_aval.shape, lu_aval.dtype)], ok="GE")
    return [factors, pivots]


@lowering("lu_pivots_to_permutation")
def _lu_pivots_to_permutation(b, avals, out, pivots, permutation_size):
    """A while loop over the pivots (the swaps are sequential): step i swaps entries i and
    j = pivots[..., i] of the permutation, which starts as iota. perm[j] is read as a masked
    sum (one-hot), so every batch row takes its own j."""
    from secant.backends.emitter import Body
    piv = avals[0]
    batch, steps = piv.shape[:-1], piv.shape[-1]
    nb = len(batch)
    perm_t, piv_t, i_t = ttype(out), ttype(piv), tensor_type((), np.int32)
    bool_t = tensor_type(out.shape, np.bool_)
    col_t = tensor_type(batch + (1,), np.int32)
    perm0 = b.op(f"stablehlo.iota dim = {nb} : {perm_t}")
    if steps == 0:
        return perm0

    def region():
        body = Body(b.namer, b.indent + "    ")
        return body, body.fresh(), body.fresh()

    def text(body, i, perm):
        return ("{\n" + body.indent[:-2] + f"^bb0({i}: {i_t}, {perm}: {perm_t}):\n"
                + body.text() + "\n" + body.indent[:-4] + "}")

    cond, ci, cperm = region()
    last = cond.constant(steps, np.int32)
    more = cond.op(f"stablehlo.compare LT, {ci}, {last}, SIGNED : ({i_t}, {i_t}) -> "
                   f"{tensor_type((), np.bool_)}")
    cond.line(f"stablehlo.return {more} : {tensor_type((), np.bool_)}")

    body, i, perm = region()
    zero = body.constant(0, np.int32)
    starts = ", ".join([zero] * nb + [i])
    j = body.op(f"stablehlo.dynamic_slice {pivots}, {starts}, sizes = {list(batch) + [1]} : "
                f"({piv_t}, {', '.join([i_t] * (nb + 1))}) -> {col_t}")
    perm_i = body.op(f"stablehlo.dynamic_slice {perm}, {starts}, sizes = {list(batch) + [1]} : "
                     f"({perm_t}, {', '.join([i_t] * (nb + 1))}) -> {col_t}")
    dims = list(range(nb + 1))
    j_b = body.op(f"stablehlo.broadcast_in_dim {j}, dims = {dims} : ({col_t}) -> {perm_t}")
    perm_i_b = body.op(f"stablehlo.broadcast_in_dim {perm_i}, dims = {dims} : ({col_t}) -> "
                       f"{perm_t}")
    i_b = body.op(f"stablehlo.broadcast_in_dim {i}, dims = [] : ({i_t}) -> {perm_t}")
    positions = body.op(f"stablehlo.iota dim = {nb} : {perm_t}")
    at_j = body.op(f"stablehlo.compare EQ, {positions}, {j_b}, SIGNED : ({perm_t}, {perm_t}) -> "
                   f"{bool_t}")
    at_i = body.op(f"stablehlo.compare EQ, {positions}, {i_b}, SIGNED : ({perm_t}, {perm_t}) -> "
                   f"{bool_t}")
    zeros = body.constant(0, np.int32, out.shape)
    picked = body.op(f"stablehlo.select {at_j}, {perm}, {zeros} : {bool_t}, {perm_t}")
    batch_aval = out.update(shape=batch)
    perm_j = _reduction("sum")(body, [out], batch_aval, picked, (nb,))
    perm_j_b = body.op(f"stablehlo.broadcast_in_dim {perm_j}, dims = {list(range(nb))} : "
                       f"({ttype(batch_aval)}) -> {perm_t}")
    swapped = body.op(f"stablehlo.select {at_j}, {perm_i_b}, {perm} : {bool_t}, {perm_t}")
    swapped = body.op(f"stablehlo.select {at_i}, {perm_j_b}, {swapped} : {bool_t}, {perm_t}")
    one = body.constant(1, np.int32)
    i_next = body.op(f"stablehlo.add {i}, {one} : {i_t}")
    body.line(f"stablehlo.return {i_next}, {swapped} : {i_t}, {perm_t}")

    start = b.constant(0, np.int32)
    res = b.op_multi(f'"stablehlo.while"({start}, {perm0}) ({text(cond, ci, cperm)}, '
                     f"{text(body, i, perm)}) : ({i_t}, {perm_t}) -> ({i_t}, {perm_t})", 2)
    return res[1]
