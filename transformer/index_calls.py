"""Objects whose subscript is a call: `snp.r_[a, 0.5, 1:3]` is read by the transforms as
`snp.r_.concat(a, 0.5, snp.r_.slice(1, 3, None))`, a call of a library function that has a source
(secant/numpy/extra.py), so it is differentiated and batched like any other. Such an object
names the function in its `__secant_index_call__` attribute and has a `slice` attribute."""
import gast


def index_call(node, resolve):
    """The Call node a subscript of such an object stands for, else None. `resolve` gives the
    object a callee expression names (or a sentinel)."""
    if not isinstance(node.value, (gast.Name, gast.Attribute)):
        return None
    name = getattr(resolve(node.value), "__secant_index_call__", None)
    if not isinstance(name, str):
        return None
    items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
    args = [_slice_call(node.value, i) if isinstance(i, gast.Slice) else i for i in items]
    call = gast.Call(func=gast.Attribute(value=node.value, attr=name, ctx=gast.Load()),
                     args=args, keywords=[])
    for n in gast.walk(call):
        if isinstance(n, gast.expr) and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset = node.lineno, node.col_offset
            n.end_lineno = getattr(node, "end_lineno", node.lineno)
            n.end_col_offset = getattr(node, "end_col_offset", node.col_offset)
    return call


def _slice_call(obj, s):
    """`start:stop:step` as `obj.slice(start, stop, step)` (the object's own `slice`: a user's
    variable named slice cannot change it)."""
    none = gast.Constant(value=None, kind=None)
    return gast.Call(func=gast.Attribute(value=obj, attr="slice", ctx=gast.Load()),
                     args=[s.lower or none, s.upper or gast.Constant(value=None, kind=None),
                           s.step or gast.Constant(value=None, kind=None)], keywords=[])
