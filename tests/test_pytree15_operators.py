"""Issue 15, operators on the user's own classes: a 3-vector class that overloads + - * / @,
unary minus and abs() (registered as a pytree), used as JAX users write physics code. Python
calls the class's methods (a subclass's reflected one first), so the transforms must: the
generated code asks at run time (transformer/operators.py) where an operand may be such an
object, and keeps plain operators on arrays. Checked under grad, jit(grad), jvp, vmap,
vmap(grad) and hessian against float64 finite differences, a Python loop and eager."""
import os
import pathlib

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, tree_util

from others15_check import check_grad, check_vmap, fd_grad, fd_jvp, to_snp

RNG = np.random.default_rng(151515)
GOLDEN = pathlib.Path(__file__).parent / "golden"


@tree_util.register_pytree_node_class
class Vector:
    def __init__(self, xyz):
        self.xyz = xyz

    def __add__(self, other):
        return Vector(self.xyz + other.xyz) if isinstance(other, Vector) else \
            Vector(self.xyz + other)

    __radd__ = __add__

    def __sub__(self, other):
        return self + -other

    def __rsub__(self, other):
        return -self + other

    def __mul__(self, k):
        return Vector(self.xyz * k)

    __rmul__ = __mul__

    def __truediv__(self, k):
        return Vector(self.xyz / k)

    def __neg__(self):
        return Vector(-self.xyz)

    def __matmul__(self, other):
        return jnp.sum(self.xyz * other.xyz)

    def __abs__(self):
        return jnp.sqrt(self @ self)

    def tree_flatten(self):
        return (self.xyz,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_pytree_node_class
class Doubled(Vector):
    """A subclass whose reflected product Python calls first (`v * d` is d.__rmul__(v))."""
    def __rmul__(self, other):
        return Vector(2.0 * self.xyz * other.xyz)


def pair_energy(a, b):
    """A spring between two points given as arrays, written with Vectors."""
    d = Vector(a) - Vector(b)
    return 0.5 * (abs(d) - 1.0) ** 2 + 0.1 * (d @ Vector(jnp.ones(3)))


def shifted(v):
    return 3.0 * v - 1.0


def vector_loss(v, w):
    """Vectors passed in: reflected, unary and helper-returned operators."""
    u = 2.0 - v / 2.0 + shifted(w) - -w
    return abs(u) ** 2 + (v @ u)


def subclass_loss(v, w):
    return abs(Vector(v) * Doubled(w))


def plain(x, y):
    return jnp.sum((x - y) ** 2 * 2.0)


def vec(n=3):
    return Vector(RNG.normal(size=n))


def test_objects_built_from_arrays(x64):
    a, b = RNG.normal(size=3), RNG.normal(size=3)
    d = a - b
    r = np.linalg.norm(d)
    g = check_grad(pair_energy, a, b)
    np.testing.assert_allclose(g, (r - 1.0) * d / r + 0.1, rtol=1e-10)
    check_vmap(pair_energy, (RNG.normal(size=(4, 3)), b), in_axes=(0, None))
    check_vmap(grad(pair_energy), (RNG.normal(size=(4, 3)), b), in_axes=(0, None))
    h = hessian(pair_energy)(to_snp(a), to_snp(b))
    want = np.stack([fd_grad(lambda p: grad(pair_energy)(p, to_snp(b))[i], (to_snp(a),))
                     for i in range(3)])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(hessian(pair_energy))(to_snp(a), to_snp(b)), h, rtol=1e-10)


