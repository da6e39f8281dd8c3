"""Lowerings of gather and the scatter family, in StableHLO's generic op syntax.

The index vector dim is always the last dim of the indices. Scatter's update region combines the
old operand element with the new one: it returns the new one (set), or their sum, product, min
or max.
"""
from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import lowering


def _dims(values):
    return "[" + ", ".join(str(v) for v in values) + "]"


def _attribute(kind, fields):
    """`#stablehlo.<kind><a = [..], ...>`; empty batching fields left out, as StableHLO prints."""
    parts = []
    for key, value in fields:
        if isinstance(value, int):
            parts.append(f"{key} = {value}")
        elif value or not key.endswith("batching_dims"):
            parts.append(f"{key} = {_dims(value)}")
    return f"#stablehlo.{kind}<{', '.join(parts)}>"


@lowering("gather")
def _gather(b, avals, out, operand, indices, dimension_numbers, slice_sizes):
    dn = dimension_numbers
    attr = _attribute("gather", [
        ("offset_dims", dn.offset_dims),
        ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map),
        ("index_vector_dim", avals[1].ndim - 1)])
    sizes = "array<i64" + (": " + ", ".join(map(str, slice_sizes)) if slice_sizes else "") + ">"
    return b.op(f'"stablehlo.gather"({operand}, {indices}) {{dimension_numbers = {attr}, '
                f'slice_sizes = {sizes}, indices_are_sorted = false}} : '
                f'({ttype(avals[0])}, {ttype(avals[1])}) -> {ttype(out)}')


COMBINERS = {"scatter": None, "scatter_add": "stablehlo.add",
             "scatter_mul": "stablehlo.multiply", "scatter_min": "stablehlo.minimum",
             "scatter_max": "stablehlo.maximum"}


def _scatter(combiner):
    def lower(b, avals, out, operand, indices, updates, dimension_numbers,
              indices_are_sorted=False, unique_indices=False):
        dn = dimension_numbers
        if out.ndim == 0 and avals[1].ndim > 1:
            return _scalar_scatter(b, avals, out, operand, indices, updates, dn, lower,
                                   indices_are_sorted, unique_indices)
        elem = tensor_type((), out.dtype)
        old, new = b.fresh(), b.fresh()
        pad = b.indent + "    "
        if combiner is None:
            region = f"{pad}stablehlo.return {new} : {elem}"
        else:
            r = b.fresh()
            region = (f"{pad}{r} = {combiner} {old}, {new} : {elem}\n"
                      f"{pad}stablehlo.return {r} : {elem}")
        attr = _attribute("scatter", [
            ("update_window_dims", dn.update_window_dims),
            ("inserted_window_dims", dn.inserted_window_dims),
            ("input_batching_dims", dn.operand_batching_dims),
            ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
            ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
            ("index_vector_dim", avals[1].ndim - 1)])
        flags = (f"indices_are_sorted = {str(bool(indices_are_sorted)).lower()}, "
                 f"unique_indices = {str(bool(unique_indices)).lower()}")
        types = ", ".join(ttype(a) for a in avals)
        return b.op(f'"stablehlo.scatter"({operand}, {indices}, {updates}) ({{\n'
                    f"{b.indent}  ^bb0({old}: {elem}, {new}: {elem}):\n{region}\n"
                    f"{b.indent}}}) {{scatter_dimension_numbers = {attr}, {flags}}} : "
                    f"({types}) -> {ttype(out)}")
    return lower


def _scalar_scatter(b, avals, out, operand, indices, updates, dn, lower, indices_are_sorted,
                    unique_indices):
    """XLA's CPU compiler crashes on a 0-d operand with several scatter indices, so scatter into a
    1-element vector instead (every update lands on element 0) and reshape back."""
    one = out.update(shape=(1,))
    batch = avals[1].shape[:-1]
    zeros = b.constant(0, avals[1].dtype, batch + (1,))
    vec = b.reshape(operand, out, (1,))
    vec_dn = type(dn)(inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    index_aval = avals[1].update(shape=batch + (1,))
    r = lower(b, [one, index_aval, avals[2]], one, vec, zeros, updates, vec_dn,
              indices_are_sorted, unique_indices)
    return b.reshape(r, one, ())


for _name, _combiner in COMBINERS.items():
    lowering(_name)(_scatter(_combiner))
