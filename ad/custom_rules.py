"""The derivative functions of secant.custom_vjp and secant.custom_jvp functions.

Each is a short generated function that calls the user's rules by name, so the derivative of any
caller (which calls `f_vjp` / `f_jvp` like the derivative of any helper) leads to them:

    def f_vjp(out_bar, x, w):                 def f_jvp(x, w, x_dot, w_dot):
        out, res = f_fwd(x, w)                    return f_jvp_rule((x, w), (x_dot, w_dot))
        x_bar, w_bar = f_bwd(res, out_bar)
        return x_bar, w_bar

Reverse mode of a custom_jvp function transposes its rule: the rule is linear in the tangents,
so the cotangents are the vjp of `tangent_out(x, w, x_dot, w_dot)` with respect to the tangents
(taken at zero tangents), which reverse mode writes like any other function.
Each builder returns (source, name, free): `free` maps the names the source uses to objects.
"""
from secant.ad.custom_checks import by_name as _checks
from secant.ad.rule_helpers import zeros_like_tree
from secant.codegen.naming import Names

# (what the rules' generated calls read: a parameter's zero tangent, an array's or a pytree's)
_CHECKS = {**_checks(), "zeros_like_tree": zeros_like_tree}


def _rule_name(fn, names, fallback):
    name = getattr(fn, "__name__", "")
    return names.fresh(name if name.isidentifier() else fallback)


def _base_name(custom):
    """The name a custom function's derivatives are named after: the user's function's (for
    its checked forward f_fwd too, transforms.checked_forward: f_vjp, f_tangent)."""
    return getattr(custom, "__secant_checked_forward__", custom).__name__


def _tuple(items):
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def vjp_of_custom_vjp(custom, params, wrt):
    """`f_vjp(out_bar, *params)` -> the cotangents of params[wrt], from the user's fwd and bwd."""
    names = Names(params)
    fwd, bwd = (_rule_name(r, names, f"{custom.__name__}_{k}")
                for r, k in ((custom.fwd, "fwd"), (custom.bwd, "bwd")))
    fn_name = names.fresh(f"{custom.__name__}_vjp")
    fun = names.fresh(custom.__name__)      # (its output type checked against fwd's)
    out, res, out_bar = names.fresh("out"), names.fresh("res"), names.fresh("out_bar")
    lines = [f"def {fn_name}({out_bar}, {', '.join(params)}):",
             f"    {out}, {res} = custom_vjp_fwd_output({fwd}({', '.join(params)}), {out_bar}, "
             f"{fwd}, {fun}, {_tuple(params)})"]
    lines += _bwd_lines(custom, params, wrt, names, bwd, res, out_bar)
    return "\n".join(lines) + "\n", fn_name, {fwd: custom.fwd, bwd: custom.bwd, fun: custom,
                                             **_CHECKS}


def _bwd_lines(custom, params, wrt, names, bwd, res, out_bar):
    """The lines that call bwd on the residuals `res` and return the cotangents of params[wrt]
    (each checked as JAX checks it; None cotangents: zeros)."""
    nondiff = [params[i] for i in custom.nondiff_argnums]
    diff = [p for i, p in enumerate(params) if i not in custom.nondiff_argnums]
    bwd_call = (f"custom_vjp_cotangents({bwd}({', '.join(nondiff + [res, out_bar])}), "
                f"{_tuple(diff)}, {bwd})")
    if len(wrt) == len(diff):
        bars = [names.fresh(f"{p}_bar") for p in diff]
        return [f"    {', '.join(bars)}{',' if len(bars) == 1 else ''} = {bwd_call}",
                f"    return {', '.join(bars)}"]
    cts = names.fresh("cotangents")
    return [f"    {cts} = {bwd_call}",
            f"    return {', '.join(f'{cts}[{diff.index(params[i])}]' for i in wrt)}"]


def _own_name(custom, rule, role):
    """f_fwd / f_bwd, or f_fwd_checked where the user's rule is named f_fwd itself."""
    name = f"{custom.__name__}_{role}"
    return f"{name}_checked" if getattr(rule, "__name__", None) == name else name


