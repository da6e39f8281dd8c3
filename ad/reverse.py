"""Reverse mode as a source transformation: canonical form in, derivative source out.

The generated function runs the forward statements (the user's own, in A-normal form), seeds
the output's cotangent, then walks the statements backwards writing each rule of
ad/vjp_rules.py with the user's names filled in, under a `# Grad of: <user line>` comment.
Cotangents are named `<variable>_bar`; the first contribution assigns, later ones add (no zero
initialisation); values that do not depend on the differentiated inputs get no code at all.
"""
import ast
import inspect
import re

from secant.errors import SecantError
from secant.ad import accumulate, algebra, copies, cse, einsum_rules, fields, fold, index_modes
from secant.ad.stacks import StackReverse, stacks_of
from secant.ad.state_inputs import called_object, pass_state, plain_state_callee
from secant.ad.vjp_rules import (CONTAINER_VJP, NORMALISED_VJP, SEQUENCE_VJP, SHAPE_ONLY, SPECIAL,
                                 SUMS_COTANGENT, TAKES_UNSUMMED, TRANSPOSED_VJP, UNBROADCAST,
                                 VJP)
from secant.transformer import dataflow, ir
from secant.transformer.callees import signature_of
from secant.transformer.containers import container_names
from secant.transformer.normalize import call_args
from secant.transformer.ops import CONTROL_FLOW, OPS
from secant.transformer.shapes import ELEMENTWISE, Shapes, is_python_number, operands_of
from secant.transformer.walker import (Line, Walker, parsed, dead_code_eliminated, defined_in,
                                       fill_slot, is_literal_number, src,
                                       unread_targets_unnamed)


