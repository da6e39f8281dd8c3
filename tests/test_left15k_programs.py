"""Issue 15 (left15k): programs of the kinds the third battery still refused (tests/
test_explore15j_programs.py `_WHY`), written other ways: a predicate passed in as a parameter
and called (equinox's partition with other predicates), a property read where Python needs an
int, ... Each checked against float64 central differences (grad, hessian), a Python loop (vmap)
and eager (jit)."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import tree_util

from others15_check import assert_trees_close, fd_grad


def _check_grad(f, x, hessian=True):
    x = np.asarray(x, dtype=np.float64)
    want = fd_grad(f, (x,))
    assert_trees_close(secant.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    assert_trees_close(secant.jit(secant.grad(f))(x), want, rtol=1e-6, atol=1e-8)
    if hessian:
        g = secant.grad(f)
        want_h = np.stack([fd_grad(lambda v, i=i: g(v)[i], (x,)) for i in range(x.size)])
        assert_trees_close(secant.hessian(f)(x), want_h, rtol=1e-5, atol=1e-6)


def _check_vmap(f, xs):
    xs = np.asarray(xs, dtype=np.float64)
    want = np.stack([np.asarray(f(x)) for x in xs])
    np.testing.assert_allclose(secant.vmap(f)(xs), want, rtol=1e-12, atol=1e-12)
    gwant = np.stack([np.asarray(secant.grad(f)(x)) for x in xs])
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(xs), gwant, rtol=1e-10, atol=1e-12)


# --- a predicate passed in as a parameter and called -----------------------------------------------
def _partition(tree, keep):
    return (tree_util.tree_map(lambda v: v if keep(v) else None, tree),
            tree_util.tree_map(lambda v: None if keep(v) else v, tree))


def _combine(a, b):
    return tree_util.tree_map(lambda u, v: v if u is None else u, a, b,
                              is_leaf=lambda v: v is None)


def _is_array(v):
    return isinstance(v, (np.ndarray, jnp.ndarray))


def _is_float(v):
    return isinstance(v, float)


def _trained(w, keep):
    """one SGD step on the leaves `keep` picks: a float kept static must not move (vmap once
    broadcast the 0.5 to an array, which is_array then picked: a silently moved scale)"""
    model = {"w": w, "scale": 0.5, "steps": 2}
    arrays, static = _partition(model, keep)

    def loss(arrays):
        m = _combine(arrays, static)
        h = m["w"]
        for _ in range(m["steps"]):
            h = jnp.sin(h) * m["scale"]
        return jnp.sum(h ** 2)

    grads = secant.grad(loss)(arrays)
    return loss(tree_util.tree_map(lambda p, g: p - 0.3 * g, arrays, grads))


def keep_arrays(w):
    return _trained(w, _is_array)


def keep_by_lambda(w):
    return _trained(w, lambda v: not isinstance(v, (int, float)))


def count_static(w):
    """how many leaves a predicate passed in leaves static, read per example under vmap"""
    model = {"w": w, "b": 2.0 * w, "lr": 0.1, "n": 3}
    arrays, static = _partition(model, _is_array)
    floats, _ = _partition(model, _is_float)
    n_static = len([v for v in tree_util.tree_leaves(static)])
    n_float = len(tree_util.tree_leaves(floats))
    return jnp.sum(arrays["w"] * arrays["b"]) * n_static + n_float * jnp.sum(w)


@pytest.mark.parametrize("f", [keep_arrays, keep_by_lambda, count_static],
                         ids=lambda f: f.__name__)
def test_predicate_passed_in(x64, f):
    w = np.array([0.4, -0.7, 1.1])
    _check_grad(f, w)
    _check_vmap(f, np.stack([w, 0.5 * w, -w]))
    np.testing.assert_allclose(secant.jit(f)(w), f(w), rtol=1e-12)


def _value_keep(w):
    arrays, _ = _partition({"w": w, "v": w ** 2}, lambda v: jnp.sum(v) > 0.0)
    return jnp.sum(arrays["w"] if arrays["w"] is not None else w ** 3)


def test_a_predicate_of_the_batched_value_refused(x64):
    """keep(v) reading v's values: one truth value per example, which a Python `if` cannot
    take: refused under vmap (as JAX raises), never read as one example's"""
    w = np.array([0.4, -0.7, 1.1])
    with pytest.raises(secant.SecantError):
        secant.vmap(_value_keep)(np.stack([w, -w]))


