"""Containers of tracked values are values (part of the normaliser, transformer/normalize.py).

A list, tuple or dict built from differentiated (or batched) values is tracked like an array:
- bound to a name, it is an explicit `pack` op (`b = [1.0, a_sq, 2.0]`) whose derivative puts
  the container's cotangent back into its items;
- passed where an op takes an array (`np.mean([x, y])`, `np.array([x, 2 * x])`), it is first
  stacked into one (`snp.stack`, as NumPy converts it), so its derivative is known;
- indexed (`b[1]`, `b[-1]`, `b[1:]`, `d["a"]`, `d.get("a")`), unpacked, iterated (`for v in b`,
  `enumerate`, `zip`, `d.items()`, `d.values()`), passed to helpers and returned;
- built in a loop: `out.append(v)` is rewritten (before anything else) to `out = out + [v]`, a
  `concat_seq` op with a known derivative, and a comprehension to the loop that builds it
  (`squares = []; for i in ...: squares = squares + [x * i]`), so every transform gets them;
- folded: functools.reduce and itertools.accumulate as the loops they run; sorted(xs, key=f)
  as `[xs[i] for i in order]`, the order found on the values when the code runs.
`self.containers` maps the SSA names that hold containers to their kind ("list", "tuple",
"dict", or None when unknown).
"""
import copy
import functools
import itertools
import re

import gast

from secant.transformer import ir
from secant.transformer.hygiene import copy_tree, walk as _walk
from secant.transformer.ops import TREE_OPS

_COMPREHENSIONS = (gast.ListComp, gast.GeneratorExp, gast.DictComp)


# displays and comprehensions whose value is a container of that kind
_DISPLAYS = {gast.List: "list", gast.ListComp: "list", gast.Tuple: "tuple", gast.Dict: "dict",
             gast.DictComp: "dict"}


def as_sequence(value):
    """`model.layers[:-1] + (last,)` with model not differentiated: generated code reads it as
    a concatenation, which it is when model.layers[:-1] is a list or tuple, checked when the
    code runs (an array would be NumPy's addition: an error, never a wrong derivative)."""
    if not isinstance(value, (list, tuple)):
        from secant.backends.errors import SecantTypeError, where
        raise SecantTypeError(f"secant reads `+` of this {type(value).__name__} and a list or "
                              f"tuple display as Python's concatenation, but NumPy adds them; "
                              f"write snp.asarray(...) around the display to add{where()}")
    return value


as_sequence.__secant_placeholder__ = True     # (a constant: no derivative, no batching)


def _set_location(nodes, where, force=False):
    """Give synthesised nodes the position of the user's node they stand for (the user's own
    sub-expressions keep theirs, unless `force`)."""
    for root in nodes:
        for n in _walk(root):
            if not isinstance(n, (gast.expr, gast.stmt)):
                continue
            if force or getattr(n, "lineno", None) is None:
                n.lineno = getattr(where, "lineno", 1)
                n.col_offset = getattr(where, "col_offset", 0)
                n.end_lineno = getattr(where, "end_lineno", n.lineno)
                n.end_col_offset = getattr(where, "end_col_offset", 0)


def hoist_choices(value, fresh):
    """`f(a if c else b)` as a comprehension's item (or a sum's term): the statements that
    choose before it in the loop body, `if c: chosen = a` / `else: chosen = b`, and the item
    with `chosen` in the choice's place (nested choices in turn; a choice in a lambda or a
    comprehension of its own stays as written, evaluated only there)."""
    pre = []
    if not any(isinstance(n, gast.IfExp) for n in _walk(value)):
        return pre, value
    value = copy.deepcopy(value)        # (the user's tree stays as written)

    class Hoist(gast.NodeTransformer):
        def visit_IfExp(self, n):
            if isinstance(n.body, gast.Constant) and isinstance(n.orelse, gast.Constant):
                return n
            n.test = self.visit(n.test)
            name = fresh("chosen")
            branches = []
            for part in (n.body, n.orelse):
                stmts, part = hoist_choices(part, fresh)
                branches.append(stmts + [gast.Assign(targets=[_name(name, store=True)],
                                                     value=part, type_comment=None)])
            pre.append(gast.If(test=n.test, body=branches[0], orelse=branches[1]))
            _set_location(pre[-1:], n)
            return gast.copy_location(_name(name), n)

        def _keep(self, n):
            return n

        visit_BoolOp = visit_Lambda = visit_ListComp = visit_DictComp = _keep
        visit_SetComp = visit_GeneratorExp = _keep

    value = Hoist().visit(value)
    return pre, value


_STRICT_ZIP = "zip() arguments have different lengths (strict=True)"


def _name(id_, store=False):
    return gast.Name(id_, gast.Store() if store else gast.Load(), None, None)


def _local_names(fnode, grown):
    """Of the names in `grown` (those the function appends to or extends), the lists the
    function builds itself and never aliases: names it assigns (not parameters: their lists
    belong to the caller) that are never the whole value of an assignment nor an item of a
    display (`a = out`, `[out]`), where an in-place append would show through."""
    params = {n.id for n in _walk(fnode.args) if isinstance(n, gast.Name)}
    out = set()
    aliases = []                                # (name, the node that aliases it)
    nodes = list(_walk(fnode))
    for n in nodes:
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            out.add(n.id)
        if isinstance(n, (gast.Assign, gast.AnnAssign)) and isinstance(n.value, gast.Name):
            aliases.append((n.value.id, n))
        if (isinstance(n, (gast.List, gast.Tuple, gast.Set))     # (not a target: a, b = [], [])
                and not isinstance(getattr(n, "ctx", None), gast.Store)):
            aliases += [(e.id, n) for e in n.elts if isinstance(e, gast.Name)]
        if isinstance(n, gast.Dict):
            aliases += [(e.id, n) for e in n.values if isinstance(e, gast.Name)]
    out = (out & grown) - params
    loops = [n for n in nodes if isinstance(n, (gast.For, gast.While))]
    return out - {name for name, at in aliases if name in out and _grows_after(fnode, loops,
                                                                                 name, at)}


def _grows_after(fnode, loops, name, at):
    """Whether `name.append/extend(...)` may run after `at` aliases it (`a = out`, `[out]`):
    one later in the source, or in a loop around both. An alias made after the list's last
    append (`return tuple(out) if c else out`, desugared to `chosen = out`) sees no change."""
    def grows(node):
        return [n for n in _growths(node) if n.func.value.id == name]
    line = getattr(at, "lineno", None)
    if line is None:
        return True
    if any(getattr(c, "lineno", line) >= line for c in grows(fnode)):
        return True
    return any(grows(loop) and any(n is at for n in _walk(loop))
               and not _fresh_each_iteration(loop, name, at, grows) for loop in loops)


def _fresh_each_iteration(loop, name, at, grows):
    """Whether each iteration of `loop` binds `name` to a new list (`new = []`, a statement of
    its body) before it appends to it or aliases it: an alias (`basis = new`) then holds the
    list of its iteration, which no later append reaches."""
    for k, s in enumerate(loop.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id == name \
                and isinstance(s.value, (gast.List, gast.ListComp)):
            rest = [n for t in loop.body[k + 1:] for n in _walk(t)]
            return any(n is at for n in rest) and all(
                any(c is n for n in rest) for c in grows(loop))
        if grows(s) or any(n is at for n in _walk(s)):
            return False
    return False


def _growths(node):
    """The `name.append(...)` / `name.extend(...)` calls in `node`."""
    return [n for n in _walk(node) if is_growth(n)]


def is_growth(n):
    """Whether node `n` is a `name.append(...)` / `name.extend(...)` call."""
    return isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and \
        n.func.attr in ("append", "extend") and isinstance(n.func.value, gast.Name)


class _AppendRewriter(gast.NodeTransformer):
    """`out.append(v)` -> `out = out + [v]`, `out.extend(vs)` -> `out = out + list(vs)` for a
    list the function binds itself (lists are values: no one else holds this one)."""

    def __init__(self, local, generated):
        self.local = local
        self.generated = generated

    def visit_Expr(self, node):
        call = node.value
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr in ("append", "extend")
                and isinstance(call.func.value, gast.Name) and len(call.args) == 1
                and not call.keywords and not isinstance(call.args[0], gast.Starred)):
            return node
        name = call.func.value.id
        if name not in self.local or (self.generated and re.search(r"_stack(_\d+)*$", name)):
            return node
        if call.func.attr == "append":
            tail = gast.List(elts=[call.args[0]], ctx=gast.Load())
        else:
            tail = gast.Call(func=_name("list"), args=[call.args[0]], keywords=[])
        new = gast.Assign(targets=[_name(name, store=True)],
                          value=gast.BinOp(left=_name(name), op=gast.Add(), right=tail),
                          type_comment=None)
        new.value.secant_concat = True      # a list concatenation, whatever `name` holds
        _set_location([new], node)
        new.value.right = tail
        if call.func.attr == "append":   # keep the item's own positions (error messages)
            tail.elts = [call.args[0]]
        return new

    def visit_FunctionDef(self, node):      # nested defs keep their own lists
        return node

    def visit_Lambda(self, node):
        return node