class ReverseBuilder(Walker, StackReverse):
    label = "Grad of"

    def __init__(self, fn, wrt, names, vjp_of_callee):
        super().__init__(fn, names)
        self.wrt = wrt                      # parameter names to differentiate
        self.vjp_of_callee = vjp_of_callee  # (callee, active positions) -> generated vjp name
        self.bars = {}                      # variable -> name of its cotangent
        self.fields = {}            # container variable -> [(key, kind, cotangent, field read)]
        self.bar_names = {}
        self.containers = _containers(fn.body) | getattr(fn, "trees", set()) | getattr(
            fn, "containers", set())                # variables read item by item (pytrees)
        self.arrays = arrays_read(fn.body)          # variables an array op reads: arrays
        self.fielded = _fields_read(fn.body)        # read by name (r["a"], p.w): containers
        self.subscripted = {op.operands["a"].name for op in _ops_in(fn.body)   # x[i]
                            if op.op == "getitem" and isinstance(op.operands["a"], ir.Var)}
        self.containers |= _subscripted_items(fn.body, self.containers, self.arrays)
        # (of those, the ones read only by a loop's counter: a list or an array, _RowAdds)
        self.maybe_rows = _maybe_rows(fn.body) - _containers(fn.body, by_counters=False) - \
            getattr(fn, "trees", set()) - getattr(fn, "containers", set()) - self.fielded
        # a loop name bound to None before a loop (vmap of a derivative: a value a branch of
        # the loop assigns) and the names it is copied to or from: None on some iterations,
        # whose cotangents (None too) add with add_grads
        self.maybe_none = _none_bound(fn.body)
        # an item added into a container (add_at's item) and the names copied into one: a
        # pytree where the container holds pytrees, though an array op reads it elsewhere
        self.tree_items = _tree_items(fn.body)
        # an object's field never read as an array (self.layers of a module) and the items
        # of it called (layers[-1](x)): pytrees, whose items' cotangents add with add_at
        self.object_fields = {t for op in _ops_in(fn.body)
                              if op.op in ("field", "attribute", "getattr") for t in op.targets}
        self.called = {op.operands["arg0"].name for op in _ops_in(fn.body)
                       if op.op == "call" and isinstance(op.operands.get("arg0"), ir.Var)
                       and (getattr(op, "callee_name", None) or "").startswith("dynamic_call")}
        self.shapes = Shapes(fn)                    # which shapes provably agree
        self.real_scalars = frozenset()     # grad's output and what it provably makes so
        # whether a real scalar's cotangent was read from operands that may have another float
        # dtype (float16 x * float32 y gives x's in float32): grad's parameters' cotangents are
        # then cast back to their own dtypes where it returns them (one of several parameters)
        self.mixed_scalars = False
        self.guards = _guards(fn.body)          # variable -> the (test, branch)s of each site
        self.branch_path = []                   # the (test, branch)s of the ifs being written
        self.stacks = stacks_of(fn.body)        # a derivative's loop stacks (ad/stacks.py)
        self.unbound = {v for s in ir.nested(fn.body) if isinstance(s, ir.Plain)
                        and "= unbound_before_loop(" in s.code for v in s.defines}
        self.loops = []                         # the loops being written, innermost last
        self.ranges = _ranges(fn.body)      # a loop over one steps through ints (_RowAdds)
        self.counting = _ranges(fn.body, counting=True)     # (0, 1, ..., n - 1: _RowAdds)
        self.counters = []      # the targets of the range loops being reversed: Python ints
        self.row_adds = None    # the reverse loop being written's row scatters (_RowAdds)
        self.replaying = False                  # writing a loop iteration's replay (its loop)
        # a vjp recomputes its function's forward pass, which its caller ran already (the
        # primal call): the Python side effects there (print, wrapper.calls += 1, log.append)
        # ran then, once per call as in the user's program, and are not run again
        self.recomputing = False
        # custom_vjp calls whose forward line keeps fwd's residuals (`y, y_res = f_fwd(x)`):
        # id(op) -> (f_bwd's name, the residuals' name); none in a replay form
        self.pairs, self.pair_calls = {}, True
        self.passed = {}    # calls passed the state they read: ad/state_inputs.py pass_state
        self.replay_form = False        # writing a replay form (its effects flag what it has)
        self.effects = False        # Python side effects left out (or a callee's replay called)
        # read for its shape only, a value may be read from another (transformer/dataflow.py)
        self.witnesses = dataflow.shape_witnesses(fn)
        self.top_level = dataflow.assigned_once_at_top(fn)
        self.at_top = set(self.top_level)
        self.first_alike = None     # _stand_in's: alternatives -> the first top-level name
        self.assigned_once = dataflow.definitions(fn)   # name -> how many assignments
        # values whose own rule sums their cotangent to their shape (a matmul's result)
        self.summed = dataflow.summed_by_own_rule(fn, SUMS_COTANGENT)
        # values whose own rule may take their cotangent unsummed (vjp_rules.TAKES_UNSUMMED),
        # and those of them whose cotangent its one reader gave so
        self.sums_later = {v: op for v, (op, _) in dataflow.read_once_at_top(fn).items()
                           if op.op in TAKES_UNSUMMED and v not in self.containers}
        self.varied = dataflow.varied(fn, wrt)
        # values the outputs provably do not depend on (softmax's max): no cotangent written
        self.shift_only = dataflow.shift_only(fn)
        # softmax and log-softmax written out: their result's rule reads it alone (the exp and
        # the sum it normalises by have no cotangent), given its cotangent of its own shape
        self.normalised = {v: n for v, n in dataflow.normalised_exps(fn).items()
                           if n[1] not in self.containers and n[1] not in self.shift_only}
        for v in self.normalised:
            self.sums_later.pop(v, None)
        # a matmul's right operand a transpose read by it alone: its rules read what is
        # transposed (`q @ k.T`: k), the transpose not kept for them
        self.transposed = {t: a for t, a in dataflow.transposed_operands(fn).items()
                           if t not in self.containers and a not in self.containers}
        self.defers = {}            # those of them whose cotangent comes unsummed (_defers)
        self.unsummed = set()       # those given so
        self.unreduced = {}             # loop carries only added to: {name: start value}
        self.unreduced_now = set()      # those of the loops being reversed
        self.replayed = set()           # what the reverse loop being written replays
        self.same_shape = set()         # a lax loop body's (carry out, carry in) leaves
        self.structure = {}     # a container -> another of its structure (a carry: its cotangent)
        self.shape_reads = {}   # placeholder -> (value read for its shape, its stand-in)
        # a sum's or mean's rule whose stand-in is its operand's shape (_shape_source):
        # placeholder of its function -> (its operand's placeholder, the function reading a
        # value, the function reading a shape)
        self.shape_calls = {}
        once = set(self.top_level)
        self.top_ops = {s.targets[0]: s for s in fn.body if isinstance(s, ir.Op)
                        and len(s.targets) == 1 and s.targets[0] in once}
        self.fn_params = set(fn.params)
        self.inexact_params = frozenset()   # grad's differentiated parameters (inexact: checked)
        self.dtype_reads = {}   # a seed's placeholder -> the values of its value's dtype
        # what an unpacking pattern binds a cotangent nobody reads to: `_`, unless the function
        # reads a variable called `_` (a derivative's own `_, ys = scan(...)`), which it keeps,
        # or has a parameter called `_` (a scan body's `def step(state, _)`): its cotangent
        # (zeros_like_tree(_), None for xs=None) is written from it after the discards
        self.inlined_temporaries = set()    # a helper's vjp written in place: its temporaries
        self.discard = names.fresh("unused") if "_" in fn.params or _reads_underscore(fn) \
            else "_"

    # --- emission ---------------------------------------------------------------------------
    def comment(self, origin):
        """Reverse mode writes a user line's comment above its (reverse) rule at once."""
        if origin is not None and origin.text != self.last_comment:
            self.lines.append(Line(f"# {self.label}: {origin.text}", self.indent, "comment"))
            self.last_comment = origin.text

    def bar_name(self, var):
        """`x_bar` for x (or the next free `x_bar_N` when the function already uses x_bar)."""
        name = self.bar_names.get(var)
        if name is None:
            name = self.bar_names[var] = self.names.fresh(f"{var}_bar")
        return name

    def accumulate(self, var, expr):
        """var's cotangent += expr (the first contribution just assigns)."""
        if var in self.bars:
            b = self.bars[var]
            self.emit(self._add(var, b, expr))
        else:
            b = self.bars[var] = self.bar_name(var)
            self.emit(f"{b} = {expr}")

    def _add(self, var, bar, expr):
        """bar = bar + expr, leaf by leaf for what may be a container (a list + a list would
        concatenate): a variable no array op reads (a parameter only passed to helpers, say)."""
        if self._may_be_container(var):
            return f"{bar} = add_grads({bar}, {expr})"
        return f"{bar} = {bar} + {expr}"

    def _may_be_container(self, var):
        return var in self.containers or var not in self.arrays or var in self.maybe_none \
            or var in self.tree_items or var in self.fielded

    # --- forward -------------------------------------------------------------------------------
    def forward(self, stmts):
        for s in stmts:
            self.origin = s.origin
            if isinstance(s, ir.Plain) and s.stack:
                self.forward_stack(s)
            elif isinstance(s, ir.Plain):
                if not (s.effect and (self.replaying or self.recomputing)):  # print once
                    self.emit(s.code)
                else:
                    self.effects = True
            elif isinstance(s, ir.Op) and s.op in CONTROL_FLOW:
                self.forward_control_flow(s)
            elif isinstance(s, ir.Op) and not self.forward_pair(s):
                self.emit(f"{', '.join(s.targets)} = {self.render(s)}")
            elif isinstance(s, (ir.For, ir.While)):
                s.saves = Line("", self.indent, "slot", s.origin)  # filled by the reverse loop
                self.lines.append(s.saves)
                header = f"for {s.target} in {s.iterable}:" if isinstance(s, ir.For) else \
                    f"while {s.test}:"
                self.lines.append(Line(header, self.indent, "block", s.origin))
                self.indent += 1
                s.pushes = Line("", self.indent, "slot", s.origin)
                self.lines.append(s.pushes)
                s.replay_inits = []             # stacks of what the body pops (ad/stacks.py)
                self.loops.append(s)
                self.forward(s.body)
                self.loops.pop()
                self.indent -= 1
                if s.replay_inits:
                    fill_slot(s.saves, s.replay_inits)
            elif isinstance(s, ir.If):
                self.lines.append(Line(f"if {s.test}:", self.indent, "block", s.origin))
                self.indent += 1
                self.forward(s.body) if s.body else self.emit("pass")
                self.indent -= 1
                if s.orelse:
                    self.lines.append(Line("else:", self.indent, "block"))
                    self.indent += 1
                    self.forward(s.orelse)
                    self.indent -= 1

    def render(self, op):
        spec = OPS[op.op]
        if op.op == "call":
            name = self._replay(op) if self.replaying or self.recomputing else \
                self._checked_forward(op)
            return f"{name or op.callee_name}(" \
                   f"{call_args({k: src(v) for k, v in op.operands.items()})})"
        return spec.render({k: src(v) for k, v in op.operands.items()}, op.statics,
                           op.spelling)

    def _checked_forward(self, op):
        """A custom_jvp function called in the primal pass: the name of its value from its rule
        (transforms.checked_forward), whose vjp reverse_call calls; None for other callees."""
        fwd = self._forward_of(op.callee) if any(_has_var(o) for o in op.operands.values()) \
            else None
        return None if fwd is None else self.vjp_of_callee(fwd, None, None)

    def _forward_of(self, callee):
        checked = getattr(self.vjp_of_callee, "checked_forward", None)
        if checked is None or self.recomputing or not getattr(callee, "__secant_custom__", False):
            return None
        return checked(callee)

    def forward_pair(self, op):
        """`y, y_res = f_fwd(x)` for a call of a custom_vjp function f (transforms.pair_forward):
        its value and residuals from the user's fwd, which reverse_call's f_bwd reads, so that
        fwd (and f's body in it) runs once per call, as in JAX. Not in a loop's forward pass
        (the residuals would need a stack) or a replay form; in a loop iteration's replay in
        the reverse pass, where the iteration's f_bwd reads them, with f's body replayed in
        fwd (the forward pass ran it): the body once per call and fwd once, as in JAX. Whether
        it wrote it."""
        make = getattr(self.vjp_of_callee, "pair_forward", None)
        # (in the replay of the loop whose iteration is reversed, not of a loop inside it)
        if make is None or op.op != "call" or self.loops and (
                not self.replaying or self.loops[-1] is not self.replaying) or \
                not self.pair_calls or type(op.callee).__name__ != "custom_vjp":
            return False
        try:
            params = list(signature_of(op.callee, follow_wrapped=False).parameters)
            active = tuple(sorted(int(k[3:]) if k.startswith("arg") and k[3:].isdigit()
                                  else params.index(k) for k, o in op.operands.items()
                                  if _has_var(o)))
        except (TypeError, ValueError):
            return False
        made = make(op.callee, active, self.recomputing or self.replaying) if active else None
        if made is None:
            return False
        fwd, bwd = (self.vjp_of_callee(g, None, None) for g in made)
        res = self.names.fresh(f"{op.targets[0] if len(op.targets) == 1 else op.callee_name}"
                               "_res")
        self.pairs[id(op)] = (bwd, res)
        out = ", ".join(op.targets) if len(op.targets) == 1 else f"({', '.join(op.targets)})"
        self.emit(f"{out}, {res} = {fwd}({call_args({k: src(v) for k, v in op.operands.items()})})")
        return True

    def _replay(self, op):
        """A callee recomputed here (its caller's primal call ran it): its replay form,
        without its Python side effects, where it has some (transforms.py replay_of). A
        generated callee too: the jvp, batched function or Jacobian of a user function runs
        that function's effects (grad(jvp(f)), jacrev(vmap(f)): f's once, not twice)."""
        callee = op.callee
        replay_of = getattr(self.vjp_of_callee, "replay_of", None)
        custom = getattr(callee, "__secant_custom__", False)    # (replay_of keeps its rule)
        if replay_of is None or not (inspect.isfunction(callee) or custom) or any(
                getattr(callee, a, None) for a in (
                    "__secant_dispatch__", "__secant_dispatched__",
                    "__secant_batched_dispatch__", "__secant_per_example__")):
            return None
        try:
            params = list(signature_of(callee, follow_wrapped=False).parameters)
            active = tuple(sorted(int(k[3:]) if k.startswith("arg") and k[3:].isdigit()
                                  else params.index(k) for k, o in op.operands.items()
                                  if _has_var(o)))
        except (TypeError, ValueError):
            return None
        name = replay_of(callee, active)
        if name is not None:
            self.effects = True
        return name

    # --- reverse -------------------------------------------------------------------------------
    def reverse(self, stmts):
        starts = None       # (the block's loops' start values: dataflow.LoopStarts)
        for k in range(len(stmts) - 1, -1, -1):
            s = stmts[k]
            self.origin = s.origin
            if isinstance(s, (ir.For, ir.While)):
                starts = starts or dataflow.LoopStarts(stmts)
                self.unreduced.update(dataflow.unreduced_carries(s, stmts[:k],
                                                                 starts.of(s, k)))
            if isinstance(s, ir.Op):
                self.reverse_op(s)
            elif isinstance(s, ir.Plain) and s.stack:
                self.reverse_stack(s)
            elif isinstance(s, ir.If):
                self.reverse_if(s)
            elif isinstance(s, (ir.For, ir.While)):
                self.reverse_for(s)

    def reverse_if(self, s):
        for var in sorted(defined_in(s.body) | defined_in(s.orelse)):
            if self.fields.get(var):    # fields read after the if from a container it assigns
                self.flush_fields(var, self.fields.pop(var))    # (in both branches): here
        before = dict(self.bars)
        start = len(self.lines)
        results = []
        for block in (s.body, s.orelse):
            self.bars = dict(before)
            mark = len(self.lines)
            self.indent += 1
            self.last_comment = None
            pending = {v: len(e) for v, e in self.fields.items()}
            self.branch_path.append((s.test, len(results)))
            self.reverse(block)
            self.branch_path.pop()
            for var in list(self.fields):   # fields read in the branch: their cotangents are
                k = pending.get(var, 0)     # defined in it, so the container's is built there
                if len(self.fields[var]) > k:
                    entries = self.fields[var][k:]
                    del self.fields[var][k:]
                    if not self.fields[var]:
                        del self.fields[var]
                    self.flush_fields(var, entries)
            self.indent -= 1
            results.append((self.lines[mark:], dict(self.bars)))
            del self.lines[mark:]
        local = defined_in(s.body) | defined_in(s.orelse)   # their cotangents stay inside
        new = (results[0][1].keys() | results[1][1].keys()) - before.keys() - local
        if not new and not any(r[0] for r in results):
            self.bars = before
            return
        del self.lines[start:]
        # a loop stack's cotangent stack (ad/stacks.py) begun in a branch keeps its name after
        # the if (the reverse of the pushes pops it); the other branch begins it empty, or
        # names the same list
        stack_bars = {v: next(b[v] for _, b in results if v in b)
                      for v in new if v in self.stacks}
        for i, (block_lines, bars) in enumerate(results):
            self.lines.append(Line("if " + s.test + ":" if i == 0 else "else:", self.indent,
                                   "block"))
            self.lines.extend(block_lines)
            for var, name in sorted(stack_bars.items()):
                if bars.get(var) != name:
                    self.lines.append(Line(f"{name} = {bars.get(var, '[]')}", self.indent + 1))
            for var in sorted(new - bars.keys() - stack_bars.keys()):   # in the other branch
                if self._unbound_on(var, self.branch_path + [(s.test, i)]):
                    continue        # var itself exists only when this branch is not taken
                shaped = self._shaped_like(var, s.orelse if i == 0 else s.body, before)
                zeros = self._tree_zeros(var)       # (a list's: a list of zeros)
                self.lines.append(Line(f"{self.bar_name(var)} = {zeros}({shaped})",
                                       self.indent + 1))
            if not block_lines and not (new - bars.keys()):
                self.lines.append(Line("pass", self.indent + 1))
        self.bars = {**before, **{v: self.bar_name(v) for v in new}, **stack_bars}
        for block_lines, bars in results:    # outer cotangents added to in a branch
            for v in bars.keys() & before.keys():
                self.bars[v] = bars[v]

    def _unbound_on(self, var, path):
        """Whether every assignment of var sits under an if branch that path (the tests and
        branches taken to reach a point) excludes: var is then never bound there (an `elif`
        chain's variable assigned in two of its branches is unbound in a third)."""
        sites = self.guards.get(var)
        return bool(sites) and all(any((t, 1 - b) in site for t, b in path) for site in sites)

    def _shaped_like(self, var, other, before):
        """What zeros for var's cotangent are shaped like: var itself, or for a loop name unbound
        before the loop's first iteration (normalize.py: unbound_before_loop), the cotangent of
        the value the other branch copies it into (a later iteration's value of the variable):
        var is then never read, so the forward loop need not save it."""
        if var in self.unbound:
            for st in ir.nested(other):
                target = _copy_of(st, var)
                if target in before:
                    return before[target]
        return var

    def _bound_before(self, name, loop):
        """Whether `name` has a value before the loop statement `loop` starts (a definition
        outside its body)."""
        inside = {id(st) for st in ir.nested(loop.body)}
        for d, _ in self.shapes.defs.get(name, []):
            if d == "param" or id(d[1] if d[0] in ("plain", "for") else d[0]) not in inside:
                return True
        return False

    def reverse_for(self, s):
        """Replay the iterations backwards: restore the values each iteration started from
        (saved on a stack by the forward loop), recompute the iteration, then its derivative.
        A while loop (ir.While) also counts its iterations; the reverse loop runs that many."""
        loops = {loop for loop, _ in s.carried}
        defined = defined_in(s.body)
        outer = sorted({o.name for o in _operands_in(s.body) if isinstance(o, ir.Var)}
                       - defined - loops)
        outer_names = set(outer)
        for loop, _ in s.carried:       # fields read from a loop's result after it (q["w"])
            if self.fields.get(loop):
                self.flush_fields(loop, self.fields.pop(loop))
        # a carry every assignment of which is a Python number (a counter) has no cotangent:
        # what it is computed from is Python numbers too (transformer/shapes.py)
        # (nor a derivative's loop stack made in the body: its cotangents are a stack of their
        # own, ad/stacks.py)
        active = [c for c in s.carried if not self.shapes.is_python_number(c[0])
                  and not self.stacks & set(c)]
        contributes = [c for c in active if c[0] in self.bars or c[1] in self.bars]
        if not contributes and not outer and not self.feeds_stack(s):
            return
        self.comment(s.origin)
        self.stack_bars_before(s)
        for v in outer:               # cotangents that sum over iterations start at zero
            if v not in self.bars:
                self.bars[v] = self.bar_name(v)
                self.emit(f"{self.bars[v]} = {self._tree_zeros(v)}({v})")
        for loop, last in active:
            if loop not in self.bars:
                self.bars[loop] = self.bar_name(loop)
                self.emit(f"{self.bars[loop]} = {self._tree_zeros(loop)}({loop})")
        count = None
        head = len(self.lines)
        if isinstance(s, ir.While):
            count = self.names.fresh("n_iterations")
            self.lines.append(Line(f"for {self.names.fresh('_')} in range({count}):",
                                   self.indent, "block"))
        else:
            self.lines.append(Line(f"for {s.target} in reversed({s.iterable}):", self.indent,
                                   "block"))
        self.indent += 1
        restore = Line("", self.indent, "slot", s.origin)
        self.lines.append(restore)
        start = len(self.lines)
        saved_comment, self.last_comment = self.last_comment, None
        replaying, self.replaying = self.replaying, s
        self.loops.append(s)
        self.forward([st for st in s.body if not _is_carry_copy(st, s.carried)])
        self.loops.pop()
        self.replaying = replaying
        replay_end = len(self.lines)
        copied = {}
        for loop, last in active:                   # the copy back to the loop name, reversed
            if last != loop and loop in self.bars:
                self.bars[last] = copied[loop] = self.bar_name(last)
                self.emit(f"{self.bars[last]} = {self.bars[loop]}")
        body_start = len(self.lines)
        _refuse_read_after_loop(s, defined - loops - {last for _, last in s.carried}, self.bars)
        for loop, _ in s.carried:
            self.bars.pop(loop, None)               # contributions inside start afresh
        pending = {v: len(e) for v, e in self.fields.items()}
        outer = self.unreduced_now, self.replayed
        self.unreduced_now = {loop for loop, _ in s.carried if loop in self.unreduced}
        self.replayed = self.replayed | defined
        row_adds = self.row_adds
        self.row_adds = _RowAdds(s, self.indent, outer_names, s.iterable in self.counting) \
            if isinstance(s, ir.For) and s.iterable in self.ranges else None
        counts = self.row_adds is not None and s.target not in defined
        self.counters += [s.target] if counts else []
        self.reverse([st for st in s.body if not _is_carry_copy(st, s.carried)])
        self.counters = self.counters[:-1] if counts else self.counters
        row_adds, self.row_adds = self.row_adds, row_adds
        self.unreduced_now, self.replayed = outer
        for var in list(self.fields):   # fields read in an iteration: their cotangents are
            k = pending.get(var, 0)     # this iteration's, so the container's is built here
            if len(self.fields[var]) > k:
                entries = self.fields[var][k:]
                del self.fields[var][k:]
                if not self.fields[var]:
                    del self.fields[var]
                self.flush_fields(var, entries)
        unbound = []                                # (the first iteration's start value)
        read = set().union(*(ln.uses for ln in self.lines[body_start:]))
        for loop, last in active:                   # a loop name not read in the body: zeros
            if loop not in self.bars:               # shaped by the value the iteration started
                self.bars[loop] = self.bar_name(loop)   # from (saved), or by the replayed one
                shaped = loop       # when provably alike, or when the derivative reads no copy
                # (or each an array's row, where no value before the loop has a cotangent:
                # `for w in ws`, the first iteration's w is unbound)
                if self.shapes.parameter_like(last) or copied.get(loop) not in read or \
                        self.shapes.rows_alike(last) and not self._bound_before(loop, s):
                    shaped = last
                self.emit(f"{self.bars[loop]} = {self._tree_zeros(loop)}({shaped})")
                if shaped == loop and not self._bound_before(loop, s):
                    name = re.sub(r"_[0-9]+$", "", loop)
                    unbound.append(f"{loop} = unbound_before_loop({name!r})")
        self.indent -= 1
        self.last_comment = saved_comment
        # replay only what this iteration's derivative reads (adjoint liveness), and stack
        # the loop values the replay reads before assigning them (transformer/dataflow.py)
        live_out = set().union(*(ln.uses for ln in self.lines[replay_end:]))
        for k in dataflow.live(self.lines[start:replay_end], live_out):
            self.lines[start + k].kind = "slot"     # dropped when the lines are assembled
        replay = [ln for ln in self.lines[start:] if ln.kind != "slot"]
        needed = dataflow.to_record(s.carried, replay)
        stack = {v: self.names.fresh(f"{v}_stack") for v in needed}  # (a derivative's own
        target = None if count else _unpacked_target(s.target, replay, self.indent + 1)
        if target is not None and target != s.target:   # `for (a, b), x in zip(...)`:
            replay[0].kind = "slot"                     # the unpacking line goes
            self.lines[head] = Line(f"for {target[1:-1]} in reversed({s.iterable}):",
                                    self.indent, "block")
        if needed:      # each iteration pushes once on each stack (made before the loop):
            read = set().union(*(ln.uses for ln in self.lines[start:] if ln.kind != "slot"))
            steps = [] if count or not read & _names_of(target) else [(target, s.iterable)]
            self.lines[head] = Line(reversed_loop(steps + [(v, stack[v]) for v in needed]),
                                    self.indent, "block")   # the reverse loop reads them
            count = None    # backwards (transformer/normalize.py reversed_stack_loop)
        fill_slot(s.pushes, [f"{stack[v]}.append({v})" for v in needed]
                   + ([f"{count} += 1"] if count else []))
        fill_slot(s.saves, getattr(s, "replay_inits", []) + unbound
                  + [f"{stack[v]} = []" for v in needed]
                   + ([f"{count} = 0"] if count else []))
        if row_adds is not None:
            row_adds.added_after(self, head)

    def reverse_op(self, op):
        gs = [self.bars.get(t) for t in op.targets]
        pending = [self.fields.pop(t, None) for t in op.targets]
        for t, p in zip(op.targets, pending):
            if p:
                self.flush_fields(t, p)
        gs = [self.bars.get(t) for t in op.targets]
        if all(g is None for g in gs):
            self._plain_forward(op)
            return
        self.comment(op.origin)
        if op.op in SPECIAL:
            origin = self.origin
            self.origin = self._gathered_at(op) or origin
            try:
                getattr(self, "reverse_" + op.op)(op, gs)
            finally:
                self.origin = origin
            return
        g = gs[0]
        if op.targets[0] in self.normalised and op.targets[0] not in self.unsummed:
            kind, u, axis = self.normalised[op.targets[0]]
            keep = (", " if axis == "None" else f", axis={axis}, ") + "keepdims=True"
            self.accumulate(u, NORMALISED_VJP[kind].format(g=g, ans=op.targets[0], keep=keep))
            return
        y = op.operands.get("y")
        if op.op == "matmul" and isinstance(y, ir.Var) and y.name in self.transposed:
            x, k = op.operands["x"], self.transposed[y.name]
            for p, o in (("x", x), ("k", ir.Var(k))):
                if isinstance(o, ir.Var) and o.name not in self.shift_only:
                    self.accumulate(o.name, TRANSPOSED_VJP[p].format(g=g, x=src(x), k=k))
            return
        spec = OPS[op.op]
        fill = {"g": g, "ans": op.targets[0]}
        for p in spec.params:
            if p in SHAPE_ONLY.get(op.op, ()) and isinstance(op.operands.get(p), ir.Var):
                fill[p] = self._shape_of(op.operands[p].name,   # (read for its shape only)
                                         as_shape=op.op in _BY_SHAPE)
            elif p in op.operands:
                fill[p] = src(op.operands[p])
            elif p in op.statics:
                fill[p] = op.statics[p]
            else:
                fill[p] = repr(spec.signature.parameters[p].default)
        fill.update(index_modes.fill_keys(op.op, op.statics, self.counters))  # (out-of-range
        # indices; a range loop's counter, an int, picks one element: no at_set_won)
        if fill.get("won"):                 # (it names the cotangent: ad/index_modes.py)
            fill["won"] = fill["won"].format(g=g)

        def render(template):       # {static}: the user's keywords the template does not name
            extra = "".join(f", {k}={v}" for k, v in op.statics.items()
                            if "{" + k + "}" not in template)
            return template.format(**{**fill, "static": extra})
        if op.op in CONTAINER_VJP and isinstance(op.operands[spec.sequence], ir.Var):
            self.accumulate(op.operands[spec.sequence].name, render(CONTAINER_VJP[op.op]))
            return
        if op.op in SEQUENCE_VJP:
            seq = op.operands[spec.sequence]
            if seq.kind == "dict":      # grad_of_fields' {k: v}: fields_of reads the keys
                # alone, written alone, so that a transform reading this derivative again never
                # takes the values (batched, differentiated) for the keys it loops over
                fill[spec.sequence] = "[" + ", ".join(seq.keys) + "]"
            pieces = [self.names.fresh(f"{src(i)}_bar" if isinstance(i, ir.Var) else self.discard)
                      for i in seq.items]
            expr = render(SEQUENCE_VJP[op.op])
            self.emit(f"{', '.join(pieces)}, = {expr}" if len(pieces) == 1 else
                      f"{', '.join(pieces)} = {expr}")
            for item, piece in zip(seq.items, pieces):
                if isinstance(item, ir.Var):
                    self.accumulate(item.name, piece)
            return
        if op.op == "getitem" and isinstance(op.operands["a"], ir.Var) \
                and (op.operands["a"].name in self.containers   # a list's item, or an array's
                     or op.operands["a"].name not in self.arrays and (
                         op.targets[0] in self.called or op.targets[0] in self.containers
                         or op.operands["a"].name in self.object_fields)):
            a, idx = op.operands["a"].name, _index_value(op.statics["idx"])
            if a in self.bars:
                self.emit(f"{self.bars[a]} = add_at({self.bars[a]}, {idx}, {g})")
                if self.row_adds is not None and a in self.maybe_rows:  # (an array, or a
                    # list: add_rows of a list adds the items one by one)
                    self.row_adds.note(self, a, op.statics["idx"], g, ', mode="clip"')
            else:
                self.accumulate(a, f"add_at(zeros_like_tree({a}), {idx}, {g})")
            return
        if op.op == "getitem" and isinstance(op.operands["a"], ir.Var) \
                and op.operands["a"].name in self.bars:     # add into the existing cotangent
            b = self.bars[op.operands["a"].name]
            back = fill["back"]             # (a read clamped the index: added where it read)
            self.emit(f"{b} = {b}.at[{op.statics['idx']}].add({g}{back})")
            if self.row_adds is not None:
                self.row_adds.note(self, op.operands["a"].name, op.statics["idx"], g, back)
            return
        rules = VJP[op.op]
        special = self._special_case(op)
        if special is not None:
            rules = special
        for p, template in rules.items():
            operand = op.operands.get(p)
            if not isinstance(operand, ir.Var) or operand.name in self.shift_only:
                continue
            expr = render(template)
            if op.op in _BY_SHAPE and fill.get(p) in self.shape_reads and \
                    self.shape_reads[fill[p]][1].startswith("shape_of(") and \
                    expr.startswith(_BY_SHAPE[op.op][0] + "("):
                # (its operand's shape where no value of it is computed: `unreduce_to`)
                call = f"__shapefn_{len(self.shape_calls)}__"
                self.shape_calls[call] = (fill[p],) + _BY_SHAPE[op.op]
                expr = call + expr[len(_BY_SHAPE[op.op][0]):]
            sums = operand.name not in self.summed and (
                op.targets[0] in self.unsummed or   # (its cotangent came unsummed: summed here)
                self._sums(op, p, special))
            if sums and self._defers(operand.name):
                self.unsummed.add(operand.name)     # (summed down by its own rule)
            elif sums:
                expr = f"unbroadcast({expr}, {self._shape_of(operand.name)})"
            elif op.op == "identity" and self.unreduced.get(op.targets[0]) == operand:
                expr = f"unbroadcast({expr}, {operand.name})"   # a loop's start value
            self.accumulate(operand.name, expr)

    # --- secant.lax control flow -------------------------------------------------------------
    def forward_control_flow(self, op):
        """cond, switch and map run as written; fori_loop and scan also keep the carry each
        step started from (`<target>_carries`), which their reverse pass replays."""
        targets = ", ".join(op.targets)
        if self.replay_form and self._has_effects(op, refused=False):
            self.effects = True         # (a replay runs the op as written: one of its caller's
        if op.op in ("fori_loop", "scan", "while_loop"):    # loops does not learn its count)
            if not hasattr(op, "carries"):
                op.carries = self.names.fresh(f"{op.targets[0]}_carries")
                op.forward_lines = []
            pattern = targets if len(op.targets) == 1 else f"({targets})"
            st, d = op.statics, op.operands
            functions = self._recomputed(op)
            if op.op == "fori_loop":
                call = (f"fori_loop_with_carries({st['lower']}, {st['upper']}, "
                        f"{functions[0]}, {src(d['init'])})")
            elif op.op == "while_loop":
                call = (f"while_loop_with_carries({functions[0]}, {functions[1]}, "
                        f"{src(d['init'])}{', count=False' if self._has_effects(op) else ''})")
            else:
                extra = "".join(f", {k}={st[k]}" for k in ("length", "reverse") if k in st)
                call = f"scan_with_carries({functions[0]}, {src(d['init'])}, " \
                       f"{src(d['xs'])}{extra})"
            self.emit(f"{pattern}, {op.carries} = {call}")
            op.forward_lines.append(self.lines[-1])
        else:
            self.emit(f"{targets} = {op.statics['forward']}")

    def _recomputed(self, op):
        """The names of a lax loop's functions its forward pass calls: in a recompute (a vjp,
        whose caller's primal call ran the loop, or a loop iteration's replay) each one's
        replay form where it has Python side effects (`log.append(1)` in the body: once per
        step, as the user's call ran it, not again for the derivative), else as written. A
        replay form takes the values the function closes over after its own parameters (as
        its vjp does): `lambda i, carry: body_replay(i, carry, x)`. The same names for the
        loop's reverse pass (while_loop_vjp recomputes carries with the body, and under vmap
        finds its cond by the body's text in the forward call)."""
        cache = self.__dict__.setdefault("_recomputed_names", {})
        if id(op) not in cache:
            cache[id(op)] = (op, self._recomputed_names_of(op))
        return cache[id(op)][1]

    def _recomputed_names_of(self, op):
        names = list(op.statics["functions"])
        replay_of = getattr(self.vjp_of_callee, "replay_of", None)
        if not (self.recomputing or self.replaying) or replay_of is None or \
                len(op.callee) != len(names):
            return names
        active = _function_positions(op)
        closed = self._closed_args(op, False)
        for k, fn in enumerate(op.callee):
            try:
                replay = replay_of(fn, active)
            except SecantError:     # (the function's derivative, generated next, says why)
                continue
            if replay is None:
                continue
            if closed:
                own = (["i", "carry"] if op.op == "fori_loop" else ["carry", "x"]
                       if op.op == "scan" else ["carry"])
                own = [self.names.fresh(p) for p in own]
                replay = f"lambda {', '.join(own)}: {replay}({', '.join(own + closed)})"
            names[k] = replay
        return names

    def _has_effects(self, op, refused=True):
        """Whether a lax op's functions have Python side effects (a print, log.append, a
        counter bumped; in a callee or a loop of theirs too): their replay forms leave some out
        (transforms.py replay_of). A while loop's trip count is then not learnt by stepping its
        body while tracing (rule_helpers.while_loop_with_carries): that would run them once per
        step. refused: the answer where a function's replay form is refused."""
        replay_of = getattr(self.vjp_of_callee, "replay_of", None)
        if replay_of is None:
            return False
        active = _function_positions(op)
        try:
            return any(replay_of(fn, active) is not None for fn in op.callee)
        except SecantError:     # (the function's derivative, generated next, says why)
            return refused

    def _plain_forward(self, op):
        """No cotangent reached the loop: its forward lines need no saved carries."""
        for ln in getattr(op, "forward_lines", ()):
            plain = Line(f"{', '.join(op.targets)} = {op.statics['forward']}", ln.indent,
                         origin=ln.origin)
            ln.code, ln.uses, ln.defines = plain.code, plain.uses, plain.defines

    def _output_cotangent(self, op, gs):
        if len(gs) == 1:
            return gs[0]
        return "(" + ", ".join(g if g else f"zeros_like_tree({t})"
                               for g, t in zip(gs, op.targets)) + ")"

    def _bar_pattern(self, operand, pending):
        """The unpacking target for an operand's cotangent: its bar name (or a temporary when it
        already has one, added afterwards), a tuple of them, or `_` for a constant."""
        if isinstance(operand, ir.Var):
            var = operand.name
            if var in self.bars or any(v == var for v, _ in pending):
                t = self.names.fresh(f"{var}_bar")
            else:
                t = self.bar_name(var)
            pending.append((var, t))
            return t
        if isinstance(operand, ir.Seq) and operand.kind == "dict":
            t = self.names.fresh("d_bar")       # a dict is not unpacked: read by key after
            pending.append((operand, t))
            return t
        if isinstance(operand, ir.Seq):
            inner = [self._bar_pattern(i, pending) for i in operand.items]
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        return self.discard

    def _assign_bars(self, patterns, pending, call):
        self.emit(f"{', '.join(patterns)} = {call}")
        for var, t in pending:
            if isinstance(var, ir.Seq):         # a dict display's cotangent: its items by key
                for key, item in zip(var.keys, var.items):
                    if _has_var(item):
                        inner = []
                        pattern = self._bar_pattern(item, inner)
                        self._assign_bars([pattern], inner, f"{t}[{key}]")
                continue
            if var in self.bars and self.bars[var] != t:
                self.emit(self._add(var, self.bars[var], t))
            else:
                self.bars[var] = t

    def _vjps(self, op, positions, mode="vjp"):
        return [self.vjp_of_callee(fn, tuple(positions), mode) for fn in op.callee]

    @staticmethod
    def _closed_args(op, keyword):
        closed = [src(c) for c in op.operands["closed"].items]
        consts = [src(c) for c in op.operands["consts"].items]
        if not keyword:
            return closed + consts
        out = ""
        for name, items in (("closed", closed), ("consts", consts)):
            if items:
                out += f", {name}=({', '.join(items)}{',' if len(items) == 1 else ''})"
        return out

    def reverse_cond(self, op, gs):
        """An adjoint conditional on the same predicate: each branch's generated vjp, called on
        the output's cotangent and the operands, returns the operands' cotangents (zeros for
        operands a branch does not use) and those of the values the branches close over."""
        operands = op.operands["operands"].items
        n = len(operands)
        closed = op.operands["closed"].items
        positions = [i for i, o in enumerate(operands) if _has_var(o)] + \
            [n + j for j in range(len(closed))]
        vjps = self._vjps(op, positions)
        pending = []
        patterns = [self._bar_pattern(operands[p], pending) if p < n
                    else self._bar_pattern(closed[p - n], pending) for p in positions]
        args = ", ".join([self._output_cotangent(op, gs)] + [src(o) for o in operands]
                         + self._closed_args(op, False))
        if op.op == "cond":
            call = f"lax.cond({op.statics['pred']}, {vjps[0]}, {vjps[1]}, {args})"
        else:
            call = f"lax.switch({op.statics['index']}, [{', '.join(vjps)}], {args})"
        self._assign_bars(patterns, pending, call)

    reverse_switch = reverse_cond

    def reverse_fori_loop(self, op, gs):
        """A reverse loop over the saved carries calling the body's generated vjp."""
        closed = op.operands["closed"].items
        vjp, = self._vjps(op, [1] + [2 + j for j in range(len(closed))], "vjp_given_out")
        pending = []
        patterns = [self._bar_pattern(op.operands["init"], pending)] + \
            [self._bar_pattern(c, pending) for c in closed]
        st = op.statics
        call = (f"fori_loop_vjp({st['lower']}, {st['upper']}, {vjp}, "
                f"{self._output_cotangent(op, gs)}, {self._saved_carries(op, vjp, 1)}"
                f"{self._closed_args(op, True)}, "
                f"out={self._output_value(op)})")
        self._assign_bars(patterns, pending, call)

    def reverse_while_loop(self, op, gs):
        """Back through the saved carries (recomputed from the start under jit)."""
        closed = op.operands["closed"].items
        vjp = self.vjp_of_callee(op.callee[1], tuple([0] + [1 + j for j in range(len(closed))]))
        pending = []
        patterns = [self._bar_pattern(op.operands["init"], pending)] + \
            [self._bar_pattern(c, pending) for c in closed]
        call = (f"while_loop_vjp({self._recomputed(op)[1]}, {vjp}, "
                f"{self._output_cotangent(op, gs)}, {src(op.operands['init'])}, {op.carries}"
                f"{self._closed_args(op, True)})")
        self._assign_bars(patterns, pending, call)

    def _saved_carries(self, op, vjp, carry):
        """The carries the forward pass stacked, or None when the body's vjp reads neither the
        carry each step started from (parameter `carry`) nor the step's output: the forward
        pass is then the loop as written."""
        unread = getattr(self.vjp_of_callee, "unread", {}).get(vjp, frozenset())
        if {carry, "out"} <= unread:
            self._plain_forward(op)
            return "None"
        return op.carries

    @staticmethod
    def _output_value(op):
        """The loop's result as the forward pass bound it: its reverse pass hands each step's
        outputs to the body's vjp, which then need not recompute them."""
        return op.targets[0] if len(op.targets) == 1 else f"({', '.join(op.targets)})"

    def reverse_scan(self, op, gs):
        closed = op.operands["closed"].items
        xs = op.operands["xs"]
        wrt_xs = _has_var(xs)
        positions = [0] + ([1] if wrt_xs else []) + [2 + j for j in range(len(closed))]
        vjp, = self._vjps(op, positions, "vjp_given_out")
        pending = []
        patterns = [self._bar_pattern(op.operands["init"], pending)] + \
            ([self._bar_pattern(xs, pending)] if wrt_xs else []) + \
            [self._bar_pattern(c, pending) for c in closed]
        if len(op.targets) == 1:
            ct = gs[0]
        else:
            ct = self._output_cotangent(op, gs)
        extra = self._closed_args(op, True)
        if "reverse" in op.statics:
            extra += f", reverse={op.statics['reverse']}"
        if wrt_xs:
            extra += ", wrt_xs=True"
        extra += f", out={self._output_value(op)}"
        saved = op.carries if src(xs) == "None" else self._saved_carries(op, vjp, 0)
        call = f"scan_vjp({vjp}, {ct}, {saved}, {src(xs)}{extra})"   # (the stack: its length)
        self._assign_bars(patterns, pending, call)

    def reverse_map(self, op, gs):
        closed = op.operands["closed"].items
        xs = op.operands["xs"]
        wrt_xs = _has_var(xs)
        positions = ([0] if wrt_xs else []) + [1 + j for j in range(len(closed))]
        vjp, = self._vjps(op, positions)
        pending = []
        patterns = ([self._bar_pattern(xs, pending)] if wrt_xs else []) + \
            [self._bar_pattern(c, pending) for c in closed]
        extra = self._closed_args(op, True) + ("" if wrt_xs else ", wrt_xs=False")
        call = f"map_vjp({vjp}, {self._output_cotangent(op, gs)}, {src(xs)}{extra})"
        self._assign_bars(patterns, pending, call)

    def _sums(self, op, param, special):
        """Whether op's rule sums operand `param`'s contribution down to its shape (it may
        differ: an unbroadcast), given the result's cotangent of the result's shape."""
        return op.op in UNBROADCAST and special is None and self._may_broadcast(op, param) and \
            op.operands[param].name not in self.unreduced_now and \
            (op.targets[0], op.operands[param].name) not in self.same_shape

    def _defers(self, name):
        """Whether name's one reader gives its cotangent unsummed, for name's own rule
        (vjp_rules.TAKES_UNSUMMED) to sum down what it gives each operand: only where that
        costs no unbroadcast more, each varied operand's contribution summed there anyway (or
        passed on unsummed in turn), so the reader's unbroadcast is one fewer and name is not
        kept for its shape."""
        got = self.defers.get(name)
        if got is None and name in self.sums_later:
            op = self.sums_later[name]
            special = self._special_case(op)
            self.defers[name] = False       # (while deciding)
            got = self.defers[name] = all(
                o.name in self.summed or self._sums(op, p, special) or self._defers(o.name)
                for p, o in op.operands.items()
                if isinstance(o, ir.Var) and o.name in self.varied and p in VJP[op.op])
        return bool(got)

    def _special_case(self, op):
        """Rules that read better for a common special case: z = x * x, z = x ** 3."""
        x, y = op.operands.get("x"), op.operands.get("y")
        if op.op == "multiply" and isinstance(x, ir.Var) and x == y:
            return {"x": "{x} * {g} * 2"}
        if op.op == "power" and is_literal_number(y):
            n = float(y.src)
            if n == 2:
                return {"x": "2 * {x} * {g}"}
            if n == 0 and y.src.lstrip("-").isdigit():      # x ** 0: a constant, as JAX's
                return {"x": "snp.zeros_like({g})"}
            m = int(n - 1) if n.is_integer() else n - 1
            return {"x": "{g} * " + y.src + " * {x} ** " + str(m)}
        return None

    def _shape_of(self, var, as_shape=False):
        """What a rule reading var for its shape only (an unbroadcast, a sum's unreduce) reads
        it from: in a reverse loop, a value of the same shape that the iteration's replay
        computes anyway; elsewhere var itself where the derivative computes it anyway (var
        assigned once, at the function's top level), else a stand-in (`_stand_in`), so the
        forward statements computing var need not run for it. as_shape (a sum's or a mean's
        rule, which has a form reading a shape: _BY_SHAPE): where no value stands in, var's
        shape read from the values it is computed from (`_shape_source`).
        Which of the two is known once every line is written: a placeholder until then
        (`_shape_reads_resolved`)."""
        if var in self.replayed:
            return self.witnesses.get(var, var)
        stand_in = self._stand_in(var)
        if stand_in == var and as_shape and var in self.at_top:
            stand_in = self._shape_source(var) or var
        if stand_in == var or var not in self.at_top:
            return stand_in     # (var itself only where surely bound: assigned once, at the top)
        token = f"__shape_{len(self.shape_reads)}__"
        self.shape_reads[token] = (var, stand_in)
        return token

    def _shape_source(self, var):
        """Source of var's shape (a tuple) read from the shapes of values bound wherever a rule
        runs (parameters and values assigned once at the top level, each read as its own
        stand-in: `_stand_in`), not from var: for an elementwise op of such values (and Python
        numbers, shape ()) the broadcast of their shapes, `broadcast_shape(snp.shape(labels),
        snp.shape(logp))` (NumPy broadcasting is what the op does); for a sum or mean over
        some axes of such an op, that shape so reduced (`..., axis=-1)`). So `labels * logp`,
        read by a sum's rule for its shape and by nothing else, is not computed (softmax
        cross-entropy: neither operand alone has its shape where labels is (k,) or (n, 1)
        beside logits (n, k)). snp.shape is a static query for every transform (under vmap,
        each example's shape). Else None."""
        op = self.top_ops.get(var)
        statics = ""
        a = op.operands.get("a") if op is not None else None
        if op is not None and op.op in ("sum", "mean") and set(op.operands) == {"a"} and \
                isinstance(a, ir.Var) and set(op.statics) <= {"axis", "keepdims"} and \
                a.name not in self.fn_params and self._stand_in(a.name) == a.name:
            statics = "".join(f", {k}={v}" for k, v in op.statics.items())
            if "axis" not in op.statics:
                statics = ", axis=None" + statics
            op = self.top_ops.get(a.name)       # (a reduction of a value bound anyway: that
        if op is None or op.op not in ELEMENTWISE or op.statics:      # value's own shape)
            return None
        parts = []
        for o in op.operands.values():
            if isinstance(o, ir.Expr) and o.src.strip().isidentifier():
                o = ir.Var(o.src.strip())       # (a value not differentiated: by name)
            if isinstance(o, ir.Var):
                s = self._stand_in(o.name)
                if s not in self.fn_params and s not in self.at_top or s in self.containers:
                    return None
                parts.append(s)
            elif not (isinstance(o, ir.Expr) and is_python_number(o.src)):
                return None
        parts = list(dict.fromkeys(parts))
        if not parts:
            return None
        return f"shape_of({', '.join(parts)}{statics})"

    def _stand_in(self, var):
        """A parameter of provably the same shape and kind as var (transformer/shapes.py), else
        the first value of the function's top level that has (both assigned once there:
        computed by the time any rule runs), else var."""
        p = self.shapes.parameter_like(var)
        if p is not None:
            return p
        alts = self.shapes.alts.get(var)
        if var in self.at_top and alts and len(alts) == 1:
            if self.first_alike is None:    # (a scan of the top level per value: issue 19)
                self.first_alike = {}
                for n in self.top_level:
                    self.first_alike.setdefault(self.shapes.alts.get(n), n)
            if self.first_alike[alts] != var:
                return self.first_alike[alts]
        # the value var's dtype comes from (transformer/dataflow.py dtype_root), where it has
        # var's shape too: softmax's logits for `logp = z - snp.log(sum_exp_z)`
        root = dataflow.dtype_root(var, self.top_ops, self.inexact_params) \
            if var in self.at_top else var
        if root != var and self.bound_at_top(root) and self.shapes.same_shape(var, root):
            return root
        return var

    def bound_at_top(self, name):
        """Whether `name` is an array bound wherever a rule runs: a parameter never assigned,
        or a value assigned once at the top level."""
        return name not in self.containers and (name in self.at_top or name in self.fn_params
                                                and name not in self.assigned_once)

    def _may_broadcast(self, op, param):
        """Whether the result's cotangent may differ in shape (or kind) from operand `param`'s
        (transformer/shapes.py); ops it does not follow always unbroadcast."""
        name = op.operands[param].name
        if op.op not in ELEMENTWISE:
            return not self.shapes.is_python_number(name)
        needs = self.shapes.needs_unbroadcast(operands_of(op), name)
        if name in self.real_scalars and op.targets[0] in self.real_scalars:
            self.mixed_scalars = self.mixed_scalars or needs
            return False            # a real scalar's cotangent, to a real scalar operand
        return needs

    def reverse_einsum(self, op, gs):
        """Each operand's cotangent is an einsum too (ad/einsum_rules.py)."""
        params = [p for p in OPS["einsum"].arrays if p in op.operands]
        fill = {"g": gs[0], **{p: src(op.operands[p]) for p in params}}
        for p, template in einsum_rules.vjp_templates(op.statics["subscripts"], params).items():
            if isinstance(op.operands[p], ir.Var):
                self.accumulate(op.operands[p].name, template.format(**fill))

    def callee_output(self, op):
        """(dataflow.output_dtype of a plain user function's output, from its own canonical
        form; the call's operands by its parameters' names), or None: what grad's seed reads
        of a call's output (dataflow.scalar_like), so the call need not run for the seed."""
        ask = getattr(self.vjp_of_callee, "output_dtype", None)
        if ask is None or op.op != "call" or not inspect.isfunction(op.callee) or any(
                getattr(op.callee, a, None) for a in (
                    "__secant_custom__", "__secant_dispatch__", "__secant_dispatched__",
                    "__secant_batched_dispatch__")):
            return None
        try:
            params = list(signature_of(op.callee, follow_wrapped=False).parameters)
            by_name = {params[int(k[3:])] if k.startswith("arg") and k[3:].isdigit() else
                       k: o for k, o in op.operands.items()}
        except (TypeError, ValueError, IndexError):
            return None
        if set(by_name) - set(params):
            return None
        active = tuple(sorted(params.index(k) for k, o in by_name.items() if _has_var(o)))
        summary = ask(op.callee, active) if active else None
        return (summary, by_name) if summary else None

    def reverse_call(self, op, gs):
        params = list(signature_of(op.callee, follow_wrapped=False).parameters)
        position = {k: int(k[3:]) if k.startswith("arg") and k[3:].isdigit() else params.index(k)
                    for k in op.operands}
        keys = sorted((k for k, o in op.operands.items() if _has_var(o)), key=position.get)
        # (not the value a derivative helper reads for its shape alone, unreduce(t, a)'s a: no
        # cotangent, as JAX's symbolic zero; its zeros times a rule's factor could be 0 / 0)
        shape_only = copies.SHAPE_READERS.get(getattr(op.callee, "__name__", None)) if getattr(
            op.callee, "__module__", None) == "secant.ad.helpers" else None
        if shape_only:
            keys = [k for k in keys if position[k] != shape_only]
            if not keys:
                return
        # a plain Python callee's vjp takes the output the forward pass computed (each target
        # assigned only here: still that value), so it need not run again the statements that
        # computed it (what its rules read stays)
        state = self.passed.get(id(op))    # (a counter's function: ad/state_inputs.py)
        given = not state and all(self.assigned_once.get(t) == 1 for t in op.targets) and \
            inspect.isfunction(op.callee) and not any(
            getattr(op.callee, a, None) for a in ("__secant_custom__", "__secant_dispatch__",
                                                  "__secant_dispatched__",
                                                  "__secant_batched_dispatch__")) and \
            hasattr(self.vjp_of_callee, "reads_given_out") and \
            self.vjp_of_callee.reads_given_out(op.callee, tuple(position[k] for k in keys))
        pair = self.pairs.get(id(op))      # (f_bwd on the residuals of f_fwd: forward_pair)
        vjp_name = pair[0] if pair else state[0] if state else self.vjp_of_callee(
            self._forward_of(op.callee) or op.callee, tuple(position[k] for k in keys),
            "vjp_out" if given else "vjp")
        if len(gs) == 1:
            ct = gs[0]
        else:
            ct = "(" + ", ".join(g if g else f"{self._tree_zeros(t)}({t})"
                                 for g, t in zip(gs, op.targets)) + ")"
        args = call_args({k: src(v) for k, v in op.operands.items()})
        if state:       # the state the call read, after its arguments
            args = ", ".join(([args] if args else []) + state[1]) if not any(
                not k.startswith("arg") for k in op.operands) else ", ".join(
                [args] + [f"{p}={v}" for p, v in zip(state[2], state[1])])
        fresh, adds, spread = {}, [], []

        def target(o):          # a tuple argument h((x, y)) gets its cotangent unpacked
            if isinstance(o, ir.Seq) and o.kind == "dict":
                # h({'u': u}): a dict's cotangent is a dict, read at its keys (unpacked as a
                # tuple it gave the keys)
                name = self.names.fresh("dict_bar")
                spread.append((o, name))
                return name
            if isinstance(o, ir.Seq):
                inner = [target(i) for i in o.items]
                return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
            if not isinstance(o, ir.Var):
                return self.discard
            if o.name in self.bars or o.name in fresh:  # g(y, y): the second one is a temp
                adds.append((o.name, self.names.fresh(f"{o.name}_bar")))
                return adds[-1][1]
            fresh[o.name] = self.bar_name(o.name)
            return fresh[o.name]

        arrays = getattr(self.vjp_of_callee, "array_params", {}).get(vjp_name, ())
        self.arrays.update(op.operands[k].name for k in keys if position[k] in arrays
                           and isinstance(op.operands[k], ir.Var))   # the callee reads arrays
        targets = [target(op.operands[k]) for k in keys]
        if len(targets) == 1 and targets[0].startswith("("):
            targets = [targets[0][1:-1]]
        out = f"{pair[1]}, " if pair else f"{self._output_value(op)}, " if given else ""
        zero = set()        # (targets the inlined vjp gives a zero: no contribution)
        if pair or not self._inlined(op, vjp_name, targets, ct,
                                     self._output_value(op) if given else None, position,
                                     zero):
            self.emit(f"{', '.join(targets)} = {vjp_name}({ct}, {out}{args})")
        self.bars.update((v, t) for v, t in fresh.items() if t not in zero)
        for var, t in adds:
            if t in zero:
                continue
            if var in self.bars:
                self.emit(self._add(var, self.bars[var], t))
            else:               # (g(y, y), the first y's a zero: the second's is y's)
                self.bars[var] = t

        def read(o, bar):
            if isinstance(o, ir.Var):
                self.accumulate(o.name, bar)
            elif isinstance(o, ir.Seq):
                keys = o.keys if o.kind == "dict" else range(len(o.items))
                for key, item in zip(keys, o.items):
                    read(item, f"{bar}[{key}]")
        for o, name in spread:
            read(o, name)

    def _inlined(self, op, vjp_name, targets, ct, given, position, zero=None):
        """Write a small helper's vjp in place of its call (transforms.py InlineForm): its
        statements with its parameters read as the call's arguments, its own values under
        fresh names (after the caller's names where they were its parameters': `x_bar` of a
        parameter x given h is `h_bar`), its returned cotangents bound to `targets`. Each line
        keeps its origin (an error there names the helper's line). Whether it did; not in a
        loop, for a helper called more than INLINE_CALLS times, or where an argument is no
        plain name or number, or the helper is not called by its bare name."""
        sub = getattr(self.vjp_of_callee, "generated", {}).get(vjp_name)
        form = getattr(sub, "__secant_inline__", None)
        # (a helper called by its bare name: a method's or another module's function's
        # derivative keeps its name, `Layer.apply` read as apply_vjp)
        if form is None or self.loops or self.replaying or self.indent != 1 or \
                not _NAME.fullmatch(getattr(op, "callee_name", None) or "."):
            return False
        from secant.transforms import INLINE_CALLS
        if sum(1 for o in _ops_in(self.fn.body) if o.op == "call" and
               getattr(o, "callee", None) is op.callee) > INLINE_CALLS:
            return False
        n = len(form.params) - (1 + (given is not None))
        args = [None] * n
        for k, o in op.operands.items():
            if not 0 <= position[k] < n or args[position[k]] is not None:
                return False
            args[position[k]] = src(o)
        if None in args or len(form.returned) != len(targets) or \
                not all(_NAME.fullmatch(t) and t != self.discard for t in targets):
            return False
        given_args = [ct] + ([given] if given is not None else []) + args
        if not all(_NAME.fullmatch(a) or _number(a) for a in given_args[1:]):
            return False
        names, before = {}, []
        for p, a in zip(form.params, given_args):
            if _NAME.fullmatch(a):
                names[p] = a
            elif a.startswith("(") and not _names_tuple(a):
                return False    # (an output's zeros: its rules would compute zeros in place)
            elif not (_number(a) or _names_tuple(a)):   # (read where p is: a number, a tuple
                # of names; else bound first)
                names[p] = self.names.fresh(p)
                before.append(f"{names[p]} = {a}")
        for r, t in zip(form.returned, targets):
            if _NAME.fullmatch(r) and r not in form.params and r not in names:
                names[r] = t
        passed = sorted((p for p in form.params if p in names), key=len,
                        reverse=True)
        for ln in form.lines:
            for v in sorted(ln.defines):
                if v not in names:
                    p = next((p for p in passed if v.startswith(p + "_")), None)
                    names[v] = self.names.fresh(names[p] + v[len(p):] if p else v)
                    if v in form.temporaries:
                        self.inlined_temporaries.add(names[v])
        for p, a in zip(form.params, given_args):
            if p not in names:
                names[p] = a if a.startswith("(") or _number(a) and a[0] != "-" else f"({a})"
        for code in before:
            self.emit(code)
        origin = self.origin
        for ln in form.lines:
            self.origin = ln.origin or origin
            for code in _split_pairs(_renamed(ln.code, names)):
                self.emit(code)
        self.origin = origin
        for r, t in zip(form.returned, targets):
            if zero is not None and _ZERO_OF_PARAM.fullmatch(r) and \
                    _ZERO_OF_PARAM.fullmatch(r).group(1) in form.params:
                zero.add(t)     # (a parameter the helper reads for its shape or dtype only:
                continue        # its cotangent is a zero, which adds nothing)
            if names.get(r) != t:
                self.emit(f"{t} = {_renamed(r, names)}")
        return True

    def reverse_field(self, op, gs):
        self.fields.setdefault(op.operands["tree"].name, []).append(
            (op.statics["key"], "key", gs[0], op.targets[0]))

    def reverse_attribute(self, op, gs):
        self.fields.setdefault(op.operands["tree"].name, []).append(
            (op.statics["name"], "attr", gs[0], op.targets[0]))

    def reverse_getattr(self, op, gs):
        """getattr(tree, k): k's value is the attribute's name (grad_of_fields reads a string
        key of anything but a dict as an attribute); added on its own, as k may name a field
        read by another key too."""
        tree = op.operands["tree"].name
        self.accumulate(tree, f"grad_of_fields({tree}, {{{op.statics['name']}: {gs[0]}}})")

    def reverse_pack(self, op, gs):
        """b = [x, 1.0, y]: each item's cotangent is the container's at its place."""
        seq = op.operands["items"]
        if seq.kind == "dict":
            for key, item in zip(seq.keys, seq.items):
                if isinstance(item, ir.Var):
                    self.accumulate(item.name, f"{gs[0]}[{key}]")
            return
        pending = []
        pattern = self._bar_pattern(seq, pending)[1:-1]     # `_, a_sq_bar, _ = b_bar`
        self._assign_bars([pattern], pending, gs[0])

    def reverse_fields_of(self, op, gs):
        """a, b = fields_of(tree_bar, {k0: ..., k1: ...}): the fields' cotangents put back at
        their keys (grad_of_fields, its transpose)."""
        keys = ast.literal_eval(op.statics["keys"])     # constants (transformer/normalize.py)
        tree = op.operands["tree"].name
        fields = ", ".join(f"{k!r}: {gs[0]}[{i}]" for i, k in enumerate(keys))
        self.accumulate(tree, f"grad_of_fields({tree}, {{{fields}}})")

    def reverse_fields_of_batched(self, op, gs):
        """fields_of_batched's transpose: grad_of_fields_batched (both read past the batch
        axis)."""
        keys = ast.literal_eval(op.statics["keys"])
        tree = op.operands["tree"].name
        fields = ", ".join(f"{k!r}: {gs[0]}[{i}]" for i, k in enumerate(keys))
        self.accumulate(tree, f"grad_of_fields_batched({tree}, {{{fields}}}, {op.statics['n']}, "
                              "True)")

    def reverse_concat_seq(self, op, gs):
        """out_1 = out + [v]: the first len(out) items' cotangents are out's, the rest v's."""
        x, y = op.operands["x"], op.operands["y"]
        pending = []
        patterns = [self._bar_pattern(o, pending) if _has_var(o) else self.discard for o in (x, y)]
        self._assign_bars(patterns, pending, f"split_at({gs[0]}, len({src(x)}))")

    def reverse_dict_merge(self, op, gs):
        """d_1 = d | {k: v}: k's cotangent goes to v, the other keys' to d."""
        x, y = op.operands["x"], op.operands["y"]
        if isinstance(y, ir.Seq):
            keys = "[" + ", ".join(y.keys) + "]"
            for key, item in zip(y.keys, y.items):
                if isinstance(item, ir.Var):
                    self.accumulate(item.name, f"{gs[0]}[{key}]")
        else:
            keys = src(y)
            if isinstance(y, ir.Var):
                self.accumulate(y.name, f"pick({gs[0]}, {y.name})")
        if isinstance(x, ir.Var):
            self.accumulate(x.name, f"unmerge({gs[0]}, {x.name}, {keys})")

    def _zeros(self, var):
        return "zeros_like_tree" if var in self.containers or var in self.fielded \
            else "snp.zeros_like"

    def _tree_zeros(self, var):
        """The zero of a loop carry or of a call's output nobody differentiates: a tree's when
        no array op reads it, nor an index (a pytree a helper updates each step, `params, state
        = step(params, state)`; the aux of `value, aux = f(x)`)."""
        if self._may_be_container(var) and var not in self.subscripted:
            return "zeros_like_tree"
        return self._zeros(var)

    def reverse_add_n(self, op, gs):
        if isinstance(op.operands["arrays"], ir.Var):       # sum(b) of a tracked list
            b = op.operands["arrays"].name
            self.accumulate(b, f"add_n_grad({gs[0]}, {b})")
            return
        items = op.operands["arrays"].items
        for item in items:
            if isinstance(item, ir.Var):
                g = f"unbroadcast({gs[0]}, {item.name})" if self.shapes.needs_unbroadcast(
                    items, item.name) else gs[0]
                self.accumulate(item.name, g)

    def _gathered_at(self, op):
        """The origin of the line defining m (assigned once, at the top), for `m.p` read by
        attribute_reader (transformer/properties.py: p a getter or constant of some pytree
        class): the cotangent of m it gives is written where those of m's fields read as
        fields are gathered (flush_fields, at m's definition), so that an error building it
        (a traced value in m's aux data) names the line that built m, as a field read's does,
        whichever pytree classes the program registered. None for any other op."""
        reader = op.operands.get("arg0") if op.op == "call" else None
        base = op.operands.get("arg1")
        if not (isinstance(reader, ir.Expr) and isinstance(base, ir.Var)
                and reader.src.startswith(f"attribute_reader({base.name}, ")):
            return None
        if self.assigned_once.get(base.name) != 1:
            return None
        return next((s.origin for s in self.fn.body if isinstance(s, ir.Op)
                     and base.name in s.targets), None)

    def flush_fields(self, var, entries):
        """Write the cotangent of a container from the cotangents of the fields read from it."""
        keys = {}           # an attribute p.w is the key 'w' (of anything but a dict)
        for key, kind, g, read in reversed(entries):    # in the order the fields were read
            key = key if kind == "key" else repr(key)
            keys[key] = g if key not in keys else f"add_grads({keys[key]}, {g})" \
                if self._may_be_container(read) else f"{keys[key]} + {g}"  # (read twice)
        fields = "{" + ", ".join(f"{k}: {g}" for k, g in keys.items()) + "}"
        expr = f"grad_of_fields({self.structure.get(var, var)}, {fields})"
        if var in self.bars:
            b = self.bars[var]
            self.emit(f"{b} = add_grads({b}, {expr})")
        else:
            self.bars[var] = self.bar_name(var)
            self.emit(f"{self.bars[var]} = {expr}")

    def flush_all_fields(self):
        for var in list(self.fields):
            self.flush_fields(var, self.fields.pop(var))


