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


def called_when_built(build, node):
    """`C(args)(x)` (node, its func `build` the constructor call) as
    `C.__secant_functional__.__call__(C.__secant_functional__.init(args), x)`."""
    target = _attribute(_attribute(build.func, FUNCTIONAL), "__call__")
    new = gast.Call(func=target, args=[constructor_call(build)] + list(node.args),
                    keywords=node.keywords)
    for n in gast.walk(new):
        if getattr(n, "lineno", None) is None:
            gast.copy_location(n, node)
    return new


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


def node_class(obj):
    """`obj` when it is a class whose instances are pytree nodes (a namedtuple, a registered
    class), else None."""
    from secant import tree_util
    return obj if isinstance(obj, type) and tree_util.is_node_type(obj) else None


def parameter_names(cls):
    """The names of the parameters `cls(...)` takes positionally (for readable names)."""
    try:
        return [p.name for p in inspect.signature(cls).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def constructor_children(cls, n_args, keywords):
    """For `C(a0, a1, ..., k=v)` building a pytree node (a namedtuple, a class registered with
    register_pytree_node, register_pytree_node_class or register_dataclass): which argument
    each of the instance's leaves is, in tree_flatten's order (positions and keyword names),
    when every leaf is one argument held as given (an argument that is no leaf is kept in its
    aux data: constructor_aux); None otherwise (then the call is read as any other). Found by
    building one instance of C from placeholders, now."""
    from secant import tree_util
    if not tree_util.is_node_type(cls):
        return None
    marks = [object() for _ in range(n_args)]
    named = {k: object() for k in keywords}
    which = {id(m): i for i, m in enumerate(marks)}
    which.update({id(m): k for k, m in named.items()})
    try:
        leaves = tree_util.tree_leaves(cls(*marks, **named), is_leaf=lambda v: id(v) in which)
    except Exception:       # noqa: BLE001  (a constructor that computes with its arguments)
        return None
    order = [which.get(id(leaf)) for leaf in leaves]
    if None in order or len(set(order)) != len(order):
        return None
    # an argument that is no leaf is kept in the aux data (a flax struct field marked
    # pytree_node=False, register_dataclass's meta_fields): static, as in JAX, where a value
    # there is no child and carries no derivative or batch axis
    return order


def constructor_aux(cls, n_args, keywords):
    """The arguments of `C(a0, ..., k=v)` (positions and keyword names) that C keeps in its aux
    data (tree_flatten's second part: a flag, a tuple of names), where constructor_children
    reads the call as a tree: the rest of its arguments. They must not be traced values."""
    order = constructor_children(cls, n_args, keywords)
    if not order:
        return []
    return [a for a in list(range(n_args)) + list(keywords) if a not in order]
