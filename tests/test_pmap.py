"""pmap. The multi-device checks (tests/multidevice/test_pmap_devices.py) need a process whose
PJRT client has 4 CPU devices, fixed when the client is created: they run here in one pytest
subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4. This process has one
device: pmap over a size-1 axis, and its errors."""
import os
import subprocess
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _env(**extra):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4")
    env.update(extra)
    return env


def test_multidevice_checks_pass_on_4_cpu_devices():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rs", os.path.join(HERE, "multidevice", "test_pmap_devices.py")],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert " passed" in out and "skipped" not in out, out


def test_data_parallel_example_matches_one_device():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "data_parallel.py")],
                          cwd=ROOT, env=_env(DATA_PARALLEL_STEPS="3"), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "parameters match" in proc.stdout, proc.stdout


def test_one_device_pmap_and_its_collectives():
    if secant.device_count() != 1:
        pytest.skip("this process has several devices")
    x = np.arange(6.0, dtype=np.float32).reshape(1, 6)
    f = secant.pmap(lambda a: (snp.sin(a) + lax.psum(a, "i"), lax.axis_index("i")),
                    axis_name="i")
    out, idx = f(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) + x, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(idx), [0])
    assert out.sharding_devices == secant.devices()
    with pytest.raises(secant.SecantValueError, match=r"(?s)size 2, but this process has only "
                                                      r"1 device.*num_cpu_devices.*test_pmap"):
        f(np.ones((2, 3), np.float32))


def test_collectives_outside_pmap_name_an_unbound_axis():
    with pytest.raises(secant.SecantValueError, match=r"(?s)unbound axis name: 'i'.*test_pmap"):
        lax.ppermute(np.ones(3), "i", [(0, 1)])
    with pytest.raises(secant.SecantValueError, match="unbound axis name: 'i'"):
        lax.all_to_all(np.ones((2, 2)), "i", 0, 0)
    with pytest.raises(secant.SecantValueError, match="unbound axis name: 'j'"):
        secant.pmap(lambda a: lax.pmean(a, "j"), axis_name="i")(np.ones((1, 2)))


def test_bad_arguments_name_the_users_line():
    with pytest.raises(secant.SecantTypeError, match="in_axes must hold ints or None"):
        secant.pmap(lambda a: a, in_axes="x")
    with pytest.raises(secant.SecantValueError, match=r"(?s)one entry per positional.*test_pmap"):
        secant.pmap(lambda a: a, in_axes=(0, 0))(np.ones((1, 2)))
    with pytest.raises(secant.SecantValueError, match="at least one argument mapped"):
        secant.pmap(lambda a: a, in_axes=None)(np.ones((1, 2)))
    with pytest.raises(secant.SecantValueError, match="not hashable"):
        secant.pmap(lambda a, s: a, static_broadcasted_argnums=1)(np.ones((1, 2)), [1])


def show(a):
    if a.sum() > 0:
        a = a * 2
    return lax.psum(a, "i")


def test_source_is_the_per_device_program():
    text = secant.source(secant.pmap(show, axis_name="i"))
    assert text.startswith("def show(a):") and "lax.cond" in text    # functionalised, as jit