def build(fn, wrt, mode, names, vjp_of_callee, has_aux=False, tuple_out=False,
          given_out=False, loop_body=False, state_in=False):
    """Source lines of the derivative of `fn` (ir.Function).

    mode: 'grad' (returns the wrt cotangents), 'value_and_grad' (returns (value, cotangents)),
    or 'vjp' (takes the output cotangent as its first parameter; returns the wrt cotangents).
    given_out (vjp): the function's output is its second parameter, as a loop's reverse pass
    has it saved or a caller computed it, so the statements that computed it are not repeated;
    loop_body: the function is a lax loop's body, whose carry keeps its shapes; state_in:
    its reads of Python state are parameters (ad/state_inputs.py state_params), so no
    recompute reads the state again.
    Returns (lines, the output cotangent's parameter name, the given output's name or None,
    the lines before folding: every value under its canonical name, what a transform of the
    derivative reads, so that its names come from the user's as at first order).
    """
    passed = pass_state(fn, names, vjp_of_callee) if mode in ("grad", "value_and_grad") and \
        not loop_body and hasattr(vjp_of_callee, "generated") else {}
    if not state_in:
        _check_state_replayable(fn, mode in ("vjp", "replay"), mode == "replay", passed)
    with dataflow.read_only():      # (its analyses only read fn: each statement read once)
        b = ReverseBuilder(fn, wrt, names, vjp_of_callee)
    b.passed = passed
    if mode in ("vjp", "vjp_out"):      # (what a caller's seed reads of its output: a callee's)
        fn.output_dtype = dataflow.output_dtype(fn)
    b.recomputing = mode in ("vjp", "replay")
    b.pair_calls = mode != "replay"
    b.replay_form = mode == "replay"
    result = fn.result.value
    # which outputs it differentiates (a cotangent read, _unpack_output_bar; the replay's: as
    # the vjp's): what a caller unpacking them tracks (normalize.py _call_outputs_active)
    fn.outputs_active = None if has_aux else dataflow.items_active(fn, _has_var)
    if mode == "replay":        # the forward pass alone, without its Python side effects
        b.forward(fn.body)
        b.lines.append(Line(f"return {src(result)}", 1, origin=fn.result.origin))
        fn.effects = b.effects
        return dead_code_eliminated(b.lines), None, None, None
    carry_bar = None
    if loop_body and wrt and fn.params:     # a lax loop's body: its carry keeps its shapes
        scan = wrt[0] == fn.params[0]       # (a scan's body returns (carry, y))
        out = result.items[0] if scan and isinstance(result, ir.Seq) and \
            len(result.items) == 2 else None if scan else result
        if out is not None:
            b.same_shape = dataflow.carry_pairs(fn, wrt[0], out)
        if isinstance(result, ir.Seq) and (out is not None or not scan):
            carry_bar = "{}[0]" if scan else "{}"   # (its cotangent: the carry's structure)
    if mode in ("grad", "value_and_grad"):
        b.inexact_params = frozenset(p for p in wrt if p not in b.containers | b.fielded)
    b.forward(fn.body)
    out_param = _take_given_output(b, fn, result, names) if given_out else None
    aux = None
    if has_aux:
        if not (isinstance(result, ir.Seq) and len(result.items) == 2):
            raise ValueError("has_aux=True needs the function to return a pair (output, aux)")
        result, aux = result.items
    if b.lines:
        b.lines.append(Line("", 1, "blank"))
    b.origin = fn.result.origin
    b.comment(fn.result.origin)
    out_bar_param = seed_line = None
    if mode == "vjp":
        if isinstance(result, ir.Seq):
            out_bar_param = names.fresh("out_bar")
            _unpack_output_bar(b, result, out_bar_param)
            if carry_bar:                   # fields read from the carry: its cotangent built
                b.structure[wrt[0]] = carry_bar.format(out_bar_param)   # on the output's
        elif isinstance(result, ir.Var):
            out_bar_param = b.bar_name(result.name)
            b.bars[result.name] = out_bar_param
        else:
            out_bar_param = names.fresh("out_bar")
    elif isinstance(result, ir.Var):
        b.bars[result.name] = b.bar_name(result.name)
        b.real_scalars = b.shapes.real_scalars(fn, result.name)     # (grad_seed checks it)
        # grad's seed from a parameter whose dtype the output provably has (a sum of it, say):
        # the forward statements then run only for what the reverse pass reads
        scaled = []     # (a name the output is scaled by: its shape checked, grad_seed_scaled)
        like = dataflow.scalar_like(fn, result.name, b.shapes, [
            p for p in wrt if p not in b.containers and p not in b.fielded],
            b.containers | b.fielded, b.callee_output, scaled) if mode == "grad" else None
        if like:
            like = re.sub(r"\b\w+\b", lambda m: _dtype_read(b, m.group(0)), like)
        b.emit(f"{b.bars[result.name]} = grad_seed_scaled({like}, {scaled[0]})" if like and
               scaled else f"{b.bars[result.name]} = grad_seed_like({like})" if like else
               f"{b.bars[result.name]} = grad_seed({result.name})")
        seed_line = b.lines[-1]
    elif isinstance(result, ir.Seq):
        raise ValueError("grad needs a scalar output; the function returns a tuple "
                         "(use has_aux=True to return (output, aux))")
    else:
        b.emit(f"grad_seed({src(result)})")
    b.last_comment = fn.result.origin.text
    start = len(b.lines)
    b.reverse(fn.body)
    b.flush_all_fields()
    if mode == "value_and_grad" or has_aux:
        result, aux = _kept_from_reverse(b, start, names, result, aux)
    # the arrays it reads, its callees' array parameters included; not what may also be a
    # container (item_of(x, i) reads x[:, i] of an array or x[i] of a tuple; add_rows' t)
    fn.arrays = b.arrays - b.containers - b.tree_items
    # a parameter nothing reads: zeros of its structure (a list or dict of arrays, or an array)
    grads = [b.bars.get(p, f"zeros_like_tree({p})") for p in wrt]
    # (each array's in its parameter's float dtype, as JAX's; a function of one parameter mixes
    # dtypes only with a constant's: grad's wrapper casts those, secant/transforms.py)
    if b.mixed_scalars and len(fn.params) > 1:
        grads = [f"grads_as({g}, {p})" if p in b.bars and not b._may_be_container(p) else g
                 for g, p in zip(grads, wrt)]
    grads_src = grads[0] if len(grads) == 1 and not tuple_out else ", ".join(grads)
    if len(grads) == 1 and tuple_out:
        grads_src += ","
    value_src = src(result)
    if mode == "value_and_grad":
        value_src = f"({value_src}, {src(aux)})" if has_aux else value_src
        grouped = grads_src if len(grads) == 1 and not tuple_out else f"({grads_src})"
        ret = f"return {value_src}, {grouped}"
    elif has_aux:
        grouped = grads_src if len(grads) == 1 and not tuple_out else f"({grads_src})"
        ret = f"return {grouped}, {src(aux)}"
    else:
        ret = f"return {grads_src}"
    b.lines.append(Line(ret, 1))
    lines = dead_code_eliminated(_shape_reads_resolved(b.lines, b.shape_reads, fn.params,
                                                       b.shape_calls, b.dtype_reads))
    if seed_line is not None and not any("grad_seed" in ln.code for ln in lines):
        # a seed no gradient reads (no differentiated input reaches the output): still checked
        # (grad of a callee's bool output is refused, as JAX refuses it), a statement of its own
        b.lines[next(i for i, ln in enumerate(b.lines) if ln is seed_line)] = Line(
            seed_line.code.split(" = ", 1)[1], seed_line.indent, origin=seed_line.origin)
        lines = dead_code_eliminated(_shape_reads_resolved(b.lines, b.shape_reads, fn.params,
                                                           b.shape_calls, b.dtype_reads))
    primal_params = set(fn.params)
    primal = defined_in(fn.body) | primal_params
    mentioned = set()       # (each name matched once, not once per line mentioning it)
    for ln in lines:
        mentioned |= ln.uses
        mentioned |= ln.defines
    bars = {n for n in mentioned if re.fullmatch(r"\w+_bar(_\d+)?", n) and n not in primal}
    canonical = _without_leading_blanks(cse.computed_once(
        dead_code_eliminated(copies.without_copies(
            lines, bars, primal, lambda a, p: b.shapes.parameter_like(a) == p)), names))
    # (the parameters' cotangents keep their names: what the derivative returns reads as such,
    # but for one returned right after its last assignment: returned_in_place)
    kept = {b.bars.get(p) for p in fn.params}
    temporaries = (getattr(fn, "temporaries", set()) | b.inlined_temporaries) - primal_params
    # sums and products of the cotangents as a person writes them (ad/algebra.py), before
    # and as they fold
    lines = fields.read_in_place(canonical, temporaries, primal_params)
    simple = algebra.simplified_lines(lines, bars, b.shapes)
    if simple is not lines:
        lines = dead_code_eliminated(simple)
    simplify, unfed = algebra.simplifier(lines, bars, b.shapes)
    targets = {}        # (each line's fold target read once for all the folds: issue 19)
    lines = fold.folded(lines, bars - kept, temporaries, bars & kept, simplify, unfed,
                        targets=targets)
    # (an unreduce read as its scalar everywhere: gone, what it read folds; `unfed` always holds
    # algebra's _BOUND, so this pass always runs: skipped where no name is unfed, it left
    # comments with no rule under them and names a fold had removed in some derivatives)
    if unfed:
        lines = dead_code_eliminated(lines)
        lines = fold.folded(lines, bars - kept, temporaries, bars & kept,
                            algebra.simplifier(lines, bars, b.shapes, unreduced=False)[0],
                            targets=targets)
    # a cotangent's contributions from consecutive user lines in one sum (ad/accumulate.py)
    lines = _without_leading_blanks(accumulate.summed(
        lines, bars, b.label, bars & kept,
        algebra.simplifier(lines, bars, b.shapes, unreduced=False)[0]))
    # a value read once whose fold fits one row, with up to fold.MAX_ONE_ROW_OPERATIONS, once
    # the sums are written (ad/algebra.py reads an unreduce of it as itself there): -(-a * b)
    # written a * b as accumulate does
    lines = fold.folded(lines, bars - kept, temporaries, bars & kept,
                        accumulate.with_signs_cancelled(
                            algebra.simplifier(lines, bars, b.shapes, unreduced=False)[0]),
                        one_row=True, targets=targets)
    # a value read once whose fold needs a second row (ad/fold.py wrapped), after the folds
    # within one row: the lines it makes are written so (others as they were)
    # (a return in place within one row first: a two-row fold never takes its place)
    lines = fold.returned_in_place(lines, bars & kept, algebra.simplifier(
        lines, bars, b.shapes, unreduced=False)[0])
    held = list(lines)      # (alive to the end: a new line never takes a freed one's id)
    before = {id(ln) for ln in held}
    lines = fold.folded(lines, bars - kept, temporaries, bars & kept,
                        algebra.simplifier(lines, bars, b.shapes, unreduced=False)[0], wrap=True,
                        targets=targets)
    joined = len(lines)
    lines = accumulate.summed(lines, bars, b.label, bars & kept, algebra.simplifier(
        lines, bars, b.shapes, unreduced=False)[0], wrap=True)     # (and across user lines)
    if len(lines) < joined:     # (a comment joined: a read once now under the same one as
        lines = fold.folded(lines, bars - kept, temporaries, bars & kept,   # its use)
                            algebra.simplifier(lines, bars, b.shapes, unreduced=False)[0],
                            wrap=True, targets=targets)
    # `x_bar = E; return x_bar` is `return E` (ad/fold.py returned_in_place), laid out as E was
    last, count = lines[-2] if len(lines) > 1 else None, len(lines)
    lines = fold.returned_in_place(lines, bars & kept, algebra.simplifier(
        lines, bars, b.shapes, unreduced=False)[0])
    if last is not None and id(last) in before and len(lines) < count:
        before.add(id(lines[-1]))
    lines = _quotients_not_divided_again(lines, _quotients(fn), bars)
    # `f_out, f_out_res = f_fwd_checked(y)` in a loop's reverse pass, f_out read by nothing
    # after it: `_, f_out_res = ...` (liveness: transformer/walker.py unread_targets_unnamed)
    lines = unread_targets_unnamed(lines)
    # a structure's cotangent past MAX_LENGTH columns: one field a line (ad/fold.py laid_out)
    # (a reduction's rule reading its operand's shape from the operand's operands, shape_of:
    # a new form, written as a person continues a long call wherever it stands)
    # (a line laid_out leaves as it was, no structure in it: wrapped as any other)
    lines = [Line(_long_line_laid_out(ln.code, id(ln) in before), ln.indent, ln.kind, ln.origin)
             if ln.kind == "stmt" and len(ln.code) > fold.MAX_LENGTH else ln for ln in lines]
    del held
    return lines, out_bar_param, out_param, canonical


