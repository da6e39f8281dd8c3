"""gast.parse, about twice as fast: the same tree (every node, field, location and node
identity as gast's own conversion from ast makes them), read by a converter that looks each
node class's visitor and gast class up once instead of once per node. A transform parses each
function's whole source (issue 19: transformation time), where gast's generic conversion cost
more than the transform of a straight-line function's statements."""
import ast

import gast
from gast.ast3 import Ast3ToGAst

_MISSING = object()


class _Converter(Ast3ToGAst):
    """gast's Ast3ToGAst with a faster dispatch and generic conversion (its special visitors,
    visit_Name, visit_arg, visit_FunctionDef, ..., are gast's own)."""
    _visitors = {}          # ast class -> the function converting its nodes
    _targets = {}           # ast class -> the gast class of the same name (None: not in gast)

    def visit(self, node):
        t = type(node)
        f = self._visitors.get(t)
        if f is None:
            f = self._visitors[t] = getattr(type(self), "visit_" + t.__name__,
                                            type(self).generic_visit)
        return f(self, node)

    def _visit(self, node):
        if isinstance(node, ast.AST):
            return self.visit(node)
        if isinstance(node, list):
            return [self._visit(n) for n in node]
        return node

    def generic_visit(self, node):
        t = type(node)
        cls = self._targets.get(t, _MISSING)
        if cls is _MISSING:
            cls = self._targets[t] = getattr(gast, t.__name__, None)
        if cls is None:
            return None         # (a node that is not part of gast's tree, as gast does)
        new = cls.__new__(cls)
        d = new.__dict__
        for field in node._fields:
            value = getattr(node, field, _MISSING)
            if value is _MISSING:
                continue
            if isinstance(value, ast.AST):
                value = self.visit(value)
            elif isinstance(value, list):
                value = [self._visit(v) for v in value]
            d[field] = value
        for attr in node._attributes:
            value = getattr(node, attr, _MISSING)
            if value is not _MISSING:
                d[attr] = value
        return new


def parse(source, *args, **kwargs):
    """gast.parse(source, ...)."""
    return to_gast(ast.parse(source, *args, **kwargs))


def to_gast(tree):
    """gast.ast_to_gast(tree): a new gast tree (`tree` is left as it is)."""
    return _Converter().visit(tree)
