"""Issue 15: ordinary Python idioms inside a transformed function that secant once refused
(sum with a start value, sorted(d.items()), item assignment on a local list or dict, a return
of the loop variable, nested defs with *args / keyword-only parameters, a user object held in a
variable). Each runs under grad, jit(grad), vmap and vmap(grad): the gradient against float64
central finite differences, jit against eager, vmap against a Python loop."""
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as snp

XS = np.array([0.3, 0.7, 1.3])


def _fd(f, x, eps=1e-6):
    return (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)


def check(f, batch_grad=True):
    """f: float -> float; its transforms against finite differences, eager and a loop."""
    g = secant.grad(f)
    for x in XS:
        x = np.float64(x)
        assert float(g(x)) == pytest.approx(_fd(f, x), rel=1e-6, abs=1e-8)
        assert float(secant.jit(g)(x)) == pytest.approx(float(g(x)), rel=1e-10)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(XS)),
                               [float(f(np.float64(x))) for x in XS], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f))(XS)),
                               [float(f(np.float64(x))) for x in XS], rtol=1e-10)
    if not batch_grad:
        return
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(XS)),
                               [float(g(np.float64(x))) for x in XS], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(g))(XS)),
                               [float(g(np.float64(x))) for x in XS], rtol=1e-10)


# --- 1. sum(items, start) ------------------------------------------------------------------------
def sum_generator_start(x):
    ws = [1.0, 2.0, 3.0]
    return sum((w * snp.sin(w * x) for w in ws), 0.5)


def sum_generator_tracked_start(x):
    return sum((w for w in [1.0, 2.0]), x * x)


def sum_generator_if_start(x):
    return sum((w * x * x for w in [1.0, 2.0, 3.0] if w > 1.5), start=snp.cos(x))


def sum_list_start(x):
    return sum([x, x * x, snp.sin(x)], 0.0)


def sum_list_tracked_start(x):
    return sum([x * x, 2.0], snp.exp(x))


def sum_list_variable_start(x):
    ys = [x, x * x]
    return sum(ys, snp.sin(x))


def sum_list_comprehension_start(x):
    return sum([snp.tanh(w * x) for w in (0.5, 1.5)], 1.0)


@pytest.mark.parametrize("f", [sum_generator_start, sum_generator_tracked_start,
                               sum_generator_if_start, sum_list_start, sum_list_tracked_start,
                               sum_list_variable_start, sum_list_comprehension_start])
def test_sum_with_start(x64, f):
    check(f)


# --- 2. sorted(d.items()), sorted(d), sorted(d.keys()) ----------------------------------------
def sorted_items(x):
    d = {"b": x * 2.0, "a": snp.sin(x), "c": x * x}
    t = 0.0
    for k, v in sorted(d.items()):
        t = 2.0 * t + v         # order-sensitive: a, b, c
    return t


def sorted_items_unused_key(x):
    d = {"z": x, "y": snp.exp(x)}
    t = 1.0
    for _, v in sorted(d.items()):
        t = t * v + 1.0
    return t


def sorted_keys(x):
    d = {"b": x * 2.0, "a": snp.sin(x)}
    t = 0.0
    for k in sorted(d.keys()):
        t = t * 3.0 + d[k]
    return t


def sorted_dict(x):
    d = {"b": x * 2.0, "a": snp.sin(x)}
    t = 0.0
    for k in sorted(d):
        t = t * 3.0 + d[k]
    return t


@pytest.mark.parametrize("f", [sorted_items, sorted_items_unused_key, sorted_keys, sorted_dict])
def test_sorted_dict_loops(x64, f):
    check(f)


def sorted_params(params, x):
    t = x
    for name, p in sorted(params.items()):
        t = snp.tanh(p * t)
    return t


def test_sorted_items_of_a_parameter_dict(x64):
    params = {"w2": np.float64(0.4), "w1": np.float64(1.3), "w3": np.float64(-0.8)}
    x = np.float64(0.9)
    g = secant.grad(sorted_params)(params, x)
    assert set(g) == set(params)
    for k in params:
        def along(v, k=k):
            return sorted_params({**params, k: v}, x)
        assert float(g[k]) == pytest.approx(_fd(along, params[k]), rel=1e-6)
    gj = secant.jit(secant.grad(sorted_params))(params, x)
    for k in params:
        assert float(gj[k]) == pytest.approx(float(g[k]), rel=1e-10)
    batched = secant.vmap(sorted_params, in_axes=(None, 0))(params, XS)
    np.testing.assert_allclose(np.asarray(batched),
                               [float(sorted_params(params, np.float64(v))) for v in XS],
                               rtol=1e-10)


# --- 3. item assignment on a local list or dict -------------------------------------------------
def list_set_item(x):
    l = [x, 2.0 * x, 3.0]
    l[1] = snp.sin(x)
    return l[0] * l[1] + l[2]


def list_add_to_item(x):
    l = [x, 2.0 * x]
    l[0] += x * x
    l[-1] *= snp.exp(x)
    return l[0] * l[1]


