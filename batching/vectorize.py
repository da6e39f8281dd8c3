"""vmap as a source transformation: canonical form in, batched source out.

The generated function `f_vmap(x, w)` takes the user's parameters, the batched ones with their
batch axis at `in_axes` (moved to axis 0 on entry), and returns the outputs with the batch axis
at `out_axes`. Every batched variable keeps the user's name and carries its batch axis at axis
0; unbatched values stay as they are (no broadcasting unless an op needs it). Each op is written
by its rule in batching/rules.py, under a `# Batched: <user line>` comment where the batched
code differs from the user's. User functions called with batched arguments become calls of their
own generated batched functions; secant.lax control flow calls the same lax function on the
batched functions of its branches or body (a batched predicate becomes a select, a batched loop
condition a loop while any example continues).
"""
import ast
import copy
import inspect

import re

from secant.ad import einsum_rules, index_modes
from secant.ad.index_modes import UPDATES as UPDATE_OPS
from secant.batching.rules import (ARRAY_STATICS, AXIS, COLLECTIVES, ELEMENTWISE, HELPERS,
                                   NEW_AXIS, NO_RULE, RANDOM, RULES, SEQUENCE, SHAPED_LIKE, UNBATCHED)
from secant.transformer import ir
from secant.transformer.callees import signature_of
from secant.transformer.shapes import Shapes
from secant.transformer.normalize import call_args
from secant.transformer.ops import CONTROL_FLOW, OPS
from secant.transformer.walker import Line, Walker, dead_code_eliminated, defined_in
from secant.transformer.walker import is_literal_number, src as _src


def targets_batched(flags, n):
    """Which of the n names a call's outputs are unpacked into its batched callee batches, from
    the callee's flags (its __secant_out_batched__: a bool, or one per output): per output where
    it says so for n > 1 outputs, else all alike; None where one output mixes batched and
    unbatched parts (the caller then calls the callee's all-batched form). The one reading of
    it: the vectorizer's call and the normaliser's (transformer/normalize.py) take it here."""
    if isinstance(flags, tuple) and len(flags) == n > 1:
        return list(flags)
    if not isinstance(flags, tuple) or all(flags) or not any(flags):
        return [any(flags) if isinstance(flags, tuple) else flags] * n
    return None


class BatchingError(ValueError):
    """No batching rule: reported at the user's line."""

    def __init__(self, message, origin):
        super().__init__(message)
        self.origin = origin


