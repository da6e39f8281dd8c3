"""Functionalisation: Python `if`/`while`/`for i in range(...)` -> secant.lax.cond / while_loop /
fori_loop calls, so that control flow on traced values works under jit.

`functionalize(fn)` reads `fn`'s source, rewrites its control flow innermost first and returns a
new, readable Python function (registered source, `__secant_source__` attached), or `fn` itself
when there is nothing to rewrite. jit traces the rewritten function; eager calls keep running the
user's own function.

The rewrite keeps Python's semantics where values are concrete: `lax.cond` with a concrete
predicate calls one branch as plain Python, so conditions on static things (shapes, static
arguments) behave exactly as before. While jit traces, `lax.while_loop`/`fori_loop` stage one
StableHLO while loop even over Python numbers (they become loop-carried scalars).

- `if test: A else: B` becomes two nested functions (`y_if_true`, `y_if_false`) that take the
  variables the branches assign and that are live afterwards, and return them:
  `y = lax.cond(test, y_if_true, y_if_false, y)`. A variable assigned in only one branch (and
  not before the `if`) but read afterwards is returned as an `undefined_in_branch(...)`
  sentinel from the other branch: harmless when the predicate is concrete (the Python program
  never reads it), a clear error naming the user's line when the predicate is traced. In a
  derivative (generated code), such a variable is a residual its reverse pass reads only under
  the same test: `unset_in_branch(...)`, which a traced cond joins with zeros (as JAX does).
  `if c: ... return a` / `else: ... return b` (or `if c: return a` followed by the rest of the
  function) becomes `return lax.cond(c, ...)`.
- `while test: body` becomes `lax.while_loop(cond, body, carry)`; the carry is the variables the
  body assigns that the test, the next iteration or the code after the loop reads.
- `for i in range(a, b)` (step 1) becomes `lax.fori_loop(a, b, body, carry)`.
Loops that need Python (side effects such as print/append, slicing or shapes by the loop index,
break/continue/return, a variable first assigned inside the loop) stay Python loops: under jit
they unroll, and a comment in the rewritten source says why. `if`s with side effects or static
tests (shapes, `is None`, isinstance, ...) stay Python `if`s.
"""
import ast
import builtins
import contextlib
import contextvars
import copy
import dataclasses
import inspect
import linecache
import types
import warnings

from secant.backends.function_cache import FunctionCache
import gast

from secant.backends import once
from secant.backends.core import Tracer
from secant.backends.placeholder import Undefined, unset_in_branch
from secant.backends.errors import SecantError
from secant.codegen import loader
from secant.codegen.naming import Names, push_children
from secant.transformer import depth, gast_parse, operators, straight_line
from secant.transformer.nonlocals import state_callee
from secant.transformer.hygiene import SCOPES as _SCOPES, copy_tree, walk as _walk, walk_scope
from secant.transformer.parse import FunctionSource, SourceError, function_source

_cache = FunctionCache("functionalized")

_SIDE_EFFECT_CALLS = {"print", "input", "open", "setattr", "delattr", "exec", "eval", "next",
                      "breakpoint"}
_MUTATING_METHODS = {"append", "pop", "extend", "insert", "remove", "clear", "update", "add",
                     "discard", "setdefault", "popitem", "write", "sort", "reverse", "put",
                     "send", "appendleft", "popleft"}
_INT_CALLS = {"range", "int", "len", "float", "bool", "str", "slice", "list", "tuple",
              "enumerate", "zip", "format", "repr", "hex", "oct", "chr"}
_SHAPE_METHODS = {"reshape", "zeros", "ones", "full", "empty", "arange", "linspace", "eye",
                  "identity", "broadcast_to", "tile", "repeat", "split", "array_split",
                  "expand_dims", "squeeze", "transpose", "swapaxes", "moveaxis", "tri", "tril",
                  "triu", "pad", "resize"}
_SHAPE_KEYWORDS = {"shape", "newshape", "axis", "axes", "num", "k", "repeats", "reps",
                   "indices_or_sections", "keepdims", "ord"}
_STATIC_ATTRS = {"shape", "ndim", "dtype", "size", "weak_type"}
_STATIC_CALLS = {"len", "isinstance", "hasattr", "callable", "type", "issubclass", "getattr"}


# --- the sentinel for a variable defined in only one branch -----------------------------------
def undefined_in_branch(pred, name, location):
    """The value of `name` on the branch that does not assign it: with a concrete predicate the
    program never reads it (Python would not either); with a traced one both branches are
    traced and must return it, so this is the user's error."""
    fn, _, line = location.rpartition(":")
    text = linecache.getline(fn, int(line)).strip()
    where = f"\n  at {location}" + (f"\n    {text}" if text else "")
    if isinstance(pred, Tracer):
        raise SecantError(
            f"{name!r} is defined in only one branch of an if whose condition is traced under "
            f"jit, and it is used after the if; assign {name} before the if or in both "
            f"branches{where}")
    return Undefined(name, where)


undefined_in_branch.__secant_placeholder__ = True


# --- name analyses (one scope, nested functions count by their free names) ---------------------
# pre-order nodes of statements, not descending into nested scopes (which are yielded); the
# tree walks below are hygiene.walk (ast.walk's nodes in its order, at about half its cost)
_scope_nodes = walk_scope


def _free_names(scope):
    loads, bound = {}, set()
    for n in [scope]:
        for m in _walk(n):
            if isinstance(m, gast.Name):
                if isinstance(m.ctx, gast.Load):
                    loads.setdefault(m.id)
                else:
                    bound.add(m.id)
            elif isinstance(m, (gast.FunctionDef, gast.ClassDef)) and m is not scope:
                bound.add(m.name)
    return [k for k in loads if k not in bound]