def _long_line_laid_out(code, structure):
    """A statement past MAX_LENGTH columns written out: a structure's cotangent (`structure`)
    one field a line (fold.laid_out), else, or where that leaves it as it was, its call's
    arguments continued (fold.wrapped)."""
    if structure and "shape_of(" not in code:
        laid = fold.laid_out(code)
        if laid != code:
            return laid
    return fold.wrapped(code)


def _quotients(fn):
    """Names the function's top level binds once to a quotient (`z = (x - mu) / e`)."""
    count = dataflow.definitions(fn)
    return {s.targets[0] for s in fn.body if isinstance(s, ir.Op) and s.op == "true_divide"
            and len(s.targets) == 1 and count.get(s.targets[0]) == 1}


def _quotients_not_divided_again(lines, quotients, bars):
    """`lines` (those assigning a cotangent `bars`, and the return) with each `z * t / e` (z
    a quotient `a / b` of the forward pass, t grad's seed: a true_divide's cotangent of the
    seed times z) written `t / e * z`, the same operations: under jit the seed is a constant
    one that XLA folds away, then rewrites (a / b) / e into a / (b * e), and b * e overflows
    where neither quotient does (gaussian_loglik's z / sigma at sigma = exp(50), issue 20: 0
    under jit where eager gives 1.49e-13; JAX's derivative has a negation between the two
    divisions). (A cotangent t that is no constant keeps its form: XLA cannot fold it.)"""
    if not quotients:
        return lines
    out = []
    for ln in lines:
        if ln.kind != "stmt" or "/" not in ln.code or not ln.uses & quotients or not (
                ln.defines & bars or ln.code.startswith("return ")):
            out.append(ln)
            continue
        tree = ast.parse(ln.code)
        changed = False
        for node in ast.walk(tree):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and
                    isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mult)):
                continue
            z, t = node.left.left, node.left.right

            def quotient(e):
                return isinstance(e, ast.Name) and e.id in quotients or \
                    isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div)
            if quotient(t) and not quotient(z):
                z, t = t, z
            if quotient(t) or not _seed(t) or not quotient(z) or not isinstance(z, ast.Name):
                continue
            node.left, node.op, node.right = ast.BinOp(t, ast.Div(), node.right), ast.Mult(), z
            changed = True
        out.append(Line(ast.unparse(tree), ln.indent, ln.kind, ln.origin) if changed else ln)
    return out


