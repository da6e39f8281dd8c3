"""The pmap axes bound right now: while secant.pmap traces its function with axis_name `i`,
`lax.psum(x, 'i')` & co. bind collective primitives over that axis's replicas. (vmap binds its
own axis names by rewriting the calls in its generated source, so it never appears here.)"""
import contextlib
import threading


class _ThreadState(threading.local):
    def __init__(self):
        self.stack = []      # (name, size), innermost last: this thread's pmap traces


_state = _ThreadState()


@contextlib.contextmanager
def bind(name, size):
    """`name` names a pmap axis of `size` replicas inside this block (None binds nothing)."""
    if name is None:
        yield
        return
    stack = _state.stack
    stack.append((name, int(size)))
    try:
        yield
    finally:
        stack.pop()


def size(name):
    """The replica count of the pmap axis `name`, or None when no pmap binds it."""
    for n, s in reversed(_state.stack):
        if n == name:
            return s
    return None


def depth():
    return len(_state.stack)
