"""Issue 15, code written by others (ninth round): transforms composed as users compose them.
vmap of vmap of a kernel over two point sets (a Gram matrix) and its gradient, four levels of
grad of a helper calling a helper, jacrev of a vmapped model in dict parameters, vmap with
in_axes given as a dict matching the parameter tree, a float32 model whose gradients stay
float32 beside a Python float and an int array, value_and_grad of a method of a registered
pytree class, and a hessian of a loss whose inner step itself takes a grad (MAML-like, the step
size differentiated). Checked against float64 central differences, closed forms and loops."""
import math

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, tree_util, vmap

from others15_check import assert_trees_close, check_grad, fd_grad, to_snp

RNG = np.random.default_rng(4909)


# --- a Gram matrix by vmap of vmap -----------------------------------------------------------------
def rbf(x, y, log_ell):
    return jnp.exp(-0.5 * jnp.sum((x - y) ** 2) / jnp.exp(2 * log_ell))


def gram(xs, ys, log_ell):
    return vmap(lambda x: vmap(lambda y: rbf(x, y, log_ell))(ys))(xs)


def test_gram_matrix_by_vmap_of_vmap(x64):
    xs, ys = RNG.normal(size=(4, 2)), RNG.normal(size=(3, 2))
    ell = 0.8
    d2 = ((xs[:, None] - ys[None]) ** 2).sum(-1)
    want = np.exp(-0.5 * d2 / ell ** 2)
    np.testing.assert_allclose(gram(jnp.asarray(xs), jnp.asarray(ys), math.log(ell)), want,
                               rtol=1e-12)
    np.testing.assert_allclose(jit(gram)(jnp.asarray(xs), jnp.asarray(ys), math.log(ell)), want,
                               rtol=1e-12)
    # d/dlog_ell of the sum: sum(K * d2 / ell^2)
    g = grad(lambda l: jnp.sum(gram(jnp.asarray(xs), jnp.asarray(ys), l)))(math.log(ell))
    np.testing.assert_allclose(g, np.sum(want * d2 / ell ** 2), rtol=1e-10)
    c = RNG.normal(size=(4, 3))
    check_grad(lambda xs: jnp.sum(c * gram(xs, jnp.asarray(ys), math.log(ell))), xs)
    # a kernel on the diagonal is one
    np.testing.assert_allclose(np.diag(gram(jnp.asarray(xs), jnp.asarray(xs), 0.3)), 1.0)


# --- four levels of grad through helpers calling helpers -------------------------------------------------
def inner_helper(x):
    return jnp.sin(x) * x


def middle_helper(x, k):
    return inner_helper(k * x) + jnp.exp(-x)


def outer_fn(x):
    return middle_helper(x, 2.0) ** 2


def test_fourth_derivative_through_helpers(x64):
    # u = 2s sin(2s) + exp(-s); f = u^2; f' = 2 u u'
    x = 0.7
    u = 2 * x * math.sin(2 * x) + math.exp(-x)
    du = 2 * math.sin(2 * x) + 4 * x * math.cos(2 * x) - math.exp(-x)
    np.testing.assert_allclose(outer_fn(x), u ** 2, rtol=1e-12)
    np.testing.assert_allclose(grad(outer_fn)(x), 2 * u * du, rtol=1e-12)
    ds = [outer_fn]
    for _ in range(4):
        ds.append(grad(ds[-1]))
    for k in range(1, 5):       # each order against central differences of the one before
        e = 1e-5
        fd = (float(ds[k - 1](x + e)) - float(ds[k - 1](x - e))) / (2 * e)
        got = ds[k](x)
        np.testing.assert_allclose(got, fd, rtol=1e-6)
    d4 = ds[4]
    np.testing.assert_allclose(jit(d4)(x), got, rtol=1e-12)     # (got: d4(x))
    xs = np.array([0.1, 0.7, 1.5])
    np.testing.assert_allclose(vmap(d4)(jnp.asarray(xs)), [float(d4(v)) for v in xs],
                               rtol=1e-12)
    np.testing.assert_allclose(jacfwd(jacrev(grad(grad(outer_fn))))(x), got, rtol=1e-10)


# --- jacrev of a vmapped model with dict parameters --------------------------------------------------
def model(params, x):
    h = jnp.tanh(x @ params["l1"]["w"] + params["l1"]["b"])
    return h @ params["l2"]["w"]


def batched_outputs(params, xs):
    return vmap(model, in_axes=(None, 0))(params, xs)[:, 0]