class BatchBuilder(Walker):
    label = "Batched"

    def __init__(self, fn, names, batched_callee, axis_name, size):
        super().__init__(fn, names)
        self.batched_callee = batched_callee    # (callee, positions, out_axes) -> (name, flags)
        self.leafwise_calls = set()     # (ids of calls read leaf by leaf: call_by_leaves)
        self.axis_name = axis_name
        self.size = size                        # name of the batch size in generated code
        self.batched = set()                    # variables carrying a batch axis (axis 0)
        self.unbatched = set()                  # ops' results proved unbatched where read
        self.tracked = {t for op in _ops(fn.body) for t in op.targets}   # ops' results
        self.call_results = set()               # results of calls: maybe tuples (pytrees)
        self.batched_stacks = set()             # loop stacks holding batched values
        # tuples batched leaf by leaf (a lax loop's carry: its counter unbatched, its values
        # batched): name -> their leaves' flags, a tuple of True, False or such tuples
        # (_leaf_flags); read by index (getitem), passed to callees and loops as they are, and
        # made whole (every leaf batched) before anything else reads them
        self.partial = {}
        self.bound = set(fn.params)             # names assigned so far (a loop name may not be)
        # what is known of each batched variable's rank per example: (base, k) is k more than
        # the rank of parameter `base` (None: k itself); equal ranks need no alignment
        self.ranks = {}
        self.shapes = Shapes(fn)                # shapes known equal: no alignment

    # --- emission ---------------------------------------------------------------------------
    def emit(self, code):
        self.lines.append(Line(self.whole_shapes(code), self.indent, origin=self.origin))

    def whole_shapes(self, code, at=None):
        """The normaliser wrote shape queries of every value it tracks per example
        (`x.shape[1:]`); a tracked value that turned out unbatched (a callee's output that is
        not) has no batch axis to leave out, so its queries are written back whole (`(x.ndim -
        1) == 1` unparses without its parentheses). Only a value proved unbatched here
        (self.unbatched): a name batched inside a loop is no longer in self.batched after it,
        and a comprehension kept whole reads its own variable of that name (`[e.shape[1] for e
        in [c, c]]`, c batched). `at`: where the line is, if it is written already."""
        code = self.items_batched(code, at) if "batched_items(" in code else code
        if not any(m in code for m in ("[1:]", " - 1", "example_size(", "example_len(",
                                       "example_shape(", "example_ndim(", "example_spec(",
                                       "batch_axis(", "batch_new_axis(", ".shape[")):
            return code
        for name in (self.unbatched - self.batched) & getattr(self.fn, "queried", self.tracked):
            if name in code:
                masked = _masked(code, name) if " for " in code else (code, [])
                if masked is None:
                    raise self.error(f"secant cannot tell which value named {name} a shape query "
                                     "reads here (a comprehension binds the name too): rename "
                                     "the comprehension's variable")
                code = _unmasked(self.whole(masked[0], name), masked[1])
        return code

    @staticmethod
    def whole(code, name):
        """`code` with the per-example queries of `name` written back whole."""
        for per_example, whole in _WHOLE_SHAPES:
            query = re.escape(per_example.format(x=name))
            if per_example.startswith("("):     # (x.ndim - 1), or the same unparsed
                query = rf"{query}|{query[2:-2]}(?![\w.(\[])"     # without parentheses
            code = re.sub(r"(?<![\w.])(?:" + query + ")",
                          whole.format(x=name).replace("\\", r"\\"), code)
        # x.shape[k] the normaliser wrote as x.shape[k + 1] (k >= 0; x.shape[-1] stays)
        code = re.sub(rf"(?<![\w.]){name}\.shape\[([1-9]\d*)\]",
                      lambda m: f"{name}.shape[{int(m[1]) - 1}]", code)
        # (a helper's query read by an enclosing vmap: one outer axis fewer)
        code = re.sub(rf"(?<![\w.])(example_(?:size|len|shape|ndim|spec))\({name}, (\d+)\)",
                      lambda m: f"{m[1]}({name}, {int(m[2]) - 1})", code)
        return _one_outer_axis_fewer(code, name)

    def items_batched(self, code, at=None):
        """`code` with each `batched_items(xs)` the normaliser wrote written with every item
        batched (broadcast_batch of the others, on a line of its own above where it reads no
        comprehension's variable: an enclosing vmap reads it as an op): the queries of the
        comprehension's variable are per example."""
        tree = _parsed(code)
        if tree is None:
            raise self.error("internal: a comprehension's batched items in no statement")
        size, batched, builder = self.size, self.batched, self
        hoisted = []

        def broadcast(node, scope):
            call = ast.Call(ast.Name("broadcast_batch", ast.Load()),
                            [node, ast.Name(size, ast.Load())], [])
            if any(isinstance(n, ast.Name) and n.id in scope for n in ast.walk(node)):
                return call
            name = builder.names.fresh(f"{node.id}_examples" if isinstance(node, ast.Name)
                                       else "item_examples")
            hoisted.append(f"{name} = {ast.unparse(call)}")
            batched.add(name)
            return ast.Name(name, ast.Load())

        class Items(ast.NodeTransformer):
            def __init__(self):
                self.marked = set()     # variables of comprehensions over batched items
                self.scope = set()      # variables of the comprehensions around

            def holds_batched(self, node):
                return any(isinstance(n, ast.Name) and (n.id in batched or n.id in self.marked)
                           for n in ast.walk(node))

            def items(self, call):
                """batched_items(xs) written with every item batched."""
                return self.batched(self.visit(call.args[0]))

            def batched(self, it):
                if isinstance(it, (ast.List, ast.Tuple)):   # (a list of lists: each row's)
                    it.elts = [self.batched(e) if isinstance(e, (ast.List, ast.Tuple))
                               else e if self.holds_batched(e) else broadcast(e, self.scope)
                               for e in it.elts]
                    return it
                return it if self.holds_batched(it) else broadcast(it, self.scope)

            def visit_comprehension(self, node):
                marked, scope = set(self.marked), set(self.scope)
                for g in node.generators:
                    targets = {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
                    call = g.iter if isinstance(g.iter, ast.Call) and getattr(
                        g.iter.func, "id", "") in ("enumerate", "zip") else None
                    parts = call.args if call else [g.iter]
                    items = [self.items(a) if _is_marker(a) else None for a in parts]
                    parts[:] = [a if i is None else i for a, i in zip(parts, items)]
                    self.marked -= targets
                    if any(i is not None for i in items):     # (enumerate: its index is no
                        self.marked |= {n.id for n in ast.walk(   # item)
                            g.target.elts[1] if call and call.func.id == "enumerate" and
                            isinstance(g.target, ast.Tuple) else g.target)
                            if isinstance(n, ast.Name)}
                    g.iter = self.visit(call) if call else \
                        parts[0] if items[0] is not None else self.visit(parts[0])
                    self.scope |= targets
                    g.ifs = [self.visit(i) for i in g.ifs]
                for field in ("elt", "key", "value"):
                    if hasattr(node, field):
                        setattr(node, field, self.visit(getattr(node, field)))
                self.marked, self.scope = marked, scope
                return node

            visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = \
                visit_comprehension

        tree = Items().visit(tree)
        indent = self.indent if at is None else self.lines[at].indent
        at = len(self.lines) if at is None else at
        self.lines[at:at] = [Line(h, indent, origin=self.origin) for h in hoisted]
        out = ast.unparse(tree.body[0])
        if "batched_items(" in out:
            raise self.error("internal: a comprehension's batched items were not written")
        return out[:-len(_PASS)] if tree.header else out

    def branches(self, s):
        mark = len(self.lines)          # (`if` and `while` tests: their queries as a line's)
        for k, body in super().branches(s):
            if k == 0:
                self.written_shapes(mark)
            yield k, body

    def loop_header(self, s):
        mark = len(self.lines)
        super().loop_header(s)
        self.written_shapes(mark)

    def written_shapes(self, at):
        """whole_shapes of the line written at `at` (a header, the return)."""
        line = self.lines[at]
        code = self.whole_shapes(line.code, at)
        if code != line.code:
            at = self.lines.index(line)
            self.lines[at] = Line(code, line.indent, line.kind, line.origin)

    def emit_batched(self, code, plain=None):
        """A line the batching changed: the user line it comes from goes above it."""
        if code != plain:
            self.mark()
        self.emit(self.wrapped(code))

    def error(self, message):
        return BatchingError(message, self.origin)

    def is_batched(self, operand):
        if isinstance(operand, ir.Var):
            return operand.name in self.batched or operand.name in self.partial
        if isinstance(operand, ir.Seq):
            return any(self.is_batched(i) for i in operand.items)
        return False

    def batched_src(self, operand):
        """Source of an operand with every item batched (unbatched ones broadcast)."""
        if isinstance(operand, ir.Seq) and operand.kind == "dict":
            return "{" + ", ".join(f"{k}: {self.batched_src(v)}"
                                   for k, v in zip(operand.keys, operand.items)) + "}"
        if isinstance(operand, ir.Seq):
            inner = ", ".join(self.batched_src(i) for i in operand.items)
            if operand.kind == "tuple":
                return f"({inner},)" if len(operand.items) == 1 else f"({inner})"
            return f"[{inner}]"
        if isinstance(operand, ir.Var) and operand.name in self.partial:
            return _leaves_src(operand.name, self.partial[operand.name], True, self.size)
        if self.is_batched(operand):
            return _src(operand)
        return f"broadcast_batch({_src(operand)}, {self.size})"

    # --- tuples batched leaf by leaf ------------------------------------------------------------
    def leaves_of(self, operand):
        """Which leaves of an operand are batched: True, False, or a tuple of flags for a tuple
        whose items differ (nested for nested tuples; a list or dict counts as one leaf)."""
        if isinstance(operand, ir.Var) and operand.name in self.partial:
            return self.partial[operand.name]
        if isinstance(operand, ir.Seq) and operand.kind == "tuple":
            return _leaf_flags(tuple(self.leaves_of(i) for i in operand.items))
        return self.is_batched(operand)

    def operand_with_leaves(self, operand, want):
        """Source of an operand batched in the leaves `want` (which cover its own)."""
        if isinstance(operand, ir.Seq) and operand.kind == "tuple" and isinstance(want, tuple) \
                and len(want) == len(operand.items):
            parts = [self.operand_with_leaves(i, w) for i, w in zip(operand.items, want)]
            return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
        if want is True:
            return self.batched_src(operand)
        if isinstance(operand, ir.Var) and operand.name in self.partial:
            return _leaves_src(operand.name, self.partial[operand.name], want, self.size)
        if self.is_batched(operand):
            raise self.error("internal: a batched value where its leaves are unbatched")
        return _leaves_src(_src(operand), False, want, self.size)

    def set_leaves(self, name, leaves):
        """`name` holds a value batched in `leaves`."""
        self.partial.pop(name, None)
        self.batched.discard(name)
        if isinstance(leaves, tuple):
            self.partial[name] = leaves
        elif leaves:
            self.batched.add(name)
            self.call_results.add(name)     # (maybe a tuple or list: read by index_examples)

    def make_whole(self, names):
        """The tuples batched leaf by leaf among `names`, with every leaf batched from here."""
        for name in sorted(n for n in names if n in self.partial):
            self.emit(f"{name} = {_leaves_src(name, self.partial.pop(name), True, self.size)}")
            self.batched.add(name)
            self.call_results.add(name)

    def leaf_read(self, op):
        """t = c[i] of a tuple batched leaf by leaf (i a literal int): c's item i as it is."""
        if len(op.targets) != 1:
            return False
        if op.op == "getitem" and set(op.operands) == {"a"}:
            a, idx = op.operands["a"], op.statics.get("idx", "")
        elif op.op == "field" and set(op.operands) == {"tree"}:     # (x, k = carry)
            a, idx = op.operands["tree"], op.statics.get("key", "")
        elif op.op == "call" and getattr(op.callee, "__name__", "") == "item_of" and \
                op.callee.__module__ == "secant.batching.helpers" and \
                isinstance(op.operands.get("arg1"), ir.Expr):   # (generated code, batched again)
            a, idx = op.operands.get("arg0"), op.operands["arg1"].src
        else:
            return False
        if not (isinstance(a, ir.Var) and a.name in self.partial and idx.lstrip("-").isdigit()):
            return False
        mask = self.partial[a.name]
        if not -len(mask) <= int(idx) < len(mask):
            return False
        self.emit(f"{op.targets[0]} = {self.render(op)}")
        self.set_leaves(op.targets[0], mask[int(idx)])
        return True

    # --- statements ---------------------------------------------------------------------------
    def block(self, stmts):
        for s in stmts:
            if self.partial and not isinstance(s, ir.Op):   # (Python control flow: every
                self.origin = s.origin                      # value batched or not)
                self.make_whole(set(self.partial) if not isinstance(s, ir.Plain) or s.stack
                                else _read_whole(s.code, self.partial))
            super().block([s])
            self.bound |= defined_in([s])
            if isinstance(s, ir.Op):
                self.unbatched = (self.unbatched | set(s.targets)) - self.batched - \
                    set(self.partial)
            elif isinstance(s, ir.Plain) and not s.stack and s.defines and \
                    not Line(s.code, 0).uses & (self.batched | set(self.partial)):
                # (a statement kept as written that reads nothing batched: what it defines is
                # unbatched too, its shape queries whole; a helper's branch its caller's vmap
                # batches in other arguments only)
                self.unbatched = (self.unbatched | s.defines) - self.batched

    def stack(self, s):
        """A derivative's loop stack (ir.Plain.stack), written as is: a batched value pushed
        makes the stack a list of batched arrays (for good: the reverse loop that pops it comes
        after the loop that pushes), and what is popped from it is batched."""
        kind, stack, name = s.stack
        if kind == "push" and name in self.batched:
            self.batched_stacks.add(stack)
        elif kind == "push" and stack in self.batched_stacks:     # an unbatched value on a
            self.emit_batched(f"{stack}.append(broadcast_batch({name}, {self.size}))")   # stack
            return                                                 # of batched ones
        elif kind == "pop" and stack in self.batched_stacks:
            self.batched.add(name)
        self.emit(s.code)

    def render(self, op, operands=None, statics=None):
        spec = OPS[op.op]
        rendered = {k: _src(v) for k, v in op.operands.items()}
        rendered.update(operands or {})
        if op.op == "call":
            return f"{op.callee_name}({call_args(rendered)})"
        return spec.render(rendered, {**op.statics, **(statics or {})}, op.spelling)

    def op(self, op):
        targets = ", ".join(op.targets)
        if self.partial:
            if self.leaf_read(op):
                return
            aware = {"init"} if op.op == "while_loop" else set(op.operands) \
                if op.op == "call" and not getattr(op, "loop_fns", None) else set()
            self.make_whole({n for k, o in op.operands.items() if k not in aware
                             for n in _var_names(o)})
        if op.op in CONTROL_FLOW:
            return getattr(self, "cf_" + op.op)(op)
        op = self.static_bounds_read(op)
        if op.op == "call":
            return self.call(op)
        batched = [p for p, o in op.operands.items() if self.is_batched(o)]
        if op.op in COLLECTIVES:
            return self.collective(op, batched)
        plain = self.render(op)
        if not batched:
            self.emit(f"{targets} = {plain}")
            return
        code, out_batched = self.rule(op, batched)
        self.emit_batched(f"{targets} = {code}", f"{targets} = {plain}")
        if out_batched:
            self.batched.update(op.targets)
            rank = self.out_rank(op, batched)
            if len(op.targets) == 1:    # unknown: the result is its own base, so what is
                self.ranks[op.targets[0]] = rank or (op.targets[0], 0)  # derived from it aligns

    def static_bounds_read(self, op):
        """`op` with each batched name its written-out index reads (`x[lo:lo + 2]`, lo an item
        of a batched list of (int, array) pairs; a derivative's `index_exp[lo:lo + 2]` passed
        on) read as example_scalar(lo): the Python int it broadcasts where it is one
        (note_broadcast_int: JAX keeps it an int), else as it is (a bound that differs per
        example is refused when the index runs, as before)."""
        statics = {"idx": _bounds_read(op.statics["idx"], self.batched, True)} \
            if "idx" in op.statics else {}
        operands = {k: ir.Expr(_bounds_read(o.src, self.batched, False))
                    for k, o in op.operands.items() if isinstance(o, ir.Expr) and ":" in o.src}
        statics = {k: v for k, v in statics.items() if v != op.statics[k]}
        operands = {k: v for k, v in operands.items() if v != op.operands[k]}
        if not statics and not operands:
            return op
        read = copy.copy(op)        # (its marks too: rows, container)
        read.statics = {**op.statics, **statics}
        read.operands = {**op.operands, **operands}
        return read

    def plain(self, s):
        """A statement kept as written; a slice bound in it that reads a batched name (`t =
        x_dot[:, lo:lo + 2]` of a tangent no vmap batches) read as static_bounds_read reads
        an op's."""
        code = _bounds_read(s.code, self.batched, False) if ":" in s.code else s.code
        if code == s.code:
            return super().plain(s)
        self.emit_batched(code, s.code)

    def covers(self, operand, other):
        """Whether operand's shape per example provably includes other's (transformer/shapes.py):
        no alignment against it."""
        return isinstance(operand, ir.Var) and not self.shapes.needs_unbroadcast(
            [other], operand.name, cotangent=False)

    def rank_of(self, operand):
        if isinstance(operand, ir.Var):
            return self.ranks.get(operand.name)
        if _is_literal_number(operand):
            return (None, 0)
        return None

    def out_rank(self, op, batched):
        """The result's rank per example, relative to a parameter's, where the op says it."""
        name, spec = op.op, OPS[op.op]
        main = self.rank_of(op.operands.get(batched[0]))
        if name in ELEMENTWISE:
            ranks = [self.rank_of(o) for p, o in op.operands.items()
                     if p in spec.arrays + ARRAY_STATICS.get(name, ())]
            ranks += [self.rank_of(ir.Expr(op.statics[p])) for p in ARRAY_STATICS.get(name, ())
                      if p in op.statics]
            if None in ranks or len({base for base, _ in ranks if base is not None}) > 1:
                return None
            known = [r for r in ranks if r[0] is not None] or ranks
            return max(known, key=lambda r: r[1])
        if name in SEQUENCE and isinstance(op.operands[spec.sequence], ir.Var):
            return None
        if name in SEQUENCE and name != "add_n":
            ranks = {self.rank_of(i) for i in op.operands[spec.sequence].items}
            if len(ranks) != 1 or None in ranks or not all(self.is_batched(i) for i in
                                                           op.operands[spec.sequence].items):
                return None
            (base, k), = ranks
            return (base, k + 1) if name == "stack" else (base, k)
        if main is None:
            return None
        base, k = main
        statics = {p: _literal(op.statics.get(p, repr(spec.signature.parameters[p].default)))
                   for p in spec.params if p not in spec.arrays and p != spec.sequence
                   and spec.signature.parameters[p].default is not inspect.Parameter.empty
                   or p in op.statics}
        if name in ("sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin",
                    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
            axis = statics.get("axis", statics.get("axes"))
            if statics.get("keepdims") is True:
                return main
            if axis is None and "axes" not in spec.params:
                return (None, 0)
            if isinstance(axis, int):
                return (base, k - 1)
            if isinstance(axis, tuple):
                return (base, k - len(axis))
            return None
        if name in ("cumsum", "cumprod", "sort", "argsort"):
            return (None, 1) if statics.get("axis", -1) is None else main
        if name in ("flip", "swapaxes", "moveaxis", "rev", "transpose", "lax_transpose",
                    "fliplr", "flipud", "lax_cumsum", "lax_cumprod", "lax_cummax",
                    "lax_cummin", "at_set", "at_add", "at_mul", "at_min", "at_max", "pad",
                    "lax_pad") and batched[0] == spec.arrays[0]:
            return main
        if name in ("expand_dims", "lax_expand_dims", "squeeze", "lax_squeeze"):
            axis = statics.get("axis", statics.get("dimensions"))
            n = 1 if isinstance(axis, int) else len(axis) if isinstance(axis, tuple) else None
            if n is None:
                return None
            return (base, k + n) if "expand" in name else (base, k - n)
        if name in ("reshape", "broadcast_to", "lax_reshape", "broadcast_in_dim"):
            shape = statics.get("newshape", statics.get("shape", statics.get("new_sizes")))
            return (None, len(shape)) if isinstance(shape, tuple) else \
                (None, 1) if isinstance(shape, int) else None
        if name == "ravel":
            return (None, 1)
        if name in ("getitem", "at_get") and "idx" in op.statics and batched == ["a"]:
            return _indexed_rank(main, op.statics["idx"])
        return None

    def fill(self, op, batched):
        spec = OPS[op.op]
        fill = {"size": self.size}
        for p in spec.params:
            if p in op.operands:
                fill[p] = _src(op.operands[p])
            elif p in op.statics:
                fill[p] = op.statics[p]
            else:
                default = spec.signature.parameters[p].default
                fill[p] = repr(default) if default is not inspect.Parameter.empty else ""
            fill[f"{p}_batched"] = str(p in batched)
        return fill

    def rule(self, op, batched):
        """(source of the batched op, whether its result is batched)."""
        name = op.op
        for params, why in [NO_RULE[name]] if name in NO_RULE else []:
            if any(p in batched for p in params):
                raise self.error(f"vmap has no batching rule for {why}")
        if name in ("pack", "concat_seq", "dict_merge", "seq_as", "tree_leaves",
                    "tree_unflatten", "tree_leaves_as",
                    "stop_gradient_tree"):      # a container: every leaf batched
            if name == "tree_unflatten":    # (a tree of a structure known when it runs: its
                self.call_results.update(op.targets)    # items maybe lists, as a call's)
            return self.render(op, {p: self.batched_src(o) if p != "treedef" else _src(o)
                                    for p, o in op.operands.items()}), True
        if name == "getitem" and getattr(op, "container", False):   # b[1:], b[i] of a list
            return self.render(op), True
        if name == "getitem" and getattr(op, "rows", False) and batched == ["a"]:
            # `for row in x`, a helper's x[1:]: a list parameter's items, or each example's
            idx = op.statics["idx"] if "idx" in op.statics else _src(op.operands["idx"])
            if op.rows == "item" or idx.lstrip("-").isdigit():
                return f"item_of({_src(op.operands['a'])}, {idx})", True
            return f"index_examples({_src(op.operands['a'])}, index_exp[{idx}])", True
        if isinstance(op.operands.get("idx"), ir.Seq):
            return self.index_parts(op), True
        if name == "dynamic_slice" and "start_indices" in batched:     # starts per example
            fill = self.fill(op, batched)
            flag = "" if "operand" in batched else ", a_batched=False"
            return (f"dynamic_slice_per_example({fill['operand']}, {fill['start_indices']}, "
                    f"{fill['slice_sizes']}{flag})"), True
        if name == "dynamic_update_slice" and "start_indices" in batched:
            fill = self.fill(op, batched)
            flags = "".join(f", {k}_batched=False" for k, p in (("a", "operand"),
                                                                 ("update", "update"))
                            if p not in batched)
            return (f"dynamic_update_slice_per_example({fill['operand']}, {fill['update']}, "
                    f"{fill['start_indices']}, {self.size}{flags})"), True
        if name == "take" and "indices" in batched:    # snp.take(a, i) with i per example
            fill = self.fill(op, batched)
            flag = "" if "a" in batched else ", a_batched=False"
            return (f"take_per_example_at({fill['a']}, {fill['indices']}, {fill['axis']}, "
                    f"{fill['mode']}, {fill['fill_value']}{flag})"), True
        if name in UPDATE_OPS and "idx" in batched:     # x.at[i] with i per example
            a, values = op.operands["a"], op.operands["values"]
            flags = ", ".join([f"{k}_batched={self.is_batched(o)}" for k, o in
                               (("a", a), ("values", values)) if not self.is_batched(o)]
                              + [f"{k}={v}" for k, v in op.statics.items() if k == "mode"])
            return (f"update_per_example({_src(a)}, {_src(op.operands['idx'])}, {_src(values)}, "
                    f"'{name[3:]}', {self.size}{', ' + flags if flags else ''})"), True
        if name in ELEMENTWISE:
            return self.elementwise(op, batched), True
        if name in UNBATCHED:       # ({static}: the keywords the user gave that it does not name)
            template, fill = UNBATCHED[name], self.fill(op, batched)
            static = "".join(f", {k}={v}" for k, v in op.statics.items()
                             if "{" + k + "}" not in template)
            if name.endswith("_like"):      # (zeros_like(x, dtype=...): one example's unless given)
                fill["shape"] = _given_or(op.statics.get("shape"), f"{fill['x']}.shape[1:]")
                fill["dtype"] = _given_or(op.statics.get("dtype"), f"{fill['x']}.dtype")
            return template.format(**fill, static=static), False
        if name in SEQUENCE:
            return self.sequence(op), True
        if name in AXIS:
            return self.axis_op(op, batched), True
        if name == "field" and getattr(op, "container", False):   # b[1] of a list built here
            return self.render(op), True
        if name == "field" and _is_int(op.statics["key"]):
            # c[0]: a field of a batched tuple, or an element of each example of an array
            tree = op.operands["tree"]      # (a field of a loop's carry: maybe a list too)
            if isinstance(tree, ir.Var) and tree.name in self.call_results:
                self.call_results.update(op.targets)
            return f"item_of({_src(op.operands['tree'])}, {op.statics['key']})", True
        if name in ("field", "attribute", "getattr"):
            tree = op.operands.get("tree")      # cols["a"] of such a tree: maybe a list too
            if isinstance(tree, ir.Var) and tree.name in self.call_results:
                self.call_results.update(op.targets)
            return self.render(op), True
        if name == "einsum":        # a label for the batch axis (ad/einsum_rules.py)
            params = [p for p in OPS[name].arrays if p in op.operands]
            return einsum_rules.batched(op.statics["subscripts"],
                                        [_src(op.operands[p]) for p in params],
                                        [p in batched for p in params]), True
        table = RULES.get(name)
        if table is None:
            raise self.error(f"vmap has no batching rule for {name}")
        key = batched[0] if len(batched) == 1 and batched[0] in table else "*"
        if key not in table:
            raise self.error(f"vmap has no batching rule for {name} with batched "
                             f"{' and '.join(batched)}")
        fill = self.fill(op, batched)
        extra = {k: v for k, v in op.statics.items() if "{" + k + "}" not in table[key]
                 and k != "idx"}        # (written as {batched_idx})
        fill["static"] = "".join(f", {k}={v}" for k, v in extra.items())
        fill["lax"] = ", lax=True" if op.spelling else ""     # a lax call's checks (ir.Op)
        if name == "getitem" and key == "a" and op.operands["a"].name in self.call_results:
            # out[i] of a callee's output, maybe a list of batched values (a generator's items
            # read by a derivative's loop): an item of the list, or of each example's array
            idx = op.statics.get("idx")
            if idx is None or not idx.lstrip("-").isdigit():
                # out[1:], out[s] with s = slice(0, 2) a local: its items read as these
                self.call_results.update(op.targets)
            return f"index_examples({fill['a']}, index_exp[{fill['idx']}])", True
        if "idx" in fill:
            fill["batched_idx"] = _batched_index(fill["idx"])
        fill.update(index_modes.fill_keys(name, op.statics))    # (out-of-range indices)
        fill["strides"] = (f", (1,) + tuple({op.statics['strides']})"
                           if op.statics.get("strides", "None") != "None" else "")
        return table[key].format(**fill), True

    def index_parts(self, op):
        """a[:, o], a.at[:, o].get() / .add(v) ... with o per example: the index parts_index
        builds from the parts (batching/helpers.py), one gather or scatter for the batch."""
        a, parts = op.operands["a"], op.operands["idx"].items
        if op.op == "getitem" and _src(a) == "index_exp" and not self.is_batched(a):
            # a derivative's index as a value, index_exp[:, i] with i per example: the batched
            # tuple of its parts (every leaf batched; a slice is one for all examples)
            return "(" + "".join(f"{_src(p) if _is_static_part(p) else self.batched_src(p)}, "
                                 for p in parts) + ")"
        flags = tuple(self.is_batched(p) for p in parts)
        parts = f"({', '.join(_src(p) for p in parts)}{',' if len(parts) == 1 else ''})"
        if op.op in ("getitem", "at_get"):
            array = _src(a) if self.is_batched(a) else f"snp.asarray({_src(a)})"
            index = f"parts_index({parts}, {flags}, snp.shape({_src(a)}), {self.is_batched(a)})"
            if op.op == "getitem":
                return f"{array}[{index}]"
            keywords = ", ".join(f"{k}={v}" for k, v in op.statics.items())
            return f"{array}.at[{index}].get({keywords})"
        values = op.operands["values"]
        flag_kw = "".join(f", {k}_batched=False" for k, o in (("a", a), ("values", values))
                          if not self.is_batched(o))
        mode = f", mode={op.statics['mode']}" if "mode" in op.statics else ""
        return (f"update_parts_per_example({_src(a)}, {parts}, {flags}, {_src(values)}, "
                f"'{op.op[3:]}', {self.size}{flag_kw}{mode})")

    def elementwise(self, op, batched):
        """The op as written, each batched operand aligned against the other operands that are
        not Python numbers (an example may have fewer axes than they do)."""
        arrays = {p: o for p, o in op.operands.items()}
        for p in ARRAY_STATICS.get(op.op, ()):
            if p in op.statics:
                arrays[p] = ir.Expr(op.statics[p])
        array_params = OPS[op.op].arrays + ARRAY_STATICS.get(op.op, ())
        others = {p: o for p, o in arrays.items()
                  if p in array_params and not _is_literal_number(o)}
        rendered, statics = {}, {}
        for p in batched:
            src = _src(op.operands[p])
            mine = self.rank_of(op.operands[p])
            for q, o in others.items():
                if q == p or o == op.operands[p] or self.covers(op.operands[p], o):
                    continue                            # x * x, x * 2 * x: one rank
                if self.is_batched(o):
                    if _at_least(mine, self.rank_of(o)):   # as many axes as o: as written
                        continue
                    src = f"align_batched({src}, {_src(o)})"
                else:
                    src = f"align({src}, {_src(o)})"
            if p in OPS[op.op].params and p not in OPS[op.op].arrays and \
                    p not in ARRAY_STATICS.get(op.op, ()):
                raise self.error(f"vmap has no batching rule for {op.op} with a batched {p}")
            rendered[p] = src
        return self.render(op, rendered, statics)

    def sequence(self, op):
        spec = OPS[op.op]
        seq = op.operands[spec.sequence]
        if isinstance(seq, ir.Var):         # a batched list passed whole: every item batched
            if op.op == "add_n":
                return f"add_n_batched({seq.name})"
            param, kind = AXIS[op.op][0][0], AXIS[op.op][1]
            axis = op.statics.get(param, repr(spec.signature.parameters[param].default))
            if kind == "flatten" and axis == "None":
                raise self.error(f"vmap of {op.op}(axis=None) of a list built in the function "
                                 "is not supported; concatenate along an axis")
            shifted = _shift_axis(axis, kind, f"{seq.name}[0]", op.op)
            if op.op == "stack":        # its items may be lists too (nested comprehensions)
                return f"stack_examples({seq.name}, {shifted})"
            return self.render(op, {}, {param: shifted})
        items = list(seq.items)
        if op.op == "add_n":        # elementwise over the items
            parts = []
            for i, item in enumerate(items):
                src = _src(item)
                if self.is_batched(item):
                    for j, other in enumerate(items):
                        if j != i and not _is_literal_number(other) \
                                and not self.covers(item, other):
                            helper = "align_batched" if self.is_batched(other) else "align"
                            src = f"{helper}({src}, {_src(other)})"
                parts.append(src)
            return f"sum([{', '.join(parts)}])"
        main = next(_src(i) for i in items if self.is_batched(i))
        param, kind = AXIS[op.op][0][0], AXIS[op.op][1]
        axis = op.statics.get(param, repr(spec.signature.parameters[param].default))
        if kind == "flatten" and axis == "None":    # concatenate(axis=None): flattened items
            srcs = [f"flat_examples({self.batched_src(i)})" for i in items]
            return self.render(op, {spec.sequence: f"[{', '.join(srcs)}]"}, {param: "1"})
        srcs = ", ".join(self.batched_src(i) for i in items)
        seq_src = f"({srcs},)" if seq.kind == "tuple" and len(items) == 1 else \
            f"({srcs})" if seq.kind == "tuple" else f"[{srcs}]"
        return self.render(op, {spec.sequence: seq_src},
                           {param: _shift_axis(axis, kind, main, op.op)})

    def axis_op(self, op, batched):
        spec = OPS[op.op]
        params, kind = AXIS[op.op]
        main_param = batched[0]
        main = _src(op.operands[main_param])
        if len(batched) > 1 or main_param not in spec.arrays[:1]:
            raise self.error(f"vmap has no batching rule for {op.op} with batched "
                             f"{' and '.join(batched)}")
        statics, operands = {}, {}
        for p in params:
            axis = op.statics.get(p, repr(spec.signature.parameters[p].default))
            if kind == "flatten" and axis == "None":
                operands[main_param] = f"flat_examples({main})"
                statics[p] = "1"
            elif kind == "flatten" and not _is_literal(axis):     # None only known when run
                operands[main_param] = f"flat_examples_if({main}, {axis})"
                statics[p] = f"batch_flat_axis({axis}, {main})"
            else:
                statics[p] = _shift_axis(axis, kind, main, op.op)
        return self.render(op, operands, statics)

    def collective(self, op, batched):
        """psum & co. over this vmap's axis: a reduction over the batch axis (unbatched result);
        over another axis name, the op as written (an enclosing vmap or pmap binds it)."""
        targets = ", ".join(op.targets)
        plain = self.render(op)
        try:
            name = ast.literal_eval(op.statics["axis_name"])
        except ValueError:
            name = op.statics["axis_name"]
        if name != self.axis_name:
            self.emit(f"{targets} = {plain}")
            if batched:
                self.batched.update(op.targets)
            return
        fill = self.fill(op, batched)
        template = COLLECTIVES[op.op]["x" if batched else "unbatched"]
        code = template.format(**fill)
        self.emit_batched(f"{targets} = {code}", f"{targets} = {plain}")
        if op.op in ("axis_index", "psum_scatter"):     # (one value, or block, per example)
            self.batched.update(op.targets)

    # --- user functions -----------------------------------------------------------------------
    def _positions(self, op):
        params = list(signature_of(op.callee, follow_wrapped=False).parameters)
        return {k: int(k[3:]) if k.startswith("arg") and k[3:].isdigit() else params.index(k)
                for k in op.operands}

    def call(self, op):
        """A user function with batched arguments: its own generated batched function, whose
        outputs are all batched."""
        if getattr(op.callee, "__secant_random__", None):
            return self.random_call(op)
        if getattr(op, "loop_fns", None) is not None:
            return self.loop_vjp(op)
        position = self._positions(op)
        keys = sorted((k for k, o in op.operands.items() if self.is_batched(o)), key=position.get)
        targets = ", ".join(op.targets)
        if not keys:
            self.emit(f"{targets} = {self.render(op)}")
            return
        rule = HELPERS.get(op.callee.__name__)
        if rule is not None and op.callee.__module__.startswith(("secant.ad.",
                                                                 "secant.batching.")):
            fill = {"size": self.size}
            params = inspect.signature(op.callee, follow_wrapped=False).parameters.values()
            for i, p in enumerate(params):     # left-out arguments at their defaults
                fill[f"arg{i}"] = fill[f"arg{i}_b"] = repr(p.default)
                fill[f"arg{i}_batched"] = "False"
                fill[f"arg{i}_opt"] = ""
            for k, v in op.operands.items():
                i = position[k]
                fill[f"arg{i}"] = self.batched_src(v) if k in keys else _src(v)
                fill[f"arg{i}_opt"] = ", " + fill[f"arg{i}"]
                fill[f"arg{i}_b"] = self.batched_src(v)      # with a batch axis in any case
                fill[f"arg{i}_batched"] = str(k in keys)
            for k, v in list(fill.items()):     # an axis or depth one further in
                if not k.startswith("arg") or k.endswith(("_batched", "_b", "_opt")) or v == "None":
                    continue
                literal = v.strip("()").lstrip("-").isdigit()
                # an axis counted from the end (-1) stays where it is past a leading batch axis
                fill[f"{k}_next"] = str(_next_axis(int(v.strip("()")))) if literal else \
                    f"batch_axis({v}, None)"
            self.emit_batched(f"{targets} = {rule.format(**fill)}")
            self.batched.update(op.targets)
            self.call_results.update(op.targets)    # (grad_of_fields & co.: maybe containers)
            return
        positions = tuple(position[k] for k in keys)
        items = {position[k]: self.partial[o.name] for k, o in op.operands.items()
                 if isinstance(o, ir.Var) and o.name in self.partial}
        if items:
            return self.call_by_leaves(op, keys, positions, items)
        each = targets_batched(self.flags_of(op.callee, positions), len(op.targets))
        if each is not None and hasattr(self.batched_callee, "leaves") and \
                id(op) not in self.leafwise_calls and _mixed(
                    self.batched_callee(op.callee, positions, "free", probe=True)[1]):
            # a tuple output holding batched and unbatched leaves (a jvp's primal (c, ys, n)):
            # as it comes, leaf by leaf, so a Python int it holds stays one (not broadcast)
            self.leafwise_calls.add(id(op))     # (its callee's leaves unknown: as before)
            return self.call_by_leaves(op, keys, positions, {})
        # (one name for outputs batched and not: all batched)
        name, _ = self.batched_callee(op.callee, positions, "free" if each is not None else 0)
        each = [True] * len(op.targets) if each is None else each
        out = dict(zip(op.targets, each))
        args = call_args({k: self.batched_src(v) if k in keys else _src(v)
                          for k, v in op.operands.items()})
        size_param = getattr(self.batched_callee, "size_params", {}).get(name)
        if size_param is not None:      # (its batched arguments may hold no array: build)
            args = f"{args}, {size_param}={self.size}" if args else f"{size_param}={self.size}"
        self.emit(f"{targets} = {name}({args})")
        self.batched.update(t for t, b in out.items() if b)
        self.call_results.update(op.targets)
        like = SHAPED_LIKE.get(op.callee.__name__) \
            if op.callee.__module__ == "secant.ad.helpers" else None
        if like is not None and len(op.targets) == 1 and out[op.targets[0]]:
            arg = next((v for k, v in op.operands.items() if position[k] == like), None)
            if arg is not None and self.is_batched(arg):
                self.ranks[op.targets[0]] = self.rank_of(arg)

    def call_by_leaves(self, op, keys, positions, items):
        """A user function given tuples batched leaf by leaf: its batched function for those
        leaves, its outputs as they come (their leaves' flags: batched_callee.leaves)."""
        name, flags = self.batched_callee(op.callee, positions, "leaves", items)
        leaves = getattr(self.batched_callee, "leaves", {}).get(name)
        if leaves is None:      # (a recursive callee: its outputs assumed batched)
            self.make_whole({o.name for o in op.operands.values() if isinstance(o, ir.Var)})
            return self.call(op)
        args = call_args({k: (_src(v) if isinstance(v, ir.Var) and v.name in self.partial
                              else self.batched_src(v)) if k in keys else _src(v)
                          for k, v in op.operands.items()})
        size_param = getattr(self.batched_callee, "size_params", {}).get(name)
        if size_param is not None:
            args = f"{args}, {size_param}={self.size}" if args else f"{size_param}={self.size}"
        self.emit_batched(f"{', '.join(op.targets)} = {name}({args})")
        if len(op.targets) == 1:
            self.set_leaves(op.targets[0], leaves)
        else:
            for t, leaf in zip(op.targets, leaves if isinstance(leaves, tuple) and len(leaves)
                               == len(op.targets) else [leaves] * len(op.targets)):
                self.set_leaves(t, leaf)

    def random_call(self, op):
        """A secant.random call with batched arguments (rules.RANDOM)."""
        params = list(signature_of(op.callee, follow_wrapped=False).parameters)
        batched = [params[int(k[3:])] if k.startswith("arg") and k[3:].isdigit() else k
                   for k, o in op.operands.items() if self.is_batched(o)]
        args = call_args({k: self.batched_src(o) if self.is_batched(o) else _src(o)
                          for k, o in op.operands.items()})
        targets = ", ".join(op.targets)
        if not batched:
            self.emit(f"{targets} = {self.render(op)}")
            return
        if op.callee.__module__ == "secant.batching.helpers":      # random_batched: nested vmap
            if batched != ["key"] or "batched" in op.operands:
                raise self.error("nested vmap of a secant.random call is supported when only "
                                 "the key is batched, at every level")
            code = f"{op.callee_name}({args})"
        else:
            flags = "" if batched == ["key"] else f", batched={tuple(batched)!r}"
            code = RANDOM.format(sampler=op.callee_name, args=args, batched=flags)
        if len(op.targets) > 1:     # a, b = split(key): unpack each example's first axis
            code = f"batch_second({code})"
        self.emit_batched(f"{targets} = {code}")
        self.batched.update(op.targets)

    # --- Python control flow (concrete tests) -------------------------------------------------
    def if_(self, s):
        before, unbatched = set(self.batched), set(self.unbatched)
        ends, proved = [], set()
        for _, body in self.branches(s):
            self.batched, self.unbatched = set(before), set(unbatched)
            self.block(body) if body else self.emit("pass")
            ends.append((len(self.lines), set(self.batched)))
            proved |= self.unbatched
        joined = ends[0][1] | ends[1][1]
        self.unbatched = proved - joined
        defined = [defined_in(s.body), defined_in(s.orelse)]
        for k in (1, 0):        # a value batched by one branch only: broadcast in the other
            missing = sorted(v for v in joined - ends[k][1] if v in defined[k] or v in before)
            missing = [v for v in missing if v not in _none_placeholders((s.body, s.orelse)[k])]
            at = ends[k][0]
            self.lines[at:at] = [Line(f"{v} = broadcast_batch({v}, {self.size})",
                                      self.indent + 1) for v in missing]
        self.batched = joined

    def loop(self, s):
        """A Python for/while loop: a loop variable is batched if it enters batched or an
        iteration makes it batched (to a fixpoint; it is then broadcast before the loop)."""
        loops = [loop for loop, _ in s.carried]
        with_b = {loop for loop in loops if loop in self.batched}
        mark, before, bound = len(self.lines), set(self.batched), set(self.bound)
        slot, last_comment, unbatched = self.slot, self.last_comment, set(self.unbatched)
        while True:
            del self.lines[mark:]
            self.batched, self.bound, self.unbatched = set(before), set(bound), set(unbatched)
            self.slot, self.last_comment = slot, last_comment
            for loop in sorted(with_b - before):
                if loop not in bound:       # first assigned in the loop: nothing before, so
                    self.batched.add(loop)  # a read of it sees an earlier iteration's value
                    continue
                self.emit_batched(f"{loop} = broadcast_batch({loop}, {self.size})")
                self.batched.add(loop)
            self.loop_header(s)
            self.block(s.body)
            grow = {loop for loop, last in s.carried if loop not in with_b
                    and (last in self.batched or loop in self.batched)}
            if grow:
                with_b |= grow
                self.indent -= 1
                continue
            for loop, last in s.carried:   # an unbatched value replaced a batched loop value
                # (the body's last version of it: `loop = last` ends the body, and an
                # assignment never unmarks a name, so `loop` itself still reads batched)
                if loop in with_b and (loop not in self.batched or last not in self.batched):
                    self.emit(f"{loop} = broadcast_batch({loop}, {self.size})")
            self.indent -= 1
            break
        self.batched = before | with_b
        self.unbatched -= self.batched
        self.last_comment = None

    # --- secant.lax control flow ----------------------------------------------------------------
    def _extra(self, op, first):
        """(sources of the closed-over values and constants, positions of the batched ones)."""
        closed = list(op.operands["closed"].items)
        consts = list(op.operands["consts"].items)
        srcs = [_src(c) for c in closed] + [_src(c) for c in consts]
        return srcs, [first + j for j, c in enumerate(closed) if self.is_batched(c)]

    def _assign(self, op, call, batched=True):
        targets = ", ".join(op.targets)
        self.emit_batched(f"{targets} = {call}")
        if batched:
            self.batched.update(op.targets)
            self.call_results.update(op.targets)    # (a carry: maybe a list, as a call's)

    def cf_cond(self, op):
        operands = list(op.operands["operands"].items)
        n = len(operands)
        extra, closed_pos = self._extra(op, n)
        positions = tuple([i for i, o in enumerate(operands) if self.is_batched(o)] + closed_pos)
        key = "pred" if op.op == "cond" else "index"
        steer = op.statics[key]
        steered = steer in self.batched
        if not positions and not steered:
            self.emit(f"{', '.join(op.targets)} = {op.statics['forward']}")
            return
        args = ", ".join([self.batched_src(o) if i in positions else _src(o)
                          for i, o in enumerate(operands)] + extra)
        axes = 0 if steered or not positions else self._branch_out_axes(op, positions)
        if positions:
            fns = [self.batched_callee(fn, positions, axes)[0] for fn in op.callee]
            outs = [f"{f}({args})" for f in fns]
        else:       # only the predicate is batched: each branch once, broadcast to the batch
            outs = [f"broadcast_batch({self.batched_callee(fn, (), 'free')[0]}({args}), "
                    f"{self.size})" for fn in op.callee]
        if not steered:
            if op.op == "cond":
                call = f"lax.cond({steer}, {fns[0]}, {fns[1]}, {args})"
            else:
                call = f"lax.switch({steer}, [{', '.join(fns)}], {args})"
        elif op.op == "cond":       # a predicate per example: both branches, then a select
            call = f"select_batched({steer}, {outs[0]}, {outs[1]})"
        else:
            call = f"choose_batched({steer}, [{', '.join(outs)}])"
        if axes is None or isinstance(axes, tuple):
            self._assign(op, call, False)
            self.batched.update(t for t, axis in zip(op.targets, axes or ()) if axis == 0)
            return
        self._assign(op, call)

    cf_switch = cf_cond

    def _branch_out_axes(self, op, positions):
        """The out_axes of the branches of a cond/switch steered by an unbatched value: 0 for
        an output some branch makes batched, None for one no branch does (a flag or counter
        the branches set stays a Python value, as a loop's `looping` after a return inside
        it: a batched flag would select between the loop's differently shaped returns; a staged
        `if n < 0: a = 1 / a; n = -n` with n a Python int, read later by bin(n))."""
        n = len(op.targets)
        flags = [self.flags_of(fn, positions) for fn in op.callee]
        if n == 1 and all(isinstance(f, bool) for f in flags):
            return 0 if any(flags) else None
        if n < 2 or not all(isinstance(f, tuple) and len(f) == n for f in flags):
            return 0
        axes = tuple(0 if any(f[k] for f in flags) else None for k in range(n))
        return 0 if None not in axes else axes

    def flags_of(self, callee, positions):
        """Which outputs of callee's batched function (out_axes "free") are batched: a trial,
        named nowhere (the name the code calls is taken by the call that writes it, so that
        the names stay those of the functions the code calls: `v1_while_body_vmap`)."""
        return self.batched_callee(callee, positions, "free", probe=True)[0]

    def _carry(self, op, body, positions_of, out_item=None):
        """Whether a loop's carry is batched: if it enters batched or the body (batched in the
        other inputs) makes it batched."""
        carry_b = self.is_batched(op.operands["init"])
        for _ in range(2):
            flags = self.flags_of(body, positions_of(carry_b))
            out = flags[out_item] if out_item is not None and isinstance(flags, tuple) else flags
            out = any(out) if isinstance(out, tuple) else out
            if carry_b or not out:
                return carry_b
            carry_b = True
        return carry_b

    def _init(self, op, carry_b):
        init = op.operands["init"]
        return self.batched_src(init) if carry_b else _src(init)

    def cf_fori_loop(self, op):
        extra, closed_pos = self._extra(op, 2)
        body = op.callee[0]

        def positions(carry_b):
            return tuple(([1] if carry_b else []) + closed_pos)
        carry_b = self._carry(op, body, positions)
        if not positions(carry_b):
            self.emit(f"{', '.join(op.targets)} = {op.statics['forward']}")
            return
        name, _ = self.batched_callee(body, positions(carry_b), 0 if carry_b else None)
        i, c = self.names.fresh("i"), self.names.fresh("carry")
        st = op.statics
        loop = "fori_loop_with_carries" if st.get("carries") else "lax.fori_loop"
        call = (f"{loop}({st['lower']}, {st['upper']}, lambda {i}, {c}: "
                f"{name}({', '.join([i, c] + extra)}), {self._init(op, carry_b)})")
        if st.get("carries"):
            return self._with_carries(op, call, carry_b)
        self._assign(op, call, carry_b)

    def _with_carries(self, op, call, batched, result=None):
        """`out, carries = <a loop derivative's forward pass>`: the carries come stacked with
        the step axis first, so a batched stack gets its batch axis back in front (`result`:
        the source making the loop's output from `out`, the scan's ys put batch first)."""
        if not batched:
            self._assign(op, call, False)
            return
        out_t = self.names.fresh(f"{op.targets[0]}_t")
        carries_t = self.names.fresh("carries_t")
        self.emit_batched(f"{out_t}, {carries_t} = {call}")
        out = result.format(out_t) if result else out_t
        if len(op.targets) == 2:
            self.emit(f"{op.targets[0]} = {out}")
            self.emit(f"{op.targets[1]} = batch_first({carries_t})")
        else:
            self.emit(f"{op.targets[0]} = ({out}, batch_first({carries_t}))")
        self.batched.update(op.targets)
        self.call_results.update(op.targets)    # (a carry: maybe a list, as a call's)

    def while_by_leaves(self, op):
        """A lax.while_loop whose carry is a tuple, batched leaf by leaf as JAX does (to a
        fixpoint: a leaf is batched if it enters batched or the body makes it so): a counter
        no batched value reaches stays unbatched, so the test it steers stays one Python value
        for the whole batch (under jit too) and the carry may change structure as it does
        without vmap (a list growing). A test that differs per example batches every leaf (the
        loop runs while any example continues): False then, as when no leaf differs."""
        if op.statics.get("carries") or "count" in op.statics or self.indent != 1:
            return False        # (in a branch or loop body: if_ and loop join whole values)
        init = op.operands["init"]
        mask = self.leaves_of(init)
        if not isinstance(mask, tuple) or len(op.targets) not in (1, len(mask)):
            return False
        extra, closed_pos = self._extra(op, 1)
        cond_fn, body = op.callee
        positions = (0,) + tuple(closed_pos)
        if not hasattr(self.batched_callee, "leaves"):
            return False
        for _ in range(8):      # (trials: the functions the code calls are named after it)
            pred_b, _ = self.batched_callee(cond_fn, positions, "free", {0: mask}, probe=True)
            if pred_b is not False:
                return False
            _, body_leaves = self.batched_callee(body, positions, "leaves", {0: mask},
                                                 probe=True)
            if body_leaves is None:             # (a body generated otherwise: whole)
                return False
            grown = _joined(mask, body_leaves)
            if grown == mask:
                break
            if not isinstance(grown, tuple):
                return False
            mask = grown
        else:
            return False
        cond_name, _ = self.batched_callee(cond_fn, positions, "free", {0: mask})
        body_name, _ = self.batched_callee(body, positions, _leaf_axes(mask), {0: mask})
        c = self.names.fresh("carry")
        args = ", ".join([c] + extra)
        self.emit_batched(f"{', '.join(op.targets)} = lax.while_loop(lambda {c}: "
                          f"{cond_name}({args}), lambda {c}: {body_name}({args}), "
                          f"{self.operand_with_leaves(init, mask)})")
        if len(op.targets) == 1:
            self.set_leaves(op.targets[0], mask)
        else:
            for t, leaf in zip(op.targets, mask):
                self.set_leaves(t, leaf)
        return True

    def cf_while_loop(self, op):
        if self.while_by_leaves(op):
            return
        extra, closed_pos = self._extra(op, 1)
        cond_fn, body = op.callee
        carry_b = self.is_batched(op.operands["init"])

        def positions(carry_b):
            return tuple(([0] if carry_b else []) + closed_pos)
        for _ in range(3):          # pred batched -> carry batched -> ... (a fixpoint)
            pred_b = self.flags_of(cond_fn, positions(carry_b))
            body_b = self.flags_of(body, positions(carry_b))
            grown = carry_b or pred_b or body_b
            if grown == carry_b:
                break
            carry_b = grown
        if not positions(carry_b):
            self.emit(f"{', '.join(op.targets)} = {op.statics['forward']}")
            return
        cond_name, pred_b = self.batched_callee(cond_fn, positions(carry_b), "free")
        body_name, _ = self.batched_callee(body, positions(carry_b), 0 if carry_b else None)
        c = self.names.fresh("carry")
        args = ", ".join([c] + extra)
        # a derivative's forward pass also returns what its reverse pass needs: eagerly the
        # list of (batched) carries, under jit the number of steps
        loop = "while_loop_with_carries" if op.statics.get("carries") else "lax.while_loop"
        count = f", count={op.statics['count']}" if "count" in op.statics else ""
        if pred_b:      # run while any example continues; the finished ones keep their carry
            call = (f"{loop}(lambda {c}: any_example({cond_name}({args})), "
                    f"lambda {c}: select_batched({cond_name}({args}), {body_name}({args}), {c}), "
                    f"{self._init(op, carry_b)}{count})")
        else:
            call = (f"{loop}(lambda {c}: {cond_name}({args}), lambda {c}: "
                    f"{body_name}({args}), {self._init(op, carry_b)}{count})")
        self._assign(op, call, carry_b)

    def cf_scan(self, op):
        extra, closed_pos = self._extra(op, 2)
        body = op.callee[0]
        xs = op.operands["xs"]
        xs_b = self.is_batched(xs)

        def positions(carry_b):
            return tuple(([0] if carry_b else []) + ([1] if xs_b else []) + closed_pos)
        carry_b = self._carry(op, body, positions, 0)
        if not positions(carry_b):
            self.emit(f"{', '.join(op.targets)} = {op.statics['forward']}")
            return
        flags = self.flags_of(body, positions(carry_b))
        y_b = flags[1] if isinstance(flags, tuple) and len(flags) == 2 else flags
        y_b = any(y_b) if isinstance(y_b, tuple) else y_b
        if len(op.targets) != 2 or not isinstance(flags, tuple) or op.statics.get("carries"):
            carry_b = y_b = carry_b or y_b      # one name for the pair: both batched or neither
            out_axes = 0 if carry_b else None
        else:
            out_axes = (0 if carry_b else None, 0 if y_b else None)
        name, _ = self.batched_callee(body, positions(carry_b), out_axes)
        c, x = self.names.fresh("carry"), self.names.fresh("x")
        xs_src = f"batch_second({self.batched_src(xs)})" if xs_b else _src(xs)
        kw = "".join(f", {k}={op.statics[k]}" for k in ("length", "reverse", "unroll")
                     if k in op.statics)
        loop = "scan_with_carries" if op.statics.get("carries") else "lax.scan"
        call = (f"{loop}(lambda {c}, {x}: {name}({', '.join([c, x] + extra)}), "
                f"{self._init(op, carry_b)}, {xs_src}{kw})")
        if op.statics.get("carries"):
            return self._with_carries(op, call, carry_b, "({0}[0], batch_first({0}[1]))")
        if len(op.targets) == 2:
            carry, ys = op.targets
            ys_t = self.names.fresh(f"{ys}_t") if y_b else ys
            self.emit_batched(f"{carry}, {ys_t} = {call}")
            if y_b:
                self.emit(f"{ys} = batch_first({ys_t})")
                self.batched.add(ys)
                self.call_results.add(ys)       # (maybe a list, as a call's output)
            if carry_b:
                self.batched.add(carry)
                self.call_results.add(carry)
            return
        out = op.targets[0]
        if not y_b:
            self._assign(op, call, False)
            return
        pair = self.names.fresh("scan_pair")
        self.emit_batched(f"{pair} = {call}")
        self.emit(f"{out} = ({pair}[0], batch_first({pair}[1]))")
        self.batched.add(out)
        self.call_results.add(out)

    def cf_map(self, op):
        extra, closed_pos = self._extra(op, 1)
        xs = op.operands["xs"]
        xs_b = self.is_batched(xs)
        positions = tuple(([0] if xs_b else []) + closed_pos)
        if not positions:
            self.emit(f"{', '.join(op.targets)} = {op.statics['forward']}")
            return
        name, _ = self.batched_callee(op.callee[0], positions, 0)
        x = self.names.fresh("x")
        xs_src = f"batch_second({self.batched_src(xs)})" if xs_b else _src(xs)
        ys = self.names.fresh(f"{op.targets[0]}_t")
        self.emit_batched(f"{ys} = lax.map(lambda {x}: {name}({', '.join([x] + extra)}), "
                          f"{xs_src})")
        self._assign(op, f"batch_first({ys})")


    # --- the reverse pass of a lax loop (vmap of a derivative) ----------------------------------
    # fori_loop_vjp / scan_vjp / map_vjp (ad/rule_helpers.py) called again, with the batched
    # function of the body's generated vjp, every example's carry cotangent and saved carries
    # (stacked ones with the step axis first: batch_second), and `batch_size` so the cotangents
    # of the closed-over values start with a batch axis: one cotangent per example.
    _VJP_LAYOUT = {      # helper: (its function parameter, index of `closed` in its calls)
        "fori_loop_vjp": ("body_vjp", 4), "scan_vjp": ("f_vjp", 4), "map_vjp": ("f_vjp", 2)}

    def _stacked(self, operand):
        """An operand stacked over the loop's steps, as the helper scans it: steps first (None,
        for carries nothing saved, stays None)."""
        if _src(operand) == "None":
            return "None"
        return f"batch_second({self.batched_src(operand)})"

    def _pair(self, operand, second):
        """(carry, ys)-like pair: the first item batched as it is, the second also stacked."""
        if isinstance(operand, ir.Seq) and len(operand.items) == 2:
            first, other = operand.items
            return f"({self.batched_src(first)}, " + \
                (self._stacked(other) if second else self.batched_src(other)) + ")"
        src = self.batched_src(operand)
        return f"({src}[0], batch_second({src}[1]))" if second else src

    def loop_vjp(self, op):
        name = op.callee.__name__
        ops = op.operands
        targets = ", ".join(op.targets)
        items = {}
        for key in ("closed", "consts"):
            o = ops.get(key)
            if o is None:
                items[key] = []
            elif isinstance(o, ir.Seq):
                items[key] = list(o.items)
            else:
                raise self.error(f"vmap of {name}: {key} must be a tuple written in the call")
        batched = [k for k, o in ops.items() if self.is_batched(o)]
        layout = self._VJP_LAYOUT.get(name)
        if not batched:
            rendered = {k: _src(v) for k, v in ops.items() if not k.endswith("_free")}
            self.emit(f"{targets} = {op.callee_name}({call_args(rendered)})")
            return
        if name == "while_loop_vjp":
            return self.while_loop_vjp(op, items)
        fn_param, first = layout
        extra = items["closed"] + items["consts"]
        extra_pos = [first + j for j, o in enumerate(extra) if self.is_batched(o)]
        wrt_xs = False
        args = []
        if name == "fori_loop_vjp":
            positions = [0, 1, 3]
            args = [_src(ops["lower"]), _src(ops["upper"]), None,
                    self.batched_src(ops["carry_bar"]), self._stacked(ops["carries"])]
            keywords = {"out": self.batched_src(ops["out"])}
            n_out, xs_at = 1 + len(items["closed"]), None
        elif name == "scan_vjp":
            xs = ops.get("xs", ir.Expr("None"))
            xs_b = self.is_batched(xs)
            wrt_xs = _src(ops.get("wrt_xs", ir.Expr("False"))) == "True"
            positions = [0, 1, 2] + ([3] if xs_b else [])
            args = [None, self._pair(ops["out_bar"], True), self._stacked(ops["carries"]),
                    self._stacked(xs) if xs_b else _src(xs)]
            keywords = {k: _src(ops[k]) for k in ("reverse", "wrt_xs") if k in ops}
            keywords["out"] = self._pair(ops["out"], True)
            n_out, xs_at = 1 + int(wrt_xs) + len(items["closed"]), 1 if wrt_xs else None
        else:       # map_vjp
            xs, ys_bar = ops["xs"], ops["ys_bar"]
            wrt_xs = _src(ops.get("wrt_xs", ir.Expr("True"))) == "True"
            positions = ([0] if self.is_batched(ys_bar) else []) + \
                ([1] if self.is_batched(xs) else [])
            args = [None] + [self._stacked(o) if self.is_batched(o) else _src(o)
                             for o in (ys_bar, xs)]
            keywords = {"wrt_xs": "False"} if not wrt_xs else {}
            n_out, xs_at = int(wrt_xs) + len(items["closed"]), 0 if wrt_xs else None
        vjp, _ = self.batched_callee(op.loop_fns[fn_param], tuple(positions + extra_pos), 0)
        args[args.index(None)] = vjp
        for key in ("closed", "consts"):
            if items[key]:
                keywords[key] = _src(ir.Seq(tuple(items[key]), "tuple"))
        keywords.update(self._batch_keywords(ops, items["closed"]))
        call = f"{op.callee_name}({', '.join(args + [f'{k}={v}' for k, v in keywords.items()])})"
        self.batched.update(op.targets)
        if xs_at is None:       # every output a cotangent per example, batch axis in front
            self.emit_batched(f"{targets} = {call}")
        elif n_out == 1:        # the cotangent of xs alone, stacked
            self.emit_batched(f"{targets} = batch_first({call})")
        elif len(op.targets) == n_out:
            xs_bar = op.targets[xs_at]
            xs_bar_t = self.names.fresh(f"{xs_bar}_t")
            outs = list(op.targets)
            outs[xs_at] = xs_bar_t
            self.emit_batched(f"{', '.join(outs)} = {call}")
            self.emit(f"{xs_bar} = batch_first({xs_bar_t})")
        else:           # (unpacked and packed again: a tuple display, which a vmap reads)
            outs = [self.names.fresh(f"{op.targets[0]}_{k}") for k in range(n_out)]
            xs_bar_t = self.names.fresh(f"{outs[xs_at]}_t")
            self.emit_batched(f"{', '.join(outs[:xs_at] + [xs_bar_t] + outs[xs_at + 1:])} = "
                              f"{call}")
            self.emit(f"{outs[xs_at]} = batch_first({xs_bar_t})")
            self.emit(f"{targets} = ({', '.join(outs)})")


    def _batch_keywords(self, ops, closed):
        """batch_size= and closed_batched= of a loop's reverse pass batched here: the batch
        size, and whether each closed-over value is batched. Batched again (a vmap of a vmap:
        the call has them already), this vmap's axis comes first: sizes and flags become
        tuples, outermost first (nested under more vmaps: ad/rule_helpers.py zeros_batched)."""
        flags = tuple(self.is_batched(c) for c in closed)
        inner = ops.get("batch_size")
        if inner is None:
            return {"batch_size": str(self.size), **({"closed_batched": repr(flags)}
                                                     if closed else {})}
        out = {"batch_size": f"({self.size}, {_src(inner)})"}
        if closed:
            before = ast.literal_eval(_src(ops["closed_batched"]))
            out["closed_batched"] = repr(tuple((b, f) for b, f in zip(flags, before)))
        return out

    def while_loop_vjp(self, op, items):
        """while_loop_vjp called again with the batched body, its batched vjp and, where the
        condition differs from example to example (the loop ran while any continued, finished
        examples keeping their carry), `active`: which examples took each step. (Batched again,
        a call with `active` already: its body selects by it, and `active` is its cond.)"""
        ops = op.operands
        fns = op.loop_fns
        carry_b = self.is_batched(ops["saved"])

        def lifted(key, carry_out):
            free = list(ops[f"{key}_free"].items)
            positions = tuple(([0] if carry_b else []) +
                              [1 + j for j, o in enumerate(free) if self.is_batched(o)])
            name, flags = self.batched_callee(fns[key], positions, carry_out)
            return name, flags, ", ".join(_src(o) for o in free)
        c = self.names.fresh("carry")
        pred_b, active = False, ops.get("active")
        if carry_b or any(self.is_batched(o) for key in ("cond_fun_free", "body_fun_free")
                          for o in ops[key].items):
            cond, pred_b, cond_free = lifted("cond_fun", "free")
            body, _, body_free = lifted("body_fun", 0 if carry_b else None)
            body_call = f"{body}({', '.join(filter(None, [c, body_free]))})"
            cond_call = f"{cond}({', '.join(filter(None, [c, cond_free]))})"
            body_fun = f"lambda {c}: " + (f"select_batched({cond_call}, {body_call}, {c})"
                                          if pred_b else body_call)
            active = f"lambda {c}: {cond_call}" if pred_b or active else None
        else:   # the loop ran as written (only cotangents batched): its body as written, which
            body_fun = _src(ops["body_fun"])    # a vmap of this code reads with its cond
        extra = items["closed"] + items["consts"]
        positions = [0] + ([1] if carry_b else []) + \
            [2 + j for j, o in enumerate(extra) if self.is_batched(o)]
        vjp, _ = self.batched_callee(fns["body_vjp"], tuple(positions), 0)
        init = ops["init_val"]
        args = [body_fun, vjp, self.batched_src(ops["carry_bar"]),
                self.batched_src(init) if carry_b else _src(init), _src(ops["saved"])]
        for key in ("closed", "consts"):
            if items[key]:
                args.append(f"{key}={_src(ir.Seq(tuple(items[key]), 'tuple'))}")
        args += [f"{k}={v}" for k, v in self._batch_keywords(ops, items["closed"]).items()]
        if active is not None:
            args.append(f"active={_src(active) if isinstance(active, ir.Expr) else active}")
        self.emit_batched(f"{', '.join(op.targets)} = {op.callee_name}({', '.join(args)})")
        self.batched.update(op.targets)


# shape queries written per example (transformer/normalize.py): Python numbers too
_PER_EXAMPLE_QUERY = re.compile(r"^(\w+\.shape\[1:\]\[[^\]]*\]|\(\w+\.ndim - 1\)|"
                                r"\w+\.shape\[-?\d+\]|example_(?:size|len)\(\w+\))$")


def _given_or(given, default):
    """A keyword's source where the call gives one (a name may still hold None), else default."""
    if given is None or given == "None":
        return default
    if given.isidentifier() and given not in ("True", "False"):
        return f"{default} if {given} is None else {given}"
    return given


def _is_literal_number(o):
    """A Python number: a literal, or a shape query (x.shape[0], per example or not)."""
    return is_literal_number(o) or isinstance(o, ir.Expr) and bool(
        _PER_EXAMPLE_QUERY.match(o.src.replace(" ", "").replace("-1", " - 1")))


def _literal(src):
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError):
        return ...


def _at_least(a, b):
    """Whether rank a is known to be at least rank b."""
    if a is None or b is None:
        return False
    return (a[0] == b[0] or b[0] is None and a[0] is None) and a[1] >= b[1]


def _indexed_rank(rank, idx):
    """The rank after indexing with `idx` (ints drop an axis, None adds one, slices keep)."""
    try:
        node = ast.parse(f"_[{idx}]", mode="eval").body.slice
    except SyntaxError:
        return None
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    k = rank[1]
    for part in parts:
        if isinstance(part, ast.Slice) or isinstance(part, ast.Constant) and part.value is ...:
            continue
        if isinstance(part, ast.Constant) and part.value is None:
            k += 1
        elif isinstance(part, ast.Constant) and isinstance(part.value, int) or \
                isinstance(part, ast.UnaryOp) and isinstance(part.operand, ast.Constant):
            k -= 1
        else:
            return None
    return (rank[0], k)


def _is_int(src):
    try:
        return isinstance(ast.literal_eval(src), int)
    except (ValueError, SyntaxError):
        return False


def _outer_axis_call(code, start):
    """Index just past `batch_axis(` (or another helper taking an enclosing vmap's outer axes:
    batch_new_axis, batch_flat_axis, out_batch_axis) whose argument list ends at `start` (the
    index of its closing parenthesis), or None."""
    depth = 0
    for i in range(start, -1, -1):
        depth += {")": 1, "(": -1}.get(code[i], 0)
        if depth == 0:
            head = re.search(r"(?<![\w.])(batch_axis|batch_new_axis|batch_flat_axis|"
                             r"out_batch_axis)$", code[:i])
            return i + 1 if head else None
    return None


def _one_outer_axis_fewer(code, name):
    """`batch_axis(axis, x, k)` the normaliser wrote for a tracked x (one more outer axis: an
    enclosing vmap's) where x turned out unbatched: `k - 1` outer axes."""
    out, pos = [], 0
    for m in re.finditer(rf", {name}, (\d+)\)", code):
        if _outer_axis_call(code, m.end() - 1) is None:
            continue
        k = int(m[1]) - 1
        out += [code[pos:m.start()], f", {name}" + (f", {k})" if k else ")")]
        pos = m.end()
    return "".join(out) + code[pos:]


def _none_placeholders(stmts):
    """Names a branch sets to None only to keep them bound (the normaliser's if-join of a name
    the other branch defines): nothing to batch, and no cotangent when differentiated again."""
    return {s.code.partition(" = ")[0] for s in stmts
            if isinstance(s, ir.Plain) and re.fullmatch(r"\w+ = None", s.code.strip())}


def _is_literal(src):
    try:
        ast.literal_eval(src)
    except (ValueError, SyntaxError):
        return False
    return True


def _shift_axis(src, kind, main, op=None):
    """Source of an axis argument of one example's op, as the batched op's (batch axis 0): a
    literal non-negative axis moved past the batch axis; a negative one (which counts from the
    end of an example whose rank is not known here) or any other value through batch_axis,
    which checks it against the example's rank (batch_new_axis for ops that insert axes)."""
    helper = "batch_new_axis" if op in NEW_AXIS else "batch_axis"
    try:
        value = ast.literal_eval(src)
    except (ValueError, SyntaxError):
        return f"{helper}({src}, {main})"
    if value is None:
        return f"tuple(range(1, {main}.ndim))" if kind == "reduce" else "None"
    if isinstance(value, int) and value >= 0:
        return str(value + 1)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and v >= 0 for v in value):
        shifted = tuple(v + 1 for v in value)
        return repr(shifted)
    return f"{helper}({src}, {main})"


