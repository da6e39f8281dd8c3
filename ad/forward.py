"""Forward mode as a source transformation: canonical form in, jvp source out.

The generated function `f_jvp(x, y, x_dot, y_dot)` takes the primals, then the tangents of the
differentiated parameters, and returns `(out, out_dot)`. It runs the user's statements (in
A-normal form) and, after each one, the rule of ad/jvp_rules.py with the user's names filled in,
under a `# Jvp of: <user line>` comment. Tangents are named `<variable>_dot`; a value that does
not depend on the differentiated inputs has no tangent at all (symbolic zero), so no zeros and no
`0 + ...` are written. Python if/for/while stay as written (tangents are ordinary variables
carried through them: forward mode needs no stacks); secant.lax control flow calls the same lax
function with the generated jvp of its function and (primal, tangent) pairs as the carries.
"""
import ast
import inspect
import re

from secant.ad import einsum_rules, index_modes
from secant.ad.jvp_rules import BROADCAST, JOINT, JVP, LINEAR, SEQUENCE, SPECIAL
from secant.ad.stacks import stacks_of
from secant.transformer import dataflow, ir
from secant.transformer.callees import signature_of
from secant.transformer.dtype_flow import Dtypes
from secant.transformer.normalize import call_args
from secant.transformer.ops import CONTROL_FLOW, OPS
from secant.transformer.shapes import ELEMENTWISE, Shapes, operands_of
from secant.transformer.walker import (Line, Walker, dead_code_eliminated, defined_in,
                                       is_literal_number, src)

# generate() modes: "jvp" returns (out, out_dot); "jvp_scan" is the layout of a lax.scan body,
# ((carry, carry_dot), (y, y_dot)), so the scan carries the pair directly
MODES = ("jvp", "jvp_scan")


