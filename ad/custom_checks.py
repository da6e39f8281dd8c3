"""What the user's custom_vjp / custom_jvp rules return, checked as JAX checks it: the generated
functions of ad/custom_rules.py pass each rule's result through one of these, e.g.

    def f_vjp(out_bar, x, w):
        out, res = custom_vjp_fwd_output(f_fwd(x, w), out_bar, f_fwd)
        x_bar, w_bar = custom_vjp_cotangents(f_bwd(res, out_bar), (x, w), f_bwd)
        return x_bar, w_bar

Each returns its first argument (a bwd rule's None cotangents replaced by zeros, as JAX reads
them) or raises a SecantError naming the rule by its file and def line and saying what was
expected. The derivative transforms read a call of one as its first argument (its value is the
identity: `__secant_checks__`); vmap writes it by rule (batching/rules.py HELPERS), every
argument with its batch axis, so the shapes compared are those of the whole batch.
"""
import types
import weakref

import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, SecantValueError, defined_at, where


def checks(fn):
    fn.__secant_checks__ = True
    fn.__secant_check__ = True     # a call kept as a statement for what it checks
    return fn


def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "dtype") or isinstance(x, (int, float, complex))


def _short(x):
    if not _is_array(x):
        return f"{type(x).__name__}"
    dt, weak = snp.result_type(x), isinstance(x, (int, float, complex))
    return f"{dt.name}{list(np.shape(x))}" + ("{weak}" if weak else "")


