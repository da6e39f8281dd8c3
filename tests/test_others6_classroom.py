"""Issue 15, code written by others (sixth round): a small autodiff classroom and the pytree
utilities users write around it: Newton's method printing each step, gradient descent with a
backtracking line search and a printed log, Taylor coefficients by repeated jvp and by nested
grad, a dual-number class written by the teacher compared with jvp, a check_grads helper,
hessian-vector products three ways (forward-over-reverse, reverse-over-forward,
reverse-over-reverse), a flatten_util-style ravel_pytree written by hand and a Newton step on the
flat vector, Adam over nested dicts by tree_map over several trees, a global-norm clip by
tree_reduce, and tree_util.Partial carrying a function through jit; each checked against float64
finite differences, closed forms, a Python loop and eager."""
import math

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, tree_util, value_and_grad, vjp

from others15_check import assert_trees_close, check_grad, to_snp

RNG = np.random.default_rng(6464)


# --- Newton and gradient descent, printed --------------------------------------------------------
def newton(f, x0, steps=6, verbose=True):
    df, d2f = grad(f), grad(grad(f))
    x = x0
    for k in range(steps):
        x = x - df(x) / d2f(x)
        if verbose:
            print(f"step {k}: x = {float(x):.12f}, f'(x) = {float(df(x)):.3e}")
    return x


def test_newton_minimises_and_prints(x64, capsys):
    f = lambda x: jnp.cosh(x - 1.0) + 0.5 * x ** 2
    x = newton(f, jnp.asarray(0.0))
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and out[0].startswith("step 0: x = ")
    # stationarity: sinh(x - 1) + x = 0
    np.testing.assert_allclose(np.sinh(float(x) - 1.0) + float(x), 0.0, atol=1e-12)
    assert abs(float(out[-1].split("= ")[-1])) < 1e-12


def newton_sqrt(a, steps=8):
    """sqrt(a) by Newton on x^2 - a written with grad, differentiated in a (the loop unrolled)."""
    g = lambda x: x ** 2 - a
    x = a
    for _ in range(steps):
        x = x - g(x) / grad(g)(x)
    return x


def test_differentiating_through_newton(x64):
    np.testing.assert_allclose(newton_sqrt(jnp.asarray(2.0)), math.sqrt(2.0), rtol=1e-14)
    np.testing.assert_allclose(grad(newton_sqrt)(jnp.asarray(2.0)), 0.5 / math.sqrt(2.0), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(newton_sqrt))(jnp.asarray(2.0)), 0.5 / math.sqrt(2.0), rtol=1e-10)


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def gradient_descent(f, x, steps=200, log_every=50):
    value_grad = value_and_grad(f)
    for k in range(steps):
        value, g = value_grad(x)
        t = 1.0
        while f(x - t * g) > value - 0.5 * t * jnp.sum(g ** 2):     # Armijo backtracking
            t = t * 0.5
        x = x - t * g
        if k % log_every == 0:
            print(f"iter {k:4d}  f = {float(value):.6f}  step = {t:.2e}")
    return x


def test_gradient_descent_with_line_search(x64, capsys):
    x = gradient_descent(rosenbrock, jnp.asarray([-1.0, 1.0]))
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    values = [float(line.split("f = ")[1].split()[0]) for line in out]
    assert values == sorted(values, reverse=True)   # monotone decrease (Armijo)
    assert rosenbrock(x) < 0.05


# --- Taylor series ---------------------------------------------------------------------------------
def taylor_coefficients(f, x0, order):
    """The k-th derivative by k nested jvps along 1 (the classroom version of jet)."""
    coeffs = []
    g = f
    for k in range(order + 1):
        coeffs.append(g(x0) / math.factorial(k))
        g = _derivative(g)
    return coeffs


def _derivative(g):
    return lambda x: jvp(g, (x,), (jnp.ones_like(x),))[1]


def test_taylor_by_repeated_jvp(x64):
    coeffs = taylor_coefficients(jnp.sin, jnp.asarray(0.0), 5)
    np.testing.assert_allclose(coeffs, [0, 1, 0, -1 / 6, 0, 1 / 120], atol=1e-14)
    f = lambda x: jnp.exp(x) * jnp.cos(x)
    c = taylor_coefficients(f, jnp.asarray(0.3), 4)
    # against nested grad
    g, want = f, []
    for k in range(5):
        want.append(float(g(jnp.asarray(0.3))) / math.factorial(k))
        g = grad(g)
    np.testing.assert_allclose(c, want, rtol=1e-10)
    # the truncated series approximates f nearby
    h = 0.05
    series = sum(float(ck) * h ** k for k, ck in enumerate(c))
    np.testing.assert_allclose(series, float(f(jnp.asarray(0.3 + h))), rtol=1e-8)


