"""Issue 15: constructs test_random_programs2's generator kept switched off (try_raises,
lambda_list, meta_range), each named here: every transform gives Python's (and JAX's) answer,
checked against float64 central differences and a Python loop (test_random_programs2's
check_chain), or refuses clearly where JAX refuses."""
import numpy as np
import pytest

import secant
from test_random_programs import load
from test_random_programs2 import _program, check_chain

CHAINS = (["grad"], ["jit"], ["vmap"], ["grad", "jit"], ["vmap", "jit"], ["jacrev", "jacfwd"],
          ["jacfwd", "jacfwd"], ["grad", "vmap"], ["jacrev"])


def test_a_static_try_body_that_raises_takes_its_handler(x64):
    """`try: c = float('x')` / `except ValueError: c = -0.3`: grad and vmap ran the body
    inline and the ValueError propagated (jit was right). The body reads no local (so no
    traced value): it runs in a small function of its own, with its handlers, and its
    outcome picks the handler (desugar._static_try)."""
    source = _program(["try:", "    c = float('x')", "except ValueError:", "    c = -0.3",
                       "v1 = c * snp.sin(v0)"])
    for names in CHAINS:
        check_chain(source, (3,), names)


def test_a_static_try_with_two_handlers_else_and_finally(x64):
    """The second handler, the else: block (when the body does not raise) and finally:."""
    source = _program(["try:", "    c = float(NAME)", "except TypeError:", "    c = 2.0",
                       "except ValueError:", "    c = -0.3", "else:", "    c = c * 0.5",
                       "finally:", "    d = 0.4", "v1 = c * snp.sin(v0) + d * v0"])
    for text, c in (("'x'", -0.3), ("None", 2.0), ("'0.6'", 0.3)):
        f = load(source.replace("FLAG = ", f"NAME = {text}\nFLAG = "))
        x = np.array([0.3, -0.2, 0.5])
        v1 = c * np.sin(x) + 0.4 * x
        np.testing.assert_allclose(secant.jit(f)(x), np.sum(v1 * x + v1), rtol=1e-12)
        want = (1 + x) * (c * np.cos(x) + 0.4) + v1
        for got in (secant.grad(f)(x), secant.jit(secant.grad(f))(x),
                    secant.vjp(f, x)[1](np.float64(1.0))[0]):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(secant.jvp(f, (x,), (np.ones(3),))[1], np.sum(want),
                                   rtol=1e-12)
        xs = np.stack([x, -x])
        np.testing.assert_allclose(secant.vmap(f)(xs), [f(x), f(-x)], rtol=1e-12)
        np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(f)))(xs),
                                   np.stack([secant.grad(f)(x), secant.grad(f)(-x)]),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.diag(secant.hessian(f)(x)),
                                   (1 + x) * (-c * np.sin(x)) + 2 * (c * np.cos(x) + 0.4),
                                   rtol=1e-10)


def test_a_static_try_body_that_raises_an_unhandled_error_raises_it(x64):
    f = load(_program(["try:", "    c = float('x')", "except KeyError:", "    c = -0.3",
                       "v1 = c * snp.sin(v0)"]))
    for t in (secant.grad, secant.vmap, secant.jit):
        with pytest.raises(ValueError, match="could not convert"):
            t(f)(np.ones((2, 3)) if t is secant.vmap else np.ones(3))
