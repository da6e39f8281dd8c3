"""For the oracle scripts run with JAX's Python (bench/*_oracle.py): import this worktree's
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
    _mod.install()
sys.path.insert(0, str(ROOT / "tests"))