def _is_static_part(part):
    """An index part written as a slice, None or Ellipsis (no batch axis to give it)."""
    if not isinstance(part, ir.Expr):
        return False
    try:
        node = ast.parse(_src(part), mode="eval").body
    except SyntaxError:
        return False
    return (isinstance(node, ast.Constant) and node.value in (None, Ellipsis)) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "slice")


_NAME = re.compile(r"[A-Za-z_]\w*")


def _bounds_read(src, batched, index):
    """`src` (an index when `index`, else an expression or a statement) with each batched name
    that an index or a slice's bound in it reads wrapped as example_scalar(name) (BatchBuilder.
    static_bounds_read); `src` itself where it has none."""
    if not set(_NAME.findall(src)) & batched:
        return src
    try:
        tree = ast.parse(f"_[{src}]" if index else src)
    except SyntaxError:
        return src
    read = _BoundsRead(batched)
    if index:
        tree.body[0].value.slice = read.visit(tree.body[0].value.slice)
    else:
        for n in [n for n in ast.walk(tree) if isinstance(n, ast.Slice)]:
            read.visit(n)       # (its bounds replaced in place)
    if not read.hit:
        return src
    out = ast.unparse(tree)
    return out[len("_["):-1] if index else out


class _BoundsRead(ast.NodeTransformer):
    """Each batched name read as example_scalar(name) (_bounds_read)."""

    def __init__(self, batched):
        self.batched, self.hit = batched, False

    def visit_Call(self, n):    # (one read already: an enclosing vmap's own)
        if isinstance(n.func, ast.Name) and n.func.id == "example_scalar":
            return n
        return self.generic_visit(n)

    def visit_Name(self, n):
        if n.id not in self.batched or not isinstance(n.ctx, ast.Load):
            return n
        self.hit = True
        return ast.Call(ast.Name("example_scalar", ast.Load()), [n], [])


