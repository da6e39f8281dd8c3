"""Threads: jit, grad, vmap and pmap called from several threads at once give what one thread
gives, each signature traced and compiled once (issue 16, "Threads").

The stress runs tests/thread_stress.py in fresh processes, so the PJRT client and every cache
start cold (the client is created by whichever thread gets there first); it uses 2 CPU devices
(secant.config num_cpu_devices, set in that process before its client exists) for pmap."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.backends import once

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "thread_stress.py")
SIGNATURES = 4 * 4      # (3 jitted functions and 1 pmapped) x 4 shapes


def _run(mode, path, *extra):
    proc = subprocess.run([sys.executable, SCRIPT, mode, str(path), "2", *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{mode} run failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return dict(np.load(path))


def test_eight_threads_from_a_cold_start_match_a_sequential_run(tmp_path):
    want = _run("seq", tmp_path / "seq.npz")
    assert list(want["__stats__"]) == [SIGNATURES, SIGNATURES]     # traces, compiles
    for i, extra in enumerate([(), (), ("warm",)]):     # warm: the client exists, caches cold
        got = _run("threads", tmp_path / f"threads{i}.npz", *extra)
        assert sorted(got) == sorted(want)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
        # each signature traced and compiled once, though 8 threads asked for it at once
        assert list(got["__stats__"]) == [SIGNATURES, SIGNATURES]
        assert list(got["__cache__"]) == [4, 4, 4]


def _in_threads(*fns, timeout=60):
    results, errors = [None] * len(fns), []

    def run(i):
        try:
            results[i] = fns[i]()
        except BaseException as e:      # noqa: BLE001 (re-raised below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def test_two_threads_tracing_at_once_never_see_each_others_trace():
    barrier = threading.Barrier(2, timeout=10)

    def f(x):
        y = snp.sin(x) * 2.0
        barrier.wait()          # (runs while tracing) both traces are open now
        acc = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + y, x)   # staged into this trace
        if snp.sum(acc) > 0:    # a traced `if`: lax.cond in this trace
            acc = acc + 1.0
        barrier.wait()
        return acc

    def g(x, n):
        barrier.wait()
        z = snp.cos(x)
        for _ in range(n):
            z = z * x
        barrier.wait()
        return snp.sum(z) + lax.fori_loop(0, n, lambda i, c: c + i, 0.0)

    x = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    f_out, g_out = _in_threads(lambda: secant.jit(f)(x),
                               lambda: secant.jit(g, static_argnums=1)(x, 3))
    acc = x
    for _ in range(3):
        acc = acc * 0.5 + np.sin(x) * 2.0
    acc = acc + 1.0 if acc.sum() > 0 else acc
    np.testing.assert_allclose(np.asarray(f_out), acc, rtol=1e-6)
    np.testing.assert_allclose(float(g_out), np.sum(np.cos(x) * x ** 3) + 3.0, rtol=1e-6)


def test_two_threads_tracing_under_grad_and_vmap_at_once():
    barrier = threading.Barrier(2, timeout=10)

    def loss(w):
        barrier.wait()
        out = snp.sum(snp.tanh(w) ** 2)
        barrier.wait()
        return out + lax.fori_loop(0, 2, lambda i, c: c * 0.5, out)

    def row(v):
        barrier.wait()
        out = snp.dot(v, v)
        barrier.wait()
        return lax.fori_loop(0, 2, lambda i, c: c + snp.max(v), out)

    w = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    b = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    gw, rows = _in_threads(lambda: secant.jit(secant.grad(loss))(w),
                           lambda: secant.jit(secant.vmap(row))(b))
    np.testing.assert_allclose(np.asarray(gw), 1.25 * 2 * np.tanh(w) * (1 - np.tanh(w) ** 2),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(rows), [r @ r + 2 * r.max() for r in b], rtol=1e-6)


def test_a_warm_jit_call_takes_no_lock(monkeypatch):
    f = secant.jit(lambda x: x * 2.0 + 1.0)
    x = np.ones(3, np.float32)
    f(x)

    def no_claims(*a):
        raise AssertionError("a warm call claimed a cache key")
    monkeypatch.setattr(once, "claim", no_claims)
    np.testing.assert_array_equal(np.asarray(f(x)), [3.0, 3.0, 3.0])


# --- backends/once.py: one builder per key, the others wait; recursion is per thread ---------
def test_a_second_thread_waits_for_the_key_being_built():
    cache, made, started = {}, [], threading.Event()
    release = threading.Event()

    def make():
        made.append(threading.get_ident())
        started.set()
        assert release.wait(10)
        return "value"

    def other():
        assert started.wait(10)
        b = once.build(cache, "k", make)    # asked while the first thread builds it: waits
        return b

    t = threading.Timer(0.2, release.set)
    t.start()
    first, second = _in_threads(lambda: once.build(cache, "k", make), other)
    assert first == second == "value" and len(made) == 1


def test_recursion_is_per_thread():
    cache = {}

    def make():
        # the same thread asking again while building is recursion
        assert once.build(cache, "k", make, recursive=lambda: "recursive") == "recursive"
        return "built"
    assert once.build(cache, "k", make) == "built"


def test_threads_entering_a_mutual_recursion_from_both_ends_do_not_deadlock():
    cache, barrier = {}, threading.Barrier(2, timeout=10)

    def make(me, other):
        def build():
            barrier.wait()      # both keys are being built now
            inner = once.build(cache, other, make(other, me),
                               recursive=lambda: f"recursive {other}")
            return f"{me}({inner})"
        return build

    a, b = _in_threads(lambda: once.build(cache, "a", make("a", "b")),
                       lambda: once.build(cache, "b", make("b", "a")), timeout=20)
    # one of them saw the other's key as a recursive call (a wait would deadlock); the other
    # waited for it and got its value: as if one thread had entered both
    assert (a, b) in [("a(b(recursive a))", "b(recursive a)"),
                      ("a(recursive b)", "b(a(recursive b))")], (a, b)
    assert cache == {"a": a, "b": b}


def test_a_failed_build_lets_the_waiting_thread_build_it():
    cache, calls, started = {}, [], threading.Event()

    def make():
        calls.append(1)
        if len(calls) == 1:
            started.set()
            threading.Event().wait(0.2)
            raise ValueError("first build fails")
        return "second"

    def first():
        with pytest.raises(ValueError):
            once.build(cache, "k", make)
        return "raised"

    def second():
        assert started.wait(10)
        return once.build(cache, "k", make)

    assert _in_threads(first, second) == ["raised", "second"]
    assert cache == {"k": "second"} and len(calls) == 2


def ping(x, n):
    if n == 0:
        return snp.sin(x)
    return pong(x * 2.0, n - 1)


def pong(x, n):
    if n == 0:
        return snp.cos(x)
    return ping(x + 1.0, n - 1)


def test_threads_differentiating_a_mutual_recursion_from_both_ends(monkeypatch):
    from secant import transforms
    barrier, seen = threading.Barrier(2, timeout=10), set()
    generate = transforms._generate

    def both_in_progress(fn, wrt, mode, *rest):
        # each thread holds one callee's derivative before asking for the other's: thread 1
        # then waits for thread 2, which finds the wait would close a cycle and calls it
        # recursively, as one thread would
        if mode != "grad" and fn.__name__ in ("ping", "pong") and fn.__name__ not in seen:
            seen.add(fn.__name__)
            barrier.wait()
        return generate(fn, wrt, mode, *rest)
    monkeypatch.setattr(transforms, "_generate", both_in_progress)
    x = np.float32(0.3)
    d_ping, d_pong = _in_threads(lambda: secant.grad(ping)(x, 3),
                                 lambda: secant.grad(pong)(x, 3), timeout=30)
    # ping(x, 3) = pong(2x, 2) = ping(2x + 1, 1) = cos(4x + 2); pong(x, 3) = sin(2x + 3)
    np.testing.assert_allclose(float(d_ping), -4 * np.sin(4 * 0.3 + 2), rtol=1e-5)
    np.testing.assert_allclose(float(d_pong), 2 * np.cos(2 * 0.3 + 3), rtol=1e-5)
