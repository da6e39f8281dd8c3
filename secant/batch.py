"""vmap: a function that maps `fun` over an axis of its arguments, as JAX's, written as a new,
readable Python function (batching/vectorize.py) once per (function, batched arguments, axes).

The wrapper checks the arguments (in_axes against their structure, one batch size), moves the
batch axis of pytree arguments whose leaves have different axes itself, and calls the generated
function, which moves each array argument's batch axis to 0 on entry and to out_axes on exit.
"""
import functools
import inspect
from collections import namedtuple

import numpy as np

from secant import tree_util
from secant.ad.helpers import forget_broadcast_ints
from secant.backends.errors import SecantError, SecantTypeError, SecantValueError, where
from secant.backends.recursion import recursion_error
from secant.backends.tracer import active_trace
from secant.transformer.parse import opaque
from secant.transformer.properties import computes
from secant.transformer.trace_source import once_in

# what one generated batched function is specialised on (part of its cache key):
# in_axes: ((parameter position, axis), ...) for the batched parameters whose axis is not 0;
# out_axes: an int or None for every output, a tuple of them per returned item, or "free"
# computed: the shape queries (shape, ndim) that objects reaching the function batched may
# compute (a property, a class constant), read through example_shape there: those a caller's
# classes compute, or the call's arguments' (transformer/normalize.py computes_query)
BatchOptions = namedtuple("BatchOptions", "in_axes out_axes axis_name axis_size computed",
                          defaults=(frozenset(),))


def _staged_derivative(fn, error):
    """Whether `error` (a secant error) came from batching the staged form of a function
    secant generated (a derivative)."""
    from secant.backends.errors import SecantError
    from secant.transforms import _unwrap
    code = getattr(_unwrap(fn), "__code__", None)
    return isinstance(error, SecantError) and code is not None and \
        code.co_filename.startswith("<secant")


def _check_axes_spec(in_axes, out_axes):
    for leaf in tree_util.tree_leaves((in_axes, out_axes)):
        if not isinstance(leaf, int) or isinstance(leaf, bool):
            raise SecantTypeError("vmap in_axes and out_axes must hold ints or None, got "
                                  f"{leaf!r}{where()}")


