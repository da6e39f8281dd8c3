"""Algebra on a cotangent's expression (issue 20: what a person does by hand).

A derivative's rules multiply and add: `3 * g * 4 * x ** 3`, `a * z * g + a * (g * z)`,
`2 * x * unreduce(s, x)`. On each line that assigns a cotangent (ad/reverse.py's Line), the
right-hand side's sums and products are rewritten, only where one of these applies:

- the Python numbers of a product (literals, a sign `-t` of a factor) multiply into one
  coefficient written first (`12 * x ** 3 * g`, `5 * -g` is `-5 * g`); a coefficient of 1 is
  left out (of -1, written as a sign). Python numbers are weakly typed: their product (an int
  for ints, a float where one is) promotes with the arrays as the factors did, whatever the
  order (promotion is a lattice's join: associative), and broadcasting is too, so the result
  has the same shape and dtype. A float coefficient whose product is not short (0.1 * 0.9 is
  0.09000000000000001) is not formed; a float 1.0 is left out only beside a factor known
  inexact (grad's seed), where it cannot turn integers into floats;
- a term after the first whose coefficient is negative is subtracted (`a + b * -c` is
  `a - b * c`, `a - b * -c` is `a + b * c`: exactly); terms of a sum with the same factors (as multisets: a product of
  arrays commutes), one after the other, add their coefficients: `a * z * g + a * (g * z)` is `2 * a * z * g` (not where they cancel: 0 * t
  keeps t's shape, which dropping the term would not);
- a factor `unreduce(t, a)` with no axis (a full reduction's cotangent: t is a scalar, made
  the shape of a), or a name bound once to one at the top level, is t where the product's
  other factors provably have a shape that a's broadcasts to (transformer/shapes.py: a's
  symbols among theirs): `2 * x * unreduce(s, x)` is `2 * x * s`. t has the dtype the
  broadcast has, so nothing but the shape was in question; the array of ones is not made.
  So is a factor or term `unreduce(t, a, axis=k, keepdims=True)` written in the line (the
  cotangent of a reduction that kept its axes: t has a's shape with those axes of size 1, so
  it broadcasts to a's shape, and against the others as broadcast_to(t, a's shape) does):
  `unreduce(s_bar, e, axis=-1, keepdims=True) * e` is `s_bar * e`, as a person writes it.

Products are `*` chains (either side parenthesised); a factor is any other expression, left as
written. Values are those of the written expression up to the rounding of a reassociated
product or sum. Only cotangent lines are rewritten: the forward values are the user's.
"""
import ast
import itertools

from secant.ad import fold
from secant.transformer import ir
from secant.transformer.hygiene import walk as _walk
from secant.transformer.walker import parsed

_MAX_COEFFICIENT_CHARS = 8      # a float coefficient longer than this is not formed


def simplified_lines(lines, cotangents, shapes):
    """`lines` with each assignment of a cotangent (a name of `cotangents`) simplified, the
    names bound once at the top level to a full reduction's `unreduce(t, a)` or to grad's seed
    read as such; the same list when nothing changes."""
    facts = _unreduced_names(lines)
    facts[_BOUND] = _bound_once(lines, cotangents)
    out, changed = [], False
    for ln in lines:
        new = simplified_line(ln, cotangents, shapes, facts)
        changed |= new is not ln
        out.append(new)
    return out if changed else lines


def simplifier(lines, cotangents, shapes, unreduced=True):
    """(a function simplifying one line as `lines` fold (ad/fold.py), the names bound to an
    `unreduce(t, a)` that the function reads as such, into whose line nothing may fold: t
    keeps its names there; none with unreduced=False: the names bound to grad's seed only.)"""
    if not unreduced:       # (its facts worked out at its first line: most passes after the
        lines = tuple(lines)    # first simplify none, issue 19)
        facts = None

        def simplify(ln):
            nonlocal facts
            if facts is None:
                facts = {_SEEDED: _unreduced_names(lines, seeds_only=True).get(_SEEDED, set()),
                         _BOUND: _bound_once(lines, cotangents)}
            return simplified_line(ln, cotangents, shapes, facts)
        simplify.cotangents = cotangents
        return simplify, {_BOUND}
    facts = _unreduced_names(lines)
    facts[_BOUND] = _bound_once(lines, cotangents)

    def simplify(ln):
        return simplified_line(ln, cotangents, shapes, facts)
    simplify.cotangents = cotangents
    return simplify, {g for g in facts if g is not _SEEDED}


