"""Common subexpressions computed once (issue 20: as lean as hand-written).

A person writes `c = 0.5 * dt * k` once and reads c in the forward pass and in the chain rule;
the canonical form writes an inactive expression in place where the user did, and each
reverse rule that reads the operand writes it again (leapfrog's `0.5 * dt * k`, four times).
On a derivative's generated lines (ad/reverse.py's Line, before folding), an expression E that
occurs in several statements of the function's top level (one straight-line sequence, each
statement run once, in order) is computed once when

- E is pure (ad/fold.py's `_pure`: operators, indexing and secant.numpy / lax functions, never
  a user's function or method) and computes something (a call, or an operator over a name:
  not a constant such as `-0.5`), and no occurrence lies where it is evaluated other than
  exactly once (a lambda, a comprehension, `and`/`or`, `x if c else y`);
- no line from the first occurrence up to a later one assigns, changes in place or passes to a
  call other than secant.numpy's and lax's a name E reads (E has the same value there): later
  occurrences past such a line are left as they are;
- it saves work worth reading a name for: E calls an array function (not a query of a shape
  or dtype: `snp.result_type(x)` is read again where it is needed), or the later
  occurrences hold at least `MIN_SAVED` operations in all (`-g` read twice stays as written).

Where the first occurrence is the whole value of `t = E`, the later ones read t (t assigned
nowhere between); else E is assigned by a new line just above its first occurrence, named as
the canonical form names values (transformer/normalize.py, codegen/naming.py: `times_k`,
`exp_log_sigma`).
Larger expressions are named first (their parts then occur once).
"""
import ast
import bisect
import types

from secant.ad import fold
from secant.codegen import naming
from secant.transformer.hygiene import copy_tree, walk as _walk
from secant.transformer.walker import Line, parsed

MIN_SAVED = 2
# queries of a shape or dtype: calls, but no array work (computed again rather than named)
_QUERIES = {"shape", "ndim", "size", "result_type", "dtype", "issubdtype", "iscomplexobj",
            "isrealobj", "isscalar"}

_CANDIDATES = (ast.BinOp, ast.UnaryOp, ast.Call)
# grad's seeds (ad/helpers.py): they read their arguments' shapes and dtypes, change nothing
_SEEDS = {"grad_seed", "grad_seed_like", "grad_seed_scaled"}
_WORDS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide",
          ast.Pow: "power", ast.MatMult: "matmul", ast.Mod: "remainder", ast.USub: "negative"}


def computed_once(lines, names):
    """`lines` with each common subexpression of its top-level statements computed once (see
    the module's docstring); `names` (codegen/naming.Names) gives the new names."""
    top = [k for k, ln in enumerate(lines) if ln.kind == "stmt" and ln.indent == 1
           and "\n" not in ln.code]
    trees, seen = {}, set()         # (a line's own tree: nodes stand for their places, so a
    for k in top:                   # line written twice has a copy of the shared tree)
        code = lines[k].code
        tree = parsed(code).body[0]
        trees[k] = copy_tree(tree) if code in seen else tree
        seen.add(code)
    occurrences = {}                # ast.dump(E) (fold.dump_key) -> [(line, node)], in order
    parents, keys = {}, {}
    for k in top:
        for node in _candidates(trees[k], parents):
            occurrences.setdefault(fold.dump_key(node, keys), []).append((k, node))
    replaced = {}                   # node -> the name read instead
    inserted = {}                   # line -> the new lines above it
    changed = set()                 # the lines with a node in replaced
    groups = [(key, occ) for key, occ in occurrences.items()
              if len({k for k, _ in occ}) > 1]
    groups.sort(key=lambda g: (-_size(g[1][0][1]), g[1][0][0]))
    mentions = None                 # name -> the lines that read or assign it, in order
    for key, occ in groups:
        occ = [(k, n) for k, n in occ if not _inside(n, replaced, parents)]
        if len(occ) < 2:
            continue
        first, node = occ[0]
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        tree = trees[first]
        target = tree.targets[0].id if (isinstance(tree, ast.Assign) and tree.value is node
                                        and len(tree.targets) == 1
                                        and isinstance(tree.targets[0], ast.Name)) else None
        if target in reads:
            target = None           # (`x = x * c`: E no more what x holds)
        if mentions is None:
            mentions = _mentions(lines)
        later = _same_value(lines, occ, reads | ({target} if target else set()), target,
                            mentions)
        if not later:
            continue
        if not (any(isinstance(n, ast.Call) and n.func.attr not in _QUERIES
                    for n in ast.walk(node)) or _operations(node) * len(later) >= MIN_SAVED):
            continue
        if target is None:
            target = names.fresh(_name(node))
            text = ast.get_source_segment(lines[first].code, node)
            inserted.setdefault(first, []).append(
                Line(f"{target} = {text}", 1, "stmt", lines[first].origin))
            replaced[node] = target
            changed.add(first)
        for j, n in later:
            replaced[n] = target
            changed.add(j)
    if not replaced:
        return lines
    out = []
    for k, ln in enumerate(lines):
        out += inserted.get(k, [])
        hits = [n for n in _walk(trees[k]) if n in replaced] if k in changed else []
        out.append(_rewritten(ln, trees[k], hits, replaced) if hits else ln)
    return out


