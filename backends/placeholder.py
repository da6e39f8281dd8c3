"""The placeholder for a variable a branch of a staged `if` does not assign
(transformer/functionalize.py writes it; backends/control_flow.py, secant.numpy and the batching
helpers know it): an error wherever the program reads it."""
from secant.backends.errors import SecantError


class Undefined:
    """What a branch returns for a variable only the other branch assigns (pred concrete)."""
    __slots__ = ("name", "where")
    __secant_undefined__ = True

    def __init__(self, name, where):
        self.name, self.where = name, where

    def __repr__(self):
        return f"<undefined {self.name}>"

    def _fail(self, *args, **kwargs):
        raise SecantError(f"local variable {self.name!r} is used but was assigned in only one "
                          f"branch of the if{self.where}")

    __bool__ = __call__ = __getitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __neg__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
