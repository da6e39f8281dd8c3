"""Structured control flow under jit: conditionals and while loops traced into StableHLO
regions (`stablehlo.if`/`case`, `stablehlo.while`), never unrolled.

The branch and body functions are Python callables over pytrees; each is traced once into its
region, whose ops may use values of the enclosing body directly (StableHLO's implicit capture).
Eager code never comes here: secant.lax runs plain Python when values are concrete.
"""
import numpy as np

from secant.backends import dtypes
from secant.backends.core import Tracer
from secant.backends.emitter import ttype
from secant.backends.errors import SecantTypeError, defined_at, where


def _flat(tree):
    from secant.tree_util import tree_flatten
    return tree_flatten(tree)


def _is_unset(leaf):
    """A branch's placeholder for a value only another branch computes (a derivative's residual,
    transformer/functionalize.py's unset_in_branch)."""
    return getattr(leaf, "__secant_undefined__", False)


def _region_outputs(trace, out, what, unset_ok=False):
    leaves, treedef = _flat(out)
    outs = []
    for leaf in leaves:
        if unset_ok and _is_unset(leaf):
            outs.append(leaf)
            continue
        if not (isinstance(leaf, Tracer) or hasattr(leaf, "dtype")
                or isinstance(leaf, (bool, int, float, complex))):
            raise SecantTypeError(f"{what} returned a {type(leaf).__name__}; it must return arrays "
                                  f"or pytrees of arrays{where()}")
        outs.append(trace.lift(leaf))
    return outs, treedef


def describe(treedef, avals):
    return f"{treedef} with " + ", ".join(a.str_short() for a in avals)


def _return(body, values):
    if values:
        body.line(f"stablehlo.return {', '.join(v.name for v in values)} : "
                  f"{', '.join(ttype(v.aval) for v in values)}")
    else:
        body.line("stablehlo.return")


def _region_text(body, block_args=()):
    head = ""
    if block_args:
        head = (body.indent[:-2] + "^bb0(" + ", ".join(f"{a.name}: {ttype(a.aval)}"
                                                       for a in block_args) + "):\n")
    return "{\n" + head + body.text() + "\n" + body.indent[:-4] + "}"


def _result_names(parent, op_text, avals):
    if len(avals) == 1:
        return [parent.op(op_text)]
    if not avals:
        parent.line(op_text)
        return []
    return parent.op_multi(op_text, len(avals))


def cond(trace, index, branches, operands):
    """Trace `branches[index](*operands)` as a StableHLO conditional; returns the output pytree.
    `index` is a traced bool (two branches: true first) or int32 scalar."""
    if not trace.live:          # a predicate leaked from a finished trace
        trace.leaked(index)
    regions, traced = [], []
    for k, fn in enumerate(branches):
        with trace.region() as (body, _):
            outs, treedef = _region_outputs(trace, fn(*operands), "a branch", unset_ok=True)
        regions.append(body)
        traced.append((treedef, outs))
    traced, unset = _join_unset(traced, regions)
    results = []
    for body, (treedef, outs) in zip(regions, traced):
        _return(body, outs)
        results.append((treedef, [o.aval for o in outs]))
    treedef, avals = results[0]
    for k, (other_tree, other_avals) in enumerate(results[1:], 1):
        same = other_tree == treedef and all(
            (a.shape, a.dtype) == (b.shape, b.dtype) for a, b in zip(avals, other_avals))
        if not same:
            names = ("true_fun", "false_fun") if len(branches) == 2 and \
                index.aval.dtype == dtypes.bool_ else [f"branch {i}" for i in range(len(branches))]
            raise SecantTypeError(
                "the branches of cond/switch must return the same structure, shapes and dtypes: "
                f"{names[0]} {defined_at(branches[0])} returns {describe(treedef, avals)} but "
                f"{names[k]} {defined_at(branches[k])} returns {describe(other_tree, other_avals)}"
                + where())
    avals = [a.update(weak_type=all(r[1][i].weak_type for r in results))
             for i, a in enumerate(avals)]
    index = trace.lift(index)
    parent = trace.body
    results_t = ", ".join(ttype(a) for a in avals)
    region_src = ", ".join(_region_text(r) for r in regions)
    if index.aval.dtype == dtypes.bool_:
        op = f'"stablehlo.if"({index.name}) ({region_src}) : ({ttype(index.aval)}) -> ({results_t})'
    else:
        op = (f'"stablehlo.case"({index.name}) ({region_src}) : ({ttype(index.aval)}) -> '
              f"({results_t})")
    names = _result_names(parent, op, avals)
    values = iter(Tracer(trace, a, n, parent) for a, n in zip(avals, names))
    return treedef.unflatten([u if u is not None else next(values) for u in unset])


