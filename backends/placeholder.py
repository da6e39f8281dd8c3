"""The placeholder for a variable a branch of a staged `if` does not assign
(transformer/functionalize.py writes it; backends/control_flow.py, secant.numpy and the batching
helpers know it): an error wherever the program reads it. Also the value, before a loop, of a
variable the loop assigns first and an iteration may skip (Unbound, transformer/normalize.py)."""
from secant.backends.errors import SecantError


class SecantUnboundLocalError(SecantError, UnboundLocalError):
    """A variable read after a loop that never assigned it (Python raises UnboundLocalError)."""


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


class Unset(Undefined):
    """A derivative's residual on the branch that does not compute it (unset_in_branch): read
    only where the same test holds, so reading it is an error too."""
    __slots__ = ()

    def __init__(self, name):
        super().__init__(name, "")

    def __repr__(self):
        return f"<unset {self.name}>"


class UnsetCotangent(Undefined):
    """The cotangent of an Unset residual (zeros_like of it): a symbolic zero, as nothing reads
    the value it belongs to. Adding it to a cotangent gives that cotangent; scaling it or
    negating it gives itself."""
    __slots__ = ()

    def __init__(self, name):
        super().__init__(name, "")

    def __repr__(self):
        return f"<zero cotangent of unset {self.name}>"

    def _other(self, other):
        return other

    def _self(self, *args):
        return self

    __add__ = __radd__ = __sub__ = _other
    __neg__ = __pos__ = _self
    __mul__ = __rmul__ = __truediv__ = _self

    def __rsub__(self, other):
        return other


def unset_in_branch(name):
    """The value, on the branch that does not compute it, of a variable a derivative computes in
    one branch of an if and reads only under the same test (a residual of its forward pass):
    never read there, whatever the predicate. A traced cond joins it with zeros shaped as the
    other branch's value (as JAX joins a cond's residuals); vmap's select takes the other
    branch's value; transforms read it as a constant."""
    return Unset(name)


unset_in_branch.__secant_placeholder__ = True


class Unbound(Unset):
    """The value, before a loop's first iteration, of a variable the loop assigns that has none
    before it (unbound_before_loop): an iteration that does not assign it copies the previous
    one's; reading it (the loop never assigned it) raises as Python would."""
    __slots__ = ()

    def __repr__(self):
        return f"<unbound {self.name}>"

    def _fail(self, *args, **kwargs):
        raise SecantUnboundLocalError(f"cannot access local variable {self.name!r} where it is "
                                      "not associated with a value (no iteration of the loop "
                                      "assigned it)")

    __bool__ = __call__ = __getitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __neg__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail


class BatchedUnbound(Unbound):
    """An Unbound placeholder broadcast over a vmap's batch (broadcast_batch): it has the
    batch's shape, so a batched helper that takes it first reads its batch size from it, and
    the default float dtype, so the zero cotangent vmap writes for it (snp.zeros(v.shape[1:],
    v.dtype): its value is never read) broadcasts against the other branch's."""
    __slots__ = ("shape",)

    def __init__(self, name, shape):
        super().__init__(name)
        self.shape = shape

    @property
    def dtype(self):
        import numpy as np
        from secant.backends import dtypes
        return dtypes.canonicalize_dtype(np.float64)


def batched_unbound(leaf, n):
    """broadcast_batch of an Unbound placeholder (a constant to the transforms)."""
    return BatchedUnbound(leaf.name, (n,) + getattr(leaf, "shape", ()))


batched_unbound.__secant_placeholder__ = True


def unbound_before_loop(name):
    """`y_1 = unbound_before_loop('y')`: the loop name of a variable that has no value before
    the loop and that an iteration may leave unassigned (transformer/normalize.py)."""
    return Unbound(name)


def check_bound(*values):
    """Raise where Python would: a value returned after a loop is its Unbound placeholder."""
    for v in values:
        if isinstance(v, Unbound):
            v._fail()


unbound_before_loop.__secant_placeholder__ = True
check_bound.__secant_placeholder__ = check_bound.__secant_check__ = True


class RefusedTangent:
    """The tangent of a custom_vjp function's output (whose jvp is refused, as JAX's): an error
    wherever it is read, none where nothing reads it (the forward pass of a reverse pass whose
    fwd rule calls the function itself, `return f(x), x`: jvp of grad, where JAX's jit drops
    that tangent unevaluated). Not a zero: add_grads and the like fail on it too."""
    __slots__ = ("message",)

    def __init__(self, message):
        self.message = message

    def __repr__(self):
        return "<refused tangent>"

    def _fail(self, *args, **kwargs):
        from secant.backends.errors import SecantTypeError
        raise SecantTypeError(self.message)

    __bool__ = __call__ = __getitem__ = __iter__ = __len__ = __array__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = __neg__ = __pos__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __float__ = __int__ = __index__ = _fail
    __jax_array__ = astype = reshape = sum = _fail
    shape = dtype = ndim = size = at = T = real = imag = property(_fail)