def simplified_line(ln, cotangents, shapes, facts=None):
    """Line `ln` with its right-hand side simplified when it assigns one of `cotangents`, or
    returns one expression (not a tuple) of them, a cotangent folded into the derivative's
    `return` (else ln itself)."""
    if ln.kind != "stmt" or "\n" in ln.code:
        return ln
    if ln.code.startswith("return ") and not ln.defines and ln.uses & cotangents:
        tree = parsed(ln.code).body[0]
        if not isinstance(tree, ast.Return) or tree.value is None or \
                isinstance(tree.value, ast.Tuple):
            return ln
        target = "return "
    else:
        if len(ln.defines) != 1 or not ln.defines <= cotangents:
            return ln
        tree = parsed(ln.code).body[0]
        if not (isinstance(tree, ast.Assign) and len(tree.targets) == 1 and
                isinstance(tree.targets[0], ast.Name)):
            return ln
        target = f"{tree.targets[0].id} = "
    rewriter = _Rewriter(shapes, facts or {}, cotangents)
    # (a line that names no unreduce_to has no reduction to compose: its tree is not rebuilt,
    # issue 19)
    composed = rewriter.unbroadcasts_merged(
        _reductions_composed(tree.value) if "unreduce_to" in ln.code else tree.value)
    value = rewriter.expr(composed)
    if not rewriter.changed and composed is tree.value:
        return ln
    return type(ln)(target + ast.unparse(value), ln.indent, ln.kind, ln.origin)


def _bound_once(lines, cotangents):
    """{g: the tree of its value} for each cotangent g bound once in `lines`, at the top level,
    by a one-line assignment `g = E` (wherever g is read, it holds E's value: its shape is
    E's, `_Rewriter.value_alts`)."""
    count, out, top = {}, {}, []
    for ln in lines:        # (the one-line assignments at the top level found as the names are
        for n in ln.defines:    # counted: one pass over the lines, each simplifier's, issue 19)
            count[n] = count.get(n, 0) + 1
        if len(ln.defines) == 1 and ln.indent == 1 and ln.kind == "stmt" and \
                "\n" not in ln.code:
            top.append(ln)
    for ln in top:
        g, = ln.defines
        if g not in cotangents or count[g] != 1:
            continue
        tree = parsed(ln.code).body[0]
        if isinstance(tree, ast.Assign) and len(tree.targets) == 1 and \
                isinstance(tree.targets[0], ast.Name) and tree.targets[0].id == g:
            out[g] = tree.value
    return out


def _unreduced_names(lines, seeds_only=False):
    """{g: (t, a)} for each name g bound once, at the top level, to `unreduce(t, a)` (no
    axis), where the names t reads are bound at most once, at the top level, before it (so t
    holds the same value wherever g is read). seeds_only: the names bound to grad's seed only
    (the bindings counted of the names a line calling it binds: the folds ask again after
    each pass, issue 19)."""
    bound = {}
    if seeds_only:
        seeded = {n for ln in lines if "grad_seed" in ln.code for n in ln.defines}
        if not seeded:
            return {}
        for k, ln in enumerate(lines):
            if not seeded.isdisjoint(ln.defines):
                for n in ln.defines & seeded:
                    bound.setdefault(n, []).append((k, ln))
    else:
        for k, ln in enumerate(lines):
            for n in ln.defines:
                bound.setdefault(n, []).append((k, ln))
    out = {}
    for g, defs in bound.items():
        if len(defs) != 1:
            continue
        k, ln = defs[0]
        if ln.kind != "stmt" or ln.indent != 1 or "\n" in ln.code or \
                "unreduce" not in ln.code and "grad_seed" not in ln.code:
            continue        # (neither name in it: no line to parse)
        tree = parsed(ln.code).body[0]
        call = tree.value if isinstance(tree, ast.Assign) and len(tree.targets) == 1 else None
        got = _unreduce_call(call)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
                call.func.id in _SEEDS:
            out.setdefault(_SEEDED, set()).add(g)
        if got is None or seeds_only:
            continue
        t, _ = got
        if all(all(j < k and d.indent == 1 for j, d in bound.get(n.id, ())) and
               len(bound.get(n.id, ())) <= 1
               for n in _walk(t) if isinstance(n, ast.Name)):
            out[g] = got
    return out


