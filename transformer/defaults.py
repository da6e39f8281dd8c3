"""A callee read for one call: parameters the call leaves at constant defaults, specialised.

`def log_softmax(x, axis=-1, where=None)` with `if where is not None: ...` blocks, called as
`log_softmax(x)`: its derivative for that call is generated from the function with `where`
replaced by None and the `if`s that become static folded, so it reads as the function without
`where` would (the blocks are gone, not kept behind a `cond = where is not None` at run time).
Only parameters that steer such a test are specialised (None, True/False, numbers and strings
as defaults; never one the body assigns); the others keep their names. The specialised function
runs the callee's own code (same code object, cells and defaults: a call that leaves the
parameters out means exactly this); only its source, which the transforms read, differs. One per
(callee, parameters left out), so each call shape has its own derivative. Transform-agnostic:
grad, jvp and vmap read it (transformer/normalize.py user_call).
"""
import ast
import inspect
import types
import warnings

from secant.backends.function_cache import FunctionCache
import gast

from secant.backends import once
from secant.transformer.callees import signature_of
from secant.transformer.hygiene import copy_tree

_CONSTANTS = (type(None), bool, int, float, str)
_STATIC_NODES = (gast.Constant, gast.Name, gast.Load, gast.Compare, gast.BoolOp, gast.UnaryOp,
                 gast.Not, gast.And, gast.Or, gast.Is, gast.IsNot, gast.Eq, gast.NotEq,
                 gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.USub)
_SPECIALISED = FunctionCache("specialised_defaults")


def for_call(fn, n_positional, keywords):
    """`fn` as a call with `n_positional` positional arguments and `keywords` reads it (the
    parameters it leaves at constant defaults that steer an `if` specialised), or fn itself."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__secant_generated__", None) \
            is not None or getattr(fn, "__secant_custom__", False):
        return fn
    try:
        sig = signature_of(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return fn
    P = inspect.Parameter
    omitted = {}
    for i, p in enumerate(sig.parameters.values()):
        if p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) or p.default is P.empty:
            continue
        passed = p.name in keywords or (
            p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD) and i < n_positional)
        if not passed and type(p.default) in _CONSTANTS:
            omitted[p.name] = p.default
    if not omitted:
        return fn
    key = (fn, tuple(sorted(omitted)))
    hit = _SPECIALISED.get(key)
    if hit is not None:
        return hit
    return once.build(_SPECIALISED, key, lambda: _specialise(fn, sig, omitted))


def _specialise(fn, sig, omitted):
    from secant.transformer.desugar import desugar
    from secant.transformer.parse import FunctionSource, SourceError, function_source
    try:
        src = function_source(desugar(fn))
    except (SourceError, OSError, TypeError, SyntaxError):
        return fn
    node = copy_tree(src.node)
    stored = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
              and isinstance(n.ctx, (gast.Store, gast.Del))}
    nested = {n.id for s in gast.walk(node) if isinstance(s, (gast.FunctionDef, gast.Lambda))
              and s is not node for n in gast.walk(s.args) if isinstance(n, gast.Name)}
    steering = set()
    for n in gast.walk(node):
        if isinstance(n, (gast.If, gast.IfExp)) and _static(n.test, omitted):
            steering |= {m.id for m in gast.walk(n.test) if isinstance(m, gast.Name)}
    by_identity = {m.id for n in gast.walk(node) if isinstance(n, gast.Compare)
                   and any(isinstance(op, (gast.Is, gast.IsNot)) for op in n.ops)
                   for m in [n.left] + n.comparators if isinstance(m, gast.Name)}
    fixed = {k: v for k, v in omitted.items() if k in steering and k not in stored
             and k not in nested and (k not in by_identity or v is None or type(v) is bool)}
    if not fixed:
        return fn
    node = _Fold(fixed).visit(node)
    a = node.args
    n_pos = len(a.args)
    kept = [p for p in a.args if p.id not in fixed]
    defaults = dict(zip([p.id for p in a.args[n_pos - len(a.defaults):]], a.defaults))
    a.args = kept
    a.defaults = [defaults[p.id] for p in kept if p.id in defaults]
    kw = [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if p.id not in fixed]
    a.kwonlyargs, a.kw_defaults = [p for p, _ in kw], [d for _, d in kw]
    spec = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)      # fn itself when run
    spec.__dict__.update(fn.__dict__)       # (its marks: __secant_functional_init__, ...)
    spec.__kwdefaults__ = fn.__kwdefaults__
    spec.__qualname__ = fn.__qualname__
    spec.__module__ = fn.__module__
    spec.__signature__ = sig.replace(parameters=[p for p in sig.parameters.values()
                                                 if p.name not in fixed])
    spec.__secant_source__ = FunctionSource(spec, node, src.filename, src.first_line, src.lines,
                                            src.globals, src.closure, src.indent,
                                            generated=src.generated)
    spec.__secant_specialises__ = fn
    return spec


def _static(test, names):
    """Whether `test` is built from constants and `names` only (`where is not None`)."""
    return all(isinstance(n, _STATIC_NODES) for n in gast.walk(test)) and all(
        n.id in names for n in gast.walk(test) if isinstance(n, gast.Name))


def _foldable(test):
    """A static test whose value Python would give too: `is` only against None/True/False
    (the identity of other constants is not the default object's)."""
    if not _static(test, ()):
        return False
    for n in gast.walk(test):
        if isinstance(n, gast.Compare):
            sides = [n.left] + n.comparators
            for op, x, y in zip(n.ops, sides, sides[1:]):
                if isinstance(op, (gast.Is, gast.IsNot)) and not any(
                        isinstance(v, gast.Constant) and v.value in (None, True, False)
                        and type(v.value) in (type(None), bool) for v in (x, y)):
                    return False
    return True


def _value(test):
    expr = gast.gast_to_ast(gast.Expression(body=test))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return eval(compile(ast.fix_missing_locations(expr), "<static test>", "eval"),
                    {"__builtins__": {}})


class _Fold(gast.NodeTransformer):
    """The fixed parameters' reads replaced by their values; `if`s on them folded."""

    def __init__(self, fixed):
        self.fixed = fixed

    def visit_Name(self, node):
        if node.id in self.fixed and isinstance(node.ctx, gast.Load):
            return gast.copy_location(gast.Constant(self.fixed[node.id], None), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _foldable(node.test):
            return node.body if _value(node.test) else node.orelse
        return node

    def _block(self, stmts):
        out = []
        for s in stmts:
            s = self.visit(s)
            out.extend(s if isinstance(s, list) else [s])
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                new = self._block(block)
                if not new and (field == "body" or isinstance(node, gast.Try)
                                and field == "finalbody"):
                    new = [gast.copy_location(gast.Pass(), block[0])]
                setattr(node, field, new)
        for field, value in gast.iter_fields(node):
            if field in ("body", "orelse", "finalbody"):
                continue
            if isinstance(value, gast.AST):
                setattr(node, field, self.visit(value))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, gast.AST) else v
                                      for v in value])
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        if _foldable(node.test):
            return self._block(node.body if _value(node.test) else node.orelse)
        return self.generic_visit(node)