class ContainerMixin:
    """Methods of Normaliser (transformer/normalize.py) for containers of tracked values."""

    def rewrite_appends(self, grown=None):
        """grown: the names of the `name.append(...)` calls of self.node, where known."""
        generated = self.src.generated
        if grown is None:
            grown = {c.func.value.id for c in _growths(self.node)}
        if not grown:
            return
        local = _local_names(self.node, grown)
        # rewritten on a copy: the tree may be a function's attached source (desugared,
        # generated), which functionalize and later transforms read again as written
        self.node = copy_tree(self.node)
        self.src = copy.copy(self.src)
        self.src.node = self.node
        body = [_AppendRewriter(local, generated).visit(s) for s in self.node.body]
        self.node.body = body

    def container_kind(self, operand):
        """The kind of container an operand holds ("list", "tuple", "dict", None: unknown), or
        False when it is not known to be a container."""
        if isinstance(operand, ir.Seq):
            return operand.kind
        if isinstance(operand, ir.Var) and operand.name in self.containers:
            return self.containers[operand.name]
        return False

    def item_kind(self, base, item, key=None):
        """`item`, read from container `base` (at int `key`, where known), is a container
        itself when base's items are (a list of lists: item_kinds) or that one is (t[1] of
        t = (x, [a, b]): field_kinds)."""
        if not isinstance(item, ir.Var):
            return
        if base.name in self.item_kinds:
            self.containers[item.name] = self.item_kinds[base.name]
        elif self.field_kinds.get(base.name, {}).get(key, False) is not False:
            self.containers[item.name] = self.field_kinds[base.name][key]

    def is_container(self, operand):
        return self.container_kind(operand) is not False

    def pack(self, seq, hint=None):
        """A Seq with a tracked item as one tracked value: a `pack` op (nested Seqs first)."""
        items = tuple(self.pack(i) if isinstance(i, ir.Seq) and _has_var(i) else i
                      for i in seq.items)
        seq = ir.Seq(items, seq.kind, seq.keys)
        name = self.names.fresh(hint or {"dict": "d", "tuple": "t"}.get(seq.kind, "items"))
        self.out.append(ir.Op([name], "pack", {"items": seq}, {}, self.origin))
        self.tracked.add(name)
        self.containers[name] = seq.kind
        kinds = {self.container_kind(i) for i in items}
        if len(kinds) == 1 and False not in kinds:     # [[a, b], [c, d]]: items are lists
            self.item_kinds[name] = kinds.pop()
        elif seq.kind != "dict" and kinds != {False}:  # (x, [a, b]): t[1] is a list
            self.field_kinds[name] = dict(enumerate(map(self.container_kind, items)))
        return ir.Var(name)

    def as_array(self, operand, node):
        """An operand passed where an op takes an array: a tracked list or tuple is stacked into
        one, as NumPy converts it (np.mean([x, y]) is the mean of snp.stack([x, y]))."""
        kind = self.container_kind(operand)
        if kind is False or not _has_var(operand):
            return operand
        if kind == "dict" and isinstance(operand, ir.Var) and operand.name in self.read_as_dict:
            return operand      # (add_at's `tree_bar.at[idx]` where isinstance(tree_bar, dict)
            #                     is False: an array, whatever another branch read it as)
        if kind == "dict":
            raise self.src.error(node, "a dict of differentiated values cannot be used as an "
                                 "array; pass its values (list(d.values())) or one of them")
        if isinstance(operand, ir.Seq):
            items = tuple(self.as_array(i, node) if isinstance(i, ir.Seq) else i
                          for i in operand.items)
            if not any(isinstance(i, ir.Var) for i in items):
                return operand
            operand = ir.Seq(items, "list")
        return self._emit("stack", {"arrays": operand}, {})

    def as_sequence(self, operand, node):
        """The list operand of stack/concatenate/sum: its items arrays (nested lists stacked)."""
        if isinstance(operand, ir.Seq):
            if operand.kind == "dict":
                raise self.src.error(node, "a dict of differentiated values cannot be stacked; "
                                     "pass list(d.values())")
            return ir.Seq(tuple(self.as_array(i, node) if isinstance(i, ir.Seq) else i
                                for i in operand.items), operand.kind)
        if self.container_kind(operand) == "dict":
            raise self.src.error(node, "a dict of differentiated values cannot be stacked; "
                                 "pass list(d.values())")
        return operand

    def mark_helper_result(self, callee, operands, names):
        """The derivative helpers (ad/helpers.py) whose results are containers, read again in
        a derivative of a derivative or a vmap of one: their items are read as such."""
        module = getattr(callee, "__module__", "") or ""
        if not module.startswith(("secant.ad.", "secant.batching.")):
            return
        fn = getattr(callee, "__name__", "")
        first = next(iter(operands.values()), None)
        if fn in ("unmerge", "pick"):
            kind = "dict"
        elif fn in ("unstack_as", "add_n_grad", "unconcatenate") and len(names) > 1:
            return      # unpacked into its items: arrays, one per item stacked or added
        elif fn in ("split_at", "unstack_as", "add_n_grad", "unconcatenate"):
            kind = None
        elif fn in ("grad_of_fields", "grad_of_fields_batched") and len(names) > 1 and \
                _name_of(first) not in self.item_kinds:
            return      # `x_bar, y_bar = grad_of_fields(pair, ...)`: its items, arrays
        elif fn in ("zeros_like_tree", "add_at", "add_grads", "grad_of_fields",
                    "grad_of_fields_batched", "broadcast_batch") \
                and (self.is_container(first) or self.is_plain_list(first)
                     or _name_of(first) in self.item_kinds):
            kind = self.container_kind(first) or None
        else:
            return
        for n in names:
            self.containers[n] = kind
            if fn == "split_at" and len(names) == 1:     # (head, tail): two lists or tuples
                self.item_kinds[n] = None
            elif _name_of(first) in self.item_kinds:
                self.item_kinds[n] = self.item_kinds[_name_of(first)]   # a cotangent of such

    def structure_only(self, fn, operands):
        """Arguments of the container cotangent helpers that give only a structure or shape
        (unstack_as(g, b): b's type): constants for a derivative of a derivative."""
        if (getattr(fn, "__module__", "") or "") not in ("secant.ad.helpers",
                                                           "secant.batching.helpers"):
            return operands
        positions = _STRUCTURE_ARGS.get(getattr(fn, "__name__", ""), ())
        return {k: ir.Expr(_plain(o)) if k in {f"arg{i}" for i in positions} else o
                for k, o in operands.items()}

    def note_plain_binding(self, name, operand):
        """A name bound to an untracked list or tuple (`out = []`): `out + [v]` concatenates."""
        try:
            node = gast.parse(operand.src, mode="eval").body
        except SyntaxError:
            return
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "split_at" and self.src.generated:
            self.item_kinds[name] = None        # an unbatched split_at's (head, tail): lists
        if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Mult) and \
                isinstance(node.left, gast.List):
            node = node.left                    # [0.0] * n
        while isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Slice):
            node = node.value                   # out[i:]: a slice of a list is a list
        if isinstance(node, (gast.List, gast.Tuple, gast.ListComp)) or (
                isinstance(node, gast.Name) and node.id in self.list_names) or (
                isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
                and node.func.id in ("list", "tuple") and node.func.id not in self.current):
            self.list_names.add(name)
        if isinstance(node, (gast.Dict, gast.DictComp)) or (
                isinstance(node, gast.Name) and node.id in self.dict_names) or (
                isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
                and node.func.id == "dict" and "dict" not in self.current):
            self.dict_names.add(name)
        else:
            self.dict_names.discard(name)       # (bound again, to something else)

    def _global_value(self, operand):
        """The value of an untracked operand naming a global or closure variable (read at
        transform time: `[a] + NS` concatenates a list, `[a] + W` adds an array), else None."""
        if not isinstance(operand, ir.Expr) or not operand.src.isidentifier() \
                or operand.src in self.current or operand.src in self.current.values():
            return None         # (a local: its value is the running program's)
        kind, value = self.src.resolve_name(operand.src)    # (recorded: a guard of the cache)
        return value if kind in ("global", "closure") else None

    def _constant_sequence(self, operand):
        """Whether an untracked operand is a list or tuple written as a display or a
        tuple(...) / list(...) call, or a jvp's zero tangent of one or of a global tuple
        (`zeros_like_tree(REST)`, the tangent of `((w, b),) + REST`): a concatenation."""
        if _constant_kind(operand) in ("list", "tuple"):
            return True
        m = re.fullmatch(r"zeros_like_tree\((\w+)\)", operand.src.strip()) \
            if isinstance(operand, ir.Expr) else None
        return bool(m) and isinstance(self._global_value(ir.Expr(m.group(1))), (list, tuple))

    def is_plain_list(self, operand):
        if not isinstance(operand, ir.Expr):
            return False
        src = operand.src.strip()
        sliced = re.fullmatch(r"(\w+)(\[[\w\s+-]*:[\w\s+-]*\])+", src)
        if sliced and sliced.group(1) in self.list_names:
            return True                         # out[:i], out[i:][1:]: slices of a list
        if src.startswith(("broadcast_batch(", "zeros_like_tree(")) and self.src.generated:
            # a list (or tuple) of constants, batched or its tangent: vmap's
            # broadcast_batch([c, d], n) and jvp's zeros_like_tree([c, d]) are lists as given,
            # their leaves with a batch axis or zeros ([a] + it, under vmap again)
            call = gast.parse(src, mode="eval").body
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and call.args \
                    and self.src.resolve_name(call.func.id)[1] in _structure_keeping():
                return self.is_plain_list(ir.Expr(gast.unparse(call.args[0]).strip()))
        checked = re.match(r"(\w+)\(", src)      # as_sequence(c): a list or tuple, checked
        if checked and src.endswith(")") and (self.bindings.get(checked.group(1)) is as_sequence
                                              or self._global_value(ir.Expr(checked.group(1)))
                                              is as_sequence):
            return True
        return src in self.list_names or src.startswith(("[", "(")) and src.endswith(("]", ")"))\
            and not src.startswith("((") and _is_display(src) \
            or src.startswith(("list(", "tuple(", "sorted(")) and src.endswith(")")

    def arrays_from_lists(self, op, operands):
        """A tracked list or tuple where an op takes an array (x * [a, b], x.at[i].set([a, b]))
        is stacked first, as NumPy converts it: never read as a constant."""
        from secant.transformer.ops import OPS
        spec = OPS[op]
        if op in CONTAINER_OPS or op in ("add_grads", "add_at", "add_at_grad", "call") \
                or op == "grad_of_fields":
            return operands
        if not any(isinstance(o, ir.Seq) and _has_var(o) for p, o in operands.items()
                   if p in spec.arrays):
            return operands
        return {p: self.as_array(o, self._node) if p in spec.arrays and isinstance(o, ir.Seq)
                else o for p, o in operands.items()}

    def mark_container(self, name, operand):
        kind = self.container_kind(operand)
        if kind is not False and name is not None:
            self.containers[name] = kind
            if isinstance(operand, ir.Var) and operand.name in self.item_kinds:
                self.item_kinds[name] = self.item_kinds[operand.name]   # its cotangent's too
            if isinstance(operand, ir.Var) and operand.name in self.field_kinds:
                self.field_kinds[name] = self.field_kinds[operand.name]

    # --- expressions ------------------------------------------------------------------------
    def _bound_to_lists(self, name):
        """Whether every assignment of the local `name` in the function binds a list display
        or comprehension, or a call of a Python function each of whose returns is one."""
        values = [n.value for n in _walk(self.node) if isinstance(n, gast.Assign)
                  and any(isinstance(t, gast.Name) and t.id == name for t in n.targets)]
        if not values or any(len(n.targets) != 1 or not isinstance(n.targets[0], gast.Name)
                             for n in _walk(self.node) if isinstance(n, gast.Assign) and any(
                                 isinstance(t, gast.Name) and t.id == name for t in n.targets)):
            return False
        return all(_list_display(v) or isinstance(v, gast.Call) and _returns_lists(
            self._resolve(v.func)) for v in values)

    def repeated_seq(self, node, x, y):
        """`[a, b] * n` (or `n * [a, b]`) of tracked values with n a Python int known when the
        function is read (a literal, or a name bound outside it: a closure cell, a global): the
        list repeated, as Python repeats it; None for anything else."""
        for seq, count, count_node in ((x, y, node.right), (y, x, node.left)):
            if not (isinstance(seq, ir.Seq) and _has_var(seq) and seq.kind in ("list", "tuple")):
                continue
            n = None
            if isinstance(count, ir.Expr) and count.src.lstrip("-").isdigit():
                n = int(count.src)
            elif isinstance(count_node, (gast.Name, gast.Attribute)):
                value = self._resolve(count_node)
                if isinstance(value, int) and not isinstance(value, bool):
                    n = value
            if n is None:
                continue
            return ir.Seq(tuple(seq.items) * max(n, 0), seq.kind)
        return None

    def stop_gradient_tree(self, tree):
        """lax.stop_gradient of a tracked container: the op stop_gradient_tree, whose operand
        and result are pytrees of the same structure (no derivative; batched leaf by leaf)."""
        tree = self.pack(tree) if isinstance(tree, ir.Seq) else tree
        out = self._emit("stop_gradient_tree", {"tree": tree}, {})
        if isinstance(out, ir.Var):     # (under vmap; a derivative reads it as a constant)
            self.containers[out.name] = self.container_kind(tree)
        return out

    def _plain_dict(self, o):
        """An untracked operand known to hold a dict: a display, a name bound to one
        (`defaults = {...}`) or a global dict, or a jvp's zeros_like_tree of either, or
        vmap's broadcast_batch of one (`broadcast_batch(defaults, n) | p`, under vmap again)."""
        if not isinstance(o, ir.Expr):
            return False
        src = o.src.strip()
        if src.startswith("broadcast_batch(") and self.src.generated:
            call = gast.parse(src, mode="eval").body
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and call.args \
                    and self.src.resolve_name(call.func.id)[1] in _structure_keeping():
                return self._plain_dict(ir.Expr(gast.unparse(call.args[0]).strip()))
        inner = re.fullmatch(r"zeros_like_tree\((\w+)\)", src)
        named = ir.Expr(inner.group(1)) if inner is not None else o
        return src.startswith("{") or src in self.dict_names or _constant_kind(o) == "dict" \
            or inner is not None and inner.group(1) in self.dict_names \
            or isinstance(self._global_value(named), dict)     # `DEFAULTS | p`, a global dict

    def container_binop(self, node, x, y):
        """`a + b` of lists or tuples (concatenation), `a | b` of dicts (merge): a container op,
        or None when neither side is a container."""
        add = isinstance(node.op, gast.Add)
        merge = isinstance(node.op, gast.BitOr)
        if merge and (not self.batching or getattr(node, "secant_merge", False) or any(
                self.container_kind(o) == "dict" or self._plain_dict(o) for o in (x, y))):
            # `{} | p`, `e | p`, `defaults | p` (defaults = {...}): Python merges dicts, so p
            # is one; with no dict in sight, a merge too (under vmap, NumPy's `|`): a bool or
            # integer array (a flag a loop carries) has no derivative, which unmerge and pick
            # (ad/helpers.py) give for an array
            for o in (x, y):
                if isinstance(o, ir.Var) and not self.is_container(o):
                    self.containers[o.name] = "dict"
                    self.read_as_dict.add(o.name)
        if isinstance(node.op, gast.Mult):
            repeated = self.repeated_seq(node, x, y)
            if repeated is not None:
                return repeated
        for o, other in ((x, y), (y, x)) if add else ():
            if isinstance(o, ir.Var) and not self.is_container(o) \
                    and _constant_kind(other) == "list" and self._bound_to_lists(o.name):
                # xs + [0.5] * 2, xs = _xs(x) a user function's list: a concatenation
                self.containers[o.name] = "list"
        if not (add or merge) or not (self.is_container(x) or self.is_container(y)) \
                or not (_has_var(x) or _has_var(y)):
            return None
        if add:     # a list + a list concatenates; a list + an array is NumPy's addition
            # (a tracked value of unknown kind + a list display: a list, as in generated code;
            # were it an array, the concatenation's derivative fails loudly, never silently)
            sides = [self.is_container(o) or self.is_plain_list(o)
                     or isinstance(self._global_value(o), (list, tuple))
                     or isinstance(o, ir.Var) and isinstance(other, ir.Seq)
                     or self._constant_sequence(o)      # a jvp's zeros_like_tree(REST)
                     for o, other in ((x, y), (y, x))]
            if not all(sides) and not getattr(node, "secant_concat", False):
                unknown = [o for o, side in zip((x, y), sides)
                           if not side and self._global_value(o) is None]
                if not (unknown and not (self.src.generated or self._own_code())
                        and all(isinstance(o, ir.Expr) for o in unknown) and any(
                        isinstance(o, ir.Seq) and o.kind in ("list", "tuple") and _has_var(o)
                        for o in (x, y))):
                    return None
                # `model.layers[:-1] + (last,)`, model not differentiated: a concatenation,
                # the untracked side's kind checked when the code runs (an array: an error)
                look_up = next((k for k, v in self.bindings.items() if v is as_sequence),
                               None) or self.names.fresh("as_sequence")
                self.src.imports[look_up] = self.bindings[look_up] = as_sequence
                x, y = (ir.Expr(f"{look_up}({o.src})") if any(o is u for u in unknown) else o
                        for o in (x, y))
        if add and "dict" in (self.container_kind(x), self.container_kind(y)):
            return None
        op = "concat_seq" if add else "dict_merge"
        if merge and "dict" not in (self.container_kind(x), self.container_kind(y)):
            return None
        if isinstance(x, ir.Seq) and x.kind == "dict" and _has_var(x):
            x = self.pack(x)            # ({"a": x} | {...}): its cotangent is read by key
        hint = x.name if isinstance(x, ir.Var) else None
        out = self._emit(op, {"x": x, "y": y}, {}, hint or ("d" if merge else "items"))
        kind = self.container_kind(x) or self.container_kind(y) or None
        self.containers[out.name] = "dict" if merge else kind
        return out

    def container_subscript(self, node, base):
        """c[i], c[-1], c[1:], c[i] in a loop, d["a"] of a known container."""
        if isinstance(node.slice, gast.Constant) and type(node.slice.value) in (int, str):
            return None             # a field, as for any tracked tuple (normalize.subscript)
        from secant.transformer.normalize import _index_src
        idx = _index_src(node.slice, self)
        out = self._emit("getitem", {"a": base}, {"idx": idx}, item_hint(base.name, node.slice))
        self.out[-1].container = True       # its cotangent is built item by item
        if isinstance(node.slice, gast.Slice):
            self.containers[out.name] = self.containers.get(base.name)
            return out
        self.item_kind(base, out)   # rows[i] of a list of lists: a list itself
        if self.batching:           # `for it in iterables: for v in it`: a list or an array,
            self.rows_ops.append(self.out[-1])  # its items read by item_of/index_examples
        return out

    def container_method(self, node, base):
        """d.get(k), d.values(), d.items(), d.keys(), c.copy() on a tracked container."""
        func = node.func
        if self._maybe_object_method(node, base):
            return self.dict_or_object_method(node, base)
        if func.attr in ("get", "items", "values", "keys", "setdefault") \
                and not self.is_container(base):
            self.containers[base.name] = "dict"     # a parameter read as a dict (a derivative's
            #                                         `keys = list(tree_bar.keys())`): its items
            self.read_as_dict.add(base.name)
        if func.attr == "get" and len(node.args) == 1 and not node.keywords:   # by key too
            key = self.operand(node.args[0])
            if not isinstance(key, ir.Expr):
                raise self.src.error(node, "a dict key must not depend on differentiated "
                                     "values")
            return self._emit("field", {"tree": base}, {"key": key.src},
                              _key_hint(base.name, key.src))
        if func.attr == "copy" and not node.args and not node.keywords:
            return base
        if func.attr == "keys" and not node.args:
            return ir.Expr(f"list({base.name}.keys())")
        if func.attr in ("values", "items") and not node.args:
            return self.container_view(node, base, func.attr)
        if func.attr == "get" and len(node.args) == 2 and not node.keywords:
            # d.get(k, default): `d[k] if k in d else default` (a dict's keys are static)
            self.current[base.name] = base.name
            self.names.reserve(base.name)
            key = node.args[0]
            got = self.names.fresh(f"{base.name}_get")
            pick = gast.If(
                test=gast.Compare(left=key, ops=[gast.In()], comparators=[_name(base.name)]),
                body=[gast.Assign(targets=[_name(got, True)], type_comment=None, value=gast.Subscript(
                    value=_name(base.name), slice=key, ctx=gast.Load()))],
                orelse=[gast.Assign(targets=[_name(got, True)], value=node.args[1],
                                    type_comment=None)])
            _set_location([pick], node)
            self.names.reserve(got)
            self.statement(pick)
            return self.operand(_name(got))
        if func.attr == "setdefault" and len(node.args) in (1, 2) and not node.keywords:
            # d.setdefault(k, default) (flax-like scopes walking a variables dict by path): `d[k]`
            # when k is in d (a dict's keys are static); a missing key would change the dict in
            # place, which a container of differentiated values never is: KeyError, as pop's
            self.current[base.name] = base.name
            self.names.reserve(base.name)
            key = node.args[0]
            got = self.names.fresh(f"{base.name}_item")
            read = gast.Assign(targets=[_name(got, True)], type_comment=None, value=gast.Subscript(
                value=_name(base.name), slice=copy.deepcopy(key), ctx=gast.Load()))
            missing = gast.Raise(exc=gast.Call(func=_name("KeyError"), args=[copy.deepcopy(key)],
                                               keywords=[]),
                                 cause=None)
            pick = gast.If(
                test=gast.Compare(left=key, ops=[gast.In()], comparators=[_name(base.name)]),
                body=[read], orelse=[missing])
            _set_location([pick], node)
            self.names.reserve(got)
            self.statement(pick)
            return self.operand(_name(got))
        if func.attr == "get":
            raise self.src.error(node, f"d.get(key, default) of a dict of {self.what} values "
                                 "is not supported; test `key in d` and read d[key]")
        if self.container_kind(base) not in ("list", "tuple", "dict") \
                and not hasattr(dict, func.attr) and not hasattr(list, func.attr):
            # m.cube(x) of a pytree object built in place (tree_unflatten of its fields): the
            # method found when it runs, called through the dispatcher as m.cube is
            return self.dynamic_call(node, func, base)
        raise self.src.error(node, f"the method .{func.attr}() of a container of "
                             f"{self.what} values is not supported")

    def _maybe_object_method(self, node, base):
        """p.get(k), p.items(), p.keys(), p.values() of a value not known as a container (a
        parameter) in user code that reads it as a dict nowhere else: a dict's, or a method of
        a pytree object of that name (a registered class's `get(self, name)`, a namedtuple's
        `items(self)`); only the running program tells which."""
        func = node.func
        if func.attr not in ("get", "items", "values", "keys") or self.is_container(base) \
                or getattr(node, "_secant_dict_method", False) or self.src.generated \
                or self._own_code() or not isinstance(func.value, gast.Name) \
                or len(node.args) != (func.attr == "get") or node.keywords:
            return False
        name = func.value.id
        for n in _walk(self.node):      # name["w"], **name: a dict's reads elsewhere
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) \
                    and n.value.id == name and isinstance(n.slice, gast.Constant) \
                    and isinstance(n.slice.value, str):
                return False
            if isinstance(n, gast.keyword) and n.arg is None and isinstance(n.value, gast.Name) \
                    and n.value.id == name:
                return False
        return True

    def dict_or_object_method(self, node, base):
        """`if isinstance(p, dict): got = p.get(k) / else: got = p.get(k)`: the first read as a
        dict's method (a field, a list of its items), the second as a call of the object's own
        method, found when it runs (dynamic_call)."""
        self.current[base.name] = base.name
        self.names.reserve(base.name)
        got = self.names.fresh(f"{base.name}_{node.func.attr}")
        calls = []
        for mark in ("_secant_dict_method", "_secant_object_method"):
            call = copy.deepcopy(node)
            call.func.value = _name(base.name)
            setattr(call, mark, True)
            calls.append(gast.Assign(targets=[_name(got, True)], value=call, type_comment=None))
        pick = gast.If(test=gast.Call(func=_name("isinstance"), args=[
            _name(base.name), _name("dict")], keywords=[]), body=[calls[0]], orelse=[calls[1]])
        _set_location([pick], node, force=True)
        self.names.reserve(got)
        had = base.name in self.containers, base.name in self.read_as_dict
        self.statement(pick)
        if not had[0]:          # (the dict branch's read tells nothing of the value after it)
            self.containers.pop(base.name, None)
        if not had[1]:
            self.read_as_dict.discard(base.name)
        return self.operand(_name(got))

    def container_view(self, node, base, what):
        """list(d.values()) / list(d.items()): a list built by a loop over the keys."""
        acc = self.names.fresh(what)
        keys = self.names.fresh("keys")
        k = self.names.fresh("k")
        self.out.append(ir.Plain(f"{keys} = list({base.name}.keys())", {keys}, self.origin))
        self.out.append(ir.Plain(f"{acc} = []", {acc}, self.origin))
        loop = gast.parse(f"for {k} in {keys}:\n    {acc} = {acc} + [{base.name}[{k}]]"
                          if what == "values" else
                          f"for {k} in {keys}:\n    {acc} = {acc} + [({k}, {base.name}[{k}])]"
                          ).body[0]
        loop.body[0].value.secant_concat = True
        _set_location([loop], node, force=True)
        saved = dict(self.current)
        for n in (acc, keys, base.name):
            self.current[n] = n
            self.names.reserve(n)
        self.statement(loop)
        result = self.current[acc]
        self.current = {**saved, **{n: v for n, v in self.current.items() if n not in saved
                                    and n not in (acc, keys, k)}}
        out = ir.Var(result) if result in self.tracked else ir.Expr(result)
        if isinstance(out, ir.Var):
            self.containers[result] = "list"
        return out

    def _lazy_as_comprehension(self, arg):
        """list(zip(a, b)) is list((v, w) for v, w in zip(a, b)) (enumerate and reversed
        alike): the loop the comprehension reads, which follows tracked containers."""
        if not (isinstance(arg, gast.Call) and isinstance(arg.func, gast.Name)
                and arg.func.id in ("zip", "enumerate", "reversed") and not arg.keywords
                and arg.args and not any(isinstance(a, gast.Starred) for a in arg.args)
                and arg.func.id not in self.current and self._tracked_names_in(arg)):
            return arg
        n = len(arg.args) if arg.func.id == "zip" else 2 if arg.func.id == "enumerate" else 1
        names = [self.names.fresh(f"{arg.func.id}_item") for _ in range(n)]
        items = [_name(v) for v in names]
        target = gast.Tuple(elts=[_name(v, store=True) for v in names], ctx=gast.Store()) \
            if n > 1 else _name(names[0], store=True)
        elt = gast.Tuple(elts=items, ctx=gast.Load()) if n > 1 else items[0]
        comp = gast.GeneratorExp(elt=elt, generators=[gast.comprehension(
            target=target, iter=arg, ifs=[], is_async=0)])
        return gast.copy_location(comp, arg)

    def _items_of_unknown(self, o, where):
        """(v for v in o), o an SSA name read as itself."""
        self.current[o.name] = o.name
        self.names.reserve(o.name)
        item = self.names.fresh("item")
        comp = gast.GeneratorExp(elt=_name(item), generators=[gast.comprehension(
            target=_name(item, store=True), iter=_name(o.name), ifs=[], is_async=0)])
        _set_location([comp], where, force=True)
        return comp

    def _iterated_operand(self, arg):
        """An argument of the zip/enumerate a for loop iterates: a zip/enumerate/reversed of
        tracked containers in it (used up by this loop alone) is read as the list it yields."""
        comp = self._lazy_as_comprehension(arg)
        return self.operand(arg) if comp is arg else self.comprehension(comp, kind="list")

    def container_call(self, node, obj):
        """list(c), tuple(c), dict(d), len-free builtins over tracked containers, and
        snp.array/np.asarray of a list: a value, or None when this is not such a call."""
        import numpy as np
        import secant.numpy as snp
        if obj in (list, tuple) and len(node.args) == 1 and not node.keywords:
            arg = self._lazy_as_comprehension(node.args[0])
            if isinstance(arg, _COMPREHENSIONS):
                if not self._tracked_names_in(arg):
                    return None
                return self.comprehension(arg, kind="list" if obj is list else "tuple")
            o = self.operand(arg)
            if isinstance(o, ir.Var) and self.container_kind(o) == "dict":
                return ir.Expr(f"{obj.__name__}({o.name}.keys())")     # a dict's keys
            if isinstance(o, ir.Seq) and o.kind in ("list", "tuple") and _has_var(o):
                return ir.Seq(o.items, obj.__name__)        # tuple([x, y]) is (x, y)
            generated = self.src.generated
            if isinstance(o, ir.Var) and not self.is_container(o) and not generated \
                    and not self.batching and o.name in self.tracked:
                # a tracked value of a kind known only when the code runs (a staged branch's
                # parameter): its cotangent goes back as that kind (kind_of: list, tuple, or
                # an array's rows stacked)
                out = self._emit("seq_as", {"x": o}, {"kind": obj.__name__,
                                                      "back": f"kind_of({o.name})"}, o.name)
                self.containers[out.name] = obj.__name__
                return out
            unknown = self.batching and o.name in self.tracked and not self.is_container(o) \
                and not getattr(self.src.fn, "__secant_items_kind__", False) \
                if isinstance(o, ir.Var) else False     # (a batched array's rows: below)
            if isinstance(o, ir.Var) and (self.is_container(o) or generated and not unknown):
                kind, want = self.container_kind(o), obj.__name__
                if kind not in ("list", "tuple") and generated and not self.batching \
                        and o.name in self.tracked and not self.is_container(o):
                    # generated code's list(x) of a value of a kind known only when it runs
                    # (vmap's list(params['blocks'])): its cotangent goes back as x's kind
                    out = self._emit("seq_as", {"x": o}, {"kind": want,
                                                          "back": f"kind_of({o.name})"}, o.name)
                    self.containers[out.name] = want
                    return out
                if kind not in ("list", "tuple") and generated:
                    # a derivative's tuple(items_bar) of a cotangent passed in or built by a
                    # helper (second order): generated code converts only the other kind
                    kind = "tuple" if want == "list" else "list"
                if kind not in ("list", "tuple") or kind == want:
                    return o
                # tuple(items) of a list is a tuple: as an index, x[tuple(items)] reads one
                # element per array, x[items] would stack them (NumPy)
                out = self._emit("seq_as", {"x": o}, {"kind": want, "back": kind}, o.name)
                self.containers[out.name] = want
                return out
            if isinstance(o, ir.Var) and self.batching and o.name in self.tracked:
                # vmap's tuple(f(x)) of a value of a kind known only when it runs (a source
                # function's tuple, or an array's rows): its items one by one, as
                # tuple(v for v in ...) (the loop's item_of asks which when the code runs)
                return self.comprehension(self._items_of_unknown(o, arg), kind=obj.__name__)
            return None
        if obj is reversed and len(node.args) == 1 and not node.keywords:
            o = self.operand(node.args[0])      # reversed(c) of a tracked list: c[::-1]
            if isinstance(o, ir.Var) and self.container_kind(o) in ("list", "tuple"):
                return self.operand(gast.Subscript(
                    value=node.args[0], ctx=gast.Load(),
                    slice=gast.Slice(None, None, gast.Constant(-1, None))))
            return None
        if obj is functools.reduce and len(node.args) in (2, 3) and not node.keywords:
            if not self._follows(node):
                return None
            return self.reduce_call(node)
        if obj is itertools.accumulate and len(node.args) in (1, 2) and \
                all(k.arg in ("func", "initial") for k in node.keywords):
            if not self._follows(node):
                return None
            return self.accumulate_call(node)
        if obj is sorted and len(node.args) == 1 and all(k.arg == "reverse"
                                                          for k in node.keywords):
            o = self.operand(node.args[0])      # sorted(d): a dict's keys, not its values
            if isinstance(o, ir.Var) and self.container_kind(o) == "dict":
                rev = "".join(f", reverse={self._source(k.value)}" for k in node.keywords)
                return ir.Expr(f"sorted({o.name}.keys(){rev})")
        if obj is sorted and len(node.args) == 1 and all(k.arg in ("key", "reverse")
                                                          for k in node.keywords):
            return self.sorted_items(node)
        if obj is dict and len(node.args) == 1 and node.keywords and \
                all(k.arg is not None for k in node.keywords) and \
                isinstance(node.args[0], (gast.Name, gast.Attribute, gast.Subscript)) and \
                self._tracked_names_in(node):       # dict(base, b=m): {**base, "b": m}
            display = gast.Dict(keys=[None] + [gast.Constant(k.arg, None) for k in node.keywords],
                                values=[node.args[0]] + [k.value for k in node.keywords])
            _set_location([display], node)
            return self.operand(display)
        if obj is dict and not node.args and node.keywords and \
                all(k.arg is not None for k in node.keywords):       # dict(a=x, b=y)
            display = gast.Dict(keys=[gast.Constant(k.arg, None) for k in node.keywords],
                                values=[k.value for k in node.keywords])
            _set_location([display], node)
            return self.operand(display)
        if obj is dict and len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], gast.Call) and isinstance(node.args[0].func, gast.Name) \
                and node.args[0].func.id == "zip" and "zip" not in self.current and \
                len(node.args[0].args) == 2 and not node.args[0].keywords:
            if not self._tracked_names_in(node.args[0]):
                return None
            k, v = self.names.fresh("k"), self.names.fresh("v")   # dict(zip(keys, values))
            comp = gast.DictComp(key=_name(k), value=_name(v), generators=[gast.comprehension(
                target=gast.Tuple(elts=[_name(k, True), _name(v, True)], ctx=gast.Store()),
                iter=node.args[0], ifs=[], is_async=0)])
            _set_location([comp], node)
            return self.comprehension(comp)
        if obj is dict and len(node.args) == 1 and not node.keywords:
            o = self.operand(node.args[0])
            if isinstance(o, ir.Var) and self.container_kind(o) == "dict":
                return o
            if isinstance(o, ir.Var) and self.container_kind(o) in (None, False):
                # dict(d) of a value not known to be a dict here (a parameter, one of two
                # branches' values): a copy, written as such; its cotangent is a dict too
                out = self._emit("seq_as", {"x": o}, {"kind": "dict", "back": "dict"}, o.name)
                self.containers[out.name] = "dict"
                return out
            return None
        if any(obj is f for f in (np.array, np.asarray, snp.array, snp.asarray)) and node.args:
            o = self.operand(node.args[0])
            if not _has_var(o):
                return None
            dtype = None
            for k in node.keywords:
                if k.arg == "dtype":
                    dtype = self._source(k.value)
            if len(node.args) > 1:
                dtype = self._source(node.args[1])
            if self.is_container(o):
                o = self.as_array(o, node)
            else:
                o = self._emit("identity", {"x": o}, {}, f"{o.name}_array")
            if dtype is not None and dtype != "None":
                o = self._emit("astype", {"x": o}, {"dtype": dtype})
            return o
        return None

    def same_type_call(self, node, func):
        """type(c)(items) of a tracked list or tuple c (a helper rebuilding a container of c's
        own class): items as a list, then `seq_as` to type(c), so its tangent, cotangent and
        batched form keep that class. None when this is not such a call."""
        if len(node.args) != 1 or node.keywords or len(func.args) != 1 or func.keywords:
            return None
        c = self.operand(func.args[0])
        kind = self.container_kind(c)
        ours = (getattr(self.src.fn, "__module__", "") or "").startswith("secant.")
        # (in secant's own helpers a c not known as a list or tuple stays a call: read that
        # way, grad_of_fields_batched sends hessian to vmap of vmap of add_at's jvp, a gap)
        if not isinstance(c, ir.Var) or kind is False and ours or \
                kind == "dict" and c.name not in self.read_as_dict:
            return None
        as_list = gast.copy_location(gast.Call(func=gast.Name("list", gast.Load(), None, None),
                                               args=node.args, keywords=[]), node)
        items = self.container_call(as_list, list)
        if isinstance(items, ir.Seq) and _has_var(items):
            items = self.pack(items)
        if not isinstance(items, ir.Var):
            return None
        out = self._emit("seq_as", {"x": items}, {"kind": f"type({c.name})", "back": "list"},
                         items.name)
        self.containers[out.name] = kind if kind in ("list", "tuple") else None
        return out

    def reduce_call(self, node):
        """functools.reduce(fn, xs[, init]): over a list or tuple display, the nested calls
        fn(fn(x0, x1), x2); over any other sequence, the loop `acc = fn(acc, item)` (both read
        by every transform, fn resolved as any callee)."""
        fn, seq = node.args[0], node.args[1]
        init = node.args[2] if len(node.args) == 3 else None
        inline = _inlinable_lambda(fn)

        def call(a, b):
            if inline is not None:      # (lambda a, b: a * b)(acc, item): its body on names
                return _substitute(fn.body, dict(zip(inline, (a.id, b.id))))
            return gast.Call(func=copy.deepcopy(fn), args=[a, b], keywords=[])

        if isinstance(seq, (gast.List, gast.Tuple)) and not any(
                isinstance(e, gast.Starred) for e in seq.elts):
            items = list(seq.elts)
            if init is None and not items:
                raise self.src.error(node, "reduce() of an empty sequence with no initial "
                                     "value")
            acc = init if init is not None else items.pop(0)
            if inline is None:
                for item in items:
                    acc = call(acc, item)
                _set_location([acc], node)
                return self.operand(acc)
            name, item_name = self.names.fresh("acc"), self.names.fresh("item")
            for n in (name, item_name):
                self.names.reserve(n)
            steps = [gast.Assign(targets=[_name(name, True)], value=acc, type_comment=None)]
            for item in items:
                steps.append(gast.Assign(targets=[_name(item_name, True)], value=item,
                                         type_comment=None))
                steps.append(gast.Assign(targets=[_name(name, True)], type_comment=None,
                                         value=call(_name(name), _name(item_name))))
            _set_location(steps, node)
            for s in steps:
                self.statement(s)
            return self.operand(_name(name))
        return self._fold_loop(seq, init, call, node)

    def sorted_items(self, node):
        """sorted(xs, key=f, reverse=r) of a list or tuple of followed values: the order
        found on their values when the code runs (`order = sort_order(xs, key=f)`, Python ints,
        no derivative), then `[xs[i] for i in order]`, whose items carry their derivatives.
        None for any other sorted(); refused under vmap (each example has an order of its own)."""
        found = self._sort_order(node, node.args[0], node.keywords)
        if found is None:
            return None
        seq, order = found
        i = self.names.fresh("i")
        comp = gast.ListComp(elt=gast.Subscript(value=_name(seq), slice=_name(i),
                                                ctx=gast.Load()),
                             generators=[gast.comprehension(target=_name(i, True),
                                                            iter=_name(order), ifs=[],
                                                            is_async=0)])
        _set_location([comp], node)
        return self.comprehension(comp)

    def extremum_by_key(self, node, largest):
        """max(xs, key=f) / min(xs, key=f) of a list or tuple of followed values: the item at
        the first index of the order found when the code runs (Python's max and min return
        the first extremal item, as a stable sort puts it first), its derivative its own.
        Of a followed dict: of its keys (max(d, key=len)), a static value."""
        o = self.operand(node.args[0]) if isinstance(node.args[0], gast.Name) else None
        if isinstance(o, ir.Var) and self.container_kind(o) == "dict":
            key = "".join(f", key={self._source(k.value)}" for k in node.keywords)
            helper = next((b for b, v in self.bindings.items() if v is key_extremum), None) \
                or self.names.fresh("key_extremum")
            self.src.imports[helper] = self.bindings[helper] = key_extremum
            return ir.Expr(f"{helper}({o.name}, {largest}{key})")
        keywords = list(node.keywords)
        if largest:
            keywords.append(gast.keyword(arg="reverse", value=gast.Constant(True, None)))
        found = self._sort_order(node, node.args[0], keywords, "best")
        if found is None:
            return None
        seq, order = found
        pick = gast.Subscript(value=_name(seq), ctx=gast.Load(), slice=gast.Subscript(
            value=_name(order), slice=gast.Constant(0, None), ctx=gast.Load()))
        _set_location([pick], node)
        return self.operand(pick)

    def _sort_order(self, node, seq, keywords, hint="order"):
        """(xs's name, the name of `sort_order(xs, key=..., reverse=...)` written before the
        statement) for a followed list or tuple `seq`, else None."""
        o = self.operand(seq)
        if isinstance(o, ir.Seq):
            o = self.pack(o)
        if not isinstance(o, ir.Var) or self.container_kind(o) not in ("list", "tuple"):
            return None
        if self.batching and not any(k.arg == "key" for k in keywords):
            raise self.src.error(node, sort_order.__secant_opaque__)
        text = []
        for k in keywords:
            value = k.value
            if isinstance(value, gast.Lambda):      # its parameters named apart from locals
                value = copy.deepcopy(value)
                renames = {a.id: self.names.fresh(a.id) for a in value.args.args}
                for n in gast.walk(value):
                    if isinstance(n, gast.Name) and n.id in renames:
                        n.id = renames[n.id]
            text.append(f", {k.arg}={self._source(value)}")
        helper = next((b for b, v in self.bindings.items() if v is sort_order), None) or \
            self.names.fresh("sort_order")
        self.src.imports[helper] = self.bindings[helper] = sort_order
        order = self.names.fresh(hint)
        self.names.reserve(order)
        self.out.append(ir.Plain(f"{order} = {helper}({o.name}{''.join(text)})", {order},
                                 self.origin))
        self.current[order] = order
        self.current.setdefault(o.name, o.name)
        return o.name, order

    def accumulate_call(self, node):
        """itertools.accumulate(xs, fn, initial=init): the loop reduce runs, each partial
        result collected in a list (`acc = fn(acc, item)`, `acc_list = acc_list + [acc]`), which
        every transform reads as any list built in a loop; fn is operator.add when not given."""
        kw = {k.arg: k.value for k in node.keywords}
        fn = node.args[1] if len(node.args) == 2 else kw.get("func")
        init = kw.get("initial")
        if isinstance(init, gast.Constant) and init.value is None:
            init = None
        if fn is None or isinstance(fn, gast.Constant) and fn.value is None:
            inline = None
            call = lambda a, b: gast.BinOp(left=a, op=gast.Add(), right=b)  # noqa: E731
        else:
            inline = _inlinable_lambda(fn)

            def call(a, b):
                if inline is not None:      # the lambda's body on the loop's names
                    return _substitute(fn.body, dict(zip(inline, (a.id, b.id))))
                return gast.Call(func=copy.deepcopy(fn), args=[a, b], keywords=[])
        return self._fold_loop(node.args[0], init, call, node, collect=True)

    def _fold_loop(self, seq, init, call, node, collect=False):
        """`acc = init` (or seq[0]), `for item in rest: acc = call(acc, item)`: acc read after
        the loop (functools.reduce), or with `collect` the list of each acc (accumulate)."""
        if isinstance(seq, gast.Call) and isinstance(seq.func, gast.Name) and \
                seq.func.id == "reversed" and "reversed" not in self.current and \
                len(seq.args) == 1 and not seq.keywords:    # (only iterated: xs[::-1])
            seq = gast.copy_location(gast.Subscript(
                value=seq.args[0], ctx=gast.Load(),
                slice=gast.Slice(None, None, gast.Constant(-1, None))), seq)
        elif isinstance(seq, gast.Call) and isinstance(seq.func, gast.Name) and \
                seq.func.id in ("zip", "enumerate") and seq.func.id not in self.current:
            # (an iterator of tuples: the list it yields, as list(zip(xs, ws)) is read)
            seq = gast.copy_location(gast.Call(func=_name("list"), args=[seq], keywords=[]),
                                     seq)
        o = self.operand(seq)
        if isinstance(o, ir.Seq):
            o = self.pack(o)
        if isinstance(o, ir.Var):
            name = o.name
        else:
            name = self.names.fresh("seq")
            # (an iterator, reversed(xs), read as the list it yields: indexed below)
            self.out.append(ir.Plain(f"{name} = list({o.as_operand()})", {name}, self.origin))
        self.current[name] = name
        self.names.reserve(name)
        acc, item = self.names.fresh("acc"), self.names.fresh("item")
        for n in (acc, item):
            self.names.reserve(n)
        start = gast.Assign(targets=[_name(acc, True)], type_comment=None,
                            value=init if init is not None else gast.Subscript(
                                value=_name(name), slice=gast.Constant(0, None),
                                ctx=gast.Load()))
        rest = _name(name) if init is not None else gast.Subscript(
            value=_name(name), slice=gast.Slice(lower=gast.Constant(1, None), upper=None,
                                                step=None), ctx=gast.Load())
        body = [gast.Assign(targets=[_name(acc, True)], type_comment=None,
                            value=call(_name(acc), _name(item)))]
        steps = [start]
        if collect:
            listed = self.names.fresh(f"{acc}_list")
            self.names.reserve(listed)
            steps.append(gast.Assign(targets=[_name(listed, True)], type_comment=None,
                                     value=gast.List(elts=[_name(acc)], ctx=gast.Load())))
            body.append(gast.Assign(targets=[_name(listed, True)], type_comment=None,
                                    value=gast.BinOp(left=_name(listed), op=gast.Add(),
                                                     right=gast.List(elts=[_name(acc)],
                                                                     ctx=gast.Load()))))
        steps.append(gast.For(target=_name(item, True), iter=rest, orelse=[], type_comment=None,
                              body=body))
        _set_location(steps, node)
        for s in steps:
            self.statement(s)
        return self.operand(_name(listed if collect else acc))

    def fold_extremum(self, node, args):
        """max(a, b, c) / min(...) of traced values as two-argument calls, as Python compares
        them pairwise: max(max(a, b), c); max(xs) of a list or array folds over its items."""
        if len(args) == 1:
            if isinstance(args[0], gast.Starred):
                raise self.src.error(node, "max()/min() of *args are differentiated with the "
                                     "arguments written out")
            fold = gast.Call(func=_name("reduce"), args=[node.func, args[0]], keywords=[])
            _set_location([fold], node)
            return self.reduce_call(fold)
        acc = args[0]
        for a in args[1:]:
            acc = gast.Call(func=copy.deepcopy(node.func), args=[acc, a], keywords=[])
        _set_location([acc], node)
        return self.operand(acc)

    def extremum_default(self, node, seq):
        """max(xs, default=d) / min(...) (key= too) of followed values: `if len(xs): m =
        max(xs) else: m = d` (a list's length is static; an empty display is d itself)."""
        default = [k.value for k in node.keywords if k.arg == "default"][0]
        rest = [k for k in node.keywords if k.arg != "default"]
        if not self._follows(node):
            return self._inactive(node)

        def pick(items):
            call = gast.Call(func=copy.deepcopy(node.func), args=[items], keywords=rest)
            _set_location([call], node)
            return call
        if isinstance(seq, (gast.List, gast.Tuple)) and not any(
                isinstance(e, gast.Starred) for e in seq.elts):
            return self.operand(pick(seq) if seq.elts else default)
        o = self.operand(seq)
        if isinstance(o, ir.Seq):
            o = self.pack(o)
        if isinstance(o, ir.Var):
            name = o.name
        else:
            name = self.names.fresh("seq")      # (an iterator: the list it yields)
            self.out.append(ir.Plain(f"{name} = list({o.as_operand()})", {name}, self.origin))
        self.current[name] = name
        self.names.reserve(name)
        got = self.names.fresh(f"{name}_{node.func.id if isinstance(node.func, gast.Name) else 'extremum'}")
        self.names.reserve(got)
        test = gast.Call(func=_name("len"), args=[_name(name)], keywords=[])
        branch = gast.If(test=test, body=[gast.Assign(targets=[_name(got, True)],
                                                      value=pick(_name(name)), type_comment=None)],
                         orelse=[gast.Assign(targets=[_name(got, True)], value=default,
                                             type_comment=None)])
        _set_location([branch], node)
        self.statement(branch)
        return self.operand(_name(got))

    def _follows(self, node):
        """Whether `node` reads a followed value, itself or through a nested def it names that
        closes over one (functools.reduce(step, xs) with step reading x)."""
        defs = getattr(self, "local_defs", {})
        return bool(self._tracked_names_in(node)) or any(
            isinstance(n, gast.Name) and n.id in defs and n.id not in self.current
            and any(v in self.tracked for v in defs[n.id][1].values()) for n in _walk(node))

    def _tracked_names_in(self, node):
        from secant.transformer.normalize import _names_in
        return {k for k in _names_in(node) if k in self.current and
                self.current[k] in self.tracked}

    # --- loops over containers ------------------------------------------------------------------
    def container_iteration(self, stmt):
        """For a for loop over a tracked container, enumerate(c), zip(a, b), d.items(),
        d.values() or d.keys(): (steps source, index name, unpack(index)) that loop over its
        indices (or keys), reading each item; None for any other loop."""
        it = stmt.iter
        what = None
        fields = it.args[0] if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) \
            and it.func.id == "vars" and "vars" not in self.current and len(it.args) == 1 \
            and not it.keywords else it.value if isinstance(it, gast.Attribute) \
            and it.attr == "__dict__" else None
        if fields is not None and self._tracked_names_in(fields):
            # `for name in vars(m)`: over the names of m's fields (getattr(m, name) reads one)
            keys = gast.Attribute(value=gast.Attribute(value=fields, attr="__dict__",
                                                       ctx=gast.Load()), attr="keys",
                                  ctx=gast.Load())
            it = stmt.iter = gast.copy_location(gast.Call(func=keys, args=[], keywords=[]), it)
            for n in gast.walk(it):
                if getattr(n, "lineno", None) is None:
                    gast.copy_location(n, stmt.iter)
        if _sorted_view(it, self.current):    # sorted(d.items()): over d's keys, sorted (a
            base = self.operand(it.args[0].func.value)  # dict's keys are static and distinct)
            if isinstance(base, ir.Var) and base.name in self.tracked:
                what = "sorted_" + it.args[0].func.attr
        elif (keyed := self._sorted_keys_by(stmt)) is not None:
            what, base = keyed
        elif isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) \
                and it.func.attr in ("items", "values", "keys") and not it.args:
            base = self.operand(it.func.value)
            if isinstance(base, ir.Var) and base.name in self.tracked:
                what = it.func.attr
                if not self.is_container(base):     # a parameter read as a dict
                    self.containers[base.name] = "dict"
                    self.read_as_dict.add(base.name)
        elif isinstance(it, gast.Call) and isinstance(it.func, gast.Name) \
                and it.func.id in ("enumerate", "zip") and it.func.id not in self.current \
                and it.args and self._counted_from(stmt, it) is not None:
            it = stmt.iter
            inner = it.args[0]
            if it.func.id == "enumerate" and len(it.args) == 1 \
                    and (view := self._enumerated_dict(inner, stmt)) is not None:
                return view                     # enumerate(d.items()), enumerate(d), ...
            if it.func.id == "enumerate" and len(it.args) == 1 and isinstance(inner, gast.Call) \
                    and isinstance(inner.func, gast.Name) and inner.func.id == "zip" \
                    and "zip" not in self.current and not inner.keywords and inner.args:
                args = [self.operand(a) for a in inner.args]       # enumerate(zip(a, b))
                if not any(_has_var(a) for a in args):
                    return None
                return "by_index", (True, args)
            args = [self._iterated_operand(a) for a in it.args]
            if any(isinstance(a, ir.Var) and not self.is_container(a) for a in args):
                # an array among them: its len() and rows are per example (any transform)
                if it.func.id == "zip":
                    return "by_index", (False, args)
                if len(args) == 1:
                    return "by_index", (True, args)
            if not any(_has_var(a) for a in args):
                return None
            if it.func.id == "enumerate" and len(args) == 1:
                what, base = "enumerate", args[0]
            elif it.func.id == "zip":
                what, base = "zip", args
            else:
                return None
        elif isinstance(it, gast.Call) and isinstance(it.func, gast.Name) \
                and it.func.id == "reversed" and "reversed" not in self.current \
                and len(it.args) == 1 and isinstance(it.args[0], gast.Name) \
                and not it.keywords:    # a derivative's reverse loop over a tracked list
            base = self.operand(it.args[0])
            if not (isinstance(base, ir.Var) and self.is_container(base)
                    and self.container_kind(base) != "dict"):
                return None
            what = "reversed"
        elif isinstance(it, gast.Name):
            base = self.operand(it)
            if isinstance(base, ir.Var) and not self.is_container(base) \
                    and _indexed_by_target(stmt, it.id):
                # `for k in p: ... p[k]`: p is read as a dict (a list indexed by its own items
                # is not what Python users write), its keys Python values (as JAX's params)
                self.containers[base.name] = "dict"
                self.read_as_dict.add(base.name)
            if isinstance(base, ir.Var) and self.container_kind(base) == "dict" \
                    and base.name in self.read_as_dict and not _indexed_by_target(stmt, it.id):
                return None     # a parameter read as a dict elsewhere (`t.items()` in one
                #                 branch of isinstance(t, dict)), iterated as it is here
            if isinstance(base, ir.Var) and self.container_kind(base) == "dict":
                what = "keys"
            elif isinstance(base, ir.Var) and self.is_container(base):
                what = "items_of"
            else:
                return None
        elif isinstance(it, gast.Call):     # tree_leaves(params): a list known when it runs
            base = self.operand(it)
            if not (isinstance(base, ir.Var) and self.is_container(base)):
                stmt.secant_iterable = base         # read once: for_statement takes it
                return None
            what = "items_of"
        else:
            return None
        if what is None:            # d.items() of a dict of constants: a Python loop
            return None
        return what, base

    def _sorted_keys_by(self, stmt):
        """For `for k in sorted(d, key=..., reverse=...)` (or d.keys()) of a tracked dict d
        whose body reads d[k]: ("sorted_keys", d), the order kept on the loop (the key
        function sees d's keys, static Python values); None otherwise."""
        it = stmt.iter
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
                and it.func.id == "sorted" and "sorted" not in self.current
                and len(it.args) == 1 and it.keywords
                and all(k.arg in ("key", "reverse") for k in it.keywords)
                and isinstance(stmt.target, gast.Name)):
            return None
        arg = it.args[0]
        if isinstance(arg, gast.Call) and isinstance(arg.func, gast.Attribute) \
                and arg.func.attr == "keys" and not arg.args:
            arg = arg.func.value
        if not isinstance(arg, gast.Name) or self._tracked_names_in(
                gast.Tuple(elts=[k.value for k in it.keywords], ctx=gast.Load())):
            return None
        base = self.operand(arg)
        if not (isinstance(base, ir.Var) and base.name in self.tracked) or not (
                self.container_kind(base) == "dict" or _indexed_by_target(stmt, arg.id)):
            return None
        if not self.is_container(base):
            self.containers[base.name] = "dict"
            self.read_as_dict.add(base.name)
        stmt.secant_sort_keywords = "".join(f", {k.arg}={self._source(k.value)}"
                                            for k in it.keywords)
        return "sorted_keys", base

    def _enumerated_dict(self, it, stmt):
        """For `enumerate(it)` with `it` a view of a tracked dict (d.items(), d.values(),
        d.keys(), sorted(d.items()), sorted(d.keys()) or d itself): the loop over d's keys
        that also counts them ("enumerate_" + the view, base); None otherwise."""
        ordered = _sorted_view(it, self.current)
        view = it.args[0] if ordered else it
        if isinstance(view, gast.Call) and isinstance(view.func, gast.Attribute) \
                and view.func.attr in ("items", "values", "keys") and not view.args \
                and not view.keywords:
            base, kind = self.operand(view.func.value), view.func.attr
        elif isinstance(view, gast.Name):
            base, kind = self.operand(view), "keys"
        else:
            return None
        if not (isinstance(base, ir.Var) and base.name in self.tracked):
            return None
        target = stmt.target
        if isinstance(view, gast.Name) and not (
                isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == 2
                and _indexed_by_target(stmt, view.id, target.elts[1])):
            return None                 # enumerate(xs) of a list or an array: its items (a
            #                             dict only when the body reads d[k] of its keys k)
        if not self.is_container(base):     # a parameter read as a dict
            self.containers[base.name] = "dict"
            self.read_as_dict.add(base.name)
        return ("sorted_" if ordered else "") + "enumerate_" + kind, base

    def _python_items_loop(self, stmt, body, iterable):
        """`for k, v in d.items()` of a dict no transform tracks (a derivative's own loop over
        `tree_bar.items()`): a loop over its keys reading `v = d[k]`, as for a tracked dict,
        so the key stays a Python value wherever the code is read again (vmap of the derivative
        batches d's values, never its keys). False for any other loop."""
        found = re.fullmatch(r"(\w+)\.items\(\)", iterable.src)
        target = stmt.target
        if found is None or not isinstance(target, (gast.Tuple, gast.List)) \
                or len(target.elts) != 2:
            return False
        base = found.group(1)
        own = target.elts[0].id if isinstance(target.elts[0], gast.Name) else None
        index = own or self.names.fresh("k")
        steps = self.names.fresh("keys")
        self.out.append(ir.Plain(f"{steps} = list({base}.keys())", {steps}, self.origin))

        def unpack(k):
            if own is None:
                self._bind_target(target.elts[0], ir.Expr(k), stmt)
            self._bind_target(target.elts[1], ir.Expr(f"{base}[{k}]"), stmt)
        loop_target, body, carried, _ = self._loop(stmt, index, body, unpack)
        self.out.append(ir.For(loop_target, steps, body, carried, self.origin))
        return True

    def _counted_from(self, stmt, it):
        """enumerate(xs, start) / enumerate(xs, start=k) (a static k: stmt.iter loses it, the
        loop's index counts from k) and zip(a, b, strict=True) (the loop checks the lengths
        first, as Python raises ValueError): True when the call is read so, None when it has
        other keywords."""
        keywords = {k.arg: k.value for k in it.keywords}
        if it.func.id == "enumerate" and len(it.args) == 2 and not keywords:
            keywords["start"] = it.args[1]
        elif len(it.args) > 1 and it.func.id == "enumerate":
            return None
        allowed = {"start"} if it.func.id == "enumerate" else {"strict"}
        if not set(keywords) <= allowed:
            return None
        if not keywords:
            return True
        value = self.operand(keywords[list(keywords)[0]])
        if not isinstance(value, ir.Expr):
            raise self.src.error(it, f"{it.func.id}(...) with a {list(keywords)[0]} that "
                                 "depends on differentiated values")
        stmt.iter = gast.copy_location(gast.Call(func=it.func, args=it.args[:1] if
                                                 it.func.id == "enumerate" else it.args,
                                                 keywords=[]), it)
        if it.func.id == "enumerate":
            stmt.secant_count_from = value.as_operand()
        else:
            stmt.secant_strict = value.as_operand()
        return True

    def _counter(self, stmt, i):
        """The user's enumerate index for loop counter `i` (enumerate(xs, start=k): i + k)."""
        start = getattr(stmt, "secant_count_from", None)
        return i if start is None else f"{i} + {start}"

    def loop_over_container(self, stmt, body, what, base):
        """The loop over a container's keys or indices (see container_iteration)."""
        if what == "by_index":
            return self.loop_by_index(stmt, body, *base)
        ordered = what.startswith("sorted_")
        what = what.removeprefix("sorted_")
        def item(container, i, hint=None):
            if isinstance(container, ir.Seq):
                container = self.pack(container)
            if isinstance(container, ir.Var):
                got = self._emit("getitem", {"a": container}, {"idx": i},
                                 hint or f"{container.name}_{i}")
                self.out[-1].container = True
                self.item_kind(container, got)
                return got
            return ir.Expr(f"{container.as_operand()}[{i}]")

        if what in ("items", "enumerate", "zip") and isinstance(stmt.target, gast.Name):
            stmt, body = self._unpacked_items(stmt, body, len(base) if what == "zip" else 2)
        target = stmt.target
        if what.startswith("enumerate_"):
            return self._enumerated_dict_loop(stmt, body, what.removeprefix("enumerate_"),
                                              base, "sorted" if ordered else "list", item)
        own = None                  # the user's name for the key or index, when it has one
        if what == "keys" and isinstance(target, gast.Name):
            own = target.id
        elif what in ("items", "enumerate") and isinstance(target, (gast.Tuple, gast.List)) \
                and target.elts and isinstance(target.elts[0], gast.Name) \
                and getattr(stmt, "secant_count_from", None) is None:
            own = target.elts[0].id
        if what in ("items", "values", "keys"):
            index = own or self.names.fresh("k")
            steps = self.names.fresh("keys")
            order = "sorted" if ordered else "list"
            by = getattr(stmt, "secant_sort_keywords", "")     # sorted(d, key=...)
            self.out.append(ir.Plain(f"{steps} = {order}({base.name}.keys(){by})", {steps},
                                     self.origin))
        else:
            index = own or self.names.fresh("i")
            steps = self.names.fresh(f"{index}_range")
            if what == "zip":
                lengths = ", ".join(f"len({_plain(a)})" for a in base)
                strict = getattr(stmt, "secant_strict", None)
                if strict is not None and len(base) > 1:
                    same = " == ".join(f"len({_plain(a)})" for a in base)
                    when = "" if strict == "True" else f"{strict} and "
                    self.out.append(ir.Plain(f"if {when}not {same}: raise ValueError("
                                             f"{_STRICT_ZIP!r})", set(), self.origin))
                self.out.append(ir.Plain(f"{steps} = range(min({lengths}))", {steps},
                                         self.origin))
            elif what == "reversed":        # a range (a reverse pass reverses it again)
                self.out.append(ir.Plain(f"{steps} = range(len({_plain(base)}) - 1, -1, -1)",
                                         {steps}, self.origin))
            else:
                self.out.append(ir.Plain(f"{steps} = range(len({_plain(base)}))", {steps},
                                         self.origin))

        def unpack(i):
            if what == "keys":
                if own is None:
                    self._bind_target(target, ir.Expr(i), stmt)
                return
            if what in ("items_of", "values", "reversed"):
                return self._bind_target(target, item(base, i), stmt)
            if what in ("items", "enumerate"):
                values = (None if own else ir.Expr(self._counter(stmt, i)), item(base, i))
            else:
                values = tuple(item(a, i) for a in base)
            if not isinstance(target, (gast.Tuple, gast.List)) or \
                    len(target.elts) != len(values):
                raise self.src.error(stmt, f"unpack each item of {what}(...) into "
                                     f"{len(values)} names")
            for e, v in zip(target.elts, values):
                if v is not None:
                    self._bind_target(e, v, stmt)

        target, body, carried, _ = self._loop(stmt, index, body, unpack)
        self.out.append(ir.For(target, steps, body, carried, self.origin))

    def _unpacked_items(self, stmt, body, n):
        """`for kv in d.items()` (enumerate, zip; `map(lambda kv: ..., d.items())`) read as
        `for kv_0, kv_1 in ...`: `kv[0]` is kv_0, any other read of kv the tuple (kv_0, kv_1),
        as each item is that tuple; so a key stays a Python value and each value is followed."""
        pair = stmt.target.id
        if any(isinstance(m, gast.Name) and m.id == pair and not isinstance(m.ctx, gast.Load)
               for b in body for m in gast.walk(b)):
            return stmt, body       # (kv bound again in the body: left as written)
        names = [self.names.fresh(f"{pair}_{i}") for i in range(n)]

        class Items(gast.NodeTransformer):
            def visit_Subscript(self, node):
                if isinstance(node.value, gast.Name) and node.value.id == pair and \
                        isinstance(node.ctx, gast.Load) and \
                        isinstance(node.slice, gast.Constant) and \
                        type(node.slice.value) is int and -n <= node.slice.value < n:
                    return gast.copy_location(_name(names[node.slice.value]), node)
                return self.generic_visit(node)

            def visit_Name(self, node):
                if node.id == pair and isinstance(node.ctx, gast.Load):
                    return gast.copy_location(gast.Tuple(
                        elts=[gast.copy_location(_name(v), node) for v in names],
                        ctx=gast.Load()), node)
                return node
        body = [Items().visit(copy.deepcopy(b)) for b in body]
        stmt = copy.copy(stmt)
        stmt.target = gast.copy_location(gast.Tuple(
            elts=[gast.copy_location(_name(v, True), stmt.target) for v in names],
            ctx=gast.Store()), stmt.target)
        return stmt, body

    def _enumerated_dict_loop(self, stmt, body, view, base, order, item):
        """`for i, (k, v) in enumerate(d.items())` (and .values(), .keys(), sorted(...)):
        `for i in range(len(keys))` with `k = keys[i]`, `v = d[k]`; i and k stay Python
        values."""
        target = stmt.target
        pair = isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == 2
        if not pair or (view == "items" and not (
                isinstance(target.elts[1], (gast.Tuple, gast.List))
                and len(target.elts[1].elts) == 2)):
            shape = "i, (k, v)" if view == "items" else "i, v"
            raise self.src.error(stmt, f"unpack each item of enumerate(...) of a dict's "
                                 f"{view}: `for {shape} in ...`")
        own = target.elts[0].id if isinstance(target.elts[0], gast.Name) \
            and getattr(stmt, "secant_count_from", None) is None else None
        keys = self.names.fresh("keys")
        self.out.append(ir.Plain(f"{keys} = {order}({base.name}.keys())", {keys}, self.origin))
        index = own or self.names.fresh("i")
        steps = self.names.fresh(f"{index}_range")
        self.out.append(ir.Plain(f"{steps} = range(len({keys}))", {steps}, self.origin))

        def unpack(i):
            if own is None:                     # (enumerate(..., start=k): i + k)
                self._bind_target(target.elts[0], ir.Expr(self._counter(stmt, i)), stmt)
            second = target.elts[1]
            key = second if view == "keys" else second.elts[0] if view == "items" else None
            if isinstance(key, gast.Name):      # the user's name for the key
                self._bind_target(key, ir.Expr(f"{keys}[{i}]"), stmt)
                k = self.current[key.id]
            else:
                k = self.names.fresh("k")
                self.out.append(ir.Plain(f"{k} = {keys}[{i}]", {k}, self.origin))
                if key is not None:
                    self._bind_target(key, ir.Expr(k), stmt)
            if view != "keys":
                self._bind_target(second if view == "values" else second.elts[1],
                                  item(base, k), stmt)
        loop_target, body, carried, _ = self._loop(stmt, index, body, unpack)
        self.out.append(ir.For(loop_target, steps, body, carried, self.origin))

    def loop_by_index(self, stmt, body, enumerated, seqs):
        """`for t in zip(a, b)` / `enumerate(a)` / `enumerate(zip(a, b))` with a traced array
        among them: `for i in range(min(len(a), len(b))): t = (a[i], b[i])` (or
        `t = (i, ...)`), which every transform reads (len() and rows per example)."""
        names = []
        for o in seqs:
            if isinstance(o, ir.Seq):
                o = self.pack(o)
            if isinstance(o, ir.Var):
                name = o.name
                self.current[name] = name
            else:
                name = self.names.fresh("seq")
                self.out.append(ir.Plain(f"{name} = {o.as_operand()}", {name}, self.origin))
                self.current[name] = name
            self.names.reserve(name)
            names.append(name)
        index = self.names.fresh("i")
        lengths = [f"len({n})" for n in names]
        count = lengths[0] if len(lengths) == 1 else f"min({', '.join(lengths)})"
        items = [f"{n}[{index}]" for n in names]
        item = items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"
        if enumerated:
            item = f"({self._counter(stmt, index)}, {item})"
        strict = getattr(stmt, "secant_strict", None)
        if strict is not None and len(names) > 1:       # zip(a, b, strict=True)
            when = "" if strict == "True" else f"{strict} and "
            check = gast.parse(f"if {when}not {' == '.join(lengths)}:\n    raise "
                               f"ValueError({_STRICT_ZIP!r})").body[0]
            _set_location([check], stmt, force=True)
            self.statement(check)
        loop = gast.parse(f"for {index} in range({count}):\n    _item = {item}").body[0]
        bind = loop.body[0]
        bind.targets = [stmt.target]
        _set_location([loop], stmt, force=True)
        loop.body = [bind] + list(body)
        start = len(self.out)
        out = self.for_statement(loop)
        bases = {ir.Var(n) for n in names}
        for op in ir.nested(self.out[start:]):      # the items read: of a list or tuple, or
            if isinstance(op, ir.Op) and op.op == "getitem" and op.operands.get("a") in bases \
                    and op.statics.get("idx") == index:     # rows of each example's array
                op.rows = "item"        # (under vmap: item_of asks which when the code runs)
        return out

    def loop_over_rows(self, stmt, body, base):
        """`for row in x:` over a traced array iterates its first axis, as Python does: the
        loop `for i in range(len(x)): row = x[i]` (any transform reads that idiom; len() is per
        example under vmap). Under vmap x may also be a list or tuple parameter (each leaf
        batched): len() and the rows read (ir.Op.rows) ask which it is when the code runs."""
        if not self.batching and (getattr(self.src.fn, "__module__", "") or "").startswith(
                "secant."):
            raise self.src.error(stmt, f"a for loop over a {self.what} array is not "
                                 "supported yet; loop over range(len(x)) and index instead")
        index = self.names.fresh("i")
        loop = gast.parse(f"for {index} in range(len({base.name})):\n"
                          f"    _row = {base.name}[{index}]").body[0]
        bind = loop.body[0]
        bind.targets = [stmt.target]
        _set_location([loop], stmt, force=True)
        loop.body = [bind] + list(body)
        self.current[base.name] = base.name
        self.names.reserve(base.name)
        start = len(self.out)
        self.for_statement(loop)
        for op in ir.nested(self.out[start:]):      # the row read: an item of a list, or a
            if isinstance(op, ir.Op) and op.op == "getitem" and op.operands.get("a") == base \
                    and op.statics.get("idx") == index:     # row of each example's array
                op.rows = "item"        # an int: item_of
                break

    # --- comprehensions --------------------------------------------------------------------------
    def comprehension(self, node, kind=None, name=None, hint=None):
        """[f(v) for v in vs if c], (... for ...), {k: f(v) for ...}: the loop that builds it
        (`name`: the user's variable it is assigned to, which the loop builds directly; else
        `hint` names it: max(*[...]) builds max_args)."""
        is_dict = isinstance(node, gast.DictComp)
        from secant.transformer.normalize import _names_in
        if name in _names_in(node):         # ys = [y * 2 for y in ys]: reads the old ys
            name = None
        acc = name or self.names.fresh(hint or ("d" if is_dict else "items"))
        def add(value):
            if is_dict:
                entry = gast.Dict(keys=[node.key], values=[value])
                update = gast.BinOp(left=_name(acc), op=gast.BitOr(), right=entry)
            else:
                update = gast.BinOp(left=_name(acc), op=gast.Add(),
                                    right=gast.List(elts=[value], ctx=gast.Load()))
                update.secant_concat = True
            return gast.Assign(targets=[_name(acc, store=True)], value=update, type_comment=None)

        value = node.value if is_dict else node.elt
        if isinstance(value, gast.IfExp):   # [a if c else b for ...]: an if in the loop
            inner = [gast.If(test=value.test, body=[add(value.body)], orelse=[add(value.orelse)])]
        else:                               # [f(a if c else b) for ...]: the if first
            pre, value = hoist_choices(value, self.names.fresh)
            inner = pre + [add(value)]
        for gen in reversed(node.generators):
            if gen.is_async:
                raise self.src.error(node, "async comprehensions cannot be transformed")
            for cond in reversed(gen.ifs):
                inner = [gast.If(test=cond, body=inner, orelse=[])]
            inner = [gast.For(target=gen.target, iter=gen.iter, body=inner, orelse=[],
                              type_comment=None)]
            inner[0].secant_scoped = True   # (its variables are the comprehension's own)
        loop = inner[0]
        _set_location([loop], node)
        scoped = {n.id for gen in node.generators for n in _walk(gen.target)
                  if isinstance(n, gast.Name)}
        outer = {n: self.current.get(n) for n in scoped}
        acc_before = self.current.get(acc)
        version = self._new_version_for(acc)
        self.out.append(ir.Plain(f"{version} = {{}}" if is_dict else f"{version} = []",
                                 {version}, self.origin))
        self.containers[self.current[acc]] = "dict" if is_dict else "list"
        saved_origin = self.origin
        self.statement(loop)
        self.origin = saved_origin
        result = self.current[acc]
        if name is None:
            if acc_before is None:
                self.current.pop(acc, None)
            else:
                self.current[acc] = acc_before
        for n, version in outer.items():
            if version is None:
                self.current.pop(n, None)
                self.retired.add(n)
            else:
                self.current[n] = version
        if result not in self.tracked:     # static items (ints read from a shape): a value
            return ir.Expr(f"tuple({result})" if kind == "tuple" else result)
        self.containers[result] = "dict" if is_dict else "list"
        if isinstance(value, tuple(_DISPLAYS)):  # [[w * x for w in ws] for ...]: lists of lists
            self.item_kinds[result] = _DISPLAYS[type(value)]
        if kind != "tuple":
            return ir.Var(result)
        # the loop builds a list: tuple(v * 2 for v in vs) is a tuple (`+ (x,)` concatenates)
        out = self._emit("seq_as", {"x": ir.Var(result)}, {"kind": "tuple", "back": "list"},
                         name or "items")
        self.containers[out.name] = "tuple"
        if result in self.item_kinds:
            self.item_kinds[out.name] = self.item_kinds[result]
        return out

    def _new_version_for(self, user_name):
        version = self._new_version(user_name)
        self.current[user_name] = version
        return version


