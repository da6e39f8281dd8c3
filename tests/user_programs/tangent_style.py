"""Programs after Tangent's test functions (issue 15, explore15i): loops with an early return,
break and continue, nested functions and recursion, augmented assignment, tuple unpacking and
swaps, `if`/`elif` and `while` on array values (functionalised by secant, so they run under
jit and vmap too), list building, keyword and star arguments, globals."""
import secant.numpy as jnp

from corpus import Case, vec

X = vec(730, 4, 3)
W3 = vec(731, 3)
SCALE = jnp.asarray([1.0, 0.5, 0.25])


def tg_early_return_loop(w, x):
    h = x @ w
    for i in range(10):
        h = jnp.sin(h) + w[0]
        if i == 2:
            return jnp.sum(h ** 2)
    return jnp.sum(h)


def tg_break_continue(w, x):
    total = 0.0
    for i in range(6):
        if i % 2 == 1:
            continue
        if i > 3:
            break
        total = total + jnp.sum(jnp.tanh(x * w * (i + 1)))
    return total


def tg_nested_function(w, x):
    a = w * 2.0

    def inner(v):
        def innermost(u):
            return jnp.sin(u * a)
        return innermost(v) + a

    return jnp.sum(inner(x) ** 2)


def tg_recursion(w, x):
    def power(v, n):
        if n == 0:
            return jnp.ones_like(v)
        return v * power(v, n - 1)
    return jnp.sum(power(x @ w, 3))


def tg_augassign(w, x):
    y = x @ w
    y *= 2.0
    y += jnp.sin(y)
    y -= w[1]
    y /= 3.0
    y **= 2
    z = w
    z = z * 1.0
    z @= jnp.ones((3, 3))
    return jnp.sum(y) + jnp.sum(z)


def tg_tuple_unpack(w, x):
    a, b, c = w
    (p, q), r = (a * b, a + b), a - c
    p, q = q, p
    first, *rest = x
    return p * q + r ** 2 + jnp.sum(first * w) + sum(jnp.sum(row) * c for row in rest)


def tg_if_array(w, x):
    y = x @ w
    if jnp.sum(y) > 0:
        z = y * 2.0
    else:
        z = -jnp.sin(y)
    return jnp.sum(z ** 2)


def tg_if_elif_scalar(x):
    if x > 1.0:
        y = x ** 3
    elif x > 0.0:
        y = jnp.sin(x) * x
    else:
        y = jnp.exp(x)
    return y * x


def tg_while_array(w, x):
    y = jnp.tanh(x @ w)
    n = 0
    while jnp.sum(y ** 2) < 5.0:
        y = y * 1.3
        n += 1
    return jnp.sum(y) + 0.0 * n


def tg_while_scalar(x):
    y = x
    while y < 10.0:
        y = y * 1.7 + 0.5
    return y * jnp.sin(x)


def tg_list_build(w, x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(jnp.tanh(x[i] * w[i % 3]))
    stacked = jnp.stack(rows)
    return jnp.sum(stacked ** 2) + sum(r[0] for r in rows)


def tg_nested_loops(w, x):
    acc = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            acc = acc + x[i, j] * w[j] ** (i + 1)
    return acc


def tg_cond_expression(w, x, flip):
    y = x @ w if flip else x @ (-w)
    return jnp.sum(jnp.exp(0.3 * y))


def _helper(a, b=2.0, *, scale=1.0, **extra):
    out = scale * a ** b
    for k in sorted(extra):
        out = out + extra[k] * a
    return out


def tg_keyword_args(w, x):
    h = x @ w
    return jnp.sum(_helper(h) + _helper(h, 3, scale=0.5, alpha=w[0], beta=2.0))


def _star(*vs):
    return sum(v ** 2 for v in vs)


def tg_star_args(w, x):
    cols = [x[:, j] * w[j] for j in range(3)]
    return jnp.sum(_star(*cols)) + jnp.sum(_star(*w))


def tg_global_constant(w, x):
    return jnp.sum(jnp.cos(x * SCALE) @ w) + jnp.sum(SCALE * w ** 2)


def tg_index_update(w, x):
    y = jnp.zeros(5)
    y = y.at[0].set(w[0])
    y = y.at[1:4].set(w * 2.0)
    y = y.at[-1].add(jnp.sum(x))
    y = y.at[2].multiply(w[1])
    return jnp.sum(y ** 2) + jnp.sum(x[::2, ::-1] @ w[::-1])


def tg_scalar_chain(x):
    a = x ** 2 / (1.0 + x)
    b = a ** 0.5 * x
    return b - 1.0 / b + x ** -2


def tg_lambda_map(w, x):
    sq = lambda v: v ** 2                       # noqa: E731
    scale = lambda v, s=w[0]: v * s             # noqa: E731
    return sum(map(jnp.sum, map(sq, [x @ w, scale(x[0])])))


def tg_dict_comprehension(w, x):
    feats = {f"c{j}": x[:, j] * w[j] for j in range(3)}
    return sum(jnp.sum(jnp.sin(v)) for k, v in feats.items() if k != "c1") \
        + jnp.sum(feats["c1"] ** 2)


CASES = [
    Case("tg_early_return_loop", tg_early_return_loop, (W3, X)),
    Case("tg_break_continue", tg_break_continue, (W3, X)),
    Case("tg_nested_function", tg_nested_function, (W3, X)),
    Case("tg_recursion", tg_recursion, (W3, X)),
    Case("tg_augassign", tg_augassign, (W3, X)),
    Case("tg_tuple_unpack", tg_tuple_unpack, (W3, X)),
    Case("tg_if_array", tg_if_array, (W3, X)),
    Case("tg_if_elif_scalar", tg_if_elif_scalar, (0.6,)),
    Case("tg_while_array", tg_while_array, (W3, X)),
    Case("tg_while_scalar", tg_while_scalar, (0.9,)),
    Case("tg_list_build", tg_list_build, (W3, X)),
    Case("tg_nested_loops", tg_nested_loops, (W3, X)),
    Case("tg_cond_expression", tg_cond_expression, (W3, X, True)),
    Case("tg_keyword_args", tg_keyword_args, (W3, X)),
    Case("tg_star_args", tg_star_args, (W3, X)),
    Case("tg_global_constant", tg_global_constant, (W3, X)),
    Case("tg_index_update", tg_index_update, (W3, X)),
    Case("tg_scalar_chain", tg_scalar_chain, (0.7,)),
    Case("tg_lambda_map", tg_lambda_map, (W3, X)),
    Case("tg_dict_comprehension", tg_dict_comprehension, (W3, X)),
]
