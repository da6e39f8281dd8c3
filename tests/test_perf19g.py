"""Issue 19: inspect.signature of plain functions is remembered (transformer/callees.py
signature_of); a function whose code, defaults, __signature__ or __wrapped__ changes later
gets its new signature."""
import functools
import gc
import inspect

from transformer.callees import _SIGNATURES, is_variadic, signature_of


def test_remembered_for_the_same_function():
    def f(a, b=1):
        return a
    assert signature_of(f) is signature_of(f)
    assert str(signature_of(f)) == "(a, b=1)"


def test_recomputed_when_what_it_reads_changes():
    def f(a, b=1):
        return a
    signature_of(f)
    f.__defaults__ = (2,)
    assert str(signature_of(f)) == "(a, b=2)"

    def g(x, *, y=3):
        return x
    f.__code__, f.__defaults__, f.__kwdefaults__ = g.__code__, None, {"y": 3}
    assert str(signature_of(f)) == "(x, *, y=3)"
    assert not is_variadic(f)

    @functools.wraps(g)
    def w(*args, **kw):
        return g(*args, **kw)
    assert str(signature_of(w)) == "(x, *, y=3)"
    assert str(signature_of(w, follow_wrapped=False)) == "(*args, **kw)"

    def h(q):
        return q
    w.__wrapped__ = h
    assert str(signature_of(w)) == "(q)"
    h.__signature__ = inspect.Signature(
        [inspect.Parameter("z", inspect.Parameter.POSITIONAL_ONLY)])
    assert str(signature_of(w)) == "(z, /)"


def test_wrapped_cycle_raises_as_inspect_does():
    def w(x):
        return x
    w.__wrapped__ = w
    try:
        signature_of(w)
    except ValueError:
        pass
    else:
        raise AssertionError("a __wrapped__ cycle gave a signature")


def test_entries_do_not_keep_functions_alive():
    def make():
        def f(a):
            return a
        signature_of(f)
        return len(_SIGNATURES)
    n = make()
    gc.collect()
    assert len(_SIGNATURES) < n

