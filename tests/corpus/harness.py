"""How the corpus is judged: each composition of {grad, jvp, vjp, vmap, jit} applied to a case,
and the reference it must match, computed from the case's *eager* function alone (float64
central finite differences, a Python loop for vmap, the eager value for jit). Nothing here
trusts one secant transform to check another.

A composition is named outermost first, as mathematics writes it: "jit∘grad" is
jit(grad(f)). `COMPOSITIONS` maps each name to (applies, run); run(case) returns (got, want)
and `check` compares them, raising `WrongValue` (an AssertionError) on a mismatch so a test
can tell a wrong answer from a refusal.

Second-order references use mixed central differences of the eager function (h = 1e-4, errors
about 1e-8 relative); third and fourth order (scalar-to-scalar cases only) use a 13-point
central stencil with exact weights, or the case's closed forms where it has a kink nearby.
"""
import functools
from fractions import Fraction

import numpy as np

import secant
import secant.numpy as snp
from secant import tree_util

B = 3                      # vmap batch size


class WrongValue(AssertionError):
    """A transform returned a value (or structure) that disagrees with the reference."""


# --- pytrees of float64 arrays ----------------------------------------------------------------
def leaves(t):
    return tree_util.tree_leaves(t)


def tmap(fn, *ts):
    return tree_util.tree_map(fn, *ts)


def as_np(t):
    return tmap(lambda l: np.asarray(l, dtype=np.float64), t)


def with_arg(args, i, x):
    return tuple(x if j == i else a for j, a in enumerate(args))


def tangent_like(x, seed):
    r = np.random.default_rng(seed)
    return tmap(lambda l: r.uniform(-1.0, 1.0, size=np.shape(l)), x)


def _scalar_out(fn, args):
    return float(np.asarray(fn(*args), dtype=np.float64))


def _shifted(x, flat_index, delta):
    """x (a pytree) with its flat_index-th scalar entry moved by delta."""
    ls, tdef = tree_util.tree_flatten(x)
    k = flat_index
    out = []
    for l in ls:
        a = np.array(l, dtype=np.float64)
        if 0 <= k < a.size:
            a.reshape(-1)[k] += delta
            a = a if np.ndim(l) else float(a)
        elif np.ndim(l) == 0:
            a = float(a)
        k -= np.size(l)
        out.append(a)
    return tree_util.tree_unflatten(tdef, out)


def _size(x):
    return sum(np.size(l) for l in leaves(x))


def _unflat_like(x, flat):
    ls, tdef = tree_util.tree_flatten(x)
    out, k = [], 0
    for l in ls:
        n = np.size(l)
        out.append(np.asarray(flat[k:k + n], dtype=np.float64).reshape(np.shape(l)))
        k += n
    return tree_util.tree_unflatten(tdef, out)


def _axpy(x, t, h):
    return tmap(lambda a, b: (np.asarray(a, np.float64) + h * b) if np.ndim(a)
                else float(a) + h * float(b), x, t)


# --- finite differences of the eager function ---------------------------------------------------
def fd_grad(fn, args, i, h=1e-6):
    x = args[i]
    g = np.empty(_size(x))
    for k in range(_size(x)):
        up = _scalar_out(fn, with_arg(args, i, _shifted(x, k, h)))
        dn = _scalar_out(fn, with_arg(args, i, _shifted(x, k, -h)))
        g[k] = (up - dn) / (2 * h)
    return _unflat_like(x, g)


def fd_dir(fn, args, i, v, h=1e-6):
    x = args[i]
    up = _scalar_out(fn, with_arg(args, i, _axpy(x, v, h)))
    dn = _scalar_out(fn, with_arg(args, i, _axpy(x, v, -h)))
    return (up - dn) / (2 * h)


def fd_hvp(fn, args, i, v, h=1e-4):
    """H v by mixed central differences: 4 evaluations per entry of args[i]."""
    x = args[i]
    out = np.empty(_size(x))
    for k in range(_size(x)):
        vals = []
        for s, t in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            y = _axpy(_shifted(x, k, s * h), v, t * h)
            vals.append(_scalar_out(fn, with_arg(args, i, y)))
        out[k] = (vals[0] - vals[1] - vals[2] + vals[3]) / (4 * h * h)
    return _unflat_like(x, out)


