"""A Python list recording a loop's counter in a while body (`log.append(i)`, issue 15): JAX
runs the Python while as written where its test is concrete (a counter), under jit too (once
per trace), and refuses a test on a traced value under jit. secant follows that; the list
returned as an aux is the one the forward pass built (silently the first iteration's before:
the reverse loop restored the saved `log`, ad/reverse.py _kept_from_reverse)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

X = np.array([0.3, 1.0])
LOG = []


def recorded(x, n):
    log = []
    i = 0
    while i < n:
        log.append(i)
        x = x * 1.5
        i = i + 1
    return snp.sum(x), log


def logged(x):
    i = 0
    while i < 3:
        LOG.append(i)
        x = snp.sin(x)
        i += 1
    return snp.sum(x)


def traced_test(x):
    i = 0
    while snp.sum(x) < 10.0:
        LOG.append(i)
        x = x * 1.5
        i = i + 1
    return snp.sum(x)


def test_the_aux_log_is_the_forward_pass_list(x64):
    """grad(f, has_aux=True): [0, 1, 2], as JAX (was [] before)."""
    g, log = secant.grad(recorded, has_aux=True)(X, 3)
    assert log == [0, 1, 2] and all(type(i) is int for i in log)
    np.testing.assert_allclose(np.asarray(g), np.full(2, 1.5 ** 3), rtol=1e-12)
    (value, log), g = secant.value_and_grad(recorded, has_aux=True)(X, 3)
    assert log == [0, 1, 2]
    np.testing.assert_allclose(float(value), np.sum(X) * 1.5 ** 3, rtol=1e-12)
    for transform in (secant.jacrev, secant.jacfwd, secant.hessian):
        _, log = transform(recorded, has_aux=True)(X, 4)
        assert log == [0, 1, 2, 3], transform
    g, log = secant.jit(secant.grad(recorded, has_aux=True), static_argnums=1)(X, 3)
    assert [int(i) for i in log] == [0, 1, 2]       # (jit's outputs are arrays, as JAX's)
    np.testing.assert_allclose(np.asarray(g), np.full(2, 1.5 ** 3), rtol=1e-12)


@pytest.mark.parametrize("transform", ["eager", "jit", "grad", "jit_grad", "vmap",
                                       "vmap_grad"])
def test_a_global_log_of_the_counter_once_per_call(x64, transform):
    """The while on a Python counter runs as Python under every transform (jit included):
    LOG records 0, 1, 2 once per call (once per trace under jit), the values as a loop's."""
    f = {"eager": logged, "jit": secant.jit(logged), "grad": secant.grad(logged),
         "jit_grad": secant.jit(secant.grad(logged)), "vmap": secant.vmap(logged),
         "vmap_grad": secant.vmap(secant.grad(logged))}[transform]
    x = np.stack([X, 2 * X]) if transform.startswith("vmap") else X
    del LOG[:]
    got = np.asarray(f(x))
    assert LOG == [0, 1, 2]
    rows = x if x.ndim == 2 else [x]
    if "grad" in transform:
        want = [np.cos(v) * np.cos(np.sin(v)) * np.cos(np.sin(np.sin(v))) for v in rows]
    else:
        want = [np.sum(np.sin(np.sin(np.sin(v)))) for v in rows]
    np.testing.assert_allclose(got, want[0] if x.ndim == 1 else want, rtol=1e-6)
    if transform.startswith("jit"):
        del LOG[:]
        f(x)        # (traced once: no Python runs again)
        assert LOG == []


def test_a_log_in_a_while_on_a_traced_test_is_refused_under_jit(x64):
    """JAX refuses it too (TracerBoolConversionError): a clear SecantError at the user's line,
    before any append; eager and grad run it as Python."""
    del LOG[:]
    for f in (secant.jit(traced_test), secant.jit(secant.grad(traced_test))):
        with pytest.raises(secant.SecantError, match=r"test_state15l_log.py:\d+[\s\S]*while "
                                                     r"snp.sum\(x\) < 10.0"):
            f(X)
    assert LOG == []
    np.testing.assert_allclose(np.asarray(secant.grad(traced_test)(X)), np.full(2, 1.5 ** 6))
    assert LOG == [0, 1, 2, 3, 4, 5]


def test_hessian_has_aux(x64):
    """hessian(f, has_aux=True) -> (hessian, aux), as JAX's (jacfwd(jacrev(f, has_aux=True),
    has_aux=True) gave aux None before: the nested Jacobian dropped the inner one's)."""
    def f(x):
        return snp.sum(x ** 3), {"a": x * 2.0, "n": 3}
    for h, aux in (secant.hessian(f, has_aux=True)(X),
                   secant.jacfwd(secant.jacrev(f, has_aux=True), has_aux=True)(X),
                   secant.jacrev(secant.jacfwd(f, has_aux=True), has_aux=True)(X)):
        np.testing.assert_allclose(np.asarray(h), np.diag(6 * X), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(aux["a"]), 2 * X, rtol=1e-12)
        assert aux["n"] == 3


def test_a_closure_log_of_the_counter(x64):
    """The list in the enclosing function's scope: each call appends 0, 1, 2 (each trace under
    jit), the values as the Python loop's."""
    def make():
        log = []

        def f(x):
            i = 0
            while i < 3:
                log.append(i)
                x = snp.sin(x)
                i += 1
            return snp.sum(x)
        return f, log
    f, log = make()
    for t, runs in ((secant.jit(f), 1), (secant.grad(f), 2), (secant.jit(secant.grad(f)), 1),
                    (secant.hessian(f), 2)):
        del log[:]
        t(X)
        got = t(X)
        assert log == [0, 1, 2] * runs
    def g(v):
        return np.cos(v) * np.cos(np.sin(v)) * np.cos(np.sin(np.sin(v)))
    np.testing.assert_allclose(np.asarray(secant.grad(f)(X)), g(X), rtol=1e-12)
    h = 1e-6      # (the hessian: diagonal, the central differences of g)
    np.testing.assert_allclose(np.asarray(got), np.diag((g(X + h) - g(X - h)) / (2 * h)),
                               rtol=1e-6, atol=1e-9)
