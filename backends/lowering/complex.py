"""Lowerings of the complex primitives (stablehlo.real / imag / complex) and of fft
(stablehlo.fft)."""
from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import lowering
from secant.backends.lowering.structural import _i64s


def _part_of(op):
    def lower(b, avals, out, x):
        return b.op(f'"{op}"({x}) : ({ttype(avals[0])}) -> {ttype(out)}')
    return lower


lowering("real")(_part_of("stablehlo.real"))
lowering("imag")(_part_of("stablehlo.imag"))


@lowering("complex")
def _complex(b, avals, out, x, y):
    x = b.broadcast_to(x, avals[0], out.shape)
    y = b.broadcast_to(y, avals[1], out.shape)
    part = tensor_type(out.shape, avals[0].dtype)
    return b.op(f'"stablehlo.complex"({x}, {y}) : ({part}, {part}) -> {ttype(out)}')


@lowering("conj")
def _conj(b, avals, out, x):
    t, part = ttype(out), ttype(avals[0]).replace("complex<f32>", "f32").replace("complex<f64>",
                                                                                  "f64")
    re = b.op(f'"stablehlo.real"({x}) : ({t}) -> {part}')
    im = b.op(f'"stablehlo.imag"({x}) : ({t}) -> {part}')
    neg = b.op(f"stablehlo.negate {im} : {part}")
    return b.op(f'"stablehlo.complex"({re}, {neg}) : ({part}, {part}) -> {t}')


@lowering("fft")
def _fft(b, avals, out, x, fft_type, fft_lengths):
    return b.op(f'"stablehlo.fft"({x}) {{fft_type = #stablehlo<fft_type {fft_type}>, '
                f'fft_length = {_i64s(fft_lengths)}}} : ({ttype(avals[0])}) -> {ttype(out)}')
