"""Start a multi-process secant run on this machine:

    python -m secant.launch -n 2 [--devices-per-process 2] [--timeout 600] script.py [args...]

starts `script.py` n times, with a coordinator on 127.0.0.1 at a free port; each process reads
its place from the environment (SECANT_COORDINATOR_ADDRESS, SECANT_NUM_PROCESSES,
SECANT_PROCESS_ID, and SECANT_LOCAL_DEVICE_COUNT with --devices-per-process) when the script
calls `secant.distributed.initialize()`. Each line a process prints is forwarded with a
`[pK]` prefix (the runtime's INFO lines are dropped unless --verbose). If one process fails,
the others are stopped and the launcher exits with its status; after --timeout seconds all are
stopped and the exit status is 124; a launcher stopped by SIGTERM or SIGHUP stops them too.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from secant.distributed import ENV_ADDRESS, ENV_COUNT, ENV_ID, ENV_LOCAL_DEVICES

# jaxlib's C++ INFO lines (absl format) and gloo's connection chatter
_NOISE = re.compile(r"^(I\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\]|\[Gloo\] Rank \d+ is connected)")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _forward(proc, prefix, out, verbose, lock):
    for raw in iter(proc.stdout.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if not verbose and _NOISE.match(line):
            continue
        with lock:
            out.write(f"{prefix}{line}\n")
            out.flush()
    proc.stdout.close()


def _stop(procs, grace=3.0):
    for p in procs:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    for p in procs:
        left = deadline - time.monotonic()
        try:
            p.wait(max(left, 0.01))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def launch(argv, n, devices_per_process=None, timeout=600.0, verbose=False, out=None,
           python=None):
    """Run `python argv...` as n processes of one run; return the exit status (0: all ok)."""
    out = out or sys.stdout
    port = free_port()
    procs, threads = [], []
    lock = threading.Lock()
    base = dict(os.environ)
    base[ENV_ADDRESS] = f"127.0.0.1:{port}"
    base[ENV_COUNT] = str(n)
    base.setdefault("PYTHONUNBUFFERED", "1")
    if devices_per_process is not None:
        base[ENV_LOCAL_DEVICES] = str(devices_per_process)
    try:
        for k in range(n):
            env = dict(base)
            env[ENV_ID] = str(k)
            p = subprocess.Popen([python or sys.executable, *argv], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
            procs.append(p)
            t = threading.Thread(target=_forward, args=(p, f"[p{k}] ", out, verbose, lock),
                                 daemon=True)
            t.start()
            threads.append(t)
        deadline = time.monotonic() + timeout
        status = None
        while status is None:
            codes = [p.poll() for p in procs]
            failed = [(k, c) for k, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                k, c = failed[0]
                with lock:
                    out.write(f"[launch] process {k} failed (exit status {c}); stopping the "
                              "others\n")
                status = c if c > 0 else 128 - c
            elif all(c == 0 for c in codes):
                status = 0
            elif time.monotonic() > deadline:
                with lock:
                    out.write(f"[launch] timed out after {timeout:g} s; stopping all "
                              "processes\n")
                status = 124
            else:
                time.sleep(0.05)
    finally:
        _stop(procs)
        for t in threads:
            t.join(5)
    return status


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)      # (unwinds through launch(), which stops the processes)


def main(args=None):
    ap = argparse.ArgumentParser(prog="python -m secant.launch", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--num-processes", type=int, required=True)
    ap.add_argument("--devices-per-process", type=int, default=None,
                    help="CPU devices in each process (default: as configured, else 1)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="stop all processes after this many seconds (exit status 124)")
    ap.add_argument("--verbose", action="store_true", help="keep the runtime's INFO lines")
    ap.add_argument("script")
    ap.add_argument("script_args", nargs=argparse.REMAINDER)
    a = ap.parse_args(args)
    if a.num_processes < 1:
        ap.error("-n must be at least 1")
    if a.devices_per_process is not None and a.devices_per_process < 1:
        ap.error("--devices-per-process must be at least 1")
    # the launcher stopped (kill, a closed terminal) stops its processes too, as a failed one
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    return launch([a.script, *a.script_args], a.num_processes, a.devices_per_process,
                  a.timeout, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