def fwd_pair_of_custom_vjp(custom, params, ran):
    """`f_fwd(*params)` -> (out, residuals) from the user's fwd rule, checked: what a caller's
    reverse mode calls for f's value, keeping the residuals for f_bwd (bwd_of_custom_vjp), so
    that (as in JAX) fwd, and the function's body in it, run once per call. `ran`: the custom
    function whose body the caller's primal call ran already (a recompute: f, or the f whose
    replay custom is), or None: in fwd, it runs its body's replay, without its Python side
    effects (ad/custom_checks.body_replayed)."""
    names = Names(params)
    fn_name = names.fresh(_own_name(custom, custom.fwd, "fwd"))
    fwd = _rule_name(custom.fwd, names, f"{custom.__name__}_fwd_rule")
    fun = names.fresh(custom.__name__)
    of = fun if ran is None or ran is custom else names.fresh(ran.__name__)
    call = f"{fwd}({', '.join(params)})" if ran is None else \
        f"body_replayed({fwd}, {', '.join(params)}, custom={of})"
    lines = [f"def {fn_name}({', '.join(params)}):"]
    if ran is not None:
        lines.append(f"    # {ran.__name__}'s body ran in the caller's forward pass: in "
                     f"{fwd}, its replay (no effects)")
    else:
        lines.append(f"    # {custom.__name__}'s value and residuals from its fwd rule "
                     "(checked as JAX checks it)")
    lines.append(f"    return custom_vjp_fwd_pair({call}, {fwd}, {fun}, {_tuple(params)})")
    return "\n".join(lines) + "\n", fn_name, {fwd: custom.fwd, fun: custom, of: ran or custom,
                                             **_CHECKS}


def bwd_of_custom_vjp(custom, params, wrt):
    """`f_bwd(out_bar, res, *params)` -> the cotangents of params[wrt] from the user's bwd rule
    at the residuals its caller's forward pass kept (fwd_pair_of_custom_vjp)."""
    names = Names(params)
    fn_name = names.fresh(_own_name(custom, custom.bwd, "bwd"))
    bwd = _rule_name(custom.bwd, names, f"{custom.__name__}_bwd_rule")
    out_bar, res = names.fresh("out_bar"), names.fresh("res")
    lines = [f"def {fn_name}({out_bar}, {res}, {', '.join(params)}):"]
    lines += _bwd_lines(custom, params, wrt, names, bwd, res, out_bar)
    return "\n".join(lines) + "\n", fn_name, {bwd: custom.bwd, **_CHECKS}


def _rule_call(custom, params, tangents, rule):
    """`rule(nondiff..., (x, w), (x_dot, w_dot))` as the user's custom_jvp rule is called."""
    nondiff = [params[i] for i in custom.nondiff_argnums]
    primals = [p for i, p in enumerate(params) if i not in custom.nondiff_argnums]
    return f"{rule}({', '.join(nondiff + [_tuple(primals), _tuple(tangents)])})"


def jvp_of_custom_jvp(custom, params, wrt):
    """`f_jvp(*params, *tangents of params[wrt])` -> (out, out_dot), from the user's rule;
    parameters without a tangent get zeros."""
    names = Names(params)
    rule = _rule_name(custom.jvp, names, f"{custom.__name__}_jvp_rule")
    fn_name = names.fresh(f"{custom.__name__}_jvp")
    dots = {i: names.fresh(f"{params[i]}_dot") for i in wrt}
    tangents = [dots.get(i, f"zeros_like_tree({p})") for i, p in enumerate(params)
                if i not in custom.nondiff_argnums]
    lines = [f"def {fn_name}({', '.join(params + list(dots.values()))}):",
             f"    return custom_jvp_outputs({_rule_call(custom, params, tangents, rule)}, "
             f"{rule})"]
    return "\n".join(lines) + "\n", fn_name, {rule: custom.jvp, **_CHECKS}


def tangent_of_custom_jvp(custom, params):
    """`f_tangent(*params, *tangents)` -> the rule's tangent output: linear in the tangents."""
    names = Names(params)
    rule = _rule_name(custom.jvp, names, f"{custom.__name__}_jvp_rule")
    fn_name = names.fresh(f"{_base_name(custom)}_tangent")
    diff = [p for i, p in enumerate(params) if i not in custom.nondiff_argnums]
    dots = [names.fresh(f"{p}_dot") for p in diff]
    out, out_dot = names.fresh("out"), names.fresh(f"{_base_name(custom)}_dot")
    lines = [f"def {fn_name}({', '.join(params + dots)}):",
             f"    {out}, {out_dot} = {_rule_call(custom, params, dots, rule)}",
             f"    return {out_dot}"]
    return "\n".join(lines) + "\n", fn_name, {rule: custom.jvp}


def fwd_of_custom_jvp(custom, params):
    """`f_fwd(*params)` -> f's output from its rule at zero tangents, checked: what a caller's
    reverse mode calls for f's value, so that (as in JAX) the rule, and the function's body in
    it, run once per call; its vjp (vjp_of_custom_jvp, checked=False) checks nothing again."""
    names = Names(params)
    rule = _rule_name(custom.jvp, names, f"{custom.__name__}_jvp_rule")
    fn_name = names.fresh(f"{custom.__name__}_fwd")
    zeros = [f"zeros_like_tree({p})" for i, p in enumerate(params)
             if i not in custom.nondiff_argnums]
    lines = [f"def {fn_name}({', '.join(params)}):",
             f"    # {custom.__name__}'s value from its rule (checked as JAX checks it)",
             f"    return custom_jvp_outputs({_rule_call(custom, params, zeros, rule)}, "
             f"{rule})[0]"]
    return "\n".join(lines) + "\n", fn_name, {rule: custom.jvp, **_CHECKS}