def list_set_last_item(x):
    l = [x, 2.0 * x, 3.0 * x]
    i = -1
    l[i] = x * x            # an index known when it runs, negative
    l[-2] = snp.cos(x)
    return l[0] + 2.0 * l[1] + 3.0 * l[2]


def list_items_in_a_loop(x):
    l = [x, x * x, snp.sin(x)]
    for i in range(len(l)):
        l[i] = l[i] * (i + 1.0)
    return l[0] * l[1] + l[2]


def list_of_placeholders(x):
    out = [0.0] * 3
    for i in range(3):
        out[i] = x ** (i + 1)
    return sum(out) + snp.stack(out)[2]


def list_item_in_a_branch(x):
    l = [x, 2.0 * x]
    if len(l) > 1:
        l[1] = x * x
    else:
        l[0] = x
    return l[0] * l[1]


def dict_set_item(x):
    d = {"a": x, "b": 2.0 * x}
    d["b"] = x * x
    d["c"] = snp.cos(x)         # a new key goes last
    t = 0.0
    for v in d.values():
        t = 2.0 * t + v         # order-sensitive: a, b, c
    return t


def dict_add_to_item(x):
    d = {"w": x}
    d["w"] += snp.sin(x)
    d["w"] *= x
    return d["w"]


def dict_items_in_a_loop(x):
    d = {}
    for k in ("a", "b", "c"):
        d[k] = x * len(k + "!!")
    d["b"] -= x * x
    return d["a"] * d["b"] + d["c"]


@pytest.mark.parametrize("f", [list_set_item, list_add_to_item, list_set_last_item,
                               list_items_in_a_loop, list_of_placeholders, list_item_in_a_branch,
                               dict_set_item, dict_add_to_item, dict_items_in_a_loop])
def test_item_assignment_on_a_local_container(x64, f):
    check(f)


def aliased_list(x):
    l = [x, x]
    m = l
    l[0] = x * x
    return m[0]


def list_read_by_a_nested_function(x):
    l = [x, x]
    h = lambda: l[0]
    l[0] = x * x
    return h()


def parameter_list(l, x):
    l[0] = x * x
    return l[0] + l[1]


@pytest.mark.parametrize("f, line", [(aliased_list, "l[0] = x * x"),
                                     (list_read_by_a_nested_function, "l[0] = x * x")])
def test_item_assignment_another_name_sees_is_refused(f, line):
    with pytest.raises(secant.SecantError) as info:
        secant.grad(f)(0.7)
    assert "test_refuse15_idioms.py" in str(info.value) and line in str(info.value)


def test_item_assignment_on_a_parameter_list_is_refused():
    with pytest.raises(secant.SecantError):
        secant.grad(parameter_list, argnums=1)([1.0, 2.0], 0.7)


# --- 5. nested defs with *args, keyword-only parameters, **kwargs -----------------------------
def nested_varargs_keyword_only(x):
    def g(*zs, scale=2.0):
        return scale * sum(zs)
    return g(x, x * x, scale=3.0) + g(snp.sin(x))


def nested_varargs_loop_over_them(x):
    w = snp.cos(x)

    def g(*zs, scale=2.0):
        t = 0.0
        for z in zs:
            t = t + z * z * w
        return scale * t
    return g(x, snp.sin(x))


def nested_keyword_only_without_default(x):
    w = snp.cos(x)

    def g(a, *, scale, shift=1.0):
        return scale * a * w + shift
    return g(x, scale=2.0) + g(x * x, scale=0.5, shift=x)


def nested_kwargs(x):
    w = snp.exp(0.5 * x)

    def g(a, **options):
        return options["scale"] * a * w
    return g(x, scale=2.0) * g(snp.sin(x), scale=0.5)


def module_varargs(*zs, scale=2.0):
    t = 0.0
    for z in zs:
        t = t + z * z
    return scale * t


def calls_module_varargs(x):
    return module_varargs(x, snp.sin(x), scale=1.5)


@pytest.mark.parametrize("f", [nested_varargs_keyword_only, nested_varargs_loop_over_them,
                               nested_keyword_only_without_default, nested_kwargs,
                               calls_module_varargs])
def test_nested_def_with_varargs_and_keyword_only_parameters(x64, f):
    check(f)


# --- 6. a user object held in a variable, then called ------------------------------------------
class Model:
    scale = 0.5

    def __init__(self, w, b=1.0):
        self.w = w
        self.b = b

    def __call__(self, x):
        return snp.sin(self.w * x) + self.b

    def apply(self, x):
        return self.scale * self.w * x * x + self.feature(x)

    def feature(self, x):
        return snp.tanh(self.b * x)


@dataclasses.dataclass
class Affine:
    w: float
    b: float = 0.25

    def __call__(self, x):
        return self.w * x + self.b


