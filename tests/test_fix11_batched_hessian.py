"""Issue 15: vmap(hessian(f)) (= vmap(jacfwd(jacrev(f)))) of a function reading a dict of
parameters in a loop over its items raised ShapeError "add got incompatible shapes for
broadcasting: (2, 3, 1), (2, 1)": the cotangent of a dict item added by batching/helpers.py
add_at_batched (a container's item) kept an unbatched cotangent without its batch axis, so
under a further vmap its outer axis did not line up with the items'. Checked against a Python
loop of float64 central-difference hessians (tests/test_random_programs2.py drew it)."""
import numpy as np

import secant
import secant.numpy as snp


def f(v0):
    params1 = {'a': 0.5, 'b': v0, 'c': -0.2}
    v1 = v0
    for name1, p1 in params1.items():
        v1 = v1 + p1 * snp.sin(v1) * (0.5 if name1 == 'a' else 0.3)
    return snp.sum(v1 * v0 + v1)


def g(v0):              # a list of parameters: add_at of a list's item
    ps = [0.5, v0 * v0, -0.2]
    v1 = v0
    for i in range(3):
        v1 = v1 + ps[i] * snp.cos(v1)
    return snp.sum(v1 * v0)


def fd_hessian(fn, x, h=1e-4):
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(si, sj):
                y = x.copy()
                y[i] += si * h
                y[j] += sj * h
                return float(fn(y))
            out[i, j] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h)
    return out


def test_vmap_hessian_of_a_dict_loop(x64):
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3))
    want = np.stack([fd_hessian(f, r) for r in x])
    for t in (secant.vmap(secant.hessian(f)), secant.vmap(secant.jacfwd(secant.jacrev(f))),
              secant.vmap(secant.jacfwd(secant.grad(f)))):
        np.testing.assert_allclose(t(x), want, rtol=1e-6, atol=1e-6)


def test_vmap_hessian_of_a_list_loop(x64):
    x = np.random.default_rng(1).uniform(-1, 1, (3, 2))
    want = np.stack([fd_hessian(g, r) for r in x])
    np.testing.assert_allclose(secant.vmap(secant.hessian(g))(x), want, rtol=1e-6, atol=1e-6)
