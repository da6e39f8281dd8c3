"""Issue 15, refusals the third battery (tests/test_explore15j_programs.py) found in ordinary
Python, each kind fixed at its cause in the transformer and checked in two shapes: gradients
against float64 central differences, vmap against a Python loop, jit against eager."""
import functools
import operator

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from others15_check import fd_grad


def _check(f, x):
    """grad vs central differences, jvp vs the gradient, hessian vs differences of the gradient,
    vmap vs a loop, jit vs eager."""
    x = np.asarray(x, dtype=np.float64)
    g = secant.grad(f)(x)
    np.testing.assert_allclose(g, fd_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    v = np.linspace(0.5, -0.7, x.size).reshape(x.shape)
    _, t = secant.jvp(f, (x,), (v,))
    np.testing.assert_allclose(t, np.sum(g * v), rtol=1e-10, atol=1e-12)
    fd = np.stack([fd_grad(lambda z, i=i: np.asarray(secant.grad(f)(z))[i], (x,))
                   for i in range(x.size)])
    np.testing.assert_allclose(secant.hessian(f)(x), fd, rtol=1e-5, atol=1e-7)
    xs = np.stack([x, 0.5 * x - 0.1, -x])
    np.testing.assert_allclose(secant.vmap(f)(xs), [f(r) for r in xs], rtol=1e-12)
    np.testing.assert_allclose(secant.jit(f)(x), f(x), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x), g, rtol=1e-10)


# --- 1. list.pop() inside an expression, on a local list of differentiated values --------------
_OPS = {"*": lambda a, b: a * b, "+": lambda a, b: a + b, "sin": jnp.sin}


def _rpn(x):
    stack = []
    for tok in ["x0", "x1", "*", "sin", "x2", "+", "x0", "*"]:
        if tok.startswith("x"):
            stack.append(x[int(tok[1:])])
        elif tok == "sin":
            stack.append(_OPS[tok](stack.pop()))
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(_OPS[tok](a, b))
    (result,) = stack
    return result


def _pop_front_and_middle(x):
    xs = [x[0] * x[1], jnp.sin(x[1]), x[2] ** 2, x[0] - x[2]]
    i = 1
    total = xs.pop(0) * 2.0 + xs.pop(i) * xs.pop()      # (items 0, then 2, then 3 of the four)
    return total * xs.pop() + len(xs)                   # (item 1 of the four; none left)


def test_list_pop_in_an_expression_is_a_stack(x64):
    """cls_rpn_calculator: `stack.append(op(stack.pop()))` and `b, a = stack.pop(),
    stack.pop()` on a local list of differentiated values were refused (a container's .pop()):
    a pop inside a larger expression is now hoisted before its statement as the dict's was,
    `v = l.pop([i])`, which reads `v = l[i]` and rebinds l to the list less that item."""
    x = np.array([0.3, -0.4, 0.7])
    assert _rpn(x) == (np.sin(x[0] * x[1]) + x[2]) * x[0]
    _check(_rpn, x)
    assert np.isclose(_pop_front_and_middle(x), (2 * x[0] * x[1] + x[2] ** 2 * (x[0] - x[2]))
                      * np.sin(x[1]))
    _check(_pop_front_and_middle, x)


def _pops_after_a_read(x):
    xs = [x[0], x[1] * 2.0]
    return xs[-1] + xs.pop()        # xs[-1] is read first: the pop cannot move before it


def test_a_pop_after_a_read_of_its_list_is_not_moved(x64):
    """A pop the expression evaluates after another read of the list stays where it is (the
    refusal, not a reordered value): `xs[-1] + xs.pop()` reads xs[-1] before the pop."""
    x = np.array([0.3, -0.4])
    assert _pops_after_a_read(x) == -1.6
    for transform in (secant.grad, secant.vmap):
        with pytest.raises(secant.SecantError, match=r"\.pop\(\)"):
            transform(_pops_after_a_read)(x if transform is secant.grad else np.stack([x, x]))


# --- 3. operator getters held by local names, one holding a differentiated value ----------------
def _getters(p):
    get_w, get_b = operator.itemgetter("w"), operator.itemgetter("b")
    dot = operator.methodcaller("dot", p["w"] * 2.0)
    return jnp.sum(get_w(p) * jnp.sum(get_b(p))) + dot(jnp.sin(p["w"]))


def _getters_by_key(x):
    k = 1
    second = operator.itemgetter(k, 0)         # a key only known where it runs (a local)
    inner = operator.methodcaller("dot", x[1:] ** 2)
    total = operator.methodcaller("sum", axis=0)
    a, b = second(x)
    return inner(x[:2] * a) * b + total(operator.attrgetter("real")(x) ** 3)


def test_operator_getters_held_by_local_names(x64):
    """cls_operator_getters: `dot = operator.methodcaller("dot", w)` holding a differentiated
    value, and `get_w, get_b = itemgetter("w"), itemgetter("b")` (names bound to getters),
    were refused (no rule for operator.itemgetter / methodcaller called at run time); a getter
    bound to a local name is now the def it stands for: `def dot(obj): return obj.dot(dot_arg)`,
    its non-literal arguments bound first (read once, where it is made)."""
    w, b = np.array([0.3, -0.4, 0.7]), np.array([0.2, 0.5])

    def f(flat):
        return _getters({"w": flat[:3], "b": flat[3:]})
    x = np.concatenate([w, b])
    assert np.isclose(f(x), np.sum(w) * np.sum(b) + 2.0 * np.dot(w, np.sin(w)))
    _check(f, x)
    g = secant.grad(_getters)({"w": w, "b": b})
    np.testing.assert_allclose(g["w"], np.sum(b) + 2.0 * (np.sin(w) + w * np.cos(w)))
    np.testing.assert_allclose(g["b"], np.sum(w) * np.ones(2))
    y = np.array([0.3, -0.4, 0.7])
    assert np.isclose(_getters_by_key(y), np.dot(y[1:] ** 2, y[:2] * y[1]) * y[0]
                      + np.sum(y ** 3))
    _check(_getters_by_key, y)


# --- 2. functools.reduce composing lambdas that close over differentiated values ----------------
def _compose(*fns):
    return functools.reduce(lambda f, g: lambda x: g(f(x)), fns)


def _composed_layers(w):
    layers = [jnp.sin, lambda h: h * w, jnp.tanh, lambda h: h + w ** 2]
    return jnp.sum(_compose(*layers)(w))


def _scaled_chain(*ws):
    return functools.reduce(lambda acc, v: lambda x: acc(x) * v, ws, lambda x: x)


def _scaled(w):
    scale = lambda h: h * w     # noqa: E731
    return jnp.sum(_scaled_chain(w, jnp.sin(w))(w) + functools.reduce(
        lambda f, g: lambda x: g(f(x)), [scale, jnp.cos])(w))


def test_reduce_composing_closures(x64):
    """cls_star_args: `functools.reduce(lambda f, g: lambda x: g(f(x)), fns)` in a helper over
    lambdas closing over w: its derivative's replay of the helper made Python closures where
    its reverse pass read Closure objects, and each evaluation of the lambda made a class of
    its own (tree_map structure mismatch); a lambda returning a lambda passed to a call now
    runs as its runnable form in the helper's (the same Closure class for one def text)."""
    x = np.array([0.3, -0.4, 0.7, 0.1])
    assert np.isclose(_composed_layers(x), np.sum(np.tanh(np.sin(x) * x) + x ** 2))
    _check(_composed_layers, x)
    assert np.isclose(_scaled(x), np.sum(x * x * np.sin(x) + np.cos(x * x)))
    _check(_scaled, x)