def _two_argument_call(node, name):
    """(a, b) of `name(a, b)` (two arguments, no keywords), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == name and len(node.args) == 2 and not node.keywords and \
            not any(isinstance(a, ast.Starred) for a in node.args):
        return node.args[0], node.args[1]
    return None


def _unreduce_call(node):
    """(t, a) of `unreduce(t, a)` (two arguments, no axis), else None."""
    return _two_argument_call(node, "unreduce")


def _unbroadcast_call(node):
    """(t, x) of `unbroadcast(t, x)`, else None."""
    return _two_argument_call(node, "unbroadcast")


def _kept_dims_unreduce_call(node):
    """(t, a) of `unreduce(t, a, axis=..., keepdims=True)` (a reduction's cotangent with its
    reduced axes kept, as size 1: t broadcasts to a's shape), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "unreduce" and len(node.args) == 2 and \
            not any(isinstance(a, ast.Starred) for a in node.args) and \
            {k.arg for k in node.keywords} <= {"axis", "keepdims"} and any(
                k.arg == "keepdims" and isinstance(k.value, ast.Constant) and
                k.value.value is True for k in node.keywords):
        return node.args[0], node.args[1]
    return None


def _reductions_composed(node):
    """node with each cotangent of a full sum or mean of a sum over some axes, written as the
    sum's rule of the outer rule (`unreduce_to(mean_grad_to(t, shape_of(xs, axis=A)),
    shape_of(xs), axis=A)`: softmax cross-entropy's mean of per-row sums), written as the one
    rule of the composed reduction: `mean_grad_to(t, shape_of(xs), summed=A)` (a sum's:
    `unreduce_to(t, shape_of(xs))`). The outer rule has no axis, so t is a scalar (its
    unreduce_to makes it 0-d or fails) and its result t (or t / n, n the count of the sum's
    result) everywhere over the sum's result's shape, which the sum's rule makes the same
    everywhere over xs's broadcast shape: the same values, the array between them not made
    (ad/helpers.py mean_grad_to). Else node itself."""
    if not isinstance(node, ast.AST):
        return node
    changed = {}
    for field, old in ast.iter_fields(node):
        if isinstance(old, list):
            new = [_reductions_composed(v) for v in old]
            if any(a is not b for a, b in zip(new, old)):
                changed[field] = new
        elif isinstance(old, ast.AST):
            new = _reductions_composed(old)
            if new is not old:
                changed[field] = new
    if changed:
        node = type(node)(**{**dict(ast.iter_fields(node)), **changed})
    got = _composed_rules(node)
    return node if got is None else got


def _composed_rules(call):
    """`_reductions_composed`'s rewrite of one call, else None."""
    def named(n, *names):
        return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
            n.func.id in names and len(n.args) == 2 and \
            not any(isinstance(a, ast.Starred) for a in n.args)
    if not named(call, "unreduce_to") or {k.arg for k in call.keywords} - {"keepdims"} != \
            {"axis"}:
        return None
    inner, outer_shape = call.args
    if not named(inner, "unreduce_to", "mean_grad_to") or inner.keywords:
        return None
    t, inner_shape = inner.args
    if not (isinstance(inner_shape, ast.Call) and isinstance(outer_shape, ast.Call) and
            isinstance(outer_shape.func, ast.Name) and outer_shape.func.id == "shape_of" and
            not outer_shape.keywords and
            fold.dump_key(inner_shape.func) == fold.dump_key(outer_shape.func) and
            fold.dump_key(inner_shape.args) == fold.dump_key(outer_shape.args) and
            _keywords(inner_shape) == _keywords(call)):
        return None         # (the sum's result's shape: the same values, so reduced)
    axis = next(k.value for k in call.keywords if k.arg == "axis")
    if inner.func.id == "unreduce_to":
        return ast.Call(ast.Name("unreduce_to", ast.Load()), [t, outer_shape], [])
    return ast.Call(ast.Name("mean_grad_to", ast.Load()), [t, outer_shape],
                    [ast.keyword("summed", axis)])


