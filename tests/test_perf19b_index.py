"""The persistent cache's index (issue 19, secant/compile_index.py): a fresh process whose cache
holds the program of `jit(grad(loss))` reads the record of its trace by an early key and does
not trace (api.stats traces 0), and its gradient is the closed form's; a process whose program
changed since the record was stored (a global constant, a callee's source in its own module, a
closure's cell, a default, the argument shapes) must not read that record (a stale hit is a
silent wrong value): each is checked against its own closed form in float64. Code the key
cannot vouch for (a global list, a user object, print at trace time) traces each time, as
before, and a damaged record is traced around."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

_HELPER = "import secant.numpy as snp\n\n\ndef act(v):\n    return snp.{fn}(v)\n"

_SCRIPT = r"""
import json, os, sys
sys.dont_write_bytecode = True      # (an edit within a second must not meet a stale .pyc)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, secant, secant.numpy as snp
from secant import api, compile_index
from secant.backends import compilation_cache
import indexhelper

SCALE = float(os.environ.get("IDX_SCALE", "2.0"))
MODE = os.environ.get("IDX_MODE", "plain")
ROWS = int(os.environ.get("IDX_ROWS", "5"))
WEIGHTS = [1.0]


class Holder:
    factor = 1.0


HOLDER = Holder()


def make(shift):
    def loss(w, x, power=float(os.environ.get("IDX_POWER", "1.0"))):
        return snp.sum(indexhelper.act(x @ w + shift) * SCALE * power)
    return loss


def loss_list(w, x):
    return snp.sum(indexhelper.act(x @ w) * SCALE * WEIGHTS[0])


def loss_object(w, x):
    return snp.sum(indexhelper.act(x @ w) * SCALE * HOLDER.factor)


def loss_print(w, x):
    print("tracing")
    return snp.sum(indexhelper.act(x @ w) * SCALE)


loss = make(float(os.environ.get("IDX_SHIFT", "0.0"))) if MODE == "plain" else \
    globals()["loss_" + MODE]
r = np.random.default_rng(0)
w = r.standard_normal((4, 3)).astype(np.float32)
x = r.standard_normal((ROWS, 4)).astype(np.float32)
g = secant.jit(secant.grad(loss))(w, x)
print(json.dumps({"cache": compilation_cache.stats, "index": compile_index.stats,
                  "traces": api.stats["traces"], "grad": np.asarray(g).tolist()}))
