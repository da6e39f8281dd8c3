"""Data-flow analyses for reverse mode: record and replay only what the reverse pass reads.

Over the canonical form (transformer/ir.py):
- `shape_witnesses(fn)`: a value read only for its shape (the second argument of
  `unbroadcast(g, v)`) may be read from another with provably the same shape and kind (real or
  complex): `sin(u)` has u's, `u * 2.0` has u's. The reverse pass then need not replay v.
- `unreduced_carries(loop, before)`: a loop carry only added to (`acc = acc + t`, read nowhere
  else) may keep its cotangent unsummed across iterations: every rule it reaches sums down to its
  own operand's shape (unbroadcast of add and subtract), and summing in two steps is summing in
  one. Its start value is then not saved for the reverse pass; the cotangent is summed to the
  carry's shape once, where the loop's start value was copied in (`acc_1 = acc`).
Over generated lines (ad/reverse.py's Line: code, kind, uses, defines):
- `live(lines, live_out)`: adjoint liveness: the replayed statements whose results something
  after them reads (to a fixpoint: a loop reads names assigned further down).
- `to_record(carried, lines)`: the loop values a reverse iteration reads before it assigns
  them: what the forward loop saves on a stack, each iteration.
"""
import ast
import bisect
import contextlib
import functools

from secant.transformer import ir
from secant.transformer.hygiene import walk as _walk
from secant.transformer.shapes import ELEMENTWISE, operands_of

# one array operand, same shape out, complex exactly when the operand is
_SHAPE_KEEPING = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                  "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2",
                  "log10", "log1p", "sqrt", "cbrt", "square", "reciprocal", "logistic", "rsqrt",
                  "erf", "negative", "positive", "identity", "conj"}
_SCALED = {"add", "subtract", "multiply", "true_divide"}    # by a real Python number
_ADDS = {"add", "subtract"}


def _real_number(o):
    if not isinstance(o, ir.Expr):
        return False
    try:
        float(o.src)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=65536)