def _join_unset(traced, regions):
    """A placeholder some branch returns for a value another branch computes becomes zeros of
    that value's shape and dtype in its region (as JAX joins a cond's residuals); one no branch
    computes stays a placeholder outside the conditional. Returns the branches' outputs and,
    per output leaf, the placeholder kept (None for a staged output)."""
    n = max((len(outs) for _, outs in traced), default=0)
    if not any(_is_unset(o) for _, outs in traced for o in outs) or \
            any(len(outs) != n for _, outs in traced):
        return traced, [None] * n
    unset, joined = [], [[] for _ in traced]
    for i in range(n):
        column = [outs[i] for _, outs in traced]
        computed = [o for o in column if not _is_unset(o)]
        if not computed:
            unset.append(column[0])
            continue
        unset.append(None)
        aval = computed[0].aval
        for k, o in enumerate(column):
            if _is_unset(o):
                name = regions[k].constant(np.zeros(aval.shape, dtype=aval.dtype), aval.dtype)
                o = Tracer(computed[0]._trace, aval, name, regions[k])
            joined[k].append(o)
    return [(treedef, outs) for (treedef, _), outs in zip(traced, joined)], unset


class CarryChanged(SecantTypeError):
    """A loop body that changed its carry's structure, shape or dtype."""


def while_loop(trace, cond_fun, body_fun, init):
    """Trace a StableHLO while loop over the pytree `init` (the loop carry).

    As in JAX, a weakly typed carry (a Python scalar) that the body turns into another dtype is
    promoted to the joint dtype and the loop traced again, so `fori_loop(0, n, lambda i, s: s + x,
    0)` with a float32 x carries a float32; any other change of structure, shape or dtype is an
    error naming the user's line."""
    leaves, treedef = _flat(init)
    init_t = [trace.lift(leaf) for leaf in leaves]
    for _ in range(len(init_t) + 1):    # each promotion makes one weak leaf strong
        avals = [t.aval for t in init_t]
        regions = _while_regions(trace, cond_fun, body_fun, treedef, avals)
        promoted = _promote_weak(trace, init_t, regions[-1])
        if promoted is None:
            break
        init_t = promoted
    (cbody, cargs), (bbody, bargs), _ = regions
    parent = trace.body
    types = ", ".join(ttype(a) for a in avals)
    op = (f'"stablehlo.while"({", ".join(t.name for t in init_t)}) '
          f"({_region_text(cbody, cargs)}, {_region_text(bbody, bargs)}) : ({types}) -> "
          f"({types})")
    names = _result_names(parent, op, avals)
    return treedef.unflatten([Tracer(trace, a, n, parent) for a, n in zip(avals, names)])


def _while_regions(trace, cond_fun, body_fun, treedef, avals):
    """Trace cond_fun and body_fun into their regions; returns both and the body's output avals."""
    with trace.region(avals) as (cbody, cargs):
        pred = cond_fun(treedef.unflatten(cargs))
        pred = trace.lift(pred)
        if pred.aval.shape != () or pred.aval.dtype != dtypes.bool_:
            raise SecantTypeError("cond_fun must return a boolean scalar, got "
                                  f"{pred.aval.str_short()}{where()}")
        _return(cbody, [pred])
    with trace.region(avals) as (bbody, bargs):
        outs, out_tree = _region_outputs(trace, body_fun(treedef.unflatten(bargs)), "body_fun")
        out_avals = [o.aval for o in outs]
        if out_tree != treedef or any(
                o.shape != a.shape or (o.dtype != a.dtype and not a.weak_type)
                for o, a in zip(out_avals, avals)):
            raise CarryChanged(
                "the loop carry must keep its structure, shapes and dtypes: it entered as "
                f"{describe(treedef, avals)} and body_fun returned "
                f"{describe(out_tree, out_avals)}" + where())
        _return(bbody, outs)
    return (cbody, cargs), (bbody, bargs), out_avals


def _promote_weak(trace, init_t, out_avals):
    """None when every carry kept its dtype; else the carries with each weakly typed one whose
    dtype changed converted to the dtype JAX's promotion gives it with the body's output."""
    if all(t.aval.dtype == o.dtype for t, o in zip(init_t, out_avals)):
        return None
    from secant.backends.primitives.elementwise import convert_element_type_p
    new = []
    for t, o in zip(init_t, out_avals):
        if t.aval.dtype != o.dtype:
            dt, _ = dtypes.promote((t.aval.dtype, True), (o.dtype, o.weak_type))
            t = trace.emit(convert_element_type_p, [t], {"new_dtype": dt, "weak_type": False})
        new.append(t)
    return new