@secant.tree_util.register_pytree_node_class
class Scaled:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * snp.exp(x)

    def tree_flatten(self):
        return (self.k,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def held_model_called(x):
    m = Model(x * 2.0)
    return m(x)


def held_model_method(x):
    m = Model(snp.cos(x), b=x)
    return m.apply(x) + m(x) * m.w


def held_dataclass(x):
    a = Affine(x * x)
    return a(x) + a.b * a(2.0)


def held_pytree_class(x):
    s = Scaled(snp.sin(x))
    return s(x) * s.k


def held_in_a_loop(x):
    t = 0.0
    for k in (1.0, 2.0):
        m = Affine(k * x, b=x)
        t = t + m(t + 1.0)
    return t


@pytest.mark.parametrize("f", [held_model_called, held_model_method, held_dataclass,
                               held_in_a_loop])
def test_object_held_in_a_variable(x64, f):
    check(f)


def test_pytree_object_held_in_a_variable(x64):
    # (a registered pytree class is rebuilt from its leaves and called through the run-time
    # dispatcher, which vmap cannot batch yet: vmap(grad) of it is not checked here)
    check(held_pytree_class, batch_grad=False)


def held_model_returned(x):
    m = Model(x * 2.0)
    return m(x), m


def held_model_passed_on(x):
    m = Model(x * 2.0)
    return apply_model(m, x)


def apply_model(m, x):
    return m(x)


@pytest.mark.parametrize("f", [held_model_returned, held_model_passed_on])
def test_object_held_and_escaping_is_differentiated(f):
    # (refused once; a plain object is a pytree of its fields now, classes15): m(x) =
    # sin(2x * x) + 1, whose derivative is 4x cos(2x^2)
    g = secant.grad(lambda x: f(x)[0] if f is held_model_returned else f(x))
    for x in (0.7, -1.3):
        assert float(g(x)) == pytest.approx(4 * x * np.cos(2 * x * x), rel=1e-5)


# --- found on the way: vmap of a value first assigned inside a loop that breaks ------------------
def first_assigned_in_a_breaking_loop(x):
    for a in [1.0, 2.0, 3.0]:
        y = a * x
        if a > 1.5:
            break
    return y


def test_vmap_of_a_value_first_assigned_in_a_breaking_loop(x64):
    # the iterations after the break copy the batched value on: it was broadcast again there,
    # each one adding a batch axis (a (3, 3) result for three examples)
    out = secant.vmap(first_assigned_in_a_breaking_loop)(XS)
    np.testing.assert_allclose(np.asarray(out), 2.0 * XS, rtol=1e-12)
    assert np.asarray(out).shape == XS.shape


# --- 4. return of the loop variable from inside a for loop ---------------------------------------
SCALES = (0.5, 1.5, 2.5)


def return_loop_variable(x):
    for a in [1.0, 2.0, 3.0]:
        if a > 1.5:
            return a * x
    return x


def return_from_pairs(x):
    for name, w in [("a", 1.0), ("b", 2.0), ("c", 3.0)]:
        if name == "b":
            return snp.sin(w * x) + len(name)
    return x


def return_from_enumerate(x):
    t = x
    for k, c in enumerate([0.5, 1.0, 2.0, 4.0]):
        t = snp.sin(t) + c * x
        if k * c > 1.5:
            return t * k + c
    return t


def return_from_a_global_tuple(x):
    for s in SCALES:
        if s > 1.0:
            return snp.exp(s * x)
    return x


def falls_through(x):
    for a in [1.0, 2.0]:
        if a > 5.0:
            return a * x
    return x * x


@pytest.mark.parametrize("f", [return_loop_variable, return_from_pairs, return_from_enumerate,
                               return_from_a_global_tuple, falls_through])
def test_return_of_the_loop_variable(x64, f):
    check(f)


def return_differentiated_loop_variable(x):
    for w in [x, x * x]:
        if True:
            return w * x
    return x


def return_computed_loop_variable(x):
    for w in [x * x, x]:
        if w > 0.5:
            return w * x
    return x


@pytest.mark.parametrize("f", [return_differentiated_loop_variable,
                               return_computed_loop_variable])
def test_return_of_a_differentiated_loop_variable(x64, f):
    check(f)


def appended_then_set(x):
    out = []
    for k in range(3):
        out.append(x * k)
    out[0] = snp.cos(x)
    out[2] += x * x
    return out[0] * out[1] + out[2]


def test_item_assignment_after_appends(x64):
    check(appended_then_set)


def out_of_range_item(x):
    l = [x, 2 * x]
    l[2] = snp.sin(x)       # Python: IndexError (a rebuilt list would grow by one instead)
    return l[0] + l[-1]


@pytest.mark.parametrize("transform", [secant.grad, lambda f: secant.jit(secant.grad(f)),
                                       secant.vmap, secant.jit])
def test_item_assignment_out_of_range_is_an_index_error(transform):
    with pytest.raises(IndexError):
        out_of_range_item(0.7)
    with pytest.raises(IndexError, match="assignment index out of range"):
        transform(out_of_range_item)(np.array([0.7, 0.2]) if transform is secant.vmap else 0.7)