def _named_predicate(w):
    model = {"w": w, "scale": 0.5}
    arrays = tree_util.tree_map(lambda v: v if _is_array(v) else None, model)
    return jnp.sum(arrays["w"] ** 2) * len(tree_util.tree_leaves(arrays))


def test_a_type_predicate_of_a_broadcast_scalar(x64):
    """vmap broadcast the 0.5 beside the batched w to an array, and is_array (called by name)
    read that array: 'scale' counted as an array, a silently doubled value (3.72 for 1.86).
    A type test now reads each example's scalar (ad/helpers.py example_scalar)."""
    w = np.array([0.4, -0.7, 1.1])
    _check_vmap(_named_predicate, np.stack([w, 0.5 * w, -w]))
    np.testing.assert_allclose(secant.vmap(_named_predicate)(w[None]), [np.sum(w ** 2)])


# --- vmap(model)(x) inside a function vmapped over the model itself ----------------------------------
@tree_util.register_pytree_node_class
class _Affine:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return jnp.tanh(x @ self.w + self.b)

    def energy(self, x):
        return jnp.sum(self(x) ** 2)

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


_XS = np.linspace(-1.0, 1.0, 8).reshape(4, 2)


def _model_of(p):
    return _Affine(p[:4].reshape(2, 2), p[4:])


def _mapped_loss(model, x):
    return jnp.mean(secant.vmap(model)(x) ** 2)


def _mapped_method_loss(model, x):
    return jnp.sum(secant.vmap(model.energy)(x))


def _mapped_twice(model, x):
    inner = secant.vmap(model)(x)
    return jnp.sum(secant.vmap(model, in_axes=0)(inner) * x)


@pytest.mark.parametrize("loss", [_mapped_loss, _mapped_method_loss, _mapped_twice],
                         ids=lambda f: f.__name__)
def test_vmap_of_a_model_inside_a_vmap_over_models(x64, loss):
    """vmap(model)(x) where the model is itself batched by an enclosing vmap (equinox's loss
    under vmap over an ensemble): no batching rule for the dispatcher; now the batched form of
    the model's, batched again over the ensemble (transforms.py _generate_batched_dispatch_vmap)"""
    ps = np.stack([np.linspace(-0.5, 0.7, 6) * s for s in (1.0, -0.6, 1.4)])
    models = tree_util.tree_map(lambda *a: np.stack(a), *[_model_of(p) for p in ps])
    got = secant.vmap(loss, in_axes=(0, None))(models, _XS)
    want = [float(loss(_model_of(p), _XS)) for p in ps]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(loss, in_axes=(0, None)))(models, _XS),
                               want, rtol=1e-10)
    g = secant.vmap(secant.grad(loss), in_axes=(0, None))(models, _XS)
    for i, p in enumerate(ps):
        fd = fd_grad(lambda q: loss(_model_of(q), _XS), (p,))
        np.testing.assert_allclose(np.concatenate([np.ravel(g.w[i]), g.b[i]]), fd,
                                   rtol=1e-6, atol=1e-8)


# --- a plain object's field read for its shape -------------------------------------------------------
class _Poly:
    def __init__(self, c):
        self._c = c

    @property
    def degree(self):
        return self._c.shape[0] - 1


