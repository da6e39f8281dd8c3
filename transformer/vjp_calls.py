"""`vjp` called inside a function a transform reads (a desugaring step, desugar.py):

    y, pb = vjp(f, a, b)            y = f(pb_a, pb_b)    (pb_a = a, pb_b = b just before)
    ... pb(ct) ...          ->      ... vjp_pullback(f, 2)(pb_a, pb_b, ct) ...

`vjp_pullback(f, n)` (secant/transforms.py) is a transform the normaliser reads like grad: its
generated source takes the primals and the cotangent and returns the n cotangents, so the
transform of the caller differentiates or batches through it (a lambda closing over locals is
lifted as for grad). Only where `pb` is bound once, by this statement, and only ever called.
Written in one expression, `vjp(f, a)[1](ct)` -> `vjp_pullback(f, 1)(a, ct)` and `vjp(f, a)[0]`
-> `f(a)`. `f_t = linear_transpose(f, a)` the same way: f_t(ct) is vjp_pullback(f, 1)(a, ct).

`linearize` the same way, its f_jvp a jvp at the primals (read as any jvp call):

    y, f_jvp = linearize(f, a)      y = f(lin_a)         (lin_a = a just before)
    ... f_jvp(t) ...        ->      ... jvp(f, (lin_a,), (t,))[1] ..."""

import gast

from secant.transformer.hygiene import walk
from secant.transformer.parse import located


def rewrite(d, body):
    """`body` with its vjp pullbacks spelled out; d: the desugarer."""
    census = d.census()
    if census is not None and not any(_may_be_vjp(d, root, chain)
                                      for root, chain in census.call_chains):
        return body         # (no call in the function may call vjp)
    stores, calls, loads = {}, {}, {}
    for n in walk(d.node):
        if isinstance(n, gast.Name):
            kind = stores if isinstance(n.ctx, (gast.Store, gast.Del)) else loads
            kind[n.id] = kind.get(n.id, 0) + 1
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name):
            calls[n.func.id] = calls.get(n.func.id, 0) + 1
    return _Rewriter(d, stores, calls, loads).block(body)


def _may_be_vjp(d, root, chain):
    """Whether a call of `root.chain...` may call secant.vjp (as _Rewriter._is_vjp would find)."""
    from secant.transformer.desugar import ANY
    obj = d.module_callee(root, chain)
    import secant
    return obj is ANY or obj is secant.vjp or obj is secant.linearize or \
        obj is secant.linear_transpose


