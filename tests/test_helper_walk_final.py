"""Issue 15, section 4: what the helper walk needed, as user code (each against float64 finite
differences, a Python loop, or a closed form): getattr with a run-time name, `a or b` as a
value, dict(d) of a parameter, type(c)(items), vmap of vmap of x.at[i] with a batched index,
lax.while_loop under grad of grad with user names the reverse pass uses, and lists built with
.append under vmap."""
from collections import namedtuple

import numpy as np

import secant
import secant.numpy as snp
from secant import lax

P = namedtuple("P", "w b")


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol)


def fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def by_name(p):
    s = 0.0
    for k in ("w", "b"):
        s = s + snp.sin(getattr(p, k)) * getattr(p, "w")
    return s


def test_getattr_with_a_run_time_name(x64):
    p = P(0.3, 0.5)
    g = secant.grad(by_name)(p)
    assert type(g) is P
    close(g.w, fd(lambda w: by_name(P(w, 0.5)), 0.3))
    close(g.b, fd(lambda b: by_name(P(0.3, b)), 0.5))
    _, t = secant.jvp(by_name, (p,), (P(1.0, 0.0),))
    close(t, g.w, rtol=1e-10)
    ws = np.array([0.3, -0.2, 0.8])
    bs = np.array([0.5, 1.5, -0.7])
    got = secant.vmap(by_name)(P(ws, bs))
    close(got, [by_name(P(w, b)) for w, b in zip(ws, bs)], rtol=1e-12)


def either(x, d):
    e = d or {"a": x}
    g = dict(e or {})
    s = (x > 0 and x * 3.0) or x * 5.0
    return g["a"] * snp.sin(x) + s


def test_or_and_as_values_and_dict_of_a_parameter(x64):
    for d in ({}, {"a": 2.0}):
        for x in (0.5, -0.5):
            want = fd(lambda v: either(v, d), x)
            close(secant.grad(either)(x, d), want)
            close(secant.jvp(lambda v: either(v, d), (x,), (1.0,))[1], want)


def same_kind(xs):
    ys = type(xs)(snp.sin(v) * 2.0 for v in xs)
    return ys[0] * ys[1]


def test_type_of_a_container_called_on_items(x64):
    for kind in (list, tuple):
        xs = kind([0.3, 0.5])
        g = secant.grad(same_kind)(xs)
        assert type(g) is kind
        close(g[0], 4 * np.cos(0.3) * np.sin(0.5))
        close(g[1], 4 * np.sin(0.3) * np.cos(0.5))
        batch = kind([np.array([0.3, 0.1]), np.array([0.5, 0.2])])
        close(secant.vmap(same_kind)(batch), [same_kind(kind([0.3, 0.5])),
                                               same_kind(kind([0.1, 0.2]))], rtol=1e-12)
        g2 = secant.grad(secant.grad(lambda a: same_kind(kind([a, a * a]))))(0.3)
        close(g2, fd(secant.grad(lambda a: same_kind(kind([a, a * a]))), 0.3))


def scatter(x, i):
    return snp.zeros(4).at[i].add(x * x)


def test_vmap_of_vmap_of_an_update_at_a_batched_index(x64):
    rng = np.random.default_rng(0)
    xs, idx = rng.normal(size=(2, 3, 2)), rng.integers(0, 4, size=(2, 3, 2))
    loop = np.array([[scatter(x, i) for x, i in zip(xr, ir)] for xr, ir in zip(xs, idx)])
    close(secant.vmap(secant.vmap(scatter))(xs, idx), loop, rtol=1e-12)
    close(secant.jit(secant.vmap(secant.vmap(scatter)))(xs, idx), loop, rtol=1e-12)
    # the outer vmap batches x only, the inner one i only (and the other way round)
    loop = np.array([[scatter(x, i) for i in idx[0]] for x in xs[:, 0]])
    close(secant.vmap(secant.vmap(scatter, (None, 0)), (0, None))(xs[:, 0], idx[0]), loop,
          rtol=1e-12)
    loop = np.array([[scatter(xs[0, 0], i) for i in ir] for ir in idx])
    close(secant.vmap(secant.vmap(scatter, (None, 0)), (None, 0))(xs[0, 0], idx), loop,
          rtol=1e-12)
    close(secant.vmap(secant.vmap(secant.vmap(scatter)))(xs[None], idx[None])[0],
          np.array([[scatter(x, i) for x, i in zip(xr, ir)] for xr, ir in zip(xs, idx)]),
          rtol=1e-12)


def while_with_names(x):
    j = x * 3.0             # names the reverse pass of a while loop uses for its own
    carry = x * 0.5
    return lax.while_loop(lambda c: c[1] < 3, lambda c: (snp.sin(c[0]) * carry, c[1] + 1),
                          (j, 0))[0]


def test_grad_of_grad_of_a_while_loop_with_names_its_reverse_pass_uses(x64):
    g = secant.grad(while_with_names)
    close(g(0.7), fd(while_with_names, 0.7))
    close(secant.grad(g)(0.7), fd(g, 0.7), rtol=1e-5)


def appended(x):
    out = []
    for k in range(3):
        out.append(snp.sin(x * (k + 1.0)))
    return snp.stack(out) * 2.0


def test_vmap_of_a_list_built_with_append_and_of_its_derivatives(x64):
    xs = np.array([0.3, -0.4, 1.1])
    close(secant.vmap(appended)(xs), np.stack([appended(x) for x in xs]), rtol=1e-12)
    g = secant.grad(lambda x: snp.sum(appended(x) ** 2))
    close(secant.vmap(g)(xs), [g(x) for x in xs], rtol=1e-12)
    close(secant.vmap(g)(xs), [fd(lambda v: float(snp.sum(appended(v) ** 2)), x) for x in xs])
    close(secant.jacfwd(g)(0.3), fd(g, 0.3), rtol=1e-5)
    rows = np.stack([xs, xs * 0.5])                 # vmap(vmap(f), out_axes=1): (3, 2, 3)
    want = np.stack([np.stack([appended(x) for x in r]) for r in rows], axis=1)
    close(secant.vmap(secant.vmap(appended), out_axes=1)(rows), want, rtol=1e-12)