def _sorted_view(it, local):
    """Whether `it` is sorted(d.items()) or sorted(d.keys()) (Python's sorted, no key=): the
    order of the distinct, static keys, never a comparison of d's values."""
    return isinstance(it, gast.Call) and isinstance(it.func, gast.Name) \
        and it.func.id == "sorted" and "sorted" not in local and len(it.args) == 1 \
        and not it.keywords and isinstance(it.args[0], gast.Call) \
        and isinstance(it.args[0].func, gast.Attribute) \
        and it.args[0].func.attr in ("items", "keys") and not it.args[0].args


def _is_display(src):
    try:
        return isinstance(gast.parse(src, mode="eval").body, (gast.List, gast.Tuple))
    except SyntaxError:
        return False


def item_hint(name, s):
    """The name of the item or slice `s` of the list `name`: b_m1 (b[-1]), b_head (b[:2]),
    b_rest (b[1:]), else b_item."""
    if isinstance(s, gast.UnaryOp) and isinstance(s.op, gast.USub) \
            and isinstance(s.operand, gast.Constant) and type(s.operand.value) is int:
        return f"{name}_m{s.operand.value}"
    if isinstance(s, gast.Slice) and s.step is None and (s.lower is None) != (s.upper is None):
        return f"{name}_{'head' if s.lower is None else 'rest'}"
    return f"{name}_item"


