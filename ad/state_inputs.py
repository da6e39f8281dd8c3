"""Python state a callee reads, passed into its vjp (issue 15): JAX's eager grad runs the user's
Python once, and each call of a counter's function reads the counter as it then is. secant's
reverse pass runs a callee's vjp after the whole forward pass, which recomputes the callee:
reading its counter there would read the value the last call left. So a caller differentiated
at the top (grad, value_and_grad) reads the state each call read, right where the call read it,
and passes it to the callee's vjp, whose reads of the state are parameters:

    gstep_out = gstep(x)                        def gstep_vjp(sum_bar, x, calls):
    calls = read_global('calls')                    ... snp.sin(x) * calls ...
    gstep_out_1 = gstep(x)
    calls_1 = read_global('calls')
    ...
    x_bar = gstep_vjp(g, x, calls_1)

A state the callee reads after setting it (global_writes._settled) is read after the call; one
it reads before (a local read on entry) before the call. A value the caller itself reads of
that state before the last such call (`x * calls`) is bound to a name there, so its rule reads
that value. Only a callee whose every read of its state is its own (no callee of its own
reaches state, no lax control flow, no attribute counter) is passed its state this way; the
others stay with ad/reverse.py's refusal (_check_state_replayable)."""
import inspect
import re

from secant.transformer import ir
from secant.transformer.nonlocals import reaches_state, state_callee, state_names, \
    writes_state
from secant.transformer.ops import CONTROL_FLOW

_READ = re.compile(r"\bread_(global|cell)\w*\('(\w+)'\)")
_WRITE = re.compile(r"^write_(?:global|cell)\w*\('(\w+)'")
_FIELD_SET = re.compile(r"^[\w.]+\.\w+\s*=[^=]")


class NotStateLeaf(Exception):
    """The callee's state cannot be passed in (state_params): its caller refuses as before."""


def state_params(fn, names):
    """Rewrite the canonical form `fn` of a function that sets state so that each read of its
    state (global_writes.py's `read_global('calls')`, `read_cell('n')`) is a parameter:
    [(parameter, "global" | "cell", the state's name, "entry" | "exit")], appended to
    fn.params. Raises NotStateLeaf where that is not all it reads of state."""
    params, written = {}, set()

    def swap(text):
        def one(m):
            kind, name = m.group(1), m.group(2)
            when = "exit" if name in written else "entry"
            key = (kind, name)
            if key in params and params[key][1] != when:
                raise NotStateLeaf("read before and after its update")
            if key not in params:
                params[key] = (names.fresh(name), when)
            return params[key][0]
        return _READ.sub(one, text)

    def operand(o):
        if isinstance(o, ir.Expr):
            return ir.Expr(swap(o.src))
        if isinstance(o, ir.Seq):
            return ir.Seq(tuple(operand(i) for i in o.items), o.kind, o.keys)
        return o

    for s in ir.nested(fn.body):
        if isinstance(s, ir.Op):
            if s.op in CONTROL_FLOW or s.op == "call" and reaches_state(s.callee) or \
                    s.op == "call" and not inspect.isfunction(s.callee):
                raise NotStateLeaf("a callee or branch of its own")
            s.operands = {k: operand(o) for k, o in s.operands.items()}
            s.statics = {k: swap(v) if isinstance(v, str) else v for k, v in s.statics.items()}
        elif isinstance(s, ir.Plain):
            if s.stack:
                raise NotStateLeaf("a loop stack")
            if s.effect:
                hit = _WRITE.match(s.code.strip())
                if hit:
                    written.add(hit.group(1))
                elif _FIELD_SET.match(s.code.strip()):
                    raise NotStateLeaf("an attribute counter")
                continue
            s.code = swap(s.code)
        elif isinstance(s, ir.If):
            s.test = swap(s.test)
        elif isinstance(s, ir.For):
            s.iterable = swap(s.iterable)
        elif isinstance(s, ir.While):
            s.test = swap(s.test)
    fn.result.value = operand(fn.result.value)
    out = [(p, kind, name, when) for (kind, name), (p, when) in params.items()]
    fn.params = list(fn.params) + [p for p, *_ in out]
    return out


_READERS = {}       # (kind, id of the namespace) -> (what keeps it alive, its reader)


