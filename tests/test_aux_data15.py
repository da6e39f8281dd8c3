"""Issue 15: numbers held in a pytree's aux data (a registered class's tree_flatten aux, the
meta_fields of register_dataclass) are constants: their tangent is zero and they get no
cotangent. A tangent object is built with the primal's structure, so it holds the primal's own
aux value: reading the tangent of `p.shift` from it gave 0.5 where 0 belongs (a silently wrong
jacfwd), and setting a cotangent on it changed the structure (grad refused). Checked against
float64 central differences, closed forms and Python loops."""
import dataclasses

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, tree_util, vmap

from others15_check import fd_grad, fd_jvp

RNG = np.random.default_rng(1515)
XS, YS = RNG.normal(size=6), RNG.normal(size=6)
A = np.vander(XS - 0.5, 3, increasing=True)        # the design matrix of the shifted fit


@tree_util.register_pytree_node_class
class Shifted:
    """c0 + c1 (x - shift) + c2 (x - shift)^2, the shift a float in the aux data."""
    def __init__(self, coeffs, shift):
        self.coeffs, self.shift = coeffs, shift

    def tree_flatten(self):
        return (self.coeffs,), self.shift

    @classmethod
    def tree_unflatten(cls, shift, children):
        return cls(children[0], shift)

    def __call__(self, x):
        return jnp.dot(self.coeffs, (x - self.shift) ** jnp.arange(3))


def loss(p):
    return jnp.mean((vmap(p)(jnp.asarray(XS)) - jnp.asarray(YS)) ** 2)


def cubic(p):
    """Not quadratic in the coefficients, so its Hessian depends on where it is taken."""
    return jnp.sum(jnp.sin(p.coeffs * (1.0 + p.shift)) * p.coeffs) * p.shift


def poly(c=None):
    return Shifted(jnp.asarray(RNG.normal(size=3) if c is None else c), 0.5)


def fd_hessian(f, p):
    """Central differences of grad(f) (a Shifted) along each coefficient."""
    g = lambda c: np.asarray(grad(f)(Shifted(jnp.asarray(c), p.shift)).coeffs)
    c = np.asarray(p.coeffs)
    return np.stack([(g(c + e) - g(c - e)) / 2e-6 for e in np.eye(3) * 1e-6], axis=1)


def test_jvp_reading_aux_data(x64):
    p, t = poly(), Shifted(jnp.asarray(RNG.normal(size=3)), 0.5)
    for f in (loss, cubic):
        out, out_dot = jvp(f, (p,), (t,))
        np.testing.assert_allclose(out, f(p), rtol=1e-12)
        np.testing.assert_allclose(out_dot, fd_jvp(f, (p,), (t,)), rtol=1e-6, atol=1e-9)
    # the tangent along the coefficients only: A t / n of the residuals, in closed form
    r = A @ np.asarray(p.coeffs) - YS
    np.testing.assert_allclose(jvp(loss, (p,), (t,))[1], 2 * r @ (A @ np.asarray(t.coeffs)) / 6,
                               rtol=1e-10)


def test_jacfwd_and_jacrev_reading_aux_data(x64):
    p = poly()
    for f in (loss, cubic):
        want = fd_grad(f, (p,)).coeffs
        for jac in (jacfwd, jacrev, grad):
            g = jac(f)(p)
            assert isinstance(g, Shifted) and g.shift == 0.5
            np.testing.assert_allclose(g.coeffs, want, rtol=1e-6, atol=1e-9)


def test_hessians_reading_aux_data(x64):
    p = poly()
    want = 2 * A.T @ A / 6                              # the normal equations' Hessian
    for h in (hessian(loss), jacfwd(jacfwd(loss)), jacfwd(jacrev(loss)), jacrev(jacfwd(loss)),
              jacrev(jacrev(loss)), jit(jacfwd(jacfwd(loss)))):
        np.testing.assert_allclose(h(p).coeffs.coeffs, want, rtol=1e-10)
    hc = fd_hessian(cubic, p)
    for h in (hessian(cubic), jacfwd(jacfwd(cubic)), jacrev(jacrev(cubic)),
              jit(jacfwd(jacfwd(cubic))), jit(jacrev(jacrev(cubic)))):
        np.testing.assert_allclose(h(p).coeffs.coeffs, hc, rtol=1e-6, atol=1e-8)