def vjp_of_custom_jvp(custom, params, wrt, tangent_vjp, checked=True):
    """`f_vjp(out_bar, *params)`: the transposed rule, i.e. `tangent_vjp` (the generated vjp of
    tangent_of_custom_jvp with respect to the tangents of params[wrt]) at zero tangents; first
    (checked) the rule's outputs checked, unless the caller's forward pass had them from f_fwd."""
    names = Names(params)
    fn_name = names.fresh(f"{_base_name(custom)}_vjp")
    out_bar = names.fresh("out_bar")
    transpose = names.fresh(tangent_vjp.__name__)
    zeros = [f"zeros_like_tree({p})" for i, p in enumerate(params)
             if i not in custom.nondiff_argnums]
    rule = _rule_name(custom.jvp, names, f"{custom.__name__}_jvp_rule")
    free = {transpose: tangent_vjp, rule: custom.jvp, **_CHECKS}
    lines = [f"def {fn_name}({out_bar}, {', '.join(params)}):"]
    if checked:     # (f's body ran in the caller's forward pass: in the rule, its replay)
        nondiff = [params[i] for i in custom.nondiff_argnums]
        primals = [p for i, p in enumerate(params) if i not in custom.nondiff_argnums]
        origin = custom
        while getattr(origin, "__secant_replay_of__", None) is not None:
            origin = origin.__secant_replay_of__    # (a replay's rule calls the function)
        fun = names.fresh(_base_name(origin))
        free[fun] = origin
        lines += ["    # the rule's outputs checked as JAX checks them (ad/custom_checks.py)",
                  f"    custom_jvp_rule_checked({rule}, {fun}, {_tuple(primals)}, {_tuple(zeros)}"
                  f"{', ' + _tuple(nondiff) if nondiff else ''})"]
    lines += ["    # the rule is linear in the tangents: its transpose at zero tangents",
              f"    return {transpose}({out_bar}, {', '.join(params + zeros)})"]
    return "\n".join(lines) + "\n", fn_name, free


def jvp_rule_from_parts(custom, params, jvps):
    """The rule `defjvps(jvp_x, jvp_w)` means: out_dot = jvp_x(x_dot, ans, x, w) + jvp_w(...)."""
    names = Names(params)
    fn_name = names.fresh(f"{custom.__name__}_jvp_rule")
    fn = names.fresh(custom.__name__)
    primals_name, tangents_name, ans = (names.fresh(n) for n in ("primals", "tangents", "ans"))
    nondiff = [params[i] for i in custom.nondiff_argnums]
    diff = [p for i, p in enumerate(params) if i not in custom.nondiff_argnums]
    dots = [names.fresh(f"{p}_dot") for p in diff]
    free, terms = {fn: custom}, []
    for p, dot, rule in zip(diff, dots, jvps):
        if rule is not None:
            name = _rule_name(rule, names, f"{custom.__name__}_jvp_{p}")
            free[name] = rule
            terms.append(f"{name}({dot}, {ans}, {', '.join(params)})")
    lines = [f"def {fn_name}({', '.join(nondiff + [primals_name, tangents_name])}):",
             f"    {', '.join(diff)}{',' if len(diff) == 1 else ''} = {primals_name}",
             f"    {', '.join(dots)}{',' if len(dots) == 1 else ''} = {tangents_name}",
             f"    {ans} = {fn}({', '.join(params)})",
             f"    return {ans}, {' + '.join(terms) or f'snp.zeros_like({ans})'}"]
    return "\n".join(lines) + "\n", fn_name, free


def vjp_of_checkpoint(custom, params, wrt, inner, unread=frozenset()):
    """`f_checkpoint_vjp(out_bar, *params)`: the generated vjp of f (`inner`, which recomputes
    f's forward pass), its differentiated arguments that it reads (not the positions in
    `unread`) first passed through an optimization barrier so that XLA recomputes instead of
    reusing the forward pass's values."""
    names = Names(params + [inner])
    fn_name = names.fresh(f"{custom.__name__}_checkpoint_vjp")
    out_bar = names.fresh("out_bar")
    lines = [f"def {fn_name}({out_bar}, {', '.join(params)}):",
             f"    # checkpoint: the forward pass kept only the arguments of "
             f"{custom.__name__}; its intermediates are recomputed here"]
    if custom.prevent_cse:
        lines.append("    # (behind an optimization barrier, so that XLA cannot reuse the forward "
                     "pass's values)")
        lines += [f"    {params[i]} = lax.optimization_barrier({params[i]})" for i in wrt
                  if i not in unread]
    lines.append(f"    return {inner}({out_bar}, {', '.join(params)})")
    return "\n".join(lines) + "\n", fn_name
