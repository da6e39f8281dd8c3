"""Normalisation to the canonical form (transformer/ir.py).

Walks a function's gast tree once, in order, and:
- splits every expression that involves a tracked array (one that depends on the differentiated
  inputs) into one op per statement (A-normal form), naming temporaries after their expression
  and keeping the user's own names for the values they name;
- renames re-assigned variables (`x`, `x_1`, ...) so every value keeps its own name (SSA): the
  reverse pass can read any earlier value, no tape needed;
- resolves callees by identity (numpy's, secant.numpy's and math's functions, builtins, array
  methods, other user functions) to ops of transformer/ops.py;
- keeps everything else (shapes, constants, comparisons, non-differentiable calls) as written.
Activity analysis is part of the walk: a value is tracked only if it depends on a
differentiated input through differentiable ops.

For vmap (mode "vmap") "tracked" means *batched*, which flows through every op: comparisons,
argmax, integer ops and indices computed from batched values are ops too, helpers marked
constant are read as source, and shape queries on a batched value (`x.shape`, `np.ndim(x)`,
`len(x)`) are written per example (`x.shape[1:]`), so code that branches on shapes keeps its
meaning with the batch axis in front.
"""
import ast
import bisect
import builtins
import collections
import copy
import dataclasses
import functools
import inspect
import itertools
import operator
import re
import types
import weakref

import gast
import numpy as np

from secant.codegen.naming import Names, suggest
from secant.transformer import callees, closure_factories, dataflow, defaults, hygiene, ir
from secant.transformer import loop_lowering, nonlocals, walker
from secant.transformer import objects, operators, properties, stack_loops, user_objects
from secant.transformer.index_calls import index_call
from secant.transformer import in_place_calls
from secant.transformer.containers import (ContainerMixin, _name, _set_location, hoist_choices,
                                           is_growth, item_hint)
from secant.transformer.ops import (TREE_OPS, SPLIT_OPS, DICT_HELPER_OPS, AT_METHODS, BINOPS,
                                    BIT_OPERATORS, SHIFT_OPERATORS, COLLECTIVES,
                                    COMPARE_OPERATORS, CONTROL_FLOW, KEYWORD_ALIASES, METHODS, OPS,
                                    NUMPY_POSITIONAL,
                                    STATIC_ATTRIBUTES, control_flow_for, lax_spelling,
                                    op_for)
from secant.transformer.parse import (ArgumentSourceError, ArrayConversionSourceError,
                                      BoolConversionSourceError,
                                      BooleanIndexSourceError, ConcretizationSourceError,
                                      FunctionSource, SourceError,
                                      IntegerConversionSourceError, conversion_error,
                                      function_source, lambda_function_node)
from secant.backends.errors import SecantError
from secant.transformer.runnable import runnable
from secant.transformer.hygiene import copy_tree, walk

_UNSUPPORTED = {
    gast.Try: "try/except", gast.With: "with", gast.AsyncWith: "async with",
    gast.AsyncFor: "async for", gast.AsyncFunctionDef: "async def", gast.ClassDef: "class",
    gast.Global: "global", gast.Nonlocal: "nonlocal", gast.Delete: "del", gast.Raise: "raise",
    gast.Break: "break (the control-flow issue adds it)",
    gast.Continue: "continue (the control-flow issue adds it)",
}


# secant.random functions whose results are integers (keys, draws of an index or a bool): no
# derivative in any argument
_INTEGER_RANDOM = frozenset({"split", "fold_in", "bits", "randint", "bernoulli", "categorical",
                             "PRNGKey", "key", "key_data", "wrap_key_data", "threefry_2x32",
                             "poisson", "geometric", "rademacher", "clone",
                             # counts in a float dtype: JAX's derivative in n and p is 0
                             "binomial", "multinomial"})
# samplers that draw indices and return the entries of their argument there (its parameter's
# name): differentiable in that argument alone (secant/random_bounds.py), constant without it
_DRAWS_OF_ENTRIES = {"choice": "a", "permutation": "x"}


def _unparse(node):
    """Source text of a gast node, by the standard library's unparser (gast.unparse imports
    gast's own copy of it, a module whose import, compiled from source where no bytecode is
    cached, was a tenth of a first grad's transform: issue 19). A name is its id."""
    if type(node) is gast.Name:
        return node.id
    return ast.unparse(gast.gast_to_ast(node))


def _names_in(node):
    return {n.id if isinstance(n, gast.Name) else n.name for n in walk(node)
            if isinstance(n, (gast.Name, gast.FunctionDef))}


_GETTERS = weakref.WeakKeyDictionary()     # code -> _getter_return's answer
_NOT_READ = object()


def _getter_return(fn):
    """(fn's parameters, the expression its one statement returns: read only, a caller copies
    it) for a function of positional parameters without defaults whose body (a docstring
    aside) is one `return E`; None for any other function; _NOT_READ where its source cannot
    be read. (Asked for each call of a function of names in an expression kept as written,
    once per function's code: each read copied the callee's whole tree, issue 19.)"""
    from secant.transformer.parse import function_source
    try:
        node = function_source(fn).node
    except Exception:       # noqa: BLE001 (no source: not one)
        return _NOT_READ
    if not isinstance(node, gast.FunctionDef):
        return None
    body = [s for s in node.body if not (isinstance(s, gast.Expr) and isinstance(
        s.value, gast.Constant))]
    args = node.args
    if len(body) != 1 or not isinstance(body[0], gast.Return) or body[0].value is None \
            or args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        return None
    return tuple(p.id for p in args.posonlyargs + args.args), body[0].value


def _census(fdef):
    """What the Normaliser reads of the whole function before it starts, in one walk (issue
    19: each was a walk of its own): (_names_in(fdef), the nodes _list_like_params reads, the
    first yield or await (ast.walk's order) or None, the names of the lists appended to,
    hygiene._names(fdef, bound_too=True): what hygiene.apart reads)."""
    names, listed, grown, yields = set(), [], set(), None
    used, bound = set(), set()      # (hygiene._names': classes and imports too)
    name_t, def_t = gast.Name, gast.FunctionDef
    listing = (gast.Assign, gast.For, gast.comprehension, gast.Subscript)
    yielding = (gast.Yield, gast.YieldFrom, gast.Await)
    binding = (gast.Store, gast.Param, gast.Del)
    for n in walk(fdef):
        if isinstance(n, name_t):
            names.add(n.id)
            if isinstance(n.ctx, binding):
                bound.add(n.id)
        elif isinstance(n, def_t):
            names.add(n.name)
            if n is not fdef:
                bound.add(n.name)
        elif isinstance(n, gast.ClassDef):
            used.add(n.name)
            bound.add(n.name)
        elif isinstance(n, gast.alias):
            alias = (n.asname or n.name).split(".")[0]
            used.add(alias)
            bound.add(alias)
        if isinstance(n, listing):
            listed.append(n)
        elif yields is None and isinstance(n, yielding):
            yields = n
        elif is_growth(n):
            grown.add(n.func.value.id)
    return names, listed, yields, grown, (used | names, bound)


def _names_and_bound(fdef):
    """(_names_in(fdef), hygiene.bound(fdef), the names a global or nonlocal statement in it
    declares) in one walk (issue 19: transformation time)."""
    names, bound, declared = set(), set(), set()
    binding = (gast.Store, gast.Param, gast.Del)
    for n in walk(fdef):
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            declared.update(n.names)
        elif isinstance(n, gast.Name):
            names.add(n.id)
            if isinstance(n.ctx, binding):
                bound.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)):
            if isinstance(n, gast.FunctionDef):
                names.add(n.name)
            if n is not fdef:
                bound.add(n.name)
        elif isinstance(n, gast.alias):
            bound.add((n.asname or n.name).split(".")[0])
    return names, bound, declared


def _free_names_in(node):
    """_names_in(node) less the names a lambda in it binds as its own parameters, where only
    that lambda reads them (`solve.defvjp(lambda a: ..., ...)` reads no enclosing a)."""
    if isinstance(node, gast.Lambda):
        own = {a.id for a in walk(node.args) if isinstance(a, gast.Name)}
        return (_free_names_in(node.body) - own) | {
            n for d in node.args.defaults + [k for k in node.args.kw_defaults if k]
            for n in _free_names_in(d)}
    if isinstance(node, gast.Name):
        return {node.id}
    if isinstance(node, gast.FunctionDef):
        return _names_in(node)
    return set().union(*(_free_names_in(c) for c in gast.iter_child_nodes(node)))


def _sum_start(node, src):
    """The `start` of a call sum(items, start) (or start=...), None when there is none."""
    starts = node.args[1:] + [k.value for k in node.keywords if k.arg == "start"]
    if len(node.args) > 2 or len(starts) > 1 or any(k.arg != "start" for k in node.keywords):
        raise _bad_call(src.error(node, "bad arguments for sum(): sum(items) or "
                                  "sum(items, start)"))
    return starts[0] if starts else None


def _sum_chain(node, items, start):
    """sum([a, b], s) as Python adds it: (s + a) + b."""
    total = start
    for item in items.elts:
        total = gast.BinOp(left=total, op=gast.Add(), right=item)
        gast.copy_location(total, node)
        total.end_lineno, total.end_col_offset = node.end_lineno, node.end_col_offset
    return total


# len, and the helper a derivative's loop over a parameter counts its items with (ad/helpers.py
# count_items: len checked for a user object): read alike
_LEN = ("len", "count_items")


def _value_names(node):
    """Names whose values `node` reads, leaving out those only queried for static facts
    (`x.shape[0]`, `x.ndim`, `len(x)`)."""
    static = set()
    for n in walk(node):
        if isinstance(n, gast.Attribute) and n.attr in STATIC_ATTRIBUTES:
            static.add(id(n.value))
        elif isinstance(n, gast.Call) and getattr(n.func, "id", None) in _LEN and n.args:
            static.add(id(n.args[0]))
    for n in reversed(list(walk(node))):   # [c.ndim for c in xs]: xs only queried
        if isinstance(n, (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp)):
            static |= _queried_iterables(n, static)
    return {n.id for n in walk(node) if isinstance(n, gast.Name) and id(n) not in static
            and not isinstance(n.ctx, gast.Store)}     # (a comprehension's target: written)


def _queried_iterables(comp, static):
    """The ids of the names a comprehension iterates (`xs` of `[c.ndim for c in xs]`, of
    `[a, b]`) whose items it reads only for static facts: its length
    and those facts are all it reads of them."""
    parts = [comp.key, comp.value] if isinstance(comp, gast.DictComp) else [comp.elt]
    parts += [c for g in comp.generators for c in g.ifs]
    read = {n.id for p in parts for n in walk(p)
            if isinstance(n, gast.Name) and id(n) not in static}
    out = set()
    for g in comp.generators:
        targets = {n.id for n in walk(g.target) if isinstance(n, gast.Name)}
        it = g.iter
        items = it.elts if isinstance(it, (gast.List, gast.Tuple)) else [it]
        items = [_item_name(i) for i in items]
        if targets & read or None in items:
            return set()
        out |= {id(i) for i in items}
    return out


def _item_name(node):
    """The name an item of a queried iterable is drawn from without reading values: `x`, or
    `w` of `w["hh"]`, `w[0][1]` (constant keys: the item's static facts are the name's);
    else None."""
    while isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant):
        node = node.value
    return node if isinstance(node, gast.Name) else None


def _def_locals(fdef):
    """Names local to a nested def: its parameters and what its body assigns or defines."""
    out = {n.id for n in walk(fdef.args) if isinstance(n, gast.Name)}
    for n in walk(fdef):
        if n is not fdef and isinstance(n, gast.FunctionDef):
            out.add(n.name)
        elif isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            out.add(n.id)
    return out


# ops whose start indices vmap reads per example (batching/vectorize.py: a gather, a scatter)
_PER_EXAMPLE_STARTS = ("dynamic_slice", "dynamic_update_slice")



# the names of a dynamic call's dispatcher's own parameters (dynamic_call(fn, x1, ..., *, k),
# its derivatives' out_bar and tangents, secant/transforms.py): a keyword argument named so
# is passed in **{...} instead
_DISPATCH_NAMES = re.compile(r"fn|out_bar|dispatch|spelled|batch_dispatch|rest|kw|[xt]\d+|"
                             r".*_dot")


class _Tracked(set):
    """A Normaliser's `tracked` (the versions holding differentiated or batched values), which
    notes the look-ups of the names a loop's pass watches (_loop): a loop name found tracked
    after a pass no look-up asked about needs no pass more (the body would come out the same),
    where a pass per loop more made a loop's body cost two passes (issue 19)."""

    def __init__(self, items=(), watches=None):
        super().__init__(items)
        self.watches = [] if watches is None else watches    # [(watched, asked)], shared

    def __contains__(self, name):
        for watched, asked in self.watches:
            if name in watched:
                asked.add(name)
        return set.__contains__(self, name)


class _Versions(dict):
    """A Normaliser's `current` (user name -> its current version), which also keeps every
    version it was ever given (a superset of its values): `holds` then asks whether a name is
    one of its values by a set look-up first, not a scan of them all (once per statement:
    quadratic in a long function, issue 19)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ever = set(self.values())

    def __setitem__(self, key, value):
        self.ever.add(value)
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        self.ever.add(default)
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self.ever.update(self.values())

    def __ior__(self, other):
        self.update(other)
        return self

    def holds(self, version):
        """`version in self.values()`."""
        return version in self.ever and version in self.values()


def _is_logging(fn):
    """Whether `fn` is a function or bound method of the standard logging module (logging.info,
    a module-level logger's .info/.debug/.warning): called for its effect, as written."""
    fn = getattr(fn, "__func__", fn)
    return callable(fn) and getattr(fn, "__module__", None) == "logging"


class Normaliser(ContainerMixin):
    @property
    def current(self):
        return self._current

    @current.setter
    def current(self, value):       # (each dict it is given: a _Versions of its own)
        self._current = value if type(value) is _Versions else _Versions(value)

    @property
    def tracked(self):
        return self._tracked

    @tracked.setter
    def tracked(self, value):       # (each set it is given: a _Tracked sharing the watches)
        watches = self.__dict__.setdefault("_watches", [])
        self._tracked = value if type(value) is _Tracked and value.watches is watches else \
            _Tracked(value, watches)

    def __init__(self, fn, active_params, mode="grad", opaque=(), reserved=None,
                 outputs_of=None, computed=frozenset()):
        self.batching = mode == "vmap"
        self.opaque = opaque        # vmap: helpers with a batching rule of their own
        # (callee, positions, n) -> which of the n outputs of the callee's generated form (the
        # batched one the vectorizer calls; the derivative ad/ calls) are batched
        # (differentiated), or None where that is not known
        self.outputs_of = outputs_of
        self.what = "batched" if self.batching else "differentiated"
        # user names that clash with names generated code uses for itself: renamed apart
        src = function_source(fn)
        census = _census(src.node)      # (one walk for apart's names and the Normaliser's)
        self.src, self.renamed = hygiene.apart(src, reserved, census[4])
        self.reserved = reserved
        self.node = self.src.node
        self.params = [a.id for a in self.node.args.posonlyargs + self.node.args.args]
        if self.node is not src.node:   # (renamed apart: a tree of its own)
            census = _census(self.node)
        names, listed, self._yields, self._grown, _ = census
        self.list_params = _list_like_params(self.node, self.params + [  # (a jvp's tangents:
            a.id for a in self.node.args.kwonlyargs], listed)            # keyword-only)
        self.names = Names(names.union(self.params, vars(builtins).keys(), reserved or ()))
        self.current = {p: p for p in self.params + [a.id for a in self.node.args.kwonlyargs]}
        if self.node.args.vararg or self.node.args.kwarg:
            raise self.src.error(self.node, "functions with *args or **kwargs cannot be "
                                 "transformed yet; name the parameters")
        # (positions past the positional parameters are keyword-only ones: vmap batches them)
        every = self.params + [a.id for a in self.node.args.kwonlyargs]
        self.tracked = {every[i] for i in active_params}
        self.pushed_stacks = set()  # a derivative's loop stacks its forward loop pushed onto
        self.unpacked_from_calls = set()    # items of what calls returned (_unpacked_from_call)
        self.dynamic_results = set()        # what calls of functions known at run time return
        self.queried = set()        # names whose shape queries are written per example (vmap)
        self.fields = []            # ops reading attributes of tracked values or their items
        self.rows_ops = []          # ops reading rows by index_examples (_rows_read)
        # values that may be user objects with operators (transformer/operators.py): the
        # parameters a call passed them in, and the ops that build or return them
        # (and the parameters passed a list or tuple of such objects: their items are)
        self.object_lists = {self.renamed.get(p, p) for p in getattr(
            fn, "__secant_object_lists__", ())}
        self.objects = {self.renamed.get(p, p) for p in getattr(fn, "__secant_objects__", ())
                        } - self.object_lists
        self.object_ops = []
        self.operator_built = []        # (of those, the ops of `Vec(a)` and of operators)
        # (vmap: a list of layers as often as an array, index_examples asks when it runs)
        self.plain_attributes = set()   # m.p read as a field (transformer/properties.py)
        self.reached = set()            # (of those, the user's own reads: Reach re-checks them)
        self.reach = None               # the user classes the function reaches, once asked
        self.plain_queries = set()      # x.shape / x.ndim of batched x written as array queries
        self.computed = computed        # ... that a caller says may be computed (computes_query)
        # a version an `if` defines in one branch only: the (test, branch) it exists under
        self.guards = {}
        self.unbound = set()        # loop names given a placeholder before the loop (_loop)
        self.local_defs = {}        # nested def name -> (its node, the versions it closes over)
        self.made_defs = set()      # versions bound by a decorated nested def (@custom_vjp)
        self.held = {}              # m = C(a): user name -> (version, C's source), the object
                                    # read as its dict of fields (transformer/user_objects.py)
        self.trees = set()          # versions that may be pytrees (a lowered loop's carries)
        self.lowered = False        # a derivative's lax loop read as a scan (loop_lowering.py)
        self.while_conds = {}       # vmap of a derivative: while body source -> its cond node
        self.containers = {}        # names holding tracked containers -> kind (containers.py)
        self.item_kinds = {}        # containers whose items are containers too -> their kind
        self.field_kinds = {}       # a tuple or list mixing containers and values -> {i: kind}
        self.read_as_dict = set()   # values known as dicts only by a read (d.keys()): a branch
        #                             that tests isinstance(d, dict) may hold an array instead
        self.retired = set()        # a comprehension's variables: a later `v` is a new version
        self.list_names = set()     # names bound to untracked lists (`out = []`)
        self.dict_names = set()     # names bound to untracked dicts (`defaults = {...}`)
        self.bindings = {}          # name -> a callee's runnable form generated code calls
        self.temporaries = set()    # names of an op's result given no user name (x_times_i)
        self.versions = {}          # a user variable's version (y_1) -> the user's name (y)
        self.once = set()           # names _evaluated_once bound a user's call to (get_out)
        self.origin = None
        self.out = None

    # --- entry --------------------------------------------------------------------------------
    def run(self):
        if self._yields is not None:    # (found by __init__'s walk, _census)
            raise self.src.error(self._yields, "generators and coroutines cannot be "
                                 "transformed: return a value instead of yielding it")
        grown = self._grown     # (the lists appended to)
        fn = ir.Function(self.node.name, _unparse(self.node.args), self.params)
        self.out = fn.body
        self.rewrite_appends(grown)     # out.append(v) -> out = out + [v]
        body = self.node.body
        for i, stmt in enumerate(body):
            self._origin(stmt)
            if isinstance(stmt, gast.Return):
                if i != len(body) - 1:
                    raise self.src.error(stmt, "a return before the end of the function cannot "
                                         "be transformed yet; return once, at the end")
                self.check_bound_reads(stmt)
                value = self.operand(stmt.value) if stmt.value is not None else ir.Expr("None")
                if isinstance(value, ir.Seq) and value.kind == "dict" and _has_var(value) \
                        and not self.batching:      # a dict's cotangent is a dict
                    value = self.pack(value, "out")
                fn.result = ir.Return(value, self.origin)
            else:
                self.statement(stmt)
        if fn.result is None:
            fn.result = ir.Return(ir.Expr("None"), self.origin)
        return fn

    def _raise_when_run(self, error, hint="concretization_error"):
        """A statement that raises `error` (found at transform time) when it runs."""
        name = self.names.fresh(hint)
        self.src.imports[name] = self.bindings[name] = _Raiser(error)
        return ir.Plain(f"{name}()", set(), self.origin, effect=True)

    def _origin(self, node):
        filename, line = self.src.user_position(node)
        self.origin = ir.Origin(line, self.src.line_text(node), filename)

    # --- statements -----------------------------------------------------------------------------
    def statement(self, stmt):
        self._origin(stmt)
        self.check_bound_reads(stmt)
        if isinstance(stmt, gast.Assign):
            if len(stmt.targets) != 1:
                raise self.src.error(stmt, "chained assignment (a = b = ...) is not supported; "
                                     "assign once per line")
            if not self.lower_loop_helper(stmt):
                self.assign(stmt.targets[0], stmt.value, stmt)
        elif isinstance(stmt, gast.AugAssign):
            if not isinstance(stmt.target, gast.Name) and not self._held_field(stmt.target) \
                    and not self._python_attribute_update(stmt):
                raise self._mutation_error(stmt)
            read = copy.deepcopy(stmt.target)
            for n in walk(read):
                if hasattr(n, "ctx"):
                    n.ctx = gast.Load()
            value = gast.BinOp(left=read, op=stmt.op, right=stmt.value)
            gast.copy_location(value, stmt)
            value.in_place = True       # (v += w of a user object: v.__iadd__(w) first)
            self.assign(stmt.target, value, stmt)
        elif isinstance(stmt, gast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, stmt.value, stmt)
        elif isinstance(stmt, gast.Expr):
            if isinstance(stmt.value, gast.Constant):
                return          # a docstring or a bare constant
            self._check_not_in_place(stmt.value)
            built = self._plain_setattr(stmt)
            if built is not None:       # object.__setattr__(m, "w", v): a new object
                return self.bind_name(stmt.value.args[0].id, self.operand(built))
            if self._derivative_stack(stmt.value, "append"):
                return self.stack_push(stmt.value)
            printing = isinstance(stmt.value, gast.Call) and (
                self._resolve(stmt.value.func) is builtins.print
                or getattr(self._resolve(stmt.value.func), "__secant_print__", False))
            if isinstance(stmt.value, gast.Call) and _is_logging(self._resolve(stmt.value.func)):
                # log.info("x=%s", x): logs the values as they are (JAX logs its tracer)
                self.out.append(ir.Plain(self._source(stmt.value), set(), self.origin,
                                         effect=True))
                return
            checking = not self.batching and isinstance(stmt.value, gast.Call) and getattr(
                self._resolve(stmt.value.func), "__secant_check__", False)
            if not (printing or checking):      # print(x) prints the primal values; a
                self._check_no_side_effect_on_tracked(stmt)     # derivative's grad_seed(out)
                if not self.batching and not self.src.generated:
                    self._check_no_effect_before_callees(stmt)
            if (self.batching or self._called_for_effect(stmt.value)) and not printing \
                    and isinstance(stmt.value, gast.Call) and any(
                    self.current.get(n) in self.tracked for n in _free_names_in(stmt.value)):
                # a call kept for what it checks (a derivative's grad_seed(out): one scalar
                # per example) or does: vmap calls its batched form, kept though unread
                out = self.operand(stmt.value)
                last = self.out[-1] if self.out else None
                if isinstance(out, ir.Var) and isinstance(last, ir.Op) and \
                        out.name in last.targets:
                    last.effect = True
                    return
                self.out.append(ir.Plain(self._source(stmt.value), set(), self.origin))
                return
            code = self._source(stmt.value)
            if printing and self.batching:
                code = self._per_example(stmt.value, code)
            # a call for its effect (print, log.append(...), counter.bump()): run once per call;
            # a check (check_bound, grad_seed) raises where the user's code would: kept in replays
            # and so is a call on an object the function itself makes, which a replay makes
            # again (h.defvjp(h_fwd, h_bwd) of a nested @custom_vjp def h)
            root = stmt.value.func if isinstance(stmt.value, gast.Call) else None
            while isinstance(root, gast.Attribute):
                root = root.value
            own = isinstance(root, gast.Name) and root is not stmt.value.func \
                and (root.id in self.local_defs or self.current.get(root.id) in self.made_defs)
            self.out.append(ir.Plain(code, set(), self.origin,
                                     effect=isinstance(stmt.value, gast.Call) and not checking
                                     and not own))
        elif isinstance(stmt, (gast.Assert, gast.Raise)):     # a check, kept as written
            if isinstance(stmt, gast.Assert) and self.batching:
                self._batched_truth_value(stmt.test, "assert")
            self.out.append(ir.Plain(self._source(stmt), set(), self.origin))
        elif isinstance(stmt, gast.Pass):
            return
        elif isinstance(stmt, gast.If):
            self.if_statement(stmt)
        elif isinstance(stmt, gast.For):
            self.for_statement(self.reversed_stack_loop(stmt))
        elif isinstance(stmt, gast.While):
            self.while_statement(stmt)
        elif isinstance(stmt, gast.FunctionDef):
            self.local_def(stmt)
        elif isinstance(stmt, (gast.Import, gast.ImportFrom)):
            self.import_statement(stmt)
        elif isinstance(stmt, gast.Return):
            raise self.src.error(stmt, "a return inside a branch cannot be transformed yet; "
                                 "assign the result and return once, at the end")
        else:
            what = next((v for k, v in _UNSUPPORTED.items() if isinstance(stmt, k)),
                        type(stmt).__name__)
            raise self.src.error(stmt, f"secant cannot transform {what}")

    def check_bound_reads(self, stmt):
        """Python raises UnboundLocalError at any read of a variable no iteration of a loop
        assigned (its placeholder, _loop): `check_bound(y_1)` before each statement that reads
        it (for an if, a while or a for: before its test or iterable), whatever it does with
        the value (returns it, puts it in a container, copies it)."""
        if not self.unbound:
            return
        own = {gast.If: "test", gast.While: "test", gast.For: "iter"}.get(type(stmt))
        if isinstance(stmt, gast.FunctionDef):
            return      # a closure reads the variable when called
        node = getattr(stmt, own) if own else stmt
        reads = sorted({self.current[n.id] for n in walk(node)
                        if isinstance(n, gast.Name) and self.current.get(n.id) in self.unbound
                        and (isinstance(n.ctx, gast.Load) or n is getattr(stmt, "target", None)
                             and isinstance(stmt, gast.AugAssign))})     # (y += 1 reads y)
        if reads:
            self.out.append(ir.Plain(f"check_bound({', '.join(reads)})", set(), self.origin))

    def lower_loop_helper(self, stmt):
        """A derivative's lax loop differentiated again: `x = fori_loop_vjp(...)` and the other
        loop helpers read as the lax.scan they run (transformer/loop_lowering.py)."""
        call = stmt.value
        if self.batching or not self.src.generated or not isinstance(call, gast.Call):
            return False
        obj = self._resolve(call.func) if isinstance(call.func, gast.Name) else _UNRESOLVED
        name = getattr(obj, "__name__", "")
        if _loop_helper_kind(obj) is None or name not in loop_lowering.HELPERS:
            return False
        lowered = loop_lowering.lower(stmt, name, self.names.fresh)
        if lowered is None:
            return False
        lowered, trees = lowered
        for k, v in loop_lowering.names().items():
            self.src.closure.setdefault(k, v)
        read = {self.current[n] for n in trees if n in self.current}
        for s in lowered:
            self.statement(s)
        # carries, cotangents: pytrees (added leaf by leaf)
        self.trees |= read | {self.current[n] for n in trees if n in self.current}
        self.lowered = True
        return True

    def import_statement(self, stmt):
        """`import numpy as np` / `from math import pi` inside the function, kept as written:
        run once now (an import names the same module every time) so that its names resolve
        like globals (`np.sin(x)` is an op), unless the function also assigns them."""
        code = _unparse(stmt).strip()
        scope, names = {}, {a.asname or a.name.split(".")[0] for a in stmt.names}
        module = self.src.globals
        try:
            exec(code, {"__name__": module.get("__name__"), "__package__":
                        module.get("__package__"), "__builtins__": builtins}, scope)
        except ImportError as e:
            raise self.src.error(stmt, f"{type(e).__name__}: {e}") from None
        assigned = {n.id for n in walk(self.src.node)
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        self.src.imports.update({n: scope[n] for n in names - assigned})
        self.out.append(ir.Plain(code, names, self.origin))

    def _derivative_stack(self, node, method):
        """A transform of a derivative (generated code): `x_stack.append(x)` (method "append")
        or `x_stack.pop()` ("pop"), how its forward loop saves what its reverse loop replays;
        each transform carries its own values through the stack (ir.Plain.stack)."""
        return self.src.generated and _is_stack_call(node, method)

    def stack_push(self, call):
        """`x_stack.append(x)` kept as written; a batched x makes the stack batched (a list of
        batched arrays), so what its reverse loop pops is batched too."""
        stack, value = call.func.value.id, self.operand(call.args[0])
        version = self.current.get(stack, stack)
        self.pushed_stacks.add(stack)
        marked = ("push_const", version, self._operand_src(value))  # replayed, not pushed
        if isinstance(value, ir.Var):
            self.tracked.add(version)
            marked = ("push", version, value.name)
            self.mark_container(version, value)         # a stack of lists: pops are lists
        self.out.append(ir.Plain(f"{version}.append({self._operand_src(value)})", set(),
                                 self.origin, marked))

    def reversed_stack_loop(self, stmt):
        """`for x in reversed(x_stack):`, `for i, x in zip(reversed(i_range),
        reversed(x_stack)):`, a derivative's reverse loop over the stacks its forward loop
        pushed (ad/reverse.py reverse_for), read as the loop of marked pops it is
        (transformer/stack_loops.py), so each transform of the derivative carries x's tangent or
        batching through the stack as it pushed it. A loop reading such a stack otherwise is
        refused (nothing marks what it reads); any other loop is returned as written."""
        if self.src.generated:
            loop = stack_loops.as_pop_loop(
                stmt, self.pushed_stacks, self._is_builtin,
                lambda: {n.id for n in walk(self.node) if isinstance(n, gast.Name)})
            if loop is not None:
                return loop
        it = stmt.iter
        read = [n.id for n in walk(it) if isinstance(n, gast.Name)
                and n.id in self.pushed_stacks]
        if read and not _is_range_of_len(it, read[0]):     # (pushes: generated code)
            raise self.src.error(stmt, f"a loop over the derivative's loop stack {read[0]} "
                                 f"is read only as `for x in reversed({read[0]}):` (zip of such "
                                 f"lists) or by its pops (x = {read[0]}.pop())")
        return stmt

    def _is_builtin(self, name, func):
        """Whether `name` is Python's builtin `func` here (not a local of that name)."""
        return not self._is_local(name) and \
            self.src.resolve_name(name)[1] is getattr(builtins, func)

    def stack_pop(self, user_name, call):
        """`x = x_stack.pop()`: batched if the stack holds batched values."""
        stack = call.func.value.id
        version = self.current.get(stack, stack)
        name = self._new_version(user_name)
        marked = ("pop_const", version, name)
        if version in self.tracked:
            self.tracked.add(name)
            marked = ("pop", version, name)
            self.mark_container(name, ir.Var(version))
        self.out.append(ir.Plain(f"{name} = {version}.pop()", {name}, self.origin, marked))
        self.current[user_name] = name

    def _per_example(self, call, code):
        """A debug.print/callback of batched arrays under vmap: called once per example with its
        values, as JAX's batching rule does (`for_each_example(lambda x: <call>, x)`)."""
        if not getattr(self._resolve(call.func), "__secant_print__", False):
            return code         # (builtins.print prints the batch)
        batched = sorted({self.current[n.id] for n in walk(call)
                          if isinstance(n, gast.Name) and self._is_batched_name(n)})
        if not batched or any(self.current.get(n.id) in self.containers
                              for n in walk(call) if isinstance(n, gast.Name)
                              and self.current.get(n.id) in self.tracked):
            return code         # (a batched list or tuple: printed as it is)
        names = ", ".join(batched)
        return f"for_each_example(lambda {names}: {code}, {names})"

    def _user_function(self, func):
        """The user's function a callee `f` names (a global or free name), else None."""
        if not isinstance(func, gast.Name) or self._is_local(func.id):
            return None
        kind, obj = self.src.resolve_name(func.id)
        if kind in ("global", "closure") and isinstance(obj, types.FunctionType) and (
                obj.__module__ or "").split(".")[0] not in ("secant", "numpy", "scipy"):
            return obj
        return None

    def _check_not_stateful_closure(self, node, func):
        """`acc(x)` of `acc = counter()`, counter a user function returning a closure that
        rebinds a nonlocal (a counter): its state advances with each call, which the transforms
        follow by tracing the function instead, on each call (the error's global_flow)."""
        if not (isinstance(func, gast.Name) and self._is_local(func.id)
                and self._built_here(func.id)) or self.src.generated:
            return
        makers = [n.value.func for n in walk(self.node) if isinstance(n, gast.Assign)
                  and any(isinstance(t, gast.Name) and t.id == func.id for t in n.targets)]
        made = [self._user_function(m) for m in makers]
        if any(m is not None and nonlocals.makes_stateful_closure(m) for m in made):
            what = self._source(node)
            error = self.src.error(node, f"{what} calls {func.id}, a closure that keeps state "
                                   "in a nonlocal between its calls")
            error.global_flow = (f"{func.id}, a function made when the code runs (a closure), "
                                 "keeps state in a nonlocal, which a source transform cannot "
                                 "follow")
            raise error

    def _check_no_effect_before_callees(self, stmt):
        """A call run for its effect on Python state (`_STACK.append(h)` of a global list,
        `push(h)` of a user function, its result dropped) in a function that also calls user
        functions: those may read that state (a handler stack), and a derivative's reverse
        pass runs them again later, when it has changed back (their vjp recomputes them): the
        transforms trace the function instead, on each call (its error's global_flow)."""
        from secant.transformer.functionalize import _MUTATING_METHODS
        call = stmt.value
        if not isinstance(call, gast.Call) or call.args and all(    # (LOG.append("start"),
                isinstance(a, gast.Constant) for a in call.args) and all(    # log("step"):
                isinstance(k.value, gast.Constant) for k in call.keywords):  # no handler)
            return
        func = call.func
        root = func.value if isinstance(func, gast.Attribute) else None
        effect = None
        if isinstance(root, gast.Name) and func.attr in _MUTATING_METHODS \
                and not self._is_local(root.id):
            kind, obj = self.src.resolve_name(root.id)
            if kind in ("global", "closure") and isinstance(obj, (list, dict, set)) \
                    or type(obj).__name__ == "deque":
                effect = root.id
        elif self._user_function(func) is not None:
            effect = func.id
        if effect is None:
            return
        callees = [n for n in walk(self.node) if isinstance(n, gast.Call)
                   and n is not call and self._user_function(n.func) is not None]
        if not callees:
            return
        what = self._source(call)
        error = self.src.error(stmt, f"{what} is run for its effect on {effect}, and "
                               f"{self._source(callees[0])} is called too: what that reads "
                               "there (a handler stack) a derivative's reverse pass would read "
                               "again later, after it has changed back")
        error.global_flow = f"{what} changes Python state that the functions it calls read"
        raise error

    def _parameter_names(self):
        a = self.node.args
        return {p.id for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
                if p is not None}

    def _is_parameter(self, name):
        """Whether `name` is a parameter of the user's function as it came in (its type known
        only when it runs); never in generated code."""
        return not self.src.generated and name in self._parameter_names()

    def _built_here(self, name):
        """Whether the local `name` only ever holds objects the function's own calls build
        (`m = Model(w)`, `b = copy.copy(self)`): not a parameter, nor an alias of an object
        that outlives the call (a default list, a global), whose state a trace would leave its
        recording values in."""
        if name in self._parameter_names():
            return False
        values = [n.value for n in walk(self.node) if isinstance(n, gast.Assign)
                  and any(isinstance(t, gast.Name) and t.id == name for t in n.targets)]
        stored = [n for n in walk(self.node) if isinstance(n, gast.Name) and n.id == name
                  and isinstance(n.ctx, gast.Store)]
        return bool(values) and len(values) == len(stored) and all(
            isinstance(v, gast.Call) for v in values)

    def _given_object_method(self, name, attr):
        """Whether `name.attr(...)` may be a method of a user object the caller passes in
        (`rec.push(v)` in a helper given `rec`): a parameter without a default (a default list
        outlives the call), the method not a list's, dict's or set's (`acc.append(x)`: stored
        where a trace would leave its recording values)."""
        from secant.transformer.functionalize import _MUTATING_METHODS
        a = self.node.args
        plain = a.posonlyargs + a.args
        defaulted = {p.id for p in plain[len(plain) - len(a.defaults):]} if a.defaults else set()
        defaulted |= {p.id for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
        return name in self._parameter_names() and name not in defaulted \
            and attr not in _MUTATING_METHODS

    def _check_method_storing(self, node, func):
        """`tape.record(Var(x))` of a local `tape = Tape()` whose method stores what it is given
        into the object (`self.nodes.append(v)`), its result used: what it stores is read back
        later (`for n in reversed(self.nodes)`) past the arguments and return values a source
        transform follows. Refused here, the function traced on each call instead (as a call
        whose result is dropped is)."""
        if self.src.generated or not isinstance(func, gast.Attribute) \
                or not isinstance(func.value, gast.Name) or not self._is_local(func.value.id) \
                or not self._tracked_names_in(node) or not self._built_here(func.value.id):
            return          # (a local's method first: `snp.sin(x)`'s call not walked, issue 19)
        classes = {self._resolve(n.value.func) for n in walk(self.node)
                   if isinstance(n, gast.Assign) and isinstance(n.value, gast.Call)
                   and any(isinstance(t, gast.Name) and t.id == func.value.id
                           for t in n.targets)}
        if not any(user_objects.stores_into_self(c, func.attr) for c in classes):
            return
        what = self._source(node)
        error = self.src.error(node, f"{what} stores the {self.what} value "
                               f"{sorted(self._tracked_names_in(node))[0]} in its object, "
                               "which secant cannot follow through a source transform")
        error.global_flow = (f"{what} stores a {self.what} value in its object: a method "
                             "acting on its object, which a source transform cannot follow")
        raise error

    def _check_not_in_place(self, call):
        """`snp.add.at(x, i, v)`, `np.put(a, i, v)`, `np.copyto(y, v)` as a statement: NumPy's
        in-place idiom, which an immutable array cannot do (transformer/in_place_calls.py):
        refused at the user's line where it would run, never dropped with its unused result."""
        if not isinstance(call, gast.Call):
            return
        inplace = True
        for k in call.keywords:
            if k.arg == "inplace":
                inplace = k.value.value if isinstance(k.value, gast.Constant) else None
        obj = self._resolve(call.func)
        if obj is _UNRESOLVED:
            return
        message = in_place_calls.refusal(obj, inplace)
        if message is not None:
            error = self.src.error(call, message)
            error.when_run = True       # (in a branch: where that branch runs, as in NumPy)
            raise error

    def _called_for_effect(self, call):
        """Whether `call` (its result dropped) is a plain call of a function the user's function
        is given (`forward(get, x)` in haiku's init): run for what it does, as its derivative,
        whose result is dropped; a value it hands on through an effect (a store into an object
        that a function it is given closes over) is one its derivative's callees refuse."""
        return not self.batching and not self.src.generated and isinstance(call, gast.Call) \
            and isinstance(call.func, gast.Name) and call.func.id in self._parameter_names() \
            and self.current.get(call.func.id) not in self.tracked

    def _check_no_side_effect_on_tracked(self, stmt):
        """A call whose result is dropped (xs.append(x), print(x)) cannot carry a derivative."""
        if self._called_for_effect(stmt.value):
            return
        tracked = sorted(n for n in _free_names_in(stmt) if self.current.get(n) in self.tracked
                         and not _static_reads_only(stmt, n))
        if not tracked:             # (print(x) of a batched x prints the batch: not checked)
            return
        func = getattr(stmt.value, "func", None)
        if isinstance(func, gast.Name) and getattr(self._resolve(func), "__secant_writes_global__",
                                                   False) and stmt.value.args:
            name = self._source(stmt.value.args[0]).strip("'\"")   # global_writes.py's write
            raise self.src.error(stmt, f"the global {name} is set to the {self.what} value "
                                 f"{tracked[0]}: secant cannot follow it out of the function "
                                 "(JAX would leak its tracer there); return the value instead")
        what = self._source(stmt.value)
        message = (f"{what} receives the differentiated value {tracked[0]}, but its result is "
                   "dropped: secant cannot follow a derivative through side effects")
        if self.batching:       # a function called for what it checks is batched (statement);
            func = getattr(stmt.value, "func", None)    # a method of a local (xs.append(x))
            if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                    and self._is_local(func.value.id)):     # would hold values unbeknown to vmap
                return
            error = self.src.error(stmt, f"{what} receives the batched value {tracked[0]}, "
                                   "but its result is dropped: vmap cannot follow a batch axis "
                                   "through side effects; build the value instead (xs = xs + "
                                   "[x])")
            root = func.value.id
            if not self.src.generated and (self._built_here(root) or
                                           self._given_object_method(root, func.attr)):
                error.global_flow = (   # (a method acting on its object: traced instead)
                    f"the batched value {tracked[0]} goes into {what}, whose result is "
                    "dropped: a method acting on its object, which a source transform "
                    "cannot follow")
            raise error
        root = getattr(stmt.value, "func", None)
        while isinstance(root, gast.Attribute):
            root = root.value
        flow = None         # (why a trace of the function would follow it, for the transforms)
        if isinstance(root, gast.Name) and not self._is_local(root.id) \
                and root is getattr(stmt.value, "func", None):
            kind, callee = self.src.resolve_name(root.id)     # cache(x): a user function run
            if kind in ("global", "closure") and isinstance(callee, types.FunctionType) \
                    and (callee.__module__ or "").split(".")[0] != "secant":   # for its effect
                flow = (f"the differentiated value {tracked[0]} goes into {what}, whose result "
                        "is dropped: it acts through a side effect a source transform cannot "
                        "follow")
        func = getattr(stmt.value, "func", None)
        method_effect = isinstance(root, gast.Name) and self._is_local(root.id) \
            and isinstance(func, gast.Attribute) and func.value is root \
            and (self._built_here(root.id) or self._given_object_method(root.id, func.attr))
        if method_effect:
            flow = (f"the differentiated value {tracked[0]} goes into {what}, whose result is "
                    "dropped: a method acting on its object (bound.setup()), which a source "
                    "transform cannot follow")
        if isinstance(root, gast.Name) and root is func and self._built_here(root.id):
            flow = (f"the differentiated value {tracked[0]} goes into {what}, whose result is "
                    f"dropped: {root.id}, a function made when the code runs (a closure), "
                    "acts on its own state, which a source transform cannot follow")
        if isinstance(root, gast.Name) and not self._is_local(root.id) \
                and root is not getattr(stmt.value, "func", None):
            kind = self.src.resolve_name(root.id)[0]        # _FRAMES.append(Frame(params))
            flow = (f"the differentiated value {tracked[0]} passes through {root.id}, a "
                    f"{'global' if kind == 'global' else 'free'} object a source transform "
                    "cannot follow")
            message = (f"{what} stores the differentiated value {tracked[0]} in {root.id}, "
                       f"a {'global' if kind == 'global' else 'free'} object of the function "
                       "(not a local): code that reads it back from there (another function, "
                       "a later call) receives it outside the arguments and return values a "
                       "source transform follows, so its derivative would be lost; pass "
                       f"{tracked[0]} as an argument to the functions that use it")
        if self.src.generated:     # a derivative's loop stack (2nd order)
            message = ("reverse mode through the Python loop of a derivative (second order) is "
                       "not supported yet: use secant.hessian or secant.jacfwd(secant.grad(f)) "
                       "(forward over reverse), or a lax.cond/where instead of the loop")
            flow = None
        error = self.src.error(stmt, message)
        if flow is not None:        # (the transforms trace the function instead, on each call:
            error.global_flow = flow        # secant/transforms.py _traced_per_call)
        if (flow is None or method_effect) and not self.src.generated:
            error.when_run = True       # in a branch: refused when that branch runs
        raise error

    def local_def(self, fdef):
        """A nested def is kept as written; passed to lax control flow, it is read like a
        lambda there (its free locals become parameters of its derivative)."""
        if fdef.decorator_list:
            return self.decorated_local_def(fdef)
        a = fdef.args
        held = sorted(n for d in a.defaults + [k for k in a.kw_defaults if k is not None]
                      for n in _names_in(d) if self.current.get(n) in self.tracked)
        if held:        # (desugar.py passes such a default at each call when it only calls it)
            verb = "batch" if self.batching else "differentiate"
            raise self.src.error(fdef, f"a default of the nested function {fdef.name} reads "
                                 f"{held[0]}, which secant must {verb}, and the function is "
                                 f"used here other than by calls it can spell out: pass "
                                 f"{held[0]} as an argument instead")
        rebound, stmts = nonlocals.nonlocal_names(fdef)
        rebound = [n for n in rebound if n in self.current]
        if rebound and self._own_cell_state(fdef, rebound):
            # (a value of the function, called as the object Python makes: never lifted)
            self.out.append(ir.Plain(self._source(fdef), {fdef.name}, self.origin))
            self.names.reserve(fdef.name)
            self.current[fdef.name] = fdef.name
            return
        if rebound:
            # (the plain shape was rewritten to return them: transformer/nonlocals.py)
            raise self.src.error(stmts[0], f"the nested function {fdef.name} rebinds {rebound[0]} "
                                 f"of the enclosing function (nonlocal): secant cannot follow a "
                                 f"value through that; return the new value instead "
                                 f"({rebound[0]} = {fdef.name}(..., {rebound[0]}))")
        own = _def_locals(fdef)
        free = [n for n in sorted(_names_in(fdef))
                if n in self.current and n not in own and n != fdef.name]
        self.local_defs[fdef.name] = (fdef, {n: self.current[n] for n in free})
        self.current.pop(fdef.name, None)
        try:
            text = self._source(fdef)
        except SourceError as error:
            if not self.batching:
                raise
            # its text's per-example queries refused (an item of a batched value secant cannot
            # place): passed to lax control flow, the def is read on its own, lifted (its free
            # locals parameters, its items placed); called as written, it raises the error
            raiser = self.names.fresh(f"{fdef.name}_refused")
            self.src.imports[raiser] = self.bindings[raiser] = _Raiser(error)
            text = f"{fdef.name} = {raiser}"
        self.out.append(ir.Plain(text, {fdef.name}, self.origin))

    def _own_cell_state(self, fdef, rebound):
        """Whether the nested def `fdef`'s `nonlocal` names `rebound` are state kept in the
        generated function's own cells, as the user's function keeps it (haiku's `get` splitting
        `key` at each call): each a local neither differentiated nor batched, under its own
        name, that the function itself never reads or sets after the def, nor another nested
        scope names. The def is then kept as written (run as Python, as JAX runs it) and its
        state advances once per call of it; a value it gives the function flows out only
        through what the def returns or stores, which the transforms see where it is read."""
        if fdef not in self.node.body or fdef.name in self.current \
                or fdef.name in self.retired:
            return False
        at = self.node.body.index(fdef)
        for n in rebound:
            if self.current.get(n) != n or n in self.tracked:
                return False
            if any(isinstance(m, gast.Name) and m.id == n
                   for m in hygiene.walk_scope(self.node.body[at + 1:])):
                return False
            if any(isinstance(m, gast.Name) and m.id == n for s in self.node.body if s is not fdef
                   for d in gast.walk(s) if isinstance(d, (gast.FunctionDef, gast.Lambda))
                   for m in gast.walk(d)):
                return False
        return True

    def decorated_local_def(self, fdef):
        """A nested def with decorators (@custom_vjp, @functools.wraps(f), @checkpoint): run as
        written, so the decorated object is the one Python makes; its calls are dynamic ones,
        whose derivative a dispatcher finds when it runs (a custom rule's own, or the wrapper's
        source). Refused when it closes over values the transform follows (they would be
        constants there)."""
        own = _def_locals(fdef)
        held = sorted(n for n in _names_in(fdef) if n in self.current and n not in own
                      and n != fdef.name and self.current[n] in self.tracked)
        if held:
            verb = "batch" if self.batching else "differentiate"
            raise self.src.error(fdef, f"the decorated nested function {fdef.name} closes over "
                                 f"{held[0]}, which secant must {verb}: pass {held[0]} as an "
                                 "argument instead, or define the function at module level")
        user_name = fdef.name
        name = self._new_version(user_name)
        if name != user_name:
            fdef = copy.copy(fdef)
            fdef.name = name
        self.current[user_name] = name
        self.made_defs.add(name)
        self.out.append(ir.Plain(self._source(fdef), {name}, self.origin))

    def _python_attribute_update(self, stmt):
        """Whether `stmt` sets (or updates) an attribute of a Python object that no transform
        tracks (`wrapper.calls += 1`), or an item of a global or free container
        (`count[0] += 1`, `stats["n"] = ...`, `memo[k] = v`), from Python values: a side effect
        run as written, as JAX runs it when it traces."""
        target = stmt.targets[0] if isinstance(stmt, gast.Assign) else stmt.target
        if isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name):
            untracked = target.value.id not in self.held
        elif isinstance(target, gast.Subscript):
            root = target.value
            while isinstance(root, (gast.Subscript, gast.Attribute)):
                root = root.value
            # a global's or free container's item, or a local one's built from untracked values
            # (buf = np.zeros(3); buf[0] = 5.0: NumPy work on constants runs as NumPy, as in JAX)
            untracked = isinstance(root, gast.Name) and root.id not in self.held and (
                not self._is_local(root.id) or (root.id in self.current and
                                                self.current[root.id] not in self.tracked))
        else:
            return False
        if untracked and isinstance(target, gast.Subscript) and self._is_local(root.id) \
                and not self._tracked_names_in(stmt):
            return self._local_buffer_store(root.id, stmt)
        return untracked and not self._tracked_names_in(stmt)

    def _attribute_of_built(self, target):
        """Whether `m.a = v` sets an attribute of an object this function builds (`m = C()`,
        its only binding): a derivative that runs the function's lines again builds it again,
        so the store runs again with it (not a side effect run once, like `wrapper.calls`)."""
        if not (isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name)):
            return False
        name = target.value.id
        binds = [n for n in walk(self.node) if isinstance(n, gast.Name) and n.id == name
                 and isinstance(n.ctx, (gast.Store, gast.Param))]
        return len(binds) == 1 and any(
            isinstance(st, gast.Assign) and len(st.targets) == 1 and st.targets[0] is binds[0]
            and isinstance(st.value, gast.Call) for st in self.node.body)

    @functools.cached_property
    def _numpy_buffers(self):
        """The ids of the calls `buf = np.zeros(n)` whose result the function changes in place
        (`buf[i] = v`): NumPy's own calls, kept as written (secant.numpy's make immutable
        arrays); _local_buffer_store says which stores may run as written."""
        stored = {t.value.id for n in walk(self.node) if isinstance(n, (gast.Assign,
                  gast.AugAssign)) for t in (n.targets if isinstance(n, gast.Assign) else
                  [n.target]) if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name)}
        if not stored:          # (no store into an item: no second walk)
            return set()
        return {id(n.value) for n in walk(self.node) if isinstance(n, gast.Assign)
                and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name)
                and n.targets[0].id in stored and isinstance(n.value, gast.Call)}

    def _numpy_buffer(self, call, obj):
        """Whether `call` is NumPy's `obj` making a buffer the function fills in place from
        constants and shapes only (buf = np.full(x.shape[0], 2.0); buf[0] = 1.0): NumPy's call
        kept (JAX runs NumPy there too; secant.numpy's arrays take no item stores)."""
        if id(call) not in self._numpy_buffers or (getattr(obj, "__module__", None) or ""
                                                   ).split(".")[0] != "numpy":
            return False
        parents = {id(c): n for n in walk(call) for c in gast.iter_child_nodes(n)}
        ours = _secant_numpy()
        shapes = (np.shape, np.ndim, np.size, len, ours.shape, ours.ndim, ours.size)
        for name in self._tracked_names_in(call):
            for n in walk(call):
                if isinstance(n, gast.Name) and n.id == name and n is not call.func:
                    up = parents.get(id(n))
                    if not (isinstance(up, gast.Attribute) and up.attr in _STATIC_ATTRIBUTES
                            or isinstance(up, gast.Call) and n in up.args
                            and any(self._resolve(up.func) is f for f in shapes)):
                        return False
        return True

    def _local_buffer_store(self, name, stmt):
        """Whether `name[i] = v` (Python values) may run as written: `name` is assigned once,
        from a NumPy constructor or a list or dict display, and every other read of it comes
        after its last item store, outside any loop that stores into it (derivatives read the
        buffer again, after the function's statements ran: a read between two stores would
        see the later one). A store after a read raises; any other local: False."""
        def root_of(t):
            while isinstance(t, (gast.Subscript, gast.Attribute)):
                t = t.value
            return t.id if isinstance(t, gast.Name) else None
        defs, stores, store_nodes = [], [], set()
        for n in walk(self.node):
            if isinstance(n, (gast.Assign, gast.AugAssign)):
                targets = n.targets if isinstance(n, gast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, gast.Name) and t.id == name:
                        defs.append(n)
                    elif isinstance(t, gast.Subscript) and root_of(t) == name:
                        stores.append(n)
                        store_nodes.update(id(m) for m in walk(n))
            elif isinstance(n, (gast.For, gast.AnnAssign, gast.NamedExpr)) and any(
                    isinstance(m, gast.Name) and m.id == name and isinstance(m.ctx, gast.Store)
                    for m in walk(n.target)):
                return False
        if len(defs) != 1 or not isinstance(defs[0], gast.Assign):
            return False
        value = defs[0].value
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Mult):
            value = value.left if isinstance(value.left, gast.List) else value.right
        if isinstance(value, gast.Call):
            made = self._resolve(value.func)
            if not (getattr(made, "__module__", None) or "").split(".")[0] == "numpy":
                return False
        elif not isinstance(value, (gast.List, gast.Dict)):
            return False
        pos = (lambda n: (n.lineno, n.col_offset))
        last = max(pos(n) for n in stores)
        loops = [n for n in walk(self.node) if isinstance(n, (gast.For, gast.While))]
        for n in walk(self.node):
            if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load) \
                    and id(n) not in store_nodes:
                inside = [lp for lp in loops if any(m is n for m in walk(lp))]
                if pos(n) < last or any(any(s is m for s in stores for m in walk(lp))
                                        for lp in inside):
                    raise self.src.error(stmt, f"{name}[...] = ...: {name} is read at line "
                                         f"{self.src.user_position(n)[1]} before its last item "
                                         "store (or in a loop that stores into it): "
                                         "derivatives read it again once the function ran, "
                                         "and would see the later value; fill "
                                         f"{name} before its first use, or build it with "
                                         f"secant.numpy and write {name} = {name}.at[...]"
                                         ".set(v)")
        return True

    def _mutation_error(self, stmt):
        target = stmt.targets[0] if isinstance(stmt, gast.Assign) else \
            getattr(stmt, "target", None)
        root = target
        while isinstance(root, (gast.Subscript, gast.Attribute)):
            root = root.value
        if isinstance(target, (gast.Subscript, gast.Attribute)) and isinstance(root, gast.Name) \
                and not self._is_local(root.id) and self._tracked_names_in(stmt):
            # _CACHE["h"] = tanh(x @ w): a value stored in a global's item, read back elsewhere
            what = "batched" if self.batching else "differentiated"
            error = self.src.error(stmt, f"{gast.unparse(target).strip()} = ... stores a {what} "
                                   f"value in {root.id}, a "
                                   f"{'global' if self.src.resolve_name(root.id)[0] == 'global' else 'free'}"
                                   " object of the function (not a local): code that reads it "
                                   "back from there receives it outside the arguments and return "
                                   "values a source transform follows; pass it as an argument "
                                   "or return it")
            error.global_flow = (f"a {what} value is stored in {root.id}, a global a source "
                                 "transform cannot follow")
            return error
        kind = isinstance(target, gast.Subscript) and isinstance(root, gast.Name) \
            and self._tracked_names_in(stmt) and self._collections_kind(root.id)
        if kind:
            # d = collections.defaultdict(float); d[k] += v: not a NumPy array (a dict built
            # with {} is followed)
            what = "batched" if self.batching else "differentiated"
            like = ("a list built with [...] and written d = d[:i] + [v] + d[i + 1:]"
                    if kind == "deque" else "a dict built with {} and written "
                    "d[k] = d.get(k, 0.0) + v")
            return self.src.error(stmt, f"{gast.unparse(target).strip()} = ... writes a {what} "
                                  f"value into {root.id}, a collections.{kind}: item updates of "
                                  f"a collections.{kind} are not followed by a source transform; "
                                  f"use {like}")
        if isinstance(target, gast.Subscript) and isinstance(root, gast.Name) \
                and root.id in self.current and self.current[root.id] not in self.tracked \
                and root.id not in self.held and self._tracked_names_in(stmt):
            # buf = np.zeros(3); buf[0] = x: a traced value written into a NumPy work array
            # (JAX: TracerArrayConversionError), never a silently dropped derivative
            what = "batched" if self.batching else "differentiated"
            return self.src.error(stmt, f"{gast.unparse(target).strip()} = ... writes a {what} "
                                  f"value into {root.id}, which was built from constants (a "
                                  "NumPy array cannot hold a traced value): build "
                                  f"{root.id} with secant.numpy and write {root.id} = "
                                  f"{root.id}.at[...].set(v)", ArrayConversionSourceError)
        if isinstance(target, gast.Attribute) and isinstance(root, gast.Name) \
                and root.id not in self.params and self._tracked_names_in(stmt):
            # b.v += w * sin(b.v) in a loop or branch: a field of an object the function built
            # set where its fields are not rebuilt (the function's trace follows it instead; a
            # parameter's attribute set, x.value = 1.0 of an array, stays refused here)
            error = self.src.error(stmt, f"{gast.unparse(target).strip()} = ... sets a field of "
                                   f"the object {root.id} with {self.what} values in a loop or "
                                   "branch (fields set in a loop or branch are not followed by "
                                   "a source transform): set it in the function's own body, or "
                                   "keep the value in a local")
            error.global_flow = (f"fields of the object {root.id} are set in a loop or branch, "
                                 "which a source transform cannot follow")
            return error
        return self.src.error(stmt, "arrays are immutable: in-place updates such as x[i] = v "
                              "or x[i] += v are not supported; write x = x.at[i].set(v) "
                              "(or .add(v))")

    def _collections_kind(self, name):
        """'defaultdict', 'OrderedDict', 'Counter' or 'deque' where the function binds `name`
        to a call of that collections class, else None."""
        for n in walk(self.node):
            if isinstance(n, gast.Assign) and isinstance(n.value, gast.Call) and any(
                    isinstance(t, gast.Name) and t.id == name for t in n.targets):
                obj = self._resolve(n.value.func)
                if obj in (collections.defaultdict, collections.OrderedDict,
                           collections.Counter, collections.deque):
                    return obj.__name__
        return None

    def assign(self, target, value, stmt):
        if isinstance(target, gast.Name) and self._derivative_stack(value, "pop"):
            self.stack_pop(target.id, value)
        elif isinstance(target, gast.Name) and isinstance(value, (gast.ListComp, gast.DictComp)) \
                and self._tracked_names_in(value):
            result = self.comprehension(value, name=target.id)      # built in the user's name
            if self.current.get(target.id) != getattr(result, "name", None):
                self.bind_name(target.id, result)
        elif isinstance(target, gast.Name) and (held := user_objects.held_object(
                self._resolve, self._tracked_names_in, self.node, target, value)):
            made, base = held
            self.bind_name(target.id, self.operand(made))       # m = C(a): its fields
            self.held[target.id] = (self.current[target.id], base)
        elif isinstance(target, gast.Name):
            self.bind_name(target.id, self.operand(value))
        elif isinstance(target, (gast.Tuple, gast.List)):
            self.assign_tuple(target, value, stmt)
        elif self._held_field(target):      # m.w = v: m's dict of fields rebuilt
            me = target.value.id
            merged = gast.copy_location(gast.BinOp(
                left=gast.Name(me, gast.Load(), None, None), op=gast.BitOr(),
                right=gast.Dict(keys=[gast.Constant(target.attr, None)], values=[value])),
                target)
            for n in walk(merged):
                if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
                    gast.copy_location(n, target)
            self.bind_name(me, self.operand(merged))
            self.held[me] = (self.current[me], self.held[me][1])
        elif (built := self._plain_field_set(target, value, stmt)) is not None:
            self.bind_name(target.value.id, self.operand(built))    # m.w = v: a new object
        elif self._python_attribute_update(stmt):    # wrapper.calls = ...: run for its effect
            code = f"{self._source(target)} = {self._source(value)}"
            root = target
            while isinstance(root, gast.Subscript):
                root = root.value
            if root is not target and isinstance(root, gast.Name) and self._is_local(root.id):
                # buf[i] = v of a local NumPy buffer: part of buf's value, replayed with it
                self.out.append(ir.Plain(code, {re.match(r"\s*(\w+)", code).group(1)},
                                         self.origin))
                return
            self.out.append(ir.Plain(code, set(), self.origin,
                                     effect=not self._attribute_of_built(target)))
        elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) \
                and self.container_kind(self.operand(target.value)) in ("list", "tuple", "dict"):
            error = self.src.error(stmt, f"{target.value.id}[...] = ...: a container of "
                                   f"{self.what} values is not changed in place (in Python "
                                   "another name for it would see the change); build a new one, "
                                   "e.g. l = l[:i] + [v] + l[i + 1:] or d = d | {k: v}")
            error.in_place = True
            raise error
        elif isinstance(target, (gast.Subscript, gast.Attribute)):
            error = self._mutation_error(stmt)
            error.in_place = True
            raise error
        else:
            raise self.src.error(stmt, f"cannot assign to {type(target).__name__}")

    def _plain_setattr_call(self, call):
        """Whether `call` is object.__setattr__(m, "w", v) or setattr(m, "w", v)."""
        return len(call.args) == 3 and not call.keywords and isinstance(
            call.args[1], gast.Constant) and isinstance(call.args[1].value, str) and \
            self._resolve(call.func) in (object.__setattr__, builtins.setattr)

    def _plain_setattr(self, stmt):
        """_plain_field_set's object for `object.__setattr__(m, "w", v)` or `setattr(m, "w", v)`
        (a statement), else None."""
        call = stmt.value
        if not (isinstance(call, gast.Call) and len(call.args) == 3 and not call.keywords
                and isinstance(call.args[0], gast.Name)
                and isinstance(call.args[1], gast.Constant)
                and isinstance(call.args[1].value, str) and call.args[1].value.isidentifier()):
            return None
        if self._resolve(call.func) not in (object.__setattr__, builtins.setattr):
            return None
        target = gast.copy_location(gast.Attribute(
            value=gast.Name(call.args[0].id, gast.Load(), None, None), attr=call.args[1].value,
            ctx=gast.Store()), call)
        return self._plain_field_set(target, call.args[2], stmt,
                                     bypass=self._resolve(call.func) is object.__setattr__)

    def _plain_field_set(self, target, value, stmt, bypass=False):
        """`object_of(C, vars(m) | {"w": v})` for `m.w = v` (v tracked) in the function's own
        body, where m is a local bound once, to `C(...)` of a plain class C (secant/tree_util.py
        plain_object: fields in its __dict__, no attribute access of its own) or to
        `copy.copy(x)` (C: type(m), refused when it runs unless plain), and read before only as
        `m.field`: an object of C with m's fields and w changed, as the transforms read a plain
        object (flax's `bound = Model(); bound.scope = scope; return bound`). No other name
        can see m's change in place (it is not passed anywhere before). Else None.
        bypass: object.__setattr__(m, "w", v), which skips a __setattr__ of the class's own
        (flax's Module binds what it is given), so C may define one; m.w = v and setattr run
        it, and C must not (object_of(..., assigned=True) refuses a copied one's when it
        runs). Once m holds a traced value (an earlier set), an untraced set of it is one
        too (`object.__setattr__(bound, "_autonames", {})`), and m read before as the object
        of such sets is not a read that sees the change."""
        if not (isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name)
                and (isinstance(stmt, gast.Expr) or isinstance(stmt, gast.Assign)
                     and len(stmt.targets) == 1) and stmt in self.node.body) or self.batching and self.src.generated:
            return None
        name = target.value.id
        if name in self.params or name in self.held or not (
                self._tracked_names_in(value) or self._tracked_names_in(target.value)):
            return None
        from secant import tree_util
        from secant.ad.helpers import object_of
        parents = {}
        for n in hygiene.walk_scope(self.node.body):
            for c in gast.iter_child_nodes(n):
                parents[c] = n
        built = [n for n in hygiene.walk_scope(self.node.body) if isinstance(n, gast.Assign)
                 and any(isinstance(t, gast.Name) and t.id == name for t in n.targets)]
        stores = [n for n in hygiene.walk_scope(self.node.body) if isinstance(n, gast.Name)
                  and n.id == name and not isinstance(n.ctx, gast.Load)]
        if len(built) != 1 or len(stores) != 1 or built[0].targets != [stores[0]] \
                or not isinstance(built[0].value, gast.Call) or built[0] not in self.node.body:
            return None
        made_by = built[0].value
        cls = self._resolve(made_by.func)
        while getattr(cls, "__secant_rewritten_from__", None) is not None:
            cls = cls.__secant_rewritten_from__     # (copy.copy functionalised under jit)
        if cls is copy.copy and len(made_by.args) == 1 and not made_by.keywords:
            kind = gast.Call(func=gast.Name("type", gast.Load(), None, None),  # m = copy.copy(
                             args=[gast.Name(name, gast.Load(), None, None)], keywords=[])  # x)
        elif not isinstance(cls, type) or tree_util.plain_refusal(cls, read=bypass) or (
                tree_util.is_node_type(cls) and cls not in tree_util._plain_types):
            return None
        else:
            if not bypass and tree_util._frozen_dataclass(cls):
                error = self.src.error(stmt, f"cannot assign to field {target.attr!r} of a "
                                       f"frozen dataclass {cls.__name__!r} (Python's "
                                       "dataclasses.FrozenInstanceError); use "
                                       "dataclasses.replace")
                error.when_run = True
                raise error
            kind = copy.deepcopy(made_by.func)
            described = next((c.__dict__[target.attr] for c in cls.__mro__
                              if target.attr in c.__dict__), None)
            if hasattr(type(described), "__set__"):
                # m.w = v, setattr or object.__setattr__ of a property (a data descriptor)
                # of m's class: Python runs its setter, never a field of m's own
                if isinstance(described, property) and described.fset is None:
                    error = self.src.error(stmt, f"property {target.attr!r} of "
                                           f"{cls.__name__!r} object has no setter (Python's "
                                           "AttributeError: setting it cannot bypass the "
                                           "property)")
                    error.when_run = True
                    raise error
                return None     # (its setter run through: the function's trace follows it)
        line = stmt.lineno
        for n in hygiene.walk_scope(self.node.body):       # read before only as m.field (never passed)
            if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load) \
                    and getattr(n, "lineno", line) < line:
                p = parents.get(n)
                if isinstance(p, gast.Call) and p.args[:1] == [n] and isinstance(
                        parents.get(p), gast.Expr) and parents[p] in self.node.body \
                        and self._plain_setattr_call(p):
                    continue        # (an earlier set of m's fields: a new object too)
                if not (isinstance(p, gast.Attribute) and p.value is n) or (
                        isinstance(parents.get(p), gast.Call) and parents[p].func is p):
                    return None
        look_up = next((k for k, v in self.bindings.items() if v is object_of), None) \
            or self.names.fresh("object_of")
        self.src.imports[look_up] = self.bindings[look_up] = object_of
        fields = gast.BinOp(
            left=gast.Call(func=gast.Name("vars", gast.Load(), None, None),
                           args=[gast.Name(name, gast.Load(), None, None)], keywords=[]),
            op=gast.BitOr(), right=gast.Dict(keys=[gast.Constant(target.attr, None)],
                                             values=[value]))
        made = gast.Call(func=gast.Name(look_up, gast.Load(), None, None),
                         args=[kind, fields], keywords=[] if bypass or cls is not copy.copy
                         else [gast.keyword("assigned", gast.Constant(True, None))])
        for n in walk(made):
            if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
                gast.copy_location(n, target)
        return made

    def _held_field(self, target):
        """Whether `target` is `m.w` of an object held in a local (user_objects.py)."""
        return isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name) \
            and target.value.id in self.held \
            and self.current.get(target.value.id) == self.held[target.value.id][0]

    def bind_name(self, user_name, operand):
        """user_name = operand: the last op's temporary takes the user's own name."""
        name = self._new_version(user_name)
        if isinstance(operand, ir.Var):
            last = self.out[-1] if self.out else None
            if (isinstance(last, ir.Op) and last.targets == [operand.name]
                    and not self.current.holds(operand.name)):
                last.targets = [name]
                self.names.taken.discard(operand.name)
                renamed = operand.name
            else:
                self.out.append(ir.Op([name], "identity", {"x": operand}, {}, self.origin))
                renamed = None
            self.tracked.add(name)
            self.mark_container(name, operand)
            if renamed is not None:     # the old name is free again: not a container
                self.containers.pop(renamed, None)
        elif isinstance(operand, ir.Seq):        # b = [1.0, a * a, 2.0]: a tracked container
            packed = self.pack(operand, name)
            self.out[-1].targets = [name]
            self.tracked.add(name)
            self.containers[name] = self.containers.pop(packed.name)
            if packed.name in self.item_kinds:      # (a list of lists)
                self.item_kinds[name] = self.item_kinds.pop(packed.name)
            if packed.name in self.field_kinds:     # (x, [a, b])
                self.field_kinds[name] = self.field_kinds.pop(packed.name)
            self.names.taken.discard(packed.name)
            self.tracked.discard(packed.name)
        else:
            last = self.out[-1] if self.out else None
            if operand.src in self.once and isinstance(last, ir.Plain) \
                    and last.defines == {operand.src}:
                # (context = scaled('a'): the call bound once, in the user's own name)
                self.once.discard(operand.src)
                self.names.taken.discard(operand.src)
                last.code, last.defines = f"{name} = {last.code.split(' = ', 1)[1]}", {name}
            else:
                self.out.append(ir.Plain(f"{name} = {operand.src}", {name}, self.origin))
            self.note_plain_binding(name, operand)      # out = []: a list (containers.py)
            if self._may_be_object(operand):
                self.objects.add(name)      # (w = Vec(x), x not differentiated: an object)
        self.current[user_name] = name

    def _new_version(self, user_name):
        if user_name not in self.current and user_name not in self.retired:
            self.names.reserve(user_name)
            # given out once: a later first assignment (the other branch of an if) is a new
            # version, which the join renames; two versions named alike would alias
            self.retired.add(user_name)
            self.temporaries.discard(user_name)
            return user_name
        name = self.names.fresh(user_name)
        self.temporaries.discard(name)
        self.versions[name] = user_name
        return name

    def assign_tuple(self, target, value, stmt, operand=None):
        """a, b = value (or `operand`, already normalised); nested patterns ((w1, b1), (w2, b2)
        = params) unpack field by field."""
        elts = target.elts
        if not all(isinstance(e, (gast.Name, gast.Tuple, gast.List)) for e in elts):
            raise self.src.error(stmt, "only names (or nested tuples of names) can be "
                                 "unpacked into")
        if operand is None and isinstance(value, (gast.Tuple, gast.List)) \
                and len(value.elts) == len(elts):
            operands = [self.operand(v) for v in value.elts]   # all right sides first: a, b = b, a
            for e, o in zip(elts, operands):
                self._bind_target(e, o, stmt)
            return
        if operand is None:
            operand = self.operand(value)
        if isinstance(operand, ir.Seq):
            if len(operand.items) != len(elts):
                raise self.src.error(stmt, f"cannot unpack {len(operand.items)} values into "
                                     f"{len(elts)} names")
            for e, o in zip(elts, operand.items):
                self._bind_target(e, o, stmt)
            return
        if isinstance(operand, ir.Expr):
            pattern = self._plain_pattern(target, top=True)
            self.out.append(ir.Plain(f"{pattern} = {operand.src}",
                                     set(re.findall(r"\w+", pattern)), self.origin))
            return
        last = self.out[-1] if self.out else None
        if isinstance(last, ir.Op) and last.targets == [operand.name] and len(elts) > 1 \
                and last.op in ("call",) + CONTROL_FLOW \
                and all(isinstance(e, gast.Name) for e in elts) \
                and not self._read_again(operand.name):   # (`a, = f(x)` reads field 0)
            names = [self._new_version(e.id) for e in elts]
            last.targets = names
            if last.op == "call":
                self.mark_helper_result(last.callee, last.operands, names)
                self.unpacked_from_calls.update(names)
            active = self._call_outputs_active(last, len(names)) if last.op == "call" \
                else self._branch_outputs_active(last, len(names))
            for e, n, on in zip(elts, names, active):
                self.current[e.id] = n
                if on:
                    self.tracked.add(n)
            return
        if self._is_parameter(operand.name) and operand.name != getattr(
                self.src.node, "secant_carry", None):
            # (a 3-tuple, a user's container: as Python; a staged loop's own carry: known)
            self.out.append(ir.Plain(f"check_unpacked({operand.name}, {len(elts)})", set(),
                                     self.origin))
        for i, e in enumerate(elts):    # unpacking a tracked tuple: one field access each
            item = self._emit("field", {"tree": operand}, {"key": str(i)}, f"{operand.name}_{i}")
            from_call = self._returns_tuple(operand.name) or \
                operand.name in self.unpacked_from_calls
            if self.batching and self.is_container(operand):
                self.out[-1].container = True   # a field of a tuple (a helper's): as written
            if operand.name in self.item_kinds:     # split_at's (head, tail): lists
                self.containers[item.name] = self.item_kinds[operand.name]
            self.item_kind(operand, item, i)
            self._bind_target(e, item, stmt)
            if from_call:       # (the version the target's names are bound to, and the item)
                self.unpacked_from_calls.update(
                    {item.name} | {self.current[n.id] for n in walk(e)
                                   if isinstance(n, gast.Name) and n.id in self.current})

    def _read_again(self, version):
        """Whether `version` is the value of a user's name (p = f(x); u, v = p) that the
        function reads more than once: the unpacking then reads p's fields (retargeting the
        call to u, v would leave later reads of p unbound)."""
        users = [k for k, v in self.current.items() if v == version]
        return any(sum(1 for n in walk(self.src.node) if isinstance(n, gast.Name)
                       and n.id == u and isinstance(n.ctx, gast.Load)) > 1 for u in users)

    def _bind_target(self, target, operand, stmt):
        if isinstance(target, gast.Name):
            self.bind_name(target.id, operand)
        else:
            self.assign_tuple(target, None, stmt, operand)

    def _plain_pattern(self, target, top=False):
        """`a, (b, c)` with each name's new version, for an unpacking kept as written."""
        if isinstance(target, gast.Name):
            name = self._new_version(target.id)
            self.current[target.id] = name
            return name
        inner = [self._plain_pattern(e) for e in target.elts]
        text = ", ".join(inner) + ("," if len(inner) == 1 else "")      # `a, = p`
        return text if top else f"({text})"

    def if_statement(self, stmt):
        test = self._test(stmt.test)
        if isinstance(test, ir.Var) and self.batching and self._dynamic_result(test.name):
            # `x if keep(x) else None`, keep a parameter (equinox's partition): the bool it
            # returns when it runs, one for every example; a batched one refused then
            test = ir.Expr(f"static_truth({test.name})")
        if not isinstance(test, ir.Expr):
            if self.batching:
                raise _batched_test(self.src.error(
                    stmt, "if on a batched value: it has one truth value per example, not a "
                    "single Python bool; use snp.where(cond, a, b) or lax.cond",
                    BoolConversionSourceError))
            # the truth value of the value it holds when it runs, as JAX's grad reads its
            # concrete primal (a Python bool a differentiated object's field holds: `if
            # self.flip`); a traced one under jit is Python's error (TracerBoolConversionError)
            test = ir.Expr(f"bool({test.name})")
        if test.src.isidentifier():     # SSA keeps the name's value: test it directly
            cond = test.src
        else:
            cond = self.names.fresh("cond")
            self.out.append(ir.Plain(f"{cond} = {test.src}", {cond}, self.origin))
        branches = []
        before = dict(self.current)
        tracked_before = set(self.tracked)
        outer = self.out
        for block in (stmt.body, stmt.orelse):
            self.current = dict(before)
            self.out = []
            try:
                for s in block:
                    if isinstance(s, gast.Return):
                        raise self.src.error(s, "a return inside a branch cannot be transformed "
                                             "yet; assign the result and return once, at the end")
                    self.statement(s)
            except SourceError as error:
                if getattr(error, "bad_call", False):
                    # a call with arguments its callee does not accept (`g(x, x) if n != "sin"
                    # else g(x)`, a static test): as in Python and JAX, the TypeError only
                    # where that branch runs
                    self.current = dict(before)
                    self.out = [self._raise_when_run(error, "bad_call_error")]
                    branches.append((self.out, dict(self.current)))
                    continue
                if getattr(error, "when_run", False) or getattr(error, "in_place", False) \
                        and block is stmt.orelse and _dict_or_item_update(stmt):
                    # `if isinstance(p, dict): p = p | {k: v} / else: p[k] = v` (desugar.py
                    # dict_or_item_update): an array's in-place update refused when it runs;
                    # a side effect on a differentiated value (m.record(y)) too, as JAX runs
                    # it only where its branch runs
                    self.current = dict(before)
                    self.out = [self._raise_when_run(error, "side_effect_error" if getattr(
                        error, "when_run", False) else "in_place_update_error")]
                    branches.append((self.out, dict(self.current)))
                    continue
                if not isinstance(error, _CONCRETIZATION_ERRORS) or not self.batching or \
                        getattr(error, "batched_test", False) or \
                        getattr(error, "lax_loop_derivative", False):
                    raise
                # int()/bool()/float() of a batched value in a branch a static test may never
                # take (repeat's static-counts branch beside the one for counts known when it
                # runs): as JAX, the error when that branch runs. (Not for a derivative: grad
                # runs the function itself first, where int() of the value succeeds, and only
                # its derivative would meet the error, which must not be skipped as a replayed
                # effect is)
                self.current = dict(before)
                self.out = [self._raise_when_run(error)]
            branches.append((self.out, dict(self.current)))
        self.out = outer
        self._origin(stmt)              # the copies that join the branches belong to the if
        merged = {}
        for name in sorted(before.keys() | branches[0][1].keys() | branches[1][1].keys()):
            versions = [b[1].get(name) for b in branches]
            if versions[0] == versions[1]:
                if versions[0] is not None:
                    merged[name] = versions[0]
                continue
            if None in versions:    # defined by one branch only: as in Python, usable after
                merged[name] = versions[0] or versions[1]     # the if when that branch ran
                self.guards[merged[name]] = self.guards.get(merged[name], frozenset()) | {
                    (cond, int(versions[0] is None))}
                if self.batching and self.src.generated:
                    # vmap of a derivative whose rolled and unrolled forms of a loop sit in
                    # the two branches of `if isinstance(ws, Tracer)`: the reverse pass's
                    # if-join may copy this name in the branch that never set it; a placeholder
                    # (backends/placeholder.py: a constant for the transforms, vmap's select
                    # drops it, its cotangent adds nothing) keeps that copy defined
                    block = branches[versions.index(None)][0]
                    block.append(ir.Plain(f"{merged[name]} = unset_in_branch({name!r})",
                                          {merged[name]}, self.origin))
                continue
            # a value chosen by the branch: each branch copies its version into one new name
            # one name for the value after the if: a version a branch assigned, which the
            # other branch assigns too (renamed) or copies its own value into
            pre = before.get(name)
            own = [v != pre for v in versions]
            k = 0 if own[0] else 1
            joined = versions[k]
            is_tracked = any(v in self.tracked for v in versions)
            block, v = branches[1 - k][0], versions[1 - k]
            if not own[1 - k] and (cond, k) in self.guards.get(v, ()):
                # v exists only when this test took branch k: in the other it is unbound, as
                # is the joined name (a derivative splits one `if` into several on one test)
                self.guards[joined] = self.guards.get(joined, frozenset()) | {(cond, k)}
                merged[name] = joined
                continue
            if own[1 - k]:
                rename(block, v, joined)
                if v in self.tracked:
                    self.tracked.add(joined)
                if v in self.queried:       # (its shape queries are now the joined name's)
                    self.queried.add(joined)
            elif is_tracked and v in self.tracked:
                block.append(ir.Op([joined], "identity", {"x": ir.Var(v)}, {}, self.origin))
            else:
                block.append(ir.Plain(f"{joined} = {v}", {joined}, self.origin))
            if is_tracked:
                self.tracked.add(joined)
            for v in versions:
                if v in self.containers:
                    self.containers[joined] = self.containers[v]
                if v in self.list_names:
                    self.list_names.add(joined)
                if v in self.dict_names:
                    self.dict_names.add(joined)
            merged[name] = joined
        self.tracked |= tracked_before
        self.current = merged
        self._origin(stmt)
        self.out.append(ir.If(cond, branches[0][0], branches[1][0], self.origin))

    def for_statement(self, stmt, body=None):
        """A Python for loop over a concrete iterable (range(n), a list): it stays a loop. Each
        variable the body assigns gets one loop name, which the body's last version is copied
        back to, so the derivative can replay iterations in reverse. A loop over a
        differentiated container (`for w, b in params:`, params a list of (w, b) pairs) is a
        loop over its indices, `for i in range(len(params))`, that reads `params[i]`: its
        length is known when it runs, and its cotangent gathers one item's per iteration.
        `body`: the statements (default stmt.body; a comprehension passes its own)."""
        if stmt.orelse:
            raise self.src.error(stmt, "for ... else is not supported")
        if not isinstance(stmt.target, (gast.Name, gast.Tuple, gast.List)):
            raise self.src.error(stmt, "the loop variable must be a name or a tuple of names "
                                 "(for w, b in params)")
        body = stmt.body if body is None else body
        over = self.container_iteration(stmt)    # a tracked list/dict, enumerate, zip, .items()
        if over is not None:
            return self.loop_over_container(stmt, body, *over)
        iterable = stmt.secant_iterable if hasattr(stmt, "secant_iterable") else \
            self.operand(stmt.iter)
        if isinstance(iterable, ir.Seq) and _has_var(iterable):    # (for k, v in [("a", x)])
            return self.loop_over_container(stmt, body, "items_of", self.pack(iterable))
        if isinstance(iterable, ir.Var) and self.is_container(iterable):   # for p in parts[1:]
            return self.loop_over_container(stmt, body, "items_of", iterable)
        if isinstance(iterable, ir.Var) and not self.batching:
            return self._container_loop(stmt, iterable, body)
        if isinstance(iterable, ir.Var):        # for row in x: over x's first axis
            return self.loop_over_rows(stmt, body, iterable)
        if not isinstance(iterable, ir.Expr):
            raise self.src.error(stmt, f"a for loop over a {self.what} array is not supported "
                                 "yet; loop over range(len(x)) and index instead")
        if self._python_items_loop(stmt, body, iterable):
            return
        is_range = isinstance(stmt.iter, gast.Call) and _unparse(stmt.iter.func).strip() \
            == "range"
        if isinstance(stmt.target, gast.Name):
            target_id, unpack = stmt.target.id, None
        else:                           # for w, b in pairs: one item, unpacked first thing
            target_id = self.names.fresh("item")

            def unpack(item):
                self.assign_tuple(stmt.target, None, stmt, ir.Expr(item))
        steps = self.names.fresh(f"{target_id}_range" if is_range else "items")
        if is_range:                    # (a derivative may write range(n) in its one use)
            self.temporaries.add(steps)
        self.out.append(ir.Plain(f"{steps} = {iterable.src}" if is_range
                                 else f"{steps} = list({iterable.src})", {steps}, self.origin))
        target, body, carried, _ = self._loop(stmt, target_id, body, unpack)
        self.out.append(ir.For(target, steps, body, carried, self.origin))

    def _container_loop(self, stmt, iterable, body):
        index = self.names.fresh("i")
        steps = self.names.fresh(f"{index}_range")
        # (a parameter may be a user object whose __iter__ is not its __getitem__: checked)
        count = "count_items" if self._is_parameter(iterable.name) and \
            iterable.name not in self.object_lists else "len"
        self.out.append(ir.Plain(f"{steps} = range({count}({iterable.name}))", {steps},
                                 self.origin))

        def unpack(i):
            item = self._emit("getitem", {"a": iterable}, {"idx": i}, f"{iterable.name}_{i}")
            self.out[-1].container = True       # its cotangent is built item by item
            if self.container_kind(iterable) is False:  # (a list's or an array's rows, as
                self.out[-1].walked = True              # it turns out: ad/reverse.py)
            self.item_kind(iterable, item)
            if self._may_be_object(iterable) or self._holds_objects(iterable):
                self.object_ops.append(self.out[-1])    # (for d in ds, a list of Duals)
            self._bind_target(stmt.target, item, stmt)
        target, body, carried, _ = self._loop(stmt, index, body, unpack)
        self.out.append(ir.For(target, steps, body, carried, self.origin))

    def comprehension_sum(self, node, comp):
        """sum(f(w) for w, b in params) (or of a list comprehension; `sum(..., start)`): a
        loop adding into a running total that starts at `start` (0), as a Python sum does."""
        start = _sum_start(node, self.src)
        if start is None and (len(comp.generators) != 1 or comp.generators[0].ifs):
            items = self.comprehension(comp)    # the list first (containers.py), then its sum
            return self._emit("add_n", {"arrays": items}, {}) if isinstance(items, ir.Var) \
                else ir.Expr(f"sum({items.src})")
        if len(comp.generators) != 1 or comp.generators[0].ifs or comp.generators[0].is_async:
            raise self.src.error(comp, "sum() of a comprehension is differentiated for one "
                                 "`for` without `if`; write the loop out")
        gen = comp.generators[0]
        total = self.names.fresh("total")
        if start is None:
            self.out.append(ir.Plain(f"{total} = 0", {total}, self.origin))
            self.current[total] = total
        else:
            self.bind_name(total, self.operand(start))
        scoped = {n.id for n in walk(gen.target) if isinstance(n, gast.Name)}
        outer = {n: self.current.get(n) for n in scoped}        # comprehension variables
        pre, term = hoist_choices(comp.elt, self.names.fresh)     # (f(a if c else b))
        add = gast.Assign(targets=[gast.Name(total, gast.Store(), None, None)],   # are local
                          value=gast.BinOp(left=gast.Name(total, gast.Load(), None, None),
                                           op=gast.Add(), right=term), type_comment=None)
        loop = gast.For(target=gen.target, iter=gen.iter, body=pre + [add], orelse=[],
                        type_comment=None)
        loop.secant_scoped = True       # (its variables are the comprehension's own)
        for n in (add, add.targets[0], add.value, add.value.left, loop):
            gast.copy_location(n, node)
            n.end_lineno, n.end_col_offset = node.end_lineno, node.end_col_offset
        self.for_statement(loop)
        self._origin(node)
        result = self.current.pop(total)
        for n, version in outer.items():
            if version is None:
                self.current.pop(n, None)
                self.retired.add(n)
            else:
                self.current[n] = version
        return ir.Var(result) if result in self.tracked else ir.Expr(result)

    def while_statement(self, stmt):
        """A Python while loop on a concrete test: it stays a loop, with loop names for the
        variables the body assigns (as for `for`); the derivative counts its iterations."""
        if stmt.orelse:
            raise self.src.error(stmt, "while ... else is not supported")
        _, body, carried, test = self._loop(stmt, None)
        self.out.append(ir.While(test, body, carried, self.origin))

    def _read_after(self, line):
        """The names the function reads on lines after `line` (its reads sorted by line once
        per tree, not a walk of the whole function per loop)."""
        if getattr(self, "_reads_by_line", (None,))[0] is not self.node:
            reads = sorted((getattr(n, "lineno", 0), n.id) for n in walk(self.node)
                           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load))
            self._reads_by_line = (self.node, [r[0] for r in reads], [r[1] for r in reads])
        _, lines, names = self._reads_by_line
        return set(names[bisect.bisect_right(lines, line):])

    def _first_read_after(self, stmt, names):
        """The names of `names` that the statements after top-level `stmt` may read before
        assigning them (for all the top-level loops in one pass per tree)."""
        body = self.node.body
        memo = getattr(self, "_top_first_reads", (None, None, None))
        if memo[0] is not self.node or memo[1] != tuple(body):     # (nodes compare by id)
            loops = {i for i, s in enumerate(body) if isinstance(s, (gast.For, gast.While))}
            memo = self._top_first_reads = (self.node, tuple(body),
                                            _suffix_first_reads(body, loops))
        at, index = memo[2], body.index(stmt)
        if at is None or index not in at:
            return _first_reads(body[index + 1:], names)
        return at[index] & names

    def _while_test(self, stmt):
        """The test of a while loop as source over the loop names (it must be inactive)."""
        out, self.out = self.out, []
        test = self._test(stmt.test)
        emitted, self.out = self.out, out
        if emitted or not isinstance(test, ir.Expr):
            if self.batching:
                why = None if self.src.generated else _kept_loop_reason(self.src, stmt)
                raise _batched_test(self.src.error(
                    stmt, "while on a batched value: it has one truth value per example" + (
                        f", and it cannot run as a batched lax.while_loop ({why})" if why else
                        "; use lax.while_loop"), BoolConversionSourceError))
            raise self.src.error(stmt, "while on a differentiated array: its truth value is not "
                                 "a single Python bool; compare it, e.g. "
                                 "while snp.sum(x) < 10.0", BoolConversionSourceError)
        return test.src

    def _loop(self, stmt, target_id, body=None, unpack=None):
        """The body of a for (target_id: its loop variable) or while loop (target_id None) with
        one loop name per variable it assigns: (target, body, carried, while test source).
        `unpack(target)` emits the statements that read the iteration's item first."""
        body = stmt.body if body is None else body
        used_after = self._read_after(getattr(stmt, "end_lineno", 1 << 30))
        if stmt in self.node.body:      # at the top level: read after it before assigned
            used_after = self._first_read_after(stmt, used_after)
        # a variable needs a loop name if it enters the loop (an iteration reads the value the
        # previous one left) or is read after it
        tested = _names_in(stmt.test) if isinstance(stmt, gast.While) else set()
        # (one first assigned in the loop and read before that in an iteration, `prev`
        # in `if i > 0: d = v - prev` / `prev = v`: the previous iteration's value)
        own, every, stored = self._loop_stores(stmt, body, target_id)

        read_first = self._loop_first_reads(stmt, body, stored & (set(self.current) | own))
        assigned = sorted(n for n in stored if n in read_first
                          or (n in self.current and n in tested) or n in used_after)
        # the names `unpack` binds from each item (`for w in ws`, `for g in fs` over a list or
        # the rows of an array) and read after the loop: the last iteration's, carried as
        # the body's are (the reverse pass then gives their cotangent after the loop to the
        # last iteration alone, not to every iteration's, ad/reverse.py reverse_for); not a
        # comprehension's (a later read of the name is of another variable)
        if unpack is not None and isinstance(stmt, gast.For) and \
                not getattr(stmt, "secant_scoped", False):
            assigned = sorted(set(assigned) | used_after & (
                {n.id for n in walk(stmt.target) if isinstance(n, gast.Name)} - {target_id}))
        before = dict(self.current)
        tracked_before = set(self.tracked)
        taken_before = set(self.names.taken)
        retired_before = set(self.retired)
        out_before = self.out
        grow = set()                   # loop variables found to carry tracked values
        # an enclosing loop's next pass normalises this loop again, with at least the values
        # tracked that entered it before: its variables found to carry tracked values then
        # still do (activity is monotone), so the fixpoint starts from them, not from none
        # (a pass per loop per enclosing pass: 2**depth passes of the innermost, issue 19)
        tracked_in = {n for n, v in before.items() if v in self.tracked}    # (watched)
        starts = self.__dict__.setdefault("_loop_starts", {})
        start = starts.get(id(stmt))
        if start is not None and start[0] is stmt and start[1] is body and \
                start[2] <= tracked_in:
            grow |= start[3]
        grown_lists = {n for n in self.containers}
        premarked = set()       # loop names with no value before the loop (this pass's)
        for _ in range(len(assigned) + 2):     # activity fixpoint over the loop's back edge
            self.unbound -= premarked
            premarked.clear()
            self._origin(stmt)
            self.current, self.tracked = dict(before), set(tracked_before)
            self.names.taken = set(taken_before)
            self.retired = set(retired_before)     # each pass names the body afresh
            self.out = list(out_before)
            loop_names = {}
            for name in assigned:
                loop = loop_names[name] = self.names.fresh(name)
                self.temporaries.discard(loop)
                self.versions[loop] = name
                if name in before:     # copy the value entering the loop to the loop name
                    pre = before[name]
                    if pre in self.tracked:
                        self.out.append(ir.Op([loop], "identity", {"x": ir.Var(pre)}, {},
                                              self.origin))
                        if self._built_object(ir.Var(pre)):     # (w = Vec(x) before the
                            self.operator_built.append(self.out[-1])    # loop: an object)
                            self.object_ops.append(self.out[-1])
                    else:
                        self.out.append(ir.Plain(f"{loop} = {pre}", {loop}, self.origin))
                        self.note_plain_binding(loop, ir.Expr(pre))
                        if pre in self.objects:
                            self.objects.add(loop)
                elif self.batching and self.src.generated:
                    # vmap of a derivative: its reverse pass replays the loop's values after
                    # it, so a value the loop assigns may have no value before it; None (an
                    # empty pytree) lets a branch that does not assign it copy (and batch) it
                    self.out.append(ir.Plain(f"{loop} = None", {loop}, self.origin))
                elif self.src.generated and name in used_after:
                    # a derivative differentiated again: a value its loop assigns under an if
                    # and its reverse pass replays after the loop is unset before the first
                    # iteration (the reverse pass saves it there; it is never read there)
                    self.out.append(ir.Plain(f"{loop} = unset_in_branch({name!r})", {loop},
                                             self.origin))
                self.current[name] = loop
                if name not in before and not self.src.generated:
                    premarked.add(loop)         # (its reads in the body checked: Python raises
                    self.unbound.add(loop)      # on the first iteration that reads it unbound)
                if name in grow or before.get(name) in self.tracked:
                    self.tracked.add(loop)
            # the loop names this pass leaves untracked: whether the body asks about them
            watch = ({v for v in loop_names.values() if v not in self.tracked}, set())
            self._watches.append(watch)
            try:
                target, test, header, carried = self._loop_pass(stmt, target_id, body, unpack,
                                                                loop_names, before)
            finally:
                self._watches.remove(watch)
            newly = {name for name, loop in loop_names.items()
                     if self.current.get(name) in self.tracked and loop not in self.tracked}
            lists = {loop for loop in loop_names.values() if loop in self.containers}
            if lists - grown_lists:
                grow |= newly
                grown_lists |= lists            # a loop name found to hold a list: read it again
                continue
            late = {loop_names[name] for name in newly - grow}
            if not late:
                break
            grow |= newly
            if not late & watch[1] and not late & {self.current.get(n) for n in loop_names}:
                # nothing in the pass asked whether these loop names were tracked (nor does
                # one carry another's): another pass with them tracked would be this one
                self.tracked.update(late)
                break
        starts[id(stmt)] = (stmt, body, tracked_in, set(grow))
        body = self.out
        self._origin(stmt)
        for name, loop in loop_names.items():
            if name not in before and not self.src.generated and \
                    any(loop in (dataflow.reads(st) or {loop}) for st in ir.nested(body)):
                # unbound before the loop, and an iteration that does not assign it (a break,
                # a continue, an if) copies the previous iteration's value: a placeholder
                # (backends/placeholder.py) the first iteration copies, an error if read
                header.append(ir.Plain(f"{loop} = unbound_before_loop({name!r})", {loop},
                                       self.origin))
                self.unbound.add(loop)
            else:
                self.unbound.discard(loop)
                if name not in before and self.src.generated and not self.batching and \
                        name not in used_after and \
                        any(loop in (dataflow.reads(st) or {loop}) for st in ir.nested(body)):
                    # a derivative's loop inside the loop (its reverse pass's cotangent
                    # assigned under an if): the first iteration may copy it before assigning
                    header.append(ir.Plain(f"{loop} = unset_in_branch({name!r})", {loop},
                                           self.origin))
        out_before[:] = header          # the enclosing block's list object stays the same
        self.out = out_before
        self._origin(stmt)
        # a variable the body assigns but the loop does not carry is not read after it: its
        # body version (one iteration's, perhaps under an if) must not look like the value
        # after the loop, which a later if would copy and the reverse pass accumulate into
        for name in every - set(loop_names) - {target_id}:
            if name in before:
                self.current[name] = before[name]
            else:
                self.current.pop(name, None)
        for name, loop in loop_names.items():
            self.current[name] = loop
        return target, body, carried, test

    def _loop_stores(self, stmt, body, target_id):
        """(the names body assigns outside comprehensions, every name it assigns, those a loop
        over it may carry):
        each enclosing loop's pass asks again, so kept per loop statement while its body is
        the same list of the same statements (the walks of a loop nested d deep: d, not d**2
        statements' worth per pass, issue 19)."""
        memo = self.__dict__.setdefault("_stores", {})
        got = memo.get(id(stmt))
        if got is not None and got[0] is stmt and got[1] is body and len(got[2]) == len(body) \
                and all(a is b for a, b in zip(got[2], body)) and got[3] == target_id:
            return got[4]
        own = {n.id for n in hygiene.walk_scope(body) if isinstance(n, gast.Name)
               and isinstance(n.ctx, gast.Store)}       # (not a comprehension's variables)
        every, comprehensions = set(), []       # (one walk for both: issue 19)
        for s in body:
            for n in walk(s):
                if isinstance(n, gast.Name):
                    if isinstance(n.ctx, gast.Store):
                        every.add(n.id)
                elif isinstance(n, gast.comprehension):
                    comprehensions.append(n)
        stored = every - {target_id}
        if self.src.generated:      # a derivative's nested def (a scan body) in the loop: its
            stored -= _nested_def_locals(body)     # locals (`carry, x, ... = step`) are its own
        # a comprehension's variables are its own (`sum(a * k for a, k in zip(row, ks))` in
        # the loop and again after it: no loop name, no unbound check of the outer k)
        stored -= {m.id for n in comprehensions for m in walk(n.target)
                   if isinstance(m, gast.Name)} - own
        # (the body's statements held, not their ids: one replaced by a new statement at a
        # freed one's address is another body)
        memo[id(stmt)] = (stmt, body, tuple(body), target_id, (own, every, stored))
        return own, every, stored

    def _loop_first_reads(self, stmt, body, names):
        """_first_reads(body, names), kept per loop statement and names while its body is the
        same list of the same statements, as _loop_stores: each enclosing loop's pass asks
        again, and each answer walks the whole nested body (the loop nested d deep asked d
        times: cubic in the depth, issue 19)."""
        memo = self.__dict__.setdefault("_loop_reads", {})
        key = (id(stmt), frozenset(names))
        got = memo.get(key)
        if got is not None and got[0] is stmt and got[1] is body and \
                len(got[2]) == len(body) and all(a is b for a, b in zip(got[2], body)):
            return set(got[3])
        out = _first_reads(body, names)
        memo[key] = (stmt, body, tuple(body), frozenset(out))
        return out

    def _loop_pass(self, stmt, target_id, body, unpack, loop_names, before):
        """One pass of _loop over the body: (the target, the while test, the header's
        statements, the carried pairs)."""
        target = test = None
        if target_id is not None:
            self.current[target_id] = self.names.fresh(target_id) \
                if target_id in before else target_id
            self.names.reserve(self.current[target_id])
            self.temporaries.discard(self.current[target_id])
            target = self.current[target_id]
            self.versions[target] = target_id
        else:
            test = self._while_test(stmt)
        header = self.out
        self.out = []
        if unpack is not None:
            unpack(target)
        for s in body:
            self.statement(s)
        carried = []
        for name, loop in loop_names.items():
            last = self.current.get(name, loop)
            if last != loop:
                if last in self.tracked:
                    self.out.append(ir.Op([loop], "identity", {"x": ir.Var(last)}, {},
                                          self.origin))
                else:
                    self.out.append(ir.Plain(f"{loop} = {last}", {loop}, self.origin))
            carried.append((loop, last))
            if last in self.containers or before.get(name) in self.containers:
                self.containers[loop] = self.containers.get(
                    last, self.containers.get(before.get(name)))
        return target, test, header, carried

    def _check_function_value(self, node):
        """A nested def closing over followed values, used as a value (stored, wrapped in a
        partial, passed where desugar could not specialise the callee): its closure's values
        would be constants there, so refuse rather than drop their derivative."""
        entry = self.local_defs.get(node.id)
        if entry is None or not any(v in self.tracked for v in entry[1].values()):
            return
        held = sorted(n for n, v in entry[1].items() if v in self.tracked)
        verb = "batch" if self.batching else "differentiate"
        raise self.src.error(node, f"the nested function {node.id} closes over {held[0]}, which "
                             f"secant must {verb}, and is used here as a value: secant follows "
                             "it when it is called, or passed directly to a Python function "
                             f"(helper({node.id}, ...)); pass {held[0]} as an argument "
                             "instead")

    # --- expressions ----------------------------------------------------------------------------
    def operand(self, node):
        """Normalise an expression: ir.Var if it is tracked, ir.Expr (source) otherwise."""
        self._node = node
        if isinstance(node, gast.Name):
            name = self.current.get(node.id)
            if name is None:
                self._check_function_value(node)
                return ir.Expr(node.id)           # a global, closure variable or builtin
            return ir.Var(name) if name in self.tracked else ir.Expr(name)
        if isinstance(node, gast.Constant):
            return ir.Expr(repr(node.value))
        if isinstance(node, gast.BinOp):
            return self.binop(node)
        if isinstance(node, gast.UnaryOp):
            if isinstance(node.op, gast.Not) and not self.batching:
                return self._inactive(node)     # a bool, whatever its operand
            x = self.operand(node.operand)
            if isinstance(x, ir.Var) and self._may_be_object(x) and \
                    type(node.op).__name__ in operators.UNARY:
                return self.operator_call("unary_method", [x],
                                          operators.UNARY[type(node.op).__name__])
            if isinstance(x, ir.Var) and isinstance(node.op, (gast.USub, gast.UAdd)):
                if isinstance(node.op, gast.UAdd):
                    return x
                return self._emit("negative", {"x": x}, {}, f"neg_{x.name}")
            if isinstance(x, ir.Var) and self.batching and isinstance(node.op, gast.Invert):
                return self._emit("invert", {"x": x}, {}, f"not_{x.name}")
            if isinstance(x, ir.Var) and self.container_kind(x) in ("list", "tuple", "dict"):
                return ir.Expr(f"len({x.name}) == 0")   # `not keys` asks for its length
            if isinstance(x, ir.Var) and self.batching:
                raise self.src.error(node, "`not` of a batched value needs one Python bool; "
                                     "use ~(...) or snp.logical_not")
            return self._inactive(node)
        if isinstance(node, gast.Call):
            out = self.call(node)
            if isinstance(out, ir.Expr) and self._runs_user_code(node.func):
                return self._evaluated_once(out, node.func)
            last = self.out[-1] if self.out and (self.objects or self.object_ops) else None
            if isinstance(out, ir.Var) and isinstance(last, ir.Op) and last.op == "absolute" \
                    and out.name in last.targets and self._may_be_object(last.operands["x"]):
                self.out.pop()          # abs(v) of a user object: v.__abs__()
                return self.operator_call("unary_method", [last.operands["x"]], "abs")
            if isinstance(out, ir.Var) and self._builds_operator_object(node):
                built = [op for op in self.out if isinstance(op, ir.Op) and out.name in op.targets]
                self.object_ops.extend(built)
                from secant.tree_util import tree_unflatten
                if operators.has_operators(self._resolve(node.func)) or \
                        self._resolve(node.func) is tree_unflatten:
                    self.operator_built.extend(built)
            return out
        if isinstance(node, gast.Starred) and _has_var(self.operand(node.value)):
            verb = "batch" if self.batching else "differentiate"
            error = self.src.error(node, f"secant cannot {verb} a call with a starred argument "
                                   f"of {self.what} values here; "
                                   "unpack it into names first (`x, y = ...`) and pass them")
            if isinstance(node.value, gast.Name):
                # zip(*pairs) of a parameter: how many values it passes only a call knows (its
                # pytree's structure); the transforms trace the function on each call instead
                # (secant/transforms.py _traced_instead), as jit reads it when it traces
                error.global_flow = (f"*{node.value.id} passes as many {self.what} values as "
                                     "it holds, which only a call knows")
            raise error
        if isinstance(node, gast.Attribute):
            field = objects.field_read(self.out, node, self.current.get(node.value.id)) \
                if isinstance(node.value, gast.Name) else None     # (transformer/objects.py)
            return self.attribute(node) if field is None else self.subscript(field)
        if isinstance(node, gast.Subscript):
            return self.subscript(node)
        if isinstance(node, (gast.Tuple, gast.List)) and any(
                isinstance(e, gast.Starred) for e in node.elts) and self._tracked_names_in(node):
            return self.operand(_starred_display(node))    # (*a, b): tuple(a) + (b,)
        if isinstance(node, (gast.Tuple, gast.List)):
            items = [self.operand(e) for e in node.elts]
            if all(isinstance(i, ir.Expr) for i in items):
                return self._inactive(node)
            return ir.Seq(tuple(items), "tuple" if isinstance(node, gast.Tuple) else "list")
        if self.batching and isinstance(node, gast.Compare):
            return self.compare(node)
        if isinstance(node, gast.Dict) and None in node.keys and self._tracked_names_in(node):
            return self.operand(_merged_dict(node))     # {**base, "b": m}: base | {"b": m}
        if isinstance(node, gast.Dict) and None not in node.keys:
            values = tuple(self.operand(v) for v in node.values)
            if any(_has_var(v) for v in values):    # {"a": x}: returned or passed on
                return ir.Seq(values, "dict", tuple(self._source(k) for k in node.keys))
            if all(isinstance(v, ir.Expr) for v in values):
                return self._inactive(node)     # {"correct": jnp.sum(argmax(logits) == y)}
        if isinstance(node, (gast.ListComp, gast.GeneratorExp, gast.DictComp)) \
                and self._tracked_names_in(node):
            return self.comprehension(node)     # the loop that builds it
        if isinstance(node, (gast.SetComp, gast.Set)):
            # a set never holds a differentiated or batched value (arrays are unhashable, as
            # in JAX): {k.split("_")[0] for k in params} is a set of Python values
            return self._inactive(node)
        if isinstance(node, (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.DictComp,
                             gast.IfExp, gast.Dict, gast.JoinedStr)):
            tracked = (_free_names_in(node) if isinstance(node, gast.Lambda)   # (its own
                       else _names_in(node)) & {                               # names apart)
                k for k, v in self.current.items() if v in self.tracked}
            if isinstance(node, gast.JoinedStr):     # f"{x.shape}": what a trace knows
                tracked = {n for n in tracked if not _static_reads_only(node, n)}
            if isinstance(node, gast.IfExp) and not tracked & (
                    _names_in(node.body) | _names_in(node.orelse)):
                # a choice between constants (desugar hoists only the others): a constant,
                # whose test is a Python truth value: of a shape under vmap (a batched test
                # differs per example, as JAX's bool() of a vmapped tracer)
                if self.batching and any(not _static_reads_only(node.test, n) for n in tracked):
                    self._batched_truth_value(node.test, "a if c else b")
                tracked = set()
            if tracked:
                verb = "batch" if self.batching else "differentiate"
                if self.src.generated and not self.batching:
                    raise self.src.error(node, "differentiating this part of a derivative "
                                         f"(a {type(node).__name__} in generated code: second "
                                         "order) is not supported yet; use secant.hessian (it "
                                         "picks an order that works) or jacfwd(jacfwd(f))")
                if isinstance(node, gast.Lambda):
                    held = sorted(tracked)[0]
                    raise self.src.error(node, f"this lambda closes over {held}, which secant "
                                         f"must {verb}, and is used here as a value (stored, "
                                         "returned, passed on): secant follows a lambda when it "
                                         "is called, or passed directly to a Python function; "
                                         f"pass {held} as an argument instead")
                raise self.src.error(node, f"secant cannot {verb} through a "
                                     f"{type(node).__name__} expression yet; write it as "
                                     "separate statements (or snp.where for a conditional)")
            return self._inactive(node)
        if isinstance(node, gast.BoolOp) and self.batching:
            for v in node.values[:-1]:      # `a and b` asks bool(a)
                self._batched_truth_value(v, type(node.op).__name__.lower())
        if isinstance(node, gast.BoolOp) and not self.batching \
                and not _is_truth_value(node, self._resolve) and self._tracked_names_in(node):
            return self.bool_operator_value(node)
        if isinstance(node, (gast.NamedExpr, gast.BoolOp)) \
                and not _is_truth_value(node, self._resolve) and \
                _names_in(node) & {k for k, v in self.current.items() if v in self.tracked}:
            # `a or b` is one of its operands, `(y := e)` is e: neither is a constant
            verb = "batch" if self.batching else "differentiate"
            raise self.src.error(node, f"secant cannot {verb} through this "
                                 f"{type(node).__name__} expression yet; write it as separate "
                                 "statements")
        # comparisons, boolean operators and the like: no derivative, keep them as written
        return self._inactive(node)

    def bool_operator_value(self, node):
        """`a or b` (`a and b`) used as a value: one of its operands, Python asking each one's
        truth value in turn: `either = a`, then `if not either: either = b` (`if either:` for
        and), so each operand is evaluated only when Python would."""
        either = self.names.fresh("either")
        test = "not " if isinstance(node.op, gast.Or) else ""
        stmts = [gast.Assign(targets=[gast.Name(either, gast.Store(), None, None)],
                             value=node.values[0], type_comment=None)]
        for v in node.values[1:]:
            take = gast.Assign(targets=[gast.Name(either, gast.Store(), None, None)], value=v,
                               type_comment=None)
            stmts.append(gast.If(test=gast.parse(f"{test}{either}").body[0].value,
                                 body=[take], orelse=[]))
        for stmt in stmts:
            for n in walk(stmt):
                if isinstance(n, (gast.stmt, gast.expr)) and not hasattr(n, "lineno"):
                    gast.copy_location(n, node)
            self.statement(stmt)
        return self.operand(gast.copy_location(gast.Name(either, gast.Load(), None, None), node))

    def _batched_truth_value(self, node, what):
        """vmap: Python asks for the truth value of `node` (`assert`, `and`/`or`, `a if node
        else b`); one of a batched value differs per example: TracerBoolConversionError, as
        JAX raises."""
        if not self._tracked_names_in(node):
            return
        if _has_var(self.operand(node)):
            raise self.src.error(node, f"`{what}` needs the truth value of a batched value, "
                                 "which differs per example; use snp.where, snp.logical_and "
                                 "(&) or lax.cond", BoolConversionSourceError)

    def _test(self, node):
        """The test of an if or while: only its truth value is used (`a or b` is fine)."""
        if isinstance(node, gast.BoolOp) and not self.batching:
            for v in node.values:
                self._test(v)
            return self._inactive(node)
        test = self.operand(node)
        if isinstance(test, ir.Var) and self.container_kind(test) in ("list", "tuple", "dict"):
            return ir.Expr(f"len({test.name}) > 0")     # `if history:` asks for its length
        return test

    def _runs_user_code(self, func):
        """Whether a call of `func` runs a function the user's function is given or made (a
        parameter or a local: haiku's `get`, which splits a key and stores a parameter at each
        call): one call is one run of it, never a text a rule may write twice."""
        if self.src.generated:
            return False
        if not isinstance(func, gast.Name):
            return self._sets_state(func)
        if func.id in self._parameter_names() or func.id in self.local_defs \
                or func.id in self.current:
            return True
        obj = self._resolve(func)       # (a user's function: lifted `get` closing over calls)
        return isinstance(obj, types.FunctionType) and (obj.__module__ or "").split(".")[0] \
            not in ("secant", "numpy", "scipy", "math", "builtins") and not getattr(
            obj, "__secant_placeholder__", False) and not getattr(
            obj, "__secant_custom__", False) or self._sets_state(func)

    def _sets_state(self, func):
        """Whether `func` names a method or callable object that sets Python state (a counter
        on its object: `rng.next()`, `schedule()`): each call is one step of it, never a text
        a rule may write twice (`schedule() * snp.sum(w ** 2)`'s derivative read it again)."""
        obj = self._resolve(func)
        return obj is not _UNRESOLVED and not isinstance(obj, type) and callable(obj) \
            and bool(nonlocals.reaches_state(obj))

    def _evaluated_once(self, value, func):
        """The inactive call `value` bound to a name of its own, run where the user's code
        runs it: a derivative rule that reads the operand twice (x @ get("w")'s tangent) reads
        the name, never calls it again."""
        obj = self._resolve(func)
        label = func.id if isinstance(func, gast.Name) else getattr(func, "attr", "call")
        if not self.batching and nonlocals.mutates_outside(obj):
            # (a derivative recomputes what its callee computes, this call too: twice)
            error = self.src.error(self._node, f"{value.src} changes Python state (an object "
                                   f"it is given or closes over) and its value is used: a "
                                   f"derivative that computes it again would run it twice")
            error.global_flow = (f"{label} changes Python state when it runs and its value "
                                 "is used")
            raise error
        name = self.names.fresh(f"{label}_out")
        self.out.append(ir.Plain(f"{name} = {value.src}", {name}, self.origin))
        self.once.add(name)
        return ir.Expr(name)

    def _numpy_join_refused(self, node):
        """NumPy's np.r_[x, y] / np.c_[x, y] of tracked values: refused (it joins its items in
        NumPy, no rule; read as a constant table it lost the derivative, and under vmap NumPy
        iterated the joining object itself for ever)."""
        if type(self._resolve(node.value)) in _NUMPY_JOINS:
            raise self.src.error(node, f"secant cannot transform {self._source(node.value)}"
                                 f"[...] with {self.what} values in the index: it is not an "
                                 "array op with a rule (for joining arrays use snp.r_, "
                                 "snp.concatenate or snp.stack)")

    def _index_checked(self, node, index):
        """Before `table[i]` of a constant table whose index `i` holds tracked values: the
        statement `check_index(i)`, which lets an integer or bool index (no derivative) pass
        and refuses a float one when it runs (a table's `t[x]`: never read as a constant,
        whose derivative would be lost)."""
        self._numpy_join_refused(node)
        tracked = []
        todo = [index]
        while todo:
            o = todo.pop(0)
            if isinstance(o, ir.Var):
                tracked.append(o.name)
            elif isinstance(o, ir.Seq):
                todo.extend(o.items)
        code = f"check_index({', '.join(dict.fromkeys(tracked))})"
        if not any(isinstance(o, ir.Plain) and o.code == code and o.origin == self.origin
                   for o in self.out):      # (an expression read twice: checked once)
            self.out.append(ir.Plain(code, set(), self.origin))

    def _inactive(self, node):
        return ir.Expr(self._source(self._starred_comprehensions_built(node)))

    def _source(self, node):
        """Source of `node` with every user variable renamed to its current version."""
        node = hygiene.copy_tree(node)
        node = self._static_getters_inlined(node)
        if self.held:
            node = self._held_fields_read(node)
        if self.batching:
            node = _PerExampleQueries(self).visit(node)
        for n in walk(node):
            if isinstance(n, gast.Name) and n.id in self.current:
                n.id = self.current[n.id]
        return _unparse(node).strip()

    def _static_getters_inlined(self, node):
        """`node` with each call of a getter returning a static fact of tracked arguments
        (`functional.degree(self)`: `self['_c'].shape[0] - 1`, _static_getter) replaced by its
        expression, as user_call reads it: run as written on a batched object, the getter
        would read the batch axis."""
        if not any(isinstance(n, (gast.Call, gast.Attribute)) for n in walk(node)):
            return node         # (nothing to inline: no visitor built and run, issue 19)
        norm = self

        class Inline(gast.NodeTransformer):
            def visit_Call(self, n):
                n = self.generic_visit(n)
                if n.args and all(isinstance(a, gast.Name) for a in n.args) and \
                        norm._tracked_names_in(n) and not n.keywords:
                    static = norm._static_getter(n)
                    if static is not None:
                        return static
                return n

            def visit_Attribute(self, n):
                static = norm._static_property(n)
                return self.generic_visit(n) if static is None else static
        return Inline().visit(node)

    def _held_fields_read(self, node):
        """`node` with each field `m.w` of an object held as its fields (a simple class's,
        built in the function: a dict at run time) read as `m["w"]`, as attribute() reads it:
        `p._c.shape[0]` is a static query of the field, written as such."""
        norm = self

        class Fields(gast.NodeTransformer):
            def visit_Attribute(self, n):
                v = n.value
                if isinstance(v, gast.Name) and v.id in norm.held and \
                        norm.current.get(v.id) == norm.held[v.id][0] and \
                        not n.attr.startswith("__") and \
                        user_objects.held_property(n, norm.held, norm._resolve) is None:
                    return gast.copy_location(gast.Subscript(
                        value=v, slice=gast.Constant(n.attr, None), ctx=n.ctx), n)
                return self.generic_visit(n)
        return Fields().visit(node)

    def _is_batched_name(self, node):
        """A batched array (a batched container's len() and items are its own)."""
        return isinstance(node, gast.Name) and self.current.get(node.id) in self.tracked \
            and self.current.get(node.id) not in self.containers

    def _operand_src(self, o):
        if isinstance(o, ir.Var):
            return o.name
        if isinstance(o, ir.Seq) and o.kind == "dict":
            return "{" + ", ".join(f"{k}: {self._operand_src(v)}"
                                   for k, v in zip(o.keys, o.items)) + "}"
        if isinstance(o, ir.Seq):
            inner = ", ".join(self._operand_src(i) for i in o.items)
            return f"({inner},)" if o.kind == "tuple" else f"[{inner}]"
        return o.as_operand()

    def _emit(self, op, operands, statics, hint=None, callee=None, callee_name="", spelling=""):
        spec = OPS[op]
        operands = self.arrays_from_lists(op, operands)     # x * [a, b]: NumPy stacks it
        flat = [o for v in operands.values() for o in (v.items if isinstance(v, ir.Seq) else [v])]
        if (not spec.differentiable and not self.batching) or \
                not any(_has_var(o) for o in flat) and not (
                    self.batching and op in COLLECTIVES):   # (psum(1.0, 'i'): vmap's axis)
            # (nested tuples too: f(((x, y), z)))
            rendered = {k: self._operand_src(v) for k, v in operands.items()}
            if op == "call":
                return ir.Expr(f"{callee_name}({call_args(rendered)})")
            return ir.Expr(spec.render(rendered, statics, spelling))
        name = self.names.fresh(hint or suggest(op, flat))
        self.temporaries.add(name)
        self.out.append(ir.Op([name], op, operands, statics, self.origin, callee, callee_name,
                              spelling))
        self.tracked.add(name)
        if op == "call":        # a derivative helper that returns a container (containers.py)
            self.mark_helper_result(callee, operands, [name])
        return ir.Var(name)

    def binop(self, node):
        x, y = self.operand(node.left), self.operand(node.right)
        method = operators.BINARY.get(type(node.op).__name__)
        built = any(isinstance(o, ir.Var) and self._built_object(o) for o in (x, y))
        joined = None if method and built else self.container_binop(node, x, y)
        if joined is not None:          # [a] + [b], d | {k: v} (not `v + w` of a pytree
            return joined               # class's objects: its __add__, as Python)
        if method and (self._may_be_object(x) or self._may_be_object(y)) and (
                _has_var(x) or _has_var(y)):
            return self.operator_call("binary_method", [x, y], "i" * getattr(
                node, "in_place", False) + method)
        opname = BINOPS.get(type(node.op).__name__)
        if opname is None and self.batching and type(node.op).__name__ in BIT_OPERATORS:
            opname = BIT_OPERATORS[type(node.op).__name__][0]
        if opname is None and self.batching:
            opname = SHIFT_OPERATORS.get(type(node.op).__name__)
        if opname is None or (isinstance(x, ir.Expr) and isinstance(y, ir.Expr)):
            return self._inactive(node)
        return self._emit(opname, {"x": x, "y": y}, {})

    def _may_be_object(self, o):
        """Whether operand `o` may be a user object with operators (transformer/operators.py)."""
        if isinstance(o, ir.Expr):      # (or builds one: `Vec(y) * x`, y not differentiated)
            return o.src in self.objects or self._builds_object_inactive(o.src)
        return isinstance(o, ir.Var) and (o.name in self.objects or any(
            o.name in op.targets for op in self.object_ops))

    def _holds_objects(self, container):
        """Whether the list or tuple `container` was built holding a user object with
        operators (`vs = [Vec(x), Vec(y)]`, or the display `[Vec(x), Vec(y)]` itself), or is
        a parameter passed one: its kind ("list", "tuple", "dict"), else False."""
        if isinstance(container, ir.Seq):
            return any(self._may_be_object(i) for i in container.items) and container.kind
        if (container.name if isinstance(container, ir.Var) else getattr(
                container, "src", None)) in self.object_lists:
            return "list"       # (a parameter passed one, or a slice of it)
        op = next((op for op in reversed(self.out) if isinstance(op, ir.Op)
                   and container.name in op.targets), None) \
            if isinstance(container, ir.Var) else None
        return op is not None and op.op == "pack" and any(
            self._may_be_object(i) for i in op.operands["items"].items) and \
            op.operands["items"].kind

    def _object_flag(self, o):
        """How a callee reads operand `o` (transformer/operators.py objects_form): True where
        it may be a user object with operators (or is a dict of them), "list" where it is a
        list or tuple of them (its items read as written), else False."""
        if self._may_be_object(o):
            return True
        holds = o is not None and self._holds_objects(o)
        return "list" if holds in ("list", "tuple") else bool(holds)

    def _builds_object_inactive(self, src):
        """Whether the source `src` of an inactive value calls a class with operators."""
        for callee in _CALLED.findall(src):    # (each callee `a.B(`, without parsing src)
            parts = callee.split(".")
            if self._is_local(parts[0]):
                continue
            node = gast.Name(parts[0], gast.Load(), None, None)
            for attr in parts[1:]:
                node = gast.Attribute(node, attr, gast.Load())
            if operators.has_operators(callees.resolve(self.src, self._is_local, node)):
                return True     # (no guard noted: a look-up that finds no class leaves none)
        return False

    def _built_object(self, o):
        """Whether `o` may be a user object with operators as a parameter, as built here
        (`Vec(a)`) or as an operator's result (`Vec(a) * 3.0`: `v[2]` of it calls what Python
        calls, operator.getitem where it is a tuple or an array), not as a helper's result (a
        tuple or dict the derivative's own code reads with plain subscripts)."""
        return o.name in self.objects or any(o.name in op.targets for op in self.operator_built)

    def operator_call(self, look_up, operands, method):
        """`x - y` (`-x`, `abs(x)`) where an operand may be a user object: `dynamic_call(
        binary_method(x, y, 'sub'), x, y)`, the method Python calls found when it runs; what it
        returns may be such an object too."""
        name = next((k for k, v in self.bindings.items()
                     if v is getattr(operators, look_up)), None)
        if name is None:
            name = self.names.fresh(look_up)
            self.bindings[name] = getattr(operators, look_up)
        operands = [self._named_operand(o, method) for o in operands]
        srcs = [self._operand_src(o) for o in operands]
        fn = ir.Expr(f"{name}({', '.join(srcs)}, {method!r})")
        caller = callees.dynamic_caller(len(operands), ())
        out = self._emit("call", {"arg0": fn, **{f"arg{i + 1}": o for i, o in enumerate(
            operands)}}, {}, f"{method}_out", callee=caller, callee_name="dynamic_call")
        if isinstance(out, ir.Var):
            self.object_ops.append(self.out[-1])
            self.operator_built.append(self.out[-1])
        return out

    def _named_operand(self, o, method):
        """An inactive operand of an operator call that computes (`Vec(y) * 2.0`, written
        twice in `dynamic_call(binary_method(a, b, 'add'), a, b)`), bound to a name once:
        `vec_y_times_2 = Vec(y) * 2.0`; names and constants as they are."""
        if not isinstance(o, ir.Expr):
            return o
        node = gast.parse(o.src, mode="eval").body
        if not any(isinstance(n, (gast.BinOp, gast.UnaryOp)) or isinstance(n, gast.Call) and
                   not (isinstance(n.func, gast.Name) and n.func.id == "slice")
                   for n in walk(node)):
            return o
        name = self.names.fresh(_expression_hint(node) or f"{method}_operand")
        self.out.append(ir.Plain(f"{name} = {o.src}", {name}, self.origin))
        return ir.Expr(name)

    def compare(self, node):
        """x < y on a batched value is an op (vmap only: for grad a comparison is a constant)."""
        operands = [self.operand(node.left)] + [self.operand(c) for c in node.comparators]
        if all(isinstance(o, ir.Expr) for o in operands):
            return self._inactive(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (gast.In, gast.NotIn)) and \
                isinstance(operands[0], ir.Expr) and self.container_kind(operands[1]) == "dict":
            op = "in" if isinstance(node.ops[0], gast.In) else "not in"    # a key: static
            return ir.Expr(f"({operands[0].src} {op} {operands[1].name})")
        if len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot)):
            return self._inactive(node)     # `total is None`: identity, one answer for all
        if all(isinstance(o, (gast.In, gast.NotIn)) for o in node.ops) and \
                not any(isinstance(o, ir.Seq) for o in operands):
            # `k in keys` is a Python bool whatever its operands (a dict key read from a
            # batched container's items, say); a batched array there fails as in JAX
            return self._inactive(node)
        kinds = [COMPARE_OPERATORS.get(type(o).__name__) for o in node.ops]
        if None in kinds or any(isinstance(o, ir.Seq) for o in operands):
            raise self.src.error(node, "only comparisons (<, <=, >, >=, ==, !=) of batched "
                                 "arrays can be batched (not `in`, `is`, or of a list)")
        # a < b < c is (a < b) and (b < c), b read once: per example, a & of the two
        out = None
        for kind, x, y in zip(kinds, operands, operands[1:]):
            one = self._emit(kind[0], {"x": x, "y": y}, {}) if _has_var(x) or _has_var(y) \
                else ir.Expr(f"({x.src} {kind[1]} {y.src})")
            out = one if out is None else self._emit("bitwise_and", {"x": out, "y": one}, {})
        return out

    def axis_index(self, node):
        """lax.axis_index(name) under vmap: one index per example, though nothing batched
        flows in."""
        try:
            bound = OPS["axis_index"].signature.bind(*node.args,
                                                     **{k.arg: k.value for k in node.keywords})
        except TypeError as e:
            raise self.src.error(node, f"bad arguments for axis_index: {e}") from None
        name = self.names.fresh("axis_index")
        self.out.append(ir.Op([name], "axis_index", {},
                              {"axis_name": self._source(bound.arguments["axis_name"])},
                              self.origin))
        self.tracked.add(name)
        return ir.Var(name)

    def attribute(self, node):
        if (static := self._static_property(node)) is not None:
            return self.operand(static)     # self.degree: self._c.shape[0] - 1
        getter = self._property_getter_call(node)
        if getter is not None:
            return self.operand(getter)
        if isinstance(node.value, gast.Name) and node.value.id in self.held and \
                self.current.get(node.value.id) == self.held[node.value.id][0]:
            if (read := user_objects.held_property(node, self.held, self._resolve)) is not None:
                return self.operand(read)                   # m.p of a property: m.p()
            field = gast.Subscript(value=node.value, slice=gast.Constant(node.attr, None),
                                   ctx=gast.Load())         # m.w of a held object: m["w"]
            return self.operand(gast.copy_location(field, node))
        base = self.operand(node.value)
        if isinstance(base, ir.Expr):
            return self._inactive(node)
        return self.attribute_of(base, node)

    def _property_getter_call(self, node):
        """`self.p` in a method whose class has a property p (a cached_property too): the
        getter called, `type(self).p.fget(self)`, which every transform follows as user code.
        (Read as a field, the tangent's or cotangent's `.p` would run the getter on it: a wrong
        jvp, a cotangent set through the property.) None for anything else."""
        import functools
        from secant.transformer import statements
        from secant.transformer.functionalize import _receiver_class
        value = node.value
        if self.src.generated or not isinstance(value, gast.Name) or value.id in self.held \
                or not self._tracked_names_in(value) or statements._stores(self.node, value.id):
            return None         # (a held simple class's object: held_property reads it)
        cls = _receiver_class(self.src, value)      # a method's self: its class
        if not inspect.isclass(cls):
            # (any other object's class is known only when the code runs: a property read off
            # it is read as a field, which grad_of_fields refuses: ad/helpers.py _registered_with)
            return None
        static = inspect.getattr_static(cls, node.attr, None)
        if isinstance(static, property) and static.fget is not None:
            getter = "fget"
        elif isinstance(static, functools.cached_property):
            getter = "func"
        else:
            return None
        call = gast.parse(f"type({value.id}).{node.attr}.{getter}({value.id})").body[0].value
        for n in walk(call):
            gast.copy_location(n, node)
        return call

    def attribute_of(self, base, node):
        """node.attr of the tracked value `base` (the operand node.value stands for)."""
        if node.attr == "__class__":    # (functools.singledispatch's dispatch(x.__class__))
            return ir.Expr(f"{base.name}.__class__")
        if node.attr in STATIC_ATTRIBUTES:
            if self.batching:
                self.queried.add(base.name)
                _guard_query(self, node.attr)
                return ir.Expr(_per_example(self, base.name, node.attr))
            return ir.Expr(f"{base.name}.{node.attr}")
        if node.attr == "T":
            return self._emit("transpose", {"a": base}, {}, f"{base.name}_T")
        if node.attr in ("real", "imag"):         # z.real: snp.real(z)
            return self._emit(node.attr, {"x": base}, {}, f"{base.name}_{node.attr}")
        if node.attr == "mT":                     # x.mT: its last two axes swapped
            return self._emit("swapaxes", {"a": base}, {"axis1": "-2", "axis2": "-1"},
                              f"{base.name}_mT")
        if node.attr == "at":
            raise self.src.error(node, f"the attribute .{node.attr} is not supported here by "
                                 "the transform")
        if not self.src.generated and (properties.may_be_computed(node.attr)
                                       or node.attr in self._reach().names):
            # a getter or a class constant of some pytree class, or of a user class the
            # function reaches: chosen when it runs
            return self._read_by_class(base, repr(node.attr), node.attr)
        self.plain_attributes.add(node.attr)    # (a class registered later may compute it)
        if not self.src.generated:
            self.reached.add(node.attr)         # (or one defined after the function)
        read = self._emit("attribute", {"tree": base}, {"name": node.attr}, node.attr)
        if isinstance(read, ir.Var):
            self.fields.append(self.out[-1])
            if node.attr == "__dict__":     # vars(m): a dict of m's fields (a loop over it
                self.containers[read.name] = "dict"     # reads its keys, names)
                self.item_kinds[read.name] = None
        return read

    def computes_query(self, attr):
        """Whether objects whose class computes `attr` (shape, ndim: a property or a class
        constant) may reach the function batched, so that vmap writes x.shape of a batched x as
        example_shape(x), which refuses such an object (its getter would read the batched
        fields: a wrong shape). Decided by what the function can see, never by the classes
        loaded in the process (its source is the same whatever ran before): a class it reaches
        (its globals, its closure cells, and what they reach), or `computed`, what its caller
        says (secant/batch.py BatchOptions: a class the caller reaches, an argument of the
        vmap's call)."""
        return attr in self.computed or attr in self._reach().names

    def _reach(self):
        """The user classes the function reaches (transformer/properties.py Reach), found once."""
        if self.reach is None:
            self.reach = properties.Reach((self.src.globals, tuple(self.src.cells.values())))
        return self.reach

    def _read_by_class(self, base, name, hint):
        """base.<name> read by the function attribute_reader picks when it runs, by base's
        class: a getter, a class constant or a field (transformer/properties.py)."""
        reader = ir.Expr(f"attribute_reader({base.name}, {name})")
        return self._emit("call", {"arg0": reader, "arg1": base}, {}, hint,
                          callee=callees.dynamic_caller(1, ()), callee_name="dynamic_call")

    def getattr_read(self, node):
        """getattr(tree, name) of a tracked tree: tree.name for a constant name; a name known
        only when the code runs (a loop over field names) is the getattr op (None: untracked)."""
        base = self.operand(node.args[0])
        if not isinstance(base, ir.Var):
            return None
        name = node.args[1]
        if isinstance(name, gast.Constant) and isinstance(name.value, str):
            attr = gast.copy_location(gast.Attribute(value=node.args[0], attr=name.value,
                                                     ctx=gast.Load()), node)
            return self.attribute_of(base, attr)
        key = self.operand(name)
        if not isinstance(key, ir.Expr):
            raise self.src.error(node, "getattr with a traced attribute name")
        if not self.src.generated:      # (the name may be a getter's: picked when it runs)
            return self._read_by_class(base, key.src, f"{base.name}_attr")
        return self._emit("getattr", {"tree": base}, {"name": key.src}, f"{base.name}_attr")

    def getattr_default(self, node):
        """getattr(tree, name, default) of a tracked tree: `tree.name` if hasattr(tree, name)
        when the code runs, else default (an if on a Python bool, as Python decides)."""
        obj, name, default = node.args
        got = self.names.fresh("attr")
        test = gast.Call(func=gast.Name("hasattr", gast.Load(), None, None), args=[obj, name],
                         keywords=[])
        read = gast.Call(func=gast.Name("getattr", gast.Load(), None, None), args=[obj, name],
                         keywords=[])
        pick = gast.If(test=test, body=[gast.Assign(targets=[gast.Name(got, gast.Store(), None,
                                                                       None)],
                                                    value=read, type_comment=None)],
                       orelse=[gast.Assign(targets=[gast.Name(got, gast.Store(), None, None)],
                                           value=default, type_comment=None)])
        for n in walk(pick):
            if isinstance(n, (gast.expr, gast.stmt)) and getattr(n, "lineno", None) is None:
                gast.copy_location(n, node)
        self.names.reserve(got)
        self.statement(pick)
        return self.operand(gast.copy_location(gast.Name(got, gast.Load(), None, None), node))

    def subscript(self, node):
        out = self._subscript(node)
        last = self.out[-1] if self.out else None
        if not (isinstance(out, ir.Var) and isinstance(last, ir.Op) and out.name in last.targets
                and last.op in ("field", "getitem")):
            return out
        if self._holds_objects(last.operands["tree" if last.op == "field" else "a"]):
            if isinstance(node.slice, gast.Slice):
                self.object_lists.add(out.name)     # vs[1:]: a list of them
            else:
                self.object_ops.append(last)    # vs[0] of vs = [Vec(x), Vec(y)]: an object
        return out

    def _subscript(self, node):
        call = index_call(node, self._resolve)
        if call is not None:                # snp.r_[a, 1:3]: a call (transformer/index_calls.py)
            return self.call(call)
        base = self.operand(node.value)
        if isinstance(base, ir.Var) and self._built_object(base):
            index = self.operand(_slices_as_calls(node.slice))  # v[1] of a user object:
            #   v.__getitem__(1); v[1:] as v.__getitem__(slice(1, None, None))
            if isinstance(index, ir.Expr):
                return self.operator_call("binary_method", [base, index], "getitem")
        if isinstance(base, ir.Seq) and any(isinstance(i, ir.Var) for i in base.items):
            base = self.pack(base)          # (x, y)[1], tuple([x, y])[1]: a container's item
        if isinstance(base, ir.Var) and self.is_container(base):
            item = self.container_subscript(node, base)
            if item is not None:
                return item
        index = self.operand(node.slice)
        if self.batching and not isinstance(index, ir.Expr):
            if isinstance(base, ir.Expr):
                self._numpy_join_refused(node)
            self._check_batched_index(node, base, index)
            if isinstance(index, ir.Seq) and isinstance(node.slice, gast.Tuple):
                index = self.index_parts(node.slice)    # a[:, o]: parts_index (batching/)
            elif not isinstance(index, ir.Var):
                raise self.src.error(node, "an index mixing a batched array with other indices "
                                     "cannot be batched yet; index with one batched array, or "
                                     "use snp.take_along_axis")
        if (self.batching and not isinstance(index, ir.Expr)) or isinstance(index, ir.Var):
            # a batched index (an operand); or, differentiating, an index the transform tracks
            # (a callee's int output, lax.top_k's indices; an int leaf of a parameter): an
            # index is integer or bool, so it has no derivative (a float one fails when it
            # runs, as NumPy's does), and it is read by name as a loop counter is
            if isinstance(base, ir.Expr):
                if not self.batching:
                    self._index_checked(node, index)
                base = ir.Expr(base.as_operand())
            named = base.name if isinstance(base, ir.Var) else \
                base.src if base.src.isidentifier() else "a"
            if self.batching:
                item = self._emit("getitem", {"a": base, "idx": index}, {}, f"{named}_item")
                if isinstance(base, ir.Var) and self._rows_read(base.name):
                    self.out[-1].rows = True    # xs[1:][i]: an item of a list, or of each
                return item                     # example's array, as it turns out (item_of)
            return self._emit("getitem", {"a": base}, {"idx": index.name}, f"{named}_item")
        if isinstance(base, ir.Expr) and _has_var(index):     # table[x, i], np.r_[x, y]
            self._index_checked(node, index)
            return self._inactive(node)
        if isinstance(base, ir.Expr):
            return self._inactive(node)
        if isinstance(node.slice, gast.Constant) and isinstance(node.slice.value, str):
            return self._emit("field", {"tree": base}, {"key": index.src}, node.slice.value)
        if isinstance(node.slice, gast.JoinedStr):     # p[f"layer{i}"]: a dict's item too
            return self._emit("field", {"tree": base}, {"key": index.src}, f"{base.name}_item")
        if isinstance(node.slice, gast.Constant) and type(node.slice.value) is int:
            # c[0] reads a field of a tuple (a loop carry) as often as an element of an array:
            # its cotangent is built by grad_of_fields, which handles both
            item = self._emit("field", {"tree": base}, {"key": index.src},
                              f"{base.name}_{node.slice.value}".replace("-", "m"))
            if self.batching and (self.is_container(base) or base.name in self.object_lists):
                self.out[-1].container = True   # an item of a list built here: as written
            self.item_kind(base, item, node.slice.value)   # split_at(g, n)[0]: a list itself
            return item
        item = self._emit("getitem", {"a": base}, {"idx": _index_src(node.slice, self)},
                          item_hint(base.name, node.slice) if base.name in self.object_lists
                          else f"{base.name}_item")     # (ds[1:] of a list of objects: ds_rest)
        if self.batching and (self.is_container(base) and _is_negative_int(node.slice) or
                              base.name in self.object_lists):
            self.out[-1].container = True       # items[-1] of a list built here (ds[1:] of a
            #                                     list of user objects): as written
        elif self._list_like(base.name) and self.batching and (isinstance(
                node.slice, (gast.Slice, gast.Name)) or _is_negative_int(node.slice)):
            self.out[-1].rows = True    # params[:-1] of a list or an array: index_examples asks
        elif self.batching and isinstance(node.slice, gast.Slice) and \
                self._returns_tuple(base.name):
            self.out[-1].rows = True    # f(x)[1:] of a function returning a tuple (or an array)
        elif self.batching and self._unpacked_from_call(base.name) and (isinstance(
                node.slice, (gast.Slice, gast.Name)) or _is_negative_int(node.slice)):
            self.out[-1].rows = True    # xs_dot[::-1] of a helper's jvp's (xs, acc) tangents
        elif self.batching and self._rows_read(base.name) and (isinstance(
                node.slice, (gast.Slice, gast.Name)) or _is_negative_int(node.slice)):
            self.out[-1].rows = True    # xs[1:][i]: rows of rows, a list's as often as an array's
        elif self.batching and any(base.name in op.targets for op in self.fields) and (
                isinstance(node.slice, (gast.Slice, gast.Name)) or _is_negative_int(node.slice)):
            self.out[-1].rows = True    # self.layers[:-1]: a list of layers or an array field,
            self.fields.append(self.out[-1])    # as it turns out when it runs (index_examples)
        elif (base.name in self.params or base.name in {
                a.id for a in self.node.args.kwonlyargs}) \
                and self._own_code():   # a helper's x[i], g[:n] (x_dot too): a list's
            if not self.batching and isinstance(node.slice, (gast.Name, gast.Slice)):
                self.out[-1].container = True   # its cotangent by add_at, which does both
                # (items or an array's, as it turns out when it runs)
            elif isinstance(node.slice, (gast.Slice, gast.Name)) or \
                    _is_negative_int(node.slice):
                self.out[-1].rows = True        # (vmap: index_examples)
        elif (base.name in self.params or self._made_by_call(base.name)) and \
                self._from_outside(node.slice):
            # params[key] with key a closure, a global, a parameter or their attribute: a dict's
            # key or a list's index as often as an array's, as it turns out when it runs
            if self.batching:
                self.out[-1].rows = True        # (index_examples)
            else:
                self.out[-1].container = True   # (add_at)
        if getattr(self.out[-1], "rows", False):
            self.rows_ops.append(self.out[-1])
        return item

    def index_parts(self, index):
        """vmap: the parts of an index tuple mixing batched arrays with slices, ints, None and
        Ellipsis, each an operand (a slice written as a call: `slice(1, None, None)`)."""
        parts = []
        for e in index.elts:
            if isinstance(e, gast.Slice):
                bounds = [self.operand(b) if b is not None else ir.Expr("None")
                          for b in (e.lower, e.upper, e.step)]
                if any(isinstance(b, ir.Var) for b in bounds):
                    raise self.src.error(e, "a slice bound that is batched differs per example,"
                                         " so the result has no one shape; use "
                                         "lax.dynamic_slice")
                parts.append(ir.Expr(f"slice({', '.join(b.src for b in bounds)})"))
            else:
                parts.append(self.operand(e))
        return ir.Seq(tuple(parts), "tuple")

    def _check_batched_index(self, node, base, index):
        """vmap: a Python list indexed by a batched value needs one int per example
        (TracerIntegerConversionError, as JAX); a batched boolean mask selects a different
        number of items per example (NonConcreteBooleanIndexError)."""
        if isinstance(base, ir.Expr) and self._python_sequence(node.value):
            raise self.src.error(node, "a Python list or tuple indexed by a batched value: "
                                 "the index must be one int, and it differs per example; "
                                 "make it an array (snp.asarray(...)[i])",
                                 IntegerConversionSourceError)
        made = next((s for s in reversed(self.out) if isinstance(s, ir.Op)
                     and isinstance(index, ir.Var) and index.name in s.targets), None)
        if made is not None and made.op in _BOOLEAN_OPS:
            raise self.src.error(node, "a boolean mask that is batched: the number of items "
                                 "it selects differs per example, so the result has no one "
                                 "shape; use snp.where(mask, x, 0) or a fixed size",
                                 BooleanIndexSourceError)

    def _python_sequence(self, node):
        """Whether `node` is a list/tuple display, a local name only ever bound to one, or a
        global/closure list or tuple."""
        if isinstance(node, (gast.List, gast.Tuple)):
            return True
        if not isinstance(node, gast.Name):
            return False
        values = [a.value for a in walk(self.node) if isinstance(a, gast.Assign)
                  and any(isinstance(t, gast.Name) and t.id == node.id for t in a.targets)]
        if values:
            return all(isinstance(v, (gast.List, gast.Tuple)) for v in values)
        if self._is_local(node.id):
            return False
        return isinstance(self._resolve(node), (list, tuple))

    def _list_like(self, name):
        """Whether SSA `name` is a list-like parameter or a name bound to its items or slices
        (_list_like_params)."""
        return name in self.list_params or any(
            self.current.get(user) == name for user in self.list_params)

    def _returns_tuple(self, name):
        """Whether SSA `name` is the result of a call that may return a tuple: a user
        function's, or an op given keywords that ask for several results (unique's
        return_index=True)."""
        for op in reversed(self.out):
            if isinstance(op, ir.Op) and name in op.targets:
                return op.op == "call" or any(k.startswith("return_") and v != "False"
                                              for k, v in op.statics.items())
        return False

    def _unpacked_from_call(self, name):
        """Whether SSA `name` is an item unpacked from what a user function's call returned,
        at any depth (`(xs, acc), (xs_dot, acc_dot) = f_jvp(x, x_dot)`), read in any block
        after: a list as often as an array, as it turns out when it runs."""
        return name in self.unpacked_from_calls

    def _from_outside(self, node):
        """Whether expression `node` is a name (or its attribute) the function reads from outside
        its body: a closure, a global, or a parameter it has not rebound."""
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and \
            self.current.get(node.id, self.params[0] if self.params else None) in self.params

    def _made_by_call(self, name):
        """Whether SSA `name` is the result of a call of a user function (a dict or list as
        often as an array)."""
        return self._made_by(name, "call")

    def _rows_read(self, name):
        """Whether SSA `name` is rows read by index_examples (a list's items or an array's rows,
        as it turns out when it runs): a derivative's `xs_item = xs[1:]` of max(xs)."""
        return any(name in op.targets for op in self.rows_ops)

    def _made_by(self, name, opname):
        """Whether SSA `name` is the result of an `opname` op (`call`, `attribute`)."""
        return any(isinstance(op, ir.Op) and name in op.targets and op.op == opname
                   for op in self.out)


    def itemgetter_call(self, node):
        """operator.itemgetter(k)(obj) as obj[k], itemgetter(k1, k2)(obj) as (obj[k1], obj[k2])
        (obj read once), as operator's own pure-Python version computes it."""
        o = self.operand(node.args[0])
        if isinstance(o, ir.Seq):
            o = self.pack(o)
        if isinstance(o, ir.Var):
            name = o.name
        else:
            name = self.names.fresh("obj")
            self.out.append(ir.Plain(f"{name} = {o.as_operand()}", {name}, self.origin))
        self.current[name] = name
        self.names.reserve(name)
        keys = node.func.args
        items = [gast.Subscript(value=_name(name), slice=copy.deepcopy(k), ctx=gast.Load())
                 for k in keys]
        out = items[0] if len(items) == 1 else gast.Tuple(elts=items, ctx=gast.Load())
        for n in walk(out):
            if isinstance(n, (gast.expr, gast.stmt)) and getattr(n, "lineno", None) is None:
                gast.copy_location(n, node)
                n.end_lineno, n.end_col_offset = node.end_lineno, node.end_col_offset
        return self.operand(out)

    def _own_code(self):
        """secant's own helpers and their derivatives: parameters that are lists as often as
        arrays."""
        return (self.src.globals.get("__name__") or "").startswith("secant.")

    # --- calls -----------------------------------------------------------------------------------
    def call(self, node):
        func = node.func
        if isinstance(func, gast.Call) and len(func.args) == 1 and not func.keywords and \
                self._resolve(func.func) is callees.run_form:   # (a runnable form's, runnable.py:
            node = copy.copy(node)                              # the function it reads)
            node.func = func = func.args[0]
        if len(node.args) == 1 and not node.keywords and \
                self._resolve(func) is callees.run_form:
            return self.operand(node.args[0])
        if isinstance(func, gast.Call) and len(func.args) == 1 and \
                not isinstance(func.args[0], gast.Starred) and _is_named_call(
                    self._resolve(func.func)):
            node = copy.copy(node)  # named_call(f, name=...)(x): f(x) (it names jit's ops only)
            node.func = func = func.args[0]
        if _is_super_call(func):
            return self.call(self.super_call(node))
        if self._resolve(func) is dataclasses.replace and self._tracked_names_in(node):
            return self.call(self.replace_call(node))
        if isinstance(func, gast.Attribute) and func.attr == "_replace" and not node.args \
                and (not isinstance(func.value, gast.Call) or _builds_namedtuple(
                    self._resolve(func.value.func))) \
                and all(k.arg for k in node.keywords) and self._tracked_names_in(node):
            return self.replaced_object(node, func.value)   # a namedtuple's (or Pt(a, b)'s)
        if len(node.args) == 1 and _namedtuple_replace(self._resolve(func)) \
                and all(k.arg for k in node.keywords) and self._tracked_names_in(node):
            return self.replaced_object(node, node.args[0])     # Pt._replace(obj, a=v)
        if isinstance(func, gast.Call) and func.args and not func.keywords and len(
                node.args) == 1 and not node.keywords and not any(isinstance(a, gast.Starred)
                                                                  for a in func.args + node.args) \
                and self._resolve(func.func) is operator.itemgetter \
                and self._tracked_names_in(node):
            return self.itemgetter_call(node)       # operator.itemgetter(1, 2)(xs)
        at = _at_call(func)
        if at is not None:
            return self.at_update(node, *at)
        built = user_objects.in_place_call(self._resolve, self._tracked_names_in, node)
        if built is None:
            built = user_objects.held_call(node, self.held, self.current)  # m(x), m.apply(x)
        if built is not None:       # C(a)(x), C(a).m(x): the object as its fields
            return self.call(built)
        self._check_method_storing(node, func)
        if isinstance(func, gast.Attribute):
            base = self.operand(func.value)
            method = objects.method_call(self.out, node, base.name) \
                if isinstance(base, ir.Var) else None
            if method is not None:          # a method of a library object (transformer/objects.py)
                return self.call(method)
            if isinstance(base, ir.Var) and getattr(node, "_secant_object_method", False):
                return self.dynamic_call(node, func, base)  # (containers.py: not a dict's)
            if isinstance(base, ir.Var) and (self.is_container(base) or _dict_method_call(
                    node)):       # a container's method (one a dict's arity allows: scope.get(
                return self.container_method(node, base)    # col, name, init, shape) is not)
            if isinstance(base, ir.Var) or self._constant_array_method(node):
                opname = METHODS.get(func.attr)     # a method of a tracked array (or of a
                                                    # constant one given tracked values: w.dot(x))
                if opname is None and not _array_method(func.attr):
                    return self.dynamic_call(node, func, base)  # m.activation(x): a function
                                                            # held by a pytree (a field)
                if opname is None:
                    return self.call(self.array_method_call(node))
                args = list(node.args)
                if opname in ("reshape", "transpose") and len(args) > 1:   # x.reshape(2, 3)
                    args = [gast.Tuple(elts=args, ctx=gast.Load())]
                return self.op_call(node, opname, [func.value] + args)
        read = callees.getter_read(self.src, self._is_local, node)
        if read is not None:            # get(p) of get = operator.itemgetter(0): p[0]
            return self.operand(read)
        node = callees.canonical_call(self.src, self._is_local, node)
        func = node.func
        kind = self._kind_of_call(node)
        if kind is not None:
            return kind
        obj = self._resolve(func)
        if isinstance(func, gast.Call) and obj is _UNRESOLVED and (
                called := self._factory_called(func, node)) is not None:
            return self.call(called)        # make_loss(f, s)(p): make_loss_called(f, s, p)
        if isinstance(func, gast.Call) and obj is _UNRESOLVED:
            obj, extra = self._made_by_factory(func, node)
            if extra:                   # grad(lambda y: y * w)(x): the lambda's free locals
                if node.keywords:       # passed after x (the lifted function's last ones)
                    raise self.src.error(node, f"{gast.unparse(func).strip()}(...) of a "
                                         "function closing over local values is transformed "
                                         "for positional arguments; pass them so")
                name = self.names.fresh(callees.short_name(obj) if obj is not _UNRESOLVED
                                        else "fn")
                self.bindings[name] = obj       # (by name: the written call takes fewer)
                func = gast.copy_location(gast.Name(name, gast.Load(), None, None), func)
                node = gast.copy_location(gast.Call(func=func, args=list(node.args) + [
                    gast.Name(n, gast.Load(), None, None) for n in extra], keywords=[]), node)
        if obj is _UNRESOLVED and isinstance(func, gast.Name) and func.id in self.local_defs \
                and func.id not in self.current and not node.keywords:
            # h(x) of a nested def kept as written (it is also passed on: grad(h)): the call
            # of h lifted to a function of its own, its free locals passed after x
            fn_arg = self._function_arg(func, "call", None)
            obj = self._lift(fn_arg, self.names.fresh(func.id), fn_arg[2])
            name = self.names.fresh(func.id)
            self.bindings[name] = obj
            func = gast.copy_location(gast.Name(name, gast.Load(), None, None), func)
            node = gast.copy_location(gast.Call(func=func, args=list(node.args) + [
                gast.Name(n, gast.Load(), None, None) for n in fn_arg[2]], keywords=[]), node)
        if obj is _UNRESOLVED and isinstance(func, gast.Call) \
                and self._resolve(func.func) is builtins.type:
            built = self.same_type_call(node, func)      # type(c)(items)
            if built is not None:
                return built
        if obj is _UNRESOLVED and isinstance(func, gast.Call) \
                and objects.functional_class(self._resolve(func.func)):
            return self.call(objects.called_when_built(func, node))     # C(args)(x)
        if obj is _UNRESOLVED:
            method = objects.method_call(self.out, node, self.current.get(func.id), "__call__") \
                if isinstance(func, gast.Name) else None            # (transformer/objects.py)
            return self.dynamic_call(node, func) if method is None else self.call(method)
        from secant.api import JitFunction
        while isinstance(obj, JitFunction):     # jit(jit(f)): read f
            obj = obj._fun
        obj = getattr(obj, "__secant_resolved__", None) or obj   # a recursive derivative
        if _is_scalar_type(obj) and len(node.args) == 1 and not node.keywords and any(
                not _static_reads_only(node.args[0], v)     # snp.float32(x) of a tracked x
                for v in self._tracked_names_in(node.args[0])):     # (np.int64(x.shape[0]):
            return self.op_call(node, "astype", [node.args[0], node.func])  # Python's call)
        ours = numpy_counterpart(obj) if op_for(obj) is None else None
        if ours is not None and (_sized_by_values(ours[0]) and not self._tracked_names_in(node)
                                 or self._numpy_buffer(node, obj)):
            ours = None     # np.setdiff1d(np.arange(n), fixed): NumPy's, on constants (jit
            #                 would trace secant's, whose shape needs size= there)
        if ours is not None:            # np.linalg.det(a): secant.numpy's, named so
            obj, node = ours[0], _renamed_call(node, ours[1])
            func = node.func
        by_call = getattr(obj, "__secant_source_by_call__", None)
        ours = getattr(_secant_numpy(), op_for(obj) or "", None)
        renamed = by_call is None and getattr(ours, "__secant_source_by_call__", None)
        by_call = (by_call or renamed) and (by_call or renamed)(node, self._resolve)
        if by_call is not None:     # snp.pad(x, 2, mode="reflect"): read through a source
            if renamed:             # its arguments pick (pad_sources.py); np.pad: secant's,
                node = _renamed_call(node, f"snp.{op_for(obj)}")    # named so
            return self.user_call(node, by_call)
        by_call = getattr(obj, "__secant_call_gen__", None) if not any(
            isinstance(a, gast.Starred) for a in node.args) and None not in (
            k.arg for k in node.keywords) else None
        by_call = by_call and by_call(len(node.args), [k.arg for k in node.keywords])
        if by_call is not None:                 # vmap(f)(x): the batched f this call runs (its
            obj = by_call                       # defaulted parameters as written, unmapped)
        elif (getattr(obj, "__secant_vmap__", False)
              or getattr(obj, "__secant_jacobian__", False)) \
                and getattr(obj, "__secant_generated__", None):
            obj = obj.__secant_generated__      # a vmapped function, a Jacobian: their source
        elif getattr(obj, "__secant_source_error__", None) is not None:
            raise obj.__secant_source_error__   # why it has none (not vmap's own wrapper)
        if obj is builtins.vars and len(node.args) == 1 and not node.keywords \
                and self._tracked_names_in(node.args[0]):   # vars(m): m.__dict__, its fields
            fields = gast.Attribute(value=node.args[0], attr="__dict__", ctx=gast.Load())
            return self.operand(gast.copy_location(fields, node))
        if obj is builtins.getattr and len(node.args) == 2 and not node.keywords:
            read = self.getattr_read(node)
            if read is not None:
                return read
        if obj is builtins.getattr and len(node.args) == 3 and not node.keywords \
                and isinstance(node.args[0], (gast.Name, gast.Attribute)) \
                and self._tracked_names_in(node.args[0]):
            return self.getattr_default(node)
        kind = control_flow_for(obj)
        if kind is not None:
            return self.control_flow(node, kind, obj)
        if getattr(obj, "__secant_implicit__", None) is not None:
            return self.implicit_call(node, obj)
        if getattr(obj, "__secant_callback__", False):
            return self.callback_call(node)
        built = self.container_call(node, obj)      # list(c), tuple(...), np.array([x, y])
        if built is not None:
            return built
        helper = _loop_helper_kind(obj) if self.batching else None
        if helper in ("fori_loop", "scan", "while_loop"):     # a loop derivative's forward pass
            return self.control_flow(node, helper, obj, carries=obj.__name__)
        if helper == "vjp":                                   # ... and its reverse pass
            return self.loop_vjp_call(node, obj)
        if getattr(obj, "__secant_call_form__", None):
            return self.call_form(node, func, obj.__secant_call_form__)
        if self.batching and _static_query_kind(obj) in _PER_EXAMPLE_CALLS \
                and len(node.args) == 1 and not node.keywords:
            arg = self.operand(node.args[0])    # np.ndim(a[i]): a query of a batched value
            if isinstance(arg, ir.Var) and not self.is_container(arg):
                self.queried.add(arg.name)
                return ir.Expr(_PER_EXAMPLE_CALLS[_static_query_kind(obj)].format(x=arg.name))
        if self.batching and getattr(obj, "__secant_batch_size__", False) and node.args \
                and all(k.arg in ("axis", "default") for k in node.keywords):
            # batch_size_of(x, y) read by an enclosing vmap: the size of the next batch axis
            # of those it batches (their axis one further in), of the others' own
            args = [self.operand(a) for a in node.args]
            if any(isinstance(a, ir.Var) for a in args):
                if not all(isinstance(a, (ir.Var, ir.Expr)) for a in args):
                    raise self.src.error(node, "batch_size_of of a container built in the "
                                         "call under vmap: pass its trees by name")
                keywords = {k.arg: k.value for k in node.keywords}
                given = ast.literal_eval(self._source(keywords["axis"])) \
                    if "axis" in keywords else 0
                given = given if isinstance(given, tuple) else (given,) * len(args)
                axes = tuple(ax + 1 if isinstance(a, ir.Var) else ax
                             for a, ax in zip(args, given))
                axis = axes[0] if len(set(axes)) == 1 else axes
                names = ", ".join(a.name if isinstance(a, ir.Var) else a.src for a in args)
                # (the caller's size, which a batched function whose parameters may hold no
                # arrays takes: unbatched, read as it is)
                default = "" if "default" not in keywords else \
                    f", default={walker.src(self.operand(keywords['default']))}"
                return ir.Expr(f"batch_size_of({names}, axis={axis!r}{default})")
        if self.batching and getattr(obj, "__secant_batch_depth__", False) is True \
                and len(node.args) >= 2 and not node.keywords:
            axis, x = self.operand(node.args[0]), self.operand(node.args[1])
            if isinstance(axis, ir.Expr) and isinstance(x, ir.Var):   # batch_axis(a, x) read
                self.queried.add(x.name)                                # by a vmap
                return ir.Expr(_deeper_axis_query(self._source(node.func), axis.src, x.name,
                                                  [self._source(a) for a in node.args[2:]]))
        if getattr(obj, "__secant_calls_first__", False) and node.args:
            made = self._ran_rule(node) if self.batching else None
            if made:    # body_replayed(fwd, x, custom=f) under vmap: the batched fwd with f's
                return self.user_call(*made)                    # body replayed
            call = gast.Call(func=node.args[0], args=list(node.args[1:]), keywords=[])
            gast.copy_location(call, node)      # body_replayed(fwd, x, custom=f): fwd(x)
            return self.call(call)
        if getattr(obj, "__secant_checks__", False) and not self.batching and node.args:
            return self.operand(node.args[0])   # a check of a custom rule's result: its value
        if self.batching and getattr(obj, "__secant_by_key_under_vmap__", False) \
                and any(k.arg == "key" for k in node.keywords):
            return self._inactive(node)     # sort_order(xs, key=f): f reads static parts
        if (getattr(obj, "__secant_constant__", False) and not self.batching) \
                or getattr(obj, "__secant_placeholder__", False) or _is_static_query(obj) \
                or getattr(obj, "__secant_structure__", False) \
                or getattr(obj, "__secant_batch_depth__", 0) == "size":
            return self._inactive(node)
        opname = op_for(obj)
        if opname == "axis_index" and self.batching:      # batched with no batched operand
            return self.axis_index(node)
        if opname in COLLECTIVES and not self.batching and not OPS[opname].differentiable:
            if any(_has_var(self.operand(a)) for a in node.args):
                raise self.src.error(node, f"lax.{opname} has no derivative (nor in JAX): "
                                     "differentiate the vmapped function instead")
            return self._inactive(node)
        if opname == "nextafter" and not self.batching and any(
                _has_var(self.operand(a)) for a in node.args):
            # the next float after x toward y: a staircase hugging the identity in x, flat in y;
            # neither JAX nor secant has a rule, and reading it as a constant gave 0 silently
            raise self.src.error(node, "secant has no derivative of nextafter (JAX has none): "
                                 "wrap its operands in lax.stop_gradient for a constant, or "
                                 "differentiate x itself where nextafter(x, y) stands for x")
        if obj in (builtins.min, builtins.max) and len(node.args) >= 2 and not node.keywords \
                and not any(isinstance(a, gast.Starred) for a in node.args) and (
                    _value_names(node) & {k for k, v in self.current.items() if v in self.tracked}):
            # max(a, b) of traced values as Python and jax.grad read it: the first of equal
            # values is the result, its derivative all theirs (snp.maximum splits a tie)
            return self.user_call(node, _builtin_source(obj))
        if opname is not None and obj in (builtins.min, builtins.max, builtins.abs) and not (
                _value_names(node) & {k for k, v in self.current.items() if v in self.tracked}):
            return self._inactive(node)     # min(n, 3) of Python ints: a Python int, as written
        if opname is not None and self._numpy_buffer(node, obj):
            return self._inactive(node)     # buf = np.zeros(n), filled in place: NumPy's
        if opname == "where" and len(node.args) == 1 and not {"x", "y"} & {
                k.arg for k in node.keywords}:
            # where(cond, size=n): jnp's nonzero(cond, size=n)
            import secant.numpy as snp
            opname, obj = None, snp.nonzero
        if opname is not None:
            return self.op_call(node, opname, list(node.args), lax_spelling(obj))
        if self.batching and any(obj is o for o in self.opaque):
            return self.opaque_call(node, obj)
        if not self.batching and getattr(obj, "__module__", "") == "secant.ad.helpers" \
                and getattr(obj, "__name__", "") == "add_grads" and len(node.args) == 2:
            # a list display of tracked values is a container value (its pack op carries the
            # cotangent into the items; read as a bare Seq it got none: zeros, silently)
            x, y = (self.operand(a) for a in node.args)
            x, y = (self.pack(o) if isinstance(o, ir.Seq) and _has_var(o) else o for o in (x, y))
            out = self._emit("add_grads", {"x": x, "y": y}, {})
            self.mark_container(getattr(out, "name", None), x if self.is_container(x) else y)
            return out
        if not self.batching and getattr(obj, "__module__", "") == "secant.ad.helpers" \
                and getattr(obj, "__name__", "") in ("add_at", "add_at_grad") \
                and len(node.args) == 3 and not node.keywords:
            return self.add_at_call(node, obj.__name__)
        if not self.batching and (getattr(obj, "__module__", ""), getattr(obj, "__name__", "")) \
                in (("secant.ad.helpers", "grad_of_fields"),
                    ("secant.batching.helpers", "grad_of_fields_batched")):
            fields = self.fields_literal(node)
            if fields is not None:
                tree = self.operand(node.args[0])
                statics = dict(zip(("n", "tree_batched"),
                                   (self._source(a) for a in node.args[2:])))
                out = self._emit(obj.__name__, {"tree": tree, "fields": fields}, statics)
                self.mark_container(getattr(out, "name", None), tree)   # tuple(tree_bar) reads
                return out
            if len(node.args) == 2 and not node.keywords and isinstance(node.args[1], gast.Dict) \
                    and None not in node.args[1].keys:
                return self._inactive(node)     # constant fields (a seed): zeros elsewhere
            fields = self.operand(node.args[1]) if len(node.args) == 2 and not node.keywords \
                and obj.__name__ == "grad_of_fields" else None
            if isinstance(fields, ir.Var):      # a dict of the fields' cotangents passed whole
                out = self._emit("grad_of_fields", {"tree": self.operand(node.args[0]),
                                                    "fields": fields}, {})
                self.mark_container(getattr(out, "name", None), self.operand(node.args[0]))
                return out
        if not self.batching and getattr(obj, "__module__", "") == "secant.ad.helpers" \
                and getattr(obj, "__name__", "") in DICT_HELPER_OPS:
            out = self.op_call(node, obj.__name__, list(node.args))   # (linear: their rules)
            if isinstance(out, ir.Var):
                self.containers[out.name] = "dict"
            return out
        if not self.batching and _is_fields_of(obj, node):
            tree = self.operand(node.args[0])
            if isinstance(tree, ir.Var):
                keys = "[" + ", ".join(self._source(k) for k in _field_keys(node.args[1])) + "]"
                statics = {"keys": keys, **({"n": self._source(node.args[2])}
                                            if len(node.args) == 4 else {})}
                out = self._emit(obj.__name__, {"tree": tree}, statics)
                self.containers[out.name] = "tuple"
                return out
        if not self.batching and getattr(obj, "__module__", "") == "secant.ad.helpers" \
                and getattr(obj, "__name__", "") == "split_at" and len(node.args) == 2 \
                and not node.keywords:      # a list's cotangent split at an append, again
            x = self.operand(node.args[0])
            if isinstance(x, ir.Var):
                out = self._emit("split_at", {"x": x}, {"n": self._source(node.args[1])})
                self.containers[out.name] = "tuple"
                self.item_kinds[out.name] = None
                return out
        if getattr(obj, "__secant_random__", None):    # secant.random: vmap writes it by a
            if self.batching:                          # rule of its own; grad reads constants
                return self.random_call(node, obj)
            # the key (integers, no derivative) may be tracked, a differentiated carry's item;
            # so may any argument of a call whose result is integers (split, categorical)
            name = obj.__name__
            if name == "random_batched" and node.args:     # vmap's call of a sampler: its
                sampler = self._resolve(node.args[0])      # arguments follow the key
                name = getattr(sampler, "__name__", name)
                node_args = node.args[2:]
            else:
                node_args = node.args[1:]
            if name in _INTEGER_RANDOM:
                args = []
            elif name in _DRAWS_OF_ENTRIES:     # choice, permutation: indices drawn (p's
                kw = _DRAWS_OF_ENTRIES[name]    # derivative never flows), then its entries
                args = node_args[:1] + [k.value for k in node.keywords if k.arg == kw]
            else:
                args = node_args + [k.value for k in node.keywords
                                    if k.arg not in ("key", "batched")]
            if any(_has_var(self.operand(a)) for a in args):
                if source_of(obj) is not None:      # uniform's bounds: secant/random_bounds.py
                    return self.user_call(node, source_of(obj))
                if obj.__name__ == "random_batched" and name in _DRAWS_OF_ENTRIES and not any(
                        k.arg == "batched" for k in node.keywords):     # (keys alone batched)
                    from secant.random_bounds import BATCHED
                    return self.user_call(node, BATCHED[name])
                raise self.src.error(node, f"{gast.unparse(func).strip()} has no derivative in "
                                     "secant: random numbers are constants for grad; compute "
                                     "its arguments from non-differentiated values")
            return self._inactive(node)
        if objects.functional_class(obj):         # C(args): its fields (transformer/objects.py)
            return self.call(objects.constructor_call(node))
        if source_of(obj) is not None:         # a function read through another source
            return self.user_call(node, source_of(obj))
        builtin_source = _builtin_source(obj)
        if builtin_source is not None and (_value_names(node) & {
                k for k, v in self.current.items() if v in self.tracked}):
            arg = self.operand(node.args[0]) if len(node.args) == 1 else None
            if isinstance(arg, ir.Expr) and not self._tracked_names_in(gast.Tuple(
                    elts=[k.value for k in node.keywords], ctx=gast.Load())):
                return self._inactive_call(node, func, obj)  # sorted(d.items()): static keys
            if obj in (builtins.sorted, builtins.reversed) and isinstance(arg, ir.Var) \
                    and not self.is_container(arg) and _read_by_its_items(self.src.node, node.args[0]):
                self.containers[arg.name] = "dict"      # sorted(p, key=len) ... p[k]: p is a
                self.read_as_dict.add(arg.name)         # dict, read by its keys
            if obj in (builtins.sorted, builtins.reversed) and len(node.args) == 1 \
                    and self.container_kind(arg) == "dict" \
                    and not self._tracked_names_in(gast.Tuple(
                        elts=[k.value for k in node.keywords], ctx=gast.Load())):
                return self._inactive(node)     # sorted(d, key=len): d's keys, static values
            self._refuse_builtin(node, obj)
            return self.user_call(node, builtin_source)     # sorted(xs, key=f) of traced xs
        if getattr(obj, "__secant_batched_only__", False) and not self.batching:
            return self._inactive_call(node, func, obj)     # (its source: batched, not
                                                            # differentiated: minimize's BFGS)
        if inspect.isfunction(obj) and not _is_library(obj) or \
                getattr(obj, "__secant_custom__", False):        # secant.custom_vjp/custom_jvp
            return self.user_call(node, obj)
        return self._inactive_call(node, func, obj)

    def _ran_rule(self, node):
        """`body_replayed(fwd, x, custom=f)` as the call `fwd_ran(x)` of secant/custom.py's
        body_ran_rule of fwd for f, whose batched function runs the batched fwd with f's body
        replayed: (that call, the rule); None where fwd or f is not known here."""
        from secant.custom import ran_rule
        custom = [k.value for k in node.keywords if k.arg == "custom"]
        if len(custom) != 1 or len(node.keywords) != 1 or \
                any(isinstance(a, gast.Starred) for a in node.args):
            return None
        rule, of = self._resolve(node.args[0]), self._resolve(custom[0])
        made = ran_rule(rule, of) if _UNRESOLVED not in (rule, of) else None
        if made is None:
            return None
        name = self.names.fresh(f"{callees.short_name(rule)}_ran")
        self.bindings[name] = made
        func = gast.copy_location(gast.Name(name, gast.Load(), None, None), node.func)
        return gast.copy_location(gast.Call(func=func, args=list(node.args[1:]),
                                            keywords=[]), node), made

    def super_call(self, node):
        """`super().m(x)` in a method of C (its `__class__` cell) taking `self` first, or
        `super(C, self).m(x)`: `super_method(C, self, 'm')(self, x)`, the function Python
        finds in self's class's MRO when the code runs (transformer/callees.py), called as any
        callee known only then."""
        look_up = next((k for k, v in self.bindings.items() if v is callees.super_method),
                       None) or self.names.fresh("super_method")
        self.src.imports[look_up] = self.bindings[look_up] = callees.super_method
        given = node.func.value.args
        if given:                               # super(C, self)
            owner, me = self._source(given[0]), given[1].id
        else:
            cls = self.src.cells.get("__class__")
            params = self.src.node.args.posonlyargs + self.src.node.args.args
            try:
                cls = cls.cell_contents
            except (AttributeError, ValueError):
                cls = None
            if not inspect.isclass(cls) or not params:
                raise self.src.error(node, "super() outside a method of a class: Python needs "
                                     "the class and self it is called in")
            owner = next((k for k, v in self.bindings.items() if v is cls), None) \
                or self.names.fresh(cls.__name__)
            self.src.imports[owner] = self.bindings[owner] = cls     # (resolved: the dispatcher)
            me = params[0].id
        text = f"{look_up}({owner}, {me}, {node.func.attr!r})"
        func = gast.copy_location(gast.parse(text).body[0].value, node.func)
        for n in walk(func):
            if isinstance(n, gast.expr):
                gast.copy_location(n, node.func)
        return gast.copy_location(gast.Call(
            func=func, args=[gast.copy_location(gast.Name(me, gast.Load(), None, None),
                                                node.func)] + list(node.args),
            keywords=node.keywords), node)

    def replace_call(self, node):
        """`dataclasses.replace(obj, k=v)` of a tracked value: `replacer(obj, ('k',))(obj, k=v)`,
        the function that builds obj's class from its fields and the changes (transformer/
        callees.py), known when the code runs (obj's class) and called as any callee known only
        then; its source updates no dict in place (dataclasses.replace's own does)."""
        if len(node.args) != 1 or any(k.arg is None for k in node.keywords):
            raise self.src.error(node, "secant transforms dataclasses.replace(obj, field=value, "
                                 "...) with the changes given by name")
        return self.replaced(node, node.args[0])

    def replaced(self, node, obj, method=False):
        """`replacer(obj, ('k',))(obj, k=v)` for `dataclasses.replace(obj, k=v)`, or
        `replacer(obj, ('k',), True)(obj, k=v)` for `obj._replace(k=v)` (node; a namedtuple's,
        or any other class's own method), obj a gast expression."""
        look_up = next((k for k, v in self.bindings.items() if v is callees.replacer),
                       None) or self.names.fresh("replacer")
        self.src.imports[look_up] = self.bindings[look_up] = callees.replacer
        if not isinstance(obj, gast.Name):      # (passed again by name: the call's self)
            held = self.names.fresh("replaced")
            self.bind_name(held, self.operand(obj))
            obj = gast.copy_location(gast.Name(held, gast.Load(), None, None), obj)
        names = tuple(k.arg for k in node.keywords)
        func = gast.parse(f"{look_up}({obj.id}, {names!r}{', True' * method})").body[0].value
        for n in walk(func):
            if isinstance(n, gast.expr):
                gast.copy_location(n, node.func)
        return gast.copy_location(gast.Call(func=func, args=[obj], keywords=node.keywords),
                                  node)

    def replaced_object(self, node, obj):
        """`obj._replace(k=v)` (node; `Pt._replace(obj, k=v)` as desugared): the object
        replacer builds is of obj's kind, its methods (`q.prod()` of a namedtuple's own prod)
        read as obj's are, never as an array's."""
        call = self.replaced(node, obj, method=True)
        kind = self.container_kind(self.operand(call.args[0]))
        out = self.call(call)
        if isinstance(out, ir.Var) and kind not in (False, "list", "dict") \
                and out.name not in self.containers:
            self.containers[out.name] = kind
        return out

    def _kind_of_call(self, node):
        """`kind_of(x)(y)` (ad/helpers.py; y's items as x's kind of container, the cotangent
        of a `tuple(x)` whose x's kind is known only when the code runs), in a derivative
        differentiated again: a seq_as whose transpose is kind_of(y); None for other calls."""
        func = node.func
        if self.batching or not isinstance(func, gast.Call) or len(func.args) != 1 \
                or len(node.args) != 1 or node.keywords or func.keywords:
            return None
        helper = self._resolve(func.func)
        if getattr(helper, "__module__", "") != "secant.ad.helpers" \
                or getattr(helper, "__name__", "") != "kind_of":
            return None
        y = self.operand(node.args[0])
        if not isinstance(y, ir.Var):
            return None
        out = self._emit("seq_as", {"x": y}, {"kind": f"kind_of({self._source(func.args[0])})",
                                              "back": f"kind_of({y.name})"}, y.name)
        self.containers[out.name] = None
        return out

    def add_at_call(self, node, name):
        """add_at(tree, idx, item) (a cotangent added into a container's or an array's item) and
        its transpose add_at_grad(t, idx, item), in a derivative differentiated again: ops with
        rules of their own (linear), never read as source (their bodies branch on the kind of
        container, which a derivative of them cannot follow)."""
        first, item = (self.operand(node.args[k]) for k in (0, 2))
        first, item = (self.pack(o) if isinstance(o, ir.Seq) and _has_var(o) else o
                       for o in (first, item))
        operands = {"tree" if name == "add_at" else "t": first, "item": item}
        out = self._emit(name, operands, {"key": self._source(node.args[1])})
        like = first if name == "add_at" else item
        self.mark_container(getattr(out, "name", None), like)
        return out

    def fields_literal(self, node):
        """grad_of_fields(tree, {0: a_bar, ...}) in a derivative differentiated again: the
        fields' dict as a Seq (None for any other form, read as source)."""
        if len(node.args) not in (2, 4) or node.keywords \
                or not isinstance(node.args[1], gast.Dict) or None in node.args[1].keys:
            return None
        values = tuple(self.operand(v) for v in node.args[1].values)
        if not any(_has_var(v) for v in values):
            return None
        return ir.Seq(values, "dict", tuple(self._source(k) for k in node.args[1].keys))

    def opaque_call(self, node, fn):
        """A call the batching transform writes by a rule of its own (a derivative helper that
        builds containers): its arguments as they are, dict literals included."""
        operands = {}
        for i, a in enumerate(node.args):
            if isinstance(a, gast.Dict) and None not in a.keys:
                values = tuple(self.operand(v) for v in a.values)
                keys = tuple(self._source(k) for k in a.keys)
                operands[f"arg{i}"] = ir.Seq(values, "dict", keys) if any(
                    _has_var(v) for v in values) else self._inactive(a)
            else:
                operands[f"arg{i}"] = self.operand(a)
        operands.update({k.arg: self.operand(k.value) for k in node.keywords})
        return self._emit("call", operands, {}, f"{fn.__name__}_out", callee=fn,
                          callee_name=gast.unparse(node.func).strip())

    def random_call(self, node, fn):
        """A secant.random call under vmap: as written while no batched value flows in, else
        one call that the batching transform writes (batching/vectorize.py random_call)."""
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None
                                                                      for k in node.keywords):
            raise self.src.error(node, f"calls of {gast.unparse(node.func).strip()} with *args "
                                 "or **kwargs cannot be batched; pass arguments explicitly")
        operands = {f"arg{i}": self.operand(a) for i, a in enumerate(node.args)}
        operands.update({k.arg: self.operand(k.value) for k in node.keywords})
        return self._emit("call", operands, {}, fn.__name__, callee=fn,
                          callee_name=gast.unparse(node.func).strip())

    def _partial_as_lambda(self, node):
        """functools.partial(f, a, ...) of a named function with positional parameters, given
        to a transform written in place (`vmap(partial(net, p))(xs)`): the lambda it stands for,
        `lambda x: f(a, ..., x)`, whose free locals the transform holds fixed; else `node`."""
        import functools
        import inspect
        if not (isinstance(node, gast.Call) and self._resolve(node.func) is functools.partial
                and len(node.args) >= 2 and not node.keywords
                and not any(isinstance(a, gast.Starred) for a in node.args)):
            return node
        fn = self._resolve(node.args[0])
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return node
        rest = params[len(node.args) - 1:]
        if len(params) < len(node.args) - 1 or any(
                p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or
                p.default is not p.empty for p in rest):
            return node
        names = [self.names.fresh(p.name) for p in rest]
        text = (f"lambda {', '.join(names)}: {_unparse(node.args[0]).strip()}("
                + ", ".join([_unparse(a).strip() for a in node.args[1:]] + names) + ")")
        lam = gast.parse(text).body[0].value
        for n in walk(lam):
            if isinstance(n, (gast.expr, gast.stmt)):
                gast.copy_location(n, node)
        return lam

    def _made_by_factory(self, call, outer):
        """(the function `secant.vmap(f, in_axes=(0, None))` makes, for a call of it written in
        place (its arguments: functions by name, everything else literals), else _UNRESOLVED;
        the free locals its function closes over). A lambda or nested def closing over locals
        of the function being transformed (`grad(lambda y: y * w)`) is lifted to a function
        taking them as its last parameters, held fixed (argnums as written; in_axes None), so
        the transform of the caller reads them as arguments: `grad(lifted)(x, w)`."""
        factory = self._resolve(call.func)
        extra = []
        if not getattr(factory, "__secant_factory__", False):
            return _UNRESOLVED, extra

        def value(node, first=False):
            if first:
                node = self._partial_as_lambda(node)
                node = user_objects.bound_method_lambda(self._resolve, node)
            inner = self._resolve(node.func) if first and isinstance(node, gast.Call) and \
                node.args and not any(isinstance(a, gast.Starred) for a in node.args) and \
                all(k.arg for k in node.keywords) else None
            if getattr(inner, "__secant_factory__", None) in ("argnums", "in_axes"):
                made = value(node.args[0], first=True)     # jacfwd(grad(f, 1), 0): grad(f, 1)
                # made as the code would make it; a lifted function's free locals (trailing
                # parameters) are held fixed: vmap(grad(u))(xs) with u closing over params
                return _with_free(inner, [made] + [value(a) for a in node.args[1:]],
                                  {k.arg: value(k.value) for k in node.keywords}, len(extra))
            local_def = isinstance(node, gast.Name) and node.id in self.local_defs
            if isinstance(node, gast.Lambda) and not (node.args.vararg or node.args.kwarg) \
                    or local_def and first:
                fn_arg = self._function_arg(node, "", None)
                if not fn_arg[2]:       # a lambda with no free locals: a function of its own
                    return self._lift(fn_arg, self.names.fresh("lambda_"), [])
                if first and getattr(factory, "__secant_factory__", None) in ("argnums",
                                                                                "in_axes"):
                    extra[:] = fn_arg[2]
                    name = node.id if local_def else "lambda_"
                    return self._lift(fn_arg, self.names.fresh(name), fn_arg[2])
            if isinstance(node, (gast.Name, gast.Attribute, gast.Tuple)):
                v = self._resolve(node)     # (a tuple of them: in_axes=(axes, None) with axes
                if v is not _UNRESOLVED:    # a dict the function closes over)
                    return v
            try:
                return ast.literal_eval(_unparse(node).strip())
            except (ValueError, SyntaxError):
                raise self.src.error(node, f"secant reads {gast.unparse(call.func).strip()}(...) "
                                     "written in place when its function is named and its "
                                     "other arguments are literals; build it outside the "
                                     "function instead") from None
        first = call.args[0] if call.args else None
        held = isinstance(first, gast.Name) or isinstance(first, gast.Attribute) and \
            _root_name(first) is not None and not first.attr.startswith("__")
        if held and self.current.get(_root_name(first)) in self.tracked \
                and not outer.keywords and not any(isinstance(a, gast.Starred)
                                                   for a in outer.args):
            # vmap(model)(x) (vmap(model.energy)(x)) of a callable holding tracked values (a
            # module pytree): read as vmap(lambda a: model(a))(x), model closed over (unmapped,
            # as JAX holds it)
            params = [self.names.fresh("arg") for _ in outer.args]
            callee = _unparse(first).strip()
            lam = gast.parse(f"lambda {', '.join(params)}: {callee}({', '.join(params)})"
                             ).body[0].value
            gast.copy_location(lam, first)
            for n in walk(lam):
                if isinstance(n, (gast.expr, gast.arguments)) and hasattr(n, "lineno"):
                    gast.copy_location(n, first)
            _place(lam, first)
            call = gast.copy_location(gast.Call(func=call.func, args=[lam] + call.args[1:],
                                                keywords=call.keywords), call)
            first = lam
        if isinstance(first, gast.Name) and first.id in self.current \
                and self.current[first.id] not in self.tracked:
            # grad(f)(x) with f a parameter holding a function: only the running program knows
            # f; the call is a dynamic one (its dispatcher transforms grad(f) on first use)
            return _UNRESOLVED, extra
        inner = first
        while isinstance(inner, gast.Call) and inner.args and getattr(
                self._resolve(inner.func), "__secant_factory__", False):
            inner = inner.args[0]       # vmap(jacrev(obj.m)): the function under the factories
        if inner is not first and isinstance(inner, gast.Attribute) \
                and self.current.get(_root_name(inner), self.tracked) not in self.tracked \
                and not self._tracked_names_in(first):
            # obj.m of a parameter holding an object (its class known only when it runs):
            # a dynamic call, as grad(f) above
            return _UNRESOLVED, extra
        if inner is not first and isinstance(inner, gast.Name) and inner.id in self.current \
                and self.current[inner.id] not in self.tracked:
            # vjp_pullback(grad(f), x)(v), jacfwd(grad(f))(x) with f a parameter holding a
            # function: a dynamic call, as grad(f) above
            return _UNRESOLVED, extra
        if isinstance(first, gast.Call) and self._tracked_names_in(first) \
                and not outer.keywords and not first.keywords \
                and not any(isinstance(a, gast.Starred) for a in outer.args + first.args) \
                and closure_factories.is_factory(self._resolve(first.func)):
            # grad(make_loss(f, s))(p) with s tracked: grad(lambda p: make_loss(f, s)(p))(p),
            # s a free local of the lambda (the factory's body read where it is called)
            params = [self.names.fresh("arg") for _ in outer.args]
            lam = gast.parse(f"lambda {', '.join(params)}: _f({', '.join(params)})"
                             ).body[0].value
            lam.body.func = first
            _place(lam, first)
            call = gast.copy_location(gast.Call(func=call.func, args=[lam] + call.args[1:],
                                                keywords=call.keywords), call)
            first = lam
        if isinstance(first, gast.Call) and not self._tracked_names_in(first):
            maker = self._resolve(first.func)
            if maker is not _UNRESOLVED and not getattr(maker, "__secant_factory__", False) \
                    and not (callable(maker) and _is_library(maker)) \
                    and not isinstance(maker, type):
                # grad(make_loss(f))(z, theta): the function a user's factory makes, as the
                # running program makes it (a dynamic call, transformed on first use)
                return _UNRESOLVED, extra
        args = [value(a, k == 0) for k, a in enumerate(call.args)]
        kwargs = {k.arg: value(k.value) for k in call.keywords}
        if args and inspect.isfunction(args[0]) and callees.is_variadic(args[0]) and not any(
                isinstance(a, gast.Starred) for a in outer.args) and None not in (
                k.arg for k in outer.keywords):     # def f(*xs): for the call's shape
            args[0] = callees.specialise(args[0], len(outer.args) + len(extra),
                                         tuple(k.arg for k in outer.keywords))
        made = _with_free(factory, args, kwargs, len(extra))
        if getattr(made, "__secant_call_gen__", None) or getattr(made, "__secant_custom__", 0):
            return made, extra          # vmap(f): batched for what the call passes; checkpoint
        # (a function closing over locals, lifted: the call passes them, so it calls what the
        # factory made of the lifted function, which it must name: jacfwd(f, has_aux=True))
        return getattr(made, "__secant_generated__", None) or (
            made if extra else _UNRESOLVED), extra

    def _factory_called(self, func, node):
        """`make_loss(f, s)(p)` of a user's closure factory, as the call `make_loss_called(f,
        s, p)` of its body returning `loss(p)` (transformer/closure_factories.py), so that s
        is followed into loss (when it is tracked here, or in a transform of this function
        again); None for any other call."""
        if any(isinstance(a, gast.Starred) for a in func.args + node.args) or func.keywords \
                or node.keywords:
            return None
        maker = self._resolve(func.func)
        if maker is _UNRESOLVED or not closure_factories.is_factory(maker):
            return None
        called = closure_factories.called_form(maker, len(node.args))
        if called is None:
            return None
        name = self.names.fresh(called.__name__)
        self.bindings[name] = called
        callee = gast.copy_location(gast.Name(name, gast.Load(), None, None), func)
        return gast.copy_location(gast.Call(func=callee, args=list(func.args) + list(node.args),
                                            keywords=[]), node)

    def dynamic_call(self, node, func, base=None):
        """A callee only the running program knows (`self.layer(x)` with self a parameter,
        `fns[k](x)` with k data): `dynamic_call(fn, ...)`, whose derivative or batched form a
        dispatcher finds on first use (transformer/callees.py, secant/transforms.py). A callee
        holding tracked values itself (a model object, a pytree a library call rebuilds) is an
        active operand: the dispatcher transforms its class's __call__ with it as `self`."""
        maker = self._resolve(func.func) if isinstance(func, gast.Call) else None
        made_by_library = maker is not None and _is_library(maker) \
            and not getattr(maker, "__secant_dispatcher__", False) \
            and not getattr(maker, "__secant_factory__", False) \
            and maker is not builtins.getattr   # grad(f): f a parameter; getattr(snp, name)
        given = [a.value if isinstance(a, gast.Starred) else a for a in node.args] + \
            [k.value for k in node.keywords]
        if made_by_library and (maker is builtins.type and not any(   # type(c)(...) of
                self._tracked_names_in(a) for a in given)       # constants: as it is
                                or maker is not builtins.type and not self._tracked_names_in(func)):
            return self._inactive_call(node, func)   # np.frompyfunc(...)(x): no rule, ever
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None
                                                                      for k in node.keywords):
            return self.starred_call(node, func)
        clash = [k for k in node.keywords if _DISPATCH_NAMES.fullmatch(k.arg)]
        if clash:       # (s.replace(fn=f): a keyword named as the dispatcher's own parameters,
            return self.starred_call(gast.copy_location(gast.Call(   # passed in **{...})
                func=node.func, args=node.args, keywords=[
                    k for k in node.keywords if k not in clash] + [gast.keyword(
                        None, gast.copy_location(gast.Dict(
                            keys=[gast.copy_location(gast.Constant(k.arg, None), k.value)
                                  for k in clash], values=[k.value for k in clash]),
                            node))]), node), func)
        # a callee built from tracked values is never a constant (`C(a)(x)` once read a zero)
        built = self._tracked_names_in(func) and not (isinstance(func, gast.Attribute)
                                                     and isinstance(func.value, gast.Call))
        if maker is builtins.getattr and func.args and not self._tracked_names_in(func.args[0]):
            built, fn = False, ir.Expr(self._source(func))  # getattr(snp, self.act): picked
                                                            # by a name (no derivative)
        elif getattr(maker, "__secant_dispatcher__", False) and self._passed_again(node, func):
            # dispatch(fn, ...)(out_bar, fn, x) in a dispatcher (a derivative of it: hessian
            # of model(x)): the look-up reads fn's type, the call passes fn itself
            built, fn = False, ir.Expr(self._source(func))
        elif isinstance(base, ir.Var) and isinstance(func, gast.Attribute):
            # make(a).m(x): a method of the tracked object the call returned (read once; never
            # a constant, which once read a silent zero)
            built, fn = True, self.attribute_of(base, func)
        else:
            fn = self.operand(func) if built else None      # model(x), fns[k](x), C(a)(x)
        operands = {f"arg{i + 1}": self.operand(a) for i, a in enumerate(node.args)}
        operands.update({k.arg: self.operand(k.value) for k in node.keywords})
        if not (built and _has_var(fn)) and not any(_has_var(o) for o in operands.values()):
            return self._inactive(node)
        fn = self.operand(func) if fn is None else fn
        if isinstance(func, gast.Call) and maker is not builtins.getattr and not getattr(
                maker, "__secant_dispatcher__", False):
            # make()(x), a class a factory makes: made once, the forward's call and its
            # derivative's the same (made again there, a pytree class was another type)
            fn = self._named_operand(fn, "callee")
        if _has_var(fn) and not (isinstance(fn, ir.Var) and (isinstance(
                func, (gast.Name, gast.Attribute, gast.Subscript)) or made_by_library
                or maker is builtins.getattr or maker is _UNRESOLVED
                or isinstance(func, gast.Call))):
            # (getattr(m, name)(x): a method of m picked by a name; Registry[k](a)(x): an
            # object built when it runs, called through its class's __call__)
            raise self.src.error(node, f"the function {gast.unparse(func).strip()} is computed "
                                 f"from {self.what} values: secant cannot "
                                 f"{'batch' if self.batching else 'differentiate'} a call of "
                                 "a function chosen that way; choose it from static values")
        self._check_not_stateful_closure(node, func)
        objects = tuple(i for i in range(len(node.args))    # f(Dual(x, 1.0)): its operators
                        if self._may_be_object(operands[f"arg{i + 1}"]))    # are Dual's
        caller = callees.dynamic_caller(len(node.args), tuple(k.arg for k in node.keywords),
                                        objects)
        inner = func.value if isinstance(func, gast.Subscript) else func
        hint = inner.attr if isinstance(inner, gast.Attribute) else \
            inner.id.lower() if isinstance(inner, gast.Name) else \
            inner.args[-1].value.strip("_") if maker is callees.super_method else "call"
        out = self._emit("call", {"arg0": fn, **operands}, {}, f"{hint}_out", callee=caller,
                         callee_name="dynamic_call")
        if isinstance(out, ir.Var):
            self.dynamic_results.add(out.name)
        return out

    def _dynamic_result(self, name):
        """Whether `name` holds what a call of a function known only at run time returned
        (`keep(x)`, keep a parameter; generated code's `keep_out = dynamic_call(keep, x)`)."""
        return name in self.dynamic_results or any(
            isinstance(o, ir.Op) and o.targets == [name] and getattr(o.callee, "__secant_dispatch__",
                                                                  None) for o in self.out)

    def _builds_operator_object(self, node):
        """`Vec(a)` of a class Vec with operators (transformer/operators.py), or `tree_unflatten(
        tree_structure(Vec(a)), leaves)`, as transformer/desugar.py reads it where Vec is a
        pytree class (a plain class only once an object of it has been seen: read either way,
        what `Vec(a) + w` calls must not depend on that)."""
        if operators.has_operators(self._resolve(node.func)):
            return True
        inner = node.args[0] if len(node.args) == 2 else None
        if not (isinstance(inner, gast.Call) and inner.args and isinstance(inner.args[0],
                                                                           gast.Call)):
            return False
        cls = self._resolve(inner.args[0].func)
        return operators.has_operators(cls)

    def _passed_again(self, node, func):
        """Whether every tracked name the dispatcher call `func` reads is also an argument of
        the call `node` of what it returns: the function it finds then takes those values as
        arguments (an object as its `self`), it does not close over them (transforms.py
        _dispatch; one that binds the object, bound, is called without it)."""
        passed = {a.id for a in [a.value if isinstance(a, gast.Starred) else a
                                 for a in node.args] + [k.value for k in node.keywords]
                  if isinstance(a, gast.Name)}
        return self._tracked_names_in(func) <= passed

    def _argument(self, node, a):
        """An argument of the call `node`: `dispatch(fn, ...)` passed to a dispatcher's own
        derivative (`dynamic_call_vjp_1(t, dispatch(fn, ...), out_bar, fn, x1)`, a derivative
        of a dynamic call differentiated again) is the function found for fn, which the call
        passes too: a constant of this transform, as a dispatcher's callee is."""
        if isinstance(a, gast.Call) and getattr(self._resolve(a.func), "__secant_dispatcher__",
                                                False) and self._passed_again(node, a):
            return ir.Expr(self._source(a))
        return self.operand(a)

    def starred_call(self, node, func):
        """`f(x, *rest, k=v, **kw)` whose rest's length or kw's keys are known only when it
        runs (f's parameters unknown here: a function passed in, or kw a value passed in):
        `call_starred(f, x, rest, kw, k=v)`, which the transforms write as a dispatcher that
        spells the call out on first use of each shape (transformer/callees.py)."""
        stars = [i for i, a in enumerate(node.args) if isinstance(a, gast.Starred)]
        double = [k for k in node.keywords if k.arg is None]
        written = node
        if len(double) > 1:     # f(**a, **b): f(**{**a, **b}), Python's keyword order
            if not all(_plain_read(k.value) for k in double):   # (read twice: no effects)
                raise self.src.error(node, "secant spells out f(**a, **b) when each unpacked "
                                     "value is a name or an attribute (it checks their keys "
                                     "are distinct, as Python does); assign the others to "
                                     "names first")
            callee = gast.unparse(func).strip()
            self.out.append(ir.Plain(
                f"check_distinct({callee.split('(')[0]!r}, "
                f"{', '.join(self._source(k.value) for k in double)})", set(), self.origin))
            merged = gast.copy_location(gast.Dict(keys=[None] * len(double),
                                                  values=[k.value for k in double]), node)
            double = [gast.keyword(arg=None, value=merged)]
        if stars and stars != [len(node.args) - 1]:     # f(*a, x, *b): f(*[*a, x, *b])
            rest = gast.copy_location(gast.List(elts=node.args[stars[0]:], ctx=gast.Load()),
                                      node.args[stars[0]])
            node = gast.copy_location(gast.Call(func=node.func, args=node.args[:stars[0]] + [
                gast.copy_location(gast.Starred(value=rest, ctx=gast.Load()), rest)],
                keywords=node.keywords), node)
            stars = [len(node.args) - 1]
        inner = func.value if isinstance(func, gast.Subscript) else func
        hint = inner.attr if isinstance(inner, gast.Attribute) else \
            inner.id.lower() if isinstance(inner, gast.Name) else "call"
        positional = node.args[:-1] if stars else node.args
        star = node.args[-1].value if stars else None
        if isinstance(star, (gast.ListComp, gast.GeneratorExp)) and self._tracked_names_in(star):
            rest = [self.comprehension(star, hint=f"{hint}_args")]     # max(*[... for c in xs])
        else:
            rest = [self.operand(star)] if stars else []
        kw = [self.operand(double[0].value)] if double else []
        # (tracked ones are spelled out when the code runs: secant/transforms.py)
        rest, kw = ([self.pack(o) if isinstance(o, ir.Seq) and _has_var(o) else o for o in part]
                    for part in (rest, kw))
        maker = self._resolve(func.func) if isinstance(func, gast.Call) else None
        if getattr(maker, "__secant_dispatcher__", False) and self._passed_again(node, func):
            fn = ir.Expr(self._source(func))    # dispatch(fn, ...)(out_bar, x1, **kw): a
        else:                                   # derivative's, differentiated again
            fn = self.operand(func)
        named = [k for k in node.keywords if k.arg is not None]
        operands = {f"arg{i + 1}": self.operand(a) for i, a in enumerate(positional)}
        operands.update({f"arg{len(operands) + 1 + i}": o for i, o in enumerate(rest + kw)})
        operands.update({k.arg: self.operand(k.value) for k in named})
        if not _has_var(fn) and not any(_has_var(o) for o in operands.values()):
            return self._inactive(written)
        caller = callees.starred_caller(len(positional), bool(stars),
                                        tuple(k.arg for k in named), bool(double))
        name = self.names.fresh("call_starred")
        self.bindings[name] = caller
        return self._emit("call", {"arg0": fn, **operands}, {}, f"{hint}_out", callee=caller,
                          callee_name=name)

    def _starred_comprehensions_built(self, node):
        """`f(*[snp.shape(c) for c in xs])` of tracked xs, anywhere in `node` Python evaluates
        once: the unpacking reads the list the comprehension's loop builds (its items' queries per
        example under vmap), not the comprehension as written (a copy of node; node if none)."""
        if not any(isinstance(n, gast.Starred) for n in hygiene.walk(node)):
            return node         # (most nodes: no class built for them, issue 19)
        norm = self

        def built(a):
            if isinstance(a, gast.Starred) and isinstance(
                    a.value, (gast.ListComp, gast.GeneratorExp)) and \
                    norm._tracked_names_in(a.value):
                out = norm.operand(a.value)
                if isinstance(out, ir.Expr):
                    name = gast.Name(id=out.src, ctx=gast.Load(), annotation=None,
                                     type_comment=None)
                    return gast.copy_location(gast.Starred(value=gast.copy_location(
                        name, a.value), ctx=gast.Load()), a)
            return a

        class Built(gast.NodeTransformer):
            def visit_Starred(self, n):
                return built(n)

            def _scope(self, n):        # (evaluated sometimes, or in a scope of its own)
                return n
            visit_Lambda = visit_ListComp = visit_GeneratorExp = visit_DictComp = _scope
            visit_SetComp = visit_IfExp = visit_BoolOp = _scope

        return Built().visit(hygiene.copy_tree(node))

    def _aux_read_call(self, node, args, items=False):
        """range(self.n), int(self.n) of a tracked object's attribute: the number may be aux
        data of a registered class (a constant of every transform), known when the code runs:
        the call reads it by ad/helpers.py static_attribute, which refuses a leaf there. None
        when some other tracked value flows into the call. `items`: range(d["n"]) reads an int
        item of a dict by static_item too (an int is never differentiated or batched: a float
        given to int() may be, and int(d["n"]) inside another call is read from its source)."""
        nodes = list(node.args) + [k.value for k in node.keywords]
        swap = {}
        for a, o in zip(nodes, args):
            if isinstance(o, ir.Expr):
                continue
            if (held := self._aux_read(a, items)) is None:
                return None
            swap[id(a)] = held
        node = gast.copy_location(gast.Call(
            func=node.func, args=[swap.get(id(a), a) for a in node.args],
            keywords=[gast.keyword(k.arg, swap.get(id(k.value), k.value))
                      for k in node.keywords]), node)
        return node

    def _aux_read(self, a, items=False):
        """`static_attribute(obj, "n")` for the expression `obj.n`, `static_item(d, "n")` for
        `d["n"]` (a constant key), in arithmetic of such reads and untracked values
        (`self.n - 1`); None for any other."""
        if not self._tracked_names_in(a):
            return a
        if isinstance(a, gast.Call):
            return self._static_getter(a)
        if isinstance(a, gast.Name):
            value = self._single_static_def(a.id)
            return None if value is None else self._aux_read(value, items)
        if isinstance(a, gast.BinOp):
            left, right = self._aux_read(a.left, items), self._aux_read(a.right, items)
            return None if left is None or right is None else \
                gast.copy_location(gast.BinOp(left=left, op=a.op, right=right), a)
        if isinstance(a, gast.UnaryOp):
            operand = self._aux_read(a.operand, items)
            return None if operand is None else \
                gast.copy_location(gast.UnaryOp(op=a.op, operand=operand), a)
        if items and isinstance(a, gast.Subscript) and isinstance(a.value, gast.Name) \
                and a.value.id not in self.held and isinstance(a.slice, gast.Constant) \
                and isinstance(a.slice.value, (str, int)) and not isinstance(a.slice.value, bool):
            helper, key = "static_item", a.slice
        elif isinstance(a, gast.Attribute) and isinstance(a.value, gast.Name) \
                and a.value.id not in self.held and a.attr not in STATIC_ATTRIBUTES \
                and not a.attr.startswith("__"):
            if (static := self._static_property(a)) is not None:
                return static
            helper, key = "static_attribute", gast.Constant(a.attr, None)
        else:
            return None
        call = gast.Call(func=gast.Name(helper, gast.Load(), None, None),
                         args=[a.value, key], keywords=[])
        for n in walk(call):
            gast.copy_location(n, a)
        return call

    def _single_static_def(self, name):
        """A copy of the expression a local `name` is assigned, where that one plain assignment
        is its only binding and the names it reads are parameters never rebound or names of no
        local (`levels = 2 ** (self.bits - 1) - 1` read by float(levels)): recomputed where
        Python needs the number, it gives the same value. None for any other local."""
        defs, bound = [], set()
        for n in walk(self.node):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                bound.add(n.id)
                if n.id == name:
                    defs.append(n)
            elif isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not self.node:
                bound.add(n.name)
        if len(defs) != 1:
            return None
        stmt = next((n for n in walk(self.node) if isinstance(n, gast.Assign)
                     and len(n.targets) == 1 and n.targets[0] is defs[0]), None)
        if stmt is None or any(isinstance(n, gast.Name) and n.id in bound
                               for n in walk(stmt.value)):
            return None
        return copy.deepcopy(stmt.value)

    def _static_getter(self, call):
        """The expression `call` returns, for a call `g(p)` of a function (a property's getter:
        `functional.degree(self)`) whose body returns only static facts of its parameters
        (`self['_c'].shape[0] - 1`): its parameters replaced by the call's names, read in place
        where Python needs the int (range(self.degree + 1)); None for any other call."""
        if call.keywords or not all(isinstance(a, gast.Name) for a in call.args):
            return None
        return self._static_return(self._resolve(call.func), [a.id for a in call.args], call)

    def _static_return(self, fn, names, where):
        """_static_getter's expression of `fn` called with the names `names`, placed at the
        user's node `where`; None where fn returns anything else."""
        if not inspect.isfunction(fn):
            return None
        got = _GETTERS.get(fn.__code__, _NOT_READ)
        if got is _NOT_READ:
            got = _getter_return(fn)
            if got is _NOT_READ:
                return None
            _GETTERS[fn.__code__] = got
        if got is None or len(got[0]) != len(names):
            return None
        params, value = got
        expr = hygiene.copy_tree(value)
        swap = dict(zip(params, names))
        parents = {id(c): n for n in walk(expr) for c in gast.iter_child_nodes(n)}
        for n in walk(expr):
            if isinstance(n, gast.Call) and not (isinstance(n.func, gast.Name)
                                                 and n.func.id == "len"):
                return None
            if not isinstance(n, gast.Name) or n is getattr(parents.get(id(n)), "func", None):
                continue
            if n.id not in swap:
                return None         # (a global of the getter's module: not read here)
            up = parents.get(id(n))     # a parameter only queried: p['f'].shape, p.ndim
            while isinstance(up, gast.Subscript) and isinstance(up.slice, gast.Constant) \
                    and isinstance(up.slice.value, str) or isinstance(up, gast.Attribute) \
                    and up.attr not in _STATIC_ATTRIBUTES:
                up = parents.get(id(up))
            if not (isinstance(up, gast.Attribute) and up.attr in _STATIC_ATTRIBUTES or
                    isinstance(up, gast.Call) and getattr(up.func, "id", None) == "len"):
                return None
            n.id = swap[n.id]
        for n in walk(expr):
            if hasattr(n, "lineno"):
                gast.copy_location(n, where)
        return expr

    def _static_property(self, node):
        """_static_return's expression for `self.degree`, a property of the method's own class
        (its class known: _property_getter_call) returning a static fact of self's fields
        (`self._c.shape[0] - 1`), else None. (Run on a batched object, its getter would read
        the batch axis: static_attribute refuses an int read that way.)"""
        call = self._property_getter_call(node)
        if call is None:
            return None
        from secant.transformer.functionalize import _receiver_class
        cls = _receiver_class(self.src, node.value)
        fget = inspect.getattr_static(cls, node.attr, None)
        fget = getattr(fget, "fget", None) or getattr(fget, "func", None)
        return self._static_return(fget, [node.value.id], node)

    def _traced_aux(self, built):
        """The first argument of `C(a, k=v)`, a pytree class C's constructor (transformer/
        desugar.py _constructor reads it as a tree), that C keeps in its aux data and that is
        computed from tracked values: its position or keyword, else None."""
        cls = objects.node_class(self._resolve(built.func))
        if cls is None or any(isinstance(a, gast.Starred) for a in built.args) \
                or any(k.arg is None for k in built.keywords):
            return None
        keywords = {k.arg: k.value for k in built.keywords}
        for a in objects.constructor_aux(cls, len(built.args), list(keywords)):
            value = built.args[a] if isinstance(a, int) else keywords[a]
            if self._tracked_names_in(value) and self._field_of_parameter(value) is None:
                return a
        return None

    def _aux_checked(self, built):
        """C(a, k=v) with each aux argument `p.f` that is tracked as a field of a parameter p
        read by _field_of_parameter's check (a copy: the desugared tree is read again by other
        transforms)."""
        cls = objects.node_class(self._resolve(built.func))
        if cls is None or any(isinstance(a, gast.Starred) for a in built.args) \
                or any(k.arg is None for k in built.keywords):
            return built
        aux = objects.constructor_aux(cls, len(built.args), [k.arg for k in built.keywords])

        def checked(a, value):
            if a not in aux or not self._tracked_names_in(value):
                return value
            return self._field_of_parameter(value) or value
        return gast.copy_location(gast.Call(
            func=built.func, args=[checked(i, a) for i, a in enumerate(built.args)],
            keywords=[gast.keyword(k.arg, checked(k.arg, k.value)) for k in built.keywords]),
            built)

    def _field_of_parameter(self, a):
        """`static_attribute(p, "f")` (ad/helpers.py: the value, checked when the code runs)
        for an aux argument `p.f` read from a parameter p as given: a field of an object the
        caller passed (flax's `replace` copies `apply_fn=obj.apply_fn`, a field the object keeps
        in its aux data too); tracked only as part of p, and static unless the field is one of
        p's leaves, which the check refuses. None for any other expression."""
        every = {n.id for n in self.node.args.posonlyargs + self.node.args.args
                 + self.node.args.kwonlyargs}
        if not (isinstance(a, gast.Attribute) and isinstance(a.value, gast.Name)
                and a.value.id in every and self.current.get(a.value.id) == a.value.id
                and a.value.id not in self.held and not a.attr.startswith("__")):
            return None
        call = gast.Call(func=gast.Name("static_attribute", gast.Load(), None, None),
                         args=[copy.deepcopy(a.value), gast.Constant(a.attr, None)], keywords=[])
        for n in walk(call):
            gast.copy_location(n, a)
        return call

    def _aux_arguments_static(self, built):
        """tree_structure(C(a, k=v)): an argument C keeps in its aux data is part of the
        structure, which carries no derivative or batch axis; one computed from tracked values
        would be read as a constant (a silent zero): refused. (tree_unflatten of it, the
        constructor as desugar.py wrote it, is read as the call itself instead: op_call.)"""
        a = self._traced_aux(built)
        if a is not None:
            raise self._traced_aux_error(built, a)

    def _traced_aux_error(self, built, a):
        """The error for C(a, k=v) whose argument `a` (a position or keyword) C keeps in its
        aux data and that is computed from tracked values: a constant there (a silent zero)."""
        cls = objects.node_class(self._resolve(built.func))
        name = cls.__name__ if cls is not None else built.func.attr if isinstance(
            built.func, gast.Attribute) else gast.unparse(built.func).strip()
        what = f"argument {a + 1}" if isinstance(a, int) else f"argument {a}="
        return self.src.error(built, f"the {what} of {name}(...) is computed from {self.what} "
                              f"values, and {name} keeps it in its aux data (tree_flatten's "
                              "second part: a meta field, a struct field with pytree_node="
                              "False), which carries no "
                              f"{'batch axis' if self.batching else 'derivative'}: return it "
                              f"among {name}'s children, or compute it from static values")

    def _built_with_traced_aux(self, node):
        """C(a, k=v) of `tree_unflatten(tree_structure(C(a, k=v)), leaves)` (desugar.py
        _constructor) when an argument C keeps in its aux data is tracked, else None."""
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], gast.Call) \
                and op_for(self._resolve(node.func)) == "tree_structure" \
                and self._traced_aux(node.args[0]) is not None:
            return node.args[0]
        return None

    def _inactive_call(self, node, func, obj=None):
        """A call with no derivative rule: fine while no tracked value flows into it."""
        args = [self.operand(a) for a in node.args] + [self.operand(k.value) for k in node.keywords]
        if obj is getattr and len(args) == 2 and isinstance(args[0], ir.Expr) and \
                not self.batching:
            # getattr(jnp, self.act) of a differentiated self: a look-up in a constant by a
            # name (a string field, never differentiated)
            return self._inactive(node)
        conversion = conversion_error(obj)      # int(x), bool(x), range(n): JAX's error types
        if obj is bool and len(args) == 1 and not node.keywords:
            # the truth value of the concrete primal, as an `if` on it reads it (if_statement;
            # JAX's grad too): generated code's `cond = bool(keep_out)` transformed again
            if not self.batching:
                return self._inactive(node)
            if isinstance(args[0], ir.Var) and self._dynamic_result(args[0].name):
                return ir.Expr(f"static_truth({args[0].name})")
        if conversion is not None and any(not isinstance(a, ir.Expr) for a in args):
            held = self._aux_read_call(node, args, items=obj is range)
            if held is not None:
                return self._inactive(held)
            raise self.src.error(node, f"{obj.__name__}() of a {self.what} value: Python needs its "
                                 f"concrete value, which differs per "
                                 f"{'example' if self.batching else 'perturbation'}; keep it an "
                                 "array (secant.numpy functions, .astype) or compute it from "
                                 "static values", conversion)
        if self.batching and any(not isinstance(self.operand(a), ir.Expr)
                                 for a in _shape_arguments(obj, node)):
            raise self.src.error(node, f"{gast.unparse(func).strip()} of a batched value: the "
                                 "shape of its result depends on the value, which differs per "
                                 "example; use static shapes (or a size= argument)",
                                 ConcretizationSourceError)
        if any(not isinstance(a, ir.Expr) for a in args) and isinstance(
                getattr(obj, "__secant_opaque__", None), str):     # (its own explanation)
            raise self.src.error(node, obj.__secant_opaque__)
        if any(not isinstance(a, ir.Expr) for a in args) and inspect.isclass(obj) \
                and not _is_library(obj):       # C(a): an object holding tracked values
            from secant.transforms import plain_constructor
            built = plain_constructor(obj)     # (a plain class: its fields, as a pytree)
            if built is not None:
                return self.user_call(node, built)
            verb = "batch" if self.batching else "differentiate"
            name = gast.unparse(func).strip()
            from secant.tree_util import is_node_type, plain_refusal
            traced_aux = self._traced_aux(node) if is_node_type(obj) else None
            if traced_aux is not None:      # (State(x, x[0]) with a meta field x[0]; its trace
                error = self._traced_aux_error(node, traced_aux)    # may still follow it)
                error.global_flow = (f"a {self.what} value goes into the object {name}(...), "
                                     "which a source transform cannot follow")
                raise error
            descriptor = _user_descriptor(obj)
            if descriptor is not None:      # (`self.sigma = raw` runs Positive.__set__)
                field, kind = descriptor
                error = self.src.error(node, f"secant cannot {verb} through the object {name}"
                                     f"(...): its class's attribute {field} is a descriptor "
                                     f"({kind.__name__}, with its own __get__/__set__), "
                                     f"so setting or reading {field} runs {kind.__name__}'s "
                                     "code, which secant does not read as the object's "
                                     "fields; use a property or a plain field, or compute "
                                     "the value in __init__")
                error.global_flow = (f"a {self.what} value goes into the object {name}(...), "
                                     "which a source transform cannot follow")
                raise error
            why = plain_refusal(obj)
            why = f" ({obj.__name__}: {why})" if why else ""
            # a pytree class's C(a, k=v) is read as a tree (transformer/desugar.py _constructor)
            # only when each of its children is one argument as given (the others kept in its
            # aux data, untraced): advising a registration to a class registered already would
            # not help
            exact = "whose children (tree_flatten's first part) are each one of the arguments " \
                f"{name}(...) is given, as given, and whose aux data holds no traced value (an " \
                "argument its __init__ computes with, or a traced one kept in its aux data, " \
                "stops secant from reading the call as a tree)"
            if is_node_type(obj):
                fix = (f"{name} is a registered pytree, but this call of it is not read as a "
                       f"tree: secant reads C(...) of a pytree class C as one when C is "
                       f"registered {exact}; build it from its children alone here, or pass "
                       "the arrays themselves on and build the object where they are read")
            else:
                fix = (f"to return it or pass it on, register {name} as a pytree (tree_util."
                       "register_pytree_node_class or register_dataclass, or make it a "
                       f"namedtuple), as JAX needs too, {exact}")
            error = self.src.error(node, f"secant cannot {verb} through the object {name}(...)"
                                 f"{why} "
                                 f"built from {self.what} values and used as a value "
                                 "(returned, passed on, stored) or with fields set in a loop "
                                 "or branch: secant reads one held in a local and only called "
                                 "or read (m(x), m.method(x), m.w; m.w = v in the function's "
                                 "own body) or built in place (C(a)(x)) of a simple class (plain "
                                 "user classes, methods reading self's fields); " + fix)
            # the function's trace follows the object (secant/transforms.py _traced_per_call)
            error.global_flow = (f"a {self.what} value goes into the object {name}(...), "
                                 "which a source transform cannot follow")
            raise error
        if any(not isinstance(a, ir.Expr) for a in args):
            if self.batching and obj in (builtins.any, builtins.all):   # (as JAX: bool() of
                name = obj.__name__                                      # a vmapped tracer)
                raise self.src.error(node, (
                    f"{name}() needs the truth value of each item, and these are batched "
                    f"values, whose truth differs per example; use snp.{name}(snp.stack("
                    "[...])) for each example's answer"), BoolConversionSourceError)
            what = "has no batching rule for" if self.batching else "does not know the " \
                "derivative of"
            error = self.src.error(node, f"secant {what} {gast.unparse(func).strip()}: it is "
                                   "not a numpy/secant.numpy function with a rule, nor a Python "
                                   "function with source")
            root = func
            while isinstance(root, (gast.Attribute, gast.Subscript)):
                root = root.value
            if root is not func and isinstance(root, gast.Name) and not self._is_local(root.id):
                # _FRAMES.append(frame): a tracked value handed to a global object's method
                # (the transforms trace the function instead, on each call)
                error.global_flow = (f"a {self.what} value passes through {root.id}, a global "
                                     "object a source transform cannot follow")
            raise error
        return self._inactive(node)

    def _constant_array_method(self, node):
        """`w.dot(x)`, `v.clip(lo, hi)`: a method with an op (or a secant.numpy function) of a
        constant array, given tracked values: read as the op's call, as of a tracked array."""
        from secant.backends.array import Array
        from secant.backends.core import Tracer
        from secant.numpy.methods import function_of
        func = node.func
        if func.attr not in METHODS and function_of(func.attr) is None:
            return False
        obj = self._resolve(func)
        return isinstance(obj, types.MethodType) and isinstance(obj.__self__, (Array, Tracer)) \
            and bool(self._tracked_names_in(node))

    def array_method_call(self, node):
        """`x.repeat(2, axis=0)` of a tracked array (a method with no op of its own) as the call
        Python makes, `repeat(x, 2, axis=0)` of the secant.numpy function the method is."""
        from secant.numpy.methods import function_of
        fn = function_of(node.func.attr)
        if fn is None:
            raise self.src.error(node, f"secant arrays have no method .{node.func.attr}() "
                                 f"(called on a {self.what} array)")
        name = self.names.fresh(fn.__name__)
        self.src.imports[name] = self.bindings[name] = fn      # (secant's: no guard)
        func = gast.copy_location(gast.Name(name, gast.Load(), None, None), node.func)
        return gast.copy_location(gast.Call(func=func, args=[node.func.value] + list(node.args),
                                            keywords=node.keywords), node)

    def _resolve(self, func):
        """The object a callee expression names when it is a pure look-up (transformer/
        callees.py), else _UNRESOLVED; a chain of attributes of a free name is recorded as a
        guard (the derivative is generated again if it names something else later)."""
        obj = callees.resolve(self.src, self._is_local, func)
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if obj is not _UNRESOLVED and chain and isinstance(func, gast.Name):
            self.src.note(func.id, reversed(chain), obj)
        return obj

    def _is_local(self, name):
        return name in self.current or name in self.local_defs

    def op_call(self, node, opname, args, spelling=""):
        spec = OPS[opname]
        if opname == "tree_unflatten" and args and self._built_with_traced_aux(args[0]):
            return self.operand(self._built_with_traced_aux(args[0]))   # read as written
        if opname == "tree_structure" and self.batching and len(args) == 1 \
                and not node.keywords and isinstance(args[0], gast.Name):
            return self._inactive(node)     # one structure for every example: a static value
        if any(isinstance(a, gast.Starred) for a in args) or any(k.arg is None
                                                                for k in node.keywords):
            return self.starred_call(node, node.func)   # (spelled out when it runs)
        if opname in NUMPY_POSITIONAL and not spelling:     # sum(x, 0, f32): NumPy's order
            node, args = _numpy_keywords(node, NUMPY_POSITIONAL[opname], args)
            if any(k.arg == "dtype" for k in node.keywords):
                return self.reduction_dtype(node, opname, args)
            if opname in _MASKED_REDUCTIONS and any(k.arg in ("where", "initial")
                                                    for k in node.keywords):
                return self.masked_reduction(node, opname, args)
        if opname == "add_n" and (len(args) != 1 or node.keywords
                                  or not isinstance(args[0], (gast.List, gast.Tuple))):
            return self.builtin_sum(node, args)     # (else: add_n of the literal's items)
        if opname in ("maximum", "minimum") and len(args) == 1 and "default" in [
                k.arg for k in node.keywords] and {k.arg for k in node.keywords} <= {"default",
                                                                                   "key"}:
            return self.extremum_default(node, args[0])     # max(xs, default=d)
        if opname in ("maximum", "minimum") and len(args) != 2 and not node.keywords and args:
            return self.fold_extremum(node, args)    # max(a, b, c), max([a, b]), max(xs)
        if opname in ("maximum", "minimum") and len(args) == 1 and \
                [k.arg for k in node.keywords] == ["key"]:       # max(xs, key=f)
            picked = self.extremum_by_key(node, opname == "maximum")
            if picked is not None:
                return picked
            raise self.src.error(node, f"{opname[:3]}(xs, key=f) of {self.what} values is "
                                 "followed for a list or tuple secant sees built (a display, "
                                 "list(...), a comprehension); here xs may be anything: write "
                                 f"{opname[:3]}(list(xs), key=f)")
        if opname in ("maximum", "minimum") and len(args) != 2:
            raise self.src.error(node, "max()/min() are differentiated for two arguments; "
                                 "use snp.max/snp.min for an array")
        # precision= (jax's dot/matmul/einsum/conv): accepted and ignored, as on CPU XLA
        keywords = [k for k in node.keywords
                    if k.arg != "precision" or "precision" in spec.signature.parameters]
        renamed = KEYWORD_ALIASES.get(opname, {})
        try:
            bound = spec.signature.bind(*args, **{renamed.get(k.arg, k.arg): k.value
                                                  for k in keywords})
        except TypeError as e:
            raise _bad_call(self.src.error(node, f"bad arguments for {opname}: {e}")) from None
        operands, statics = {}, {}
        if opname == "stop_gradient" and "x" in bound.arguments:   # of a pytree: one per leaf
            tree = self.operand(bound.arguments.pop("x"))
            if self.container_kind(tree) is not False and _has_var(tree):
                return self.stop_gradient_tree(tree)
            operands["x"] = self.as_array(tree, node)
        for pname, value in bound.arguments.items():
            if opname == "tree_structure" and isinstance(value, gast.Call) and \
                    objects.node_class(self._resolve(value.func)) is not None:
                self._aux_arguments_static(value)
                operands[pname] = self._inactive(self._aux_checked(value))  # P(a, b) built for
                continue                                    # its structure (desugar.py)
            if pname in spec.arrays and opname in TREE_OPS + DICT_HELPER_OPS:   # a pytree:
                o = self.operand(value)
                operands[pname] = self.pack(o) if isinstance(o, ir.Seq) and _has_var(o) else o
            elif pname in spec.arrays:      # a tracked list passed as an array is stacked
                operands[pname] = self.as_array(self.operand(value), node)
            elif pname == spec.sequence:
                operands[pname] = self.as_sequence(self.operand(value), node)
            else:
                o = self.operand(value)
                if isinstance(o, ir.Var) and (self.batching or pname in spec.conditions):
                    operands[pname] = o     # a batched condition, or a traced one (no derivative)
                    continue
                if isinstance(o, (ir.Var, ir.Seq)) and opname in DICT_HELPER_OPS \
                        and pname == "keys":
                    operands[pname] = o     # a dict merged in, or `[k]` (a reverse loop's key
                    continue                # in pick's vjp): only its keys are read
                if isinstance(o, ir.Seq) and _has_var(o) and self.batching \
                        and pname == "start_indices" and opname in _PER_EXAMPLE_STARTS:
                    operands[pname] = self.pack(o)      # (0, i): starts per example
                    continue
                if isinstance(o, ir.Var) or _has_var(o):    # (a shape tuple holding one, too)
                    raise self.src.error(node, f"argument {pname} of {opname} must not depend on "
                                         f"{self.what} values")
                statics[pname] = _index_src(value, self) if pname == "idx" else o.src
        out = self._emit(opname, operands, statics, spelling=spelling)
        if opname in TREE_OPS + SPLIT_OPS and opname != "tree_structure" \
                and isinstance(out, ir.Var):
            self.containers[out.name] = None if opname == "tree_unflatten" else "list"
        return out

    def reduction_dtype(self, node, opname, args):
        """sum(a, dtype=d) (prod, cumsum, cumprod; mean, var, std of a float d) as jnp's: the
        reduction of a.astype(d), cast back to an integer or bool d (sum(int8) counts in int32,
        a bool's sum is any, its prod all)."""
        dtype_node = next(k.value for k in node.keywords if k.arg == "dtype")
        rest = [k for k in node.keywords if k.arg != "dtype"]
        d = self.operand(dtype_node)
        if _has_var(d) or len(args) != 1:
            raise _bad_call(self.src.error(node, f"bad arguments for {opname}: dtype= takes a "
                                           f"dtype, after the array"))
        dt = _static_dtype(self, dtype_node)
        if opname in ("mean", "var", "std") and (dt is None or dt.kind not in "fc"):
            raise self.src.error(node, f"{opname}(..., dtype=...) is transformed for a float or "
                                 f"complex dtype; for another, write {opname}(a).astype(dtype)")
        cast = self._emit("astype", {"x": self.as_array(self.operand(args[0]), node)},
                          {"dtype": d.src})
        if not isinstance(cast, ir.Var):        # nothing traced flows in: a constant
            return self._inactive(node)
        self.current[cast.name] = cast.name
        self.names.reserve(cast.name)
        call = gast.Call(func=node.func, args=[_name(cast.name)], keywords=rest)
        _set_location([call], node)
        out = self.op_call(call, opname, [_name(cast.name)])
        if dt is None or dt.kind in "biu":     # (sum(int8) counts in int32: cast back)
            out = self._emit("astype", {"x": out}, {"dtype": d.src})
        return out

    def masked_reduction(self, node, opname, args):
        """jnp's where= and initial= of a reduction, in ops every transform has rules for:
        sum(a, where=m) is sum(where(m, a, 0)) (prod's fill 1), initial= one more term
        (v + sum, v * prod, maximum(max(...), v)); max/min(a, where=m, initial=v) fill with v;
        mean is the masked sum over the mask's count (0/0: nan, as jnp's); var/std the masked
        mean of the squared deviations from the masked mean, over count - ddof; any/all fill
        with False/True. (max/min fill with v, not jnp's -inf/inf: the same values, but at an
        exact tie of a kept entry with v the masked-out entries share its derivative.)"""
        keywords = {k.arg: k.value for k in node.keywords}
        mask_node, init_node = keywords.pop("where", None), keywords.pop("initial", None)
        if init_node is not None and opname not in ("sum", "prod", "max", "min"):
            keywords["initial"] = init_node         # (refused by the binding, as by jnp)
        try:
            bound = OPS[opname].signature.bind(*args, **keywords)
        except TypeError as e:
            raise _bad_call(self.src.error(node, f"bad arguments for {opname}: {e}")) from None
        if opname in ("max", "min") and mask_node is not None and init_node is None:
            raise _bad_call(self.src.error(node, f"reduction operation {opname} does not have an "
                                           "identity, so to use a where mask one has to specify "
                                           "'initial' (as jnp)"))
        a = self.as_array(self.operand(bound.arguments.pop("a")), node)
        mask = None if mask_node is None else self.as_array(self.operand(mask_node), node)
        initial = None if init_node is None else self.as_array(self.operand(init_node), node)
        if not any(_has_var(o) for o in (a, mask, initial) if o is not None):
            return self._inactive(node)         # nothing traced flows in: a constant
        statics = {}
        for pname, value in bound.arguments.items():
            o = self.operand(value)
            if isinstance(o, ir.Var) or _has_var(o):
                raise self.src.error(node, f"argument {pname} of {opname} must not depend on "
                                     f"{self.what} values")
            statics[pname] = o.src
        ddof = statics.pop("ddof", "0")

        def masked(x, fill):
            return x if mask is None else self._emit("where", {"condition": mask, "x": x,
                                                               "y": fill}, {})

        def count(kept):        # how many entries the mask keeps (each entry, without one)
            ones = self._emit("ones_like", {"x": a}, {})
            return self._emit("sum", {"a": masked(ones, ir.Expr("0"))}, kept, hint="count")

        if opname in ("any", "all"):
            return self._emit(opname, {"a": masked(a, ir.Expr(str(opname == "all")))}, statics)
        if opname in ("sum", "prod"):
            out = self._emit(opname, {"a": masked(a, ir.Expr("0" if opname == "sum" else "1"))},
                             statics)
            if initial is not None:
                out = self._emit("add" if opname == "sum" else "multiply",
                                 {"x": initial, "y": out}, {})
            return out
        if opname in ("max", "min"):
            out = self._emit(opname, {"a": masked(a, initial)}, statics)
            if initial is not None:
                out = self._emit("maximum" if opname == "max" else "minimum",
                                 {"x": out, "y": initial}, {})
            return out
        if opname == "mean":
            total = self._emit("sum", {"a": masked(a, ir.Expr("0"))}, statics, hint="total")
            return self._emit("true_divide", {"x": total, "y": count(statics)}, {}, hint="mean")
        kept = {**statics, "keepdims": "True"}          # var, std: jnp's two passes
        total = self._emit("sum", {"a": masked(a, ir.Expr("0"))}, kept, hint="total")
        mean = self._emit("true_divide", {"x": total, "y": count(kept)}, {}, hint="mean")
        squares = self._emit("square", {"x": self._emit("subtract", {"x": a, "y": mean}, {})}, {})
        total = self._emit("sum", {"a": masked(squares, ir.Expr("0"))}, statics)
        n = count(statics)
        if ddof not in ("0", "0.0"):
            n = self._emit("subtract", {"x": n, "y": ir.Expr(ddof)}, {})
        out = self._emit("true_divide", {"x": total, "y": n}, {})
        return self._emit("sqrt", {"x": out}, {}) if opname == "std" else out

    def builtin_sum(self, node, args):
        """Python's sum(items) / sum(items, start) of differentiated values: a comprehension
        is a loop adding into a total (comprehension_sum), a list literal a chain of +
        ((start + a) + b), a tracked list an add_n; with a start, otherwise start + sum(items)."""
        start = _sum_start(node, self.src)
        if not args:
            raise self.src.error(node, "sum() takes the items to add")
        items = args[0]
        if isinstance(items, (gast.GeneratorExp, gast.ListComp)):
            if not _names_in(node) & {k for k, v in self.current.items() if v in self.tracked}:
                return self._inactive(node)
            if start is None or (len(items.generators) == 1 and not items.generators[0].ifs):
                return self.comprehension_sum(node, items)
        if isinstance(items, (gast.List, gast.Tuple)):
            return self.operand(_sum_chain(node, items, start))
        if start is not None:           # start + sum(items)
            plain = gast.copy_location(gast.Call(func=node.func, args=[items], keywords=[]),
                                       node)
            total = gast.copy_location(gast.BinOp(left=start, op=gast.Add(), right=plain), node)
            for n in (plain, total):
                n.end_lineno, n.end_col_offset = node.end_lineno, node.end_col_offset
            return self.operand(total)
        arg = self.operand(items)               # sum(b) of a tracked list (in generated code,
        if isinstance(arg, ir.Var) and (self.is_container(arg) or self.src.generated):  # one
            return self._emit("add_n", {"arrays": self.as_sequence(arg, node)}, {})
        if isinstance(arg, ir.Expr):            # nothing tracked flows in: a constant
            return self._inactive(node)
        if isinstance(arg, ir.Var):     # a list a call returns (islice(xs, 1, 3)) or an array:
            self.current[arg.name] = arg.name       # Python's own loop, 0 + x0 + x1 + ...
            self.names.reserve(arg.name)
            return self._fold_loop(_name(arg.name), gast.Constant(0, None), lambda a, b: (
                gast.BinOp(left=a, op=gast.Add(), right=b)), node)
        raise self.src.error(node, "sum() of arrays is differentiated for a list or a "
                             "comprehension, e.g. sum([a, b, c]); use snp.sum for an array")

    def at_update(self, node, base_node, index_node, method, base=None):
        if method == "get" and not node.keywords and not node.args:       # x.at[i].get(): x[i]
            return self.subscript(gast.copy_location(
                gast.Subscript(value=base_node, slice=index_node, ctx=gast.Load()), node))
        if method in ("divide", "power") and base is None:  # JAX's: x / ones_like(x).at[i].mul(v)
            x = self.operand(base_node)                     # (x ** ... for power)
            if isinstance(x, ir.Expr) and not self._tracked_names_in(node):
                return self._inactive(node)
            factors = self.at_update(node, base_node, index_node, "mul",
                                     base=self._emit("ones_like", {"x": x}, {}))
            return self._emit("true_divide" if method == "divide" else "power",
                              {"x": x, "y": factors}, {})
        ones = base is not None                             # (the factors of divide, power)
        base, index = self.operand(base_node) if base is None else base, None
        opname = AT_METHODS.get(method, "at_get" if method == "get" else None)
        statics = self._at_keywords(node, method)
        if len(node.args) != (method != "get"):
            raise self.src.error(node, f".at[...].{method}() takes "
                                 f"{'no' if method == 'get' else 'one'} value")
        values = self.operand(node.args[0]) if node.args else ir.Expr("None")
        if self.batching and any(isinstance(n, gast.Name) and self.current.get(n.id) in
                                 self.tracked for n in walk(index_node)):   # (a tuple too)
            parts = index_node.elts if isinstance(index_node, gast.Tuple) else [index_node]
            index = [None if isinstance(p, gast.Slice) else self.operand(p) for p in parts]
            index = index[0] if not isinstance(index_node, gast.Tuple) else \
                None if all(not isinstance(i, ir.Var) for i in index) else \
                self.index_parts(index_node)            # x.at[:, o]: parts_index (batching/)
        if self.batching and isinstance(index, (ir.Var, ir.Seq)):   # (shape queries are not)
            if opname is None:
                raise self.src.error(node, "a batched index in .at[...] is batched when it is "
                                     "one value (an integer array, or a tuple of them); name "
                                     "it first (i = ...; x.at[i]), or build a mask and use "
                                     "snp.where")
            operands = {"a": base, "idx": index} if method == "get" else \
                {"a": base, "values": values, "idx": index}
            return self._emit(opname, operands, statics, _at_hint(base, method))   # per example
        if isinstance(base, ir.Expr) and isinstance(values, ir.Expr):
            return self._inactive(node) if not ones else self._emit(    # (divide's factors)
                opname, {"a": base, "values": values},
                {"idx": _index_src(index_node, self), **statics})
        if opname is None:
            raise self.src.error(node, f"the derivative of .at[...].{method}() is not "
                                 f"supported yet; use one of {sorted(AT_METHODS)}")
        if method in ("min", "max") and statics.get("mode", "").strip("'\"") == "clip" \
                and not self.batching:
            raise self.src.error(node, f"the derivative of .at[...].{method}(mode='clip') is "
                                 "not supported yet; clip the index (snp.clip) and update with "
                                 "the default mode")
        operands = {"a": base} if method == "get" else {"a": base, "values": values}
        return self._emit(opname, operands, {"idx": _index_src(index_node, self), **statics},
                          _at_hint(base, method))

    def _at_keywords(self, node, method):
        """The keywords of x.at[i].<method>(...) (mode=, fill_value=, ...), static: the op
        carries them (ad/index_modes.py: what a mode means for the rules)."""
        allowed = ("indices_are_sorted", "unique_indices", "mode") + \
            (("fill_value",) if method == "get" else ())
        statics = {}
        for k in node.keywords:
            if k.arg not in allowed:
                raise self.src.error(node, f".at[...].{method}() takes no keyword {k.arg!r} "
                                     f"(it takes {', '.join(allowed)})")
            value = self.operand(k.value)
            if not isinstance(value, ir.Expr) or _has_var(value):
                raise self.src.error(node, f"the {k.arg}= of .at[...].{method}() must not "
                                     f"depend on {self.what} values")
            statics[k.arg] = value.src
        return statics

    def user_call(self, node, fn):
        if getattr(fn, "__secant_opaque__", None) and \
                getattr(fn, "__secant_generated__", None) is None:  # (no source of its own)
            raise self.src.error(node, str(getattr(fn, "__secant_source_error__", None)
                                           or fn.__secant_opaque__))
        if getattr(fn, "__secant_no_reverse__", None):
            operands = [self.operand(a) for a in node.args] + \
                [self.operand(k.value) for k in node.keywords]
            if any(_has_var(o) for o in operands) and self.batching:
                error = self.src.error(node, f"vmap of {fn.__name__} (in the derivative of "
                                       "a lax loop, as written or staged by jit from a Python "
                                       "loop over a traced array) is not supported yet: vmap "
                                       "the derivative eagerly, loop "
                                       "in Python over a concrete range or list, or differentiate "
                                       "the vmapped loss (secant.grad of a sum over the batch)")
                error.lax_loop_derivative = True    # secant/batch.py: jit falls back to the
                raise error                         # derivative's Python loop
            if any(_has_var(o) for o in operands):
                error = self.src.error(node, fn.__secant_no_reverse__)
                error.lax_loop_derivative = True    # jit falls back to the Python loop
                raise error
            return self._inactive(node)
        if callees.type_predicate(fn) and not any(
                isinstance(a, gast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
            return self._inactive(node)     # is_array(x): a bool of its argument's type
        if self._tracked_names_in(node) and (static := self._static_getter(node)) is not None:
            return self.operand(static)     # n = self.degree: a static fact of self's fields
        refused = callees.unsupported(fn, self.what)
        if refused and self._tracked_names_in(node):
            raise self.src.error(node, refused)
        if not self.batching and not self.src.generated and self._tracked_names_in(node) \
                and nonlocals.mutates_outside(fn) == "read":
            # (its derivative recomputes it: the state it reads is then the state it left)
            error = self.src.error(node, f"{fn.__name__} changes an object it is given or "
                                   "closes over and reads it back: a derivative that computes "
                                   "it again would read what the first run left there")
            error.global_flow = f"{fn.__name__} reads back Python state it changes"
            raise error
        node = self._double_star_expanded(node, fn)     # f(x, **p["ln"])
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None
                                                                      for k in node.keywords):
            return self.starred_call(node, node.func)
        if callees.is_variadic(fn) and inspect.isfunction(fn):    # def f(*xs): one per call shape
            fn = callees.specialise(fn, len(node.args), tuple(k.arg for k in node.keywords))
        fn = defaults.for_call(fn, len(node.args), {k.arg for k in node.keywords})  # (constant
        try:                                    # defaults left out: their static ifs folded)
            callees.signature_of(fn, follow_wrapped=False).bind(
                *node.args, **{k.arg: k.value for k in node.keywords})
        except TypeError as e:
            raise _bad_call(self.src.error(node, f"bad arguments for {fn.__name__}: {e}")) \
                from None
        operands = {f"arg{i}": self._argument(node, a) for i, a in enumerate(node.args)}
        operands.update({k.arg: self._argument(node, k.value) for k in node.keywords})
        if not self.batching:           # a dict argument is one value (its cotangent a dict)
            operands = {k: self.pack(o) if isinstance(o, ir.Seq) and o.kind == "dict"
                        and _has_var(o) else o for k, o in operands.items()}
            operands = self.structure_only(fn, operands)
        name = self.runnable_name(node.func, fn)
        objects = [self._object_flag(operands.get(f"arg{i}")) for i in range(len(node.args))]
        if any(objects) and inspect.isfunction(fn):     # helper(v) of a user object v: its
            remade = getattr(fn, "__secant_objects_remade__", None)  # operators read as v's
            fn = remade(objects) if remade else operators.objects_form(fn, objects)  # class's
        out = self._emit("call", operands, {}, f"{callees.short_name(fn)}_out", callee=fn,
                         callee_name=name)
        if (any(objects) or operators.may_build_one(fn)) and isinstance(out, ir.Var):
            self.object_ops.append(self.out[-1])        # (what it returns may be one too)
        if getattr(fn, "__secant_dispatch__", None) and isinstance(out, ir.Var):
            self.dynamic_results.add(out.name)      # (generated code's dynamic_call(fn, x))
        return out

    def _double_star_expanded(self, node, fn):
        """`f(x, **d)` with d a name or an item of one (a dict of parameters, `**p["ln"]`) and f
        a plain function: each parameter f has left read from d by name, `d["gamma"]`, or
        `d.get("eps", 1e-05)` for one with a constant default (a key d lacks takes the
        default, as Python; d's other keys are not read). Else `node` as it is."""
        stars = [k for k in node.keywords if k.arg is None]
        if len(stars) != 1 or any(isinstance(a, gast.Starred) for a in node.args) \
                or not inspect.isfunction(fn) or callees.is_variadic(fn):
            return node
        d = stars[0].value
        base = d
        while isinstance(base, gast.Subscript) and isinstance(base.slice, gast.Constant):
            base = base.value
        if not isinstance(base, gast.Name):
            return node
        try:
            params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
        except (TypeError, ValueError):
            return node
        given = {k.arg for k in node.keywords if k.arg is not None}
        P = inspect.Parameter
        keywords = [k for k in node.keywords if k.arg is not None]
        dsrc = gast.unparse(d).strip()
        for i, p in enumerate(params):
            if p.kind in (P.POSITIONAL_ONLY, P.VAR_POSITIONAL, P.VAR_KEYWORD) or p.name in given \
                    or (p.kind == P.POSITIONAL_OR_KEYWORD and i < len(node.args)):
                continue
            if p.default is P.empty:
                value = f"{dsrc}[{p.name!r}]"
            elif type(p.default) in (int, float, bool, str, type(None)) and \
                    repr(p.default) not in ("nan", "inf", "-inf"):
                value = f"{dsrc}.get({p.name!r}, {p.default!r})"
            else:
                return node
            expr = gast.parse(value, mode="eval").body
            for n in walk(expr):
                gast.copy_location(n, node)
            keywords.append(gast.keyword(arg=p.name, value=expr))
        allowed = tuple(k.arg for k in keywords[len(given):])
        keys = self._known_keys(d)
        extra = [k for k in keys or () if k not in allowed]
        if extra:           # Python's TypeError (the spelled-out call would ignore the key)
            raise self.src.error(node, f"{fn.__name__}() got an unexpected keyword argument "
                                 f"{extra[0]!r}", ArgumentSourceError)
        checked = d
        if not isinstance(d, gast.Name) and (len(keywords) > len(given) + 1 or keys is None):
            key = d.slice.value                                 # read once
            held = self.names.fresh(f"{key}_kwargs" if isinstance(key, str) and
                                    key.isidentifier() else "kwargs")
            self.bind_name(held, self.operand(d))
            checked = gast.Name(held, gast.Load(), None, None)
        if keys is None:    # ... or when the code runs
            self.out.append(ir.Plain(f"check_keywords({self._source(checked)}, {allowed!r}, "
                                     f"{fn.__name__!r})", set(), self.origin))
        if checked is not d:
            for k in keywords[len(given):]:
                for n in walk(k.value):
                    if isinstance(n, (gast.Call, gast.Subscript)) and n is not None:
                        inner = n.func.value if isinstance(n, gast.Call) else n.value
                        if gast.unparse(inner).strip() == dsrc:
                            if isinstance(n, gast.Call):
                                n.func.value = gast.Name(held, gast.Load(), None, None)
                            else:
                                n.value = gast.Name(held, gast.Load(), None, None)
                            break
        new = gast.Call(func=node.func, args=node.args, keywords=keywords)
        for n in walk(new):
            if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
                gast.copy_location(n, node)
        return gast.copy_location(new, node)

    def _known_keys(self, d):
        """The keys of the dict `d` names when they are known here (a constant dict, a dict
        display), else None."""
        known = callees.resolve(self.src, self._is_local, d)
        if type(known) is dict:
            return list(known)
        held = self.operand(d) if isinstance(d, gast.Name) else None
        if isinstance(held, ir.Seq) and held.kind == "dict":
            try:
                return [ast.literal_eval(k) for k in held.keys]
            except ValueError:
                return None
        return None

    def _refuse_builtin(self, node, obj):
        """A builtin call on tracked values that has no derivative: a clear error at its line
        (pow with a modulus; sorted of the values themselves, whose order they decide)."""
        name = gast.unparse(node.func).strip()
        if obj is builtins.pow and (len(node.args) == 3 or any(k.arg == "mod"
                                                               for k in node.keywords)):
            raise self.src.error(node, f"{name}(base, exp, mod) of a {self.what} value: a "
                                 "modular power takes integers, which have no derivative; "
                                 "compute it from static values")
        inner = self.src.globals.get("__name__") == "secant.builtin_sources"
        if obj is builtins.sorted and (inner or not any(k.arg == "key" for k in node.keywords)):
            raise self.src.error(node, f"{'sorted' if inner else name}() of {self.what} values "
                                 "(or by a key computed from them): the order depends on the "
                                 "values; sort an array with snp.sort / snp.argsort instead, or "
                                 "sort by a key of static values", ConcretizationSourceError)

    def runnable_name(self, func, fn):
        """How generated code names the callee `fn` for its value: as written, unless fn cannot
        run as written (an in-place array update): then a name bound to its runnable form
        (transformer/runnable.py), the user's own name where the call wrote a plain name."""
        written = gast.unparse(func).strip()
        source = getattr(fn, "__secant_specialises__", None) or fn     # (max(a, b): max(*args))
        if getattr(source, "__module__", None) == "secant.builtin_sources" \
                and getattr(source, "__secant_runs_as__", None):
            name = self.names.fresh(source.__secant_runs_as__)  # reversed(xs)'s items as a list:
            self.bindings[name] = source                        # what its derivative indexes
            return name
        form = runnable(fn)
        if form is fn:
            return written
        name = written if isinstance(func, gast.Name) else \
            self.names.fresh(callees.short_name(fn))
        self.bindings[name] = form
        return name

    def loop_vjp_call(self, node, fn):
        """Under vmap of a derivative: the reverse pass of a lax loop, a rule helper
        (fori_loop_vjp, scan_vjp, map_vjp, while_loop_vjp) called with the body's generated
        vjp. Its operands as they are (closed/consts item by item); the vjp function is kept
        on the op (`loop_fns`) so the vectorizer can call that function's batched version."""
        try:
            bound = inspect.signature(fn).bind(*node.args,
                                               **{k.arg: k.value for k in node.keywords})
        except TypeError as e:
            raise self.src.error(node, f"bad arguments for {fn.__name__}: {e}") from None
        operands, fns = {}, {}
        for pname, value in bound.arguments.items():
            if pname == "body_fun":     # while_loop_vjp: the body (and its cond), lifted
                # (batched before, with a test per example: that test is its `active`)
                cond = self.while_conds.get(self._source(value)) or bound.arguments.get("active")
                if cond is None:
                    raise self.src.error(node, f"vmap of {fn.__name__}: secant cannot see the "
                                         "loop's condition")
                operands[pname] = ir.Expr(self._source(value))
                for key, fnode in (("body_fun", value), ("cond_fun", cond)):
                    fn_arg = self._function_arg(fnode, "while_loop", 1)
                    fns[key] = self._lift(fn_arg, key, fn_arg[2])
                    operands[f"{key}_free"] = ir.Seq(tuple(
                        ir.Var(self.current[n]) if self.current[n] in self.tracked
                        else ir.Expr(self.current[n]) for n in fn_arg[2]), "tuple")
            elif pname == "active":     # (read as the body's cond above)
                operands[pname] = ir.Expr(self._source(value))
            elif pname in ("body_vjp", "f_vjp"):
                obj = self._resolve(value)
                if obj is _UNRESOLVED or not callable(obj):
                    raise self.src.error(node, f"vmap of {fn.__name__}: secant cannot see which "
                                         f"function {self._source(value)} is")
                fns[pname] = obj
                operands[pname] = ir.Expr(self._source(value))
            elif pname in ("closed", "consts") and isinstance(value, gast.Tuple):
                operands[pname] = ir.Seq(tuple(self.operand(e) for e in value.elts), "tuple")
            else:
                operands[pname] = self.operand(value)
        if not any(_has_var(o) for o in operands.values()):
            return self._inactive(node)
        name = self.names.fresh(f"{fn.__name__}_out")
        op = ir.Op([name], "call", operands, {}, self.origin, fn,
                   gast.unparse(node.func).strip())
        op.loop_fns = fns
        self.out.append(op)
        self.tracked.add(name)
        return ir.Var(name)

    def call_form(self, node, func, form):
        """secant.jvp(f, (x,), (v,)) in user code is read as the call of the function it runs,
        secant.jvp_fn(f)(x, v), so a transform of the caller goes through the generated jvp."""
        name, make = form
        args = node.args
        if name == "jvp_fn" and not node.keywords and len(args) == 3 and \
                self._known_at_run_time(args[0]):
            # jvp(grad(f), primals, tangents) with f a parameter: how many primals f takes is
            # known when it runs: jvp_closed(grad(f))(primals, tangents), a call of a function
            # known at run time (generated on first use, cached by the function)
            from secant.transforms import jvp_closed
            made = self.names.fresh("jvp_closed")
            self.bindings[made] = jvp_closed
            call = gast.Call(func=gast.Call(func=gast.Name(made, gast.Load(), None, None),
                                            args=[args[0]], keywords=[]),
                             args=list(args[1:]), keywords=[])
            for n in (call, call.func, call.func.func):
                _place(n, node)
            return self.call(call)
        if not node.keywords and len(args) == 3 and any(isinstance(a, gast.Name)
                                                        for a in args[1:]):
            args = self._spelled_tuples(node, args)
        if (node.keywords or len(args) != 3
                or not all(isinstance(a, (gast.Tuple, gast.List)) for a in args[1:])):
            raise self.src.error(node, "secant transforms a jvp call written as "
                                 "secant.jvp(f, (x, ...), (v, ...)), with tuple literals and no "
                                 f"keywords; or call secant.{name}(f)(x, ..., v, ...)")
        made_here = isinstance(args[0], gast.Call)      # jvp(grad(f), ...): grad(f) now
        local_def = isinstance(args[0], gast.Name) and args[0].id in self.local_defs and \
            args[0].id not in self.current
        if isinstance(args[0], gast.Lambda):
            args, fn = self._closed_lambda_form(args)
        elif made_here or local_def:
            if local_def:   # jvp(f, ...) of a nested def: f lifted, as grad(f) reads it
                fn_arg = self._function_arg(args[0], "jvp", None)
                extra = fn_arg[2]
                fn = self._lift(fn_arg, self.names.fresh(args[0].id), extra)
                made_here = True        # (bound by name: it takes its free locals too)
            else:
                fn, extra = self._made_by_factory(args[0], node)
            if extra:       # (its lifted function's free locals: held fixed, zero tangents)
                args = [args[0], _with_items(args[1], [gast.Name(p, gast.Load(), None, None)
                                                       for p in extra]),
                        _with_items(args[2], [gast.parse(f"zeros_like_tree({p})").body[0].value
                                              for p in extra])]
                for a in args[2].elts[-len(extra):]:
                    _place(a, node)
        else:
            fn = self._resolve(args[0])
        if fn is _UNRESOLVED:
            raise self.src.error(args[0], f"secant cannot see which function "
                                 f"{gast.unparse(args[0]).strip()} is here")
        # (the primals given: the first ones of fn's; tangents by keyword after a default)
        made_fn, argnums, keywords = make(fn, len(args[1].elts))
        if isinstance(func, gast.Attribute) and not made_here:   # secant.jvp_fn(f), as spelled
            more = f", argnums={argnums}" if argnums is not None else ""
            callee = gast.parse(f"{gast.unparse(func.value).strip()}.{name}"
                                f"({gast.unparse(args[0]).strip()}{more})").body[0].value
        else:                                       # (jvp imported by name: bound by name)
            made = self.names.fresh(f"{callees.short_name(fn)}_{name}")
            self.bindings[made] = made_fn
            callee = gast.Name(made, gast.Load(), None, None)
        tangents = list(args[2].elts)
        call = gast.Call(func=callee, args=list(args[1].elts) + (tangents if keywords is None
                                                                  else []),
                         keywords=[] if keywords is None else
                         [gast.keyword(k, t) for k, t in zip(keywords, tangents)])
        gast.copy_location(call, node)
        out = self.user_call(call, made_fn)
        if name != "jvp_fn" or not self.batching or not isinstance(out, (ir.Var, ir.Expr)):
            return out
        # (vmap: JAX's float0 tangent of each integer output, as the call of secant.jvp gives)
        from secant.ad.jvp_helpers import float0_tangents
        made = self.names.fresh("float0_tangents")
        self.bindings[made] = float0_tangents
        if isinstance(out, ir.Expr):        # (of no batched value: as it is written)
            return ir.Expr(f"{made}({out.src})")
        return self._emit("call", {"arg0": out}, {}, "jvp_out", callee=float0_tangents,
                          callee_name=made)

    def _known_at_run_time(self, fn):
        """Whether function expression `fn` names a function only the running program knows:
        a parameter (or a factory's call of one: grad(f)), not a local def or lambda."""
        if isinstance(fn, gast.Call):
            factory = self._resolve(fn.func)
            return getattr(factory, "__secant_factory__", False) and bool(fn.args) and \
                self._known_at_run_time(fn.args[0])
        return isinstance(fn, gast.Name) and fn.id not in self.local_defs and \
            self._resolve(fn) is _UNRESOLVED

    def _spelled_tuples(self, node, args):
        """jvp(f, primals, tangents) with the tuples in variables: unpacked first into as many
        names as f takes positional parameters (`primals_0, = primals`), then read as written
        with tuple literals."""
        fn = args[0]
        if isinstance(fn, gast.Call):
            fn = self._made_by_factory(fn, node)[0]
        elif isinstance(fn, (gast.Name, gast.Attribute)):
            fn = self._resolve(fn)
        try:
            n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                    for p in inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return args
        out = list(args)
        for k in (1, 2):
            if isinstance(args[k], gast.Name):
                names = [self.names.fresh(f"{args[k].id}_{i}") for i in range(n)]
                target = gast.Tuple([gast.Name(m, gast.Store(), None, None) for m in names],
                                    gast.Store())
                self.assign_tuple(target, args[k], node)
                out[k] = gast.copy_location(gast.Tuple(
                    [gast.Name(m, gast.Load(), None, None) for m in names], gast.Load()), args[k])
        return out

    def _closed_lambda_form(self, args):
        """`jvp(lambda y: g(y, w), (x,), (v,))` with `w` a local: the lambda takes its free
        locals as parameters of their own, held constant (zero tangents), `jvp(lambda y, w:
        g(y, w), (x, w), (v, zeros_like_tree(w)))`; returns the new arguments and the function."""
        lam, primals, tangents = args
        fn_arg = self._function_arg(lam, "jvp", None)
        free = fn_arg[2]
        new = copy.deepcopy(lam)
        new.args.args += [gast.Name(p, gast.Param(), None, None) for p in free]
        zeros = [gast.parse(f"zeros_like_tree({p})").body[0].value for p in free]
        for z in zeros:
            _place(z, lam)
        primals = type(primals)(list(primals.elts) + [gast.Name(p, gast.Load(), None, None)
                                                      for p in free], gast.Load())
        tangents = type(tangents)(list(tangents.elts) + zeros, gast.Load())
        _place(new, lam)
        return [new, primals, tangents], self._lift(fn_arg, self.names.fresh("lambda_"), free)

    # --- secant.lax control flow ----------------------------------------------------------------
    # Functions passed to cond/switch/fori_loop/scan/map are resolved now: a name of a function
    # (global or closure), or a lambda written in the call. A lambda's free variables that are
    # local to the function being transformed become extra parameters of a function of its own
    # (the "lifted" function), differentiated ones first, so its derivative can return their
    # cotangents; forward code keeps the call exactly as written.
    _FUNCTION_PARAMS = {"cond": ("true_fun", "false_fun"), "switch": ("branches",),
                        "fori_loop": ("body_fun",), "scan": ("f",), "map": ("f",),
                        "while_loop": ("cond_fun", "body_fun")}
    _LIFTED_NAMES = {"true_fun": "true_fun", "false_fun": "false_fun", "body_fun": "body_fun",
                     "cond_fun": "cond_fun"}

    # the parameters of `lambda carry, x: self.step(carry, x)` for a method passed to lax.<kind>
    _LAMBDA_PARAMS = {("scan", 2): ("carry", "x"), ("fori_loop", 2): ("i", "val"),
                      ("while_loop", 1): ("val",), ("map", 1): ("x",)}

    def _bound_lax_call(self, node, fn, name):
        """The arguments of a call of lax.`name` as written, bound to fn's signature."""
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None
                                                                      for k in node.keywords):
            raise self.src.error(node, f"lax.{name} with *args or **kwargs cannot be "
                                 "transformed yet; pass the operands explicitly")
        try:
            return inspect.signature(fn).bind(*node.args,
                                              **{k.arg: k.value for k in node.keywords})
        except TypeError as e:
            raise self.src.error(node, f"bad arguments for lax.{name}: {e}") from None

    def control_flow(self, node, kind, lax_fn, carries=None):
        """A lax loop or branch; `carries`: under vmap of a derivative, the rule helper (e.g.
        fori_loop_with_carries) that runs the loop of this kind and also returns the carry each
        step started from (batching/vectorize.py batches it as it batches the loop)."""
        args = dict(self._bound_lax_call(node, lax_fn, kind).arguments)
        if "operand" in args:       # lax.cond(p, f, g, operand=x): JAX's one named operand
            if args.get("operands"):
                raise self.src.error(node, f"lax.{kind}: if the 'operand' keyword is passed "
                                     "then no operands can be passed positionally")
            args["operands"] = (args.pop("operand"),)
        if kind == "switch":
            fn_nodes = self._switch_branches(node, args["branches"])
            names = [f"branch_{k}" for k in range(len(fn_nodes))]
        else:
            fn_nodes = [args[p] for p in self._FUNCTION_PARAMS[kind]]
            names = [{"f": f"{kind}_fun"}.get(p, p) for p in self._FUNCTION_PARAMS[kind]]
        arity = {"fori_loop": 2, "scan": 2, "map": 1, "while_loop": 1}.get(
            kind, len(args.get("operands", ())))
        fns = [self._function_arg(f, kind, arity) for f in fn_nodes]
        self._refuse_body_state(node, kind, fns, names)
        free = []
        for _, _, names_free, _, _ in fns:
            free += [n for n in names_free if n not in free]
        closed = [n for n in free if self.current[n] in self.tracked]
        consts = [n for n in free if self.current[n] not in self.tracked]
        if kind in ("cond", "switch"):
            operands = [self.operand(a) for a in args.get("operands", ())]
            data = {"operands": ir.Seq(tuple(operands), "tuple")}
        elif kind == "fori_loop":
            data = {"init": self.operand(args["init_val"])}
        elif kind == "while_loop":
            data = {"init": self.operand(args["init_val"])}
        elif kind == "scan":
            data = {"init": self.operand(args["init"]),
                    "xs": self.operand(args["xs"]) if "xs" in args else ir.Expr("None")}
        else:
            data = {"xs": self.operand(args["xs"])}
        steered = self.batching and any(
            isinstance(self.operand(args[p]), ir.Var) for p in ("pred", "index") if p in args)
        if carries and kind == "while_loop":    # its reverse pass names the body only: keep
            self.while_conds[self._source(fn_nodes[1])] = fn_nodes[0]   # the cond (even unbatched)
        if not closed and not any(_has_var(o) for o in data.values()) and not steered:
            return self._inactive(node)     # nothing differentiated flows in: a constant
        statics = {}
        for p in ("pred", "index", "lower", "upper", "length", "reverse", "unroll"):
            if p in args:
                o = self.operand(args[p])
                if isinstance(o, ir.Var) and p not in ("pred", "index") and \
                        (held := self._aux_read(args[p], items=p != "reverse")) is not None:
                    # (range(self.n): a number in a registered class's aux data; range(d["n"])
                    # an int item, read by static_item; in a copy of the call: the function's
                    # tree is read again by a further transform, whose hygiene would rename a
                    # static_attribute it found there as the user's)
                    node = gast.copy_location(gast.Call(
                        func=node.func, args=list(node.args),
                        keywords=[gast.keyword(k.arg, k.value) for k in node.keywords]), node)
                    for seq in (node.args, [k for k in node.keywords]):
                        for i, a in enumerate(seq):
                            if a is args[p]:
                                node.args[i] = held
                            elif isinstance(a, gast.keyword) and a.value is args[p]:
                                a.value = held
                    args[p] = held
                    o = self._inactive(held)
                if isinstance(o, ir.Var) and p not in ("pred", "index"):
                    raise self.src.error(node, f"the {p} argument of lax.{kind} must not depend "
                                         f"on {self.what} values")
                statics[p] = o.name if isinstance(o, ir.Var) else o.src
        statics["functions"] = [self._source(f) for f in fn_nodes]
        statics["forward"] = self._source(node)
        if carries:
            statics["carries"] = carries
            if "count" in args:     # (while_loop_with_carries told not to learn a trip count)
                statics["count"] = self._source(args["count"])
        data["closed"] = ir.Seq(tuple(ir.Var(self.current[n]) for n in closed), "tuple")
        data["consts"] = ir.Seq(tuple(ir.Expr(self.current[n]) for n in consts), "tuple")
        names = [f[0].name if isinstance(f[0], gast.FunctionDef) else name
                 for f, name in zip(fns, names)]
        lifted = [self._lift(f, name, closed + consts) for f, name in zip(fns, names)]
        lifted = self._objects_carried(kind, data, lifted, closed + consts)
        name = self.names.fresh(f"{kind}_out")
        self.out.append(ir.Op([name], kind, data, statics, self.origin, lifted))
        self.tracked.add(name)
        return ir.Var(name)

    def _refuse_body_state(self, node, kind, fns, roles):
        """Refuses lax.`kind` whose function (a global def, a lambda or a local def written in
        the function) reads Python state it sets (transformer/nonlocals.py
        reads_state_it_sets): eagerly it runs once per step, but a derivative and jit run it
        once per trace, and each would read another value."""
        def lookup(name):
            obj = self._resolve(gast.Name(name, gast.Load(), None, None))
            if obj is _UNRESOLVED:
                raise KeyError(name)
            return obj
        for (fnode, obj, _, _, _), role in zip(fns, roles):
            what = nonlocals.reads_state_it_sets(obj) if inspect.isfunction(obj) else None
            if fnode is not None and what is None:
                what = _local_body_state(fnode, lookup)
            if what is not None:
                raise self.src.error(node, nonlocals.body_state_message(kind, role, what))

    def _objects_carried(self, kind, data, lifted, free):
        """The loop's functions (lifted) in the form that knows which of their parameters hold
        user objects with operators (transformer/operators.py): a carry whose initial value
        is one (`w = Vec(x)` carried by a for loop jit stages), a free local that is one.
        A carry is read as the object its init is; what the body returns is that object too."""
        carry = {"fori_loop": [False, True], "while_loop": [True], "scan": [True, False]}.get(kind)
        if carry is None or "init" not in data:
            return lifted
        if not self._may_be_object(data["init"]):
            carry = [False] * len(carry)
        flags = carry + [self._may_be_object(ir.Var(self.current[n])) for n in free]
        if not any(flags):
            return lifted
        return [operators.objects_form(fn, flags[-len(inspect.signature(fn).parameters):])
                if inspect.isfunction(fn) else fn for fn in lifted]

    def _branch_outputs_active(self, op, n):
        """Whether each of the n outputs of `op` is differentiated (batched, for vmap): for a
        cond/switch, those some branch computes from a differentiated value; one no branch
        does stays a constant (a Python int the branches flip, `if n < 0: a = 1.0 / a; n = -n`
        staged by jit, read later by bin(n) or range(n)), as vectorize._branch_out_axes keeps
        it unbatched; under vmap only while the choice is unbatched. Any other op, or branches whose form is not read here: every output."""
        every = [True] * n
        if op.op not in ("cond", "switch"):
            return every
        if self.batching and any(op.statics.get(p) in self.tracked for p in ("pred", "index")):
            return every    # a batched choice: each example may take another branch's constant
        operands = op.operands["operands"].items
        positions = [i for i, o in enumerate(operands) if _has_var(o)] + \
            [len(operands) + j for j in range(len(op.operands["closed"].items))]
        active = [False] * n
        for fn in op.callee:
            try:
                result = normalise(fn, positions, "vmap" if self.batching else "grad",
                                   self.opaque, self.reserved,
                                   self.outputs_of).result.value
            except SecantError:     # (the derivative of the branch says why, when it is made)
                return every
            if not isinstance(result, ir.Seq) or len(result.items) != n:
                return every
            active = [a or _has_var(item) for a, item in zip(active, result.items)]
        return active

    def _call_outputs_active(self, op, n):
        """Whether each of the n outputs of a call unpacked into names (`p, p_dot =
        f_jvp_vmap(c, c_dot)`, `v, n = helper(x)`) is batched (differentiated): those the
        callee's generated form that the transform calls for it says it returns so
        (self.outputs_of: under vmap the batched callee's flags, the primal of vmap of a jvp
        batching only tangents unbatched; differentiating, the outputs the callee's derivative
        differentiates, a Python int the helper returns, read by range(n), a constant). One
        answer, the generated callee's own (secant/transforms.py _outputs_batched,
        _outputs_active). A callee batching writes by a rule of its own (self.opaque), a random
        or loop call, one whose generated form does not say: every output."""
        every = [True] * n
        callee = op.callee
        if getattr(op, "loop_fns", None) is not None \
                or getattr(callee, "__secant_random__", None) \
                or any(callee is o for o in self.opaque) or not inspect.isfunction(callee):
            return every
        try:
            params = list(callees.signature_of(callee, follow_wrapped=False).parameters)
            positions = sorted(int(k[3:]) if k.startswith("arg") and k[3:].isdigit()
                               else params.index(k)
                               for k, o in op.operands.items() if _has_var(o))
        except (TypeError, ValueError):
            return every
        if not positions:       # (no argument batched or differentiated: a constant call)
            return [False] * n
        each = self.outputs_of and self.outputs_of(callee, tuple(positions), n)
        return every if each is None else [bool(b) for b in each]

    def _switch_branches(self, node, branches):
        """The branch functions of lax.switch: a list or tuple written in the call, one bound
        once to a local name (`branches = (f, lambda x: x)`; its lambdas read the locals they
        would when called here), or a global list or tuple (read as FNS[0], FNS[1], ...)."""
        if isinstance(branches, gast.Name) and branches.id in self.current:
            stores = [n for n in walk(self.node) if isinstance(n, gast.Name)
                      and n.id == branches.id and not isinstance(n.ctx, gast.Load)]
            bound = [a.value for a in walk(self.node) if isinstance(a, gast.Assign)
                     and len(a.targets) == 1 and isinstance(a.targets[0], gast.Name)
                     and a.targets[0].id == branches.id]
            if len(stores) == 1 and len(bound) == 1:
                branches = bound[0]
        if isinstance(branches, (gast.List, gast.Tuple)):
            return list(branches.elts)
        table = self._resolve(branches) if isinstance(branches, (gast.Name, gast.Attribute)) \
            else _UNRESOLVED
        if isinstance(table, (list, tuple)) and table:
            items = [gast.Subscript(value=copy.deepcopy(branches),
                                    slice=gast.Constant(value=k, kind=None), ctx=gast.Load())
                     for k in range(len(table))]
            for item in items:
                gast.copy_location(item, branches)
                _place(item, branches)
            return items
        raise self.src.error(node, "lax.switch is differentiated when its branches are a list "
                             "or tuple written in the call, bound once to a local name, or a "
                             "global list or tuple, e.g. lax.switch(i, [f, g, lambda x: x], x)")

    def implicit_call(self, node, fn):
        """lax.custom_root(f, guess, ...) / lax.custom_linear_solve(matvec, b, ...): a call of
        the custom function that has their implicit derivatives (secant/lax_implicit.py), f
        lifted to take its free locals as parameters, the followed ones passed as a tuple."""
        from secant import lax_implicit
        bound = self._bound_lax_call(node, fn, fn.__name__)
        bound.apply_defaults()
        param, operand = fn.__secant_implicit__
        fn_arg = self._function_arg(bound.arguments[param], fn.__name__, 1)
        free = list(fn_arg[2])
        closed = [n for n in free if self.current[n] in self.tracked]
        consts = [n for n in free if self.current[n] not in self.tracked]
        lifted_name = self.names.fresh(f"{param}_lifted")
        lifted = self._lift(fn_arg, lifted_name, closed + consts)
        self.bindings[lifted_name] = lifted
        operands = {"arg0": ir.Expr(lifted_name),
                    "arg1": ir.Seq(tuple(ir.Var(self.current[n]) for n in closed), "tuple")
                    if closed else ir.Expr("()"),
                    "arg2": ir.Expr(_tuple_source([self.current[n] for n in consts]))}
        rest = [p for p in bound.arguments if p != param]
        for i, p in enumerate(rest):
            value = bound.arguments[p]
            operands[f"arg{i + 3}"] = self.operand(value) if isinstance(value, gast.AST) \
                else ir.Expr(repr(value))
        custom = lax_implicit.root_of if fn.__name__ == "custom_root" \
            else lax_implicit.linear_solve_of
        callee_name = self.names.fresh(f"{fn.__name__}_of")
        self.bindings[callee_name] = custom
        return self._emit("call", operands, {}, f"{fn.__name__}_out", callee=custom,
                          callee_name=callee_name)

    def callback_call(self, node):
        """pure_callback(cb, shapes, *args, vmap_method=..., **kwargs): a call of the custom
        function with one parameter per array argument (secant/callback_transforms.py)."""
        from secant.callback_transforms import callback_function
        if any(isinstance(a, gast.Starred) for a in node.args) or len(node.args) < 2 or any(
                k.arg is None for k in node.keywords):
            raise self.src.error(node, "pure_callback is transformed when its callback, "
                                 "result_shape_dtypes and arguments are written out (no *args "
                                 "or **kwargs)")
        keywords = {k.arg: k.value for k in node.keywords if k.arg != "sharding"}
        method = keywords.pop("vmap_method", None)
        extra = {k: self.operand(v) for k, v in keywords.items()}
        if any(_has_var(v) for v in extra.values()):
            raise self.src.error(node, "pure_callback's keyword arguments must not depend on "
                                 f"{self.what} values here; pass them positionally")
        args = [self.operand(a) for a in node.args[2:]]
        operands = {"arg0": self.operand(node.args[0]), "arg1": self.operand(node.args[1]),
                    "arg2": ir.Expr("None") if method is None else self.operand(method),
                    "arg3": ir.Expr("{" + ", ".join(f"{k!r}: {self._operand_src(v)}"
                                                    for k, v in extra.items()) + "}")}
        operands.update({f"arg{i + 4}": a for i, a in enumerate(args)})
        custom = callback_function(len(args))
        callee_name = self.names.fresh(custom.__name__)
        self.bindings[callee_name] = custom
        return self._emit("call", operands, {}, "callback_out", callee=custom,
                          callee_name=callee_name)

    def _function_arg(self, fnode, kind, arity):
        """(lambda node or None, function or None, its free local names) for a function passed
        to lax.<kind>."""
        if isinstance(fnode, gast.Lambda):
            fnode = _defaults_bound(fnode, arity)
            a = fnode.args
            if a.vararg or a.kwarg or a.kwonlyargs:
                raise self.src.error(fnode, f"a lambda passed to lax.{kind} must take plain "
                                     "positional parameters")
            own = {p.id for p in a.args}
            free = []
            for n in walk(fnode.body):
                if (isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                        and n.id in self.current and n.id not in own and n.id not in free):
                    free.append(n.id)
            if self._local_calls(fnode, own):
                return self._lift_local_calls(fnode, free, own, fnode)
            return fnode, None, free, fnode, {}
        if isinstance(fnode, gast.Name) and fnode.id in self.local_defs:
            fdef, versions = self._local_def_at(fnode)
            fdef = _defaults_bound(fdef, arity)
            own = _def_locals(fdef)
            if self._local_calls(fdef, own):
                return self._lift_local_calls(fdef, list(versions), own, fnode)
            return fdef, None, list(versions), fnode, {}
        obj = self._resolve(fnode) if isinstance(fnode, (gast.Name, gast.Attribute)) \
            else _UNRESOLVED
        if isinstance(fnode, gast.Subscript) and isinstance(fnode.slice, gast.Constant):
            base = self._resolve(fnode.value)       # fns[0], table["relu"]: a global container
            try:
                obj = base[fnode.slice.value] if base is not _UNRESOLVED else obj
            except (TypeError, LookupError):
                pass
        from secant.api import JitFunction
        while isinstance(obj, JitFunction):     # jit(jit(f)): read f
            obj = obj._fun
        obj = getattr(obj, "__secant_generated__", None) or source_of(obj) or obj
        if inspect.isfunction(obj) and not _is_library(obj):
            return None, obj, [], fnode, {}
        if obj is not _UNRESOLVED and op_for(obj) is not None:    # snp.sin: lambda x: snp.sin(x)
            params = ", ".join(f"x{k}" for k in range(arity))
            lam = gast.parse(f"lambda {params}: fn_({params})").body[0].value
            _place(lam, fnode)
            return lam, None, [], fnode, {"fn_": obj}
        if arity is not None and isinstance(fnode, gast.Attribute) \
                and _root_name(fnode) in self.current:
            # self.step of a local object (a method's self): `lambda carry, x: self.step(carry,
            # x)`, the call read as any call of the object's method (its defaults its own)
            params = ", ".join(self._LAMBDA_PARAMS.get((kind, arity))
                               or [f"x{k}" for k in range(arity)])
            lam = gast.parse(f"lambda {params}: _m({params})").body[0].value
            lam.body.func = copy.deepcopy(fnode)
            _place(lam, fnode)
            return self._function_arg(lam, kind, arity)
        if isinstance(fnode, gast.Name) and fnode.id in self.current:
            raise self.src.error(fnode, f"the function {fnode.id} passed to lax.{kind} is a local "
                                 "variable: secant reads the functions of control flow when it "
                                 "transforms; write a lambda in the call, or define the function "
                                 "at module level (its free variables become arguments)")
        raise self.src.error(fnode, f"secant cannot differentiate through "
                             f"{gast.unparse(fnode).strip()} passed to lax.{kind}: pass a lambda "
                             "written in the call or a Python function defined with def")

    def _local_def_at(self, node):
        fdef, versions = self.local_defs[node.id]
        moved = [n for n, v in versions.items() if self.current.get(n) != v]
        if moved:
            raise self.src.error(node, f"{node.id} reads {moved[0]}, which is reassigned "
                                 f"between the definition of {node.id} and this call; "
                                 f"define {node.id} after the assignment")
        return fdef, versions

    def _local_calls(self, fnode, own):
        """Names of nested defs `fnode` calls or passes on (a derivative's loop step calling the
        loop's body: transformer/loop_lowering.py; `grad(potential)(q)` in a loop's body)."""
        return sorted({n.id for n in walk(fnode) if isinstance(n, gast.Name)
                       and isinstance(n.ctx, gast.Load) and n.id in self.local_defs
                       and n.id not in own and n.id != getattr(fnode, "name", None)})

    def _lift_local_calls(self, fnode, free, own, where_node):
        """(fnode, None, its free locals, where_node, closure) with each nested def it calls lifted to a
        function of its own (closure conversion): the call passes that def's free locals,
        which become free locals of fnode too, and the closure binds the lifted def."""
        fnode = copy.deepcopy(fnode)
        free, closure = list(free), {}
        # an enclosing value the callee reads, named like one of fnode's own (`def h(c): g(c)`
        # where g reads the enclosing c): passed under another name, fnode's extra parameter
        outer = dict(getattr(fnode, "secant_outer_names", {}))
        for name in self._local_calls(fnode, own):
            inner = self._function_arg(gast.Name(name, gast.Load(), None, None), "call", 0)
            extra = inner[2]
            closure[name] = self._lift(inner, name, extra)
            free += [n for n in extra if n not in free]
            for v in extra:
                if v in own and v not in outer:
                    outer[v] = self.names.fresh(f"outer_{v}")
            called = set()
            for n in walk(fnode):
                if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) \
                        and n.func.id == name:
                    n.args = list(n.args) + [gast.Name(outer.get(v, v), gast.Load(), None, None)
                                             for v in extra]
                    called.add(id(n.func))
            if extra:       # passed on as a value (grad(potential)): a lambda passing them
                self._pass_free_of(fnode, name, extra, outer, called)
        fnode.secant_outer_names = outer
        return fnode, None, free, where_node, closure

    def _pass_free_of(self, fnode, name, extra, outer, called):
        """Each use of the nested def `name` in `fnode` other than a call (`grad(potential)(q)`)
        as `lambda q: potential(q, k)`: the lifted def with its free locals `extra` passed, so
        a transform of the lambda sees them (a lambda's free locals are lifted in turn)."""
        fdef = self.local_defs[name][0]
        a = fdef.args
        params = [p.id for p in a.args]
        uses = [n for n in walk(fnode) if isinstance(n, gast.Name) and n.id == name
                and isinstance(n.ctx, gast.Load) and id(n) not in called]
        if not uses:
            return
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.src.error(uses[0], f"the nested function {name} closes over "
                                 f"{extra[0]} and is passed on as a value here; secant follows "
                                 "such a function when its parameters are plain positional ones")
        text = f"lambda {', '.join(params)}: {name}({', '.join(params + [outer.get(v, v) for v in extra])})"

        class Replace(gast.NodeTransformer):
            def visit_Name(self, n):
                if any(n is u for u in uses):
                    lam = gast.parse(text).body[0].value
                    _place(lam, n)
                    return lam
                return n
        Replace().visit(fnode)

    def _lifted_origins(self, fdef, source):
        """{line of `source` (unparsed from fdef): the user's line}: errors raised in a lifted
        function (a nested def or lambda a transform differentiates) name the user's line."""
        made = gast.parse(source).body[0]
        made = made.body if isinstance(made, gast.FunctionDef) else [made]
        mine = fdef.body if isinstance(fdef, gast.FunctionDef) else [fdef]
        origins = {}
        for gen, user in zip(_statements(made), _statements(mine)):
            if getattr(user, "lineno", None) is not None:
                try:
                    origins[gen.lineno] = self.src.user_position(user)
                except Exception:       # (a node placed outside the user's source)
                    continue
        return origins

    def _lift(self, fn_arg, name, extra):
        """The function the derivative differentiates: `fn` itself, or a function taking the
        lambda's (or fn's) parameters followed by the free locals `extra`."""
        lam, fn, _, where_node, closure = fn_arg
        closure = dict(closure)
        if lam is None:
            if not extra:
                return fn
            sig = inspect.signature(fn, follow_wrapped=False)
            params = [p.name for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            callee = fn.__name__ if fn.__name__.isidentifier() else "fn_"
            lam = gast.parse(f"lambda {', '.join(params)}: {callee}"
                             f"({', '.join(params)})").body[0].value
            _place(lam, where_node)
            closure[callee] = fn
        own = [a.id for a in lam.args.args]
        if extra and lam.args.defaults:     # (the locals would take the defaults' places)
            what = "lambda" if isinstance(lam, gast.Lambda) else f"function {lam.name}"
            raise self.src.error(lam, f"the {what} has parameters with defaults and closes over "
                                 f"the local {extra[0]}, which secant passes after its "
                                 "parameters: give them no defaults (pass the values in the "
                                 f"call), or pass {extra[0]} as a parameter")
        outer = getattr(lam, "secant_outer_names", {})      # (_lift_local_calls)
        extra_params = [outer[p] if p in outer else p if p not in own
                        else self.names.fresh(f"{p}_unused") for p in extra]
        if isinstance(lam, gast.FunctionDef):       # a nested def: its own body, renamed
            fdef = copy_tree(lam)
            fdef.name = name
            fdef.args.args += [gast.Name(p, gast.Param(), None, None) for p in extra_params]
        else:
            fdef = lambda_function_node(copy_tree(lam), name, extra_params)
        fdef = hygiene.restore(fdef, self.renamed)      # a function of its own: user names
        source = gast.unparse(fdef)
        used = _names_in(fdef)
        closure.update({k: v for k, v in self.src.closure.items() if k in used})
        from secant.codegen import loader
        cells = {k: c for k, c in self.src.cells.items()      # the user's own cells, live
                 if k in closure and closure[k] is self.src.closure.get(k)}
        lifted = loader.load(source, name, self.src.globals, closure, cells=cells,
                             origins=self._lifted_origins(fdef, source))
        lifted.__secant_tree_params__ = getattr(lam, "secant_tree_params", ())
        lifted.__secant_source__ = FunctionSource(
            lifted, fdef, self.src.filename, self.src.first_line, self.src.lines,
            self.src.globals, closure, self.src.indent, generated=self.src.generated)
        # a nested def is the user's code (kept as written in a derivative too): desugared as
        # any (a registered class built in a lax.cond branch or a loop body, `return State(x *
        # s.m, s.v)`)
        lifted.__secant_user_code__ = True
        return lifted


_STATIC_ATTRIBUTES = ("shape", "ndim", "dtype", "size")


def _static_reads_only(stmt, name):
    """Whether `stmt` reads `name` only for what a trace knows (x.shape, x.ndim, x.dtype,
    x.size): `log.append(f"layer {i}: {x.shape}")` carries no derivative anywhere."""
    parents = {id(c): n for n in walk(stmt) for c in gast.iter_child_nodes(n)}
    uses = [n for n in walk(stmt) if isinstance(n, gast.Name) and n.id == name]
    return bool(uses) and all(
        isinstance(parents.get(id(n)), gast.Attribute) and parents[id(n)].value is n
        and parents[id(n)].attr in _STATIC_ATTRIBUTES or _type_test_of(parents.get(id(n)), n)
        for n in uses)


def _type_test_of(call, name):
    """Whether `call` is isinstance(x, T), type(x), callable(x) or hasattr(x, a) of `name`: what
    a trace knows of a value (its type), never a differentiated or batched value."""
    return isinstance(call, gast.Call) and isinstance(call.func, gast.Name) \
        and call.func.id in ("isinstance", "type", "callable", "hasattr") \
        and call.args[:1] == [name]


def _starred_display(node):
    """`(*a, b, *c)` as `tuple(a) + (b,) + tuple(c)` (a list display with lists): each piece a
    container whose length the running program knows, so the concatenation's cotangent is
    split where the items really are (an item after a starred one is not at its written
    position)."""
    kind = "tuple" if isinstance(node, gast.Tuple) else "list"
    pieces, run = [], []

    def flush():
        if run:
            pieces.append((gast.Tuple if kind == "tuple" else gast.List)(list(run), gast.Load()))
            run.clear()
    for e in node.elts:
        if isinstance(e, gast.Starred):
            flush()
            pieces.append(gast.Call(gast.Name(kind, gast.Load(), None, None), [e.value], []))
        else:
            run.append(e)
    flush()
    out = pieces[0]
    for p in pieces[1:]:
        out = gast.BinOp(out, gast.Add(), p)
        out.secant_concat = True
    for n in walk(out):
        if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
            gast.copy_location(n, node)
    return out


def _list_like_params(fdef, params, nodes=None):
    """Parameters used as lists of containers, whose items or slices are iterated, unpacked,
    read by a string key or by the counter of a `range(len(...))` loop (`for w, b in
    params[:-1]`, `w, b = params[-1]`, `hidden = params[:-1]` then `for p in hidden`, a
    derivative's `for i in i_range: params_item[i]; params_dot_item[i]`), and the names bound
    to their items or slices (`hidden`, and `p = hidden[i]` in a derivative's loop): vmap
    cannot tell a list from an array where they are indexed, so it asks when the code runs."""
    aliases = {p: p for p in params}

    def root(node):
        while isinstance(node, gast.Subscript):
            node = node.value
        return aliases.get(node.id) if isinstance(node, gast.Name) else None
    if nodes is None:           # (one walk, read six times; `nodes`: _census's)
        nodes = [n for n in walk(fdef) if isinstance(n, (
            gast.Assign, gast.For, gast.comprehension, gast.Subscript))]
    for _ in range(2):          # (an alias bound in a loop body before the one it copies)
        for n in nodes:
            pairs = []
            if isinstance(n, gast.Assign) and len(n.targets) == 1:
                t, v = n.targets[0], n.value
                pairs = zip(t.elts, v.elts) if isinstance(t, gast.Tuple) and isinstance(
                    v, gast.Tuple) and len(t.elts) == len(v.elts) else [(t, v)]
            elif isinstance(n, (gast.For, gast.comprehension)):
                pairs = [(n.target, gast.Subscript(value=n.iter, slice=None, ctx=None))]
            for target, value in pairs:     # `hidden = params_item` too: a copy
                if isinstance(target, gast.Name) and isinstance(value, (
                        gast.Subscript, gast.Name)) and root(value) is not None:
                    aliases.setdefault(target.id, root(value))
    ranges = {}             # names bound to range(len(x)) (or list(...), reversed(...) of one)
    chunks = {}             # names bound to row_chunks of one (its pieces: ranges themselves)
    while True:             # (to a fixpoint: a derivative's items_7 = list(items_5) = ... of
        found = {n.targets[0].id: n.value for n in nodes      # each transform's i_range)
                 if isinstance(n, gast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], gast.Name)
                 and _range_of_len(n.value, ranges) is not None}
        pieces = {n.targets[0].id: n.value for n in nodes
                  if isinstance(n, gast.Assign) and len(n.targets) == 1
                  and isinstance(n.targets[0], gast.Name)
                  and _chunks_of(n.value, ranges, chunks) is not None}
        found.update({n.target.id: _chunks_of(n.iter, ranges, chunks) for n in nodes
                      if isinstance(n, gast.For) and isinstance(n.target, gast.Name)
                      and _chunks_of(n.iter, ranges, chunks) is not None})
        if found.keys() <= ranges.keys() and pieces.keys() <= chunks.keys():
            break           # (`for i_chunk in reversed(row_chunks(i_range))`: i_chunk a range)
        ranges.update(found)
        chunks.update(pieces)
    out = set()
    for n in nodes:
        used = n.iter if isinstance(n, (gast.For, gast.comprehension)) else \
            n.value if isinstance(n, gast.Assign) and isinstance(
                n.targets[0], (gast.Tuple, gast.List)) else \
            n.value if isinstance(n, gast.Subscript) and isinstance(n.slice, gast.Constant) \
            and isinstance(n.slice.value, str) else None
        if isinstance(n, gast.For) and _range_of_len(n.iter, ranges) is not None:
            # for i in range(len(layers)): layers[i] (a derivative's `for i in items`, with
            # items = list(i_range), i_range = range(len(params_item)), too)
            used = _range_of_len(n.iter, ranges)
            if isinstance(n.target, gast.Name):     # what the counter indexes alongside it
                out |= {root(m.value) for s in n.body for m in walk(s)  # (params_dot[i])
                        if isinstance(m, gast.Subscript) and isinstance(m.slice, gast.Name)
                        and m.slice.id == n.target.id and root(m.value) is not None}
        if used is not None and root(used) is not None:
            out.add(root(used))
    return out | {a for a, r in aliases.items() if r in out}


def _range_of_len(node, ranges):
    """x of `range(len(x))`, of list(...) or reversed(...) of one, or of a name in `ranges`
    bound to one; else None."""
    while isinstance(node, gast.Call) and getattr(node.func, "id", None) in (
            "list", "reversed") and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, gast.Name) and node.id in ranges:
        return _range_of_len(ranges[node.id], {k: v for k, v in ranges.items() if k != node.id})
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id == "range" and 1 <= len(node.args) <= 3:
        # range(len(x)), and any range whose bounds count x's items: range(len(x) - 1, -1, -1)
        lens = [m.args[0] for a in node.args for m in walk(a)
                if isinstance(m, gast.Call) and getattr(m.func, "id", None) in _LEN
                and len(m.args) == 1]
        if lens:
            return lens[0]
    return None


def _chunks_of(node, ranges, chunks):
    """r of `row_chunks(r)` (a derivative's reverse row loop in pieces, ad/helpers.py), r a
    range(len(x)) as _range_of_len reads it, of list(...) or reversed(...) of one, or of a name
    in `chunks` bound to one; else None."""
    while isinstance(node, gast.Call) and getattr(node.func, "id", None) in (
            "list", "reversed") and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, gast.Name) and node.id in chunks:
        return _chunks_of(chunks[node.id], ranges,
                          {k: v for k, v in chunks.items() if k != node.id})
    if isinstance(node, gast.Call) and getattr(node.func, "id", None) == "row_chunks" and \
            len(node.args) == 1 and not node.keywords and \
            _range_of_len(node.args[0], ranges) is not None:
        return node.args[0]
    return None


def _with_items(seq, extra):
    """A tuple or list literal with `extra` nodes appended."""
    return type(seq)(list(seq.elts) + list(extra), gast.Load())


def _defaults_bound(fnode, arity):
    """A lambda or def that lax calls with `arity` positional arguments, its parameters past
    those (all with defaults: `lambda c, x, rate=0.5: ...`) bound to their defaults in its body
    and its other defaults dropped (the lifted function takes the closed-over locals after
    the parameters it keeps); `fnode` itself when it has no defaults."""
    a = fnode.args
    if arity is None or not a.defaults or a.posonlyargs or len(a.args) < arity \
            or len(a.args) - len(a.defaults) > arity:
        return fnode
    fnode = copy.deepcopy(fnode)
    a = fnode.args
    values = dict(zip([p.id for p in a.args][len(a.args) - len(a.defaults):], a.defaults))
    bound = {p.id: values[p.id] for p in a.args[arity:]}
    a.args, a.defaults = a.args[:arity], []
    if isinstance(fnode, gast.Lambda):
        class Bind(gast.NodeTransformer):
            def visit_Name(self, n):
                if n.id in bound and isinstance(n.ctx, gast.Load):
                    return gast.copy_location(copy.deepcopy(bound[n.id]), n)
                return n
        fnode.body = Bind().visit(fnode.body)
    else:
        fnode.body = [gast.copy_location(gast.Assign(
            targets=[gast.Name(k, gast.Store(), None, None)], value=copy.deepcopy(v),
            type_comment=None), fnode.body[0]) for k, v in bound.items()] + fnode.body
    return fnode


def _root_name(node):
    """The name an attribute chain `a.b.c` starts from, else None."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _place(node, where):
    """Give a synthesised node (a wrapper lambda) the position of the user's node it stands for."""
    for n in walk(node):
        if hasattr(n, "lineno"):
            n.lineno, n.end_lineno = where.lineno, where.end_lineno
            n.col_offset = n.end_col_offset = where.col_offset


_BOOLEAN_OPS = {"greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
                "isnan", "isfinite", "isinf", "signbit", "logical_and", "logical_or",
                "logical_xor", "logical_not"}
# numpy functions whose result's shape is computed from the value of some arguments: their
# positions and names (None: every positional argument); nonzero & co. only without size=
_SHAPE_FROM_VALUE = {
    "arange": (None, ("start", "stop", "step")), "zeros": ((0,), ("shape",)),
    "ones": ((0,), ("shape",)), "empty": ((0,), ("shape",)), "full": ((0,), ("shape",)),
    "eye": ((0, 1), ("N", "M")), "identity": ((0,), ("n",)), "tri": ((0, 1), ("N", "M")),
    "linspace": ((2,), ("num",)), "logspace": ((2,), ("num",)), "geomspace": ((2,), ("num",)),
    "nonzero": ((0,), ("a",)), "flatnonzero": ((0,), ("a",)), "argwhere": ((0,), ("a",)),
    "unique": ((0,), ("ar",)),
}


def _shape_arguments(obj, node):
    """The argument nodes of call `node` of numpy/secant.numpy function `obj` that give its
    result's shape by their value (snp.arange(n), snp.zeros(n), snp.nonzero(x)), or []."""
    import numpy as np
    import secant.numpy as snp
    name = getattr(obj, "__name__", "")
    if name not in _SHAPE_FROM_VALUE or not any(getattr(m, name, None) is obj
                                                 for m in (np, snp)):
        return []
    if any(k.arg == "size" for k in node.keywords):
        return []
    positions, names = _SHAPE_FROM_VALUE[name]
    return [a for i, a in enumerate(node.args) if positions is None or i in positions] + \
        [k.value for k in node.keywords if k.arg in names]


def _is_truth_value(node, resolve):
    """A test made of comparisons, `not`, isinstance/hasattr/callable calls and and/or of them:
    a bool, never an operand's value."""
    if isinstance(node, gast.BoolOp):
        return all(_is_truth_value(v, resolve) for v in node.values)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
        return True
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name):
        fn = resolve(node.func)     # (secant's own hasattr: transformer/properties.py has_attr)
        return any(fn is b for b in (isinstance, hasattr, callable)) or \
            getattr(fn, "__secant_type_test__", False) is True
    return isinstance(node, (gast.Compare, gast.Constant))


def _tuple_source(names):
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def _plain_read(node):
    """A name, or attributes and constant subscripts of one: read again, it has no effect."""
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        if isinstance(node, gast.Subscript) and not isinstance(node.slice, gast.Constant):
            return False
        node = node.value
    return isinstance(node, gast.Name)


def _merged_dict(node):
    """{**a, "k": v, **b} as (a | {"k": v}) | b: the same keys in the same order, each later
    one winning, which the dict operations read (a dict's ** operands must be dicts)."""
    groups, literal = [], None
    for k, v in zip(node.keys, node.values):
        if k is None:
            groups.append(v)
            literal = None
        else:
            if literal is None:
                literal = gast.Dict(keys=[], values=[])
                groups.append(literal)
            literal.keys.append(k)
            literal.values.append(v)
    if len(groups) == 1:        # {**a}: a copy
        groups.append(gast.Dict(keys=[], values=[]))
    merged = groups[0]
    for g in groups[1:]:
        merged = gast.BinOp(left=merged, op=gast.BitOr(), right=g)
        merged.secant_merge = True      # a dict merge, whatever its operands' names hold
    for n in walk(merged):
        if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
            gast.copy_location(n, node)
    return merged


def _with_free(factory, args, kwargs, n_free):
    """factory(*args, **kwargs) for a function whose last n_free parameters are free locals
    lifted out of a lambda or nested def: held fixed (grad's argnums count only the parameters
    before them; vmap maps them with in_axes None)."""
    import inspect
    if n_free and factory.__secant_factory__ == "in_axes":
        args, kwargs = list(args), dict(kwargs)
        axes = kwargs.pop("in_axes", args.pop(1) if len(args) > 1 else 0)
        own = len(inspect.signature(args[0]).parameters) - n_free
        axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,) * own
        kwargs["in_axes"] = axes + (None,) * n_free
    return factory(*args, **kwargs)


def _has_var(o):
    if isinstance(o, ir.Var):
        return True
    if isinstance(o, ir.Seq):
        return any(_has_var(i) for i in o.items)
    return False


_UNRESOLVED = callees.UNRESOLVED
_NUMPY_JOINS = (type(np.r_), type(np.c_))     # (np.r_[x, y]: NumPy's, no rule)


def rename(stmts, old, new):
    """Rename the SSA name `old` to `new` throughout `stmts` (old is defined only there)."""
    pattern = re.compile(rf"\b{re.escape(old)}\b")

    def var(o):
        if isinstance(o, ir.Var):
            return ir.Var(new) if o.name == old else o
        if isinstance(o, ir.Seq):
            return ir.Seq(tuple(var(i) for i in o.items), o.kind, o.keys)
        return ir.Expr(pattern.sub(new, o.src))

    for s in stmts:
        if isinstance(s, ir.Op):
            s.targets = [new if t == old else t for t in s.targets]
            s.operands = {k: var(v) for k, v in s.operands.items()}
            s.statics = {k: [pattern.sub(new, i) for i in v] if isinstance(v, list)
                         else pattern.sub(new, v) for k, v in s.statics.items()}
        elif isinstance(s, ir.Plain):
            s.code = pattern.sub(new, s.code)
            s.defines = {new if d == old else d for d in s.defines}
            if s.stack:
                s.stack = tuple(new if n == old else n for n in s.stack)
        elif isinstance(s, ir.If):
            s.test = new if s.test == old else s.test
            rename(s.body, old, new)
            rename(s.orelse, old, new)
        elif isinstance(s, ir.For):
            s.target = new if s.target == old else s.target     # a loop variable read after
            s.iterable = new if s.iterable == old else s.iterable
            s.carried = [tuple(new if n == old else n for n in c) for c in s.carried]
            rename(s.body, old, new)
        elif isinstance(s, ir.While):
            s.test = pattern.sub(new, s.test)
            s.carried = [tuple(new if n == old else n for n in c) for c in s.carried]
            rename(s.body, old, new)


def call_args(rendered):
    """Arguments of a user call: arg0, arg1, ... positionally, the rest by keyword."""
    return ", ".join(v if k.startswith("arg") and k[3:].isdigit() else f"{k}={v}"
                     for k, v in rendered.items())


def _first_reads(stmts, names, _loads=None):
    """The names of `names` that running `stmts` may read before assigning them (a loop or
    branch body may not run: what it assigns does not count after it, except under a later
    `if` on the same test name: a derivative splits one `if` into several on one saved test).
    One walk for all the names (a loop's names read after it are many in a derivative: a walk
    per name was quadratic in the function's length)."""
    return _first_reads_left(stmts, names, _loads)[0]


def _suffix_first_reads(stmts, at):
    """{i: _first_reads(stmts[i + 1:], every name) for i in `at`} in one backward pass over
    `stmts` (a scan of the rest per loop was quadratic in a function of many loops, issue 19);
    None where two `if`s of `stmts` test one name (the first's assignments count under the
    second: not a statement-by-statement question). Each name's answer is its own: a statement
    reads it first, assigns it first (then the rest does not matter), or leaves it to the rest."""
    tests = [s.test.id for s in stmts if isinstance(s, gast.If) and isinstance(s.test, gast.Name)]
    if len(tests) != len(set(tests)):
        return None
    loads, out, later = {}, {}, set()
    for i in range(len(stmts) - 1, -1, -1):
        if i in at:
            out[i] = set(later)
        mentioned = {n.id for n in walk(stmts[i]) if isinstance(n, gast.Name)}
        found, left = _first_reads_left([stmts[i]], mentioned, loads)
        later = found | (later - (mentioned - left))
    return out


def _first_reads_left(stmts, names, _loads=None):
    """_first_reads's (names read first, names neither read first nor surely assigned)."""
    loads = {} if _loads is None else _loads       # id(node) -> the names it reads

    def reads(node):        # (not a nested function's own parameter of that name)
        key = id(node)
        if key not in loads:
            if isinstance(node, gast.Name):
                loads[key] = {node.id} if isinstance(node.ctx, gast.Load) else set()
            else:
                loads[key] = set().union(*map(reads, gast.iter_child_nodes(node)))
                if isinstance(node, (gast.FunctionDef, gast.Lambda)):   # (its defaults are
                    a = node.args                                       # read where it is)
                    params = {p.id for p in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                             a.vararg, a.kwarg] if isinstance(p, gast.Name)}
                    loads[key] = loads[key] - params | set().union(
                        *[reads(d) for d in [*a.defaults, *a.kw_defaults] if d is not None])
        return loads[key]

    def assigned(s):
        if not isinstance(s, (gast.Assign, gast.AnnAssign, gast.AugAssign)):
            return set()
        return {n.id for t in (s.targets if isinstance(s, gast.Assign) else [s.target])
                for n in walk(t) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    pending, found = set(names), set()
    covered = {}        # (test name, branch) -> the names assigned already under it
    for s in stmts:
        if not pending:
            break
        if isinstance(s, gast.If) and isinstance(s.test, gast.Name):
            hit = pending & {s.test.id}
            found |= hit
            pending -= hit
            for k, block in enumerate((s.body, s.orelse)):
                key = (s.test.id, k)
                open_ = pending - covered.get(key, set())
                hit = _first_reads(block, open_, loads)
                found |= hit
                pending -= hit
                set_here = (open_ - hit) & set().union(*map(assigned, block))
                if set_here:
                    covered[key] = covered.get(key, set()) | set_here
            if s.orelse:        # assigned in both branches: assigned after the if
                pending -= set().union(*map(assigned, s.body)) & set().union(
                    *map(assigned, s.orelse))
            continue
        if isinstance(s, (gast.For, gast.While, gast.If)):      # a body that may not run
            head = s.iter if isinstance(s, gast.For) else s.test
            bound = {n.id for n in walk(s.target) if isinstance(n, gast.Name)} \
                if isinstance(s, gast.For) else set()       # (the loop's own target: assigned
            hit = pending & reads(head)                     # first)
            hit |= _first_reads(s.body, pending - hit - bound, loads)
            hit |= _first_reads(s.orelse, pending - hit, loads)
            found |= hit
            pending -= hit
            if isinstance(s, gast.If) and s.orelse:     # (assigned in both branches)
                pending -= set().union(*map(assigned, s.body)) & set().union(
                    *map(assigned, s.orelse))
            continue
        hit = pending & reads(s)
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            hit |= pending & {s.target.id}
        found |= hit
        pending -= hit
        stored = assigned(s)
        covered = {c: v for c, v in covered.items() if c[0] not in stored}  # a test reassigned
        if isinstance(s, (gast.Assign, gast.AnnAssign)):
            pending -= stored
    return found, pending


def _nested_def_locals(body):
    """The names stored only inside the nested defs and lambdas of `body` (their own scope)."""
    inner, outer = set(), set()
    for n in hygiene.walk_scope(body):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            outer.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)):
            inner |= {m.id for m in walk(n) if isinstance(m, gast.Name)
                      and isinstance(m.ctx, gast.Store)}
            inner -= {name for m in walk(n) if isinstance(m, gast.Nonlocal)
                      for name in m.names}
    return inner - outer


def _is_range_of_len(node, name):
    """`range(len(name))`: how a derivative's reverse loop counts the pops of its stacks."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == "range" and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], gast.Call) and isinstance(node.args[0].func, gast.Name)
            and node.args[0].func.id == "len" and len(node.args[0].args) == 1
            and isinstance(node.args[0].args[0], gast.Name) and node.args[0].args[0].id == name)


def _is_stack_call(node, method):
    """`x_stack.append(x)` / `x_stack.pop()`: how a derivative's forward loop saves what its
    reverse loop reads (ad/reverse.py)."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == method and isinstance(node.func.value, gast.Name)
            and re.search(r"_stack(_\d+)*$", node.func.value.id) and not node.keywords
            and len(node.args) == (1 if method == "append" else 0)
            and not isinstance(node.args[0] if node.args else None, gast.Starred))


def _at_hint(base, method):
    return f"{getattr(base, 'name', 'x')}_{'item' if method == 'get' else method}"


def _at_call(func):
    """(base, index, method) for x.at[index].method(...), else None."""
    if (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Subscript)
            and isinstance(func.value.value, gast.Attribute) and func.value.value.attr == "at"):
        return func.value.value.value, func.value.slice, func.attr
    return None


def _index_src(node, norm):
    """An index as source; a tuple index is written without parentheses (x[i, j])."""
    if isinstance(node, gast.Tuple) and node.elts:
        return ", ".join(norm._source(e) for e in node.elts)
    return norm._source(node)


def _array_method(name):
    """Whether arrays have a method `name` (x.name(...) of a tracked value reads as the array's;
    any other name as a callee the value holds: a function field of a pytree object)."""
    from secant.backends.array import Array
    from secant.numpy.methods import function_of
    return function_of(name) is not None or callable(getattr(Array, name, None))


def _is_named_call(obj):
    """secant.named_call (jax.named_call) itself, not a function of that name: its function,
    computed as written"""
    from secant.api_extras import named_call
    return obj is named_call


def _is_super_call(func):
    """`super().m` (the zero-argument super of a method) or `super(C, self).m`."""
    return isinstance(func, gast.Attribute) and isinstance(func.value, gast.Call) and \
        isinstance(func.value.func, gast.Name) and func.value.func.id == "super" and \
        not func.value.keywords and (not func.value.args or len(func.value.args) == 2 and
                                     isinstance(func.value.args[1], gast.Name))


def _is_static_query(obj):
    """Calls that only read shapes, types or dtypes: constants whatever their arguments."""
    import numpy as np
    import secant.numpy as snp
    static = (np.shape, np.ndim, np.size, np.result_type, snp.shape, snp.ndim, snp.size,
              snp.result_type, len, isinstance, type, id, hasattr, callable, set, frozenset)
    return any(obj is s for s in static) or getattr(obj, "__secant_static_query__", False)


def _read_by_its_items(fn_node, arg):
    """Whether `arg` of sorted(arg)/reversed(arg) is a name the function also reads as
    arg[k] with k a name: the items sorted are its keys (a dict; an array's items are its
    values, never its indices)."""
    return isinstance(arg, gast.Name) and any(
        isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == arg.id
        and isinstance(n.slice, gast.Name) for n in walk(fn_node))


def _builtin_source(obj):
    """The source transforms read for a Python builtin (pow, reversed, sorted, itertools.chain,
    ...) called on traced values (secant/builtin_sources.py), or None."""
    if getattr(obj, "__module__", None) not in ("builtins", "itertools", "math") and \
            getattr(obj, "__self__", None) is not itertools.chain:  # (chain.from_iterable)
        return None
    from secant.builtin_sources import source_for_builtin
    return source_for_builtin(obj)


def _secant_numpy():
    import secant.numpy
    return secant.numpy


def source_of(fn):
    """The function transforms read for a library function written as a composition of ops
    (secant/numpy/composite.py), or None."""
    return getattr(fn, "__secant_composite__", None)


def _dict_or_item_update(stmt):
    """Whether `stmt` is `if isinstance(p, dict): p = p | {k: v}` / `else: p[k] = v` (or
    `p[k] op= v`), desugar's form of an item set on a value that may be a dict or an array."""
    t = stmt.test
    if not (isinstance(t, gast.Call) and isinstance(t.func, gast.Name)
            and t.func.id == "isinstance" and len(t.args) == 2
            and isinstance(t.args[0], gast.Name) and isinstance(t.args[1], gast.Name)
            and t.args[1].id == "dict" and len(stmt.body) == 1 and len(stmt.orelse) == 1):
        return False
    s = stmt.orelse[0]
    target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else \
        getattr(s, "target", None) if isinstance(s, gast.AugAssign) else None
    return isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) \
        and target.value.id == t.args[0].id


def _is_library(fn):
    """Library functions are resolved to ops; the derivative helpers are read like user code."""
    if getattr(fn, "__globals__", {}).get("__secant_by_source__"):  # secant/numpy/composite.py
        return False
    mod = getattr(fn, "__module__", "") or ""
    return mod not in ("secant.ad.helpers", "secant.ad.rule_helpers", "secant.ad.jvp_helpers",
                       "secant.batching.helpers") and \
        mod.split(".")[0] in ("secant", "numpy", "math", "builtins")


_LOOP_HELPERS = {"fori_loop_with_carries": "fori_loop", "scan_with_carries": "scan",
                 "while_loop_with_carries": "while_loop", "fori_loop_vjp": "vjp",
                 "scan_vjp": "vjp", "map_vjp": "vjp", "while_loop_vjp": "vjp"}


def _loop_helper_kind(obj):
    """For a rule helper that runs a lax loop's derivative (ad/rule_helpers.py): the kind of
    loop its forward pass runs, or "vjp" for a reverse pass; None for anything else."""
    if getattr(obj, "__module__", "") != "secant.ad.rule_helpers":
        return None
    return _LOOP_HELPERS.get(getattr(obj, "__name__", ""))


def _is_negative_int(node):
    return isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
        isinstance(node.operand, gast.Constant) and type(node.operand.value) is int


_CONCRETIZATION_ERRORS = (BoolConversionSourceError, IntegerConversionSourceError,
                          ConcretizationSourceError)


class _Raiser:
    """Raises, when called, an error the transform found in a branch (normalise's
    _raise_when_run): generated code calls it where that branch would have run."""

    def __init__(self, error):
        self.error = error

    def __call__(self, *args, **kwargs):     # (or a nested def's stand-in: local_def)
        raise self.error

    def __repr__(self):
        return f"<raises {type(self.error).__name__}>"


_MASKED_REDUCTIONS = ("sum", "prod", "max", "min", "mean", "var", "std", "any", "all")


def _numpy_keywords(node, names, args):
    """A reduction's call with its positional arguments past the array named as NumPy's
    signature names them (`names`), and `out=None` / `dtype=None` dropped: (node, args)."""
    if len(args) > len(names) or len(args) < 2 and not any(
            k.arg in ("dtype", "out") for k in node.keywords) or any(
            k.arg in names[1:len(args)] for k in node.keywords):
        return node, args           # (as written: its binding names what is wrong)
    keywords = [gast.keyword(arg=n, value=v) for n, v in zip(names[1:], args[1:])]
    keywords += node.keywords
    keywords = [k for k in keywords if not (k.arg in ("dtype", "out") and isinstance(
        k.value, gast.Constant) and k.value.value is None)]
    call = gast.copy_location(gast.Call(func=node.func, args=args[:1], keywords=keywords), node)
    call.end_lineno, call.end_col_offset = node.end_lineno, node.end_col_offset
    return call, args[:1]


def _static_dtype(norm, node):
    """The NumPy dtype a dtype expression names (np.int32, "float16", bool), or None."""
    obj = node.value if isinstance(node, gast.Constant) else callees.resolve(
        norm.src, norm._is_local, node)
    try:
        return None if obj is _UNRESOLVED or obj is None else np.dtype(obj)
    except TypeError:
        return None


def _bad_call(error):
    """Marks a call whose arguments its callee refuses: in a branch of an `if`, it is raised
    only when that branch runs (normalise's if_statement)."""
    error.bad_call = True
    return error


_KEPT_LOOP = "# secant: a Python while loop ("


def _kept_loop_reason(src, stmt):
    """Why functionalize kept while loop `stmt` a Python loop (its comment on the line above the
    loop in the functionalised source: `# secant: a Python while loop (<why>); ...`), or None:
    what a batched test cannot run as (an append per iteration, a name first assigned inside)."""
    i = getattr(stmt, "lineno", 0) - 2
    text = src.lines[i].strip() if 0 <= i < len(src.lines) else ""
    if not text.startswith(_KEPT_LOOP):
        return None
    why, _, _ = text[len(_KEPT_LOOP):].rpartition("); ")
    return why or None


def _batched_test(error):
    """Marks an `if`/`while` on a batched value: vmap then reads the function's functionalised
    form (transformer/functionalize.py), whose lax.cond / while_loop it batches."""
    error.batched_test = True
    return error


def _is_fields_of(obj, node):
    """fields_of(tree_bar, {k0: ..., k1: ...}) (ad/helpers.py) or fields_of_batched(tree_bar,
    {...}, n, True) (batching/helpers.py) in a derivative differentiated again: constant keys
    (their values are not read), a batched cotangent."""
    name = (getattr(obj, "__module__", ""), getattr(obj, "__name__", ""))
    if name == ("secant.ad.helpers", "fields_of"):
        arity = 2
    elif name == ("secant.batching.helpers", "fields_of_batched"):
        arity = 4
        if len(node.args) != 4 or not (isinstance(node.args[3], gast.Constant)
                                       and node.args[3].value is True):
            return False
    else:
        return False
    return len(node.args) == arity and not node.keywords \
        and isinstance(node.args[1], (gast.Dict, gast.List)) \
        and all(isinstance(k, gast.Constant) for k in _field_keys(node.args[1]))


def _field_keys(node):
    """The keys of fields_of's second argument: a dict's keys, or the list a derivative's
    forward mode writes (fields_of(tree_dot, [0, 1]))."""
    return node.keys if isinstance(node, gast.Dict) else node.elts


def _is_scalar_type(obj):
    from secant.numpy.scalar_types import is_scalar_type
    return is_scalar_type(obj)


def numpy_counterpart(obj):
    """secant.numpy's function (and its spelling) for a NumPy function with no op of its own,
    where secant's has rules (an op or a source); queries such as np.shape stay as written."""
    from secant.numpy.counterparts import counterpart
    ours = counterpart(obj)
    mine = ours and ours[0]
    if ours is None or (op_for(mine) is None and source_of(mine) is None
                        and (_is_library(mine) or not inspect.isfunction(mine))
                        and not getattr(mine, "__secant_custom__", False)):
        return None
    return ours


def _sized_by_values(fn):
    """Whether secant.numpy's `fn` takes size= (unique, nonzero, setdiff1d, ...): its result's
    shape depends on the values."""
    try:
        return "size" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _renamed_call(node, name):
    """The call `node` with its callee written `name` (a dotted name generated code binds)."""
    func = gast.parse(name).body[0].value
    for sub in walk(func):
        gast.copy_location(sub, node.func)
    return gast.copy_location(gast.Call(func=func, args=node.args, keywords=node.keywords), node)


_DICT_ARITY = {"get": (1, 2), "items": (0, 0), "values": (0, 0), "keys": (0, 0),
               "setdefault": (1, 2)}


def _dict_method_call(node):
    """`d.get(k)`, `d.items()`, ... a call a dict's method of that name takes (positional
    arguments only, as many as it allows): a method of a value not known as a container read
    as a dict's; any other (`scope.get(col, name, init_fn, shape)`) is a user object's method."""
    arity = _DICT_ARITY.get(node.func.attr)
    return arity is not None and not node.keywords and not any(
        isinstance(a, gast.Starred) for a in node.args) and arity[0] <= len(node.args) <= arity[1]


def normalise(fn, active_params, mode="grad", opaque=(), reserved=None, outputs_of=None,
              computed=frozenset()):
    """The canonical form of `fn`, tracking the parameters at positions `active_params` (for
    mode "vmap": the batched ones; `opaque`: functions it keeps as calls, for their own rule;
    `outputs_of`: which outputs of a callee's generated form are batched (differentiated),
    Normaliser; `reserved`: names generated code uses for itself -> their objects,
    transformer/hygiene.py; `computed`: vmap, the shape queries a caller says may be computed,
    computes_query)."""
    norm = Normaliser(fn, active_params, mode, opaque, reserved, outputs_of, computed)
    fn_ir = norm.run()
    fn_ir.queried = norm.queried        # names whose shape queries were written per example
    fn_ir.guard = norm.src.guards()     # what it resolved at transform time, to re-check
    fn_ir.plain_attributes = norm.plain_attributes
    fn_ir.plain_reach = (norm.reach, norm.reached)      # (properties.PlainReads)
    fn_ir.plain_queries = norm.plain_queries
    # (vmap: the queries its callees' batched forms read through example_shape, BatchOptions)
    fn_ir.computed_queries = frozenset(a for a in ("shape", "ndim") if norm.computes_query(a)) \
        if norm.batching else frozenset()
    fn_ir.bindings = norm.bindings      # callee names bound to their runnable forms
    fn_ir.trees = set(getattr(fn, "__secant_tree_params__", ())) | norm.trees  # loop_lowering
    fn_ir.lowered = norm.lowered
    fn_ir.renamed = norm.renamed        # user name -> its placeholder in the canonical form
    fn_ir.containers = set(norm.containers)     # names known to hold containers (pytrees)
    fn_ir.temporaries = norm.temporaries - norm.current.keys()
    fn_ir.versions = {v: u for v, u in norm.versions.items() if v != u}
    fn_ir.user_names, bound, declared = _names_and_bound(norm.node)
    fn_ir.free_names = fn_ir.user_names - bound     # globals, cells, builtins
    fn_ir.locals = bound - declared     # (a local `calls` is not the global counter)
    fn_ir.function = fn     # (its globals and cells: ad/state_inputs.py called_object)
    return fn_ir


# per-example forms of shape queries on a batched value (its batch axis is axis 0)
_PER_EXAMPLE = {"shape": "{x}.shape[1:]", "ndim": "({x}.ndim - 1)", "size": "example_size({x})",
                "nbytes": "(example_size({x}) * {x}.itemsize)"}
_PER_EXAMPLE_CALLS = {"shape": "snp.shape({x})[1:]", "ndim": "(snp.ndim({x}) - 1)",
                      "size": "example_size({x})", "len": "example_len({x})"}


def _per_example_form(norm, attr):
    """The per-example template of x.<attr>; where a class the function reaches computes shape
    or ndim (a property, Normaliser.computes_query), a helper that refuses a batched object of
    it (batching/helpers.example_shape): its getter would read the batched fields, and
    x.shape[1:] of that is no example's shape."""
    if attr in ("shape", "ndim") and norm.computes_query(attr):
        return f"example_{attr}({{x}})"
    return _PER_EXAMPLE[attr]


def _guard_query(norm, attr):
    """x.shape / x.ndim written as the array query: generated again if a class the function
    reaches later (defined after it) computes the name (properties.PlainReads)."""
    if attr in ("shape", "ndim") and not norm.computes_query(attr):
        norm.plain_queries.add(attr)


def _per_example(norm, name, attr):
    return _per_example_form(norm, attr).format(x=name) if attr in _PER_EXAMPLE else \
        f"{name}.{attr}"


def _deeper_axis_query(helper, axis, x, outer):
    """`helper(axis, x, outer)` (batch_axis & co., __secant_batch_depth__) read by one more
    vmap: its `outer` (a list of at most one source or node; none: 0) one more, written as
    `depth + 1` where it is a name (batch_axis_to's derivative's `depth`)."""
    outer = outer[0] if outer else "0"
    outer = outer if isinstance(outer, str) else gast.unparse(outer).strip()
    outer = str(int(outer) + 1) if outer.lstrip("-").isdigit() else f"({outer}) + 1"
    return f"{helper}({axis}, {x}, {outer})"


class _PerExampleQueries(gast.NodeTransformer):
    """Rewrites x.shape, x.ndim, np.shape(x), len(x), ... of batched values to their per-example
    values (run before names are renamed to their SSA versions). The value queried is a batched
    name, or an item of one read by constant keys or indices (`w["hh"].shape[0]`, `x[0].shape`,
    `len(params[1])`): each example's item, `index_examples(x, index_exp[0])` (a dict's field
    `w["hh"]` as written: every leaf of a batched container is batched)."""

    def __init__(self, norm):
        self.norm = norm
        self.items = set()      # comprehension targets over a batched list or tuple's items
        self.unsure = set()     # ... over a batched value that may be an array
        self.lists = set()      # ... over a list of lists of batched items (each a list)
        self.bound = set()      # every target of the comprehensions around: the function's
        #                         names of the same spelling are not what it reads

    def _replace(self, template, name_node, text=None):
        for n in walk(name_node):      # (the names whose queries are per example)
            if isinstance(n, gast.Name):
                self.norm.queried.add(self.norm.current.get(n.id, n.id))
        text = template.format(x=name_node.id if text is None else text)
        new = gast.parse(text).body[0].value
        return gast.copy_location(new, name_node) if hasattr(name_node, "lineno") else new

    def _item(self, node):
        """Source of each example's `node` (an item of a batched value, batch axis in front),
        or None when `node` is not one."""
        if isinstance(node, gast.Name) and node.id in self.bound:
            return self._queried(node)
        if isinstance(node, gast.Name):
            tracked = self.norm.current.get(node.id) in self.norm.tracked
            return node.id if tracked else None
        if isinstance(node, gast.Attribute) and not node.attr.startswith("__") and \
                node.attr not in _STATIC_ATTRIBUTES and node.attr != "T":
            base = self._item(node.value)   # a field of a batched object (self._c): batched,
            return None if base is None else f"{base}.{node.attr}"  # as a dict's items are
        if isinstance(node, gast.Subscript):
            base = self._item(node.value)
            if base is None or self._mentions_tracked(node.slice):
                return None
            key = gast.unparse(node.slice).strip()
            if isinstance(node.slice, gast.Constant) and isinstance(node.slice.value, str):
                return f"{base}[{key}]"         # a field: a dict's (every leaf batched)
            return f"index_examples({base}, index_exp[{key}])"
        if isinstance(node, gast.Call) and 2 <= len(node.args) <= 3 and not node.keywords \
                and getattr(self.norm._resolve(node.func), "__name__", "") == "index_examples" \
                and getattr(self.norm._resolve(node.func), "__module__", "") == \
                "secant.batching.helpers":      # one written by a vmap, read by an enclosing one
            base = self._item(node.args[0])
            if base is None or self._mentions_tracked(node.args[1]):
                return None
            depth = node.args[2].value if len(node.args) == 3 and isinstance(
                node.args[2], gast.Constant) and type(node.args[2].value) is int else None
            if len(node.args) == 3 and depth is None:
                return None
            idx = gast.unparse(node.args[1]).strip()
            return f"index_examples({base}, {idx}, {(depth or 1) + 1})"
        return None

    def _spec_query(self, node):
        """eval_shape(f, a, b) with batched arguments: each one's per-example specs
        (example_spec(a)), as JAX's eval_shape sees a batched tracer's aval. f reading a batched
        value itself (a lambda closing over one, a local function) is refused: its trace would
        see the batch axis."""
        fun = node.args[0]
        resolved = self.norm._resolve(fun) if isinstance(fun, (gast.Name, gast.Attribute)) \
            else _UNRESOLVED
        if isinstance(fun, gast.Lambda) and self._mentions_tracked(fun) or \
                not isinstance(fun, gast.Lambda) and (resolved is _UNRESOLVED
                                                      or self._mentions_tracked(fun)):
            raise self.norm.src.error(node, (
                f"{gast.unparse(node.func).strip()} of a function that may read batched values "
                "under vmap (a closure or local function): its trace would see their batch "
                "axis; pass those values as arguments, or use a global function"),
                ConcretizationSourceError)
        if any(isinstance(a, gast.Starred) and self._mentions_tracked(a) for a in node.args) \
                or any(k.arg is None and self._mentions_tracked(k.value) for k in node.keywords):
            raise self.norm.src.error(node, (
                f"{gast.unparse(node.func).strip()} of batched values passed with * or ** "
                "under vmap: pass them one by one"), ConcretizationSourceError)
        for i, a in enumerate(node.args[1:], 1):
            node.args[i] = self._spec_of(a)
        for k in node.keywords:
            k.value = self._spec_of(k.value)
        return node

    def _spec_of(self, a):
        x = self._queried(a)
        if x is None and self._mentions_tracked(a):     # (an expression of batched values)
            x = gast.unparse(a).strip()
        return self.visit(a) if x is None else self._replace("example_spec({x})", a, x)

    def _mentions_tracked(self, node):
        return any(isinstance(n, gast.Name) and (
            n.id in self.items | self.unsure | self.lists if n.id in self.bound
            else self.norm.current.get(n.id) in self.norm.tracked) for n in walk(node))

    def _reads_tracked(self, node):
        """Whether `node` reads a tracked value (not only its static facts: len(xs))."""
        return any(n in self.items | self.unsure | self.lists if n in self.bound
                   else self.norm.current.get(n) in self.norm.tracked for n in _value_names(node))

    def _queried(self, node):
        """Source of the batched value a query reads, or None."""
        if isinstance(node, gast.Name) and node.id in self.items or \
                getattr(node, "id", None) not in self.bound and self.norm._is_batched_name(node):
            return node.id
        if isinstance(node, gast.Name) and node.id in self.unsure:
            raise self.norm.src.error(node, (
                f"a shape query of {node.id}, an item of a batched value, in a comprehension "
                "written inside an expression: secant cannot tell here whether it loops over a "
                "list or over an array's rows; name the comprehension on a line of its own "
                f"(`items = [... for {node.id} in ...]`)"))
        return None if isinstance(node, gast.Name) else self._item(node)

    def _own_item(self, node):
        """Whether `node`, an item of a list or tuple written in place, is each example's own
        where batched: a tracked name, or a field `w["hh"]` of one (not `x[0]` of a batched x:
        the first example); the vectorizer broadcasts it where it is not batched."""
        if isinstance(node, gast.Name):
            return self._queried(node) is not None
        src = self._item(node) if isinstance(node, gast.Subscript) else None
        return bool(src) and "index_examples(" not in src

    def _comprehension(self, node):
        """A comprehension written in place (`f(*[snp.shape(c) for c in xs])`) whose loop runs
        over a batched list or tuple: each item is batched, so its queries are per example."""
        outer, unsure, bound_around = set(self.items), set(self.unsure), set(self.bound)
        lists = set(self.lists)
        for gen in node.generators:
            gen.iter, kinds = self._generator(self.visit(gen.iter), gen.target)
            bound = {n.id for n in walk(gen.target) if isinstance(n, gast.Name)}
            self.items -= bound     # (a name bound again here is no batched item)
            self.unsure -= bound
            self.lists -= bound
            for name, kind in kinds.items():
                {"items": self.items, "lists": self.lists}.get(kind, self.unsure).add(name)
            self.bound |= bound
            gen.ifs = [self.visit(i) for i in gen.ifs]
        for field in ("elt", "key", "value"):
            if hasattr(node, field):
                setattr(node, field, self.visit(getattr(node, field)))
        self.items, self.unsure, self.bound, self.lists = outer, unsure, bound_around, lists
        return node

    def _generator(self, it, target):
        """(the iterable `it` as vmap writes it, {name `target` binds: "items" where each item
        is batched (its queries per example), "unsure" where secant cannot tell}). A name drawn
        from a tracked value in any other way is unsure: its queries are refused, never read
        whole (`for i, e in enumerate([c, w["b"]])`, `for e in c` of a list of lists)."""
        fn = self.norm._resolve(it.func) if isinstance(it, gast.Call) and not it.keywords \
            else None
        if isinstance(target, gast.Name):
            kind, it = self._items_of(it)
            return it, ({target.id: kind} if kind else {})
        if fn is builtins.enumerate and len(it.args) == 1 and isinstance(target, gast.Tuple) \
                and len(target.elts) == 2:      # (the index is an int)
            it.args[0], kinds = self._generator(it.args[0], target.elts[1])
            return it, kinds
        if fn is builtins.zip and isinstance(target, gast.Tuple) and \
                len(target.elts) == len(it.args) and all(isinstance(t, gast.Name)
                                                         for t in target.elts):
            made = [self._items_of(a) for a in it.args]
            if all(kind == "items" for kind, _ in made):
                it.args = [a for _, a in made]
                return it, {t.id: "items" for t in target.elts}
        names = [n.id for n in walk(target) if isinstance(n, gast.Name)]
        return it, ({n: "unsure" for n in names} if self._reads_tracked(it) else {})

    def _items_of(self, it):
        """("items" | "unsure" | None, `it` as vmap writes it) of a comprehension's iterable
        bound to one name."""
        if isinstance(it, gast.Name) and it.id in self.lists:   # (`for e in row` of a row
            return "items", it          # of `for row in [[x, w], [x]]`: its items batched)
        if isinstance(it, gast.Name) and it.id in self.bound:   # (an enclosing comprehension's
            return ("unsure" if it.id in self.items | self.unsure else None), it   # variable)
        v = self.norm.current.get(it.id) if isinstance(it, gast.Name) else None
        if v in self.norm.tracked:
            return ("items", _batched_items(it)) if v in self.norm.containers else ("unsure", it)
        if not self._reads_tracked(it):     # (`for i in range(len(xs))`: ints)
            return None, it
        # (`for e in [c, w["b"]]`: batched names or their fields, and values read from
        # no tracked one, which the vectorizer broadcasts; not `x.T` of a batched x)
        if isinstance(it, (gast.List, gast.Tuple)) and all(
                self._own_item(e) or not self._mentions_tracked(e) for e in it.elts):
            return "items", _batched_items(it)
        if isinstance(it, (gast.List, gast.Tuple)) and all(   # [[x, w], [x]]: rows of such
                isinstance(r, (gast.List, gast.Tuple)) and all(
                    self._own_item(e) or not self._mentions_tracked(e) for e in r.elts)
                for r in it.elts):
            return "lists", _batched_items(it)
        return "unsure", it

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Subscript(self, node):
        """x.shape[k] is x.shape[k + 1] for k >= 0, and x.shape[k] itself for k < 0."""
        v, k = node.value, node.slice
        if isinstance(v, gast.Attribute) and v.attr == "shape" and isinstance(k, gast.Constant) \
                and type(k.value) is int:
            x = self._queried(v.value)
            if x is not None:
                _guard_query(self.norm, "shape")
            if x is not None and self.norm.computes_query("shape"):
                return self._replace(f"example_shape({{x}})[{k.value}]", v.value, x)
            if x is not None and k.value < 0:
                return node if x == getattr(v.value, "id", None) else \
                    self._replace(f"{{x}}.shape[{k.value}]", v.value, x)
            if x is not None:
                return self._replace(f"{{x}}.shape[{k.value + 1}]", v.value, x)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        x = self._queried(node.value) if node.attr in _PER_EXAMPLE else None
        if x is not None:
            _guard_query(self.norm, node.attr)
            return self._replace(_per_example_form(self.norm, node.attr), node.value, x)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if getattr(self.norm._resolve(node.func), "__secant_example_shapes__", False) and \
                any(self._queried(a) is not None for a in node.args):
            # shape_of(labels, logp) (ad/helpers.py) with a batched argument: the broadcast of
            # each one's shape, each batched one's per example (snp.shape(logp)[1:]), written
            # here, not left to the query's own rewrite (which resolves `snp` in the user's
            # namespace: a module importing secant.numpy as jnp left the batch axis in)
            kws = "".join(f", {k.arg}={gast.unparse(k.value).strip()}" for k in node.keywords)
            new = gast.parse(f"broadcast_shape({', '.join('()' for _ in node.args)}{kws})"
                             ).body[0].value
            new = gast.copy_location(new, node) if hasattr(node, "lineno") else new
            for i, a in enumerate(node.args):
                x = self._queried(a)
                if x is None and self._mentions_tracked(a):
                    # (an expression of batched values: batched, its batch axis in front)
                    x = gast.unparse(a).strip()
                elif x is None:
                    a = self.visit(a)
                new.args[i] = self._replace(
                    _PER_EXAMPLE_CALLS["shape"] if x is not None else "snp.shape({x})", a,
                    x if x is not None else gast.unparse(a).strip())
            return new
        fn = self.norm._resolve(node.func)
        if getattr(fn, "__secant_spec_query__", False) and node.args:
            return self._spec_query(node)
        if (fn is isinstance or callees.type_predicate(fn)) and not node.keywords and \
                any(self._queried(a) is not None for a in node.args):
            # is_array(x), isinstance(x, float) of a Python scalar vmap broadcast beside
            # batched values (a dict's {"n": 2}): each example's is the scalar itself
            for i, a in enumerate(node.args):
                x = self._queried(a)
                if x is not None:
                    node.args[i] = self._replace("example_scalar({x})", a, x)
            return node
        if getattr(fn, "__secant_batch_depth__", None) is True and \
                2 <= len(node.args) <= 3 and not node.keywords and \
                self._queried(node.args[1]) is not None:
            # batch_axis(a, x, depth) in an expression read by a vmap (`out_batch_axis(axis,
            # leaf, depth) + depth` of batch_axis_to's derivative): one more outer axis, as
            # Normalizer.call writes a lone one
            axis = gast.unparse(self.visit(node.args[0])).strip()
            return self._replace("{x}", node.args[1], _deeper_axis_query(
                gast.unparse(node.func).strip(), axis, self._queried(node.args[1]),
                node.args[2:]))
        x = self._queried(node.args[0]) if 1 <= len(node.args) <= 2 and not node.keywords \
            else None
        if x is not None and getattr(self.norm._resolve(node.func), "__secant_batch_depth__",
                                     None) == "size":
            outer = node.args[1].value if len(node.args) == 2 else 0    # example_size(x) read
            query = gast.unparse(node.func).strip()                     # by vmap
            return self._replace(f"{query}({{x}}, {outer + 1})", node.args[0], x)
        if x is not None and len(node.args) == 1:
            obj = self.norm._resolve(node.func)
            kind = _static_query_kind(obj)
            if kind in _PER_EXAMPLE_CALLS and not (kind == "len" and x in self.norm.object_lists):
                return self._replace(_PER_EXAMPLE_CALLS[kind], node.args[0], x)
        return self.generic_visit(node)     # (len(ds) of a list of user objects: its length)


def _batched_items(node):
    """`batched_items(xs)`: the iterable of a comprehension kept in an expression whose
    items' queries are written per example; the vectorizer writes it with every item batched
    (batching/vectorize.py BatchBuilder.items_batched), as these queries read them."""
    call = gast.Call(gast.Name("batched_items", gast.Load(), None, None), [node], [])
    return gast.copy_location(call, node)


def _builds_namedtuple(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields") \
        and hasattr(cls, "_replace")


def _namedtuple_replace(fn):
    """Whether `fn` is a namedtuple class's own _replace (Pt._replace, as desugared)."""
    return getattr(fn, "__name__", None) == "_replace" \
        and getattr(fn, "__module__", None) == "collections"


def _static_query_kind(obj):
    import numpy as np
    import secant.numpy as snp
    for kind, fns in (("shape", (np.shape, snp.shape)), ("ndim", (np.ndim, snp.ndim)),
                      ("size", (np.size, snp.size)), ("len", (len,))):
        if any(obj is f for f in fns):
            return kind
    return "len" if getattr(obj, "__secant_len__", False) else None


def _user_descriptor(cls):
    """(name, class) of a descriptor of the user's that class `cls` (or a base) holds as an
    attribute (`sigma = Positive()`, Positive with __get__/__set__), else None."""
    from secant.transformer.user_objects import _own_descriptor
    for c in getattr(cls, "__mro__", ())[:-1]:
        for k, v in vars(c).items():
            if not k.startswith("__") and _own_descriptor(v):
                return k, type(v)
    return None


def _slices_as_calls(index):
    """`1:n` in an index as `slice(1, n, None)`, a value that can be passed on."""
    def call(n):
        if isinstance(n, gast.Slice):
            parts = [call(p) if p is not None else gast.Constant(None, None)
                     for p in (n.lower, n.upper, n.step)]
            return gast.Call(gast.Name("slice", gast.Load(), None, None), parts, [])
        if isinstance(n, gast.Tuple):
            return gast.Tuple([call(e) for e in n.elts], gast.Load())
        return n
    return call(index)


_CALLED = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def _expression_hint(node):
    """A name for what expression `node` computes: `Vec(y) * 2.0` vec_y_times_2, `-v` neg_v,
    `scale(x)` scale_x; "" where none reads well."""
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return str(node.value).split(".")[0].replace("-", "neg")
    if isinstance(node, gast.Attribute):
        return node.attr
    if isinstance(node, gast.Call) and isinstance(node.func, (gast.Name, gast.Attribute)):
        head = _expression_hint(node.func).lower()
        if head in ("tree_unflatten", "tree_structure") and node.args:
            return _expression_hint(node.args[0])   # (Vector(b) of a pytree class, desugared)
        arg = _expression_hint(node.args[0]) if node.args else ""
        both = "_".join(p for p in (head, arg) if p)
        return both if len(both) <= 24 else head
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _expression_hint(node.operand)
        return inner and f"neg_{inner}"
    if isinstance(node, gast.BinOp) and type(node.op).__name__ in BINOPS:
        hint = suggest(BINOPS[type(node.op).__name__],
                       [ir.Var(h) for h in (_expression_hint(node.left),
                                            _expression_hint(node.right)) if h])
        return hint if len(hint) <= 24 else ""
    return ""


def _statements(body):
    """The statements of `body`, nested ones included, in source order."""
    out = []
    for st in body:
        out.append(st)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(st, field, None)
            if isinstance(inner, list) and not isinstance(st, (gast.FunctionDef,
                                                                 gast.ClassDef)):
                out.extend(_statements(inner))
        for h in getattr(st, "handlers", ()):
            out.extend(_statements(h.body))
    return out


def _local_body_state(fnode, lookup):
    """reads_state_it_sets of a lambda or local def written in the function (its AST `fnode`): a
    call of a function, method or callable object that reaches Python state it reads
    (`rng.next()`), or a name it declares global or nonlocal and reads; else None."""
    declared = {n for s in walk(fnode) if isinstance(s, (gast.Global, gast.Nonlocal))
                for n in s.names}
    updated = {id(n) for s in walk(fnode) if isinstance(s, gast.AugAssign) or isinstance(
        s, gast.Assign) and all(isinstance(t, gast.Name) and t.id in declared for t in s.targets)
        for n in gast.walk(s)}      # (`k += 1`, `k = k + 1`: its update, not a read)
    for n in walk(fnode):
        if isinstance(n, gast.Name) and n.id in declared and isinstance(n.ctx, gast.Load) \
                and id(n) not in updated:
            return f"{n.id} (a name it declares global or nonlocal and sets)"
        callee = isinstance(n, gast.Call) and nonlocals.state_callee(n.func, lookup, n.args)
        if callee and nonlocals.reaches_state(callee) != "unread":
            return f"{getattr(callee, '__qualname__', gast.unparse(n.func).strip())} (it sets " \
                "Python state)"
    return None
