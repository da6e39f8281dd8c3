"""Python state and conversions inside transformed functions (issue 15): a traced value's
.item()/.tolist() under jit, a function returning None or strings under grad/jit/vmap."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import ConcretizationTypeError, SecantError, SecantTypeError


def _item(x):
    return x.item() * 2.0


def _tolist(x):
    return x.tolist()


@pytest.mark.parametrize("fn, arg", [(_item, 1.0), (_tolist, np.ones(2, np.float32))])
def test_item_and_tolist_of_traced_value_under_jit_name_the_line(fn, arg):
    # before: AttributeError 'Tracer' object has no attribute 'item'
    with pytest.raises(ConcretizationTypeError, match=r"test_store15.py:1[26]"):
        secant.jit(fn)(snp.asarray(arg))


def test_item_of_concrete_value_still_works_eagerly():
    assert _item(snp.asarray(1.5)) == 3.0
    assert _tolist(snp.asarray([1.0, 2.0])) == [1.0, 2.0]


def _none(x):
    return None


def _text(x):
    return "a"


def _texts(x):
    return ["a", "b"]


@pytest.mark.parametrize("fn", [_none, _text, _texts])
def test_grad_of_non_numeric_output_says_so(fn):
    # before: "dtype object is not supported by secant" (a None output read as an array)
    with pytest.raises(SecantTypeError, match="Gradient only defined for scalar-output "
                                              r"functions\. Output was (None|'a'|\['a', 'b'\])"):
        secant.grad(fn)(1.0)


def test_jit_and_vmap_of_none_return_none():
    assert secant.jit(_none)(1.0) is None
    assert secant.vmap(_none)(snp.ones(2)) is None


# --- a local NumPy work buffer built from constants, written with static values ------------------
def _buffer(x):
    buf = np.zeros(3)
    buf[0] = 5.0
    return x * buf.sum()


def _filled_in_loop(x):
    buf = np.zeros(3)
    for i in range(3):
        buf[i] = i * 2.0
    buf[1] += 1.0
    y = snp.sin(x) * buf.sum()
    return y * buf[1]


def _list_buffer(x):
    out = [0.0] * 3
    out[1] = 2.0
    return x * sum(out)


def _central(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def _np_filled_in_loop(x):          # the same in float64 NumPy, for the differences
    return np.sin(x) * 7.0 * 3.0


@pytest.mark.parametrize("fn, ref", [
    (_buffer, lambda x: 5.0 * x), (_filled_in_loop, _np_filled_in_loop),
    (_list_buffer, lambda x: 2.0 * x)])
def test_local_buffer_written_with_constants_runs_as_python(fn, ref):
    # before: "arrays are immutable" under grad and vmap
    x = 0.7
    np.testing.assert_allclose(fn(x), ref(x), rtol=1e-6)
    np.testing.assert_allclose(secant.grad(fn)(x), _central(ref, x), rtol=1e-5)
    np.testing.assert_allclose(secant.jit(secant.grad(fn))(x), _central(ref, x), rtol=1e-5)
    xs = np.array([0.3, -1.2], np.float32)
    np.testing.assert_allclose(secant.vmap(fn)(xs), [ref(v) for v in xs.astype(np.float64)],
                               rtol=1e-5)
    np.testing.assert_allclose(secant.vmap(secant.grad(fn))(xs),
                               [_central(ref, float(v)) for v in xs], rtol=1e-4)
    d2 = (_central(ref, x + 1e-3) - _central(ref, x - 1e-3)) / 2e-3
    np.testing.assert_allclose(secant.grad(secant.grad(fn))(x), d2, rtol=1e-3, atol=1e-4)


def _traced_write(x):
    buf = np.zeros(3)
    buf[0] = x
    return buf.sum()


def test_traced_value_written_into_numpy_buffer_is_refused_at_the_line():
    from secant.backends.errors import TracerArrayConversionError
    for t in (secant.grad, secant.vmap):
        with pytest.raises(TracerArrayConversionError, match=r"buf\[0\] = x"):
            t(_traced_write)(snp.ones(2) if t is secant.vmap else 1.0)


def _read_between_stores(x):
    buf = np.zeros(2)
    buf[0] = 5.0
    y = x * buf.sum()
    buf[1] = 7.0
    return y * buf.sum()


def _read_in_storing_loop(x):
    buf = np.zeros(3)
    acc = 0.0
    for i in range(3):
        buf[i] = 1.0 + i
        acc = acc + x * buf.sum()
    return acc


@pytest.mark.parametrize("fn", [_read_between_stores, _read_in_storing_loop])
def test_buffer_read_before_a_later_store_is_refused(fn):
    # derivatives re-read buf after the function ran: without the check grad of
    # _read_in_storing_loop gave 18.0 (the true 1 + 3 + 6 = 10)
    with pytest.raises(SecantError, match=r"buf is read at line \d+ before its last item store"):
        secant.grad(fn)(2.0)
    assert fn(2.0) == (5.0 * 2.0 * 12.0 if fn is _read_between_stores else 20.0)


# --- Python side effects and state in the body (item 4) -----------------------------------------
class _Counted:
    def __init__(self):
        self.calls = 0

    def f(self, x):
        self.calls += 1
        return snp.sin(x) * 2


_TRANSFORMS = [
    ("grad", lambda f: secant.grad(f)(0.5), lambda: 2 * np.cos(0.5)),
    ("jit", lambda f: secant.jit(f)(0.5), lambda: 2 * np.sin(0.5)),
    ("vmap", lambda f: secant.vmap(f)(snp.asarray([0.5, 1.0])), lambda: 2 * np.sin([0.5, 1.0])),
    ("grad_grad", lambda f: secant.grad(secant.grad(f))(0.5), lambda: -2 * np.sin(0.5)),
    ("vmap_grad", lambda f: secant.vmap(secant.grad(f))(snp.asarray([0.5, 1.0])),
     lambda: 2 * np.cos([0.5, 1.0]))]


@pytest.mark.parametrize("name, t, want", _TRANSFORMS, ids=[t[0] for t in _TRANSFORMS])
def test_counter_on_self_runs_and_counts(name, t, want):
    # a first version of the local-buffer change raised UnboundLocalError here
    c = _Counted()
    np.testing.assert_allclose(t(c.f), want(), rtol=1e-6)
    assert c.calls >= 1


_LOG = []


def _logged(x):
    _LOG.append("called")
    return snp.sin(x) * 2


def _flagged(x):
    if _DEBUG:
        return x
    return snp.sin(x) * 2


_DEBUG = False


def _with_static_raise(x):
    if snp.ndim(x) != 0:
        raise ValueError("need a scalar")
    return snp.sin(x) * 2


@pytest.mark.parametrize("name, t, want", _TRANSFORMS, ids=[t[0] for t in _TRANSFORMS])
@pytest.mark.parametrize("fn", [_logged, _flagged, _with_static_raise])
def test_python_side_effects_in_the_body(fn, name, t, want):
    before = len(_LOG)
    np.testing.assert_allclose(t(fn), want(), rtol=1e-6)
    assert (len(_LOG) > before) == (fn is _logged)


def _formatted(x):
    s = f"{x:.3f}"
    return x * len(s)


def test_format_spec_of_traced_value_under_jit_names_the_line():
    # before: TypeError unsupported format string passed to Tracer.__format__ (no line)
    with pytest.raises(ConcretizationTypeError, match=r"test_store15.py:\d+"):
        secant.jit(_formatted)(0.5)
    assert _formatted(0.5) == 2.5


def _accumulated(x):
    parts = []
    parts.append(x * 2)
    parts.append(snp.sin(x))
    return sum(parts)


def test_local_list_accumulation_under_every_transform():
    d1 = lambda v: 2 + np.cos(v)    # noqa: E731
    np.testing.assert_allclose(secant.grad(_accumulated)(0.5), d1(0.5), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(_accumulated))(0.5), d1(0.5), rtol=1e-6)
    np.testing.assert_allclose(secant.grad(secant.grad(_accumulated))(0.5), -np.sin(0.5),
                               rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(secant.grad(_accumulated))(snp.asarray([0.5, 1.0])),
                               d1(np.array([0.5, 1.0])), rtol=1e-6)
    np.testing.assert_allclose(secant.jvp(_accumulated, (0.5,), (1.0,))[1], d1(0.5), rtol=1e-6)
    np.testing.assert_allclose(secant.jvp(_buffer, (0.5,), (1.0,))[1], 5.0, rtol=1e-6)


_logger = __import__("logging").getLogger("secant.tests.store15")


def _logs(x):
    _logger.warning("x=%s", x)
    y = snp.sin(x)
    _logger.warning("y=%s", y)
    return y * 2


@pytest.mark.parametrize("name, t, want", _TRANSFORMS, ids=[t[0] for t in _TRANSFORMS])
def test_logging_traced_values_runs_as_written(name, t, want, caplog):
    # before: logged the source tracer's placeholders ("x=Traced<x>", several times), not the
    # values (outside jit: the values, as print shows them)
    with caplog.at_level("WARNING", logger="secant.tests.store15"):
        np.testing.assert_allclose(t(_logs), want(), rtol=1e-6)
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("x=") for m in messages) and any(m.startswith("y=") for m in messages)
    if name != "jit":
        assert not any("Traced<" in m for m in messages), messages
