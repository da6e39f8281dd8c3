"""An object of the user's class with a `__jax_array__` method passed to a library function
(`snp.sin(A(x))`, `a = A(x); snp.sum(a)`): JAX calls the method and computes with the array it
returns, so the call is read as `snp.sin(A.__jax_array__(A(x)))` (issue 15), a call of the
user's method the transforms follow into its body, and derivatives flow through the object's
fields. Only where the argument is a call of such a class written in place, or a local bound
once (in the function's own body) to one; any other argument is left as written (the library
converts it when the function runs)."""
import copy

import gast

from secant.transformer.hygiene import walk as _walk


def rewrite(d, body):
    census = d.census()
    if census is not None and not any(_jax_array_class(d, root, chain)
                                      for root, chain in census.call_chains):
        return body
    held = _held(d, body)
    changed = False
    for n in (m for s in body for m in _walk(s)):
        if not isinstance(n, gast.Call) or not _library(d, n.func):
            continue
        args = []
        for a in n.args:
            cls = _class_of(d, a, held)
            if cls is not None:         # (the class named as written: its method a known callee)
                a = gast.copy_location(gast.Call(
                    func=gast.Attribute(copy.deepcopy(cls), "__jax_array__", gast.Load()),
                    args=[a], keywords=[]), a)
                changed = True
            args.append(a)
        n.args = args
    if changed:
        d.changed = True
    return body


def _chain(func):
    chain = []
    while isinstance(func, gast.Attribute):
        chain.insert(0, func.attr)
        func = func.value
    return (func.id, chain) if isinstance(func, gast.Name) else (None, chain)


def _callee(d, func):
    from secant.transformer.desugar import ANY
    root, chain = _chain(func)
    if root is None:
        return None
    obj = d.module_callee(root, chain)
    return None if obj is ANY else obj


def _jax_array_class(d, root, chain):
    from secant.transformer.desugar import ANY
    if root is None:
        return False
    obj = d.module_callee(root, list(chain))
    return obj is not ANY and isinstance(obj, type) and hasattr(obj, "__jax_array__") \
        and not obj.__module__.startswith("secant")


def _library(d, func):
    obj = _callee(d, func)
    return callable(obj) and not isinstance(obj, type) \
        and (getattr(obj, "__module__", None) or "").startswith("secant.")


def _held(d, body):
    """{local: the class expression} for each local bound once, at the function's top level, to
    a call of a `__jax_array__` class."""
    stores, made = {}, {}
    for n in (m for s in body for m in _walk(s)):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    for s in body:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call) \
                and _jax_array_class(d, *_chain(s.value.func)):
            made[s.targets[0].id] = s.value.func
    return {name: cls for name, cls in made.items()
            if stores.get(name) == 1 and name not in d.params}


def _class_of(d, arg, held):
    """The class expression of an argument that is an object of a `__jax_array__` class (a
    call of it written in place, or a local `_held` names), else None."""
    if isinstance(arg, gast.Name):
        return held.get(arg.id)
    if isinstance(arg, gast.Call) and _jax_array_class(d, *_chain(arg.func)):
        return arg.func
    return None
