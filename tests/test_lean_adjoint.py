"""Lean adjoints (issue 20): `unbroadcast` only where shapes can differ (transformer/shapes.py)
and no cotangent copies (ad/copies.py).

The numerical tests are the ones a wrongly dropped unbroadcast would fail: every gradient is
compared with float64 central differences, on broadcasting programs (scalar against array,
(3, 1) + (1, 4), keepdims reductions, loops whose carried value grows), under grad, jit, vmap
and second order.
"""
import re

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.transformer import ir
from secant.transformer.shapes import Shapes

RNG = np.random.default_rng(20)


def fd_grad(f, args, argnum, eps=1e-6):
    """Central differences of scalar f with respect to args[argnum] (float64)."""
    args = [np.array(a, dtype=np.float64) for a in args]
    x = args[argnum]
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        out[idx] = (float(f(*args[:argnum], up, *args[argnum + 1:]))
                    - float(f(*args[:argnum], down, *args[argnum + 1:]))) / (2 * eps)
    return out


def check(f, *args, argnums=None):
    """grad and jit(grad) of f against central differences for every argument."""
    argnums = tuple(range(len(args))) if argnums is None else argnums
    for transform in (lambda g: g, secant.jit):
        got = transform(secant.grad(f, argnums=argnums))(*args)
        for k, a in enumerate(argnums):
            want = fd_grad(f, args, a)
            assert np.shape(got[k]) == np.shape(args[a])
            np.testing.assert_allclose(np.asarray(got[k]), want, rtol=1e-6, atol=1e-8)


# --- broadcasting programs -----------------------------------------------------------------------
def scalar_and_array(x, s):
    return snp.sum(snp.sin(x * s + s) * x)


def outer_sum(a, b):
    return snp.sum(snp.sin(a + b) * (a * b))


def centred(x):
    m = snp.mean(x, axis=1, keepdims=True)
    return snp.sum((x - m) ** 2 * snp.exp(x - m))


def same_shapes(x, y):
    z = snp.sin(x) * snp.cos(y) + x * 2.0 - y / 3.0
    return snp.sum(z * z)


def loop(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return acc


def loop_sum(x):
    acc = 0.0
    for i in range(3):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def loop_from_scalar(x, a):
    """The carried value starts as a scalar and becomes x's shape: its first cotangent sums."""
    acc = a
    for i in range(3):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc * acc)


def loop_growing(x, y):
    """(3, 1) carried through `* y` with y (1, 4): (3, 1) on the first iteration, (3, 4) after."""
    acc = x
    for _ in range(2):
        acc = acc * y + x
    return snp.sum(snp.tanh(acc))


def loop_of_slices(x):
    """A carried value combined with a per-iteration result of another shape each time."""
    acc = x[0:1]
    for i in range(2):
        acc = acc + snp.sin(x[0:1 + 2 * i]) * x[0:1]      # (1,), then (3,)
    return snp.sum(acc * acc)


def leapfrog(q, p, k, dt):
    """Scalars kept inline (`0.5 * dt * k`) broadcast like any operand: where dt or k is an
    array wider than q, each unbroadcast the analysis keeps is needed."""
    p_half = p - 0.5 * dt * k * q
    q_new = q + dt * p_half
    return snp.sum(q_new * q_new * snp.exp(-snp.log(2 * snp.pi))) + snp.sum(p_half / snp.sqrt(
        float(q.shape[-1])))


def minus_row_sums(x):
    """(3, 1) - (3,) is (3, 3): a reduction without keepdims can be wider than its operand."""
    return snp.sum(snp.sin(x - snp.sum(x, axis=1)) * x)


def log_softmax(x):
    z = x - snp.max(x, axis=-1, keepdims=True)
    return snp.sum((z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))) * x)


def where_broadcast(c, x):
    return snp.sum(snp.where(c > 0, x * c, x + 1.0) ** 2)


MASK = np.array([[True], [False], [True]])


def where_global_mask(x):
    """The condition is a global the transform keeps as text: it broadcasts x up too."""
    return snp.sum(snp.where(MASK, x, 0.0) * 2.0 * snp.sin(x))


