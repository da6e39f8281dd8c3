"""Multi-process runs on XLA's distributed runtime (secant.distributed, secant.launch), on
loopback only, every run in its own subprocesses with a time limit:

1. 2 processes x 2 CPU devices: pmap's psum/pmean/pmax/all_gather/ppermute/axis_index cross
   processes; values against NumPy and against one process with 4 devices.
2. A data-parallel training step (pmap + pmean of the gradients) equals the one-process run.
3. Failures: a process killed mid-run makes the other fail with a clear error in bounded time
   (without the launcher's help); the launcher stops all when one fails; a wrong process_id or
   num_processes is a clear error.
4. Alone, nothing changes (process 0 of 1, local devices = devices); SECANT_PLATFORMS=cpu forces
   the CPU; GPU cases are skipped without the CUDA plugin.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import secant
from secant.backends import runtime
from secant.launch import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "distributed_scripts")
ROOT = os.path.dirname(HERE)
LIMIT = 180          # seconds for any one run (the machine may be loaded)


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SECANT_") and k != "XLA_FLAGS"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def launch(script, n=2, devices=2, *extra, env=None):
    cmd = [sys.executable, "-m", "secant.launch", "-n", str(n), "--devices-per-process",
           str(devices), "--timeout", str(LIMIT - 20), *extra, os.path.join(SCRIPTS, script)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT,
                          env=env or _env(), cwd=ROOT)


def single(script, devices=4, **env):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, script)], capture_output=True,
                          text=True, timeout=LIMIT, env=_env(SECANT_SINGLE=devices, **env),
                          cwd=ROOT)


def results(out, prefix=True):
    """{process: result dict} from the RESULT lines of a run's output."""
    found = {}
    for line in out.splitlines():
        body = line.split("] ", 1)[1] if prefix and line.startswith("[p") else line
        if body.startswith("RESULT "):
            r = json.loads(body[len("RESULT "):])
            found[r["process"]] = r
    return found


def ok(run):
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return run


# --- 1. collectives across processes ---------------------------------------------------------
def test_collectives_cross_processes_and_equal_one_process_with_4_devices():
    multi = results(ok(launch("collectives.py")).stdout)
    one = results(ok(single("collectives.py")).stdout, prefix=False)[0]
    assert sorted(multi) == [0, 1]
    x = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    expected = {"psum": np.broadcast_to(x.sum(0), (4, 3)),
                "pmean": np.broadcast_to(x.mean(0), (4, 3)),
                "pmax": np.broadcast_to(x.max(0), (4, 3)),
                "all_gather": np.broadcast_to(x, (4, 4, 3)),
                "ppermute": np.roll(x, 1, axis=0),          # device k receives k-1's row
                "index": np.arange(4)}
    for k, want in expected.items():
        got = np.concatenate([np.asarray(multi[p][k]) for p in (0, 1)])   # processes' rows
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=k)
        np.testing.assert_allclose(np.asarray(one[k]), want, rtol=1e-6, err_msg=k)
    assert multi[0]["devices"] == multi[1]["devices"]          # one global device list
    assert len(multi[0]["devices"]) == 4


# --- 2. data-parallel training ---------------------------------------------------------------
def test_data_parallel_training_step_equals_the_one_process_run():
    multi = results(ok(launch("train_step.py")).stdout)
    one = results(ok(single("train_step.py")).stdout, prefix=False)[0]
    for p in (0, 1):
        for k, v in one["params"].items():
            # every device of every process holds the one-process run's parameters
            for copy in multi[p]["params"][k]:
                np.testing.assert_allclose(copy, v[0], rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(np.asarray(multi[p]["losses"])[:, 0],
                                   np.asarray(one["losses"])[:, 0], rtol=1e-5)
    assert not np.allclose(one["params"]["w1"][0], one["params"]["w1"][0][0])   # (it trained)


def test_example_data_parallel_runs_under_the_launcher():
    cmd = [sys.executable, "-m", "secant.launch", "-n", "2", "--devices-per-process", "2",
           "--timeout", str(LIMIT - 20), os.path.join(ROOT, "examples", "data_parallel.py")]
    run = ok(subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT,
                            env=_env(DATA_PARALLEL_STEPS=3), cwd=ROOT))
    for p in (0, 1):
        assert f"[p{p}] parameters match the single-device run" in run.stdout, run.stdout