def _batched_index(idx):
    """An index of one example as the batch's: `:, <idx>` where the index is written out (a
    tuple, a slice, a number), `batch_index(idx)` where it is a value that may be a tuple."""
    try:
        node = ast.parse(f"_[{idx}]", mode="eval").body.slice
    except SyntaxError:
        return f"batch_index({idx})"
    if isinstance(node, ast.Tuple):       # (m[()] of a 0-d value: m[:] of the batch)
        return ", ".join([":"] + [ast.unparse(e) for e in node.elts])
    if isinstance(node, (ast.Slice, ast.Constant, ast.UnaryOp, ast.List)):
        return f":, {idx}"
    return f"batch_index({idx})"


def _flags(b, value):
    """Which outputs are batched: a bool, or a tuple of them for a returned tuple."""
    if isinstance(value, ir.Seq):
        return tuple(b.is_batched(i) for i in value.items)
    return b.is_batched(value)


def _mixed(leaves):
    """Whether a callee's outputs' leaves' flags (batched_callee.leaves) hold an output batched
    in some leaves only."""
    return isinstance(leaves, tuple) and any(isinstance(f, tuple) for f in leaves)


def _leaf_flags(flags):
    """A tuple of leaves' flags, True where all are batched and False where none is."""
    if all(f is False for f in flags):
        return False
    if all(f is True for f in flags):
        return True
    return flags