def keepdims_max(x, w):
    return snp.sum(x * snp.max(x * w, axis=0, keepdims=True) + w)


def complex_scale(x):
    return snp.sum(snp.real(x * (1 + 2j) * snp.sin(x)))


@pytest.mark.parametrize("f, shapes", [
    (scalar_and_array, [(3,), ()]),
    (scalar_and_array, [(), (3,)]),
    (outer_sum, [(3, 1), (1, 4)]),
    (outer_sum, [(3, 4), (4,)]),
    (centred, [(3, 4)]),
    (same_shapes, [(2, 3), (2, 3)]),
    (loop_sum, [(3,)]),
    (loop_from_scalar, [(3,), ()]),
    (loop_growing, [(3, 1), (1, 4)]),
    (loop_of_slices, [(3,)]),
    (keepdims_max, [(3, 4), (4,)]),
    (keepdims_max, [(3, 4), (3, 1)]),
    (complex_scale, [(3,)]),
    (where_global_mask, [(4,)]),
    (minus_row_sums, [(3, 1)]),
    (minus_row_sums, [(3, 3)]),
    (log_softmax, [(3, 4)]),
    (leapfrog, [(3,), (3,), (), ()]),
    (leapfrog, [(3, 1), (3, 1), (), (1, 4)]),
    (leapfrog, [(3,), (3, 1), (4, 1, 1), ()]),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_broadcasting_gradients(x64, f, shapes):
    args = [RNG.normal(size=s) for s in shapes]
    check(f, *args)


def test_where_with_broadcast_condition(x64):
    c, x = RNG.normal(size=(3, 1)), RNG.normal(size=(4,))
    check(where_broadcast, c, x, argnums=(1,))


def test_loop_gradient(x64):
    x = np.asarray(0.7)
    got = secant.grad(loop)(x, 4)
    np.testing.assert_allclose(got, fd_grad(lambda x: loop(x, 4), [x], 0), rtol=1e-6)


def test_vmapped_gradients(x64):
    """vmap of the lean gradient against a Python loop of it, and against differences."""
    xs, s = RNG.normal(size=(5, 3)), np.asarray(0.4)
    g = secant.vmap(secant.grad(scalar_and_array, argnums=(0, 1)), in_axes=(0, None))(xs, s)
    for k in range(5):
        np.testing.assert_allclose(g[0][k], fd_grad(scalar_and_array, [xs[k], s], 0), rtol=1e-6)
        np.testing.assert_allclose(g[1][k], fd_grad(scalar_and_array, [xs[k], s], 1), rtol=1e-6)
    a, b = RNG.normal(size=(5, 3, 1)), RNG.normal(size=(1, 4))
    g = secant.vmap(secant.grad(outer_sum, argnums=(0, 1)), in_axes=(0, None))(a, b)
    for k in range(5):
        np.testing.assert_allclose(g[1][k], fd_grad(outer_sum, [a[k], b], 1), rtol=1e-6)
    xs, a0 = RNG.normal(size=(4, 3)), RNG.normal(size=(4,))
    g = secant.vmap(secant.grad(loop_from_scalar, argnums=1))(xs, a0)
    for k in range(4):
        np.testing.assert_allclose(g[k], fd_grad(loop_from_scalar, [xs[k], a0[k]], 1), rtol=1e-6)
    gj = secant.jit(secant.vmap(secant.grad(loop_growing, argnums=1), in_axes=(None, 0)))
    x, ys = RNG.normal(size=(3, 1)), RNG.normal(size=(2, 1, 4))
    got = gj(x, ys)
    for k in range(2):
        np.testing.assert_allclose(got[k], fd_grad(loop_growing, [x, ys[k]], 1), rtol=1e-6)


def test_grad_of_vmap(x64):
    def batched(xs, s):
        return snp.sum(secant.vmap(scalar_and_array, in_axes=(0, None))(xs, s))
    xs, s = RNG.normal(size=(4, 3)), np.asarray(-0.3)
    check(batched, xs, s)


def test_second_order(x64):
    """The gradient of a lean gradient: the scalar's cotangent sums at both orders."""
    x, s = RNG.normal(size=(3,)), np.asarray(0.6)

    def dds(s):
        return secant.grad(scalar_and_array, argnums=1)(x, s)
    got = secant.grad(dds)(s)
    np.testing.assert_allclose(got, fd_grad(dds, [s], 0), rtol=1e-5)

    def loop_ds(a):
        return secant.grad(loop_from_scalar, argnums=1)(x, a)
    np.testing.assert_allclose(secant.grad(loop_ds)(s), fd_grad(loop_ds, [s], 0), rtol=1e-5)
    y = RNG.normal(size=(1, 4))
    hess_row = secant.grad(lambda y: snp.sum(secant.grad(outer_sum, argnums=0)(x[:, None], y)))
    np.testing.assert_allclose(
        hess_row(y), fd_grad(lambda y: np.sum(secant.grad(outer_sum, argnums=0)(x[:, None], y)),
                             [y], 0), rtol=1e-5)


# --- the generated source ----------------------------------------------------------------------
COPY = re.compile(r"^\s*\w+_bar\w* = \w+_bar\w*$", re.M)


def test_loop_source_is_lean():
    src = secant.source(secant.grad(loop))
    assert not COPY.search(src), src
    assert "unbroadcast(" not in src, src          # acc is a Python float, i a counter
    assert "acc_1_bar = acc_1_bar" not in src
    # the accumulator over iterations keeps its zeros before the loop and adds in it
    assert re.search(r"x_bar = snp\.zeros_like\(x\)\n\s+for ", src), src
    assert re.search(r"^\s+x_bar = x_bar \+ ", src, re.M), src


def test_unbroadcast_kept_where_shapes_may_differ():
    src = secant.source(secant.grad(loop_from_scalar, argnums=1))
    assert "unbroadcast(" in src, src      # acc starts as the scalar a
    src = secant.source(secant.grad(outer_sum, argnums=(0, 1)))
    assert src.count("unbroadcast(") >= 2, src
    src = secant.source(secant.grad(complex_scale))
    assert "unbroadcast(" in src, src      # a real x meets a complex number


def counted(x, n):
    i = 0
    while i < n:
        x = 0.9 * x + 0.1 * snp.sin(x) * (i + 1.0)
        i = i + 1
    return snp.sum(x * x)


def counted_only(x, n):
    i = 0
    while i < n:
        x = 0.9 * x + 0.1 * snp.sin(x)
        i = i + 1
    return snp.sum(x * x)


@pytest.mark.parametrize("f", [counted, counted_only], ids=lambda f: f.__name__)
def test_counter_carry_has_no_cotangent(x64, f):
    """A while loop's counter (every assignment a Python number) gets no cotangent; where no
    derivative reads it, the reverse loop neither pops nor replays it."""
    src = secant.source(secant.grad(f))
    assert "x_stack" in src and not re.search(r"\bi_\w*_bar\b", src), src
    assert ("i_stack" in src) == (f is counted), src     # (i + 1.0) scales x's cotangent
    x = RNG.normal(size=(3,))
    np.testing.assert_allclose(secant.grad(f)(x, 4), fd_grad(lambda x: f(x, 4), [x], 0),
                               rtol=1e-6)


def test_inline_scalars_need_no_unbroadcast():
    """`q_new = q + dt * p_half`: p_half's set holds dt's (transformer/shapes.py reads the
    inline `0.5 * dt * k`), so its cotangent from q_new is not unbroadcast; q's is."""
    src = secant.source(secant.grad(leapfrog))
    assert "unbroadcast(p_half_bar" not in src and "unbroadcast(dt * " not in src, src
    # (q's cotangent returned in place: ad/fold.py returned_in_place; its unbroadcasts to q
    # have q's dtype, no grads_as: ad/algebra.py unbroadcasts_merged)
    assert re.search(r"return unbroadcast\(", src) and "grads_as" not in src, src


def joined(x, flag):
    y = snp.sin(x) * 2.0
    if flag:
        y = snp.exp(y)
    return snp.sum(y * y * x)


@pytest.mark.parametrize("flag", [True, False])
def test_no_copy_at_a_branch_join(x64, flag):
    """`y_1_bar = y_2_bar` in the else of an if: one name for both (ad/copies.py)."""
    src = secant.source(secant.grad(joined))
    assert not COPY.search(src), src
    x = RNG.normal(size=(3,))
    np.testing.assert_allclose(secant.grad(joined)(x, flag),
                               fd_grad(lambda x: joined(x, flag), [x], 0), rtol=1e-6)


def _join_lines(branch_reads_after):
    from secant.ad import copies
    from secant.ad.reverse import Line
    code = [(1, "stmt", "b_bar = f(x)"), (1, "block", "if c:"), (2, "stmt", "a_bar = g(b_bar)")]
    code += [(2, "stmt", "t_bar = h(b_bar)")] if branch_reads_after else []
    code += [(1, "block", "else:"), (2, "stmt", "a_bar = b_bar"), (1, "stmt", "return a_bar")]
    lines = [Line(c, indent, kind) for indent, kind, c in code]
    return [ln.code for ln in copies.without_copies(lines, {"a_bar", "b_bar", "t_bar"})]


def test_join_only_where_the_copied_value_is_not_read_after():
    assert _join_lines(False) == ["b_bar = f(x)", "if c:", "b_bar = g(b_bar)", "else:",
                                  "return b_bar"]
    # b_bar is read in the if's branch after a_bar is assigned there: one name would clobber it
    assert "a_bar = b_bar" in _join_lines(True)


def test_first_contribution_assigns():
    def straight(x):
        y = snp.sin(x)
        return snp.sum(y * x + x)
    src = secant.source(secant.grad(straight))
    assert "zeros_like" not in src and not COPY.search(src), src


# --- the analysis itself ------------------------------------------------------------------------
def _fn(body, params):
    return ir.Function("f", ", ".join(params), params, body, None)


def test_analysis_is_conservative_for_unknown_values():
    o = ir.Origin(1, "")
    v = ir.Var
    body = [ir.Op(["m"], "matmul", {"x": v("a"), "y": v("b")}, {}, o),
            ir.Op(["z"], "add", {"x": v("m"), "y": v("c")}, {}, o),
            ir.Op(["w"], "multiply", {"x": v("z"), "y": ir.Expr("2.0")}, {}, o),
            ir.Op(["u"], "add", {"x": v("w"), "y": v("z")}, {}, o)]
    s = Shapes(_fn(body, ["a", "b", "c"]))
    assert s.needs_unbroadcast([v("m"), v("c")], "m")       # c may be larger than a @ b
    assert s.needs_unbroadcast([v("m"), v("c")], "c")
    assert not s.needs_unbroadcast([v("z"), ir.Expr("2.0")], "z")   # a Python number
    assert not s.needs_unbroadcast([v("w"), v("z")], "w")   # z * 2.0 has z's shape
    assert not s.needs_unbroadcast([v("w"), v("z")], "z")
    assert s.needs_unbroadcast([v("z"), ir.Expr("1j")], "z")        # a complex number
    assert s.needs_unbroadcast([v("z"), ir.Expr("q")], "z")         # an unknown name


def test_analysis_bounds_reductions_that_keep_the_rank():
    """snp.log(snp.sum(e, axis=1, keepdims=True)) broadcasts to e's shape: e's cotangent from
    `e - l` needs no unbroadcast; l's does, and so does e's against a reduction without
    keepdims ((3, 1) - (3,) is (3, 3))."""
    o = ir.Origin(1, "")
    v = ir.Var
    body = [ir.Op(["r"], "sum", {"a": v("e")}, {"axis": "1", "keepdims": "True"}, o),
            ir.Op(["l"], "log", {"x": v("r")}, {}, o),
            ir.Op(["t"], "sum", {"a": v("e")}, {"axis": "1"}, o),
            ir.Op(["u"], "sum", {"a": v("e")}, {}, o)]
    s = Shapes(_fn(body, ["e"]))
    assert not s.needs_unbroadcast([v("e"), v("l")], "e")
    assert s.needs_unbroadcast([v("e"), v("l")], "l")
    assert s.needs_unbroadcast([v("e"), v("t")], "e")
    assert not s.needs_unbroadcast([v("e"), v("u")], "e")      # a scalar
    assert s.needs_unbroadcast([v("e"), v("u")], "u")


def test_analysis_reads_inline_expressions():
    """An inline expression is the broadcast of its names, numbers and elementwise calls;
    anything else is unknown (and so unbroadcast)."""
    o = ir.Origin(1, "")
    v = ir.Var
    body = [ir.Op(["t"], "multiply", {"x": ir.Expr("(0.5 * dt * k)"), "y": v("q")}, {}, o),
            ir.Op(["u"], "subtract", {"x": v("p"), "y": v("t")}, {}, o)]
    s = Shapes(_fn(body, ["q", "p", "k", "dt"]))
    assert s.needs_unbroadcast([v("p"), v("t")], "p")           # t holds dt, k and q
    assert not s.needs_unbroadcast([v("u"), ir.Expr("dt * u")], "u")
    assert s.needs_unbroadcast([v("q"), ir.Expr("dt * u")], "q")
    assert not s.needs_unbroadcast([v("u"), ir.Expr("snp.log(2 * snp.pi)")], "u")
    assert not s.needs_unbroadcast([v("u"), ir.Expr("snp.exp(-k) / float(q.shape[0])")], "u")
    assert s.needs_unbroadcast([v("q"), ir.Expr("snp.exp(k)")], "q")
    assert s.needs_unbroadcast([v("u"), ir.Expr("snp.identity(3)")], "u")   # a matrix
    assert s.needs_unbroadcast([v("u"), ir.Expr("2.0 ** 0.5j")], "u")
    assert s.needs_unbroadcast([v("u"), ir.Expr("(-2.0) ** 0.5")], "u")     # complex
    assert s.needs_unbroadcast([v("u"), ir.Expr("snp.exp(k, dtype=c)")], "u")
    assert s.needs_unbroadcast([v("u"), ir.Expr("snp.sum(k)")], "u")


def test_vmap_aligns_only_where_ranks_may_differ(x64):
    """batching/vectorize.py asks the same analysis: no align of a loop counter, none between
    values of one shape; kept for a carried value that starts as a scalar."""
    src = secant.source(secant.vmap(loop_sum))
    assert "align(x, i)" not in src, src
    xs, a = RNG.normal(size=(4, 3)), np.asarray(0.3)
    for f, args, axes in [(loop_sum, (xs,), 0), (loop_from_scalar, (xs, a), (0, None)),
                          (loop_growing, (RNG.normal(size=(2, 3, 1)), RNG.normal(size=(1, 4))),
                           (0, None)),
                          (scalar_and_array, (xs, a), (0, None))]:
        got = secant.vmap(f, in_axes=axes)(*args)
        want = [f(*[x[k] if ax == 0 else x for x, ax in
                    zip(args, axes if isinstance(axes, tuple) else (axes,))])
                for k in range(args[0].shape[0])]
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_analysis_reaches_its_fixpoint_through_loops():
    """A loop's copies and list appends settle (an analysis that did not would know nothing,
    and keep every unbroadcast)."""
    from test_containers_values import append_loop
    src = secant.source(secant.grad(append_loop))
    assert "unbroadcast(" not in src, src


def branchy(x):
    y = x
    for i in range(4):
        if i % 2 == 0:
            y = y * 2.0 + x
        else:
            y = snp.sin(y)
    return snp.sum(y * y)


def branchy_traced(x):
    y = x
    for _ in range(3):
        if snp.sum(y) > 0.0:
            y = y * y
        if snp.sum(y) < 5.0:
            continue
        y = snp.cos(y) + x
    return snp.sum(y)


def test_copies_through_branches_in_loops(x64):
    """The carried cotangent renamed through an if that reassigns it in one branch only."""
    check(branchy, RNG.normal(size=(3,)))
    for x in (np.array([0.3, 0.5, 0.2]), np.array([-0.4, 0.1, -0.2]), np.array([1.5, 1.2, 0.9])):
        got = secant.grad(branchy_traced)(x)
        np.testing.assert_allclose(got, fd_grad(branchy_traced, [x], 0), rtol=1e-6)
    assert not COPY.search(secant.source(secant.grad(branchy))), secant.source(secant.grad(branchy))
