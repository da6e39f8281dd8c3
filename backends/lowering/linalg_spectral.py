"""Lowerings of the spectral primitives: calls of the LAPACK kernels jaxlib registers with XLA
(backends/runtime.py register_lapack_targets), as JAX writes them on CPU:

    %r:3 = stablehlo.custom_call @lapack_dsyevd_ffi(%a) {api_version = 4 : i32,
        backend_config = {mode = 86 : ui8, uplo = 76 : ui8},      (characters 'V' and 'L')
        operand_layouts = [...], result_layouts = [...]} : (...) -> (...)

Matrices are column-major inside a batch (layout [r-2, r-1, r-3, ..., 0]); vectors and the
`info` status use the default (row-major) layout. The info output is not read yet (JAX masks
the results with NaN where LAPACK reports no convergence; secant returns LAPACK's output)."""
from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import lowering

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_CHAR = {"V": 86, "N": 78, "L": 76, "A": 65, "S": 83}


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
    config = ", ".join(f"{k} = {_CHAR[v]} : ui8" for k, v in config.items())
    in_layouts = ", ".join(_layout(a.ndim, a.ndim - len(avals[0].shape[:-2]) == 2)
                           for a in avals)
    out_layouts = ", ".join(_layout(len(shape), m) for (shape, _), m in zip(outs, matrices_out))
    out_types = [tensor_type(s, dt) for s, dt in outs]
    return b.op_multi(
        f"stablehlo.custom_call @{target}({', '.join(operands)}) {{api_version = 4 : i32, "
        f"backend_config = {{{config}}}, operand_layouts = [{in_layouts}], "
        f"result_layouts = [{out_layouts}]}} : ({', '.join(ttype(a) for a in avals)}) -> "
        f"({', '.join(out_types)})", len(outs))


@lowering("eigh")
def _eigh(b, avals, outs, a):
    w, v = outs
    info = (avals[0].shape[:-2], "int32")
    v_out, w_out, _ = _custom_call(b, "syevd", avals[0].dtype, [a], avals,
                                   [(v.shape, v.dtype), (w.shape, w.dtype), info],
                                   {"mode": "V", "uplo": "L"}, [True, False, False])
    return [w_out, v_out]


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
    return [res[1], res[2], res[3]] if compute_uv else [res[1]]


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
    return [res[0], res[2]]
