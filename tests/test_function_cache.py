"""What the transforms cache for a function lives as long as the function
(backends/function_cache.py): a closure transformed and dropped frees what it closed over."""
import functools
import gc
import weakref

import numpy as np
import pytest

import secant
import secant.numpy as snp


class _Tracked(np.ndarray):
    """An array a weak reference can watch."""


def _closure(big):
    def f(w):
        if snp.sum(w) > 0:          # (control flow: jit stages it, vmap selects)
            return snp.sum(snp.sin(w * big[:3]))
        return snp.sum(w * big[:3])
    return f


X = np.array([0.5, 1.0, 2.0])
RUNS = {
    "grad": lambda f: secant.grad(f)(X),
    "jit": lambda f: secant.jit(f)(X),
    "jit_grad": lambda f: secant.jit(secant.grad(f))(X),
    "vmap": lambda f: secant.vmap(f)(np.stack([X, -X])),
    "vmap_grad": lambda f: secant.vmap(secant.grad(f))(np.stack([X, 2 * X])),
    "jvp": lambda f: secant.jvp(f, (X,), (X,)),
    "vjp": lambda f: secant.vjp(f, X)[1](1.0),
    "hessian": lambda f: secant.hessian(f)(X),
    "jacfwd_grad": lambda f: secant.jacfwd(secant.grad(f))(X),
    "source": lambda f: secant.source(secant.grad(f)),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_dropped_closure_frees_what_it_closed_over(name):
    big = np.random.default_rng(0).random(10).view(_Tracked)
    watch = weakref.ref(big)
    RUNS[name](_closure(big))
    del big
    gc.collect()
    assert watch() is None, f"{name} kept the closure's array alive"


def test_each_closure_gets_its_own_values():
    rng = np.random.default_rng(1)
    for _ in range(3):
        big = rng.random(3)
        want = np.cos(X * big) * big
        np.testing.assert_allclose(secant.grad(_closure(big))(X), want, rtol=1e-6)
        np.testing.assert_allclose(secant.jit(secant.grad(_closure(big)))(X), want, rtol=1e-6)


def test_a_wrapper_that_copied_the_functions_dict_has_its_own_derivative():
    def f(x):
        return snp.sum(x ** 3)

    np.testing.assert_allclose(secant.grad(f)(X), 3 * X ** 2, rtol=1e-6)    # f's cached

    @functools.wraps(f)     # copies f.__dict__ (and the cache stored in it) to g
    def g(x):
        return 2.0 * f(x)

    np.testing.assert_allclose(secant.grad(g)(X), 6 * X ** 2, rtol=1e-6)
    np.testing.assert_allclose(secant.grad(f)(X), 3 * X ** 2, rtol=1e-6)
