"""A derivative's lax loops, differentiated again: its loop helpers as the lax.scan they run.

The first derivative of a lax loop calls rule helpers (ad/rule_helpers.py) that take the
loop's body, or its generated vjp, as an argument:

    (th, om), th_carries = fori_loop_with_carries(0, 8, body, (theta0, v))
    theta0_bar, v_bar = fori_loop_vjp(0, 8, body_vjp, (th_bar, om_bar), th_carries, out=(th, om))

Differentiated again (grad, jvp: not vmap, which batches these helpers by rules of its own),
each such statement is read as the lax.scan the helper runs, written out with a nested def
for its step, so the second derivative goes through the scan rules every order has, and the
values the step closes over (the body's, the vjp's closed-over values) become the scan's
closed-over operands (transformer/normalize.py lifts them into parameters):

    def body_saving(carry, i):
        return (body(i, carry), carry)
    (th, om), th_carries = lax.scan(body_saving, (theta0, v), snp.arange(0, 8))

`lower(stmt, helper_name, fresh)` returns those statements (gast, placed at stmt's line) and
the names in them that hold pytrees, or None when the call's form is not one it reads (the
caller reports it then).
"""
import ast

import gast

_FORWARD = ("fori_loop_with_carries", "scan_with_carries", "while_loop_with_carries")
_REVERSE = ("fori_loop_vjp", "scan_vjp", "map_vjp", "while_loop_vjp")
HELPERS = _FORWARD + _REVERSE


def lower(stmt, helper, fresh):
    """(The statements `stmt` (an assignment of a call of `helper`) stands for, the names in
    them holding pytrees); `fresh(hint)` gives an unused name. None when the call is not in a
    form read here."""
    call = stmt.value
    if any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    target = stmt.targets[0]
    src = {k.arg: gast.unparse(k.value).strip() for k in call.keywords}
    args = [gast.unparse(a).strip() for a in call.args]
    params = {"fori_loop_with_carries": ("lower", "upper", "body_fun", "init_val"),
              "scan_with_carries": ("f", "init", "xs", "length", "reverse"),
              "fori_loop_vjp": ("lower", "upper", "body_vjp", "carry_bar", "carries", "closed",
                                "consts"),
              "scan_vjp": ("f_vjp", "out_bar", "carries", "xs", "closed", "consts", "reverse",
                           "wrt_xs"),
              "map_vjp": ("f_vjp", "ys_bar", "xs", "closed", "consts", "wrt_xs"),
              "while_loop_with_carries": ("cond_fun", "body_fun", "init_val", "count"),
              "while_loop_vjp": ("body_fun", "body_vjp", "carry_bar", "init_val", "saved",
                                 "closed", "consts")}[helper]
    if len(args) > len(params):
        return None
    bound = dict(zip(params, args))
    extra = ("active",) if helper == "while_loop_vjp" else ()   # a while loop vmapped per example
    for k, v in src.items():
        if k in bound or k not in params + ("out", "batch_size", "closed_batched") + extra:
            return None
        bound[k] = v
    fns, pre = [], []
    active = {k.arg: k.value for k in call.keywords}.get("active")
    for at in {"fori": (2,), "whil": (0, 1)}.get(helper[:4], (0,)) + ((None,) if active else ()):
        fn_node = active if at is None else call.args[at] if len(call.args) > at else None
        if isinstance(fn_node, gast.Lambda):        # a lambda: a nested def of its own first
            name = fresh("step_fun")
            pre.append(f"{name} = {gast.unparse(fn_node).strip()}")
            fns.append(name)
        elif isinstance(fn_node, gast.Name):
            fns.append(fn_node.id)
        else:
            return None
    fn = fns if len(fns) > 1 else fns[0]
    closed = _items(call, "closed")
    consts = _items(call, "consts")
    if closed is None or consts is None:
        return None
    made = []

    def fresh_made(hint):
        made.append(fresh(hint))
        return made[-1]
    # (the functions keep their names: a nested def is called, never copied as a value)
    values = {k: v for k, v in bound.items() if k not in _FUNCTION_PARAMS}
    aliases, rename = _outer_aliases([*values.values(), *closed, *consts], fresh_made)
    bound = {**bound, **{k: rename(v) for k, v in values.items()}}
    closed, consts = [rename(c) for c in closed], [rename(c) for c in consts]
    lines = getattr(_Writer(fresh_made, target, fn, bound, closed, consts), helper)()
    if lines is None:
        return None
    lines = aliases + lines
    # pytrees (their cotangents added leaf by leaf): the saved carries, the names made here
    # and the call's arguments passed whole
    # (and the values closed over, and the cotangents of those and of a whole init)
    trees = set(made) | set(closed) | {a.id for a in call.args + [k.value for k in call.keywords]
                                       if isinstance(a, gast.Name) and a.id not in fns}
    if helper in _FORWARD and isinstance(target, gast.Tuple) and \
            isinstance(target.elts[-1], gast.Name):
        trees.add(target.elts[-1].id)
    elif helper in _FORWARD and isinstance(target, gast.Name):    # (out, carries) whole
        trees.add(target.id)
    if helper in _REVERSE:
        wrt_xs = bound.get("wrt_xs", "True" if helper == "map_vjp" else "False") == "True"
        n_out = len(closed) + int(wrt_xs) + int(helper != "map_vjp")
        whole = [target] if n_out == 1 or not isinstance(target, gast.Tuple) else target.elts
        trees |= {t.id for t in whole if isinstance(t, gast.Name)}
    text = "\n".join(pre + lines) + "\n"
    body = gast.parse(text).body
    if pre:     # `f = lambda ...` as a def (the normaliser reads nested defs)
        from secant.transformer.parse import lambda_function_node
        for k in range(len(pre)):
            body[k] = lambda_function_node(body[k].value, body[k].targets[0].id)
    for n in body:
        if isinstance(n, gast.FunctionDef):     # its parameters are pytrees (the carry, ...)
            n.secant_tree_params = {a.id for a in n.args.args}
        for m in gast.walk(n):
            if hasattr(m, "lineno"):
                m.lineno, m.end_lineno = stmt.lineno, stmt.end_lineno
                m.col_offset, m.end_col_offset = stmt.col_offset, stmt.end_col_offset
    return body, trees


