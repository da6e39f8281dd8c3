"""Python state a callee advances (issue 15, after obj15k): a local that shares its name with
a global counter is the function's own value, not a read of the counter, so a reverse pass
need not refuse it; a Jacobian that must refuse (a callee's replay would read the counter the
call already advanced) refuses before it runs the user's code, as grad does."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
import tests.test_obj15k_state as state
from tests.central_differences import grad_fd

X = np.array([0.3, -1.2, 2.0])


def constant_local(x):
    calls = 3.0                 # (a local: the global `calls` gstep advances is not read)
    return snp.sum(x * calls) + state.gstep(x)


def length_local(x):
    calls = len(x)
    return snp.sum(x * calls) + state.gstep(x)


def parameter(x, calls=2.0):
    return snp.sum(x * calls) + state.gstep(x)


@pytest.mark.parametrize("f, k", [(constant_local, 3.0), (length_local, 3.0), (parameter, 2.0)],
                         ids=["constant", "len", "parameter"])
@pytest.mark.parametrize("transform", ["grad", "jacrev"])
def test_a_local_named_like_a_global_counter_is_not_refused(x64, f, k, transform):
    for _ in range(2):
        before = state.calls
        got = np.asarray(getattr(secant, transform)(f)(X))
        assert state.calls == before + 1        # (once per call)
        want = grad_fd(lambda x: np.sum(x * k) + np.sum(np.sin(x)) * (before + 1), X)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def read_through_the_module(x):
    y = snp.sum(x * state.calls)    # (the global, read as a module attribute before gstep)
    return y + state.gstep(x)


def test_the_counter_read_as_a_module_attribute_first(x64):
    """Its reverse pass read the value gstep advanced (silently wrong before effects19, then
    refused): since state15l the caller binds the read where it runs (ad/state_inputs.py), as
    jacfwd reads it where the call does; jacrev (a recompute of the caller), refused before
    state15o, takes it by forward mode."""
    for transform in ("grad", "jacfwd"):
        before = state.calls
        got = np.asarray(getattr(secant, transform)(read_through_the_module)(X))
        assert state.calls == before + 1
        np.testing.assert_allclose(got, before + np.cos(X) * (before + 1), rtol=1e-6)
    before = state.calls
    got = np.asarray(secant.jacrev(read_through_the_module)(X))
    assert state.calls == before + 1
    np.testing.assert_allclose(got, before + np.cos(X) * (before + 1), rtol=1e-6)


@pytest.mark.parametrize("transform", ["jacrev", "hessian"])
def test_a_jacobian_whose_reverse_pass_would_read_state_again(x64, transform):
    """Refused before state15o (early's vjp would run it again after the call set n): by
    forward mode now, the cell advanced once per call."""
    _, early, get = state.make()

    def through(x):             # early's vjp would run it again after the call set n
        return early(x) * 2.0
    for f, k in ((early, 1.0), (through, 2.0)) if transform == "hessian" else ((through, 2.0),):
        b = get()
        got = np.asarray(getattr(secant, transform)(f)(X))
        assert get() == b + 1
        want = np.zeros((3, 3)) if transform == "hessian" else np.full(3, k * (b * (b + 1) + 1))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_a_callee_counter_advances_its_own_cell(x64):
    """A closure counter's function with the code of one transformed before reads and advances
    its own cell, not that one's (secant/code_cache.py makes no template of a derivative
    holding the cells, global_writes._Cells): found by test order, silently wrong before."""
    _, early_a, get_a = state.make()
    secant.jacfwd(early_a)(X)           # (made for early_a's cell)
    _, early, get = state.make()

    def through(x):
        return early(x) * 2.0
    before, other = get(), get_a()
    got = np.asarray(secant.jacfwd(through)(X))     # (jacfwd reads it where the call does)
    assert (get(), get_a()) == (before + 1, other)
    np.testing.assert_allclose(got, 2 * grad_fd(
        lambda x: np.sum(x * before * (before + 1) + x), X), rtol=1e-6)
