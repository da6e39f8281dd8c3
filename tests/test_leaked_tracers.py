"""Values of a finished trace (a Tracer that escaped jit through a global, a closure, a list or a
scan body) raise UnexpectedTracerError on any use, naming the line that made the value and the
line that used it; values used inside the trace that made them keep working."""
import os

import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant import lax

HERE = os.path.abspath(__file__)


def line_of(marker):
    """The line of this file that carries `# <marker>`."""
    with open(HERE) as fh:
        for n, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return n
    raise AssertionError(marker)


def leak_error(made, used, fn, *args):
    """fn(*args) raises an UnexpectedTracerError (a SecantError and a TypeError, as JAX's) whose
    message names this file at the lines marked `made` and `used`."""
    with pytest.raises(secant.UnexpectedTracerError) as info:
        fn(*args)
    err = info.value
    assert isinstance(err, secant.SecantError) and isinstance(err, TypeError)
    msg = str(err)
    assert f"created at {HERE}:{line_of(made)}" in msg or \
        f"by the call at {HERE}:{line_of(made)}" in msg, msg
    assert f"used at {HERE}:{line_of(used)}" in msg, msg
    return msg


def test_the_error_is_public_and_jax_shaped():
    assert issubclass(secant.UnexpectedTracerError, secant.SecantError)
    assert issubclass(secant.UnexpectedTracerError, TypeError)
    assert "UnexpectedTracerError" in secant.__all__
    from secant.backends import errors, tracer
    assert errors.UnexpectedTracerError is secant.UnexpectedTracerError
    assert tracer.LeakedTracerError is secant.UnexpectedTracerError   # one class, two names


# --- a tracer stored in a global --------------------------------------------------------------
LEAKED = None


def _store_global(x):
    global LEAKED
    LEAKED = snp.sin(x) * 2  # made-global
    return x + 1


@pytest.fixture
def global_leak():
    out = secant.jit(_store_global)(np.arange(3, dtype=np.float32))
    assert_allclose(out, [1, 2, 3])           # the jitted result itself is right
    yield LEAKED


USES = {
    "arithmetic": lambda v: v + 1,  # use-arithmetic
    "reflected": lambda v: 1.0 - v,  # use-reflected
    "numpy op": lambda v: snp.exp(v),  # use-numpy op
    "lax op": lambda v: lax.add(v, v),  # use-lax op
    "reduction": lambda v: v.sum(),  # use-reduction
    "indexing": lambda v: v[1],  # use-indexing
    "np.asarray": lambda v: np.asarray(v),  # use-np.asarray
    "np ufunc": lambda v: np.sin(v),  # use-np ufunc
    "float": lambda v: float(v[0] if v.ndim else v),  # use-float
    "bool": lambda v: bool(v[0] if v.ndim else v),  # use-bool
    "second jit": lambda v: secant.jit(lambda y: y * 2 + v)(np.float32(1)),  # use-second jit
    "jit argument": lambda v: secant.jit(lambda y: y)(v),  # use-jit argument
    "eager grad": lambda v: secant.grad(lambda y: snp.sum(y * y))(v),  # use-eager grad
    "eager vmap": lambda v: secant.vmap(snp.sin)(v),  # use-eager vmap
    "array first": lambda v: snp.ones(3) * v,  # use-array first
}


@pytest.mark.parametrize("use", sorted(USES))
def test_global_leak_every_use_raises(global_leak, use):
    leak_error("made-global", f"use-{use}", USES[use], global_leak)


def test_global_leak_scalar_conversions():
    secant.jit(_store_global)(np.float32(0.5))
    v = LEAKED
    assert v.shape == ()
    for conv in (float, bool, int, complex, np.asarray):
        with pytest.raises(secant.UnexpectedTracerError) as info:
            conv(v)  # use-scalar-conversion
        assert f"{HERE}:{line_of('made-global')}" in str(info.value)
        assert f"{HERE}:{line_of('use-scalar-conversion')}" in str(info.value)