def _names(src):
    """The names source text mentions (a frozenset: each text parsed once, issue 19), None
    where it does not parse (unknown: reads anything). An index with slices (a getitem's
    `j, :`, `:, j`) is read as one: its names (a column read `x[:, j]` in a loop read as
    reading anything kept the loop's `total = total + ...` summed, its total stacked for its
    shape, issue 20)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        try:
            tree = ast.parse(f"_[{src}]", mode="eval").body.slice
        except SyntaxError:
            return None
    return frozenset(n.id for n in _walk(tree) if isinstance(n, ast.Name))


# while a canonical form is only read (`read_only`): id(statement) -> reads(statement), and
# ("definitions", id(fn)) -> definitions(fn); None outside
_READ_ONLY = [None]


@contextlib.contextmanager
def read_only():
    """Within: each statement's `reads` and each function's `definitions` worked out once, for
    the analyses that read a canonical form nothing changes meanwhile (ReverseBuilder's ask
    of every statement six times over; issue 19). Each answer handed out is a copy."""
    outer = _READ_ONLY[0]
    _READ_ONLY[0] = {}
    try:
        yield
    finally:
        _READ_ONLY[0] = outer


def reads(stmt):
    """{name: how many times} a statement (not its nested blocks) reads; None: unknown."""
    memo = _READ_ONLY[0]
    if memo is None:
        return _reads(stmt)
    key = id(stmt)
    if key not in memo:
        memo[key] = (stmt, _reads(stmt))     # (the statement held: its id not reused)
    got = memo[key][1]
    return None if got is None else dict(got)


def _reads(stmt):
    out = {}

    def add(names):
        for n in names:
            out[n] = out.get(n, 0) + 1
    if isinstance(stmt, ir.Op):
        for o in stmt.operands.values():
            add(v.name for v in flat(o))
            if isinstance(o, ir.Expr):
                names = _names(o.src)
                if names is None:
                    return None
                add(names)
        for src in stmt.statics.values():
            names = _names(src) if isinstance(src, str) else set()
            if names is None:
                return None
            add(names)
    elif isinstance(stmt, ir.Plain):
        names = _names(stmt.code)
        if names is None:
            return None
        add(names - stmt.defines)
    elif isinstance(stmt, ir.Return):
        add(v.name for v in flat(stmt.value))
    elif isinstance(stmt, ir.If):
        add([stmt.test])
    elif isinstance(stmt, ir.While):
        names = _names(stmt.test)
        if names is None:
            return None
        add(names)
    elif isinstance(stmt, ir.For):
        add([stmt.iterable])
    return out


def flat(o):
    if isinstance(o, ir.Var):
        yield o
    elif isinstance(o, ir.Seq):
        for i in o.items:
            yield from flat(i)


def definitions(fn):
    """{name: how many statements of `fn` (ir.Function) assign it}."""
    memo = _READ_ONLY[0]
    if memo is None:
        return _definitions(fn)
    key = ("definitions", id(fn))
    if key not in memo:
        memo[key] = (fn, _definitions(fn))
    return dict(memo[key][1])


def _definitions(fn):
    count = {}
    for s in ir.nested(fn.body):
        targets = s.targets if isinstance(s, ir.Op) else s.defines if isinstance(s, ir.Plain) \
            else [s.target] if isinstance(s, ir.For) else []
        for t in targets:
            count[t] = count.get(t, 0) + 1
    return count


def result_items(fn):
    """The items of each tuple `fn` (ir.Function) may return, one tuple per statement that
    builds it: the returned Seq's, or those of each `pack` assigning the returned name (a
    return in each branch of an `if`, desugared to `result = (v, 2)` in each); None where the
    result is not a tuple built so (a parameter, a call's result), or built with other
    lengths. What each output's activity is read from (ad/forward.py, ad/reverse.py): an item
    no differentiated value flows into in any of them is a constant (a Python int)."""
    result = fn.result.value if fn.result is not None else None
    if isinstance(result, ir.Seq):
        return [result.items]
    if not isinstance(result, ir.Var) or result.name in fn.params:
        return None
    packs = []
    for s in ir.nested(fn.body):
        targets = s.targets if isinstance(s, ir.Op) else s.defines if isinstance(s, ir.Plain) \
            else [s.target] if isinstance(s, ir.For) else []
        if result.name not in targets:
            continue
        if not (isinstance(s, ir.Op) and s.op == "pack" and s.targets == [result.name]
                and isinstance(s.operands.get("items"), ir.Seq)
                and s.operands["items"].kind == "tuple"):
            return None
        packs.append(s.operands["items"].items)
    if not packs or len({len(p) for p in packs}) != 1:
        return None
    return packs


def items_active(fn, active):
    """(each output of `fn` differentiated?) from result_items: an output is where `active`
    says so of its item in some tuple fn returns; None where the result is not read so."""
    packs = result_items(fn)
    if packs is None:
        return None
    return tuple(any(active(p[i]) for p in packs) for i in range(len(packs[0])))


def assigned_once_at_top(fn):
    """The names (in order) that one top-level op of `fn` assigns, assigned nowhere else."""
    count = definitions(fn)
    return [s.targets[0] for s in fn.body if isinstance(s, ir.Op) and len(s.targets) == 1
            and count.get(s.targets[0]) == 1]


def read_once_at_top(fn):
    """{v: (the op assigning it, the op reading it)}: v assigned once, by a top-level op of `fn`, not a parameter,
    and read once in all of `fn` (its result included), by a top-level op. v's cotangent is
    then the one contribution that op's rule gives it, read by v's own rule only: a rule may
    give it unsummed (of a shape v broadcasts to), and v's own rule sum it down. (Two readers
    could give contributions of two shapes that v broadcasts to, whose sum broadcasts to a
    third: summed down once, each would count as often as the other's extra rows. Read in a
    loop or branch, its cotangent's shape would depend on the iteration or the branch.)"""
    count = definitions(fn)
    total, reader = {}, {}
    for s in list(ir.nested(fn.body)) + ([fn.result] if fn.result is not None else []):
        got = reads(s)
        if got is None:
            return {}
        for n, k in got.items():
            total[n] = total.get(n, 0) + k
            reader[n] = s
    top = {id(s) for s in fn.body}
    return {s.targets[0]: (s, reader[s.targets[0]]) for s in fn.body
            if isinstance(s, ir.Op) and len(s.targets) == 1
            and count.get(s.targets[0]) == 1 and s.targets[0] not in fn.params
            and total.get(s.targets[0]) == 1 and isinstance(reader[s.targets[0]], ir.Op)
            and id(reader[s.targets[0]]) in top}


def varied(fn, wrt):
    """The names of `fn` that may depend on the parameters `wrt` (assigned by a statement that
    reads one of them, to a fixpoint: a loop reads what its body assigns further down); all
    of fn's names where a statement cannot be read."""
    out, stmts = set(wrt), list(ir.nested(fn.body))
    changed = True
    while changed:
        changed = False
        for s in stmts:
            got = reads(s)
            targets = s.targets if isinstance(s, ir.Op) else s.defines if isinstance(
                s, ir.Plain) else [s.target] if isinstance(s, ir.For) else []
            if (got is None or got.keys() & out) and not set(targets) <= out:
                out |= set(targets)
                changed = True
    return out


def summed_by_own_rule(fn, summing):
    """Names v read once by a top-level op (read_once_at_top), computed by an op whose rule
    sums the cotangent it is given down to its result's shape (an op in `summing`: a
    matmul): the rule reading v need not sum its contribution to v's shape first."""
    return frozenset(v for v, (op, _) in read_once_at_top(fn).items() if op.op in summing)


def _blocks(stmt):
    """The statements nested in a top-level statement's blocks."""
    if isinstance(stmt, ir.If):
        return stmt.body + stmt.orelse
    if isinstance(stmt, (ir.For, ir.While)):
        return stmt.body
    return []


def shape_witnesses(fn):
    """{v: u}: v is assigned once, from u (a parameter, or assigned once) by an op that keeps
    its operand's shape and kind; u is itself followed to its own witness."""
    count = definitions(fn)
    params = set(fn.params)
    step = {}
    for s in ir.nested(fn.body):
        if not isinstance(s, ir.Op) or len(s.targets) != 1 or count.get(s.targets[0]) != 1:
            continue
        ops = s.operands
        if s.op in _SHAPE_KEEPING and set(ops) == {"x"}:
            u = ops["x"]
        elif s.op in _SCALED and set(ops) == {"x", "y"} and not s.statics and \
                (_real_number(ops["x"]) or _real_number(ops["y"])):
            u = ops["y"] if _real_number(ops["x"]) else ops["x"]
        else:
            continue
        if isinstance(u, ir.Var) and (count.get(u.name) == 1 or
                                      (u.name in params and u.name not in count)):
            step[s.targets[0]] = u.name
    out = {}
    for v in step:
        u, seen = step[v], {v}
        while u in step and u not in seen:
            seen.add(u)
            u = step[u]
        out[v] = u
    return out


_SCALAR_REDUCTIONS = {"sum", "mean", "max", "min", "prod"}


def scalar_like(fn, name, shapes, params, containers=frozenset(), calls=None, scaled=None):
    """A name whose dtype `name` provably has, as a scalar (transformer/shapes.py gives the
    shapes): `name` is a reduction over every axis of a value `a` (or of reductions of `a` over
    some axes), or an elementwise op of such scalars and real Python numbers; each name
    assigned once, at the top level. `a` is the
    broadcast of one set of symbols among which is one of `params` (inexact arrays: grad's
    differentiated ones); the name is a parameter of that set alone, else the first value
    assigned once at the top level with that same set. Elementwise ops of values and real
    Python numbers (weakly typed) give the values' promoted dtype, inexact when one of them is,
    whatever the ops: so both have the same dtype. grad's seed then needs only that name's
    dtype, not the output. Or, for a reduction of one value through ops that keep its dtype
    (`snp.sum(hs * hs)`), that value (_same_dtype_source), not one of `containers` (names
    that may hold lists or dicts). Or, for a call of a user function whose own analysis proves
    its output such a scalar (`calls`: _through_call), the names whose dtypes promote to it.
    With `scaled` (a list), an elementwise op's operand may also be a sum, difference or
    product of one name bound at the top level (of a shape not known) and real Python numbers
    (`0.5 * k * snp.sum(q * q)`), appended to `scaled` where the answer reads it: the output is
    then a scalar only where that name is one, which grad's seed checks (grad_seed_scaled), and
    has the dtype the answer and that name promote to. Else None."""
    count = definitions(fn)
    ops = {s.targets[0]: s for s in fn.body if isinstance(s, ir.Op) and len(s.targets) == 1
           and count.get(s.targets[0]) == 1}
    top = ({t for s in fn.body if isinstance(s, ir.Op) for t in s.targets
            if count.get(t) == 1} | (set(fn.params) - set(count))) - set(containers)
    #       (arrays bound once, at the top level)
    number = frozenset({frozenset()})

    def reduced(a):
        """What a reduction over some axes (`snp.sum(a, axis=1)`, its dtype a's: a is inexact)
        reduces, followed down: a full reduction of it reduces that value over every axis."""
        op = ops.get(a.name)
        while op is not None and op.op in _SCALAR_REDUCTIONS and set(op.operands) == {"a"} \
                and isinstance(op.operands["a"], ir.Var) and set(op.statics) <= {"axis",
                                                                                "keepdims"}:
            a = op.operands["a"]
            op = ops.get(a.name)
        return a

    def like(n, seen):
        op = ops.get(n)
        if op is None or n in seen:
            return None
        seen.add(n)
        if op.op in _SCALAR_REDUCTIONS:
            a = op.operands.get("a")
            if set(op.operands) != {"a"} or not isinstance(a, ir.Var) or any(
                    (k, str(v).strip()) not in (("axis", "None"), ("keepdims", "False"))
                    for k, v in op.statics.items()):
                return None
            a = reduced(a)
            alts = shapes.of(a)
            if not alts or len(alts) != 1 or not next(iter(alts)) & set(params):
                return None
            p = shapes.parameter_like(a.name)
            return p if p is not None else next(
                (n for n in assigned_once_at_top(fn) if shapes.alts.get(n) == alts), None)
        if op.op not in ELEMENTWISE:
            return None
        found = set()
        for o in operands_of(op):
            if shapes.of(o) == number and (isinstance(o, ir.Var) or
                                           _real_number(o) or _names(o.src) == set()):
                continue            # (a literal, a shape query, a Python-number name)
            k = _scaling_name(o, top) if scaled is not None else None
            if k is not None:
                factors.add(k)      # (its shape the output's: grad_seed_scaled checks it)
                continue
            p = like(o.name, seen) if isinstance(o, ir.Var) else None
            if p is None:
                return None
            found.add(p)
        return found.pop() if len(found) == 1 else None
    factors = set()
    out = like(name, set())
    if out is not None and len(factors) > 1:
        out = None                  # (grad_seed_scaled checks one name's shape)
    if out is None:
        factors = set()
        out = _same_dtype_source(ops.get(name), ops, top) or \
            _through_call(ops.get(name), ops, top, set(params), calls)
    if out is not None and _reduced_only(fn, out):  # an op of values computed only for it:
        out = _promoted_from(out, ops, top, set(params)) or \
            _promoted_operands(out, ops, top, set(params)) or out  # their result_type
    if out is not None and factors:
        if ", " in out and not out.startswith("snp.result_type("):
            out = f"snp.result_type({out})"
        scaled.extend(factors)
    like = None    # (it names itself: freed now, with the IR it holds, not by the cyclic collector)
    return out


_SCALING_OPS = (ast.Add, ast.Sub, ast.Mult)


def _scaling_name(o, top):
    """The one name an expression operand `o` combines with real Python numbers by +, - and *
    alone (`0.5 * k`), a name in `top` (an array bound once at the top level, or a parameter),
    else None: the expression then has that name's shape and, with a scalar of an inexact
    dtype, promotes as the name does (no true_divide: of integers it would be a float)."""
    if not isinstance(o, ir.Expr):
        return None
    try:
        tree = ast.parse(o.src.strip(), mode="eval").body
    except SyntaxError:
        return None
    names = set()
    stack = [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, _SCALING_OPS):
            stack += [n.left, n.right]
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            stack.append(n.operand)
        elif isinstance(n, ast.Name) and n.id in top:
            names.add(n.id)
        elif not (isinstance(n, ast.Constant) and type(n.value) in (int, float)):
            return None
    return names.pop() if len(names) == 1 else None


# reductions whose result has their operand's dtype where grad's seed accepts it (an inexact
# one; an integer or bool operand gives an integer, which grad_seed refuses as it refuses the
# operand itself), and ops of one value that keep its dtype whatever it is (x * x, x + x, -x)
_DTYPE_REDUCTIONS = {"sum", "max", "min", "prod"}
_DTYPE_KEEPING = {"multiply", "add", "subtract", "negative", "positive", "conj"}
# ops whose result is inexact whatever their operands (integers and bools give floats), and
# ops whose result is inexact where one operand is (JAX's promotion: a float or complex operand
# makes the result one, a weakly typed float number too); mean keeps an inexact operand's dtype
_INEXACT_RESULT = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                   "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2",
                   "log10", "log1p", "sqrt", "cbrt", "logistic", "true_divide", "mean"}