class _Rewriter(gast.NodeTransformer):
    def __init__(self, d, stores, calls, loads):
        self.d, self.stores, self.calls, self.loads = d, stores, calls, loads
        self.pullbacks = {}         # pb -> (the function node, its primal names, "vjp" or
                                    # "linearize")

    def block(self, stmts):
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list) and not isinstance(
                        s, (gast.FunctionDef, gast.ClassDef)):
                    setattr(s, field, self.block(getattr(s, field)))
            spelled = self._vjp_statement(s)
            if spelled is not None:
                out += spelled
                continue
            out.append(self.visit(s) if (self.pullbacks or _indexed_call(s)) and not isinstance(
                s, (gast.FunctionDef, gast.ClassDef)) else s)
        return out

    def _is_vjp(self, func, kinds=("vjp",)):
        """Whether `func` names secant.vjp (or another of `kinds`: "linearize")."""
        if not isinstance(func, (gast.Name, gast.Attribute)):
            return False
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.d.params or \
                self.stores.get(func.id):
            return False
        kind, obj = self.d.src.resolve_name(func.id)
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        import secant
        return any(obj is getattr(secant, k) for k in kinds)

    def _transpose_statement(self, s):
        """`f_t = linear_transpose(f, *primals)`, f_t only called: f_t(ct) is the pullback of
        the linear f (at the primals given, whose values a linear f's pullback never reads)."""
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)
                and self._is_vjp(s.value.func, ("linear_transpose",))
                and not s.value.keywords and len(s.value.args) >= 2
                and not any(isinstance(a, gast.Starred) for a in s.value.args)):
            return None
        pb = s.targets[0].id
        if self.stores.get(pb) != 1 or self.calls.get(pb, 0) != self.loads.get(pb, 0):
            return None
        fn, primals = s.value.args[0], s.value.args[1:]
        names = [self.d.names.fresh(f"{pb}_primal") for _ in primals]
        self.pullbacks[pb] = (fn, names, "vjp")
        self.d.changed = True
        return [located(gast.Assign(targets=[gast.Name(n, gast.Store(), None, None)], value=p,
                                    type_comment=None), s) for n, p in zip(names, primals)]

    def _vjp_statement(self, s):
        transposed = self._transpose_statement(s)
        if transposed is not None:
            return transposed
        aux = _has_aux(s.value) if isinstance(s, gast.Assign) and \
            isinstance(s.value, gast.Call) else False
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Tuple)
                and len(s.targets[0].elts) == (3 if aux else 2)
                and isinstance(s.targets[0].elts[1], gast.Name)
                and isinstance(s.value, gast.Call)
                and self._is_vjp(s.value.func, ("vjp",) if aux else ("vjp", "linearize"))
                and (aux or not s.value.keywords) and len(s.value.args) >= 2
                and not any(isinstance(a, gast.Starred) for a in s.value.args)):
            return None
        pb = s.targets[0].elts[1].id
        if self.stores.get(pb) != 1 or self.calls.get(pb, 0) != self.loads.get(pb, 0):
            return None             # (pb passed on or bound again: read as written)
        fn, primals = s.value.args[0], s.value.args[1:]
        kind = "vjp" if self._is_vjp(s.value.func) else "linearize"
        names = [self.d.names.fresh(f"{pb}_primal" if kind == "vjp" else "lin_primal")
                 for _ in primals]
        pre = [located(gast.Assign(targets=[gast.Name(n, gast.Store(), None, None)], value=p,
                                   type_comment=None), s) for n, p in zip(names, primals)]
        call = gast.Call(func=fn, args=[gast.Name(n, gast.Load(), None, None) for n in names],
                         keywords=[])
        out = s.targets[0].elts[0] if not aux else gast.Tuple(
            [s.targets[0].elts[0], s.targets[0].elts[2]], gast.Store())
        first = located(gast.Assign(targets=[out], value=call, type_comment=None), s)
        if aux:     # y, pb, aux = vjp(f, a, has_aux=True): y, aux = f(a); pb pulls back
            fn = self._first_output(fn, len(primals), s)    # f's first output only
        self.pullbacks[pb] = (fn, names, kind)
        self.d.changed = True
        return pre + [first]

    def _first_output(self, fn, n, at):
        """`lambda a_0, ...: fn(a_0, ...)[0]`: the function whose pullback vjp's has_aux gives"""
        import copy
        params = [self.d.names.fresh("aux_arg") for _ in range(n)]
        lam = gast.parse(f"lambda {', '.join(params)}: _f({', '.join(params)})[0]"
                         ).body[0].value
        lam.body.value.func = copy.deepcopy(fn)
        for node in walk(lam):
            if isinstance(node, (gast.expr, gast.arguments)):
                gast.copy_location(node, at)
        return lam

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id in self.pullbacks:
            fn, names, kind = self.pullbacks[node.func.id]
            primals = [gast.Name(n, gast.Load(), None, None) for n in names]
            if kind == "linearize":
                return self._jvp_call(node, fn, primals)
            return self._pullback_call(node, fn, primals)
        inner = node.func.value if isinstance(node.func, gast.Subscript) else None
        if self._plain_vjp(inner) and isinstance(node.func.slice, gast.Constant) and \
                node.func.slice.value == 1:
            # vjp(f, x)[1](ct) -> vjp_pullback(f, 1)(x, ct)
            self.d.changed = True
            return self._pullback_call(node, inner.args[0], inner.args[1:])
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if self._plain_vjp(node.value) and isinstance(node.slice, gast.Constant) and \
                node.slice.value == 0 and isinstance(node.ctx, gast.Load):
            self.d.changed = True       # vjp(f, x)[0] -> f(x)
            return located(gast.Call(func=node.value.args[0], args=node.value.args[1:],
                                      keywords=[]), node)
        return node

    def _plain_vjp(self, node):
        """Whether `node` is vjp(f, *primals) with primals written out."""
        return isinstance(node, gast.Call) and self._is_vjp(node.func) and \
            not node.keywords and len(node.args) >= 2 and \
            not any(isinstance(a, gast.Starred) for a in node.args)

    def _pullback_call(self, node, fn, primals):
        import copy
        factory = gast.Call(func=gast.Name(self._factory_name(), gast.Load(), None, None),
                            args=[copy.deepcopy(fn), gast.Constant(len(primals), None)],
                            keywords=[])
        new = gast.Call(func=factory, args=list(primals) + list(node.args),
                        keywords=list(node.keywords))
        return located(new, node)

    def _jvp_call(self, node, fn, primals):
        """f_jvp(t) of `y, f_jvp = linearize(f, a)`: jvp(f, (a,), (t,))[1]"""
        import copy
        from secant.transforms import jvp
        call = gast.Call(func=gast.Name(self._factory_name(jvp, "jvp"), gast.Load(), None, None),
                         args=[copy.deepcopy(fn), gast.Tuple(primals, gast.Load()),
                               gast.Tuple(list(node.args), gast.Load())], keywords=[])
        return located(gast.Subscript(value=call, slice=gast.Constant(1, None),
                                      ctx=gast.Load()), node)

    def _factory_name(self, made=None, name="vjp_pullback"):
        if made is None:
            from secant.transforms import vjp_pullback as made
        for k, v in self.d.tree_names.items():
            if v is made:
                return k
        k = self.d.names.fresh(name)
        self.d.tree_names[k] = made
        return k


def _indexed_call(s):
    """Whether statement `s` reads an item of a call's result (`vjp(f, x)[1](ct)`)."""
    return any(isinstance(n, gast.Subscript) and isinstance(n.value, gast.Call)
               for n in walk(s))


def _has_aux(call):
    """Whether a call passes has_aux=True (its one keyword)."""
    return len(call.keywords) == 1 and call.keywords[0].arg == "has_aux" and \
        isinstance(call.keywords[0].value, gast.Constant) and call.keywords[0].value.value is True
