"""Classroom code and the Python a numpy user writes, run under secant (issue 15, explore15j, the
third battery): forward-mode AD by dual numbers with operator overloading, reverse-mode AD by a
tape of closures, the whole module written against `np` (secant.numpy imported as np) with
getattr(np, name), **kwargs and *args threaded through, stacked decorators of the user's own,
methods, class and static methods, properties, functools.reduce, itertools, the operator
module, map/filter, a small expression evaluator, generators and nonlocal accumulators."""
import functools
import itertools
import math
import operator

import secant as jax
import secant.numpy as np

from corpus import Case, vec

X = vec(990, 5, 3)


# --- dual numbers --------------------------------------------------------------------------------------
class Dual:
    def __init__(self, val, eps=0.0):
        self.val = val
        self.eps = eps

    def __add__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.val + other.val, self.eps + other.eps)

    __radd__ = __add__

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.val * other.val, self.val * other.eps + self.eps * other.val)

    __rmul__ = __mul__

    def __sub__(self, other):
        return self + (-1.0) * other

    def __truediv__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.val / other.val,
                    (self.eps * other.val - self.val * other.eps) / other.val ** 2)

    def __pow__(self, n):
        return Dual(self.val ** n, n * self.val ** (n - 1) * self.eps)


def d_sin(d):
    return Dual(np.sin(d.val), np.cos(d.val) * d.eps)


def d_exp(d):
    return Dual(np.exp(d.val), np.exp(d.val) * d.eps)


def dual_derivative(f, x):
    return f(Dual(x, 1.0)).eps


def _poly(d):
    return 3.0 * d ** 3 - d * d_sin(d) + d_exp(0.5 * d) / (1.0 + d * d)


def cls_dual_numbers(x):
    """the value plus its derivative by dual numbers: its grad is f' + f''"""
    return _poly(Dual(x)).val + dual_derivative(_poly, x)


def cls_dual_vector(w):
    """dual numbers over arrays: the directional derivative along ones"""
    d = Dual(w, np.ones_like(w))
    out = d_sin(d) * d + d ** 2
    return np.sum(out.val) + np.sum(out.eps ** 2)


# --- a tape of closures ------------------------------------------------------------------------------
class Tape:
    def __init__(self):
        self.entries = []


class Var:
    def __init__(self, tape, value, parents=()):
        self.tape = tape
        self.value = value
        self.parents = parents or ()
        self.index = len(tape.entries)
        tape.entries.append(self)

    def __mul__(self, other):
        return Var(self.tape, self.value * other.value,
                   ((self, other.value), (other, self.value)))

    def __add__(self, other):
        return Var(self.tape, self.value + other.value, ((self, 1.0), (other, 1.0)))

    def sin(self):
        return Var(self.tape, np.sin(self.value), ((self, np.cos(self.value)),))

    def backward(self):
        grads = {self.index: 1.0}
        for node in reversed(self.tape.entries):
            g = grads.get(node.index)
            if g is None:
                continue
            for parent, local in node.parents:
                grads[parent.index] = grads.get(parent.index, 0.0) + g * local
        return grads


def cls_tape_ad(p):
    """reverse mode by a tape: f(a, b) = sin(a b) + a a; its gradient (by the tape) dotted"""
    tape = Tape()
    a, b = Var(tape, p[0]), Var(tape, p[1])
    out = (a * b).sin() + a * a
    grads = out.backward()
    return out.value + 0.5 * grads[a.index] + 0.25 * grads[b.index] ** 2


# --- numpy-style code --------------------------------------------------------------------------------
def cls_getattr_np(x):
    total = 0.0
    for name, weight in [("sin", 1.0), ("tanh", 0.5), ("arctan", 2.0), ("log1p", 0.1)]:
        fn = getattr(np, name)
        total = total + weight * np.sum(fn(x ** 2))
    return total


def _layer(x, w, *, activation="tanh", **kwargs):
    h = x @ w
    if kwargs.get("normalize", False):
        h = h / np.sqrt(np.sum(h ** 2) + 1.0)
    return getattr(np, activation)(h) * kwargs.get("gain", 1.0)


def cls_kwargs_threaded(w, x):
    options = dict(activation="sin", normalize=True)
    h = _layer(x, w, **options, gain=2.0)
    return np.sum(_layer(h, w.T, activation="tanh") ** 2)


def _compose(*fns):
    return functools.reduce(lambda f, g: lambda x: g(f(x)), fns)


def cls_star_args(w):
    layers = [np.sin, lambda h: h * w, np.tanh, lambda h: h + w ** 2]
    return np.sum(_compose(*layers)(w))


def scaled(factor):
    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return factor * f(*args, **kwargs)
        return wrapper
    return deco


def with_l2(lam):
    def deco(f):
        @functools.wraps(f)
        def wrapper(w, *rest):
            return f(w, *rest) + lam * np.sum(w ** 2)
        return wrapper
    return deco


@scaled(2.0)
@with_l2(0.1)
@jax.jit
def cls_stacked_decorators(w, x):
    return np.mean(np.cos(x @ w))


class Polynomial:
    def __init__(self, coeffs):
        self._coeffs = coeffs

    @classmethod
    def from_roots(cls, roots):
        coeffs = np.ones(1)
        for r in roots:
            coeffs = np.convolve(coeffs, np.stack([np.ones(()), -r]))
        return cls(coeffs)

    @property
    def degree(self):
        return self._coeffs.shape[0] - 1

    @staticmethod
    def horner(coeffs, x):
        return functools.reduce(lambda acc, c: acc * x + c, coeffs, 0.0)

    def __call__(self, x):
        return self.horner([self._coeffs[i] for i in range(self.degree + 1)], x)

    def derivative(self):
        n = self.degree
        return Polynomial(self._coeffs[:-1] * np.arange(n, 0, -1))


