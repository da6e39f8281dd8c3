"""The PJRT adapter: the ONLY module that touches jaxlib (verified against jaxlib 0.10.2).

It guards the hazards recorded in shared/notes/pjrt.md: PJRT only checks byte sizes (callers
check dtype and shape first, see `Executable.check`), the device assignment is always set, host
data is put with enable_x64=True (else 64-bit data is silently narrowed), host data is copied
(the zero-copy mode aliases NumPy memory the user may still mutate), outputs are read through
result handlers (which never import jax), and ml_dtypes outputs are read without the buffer
protocol (which returns object arrays for them).
"""
import os
import re
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np  # noqa: E402
from jaxlib import xla_client as xc  # noqa: E402
from jaxlib import _jax  # noqa: E402

from secant.backends import compilation_cache, dtypes, rendezvous  # noqa: E402
from secant.backends.errors import SecantError, SecantValueError, where  # noqa: E402

Device = xc.Device      # (the class of secant.devices()' entries: jax.Device)

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


class _MultiDeviceSharding(xc.GSPMDSharding):
    # replica-style (pmap) arrays: one buffer per device, the per-device shape as the aval
    memory_kind = None

    def _to_xla_hlo_sharding(self, ndim):
        return self._hlo_sharding


# --- client and devices ------------------------------------------------------------------------
_client = None
_client_lock = threading.Lock()
_shardings = {}
_FORCE_FLAG = "--xla_force_host_platform_device_count="


def requested_cpu_devices():
    """How many CPU devices the client gets: secant.config's num_cpu_devices when set, else
    XLA_FLAGS=--xla_force_host_platform_device_count=N (as JAX), else 1."""
    from secant.backends.config import config
    n = config.read("num_cpu_devices")
    if n is not None:
        return int(n)
    for flag in os.environ.get("XLA_FLAGS", "").split():
        if flag.startswith(_FORCE_FLAG):
            try:
                return max(1, int(flag[len(_FORCE_FLAG):]))
            except ValueError:
                raise SecantError(f"XLA_FLAGS: bad value in {flag!r}; expected "
                                  f"{_FORCE_FLAG}<positive integer>") from None
    return 1


def client_created():
    return _client is not None


def client():
    """The process's PJRT client, created once, on first use (under a lock: two threads making
    their first call at once must not build two clients and mix their devices)."""
    global _client
    c = _client
    if c is None:
        with _client_lock:
            c = _client
            if c is None:
                c = _client = _make_client()
    return c


def _make_client():
    if _wants_gpu():
        gpu = _gpu_client()
        if gpu is not None:
            return gpu
    d = _distributed
    if d is not None:
        try:
            return _jax.get_tfrt_cpu_client(
                asynchronous=True, distributed_client=d.client, node_id=d.process_id,
                num_nodes=d.num_processes, collectives=d.collectives,
                num_devices=requested_cpu_devices())
        except _jax.JaxRuntimeError as e:
            raise SecantError(
                f"process {d.process_id} of {d.num_processes} could not exchange its devices "
                f"with the other processes of the run: {str(e).splitlines()[0]}\n(did every "
                "process start with the same num_processes, and is each still running?)"
                ) from None
    return xc.make_cpu_client(asynchronous=True, num_devices=requested_cpu_devices())


def devices():
    """All devices, of every process (one process: its own)."""
    return client().devices()


def local_devices():
    """This process's devices (the ones it can put data on and read back)."""
    return client().local_devices()


def default_device():
    return client().local_devices()[0]


def default_backend():
    p = client().platform
    return "gpu" if p in ("cuda", "rocm") else p


# --- several processes: XLA's distributed runtime (coordination service + gloo collectives) ------
class _Distributed:
    __slots__ = ("service", "client", "collectives", "process_id", "num_processes", "address",
                 "shutdown_timeout", "lost")


_distributed = None


def distributed_initialized():
    return _distributed is not None


def process_index():
    return 0 if _distributed is None else _distributed.process_id


def process_count():
    return 1 if _distributed is None else _distributed.num_processes


