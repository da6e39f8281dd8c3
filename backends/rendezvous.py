"""The start of a multi-process run, before jaxlib's distributed runtime sees it.

jaxlib ends processes (abort, not an exception) when a run is set up wrongly: two processes
that register the same process_id make the coordination service fail the whole run (every
process aborts, the right ones too), and a process that cannot reach the coordinator aborts
when its connect times out. So, first, a short handshake on the coordinator's address: process 0
listens there, every other process sends it one line (its process_id and num_processes), and
process 0 answers all of them once each id in 1..n-1 has come. A process with an id already
taken, or one that cannot reach process 0, gets a SecantError and the others go on waiting for
the right one; a num_processes that disagrees with process 0's stops the whole run (every
process gets the error). Process 0 then closes the socket and serves jaxlib's coordination
service on the same address. A process that comes after the run has started talks to that
service, not to this handshake, and is told so.

Only this start-up exchange is secant's own: everything the run does afterwards (heartbeats,
key-value store, barriers, collectives) is jaxlib's.
"""
import json
import os
import selectors
import socket
import time

from secant.backends.errors import SecantError

_MAX_LINE = 4096


def _split(address):
    host, port = address.rsplit(":", 1)
    return host.strip("[]"), int(port)


def bind_address(address):
    """Where process 0 serves the run: every interface, at the port of `address` (as jax)."""
    return f"[::]:{_split(address)[1]}"


def _ids(ids):
    return ", ".join(str(k) for k in sorted(ids)) or "none"


def _send(sock, message):
    try:
        sock.setblocking(True)
        sock.settimeout(5)
        sock.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass          # (that process is gone; it has nothing to be told)


def serve(address, num_processes, timeout_s):
    """Process 0: return once each of processes 1..num_processes-1 has claimed its id (at most
    timeout_s seconds), the address then being free for jaxlib's coordination service."""
    # on every interface of this machine, as the coordination service after it (bind_address):
    # the name in `address` may resolve to a loopback address here (Debian's 127.0.1.1), which
    # the other machines cannot reach. (SO_REUSEADDR, which create_server sets, keeps the port
    # bindable through the TIME_WAIT of this handshake's connections and of an earlier run's; a
    # socket still listening there, another run's service, still blocks it.)
    port = _split(address)[1]
    try:
        if socket.has_dualstack_ipv6():
            listener = socket.create_server(("", port), family=socket.AF_INET6,
                                            backlog=max(16, num_processes), dualstack_ipv6=True)
        else:
            listener = socket.create_server(("", port), backlog=max(16, num_processes))
    except OSError as e:
        raise SecantError(f"secant.distributed: process 0 cannot serve the coordinator at "
                          f"{address}: {e.strerror} (another run, or another process started "
                          "with process_id=0, is using it)") from None
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    claims = {}          # process_id -> its connection
    holders = {}         # process_id -> "host pid N" of the process that claimed it
    unread = {}          # connection -> the part of its line received so far
    refused = []         # what was refused, for the error if the run never completes
    deadline = time.monotonic() + timeout_s

    def drop(conn):
        sel.unregister(conn)
        unread.pop(conn, None)
        conn.close()

    try:
        while True:
            if len(claims) == num_processes - 1:
                for k, conn in list(claims.items()):    # (one may have died since its claim)
                    if _closed(conn):
                        del claims[k]
                        drop(conn)
                if len(claims) == num_processes - 1:
                    break
            left = deadline - time.monotonic()
            if left <= 0:
                missing = set(range(1, num_processes)) - set(claims)
                raise SecantError(
                    f"secant.distributed: process 0 waited {timeout_s:g} s at {address} for the "
                    f"other processes of the run; process(es) {_ids(missing)} did not come"
                    + (f" ({'; '.join(refused)})" if refused else "")
                    + f". Start all {num_processes} processes, each with its own process_id")
            for key, _ in sel.select(left):
                conn = key.fileobj
                if conn is listener:
                    conn, _ = listener.accept()
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ)
                    unread[conn] = b""
                    continue
                try:
                    data = conn.recv(_MAX_LINE)
                except OSError:
                    data = b""
                if conn not in unread:      # a process that claimed its id has gone away
                    for k, c in list(claims.items()):
                        if c is conn:
                            del claims[k]
                    drop(conn)
                    continue
                line = unread[conn] + data
                if not data or (b"\n" not in line and len(line) > _MAX_LINE):
                    drop(conn)              # (not a secant process: a port scan, a browser)
                    continue
                if b"\n" not in line:
                    unread[conn] = line
                    continue
                del unread[conn]
                claim = _parse(line)
                if claim is None:
                    drop(conn)
                    continue
                k, n, who = claim
                if n != num_processes:
                    error = (f"secant.distributed: process {k} was started with num_processes="
                             f"{n}, but process 0 with num_processes={num_processes}; give every "
                             "process the same count")
                    for c in [conn, *claims.values()]:
                        _send(c, {"error": error})
                    raise SecantError(error)
                if not 1 <= k < num_processes or k in claims:
                    why = (f"is already taken by another process of the run ({holders[k]})"
                           if k in claims else f"is not in 1..{num_processes - 1}")
                    refused.append(f"a second process_id {k} ({who}) was refused")
                    _send(conn, {"error": (
                        f"secant.distributed: process_id {k} {why} (process 0 at {address} "
                        f"serves {num_processes} processes); give each process its own id in "
                        f"0..{num_processes - 1}")})
                    drop(conn)
                    continue
                claims[k], holders[k] = conn, who
        for conn in claims.values():
            _send(conn, {"ok": True})
    finally:
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()


