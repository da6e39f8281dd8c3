"""Lean derivatives (issue 20), this step: a matmul's result that an elementwise op reads (the
`x @ w` of `x @ w + b`) needs neither an unbroadcast of its cotangent nor its value kept for
that unbroadcast's shape: matmul_grad_x / matmul_grad_y sum the cotangent they are given down
to x @ w's shape themselves (ad/helpers.py), and transformer/dataflow.py's summed_by_own_rule
says where the cotangent reaches that rule only (the value assigned once at the top level, read
by top-level statements only).

Each derivative is checked against float64 central differences, where the matmul's result is
broadcast up by the other operand in every way NumPy allows (leading axes, a size-1 row or
column, a 1-D by 1-D product), and jit, vmap and second order against eager, loops and
differences."""
import numpy as np

import secant
import secant.numpy as snp
from secant import lax
from secant.ad import fields
from secant.transformer import dataflow, ir
from secant.transformer.shapes import Shapes
from test_lean20c import fd_grad
from test_lean20d import _code, _lines

RNG = np.random.default_rng(2007)


def affine(x, w, b):
    return snp.sum(snp.sin(x @ w + b))


def affine_times(x, w, b):
    return snp.sum(snp.cos(b * (x @ w)))


# (x, w, b): x @ w broadcast up by b, each way
SHAPES = {
    "same": ((2, 3), (3, 4), (4,)),
    "leading axes": ((2, 3), (3, 4), (5, 2, 4)),
    "size-1 column": ((2, 3), (3, 1), (2, 4)),
    "size-1 row": ((1, 3), (3, 4), (2, 4)),
    "vector by vector": ((3,), (3,), (5,)),
    "vector by matrix": ((3,), (3, 4), (2, 4)),
    "matrix by vector": ((2, 3), (3,), (5, 2)),
    "stacked by matrix": ((2, 1, 3), (3, 4), (2, 5, 4)),
}


def _args(shapes):
    return [RNG.uniform(-1.0, 1.0, size=s) for s in shapes]


def _fd(f, args, k):
    return fd_grad(lambda v: f(*[v if i == k else a for i, a in enumerate(args)]), args[k])


def test_broadcast_matmul_results_differentiate_right(x64):
    for label, shapes in SHAPES.items():
        args = _args(shapes)
        for f in (affine, affine_times):
            got = secant.grad(f, argnums=(0, 1, 2))(*args)
            for k in range(3):
                np.testing.assert_allclose(np.asarray(got[k]), _fd(f, args, k), rtol=1e-6,
                                           atol=1e-8, err_msg=f"{f.__name__} {label} arg {k}")
            jitted = secant.jit(secant.grad(f, argnums=(0, 1, 2)))(*args)
            for a, b in zip(jitted, got):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_the_generated_gradient_has_no_unbroadcast_nor_value_for_the_matmul():
    src = secant.source(secant.grad(affine, argnums=(0, 1, 2)))
    assert "unbroadcast(" not in src.split("b_bar")[0]        # (b's own cotangent sums)
    assert "x_matmul_w =" not in src and "x_matmul_w_bar" not in src
    assert "x_bar = matmul_grad_x(" in src and "w_bar = matmul_grad_y(" in src


def test_second_order_and_vmap_read_the_summing_helpers(x64):
    x, w, b = _args(SHAPES["leading axes"])
    g = secant.grad(affine)
    hess = np.asarray(secant.hessian(affine)(x, w, b))
    for idx in np.ndindex(x.shape):
        col = fd_grad(lambda v: np.asarray(g(v, w, b))[idx], x)
        np.testing.assert_allclose(hess[idx], col, rtol=1e-5, atol=1e-7)
    xs = RNG.uniform(-1.0, 1.0, size=(3,) + x.shape)
    batched = np.asarray(secant.vmap(secant.grad(affine, argnums=1), in_axes=(0, None, None))(
        xs, w, b))
    for i in range(3):
        np.testing.assert_allclose(batched[i], np.asarray(secant.grad(affine, argnums=1)(
            xs[i], w, b)), rtol=1e-12)


def read_in_loop(x, w, b, n):
    v = x @ w
    acc = 0.0
    for i in range(n):
        acc = acc + snp.sum(snp.sin(v + b * i))
    return acc


def read_in_branch(x, w, b, flag):
    v = x @ w
    if flag:
        out = snp.sum(snp.sin(v + b))
    else:
        out = snp.sum(v * v)
    return out


