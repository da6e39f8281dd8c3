"""A variable a loop never assigned (the loop broke first), read after the loop in any way - put
into a list, tuple or dict, copied, compared, passed on, read in a later loop: Python raises
UnboundLocalError at the read, and so does every transform (transformer/normalize.py writes
`check_bound(y_1)` before each statement that reads the loop's placeholder).

The same functions with a loop that does assign the variable are checked against float64
central finite differences (grad, jit(grad), jvp), a Python loop (vmap) and eager (jit), so the
check never changes a value. The functions live at module level: the transforms read their
source."""

import numpy as np
import pytest

import secant
import secant.numpy as snp

NEVER = (2.0, 3.0)      # the loop breaks before assigning y
ONCE = (1.0, 3.0)       # the loop assigns y once, then breaks


def in_list(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    out = [x, y]
    return out[0] + out[1] * x


def in_tuple(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    pair = (x, y)
    return pair[1] * 2.0 + pair[0]


def in_dict(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    d = {"a": x, "b": y}
    return d["a"] * 2 + d["b"]


def copied(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    w = y
    return x * 2 + w


def compared(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    q = x * 2
    if y is not None:
        q = q + y * y
    return q


def passed_on(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    return snp.sum(snp.stack([x, y]))


def later_loop(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    t = x
    for b in (1.0, 2.0):
        t = t + b * y
    return t


def augmented(x, xs=NEVER):
    for a in xs:
        if a > 1.5:
            break
        y = a * snp.sin(x)
    y += x
    return y


FUNCTIONS = [in_list, in_tuple, in_dict, copied, compared, passed_on, later_loop, augmented]
X = np.float64(0.3)


def _ids(fns):
    return [f.__name__ for f in fns]


def _transforms(f, xs):
    g = lambda v: f(v, xs)      # noqa: E731 (xs given: the loop's constants)
    return {
        "grad": lambda v: secant.grad(f)(v, xs),
        "jit": lambda v: secant.jit(f, static_argnums=1)(v, xs),
        "jit_grad": lambda v: secant.jit(secant.grad(f), static_argnums=1)(v, xs),
        "vmap": lambda v: secant.vmap(f, (0, None))(snp.stack([v, v]), xs),
        "vmap_grad": lambda v: secant.vmap(secant.grad(f), (0, None))(snp.stack([v, v]), xs),
        "jvp": lambda v: secant.jvp(g, (v,), (np.float64(1.0),)),
        "grad_grad": lambda v: secant.grad(secant.grad(f))(v, xs),
        "jacfwd_grad": lambda v: secant.jacfwd(secant.grad(f))(v, xs),
        "jacrev": lambda v: secant.jacrev(f)(v, xs),
    }


@pytest.mark.parametrize("f", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_every_transform_raises_at_the_read(f, x64):
    with pytest.raises(UnboundLocalError):
        f(X)
    for name, t in _transforms(f, NEVER).items():
        with pytest.raises(UnboundLocalError, match="'y'"):
            t(X)
            pytest.fail(f"{name} returned a value")


def _fd(f, x, h=1e-6):
    return (float(f(np.float64(x + h), ONCE)) - float(f(np.float64(x - h), ONCE))) / (2 * h)


@pytest.mark.parametrize("f", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_assigned_values_unchanged(f, x64):
    want = _fd(f, X)
    value = float(f(X, ONCE))
    t = _transforms(f, ONCE)
    for name in ("grad", "jit_grad", "jacrev"):
        got = float(t[name](X))
        assert abs(got - want) < 1e-6 * max(1.0, abs(want)), (name, got, want)
    assert abs(float(t["jit"](X)) - value) < 1e-12
    primal, tangent = t["jvp"](X)
    assert abs(float(primal) - value) < 1e-12
    assert abs(float(tangent) - want) < 1e-6 * max(1.0, abs(want))
    xs = np.array([0.3, -0.7])
    np.testing.assert_allclose(np.asarray(secant.vmap(f, (0, None))(xs, ONCE)),
                               [float(f(v, ONCE)) for v in xs], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f), (0, None))(xs, ONCE)),
                               [_fd(f, v) for v in xs], rtol=1e-6)


def test_check_sits_before_the_read():
    text = str(secant.show(secant.grad(in_list)))
    assert text.index("check_bound(y_1)") < text.index("out = [x, y_1]")


# --- a variable first assigned in a loop and read earlier in the next iteration ---------------
# (`prev`: the previous iteration's value) - grad, jvp and vmap(grad) gave wrong values (the
# read was taken for a global), jit(grad) a NameError
def previous_item(x):
    xs = [x, snp.sin(x), x * x, 2.0 * x]
    out = 0.0
    for i in range(4):
        v = xs[i]
        if i > 0:
            out = out + (v - prev) ** 2  # noqa: F821 (the previous iteration's)
        prev = v  # noqa: F841
    return out


def previous_value(x, ws=(1.0, 2.0, 3.0)):
    out = 0.0
    for w in ws:
        v = snp.sin(w * x)
        if w > 1.5:
            out = out + v * prev  # noqa: F821 (the previous iteration's)
        prev = v  # noqa: F841
    return out


def previous_read_too_early(x, ws=(2.0, 3.0)):
    out = 0.0
    for w in ws:
        v = snp.sin(w * x)
        if w > 1.5:
            out = out + v * prev  # noqa: F821 (Python: UnboundLocalError on the first iteration)
        prev = v  # noqa: F841
    return out


PREVIOUS = [previous_item, previous_value]


@pytest.mark.parametrize("f", PREVIOUS, ids=_ids(PREVIOUS))
def test_previous_iteration_value(f, x64):
    xs = np.array([0.3, -0.7, 1.1])
    fd = lambda v: (float(f(v + 1e-6)) - float(f(v - 1e-6))) / 2e-6     # noqa: E731
    for x in xs:
        want = fd(x)
        for name, g in [("grad", secant.grad(f)), ("jit_grad", secant.jit(secant.grad(f)))]:
            got = float(g(np.float64(x)))
            assert abs(got - want) < 1e-6 * max(1.0, abs(want)), (name, x, got, want)
        _, tangent = secant.jvp(f, (np.float64(x),), (np.float64(1.0),))
        assert abs(float(tangent) - want) < 1e-6 * max(1.0, abs(want))
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(xs)),
                               [fd(x) for x in xs], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)), [float(f(x)) for x in xs],
                               rtol=1e-12)


def test_previous_read_before_any_iteration_assigned_raises():
    with pytest.raises(UnboundLocalError):
        previous_read_too_early(0.3)
    for run in (secant.grad(previous_read_too_early), secant.jit(previous_read_too_early),
                lambda v: secant.vmap(secant.grad(previous_read_too_early))(snp.stack([v, v])),
                lambda v: secant.jvp(previous_read_too_early, (v,), (1.0,))):
        with pytest.raises(NameError, match="'prev'"):     # (UnboundLocalError is one; jit's
            run(np.float32(0.3))                            # staged branch reads a closure)