def assigned(stmts):
    """Names bound by `stmts` in their own scope, in order of first appearance."""
    out = {}
    for n in _scope_nodes(stmts):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            out.setdefault(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            out.setdefault(n.name)
        elif isinstance(n, (gast.Import, gast.ImportFrom)):
            for a in n.names:
                out.setdefault(a.asname or a.name.split(".")[0])
    return list(out)


def reads(nodes):
    """Names read by `nodes` (statements or expressions), nested scopes' free names included."""
    out = {}
    for n in _scope_nodes(nodes):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            out.setdefault(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            out.setdefault(n.target.id)
        elif isinstance(n, _SCOPES):
            for k in _free_names(n):
                out.setdefault(k)
    return list(out)


def exposed(stmts, defined=frozenset()):
    """(names read before any assignment in `stmts`, names definitely assigned after them)."""
    defined = set(defined)
    out = {}

    def use(names):
        for k in names:
            if k not in defined:
                out.setdefault(k)

    for s in stmts:
        if isinstance(s, gast.If):
            use(reads([s.test]))
            e1, d1 = exposed(s.body, defined)
            e2, d2 = exposed(s.orelse, defined)
            use(e1 + e2)
            defined = d1 & d2
        elif isinstance(s, (gast.While, gast.For)):
            head = [s.test] if isinstance(s, gast.While) else [s.iter]
            use(reads(head))
            inner = set(defined) | (set(assigned([s.target])) if isinstance(s, gast.For) else set())
            use(exposed(s.body, inner)[0])
            use(exposed(s.orelse, defined)[0])
        else:
            use(reads([s]))
            defined |= set(assigned([s]))
    return list(out), defined


def _contains(stmts, kinds, into_loops=True):
    """The first node of `kinds` in `stmts` (not in nested scopes; nor in loops unless
    into_loops), or None. Its own walk of each node's children (push_children: jit's first
    call of a derivative asks it of the derivative's every statement, issue 19)."""
    kinds = frozenset(kinds) if type(kinds) is tuple else (kinds,)     # (node classes: gast's
    stop = _SCOPE_TYPES if into_loops else _SCOPE_AND_LOOP_TYPES      # are never subclassed)
    stack = list(stmts)
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        t = type(n)
        if t in kinds:
            return n
        if t not in stop:
            push_children(n, push)
    return None


_SCOPE_TYPES = frozenset(_SCOPES)
_SCOPE_AND_LOOP_TYPES = _SCOPE_TYPES | {gast.For, gast.While}


def _side_effect(stmts):
    """A reason these statements must run as Python (not be traced as a function), or None."""
    for n in _scope_nodes(stmts):
        if isinstance(n, gast.Call):
            f = n.func
            if isinstance(f, gast.Name) and f.id in _SIDE_EFFECT_CALLS:
                return f"calls {f.id}()"
            if isinstance(f, gast.Attribute) and f.attr in _MUTATING_METHODS:
                return f"mutates a Python object (.{f.attr})"
        elif isinstance(n, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in targets:
                for m in _walk(t):
                    if isinstance(m, (gast.Subscript, gast.Attribute)) and \
                            isinstance(m.ctx, gast.Store):
                        return "assigns to an item or attribute of a Python object"
        elif isinstance(n, (gast.Delete, gast.Global, gast.Nonlocal)):
            return f"uses {type(n).__name__.lower()}"
        elif isinstance(n, (gast.Yield, gast.YieldFrom, gast.Await)):
            return "yields"
        elif isinstance(n, (gast.Raise, gast.Assert)):
            return f"uses {type(n).__name__.lower()}"
        elif isinstance(n, (gast.Try, gast.With, gast.AsyncWith, gast.AsyncFor)):
            return f"uses {type(n).__name__.lower()}"
    return None


def _is_static(expr, static=frozenset()):
    """True for tests that are Python values whatever is traced: shapes, `is None`, len(),
    `k in keys` (membership is always a Python bool), and names in `static` (each bound once to
    such a test: `cond = isinstance(x, tuple)`, as a derivative saves its tests)..."""
    if isinstance(expr, gast.Constant):
        return True
    if isinstance(expr, gast.Name):
        return expr.id in static
    if isinstance(expr, gast.Attribute):
        return expr.attr in _STATIC_ATTRS
    if isinstance(expr, gast.Subscript):
        return _is_static(expr.value, static) and _is_static(expr.slice, static)
    if isinstance(expr, gast.Call):
        return isinstance(expr.func, gast.Name) and expr.func.id in _STATIC_CALLS
    if isinstance(expr, gast.Compare):
        if all(isinstance(op, (gast.Is, gast.IsNot, gast.In, gast.NotIn)) for op in expr.ops):
            return True
        return all(_is_static(e, static) for e in [expr.left] + expr.comparators)
    if isinstance(expr, gast.BoolOp):
        return all(_is_static(v, static) for v in expr.values)
    if isinstance(expr, gast.UnaryOp):
        return _is_static(expr.operand, static)
    if isinstance(expr, gast.BinOp):
        return _is_static(expr.left, static) and _is_static(expr.right, static)
    if isinstance(expr, gast.Tuple):
        return all(_is_static(e, static) for e in expr.elts)
    return False


def _static_names(fnode):
    """Names the function binds to one static test (`cond_6 = isinstance(tree_bar, tuple)`;
    written again: a derivative's reverse pass binds its forward pass's `cond = len(hist) > 2`
    again) and nowhere else (no other assignment, loop target, parameter, nested scope's
    name). (`done = False` ... `done = True` is no such name: which one ran may be traced.)"""
    stores, single = {}, {}
    for n in _walk(fnode):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name):
            single.setdefault(n.targets[0].id, []).append(n.value)
    static, grown = set(_container_names(fnode, stores)), True
    while grown:
        grown = False
        for name, values in single.items():
            if name not in static and stores.get(name) == len(values) and \
                    len({gast.dump(v) for v in values}) == 1 and _is_static(values[0], static):
                static.add(name)
                grown = True
    return frozenset(static)


_DISPLAYS = (gast.List, gast.Tuple, gast.Dict, gast.Set, gast.ListComp, gast.DictComp,
             gast.SetComp)


def _container_names(fnode, stores):
    """Names bound only to list, tuple, dict or set displays (`history = []`, `a, b = [], []`)
    or to slices and concatenations of such names (`history = history[1:] + [x]`): their
    truth (`if history:`) is their length, a Python bool."""
    values = {}
    for n in _walk(fnode):
        if isinstance(n, gast.Assign) and len(n.targets) == 1:
            t, v = n.targets[0], n.value
            pairs = [(t, v)] if isinstance(t, gast.Name) else list(zip(t.elts, v.elts)) if (
                isinstance(t, (gast.Tuple, gast.List)) and isinstance(v, (gast.Tuple, gast.List))
                and len(t.elts) == len(v.elts)) else []
            for target, value in pairs:
                if isinstance(target, gast.Name):
                    values.setdefault(target.id, []).append(value)
    names = {name for name, vs in values.items() if len(vs) == stores.get(name)}

    def container(v):
        if isinstance(v, _DISPLAYS):
            return True
        if isinstance(v, gast.Name):
            return v.id in names
        if isinstance(v, gast.Subscript):
            return isinstance(v.slice, gast.Slice) and container(v.value)
        return isinstance(v, gast.BinOp) and isinstance(v.op, gast.Add) and \
            container(v.left) and container(v.right)
    shrunk = True
    while shrunk:                   # (the largest set whose values are all containers)
        kept = {name for name in names if all(container(v) for v in values[name])}
        shrunk, names = kept != names, kept
    return {name: values[name] for name in names}


def _resized_containers(fnode):
    """The names of _container_names that some assignment rebinds to a slice or concatenation
    (`history = history[1:]`): a length that may differ between an if's branches."""
    return {name for name, values in _container_names(fnode, _stores(fnode)).items()
            if not all(isinstance(v, _DISPLAYS) for v in values)}


def _stores(fnode):
    stores = {}
    for n in _walk(fnode):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    return stores


def _mentions(node, name):
    return any(isinstance(m, gast.Name) and m.id == name for m in _walk(node))


def _reads_value(node, name):
    """Whether `node` reads `name`'s value: not only its length, shape or type (`len(xs)`,
    `x.shape[0]`, `isinstance(x, list)`: static where the value is traced)."""
    if isinstance(node, gast.Name):
        return node.id == name
    if isinstance(node, gast.Attribute) and node.attr in _STATIC_ATTRS:
        return False
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id in _STATIC_CALLS - {"getattr"}:
        return False
    return any(_reads_value(c, name) for c in gast.iter_child_nodes(node))


def _index_needs_int(body, i):
    """Why the body needs the loop index `i` as a Python int (so the loop must unroll), or None."""
    for n in (m for s in body for m in _walk(s)):    # nested functions included
        if isinstance(n, gast.Slice) and _mentions(n, i):
            return f"it slices with {i}"
        if isinstance(n, gast.JoinedStr) and _mentions(n, i):      # getattr(m, f"w{i}")
            return f"it formats {i} into a string"
        if isinstance(n, gast.Call):
            f = n.func
            args = list(n.args) + [k.value for k in n.keywords]
            if isinstance(f, gast.Name) and f.id in _INT_CALLS and any(_mentions(a, i)
                                                                       for a in args):
                return f"it passes {i} to {f.id}()"
            if isinstance(f, gast.Attribute) and f.attr in _SHAPE_METHODS and \
                    any(_mentions(a, i) for a in args):
                return f"it passes {i} to {f.attr}() as a shape or axis"
            for k in n.keywords:
                if k.arg in _SHAPE_KEYWORDS and _mentions(k.value, i):
                    return f"it passes {i} as {k.arg}="
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Attribute) and \
                n.value.attr in _STATIC_ATTRS and _mentions(n.slice, i):
            return f"it indexes .{n.value.attr} with {i}"
    derived = _derived_from(body, i)        # `i == 1 and j == 1`: bool() of a traced i
    for n in (m for s in body for m in _walk(s)):
        tested = (n.values[:-1] if isinstance(n, gast.BoolOp) else
                  [n.operand] if isinstance(n, gast.UnaryOp) and isinstance(n.op, gast.Not)
                  else [n.test] if isinstance(n, gast.IfExp) else
                  [n] if isinstance(n, gast.Compare) and len(n.ops) > 1 else [])
        if any(_reads_value(t, v) for t in tested for v in derived):
            return f"it takes and/or/not of a test on {i}"
        # a dict keyed by i (`d | {i % 2: v}`, `k in d`): a key is hashed, a traced one is not
        keys = [k for k in n.keys if k is not None] if isinstance(n, gast.Dict) else \
            [n.left] if isinstance(n, gast.Compare) and isinstance(n.ops[0], (gast.In,
                                                                              gast.NotIn)) \
            else []
        if any(_mentions(k, v) for k in keys for v in derived):
            return f"it makes a dict key of {i}"
    return None


def _python_test_of(body, i):
    """Why a loop body, rewritten, needs its index `i` as a Python int for an if or while it
    kept as Python (a side effect, a break, a value first assigned in the loop...) whose test
    reads i: bool() of a traced index under jit. None if it has none."""
    derived = _derived_from(body, i)
    for n in (m for s in body for m in _walk(s)):
        if isinstance(n, (gast.If, gast.While)) and any(_reads_value(n.test, v)
                                                        for v in derived):
            return f"a Python {type(n).__name__.lower()} tests {i}"
    return None


def _derived_from(body, i):
    """i and the names the body assigns from expressions that read it (or such names)."""
    names, grew = {i}, True
    while grew:
        grew = False
        for n in (m for s in body for m in _walk(s)):
            if isinstance(n, gast.Assign) and any(_mentions(n.value, v) for v in names):
                for t in n.targets:
                    for m in _walk(t):
                        if isinstance(m, gast.Name) and m.id not in names:
                            names.add(m.id)
                            grew = True
    return names


def _indexed_by(body, i):
    """Names the body subscripts with the loop index i (`ws[i]`, `ws[i, 0]`)."""
    return {n.value.id for st in body for n in _walk(st)
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name)
            and isinstance(n.ctx, gast.Load) and _mentions(n.slice, i)}


