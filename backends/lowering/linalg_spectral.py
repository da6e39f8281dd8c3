"""Lowerings of the spectral primitives: calls of the LAPACK kernels jaxlib registers with XLA
(backends/runtime.py register_lapack_targets), as JAX writes them on CPU:

    %r:3 = stablehlo.custom_call @lapack_dsyevd_ffi(%a) {api_version = 4 : i32,
        backend_config = {mode = 86 : ui8, uplo = 76 : ui8},      (characters 'V' and 'L')
        operand_layouts = [...], result_layouts = [...]} : (...) -> (...)

Matrices are column-major inside a batch (layout [r-2, r-1, r-3, ..., 0]); vectors and the
`info` status use the default (row-major) layout. As JAX, the results of a matrix whose `info`
is not 0 (syevd, gesdd, geev: no convergence, or an illegal value such as a NaN input) are NaN;
geqrf and orgqr have no `info` output (they cannot fail on valid arguments)."""
import numpy as np

from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import lowering

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_CHAR = {"V": 86, "N": 78, "L": 76, "A": 65, "S": 83}      # (config ints: i32 attributes)


def _layout(rank, matrix):
    dims = ([rank - 2, rank - 1] + list(range(rank - 3, -1, -1))) if matrix else \
        list(range(rank - 1, -1, -1))
    return f"dense<{dims}> : tensor<{rank}xindex>" if dims else "dense<> : tensor<0xindex>"


def _custom_call(b, kernel, dtype, operands, avals, outs, config, matrices_out):
    """Emit the custom call and return the result names (info last)."""
    from secant.backends.runtime import register_lapack_targets
    register_lapack_targets()
    if dtype.kind == "c":          # the Hermitian / unitary names of the complex kernels
        kernel = {"syevd": "heevd", "orgqr": "ungqr"}.get(kernel, kernel)
    target = f"lapack_{_PREFIX[dtype.name]}{kernel}_ffi"
    config = ", ".join(f"{k} = {v} : i32" if isinstance(v, int) else f"{k} = {_CHAR[v]} : ui8"
                       for k, v in config.items())
    in_layouts = ", ".join(_layout(a.ndim, a.ndim - len(avals[0].shape[:-2]) == 2)
                           for a in avals)
    out_layouts = ", ".join(_layout(len(shape), m) for (shape, _), m in zip(outs, matrices_out))
    out_types = [tensor_type(s, dt) for s, dt in outs]
    return b.op_multi(
        f"stablehlo.custom_call @{target}({', '.join(operands)}) {{api_version = 4 : i32, "
        f"backend_config = {{{config}}}, operand_layouts = [{in_layouts}], "
        f"result_layouts = [{out_layouts}]}} : ({', '.join(ttype(a) for a in avals)}) -> "
        f"({', '.join(out_types)})", len(outs))


def nan_where_failed(b, info, batch, results, ok="EQ"):
    """Each result (name, shape, dtype) where info == 0 (ok="GE": info >= 0), NaN elsewhere:
    the matrices of the batch whose factorisation failed."""
    info_t = tensor_type(batch, np.int32)
    zero = b.constant(0, np.int32, batch)
    good = b.op(f"stablehlo.compare {ok}, {info}, {zero}, SIGNED : ({info_t}, {info_t}) -> "
                f"{tensor_type(batch, np.bool_)}")
    out = []
    for name, shape, dtype in results:
        t = tensor_type(shape, dtype)
        mask_t = tensor_type(shape, np.bool_)
        mask = b.op(f"stablehlo.broadcast_in_dim {good}, dims = {list(range(len(batch)))} : "
                    f"({tensor_type(batch, np.bool_)}) -> {mask_t}")
        nan = b.op(f"stablehlo.broadcast_in_dim {b.constant(np.nan, dtype)}, dims = [] : "
                   f"({tensor_type((), dtype)}) -> {t}")
        out.append(b.op(f"stablehlo.select {mask}, {name}, {nan} : {mask_t}, {t}"))
    return out