def _reader(callee, kind):
    """A function reading the state of `callee` by name: its module's globals, or its cells."""
    from secant.transformer.global_writes import _Cells, _reader as make
    if kind == "global":
        space = callee.__globals__
        key = (kind, id(space))
    else:
        space = _Cells(dict(zip(callee.__code__.co_freevars, callee.__closure__ or ())))
        key = (kind, tuple(id(c) for c in callee.__closure__ or ()))
    hit = _READERS.get(key)
    if hit is None:
        if len(_READERS) > 1024:
            _READERS.clear()
        hit = _READERS[key] = (callee.__globals__ if kind == "global" else callee.__closure__,
                               make(space, f"read_{kind}"))
    return hit[1]


def pass_state(fn, names, vjp_of_callee):
    """In the canonical form `fn` of a function differentiated at the top (grad), the calls of
    functions that set state whose vjps take that state (state_params): each call's state read
    where it read it, bound to a name (a statement added before or after it), and each of the
    caller's own reads of that state before the last of them bound to a name where it reads it.
    Returns {id(call): (the vjp's name, [the names passed it], [its parameters taking them])};
    a call with no argument the derivative follows: (None, [], [])."""
    passed = {}
    body = fn.body
    k = 0
    while k < len(body):
        op = body[k]
        k += 1
        if not (isinstance(op, ir.Op) and op.op == "call" and inspect.isfunction(op.callee)
                and writes_state(op.callee)) or any(
                getattr(op.callee, a, None) for a in (
                    "__secant_custom__", "__secant_dispatch__", "__secant_dispatched__",
                    "__secant_batched_dispatch__")):
            continue
        active = _active(op)
        if active is None:
            continue
        if not active:
            passed[id(op)] = (None, [], [])
            continue
        try:
            name = vjp_of_callee(op.callee, active, "vjp_state")
        except NotStateLeaf:
            continue
        spec = vjp_of_callee.generated[name].__secant_state_params__
        before, after, args = [], [], []
        for param, kind, state, when in spec:
            var = names.fresh(state)
            reader = vjp_of_callee(_reader(op.callee, kind), None, None)
            line = ir.Plain(f"{var} = {reader}({state!r})", {var}, op.origin)
            (before if when == "entry" else after).append(line)
            args.append(var)
        body[k - 1:k] = before + [op] + after
        k += len(before) + len(after)
        passed[id(op)] = (name, args, [p for p, *_ in spec])
    if passed:
        _bind_own_reads(fn, passed, names)
    return passed


def called_object(op, fn):
    """What the call `op` of the canonical form `fn` calls, for the state it may set: its
    callee, or for a callable object the form calls through dynamic_call
    (`dynamic_call(type(m).__call__, m, x)`), that object where `m` is a global or closure
    variable of the function (read now, as the call will); None where it is not known."""
    callee = getattr(op, "callee", None)
    if callee is next:      # (next(it) of an iterator fn keeps: state; next(iter(d)): none)
        return callee if _kept_iterator(op.operands.get("arg0"), fn) else None
    if getattr(callee, "__name__", None) != "dynamic_call":
        return callee
    head, obj = (op.operands.get(k) for k in ("arg0", "arg1"))
    hit = re.fullmatch(r"type\((\w+)\)\.__call__", getattr(head, "src", ""))
    user = getattr(fn, "function", None)
    if not hit or getattr(obj, "src", None) != hit.group(1) or user is None or \
            hit.group(1) not in getattr(fn, "free_names", ()):
        return None
    name = hit.group(1)
    cells = dict(zip(getattr(user, "__code__", None) and user.__code__.co_freevars or (),
                     getattr(user, "__closure__", None) or ()))
    try:
        return cells[name].cell_contents if name in cells else user.__globals__[name]
    except (KeyError, ValueError, AttributeError):
        return None


def _kept_iterator(operand, fn):
    """Whether `operand` of the canonical form `fn` names an iterator the user's function keeps
    in a global or closure cell (nonlocals._iterator)."""
    from secant.transformer.nonlocals import _iterator
    user = getattr(fn, "function", None)
    name = getattr(operand, "src", None)
    if user is None or not isinstance(name, str) or not name.isidentifier() \
            or name in getattr(fn, "locals", set()):
        return False
    cells = dict(zip(getattr(user, "__code__", None) and user.__code__.co_freevars or (),
                     getattr(user, "__closure__", None) or ()))
    try:
        value = cells[name].cell_contents if name in cells else user.__globals__[name]
    except (KeyError, ValueError):
        return False
    return _iterator(value)


