"""Issue 15, tenth round: the minimal cases of what the tenth round's programs
(tests/test_others10_*.py) found.

- A method that copies its object and sets a field of the copy to a differentiated value
  (`b = copy.copy(self); b.scope = s; return b`, flax's module.bind) is traced
  (transformer/trace_source.py); the trace recorded copy.copy's result as a value and kept the
  field set on the recorder itself, where no generated line read it back: grad was silently
  zero (jvp / vmap an AttributeError). The recorder now refuses the set, with the user's line;
  and the function's source now reads the copy with its field set as a new object of the
  class (transformer/normalize.py _plain_field_set), so grad and jvp follow it.
- `d.setdefault(k, default)` read on a dict of differentiated values (a flax-like scope walking
  a variables dict by path) raised "secant does not know the derivative of setdefault_"; it is
  `d[k]` when k is in d (a KeyError where it is not, as a dict of differentiated values is
  never changed in place).
"""
import copy

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, jvp, vmap


class Module:
    def bind(self, scope):
        bound = copy.copy(self)
        bound.scope = scope
        return bound

    def __call__(self, x):
        return jnp.sum(self.scope["w"] * x)


class FrozenModule(Module):
    def bind(self, scope):
        bound = copy.copy(self)
        object.__setattr__(bound, "scope", scope)
        return bound


@pytest.mark.parametrize("cls", [Module, FrozenModule])
def test_field_set_on_a_copy_is_refused_not_a_zero_gradient(x64, cls):
    def loss(params, x):
        return cls().bind(params)(x)

    p, x = {"w": jnp.ones(3)}, jnp.arange(3.0)
    assert float(loss(p, x)) == 3.0
    assert float(jit(loss)(p, x)) == 3.0
    # the copy with its field set is read as a new object of the class (transformer/
    # normalize.py _plain_field_set): the derivative follows it, never a zero
    np.testing.assert_allclose(grad(loss)(p, x)["w"], x)
    np.testing.assert_allclose(jit(grad(loss))(p, x)["w"], x)
    t = {"w": jnp.asarray([1.0, 2.0, 3.0])}
    np.testing.assert_allclose(jvp(lambda p: loss(p, x), (p,), (t,))[1], 8.0)
    # vmap over the parameters: refused, or right (never a row's value for every row)
    try:
        got = vmap(loss, in_axes=(0, None))({"w": jnp.asarray([[1.0] * 3, [2.0] * 3])}, x)
    except secant.SecantError as e:
        assert "scope" in str(e)
    else:
        np.testing.assert_allclose(got, [3.0, 6.0])
    # x batched alone: the field holds no batched value, and the answer is right
    np.testing.assert_allclose(vmap(loss, in_axes=(None, 0))(p, jnp.ones((2, 3))), [3.0, 3.0])


def collection(root, path):
    d = root.setdefault("params", {})
    for name in path:
        d = d.setdefault(name, {})
    return d


def test_setdefault_read_of_a_dict_of_differentiated_values(x64):
    def f(params, x):
        w = collection({"params": params}, ("dense", "inner"))["w"]
        return jnp.sum(jnp.sin(w) * x)

    p = {"dense": {"inner": {"w": jnp.asarray([0.1, 0.2, 0.3])}}}
    x = jnp.asarray([1.0, 2.0, 3.0])
    g = grad(f)(p, x)
    np.testing.assert_allclose(g["dense"]["inner"]["w"], np.cos([0.1, 0.2, 0.3]) * [1, 2, 3],
                               rtol=1e-12)
    np.testing.assert_allclose(jit(grad(f))(p, x)["dense"]["inner"]["w"],
                               g["dense"]["inner"]["w"], rtol=1e-12)
    batched = vmap(f, in_axes=(None, 0))(p, jnp.stack([x, 2 * x]))
    np.testing.assert_allclose(batched, [float(f(p, x)), float(f(p, 2 * x))], rtol=1e-12)
    # a missing key would change the dict in place: refused when it runs
    with pytest.raises(KeyError, match="other"):
        grad(lambda p, x: collection({"params": p}, ("other",))["w"] @ x)(p, x)


W3 = np.random.default_rng(10).normal(size=(3, 4))
REST = ((np.linspace(-1.0, 1.0, 4),),)      # the layers after the first: one of (c,)


def layers_loss(params):
    (w, b), (c,) = params
    return jnp.sum(jnp.tanh(jnp.ones((2, 3)) @ w + b) * c)


