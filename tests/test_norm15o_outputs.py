"""Issue 15 (norm15o): which outputs of a call unpacked into names (`v, n = helper(x)`) are
differentiated is what the callee's generated derivative says (its __secant_out_active__,
written by ad/forward.py and ad/reverse.py; secant/transforms.py _outputs_active), read by the
normaliser (transformer/normalize.py _call_outputs_active): the callee is no longer normalised
a second time on the side. A helper whose derivative is made from its trace (it passes a value
through a global) returns (value, n): n is a constant there, and read so. Gradients, Hessians
and jvps against float64 central differences; vmap against a Python loop.

And a function traced for each call's arguments whose own Python code fails there (a missing
dict key after a __slots__ object built from traced values) raises Python's own error at the
user's line (transformer/trace_source.py pythons_own), as running it does, not a refusal."""
import inspect
import traceback

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import transforms
from secant.transformer import normalize
from central_differences import grad_fd, hessian_fd
from test_norm15l_unpacked_calls import _value_and_count, uses_count

X = np.array([0.7, 0.4, 1.1, 0.9])


_CACHE = []


def _remembered(x):
    _CACHE.append(x * 2.0)
    return snp.sum(_CACHE[-1] ** 2), x.shape[0]


def uses_global(x):
    """(value, n) of a helper passing its value through a global list (traced: the trace's
    derivative says n is a constant)"""
    v, n = _remembered(x)
    _CACHE.clear()
    return v + snp.sum(x[: n - 1] ** 3)


def _where_pair(x):
    m = snp.max(x)
    return x / m, snp.argmax(x)


def uses_argmax(x):
    """(array, integer index): the index has no tangent"""
    y, i = _where_pair(x)
    return snp.sum(y ** 2) + x[i] ** 2


PROGRAMS = [uses_count, uses_global, uses_argmax]
TRANSFORMS = ["grad", "jit_grad", "hessian", "jacfwd_grad", "jvp", "vmap_grad"]