def initialize_distributed(address, num_processes, process_id, *, init_timeout=60,
                           heartbeat_timeout=10, shutdown_timeout=10):
    """Join a run of `num_processes` processes (jaxlib's distributed runtime). First every
    process claims its id with process 0 at `address` ("host:port"; backends/rendezvous.py): a
    duplicate id, a count that disagrees or an unreachable coordinator is a SecantError there,
    where jaxlib would abort the processes. Then process 0 starts the coordination service at
    `address`, every process connects its client and
    waits (at most init_timeout seconds) for all the others; the CPU client made afterwards
    shares one global device list and runs collectives over gloo/TCP. A process that stops
    answering for heartbeat_timeout seconds is reported to all the others (jaxlib then ends
    them with an error naming the lost process), and a collective whose peer died fails at
    once with a JaxRuntimeError."""
    global _distributed
    if _distributed is not None:
        raise SecantError("secant.distributed.initialize was already called in this process "
                          f"(process {_distributed.process_id} of "
                          f"{_distributed.num_processes}); call it once")
    if _client is not None:
        raise SecantError("secant.distributed.initialize must be called before secant creates "
                          "its devices (before the first jit, device_put, devices() or array "
                          "operation): call it right after `import secant`")
    d = _Distributed()
    d.address, d.num_processes, d.process_id = address, num_processes, process_id
    d.shutdown_timeout = shutdown_timeout
    d.service, d.lost = None, False
    if process_id == 0:
        rendezvous.serve(address, num_processes, init_timeout)
        try:
            d.service = _jax.get_distributed_runtime_service(
                rendezvous.bind_address(address), num_processes,
                heartbeat_timeout=heartbeat_timeout, cluster_register_timeout=init_timeout,
                shutdown_timeout=shutdown_timeout)
        except _jax.JaxRuntimeError as e:
            raise SecantError(f"secant.distributed: process 0 could not start the coordination "
                              f"service at {address}: {e}") from None
    else:
        rendezvous.join(address, process_id, num_processes, init_timeout)
    d.client = _jax.get_distributed_runtime_client(
        address, process_id, init_timeout=init_timeout, heartbeat_timeout=heartbeat_timeout,
        shutdown_timeout=shutdown_timeout, shutdown_on_destruction=False)
    try:
        d.client.connect()
    except _jax.JaxRuntimeError as e:
        d.client = None
        if d.service is not None:
            d.service.shutdown()
        raise SecantError(
            f"secant.distributed: process {process_id} of {num_processes} could not join the "
            f"run coordinated at {address} within {init_timeout} s: {e}\n(every process must "
            "give the same coordinator address and num_processes, each its own process_id in "
            f"0..{num_processes - 1}, and all must start)") from None
    host = address.rsplit(":", 1)[0].strip("[]")
    d.collectives = _jax.make_gloo_tcp_collectives(d.client, hostname=host)
    _distributed = d


def shutdown_distributed():
    """Leave the run (waits, at most shutdown_timeout, for the other processes to leave too)."""
    global _distributed
    d, _distributed = _distributed, None
    if d is None:
        return
    errors = []
    # every process reaches this barrier before any leaves: process 0 must not stop the
    # service while another still talks to it (it would die of a lost coordinator). A run that
    # lost a process has no barrier to wait at: waiting would only give jaxlib's heartbeat
    # check the time to abort this process, after its clear error.
    try:
        if not d.lost:
            d.client.wait_at_barrier("secant_shutdown", int(d.shutdown_timeout * 1000))
    except _jax.JaxRuntimeError as e:
        errors.append(f"not every process reached the end of the run within "
                      f"{d.shutdown_timeout} s (one failed or is still running): {e}")
    for part in (d.client, d.service):
        if part is not None:
            try:
                part.shutdown()
            except _jax.JaxRuntimeError as e:
                errors.append(str(e))
    if errors:
        raise SecantError("secant.distributed.shutdown: " + "; ".join(errors))


# --- accelerators: PJRT plugins (jaxlib's plugin mechanism, as jax's xla_bridge) ----------------
def requested_platforms():
    """config "platforms" (or SECANT_PLATFORMS / JAX_PLATFORMS): e.g. "cpu" forces the CPU."""
    from secant.backends.config import config
    p = config.read("platforms")
    return [x.strip().lower() for x in p.split(",") if x.strip()] if p else None


def _wants_gpu():
    p = requested_platforms()
    return p is None or any(x in ("gpu", "cuda") for x in p)


_GPU_PLUGINS = ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")


