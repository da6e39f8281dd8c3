"""A function a user's factory makes, built from traced values where it is called:

    def make_loss(f, s):                    make_loss(f, s)(p)        is read as
        def loss(p):                        make_loss_called(f, s, p), with
            return f(p, s) * s
        return loss                         def make_loss_called(f, s, p):
                                                def loss(p):
                                                    return f(p, s) * s
                                                return loss(p)

so derivatives and batching flow through `s` into the nested function as through any nested
def's free locals (`grad(make_loss(f, s))(p)` reads `grad(lambda p: make_loss(f, s)(p))(p)`,
transformer/normalize.py). A factory qualifies when it takes plain positional parameters, closes
over nothing itself, and ends by returning a function it defines (its only return); any other
keeps the normaliser's clear error."""
import inspect

import gast

from secant.codegen import loader
from secant.transformer.parse import FunctionSource, SourceError, function_source
from secant.transformer.hygiene import copy_tree

_cache = {}


def _made(node):
    """The name of the nested def that `node` (a FunctionDef) returns last, else None."""
    if not node.body or not isinstance(node.body[-1], gast.Return):
        return None
    value = node.body[-1].value
    defs = {s.name for s in node.body if isinstance(s, gast.FunctionDef)}
    if not isinstance(value, gast.Name) or value.id not in defs:
        return None
    returns = [n for s in node.body[:-1] if not isinstance(s, (gast.FunctionDef, gast.ClassDef))
               for n in _walk_outer(s) if isinstance(n, (gast.Return, gast.Yield, gast.YieldFrom))]
    return None if returns else value.id


def _walk_outer(node):
    """gast.walk, not into nested functions, lambdas or classes."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in gast.iter_child_nodes(n):
            if not isinstance(c, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                                  gast.ClassDef)):
                todo.append(c)


def is_factory(fn):
    """Whether `fn` is a user's function that makes and returns a nested function."""
    return called_form(fn, 0) is not None


def called_form(fn, n_args):
    """`def make_called(<fn's parameters>, a1, ..., an): <fn's body>; return made(a1, ..., an)`
    for a closure factory `fn`, else None."""
    if not inspect.isfunction(fn) or fn.__code__.co_freevars or (
            fn.__module__ or "").split(".")[0] in ("secant", "numpy", "jax"):
        return None
    hit = _cache.get((fn, n_args), ())
    if hit == () or hit is not None and hit[0] is not fn.__code__:
        hit = _build(fn, n_args)
    return None if hit is None else hit[1]


def _build(fn, n_args):
    key = (fn, n_args)
    _cache[key] = None
    try:
        src = function_source(fn)
    except (SourceError, OSError, TypeError):
        return None
    node = src.node
    a = node.args if isinstance(node, gast.FunctionDef) else None
    if a is None or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults \
            or node.decorator_list:
        return None
    made = _made(node)
    if made is None:
        return None
    node = copy_tree(node)
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)} | {made}
    params = []
    for k in range(n_args):
        name = f"arg{k + 1}"
        while name in taken:
            name += "_"
        taken.add(name)
        params.append(name)
    node.args.args = list(node.args.args) + [gast.Name(p, gast.Param(), None, None)
                                             for p in params]
    call = gast.Call(gast.Name(made, gast.Load(), None, None),
                     [gast.Name(p, gast.Load(), None, None) for p in params], [])
    node.body[-1] = gast.copy_location(gast.Return(call), node.body[-1])
    for m in gast.walk(node.body[-1]):
        if isinstance(m, gast.expr):
            gast.copy_location(m, node.body[-1])
    node.name = f"{fn.__name__}_called"
    node.returns = None
    from secant.transformer.functionalize import _Printer
    printer = _Printer(src, {})
    printer.stmt(node, 0)
    source = "\n".join(printer.lines) + "\n"
    out = loader.load(source, node.name, src.globals, {}, printer.origins)
    out.__module__ = fn.__module__
    out.__secant_source__ = FunctionSource(out, gast.parse(source).body[0],
                                           out.__code__.co_filename, 1, source.splitlines(),
                                           src.globals, {}, generated=src.generated)
    out.__secant_user_method__ = True       # the user's code: desugared as any (desugar.py)
    _cache[key] = (fn.__code__, out)
    return _cache[key]
