"""Issue 19 (speed19c): jaxlib's MLIR Python bindings (ir, the StableHLO and CHLO dialects) are
imported on the first runtime.verify, not with secant: XLA parses the text it compiles. Their
generated op classes were a quarter of the objects every full pass of Python's cyclic collector
walks, and the full collection due after the imports landed in the first jitted call. Checked
in a fresh process: programs (CHLO ops among them) compile and give the right values without
the bindings; verify still reads and refuses modules once it needs them. No timings."""
import subprocess
import sys

CODE = r'''
import sys
import numpy as np
import scipy.special as ss
import secant
import secant.numpy as snp
import secant.scipy.special as sp
from secant.backends import runtime

def bound():
    return sorted(m for m in sys.modules if m.startswith("jaxlib.mlir.dialects"))

x = np.linspace(0.1, 1.0, 5).astype(np.float32)
f = secant.jit(lambda a: sp.erf(a) + snp.tanh(a) * sp.gammaln(a + 2.0))
text = f.lower(x).as_text()
assert "chlo." in text, text
got = np.asarray(f(x))
want = ss.erf(x.astype(np.float64)) + np.tanh(x) * ss.gammaln(x + 2.0)
assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
g = secant.jit(secant.grad(lambda a: snp.sum(sp.erf(a))))(x)
assert np.allclose(np.asarray(g), 2 / np.sqrt(np.pi) * np.exp(-x.astype(np.float64) ** 2),
                   rtol=1e-5), g
assert bound() == [], bound()

bad = """module @m {
  func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = chlo.erf %x : tensor<3xf32> -> tensor<4xf32>
    return %0 : tensor<3xf32>
  }
}"""
try:
    runtime.verify(bad)
except runtime.StableHLOError as e:
    assert "return %0" in str(e) and "tensor<4xf32>" in str(e), e
else:
    raise AssertionError("a module that does not verify was accepted")
good = bad.replace("tensor<4xf32>", "tensor<3xf32>")
assert "chlo.erf" in str(runtime.verify(good))
assert "jaxlib.mlir.dialects.stablehlo" in bound(), bound()
print("ok")
'''


def test_programs_compile_without_mlir_bindings_and_verify_loads_them():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