def gpu_plugin_path():
    """The CUDA PJRT plugin library of an installed jax-cuda*-pjrt wheel, or None. The package
    is found, not imported (its __init__ imports jax)."""
    import importlib.util
    import pathlib
    for name in _GPU_PLUGINS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        for loc in spec.submodule_search_locations:
            so = pathlib.Path(loc) / "xla_cuda_plugin.so"
            if so.exists():
                return str(so)
    return None


def _preload_cuda_libraries():
    """The nvidia-* wheels' shared libraries, loaded before the plugin (as jax's cuda plugin
    does): the plugin finds them by soname only."""
    import ctypes
    import glob
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    if spec is None or not spec.submodule_search_locations:
        return
    for root in spec.submodule_search_locations:
        for lib in ("cuda_runtime", "cublas", "cusolver", "cusparse", "cufft", "cudnn", "nccl",
                    "cuda_nvrtc", "nvjitlink", "cuda_cupti"):
            for so in sorted(glob.glob(os.path.join(root, lib, "lib", "lib*.so*"))):
                try:
                    ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass


# A machine without them has no NVIDIA GPU a process can open (as jax's hardware_utils): the
# CUDA plugin is then not even loaded, since starting it there can end the process, not raise
# (jax-ml/jax#22703, and #37668 for CUDA_VISIBLE_DEVICES="").
_NVIDIA_DEVICE_FILES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg")


def _why_no_gpu():
    """Why this process cannot see an NVIDIA GPU, or None when it may."""
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.split(",")[0].strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU"
    if not any(os.path.exists(f) for f in _NVIDIA_DEVICE_FILES):
        return f"this machine has no NVIDIA GPU (none of {', '.join(_NVIDIA_DEVICE_FILES)})"
    return None


def _gpu_client():
    """A client on the CUDA PJRT plugin, or None (the CPU is used) when no plugin is installed,
    or, with a warning, when no GPU is visible or the plugin fails to start. With "gpu"/"cuda"
    requested explicitly, each of these is an error instead."""
    so = gpu_plugin_path()
    explicit = requested_platforms() is not None
    if so is None:
        if explicit:
            raise SecantError("platforms asks for the GPU, but no CUDA PJRT plugin is installed "
                              "(pip install -e '.[cuda12]')")
        return None
    problem = _why_no_gpu()
    if problem is None:
        try:
            _preload_cuda_libraries()
            if not xc.pjrt_plugin_loaded("cuda"):
                xc.load_pjrt_plugin_dynamically("cuda", so)
            if not xc.pjrt_plugin_initialized("cuda"):
                xc.initialize_pjrt_plugin("cuda")
            options = xc.generate_pjrt_gpu_plugin_options()
            d = _distributed
            if d is not None:       # (as jax's xla_bridge: the node's place in the run)
                options["node_id"] = d.process_id
                options["num_nodes"] = d.num_processes
            return xc.make_c_api_client("cuda", options, None if d is None else d.client)
        except Exception as e:     # (driver too old, libraries missing, ...): jaxlib's error
            problem = f"it failed to start: {str(e).strip()}"
    if explicit:
        raise SecantError(f"platforms asks for the GPU, but the CUDA PJRT plugin ({so}) cannot "
                          f"be used: {problem}")
    import warnings
    from secant.backends.errors import user_location
    file, line = user_location()        # (the user's line that made secant create its devices)
    warnings.warn_explicit(f"secant: the CUDA PJRT plugin is installed ({so}), but {problem}; "
                           "secant uses the CPU (set SECANT_PLATFORMS=cpu to skip the GPU and "
                           "this warning)", RuntimeWarning, file or "secant", line or 0)
    return None


def sharding(device):
    s = _shardings.get(device)
    if s is None:
        s = _shardings.setdefault(device, _SingleDeviceSharding(device))  # (one, under threads)
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


# --- jaxlib's C++ dispatcher (jit calls with NumPy arguments; notes/pjrt.md section 5) --------
_CppFastPath = None
_cpp_states_set = False
ArrayImpl = xc.ArrayImpl        # the type of a device buffer (jit's C++ path takes only these)