class _Series:
    """a polynomial whose degree is a property of its coefficients' shape"""

    def __init__(self, c):
        self._c = c

    @property
    def degree(self):
        return self._c.shape[0] - 1

    @property
    def size(self):
        return len(self._c)

    def __call__(self, x):
        return sum(self._c[i] * x ** i for i in range(self.degree + 1))

    def derivative(self):
        n = self.degree
        return _Series(self._c[1:] * jnp.arange(1, n + 1))

    @staticmethod
    def horner(coeffs, x):
        acc = 0.0
        for c in coeffs[::-1]:
            acc = acc * x + c
        return acc

    @classmethod
    def scale(cls):
        return 0.5

    def value_at(self, x):
        return self.horner([self._c[i] for i in range(self.degree + 1)], x) * self.scale()

    def shifted(self):
        return _Series(jnp.concatenate([jnp.zeros(1), self._c]) * (self.size + 1.0))


def _series_value(c):
    return _Series(c)(0.3) ** 2


def _series_slope(c):
    return _Series(c).derivative()(-0.2) * _Series(c)(0.4)


def _series_shifted(c):
    s = _Series(c).shifted()
    return s(0.5) + s.degree * jnp.sum(c)


def _series_static_method(c):
    """self.horner, a static method read through the object: no cotangent of its own (the
    cotangent object was refused: 'setting them does not give the same pytree structure')"""
    s = _Series(c)
    return s.value_at(0.3) ** 2 + s.derivative().value_at(-0.2)


def _series_by_hand(c):
    """the same values without the class (what every transform is checked against too)"""
    return np.polyval(np.asarray(c)[::-1], 0.3) ** 2


@pytest.mark.parametrize("f", [_series_value, _series_slope, _series_shifted,
                               _series_static_method],
                         ids=lambda f: f.__name__)
def test_a_property_from_a_fields_shape(x64, f):
    """`range(self.degree + 1)`, `np.arange(1, n + 1)` with n = self.degree, a property
    computing an int from a field's shape: read as that expression (a static fact of the
    field, per example under vmap), not as a differentiated or batched leaf (refused) nor run
    on the batched object (its getter read the batch axis: a wrong degree)"""
    c = np.array([0.5, -1.0, 0.7, 0.2])
    _check_grad(f, c)
    _check_vmap(f, np.stack([c, 2 * c, -c]))
    np.testing.assert_allclose(secant.jit(f)(c), f(c), rtol=1e-12)
    np.testing.assert_allclose(_series_value(c), _series_by_hand(c), rtol=1e-12)


def _scaled_by_length(c):
    p = _Poly(c)
    return jnp.sum(jnp.sin(c)) * p._c.shape[0] + p._c.shape[-1] * c[0] ** 2


def _scaled_by_ndim(c):
    p = _Poly(c * 2.0)
    return jnp.sum(p._c ** 2) / (p._c.ndim + p._c.shape[0])


@pytest.mark.parametrize("f", [_scaled_by_length, _scaled_by_ndim], ids=lambda f: f.__name__)
def test_shape_of_a_local_objects_field(x64, f):
    """`p._c.shape[0]` of an object built in the function from a differentiated value (held as
    its fields): the subscript of the shape re-read the expression as written, `p._c` of the
    dict holding p's fields (an internal AttributeError under grad, vmap, jit)"""
    c = np.array([0.5, -1.0, 0.7, 0.2])
    _check_grad(f, c, hessian=False)
    _check_vmap(f, np.stack([c, 2 * c, -c]))
    np.testing.assert_allclose(secant.jit(f)(c), f(c), rtol=1e-12)


def test_shape_of_a_local_objects_field_under_hessian(x64):
    """hessian (vmap of the grad's jvp): `p, p_dot = _poly_fields_jvp_vmap(c, c_dot)` batches
    only p_dot; the normaliser marked p batched too (each output of an unpacked call is now
    decided from the callee's form, norm15l), and read p['_c'].shape[1:] (an IndexError)"""
    c = np.array([0.5, -1.0, 0.7, 0.2])
    _check_grad(_scaled_by_length, c)
