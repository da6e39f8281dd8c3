"""Failures of a multi-process run, each bounded in time (loopback only): the coordinator
(process 0) killed mid-run, a coordinator that is not there, and the launcher stopping every
process when one fails, when one ignores SIGTERM, and when the launcher itself is stopped."""
import os
import signal
import subprocess
import sys

import pytest

from secant.launch import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIMIT = 150


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SECANT_") and k != "XLA_FLAGS"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _killed_run(victim):
    """killed.py as 2 processes (no launcher): `victim` kills itself at step 3."""
    env = _env(SECANT_COORDINATOR_ADDRESS=f"127.0.0.1:{free_port()}", SECANT_NUM_PROCESSES=2,
               SECANT_LOCAL_DEVICE_COUNT=2, VICTIM=victim, HEARTBEAT=5)
    script = os.path.join(HERE, "distributed_scripts", "killed.py")
    procs = [subprocess.Popen([sys.executable, script], env=dict(env, SECANT_PROCESS_ID=str(k)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=ROOT)
             for k in (0, 1)]
    try:
        outs = [p.communicate(timeout=LIMIT)[0] for p in procs]      # (a hang fails here)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert procs[victim].returncode == -9, outs[victim]
    assert f"process {victim}: killing itself" in outs[victim]
    return procs[1 - victim].returncode, outs[1 - victim]


def test_the_process_that_reports_a_lost_process_exits_with_its_own_status():
    # process 0's psum fails at once (gloo: connection reset); its script exits with status 3.
    # At that exit secant must not wait for the lost process (shutdown barrier): jaxlib's
    # heartbeat check would abort process 0 meanwhile (it did: status -6, after the clear error)
    code, out = _killed_run(victim=1)
    assert code == 3, out
    assert "FAILED at step 3" in out and "another process of the run has probably stopped" in out
    assert "killed.py:" in out                         # the user's line
    assert "Terminating process" not in out, out


def test_the_coordinator_killed_mid_run_stops_the_other_process():
    code, out = _killed_run(victim=0)
    if code == 3:          # the collective failed first
        assert "FAILED at step 3" in out
        assert "another process of the run has probably stopped" in out
    else:   # or (as seen every time) jaxlib's poll of the lost coordinator ends the process at
        # once, saying so: it aborts from its own thread, where secant cannot raise instead
        assert code == -6, out
        assert "JAX distributed service detected fatal errors" in out, out
        assert "leader task was preempted/died" in out, out


def test_no_coordinator_is_a_secant_error_not_an_abort():
    code = ("import secant\n"
            f"secant.distributed.initialize('127.0.0.1:{free_port()}', 2, 1, "
            "initialization_timeout=2)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=LIMIT, env=_env(), cwd=ROOT)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "SecantError: secant.distributed: process 1 of 2 could not reach the coordinator" \
        in run.stderr, run.stderr
    assert "within 2 s" in run.stderr


def _launcher(script, *args):
    return subprocess.Popen([sys.executable, "-m", "secant.launch", "-n", "2", "--timeout",
                             str(LIMIT - 30), *args, str(script)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT)


def _read_pids(launcher, n=2):
    """The pids the processes print as `[pK] pid N`, read from the launcher's output."""
    pids, lines = {}, []
    while len(pids) < n:
        line = launcher.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
        if line.startswith("[p") and "] pid " in line:
            pids[int(line[2])] = int(line.split("] pid ")[1])
    return pids


def test_the_launcher_kills_a_process_that_ignores_sigterm(tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text("import os, signal, time\n"
                      "print('pid', os.getpid(), flush=True)\n"
                      "if os.environ['SECANT_PROCESS_ID'] == '1':\n"
                      "    time.sleep(1)\n"
                      "    raise SystemExit(4)\n"
                      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                      "time.sleep(600)\n")
    launcher = _launcher(script)
    try:
        pids = _read_pids(launcher)
        rest, _ = launcher.communicate(timeout=LIMIT)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 4, rest
    assert "[launch] process 1 failed (exit status 4); stopping the others" in rest
    assert _gone(pids[0]) and _gone(pids[1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_launcher_stops_its_processes(tmp_path, sig):
    script = tmp_path / "waits.py"
    script.write_text("import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(600)\n")
    launcher = _launcher(script)
    try:
        pids = _read_pids(launcher)
        launcher.send_signal(sig)
        launcher.communicate(timeout=LIMIT)
    finally:
        if launcher.poll() is None:
            launcher.kill()
        for pid in pids.values():
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
                pytest.fail(f"process {pid} outlived its launcher")
    assert launcher.returncode == 128 + sig
