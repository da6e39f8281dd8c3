"""secant.config: process-wide switches, as `jax.config` (`config.update("enable_x64", True)`)."""
import os

from secant.backends.errors import SecantValueError


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
        }
        self._listeners = []

    def update(self, name, value):
        name = name[4:] if name.startswith("jax_") else name
        if name not in self._values:
            raise SecantValueError(f"unknown config option {name!r}; known: {sorted(self._values)}")
        self._values[name] = value
        for fn in self._listeners:
            fn(name, value)

    def on_change(self, fn):
        self._listeners.append(fn)

    def read(self, name):
        return self._values[name]

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        key = name[4:] if name.startswith("jax_") else name
        if key in values:
            return values[key]
        raise AttributeError(name)


config = Config()