def _keywords(call):
    return sorted((k.arg, fold.dump_key(k.value)) for k in call.keywords)


def _number(node):
    """The value of a real Python number literal (`3`, `-0.5`, `(-0.5)`), else None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return sign * node.value
    return None


def _number_node(c):
    node = ast.Constant(abs(c))
    return ast.UnaryOp(ast.USub(), node) if c < 0 or (c == 0 and str(c).startswith("-")) \
        else node


def _short(c):
    """Whether coefficient c may be written: an int that a weakly typed int32 holds, a float
    of a short repr."""
    return abs(c) < 2 ** 31 if isinstance(c, int) else len(repr(c)) <= _MAX_COEFFICIENT_CHARS


# a factor or term that may be a sequence (whose + concatenates, in order): never rewritten
_SEQUENCES = (ast.List, ast.Tuple, ast.ListComp, ast.JoinedStr, ast.Set, ast.Dict)


def _sequence(node):
    return isinstance(node, _SEQUENCES) or isinstance(node, ast.Constant) and \
        isinstance(node.value, (str, bytes))


_SEEDS = ("grad_seed", "grad_seed_like", "grad_seed_scaled")


def _inexact(node, facts):
    """Whether a factor is known to hold floats: grad's seed (a real floating scalar), a name
    bound once at the top level to it, or a product or unreduce of one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in _SEEDS:
        return True
    if isinstance(node, ast.Name):
        return node.id in facts.get(_SEEDED, ())
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _inexact(node.left, facts) or _inexact(node.right, facts)
    got = _unreduce_call(node)
    return got is not None and _inexact(got[0], facts)


def _multiset(keys):
    """The multiset of `keys` (a dict's key: equal where the sorted lists are)."""
    counts = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    return frozenset(counts.items())


_SEEDED = object()      # facts' key: the names bound once, at the top level, to grad's seed
_BOUND = object()       # facts' key: _bound_once's
_NUMBER = frozenset({frozenset()})      # transformer/shapes.py's alternatives of a real scalar


