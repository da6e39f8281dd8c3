"""For the oracle scripts run with JAX's Python (bench/*_oracle.py): import this tree's
secant (through its editable install's finder) and its dependencies (gast) from its venv, and
put tests/ on the path for the user programs. `import oracle_env` first, then jax and secant."""
import glob
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.append(str(next(iter(glob.glob(str(ROOT / ".venv/lib/python3*/site-packages"))))))
_finder = glob.glob(str(ROOT / ".venv/lib/python3*/site-packages/__editable___secant*finder.py"))
if _finder:
    _spec = importlib.util.spec_from_file_location("secant_finder", _finder[0])
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    # secant from this copy of the tree (a snapshot run while the worktree is edited)
    _mod.MAPPING.update({k: str(ROOT / pathlib.Path(v).name) for k, v in _mod.MAPPING.items()})
    _mod.install()
sys.path.insert(0, str(ROOT / "tests"))
