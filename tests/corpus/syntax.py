"""Section 3 of issue 15: Python inside a transformed function (early return, break/continue,
nested def and lambda, IfExp, comprehensions, dict methods and builtins, in-place updates,
.append, recursion on static values, try/except, with, print, assert)."""
import contextlib
import functools


import secant.numpy as snp

from corpus import Case, pos, vec

USE_BIAS = True
DEPTH = 3


def early_return_static(x):
    if x.shape[0] > 2:
        return snp.sum(snp.sin(x))
    return snp.sum(x)


def early_return_traced(x):
    if snp.sum(x) > 0.0:
        return snp.sum(x ** 2)
    return snp.sum(snp.exp(x))


def return_in_both_branches(x):
    if x > 0.0:
        y = snp.sin(x)
        return y * x
    else:
        return snp.cos(x)


def if_without_else(x):
    y = x * x
    if USE_BIAS:
        y = y + snp.sin(x)
    return y


def break_static(x):
    for i in range(10):
        x = x * 0.9 + snp.sin(x)
        if i >= 2:
            break
    return snp.sum(x)


def break_traced(x):
    for i in range(6):
        x = 0.5 * x + 0.1
        if snp.sum(x) < 0.5:
            break
    return snp.sum(x ** 2)


def continue_static(x):
    acc = 0.0
    for i in range(5):
        if i % 2 == 0:
            continue
        acc = acc + snp.sum(x ** i)
    return acc


def nested_def(x):
    def inner(y):
        return snp.sin(y) * 2.0
    return snp.sum(inner(x) + inner(2.0 * x))


def nested_def_closure(x):
    k = snp.sum(x)

    def inner(y):
        return y * k
    return snp.sum(inner(snp.cos(x)))


def nested_lambda(x):
    g = lambda y: y * snp.exp(-y)  # noqa: E731
    return snp.sum(g(x)) + snp.sum(g(x * 0.5))


def two_lambdas_one_line(x):
    f, g = (lambda a: a * 2.0), (lambda a: a ** 2)
    return snp.sum(f(x) + g(x))


def ifexp_static(x):
    y = x * 2.0 if USE_BIAS else x * 3.0
    return snp.sum(y ** 2)


def ifexp_traced(x):
    return snp.sin(x) if x > 0.0 else snp.cos(x)


def list_comprehension(x):
    return snp.sum(snp.stack([x ** i for i in range(1, 4)]))


def dict_comprehension(x):
    d = {k: x * v for k, v in zip("abc", [1.0, 2.0, 3.0])}
    return snp.sum(d["a"] * d["c"] + d["b"])


def generator_expression(x):
    return sum(snp.sum(snp.sin(x * i)) for i in range(3))


def dict_methods(x):
    d = {"a": x, "b": x ** 2, "c": snp.sin(x)}
    total = 0.0
    for k, v in d.items():
        total = total + snp.sum(v)
    total = total + sum(snp.sum(v) for v in d.values())
    total = total + snp.sum(d.get("b", x)) + snp.sum(d.get("z", 2.0 * x))
    for k in d.keys():
        total = total + snp.sum(d[k] * 0.1)
    return total


def builtins_mix(x):
    d = dict(a=x, b=snp.cos(x))
    keys = sorted(d)
    items = list(zip(keys, [1.0, 2.0]))
    total = 0.0
    for i, (k, w) in enumerate(items):
        total = total + w * snp.sum(d[k]) * (i + 1)
    return total + len(keys) * snp.sum(tuple([x, x])[1])


def zip_enumerate(x):
    ws = [0.5, 1.0, 2.0]
    acc = 0.0
    for i, (xi, w) in enumerate(zip(x, ws)):
        acc = acc + w * xi ** (i + 1)
    return acc


def inplace_set(x):
    y = snp.zeros(3)
    y[0] = snp.sin(x[0])
    y[2] = x[1] * x[2]
    return snp.sum(y * y)


def _inplace_set_ref(x):
    y = snp.zeros(3)
    y = y.at[0].set(snp.sin(x[0]))
    y = y.at[2].set(x[1] * x[2])
    return snp.sum(y * y)


def inplace_add_loop(x):
    y = snp.zeros_like(x)
    for i in range(3):
        y[i] += x[i] * (i + 1.0)
    return snp.sum(y ** 2)


def _inplace_add_loop_ref(x):
    y = snp.zeros_like(x)
    for i in range(3):
        y = y.at[i].add(x[i] * (i + 1.0))
    return snp.sum(y ** 2)


def append_loop(x):
    acc = []
    for i in range(3):
        acc.append(snp.sin(x * (i + 1)))
    return snp.sum(snp.stack(acc))


def append_loop_python_sum(x):
    terms = []
    for i in range(4):
        terms.append(snp.sum(x ** i))
    return sum(terms)


def _power(x, n):
    if n == 0:
        return 1.0
    return x * _power(x, n - 1)


def recursion_static(x):
    return _power(x, 4)