def _seed(node):
    """Whether `node` is grad's seed (a constant one under jit), or its unreduce."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "unreduce" and node.args:
        node = node.args[0]
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id.startswith("grad_seed")


_NAME = re.compile(r"[A-Za-z_]\w*")


def _number(text):
    """Whether `text` is a real number's literal (`2.0`, `-1`)."""
    try:
        return type(ast.literal_eval(text)) in (int, float)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _names_tuple(text):
    """Whether `text` is a tuple display of names and numbers (a helper's tuple cotangent)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(tree, ast.Tuple) and text.startswith("(") and all(
        isinstance(e, ast.Name) or isinstance(e, ast.Constant) and type(e.value) in (int, float)
        for e in tree.elts)


def _split_pairs(code):
    """`a, b = (x, y)` as `a = x` and `b = y` where no item reads a name bound there (a tuple
    cotangent given to a helper's vjp that unpacks it); else [code]."""
    tree = ast.parse(code).body[0]
    if not (isinstance(tree, ast.Assign) and len(tree.targets) == 1 and
            isinstance(tree.targets[0], ast.Tuple) and isinstance(tree.value, ast.Tuple) and
            len(tree.targets[0].elts) == len(tree.value.elts) and
            all(isinstance(t, ast.Name) for t in tree.targets[0].elts)):
        return [code]
    bound = {t.id for t in tree.targets[0].elts}
    if any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(tree.value)):
        return [code]
    return [f"{t.id} = {ast.get_source_segment(code, v)}"
            for t, v in zip(tree.targets[0].elts, tree.value.elts)]