def test_a_matmul_read_in_a_loop_or_branch_keeps_its_unbroadcast(x64):
    x, w, b = _args(SHAPES["leading axes"])
    for f, extra in ((read_in_loop, 3), (read_in_branch, True), (read_in_branch, False)):
        args = [x, w, b]
        got = secant.grad(f, argnums=(0, 1))(x, w, b, extra)
        for k in range(2):
            want = _fd(lambda *a: f(*a, extra), args, k)
            np.testing.assert_allclose(np.asarray(got[k]), want, rtol=1e-6, atol=1e-8)
    assert "unbroadcast(" in secant.source(secant.grad(read_in_loop))


def _summed(body, params=("x", "w", "b")):
    fn = ir.Function("f", ", ".join(params), list(params), body, None)
    return dataflow.summed_by_own_rule(fn, {"matmul"})


O, V = ir.Origin(1, ""), ir.Var


def _op(target, op, x, y):
    return ir.Op([target], op, {"x": V(x), "y": V(y)}, {}, O)


def test_summed_by_own_rule_reads_where_the_value_is_read():
    mm = _op("v", "matmul", "x", "w")
    add = _op("z", "add", "v", "b")
    assert _summed([mm, add]) == {"v"}
    # read twice: two contributions of two shapes v broadcasts to would sum to a third
    assert _summed([mm, add, _op("u", "multiply", "v", "z")]) == frozenset()
    # read in a loop, or a branch: not
    assert _summed([mm, ir.For("i", "r", [add], [], O)]) == frozenset()
    assert _summed([mm, ir.If("c", [], [add], O)]) == frozenset()
    # assigned twice, a parameter, a matmul's result read by... (not a matmul: an add)
    assert _summed([mm, _op("v", "matmul", "v", "w"), add]) == frozenset()
    assert _summed([_op("x", "matmul", "x", "w"), _op("z", "add", "x", "b")]) == frozenset()
    assert _summed([_op("v", "add", "x", "w"), add]) == frozenset()
    # a nested statement the analysis cannot read: nothing
    assert _summed([mm, ir.If("c", [ir.Plain("q = (", {"q"}, O)], [], O), add]) == frozenset()


# --- a dict parameter's fields read where used (ad/fields.py) -----------------------------------
def mlp(params, x):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    return snp.sum((h @ params["w2"]) ** 2)


def test_a_dict_parameters_fields_are_read_where_used(x64):
    params = {"w1": RNG.uniform(-1, 1, (3, 4)), "b1": RNG.uniform(-1, 1, (4,)),
              "w2": RNG.uniform(-1, 1, (4, 2))}
    x = RNG.uniform(-1, 1, (5, 3))
    src = secant.source(secant.grad(mlp))
    assert "w1 = params" not in src and "x @ params['w1'] + params['b1']" in src
    assert "matmul_grad_y(" in src and "params['w2'])" in src
    got = secant.grad(mlp)(params, x)
    for k, v in params.items():
        def f(u, k=k):
            return mlp({**params, k: u}, x)
        np.testing.assert_allclose(np.asarray(got[k]), fd_grad(f, v), rtol=1e-6, atol=1e-8)
    jitted = secant.jit(secant.grad(mlp))(params, x)
    for k in params:
        np.testing.assert_allclose(np.asarray(jitted[k]), np.asarray(got[k]), rtol=1e-12)


def _read_in_place(*specs, temporaries=("w", "b"), params=("p", "x")):
    return _code(fields.read_in_place(_lines(*specs), set(temporaries), set(params)))


def test_field_reads_move_only_where_nothing_can_change_the_dict():
    moved = _read_in_place((1, "w = p['w']"), (1, "y = x @ w"), (1, "w_bar = g * w"),
                           (1, "p_bar = grad_of_fields(p, {'w': w_bar})"), (1, "return p_bar"))
    assert moved == [(1, "y = x @ p['w']"), (1, "w_bar = g * p['w']"),
                     (1, "p_bar = grad_of_fields(p, {'w': w_bar})"), (1, "return p_bar")]
    kept = [
        # the dict changed in place, reassigned, or handed to a function that could change it
        ((1, "w = p['w']"), (1, "p['w'] = 2 * w"), (1, "y = x @ w"), (1, "return y")),
        ((1, "w = p['w']"), (1, "p.update(q)"), (1, "y = x @ w"), (1, "return y")),
        ((1, "w = p['w']"), (1, "p = q"), (1, "y = x @ w"), (1, "return y")),
        ((1, "w = p['w']"), (1, "f(p)"), (1, "y = x @ w"), (1, "return y")),
        # an integer index (an array's row: an op at each read), a name the user gave
        ((1, "w = x[0]"), (1, "y = w * w"), (1, "return y")),
        ((1, "v = p['w']"), (1, "y = v * v"), (1, "return y")),
        # a read inside a lambda (which may name its own parameter w), assigned twice
        ((1, "w = p['w']"), (1, "y = f(lambda w: w + 1)"), (1, "return y")),
        ((1, "w = p['w']"), (1, "w = w * 2"), (1, "return w")),
    ]
    for specs in kept:
        assert _read_in_place(*specs) == _code(_lines(*specs)), specs