def plain_state_callee(st, fn):
    """The user function with Python state (nonlocals.reaches_state) that the Plain statement
    `st` of the canonical form `fn` calls, its value kept as written (`a = Rng.next(rng)`, an
    inactive call: no derivative flows through it), or None. Read from the statement's source:
    each callee a dotted name of the function's globals or closure cells."""
    import ast
    user = getattr(fn, "function", None)
    if not isinstance(st, ir.Plain) or st.effect or user is None or "(" not in st.code:
        return None
    try:
        tree = ast.parse(st.code.strip())
    except SyntaxError:
        return None
    cells = dict(zip(getattr(user, "__code__", None) and user.__code__.co_freevars or (),
                     getattr(user, "__closure__", None) or ()))
    own = getattr(fn, "locals", set())

    def lookup(name):       # (a class the normaliser names, Rng.next(rng), is a global too)
        if name in own:
            raise KeyError(name)
        return cells[name].cell_contents if name in cells else user.__globals__[name]
    for node in ast.walk(tree):
        hit = isinstance(node, ast.Call) and state_callee(node.func, lookup, node.args)
        if hit:
            return hit
    return None


def _active(op):
    """The positions of the call's arguments the derivative follows, or None (unknown)."""
    from secant.ad.reverse import _has_var
    from secant.transformer.callees import signature_of
    try:
        params = list(signature_of(op.callee, follow_wrapped=False).parameters)
        return tuple(sorted(int(k[3:]) if k.startswith("arg") and k[3:].isdigit()
                            else params.index(k) for k, o in op.operands.items()
                            if _has_var(o)))
    except (TypeError, ValueError):
        return None


def _bind_own_reads(fn, passed, names):
    """Each operand of the caller's own ops before the last passed call that reads the state of
    a passed callee, bound to a name before its op (its rule reads that value, not the state
    the calls after it left); refused where such a read is inside an if or a loop."""
    from secant.ad.reverse import _state_mention
    own = getattr(fn, "locals", set())
    ops = [s for s in fn.body if id(s) in passed]
    patterns = [re.compile(_state_mention(n, own)) for s in ops for n in state_names(s.callee)]
    last = max(k for k, s in enumerate(fn.body) if id(s) in passed)
    body = []

    def bound(o, at):
        if isinstance(o, ir.Expr) and any(p.search(o.src) for p in patterns):
            m = next(p.search(o.src) for p in patterns if p.search(o.src))
            var = names.fresh(re.sub(r"\W", "", m.group(0).split(".")[-1].split("'")[-1])
                              or "state")
            body.append(ir.Plain(f"{var} = {o.src}", {var}, at.origin))
            return ir.Expr(var)
        if isinstance(o, ir.Seq):
            return ir.Seq(tuple(bound(i, at) for i in o.items), o.kind, o.keys)
        return o

    for k, s in enumerate(fn.body):
        if k < last and isinstance(s, ir.Op) and id(s) not in passed:
            s.operands = {key: bound(o, s) for key, o in s.operands.items()}
        elif k < last and isinstance(s, (ir.If, ir.For, ir.While)):
            for t in ir.nested([s]):
                texts = [src for o in getattr(t, "operands", {}).values()
                         for src in _texts(o)] + [getattr(t, a, "") or "" for a in (
                             "test", "iterable")]
                if any(p.search(x) for p in patterns for x in texts):
                    name = next(iter(state_names(ops[0].callee))).lstrip(".")
                    where = f"\n  at {t.origin.filename}:{t.origin.line}\n    " \
                        f"{t.origin.text}" if t.origin else ""
                    from secant.ad.reverse import _state_error
                    raise _state_error(
                        f"{name} is read before a function sets it again (a global or "
                        "nonlocal counter), inside an if or a loop: the reverse pass would "
                        "read it after the call changed it; read it after the call, or "
                        "differentiate with secant.jacfwd" + where)
        body.append(s)
    fn.body[:] = body


def _texts(o):
    if isinstance(o, ir.Expr):
        yield o.src
    elif isinstance(o, ir.Seq):
        for i in o.items:
            yield from _texts(i)