_INEXACT_IF_ONE_IS = {"add", "subtract", "multiply", "negative", "positive", "conj", "maximum",
                      "minimum", "power", "square", "identity", "sum", "max", "min", "prod",
                      "matmul", "dot", "vdot", "inner", "outer", "tensordot"}


def _inexact(name, ops, seen=None, known=frozenset(), calls=None):
    """Whether the value `name` is provably inexact (float or complex): computed by an op of
    _INEXACT_RESULT, or of _INEXACT_IF_ONE_IS with an inexact operand (a float literal
    included), or by a call whose callee's own analysis proves its output inexact (`calls`:
    op -> (output_dtype's answer, the call's operands by parameter), or None). Each name bound
    once, at the top level (`ops`)."""
    seen = set() if seen is None else seen
    if name in known:       # (grad's differentiated parameters)
        return True
    op = ops.get(name)
    if op is None or name in seen:
        return False
    seen.add(name)
    if op.op in _INEXACT_RESULT:
        return True
    if op.op == "call" and calls is not None:
        got = calls(op)
        return bool(got and got[0]["inexact"])
    return op.op in _INEXACT_IF_ONE_IS and any(
        _inexact(o.name, ops, seen, known, calls) if isinstance(o, ir.Var) else
        _float_literal(o) for o in op.operands.values())


