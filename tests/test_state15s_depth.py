"""Python state read or set by a callee of a callee of the transformed function (issue 15,
state15s): a nonlocal counter of a closure (flax's per-layer rng `fold_in(key, counter)`),
a global counter, an attribute counter, two and three calls deep, under grad, vjp, jvp, vmap,
jit(grad) and jacrev. Each derivative against float64 central differences of a Python run of
the same program, each count after the call against Python's.

A nested def that rebinds a local of its function through `nonlocal` and returns a value is
rewritten to take that state first and return it after its value (transformer/nonlocals.py
thread_rebound): `h = dropout(x)` -> `dropout_out, counter = dropout(counter, x)`, so the
state is data every transform follows to any depth; before, ad/reverse.py refused ('counter
is read before the function sets it')."""
from typing import NamedTuple

import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd

X = np.array([0.3, -1.2, 2.0])
TRANSFORMS = ["grad", "vjp", "jvp", "vmap", "jit_grad", "jacrev"]


# --- nonlocal counters of a closure -----------------------------------------------------------

def apply(x, deterministic=False):
    counter = 0

    def dropout(h, rate=0.5):           # (a default, an early return: flax's shape)
        nonlocal counter
        if deterministic:
            return h
        scale = counter + rate
        counter += 1
        return snp.sin(h) * scale

    h = dropout(snp.cos(x) * 1.5)
    h = dropout(h * 2.0) + counter      # (the state read after the call: 2)
    return h, counter


def two_deep(x):
    return snp.sum(apply(x)[0])


def model(x):
    return apply(x * 0.5)[0] + apply(x)[0]


def three_deep(x):
    return snp.sum(model(x) ** 2)


def reads_before(x):        # the state read before the call in the same statement
    n = 0

    def step(h):
        nonlocal n
        n += 1
        return snp.sin(h) * n

    y = n + step(x)
    return snp.sum(y * step(snp.cos(x) + step(x)))


def with_count(x):          # has_aux: the count the call left, Python's
    out, count = apply(x)
    return snp.sum(out), count


def _run(transform, f, x):
    if transform == "grad":
        return secant.grad(f)(x)
    if transform == "jit_grad":
        return secant.jit(secant.grad(f))(x)
    if transform == "jacrev":
        return secant.jacrev(f)(x)
    if transform == "vjp":
        return secant.vjp(f, x)[1](1.0)[0]
    if transform == "jvp":
        return np.array([float(secant.jvp(f, (x,), (e,))[1]) for e in np.eye(x.size)])
    assert transform == "vmap"
    return secant.vmap(f)(np.stack([x, 0.5 * x]))


