"""Every library function in tests/library_cases/ checked the same way (see its docstring)."""
import importlib
import pkgutil

import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests import library_cases

from user_programs import checks


def _all_cases():
    out = []
    for info in pkgutil.iter_modules(library_cases.__path__):
        mod = importlib.import_module(f"tests.library_cases.{info.name}")
        for case in getattr(mod, "CASES", ()):
            out.append(pytest.param(case, id=case.name + (f"[{case.id}]" if case.id else "")))
    return out


CASES = _all_cases()


# XLA compiles are most of this file's CPU time (118 of 200 CPU s, 819 compiles; bench/
# pytest_cpu.py): compiled with LLVM's optimisation off in the default profile (conftest)
pytestmark = pytest.mark.usefixtures("fast_compiles")


def _inputs(case, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(np.complex128 if case.complex else np.float64)
    make = case.make or _uniform
    return [np.asarray(make(rng, batch + tuple(s), dtype)) for s in case.shapes]


def _uniform(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dtype)


def _close(got, want, case):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=case.rtol,
                               atol=case.atol)


@pytest.mark.parametrize("case", CASES)
def test_value_jit_and_vmap(x64, case):
    xs = _inputs(case)
    out = case.fn(*xs)
    if case.ref is not None:
        _close(out, case.ref(*xs), case)
    if not case.differentiable:     # (a differentiable case's jit value is checked beside its
        _close(secant.jit(case.fn)(*xs), out, case)     # gradients, in the same program)
    batch = _inputs(case, seed=1, batch=(2,))
    want = np.stack([np.asarray(case.fn(*[b[i] for b in batch])) for i in range(2)])
    _close(secant.vmap(case.fn)(*batch), want, case)


def _loss(case, weights):
    """sum(real(fn(*xs) * w)) with fixed weights, as a function of one positional argument."""
    n = len(case.shapes)
    if n == 1:
        return lambda a: snp.sum(snp.real(case.fn(a) * weights))
    if n == 2:
        return lambda a, b: snp.sum(snp.real(case.fn(a, b) * weights))
    if n == 3:
        return lambda a, b, c: snp.sum(snp.real(case.fn(a, b, c) * weights))
    raise AssertionError("cases take at most three arrays")


def _fd(f, xs, k, eps=1e-6):
    """Central differences of real scalar f at xs with respect to xs[k] (JAX's convention for a
    complex argument: df/dx - 1j df/dy)."""
    x = xs[k]
    g = np.zeros(x.shape, x.dtype)
    for idx in np.ndindex(x.shape):
        for step, scale in ((1.0, 1.0),) + (((1j, -1j),) if x.dtype.kind == "c" else ()):
            e = np.zeros(x.shape, x.dtype)
            e[idx] = eps * step
            up = f(*[x + e if i == k else a for i, a in enumerate(xs)])
            down = f(*[x - e if i == k else a for i, a in enumerate(xs)])
            g[idx] += scale * (float(up) - float(down)) / (2 * eps)
    return g


# each case's gradients eagerly or under jit (jit's staged derivative: another transform), in
# turn; both for every case under HYPOTHESIS_PROFILE=thorough
GRADIENTS = [pytest.param(p.values[0], way, id=f"{p.id}-{way}") for p, way in checks.rotated(
    [p for p in CASES if p.values[0].differentiable], ["jit", "eager"])]


@pytest.mark.parametrize("case, way", GRADIENTS)
def test_grad_and_jvp_against_finite_differences(x64, case, way):
    xs = _inputs(case)
    out = np.asarray(case.fn(*xs))
    rng = np.random.default_rng(2)
    weights = rng.uniform(-1, 1, out.shape)
    if out.dtype.kind == "c":
        weights = weights + 1j * rng.uniform(-1, 1, out.shape)
    loss = _loss(case, weights)
    wants = [_fd(loss, xs, k) for k in range(len(xs))]
    grads = [secant.grad(loss, argnums=k) for k in range(len(xs))]
    if way == "eager":
        for grad, want in zip(grads, wants):
            _close(grad(*xs), want, case)
        _close(secant.jit(case.fn)(*xs), out, case)
    else:
        # the value and each argument's gradient in one program: one compile, not one for the
        # value and one an argument (compiles are most of this file's CPU time)
        value, jitted = secant.jit(lambda *xs: (case.fn(*xs), [g(*xs) for g in grads]))(*xs)
        _close(value, out, case)
        for got, want in zip(jitted, wants, strict=True):
            _close(got, want, case)
    tangents = _inputs(case, seed=3)
    eps = 1e-6
    up = np.asarray(case.fn(*[x + eps * t for x, t in zip(xs, tangents)]))
    down = np.asarray(case.fn(*[x - eps * t for x, t in zip(xs, tangents)]))
    _, tangent_out = secant.jvp(case.fn, tuple(xs), tuple(tangents))
    _close(tangent_out, (up - down) / (2 * eps), case)


