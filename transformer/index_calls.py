"""Objects whose subscript is a call: `snp.r_["0,2", a, 0.5, 1:3]` is read by the transforms as
`snp.r_.concat(a, 0.5, snp.r_.range(1, 3, None), directive="0,2")`, a call of a library function
that has a source (secant/numpy/extra.py), so it is differentiated and batched like any other.
Such an object names that function in its `__secant_index_call__` attribute and has a `range`
attribute (a slice's values, an array)."""
import gast


def index_call(node, resolve):
    """The Call node a subscript of such an object stands for, else None. `resolve` gives the
    object a callee expression names (or a sentinel)."""
    if not isinstance(node.value, (gast.Name, gast.Attribute)):
        return None
    name = getattr(resolve(node.value), "__secant_index_call__", None)
    if not isinstance(name, str):
        return None
    items = list(node.slice.elts) if isinstance(node.slice, gast.Tuple) else [node.slice]
    keywords = []
    if items and isinstance(items[0], gast.Constant) and isinstance(items[0].value, str):
        keywords.append(gast.keyword(arg="directive", value=items.pop(0)))
    args = [_slice_call(node.value, i) if isinstance(i, gast.Slice) else
            _array_call(node.value, i) if isinstance(i, (gast.Constant, gast.UnaryOp)) else i
            for i in items]
    call = gast.Call(func=gast.Attribute(value=node.value, attr=name, ctx=gast.Load()),
                     args=args, keywords=keywords)
    for n in gast.walk(call):
        if isinstance(n, gast.expr) and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset = node.lineno, node.col_offset
            n.end_lineno = getattr(node, "end_lineno", node.lineno)
            n.end_col_offset = getattr(node, "end_col_offset", node.col_offset)
    return call


def _slice_call(obj, s):
    """`start:stop:step` as `obj.range(start, stop, step)`, the values it stands for."""
    none = gast.Constant(value=None, kind=None)
    return gast.Call(func=gast.Attribute(value=obj, attr="range", ctx=gast.Load()),
                     args=[s.lower or none, s.upper or gast.Constant(value=None, kind=None),
                           s.step or gast.Constant(value=None, kind=None)], keywords=[])


def _array_call(obj, item):
    """A number written in place as `obj.array(0.5)`: an array, as the other items are."""
    return gast.Call(func=gast.Attribute(value=obj, attr="array", ctx=gast.Load()),
                     args=[item], keywords=[])
