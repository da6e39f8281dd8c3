"""A statement-by-statement rewriter that may bind parts of a statement to names just before it
(desugar.py's tree calls, star_calls.py's call sites).

A subclass's visitors append `x = ...` statements to `self.pre`; `visit_body` puts them before
the statement being rewritten (`self.stmt`). Parts evaluated only sometimes (`a if c else b`,
`and`/`or`) or in a scope of their own (lambda bodies, comprehensions past their first
iterable) are visited with `self.lazy` raised: nothing there may be hoisted, since the
statement would then evaluate it always, or outside its scope.
"""
import gast


class Hoister(gast.NodeTransformer):
    pre, lazy, stmt = (), 0, None
    nested_defs = False     # whether the bodies of nested defs are rewritten too

    def visit_body(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.FunctionDef) and self.nested_defs:
                s.body = self.visit_body(s.body)
            if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
                out.append(s)
                continue
            for field in ("body", "orelse", "finalbody"):      # blocks of if/for/while/with/try
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.visit_body(getattr(s, field)))
            self.pre, self.lazy, self.stmt = [], 0, s
            for field, value in gast.iter_fields(s):
                if field in ("body", "orelse", "finalbody", "handlers"):
                    continue
                if isinstance(value, gast.AST):
                    setattr(s, field, self.visit(value))
                elif isinstance(value, list):
                    setattr(s, field, [self.visit(v) if isinstance(v, gast.AST) else v
                                       for v in value])
            out.extend(self.pre + [s])
        return out

    def _lazily(self, node):
        self.lazy += 1
        try:
            return self.generic_visit(node)
        finally:
            self.lazy -= 1

    def _comprehension(self, node):
        """The first iterable of a comprehension is evaluated where it is written, once and
        always (`[sum(c) for c in zip(*rows)]`): visited as the statement's own part; the
        rest runs in the comprehension's scope, lazily."""
        first = node.generators[0]
        first.iter = self.visit(first.iter)
        self.lazy += 1
        try:
            for field, value in gast.iter_fields(node):
                if isinstance(value, gast.AST):
                    setattr(node, field, self.visit(value))
            first.target = self.visit(first.target)
            first.ifs = [self.visit(c) for c in first.ifs]
            node.generators[1:] = [self.visit(g) for g in node.generators[1:]]
        finally:
            self.lazy -= 1
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension
    visit_Lambda = visit_IfExp = visit_BoolOp = _lazily
