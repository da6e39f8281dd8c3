"""pure_callback under the transforms, as JAX documents it.

A call `pure_callback(cb, shapes, x, w, vmap_method=...)` in transformed code is read as a call
of `pure_callback_2(cb, shapes, vmap_method, kwargs, x, w)` (transformer/normalize.py
`callback_call`): a custom function (secant/lax_implicit.py `Implicit`) with one parameter per
array argument, so vmap sees which are batched.

- vmap follows vmap_method: "sequential" / "sequential_unrolled" call the callback once per
  example; "expand_dims" calls it once with the batched arguments (batch axis first) and a size-1
  axis in front of the others, "broadcast_all" with every argument broadcast to the batch,
  "legacy_vectorized" with the unbatched ones as they are; none given is JAX's
  NotImplementedError.
- grad / jvp raise JAX's error: a pure callback has no derivative (give it one with
  custom_jvp / custom_vjp).
"""
import functools
import inspect

from secant import tree_util
from secant.backends.errors import SecantValueError, UnsupportedError, where
from secant.lax_implicit import Implicit

_FIXED = ("callback", "result_shape_dtypes", "vmap_method", "kwargs")


class CallbackFunction(Implicit):
    """pure_callback with n array arguments, as the transforms see it."""

    def generate_rule(self, mode, params, wrt, staged, batch):
        if mode == "vmap":
            return self.batched(params, wrt, batch)
        raise SecantValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` "
                               "to use callbacks while taking gradients." + where())

    def batched(self, params, wrt, batch):
        in_axes = dict(batch.in_axes)
        axes = [in_axes.get(i, 0) if i in wrt else None for i in range(len(params))]
        n_fixed = len(_FIXED)

        def value(callback, result_shape_dtypes, vmap_method, kwargs, *args):
            import secant.numpy as snp
            from secant.debug import pure_callback
            arg_axes = axes[n_fixed:]
            size = next((snp.shape(a)[ax] for a, ax in zip(args, arg_axes) if ax is not None),
                        None)
            size = int(batch.axis_size) if size is None else size
            if vmap_method is None:
                raise UnsupportedError("vmap is only supported for pure_callback when "
                                       "vmap_method is set (e.g. vmap_method='sequential'); "
                                       "see jax.pure_callback" + where())
            moved = [a if ax is None else snp.moveaxis(a, ax, 0) for a, ax in zip(args, arg_axes)]
            if vmap_method in ("sequential", "sequential_unrolled"):
                outs = [pure_callback(callback, result_shape_dtypes,
                                      *[a if ax is None else a[k]
                                        for a, ax in zip(moved, arg_axes)], **kwargs)
                        for k in range(size)]
                return tree_util.tree_map(lambda *xs: snp.stack(xs), *outs)
            if vmap_method == "expand_dims":
                moved = [snp.expand_dims(a, 0) if ax is None else a
                         for a, ax in zip(moved, arg_axes)]
            elif vmap_method == "broadcast_all":
                moved = [snp.broadcast_to(a, (size,) + snp.shape(a)) if ax is None else a
                         for a, ax in zip(moved, arg_axes)]
            from secant.api_extras import ShapeDtypeStruct
            shapes = tree_util.tree_map(lambda s: ShapeDtypeStruct((size,) + tuple(s.shape),
                                                                   s.dtype),
                                        result_shape_dtypes)
            return pure_callback(callback, shapes, *moved, vmap_method=vmap_method, **kwargs)

        value.__signature__ = inspect.signature(self.fun)
        value.__name__ = "pure_callback_vmap"
        out = CallbackFunction(value, self.nondiff_argnums, what="pure_callback")
        out.__secant_out_batched__ = True
        return out


@functools.lru_cache(maxsize=None)
def callback_function(n_args):
    """The custom function for pure_callback with n_args array arguments."""
    def call(callback, result_shape_dtypes, vmap_method, kwargs, *args):
        from secant.debug import pure_callback
        return pure_callback(callback, result_shape_dtypes, *args, vmap_method=vmap_method,
                             **kwargs)
    names = list(_FIXED) + [f"arg{i}" for i in range(n_args)]
    call.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in names])
    call.__name__ = f"pure_callback_{n_args}"
    return CallbackFunction(call, tuple(range(len(_FIXED))), what="pure_callback")