def cls_polynomial_class(roots):
    p = Polynomial.from_roots(roots)
    return p(0.3) ** 2 + p.derivative()(-0.2)


def cls_reduce_operator(w):
    terms = [np.sum(w ** k) / math.factorial(k) for k in range(1, 5)]
    return functools.reduce(operator.add, terms) * functools.reduce(operator.mul, [w[0], w[1], 2.0])


def cls_itertools_pairs(x):
    """pair energies over itertools.combinations, a running total by itertools.accumulate"""
    n = x.shape[0]
    energies = [np.exp(-np.sum((x[i] - x[j]) ** 2)) for i, j in itertools.combinations(range(n), 2)]
    running = list(itertools.accumulate(energies))
    cross = sum(x[i, 0] * x[j, 1] for i, j in itertools.product(range(2), range(1, 3)))
    return running[-1] + 0.1 * sum(running) + cross


def cls_itertools_chain(w):
    groups = [[w[0], w[1]], [w[2] ** 2], (np.sin(w[0]),)]
    flat = list(itertools.chain(*groups)) + list(itertools.chain.from_iterable([[w[1] * w[2]]]))
    return sum(v * c for v, c in zip(flat, itertools.cycle([1.0, -0.5])))


def cls_operator_getters(params):
    get_w, get_b = operator.itemgetter("w"), operator.itemgetter("b")
    pair = operator.itemgetter("w", "b")(params)
    dot = operator.methodcaller("dot", params["w"])
    return (operator.mul(np.sum(get_w(params)), np.sum(get_b(params)))
            + np.sum(operator.pow(pair[1], 2)) + dot(params["w"]))


def cls_map_filter(w):
    powers = list(map(lambda k: np.sum(w ** k), filter(lambda k: k % 2 == 1, range(1, 7))))
    return sum(powers) + max(map(lambda t: t, [0.0, 1.0]))


_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "sin": np.sin}


def cls_rpn_calculator(x):
    """a tiny stack calculator over tokens: x0 x1 * sin x2 + 3 *"""
    program = ["x0", "x1", "*", "sin", "x2", "+", "3", "*"]
    stack = []
    for tok in program:
        if tok.startswith("x"):
            stack.append(x[int(tok[1:])])
        elif tok == "sin":
            stack.append(_OPS[tok](stack.pop()))
        elif tok in _OPS:
            b, a = stack.pop(), stack.pop()
            stack.append(_OPS[tok](a, b))
        else:
            stack.append(float(tok))
    (result,) = stack
    return result


def _eval_tree(node, x):
    if isinstance(node, str):
        return x[int(node[1:])]
    if isinstance(node, (int, float)):
        return node
    op, *children = node
    vals = [_eval_tree(c, x) for c in children]
    return functools.reduce(_OPS[op], vals) if op != "sin" else np.sin(vals[0])


def cls_expression_tree(x):
    tree = ("+", ("*", "x0", ("sin", "x1")), ("*", 2.0, "x2", "x2"), ("-", "x1", 0.5))
    return _eval_tree(tree, x)


def _layers(x, ws):
    for w in ws:
        x = np.tanh(x @ w)
        yield x


def cls_generator_layers(w, x):
    outs = list(_layers(x, [w, w.T, w]))
    return sum(np.mean(o ** 2) for o in outs)


def cls_nonlocal_total(w):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v

    for k, wk in enumerate(w):
        add((k + 1) * np.sin(wk))
    return total


def cls_sorted_reversed(w):
    names = sorted({"beta": 2, "alpha": 1, "gamma": 3}, key=len)
    acc = 0.0
    for i, name in reversed(list(enumerate(names))):
        acc = acc * 0.5 + w[i] * len(name)
    return acc ** 2 + np.sum(np.sort(w) * np.arange(w.shape[0]))


def cls_math_constants(x):
    return np.sum(np.exp(-x ** 2 / (2 * math.pi)) / math.sqrt(2 * math.pi)) + math.e * x[0]


CASES = [
    Case("cls_dual_numbers", cls_dual_numbers, (0.7,)),
    Case("cls_dual_vector", cls_dual_vector, (vec(991, 4),)),
    Case("cls_tape_ad", cls_tape_ad, (vec(992, 2),)),
    Case("cls_getattr_np", cls_getattr_np, (vec(993, 4),)),
    Case("cls_kwargs_threaded", cls_kwargs_threaded, (vec(994, 3, 3), X)),
    Case("cls_star_args", cls_star_args, (vec(995, 4),)),
    Case("cls_stacked_decorators", cls_stacked_decorators, (vec(996, 3), X)),
    Case("cls_polynomial_class", cls_polynomial_class, (vec(997, 3),)),
    Case("cls_reduce_operator", cls_reduce_operator, (vec(998, 3),)),
    Case("cls_itertools_pairs", cls_itertools_pairs, (vec(999, 4, 3),)),
    Case("cls_itertools_chain", cls_itertools_chain, (vec(1000, 3),)),
    Case("cls_operator_getters", cls_operator_getters, ({"w": vec(1001, 3), "b": vec(1002, 2)},)),
    Case("cls_map_filter", cls_map_filter, (vec(1003, 3),)),
    Case("cls_rpn_calculator", cls_rpn_calculator, (vec(1004, 3),)),
    Case("cls_expression_tree", cls_expression_tree, (vec(1005, 3),)),
    Case("cls_generator_layers", cls_generator_layers, (vec(1006, 3, 3), X)),
    Case("cls_nonlocal_total", cls_nonlocal_total, (vec(1007, 4),)),
    Case("cls_sorted_reversed", cls_sorted_reversed, (vec(1008, 3),)),
    Case("cls_math_constants", cls_math_constants, (vec(1009, 3),)),
]