def names():
    """What the lowered statements call, by name (the derivative's own module has them)."""
    import secant.numpy as snp
    from secant import lax
    from secant.ad import helpers
    from secant.batching import helpers as batch_helpers
    ours = helpers.by_name()
    return {"snp": snp, "lax": lax, "broadcast_batch": batch_helpers.broadcast_batch,
            **{n: ours[n] for n in ("add_grads", "zeros_like_tree", "zeros_batched",
                                    "where_examples", "cast_like", "trip_count")}}


_FUNCTION_PARAMS = ("body_fun", "cond_fun", "f", "f_vjp", "body_vjp", "active")
# the names the step functions written below bind for themselves
_STEP_LOCALS = frozenset({"bars", "step", "state", "j", "carry_bar", "carry", "carry_g",
                          "carry_out", "i", "x", "y", "y_bar", "x_bar", "new", "s", "_", "took"})


def _outer_aliases(sources, fresh):
    """(lines, rename): a value the call passes that is named like a step function's own local
    (`zeros_like_tree(_)` in init_val, a closed-over `carry`) would be shadowed inside the step:
    it gets another name first (`outer_unused = _`), and `rename` writes a source with it."""
    def names_in(src):
        return {n.id for n in ast.walk(ast.parse(src, mode="eval")) if isinstance(n, ast.Name)}
    clash = sorted(set().union(*map(names_in, sources)) & _STEP_LOCALS)
    if not clash:
        return [], lambda src: src
    new = {c: fresh(f"outer_{c.strip('_') or 'unused'}") for c in clash}

    def rename(src):        # (names only: not a dict's string keys, attributes or keywords)
        tree = ast.parse(src, mode="eval")
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                n.id = new.get(n.id, n.id)
        return ast.unparse(tree)
    return [f"{new[c]} = {c}" for c in clash], rename


def _items(call, keyword):
    """The sources of closed=(a, b) / consts=(...): [] when absent, None when not a tuple."""
    for k in call.keywords:
        if k.arg == keyword:
            if isinstance(k.value, (gast.Tuple, gast.List)):
                return [gast.unparse(e).strip() for e in k.value.elts]
            return None
    return []


def _tuple(items):
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


