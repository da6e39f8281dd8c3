"""host_callback: a Python function called on the host from a program (debug.print,
debug.callback, pure_callback).

`callback` is a runtime.HostCallback (the function, registered with the PJRT adapter under an id
the lowering writes into the program); `result_avals` are the arrays it returns (none for a
debug print). Eagerly the function is simply called. It has no derivative: debug.print and
debug.callback are statements the transforms keep as written, and pure_callback is an error
under grad, as in JAX."""
import numpy as np

from secant.backends.core import Primitive, register


def _rule(*avals, callback, result_avals, has_side_effect):
    return list(result_avals)


def _impl(*values, callback, result_avals, has_side_effect):
    return list(callback(*[np.asarray(v) for v in values]))


host_callback_p = register(Primitive("host_callback", _rule, _impl, multiple_results=True,
                                     weak="never", differentiable=False))