class ForwardBuilder(Walker):
    label = "Jvp of"

    def __init__(self, fn, names, jvp_of_callee):
        super().__init__(fn, names)
        self.jvp_of_callee = jvp_of_callee  # (callee, positions, mode) -> its name in the code
        self.dots = {}                      # variable -> name of its tangent
        self.dot_names = {}
        self.assigned = []                  # stack of sets: tangents assigned in a loop body
        self.stacks = stacks_of(fn.body)      # a derivative's loop stacks of tracked values
        self.shapes = None                  # which shapes provably agree (when first asked)
        self.dtypes = None                  # which dtypes provably agree (when first asked)
        self.numbers = set()                # variables that may hold a Python number (with a
                                            # tangent): an attribute read, arithmetic on them
        self.pairs = []                     # (call line, unpacking lines, op, tangents) of
                                            # each call of a callee's jvp (_dead_tangent_calls)

    # --- emission ---------------------------------------------------------------------------
    def emit_dot(self, code):
        """A tangent line: the user line it comes from goes above it."""
        self.mark()
        self.emit(code)

    def emit_call(self, code):
        """A tangent line holding a (long) call."""
        self.emit_dot(self.wrapped(code))

    def dot_name(self, var):
        """`x_dot` for x (or the next free `x_dot_N` when the function already uses x_dot)."""
        name = self.dot_names.get(var)
        if name is None:
            name = self.dot_names[var] = self.names.fresh(f"{var}_dot")
        return name

    def set_dot(self, var, expr):
        name = self.dot_name(var)
        self.emit_dot(f"{name} = {expr}")
        self.dots[var] = name
        for s in self.assigned:
            s.add(var)

    def tangent(self, operand):
        """Source of an operand's tangent, or None when it has none (a symbolic zero); a tuple
        or list operand gets zeros for the items without one."""
        if isinstance(operand, ir.Var):
            return self.dots.get(operand.name)
        if isinstance(operand, ir.Seq):
            items = [self.tangent(i) for i in operand.items]
            if all(t is None for t in items):
                return None
            if operand.kind == "dict":      # grad_of_fields' fields: a missing one is zeros
                return "{" + ", ".join(f"{k}: {t}" for k, t in zip(operand.keys, items)
                                       if t is not None) + "}"
            return _seq_src(operand, [t if t is not None else zeros(i)
                                      for t, i in zip(items, operand.items)])
        return None

    def full_tangent(self, operand):
        """tangent, with zeros for every item without one at every level, dict items too: a
        cond's operand or a loop's carry, whose callee's jvp reads each item's tangent."""
        return None if self.tangent(operand) is None else self.container_tangent(operand)

    # --- statements ---------------------------------------------------------------------------
    def plain(self, s):
        """A plain line as is; `x_stack = []` of a derivative whose loop saves differentiated
        values gets a stack of their tangents beside it."""
        self.emit(s.code)
        head, _, rest = s.code.partition(" = ")
        if rest == "[]" and head in self.stacks:
            self.emit_dot(f"{self.stack_dot(head)} = []")

    def stack_dot(self, stack):
        """`x_dot_stack` for x_stack (a name ending in _stack: the next order reads it as one)."""
        name = self.dot_names.get(stack)
        if name is None:
            base = re.sub(r"_stack(_\d+)?$", "", stack)
            name = self.dot_names[stack] = self.names.fresh(f"{base}_dot_stack")
        return name

    def stack(self, s):
        """A derivative's loop stack (ir.Plain.stack): what is pushed takes its tangent onto
        the tangent stack, what is popped takes its tangent from it."""
        kind, stack, name = s.stack
        self.emit(s.code)
        if stack not in self.stacks or kind.endswith("_const"):
            return
        if kind == "push":
            t = self.dots.get(name) or f"snp.zeros_like({name})"
            self.emit_dot(f"{self.stack_dot(stack)}.append({t})")
        else:
            self.set_dot(name, f"{self.stack_dot(stack)}.pop()")

    def render(self, op, operands=None):
        spec = OPS[op.op]
        rendered = {k: src(v) for k, v in op.operands.items()}
        rendered.update(operands or {})
        if op.op == "call":
            return f"{op.callee_name}({call_args(rendered)})"
        return spec.render(rendered, op.statics, op.spelling)

    def op(self, op):
        if op.op in CONTROL_FLOW:
            active = self.control_flow(op)
            if not active:
                self.assign(op, op.statics["forward"])
            return
        if op.op == "call":
            self.call(op)
            return
        self.assign(op, self.render(op))
        if getattr(op, "effect", False):
            return              # (its result dropped: no tangent)
        if op.op in SPECIAL:
            getattr(self, "op_" + op.op)(op)
            return
        expr = self.rule(op)
        if expr is not None:
            self.set_dot(op.targets[0], expr)

    # --- containers of tracked values (transformer/containers.py) -------------------------------
    def container_tangent(self, o):
        """The tangent of a list/tuple/dict operand, zeros for the items without one."""
        if isinstance(o, ir.Seq):
            return _seq_src(o, [self.container_tangent(i) for i in o.items])
        t = self.tangent(o)
        return t if t is not None else f"zeros_like_tree({src(o)})"

    def op_pack(self, op):
        self.set_dot(op.targets[0], self.container_tangent(op.operands["items"]))

    def op_einsum(self, op):
        """The sum over operands with a tangent of einsum with it in their place."""
        params = [p for p in OPS["einsum"].arrays if p in op.operands]
        dots = {p: self.tangent(op.operands[p]) for p in params}
        present = [p for p in params if dots[p] is not None]
        if present:
            fill = {"subscripts": op.statics["subscripts"],
                    **{p: src(op.operands[p]) for p in params},
                    **{f"{p}_dot": dots[p] for p in present}}
            rules = einsum_rules.jvp_templates(params)
            self.set_dot(op.targets[0], " + ".join(rules[p].format(**fill) for p in present))

    def op_concat_seq(self, op):
        x, y = (self.container_tangent(op.operands[p]) for p in ("x", "y"))
        self.set_dot(op.targets[0], f"{x} + {y}")

    def op_dict_merge(self, op):
        x, y = (self.container_tangent(op.operands[p]) for p in ("x", "y"))
        self.set_dot(op.targets[0], f"{x} | {y}")

    def rule(self, op):
        """The tangent of op's result from its operands' tangents (None: no tangent)."""
        spec = OPS[op.op]
        if op.op in SEQUENCE and isinstance(op.operands[spec.sequence], ir.Var):
            t = self.tangent(op.operands[spec.sequence])       # a tracked list passed whole
            if t is None:
                return None
            return f"sum({t})" if op.op == "add_n" else self.render(op, {spec.sequence: t})
        if op.op in SEQUENCE:
            seq = op.operands[spec.sequence]
            t = self.tangent(seq)
            if t is None:
                return None
            if op.op == "add_n":
                present = [i for i in seq.items if self.tangent(i) is not None]
                expr = " + ".join(self.tangent(i) for i in present)
                if len(present) < len(seq.items) and (len(present) > 1 or self._may_widen(
                        op, seq.items, present[0])):   # (the others may broadcast or promote)
                    expr = f"broadcast_like({expr}, {op.targets[0]})"
                return expr
            return self.render(op, {spec.sequence: t})
        dots = {p: self.tangent(o) for p, o in op.operands.items() if p in spec.arrays}
        present = [p for p, t in dots.items() if t is not None]
        if not present:
            return None
        fill = {"ans": op.targets[0]}
        for p in spec.params:
            if p in op.operands:
                fill[p] = src(op.operands[p])
            elif p in op.statics:
                fill[p] = op.statics[p]
            else:
                fill[p] = repr(spec.signature.parameters[p].default)
        fill.update({f"{p}_dot": t for p, t in dots.items() if t is not None})
        fill.update(index_modes.fill_keys(op.op, op.statics))   # (out-of-range indices)

        def render(template, linear_in):
            if template == LINEAR:
                return self.render(op, {p: dots[p] for p in linear_in})
            extra = "".join(f", {k}={v}" for k, v in op.statics.items()
                            if "{" + k + "}" not in template)
            return template.format(**{**fill, "static": extra})

        arrays = [p for p in spec.arrays if p in op.operands
                  and not isinstance(op.operands[p], ir.Expr)]
        if op.op in JOINT and len(present) == len(arrays) and len(arrays) > 1:
            return render(JOINT[op.op], present)
        rules = self._special_case(op) or JVP[op.op]
        present = [p for p in present if rules.get(p) is not None]
        if not present:     # only operands it does not depend on (unmerge's x: its keys)
            return None
        parts = []
        for p in present:
            part = render(rules[p], [p])
            if parts and part.startswith("-"):
                parts.append(("-", part[1:]))
            else:
                parts.append(("+", part))
        expr = parts[0][1] if parts[0][0] == "+" else "-" + parts[0][1]
        for sign, part in parts[1:]:
            expr += f" {sign} {part}"
        numbers = [p for p in present if isinstance(op.operands[p], ir.Var)
                   and op.operands[p].name in self.numbers]
        if op.op in ELEMENTWISE and numbers and len(numbers) == len(present):
            self.numbers.update(op.targets)
        if op.op in BROADCAST and len(present) == 1 and self._may_broadcast(op, present[0]):
            # (the other operand may broadcast the result, or promote its dtype: float16 x +
            # float32 c; a Python number read from an object's attribute may make it a number)
            expr = f"broadcast_like({expr}, {op.targets[0]})"
        return expr

    def _special_case(self, op):
        """Rules that read better for a common special case: z = x * x, z = x ** 3."""
        x, y = op.operands.get("x"), op.operands.get("y")
        if op.op == "multiply" and isinstance(x, ir.Var) and x == y:
            return {"x": "{x} * {x_dot} * 2", "y": None}
        if op.op == "power" and is_literal_number(y) and y.src != "None":
            try:
                n = float(y.src)
            except ValueError:
                return None
            if n == 2:
                return {"x": "2 * {x} * {x_dot}"}
            if n == 0 and y.src.lstrip("-").isdigit():      # x ** 0: a constant, as JAX's
                return {"x": "snp.zeros_like({x_dot})"}
            m = int(n - 1) if n.is_integer() else n - 1
            return {"x": "{x_dot} * " + y.src + " * {x} ** " + str(m)}
        return None

    def _may_broadcast(self, op, param):
        """Only another operand can make the result larger than this one (transformer/shapes.py),
        or of a wider dtype (transformer/dtype_flow.py): Python numbers never do, nor an
        operand of this one's shape computed from its own dtype's values (`sin(x) + ones_like(x)
        * 3.0`)."""
        operand = op.operands.get(param)
        if op.op in ELEMENTWISE and isinstance(operand, ir.Var):
            return self._may_widen(op, operands_of(op), operand)
        others = [o for k, o in op.operands.items() if k != param]
        for key in ("condition", "pred"):
            if key in op.statics:
                others.append(ir.Expr(op.statics[key]))
        return any(not is_literal_number(o) for o in others)

    def _may_widen(self, op, operands, operand):
        """Whether the result of `op` of `operands` (their broadcast and promotion) may have a
        larger shape or a wider dtype than its operand `operand`."""
        if not isinstance(operand, ir.Var):
            return True
        if self.shapes is None:
            self.shapes = Shapes(self.fn)
        if self.shapes.needs_unbroadcast(operands, operand.name, cotangent=False):
            return True
        if not self.shapes.needs_unbroadcast(operands, operand.name, cotangent=False,
                                             dtype=True):
            return False        # (only Python numbers besides it)
        if self.dtypes is None:
            self.dtypes = Dtypes(self.fn, self.shapes)
        return not self.dtypes.keeps_dtype(op, operand.name,
                                           None if op.op in ELEMENTWISE else operands)

    # --- structure ------------------------------------------------------------------------------
    def op_field(self, op):
        t = self.tangent(op.operands["tree"])
        if t is not None:
            self.set_dot(op.targets[0], f"{t}[{op.statics['key']}]")

    def op_attribute(self, op):
        t = self.tangent(op.operands["tree"])
        if t is not None:
            # (a number in a registered class's aux data has a zero tangent: ad/helpers.py)
            tree, name = src(op.operands["tree"]), op.statics["name"]
            self.numbers.update(op.targets)     # (it may hold a Python number)
            self.set_dot(op.targets[0], f"attribute_dot({tree}, {t}, {name!r})")

    def op_getattr(self, op):
        t = self.tangent(op.operands["tree"])
        if t is not None:
            self.numbers.update(op.targets)     # (as op_attribute: aux data has no tangent)
            self.set_dot(op.targets[0],
                         f"attribute_dot({src(op.operands['tree'])}, {t}, {op.statics['name']})")

    def _record(self, targets):
        for t in targets:
            self.dots[t] = self.dot_name(t)
            for s in self.assigned:
                s.add(t)

    def assign(self, op, expr):
        """`targets = expr` of `op`; `expr` alone where the user's code makes the call for its
        effect, its result dropped (normalize.py _called_for_effect)."""
        self.emit(expr if getattr(op, "effect", False) else f"{', '.join(op.targets)} = {expr}")

    def assign_pair(self, op, call, hint):
        """targets (and their tangents) = a call returning (primal, tangent); several targets
        are unpacked from the pair one level at a time (the canonical form unpacks names
        only, so the jvp can be transformed again). A call made for its effect: the call alone,
        its results (and their tangents) dropped as the user's code drops its result."""
        if getattr(op, "effect", False):
            self.emit_call(call)
            return
        self._record(op.targets)
        dots = [self.dots[t] for t in op.targets]
        if len(op.targets) == 1:
            self.emit_call(f"{op.targets[0]}, {dots[0]} = {call}")
            self.pairs.append((self.lines[-1], [], op, dots))
            return
        out, out_dot = self.names.fresh(hint), self.names.fresh(f"{hint}_dot")
        self.emit_call(f"{out}, {out_dot} = {call}")
        first = self.lines[-1]
        self.emit(f"{', '.join(op.targets)} = {out}")
        self.emit_dot(f"{', '.join(dots)} = {out_dot}")
        self.pairs.append((first, [self.lines[-1]], op, dots))

    def call(self, op):
        """A user function: its own generated jvp, on the tangents of the arguments that have
        one."""
        params = list(inspect.signature(op.callee, follow_wrapped=False).parameters)
        position = {k: int(k[3:]) if k.startswith("arg") and k[3:].isdigit() else params.index(k)
                    for k in op.operands}
        keys = sorted((k for k, o in op.operands.items() if self.tangent(o) is not None),
                      key=position.get)
        # (not the value a derivative helper reads for its shape alone, unreduce(t, a)'s a: its
        # output has no tangent from it, as JAX's symbolic zero; zeros times a rule's factor
        # could be 0 * inf, as reverse.py's reverse_call)
        from secant.ad.copies import SHAPE_READERS
        shape_only = SHAPE_READERS.get(getattr(op.callee, "__name__", None)) if getattr(
            op.callee, "__module__", None) == "secant.ad.helpers" else None
        if shape_only is not None:
            keys = [k for k in keys if position[k] != shape_only]
        if not keys:
            self.assign(op, self.render(op))
            return
        positions = tuple(position[k] for k in keys)
        name = self.jvp_of_callee(op.callee, positions, "jvp")
        tangent_params, keyword, n_primal = _tangent_params(self.jvp_of_callee.generated[name],
                                                            len(keys))
        args = call_args({k: src(v) for k, v in op.operands.items()})
        if not keyword and all(k.startswith("arg") for k in op.operands) \
                and len(op.operands) == n_primal:
            tangents = ", ".join(self.tangent(op.operands[k]) for k in keys)
        else:
            tangents = ", ".join(f"{n}={self.tangent(op.operands[k])}"
                                 for n, k in zip(tangent_params, keys))
        self.assign_pair(op, f"{name}({args}, {tangents})", f"{op.callee.__name__}_out")

    # --- Python control flow ---------------------------------------------------------------------
    def if_(self, s):
        before = dict(self.dots)
        results = []
        for _, body in self.branches(s):
            self.dots = dict(before)
            self.block(body)
            results.append((len(self.lines), dict(self.dots)))
        # a variable both branches define, with a tangent in one only: zeros in the other
        defined = [defined_in(s.body), defined_in(s.orelse)]
        new = {}
        for k, (_, dots) in enumerate(results):
            for v, n in dots.items():
                if before.get(v) != n:
                    new[v] = n
        inserts = []
        for k in (0, 1):
            missing = [v for v in sorted(new) if v not in results[k][1]
                       and (v in defined[k] or v in before)]
            inserts.append([Line(f"{self.dot_name(v)} = zeros_like_tree({v})", self.indent + 1)
                            for v in missing])
        end_body, end_else = results[0][0], results[1][0]
        self.lines[end_else:end_else] = inserts[1]
        self.lines[end_body:end_body] = inserts[0]
        self.dots = {**before, **new}

    def loop(self, s):
        """A Python for/while loop: the tangents of the loop variables are carried like the
        variables themselves; a loop variable gets a tangent when its value at the end of an
        iteration has one (to a fixpoint), starting from zeros if it entered without one."""
        loops = [loop for loop, _ in s.carried]
        with_dot = {loop for loop in loops if loop in self.dots}
        mark, before = len(self.lines), dict(self.dots)
        slot, last_comment = self.slot, self.last_comment
        while True:
            del self.lines[mark:]
            self.dots = dict(before)
            self.slot, self.last_comment = slot, last_comment
            for loop in sorted(with_dot - before.keys()):   # (one first assigned in the
                self.set_dot(loop, f"zeros_like_tree({loop})"   # body: no value to take
                             if loop in self.defined_before(s) else "None")   # zeros of yet)
            self.loop_header(s)
            self.assigned.append(set())
            self.block(s.body)
            assigned = self.assigned.pop()
            grow = {loop for loop, last in s.carried
                    if loop not in with_dot and (last in self.dots or loop in assigned)}
            if grow:
                with_dot |= grow
                self.indent -= 1
                continue
            for loop, last in s.carried:     # a value with no tangent replaced one with a tangent
                if loop in with_dot and loop not in assigned:
                    self.set_dot(loop, f"zeros_like_tree({loop})")
            self.indent -= 1
            break
        self.last_comment = None

    def defined_before(self, s):
        """The names the function assigns before the loop `s` (in statements above it, its
        enclosing loops' targets and its parameters): those a loop variable's tangent can
        start as zeros of."""
        out = set(self.fn.params)

        def walk(block):
            for st in block:
                if st is s:
                    return True
                if isinstance(st, ir.Op):
                    out.update(st.targets)
                elif isinstance(st, ir.Plain):
                    out.update(st.defines)
                elif isinstance(st, (ir.If, ir.For, ir.While)):
                    if isinstance(st, ir.For):
                        out.add(st.target)
                    blocks = (st.body, st.orelse) if isinstance(st, ir.If) else (st.body,)
                    if any(walk(b) for b in blocks):
                        return True
            return False
        walk(self.fn.body)
        return out

    # --- secant.lax control flow -------------------------------------------------------------
    def _closed(self, op):
        closed = list(op.operands["closed"].items)
        consts = list(op.operands["consts"].items)
        return closed, consts

    def control_flow(self, op):
        return getattr(self, "cf_" + op.op)(op)

    def cf_cond(self, op):
        operands = list(op.operands["operands"].items)
        closed, consts = self._closed(op)
        n = len(operands)
        args = operands + closed + consts
        positions = [i for i, o in enumerate(operands) if self.tangent(o) is not None] + \
            [n + j for j, c in enumerate(closed) if self.tangent(c) is not None]
        if not positions:
            return False
        jvps = [self.jvp_of_callee(fn, tuple(positions), "jvp") for fn in op.callee]
        call_args_ = ", ".join([src(a) for a in args] +
                               [self.full_tangent(args[p]) for p in positions])
        if op.op == "cond":
            call = f"lax.cond({op.statics['pred']}, {jvps[0]}, {jvps[1]}, {call_args_})"
        else:
            call = f"lax.switch({op.statics['index']}, [{', '.join(jvps)}], {call_args_})"
        self.assign_pair(op, call, f"{op.op}_out")
        return True

    cf_switch = cf_cond

    def _loop_parts(self, op, first):
        """(closed sources, consts sources, positions of closed values with tangents, their
        tangents) for a loop body whose own parameters come first (`first` of them)."""
        closed, consts = self._closed(op)
        extra = [src(c) for c in closed] + [src(c) for c in consts]
        active = [j for j, c in enumerate(closed) if self.tangent(c) is not None]
        return extra, [first + j for j in active], [self.tangent(closed[j]) for j in active]

    def _carry_pair(self, init):
        t = self.full_tangent(init)
        return f"({src(init)}, {t if t is not None else zeros(init)})"

    def cf_fori_loop(self, op):
        init = op.operands["init"]
        extra, closed_pos, closed_dots = self._loop_parts(op, 2)
        if self.tangent(init) is None and not closed_pos:
            return False
        body = self.jvp_of_callee(op.callee[0], tuple([1] + closed_pos), "jvp")
        i, c = self.names.fresh("i"), self.names.fresh("carry")
        inner = ", ".join([i, f"{c}[0]"] + extra + [f"{c}[1]"] + closed_dots)
        st = op.statics
        call = (f"lax.fori_loop({st['lower']}, {st['upper']}, lambda {i}, {c}: {body}({inner}), "
                f"{self._carry_pair(init)})")
        self.assign_pair(op, call, f"{op.op}_out")
        return True

    def cf_while_loop(self, op):
        init = op.operands["init"]
        extra, closed_pos, closed_dots = self._loop_parts(op, 1)
        if self.tangent(init) is None and not closed_pos:
            return False
        cond = self.jvp_of_callee(op.callee[0], (), None)
        body = self.jvp_of_callee(op.callee[1], tuple([0] + closed_pos), "jvp")
        c = self.names.fresh("carry")
        test = ", ".join([f"{c}[0]"] + extra)
        inner = ", ".join([f"{c}[0]"] + extra + [f"{c}[1]"] + closed_dots)
        call = (f"lax.while_loop(lambda {c}: {cond}({test}), lambda {c}: {body}({inner}), "
                f"{self._carry_pair(init)})")
        self.assign_pair(op, call, f"{op.op}_out")
        return True

    def cf_scan(self, op):
        init, xs = op.operands["init"], op.operands["xs"]
        extra, closed_pos, closed_dots = self._loop_parts(op, 2)
        xs_dot = self.full_tangent(xs)
        if self.tangent(init) is None and xs_dot is None and not closed_pos:
            return False
        positions = [0] + ([1] if xs_dot is not None else []) + closed_pos
        body = self.jvp_of_callee(op.callee[0], tuple(positions), "jvp_scan")
        c, x = self.names.fresh("carry"), self.names.fresh("x")
        own = [f"{c}[0]", f"{x}[0]" if xs_dot is not None else x]
        dots = [f"{c}[1]"] + ([f"{x}[1]"] if xs_dot is not None else [])
        inner = ", ".join(own + extra + dots + closed_dots)
        xs_src = f"({src(xs)}, {xs_dot})" if xs_dot is not None else src(xs)
        extra_kw = "".join(f", {k}={op.statics[k]}" for k in ("length", "reverse", "unroll")
                           if k in op.statics)
        call = (f"lax.scan(lambda {c}, {x}: {body}({inner}), {self._carry_pair(init)}, "
                f"{xs_src}{extra_kw})")
        if len(op.targets) == 2:
            carry, ys = op.targets
            self._record(op.targets)
            pairs = self.names.fresh(f"{carry}_pair"), self.names.fresh(f"{ys}_pair")
            self.emit_call(f"{pairs[0]}, {pairs[1]} = {call}")
            self.emit_dot(f"{carry}, {self.dots[carry]} = {pairs[0]}")
            self.emit_dot(f"{ys}, {self.dots[ys]} = {pairs[1]}")
        else:       # one name for (carry, ys): the pairs transposed
            self.assign_pair(op, f"transpose_pairs({call})", "scan_out")
        return True

    def cf_map(self, op):
        xs = op.operands["xs"]
        extra, closed_pos, closed_dots = self._loop_parts(op, 1)
        xs_dot = self.full_tangent(xs)
        if xs_dot is None and not closed_pos:
            return False
        body = self.jvp_of_callee(op.callee[0],
                                  tuple(([0] if xs_dot is not None else []) + closed_pos), "jvp")
        x = self.names.fresh("x")
        if xs_dot is not None:
            inner = ", ".join([f"{x}[0]"] + extra + [f"{x}[1]"] + closed_dots)
            xs_src = f"({src(xs)}, {xs_dot})"
        else:
            inner = ", ".join([x] + extra + closed_dots)
            xs_src = src(xs)
        self.assign_pair(op, f"lax.map(lambda {x}: {body}({inner}), {xs_src})", "map_out")
        return True