def _joined(a, b):
    """The leaves batched in a or in b."""
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    if len(a) != len(b):
        return True
    return _leaf_flags(tuple(_joined(x, y) for x, y in zip(a, b)))


def _covers(want, have):
    """Whether the leaves `want` include every batched leaf of `have`."""
    if want is True or have is False:
        return True
    if want is False or have is True:
        return False
    return len(want) == len(have) and all(_covers(w, h) for w, h in zip(want, have))


def _leaf_axes(leaves):
    """out_axes placing the leaves batched in `leaves`: 0 for them, None for the others."""
    if isinstance(leaves, tuple):
        return tuple(_leaf_axes(f) for f in leaves)
    return 0 if leaves else None


def _axes_leaves_flags(axes):
    """The leaves' flags an out_axes of 0, None and tuples of them says (None: other axes)."""
    if axes is None or axes == 0:
        return axes == 0
    if isinstance(axes, tuple) and not isinstance(axes, DictAxes):
        inner = tuple(_axes_leaves_flags(a) for a in axes)
        return None if None in inner else _leaf_flags(inner) if inner else False
    return None


def _leaves_src(src, have, want, size):
    """Source of the value `src`, batched in the leaves `have`, batched in `want` (which covers
    have): its unbatched leaves broadcast where want batches them, the tuple rebuilt."""
    if have == want:
        return src
    if not _covers(want, have):
        raise ValueError(f"internal: leaves {want} do not cover {have}")
    if have is False and want is True:
        return f"broadcast_batch({src}, {size})"
    n = len(have) if isinstance(have, tuple) else len(want)
    parts = [_leaves_src(f"{src}[{i}]", have[i] if isinstance(have, tuple) else have,
                         want[i] if isinstance(want, tuple) else want, size) for i in range(n)]
    return f"({parts[0]},)" if n == 1 else f"({', '.join(parts)})"


