"""secant.distributed: several processes (on one machine or several) as one run, as
jax.distributed, on XLA's own distributed runtime: process 0 starts jaxlib's coordination
service, every process connects to it, and the CPU client is then created with the run's
distributed client and gloo/TCP collectives, so the devices of all processes form one global
list (`secant.devices()`) and pmap's collectives (psum, pmean, all_gather, ppermute) cross
processes. `python -m secant.launch -n 2 script.py` starts such a run on this machine.

    import secant
    secant.distributed.initialize()          # under secant.launch: from the environment
    # or: initialize("10.0.0.1:1234", num_processes=2, process_id=0)

Call it right after `import secant`, before anything creates devices.
"""
import atexit
import os
import sys

from secant.backends import runtime
from secant.backends.errors import SecantError, SecantValueError

ENV_ADDRESS = "SECANT_COORDINATOR_ADDRESS"
ENV_COUNT = "SECANT_NUM_PROCESSES"
ENV_ID = "SECANT_PROCESS_ID"
ENV_LOCAL_DEVICES = "SECANT_LOCAL_DEVICE_COUNT"


def _env_int(name):
    v = os.environ.get(name)
    if v is None or not v.strip():
        return None
    try:
        return int(v)
    except ValueError:
        raise SecantValueError(f"environment variable {name}={v!r} is not an integer") from None


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, *, initialization_timeout=60, heartbeat_timeout=10,
               shutdown_timeout=10):
    """Join a multi-process run (jax.distributed.initialize). Arguments left out are read from
    the environment secant.launch sets (SECANT_COORDINATOR_ADDRESS, SECANT_NUM_PROCESSES,
    SECANT_PROCESS_ID). Process 0 serves the coordinator at `coordinator_address`
    ("host:port"); all processes must start within `initialization_timeout` seconds. A process
    whose process_id another has taken, whose num_processes disagrees with process 0's, or that
    cannot reach the coordinator raises a SecantError here (the others of the run go on waiting
    for the right process; a disagreeing count stops them all). On the CPU,
    `local_device_ids` gives this process len(local_device_ids) devices (as
    config.update("num_cpu_devices", n))."""
    if coordinator_address is None:
        coordinator_address = os.environ.get(ENV_ADDRESS)
    if num_processes is None:
        num_processes = _env_int(ENV_COUNT)
    if process_id is None:
        process_id = _env_int(ENV_ID)
    missing = [n for n, v in (("coordinator_address", coordinator_address),
                              ("num_processes", num_processes), ("process_id", process_id))
               if v is None]
    if missing:
        raise SecantValueError(f"secant.distributed.initialize: {', '.join(missing)} not given "
                               f"(pass them, or start the script with `python -m secant.launch "
                               f"-n N script.py`, which sets {ENV_ADDRESS}, {ENV_COUNT} and "
                               f"{ENV_ID})")
    if not isinstance(coordinator_address, str) or ":" not in coordinator_address:
        raise SecantValueError(f"coordinator_address must be 'host:port', got "
                               f"{coordinator_address!r}")
    for name, v in (("num_processes", num_processes), ("process_id", process_id)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise SecantValueError(f"{name} must be an int, got {v!r}")
    if num_processes < 1:
        raise SecantValueError(f"num_processes must be at least 1, got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise SecantValueError(f"process_id {process_id} is out of range for num_processes="
                               f"{num_processes}: each process needs its own id in "
                               f"0..{num_processes - 1}")
    from secant.backends.config import config
    if local_device_ids is None and _env_int(ENV_LOCAL_DEVICES) is not None:
        local_device_ids = list(range(_env_int(ENV_LOCAL_DEVICES)))
    if local_device_ids is not None:
        ids = [int(i) for i in local_device_ids]
        if ids != list(range(len(ids))) or not ids:
            raise SecantValueError(f"local_device_ids {local_device_ids!r}: on the CPU give "
                                   "0..n-1 (this process then has n devices)")
        if not runtime.client_created():
            config.update("num_cpu_devices", len(ids))
    runtime.initialize_distributed(coordinator_address, num_processes, process_id,
                                   init_timeout=int(initialization_timeout),
                                   heartbeat_timeout=int(heartbeat_timeout),
                                   shutdown_timeout=int(shutdown_timeout))
    atexit.register(_shutdown_at_exit)


def _shutdown_at_exit():
    try:
        runtime.shutdown_distributed()
    except SecantError as e:        # (another process already gone: say so, exit anyway)
        print(f"secant.distributed: {e}", file=sys.stderr)


def shutdown():
    """Leave the run (each process, at its end; waits for the others at most shutdown_timeout)."""
    runtime.shutdown_distributed()


def is_initialized():
    return runtime.distributed_initialized()


__all__ = ["initialize", "shutdown", "is_initialized"]
