"""A generated function and every generated function it calls, as one program a reader can
follow: each function printed once, under the name its caller binds it to, no two under one name.

A caller binds each derivative it calls under a name of its own (`_layer_vjp`, and
`_layer_vjp_1` for a second derivative of the same helper); two callers may each bind a
different derivative under the same name (the vjp of `_affine` for x and w in one, for w alone
in the other, both `_affine_vjp`). Where distinct functions would be printed under one name, each
is named by what it differentiates or batches (`_affine_vjp_x_w`, `_affine_vjp_w`), and its
callers' text calls it so: the program reads as it runs.
"""
from secant.codegen.save import _is_generated, _rename, _unwrap


def program(fn):
    """[(name, source)] of the generated function behind `fn` and of every generated function it
    reaches through its closure, breadth first in the order of first call, each under its
    printed name (see the module's docstring)."""
    from secant.transforms import source
    main = _unwrap(fn)
    order, bound, texts = [main], {main: main.__name__}, {}
    calls = {}          # function -> {name in its text: the generated function it calls}
    for f in order:
        texts[f] = text = source(f)
        closure = f.__secant_source__.closure
        calls[f] = {}
        for name in sorted(closure, key=lambda n: (text.find(n), n)):
            value = closure[name]
            if _is_generated(value):
                calls[f][name] = value
                if value not in bound:
                    bound[value] = name
                    order.append(value)
    printed = _printed_names(order, bound)
    out = []
    for f in order:
        mapping = {name: printed[value] for name, value in calls[f].items()}
        mapping[f.__name__] = printed[f]
        out.append((printed[f], _rename(texts[f], mapping)))
    return out


def program_source(fn):
    """The program of `fn` (see `program`) as one text, its functions apart by a blank line."""
    return "\n\n".join(text for _, text in program(fn))


def _printed_names(order, bound):
    """{function: its printed name}: the name its first caller binds it to; distinct functions
    bound under one name each get what it differentiates or batches added (`_affine_vjp_w`)."""
    by_name = {}
    for f in order:
        by_name.setdefault(bound[f], []).append(f)
    taken = set(by_name)
    printed = {}
    for name, fns in by_name.items():
        if len(fns) == 1:
            printed[fns[0]] = name
            continue
        for f in fns:
            wrt = getattr(f, "__secant_wrt_names__", ())
            new = f"{name}_{'_'.join(wrt)}" if wrt else name
            k = 1
            while new in taken:
                k += 1
                new = f"{name}_{'_'.join(wrt)}_{k}" if wrt else f"{name}_{k}"
            taken.add(new)
            printed[f] = new
    return printed
