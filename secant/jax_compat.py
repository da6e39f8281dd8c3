"""`python -m secant run script.py`: a JAX program run unchanged, with `jax` resolved to secant.

For the run only (in that process; nothing named jax is installed), a meta-path finder answers
`import jax` and `import jax.<module>` with alias modules: each forwards attribute access to the
secant module it stands for (JAX_MODULES, a table for the modules secant names differently; any
other `jax.a.b` looks for `secant.a.b`). A name secant does not have raises MissingJaxAPI where
the program touches it, naming the program's file and line and the missing API (`jax.foo.bar is
not in secant (secant run maps jax to secant)`): never a partial alias that fails later.
"""
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import traceback
import types

from secant.backends.errors import SecantError, where

# jax module -> the secant module that stands for it, where secant names it differently (any
# other jax.a.b maps to secant.a.b when that exists)
JAX_MODULES = {
    "jax": "secant",
    "jax.lax.linalg": "secant.lax_linalg",
    "jax.lax.fft": "secant.lax_fft",
    "jax.numpy.linalg": "secant.numpy.linalg",
    "jax.numpy.fft": "secant.numpy.fft",
    "jax.experimental.stax": "secant.example_libraries.stax",          # (JAX's old names)
    "jax.experimental.optimizers": "secant.example_libraries.optimizers",
}
# names JAX spells differently from secant: jax name -> (secant module, attribute); secant's own
# attribute of the same name wins where it has one
JAX_NAMES = {
    "jax.jacobian": ("secant", "jacrev"),       # (jax: `jacobian = jacrev`)
}
# attributes of `jax` that are modules in JAX (so `jax.tree_util.tree_map` works without an
# explicit `import jax.tree_util`, as in JAX, whose __init__ imports them)
_SUBMODULES = ("numpy", "lax", "random", "tree_util", "tree", "nn", "scipy", "example_libraries",
               "test_util", "debug", "dtypes")

_NOTE = "(secant run maps jax to secant)"


class JaxConfig:
    """`jax.config` under `secant run`: secant's config, which also takes the platform choices
    JAX programs make (`jax_platform_name` / `jax_platforms` = "cpu": secant runs on CPU)."""

    def __init__(self, config):
        self._config = config

    def update(self, name, value):
        if name in ("jax_platform_name", "jax_platforms", "platform_name", "platforms"):
            if value in (None, "", "cpu"):
                return
            raise _missing(MissingJaxAPI, f"jax.config.update({name!r}, {value!r}) (secant "
                                          "runs on CPU)")
        self._config.update(name, value)

    def __getattr__(self, name):
        return getattr(self._config, name)

    def __repr__(self):
        return repr(self._config)


class MissingJaxAPI(SecantError, AttributeError):
    """A JAX name the program uses that secant does not have (an AttributeError, so
    `hasattr(jax, name)` and `getattr(jax, name, default)` behave as with a missing name)."""


class MissingJaxModule(SecantError, ImportError):
    """`import jax.something` where secant has no module for it."""


def _missing(cls, what):
    return cls(f"{what} is not in secant {_NOTE}{where()}")


def _secant_module(jax_name):
    """The secant module for `jax_name`, or None when secant has none."""
    target = JAX_MODULES.get(jax_name)
    if target is None:
        target = "secant" + jax_name[len("jax"):]
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        # only the module itself missing is "absent"; a module that exists but whose own
        # imports fail is a secant bug, shown as is
        if e.name is not None and (target == e.name or target.startswith(e.name + ".")):
            return None
        raise