@lowering("eigh")
def _eigh(b, avals, outs, a):
    w, v = outs
    info = (avals[0].shape[:-2], "int32")
    v_out, w_out, status = _custom_call(b, "syevd", avals[0].dtype, [a], avals,
                                        [(v.shape, v.dtype), (w.shape, w.dtype), info],
                                        {"mode": "V", "uplo": "L"}, [True, False, False])
    return nan_where_failed(b, status, info[0], [(w_out, w.shape, w.dtype),
                                                  (v_out, v.shape, v.dtype)])


@lowering("svd")
def _svd(b, avals, outs, a, full_matrices, compute_uv):
    x = avals[0]
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = min(m, n)
    s = outs[0]
    cu, cv = (m, n) if full_matrices and compute_uv else (k, k)
    mode = "A" if full_matrices and compute_uv else "S"
    res = _custom_call(b, "gesdd", x.dtype, [a], avals,
                       [(x.shape, x.dtype), (s.shape, s.dtype), (batch + (m, cu), x.dtype),
                        (batch + (cv, n), x.dtype), (batch, "int32")],
                       {"mode": mode}, [True, False, True, True, False])
    results = [(res[1], s.shape, s.dtype)]
    if compute_uv:
        results += [(res[2], batch + (m, cu), x.dtype), (res[3], batch + (cv, n), x.dtype)]
    return nan_where_failed(b, res[4], batch, results)


@lowering("geqrf")
def _geqrf(b, avals, outs, a):
    packed, tau = outs
    return _custom_call(b, "geqrf", avals[0].dtype, [a], avals,
                        [(packed.shape, packed.dtype), (tau.shape, tau.dtype)], {},
                        [True, False])


@lowering("householder_product")
def _householder_product(b, avals, outs, packed, tau):
    q = outs[0]
    return _custom_call(b, "orgqr", avals[0].dtype, [packed, tau], avals,
                        [(q.shape, q.dtype)], {}, [True])


@lowering("eig")
def _eig(b, avals, outs, a):
    w, v = outs
    batch = avals[0].shape[:-2]
    res = _custom_call(b, "geev", avals[0].dtype, [a], avals,
                       [(w.shape, w.dtype), (v.shape, v.dtype), (v.shape, v.dtype),
                        (batch, "int32")],
                       {"compute_left": "N", "compute_right": "V"}, [False, True, True, False])
    return nan_where_failed(b, res[3], batch, [(res[0], w.shape, w.dtype),
                                               (res[2], v.shape, v.dtype)])


@lowering("schur")
def _schur(b, avals, outs, a):
    x = avals[0]
    batch = x.shape[:-2]
    values = [(x.shape[:-1], x.dtype)] * (1 if x.dtype.kind == "c" else 2)   # w, or (wr, wi)
    res = _custom_call(b, "gees", x.dtype, [a], avals,
                       [(x.shape, x.dtype), (x.shape, x.dtype)] + values
                       + [(batch, "int32"), (batch, "int32")],
                       {"mode": "V", "sort": "N"},
                       [True, True] + [False] * len(values) + [False, False])
    return nan_where_failed(b, res[-1], batch, [(res[0], x.shape, x.dtype),
                                                (res[1], x.shape, x.dtype)])


@lowering("hessenberg")
def _hessenberg(b, avals, outs, a):
    x = avals[0]
    batch, n = x.shape[:-2], x.shape[-1]
    tau = outs[1]
    res = _custom_call(b, "gehrd", x.dtype, [a], avals,
                       [(x.shape, x.dtype), (tau.shape, tau.dtype), (batch, "int32")],
                       {"low": 1, "high": n}, [True, False, False])
    return nan_where_failed(b, res[2], batch, [(res[0], x.shape, x.dtype),
                                               (res[1], tau.shape, tau.dtype)])
