"""The persistent compilation cache's key (issue 19): a fresh process that runs a program whose
meaning changed since the entry was stored must compile it again, never read the old executable
(a stale hit is a silent wrong value), and one whose program did not change reads it (one hit, no
compile). Each change below is one a faster key (computed before tracing, say) could miss: a
callee's source edited in its own module, a module-level constant the traced code reads, a config
option that changes only XLA's compile options. Compiles are counted by compilation_cache.stats
(a miss is an XLA compile); each gradient is checked against its closed form in float64."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

_HELPER = "import secant.numpy as snp\n\n\ndef act(v):\n    return snp.{fn}(v)\n"

# jit(grad(loss)) once in a fresh process: loss calls cachehelper.act and reads SCALE
_SCRIPT = r"""
import json, os, sys
sys.dont_write_bytecode = True      # (an edit within a second must not meet a stale .pyc)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, secant, secant.numpy as snp
from secant.backends import compilation_cache
import cachehelper

SCALE = float(os.environ.get("CACHE19_SCALE", "2.0"))
if os.environ.get("CACHE19_LEVEL"):
    secant.config.update("backend_optimization_level", int(os.environ["CACHE19_LEVEL"]))


def loss(w, x):
    return snp.sum(cachehelper.act(x @ w) * SCALE)


r = np.random.default_rng(0)
w = r.standard_normal((4, 3)).astype(np.float32)
x = r.standard_normal((5, 4)).astype(np.float32)
g = secant.jit(secant.grad(loss))(w, x)
print(json.dumps({"stats": compilation_cache.stats, "grad": np.asarray(g).tolist()}))
"""

_DERIVATIVES = {"tanh": lambda z: 1 - np.tanh(z) ** 2, "sin": np.cos}


def _expected(fn, scale):
    r = np.random.default_rng(0)
    w = r.standard_normal((4, 3)).astype(np.float32).astype(np.float64)
    x = r.standard_normal((5, 4)).astype(np.float32).astype(np.float64)
    return x.T @ (_DERIVATIVES[fn](x @ w) * scale)


@pytest.fixture
def program(tmp_path):
    """(folder with the script and its helper module, the cache directory)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "cachehelper.py").write_text(_HELPER.format(fn="tanh"))
    (src / "cache19_script.py").write_text(_SCRIPT)
    return src, tmp_path / "cache"


def _run(program, **env_vars):
    src, cache = program
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SECANT_COMPILATION_CACHE_DIR=str(cache))
    for k in ("CACHE19_SCALE", "CACHE19_LEVEL"):
        env.pop(k, None)
    env.update({k: str(v) for k, v in env_vars.items()})
    out = subprocess.run([sys.executable, str(src / "cache19_script.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(result, compiled, fn="tanh", scale=2.0):
    stats = result["stats"]
    if compiled:
        assert (stats["misses"], stats["hits"], stats["stores"]) == (1, 0, 1), stats
    else:
        assert (stats["misses"], stats["hits"], stats["stores"]) == (0, 1, 0), stats
    np.testing.assert_allclose(result["grad"], _expected(fn, scale), rtol=2e-5, atol=1e-5)


def test_editing_a_helper_misses(program):
    src, _ = program
    _check(_run(program), compiled=True)
    _check(_run(program), compiled=False)              # unchanged: read from disk
    (src / "cachehelper.py").write_text(_HELPER.format(fn="sin"))
    _check(_run(program), compiled=True, fn="sin")     # the callee's source changed
    _check(_run(program), compiled=False, fn="sin")


def test_changing_a_global_constant_misses(program):
    _check(_run(program, CACHE19_SCALE=2.0), compiled=True)
    _check(_run(program, CACHE19_SCALE=3.0), compiled=True, scale=3.0)
    _check(_run(program, CACHE19_SCALE=2.0), compiled=False)
    _check(_run(program, CACHE19_SCALE=3.0), compiled=False, scale=3.0)


def test_changing_a_config_option_misses(program):
    # backend_optimization_level changes XLA's compile options only, not the program's text
    _check(_run(program), compiled=True)
    _check(_run(program, CACHE19_LEVEL=0), compiled=True)
    _check(_run(program, CACHE19_LEVEL=0), compiled=False)
    _check(_run(program), compiled=False)