def _key_hint(base, key_src):
    key = key_src.strip("'\"")
    return f"{base}_{key}" if key.isidentifier() else f"{base}_item"


def key_extremum(d, largest, key=None):
    """max(d, key=key) (largest) or min(...) of a dict's keys: static, no derivative."""
    return (max if largest else min)(d.keys(), key=key)


key_extremum.__secant_placeholder__ = True


def sort_order(xs, key=None, reverse=False):
    """The indices of xs in sorted(xs, key=key, reverse=reverse)'s order (Python's stable sort
    on the values): what generated code sorts by, no derivative of its own."""
    if key is None:
        return sorted(range(len(xs)), key=lambda i: xs[i], reverse=reverse)
    keys = [_one_value(key(v)) for v in xs]     # (under vmap: a key of static parts of the
    if any(_many_values(k) for k in keys):      # items, one order for every example; else
        from secant.backends.errors import SecantValueError, where      # refused here)
        raise SecantValueError(sort_order.__secant_opaque__.replace(
            "(or max/min with a key)", "(or max/min with a key read from them)") + where())
    return sorted(range(len(xs)), key=keys.__getitem__, reverse=reverse)


def _many_values(k):
    """Whether a sort key holds an array of several values (one per example under vmap),
    which Python's comparisons cannot order."""
    if isinstance(k, (tuple, list)):
        return any(_many_values(v) for v in k)
    return getattr(k, "ndim", 0) > 0 and getattr(k, "size", 1) != 1


