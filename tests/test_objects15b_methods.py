"""Issue 15 (objects15b): methods with default, keyword-only parameters passed as functions
(grad(model.loss), vmap(obj.f), jit(obj.f)), a method handing lax.scan its own defaulted
method (lax.scan(self.step, ...)) on a constant object and on one built from differentiated
values, and a lambda or nested def with a defaulted parameter as lax.scan's step (whose
default used to shift onto the closed-over value: a silently wrong derivative). Each against
float64 central differences, a Python loop or eager."""
import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, lax

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(15152)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, p, scale=2.0, *, reg=0.1):
        return scale * jnp.sum(jnp.sin(p * self.w)) + reg * jnp.sum(p ** 2)

    def f(self, x, k=3.0):
        return jnp.sin(x) * k * self.w

    def step(self, c, x, rate=0.5):
        c = c * rate + x * self.w
        return c, c ** 2

    def run(self, xs):
        return jnp.sum(lax.scan(self.step, 0.0, xs)[1])

    def run_grad(self, p):
        return grad(self.loss)(p)


def test_defaulted_method_as_a_function(x64):
    m = Model(to_snp(RNG.normal(size=3)))
    p = RNG.normal(size=3)
    check_grad(m.loss, p)
    check_grad(lambda q: m.loss(q, 3.0, reg=0.5), p)
    g = grad(m.loss)(to_snp(p), 3.0, reg=0.5)
    assert_trees_close(g, fd_grad(lambda q: m.loss(q, 3.0, reg=0.5), (to_snp(p),)), rtol=1e-5,
                       atol=1e-6)
    check_vmap(m.f, (RNG.normal(size=(4, 3)),))
    x = to_snp(RNG.normal(size=3))
    assert_trees_close(jit(m.f)(x), m.f(x))
    assert_trees_close(jit(m.f)(x, 2.0), m.f(x, 2.0))


def test_scan_of_a_defaulted_method_of_a_constant_object(x64):
    m = Model(1.5)
    xs = RNG.normal(size=5)
    g = check_grad(m.run, xs)
    c, want = 0.0, np.zeros(5)          # closed form: c_t = c_{t-1} / 2 + 1.5 x_t
    cs = []
    for x in np.asarray(xs):
        c = c * 0.5 + 1.5 * x
        cs.append(c)
    for t in range(5):      # d sum c^2 / d x_t = sum_{s >= t} 2 c_s 1.5 0.5^(s - t)
        want[t] = sum(2 * cs[s] * 1.5 * 0.5 ** (s - t) for s in range(t, 5))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-10)
    check_vmap(m.run, (RNG.normal(size=(3, 5)),))


def test_scan_of_a_defaulted_method_of_an_object_built_in_place(x64):
    xs = to_snp(RNG.normal(size=4))

    def f(w):
        return Model(w).run(xs)

    def held(w):
        m = Model(w)
        return m.run(xs)
    check_grad(f, 1.3)
    check_grad(held, 0.7)
    check_vmap(f, (RNG.normal(size=3),))


def test_grad_of_own_defaulted_method_in_a_method(x64):
    p = RNG.normal(size=3)

    def f(w):
        return jnp.sum(Model(w).run_grad(to_snp(p)) ** 2)
    check_grad(f, RNG.normal(size=3))


def test_scan_step_with_a_default_closing_over_a_local(x64):
    xs = to_snp(RNG.normal(size=4))

    def lam(w):
        return lax.scan(lambda c, x, r=0.5: (c * r + x * w, c), 0.0, xs)[0]

    def nested(w):
        def step(c, x, r=0.5):
            return c * r + x * w, c
        return lax.scan(step, 0.0, xs)[0]
    want = sum(float(x) * 0.5 ** (3 - t) for t, x in enumerate(np.asarray(xs)))
    for f in (lam, nested):
        np.testing.assert_allclose(float(grad(f)(1.5)), want, rtol=1e-10)
        check_grad(f, 1.5)


def test_defaults_beside_closed_over_locals_refused(x64):
    """grad of a lambda or nested def with a defaulted parameter that closes over a local: the
    local was passed in the default's place (d/dw sum(q^2 w + s q) read as 3, not 2 sum q);
    now a clear error naming the user's line."""
    import pytest
    p = to_snp(np.array([0.1, 0.2, 0.3]))

    def lam(w):
        return jnp.sum(grad(lambda q, s=2.0: jnp.sum(q * q * w + s * q))(p))

    def nested(w):
        def h(q, s=2.0):
            return jnp.sum(q * q * w + s * q)
        return jnp.sum(grad(h)(p))
    for f in (lam, nested):
        with pytest.raises(secant.SecantError, match="closes over the local w") as e:
            grad(f)(1.5)
        assert "test_objects15b_methods.py" in str(e.value)


# --- dataclass fields with default_factory, __post_init__ calling methods of self ---------------
import dataclasses  # noqa: E402

from secant import hessian, jacrev, tree_util, vmap  # noqa: E402


@dataclasses.dataclass
class Scaled:
    w: object
    hist: list = dataclasses.field(default_factory=list)
    b: object = dataclasses.field(default_factory=lambda: jnp.zeros(3))

    def __post_init__(self):
        self.scale = self.norm()
        self.hist.append(self.scale)

    def norm(self):
        return jnp.sum(self.w ** 2) + jnp.sum(self.b)

    def apply(self, x):
        return jnp.sum(self.w * x) * self.scale + self.hist[0]


