"""secant.config: process-wide switches, as `jax.config` (`config.update("enable_x64", True)`)."""
import os
import sys

from secant.backends.errors import SecantError, SecantValueError, where


def _env_flag(*names):
    for n in names:
        v = os.environ.get(n)
        if v is not None:
            return v.strip().lower() in ("1", "true", "yes", "on")
    return False


class Config:
    def __init__(self):
        self._values = {
            "enable_x64": _env_flag("SECANT_ENABLE_X64", "JAX_ENABLE_X64"),
            # CPU devices of the PJRT client (None: XLA_FLAGS' host device count, else 1); read
            # once, when the client is created
            "num_cpu_devices": None,
            # compiled signatures kept per jit/pmap function (least recently used dropped
            # first; None: unbounded)
            "jit_cache_size": _env_cache_size(),
            # which PJRT platforms to use ("cpu" forces the CPU even with a GPU plugin
            # installed); None: a GPU when a CUDA plugin is installed, else the CPU. Read once,
            # when the client is created
            "platforms": (os.environ.get("SECANT_PLATFORMS") or os.environ.get("JAX_PLATFORMS")
                          or None),
            # a directory where compiled programs persist across processes (None: off);
            # backends/compilation_cache.py
            "compilation_cache_dir": os.environ.get("SECANT_COMPILATION_CACHE_DIR") or None,
            # XLA's backend (LLVM) optimisation level for programs compiled from now on (None:
            # XLA's default). 0 compiles ~30-40% faster (linalg programs: 37.0 -> 22.3 CPU s
            # for 133) and runs slower; results may differ from the default's by a few ulps
            "backend_optimization_level": None,
        }
        self._listeners = []

    def update(self, name, value):
        name = name[4:] if name.startswith("jax_") else name
        if name not in self._values:
            raise SecantValueError(f"unknown config option {name!r}; known: {sorted(self._values)}")
        if name == "num_cpu_devices":
            _check_num_cpu_devices(value)
        if name == "jit_cache_size":
            _check_cache_size(value, "jit_cache_size")
        if name == "platforms":
            _check_platforms(value)
        if name == "backend_optimization_level" and value not in (None, 0, 1, 2, 3):
            raise SecantValueError(f"backend_optimization_level must be None or 0..3, got "
                                   f"{value!r}")
        self._values[name] = value
        for fn in self._listeners:
            fn(name, value)

    def on_change(self, fn):
        self._listeners.append(fn)

    def read(self, name):
        key = name[4:] if name.startswith("jax_") else name    # jax.config.read("jax_enable_x64")
        if key not in self._values:
            raise SecantValueError(f"unknown config option {name!r}; known: {sorted(self._values)}")
        return self._values[key]

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        key = name[4:] if name.startswith("jax_") else name
        if key in values:
            return values[key]
        raise AttributeError(name)


DEFAULT_JIT_CACHE_SIZE = 1024


def _env_cache_size():
    text = os.environ.get("SECANT_JIT_CACHE_SIZE")
    if text is None or not text.strip():
        return DEFAULT_JIT_CACHE_SIZE
    if text.strip().lower() in ("none", "unbounded"):
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise SecantValueError(f"SECANT_JIT_CACHE_SIZE must be a positive integer (or 'none' "
                               f"for unbounded), got {text!r}")
    return value


def _check_cache_size(value, name):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SecantValueError(f"{name} must be a positive int (or None for unbounded), got "
                               f"{value!r}" + where())


def _check_num_cpu_devices(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SecantValueError(f"num_cpu_devices must be a positive int, got {value!r}" + where())
    runtime = sys.modules.get("secant.backends.runtime")
    if runtime is not None and runtime.client_created():
        have = len(runtime.client().devices())
        if value != have:
            raise SecantError(
                f"num_cpu_devices cannot change to {value} after the devices were created (this "
                f"process has {have}): set it before the first secant.devices(), jit or device "
                "call, e.g. right after `import secant`, or set XLA_FLAGS="
                f"--xla_force_host_platform_device_count={value} before starting Python"
                + where())


def _check_platforms(value):
    if value is not None:
        names = [x.strip().lower() for x in str(value).split(",") if x.strip()]
        bad = [x for x in names if x not in ("cpu", "gpu", "cuda")]
        if bad or not names:
            raise SecantValueError(f"platforms: {value!r}; expected 'cpu', 'gpu' (or 'cuda'), "
                                   "or a comma-separated list of them" + where())
    runtime = sys.modules.get("secant.backends.runtime")
    if runtime is not None and runtime.client_created():
        raise SecantError("platforms cannot change after the devices were created: set it "
                          "before the first secant.devices(), jit or device call, or set "
                          "SECANT_PLATFORMS before starting Python" + where())


config = Config()