# ops that give an inexact dtype D where each operand has D or is a real Python number (weakly
# typed: it changes no inexact dtype), and reductions of a value of an inexact dtype D over some
# axes, whose result has D
_DTYPE_OF_OPERANDS = (_INEXACT_RESULT - {"mean"}) | {
    "add", "subtract", "multiply", "negative", "positive", "conj", "maximum", "minimum",
    "power", "square", "identity"}


def dtype_root(name, ops, known=frozenset(), calls=None):
    """The value that provably has the dtype of the value `name`, followed back through ops
    of _DTYPE_OF_OPERANDS whose operands are real Python numbers and values all of that one
    dtype, and through reductions (sum, max, min, prod, mean over some axes, no dtype given):
    the value they all come from, provably inexact (_inexact; `known`: grad's differentiated
    parameters), so that each op keeps its dtype (JAX's promotion: a float's or a complex's
    with weakly typed real numbers). softmax's `logp = z - snp.log(snp.sum(snp.exp(z), ...))`,
    `z = logits - snp.max(logits, ...)`: logits. `name` itself where no op is followed. Each
    op one bound once at the top level (`ops`)."""
    roots = {}

    def root(n):
        if n in roots:
            return roots[n]
        roots[n] = n                            # (while it is worked out)
        op = ops.get(n)
        if op is None or op.statics and not (
                op.op in _SCALAR_REDUCTIONS and set(op.statics) <= {"axis", "keepdims"}):
            return n
        if op.op not in _DTYPE_OF_OPERANDS and not (
                op.op in _SCALAR_REDUCTIONS and set(op.operands) == {"a"}):
            return n
        found = set()
        for o in op.operands.values():
            if isinstance(o, ir.Expr) and o.src.strip().isidentifier():
                o = ir.Var(o.src.strip())
            if isinstance(o, ir.Var):
                found.add(root(o.name))
            elif not _real_number(o):
                return n
        if len(found) != 1:
            return n
        r, = found
        if not _inexact(r, ops, known=known, calls=calls):
            return n
        roots[n] = r
        return r
    return root(name)


def dtype_alike(name, ops, known=frozenset(), calls=None):
    """The values that provably have the value `name`'s dtype by dtype_root: those its
    dtype is followed back through (each with the same root), nearest first, the root last;
    [] where none (`name` is its own root)."""
    root = dtype_root(name, ops, known, calls)
    if root == name:
        return []
    out, todo, seen = [], [name], {name}
    while todo:
        n = todo.pop(0)
        op = ops.get(n)
        for o in (op.operands.values() if op is not None and n != root else ()):
            if isinstance(o, ir.Expr) and o.src.strip().isidentifier():
                o = ir.Var(o.src.strip())
            if isinstance(o, ir.Var) and o.name not in seen and \
                    dtype_root(o.name, ops, known, calls) == root:
                seen.add(o.name)
                out.append(o.name)
                todo.append(o.name)
    return [n for n in out if n != root] + [root]


def _top_ops(fn):
    """{name: its op}: the ops of fn's top level whose one target is assigned once."""
    count = definitions(fn)
    return {s.targets[0]: s for s in fn.body if isinstance(s, ir.Op) and len(s.targets) == 1
            and count.get(s.targets[0]) == 1}


def _full_reduction(op):
    return op is not None and set(op.operands) == {"a"} and all(
        (k, str(v).strip()) in (("axis", "None"), ("keepdims", "False"))
        for k, v in op.statics.items())


def output_dtype(fn):
    """What fn's own canonical form proves of its output's dtype, for a caller's grad seed
    (scalar_like through a call of fn: its caller need not compute the output for the seed):
    {"inexact": the output is inexact whatever the arguments (_inexact: `tanh(...)`),
    "scalar_of": parameters p such that the output is a scalar (0-d) of the dtype they promote
    to, snp.result_type(*p), wherever one of them is inexact, else None}. scalar_of: the output
    is a full reduction (sum, max, min, prod, mean; through ops of one value that keep its
    dtype: `-snp.mean(...)`) of reductions and such ops of a value u, u an add, subtract or
    multiply of parameters, of such values and of real Python numbers (weakly typed: no
    inexact dtype changes), each assigned once at the top level (`diff = pred - target;
    return snp.mean(diff * diff)`: pred and target). An inexact u keeps its dtype through
    every such reduction, a mean's included. scalar_of only for a body of ops alone, none a
    call (no Python statement, no callee: nothing with an effect a caller that no longer
    calls fn for the seed would leave out). None where the output is no name."""
    result = fn.result.value if fn.result is not None else None
    if not isinstance(result, ir.Var):
        return None
    ops = _top_ops(fn)
    plain = all(isinstance(s, ir.Op) and s.op != "call" for s in ir.nested(fn.body))
    params = set(fn.params) - set(definitions(fn))

    def leaves(n, seen):
        if n in params:
            return {n}
        op = ops.get(n)
        if op is None or n in seen or op.op not in ("add", "subtract", "multiply") or \
                op.statics:
            return None
        seen.add(n)
        out = set()
        for o in op.operands.values():
            if isinstance(o, ir.Expr) and o.src.strip().isidentifier():
                o = ir.Var(o.src.strip())       # (a parameter not differentiated: by name)
            if isinstance(o, ir.Var):
                got = leaves(o.name, seen)
                if got is None:
                    return None
                out |= got
            elif not _real_number(o):
                return None
        return out
    op = ops.get(result.name)
    while op is not None and op.op in _DTYPE_KEEPING and not op.statics and \
            len(set(op.operands.values())) == 1:
        u, = set(op.operands.values())
        op = ops.get(u.name) if isinstance(u, ir.Var) else None
    scalar = None
    if plain and op is not None and op.op in _DTYPE_REDUCTIONS | {"mean"} and \
            _full_reduction(op):
        u = None
        while op is not None:
            if op.op in _DTYPE_REDUCTIONS | {"mean"} and set(op.operands) == {"a"} and \
                    set(op.statics) <= {"axis", "keepdims"}:
                u = op.operands["a"]
            elif op.op in _DTYPE_KEEPING and not op.statics and \
                    len(set(op.operands.values())) == 1:
                u, = set(op.operands.values())
            else:
                break
            op = ops.get(u.name) if isinstance(u, ir.Var) else None
        found = leaves(u.name, set()) if isinstance(u, ir.Var) else None
        scalar = tuple(p for p in fn.params if p in found) if found else None
    return {"inexact": _inexact(result.name, ops), "scalar_of": scalar}


