"""A statement-by-statement rewriter that may bind parts of a statement to names just before it
(desugar.py's tree calls, star_calls.py's call sites).

A subclass's visitors append `x = ...` statements to `self.pre`; `visit_body` puts them before
the statement being rewritten (`self.stmt`). Parts evaluated only sometimes (`a if c else b`,
`and`/`or`) or in a scope of their own (lambda bodies, comprehensions) are visited with
`self.lazy` raised: nothing there may be hoisted, since the statement would then evaluate it
always, or outside its scope.
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

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = \
        visit_IfExp = visit_BoolOp = _lazily
