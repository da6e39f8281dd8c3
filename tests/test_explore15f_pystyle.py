"""Issue 15, Python as people write it inside functions given to grad / vmap / jit and their
compositions: match statements (class, mapping and star patterns, guards reading what a case
captured), enumerate(d.items(), start=1) in a comprehension, a hand-written recursive tree map
over nested dicts and lists, an early return from nested loops under jit(grad), for/while ...
else with break, a user descriptor, and the idioms around them (generators, contextmanager
helpers, mixins and super(), __getattr__ delegation, enums, dataclass default factories, typing
annotations, star-unpacking, lambda default capture, functools helpers).

Each program is checked as its users would: grad against float64 central differences, the
hessian (jacfwd of grad and secant.hessian) against differences of grad, jit against eager,
vmap and vmap(grad) against a Python loop, jit(grad) against grad."""
import abc
import contextlib
import dataclasses
import enum
import functools
import operator
from typing import Annotated, Generic, Protocol, TypeVar

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import SecantError

EPS = 1e-6
X = np.array([0.3, -0.7, 1.1])
XS = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4], [1.3, -0.1, 0.6], [-0.2, 0.8, 0.9]])


def fd(f, x):
    """Central differences of f (a scalar or a vector) at x: shape out + in."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = EPS
        hi = np.asarray(f(jnp.asarray(x + e)), np.float64)
        lo = np.asarray(f(jnp.asarray(x - e)), np.float64)
        cols.append((hi - lo) / (2 * EPS))
    return np.stack(cols, axis=-1)


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=tol, atol=tol)


def check_all(f, jit_f=True):
    x, xs = jnp.asarray(X), jnp.asarray(XS)
    g = secant.grad(f)
    close(g(x), fd(f, X))
    close(secant.jacfwd(g)(x), fd(g, X), 1e-4)
    close(secant.hessian(f)(x), fd(g, X), 1e-4)
    if jit_f:
        close(secant.jit(f)(x), f(x))
    close(secant.jit(g)(x), g(x))
    close(secant.vmap(f)(xs), np.stack([np.asarray(f(r)) for r in xs]))
    close(secant.jit(secant.vmap(g))(xs), np.stack([np.asarray(g(r)) for r in xs]))


# --- match ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Cfg:
    kind: str
    power: int = 2


@dataclasses.dataclass
class Pair:
    __match_args__ = ("a", "b")
    a: float
    b: float


def by_config(x, cfg):
    match cfg:
        case Cfg(kind="poly", power=p) if p > 2:
            return jnp.sum(x ** p)
        case Cfg(kind="poly"):
            return jnp.sum(x * x)
        case Cfg(kind="exp"):
            return jnp.sum(jnp.exp(x))
    return jnp.sum(x)


def match_class(x):
    return by_config(x, Cfg("poly", 3)) + by_config(x, Cfg("poly")) + by_config(x, Cfg("exp"))


def match_positional_star_mapping(x):
    out = 0.0
    for spec in (Pair(2.0, 0.5), ("scale", 3.0, 1.0, 2.0), {"shift": 0.5, "extra": 1}):
        match spec:
            case Pair(a, b=0.5):
                out = out + a * jnp.sum(jnp.sin(x))
            case ("scale", first, *rest) if len(rest) == 2:
                out = out + first * jnp.sum(x ** 2) + sum(rest)
            case {"shift": s, **others}:
                out = out + jnp.sum(jnp.cos(x + s)) * len(others)
    return out


def test_match_class_pattern_and_guard_on_capture(x64):
    # was: "secant cannot transform this match pattern (MatchClass) yet" (and a guard reading
    # a captured name was refused)
    check_all(match_class)
    want = np.sum(X ** 3) + np.sum(X ** 2) + np.sum(np.exp(X))
    close(match_class(jnp.asarray(X)), want)


def test_match_positional_star_and_mapping_patterns(x64):
    check_all(match_positional_star_mapping)
    want = 2 * np.sum(np.sin(X)) + 3 * np.sum(X ** 2) + 3.0 + np.sum(np.cos(X + 0.5))
    close(secant.jit(match_positional_star_mapping)(jnp.asarray(X)), want)


# --- enumerate(d.items(), start=1) in a comprehension -------------------------------------------
def weighted_by_position(x):
    names = ["a", "b", "c"]
    d = {n: v for n, v in zip(names, [x[0], x[1], x[2]])}
    s = {k: v * i for i, (k, v) in enumerate(d.items(), start=1)}
    return sum(v ** 2 for v in s.values())


def test_enumerate_items_with_start_in_comprehension(x64):
    # was silently wrong: the transforms counted from 0 (grad [0, -1.4, 8.8] for
    # [0.6, -5.6, 19.8])
    check_all(weighted_by_position)
    close(secant.grad(weighted_by_position)(jnp.asarray(X)), 2 * X * np.array([1, 4, 9]))


# --- a hand-written recursive tree map over nested dicts and lists ------------------------------
def tree_apply(fn, t):
    if isinstance(t, dict):
        return {k: tree_apply(fn, v) for k, v in t.items()}
    if isinstance(t, (list, tuple)):
        return [tree_apply(fn, v) for v in t]
    return fn(t)


def tree_sum(t):
    if isinstance(t, dict):
        return sum(tree_sum(v) for v in t.values())
    if isinstance(t, (list, tuple)):
        return sum(tree_sum(v) for v in t)
    return jnp.sum(t)


def tree_loss(x):
    params = {"a": x, "b": [x * 2.0, {"c": jnp.sin(x)}]}
    return tree_sum(tree_apply(lambda v: v * v, params))


def test_recursive_tree_map_over_dicts_and_lists(x64):
    # was: AttributeError: 'list' object has no attribute 'keys' (t read as a dict in its
    # list branch too, that branch's gradient dropped)
    check_all(tree_loss)
    close(secant.grad(tree_loss)(jnp.asarray(X)),
          2 * X + 8 * X + 2 * np.sin(X) * np.cos(X))


def sum_over_keys(t):
    names = list(t.keys())
    acc = 0.0
    for k in t:
        acc = acc + jnp.sin(t[k]) * len(names)
    return acc


def keyed_helper(x):
    return sum_over_keys({"a": x[0], "b": x[1] * x[2]})


def test_helper_looping_over_a_dict_parameter_second_order(x64):
    # was: TypeError: unhashable type: 'slice' from jacfwd(grad(f)) (vmap of the helper's jvp
    # read its dict tangent t_dot[k] as an array's row)
    check_all(keyed_helper)


# --- early return from nested loops; for/while ... else with break -------------------------------
def early_return(x):
    acc = 0.0
    for i in range(3):
        for j in range(3):
            acc = acc + x[i] * x[j]
            if i == 1 and j == 1:
                return acc + jnp.sin(acc)
    return acc


def test_early_return_from_nested_loops_under_jit_of_grad(x64):
    # was: TracerBoolConversionError from jit(grad(f)): the staged loops made i, j traced
    # under `i == 1 and j == 1`
    check_all(early_return)


def for_else(x):
    y = x
    for i in range(3):
        y = jnp.sin(y) + x
        if i > 10:
            break
    else:
        y = y * 2.0
    k = 0
    while k < 5:
        k += 1
        if k == 3:
            break
    else:
        y = y * 100.0
    return jnp.sum(y ** 2) * k


def for_else_search(x):
    y = x
    for _ in range(6):
        y = jnp.sin(y) * 1.5 + 0.1
        if jnp.sum(y * y) > 2.0:
            break
    else:
        y = -y
    return jnp.sum(y ** 2)


def test_for_and_while_else_with_break(x64):
    # was: "for/while ... else with break cannot be transformed yet"
    check_all(for_else)
    check_all(for_else_search, jit_f=False)     # (jit: a break on a traced value, as JAX)
    with pytest.raises(SecantError, match="traced"):
        secant.jit(for_else_search)(jnp.asarray(X))


# --- a user descriptor: refused, never read as a plain field -------------------------------------
class Positive:
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        return getattr(obj, self.name)

    def __set__(self, obj, value):
        setattr(obj, self.name, jnp.exp(value))


class Scaled:
    sigma = Positive()

    def __init__(self, raw):
        self.sigma = raw


def with_descriptor(x):
    return jnp.sum(Scaled(x).sigma * x)


def test_descriptor_is_refused_not_read_as_a_field(x64):
    # was silently wrong: grad [0.6, -1.4, 2.2] for exp(x) * (1 + x), vmap likewise
    x = jnp.asarray(X)
    close(secant.jit(with_descriptor)(x), np.sum(np.exp(X) * X))
    for transform in (secant.grad, secant.vmap):
        with pytest.raises(SecantError, match="Scaled"):
            transform(with_descriptor)(x if transform is secant.grad else jnp.asarray(XS))


# --- attributes set on an object the function builds; names formatted from a loop index ---------
class Temperature:
    def __init__(self):
        self._t = 1.0

    @property
    def t(self):
        return self._t

    @t.setter
    def t(self, v):
        self._t = v * 2.0


class Holder:
    def __init__(self):
        self.t = 1.0


def set_on_built_object(x):
    m = Temperature()
    m.t = 3.0                       # through the setter: t is 6
    h = Holder()
    h.t = 2.0
    return jnp.sum(x / m.t) ** 2 + jnp.sum(x * h.t) ** 2


def calls_helper_setting_attributes(x):
    return set_on_built_object(x) * 2.0


def test_attribute_set_on_a_built_object_is_replayed(x64):
    # was silently wrong: a derivative that ran the lines again (a helper's vjp, a second
    # order) built the object again but dropped `m.t = 3.0` as a side effect run once:
    # grad of the helper's caller [2.8, 2.8, 2.8] for [0.0778, ...] + ...
    for f in (set_on_built_object, calls_helper_setting_attributes):
        check_all(f)
    close(secant.grad(set_on_built_object)(jnp.asarray(X)),
          2 * np.sum(X) / 36 + 2 * np.sum(2 * X) * 2)


class Named:
    def __init__(self, ws):
        for i, w in enumerate(ws):
            setattr(self, f"layer_{i}", w)
        self.n = len(ws)

    def __call__(self, v):
        for i in range(self.n):
            v = jnp.tanh(getattr(self, f"layer_{i}") * v)
        return v


def layers_by_name(x):
    return jnp.sum(Named([0.5, 2.0])(x))


def test_attribute_names_formatted_from_a_loop_index_under_jit(x64):
    # was: AttributeError: 'Named' object has no attribute 'layer_Traced<int64[]>' from
    # jit(grad(f)) (the staged loop's index formatted into the name)
    check_all(layers_by_name)


# --- idioms that work, kept working ----------------------------------------------------------------
def terms(x, n):
    for k in range(1, n + 1):
        yield x ** k / k


def inner_gen(x):
    yield x
    yield 2 * x


def outer_gen(x):
    yield from inner_gen(x)
    yield from (jnp.exp(x), jnp.sin(x))


def generators(x):
    return jnp.sum(sum(terms(x, 4))) + sum(jnp.sum(t * t) for t in outer_gen(x))


@contextlib.contextmanager
def scope(name, log):
    log.append("enter " + name)
    try:
        yield name
    finally:
        log.append("exit " + name)


def context_manager(x):
    log = []
    with scope("layer", log) as nm:
        y = jnp.tanh(x) * len(nm)
    return jnp.sum(y * y) + len(log)


class Base:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        return self.scale * x


class SquareMixin:
    def post(self, y):
        return y * y


class Layer(SquareMixin, Base):
    def __call__(self, x):
        return self.post(super().__call__(x)) + jnp.sin(x)


class Loss(abc.ABC):
    @abc.abstractmethod
    def per(self, r): ...

    def __call__(self, x):
        return jnp.mean(self.per(x))


class Huber(Loss):
    def per(self, r):
        a = jnp.abs(r)
        return jnp.where(a < 1.0, 0.5 * r * r, a - 0.5)


class Wrapper:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


class Params:
    def __init__(self):
        self.w = 2.0

    def apply(self, x):
        return self.w * jnp.sin(x)


def classes(x):
    m = Wrapper(Params())
    return jnp.sum(Layer(1.5)(x)) + Huber()(x * 2.0) + jnp.sum(m.apply(x) * m.w)


class Mode(enum.Enum):
    SUM = "sum"
    MEAN = "mean"


@dataclasses.dataclass
class Opts:
    weights: list = dataclasses.field(default_factory=lambda: [1.0, 2.0, 3.0])
    mode: Mode = Mode.MEAN


T = TypeVar("T")


class HasApply(Protocol):
    def apply(self, x: jnp.ndarray) -> jnp.ndarray: ...


class Box(Generic[T]):
    def __init__(self, v: T) -> None:
        self.v: T = v


def scale(x: Annotated[jnp.ndarray, "vec"], k: float = 2.0) -> jnp.ndarray:
    out: jnp.ndarray = x * k
    return out


def configs_and_annotations(x: jnp.ndarray) -> float:
    o = Opts()
    b: Box[float] = Box(3.0)
    y: Annotated[jnp.ndarray, "vec"] = scale(x, b.v)
    assert x.ndim == 1 and x.shape[0] == 3, "want a 3-vector"
    z = jnp.asarray(o.weights) * jnp.sin(y)
    return jnp.mean(z) if o.mode is Mode.MEAN else jnp.sum(z)


def combine(a, b, c, *, scale=1.0, shift=0.0):
    return scale * (a * b + c) + shift


@functools.lru_cache(maxsize=None)
def coeffs(n):
    return tuple(1.0 / (k + 1) for k in range(n))


def poly(x, cs):
    return functools.reduce(lambda acc, c: acc * x + c, cs, 0.0)


def unpacking_and_functools(x):
    ys = [*[x[0], x[1]], x[2]]
    d2 = {**{"scale": 2.0}, "shift": 0.5}
    fs = [lambda v, i=i: v ** (i + 1) for i in range(3)]
    p = functools.partial(poly, cs=coeffs(4))
    n = x.shape[0]
    k = 2 if 0 < n <= 3 < 10 else 1
    out = combine(*(ys[0], ys[1]), ys[2], **d2) + sum([*ys]) ** k
    out = out + sum(jnp.sum(f(x)) for f in fs) + jnp.sum(p(x))
    return out + functools.reduce(operator.mul, ys)


class Acc:
    def __init__(self):
        self.total = 0.0
        self.n = 0

    def add(self, v):
        self.total += jnp.sum(v * v)
        self.n += 1


def statements(x):
    a = Acc()
    a.add(x)
    a.add(jnp.sin(x))
    tmp = jnp.exp(x)
    y = tmp * x
    del tmp
    log = []
    try:
        y = jnp.tanh(y) * 3.0
    finally:
        log.append("done")
    d = {"b": x[1], "a": x[0], "c": x[2]}
    acc = 0.0
    for _, v in sorted(d.items(), key=lambda kv: kv[0]):
        acc = acc * 0.5 + v * v
    params = {f"layer_{i}": x[i] * (i + 1.0) for i in range(3)}
    return a.total / a.n + jnp.sum(y) + len(log) + acc + jnp.sin(params["layer_2"])


@pytest.mark.parametrize("f", [generators, context_manager, classes, configs_and_annotations,
                               unpacking_and_functools, statements],
                         ids=lambda f: f.__name__)
def test_idioms(x64, f):
    check_all(f)