def fd_vhv(fn, args, i, v, h=1e-4):
    """v^T H v: the second directional derivative."""
    x = args[i]
    f0 = _scalar_out(fn, args)
    up = _scalar_out(fn, with_arg(args, i, _axpy(x, v, h)))
    dn = _scalar_out(fn, with_arg(args, i, _axpy(x, v, -h)))
    return (up - 2 * f0 + dn) / (h * h)


@functools.lru_cache(maxsize=None)
def _stencil(n, m=6):
    """Exact weights w_k (k = -m..m) with sum_k w_k f(x + k h) / h^n = f^(n)(x) + O(h^(2m+1-n))."""
    ks = list(range(-m, m + 1))
    size = len(ks)
    a = [[Fraction(k) ** p / _fact(p) for k in ks] + [Fraction(int(p == n))] for p in range(size)]
    for c in range(size):                                   # Gauss-Jordan, exact
        piv = next(r for r in range(c, size) if a[r][c] != 0)
        a[c], a[piv] = a[piv], a[c]
        a[c] = [e / a[c][c] for e in a[c]]
        for r in range(size):
            if r != c and a[r][c] != 0:
                a[r] = [e - a[r][c] * f for e, f in zip(a[r], a[c])]
    return [float(row[-1]) for row in a]


def _fact(p):
    out = 1
    for q in range(2, p + 1):
        out *= q
    return out


def fd_nth(fn, x, n, h=0.05):
    """The n-th derivative of a scalar-to-scalar eager function (13-point stencil)."""
    if n == 1:
        return fd_grad(fn, (x,), 0)
    w = _stencil(n)
    m = (len(w) - 1) // 2
    return sum(wk * _scalar_out(fn, (x + (k - m) * h,)) for k, wk in enumerate(w)) / h ** n


def nth_ref(case, n, x=None):
    x = case.args[0] if x is None else x
    if n in case.closed:
        return float(case.closed[n](x))
    return fd_nth(case.eager, x, n)


# --- batches -------------------------------------------------------------------------------------
def batch_examples(case, seed=0):
    """B argument tuples, each args with the vmapped ones (case.axes == 0) perturbed a little."""
    r = np.random.default_rng(seed)
    out = []
    for b in range(B):
        ex = []
        for a, ax in zip(case.args, case.axes):
            if ax is None or b == 0:
                ex.append(a)
            else:
                ex.append(_axpy(a, tmap(lambda l: r.uniform(-1, 1, np.shape(l)), a), 0.03 * b))
        out.append(tuple(ex))
    return out


def stack(examples):
    return tmap(lambda *ls: np.stack([np.asarray(l, dtype=np.float64) for l in ls]), *examples)


def batched_args(case, examples):
    return tuple(stack([ex[j] for ex in examples]) if ax == 0 else case.args[j]
                 for j, ax in enumerate(case.axes))


