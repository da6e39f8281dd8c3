"""The CUDA PJRT plugin installed where no GPU can be used: secant falls back to the CPU with a
warning that says why (and never loads the plugin when no GPU is visible: starting it there can
end the process), or, with platforms="gpu" asked for explicitly, raises a SecantError. Simulated:
a fake jax_plugins.xla_cuda12 package on PYTHONPATH whose plugin library is not a library, and
the GPU device files the runtime looks for pointed at paths that exist or do not."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 120

DRIVER = """
import sys, warnings
import numpy as np
warnings.simplefilter("always")
import secant, secant.numpy as snp
from secant.backends import runtime
from jaxlib import xla_client as xc
runtime._NVIDIA_DEVICE_FILES = tuple(sys.argv[1:])      # the GPU this run pretends to have
f = secant.jit(lambda x: snp.tanh(x) * 2.0)
x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
err = float(np.abs(np.asarray(f(x)) - np.tanh(x) * 2.0).max())
print("BACKEND", secant.default_backend(), "ERR", err, "LOADED", xc.pjrt_plugin_loaded("cuda"))
"""


@pytest.fixture
def fake_plugin(tmp_path):
    pkg = tmp_path / "jax_plugins" / "xla_cuda12"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('secant must not import this')\n")
    so = pkg / "xla_cuda_plugin.so"
    so.write_bytes(b"not a shared library\n")
    return tmp_path, str(so)


def _run(fake_plugin, gpu_files, **env_extra):
    site, _ = fake_plugin
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SECANT_") and k not in ("CUDA_VISIBLE_DEVICES", "JAX_PLATFORMS")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", DRIVER, *gpu_files], capture_output=True,
                          text=True, timeout=LIMIT, env=env, cwd=ROOT)


def _on_cpu(run, loaded="False"):
    assert run.returncode == 0, run.stdout + run.stderr
    words = run.stdout.split()
    i = words.index("BACKEND")
    assert words[i + 1] == "cpu"
    assert float(words[i + 3]) < 1e-6            # (the CPU's answer is the right one)
    if loaded is not None:
        assert words[i + 5] == loaded
    return run.stderr


def test_the_plugin_finds_no_gpu_device(fake_plugin):
    _, so = fake_plugin
    err = _on_cpu(_run(fake_plugin, ["/nonexistent/nvidia0"]))
    assert (f"RuntimeWarning: secant: the CUDA PJRT plugin is installed ({so}), but this "
            "machine has no NVIDIA GPU (none of /nonexistent/nvidia0); secant uses the CPU "
            "(set SECANT_PLATFORMS=cpu to skip the GPU and this warning)") in err, err


def test_cuda_visible_devices_hides_every_gpu(fake_plugin):
    _, so = fake_plugin
    for hidden in ("", "-1"):
        err = _on_cpu(_run(fake_plugin, [so], CUDA_VISIBLE_DEVICES=hidden))
        assert f"but CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU; secant uses the CPU" in err


def test_a_plugin_that_fails_to_start_is_a_warning(fake_plugin):
    _, so = fake_plugin
    err = _on_cpu(_run(fake_plugin, [so]), loaded=None)     # (a GPU device file "exists")
    assert f"the CUDA PJRT plugin is installed ({so}), but it failed to start: " in err, err
    assert "secant uses the CPU" in err


def test_asking_for_the_gpu_explicitly_is_an_error(fake_plugin):
    _, so = fake_plugin
    run = _run(fake_plugin, ["/nonexistent/nvidia0"], SECANT_PLATFORMS="gpu")
    assert run.returncode == 1
    assert (f"SecantError: platforms asks for the GPU, but the CUDA PJRT plugin ({so}) cannot be "
            "used: this machine has no NVIDIA GPU") in run.stderr, run.stderr
    run = _run(fake_plugin, [so], SECANT_PLATFORMS="gpu")
    assert run.returncode == 1
    assert "cannot be used: it failed to start: " in run.stderr, run.stderr


def test_platforms_cpu_never_touches_the_plugin(fake_plugin):
    _, so = fake_plugin
    err = _on_cpu(_run(fake_plugin, [so], SECANT_PLATFORMS="cpu"))
    assert "CUDA PJRT plugin" not in err, err
