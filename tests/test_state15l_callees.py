"""A callee that advances Python state (a global or nonlocal counter), differentiated through
its caller in reverse mode (issue 15, after obj15k): JAX's eager grad runs the Python once and
each call reads the counter as it then is. secant's caller reads the state each call read and
passes it to the callee's vjp (ad/state_inputs.py), so calling it twice, or reading the
counter before and after it, gives JAX's values; the counter advances once per call."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd

X = np.array([0.3, -1.2, 2.0])
S = float(np.sum(np.sin(X)))

calls = 0


def gstep(x):
    global calls
    calls += 1
    return snp.sum(snp.sin(x) * calls)


def twice(x):
    return gstep(x) * gstep(x)


def read_around(x):         # the caller reads the counter before, between and after
    a = snp.sum(x * calls)
    y = gstep(x)
    b = snp.sum(x * x) * calls
    z = gstep(x)
    return a + y * b + z * calls


def middle(x):              # calls the counter's function: a caller of it sets state too
    return gstep(x) * 2.0


def middle_twice(x):
    return middle(x) * middle(x)


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

    def get():
        return n
    return step, early, get


def twice_ref(x, c):        # the Python replay: the counter c + 1 then c + 2
    return np.sum(np.sin(x)) * (c + 1) * np.sum(np.sin(x)) * (c + 2)


def read_around_ref(x, c):
    return (np.sum(x * c) + np.sum(np.sin(x)) * (c + 1) * np.sum(x * x) * (c + 1)
            + np.sum(np.sin(x)) * (c + 2) * (c + 2))


@pytest.mark.parametrize("f, ref", [(twice, twice_ref), (read_around, read_around_ref)],
                         ids=["twice", "read_around"])
def test_a_counter_callee_called_twice_under_grad(x64, f, ref):
    """Silently wrong before (read_around) or refused (twice): each call's vjp read the count
    the last call left."""
    for _ in range(2):
        before = calls
        got = np.asarray(secant.grad(f)(X))
        assert calls == before + 2
        np.testing.assert_allclose(got, grad_fd(lambda x: ref(x, before), X), rtol=1e-6)
        before = calls
        value, got = secant.value_and_grad(f)(X)
        assert calls == before + 2
        np.testing.assert_allclose(float(value), ref(X, before), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(got), grad_fd(lambda x: ref(x, before), X),
                                   rtol=1e-6)


def test_twice_closed_form_and_composed(x64):
    """d/dx (S (c+1)) (S (c+2)) = 2 (c+1)(c+2) S cos(x); its Hessian 2 (c+1)(c+2)
    (cos cos^T - S diag(sin))."""
    c = calls
    np.testing.assert_allclose(np.asarray(secant.grad(twice)(X)),
                               2 * (c + 1) * (c + 2) * S * np.cos(X), rtol=1e-12)
    c = calls
    h = np.asarray(secant.jacfwd(secant.grad(twice))(X))
    assert calls == c + 2
    np.testing.assert_allclose(h, 2 * (c + 1) * (c + 2) * (np.outer(np.cos(X), np.cos(X))
                                                           - S * np.diag(np.sin(X))),
                               rtol=1e-10, atol=1e-12)
    c = calls
    jg = secant.jit(secant.grad(twice))
    got = [np.asarray(jg(X + k)) for k in range(3)]     # traced once: the counter read once
    assert calls == c + 2
    for k, g in enumerate(got):
        v = X + k
        np.testing.assert_allclose(g, 2 * (c + 1) * (c + 2) * np.sum(np.sin(v)) * np.cos(v),
                                   rtol=1e-6)
    c = calls
    xs = np.stack([X, 2 * X])
    got = np.asarray(secant.vmap(secant.grad(twice))(xs))
    assert calls == c + 2
    np.testing.assert_allclose(got, [2 * (c + 1) * (c + 2) * np.sum(np.sin(v)) * np.cos(v)
                                     for v in xs], rtol=1e-10)


def test_grad_of_grad_of_a_counter_callee_called_twice(x64):
    """grad(grad(f)) of a scalar: the second derivative against the closed form."""
    def g(t):
        return gstep(t * X) * gstep(t * X)
    c = calls
    got = float(secant.grad(secant.grad(g))(0.7))
    assert calls == c + 2
    # g(t) = (c+1)(c+2) s(t)^2, s = sum sin(t X): g'' = 2(c+1)(c+2)(s'^2 + s s'')
    s = np.sum(np.sin(0.7 * X))
    s1 = np.sum(X * np.cos(0.7 * X))
    s2 = -np.sum(X * X * np.sin(0.7 * X))
    np.testing.assert_allclose(got, 2 * (c + 1) * (c + 2) * (s1 * s1 + s * s2), rtol=1e-10)


def test_nonlocal_counters_called_twice(x64):
    step, early, get = make()

    def both(x):
        return step(x) * step(x)

    def early_twice(x):     # early reads n on entry: passed its value before each call
        return early(x) + early(x) * 3.0
    for _ in range(2):
        b = get()
        np.testing.assert_allclose(np.asarray(secant.grad(both)(X)),
                                   2 * (b + 1) * (b + 2) * S * np.cos(X), rtol=1e-12)
        assert get() == b + 2
        b = get()
        got = np.asarray(secant.grad(early_twice)(X))
        assert get() == b + 2
        want = grad_fd(lambda x: np.sum(x * b * (b + 1) + x)
                       + 3 * np.sum(x * (b + 1) * (b + 2) + x), X)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_caller_of_a_counter_called_twice(x64):
    """middle(x) * middle(x): middle sets no state itself, but gstep does each time; silently
    wrong before (middle's vjp read the count the second call left), then refused; by
    forward mode since state15o (JAX's value, the counter once per call)."""
    c = calls
    got = np.asarray(secant.grad(middle_twice)(X))
    assert calls == c + 2
    np.testing.assert_allclose(got, 8 * (c + 1) * (c + 2) * S * np.cos(X), rtol=1e-10)


ticks = 0


def tick_and_step(x):       # sets state and calls another counter's function
    global ticks
    ticks += 1
    return gstep(x) * ticks


def test_a_counter_callee_that_calls_another_twice(x64):
    """Its vjp would read gstep's count as the last call left it (its state is not all its
    own, ad/state_inputs.py NotStateLeaf): by forward mode since state15o; called once,
    JAX's value."""
    def both(x):
        return tick_and_step(x) + tick_and_step(x)
    c, t = calls, ticks
    got = np.asarray(secant.grad(both)(X))
    assert (calls, ticks) == (c + 2, t + 2)
    np.testing.assert_allclose(got, ((c + 1) * (t + 1) + (c + 2) * (t + 2)) * np.cos(X),
                               rtol=1e-10)
    c, t = calls, ticks
    got = np.asarray(secant.grad(lambda x: tick_and_step(x) * 2.0)(X))
    assert (calls, ticks) == (c + 1, t + 1)
    np.testing.assert_allclose(got, 2 * (c + 1) * (t + 1) * np.cos(X), rtol=1e-10)


class Model:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return snp.sum(snp.sin(x) * self.calls)


model = Model()


def model_twice(x):
    return model(x) * model(x)


@pytest.mark.parametrize("transform", ["grad", "jacrev", "hessian"])
def test_a_callable_object_counter_called_twice(x64, transform):
    """model(x) * model(x) (an attribute counter, called through dynamic_call): silently wrong
    before (each vjp read the count the second call left; jacrev ran the calls twice), then
    refused; by forward mode since state15o, once per call; jacfwd gives JAX's value."""
    b = model.calls
    got = np.asarray(getattr(secant, transform)(model_twice)(X))
    assert model.calls == b + 2
    k = 2 * (b + 1) * (b + 2)
    want = k * (np.outer(np.cos(X), np.cos(X)) - S * np.diag(np.sin(X))) \
        if transform == "hessian" else k * S * np.cos(X)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    before = model.calls
    got = np.asarray(secant.jacfwd(model_twice)(X))
    assert model.calls == before + 2
    np.testing.assert_allclose(got, 2 * (before + 1) * (before + 2) * S * np.cos(X), rtol=1e-10)


def chain(x):               # a callee calling the counter's function once, called once
    return middle(x) + 1.0


def read_then_middle(x):    # reads the counter a callee's callee then advances
    return snp.sum(x * calls) + middle(x)


def test_nested_callees_once_each(x64):
    """chain -> middle -> gstep: JAX's values under grad, jit(grad), vmap(grad), the counter
    once per call; the counter read before a callee whose callee advances it: refused (its
    reverse pass would read the advanced count), before any user code runs."""
    c = calls
    np.testing.assert_allclose(np.asarray(secant.grad(chain)(X)), 2 * (c + 1) * np.cos(X),
                               rtol=1e-12)
    assert calls == c + 1
    c = calls
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(chain))(X)),
                               2 * (c + 1) * np.cos(X), rtol=1e-6)
    assert calls == c + 1
    c = calls
    xs = np.stack([X, X - 1])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(chain))(xs)),
                               2 * (c + 1) * np.cos(xs), rtol=1e-12)
    assert calls == c + 1
    c = calls       # (refused before state15o; by forward mode now)
    got = np.asarray(secant.grad(read_then_middle)(X))
    assert calls == c + 1
    np.testing.assert_allclose(got, c + 2 * (c + 1) * np.cos(X), rtol=1e-10)


def branch_then_call(x, n):     # gstep in a branch (not passed its state), then once more
    y = snp.sum(x)
    if n > 0:
        y = gstep(x)
    return y * gstep(x)


def test_a_counter_call_in_a_branch_then_another(x64):
    """The branch's gstep vjp would read the count the second call left (the second call,
    passed its state, still sets state after the first): refused before state15o, by
    forward mode now."""
    c = calls
    got = np.asarray(secant.grad(branch_then_call)(X, 1))
    assert calls == c + 2
    np.testing.assert_allclose(got, 2 * (c + 1) * (c + 2) * S * np.cos(X), rtol=1e-10)
