"""Desugaring: Python syntax the canonical form does not have -> the subset it has.

`desugar(fn)` reads `fn`'s source and rewrites, in the user's own names and lines:
- `(y := e)` inside a statement -> `y = e` just before it;
- `y = a if c else b` -> `if c: y = a` / `else: y = b` (`return a if c else b` likewise; one
  inside a larger expression is first assigned to `chosen`);
- `y[i] = v`, `y[i] += v` (-=, *=, /=) on a local array -> `y = y.at[i].set(v)` / `.add(v)`
  (for jit too); on a local list or dict no other name sees -> `l = l[:i] + [v] + l[i + 1:]` /
  `d = d | {k: v}` (transformer/container_updates.py);
- an early `return` -> the rest of the function moved into the branch that does not return
  (a short rest after a statement that only sometimes returns is copied into each path that
  goes on), and one `return result` at the end when the function returns in several places;
  `return v` inside a loop -> a break, and `v` returned after the loop (a loop variable v
  it reads copied from a fresh `item` first, over Python constants);
- `break` / `continue` in a loop -> the rest of the iteration moved into the branch that goes
  on, and a flag (`looping`) that skips the remaining iterations after a break (flags
  `iterating` / `running` guard what follows a statement where only some paths continue or
  return);
- a nested `def h` (or `h = lambda ...`) only ever called -> a function of its own, its free
  locals passed as extra arguments at each call (`h(y, x)`), so each call is differentiated
  through h's own generated derivative; one also (or only) passed to a user helper
  (`rk4(f, y, dt)`, `apply(lambda y: theta * y, x)`) is lifted too and each such call reads
  `rk4_f(y, dt, theta)`: the helper specialised to it (transformer/higher_order.py);
- `*hidden, last = params` -> `hidden = params[:-1]` / `last = params[-1]`;
- `map(f, a)` / `filter(f, a)` -> the generators `(f(v) for v in a)` / `(v for v in a if
  f(v))`; `sorted(d.items(), key=lambda kv: kv[0])` -> `sorted(d.items())` (the same order);
- `global`, `del`, a loop's `else:` and `match` (transformer/statements.py);
- `try:` body with handlers -> its body inline (an exception raised under a transform
  propagates; handlers are not run), `else:` and `finally:` blocks after it; a body of one
  static statement (reading no local) runs with its handlers in a function of its own,
  `caught, value = tried()`, and `if caught:` picks the handler; `with cm as v:`
  -> `context = cm`, `v = context.__enter__()`, its body, `context.__exit__(None, None, None)`.
The result is a new function (source registered, origins mapped to the user's lines), or `fn`
itself when there is nothing to rewrite. Transform-agnostic: grad, jvp and vmap read it
(secant/transforms.py generate); jit reads `desugar(fn, only_choices=True)`, which only turns
conditional expressions into `if`s it can stage, and otherwise traces the user's Python as is.
"""
import ast
import collections
import copy
import functools
import inspect
import itertools
import sys
import types

import gast

from secant.backends.function_cache import FunctionCache
from secant.backends import once
from secant.codegen import loader
from secant.codegen.naming import Names
from secant.transformer import (collection_dicts, container_updates, depth, function_lists,
                                 gast_parse, generators, global_writes, iterators, jax_arrays,
                                 local_classes, namespaces, nonlocals, objects, operators,
                                 python_errors, remat_calls, star_calls, statements, vjp_calls)
from secant.transformer.hoisting import Hoister
from secant.transformer.hygiene import (SCOPES as _SCOPES, Census, copy_tree, walk as _walk,
                                        walk_scope as _walk_scope)
from secant.transformer.parse import FunctionSource, SourceError, function_source, assign, located
from secant.transformer.trace_source import _code_names, _context_generator

_LIBRARY_ROOTS = ("secant", "numpy", "scipy", "jax", "math", "builtins", "functools",
                  "operator", "itertools", "collections", "typing", "abc", "dataclasses",
                  "copy", "inspect", "types", "contextlib", "time", "logging", "warnings")


def _callee_is(d, root, chain, obj):
    """Whether a call spelled `root.chain...` names `obj` (read through modules only)."""
    return d.module_callee(root, list(chain)) is obj


def _call_is(d, call, obj):
    """Whether the call node `call` calls `obj` (itertools.starmap, ...), spelled as a name or
    a module's attribute."""
    f, chain = call.func, []
    while isinstance(f, gast.Attribute):
        chain.insert(0, f.attr)
        f = f.value
    return isinstance(f, gast.Name) and _callee_is(d, f.id, chain, obj)


def _starmap_arity(it, d):
    """How many items each tuple `it` yields holds, where the code says: a zip of n
    sequences, or a display of displays of n items each; else None."""
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "zip" \
            and not d.rebound("zip") and it.args and not it.keywords \
            and not any(isinstance(x, gast.Starred) for x in it.args):
        return len(it.args)
    if isinstance(it, (gast.List, gast.Tuple)) and it.elts and all(
            isinstance(e, (gast.List, gast.Tuple)) and not any(
                isinstance(v, gast.Starred) for v in e.elts) for e in it.elts):
        sizes = {len(e.elts) for e in it.elts}
        return sizes.pop() if len(sizes) == 1 else None
    return None


def _state_named(functions, limit=200):
    """The ids of the mutable objects (lists, dicts, objects, user classes and modules) that
    the user functions `functions` name as globals or closure values, through the user
    functions, @contextmanager generators and classes they name; None where that is too much
    to read (more than `limit` functions)."""
    out, seen, todo = set(), set(), list(functions)

    def named(value):
        if isinstance(value, (int, float, complex, str, bytes, bool, type(None), range)):
            return
        if isinstance(value, tuple) and all(isinstance(v, (int, float, str, bool, type(None)))
                                            for v in value):
            return
        owner = getattr(value, "__self__", None)        # (LOG.append named as a global)
        if isinstance(value, (types.BuiltinMethodType, types.MethodType)) \
                and owner is not None and not isinstance(owner, types.ModuleType):
            return named(owner)
        if isinstance(value, (types.ModuleType, type, types.FunctionType,
                              types.BuiltinFunctionType)):
            root = (value.__name__ if isinstance(value, types.ModuleType) else
                    getattr(value, "__module__", None) or "").split(".")[0]
            if root in _LIBRARY_ROOTS or root in sys.stdlib_module_names:
                return                  # (a library's function, class or module)
        generator = _context_generator(value)
        if generator is not None:
            todo.append(generator)
        elif isinstance(value, types.FunctionType):
            todo.append(value)
        else:                           # (any object, a user class or module: state)
            out.add(id(value))
            cls = value if isinstance(value, type) else type(value)
            todo.extend(v for c in cls.__mro__ for v in vars(c).values()
                        if isinstance(v, types.FunctionType))

    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if len(seen) > limit:
            return None
        for name in _code_names(fn.__code__):
            if name in fn.__globals__:
                named(fn.__globals__[name])
        for cell in fn.__closure__ or ():
            try:
                named(cell.cell_contents)
            except ValueError:      # (an empty cell)
                pass
    return out


_ARRAY_ATTRIBUTES = {"shape", "dtype", "ndim", "size", "T", "mT", "real", "imag", "at",
                     "itemsize", "nbytes", "flat"}
_MAPPING_METHODS = {"get", "items", "values", "keys", "setdefault"}


def _state_read(n, called, params):
    """The parameter (of `params`) whose entry or attribute the node `n` reads as a mutable
    object's, or None: `cfg["scale"]`, `opts.scale`, `cfg.get(...)` (`called`: the ids of the
    attributes called, `x.sum()` an array's method)."""
    if isinstance(n, (ast.Subscript, gast.Subscript)):
        key = n.slice
        if not (isinstance(key, (ast.Constant, gast.Constant)) and isinstance(key.value, str)):
            return None
    elif isinstance(n, (ast.Attribute, gast.Attribute)):
        if n.attr in _ARRAY_ATTRIBUTES or n.attr.startswith("__") or (
                id(n) in called and n.attr not in _MAPPING_METHODS):
            return None
    else:
        return None
    root = n.value
    while isinstance(root, (ast.Subscript, ast.Attribute, gast.Subscript, gast.Attribute)):
        root = root.value
    if isinstance(root, (ast.Name, gast.Name)) and root.id in params:
        return root.id
    return None


def _argument_state_reads(pass_, body, depth=3):
    """The parameters of the function `pass_` transforms that `body` reads as a mutable
    object: an entry by a string key (`cfg["scale"]`), an attribute no array has
    (`opts.scale`), a mapping's method (`cfg.get(...)`), or handed to a user function that
    reads its parameter so (followed `depth` calls deep)."""
    params = pass_.params
    out = set()
    nodes = list(_walk(gast.Module(body=list(body), type_ignores=[])))
    called = {id(n.func) for n in nodes if isinstance(n, gast.Call)}
    for n in nodes:
        name = _state_read(n, called, params)
        if name is not None:
            out.add(name)
        if isinstance(n, gast.Call) and depth > 0:
            obj = pass_._resolved_object(n.func)
            if not isinstance(obj, types.FunctionType) or pass_._library_object(n.func):
                continue
            try:
                inner = _callee_reads(obj, depth - 1)
            except Exception:       # (no source: nothing known of it)
                continue
            names = list(inspect.signature(obj).parameters)
            for k, a in enumerate(n.args):
                if isinstance(a, gast.Name) and a.id in params and k < len(names) \
                        and names[k] in inner:
                    out.add(a.id)
            for kw in n.keywords:
                if isinstance(kw.value, gast.Name) and kw.value.id in params \
                        and kw.arg in inner:
                    out.add(kw.value.id)
    return out


def _callee_reads(fn, depth):
    """The parameters of the user function `fn` that it reads as a mutable object
    (_argument_state_reads of its whole body)."""
    import textwrap

    _ast = ast
    tree = _ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    params = {a.arg for a in _ast.walk(node.args) if isinstance(a, _ast.arg)}
    out = set()
    nodes = list(_ast.walk(node))
    called = {id(n.func) for n in nodes if isinstance(n, _ast.Call)}
    for n in nodes:
        name = _state_read(n, called, params)
        if name is not None:
            out.add(name)
        if isinstance(n, _ast.Call) and depth > 0 and isinstance(n.func, _ast.Name):
            callee = fn.__globals__.get(n.func.id)
            if isinstance(callee, types.FunctionType) and callee is not fn:
                inner = _callee_reads(callee, depth - 1)
                names = list(inspect.signature(callee).parameters)
                for k, a in enumerate(n.args):
                    if isinstance(a, _ast.Name) and a.id in params and k < len(names) \
                            and names[k] in inner:
                        out.add(a.id)
    return out


_cache = FunctionCache("desugared")      # (fn, only_choices) -> its desugared form
_AUG_METHODS = {"Add": "add", "Mult": "multiply", "Div": "divide", "Sub": "add"}
_COPY_LIMIT = 20        # statements of a block copied into each path rather than flag-guarded
_CONTAINER_CALLS = {"list", "dict", "set", "tuple", "sorted", "zip", "enumerate", "range"}


def desugar(fn, only_choices=False):
    """`fn` rewritten into the syntax the normaliser reads (cached), or `fn` itself.
    `only_choices` (what jit reads, transformer/functionalize.py): only `a if c else b` (and
    walruses, to keep their order) become statements, so a traced `c` can be staged."""
    key = (fn, only_choices)
    try:
        hit = _cache.get(key)
    except TypeError:
        return fn
    if hit is not None:
        return hit
    same = _same_code(fn, only_choices)
    if same is not None:
        return same
    # built once (threads wait for the one building it); a recursive call of fn while it is
    # rewritten stays as it is
    made = once.build(_cache, key, lambda: depth.guard(fn, lambda: _desugar(fn, only_choices)),
                      recursive=lambda: fn)
    if made is not fn and _shares_code(fn):
        if len(_by_code) > 4096:
            _by_code.clear()
        _by_code[(fn.__code__, only_choices)] = (fn.__globals__, made)
    return made


_by_code = {}   # (code, only_choices) -> (globals, desugared form) of a function with no cells


def _shares_code(fn):
    """A plain user function with no cells nor defaults (a lambda written in a function's body,
    evaluated anew at each call): any function object of its code and globals is the same."""
    return type(fn) is types.FunctionType and fn.__closure__ is None and not fn.__defaults__ \
        and not fn.__kwdefaults__ and getattr(fn, "__secant_source__", None) is None \
        and not any(k.startswith("__") for k in fn.__dict__)


def _same_code(fn, only_choices):
    """The desugared form made for another function object of fn's code (_shares_code)."""
    if not _shares_code(fn):
        return None
    hit = _by_code.get((fn.__code__, only_choices))
    return hit[1] if hit is not None and hit[0] is fn.__globals__ else None


def desugar_binding(fn, bind):
    """`fn` desugared (not cached), its free names in `bind` bound to the objects given there
    instead of its globals or cells (transformer/runnable.py: the runnable forms of callees)."""
    return _desugar(fn, bind=bind)


def _desugar(fn, only_choices=False, bind=None):
    if not isinstance(fn, types.FunctionType) or (
            getattr(fn, "__secant_source__", None) is not None
            and not getattr(fn, "__secant_functionalized__", False)
            and not getattr(fn, "__secant_only_choices__", False)
            and not getattr(fn, "__secant_user_method__", False)
            and not getattr(fn, "__secant_user_code__", False)):
        return fn       # generated code is in the canonical subset (a staged user function is
                        # the user's code, with what jit could not stage left as written; so is
                        # a user method read as a function of its fields, user_objects.py, a
                        # nested def lifted to a function of its own, normalize.py, and
                        # one whose `a if c else b` only was rewritten, for jit)
    module = getattr(fn, "__module__", None) or ""
    if (module.split(".")[0] == "numpy" or module.startswith("secant.numpy")) and \
            not getattr(fn, "__globals__", {}).get("__secant_by_source__"):
        return fn                       # library functions are ops with rules, never read
                                        # (a by-source module's are read: composite.py)
    try:
        src = function_source(fn)
    except (SourceError, OSError, TypeError, SyntaxError):
        return fn
    if only_choices and not _has(src.node.body, (gast.IfExp, gast.Break, gast.Continue)) and \
            not any(isinstance(n, (gast.Assign, gast.AugAssign)) and isinstance(
                n.targets[0] if isinstance(n, gast.Assign) else n.target, gast.Subscript)
                    for n in _walk_scope(src.node.body)):
        return fn       # (nothing to rewrite: checked before the copy, the common case)
    # a function's own source is parsed anew by each function_source call: its tree is ours to
    # change (a functionalized function's attached tree is shared: copied)
    node = src.node if getattr(fn, "__secant_source__", None) is None else copy_tree(src.node)
    if bind:
        from secant.transformer import runnable
        if runnable.RUN_FORM in bind:
            runnable.wrap_closure_makers(node)
    d = _Desugarer(src, node, only_choices)
    node.body = d.function(node)
    if bind:
        d.lifted.update(bind)
        d.changed = True
    if not d.changed:
        return fn
    return d.load(fn, node)


# statements holding blocks of statements (a def or lambda assigned in one may be hoisted)
_BLOCKS = (gast.For, gast.While, gast.If, gast.With, gast.Try)


def _defined_function(s):
    """The name a statement binds to a function it defines (`def h` or `h = lambda ...`) when
    the function has no defaults or decorators; else None."""
    if isinstance(s, gast.FunctionDef) and not s.decorator_list:
        args = s.args
    elif isinstance(s, gast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda):
        args = s.value.args
    else:
        return None
    if args.defaults or any(d is not None for d in args.kw_defaults):
        return None
    return s.name if isinstance(s, gast.FunctionDef) else s.targets[0].id


def _plain_lambda_assignments(body):
    """`f: T = lambda ...` and `f, g = lambda ..., lambda ...` (whose defaults read none of
    f, g: one after the other, each evaluates as it did) as the plain `f = lambda ...`
    statements they mean (a local's annotation is never evaluated), in `body` and the blocks
    it holds."""
    out = []
    for s in body:
        if isinstance(s, gast.AnnAssign) and isinstance(s.target, gast.Name) \
                and isinstance(s.value, gast.Lambda):
            s = gast.copy_location(gast.Assign(targets=[s.target], value=s.value,
                                               type_comment=None), s)
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], (gast.Tuple, gast.List)) \
                and isinstance(s.value, (gast.Tuple, gast.List)) \
                and len(s.targets[0].elts) == len(s.value.elts) \
                and all(isinstance(t, gast.Name) for t in s.targets[0].elts) \
                and all(isinstance(v, gast.Lambda) for v in s.value.elts) \
                and not _defaults_read(s.value.elts, {t.id for t in s.targets[0].elts}):
            out.extend(gast.copy_location(gast.Assign(targets=[t], value=v, type_comment=None),
                                          s) for t, v in zip(s.targets[0].elts, s.value.elts))
            continue
        if isinstance(s, _BLOCKS):
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, _plain_lambda_assignments(getattr(s, field)))
            for h in getattr(s, "handlers", ()):
                h.body = _plain_lambda_assignments(h.body)
        out.append(s)
    return out


def _defaults_read(lambdas, names):
    """Whether a default of one of `lambdas` reads one of `names`."""
    return any(isinstance(m, gast.Name) and m.id in names
               for v in lambdas for d in v.args.defaults + v.args.kw_defaults if d is not None
               for m in _walk(d))


def _plain_read(v):
    """Whether `v` is a plain read (names, attributes, constant items, arithmetic, displays of
    such): evaluated once per item, as a rewrite may, it does what evaluated once does."""
    return all(isinstance(m, (gast.Name, gast.Attribute, gast.Subscript, gast.Constant,
                              gast.BinOp, gast.UnaryOp, gast.Tuple, gast.List,
                              gast.expr_context, gast.operator, gast.unaryop, gast.Slice))
               for m in _walk(v))


def _mutates(fdef, names):
    """Whether the def `fdef` changes an object one of `names` holds in place (`d[k] = v`,
    `acc.append(v)`, `o.n += 1`): a copy of it would not see that."""
    return any(t.id in names for t in nonlocals.changed_in_place(gast.walk(fdef)))


def _has(stmts, kinds):
    for n in _walk_scope(stmts):
        if isinstance(n, kinds):
            return True
    return False


def _has_exit(stmts, kinds):
    """Whether `stmts` hold an exit of `kinds` that leaves them (break/continue of a nested
    loop belong to it)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPES) or isinstance(n, gast.expr):
            continue
        if isinstance(n, (gast.For, gast.While)):
            if gast.Return in kinds:
                stack.extend(n.body + n.orelse)
            continue
        stack.extend(gast.iter_child_nodes(n))
    return False


def _statements(stmts):
    """The statements of `stmts` and of the blocks they hold (not those of nested defs and
    classes): what _walk_scope finds of them, without walking their expressions."""
    stack = list(stmts)[::-1]
    while stack:
        s = stack.pop()
        yield s
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        inner = []
        for field in ("body", "orelse", "finalbody"):
            inner += getattr(s, field, None) or []
        for part in (getattr(s, "handlers", None) or []) + (getattr(s, "cases", None) or []):
            inner += part.body
        inner.reverse()
        stack += inner


def _walk_loop_body(stmts):
    """Nodes of a loop body, not descending into nested loops or scopes."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, _SCOPES + (gast.For, gast.While)):
            stack.extend(gast.iter_child_nodes(n))


def _replace_node(stmts, old, new):
    for k, s in enumerate(stmts):
        if s is old:
            stmts[k] = new
            return True
        for field in ("body", "orelse", "finalbody"):
            if _replace_node(getattr(s, field, None) or [], old, new):
                return True
        for h in getattr(s, "handlers", None) or []:
            if _replace_node(h.body, old, new):
                return True
    return False


