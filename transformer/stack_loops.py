"""A derivative's reverse loops over its loop stacks, read as the pop loops they stand for.

grad's reverse loop of a loop whose iterations push stacks reads them backwards (ad/reverse.py
reversed_loop), with the loop's own iterable when its body reads the loop variable:

    for x in reversed(x_stack):
    for x, y in zip(reversed(x_stack), reversed(y_stack)):
    for i, x in zip(reversed(i_range), reversed(x_stack)):

Transformed again, each is read as the loop it is, popping each stack first thing in the body:

    for _ in range(len(x_stack)):           for i in reversed(i_range):
        x = x_stack.pop()                       x = x_stack.pop()
        y = y_stack.pop()

The pops are marked (transformer/normalize.py stack_pop), so forward mode and batching carry
each value's tangent and batch axis through its stack as the forward loop pushed it. (Read as a
loop over plain lists, x would be a constant to jacfwd and unbatched to vmap.)
"""
import itertools

import gast


def as_pop_loop(stmt, stacks, builtin, taken):
    """The pop loop `stmt` stands for when it reads stacks (names in `stacks`) backwards in a
    form above, else None. builtin(name, func): whether the name `name` is Python's builtin
    `func` there (reversed_2 where a derivative's own name took reversed); taken(): the names
    the function uses (the counter of a loop over stacks alone is none of them)."""
    lists = _reversed_lists(stmt.iter, builtin)
    if lists is None or stmt.orelse:
        return None
    targets = [stmt.target] if len(lists) == 1 else \
        stmt.target.elts if isinstance(stmt.target, gast.Tuple) else None
    if targets is None or len(targets) != len(lists):
        return None
    pops = [(t, a.args[0].id) for t, a in zip(targets, lists) if a.args[0].id in stacks]
    other = [(t, a) for t, a in zip(targets, lists) if a.args[0].id not in stacks]
    if not pops or len(other) > 1 or not all(isinstance(t, gast.Name) for t, _ in pops):
        return None
    if other:                                   # for i in reversed(i_range):
        (target, head), = other
    elif builtin("range", "range") and builtin("len", "len"):  # for _ in range(len(x_stack)):
        names = taken()
        target = gast.Name(next(c for c in ("_" + "_" * k for k in itertools.count())
                                if c not in names), gast.Store(), None, None)
        head = _call("range", _call("len", _load(pops[0][1])))
    else:
        return None
    body = [gast.Assign(targets=[gast.Name(t.id, gast.Store(), None, None)],
                        value=gast.Call(gast.Attribute(_load(a), "pop", gast.Load()), [], []),
                        type_comment=None) for t, a in pops]
    loop = gast.For(target=target, iter=head, body=body + stmt.body, orelse=[],
                    type_comment=None)
    return gast.fix_missing_locations(gast.copy_location(loop, stmt))   # (the new nodes)


def _reversed_lists(it, builtin):
    """[it] of `reversed(a)`, [the reversed(a) call, the reversed(b) call, ...] of
    `zip(reversed(a), reversed(b), ...)` (a, b names), else None."""
    if _is_call(it, "reversed", builtin) and isinstance(it.args[0], gast.Name):
        return [it]
    if not (_is_call(it, "zip", builtin, None) and len(it.args) > 1):
        return None
    lists = [_reversed_lists(a, builtin) for a in it.args]
    return None if any(c is None or len(c) != 1 for c in lists) else [c for c, in lists]


def _is_call(node, func, builtin, arity=1):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and builtin(node.func.id, func) and not node.keywords
            and (arity is None or len(node.args) == arity)
            and not any(isinstance(a, gast.Starred) for a in node.args))


def _load(name):
    return gast.Name(name, gast.Load(), None, None)


def _call(func, arg):
    return gast.Call(_load(func), [arg], [])
