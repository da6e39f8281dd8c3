"""Issue 15: an op whose jvp returns a primal output not batched and a tangent that is (rfft,
qr, eigh, svd, sort, top_k, lu, cumsum, ...). vmap of the jvp (hessian, jacfwd(grad), vmap over
tangents) keeps such a primal unbatched, so a shape query of it the normaliser wrote per example
(`o.shape[0]` as `o.shape[1]`) must be written back whole: once it was not, and `o.shape[0]`
read axis 1: an IndexError, or, where axis 1 exists, silently that axis's length. Each function
below scales by `o.shape[0]` on shapes where axis 1 has another length, so a wrong axis gives a
wrong number, not an error. Checked against float64 central differences."""
import numpy as np
import pytest

import secant
import secant.lax as lax
import secant.numpy as jnp
import secant.scipy.linalg as sla


def rfft_1d(x):                  # tests/user_programs/tricky.py power_spectrum
    spec = jnp.fft.rfft(x[0])
    return jnp.sum(jnp.abs(spec) ** 2 * jnp.arange(spec.shape[0]))


def rfft_rows(x):
    o = jnp.fft.rfft(x)
    return jnp.sum(jnp.abs(o) ** 2) * o.shape[0]


def fft2(x):
    o = jnp.fft.fft2(x)
    return jnp.sum(jnp.real(o) * jnp.imag(o)) / o.shape[0] + jnp.sum(jnp.abs(o)) * o.shape[0]


def irfft(x):
    o = jnp.fft.irfft(x)
    return jnp.sum(o ** 3) * o.shape[0]


def qr(x):
    q, r = jnp.linalg.qr(x)
    return jnp.sum(q[:, 0] * x[:, 0]) * q.shape[0] + jnp.sum(jnp.abs(jnp.diag(r))) * r.shape[0]


def eigh(x):
    w, v = jnp.linalg.eigh(x[:3, :3] + x[:3, :3].T)
    return jnp.sum(w * jnp.arange(w.shape[0])) + jnp.sum(v[:, 0] ** 4) * v.shape[0]


def svd(x):
    u, s, vt = jnp.linalg.svd(x, full_matrices=False)
    return jnp.sum(s * jnp.arange(1, s.shape[0] + 1)) * u.shape[0] + jnp.sum(vt[0] ** 4)


def sort(x):
    s = jnp.sort(x, axis=0)
    return jnp.sum(s ** 3 * jnp.arange(s.shape[0])[:, None]) * s.shape[0]


def top_k(x):
    v, i = lax.top_k(x, 2)
    return jnp.sum(jnp.sin(v)) * v.shape[0]


def argsort_take(x):
    y = x[jnp.argsort(x[:, 0])]
    return jnp.sum(jnp.sin(y) * jnp.arange(y.shape[0])[:, None]) * y.shape[0]


def lu(x):                       # (square: secant's lu refuses a 4x3 matrix, JAX's takes it)
    p, l, u = sla.lu(x[:3, :3])
    return jnp.sum(l ** 3) * l.shape[0] + jnp.sum(jnp.abs(u)) * u.shape[0] * x.shape[0]


def cumsum(x):
    c = jnp.cumsum(x, axis=1)
    return jnp.sum(jnp.sin(c)) * c.shape[0]


CASES = [rfft_1d, rfft_rows, fft2, irfft, qr, eigh, svd, sort, top_k, argsort_take, lu, cumsum]
SHAPES = [(4, 3), (3, 3)]       # axis 1 shorter than axis 0, and a square


def _x(shape):
    rng = np.random.default_rng(15 + shape[1])
    return rng.normal(size=shape) + np.eye(*shape) * 3      # (lu: no pivot ties)


def _fd(f, x, h=1e-6):
    """Central differences of f (array-valued), one slice per entry of x."""
    out = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(out).reshape(x.shape + np.shape(out[0]))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_jacfwd_grad_vmap_jvp(x64, f, shape):
    x = _x(shape)
    grad = secant.grad(f)
    g = np.asarray(grad(x))
    np.testing.assert_allclose(g, _fd(f, x), rtol=1e-5, atol=1e-6)
    want = _fd(grad, x)                       # (symmetric: either order of the axes)
    for name, h in (("hessian", secant.hessian(f)), ("jacfwd(grad)", secant.jacfwd(grad))):
        np.testing.assert_allclose(np.asarray(h(x)), want, rtol=1e-5, atol=1e-6, err_msg=name)
    basis = np.eye(x.size).reshape(x.size, *x.shape)        # vmap over tangents only
    _, dots = secant.vmap(secant.jvp_fn(f), in_axes=(None, 0))(x, basis)
    np.testing.assert_allclose(np.asarray(dots), g.reshape(-1), rtol=1e-5, atol=1e-6)
    _, ddots = secant.vmap(secant.jvp_fn(grad), in_axes=(None, 0))(x, basis)
    np.testing.assert_allclose(np.asarray(ddots).reshape(x.shape * 2), want, rtol=1e-5,
                               atol=1e-6)


def _pair(a, b):
    return jnp.sin(a), b * 2.0


def test_user_function_with_an_unbatched_output(x64):
    """The same through a user's function: vmap over b only, so its first output is not
    batched; `p.shape[0]` of it (4, where axis 1 has 3) must not read axis 1."""
    def f(a, b):
        p, q = _pair(a, b)
        return jnp.sum(p) * p.shape[0] + jnp.sum(q) * q.shape[0]
    a, bs = _x((4, 3)), _x((3, 2))
    got = secant.vmap(f, in_axes=(None, 0))(a, bs)
    want = [np.sum(np.sin(a)) * 4 + np.sum(2 * b) * 2 for b in bs]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