def _tree_short(tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    return f"{treedef} with {', '.join(_short(leaf) for leaf in leaves) or 'no leaves'}"


def _kind(dt):
    return "complex" if dtypes.is_complex(dt) else "float" if dtypes.is_inexact(dt) else "int"


def _zeros_like_tree(p):
    return tree_util.tree_map(lambda leaf: snp.zeros_like(leaf) if _is_array(leaf) else leaf, p)


def _cotangent(ct, p, path, rule, param):
    """ct checked against the primal p (None, or a None subtree: zeros)."""
    if ct is None:
        return _zeros_like_tree(p)
    if tree_util.tree_structure(ct) == tree_util.tree_structure(p):
        leaves, treedef = tree_util.tree_flatten(ct)
        return treedef.unflatten([_leaf(c, q, path, rule, param)
                                  for c, q in zip(leaves, tree_util.tree_leaves(p))])
    if isinstance(p, (tuple, list)) and isinstance(ct, (tuple, list)) and len(ct) == len(p):
        return type(p)(_cotangent(c, q, f"{path}[{i}]", rule, param)
                       for i, (c, q) in enumerate(zip(ct, p)))
    if isinstance(p, dict) and isinstance(ct, dict) and set(ct) == set(p):
        return {k: _cotangent(ct[k], p[k], f"{path}[{k!r}]", rule, param) for k in p}
    raise SecantTypeError(
        f"custom_vjp bwd rule {defined_at(rule)} must return a cotangent with the structure of "
        f"differentiable argument {param}, {tree_util.tree_structure(p)}, but at output{path} returned "
        f"{_tree_short(ct)} (as in JAX; None stands for zeros){where()}")


def _leaf(c, p, path, rule, param):
    if not _is_array(c):
        raise SecantTypeError(f"custom_vjp bwd rule {defined_at(rule)} returned a "
                              f"{type(c).__name__} at output{path} where the cotangent of "
                              f"differentiable argument {param} ({_short(p)}) goes{where()}")
    if not _is_array(p):
        return c
    pdt, cdt = snp.result_type(p), snp.result_type(c)
    if np.shape(c) != np.shape(p) or (dtypes.is_inexact(pdt) and _kind(cdt) != _kind(pdt)):
        raise SecantValueError(
            f"custom_vjp bwd rule {defined_at(rule)} must return cotangents with the shapes and "
            f"dtypes of the primal arguments (as in JAX), but at output{path} it returned "
            f"{_short(c)} for differentiable argument {param} of shape/dtype {_short(p)}{where()}")
    if dtypes.is_inexact(pdt) and cdt != pdt:     # (another precision: the primal's, as JAX's)
        c = snp.asarray(c).astype(pdt)
    return _secant_array(c)


def _secant_array(c):
    """A NumPy array handed in as a cotangent, as secant's own (rules call `g.at[...]` on it)."""
    return snp.asarray(c) if isinstance(c, (np.ndarray, np.generic)) else c


@checks
def custom_vjp_cotangents(cts, primals, rule):
    """The tuple a custom_vjp bwd rule returned, one cotangent per differentiable argument (the
    `primals`, a tuple), checked; None (or a None subtree) reads as zeros."""
    names = tuple(f"{i}" for i in range(len(primals)))
    if not isinstance(cts, (tuple, list)) or len(cts) != len(primals):
        got = f"a {type(cts).__name__} of {len(cts)}" if isinstance(cts, (tuple, list)) else \
            f"one value ({_short(cts)})" if _is_array(cts) else repr(cts)
        raise SecantTypeError(
            f"custom_vjp bwd rule {defined_at(rule)} must return a tuple with one cotangent per "
            f"differentiable argument ({len(primals)}), as in JAX, but "
            f"returned {got}{where()}")
    return tuple(_cotangent(c, p, f"[{i}]", rule, names[i])
                 for i, (c, p) in enumerate(zip(cts, primals)))


_OUT_TYPES = weakref.WeakKeyDictionary()      # custom function -> {input types: output type}


def _abstract_output(fun, primals, depth):
    """(treedef, [(shape, dtype) or None per leaf]) of what the custom_vjp function `fun`
    returns for `primals` (their first `depth` axes are vmap's batch axes, left out), found by
    tracing it abstractly (no values computed, nothing compiled), once per input types; None
    where it cannot be traced (Python control flow on values, a closed-over traced value)."""
    from secant.backends.tracer import Trace, canonical_aval
    leaves, tree = tree_util.tree_flatten(primals)
    avals = []
    for leaf in leaves:
        if _is_array(leaf):
            aval = canonical_aval(leaf)
            avals.append(aval.update(shape=tuple(aval.shape)[depth:]) if depth else aval)
        else:
            avals.append(leaf)
    try:
        key = (tree, tuple(avals))
        hash(key)
    except TypeError:
        key = None
    table = _OUT_TYPES.setdefault(fun, {})
    if key is not None and key in table:
        return table[key]
    by_code = _code_key(fun)        # a custom function made anew at each call (issue 15)
    hit = _OUT_TYPES_BY_CODE.get((by_code, key)) if by_code is not None and key is not None \
        else None
    if hit is not None and hit[0] is fun.fun.__globals__:
        table[key] = hit[1]
        return table[key]
    trace = Trace(getattr(fun, "__name__", "f"), "custom_vjp check")
    try:
        with trace.activate():
            args = [trace.new_arg(a) if _is_array(leaf) else leaf
                    for a, leaf in zip(avals, leaves)]
            out = fun.fun(*tree.unflatten(args))
        o_leaves, o_tree = tree_util.tree_flatten(out)
        found = o_tree, [(tuple(np.shape(o)), snp.result_type(o)) if _is_array(o) else None
                         for o in o_leaves]
    except Exception:       # (the check is skipped; the function itself reports its errors)
        found = None
    finally:
        trace.finish()
    if key is not None:
        table[key] = found
        if by_code is not None:
            _OUT_TYPES_BY_CODE[by_code, key] = (fun.fun.__globals__, found)
    return found


# (_code_key, input types) -> (the globals its id names, output type): the globals held, so
# that their id is never another dict's while the entry lives (a stale hit: another module's)
_OUT_TYPES_BY_CODE = {}


def _code_key(fun):
    """What the output type of the custom function `fun` depends on besides its inputs' types,
    when that is its function's code, module and the types of the plain values (arrays,
    numbers, strings, None) its closure cells and defaults hold; None when one holds anything
    else (a function, an object: the output type may depend on its identity)."""
    from secant.backends.array import Array
    from secant.numpy.conversion import dtype_weak
    f = getattr(fun, "fun", None)
    if not isinstance(f, types.FunctionType):
        return None
    parts = []
    for value in [c.cell_contents for c in f.__closure__ or () if _filled(c)] + \
            list(f.__defaults__ or ()):
        if value is None or isinstance(value, (bool, int, float, complex, str)):
            parts.append((type(value), value))
        elif isinstance(value, (np.ndarray, np.generic, Array)):
            dtype, weak = dtype_weak(value)
            parts.append((np.shape(value), str(dtype), weak))
        else:
            return None
    if len(parts) != len(f.__closure__ or ()) + len(f.__defaults__ or ()):
        return None
    return f.__code__, id(f.__globals__), tuple(parts)


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _fwd_matches_function(out, fun, primals, depth, rule):
    """fwd's primal output checked against the function's own output type (as JAX checks it):
    the same structure, shapes and dtypes (weak types aside; under vmap, the dtype's kind)."""
    expected = _abstract_output(fun, primals, depth)
    if expected is None:
        return
    e_tree, e_leaves = expected
    o_leaves, o_tree = tree_util.tree_flatten(out)
    ok = o_tree == e_tree
    for o, e in zip(o_leaves, e_leaves) if ok else ():
        if e is None or not _is_array(o):
            ok = e is None and not _is_array(o)
        else:
            shape, dt = e
            odt = snp.result_type(o)
            ok = tuple(np.shape(o))[depth:] == shape and (
                odt == dt if not depth else _kind(odt) == _kind(dt))
        if not ok:
            break
    if not ok:
        def shown(tree, leaves):
            text = ", ".join(leaves) or "no leaves"
            return text if tree.num_leaves == 1 and tree == tree_util.tree_structure(0) \
                else f"{tree} with {text}"
        theirs = shown(e_tree, ["?" if e is None else f"{e[1].name}{list(e[0])}"
                                for e in e_leaves])
        mine = shown(o_tree, [f"{snp.result_type(o).name}{list(np.shape(o)[depth:])}"
                              if _is_array(o) else type(o).__name__ for o in o_leaves])
        raise SecantTypeError(
            f"custom_vjp fwd rule {defined_at(rule)} must return as its primal output what the "
            f"custom_vjp function {getattr(fun, '__name__', 'f')} returns, with equal container "
            f"(pytree) structure, shapes and dtypes (as in JAX): the function returns {theirs} "
            f"but the fwd rule's primal output is {mine}{where()}")


@checks
def custom_vjp_fwd_output(pair, out_bar, rule, fun=None, primals=(), depth=0):
    """A custom_vjp fwd rule's (out, residuals), its out checked against the function's output
    type (`fun` traced abstractly on `primals`) and against out_bar (its cotangent, with its
    structure and shapes)."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise SecantTypeError(f"custom_vjp fwd rule {defined_at(rule)} must return a pair (out, "
                              f"residuals), as in JAX, but returned "
                              f"{_tree_short(pair)}{where()}")
    out = pair[0]
    if fun is not None:
        _fwd_matches_function(out, fun, primals, depth, rule)
    o_leaves, o_tree = tree_util.tree_flatten(out)
    b_leaves, b_tree = tree_util.tree_flatten(out_bar)
    if not all(_is_array(b) for b in b_leaves):
        return pair
    # (an integer output's cotangent may be float zeros: only a float output's kind is known)
    same = o_tree == b_tree and all(
        _is_array(o) and np.shape(o) == np.shape(b)
        and (not dtypes.is_inexact(snp.result_type(o))
             or _kind(snp.result_type(o)) == _kind(snp.result_type(b)))
        for o, b in zip(o_leaves, b_leaves))
    if not same:
        raise SecantTypeError(
            f"custom_vjp fwd rule {defined_at(rule)} must return as its primal output what the "
            f"custom_vjp function returns (as in JAX): the function's output is "
            f"{_tree_short(out_bar)} but the fwd rule's is {_tree_short(out)}{where()}")
    return pair


@checks
def custom_vjp_fwd_pair(pair, rule, fun=None, primals=(), depth=0):
    """A custom_vjp fwd rule's (out, residuals) called by a caller's forward pass (its out
    checked against the function's output type: `fun` traced abstractly on `primals`)."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise SecantTypeError(f"custom_vjp fwd rule {defined_at(rule)} must return a pair (out, "
                              f"residuals), as in JAX, but returned "
                              f"{_tree_short(pair)}{where()}")
    if fun is not None:
        _fwd_matches_function(pair[0], fun, primals, depth, rule)
    return tuple(pair)


def body_replayed(rule, *args, custom):
    """rule(*args) with the custom function `custom`, where the rule calls it, running its
    body's replay, without its Python side effects: the caller's forward pass ran the body for
    this call (as JAX runs it once, in fwd). A transform of code calling this reads the call as
    rule(*args) (`__secant_calls_first__`, transformer/normalize.py)."""
    from secant.custom import body_ran
    with body_ran((custom,)):
        return rule(*args)


body_replayed.__secant_calls_first__ = True


@checks
def custom_jvp_outputs(pair, rule):
    """A custom_jvp rule's (primal_out, tangent_out), checked: equal structures and shapes, and
    a tangent of the primal's kind (a float tangent for a float primal)."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise SecantTypeError(f"custom_jvp rule {defined_at(rule)} must return a pair "
                              f"(primal_out, tangent_out), as in JAX, but returned "
                              f"{_tree_short(pair)}{where()}")
    out, out_dot = pair
    o_leaves, o_tree = tree_util.tree_flatten(out)
    t_leaves, t_tree = tree_util.tree_flatten(out_dot)
    if o_tree != t_tree:
        raise SecantTypeError(
            f"custom_jvp rule {defined_at(rule)} must return primal and tangent outputs with "
            f"equal container (pytree) structures (as in JAX), but returned {o_tree} and "
            f"{t_tree}{where()}")
    fixed = []
    for o, t in zip(o_leaves, t_leaves):
        if not (_is_array(o) and _is_array(t)):
            fixed.append(t)
            continue
        odt, tdt = snp.result_type(o), snp.result_type(t)
        if np.shape(o) != np.shape(t) or (dtypes.is_inexact(odt) and _kind(tdt) != _kind(odt)):
            raise SecantTypeError(
                f"custom_jvp rule {defined_at(rule)} must return primal and tangent outputs with "
                f"corresponding shapes and dtypes (as in JAX): expected {odt.name}"
                f"{list(np.shape(o))} (the tangent type of {_short(o)}), but got "
                f"{_short(t)}{where()}")
        if dtypes.is_inexact(odt) and tdt != odt:
            t = snp.asarray(t).astype(odt)
        fixed.append(t)
    return out, t_tree.unflatten(fixed)


def _example(tree, depth):
    """The first example of every array leaf of tree with `depth` batch axes in front."""
    if not depth:
        return tree
    return tree_util.tree_map(
        lambda leaf: leaf[(0,) * depth] if _is_array(leaf) and np.ndim(leaf) >= depth else leaf,
        tree)


def custom_jvp_rule_checked(rule, custom, primals, tangents, nondiff=(), depth=0,
                            nondiff_depth=0):
    """custom's rule run at (*nondiff, primals, tangents) for its outputs' checks
    (custom_jvp_outputs), in the vjp of a call whose forward pass ran custom's body as written:
    in the rule, custom's body runs as its replay, without its Python side effects (they ran
    once for this call), as JAX runs the body once, in the rule. Under vmap (`depth` batch
    axes in front of the primals and tangents, `nondiff_depth` of the nondiff arguments) the
    rule runs on the first example, as the shapes and dtypes checked are each example's."""
    from secant.custom import body_ran
    leaves = tree_util.tree_leaves((primals, tangents))
    if depth and any(_is_array(leaf) and np.ndim(leaf) >= depth and 0 in np.shape(leaf)[:depth]
                     for leaf in leaves):
        return          # (an empty batch: no example to check)
    nondiff, primals, tangents = (_example(nondiff, nondiff_depth), _example(primals, depth),
                                  _example(tangents, depth))
    with body_ran((custom,)):
        pair = rule(*nondiff, primals, tangents)
    custom_jvp_outputs(pair, rule)


