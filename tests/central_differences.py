"""Float64 central differences of a weighted sum, the oracle of the API tests' gradients."""
import numpy as np


def weighted_fd(f, x, h=1e-6):
    """(d/dx sum(w * f(x)), w) with w = 1, 2, ... over f(x)'s entries (nans left out)."""
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    base = f(x)
    w = np.arange(1, np.size(base) + 1).reshape(np.shape(base))
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = np.nansum((f(x + e) - f(x - e)) * w) / (2 * h)
    return g, w


def check_unary(f, x, ref, scale=1.1):
    """f (secant's) against ref (NumPy/SciPy's) at x: its value eager and under jit, its
    weighted gradient against central differences of ref, and vmap over x and x * scale."""
    import secant
    import secant.numpy as snp
    np.testing.assert_allclose(np.asarray(f(x)), ref(x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(x)), ref(x), rtol=1e-9, atol=1e-12)
    g0, w = weighted_fd(ref, x)
    g = secant.grad(lambda a: snp.sum(f(a) * w))(x)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-5, atol=1e-7)
    xs = np.stack([x, x * scale])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)), np.stack([ref(v) for v in xs]),
                               rtol=1e-9, atol=1e-12)


def grad_fd(f, x, *rest, h=1e-6):
    """Float64 central differences of the scalar f(x, *rest) in x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e, *rest)) - float(f(x - e, *rest))) / (2 * h)
    return g


def hessian_fd(f, x, *rest, h=1e-4):
    """Central differences (step h) of grad_fd (step h) of the scalar f(x, *rest): shape x.shape
    * 2, the derivative's index last."""
    out = np.zeros(x.shape + x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[(...,) + i] = (grad_fd(f, x + e, *rest, h=h) - grad_fd(f, x - e, *rest, h=h)) / (2 * h)
    return out


def check_first_order(f, x, w, v):
    """grad, jvp (tangent v) and vjp of the scalar f(x, w) in x against grad_fd; the gradient."""
    import secant
    want = grad_fd(f, x, w)
    np.testing.assert_allclose(secant.grad(f)(x, w), want, rtol=1e-6, atol=1e-7)
    primal, tangent = secant.jvp(lambda a: f(a, w), (x,), (v,))
    np.testing.assert_allclose(primal, f(x, w), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(want * v), rtol=1e-6, atol=1e-7)
    _, back = secant.vjp(f, x, w)
    np.testing.assert_allclose(back(np.float64(3.0))[0], 3.0 * want, rtol=1e-6, atol=1e-7)
    return want
