"""Reverse mode through a derivative's loop stacks (second order and up through Python loops).

A reverse-mode derivative replays a Python loop backwards from a stack its forward loop fills:
`x_stack.append(x)` in the loop, `x = x_stack.pop()` in the reverse loop (ad/reverse.py). The
normaliser marks those statements (ir.Plain.stack); differentiating that derivative again
treats the stack as the value it carries:

- `x = x_stack.pop()` runs as written, and what it popped is pushed again on `x_1_stack` (the
  pop's own stack), from which the reverse pass's replay of that iteration pops it back;
  its adjoint pushes x's cotangent on `x_bar_stack` (zeros when x got none);
- `x_stack.append(x)` runs as written (not in a replay); its adjoint pops x's cotangent from
  `x_bar_stack`: the reverse of the reverse loop pushed them in the order the forward loop's
  reverse pops them.

Every stack these write ends in `_stack`, so a third-order derivative reads them the same way.
Forward mode carries tangents beside the values (ad/forward.py); vmap carries batching through
them (batching/vectorize.py).
"""
import re

from secant.backends.errors import UnsupportedError
from secant.transformer import ir


def _marked(stmts, kind):
    """The push or pop statements (ir.Plain) of tracked stacks in stmts, nested ones too."""
    return [s for s in ir.nested(stmts)
            if isinstance(s, ir.Plain) and s.stack and s.stack[0] == kind]


def stacks_of(stmts):
    """The loop stacks (x_stack) a derivative pushes tracked values onto."""
    return {s.stack[1] for s in _marked(stmts, "push")}


def pops_in(stmts):
    return _marked(stmts, "pop")


def pushes_in(stmts):
    return _marked(stmts, "push")


class StackReverse:
    """ReverseBuilder's handling of marked stack statements (mixed into it)."""

    def forward_stack(self, s):
        kind, stack, name = s.stack          # (kinds push_const / pop_const: untracked values)
        if kind.startswith("push"):
            if not self.replaying:      # a replayed iteration has its values already
                self.emit(s.code)
            return
        if self.replaying:              # the value this pop gave in the forward pass
            replay = getattr(s, "replay", None)
            self.emit(f"{name} = {replay}.pop()" if replay else s.code)
            return
        if len(self.loops) != 1:
            if kind == "pop" and stack in self.stacks:
                raise UnsupportedError(
                    "reverse mode through nested Python loops of a derivative (second order "
                    "and up) is not supported yet; use secant.hessian or "
                    "secant.jacfwd(secant.grad(f)) (forward over reverse), or lax.fori_loop / "
                    "lax.scan for the inner loop")
            self.emit(s.code)
            return
        s.replay = self.names.fresh(f"{name}_stack")
        self.loops[-1].replay_inits.append(f"{s.replay} = []")
        self.emit(s.code)
        self.emit(f"{s.replay}.append({name})")

    def reverse_stack(self, s):
        kind, stack, name = s.stack
        if stack not in self.stacks or kind.endswith("_const"):
            return
        if kind == "pop":
            bars = self.bars.get(stack)
            if bars is None:
                return
            fields = self.fields.pop(name, None)    # (p = p_stack.pop(); p["x"] read after:
            if fields:                              # the cotangent those reads gathered)
                self.flush_fields(name, fields)
            g = self.bars.pop(name, None) or f"{self._zeros(name)}({name})"    # (a list too)
            self.emit(f"{bars}.append({g})")
        elif stack in self.bars:
            popped = self.names.fresh(f"{name}_bar")     # a statement of its own, as the
            self.emit(f"{popped} = {self.bars[stack]}.pop()")   # next order reads stacks
            if name in self.bars:       # (a saved value may be a list where an array op
                b = self.bars[name]     # reads it in another branch: added leaf by leaf)
                self.emit(f"{b} = add_grads({b}, {popped})")
            else:
                self.accumulate(name, popped)

    def stack_bars_before(self, loop):
        """Before the reverse of a loop that pops stacks: their cotangent stacks, empty."""
        for s in pops_in(loop.body):
            stack = s.stack[1]
            if stack in self.stacks and stack not in self.bars:
                base = re.sub(r"_stack(_\d+)*$", "", stack)
                self.bars[stack] = self.names.fresh(f"{base}_bar_stack")
                self.emit(f"{self.bars[stack]} = []")

    def feeds_stack(self, loop):
        """Whether the loop pushes on a stack whose cotangents were collected."""
        return any(s.stack[1] in self.bars for s in pushes_in(loop.body))