def _ends_with_return(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, gast.Return):
        return True
    return isinstance(last, gast.If) and _ends_with_return(last.body) and \
        _ends_with_return(last.orelse)


def _count(stmts, kinds):
    return sum(isinstance(n, kinds) for n in _scope_nodes(stmts))


def _parse_stmt(text, like):
    node = gast.parse(text).body[0]
    for m in _walk(node):
        if hasattr(m, "lineno") or isinstance(m, (gast.stmt, gast.expr)):
            gast.copy_location(m, like)
    return node


def _tuple_src(names):
    return names[0] if len(names) == 1 else ", ".join(names)


# --- the rewrite ----------------------------------------------------------------------------------
class _Rewriter:
    def __init__(self, src, names, lax_name, undef_name, range_ok):
        self.src, self.names, self.lax, self.undef = src, names, lax_name, undef_name
        self.range_ok = range_ok
        self.static = frozenset()  # names bound once to a static test (_static_names)
        self.once = frozenset()    # names bound once in the function (no loop target, ...)
        self.concrete = frozenset()  # once-bound tests of Python ifs that ran before (block)
        self.definite = frozenset()  # names bound on every path to the statement (block)
        self.closure_reads = frozenset()  # free names of the nested scopes (read any time)
        self.resized = set()       # lists whose length changes (_resized_containers)
        self.comments = {}        # id(statement) -> comment lines above it
        self.planned = {}         # (id(statement), base) -> name
        self._keep = []           # the statements `comments` keys refer to
        self.changed = False
        self.carry_functions = {}  # a loop function's name -> its carry tuple's parameter
        self.loop_only = set()    # assigned in an enclosing loop's body, unbound before it

    def name(self, s, base):
        """A fresh name for a function or variable the rewrite of `s` introduces; reserved before
        the inner statements are rewritten, so that outer ones get the plain names."""
        key = (id(s), base)
        got = self.planned.get(key)
        if got is None:
            got = self.planned[key] = self.names.fresh(base)
            self._keep.append(s)
        return got

    def plan(self, s, defined, later):
        try:
            if isinstance(s, gast.If):
                if _is_static(s.test, self.static | self.concrete) or \
                        _side_effect(s.body + s.orelse):
                    return
                if not isinstance(s.test, gast.Name):
                    self.name(s, "pred")
                outs = [v for v in assigned(s.body + s.orelse) if self._out(v, later)]
                base = outs[0] if outs else "return"
                self.name(s, f"{base}_if_true")
                self.name(s, f"{base}_if_false")
            elif self._loop_problem(s) or isinstance(s, gast.While) and \
                    _is_static(s.test, self.static):
                return
            elif isinstance(s, gast.While):
                carries, _ = self._carries(s, reads([s.test]), defined, later)
                if carries:
                    self.name(s, f"{carries[0]}_while_cond")
                    self.name(s, f"{carries[0]}_while_body")
            elif isinstance(s, gast.For) and isinstance(s.target, gast.Name):
                carries, _ = self._carries(s, [], defined, later, index=(s.target.id,))
                if carries:
                    self.name(s, f"{carries[0]}_for_body")
        except Exception:       # only names are at stake here
            pass

    def comment(self, stmt, text):
        self.comments.setdefault(id(stmt), []).append(text)
        self._keep.append(stmt)

    def where(self, node):
        fn, line = self.src.user_position(node)
        return f"{fn}:{line}"

    # statement lists
    def block(self, stmts, defined, later):
        stmts = _merge_return_tail(list(stmts))
        n = len(stmts)
        suffix_reads = [set() for _ in range(n + 1)]
        for k in range(n - 1, -1, -1):
            suffix_reads[k] = suffix_reads[k + 1] | set(reads([stmts[k]]))
        out, before = [], set(defined)
        entry = self.concrete, self.definite
        concrete, definite = entry
        for k, s in enumerate(stmts):
            self.concrete, self.definite = concrete, definite
            after = frozenset(exposed([s], definite)[1])
            kept = self.stmt(s, before, set(later) | suffix_reads[k + 1])
            out.extend(kept)
            before |= set(assigned([s]))
            definite = after
            if isinstance(s, gast.If) and s in kept and isinstance(s.test, gast.Name) and \
                    s.test.id in self.once:
                # a Python if's test is concrete whenever the program runs on: another if on
                # the same once-bound name after it stays a Python if too (a derivative's
                # reverse `if cond:` after its forward one, which appends to its stacks)
                concrete |= {s.test.id}
        self.concrete, self.definite = entry
        if stmts and not out:       # every statement dropped (a dead if)
            out.append(gast.copy_location(gast.Pass(), stmts[0]))
        return out

    def _out(self, v, later):
        """Whether an if that assigns `v` returns it: read later (a nested scope's free name
        may be read whenever it is called), or bound on every path before the if (its value
        passes through). One bound on some paths only and read nowhere after is no operand:
        on a path that left it unbound, passing it in would raise (issue 15: diff's second
        derivative, whose reverse loop rebinds its forward loop's index)."""
        return v in later or v in self.definite or v in self.closure_reads

    def stmt(self, s, defined, later):
        if isinstance(s, (gast.If, gast.While, gast.For)):
            self.plan(s, defined, later)
        if isinstance(s, gast.If):
            s.body = self.block(s.body, defined, later)
            s.orelse = self.block(s.orelse, defined, later)
            return self.rewrite_if(s, defined, later)
        if isinstance(s, (gast.While, gast.For)):
            # what the next iteration reads before assigning it is live at the end of the body
            head = [s.test] if isinstance(s, gast.While) else [s.iter]
            index = set(assigned([s.target])) if isinstance(s, gast.For) else set()
            inner_later = set(later) | set(reads(head)) | set(exposed(s.body, index)[0])
            inner_defined = set(defined) | index
            outer_only, outer_definite = self.loop_only, self.definite
            self.loop_only = outer_only | (set(assigned(s.body)) - inner_defined)
            self.definite = outer_definite | index
            try:
                s.body = self.block(s.body, inner_defined, inner_later)
            finally:
                self.loop_only, self.definite = outer_only, outer_definite
            if isinstance(s, gast.While):
                return self.rewrite_while(s, defined, later)
            return self.rewrite_for(s, defined, later)
        return [s]

    # if
    def rewrite_if(self, s, defined, later):
        if _is_static(s.test, self.static | self.concrete):
            return [s]
        why = _side_effect(s.body + s.orelse)
        resized = [v for v in assigned(s.body) + assigned(s.orelse) if v in self.resized]
        why = f"its body {why}" if why else (
            "it contains break/continue"
            if _contains(s.body + s.orelse, (gast.Break, gast.Continue), False) else
            f"it may change the length of the list {resized[0]}" if resized else None)
        if why:
            self.comment(s, f"secant: a Python if ({why}); under jit its condition must be "
                            "concrete")
            return [s]
        n_returns = _count(s.body + s.orelse, gast.Return)
        returns = n_returns > 0
        if returns:
            if not (n_returns == 2 and isinstance(s.body[-1], gast.Return) and s.orelse
                    and isinstance(s.orelse[-1], gast.Return)
                    and _count(s.body[:-1] + s.orelse[:-1], gast.Return) == 0):
                self.comment(s, "secant: a Python if (only an if whose branches both end in "
                                "return is functionalised); under jit its condition must be "
                                "concrete")
                return [s]
        changed = assigned(s.body) + [v for v in assigned(s.orelse) if v not in assigned(s.body)]
        if returns:
            params = [v for v in changed if v in defined]
            outs = []
        else:
            outs = [v for v in changed if self._out(v, later)]
            params = [v for v in outs if v in defined]
            if not outs:
                # an if whose values nothing reads (a derivative's replay, or user code whose
                # result is unused; side effects were ruled out above): dead, and as a Python
                # if it would need a concrete test under jit and one truth value under vmap
                self.changed = True
                return []
            both = exposed(s.body, set(defined))[1] & exposed(s.orelse, set(defined))[1]
            kept = [v for v in outs if v not in defined and v in self.loop_only
                    and v not in both]          # (assigned by both branches: no value in)
            if kept and not self.src.generated:     # (a derivative's residual: unset above)
                # an earlier iteration's value, or none: no value to pass in
                self.comment(s, f"secant: a Python if ({kept[0]}, first assigned in the loop, "
                                "may keep an earlier iteration's value); under jit its "
                                "condition must be concrete")
                return [s]
        out = []
        if isinstance(s.test, gast.Name):
            pred = s.test.id
        else:
            pred = self.name(s, "pred")
            assign = gast.Assign(targets=[gast.Name(pred, gast.Store(), None, None)],
                                 value=s.test, type_comment=None)
            out.append(gast.copy_location(assign, s))
        base = outs[0] if outs else "return"
        fns = []
        for branch, body in (("true", s.body), ("false", s.orelse)):
            name = self.name(s, f"{base}_if_{branch}")
            fdef = _parse_stmt(f"def {name}({', '.join(params)}):\n    pass\n", s)
            body = list(body)
            if not returns:
                _, definite = exposed(body, set(params))
                for v in outs:
                    if v not in definite and self.src.generated:   # a derivative's residual
                        body.append(_parse_stmt(f"{v} = {self.unset}({v!r})", s))
                    elif v not in definite:
                        body.append(_parse_stmt(
                            f"{v} = {self.undef}({pred}, {v!r}, {self.where(s)!r})", s))
                body.append(_parse_stmt(f"return {_tuple_src(outs)}", s))
            fdef.body = body
            out.append(fdef)
            fns.append(name)
        call = f"{self.lax}.cond({', '.join([pred] + fns + params)})"
        out.append(_parse_stmt(f"return {call}" if returns else f"{_tuple_src(outs)} = {call}", s))
        self.changed = True
        return out

    # loops
    def _loop_problem(self, s):
        if s.orelse:
            return "it has an else: block"
        if isinstance(s, gast.While) and _contains([s.test], gast.NamedExpr):
            return "its test assigns with :="     # (its cond would assign a name of its own)
        why = _side_effect(s.body)
        if why:
            return f"its body {why}"
        for n in _scope_nodes(s.body):      # write_global('COUNT', ...): once per iteration
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and getattr(
                    self.src.closure.get(n.func.id), "__secant_writes_global__", False):
                return f"its body sets the global {gast.unparse(n.args[0]).strip()}"
        for n in _scope_nodes(s.body):      # gstep(x), rng.next(): a counter, once per iteration
            callee = isinstance(n, gast.Call) and state_callee(n.func, self._free_value,
                                                               n.args)
            if callee:
                return f"its body calls {gast.unparse(n.func).strip()}, which sets Python state"
        if _contains(s.body, (gast.Break, gast.Continue), False):
            return "it uses break/continue"
        if _contains(s.body, gast.Return):
            return "it returns from inside the loop"
        return None

    def _free_value(self, name):
        """The value of a free name of the function (KeyError where it is not one)."""
        if name in self.src.closure:
            return self.src.closure[name]
        return self.src.globals[name]

    def _carries(self, s, head_reads, defined, later, index=()):
        body_exposed = [v for v in exposed(s.body, set(index))[0]]
        assigned_body = assigned(s.body)
        carries = [v for v in assigned_body
                   if v not in index and (v in body_exposed or v in head_reads or v in later)]
        missing = [v for v in carries if v not in defined]
        return carries, missing

    def _loop_functions(self, s, carries, kind, head_args, test=None):
        """(statements defining the loop's functions, the call text)."""
        base = carries[0]
        carry_src = _tuple_src(carries)
        carry = carries[0] if len(carries) == 1 else self.names.fresh("carry")
        unpack = [] if len(carries) == 1 else [_parse_stmt(f"{carry_src} = {carry}", s)]
        out = []
        if kind == "while":
            cname = self.name(s, f"{base}_while_cond")
            if unpack:
                self.carry_functions[cname] = carry
            cdef = _parse_stmt(f"def {cname}({carry}):\n    pass\n", s)
            ret = gast.Return(value=test)
            cdef.body = unpack + [gast.copy_location(ret, s)]
            out.append(cdef)
        bname = self.name(s, f"{base}_{kind}_body")
        if unpack:
            self.carry_functions[bname] = carry
        params = f"{carry}" if kind == "while" else f"{head_args}, {carry}"
        bdef = _parse_stmt(f"def {bname}({params}):\n    pass\n", s)
        bdef.body = [copy.copy(u) for u in unpack] + list(s.body) + [
            _parse_stmt(f"return {carry_src}", s)]
        out.append(bdef)
        init = carries[0] if len(carries) == 1 else f"({carry_src})"
        if kind == "while":
            call = f"{self.lax}.while_loop({cname}, {bname}, {init})"
        else:
            call = None
        return out, bname, init, call

    def _static_carry(self, carries):
        """Why a carry must stay a Python value (the function uses it as a shape, a slice
        bound, in range()...), or None: a staged loop would make it a traced scalar."""
        for v in carries:
            why = _index_needs_int(self.root, v)
            if why:
                return f"{v} must stay a Python number ({why})"
        return None

    def _returned_counter(self, carries):
        """Why a loop over a static range must stay a Python loop because it counts a Python
        int from static values alone (`k = 0` ... `k = k + 1`) that the function returns, or
        None: its caller may need it as one (x[:k], range(k)), as JAX's unrolled trace keeps
        it. (A while loop's test may be traced: there a staged counter is the only way.)"""
        counters = set(carries)
        while True:
            kept = {v for v in counters if self._counter(v, counters)}
            if kept == counters:
                break
            counters = kept
        returned = {n.id for st in self.root for r in walk_scope([st])
                    if isinstance(r, gast.Return) and r.value is not None
                    for n in _walk(r.value) if isinstance(n, gast.Name)}
        for v in carries:
            if v in counters and v in returned:
                return f"{v} must stay a Python number (a count the function returns)"
        return None

    def rewrite_while(self, s, defined, later):
        if _is_static(s.test, self.static):
            return [s]
        indexing = self._indexing_counters(s)
        if indexing:
            self.comment(s, f"secant: a Python while loop ({indexing}); under jit it unrolls")
            return [s]
        why = self._loop_problem(s)
        carries, missing = (None, None) if why else self._carries(s, reads([s.test]), defined,
                                                                   later)
        if not why and missing:
            why = _first_assigned(missing)
        if not why:
            why = self._static_carry(carries)
        if why:
            self.comment(s, f"secant: a Python while loop ({why}); under jit its condition "
                            "must be concrete and the loop unrolls")
            return [s]
        if not carries:
            return [s]
        out, _, _, call = self._loop_functions(s, carries, "while", None, s.test)
        out.append(_parse_stmt(f"{_tuple_src(carries)} = {call}", s))
        self.changed = True
        return out

    def _indexing_counters(self, s):
        """Why while loop `s` stays a Python loop because its test reads only Python int
        counters (`i = len(xs) - 1` ... `i -= 1`: every binding static given the counters
        themselves) and one of them indexes a name (`coeffs[i]`, a list JAX's Python loop
        reads at a Python int), or None. (A staged loop would make the counter a traced
        scalar: no index into a list.)"""
        tested = set(reads([s.test]))
        counters = {v for v in tested if self._counter(v, tested)}
        if not counters or not _is_static(s.test, self.static | counters):
            return None
        for v in sorted(counters):
            names = sorted(_indexed_by(s.body, v) - set(assigned(s.body)))
            if names:
                return f"its counter {v} indexes {names[0]}: a Python int"
        return None

    def _counter(self, v, counters):
        """Whether every binding of `v` in the function is `v = e` or `v op= e` with `e` static
        given `counters` (no parameter, loop target or unpacking binds it)."""
        static = self.static | counters
        if _mentions(self.src.node.args, v):
            return False
        seen = False
        for n in (m for st in self.root for m in _walk(st)):
            if isinstance(n, (gast.For, gast.comprehension)) and _mentions(n.target, v):
                return False
            if isinstance(n, gast.Assign) and any(_mentions(t, v) for t in n.targets):
                if not (len(n.targets) == 1 and isinstance(n.targets[0], gast.Name)
                        and _is_static(n.value, static)):
                    return False
                seen = True
            if isinstance(n, gast.AugAssign) and _mentions(n.target, v):
                if not (isinstance(n.target, gast.Name) and _is_static(n.value, static)):
                    return False
                seen = True
            if isinstance(n, (gast.AnnAssign, gast.NamedExpr)) and _mentions(n.target, v) or \
                    isinstance(n, gast.withitem) and n.optional_vars is not None and \
                    _mentions(n.optional_vars, v):
                return False
        return seen

    def rewrite_for(self, s, defined, later, guarded=()):
        it = s.iter
        if isinstance(it, gast.Name) and isinstance(s.target, gast.Name) and self.range_ok \
                and not s.orelse and s.target.id not in later and not self._varargs(it.id) \
                and not self._python_list(it.id):
            return self.rewrite_for_rows(s, defined, later)
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
                and it.func.id == "range" and self.range_ok and not it.keywords
                and 1 <= len(it.args) <= 3 and not any(isinstance(a, gast.Starred)
                                                        for a in it.args)):
            return [s]
        why = None
        if not isinstance(s.target, gast.Name):
            why = "its target is not a plain name"
        i = s.target.id if isinstance(s.target, gast.Name) else None
        if not why and len(it.args) == 3 and not (isinstance(it.args[2], gast.Constant)
                                                  and it.args[2].value == 1):
            why = "its step is not 1"
        why = why or self._loop_problem(s)
        if not why and any(isinstance(m, gast.Call) and isinstance(m.func, gast.Name)
                           and m.func.id == "len" for a in it.args for m in _walk(a)):
            why = "it counts over len() of a Python container"
        if not why:
            why = _index_needs_int(s.body, i) or _python_test_of(s.body, i)
            if why:
                why = f"the body needs {i} as a Python int: {why}"
        if not why and i in assigned(s.body):
            why = f"the body assigns {i}"
        if not why and i in later:
            why = f"{i} is read after the loop"
        carries = missing = None
        if not why:
            carries, missing = self._carries(s, [], defined, later, index=(i,))
            if missing:
                why = _first_assigned(missing)
            else:
                why = self._static_carry(carries)
            if not why and all(_is_static(a, self.static) for a in it.args):
                why = self._returned_counter(carries)
        if why:
            self.comment(s, f"secant: a Python for loop; under jit it unrolls because {why}")
            return [s]
        if not carries:
            return [s]
        args = [ast.unparse(gast.gast_to_ast(a)) for a in it.args[:2]]
        lower, upper = ("0", args[0]) if len(args) == 1 else args
        out, bname, init, _ = self._loop_functions(s, carries, "for", i)
        out.append(_parse_stmt(f"{_tuple_src(carries)} = {self.lax}.fori_loop({lower}, {upper}, "
                               f"{bname}, {init})", s))
        self.changed = True
        indexed = _indexed_by(s.body, i) - set(assigned(s.body)) - set(guarded)
        if not indexed:
            return out
        # `ws[i]` takes a traced i only when ws is an array: a list or tuple of arrays (layers'
        # weights) needs i as a Python int, so that loop stays a Python loop (unrolled)
        test = " and ".join(f"isinstance({n}, {self.tracer})" for n in sorted(indexed))
        self.comment(s, f"secant: a Python for loop when {', '.join(sorted(indexed))} is not "
                        "an array (a list or tuple needs the index as a Python int)")
        branch = gast.If(test=_parse_stmt(test, s).value, body=out, orelse=[s])
        return [gast.copy_location(branch, s)]


    def _varargs(self, name):
        """Whether `name` is the function's `*args` tuple (never a traced array), not rebound."""
        vararg = getattr(self.src.node.args, "vararg", None)
        return vararg is not None and vararg.id == name and not any(
            isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
            for n in _walk(self.src.node))

    def _python_list(self, name):
        """Whether every binding of `name` in the function is a list or tuple display or a list
        comprehension (a Python sequence, never a traced array)."""
        stores = [n for n in _walk(self.src.node) if isinstance(n, gast.Name)
                  and n.id == name and isinstance(n.ctx, (gast.Store, gast.Del, gast.Param))]
        displays = [a for a in _walk(self.src.node) if isinstance(a, gast.Assign)
                    and len(a.targets) == 1 and isinstance(a.targets[0], gast.Name)
                    and a.targets[0].id == name
                    and isinstance(a.value, (gast.List, gast.Tuple, gast.ListComp))]
        return bool(stores) and len(stores) == len(displays)

    def rewrite_for_rows(self, s, defined, later):
        """`for row in xs` over a traced array: `for i in range(xs.shape[0]): row = xs[i]`, a
        fori_loop when the body qualifies; a Python loop when xs is not traced (a list...)."""
        xs, row = s.iter.id, s.target.id
        i = self.name(s, f"{row}_index")
        loop = copy.copy(s)
        loop.target = gast.Name(i, gast.Store(), None, None)
        loop.iter = _parse_stmt(f"range({xs}.shape[0])", s).value
        loop.body = [_parse_stmt(f"{row} = {xs}[{i}]", s)] + copy.deepcopy(list(s.body))
        for (key, base), name in list(self.planned.items()):     # the names planned for s
            if key == id(s):
                self.planned[(id(loop), base)] = name
        self._keep.append(loop)
        out = self.rewrite_for(loop, defined, later, guarded=(xs,))
        if out == [loop]:
            return [s]
        test = _parse_stmt(f"isinstance({xs}, {self.tracer})", s).value
        branch = gast.If(test=test, body=out, orelse=[s])
        return [gast.copy_location(branch, s)]


