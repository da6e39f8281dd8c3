"""config backend_optimization_level: XLA's LLVM optimisation level for programs compiled from
then on (test_library_cases compiles at 0 to save compile time)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends import runtime


def test_level_reaches_the_compile_options_and_values_agree(monkeypatch):
    x = np.linspace(-2.0, 2.0, 7, dtype=np.float32)
    f = lambda x: snp.tanh(x) * snp.exp(-x * x)     # noqa: E731
    want = np.asarray(secant.jit(f)(x))
    opts = []
    init = runtime.xc.CompileOptions

    def recording():
        o = init()
        opts.append(o)
        return o
    monkeypatch.setattr(runtime.xc, "CompileOptions", recording)
    secant.config.update("backend_optimization_level", 0)
    try:
        got = np.asarray(secant.jit(lambda x: snp.tanh(x) * snp.exp(-x * x))(x))
    finally:
        secant.config.update("backend_optimization_level", None)
    assert [o.executable_build_options.debug_options.xla_backend_optimization_level
            for o in opts] == [0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_bad_level_is_refused():
    with pytest.raises(secant.SecantError, match="backend_optimization_level"):
        secant.config.update("backend_optimization_level", 7)