@pytest.mark.parametrize("how", TRANSFORMS)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_values(x64, f, how):
    if how == "grad":
        np.testing.assert_allclose(secant.grad(f)(X), grad_fd(f, X), rtol=1e-6, atol=1e-8)
    elif how == "jit_grad":
        np.testing.assert_allclose(secant.jit(secant.grad(f))(X), grad_fd(f, X), rtol=1e-6,
                                   atol=1e-8)
    elif how == "hessian":
        np.testing.assert_allclose(secant.hessian(f)(X), hessian_fd(f, X), rtol=1e-4,
                                   atol=1e-5)
    elif how == "jacfwd_grad":
        np.testing.assert_allclose(secant.jacfwd(secant.grad(f))(X), hessian_fd(f, X),
                                   rtol=1e-4, atol=1e-5)
    elif how == "jvp":
        t = np.array([0.3, -0.2, 0.5, 0.1])
        value, tangent = secant.jvp(f, (X,), (t,))
        np.testing.assert_allclose(value, f(X), rtol=1e-12)
        np.testing.assert_allclose(tangent, grad_fd(f, X) @ t, rtol=1e-6, atol=1e-8)
    else:
        xs = np.stack([X, X * 0.8, X + 0.1])
        got = secant.vmap(secant.grad(f))(xs)
        for x, g in zip(xs, got):
            np.testing.assert_allclose(g, grad_fd(f, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["jvp", "vjp", "vjp_out", "replay"])
def test_the_generated_callee_says_which_outputs_it_differentiates(mode):
    """ad/ records what it wrote: (value, count) -> (True, False) in every mode; (value,
    argmax) too (the index has neither tangent nor cotangent)."""
    for helper in (_value_and_count, _where_pair):
        assert transforms.generate(helper, (0,), mode).__secant_out_active__ == (True, False)


def test_no_callee_is_normalised_on_the_side(x64, monkeypatch):
    """The caller's canonical form reads the callee's derivative (generated once, for the
    call's own derivative too): normalize.py normalises no callee a second time."""
    def counted(fn, *args, **kwargs):
        seen.append(getattr(fn, "__name__", fn))
        return real(fn, *args, **kwargs)
    seen, real = [], normalize.normalise
    monkeypatch.setattr(normalize, "normalise", counted)

    def pair(x):        # (fresh functions: no derivative cached)
        return snp.sum(snp.cos(x) * x), x.shape[0]

    def caller(x):
        v, n = pair(x)
        return v * n + snp.sum(x[: n - 1])
    for make in (secant.grad, lambda f: secant.jacfwd(secant.grad(f)),
                 lambda f: secant.jit(secant.grad(f))):
        make(caller)(X)
    assert "pair" not in seen
    np.testing.assert_allclose(secant.grad(caller)(X), grad_fd(caller, X), rtol=1e-6,
                               atol=1e-8)


# --- constant outputs of a helper's branches and loops (the last known gap: errors, not values)
def _branchy(x):
    if snp.sum(x) > 0:
        return snp.sin(x), 2
    return snp.cos(x), 3


def uses_branch_count(x):
    """a helper's Python `if` on a differentiated value, each branch returning a Python int"""
    v, n = _branchy(x)
    total = snp.sum(v)
    for i in range(n):
        total = total + x[i] ** 2 / n
    return total


def _loop_pair(x):
    k = 0
    acc = x
    for i in range(3):
        acc = snp.sin(acc)
        k = k + 1
    return acc, k


def uses_loop_pair(x):
    """a Python int counted by a helper's loop over range(3)"""
    a, k = _loop_pair(x)
    return snp.sum(a) * k + snp.sum(x[:k])


def _scan_pair(x):
    def step(c, xi):
        return c + xi, c * xi
    c, ys = secant.lax.scan(step, 0.0, x)
    return c, ys, x.shape[0]


def uses_scan_pair(x):
    """(carry, ys, n) of a helper's lax.scan"""
    c, ys, n = _scan_pair(x)
    return c * snp.sum(ys) / n + snp.sum(x[: n - 1])


@pytest.mark.parametrize("f, how", [
    # (gaps15q: the helper's `if` returning (v, 2) or (v, 3): each output's activity is that of
    # its item in either branch's tuple (transformer/dataflow.py items_active); jit keeps the
    # helper's `for i in range(3)` counting k a Python loop (functionalize _returned_counter))
    (uses_branch_count, "grad"),
    (uses_branch_count, "jvp"),
    (uses_branch_count, "hessian"),     # (jit and vmap of it: JAX's bool() of a tracer too)
    (uses_loop_pair, "jit_grad"),
    (uses_loop_pair, "jvp"),
    (uses_loop_pair, "vmap_grad"),
    (uses_loop_pair, "hessian"),
    (uses_scan_pair, "grad"),
    (uses_scan_pair, "jvp"),
    # (vmap of the helper's jvp reads its outputs leaf by leaf, so n stays a Python int:
    # batching/vectorize.py call -> call_by_leaves)
    (uses_scan_pair, "hessian"),
    (uses_scan_pair, "jacfwd_grad"),
    (uses_scan_pair, "vmap_grad"),
    (uses_scan_pair, "jit_grad"),
], ids=lambda v: getattr(v, "__name__", v))
def test_constant_outputs_of_loops_and_branches(x64, f, how):
    test_values(x64, f, how)


# --- the trace's own Python errors --------------------------------------------------------------
class Slots:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return x * self.w


def misspelt_key(w, x):
    lin = Slots(w)
    y = lin(x)
    config = {"scale": 2.0}
    return snp.sum(y) * config["sclae"]


RUNS = {
    "grad": lambda f: secant.grad(f)(0.5, X),
    "jvp": lambda f: secant.jvp(lambda w: f(w, X), (0.5,), (1.0,)),
    "vmap": lambda f: secant.vmap(f, in_axes=(None, 0))(0.5, np.stack([X, X])),
    "vmap_grad": lambda f: secant.vmap(secant.grad(f), in_axes=(None, 0))(
        0.5, np.stack([X, X])),
}


@pytest.mark.parametrize("how", list(RUNS))
def test_pythons_own_error_from_a_per_call_trace(how):
    line = next(i for i, s in enumerate(inspect.getsourcelines(misspelt_key)[0])
                if "sclae" in s) + inspect.getsourcelines(misspelt_key)[1]
    with pytest.raises(KeyError) as eager:
        misspelt_key(0.5, X)
    with pytest.raises(KeyError) as info:
        RUNS[how](misspelt_key)
    assert not isinstance(info.value, secant.SecantError)
    assert str(info.value) == str(eager.value) == "'sclae'"
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (__file__, line), last