@tree_util.register_dataclass
@dataclasses.dataclass
class WithExtra:
    w: object
    extra: list = dataclasses.field(default_factory=lambda: [jnp.ones(3), 2.0 * jnp.ones(3)])


def test_dataclass_default_factory_and_post_init_methods(x64):
    x = to_snp(RNG.normal(size=3))

    def f(w):
        return Scaled(w).apply(x)

    def held(w):
        p = WithExtra(w)
        return jnp.sum(jnp.sin(p.w) * p.extra[0] * p.extra[1])
    w = RNG.normal(size=3)
    g = check_grad(f, w)
    s, wx = np.sum(w ** 2), np.sum(w * np.asarray(x))        # closed form
    np.testing.assert_allclose(np.asarray(g), np.asarray(x) * s + 2 * w * wx + 2 * w, rtol=1e-10)
    check_vmap(f, (RNG.normal(size=(4, 3)),))
    np.testing.assert_allclose(np.asarray(check_grad(held, w)), 2 * np.cos(w), rtol=1e-10)
    check_vmap(held, (RNG.normal(size=(4, 3)),))
    p = WithExtra(to_snp(w))
    g = grad(lambda p: jnp.sum(p.w * p.extra[1]))(p)
    np.testing.assert_allclose(np.asarray(g.w), 2.0 * np.ones(3))
    np.testing.assert_allclose(np.asarray(g.extra[1]), w)


# --- vmap(hessian(obj.m)) / vmap(jacrev(obj.m)) of an object known only at run time -------------
class Cubic:
    def __init__(self, a):
        self.a = a

    def m(self, x):
        return jnp.sum(self.a * x ** 3)


class Wave:
    def __init__(self, a):
        self.a = a

    def m(self, x):
        return jnp.sum(jnp.sin(self.a * x))


def _hess_loss(w, obj, xs):
    return jnp.sum(vmap(hessian(obj.m))(xs * w))


def _jac_loss(w, obj, xs):
    return jnp.sum(vmap(jacrev(obj.m))(xs * w) ** 2)


def test_transform_of_a_method_of_a_parameter_object(x64):
    xs = to_snp(RNG.normal(size=(2, 3)))
    for obj in (Cubic(2.0), Wave(1.5)):
        for f in (_hess_loss, _jac_loss):
            g = check_grad(lambda w: f(w, obj, xs), 1.3)
            ws = to_snp(np.array([1.3, 0.7]))
            got = vmap(f, (0, None, None))(ws, obj, xs)
            np.testing.assert_allclose(np.asarray(got), [float(f(w, obj, xs)) for w in ws],
                                       rtol=1e-10)
            assert np.isfinite(float(g))
    # closed form: the Hessian of sum(a y^3) is diagonal, 6 a y (a = 2, y = x w)
    h = _hess_loss(1.3, Cubic(2.0), xs)
    np.testing.assert_allclose(float(h), 12 * 1.3 * float(np.sum(np.asarray(xs))), rtol=1e-10)


# --- grad(make_loss(f, s)) of a closure factory given a traced s --------------------------------
def _inner(p, s):
    return jnp.sum(jnp.sin(p * s))


def make_loss(f, s):
    def loss(p):
        return f(p, s) * s
    return loss


def _outer(s, p):
    return jnp.sum(grad(make_loss(_inner, s))(p) ** 2)


def _called(s, p):
    return make_loss(_inner, s)(p)


def test_grad_of_a_closure_factory_given_a_traced_value(x64):
    p = to_snp(RNG.normal(size=3))
    for f in (_outer, _called):
        check_grad(lambda s: f(s, p), 1.3)
        check_vmap(lambda s: f(s, p), (RNG.normal(size=4),))
    s, pn = 1.3, np.asarray(p)     # closed form: grad_p loss = s^2 cos(p s)
    np.testing.assert_allclose(float(_outer(s, p)), np.sum((s ** 2 * np.cos(pn * s)) ** 2),
                               rtol=1e-10)


# --- vmap out_axes None for an unbatched leaf beside batched ones in a dict -----------------------
def _stats(x, w):
    return ({"w": jnp.sin(x) * w, "n": jnp.sum(w ** 2), "m": jnp.outer(x, w)},)


def test_out_axes_none_for_an_unbatched_leaf_of_a_dict(x64):
    import pytest
    xs, w = to_snp(RNG.normal(size=(4, 3))), to_snp(RNG.normal(size=3))
    spec = ({"w": 0, "n": None, "m": 1},)
    rows = [_stats(x, w)[0] for x in xs]
    for mapped in (vmap(_stats, (0, None), spec), jit(vmap(_stats, (0, None), spec))):
        (out,) = mapped(xs, w)
        assert_trees_close(out["w"], np.stack([np.asarray(r["w"]) for r in rows]))
        assert_trees_close(out["m"], np.stack([np.asarray(r["m"]) for r in rows], axis=1))
        assert_trees_close(out["n"], rows[0]["n"])      # unbatched: one value, no batch axis

    def loss(w):
        (out,) = vmap(_stats, (0, None), spec)(xs, w)
        return jnp.sum(out["w"] ** 2) + out["n"] * jnp.sum(out["m"])
    check_grad(loss, np.asarray(w))
    with pytest.raises(secant.SecantError, match="out_axes=None"):     # n batched: JAX refuses
        vmap(lambda x: {"w": x, "n": x * 2.0}, out_axes={"w": 0, "n": None})(xs)
