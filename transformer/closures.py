"""A nested function closing over differentiated or batched values, used as a value (returned
from a factory, stored in a namedtuple, passed on): an object of a class made for it here, a
registered pytree whose children are the function's free locals (the values it closes over)
and whose `__call__` calls the nested def lifted to take them as extra parameters
(normalize.py Normaliser._closure_value). A transform follows the values through the object
as through any container (its cotangent, tangent or batch axes are the object's leaves), and a
call of it is a call of an object holding active values: the dispatcher transforms the class's
`__call__` with the object as `self` (secant/transforms.py _dispatch_target)."""
import numpy as np

from secant.codegen import loader

_TAG = np.zeros((), np.int32)


class Closure:
    """Base of the classes closure_class makes (`_closure_fields`: the free locals' names,
    in the order of the lifted function's extra parameters)."""
    _closure_fields = ()

    def __init__(self, *values):
        for name, value in zip(self._closure_fields, values):
            setattr(self, name, value)
        if not self._closure_fields:    # a def closing over no differentiated or batched
            self._closure_tag = _TAG    # value: one constant leaf, which a vmap broadcasts, so
            #                             a call of it read from a batched namedtuple (optax's
            #                             init) knows the batch's size

    @property
    def __name__(self):         # the def's own name (a caller generated for it is named so)
        return type(self)._closure_name

    def __repr__(self):
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._closure_fields)
        return f"<closure {type(self).__name__}({fields})>"


_SHARED = {}    # (id of the globals, the def's text, params, fields, defaults) -> (globals, class)


def shared_class(globals_, key):
    """The class made before for the def `key` (its text, parameters, fields and defaults)
    reading the same globals and no cells, else None (key None: never shared)."""
    hit = None if key is None else _SHARED.get((id(globals_),) + key)
    return hit[1] if hit is not None and hit[0] is globals_ else None


def share_class(globals_, key, cls):
    if key is not None:
        if len(_SHARED) > 4096:
            _SHARED.clear()
        _SHARED[(id(globals_),) + key] = (globals_, cls)


def closure_class(lifted, name, params, fields, defaults=()):
    """The Closure class of the nested def `name`, lifted to `lifted(*params, *fields)` (its
    fields by keyword where its last parameters have `defaults`, constants)."""
    from secant import tree_util
    defaults = list(defaults)
    start = len(params) - len(defaults)
    signature = ", ".join(p if i < start else f"{p}={defaults[i - start]!r}"
                          for i, p in enumerate(params))
    args = ", ".join(params)
    keyed = start < len(params)
    reads = ", ".join(f"{f}=self.{f}" if keyed else f"self.{f}" for f in fields)
    source = (f"def __call__(self{', ' if params else ''}{signature}):\n"
              f"    return {lifted.__name__}({', '.join(p for p in (args, reads) if p)})\n")
    # (a closure it returns in turn: its desugared form, which returns a Closure object too)
    from secant.transformer.desugar import desugar
    desugared = desugar(lifted)
    if getattr(desugared, "__secant_closures__", False):
        lifted = desugared
    call = loader.load(source, "__call__", lifted.__globals__, {lifted.__name__: lifted})
    from secant.transformer.parse import FunctionSource
    from secant.transformer import gast_parse
    lines = source.splitlines()
    call.__secant_source__ = FunctionSource(
        call, lambda: gast_parse.parse(source).body[0], call.__code__.co_filename, 1, lines,
        lifted.__globals__, {lifted.__name__: lifted})
    cls = type(name, (Closure,), {"_closure_fields": tuple(fields), "__call__": call,
                                  "_closure_name": name[:-len("_closure")]
                                  if name.endswith("_closure") else name,
                                  "__module__": lifted.__module__,
                                  "__qualname__": name})
    if fields:
        tree_util.register_pytree_node(
            cls, lambda c: (tuple(getattr(c, f) for f in fields), None),
            lambda _, children: cls(*children))
    else:
        def unflatten(_, children):
            made = cls()
            made._closure_tag = children[0]
            return made
        tree_util.register_pytree_node(cls, lambda c: ((c._closure_tag,), None), unflatten)
    return cls