def cpp_dispatcher(name, cache_miss):
    """jaxlib's C++ jit dispatcher (`_jax.pjit`) for a function of flat positional array
    arguments: `d(*bufs_or_ndarrays)` runs the executable cached for their signature (dtype,
    shape, weak type, sharding) in C++, putting NumPy arguments itself; an unseen signature
    calls `cache_miss(*same)`, which returns (result, cpp_fast_path(...) or None, False).
    None when this jaxlib lacks it. It reads three process-wide states that jax owns once
    imported: set here (x64 off, jit on, no hook) only when jax is not, so callers use it only
    while secant's enable_x64 is off (what jax's default state canonicalises to)."""
    global _CppFastPath, _cpp_states_set
    import collections
    import sys
    try:
        pjit, registry = _jax.pjit, _jax.pytree.default_registry()
        if not _cpp_states_set and "jax" not in sys.modules:
            jj, Config = _jax.jax_jit, _jax.config.Config
            jj.set_enable_x64_state(Config("jax_enable_x64", False, include_in_jit_key=True))
            jj.set_disable_jit_state(Config("jax_disable_jit", False, include_in_jit_key=True))
            jj.set_post_hook_state(Config("jax_jit_post_hook", None))
        _cpp_states_set = True
        if _CppFastPath is None:    # (the attribute names jaxlib/pjit.cc reads)
            _CppFastPath = collections.namedtuple("CppFastPath", (
                "xla_executable out_pytree_def in_shardings out_shardings out_avals "
                "out_committed kept_var_bitvec in_device_local_layouts const_args"))
        return pjit(name, None, cache_miss, [], [], object(), registry, _no_fallback,
                    _jax.PjitFunctionCache(64))
    except (AttributeError, TypeError, RuntimeError):
        return None


def _no_fallback(*args):
    raise SecantError("secant's C++ dispatch received an argument it cannot place")


def cpp_fast_path(exe, n_in, out_avals, bare):
    """What the C++ dispatcher caches for one signature of `exe` (an Executable of one device,
    no host callbacks): n_in array inputs; `out_avals` (its buffers carry them as their avals:
    shape, dtype, weak type), returned as a flat tuple, or `bare`: the one output as it is."""
    s = sharding(exe.device)
    n = len(out_avals)
    tree = _jax.pytree.default_registry().flatten(0 if bare else (0,) * n)[1]
    return _CppFastPath(exe.exe, tree, [s] * n_in, [s] * n, list(out_avals), [False] * n,
                        [True] * n_in, [None] * n_in, [])


def single_device():
    """True when there is one device: jit may then skip per-argument placement checks."""
    return len(client().devices()) == 1 and len(client().local_devices()) == 1


def to_numpy(buf, dtype):
    """A read-only host view of a single-device buffer."""
    if dtype not in dtypes.BUFFER_PROTOCOL and \
            (dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)).kind == "V":
        # ml_dtypes (bfloat16): the buffer protocol gives object arrays
        return buf._single_device_array_to_np_array_did_copy()[0]
    return np.asarray(buf)


# --- StableHLO: verify and compile -------------------------------------------------------------
_context = None


def _mlir_context():
    """jaxlib's MLIR context with the StableHLO and CHLO dialects, made on first use: only
    `verify` parses modules here (XLA parses the text it compiles), so the dialects' Python
    bindings are imported then, not with secant (issue 19: their generated op classes are
    ~10k objects every full pass of Python's cyclic collector walks, and 30-300 ms of import)."""
    global _context
    if _context is not None:
        return _context
    with _client_lock:
        if _context is not None:
            return _context
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import chlo as _chlo, stablehlo as _stablehlo
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext
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
    ctx = _mlir_context()
    from jaxlib.mlir import ir
    with ctx:
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


class ShardedBuffer:
    """One logical array spread over several devices, one buffer per device, in `devices` order
    (a pmap input or output). `aval` is the per-device (shard) aval; `_global` is the
    multi-device jaxlib array an executable takes and returns, assembled when first needed."""
    __slots__ = ("devices", "aval", "_global", "_shards")

    def __init__(self, devices, aval, global_array=None, shards=None):
        self.devices = devices
        self.aval = aval
        self._global = global_array
        self._shards = shards

    @property
    def shards(self):
        s = self._shards
        if s is None:
            s = self._shards = list(self._global._arrays)
        return s

    def block_until_ready(self):
        if self._global is not None:
            self._global.block_until_ready()
        else:
            for s in self._shards:
                s.block_until_ready()

    def is_ready(self):
        if self._global is not None:
            return self._global.is_ready()
        return all(s.is_ready() for s in self._shards)


