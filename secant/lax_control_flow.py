"""lax.cond, switch, while_loop, fori_loop, scan and map, with JAX's semantics.

With concrete values they run as plain Python (eager code, or a concrete predicate under jit).
While jit is tracing, loops are staged as one StableHLO while loop whatever their trip count,
and a traced predicate stages a StableHLO conditional (backends/control_flow.py).
"""
import builtins
import sys

import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.backends import control_flow, dtypes
from secant.backends.array import Array
from secant.backends.core import Tracer, aval_of
from secant.backends.errors import (SecantTypeError, SecantValueError, ShapeError, defined_at,
                                    where)
from secant.backends.tracer import Trace, active_trace


def _arrays(tree):
    """Eager loops run on secant arrays, as JAX's do (NumPy inputs and Python numbers too)."""
    return tree_util.tree_map(
        lambda x: snp.asarray(x) if isinstance(x, (np.ndarray, np.generic, int, float, complex))
        else x, tree)


def _dtype_weak(x):
    from secant.numpy.conversion import dtype_weak
    return dtype_weak(x)


def _static(leaf):
    """A function or string leaf of a carry (a field of a closure object the loop carries, or
    its cotangent, the function itself): it stays the very same object."""
    return isinstance(leaf, str) or callable(leaf) and not hasattr(leaf, "shape")


def _check_carry(before, after, what):
    """Eager loops keep JAX's rule that the carry keeps its structure, shapes and dtypes (a weakly
    typed carry, a Python scalar, may take the dtype the body gives it), so that eager code fails
    where jit would."""
    b_leaves, b_tree = tree_util.tree_flatten(before)
    a_leaves, a_tree = tree_util.tree_flatten(after)
    if b_tree == a_tree and all(_static(b) and b is a or not _static(b) and not _static(a)
                                and np.shape(b) == np.shape(a) and (
            _dtype_weak(b)[1] or _dtype_weak(b)[0] == _dtype_weak(a)[0])
            for b, a in zip(b_leaves, a_leaves)):
        return

    def describe(tree, leaves):
        return f"{tree} with " + ", ".join(
            type(x).__name__ if _static(x) else f"{_dtype_weak(x)[0].name}{list(np.shape(x))}"
            for x in leaves)
    raise control_flow.CarryChanged(
        f"the loop carry must keep its structure, shapes and dtypes: it entered as "
        f"{describe(b_tree, b_leaves)} and {what} returned {describe(a_tree, a_leaves)}{where()}")


def _predicate(p):
    """bool(p) for cond_fun's result, which must be a boolean scalar (as under jit)."""
    if type(p) is not bool and (np.ndim(p) != 0 or _dtype_weak(p)[0] != dtypes.bool_):
        raise SecantTypeError("cond_fun must return a boolean scalar, got "
                              f"{_dtype_weak(p)[0].name}{list(np.shape(p))}{where()}")
    return builtins.bool(p)


def _kind(x):
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    if x is None:
        return "None"
    return f"one value ({_dtype_weak(x)[0].name}{list(np.shape(x))})" \
        if hasattr(x, "dtype") or isinstance(x, (int, float, complex)) else f"a {type(x).__name__}"


def _returns_carry(body_fun, init, what, carry_at=-1):
    """body_fun, checked to return a tuple (or list) like the carry `init` when init is one: a
    body returning one value where the carry has N is named at its own line."""
    if not isinstance(init, (tuple, list)):
        return body_fun

    def checked(*args):
        out = body_fun(*args)
        if not isinstance(out, (tuple, list)) or len(out) != len(init):
            raise SecantTypeError(
                f"{what} {defined_at(body_fun)} must return the loop carry: a "
                f"{type(init).__name__} of {len(init)} values like the initial carry, but "
                f"returned {_kind(out)}{where()}")
        return out
    return checked


def _returns_pair(f):
    """scan's f, checked to return a pair (carry, y)."""
    def checked(carry, x):
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise SecantTypeError(f"scan's f {defined_at(f)} must return a pair (carry, y), but "
                                  f"returned {_kind(out)}{where()}")
        return out
    return checked


def _scalar(x, what):
    if np.ndim(x) != 0:
        raise SecantTypeError(f"{what} must be a scalar, got shape {np.shape(x)}{where()}")
    return x


def _called_by_user():
    """Whether the lax call running now was written by the user (not by generated code, whose
    conds stand for Python `if`s, with Python's semantics, or for a derivative's branches)."""
    f = sys._getframe(2)
    return not f.f_code.co_filename.startswith("<secant")