def _through_call(op, ops, top, known, calls):
    """Source of the dtype of a call's output that its callee's analysis (output_dtype) proves
    a scalar of the dtype its arguments for some parameters promote to, one of them provably
    inexact here: `_layer_out, target` for `_mse(_layer_out, target)` (grad_seed_like's two
    names; snp.result_type of more). Each argument a name bound at the top level; else None."""
    got = calls(op) if op is not None and op.op == "call" and calls is not None else None
    if not got or not got[0]["scalar_of"]:
        return None
    summary, args = got
    names = []
    for p in summary["scalar_of"]:
        o = args.get(p)
        if isinstance(o, ir.Expr) and o.src.strip().isidentifier():
            o = ir.Var(o.src.strip())
        if not isinstance(o, ir.Var) or o.name not in top:
            return None
        names.append(o.name)
    names = list(dict.fromkeys(names))
    if not any(_inexact(n, ops, known=known, calls=calls) for n in names):
        return None
    return ", ".join(names) if len(names) <= 2 else f"snp.result_type({', '.join(names)})"


def _float_literal(o):
    return _real_number(o) and not o.src.strip().lstrip("+-").isdigit()


def _same_dtype_source(op, ops, top):
    """For grad's output computed by `op` (through ops of one value that keep its dtype, of a
    scalar a scalar: `-snp.sum(...)`), a reduction of _DTYPE_REDUCTIONS over every axis, or a
    mean of a provably inexact value (_inexact): the value u it reduces through such reductions
    and ops of one value that keep its dtype (`snp.sum(hs * hs)`: hs), u bound once at the top
    level. grad's seed from u's dtype (grad_seed_like) is then the seed from the output's, its
    checks included, whatever u's dtype; else None. (Not for an op of such a reduction and a
    number: `snp.sum(n) / 2.0` of integers n is a float.)"""
    while op is not None and op.op in _DTYPE_KEEPING and not op.statics and \
            len(set(op.operands.values())) == 1:
        u, = set(op.operands.values())
        op = ops.get(u.name) if isinstance(u, ir.Var) else None

    def reduces(op):
        return op is not None and (op.op in _DTYPE_REDUCTIONS or op.op == "mean" and isinstance(
            op.operands.get("a"), ir.Var) and _inexact(op.operands["a"].name, ops))
    if not reduces(op) or any((k, str(v).strip()) not in (("axis", "None"), ("keepdims", "False"))
                              for k, v in op.statics.items()):
        return None
    while reduces(op) or op is not None and op.op in _DTYPE_KEEPING:
        if op.op in _DTYPE_KEEPING:
            vals = set(op.operands.values())
            if len(vals) != 1 or op.statics:
                break           # (an op of two values: its result is the value reduced)
            u, = vals
        else:
            if set(op.operands) != {"a"} or not set(op.statics) <= {"axis", "keepdims"}:
                return None
            u = op.operands["a"]
        if not isinstance(u, ir.Var):
            return None
        op = ops.get(u.name)
    return u.name if u.name in top else None


_PROMOTING = {"multiply", "add", "subtract", "true_divide"}


def _reduced_only(fn, name):
    """Whether every op reading `name` is a sum or mean, whose rules do not read their
    operand's value: then `name` is computed for the seed only, and reading the dtype of its
    operands instead (_promoted_from) saves computing it. (A value the reverse pass reads,
    err in snp.mean(err * err), is computed anyway: the seed reads it.)"""
    readers = [s for s in ir.nested(fn.body) if isinstance(s, ir.Op) and any(
        isinstance(o, ir.Var) and o.name == name for o in operands_of(s))]
    return bool(readers) and all(s.op in ("sum", "mean") for s in readers)


def _promoted_from(name, ops, top, inexact):
    """Source whose dtype is provably that of the value `name`, an op of _PROMOTING of two
    operands one of which is an op of _INEXACT_RESULT of a provably inexact value v (snp.sin(v):
    v's dtype), without computing that op: the operands' result_type (JAX's promotion, as the op
    promotes), v for it, the other a name bound at the top level (a real Python number, weakly
    typed, left out: it changes no inexact dtype). `inexact`: names known inexact (grad's
    differentiated parameters). Else None."""
    op = ops.get(name)
    if op is None or op.op not in _PROMOTING or op.statics or len(op.operands) != 2:
        return None

    def known_inexact(n):
        return _inexact(n, ops, known=inexact)
    parts, saved = [], False
    for o in op.operands.values():
        if not isinstance(o, ir.Var):
            if _real_number(o):
                continue
            if not (o.src.strip().isidentifier() and o.src.strip() in top):
                return None
            o = ir.Var(o.src.strip())       # (a name not differentiated: the user's value)
        src = ops.get(o.name)
        if src is not None and src.op in _INEXACT_RESULT and src.op != "true_divide" and \
                len(src.operands) == 1 and not src.statics:
            v, = src.operands.values()
            if isinstance(v, ir.Var) and v.name in top and known_inexact(v.name):
                parts.append(v.name)
                saved = True
                continue
        if o.name not in top:
            return None
        parts.append(o.name)
    if not saved:
        return None
    parts = list(dict.fromkeys(parts))
    return parts[0] if len(parts) == 1 else f"snp.result_type({', '.join(parts)})"