_device_lists = {}


def _multi_sharding(devices):
    s = _device_lists.get(devices)
    if s is None:
        s = _device_lists.setdefault(devices, _MultiDeviceSharding(xc.DeviceList(devices),
                                                                   xc.HloSharding.replicate()))
    return s


def _check_distinct(devices, what):
    seen = set()
    for i, d in enumerate(devices):
        if d.id in seen:
            raise SecantValueError(f"{what}: several shards on device {d} (shard {i} and an "
                                   f"earlier one); each shard must be on its own device"
                                   + where())
        seen.add(d.id)


def put_sharded(values, devices):
    """Copy one host shard onto each device: a ShardedBuffer (values share shape and dtype)."""
    devices = tuple(devices)
    if len(values) != len(devices):
        raise SecantValueError(f"device_put_sharded: {len(values)} shards for {len(devices)} "
                               "devices; give one shard per device" + where())
    _check_distinct(devices, "device_put_sharded")
    values = [np.asarray(v) for v in values]
    v0 = values[0]
    for i, v in enumerate(values):
        if v.shape != v0.shape or v.dtype != v0.dtype:
            raise SecantValueError(f"device_put_sharded: shard {i} is {v.dtype.name}"
                                   f"{list(v.shape)}, shard 0 is {v0.dtype.name}"
                                   f"{list(v0.shape)}; all shards must agree" + where())
    return ShardedBuffer(devices, Aval(v0.shape, v0.dtype),
                         shards=[put(v, d) for v, d in zip(values, devices)])