class _HasRows(type):
    def __instancecheck__(cls, x):
        return isinstance(x, Tracer) and len(x.aval.shape) > 0


class TracedRows(metaclass=_HasRows):
    """What the rewritten loops call `Tracer`: a traced array with rows (1-d or more). A 0-d
    one runs the loop as the user wrote it, which raises "iteration over a 0-d array" (or an
    indexing error) at the user's line instead of an IndexError from `x.shape[0]`."""


def _first_assigned(names):
    return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} first assigned inside it"


def _merge_return_tail(stmts):
    """`if c: ...; return a` followed by `...; return b` -> `if c: ... else: ...` (same meaning)."""
    if not stmts or not _ends_with_return(stmts):
        return stmts
    for k, s in enumerate(stmts[:-1]):
        if isinstance(s, gast.If) and not s.orelse and _ends_with_return(s.body) and \
                _count(s.body[:-1], gast.Return) == 0:
            s.orelse = stmts[k + 1:]
            return stmts[:k + 1]
    return stmts


# --- printing -------------------------------------------------------------------------------------
class _Printer:
    def __init__(self, src, comments):
        self.src, self.comments = src, comments
        self.lines, self.origins = [], {}

    def add(self, text, node, indent):
        for k, line in enumerate(text.split("\n")):
            self.lines.append("    " * indent + line)
            if k == 0 and node is not None and getattr(node, "lineno", None) is not None:
                self.origins[len(self.lines)] = self.src.user_position(node)

    def header(self, node, indent):
        node = copy.copy(node)
        node.body, node.decorator_list, node.returns = [gast.Pass()], [], None
        text = ast.unparse(gast.gast_to_ast(node)).split("\n")
        self.add("\n".join(text[:-1]), node, indent)

    def block(self, stmts, indent):
        for s in stmts:
            for c in self.comments.get(id(s), ()):
                self.lines.append("    " * indent + "# " + c)
            self.stmt(s, indent)

    def stmt(self, s, indent, keyword="if"):
        ex = lambda e: ast.unparse(gast.gast_to_ast(e))    # noqa: E731
        if isinstance(s, gast.FunctionDef):
            if indent:      # a nested def's decorators run as written (the function's own not)
                for d in s.decorator_list:
                    self.add(f"@{ex(d)}", d, indent)
            self.header(s, indent)
            self.block(s.body, indent + 1)
        elif isinstance(s, gast.If):
            self.add(f"{keyword} {ex(s.test)}:", s, indent)
            self.block(s.body, indent + 1)
            if len(s.orelse) == 1 and isinstance(s.orelse[0], gast.If) and \
                    id(s.orelse[0]) not in self.comments:
                self.stmt(s.orelse[0], indent, "elif")
            elif s.orelse:
                self.add("else:", None, indent)
                self.block(s.orelse, indent + 1)
        elif isinstance(s, (gast.While, gast.For)):
            head = (f"while {ex(s.test)}:" if isinstance(s, gast.While)
                    else f"for {ex(s.target)} in {ex(s.iter)}:")
            self.add(head, s, indent)
            self.block(s.body, indent + 1)
            if s.orelse:
                self.add("else:", None, indent)
                self.block(s.orelse, indent + 1)
        else:
            self.add(ex(s), s, indent)