def _one_value(k):
    """A key that holds one known value for every example (a static int of a tuple whose
    other item is batched, broadcast under vmap: `(2, x[0])` keyed by `t[0]`) as that value:
    every example sorts by it, in one order. Any other key as it is."""
    if isinstance(k, (tuple, list)):
        return type(k)(_one_value(v) for v in k)
    if not _many_values(k):
        return k
    import numpy as np
    try:
        v = np.asarray(k)
    except Exception:           # (a traced key: its values are not known now)
        return k
    flat = v.reshape(-1)
    return flat[0] if v.dtype != object and (flat == flat[0]).all() else k


sort_order.__secant_constant__ = True
sort_order.__secant_by_key_under_vmap__ = True
sort_order.__secant_opaque__ = ("sorted() of batched values (or max/min with a key): the order "
                                "differs per example; sort an array with snp.sort / snp.argsort "
                                "instead")


def _inlinable_lambda(fn):
    """The two parameter names of `lambda a, b: expr` (no defaults, no nested scopes), whose
    calls on names can be written as expr itself; None for anything else."""
    if not isinstance(fn, gast.Lambda):
        return None
    a = fn.args
    if len(a.args) != 2 or a.defaults or a.kwonlyargs or a.vararg or a.kwarg or \
            getattr(a, "posonlyargs", None) or \
            any(isinstance(n, (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.DictComp,
                               gast.SetComp, gast.NamedExpr)) for n in _walk(fn.body)):
        return None
    return [p.id for p in a.args]


