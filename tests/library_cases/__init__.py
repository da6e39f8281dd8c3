"""One table of library functions, one harness that checks each the same way.

Each module here (one per area: numpy_shape.py, linalg.py, fft.py, nn.py, ...) defines
`CASES`, a list of `Case`s. tests/test_library_cases.py runs every case through:
- value: the secant function eagerly against its NumPy/SciPy reference (float64);
- jit: `secant.jit(fn)` against the eager value (for a differentiable case, jit of fn's value
  and its gradients together: one compile);
- vmap: `secant.vmap(fn)` over a batch of 2 against a Python loop;
- grad (differentiable cases): `secant.grad` of `sum(real(fn(*xs) * w))` with respect to each
  argument against central finite differences in float64, eagerly and under jit;
- jvp: the tangent of `secant.jvp(fn, xs, ts)` against a finite-difference directional
  derivative.
Complex cases draw complex128 inputs; their gradients follow JAX's convention
(df/dx - 1j df/dy for a real loss of z = x + iy).

A Case's `fn` and `ref` take the arrays (one per entry of `shapes`) positionally; everything
static (axes, orders, shifts) is written into the lambda. Functions with several outputs get one
case per output (`lambda a: snp.linalg.qr(a)[0]`). `make(rng, shape, dtype)` draws inputs where
a function needs a domain (positive, SPD, well conditioned); the default draws uniform(-1, 1)
(and its imaginary part likewise for complex).
"""
from collections import namedtuple

Case = namedtuple("Case", "name fn ref shapes make differentiable complex rtol atol id",
                  defaults=(None, True, False, 1e-6, 1e-8, None))
Case.__doc__ = """name: the public name checked (e.g. "numpy.roll", "numpy.linalg.det",
"scipy.special.xlogy", "nn.relu"); fn: the secant function; ref: its NumPy/SciPy reference (None:
no value check); shapes: one shape per array argument; make: input maker; differentiable: False
for functions with no derivative (argmax, integer results: checked for value, jit and vmap);
complex: complex128 inputs; rtol/atol: for value and derivative checks; id: a test id suffix when
one name has several cases."""


def positive(rng, shape, dtype):
    return rng.uniform(0.5, 2.0, shape).astype(dtype)


def spd(rng, shape, dtype):
    """Symmetric (Hermitian) positive definite matrices, batched over leading axes."""
    a = rng.uniform(-1, 1, shape).astype(dtype)
    if dtype.kind == "c":
        a = a + 1j * rng.uniform(-1, 1, shape)
    n = shape[-1]
    return (a @ a.conj().swapaxes(-1, -2) + n * __import__("numpy").eye(n)).astype(dtype)


def well_conditioned(rng, shape, dtype):
    """Square matrices a + n I (far from singular), batched over leading axes."""
    import numpy as np
    a = rng.uniform(-1, 1, shape)
    if dtype.kind == "c":
        a = a + 1j * rng.uniform(-1, 1, shape)
    return (a + shape[-1] * np.eye(shape[-1])).astype(dtype)