def _users_branches(branches):
    """Whether a cond/switch that generated code calls is the user's own lax call copied into
    it (a derivative's primal pass), which JAX would check as the user's: its frame comes from a
    user line that calls cond/switch and names every branch (a lambda or a name written there).
    A derivative's branches (`yes_vjp`) and a Python if's (`y_if_true`) are not named there."""
    import linecache
    import re
    from secant.backends.errors import origin
    f = sys._getframe(2)
    user_file, user_line = origin(f.f_code.co_filename, f.f_lineno)
    if user_file == f.f_code.co_filename:
        return False
    text = linecache.getline(user_file, user_line)
    if "cond(" not in text and "switch(" not in text:
        return False
    names = [getattr(b, "__name__", "") for b in branches]
    return all(n == "<lambda>" or n.isidentifier() and re.search(rf"\b{n}\b", text)
               for n in names)


def _refuse_state(kind, fns, roles):
    """Refuses a user's lax call whose functions read Python state they set (a counter, an
    RNG object's next(), a list appended to and read): eagerly they would run once per step,
    under jit once per trace, and the two would read different values (see
    transformer/nonlocals.py reads_state_it_sets)."""
    from secant.transformer.nonlocals import body_state_message, reads_state_it_sets
    for fn, role in zip(fns, roles):
        what = reads_state_it_sets(fn)
        if what is not None:
            raise SecantValueError(body_state_message(kind, role, what) + where())


def _abstract(x):
    if isinstance(x, (np.ndarray, np.generic, int, float, complex)) and not isinstance(x, bool) \
            or hasattr(x, "dtype") and hasattr(x, "shape"):
        return aval_of(x)
    return None


def _branches_agree(out, taken, branches, operands, names):
    """As JAX (which traces every branch), the branches a concrete predicate did not take must
    return what the taken one did: each is traced abstractly (nothing runs) and compared. A
    branch that cannot be traced (Python control flow on its operands' values) is not checked."""
    leaves, treedef = tree_util.tree_flatten(out)
    try:
        avals = [aval_of(leaf) for leaf in leaves]
    except Exception:       # (a value that is not an array: nothing to compare)
        return
    op_leaves, op_tree = tree_util.tree_flatten(operands)
    op_avals = [_abstract(leaf) for leaf in op_leaves]
    for k, fn in enumerate(branches):
        if k == taken:
            continue
        trace = Trace(f"branch_{k}")
        try:
            with trace.activate():
                args = op_tree.unflatten([trace.new_arg(a) if a is not None else leaf
                                          for a, leaf in zip(op_avals, op_leaves)])
                other_leaves, other_tree = tree_util.tree_flatten(fn(*args))
                other = [aval_of(leaf) for leaf in other_leaves]
        except Exception:
            continue
        same = other_tree == treedef and all(
            (a.shape, a.dtype) == (b.shape, b.dtype) for a, b in zip(avals, other))
        if not same:
            raise SecantTypeError(
                "the branches of cond/switch must return the same structure, shapes and dtypes "
                f"(as in JAX, which traces every branch): {names[taken]} "
                f"{defined_at(branches[taken])} returns {control_flow.describe(treedef, avals)} "
                f"but {names[k]} {defined_at(fn)} returns {control_flow.describe(other_tree, other)}"
                + where())


_NO_OPERAND = object()


