"""jax's configuration states and context managers at the top level: `with
secant.enable_x64():`, `secant.default_matmul_precision("float32")`, `secant.disable_jit()`,
`secant.default_device(cpu)`, `secant.numpy_rank_promotion("allow")`, ... and `.value`.

A state takes the values whose meaning secant has; any other value is an UnsupportedError at
the user's line, never a silent change of meaning:
- enable_x64 is secant.config's switch;
- values that only change speed, memory, logging or internal checks, never a result, are
  accepted (default_matmul_precision: XLA's CPU dots are float32 whatever it says, as JAX's on
  CPU; log_compiles, explain_cache_misses, check_tracer_leaks, enable_checks, softmax_custom_jvp);
- values that would change behaviour secant does not have are refused (debug_nans=True,
  numpy_rank_promotion="raise", a PRNG implementation other than threefry2x32, ...).
disable_jit runs `jit(f)(x)` as `f(x)` (NumPy eagerly) while it is active, process-wide."""
import contextlib
import platform
import sys

from secant.backends.config import config
from secant.backends.errors import SecantTypeError, UnsupportedError, where

_NO_VALUE = object()


class State:
    """One of jax's configuration states: `.value`, and `state(new_val)` a context manager that
    sets it for a `with` block (a bool state's `state()` sets True)."""

    def __init__(self, name, default, accepted=None, doc=""):
        self.name, self._value, self._accepted = name, default, accepted
        self.__doc__ = doc or f"jax's {name} configuration state."

    @property
    def value(self):
        return self._value

    def _set(self, value):
        if self._accepted is not None and not self._accepted(value):
            raise UnsupportedError(f"secant.{self.name}({value!r}) is not supported: secant "
                                   f"has {self.name}={self._value!r} only{where()}")
        self._value = value

    @contextlib.contextmanager
    def __call__(self, new_val=_NO_VALUE):
        if new_val is _NO_VALUE:
            if not isinstance(self._value, bool) and self._value is not None:
                raise SecantTypeError(f"secant.{self.name}() needs a value{where()}")
            new_val = True
        old = self.value
        self._set(new_val)
        try:
            yield
        finally:
            self._set(old)

    def __repr__(self):
        return f"State({self.name}={self.value!r})"


class _ConfigState(State):
    """A state that is secant.config's option of the same name (enable_x64)."""

    @property
    def value(self):
        return config.read(self.name)

    def _set(self, value):
        config.update(self.name, bool(value))


def _only(*values):
    return lambda v: any(v is x or v == x for x in values)


def _anything(value):
    return True


def _is_default_device(device):
    """None, "cpu", or the first device: where secant puts arrays already."""
    if device is None or device == "cpu":
        return True
    from secant.backends import runtime
    return device == runtime.devices()[0]


enable_x64 = _ConfigState("enable_x64", False, doc="64-bit types (secant.config's enable_x64).")
# (speed, memory, logging, internal checks: any value, no change of any result)
default_matmul_precision = State("default_matmul_precision", None, _anything)
log_compiles = State("log_compiles", False, _anything)
explain_cache_misses = State("explain_cache_misses", False, _anything)
check_tracer_leaks = State("check_tracer_leaks", False, _anything)
enable_checks = State("enable_checks", False, _anything)
softmax_custom_jvp = State("softmax_custom_jvp", False, _anything)
allow_f16_reductions = State("allow_f16_reductions", True, _anything)
# (the behaviour secant has, and no other)
debug_nans = State("debug_nans", False, _only(False))
debug_infs = State("debug_infs", False, _only(False))
debug_key_reuse = State("debug_key_reuse", False, _only(False))
enable_custom_prng = State("enable_custom_prng", False, _only(False))
numpy_rank_promotion = State("numpy_rank_promotion", "allow", _only("allow"))
numpy_dtype_promotion = State("numpy_dtype_promotion", "standard", _only("standard"))
threefry_partitionable = State("threefry_partitionable", True, _only(True))
legacy_prng_key = State("legacy_prng_key", "allow", _only("allow"))
default_prng_impl = State("default_prng_impl", "threefry2x32", _only("threefry2x32"))
no_tracing = State("no_tracing", False, _only(False))
no_execution = State("no_execution", False, _only(False))
transfer_guard_host_to_device = State("transfer_guard_host_to_device", None,
                                      _only(None, "allow"))
transfer_guard_device_to_device = State("transfer_guard_device_to_device", None,
                                        _only(None, "allow"))
transfer_guard_device_to_host = State("transfer_guard_device_to_host", None,
                                      _only(None, "allow"))
default_device = State("default_device", None, _is_default_device,
                       doc="The device arrays go to: secant's first device only.")


def checking_leaks():
    """check_tracer_leaks(True) (secant reports a leaked tracer where it is used)."""
    return check_tracer_leaks(True)


@contextlib.contextmanager
def transfer_guard(new_val):
    """Every transfer guard at once: "allow" only (secant does not guard transfers)."""
    with transfer_guard_host_to_device(new_val), transfer_guard_device_to_device(new_val), \
            transfer_guard_device_to_host(new_val):
        yield


@contextlib.contextmanager
def disable_jit(disable=True):
    """While active, `jit(f)(*args)` calls f itself (eagerly, on NumPy), as jax.disable_jit:
    print and pdb see concrete values. Process-wide (not per thread)."""
    from secant.api import JitFunction
    if not disable:
        yield
        return
    compiled = JitFunction.__dict__["__call__"]
    JitFunction.__call__ = _eager_call
    try:
        yield
    finally:
        JitFunction.__call__ = compiled


def _eager_call(self, *args, **kwargs):
    return self._fun(*args, **kwargs)


def print_environment_info(return_string=False):
    """The versions secant runs with (as jax.print_environment_info)."""
    import numpy as np
    import secant
    try:
        import jaxlib
        jaxlib_version = jaxlib.__version__
    except ImportError:     # (secant's runtime needs it; for a partial install)
        jaxlib_version = "not installed"
    from secant.backends import runtime
    text = (f"secant:  {secant.__version__}\njaxlib:  {jaxlib_version}\nnumpy:   {np.__version__}"
            f"\npython:  {sys.version}\nprocess_count: {runtime.process_count()}\n"
            f"platform: {platform.platform()}\ndevices: {list(runtime.devices())}\n")
    if return_string:
        return text
    print(text)


STATES = ["enable_x64", "default_matmul_precision", "log_compiles", "explain_cache_misses",
          "check_tracer_leaks", "enable_checks", "softmax_custom_jvp", "allow_f16_reductions",
          "debug_nans", "debug_infs", "debug_key_reuse", "enable_custom_prng",
          "numpy_rank_promotion", "numpy_dtype_promotion", "threefry_partitionable",
          "legacy_prng_key", "default_prng_impl", "no_tracing", "no_execution",
          "transfer_guard_host_to_device", "transfer_guard_device_to_device",
          "transfer_guard_device_to_host", "default_device"]
__all__ = STATES + ["checking_leaks", "transfer_guard", "disable_jit", "print_environment_info"]