# --- comparison ----------------------------------------------------------------------------------
def check(got, want, rtol=1e-5, atol=1e-6):
    got_l, got_def = tree_util.tree_flatten(got)
    want_l, want_def = tree_util.tree_flatten(want)
    if len(got_l) != len(want_l):
        raise WrongValue(f"structure {got_def} differs from the reference's {want_def}")
    for g, w in zip(got_l, want_l):
        g = np.asarray(g, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        if g.shape != w.shape:
            raise WrongValue(f"shape {g.shape} differs from the reference's {w.shape}")
        if not np.allclose(g, w, rtol=rtol, atol=atol * max(1.0, float(np.max(np.abs(w)))
                                                            if w.size else 1.0)):
            raise WrongValue(f"value {np.array2string(g.ravel()[:6], precision=6)} differs from "
                             f"the reference {np.array2string(w.ravel()[:6], precision=6)}")


# --- one-argument views of a case ------------------------------------------------------------------
class NoView(Exception):
    """The case has no one-argument view written by hand (its compositions that need one are
    not applicable to it, as for a vmap of a function of several batched arguments)."""


def bound(case):
    """case.fn as a function of its differentiated argument only (the others fixed), written
    with a fixed arity as a user would write the wrapper."""
    f, a, i = case.fn, case.args, case.argnums
    n = len(a)
    if n == 1:
        def f1(x):
            return f(x)
    elif n == 2 and i == 0:
        a1 = a[1]

        def f1(x):
            return f(x, a1)
    elif n == 2 and i == 1:
        a0 = a[0]

        def f1(x):
            return f(a0, x)
    elif n == 3 and i == 0:
        a1, a2 = a[1], a[2]

        def f1(x):
            return f(x, a1, a2)
    else:
        raise NoView(f"no one-argument view of {n} arguments, argnums={i}")
    return f1


def bound_eager(case):
    a, i, fe = case.args, case.argnums, case.eager
    return lambda x: fe(*with_arg(a, i, x))


def tree_vdot(a, b):
    """sum of a * b over the leaves of two pytrees of one structure (what a user writes)."""
    total = 0.0
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        total = total + snp.sum(x * y)
    return total


# --- the compositions -------------------------------------------------------------------------------
def _v(case):
    return tangent_like(case.args[case.argnums], 7)


def _x(case):
    return case.args[case.argnums]


def _grad_ref(case):
    return fd_grad(case.eager, case.args, case.argnums)


def _loop_grads(case, examples):
    return stack([fd_grad(case.eager, ex, case.argnums) for ex in examples])


def _hv_ref(case):
    if case.scalar:
        return nth_ref(case, 2) * _v(case)
    return fd_hvp(case.eager, case.args, case.argnums, _v(case))


def _second_order_fn(case, kind, inner=None):
    """A one-argument function whose gradient is H v (kind 'grad': v . grad f; kind 'jvp':
    the jvp of f along v), or, for a scalar case, f' itself."""
    f1 = inner or bound(case)
    v = _v(case)
    if kind == "grad":
        g1 = secant.grad(f1)
        if case.scalar:
            return g1

        if isinstance(v, np.ndarray):
            def hv(x):
                return snp.sum(g1(x) * v)
        else:                                   # a pytree parameter (dict, list of pairs)
            def hv(x):
                return tree_vdot(g1(x), v)
        return hv

    def dv(x):
        return secant.jvp(f1, (x,), (v,))[1]
    return dv


def c_grad(case):
    return secant.grad(case.fn, case.argnums)(*case.args), _grad_ref(case)


def c_jvp(case):
    ts = tuple(_v(case) if j == case.argnums else tmap(np.zeros_like, a)
               if isinstance(a, (dict, list, tuple)) or np.ndim(a) else 0.0
               for j, a in enumerate(case.args))
    got = secant.jvp(case.fn, case.args, ts)
    want = (case.eager(*case.args), fd_dir(case.eager, case.args, case.argnums, _v(case)))
    return tuple(got), want


def c_vjp(case):
    out, pull = secant.vjp(case.fn, *case.args)
    return (out, pull(1.0)[case.argnums]), (case.eager(*case.args), _grad_ref(case))


def c_vmap(case):
    ex = batch_examples(case)
    got = secant.vmap(case.fn, in_axes=case.axes)(*batched_args(case, ex))
    return got, np.array([case.eager(*e) for e in ex], dtype=np.float64)


def c_jit(case):
    return secant.jit(case.fn)(*case.args), case.eager(*case.args)


def c_jit_grad(case):
    return secant.jit(secant.grad(case.fn, case.argnums))(*case.args), _grad_ref(case)


def c_grad_jit(case):
    return secant.grad(secant.jit(case.fn), case.argnums)(*case.args), _grad_ref(case)


def c_jit_vmap(case):
    ex = batch_examples(case)
    got = secant.jit(secant.vmap(case.fn, in_axes=case.axes))(*batched_args(case, ex))
    return got, np.array([case.eager(*e) for e in ex], dtype=np.float64)


def c_vmap_jit(case):
    ex = batch_examples(case)
    got = secant.vmap(secant.jit(case.fn), in_axes=case.axes)(*batched_args(case, ex))
    return got, np.array([case.eager(*e) for e in ex], dtype=np.float64)


def c_jvp_jit(case):
    f1 = secant.jit(bound(case))
    got = secant.jvp(f1, (_x(case),), (_v(case),))
    return tuple(got), (case.eager(*case.args),
                        fd_dir(case.eager, case.args, case.argnums, _v(case)))


def c_jit_jvp(case):
    f1, v = bound(case), _v(case)

    def run(x):
        return secant.jvp(f1, (x,), (v,))
    got = secant.jit(run)(_x(case))
    return tuple(got), (case.eager(*case.args),
                        fd_dir(case.eager, case.args, case.argnums, _v(case)))


def c_jit_vjp(case):
    f1 = bound(case)

    def run(x):
        out, pull = secant.vjp(f1, x)
        return pull(1.0)[0]
    return secant.jit(run)(_x(case)), _grad_ref(case)


def c_vmap_grad(case):
    ex = batch_examples(case)
    got = secant.vmap(secant.grad(case.fn, case.argnums), in_axes=case.axes)(
        *batched_args(case, ex))
    return got, _loop_grads(case, ex)


def _xs(case):
    """B perturbed copies of the differentiated argument, stacked."""
    ex = batch_examples(_only_diff_batched(case))
    return ex, stack([e[case.argnums] for e in ex])


def _only_diff_batched(case):
    import dataclasses
    return dataclasses.replace(case, in_axes=tuple(0 if j == case.argnums else None
                                                   for j in range(len(case.args))))


def c_grad_vmap_sum(case):
    vf = secant.vmap(bound(case))

    def total(xs):
        return snp.sum(vf(xs))
    ex, xs = _xs(case)
    return secant.grad(total)(xs), _loop_grads(_only_diff_batched(case), ex)


def c_jvp_vmap(case):
    ex, xs = _xs(case)
    vs = tangent_like(xs, 11)
    got = secant.jvp(secant.vmap(bound(case)), (xs,), (vs,))[1]
    want = []
    for b, e in enumerate(ex):
        vb = tmap(lambda l: l[b], vs)
        want.append(fd_dir(case.eager, e, case.argnums, vb))
    return got, np.array(want)


def c_vmap_jvp(case):
    f1 = bound(case)

    def dir_deriv(x, t):
        return secant.jvp(f1, (x,), (t,))[1]
    ex, xs = _xs(case)
    vs = tangent_like(xs, 11)
    got = secant.vmap(dir_deriv)(xs, vs)
    want = [fd_dir(case.eager, e, case.argnums, tmap(lambda l: l[b], vs))
            for b, e in enumerate(ex)]
    return got, np.array(want)


def c_vmap_vjp(case):
    _, pull = secant.vjp(bound(case), _x(case))
    cts = np.array([1.0, -2.0, 0.5])
    got = secant.vmap(pull)(cts)
    g = _grad_ref(case)
    return got, (stack([tmap(lambda l: c * l, g) for c in cts]),)


def c_vmap_vmap(case):
    f1 = bound(case)
    ex, xs = _xs(case)
    xss = stack([tmap(lambda l: l + 0.01 * k, xs) for k in range(2)])
    got = secant.vmap(secant.vmap(f1))(xss)
    fe = bound_eager(case)
    want = np.array([[fe(tmap(lambda l: l[b], tmap(lambda l: l + 0.01 * k, xs)))
                      for b in range(B)] for k in range(2)], dtype=np.float64)
    return got, want


def c_grad_grad(case):
    fn = _second_order_fn(case, "grad")
    return secant.grad(fn)(_x(case)), _hv_ref(case) if not case.scalar else nth_ref(case, 2)


def c_jvp_grad(case):
    g1 = secant.grad(bound(case))
    got = secant.jvp(g1, (_x(case),), (_v(case),))[1]
    return got, _hv_ref(case)


def c_grad_jvp(case):
    fn = _second_order_fn(case, "jvp")
    return secant.grad(fn)(_x(case)), _hv_ref(case)


def c_jvp_jvp(case):
    fn = _second_order_fn(case, "jvp")
    got = secant.jvp(fn, (_x(case),), (_v(case),))[1]
    if case.scalar:
        return got, nth_ref(case, 2) * _v(case) ** 2
    return got, fd_vhv(case.eager, case.args, case.argnums, _v(case))


def c_vjp_grad(case):
    _, pull = secant.vjp(secant.grad(bound(case)), _x(case))
    return pull(_v(case))[0], _hv_ref(case)


# triples
def c_jit_grad_grad(case):
    fn = _second_order_fn(case, "grad")
    return secant.jit(secant.grad(fn))(_x(case)), \
        _hv_ref(case) if not case.scalar else nth_ref(case, 2)


def c_grad_grad_jit(case):
    fn = _second_order_fn(case, "grad", inner=secant.jit(bound(case)))
    return secant.grad(fn)(_x(case)), _hv_ref(case) if not case.scalar else nth_ref(case, 2)


def c_jit_vmap_grad(case):
    ex = batch_examples(case)
    got = secant.jit(secant.vmap(secant.grad(case.fn, case.argnums), in_axes=case.axes))(
        *batched_args(case, ex))
    return got, _loop_grads(case, ex)


def c_vmap_jit_grad(case):
    ex = batch_examples(case)
    got = secant.vmap(secant.jit(secant.grad(case.fn, case.argnums)), in_axes=case.axes)(
        *batched_args(case, ex))
    return got, _loop_grads(case, ex)


def c_jit_grad_vmap_sum(case):
    vf = secant.vmap(bound(case))

    def total(xs):
        return snp.sum(vf(xs))
    ex, xs = _xs(case)
    return secant.jit(secant.grad(total))(xs), _loop_grads(_only_diff_batched(case), ex)


def _hv_at(case, x):
    if case.scalar:
        return nth_ref(case, 2, x) * _v(case)
    return fd_hvp(case.eager, with_arg(case.args, case.argnums, x), case.argnums, _v(case))


def c_vmap_jvp_grad(case):
    g1, v = secant.grad(bound(case)), _v(case)

    def hvp(x):
        return secant.jvp(g1, (x,), (v,))[1]
    ex, xs = _xs(case)
    got = secant.vmap(hvp)(xs)
    return got, stack([_hv_at(case, e[case.argnums]) for e in ex])


def c_vmap_grad_grad(case):
    fn = _second_order_fn(case, "grad")
    ex, xs = _xs(case)
    got = secant.vmap(secant.grad(fn))(xs)
    if case.scalar:
        return got, np.array([nth_ref(case, 2, e[0]) for e in ex])
    return got, stack([_hv_at(case, e[case.argnums]) for e in ex])


def c_jit_jvp_grad(case):
    g1, v = secant.grad(bound(case)), _v(case)

    def hvp(x):
        return secant.jvp(g1, (x,), (v,))[1]
    return secant.jit(hvp)(_x(case)), _hv_ref(case)


def c_grad_vmap_grad(case):
    fn = _second_order_fn(case, "grad")
    vf = secant.vmap(fn)

    def total(xs):
        return snp.sum(vf(xs))
    ex, xs = _xs(case)
    if case.scalar:
        return secant.grad(total)(xs), np.array([nth_ref(case, 2, e[0]) for e in ex])
    return secant.grad(total)(xs), stack([_hv_at(case, e[case.argnums]) for e in ex])


def c_grad3(case):
    g = secant.grad(secant.grad(secant.grad(case.fn)))
    return g(case.args[0]), nth_ref(case, 3)


def c_grad4(case):
    g = secant.grad(secant.grad(secant.grad(secant.grad(case.fn))))
    return g(case.args[0]), nth_ref(case, 4)


def c_jvp_grad_grad(case):
    g2 = secant.grad(secant.grad(case.fn))
    return secant.jvp(g2, (case.args[0],), (1.0,))[1], nth_ref(case, 3)


def c_jit_grad4(case):
    g = secant.grad(secant.grad(secant.grad(secant.grad(case.fn))))
    return secant.jit(g)(case.args[0]), nth_ref(case, 4)


def _any(case):
    return True


def _vmappable(case):
    return case.vmappable


def _scalar(case):
    return case.scalar


def _one_view(case):
    try:
        bound(case)
        return True
    except NoView:
        return False


def _one_view_vmappable(case):
    return case.vmappable and _one_view(case)


# name -> (order in the product: 1, 2, 3 or 4; applies(case); run(case))
COMPOSITIONS = {
    "grad": (1, _any, c_grad),
    "jvp": (1, _any, c_jvp),
    "vjp": (1, _any, c_vjp),
    "vmap": (1, _vmappable, c_vmap),
    "jit": (1, _any, c_jit),
    "jit∘grad": (2, _any, c_jit_grad),
    "grad∘jit": (2, _any, c_grad_jit),
    "jit∘vmap": (2, _vmappable, c_jit_vmap),
    "vmap∘jit": (2, _vmappable, c_vmap_jit),
    "jvp∘jit": (2, _one_view, c_jvp_jit),
    "jit∘jvp": (2, _one_view, c_jit_jvp),
    "jit∘vjp": (2, _one_view, c_jit_vjp),
    "vmap∘grad": (2, _vmappable, c_vmap_grad),
    "grad∘vmap-sum": (2, _one_view_vmappable, c_grad_vmap_sum),
    "jvp∘vmap": (2, _one_view_vmappable, c_jvp_vmap),
    "vmap∘jvp": (2, _one_view_vmappable, c_vmap_jvp),
    "vmap∘vjp": (2, _one_view, c_vmap_vjp),
    "vmap∘vmap": (2, _one_view_vmappable, c_vmap_vmap),
    "grad∘grad": (2, _one_view, c_grad_grad),
    "jvp∘grad": (2, _one_view, c_jvp_grad),
    "grad∘jvp": (2, _one_view, c_grad_jvp),
    "jvp∘jvp": (2, _one_view, c_jvp_jvp),
    "vjp∘grad": (2, _one_view, c_vjp_grad),
    "jit∘grad∘grad": (3, _one_view, c_jit_grad_grad),
    "grad∘grad∘jit": (3, _one_view, c_grad_grad_jit),
    "jit∘vmap∘grad": (3, _vmappable, c_jit_vmap_grad),
    "vmap∘jit∘grad": (3, _vmappable, c_vmap_jit_grad),
    "jit∘grad∘vmap-sum": (3, _one_view_vmappable, c_jit_grad_vmap_sum),
    "vmap∘jvp∘grad": (3, _one_view_vmappable, c_vmap_jvp_grad),
    "vmap∘grad∘grad": (3, _one_view_vmappable, c_vmap_grad_grad),
    "jit∘jvp∘grad": (3, _one_view, c_jit_jvp_grad),
    "grad∘vmap∘grad": (3, _one_view_vmappable, c_grad_vmap_grad),
    "grad∘grad∘grad": (3, _scalar, c_grad3),
    "jvp∘grad∘grad": (3, _scalar, c_jvp_grad_grad),
    "grad∘grad∘grad∘grad": (4, _scalar, c_grad4),
    "jit∘grad∘grad∘grad∘grad": (4, _scalar, c_jit_grad4),
}


def tolerance(name):
    """First derivatives and values: 1e-6 (scaled); second and higher: 1e-5."""
    derivs = sum(name.count(t) for t in ("grad", "jvp", "vjp"))
    return dict(rtol=1e-5, atol=1e-6 if derivs <= 1 else 1e-5)


def run(case, name):
    """Runs composition `name` on `case`; raises WrongValue on a mismatch, the transform's own
    exception when it refuses."""
    _, applies, fn = COMPOSITIONS[name]
    got, want = fn(case)
    check(as_np(got), as_np(want), **tolerance(name))


def applicable(case):
    return [n for n, (_, applies, _) in COMPOSITIONS.items() if applies(case)]
