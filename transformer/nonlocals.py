"""Nested functions that rebind their enclosing function's locals (`nonlocal z; z = z * 2`),
rewritten to return what they rebind, so that the value flows through the function's data flow
(which grad, jvp and vmap follow) instead of a closure cell (which they cannot see):

    def double():                       def double(z):
        nonlocal z              ->          z = z * 2.0
        z = z * 2.0                         return z
    double()                            z = double(z)

Only the plain shape is rewritten: a def with positional parameters, no return, that is only
ever called as a statement of the function (`double()`, never passed or stored). The others
stay as written, and transformer/normalize.py refuses them with the `nonlocal` line.
"""
import os
import re

import gast

from secant.transformer.hygiene import SCOPES as _SCOPES, walk_scope as _walk_scope
from secant.transformer.parse import located


def nonlocal_names(fdef):
    """The names a nested def declares nonlocal (in its own scope), with the statements."""
    stmts = [n for n in _walk_scope(fdef.body) if isinstance(n, gast.Nonlocal)]
    return [name for s in stmts for name in s.names], stmts


def _statement_lists(stmts):
    """Every statement list of `stmts` (itself and the bodies of its compound statements), not
    descending into nested scopes."""
    yield stmts
    for s in stmts:
        if isinstance(s, _SCOPES):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                yield from _statement_lists(inner)
        for h in getattr(s, "handlers", None) or []:
            yield from _statement_lists(h.body)


def _is_call_statement(s, name):
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
        isinstance(s.value.func, gast.Name) and s.value.func.id == name and \
        not s.value.keywords and not any(isinstance(a, gast.Starred) for a in s.value.args)


def _names(names, store):
    ctx = gast.Store if store else gast.Load
    if len(names) == 1:
        return gast.Name(names[0], ctx(), None, None)
    return gast.Tuple([gast.Name(n, ctx(), None, None) for n in names], ctx())


def _rebinding_defs(body, local):
    """(def, its nonlocal names, its nonlocal statements) for each nested def of `body` that
    rebinds names of `local` through `nonlocal` (body may be changed while this runs)."""
    for s in list(body):
        if isinstance(s, gast.FunctionDef):
            names, stmts = nonlocal_names(s)
            if names and set(names) <= local:
                yield s, names, stmts


def return_rebound(body, local):
    """`body` (a function's statements) with each nested def that rebinds names of `local`
    through `nonlocal` rewritten to take and return them; whether anything changed."""
    changed = False
    for s, names, stmts in _rebinding_defs(body, local):
        a = s.args
        if s.decorator_list or a.vararg or a.kwarg or a.kwonlyargs or a.defaults or \
                a.posonlyargs or any(isinstance(n, (gast.Return, gast.Yield, gast.YieldFrom,
                                                    gast.Global))
                                     for n in _walk_scope(s.body)):
            continue
        calls = [(lst, k) for lst in _statement_lists(body) for k, c in enumerate(lst)
                 if _is_call_statement(c, s.name)]
        uses = [n for b in body if b is not s for n in gast.walk(b)
                if isinstance(n, gast.Name) and n.id == s.name]
        if not calls or len(uses) != len(calls):
            continue            # passed, stored or rebound: left as written (refused later)
        names = list(dict.fromkeys(names))
        s.body = [b for b in s.body if not any(b is n for n in stmts)] or [gast.Pass()]
        a.args = a.args + [gast.Name(n, gast.Param(), None, None) for n in names]
        s.body.append(located(gast.Return(_names(names, False)), stmts[0]))
        for lst, k in calls:
            call = lst[k]
            call.value.args = call.value.args + [located(_names([n], False), call)
                                                 for n in names]
            lst[k] = located(gast.Assign([_names(names, True)], call.value, None), call)
        changed = True
    return changed


_SHORT = (gast.IfExp, gast.BoolOp, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
          gast.GeneratorExp, gast.Await, gast.NamedExpr)


