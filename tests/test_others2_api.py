"""Issue 15, code written by others (second round): how users call the API: string-keyed
getattr(jnp, name) dispatch tables, decorators (functools.wraps, partial, decorators with
arguments), functions returning (loss, aux) with has_aux, value_and_grad with argnums tuples,
static_argnums / static_argnames, vmap with in_axes dicts / None / negative axes and out_axes,
nested vmap of grad (per-example Hessian diagonals), jax.nn losses; checked against float64
finite differences, closed forms, a Python loop and eager."""
import functools

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jacfwd, jit, nn, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp, to_snp

RNG = np.random.default_rng(2424)


# --- a string-keyed dispatch table --------------------------------------------------------------
ACTS = {"relu": "relu", "tanh": "tanh", "sin": "sin", "exp": "exp"}


def apply_named(x, names):
    for name in names:
        fn = getattr(nn, name) if hasattr(nn, name) else getattr(jnp, name)
        x = fn(x)
    return x


def named_loss(x, names=("tanh", "sin")):
    return jnp.sum(apply_named(x, names) ** 2)


def test_getattr_dispatch_by_name(x64):
    x = np.array([-0.8, 0.3, 1.1])
    for names in (("tanh", "sin"), ("sin", "exp"), ("relu", "tanh"), ("softplus", "cos")):
        check_grad(lambda x: named_loss(x, names), x)
        check_vmap(lambda x: apply_named(x, names), (RNG.normal(size=(3, 2)),))
    g = grad(lambda x: jnp.sum(getattr(jnp, "sin")(x)))(to_snp(x))
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-12)


def make_reducer(kind):
    table = {"mean": jnp.mean, "sum": jnp.sum, "max": jnp.max, "l2": lambda v: jnp.sqrt(jnp.sum(v ** 2))}
    return table[kind]


def test_reducer_table(x64):
    x = np.array([0.5, -1.2, 2.0, 0.1])
    for kind in ("mean", "sum", "max", "l2"):
        red = make_reducer(kind)
        check_grad(lambda x: red(jnp.sin(x)), x)
        check_vmap(lambda x: red(x ** 2), (RNG.normal(size=(3, 4)),))


# --- decorators --------------------------------------------------------------------------------
def scaled(factor):
    """A decorator with an argument: multiplies the result."""
    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return factor * f(*args, **kwargs)
        return wrapper
    return deco


def clamp_input(lo, hi):
    def deco(f):
        @functools.wraps(f)
        def wrapper(x):
            return f(jnp.clip(x, lo, hi))
        return wrapper
    return deco


@scaled(3.0)
@clamp_input(-1.0, 1.0)
def energy(x):
    return jnp.sum(x ** 3)


def test_stacked_decorators_with_arguments(x64):
    x = np.array([-2.0, -0.5, 0.4, 1.5])
    g = check_grad(energy, x)
    np.testing.assert_allclose(g, np.where(np.abs(x) < 1, 9 * x ** 2, 0.0), rtol=1e-12)
    check_vmap(grad(energy), (RNG.normal(size=(3, 4)),))
    assert energy.__name__ == "energy"


def counted(f):
    calls = []

    @functools.wraps(f)
    def wrapper(*args):
        calls.append(1)
        return f(*args)
    wrapper.calls = calls
    return wrapper


@counted
def smooth(x, y):
    return jnp.sum(jnp.log1p(x ** 2) * y)


def test_wraps_decorator_with_side_list(x64):
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    check_grad(smooth, x, y)
    check_grad(smooth, x, y, argnum=1)
    assert len(smooth.calls) > 0           # the wrapper ran (it is the function transformed)


@functools.partial(jit, static_argnums=(1,))
def power_sum(x, k):
    out = 0.0
    for i in range(1, k + 1):
        out = out + jnp.sum(x ** i) / i
    return out


def test_partial_jit_static_argnums_decorator(x64):
    x = np.array([0.1, 0.5, -0.3])
    for k in (1, 3):
        want = sum(np.sum(x ** i) / i for i in range(1, k + 1))
        np.testing.assert_allclose(power_sum(to_snp(x), k), want, rtol=1e-12)
        g = grad(power_sum)(to_snp(x), k)
        np.testing.assert_allclose(g, sum(x ** (i - 1) for i in range(1, k + 1)), rtol=1e-12)
    check_vmap(lambda x: power_sum(x, 3), (RNG.normal(size=(2, 3)) * 0.5,))