def _key_lookup(s, src):
    """For `try: v = d[k]` with one handler `except KeyError:` (no `as`): the subscript d[k]
    (d a name, k a name or a constant), else None."""
    if len(s.body) != 1 or len(s.handlers) != 1 or not isinstance(s.body[0], gast.Assign):
        return None
    h, value = s.handlers[0], s.body[0].value
    if h.name is not None or not isinstance(h.type, gast.Name) or h.type.id != "KeyError" \
            or src.resolve_name("KeyError")[0] != "builtin":
        return None
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
            and isinstance(value.slice, (gast.Name, gast.Constant)):
        return copy.deepcopy(value)
    return None


def _returns_in(stmts):
    """Whether a return statement is among `stmts` (not inside a nested function)."""
    for st in stmts:
        if isinstance(st, gast.Return):
            return True
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        if any(_returns_in(getattr(st, f, None) or []) for f in ("body", "orelse", "finalbody")) \
                or any(_returns_in(h.body) for h in getattr(st, "handlers", ())):
            return True
    return False


def _field_read(node):
    """`p.f`: a field of a name, read."""
    return isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) \
        and not node.attr.startswith("__")


def _name(id_, store=False):
    return gast.Name(id_, gast.Store() if store else gast.Load(), None, None)


def _at(like, node):
    return located(node, like, only_new=True)


def _nones(target):
    """A loop target with each name -> None (`i, (c, v)` -> `(None, (None, None))`)."""
    if isinstance(target, (gast.Tuple, gast.List)):
        return gast.Tuple(elts=[_nones(e) for e in target.elts], ctx=gast.Load())
    return gast.Constant(None, None)


def _unparse_expr(node):
    """Source text of an expression (the standard library's unparser, as normalize.py's)."""
    return ast.unparse(gast.gast_to_ast(copy.deepcopy(node))).strip()


def _parse(text, like):
    """A statement parsed from `text`, every node at the position of the user's `like`."""
    return located(gast.parse(text).body[0], like)


ANY = object()      # (module_callee: a callee that may be anything)
_COLLECTIONS = (collections.defaultdict, collections.OrderedDict, collections.Counter,
                collections.deque)


def _spells_partial(func):
    """`partial`, `functools.partial` or `tree_util.Partial` as written (what it names is
    checked after)"""
    return isinstance(func, gast.Name) and func.id in ("partial", "Partial") or \
        isinstance(func, gast.Attribute) and func.attr in ("partial", "Partial")


def _is_partial(obj):
    """functools.partial, or tree_util.Partial (a pytree that calls as it)."""
    from secant.tree_util import Partial
    return obj is functools.partial or obj is Partial


def _is_partial_call(node):
    """`partial(h, ...)` / `tree_util.Partial(h, ...)` as written, h a name or attribute."""
    return isinstance(node, gast.Call) and _spells_partial(node.func) and bool(node.args) \
        and isinstance(node.args[0], (gast.Name, gast.Attribute))


def _passed_partials(value):
    """The partials written in place as arguments of calls in `value` (not inside a lambda or
    comprehension, whose names may be its own): [(call, "args", k) / (keyword, "value",
    None)]."""
    found = []
    for n in _walk_scope([value]):
        if isinstance(n, gast.Call) and not _spells_partial(n.func):
            found += [(n, "args", k) for k, a in enumerate(n.args) if _is_partial_call(a)]
            found += [(k, "value", None) for k in n.keywords if _is_partial_call(k.value)]
    return found


def _plain_positional(fn, keywords=()):
    """The parameter names of a plain Python function (positional, no defaults, no *args,
    **kwargs; keyword-only ones only among `keywords`; not secant's own), else None."""
    if not isinstance(fn, types.FunctionType) or fn.__module__.startswith("secant"):
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.default is not p.empty or p.kind is not p.POSITIONAL_OR_KEYWORD and not (
            p.kind is p.KEYWORD_ONLY and p.name in keywords) for p in params):
        return None
    return [p.name for p in params]