def test_leaked_bool_predicate_of_cond():
    box = []

    def f(x):
        box.append(x > 0)  # made-predicate
        return x
    secant.jit(f)(np.float32(1))
    leak_error("made-predicate", "use-predicate",
               lambda: lax.cond(box[0], lambda: 1.0, lambda: 2.0))  # use-predicate


def test_repr_of_a_dead_tracer_shows_it():
    # (a signature of its own: jit keeps one trace cache per function, as JAX, so a signature
    # traced by another test would not run _store_global again)
    secant.jit(_store_global)(np.arange(5, dtype=np.float32))
    text = repr(LEAKED)
    assert text.startswith("Traced<float32[5]>") and "finished jit trace of _store_global" in text
    assert str(LEAKED) == text and f"{LEAKED}" == text
    assert LEAKED.shape == (5,) and LEAKED.dtype == np.float32     # static facts stay readable


# --- closures, lists ---------------------------------------------------------------------------
def test_nonlocal_leak():
    cell = None

    def f(x):
        nonlocal cell
        cell = x * 3  # made-nonlocal
        return x
    assert_allclose(secant.jit(f)(np.float32(2)), 2)
    leak_error("made-nonlocal", "use-nonlocal", lambda: cell - 1)  # use-nonlocal


def test_closure_attribute_leak():
    class Box:
        value = None
    box = Box()

    def f(x):
        box.value = snp.cos(x)  # made-attribute
        return x
    secant.jit(f)(np.ones(2, np.float32))
    leak_error("made-attribute", "use-attribute", lambda: box.value @ box.value)  # use-attribute


def test_list_append_leak_and_argument_leak():
    saved = []

    def f(x, y):
        saved.append(x)                       # a parameter itself
        saved.append(x * y)  # made-append
        return x + y
    secant.jit(f)(np.float32(1), np.float32(2))  # made-param
    leak_error("made-append", "use-append", lambda: snp.maximum(saved[1], 0))  # use-append
    leak_error("made-param", "use-param", lambda: saved[0] ** 2)  # use-param


def test_leak_used_inside_another_trace_mixed_with_its_values():
    saved = []
    secant.jit(lambda x: saved.append(x - 1) or x)(np.float32(1))  # made-first
    g = secant.jit(lambda y: snp.tanh(y) + saved[0])  # use-in-second
    leak_error("made-first", "use-in-second", g, np.float32(3))


def test_leak_from_pmap():
    saved = []

    def f(x):
        saved.append(x * 2)  # made-pmap
        return x
    secant.pmap(f)(np.ones((1, 2), np.float32))
    leak_error("made-pmap", "use-pmap", lambda: saved[0] + 1)  # use-pmap


def test_leak_from_grad_inside_jit():
    saved = []

    def f(x):
        g = secant.grad(lambda y: snp.sum(y ** 3))(x)  # made-grad
        saved.append(g)
        return g
    assert_allclose(secant.jit(f)(np.float32(2)), 12)
    leak_error("made-grad", "use-grad", lambda: saved[0] * 1)  # use-grad


# --- lax loop bodies -------------------------------------------------------------------------
def test_leaked_scan_carry_used_after_jit():
    carries = []

    def f(x):
        def body(c, xi):
            carries.append(c * 2)  # made-carry
            return c + xi, c
        return lax.scan(body, x, snp.arange(3.0))[0]
    assert_allclose(secant.jit(f)(np.float32(1)), 4)
    assert carries
    for c in carries:
        leak_error("made-carry", "use-carry", lambda: c + 1)  # use-carry


def test_leaked_scan_carry_used_in_the_same_jit():
    carries = []

    def f(x):
        def body(c, xi):
            carries.append(c)
            return c + xi, c
        total, _ = lax.scan(body, x, snp.arange(3.0))  # made-region
        return total + carries[-1]  # use-region
    msg = leak_error("made-region", "use-region", secant.jit(f), np.float32(1))
    assert "outside the function or branch/loop body" in msg


def test_leaked_while_body_value_used_after_jit():
    saved = []

    def body(c):
        saved.append(snp.sqrt(c))  # made-while
        return c + 1
    secant.jit(lambda x: lax.while_loop(lambda c: c < 5, body, x))(np.float32(1))
    leak_error("made-while", "use-while", lambda: saved[-1] / 2)  # use-while


