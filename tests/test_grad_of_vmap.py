"""grad of (a sum of) a vmapped per-example gradient, and the run-time callee's jvp and vmap of
recursion under further transforms (issue 15, section 4): values against float64 finite
differences."""

import numpy as np
import pytest

import secant
import secant.numpy as snp

H = 1e-6


def _fd_grad(f, x):
    """Central finite differences of a scalar f at float64 x."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[idx] = H
        out[idx] = (float(f(x + e)) - float(f(x - e))) / (2 * H)
    return out


def _grad_vmap_grad(f, xs):
    """grad(sum(vmap(grad(f))(xs))) and its finite-difference reference (the sum over examples
    of f's second derivative, per example)."""
    vf = secant.vmap(secant.grad(f))

    def total(xs):
        return snp.sum(vf(xs))

    def total_ref(xs):
        return sum(float(secant.grad(f)(x)) for x in xs)
    return np.asarray(secant.grad(total)(xs)), _fd_grad(total_ref, xs)


def sin_times_x(x):
    return snp.sin(x) * x


def bare_list(x):
    return snp.mean([snp.sin(x), x * x])


def tuple_out(x):
    a, b = _pair(x)
    return a * b


def _pair(x):
    return snp.sin(x), snp.exp(-x * x)


@pytest.mark.parametrize("f", [sin_times_x, bare_list, tuple_out])
def test_grad_of_sum_of_vmapped_grad(x64, f):
    """grad_seed_batched was desugared (its `a if c else b`) and then read as a derivative's
    own code (a `<secant: ...>` file): refused as 'the Python loop of a derivative'."""
    got, want = _grad_vmap_grad(f, np.array([0.3, -0.5, 0.7]))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_per_example_gradient_penalty(x64):
    """A gradient penalty: grad over w of the mean squared per-example input gradient."""
    xs = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.8]])

    def loss(w, x):
        return snp.tanh(snp.sum(w * x)) ** 2

    per_example_grad = secant.vmap(secant.grad(loss, 1), in_axes=(None, 0))

    def penalty(w):
        per_example = per_example_grad(w, xs)
        return snp.mean(snp.sum(per_example ** 2, axis=1))

    def penalty_ref(w):
        grads = [np.asarray(secant.grad(loss, 1)(w, x)) for x in xs]
        return np.mean([np.sum(g ** 2) for g in grads])

    w = np.array([0.7, -1.1])
    np.testing.assert_allclose(secant.grad(penalty)(w), _fd_grad(penalty_ref, w),
                               rtol=1e-5, atol=1e-7)


def test_desugared_code_keeps_its_appends(x64):
    """A list aliased only after its last append (`tuple(out) if c else out`, desugared to
    `chosen = out`) is still rewritten to concatenations (was: `out.append(...)` refused as a
    dropped result)."""
    def f(x):
        out = []
        for k in range(3):
            out.append(x ** (k + 1))
        both = tuple(out) if x.ndim == 0 else out
        return both[0] + both[1] * both[2]

    x = 0.6
    # f = x + x^5: f' = 1 + 5 x^4
    np.testing.assert_allclose(secant.grad(f)(x), 1 + 5 * x ** 4, rtol=1e-10)


def test_alias_before_an_append_is_not_rewritten(x64):
    """An alias made before an append would see the append: the list is not rewritten to a
    concatenation (which would leave the alias stale); the transform refuses or is right."""
    def f(x):
        out = []
        alias = out
        out.append(x * x)
        return snp.sum(snp.stack(alias))

    try:
        got = secant.grad(f)(0.4)
    except secant.SecantError:
        return
    np.testing.assert_allclose(got, 0.8, rtol=1e-10)


class _Scale:
    def __init__(self, a):
        self.a = a

    def __call__(self, x):
        return snp.sin(self.a * x)


def _call_each(fns, x):
    return sum(fn(x) for fn in fns)


@pytest.mark.parametrize("outer", ["grad", "jvp", "vmap"])
def test_run_time_callee_jvp_composes(x64, outer):
    """The jvp of a call whose callee is known only at run time (a callable object from a
    list) is itself generated code: grad, jvp and vmap of it work (was: no derivative or
    batching rule for jvp_call)."""
    fns = [_Scale(2.0), _Scale(-0.5)]

    def f(x):
        total = 0.0
        for k in range(2):
            total = total + fns[k](x)
        return total

    def df(x):                              # d/dx f along 1
        return secant.jvp(f, (x,), (1.0,))[1]

    def df_ref(x):
        return 2.0 * np.cos(2.0 * x) - 0.5 * np.cos(-0.5 * x)

    x = 0.3
    if outer == "grad":
        want = -4.0 * np.sin(2.0 * x) - 0.25 * np.sin(-0.5 * x)
        np.testing.assert_allclose(secant.grad(df)(x), want, rtol=1e-8)
    elif outer == "jvp":
        want = -4.0 * np.sin(2.0 * x) - 0.25 * np.sin(-0.5 * x)
        np.testing.assert_allclose(secant.jvp(df, (x,), (1.0,))[1], want, rtol=1e-8)
    else:
        xs = np.array([0.3, -0.2, 1.1])
        np.testing.assert_allclose(secant.vmap(df)(xs), [df_ref(v) for v in xs], rtol=1e-8)


def _power(x, n):
    if n == 0:
        return 1.0
    return x * _power(x, n - 1)


def _branching(x, depth):
    if depth == 0:
        return snp.sin(x)
    return _branching(x, depth - 1) + _branching(0.5 * x, depth - 1)


@pytest.mark.parametrize("compose", ["jit∘vmap", "jit∘vmap∘grad"])
def test_jit_of_vmap_of_recursion(x64, compose):
    """jit stages the recursion's `if` into branch functions that call it back (mutual
    recursion under vmap): was an AttributeError on the in-progress function."""
    xs = np.array([0.3, -0.7, 1.2])

    def f(x):
        return _power(x, 4) + _branching(x, 2)

    def f_ref(x):
        return x ** 4 + np.sin(x) + 2 * np.sin(0.5 * x) + np.sin(0.25 * x)

    if compose == "jit∘vmap":
        got, want = secant.jit(secant.vmap(f))(xs), f_ref(xs)
    else:
        got = secant.jit(secant.vmap(secant.grad(f)))(xs)
        want = [_fd_grad(f_ref, v) for v in xs]
    np.testing.assert_allclose(np.asarray(got), np.ravel(want), rtol=1e-6, atol=1e-8)