class _Desugarer:
    def __init__(self, src, node, only_choices=False):
        self.src = src
        self.only_choices = only_choices
        self.node = node
        self._census = Census(node)     # (what the tree holds, asked by the passes below)
        self.names = Names(self._census.names | set(src.closure))
        self.changed = False
        self.item_updates = False   # a `y[i] = v` rewritten: the function as written cannot
                                    # run on secant arrays or tracers (transformer/runnable.py)
        self.lifted = {}            # name -> lifted function (a nested def only ever called)
        self.closures = False       # a nested def used as a value made a Closure object
        self.containers = set()     # locals bound to a list/dict/set (not arrays)
        self.updatable = {}         # local -> "list" | "dict" | None: whether its item
                                    # assignments rebuild it (transformer/container_updates.py)
        self.flag_uses = set()      # exit flags something reads
        self.break_flags = set()    # `looping` of each loop that breaks (a bool per example)
        self.held = set()           # names holding a loop's iterable read twice (_iterable_first)
        self.tree_names = {}        # name -> secant.tree_util function the rewrites call
        self._rebound = {}          # builtin name -> whether the function rebinds it

    def error(self, node, message):
        return self.src.error(node, message)

    def census(self):
        """What the function's tree holds (hygiene.Census), while no pass has changed it;
        else None (a pass then walks the tree as it is now)."""
        return None if self.changed else self._census

    def module_callee(self, root, chain):
        """What a call of `root.chain...` names, read through modules' dicts only and without
        recording the look-up (a cheap test before a pass walks the tree): None for a
        parameter (nothing known now), ANY where it may be anything (an attribute of
        anything but a module)."""
        if root in self.params:
            return None
        _, obj = self.src._lookup(root)
        for attr in chain:
            if type(obj) is not types.ModuleType or attr not in obj.__dict__:
                return ANY
            obj = obj.__dict__[attr]
        return obj

    # --- the function ---------------------------------------------------------------------------
    def function(self, node):
        self.params = {a.id for a in _walk(node.args) if isinstance(a, gast.Name)}
        self._find_containers(node.body)
        body = python_errors.rewrite(self, node.body)   # frozen[k] = v: Python's TypeError
        if self.only_choices:       # (body = jax.checkpoint(cell) if remat else cell: one cell)
            return self.block(remat_calls.rewrite(self, body))
        body = local_classes.rewrite(self, body)    # class Acc: ... made once, now
        body = global_writes.rewrite(self, body)    # global COUNT; COUNT += 1
        body = generators.rewrite(self, body)       # for w in layers(p): a generator's list
        body = jax_arrays.rewrite(self, body)       # snp.sin(A(x)), A with __jax_array__
        census = self.census()
        if census is None or census.on_call or any(
                _may_be_tree_call(self, root, chain) for root, chain in census.call_chains):
            body = _TreeCalls(self).visit_body(body)    # (else no call it rewrites: one walk)
        body = vjp_calls.rewrite(self, body)        # y, pb = vjp(f, x); pb(ct)
        body = namespaces.rewrite(self, body)       # b = SimpleNamespace(v=x); b.v += y
        body = star_calls.rewrite(self, body)       # h(*g(a)), (lambda x: ...)(a)
        body = remat_calls.rewrite(self, body)      # lax.scan(jax.checkpoint(cell), ...)
        body = function_lists.rewrite(self, body)   # fs = [lambda t: ..., ...]; for g in fs
        body = collection_dicts.rewrite(self, body)  # d = defaultdict(float); d[k] += v
        body = collection_dicts.setdefault_growths(self, body)  # d.setdefault(k, []).append(v)
        body = iterators.rewrite(self, body)        # it = iter(xs); a = next(it)
        body = self.lift_local_functions(body)
        body = self.block(body)
        return self.returns(body)

    def _find_containers(self, body):
        for n in _statements(body):
            if isinstance(n, gast.Assign):
                v = n.value
                is_container = isinstance(v, (gast.List, gast.Dict, gast.Set, gast.ListComp,
                                              gast.DictComp, gast.SetComp, gast.Tuple)) or (
                    isinstance(v, gast.Call) and isinstance(v.func, gast.Name)
                    and v.func.id in _CONTAINER_CALLS) or (
                    isinstance(v, gast.BinOp) and isinstance(v.left, (gast.List, gast.Tuple)))
                if is_container or self._numpy_value(v) or self._collections_value(v):
                    for t in n.targets:
                        for m in _walk(t):
                            if isinstance(m, gast.Name):
                                self.containers.add(m.id)

    def _collections_value(self, value):
        """A collections.defaultdict / OrderedDict / Counter / deque call: a mutable container,
        its items set in place as Python does (never an array's .at[] update)."""
        if not isinstance(value, gast.Call):
            return False
        f, chain = value.func, []
        while isinstance(f, gast.Attribute):
            chain.insert(0, f.attr)
            f = f.value
        if not isinstance(f, gast.Name) or f.id in self.params:
            return False
        obj = self.module_callee(f.id, chain)
        return obj is not ANY and obj is not None and obj in _COLLECTIONS

    def _numpy_value(self, value):
        """A NumPy call (np.zeros(3)): a mutable ndarray, updated in place as Python does."""
        if not isinstance(value, gast.Call):
            return False
        f = value.func
        while isinstance(f, gast.Attribute):
            f = f.value
        if not isinstance(f, gast.Name):
            return False
        _, obj = self.src.resolve_name(f.id)
        return getattr(obj, "__name__", "").split(".")[0] == "numpy"

    # --- statements -------------------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.statement(s))
        return out

    def statement(self, s):
        if not self.only_choices:
            self.builtin_maps(s)
            self.endless_repeats(s)
        rewritten = None if self.only_choices else statements.rewrite(self, s)
        if rewritten is not None:       # global, del, loop else:, match (statements.py)
            self.changed = True
            return self.block(rewritten)
        if isinstance(s, gast.If):
            pre = self.hoist(s, "test")
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return pre + [s]
        if isinstance(s, gast.For):
            pre = self.hoist(s, "iter")
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return pre + ([s] if self.only_choices and not self.stageable_exits(s)
                          else self.loop_exits(s))
        if isinstance(s, gast.While):
            if _has([s.test], gast.NamedExpr):
                if _has(s.body, gast.Continue) or _has(s.body, gast.NamedExpr):
                    raise self.error(s, "a walrus (:=) in a while test cannot be transformed "
                                     "yet where the body continues; assign before the loop "
                                     "and at the end of its body")
                # `while (n := n - 1) > 0: body` -> `n = n - 1` / `while n > 0: body; n = n - 1`
                # (the test's assignments run before each test, as Python runs them)
                pre = self.hoist(s, "test")
                s.body = s.body + copy.deepcopy(pre)
                self.changed = True
                return self.block(pre) + self.statement(s)
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return [s] if self.only_choices and not self.stageable_exits(s) \
                else self.loop_exits(s)
        if self.only_choices and isinstance(s, (gast.Try, gast.With)):
            return [s]
        if isinstance(s, gast.Try):
            return self.try_block(s)
        if isinstance(s, gast.With):
            return self.with_block(s)
        if not self.only_choices and isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], (gast.Tuple, gast.List)) and \
                any(isinstance(e, gast.Starred) for e in s.targets[0].elts):
            return self.block(self.star_unpack(s))
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.value, gast.IfExp) and isinstance(s.targets[0], gast.Name):
            return self.if_expression(s, lambda v: gast.Assign(targets=copy.deepcopy(s.targets),
                                                               value=v, type_comment=None))
        if isinstance(s, gast.Return) and isinstance(s.value, gast.IfExp):
            return self.if_expression(s, lambda v: gast.Return(value=v))
        if not self.only_choices and isinstance(s, (gast.Assign, gast.AugAssign)):
            rebuilt = container_updates.rewrite(self, s)    # l[i] = v on a local list or dict
            if rebuilt is not None:
                return rebuilt
        if not self.only_choices:
            pre = container_updates.hoist_pops(self, s)     # f(d.pop(k)): v = d.pop(k) first
            if pre:
                self.changed = True
                return self.block(pre + [s])
        if not self.only_choices and isinstance(s, (gast.Expr, gast.Assign)):
            rebuilt = container_updates.rewrite_method(self, s)     # d.update(...)
            if rebuilt is not None:
                return self.block(rebuilt)
        if isinstance(s, (gast.Assign, gast.AugAssign)) and self._item_update(s):   # (jit too:
            # a traced array takes no item assignment)
            return self.item_update(s)
        if isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return,
                          gast.Assert)):
            field = "value" if not isinstance(s, gast.Assert) else "test"
            expr = getattr(s, field, None)
            census = self.census()
            if expr is not None and not self.only_choices and (
                    census is None or census.has(gast.NamedExpr)):
                pre = self.walrus_comprehension(s, field)
                if pre:
                    return self.block(pre + [s])
            if expr is None or census is not None and not census.has(
                    gast.NamedExpr, gast.IfExp) or not _has([expr], (gast.NamedExpr, gast.IfExp)):
                return [s]      # (neither a walrus nor a choice: one walk, not two)
            pre = self.hoist(s, field, choices=True)
            return pre + self.hoist_choices(s, field) + [s]
        return [s]

    def builtin_maps(self, s):
        """`map(f, a, b)` (Python's map) -> `(f(v, w) for v, w in zip(a, b))`, and
        `map(lambda w: e, a)` -> `(e for w in a)`: the generator the transforms follow;
        `filter(f, a)` -> `(v for v in a if f(v))` (`filter(None, a)`: `if v`)."""
        census = self.census()
        starmaps = census is None or any(_callee_is(self, root, chain, itertools.starmap)
                                         for root, chain in census.call_chains)
        if census is not None and not census.names & {"map", "filter", "sorted"} \
                and not starmaps:
            return          # (none read anywhere in the function)
        parts = [getattr(s, f, None) for f in ("value", "test", "iter")]
        read = {n.id for p in parts if p is not None for n in _walk(p)
                if isinstance(n, gast.Name) and n.id in ("map", "filter", "sorted")}
        read = {b for b in read if not self.rebound(b)}
        if not read and not starmaps:
            return          # (no map read here: the function's stores unwalked)
        outer = self

        class Maps(gast.NodeTransformer):
            def visit_Call(self, n):
                self.generic_visit(n)
                if starmaps and len(n.args) == 2 and not n.keywords and not any(
                        isinstance(a, gast.Starred) for a in n.args) and \
                        _call_is(outer, n, itertools.starmap):
                    return outer.starmap(n)
                if _sorted_items_by_key(n) and not outer.rebound("sorted"):
                    n.keywords = []             # sorted(d.items(), key=lambda kv: kv[0]): the
                    outer.changed = True        # keys are distinct, the pairs' own order
                    return n
                if isinstance(n.func, gast.Name) and n.func.id == "filter" and "filter" in read \
                        and len(n.args) == 2 and not n.keywords \
                        and not any(isinstance(a, gast.Starred) for a in n.args):
                    return outer.builtin_filter(n)
                if not (isinstance(n.func, gast.Name) and n.func.id == "map" and "map" in read
                        and len(n.args) >= 2
                        and not n.keywords
                        and not any(isinstance(a, gast.Starred) for a in n.args)):
                    return n
                f, iters = n.args[0], n.args[1:]
                a = f.args if isinstance(f, gast.Lambda) else None
                if a is not None and not (a.vararg or a.kwarg or a.kwonlyargs or a.defaults
                                          or a.posonlyargs) and len(a.args) == len(iters):
                    names, elt = [p.id for p in a.args], f.body
                else:
                    names = [outer.names.fresh("item") for _ in iters]
                    elt = gast.Call(func=f, args=[_name(v) for v in names], keywords=[])
                target = _name(names[0], store=True) if len(names) == 1 else gast.Tuple(
                    elts=[_name(v, store=True) for v in names], ctx=gast.Store())
                it = iters[0] if len(iters) == 1 else gast.Call(
                    func=_name("zip"), args=list(iters), keywords=[])
                return outer.comprehension(gast.GeneratorExp, elt, target, it, [], n)
        self.visit_heads(s, Maps())

    def endless_repeats(self, s):
        """`zip(xs, itertools.repeat(v))` (an endless iterator bounded by the other arguments:
        repeat without a count, count, cycle) -> `[(xs_item, v) for xs_item in xs]`, the list
        the transforms follow; `zip(itertools.count(1), xs)` -> `[(k + 1, xs_item) for k,
        xs_item in enumerate(xs)]`, `zip(xs, itertools.cycle(ws))` -> `ws[k % len(ws)]` (their
        arguments plain reads, evaluated per item; a zip of endless iterators only, or of
        arguments that call something, stays as written)."""
        census = self.census()
        if census is not None and "zip" not in census.names or self.rebound("zip"):
            return
        outer = self

        class Repeats(gast.NodeTransformer):
            def visit_Call(self, n):
                self.generic_visit(n)
                if isinstance(n.func, gast.Name) and n.func.id == "zip" and not outer.rebound(
                        "iter") and (groups := iterators.grouped(n)) is not None:
                    outer.changed = True        # zip(*[iter(xs)] * 2): zip(xs[0::2], xs[1::2])
                    return groups
                if not (isinstance(n.func, gast.Name) and n.func.id == "zip" and n.args
                        and not n.keywords
                        and not any(isinstance(a, gast.Starred) for a in n.args)):
                    return n
                endless = [outer._endless(a) for a in n.args]
                if all(e is None for e in endless) or all(e is not None for e in endless):
                    return n
                bounded = [a for a, e in zip(n.args, endless) if e is None]
                names = [outer.names.fresh(f"{a.id}_item" if isinstance(a, gast.Name)
                                           else "item") for a in bounded]
                k = outer.names.fresh("k") if any(e[1] for e in endless if e) else None
                given = iter(names)
                elts = [_name(next(given)) if e is None else e[0](k) for e in endless]
                stored = [_name(v, store=True) for v in names]
                target = stored[0] if len(stored) == 1 else gast.Tuple(elts=stored,
                                                                       ctx=gast.Store())
                it = bounded[0] if len(bounded) == 1 else gast.Call(
                    func=_name("zip"), args=bounded, keywords=[])
                if k is not None:
                    target = gast.Tuple(elts=[_name(k, store=True), target], ctx=gast.Store())
                    it = gast.Call(func=_name("enumerate"), args=[it], keywords=[])
                return outer.comprehension(gast.ListComp, gast.Tuple(elts=elts, ctx=gast.Load()),
                                           target, it, [], n)
        self.visit_heads(s, Repeats())

    def comprehension(self, kind, elt, target, it, ifs, call):
        """The comprehension `kind` (GeneratorExp, ListComp) `elt for target in it if ifs`
        that replaces `call`, its new parts at the call's position."""
        comp = kind(elt=elt, generators=[gast.comprehension(target=target, iter=it, ifs=ifs,
                                                            is_async=0)])
        for m in _walk(comp):
            if getattr(m, "lineno", None) is None and isinstance(m, gast.expr):
                gast.copy_location(m, call)
        self.changed = True
        return gast.copy_location(comp, call)

    @staticmethod
    def visit_heads(s, visitor):
        """`visitor` over the statement's own expressions a call rewrite reads: its value,
        test and iterable."""
        for field in ("value", "test", "iter"):
            if getattr(s, field, None) is not None:
                setattr(s, field, visitor.visit(getattr(s, field)))

    def _endless(self, call):
        """For itertools.repeat(v) (no count), count(start, step) and cycle(c) with plain-read
        arguments: (a function of the item's index name giving the item, whether it reads
        the index); else None."""
        if not (isinstance(call, gast.Call) and not call.keywords
                and not any(isinstance(a, gast.Starred) for a in call.args)
                and all(_plain_read(a) for a in call.args)):
            return None
        f, chain = call.func, []
        while isinstance(f, gast.Attribute):
            chain.insert(0, f.attr)
            f = f.value
        if not isinstance(f, gast.Name):
            return None
        obj = self.module_callee(f.id, chain)
        args = call.args
        if obj is itertools.repeat and len(args) == 1:
            return (lambda k: copy.deepcopy(args[0])), False
        if obj is itertools.count and len(args) <= 2:
            def item(k):
                out = _name(k)
                if len(args) == 2:
                    out = gast.BinOp(left=copy.deepcopy(args[1]), op=gast.Mult(), right=out)
                if args:
                    out = gast.BinOp(left=copy.deepcopy(args[0]), op=gast.Add(), right=out)
                return out
            return item, True
        if obj is itertools.cycle and len(args) == 1:
            return (lambda k: gast.Subscript(
                value=copy.deepcopy(args[0]), ctx=gast.Load(), slice=gast.BinOp(
                    left=_name(k), op=gast.Mod(), right=gast.Call(
                        func=_name("len"), args=[copy.deepcopy(args[0])], keywords=[])))), True
        return None

    def starmap(self, n):
        """`itertools.starmap(f, pairs)` -> `(f(a, b) for a, b in pairs)` (a lambda's body on
        its own parameter names; the arity that of the lambda or of a zip of n sequences,
        else `(f(*item) for item in pairs)`)."""
        f, it = n.args
        a = f.args if isinstance(f, gast.Lambda) else None
        if a is not None and not (a.vararg or a.kwarg or a.kwonlyargs or a.defaults
                                  or a.posonlyargs) and a.args:
            names, elt = [p.id for p in a.args], f.body
        elif (n_items := _starmap_arity(it, self)) is not None:
            names = [self.names.fresh("item") for _ in range(n_items)]
            elt = gast.Call(func=f, args=[_name(v) for v in names], keywords=[])
        else:
            item = self.names.fresh("item")
            return self.comprehension(gast.GeneratorExp, gast.Call(
                func=f, args=[gast.Starred(value=_name(item), ctx=gast.Load())], keywords=[]),
                _name(item, store=True), it, [], n)
        target = gast.Tuple(elts=[_name(v, store=True) for v in names], ctx=gast.Store())
        return self.comprehension(gast.GeneratorExp, elt, target, it, [], n)

    def builtin_filter(self, n):
        """`filter(f, a)` as the generator `(v for v in a if f(v))` (a lambda's body on its own
        parameter name; `filter(None, a)` tests `v` itself)."""
        f, it = n.args
        a = f.args if isinstance(f, gast.Lambda) else None
        if a is not None and not (a.vararg or a.kwarg or a.kwonlyargs or a.defaults
                                  or a.posonlyargs) and len(a.args) == 1:
            name, test = a.args[0].id, f.body
        else:
            name = self.names.fresh("item")
            test = _name(name) if isinstance(f, gast.Constant) and f.value is None else \
                gast.Call(func=f, args=[_name(name)], keywords=[])
        return self.comprehension(gast.GeneratorExp, _name(name), _name(name, store=True), it,
                                  [test], n)

    def rebound(self, builtin):
        """Whether the name `builtin` (map, zip, ...) is not Python's builtin here: a global,
        or an assignment in the function, rebinds it (walked once per function and name)."""
        hit = self._rebound.get(builtin)
        if hit is None:
            hit = self._rebound[builtin] = self.src.resolve_name(builtin)[0] != "builtin" or \
                statements._stores(self.node, builtin)
        return hit

    def star_unpack(self, s):
        """`*hidden, last = params` -> `hidden = params[:-1]` / `last = params[-1]` (the
        starred part a slice; a value that is not a name is assigned to `unpacked` first)."""
        elts = s.targets[0].elts
        star = [k for k, e in enumerate(elts) if isinstance(e, gast.Starred)]
        if len(star) != 1 or not isinstance(elts[star[0]].value, gast.Name):
            raise self.error(s, "one starred name (`*rest`) can be unpacked into")
        k, n = star[0], len(elts)
        pre = []
        if isinstance(s.value, gast.Name):
            seq = s.value.id
        else:
            seq = self.names.fresh("unpacked")
            pre.append(assign(seq, s.value, s))
        out = []
        for j, e in enumerate(elts):
            if j < k:
                index = str(j)
            elif j == k:
                index = f"{k}:{j - n + 1 if j - n + 1 < 0 else ''}"
            else:
                index = str(j - n)
            target = gast.unparse(e.value if j == k else e).strip()
            out.append(_parse(f"{target} = {seq}[{index}]", s))
        self.changed = True
        return pre + out

    def hoist_choices(self, stmt, field):
        """`snp.sum(a if c else b)` -> `if c: chosen = a` / `else: chosen = b` before the
        statement, then `snp.sum(chosen)` (choices between constants stay as written)."""
        expr = getattr(stmt, field, None)
        if expr is None or not _has([expr], gast.IfExp):
            return []
        pre = []
        outer = self

        class Hoist(gast.NodeTransformer):
            def visit_IfExp(self, n):
                if isinstance(n.body, gast.Constant) and isinstance(n.orelse, gast.Constant):
                    return n
                n.test = self.visit(n.test)
                name = outer.names.fresh("chosen")
                pre.extend(outer.statement(assign(name, n, stmt)))
                return gast.copy_location(_name(name), n)

            def _keep(self, n):         # evaluated only sometimes, or in a scope of its own
                return n

            visit_BoolOp = visit_Lambda = visit_ListComp = visit_DictComp = _keep
            visit_SetComp = visit_GeneratorExp = _keep

        setattr(stmt, field, Hoist().visit(expr))
        if pre:
            self.changed = True
        return pre

    # --- walrus -----------------------------------------------------------------------------------
    def walrus_comprehension(self, stmt, field):
        """`[y := y * 2 for _ in range(3)]` in stmt.<field> (a walrus in a list comprehension's
        item or test binds y in the function, as Python's PEP 572 says) -> before stmt,
        `ys = []` / `for _ in range(3): ys.append(y := y * 2)` (the loop's target a fresh
        name, the comprehension's own), and `ys` in its place: the walrus is then a statement
        of the loop body. A comprehension evaluated only sometimes (in and/or, a conditional
        expression, a lambda) stays as written."""
        expr = getattr(stmt, field)
        found = []

        class Find(gast.NodeVisitor):
            def visit_ListComp(self, n):
                if not found and _has([n.elt] + [i for g in n.generators for i in g.ifs],
                                      gast.NamedExpr) and not any(
                        _has([g.iter], gast.NamedExpr) for g in n.generators):
                    found.append(n)

            def _skip(self, n):
                pass

            visit_BoolOp = visit_IfExp = visit_Lambda = _skip
            visit_SetComp = visit_DictComp = visit_GeneratorExp = _skip

        Find().visit(expr)
        if not found:
            return []
        comp = found[0]
        walrus = {n.target.id for part in [comp.elt] + [i for g in comp.generators
                                                         for i in g.ifs]
                  for n in _walk_scope([part]) if isinstance(n, gast.NamedExpr)}
        early = [m for m in _walk(expr) if isinstance(m, gast.Name) and m.id in walrus
                 and isinstance(m.ctx, gast.Load) and getattr(m, "lineno", None) is not None
                 and (m.lineno, m.col_offset) < (comp.lineno, comp.col_offset)]
        if early:
            raise self.error(comp, f"{early[0].id} is read before the walrus (:=) in the "
                             "comprehension that assigns it, in the same expression; split it "
                             "into two statements")
        renamed = {}
        for g in comp.generators:
            for m in _walk(g.target):
                if isinstance(m, gast.Name) and m.id not in renamed:
                    renamed[m.id] = self.names.fresh(m.id if m.id != "_" else "item")

        class Rename(gast.NodeTransformer):
            def visit_Name(self, n):
                if n.id in renamed:
                    n.id = renamed[n.id]
                return n
        seq = self.names.fresh(f"{sorted(walrus)[0]}s")     # [y := ... ]: ys
        comp = copy.deepcopy(comp)
        body = [_at(stmt, gast.Expr(value=gast.Call(
            func=gast.Attribute(value=_name(seq), attr="append", ctx=gast.Load()),
            args=[Rename().visit(comp.elt)], keywords=[])))]
        for k, g in reversed(list(enumerate(comp.generators))):
            for test in reversed(g.ifs):
                body = [_at(stmt, gast.If(test=Rename().visit(test), body=body, orelse=[]))]
            body = [_at(stmt, gast.For(target=Rename().visit(g.target),
                                       iter=g.iter if k == 0 else Rename().visit(g.iter),
                                       body=body, orelse=[], type_comment=None))]

        class Replace(gast.NodeTransformer):
            def visit_ListComp(self, n):
                if n is found[0]:
                    return gast.copy_location(_name(seq), n)
                return self.generic_visit(n)
        setattr(stmt, field, Replace().visit(expr))
        self.containers.add(seq)
        self.changed = True
        return [_parse(f"{seq} = []", stmt)] + body

    def hoist(self, stmt, field, choices=False):
        """`(y := e)` in stmt.<field> -> `y = e` before stmt (in evaluation order). `choices`:
        the caller makes each `a if c else b` left in stmt statements of their own
        (hoist_choices, if_expression), so a walrus in a or b is left for those."""
        expr = getattr(stmt, field, None)
        if expr is None or not _has([expr], gast.NamedExpr):
            return []
        pre = []
        later = set()       # ids of names read after the walrus visited, whatever their place
        outer = self

        class Hoist(gast.NodeTransformer):
            def visit_NamedExpr(self, n):
                n.value = self.visit(n.value)
                target = n.target.id
                early = [m for m in _walk(expr) if isinstance(m, gast.Name)
                         and m.id == target and isinstance(m.ctx, gast.Load)
                         and (m.lineno, m.col_offset) < (n.lineno, n.col_offset)
                         and id(m) not in later]
                if early:
                    raise outer.error(n, f"{target} is read before the walrus (:=) that "
                                      "assigns it in the same expression; split it into two "
                                      "statements")
                pre.append(assign(target, n.value, stmt))
                return gast.copy_location(_name(target), n)

            def _short(self, n):        # parts evaluated only sometimes: leave them alone
                if _has([n], gast.NamedExpr):
                    raise outer.error(n, "a walrus (:=) inside and/or, a conditional expression, "
                                      "a lambda or a comprehension cannot be transformed yet; "
                                      "assign it in a statement of its own")
                return n

            def visit_IfExp(self, n):   # the test always runs first: its walrus is hoisted
                if not choices:
                    return self._short(n)
                branches = {id(m) for m in _walk(gast.Tuple(elts=[n.body, n.orelse],
                                                                ctx=gast.Load()))}
                later.update(branches)          # (`n * x if (n := k) > 2 else x`: read after)
                n.test = self.visit(n.test)
                later.difference_update(branches)
                return n

            visit_BoolOp = visit_Lambda = visit_ListComp = _short
            visit_DictComp = visit_SetComp = visit_GeneratorExp = _short

        setattr(stmt, field, Hoist().visit(expr))
        self.changed = True
        return pre

    # --- x if c else y ----------------------------------------------------------------------------
    def if_expression(self, s, make):
        """`y = a if c else b` -> an if statement assigning y in each branch (nested chains
        `a if c else b if d else e` become elif)."""
        pre = self.hoist(s, "value", choices=True)
        e = s.value
        branches = []
        for value in (e.body, e.orelse):
            stmt = _at(s, make(value))
            branches.append(self.statement(stmt))
        test = gast.If(test=e.test, body=branches[0], orelse=branches[1])
        self.changed = True
        return pre + [_at(s, gast.copy_location(test, s))]

    # --- x[i] = v ---------------------------------------------------------------------------------
    def _item_update(self, s):
        """Whether `s` is `y[i] = v` (or `y[i] += v`) rewritten by item_update: True for an
        array, "maybe a dict" for a parameter or a local read from a container
        (`layer = params["layer"]`), which may hold a dict as well as an array."""
        target = s.targets[0] if isinstance(s, gast.Assign) else s.target
        if isinstance(s, gast.Assign) and len(s.targets) != 1:
            return False
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)) \
                or getattr(s, "_secant_as_written", False):
            return False
        name = target.value.id
        if name in self.containers or name in self.src.closure or (
                self.only_choices and python_errors.sets_items_itself(self, name)):
            return False
        maybe_dict = self._maybe_dict(name, target)
        if name in self.params:
            return maybe_dict
        assigned = any(isinstance(m, gast.Name) and m.id == name and isinstance(m.ctx, gast.Store)
                       for m in _walk_scope(self.node.body))
        if not assigned:
            return False
        if maybe_dict:
            return maybe_dict
        seen_by = self._read_from_and_seen(name, s)
        if seen_by:
            raise self.error(s, f"{name}[...] = ... changes in place a value read from "
                             f"{seen_by}, and {seen_by} is read again after this line (in "
                             f"Python it would see the change; a source transform rebuilds "
                             f"{name} instead): set the item in {seen_by} itself (e.g. "
                             f"{seen_by} = {seen_by} | {{k: v}}) or pass {name} on")
        if isinstance(s, gast.AugAssign) and type(s.op).__name__ not in _AUG_METHODS:
            raise self.error(s, f"the in-place update {type(s.op).__name__} of an array item "
                             "cannot be transformed; write x = x.at[i].<method>(v)")
        return True

    def _maybe_dict(self, name, target):
        """"maybe a dict" when `name[key] = v` may set a dict's item: name a parameter, or a
        local every assignment of which reads it from a container (`layer = params["layer"]`,
        `p = params.get("layer")`), the key no slice, and name's own value seen by no other
        name (a parameter bound to another name, `old = params`; a container the local was
        read from, read again elsewhere in the function): the dict's update is then a
        functional copy (`d = d | {k: v}`), as a transform's copy of its arguments sees it.
        False otherwise."""
        if isinstance(target.slice, gast.Slice) or (isinstance(target.slice, gast.Tuple) and any(
                isinstance(e, gast.Slice) for e in target.slice.elts)):
            return False
        stores = [n for n in _walk_scope(self.node.body)
                  if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)]
        assigns = [n for n in _walk_scope(self.node.body) if isinstance(n, gast.Assign)
                   and any(isinstance(t, gast.Name) and t.id == name for t in n.targets)]
        aliased = any(isinstance(n, gast.Assign) and isinstance(n.value, gast.Name)
                      and n.value.id == name for n in _walk_scope(self.node.body))
        if aliased:
            return False
        if not (isinstance(target.slice, gast.Constant) and isinstance(target.slice.value, str)) \
                and not self._read_as_dict(name):
            return False        # (x[i] = v, x read as an array only: an array's update)
        if name in self.params:     # (x[0] = v of an array parameter: refused as written)
            if isinstance(target.slice, gast.Constant) and not isinstance(target.slice.value,
                                                                          str):
                return False
            return False if stores and len(stores) != len(assigns) else "maybe a dict"
        if stores and isinstance(target.slice, gast.Constant) \
                and isinstance(target.slice.value, str) and self._bound_from_calls(name, stores):
            # a str key is no array's index: `metrics["total"] = v` sets the item of a dict a
            # call made (unpacked from value_and_grad's has_aux pair, `aux(p)[1]`): a new
            # dict no other name holds, so its functional copy is what Python would see
            return "maybe a dict"
        if not stores or len(stores) != len(assigns) or any(len(a.targets) != 1
                                                             for a in assigns):
            return False
        roots = self._read_from(assigns, dict_get=True)
        if roots is None:
            return False
        return False if self._root_read_after(roots, target) else "maybe a dict"

    def _bound_from_calls(self, name, stores):
        """Whether every binding of `name` (its Name stores `stores`) is an assignment of a
        call's result, or of an item of one, to it or to a tuple holding it
        (`(loss, metrics), grads = value_and_grad(f, has_aux=True)(p)`, `m = aux(p)[1]`)."""
        bound = 0
        for a in _walk_scope(self.node.body):
            if not isinstance(a, gast.Assign):
                continue
            here = sum(1 for t in a.targets for n in _walk(t) if isinstance(n, gast.Name)
                       and n.id == name and isinstance(n.ctx, gast.Store))
            if not here:
                continue
            v = a.value
            while isinstance(v, gast.Subscript):
                v = v.value
            if not isinstance(v, gast.Call):
                return False
            bound += here
        return bound == len(stores)

    def _read_from_and_seen(self, name, s):
        """The container `name` was read from (`layer = params["layer"]`, its only
        assignments) when the function reads that container again after statement `s`
        (an in-place update of `name` it would see), else None."""
        roots = self._read_from([a for a in _walk_scope(self.node.body)
                                 if isinstance(a, gast.Assign) and any(
                                     isinstance(t, gast.Name) and t.id == name
                                     for t in a.targets)])
        return self._root_read_after(roots or set(), s)

    @staticmethod
    def _read_from(assigns, dict_get=False):
        """The names of the containers the assignments `assigns` read their value from
        (`params` of `layer = params["layer"]`), or None where one assigns anything else.
        With dict_get, `params.get("layer")` reads params too, and a container that is no
        name (`f()["layer"]`) gives None; without, it is left out."""
        roots = set()
        for a in assigns:
            v = a.value
            if dict_get and isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) \
                    and v.func.attr == "get":
                v = v.func
            if not isinstance(v, (gast.Subscript, gast.Attribute)):
                return None
            while isinstance(v, (gast.Subscript, gast.Attribute)):
                v = v.value
            if isinstance(v, gast.Name):
                roots.add(v.id)
            elif dict_get:
                return None
        return roots

    def _root_read_after(self, roots, node):
        """The first of the names `roots` the function reads after `node`'s line, or None."""
        line = getattr(node, "lineno", None) or 0
        for n in _walk_scope(self.node.body):
            if isinstance(n, gast.Name) and n.id in roots and isinstance(n.ctx, gast.Load) \
                    and (getattr(n, "lineno", None) or 0) > line:
                return n.id
        return None

    def _read_as_dict(self, name):
        """Whether the function reads `name` as a dict somewhere: `name["w"]`, name.get(k),
        name.items(), .keys(), .values()."""
        for n in _walk_scope(self.node.body):
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) \
                    and n.value.id == name and isinstance(n.slice, gast.Constant) \
                    and isinstance(n.slice.value, str):
                return True
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                    and isinstance(n.func.value, gast.Name) and n.func.value.id == name \
                    and n.func.attr in ("get", "items", "keys", "values"):
                return True
        return False

    def item_update(self, s, as_array=False):
        """`y[i] = v` -> `y = y.at[i].set(v)`; `y[i] += v` -> `y = y.at[i].add(v)`. Where y
        may hold a dict (_maybe_dict), `if isinstance(y, dict): y = y | {i: v}` first (a dict's
        item set as a functional copy), the array's update in the else branch (a parameter's
        as written: refused when it runs)."""
        if not as_array and self._item_update(s) == "maybe a dict":
            return self.dict_or_item_update(s)
        pre = self.hoist(s, "value")
        target = s.targets[0] if isinstance(s, gast.Assign) else s.target
        name = target.value.id
        method = "set" if isinstance(s, gast.Assign) else _AUG_METHODS[type(s.op).__name__]
        value = s.value
        if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Sub):
            value = gast.UnaryOp(op=gast.USub(), operand=value)
        at = gast.Subscript(value=gast.Attribute(value=_name(name), attr="at", ctx=gast.Load()),
                            slice=target.slice, ctx=gast.Load())
        call = gast.Call(func=gast.Attribute(value=at, attr=method, ctx=gast.Load()),
                         args=[value], keywords=[])
        self.changed = self.item_updates = True
        return pre + [assign(name, call, s)]

    def dict_or_item_update(self, s):
        target = s.targets[0] if isinstance(s, gast.Assign) else s.target
        name = target.value.id
        value = s.value
        if isinstance(s, gast.AugAssign):       # d[k] += v: d[k] read, then rebound
            value = gast.BinOp(left=gast.Subscript(value=_name(name), slice=target.slice,
                                                   ctx=gast.Load()), op=s.op, right=value)
        item = self.names.fresh("item")
        new = _parse(f"{name} = {name} | {{{gast.unparse(target.slice).strip()}: {item}}}", s)
        for n in _walk(new.value):
            if isinstance(n, gast.Dict):
                n.values = [copy.deepcopy(value)]
        self.names.taken.discard(item)
        self.changed = self.item_updates = True     # (its callers run the rewritten form,
        #                                             which leaves the caller's dict as it was)
        if isinstance(target.slice, gast.Constant) and isinstance(target.slice.value, str):
            return self.statement(new)      # d["w"] = v: a dict's (no array takes a str key)
        other = copy.deepcopy(s)
        other._secant_as_written = True
        if name not in self.params:     # (a parameter's: refused when it runs, normalize.py)
            other = self.item_update(other, as_array=True)
        test = _parse(f"if isinstance({name}, dict):\n    pass\nelse:\n    pass", s)
        test.body = [new]
        test.orelse = other if isinstance(other, list) else [other]
        self.changed = True
        return self.statement(test)

    # --- try / with -------------------------------------------------------------------------------
    def try_block(self, s):
        """The try body inline, then its else: and finally: blocks (what runs when nothing is
        raised); an exception raised under a transform propagates. A look-up with a fallback,
        `try: v = d[k]` / `except KeyError: v = default`, is the test Python makes:
        `if k in d: v = d[k]` / `else: v = default`."""
        self.changed = True
        lookup = _key_lookup(s, self.src)
        if lookup is not None:
            test = gast.Compare(left=lookup.slice, ops=[gast.In()], comparators=[lookup.value])
            branch = gast.If(test=test, body=s.body + s.orelse, orelse=s.handlers[0].body)
            for n in _walk(branch):
                if getattr(n, "lineno", None) is None and isinstance(n, (gast.expr, gast.stmt)):
                    gast.copy_location(n, s)
            return self.block([gast.copy_location(branch, s)] + s.finalbody)
        stopped = iterators.caught(s, self.src.resolve_name("StopIteration")[0] == "builtin")
        if stopped is not None:         # try: v = next(it) / except StopIteration: break
            return self.block(stopped)
        static = self._static_try(s)
        if static is not None:
            return self.block(static)
        if s.finalbody and _returns_in(s.body):
            # try: return f(x) / finally: FRAMES.pop(): the finally block runs before each
            # return (inline after it, it was dead code: haiku's frame stack kept growing)
            return self.block(self._finally_before_returns(s.body, s.finalbody)
                              + s.orelse + s.finalbody)
        return self.block(s.body + s.orelse + s.finalbody)

    def _static_try(self, s):
        """A try whose body is one static statement (`c = float(text)`, `check()`: it reads
        no local of the function, only globals, builtins and the closure, so no value a
        transform traces), each handler without `as`: the body runs, with its handlers, in a
        small function of its own (`caught, value = tried()`), and its outcome picks the block
        that runs: `if caught == 1:` the first handler's body, ..., `else:` the body's
        assignment and the else: block; then the finally: block. Python's semantics under
        every transform: a static body that raises takes its handler. Else None (the body is
        inlined: right where it does not raise, and where it raises the exception propagates)."""
        if len(s.body) != 1 or not s.handlers or any(h.name is not None for h in s.handlers):
            return None
        body = s.body[0]
        if isinstance(body, gast.AnnAssign) and body.value is not None and \
                isinstance(body.target, gast.Name):
            targets = [body.target]
        elif isinstance(body, gast.Assign):
            targets = body.targets
        elif isinstance(body, gast.Expr):
            targets = []
        else:
            return None
        if any(not isinstance(m, (gast.Name, gast.Tuple, gast.List)) or isinstance(
                m, gast.Name) and not isinstance(m.ctx, gast.Store)
                for t in targets for m in _walk(t) if not isinstance(m, (
                    gast.expr_context, gast.Starred))):
            return None
        value = body.value
        reads = [value] + [h.type for h in s.handlers if h.type is not None]
        if _has(reads, (gast.Lambda, gast.NamedExpr, gast.Yield, gast.YieldFrom, gast.Await,
                        gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            return None
        local = {m.id for m in _walk(self.node) if isinstance(m, gast.Name)
                 and not isinstance(m.ctx, gast.Load)} | set(self.params) | \
            {m.name for m in _walk(self.node) if isinstance(
                m, (gast.FunctionDef, gast.ClassDef)) and m is not self.node}
        read = {m.id for r in reads for m in _walk(r) if isinstance(m, gast.Name)}
        if read & local or any(self.src.resolve_name(n)[0] == "unbound" for n in read):
            return None
        # the function running the body: the user's globals, the closure's own cells
        name = self.names.fresh("tried")
        lines = [f"def {name}():", "    try:",
                 f"        value = {_unparse_expr(value)}" if targets else
                 f"        {_unparse_expr(value)}"]
        for k, h in enumerate(s.handlers, 1):
            lines += ["    except:" if h.type is None else
                      f"    except {_unparse_expr(h.type)}:",
                      f"        return {k}, None" if targets else f"        return {k}"]
        lines.append("    return 0, value" if targets else "    return 0")
        free = {n: self.src.closure[n] for n in read if n in self.src.closure}
        cells = {n: c for n, c in self.src.cells.items() if n in free}
        self.lifted[name] = loader.load("\n".join(lines) + "\n", name, self.src.globals, free,
                                        cells=cells)
        self.changed = True
        caught = self.names.fresh("caught")
        if targets:
            got = self.names.fresh("value")
            call = _parse(f"{caught}, {got} = {name}()", s)
            done = [_at(body, gast.Assign(targets=copy.deepcopy(targets), value=_name(got),
                                          type_comment=None))]
        else:
            call, done = _parse(f"{caught} = {name}()", s), []
        chain = done + s.orelse
        for k, h in reversed(list(enumerate(s.handlers, 1))):
            test = _parse(f"if {caught}:\n    pass" if len(s.handlers) == 1
                          else f"if {caught} == {k}:\n    pass", h)
            test.body, test.orelse = h.body, chain
            chain = [test]
        return [call] + chain + s.finalbody

    def _finally_before_returns(self, stmts, finalbody):
        out = []
        for st in stmts:
            if isinstance(st, gast.Return):
                if st.value is None:
                    out += copy.deepcopy(finalbody) + [st]
                    continue
                name = self.names.fresh("result")
                out += [assign(name, st.value, st)] + copy.deepcopy(finalbody) + [
                    located(gast.Return(value=_name(name)), st, only_new=True)]
                continue
            if not isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    if getattr(st, field, None):
                        setattr(st, field, self._finally_before_returns(getattr(st, field),
                                                                        finalbody))
                for h in getattr(st, "handlers", ()):
                    h.body = self._finally_before_returns(h.body, finalbody)
            out.append(st)
        return out

    def with_block(self, s):
        """`with cm as v:` spelled out: `context = cm`, `v = context.__enter__()`, the body,
        `context.__exit__(None, None, None)` (each item in turn, left in reverse order): the
        context runs as Python runs it when nothing is raised; an exception propagates."""
        self._with_body = s.body
        try:
            acting = next((item.context_expr for item in s.items
                           if self._acting_context(item.context_expr)
                           or self._enters_contexts(item, s.body)), None)
        finally:
            self._with_body = None
        user = next((item.context_expr for item in s.items
                     if not self._library_object(item.context_expr)
                     or self._enters_contexts(item, s.body)), None)
        if user is not None:
            self._refuse_argument_state(s, user)
        if acting is not None and (self._acts_on_state(s.body) or self._reads_state(s.body)):
            what = gast.unparse(acting).strip()
            error = self.error(s, f"`with {what}:` runs the user's __enter__/__exit__ around "
                               "calls of user functions (or a return that would skip "
                               "__exit__): a derivative's reverse pass runs those calls again "
                               "after __exit__, where what __enter__ set up (a handler or "
                               "module stack) is gone")
            error.global_flow = (f"`with {what}:` sets up state (a handler stack) that the "
                                 "calls in its body read")   # (traced instead, on each call)
            raise error
        self.changed = True
        enter, leave = [], []
        for item in s.items:
            context = self.names.fresh("context")
            enter.append(assign(context, item.context_expr, s))
            call = _parse(f"{context}.__enter__()", s).value
            enter.append(_at(s, gast.Assign(targets=[item.optional_vars], value=call,
                                            type_comment=None)) if item.optional_vars is not None
                         else _at(s, gast.Expr(value=call)))
            leave.insert(0, _parse(f"{context}.__exit__(None, None, None)", s))
        return self.block(enter + s.body + leave)

    def _enters_contexts(self, item, body):
        """Whether a library's context (contextlib.ExitStack() as stack) has the body enter
        other contexts into it (stack.enter_context(scaled(2.0)), stack.callback(...)): those
        are the user's, run on the stack's exit."""
        if not isinstance(item.optional_vars, gast.Name):
            return False
        name = item.optional_vars.id
        return any(isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                   and isinstance(n.func.value, gast.Name) and n.func.value.id == name
                   and n.func.attr in ("enter_context", "push", "callback")
                   for n in _walk(gast.Module(body=list(body), type_ignores=[])))

    def _refuse_argument_state(self, s, context):
        """Refuses a with of the user's context (a @contextmanager generator, a class with
        __enter__/__exit__, an ExitStack entering one) whose body reads a mutable argument (a
        dict, a list, an object: `cfg["scale"]`, `opts.scale`, or one handed to a callee that
        reads it so): the context may change that same object (the caller passed the global
        CONFIG the generator sets), which neither the spelled-out with (a derivative's reverse
        pass reads the argument again after __exit__) nor a trace (it records the argument's
        reads, run after the with) can see. `self` of a method is traced on each call instead
        (the caller's trace runs the method on the object itself)."""
        first = self.node.args.args[0].id if getattr(self.node, "args", None) is not None \
            and self.node.args.args and isinstance(self.node.args.args[0], gast.Name) else None
        read = _argument_state_reads(self, list(s.body))
        if first == "self":
            read.discard("self")
        if not read:
            return
        what = gast.unparse(context).strip()
        names = ", ".join(sorted(read))
        raise self.error(s, f"`with {what}:` runs the user's context around code that reads "
                         f"the argument {names} (a dict, list or object: its entries or "
                         "attributes): secant cannot see whether the context changes that "
                         "same object (a caller passing the global the context sets), so a "
                         "derivative could read it after the with has undone the change; "
                         f"read {names} outside the with, or the state as a global the "
                         "context sets")

    def _reads_state(self, body):
        """Whether a with block's body reads Python state directly (no call): a global or
        closure value that is a mutable object (`CONFIG["scale"]`, `_STACK[-1]`), or an
        attribute or entry of `self` (`self.scale`), which the context may have set."""
        for n in _walk(gast.Module(body=list(body), type_ignores=[])):
            if not isinstance(n, gast.Name) or not isinstance(n.ctx, gast.Load):
                continue
            if n.id in self.params:
                if n.id == "self":
                    return True
                continue
            obj = self._resolved_object(n)
            if obj is not None and not isinstance(obj, (
                    types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                    int, float, complex, str, bytes, bool, tuple, frozenset, type(None))) \
                    and not self._library_object(n) and (type(obj).__module__ or "").split(
                        ".")[0] not in ("numpy", "secant", "jax", "jaxlib"):  # (an array)
                return True
        return False

    def _library_object(self, expr):
        """Whether `expr` (a with statement's context, or a call making it) names a library's
        object (np.errstate(...), secant's, contextlib.nullcontext()): not the user's."""
        obj = self._resolved_object(expr.func if isinstance(expr, gast.Call) else expr)
        if obj is None:
            return False
        module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(
            obj, "__module__", None) or ""
        return module.split(".")[0] in ("secant", "numpy", "scipy", "warnings", "contextlib",
                                        "threading", "builtins", "decimal", "jax")

    def _acting_context(self, expr):
        """Whether a with statement's context is an object of a user class whose __enter__ /
        __exit__ may set up state (a handler stack): `Scale(2.0)` of a user class, or a local
        or parameter (`with self:` in a handler's __call__), or a call of the user's
        @contextmanager generator (`with scaled(2.0):`, its code before `yield` pushing on a
        stack). A library's context is spelled out as before."""
        if isinstance(expr, gast.Call):
            if self._library_object(expr.func):
                return False
            cls = self._resolved_object(expr.func)
            if cls is None:     # (self.scaled(2.0): a method of a parameter, a local's call)
                return True
            if _context_generator(cls) is not None:
                return not self._shares_no_state(expr, cls)
            return isinstance(cls, type) and isinstance(
                getattr(cls, "__enter__", None), types.FunctionType)
        if self._library_object(expr):
            return False
        obj = self._resolved_object(expr)
        return obj is None or isinstance(getattr(type(obj), "__enter__", None),
                                         types.FunctionType)

    def _shares_no_state(self, expr, generator):
        """Whether a @contextmanager generator's with (`with timing("fit"):`, `expr` its call)
        provably touches none of the Python state that the functions called in its body read:
        the mutable objects (a list, a dict, an object, a user class or module) each side's
        code names, through the user functions it calls, are disjoint; then it is spelled out
        as before (a trace would refuse a Python branch in the body's callees). False where
        either side cannot be read (a call of a local's method, an argument not a constant)."""
        body = getattr(self, "_with_body", None)
        if body is None or any(isinstance(a, gast.Starred) for a in expr.args) or not all(
                isinstance(a, gast.Constant) for a in list(expr.args) + [
                    k.value for k in expr.keywords]):
            return False
        touched = _state_named([generator])
        callees = []
        for n in _walk(gast.Module(body=list(body), type_ignores=[])):
            if isinstance(n, gast.Return):
                return False            # (a return inside skips the generator's exit)
            if isinstance(n, gast.Call) and not self._library_object(n.func):
                obj = self._resolved_object(n.func)
                if not isinstance(obj, types.FunctionType):
                    return False
                callees.append(obj)
        read = _state_named(callees)
        if touched is None or read is None:
            return False
        for n in _walk(self.src.node):      # (a global the function itself names, handed to a
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):   # callee: helper(x,
                obj = self._resolved_object(n)                              # CONFIG))
                if obj is not None and not isinstance(obj, (
                        types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                        int, float, complex, str, bytes, bool)):
                    read.add(id(obj))
        return not touched & read

    def _resolved_object(self, expr):
        """The object `a.b.c` names in the function's environment; None for a local, a
        parameter or anything else."""
        chain = []
        while isinstance(expr, gast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, gast.Name) or expr.id in self.params or any(
                isinstance(n, gast.Name) and n.id == expr.id and not isinstance(n.ctx, gast.Load)
                for n in _walk(self.src.node)):
            return None
        obj = self.src.resolve_name(expr.id)[1]
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return obj

    def _acts_on_state(self, body):
        """Whether a with block's body calls a function that is not a library's (a user
        function, a method of a local) or returns from inside it."""
        for n in _walk(gast.Module(body=list(body), type_ignores=[])):
            if isinstance(n, gast.Return):
                return True
            if isinstance(n, gast.Call) and not self._library_object(n.func):
                return True
        return False

    # --- break / continue -------------------------------------------------------------------------
    def stageable_exits(self, s):
        """For jit (only_choices): whether the break/continue of loop `s` become the flag form,
        which functionalize stages (a traced exit test is a lax.cond on the flag, the loop a
        fori_loop/while_loop) where Python would need its value: a while loop or a for over
        range(...) (the skipped iterations are no-ops), with no return or else: inside, whose
        exit test may be traced."""
        if not _has_exit(s.body, (gast.Break, gast.Continue)) or s.orelse \
                or _has_exit(s.body, (gast.Return,)):
            return False
        if isinstance(s, gast.While):
            return self._exit_may_be_traced(s)
        it = s.iter
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
                and self.src.resolve_name(it.func.id)[1] is range
                and it.func.id not in self.params):
            return False
        targets = {m.id for m in _walk(s.target) if isinstance(m, gast.Name)}
        if _has_exit(s.body, (gast.Break,)) and targets & self._read_after(s):
            return False
        return self._exit_may_be_traced(s)

    def _exit_may_be_traced(self, loop):
        """Whether a test guarding a break/continue of `loop` reads a value computed from the
        function's parameters: one on counters, loop indices and constants stays a Python test
        (the loop unrolls as before, its carries free to change shape)."""
        derived = self._param_derived()
        tests = []

        def visit(stmts):
            for n in stmts:
                if isinstance(n, gast.If) and _has_exit([n], (gast.Break, gast.Continue)):
                    tests.append(n.test)
                    visit(n.body)
                    visit(n.orelse)
        visit(loop.body)
        if isinstance(loop, gast.While):
            tests.append(loop.test)
        return any(isinstance(m, gast.Name) and m.id in derived
                   for t in tests for m in _walk(t))

    def _param_derived(self):
        """Names whose value may depend on a parameter (every assignment counted)."""
        if getattr(self, "_derived", None) is None:
            flows = []                  # (targets, names read) of each binding
            for n in _walk_scope(self.node.body):
                if isinstance(n, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.NamedExpr)):
                    targets = n.targets if isinstance(n, gast.Assign) else [n.target]
                    reads = {m.id for m in _walk(n.value) if isinstance(m, gast.Name)} \
                        if n.value is not None else set()
                    if isinstance(n, gast.AugAssign):
                        reads |= {m.id for m in _walk(n.target) if isinstance(m, gast.Name)}
                elif isinstance(n, (gast.For, gast.comprehension)):
                    targets, reads = [n.target], {m.id for m in _walk(n.iter)
                                                  if isinstance(m, gast.Name)}
                else:
                    continue
                names = {m.id for t in targets for m in _walk(t) if isinstance(m, gast.Name)}
                flows.append((names, reads))
            derived = set(self.params)
            grown = True
            while grown:
                grown = False
                for names, reads in flows:
                    if reads & derived and not names <= derived:
                        derived |= names
                        grown = True
            self._derived = derived
        return self._derived

    def loop_exits(self, s):
        kinds = (gast.Break, gast.Continue)
        returned = None
        if _has_exit(s.body, (gast.Return,)):
            returned = self.return_from_loop(s)
        if not _has_exit(s.body, kinds):
            return [s]
        has_break = _has_exit(s.body, (gast.Break,))
        orelse, s.orelse = (s.orelse, []) if has_break else ([], s.orelse)
        if orelse and returned is not None:
            raise self.error(s, "for/while ... else with break cannot be transformed yet")
        if has_break and isinstance(s, gast.For):
            targets = {m.id for m in _walk(s.target) if isinstance(m, gast.Name)}
            after = self._read_after(s)
            if targets & after and self._first_item(s.iter) is None:
                raise self.error(s, f"{sorted(targets & after)[0]} is read after a loop that "
                                 "breaks: secant runs the remaining iterations as no-ops, so "
                                 "the loop variable would not be the one the break left; copy "
                                 "it into another variable before break")
            if targets & after:     # the iterations the flag skips keep the one break left
                s.secant_before = self.stable_loop_target(s, *self._first_item(s.iter))
        flags = {gast.Continue: self.names.fresh("iterating")}
        if has_break:
            flags[gast.Break] = self.names.fresh("looping")
            self.break_flags.add(flags[gast.Break])
        body, _ = self.exits(s.body, kinds, flags)
        skip = flags[gast.Continue]
        body = _drop_final(body, skip)
        if skip in self.flag_uses:
            body = [_parse(f"{skip} = True", s)] + body
        else:
            body = _strip(body, skip)
            self.names.taken.discard(skip)
        self.changed = True
        if not has_break:
            s.body = body
            return [s]
        broke = flags[gast.Break]
        init = _parse(f"{broke} = True", s)
        if isinstance(s, gast.While):
            # `looping & (k < n)` for a comparison: a traced flag under jit has no `and`
            both = [_name(broke), s.test]
            s.test = _at(s, gast.BinOp(left=both[0], op=gast.BitAnd(), right=both[1])
                         if isinstance(s.test, gast.Compare) else
                         gast.BoolOp(op=gast.And(), values=both))
            s.body = body
        else:
            guard = _at(s, gast.If(test=_name(broke), body=body, orelse=[]))
            s.body = [gast.copy_location(guard, s)]
        before = getattr(s, "secant_before", [])
        if orelse:          # `else:` runs when the loop ended without a break
            ran_out = _at(s, gast.If(test=_name(broke), body=orelse, orelse=[]))
            return before + [init, s, gast.copy_location(ran_out, orelse[0])]
        if returned is None:
            return before + [init, s]
        # the loop returned when it stopped early: the return happens after it (the rest of
        # the function moves into the branch where it ran to the end)
        ret = gast.copy_location(gast.Return(value=returned), returned)
        after = _at(returned, gast.If(test=_name(broke), body=[], orelse=[ret]))
        return before + [init, s, gast.copy_location(after, returned)]

    def return_from_loop(self, s):
        """`return v` inside a loop -> `break` (the value is returned after the loop: every
        name v reads keeps its value through the iterations the flag skips)."""
        returns = [n for n in _walk_loop_body(s.body) if isinstance(n, gast.Return)]
        if len(returns) != sum(isinstance(n, gast.Return) for n in _walk_scope(s.body)):
            raise self.error(s, "a return inside a nested loop cannot be transformed yet; "
                             "assign the result, break, and return after the loops")
        if _has_exit(s.body, (gast.Break,)) or s.orelse:
            raise self.error(s, "a loop with both return and break (or an else:) cannot be "
                             "transformed yet; assign the result, break, and return after it")
        values = {gast.unparse(r.value).strip() if r.value is not None else "None"
                  for r in returns}
        if len(values) != 1:
            raise self.error(returns[1], "returns of different values from inside a loop "
                             "cannot be transformed yet; assign the result, break, and return "
                             "after the loop")
        value = returns[0].value if returns[0].value is not None else gast.Constant(None, None)
        targets = {m.id for m in _walk(s.target) if isinstance(m, gast.Name)} \
            if isinstance(s, gast.For) else set()
        read = {m.id for m in _walk(value) if isinstance(m, gast.Name)}
        if targets & read:
            s.secant_before = self.stable_loop_target(s, *self._iterable_first(s, returns[0]))
        for r in returns:               # (in place: the statement lists of the loop body)
            _replace_node(s.body, r, _at(r, gast.copy_location(gast.Break(), r)))
        return _at(returns[0], copy.deepcopy(value))

    def _iterable_first(self, s, ret):
        """The first item of loop `s`'s iterable (its source); a part of it not to read twice
        (a call: `for i, (c, v) in enumerate(pairs(x))`) is first held in a variable
        (`pairs_x = pairs(x)`, before the loop), read by the loop and indexed before it."""
        first = self._first_item(s.iter)
        if first is not None:
            return first
        held = []

        def hold(node):
            name = self.names.fresh("held")
            held.append(_at(s, gast.Assign(targets=[_name(name, True)], value=node,
                                           type_comment=None)))
            self.held.add(name)
            return _at(node, _name(name))
        it = s.iter
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and not it.keywords \
                and it.func.id in ("enumerate", "zip") \
                and self.src.resolve_name(it.func.id)[0] == "builtin":
            it.args = [a if self._first_item(a) is not None else hold(a) for a in it.args]
        else:
            s.iter = hold(it)
        first = self._first_item(s.iter)
        if first is None:
            raise self.error(ret, "a return of the loop variable from inside this loop cannot "
                             "be transformed yet; give the result a value before the loop, "
                             "assign it and break inside, and return it after the loop")
        s.secant_held = held
        return first

    def _first_item(self, it):
        """Source of an expression that is the first item of the loop's iterable `it`, read
        again before the loop (it only gives the loop variable a value the transforms can
        carry: the first iteration assigns it anyway): a display's first element (one with no
        call in it), enumerate/zip of such, range(...) of constants (jit stages a loop over it:
        the returned index is an int carry, its cotangent a zero, ad/helpers.unbroadcast),
        `xs[0]` of a name or attribute (a parameter, a local, a global list or tuple), as
        JAX's unrolled Python loop would read it; else None (a call: read once only). With it,
        the iterables whose emptiness skips the loop (stable_loop_target guards the read)."""
        if isinstance(it, (gast.List, gast.Tuple)):
            if it.elts and not isinstance(it.elts[0], gast.Starred) and not any(
                    isinstance(m, (gast.Call, gast.NamedExpr, gast.Await, gast.Yield))
                    for m in _walk(it.elts[0])):
                return gast.unparse(it.elts[0]).strip(), []
            return None
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and not it.keywords \
                and it.func.id in ("enumerate", "zip") and it.args \
                and self.src.resolve_name(it.func.id)[0] == "builtin" \
                and not any(isinstance(m, gast.Name) and m.id == it.func.id
                            and isinstance(m.ctx, gast.Store)
                            for m in _walk_scope(self.node.body)):
            firsts = [self._first_item(a) for a in it.args]
            if None in firsts or (it.func.id == "enumerate" and len(firsts) != 1):
                return None
            sized = [e for _, each in firsts for e in each]
            firsts = [f for f, _ in firsts]
            return (f"(0, {firsts[0]})" if it.func.id == "enumerate" else
                    f"({', '.join(firsts)}{',' if len(firsts) == 1 else ''})"), sized
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range" \
                and not it.keywords and 1 <= len(it.args) <= 3 \
                and self.src.resolve_name("range")[0] == "builtin" \
                and all(_constant(a) for a in it.args):
            try:        # range(1, 6): its first item, when it has one (an int: jit carries it)
                items = range(*(ast.literal_eval(gast.unparse(a)) for a in it.args))
            except (TypeError, ValueError):
                return None
            return (repr(items[0]), []) if items else None
        if isinstance(it, gast.Attribute) and isinstance(it.value, gast.Name):
            text = gast.unparse(it).strip()
            return f"{text}[0]", [text]
        if not isinstance(it, gast.Name):
            return None
        stores = any(isinstance(n, gast.Name) and n.id == it.id and isinstance(n.ctx, gast.Store)
                     for n in _walk_scope(self.node.body))
        if not stores and it.id not in self.params and it.id not in self.held:
            kind, value = self.src.resolve_name(it.id)
            if kind not in ("global", "closure") or not isinstance(value, (list, tuple)) \
                    or not value:
                return None
        return f"{it.id}[0]", [it.id]

    def stable_loop_target(self, s, first, sized):
        """`for a in xs: ... return a * x` -> `a = xs[0]` / `for item in xs: a = item; ...`:
        the iterations a break skips leave `a` as the returning one left it (a loop variable
        would take the next items); a loop read after it needs a value before it (the first
        item, which the first iteration assigns anyway). Over an empty `xs` (`sized`: the
        iterables whose emptiness skips the loop) Python never runs the loop nor its return:
        `if len(xs): a = xs[0]` / `else: a = None` (the flag keeps the read of `a` from running).
        """
        item = self.names.fresh("item")

        def assign(value):
            return _at(s, gast.Assign(targets=[copy.deepcopy(s.target)], value=value,
                                      type_comment=None))
        before = assign(located(gast.parse(first, mode="eval").body, s))
        if sized:
            lengths = [f"len({e})" for e in sized]
            test = lengths[0] if len(lengths) == 1 else f"min({', '.join(lengths)})"
            test = located(gast.parse(test, mode="eval").body, s)
            before = _at(s, gast.If(test=test, body=[before],
                                    orelse=[assign(_nones(s.target))]))
        copy_in = _at(s, gast.Assign(targets=[s.target], value=_name(item), type_comment=None))
        s.target = _at(s, _name(item, True))
        s.body = [copy_in] + s.body
        return getattr(s, "secant_held", []) + [before]

    def _read_after(self, s):
        """Names read below loop `s`; a read in the body of a later `for` that binds the name
        reads that loop's own value (`for i in ...` twice: the second loop's i), not s's."""
        end = getattr(s, "end_lineno", None) or 1 << 30
        rebound = set()
        for m in _walk_scope(self.node.body):
            if isinstance(m, gast.For) and getattr(m, "lineno", 0) > end:
                bound = {t.id for t in _walk(m.target) if isinstance(t, gast.Name)}
                rebound |= {id(n) for part in m.body for n in _walk(part)
                            if isinstance(n, gast.Name) and n.id in bound}
        return {m.id for m in _walk_scope(self.node.body) if isinstance(m, gast.Name)
                and isinstance(m.ctx, gast.Load) and getattr(m, "lineno", 0) > end
                and id(m) not in rebound}

    def exits(self, stmts, kinds, flags):
        """`stmts` with the exits of `kinds` replaced: the rest of the block moves into the
        branch that does not exit; where only some paths of a statement exit, a flag guards
        the rest. Returns (statements, "must" | "may" | "none")."""
        out = []
        for k, s in enumerate(stmts):
            rest = stmts[k + 1:]
            if isinstance(s, kinds):
                out.extend(self.replace_exit(s, flags))
                return out, "must"
            if isinstance(s, gast.If) and _has_exit([s], kinds):
                body, hb = self.exits(s.body, kinds, flags)
                orelse, ho = self.exits(s.orelse, kinds, flags)
                if hb == "must" and ho == "must":
                    out.append(self._if(s, body, orelse))
                    return out, "must"
                if hb == "must" and ho == "none":
                    orelse, how = self.exits(s.orelse + rest, kinds, flags)
                    out.append(self._if(s, body, orelse))
                    return out, "must" if how == "must" else "may"
                if ho == "must" and hb == "none":
                    body, how = self.exits(s.body + rest, kinds, flags)
                    out.append(self._if(s, body, orelse))
                    return out, "must" if how == "must" else "may"
                # some paths exit, some do not: a short rest runs on each path that goes on
                # (as a person would write it); a long one is guarded by a flag
                if sum(isinstance(n, gast.stmt) for r in rest for n in _walk(r)) \
                        <= _COPY_LIMIT:
                    body, hb = self.exits(s.body + copy.deepcopy(rest), kinds, flags)
                    orelse, ho = self.exits(s.orelse + copy.deepcopy(rest), kinds, flags)
                    out.append(self._if(s, body, orelse))
                    return out, "must" if hb == ho == "must" else "may"
                out.append(self._if(s, body, orelse))
                guarded, how = self._guarded(s, rest, kinds, flags)
                return out + guarded, "must" if how == "must" else "may"
            if isinstance(s, (gast.For, gast.While, gast.Try, gast.With)) and \
                    _has_exit([s], kinds):
                raise self.error(s, "cannot transform this exit from inside a nested block")
            out.append(s)
        return out, "none"

    def _guarded(self, s, rest, kinds, flags):
        if not rest:
            return [], "none"
        names = [flags[k] for k in kinds if k in flags and _has_exit([s], (k,))]
        self.flag_uses |= set(names)
        body, how = self.exits(rest, kinds, flags)
        test = " and ".join(names)
        guard = _at(rest[0], gast.If(test=_parse(test, rest[0]).value, body=body, orelse=[]))
        return [guard], how

    def replace_exit(self, s, flags):
        out = []
        if isinstance(s, gast.Return):
            value = s.value if s.value is not None else gast.Constant(None, None)
            out.append(assign(self.result, value, s))
        flag = flags.get(type(s))
        if flag is not None:
            out.append(_parse(f"{flag} = False", s))
        return out

    # --- return -----------------------------------------------------------------------------------
    def returns(self, body):
        """Early returns: the rest of the function moves into the branch that does not return;
        several returns assign one `result` returned at the end."""
        if not any(isinstance(n, gast.Return) for n in _statements(body[:-1])) and not (
                body and not isinstance(body[-1], gast.Return)
                and _has_exit([body[-1]], (gast.Return,))):
            return body
        self.result = self.names.fresh("result")
        returned = self.names.fresh("running")
        flags = {gast.Return: returned}
        new, how = self.exits(body, (gast.Return,), flags)
        new = _drop_final(new, returned)
        if returned in self.flag_uses:
            new = [_parse(f"{returned} = True", body[0])] + new
        else:
            new = _strip(new, returned)
            self.names.taken.discard(returned)
        if how != "must":
            new = [assign(self.result, gast.Constant(None, None), body[0])] + new
        last = body[-1]
        new.append(_parse(f"return {self.result}", last))
        self.changed = True
        return _simplify_result(new, self.result)

    # --- nested functions -------------------------------------------------------------------------
    def lift_local_functions(self, body):
        """A nested def (or `h = lambda ...`) at the function's top level that is only ever
        called: lifted to a function of its own; its free locals become extra parameters."""
        body = self._partials_as_defs(self._inline_partials(self._inline_vectorized(
            self._inline_transforms(body))))
        if not _has(body, (gast.FunctionDef, gast.Lambda)):
            return body         # (no def nor lambda: nothing to name, hoist or lift)
        body = self._name_returned_lambdas(self._name_passed_lambdas(
            self._name_stored_lambdas(body)))
        body, blocks = self._hoist_block_functions(_plain_lambda_assignments(body))
        hoisted = {id(h) for _, _, original in blocks for h in original} - \
            {id(h) for b in blocks for h in getattr(b[0], b[1])}
        out = []
        local = set(self.params) | {m.id for m in _walk_scope(body) if isinstance(m, gast.Name)
                                    and isinstance(m.ctx, gast.Store)}
        local |= {s.name for s in body if isinstance(s, gast.FunctionDef)}
        if nonlocals.return_rebound(body, local):       # `nonlocal z` -> z = double(z)
            self.changed = True
        if nonlocals.thread_rebound(body, local, self.names.fresh):     # (one returning a
            self.changed = True                 # value: `y, n = step(n, x)`, to any depth)
        as_def = {}
        for s in body:
            fdef = None
            if isinstance(s, gast.FunctionDef):
                fdef = s
            elif isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda):
                from secant.transformer.parse import lambda_function_node
                fdef = lambda_function_node(copy.deepcopy(s.value), s.targets[0].id)
                gast.copy_location(fdef, s)
            passing = [] if fdef is None else self._passed_to_helpers(fdef.name, body, s, local)
            # (`h = lambda ...` kept: as the def it is, which every transform follows as a
            # nested function, grad(h) and lax.fori_loop(0, n, h, x) included)
            kept = s if fdef is None or isinstance(s, gast.FunctionDef) else fdef
            if kept is not s:
                self.changed = True
                as_def[id(s)] = kept    # (a hoisted lambda put back: put back as this def)
            if fdef is None or passing is None or not self._only_called(fdef.name, body, s,
                                                                        passing):
                made = None if fdef is None or id(s) in hoisted else \
                    self._closure_object(fdef, body, s, local)
                out.extend([made or kept] if id(s) not in hoisted else [])  # (hoisted: put back)
                continue
            a = fdef.args
            if fdef.decorator_list or a.posonlyargs \
                    or _has(fdef.body, (gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom)):
                out.extend([kept] if id(s) not in hoisted else [])    # (hoisted: put back)
                continue
            own = {m.id for m in _walk(fdef) if isinstance(m, gast.Name)
                   and isinstance(m.ctx, (gast.Store, gast.Param))} | \
                {m.name for m in _walk(fdef) if isinstance(m, gast.FunctionDef)}
            own |= {m.id for m in _walk(fdef.args) if isinstance(m, gast.Name)}
            free = []
            for m in _walk(fdef):
                if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Load) and \
                        m.id in local and m.id not in own and m.id not in free \
                        and m.id not in self.lifted:    # (a lifted function is global now)
                    free.append(m.id)
            itself = [m for st in fdef.body for m in _walk(st)
                      if isinstance(m, gast.Name) and m.id == fdef.name]
            called = {id(m.func) for st in fdef.body for m in _walk(st)
                      if isinstance(m, gast.Call)}
            if fdef.name in free or free and any(id(m) not in called for m in itself):
                # a recursive nested function reading locals, named other than in calls
                out.extend([kept] if id(s) not in hoisted else [])    # (hoisted: put back)
                continue
            if not self._fill_local_defaults(fdef, body, s, local, passing, out):
                out.extend([kept] if id(s) not in hoisted else [])    # (hoisted: put back)
                continue
            # after parameters with defaults, or in calls that name arguments, the free locals
            # are passed by keyword: h(y, x=x)
            # (after *args or keyword-only parameters: keyword-only, h(*zs, scale=2.0, y))
            by_keyword = bool(a.defaults) or any(
                isinstance(m, gast.Call) and isinstance(m.func, gast.Name) and m.keywords
                and m.func.id == fdef.name for b in body for m in _walk(b)) \
                or bool(a.vararg or a.kwonlyargs or a.kwarg)
            if free and itself:         # its own calls pass the locals it reads too
                fdef = copy.deepcopy(fdef)
                self._add_call_arguments(fdef.body, fdef.name, free, by_keyword)
            lifted = self._lift(fdef, free, by_keyword)
            if free and passing and not self._specialise_helpers(passing, lifted, free,
                                                                 by_keyword):
                out.extend([kept] if id(s) not in hoisted else [])    # (hoisted: put back)
                continue
            self.lifted[fdef.name] = lifted
            self._add_call_arguments(body, fdef.name, free, by_keyword)
            self.changed = True
            hoisted.discard(id(s))
        for owner, field, original in blocks:   # (those not lifted: back where they stood)
            stays = hoisted | {id(t) for t in getattr(owner, field)}
            block = [as_def.get(id(t), t) for t in original if id(t) in stays]
            setattr(owner, field, block or [gast.copy_location(gast.Pass(), original[0])])
        return out

    def _shared_closure_key(self, fdef, params, free, defaults, local, own):
        """The key under which the closure class of `fdef` is shared with the same def in
        another function object of the same code (a lambda written in generated code is a new
        function each time it is evaluated): one class, so that a cotangent made by one reads
        as the other's structure. The key is the def's text, its parameters, its free locals
        and its defaults. None (a class of its own) where the def's meaning may differ between
        such function objects: this function closes over cells, or the def reads a function
        lifted from this one, or a local that is neither its own nor one of its free locals."""
        if self.src.closure:
            return None
        for m in _walk(fdef):
            if isinstance(m, gast.Name) and (m.id in local or m.id in self.lifted) \
                    and m.id not in own and m.id not in free:
                return None
        return gast.unparse(fdef), tuple(params), tuple(free), tuple(defaults)

    def _closure_object(self, fdef, body, definition, local):
        """A nested def used as a value (returned from a factory, stored in a namedtuple,
        wrapped in a partial) that closes over locals: `name = <its Closure object>`, an
        object of a registered pytree class whose fields are those locals and whose __call__
        calls the def lifted to take them (transformer/closures.py), built as any pytree from
        its leaves, so that a transform follows the values it closes over through it (issue
        15). None (kept as the def it is) where that would not be the same function: a
        decorator, defaults or other than plain positional parameters, a free local assigned
        after the def (a closure reads it when called), a recursive def."""
        a = fdef.args
        if not isinstance(definition, (gast.FunctionDef, gast.Assign)) or fdef.decorator_list \
                or a.vararg \
                or a.kwarg or a.kwonlyargs or a.posonlyargs \
                or not all(isinstance(d, gast.Constant) for d in a.defaults) \
                or _has(fdef.body, (gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom)):
            return None
        own = {m.id for m in _walk(fdef) if isinstance(m, gast.Name)
               and isinstance(m.ctx, (gast.Store, gast.Param))} | \
            {m.name for m in _walk(fdef) if isinstance(m, gast.FunctionDef)}
        free = []
        for m in _walk(fdef):
            if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Load) and m.id in local \
                    and m.id not in own and m.id not in free and m.id not in self.lifted:
                free.append(m.id)
        if fdef.name in free:
            return None
        at = next(i for i, t in enumerate(body) if t is definition)
        later = {m.id for t in body[at + 1:] for m in _walk(t)
                 if isinstance(m, gast.Name) and not isinstance(m.ctx, gast.Load)}
        later |= {m.name for t in body[at + 1:] for m in _walk(t)
                  if isinstance(m, gast.FunctionDef)}
        # (a free local's object changed in place after the def, `acc.append(v)`, `d[k] = v`:
        # the closure would see the change, a copy of its leaves would not)
        for t in body[at + 1:]:
            for m in _walk(t):
                target = m.func if isinstance(m, gast.Call) else \
                    m if isinstance(m, (gast.Subscript, gast.Attribute)) \
                    and not isinstance(m.ctx, gast.Load) else None
                while isinstance(target, (gast.Attribute, gast.Subscript)):
                    target = target.value
                    if isinstance(target, gast.Name) and target.id in free:
                        return None
        earlier = [t for t in body[:at] if any(
            isinstance(m, gast.Name) and m.id == fdef.name and not isinstance(m.ctx, gast.Load)
            for m in _walk(t))]
        if later & (set(free) | {fdef.name}) or earlier or any(
                isinstance(m, gast.Name) and m.id == fdef.name for t in body[:at]
                for m in _walk(t)):
            return None
        library = self._passed_to_library(fdef.name, body, definition)
        if library and not (library == "run time" and free
                            and not _mutates(fdef, set(free))):
            return None
        from secant.transformer import closures
        defaults = [d.value for d in a.defaults]
        params = [p.id for p in a.args]
        shared = self._shared_closure_key(fdef, params, free, defaults, local, own)
        cls = closures.shared_class(self.src.globals, shared)
        if cls is None:
            lifted = self._lift(fdef, free, by_keyword=bool(a.defaults))
            cls = closures.closure_class(lifted, f"{fdef.name}_closure", params, free, defaults)
            closures.share_class(self.src.globals, shared, cls)
        cls_name = self.names.fresh(f"{fdef.name}_closure")
        self.lifted[cls_name] = cls
        fns = {}
        from secant import tree_util
        for k in ("tree_unflatten", "tree_structure", "tree_leaves"):
            fns[k] = next((n for n, v in self.tree_names.items() if v is getattr(tree_util, k)),
                          None) or self.names.fresh(k)
            self.tree_names[fns[k]] = getattr(tree_util, k)
        fields = ", ".join(free)
        if not free:        # (nothing to follow: its one leaf a constant, closures.py)
            made = _parse(f"{fdef.name} = {cls_name}()", definition)
            self.changed = True
            self.closures = True
            return made
        made = _parse(f"{fdef.name} = {fns['tree_unflatten']}({fns['tree_structure']}("
                      f"{cls_name}({fields})), {fns['tree_leaves']}([{fields}]))", definition)
        made.value.args[0].args[0].secant_structure = True
        self.changed = True
        self.closures = True
        return made

    def _binds_local(self, name):
        """Whether the function assigns or imports `name`."""
        return name in self._bindings()[0]

    def _imports_local(self, name):
        """Whether the function imports `name` (`from secant.batch import vmap` in its body)."""
        return name in self._bindings()[1]

    def _bindings(self):
        """(names the function binds, names it imports), read once: the rewrites bind only
        fresh names, which no user callee is."""
        found = self.__dict__.get("_local_bindings")
        census = self.census() if found is None else None
        if census is not None and not census.has(gast.Import, gast.ImportFrom):
            found = self._local_bindings = (set(census.assigned), set())    # (no walk)
        if found is None:       # (one walk: the stores and the imports)
            bound, imported = set(), set()
            for m in _walk(self.node):
                if isinstance(m, gast.Name):
                    if isinstance(m.ctx, gast.Store):
                        bound.add(m.id)
                elif isinstance(m, (gast.Import, gast.ImportFrom)):
                    imported.update((a.asname or a.name).split(".")[0] for a in m.names)
            found = self._local_bindings = (bound | imported, imported)
        return found

    def _passed_to_library(self, name, body, definition):
        """Whether `name` is passed to a secant function (lax.scan(body, ...), grad(f),
        custom_vjp(f), h.defvjp(f, b) of a decorated nested def h), which reads it as the
        function it is."""
        decorated = {t.name for t in body if isinstance(t, gast.FunctionDef)
                     and t.decorator_list}
        run_time = False
        for t in body:
            if t is definition:
                continue
            for m in _walk(t):
                if not isinstance(m, gast.Call) or not any(
                        isinstance(v, gast.Name) and v.id == name
                        for v in list(m.args) + [k.value for k in m.keywords]):
                    continue
                root, chain = m.func, []
                while isinstance(root, gast.Attribute):
                    chain.append(root.attr)
                    root = root.value
                if isinstance(root, gast.Name) and chain and root.id in decorated:
                    return True     # h.defvjp(h_fwd, h_bwd) of a nested @custom_vjp def h
                if not isinstance(root, gast.Name):
                    continue        # (f(x)(h), fns[0](h): passed on as a value)
                # a callee the source does not name (a parameter, a local: `from secant.batch
                # import vmap` in the body): read as the function it is, as before
                if root.id in self.params or self._binds_local(root.id):
                    # (one a plain call `f(h)` of a parameter may take as the Closure object
                    # it is: a callable pytree, whose leaves the transforms follow)
                    if root is not m.func or self._imports_local(root.id):
                        return True
                    run_time = True
                    continue
                kind, obj = self.src._lookup(root.id)
                if kind not in ("closure", "global", "builtin", "import"):
                    return True
                try:
                    for attr in reversed(chain):
                        obj = getattr(obj, attr)
                except AttributeError:
                    return True
                module = getattr(obj, "__module__", "") or getattr(obj, "__name__", "") or ""
                if module.split(".")[0] == "secant":
                    return True
        return "run time" if run_time else False

    def _hoist_block_functions(self, body):
        """A def (or `h = lambda ...`) inside a loop's or a branch's body, its name bound
        nowhere else and read only by the statements after it in that block: moved to the top
        level, just before the statement holding it, where it is lifted as any other. The same
        values: a closure reads its free names when it is called (the closures a loop makes
        all share the function's cells), and only one without defaults or decorators (which
        are evaluated where it stood) moves."""
        if not any(isinstance(s, _BLOCKS) for s in body):
            return body, []         # (no block to hoist from: the walks below are skipped)
        stores = [m.id for m in _walk(self.node) if isinstance(m, gast.Name)
                  and not isinstance(m.ctx, gast.Load)] + \
            [m.name for m in _walk(self.node) if isinstance(m, gast.FunctionDef)]
        declared = {n for m in _walk(self.node) if isinstance(m, (gast.Global, gast.Nonlocal))
                    for n in m.names}
        reads = {}
        for m in _walk(self.node):
            if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Load):
                reads[m.id] = reads.get(m.id, 0) + 1

        def movable(s, after):
            name = _defined_function(s)
            if name is None or stores.count(name) != 1 or name in declared \
                    or name in self.params:
                return False
            later = sum(1 for t in after for m in _walk(t)
                        if isinstance(m, gast.Name) and m.id == name)
            return reads.get(name, 0) == later > 0

        def hoist(stmt, moved, blocks):
            """Moves stmt's movable defs to `moved`; `blocks`: (owner, field, its statements
            before) for each block changed."""
            fields = [(stmt, f) for f in ("body", "orelse", "finalbody")
                      if isinstance(getattr(stmt, f, None), list)]
            fields += [(h, "body") for h in getattr(stmt, "handlers", ())]
            for owner, field in fields:
                kept = []
                block = getattr(owner, field)
                for k, s in enumerate(block):
                    if movable(s, block[k + 1:]):
                        moved.append(s)
                        continue
                    if isinstance(s, _BLOCKS):
                        hoist(s, moved, blocks)
                    kept.append(s)
                if len(kept) != len(block):
                    blocks.append((owner, field, block))
                    setattr(owner, field, kept or [gast.copy_location(gast.Pass(), block[0])])

        out, blocks = [], []
        for s in body:
            if isinstance(s, _BLOCKS):
                moved = []
                hoist(s, moved, blocks)
                out.extend(moved)
                self.changed = self.changed or bool(moved)
            out.append(s)
        return out, blocks

    def _inline_transforms(self, body):
        """`df = grad(f)` (any function transform: value_and_grad, jacfwd, hessian, vmap, ...)
        at the top level, df only ever called and bound once, and the transform's arguments
        names bound at most once, constants or lambdas: each call `df(x)` reads
        `grad(f)(x)`, which the normaliser transforms as written (a lambda closing over
        locals is lifted); the same values, as the names never change and a lambda reads its
        free names when it runs."""
        import secant
        transforms = {getattr(secant, t) for t in (
            "grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "vmap")}
        candidates = [s for s in body if isinstance(s, gast.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)
                      and s.value.args
                      and any(self._callee_object(s.value.func, (), record=False) is t
                              for t in transforms)]
        if not candidates:      # (no `df = grad(f)` at all: the function's stores unwalked)
            return body
        stores = [m.id for m in _walk(self.node) if isinstance(m, gast.Name)
                  and isinstance(m.ctx, (gast.Store, gast.Del))] + list(self.params)
        bound = {}
        for s in candidates:
            if stores.count(s.targets[0].id) != 1:
                continue
            obj = self._callee_object(s.value.func, stores)
            args = s.value.args + [k.value for k in s.value.keywords]
            if any(obj is t for t in transforms) and all(
                    isinstance(a, (gast.Constant, gast.Lambda)) or isinstance(a, gast.Name)
                    and stores.count(a.id) <= 1 for a in args) and not any(
                    k.arg is None for k in s.value.keywords):
                bound[s.targets[0].id] = s
        if not bound:
            return body
        for name, s in bound.items():
            calls = self._calls_of(name)
            if not calls:
                continue
            for c in calls:
                c.func = gast.copy_location(copy.deepcopy(s.value), c.func)
            body = [b for b in body if b is not s]
            self.changed = True
        return body

    def _library_call(self, call, stores):
        """Whether `call` calls a function of secant's library (`jnp.sum(x)`: no effect, so
        evaluated a little earlier as well)."""
        fn = self._callee_object(call.func, stores, record=False)
        return callable(fn) and (getattr(fn, "__module__", None) or "").startswith("secant.")

    def _callee_object(self, func, stores, record=True):
        """The object a callee expression `a.b.c` names in the function's environment, or None
        when its root is a local name (`stores`); record=False: a look-up only (no resolution
        recorded for the derivative's guard)."""
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in stores:
            return None
        obj = (self.src.resolve_name if record else self.src._lookup)(func.id)[1]
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return obj

    def _calls_of(self, name):
        """The calls `name(...)` in the function when every read of `name` is one; else None."""
        uses = [m for m in _walk(self.node) if isinstance(m, gast.Name)
                and m.id == name and isinstance(m.ctx, gast.Load)]
        calls = [m for m in _walk(self.node) if isinstance(m, gast.Call)
                 and isinstance(m.func, gast.Name) and m.func.id == name]
        return calls if len(uses) == len(calls) else None

    def _inline_vectorized(self, body):
        """`f = jnp.vectorize(h, ...)` bound once, f only ever called, h and the keywords'
        values names assigned once (or constants; h a lambda too): each call `f(a)` reads `jnp.vectorize(h,
        ...)(a)`, the form the normaliser reads (the same function, as the names never
        change)."""
        candidates = [s for s in body if isinstance(s, gast.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)
                      and isinstance(s.value.func, gast.Attribute)
                      and s.value.func.attr == "vectorize" and len(s.value.args) == 1]
        if not candidates:
            return body
        import numpy
        from secant import numpy as snp
        stores = [m.id for m in _walk(self.node) if isinstance(m, gast.Name)
                  and isinstance(m.ctx, gast.Store)] + list(self.params)
        for s in candidates:
            call, name = s.value, s.targets[0].id
            values = call.args + [k.value for k in call.keywords]
            calls = self._calls_of(name)
            if self._callee_object(call.func, stores) not in (snp.vectorize, numpy.vectorize) \
                    or stores.count(name) != 1 or calls is None \
                    or any(k.arg is None for k in call.keywords) or not all(
                        isinstance(v, gast.Constant) or isinstance(v, gast.Name)
                        and stores.count(v.id) <= 1 or isinstance(v, gast.Lambda)
                        and v is call.args[0] and all(
                            stores.count(m.id) <= 1 for m in _walk(v.body)
                            if isinstance(m, gast.Name)) for v in values):
                continue        # (a lambda: made again at each call, its names never change)
            for c in calls:
                c.func = copy.deepcopy(call)
            body = [b for b in body if b is not s]
            self.changed = True
        return body

    def _inline_partials(self, body):
        """`g = functools.partial(h, a, k=b)` of a nested function h (or a global one, a name
        the function never binds), g only ever called and a, b names assigned once (or
        constants): each call `g(x)` reads `h(a, x, k=b)`, so h is only called (and lifted);
        the same values, as the names never change."""
        import functools
        body = self._name_partial_lambdas(body)
        functions = {s.name for s in body if isinstance(s, gast.FunctionDef)} | {
            s.targets[0].id for s in body if isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda)}
        candidates = [s for s in body if isinstance(s, gast.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)
                      and s.value.args and isinstance(s.value.args[0], gast.Name)
                      and (s.value.args[0].id in functions or _spells_partial(s.value.func))]
        if not candidates:      # (no `g = partial(h, ...)`: stores unwalked)
            return body
        stores = [m.id for m in _walk(self.node) if isinstance(m, gast.Name)
                  and isinstance(m.ctx, gast.Store)] + list(self.params)
        partials = {}
        for s in candidates:
            call, name = s.value, s.targets[0].id
            if call.args[0].id not in functions and call.args[0].id in stores:
                continue        # (a local holding some callable: its value is the run's)
            obj = self._callee_object(call.func, stores)
            if obj is not functools.partial or stores.count(name) != 1 or any(
                    k.arg is None for k in call.keywords) or any(
                    isinstance(a, gast.Starred) for a in call.args):
                continue
            partials[name] = (s, call)
        if not partials:
            return body
        for name, (s, call) in partials.items():
            calls = self._calls_of(name)
            if calls is None or any(isinstance(a, gast.Starred) or k.arg is None
                                    for c in calls for a, k in zip(c.args, c.keywords)):
                continue
            # a bound value other than a constant or a name assigned once (`x[0]`): evaluated
            # once, where the partial is made, into a name of its own
            held = self._hold_bound(call, name, s, lambda value: isinstance(
                value, gast.Constant) or isinstance(value, gast.Name) and stores.count(
                    value.id) == 1)
            for c in calls:
                given = {k.arg for k in c.keywords}
                c.func = copy.deepcopy(call.args[0])
                c.args = [copy.deepcopy(a) for a in call.args[1:]] + c.args
                c.keywords = [copy.deepcopy(k) for k in call.keywords
                              if k.arg not in given] + c.keywords
            at = next(k for k, b in enumerate(body) if b is s)
            body = body[:at] + held + body[at + 1:]
            self.changed = True
        return body

    def _name_partial_lambdas(self, body):
        """`g = partial(lambda w, x: ..., x=x)` -> `g_fn = lambda w, x: ...` / `g = partial(g_fn,
        x=x)`: the lambda made where it was, named, so _inline_partials reads g's calls."""
        out = []
        for s in body:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call) and \
                    _spells_partial(s.value.func) and s.value.args and \
                    isinstance(s.value.args[0], gast.Lambda):
                fn = self.names.fresh(f"{s.targets[0].id}_fn")
                out.append(assign(fn, s.value.args[0], s))
                s.value.args[0] = gast.copy_location(_name(fn), s.value.args[0])
                self.changed = True
            out.append(s)
        return out

    def _partials_as_defs(self, body):
        """`g = functools.partial(h, a, k=b)` (or tree_util.Partial) of a nested def h or a
        global Python function h (plain positional parameters), g used as a value, a and b
        constants or names assigned once: `def g(y): return h(a, y, k=b)`, a nested def as any
        other (a closure object where it is a value, h only called:
        transformer/closures.py). The same function, as the names never change. A partial
        returned, or passed where it is written (`helper(Partial(h, a), x)`), is named so
        first (`def h_partial(y): ...`, `helper(h_partial, x)`)."""
        defs = {s.name: s for s in body if isinstance(s, gast.FunctionDef)}
        candidates = [s for s in body if (isinstance(s, gast.Assign) and len(s.targets) == 1
                                          and isinstance(s.targets[0], gast.Name)
                                          or isinstance(s, gast.Return))
                      and _is_partial_call(s.value)]
        passed = {id(s): found for s in body if isinstance(s, (gast.Assign, gast.Expr,
                                                               gast.Return))
                  and s not in candidates and (found := _passed_partials(s.value))}
        if not (candidates or passed) or self.only_choices:
            return body
        stores = [m.id for m in _walk(self.node) if isinstance(m, gast.Name)
                  and isinstance(m.ctx, gast.Store)] + list(self.params)
        out = []
        for s in body:
            made = self._partial_as_def(s, defs, stores) if s in candidates else \
                self._passed_as_defs(s, passed[id(s)], defs, stores) if id(s) in passed \
                else None
            if made is None:
                out.append(s)
                continue
            out.extend(made)
            self.changed = True
        return out

    def _partial_as_def(self, s, defs, stores):
        """_partials_as_defs' statements for one candidate `s`, or None where it does not
        apply."""
        call = s.value
        if isinstance(s, gast.Assign):
            name = s.targets[0].id
            if stores.count(name) != 1:
                return None
        else:
            name = self._partial_name(call)
        made = self._partial_def(call, name, s, defs, stores)
        if made is None:
            return None
        return [made, _parse(f"return {name}", s)] if isinstance(s, gast.Return) else [made]

    def _passed_as_defs(self, s, found, defs, stores):
        """`helper(Partial(h, a), x)` (the partials `found` as arguments in `s`): `def
        h_partial(y): return h(a, y)` first, then `helper(h_partial, x)`; None where none
        applies."""
        made = []
        for owner, field, k in found:
            call = getattr(owner, field)[k] if k is not None else getattr(owner, field)
            name = self._partial_name(call)
            # a bound `0.5 * x` (no call in it): into a name of its own first
            held = self._hold_bound(call, name, s, lambda value: isinstance(
                value, (gast.Constant, gast.Name, gast.Starred)) or any(
                    isinstance(m, (gast.NamedExpr, gast.Lambda, gast.Yield, gast.Await))
                    or isinstance(m, gast.Call) and not self._library_call(m, stores)
                    for m in _walk(value)))     # (`jnp.sum(x)`: held too; a user's call not)
            fdef = self._partial_def(call, name, s, defs,
                                     stores + [h.targets[0].id for h in held])
            made += held + [fdef] if fdef is not None else held    # (the call reads held)
            if fdef is None:
                continue
            named = gast.copy_location(_name(name), call)
            if k is None:
                setattr(owner, field, named)
            else:
                getattr(owner, field)[k] = named
        return made + [s] if made else None

    def _hold_bound(self, call, name, s, kept):
        """`name_arg = value` (at the user's statement `s`) for each value the partial `call`
        binds that `kept(value)` leaves alone, the call then reading that name."""
        held = []
        for k, v in enumerate(call.args[1:] + call.keywords):
            value = v.value if isinstance(v, gast.keyword) else v
            if kept(value):
                continue
            fresh = self.names.fresh(f"{name}_{v.arg}" if isinstance(v, gast.keyword)
                                     else f"{name}_arg")
            held.append(assign(fresh, value, s))
            if isinstance(v, gast.keyword):
                v.value = gast.copy_location(_name(fresh), value)
            else:
                call.args[k + 1] = gast.copy_location(_name(fresh), value)
        return held

    def _partial_name(self, call):
        return self.names.fresh(f"{gast.unparse(call.args[0]).strip().replace('.', '_')}"
                                "_partial")

    def _partial_def(self, call, name, s, defs, stores):
        """`def name(y): return h(a, y, k=b)` for the partial `call` (at the user's statement
        `s`), or None where it does not apply."""
        head = call.args[0]
        fdef = defs.get(head.id) if isinstance(head, gast.Name) else None
        if fdef is not None:
            a = fdef.args
            if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs \
                    or fdef.decorator_list:
                return None
            params = [p.id for p in a.args]
        else:       # a global Python function (a local holding a callable is the run's)
            params = _plain_positional(self._callee_object(head, stores + list(defs)),
                                       [k.arg for k in call.keywords])   # (`*, scale` bound)
            if params is None:
                return None
        bound = call.args[1:] + [k.value for k in call.keywords]
        keywords = [k.arg for k in call.keywords]
        if not _is_partial(self._callee_object(call.func, stores)) \
                or any(isinstance(v, gast.Starred) for v in call.args) \
                or any(k is None or k not in params[len(call.args) - 1:] for k in keywords) \
                or len(call.args) - 1 > len(params) or not all(
                    isinstance(v, gast.Constant) or isinstance(v, gast.Name)
                    and stores.count(v.id) == 1 for v in bound):
            return None
        rest = [p for p in params[len(call.args) - 1:] if p not in keywords]
        args = [gast.unparse(v).strip() for v in call.args[1:]] + \
            [f"{p}={p}" for p in rest] + \
            [f"{k.arg}={gast.unparse(k.value).strip()}" for k in call.keywords]
        return _parse(f"def {name}({', '.join(rest)}):\n"
                      f"    return {gast.unparse(head).strip()}({', '.join(args)})", s)

    def _name_returned_lambdas(self, body):
        """`return lambda p, g: p - lr * g` at the top level, the lambda reading locals: `fn =
        lambda ...; return fn`, so that the closure it is becomes a Closure object as a
        returned def does (a factory of a step function over a differentiated or batched
        learning rate)."""
        local = set(self.params) | {m.id for m in _walk_scope(body) if isinstance(m, gast.Name)
                                    and isinstance(m.ctx, gast.Store)}
        out = []
        for s in body:
            if isinstance(s, gast.Return) and isinstance(s.value, gast.Lambda) \
                    and _free_names(s.value) & local:
                name = self.names.fresh("fn")
                out.append(assign(name, s.value, s))
                s = gast.copy_location(gast.Return(value=gast.copy_location(_name(name),
                                                                            s.value)), s)
                self.changed = True
            out.append(s)
        return out

    def _name_stored_lambdas(self, body):
        """`layers = [Scale(.5), jnp.tanh, lambda h: h @ w]` in a simple top-level statement: a
        lambda reading locals written as an item of a list, tuple or dict display (there, or
        in one passed to a call or returned) named just before it, `fn = lambda h: h @ w`, so
        that the closure it is becomes a Closure object as a named one does (a transform
        follows w through it)."""
        local = set(self.params) | {m.id for m in _walk_scope(body) if isinstance(m, gast.Name)
                                    and isinstance(m.ctx, gast.Store)}

        def visit(node, named, at):
            if isinstance(node, gast.Call):
                if self._library_callee(node.func, local):
                    return      # (lax.switch(i, [lambda a: a * w, ...], x): its branches)
                for v in node.args + [k.value for k in node.keywords]:
                    visit(v, named, at)
                return
            if not isinstance(node, (gast.List, gast.Tuple, gast.Dict)):
                return
            items = node.values if isinstance(node, gast.Dict) else node.elts
            for i, x in enumerate(items):
                if isinstance(x, gast.Lambda) and _free_names(x) & local \
                        and not _mutates(x, local):
                    name = self.names.fresh("fn")
                    named.append(assign(name, x, at))
                    items[i] = gast.copy_location(_name(name), x)
                    self.changed = True
                else:
                    visit(x, named, at)

        out = []
        for s in body:
            if isinstance(s, (gast.Assign, gast.AnnAssign, gast.Expr, gast.Return)) \
                    and s.value is not None:
                visit(s.value, out, s)
            out.append(s)
        return out

    def _library_callee(self, func, local):
        """Whether the callee `func` may be secant's, NumPy's, SciPy's or JAX's (which read
        their lambdas themselves): any attribute chain, a name bound to one of theirs."""
        if not isinstance(func, gast.Name):
            return True
        if func.id in local:
            return False
        kind, value = self.src.resolve_name(func.id)
        return kind == "unbound" or (getattr(value, "__module__", None) or "").split(".")[0] \
            in ("secant", "numpy", "scipy", "jax")

    def _name_passed_lambdas(self, body):
        """`apply(lambda y: theta * y, x)` in a simple top-level statement, the lambda reading
        locals and the callee a user helper: `fn = lambda y: theta * y` just before it (named
        after the helper's parameter), so it is lifted and the helper specialised to it."""
        from secant.transformer import higher_order
        local = set(self.params) | {m.id for m in _walk_scope(body) if isinstance(m, gast.Name)
                                    and isinstance(m.ctx, gast.Store)}
        defs = {s.name for s in _walk_scope(body) if isinstance(s, gast.FunctionDef)} | {
            s.targets[0].id for s in _walk_scope(body) if isinstance(s, gast.Assign)
            and isinstance(s.value, gast.Lambda) and isinstance(s.targets[0], gast.Name)}
        out = []
        for s in body:
            if not isinstance(s, (gast.Assign, gast.Expr, gast.Return, gast.AugAssign)):
                out.append(s)
                continue
            for m in _walk_scope([s]):
                if not isinstance(m, gast.Call) or not isinstance(m.func, gast.Name):
                    continue
                if m.func.id in self.params or m.func.id in local and m.func.id not in defs:
                    # forward(lambda n, s: params[n], x) of a function passed in (or made by a
                    # call): the lambda a Closure object
                    for i, x in enumerate(m.args):
                        if isinstance(x, gast.Lambda) and _free_names(x) & local and not \
                                _mutates(x, local):
                            name = self.names.fresh("fn")
                            out.append(assign(name, x, s))
                            m.args[i] = gast.copy_location(_name(name), x)
                            self.changed = True
                    continue
                if m.func.id in local:
                    continue
                kind, helper = self.src.resolve_name(m.func.id)
                converts = _converted_position(helper, m) if kind != "unbound" else None
                if kind == "unbound" or not higher_order.is_helper(helper) and converts is None:
                    continue
                slots = [(i, None, x) for i, x in enumerate(m.args)] + \
                    [(None, k.arg, k.value) for k in m.keywords]
                for i, kw, x in slots:
                    if not isinstance(x, gast.Lambda) or not (_free_names(x) & local):
                        continue
                    param = higher_order.param_of(helper, m, i, kw) if converts is None else \
                        _param_name(helper, i) if i == converts else None
                    if param is None:
                        continue
                    name = self.names.fresh(param)
                    out.append(assign(name, x, s))
                    ref = gast.copy_location(_name(name), x)
                    if kw is None:
                        m.args[i] = ref
                    else:
                        next(k for k in m.keywords if k.arg == kw).value = ref
                    self.changed = True
            out.append(s)
        return out

    def _fill_local_defaults(self, fdef, body, definition, local, passing, out):
        """`g = lambda v, s=x: v * s` (a default reading a local, evaluated where the def
        stands): `g_s = x` there, and each call that leaves s out passes it (`g(3.0, s=g_s)`),
        so the lifted g reads no local of its caller. False (nothing changed) when a call's
        arguments cannot be counted (*args, **kwargs) or g is passed to a helper."""
        a = fdef.args
        positional = a.posonlyargs + a.args
        reads = lambda d: d is not None and any(    # noqa: E731
            isinstance(m, gast.Name) and m.id in local for m in _walk(d))
        first = len(positional) - len(a.defaults)
        pending = [(positional[first + i].id, d, i, False) for i, d in enumerate(a.defaults)
                   if reads(d)]
        pending += [(p.id, d, i, True) for i, (p, d) in enumerate(zip(a.kwonlyargs,
                                                                      a.kw_defaults))
                    if reads(d)]
        if not pending:
            return True
        calls = [m for b in body if b is not definition for m in _walk(b)
                 if isinstance(m, gast.Call) and isinstance(m.func, gast.Name)
                 and m.func.id == fdef.name]
        if passing or any(isinstance(x, gast.Starred) for c in calls for x in c.args) or \
                any(k.arg is None for c in calls for k in c.keywords) or \
                any(p in {q.id for q in a.posonlyargs} for p, _, _, _ in pending):
            return False
        for p, default, i, kwonly in pending:
            name = self.names.fresh(f"{fdef.name}_{p}")
            out.append(assign(name, default, definition))
            for c in calls:
                given = {k.arg for k in c.keywords}
                if p not in given and (kwonly or positional.index(
                        next(q for q in positional if q.id == p)) >= len(c.args)):
                    c.keywords = list(c.keywords) + [gast.keyword(
                        arg=p, value=gast.copy_location(_name(name), c))]
            none = gast.copy_location(gast.Constant(None, None), default)
            if kwonly:
                a.kw_defaults[i] = none
            else:
                a.defaults[i] = none
        self.changed = True
        return True

    def _only_called(self, name, body, definition, passing=()):
        """Whether every use of `name` calls it (or passes it to a helper: `passing`)."""
        uses = [m for s in body if s is not definition for m in _walk(s)
                if isinstance(m, gast.Name) and m.id == name]
        calls = {id(m.func) for s in body if s is not definition for m in _walk(s)
                 if isinstance(m, gast.Call) and isinstance(m.func, gast.Name)
                 and m.func.id == name}
        calls |= {id(arg) for _, arg, _, _ in passing}
        stores = [m for m in uses if not isinstance(m.ctx, gast.Load)]
        return uses and not stores and all(id(m) in calls for m in uses)

    def _passed_to_helpers(self, name, body, definition, local):
        """The calls `helper(..., name, ...)` of user helpers that pass the local function
        `name` as an argument: [(call, the argument node, its parameter, helper)]; None when
        one of them cannot be specialised to it (transformer/higher_order.py)."""
        from secant.transformer import higher_order
        out = []
        for s in body:
            if s is definition:
                continue
            for m in _walk(s):
                if not isinstance(m, gast.Call):
                    continue
                for i, x in enumerate(m.args):
                    if isinstance(x, gast.Name) and x.id == name:
                        out.append((m, x, i, None))
                for kw in m.keywords:
                    if isinstance(kw.value, gast.Name) and kw.value.id == name:
                        out.append((m, kw.value, None, kw.arg))
        sites = []
        for call, arg, index, keyword in out:
            helper = None
            if isinstance(call.func, gast.Name) and call.func.id in self.lifted:
                helper = self.lifted[call.func.id]  # (specialised for another function first)
            elif isinstance(call.func, gast.Name) and call.func.id not in local:
                kind, obj = self.src.resolve_name(call.func.id)
                helper = obj if kind != "unbound" else None
            if index is not None and _converted_position(helper, call) == index and \
                    sum(1 for c, _, _, _ in out if c is call) == 1:
                sites.append((call, arg, _CLOSURE_ARGS, helper))
                continue
            if not higher_order.is_helper(helper) or \
                    sum(1 for c, _, _, _ in out if c is call) != 1 or \
                    any(isinstance(x, gast.Starred) for x in call.args):
                return None
            param = higher_order.param_of(helper, call, index, keyword)
            if param is None:
                return None
            sites.append((call, arg, param, helper))
        return sites

    def _specialise_helpers(self, passing, target, free, by_keyword):
        """Each `helper(..., f, ...)` -> `helper_f(..., theta)`: the helper specialised to the
        lifted f, f's free locals passed on (transformer/higher_order.py). False when one
        cannot be."""
        from secant.transformer import higher_order
        rewrites = []
        for call, arg, param, helper in passing:
            if param is _CLOSURE_ARGS:      # odeint(f, y0, t, a): odeint(f, y0, t, a, theta)
                if by_keyword:
                    return False
                rewrites.append((call, arg, None, None))
                continue
            name = self.names.fresh(f"{helper.__name__}_{target.__name__}")
            try:
                spec = higher_order.specialise(helper, param, target, free, by_keyword, name)
            except higher_order.NotSpecialisable:
                return False
            rewrites.append((call, arg, spec, name))
        for call, arg, spec, name in rewrites:
            if spec is None:
                call.args = list(call.args) + [gast.copy_location(_name(v), call) for v in free]
                continue
            self.lifted[name] = spec
            call.func = gast.copy_location(_name(name), call.func)
            call.args = [x for x in call.args if x is not arg]
            call.keywords = [k for k in call.keywords if k.value is not arg]
            if spec.__secant_keyword_extras__:
                call.keywords = list(call.keywords) + [
                    gast.keyword(arg=p, value=gast.copy_location(_name(v), call))
                    for p, v in zip(_extra_params(spec, len(free)), free)]
            else:
                call.args = list(call.args) + [gast.copy_location(_name(v), call) for v in free]
        return True

    def _add_call_arguments(self, body, name, free, by_keyword):
        self._unshadow(body, name, free)
        for s in body:
            for m in _walk(s):
                if isinstance(m, gast.Call) and isinstance(m.func, gast.Name) and \
                        m.func.id == name:
                    if by_keyword:
                        m.keywords = list(m.keywords) + [
                            gast.keyword(arg=v, value=gast.copy_location(_name(v), m))
                            for v in free]
                    else:
                        m.args = list(m.args) + [gast.copy_location(_name(v), m) for v in free]

    def _unshadow(self, body, name, free):
        """A nested function calling `name` that binds a free local passed to it (`def h(c):
        return g(c)` where g reads the enclosing c): its own c renamed (c_1), so that the call
        passes the enclosing one, as Python's scopes say."""
        renames = []

        def visit(node, chain):
            if isinstance(node, (gast.FunctionDef, gast.Lambda)):
                chain = chain + [node]
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                    node.func.id == name:
                for v in free:
                    binder = next((f for f in chain if v in _binds(f)), None)
                    if binder is not None and (binder, v) not in renames:
                        renames.append((binder, v))
            for child in gast.iter_child_nodes(node):
                visit(child, chain)
        for s in body:
            visit(s, [])
        for binder, v in renames:
            new = self.names.fresh(v)
            for m in _walk(binder):
                if isinstance(m, gast.Name) and m.id == v:
                    m.id = new

    def _lift(self, fdef, free, by_keyword=False):
        fdef = copy.deepcopy(fdef)
        params = [gast.Name(v, gast.Param(), None, None) for v in free]
        a = fdef.args
        if a.vararg or a.kwonlyargs or a.kwarg:     # keyword-only, always passed
            a.kwonlyargs = list(a.kwonlyargs) + params
            a.kw_defaults = list(a.kw_defaults) + [None for _ in params]
            params = []
        fdef.args.args = list(fdef.args.args) + params
        if by_keyword and params:   # after parameters with defaults: `x=None`, always passed
            fdef.args.defaults = list(fdef.args.defaults) + [gast.Constant(None, None)
                                                             for _ in params]
        from secant.transformer.functionalize import _Printer
        printer = _Printer(self.src, {})
        printer.stmt(fdef, 0)
        source = "\n".join(printer.lines) + "\n"
        # (a lifted function calls another; the rewrites' helpers: vjp_pullback, tree_map)
        closure = {**self.src.closure, **self.lifted, **self.tree_names}
        fn = loader.load(source, fdef.name, self.src.globals,
                         {k: v for k, v in closure.items()
                          if k in _names_of_source(source)}, printer.origins)
        tree = ast.parse(source)
        used = {n.id for n in _walk(tree) if isinstance(n, ast.Name)}
        # (a recursive one names itself: the factory's own binding, read as this function)
        closure = {**closure, fdef.name: fn} if fdef.name in used else closure
        fn.__secant_source__ = FunctionSource(
            fn, gast_parse.to_gast(tree).body[0], fn.__code__.co_filename, 1, source.splitlines(),
            self.src.globals, {k: v for k, v in closure.items() if k in used},
            generated=self.src.generated)
        fn.__secant_desugared__ = True
        fn.__secant_user_code__ = True      # (its own body desugared in turn: an early return)
        return fn

    # --- loading ----------------------------------------------------------------------------------
    def _if(self, s, body, orelse):
        new = copy.copy(s)
        if not body and orelse and not (isinstance(s.test, gast.Name)
                                         and s.test.id in self.break_flags):
            # `if c: continue` + rest: `if not c: rest` (not a loop's own flag, which a
            # return inside a nested loop leaves in `if looping: pass` / `else: ...`: a
            # batched or traced flag has no Python `not`)
            new.test, body, orelse = _negate(s.test), orelse, []
        new.body, new.orelse = body or [_at(s, gast.Pass())], orelse
        return new

    def load(self, fn, node):
        from secant.transformer.functionalize import _Printer
        for a in _walk(node.args):
            if isinstance(a, gast.Name):
                a.annotation = None
        node.decorator_list, node.returns = [], None
        printer = _Printer(self.src, {})
        printer.stmt(node, 0)
        source = "\n".join(printer.lines) + "\n"
        tree = ast.parse(source)        # parsed once: its names, its gast form, compilation
        used = {n.id for n in _walk(tree) if isinstance(n, ast.Name)}
        fdef = gast_parse.to_gast(tree).body[0]     # (before loader.load changes tree)
        free = {k: v for k, v in {**self.src.closure, **self.lifted, **self.tree_names}.items()
                if k in used}
        # the user's closure variables stay the user's own cells (read when the code runs)
        cells = {k: c for k, c in self.src.cells.items()
                 if k in free and free[k] is self.src.closure.get(k)}
        gen = loader.load(source, node.name, self.src.globals, free, printer.origins,
                          tree=tree, cells=cells)
        gen.__defaults__ = fn.__defaults__
        gen.__kwdefaults__ = fn.__kwdefaults__
        gen.__qualname__ = fn.__qualname__
        gen.__doc__ = fn.__doc__
        gen.__module__ = fn.__module__
        gen.__secant_source__ = FunctionSource(gen, fdef, gen.__code__.co_filename, 1,
                                               source.splitlines(), self.src.globals, free,
                                               generated=self.src.generated)
        gen.__secant_desugared__ = True
        gen.__secant_rewritten_from__ = fn      # (a function traced instead: the user's own)
        gen.__secant_only_choices__ = self.only_choices
        operators.carry_objects(fn, gen)
        gen.__secant_item_updates__ = self.item_updates
        gen.__secant_closures__ = self.closures
        return gen


