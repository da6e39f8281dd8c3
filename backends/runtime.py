"""The PJRT adapter: the ONLY module that touches jaxlib (verified against jaxlib 0.10.2).

It guards the hazards recorded in shared/notes/pjrt.md: PJRT only checks byte sizes (callers
check dtype and shape first, see `Executable.check`), the device assignment is always set, host
data is put with enable_x64=True (else 64-bit data is silently narrowed), host data is copied
(the zero-copy mode aliases NumPy memory the user may still mutate), outputs are read through
result handlers (which never import jax), and ml_dtypes outputs are read without the buffer
protocol (which returns object arrays for them).
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np  # noqa: E402
from jaxlib import xla_client as xc  # noqa: E402
from jaxlib import _jax  # noqa: E402
from jaxlib.mlir import ir  # noqa: E402
from jaxlib.mlir.dialects import chlo as _chlo, stablehlo as _stablehlo  # noqa: E402
from jaxlib.mlir._mlir_libs import _jax_mlir_ext  # noqa: E402

from secant.backends.errors import SecantError  # noqa: E402

JAXLIB_VERSION = xc._version
_COPY = xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL


class StableHLOError(SecantError):
    """The emitted module failed to parse or verify: a bug in a lowering, reported, not crashed."""


class Aval:
    """The attributes jaxlib's C++ reads from an abstract value."""
    __slots__ = ("shape", "dtype", "weak_type", "ndim")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = False
        self.ndim = len(self.shape)


class _SingleDeviceSharding(xc.SingleDeviceSharding):
    # jaxlib's C++ asks these two members of a sharding; only jax's Python normally adds them.
    memory_kind = None
    _REPLICATED = xc.HloSharding.replicate()

    def _to_xla_hlo_sharding(self, ndim):
        return self._REPLICATED


# --- client and devices ------------------------------------------------------------------------
_client = None
_shardings = {}


def client():
    global _client
    if _client is None:
        _client = xc.make_cpu_client(asynchronous=True, num_devices=1)
    return _client


def devices():
    return client().devices()


def default_device():
    return client().devices()[0]


def default_backend():
    return client().platform


def sharding(device):
    s = _shardings.get(device)
    if s is None:
        s = _shardings[device] = _SingleDeviceSharding(device)
    return s


def device_of(buf):
    return buf._sharding._internal_device_list[0]


def put(value, device=None):
    """Copy a NumPy array (dtype already canonical) into a new buffer on `device`."""
    device = device or default_device()
    value = np.asarray(value)
    return xc.batched_device_put(Aval(value.shape, value.dtype), sharding(device), [value], [device],
                                 True, False, _COPY, True)


def putter(shape, dtype, device):
    """A fast `put` for one fixed shape and dtype (jit's per-argument transfer on the hot path)."""
    aval, shard, devs = Aval(shape, dtype), sharding(device), [device]
    device_put = xc.batched_device_put

    def put_one(value):
        return device_put(aval, shard, [value], devs, True, False, _COPY, True)
    return put_one


def single_device():
    """True when there is one device: jit may then skip per-argument placement checks."""
    return len(client().devices()) == 1


def to_numpy(buf, dtype):
    """A read-only host view of a single-device buffer."""
    if np.dtype(dtype).kind == "V":   # ml_dtypes (bfloat16): the buffer protocol gives object arrays
        return buf._single_device_array_to_np_array_did_copy()[0]
    return np.asarray(buf)


# --- StableHLO: verify and compile -------------------------------------------------------------
_context = None


def _mlir_context():
    global _context
    if _context is None:
        ctx = ir.Context()
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx.append_dialect_registry(registry)
        ctx.load_all_available_dialects()
        _stablehlo.register_dialect(ctx)
        _chlo.register_dialect(ctx)
        _context = ctx
    return _context


def verify(text):
    """Parse and verify module text; a bad module is a StableHLOError naming each diagnostic."""
    with _mlir_context():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            lines = text.splitlines()
            msgs = []
            for d in e.error_diagnostics:
                msgs.append(f"{d.location}: {d.message}")
                loc = str(d.location)
                if loc.startswith('loc("-":'):
                    n = int(loc.split(":")[1]) - 1
                    if 0 <= n < len(lines):
                        msgs.append("    " + lines[n].strip()[:300])
            raise StableHLOError("secant emitted StableHLO that does not verify (a secant bug, "
                                 "please report it):\n  " + "\n  ".join(msgs)) from None
    return module


class Executable:
    """A compiled single-device program. Call with device buffers, get device buffers back."""

    def __init__(self, text, out_avals, device=None):
        self.device = device or default_device()
        verify(text)
        opts = xc.CompileOptions()
        # Always set: without it a program meant for another device is assigned to device 0.
        opts.device_assignment = xc.DeviceAssignment.create(np.array([[self.device.id]]))
        try:
            self.exe = client().compile_and_load(text, xc.DeviceList((self.device,)), opts)
        except _jax.JaxRuntimeError as e:
            raise SecantError(f"XLA failed to compile the program: {e}") from None
        shard = sharding(self.device)
        self.handlers = [xc.array_result_handler(Aval(a.shape, a.dtype), shard, True, True)
                         for a in out_avals]

    def __call__(self, bufs):
        return self.exe.execute_sharded(bufs).consume_with_handlers(self.handlers)

    def as_hlo_text(self):
        return self.exe.hlo_modules()[0].to_string()

    def cost_analysis(self):
        return self.exe.cost_analysis()


# --- pytrees: jaxlib's C++ registry, a private instance (so an imported jax never clashes) -------
def new_pytree_registry():
    return _jax.pytree.PyTreeRegistry()


PyTreeDef = _jax.pytree.PyTreeDef