# --- the entry point --------------------------------------------------------------------------
_UNROLLED = contextvars.ContextVar("secant_unrolled", default=False)


@contextlib.contextmanager
def unrolled():
    """Within: nothing is functionalised, so Python loops unroll as they do under jax.jit (jit
    traces again so when a staged loop's carry changes shape: `a = a[1:] - a[:-1]` in a
    `for _ in range(n)` loop is a Python loop, not a lax loop)."""
    token = _UNROLLED.set(True)
    try:
        yield
    finally:
        _UNROLLED.reset(token)


def functionalize(fn):
    """`fn` with Python control flow rewritten into secant.lax calls (cached per function), or
    `fn` itself when there is none to rewrite or its source cannot be read."""
    if _UNROLLED.get():
        return fn
    if isinstance(fn, types.MethodType):    # jit(model.apply): the method's function, bound
        return staged_method(fn)
    try:
        hit = _cache.get(fn)
    except TypeError:
        return fn
    if hit is not None and _still_valid(hit):
        return hit
    def build():
        try:
            return depth.guard(fn, lambda: _functionalize(fn))
        except depth.NestingError:
            return fn   # too deep to rewrite: traced as written, as JAX traces it (a Python `if`
                        # on a traced value is then a ConcretizationError naming its line)
    # built once (threads wait for the one building it); a recursive call of fn while it is
    # rewritten stays as it is
    return once.build(_cache, fn, build, recursive=lambda: fn, valid=_still_valid)


