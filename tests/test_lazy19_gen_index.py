"""grad's eager derivative in the persistent cache's index (issue 19, secant/gen_index.py): a
fresh process loads the source a process generated before for the same function (by an early
key read by value, as compile_index's) instead of generating it again at grad(f). Its values
stay the closed form's in float64 terms, eager and under a second grad (which reads the loaded
derivative's source), and its source is the generated one; a function whose global, closure
cell or default changed since must not load that record (a stale derivative is a silent wrong
value): each is checked against its own closed form. A damaged record is generated around."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

_SCRIPT = r"""
import json, os, sys
sys.dont_write_bytecode = True
import numpy as np, secant, secant.numpy as snp
from secant import gen_index

SCALE = float(os.environ.get("GEN_SCALE", "2.0"))


def make(shift):
    def loss(w, x, power=float(os.environ.get("GEN_POWER", "1.0"))):
        return snp.sum(snp.tanh(x @ w + shift) * SCALE * power)
    return loss


def cube(v):
    return snp.sin(v) * v * SCALE


loss = make(float(os.environ.get("GEN_SHIFT", "0.0")))
r = np.random.default_rng(0)
w = r.standard_normal((4, 3)).astype(np.float32)
x = r.standard_normal((5, 4)).astype(np.float32)
g = secant.grad(loss)
hits = gen_index.stats["hits"]
out = {"grad": np.asarray(g(w, x)).tolist(), "source": secant.source(g),
       "second": float(secant.grad(secant.grad(cube))(0.7)),
       "jit": np.asarray(secant.jit(g)(w, x)).tolist()}
out["index"] = gen_index.stats
print(json.dumps(out))
"""


def _expected(scale=2.0, shift=0.0, power=1.0):
    r = np.random.default_rng(0)
    w = r.standard_normal((4, 3)).astype(np.float32).astype(np.float64)
    x = r.standard_normal((5, 4)).astype(np.float32).astype(np.float64)
    return x.T @ ((1 - np.tanh(x @ w + shift) ** 2) * scale * power)


def _second(scale=2.0, v=0.7):      # d2/dv2 of sin(v) * v * scale
    return scale * (2 * np.cos(v) - v * np.sin(v))


@pytest.fixture
def program(tmp_path):
    (tmp_path / "gen_script.py").write_text(_SCRIPT)
    return tmp_path / "gen_script.py", tmp_path / "cache"


def _run(program, **env_vars):
    script, cache = program
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SECANT_COMPILATION_CACHE_DIR=str(cache))
    for k in list(env):
        if k.startswith("GEN_"):
            env.pop(k)
    env.update({k: str(v) for k, v in env_vars.items()})
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(result, loaded, scale=2.0, shift=0.0, power=1.0):
    index = result["index"]
    if loaded:
        assert index["hits"] >= 2 and index["misses"] == 0, index    # (loss, then cube)
    else:
        assert index["hits"] == 0 or index["misses"] >= 1, index
    want = _expected(scale, shift, power)
    np.testing.assert_allclose(result["grad"], want, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(result["jit"], want, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(result["second"], _second(scale), rtol=2e-5)


def test_a_warm_process_loads_the_derivative(program):
    first = _run(program)
    _check(first, False)
    assert first["index"]["stores"] >= 1, first["index"]
    again = _run(program)
    _check(again, True)
    assert again["source"] == first["source"]       # (the generated source, as written)
    assert "def loss_grad(w, x, power=" in again["source"]


@pytest.mark.parametrize("var,values,kw", [
    ("GEN_SCALE", ("2.0", "3.0"), "scale"),         # a global
    ("GEN_SHIFT", ("0.0", "0.5"), "shift"),         # a closure cell
    ("GEN_POWER", ("1.0", "2.0"), "power"),         # a default (written into the signature)
])
def test_a_changed_function_is_generated_again(program, var, values, kw):
    a, b = values
    _check(_run(program, **{var: a}), False, **{kw: float(a)})
    changed = _run(program, **{var: b})
    assert changed["index"]["misses"] >= 1, changed["index"]
    _check(changed, False, **{kw: float(b)})
    _check(_run(program, **{var: a}), True, **{kw: float(a)})


def test_a_damaged_record_is_generated_around(program):
    _check(_run(program), False)
    _, cache = program
    for name in os.listdir(cache):
        if name.endswith(".gen"):
            path = cache / name
            data = bytearray(path.read_bytes())
            data[-3] ^= 0xFF
            path.write_bytes(bytes(data))
    damaged = _run(program)
    assert damaged["index"]["corrupt"] >= 1 and damaged["index"]["hits"] == 0, damaged["index"]
    _check(damaged, False)
    _check(_run(program), True)


def test_no_cache_directory_no_record(tmp_path):
    script = tmp_path / "gen_script.py"
    script.write_text(_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "SECANT_COMPILATION_CACHE_DIR"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    index = json.loads(out.stdout.strip().splitlines()[-1])["index"]
    assert index == {"hits": 0, "misses": 0, "corrupt": 0, "stores": 0, "refused": 0}