def _promoted_operands(name, ops, top, inexact):
    """Source whose dtype is provably that of the value `name`, an op of _PROMOTING of two
    operands, each a name bound at the top level or a real Python number, without reading it:
    the names' result_type (JAX's promotion, as the op promotes). A number is weakly typed: it
    changes no inexact dtype, so it is left out only where a name is provably inexact (2.0 * n
    of integers n is a float), as is a true_divide's (of two integers it is a float). The
    reductions reading `name` (_reduced_only) read its shape from the same names (ad/reverse.py
    _shape_source), so `name` (`labels * logp` in softmax cross-entropy) is then computed for
    nothing. Else None."""
    op = ops.get(name)
    if op is None or op.op not in _PROMOTING or op.statics or len(op.operands) != 2:
        return None
    parts, numbers = [], False
    for o in op.operands.values():
        n = o.name if isinstance(o, ir.Var) else o.src.strip()
        if n.isidentifier() and n in top:
            parts.append(n)
        elif _real_number(o):
            numbers = True
        else:
            return None
    if not parts or (numbers or op.op == "true_divide") and not any(
            _inexact(n, ops, known=inexact) for n in parts):
        return None
    parts = list(dict.fromkeys(parts))      # (grad_seed_like(x, y): the dtype they promote to)
    return ", ".join(parts) if len(parts) <= 2 else f"snp.result_type({', '.join(parts)})"


def unreduced_carries(loop, before, starts=None):
    """The loop names of `loop` (ir.For / ir.While) only added to: read once in the body, as an
    operand of the + or - at its top level that assigns their last version, which nothing but
    the copy back to the loop name reads; `before` (the statements before the loop, in its
    block) copies their start value in (`acc_1 = acc`), where the cotangent is summed to the
    carry's shape. (A second reader would add a cotangent of the carry's own shape to the
    unsummed one: broadcasting would count it more than once.) {loop name: the copy's operand
    (a Var, or an Expr for a constant start)}. starts: loop_starts(loop, before) if known
    (LoopStarts: each loop of a block's from one index of it)."""
    starts = loop_starts(loop, before) if starts is None else starts
    test = _names(loop.test) if isinstance(loop, ir.While) else set()
    if test is None:
        return {}
    counts = {}
    for s in ir.nested(loop.body):
        r = reads(s)
        if r is None:
            return {}
        for n, k in r.items():
            counts[n] = counts.get(n, 0) + k
    out = {}
    for name, last in loop.carried:
        if name == last or starts.get(name) is None or {name, last} & test:
            continue
        defining = [s for s in loop.body if isinstance(s, ir.Op) and last in s.targets]
        if len(defining) != 1:
            continue
        add = defining[0]
        if add.op not in _ADDS or add.statics or add.targets != [last] or \
                [o for o in add.operands.values() if o == ir.Var(name)] != [ir.Var(name)] or \
                not all(isinstance(o, (ir.Var, ir.Expr)) for o in add.operands.values()):
            continue
        if counts.get(name) == 1 and counts.get(last) == 1 and \
                any(_is_copy(s, name, last) for s in loop.body):
            out[name] = starts[name]
    return out


def loop_starts(loop, before):
    """{loop name of `loop` carried from one iteration to the next: its start value (a Var or
    an Expr), or None where no copy gives it}: the last statement of `before` assigning it
    decides, found from the loop back (every statement from the block's start, per loop, was
    quadratic in a block of many loops, issue 19)."""
    starts, wanted = {}, {name for name, last in loop.carried if name != last}
    for s in reversed(before):
        if not wanted:
            break
        assigned = _assigned(s)
        for t in wanted & assigned.keys():
            starts[t] = assigned[t]
            wanted.discard(t)
    return starts


def _assigned(s):
    """{name statement s of a block assigns: the value, a Var or an Expr where s copies it in
    (`acc_1 = acc`, `acc_1 = 0.0`), else None}."""
    if isinstance(s, ir.Op) and s.op == "identity" and len(s.targets) == 1:
        return {s.targets[0]: s.operands.get("x")}
    if isinstance(s, ir.Plain) and len(s.defines) == 1 and not s.stack and \
            s.code.strip().startswith(f"{next(iter(s.defines))} = "):
        return {next(iter(s.defines)): ir.Expr(s.code.split("=", 1)[1].strip())}
    # (kept as written: no derivative flows to the start value)
    return dict.fromkeys(s.targets if isinstance(s, ir.Op) else
                         s.defines if isinstance(s, ir.Plain) else ())


class LoopStarts:
    """loop_starts of each loop of one block (`stmts`), from one index of the block's
    assignments: the search back from each loop, in a block of many loops each carrying a
    name first assigned in it, read every statement before it (quadratic, issue 19)."""

    def __init__(self, stmts):
        self.at = {}        # name -> ([positions assigning it, ascending], [the values])
        for k, s in enumerate(stmts):
            for t, value in _assigned(s).items():
                positions, values = self.at.setdefault(t, ([], []))
                positions.append(k)
                values.append(value)

    def of(self, loop, k):
        """loop_starts(loop, stmts[:k]): `loop` at position k of the block."""
        starts = {}
        for name, last in loop.carried:
            if name != last and name in self.at:
                positions, values = self.at[name]
                j = bisect.bisect_left(positions, k)
                if j:
                    starts[name] = values[j - 1]
        return starts


def _is_copy(s, name, last):
    if isinstance(s, ir.Op):
        return s.op == "identity" and s.targets == [name] and s.operands.get("x") == ir.Var(last)
    return isinstance(s, ir.Plain) and s.code.strip() == f"{name} = {last}"


