"""Lowerings of the collectives (replica style: `replica_groups` list every replica of the
program, `stablehlo.replica_id` is the index along the pmap axis)."""
from secant.backends import dtypes
from secant.backends.emitter import Body, tensor_type, ttype
from secant.backends.lowering.common import lowering

_OPS = {"add": "add", "max": "maximum", "min": "minimum"}


def _groups(groups):
    rows = ", ".join("[" + ", ".join(str(int(i)) for i in g) + "]" for g in groups)
    return f"dense<[{rows}]> : tensor<{len(groups)}x{len(groups[0])}xi64>"


def _emit_lines(b, text):
    r = b.fresh()
    b.line(f"{r} = {text}")
    return r


@lowering("all_reduce")
def _all_reduce(b, avals, out, x, reducer, groups):
    elem = tensor_type((), avals[0].dtype)
    sub = Body(b.namer, indent=b.indent + "    ")
    sub.loc = b.loc
    p, q = sub.fresh(), sub.fresh()
    op = _OPS[reducer]
    if reducer == "add" and avals[0].dtype.kind == "b":
        op = "or"
    t = sub.op(f"stablehlo.{op} {p}, {q} : {elem}")
    sub.line(f"stablehlo.return {t} : {elem}")
    region = (f"({{\n{b.indent}  ^bb0({p}: {elem}, {q}: {elem}):\n{sub.text()}\n{b.indent}}})")
    return _emit_lines(b, f'"stablehlo.all_reduce"({x}) {region} {{replica_groups = '
                          f'{_groups(groups)}}} : ({ttype(avals[0])}) -> {ttype(out)}')


@lowering("all_gather")
def _all_gather(b, avals, out, x, axis, tiled, groups):
    a = avals[0]
    if not tiled:        # a size-1 axis to gather along
        shape = a.shape[:axis] + (1,) + a.shape[axis:]
        x = b.reshape(x, a, shape)
        a = a.update(shape=shape)
    return b.op(f'"stablehlo.all_gather"({x}) {{all_gather_dim = {int(axis)} : i64, '
                f'replica_groups = {_groups(groups)}}} : ({ttype(a)}) -> {ttype(out)}')


@lowering("collective_permute")
def _collective_permute(b, avals, out, x, pairs, n):
    if not pairs:         # nothing sent anywhere: every replica receives zeros
        return b.constant(0, out.dtype, out.shape)
    text = ", ".join(f"[{int(s)}, {int(t)}]" for s, t in pairs)
    return b.op(f'"stablehlo.collective_permute"({x}) {{source_target_pairs = dense<[{text}]> : '
                f'tensor<{len(pairs)}x2xi64>}} : ({ttype(avals[0])}) -> {ttype(out)}')


@lowering("all_to_all")
def _all_to_all(b, avals, out, x, split_axis, concat_axis, tiled, groups):
    a = avals[0]
    n = len(groups[0])
    if not tiled and split_axis != concat_axis:     # as jax: a size-1 axis to concatenate into
        if split_axis < concat_axis:
            concat_axis += 1
        else:
            split_axis += 1
        shape = a.shape[:concat_axis] + (1,) + a.shape[concat_axis:]
        x = b.reshape(x, a, shape)
        a = a.update(shape=shape)
    shape = list(a.shape)
    shape[split_axis] //= n
    shape[concat_axis] *= n
    r_aval = a.update(shape=tuple(shape))
    r = b.op(f'"stablehlo.all_to_all"({x}) {{split_dimension = {int(split_axis)} : i64, '
             f'concat_dimension = {int(concat_axis)} : i64, split_count = {n} : i64, '
             f'replica_groups = {_groups(groups)}}} : ({ttype(a)}) -> {ttype(r_aval)}')
    return b.reshape(r, r_aval, out.shape)


@lowering("replica_id")
def _replica_id(b, avals, out):
    r = b.op("stablehlo.replica_id : tensor<ui32>")
    return b.op(f"stablehlo.convert {r} : (tensor<ui32>) -> {tensor_type((), dtypes.int32)}")