def test_jit_static_argnames_mode_string(x64):
    @functools.partial(jit, static_argnames=("mode",))
    def reduce_loss(x, mode="mean"):
        v = (x - 1.0) ** 2
        if mode == "mean":
            return jnp.mean(v)
        elif mode == "sum":
            return jnp.sum(v)
        return jnp.max(v)

    x = np.array([0.5, 2.0, -1.0])
    for mode, red in (("mean", np.mean), ("sum", np.sum), ("max", np.max)):
        np.testing.assert_allclose(reduce_loss(to_snp(x), mode=mode), red((x - 1) ** 2))
        check_grad(lambda x: reduce_loss(x, mode=mode), x)


# --- has_aux, value_and_grad, argnums tuples ---------------------------------------------------
def loss_and_metrics(params, x, y):
    logits = x @ params["w"] + params["b"]
    logp = nn.log_softmax(logits)
    loss = -jnp.mean(jnp.sum(logp * nn.one_hot(y, 3), axis=-1))
    acc = jnp.mean(jnp.argmax(logits, axis=-1) == y)
    return loss, {"acc": acc, "logits": logits}


CLS_X = RNG.normal(size=(6, 4))
CLS_Y = np.array([0, 2, 1, 1, 0, 2])
CLS_P = {"w": RNG.normal(size=(4, 3)) * 0.3, "b": np.zeros(3)}


def test_has_aux_classification(x64):
    p, x, y = to_snp((CLS_P, CLS_X, CLS_Y))
    (loss, aux), g = value_and_grad(loss_and_metrics, has_aux=True)(p, x, y)
    fd = fd_grad(lambda p: loss_and_metrics(p, x, y)[0], (p,))
    assert_trees_close(g, fd, rtol=1e-6)
    logits = CLS_X @ CLS_P["w"] + CLS_P["b"]
    np.testing.assert_allclose(aux["acc"], np.mean(np.argmax(logits, -1) == CLS_Y))
    np.testing.assert_allclose(aux["logits"], logits, rtol=1e-12)
    g2, aux2 = jit(grad(loss_and_metrics, has_aux=True))(p, x, y)
    assert_trees_close(g2, g, rtol=1e-10)
    # softmax cross entropy: the logits' gradient is (softmax - one_hot) / n
    gl = grad(lambda l: -jnp.mean(jnp.sum(nn.log_softmax(l) * nn.one_hot(y, 3), -1)))(
        jnp.asarray(logits))
    sm = np.exp(logits) / np.sum(np.exp(logits), -1, keepdims=True)
    np.testing.assert_allclose(gl, (sm - np.eye(3)[CLS_Y]) / 6, rtol=1e-10)
    # per-example (loss, aux) with vmap of has_aux grad
    one = lambda p, x, y: loss_and_metrics(p, x[None], y[None])
    gs, auxs = vmap(grad(one, has_aux=True), in_axes=(None, 0, 0))(p, x, y)
    for i in range(2):
        gi, ai = grad(one, has_aux=True)(p, x[i], y[i])
        assert_trees_close(tree_util.tree_map(lambda v: v[i], gs), gi, rtol=1e-10)
        np.testing.assert_allclose(auxs["logits"][i], ai["logits"], rtol=1e-12)


def three_arg(a, b, c):
    return jnp.sum(a * jnp.sin(b)) + jnp.sum(b ** 2 * c) + a[0] * c