def _read_whole(code, partial):
    """The tuples batched leaf by leaf a plain line reads (`check_unpacked(c, 3)` counts c's
    items, batched or not: none)."""
    if re.fullmatch(r"check_unpacked\(\w+, \d+\)", code.strip()):
        return set()
    return {n for n in partial if re.search(rf"\b{n}\b", code)}


def _var_names(operand):
    if isinstance(operand, ir.Var):
        return {operand.name}
    if isinstance(operand, ir.Seq):
        return {n for i in operand.items for n in _var_names(i)}
    return set()


_WHOLE_SHAPES = (("{x}.shape[1:]", "{x}.shape"), ("({x}.ndim - 1)", "{x}.ndim"),
                 ("example_size({x})", "{x}.size"), ("example_len({x})", "len({x})"),
                 ("example_shape({x})", "{x}.shape"), ("example_ndim({x})", "{x}.ndim"),
                 ("example_spec({x})", "{x}"),
                 ("snp.shape({x})[1:]", "snp.shape({x})"),
                 ("(snp.ndim({x}) - 1)", "snp.ndim({x})"))


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_PASS = "\n    pass"


def _is_marker(node):
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "batched_items" \
        and len(node.args) == 1


def _parsed(code):
    """The module of one emitted line (a header `for i in xs:` given a body: .header), or
    None where it is no statement alone."""
    for text, header in ((code, False), (code + _PASS, True)):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        tree.header = header
        return tree if len(tree.body) == 1 else None
    return None