def _substitute(expr, names):
    """A copy of expr with the names read renamed (parameters to arguments)."""
    out = copy.deepcopy(expr)
    for n in _walk(out):
        if isinstance(n, gast.Name) and n.id in names:
            n.id = names[n.id]
    return out


def _plain(o):
    if isinstance(o, ir.Var):
        return o.name
    if isinstance(o, ir.Seq):
        return "[" + ", ".join(_plain(i) for i in o.items) + "]"
    return o.as_operand()


def _list_display(node):
    return isinstance(node, (gast.List, gast.ListComp))


def _returns_lists(fn):
    """Whether fn is a plain Python function each of whose return statements returns a list
    display or comprehension (read from its source; False where that cannot be read)."""
    import inspect
    import textwrap
    if not inspect.isfunction(fn):
        return False
    try:
        tree = gast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    returns = [n for n in _walk(tree.body[0]) if isinstance(n, gast.Return)]
    nested = [n for d in tree.body[0].body for n in _walk(d) if isinstance(
        n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda))]
    return bool(returns) and not nested and all(_list_display(r.value) for r in returns)


def _constant_kind(o):
    """"tuple" / "list" / "dict" for an operand written as a display or a tuple(...) / list(...)
    / dict(...) call of constants (ir.Expr source), or a jvp's zeros_like_tree of one (the
    tangent of a constant tuple concatenated to a differentiated one), else None."""
    if not isinstance(o, ir.Expr):
        return None
    try:
        node = gast.parse(o.src).body[0].value
    except (SyntaxError, IndexError, AttributeError):
        return None
    kinds = {gast.Tuple: "tuple", gast.List: "list", gast.Dict: "dict"}
    if type(node) in kinds:
        return kinds[type(node)]
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Mult) and any(
            isinstance(a, gast.List) and isinstance(b, gast.Constant) and type(b.value) is int
            for a, b in ((node.left, node.right), (node.right, node.left))):
        return "list"                   # [0.5] * 2
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
            and node.func.id in ("tuple", "list", "dict"):
        return node.func.id
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
            and node.func.id == "zeros_like_tree" and len(node.args) == 1 and not node.keywords:
        return _constant_kind(ir.Expr(gast.unparse(node.args[0]).strip()))
    return None


