"""Issue 19 (perf19f): jit's functionalisation answers "nothing to rewrite" from a function's
bytecode when it is straight-line code calling only library functions
(transformer/straight_line.py), without reading its source. Checked here: which functions are
plain, that functionalisation by the source (the fast path switched off) leaves every plain
function as it is too, and that a function that is not plain is still rewritten. No timings."""
import functools
import inspect
import types

import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant.transformer import functionalize as fz, parse, straight_line

PI = np.float32(3.0)


def helper_with_if(x):
    if x.sum() > 0:
        return x * 2
    return -x


def library_only(x, y):
    a = snp.tanh(x * 1.5 + 0.01) - y * PI
    b = snp.linalg.norm(a) + np.float32(2) * np.pi
    return snp.where(a > b, a, b)[1:] @ snp.ones((a.shape[0] - 1,), snp.float32), -a


def star_and_keywords(x):
    parts = (x, x)
    return snp.concatenate([*parts], axis=0).reshape(2, -1).sum(axis=1, keepdims=True)


def calls_user_helper(x):
    return helper_with_if(x) + 1


def stores_item(x):
    x[0] = 1.0
    return x


def choice(x):
    return x if x.sum() > 0 else -x


def boolean(x, y):
    return x and y


def has_assert(x):
    assert x.ndim == 1
    return x


def has_loop(x):
    for _ in range(3):
        x = x * 2
    return x


def has_lambda(x):
    return (lambda y: y * 2)(x)


def via_getattr(x):
    return getattr(snp, "sin")(x)


class Model:
    def apply(self, x):
        return self.act(x)

    def act(self, x):
        return x * 2


def makes_object(x):
    return Model().act(x)


partial_helper = functools.partial(helper_with_if)


def via_partial(x):
    return partial_helper(x)


jitted_helper = secant.jit(helper_with_if)


def via_jitted(x):
    return jitted_helper(x)


ns = types.SimpleNamespace(f=helper_with_if)


def via_namespace(x):
    return ns.f(x)


def _closure_of(fn):
    def inner(x):
        return fn(x) * 2
    return inner


def shadows_helper(helper_with_if):
    return helper_with_if * 2


PLAIN = [library_only, star_and_keywords, _closure_of(snp.sin)]
NOT_PLAIN = [calls_user_helper, stores_item, choice, boolean, has_assert, has_loop, has_lambda,
             via_getattr, Model.apply, makes_object, via_partial, via_jitted, via_namespace,
             _closure_of(helper_with_if), shadows_helper]


@pytest.mark.parametrize("fn", PLAIN, ids=lambda f: f.__qualname__)
def test_plain(fn):
    assert straight_line.plain(fn)


@pytest.mark.parametrize("fn", NOT_PLAIN, ids=lambda f: f.__qualname__)
def test_not_plain(fn):
    assert not straight_line.plain(fn)


@pytest.mark.parametrize("fn", PLAIN, ids=lambda f: f.__qualname__)
def test_the_source_path_leaves_plain_functions_as_they_are(fn, monkeypatch):
    """What the fast answer skips: functionalisation by the source returns each plain function
    itself too."""
    monkeypatch.setattr(straight_line, "plain", lambda f: False)
    assert fz._functionalize(fn) is fn


@pytest.mark.parametrize("fn", [calls_user_helper, choice],
                         ids=lambda f: f.__qualname__)
def test_the_source_path_rewrites_these(fn):
    """(So the fast path's False above matters: these are rewritten.)"""
    assert fz._functionalize(fn) is not fn


def test_rewritten_function_is_still_rewritten():
    """Not plain (a user helper with an `if` on a traced value): jit stages the helper's branch,
    so the traced call runs for positive and negative sums alike, as the eager one."""
    f = secant.jit(calls_user_helper)
    for x in (np.arange(3.0, dtype=np.float32), -np.arange(3.0, dtype=np.float32)):
        assert_allclose(f(x), calls_user_helper(x), rtol=1e-6)
    assert fz.functionalize(calls_user_helper) is not calls_user_helper


def test_jit_of_plain_function_matches_eager():
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    y = np.linspace(2, 3, 6, dtype=np.float32)
    assert fz.functionalize(library_only) is library_only
    got = secant.jit(library_only)(x, y)
    want = library_only(x, y)
    for g, w in zip(got, want):
        assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def _decorated(fn):
    return fn


@_decorated
def decorated(x,
              y=2):
    """A docstring."""
    z = (x +
         y)  # a comment
    return z

# a comment after the function


def test_source_of_is_inspects():
    """parse._source_of reads what inspect.getsourcelines reads (without its module search)."""
    lam = lambda v: v * 2      # noqa: E731
    for fn in PLAIN + NOT_PLAIN + [decorated, lam, _closure_of(snp.sin)]:
        assert parse._source_of(fn) == inspect.getsourcelines(fn.__code__), fn


def test_user_frame_follows_newly_registered_internal_files():
    """errors.user_frame remembers per file name whether its frames are the user's; registering
    a file as secant's own afterwards is seen at once."""
    import sys
    from secant.backends import errors
    name = "<perf19f generated helper>"
    ns = {"errors": errors}
    exec(compile("def probe():\n    return errors.user_frame()\n", name, "exec"), ns)
    here = sys._getframe().f_code
    assert ns["probe"]().f_code.co_filename == name          # (a user's frame: its own)
    errors.register_internal_file(name)
    try:
        assert ns["probe"]().f_code is here                  # now passed over, to the caller
    finally:
        errors._INTERNAL_FILES.discard(errors.os.path.abspath(name))
        errors._not_user_files.clear()


def test_a_module_that_does_not_verify_is_a_stablehlo_error():
    """The text goes to XLA unverified (XLA verifies it); when XLA refuses it, secant's own
    verification names the bad line."""
    from secant.backends import runtime
    bad = """module @m {
  func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %x, %x : tensor<4xf32>
    return %0 : tensor<3xf32>
  }
}"""
    with pytest.raises(runtime.StableHLOError, match="stablehlo.add"):
        runtime.Executable(bad, [runtime.Aval((3,), np.float32)])
    good = bad.replace("tensor<4xf32>", "tensor<3xf32>")
    exe = runtime.Executable(good, [runtime.Aval((3,), np.float32)])
    out = exe([runtime.put(np.arange(3, dtype=np.float32))])
    assert_allclose(np.asarray(out[0]), [0, 2, 4])


def test_counterparts_of_a_numpy_module_imported_later():
    """secant.numpy's table of NumPy counterparts leaves out NumPy modules not imported yet
    (numpy.fft), and takes them in once they are."""
    import subprocess
    import sys
    code = ("import sys, numpy as np, secant.numpy as snp\n"
            "from secant.numpy import counterparts as c\n"
            "assert c.counterpart(np.sin)[1] == 'snp.sin'\n"
            "assert 'numpy.fft' in c._ABSENT or 'numpy.fft' in sys.modules\n"
            "import numpy.fft\n"
            "assert c.counterpart(np.fft.fft)[1] == 'snp.fft.fft', c.counterpart(np.fft.fft)\n"
            "assert c._ABSENT == ()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