class ReplicatedExecutable:
    """A program compiled once for several devices with num_replicas = N (pmap's per-device
    program, replica style): replica r runs on devices[r] and reads stablehlo.replica_id r.

    jaxlib does not check multi-device inputs: a shard on the wrong device, or shards in the
    wrong order, crashes the interpreter (SIGSEGV, shared/notes/pjrt.md section 4), and it reads
    buffers of the right byte size whatever their shape or dtype. So every call validates the
    number of shards, their devices (distinct, in this executable's order) and their shapes and
    dtypes first, and raises SecantValueError naming the user's line instead."""

    def __init__(self, text, in_avals, out_avals, devices):
        # `devices`: every replica's device, of every process (a multi-process run compiles
        # the same program in each process); self.devices: this process's, the ones it feeds
        self.all_devices = tuple(devices)
        n = len(self.all_devices)
        _check_distinct(self.all_devices, "pmap devices")
        me = process_index()
        self.devices = tuple(d for d in self.all_devices if d.process_index == me)
        if not self.devices:
            raise SecantValueError(f"pmap devices {list(self.all_devices)}: none is this "
                                   f"process's (process {me}); each process must run on some "
                                   "of its own devices" + where())
        self.in_avals = [Aval(a.shape, a.dtype) for a in in_avals]
        if CALLBACK_TARGET in text:         # (no functions given: the call would crash)
            raise SecantError("host callbacks (debug.print, debug.callback, pure_callback) are "
                              "not supported under pmap yet; use them under jit or vmap"
                              + where())
        verify(text)
        opts = xc.CompileOptions()
        opts.num_replicas = n
        opts.num_partitions = 1
        opts.device_assignment = xc.DeviceAssignment.create(
            np.array([d.id for d in self.all_devices]).reshape(n, 1))
        try:
            self.exe = client().compile_and_load(text, xc.DeviceList(self.all_devices), opts)
        except _jax.JaxRuntimeError as e:
            raise SecantError(f"XLA failed to compile the program: {e}") from None
        if [d.id for d in self.exe.local_devices()] != [d.id for d in self.devices]:
            raise SecantError("XLA assigned the replicas to devices "
                              f"{self.exe.local_devices()}, not {list(self.devices)}")
        # (the global device list: each process passes only its own devices' shards)
        self.sharding = _multi_sharding(self.all_devices)
        self.out_avals = [Aval(a.shape, a.dtype) for a in out_avals]
        self.handlers = [xc.array_result_handler(a, self.sharding, True, True)
                         for a in self.out_avals]

    def check(self, args):
        """Raise SecantValueError unless `args` (ShardedBuffers) fit this executable exactly."""
        if len(args) != len(self.in_avals):
            raise SecantValueError(f"the pmapped program takes {len(self.in_avals)} arrays, got "
                                   f"{len(args)}" + where())
        devs = self.devices
        for i, (a, av) in enumerate(zip(args, self.in_avals)):
            if not isinstance(a, ShardedBuffer):
                raise SecantValueError(f"argument {i} of the pmapped program is not split over "
                                       "devices (a single-device buffer where one shard per "
                                       "device is expected)" + where())
            if a.devices is not devs:
                if len(a.devices) != len(devs):
                    raise SecantValueError(
                        f"argument {i}: {len(a.devices)} shards, but the program runs on "
                        f"{len(devs)} devices; it needs exactly one shard per device" + where())
                _check_distinct(a.devices, f"argument {i}")
                ids = [d.id for d in a.devices]
                want = [d.id for d in devs]
                if ids != want:
                    what = ("devices out of order" if sorted(ids) == sorted(want)
                            else "shards on other devices")
                    raise SecantValueError(
                        f"argument {i}: {what}: its shards are on devices {ids}, but the "
                        f"program runs on devices {want} in that order" + where())
            if a.aval.shape != av.shape or a.aval.dtype != av.dtype:
                raise SecantValueError(
                    f"argument {i}: shards of {a.aval.dtype.name}{list(a.aval.shape)}, but the "
                    f"program expects {av.dtype.name}{list(av.shape)} per device" + where())
            if a._global is None:
                # every shard must really sit on its device (a buffer moved or built by hand)
                for k, (buf, d) in enumerate(zip(a._shards, devs)):
                    if device_of(buf).id != d.id:
                        raise SecantValueError(
                            f"argument {i}: shard {k} is on {device_of(buf)}, expected {d}"
                            + where())

    def __call__(self, args):
        """ShardedBuffers in (validated first), ShardedBuffers out (one per output)."""
        self.check(args)
        bufs = []
        for a in args:
            g = a._global
            if g is None:
                g = a._global = xc.ArrayImpl(a.aval, self.sharding, list(a._shards), True, True)
            bufs.append(g)
        if len(self.devices) == len(self.all_devices):
            outs = self.exe.execute_sharded(bufs).consume_with_handlers(self.handlers)
        else:
            outs = self._run_across_processes(bufs)
        return [ShardedBuffer(self.devices, av, o) for o, av in zip(outs, self.out_avals)]

    def _run_across_processes(self, bufs):
        """Run with the other processes; waited for, so that a failed exchange (a process of
        the run died: gloo reports the closed connection at once) is raised here, clearly,
        and not later from whatever reads the outputs."""
        try:
            outs = self.exe.execute_sharded(bufs).consume_with_handlers(self.handlers)
            for o in outs:
                o.block_until_ready()
        except _jax.JaxRuntimeError as e:
            if _distributed is not None:
                _distributed.lost = True
            raise SecantError(
                f"pmap over the {len(self.all_devices)} devices of {process_count()} processes "
                f"failed in process {process_index()}: another process of the run has probably "
                "stopped (it crashed, was killed or raised an error; see its output).\n"
                f"XLA said: {str(e).splitlines()[0]}" + where()) from None
        return outs

    def as_hlo_text(self):
        return self.exe.hlo_modules()[0].to_string()


# --- host callbacks: Python functions a program calls (debug.print, pure_callback) ---------------
# jaxlib's CPU client runs `custom_call @xla_ffi_python_cpu_callback` with `index = i` by calling
# the i-th of the Python functions given to compile_and_load (keyword host_callbacks; verified on
# jaxlib 0.10.2): the function gets one C-ordered NumPy array per operand and returns a tuple of
# arrays, one per result. Hazards guarded here: an index with no function, or a result of the
# wrong shape or dtype, would read or write out of bounds, so every program's indices are
# numbered from the functions it was compiled with, and results are checked before they go back;
# an exception in the function fails the execution (JaxRuntimeError), and is re-raised as itself.
CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
_CALLBACK_INDEX = re.compile(r"mhlo\.backend_config = \{index = (\d+) : ui64\}")
_callbacks = {}           # id -> HostCallback (kept alive: programs compiled with them may run)
_callbacks_lock = threading.Lock()
class _Failures:
    error = None        # the exception of the last host callback that failed (any thread: XLA
                        # may call it on one of its own)


_failures = _Failures()


