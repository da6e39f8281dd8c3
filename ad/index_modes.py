"""Out-of-range indices in the rules of reads and updates: which mode each rule's own read or
scatter takes, so that derivatives and batching agree with what the user's index did.

A read x[idx] (and x.at[idx].get(), mode "clip" or "promise_in_bounds") clamps an out-of-range
integer index into its axis, after counting a negative one from the end, as JAX's gathers do;
x.at[idx].get(mode="fill") reads fill_value there. An update x.at[idx].set/add/mul/min/max drops
an out-of-range update, unless mode="clip" clamps it as a read does. So

  - a read's cotangent goes back where it read: `snp.zeros_like(x).at[idx].add(g, mode="clip")`
    (a filled read's: `.add(g)`, which drops it where the read filled);
  - an update's values get the cotangent of the elements they landed on:
    `g.at[idx].get(mode="fill", fill_value=0)` (zero for a dropped update), `g[idx]` for a
    clamped one.

A mode that is no literal (a helper's `mode=mode`) is read when the rule runs (read_back_mode,
pick_mode in ad/rule_helpers.py). An index of slices, `...` and `None` only is always in range:
its rules read `g[idx]` and `.at[idx].add(g)`, as a person writes them. The rule tables
(ad/vjp_rules.py, ad/jvp_rules.py, batching/rules.py) name the keys `fill_keys` returns.
"""
import ast

READS = ("getitem", "at_get")
KEYS = ("back", "pick", "get_kw", "get_kw_dot", "helper_kw", "won")   # (what fill_keys may give)
UPDATES = ("at_set", "at_add", "at_mul", "at_min", "at_max")


def _literal(src, default=None):
    if src is None:
        return default
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError):
        return src


def in_range_always(idx):
    """Whether the index source (`1:3, ::2`, `..., None`) holds only slices, `...` and None."""
    try:
        node = ast.parse(f"_[{idx}]", mode="eval").body.slice
    except SyntaxError:
        return False
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(isinstance(p, ast.Slice) or isinstance(p, ast.Constant) and p.value in (None, ...)
               for p in parts)


def fill_keys(op_name, statics, ints=()):
    """The template keys of an indexing op, from its statics (source strings):
    {back}: the keyword of the scatter sending a read's cotangent back (`, mode="clip"`, or "");
    {pick}: how an update's values read the result's cotangent (`[idx]` or
            `.at[idx].get(mode="fill", fill_value=0)`);
    {get_kw}: the keywords of the user's .get (`mode='fill', fill_value=1.0`), and
    {get_kw_dot}: those of its tangent (fill_value 0);
    {helper_kw}: `, mode=..., fill_value=...` as given, for batching/helpers.py's functions;
    {won}: for x.at[idx].set(v) with an index that may repeat, ` * at_set_won({g}, ...)`: only
            the update left at an element gets its cotangent (JAX's rule), the others 0 (it
            names {g}: the rule formats it again). ints: the names known to hold Python ints
            (a range loop's counter): one element each, as an int literal."""
    if op_name not in READS + UPDATES:
        return {}
    idx = statics.get("idx")
    static_ok = idx is not None and in_range_always(idx)
    mode = _literal(statics.get("mode"))
    known = mode in (None, "clip", "fill", "drop", "promise_in_bounds")   # (else a name)
    keys = {"helper_kw": "".join(f", {k}={statics[k]}" for k in ("mode", "fill_value")
                                 if k in statics)}
    if op_name in READS:
        filled = op_name == "at_get" and mode == "fill"
        keys["back"] = "" if static_ok or filled else ', mode="clip"' if known else \
            f", mode=read_back_mode({statics['mode']})"
        user = {k: v for k, v in statics.items() if k != "idx"}
        keys["get_kw"] = ", ".join(f"{k}={v}" for k, v in user.items())
        if "fill_value" in user:        # (read only where mode is "fill")
            user = {**user, "fill_value": "0"}
        keys["get_kw_dot"] = ", ".join(f"{k}={v}" for k, v in user.items())
    elif static_ok or mode == "clip" or idx is None:
        keys["pick"] = f"[{idx}]"
    elif known:
        keys["pick"] = f'.at[{idx}].get(mode="fill", fill_value=0)'
    else:
        keys["pick"] = f".at[{idx}].get(mode=pick_mode({statics['mode']}), fill_value=0)"
    if op_name == "at_set":
        keys["won"] = "" if idx is None or _no_repeats(idx, ints) or \
            _literal(statics.get("unique_indices")) is True else \
            f" * at_set_won({{g}}, index_exp[{idx}]{keys['helper_kw']})"
    return keys


def _no_repeats(idx, ints=()):
    """Whether the index source holds only slices, `...`, None, integer literals and names of
    ints: no two elements it picks are one."""
    try:
        node = ast.parse(f"_[{idx}]", mode="eval").body.slice
    except SyntaxError:
        return False
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(isinstance(p, ast.Slice) or isinstance(p, ast.Constant) and (
        p.value in (None, ...) or type(p.value) is int) or isinstance(p, ast.Name)
        and p.id in ints or isinstance(p, ast.UnaryOp)
        and isinstance(p.operand, ast.Constant) and type(p.operand.value) is int
        for p in parts)