def test_fourth_derivative_of_a_rational_function(x64):
    f = lambda x: 1.0 / (1.0 + x ** 2)
    d4 = grad(grad(grad(grad(f))))
    x = 0.4
    want = 24 * (5 * x ** 4 - 10 * x ** 2 + 1) / (1 + x ** 2) ** 5
    np.testing.assert_allclose(d4(jnp.asarray(x)), want, rtol=1e-10)
    np.testing.assert_allclose(jit(d4)(jnp.asarray(x)), want, rtol=1e-10)


# --- dual numbers vs jvp -------------------------------------------------------------------------
class Dual:
    def __init__(self, value, deriv):
        self.value, self.deriv = value, deriv

    def __add__(self, other):
        other = other if isinstance(other, Dual) else Dual(other, 0.0)
        return Dual(self.value + other.value, self.deriv + other.deriv)

    __radd__ = __add__

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other, 0.0)
        return Dual(self.value * other.value, self.deriv * other.value + self.value * other.deriv)

    __rmul__ = __mul__


def dual_sin(d):
    return Dual(math.sin(d.value), math.cos(d.value) * d.deriv)


def poly_sin(x, sin=jnp.sin):
    return 3 * x * x + 2 * sin(x * x) + 1


def test_dual_numbers_agree_with_jvp(x64):
    for x in (0.2, 1.3, -0.7):
        d = poly_sin(Dual(x, 1.0), sin=dual_sin)
        value, tangent = jvp(poly_sin, (jnp.asarray(x),), (jnp.asarray(1.0),))
        np.testing.assert_allclose(value, d.value, rtol=1e-14)
        np.testing.assert_allclose(tangent, d.deriv, rtol=1e-14)


# --- a check_grads helper ----------------------------------------------------------------------------
def check_grads(f, x, eps=1e-6, tol=1e-6):
    """The student's gradient checker: random directions, central differences vs vjp and jvp."""
    rng = np.random.default_rng(0)
    y, pullback = vjp(f, x)
    for _ in range(3):
        v = jnp.asarray(rng.normal(size=np.shape(x)))
        u = jnp.asarray(rng.normal(size=np.shape(y)))
        fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
        _, tangent = jvp(f, (x,), (v,))
        (ct,) = pullback(u)
        assert np.allclose(tangent, fd, rtol=tol, atol=tol)
        assert np.isclose(jnp.vdot(u, tangent), jnp.vdot(ct, v), rtol=1e-10)
    return True


def test_student_gradient_checker(x64):
    w = jnp.asarray(RNG.normal(size=(3, 2)))
    f = lambda x: jnp.tanh(x @ w) * jnp.sum(x ** 2)
    assert check_grads(f, jnp.asarray(RNG.normal(size=(4, 3))))
    assert check_grads(lambda x: jnp.cumprod(jnp.sin(x)), jnp.asarray(RNG.normal(size=5)))


# --- hessian-vector products ---------------------------------------------------------------------------
def hvp_fwd_rev(f, x, v):
    return jvp(grad(f), (x,), (v,))[1]


def hvp_rev_fwd(f, x, v):
    return grad(lambda x: jvp(f, (x,), (v,))[1])(x)


def hvp_rev_rev(f, x, v):
    return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)


def test_hvp_three_ways(x64):
    f = lambda x: jnp.sum(jnp.sin(x) ** 2 * jnp.roll(x, 1)) + jnp.prod(jnp.cos(x))
    x, v = jnp.asarray(RNG.normal(size=5)), jnp.asarray(RNG.normal(size=5))
    want = np.asarray(hessian(f)(x)) @ np.asarray(v)
    for hvp in (hvp_fwd_rev, hvp_rev_fwd, hvp_rev_rev):
        assert_trees_close(hvp(f, x, v), want, rtol=1e-10)
        assert_trees_close(jit(hvp, static_argnums=0)(f, x, v), want, rtol=1e-10)


# --- pytree utilities ---------------------------------------------------------------------------------
def ravel_pytree(tree):
    """flatten_util.ravel_pytree written by hand: one vector and the function that undoes it."""
    leaves, treedef = tree_util.tree_flatten(tree)
    shapes = [jnp.shape(leaf) for leaf in leaves]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = jnp.concatenate([jnp.ravel(leaf) for leaf in leaves])

    def unravel(vec):
        parts, start = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(jnp.reshape(vec[start:start + size], shape))
            start += size
        return tree_util.tree_unflatten(treedef, parts)
    return flat, unravel


