"""Instances of library classes inside transformed code.

A class that declares `__secant_functional__` (a namespace of plain functions, read by the
transforms through their source) can be built and used inside a function that grad, jvp or
vmap transforms: the instance is carried as the dict of its fields (a container the transforms
already track), and

    kde = stats.gaussian_kde(data)      is read as   kde = stats.gaussian_kde.__secant_functional__.init(data)
    kde.logpdf(points)                  is read as   stats.gaussian_kde.__secant_functional__.logpdf(kde, points)

so derivatives and batching flow through the fields as through any helper's dict; `kde(points)`
is its `__call__`, `kde.covariance` the field. Eager calls run the class itself. Passing the
instance on to a function of yours, or returning it, hands on the dict of fields.
"""
import inspect

import gast

FUNCTIONAL = "__secant_functional__"


def functional_class(obj):
    """Whether `obj` is a class with a functional form."""
    return inspect.isclass(obj) and hasattr(obj, FUNCTIONAL)


def _attribute(value, attr):
    return gast.Attribute(value=value, attr=attr, ctx=gast.Load())


def constructor_call(node):
    """`C(args)` as `C.__secant_functional__.init(args)`."""
    new = gast.Call(func=_attribute(_attribute(node.func, FUNCTIONAL), "init"),
                    args=node.args, keywords=node.keywords)
    return gast.copy_location(new, node)


def _class_expression(ops, name):
    """The expression naming the class whose instance SSA `name` holds (found from the op that
    made it: the functional init, or a copy of such a value), or None."""
    for op in reversed(ops):
        if name not in (getattr(op, "targets", None) or ()):
            continue
        if getattr(op, "op", None) == "identity" and hasattr(op.operands.get("x"), "name"):
            return _class_expression(ops, op.operands["x"].name)
        callee = getattr(op, "callee", None)
        if getattr(op, "op", None) == "call" and getattr(callee, "__name__", "") == "init" \
                and getattr(callee, "__secant_functional_init__", False):
            written = op.callee_name
            suffix = f".{FUNCTIONAL}.init"
            if written.endswith(suffix):
                return written[:-len(suffix)]
        return None
    return None


def method_call(ops, node, base_name, attr=None):
    """`obj.m(args)` (or `obj(args)`, attr "__call__") as `C.__secant_functional__.m(obj, args)`
    when SSA `base_name` holds an instance of such a class C; None otherwise."""
    cls = _class_expression(ops, base_name)
    if cls is None:
        return None
    func = node.func
    attr = attr or func.attr
    obj = func.value if attr != "__call__" else func
    target = gast.parse(f"{cls}.{FUNCTIONAL}.{attr}").body[0].value
    new = gast.Call(func=target, args=[obj] + list(node.args), keywords=node.keywords)
    for n in gast.walk(new):
        gast.copy_location(n, node)
    return new


def field_read(ops, node, base_name):
    """`obj.field` as `obj["field"]` when SSA `base_name` holds such an instance; None
    otherwise."""
    if _class_expression(ops, base_name) is None:
        return None
    new = gast.Subscript(value=node.value, slice=gast.Constant(value=node.attr, kind=None),
                         ctx=gast.Load())
    for n in gast.walk(new):
        gast.copy_location(n, node)
    return new
