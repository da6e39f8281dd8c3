"""The canonical form as Python text: what grad, jvp and vmap read, one op per line, each under
the user's line it comes from (`secant.source(f, stage="normalised")`)."""
from secant.transformer import ir
from secant.transformer.normalize import call_args
from secant.transformer.ops import CONTROL_FLOW, OPS


def _src(o):
    if isinstance(o, ir.Var):
        return o.name
    if isinstance(o, ir.Seq):
        items = [_src(i) for i in o.items]
        if o.kind == "dict":
            return "{" + ", ".join(f"{k}: {v}" for k, v in zip(o.keys, items)) + "}"
        if o.kind == "tuple":
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        return f"[{', '.join(items)}]"
    return o.as_operand()


def _op(op):
    operands = {k: _src(v) for k, v in op.operands.items()}
    if op.op == "call":
        return f"{op.callee_name}({call_args(operands)})"
    if op.op in CONTROL_FLOW:       # its functions are read on their own: the call as written
        return op.statics["forward"]
    return OPS[op.op].render(operands, op.statics, op.spelling)


def _block(statements, indent, out, last):
    pad = "    " * indent
    for s in statements:
        origin = getattr(s, "origin", None)
        if origin is not None and origin.text != last[0]:
            out.append(f"{pad}# {origin.text}")
            last[0] = origin.text
        if isinstance(s, ir.Op):
            out.append(f"{pad}{', '.join(s.targets)} = {_op(s)}")
        elif isinstance(s, ir.Plain):
            out.extend(pad + line for line in s.code.splitlines())
        elif isinstance(s, ir.Return):
            out.append(f"{pad}return {_src(s.value)}")
        elif isinstance(s, ir.If):
            out.append(f"{pad}if {s.test}:")
            _block(s.body, indent + 1, out, last) if s.body else out.append(pad + "    pass")
            if s.orelse:
                out.append(f"{pad}else:")
                _block(s.orelse, indent + 1, out, last)
        else:       # For, While (their bodies end by copying the carried values)
            head = f"for {s.target} in {s.iterable}:" if isinstance(s, ir.For) else \
                f"while {s.test}:"
            out.append(pad + head)
            _block(s.body, indent + 1, out, last)


def to_source(fn):
    """Python text of an ir.Function."""
    out = [f"def {fn.name}({fn.args_src}):"]
    last = [None]
    _block(fn.body, 1, out, last)
    if fn.result is not None:
        _block([fn.result], 1, out, last)
    return "\n".join(out) + "\n"
