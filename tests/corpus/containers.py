"""Section 1 of issue 15: Python containers of traced values, walrus, and user names that
collide with the names generated code uses."""

import secant
import secant.numpy as snp
from secant import tree_util

from corpus import Case, vec

# a user global named like one of secant's derivative helpers
matmul_grad_y = 3.0


def mean_of_list(x):
    return snp.mean(snp.array([x, x + 2.0]))


def mean_of_bare_list(x):
    return snp.mean([x, x + 2.0])


def list_in_variable(x):
    a = snp.sin(x)
    b = [1.0, a * a, 2.0]
    return snp.sum(snp.array(b))


def array_of_list(x):
    v = snp.array([x[0], 2.0 * x[1], x[0] * x[2]])
    return snp.sum(v ** 2)


def stack_of_list(x):
    rows = [x, x ** 2, snp.sin(x)]
    return snp.sum(snp.stack(rows) * snp.arange(3.0)[:, None])


def tuple_unpack(x):
    t = (snp.sin(x), snp.cos(x))
    a, b = t
    return snp.sum(a * b)


def dict_built(x):
    d = {"a": x * 2.0, "b": snp.exp(x)}
    return snp.sum(d["a"] * d["b"])


def list_indexed(x):
    parts = [x, x * x, x ** 3]
    return snp.sum(parts[1] + parts[-1])


def _sin_cos(x):
    return snp.sin(x), snp.cos(x)


def helper_returns_tuple(x):
    s, c = _sin_cos(x)
    return snp.sum(s * s - c)


def _moments(x):
    return {"mean": snp.mean(x), "sq": snp.mean(x * x)}


def helper_returns_dict(x):
    m = _moments(x)
    return m["sq"] - m["mean"] ** 2


def builtin_sum_of_list(x):
    return snp.sum(sum([x, 2.0 * x, snp.tanh(x)]))


def nested_list(x):
    m = snp.array([[x[0], x[1]], [x[1] * x[2], x[0]]])
    return snp.sum(m @ m)


def star_unpack(x):
    first, *rest = [x[0], x[1], x[2]]
    return first * rest[0] + rest[1] ** 2


def walrus_scalar(x):
    return (y := snp.sin(x)) * y


def walrus_in_sum(x):
    return snp.sum((s := snp.tanh(x)) * s + s)


def shadowing_locals(x):
    grad_seed = x * 2.0
    unbroadcast = snp.sin(grad_seed)
    mean_grad = snp.mean(unbroadcast)
    return mean_grad


def shadowing_global(x):
    return matmul_grad_y * snp.sum(x ** 2)


def tuple_param(p, x):
    w, b = p
    return snp.sum(snp.tanh(x @ w + b))


def layers_hidden_last(params, x):
    hidden, last = params[:-1], params[-1]
    for p in hidden:
        x = snp.tanh(x @ p["w"] + p["b"])
    return snp.sum(x @ last["w"] + last["b"])


HIDDEN_LAST = [{"w": vec(18, 3, 3), "b": vec(19, 3)}, {"w": vec(20, 3, 2), "b": vec(21, 2)}]


def tree_reduce_squares(p):
    return tree_util.tree_reduce(lambda a, b: a + snp.sum(b ** 2), p, 0.0)


def tree_map_is_leaf(p):
    q = tree_util.tree_map(lambda t: t[0] * snp.sin(t[1]), p,
                           is_leaf=lambda n: isinstance(n, tuple))
    return snp.sum(q["a"] + q["b"])


def jvp_of_closure(x):
    w = snp.sin(x)
    return snp.sum(secant.jvp(lambda y: snp.tanh(y * w) * w, (x,), (snp.ones_like(x),))[1])


def concat_of_list(x):
    y = snp.concatenate([x, 2.0 * x, snp.sin(x)])
    return snp.sum(y * y)


CASES = [
    Case("mean_of_list", mean_of_list, (0.3,)),
    Case("mean_of_bare_list", mean_of_bare_list, (0.3,)),
    Case("list_in_variable", list_in_variable, (0.4,)),
    Case("array_of_list", array_of_list, (vec(1, 3),)),
    Case("stack_of_list", stack_of_list, (vec(2, 3),)),
    Case("tuple_unpack", tuple_unpack, (vec(3, 3),)),
    Case("dict_built", dict_built, (vec(4, 3),)),
    Case("list_indexed", list_indexed, (vec(5, 3),)),
    Case("helper_returns_tuple", helper_returns_tuple, (vec(6, 3),)),
    Case("helper_returns_dict", helper_returns_dict, (vec(7, 4),)),
    Case("builtin_sum_of_list", builtin_sum_of_list, (vec(8, 3),)),
    Case("nested_list", nested_list, (vec(9, 3),)),
    Case("star_unpack", star_unpack, (vec(10, 3),)),
    Case("walrus_scalar", walrus_scalar, (0.7,)),
    Case("walrus_in_sum", walrus_in_sum, (vec(11, 3),)),
    Case("shadowing_locals", shadowing_locals, (vec(12, 3),)),
    Case("shadowing_global", shadowing_global, (vec(13, 3),)),
    Case("tuple_param", tuple_param, ((vec(14, 3, 2), vec(15, 2)), vec(16, 4, 3))),
    Case("concat_of_list", concat_of_list, (vec(17, 3),)),
    Case("layers_hidden_last", layers_hidden_last, (HIDDEN_LAST, vec(22, 4, 3)), argnums=0,
         in_axes=(None, 0)),
    Case("tree_reduce_squares", tree_reduce_squares, ({"a": vec(23, 3), "b": vec(24, 2)},)),
    Case("tree_map_is_leaf", tree_map_is_leaf, ({"a": (vec(25, 3), vec(26, 3)),
                                                  "b": (vec(27, 3), vec(28, 3))},)),
    Case("jvp_of_closure", jvp_of_closure, (vec(29, 3),)),
]
