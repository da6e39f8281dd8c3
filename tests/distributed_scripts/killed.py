"""Run under secant.launch -n 2: process 1 (or $VICTIM) kills itself (SIGKILL) in the middle of a
loop of psums; the other must fail with a clear error, not hang."""
import os
import signal
import sys
import time

import numpy as np

import secant

secant.distributed.initialize(heartbeat_timeout=int(os.environ.get("HEARTBEAT", "10")))
from secant import lax  # noqa: E402

me = secant.process_index()
f = secant.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
x = np.ones((secant.local_device_count(), 3), np.float32)
for step in range(1000):
    if me == int(os.environ.get("VICTIM", "1")) and step == 3:
        print(f"process {me}: killing itself", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    t = time.monotonic()
    try:
        y = np.asarray(f(x))
    except secant.SecantError as e:
        print(f"FAILED at step {step} after {time.monotonic() - t:.2f} s: {e}", flush=True)
        sys.exit(3)
    assert y[0, 0] == secant.device_count(), y
    print(f"step {step} ok", flush=True)
