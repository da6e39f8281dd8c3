"""Run by tests/test_distributed.py under `python -m secant.launch -n 2 --devices-per-process 2`
(or alone, with SECANT_SINGLE=4: one process, 4 devices): pmap collectives over all devices
of the run; prints one JSON line of this process's results (its local slices)."""
import json
import os

import numpy as np

import secant

if os.environ.get("SECANT_SINGLE"):
    secant.config.update("num_cpu_devices", int(os.environ["SECANT_SINGLE"]))
else:
    secant.distributed.initialize()

from secant import lax  # noqa: E402

n_local = secant.local_device_count()
n = secant.device_count()
me = secant.process_index()
# the global input: row k belongs to global device k; each process feeds its own rows
x_global = np.arange(n * 3, dtype=np.float32).reshape(n, 3) + 1
rows = slice(me * n_local, (me + 1) * n_local)
x = x_global[rows]


def collectives(v):
    i = lax.axis_index("i")
    return {"psum": lax.psum(v, "i"),
            "pmean": lax.pmean(v, "i"),
            "pmax": lax.pmax(v, "i"),
            "all_gather": lax.all_gather(v, "i"),
            "ppermute": lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)]),
            "index": i}


out = secant.pmap(collectives, axis_name="i")(x)
res = {k: np.asarray(v).tolist() for k, v in out.items()}
res["process"] = me
res["devices"] = [str(d) for d in secant.devices()]
print("RESULT " + json.dumps(res), flush=True)