# --- 3. failures -------------------------------------------------------------------------------
def test_a_killed_process_makes_the_other_fail_clearly_in_bounded_time():
    # no launcher: process 0 must stop by itself
    env = _env(SECANT_COORDINATOR_ADDRESS=f"127.0.0.1:{free_port()}", SECANT_NUM_PROCESSES=2,
               SECANT_LOCAL_DEVICE_COUNT=2)
    script = os.path.join(SCRIPTS, "killed.py")
    procs = [subprocess.Popen([sys.executable, script], env=dict(env, SECANT_PROCESS_ID=str(k)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for k in (0, 1)]
    t0 = time.monotonic()
    try:
        out0, _ = procs[0].communicate(timeout=LIMIT)
        took = time.monotonic() - t0
        out1, _ = procs[1].communicate(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert procs[1].returncode == -9, out1
    if procs[0].returncode == 3:      # the collective failed first (gloo: connection reset)
        assert "FAILED at step 3" in out0
        assert "another process of the run has probably stopped" in out0
        assert "killed.py:" in out0                  # the user's line
    else:   # or the coordination service noticed first: jaxlib ends the process, saying why
        assert procs[0].returncode == -6, out0
        assert "JAX distributed service detected fatal errors" in out0, out0
        assert "another task died" in out0
    assert took < LIMIT - 30


def test_the_launcher_stops_all_processes_when_one_fails(tmp_path):
    script = tmp_path / "one_fails.py"
    script.write_text("import os, time\n"
                      "if os.environ['SECANT_PROCESS_ID'] == '1':\n"
                      "    raise SystemExit('process 1 gives up')\n"
                      "print('process 0 waiting', flush=True)\n"
                      "time.sleep(600)\n")
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "secant.launch", "-n", "2", str(script)],
                         capture_output=True, text=True, timeout=LIMIT, env=_env(), cwd=ROOT)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "[p1] process 1 gives up" in run.stdout
    assert "[launch] process 1 failed (exit status 1); stopping the others" in run.stdout
    assert time.monotonic() - t0 < 60


def test_the_launcher_times_out(tmp_path):
    script = tmp_path / "sleeps.py"
    script.write_text("import time\ntime.sleep(600)\n")
    run = subprocess.run([sys.executable, "-m", "secant.launch", "-n", "2", "--timeout", "3",
                          str(script)], capture_output=True, text=True, timeout=LIMIT,
                         env=_env(), cwd=ROOT)
    assert run.returncode == 124
    assert "[launch] timed out after 3 s" in run.stdout


def test_wrong_process_id_is_a_clear_error():
    with pytest.raises(secant.SecantValueError, match=r"process_id 2 is out of range for "
                                                      r"num_processes=2.*0\.\.1"):
        secant.distributed.initialize("127.0.0.1:1", 2, 2)
    with pytest.raises(secant.SecantValueError, match="num_processes must be at least 1"):
        secant.distributed.initialize("127.0.0.1:1", 0, 0)
    with pytest.raises(secant.SecantValueError, match="'host:port'"):
        secant.distributed.initialize("localhost", 2, 0)
    assert not secant.distributed.is_initialized()


def test_missing_arguments_name_the_launcher(monkeypatch):
    for k in ("SECANT_COORDINATOR_ADDRESS", "SECANT_NUM_PROCESSES", "SECANT_PROCESS_ID"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(secant.SecantValueError, match="secant.launch"):
        secant.distributed.initialize()


def test_initialize_after_the_devices_exist_is_a_clear_error():
    runtime.client()
    with pytest.raises(secant.SecantError, match="before secant creates its devices"):
        secant.distributed.initialize("127.0.0.1:1", 2, 1)


def test_disagreeing_num_processes_is_a_clear_error(tmp_path):
    script = tmp_path / "join.py"
    script.write_text("import sys, secant\n"
                      "secant.distributed.initialize(sys.argv[1], int(sys.argv[2]), "
                      "int(sys.argv[3]), initialization_timeout=30)\n"
                      "print('joined', secant.devices())\n")
    addr = f"127.0.0.1:{free_port()}"
    procs = [subprocess.Popen([sys.executable, str(script), addr, n, k], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for n, k in (("2", "0"), ("3", "1"))]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=LIMIT)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outs):
        assert p.returncode != 0, out
        assert "joined" not in out
    assert ("process 1 was started with num_processes=3, but process 0 with num_processes=2"
            in outs[1])


# --- 4. alone, platforms, GPUs ------------------------------------------------------------------
def test_alone_nothing_changes():
    assert secant.process_index() == 0 and secant.process_count() == 1
    assert secant.local_devices() == secant.devices()
    assert secant.local_device_count() == secant.device_count()


def test_platforms_cpu_forces_the_cpu():
    code = "import secant; print(secant.default_backend(), secant.devices()[0].platform)"
    run = ok(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=LIMIT, env=_env(SECANT_PLATFORMS="cpu"), cwd=ROOT))
    assert run.stdout.split() == ["cpu", "cpu"]


def test_platforms_is_checked_and_fixed_once_the_devices_exist():
    with pytest.raises(secant.SecantValueError, match="expected 'cpu', 'gpu'"):
        secant.config.update("platforms", "tpu")
    runtime.client()
    with pytest.raises(secant.SecantError, match="platforms cannot change after the devices"):
        secant.config.update("platforms", "cpu")


def test_asking_for_a_gpu_without_the_plugin_is_a_clear_error():
    if runtime.gpu_plugin_path() is not None:
        pytest.skip("a CUDA PJRT plugin is installed")
    code = "import secant; secant.devices()"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=LIMIT, env=_env(SECANT_PLATFORMS="gpu"), cwd=ROOT)
    assert run.returncode != 0
    assert "no CUDA PJRT plugin is installed" in run.stderr


@pytest.mark.skipif(runtime.gpu_plugin_path() is None, reason="no CUDA PJRT plugin installed")
def test_gpu_devices_come_first_and_jit_matches_the_cpu():
    code = ("import numpy as np, secant, secant.numpy as snp\n"
            "f = secant.jit(lambda x: snp.tanh(x) @ x.T)\n"
            "x = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)\n"
            "print(secant.default_backend(), np.abs(np.asarray(f(x)) - np.tanh(x) @ x.T).max())")
    run = ok(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=LIMIT, env=_env(), cwd=ROOT))
    backend, err = run.stdout.split()[-2:]
    assert backend == "gpu" and float(err) < 1e-4
