"""The runnable form of a user function: what generated code calls for its value.

A function that updates a local array in place (`y[i] = v`, `y[i] += v`) cannot run on
secant's arrays or tracers as written: the transforms read it desugared (`y = y.at[i].set(v)`,
transformer/desugar.py), and every call that generated code makes of it for its *value* (a
derivative replaying its caller's primal, a batched function calling it on unbatched values,
`vjp`'s primal output) must run that desugared form too, never the raw source. So must a call
of a function that calls one (through any depth): its runnable form is its desugared source
with those callees' names bound to their runnable forms.

`runnable(fn)` is `fn` itself for every function that runs as written (the common case, and
any function whose source secant cannot read). Each result is cached with a guard over the
names it resolved (a global or cell rebound later builds it again, as for derivatives).
Only callees written as plain names are followed.
"""
import os
import threading
import types

import gast

from secant.backends.function_cache import FunctionCache
from secant.backends import once
from secant.backends.errors import SecantError
from secant.transformer import hygiene
from secant.transformer.parse import Guard, SourceError, function_source

_cache = FunctionCache("runnable")     # fn -> (its runnable form, the guards that form assumed)
_MAX_DEPTH = 32       # callees followed through at most this many calls


def runnable(fn):
    """`fn`, or the form of it that runs on secant arrays and tracers (see the module doc)."""
    spec = getattr(fn, "__secant_specialises__", None)     # f(*xs) read for a call's shape:
    if spec is not None:                                    # it calls f itself
        form = runnable(spec)
        return fn if form is spec else form
    if isinstance(fn, types.FunctionType) and not _is_library(fn) and \
            getattr(fn, "__secant_source__", None) is not None and \
            getattr(fn, "__secant_user_code__", False):
        # the user's code rewritten (a function specialised to a call's shape): its desugared
        # form where that returns closure objects (what its derivative's structure reads)
        from secant.transformer.desugar import desugar
        try:
            desugared = desugar(fn)
        except (SecantError, SourceError, OSError, TypeError, SyntaxError, ValueError):
            return fn
        return desugared if getattr(desugared, "__secant_closures__", False) else fn
    if not isinstance(fn, types.FunctionType) or _is_library(fn) or \
            getattr(fn, "__secant_source__", None) is not None:
        return fn       # generated or rewritten code (desugared, a derivative) runs as written
    depth = getattr(_local, "depth", 0)
    hit = _cache.get(fn)
    if depth >= _MAX_DEPTH and (hit is None or not _holds(hit)):
        return fn
    _local.depth = depth + 1
    try:        # built once (threads wait); a recursive call meanwhile reads the function itself
        return once.build(_cache, fn, lambda: _readable(fn), recursive=lambda: (fn, ()),
                          valid=_holds)[0]
    finally:
        _local.depth = depth


_local = threading.local()
RUN_FORM = "__secant_run_form__"    # the name a runnable form calls run_form by


def _makes_closures(arg):
    """A lambda that returns a lambda (`lambda f, g: lambda x: g(f(x))`), passed to a call."""
    return isinstance(arg, gast.Lambda) and isinstance(arg.body, gast.Lambda)


def wrap_closure_makers(node):
    """In a runnable form's tree: each such lambda passed to a call read through run_form
    (`reduce(__secant_run_form__(lambda f, g: ...), fns)`), so that what it makes is the
    Closure object a derivative reads, as a def returning a nested def makes."""
    for n in gast.walk(node):
        if isinstance(n, gast.Call):
            n.args = [gast.copy_location(gast.Call(
                func=gast.Name(RUN_FORM, gast.Load(), None, None), args=[a], keywords=[]), a)
                if _makes_closures(a) else a for a in n.args]      # how many callees deep this thread's runnable() is


def _holds(hit):
    return all(g.holds() for g in hit[1])


def _readable(fn):
    try:
        return _runnable(fn)
    except (SecantError, SourceError, OSError, TypeError, SyntaxError, ValueError):
        return fn, ()       # (what cannot be read runs as written, as before)


def _is_library(fn):
    """secant's and NumPy's functions (ops), and installed or standard-library packages (never
    written with `y[i] = v` on secant arrays; not read through)."""
    if (getattr(fn, "__module__", "") or "").split(".")[0] in ("secant", "numpy"):
        return True
    path = getattr(getattr(fn, "__code__", None), "co_filename", "") or ""
    return "site-packages" in path or "dist-packages" in path or \
        path.startswith((_STDLIB, "<frozen"))


_STDLIB = os.path.dirname(os.__file__) + os.sep


def _runnable(fn):
    from secant.transformer.desugar import desugar, desugar_binding
    desugared = desugar(fn)
    src = function_source(fn)
    node = function_source(desugared).node
    local = hygiene.bound(node)
    resolved, bind, guards, forms = {}, {}, [], {}
    for n in gast.walk(node):
        if not isinstance(n, gast.Call):
            continue
        # its callee, and a function passed to it that returns a closure (functools.reduce(
        # compose, fns): the Closure objects its derivative's structure reads)
        for f in [n.func] + n.args:
            if not isinstance(f, gast.Name) or f.id in local or f.id in bind:
                continue
            name = f.id
            if (name, ()) not in resolved:
                kind, obj = src._lookup(name)
                resolved[(name, ())] = (kind, obj)
                if kind in ("closure", "global") and isinstance(obj, types.FunctionType):
                    forms[name] = runnable(obj)
                    guards.extend(_cache.get(obj, (None, ()))[1])
            form, obj = forms.get(name), resolved[(name, ())][1]
            if form is not None and form is not obj and (
                    f is n.func or getattr(form, "__secant_closures__", False)):
                bind[name] = form
    guards.insert(0, Guard(src, resolved))
    if any(isinstance(n, gast.Call) and any(_makes_closures(a) for a in n.args)
           for n in gast.walk(node)):
        from secant.transformer.callees import run_form
        bind[RUN_FORM] = run_form     # (reduce(lambda f, g: lambda x: g(f(x)), fns): that
        #                               lambda's runnable form, its results Closure objects)
    if bind:        # a callee that cannot run as written: this function's calls reach its form
        return desugar_binding(fn, bind), tuple(guards)
    if getattr(desugared, "__secant_item_updates__", False) or \
            getattr(desugared, "__secant_closures__", False):   # (a Closure object returned)
        return desugared, tuple(guards)
    return fn, tuple(guards)