def _tangent_params(gen, n):
    """(names of a generated jvp's n tangent parameters, whether they are keyword-only, how many
    primal positional parameters it takes)."""
    params = list(signature_of(gen).parameters.values())
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.default is not p.empty for p in pos):
        return [p.name for p in params if p.kind == p.KEYWORD_ONLY][:n], True, len(pos)
    return [p.name for p in pos[len(pos) - n:]], False, len(pos) - n


def zeros(operand):
    """Source of a zero tangent shaped like `operand` (a dict or list literal's of its kind)."""
    if isinstance(operand, ir.Seq):
        return _seq_src(operand, [zeros(i) for i in operand.items])
    return f"zeros_like_tree({src(operand)})"


def _seq_src(operand, items):
    """A tuple, list or dict literal of operand's kind and keys, of the item sources `items`."""
    if operand.kind == "dict":
        return "{" + ", ".join(f"{k}: {t}" for k, t in zip(operand.keys, items)) + "}"
    inner = ", ".join(items)
    if operand.kind == "tuple":
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    return f"[{inner}]"


def _output(b, value):
    """(primal source, tangent source) of a returned value (zeros where it has no tangent)."""
    t = b.tangent(value)
    return src(value), t if t is not None else zeros(value)


def _signature(fn, wrt, b):
    """The generated parameter list: the user's, then the tangents of `wrt`; when a positional
    parameter has a default, the tangents are keyword-only (after the defaults)."""
    tree = ast.parse(f"def _({fn.args_src}): pass").body[0].args
    dots = [b.dot_name(p) for p in wrt]
    tangent_args = [ast.arg(d) for d in dots]
    if tree.defaults:
        tree.kwonlyargs = tangent_args + tree.kwonlyargs
        tree.kw_defaults = [None] * len(tangent_args) + tree.kw_defaults
    else:
        tree.args = tree.args + tangent_args
    return ast.unparse(tree)