def _renamed(code, names):
    """`code` with each name `names` maps (a Name node's, not an attribute's or a keyword's)
    replaced, the rest of its text as it was."""
    tree = ast.parse(code)
    rows = code.split("\n")
    starts = [0]
    for row in rows:
        starts.append(starts[-1] + len(row) + 1)
    spots = sorted(((starts[n.lineno - 1] + n.col_offset, starts[n.end_lineno - 1] +
                     n.end_col_offset, names[n.id]) for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and n.id in names), reverse=True)
    for a, b, new in spots:
        code = code[:a] + new + code[b:]
    return code


def _without_leading_blanks(lines):
    """`lines` less the blank lines it starts with (no forward statement was needed)."""
    k = 0
    while k < len(lines) and lines[k].kind == "blank":
        k += 1
    return lines[k:]


def _kept_from_reverse(b, start, names, *outs):
    """The outputs returned after the reverse pass (value_and_grad's value, an aux), with each
    name the reverse pass binds again (a loop's pass restores its saved forward values: the
    first iteration's, not the last) copied before it, as `y_value = y`; in an expression too
    (an aux list of Python ints `log`, which the reverse loop restored: the first iteration's,
    silently, before state15l)."""
    rebound = {n for ln in b.lines[start:] for n in ln.defines}
    copies_ = {}

    def copy(name):
        if name not in copies_:
            copies_[name] = names.fresh(f"{name}_value")
            b.lines.insert(start, Line(f"{copies_[name]} = {name}", 1))
        return copies_[name]

    def kept(o):
        if isinstance(o, ir.Seq):
            return ir.Seq(tuple(kept(i) for i in o.items), o.kind, o.keys)
        if isinstance(o, ir.Var) and o.name in rebound:
            return ir.Var(copy(o.name))
        if isinstance(o, ir.Expr) and rebound & set(re.findall(r"\w+", o.src)):
            return ir.Expr(re.sub(r"(?<![\w.'\"])\w+\b(?!['\"])", lambda m: copy(m.group(0))
                                  if m.group(0) in rebound else m.group(0), o.src))
        return o
    return tuple(kept(o) if o is not None else None for o in outs)


def _dtype_read(b, var):
    """What grad's seed reads var's dtype from: a placeholder (`_shape_reads_resolved`) for
    var or the value its dtype comes from (transformer/dataflow.py dtype_root), where var is
    assigned once at the top level and the root is bound there too; else var. So a value read
    for its shape and dtype only (softmax's logp) is not computed for them."""
    if var not in b.at_top or var in b.fn_params:
        return var
    alike = [n for n in dataflow.dtype_alike(var, b.top_ops, b.inexact_params)
             if b.bound_at_top(n)]
    if not alike or alike[-1] != dataflow.dtype_root(var, b.top_ops, b.inexact_params):
        return var
    token = f"__shape_{len(b.shape_reads)}__"
    b.shape_reads[token] = (var, alike[-1])
    b.dtype_reads[token] = alike
    return token


def _shape_reads_resolved(lines, reads, params=(), calls=None, alike=None):
    """`lines` with each placeholder of a value read for its shape only (ReverseBuilder.
    _shape_of) replaced by that value where the derivative computes it anyway (liveness with
    every placeholder read as its stand-in keeps its assignment), else by the stand-in; but by
    the stand-in where that is held there anyway (a parameter, or read from that line on) and
    the value is not: the value then has one reader fewer (a temporary read once more folds
    into it: softmax's `logp = z - snp.log(sum_exp_z)`), and nothing is kept alive longer."""
    if not reads:
        return lines
    kept = {n for ln in dead_code_eliminated(_with_names(lines, {
        t: stand_in for t, (_, stand_in) in reads.items()})) for n in ln.defines}
    # a placeholder's first reading line, and each name's last: a name is read from t's line
    # on where its last reading line is not before t's first (two indices, not a set of the
    # names read from each placeholder's line on: quadratic in a long function)
    first, last = {}, {}
    for i, ln in enumerate(lines):
        for n in ln.uses:
            last[n] = i
            if n in reads and n not in first:
                first[n] = i
    def held(name, t):
        return name in params or t in first and last.get(name, -1) >= first[t]
    names = {t: stand_in if var not in kept or held(stand_in, t) and not held(var, t) else var
             for t, (var, stand_in) in reads.items()}
    for t, values in (alike or {}).items():     # (a seed's dtype: a parameter, else the
        if names[t] != reads[t][0]:             # nearest value computed anyway, of var's)
            names[t] = next((n for n in values if n in params), None) or next(
                (n for n in values if n in kept), names[t])
    for call, (t, by_value, by_shape) in (calls or {}).items():     # (a shape's own function
        names[call] = by_value if names[t] == reads[t][0] else by_shape    # where it is read)
    return _with_names(lines, names)


# a vjp's returned zero cotangent of one of its parameters (ad/reverse.py build: `grads`)
_ZERO_OF_PARAM = re.compile(r"(?:zeros_like_tree|snp\.zeros_like)\((\w+)\)")
_BY_SHAPE = {"sum": ("unreduce", "unreduce_to"), "mean": ("mean_grad", "mean_grad_to")}
# (ReverseBuilder._shape_of's tokens, and those of a function reading a shape or the value)
_PLACEHOLDER = re.compile(r"__shape(?:fn)?_\d+__")


def _with_names(lines, names):
    """`lines` with the placeholders `names` maps replaced by the names it maps them to (one
    pattern for every token, each looked up: not an alternation of all the tokens, tried one
    by one at each place, issue 19)."""
    def named(m):
        return names.get(m.group(0), m.group(0))
    return [Line(_PLACEHOLDER.sub(named, ln.code), ln.indent, ln.kind, ln.origin)
            if not names.keys().isdisjoint(ln.uses) else ln for ln in lines]


def _unpack_output_bar(b, result, source):
    """Bind the cotangents of a tuple of outputs from `source`: a tuple pattern for tuples and
    lists; a dict display's items read by key (unpacking a dict would bind its keys); an output
    repeated (`return h, h`, `{'a': h, 'b': h}`) adds its later cotangents to the first."""
    repeats, dicts = [], []

    def target(item):
        if isinstance(item, ir.Seq) and item.kind == "dict":
            dicts.append((b.names.fresh("d_bar"), item))
            return dicts[-1][0]
        if isinstance(item, ir.Seq):
            inner = [target(i) for i in item.items]
            return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
        if not isinstance(item, ir.Var):
            return b.discard
        if item.name in b.bars:
            repeats.append((item.name, b.names.fresh(f"{item.name}_bar")))
            return repeats[-1][1]
        b.bars[item.name] = b.bar_name(item.name)
        return b.bars[item.name]

    items = [target(i) for i in result.items]
    b.emit(f"{', '.join(items)}, = {source}" if len(items) == 1 else
           f"{', '.join(items)} = {source}")
    for var, extra in repeats:
        b.emit(b._add(var, b.bars[var], extra))
    for name, seq in dicts:
        for key, item in zip(seq.keys, seq.items):
            if isinstance(item, ir.Var) and item.name in b.bars:
                b.emit(b._add(item.name, b.bars[item.name], f"{name}[{key}]"))
            elif isinstance(item, ir.Var):
                b.bars[item.name] = b.bar_name(item.name)
                b.emit(f"{b.bars[item.name]} = {name}[{key}]")
            elif isinstance(item, ir.Seq) and _has_var(item):
                _unpack_output_bar(b, ir.Seq((item,), "tuple"), f"({name}[{key}],)")


def _take_given_output(b, fn, result, names):
    """Bind the output's variables from a parameter instead of the top-level statements that
    computed them (dead code elimination then drops what only they needed)."""
    bound = set()
    if isinstance(result, ir.Var) and result.name not in fn.params:   # the parameter takes
        defining = [k for k, ln in enumerate(b.lines) if result.name in ln.defines]  # its name
        if len(defining) == 1 and b.lines[defining[0]].indent == 1 and \
                b.lines[defining[0]].kind == "stmt" and \
                b.lines[defining[0]].code.startswith(f"{result.name} = "):
            del b.lines[defining[0]]
            return result.name
    param = names.fresh("out")

    def pattern(item):
        if isinstance(item, ir.Seq) and item.kind == "dict":
            return b.discard        # (unpacking a dict would bind its keys)
        if isinstance(item, ir.Seq):
            inner = [pattern(i) for i in item.items]
            return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
        if not isinstance(item, ir.Var) or item.name in fn.params or item.name in bound:
            return b.discard
        defining = [k for k, ln in enumerate(b.lines) if item.name in ln.defines]
        if len(defining) != 1:          # also set in a loop or a branch: leave it computed
            return b.discard
        ln = b.lines[defining[0]]
        if ln.indent != 1 or ln.kind != "stmt" or not ln.code.startswith(f"{item.name} = "):
            return b.discard
        del b.lines[defining[0]]
        bound.add(item.name)
        return item.name

    items = [pattern(i) for i in result.items] if isinstance(result, ir.Seq) else \
        [pattern(result)]
    if bound:
        unpack = ", ".join(items) + ("," if isinstance(result, ir.Seq) and len(items) == 1 else "")
        b.lines.insert(0, Line(f"{unpack} = {param}", 1))
    return param


def _guards(stmts):
    """For each variable: the (test, branch) pairs guarding each of its assignments, one set a
    site (a derivative's forward and reverse pass split one user `if` into several on the
    same saved test)."""
    sites = {}

    def visit(stmts, enclosing):
        for s in stmts:
            if isinstance(s, ir.Op):
                for t in s.targets:
                    sites.setdefault(t, []).append(enclosing)
            elif isinstance(s, ir.Plain) and not re.fullmatch(r"\w+ = None", s.code.strip()):
                for t in s.defines:     # (`v = None` only keeps v bound: not a value)
                    sites.setdefault(t, []).append(enclosing)
            elif isinstance(s, ir.If):
                visit(s.body, enclosing | {(s.test, 0)})
                visit(s.orelse, enclosing | {(s.test, 1)})
            elif isinstance(s, (ir.For, ir.While)):
                visit(s.body, enclosing)
    visit(stmts, frozenset())
    visit = None   # (it names itself: freed now, not by the cyclic collector)
    return {v: tuple(where) for v, where in sites.items()}


def _none_bound(stmts):
    """Variables bound to None (`v = None`) and those joined to them by copies (`w = v`,
    `v = w`: a loop's carry, a branch's value): None on some runs."""
    out = {v for s in ir.nested(stmts) if isinstance(s, ir.Plain)
           and re.fullmatch(r"\w+ = None", s.code.strip()) for v in s.defines}
    if not out:
        return out
    copies = []
    for s in ir.nested(stmts):
        target = next(iter(s.targets if isinstance(s, ir.Op) else s.defines), None) \
            if isinstance(s, (ir.Op, ir.Plain)) else None
        if target is None:
            continue
        if isinstance(s, ir.Op) and s.op == "identity" and isinstance(s.operands.get("x"), ir.Var):
            copies.append((target, s.operands["x"].name))
        elif isinstance(s, ir.Plain) and len(s.defines) == 1:
            m = re.fullmatch(r"(\w+) = (\w+)", s.code.strip())
            if m and m.group(2) != "None":
                copies.append((m.group(1), m.group(2)))
    grown = True
    while grown:
        grown = {b for a, b in copies if a in out and b not in out} \
            | {a for a, b in copies if b in out and a not in out}
        out |= grown
    return out


def _tree_items(stmts):
    """Variables added into a container as an item (add_at, add_at_grad; a helper's arguments
    its __secant_tree_args__ name), the container itself (add_at's tree, add_at_grad's t: an
    array or a list, as it turns out) and those copied into one (`g_1 = g`): their cotangents
    add with add_grads, and a branch that leaves one out gives it a pytree's zeros (a layer
    added into a list of layers in the branch for containers of a helper whose other branch
    reads it as an array: batching/helpers.py add_at_batched; add_rows' cotangent, a list's in
    one branch and an array's in the other)."""
    out = set()
    for op in _ops_in(stmts):
        keys = ("item", "tree", "t") if op.op in ("add_at", "add_at_grad") else tuple(
            f"arg{i}" for i in getattr(getattr(op, "callee", None), "__secant_tree_args__", ()))
        out |= {op.operands[k].name for k in keys if isinstance(op.operands.get(k), ir.Var)}
    copies = set()                          # (copy, what it copies)
    for st in ir.nested(stmts):
        if isinstance(st, ir.Op) and st.op == "identity" and isinstance(st.operands.get("x"),
                                                                        ir.Var):
            copies.add((st.targets[0], st.operands["x"].name))
        elif isinstance(st, ir.Plain) and len(st.defines) == 1:
            m = re.fullmatch(r"(\w+) = (\w+)", st.code.strip())
            if m and m[1] in st.defines:
                copies.add((m[1], m[2]))
    grown = True
    while grown:
        grown = {v for t, v in copies if t in out and v not in out}
        out |= grown
    return out


