"""jax.debug.print / debug.callback with run-time values (eagerly, under jit through a host
callback, under grad/jvp and vmap), debug.breakpoint, and pure_callback: what JAX documents
(JAX's outputs for the same programs are written next to each check)."""
import pdb

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import debug
from secant.backends.array import Array


def f(x, c):
    debug.print("x={x} c={c}", x=x, c=c)
    debug.print("pos {} {}", x, c)
    return snp.sin(x) * c


def lines(capsys):
    return capsys.readouterr().out.splitlines()


def test_print_eagerly_and_under_jit_prints_each_run(capsys):
    f(snp.float32(1.0), 2.0)
    assert lines(capsys) == ["x=1.0 c=2.0", "pos 1.0 2.0"]
    jf = secant.jit(f)
    out = jf(1.0, 2.0)
    assert sorted(lines(capsys)) == ["pos 1.0 2.0", "x=1.0 c=2.0"]
    jf(3.0, 2.0)            # cached executable: the values of this run
    assert sorted(lines(capsys)) == ["pos 3.0 2.0", "x=3.0 c=2.0"]
    assert float(out) == pytest.approx(np.sin(1.0) * 2, rel=1e-6)
    assert "xla_ffi_python_cpu_callback" in jf.lower(1.0, 2.0).as_text()


def test_print_formats_as_str_format(capsys):
    debug.print("{x:.2f} {y} {0}", snp.arange(3), x=snp.float32(1.2345), y=3)
    assert lines(capsys) == ["1.23 3 [0 1 2]"]
    secant.jit(lambda x: debug.print("{:.3f}|{}", x[0], x))(np.array([0.5, 1.25], np.float32))
    assert lines(capsys) == ["0.500|[0.5  1.25]"]


def test_print_with_constants_only_under_jit_prints_every_run(capsys):
    def g(x):
        debug.print("hello {}", 7)
        return x + 1
    jg = secant.jit(g)
    jg(1.0)
    jg(2.0)
    assert lines(capsys) == ["hello 7", "hello 7"]


def test_print_under_grad_and_jvp_prints_the_primal_once(capsys):
    g = secant.grad(f)(1.0, 2.0)
    assert lines(capsys) == ["x=1.0 c=2.0", "pos 1.0 2.0"]
    assert float(g) == pytest.approx(np.cos(1.0) * 2, rel=1e-6)
    secant.jit(secant.grad(f))(1.0, 2.0)
    assert sorted(lines(capsys)) == ["pos 1.0 2.0", "x=1.0 c=2.0"]
    secant.jvp(lambda x: f(x, 2.0), (1.0,), (1.0,))
    assert lines(capsys) == ["x=1.0 c=2.0", "pos 1.0 2.0"]


def test_print_under_vmap_prints_each_example(capsys):
    # JAX: vmap(f, in_axes=(0, None))(arange(3.), 2.) prints x=0.0 c=2.0, x=1.0 ..., per example
    secant.vmap(f, in_axes=(0, None))(snp.arange(3.0), 2.0)
    assert lines(capsys) == ["x=0.0 c=2.0", "x=1.0 c=2.0", "x=2.0 c=2.0",
                             "pos 0.0 2.0", "pos 1.0 2.0", "pos 2.0 2.0"]
    secant.vmap(f)(snp.arange(4.0).reshape(2, 2), snp.ones(2))
    assert lines(capsys) == ["x=[0. 1.] c=1.0", "x=[2. 3.] c=1.0",
                             "pos [0. 1.] 1.0", "pos [2. 3.] 1.0"]
    # under jit the prints are unordered effects (JAX's too: ordered=False): compare as sets
    secant.jit(secant.vmap(f, in_axes=(0, None)))(snp.arange(2.0), 2.0)
    assert sorted(lines(capsys)) == ["pos 0.0 2.0", "pos 1.0 2.0", "x=0.0 c=2.0", "x=1.0 c=2.0"]
    secant.vmap(secant.vmap(f, in_axes=(0, None)), in_axes=(0, None))(
        snp.arange(4.0).reshape(2, 2), 2.0)
    assert lines(capsys)[:4] == [f"x={v:.1f} c=2.0" for v in range(4)]
    g = secant.vmap(secant.grad(f), in_axes=(0, None))(snp.arange(2.0), 2.0)
    assert lines(capsys)[:2] == ["x=0.0 c=2.0", "x=1.0 c=2.0"]
    np.testing.assert_allclose(np.asarray(g), np.cos([0.0, 1.0]) * 2, rtol=1e-6)


def test_callback_gets_arrays_eagerly_jit_and_vmap():
    seen = []

    def g(x):
        debug.callback(lambda a, k=None: seen.append((type(a), np.asarray(a).tolist(), k)), x,
                       k=2)
        return x * 2
    g(snp.arange(2.0))
    out = secant.jit(g)(snp.arange(2.0))
    secant.vmap(g)(snp.arange(2.0))
    assert seen == [(Array, [0.0, 1.0], 2), (Array, [0.0, 1.0], 2),
                    (Array, 0.0, 2), (Array, 1.0, 2)]
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0])


def test_an_exception_in_a_callback_is_raised_as_itself():
    def g(x):
        debug.callback(lambda a: 1 / 0, x)
        return x
    with pytest.raises(ZeroDivisionError):
        secant.jit(g)(1.0)
    assert float(secant.jit(lambda x: x + 1)(2.0)) == 3.0      # the runtime still works


def test_breakpoint_eagerly_stops_at_the_callers_line(monkeypatch):
    frames = []
    monkeypatch.setattr(pdb.Pdb, "set_trace", lambda self, frame=None: frames.append(frame))

    def g(x):
        y = x * 2
        debug.breakpoint()
        return y
    g(1.0)
    assert frames and frames[0].f_code.co_name == "g" and frames[0].f_locals["y"] == 2.0
    with pytest.raises(secant.SecantError, match="breakpoint.*inside jit"):
        secant.jit(g)(1.0)


# --- pure_callback ------------------------------------------------------------------------------
def _double(a):
    assert isinstance(a, np.ndarray)          # as JAX: the callback gets NumPy arrays
    return (a * 2).astype(a.dtype)


def h(x):
    y = secant.pure_callback(_double, secant.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y + 1


def test_pure_callback_eager_and_jit():
    x = np.array([0.0, 1.0, 2.0], np.float32)
    np.testing.assert_array_equal(np.asarray(h(snp.asarray(x))), [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(np.asarray(secant.jit(h)(x)), [1.0, 3.0, 5.0])
    # a pytree of results
    pair = secant.jit(lambda x: secant.pure_callback(
        lambda a: {"s": a.sum(), "m": a.max()},
        {"s": secant.ShapeDtypeStruct((), np.float32),
         "m": secant.ShapeDtypeStruct((), np.float32)},
        x))(x)
    assert float(pair["s"]) == 3.0 and float(pair["m"]) == 2.0


def test_pure_callback_checks_what_the_function_returns():
    def bad(x):
        return secant.pure_callback(lambda a: a.astype(np.float64),
                                    secant.ShapeDtypeStruct(x.shape, x.dtype), x)
    with pytest.raises(secant.SecantError, match="float64.*float32"):
        secant.jit(bad)(np.ones(3, np.float32))
    with pytest.raises(secant.SecantError, match="float64.*float32"):
        bad(snp.ones(3))


def test_pure_callback_has_no_derivative():
    with pytest.raises(secant.SecantError, match="Pure callbacks do not support JVP"):
        secant.grad(lambda x: snp.sum(h(x)))(snp.ones(3))