def _positional_params(fun):
    try:
        return [p for p in inspect.signature(fun).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None


def _broadcast_prefix(axes, arg, what):
    """One axis (int or None) per leaf of `arg`, from `axes`, a prefix of arg's structure."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_util.tree_leaves(arg))
    out = []
    try:
        subtrees = tree_util.tree_structure(axes, is_leaf=lambda a: a is None).flatten_up_to(arg)
    except (ValueError, TypeError) as e:
        raise SecantValueError(f"vmap in_axes specification must be a tree prefix of the "
                               f"corresponding value, got specification {axes!r} for value tree "
                               f"{tree_util.tree_structure(arg)} ({what}): {e}{where()}") from None
    for ax, sub in zip(tree_util.tree_leaves(axes, is_leaf=lambda a: a is None), subtrees):
        out += [ax] * len(tree_util.tree_leaves(sub))
    return out


def _at_call(e):
    """An error of the vmapped call (out_axes that do not fit the outputs) at the line of the
    call; from a generated caller (the leaf-wise form's own call, secant/batch.py _leafwise)
    it is left to the call above it to name."""
    here = where()
    if here and "<secant" in here.splitlines()[1]:
        return e
    return SecantValueError(f"{e}{here}")


def _describe(x):
    from secant.numpy.conversion import dtype_weak
    return f"{dtype_weak(x)[0].name}{list(np.shape(x))}"


class _Plan:
    """How one call is batched: per positional argument its batch axis (int, None, or "tree":
    the wrapper moved its leaves to 0), the keyword arguments' names, and the batch size."""

    def __init__(self, args, kwargs, in_axes, fun_name, axis_size):
        if isinstance(in_axes, tuple):
            if len(in_axes) != len(args):
                raise SecantValueError(
                    f"vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                    f"the positional arguments passed to the function, but got "
                    f"len(in_axes)={len(in_axes)}, len(args)={len(args)}{where()}")
            per_arg = list(in_axes)
        else:
            per_arg = [in_axes] * len(args)
        self.axes, self.leaf_axes, sizes = [], [], []
        for i, (arg, axes) in enumerate(zip(args, per_arg)):
            leaves = tree_util.tree_leaves(arg)
            leaf_axes = _broadcast_prefix(axes, arg, f"argument {i}")
            for leaf, ax in zip(leaves, leaf_axes):
                if ax is None:
                    continue
                if callable(leaf) and not hasattr(leaf, "shape"):    # (JAX: not a valid type)
                    raise SecantTypeError(
                        f"vmap: argument {i} holds a {type(leaf).__name__} "
                        f"({getattr(leaf, '__name__', leaf)!r}) where in_axes maps an axis: a "
                        "function has no batch axis; keep it out of the mapped arguments (a "
                        "closure, a meta field / pytree_node=False, or in_axes=None for it)"
                        f"{where()}")
                nd = np.ndim(leaf)
                if not -nd <= ax < nd:
                    raise SecantValueError(
                        f"vmap was requested to map its argument along axis {ax}, which implies "
                        f"that its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is "
                        f"only {nd} (its shape is {np.shape(leaf)}){where()}")
                sizes.append((np.shape(leaf)[ax], i, leaf, ax))
            self.leaf_axes.append(leaf_axes)
            uniform = set(leaf_axes)
            if not leaves or uniform == {None}:
                self.axes.append(None)
            elif len(uniform) == 1 and tree_util.treedef_is_leaf(tree_util.tree_structure(arg)):
                self.axes.append(leaf_axes[0])
            else:
                self.axes.append("tree")
        for k, v in kwargs.items():     # keyword arguments are batched at axis 0, as in JAX
            for leaf in tree_util.tree_leaves(v):
                if np.ndim(leaf) == 0:
                    raise SecantValueError(f"vmap maps keyword argument {k} along axis 0, but "
                                           f"it is a scalar{where()}")
                sizes.append((np.shape(leaf)[0], k, leaf, 0))
        distinct = {s for s, *_ in sizes}
        if len(distinct) > 1:
            lines = "\n".join(
                f"  argument {i if isinstance(i, str) else i} of type {_describe(leaf)} had axis "
                f"{ax} of size {s}" for s, i, leaf, ax in sizes)
            raise SecantValueError(f"vmap got inconsistent sizes for the array axes to be mapped:"
                                   f"\n{lines}{where()}")
        if not sizes and axis_size is None:
            raise SecantValueError("vmap must have at least one non-None value in in_axes, or "
                                   f"be given axis_size{where()}")
        self.size = distinct.pop() if distinct else int(axis_size)
        if axis_size is not None and self.size != axis_size:
            raise SecantValueError(f"vmap got axis_size={axis_size} but the mapped axes have "
                                   f"size {self.size}{where()}")


def _move_leaves(arg, leaf_axes, size):
    """A pytree argument with every leaf's batch axis at 0 (unmapped leaves broadcast)."""
    import secant.numpy as snp
    leaves, treedef = tree_util.tree_flatten(arg)
    out = [snp.broadcast_to(leaf, (size,) + np.shape(leaf)) if ax is None
           else snp.moveaxis(snp.asarray(leaf), ax, 0) for leaf, ax in zip(leaves, leaf_axes)]
    return treedef.unflatten(out)


def _out_spec(out_axes):
    """out_axes as the generated function takes it (int, None or a tuple of them), or None
    when the wrapper moves them itself (a deeper pytree)."""
    if out_axes is None or isinstance(out_axes, int):
        return out_axes
    if isinstance(out_axes, tuple) and all(a is None or isinstance(a, int) for a in out_axes):
        return out_axes
    return 0


def _placed_spec(out_axes):
    """out_axes as the generated function places it leaf by leaf (batching/vectorize.py
    DictAxes: a dict of axes, tuples for tuples and lists) when it is a pytree prefix holding
    None for a leaf inside a dict (`({"w": 0, "n": None},)`: n unbatched beside batched
    leaves, which the leaf-wise form, reading the output whole, cannot tell apart); else None."""
    from secant.batching.vectorize import DictAxes

    def frozen(spec):
        if spec is None or isinstance(spec, int):
            return spec
        if isinstance(spec, dict) and all(isinstance(k, (str, int)) and not isinstance(k, bool)
                                          for k in spec):
            items = [(k, frozen(v)) for k, v in spec.items()]
            return None if any(v is _NO for _, v in items) else DictAxes(items)
        if type(spec) in (tuple, list):
            items = [frozen(v) for v in spec]
            return _NO if any(v is _NO for v in items) else tuple(items)
        return _NO

    def none_in_dict(spec, inside=False):
        if isinstance(spec, dict):
            return any(none_in_dict(v, True) for v in spec.values())
        if type(spec) in (tuple, list):
            return any(none_in_dict(v, inside) for v in spec)
        return spec is None and inside
    if not none_in_dict(out_axes):
        return None
    placed = frozen(out_axes)
    return None if placed is _NO or placed is None else placed


_NO = object()


def _move_out(out, out_axes):
    """Outputs moved to a pytree of out_axes (the generated function returned axis 0)."""
    import secant.numpy as snp
    leaves, treedef = tree_util.tree_flatten(out)
    axes = _broadcast_prefix(out_axes, out, "the outputs")
    return treedef.unflatten(
        [leaf if ax is None or ax == 0 else snp.moveaxis(leaf, 0, ax)
         for leaf, ax in zip(leaves, axes)])


def _bound(fun, args, fixed, names):
    """`fun` with the functions at positions `fixed` bound (static values, as the functions a
    lax.cond takes): a generated function of the other arguments, which vmap reads."""
    from secant.transforms import load_generated
    params = [names[i] if i < len(names) and names[i].isidentifier() else f"arg{i}"
              for i in range(len(args))]
    callee = getattr(fun, "__name__", "")
    callee = callee if callee.isidentifier() and callee not in params else "mapped"
    taken = set(params) | {callee}
    free = {callee: fun}
    for i in fixed:
        name = f"{params[i]}_"
        free[name] = args[i]
        taken.add(name)
        params[i] = (params[i], name)
    own = [p for p in params if isinstance(p, str)]
    call = ", ".join(p if isinstance(p, str) else p[1] for p in params)
    name = f"{getattr(fun, '__name__', 'f')}_of" if getattr(fun, "__name__", "").isidentifier() \
        else "f_of"
    source = f"def {name}({', '.join(own)}):\n    return {callee}({call})\n"
    return load_generated(source, name, {}, free)


def _spec_paths(spec, path=()):
    """The leaves of an in_axes entry given as a pytree prefix (dicts, tuples and lists): a
    list of (path of keys, axis), or None where a node is of another kind (a registered class)
    or a dict key is not a str or int, which the leaf-wise form cannot spell."""
    if spec is None or isinstance(spec, int):
        return [(path, spec)]
    if isinstance(spec, dict):
        if not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in spec):
            return None
        items = sorted(spec.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
    elif type(spec) in (tuple, list):
        items = list(enumerate(spec))
    else:
        return None
    out = []
    for k, sub in items:
        inner = _spec_paths(sub, path + (k,))
        if inner is None:
            return None
        out += inner
    return out


def _leaf_name(param, path, taken):
    name = "_".join([param] + [str(k) for k in path])
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not name.isidentifier():
        name = f"{param}_leaf"
    base, k = name, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _rebuilt(spec, path, names):
    """Source of the value an in_axes prefix `spec` describes, from its leaves' names (a
    dict's keys sorted, as a pytree's are)."""
    if spec is None or isinstance(spec, int):
        return names[path]
    if isinstance(spec, dict):
        items = sorted(spec.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
        return "{" + ", ".join(f"{k!r}: {_rebuilt(v, path + (k,), names)}"
                               for k, v in items) + "}"
    parts = [_rebuilt(v, path + (j,), names) for j, v in enumerate(spec)]
    if type(spec) is list:
        return "[" + ", ".join(parts) + "]"
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _leafwise(fun, in_axes, out_axes, axis_name, axis_size, names):
    """vmap(fun, in_axes, out_axes) with in_axes or out_axes a pytree prefix (a dict of axes
    per leaf, None for a shared leaf) as two generated functions: `fun` of its arguments'
    leaves (their trees rebuilt) returning its output's leaves, mapped with one axis per leaf,
    and the function of the arguments that calls it with their leaves and rebuilds the output,
    which every transform reads. Unmapped leaves stay unmapped (a shared bias is not broadcast;
    its gradient sums over the batch). None where the prefix cannot be spelled (a registered
    pytree class in in_axes)."""
    from secant.transforms import load_generated
    in_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(names)
    if len(in_axes) > len(names) or not all(n.isidentifier() for n in names):
        return None
    names = names[:len(in_axes)]        # (the parameters after them: left at their defaults)
    callee = getattr(fun, "__name__", "")
    callee = callee if callee.isidentifier() and callee not in names else "mapped"
    fname = f"{callee}_of_leaves" if callee != "mapped" else "f_of_leaves"
    taken = set(names) | {callee, fname}
    params, flat_axes, rebuilt, reads = [], [], [], []
    for param, spec in zip(names, in_axes):
        paths = _spec_paths(spec)
        if paths is None:
            return None
        if len(paths) == 1 and paths[0][0] == ():       # an int or None for the whole argument
            params.append(param)
            flat_axes.append(spec)
            rebuilt.append(param)
            reads.append(param)
            continue
        leaf_names = {}
        for path, ax in paths:
            leaf_names[path] = _leaf_name(param, path, taken)
            params.append(leaf_names[path])
            flat_axes.append(ax)
            reads.append(param + "".join(f"[{k!r}]" for k in path))
        rebuilt.append(_rebuilt(spec, (), leaf_names))
    call = f"{callee}({', '.join(rebuilt)})"
    mapped_name = f"{fname}_vmap"
    outer_name = f"{callee}_by_leaves" if callee != "mapped" else "f_by_leaves"
    mapped_call = f"{mapped_name}({', '.join(reads)})"
    if _out_spec(out_axes) == out_axes:         # the generated function places the outputs
        inner_body, outer_body, flat_out = f"    return {call}\n", \
            f"    return {mapped_call}\n", out_axes
    else:                                       # one output per leaf of out_axes
        out_paths = _spec_paths(out_axes)
        if out_paths is None:
            return None
        out = _leaf_name("out", (), taken)
        out_names = {path: _leaf_name(out, path, taken) for path, _ in out_paths}
        flat_out = tuple(ax for _, ax in out_paths)
        leaves = ", ".join(out + "".join(f"[{k!r}]" for k in path) for path, _ in out_paths)
        inner_body = (f"    {out} = out_axes_tree({call}, {out_axes!r})\n"
                      f"    return ({leaves},)\n")
        outer_body = (f"    {', '.join(out_names.values())}, = {mapped_call}\n"
                      f"    return {_rebuilt(out_axes, (), out_names)}\n")
    inner_src = f"def {fname}({', '.join(params)}):\n{inner_body}"
    from secant.ad.custom_checks import out_axes_tree
    inner = load_generated(inner_src, fname, {}, {callee: fun, "out_axes_tree": out_axes_tree})
    mapped = vmap(inner, tuple(flat_axes), flat_out, axis_name, axis_size)
    outer_src = f"def {outer_name}({', '.join(names)}):\n{outer_body}"
    return load_generated(outer_src, outer_name, {}, {mapped_name: mapped})


def _computed_in(values):
    """The shape queries (shape, ndim) that a pytree object among the batched arguments
    `values` (or in their lists, tuples, dicts and objects) computes (a property, a class
    constant): the generated code reads them through example_shape, which refuses such an
    object, where it would read the getter off the batched object (a wrong shape)."""
    out, todo, walked = set(), list(values), 0
    while todo and walked < 1024:
        value = todo.pop()
        walked += 1
        kind = type(value)
        if kind in (list, tuple, dict):
            todo.extend(value.values() if kind is dict else value)
        elif tree_util.is_node_type(kind):
            out.update(q for q in ("shape", "ndim") if computes(kind, q))
            todo.extend(tree_util.flatten_one_level(value)[0])
    return frozenset(out)


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """A function mapping `fun` over an axis of its arguments (JAX's vmap): in_axes says which
    axis of each argument (an int, None for an unmapped argument, or a pytree like the
    arguments), out_axes where the mapped axis goes in the outputs; keyword arguments are mapped
    over axis 0. The batched function is generated source: `secant.source(vmap(f))`.
    spmd_axis_name (mesh axes the mapped axis is sharded over, in JAX) changes no value on one
    device: it is checked and otherwise ignored; it binds no name for collectives, as in JAX."""
    from secant.codegen.display import show_source
    from secant.custom import custom_vmap
    from secant.transformer.properties import reads_computed
    from secant.transforms import (_as_arrays, _current, _note_user_lines, _objects_form,
                                   _op_function, _per_call, _shaped, _unwrap, _variadic,
                                   RetryAnswered, generate, no_refused_tangent, rerun_if_met,
                                   rerun_if_rebound, staged, traced_for_call_instead)
    if isinstance(in_axes, list):   # as JAX: a top-level list is read as a tuple (one entry per
        in_axes = tuple(in_axes)    # positional argument); a nested list stays a list pytree
    _check_axes_spec(in_axes, out_axes)
    if not callable(fun):
        raise SecantTypeError(f"vmap expects a callable, got {fun!r}{where()}")
    if spmd_axis_name is not None and not (isinstance(spmd_axis_name, str) or isinstance(
            spmd_axis_name, tuple) and all(isinstance(n, str) for n in spmd_axis_name)):
        raise SecantTypeError("vmap's spmd_axis_name must be a mesh axis name or a tuple of "
                              f"them, got {spmd_axis_name!r}{where()}")
    base = _op_function(fun)
    params = _positional_params(_unwrap(base)) or []
    op_caller = base is not _unwrap(fun)    # a library op's (or a callable's) calling function
    names = [p.name for p in params]
    # in_axes or out_axes a pytree prefix deeper than one axis per argument or output: what
    # another transform reads is written leaf by leaf (_leafwise)
    flat_in = not (isinstance(in_axes, tuple) and any(
        not (a is None or isinstance(a, int)) for a in in_axes))
    placed = _placed_spec(out_axes) if flat_in else None    # (placed by the generated code)
    leafwise = not flat_in or placed is None and (
        _out_spec(out_axes) != out_axes and (isinstance(in_axes, tuple) or not op_caller))
    # (the parameters a call maps: one per in_axes entry, those after them at their defaults)
    mapped_names = names[:len(in_axes)] if isinstance(in_axes, tuple) else names
    if leafwise and len(mapped_names) < len(names) and any(
            p.default is p.empty for p in params[len(mapped_names):]):
        leafwise = False    # (refused as before: no one function of the arguments)

    def gen_for(plan, kw_names, tracing, args=()):
        nonlocal base
        if base is not fun and not _current(base):   # vmap(grad(f)), what f calls changed
            base = _op_function(fun)            # since (a global traced on each call): again
        # (v - w of user objects v, w: Vec.__sub__, transformer/operators.py)
        fn = _objects_form(fun, args) or _objects_form(base, args) or fun
        plain = fn if fn is not fun else base
        positions, moved = [], []
        for i, ax in enumerate(plan.axes):
            if ax is None:
                continue
            positions.append(i)
            if isinstance(ax, int) and ax != 0:
                moved.append((i, ax))
        for k in kw_names:
            if k not in names:
                raise SecantTypeError(f"vmap of {getattr(fun, '__name__', fun)}: keyword "
                                      f"argument {k} is not a positional parameter{where()}")
            positions.append(names.index(k))
        options = BatchOptions(tuple(moved), placed or _out_spec(out_axes), axis_name,
                               plan.size if not positions else None,
                               _computed_in([args[i] for i in positions if i < len(args)]))
        target = _op_function(staged(fn)) if tracing else plain
        if isinstance(_unwrap(fun), custom_vmap) and options.out_axes == 0:
            target = _unwrap(fun)       # its batched function calls the user's rule itself
        try:
            return generate(target, tuple(sorted(positions)), "vmap", staged=tracing,
                            batch=options)
        except Exception as e:
            if tracing and target is not plain and (getattr(e, "lax_loop_derivative", False)
                                                     or _staged_derivative(plain, e)):
                # jit rolls a derivative's Python loop into a lax loop (preferred: one XLA
                # while loop); where vmap cannot batch that form (a lax.while_loop's
                # derivative, or the unrolled branch kept for a list of weights, which jit
                # functionalises again) batch the derivative as written instead (its loop
                # unrolls while jit traces, as a Python loop does under jax.jit)
                try:
                    return generate(plain, tuple(sorted(positions)), "vmap", batch=options)
                except Exception:
                    raise e from None
            if tracing or not getattr(e, "batched_test", False):
                raise
        # Python `if`/`while` on a batched value, eagerly: batch the functionalised form, where
        # it is a lax.cond (both branches and a select) or a while_loop (run while any continues)
        return generate(_op_function(staged(fn)), tuple(sorted(positions)), "vmap",
                        staged=True, batch=options)

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        # (a function traced on each call is traced once in the call: issue 15, effects once)
        return once_in(call, args, kwargs)

    def call(*args, **kwargs):
        fixed = [i for i, a in enumerate(args) if callable(a) and not hasattr(a, "shape")
                 and isinstance(in_axes, tuple) and i < len(in_axes) and in_axes[i] is None]
        if fixed and not kwargs:    # vmap(lax.cond, (0, None, None, 0))(p, f, g, x): functions
            bound = _bound(fun, args, fixed, names)           # unmapped are static values
            return vmap(bound, tuple(ax for i, ax in enumerate(in_axes) if i not in fixed),
                        out_axes, axis_name, axis_size)(
                *[a for i, a in enumerate(args) if i not in fixed])
        if _variadic(_unwrap(base)) or _per_call(fun):
            # def f(*xs), vmap(g) (g's defaults unmapped): the function for this call's shape
            shaped = _shaped(fun if _per_call(fun) else _unwrap(base), args, kwargs)
            return vmap(shaped, in_axes, out_axes, axis_name, axis_size)(*args, **kwargs)
        args = _as_arrays(args, ())          # NumPy arrays become secant arrays, as in JAX
        kwargs = dict(zip(kwargs, _as_arrays(tuple(kwargs.values()), ())))
        plan = _Plan(args, kwargs, in_axes, getattr(fun, "__name__", "f"), axis_size)
        by_leaves = getattr(batched, "__secant_generated__", None) if leafwise and not kwargs \
            and len(args) == len(mapped_names) else None
        if by_leaves is not None:   # (as another transform reads it: a None out_axis of a
            try:                    # batched output refused, never returned batched)
                return forget_broadcast_ints(no_refused_tangent(by_leaves(*args)))
            except Exception as e:
                if getattr(e, "vmap_call", False):
                    raise _at_call(e) from None
                _note_user_lines(e)
                raise
        args = tuple(_move_leaves(a, la, plan.size) if ax == "tree" else a
                     for a, ax, la in zip(args, plan.axes, plan.leaf_axes))
        plan.axes = [0 if ax == "tree" else ax for ax in plan.axes]
        try:
            gen = gen_for(plan, sorted(kwargs), active_trace() is not None, args)
            if reads_computed(gen, args):   # (an object's __getattr__ computes a name read as
                gen = gen_for(plan, sorted(kwargs), active_trace() is not None, args)  # a field)
            user = fun if base is not fun else base
            try:
                # (a run-time callee that no transform takes: answered from this call's
                # values where it can be, then fun traced whole from the next call)
                def run(g):
                    return g, g(*args, **kwargs)

                def again():        # (a callee rebound, a class met, while it ran)
                    return run(gen_for(plan, sorted(kwargs), active_trace() is not None, args))

                with RetryAnswered(user) as answered:
                    gen, out = rerun_if_met(lambda: run(gen), again)
                    out = rerun_if_rebound(gen, out, again, fun)
                answered.escalated()
            except SecantError as e:
                # a callee known only at run time that no transform takes: fun traced whole,
                # with the call's arguments, instead (secant/transforms.py)
                if not traced_for_call_instead(user, e):
                    raise
                gen = gen_for(plan, sorted(kwargs), active_trace() is not None, args)
                out = gen(*args, **kwargs)
        except RecursionError as e:
            err = recursion_error(e, "vmap")
            if err is None:
                raise
            raise err from None
        except Exception as e:
            if getattr(e, "vmap_call", False):      # (out_axes out of range): at this call
                raise _at_call(e) from None
            _note_user_lines(e)
            raise
        if _out_spec(out_axes) != out_axes and placed is None:
            out = _move_out(out, out_axes)
        # (a Python int it broadcast: an array out here)
        return forget_broadcast_ints(no_refused_tangent(out))

    def default_gen(tracing=False):
        """The batched function for positional arguments mapped as in_axes says (what
        secant.source shows, and what another transform reads)."""
        if not isinstance(in_axes, (int, tuple)) and in_axes is not None:
            return None
        if leafwise:
            return _leafwise(fun, in_axes, out_axes, axis_name, axis_size, names)
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(names)
        if len(axes) != len(names) or any(not (a is None or isinstance(a, int)) for a in axes):
            return None
        if all(a is None for a in axes) and axis_size is None:
            return None
        if op_caller and not isinstance(in_axes, tuple):    # vmap(snp.sum): its arrays mapped,
            axes = [None if p.default is not p.empty else a     # its options (axis=None)
                    for p, a in zip(params, axes)]              # left as their defaults
        plan = _Plan.__new__(_Plan)
        plan.axes, plan.size = list(axes), axis_size
        return gen_for(plan, [], tracing)

    def call_gen(n_args, kw_names):
        """The batched function a call `vmap(f)(x)` with `n_args` positional arguments and
        keywords `kw_names` runs, for a transform that reads the call: parameters left at their
        defaults are not mapped (as the call maps only what it passes); None where unsure."""
        if _per_call(fun):          # vmap(vmap(g)): the outer one of the inner for this call
            inner = fun.__secant_call_gen__(n_args, kw_names)
            return None if inner is None else vmap(
                inner, in_axes, out_axes, axis_name, axis_size).__secant_call_gen__(
                n_args, kw_names)
        if not isinstance(in_axes, (int, tuple)) and in_axes is not None or _variadic(
                _unwrap(base)) or n_args > len(names) or any(k not in names for k in kw_names):
            return None
        if leafwise:
            return None if kw_names or n_args != len(mapped_names) else _leafwise(
                fun, in_axes, out_axes, axis_name, axis_size, names)
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * n_args
        if len(axes) != n_args or any(not (a is None or isinstance(a, int)) for a in axes):
            return None
        if all(a is None for a in axes) and not kw_names and axis_size is None:
            return None
        plan = _Plan.__new__(_Plan)
        plan.axes, plan.size = list(axes), axis_size
        return gen_for(plan, sorted(kw_names), False)

    # (wraps copied fun's own attributes: another transform must never read fun in its place)
    opaque(batched, f"secant cannot transform {batched.__name__} again: vmap with in_axes "
           "or out_axes given leaf by leaf through a namedtuple or a registered pytree class "
           "has no batched source before it sees its arguments; give them as dicts, tuples "
           "and lists of ints and None, or apply the transform inside vmap")
    try:
        gen = default_gen()
    except Exception as e:      # reported when the function is called, as JAX does
        gen = None
        batched.__secant_source_error__ = e     # and by secant.source, instead of f's source
    if gen is not None:
        batched.__secant_generated__ = gen
        batched.__wrapped__ = gen
        batched.__name__ = batched.__qualname__ = gen.__name__
    batched.__secant_staged__ = lambda: default_gen(True) or batched
    batched.__secant_vmap__ = True
    if _variadic(_unwrap(base)):    # another transform of it: the vmap for its call's shape
        batched.__secant_variadic__ = lambda args, kwargs: vmap(
            _shaped(_unwrap(base), args, kwargs), in_axes, out_axes, axis_name, axis_size)
    batched.__secant_call_gen__ = call_gen
    axes = in_axes if isinstance(in_axes, tuple) else [
        None if op_caller and p.default is not p.empty else in_axes for p in params]
    batched.__secant_reads__ = (base, [i for i, a in enumerate(axes) if a is not None], "vmap")
    return show_source(batched)


vmap.__secant_factory__ = "in_axes"      # `vmap(f, ...)(x)` in code a transform reads is read as the
                                    # call of the generated batched function