def _containers(stmts, by_counters=True):
    """Variables that may be pytree containers, whose cotangents are built item by item: those
    a loop over a container walks (`for w, b in params`), those read field by field, and those
    whose items are read field by field (`w, b = params[i]`)."""
    ops = list(_ops_in(stmts))
    sources = {op.targets[0]: op.operands["a" if op.op == "getitem" else "x"].name for op in ops
               if op.op in ("getitem", "identity", "seq_as")    # (seq_as: items = list(hidden))
               and isinstance(op.operands["a" if op.op == "getitem" else "x"], ir.Var)}
    out = {op.operands["a"].name for op in ops
           if op.op == "getitem" and getattr(op, "container", False)
           and (by_counters or not getattr(op, "walked", False))}
    for op in ops:
        if op.op in ("field", "attribute", "getattr") and \
                isinstance(op.operands["tree"], ir.Var):
            tree = op.operands["tree"].name
            out.add(tree)
        elif op.op == "call" and getattr(op.callee, "__name__", "") == "item_of" \
                and isinstance(op.operands.get("arg0"), ir.Var):    # a vmapped tuple's field
            out.add(op.operands["arg0"].name)
    if by_counters:
        out |= _maybe_rows(stmts)
    out |= container_names(stmts)           # lists and dicts built in the function
    out |= _tested_as_containers(stmts)     # `isinstance(x, (tuple, list))`: x may be either
    grown = True
    while grown:                # hidden = params[:-1] is a container: so is params
        grown = {sources[t] for t in out if t in sources} - out
        out |= grown
    stacks = [s.stack for s in ir.nested(stmts) if isinstance(s, ir.Plain) and s.stack]
    pushed = {stack for kind, stack, name in stacks if kind == "push" and name in out}
    out |= {name for kind, stack, name in stacks if kind == "pop" and stack in pushed}
    return out


def _subscripted_items(stmts, containers, arrays):
    """Items of containers that are read item by item and that no array op reads (a row of a
    list of lists, `table[i - 1][j - 1]`): containers too, whose cotangents add_at builds (an
    array's or a list's, as the item turns out when it runs)."""
    items = {}
    for op in _ops_in(stmts):
        if op.op == "getitem" and isinstance(op.operands["a"], ir.Var):
            items.setdefault(op.operands["a"].name, []).append(op.targets[0])
    out, grown = set(), set(containers)
    while grown:
        grown = {t for c in grown for t in items.get(c, ()) if t in items and t not in arrays
                 and t not in containers} - out
        out |= grown
    return out


_ISINSTANCE_CONTAINER = re.compile(
    r"isinstance\(\s*(\w+)\s*,\s*\(?[\w\s,.]*\b(?:tuple|list|dict)\b"
    r"|hasattr\(\s*(\w+)\s*,\s*['\"]at['\"]\s*\)")


def _tested_as_containers(stmts):
    """Variables the function asks whether they are a tuple, list or dict (item_of's
    `isinstance(x, (tuple, list))`) or whether they are arrays (add_rows' `hasattr(t, "at")`):
    containers on some calls, whatever else reads them."""
    return {m.group(1) or m.group(2) for s in ir.nested(stmts) if isinstance(s, ir.Plain)
            for m in _ISINSTANCE_CONTAINER.finditer(s.code)}


# ops whose operands may be containers (pytrees) rather than arrays
_TREE_OPERANDS = {"identity", "getitem", "field", "attribute", "getattr", "call", "add_grads",
                  "add_at", "add_at_grad",
                  "grad_of_fields", "pack", "concat_seq", "dict_merge", "seq_as", "tree_leaves",
                  "tree_unflatten", "tree_structure", "tree_leaves_as", "fields_of",
                  "fields_of_batched", "split_at", "unmerge", "unmerge_grad", "pick",
                  *CONTROL_FLOW}


def arrays_read(stmts):
    """Variables an array op reads (an operand of sin, +, matmul; an item of a list stacked):
    arrays, whose cotangents add with +."""
    out = set()
    for op in _ops_in(stmts):
        spec = OPS.get(op.op)
        if spec is None or op.op in _TREE_OPERANDS:
            continue
        for name, operand in op.operands.items():
            if name == spec.sequence and isinstance(operand, ir.Seq):
                out.update(i.name for i in operand.items if isinstance(i, ir.Var))
            elif name in spec.arrays and isinstance(operand, ir.Var):
                out.add(operand.name)
    return out


_RANGE = re.compile(r"(\w+) = range\(.*")
_OF_RANGE = re.compile(r"(\w+) = list\((?:(\w+)|reversed\((\w+)\))\)")
_CHUNKS = re.compile(r"(\w+) = list\(reversed\(row_chunks\((\w+)\)\)\)")


def _ranges(stmts, counting=False):
    """The names bound to a range(...), or to list(r) or list(reversed(r)) of one (a
    derivative's `items = list(i_range)`), or looping over list(reversed(row_chunks(r))) of
    one: sequences of distinct ints. counting: only a
    range(n) of one argument, 0, 1, ..., n - 1 (rows distinct as negative ones are not)."""
    found, chunks = set(), set()
    for s in ir.nested(stmts):
        if isinstance(s, ir.For) and s.iterable in chunks and s.target.isidentifier():
            found.add(s.target)     # (each a piece of a range: distinct ints, ascending)
        if not isinstance(s, ir.Plain):
            continue
        m = _RANGE.fullmatch(s.code.strip())
        call = m and _range_call(s.code.strip())
        if call and (not counting or len(call.args) == 1 and not call.keywords and
                     not isinstance(call.args[0], ast.Starred)):
            found.add(m.group(1))
        m = _OF_RANGE.fullmatch(s.code.strip())
        if m and (m.group(2) or m.group(3)) in found:
            found.add(m.group(1))
        m = _CHUNKS.fullmatch(s.code.strip())   # (a derivative's reverse loop over row_chunks,
        if m and m.group(2) in found:           # differentiated again)
            chunks.add(m.group(1))
    return found


def _range_call(code):
    """The range(...) call that `r = range(...)` binds whole, or None (`k = range(3)[i]`, an
    int, matches _RANGE too)."""
    value = parsed(code).body[0].value
    return value if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id == "range" else None


_ZEROED_ROW = re.compile(r"(\w+) = (\w+)\.at\[([\w:, ]+)\]\.set\(0\)")   # (_RowAdds.zeroed_after)


class _RowAdds:
    """A loop over a range reading one row of an outer array per iteration (`x[i]`): its
    reverse adds each row's cotangent by `x_bar = x_bar.at[i].add(x_item_bar)`, a copy of
    x_bar per iteration, quadratic in the rows eagerly (issue 20: minutes for 10,000 rows).
    Where that is x_bar's only scatter in the loop, written in the loop's own body (not in a
    branch or inner loop), and every other line of the loop reading x_bar only adds to it,
    the rows are gathered in a list and added after the loop at once (helpers.add_rows):

        x_rows_bar = []
        for i in reversed(i_range):
            ...
            x_rows_bar.append(x_item_bar)
        x_bar = add_rows(x_bar, x_rows_bar, i_range[::-1], mode="clip")

    The write form, `out = out.at[i].set(v)` over a range(n) (rows distinct): its reverse read
    row i of out's cotangent and zeroed it, `out_bar = out_2_bar.at[i].set(0)`, a copy per row.
    Where out's cotangent is read only there, the rows are zeroed after the loop at once:

        for i in reversed(i_range):
            ...
            v_bar = out_bar.at[i].get(mode="fill", fill_value=0)
        out_bar = zero_rows(out_bar, i_range)
    """

    def __init__(self, loop, indent, outer, counting):
        self.loop, self.indent, self.outer = loop, indent, outer
        self.counting = counting    # (the loop's range is 0, 1, ..., n - 1: its rows distinct)
        self.notes = {}         # x_bar -> [(its scatter line, x, row cotangent, mode keyword)]

    def note(self, builder, var, idx, g, back):
        """The scatter just written (builder.lines[-1]) of var's row cotangent g at idx."""
        line = builder.lines[-1]
        axis = _counter_axis(idx, self.loop.target)
        ok = axis is not None and var in self.outer and line.indent == self.indent
        if ok and axis:                 # (a column: its cotangent an array's, never a list's)
            back += f", axis={axis}"
        self.notes.setdefault(builder.bars[var], []).append((line, var, g, back) if ok else None)

    def added_after(self, builder, head):
        """Rewrite the loop (its header at builder.lines[head]) for each cotangent that can."""
        lines = builder.lines
        end = next((k for k in range(head + 1, len(lines)) if lines[k].indent <= lines[head].indent
                    and lines[k].kind != "slot"), len(lines))
        after = []
        for b, notes in self.notes.items():
            if len(notes) != 1 or notes[0] is None:
                continue
            line, var, g, back = notes[0]
            adds = re.compile(rf"{b} = ({b} \+ |add_grads\({b}, )")
            if any((b in ln.uses or b in ln.defines) and ln is not line
                   and not adds.match(ln.code) for ln in lines[head:end]):
                continue        # (read or set otherwise in the loop: its value there matters)
            rows = builder.names.fresh(f"{var}_{'columns' if 'axis=' in back else 'rows'}_bar")
            k = next(k for k in range(head, end) if lines[k] is line)
            lines[k] = Line(f"{rows}.append({g})", line.indent, origin=line.origin)
            lines.insert(head, Line(f"{rows} = []", lines[head].indent))
            head, end = head + 1, end + 1
            after.append((b, rows, back))
        zeroed = self.zeroed_after(builder, head) if self.counting else []
        if after and lines[head].code == f"for {self.loop.target} in reversed(" \
                                          f"{self.loop.iterable}):":
            self.in_chunks(builder, head, len(after), after)
        else:
            for b, rows, back in after:
                builder.emit(f"{b} = add_rows({b}, {rows}, {self.loop.iterable}[::-1]{back})")
        for code in zeroed:
            builder.emit(code)

    def in_chunks(self, builder, head, inits, adds):
        """The reverse loop (its header at builder.lines[head], its `rows = []` lines the
        `inits` before it) run over row_chunks of its range, each chunk's rows added after it:
        the lists hold one chunk's rows (issue 20: all 10,000 rows' cotangents held at once
        peaked at 7 times the gradient's memory)."""
        lines, i, r = builder.lines, self.loop.target, self.loop.iterable
        start, d = head - inits, lines[head].indent
        chunk = builder.names.fresh(f"{i}_chunk")
        for ln in lines[start:]:
            ln.indent += 1
        lines[head] = Line(f"for {i} in reversed({chunk}):", d + 1, "block")
        lines.insert(start, Line(f"for {chunk} in reversed(row_chunks({r})):", d, "block"))
        for b, rows, back in adds:
            lines.append(Line(f"{b} = add_rows({b}, {rows}, {chunk}[::-1]{back})", d + 1,
                              origin=builder.origin))

    def zeroed_after(self, builder, head):
        """Each `out_bar = out_2_bar.at[i].set(0)` (the reverse of out.at[i].set(v)) in the
        loop's own body, where out_2_bar is the copy `out_2_bar = out_bar` read only at row i
        and out_bar is read nowhere else in the loop: the copy and the zeroing dropped, the reads
        made of out_bar, and the lines zeroing its rows after the loop returned."""
        lines, i = builder.lines, self.loop.target
        end = next((k for k in range(head + 1, len(lines)) if lines[k].indent <= lines[head].indent
                    and lines[k].kind != "slot"), len(lines))
        bars = set(builder.bars.values())
        body = [ln for ln in lines[head + 1:end] if ln.kind != "slot"]
        after = []
        for ln in body:
            m = _ZEROED_ROW.fullmatch(ln.code)
            if not m or ln.indent != self.indent or m.group(1) not in bars \
                    or m.group(2) not in bars:
                continue
            b, g, idx = m.groups()
            axis = _counter_axis(idx, i)
            if axis is None:
                continue        # (a row or a column at the loop's counter only)
            copy = [c for c in body if c.code == f"{g} = {b}" and c.indent == self.indent]
            at = re.escape(idx)
            row = re.compile(rf"\b{g}\b(?!\.at\[{at}\]\.get\(|\[{at}\])")
            if len(copy) != 1 or any(b in c.uses or b in c.defines for c in body
                                     if c is not ln and c is not copy[0]) \
                    or any(g in c.defines for c in body if c is not copy[0]) \
                    or any(row.search(c.code) for c in body if g in c.uses and c is not ln
                           and c is not copy[0]):
                continue        # (out_bar read otherwise: the rows zeroed so far matter)
            ln.kind = copy[0].kind = "slot"     # (dropped when the lines are assembled)
            for k in range(head + 1, end):
                if lines[k].kind != "slot" and g in lines[k].uses:
                    fresh = Line(re.sub(rf"\b{g}\b", b, lines[k].code), lines[k].indent,
                                 lines[k].kind, lines[k].origin)
                    lines[k].code, lines[k].uses, lines[k].defines = \
                        fresh.code, fresh.uses, fresh.defines
            after.append(f"{b} = zero_rows({b}, {self.loop.iterable}"
                         + (f", axis={axis})" if axis else ")"))
        return after


def _counter_axis(idx, counter):
    """The axis an index (its source, `i` or `:, i`) picks at the loop's counter, every other
    axis before it whole (`x[i]`, `x[i, :]`: 0; `x[:, i]`: 1); else None (`x[i, 0]`, `x[i:]`,
    `x[..., i]`: no row nor column of its own)."""
    try:
        tree = parsed(f"_[{idx}]").body
    except SyntaxError:
        return None
    if len(tree) != 1 or not isinstance(tree[0], ast.Expr) or \
            not isinstance(tree[0].value, ast.Subscript):
        return None
    index = tree[0].value.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    at = [k for k, p in enumerate(parts) if isinstance(p, ast.Name) and p.id == counter]
    whole = [isinstance(p, ast.Slice) and p.lower is p.upper is p.step is None for p in parts]
    if len(at) != 1 or not all(whole[:at[0]] + whole[at[0] + 1:]):
        return None
    return at[0]


def _refuse_read_after_loop(s, assigned, bars):
    """A name each iteration assigns afresh and the loop does not carry whose value after the
    loop is differentiated: its cotangent is the last iteration's only, but the reverse loop
    would add it to every iteration's (a wrong gradient): refused. (A guard: the transformer
    carries every such name read after the loop, the loop variable of `for g in fs` too,
    normalize._loop.)"""
    late = sorted(v for v in assigned if v in bars)
    if late:
        o = s.origin
        at = f"\n  at {o.filename}:{o.line}\n    {o.text}" if o else ""
        name = re.sub(r"_[0-9]+$", "", late[0])
        raise SecantError(
            f"{name} is assigned in each iteration of this loop and its value after the loop "
            f"is differentiated: reverse mode (grad, vjp, jacrev) cannot yet give it to the "
            f"last iteration only; read the last value another way after the loop (such as "
            f"{name} = ...[-1])" + at)


def _is_carry_copy(st, carried):
    """The copy of an iteration's last value back to its loop name (`h_1 = h_2`, `n_1 = n_2`):
    a replayed iteration keeps the values it started from, so it leaves these out."""
    if isinstance(st, ir.Op):
        return st.op == "identity" and st.targets[0] in {loop for loop, _ in carried}
    return isinstance(st, ir.Plain) and st.code.strip() in {f"{loop} = {last}"
                                                             for loop, last in carried}


def _copy_of(st, var):
    """The variable `st` copies var into (`y_2 = y_1`), or None."""
    if isinstance(st, ir.Op):
        if st.op == "identity" and len(st.targets) == 1 and st.operands.get("x") == ir.Var(var):
            return st.targets[0]
    elif isinstance(st, ir.Plain) and len(st.defines) == 1:
        target = next(iter(st.defines))
        if st.code.strip() == f"{target} = {var}":
            return target
    return None