def model_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - y) ** 2) + 0.01 * jnp.sum(params["w1"] ** 2)


def test_ravel_pytree_and_a_newton_step_on_the_flat_vector(x64):
    params = {"w1": RNG.normal(size=(2, 3)), "b1": RNG.normal(size=3), "w2": RNG.normal(size=3)}
    x, y = RNG.normal(size=(10, 2)), RNG.normal(size=10)
    p = to_snp(params)
    flat, unravel = ravel_pytree(p)
    assert flat.shape == (12,)
    assert_trees_close(unravel(flat), params)
    flat_loss = lambda v: model_loss(unravel(v), x, y)
    g = grad(flat_loss)(flat)
    assert_trees_close(unravel(g), grad(model_loss)(p, x, y), rtol=1e-12)
    h = hessian(flat_loss)(flat)
    assert h.shape == (12, 12)
    assert_trees_close(h, jacfwd(jacrev(flat_loss))(flat), rtol=1e-10)
    # the flat Hessian against a forward-over-reverse product along a direction
    v = jnp.asarray(RNG.normal(size=12))
    assert_trees_close(h @ v, jvp(grad(flat_loss), (flat,), (v,))[1], rtol=1e-10)
    # a Newton step with the Hessian shifted to be positive definite is a descent direction
    lam = max(0.0, -float(np.linalg.eigvalsh(np.asarray(h)).min())) + 1.0
    step = jnp.linalg.solve(h + lam * jnp.eye(12), g)
    assert float(jnp.dot(g, step)) > 0
    check_grad(lambda v: model_loss(unravel(v), x, y), np.asarray(flat))


def adam_init(params):
    zeros = tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": 0}


def adam_update(grads, state, params, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    t = state["t"] + 1
    m = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state["v"], grads)
    params = tree_util.tree_map(
        lambda p, m, v: p - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps),
        params, m, v)
    return params, {"m": m, "v": v, "t": t}


def clip_by_global_norm(grads, max_norm):
    norm = jnp.sqrt(tree_util.tree_reduce(lambda a, b: a + b,
                                          tree_util.tree_map(lambda g: jnp.sum(g ** 2), grads)))
    scale = jnp.minimum(1.0, max_norm / norm)
    return tree_util.tree_map(lambda g: g * scale, grads), norm


def test_adam_over_nested_dicts_with_clipping(x64):
    params = to_snp({"enc": {"w1": RNG.normal(size=(2, 3)), "b1": RNG.normal(size=3)},
                     "w2": RNG.normal(size=3)})
    x, y = RNG.normal(size=(10, 2)), RNG.normal(size=10)
    loss = lambda p: model_loss({"w1": p["enc"]["w1"], "b1": p["enc"]["b1"], "w2": p["w2"]}, x, y)

    @jit
    def step(params, state):
        value, grads = value_and_grad(loss)(params)
        grads, norm = clip_by_global_norm(grads, 1.0)
        params, state = adam_update(grads, state, params)
        return params, state, value, norm

    state = adam_init(params)
    p, values = params, []
    for _ in range(30):
        p, state, value, norm = step(p, state)
        values.append(float(value))
    assert values[-1] < values[0]
    # one eager step equals one jitted step
    st0 = adam_init(params)
    g, n = clip_by_global_norm(grad(loss)(params), 1.0)
    want, _ = adam_update(g, st0, params)
    got = step(params, st0)[0]
    assert_trees_close(got, want, rtol=1e-12)
    leaves = tree_util.tree_leaves(grad(loss)(params))
    np.testing.assert_allclose(n, np.sqrt(sum(float(jnp.sum(l ** 2)) for l in leaves)), rtol=1e-12)
    # the clipped gradient, differentiated through (a meta-gradient): against differences
    clipped = lambda p: jnp.sum(tree_util.tree_leaves(clip_by_global_norm(grad(loss)(p), 0.5)[0])[0])
    check_grad(clipped, tree_util.tree_map(np.asarray, params))


def test_partial_carries_a_function_through_jit(x64):
    def apply(fn, x):
        return fn(x) * 2

    fn = tree_util.Partial(lambda scale, x: jnp.sin(scale * x), jnp.asarray(1.5))
    x = jnp.asarray(RNG.normal(size=4))
    assert_trees_close(jit(apply)(fn, x), 2 * np.sin(1.5 * np.asarray(x)))
    g = grad(lambda x: jnp.sum(apply(fn, x)))(x)
    assert_trees_close(g, 3.0 * np.cos(1.5 * np.asarray(x)), rtol=1e-12)
