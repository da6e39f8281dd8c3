"""Lowerings of the windowed primitives: conv_general_dilated to stablehlo.convolution,
reduce_window to stablehlo.reduce_window (generic syntax, its region written out)."""
from secant.backends.emitter import ttype
from secant.backends.lowering.common import lowering
from secant.backends.lowering.structural import _combiner, _i64s, _region, _scalar
from secant.backends.primitives.conv import _identity


def _layout(spec, batch, feature):
    """A spec as StableHLO's dim_numbers layout: [b, f, 0, 1] (positions of each dim)."""
    names = [""] * len(spec)
    names[spec[0]], names[spec[1]] = batch, feature
    for k, d in enumerate(spec[2:]):
        names[d] = str(k)
    return "[" + ", ".join(names) + "]"


@lowering("conv_general_dilated")
def _conv(b, avals, out, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
          dimension_numbers, feature_group_count=1, batch_group_count=1,
          preferred_element_type=None):
    la, ra = avals
    lhs, rhs = b.convert(lhs, la, out.dtype), b.convert(rhs, ra, out.dtype)
    la, ra = la.update(dtype=out.dtype), ra.update(dtype=out.dtype)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dims = (f"{_layout(lhs_spec, 'b', 'f')}x{_layout(rhs_spec, 'o', 'i')}->"
            f"{_layout(out_spec, 'b', 'f')}")
    window = ""
    if window_strides:
        pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
        window = (f", window = {{stride = {list(window_strides)}, pad = [{pads}], "
                  f"lhs_dilate = {list(lhs_dilation)}, rhs_dilate = {list(rhs_dilation)}}}")
    return b.op(f"stablehlo.convolution({lhs}, {rhs}) dim_numbers = {dims}{window} "
                f"{{batch_group_count = {batch_group_count} : i64, feature_group_count = "
                f"{feature_group_count} : i64}} : ({ttype(la)}, {ttype(ra)}) -> {ttype(out)}")


@lowering("reduce_window")
def _reduce_window(b, avals, out, x, kind, window_dimensions, window_strides, padding,
                   base_dilation, window_dilation):
    dt = out.dtype
    init = b.constant(_identity(kind, dt), dt)
    combine = _combiner(kind, dt)
    region = _region(b, [dt, dt], [dt],
                     lambda r, p, q: [r.op(f"{combine} {p}, {q} : {_scalar(dt)}")])
    pads = [list(p) for p in padding]
    return b.op(f'"stablehlo.reduce_window"({x}, {init}) {region} '
                f"{{window_dimensions = {_i64s(window_dimensions)}, window_strides = "
                f"{_i64s(window_strides)}, base_dilations = {_i64s(base_dilation)}, "
                f"window_dilations = {_i64s(window_dilation)}, padding = dense<{pads}> : "
                f"tensor<{len(pads)}x2xi64>}} : ({ttype(avals[0])}, {_scalar(dt)}) -> "
                f"{ttype(out)}")
