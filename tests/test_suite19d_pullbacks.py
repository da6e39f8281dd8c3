"""vjp_pullback (the function a transform writes for `pb(ct)`, transformer/vjp_calls.py) is built
once per derivative and argument count, so a vjp called in each step of a loop (odeint's adjoint)
is transformed once, not once a call (issue 19); its values stay those of the closed forms."""
import numpy as np

import secant
import secant.numpy as snp
from secant import transforms


def square_sin(x):
    return snp.sin(x) ** 2


def pulled(x):
    """d/dx sin(x)^2 through a vjp in the code: 2 sin x cos x = sin 2x."""
    _, pb = secant.vjp(square_sin, x)
    return pb(snp.ones_like(x))[0]


def test_the_pullback_is_built_once():
    first = transforms.vjp_pullback(square_sin, 1)
    assert transforms.vjp_pullback(square_sin, 1) is first


def test_values_through_the_shared_pullback(x64):
    xs = np.array([0.3, -1.1, 2.0])
    for x in xs:        # (each call reads the same pullback)
        np.testing.assert_allclose(pulled(x), np.sin(2 * x), rtol=1e-12)
        np.testing.assert_allclose(secant.grad(pulled)(x), 2 * np.cos(2 * x), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(pulled))(xs), 2 * np.cos(2 * xs),
                               rtol=1e-12)


def test_a_function_redefined_gets_its_own_pullback(x64):
    def g(x):
        return snp.sin(x) ** 2

    def outer(x):
        _, pb = secant.vjp(g, x)
        return pb(snp.ones_like(x))[0]
    np.testing.assert_allclose(secant.grad(outer)(0.4), 2 * np.cos(0.8), rtol=1e-12)
    g.__code__ = (lambda x: snp.cos(x) ** 2).__code__       # d/dx cos^2 = -sin 2x
    np.testing.assert_allclose(outer(0.4), -np.sin(0.8), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(outer)(0.4), -2 * np.cos(0.8), rtol=1e-12)


def test_vjp_funs_share_code_and_keep_their_own_values(x64):
    """vjp's vjp_fun is compiled once per source text (transforms._load_again); each keeps its
    own primals, and a transform of the second one reads its own."""
    _, first = secant.vjp(square_sin, 0.3)
    _, second = secant.vjp(square_sin, 1.1)
    assert first.__code__ is second.__code__
    np.testing.assert_allclose(first(1.0)[0], np.sin(0.6), rtol=1e-12)
    np.testing.assert_allclose(second(2.0)[0], 2 * np.sin(2.2), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(lambda c: second(c)[0])(1.0), np.sin(2.2),
                               rtol=1e-12)
    np.testing.assert_allclose(first(1.0)[0], np.sin(0.6), rtol=1e-12)