custom_jvp_rule_checked.__secant_check__ = True     # a call kept as a statement: no value


class OutputSpec:
    """What vjp's pullback expects for a cotangent: the primal output's structure and each leaf's
    shape and dtype (not its values)."""

    def __init__(self, out):
        leaves, self.tree = tree_util.tree_flatten(out)
        self.state = None       # (vjp's: transformer/nonlocals.py data_read, after the call)
        self.leaves = [(tuple(np.shape(x)), snp.result_type(x)) if _is_array(x) else None
                       for x in leaves]

    def __repr__(self):
        shown = ", ".join("?" if x is None else f"{x[1].name}{list(x[0])}" for x in self.leaves)
        return f"{self.tree} with {shown or 'no leaves'}"


def output_spec(out):
    return OutputSpec(out)


@checks
def vjp_cotangent(ct, spec, depth=0):
    """The cotangent passed to vjp's pullback, checked against the primal output (`spec`) as JAX
    checks it: the same structure (TypeError), each leaf the shape and a dtype of the kind of the
    output's (ValueError); `depth` batch axes in front under vmap."""
    state = getattr(spec, "state", None)
    if state:       # (the pullback computes the function again: what it reads must hold)
        from secant.transformer.nonlocals import changed_since
        name = changed_since(state)
        if name is not None:
            raise SecantValueError(
                f"{name} was rebound since vjp was called: the pullback computes the function "
                f"again and would read its new value, where JAX's pullback keeps the value "
                f"the vjp's call read; call vjp again after changing it{where()}")
    leaves, tree = tree_util.tree_flatten(ct)
    if tree != spec.tree:
        raise SecantTypeError(
            f"the cotangent passed to the vjp function must have the structure of the primal "
            f"output ({spec!r}), as in JAX, but got {_tree_short(ct)}{where()}")
    fixed = []
    for c, expected in zip(leaves, spec.leaves):
        if expected is None or not _is_array(c) or getattr(c, "dtype", None) is not None \
                and c.dtype.names == ("float0",):       # (an integer output's cotangent)
            fixed.append(c)
            continue
        shape, odt = expected
        cdt = snp.result_type(c)
        if tuple(np.shape(c))[depth:] != shape or (dtypes.is_inexact(odt)
                                                  and _kind(cdt) != _kind(odt)):
            got = f"{cdt.name}{list(np.shape(c)[depth:])}"
            raise SecantValueError(
                f"the cotangent passed to the vjp function must have the shape and dtype of the "
                f"primal output, {odt.name}{list(shape)} (as in JAX), but got {got}{where()}")
        if dtypes.is_inexact(odt) and getattr(c, "dtype", cdt) != odt:   # another precision:
            c = snp.asarray(c).astype(odt)                                # the output's
        fixed.append(_secant_array(c))
    return tree.unflatten(fixed)


@checks
def out_axes_tree(out, out_axes):
    """A vmapped function's output, checked against vmap's out_axes given as a pytree prefix
    (secant/batch.py _leafwise reads the output leaf by leaf there: a key or item it left out
    is an error, as in JAX, never dropped)."""
    try:
        tree_util.tree_structure(out_axes, is_leaf=lambda a: a is None).flatten_up_to(out)
    except (ValueError, TypeError) as e:
        err = SecantValueError(f"vmap out_axes specification must be a tree prefix of the "
                               f"corresponding value, got specification {out_axes!r} for value "
                               f"tree {tree_util.tree_structure(out)}: {e}")
        err.vmap_call = True        # (secant/batch.py names the line of the vmapped call)
        raise err from None
    return out


NAMES = ("custom_vjp_cotangents", "custom_vjp_fwd_output", "custom_jvp_outputs", "vjp_cotangent",
         "output_spec", "out_axes_tree", "custom_jvp_rule_checked",
         "custom_vjp_fwd_pair", "body_replayed")


def by_name():
    return {n: globals()[n] for n in NAMES}