class _Writer:
    def __init__(self, fresh, target, fn, bound, closed, consts):
        self.fresh, self.target, self.fn, self.bound = fresh, target, fn, bound
        self.closed, self.consts = closed, consts

    def _target(self):
        return gast.unparse(self.target).strip()

    def fori_loop_with_carries(self):
        b, fn = self.bound, self.fn
        step = self.fresh(f"{fn}_saving")
        return [f"def {step}(carry, i):",
                f"    return ({fn}(i, carry), carry)",
                f"{self._target()} = lax.scan({step}, {b['init_val']}, "
                f"snp.arange({b['lower']}, {b['upper']}))"]

    def scan_with_carries(self):
        b, fn, t = self.bound, self.fn, self.target
        if not (isinstance(t, gast.Tuple) and len(t.elts) == 2):
            return None
        first, carries = (gast.unparse(e).strip() for e in t.elts)
        after = []
        if isinstance(t.elts[0], gast.Tuple) and len(t.elts[0].elts) == 2:
            carry, ys = (gast.unparse(e).strip() for e in t.elts[0].elts)
        else:
            carry, ys = self.fresh("scan_carry"), self.fresh("scan_ys")
            after = [f"{first} = ({carry}, {ys})"]
        step = self.fresh(f"{fn}_saving")
        extra = "".join(f", {k}={b[k]}" for k in ("length", "reverse") if k in b)
        return [f"def {step}(carry, x):",
                f"    new, y = {fn}(carry, x)",
                "    return (new, (y, carry))",
                f"{carry}, ({ys}, {carries}) = lax.scan({step}, {b['init']}, "
                f"{b.get('xs', 'None')}{extra})"] + after

    def _closed_names(self, kind):
        return [self.fresh(f"{c}_{kind}") if c.isidentifier() else self.fresh(f"closed_{kind}")
                for c in self.closed]

    def _after(self, carries, final, reverse):
        """(a line, a name): the carry each step ended with, the next step's saved carry (the
        previous one's for a reverse scan), `final` for the last step: a scan that shifts the
        saved carries by one, which every order differentiates as any scan. (None, None) when
        nothing was saved (the body's vjp reads neither: `carries` is None)."""
        if carries == "None":
            return None, "None"
        after = self.fresh(f"{carries}_after" if carries.isidentifier() else "carries_after")
        line = (f"{self.fresh('first')}, {after} = lax.scan(lambda later, carry: (carry, later), "
                f"{final}, {carries}{'' if reverse else ', reverse=True'})")
        return line, after

    def _zeros(self):
        """The closed-over values' cotangents before the first step; under vmap (`batch_size`)
        with a batch axis in front, which the unbatched values (closed_batched) lack."""
        if "batch_size" not in self.bound:
            return [f"zeros_like_tree({c})" for c in self.closed]
        flags = ast.literal_eval(self.bound.get("closed_batched", "()")) or \
            (False,) * len(self.closed)
        return [f"zeros_like_tree({c})" if b is True else
                f"zeros_batched({c}, {self.bound['batch_size']}, {b!r})"
                for c, b in zip(self.closed, flags)]

    def fori_loop_vjp(self):
        b, fn = self.bound, self.fn
        if "out" not in b:
            return None
        step = self.fresh(f"{fn}_back")
        k = len(self.closed)
        cbs, gs = self._closed_names("bars"), self._closed_names("g")
        args = ", ".join(["carry_bar", "carry_out", "i", "carry"] + self.closed + self.consts)
        body = [f"def {step}(bars, step):",
                f"    {', '.join(['carry_bar'] + cbs)} = bars" if k else "    carry_bar = bars",
                "    _, carry, carry_out = step",
                "    i = lax.stop_gradient(step[0])",
                f"    {', '.join(['carry_g'] + gs)} = {fn}({args})",
                f"    return ({_tuple([_KEPT] + _added(cbs, gs)) if k else _KEPT}, None)"]
        init = _tuple([b["carry_bar"]] + self._zeros()) if k else b["carry_bar"]
        shift, after = self._after(b["carries"], b["out"], False)
        xs = f"(snp.arange({b['lower']}, {b['upper']}), {b['carries']}, {after})"
        outs = [self.fresh("carry_bar")] + [self.fresh(f"{c}_bar") for c in cbs]
        call = f"lax.scan({step}, {init}, {xs}, reverse=True)"
        return [shift] * bool(shift) + body + [
            f"{_tuple(outs) if k else outs[0]}, {self.fresh('done')} = {call}",
            f"{self._target()} = {_tuple(outs) if k else outs[0]}"]

    def scan_vjp(self):
        b, fn = self.bound, self.fn
        if "out" not in b:
            return None
        wrt_xs, reverse = b.get("wrt_xs", "False"), b.get("reverse", "False")
        if reverse not in ("True", "False") or wrt_xs not in ("True", "False"):
            return None
        wrt_xs = wrt_xs == "True"
        k = len(self.closed)
        step = self.fresh(f"{fn}_back")
        ct, ys_bar = self.fresh("carry_bar"), self.fresh("ys_bar")
        final, ys = self.fresh("final"), self.fresh("ys")
        cbs, gs = self._closed_names("bars"), self._closed_names("g")
        own = ["carry_g"] + (["x_bar"] if wrt_xs else [])
        args = ", ".join(["(carry_bar, y_bar)", "(carry_out, y)", "carry", "x"]
                         + self.closed + self.consts)
        body = [f"def {step}(bars, step):",
                f"    {', '.join(['carry_bar'] + cbs)} = bars" if k else "    carry_bar = bars",
                "    carry, x, y_bar, carry_out, y = step",
                f"    {', '.join(own + gs)} = {fn}({args})",
                f"    return ({_tuple([_KEPT] + _added(cbs, gs)) if k else _KEPT}, "
                f"{'x_bar' if wrt_xs else 'None'})"]
        init = _tuple([ct] + self._zeros()) if k else ct
        shift, after = self._after(b["carries"], final, reverse == "True")
        xs = f"({b['carries']}, {b.get('xs', 'None')}, {ys_bar}, {after}, {ys})"
        outs = [self.fresh("carry_bar")] + [self.fresh(f"{c}_bar") for c in cbs]
        xs_bar = self.fresh("xs_bar") if wrt_xs else self.fresh("done")
        call = f"lax.scan({step}, {init}, {xs}, reverse={reverse != 'True'})"
        result = outs[:1] + ([xs_bar] if wrt_xs else []) + outs[1:]
        return [f"{ct}, {ys_bar} = {b['out_bar']}", f"{final}, {ys} = {b['out']}"] + \
            [shift] * bool(shift) + body + [
            f"{_tuple(outs) if k else outs[0]}, {xs_bar} = {call}",
            f"{self._target()} = {_tuple(result) if len(result) > 1 else result[0]}"]

    def map_vjp(self):
        b, fn = self.bound, self.fn
        wrt_xs = b.get("wrt_xs", "True")
        if wrt_xs not in ("True", "False"):
            return None
        wrt_xs = wrt_xs == "True"
        k = len(self.closed)
        if not k and not wrt_xs:
            return None
        step = self.fresh(f"{fn}_back")
        cbs, gs = self._closed_names("bars"), self._closed_names("g")
        own = ["x_bar"] if wrt_xs else []
        args = ", ".join(["y_bar", "x"] + self.closed + self.consts)
        body = [f"def {step}(bars, step):"]
        if k:
            body.append(f"    {', '.join(cbs)}{',' if k == 1 else ''} = bars")
        body += ["    x, y_bar = step",
                 f"    {', '.join(own + gs)}{',' if len(own + gs) == 1 else ''} = {fn}({args})"
                 if len(own + gs) > 1 else f"    {(own + gs)[0]} = {fn}({args})",
                 f"    return ({_tuple(_added(cbs, gs)) if k else 'bars'}, "
                 f"{'x_bar' if wrt_xs else 'None'})"]
        init = _tuple(self._zeros()) if k else "0.0"
        outs = [self.fresh(f"{c}_bar") for c in cbs]
        xs_bar = self.fresh("xs_bar") if wrt_xs else self.fresh("done")
        call = f"lax.scan({step}, {init}, ({b['xs']}, {b['ys_bar']}))"
        result = ([xs_bar] if wrt_xs else []) + outs
        return body + [f"{_tuple(outs) if k else self.fresh('done')}, {xs_bar} = {call}",
                       f"{self._target()} = {_tuple(result) if len(result) > 1 else result[0]}"]


    def while_loop_with_carries(self):
        """The loop and what its reverse pass reads, as the helper gives them: the carries
        stacked, in a tuple of one, when jit learns the trip count while tracing (a scan of
        that length), else the step count (what while_loop_vjp recomputes the carries from);
        only the step count where the helper was told count=False (Python side effects)."""
        t = self.target
        (cond, body), b = self.fn, self.bound
        if isinstance(t, gast.Tuple) and len(t.elts) == 2:
            out, saved = (gast.unparse(e).strip() for e in t.elts)
            whole = []
        elif isinstance(t, gast.Name):      # `loop = ...` read as (out, carries) later
            out, saved = self.fresh(f"{t.id}_final"), self.fresh(f"{t.id}_carries")
            whole = [f"{t.id} = ({out}, {saved})"]
        else:
            return None
        counting, test = self.fresh(f"{body}_counting"), self.fresh(f"{cond}_counting")
        saving, steps, trips = self.fresh(f"{body}_saving"), self.fresh("steps"), \
            self.fresh("trips")
        init, stack = self.fresh("init"), self.fresh("stack")
        counted = [f"def {test}(state):",
                   f"    return {cond}(state[0])",
                   f"def {counting}(state):",
                   f"    return ({body}(state[0]), state[1] + 1)"]
        if b.get("count", "True") != "True":     # (a body with Python side effects)
            return counted + [
                f"{out}, {steps} = lax.while_loop({test}, {counting}, ({b['init_val']}, 0))",
                f"{saved} = lax.stop_gradient({steps})"] + whole
        return counted + [f"def {saving}(carry, i):",
                          f"    return ({body}(carry), carry)",
                          f"{init} = {b['init_val']}",
                          f"{trips} = trip_count({cond}, {body}, {init})",
                          f"if {trips} is None:",
                          f"    {out}, {steps} = lax.while_loop({test}, {counting}, ({init}, 0))",
                          f"    {saved} = lax.stop_gradient({steps})",
                          "else:",
                          f"    {out}, {stack} = lax.scan({saving}, {init}, snp.arange({trips}))",
                          f"    {saved} = ({stack},)"] + whole

    def while_loop_vjp(self):
        """Back from the last step to the first: a reverse scan over the stacked carries (a
        tuple of one) when the forward pass saved them, else each step's carry recomputed from
        init_val by a while_loop (n * (n - 1) / 2 extra steps, as under jit at first order):
        while loops, so reverse mode of this too runs eagerly and under jit."""
        b, (body, vjp, *active) = self.bound, self.fn
        k = len(self.closed)
        step = self.fresh(f"{vjp}_back")
        cbs, gs = self._closed_names("bars"), self._closed_names("g")
        # the step's own names, fresh: the values it closes over (init_val, the closed values,
        # the step count) keep theirs; init_val is read once, before the loop
        start, bars, j, carry_bar, carry, carry_g, took, done, s = (self.fresh(h) for h in (
            "init", "bars", "j", "carry_bar", "carry", "carry_g", "took", "done", "s"))
        args = ", ".join([carry_bar, carry] + self.closed + self.consts)
        n = b["saved"]
        lines = [f"{start} = {b['init_val']}",
                 f"def {step}(state):",
                 f"    {bars}, {j} = state",
                 f"    {', '.join([carry_bar] + cbs)} = {bars}" if k else
                 f"    {carry_bar} = {bars}",
                 f"    {carry}, {done} = lax.while_loop(lambda {s}: {s}[1] < {n} - 1 - {j}, "
                 f"lambda {s}: ({body}({s}[0]), {s}[1] + 1), ({start}, 0))",
                 f"    {', '.join([carry_g] + gs)} = {vjp}({args})"]
        if active:      # vmapped per example: the examples that had stopped pass this step
            lines += [f"    {took} = {active[0]}({carry})",
                      f"    {carry_g} = where_examples({took}, {carry_g}, {carry_bar})"]
            lines += [f"    {g} = where_examples({took}, {g}, zeros_like_tree({g}))" for g in gs]
        kept = f"cast_like({carry_g}, {carry_bar})"
        lines += [f"    return ({_tuple([kept] + _added(cbs, gs)) if k else kept}, {j} + 1)"]
        # the same step over the saved carries: each the scan's x (`carry`), no recomputing
        back = self.fresh(f"{vjp}_saved_back")
        lines += [f"def {back}({bars}, {carry}):"] + [
            ln for ln in lines[3:-1] if not ln.lstrip().startswith(f"{carry}, {done} =")]
        lines += [f"    return ({_tuple([kept] + _added(cbs, gs)) if k else kept}, None)"]
        init = _tuple([b["carry_bar"]] + self._zeros()) if k else b["carry_bar"]
        done = self.fresh("done")
        return lines + [f"if isinstance({n}, tuple):",
                        f"    {self._target()}, {done} = lax.scan({back}, {init}, {n}[0], "
                        "reverse=True)",
                        "else:",
                        f"    {self._target()}, {done} = lax.while_loop(lambda {s}: {s}[1] < {n}, "
                        f"{step}, ({init}, 0))"]


# a step's carry cotangent in the dtypes it entered with (ad/rule_helpers.py cast_like, as the
# helpers' own steps do): an integer carry's cotangent stays an integer at every order
_KEPT = "cast_like(carry_g, carry_bar)"


def _added(bars, grads):
    return [f"add_grads({c}, {g})" for c, g in zip(bars, grads)]