def _still_valid(gen):
    """Whether the rewritten `gen` still calls what its source names: each look-up it resolved
    (a helper's global, `ns.clipped`) names the same object, for its helpers too."""
    guard = getattr(gen, "__secant_functionalize_guard__", None)
    if guard is None:
        return True
    return guard[0].holds() and all(_still_valid(h) for h in guard[1])


def unrolling():
    """Whether rewriting is off here (`unrolled()`: jit traces Python loops as written)."""
    return _UNROLLED.get()


def unchanged(fn):
    """Whether jit traces `fn` as written: functionalize has no control flow of it to rewrite
    (False also while rewriting is off, in `unrolled()`: the answer is not known there)."""
    return not _UNROLLED.get() and functionalize(fn) is fn


def _rewritten_helpers(src, node, dry=False):
    """{name: functionalised function} for the user functions `node` (a copy of `src`'s tree)
    calls whose own control flow (or their callees') needs rewriting: jit stages helpers' loops
    too. A callee called by a free name keeps it; one reached otherwise (`ns.clipped(v)`,
    `mod.f(v)`, `getattr(mod, "f")(v)`, a partial, a bound method: whatever
    transformer/callees.py resolves) is called by a name of its own, in the canonical form.
    `dry`: whether there is any, as a non-empty dict at the first one found, `node` (then
    src.node itself, not copied) left as it is."""
    from secant.transformer.callees import UNRESOLVED, canonical_call, resolve
    out = {}
    stored = {m.id for m in _walk(node) if isinstance(m, gast.Name)
              and not isinstance(m.ctx, gast.Load)}
    names = None if dry else Names(_all_names(node) | set(src.closure))
    by_fn, staged_name = {}, None
    for n in _walk(node):
        if not isinstance(n, gast.Call):
            continue
        if isinstance(n.func, gast.Name):
            if n.func.id in out:
                continue
            kind, obj = src.resolve_name(n.func.id)
            if kind in ("global", "closure") and _is_user_function(obj):
                new = functionalize(obj)
                if new is not obj:
                    out[n.func.id] = new
                    if dry:
                        return out
                continue
        if _method_needs_staging(src, n):     # self.helper(v): looked up when it runs
            if dry:
                return {"": staged_method}
            if staged_name is None:
                staged_name = names.fresh("staged_method")
                out[staged_name] = staged_method
            n.func = gast.copy_location(gast.Call(
                func=gast.Name(staged_name, gast.Load(), None, None), args=[n.func],
                keywords=[]), n.func)
            continue
        try:
            canon = canonical_call(src, lambda k: k in stored, n)
        except Exception:       # noqa: BLE001 - a look-up that fails is not a resolution
            continue
        obj = resolve(src, lambda k: k in stored, canon.func)
        if obj is UNRESOLVED or not _is_user_function(obj):
            continue
        new = functionalize(obj)
        if new is obj:
            continue
        if dry:
            return {"": new}
        for look_up in (n.func, canon.func):    # guarded: rebinding ns.clipped rewrites again
            _note(src, look_up, lambda k: k in stored)
        name = by_fn.get(obj)
        if name is None:
            name = by_fn[obj] = names.fresh(obj.__name__ if obj.__name__.isidentifier()
                                            else "fn")
            out[name] = new
        n.func = gast.copy_location(gast.Name(name, gast.Load(), None, None), n.func)
        n.args, n.keywords = canon.args, canon.keywords
    return out