def _check(transform, f, x, python):
    got = np.asarray(_run(transform, f, x))
    if transform == "vmap":
        want = [python(x), python(0.5 * x)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_allclose(got, grad_fd(python, x), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("f", [two_deep, three_deep, reads_before])
def test_nonlocal_counter_of_a_closure_deep(x64, f, transform):
    _check(transform, f, X, lambda v: float(f(v)))


def test_nonlocal_count_is_pythons(x64):
    """The count the closure left is Python's (2), eagerly, under jit and as grad's aux."""
    assert int(apply(X)[1]) == 2
    g, count = secant.grad(with_count, has_aux=True)(X)
    assert int(count) == 2
    np.testing.assert_allclose(np.asarray(g), grad_fd(lambda v: float(with_count(v)[0]), X),
                               rtol=1e-6)
    (v, count), g2 = secant.jit(secant.value_and_grad(with_count, has_aux=True))(X)
    assert int(count) == 2
    np.testing.assert_allclose(np.asarray(g2), np.asarray(g), rtol=1e-12)
    np.testing.assert_allclose(float(v), float(with_count(X)[0]), rtol=1e-12)


def test_deterministic_flag_still_reads_the_closure(x64):
    det = secant.grad(lambda x: snp.sum(apply(x, True)[0]))(X)
    # dropout returns h unchanged: sum(1.5 cos(x) * 2 + 0) -> -3 sin(x)
    np.testing.assert_allclose(np.asarray(det), -3.0 * np.sin(X), rtol=1e-12)


def test_the_closure_reads_as_code(x64):
    """The derivative's source calls the closure with its counter and rebinds it."""
    text = secant.source(secant.grad(reads_before))
    assert "step(n" in text and "nonlocal" not in text


def behind_a_condition(x):          # Python may skip the call: not rewritten, still refused
    n = 0

    def step(h):
        nonlocal n
        scale = n + 1.0
        n += 1
        return snp.sin(h) * scale

    y = step(x) if x[0] > 0 else x
    return snp.sum(y * step(x))


def test_call_behind_a_condition_still_refused(x64):
    with pytest.raises(secant.SecantError, match="read before the function sets it") as e:
        secant.grad(behind_a_condition)(X)
    assert __file__ in str(e.value)
    np.testing.assert_allclose(np.asarray(secant.jvp(behind_a_condition, (X,), (X,))[1]),
                               grad_fd(lambda v: float(behind_a_condition(v)), X) @ X,
                               rtol=1e-6)


# --- global and attribute counters, two and three calls deep ----------------------------------

calls = 0


def leaf(x):
    global calls
    scale = calls + 1.0
    calls += 1
    return snp.sin(x) * scale


def middle(x):
    return leaf(x) * 2.0


def top(x):
    return middle(x) + 1.0


def global_two(x):
    return snp.sum(leaf(x) + leaf(x * 1.5))


def global_three(x):
    return snp.sum(top(x) * top(x * 1.5))


class Layer:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        scale = self.calls + 1.0
        self.calls += 1
        return snp.sin(x) * scale


layer = Layer()


def through_layer(x):
    return layer(x) * 2.0


def attribute_two(x):
    return snp.sum(through_layer(x) * through_layer(x * 1.5))


def _reset():
    global calls
    calls = 0
    layer.calls = 0


def _count():
    return calls + layer.calls


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("f", [global_two, global_three, attribute_two])
def test_counter_deep_matches_python(x64, f, transform):
    def python(v):
        _reset()
        return float(f(v))
    python(X)
    want = _count()
    assert want == 2
    runs = X.size if transform == "jvp" else 1      # (one jvp per basis vector below)
    _reset()
    _check(transform, f, X, python) if transform != "jvp" else None
    if transform == "jvp":      # (each jvp call is a call: the count from 0 each time)
        for e in np.eye(X.size):
            _reset()
            t = float(secant.jvp(f, (X,), (e,))[1])
            assert _count() == want
            np.testing.assert_allclose(t, grad_fd(python, X) @ e, rtol=1e-6)
        return
    _reset()
    _run(transform, f, X)
    assert _count() == want * runs


def with_aux(x, y):
    return global_three(x * y), snp.sum(x) + calls     # (aux: the count after the call)


@pytest.mark.parametrize("how", ["grad", "value_and_grad", "jit_grad"])
def test_counter_deep_with_aux_and_two_argnums(x64, how):
    """has_aux and argnums=(0, 1) of a counter's function three calls deep: refused before
    ('top reads state it sets'); by forward mode now (one run of the Python), as plain grad
    of it was: both gradients against central differences, the aux and the count Python's."""
    def python(x, y):
        _reset()
        return float(with_aux(x, y)[0])
    y = 1.3
    want_x = grad_fd(python, X, y)
    h = 1e-6
    want_y = (python(X, y + h) - python(X, y - h)) / (2 * h)
    _reset()
    made = {"grad": secant.grad, "value_and_grad": secant.value_and_grad,
            "jit_grad": lambda f, **k: secant.jit(secant.grad(f, **k))}[how](
        with_aux, argnums=(0, 1), has_aux=True)
    got = made(X, y)
    assert _count() == 2
    if how == "value_and_grad":
        (value, aux), (gx, gy) = got
        np.testing.assert_allclose(float(value), python(X, y), rtol=1e-12)
    else:
        (gx, gy), aux = got
    np.testing.assert_allclose(float(aux), X.sum() + 2, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-6)
    np.testing.assert_allclose(float(gy), want_y, rtol=1e-6)


# --- a module-level frame stack holding the differentiated params (haiku's transform) ---------
_FRAMES = []


class Transformed(NamedTuple):
    init: object
    apply: object


class Frame:
    def __init__(self, params):
        self.params, self.counts = params, {}


def get_parameter(name):
    frame = _FRAMES[-1]
    frame.counts[name] = frame.counts.get(name, 0) + 1
    return frame.params.setdefault(name, 0.0)


def transform(f):
    def apply(params, *args):
        _FRAMES.append(Frame(params))
        try:
            return f(*args)
        finally:
            _FRAMES.pop()
    return Transformed(None, apply)


def forward(x):
    return secant.nn.relu(x * get_parameter("w")) * get_parameter("b")


net = transform(forward)


def frame_loss(params, x):
    return snp.sum(net.apply(params, x) ** 2)


@pytest.mark.parametrize("how", ["grad", "jit_value_and_grad"])
def test_params_read_back_from_a_global_frame_stack(x64, how):
    """l_32's shape, reduced: apply, a closure held in a global NamedTuple, pushes the
    differentiated params on a module-level list that get_parameter reads back (a frame
    object counting its reads). This reduction passed before too (its callee's vjp is traced);
    l_32 itself (test_explore15r_libraries) reached the trace for each call's arguments, which
    called the NamedTuple's apply as it is, on recording values ('asked for a NumPy array'):
    trace_source follows a namedtuple's functions now. Against central differences; the stack
    left empty."""
    params = {"w": np.asarray(0.7), "b": np.asarray(1.3)}

    def python(w, b):
        return float(np.sum((np.maximum(X * w, 0.0) * b) ** 2))
    h = 1e-6
    want = [(python(0.7 + h, 1.3) - python(0.7 - h, 1.3)) / (2 * h),
            (python(0.7, 1.3 + h) - python(0.7, 1.3 - h)) / (2 * h)]
    if how == "grad":
        g = secant.grad(frame_loss)(params, X)
    else:
        value, g = secant.jit(secant.value_and_grad(frame_loss))(params, X)
        np.testing.assert_allclose(float(value), python(0.7, 1.3), rtol=1e-12)
    np.testing.assert_allclose([float(g["w"]), float(g["b"])], want, rtol=1e-6)
    assert _FRAMES == []


def test_trace_runs_through_a_namedtuple_of_functions(x64):
    """The trace for a call's arguments (what l_32 reached) of a function calling net.apply,
    a closure held in a global NamedTuple: the trace called it as it is, on recording values,
    and refused ('asked for a NumPy array'); it runs through it now (trace_source
    _holds_followed), recording the ops apply and forward run, the params read back from the
    frame stack as the arguments' leaves."""
    from secant.transformer.trace_source import retraced
    params = {"w": np.asarray(0.7), "b": np.asarray(1.3)}
    traced = retraced(frame_loss, "a test", {"params": params, "x": X}, {"params"})
    text = secant.source(traced)
    assert "params['w']" in text and "relu(" in text and "_FRAMES" not in text
    g = secant.grad(traced)(params, X)
    want = secant.grad(frame_loss)(params, X)
    np.testing.assert_allclose([float(g["w"]), float(g["b"])],
                               [float(want["w"]), float(want["b"])], rtol=1e-12)
    assert _FRAMES == []