def test_jacrev_of_a_vmapped_model(x64):
    params = {"l1": {"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)},
              "l2": {"w": RNG.normal(size=(4, 1))}}
    xs = RNG.normal(size=(5, 3))
    jac = jacrev(batched_outputs)(to_snp(params), jnp.asarray(xs))
    assert jac["l1"]["w"].shape == (5, 3, 4)
    for i in range(5):
        row = grad(lambda p: model(p, jnp.asarray(xs[i]))[0])(to_snp(params))
        assert_trees_close(tree_util.tree_map(lambda v: v[i], jac), row, rtol=1e-10)
    jf = jacfwd(batched_outputs)(to_snp(params), jnp.asarray(xs))
    assert_trees_close(jf, jac, rtol=1e-10)
    # the empirical NTK from those Jacobians is symmetric positive semidefinite
    flat = np.concatenate([np.asarray(v).reshape(5, -1) for v in tree_util.tree_leaves(jac)], 1)
    ntk = flat @ flat.T
    assert np.all(np.linalg.eigvalsh(ntk) > -1e-10)


# --- vmap with in_axes as a dict ---------------------------------------------------------------------------
def test_vmap_in_axes_dict_over_an_ensemble(x64):
    ens = {"l1": {"w": RNG.normal(size=(4, 3, 4)), "b": RNG.normal(size=4)},
           "l2": {"w": RNG.normal(size=(4, 4, 1))}}
    axes = {"l1": {"w": 0, "b": None}, "l2": {"w": 0}}
    x = RNG.normal(size=3)
    out = vmap(model, in_axes=(axes, None))(to_snp(ens), jnp.asarray(x))
    for k in range(4):
        member = {"l1": {"w": ens["l1"]["w"][k], "b": ens["l1"]["b"]},
                  "l2": {"w": ens["l2"]["w"][k]}}
        np.testing.assert_allclose(out[k], model(to_snp(member), jnp.asarray(x)), rtol=1e-12)
    # the shared bias's gradient sums over members
    loss = lambda p: jnp.sum(vmap(model, in_axes=(axes, None))(p, jnp.asarray(x)) ** 2)
    g = grad(loss)(to_snp(ens))
    assert g["l1"]["b"].shape == (4,)
    assert_trees_close(g, fd_grad(loss, (to_snp(ens),)), rtol=1e-5, atol=1e-7)
    assert_trees_close(jit(grad(loss))(to_snp(ens)), g, rtol=1e-10)


# --- float32 stays float32 ---------------------------------------------------------------------------------
def f32_loss(w, x, labels):
    logits = x @ w * 0.5
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=-1, keepdims=True))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))


def test_float32_model_keeps_float32_gradients():
    w = RNG.normal(size=(3, 4)).astype(np.float32)
    x = RNG.normal(size=(6, 3)).astype(np.float32)
    labels = np.array([0, 1, 2, 3, 0, 1], dtype=np.int32)
    g = grad(f32_loss)(jnp.asarray(w), jnp.asarray(x), labels)
    assert g.dtype == np.float32
    gj = jit(grad(f32_loss))(jnp.asarray(w), jnp.asarray(x), labels)
    assert gj.dtype == np.float32
    np.testing.assert_allclose(gj, g, rtol=1e-5, atol=1e-6)
    w64, x64_ = w.astype(np.float64), x.astype(np.float64)
    logits = x64_ @ w64 * 0.5
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    want = 0.5 * x64_.T @ (p - np.eye(4)[labels]) / 6
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)
    per = vmap(grad(f32_loss), in_axes=(None, 0, 0))(jnp.asarray(w), jnp.asarray(x)[:, None],
                                                       labels[:, None])
    assert per.dtype == np.float32
    np.testing.assert_allclose(np.mean(per, 0), g, rtol=1e-4, atol=1e-6)
    h = hessian(lambda w: f32_loss(w, jnp.asarray(x), labels))(jnp.asarray(w))
    assert h.dtype == np.float32 and h.shape == (3, 4, 3, 4)


# --- value_and_grad of a method of a registered pytree class -------------------------------------------------
@tree_util.register_pytree_node_class
class Polynomial:
    def __init__(self, coeffs, shift):
        self.coeffs, self.shift = coeffs, shift

    def tree_flatten(self):
        return (self.coeffs,), self.shift

    @classmethod
    def tree_unflatten(cls, shift, children):
        return cls(children[0], shift)

    def __call__(self, x):
        powers = (x - self.shift) ** jnp.arange(self.coeffs.shape[0])
        return jnp.dot(self.coeffs, powers)

    def fit_loss(self, xs, ys):
        return jnp.mean((vmap(self)(xs) - ys) ** 2)


