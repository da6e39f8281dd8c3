"""Issue 15 (axes15): vmap's in_axes and out_axes as pytree prefixes (dicts of axes per leaf,
None for a shared leaf, tuples of dicts, negative axes) read by another transform (grad,
jit(grad), jacfwd, vmap of it), and functions passing dict literals inside tuples. Checked
against Python loops, float64 central differences and closed forms."""
from typing import NamedTuple

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jacfwd, jacrev, jit, tree_util, vmap

from others15_check import assert_trees_close, fd_grad, to_snp

RNG = np.random.default_rng(1515)


# --- a tuple of dict literals passed to a function (its cotangent once unpacked as a tuple) -------
def pair_fn(pair, x):
    a, b = pair
    return jnp.sin(a["u"] * x) + b["v"]


def calls_with_literals(u, v, x):
    return jnp.sum(pair_fn(({"u": u}, {"v": v}), x))


def test_grad_through_a_tuple_of_dict_literals(x64):
    # grad gave the dict keys ('u', 'v') for the cotangents of u and v
    u, v, x = RNG.normal(size=5), 0.7, 0.3
    gu, gv = grad(calls_with_literals, (0, 1))(jnp.asarray(u), v, x)
    np.testing.assert_allclose(gu, x * np.cos(u * x), rtol=1e-12)
    np.testing.assert_allclose(gv, 5.0, rtol=1e-12)
    gu_j, gv_j = jit(grad(calls_with_literals, (0, 1)))(jnp.asarray(u), v, x)
    np.testing.assert_allclose(gu_j, gu, rtol=1e-12)
    np.testing.assert_allclose(gv_j, gv, rtol=1e-12)
    # the shared v's gradient sums over the batch of u
    per = vmap(pair_fn, in_axes=((0, None), None))
    gu2, gv2 = grad(lambda u, v: jnp.sum(per(({"u": u}, {"v": v}), x) ** 2), (0, 1))(
        jnp.asarray(u), v)
    s = np.sin(u * x) + v
    np.testing.assert_allclose(gu2, 2 * s * x * np.cos(u * x), rtol=1e-12)
    np.testing.assert_allclose(gv2, 2 * s.sum(), rtol=1e-12)


# --- in_axes a dict per leaf, under grad, jit(grad) and vmap ------------------------------------------
def model(params, x):
    h = jnp.tanh(x @ params["l1"]["w"] + params["l1"]["b"])
    return h @ params["l2"]["w"]


AXES = {"l1": {"w": 0, "b": None}, "l2": {"w": 0}}


def ensemble_loss(p, x):
    return jnp.sum(vmap(model, in_axes=(AXES, None))(p, x) ** 2)


def member(ens, k):
    return {"l1": {"w": ens["l1"]["w"][k], "b": ens["l1"]["b"]}, "l2": {"w": ens["l2"]["w"][k]}}


def make_ensemble():
    return {"l1": {"w": RNG.normal(size=(4, 3, 4)), "b": RNG.normal(size=4)},
            "l2": {"w": RNG.normal(size=(4, 4, 1))}}


def test_dict_in_axes_under_grad_jit_and_vmap(x64):
    ens, x = make_ensemble(), RNG.normal(size=3)
    loop = sum(float(jnp.sum(model(to_snp(member(ens, k)), jnp.asarray(x)) ** 2))
               for k in range(4))
    np.testing.assert_allclose(ensemble_loss(to_snp(ens), jnp.asarray(x)), loop, rtol=1e-12)
    g = grad(ensemble_loss)(to_snp(ens), jnp.asarray(x))
    assert_trees_close(g, fd_grad(ensemble_loss, (to_snp(ens), jnp.asarray(x))), rtol=1e-6,
                       atol=1e-8)
    # each member's own gradient is its slice; the shared bias's sums over the members
    parts = [grad(lambda p: jnp.sum(model(p, jnp.asarray(x)) ** 2))(to_snp(member(ens, k)))
             for k in range(4)]
    np.testing.assert_allclose(g["l1"]["b"], sum(np.asarray(p["l1"]["b"]) for p in parts),
                               rtol=1e-10)
    np.testing.assert_allclose(g["l2"]["w"], np.stack([p["l2"]["w"] for p in parts]),
                               rtol=1e-10)
    assert_trees_close(jit(grad(ensemble_loss))(to_snp(ens), jnp.asarray(x)), g, rtol=1e-10)
    # vmap of the gradient over inputs, against a loop
    xs = RNG.normal(size=(3, 3))
    per_x = vmap(grad(ensemble_loss), in_axes=(None, 0))(to_snp(ens), jnp.asarray(xs))
    for i in range(3):
        assert_trees_close(tree_util.tree_map(lambda v: v[i], per_x),
                           grad(ensemble_loss)(to_snp(ens), jnp.asarray(xs[i])), rtol=1e-10)