def _masked(code, name):
    """(code with each comprehension binding `name` hidden, what was hidden): its variable is
    no value of the function's of that name, and its queries are per example as written (no
    query of it is written back whole). None: not one line."""
    tree, raw = _parsed(code), code.encode()
    if tree is None:
        return None if re.search(rf"(?<![\w.])for\b[^:]*(?<![\w.]){name}\b", code) else (code, [])
    spans, hidden = [], []
    for c in ast.walk(tree):
        if isinstance(c, _COMPREHENSIONS) and any(
                isinstance(n, ast.Name) and n.id == name
                for g in c.generators for n in ast.walk(g.target)) and \
                not any(a <= c.col_offset and c.end_col_offset <= b for a, b in spans):
            spans.append((c.col_offset, c.end_col_offset))
    if spans and "\n" in code:
        return None
    for a, b in sorted(spans, reverse=True):
        hidden.append(raw[a:b])
        raw = raw[:a] + f"\0{len(hidden) - 1}\0".encode() + raw[b:]
    return raw.decode(), hidden


def _unmasked(code, hidden):
    for k, text in enumerate(hidden):
        code = code.replace(f"\0{k}\0", text.decode())
    return code


def _ops(stmts):
    return (s for s in ir.nested(stmts) if isinstance(s, ir.Op))