def _candidates(tree, parents):
    """The pure expressions of a statement that compute something (a call, or an operator over
    a name), each evaluated exactly once where it stands, in ast.walk's order; `parents` gets
    each node's parent. (One walk: whether a node is pure, reads something, or lies under a
    part evaluated other than once, from its children's or its parent's answer: fold._pure,
    ast.walk and fold._under_breaker per node read each subtree again, issue 19.)"""
    order, children, inside = [tree], {}, {tree: False}
    for p in order:                 # (breadth first, as ast.walk: a node before its children;
        kids = children[p] = _children(p)   # the list grows as it is read)
        if kids:
            order += kids
            under = inside[p]
            breaker = isinstance(p, fold._ONCE_BREAKERS)
            for c in kids:
                parents[c] = p
                inside[c] = under or breaker and \
                    not (isinstance(p, ast.BoolOp) and c is p.values[0]) and \
                    not (isinstance(p, ast.IfExp) and c is p.test)
    pure, reads = {}, {}
    pure_node = fold._pure_node
    for n in reversed(order):       # (children first)
        is_pure = pure_node(n)
        is_read = isinstance(n, ast.Call) or isinstance(n, ast.Name) and \
            n.id not in ("snp", "lax")
        for c in children[n]:
            is_pure = is_pure and pure[c]
            is_read = is_read or reads[c]
        pure[n], reads[n] = is_pure, is_read
    return [n for n in order if isinstance(n, _CANDIDATES) and pure[n] and reads[n]
            and not inside[n]]


def _children(node):
    """A node's children, as ast.iter_child_nodes gives them, less the operators and contexts
    (`Add`, `Load`: leaves, pure, reading nothing, never a candidate, so no answer of
    _candidates changes without them; a third of the nodes it walked, issue 19)."""
    out = []
    d = node.__dict__
    for field in node._fields:
        value = d.get(field)
        if type(value) is list:
            out += [v for v in value if isinstance(v, ast.AST) and type(v) not in _LEAVES]
        elif isinstance(value, ast.AST) and type(value) not in _LEAVES:
            out.append(value)
    return out


_LEAVES = frozenset(t for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop)
                   for t in base.__subclasses__())     # (fold._PURE's: not `and`, `or`)


def _inside(node, replaced, parents):
    """Whether node (or a node holding it) is read as a name already."""
    while node is not None:
        if node in replaced:
            return True
        node = parents.get(node)
    return False


def _mentions(lines):
    """{name: the indices of the lines that read or assign it, ascending}."""
    out = {}
    for k, ln in enumerate(lines):
        for name in ln.defines | ln.uses:
            out.setdefault(name, []).append(k)
    return out