def _operand_keyword(operands, operand, name):
    """JAX's `operand=` keyword (one operand, given by name; never beside positional ones)."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise SecantTypeError(f"{name}: if the 'operand' keyword is passed then no operands "
                              "can be passed positionally" + where())
    return (operand,)


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """true_fun(*operands) if pred else false_fun(*operands)."""
    operands = _operand_keyword(operands, operand, "cond")
    if _called_by_user():
        _refuse_state("cond", (true_fun, false_fun), ("true_fun", "false_fun"))
    if not _called_by_user() and not isinstance(pred, Tracer) and _abstract(pred) is None:
        # a Python `if` on a Python object (`if history:` of a list): its truth, as Python's
        return true_fun(*operands) if pred else false_fun(*operands)
    _scalar(pred, "cond's predicate")
    if isinstance(pred, Tracer):
        pred = pred if pred.dtype == dtypes.bool_ else pred != 0
        return control_flow.cond(pred._trace, pred, (true_fun, false_fun), operands)
    taken = builtins.bool(pred)
    out = true_fun(*operands) if taken else false_fun(*operands)
    if _called_by_user() or _users_branches((true_fun, false_fun)):
        _branches_agree(out, int(taken), (false_fun, true_fun), operands,
                        ("false_fun", "true_fun"))
    return _arrays(out) if _called_by_user() else out     # (arrays, as JAX's: a branch's 3 too)


def _index_dtype(index):
    """switch's index must be an integer scalar (as JAX's, under jit and eagerly alike)."""
    dt = _dtype_weak(index)[0]
    if not (dtypes.is_int(dt) or dtypes.is_bool(dt)):
        raise SecantTypeError(f"switch's index must be an integer scalar, got {dt.name}; "
                              "convert it with .astype(int)" + where())


def switch(index, branches, *operands, operand=_NO_OPERAND):
    """branches[clamp(index, 0, len(branches) - 1)](*operands)."""
    operands = _operand_keyword(operands, operand, "switch")
    branches = tuple(branches)
    if not branches:
        raise SecantValueError("switch needs at least one branch" + where())
    if _called_by_user():
        _refuse_state("switch", branches, [f"branch {k}" for k in range(len(branches))])
    _scalar(index, "switch's index")
    _index_dtype(index)
    if isinstance(index, Tracer):
        index = snp.clip(index.astype(np.int32), 0, len(branches) - 1)
        return control_flow.cond(index._trace, index, branches, operands)
    taken = builtins.min(builtins.max(int(index), 0), len(branches) - 1)
    out = branches[taken](*operands)
    if _called_by_user() or _users_branches(branches):
        _branches_agree(out, taken, branches, operands,
                        [f"branch {k}" for k in range(len(branches))])
    return _arrays(out) if _called_by_user() else out


def while_loop(cond_fun, body_fun, init_val):
    """Repeat val = body_fun(val) while cond_fun(val); returns the final val."""
    trace = active_trace()
    if _called_by_user():
        _refuse_state("while_loop", (cond_fun, body_fun), ("cond_fun", "body_fun"))
    body_fun = _returns_carry(body_fun, init_val, "while_loop's body_fun")
    if trace is not None:
        return control_flow.while_loop(trace, cond_fun, body_fun, init_val)
    val = _arrays(init_val)
    while _predicate(cond_fun(val)):
        new = body_fun(val)
        _check_carry(val, new, "body_fun")
        val = new
    return val


# a loop whose trip count is learnt from its counters: at most this many steps are run on
# them (each traces the body once, into a region thrown away)
TRIP_COUNT_LIMIT = 4096


def trip_count(cond_fun, body_fun, init_val):
    """The number of steps while_loop(cond_fun, body_fun, init_val) takes when its test reads
    only carries that enter as concrete numbers and that the body keeps concrete (a counter:
    `i = 0; while i < n: ...; i += 1` with n static), else None. The concrete carries step as
    eager code runs them (secant arrays, so with eager's dtypes); the others are placeholders
    of their shapes, traced (eagerly in a trace of its own) into a region that is then thrown
    away: a test or a counter that gives a concrete value from them reads none of their values
    (so a test of a batch of examples that reads their values gives None, not one count)."""
    leaves, treedef = tree_util.tree_flatten(init_val)
    if not any(_counter(x) for x in leaves):
        return None
    trace = active_trace()
    if trace is None:
        trace = Trace("trip_count", kind="trip count")
        try:
            with trace.activate():
                return _count_steps(trace, cond_fun, body_fun, leaves, treedef)
        finally:
            trace.finish()
    return _count_steps(trace, cond_fun, body_fun, leaves, treedef)


def _count_steps(trace, cond_fun, body_fun, leaves, treedef):
    try:
        with trace.region([aval_of(x) for x in leaves]) as (_, args):
            carry = [snp.asarray(x) if _counter(x) else a for x, a in zip(leaves, args)]
            for n in range(TRIP_COUNT_LIMIT + 1):
                go = cond_fun(treedef.unflatten(carry))
                if isinstance(go, Tracer) or np.ndim(go) != 0:
                    return None
                if not go:
                    return n
                out = tree_util.tree_leaves(body_fun(treedef.unflatten(carry)))
                if len(out) != len(carry):
                    return None
                carry = [o if _counter(o) else a for o, a in zip(out, args)]
    except Exception:       # (the loop's own trace reports what is wrong with it)
        return None
    return None


def _counter(x):
    """A concrete integer or boolean scalar: a carry a trip count can be learnt from."""
    return not isinstance(x, Tracer) and np.ndim(x) == 0 and (
        isinstance(x, (bool, int, np.integer, np.bool_)) or isinstance(x, Array) and (
            dtypes.is_int(x.dtype) or x.dtype == dtypes.bool_))


def fori_loop(lower, upper, body_fun, init_val):
    """val = body_fun(i, val) for i in range(lower, upper)."""
    trace = active_trace()
    if _called_by_user():
        _refuse_state("fori_loop", (body_fun,), ("body_fun",))
    body_fun = _returns_carry(body_fun, init_val, "fori_loop's body_fun")
    dt = _bounds_dtype(lower, upper)
    objects = trace is not None and _object_leaves(init_val)
    if objects and _called_by_user():
        raise SecantTypeError(f"fori_loop's init_val holds {type(objects[0]).__name__}, which "
                              "is not a valid JAX type (register its class as a pytree)"
                              + where())
    if trace is None or objects and isinstance(lower, int) and isinstance(upper, int):
        # (generated code's fori_loop stands for a Python `for` over a range: one carrying an
        # object that is no pytree, a frozen dataclass, runs as Python runs it, unrolled)
        val = _arrays(init_val)
        for i in range(int(lower), int(upper)):
            new = body_fun(i, val)
            if not objects:
                _check_carry(val, new, "body_fun")
            val = new
        return val
    upper = snp.asarray(upper).astype(dt)
    _, val = control_flow.while_loop(
        trace, lambda c: c[0] < upper, lambda c: (c[0] + 1, body_fun(c[0], c[1])),
        (snp.asarray(lower).astype(dt), init_val))
    return val


def _object_leaves(tree):
    """The leaves of a loop's carry that are neither arrays, numbers nor functions or strings
    (objects of a class not registered as a pytree)."""
    return [leaf for leaf in tree_util.tree_leaves(tree)
            if leaf is not None and _abstract(leaf) is None and not _static(leaf)
            and not isinstance(leaf, bool)]


def _bounds_dtype(lower, upper):
    """fori_loop's index dtype, as JAX's: the bounds' common dtype, which they must share (a
    weakly typed integer, a Python int, takes the other bound's integer dtype); float bounds of
    one dtype are allowed, as in JAX (the index is then a float)."""
    (lo, lo_weak), (up, up_weak) = _dtype_weak(lower), _dtype_weak(upper)
    if lo == up:
        return lo
    if dtypes.is_int(lo) and dtypes.is_int(up) and lo_weak != up_weak:
        return up if lo_weak else lo
    raise SecantTypeError(f"lower and upper arguments to fori_loop must have equal types, got "
                          f"{lo.name} and {up.name}{where()}")


def _length(xs, length):
    leaves = tree_util.tree_leaves(xs)
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in leaves}
    if None in sizes:
        raise ShapeError("scan's xs must be arrays with a leading axis to scan over" + where())
    if length is not None:
        sizes.add(int(length))
    if len(sizes) > 1:
        raise ShapeError(f"scan got inconsistent lengths {sorted(sizes)} (the leading axes of xs "
                         "and length must agree)" + where())
    if not sizes:
        raise SecantValueError("scan needs xs or length" + where())
    return sizes.pop()


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """carry, ys = scan(f, init, xs): carry, y = f(carry, x) for each x in xs; ys stacks the y."""
    n = _length(xs, length)
    if _called_by_user():
        _refuse_state("scan", (f,), ("f",))
    f = _returns_pair(f)
    trace = active_trace()
    order = range(n - 1, -1, -1) if reverse else range(n)
    if trace is None:
        carry, ys, xs = _arrays(init), _Rows(order), _arrays(xs)
        if n == 0:      # ys still has the shapes f gives: call it once on zeros, as a placeholder
            _, y = f(carry, _placeholder(xs))
            return carry, tree_util.tree_map(lambda v: snp.zeros((0,) + np.shape(v),
                                                                 _dtype_weak(v)[0]), y)
        for i in order:
            x = tree_util.tree_map(lambda a: a[i], xs)
            new, y = f(carry, x)
            ys.put(y)
            _check_carry(carry, new, "scan's f")
            carry = new
        return carry, ys.stacked()
    _plain_objects_read(init)
    return _staged_scan(trace, f, init, xs, n, reverse)


def _plain_objects_read(tree):
    """Objects of plain user classes in a staged scan's carry (`w = Vec(x)` carried by a for
    loop jit rolls into a scan, with the steps' carries kept for its derivative) read as
    pytrees of their fields (secant.tree_util.plain_object), never as leaves of no dtype."""
    for leaf in tree_util.tree_leaves(tree):
        if not hasattr(leaf, "shape") and tree_util.plain_object(leaf):
            _plain_objects_read(leaf)


def _placeholder(xs):
    """One slice of xs, zeros: stands for x where scan has no element to give f (length 0)."""
    return tree_util.tree_map(lambda a: snp.zeros(np.shape(a)[1:], _dtype_weak(a)[0]), xs)


def _promote_weak_carry(init, carry):
    """init with each weakly typed leaf whose dtype f changed converted to the promoted dtype (as
    JAX and control_flow.while_loop do), or None when nothing changed."""
    i_leaves, i_tree = tree_util.tree_flatten(init)
    c_leaves, c_tree = tree_util.tree_flatten(carry)
    if i_tree != c_tree:
        return None                 # while_loop reports the mismatch
    out, changed = [], False
    for a, c in zip(i_leaves, c_leaves):
        (da, wa), (dc, wc) = _dtype_weak(a), _dtype_weak(c)
        if wa and da != dc and np.shape(a) == np.shape(c):
            a, changed = snp.asarray(a).astype(dtypes.promote((da, True), (dc, wc))[0]), True
        out.append(a)
    return i_tree.unflatten(out) if changed else None


class _Rows:
    """The ys of an eager scan, stacked as the steps give them: each leaf goes straight into a
    row of one preallocated array (a list of n values and then their stack would hold the ys
    twice, and n Python objects). Exactly what stacking a list gives: should a y not fit the
    first one's structure, dtypes, weak types and shapes (or not be an eager secant array), the
    rows written so far become a list and the rest is stacked as a list would be."""

    def __init__(self, order):
        self.order, self.written = order, 0
        self.tree = self.bufs = self.kinds = self.ys = None

    def put(self, y):
        i = self.order[self.written]
        if self.ys is None:
            leaves, tree = tree_util.tree_flatten(y)
            kinds = [_eager_kind(leaf) for leaf in leaves]
            if self.bufs is None and None not in kinds:
                self.tree, self.kinds = tree, kinds
                self.bufs = [np.empty((len(self.order),) + shape, dtype)
                             for shape, dtype, _ in kinds]
            if self.bufs is not None and tree == self.tree and kinds == self.kinds:
                for buf, leaf in zip(self.bufs, leaves):
                    buf[i] = leaf._npy
                self.written += 1
                return
            self._to_list()
        self.ys[i] = y
        self.written += 1

    def _to_list(self):
        self.ys = [None] * len(self.order)
        for i in self.order[:self.written]:
            self.ys[i] = self._row(i)
        self.bufs = None

    def _row(self, i):
        return self.tree.unflatten([Array._wrap_ndarray(buf[i], weak)
                                    for buf, (_, _, weak) in zip(self.bufs, self.kinds)])

    def stacked(self):
        if self.ys is None:
            return self.tree.unflatten([Array._wrap_ndarray(buf, weak)
                                        for buf, (_, _, weak) in zip(self.bufs, self.kinds)])
        ys = self.ys
        return tree_util.tree_map(lambda *leaves: snp.stack(leaves), ys[0], *ys[1:])


def _eager_kind(leaf):
    """(shape, dtype, weak type) of an eager secant array held in NumPy, else None."""
    if type(leaf) is not Array or leaf._npy is None:
        return None
    return leaf._npy.shape, leaf._npy.dtype, leaf.weak_type


def _staged_scan(trace, f, init, xs, n, reverse):
    from secant import lax

    def x_at(i):
        return tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, 0, keepdims=False), xs)

    # the shapes of y: trace f in a region that is thrown away (again if a weakly typed carry
    # leaf, a Python scalar, takes another dtype: it is promoted first, as while_loop would)
    for _ in range(len(tree_util.tree_leaves(init)) + 1):
        with trace.region():
            carry0, y0 = f(init, x_at(snp.asarray(0, np.int32)) if n else _placeholder(xs))
        promoted = _promote_weak_carry(init, carry0)
        if promoted is None:
            break
        init = promoted
    y_buffers = tree_util.tree_map(lambda y: snp.zeros((n,) + tuple(np.shape(y)),
                                                        snp.result_type(y)), y0)

    def body(c):
        i, carry, ys = c
        k = (n - 1 - i) if reverse else i
        carry, y = f(carry, x_at(k))
        ys = tree_util.tree_map(lambda buf, v: lax.dynamic_update_index_in_dim(buf, v, k, 0),
                                ys, y)
        return i + 1, carry, ys

    if n == 0:
        return init, y_buffers
    _, carry, ys = control_flow.while_loop(trace, lambda c: c[0] < n, body,
                                           (snp.asarray(0, np.int32), init, y_buffers))
    return carry, ys


def map(f, xs):
    """[f(x) for x in xs], stacked."""
    if _called_by_user():
        _refuse_state("map", (f,), ("f",))
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]
