"""The batched function of a secant.custom_vmap function: a short generated function that calls
the user's rule by name (the batching twin of ad/custom_rules.py):

    def f_vmap(x, y):
        batch_size = batch_size_of(x)
        out, out_batched = f_vmap_rule(batch_size, (True, False), x, y)
        return custom_vmap_outputs(out, out_batched, batch_size, f_vmap_rule)

The batched arguments come with their batch axis at 0 and in_batched holds one flag per
argument, as the rule sees them in JAX; outputs the rule marks unbatched are broadcast, so every
output of the generated function is batched (the rule's flags are only known when it runs).

A rule that says every output it returns is batched (`__secant_out_batched__ = True`, a
library's own rule: odeint's per-example solve) is called without reading its flags,

        return f_vmap_rule(batch_size, (True, False), x, y)[0]

so a derivative of the batched code (vmap inside jacrev, then jacfwd and vmap of that: vmap of
a hessian) never tracks the flags as values (a vmap of it would broadcast them into arrays).
"""
from secant.codegen.naming import Names

TEMPLATE = """\
def {name}({params}):
{moves}    {size} = {size_src}
    {out}, {out_batched} = {rule}({size}, {in_batched}, {params})
    return custom_vmap_outputs({out}, {out_batched}, {size}, {rule})
"""
BATCHED_TEMPLATE = """\
def {name}({params}):
{moves}    {size} = {size_src}
    return {rule}({size}, {in_batched}, {params})[0]
"""


def vmap_of_custom_vmap(custom, params, wrt, in_axes=(), axis_size=None):
    """(source, name, free) of the batched custom_vmap function, batched in params[wrt]."""
    names = Names(params)
    rule_name = getattr(custom.vmap_rule, "__name__", "")
    rule = names.fresh(rule_name if rule_name.isidentifier() else f"{custom.__name__}_vmap_rule")
    name = names.fresh(f"{custom.__name__}_vmap")
    size, out, out_batched = (names.fresh(n) for n in ("batch_size", "out", "out_batched"))
    flags = [i in wrt for i in range(len(params))]
    in_batched = f"({flags[0]},)" if len(flags) == 1 else f"({', '.join(map(str, flags))})"
    moves = "".join(f"    {params[i]} = snp.moveaxis({params[i]}, {axis}, 0)\n"
                    for i, axis in in_axes if axis != 0)
    size_src = f"batch_size_of({params[wrt[0]]})" if wrt else str(int(axis_size))
    always = getattr(custom.vmap_rule, "__secant_out_batched__", None) is True
    source = (BATCHED_TEMPLATE if always else TEMPLATE).format(
        name=name, params=", ".join(params), moves=moves, size=size, size_src=size_src, out=out,
        out_batched=out_batched, rule=rule, in_batched=in_batched)
    return source, name, {rule: custom.vmap_rule}