def _post_order(node, out):
    """The expressions of `node` in the order Python evaluates them (a call after its function
    and arguments): a node after its children, in their fields' order."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, (gast.expr, gast.keyword)):
            _post_order(child, out)
    out.append(node)
    return out


def _parents(node):
    return {id(c): p for p in gast.walk(node) for c in gast.iter_child_nodes(p)}


def _evaluated(stmt):
    """(the expression `stmt` evaluates first, whether the threading can hoist calls out of
    it): an assignment's value, a return's, an if's test, a for's iterable; None elsewhere."""
    if isinstance(stmt, (gast.Expr, gast.Assign, gast.Return)) or isinstance(
            stmt, (gast.AugAssign, gast.AnnAssign)) and stmt.value is not None:
        return "value"
    if isinstance(stmt, gast.If):
        return "test"
    if isinstance(stmt, gast.For):
        return "iter"
    return None


def thread_rebound(body, local, fresh):
    """`body` (a function's statements) with each nested def that rebinds names of `local`
    through `nonlocal` and returns a value (flax's per-layer rng counter), or has defaults,
    rewritten to take those names first and return them after its value, each call of it
    hoisted out of its statement into an assignment that rebinds them:

        def dropout(h, rate=0.2):               def dropout(counter, h, rate=0.2):
            nonlocal counter            ->          key = fold_in(rng, counter)
            key = fold_in(rng, counter)             counter += 1
            counter += 1                            return h * mask(key), counter
            return h * mask(key)                dropout_out, counter = dropout(counter, x)
        y = dropout(x)                          y = dropout_out

    so that the state is data every transform follows to any depth, as JAX's trace reads it
    (each call's value, once). Only where that keeps Python's order: every use of the def a
    call in this function's own statements (not in a nested def, a lambda or a
    comprehension, a while test, nor behind `and`/`or`/`if-else`, as is each call or read of
    the state Python evaluates before it in its statement, which is bound before it too), no
    other nested scope naming the state, nothing else of its function changed in place. The
    others stay as written (refused later, clearly).
    `fresh(name)`: a new local name. Whether anything changed."""
    changed = False
    for s, names, stmts in _rebinding_defs(body, local):
        names = list(dict.fromkeys(names))
        a = s.args
        own = list(_walk_scope(s.body))
        if s.decorator_list or a.posonlyargs or any(
                isinstance(n, (gast.Yield, gast.YieldFrom, gast.Global)) for n in own) or \
                sum(isinstance(n, gast.Nonlocal) for n in gast.walk(s)) != len(stmts) or \
                any(isinstance(n, gast.Name) and n.id == s.name for n in gast.walk(s)):
            continue
        # (an object of its function it changes in place too, `params[name] = ...`: left to
        # the trace on each call that follows such state)
        mine = {n.id for n in own if isinstance(n, gast.Name) and isinstance(
            n.ctx, gast.Store)} - set(names)
        if any(m.id not in mine for m in changed_in_place(own)):
            continue
        # no other scope of the function names the state (it would see the cell, not this)
        others = [n for b in body if b is not s for n in gast.walk(b)
                  if isinstance(n, _SCOPES)]
        if any(isinstance(m, gast.Name) and m.id in names for o in others
               for m in gast.walk(o)):
            continue
        plan = _thread_plan(body, s, names)
        if plan is None:
            continue
        s.body = [b for b in s.body if not any(b is n for n in stmts)] or [gast.Pass()]
        a.args = [gast.Name(n, gast.Param(), None, None) for n in names] + a.args
        for n in own:
            if isinstance(n, gast.Return):
                n.value = located(gast.Tuple([n.value or gast.Constant(None, None)] + [
                    gast.Name(m, gast.Load(), None, None) for m in names], gast.Load()), n)
        if not isinstance(s.body[-1], gast.Return):
            s.body.append(located(gast.Return(gast.Tuple(
                [gast.Constant(None, None)] + [gast.Name(m, gast.Load(), None, None)
                                               for m in names], gast.Load())), stmts[0]))
        for lst, stmt in plan:
            _hoist_calls(lst, stmt, s.name, names, fresh)
        changed = True
    return changed


def _calls_of(expr, name):
    return [n for n in gast.walk(expr) if isinstance(n, gast.Call)
            and isinstance(n.func, gast.Name) and n.func.id == name]


def _thread_plan(body, s, names):
    """[(statement list, statement)] holding every call of the def `s`, where each can be
    hoisted (thread_rebound); None where one cannot."""
    plan, found = [], 0
    for lst in _statement_lists(body):
        for stmt in lst:
            if stmt is s:
                continue
            heads = [getattr(stmt, f) for f in ("value", "test", "iter") if
                     isinstance(getattr(stmt, f, None), gast.expr)]
            field = _evaluated(stmt)
            calls = [c for h in heads for c in _calls_of(h, s.name)]
            if not calls:
                continue
            if field is None or isinstance(stmt, gast.AugAssign) and isinstance(
                    stmt.target, gast.Name) and stmt.target.id in names:
                return None
            expr = getattr(stmt, field)
            if len(_calls_of(expr, s.name)) != len(calls):
                return None
            parents = _parents(expr)
            if any(_conditional(c, parents) for c in calls):
                return None
            order = _post_order(expr, [])
            calls = [n for n in order if any(n is c for c in calls)]    # (as they run)
            first = calls[0]
            inside = {id(n) for n in gast.walk(first)}
            for n in order[:order.index(first)]:
                if id(n) in inside:
                    continue
                if isinstance(n, (gast.Call, gast.Name)) and _conditional(n, parents):
                    return None
            # (a later call of it: hoisted after the first, so what lies between is checked
            # as each is hoisted; refused here where a call or a read of the state lies
            # between two of them)
            for c in calls[1:]:
                between = order[order.index(first) + 1:]
                k = next(i for i, n in enumerate(between) if n is c)
                within = {id(n) for n in gast.walk(c)}
                if any(isinstance(n, (gast.Call, gast.Name)) and _conditional(n, parents)
                       and id(n) not in within and id(n) not in inside
                       for n in between[:k]):
                    return None
            plan.append((lst, stmt))
            found += len(calls)
    uses = [n for b in body if b is not s for n in gast.walk(b)
            if isinstance(n, gast.Name) and n.id == s.name]
    return plan if plan and found == len(uses) else None


def _conditional(node, parents):
    """Whether Python may skip evaluating `node` (behind `and`, `or`, `if-else`, in a lambda,
    a comprehension, a chained comparison's later operands) or it binds a name (`:=`)."""
    p = parents.get(id(node))
    while p is not None:
        if isinstance(p, _SHORT) or isinstance(p, gast.Compare) and len(p.ops) > 1:
            return True
        p = parents.get(id(p))
    return False


def _hoist_calls(lst, stmt, name, names, fresh):
    """Each call of `name` in `stmt` (of the list `lst`), innermost first, bound before it:
    `name_out, *names = name(*names, ...)`, the call replaced by name_out; a call Python makes
    before it in the statement (`snp.cos(x) + step(x)`) bound before it first, so that the
    calls keep their order."""
    field = _evaluated(stmt)

    def bind(node, targets, out):
        line = located(gast.Assign([targets], node, None), stmt)
        value = gast.Name(out, gast.Load(), None, None)
        gast.copy_location(value, node)
        expr = getattr(stmt, field)
        if expr is node:
            setattr(stmt, field, value)
        else:
            parent = _parents(expr)[id(node)]
            for f, v in gast.iter_fields(parent):
                if v is node:
                    setattr(parent, f, value)
                elif isinstance(v, list):
                    v[:] = [value if i is node else i for i in v]
        lst.insert(next(k for k, t in enumerate(lst) if t is stmt), line)

    while True:
        expr = getattr(stmt, field)
        order = _post_order(expr, [])
        call = next((n for n in order if isinstance(n, gast.Call)
                     and isinstance(n.func, gast.Name) and n.func.id == name), None)
        if call is None:
            return
        inside = {id(n) for n in gast.walk(call)}
        earlier = [n for n in order[:order.index(call)] if id(n) not in inside and (
            isinstance(n, gast.Call) or isinstance(n, gast.Name) and n.id in names)]
        outer = [n for n in earlier if not any(
            n is not m and any(n is d for d in gast.walk(m)) for m in earlier)]
        for n in outer:
            func = n.id if isinstance(n, gast.Name) else n.func.attr if isinstance(
                n.func, gast.Attribute) else n.func.id if isinstance(n.func, gast.Name) \
                else "call"
            out = fresh(f"{func}_value")        # (a read of the state: its value then)
            bind(n, gast.Name(out, gast.Store(), None, None), out)
        out = fresh(f"{name}_out")
        call.args = [gast.Name(m, gast.Load(), None, None) for m in names] + call.args
        located(call, call, only_new=True)
        bind(call, gast.Tuple([gast.Name(out, gast.Store(), None, None)] + [
            gast.Name(m, gast.Store(), None, None) for m in names], gast.Store()), out)


def makes_stateful_closure(fn):
    """Whether the user's function `fn` defines a nested def that rebinds one of its locals
    through `nonlocal` (`def counter(): n = 0; def inc(v): nonlocal n; ...; return inc`): a
    function it returns keeps that state between its calls, which the transforms follow only
    by tracing the caller on each call (as JAX reads it when it traces)."""
    import inspect
    import textwrap
    try:
        tree = gast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(n, gast.Nonlocal) for n in gast.walk(tree))


_WRITES_STATE = {}      # code object -> whether its function sets state (writes_state)


def writes_state(fn):
    """Whether the user's function (or a callable object's class's __call__) sets Python state
    that outlives its call: a name it declares `global` or `nonlocal` and assigns, or an
    attribute of its `self` (`self.calls += 1`): False, "settled" where every read of that state
    follows its writes (global_writes._settled), "unread" where the function never reads it
    but to update it, else "early". Read from its source, once per code object."""
    import inspect
    import textwrap
    import types
    method = getattr(type(fn), "__call__", None) if not isinstance(
        fn, (types.FunctionType, types.MethodType, type)) else None
    target = _read(fn.__func__ if isinstance(fn, types.MethodType) else
                   method if isinstance(method, types.FunctionType) else fn)
    code = getattr(target, "__code__", None)
    if not _users_function(target):
        return False
    hit = _WRITES_STATE.get(code)
    if hit is not None:
        return hit[0]
    try:
        tree = gast.parse(textwrap.dedent(inspect.getsource(target)))
        fdef = tree.body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        fdef = None
    found, names = False, frozenset()
    if isinstance(fdef, (gast.FunctionDef, gast.AsyncFunctionDef)):
        from secant.transformer.global_writes import _settled
        body = list(_walk_scope(fdef.body))
        declared = {n for s in body if isinstance(s, (gast.Global, gast.Nonlocal))
                    for n in s.names}
        parts = target.__qualname__.split(".")
        me = fdef.args.args[0].id if fdef.args.args and (
            isinstance(fn, types.MethodType) or method is not None
            or len(parts) > 1 and parts[-2] != "<locals>") else None   # (Model.__call__)
        state = {n.id for n in body if isinstance(n, gast.Name) and n.id in declared
                 and isinstance(n.ctx, gast.Store)}
        fields = {t.attr for n in body if me and isinstance(n, (gast.Assign, gast.AugAssign))
                  for t in (n.targets if isinstance(n, gast.Assign) else [n.target])
                  if isinstance(t, gast.Attribute) and isinstance(t.value, gast.Name)
                  and t.value.id == me}
        if state or fields:
            found = "settled"
            names = frozenset(state) | frozenset("." + a for a in fields)

        def field(attr):
            return lambda n: isinstance(n, gast.Attribute) and n.attr == attr and \
                isinstance(n.value, gast.Name) and n.value.id == me
        if not all(_settled(fdef.body, n) for n in state) or \
                not all(_settled(fdef.body, None, field(a)) for a in fields):
            found = "early"
        stores = {id(n) for s in body if isinstance(s, (gast.Assign, gast.AugAssign)) and any(
            isinstance(t, gast.Name) and t.id in state or isinstance(t, gast.Attribute)
            and t.attr in fields for t in (s.targets if isinstance(s, gast.Assign)
                                           else [s.target])) for n in gast.walk(s)}
        if found and not any(id(n) not in stores and (
                isinstance(n, gast.Name) and n.id in state and isinstance(n.ctx, gast.Load)
                or isinstance(n, gast.Attribute) and n.attr in fields
                and isinstance(n.value, gast.Name) and n.value.id == me) for n in body):
            found = "unread"    # (`self.calls += 1` alone: its value never read by the call)
    if len(_WRITES_STATE) > 4096:
        _WRITES_STATE.clear()
    _WRITES_STATE[code] = (found, names)
    return found


def state_names(fn):
    """The state writes_state(fn) found: the global and nonlocal names `fn` sets, and `.attr`
    for each attribute of its self it sets."""
    if not writes_state(fn):
        return frozenset()
    import types
    method = getattr(type(fn), "__call__", None)
    target = _read(fn.__func__ if isinstance(fn, types.MethodType) else fn if isinstance(
        fn, types.FunctionType) else method)
    return _WRITES_STATE[target.__code__][1]


def reaches_state(fn):
    """writes_state(fn), or where `fn` itself sets none, the state of the user functions its
    code names (its globals and closure cells, its nested code's too), followed through them:
    "early" where one of them reads its state before setting it, else "settled"; False where
    none sets state. A caller of a counter's function (`middle(x)` calling `gstep(x)`) calls
    it again each time it is called, which a caller's reverse pass must know as it knows the
    counter's own function (tests/test_state15l_callees.py)."""
    return _reach(fn, set())[0]


def reached_names(fn):
    """The state reaches_state(fn) found: state_names of each function it reaches."""
    return _reach(fn, set())[1]


def state_callee(func, lookup, args=()):
    """The callable that the callee expression `func` (a name or a chain of attributes, ast or
    gast) names where it reaches Python state (reaches_state: `rng.next`, `Rng.next`,
    `schedule`, `gstep`), else None. lookup(name): the value of a free name of the function
    (KeyError where it has none). Attributes are read without running a property."""
    import inspect
    path, head = [], func
    while type(head).__name__ == "Attribute":
        path.append(head.attr)
        head = head.value
    if type(head).__name__ != "Name":
        return None
    try:
        try:
            obj = lookup(head.id)
        except KeyError:            # (builtin next of an iterator the function keeps)
            if head.id != "next" or path or not args or \
                    type(args[0]).__name__ != "Name" or not _iterator(lookup(args[0].id)):
                raise
            import builtins
            return builtins.next
        for attr in reversed(path):
            owner, obj = obj, inspect.getattr_static(obj, attr)
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            elif inspect.isfunction(obj) and not isinstance(owner, type):
                obj = obj.__get__(owner)        # (a method of a user object: bound)
    except (KeyError, ValueError, AttributeError):
        return None
    return obj if callable(obj) and reaches_state(obj) else None


def _users_function(fn):
    """Whether `fn` is a Python function with code, not one of secant's, NumPy's, SciPy's or
    JAX's, nor Python's own standard library's (functools.singledispatch's dispatch cache is
    the library's, not the user's state): the transforms never follow their state."""
    import types
    return isinstance(fn, types.FunctionType) and getattr(fn, "__code__", None) is not None \
        and (fn.__module__ or "").split(".")[0] not in ("secant", "numpy", "scipy", "jax") \
        and not _standard_library(fn.__code__.co_filename)


def _standard_library(filename):
    """Whether a code object's file is a module of Python's standard library (an installed
    package under it is not)."""
    import sysconfig
    if not _STDLIB:
        _STDLIB.extend({os.path.join(f(sysconfig.get_paths()[k]), "") for f in (
            os.path.abspath, os.path.realpath) for k in ("stdlib", "platstdlib")})
    return filename.startswith(tuple(_STDLIB)) and not _INSTALLED.search(filename)


_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")     # (an installed package's file)
_STDLIB = []        # the standard library's directories, each ending in a separator


def _read(fn):
    """The function whose source inspect.getsource reads for `fn`: the one a decorator's
    wrapper names as __wrapped__ (functools.wraps), else `fn`. Its code keys the caches of what
    the source says: every @contextlib.contextmanager's wrapper shares one code object, so
    keyed by the wrapper, the first context read answered for all (`timing("fit")`, which
    changes only a global log, read as the `scope(name, log)` that appends to its argument)."""
    import inspect
    try:
        return inspect.unwrap(fn)
    except ValueError:          # (a cycle of __wrapped__)
        return fn


def _reach(fn, seen):
    import types
    made = getattr(fn, "__secant_made_from__", None)
    if isinstance(made, tuple) and made and made[0] is not fn and "replay" not in made:
        return _reach(made[0], seen)    # (a derivative of a user function runs its effects)
    if library_state(fn):
        return "settled", frozenset({getattr(fn, "__name__", "next")})
    own = writes_state(fn)
    if own:
        return own, state_names(fn)
    target = _read(fn.__func__ if isinstance(fn, types.MethodType) else fn)
    code = getattr(target, "__code__", None)
    if not _users_function(target) or code in seen \
            or _INSTALLED.search(code.co_filename):
        return False, frozenset()       # (recursion: what it reaches is found on the way in;
        # an installed package's functions are not followed: the user's own code is)
    seen.add(code)
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    values = [target.__globals__.get(n) for n in names]
    values += [c.cell_contents for c in target.__closure__ or () if _full(c)]
    values += [getattr(v, n, None) for v in list(values) if isinstance(v, types.ModuleType)
               for n in names]      # (`random.random()`, `np.random.rand()`: a module's)
    values += [getattr(getattr(v, "random", None), n, None) for v in list(values)
               if getattr(v, "__name__", None) == "numpy" for n in names]
    found, state = False, frozenset()
    if "next" in names and "next" not in target.__globals__ and any(map(_iterator, values)):
        found, state = "settled", frozenset({"next"})   # (next(it) of an iterator it keeps)
    for v in values:
        if library_state(v) and v is not target and v is not next:
            state |= {getattr(v, "__name__", "next")}
            found = "early" if found == "early" else "settled"
        elif isinstance(v, (types.FunctionType, types.MethodType)) and v is not target:
            kind, more = _reach(v, seen)
            state |= more
            found = "early" if "early" in (kind, found) else found or (kind and "settled")
    return found, state


def _iterator(value):
    """Whether `value`, kept in a global or closure cell, is an iterator (a generator,
    iter(...), itertools.count()): next(value) advances it, as a counter's call does."""
    import types
    return hasattr(type(value), "__next__") and not isinstance(value, (type, types.ModuleType))


def library_state(fn):
    """Whether `fn` is a library callable that advances Python state of its own when called:
    Python's `random` functions and the methods of a random.Random, NumPy's global `np.random`
    functions and the methods of a RandomState or Generator. Each call returns another value,
    as a user's counter does (reaches_state); builtin next too, but a call of it is state
    only where its iterator is one the function keeps in a global or cell (state_callee,
    _reach, ad/state_inputs.py called_object), never `next(iter(d))`."""
    import builtins
    import random
    if fn is builtins.next:
        return True
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, random.Random):
        return callable(fn) and not getattr(fn, "__name__", "").startswith("_")
    name = type(owner).__name__ if owner is not None else ""
    module = type(owner).__module__ or "" if owner is not None else ""
    return module.startswith("numpy.random") and name in ("RandomState", "Generator") \
        and callable(fn) and getattr(fn, "__name__", "") not in ("get_state", "__getstate__")


def _full(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


_MUTATES = {}       # code object -> whether its function changes an object it did not make


def changed_in_place(nodes, calls=None, fields=True):
    """The Name at the root of each object the `nodes` change in place: a mutating method's
    (`acc.append(v)`; of the calls whose ids are in `calls` only, where given), an item's
    stored (`d[k] = v`) and, with `fields`, an attribute's stored (`o.n += 1`)."""
    from secant.transformer.functionalize import _MUTATING_METHODS
    stored = (gast.Subscript, gast.Attribute) if fields else gast.Subscript
    for m in nodes:
        target = m.func.value if isinstance(m, gast.Call) and (calls is None or id(m) in calls) \
            and isinstance(m.func, gast.Attribute) and m.func.attr in _MUTATING_METHODS else \
            m if isinstance(m, stored) and not isinstance(m.ctx, gast.Load) else None
        while isinstance(target, (gast.Attribute, gast.Subscript)):
            target = target.value
        if isinstance(target, gast.Name):
            yield target


def mutates_outside(fn):
    """Whether the user's function `fn` changes in place an object it is given or closes over
    (`calls.append(1)`, `store[k] = v` of a parameter or free name): a second run of it (a
    derivative's recomputation) would not be the first (state it sets by `global`, `nonlocal`
    or a field is writes_state's).
    "read" where it also reads an object it changes (`len(seen)` after `seen.append(1)`): a
    run of it without its effects would not be the first either. Read from its source, once
    per code object."""
    import inspect
    import textwrap
    if hasattr(fn, "__secant_generated__") \
            or getattr(getattr(fn, "__secant_source__", None), "generated", False):
        return False        # (secant's own helpers, read as source, and its derivatives)
    fn = _read(fn)          # (a decorator's wrapper may be the standard library's: contextlib)
    code = getattr(fn, "__code__", None)
    if not _users_function(fn):
        return False
    hit = _MUTATES.get(code)
    if hit is not None:
        return hit
    found = False
    try:
        fdef = gast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        fdef = None
    src = getattr(fn, "__secant_source__", None)
    fdef = getattr(src, "node", None) or fdef
    if isinstance(fdef, (gast.FunctionDef, gast.AsyncFunctionDef)):
        made = {n.id for n in _walk_scope(fdef.body) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
        a = fdef.args       # (what it is given or closes over: never a module, jnp.append)
        given = {p.id for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
                 if p is not None} | set(code.co_freevars)
        changed, targets = set(), set()
        # (a method run for its effect, its result dropped: `seen.append(1)`, never
        # `updates, state = optimizer.update(...)`; a container changed in place: a field
        # set, `COUNTER.calls += 1`, is state writes_state and the effects' replay forms read)
        dropped = {id(n.value) for n in _walk_scope(fdef.body) if isinstance(n, gast.Expr)}
        for target in changed_in_place(_walk_scope(fdef.body), calls=dropped, fields=False):
            if target.id not in made and target.id in given:
                changed.add(target.id)
                targets.add(id(target))
        if changed:         # "read": what it changes it also reads (len(seen))
            found = "read" if any(isinstance(m, gast.Name) and m.id in changed
                                  and id(m) not in targets
                                  for m in _walk_scope(fdef.body)) else "write"
    if len(_MUTATES) > 4096:
        _MUTATES.clear()
    _MUTATES[code] = found
    return found


_BODY_STATE = {}    # code object -> what reads_state_it_sets found in its source (None: nothing)


def reads_state_it_sets(fn, lookup=None):
    """What Python state the user's function `fn`, passed to a lax loop or branch as its body,
    reads where it (or what it calls) also sets it, or None: the description of the first
    found (`k (a global it sets)`, `rng.next (sets Python state)`). Such a body reads another
    value each time it runs: eagerly once per step, but once per trace under jit and in a
    derivative (JAX traces a body once), so the two would disagree. State a body only updates
    (`calls += 1`, `log.append(v)`, never read) is left to run: its values agree.
    Found: a name it declares global or nonlocal, or a field of its self, that it reads
    (writes_state); an object it changes in place and reads (mutates_outside); a field of a
    free object it sets and reads (`m.n += 1; ... m.n`); a call of a function, method or
    callable object that reaches such state (reaches_state: `rng.next()`, `tick()`), found
    by the names its code reads, looked up in its globals and closure (or `lookup(name)`,
    KeyError where none)."""
    import inspect
    import types
    fn = _read(fn)
    code = getattr(fn, "__code__", None)
    if not _users_function(fn) or code.co_filename.startswith("<secant"):
        return None         # (secant's generated forms: their user function was checked)
    title = getattr(fn, "__name__", "the function")
    own = writes_state(fn)
    if own in ("settled", "early"):
        return f"{', '.join(sorted(n.lstrip('.') for n in state_names(fn)))} (state " \
            f"{title} sets)"
    if mutates_outside(fn) == "read":
        return f"an object {title} changes in place"
    if code not in _BODY_STATE:
        _BODY_STATE[code] = _fields_set_and_read(fn)
    if _BODY_STATE[code] is not None:
        return _BODY_STATE[code]
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))

    def value(name):
        if lookup is not None:
            return lookup(name)
        if name in cells:
            return cells[name].cell_contents
        return fn.__globals__[name]
    names, stack = [], [code]
    while stack:
        c = stack.pop()
        names += [n for n in c.co_names + c.co_freevars if n not in names]
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    for name in names:
        try:
            v = value(name)
        except (KeyError, ValueError, NameError):
            continue
        if isinstance(v, types.ModuleType):     # (`random.random()`, `np.random.rand()`)
            drawn = [a for a in names for m in (v, getattr(v, "random", None))
                     if library_state(getattr(m, a, None)) and getattr(m, a) is not next]
            if drawn:
                return f"{drawn[0]} (it draws from {v.__name__}'s random state)"
            continue
        if _iterator(v) and "next" in names and "next" not in fn.__globals__:
            return f"next({name}) (an iterator it keeps)"
        if isinstance(v, types.BuiltinFunctionType) or v is fn:
            continue
        found = [v] if isinstance(v, (types.FunctionType, types.MethodType)) or (
            callable(v) and not isinstance(v, type)) else []
        kind = v if isinstance(v, type) else type(v)
        if (kind.__module__ or "").split(".")[0] in ("builtins", "numpy", "secant"):
            names_of = ()           # (a number, an array, a list: no method of the user's)
        else:
            names_of = names
        for attr in names_of:   # (`rng.next()`, `Rng.next(rng)`)
            try:
                a = inspect.getattr_static(v, attr)
            except AttributeError:
                continue
            if isinstance(a, (staticmethod, classmethod)):
                a = a.__func__
            if isinstance(a, types.FunctionType):
                found.append(a if isinstance(v, type) else a.__get__(v))
        for f in found:
            try:
                reached = reaches_state(f)
            except Exception:       # (an object whose class cannot be read: not followed)
                continue
            if reached and reached != "unread":
                return f"{getattr(f, '__qualname__', name)} (it sets Python state)"
    return None


def _fields_set_and_read(fn):
    """`m.n (an object ... changes and reads)` where `fn`'s source changes an object it does
    not make (a global or closure object: `m.n += 1`, `acc.append(v)`, `table[k] = v`) and
    reads that object besides the statements that change it, else None."""
    import inspect
    import textwrap
    try:
        fdef = gast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    if not isinstance(fdef, (gast.FunctionDef, gast.AsyncFunctionDef)):
        return None
    body = list(_walk_scope(fdef.body))
    a = fdef.args
    made = {n.id for n in body if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} \
        | {p.id for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
           if p is not None}
    changed, updates = {}, set()
    for s in body:
        if not isinstance(s, (gast.Expr, gast.Assign, gast.AugAssign)):
            continue
        roots = [r.id for r in changed_in_place(gast.walk(s)) if r.id not in made]
        for r in roots:         # (`box.n` for a field set, else the object's name)
            target = s.target if isinstance(s, gast.AugAssign) else \
                s.targets[0] if isinstance(s, gast.Assign) else None
            changed.setdefault(r, gast.unparse(target).strip() if isinstance(
                target, gast.Attribute) else r)
        if roots:
            updates.update(id(n) for n in gast.walk(s))
    for n in body:
        if isinstance(n, gast.Name) and n.id in changed and isinstance(n.ctx, gast.Load) \
                and id(n) not in updates:
            return f"{changed[n.id]} (an object {fn.__name__} changes and reads)"
    return None


def body_state_message(kind, role, what):
    """The refusal of a lax.`kind` whose `role` function reads Python state it sets (`what`:
    reads_state_it_sets's description)."""
    if kind in ("cond", "switch"):
        runs = ("Its branches run once per call (as JAX traces each), but a derivative runs "
                "them again (its reverse pass, jacfwd's layout), and would read another value")
        fix = "pass the state in as an argument"
    else:
        runs = ("Eagerly its body runs once per step, as Python runs it, but jit and the "
                "derivatives trace it once (as JAX does), and each would read another value")
        fix = "carry the state in the loop's values (as JAX requires), pass it in as an " \
            "argument, or use a Python loop"
    return (f"lax.{kind}'s {role} reads Python state that it sets: {what}. {runs}: secant "
            f"cannot be sure of the answer; {fix}")


_DATA = (int, float, complex, bool, str, bytes, tuple, frozenset, type(None))


def data_read(fn):
    """A snapshot of the plain values the user's function `fn` reads from its globals and
    closure cells (numbers, arrays, strings, tuples), and those of the user functions it
    reaches through them: [(cell or globals, name, value)]. A derivative that runs fn again
    later (vjp's pullback, linearize's jvp) reads them again: changed_since says whether one
    was rebound in between (`scale = 3.0`), which JAX's, traced at the call, would not see."""
    import types
    out, seen, stack = [], set(), [_read(fn)]
    while stack and len(seen) < 64:
        f = stack.pop()
        code = getattr(f, "__code__", None)
        if not _users_function(f) or code in seen or code.co_filename.startswith("<secant"):
            continue
        seen.add(code)
        names, codes = set(), [code]
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        places = [(f.__globals__, n) for n in sorted(names) if n in f.__globals__] + \
            [(c, n) for n, c in zip(code.co_freevars, f.__closure__ or ()) if _full(c)]
        for place, name in places:
            v = place[name] if isinstance(place, dict) else place.cell_contents
            if isinstance(v, (types.FunctionType, types.MethodType)):
                stack.append(v.__func__ if isinstance(v, types.MethodType) else v)
            elif isinstance(v, _DATA) or type(v).__name__ in ("ndarray", "Array") \
                    or type(v).__module__ == "numpy":
                out.append((place, name, v))
    return out


def changed_since(snapshot):
    """The name of the first value of data_read's `snapshot` rebound since, else None."""
    for place, name, v in snapshot:
        try:
            now = place[name] if isinstance(place, dict) else place.cell_contents
        except (KeyError, ValueError):
            return name
        if now is not v and not (type(now) is type(v) and isinstance(
                v, (int, float, complex, str, bytes)) and now == v):
            return name
    return None
