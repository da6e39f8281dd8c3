"""The eighth battery (explore15q, issue 15): whole small scripts as JAX users write them, each a
module of its own that begins `import jax` / `import jax.numpy as jnp` and ends in a `main()`
returning a trajectory (losses per step, final parameters, samples). Training loops with
hand-written optimizers under `@jax.jit`, integrators in `lax.fori_loop` / `lax.scan`, Metropolis
and HMC chains vmapped over chains, and the mixed habits of real scripts (device_get, printing,
block_until_ready, permutation shuffles, masked losses, checkpoints).

`run(name, backend)` loads a script with `jax` bound to real JAX (backend "jax": only
bench/scripts_oracle.py, run with /tmp/jaxenv/bin/python, which records the trajectories into
tests/user_programs/scripts_expected.py) or to secant (backend "secant": the tests, which never
import jax): while the module's own import statements run, `jax`, `jax.numpy`, ... in sys.modules
are secant's modules; they are restored at once after.
"""
import contextlib
import importlib
import importlib.util
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
# each battery's folder and the prefix of its modules' names: this eighth one, and the ninth
# (explore15r: code shaped like the libraries built on JAX, written by hand -- modules as
# pytrees, init/apply pairs, optimizers as (init, update) pairs, distributions and bijectors)
BATTERIES = {"scripts": (HERE, "s_"), "libraries": (HERE.parent / "libraries", "l_")}


def names(battery="scripts"):
    folder, prefix = BATTERIES[battery]
    return sorted(p.stem for p in folder.glob(prefix + "*.py"))


SCRIPTS = names()
LIBRARIES = names("libraries")

# secant's public modules a script may import as jax's (imported first, so that each maps)
_PUBLIC = ("numpy", "random", "lax", "tree_util", "tree", "nn", "nn.initializers", "scipy",
           "scipy.linalg", "scipy.special", "scipy.stats", "scipy.optimize", "scipy.signal",
           "example_libraries", "example_libraries.stax", "example_libraries.optimizers",
           "experimental", "experimental.ode", "dtypes", "debug", "image", "ops")


@contextlib.contextmanager
def _jax_is_secant():
    """While it runs, `import jax.X` is secant.X: every loaded secant module entered in
    sys.modules under jax's name (the module object itself, never a second copy of its file)."""
    for sub in _PUBLIC:
        importlib.import_module("secant." + sub)
    names = {"jax" + k[len("secant"):]: m for k, m in list(sys.modules.items())
             if k == "secant" or k.startswith("secant.")}
    saved = {k: sys.modules.get(k) for k in names}
    sys.modules.update(names)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def load(name, backend):
    """The script module `name`, its `jax` being `backend`'s ("jax" or "secant")."""
    modname = f"user_scripts_{backend}.{name}"
    if modname in sys.modules:
        return sys.modules[modname]
    folder = next(f for f, prefix in BATTERIES.values() if name.startswith(prefix))
    spec = importlib.util.spec_from_file_location(modname, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        if backend == "secant":
            with _jax_is_secant():
                spec.loader.exec_module(module)
        else:
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


def leaves(result, prefix="out"):
    """A trajectory flattened to [(path, dtype name, shape, values as nested lists)]: dicts by
    sorted key, lists and tuples by position, everything else through np.asarray."""
    if isinstance(result, dict):
        out = []
        for k in sorted(result):
            out.extend(leaves(result[k], f"{prefix}[{k!r}]"))
        return out
    if isinstance(result, (list, tuple)):
        out = []
        for i, r in enumerate(result):
            out.extend(leaves(r, f"{prefix}[{i}]"))
        return out
    a = np.asarray(result)
    return [(prefix, str(a.dtype), tuple(a.shape), a.tolist())]


def run(name, backend):
    return leaves(load(name, backend).main())