def test_hessian_through_a_tuple_concatenated_to_a_constant_tuple(x64):
    # stax-like parameters rebuilt as `((W, b),) + tuple(rest)`: the jvp's tangent of the
    # constant tail is zeros_like_tree(tuple(rest)), which a vmap (hessian = jacfwd of grad)
    # read as an array and stacked with the head's tangents (ShapeError)
    for f in (lambda b: layers_loss(((W3, b),) + tuple(REST)),
              lambda b: layers_loss(((W3, b),) + REST),
              lambda b: layers_loss(((W3, b),) + tuple([REST[0]]))):
        b = np.array([0.1, -0.2, 0.3, 0.05])
        h = secant.hessian(f)(b)
        s = 1 - np.tanh(np.ones(3) @ W3 + b) ** 2
        t = np.tanh(np.ones(3) @ W3 + b)
        want = np.diag(2 * REST[0][0] * (-2 * t * s))        # d2/db2 of 2 * sum(tanh(a + b) * c)
        np.testing.assert_allclose(h, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(jit(secant.hessian(f))(b), want, rtol=1e-10, atol=1e-12)


def test_einsum_output_without_the_inputs_ellipsis_sums_it(x64):
    # JAX accepts 'i...,j...->ij' (the ellipsis dims summed); secant raised 'invalid output spec'
    a, b = np.random.default_rng(1).normal(size=(2, 4, 3, 2)), np.random.default_rng(2).normal(
        size=(3, 3, 2))
    a = a[0]
    want = np.einsum("ixy,jxy->ij", a, b)
    np.testing.assert_allclose(jnp.einsum("i...,j...->ij", a, b), want, rtol=1e-12)
    np.testing.assert_allclose(jnp.einsum("i...,j...->ij", np.ones(4), np.ones(3)),
                               np.ones((4, 3)))
    f = lambda a: jnp.sum(jnp.einsum("i...,j...->ij", a, b) ** 2)
    np.testing.assert_allclose(grad(f)(a), 2 * np.einsum("ij,jxy->ixy", want, b), rtol=1e-10)
    np.testing.assert_allclose(vmap(lambda a: jnp.einsum("i...,j...->ij", a, b))(
        np.stack([a, 2 * a])), np.stack([want, 2 * want]), rtol=1e-12)


def test_one_hot_in_a_scan_body_under_grad(x64):
    # nn.one_hot built its shape by shape.insert(...), a call its replay in a scan body's vjp
    # skipped (ShapeError 'cannot reshape array of shape (2,) into shape ()')
    T = np.random.default_rng(3).normal(size=(3, 2, 4))
    C = np.array([0, 1, 1])

    def f(t, c):
        def site(carry, inp):
            A, s = inp
            return carry + A.T @ secant.nn.one_hot(s, 2), None
        out, _ = secant.lax.scan(site, jnp.zeros(4), (t, c))
        return jnp.sum(out ** 2)

    out = sum(T[i].T[:, C[i]] for i in range(3))
    want = np.zeros_like(T)
    for i in range(3):
        want[i, C[i]] = 2 * out
    np.testing.assert_allclose(grad(f)(T, C), want, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(f))(T, C), want, rtol=1e-12)


def test_grad_through_jacrev_in_dict_parameters(x64):
    # jacrev(net)(params, x) with dict params read by grad in x: from_rows reshaped the dict
    # of rows as one array (AttributeError: 'dict' object has no attribute 'reshape')
    rng = np.random.default_rng(4)
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}

    def net(p, x):
        return jnp.tanh(x @ p["W"] + p["b"])

    def sens(x):
        J = secant.jacrev(net)(params, x)
        return jnp.sum(J["W"] ** 2) + jnp.sum(J["b"] ** 2)

    x = rng.normal(size=3)
    e = 1e-6
    fd = np.array([(float(sens(x + e * d)) - float(sens(x - e * d))) / (2 * e)
                   for d in np.eye(3)])
    np.testing.assert_allclose(grad(sens)(x), fd, rtol=1e-6)
    J = secant.jacrev(net)(params, x)
    assert J["W"].shape == (2, 3, 2) and J["b"].shape == (2, 2)


def _scale_insert(x):
    scales = [1.0]
    scales.insert(0, 3.0)
    return x * scales[0]


def _scale_insert_negative(x):
    scales = [1.0, 2.0]
    scales.insert(-1, 3.0)
    return x * scales[1]


def _scale_reverse(x):
    scales = [1.0, 3.0]
    scales.reverse()
    return x * scales[0]


def _scale_sort(x):
    scales = [3.0, 1.0, 2.0]
    scales.sort(key=lambda v: -v)
    return x * scales[0]


def _scale_clear(x):
    scales = [1.0]
    scales.clear()
    scales.append(3.0)
    return x * scales[0]


@pytest.mark.parametrize("helper", [_scale_insert, _scale_insert_negative, _scale_reverse,
                                    _scale_sort, _scale_clear])
def test_list_changed_in_place_in_a_callee_replayed_by_a_scan_vjp(x64, helper):
    # l.insert / l.reverse / l.sort / l.clear on a callee's own list ran as a call for its
    # effect, which the callee's replay inside the scan body's vjp skipped: the gradient was
    # silently wrong (1.7196 for 7.7515); now rebuilt as l = l[:i] + [v] + l[i:] and the like
    def f(w, xs):
        def body(carry, x):
            return carry + jnp.sin(w * x) * helper(carry) * carry, None
        out, _ = secant.lax.scan(body, 1.0, xs)
        return out

    xs, w, e = np.array([0.1, 0.2, 0.3]), 0.7, 1e-6
    fd = (float(f(w + e, xs)) - float(f(w - e, xs))) / (2 * e)
    np.testing.assert_allclose(grad(f)(w, xs), fd, rtol=1e-7)
    np.testing.assert_allclose(jit(grad(f))(w, xs), fd, rtol=1e-7)
    ws = np.array([0.3, 0.7])
    np.testing.assert_allclose(vmap(grad(f), (0, None))(ws, xs),
                               [float(grad(f)(v, xs)) for v in ws], rtol=1e-12)
    assert float(helper(2.0)) == 6.0