def test_value_and_grad_argnums_tuples(x64):
    a, b, c = RNG.normal(size=2), RNG.normal(size=2), 0.7
    v, (ga, gc) = value_and_grad(three_arg, argnums=(0, 2))(*to_snp((a, b, c)))
    np.testing.assert_allclose(v, three_arg(*to_snp((a, b, c))))
    np.testing.assert_allclose(ga, fd_grad(three_arg, to_snp((a, b, c)), 0), rtol=1e-6)
    np.testing.assert_allclose(gc, fd_grad(three_arg, to_snp((a, b, c)), 2), rtol=1e-6)
    gb, ga2 = grad(three_arg, argnums=(1, 0))(*to_snp((a, b, c)))     # (order as given)
    np.testing.assert_allclose(ga2, ga, rtol=1e-12)
    np.testing.assert_allclose(gb, fd_grad(three_arg, to_snp((a, b, c)), 1), rtol=1e-6)
    # vmap over c only, argnums tuple inside
    out = check_vmap(grad(three_arg, argnums=(0, 1)), (a, b, np.array([0.1, 0.7, -1.0])),
                     in_axes=(None, None, 0))
    assert isinstance(out, tuple) and len(out) == 2
    # jacfwd with an argnums tuple: a tuple of Jacobians
    J = jacfwd(lambda a, b: jnp.sin(a * b), argnums=(0, 1))(*to_snp((a, b)))
    np.testing.assert_allclose(J[0], np.diag(b * np.cos(a * b)), rtol=1e-12)
    np.testing.assert_allclose(J[1], np.diag(a * np.cos(a * b)), rtol=1e-12)


# --- vmap with in_axes dicts / None / negative axes / out_axes ----------------------------------
def affine(p, x):
    return jnp.tanh(p["W"] @ x + p["b"])


def test_vmap_in_axes_dict_negative_axis_out_axes(x64):
    p = {"W": RNG.normal(size=(3, 2)), "b": RNG.normal(size=3)}
    xs_last = RNG.normal(size=(2, 5))            # examples along the last axis
    got = check_vmap(affine, (p, xs_last), in_axes=(None, -1), out_axes=1)
    assert got.shape == (3, 5)
    # per-example biases from a dict in_axes, weights shared; examples out along axis -1
    ps = {"W": p["W"], "b": RNG.normal(size=(5, 3))}
    got = vmap(affine, in_axes=({"W": None, "b": 0}, -1), out_axes=-1)(to_snp(ps), to_snp(xs_last))
    for i in range(5):
        np.testing.assert_allclose(got[:, i], affine(to_snp({"W": p["W"], "b": ps["b"][i]}),
                                                     to_snp(xs_last[:, i])), rtol=1e-12)
    # grad inside, out_axes for a tuple output
    def loss_and_out(p, x):
        y = affine(p, x)
        return jnp.sum(y ** 2), y

    g, y = vmap(lambda p, x: (grad(lambda p: loss_and_out(p, x)[0])(p), loss_and_out(p, x)[1]),
                in_axes=(None, 1), out_axes=(0, 1))(to_snp(p), to_snp(xs_last))
    assert g["W"].shape == (5, 3, 2) and y.shape == (3, 5)
    gi = grad(lambda p: loss_and_out(p, to_snp(xs_last[:, 2]))[0])(to_snp(p))
    assert_trees_close(tree_util.tree_map(lambda v: v[2], g), gi, rtol=1e-10)


def test_vmap_out_axes_none_for_shared_output(x64):
    def f(x, w):
        return jnp.sum(x * w), w * 2.0

    xs, w = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    s, w2 = vmap(f, in_axes=(0, None), out_axes=(0, None))(to_snp(xs), to_snp(w))
    np.testing.assert_allclose(s, xs @ w, rtol=1e-12)
    np.testing.assert_allclose(w2, 2 * w)


# --- nested vmap of grad: per-example Hessian diagonals ------------------------------------------
def per_example_loss(w, x, y):
    return nn.softplus(-y * jnp.dot(w, x)) + 0.1 * jnp.sum(w ** 4)


def hessian_diag(f):
    def diag(w, *rest):
        eye = jnp.eye(w.shape[0])
        hvp = lambda v: secant.jvp(lambda w: grad(f)(w, *rest), (w,), (v,))[1]
        return jnp.diagonal(vmap(hvp)(eye))
    return diag