def _sorted_items_by_key(n):
    """Whether `n` is `sorted(d.items(), key=lambda kv: kv[0])`: the order sorted(d.items())
    gives too (a dict's keys are distinct, so pairs compare by their keys)."""
    if not (isinstance(n.func, gast.Name) and n.func.id == "sorted" and len(n.args) == 1
            and len(n.keywords) == 1 and n.keywords[0].arg == "key"):
        return False
    it, key = n.args[0], n.keywords[0].value
    if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute)
            and it.func.attr == "items" and not it.args and not it.keywords):
        return False
    a = key.args if isinstance(key, gast.Lambda) else None
    return a is not None and len(a.args) == 1 and not (a.vararg or a.kwarg or a.kwonlyargs
                                                      or a.defaults or a.posonlyargs) \
        and isinstance(key.body, gast.Subscript) and isinstance(key.body.value, gast.Name) \
        and key.body.value.id == a.args[0].id and isinstance(key.body.slice, gast.Constant) \
        and key.body.slice.value == 0 and type(key.body.slice.value) is int


def _may_be_tree_call(d, root, chain):
    """Whether a call of `root.chain...` may call what _TreeCalls rewrites: a secant.tree_util
    function or a pytree class."""
    obj = d.module_callee(root, chain)
    if obj is ANY:
        return True
    from secant import tree_util
    return obj is not None and (any(obj is getattr(tree_util, name) for name in _TREE_CALLS)
                                or objects.node_class(obj) is not None)


