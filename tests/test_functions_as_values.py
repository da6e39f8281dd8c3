"""Issue 15: functions as values inside transformed code, as users write them. functools.reduce,
map and filter with lambdas and nested defs over differentiated lists, itertools.accumulate,
sorted(d.items(), key=...), lists of lambdas built in a comprehension or a loop with default-arg
capture (`lambda v, k=k: ...`), nested defs with defaults, *args, keyword-only parameters and
**kwargs, and decorated nested defs (@custom_vjp, @custom_jvp with @f.defjvp, @checkpoint, a
functools.wraps decorator). Each runs under grad, jit(grad), grad(grad), vmap and vmap(grad),
checked against float64 central differences and a Python loop."""
import functools
import itertools
import math
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import checkpoint, custom_jvp, custom_vjp, grad, jit, vmap

from test_block_functions import fd as _fd      # float64 central differences


# --- the cases -----------------------------------------------------------------------------------
def reduce_lambda(x):
    xs = [x, 2.0 * x, jnp.sin(x)]
    return functools.reduce(lambda a, b: a * b + 1.0, xs)


def reduce_with_initial(x):
    return functools.reduce(lambda a, b: a + b ** 2, [x, x * 3.0], 1.0)


def reduce_nested_def_closing_over_x(x):
    def step(acc, v):
        return acc * x + v
    return functools.reduce(step, [1.0, 2.0, jnp.cos(x)], 0.5)


def accumulate_nested_def_closing_over_x(x):
    def step(acc, v):
        return acc * jnp.sin(x) + v
    return jnp.sum(jnp.stack(list(itertools.accumulate([1.0, x, 3.0], step))) ** 2)


def map_lambda(x):
    return sum(map(lambda v: v ** 2, [x, jnp.cos(x)]))


def map_nested_def(x):
    def sq(v):
        return v * jnp.exp(v)
    return sum(map(sq, [x, 2.0 * x]))


def map_two_lists(x):
    return sum(map(lambda a, b: a * b, [x, x], [2.0, jnp.sin(x)]))


def filter_lambda(x):
    vals = [x, x * x, None, 3.0 * x]
    return sum(filter(lambda v: v is not None, vals))


def accumulate_products(x):
    parts = itertools.accumulate([x, 2.0 * x, jnp.cos(x)], lambda a, b: a * b, initial=1.0)
    return jnp.sum(jnp.stack(list(parts)))


def accumulate_sums(x):
    return jnp.sum(jnp.stack(list(itertools.accumulate([x, x * x, jnp.sin(x)]))) ** 2)


def sorted_items_by_key(x):
    d = {"b": x, "a": 2.0 * x, "c": x ** 3}
    return sum(v * i for i, (k, v) in enumerate(sorted(d.items(), key=lambda kv: kv[0])))


def map_over_items_pairs(x):
    d = {"w": x, "b": jnp.sin(x)}
    scales = {"w": 2.0, "b": 0.5}
    return sum(map(lambda kv: scales[kv[0]] * kv[1] ** 2, d.items()))


def loop_over_zip_tuples(x):
    total = 0.0
    for pair in zip([x, 2.0 * x], [jnp.exp(x), 3.0]):
        total = total + pair[0] * pair[1]
    return total


def lambdas_in_a_comprehension(x):
    fs = [lambda v, k=k: v ** k for k in range(1, 4)]
    return sum(f(x) for f in fs)


def lambdas_whose_parameter_shadows_x(x):
    fs = [lambda x: x * 2.0, lambda x: jnp.sin(x)]     # (they close over nothing)
    return sum(g(x) for g in fs)


def lambdas_with_default_capture_in_a_loop(x):
    fs = []
    for k in range(1, 4):
        fs.append(lambda v, k=k: k * jnp.sin(v))
    return sum(f(x) for f in fs)


def list_of_nested_defs(x):
    def a(v):
        return v * v

    def b(v):
        return jnp.sin(v)
    return sum(f(x) for f in [a, b])