def test_objects_passed_in(x64):
    v, w = vec(), vec()
    g = check_grad(vector_loss, v, w)
    assert isinstance(g, Vector)
    check_grad(vector_loss, v, w, argnum=1)
    tv, tw = vec(), vec()
    out, tan = jvp(vector_loss, to_snp((v, w)), to_snp((tv, tw)))
    np.testing.assert_allclose(out, vector_loss(*to_snp((v, w))), rtol=1e-12)
    np.testing.assert_allclose(tan, fd_jvp(vector_loss, to_snp((v, w)), (tv, tw)), rtol=1e-6)
    batch = Vector(RNG.normal(size=(4, 3)))
    check_vmap(vector_loss, (batch, w), in_axes=(0, None))
    check_vmap(grad(vector_loss), (batch, w), in_axes=(0, None))
    check_vmap(grad(vector_loss, argnums=1), (v, Vector(RNG.normal(size=(4, 3)))),
               in_axes=(None, 0))


def test_reflected_method_of_a_subclass_first(x64):
    v, w = RNG.normal(size=3), RNG.normal(size=3)
    np.testing.assert_allclose(subclass_loss(*to_snp((v, w))), 2 * np.linalg.norm(v * w),
                               rtol=1e-12)
    g = check_grad(subclass_loss, v, w)
    np.testing.assert_allclose(g, 2 * v * w ** 2 / np.linalg.norm(v * w), rtol=1e-10)


def test_arrays_keep_plain_operators_and_objects_ask_at_run_time():
    assert "binary_method" not in secant.source(grad(plain))
    text = secant.source(grad(pair_energy))
    assert "binary_method(" in text and "unary_method(" in text
    path = GOLDEN / "operators" / "pair_energy_grad.py.txt"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text)       # (then review the diff, as tests/test_golden.py says)
    assert text == path.read_text()


def test_hessian_with_objects_passed_in(x64):
    """Regression: hessian's Jacobians generated the jvp and vjp of f's form for arrays (its
    operators read as array ops: 'Vector' object has no attribute 'shape'); they now read the
    objects form grad's, jvp's and vmap's wrappers pick (transforms.py _base). JAX's layout: a
    Vector of Vectors, a tuple of tuples for argnums=(0, 1)."""
    v, w = to_snp((vec(), vec()))
    h = hessian(vector_loss)(v, w)
    assert isinstance(h, Vector) and isinstance(h.xyz, Vector)
    np.testing.assert_allclose(h.xyz.xyz, -0.5 * np.eye(3), atol=1e-12)     # |u|^2 + v.u
    for loss in (cubic_loss, lambda v, w: cubic_loss(w, v)):
        on_arrays = lambda a, b: loss(Vector(a), Vector(b))
        for k in (0, 1):
            want = np.stack([fd_grad(lambda *p: grad(on_arrays, argnums=k)(*p)[i],
                                     (v.xyz, w.xyz), argnum=k) for i in range(3)])
            h = hessian(loss, argnums=k)(v, w)
            np.testing.assert_allclose(h.xyz.xyz, want, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(jit(hessian(loss, argnums=k))(v, w).xyz.xyz, h.xyz.xyz,
                                       rtol=1e-10)
        both = hessian(loss, argnums=(0, 1))(v, w)
        want = hessian(on_arrays, argnums=(0, 1))(v.xyz, w.xyz)
        for i in (0, 1):
            assert isinstance(both[i], Vector)
            for j in (0, 1):
                np.testing.assert_allclose(both[i].xyz[j].xyz, want[i][j], rtol=1e-10)
    # the Jacobians one at a time, and of grad
    np.testing.assert_allclose(jacrev(cubic_loss)(v, w).xyz, grad(cubic_loss)(v, w).xyz,
                               rtol=1e-12)
    np.testing.assert_allclose(jacfwd(cubic_loss)(v, w).xyz, grad(cubic_loss)(v, w).xyz,
                               rtol=1e-12)
    np.testing.assert_allclose(jacfwd(grad(cubic_loss))(v, w).xyz.xyz,
                               hessian(cubic_loss)(v, w).xyz.xyz, rtol=1e-10)


def cubic_loss(v, w):
    """A Hessian that varies: 3|d| I + 3 d d^T / |d| of |d|^3, d = v - 2w, plus v.w."""
    d = v - 2.0 * w
    return abs(d) ** 3 + v @ w
