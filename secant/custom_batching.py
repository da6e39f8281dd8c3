"""secant.custom_batching, as jax.custom_batching: custom_vmap, and sequential_vmap(f), a
function that vmap runs one example at a time (lax.map over the batched arguments, the others
passed whole), for code that cannot be batched or is cheaper in a loop."""
from secant import lax
from secant.custom import custom_vmap

__all__ = ["custom_vmap", "sequential_vmap"]


def sequential_vmap(f):
    """f, batched by vmap as a loop over the examples (lax.map), as JAX's sequential_vmap."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        mapped = [a for a, b in zip(args, in_batched) if b]

        def one(xs):
            it = iter(xs)
            return f.fun(*[next(it) if b else a for a, b in zip(args, in_batched)])
        return lax.map(one, mapped), True
    return f