def lambda_default_reading_a_differentiated_local(x):
    g = lambda v, s=x * x, *, t=jnp.sin(x): v * s + t      # noqa: E731
    return g(3.0) + g(1.0, 2.0) + g(2.0, t=1.0)


def lambda_keyword_only(x):
    g = lambda v, *, p=2.0: v ** p      # noqa: E731
    return g(x) + g(x, p=3.0)


def nested_defaults_varargs_kwonly(x):
    def h(v, p=2.0, *rest, scale=1.0, **kw):
        return scale * v ** p + sum(rest)
    return h(x) + h(x, 3.0, x, scale=2.0)


def nested_kwargs_get(x):
    def h(v, **kw):
        return v * kw["a"] + kw.get("b", 0.0) + kw.get("c", 0.5)
    return h(x, a=x, b=jnp.sin(x))


def nested_varargs_picker(x):
    def pick(*xs):
        for v in xs:
            if v is not None:
                return v
        return None
    return pick(None, x) ** 2 + pick(jnp.sin(x), x)


def closure_from_a_helper(x):
    f = _make_scale(3.0)        # closing over a constant: a value of no derivative
    return f(x) * x


def _make_scale(w):
    def scale(v):
        return w * v
    return scale


CASES = [lambdas_whose_parameter_shadows_x, reduce_lambda, reduce_with_initial, reduce_nested_def_closing_over_x,
         accumulate_nested_def_closing_over_x, map_lambda, map_nested_def, map_two_lists,
         filter_lambda, accumulate_products, accumulate_sums, sorted_items_by_key,
         map_over_items_pairs, loop_over_zip_tuples, lambdas_in_a_comprehension,
         lambdas_with_default_capture_in_a_loop, list_of_nested_defs,
         lambda_default_reading_a_differentiated_local, lambda_keyword_only,
         nested_defaults_varargs_kwonly, nested_kwargs_get, nested_varargs_picker,
         closure_from_a_helper]