def _note(src, func, local):
    """Records in `src` the attribute chain `func` reads from a free name (`ns.clipped`,
    `getattr(mod, "f")`), so the guard over the rewritten function (parse.Guard) re-reads it."""
    from secant.transformer.callees import UNRESOLVED, resolve
    obj = resolve(src, local, func)
    chain = []
    while True:
        if isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        elif isinstance(func, gast.Call) and len(func.args) == 2 and isinstance(
                func.args[1], gast.Constant) and isinstance(func.args[1].value, str) \
                and resolve(src, local, func.func) is builtins.getattr:
            chain.append(func.args[1].value)
            func = func.args[0]
        else:
            break
    if obj is not UNRESOLVED and chain and isinstance(func, gast.Name) and not local(func.id):
        src.note(func.id, reversed(chain), obj)


def _method_needs_staging(src, call):
    """Whether `call` is `self.name(...)` in a method (self its first parameter) or
    `Cls(...).name(...)`, whose class's own `name` is a method with control flow to rewrite: the
    method called is known only when the call runs (a subclass may override it), so
    staged_method looks it up then."""
    func = call.func
    if not isinstance(func, gast.Attribute):
        return False
    owner = _receiver_class(src, func.value)
    if not isinstance(owner, type):
        return False
    member = inspect.getattr_static(owner, func.attr, None)
    return _is_user_function(member) and functionalize(member) is not member


def _receiver_class(src, receiver):
    """The class whose instance `receiver` is when that is plain from the code: a method's first
    parameter (its class by the method's qualified name), or `Cls(...)`."""
    from secant.transformer.callees import resolve
    if isinstance(receiver, gast.Call):
        return resolve(src, lambda k: False, receiver.func) if isinstance(
            receiver.func, (gast.Name, gast.Attribute)) else None
    params = src.node.args.posonlyargs + src.node.args.args
    fn = src.fn
    if not (isinstance(receiver, gast.Name) and params and receiver.id == params[0].id
            and isinstance(fn, types.FunctionType)):
        return None
    owner_name = fn.__qualname__.rpartition(".")[0]
    if not owner_name or "<" in owner_name:
        return None
    owner = fn.__globals__.get(owner_name.split(".")[0])
    for part in owner_name.split(".")[1:]:
        owner = getattr(owner, part, None)
    return owner


def staged_method(bound):
    """`self.helper` as jit traces it: a method with its control flow rewritten into secant.lax
    calls (transformer/functionalize.py), bound to the same object; anything else as it is."""
    if isinstance(bound, types.MethodType) and _is_user_function(bound.__func__):
        new = functionalize(bound.__func__)
        if new is not bound.__func__:
            return types.MethodType(new, bound.__self__)
    return bound


