"""einsum's rules, computed from its subscripts when the derivative or batched code is written.

Each rule is an einsum again, so every order works by the same rules:
- reverse: an operand's cotangent swaps it into the output spec,
  `snp.einsum('ij,jk->ik', a, b)` gives `a_bar = snp.einsum('ik,jk->ij', g, b)`; a label only
  that operand had (summed away) comes back through `snp.ones_like(a)`, and '...' dims the
  operand broadcast are summed back by unbroadcast;
- forward: the sum over operands of einsum with that operand's tangent in its place;
- batching: a fresh label for the batch axis in front of each batched operand and the output.
The subscripts must be a string literal (the rules depend on them).
"""
import ast
import string

from secant.backends.errors import SecantError, where

ELLIPSIS = "."       # '...' as one character inside a spec


def parse(subscripts_src, n):
    """(input specs, explicit output spec) of literal subscripts for n operands; '...' is '.'."""
    try:
        subscripts = ast.literal_eval(subscripts_src)
    except (ValueError, SyntaxError):
        subscripts = None
    if not isinstance(subscripts, str):
        raise SecantError(f"einsum is transformed for subscripts written as a string literal, "
                          f"got {subscripts_src}; to transform einsum itself, pass a function "
                          f"that calls it, e.g. lambda a, b: snp.einsum('ij,j->i', a, b)"
                          f"{where()}")
    spec = subscripts.replace(" ", "").replace("...", ELLIPSIS)
    inputs, arrow, output = spec.partition("->")
    ins = inputs.split(",")
    if len(ins) != n or any(c not in string.ascii_letters + ELLIPSIS for c in spec
                            if c not in ",->"):
        raise SecantError(f"einsum: subscripts {subscripts!r} do not fit {n} operands")
    if not arrow:       # implicit output: '...' first, then the labels seen once, sorted
        letters = "".join(ins)
        output = (ELLIPSIS if ELLIPSIS in letters else "") + "".join(
            sorted(c for c in set(letters) if c != ELLIPSIS and letters.count(c) == 1))
    return ins, output


def _show(spec):
    return spec.replace(ELLIPSIS, "...")


def _call(specs, out, args):
    return f"snp.einsum({_show(','.join(specs) + '->' + out)!r}, {', '.join(args)})"


def vjp_templates(subscripts_src, params):
    """{param: template of its cotangent} for einsum's operands `params` (x0, x1, ...), in
    terms of {g} and the operands' own fields."""
    ins, out = parse(subscripts_src, len(params))
    rules = {}
    for k, p in enumerate(params):
        mine = ins[k]
        others = [(s, q) for j, (s, q) in enumerate(zip(ins, params)) if j != k]
        specs, args = [out] + [s for s, _ in others], ["{g}"] + ["{" + q + "}" for _, q in others]
        # a label repeated within this operand ('ii': its diagonal) gets a fresh label at each
        # repeat, tied to the first by an identity matrix: the cotangent lands on the diagonal
        mine, eyes = _untie(mine, set("".join(ins) + out))
        for spec, axis in eyes:
            specs.append(spec)
            args.append("snp.eye({" + p + "}.shape[" + str(axis) + "], dtype={" + p + "}.dtype)")
        seen = set().union(*(set(s) for s in specs))
        if not set(mine) <= seen:        # a label summed away from this operand alone
            specs.append(mine)
            args.append("snp.ones_like({" + p + "})")
        # its size-1 dims, and '...' dims it lacks, may be broadcast by another operand (as in
        # NumPy's einsum): unbroadcast sums them back (the '...' dims come out in front)
        lead = ELLIPSIS if ELLIPSIS not in mine and ELLIPSIS in "".join(specs) else ""
        rules[p] = f"unbroadcast({_call(specs, lead + mine, args)}, {{{p}}})"
    return rules


def _untie(spec, used):
    """spec with each repeated label renamed to a fresh one, and the identity matrices that tie
    them: [(first label + fresh label, axis of the repeat in the operand)]."""
    free = (c for c in string.ascii_letters if c not in used)
    out, eyes = [], []
    for i, c in enumerate(spec):
        if c != ELLIPSIS and c in spec[:i]:
            fresh = next(free)
            # the repeat's axis: from the front, or from the end when '...' comes before it
            axis = i if ELLIPSIS not in spec[:i] else i - len(spec)
            eyes.append((c + fresh, axis))
            c = fresh
        out.append(c)
    return "".join(out), eyes


def jvp_templates(params):
    """{param: template of its contribution to the tangent}: einsum with that operand's
    tangent in its place (the subscripts as the user wrote them)."""
    return {p: "snp.einsum({subscripts}, " + ", ".join(
        "{" + q + ("_dot}" if q == p else "}") for q in params) + ")" for p in params}


def batched(subscripts_src, srcs, flags):
    """The einsum of each example: a fresh label for the batch axis of the batched operands
    (axis 0) and of the result."""
    ins, out = parse(subscripts_src, len(srcs))
    used = set("".join(ins) + out)
    b = next(c for c in string.ascii_letters[::-1] if c not in used)
    specs = [b + s if f else s for s, f in zip(ins, flags)]
    return _call(specs, b + out, srcs)
