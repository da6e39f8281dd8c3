"""The start-up handshake of a multi-process run (backends/rendezvous.py): the mistakes that make
jaxlib's distributed runtime abort every process (a duplicate process_id, an unreachable
coordinator) are a SecantError in the process at fault, and the rest of the run goes on.
Loopback only; every wait is bounded."""
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import secant
from secant.backends import rendezvous
from secant.launch import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 120


def _address():
    return f"127.0.0.1:{free_port()}"


class _Run(threading.Thread):
    """fn(*args) in a thread; .error is what it raised (None: it returned)."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.fn, self.args, self.error, self.returned = fn, args, None, False
        self.start()

    def run(self):
        try:
            self.fn(*self.args)
            self.returned = True
        except Exception as e:          # noqa: BLE001 (the test reads it)
            self.error = e

    def result(self):
        self.join(LIMIT)
        assert not self.is_alive(), "still waiting"
        return self.error


def test_a_duplicate_id_is_refused_and_the_run_goes_on():
    addr = _address()
    server = _Run(rendezvous.serve, addr, 3, 30)
    ones = [_Run(rendezvous.join, addr, 1, 3, 30) for _ in range(2)]
    # exactly one of the two process-1 claims is refused at once, while the run still waits
    deadline = time.monotonic() + LIMIT
    while all(t.is_alive() for t in ones) and time.monotonic() < deadline:
        time.sleep(0.05)
    refused = [t for t in ones if not t.is_alive()]
    assert len(refused) == 1
    err = refused[0].result()
    assert isinstance(err, secant.SecantError)
    assert "process_id 1 is already taken by another process of the run" in str(err)
    assert f"({socket.gethostname()} pid {os.getpid()})" in str(err)      # which one has it
    assert "0..2" in str(err)
    waiting = [t for t in ones if t is not refused[0]][0]
    assert waiting.is_alive() and server.is_alive()
    two = _Run(rendezvous.join, addr, 2, 3, 30)
    assert two.result() is None and waiting.result() is None and server.result() is None
    assert two.returned and waiting.returned and server.returned


def test_a_disagreeing_count_stops_the_whole_run():
    addr = _address()
    server = _Run(rendezvous.serve, addr, 3, 30)
    one = _Run(rendezvous.join, addr, 1, 3, 10)
    two = _Run(rendezvous.join, addr, 2, 4, 10)
    want = ("process 2 was started with num_processes=4, but process 0 with "
            "num_processes=3; give every process the same count")
    for t in (server, two):
        assert want in str(t.result())
    # process 1 (right count) may have claimed before or after: it is told too, or it finds
    # process 0 gone
    assert isinstance(one.result(), secant.SecantError)


def test_an_unreachable_coordinator_is_a_clear_error_in_bounded_time():
    addr = _address()          # nobody listens there
    with pytest.raises(secant.SecantError, match=r"process 1 of 2 could not reach the "
                                                 r"coordinator at 127\.0\.0\.1:\d+ within 1 s "
                                                 r"\(Connection refused\): is process 0 running"):
        rendezvous.join(addr, 1, 2, 1)


def test_process_0_names_the_processes_that_did_not_come():
    with pytest.raises(secant.SecantError, match=r"process 0 waited 1 s at .* process\(es\) 1, "
                                                 r"2 did not come"):
        rendezvous.serve(_address(), 3, 1)


def test_an_address_in_use_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        addr = f"127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(secant.SecantError, match="process 0 cannot serve the coordinator at "
                                                     + addr.replace(".", r"\.")):
            rendezvous.serve(addr, 2, 5)


def test_not_a_secant_process_0_is_told_apart():
    # a run that has already started: its address serves jaxlib's coordination service
    from jaxlib import _jax
    addr = _address()
    service = _jax.get_distributed_runtime_service(addr, 2)
    try:
        with pytest.raises(secant.SecantError, match="answered, but not as a secant process 0 "
                                                     "waiting for its run.*process_id 1 is "
                                                     "probably taken"):
            rendezvous.join(addr, 1, 2, 10)
    finally:
        service.shutdown()


def test_junk_on_the_coordinator_port_is_ignored():
    addr = _address()
    server = _Run(rendezvous.serve, addr, 2, 30)
    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + LIMIT
    while True:
        try:
            junk = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    with junk:
        junk.sendall(b"GET / HTTP/1.0\r\n\r\n")
        one = _Run(rendezvous.join, addr, 1, 2, 30)
        assert one.result() is None and server.result() is None


def test_a_process_gone_during_the_handshake_frees_its_id():
    addr = _address()
    server = _Run(rendezvous.serve, addr, 3, 60)
    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + LIMIT
    while True:
        try:
            gone = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    gone.sendall(b'{"process_id": 1, "num_processes": 3}\n')
    gone.close()                     # (a process 1 that died while waiting)
    two = _Run(rendezvous.join, addr, 2, 3, 60)    # (comes after: process 0 must not finish)
    while True:       # a new process 1 is refused only until process 0 has seen the first go
        try:
            rendezvous.join(addr, 1, 3, 30)
            break
        except secant.SecantError as e:
            assert "process_id 1 is already taken" in str(e)
            assert time.monotonic() < deadline
    assert server.result() is None and server.returned
    assert two.result() is None and two.returned


def test_process_0_giving_up_is_reported_to_the_waiting_processes():
    addr = _address()
    server = _Run(rendezvous.serve, addr, 3, 3)
    one = _Run(rendezvous.join, addr, 1, 3, 60)
    assert "process(es) 2 did not come" in str(server.result())
    assert "process 1 of 3: process 0 at 127.0.0.1" in str(one.result())
    assert "closed the connection without answering: it stopped" in str(one.result())


# --- end to end: jaxlib would abort all three processes here ------------------------------------
SCRIPT = """
import os, sys, time, secant
try:
    secant.distributed.initialize(sys.argv[1], 2, int(sys.argv[2]), initialization_timeout=60)
except secant.SecantError as e:
    print("REFUSED", e, flush=True)
    sys.exit(5)
print("JOINED", secant.process_index(), len(secant.devices()), flush=True)
deadline = time.monotonic() + 90
while not os.path.exists(sys.argv[3]) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def test_two_processes_with_one_id_the_second_is_refused_the_run_completes(tmp_path):
    script = tmp_path / "join.py"
    script.write_text(SCRIPT)
    release = tmp_path / "release"
    addr = _address()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECANT_")}
    procs = [subprocess.Popen([sys.executable, str(script), addr, k, str(release)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=ROOT)
             for k in ("0", "1", "1")]
    try:
        deadline = time.monotonic() + LIMIT
        while (procs[1].poll() is None and procs[2].poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.05)
        release.write_text("")        # (the run holds on until one process 1 has been refused)
        outs = [p.communicate(timeout=LIMIT)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    codes = [p.returncode for p in procs]
    assert codes[0] == 0, outs[0]
    assert sorted(codes[1:]) == [0, 5], outs
    refused = outs[1] if codes[1] == 5 else outs[2]
    kept = outs[2] if codes[1] == 5 else outs[1]
    # refused by process 0's rendezvous, or (its run complete just before this claim arrived)
    # a connection closed or answered by another service: each names the id as likely taken
    assert ("process_id 1 is already taken" in refused
            or "process_id 1 is probably taken by another process" in refused
            or "is process_id 1 taken by another process?" in refused), refused
    assert "JOINED 0 2" in outs[0] and "JOINED 1 2" in kept
    assert "Terminating process" not in "".join(outs)        # (jaxlib's abort)