XS = np.array([0.3, 0.7, 1.1])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_every_transform_against_finite_differences(f, x64):
    x = 0.7
    want = _fd(f, x)
    np.testing.assert_allclose(grad(f)(x), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(jit(grad(f))(x), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(grad(grad(f))(x), _fd(grad(f), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(vmap(f)(XS), [float(f(v)) for v in XS], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(XS), [_fd(f, v) for v in XS], rtol=1e-7,
                               atol=1e-9)
    np.testing.assert_allclose(jit(f)(x), f(x), rtol=1e-12)


def sort_by_value(x):
    vals = [x, 2.0 - x, x * x]
    s = sorted(vals, key=lambda v: -v, reverse=True)     # ascending: [x * x, x, 2 - x] at 0.7
    return s[0] + 2.0 * s[-1]


def max_by_key(x):
    vals = [x, 2.0 - x, x * x]
    return max(vals, key=lambda v: v) * 2.0 + min(vals, key=lambda v: -v)


def min_pair_by_a_constant_key(x):
    pairs = [(1.0, x), (0.5, 2.0 * x), (0.5, x * x)]
    return min(pairs, key=lambda p: p[0])[1] ** 2     # the first of the two minima


def test_max_and_min_by_a_key(x64):
    for f in (max_by_key, min_pair_by_a_constant_key):
        for x in (0.7, 1.5, -0.5):
            np.testing.assert_allclose(grad(f)(x), _fd(f, x), rtol=1e-7)
            np.testing.assert_allclose(grad(grad(f))(x), _fd(grad(f), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(min_pair_by_a_constant_key))(0.7), 8 * 0.7, rtol=1e-12)
    with pytest.raises(secant.SecantError, match="max/min with a key"):
        vmap(max_by_key)(XS)


def test_sorted_by_a_key_on_differentiated_values(x64):
    # the order is found on the values when the code runs (as JAX's grad reads concrete values);
    # each sorted item carries its own derivative
    f = sort_by_value
    for x in (0.7, 1.5, -0.5):
        np.testing.assert_allclose(grad(f)(x), _fd(f, x), rtol=1e-7)
        np.testing.assert_allclose(grad(grad(f))(x), _fd(grad(f), x), rtol=1e-6, atol=1e-8)
    with pytest.raises(secant.SecantError, match="sorted\\(\\) of batched values"):
        vmap(f)(XS)
    with pytest.raises(secant.SecantError, match="sorted\\(\\) of batched values"):
        vmap(grad(f))(XS)
    with pytest.raises(secant.SecantError):         # as JAX: a comparison of traced values
        jit(grad(f))(0.7)


# --- decorated nested defs ---------------------------------------------------------------------
def _babylon(a, x):
    return 0.5 * (x + a / x)


def sqrt_by_a_nested_custom_vjp(a):
    @custom_vjp
    def solve(a):
        x = jnp.ones_like(a)
        for _ in range(30):
            x = _babylon(a, x)
        return x
    solve.defvjp(lambda a: (solve(a), solve(a)), lambda r, g: (g / (2 * r),))
    return solve(a)


def softplus_with_a_nested_custom_jvp(x):
    @custom_jvp
    def sp(x):
        return jnp.log1p(jnp.exp(x))

    @sp.defjvp
    def sp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sp(x), t * 2.0       # not softplus' derivative: the rule given must be used
    return jnp.sum(sp(x))


def _doubled(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return inner


def wrapped_nested_def(x):
    @_doubled
    def cube(y):
        return y ** 3
    return cube(x) + 1.0


def wrapped_nested_def_and_a_choice(x):
    @_doubled
    def g(v):
        return v * v
    y = g(x) if x > 0 else -x
    return y


def checkpointed_nested_def(x):
    @checkpoint
    def block(y):
        return jnp.sin(y) * y
    return block(block(x))


def test_nested_custom_vjp(x64):
    a = jnp.asarray(2.0)
    np.testing.assert_allclose(grad(sqrt_by_a_nested_custom_vjp)(a), 0.5 / math.sqrt(2.0),
                               rtol=1e-12)
    np.testing.assert_allclose(jit(grad(sqrt_by_a_nested_custom_vjp))(a), 0.5 / math.sqrt(2.0),
                               rtol=1e-12)
    np.testing.assert_allclose(grad(grad(sqrt_by_a_nested_custom_vjp))(a), -0.25 * 2 ** -1.5,
                               rtol=1e-10)
    np.testing.assert_allclose(vmap(grad(sqrt_by_a_nested_custom_vjp))(jnp.asarray([1.0, 4.0])),
                               [0.5, 0.25], rtol=1e-12)


def test_nested_custom_jvp_with_its_rule_as_a_decorated_def(x64):
    x = jnp.asarray([0.5, -1.0])
    f = softplus_with_a_nested_custom_jvp
    np.testing.assert_allclose(f(x), np.sum(np.log1p(np.exp([0.5, -1.0]))), rtol=1e-14)
    np.testing.assert_allclose(grad(f)(x), [2.0, 2.0])         # the custom rule's tangent
    np.testing.assert_allclose(jit(grad(f))(x), [2.0, 2.0])
    np.testing.assert_allclose(vmap(grad(f))(jnp.stack([x, 2 * x])), [[2.0, 2.0]] * 2)


@pytest.mark.parametrize("f", [wrapped_nested_def, wrapped_nested_def_and_a_choice,
                               checkpointed_nested_def], ids=lambda f: f.__name__)
def test_decorated_nested_defs(f, x64):
    x = 0.7
    np.testing.assert_allclose(jit(f)(x), f(x), rtol=1e-12)
    np.testing.assert_allclose(grad(f)(x), _fd(f, x), rtol=1e-7)
    np.testing.assert_allclose(jit(grad(f))(x), _fd(f, x), rtol=1e-7)
    np.testing.assert_allclose(grad(grad(f))(x), _fd(grad(f), x), rtol=1e-6)
    np.testing.assert_allclose(vmap(grad(f))(XS), [_fd(f, v) for v in XS], rtol=1e-7)


def test_a_nested_decorator_is_not_dropped(x64):
    # regression: the staged (jit) and desugared (grad) forms printed a nested def without its
    # decorators, so g(x) was x * x, not 2 * x * x: jit gave 9.0 and grad 6.0, silently
    f = wrapped_nested_def_and_a_choice
    assert f(3.0) == 18.0
    np.testing.assert_allclose(jit(f)(3.0), 18.0)
    np.testing.assert_allclose(grad(f)(3.0), 12.0)
    np.testing.assert_allclose(jit(grad(f))(3.0), 12.0)


def _block_of(decorator):
    def f(x, w):
        @decorator
        def block(y):
            return jnp.sin(y) * w
        return block(x)
    return f


def test_a_decorated_nested_def_closing_over_a_differentiated_value(x64):
    # @checkpoint changes no value: the nested def is read as the plain def it decorates
    # (transformer/remat_calls.py; refused until explore15h); a user's decorator is refused
    f = _block_of(checkpoint)
    np.testing.assert_allclose(grad(f)(0.7, 2.0), 2.0 * math.cos(0.7), rtol=1e-12)
    np.testing.assert_allclose(grad(f, 1)(0.7, 2.0), math.sin(0.7), rtol=1e-12)
    f = _block_of(_doubled)
    np.testing.assert_allclose(grad(f)(0.7, 2.0), 4.0 * math.cos(0.7), rtol=1e-12)
    with pytest.raises(secant.SecantError, match="block closes over w"):
        grad(f, 1)(0.7, 2.0)


def _apply(fn, v):
    return fn(v)


def test_a_default_reading_a_differentiated_value_of_a_def_passed_on_is_refused(x64):
    # (before: a NameError at transform time; read as a constant it would have been 0.0)
    def f(x):
        g = lambda v, s=x: v * s        # noqa: E731
        return _apply(g, 3.0)
    with pytest.raises(secant.SecantError, match="a default of the nested function g reads x"):
        grad(f)(0.7)


def test_a_list_of_lambdas_closing_over_a_differentiated_value(x64):
    # (once refused: transformer/function_lists.py reads a list of lambdas that is only
    # iterated, indexed or measured element by element) d(2x + 3) = 2
    def f(x):
        fs = [lambda v: v * x, lambda v: v + 1.0]
        return sum(g(2.0) for g in fs)
    np.testing.assert_allclose(float(grad(f)(0.7)), 2.0, rtol=1e-12)


def test_a_closure_over_a_differentiated_value_returned_by_a_helper(x64):
    # (once refused; objects15b reads the factory's body where it is called: d(x * x) = 2x)
    def f(x):
        return _make_scale(x)(x) * x
    np.testing.assert_allclose(float(grad(f)(0.7)), 3 * 0.7 ** 2, rtol=1e-12)


def test_a_closure_over_a_differentiated_value_returned_by_a_helper_and_called(x64):
    # make(x)(x), once refused ("computed from differentiated values"), is read as
    # `g = make(x); g(x)` is (the closure's cotangent through the helper's vjp): x * x
    def f(x):
        return _make_scale(x)(x)

    def f_twice(x):
        return _make_scale(x)(x) + _make_scale(2.0 * x)(x)

    x = jnp.asarray(0.7)
    np.testing.assert_allclose(grad(f)(x), 1.4, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(f))(x), 1.4, rtol=1e-12)
    np.testing.assert_allclose(grad(grad(f_twice))(x), 6.0, rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f_twice))(jnp.asarray([0.7, 1.0])), [4.2, 6.0],
                               rtol=1e-12)


# --- generated sources (SECANT_UPDATE_GOLDEN=1 rewrites them; review the diff) -------------------
GOLDEN = pathlib.Path(__file__).parent / "golden" / "functions_as_values"


@pytest.mark.parametrize("name, make", [
    ("nested_custom_vjp_grad", lambda: grad(sqrt_by_a_nested_custom_vjp)),
    ("accumulate_products_grad", lambda: grad(accumulate_products)),
    ("map_over_items_pairs_grad", lambda: grad(map_over_items_pairs)),
    ("map_over_items_pairs_vmap", lambda: vmap(map_over_items_pairs)),
])
def test_golden_source(name, make):
    import os
    text = secant.source(make())
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with SECANT_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"the generated source of {name} changed"