def _maybe_rows(stmts):
    """Variables indexed by a loop's counter and never read as an array's shape (x[i] in
    range(x.shape[0]): an array), and those a loop walks (`for row in x`): a list or an array,
    known at run time only."""
    walked = {op.operands["a"].name for op in _ops_in(stmts)
              if op.op == "getitem" and getattr(op, "walked", False)}
    return walked | {a for a in _indexed_by_counters(stmts)
                     if not re.search(rf"\b{re.escape(a)}\.shape\b", _plain_text(stmts))}


def _indexed_by_counters(stmts):
    """Variables a Python loop indexes with its counter (`ws[i]`; in a while loop, an index
    reading a name its test reads: `while i + 1 < len(ws): ... ws[i + 1]`): a list or tuple of
    weights as often as an array, so their cotangents are built item by item (add_at handles
    both)."""
    out = set()
    for s in stmts:
        if isinstance(s, ir.For):
            out |= {op.operands["a"].name for op in _ops_in(s.body)
                    if op.op == "getitem" and isinstance(op.operands["a"], ir.Var)
                    and op.statics["idx"].strip() == s.target}
        if isinstance(s, ir.While):
            tested = set(re.findall(r"\w+", s.test))
            out |= {op.operands["a"].name for op in _ops_in(s.body)
                    if op.op == "getitem" and isinstance(op.operands["a"], ir.Var)
                    and set(re.findall(r"\w+", op.statics["idx"])) & tested}
        if isinstance(s, (ir.For, ir.While)):
            out |= _indexed_by_counters(s.body)
        elif isinstance(s, ir.If):
            out |= _indexed_by_counters(s.body) | _indexed_by_counters(s.orelse)
    return out


def _reads_underscore(fn):
    """Whether `fn` (ir.Function) reads a variable called `_` (conservatively: any `_` in
    the text it keeps as written)."""
    def mentions(text):
        return re.search(r"(?<!\w)_(?!\w)", text) is not None
    for s in ir.nested(fn.body):
        if isinstance(s, ir.Op) and any(
                isinstance(o, ir.Var) and o.name == "_" or isinstance(o, ir.Expr) and mentions(o.src)
                for v in s.operands.values() for o in _flat(v)):
            return True
        if isinstance(s, ir.Plain) and _loads_underscore(s.code):
            return True
        if isinstance(s, (ir.If, ir.While)) and mentions(s.test):
            return True
    result = fn.result.value if fn.result is not None else None
    return result is not None and any(isinstance(o, ir.Var) and o.name == "_" or
                                      isinstance(o, ir.Expr) and mentions(o.src)
                                      for o in _flat(result))


def _loads_underscore(code):
    """Whether a statement kept as written reads `_` of the function's scope (a nested def's
    own `_, carry, carry_out = step` is its own)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return re.search(r"(?<!\w)_(?!\w)", code) is not None
    stack = list(tree.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.Lambda)):
            binds = any(isinstance(m, ast.Name) and m.id == "_" and isinstance(m.ctx, ast.Store)
                        or isinstance(m, ast.arg) and m.arg == "_" for m in ast.walk(n))
            if binds:           # its own `_` (a read of the enclosing one would be refused
                continue        # by Python's scoping: `_` is local throughout the def)
        if isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Load):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def _plain_text(stmts):
    """The source of the statements kept as written (ranges, shape queries), nested ones too."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Plain):
            out.append(s.code)
        elif isinstance(s, (ir.For, ir.While)):
            out.append(_plain_text(s.body))
        elif isinstance(s, ir.If):
            out += [_plain_text(s.body), _plain_text(s.orelse)]
    return "\n".join(out)


def _fields_read(stmts):
    """Variables read field by field (`r["a"]`, `p.w`, getattr(p, k); a derivative's
    fields_of(p_bar, keys)): containers (a loop's dict item, say), whose zero is
    zeros_like_tree."""
    out = {op.operands["tree"].name for op in _ops_in(stmts)
           if op.op in ("field", "attribute", "getattr", "fields_of", "fields_of_batched")
           and isinstance(op.operands.get("tree"), ir.Var)}
    for s in ir.nested(stmts):      # a loop's name for such a value (`for r in rows`)
        if isinstance(s, (ir.For, ir.While)):
            out |= {loop for loop, last in s.carried if last in out}
    return out


def _ops_in(stmts):
    return (s for s in ir.nested(stmts) if isinstance(s, ir.Op))


_FIELD_SET = re.compile(r"^(\w+)\.(\w+) *(?:[-+*/]?=)(?!=)")


def _check_fields_read_first(fn, where):
    """Refuses `y = x * self.calls; self.calls += 1` (a Python counter on an object, run as
    written once per call): its reverse pass would read self.calls again after the update."""
    sets = {}
    for st in ir.nested(fn.body):
        hit = isinstance(st, ir.Plain) and st.effect and _FIELD_SET.match(st.code.strip())
        if hit:
            sets.setdefault(f"{hit.group(1)}.{hit.group(2)}", st)
    if not sets:
        return
    for st in ir.nested(fn.body):
        for field, at in sets.items():
            if st is at:
                sets = {k: v for k, v in sets.items() if v is not at}
                break
            if isinstance(st, ir.Op) and any(
                    re.search(rf"\b{re.escape(field)}\b", src(o)) for o in st.operands.values()
                    if isinstance(o, ir.Expr)):
                raise _state_error(f"{field} is read before the function sets it (an attribute "
                                   "counter): the reverse pass would read it again after the "
                                   "update; read it after setting it, or differentiate with "
                                   "secant.jacfwd" + where(st.origin))
        if not sets:
            return


_STATE_READ = re.compile(r"^\w+ = (read_(?:global|cell)\w*)\('(\w+)'\)$")
_STATE_WRITE = re.compile(r"^write_(?:global|cell)\w*\(")


def _function_positions(op):
    """The parameter positions a lax op's functions are differentiated in: its carry (a
    cond's active operands) and its closed-over values, a scan's xs where active."""
    d, k = op.operands, len(op.operands["closed"].items)
    if op.op in ("cond", "switch"):
        n = len(d["operands"].items)
        return tuple([i for i, o in enumerate(d["operands"].items) if _has_var(o)] +
                     [n + j for j in range(k)])
    xs = [1] if _has_var(d.get("xs")) else []
    first = {"fori_loop": [1], "while_loop": [0], "map": [0] if xs else [],
             "scan": [0] + xs}[op.op]
    return tuple(first + [{"fori_loop": 2, "scan": 2}.get(op.op, 1) + j for j in range(k)])


def _state_mention(name, own):
    """A pattern for a read of state `name` (".calls": an attribute) in a statement's source:
    `calls`, or `module.calls` (a global read through its module: any name not a local); where
    the function has a local of that name (`own`, its locals), not the local itself but a read
    of the state (`calls = read_global('calls')`, transformer/global_writes.py)."""
    if name.startswith("."):
        return r"\w" + re.escape(name) + r"\b"
    module = r"(?<![\w.])" + (r"(?!(?:%s)\.)" % "|".join(map(re.escape, sorted(own)))
                             if own else "") + r"\w+\." + re.escape(name) + r"\b"
    if name in own:
        return r"read_(?:global|cell)\w*\('" + re.escape(name) + "'|" + module
    return r"(?<![\w.])" + re.escape(name) + r"\b|" + module


def _check_state_replayable(fn, recomputing, replay=False, passed=()):
    """Refuses a reverse pass that would read Python state (a global or closure variable the
    function sets: transformer/global_writes.py) at another time than the user's call did:
    a recompute (a callee's vjp, jacrev's) of a function that reads it before setting it (the
    call set it already), or a caller that calls such stateful functions more than once, or in
    a loop, or sets state after calling one (each recompute would read the state the last one
    left). JAX reads it once, as the call runs; secant refuses where it cannot be sure.
    A callee that calls such a function counts as one (nonlocals.reaches_state); a call
    `passed` the state it read (ad/state_inputs.py) reads no state again, and is not checked."""
    from secant.transformer.nonlocals import reached_names as state_names, \
        reaches_state as writes_state

    def where(origin):
        return f"\n  at {origin.filename}:{origin.line}\n    {origin.text}" if origin else ""
    early = "read before the function sets it (a global, nonlocal or attribute counter): a " \
        "derivative that runs the function again for its reverse pass (a callee's, or " \
        "jacrev's) would read the value the call already set; read it after setting it, or " \
        "differentiate this function itself with grad or jacfwd"
    # (a replay form: jacfwd's layout, run before the call, reads the state the call reads;
    # a callee's replay in its caller's recompute: the caller's vjp is checked here)
    for st in ir.nested(fn.body) if recomputing else ():
        callee = plain_state_callee(st, fn)
        if callee is not None:      # (a recompute, or jacfwd's layout, runs it again)
            name = _callee_title(callee)
            raise _state_error(
                f"{name} sets Python state (a global, nonlocal or attribute counter) and its "
                "value is used: a derivative that runs this function again (vjp, jacrev, "
                "hessian, jacfwd's layout, or a caller's reverse pass) would call it a second "
                "time and read another value: secant cannot be sure of it; differentiate "
                "this function itself with grad, or pass the value in as an argument"
                + where(st.origin))
    for st in ir.nested(fn.body) if recomputing and not replay else ():
        hit = isinstance(st, ir.Plain) and _STATE_READ.match(st.code.strip())
        if hit:
            raise _state_error(f"{hit.group(2)} is {early}" + where(st.origin))
        if isinstance(st, ir.Op) and st.op == "call" and \
                writes_state(called_object(st, fn)) == "early":
            raise _state_error(f"{_callee_title(called_object(st, fn))} reads state it "
                               f"sets, {early}" + where(st.origin))
    if not replay:
        _check_fields_read_first(fn, where)
    stateful, loops = [], [s for s in ir.nested(fn.body) if isinstance(s, (ir.For, ir.While))]
    own = getattr(fn, "locals", set())
    in_loop = {id(t) for lp in loops for t in ir.nested(lp.body)}
    before = []         # the source each statement before the stateful call reads
    for st in ir.nested(fn.body):
        if id(st) in passed:
            if stateful:        # (a call passed its state sets more after an earlier one)
                stateful.append(stateful[-1])
                break
            continue
        callee = called_object(st, fn) if isinstance(st, ir.Op) and st.op == "call" else None
        if callee is not None and writes_state(callee):
            if writes_state(callee) != "unread" and (id(st) in in_loop or stateful):
                stateful.append(st)
                break
            read = [n for n in state_names(callee) for text in before
                    if re.search(_state_mention(n, own), text)]
            if read and not replay:     # (a replay reads what the call reads)
                name = _callee_title(callee)
                raise _state_error(
                    f"{read[0].lstrip('.')} is read before {name} sets it (a global, nonlocal "
                    "or attribute counter): the reverse pass would read it again after the "
                    "call changed it; read it after the call, or differentiate with "
                    "secant.jacfwd" + where(st.origin))
            if writes_state(callee) != "unread":     # (a replay reads no state of it)
                stateful.append(st)
        elif not stateful:
            before.append(st.code if isinstance(st, ir.Plain) else " ".join(
                src(o) for o in getattr(st, "operands", {}).values()
                if isinstance(o, ir.Expr)) if isinstance(st, ir.Op) else "")
        elif stateful and isinstance(st, ir.Plain) and _STATE_WRITE.match(st.code.strip()):
            stateful.append(stateful[-1])
            break
    else:
        return
    name = _callee_title(called_object(stateful[-1], fn))
    if replay:
        return
    raise _state_error(
        f"{name} sets Python state (a global, nonlocal or attribute counter) and is called "
        "again (or in a loop, or before more state is set) in a function differentiated in "
        f"reverse mode: the reverse pass runs {name} again after later calls changed that "
        "state, and would read their value: secant cannot be sure of it; differentiate with "
        "secant.jacfwd, or call it once" + where(st.origin))


def _state_error(message):
    """A refusal of reverse mode for Python state it would read again at another time than
    the user's call: marked (state_rerun), so that jacrev, hessian and grad take the same
    derivative by forward mode instead (secant/transforms.py _forward_instead), which runs the
    function once, as JAX does."""
    from secant.errors import SecantError
    error = SecantError(message)
    error.state_rerun = True
    return error


def _callee_title(callee):
    """How an error names a callee: its name, or a callable object's class's call."""
    name = getattr(callee, "__qualname__", None)
    owner = getattr(callee, "__self__", None)
    if isinstance(name, str) and owner is not None and not inspect.ismodule(owner):
        return f"{type(owner).__name__}.{callee.__name__}"
    return name.split(".<locals>.")[-1] if isinstance(name, str) else \
        f"{type(callee).__name__}.__call__"


def _index_value(idx):
    """An index's source as a value: `i` or `0` as written, a slice or tuple as index_exp[...]."""
    if idx.isidentifier() or re.fullmatch(r"-?\d+", idx):
        return idx
    return f"index_exp[{idx}]"


def _has_var(o):
    if isinstance(o, ir.Var):
        return True
    return isinstance(o, ir.Seq) and any(_has_var(i) for i in o.items)


def _flat(o):
    if isinstance(o, ir.Seq):
        for i in o.items:
            yield from _flat(i)
    else:
        yield o


def _operands_in(stmts):
    for s in stmts:
        if isinstance(s, ir.Op):
            for o in s.operands.values():
                yield from _flat(o)
        elif isinstance(s, ir.If):
            yield from _operands_in(s.body)
            yield from _operands_in(s.orelse)
        elif isinstance(s, (ir.For, ir.While)):
            yield from _operands_in(s.body)


def _unpacked_target(target, replay, indent):
    """The reverse loop's target: `(a, b)` where the replayed iteration's first line unpacks
    the loop variable, `a, b = item`, and no other line reads it (a person unpacks in the
    header: `for (a, b), x in zip(reversed(items), reversed(x_stack)):`), else `target`. The
    names and nesting are kept (no starred target): the header binds what the line did, at
    the same point of the iteration."""
    if not replay or replay[0].kind != "stmt" or replay[0].indent != indent or \
            "\n" in replay[0].code or replay[0].uses != {target} or \
            any(target in ln.uses or target in ln.defines for ln in replay[1:]):
        return target
    st = parsed(replay[0].code).body[0]
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], ast.Tuple) and _plain_tuple(st.targets[0])):
        return target
    return ast.unparse(st.targets[0])       # (in parentheses: one item of a zip's)


def _plain_tuple(node):
    """Whether a target is a tuple of names and such tuples, two items or more at each level."""
    return isinstance(node, ast.Tuple) and len(node.elts) > 1 and all(
        isinstance(e, ast.Name) or _plain_tuple(e) for e in node.elts)


def _names_of(target):
    """The names a loop target's text binds."""
    return set(re.findall(r"\w+", target))


def reversed_loop(pairs):
    """The reverse loop's header over (target, list) pairs, each list read backwards:
    `for x in reversed(x_stack):`, `for i, x in zip(reversed(i_range), reversed(x_stack)):`
    (a stack per saved value, all as long as the loop ran iterations). Past MAX_LENGTH
    columns the lists go on as many rows as they need, aligned after `zip(`, or where that
    does not fit, after a row ending `zip(`, indented eight columns (PEP 8's hanging indent
    of a block's header)."""
    head = f"for {', '.join(t for t, _ in pairs)} in "
    lists = [f"reversed({a})" for _, a in pairs]
    if len(lists) == 1:
        return f"{head}{lists[0]}:"
    head += "zip("
    rows = _filled(head, " " * len(head), lists)
    if max(map(len, rows)) > fold.MAX_LENGTH:
        rows = [head] + _filled(" " * 8, " " * 8, lists)
    return "\n".join(rows)


def _filled(first, indent, texts):
    """Rows of `texts` joined by ", ", the first after `first`, the next after `indent`, each as
    full as fits MAX_LENGTH columns, the last closed by `):`."""
    rows, row = [], first + texts[0]
    for text in texts[1:]:
        if len(row) + len(text) + 4 > fold.MAX_LENGTH:     # (", " and, last, "):")
            rows.append(row + ",")
            row = indent + text
        else:
            row += ", " + text
    return rows + [row + "):"]
