"""A variable first assigned inside a Python loop that an iteration may leave unassigned (break,
continue, an if) and that is read after the loop: its loop name has no value before the first
iteration (transformer/normalize.py gives it an `unbound_before_loop` placeholder).

Derivatives are checked against float64 central finite differences of the user's function
(second derivatives against the second central difference); a loop that never assigns the
variable raises UnboundLocalError eagerly and under every transform, never returns a value.

The functions live at module level: the transforms read their source."""

import numpy as np
import pytest

import secant
import secant.numpy as snp


# --- functions under test ----------------------------------------------------------------------
def for_break(x, xs=(0.5, 1.0, 2.0, 3.0)):         # the reported case
    for a in xs:
        y = a * snp.sin(x)
        if a > 1.5:
            break
    return y


def while_break(x):
    i = 0
    while i < 10:
        y = i * snp.sin(x) + snp.cos(x * i)
        if i > 2:
            break
        i = i + 1
    return y


def break_before_assign(x, xs=(0.5, 1.0, 2.0, 3.0)):
    for a in xs:
        if a > 2.5:
            break
        y = snp.exp(a * x)
    return y * x


def continue_first(x, xs=(0.5, 1.0, 2.0, 3.0)):
    for a in xs:
        if a < 1.5:
            continue
        y = a * snp.sin(x) * x
    return y


def assigned_under_if(x, xs=(0.5, 2.0, 1.0, 3.0, 0.25)):
    for a in xs:
        if a > 1.5:
            y = snp.tanh(a * x)
    return y


def empty_loop(x, xs=()):
    for a in xs:
        y = a * snp.sin(x)
        if a > 1.5:
            break
    return y


def never_assigned(x, xs=(2.0, 3.0)):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    return y


def never_assigned_while(x):
    i = 0
    while i < 3:
        if i >= 0:
            break
        y = snp.sin(x)
        i = i + 1
    return y


FUNCTIONS = [for_break, while_break, break_before_assign, continue_first, assigned_under_if]
RAISING = [empty_loop, never_assigned, never_assigned_while]
POINTS = [0.3, -0.7]


def _fd(f, x, h=1e-6):
    return (float(f(np.float64(x + h))) - float(f(np.float64(x - h)))) / (2 * h)


def _fd2(f, x, h=1e-4):
    return (float(f(np.float64(x + h))) - 2 * float(f(np.float64(x)))
            + float(f(np.float64(x - h)))) / (h * h)


def _ids(fns):
    return [f.__name__ for f in fns]


@pytest.mark.parametrize("f", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_first_derivative(f, x64):
    for x in POINTS:
        want = _fd(f, x)
        for name, g in [("grad", secant.grad(f)), ("jit_grad", secant.jit(secant.grad(f))),
                        ("jacrev", secant.jacrev(f))]:
            got = float(g(np.float64(x)))
            assert abs(got - want) < 1e-6 * max(1.0, abs(want)), (name, x, got, want)
        value, tangent = secant.jvp(f, (np.float64(x),), (np.float64(1.0),))
        for got in (value, secant.jit(f)(np.float64(x))):
            assert abs(float(got) - float(f(np.float64(x)))) < 1e-12, (x, got)
        assert abs(float(tangent) - want) < 1e-6 * max(1.0, abs(want)), (x, tangent, want)


@pytest.mark.parametrize("f", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_second_derivative(f, x64):
    for x in POINTS:
        want = _fd2(f, x)
        for name, g in [("grad_grad", secant.grad(secant.grad(f))),
                        ("jacfwd_grad", secant.jacfwd(secant.grad(f)))]:
            got = float(g(np.float64(x)))
            assert abs(got - want) < 1e-4 * max(1.0, abs(want)), (name, x, got, want)


@pytest.mark.parametrize("f", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_vmap(f, x64):
    xs = np.array(POINTS, dtype=np.float64)
    want = np.array([_fd(f, x) for x in POINTS])
    got = np.asarray(secant.vmap(secant.grad(f))(xs))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    values = np.asarray(secant.vmap(f)(xs))
    np.testing.assert_allclose(values, [float(f(np.float64(x))) for x in POINTS], rtol=1e-12)


@pytest.mark.parametrize("f", RAISING, ids=_ids(RAISING))
def test_never_assigned_raises(f):
    x = np.float32(0.3)
    with pytest.raises(UnboundLocalError):
        f(x)
    transforms = {
        "grad": secant.grad(f), "jit": secant.jit(f), "jit_grad": secant.jit(secant.grad(f)),
        "vmap_grad": lambda v: secant.vmap(secant.grad(f))(snp.stack([v, v])),
        "vmap": lambda v: secant.vmap(f)(snp.stack([v, v])),
        "jvp": lambda v: secant.jvp(f, (v,), (np.float32(1.0),)),
        "grad_grad": secant.grad(secant.grad(f)),
        "jacfwd_grad": secant.jacfwd(secant.grad(f)),
    }
    for name, t in transforms.items():
        with pytest.raises(UnboundLocalError, match="'y'"):
            t(x)
            pytest.fail(f"{name} returned a value")


def test_generated_code_reads_well():
    """The placeholder is one line before the loop; the previous value is not saved."""
    text = str(secant.show(secant.grad(for_break)))
    assert "y_1 = unbound_before_loop('y')" in text
    assert "y_1_stack" not in text
    assert "check_bound(y_1)" in text


def traced_break(x, xs=(0.5, 1.0, 2.0, 3.0)):
    for a in xs:
        y = a * snp.sin(x)
        if a * x > 1.0:
            break
    return y


def test_traced_break_never_wrong(x64):
    """A break on a traced (jit) or batched (vmap) test: JAX refuses both; secant may refuse
    too (an error), but never returns a wrong value (vmap(grad) gave 0.0 for x = 0.8)."""
    xs = np.array([0.3, 0.8])
    want = np.array([_fd(traced_break, x) for x in xs])
    np.testing.assert_allclose([float(secant.grad(traced_break)(x)) for x in xs], want,
                               rtol=1e-6)
    runs = {"vmap_grad": lambda: secant.vmap(secant.grad(traced_break))(xs),
            "jit_grad": lambda: np.array([secant.jit(secant.grad(traced_break))(x)
                                          for x in xs])}
    for name, run in runs.items():
        try:
            got = np.asarray(run())
        except Exception as e:      # noqa: BLE001 (a refusal, as JAX's)
            assert "traced_break" in str(e) or "test_breakloop" in str(e) or \
                isinstance(e, secant.SecantError), (name, e)
            continue
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
