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
from secant.transformer.walker import defined_in


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
        """A push or pop written once per pass that runs it: the forward pass (self.loops: the
        loops around it) and each reverse loop's replay of an iteration (self.loops[0]: the
        loop replayed, then the loops inside it around the statement). A stack made inside the
        loop replayed (`s_2_stack = []` in its body: an inner loop's) is made again by the
        replay, so its pushes and pops run as written; one made outside it was pushed by the
        forward pass already, so the replay pops what the pass before it saw. What a pop gives
        is saved for the next loop out that replays it and cannot make the stack again."""
        kind, stack, name = s.stack          # (kinds push_const / pop_const: untracked values)
        remade = bool(self.loops) and self.replaying and stack in defined_in(self.loops[0].body)
        if kind.startswith("push"):
            if not self.replaying or remade:    # (a replayed iteration has its values)
                self.emit(s.code)
            return
        if self.replaying and not remade:   # the value this pop gave in the pass before
            replay = getattr(s, "replay", None)
            self.emit(f"{name} = {replay}.pop()" if replay else s.code)
        else:
            self.emit(s.code)
        later = self.loops[1:] if self.replaying else self.loops
        if not later or stack in defined_in(later[0].body):
            return                  # (no loop replays it, or the next one makes it again)
        if len(later) != 1:
            raise UnsupportedError(
                "reverse mode through a derivative's loop stack popped two loops inside the "
                "loop that replays it is not supported; use secant.hessian or "
                "secant.jacfwd(secant.grad(f)) (forward over reverse)")
        s.replay = self.names.fresh(f"{name}_stack")
        later[0].replay_inits.append(f"{s.replay} = []")
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
            g = self.bars.pop(name, None) or f"{self._tree_zeros(name)}({name})"    # (a list too)
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
        """Before the reverse of a loop that pops stacks made outside it: their cotangent
        stacks, empty (an inner loop's stack, made in the body, gets its own in the body)."""
        made = defined_in(loop.body)
        for s in pops_in(loop.body):
            stack = s.stack[1]
            if stack in self.stacks and stack not in self.bars and stack not in made:
                base = re.sub(r"_stack(_\d+)*$", "", stack)
                self.bars[stack] = self.names.fresh(f"{base}_bar_stack")
                self.emit(f"{self.bars[stack]} = []")

    def feeds_stack(self, loop):
        """Whether the loop pushes on a stack whose cotangents were collected."""
        return any(s.stack[1] in self.bars for s in pushes_in(loop.body))