def test_vmap_of_jvp_reading_aux_data(x64):
    p = poly()
    ts = RNG.normal(size=(4, 3))
    batched = vmap(lambda t: jvp(cubic, (p,), (t,))[1])(Shifted(jnp.asarray(ts), 0.5))
    for k in range(4):
        t = Shifted(jnp.asarray(ts[k]), 0.5)
        np.testing.assert_allclose(batched[k], fd_jvp(cubic, (p,), (t,)), rtol=1e-6, atol=1e-9)


def test_vmap_of_grad_reading_aux_data(x64):
    cs = RNG.normal(size=(4, 3))
    g = vmap(grad(cubic))(Shifted(jnp.asarray(cs), 0.5))
    assert isinstance(g, Shifted) and g.shift == 0.5
    for k in range(4):
        np.testing.assert_allclose(g.coeffs[k], grad(cubic)(poly(cs[k])).coeffs, rtol=1e-12)
        np.testing.assert_allclose(g.coeffs[k], fd_grad(cubic, (poly(cs[k]),)).coeffs,
                                   rtol=1e-6, atol=1e-9)


# --- register_dataclass with a float meta field ----------------------------------------------------
@dataclasses.dataclass
class Layer:
    w: object
    b: object
    scale: float


tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=["scale"])


def layer_loss(layer, x):
    return jnp.sum(layer.scale * jnp.tanh(x @ layer.w + layer.b) ** 2) + layer.scale ** 2


def test_meta_field_float_in_arithmetic(x64):
    layer = Layer(jnp.asarray(RNG.normal(size=(3, 2))), jnp.asarray(RNG.normal(size=2)), 1.7)
    x = jnp.asarray(RNG.normal(size=(4, 3)))
    want = fd_grad(layer_loss, (layer, x))
    for jac in (grad, jacfwd, jacrev, lambda f: jit(grad(f))):
        g = jac(layer_loss)(layer, x)
        assert isinstance(g, Layer) and g.scale == 1.7
        np.testing.assert_allclose(g.w, want.w, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(g.b, want.b, rtol=1e-6, atol=1e-9)
    t = Layer(jnp.asarray(RNG.normal(size=(3, 2))), jnp.asarray(RNG.normal(size=2)), 1.7)
    np.testing.assert_allclose(jvp(lambda l: layer_loss(l, x), (layer,), (t,))[1],
                               fd_jvp(lambda l: layer_loss(l, x), (layer,), (t,)), rtol=1e-6)
    # d/db of grad by central differences of grad, against the Hessian's b block
    hb = hessian(layer_loss)(layer, x).b.b
    gb = lambda b: np.asarray(grad(layer_loss)(Layer(layer.w, jnp.asarray(b), 1.7), x).b)
    b = np.asarray(layer.b)
    fd = np.stack([(gb(b + e) - gb(b - e)) / 2e-6 for e in np.eye(2) * 1e-6], axis=1)
    np.testing.assert_allclose(hb, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jacfwd(jacfwd(layer_loss))(layer, x).b.b, fd, rtol=1e-6,
                               atol=1e-8)


# --- an int in the aux data, a loop's bound ---------------------------------------------------------
@tree_util.register_pytree_node_class
class Series:
    """sum_{k < n} a^k / (k + 1): n, an int in the aux data, bounds a range()."""
    def __init__(self, a, n):
        self.a, self.n = a, n

    def tree_flatten(self):
        return (self.a,), self.n

    @classmethod
    def tree_unflatten(cls, n, children):
        return cls(children[0], n)

    def total(self):
        out = 0.0
        for k in range(self.n):
            out = out + jnp.sum(self.a ** k) / (k + 1) * self.n
        return out


def test_int_aux_data_in_range(x64):
    s = Series(jnp.asarray(RNG.uniform(0.5, 1.5, size=3)), 4)
    f = Series.total
    want = fd_grad(f, (s,)).a
    for jac in (grad, jacfwd, jacrev):
        g = jac(f)(s)
        assert isinstance(g, Series) and g.n == 4
        np.testing.assert_allclose(g.a, want, rtol=1e-6, atol=1e-9)
    a = np.asarray(s.a)
    closed = 4 * sum(k * a ** (k - 1) / (k + 1) for k in range(1, 4))
    np.testing.assert_allclose(grad(f)(s).a, closed, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(jacfwd(f))(s).a.a,
                               np.diag(4 * sum(k * (k - 1) * a ** (k - 2) / (k + 1)
                                               for k in range(2, 4))), rtol=1e-10, atol=1e-12)
    t = Series(jnp.asarray(RNG.normal(size=3)), 4)
    np.testing.assert_allclose(jvp(f, (s,), (t,))[1], closed @ np.asarray(t.a), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(f))(s).a, closed, rtol=1e-12)