def _tree_sum(x, depth):
    if depth == 0:
        return snp.sin(x)
    return _tree_sum(x, depth - 1) + _tree_sum(0.5 * x, depth - 1)


def recursion_branching(x):
    return snp.sum(_tree_sum(x, DEPTH))


def try_except(x):
    try:
        y = snp.log(x)
    except ValueError:
        y = x
    return snp.sum(y * x)


def try_finally(x):
    try:
        y = snp.sqrt(x)
    finally:
        note = "done"
    return snp.sum(y) + len(note)


def with_block(x):
    with contextlib.suppress(KeyError):
        y = snp.tanh(x) * 2.0
    return snp.sum(y)


def with_as(x):
    with contextlib.nullcontext(2.0) as scale, contextlib.suppress(KeyError):
        y = snp.tanh(x) * scale
    return snp.sum(y)


def import_inside(x):
    import secant.numpy as jnp
    from math import pi
    return jnp.sum(jnp.sin(x) * pi)


def partial_of_closure(x):
    w = snp.cos(x)

    def layer(a, scale):
        return snp.tanh(a * w) * scale
    g = functools.partial(layer, scale=2.0)
    return snp.sum(g(x) + g(x * 0.5))


def print_inside(x):
    y = snp.sin(x)
    print("y:", y)
    return snp.sum(y * x)


def assert_shape(x):
    assert x.shape == (3,), "expected a 3-vector"
    return snp.sum(x ** 3)


def while_static(x):
    i = 0
    while i < 3:
        x = snp.sin(x) + 0.5 * x
        i += 1
    return snp.sum(x)


def for_over_rows(x):
    acc = 0.0
    for row in x:
        acc = acc + snp.sum(row ** 2) * snp.max(row)
    return acc


def tuple_swap_loop(x):
    a, b = x, snp.ones_like(x)
    for _ in range(4):
        a, b = b, a + 0.5 * b
    return snp.sum(a * b)


def augmented_assign(x):
    acc = snp.sum(x)
    acc *= 2.0
    acc += snp.sum(x ** 2)
    acc -= snp.sum(snp.sin(x))
    acc /= 3.0
    return acc


def multiple_returns_values(x):
    def stats(v):
        return snp.mean(v), snp.std(v)
    m, s = stats(x)
    return m * s


CASES = [
    Case("early_return_static", early_return_static, (vec(70, 3),)),
    Case("early_return_traced", early_return_traced, (pos(71, 3),)),
    Case("return_in_both_branches", return_in_both_branches, (0.8,)),
    Case("if_without_else", if_without_else, (0.8,)),
    Case("break_static", break_static, (vec(72, 3),)),
    Case("break_traced", break_traced, (pos(73, 3),)),
    Case("continue_static", continue_static, (vec(74, 3),)),
    Case("nested_def", nested_def, (vec(75, 3),)),
    Case("nested_def_closure", nested_def_closure, (vec(76, 3),)),
    Case("nested_lambda", nested_lambda, (vec(77, 3),)),
    Case("two_lambdas_one_line", two_lambdas_one_line, (vec(78, 3),)),
    Case("ifexp_static", ifexp_static, (vec(79, 3),)),
    Case("ifexp_traced", ifexp_traced, (0.9,)),
    Case("list_comprehension", list_comprehension, (vec(80, 3),)),
    Case("dict_comprehension", dict_comprehension, (vec(81, 3),)),
    Case("generator_expression", generator_expression, (vec(82, 3),)),
    Case("dict_methods", dict_methods, (vec(83, 3),)),
    Case("builtins_mix", builtins_mix, (vec(84, 3),)),
    Case("zip_enumerate", zip_enumerate, (vec(85, 3),)),
    Case("inplace_set", inplace_set, (vec(86, 3),), ref=_inplace_set_ref),
    Case("inplace_add_loop", inplace_add_loop, (vec(87, 3),), ref=_inplace_add_loop_ref),
    Case("append_loop", append_loop, (vec(88, 3),)),
    Case("append_loop_python_sum", append_loop_python_sum, (vec(89, 3),)),
    Case("recursion_static", recursion_static, (0.7,)),
    Case("recursion_branching", recursion_branching, (vec(90, 3),)),
    Case("try_except", try_except, (pos(91, 3),)),
    Case("try_finally", try_finally, (pos(92, 3),)),
    Case("with_block", with_block, (vec(93, 3),)),
    Case("with_as", with_as, (vec(93, 3),)),
    Case("import_inside", import_inside, (vec(93, 3),)),
    Case("partial_of_closure", partial_of_closure, (vec(93, 3),)),
    Case("print_inside", print_inside, (vec(94, 3),)),
    Case("assert_shape", assert_shape, (vec(95, 3),)),
    Case("while_static", while_static, (vec(96, 3),)),
    Case("for_over_rows", for_over_rows, (vec(97, 2, 3),)),
    Case("tuple_swap_loop", tuple_swap_loop, (vec(98, 3),)),
    Case("augmented_assign", augmented_assign, (vec(99, 3),)),
    Case("multiple_returns_values", multiple_returns_values, (vec(100, 4),)),
]