class HostCallback:
    """A Python function a program calls on the host: `fn(*arrays)` returns a sequence of arrays
    of exactly `result_avals` (checked here, before they go back to the program)."""

    def __init__(self, fn, result_avals=(), name=None):
        self.fn = fn
        self.result_avals = tuple(result_avals)
        self.name = name or getattr(fn, "__name__", "callback")
        with _callbacks_lock:
            self.id = len(_callbacks)
            _callbacks[self.id] = self

    def __call__(self, *arrays):
        out = self.fn(*arrays)
        out = () if out is None and not self.result_avals else tuple(out)
        if len(out) != len(self.result_avals):
            raise SecantValueError(f"{self.name} returned {len(out)} arrays, but "
                                   f"{len(self.result_avals)} were declared")
        checked = []
        for i, (o, av) in enumerate(zip(out, self.result_avals)):
            o = np.asarray(o)
            if o.shape != tuple(av.shape) or o.dtype != np.dtype(av.dtype):
                raise SecantValueError(
                    f"{self.name} returned {o.dtype.name}{list(o.shape)} as result {i}, but "
                    f"{np.dtype(av.dtype).name}{list(av.shape)} was declared "
                    "(result_shape_dtypes)")
            checked.append(o if o.flags.c_contiguous else o.copy(order="C"))  # (0-d stays 0-d)
        return tuple(checked)

    def on_host(self, *arrays):
        """What jaxlib calls: copies of the operands in; a failure is kept to re-raise."""
        try:
            return self(*[np.array(a) for a in arrays])
        except BaseException as e:
            _failures.error = e
            raise

    def __hash__(self):
        return self.id

    def __eq__(self, other):
        return self is other

    def __repr__(self):
        return f"<host callback {self.id}: {self.name}>"


def _number_callbacks(text):
    """(text with its callback ids renumbered 0..k-1, the k functions in that order)."""
    ids = []
    for m in _CALLBACK_INDEX.finditer(text):
        i = int(m.group(1))
        if i not in ids:
            ids.append(i)
    missing = [i for i in ids if i not in _callbacks]
    if missing:
        raise SecantError(f"the program calls host callbacks {missing} that this process never "
                          "registered")
    position = {i: k for k, i in enumerate(ids)}
    text = _CALLBACK_INDEX.sub(
        lambda m: f"mhlo.backend_config = {{index = {position[int(m.group(1))]} : ui64}}", text)
    return text, [_callbacks[i].on_host for i in ids]


class _CallbackRun:
    """execute_sharded for a program with host callbacks: results ready when returned (what the
    callbacks print is printed by then), and a callback's exception raised as itself."""
    __slots__ = ("exe", "bufs")

    def __init__(self, exe, bufs):
        self.exe, self.bufs = exe, bufs

    def consume_with_handlers(self, handlers):
        _failures.error = None
        try:
            outs = self.exe.execute_sharded(self.bufs).consume_with_handlers(handlers)
            for o in outs:
                o.block_until_ready()
        except _jax.JaxRuntimeError:
            error, _failures.error = _failures.error, None
            if error is not None:
                raise error from None
            raise
        return outs


class Executable:
    """A compiled single-device program. Call with device buffers, get device buffers back."""

    def __init__(self, text, out_avals, device=None):
        self.device = device or default_device()
        callbacks = []
        if CALLBACK_TARGET in text:
            text, callbacks = _number_callbacks(text)
        opts = xc.CompileOptions()
        # Always set: without it a program meant for another device is assigned to device 0.
        opts.device_assignment = xc.DeviceAssignment.create(np.array([[self.device.id]]))
        from secant.backends.config import config as _config
        level = _config.read("backend_optimization_level")
        if level is not None:
            opts.executable_build_options.debug_options.xla_backend_optimization_level = level
        devices = xc.DeviceList((self.device,))
        # (programs with host callbacks hold this process's functions: never cached on disk)
        cache_key = None if callbacks else _disk_cache_key(text, opts, self.device)
        self.exe = None if cache_key is None else _load_cached(cache_key, devices, opts)
        if self.exe is None:
            try:    # (without callbacks XLA gets the text, not the module of the shared MLIR
                if callbacks:   # context: compiled while another thread parsed in that
                    self.exe = client().compile_and_load(   # context, it crashed the process)
                        verify(text), executable_devices=devices, compile_options=opts,
                        host_callbacks=callbacks)
                else:   # (XLA parses and verifies the text itself: verified here only when
                    #      it fails, for diagnostics that name the module's lines; issue 19)
                    self.exe = client().compile_and_load(text, devices, opts)
            except _jax.JaxRuntimeError as e:
                verify(text)
                raise SecantError(f"XLA failed to compile the program: {e}") from None
            if cache_key is not None:
                compilation_cache.store(cache_key, client().serialize_executable(self.exe))
        self._callbacks = callbacks         # (alive as long as the executable)
        self.execute_sharded = (self.exe.execute_sharded if not callbacks
                                else lambda bufs: _CallbackRun(self.exe, bufs))
        shard = sharding(self.device)
        self.handlers = [xc.array_result_handler(Aval(a.shape, a.dtype), shard, True, True)
                         for a in out_avals]

    def __call__(self, bufs):
        return self.execute_sharded(bufs).consume_with_handlers(self.handlers)

    def as_hlo_text(self):
        return self.exe.hlo_modules()[0].to_string()

    def cost_analysis(self):
        return self.exe.cost_analysis()