def test_eager_scan_carries_are_concrete_values():
    """Eagerly lax.scan runs Python, so a stored carry is the real value of that step, not a
    tracer: using it is right (and checked here against the loop it stands for)."""
    carries = []

    def body(c, xi):
        carries.append(c)
        return c * 2 + xi, c
    lax.scan(body, np.float32(1), snp.arange(3.0))
    assert_allclose([float(c) for c in carries], [1, 2, 5])


# --- vmap ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("jitted", [False, True])
def test_vmap_of_a_function_storing_a_batched_value(jitted):
    """A per-example value stored outside the function (a list it closes over): vmap traces the
    function (a source transform cannot follow the value there; haiku's frame stack reads it
    back, secant/transforms.py _traced_per_call), its result is right, and the stored value is
    a leaked tracer, as in JAX: using it after the call is a clear error naming that line."""
    saved = []

    def f(x):
        saved.append(x * 2)
        return x.sum()
    g = secant.vmap(f)
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    assert_allclose((secant.jit(g) if jitted else g)(snp.asarray(x)), x.sum(axis=1))
    assert saved
    with pytest.raises(secant.SecantError) as info:
        saved[-1] + 1  # use-leaked
    assert f"{HERE}:{line_of('use-leaked')}" in str(info.value)


def test_vmap_rejects_a_global_store():
    def f(x):
        global LEAKED
        LEAKED = x  # store-vmap-global
        return x
    with pytest.raises(secant.SecantError) as info:
        secant.vmap(f)(snp.ones((3, 2)))
    assert f"{HERE}:{line_of('store-vmap-global')}" in str(info.value)


# --- legitimate uses keep working ----------------------------------------------------------------
def test_closures_of_nested_functions_in_one_trace():
    def f(x):
        y = snp.sin(x)

        def inner(z):
            def innermost():
                return y * z
            return innermost() + x
        return inner(2.0) + inner(x)
    x = np.linspace(0, 1, 4).astype(np.float32)
    assert_allclose(secant.jit(f)(x), f(x), rtol=1e-6)
    want = 2 * np.sin(x) + x + np.sin(x) * x + x
    assert_allclose(f(x), want, rtol=1e-6)


def test_jit_of_jit_and_values_across_inner_calls():
    inner = secant.jit(lambda a, b: a * b + 1)
    outer = secant.jit(lambda x: inner(x, x) + inner(inner(x, 2.0), x))
    x = np.array([0.5, -1.0, 2.0], np.float32)
    ix = x * x + 1
    assert_allclose(outer(x), ix + (x * 2 + 1) * x + 1, rtol=1e-6)
    assert_allclose(secant.jit(outer)(x), outer(x), rtol=1e-6)


def test_grad_inside_jit(x64):
    f = lambda x: snp.sum(snp.sin(x) * x)
    g = secant.jit(lambda x: secant.grad(f)(x) * 2)
    x = np.linspace(-1, 1, 5)
    assert_allclose(g(x), 2 * (np.cos(x) * x + np.sin(x)), rtol=1e-12)


def test_outer_values_captured_by_loop_and_branch_bodies():
    def f(x):
        w = x * 2
        s = lax.fori_loop(0, 3, lambda i, c: c + w, snp.zeros_like(x))
        return lax.cond(s[0] > 0, lambda: s + w, lambda: s - w)
    x = np.array([1.0, 2.0], np.float32)
    assert_allclose(secant.jit(f)(x), 8 * x)
    assert_allclose(secant.jit(f)(-x), -4 * x)


def test_a_leak_does_not_poison_later_traces():
    saved = []

    def f(x):
        saved.append(x)
        return x * 2
    jf = secant.jit(f)
    assert_allclose(jf(np.float32(1)), 2)
    assert_allclose(jf(np.ones(2, np.float32)), [2, 2])     # a new trace: new, live tracers
    assert_allclose(jf(np.float32(3)), 6)                   # the cached trace runs
    assert len(saved) == 2
    with pytest.raises(secant.UnexpectedTracerError):
        saved[1] + 1
