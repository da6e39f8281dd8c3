"""secant: JAX's programming model as a source-to-source compiler.

grad, jvp, vmap and pmap write new, readable Python functions; jit traces them into StableHLO and
runs them through XLA's PJRT runtime.
"""
from secant.backends.array import PublicArray as Array
from secant.backends.config import config
from secant.backends.errors import (ConcretizationError, SecantError, SecantTypeError,
                                    SecantValueError, UnexpectedTracerError, UnsupportedError)
from secant.backends import errors as _errors
from secant import errors
from secant import tree_util
from secant import tree
from secant import dtypes     # jax.dtypes: float0
from secant import numpy
from secant import lax
from secant import random
from secant import debug
from secant.debug import pure_callback
from secant.api_extras import (ShapeDtypeStruct, ensure_compile_time_eval, eval_shape,
                               linear_transpose, named_call, named_scope, typeof)
from secant.transforms import (grad, hessian, jacfwd, jacrev, jvp, jvp_fn, linearize, source,
                               value_and_grad, vjp)
from secant.batch import vmap
from secant.parallel import pmap
from secant.codegen.save import save_source
from secant.side_by_side import show
from secant.custom import custom_jvp, custom_vjp, custom_vmap
from secant.custom_gradient import custom_gradient
from secant import vectorize_rules as _vectorize_rules  # noqa: F401  (vectorize under the transforms)
from secant.custom import make_checkpoint as checkpoint, make_checkpoint as remat
from secant.api import (block_until_ready, clear_caches, default_backend, device_count, device_get,
                        device_put, devices, jit, local_device_count, local_devices,
                        process_count, process_index)
from secant import distributed  # noqa: E402  (secant.distributed.initialize, as jax.distributed)

from secant import nn, scipy  # noqa: E402  (jax.nn and jax.scipy, reachable after `import secant`)
from secant import random_dists as _random_dists  # noqa: E402,F401  (secant.random.gamma, beta, ...)
from secant import lax_more as _lax_more  # noqa: E402  (more of jax.lax, read as source)
for _name in _lax_more.__all__:
    setattr(lax, _name, getattr(_lax_more, _name))
from secant import lax_misc as _lax_misc  # noqa: E402  (and more: mulhi, reduce_xor, ...)
for _name in _lax_misc.__all__:
    setattr(lax, _name, getattr(_lax_misc, _name))
from secant import lax_ragged as _lax_ragged  # noqa: E402  (ragged_dot, the dot enums)
for _name in _lax_ragged.__all__:
    setattr(lax, _name, getattr(_lax_ragged, _name))
from secant import random_bounds as _random_bounds  # noqa: E402,F401  (grad of uniform's bounds)
from secant import test_util  # noqa: E402  (jax.test_util.check_grads)
from secant.jaxpr import make_jaxpr  # noqa: E402
from secant import example_libraries  # noqa: E402  (jax.example_libraries)
from secant import ops  # noqa: E402  (jax.ops: segment_sum, segment_prod, segment_max, segment_min)
from secant import image  # noqa: E402  (jax.image: resize, scale_and_translate)
from secant import custom_batching, custom_derivatives  # noqa: E402  (as jax's modules)
from secant import typing  # noqa: E402,F401  (jax.typing: ArrayLike, DTypeLike)
from secant.backends.runtime import Device  # noqa: E402
from secant.backends.errors import named_at_call as _named_at_call
from secant.checkpoint_policies import checkpoint_policies  # noqa: E402
from secant import config_states as _config_states  # noqa: E402  (jax.enable_x64, disable_jit, ...)
for _name in _config_states.__all__:
    globals()[_name] = getattr(_config_states, _name)
float0 = dtypes.float0
host_count = process_count          # (JAX's older names of process_count / process_index)
host_id = process_index


def process_indices(backend=None):
    """The indices of the run's processes: [0, ..., process_count() - 1]."""
    return list(range(process_count()))


host_ids = process_indices

# a call of the API itself with a keyword it does not take (grad(f, argnum=0)): Python's
# TypeError, as JAX's, at the user's line
(grad, value_and_grad, vjp, jvp, jvp_fn, linearize, jacfwd, jacrev, hessian, vmap, pmap, jit,
 checkpoint, remat, source, save_source) = map(_named_at_call, (
    grad, value_and_grad, vjp, jvp, jvp_fn, linearize, jacfwd, jacrev, hessian, vmap, pmap, jit,
    checkpoint, remat, source, save_source))

_errors.register_internal_dir(__file__)

__version__ = "0.1.0"

__all__ = ["Array", "config", "SecantError", "SecantTypeError", "SecantValueError",
           "ConcretizationError", "UnexpectedTracerError", "UnsupportedError", "errors",
           "tree_util", "tree", "dtypes", "numpy", "lax", "random", "debug", "pure_callback", "ShapeDtypeStruct", "eval_shape",
           "named_call", "named_scope", "ensure_compile_time_eval", "nn", "scipy", "jit",
           "devices", "local_devices", "device_count", "local_device_count", "default_backend",
           "process_index", "process_count", "distributed",
           "device_put", "device_get", "block_until_ready", "clear_caches", "grad", "value_and_grad", "vjp", "source",
           "save_source", "show", "jvp", "jvp_fn", "linearize", "jacfwd", "jacrev", "hessian",
           "vmap", "pmap", "custom_jvp", "custom_vjp", "custom_gradient", "custom_vmap",
           "checkpoint", "remat", "example_libraries", "ops", "make_jaxpr", "test_util",
           "image", "custom_batching", "custom_derivatives", "Device", "typeof",
           "linear_transpose", "checkpoint_policies", "float0", "host_count", "host_id",
           "host_ids", "process_indices"] + list(_config_states.__all__)
