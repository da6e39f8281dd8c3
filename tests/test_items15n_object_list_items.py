"""Issue 20 (items15n): a list or tuple of user objects with operators passed to a helper (a list
of dual numbers) is read as the list it is: `ds[0]`, `ds[-1]`, `ds[1:]`, `len(ds)` in the
helper's derivative and batched form, the items' operators still their class's methods
(`dynamic_call(binary_method(ds_0, ds_m1, 'mul'), ...)`). Only where the container's kind is
unknown (a user object with its own __getitem__) is an item read through the class's method,
`dynamic_call(binary_method(v, 0, 'getitem'), v, 0)`. Each source checked here is also run and
its value checked (float64 central differences, a Python loop over the batch).
"""
import inspect

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant.transforms import _unwrap
from test_duals15m_programs import _dual_prod, dual_indexed
from test_obj15l_stateful_getters import Dual, _check, _fd


def dual_product(x):       # (duals15m's _dual_prod given a tuple)
    out = _dual_prod((Dual(x[0], jnp.cos(x[1])), Dual(jnp.tanh(x[1]), x[0])))
    return jnp.sum(out.val * out.eps)


class Pair:
    """A user container with operators and its own __getitem__ (not a list)."""
    def __init__(self, a, b):
        self.a, self.b = a, b
    def __getitem__(self, i):
        return (self.a, self.b)[i]
    def __mul__(self, s):
        return Pair(self.a * s, self.b * s)

def _pair_sum(p):
    return p[0] + 2.0 * p[1]

def pair_indexed(x):
    return jnp.sum(_pair_sum(Pair(jnp.sin(x[0]), x[1]) * x[1]))


def _x():
    return np.array([0.3, 0.7])


def _helper(gen, name):
    """The source of the generated function `name` that `gen` (a transform's result) calls,
    found through the closures of the generated functions it reaches."""
    todo, seen = [_unwrap(gen)], set()
    while todo:
        f = todo.pop()
        for g in (f, getattr(f, "__secant_answers__", None)):
            if g is None or g in seen or getattr(g, "__secant_source__", None) is None:
                continue
            seen.add(g)
            if g.__name__ == name:
                return secant.source(g)
            todo += [v for v in g.__secant_source__.closure.values() if inspect.isfunction(v)]
    raise AssertionError(f"no generated {name} reached")


def _no_dynamic_item_reads(src):
    assert "'getitem'" not in src and "index_examples(" not in src \
        and "item_of(" not in src and "example_len(" not in src, src


def test_items_of_a_list_of_duals_read_as_written_in_the_vjp(x64):
    g = secant.grad(dual_indexed)
    np.testing.assert_allclose(g(_x()), _fd(dual_indexed, _x()), rtol=1e-6, atol=1e-8)
    src = _helper(g, "_first_times_last_vjp")
    _no_dynamic_item_reads(src)
    for line in ("ds_0 = ds[0]", "ds_m1 = ds[-1]", "ds_1 = ds[1]",
                 "dynamic_call(binary_method(ds_0, ds_m1, 'mul'), ds_0, ds_m1)"):
        assert line in src, src


def test_a_slice_and_a_loop_over_a_tuple_of_duals_read_as_written(x64):
    g = secant.grad(dual_product)
    np.testing.assert_allclose(g(_x()), _fd(dual_product, _x()), rtol=1e-6, atol=1e-8)
    src = _helper(g, "_dual_prod_vjp")
    _no_dynamic_item_reads(src)
    for line in ("out_1 = ds[0]", "ds_rest = ds[1:]", "range(len(ds_rest))", "d = ds_rest[i]"):
        assert line in src, src


@pytest.mark.parametrize("program, helper", [(dual_indexed, "_first_times_last_vmap"),
                                             (dual_product, "_dual_prod_vmap")])
def test_the_batched_helper_reads_the_list_as_written(x64, program, helper):
    f = secant.vmap(program)
    xs = np.stack([_x(), _x() * 1.5 + 0.1])
    np.testing.assert_allclose(f(xs), [float(program(a)) for a in xs], rtol=1e-10)
    src = _helper(f, helper)
    _no_dynamic_item_reads(src)
    assert "= ds[0]" in src and "binary_method(" in src, src


@pytest.mark.parametrize("transform", ["jvp", "hessian", "jit∘grad", "vmap∘grad"])
def test_values_under_other_transforms(x64, transform):
    for program in (dual_indexed, dual_product):
        _check(program, transform)


def test_a_user_container_with_its_own_getitem_keeps_the_dynamic_read(x64):
    g = secant.grad(pair_indexed)
    np.testing.assert_allclose(g(_x()), _fd(pair_indexed, _x()), rtol=1e-6, atol=1e-8)
    src = _helper(g, "_pair_sum_vjp")
    assert "binary_method(p, 0, 'getitem')" in src, src    # Pair.__getitem__, as Python


def test_the_flag_travels_with_the_objects_form():
    from secant.transformer import operators
    form = operators.objects_form(_dual_prod, ["list"])
    assert form.__secant_objects__ == form.__secant_object_lists__ == {"ds"}
    plain = operators.objects_form(_pair_sum, [True])
    assert plain.__secant_objects__ == {"p"} and not hasattr(plain, "__secant_object_lists__")
    assert operators.objects_form(_dual_prod, [True]) is not form