def _closed(conn):
    """Has the process at the other end of this (non-blocking) connection closed it?"""
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _parse(line):
    try:
        claim = json.loads(line.split(b"\n", 1)[0])
        k, n = claim["process_id"], claim["num_processes"]
        who = str(claim.get("from", "?"))
    except (ValueError, TypeError, KeyError):
        return None
    if not (isinstance(k, int) and isinstance(n, int)):
        return None
    return k, n, who


def join(address, process_id, num_processes, timeout_s):
    """Processes 1..n-1: claim `process_id` with process 0 and wait (at most timeout_s seconds)
    until every process of the run has claimed its own."""
    host, port = _split(address)
    deadline = time.monotonic() + timeout_s
    prefix = f"secant.distributed: process {process_id} of {num_processes}"
    while True:
        try:
            sock = socket.create_connection(
                (host, port), timeout=max(0.1, min(5.0, deadline - time.monotonic())))
            break
        except OSError as e:        # (process 0 not listening yet)
            if time.monotonic() >= deadline:
                raise SecantError(
                    f"{prefix} could not reach the coordinator at {address} within "
                    f"{timeout_s:g} s ({e.strerror or e}): is process 0 running, and is this "
                    "its address?") from None
            time.sleep(0.1)
    with sock:
        claim = {"process_id": process_id, "num_processes": num_processes,
                 "from": f"{socket.gethostname()} pid {os.getpid()}"}
        reply = b""
        try:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            sock.sendall(json.dumps(claim).encode() + b"\n")
            while b"\n" not in reply and len(reply) <= _MAX_LINE:
                data = sock.recv(_MAX_LINE)
                if not data:
                    break
                reply += data
        except socket.timeout:
            raise SecantError(
                f"{prefix}: process 0 at {address} did not see the whole run start within "
                f"{timeout_s:g} s (are all {num_processes} processes started?)") from None
        except OSError:
            pass            # (the connection was reset: as an empty answer, below)
    try:
        answer = json.loads(reply.split(b"\n", 1)[0])
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("ok") is True:
        return
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        raise SecantError(answer["error"])
    if not reply:
        raise SecantError(f"{prefix}: process 0 at {address} closed the connection without "
                          "answering: it stopped (see its own error), or its run started just "
                          f"now without this process (is process_id {process_id} taken by "
                          "another process?)")
    raise SecantError(
        f"{prefix}: the coordinator at {address} answered, but not as a secant process 0 "
        f"waiting for its run: that run has already started, so process_id {process_id} is "
        "probably taken by another process (or the address belongs to another service); give "
        f"each process its own id in 0..{num_processes - 1}")