def live(lines, live_out):
    """Indices of the statements among `lines` that nothing after them reads, given the names
    read after them (`live_out`) and those read by every block header among them."""
    live_set = set(live_out).union(*(ln.uses for ln in lines if ln.kind == "block"))
    while True:
        grown, dropped = set(live_set), set()
        for k in range(len(lines) - 1, -1, -1):
            ln = lines[k]
            if ln.kind == "stmt" and ln.defines and not ln.defines & grown:
                dropped.add(k)
            else:
                grown |= ln.uses
        if grown == live_set:
            return dropped
        live_set = grown


def to_record(carried, lines):
    """The loop names (of `carried`) the lines read before assigning them: the values each
    iteration starts from that its reverse replay needs, saved by the forward loop."""
    read = set().union(*(ln.uses for ln in lines)) if lines else set()
    return [name for name, _ in carried if name in read and not _assigned_before_read(name, lines)]


def _assigned_before_read(name, lines):
    for ln in lines:
        if ln.kind in ("stmt", "block") and name in ln.uses:
            return False
        if ln.kind == "stmt" and name in ln.defines:
            return True
    return False


def carry_pairs(fn, carry, out):
    """A lax loop body's (fn) carry keeps its shapes and dtypes: {(v, u)}: v, what the body
    returns as a leaf of the carry (`out`, the returned carry: a Var or a Seq), has the shape of
    u, the same leaf of the carry parameter `carry` (the parameter itself, or a variable read
    from it by key: `acc, h = c`, `c['a']`)."""
    count = definitions(fn)
    leaves = {(): carry} if carry not in count else {}
    for s in fn.body:                   # (top level: read once, before any loop)
        if isinstance(s, ir.Op) and s.op == "field" and len(s.targets) == 1 and \
                s.operands.get("tree") == ir.Var(carry) and count.get(s.targets[0]) == 1:
            leaves[(s.statics["key"].strip(),)] = s.targets[0]
    pairs = set()

    def walk(o, path):
        if isinstance(o, ir.Var) and path in leaves:
            pairs.add((o.name, leaves[path]))
        elif isinstance(o, ir.Seq) and len(path) == 0:
            keys = o.keys if o.kind == "dict" else [str(i) for i in range(len(o.items))]
            for k, item in zip(keys, o.items):
                walk(item, (k.strip(),))
    walk(out, ())
    return pairs


# a value m = reduce(x, axis=A, keepdims=True) subtracted from x: m's change shifts what reads
# it by one amount along A ("S"), exp of that scales by one factor ("M"); `shift_only` follows
# both by coefficients of m's change (x - m: -1) until they cancel (an "I": independent of m)
_SHIFTS = {"max", "min", "mean", "sum"}


def shift_only(fn):
    """The names m whose value the function's outputs provably do not depend on, so that m's
    cotangent is zero and need not be written (softmax's and log-softmax's stabilising max,
    which a person leaves out of the hand-written gradient, as JAX's log_softmax stops its
    gradient). m = snp.max(x, axis=A, keepdims=True) (or min, mean, sum): a change d of m is
    constant along A. Through ops of top-level values assigned once, each value is followed as
    v + c * d (a shift, S) or v * exp(c * d) (a positive scale, M), c an integer: x - m is
    S(-1), exp of S(c) is M(c), log of M(c) is S(c), S(a) - S(b) is S(a - b), M(a) / M(b) is
    M(a - b), a sum, max or min over A keeping its dims keeps S (max, min) or M (all three),
    and a coefficient 0 is a value independent of d (z - log(sum(exp(z)))). Every read of a
    value with a nonzero coefficient must be such an op (the result, a branch, a loop, any
    other op: m is kept), and every array operand of those ops x or such a value, or a real
    Python number: the shapes then are x's or m's (one rank), and the axes A the same axes."""
    count = definitions(fn)
    top = [s for s in fn.body if isinstance(s, ir.Op)]
    top_ids = {id(t) for t in top}      # (a set: a long function's statements, not quadratic)
    nested = [s for s in ir.nested(fn.body) if id(s) not in top_ids]
    out = set()
    for m_op in top:
        if m_op.op not in _SHIFTS or len(m_op.targets) != 1 or set(m_op.operands) != {"a"} \
                or not isinstance(m_op.operands["a"], ir.Var) or \
                str(m_op.statics.get("keepdims", "")).strip() != "True" or \
                not set(m_op.statics) <= {"axis", "keepdims"}:
            continue
        m, x = m_op.targets[0], m_op.operands["a"].name
        axis = str(m_op.statics.get("axis", "None")).strip()
        if count.get(m) == 1 and m not in fn.params and count.get(x, 0) <= 1 and \
                _shift_cancels(fn, top, nested, count, m, x, axis, m_op):
            out.add(m)
    return out


