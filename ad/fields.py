"""A dict parameter's fields read where they are used (issue 20: as lean as hand-written).

A person writes `x @ params["w1"]` and `d1 @ params["w2"].T`; the canonical form names each
field it reads (`w1 = params['w1']`), and the derivative reads that name in the forward pass
and in the chain rule. On a derivative's generated lines (ad/reverse.py's Line), a line
`t = p['key']` is dropped and each read of t written `p['key']` when

- t is a temporary of the canonical form (a value the user gave no name), assigned by that
  line only, not a parameter;
- the key is a string literal, so p is a mapping (an array has no string index): the read is a
  dict look-up, as cheap as reading t, not an array op that would run again at each read;
- p is a parameter that no line assigns, and every line that mentions p is such a field read
  or the reverse pass's own `grad_of_fields(p, ...)`: nothing changes p (no item assignment,
  no method, no call that could), so `p['key']` has one value wherever it is read.
"""
import ast
import re

from secant.transformer.hygiene import walk as _walk

_FIELD = re.compile(r"(\w+) = (\w+)\[('[^'\\]*'|\"[^\"\\]*\")\]")
_GRAD_OF_FIELDS = re.compile(r"\w+ = grad_of_fields\((\w+), ")
_SCOPES = re.compile(r"\b(?:def|lambda|for|class)\b")


def read_in_place(lines, temporaries, params):
    """`lines` with the field reads described in the module docstring written where read."""
    fields, mentions, assigned = {}, {}, {}
    for k, ln in enumerate(lines):
        m = _FIELD.fullmatch(ln.code) if ln.kind == "stmt" else None
        if m and m.group(1) in temporaries and m.group(1) not in params \
                and m.group(2) in params:
            fields[k] = m
    if not fields:      # (no field read: no name's mentions counted, issue 19)
        return lines
    for k, ln in enumerate(lines):
        for n in ln.uses | ln.defines:
            mentions.setdefault(n, []).append(k)
        for n in ln.defines:
            assigned[n] = assigned.get(n, 0) + 1
    own = {}
    for k, m in fields.items():
        t, p = m.group(1), m.group(2)
        if assigned.get(t) == 1 and not assigned.get(p) and all(
                j in fields and fields[j].group(2) == p or _GRAD_OF_FIELDS.match(lines[j].code)
                and _GRAD_OF_FIELDS.match(lines[j].code).group(1) == p
                for j in mentions[p]):
            own[t] = f"{p}[{m.group(3)}]"
    for ln in lines:        # (a read in a multi-line statement, a comment, or a line with a
        #                       scope of its own, where t may name a lambda's parameter: kept)
        if ln.uses & own.keys() and ("\n" in ln.code or ln.kind != "stmt" or
                                     _SCOPES.search(ln.code)):
            for t in ln.uses & own.keys():
                del own[t]
    if not own:
        return lines
    out = []
    for ln in lines:
        m = _FIELD.fullmatch(ln.code) if ln.kind == "stmt" else None
        if m and m.group(1) in own:
            continue
        if ln.uses & own.keys():
            ln = type(ln)(_renamed(ln.code, own), ln.indent, ln.kind, ln.origin)
        out.append(ln)
    return out


def _renamed(code, own):
    """One-line statement `code` with each read of a name in `own` replaced by its field
    read."""
    tree = ast.parse(code)
    data = code.encode()
    for start, end, name in sorted(((n.col_offset, n.end_col_offset, n.id) for n in _walk(tree)
                                    if isinstance(n, ast.Name) and n.id in own and
                                    isinstance(n.ctx, ast.Load)),
                                   reverse=True):
        data = data[:start] + own[name].encode() + data[end:]
    return data.decode()
