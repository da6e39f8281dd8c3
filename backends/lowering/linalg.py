"""StableHLO for the linear-algebra primitives (backends/primitives/linalg.py).

cholesky and triangular_solve are StableHLO ops. lu is LAPACK's getrf as a typed-FFI custom
call to the kernel jaxlib registers with XLA (backends/runtime.py lapack_target registers it
before the target name is used): LAPACK is column-major, so the matrix operand and result carry
the layout {rank-2, rank-1, rank-3, ..., 0}; the results are (lu, 1-based pivots, info).
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
    return [res[0], pivots]