def _shift_cancels(fn, top, nested, count, m, x, axis, m_op):
    """Whether every value computed from m (shift_only) reaches the outputs only through
    values independent of m's change."""
    state = {m: ("S", 1)}           # name -> (kind, coefficient of m's change)
    started = False
    for s in top:
        if s is m_op:
            started = True
            continue
        got = reads(s)
        if got is None:
            return False
        if not started or not got.keys() & state.keys():
            continue
        if len(s.targets) != 1 or count.get(s.targets[0]) != 1 or s.statics and not (
                s.op in ("sum", "max", "min") and set(s.statics) == {"axis", "keepdims"} and
                str(s.statics["axis"]).strip() == axis and
                str(s.statics["keepdims"]).strip() == "True"):
            return False
        parts = []
        for o in s.operands.values():
            if isinstance(o, ir.Var) and o.name in state:
                parts.append(state[o.name])
            elif isinstance(o, ir.Var) and o.name == x:
                parts.append(None)              # (x: m's shape along the other axes)
            elif _real_number(o):
                parts.append(0)                 # (a number: no shape)
            else:
                return False
        kinds = {p[0] for p in parts if isinstance(p, tuple)}
        if len(kinds) != 1:
            return False
        kind, = kinds
        coefs = [p[1] if isinstance(p, tuple) else 0 for p in parts]
        op = s.op
        if kind == "S" and op in ("subtract", "add") and len(parts) == 2:
            c = coefs[0] - coefs[1] if op == "subtract" else coefs[0] + coefs[1]
        elif kind == "S" and op == "negative" and len(parts) == 1:
            c = -coefs[0]
        elif kind == "S" and op == "exp" and len(parts) == 1:
            kind, c = "M", coefs[0]
        elif kind == "M" and op == "log" and len(parts) == 1:
            kind, c = "S", coefs[0]
        elif kind == "M" and op in ("multiply", "true_divide") and len(parts) == 2 and \
                None not in parts:         # (a number: a factor, or 1 / M(c) is M(-c))
            c = coefs[0] - coefs[1] if op == "true_divide" else coefs[0] + coefs[1]
        elif op in ("sum", "max", "min") and len(parts) == 1 and s.statics and (
                kind == "M" or op != "sum"):
            c = coefs[0]
        else:
            return False
        if c:
            state[s.targets[0]] = (kind, c)
    if any(reads(s) is None or reads(s).keys() & state.keys() for s in nested):
        return False            # (read in a branch, a loop or a statement kept as written)
    result = fn.result
    if result is None:
        return False
    returned = set(reads(result))

    def texts(o):                   # (an expression returned: the names it reads)
        if isinstance(o, ir.Seq):
            for i in o.items:
                yield from texts(i)
        elif isinstance(o, ir.Expr):
            yield o.src
    for text in texts(result.value):
        names = _names(text)
        if names is None:
            return False
        returned |= names
    return not returned & state.keys()


def _reads_everywhere(fn):
    """(name -> how many reads in all of fn, its result included; name -> the statements
    reading it; name -> the top-level op assigning it, assigned once, not a parameter), or None
    where a statement cannot be read."""
    count = definitions(fn)
    total, readers = {}, {}
    for s in list(ir.nested(fn.body)) + ([fn.result] if fn.result is not None else []):
        got = reads(s)
        if got is None:
            return None
        for n, k in got.items():
            total[n] = total.get(n, 0) + k
            readers.setdefault(n, []).append(s)
    ops = {s.targets[0]: s for s in fn.body if isinstance(s, ir.Op) and len(s.targets) == 1
           and count.get(s.targets[0]) == 1 and s.targets[0] not in fn.params}
    return total, readers, ops


def transposed_operands(fn):
    """{t: a}: t = transpose(a) (every axis reversed: `a.T`), a a name, t assigned once at the
    top level and read once in all of fn, as the right operand of a top-level matmul
    (`q @ k.T`): that matmul's rules read a (ad/vjp_rules.py TRANSPOSED_VJP), so t is computed
    only where the forward pass reads it (folded there), as a person writes `q @ k.T`."""
    got = _reads_everywhere(fn)
    if got is None:
        return {}
    total, readers, ops = got
    out = {}
    for t, op in ops.items():
        if op.op != "transpose" or op.statics or set(op.operands) != {"a"} or \
                not isinstance(op.operands["a"], ir.Var) or total.get(t) != 1:
            continue
        reader, = readers[t]
        if isinstance(reader, ir.Op) and reader.op == "matmul" and not reader.statics and \
                reader.operands.get("y") == ir.Var(t) and reader.operands.get("x") != ir.Var(t) \
                and any(reader is s for s in fn.body):
            out[t] = op.operands["a"].name
    return out


def normalised_exps(fn):
    """{v: (kind, u, axis)} for softmax and log-softmax written out, so that v's rule reads v
    once (ad/vjp_rules.py NORMALISED_VJP) instead of the chain's exp and sum: e = exp(u);
    s = sum(e, axis=A, keepdims=True); then v = e / s ("softmax") or v = u - log(s)
    ("log_softmax"), each of e, s (and log(s)) assigned once at the top level and read only
    there (the function's result and nested blocks counted); `axis` A's source ("None" where
    the sum names none). u is a name. The chain's values then have no cotangent: they are
    computed only where the forward pass reads them."""
    got = _reads_everywhere(fn)
    if got is None:
        return {}
    total, readers, ops = got

    def one(o):
        return o.name if isinstance(o, ir.Var) and o.name in ops else None

    def only_read_by(name, *stmts):
        return total.get(name) == len(stmts) and all(
            any(r is s for s in stmts) for r in readers.get(name, ()))
    out = {}
    for v, op in ops.items():
        if op.op == "true_divide" and set(op.operands) == {"x", "y"} and not op.statics:
            e, s, log_op = one(op.operands["x"]), one(op.operands["y"]), None
            kind = "softmax"
        elif op.op == "subtract" and set(op.operands) == {"x", "y"} and not op.statics:
            log = one(op.operands["y"])
            log_op = ops.get(log) if log else None
            if log_op is None or log_op.op != "log" or set(log_op.operands) != {"x"} or \
                    log_op.statics or not only_read_by(log, op):
                continue
            e, s, kind = None, one(log_op.operands["x"]), "log_softmax"
        else:
            continue
        sum_op = ops.get(s) if s else None
        if sum_op is None or sum_op.op != "sum" or set(sum_op.operands) != {"a"} or \
                not set(sum_op.statics) <= {"axis", "keepdims"} or \
                str(sum_op.statics.get("keepdims", "")).strip() != "True":
            continue
        e_sum = one(sum_op.operands["a"])
        exp_op = ops.get(e_sum) if e_sum else None
        if exp_op is None or exp_op.op != "exp" or set(exp_op.operands) != {"x"} or \
                exp_op.statics or not isinstance(exp_op.operands["x"], ir.Var) or \
                kind == "softmax" and e != e_sum:
            continue
        u = exp_op.operands["x"].name
        if kind == "log_softmax" and op.operands["x"] != ir.Var(u):
            continue
        users = (sum_op, op) if kind == "softmax" else (sum_op,)
        if not only_read_by(e_sum, *users) or not only_read_by(s, log_op or op):
            continue
        out[v] = (kind, u, str(sum_op.statics.get("axis", "None")).strip())
    return out