def _sized_by(fn, batched):
    """The batched parameters the batch is sized by: the first an array op reads (an array,
    or the program fails there), else all of them, batch_size_of taking the first that holds
    an array when it runs. A function has no batch axis, and a batched parameter may hold one:
    a dispatcher's callee `fn` or its tangent fn_dot, a function held by a module (`self.act
    = snp.tanh`) read through attribute_reader, or that function's cotangent `act_bar`,
    batched only as a dispatcher's whole output is. In that case (None: sized by the first)
    they may hold no array at all (`{'act': act_bar}`): the batched function takes its
    caller's size as well (build). So may a parameter the function tests for None or a type
    (`if tree is None: return 0.0` of a recursive helper called on a tuple's None leaf)."""
    from secant.ad.reverse import arrays_read
    arrays = arrays_read(fn.body) - _type_tested(fn)
    return next(([p] for p in batched if p in arrays), None)


_TYPE_TESTS = (re.compile(r"\bisinstance\((?:example_scalar\()?(\w+)"),
               re.compile(r"\b(\w+) is (?:not )?None\b"))


def _type_tested(fn):
    """The names fn tests for None or a type (a dispatch on what a pytree's node is)."""
    return {name for s in ir.nested(fn.body) if isinstance(s, ir.Plain)
            for pattern in _TYPE_TESTS for name in pattern.findall(s.code)}


def build(fn, batched, names, batched_callee, axis_name, axis_size, in_axes, out_axes):
    """(source lines, the batched parameters' out flags, the name of its parameter taking the
    caller's batch size or None) of the batched `fn` (ir.Function).

    batched: parameter names batched, in_axes: their batch axes (moved to 0 on entry);
    out_axes: an int or None for every output, a tuple of them for a returned tuple, or "free"
    (outputs as they come; the flags say which are batched)."""
    size = names.fresh("batch_size")
    b = BatchBuilder(fn, names, batched_callee, axis_name, size)
    # (a tuple parameter batched leaf by leaf: in_axes ("items", its leaves' flags))
    partial = {p: in_axes[p][1] for p in batched if isinstance(in_axes.get(p), tuple)}
    batched = [p for p in batched if p not in partial]
    for p in batched:
        axis = in_axes.get(p, 0)
        if axis != 0:
            b.emit(f"{p} = snp.moveaxis({p}, {axis}, 0)")
        b.batched.add(p)
        b.ranks[p] = (p, 0)
    takes_size = False
    if batched or partial:
        sized_by = _sized_by(fn, batched) if batched else None
        takes_size = sized_by is None
        default = f", default={size}" if takes_size else ""
        leaves = [p + "".join(f"[{i}]" for i in _batched_path(m)) for p, m in partial.items()]
        b.emit(f"{size} = batch_size_of({', '.join((sized_by or batched) + leaves)}{default})")
    elif axis_size is not None:
        b.emit(f"{size} = {int(axis_size)}")
    if hasattr(batched_callee, "size_params"):    # (a recursive call passes its size on)
        batched_callee.own_size = size if takes_size else None
    b.partial.update(partial)
    b.block(fn.body)
    if b.lines:
        b.lines.append(Line("", 1, "blank"))
    b.origin = fn.result.origin
    result = fn.result.value
    if b.partial and not (out_axes == "leaves" or isinstance(out_axes, tuple)
                          and not isinstance(out_axes, DictAxes)):
        b.make_whole(_var_names(result))
    flags = _flags(b, result)
    leaves = b.leaves_of(result)
    if out_axes == "leaves":    # outputs as they come, tuples batched leaf by leaf as they are
        ret = _leaves_result(b, result)
    elif out_axes == "free" and isinstance(result, ir.Seq) and result.kind in ("tuple", "list"):
        # one flag per output: an output holding batched values is batched in every leaf
        parts = [b.batched_src(item) if isinstance(item, ir.Seq) and b.is_batched(item)
                 else _src(item) for item in result.items]
        ret = f"[{', '.join(parts)}]" if result.kind == "list" else \
            f"({parts[0]},)" if len(parts) == 1 else ", ".join(parts)
    elif out_axes == "free":
        ret = _src(result)
    elif isinstance(out_axes, tuple) and not isinstance(out_axes, DictAxes) \
            and isinstance(result, ir.Var) and result.name in b.partial:
        ret = _output(b, result, out_axes)
    elif isinstance(out_axes, tuple) and not isinstance(out_axes, DictAxes):
        if not isinstance(result, ir.Seq) or len(result.items) != len(out_axes):
            raise BatchingError("out_axes is a tuple of the wrong length for the outputs",
                                fn.result.origin)
        parts = [_output(b, item, axis) for item, axis in zip(result.items, out_axes)]
        ret = f"({parts[0]},)" if len(parts) == 1 else ", ".join(parts)
    else:
        ret = _output(b, result, out_axes)
    b.lines.append(Line(f"return {ret}", 1, origin=fn.result.origin))
    blank = len(b.lines) - 2 if len(b.lines) > 1 else None
    b.written_shapes(len(b.lines) - 1)
    if blank is not None:       # (the lines it wrote above the return: above the blank line)
        blank = b.lines.pop(blank)
        b.lines.insert(len(b.lines) - 1, blank)
    # a call the user's code makes for its effect (a check) is written as a statement: kept
    effects = {t for s in ir.nested(fn.body)
               if isinstance(s, ir.Op) and getattr(s, "effect", False) for t in s.targets}
    for ln in b.lines:
        if ln.kind == "stmt" and ln.defines and ln.defines <= effects and " = " in ln.code:
            ln.code, ln.defines = ln.code.split(" = ", 1)[1], set()
    lines = dead_code_eliminated(b.lines)
    # the caller's size, a parameter `batch_size=None` (a call passes its own: the same batch),
    # where the batched parameters may hold no array and the function reads its size
    takes_size = takes_size and any(size in ln.defines for ln in lines)
    return lines, flags, size if takes_size else None, leaves


def _batched_path(leaves):
    """The indices reaching a batched leaf of a tuple batched leaf by leaf."""
    for i, f in enumerate(leaves):
        if f is True:
            return (i,)
        if isinstance(f, tuple):
            return (i,) + _batched_path(f)
    raise ValueError("internal: a tuple batched leaf by leaf with no batched leaf")


def _leaves_result(b, value):
    """The returned value as it is, a tuple's items each so (a list or dict mixing batched and
    unbatched items: all batched)."""
    if isinstance(value, ir.Seq) and value.kind == "tuple":
        parts = [_leaves_result(b, i) for i in value.items]
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    if isinstance(value, ir.Seq) and b.is_batched(value):
        return b.batched_src(value)
    return _src(value)


class DictAxes(tuple):
    """vmap's out_axes for a dict output, ((key, axis), ...), hashable (secant/batch.py
    _placed_spec): its leaves placed one by one, None ones left unbatched."""


def _output(b, value, axis):
    if isinstance(value, ir.Var) and (value.name in b.partial or isinstance(axis, tuple)
                                      and not isinstance(axis, DictAxes)
                                      and _axes_leaves_flags(axis) is not None):
        # (a tuple batched leaf by leaf; or out_axes leaf by leaf for a value whole or not)
        have, want = b.leaves_of(value), _axes_leaves_flags(axis)
        if value.name not in b.partial and not isinstance(want, tuple):
            pass
        elif want is None or want is True:
            b.make_whole({value.name})
        elif not _covers(want, have):
            raise BatchingError("vmap has out_axes=None for an output that is batched (it "
                                "differs from example to example); give it an int out_axis",
                                b.origin)
        else:
            return _leaves_src(value.name, have, want, b.size)
    if isinstance(axis, DictAxes):
        if not (isinstance(value, ir.Seq) and value.kind == "dict"):
            if any(a is None for a in _axes_leaves(axis)) and b.is_batched(value):
                raise BatchingError("vmap has out_axes=None for a leaf of a dict output "
                                    "that holds batched values; secant tells the leaves of a "
                                    "dict apart when the function returns it written as a "
                                    "dict literal ({'w': ..., 'n': ...})", b.origin)
            if not b.is_batched(value):
                return _src(value)
            raise BatchingError("vmap out_axes as a dict is placed for a dict written in the "
                                "return statement", b.origin)
        given = dict(axis)
        keys = [repr(k) for k in given]
        if sorted(keys) != sorted(value.keys):
            raise BatchingError(f"vmap out_axes specification must be a tree prefix of the "
                                f"corresponding value: keys {sorted(keys)} for a dict with "
                                f"keys {sorted(value.keys)}", b.origin)
        by_key = dict(zip(keys, given.values()))
        return "{" + ", ".join(f"{k}: {_output(b, v, by_key[k])}"
                               for k, v in zip(value.keys, value.items)) + "}"
    if isinstance(axis, tuple) and isinstance(value, ir.Seq) \
            and value.kind in ("tuple", "list"):
        if len(axis) != len(value.items):
            raise BatchingError("vmap out_axes is a tuple of the wrong length for an output",
                                b.origin)
        parts = [_output(b, item, a) for item, a in zip(value.items, axis)]
        inner = f"{parts[0]}," if len(parts) == 1 else ", ".join(parts)
        return f"({inner})" if value.kind == "tuple" else f"[{inner}]"
    if axis is None:
        if b.is_batched(value):
            raise BatchingError("vmap has out_axes=None for an output that is batched (it "
                                "differs from example to example); give it an int out_axis",
                                b.origin)
        return _src(value)
    if isinstance(value, ir.Seq) and value.kind in ("tuple", "list") and axis != 0:
        parts = [_output(b, item, axis) for item in value.items]     # one out_axis for all
        inner = f"{parts[0]}," if len(parts) == 1 else ", ".join(parts)
        return f"({inner})" if value.kind == "tuple" else f"[{inner}]"
    src = b.batched_src(value)
    if axis == 0:
        return src
    if isinstance(value, ir.Var) and value.name in b.call_results:
        return f"batch_axis_to({src}, {axis})"
    return f"snp.moveaxis({src}, 0, out_batch_axis({axis}, {src}))"    # (checks the axis)


def _axes_leaves(axis):
    if isinstance(axis, DictAxes):
        return [a for _, v in axis for a in _axes_leaves(v)]
    if isinstance(axis, tuple):
        return [a for v in axis for a in _axes_leaves(v)]
    return [axis]


def _next_axis(axis):
    """An int axis argument of one example as the axis of the batched value (batch axis 0)."""
    return axis + 1 if axis >= 0 else axis