class _Rewriter:
    def __init__(self, shapes, facts, cotangents=frozenset()):
        self.shapes, self.facts, self.changed = shapes, facts, False
        self.cotangents = cotangents

    def expr(self, node, outer=()):
        """node rewritten; `outer`: the factors and terms it is combined with elementwise
        (a sum that is a factor of a product: the product's other factors), whose shapes the
        result broadcasts to."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            for _ in range(3):      # (again: a term made smaller lets another be)
                new = self.sum(node, outer)
                if new is node or not (isinstance(new, ast.BinOp) and
                                       isinstance(new.op, (ast.Add, ast.Sub))):
                    return new
                node = new
            return node
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) or \
                isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            coef, factors, changed = self.product(node)
            if factors is not None and changed:
                self.changed = True
                return self.written(coef, factors)
            return node
        return node

    # --- products ------------------------------------------------------------------------------
    def _flat(self, node, out):
        """The factors of a `*` chain (signs of factors as -1): [node or number]."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            self._flat(node.left, out)
            self._flat(node.right, out)
            return out
        c = _number(node)
        if c is not None:
            out.append(c)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            out.append(-1)
            self._flat(node.operand, out)
        else:
            out.append(node)
        return out

    def product(self, node, context=()):
        """(coefficient, factors, whether anything changed) of a product (a lone factor too);
        `context`: the other terms of the sum it is a term of, whose shapes the sum has."""
        flat = self._flat(node, [])
        if any(isinstance(f, ast.AST) and _sequence(f) for f in flat):
            return 1, None, False
        numbers = [f for f in flat if not isinstance(f, ast.AST)]
        asts = [f for f in flat if isinstance(f, ast.AST)]
        factors = [self.expr(f, asts[:k] + asts[k + 1:] + list(context))
                   for k, f in enumerate(asts)]
        coef = 1
        for c in numbers:
            coef = coef * c
        if not _short(coef):
            return 1, None, False
        changed = len(numbers) > 1 or any(f is not g for f, g in zip(factors, asts))
        #         (two numbers or signs made one, or a factor rewritten)
        for k, f in enumerate(factors):
            got = _unreduce_call(f) or _kept_dims_unreduce_call(f)
            named = got is None and isinstance(f, ast.Name)
            if named:
                got = self.facts.get(f.id)
            if got is not None and self._covers(factors[:k] + factors[k + 1:] + list(context),
                                                got[1], named):
                factors[k] = got[0]
                changed = True
        return coef, factors, changed

    def _covers(self, others, a, named=False):
        """Whether the product of `others` provably has a shape a's broadcasts to. named: a
        read where it was not bound (a name's unreduce): none of a's symbols may stand for a
        loop iteration's value (another iteration's may be read there)."""
        mine = self._alts(a)
        if not mine or named and any(not m.isdisjoint(self.shapes.local) for m in mine):
            return False
        parts = [p for p in (self._alts(f) for f in others) if p]
        if not parts:
            return False
        if len(list(itertools.islice(itertools.product(*parts), 65))) > 64:
            return False
        return all(m <= frozenset().union(*combo)
                   for m in mine for combo in itertools.product(*parts))

    # --- sums of a value's unbroadcast cotangents ------------------------------------------------
    def unbroadcasts_merged(self, node):
        """node with each sum of unbroadcasts to one value x, `unbroadcast(a, x) +
        unbroadcast(b, x)`, whose summands provably have one shape (`value_alts`: one
        alternative, the same symbols), written `unbroadcast(a + b, x)` (summing down is
        linear; so are the real part and the cast it takes), its sum simplified (a + b * -c is
        a - b * c); and `grads_as(E, x)` of such an E (or of one unbroadcast to x): E, which
        unbroadcast already gave x's float dtype (ad/helpers.py). Else node itself."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "grads_as" and len(node.args) == 2 and not node.keywords:
            inner = self.unbroadcasts_merged(node.args[0])
            if self._in_dtype_of(inner, node.args[1]):
                self.changed = True
                return inner
            return node if inner is node.args[0] else \
                ast.Call(node.func, [inner, node.args[1]], [])
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))):
            return node
        terms = self._terms(node, 1, [])
        calls = [_unbroadcast_call(t) for _, t in terms]
        if any(c is None for c in calls) or \
                any(not fold._same(c[1], calls[0][1]) for c in calls[1:]):
            return node
        alts = [self.value_alts(c[0]) for c in calls]
        if not alts[0] or len(alts[0]) != 1 or any(a != alts[0] for a in alts[1:]):
            return node
        inner = None
        for (sign, _), (t, _) in zip(terms, calls):
            if inner is None:
                inner = ast.UnaryOp(ast.USub(), t) if sign < 0 else t
            else:
                inner = ast.BinOp(inner, ast.Sub() if sign < 0 else ast.Add(), t)
        self.changed = True
        return ast.Call(ast.Name("unbroadcast", ast.Load()), [self.expr(inner), calls[0][1]], [])

    def _in_dtype_of(self, node, x, seen=frozenset()):
        """Whether node is `unbroadcast(t, x)`, a sum or difference of such, or a name bound
        once at the top level to one (_bound_once): x's float dtype, as grads_as gives."""
        bound = self.facts.get(_BOUND, {})
        if isinstance(node, ast.Name) and node.id in bound and node.id not in seen:
            return self._in_dtype_of(bound[node.id], x, seen | {node.id})
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return self._in_dtype_of(node.left, x, seen) and \
                self._in_dtype_of(node.right, x, seen)
        got = _unbroadcast_call(node)
        return got is not None and fold._same(got[1], x)

    def value_alts(self, node, seen=frozenset()):
        """The shape alternatives (transformer/shapes.py) of a cotangent's expression: a name
        bound once at the top level (_bound_once) is its value's; `unbroadcast(t, x)` has x's
        shape, grad's seed is a real scalar; sums, products, quotients and signs the broadcast
        of their parts; anything else as the analysis reads it (a cotangent's name it does not
        know is a symbol of its own: no other value's shape). None where unknown."""
        bound = self.facts.get(_BOUND, {})
        if isinstance(node, ast.Name) and node.id in bound and node.id not in seen:
            return self.value_alts(bound[node.id], seen | {node.id})
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _SEEDS:
                return _NUMBER
            got = _unbroadcast_call(node)
            if got is not None:
                return self._alts(got[1])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self.value_alts(node.operand, seen)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                                ast.Div)):
            parts = [self.value_alts(node.left, seen), self.value_alts(node.right, seen)]
            if any(not p for p in parts) or len(parts[0]) * len(parts[1]) > 8:
                return None
            return frozenset(a | b for a in parts[0] for b in parts[1])
        return self._alts(node)

    def _alts(self, node):
        try:
            got = self.shapes.of(ir.Expr(ast.unparse(node)))
        except Exception:       # (an expression the analysis does not read: unknown)
            return None
        return got or None

    def written(self, coef, factors):
        """The product coef * factors[0] * ... as a tree."""
        if coef in (1, -1) and factors and (isinstance(coef, int) or any(
                _inexact(f, self.facts) for f in factors)):
            out = ast.UnaryOp(ast.USub(), factors[0]) if coef == -1 else factors[0]
            for f in factors[1:]:                       # (-a * b: the sign on the first)
                out = ast.BinOp(out, ast.Mult(), f)
            return out
        out = _number_node(coef)
        for f in factors:
            out = ast.BinOp(out, ast.Mult(), f)
        return out

    # --- sums ----------------------------------------------------------------------------------
    def _terms(self, node, sign, out):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            self._terms(node.left, sign, out)
            self._terms(node.right, -sign if isinstance(node.op, ast.Sub) else sign, out)
        else:
            out.append((sign, node))
        return out

    def sum(self, node, outer=()):
        merged, index, changed = [], {}, False
        terms = self._terms(node, 1, [])
        if any(_sequence(t) for _, t in terms):
            return node
        for k, (sign, t) in enumerate(terms):
            # (the terms before as rewritten: a term made smaller does not cover another)
            context = [self.written(m[0], m[1]) for m in merged] + \
                [u for _, u in terms[k + 1:]] + list(outer)
            coef, factors, ch = self.product(t, context)
            if factors is None:             # (a coefficient not formed: the term as written)
                coef, factors, ch = 1, [t], False
            elif k and coef < 0:        # a + b * -c is a - b * c, a - b * -c a + b * c
                ch = True
            changed |= ch
            term = [sign * coef, factors, ch, sign, t]
            key = _multiset(fold.dump_key(f) for f in factors)
            j = index.get(key)
            if j is not None and j == len(merged) - 1:      # (the term before: a + b + a
                #                                              concatenates lists in order)
                total = merged[j][0] + term[0]
                if total != 0 and _short(total):
                    merged[j][0] = total
                    merged[j][2] = changed = True
                    continue
            index[key] = len(merged)
            merged.append(term)
        common = self._common(merged) if len(merged) > 1 else None
        if not changed and common is None:
            return node
        self.changed = True
        if common is not None:          # a factor of every term: written once, after the sum
            k, f = common
            for m in merged:                # (one of it: x * x * g less x is x * g)
                j = next(j for j, g in enumerate(m[1]) if fold._same(g, f))
                m[1] = m[1][:j] + m[1][j + 1:]
                m[2] = True
            return ast.BinOp(self._summed(merged), ast.Mult(), f)
        return self._summed(merged)

    def _common(self, merged):
        """(k, the factor) of the last factor of the first term that every term has (else
        None), a cotangent or grad's seed: never a Python int, which would repeat a list
        `(xs + ys) * n` other than `xs * n + ys * n`."""
        first = merged[0][1]
        for k in range(len(first) - 1, -1, -1):
            if not (isinstance(first[k], ast.Name) and first[k].id in self.cotangents or
                    _inexact(first[k], self.facts)):
                continue
            if all(any(fold._same(g, first[k]) for g in m[1]) for m in merged[1:]):
                return k, first[k]
        return None

    def _summed(self, merged):
        out = None
        for coef, factors, ch, sign, t in merged:
            if not ch:                      # (a term unchanged: as written, with its sign)
                term, negative = t, sign < 0
            else:
                negative = coef < 0 and out is not None
                term = self.written(-coef if negative else coef, factors)
            if out is None:
                out = ast.UnaryOp(ast.USub(), term) if negative else term
            else:
                out = ast.BinOp(out, ast.Sub() if negative else ast.Add(), term)
        return out