def test_per_example_hessian_diagonals(x64):
    w = RNG.normal(size=3)
    xs, ys = RNG.normal(size=(4, 3)), np.array([1.0, -1.0, 1.0, -1.0])
    diags = vmap(hessian_diag(per_example_loss), in_axes=(None, 0, 0))(*to_snp((w, xs, ys)))
    for i in range(4):
        H = secant.hessian(per_example_loss)(*to_snp((w, xs[i], ys[i])))
        np.testing.assert_allclose(diags[i], np.diag(np.asarray(H)), rtol=1e-10)
        fd = np.stack([fd_jvp(grad(per_example_loss), to_snp((w, xs[i], ys[i])),
                              (e, np.zeros(3), 0.0)) for e in np.eye(3)])
        np.testing.assert_allclose(diags[i], np.diag(fd), rtol=1e-5, atol=1e-7)
    got = jit(vmap(hessian_diag(per_example_loss), in_axes=(None, 0, 0)))(*to_snp((w, xs, ys)))
    np.testing.assert_allclose(got, diags, rtol=1e-10)


def test_vmap_vmap_grad_second_derivative_grid(x64):
    f = lambda a, x: jnp.sin(a * x) * x ** 2
    d2 = grad(grad(f, argnums=1), argnums=1)
    a_s, x_s = np.array([0.5, 1.0, 2.0]), np.array([-1.0, 0.3, 0.7, 1.5])
    grid = vmap(vmap(d2, in_axes=(None, 0)), in_axes=(0, None))(*to_snp((a_s, x_s)))
    A, Xg = np.meshgrid(a_s, x_s, indexing="ij")
    want = (2 * np.sin(A * Xg) + 4 * A * Xg * np.cos(A * Xg) - A ** 2 * Xg ** 2 * np.sin(A * Xg))
    np.testing.assert_allclose(grid, want, rtol=1e-10)
    np.testing.assert_allclose(jit(vmap(vmap(d2, in_axes=(None, 0)), in_axes=(0, None)))(
        *to_snp((a_s, x_s))), want, rtol=1e-10)


# --- jax.nn losses ------------------------------------------------------------------------------
def nn_losses(logits, labels, x):
    ce = -jnp.sum(nn.one_hot(labels, logits.shape[-1]) * nn.log_softmax(logits), axis=-1)
    focal = jnp.sum((1 - nn.softmax(logits)) ** 2 * nn.one_hot(labels, logits.shape[-1]), -1)
    bce = -(nn.log_sigmoid(x) * 0.3 + nn.log_sigmoid(-x) * 0.7)
    lse = nn.logsumexp(logits, axis=-1)
    return jnp.mean(ce + focal) + jnp.mean(bce) + jnp.mean(nn.gelu(x) + nn.relu(x - 0.2)) + \
        jnp.mean(lse) + jnp.mean(nn.elu(x) * nn.silu(x))


def test_nn_losses(x64):
    logits, labels = RNG.normal(size=(4, 5)), np.array([0, 3, 4, 1])
    x = np.array([-1.3, -0.1, 0.5, 1.7])       # (away from relu's kink at 0.2)
    check_grad(nn_losses, logits, labels, x)
    check_grad(nn_losses, logits, labels, x, argnum=2)
    check_vmap(lambda l, y, x: nn_losses(l[None], y[None], x), (logits, labels, x),
               in_axes=(0, 0, None))
    check_vmap(grad(lambda l, y, x: nn_losses(l[None], y[None], x)), (logits, labels, x),
               in_axes=(0, 0, None))


# --- jvp(f, primals, tangents) with the tuples in variables -------------------------------------
def hvp_f(x):
    return jnp.sum(jnp.sin(x) * x ** 2) + jnp.prod(jnp.cos(x))


def hvp_tuples(primals, tangents):
    return secant.jvp(grad(hvp_f), primals, tangents)[1]


def hvp_named(x, v):
    primals, tangents = (x,), (v,)
    return hvp_tuples(primals, tangents) + secant.jvp(hvp_f, primals, tangents)[1]


def test_jvp_with_primals_in_variables(x64):
    x, vs = RNG.normal(size=4), RNG.normal(size=(3, 4))
    H = np.asarray(secant.hessian(hvp_f)(to_snp(x)))
    g = np.asarray(grad(hvp_f)(to_snp(x)))
    got = check_vmap(hvp_named, (x, vs), in_axes=(None, 0))
    np.testing.assert_allclose(got, vs @ H + (vs @ g)[:, None], rtol=1e-10)
    check_grad(lambda x: jnp.sum(hvp_named(x, to_snp(vs[0])) ** 2), x, rtol=1e-5)
    check_vmap(lambda x, v: hvp_tuples((x,), (v,)), (x, vs), in_axes=(None, 0))
