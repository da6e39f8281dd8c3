"""Warm jit dispatch of a tiny two-input function, `a * b + a` on f32[8]: what one call costs
when the work itself is negligible (issue 19's target: <= 1.0x jax.jit, device arrays in and out,
and NumPy in / np.asarray out). Also the first call's trace + compile time, and the floor: the
PJRT execute alone with the buffers already on the device.

Candidates are timed in interleaved rounds (medians) in one process."""
import numpy as np

import secant
from timing import import_jax, interleaved_us, once_ms, report


def f(a, b):
    return a * b + a


def measure():
    """{figure: (secant, jax or None)}: first call in ms, the rest in µs per call."""
    jax, _ = import_jax()
    a_np = np.linspace(0, 1, 8, dtype=np.float32)
    b_np = np.linspace(1, 2, 8, dtype=np.float32)

    fast = secant.jit(f)
    first = once_ms(lambda: fast(a_np, b_np).block_until_ready())
    a_dev, b_dev = secant.device_put((a_np, b_np))
    # the floor: the compiled executable run on device buffers, nothing else
    entry = next(iter(fast._cache.values()))
    bufs, execute, handlers = [a_dev._buf, b_dev._buf], entry._execute, entry._handlers
    cands = [lambda: fast(a_dev, b_dev).block_until_ready(),
             lambda: np.asarray(fast(a_np, b_np)),
             lambda: execute(bufs).consume_with_handlers(handlers)[0].block_until_ready()]
    # the Python path alone for NumPy in (what SECANT_CPP_DISPATCH=0 gives): what jaxlib's C++
    # dispatcher, which jit calls with NumPy arguments go through, saves
    python_only = secant.jit(f)
    python_only._cpp_ok = False
    cands.append(lambda: np.asarray(python_only(a_np, b_np)))
    n_cpp = 1
    jax_first = None
    if jax is not None:
        jfast = jax.jit(f)
        jax_first = once_ms(lambda: jfast(a_np, b_np).block_until_ready())
        ja, jb = jax.device_put(a_np), jax.device_put(b_np)
        cands += [lambda: jfast(ja, jb).block_until_ready(),
                  lambda: np.asarray(jfast(a_np, b_np))]
    times = interleaved_us(cands)
    device_io, numpy_io, floor = times[:3]
    (python_numpy,) = times[3:3 + n_cpp]
    jax_device, jax_numpy = times[3 + n_cpp:] if jax is not None else (None, None)
    return {"first": (first, jax_first), "device": (device_io, jax_device),
            "numpy": (numpy_io, jax_numpy), "floor": (floor, None),
            "python numpy": (python_numpy, jax_numpy)}


def rows(results=None):
    """Summary rows for run_all: (name, secant s, anchor name, anchor s, target ratio)."""
    r = results or measure()
    us = 1e-6

    def anchor(v, scale):
        return None if v is None else v * scale
    return [("warm jit call, tiny, device arrays in/out", r["device"][0] * us, "jax.jit",
             anchor(r["device"][1], us), 1.0),
            ("warm jit call, tiny, NumPy in / np.asarray out", r["numpy"][0] * us, "jax.jit",
             anchor(r["numpy"][1], us), 1.0),
            ("warm jit call, device arrays, vs PJRT execute alone", r["device"][0] * us,
             "secant execute", r["floor"][0] * us, None),
            ("warm jit call, tiny, NumPy in/out, Python path (SECANT_CPP_DISPATCH=0)",
             r["python numpy"][0] * us, "jax.jit", anchor(r["python numpy"][1], us), None)]


def main():
    print("dispatch: a * b + a on f32[8] (medians of interleaved rounds)")
    r = measure()
    report("first call (trace + compile)", *r["first"], "ms")
    report("warm call, device arrays in/out", *r["device"])
    report("warm call, NumPy in/out", *r["numpy"])
    report("warm call, NumPy, Python path (CPP_DISPATCH=0)", *r["python numpy"])
    device_io, floor = r["device"][0], r["floor"][0]
    print(f"  {'PJRT execute alone (the floor)':<42} secant {floor:10.2f} µs"
          f"   warm device call / floor {device_io / floor:5.2f}x")
    return r


if __name__ == "__main__":
    main()
