"""A new function with the code of one transformed before (`grad(lambda p: loss(p, batch))` in a
training loop) reuses that one's generated derivative, bound to its own cells
(secant/code_cache.py): each gets its own values' gradient, nothing is transformed again, and
a dropped closure still frees what it closed over."""
import gc
import weakref

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import code_cache, transforms


def loss(p, batch):
    return snp.sum(snp.tanh(batch @ p) ** 2)


def loss_grad(p, batch):     # closed form
    h = np.tanh(batch @ p)
    return batch.T @ (2 * h * (1 - h ** 2))


P = np.array([0.3, -0.2, 0.5])
RNG = np.random.default_rng(0)
BATCHES = [RNG.standard_normal((4, 3)) for _ in range(6)]


def _step(batch):
    return lambda p: loss(p, batch)


@pytest.fixture
def counted(monkeypatch):
    """How many times a derivative or batched function is generated anew."""
    calls = []
    real = transforms._generate

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)
    monkeypatch.setattr(transforms, "_generate", counting)
    return calls


RUNS = {
    "grad": (lambda f, b: secant.grad(f)(P), lambda b: loss_grad(P, b)),
    "value_and_grad": (lambda f, b: secant.value_and_grad(f)(P)[1], lambda b: loss_grad(P, b)),
    "jit_grad": (lambda f, b: secant.jit(secant.grad(f))(P), lambda b: loss_grad(P, b)),
    "vmap_grad": (lambda f, b: secant.vmap(secant.grad(f))(np.stack([P, 2 * P])),
                  lambda b: np.stack([loss_grad(P, b), loss_grad(2 * P, b)])),
    "vmap": (lambda f, b: secant.vmap(f)(np.stack([P, 2 * P])),
             lambda b: np.array([np.sum(np.tanh(b @ P) ** 2),
                                 np.sum(np.tanh(b @ (2 * P)) ** 2)])),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fresh_closures_get_their_own_values_without_a_new_transform(name, counted):
    run, want = RUNS[name]
    for b in BATCHES[:2]:   # (the first two generated: the second's kept as the template)
        run(_step(b), b)
    del counted[:]
    for b in BATCHES[2:]:
        np.testing.assert_allclose(run(_step(b), b), want(b), rtol=2e-5, atol=1e-6)
    assert counted == [], f"{name} generated {len(counted)} functions again for fresh closures"


def test_fresh_closures_against_central_differences():
    from central_differences import weighted_fd
    for b in BATCHES[:3]:
        want, _ = weighted_fd(lambda p: np.sum(np.tanh(b @ p) ** 2), P)
        np.testing.assert_allclose(secant.grad(_step(b))(P), want, rtol=1e-4, atol=1e-6)


def _power(n):
    return lambda x: snp.sum(x ** n)


def _flagged(flag, scale):
    def f(x):
        if flag:
            return snp.sum(snp.sin(x) * scale)
        return snp.sum(x * x * scale)
    return f


def _indexed(i):
    return lambda x: x[i] ** 3


def test_values_read_as_python_values_are_each_closures_own():
    x = np.array([0.5, 1.5, 2.0])
    for n in (1, 2, 3, 4):          # an int exponent: n x^(n-1)
        np.testing.assert_allclose(secant.grad(_power(n))(x), n * x ** (n - 1), rtol=1e-6)
        np.testing.assert_allclose(secant.jit(secant.grad(_power(n)))(x), n * x ** (n - 1),
                                   rtol=1e-5)
    for flag, scale in ((True, 2.0), (False, 3.0), (True, 0.5), (False, 1.0)):
        want = np.cos(x) * scale if flag else 2 * x * scale
        np.testing.assert_allclose(secant.grad(_flagged(flag, scale))(x), want, rtol=1e-6)
        np.testing.assert_allclose(secant.jit(secant.grad(_flagged(flag, scale)))(x), want,
                                   rtol=1e-5)
    for i in range(3):
        want = np.zeros(3)
        want[i] = 3 * x[i] ** 2
        np.testing.assert_allclose(secant.grad(_indexed(i))(x), want, rtol=1e-6)


def test_a_cell_that_holds_a_float_then_an_array():
    def make():
        c = 2.0
        f = lambda x: snp.sum(snp.sin(x * c))       # noqa: E731

        def set_c(v):
            nonlocal c
            c = v
        return f, set_c
    x = np.array([0.5, 1.0, 2.0])
    f, set_c = make()
    g = secant.grad(f)
    np.testing.assert_allclose(g(x), 2.0 * np.cos(2.0 * x), rtol=1e-6)
    c = np.array([1.0, -2.0, 3.0])
    set_c(c)
    np.testing.assert_allclose(g(x), c * np.cos(c * x), rtol=1e-6)
    f2, set_c2 = make()         # a fresh one (float) after, then an array again
    np.testing.assert_allclose(secant.grad(f2)(x), 2.0 * np.cos(2.0 * x), rtol=1e-6)
    set_c2(c)
    np.testing.assert_allclose(secant.grad(f2)(x), c * np.cos(c * x), rtol=1e-6)
    f3, set_c3 = make()
    set_c3(c)
    np.testing.assert_allclose(secant.jit(secant.grad(f3))(x), c * np.cos(c * x), rtol=1e-5)


def _calling(h):
    return lambda x: snp.sum(h(x))


def test_a_cell_holding_another_callee_is_differentiated_anew():
    x = np.array([0.5, 1.0, 2.0])
    for h, dh in ((snp.sin, np.cos), (snp.cos, lambda v: -np.sin(v)), (snp.exp, np.exp),
                  (snp.sin, np.cos)):
        np.testing.assert_allclose(secant.grad(_calling(h))(x), dh(x), rtol=1e-6)


def test_a_global_callee_rebound_after_the_template(monkeypatch):
    x = np.array([0.5, 1.0, 2.0])
    b = np.ones((2, 3))
    secant.grad(_step(b))(x)                # template made with `loss`
    monkeypatch.setitem(globals(), "loss", lambda p, batch: snp.sum((batch @ p) ** 3))
    np.testing.assert_allclose(secant.grad(_step(b))(x), b.T @ (3 * (b @ x) ** 2), rtol=1e-6)


class _Tracked(np.ndarray):
    """An array a weak reference can watch."""


@pytest.mark.parametrize("name", sorted(RUNS))
def test_templates_keep_no_closures_values(name):
    run, _ = RUNS[name]
    watches = []
    for k in range(3):      # the first makes the template, the others are bound from it
        big = RNG.standard_normal((4, 3)).view(_Tracked)
        watches.append(weakref.ref(big))
        run(_step(big), big)
        del big
    gc.collect()
    assert [w() is None for w in watches] == [True] * 3, f"{name} kept a closure's array"


def test_the_cache_can_be_turned_off(counted, monkeypatch):
    monkeypatch.setattr(code_cache, "enabled", [False])
    for b in BATCHES[:2]:
        np.testing.assert_allclose(secant.grad(_step(b))(P), loss_grad(P, b), rtol=2e-5)
    assert len(counted) >= 2


def test_jit_of_fresh_closures_compiles_one_program():
    """A closed-over array is a parameter of jit's program (backends/tracer.py Trace.hoist), not
    a literal: closures over other values of the same shape run the one compiled program, each
    with its own values."""
    from secant import api
    rng = np.random.default_rng(7)
    batches = [rng.standard_normal((5, 3)) for _ in range(5)]
    secant.jit(secant.grad(_step(batches[0])))(P)
    before = api.stats["compiles"]
    for b in batches[1:]:
        np.testing.assert_allclose(secant.jit(secant.grad(_step(b)))(P), loss_grad(P, b),
                                   rtol=2e-5, atol=1e-6)
        w = secant.device_put(b)    # (a device array closed over: its buffer passed as it is)
        np.testing.assert_allclose(secant.jit(lambda p: snp.tanh(w @ p))(P), np.tanh(b @ P),
                                   rtol=1e-5)
    assert api.stats["compiles"] - before <= 2, "each closure's values compiled a program"


def test_hoisted_arrays_in_loops_and_outputs():
    w = np.arange(6.0).reshape(2, 3)

    def f(x):
        def body(i, acc):           # (w in a loop body: a literal there, the region's own)
            return acc + w[0] * x
        return secant.lax.fori_loop(0, 3, body, x * w[1]), w    # (w itself an output)
    out, w_out = secant.jit(f)(P)
    np.testing.assert_allclose(out, P * w[1] + 3 * w[0] * P, rtol=1e-6)
    np.testing.assert_allclose(w_out, w)
    g = secant.jit(secant.grad(lambda x: snp.sum(f(x)[0] ** 2)))(P)
    v = P * w[1] + 3 * w[0] * P
    np.testing.assert_allclose(g, 2 * v * (w[1] + 3 * w[0]), rtol=1e-5)
    text = secant.jit(f).lower(P).as_text()     # (lowered text: literals, as before)
    assert "%arg0" in text and "%arg1" not in text
