"""Lowerings of the complex primitives (stablehlo.real / imag / complex) and of fft
(stablehlo.fft)."""
import numpy as np

from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import LOWERINGS, lowering
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


# --- complex operands of the elementwise ops whose XLA kernels take real ones only ----------------
# Ordering is lexicographic on (real, imag), as NumPy's (XLA's own complex max/min disagree with
# NumPy, and its CPU compiler aborts on a complex LT inside clamp), and is_finite asks both parts.
_REAL_LOWERINGS = {n: LOWERINGS[n] for n in ("lt", "le", "gt", "ge", "max", "min", "clamp",
                                             "is_finite")}


def _parts(b, name, aval, shape):
    """(real, imag) of complex `name` broadcast to `shape`, and the parts' tensor type."""
    name = b.broadcast_to(name, aval, shape)
    t = tensor_type(shape, aval.dtype)
    part = tensor_type(shape, _part_dtype(aval.dtype))
    return (b.op(f'"stablehlo.real"({name}) : ({t}) -> {part}'),
            b.op(f'"stablehlo.imag"({name}) : ({t}) -> {part}'), part)


def _part_dtype(dtype):
    return np.float32 if np.dtype(dtype) == np.complex64 else np.float64


def _lexicographic(b, direction, x, xa, y, ya, shape):
    """x <direction> y on (real, imag) pairs: the real parts decide unless they are equal."""
    xr, xi, part = _parts(b, x, xa, shape)
    yr, yi, _ = _parts(b, y, ya, shape)
    strict = {"LT": "LT", "LE": "LT", "GT": "GT", "GE": "GT"}[direction]
    pred = tensor_type(shape, np.bool_)

    def cmp(d, u, v):
        return b.op(f"stablehlo.compare {d}, {u}, {v}, FLOAT : ({part}, {part}) -> {pred}")
    real_decides = cmp(strict, xr, yr)
    tie = cmp("EQ", xr, yr)
    imag_decides = b.op(f"stablehlo.and {tie}, {cmp(direction, xi, yi)} : {pred}")
    return b.op(f"stablehlo.or {real_decides}, {imag_decides} : {pred}")


def _complex_aware(name, complex_lowering):
    real_lowering = _REAL_LOWERINGS[name]

    def lower(b, avals, out, *operands, **params):
        if not any(np.dtype(a.dtype).kind == "c" for a in avals):
            return real_lowering(b, avals, out, *operands, **params)
        return complex_lowering(b, avals, out, *operands, **params)
    LOWERINGS[name] = lower


def _compare(direction):
    def lower(b, avals, out, x, y):
        return _lexicographic(b, direction, x, avals[0], y, avals[1], out.shape)
    return lower


def _select_by(direction):
    def lower(b, avals, out, x, y):
        x_wins = _lexicographic(b, direction, x, avals[0], y, avals[1], out.shape)
        xb = b.broadcast_to(x, avals[0], out.shape)
        yb = b.broadcast_to(y, avals[1], out.shape)
        return b.op(f"stablehlo.select {x_wins}, {xb}, {yb} : "
                    f"{tensor_type(out.shape, np.bool_)}, {ttype(out)}")
    return lower


def _clamp_complex(b, avals, out, lo, x, hi):
    above = _select_by("GE")(b, (avals[1], avals[0]), out, x, lo)
    return _select_by("LE")(b, (out, avals[2]), out, above, hi)


def _is_finite_complex(b, avals, out, x):
    re, im, part = _parts(b, x, avals[0], avals[0].shape)
    pred = ttype(out)
    fr = b.op(f'"stablehlo.is_finite"({re}) : ({part}) -> {pred}')
    fi = b.op(f'"stablehlo.is_finite"({im}) : ({part}) -> {pred}')
    return b.op(f"stablehlo.and {fr}, {fi} : {pred}")


for _name, _dir in (("lt", "LT"), ("le", "LE"), ("gt", "GT"), ("ge", "GE")):
    _complex_aware(_name, _compare(_dir))
_complex_aware("max", _select_by("GE"))
_complex_aware("min", _select_by("LE"))
_complex_aware("clamp", _clamp_complex)
_complex_aware("is_finite", _is_finite_complex)