_TREE_CALLS = ("tree_map", "tree_flatten", "tree_leaves", "tree_structure", "tree_reduce",
               "tree_map_with_path", "tree_transpose")


class _TreeCalls(Hoister):
    """secant.tree_util calls whose structure is a run-time value, in the ops the transforms
    have rules for (tree_leaves, tree_unflatten, tree_structure; transformer/ops.py):
    `tree_map(lambda p, g: p - 0.1 * g, params, grads)` ->
    `tree_unflatten(tree_structure(params), [p - 0.1 * g for p, g in
                    zip(tree_leaves(params), tree_leaves_as(grads, tree_structure(params)))])`,
    `tree_flatten(t)` -> `(tree_leaves(t), tree_structure(t))`; with an is_leaf, the first tree
    too is read up to `tree_structure(params, is_leaf=...)`. `tree_reduce(lambda a, b: ...,
    tree, init)` -> the loop it runs (`a = init`, `for b in tree_leaves(tree): a = ...`)."""

    def __init__(self, d):
        self.d = d
        self._bound = None      # the names d's function binds, read once (not once per call)

    def _named(self, tree, like, hint="tree"):
        """`tree` itself when a name, else a fresh name bound to it just before the statement
        (where the statement evaluates it exactly once), else a copy."""
        if isinstance(tree, gast.Name):
            return tree, lambda: copy.deepcopy(tree)
        if self.lazy:
            return tree, lambda: copy.deepcopy(tree)
        name = self.d.names.fresh(hint)
        self.pre.append(assign(name, tree, like))
        return _name(name), lambda: _name(name)

    def _resolved(self, func):
        """The object a callee `a.b.c` names in the function's environment, or None (a name the
        function binds itself)."""
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.d.params or self._binds(func.id):
            return None
        kind, obj = self.d.src.resolve_name(func.id)
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return obj

    def _callee(self, func):
        obj = self._resolved(func)
        from secant import tree_util
        for name in _TREE_CALLS:
            if obj is getattr(tree_util, name):
                return name
        return None

    def _binds(self, name):
        """Whether d's function binds `name` (its bound names read once, not once per call)."""
        if self._bound is None:
            self._bound = hygiene_bound(self.d.node)
        return name in self._bound

    def _fn(self, name):
        from secant import tree_util
        for k, v in self.d.tree_names.items():
            if v is getattr(tree_util, name):
                return k
        k = self.d.names.fresh(name)
        self.d.tree_names[k] = getattr(tree_util, name)
        return k

    def _call(self, name, *args):
        return gast.Call(_name(self._fn(name)), list(args), [])

    def _strict_leaves(self, tree, structure):
        """`tree_leaves_as(tree, structure, strict=True)`: a later tree of the user's tree_map,
        refused where its kinds differ from the first's (a list for a tuple), as JAX."""
        call = self._call("tree_leaves_as", tree, copy.deepcopy(structure))
        call.keywords = [gast.keyword("strict", gast.Constant(True, None))]
        return call

    def _node_class(self, func):
        """The pytree class (namedtuple, registered class) a callee names, else None."""
        obj = self._resolved(func)
        return None if obj is None else objects.node_class(obj)

    def _tree_method(self, node, build):
        """`P.m(P(a), x)` for `P(a).m(x)` (`P.__call__(P(a), x)` for `P(a)(x)`) where P is a
        pytree class (a namedtuple, a registered class) that transformer/user_objects.py cannot
        read as its fields (a namedtuple's __new__, a method passing self on to a helper) and m
        a plain function of it: the object built as a tree (_constructor) and passed to m as
        any argument. None otherwise."""
        cls = self._node_class(build.func)
        method = node.func.attr if node.func is not build else "__call__"
        if cls is None or not inspect.isfunction(inspect.getattr_static(cls, method, None)):
            return None
        from secant.transformer.user_objects import functional_form
        if functional_form(cls) is not None:
            return None
        func = gast.Attribute(copy.deepcopy(build.func), method, gast.Load())
        return gast.copy_location(gast.Call(gast.copy_location(func, node.func),
                                            [build] + node.args, node.keywords), node)

    def _constructor(self, node):
        """`P(a, b)` of a pytree class P, as the transforms read a tree rebuilt from its leaves:
        `tree_unflatten(tree_structure(P(a, b)), tree_leaves([a, b]))` (the leaves in the
        order P flattens them; transformer/objects.py), so each field carries its derivative
        and batch axis and a field read gets a cotangent of class P. None where P's arguments
        are not its children as given."""
        if getattr(node, "secant_structure", False) or any(
                isinstance(a, gast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            return None
        cls = self._node_class(node.func)
        if cls is None or not any(isinstance(n, gast.Name) for n in _walk(node)
                                  if n is not node.func and not isinstance(n, gast.Attribute)):
            return None             # (not a pytree class; or built from constants)
        order = objects.constructor_children(cls, len(node.args), [k.arg for k in node.keywords])
        if not order:
            return None
        given = {}
        args = []
        params = objects.parameter_names(cls)
        for i, a in enumerate(node.args):
            a, again = self._named(a, node, params[i] if i < len(params) else "arg") \
                if i in order or not _field_read(a) else (a, None)
            args.append(a)
            given[i] = again
        keywords = []
        for k in node.keywords:
            # (an aux argument `obj.f`, read once, stays as written: the normaliser checks a
            # field of a parameter there when the code runs, normalize.py _field_of_parameter)
            v, again = self._named(k.value, node, k.arg) \
                if k.arg in order or not _field_read(k.value) else (k.value, None)
            keywords.append(gast.keyword(k.arg, v))
            given[k.arg] = again
        built = gast.Call(node.func, args, keywords)
        built.secant_structure = True          # (read as it is, here and when read again)
        leaves = self._call("tree_leaves", gast.List([given[k]() for k in order], gast.Load()))
        self.d.changed = True
        return gast.copy_location(
            self._call("tree_unflatten", self._call("tree_structure", built), leaves), node)

    def visit_Call(self, node):
        inner = node.func.value if isinstance(node.func, gast.Attribute) else node.func
        if isinstance(inner, gast.Call) and (as_tree := self._tree_method(node, inner)):
            node = as_tree                  # P(a).m(x) -> P.m(P(a), x): P(a) a tree (below)
        elif isinstance(inner, gast.Call):  # C(a)(x), C(a).m(x): an object used where it is
            inner.secant_structure = True   # built (transformer/user_objects.py reads it)
        if self._callee(node.func) == "tree_structure":     # P(a, b) read for its structure
            for a in node.args:
                if isinstance(a, gast.Call):
                    a.secant_structure = True
        self.generic_visit(node)
        name = self._callee(node.func)
        if name is None:
            built = self._constructor(node)
            return node if built is None else built
        kw = {k.arg: k.value for k in node.keywords}
        if any(k not in ("is_leaf", "initializer") for k in kw) or any(
                isinstance(a, gast.Starred) for a in node.args):
            return node
        is_leaf = kw.pop("is_leaf", None)
        if isinstance(is_leaf, gast.Constant) and is_leaf.value is None:
            is_leaf = None
        args = node.args
        if name == "tree_reduce":
            return self._reduce(node, args, kw.get("initializer"), is_leaf)
        if name in ("tree_leaves", "tree_structure") and (is_leaf is None or name == "tree_leaves"):
            if is_leaf is not None:                 # the leaves up to the is_leaf structure
                tree, again = self._named(args[0], node)
                structure = self._call("tree_structure", again())
                structure.keywords = [gast.keyword("is_leaf", is_leaf)]
                return gast.copy_location(self._call("tree_leaves_as", tree, structure), node)
            if node.keywords:                       # is_leaf=None: the default
                node.keywords = []
                self.d.changed = True
            return node
        if name == "tree_structure" or name == "tree_flatten" and is_leaf is not None:
            return node
        if name == "tree_transpose":
            return self._transpose(node, args) if len(args) == 3 and not kw and \
                is_leaf is None and not self.lazy else node
        if name == "tree_flatten" and len(args) == 1:
            tree, again = self._named(args[0], node)
            out = gast.Tuple([self._call("tree_leaves", tree),
                              self._call("tree_structure", again())], gast.Load())
        elif name in ("tree_map", "tree_map_with_path") and len(args) >= 2:
            f, trees = args[0], args[1:]
            n = len(trees)
            with_path = name == "tree_map_with_path"    # f(path, leaf, ...): the paths zipped
            if with_path:                               # in first, a static list
                n += 1
            if isinstance(f, gast.Lambda) and len(f.args.args) == n and not (
                    f.args.vararg or f.args.kwarg or f.args.kwonlyargs or f.args.defaults
                    or f.args.posonlyargs):
                targets, body = [a.id for a in f.args.args], f.body
            elif isinstance(f, (gast.Name, gast.Attribute)):
                targets = [self.d.names.fresh("leaf") for _ in range(n)]
                body = gast.Call(f, [_name(t) for t in targets], [])
            else:
                return node
            first, again = self._named(trees[0], node)
            structure = self._call("tree_structure", again())
            if is_leaf is not None:
                structure.keywords = [gast.keyword("is_leaf", is_leaf)]
                if not isinstance(first, gast.Name):
                    return node
                leaves = [self._call("tree_leaves_as", first, copy.deepcopy(structure))]
            else:
                leaves = [self._call("tree_leaves", first)]
            leaves += [self._strict_leaves(t, structure) for t in trees[1:]]
            if with_path:
                leaves.insert(0, self._call("treedef_paths", copy.deepcopy(structure)))
            if n == 1:
                target, it = _name(targets[0], store=True), leaves[0]
            else:
                target = gast.Tuple([_name(t, store=True) for t in targets], gast.Store())
                it = gast.Call(_name("zip"), leaves, [])
            comp = gast.ListComp(body, [gast.comprehension(target, it, [], 0)])
            out = self._call("tree_unflatten", structure, comp)
        else:
            return node
        self.d.changed = True
        return gast.copy_location(out, node)

    def _transpose(self, node, args):
        """`tree_transpose(outer, inner, rows)` as the leaves it reorders:
        `tree_unflatten(transpose_structure(outer, inner), [leaves[k] for k in
        transpose_order(outer, inner, tree_structure(rows))])`, leaves = tree_leaves(rows)."""
        outer, again_outer = self._named(args[0], node, "outer")
        inner, again_inner = self._named(args[1], node, "inner")
        tree, again_tree = self._named(args[2], node)
        leaves, _ = self._named(self._call("tree_leaves", tree), node, "leaves")
        k = self.d.names.fresh("k")
        order = self._call("transpose_order", again_outer(), again_inner(),
                           self._call("tree_structure", again_tree()))
        comp = gast.ListComp(gast.Subscript(leaves, _name(k), gast.Load()),
                             [gast.comprehension(_name(k, store=True), order, [], 0)])
        self.d.changed = True
        return gast.copy_location(self._call(
            "tree_unflatten", self._call("transpose_structure", outer, inner), comp), node)

    def _reduce(self, node, args, initializer, is_leaf):
        """`tree_reduce(lambda a, b: body, tree[, init])` as the loop functools.reduce runs,
        written before the statement: `a = init` (or the first leaf), `for b in leaves: a =
        body`; the call reads `a`."""
        if self.lazy or len(args) not in (2, 3) or len(args) == 3 and initializer is not None:
            return node
        f, tree = args[0], args[1]
        initializer = args[2] if len(args) == 3 else initializer
        if isinstance(f, gast.Lambda) and len(f.args.args) == 2 and not (
                f.args.vararg or f.args.kwarg or f.args.kwonlyargs or f.args.defaults
                or f.args.posonlyargs):
            inside = {id(n) for n in _walk(f)}
            outside = {n.id for n in _walk(self.d.node)
                       if isinstance(n, gast.Name) and id(n) not in inside}
            names = [self.d.names.fresh(a.id) if a.id in outside else a.id
                     for a in f.args.args]     # the lambda's own names, where no other reads them
            body = _Renamed({a.id: n for a, n in zip(f.args.args, names)}).visit(
                copy.deepcopy(f.body))
        elif isinstance(f, (gast.Name, gast.Attribute)):
            names = [self.d.names.fresh("reduced"), self.d.names.fresh("leaf")]
            body = gast.Call(f, [_name(n) for n in names], [])
        else:
            return node
        acc, leaf = names
        leaves = self._call("tree_leaves", tree)
        if is_leaf is not None:
            tree, again = self._named(tree, node)
            structure = self._call("tree_structure", again())
            structure.keywords = [gast.keyword("is_leaf", is_leaf)]
            leaves = self._call("tree_leaves_as", tree, structure)
        if initializer is None:
            listed = self.d.names.fresh("leaves")
            self.pre.append(assign(listed, leaves, node))
            self.pre.append(assign(acc, _parse(f"{listed}[0]", node).value, node))
            leaves = _parse(f"{listed}[1:]", node).value
        else:
            self.pre.append(assign(acc, initializer, node))
        loop = gast.For(target=_name(leaf, True), iter=leaves,
                        body=[assign(acc, body, node)], orelse=[], type_comment=None)
        self.pre.append(_at(node, loop))
        self.d.changed = True
        return gast.copy_location(_name(acc), node)


class _Renamed(gast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node


def hygiene_bound(node):
    from secant.transformer.hygiene import bound
    return bound(node)


_INVERSE = {gast.Eq: gast.NotEq, gast.NotEq: gast.Eq, gast.Lt: gast.GtE, gast.GtE: gast.Lt,
            gast.Gt: gast.LtE, gast.LtE: gast.Gt, gast.Is: gast.IsNot, gast.IsNot: gast.Is,
            gast.In: gast.NotIn, gast.NotIn: gast.In}


def _constant(node):
    """A number, string, bool or None written out, or a tuple of such."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    if isinstance(node, gast.Tuple):
        return all(_constant(e) for e in node.elts)
    return isinstance(node, gast.Constant)


def _negate(test):
    """`not test`, written as the opposite comparison where that is exact (i == 3 -> i != 3;
    not for < and friends: NaN makes `not a < b` differ from `a >= b`)."""
    if isinstance(test, gast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _INVERSE \
            and not isinstance(test.ops[0], (gast.Lt, gast.Gt, gast.LtE, gast.GtE)):
        new = copy.copy(test)
        new.ops = [_INVERSE[type(test.ops[0])]()]
        return new
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        return test.operand
    return gast.copy_location(gast.UnaryOp(op=gast.Not(), operand=test), test)


def _drop_final(stmts, flag):
    """`stmts` without a `flag = False` that is the last thing they run (nothing reads it)."""
    if not stmts:
        return stmts
    last = stmts[-1]
    if isinstance(last, gast.Assign) and isinstance(last.targets[0], gast.Name) and \
            last.targets[0].id == flag:
        return stmts[:-1]
    if isinstance(last, gast.If):
        last.body = _drop_final(last.body, flag) or [gast.copy_location(gast.Pass(), last)]
        last.orelse = _drop_final(last.orelse, flag)
    return stmts


def _strip(stmts, flag):
    """`stmts` without the assignments `flag = False` (a flag nothing reads)."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                s.targets[0].id == flag:
            continue
        if isinstance(s, gast.If):
            s.body, s.orelse = _strip(s.body, flag), _strip(s.orelse, flag)
            if not s.body and s.orelse:     # `if c: continue` + rest: `if not c: rest`
                s.test, s.body, s.orelse = _negate(s.test), s.orelse, []
            s.body = s.body or [gast.copy_location(gast.Pass(), s)]
        out.append(s)
    return out


def _extra_params(spec, n):
    """The names of the n parameters a specialised helper took for the closure's values: its
    last positional ones (higher_order._build appends them before any keyword-only one)."""
    import inspect
    return [p.name for p in inspect.signature(spec).parameters.values()
            if p.kind == p.POSITIONAL_OR_KEYWORD][-n:]


def _names_of_source(source):
    return {n.id for n in _walk(ast.parse(source)) if isinstance(n, ast.Name)}


def _simplify_result(stmts, result):
    """`result = e` followed directly by `return result` at the top level: `return e`."""
    if len(stmts) >= 2 and isinstance(stmts[-2], gast.Assign) and \
            isinstance(stmts[-2].targets[0], gast.Name) and stmts[-2].targets[0].id == result \
            and not any(isinstance(m, gast.Name) and m.id == result
                        for s in stmts[:-2] for m in _walk(s)):
        ret = gast.Return(value=stmts[-2].value)
        return stmts[:-2] + [gast.copy_location(ret, stmts[-2])]
    return stmts


def _free_names(node):
    """Names a lambda reads that it does not bind itself."""
    own = {a.id for a in _walk(node.args) if isinstance(a, gast.Name)}
    return {m.id for m in _walk(node.body) if isinstance(m, gast.Name)
            and isinstance(m.ctx, gast.Load)} - own


def _binds(fn):
    """The names a def or lambda binds in its own scope (parameters, assignments)."""
    inner = list(fn.body) if isinstance(fn, gast.FunctionDef) else [fn.body]
    return {m.id for m in [*_walk(fn.args), *_walk_scope(inner)]
            if isinstance(m, gast.Name) and isinstance(m.ctx, (gast.Store, gast.Param))}


# a library function that calls its function argument with the call's trailing positional
# arguments after its own (odeint(func, y0, t, *args) calls func(y, t, *args)) says which
# argument that is: `__secant_closure_args__ = 0`. A local function passed there that reads the
# caller's locals is lifted and its free locals passed as more trailing arguments (JAX's
# closure_convert), so their derivatives flow through the library's own rules for *args.
_CLOSURE_ARGS = object()


def _converted_position(helper, call):
    position = getattr(helper, "__secant_closure_args__", None)
    if position is None or any(isinstance(a, gast.Starred) for a in call.args) or \
            len(call.args) <= position:
        return None
    return position


def _param_name(helper, index):
    try:
        params = list(inspect.signature(helper, follow_wrapped=False).parameters)
    except (TypeError, ValueError):
        return None
    return params[index] if index < len(params) else None
