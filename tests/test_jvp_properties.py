"""Property tests for forward mode over the random programs of tests/test_grad_properties.py
(straight-line compositions of unary, binary, reduction and matmul ops over random broadcast
shapes, written out as source): the generated jvp agrees with central finite differences of a
NumPy interpreter of the same program and with the generated vjp (<u, J v> == <J^T u, v>),
eagerly and under jit; Hessians of scalar programs are symmetric and agree with grad of grad."""
import numpy as np
from hypothesis import given, strategies as st

import secant

import test_grad_properties as gp
from test_grad_properties import enable_x64, programs, SCALAR, scalars

_SCALAR_FNS = {}        # this module's own files (test_grad_properties removes its folder)


def scalar_fn(name):
    if name not in _SCALAR_FNS:
        _SCALAR_FNS[name] = gp.load("import secant.numpy as snp\n\n\ndef f(x):\n"
                                    f"    return {SCALAR[name][0]}\n")
    return _SCALAR_FNS[name]


def setup_module():
    gp.setup_module()
    _SCALAR_FNS.clear()


def teardown_module():
    gp.teardown_module()


def _directions(args, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=a.shape) for a in args]


def _check(program, seed, jit):
    f, args, fd = gp._prepare(program, seed)
    vs = _directions(args, seed + 1)
    want = sum(float(np.sum(g * v)) for g, v in zip(fd, vs))
    jvp = (lambda *a: secant.jvp(f, a[:3], a[3:]))
    out, out_dot = (secant.jit(jvp) if jit else jvp)(*args, *vs)
    np.testing.assert_allclose(float(out), program[1](*args)[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(out_dot), want, rtol=1e-5, atol=1e-6 * (1 + abs(want)))
    grads = secant.grad(f, argnums=(0, 1, 2))(*args)
    dot = sum(float(np.sum(np.asarray(g) * v)) for g, v in zip(grads, vs))
    np.testing.assert_allclose(float(out_dot), dot, rtol=1e-10, atol=1e-12 * (1 + abs(dot)))


@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_jvp_matches_finite_differences_and_vjp(program, seed):
    with enable_x64():
        _check(program, seed, jit=False)


@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_jit_jvp_matches_finite_differences_and_vjp(program, seed):
    with enable_x64():
        _check(program, seed, jit=True)


@given(programs(max_ndim=1), st.integers(0, 2 ** 32 - 1))
def test_hessian_of_random_programs_is_symmetric_and_matches_grad_of_grad(program, seed):
    with enable_x64():
        f, args, _ = gp._prepare(program, seed)
        h = secant.hessian(f, argnums=0)(*args)
        h = np.asarray(h).reshape(args[0].size, args[0].size)
        np.testing.assert_allclose(h, h.T, rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(h))))
        # each row: the jvp of grad along a basis vector, against the gradient's jacrev
        rev = np.asarray(secant.jacrev(secant.grad(f, argnums=0))(*args))
        np.testing.assert_allclose(h, rev.reshape(h.shape), rtol=1e-9,
                                   atol=1e-9 * (1 + np.max(np.abs(h))))


@given(x=scalars, name=st.sampled_from(sorted(SCALAR)))
def test_forward_derivatives_of_scalar_functions_closed_form(x, name):
    """jvp for the first derivative, jacfwd(jacfwd) and hessian for the second."""
    with enable_x64():
        f = scalar_fn(name)
        d1, d2 = SCALAR[name][1][0](x), SCALAR[name][1][1](x)
        np.testing.assert_allclose(float(secant.jvp(f, (x,), (1.0,))[1]), d1, rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(float(secant.jacfwd(secant.jacfwd(f))(x)), d2, rtol=1e-10,
                                   atol=1e-10)
        np.testing.assert_allclose(float(secant.hessian(f)(x)), d2, rtol=1e-10, atol=1e-10)