class JaxAlias(types.ModuleType):
    """`jax.<name>` for one run: attributes are the secant module's; a submodule attribute is
    the alias of that submodule; anything else is MissingJaxAPI at the point of access."""

    def __init__(self, name, target):
        super().__init__(name, getattr(target, "__doc__", None))
        self.__secant_target__ = target
        self.__path__ = []          # a package: `import jax.x.y` asks the finder for each part
        # the target's names, copied: the transforms resolve `jnp.sin` in a function's source
        # by a static look-up (inspect.getattr_static), which a module __getattr__ would escape
        for attr, value in list(vars(target).items()):
            if attr.startswith("__") and attr not in ("__all__", "__version__"):
                continue
            if isinstance(value, types.ModuleType):
                if value.__name__ == f"{target.__name__}.{attr}":   # a submodule: its alias
                    self.__dict__[attr] = _alias(f"{name}.{attr}", value)
                continue            # (a module it imports is not part of its API)
            self.__dict__[attr] = value
        if name == "jax" and "config" in self.__dict__:
            self.__dict__["config"] = JaxConfig(self.__dict__["config"])
        for jax_name, (module, attr_name) in JAX_NAMES.items():
            parent, _, attr = jax_name.rpartition(".")
            if parent == name and attr not in self.__dict__:
                value = getattr(importlib.import_module(module), attr_name, _ABSENT)
                if value is not _ABSENT:
                    self.__dict__[attr] = value
        for jax_name in JAX_MODULES:         # submodules secant names differently
            parent, _, attr = jax_name.rpartition(".")
            if parent == name and attr not in self.__dict__:
                alias = _alias(jax_name)
                if alias is not None:
                    self.__dict__[attr] = alias

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        full = f"{self.__name__}.{attr}"
        if full in sys.modules:                 # an alias imported already
            return sys.modules[full]
        target = self.__secant_target__
        value = getattr(target, attr, _ABSENT)
        if isinstance(value, types.ModuleType) or (value is _ABSENT and _is_submodule(full)):
            alias = _alias(full)
            if alias is not None:
                return alias
        if value is _ABSENT:
            raise _missing(MissingJaxAPI, full)
        return value

    def __dir__(self):
        return sorted(set(dir(self.__secant_target__)))

    def __repr__(self):
        return f"<module {self.__name__!r} (secant run: {self.__secant_target__.__name__})>"


_ABSENT = object()


def _is_submodule(full):
    return full in JAX_MODULES or full.count(".") == 1 and full.split(".")[1] in _SUBMODULES


def _alias(full, target=None):
    """The alias module `full` (made once per run), or None when secant has no module for it."""
    hit = sys.modules.get(full)
    if isinstance(hit, JaxAlias):
        return hit
    target = target if target is not None else _secant_module(full)
    if target is None:
        return None
    alias = JaxAlias.__new__(JaxAlias, full)
    alias.__spec__ = importlib.machinery.ModuleSpec(full, _LOADER, is_package=True)
    alias.__loader__ = _LOADER
    sys.modules[full] = alias       # (before its attributes: submodules find their parent)
    alias.__init__(full, target)
    return alias


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _alias(spec.name)

    def exec_module(self, module):
        pass


_LOADER = _Loader()


class JaxFinder(importlib.abc.MetaPathFinder):
    """Answers `jax` and `jax.*` imports with alias modules (installed by `install`)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax" and not fullname.startswith("jax."):
            return None
        if _secant_module(fullname) is None:
            raise _missing(MissingJaxModule, fullname)
        return importlib.machinery.ModuleSpec(fullname, _LOADER, is_package=True)


def install():
    """Resolve `jax` to secant in this process (idempotent)."""
    if not any(isinstance(f, JaxFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, JaxFinder())


def uninstall():
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, JaxFinder)]
    for name in [n for n in sys.modules if n == "jax" or n.startswith("jax.")]:
        if isinstance(sys.modules[name], JaxAlias):
            del sys.modules[name]


def run_program(path, argv=()):
    """Run the program at `path` as `__main__` with sys.argv = [path, *argv] and jax resolved to
    secant; returns its exit status (an exception it raises is printed with its own frames)."""
    path = os.path.abspath(path)
    with open(path, "rb") as fh:
        text = fh.read()
    code = compile(text, path, "exec", dont_inherit=True)
    install()
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    old_main, old_argv, old_path0 = sys.modules.get("__main__"), sys.argv, list(sys.path)
    sys.modules["__main__"] = main
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(path))
    try:
        exec(code, main.__dict__)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else _exit_text(e))
    except BaseException as e:      # the program's error, shown from its own first frame
        _print_program_error(e, path)
        return 1
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path0
        if old_main is not None:
            sys.modules["__main__"] = old_main
    return 0


def _exit_text(e):
    print(e.code, file=sys.stderr)
    return 1


def _print_program_error(e, path):
    """The traceback from the program's first frame; for secant's own errors (which name the
    program's line already) without secant's internal frames."""
    from secant.backends.errors import _is_internal
    tb = e.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next         # (drop this runner's own frames)
    tb = tb if tb is not None else e.__traceback__
    if not isinstance(e, SecantError):
        traceback.print_exception(type(e), e, tb)
        return
    frames = [f for f in traceback.extract_tb(tb)
              if not _is_internal(os.path.abspath(f.filename))
              and not f.filename.startswith("<frozen")]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames)
    lines += traceback.format_exception_only(type(e), e)
    sys.stderr.write("".join(lines))
