"""host_callback as XLA's CPU host call: `stablehlo.custom_call @xla_ffi_python_cpu_callback`.

The custom call names its Python function by `index`; the lowering writes the callback's
process-wide id there and the PJRT adapter (backends/runtime.py) renumbers the ids of one
program 0..k-1 when it compiles it, handing jaxlib the functions in that order."""
from secant.backends.emitter import ttype
from secant.backends.lowering.common import lowering
from secant.backends.runtime import CALLBACK_TARGET


def _layout(aval):
    """Major to minor: the host sees C-ordered arrays."""
    dims = list(range(len(aval.shape) - 1, -1, -1))
    text = "" if not dims else str(dims[0]) if len(dims) == 1 else str(dims)
    return f"dense<{text}> : tensor<{len(dims)}xindex>"


@lowering("host_callback")
def _host_callback(b, avals, outs, *operands, callback, result_avals, has_side_effect):
    ins = ", ".join(ttype(a) for a in avals)
    res = ", ".join(ttype(a) for a in outs)
    attrs = ('backend_config = "", '
             + ("has_side_effect = true, " if has_side_effect else "")
             + f"mhlo.backend_config = {{index = {callback.id} : ui64}}, "
             f"operand_layouts = [{', '.join(_layout(a) for a in avals)}], "
             f"result_layouts = [{', '.join(_layout(a) for a in outs)}]")
    call = (f"stablehlo.custom_call @{CALLBACK_TARGET}({', '.join(operands)}) {{{attrs}}} "
            f": ({ins}) -> ({res})")
    if not outs:
        b.line(call)
        return []
    if len(outs) == 1:
        return [b.op(call)]
    return b.op_multi(call, len(outs))
