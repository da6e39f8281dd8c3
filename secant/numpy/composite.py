"""Library functions differentiated and batched through their source.

Most of secant.numpy is one op each, with a rule per transform (transformer/ops.py). A function
that is a short composition of such ops needs no rules of its own: the transforms read a Python
function written with secant.numpy's ops (its *source*) as they read a user's helper, so `grad`,
`jvp` and `vmap` of it follow from the ops it calls, and generated code calls e.g. `roll_vjp`.

- A module whose globals set `__secant_by_source__ = True` (secant/numpy/sources.py, and
  libraries written entirely with secant.numpy's ops) is read like user code: its functions,
  their helpers and the code generated from them.
- `@source_for(library_fn)` on a function of such a module makes it what the transforms read for
  `library_fn`, whose calls still compute the value (written for speed and NumPy's argument
  checks); the source must compute the same values. Give a source the library function's name:
  generated code names derivatives after it.
"""


def source_for(*fns):
    """Decorator: the decorated function (in a by-source module, same signature, same values)
    is what the transforms read for the library functions `fns`."""
    def mark(source):
        for fn in fns:
            fn.__secant_composite__ = source
        return source
    return mark