def _same_value(lines, occ, reads, target, mentions):
    """The later occurrences of `occ` where E (and the first one's target, when E's value is
    read from it) still has the value of the first: no line from the first occurrence on (its
    own target aside) assigns, changes in place, or passes to a user's call a name in `reads`.
    Only the lines that mention one of `reads` (`mentions`: _mentions(lines)) are looked at:
    a scan of every line from the first occurrence to the last, per expression, was quadratic
    in a function whose parameters' expressions recur throughout (issue 19)."""
    first, last = occ[0][0], occ[-1][0]
    candidates = set()
    for name in reads:
        at = mentions.get(name, ())
        for i in range(bisect.bisect_left(at, first), bisect.bisect_left(at, last)):
            candidates.add(at[i])
    stop = last
    for k in sorted(candidates):
        ln = lines[k]
        changed = (ln.defines - ({target} if k == first else set())) & reads
        if changed or fold._mutates(ln, reads) or _passed(ln, reads):
            stop = k
            break
    return [(j, node) for j, node in occ[1:] if j <= stop]


def _passed(ln, reads):
    """Whether line ln may hand one of `reads` to a function other than secant.numpy's and
    lax's (which could change it in place)."""
    if ln.kind not in ("stmt", "block") or not reads & ln.uses:
        return False
    try:
        tree = parsed(ln.code, ln.kind)
    except SyntaxError:
        return True
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and not fold._pure(ast.Call(n.func, [], [])) and not (
                isinstance(n.func, ast.Name) and n.func.id in _SEEDS) and any(
                isinstance(a, ast.Name) and a.id in reads
                for a in n.args + [kw.value for kw in n.keywords]):
            return True
    return False


def _operations(node):
    return sum(isinstance(n, fold._OPERATIONS) for n in ast.walk(node))


def _size(node):
    return sum(1 for _ in ast.walk(node))


def _name(node):
    """The canonical form's name for E's value (codegen/naming.suggest): after its operation
    and the names (or whole numbers) it applies to; a part that is itself an operation is
    left out (`0.5 * dt * k`: times_k) unless no part is a name (then named after its own)."""
    if isinstance(node, ast.Call):
        op, operands = node.func.attr, node.args
    elif isinstance(node, ast.BinOp):
        op, operands = _WORDS.get(type(node.op), "op"), [node.left, node.right]
    else:
        op, operands = _WORDS.get(type(node.op), "op"), [node.operand]

    def part(o, inner):
        while isinstance(o, (ast.Subscript, ast.Attribute)):
            o = o.value
        if isinstance(o, ast.Name):
            return types.SimpleNamespace(name=o.id)
        if isinstance(o, ast.Constant):
            return types.SimpleNamespace(src=repr(o.value))
        named = inner and isinstance(o, _CANDIDATES)
        return types.SimpleNamespace(name=_name(o) if named else "")
    parts = [part(o, False) for o in operands]
    if not any(getattr(p, "name", "") for p in parts):
        parts = [part(o, True) for o in operands]
    if isinstance(node, ast.Call):      # (all its arguments: arange_0_8, not arange_0)
        words = [op] + [naming._part(p) for p in parts]
        name = "_".join(w for w in words if w)
        if len(name) <= naming.MAX_LEN:
            return name
    name = naming.suggest(op, parts)
    return op if name.endswith("_out") else name


def _rewritten(ln, tree, hits, replaced):
    """Line ln with each node in `hits` read from its name (text replaced right to left; the
    parentheses that grouped it dropped where the line still parses to the same tree)."""
    code = ln.code
    for node in sorted(hits, key=lambda n: n.col_offset, reverse=True):
        start, end = fold._span(code, node)
        name = replaced[node]
        if start and code[start - 1] == "(" and code[end:end + 1] == ")":
            bare = code[:start - 1] + name + code[end + 1:]
            try:
                same = _shape(ast.parse(bare)) == _shape(ast.parse(
                    code[:start] + name + code[end:]))
            except SyntaxError:
                same = False
            if same:
                code = bare
                continue
        code = code[:start] + name + code[end:]
    return Line(code, ln.indent, ln.kind, ln.origin)


def _shape(tree):
    return ast.dump(tree)
