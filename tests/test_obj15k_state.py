"""State that outlives a call (issue 15): a counter in a closure cell (`nonlocal n`), a module
global (`global calls`) or an object's attribute (`self.calls += 1`). JAX's eager transforms
run the Python body once per call, so the state advances once per transformed call and the
derivative uses the value the call read; jit reads it once per trace. secant follows that
(transformer/global_writes.py reads and writes the user's own cell or global), and refuses
where a reverse pass would read the state again after it changed (ad/reverse.py
_check_state_replayable); a caller differentiated at the top passes each call's state to its
callee's vjp (ad/state_inputs.py, state15l)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd


def make():
    n = 0

    def step(x):
        nonlocal n
        n += 1
        return snp.sum(snp.sin(x) * n)

    def early(x):           # reads n before its update: y uses the old n, the result the new
        nonlocal n
        y = x * n
        n += 1
        return snp.sum(y * n + x)
    return step, early, lambda: n


calls = 0


def gstep(x):
    global calls
    calls += 1
    return snp.sum(snp.sin(x) * calls)


class Model:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return snp.sum(snp.sin(x) * self.calls)


X = np.array([0.3, -1.2, 2.0])


def _ref(x, n):
    return np.sum(np.sin(x) * n)


def _counters():
    step, _, get = make()
    m = Model()

    def read_global():
        return calls
    return [("nonlocal", step, get), ("global", gstep, read_global), ("attribute", m,
                                                                       lambda: m.calls)]


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_counter_advances_once_per_call_and_the_gradient_uses_it(x64, kind):
    name, f, get = _counters()[kind]

    def total(x):           # (also through a caller: the counter's function a callee)
        return f(x) * 2.0
    for g, scale in ((secant.grad(f), 1.0), (secant.grad(total), 2.0)):
        for _ in range(3):
            before = get()
            got = np.asarray(g(X))
            assert get() == before + 1, name
            want = grad_fd(lambda x: scale * _ref(x, before + 1), X)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_counter_under_jvp_vmap_hessian_jit(x64, kind):
    name, f, get = _counters()[kind]
    xs = np.stack([X, X + 0.5])
    b = get()
    _, t = secant.jvp(f, (X,), (np.ones(3),))
    assert get() == b + 1
    np.testing.assert_allclose(np.asarray(t), np.sum(np.cos(X)) * (b + 1), rtol=1e-10)
    b = get()
    got = np.asarray(secant.vmap(f)(xs))
    assert get() == b + 1, name
    np.testing.assert_allclose(got, [_ref(v, b + 1) for v in xs], rtol=1e-12)
    b = get()
    got = np.asarray(secant.vmap(secant.grad(f))(xs))
    assert get() == b + 1
    np.testing.assert_allclose(got, [np.cos(v) * (b + 1) for v in xs], rtol=1e-12)
    b = get()
    got = np.asarray(secant.hessian(f)(X))
    assert get() == b + 1
    np.testing.assert_allclose(got, np.diag(-np.sin(X) * (b + 1)), rtol=1e-10, atol=1e-12)
    b = get()
    jg = secant.jit(secant.grad(f))
    first = [np.asarray(jg(X)) for _ in range(3)]       # traced once: read once
    assert get() == b + 1
    for v in first:
        np.testing.assert_allclose(v, np.cos(X) * (b + 1), rtol=1e-12)


def test_read_before_update_at_top_level(x64):
    """y = x * n; n += 1: the function's own derivative reads each n where the call did."""
    _, early, get = make()
    for t in ("grad", "jacfwd"):
        b = get()
        got = np.asarray(getattr(secant, t)(early)(X))
        assert get() == b + 1
        want = grad_fd(lambda x: np.sum(x * b * (b + 1) + x), X)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    b = get()
    got = np.asarray(secant.vmap(early)(np.stack([X, 2 * X])))
    assert get() == b + 1
    np.testing.assert_allclose(got, [np.sum(v * b * (b + 1) + v) for v in (X, 2 * X)])


def test_replays_that_read_changed_state_follow_jax(x64):
    """Refused before (obj15k); since state15l a caller passes each call's state to its vjp
    (ad/state_inputs.py): JAX's values, the counter once per call. An attribute counter read
    first (refused before state15o) by forward mode."""
    _, early, get = make()

    def through(x):         # early's vjp reads n as the call read it on entry
        return early(x) * 2.0

    def twice(x):           # each gstep's vjp reads its own call's count
        return gstep(x) * gstep(x)

    def read_first(x):      # its reverse pass reads calls as it was before gstep
        return snp.sum(x * calls) + gstep(x)
    b = get()
    np.testing.assert_allclose(np.asarray(secant.grad(through)(X)),
                               2 * grad_fd(lambda x: np.sum(x * b * (b + 1) + x), X), rtol=1e-6)
    assert get() == b + 1
    b = calls
    np.testing.assert_allclose(np.asarray(secant.grad(twice)(X)),
                               2 * (b + 1) * (b + 2) * np.sum(np.sin(X)) * np.cos(X), rtol=1e-10)
    assert calls == b + 2
    b = calls
    np.testing.assert_allclose(np.asarray(secant.grad(read_first)(X)),
                               b + (b + 1) * np.cos(X), rtol=1e-10)
    assert calls == b + 1
    m = Model()

    def attribute_first(x):
        return snp.sum(x * m.calls) + m(x)
    c = m.calls
    np.testing.assert_allclose(np.asarray(secant.grad(attribute_first)(X)),
                               c + (c + 1) * np.cos(X), rtol=1e-10)
    assert m.calls == c + 1
    b = calls
    np.testing.assert_allclose(np.asarray(secant.jacfwd(twice)(X)),
                               np.cos(X) * (b + 1) * np.sum(np.sin(X)) * (b + 2) +
                               np.sum(np.sin(X)) * (b + 1) * np.cos(X) * (b + 2), rtol=1e-10)
    assert calls == b + 2


def test_attribute_read_before_update_in_reverse(x64):
    class Early:
        calls = 0

        def __call__(self, x):
            y = x * self.calls
            self.calls += 1
            return snp.sum(y * self.calls)
    m = Early()
    b = m.calls         # (refused before state15o: by forward mode now)
    np.testing.assert_allclose(np.asarray(secant.grad(m)(X)), np.full(3, b * (b + 1.0)))
    assert m.calls == b + 1
    b = m.calls
    np.testing.assert_allclose(np.asarray(secant.jacfwd(m)(X)), np.full(3, b * (b + 1.0)))
    assert m.calls == b + 1