"""

_DERIVATIVES = {"tanh": lambda z: 1 - np.tanh(z) ** 2, "sin": np.cos}


def _expected(fn="tanh", scale=2.0, shift=0.0, power=1.0, rows=5):
    r = np.random.default_rng(0)
    w = r.standard_normal((4, 3)).astype(np.float32).astype(np.float64)
    x = r.standard_normal((rows, 4)).astype(np.float32).astype(np.float64)
    return x.T @ (_DERIVATIVES[fn](x @ w + shift) * scale * power)


@pytest.fixture
def program(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "indexhelper.py").write_text(_HELPER.format(fn="tanh"))
    (src / "index_script.py").write_text(_SCRIPT)
    return src, tmp_path / "cache"


def _run(program, **env_vars):
    src, cache = program
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SECANT_COMPILATION_CACHE_DIR=str(cache))
    for k in list(env):
        if k.startswith("IDX_"):
            env.pop(k)
    env.update({k: str(v) for k, v in env_vars.items()})
    out = subprocess.run([sys.executable, str(src / "index_script.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stdout


def _check(result, read, expected):
    """`read`: the record was read (no trace, the executable from disk); else traced."""
    result = result[0]
    index, cache = result["index"], result["cache"]
    if read:
        assert (index["hits"], result["traces"], cache["hits"], cache["misses"]) == (1, 0, 1, 0), \
            result
    else:
        assert index["hits"] == 0 and result["traces"] == 1, result
    np.testing.assert_allclose(result["grad"], expected, rtol=2e-5, atol=1e-5)


def test_a_warm_process_does_not_trace(program):
    first = _run(program)
    _check(first, False, _expected())
    assert first[0]["index"]["stores"] == 1
    _check(_run(program), True, _expected())
    _check(_run(program), True, _expected())


@pytest.mark.parametrize("var,values,expect", [
    ("IDX_SCALE", ("2.0", "3.0"), lambda v: _expected(scale=float(v))),           # a global
    ("IDX_SHIFT", ("0.0", "0.5"), lambda v: _expected(shift=float(v))),           # a cell
    ("IDX_POWER", ("1.0", "2.0"), lambda v: _expected(power=float(v))),           # a default
    ("IDX_ROWS", ("5", "7"), lambda v: _expected(rows=int(v))),                   # a shape
])
def test_a_changed_program_is_traced(program, var, values, expect):
    a, b = values
    _check(_run(program, **{var: a}), False, expect(a))
    _check(_run(program, **{var: b}), False, expect(b))       # (changed: not a's record)
    _check(_run(program, **{var: a}), True, expect(a))
    _check(_run(program, **{var: b}), True, expect(b))


def test_editing_a_callee_in_its_module_is_traced(program):
    src, _ = program
    _check(_run(program), False, _expected())
    _check(_run(program), True, _expected())
    (src / "indexhelper.py").write_text(_HELPER.format(fn="sin"))
    _check(_run(program), False, _expected("sin"))
    _check(_run(program), True, _expected("sin"))


@pytest.mark.parametrize("mode", ["list", "object", "print"])
def test_what_the_key_cannot_vouch_for_is_traced_each_time(program, mode):
    for _ in range(2):
        result = _run(program, IDX_MODE=mode)
        _check(result, False, _expected())
        assert result[0]["index"]["refused"] >= 1 and result[0]["index"]["stores"] == 0
        if mode == "print":
            assert "tracing" in result[1]       # (its effect at each process's trace)


def test_a_damaged_record_is_traced_around(program):
    _, cache = program
    _check(_run(program), False, _expected())
    (record,) = cache.glob("*.idx")
    data = bytearray(record.read_bytes())
    data[-5] ^= 0x20
    record.write_bytes(bytes(data))
    result = _run(program)
    _check(result, False, _expected())
    assert result[0]["index"]["corrupt"] == 1 and result[0]["index"]["stores"] == 1
    _check(_run(program), True, _expected())


# --- the early key in this process (no compile): what it reads and what it refuses -----------

import secant  # noqa: E402
import secant.numpy as snp  # noqa: E402
from secant import api, compile_index  # noqa: E402

FACTOR = 2.0
TABLE = np.ones(3, np.float32)


class _Obj:
    factor = 2.0


OBJ = _Obj()


def _plain(w):
    return snp.sum(snp.tanh(w) * FACTOR)


def _reads_array(w):
    return snp.sum(w * TABLE)


def _reads_object(w):
    return snp.sum(w * OBJ.factor)


def _prints(w):
    print(w)
    return snp.sum(w)


def _hashes(w):
    return snp.sum(w) * (hash("a") % 7)


def _early_key(fn, *args):
    jitted = secant.jit(secant.grad(fn))
    leaves, treedef = api._flatten(args)
    t = (treedef, (), api._X64[0], *[api._leaf_key(x) for x in leaves])
    return compile_index.key(jitted, args, t)


@pytest.fixture
def cache_on(tmp_path):
    before = secant.config.read("compilation_cache_dir")
    secant.config.update("compilation_cache_dir", str(tmp_path))
    yield
    secant.config.update("compilation_cache_dir", before)


def test_the_key_reads_values_and_shapes(cache_on):
    global FACTOR
    w3, w4 = np.ones(3, np.float32), np.ones(4, np.float32)
    k = _early_key(_plain, w3)
    assert k is not None and k == _early_key(_plain, w3)
    assert k != _early_key(_plain, w4)
    FACTOR = 3.0
    try:
        assert k != _early_key(_plain, w3)
    finally:
        FACTOR = 2.0
    assert k == _early_key(_plain, w3)


@pytest.mark.parametrize("fn", [_reads_array, _reads_object, _prints, _hashes])
def test_the_key_refuses_what_it_cannot_vouch_for(cache_on, fn):
    assert _early_key(fn, np.ones(3, np.float32)) is None


def test_an_edited_secant_file_changes_the_key(cache_on, monkeypatch):
    w = np.ones(3, np.float32)
    k = _early_key(_plain, w)
    real = os.stat

    class _Later:
        def __init__(self, st):
            self.st_size, self.st_mtime_ns = st.st_size, st.st_mtime_ns + 1

    def stat(path, *a, **kw):
        st = real(path, *a, **kw)
        return _Later(st) if str(path).endswith(os.path.join("ad", "reverse.py")) else st
    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(compile_index, "_static", [])
    assert _early_key(_plain, w) != k
