"""Issue 15: a function's defaults, keyword defaults or code replaced after a transform.

`def f(x, a=2.0)`, grad(f) taken, then `f.__defaults__ = (3.0,)`: Python calls f with a=3.0 now,
and so must grad(f) (JAX's grad traces again at each call). The generated derivative wrote the
old default into its own signature and every cache keyed by f kept it: grad(f) answered for
a=2.0, a silently wrong value. Each function's cached forms now keep the code and defaults they
were built for (backends/function_cache.py fresh, Stamp). Checked against closed forms and
float64 central differences, under grad, vmap, jvp, value_and_grad, a new jit(grad(f)), and
through a helper the differentiated function calls. A jit object already traced keeps its
program, as jax.jit does (it traces once per signature)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import grad, jit, jvp, value_and_grad, vmap

X = 0.5
XS = np.array([0.5, -1.25, 2.0])


def fd(f, x, eps=1e-6):
    return (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)


def _positional():
    def f(x, a=2.0):
        return snp.sin(x) * a

    def set_a(v):
        f.__defaults__ = (v,)
    return f, f, set_a


def _keyword_only():
    def f(x, *, a=2.0):
        return snp.sin(x) * a

    def set_a(v):
        f.__kwdefaults__ = {"a": v}
    return f, f, set_a


def _keyword_only_in_place():
    def f(x, *, a=2.0):
        return snp.sin(x) * a

    def set_a(v):
        f.__kwdefaults__["a"] = v
    return f, f, set_a


def _through_a_helper():
    def helper(x, a=2.0):
        return snp.sin(x) * a

    def f(x):
        return helper(x) + 0.0 * x

    def set_a(v):
        helper.__defaults__ = (v,)
    return f, helper, set_a


def _code_replaced():
    def f(x):
        return snp.sin(x) * 2.0

    def f3(x):
        return snp.sin(x) * 3.0

    def f2(x):
        return snp.sin(x) * 2.0

    def set_a(v):
        f.__code__ = (f3 if v == 3.0 else f2).__code__
    return f, f, set_a


CASES = {"defaults": _positional, "kwdefaults": _keyword_only,
         "kwdefaults_in_place": _keyword_only_in_place, "helper_defaults": _through_a_helper,
         "code": _code_replaced}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jvp", "vmap", "vmap_grad",
                                       "new_jit_grad"])
def test_a_default_or_code_replaced_after_the_transform(x64, case, transform):
    f, _, set_a = CASES[case]()
    made = {"grad": lambda: grad(f),
            "value_and_grad": lambda: (lambda x: value_and_grad(f)(x)[1]),
            "jvp": lambda: (lambda x: jvp(f, (x,), (1.0,))[1]),
            "vmap": lambda: vmap(f),
            "vmap_grad": lambda: vmap(grad(f)),
            "new_jit_grad": lambda: jit(grad(f))}[transform]
    arg = XS if transform.startswith("vmap") else X
    g = made()
    for a in (2.0, 3.0, 2.0):
        set_a(a)
        if transform == "new_jit_grad":
            g = made()          # (a jit object traced before keeps its program, as jax.jit)
        got = np.asarray(g(arg))
        if transform == "vmap":
            want = a * np.sin(arg)
        else:
            want = a * np.cos(arg)
            if not transform.startswith("vmap"):
                np.testing.assert_allclose(fd(f, X), want, rtol=1e-8)   # (f itself: eager)
        np.testing.assert_allclose(got, want, rtol=1e-10, err_msg=f"a={a}")


def test_a_closure_cell_or_global_rebound_after_the_first_call(x64):
    """These were handled (the derivative reads cells and globals when it runs): kept so."""
    a = 2.0

    def fc(x):
        return snp.sin(x) * a

    g = grad(fc)
    np.testing.assert_allclose(g(X), 2.0 * np.cos(X), rtol=1e-12)
    a = 3.0
    np.testing.assert_allclose(g(X), 3.0 * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(fc))(XS), 3.0 * np.cos(XS), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(fc))(X), 3.0 * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(jvp(fc, (X,), (1.0,))[1], fd(fc, X), rtol=1e-8)
    global SCALE
    g = grad(_scaled)
    for s in (2.0, 3.0):
        SCALE = s
        np.testing.assert_allclose(g(X), s * np.cos(X), rtol=1e-12)
        np.testing.assert_allclose(jit(grad(_scaled))(X), s * np.cos(X), rtol=1e-12)
        np.testing.assert_allclose(vmap(grad(_scaled))(XS), s * np.cos(XS), rtol=1e-12)
    SCALE = 1.0


SCALE = 1.0


def _scaled(x):
    return snp.sin(x) * SCALE


def test_a_cached_derivative_of_an_unchanged_function_is_kept(x64):
    def f(x, a=2.0):
        return snp.sin(x) * a

    g = grad(f)
    g(X)
    first = secant.transforms.generate(f, (0,), "vjp")
    g(X)
    assert secant.transforms.generate(f, (0,), "vjp") is first
    f.__defaults__ = (3.0,)
    assert secant.transforms.generate(f, (0,), "vjp") is not first
