"""Issue 15: jacfwd(jacfwd(f)) of a function calling a method of a registered pytree object
built from its input (`Affine(v0, 0.5).apply(v0)`, which calls `self(x)`: a callee known only at
run time) raised SyntaxError "duplicate argument 'fn_dot'": the jvp of the jvp dispatcher
(secant/transforms.py _generate_dispatch_derivative) named the tangent of its parameter fn
`fn_dot`, a parameter it already had. tests/test_random_programs2.py drew it. Checked against
float64 central differences."""
import numpy as np

import secant
import secant.numpy as snp


@secant.tree_util.register_pytree_node_class
class Affine:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.w * x + self.b

    def apply(self, x):
        return snp.tanh(self(x))

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def f(v0):
    m1 = Affine(v0, 0.5)
    v1 = m1.apply(v0)
    return snp.sum(v1 * v0 + v1)


def ref(v):
    return float(np.sum(np.tanh(v * v + 0.5) * (v + 1.0)))


def test_jacfwd_of_jacfwd_through_a_method_calling_self(x64):
    x, h = 0.3, 1e-4
    want = (ref(x + h) - 2 * ref(x) + ref(x - h)) / h ** 2
    np.testing.assert_allclose(secant.jacfwd(secant.jacfwd(f))(x), want, rtol=1e-6)
    h = 1e-3
    third = (ref(x + 2 * h) - 2 * ref(x + h) + 2 * ref(x - h) - ref(x - 2 * h)) / (2 * h ** 3)
    np.testing.assert_allclose(secant.jacfwd(secant.jacfwd(secant.jacfwd(f)))(x), third,
                               rtol=1e-4)
    xv = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(secant.jacfwd(secant.jacfwd(f))(xv),
                               secant.jacfwd(secant.jacrev(f))(xv), rtol=1e-12, atol=1e-12)


def test_third_order_mixed_chain_through_a_method_calling_self(x64):
    # jacrev(jit(jacrev(jacfwd(f)))): the callee-less form of a dispatcher's derivative took a
    # parameter fn_ beside its derivative's own fn_ ("duplicate parameter name: 'fn_'")
    x, h = 0.3, 1e-3
    third = (ref(x + 2 * h) - 2 * ref(x + h) + 2 * ref(x - h) - ref(x - 2 * h)) / (2 * h ** 3)
    got = secant.jacrev(secant.jit(secant.jacrev(secant.jacfwd(f))))(x)
    np.testing.assert_allclose(got, third, rtol=1e-4)