# --- grad's seed from a reduced value's dtype; a shape read from a value held anyway -----------
def rnn(w, xs):
    def step(h, x):
        h = snp.tanh(h @ w + x)
        return h, h
    _, hs = lax.scan(step, snp.zeros(w.shape[0]), xs)
    return snp.sum(hs * hs)


def softmax_xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def test_seed_from_the_reduced_values_dtype_and_shapes_read_from_values_held_anyway(x64):
    w, xs = RNG.uniform(-0.5, 0.5, (3, 3)), RNG.uniform(-1, 1, (4, 3))
    src = secant.source(secant.grad(rnn))
    assert "grad_seed_like(hs)" in src and "hs_sq" not in src     # no sum run for the seed
    np.testing.assert_allclose(np.asarray(secant.grad(rnn)(w, xs)),
                               fd_grad(lambda v: rnn(v, xs), w), rtol=1e-6, atol=1e-8)
    logits, labels = RNG.uniform(-1, 1, (4, 5)), np.eye(5)[[0, 3, 1, 4]]
    src = secant.source(secant.grad(softmax_xent))
    # log's result read for its shape no more; exp and sum not kept (log-softmax's rule reads
    # logp alone: tests/test_lean20z_softmax.py)
    code = "\n".join(ln for ln in src.splitlines() if not ln.strip().startswith("#"))
    assert "snp.log(sum_exp_z)" not in code and "exp_z =" not in code, src
    np.testing.assert_allclose(np.asarray(secant.grad(softmax_xent)(logits, labels)),
                               fd_grad(lambda v: softmax_xent(v, labels), logits), rtol=1e-6,
                               atol=1e-8)


def _seed_source(body, name):
    fn = ir.Function("f", "x", ["x"], body, None)
    return dataflow.scalar_like(fn, name, Shapes(fn), [])


def test_seed_source_follows_only_what_keeps_the_dtype():
    sq = _op("s", "multiply", "x", "x")
    red = ir.Op(["o"], "sum", {"a": V("s")}, {}, O)
    assert _seed_source([sq, red], "o") == "x"
    # mean of integers is a float; an op of two values promotes (the seed reads its result,
    # not an operand: lean20i); a partial sum is no scalar
    assert _seed_source([sq, ir.Op(["o"], "mean", {"a": V("s")}, {}, O)], "o") is None
    assert _seed_source([_op("s", "multiply", "x", "y"), red], "o") == "s"
    assert _seed_source([sq, ir.Op(["o"], "sum", {"a": V("s")}, {"axis": "0"}, O)], "o") is None
    # the value reduced through a sum over an axis, then over the rest
    part = ir.Op(["p"], "sum", {"a": V("s")}, {"axis": "1"}, O)
    assert _seed_source([sq, part, ir.Op(["o"], "max", {"a": V("p")}, {}, O)], "o") == "x"


def _pair(x):
    return [snp.sin(x), snp.cos(x) * 2.0]


def list_sum(x):
    return snp.sum(_pair(x))


def test_seed_from_a_callees_list_output(x64):
    x = RNG.uniform(-1, 1, (3,))
    np.testing.assert_allclose(np.asarray(secant.grad(list_sum)(x)), fd_grad(list_sum, x),
                               rtol=1e-6, atol=1e-8)


def squared_tanh(x):
    return snp.sum(snp.tanh(x) ** 2)


def test_seed_reads_a_parameter_before_a_reduced_value(x64):
    """A seed from a parameter of the same dtype (dataflow's `like`) costs nothing; one from the
    reduced value (`tanh_x ** 2`, not in the dtype-keeping ops) would compute the square only to
    read its dtype: the parameter is tried first."""
    src = secant.source(secant.grad(squared_tanh))
    assert "grad_seed_like(x)" in src and "tanh_x ** 2\n" not in src, src
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(secant.grad(squared_tanh)(x),
                               2 * np.tanh(x) * (1 - np.tanh(x) ** 2), rtol=1e-12)