def test_negative_axes_in_a_tuple_of_dicts(x64):
    def f(pair, x):
        a, b = pair
        return jnp.sin(a["u"] * x) * b["v"]
    u, v = RNG.normal(size=(3, 5)), RNG.normal(size=3)
    axes = ({"u": -1}, {"v": None})
    mapped = vmap(f, in_axes=(axes, None))
    out = mapped(({"u": jnp.asarray(u)}, {"v": jnp.asarray(v)}), 0.4)
    want = np.stack([np.sin(u[:, k] * 0.4) * v for k in range(5)])
    np.testing.assert_allclose(out, want, rtol=1e-12)

    def loss(u, v):
        return jnp.sum(mapped(({"u": u}, {"v": v}), 0.4) ** 2)
    gu, gv = grad(loss, (0, 1))(jnp.asarray(u), jnp.asarray(v))
    np.testing.assert_allclose(gu, fd_grad(loss, (jnp.asarray(u), jnp.asarray(v))), rtol=1e-6)
    np.testing.assert_allclose(gv, fd_grad(loss, (jnp.asarray(u), jnp.asarray(v)), 1),
                               rtol=1e-6)
    gj = jit(grad(loss, (0, 1)))(jnp.asarray(u), jnp.asarray(v))
    np.testing.assert_allclose(gj[0], gu, rtol=1e-10)
    np.testing.assert_allclose(gj[1], gv, rtol=1e-10)
    jf = jacfwd(lambda u: mapped(({"u": u}, {"v": jnp.asarray(v)}), 0.4))(jnp.asarray(u))
    np.testing.assert_allclose(jf, jacrev(lambda u: mapped(({"u": u}, {"v": jnp.asarray(v)}),
                                                          0.4))(jnp.asarray(u)), rtol=1e-10)
    assert jf.shape == (5, 3, 3, 5)
    k, i = 2, 1
    np.testing.assert_allclose(jf[k, i, i, k], 0.4 * np.cos(u[i, k] * 0.4) * v[i], rtol=1e-12)


# --- out_axes as pytree prefixes ---------------------------------------------------------------------
def stats(d):
    return {"s": jnp.sin(d["a"]), "t": (d["a"] * d["b"], jnp.cos(d["b"]))}