# standard-library modules whose functions work on strings and Python objects, never on the
# arrays jit stages: run as they are (re.search(r"bias", keystr(path)) in a jitted update
# functionalised re's parser, a 5 CPU s desugaring of its loop exits on the first trace)
_OPAQUE_MODULES = ("secant", "numpy", "re", "sre_compile", "sre_parse", "string", "textwrap",
                   "enum", "typing", "json", "logging")


def _is_user_function(obj):
    return isinstance(obj, types.FunctionType) and obj is not dataclasses.replace and \
        (obj.__module__ or "").split(".")[0] not in _OPAQUE_MODULES   # (replace: the
                                                            # normaliser's replace_call reads it)


def _functionalize(fn):
    if getattr(fn, "__secant_functionalized__", False):
        return fn
    if getattr(fn, "__secant_staged__", None) is not None:
        return fn                       # grad & co. switch to their staged form themselves
    if not isinstance(fn, types.FunctionType):
        return fn
    if straight_line.plain(fn):     # nothing to rewrite, as its bytecode shows (no source read)
        return fn
    from secant.transformer.desugar import desugar
    fn = desugar(fn, only_choices=True)     # `a if c else b` -> an if, which can be staged
    try:
        src = function_source(fn)
    except (SourceError, OSError, TypeError, SyntaxError):
        return fn
    if _contains(src.node.body, (gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom,
                                 gast.Await)):
        return fn
    if _python_loops_only(src.node.body) and not _rewritten_helpers(src, src.node, dry=True):
        return fn       # (as written: no copy of its tree made, issue 19: jit's first call of
        #                 a derivative asks it of the derivative)
    node = copy_tree(src.node)      # (copy.deepcopy, at a fraction of its cost)
    helpers = _rewritten_helpers(src, node)
    if not helpers and _python_loops_only(src.node.body):
        return fn
    try:
        gen = _rewrite(fn, src, node, helpers)
        if gen is not fn:   # valid while what it resolved names the same (and its helpers')
            gen.__secant_functionalize_guard__ = (src.guards(), tuple(helpers.values()))
        return gen
    except SecantError:
        raise
    except Exception as e:      # a bug here must not break code that ran before: trace fn as is
        warnings.warn(f"secant could not functionalise {fn.__qualname__} ({type(e).__name__}: "
                      f"{e}); its Python control flow is traced as written", RuntimeWarning)
        return fn


def _python_loops_only(body):
    """Whether _rewrite would leave a function of these statements as it is, read from its
    loops' heads alone (no analysis of the whole function): no if or while outside nested
    scopes, and each for loop at the top level, with no if, while or for in its body, over
    neither `range(...)` nor a name (a loop over an array's rows) unless its index is no plain
    name or is read after the loop (which keeps it a Python loop, _Rewriter.rewrite_for). A
    derivative's forward and reverse passes over a loop on a list (`for i in i_range:` ...
    `for i in reversed(i_range):`) are such loops: jit reuses such a derivative made eagerly
    after this check (transforms._same_staged), not the whole rewrite (issue 19)."""
    if _contains(body, (gast.If, gast.While)):
        return False
    for k, s in enumerate(body):
        if not isinstance(s, gast.For):
            continue
        if _contains(s.body, gast.For):
            return False
        it = s.iter
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
                it.func.id == "range":
            return False
        if isinstance(it, gast.Name) and isinstance(s.target, gast.Name) and \
                s.target.id not in reads(body[k + 1:]):
            return False
    return True


def _all_names(node):
    out = set()
    for m in _walk(node):
        if isinstance(m, gast.Name):
            out.add(m.id)
        elif isinstance(m, (gast.FunctionDef, gast.ClassDef)):
            out.add(m.name)
    return out


def _rewrite(fn, src, node, helpers):
    from secant import lax
    taken = _all_names(node) | set(src.closure)
    names = Names(taken)
    local = set(assigned(node.body)) | {a.id for a in _walk(node.args)
                                        if isinstance(a, gast.Name)}
    _, value = src.resolve_name("lax")
    lax_name = "lax" if value is lax and "lax" not in local else names.fresh("lax")
    undef_name = names.fresh("undefined_in_branch")
    unset_name = names.fresh("unset_in_branch")
    range_ok = "range" not in local and src.resolve_name("range")[1] is builtins.range
    rw = _Rewriter(src, names, lax_name, undef_name, range_ok)
    rw.tracer = tracer_name = names.fresh("Tracer")
    rw.unset = unset_name
    rw.root = list(node.body)
    rw.static = _static_names(node)
    stores = {}
    for n in _walk(node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    rw.once = frozenset(k for k, c in stores.items() if c == 1)
    rw.closure_reads = frozenset(k for n in _walk(node) if isinstance(n, _SCOPES) and n is not node
                                 for k in _free_names(n))
    rw.resized = _resized_containers(node)
    params = set(m.id for m in _walk(node.args) if isinstance(m, gast.Name))
    rw.definite = frozenset(params)
    node.body = rw.block(node.body, params, set())
    if not rw.changed and not rw.comments and not helpers:
        return fn
    for a in _walk(node.args):      # annotations may name things the generated module lacks
        if isinstance(a, gast.Name):
            a.annotation = None
    printer = _Printer(src, rw.comments)
    printer.stmt(node, 0)
    source = "\n".join(printer.lines) + "\n"
    used = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    free = {k: v for k, v in {**src.closure, **helpers}.items() if k in used}
    if lax_name in used:
        free[lax_name] = lax
    if undef_name in used:
        free[undef_name] = undefined_in_branch
    if unset_name in used:
        free[unset_name] = unset_in_branch
    if tracer_name in used:
        free[tracer_name] = TracedRows
    cells = {k: c for k, c in src.cells.items() if k in free and free[k] is src.closure.get(k)}
    gen = loader.load(source, node.name, src.globals, free, printer.origins, cells=cells)
    gen.__defaults__ = fn.__defaults__
    gen.__kwdefaults__ = fn.__kwdefaults__
    gen.__qualname__ = fn.__qualname__
    gen.__doc__ = fn.__doc__
    gen.__module__ = fn.__module__
    operators.carry_objects(fn, gen)
    tree = gast_parse.parse(source).body[0]
    for d in _walk(tree):   # a loop function's carry: a tuple built here, its length known
        if isinstance(d, gast.FunctionDef) and d.name in rw.carry_functions:
            d.secant_carry = rw.carry_functions[d.name]     # (read by normalize.assign_tuple)
    gen.__secant_source__ = FunctionSource(gen, tree,
                                           gen.__code__.co_filename, 1, source.splitlines(),
                                           src.globals, free, generated=src.generated)
    gen.__secant_functionalized__ = True
    gen.__secant_rewritten_from__ = fn      # (a function traced instead: the user's own)
    return gen


def functionalized_source(fn):
    """The rewritten source jit traces for `fn` (its own source when nothing is rewritten)."""
    import inspect
    make = getattr(fn, "__secant_staged__", None)
    return inspect.getsource(make() if make is not None else functionalize(fn))


staged_method.__secant_dispatcher__ = True  # staged_method(self.helper)(x): a callee known at
                                            # run time (transformer/normalize.py dynamic_call)