def _structure_keeping():
    """The helpers whose result has their first argument's structure."""
    from secant.ad.rule_helpers import zeros_like_tree
    from secant.batching.helpers import broadcast_batch
    return (broadcast_batch, zeros_like_tree)


def _name_of(o):
    """The name an operand is (a tracked Var, or a plain name kept as source), else None."""
    if isinstance(o, ir.Var):
        return o.name
    if isinstance(o, ir.Expr) and o.src.isidentifier():
        return o.src
    return None


def _has_var(o):
    if isinstance(o, ir.Var):
        return True
    if isinstance(o, ir.Seq):
        return any(_has_var(i) for i in o.items)
    return False


CONTAINER_OPS = ("pack", "concat_seq", "dict_merge", "seq_as")
# other ops and derivative helpers whose results are containers (a list of pieces, a
# container's cotangent)
_CONTAINER_RESULTS = ("grad_of_fields", "grad_of_fields_batched", "split", "array_split",
                      "hsplit", "vsplit", "dsplit", "unmerge", "unmerge_grad", "pick",
                      "add_at")
_CONTAINER_HELPERS = ("unmerge", "pick", "split_at", "unstack_as", "unstack", "add_n_grad",
                      "unconcatenate")

# derivative and batching helpers (ad/helpers.py, batching/helpers.py) that take or return
# lists: (positions of list arguments, whether the result is a list or tuple of them)
_HELPER_LISTS = {"split_at": ((0,), True), "unstack": ((), True), "unstack_as": ((1,), True),
                 "add_n_grad": ((1,), True), "add_n_grad_batched": ((1,), True),
                 "add_n_batched": ((0,), False), "stack_examples": ((0,), False),
                 # a list or an array: its cotangent adds with add_grads, which does both
                 "item_of": ((0,), False), "index_examples": ((0,), False)}


