"""The persistent compilation cache (backends/compilation_cache.py): a second process reads the
executable the first one stored, a damaged entry is compiled again (no crash), and the results
equal those of an uncached run."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import secant

# one fresh process: jit(grad(mlp_loss)) once, prints the cache's counters and the gradients
_SCRIPT = r"""
import json, numpy as np, secant, secant.numpy as snp
from secant.backends import compilation_cache
def mlp_loss(p, x):
    w1, w2 = p
    return snp.sum(snp.tanh(snp.tanh(x @ w1) @ w2) ** 2)
r = np.random.default_rng(0)
p = (r.standard_normal((6, 5)).astype(np.float32), r.standard_normal((5, 3)).astype(np.float32))
x = r.standard_normal((4, 6)).astype(np.float32)
g = secant.jit(secant.grad(mlp_loss))(p, x)
print(json.dumps({"stats": compilation_cache.stats,
                  "grads": [np.asarray(a).tolist() for a in g]}))
"""


def _run(script, cache_dir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("SECANT_COMPILATION_CACHE_DIR", None)
    if cache_dir is not None:
        env["SECANT_COMPILATION_CACHE_DIR"] = str(cache_dir)
    out = subprocess.run([sys.executable, script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _entries(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".exe"))


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    """The script as a file (grad reads the function's source)."""
    path = tmp_path_factory.mktemp("cache_script") / "mlp_grad.py"
    path.write_text(_SCRIPT)
    return path


@pytest.fixture(scope="module")
def uncached(script):
    return _run(script, None)


def test_second_process_reads_the_cache(script, tmp_path, uncached):
    first = _run(script, tmp_path)
    assert first["stats"] == {"hits": 0, "misses": 1, "corrupt": 0, "stores": 1}
    assert len(_entries(tmp_path)) == 1
    second = _run(script, tmp_path)
    assert second["stats"] == {"hits": 1, "misses": 0, "corrupt": 0, "stores": 0}
    assert len(_entries(tmp_path)) == 1
    assert first["grads"] == uncached["grads"] == second["grads"]


@pytest.fixture(scope="module")
def stored(script, tmp_path_factory):
    """The one entry a first run stores: (its name, its bytes), copied by each damage test."""
    d = tmp_path_factory.mktemp("stored")
    _run(script, d)
    (name,) = _entries(d)
    return name, (d / name).read_bytes()


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "empty"])
def test_damaged_entry_is_recompiled(script, tmp_path, uncached, stored, damage):
    name, data = stored
    path = tmp_path / name
    data = bytearray(data)
    if damage == "flip":        # inside the machine code: jaxlib itself would load this
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "garbage":
        data = bytearray(np.random.default_rng(1).bytes(len(data)))
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    again = _run(script, tmp_path)
    assert again["stats"] == {"hits": 0, "misses": 0, "corrupt": 1, "stores": 1}
    assert again["grads"] == uncached["grads"]
    assert _run(script, tmp_path)["stats"]["hits"] == 1       # rewritten, sound again


def test_in_process_hit_and_key(tmp_path):
    from secant.backends import compilation_cache, runtime
    old = secant.config.read("compilation_cache_dir")
    secant.config.update("compilation_cache_dir", str(tmp_path))
    try:
        text = """func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.exponential %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}"""
        out_avals = [runtime.Aval((3,), np.float32)]
        before = dict(compilation_cache.stats)
        a = runtime.Executable(text, out_avals)
        b = runtime.Executable(text, out_avals)       # a second compile: read from disk
        assert compilation_cache.stats["stores"] == before["stores"] + 1
        assert compilation_cache.stats["hits"] == before["hits"] + 1
        x = runtime.put(np.array([0.0, 1.0, 2.0], np.float32))
        for exe in (a, b):
            np.testing.assert_allclose(np.asarray(exe([x])[0]), np.exp([0.0, 1.0, 2.0]),
                                       rtol=1e-6)
        other = runtime.Executable(text.replace("exponential", "tanh"), out_avals)
        np.testing.assert_allclose(np.asarray(other([x])[0]), np.tanh([0.0, 1.0, 2.0]),
                                   rtol=1e-6)
        assert len(_entries(tmp_path)) == 2
    finally:
        secant.config.update("compilation_cache_dir", old)


def test_unwritable_directory_warns_and_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    old = secant.config.read("compilation_cache_dir")
    secant.config.update("compilation_cache_dir", str(blocker / "cache"))
    from secant.backends import compilation_cache
    compilation_cache._warned.clear()
    try:
        with pytest.warns(UserWarning, match="compilation cache"):
            y = secant.jit(lambda a: a * 41.0 + 1.0)(np.ones(2, np.float32))
        np.testing.assert_array_equal(np.asarray(y), [42.0, 42.0])
    finally:
        secant.config.update("compilation_cache_dir", old)