def _disk_cache_key(text, opts, device):
    """The persistent cache's entry name for `text` compiled with `opts` on `device`, or None
    when the cache is off."""
    if compilation_cache.directory() is None:
        return None
    c = client()
    # (XLA_FLAGS too, as JAX's key: flags such as --xla_cpu_enable_fast_math change the code)
    return compilation_cache.key(text, opts.SerializeAsString(), c.platform, c.platform_version,
                                 device.device_kind, JAXLIB_VERSION, _jaxlib_version(),
                                 os.environ.get("XLA_FLAGS", ""))


def _load_cached(name, devices, opts):
    """The executable stored under `name` (its bytes checksummed by compilation_cache), or None."""
    payload = compilation_cache.load(name)
    if payload is None:
        return None
    try:
        return client().deserialize_executable(payload, devices, opts)
    except _jax.JaxRuntimeError:
        compilation_cache.refused(name)
        return None


def _jaxlib_version():
    import jaxlib
    return jaxlib.__version__


# --- pytrees: jaxlib's C++ registry, a private instance (so an imported jax never clashes) -------
def new_pytree_registry():
    return _jax.pytree.PyTreeRegistry()


PyTreeDef = _jax.pytree.PyTreeDef
# the entries of a key path (tree_util.tree_flatten_with_path)
DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey = (
    _jax.pytree.DictKey, _jax.pytree.SequenceKey, _jax.pytree.GetAttrKey,
    _jax.pytree.FlattenedIndexKey)


# --- LAPACK kernels for custom calls ---------------------------------------------------------------
_lapack_lock = threading.Lock()
_lapack_registered = False


def lapack_target(fn_base, dtype):
    """The custom-call target of LAPACK's `fn_base` ("getrf") for `dtype` ("lapack_dgetrf_ffi"),
    after registering jaxlib's LAPACK kernels with XLA's CPU backend (once per process).

    jaxlib ships the kernels (jaxlib.cpu._lapack) as typed-FFI handlers (api_version 1 here; the
    custom call in StableHLO says api_version = 4); `initialize()` fills their LAPACK function
    pointers from scipy's cython_lapack, which jaxlib depends on. A custom call to a target that
    is not registered, or not initialised, crashes the process, so every lowering that emits
    one asks for its name here."""
    prefix = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}.get(
        np.dtype(dtype).name)
    if prefix is None:
        raise SecantError(f"no LAPACK kernel for dtype {np.dtype(dtype).name}" + where())
    register_lapack_targets()
    return f"lapack_{prefix}{fn_base}_ffi"


def register_lapack_targets():
    """Register jaxlib's LAPACK kernels with XLA's CPU backend, once per process."""
    global _lapack_registered
    if not _lapack_registered:
        with _lapack_lock:
            if not _lapack_registered:
                try:
                    from jaxlib.cpu import _lapack
                    _lapack.initialize()
                except ImportError as e:
                    raise SecantError(f"jaxlib's LAPACK kernels are unavailable ({e}): lu, solve, "
                                      "det and inv cannot run under jit" + where()) from None
                for name, fn in _lapack.registrations().items():
                    xc.register_custom_call_target(name, fn, platform="cpu",
                                                   api_version=int(name.endswith("_ffi")))
                _lapack_registered = True