def test_value_and_grad_of_a_pytree_method(x64):
    poly = Polynomial(jnp.asarray(RNG.normal(size=3)), 0.5)
    xs, ys = RNG.normal(size=8), RNG.normal(size=8)
    v, g = secant.value_and_grad(Polynomial.fit_loss)(poly, jnp.asarray(xs), jnp.asarray(ys))
    a = np.vander(xs - 0.5, 3, increasing=True)
    r = a @ np.asarray(poly.coeffs) - ys
    np.testing.assert_allclose(v, np.mean(r ** 2), rtol=1e-12)
    assert isinstance(g, Polynomial) and g.shift == 0.5
    np.testing.assert_allclose(g.coeffs, 2 * a.T @ r / 8, rtol=1e-10)
    gj = jit(grad(Polynomial.fit_loss))(poly, jnp.asarray(xs), jnp.asarray(ys))
    np.testing.assert_allclose(gj.coeffs, g.coeffs, rtol=1e-12)
    # the normal equations' Hessian: 2 A^T A / n, by the object passed in
    h = hessian(lambda p: Polynomial.fit_loss(p, jnp.asarray(xs), jnp.asarray(ys)))(poly)
    np.testing.assert_allclose(h.coeffs.coeffs, 2 * a.T @ a / 8, rtol=1e-10)


def test_jacfwd_of_jacfwd_reading_aux_data_of_a_pytree(x64):
    xs, ys = RNG.normal(size=8), RNG.normal(size=8)
    a = np.vander(xs - 0.5, 3, increasing=True)
    poly = Polynomial(jnp.asarray(RNG.normal(size=3)), 0.5)
    h = jacfwd(jacfwd(lambda p: Polynomial.fit_loss(p, jnp.asarray(xs), jnp.asarray(ys))))(poly)
    np.testing.assert_allclose(h.coeffs.coeffs, 2 * a.T @ a / 8, rtol=1e-10)


def test_hessian_of_a_pytree_built_in_place_whose_method_passes_self_on(x64):
    xs, ys = RNG.normal(size=8), RNG.normal(size=8)
    a = np.vander(xs - 0.5, 3, increasing=True)
    c = RNG.normal(size=3)
    loss = lambda c: Polynomial(c, 0.5).fit_loss(jnp.asarray(xs), jnp.asarray(ys))
    h = hessian(loss)(jnp.asarray(c))
    np.testing.assert_allclose(h, 2 * a.T @ a / 8, rtol=1e-10)
    g = check_grad(loss, c)     # (and jit(grad))
    np.testing.assert_allclose(g, 2 * a.T @ (a @ c - ys) / 8, rtol=1e-10)
    cs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(vmap(grad(loss))(jnp.asarray(cs)),
                               [2 * a.T @ (a @ c - ys) / 8 for c in cs], rtol=1e-10)


# --- MAML-like: a hessian through an inner grad step, the step size learned -------------------------------
def task_loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


def adapted_loss(w, log_lr, x_tr, y_tr, x_te, y_te):
    w_fast = w - jnp.exp(log_lr) * grad(task_loss)(w, x_tr, y_tr)
    return task_loss(w_fast, x_te, y_te)


def test_maml_step_size_and_hessian(x64):
    w = RNG.normal(size=3) * 0.5
    data = [RNG.normal(size=s) for s in ((5, 3), (5,), (4, 3), (4,))]
    check_grad(adapted_loss, w, -1.0, *data)
    check_grad(adapted_loss, w, -1.0, *data, argnum=1)
    h = hessian(adapted_loss, argnums=(0, 1))(jnp.asarray(w), -1.0, *to_snp(data))
    full = lambda wl: adapted_loss(wl[:3], wl[3], *to_snp(data))
    hf = hessian(full)(jnp.asarray(np.append(w, -1.0)))
    np.testing.assert_allclose(h[0][0], hf[:3, :3], rtol=1e-9)
    np.testing.assert_allclose(h[0][1], hf[:3, 3], rtol=1e-9)
    np.testing.assert_allclose(h[1][1], hf[3, 3], rtol=1e-9)
    g = grad(full)
    fd = np.stack([(np.asarray(g(jnp.asarray(np.append(w, -1.0) + e)))
                    - np.asarray(g(jnp.asarray(np.append(w, -1.0) - e)))) / 2e-6
                   for e in np.eye(4) * 1e-6])
    np.testing.assert_allclose(hf, fd, rtol=1e-5, atol=1e-7)
    # a batch of tasks by vmap, against a loop
    tasks = [np.stack([RNG.normal(size=d.shape) for _ in range(3)]) for d in data]
    per = vmap(grad(adapted_loss), in_axes=(None, None, 0, 0, 0, 0))(jnp.asarray(w), -1.0,
                                                                     *to_snp(tasks))
    for k in range(3):
        np.testing.assert_allclose(per[k], grad(adapted_loss)(jnp.asarray(w), -1.0,
                                                              *[jnp.asarray(t[k]) for t in tasks]),
                                   rtol=1e-10)


def test_jvp_of_a_call_reading_aux_data_of_a_pytree(x64):
    p = Polynomial(jnp.asarray([1.0, 2.0, 3.0]), 0.5)
    t = Polynomial(jnp.asarray([0.0, 1.0, 0.0]), 0.5)
    _, tangent = secant.jvp(lambda p: p(2.0), (p,), (t,))
    np.testing.assert_allclose(tangent, 1.5, rtol=1e-12)        # d/dc1 of c . (2 - 0.5)^k