def build(fn, wrt, mode, names, jvp_of_callee, has_aux=False):
    """(source lines, parameter list) of the jvp of `fn` (ir.Function) with respect to the
    parameters named `wrt`: `f_jvp(*params, *wrt_tangents)` returning (out, out_dot), or
    (out, out_dot, aux) with has_aux; mode "jvp_scan" returns ((c, c_dot), (y, y_dot)) for a
    scan body returning (c, y)."""
    b = ForwardBuilder(fn, names, jvp_of_callee)
    for a in ast.walk(ast.parse(f"def _({fn.args_src}): pass").body[0].args):
        if isinstance(a, ast.arg):      # keyword-only ones too (a jvp's own tangents, x_dot)
            names.reserve(a.arg)
    args_src = _signature(fn, wrt, b)
    for p in wrt:
        b.dots[p] = b.dot_name(p)
    b.block(fn.body)
    result = fn.result.value
    aux = None
    if has_aux:
        if not (isinstance(result, ir.Seq) and len(result.items) == 2):
            raise ValueError("has_aux=True needs the function to return a pair (output, aux)")
        result, aux = result.items
    if b.lines:
        b.lines.append(Line("", 1, "blank"))
    b.origin = fn.result.origin
    # which outputs it differentiates (a tangent, not zeros): what a caller unpacking them
    # tracks (normalize.py _call_outputs_active, through transforms._outputs_active)
    fn.outputs_active = None if has_aux else dataflow.items_active(
        fn, lambda item: b.tangent(item) is not None)
    if mode == "jvp_scan":
        if isinstance(result, ir.Seq) and len(result.items) == 2:
            pairs = [_output(b, item) for item in result.items]
        elif isinstance(result, ir.Var):
            t = b.tangent(result)
            r = result.name
            pairs = [(f"{r}[0]", f"{t}[0]" if t else f"zeros_like_tree({r}[0])"),
                     (f"{r}[1]", f"{t}[1]" if t else f"zeros_like_tree({r}[1])")]
        else:
            raise ValueError("the function passed to lax.scan must return a pair (carry, y)")
        ret = "return " + ", ".join(f"({p}, {t})" for p, t in pairs)
    else:
        out, out_dot = _output(b, result)
        ret = f"return {out}, {out_dot}"
        if has_aux:
            ret += f", {src(aux)}"
    b.lines.append(Line(ret, 1))
    return dead_code_eliminated(_dead_tangent_calls(b)), args_src


def _dead_tangent_calls(b):
    """b's lines with each call of a callee's jvp whose tangents nothing reads made a call of
    the callee itself: the primal forward pass of a derivative differentiated again (jvp of
    grad: `out = f(x)` read by grad_seed only) needs f's value, not its tangent, as JAX's
    linearization never asks for one. A custom_vjp function there (whose jvp is refused, as
    in JAX when its tangent is asked for) is then called as it is; the others cost less."""
    if not b.pairs:
        return b.lines
    read = {}
    for ln in b.lines:
        for name in ln.uses:
            read[name] = read.get(name, 0) + 1
    dropped, replaced = set(), {}
    for line, unpack, op, dots in b.pairs:
        if op.op != "call":         # (a lax loop or cond: its own pair form, kept)
            continue
        own = sum(d in u.uses for u in unpack for d in dots)
        if sum(read.get(d, 0) for d in dots) > own:
            continue
        target = ", ".join(op.targets) if not unpack else line.code.split(",", 1)[0]
        replaced[id(line)] = Line(f"{target} = {b.render(op)}", line.indent, origin=line.origin)
        dropped.update(id(u) for u in unpack)
    return [replaced.get(id(ln), ln) for ln in b.lines if id(ln) not in dropped]