def _helper_lists(op):
    """The names a call of a list helper shows to be lists (a second-order cotangent of a
    list starts as zeros_like_tree, not as an array of zeros)."""
    callee = getattr(op, "callee", None)
    if op.op != "call" or not (getattr(callee, "__module__", "") or "").startswith(
            ("secant.ad.", "secant.batching.")) or callee.__name__ not in _HELPER_LISTS:
        return set()
    positions, result = _HELPER_LISTS[callee.__name__]
    import inspect
    params = list(inspect.signature(callee, follow_wrapped=False).parameters)
    out = set(op.targets) if result and len(op.targets) == 1 else set()
    for k, o in op.operands.items():
        i = int(k[3:]) if k.startswith("arg") and k[3:].isdigit() else \
            params.index(k) if k in params else None
        if i in positions and isinstance(o, ir.Var):
            out.add(o.name)
    return out

# ad/helpers.py's and batching/helpers.py's container cotangent helpers: positions of the
# arguments that only give a structure or a shape (their derivative is zero)
_STRUCTURE_ARGS = {"unstack_as": (1,), "unmerge": (1, 2), "pick": (1,), "add_n_grad": (1,),
                   "unconcatenate": (1,), "fields_of": (1,), "fields_of_batched": (1,),
                   "grad_of_fields": (0,), "grad_of_fields_batched": (0,),
                   # jacrev's Jacobian from its rows: the output gives its shape (its tangent
                   # never read: a custom_vjp function's jvp, refused, is then not asked for)
                   "from_rows": (1,)}


def container_names(stmts):
    """Names of the canonical form (ir) that hold containers of tracked values: results of the
    container ops, slices of them, copies of them (loop names, if joins), and lists passed whole
    to stack/concatenate/sum. Read by the transforms (a container's zero is zeros_like_tree, a
    container's items are read as written under vmap)."""
    ops, copies, stacks = [], [], []

    def walk(block):
        for s in block:
            if isinstance(s, ir.Op):
                ops.append(s)
            elif isinstance(s, ir.Plain) and s.stack and s.stack[0] in ("push", "pop"):
                stacks.append(s.stack)      # a derivative's loop stack of lists
            elif isinstance(s, ir.If):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                walk(s.body)
                copies.extend(s.carried)
    walk(stmts)
    walk = None    # (it names itself: freed now, not by the cyclic collector)
    out = set()
    for op in ops:
        if op.op in CONTAINER_OPS or op.op in _CONTAINER_RESULTS or op.op == "call" and (
                getattr(op.callee, "__module__", "") or "").startswith("secant.ad.") \
                and getattr(op.callee, "__name__", "") in _CONTAINER_HELPERS:
            out.update(op.targets)      # (a derivative's own container cotangents, too)
        if op.op in ("stack", "concatenate", "lax_concatenate", "add_n"):
            seq = next(iter(op.operands.values()), None)
            if isinstance(seq, ir.Var):
                out.add(seq.name)
        if op.op == "split_at" and isinstance(op.operands.get("x"), ir.Var):
            out.add(op.operands["x"].name)      # a list's cotangent, split at an append
        if op.op in TREE_OPS and op.op != "tree_structure":  # pytrees and their leaves' lists
            out.update(op.targets)
            out.update(o.name for o in op.operands.values() if isinstance(o, ir.Var))
        out |= _helper_lists(op)
    grown = True
    while grown:
        before = len(out)
        for op in ops:
            if op.op == "identity" and isinstance(op.operands.get("x"), ir.Var) \
                    and set(op.targets) & out:         # a copy of a list: a list too
                out.add(op.operands["x"].name)
            src = op.operands.get("x") if op.op == "identity" else \
                op.operands.get("a") if op.op == "getitem" and getattr(op, "container", False) \
                and ":" in op.statics.get("idx", "") else None
            if isinstance(src, ir.Var) and src.name in out:
                out.update(op.targets)
        for loop, last in copies:
            if last in out:
                out.add(loop)
        for kind, stack, name in stacks:    # what a stack of lists pops is a list
            if kind == "push" and name in out:
                out.add(stack)
            elif kind == "pop" and stack in out:
                out.add(name)
        grown = len(out) > before
    return out


def _indexed_by_target(loop, name, target=None):
    """Whether the body of `for k in name` (`target` k) reads name[k]."""
    target = target or loop.target
    if not isinstance(target, gast.Name):
        return False
    return any(isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name)
               and n.value.id == name and isinstance(n.slice, gast.Name)
               and n.slice.id == target.id
               for stmt in loop.body for n in _walk(stmt))