def test_out_axes_tree_under_grad_jacfwd_and_jit(x64):
    a, b = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
    out_axes = {"s": 1, "t": (0, -1)}
    mapped = vmap(stats, out_axes=out_axes)
    out = mapped({"a": jnp.asarray(a), "b": jnp.asarray(b)})
    loop = [stats({"a": jnp.asarray(a[i]), "b": jnp.asarray(b[i])}) for i in range(3)]
    np.testing.assert_allclose(out["s"], np.stack([o["s"] for o in loop], 1), rtol=1e-12)
    np.testing.assert_allclose(out["t"][0], np.stack([o["t"][0] for o in loop]), rtol=1e-12)
    np.testing.assert_allclose(out["t"][1], np.stack([o["t"][1] for o in loop], -1), rtol=1e-12)

    def s_of(a):        # read by jacfwd: the generated function placed "s" at axis 1 too
        return mapped({"a": a, "b": jnp.asarray(b)})["s"]
    jf = jacfwd(s_of)(jnp.asarray(a))       # (2, 3) out, (3, 2) in: d sin(a).T
    assert jf.shape == (2, 3, 3, 2)
    want = np.zeros((2, 3, 3, 2))
    for i in range(3):
        for j in range(2):
            want[j, i, i, j] = np.cos(a[i, j])
    np.testing.assert_allclose(jf, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jacrev(s_of)(jnp.asarray(a)), want, rtol=1e-12, atol=1e-15)

    c = RNG.normal(size=(2, 3))

    def loss(a, b):
        o = mapped({"a": a, "b": b})
        return jnp.sum(c * o["s"]) + jnp.sum(o["t"][0] ** 2) + jnp.sum(c * o["t"][1])
    g = grad(loss, (0, 1))(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(g[0], c.T * np.cos(a) + 2 * a * b ** 2, rtol=1e-12)
    np.testing.assert_allclose(g[1], 2 * a ** 2 * b - c.T * np.sin(b), rtol=1e-12)
    gj = jit(grad(loss, (0, 1)))(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(gj[0], g[0], rtol=1e-12)
    np.testing.assert_allclose(gj[1], g[1], rtol=1e-12)


def test_a_none_out_axis_of_a_batched_output_is_refused(x64):
    # ("t"'s cos(b) is batched here: JAX refuses it too; it came back batched, unmoved)
    a = jnp.asarray(RNG.normal(size=(3, 2)))
    mapped = vmap(stats, out_axes={"s": 0, "t": (0, None)})
    with pytest.raises(secant.SecantError, match="out_axes=None"):
        mapped({"a": a, "b": a})
    with pytest.raises(secant.SecantError, match="out_axes=None"):
        grad(lambda a: jnp.sum(mapped({"a": a, "b": a})["s"]))(a)


def halves(d):
    return {"p": d["a"] * 2.0}, {"q": jnp.sin(d["b"]) * d["a"]}


def test_dict_in_tuple_of_dicts_out_with_negative_axes(x64):
    a = RNG.normal(size=(3, 2))
    mapped = vmap(halves, in_axes=({"a": 1, "b": None},), out_axes=({"p": -1}, {"q": 0}))

    def loss(a):
        o1, o2 = mapped({"a": a, "b": a[:, 0]})
        return jnp.sum(o1["p"] ** 2) + jnp.sum(o2["q"] ** 2)

    def loop(a):
        total = 0.0
        for k in range(2):
            o1, o2 = halves({"a": a[:, k], "b": a[:, 0]})
            total = total + jnp.sum(o1["p"] ** 2) + jnp.sum(o2["q"] ** 2)
        return total
    o1, o2 = mapped({"a": jnp.asarray(a), "b": jnp.asarray(a[:, 0])})
    assert o1["p"].shape == (3, 2) and o2["q"].shape == (2, 3)
    np.testing.assert_allclose(o2["q"], (np.sin(a[:, 0])[:, None] * a).T, rtol=1e-12)
    np.testing.assert_allclose(loss(jnp.asarray(a)), loop(jnp.asarray(a)), rtol=1e-12)
    g = grad(loss)(jnp.asarray(a))
    np.testing.assert_allclose(g, grad(loop)(jnp.asarray(a)), rtol=1e-12)
    np.testing.assert_allclose(g, fd_grad(loss, (jnp.asarray(a),)), rtol=1e-6)
    np.testing.assert_allclose(jit(grad(loss))(jnp.asarray(a)), g, rtol=1e-12)
    batch = RNG.normal(size=(2, 3, 2))
    per = vmap(grad(loss))(jnp.asarray(batch))
    for i in range(2):
        np.testing.assert_allclose(per[i], grad(loop)(jnp.asarray(batch[i])), rtol=1e-12)


def test_jacfwd_of_a_vmap_whose_out_axes_moves_a_helpers_dict_item(x64):
    # out_batch_axis(1, s, 1) was written for an unbatched s under jacfwd's vmap (one outer
    # axis too many: 'out of bounds for an output of 0 dimensions per example')
    def pair(d):
        out = stats(d)
        return out["s"], out["t"][0]
    a = jnp.asarray(RNG.normal(size=(3, 2)))
    f = lambda a: vmap(pair, out_axes=(1, 0))({"a": a, "b": a})[0]
    jf = jacfwd(f)(a)
    np.testing.assert_allclose(jf, jacrev(f)(a), rtol=1e-12)
    np.testing.assert_allclose(jf[1, 2, 2, 1], np.cos(a[2, 1]), rtol=1e-12)


def test_a_dict_in_a_tuple_of_dicts_out_under_grad_and_jacfwd(x64):
    def h(a):
        o1, o2 = vmap(halves)({"a": a, "b": a + 1.0})
        return o1["p"] + o2["q"]
    a = RNG.normal(size=4)
    d = 2 + np.cos(a + 1) * a + np.sin(a + 1)
    np.testing.assert_allclose(grad(lambda a: jnp.sum(h(a)))(jnp.asarray(a)), d, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(h)(jnp.asarray(a)), np.diag(d), rtol=1e-12)
    np.testing.assert_allclose(jit(jacrev(h))(jnp.asarray(a)), np.diag(d), rtol=1e-12)


class Pair(NamedTuple):
    w: object
    c: object


def test_namedtuple_in_axes_read_by_grad_is_refused_with_the_line(x64):
    def f(n, x):
        return jnp.sum(n.w * x) + n.c
    w, x = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    mapped = vmap(f, in_axes=(Pair(0, None), None))
    np.testing.assert_allclose(mapped(Pair(jnp.asarray(w), 0.5), jnp.asarray(x)),
                               w @ x + 0.5, rtol=1e-12)
    with pytest.raises(secant.SecantError, match=r"namedtuple(.|\n)*test_axes15_vmap_trees.py"):
        grad(lambda c: jnp.sum(mapped(Pair(jnp.asarray(w), c), jnp.asarray(x))))(0.5)


def test_out_axes_that_leave_out_an_output_key_are_refused_at_the_call(x64):
    # the leaf-wise form reads the outputs out_axes names: 't' was dropped without a word
    a = jnp.asarray(RNG.normal(size=(3, 2)))
    mapped = vmap(stats, out_axes={"s": 1})
    message = r"out_axes specification must be a tree prefix(.|\n)*test_axes15_vmap_trees.py"
    with pytest.raises(secant.SecantError, match=message):
        mapped({"a": a, "b": a})
    with pytest.raises(secant.SecantError, match=message):
        grad(lambda a: jnp.sum(mapped({"a": a, "b": a})["s"]))(a)
    with pytest.raises(secant.SecantError, match=message):
        jit(mapped)({"a": a, "b": a})


def scaled(d, x, scale=2.0):
    return jnp.sum(d["w"] * x) * scale + d["c"]


class Scaler:
    def __init__(self, s):
        self.s = s

    def apply(self, d, x):
        return scaled(d, x, self.s)


@pytest.mark.parametrize("kind", ["partial", "method", "defaults"])
def test_dict_in_axes_of_a_partial_a_method_and_defaults_under_grad(x64, kind):
    import functools
    fn = {"partial": functools.partial(scaled, scale=2.0), "method": Scaler(2.0).apply,
          "defaults": scaled}[kind]
    w, x = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    axes = {"w": 0, "c": None}

    def loss(d):
        return jnp.sum(vmap(fn, in_axes=(axes, None))(d, jnp.asarray(x)) ** 2)
    d = {"w": jnp.asarray(w), "c": jnp.asarray(0.5)}
    out = w @ x * 2.0 + 0.5
    np.testing.assert_allclose(loss(d), np.sum(out ** 2), rtol=1e-12)
    g = grad(loss)(d)       # refused before: no batched source of a partial, a method, defaults
    np.testing.assert_allclose(g["w"], 4.0 * out[:, None] * x, rtol=1e-12)
    np.testing.assert_allclose(g["c"], 2.0 * out.sum(), rtol=1e-12)
    assert_trees_close(jit(grad(loss))(d), g, rtol=1e-12)
