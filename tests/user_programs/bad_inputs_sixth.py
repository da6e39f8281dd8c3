"""Bad inputs a user gives the JAX API of the sixth battery (issue 15, explore15o): lax.cond
branches of different structures, a scan or fori_loop carry that changes shape or dtype, scan
over xs of different lengths, lax.switch of no branches, a custom_vjp bwd of the wrong
structure, a custom_jvp tangent of the wrong shape, vmap in_axes of another structure, a psum
over an axis name no vmap binds, axis_index outside vmap, random.normal of a traced shape under
jit, has_aux of a function that returns no pair, jnp.where(cond) with one argument under jit,
tree_unflatten with too few leaves. Each must raise the exception type JAX raises there (checked
with jax 0.10.2), naming the user's file and line: the program's line for an error inside it,
the call's line, marked `# !`, for API misuse (judged as the fourth battery's). And awkward
inputs JAX accepts, which must give the right value.

bench/user_programs.py --sixth prints these; tests/test_explore15o_programs.py asserts them.
"""
import numpy as np

import secant
import secant.numpy as jnp
from secant import lax, random
from secant import tree_util as tu

from user_programs import api_surface as api, bad_inputs, bad_inputs_fourth

HERE = bad_inputs.catalogue.os.path.abspath(__file__)
CASES = {}
bad, good = bad_inputs.registrars(CASES, "explore15o", HERE)

classify = bad_inputs_fourth.classify

W3 = np.array([0.3, -0.2, 0.5])
X53 = np.linspace(-1.0, 1.0, 15).reshape(5, 3)


# --- errors inside the program: its line ----------------------------------------------------------
def _cond_structures(w, x):
    return jnp.sum(lax.cond(jnp.sum(w) > 0, lambda a: (a, a), lambda a: a, w))


@bad("TypeError", inside=(_cond_structures, "return jnp.sum(lax.cond("))
def cond_branches_of_different_structures():
    return secant.grad(_cond_structures)(W3, X53)


def _scan_growing_carry(w, x):
    def step(c, xt):
        return jnp.concatenate([c, xt]), None
    c, _ = lax.scan(step, w, x)
    return jnp.sum(c)


@bad("TypeError", inside=(_scan_growing_carry, "c, _ = lax.scan(step, w, x)"))
def scan_carry_that_grows():
    return secant.grad(_scan_growing_carry)(W3, X53)


def _fori_int_carry(w, x):
    def body(i, c):
        return c * 0.5
    return jnp.sum(lax.fori_loop(0, 3, body, jnp.arange(3)) * w)


@bad("TypeError", inside=(_fori_int_carry, "return jnp.sum(lax.fori_loop(0, 3, body,"))
def fori_carry_that_changes_dtype():
    return secant.jit(_fori_int_carry)(W3, X53)


def _scan_ragged(w, x):
    def step(c, xs):
        a, b = xs
        return c + jnp.sum(a * w) * b, None
    c, _ = lax.scan(step, 0.0, (x, jnp.ones(4)))
    return c


@bad("ValueError", inside=(_scan_ragged, "c, _ = lax.scan(step, 0.0, (x, jnp.ones(4)))"))
def scan_over_xs_of_different_lengths():
    return secant.grad(_scan_ragged)(W3, X53)


def _switch_nothing(w, x):
    return lax.switch(0, [], w)


@bad("ValueError", inside=(_switch_nothing, "return lax.switch(0, [], w)"))
def switch_of_no_branches():
    return secant.jit(_switch_nothing)(W3, X53)


def _psum_unbound(w, x):
    def f(r):
        return jnp.sum(r * w) / lax.psum(1.0, "batch")
    return jnp.sum(secant.vmap(f, axis_name="rows")(x))


@bad("NameError", inside=(_psum_unbound, 'return jnp.sum(r * w) / lax.psum(1.0, "batch")'))
def psum_over_an_axis_no_vmap_binds():
    return secant.grad(_psum_unbound)(W3, X53)


def _noise(w, x, n):
    return jnp.sum(random.normal(random.PRNGKey(0), (n,)) * jnp.sum(w))


@bad("TypeError", inside=(_noise, "return jnp.sum(random.normal(random.PRNGKey(0), (n,))"))
def random_shape_from_a_traced_argument():
    return secant.jit(_noise)(W3, X53, 3)


def _nonzero(w, x):
    (idx,) = jnp.where(x @ w > 0)
    return jnp.sum((x @ w)[idx])


@bad("ConcretizationTypeError", inside=(_nonzero, "(idx,) = jnp.where(x @ w > 0)"))
def where_with_one_argument_under_jit():
    return secant.jit(_nonzero)(W3, X53)


def _short_unflatten(w, x):
    treedef = tu.tree_structure({"a": w, "b": w})
    p = tu.tree_unflatten(treedef, [w])
    return jnp.sum(p["a"])


@bad("ValueError", inside=(_short_unflatten, "p = tu.tree_unflatten(treedef, [w])"))
def tree_unflatten_with_too_few_leaves():
    return secant.grad(_short_unflatten)(W3, X53)


@secant.custom_vjp
def _two_cotangents(a):
    return jnp.sum(a ** 2)


def _two_bwd(a, g):
    return 2 * g * a, g


_two_cotangents.defvjp(lambda a: (jnp.sum(a ** 2), a), _two_bwd)


def _wrong_bwd(w, x):
    return _two_cotangents(x @ w)


@bad("TypeError", inside=(_two_bwd, "def _two_bwd(a, g):"))
def custom_vjp_bwd_of_the_wrong_structure():
    return secant.grad(_wrong_bwd)(W3, X53)


@secant.custom_jvp
def _bad_tangent(a):
    return jnp.sin(a)


@_bad_tangent.defjvp
def _summed_tangent(p, t):
    return jnp.sin(p[0]), jnp.sum(t[0])


def _wrong_jvp(w, x):
    return jnp.sum(_bad_tangent(x @ w))


@bad("TypeError", inside=(_summed_tangent, "def _summed_tangent(p, t):"))
def custom_jvp_tangent_of_the_wrong_shape():
    return secant.grad(_wrong_jvp)(W3, X53)


# --- API misuse: the call's line --------------------------------------------------------------
@bad("ValueError")
def in_axes_dict_of_another_structure():
    return secant.vmap(api.vm_in_axes_dict, in_axes=({"x": 0},))(np.stack([W3, W3]))  # !


@bad("TypeError")
def has_aux_of_a_function_without_aux():
    return secant.grad(api.cf_lax_map, has_aux=True)(W3, X53)  # !


@bad("NameError")
def axis_index_outside_vmap():
    return secant.jit(lambda w: w * lax.axis_index("i"))(W3)  # !


@bad("ValueError")
def vmap_axis_size_that_disagrees():
    return secant.vmap(lambda a: a * 2.0, axis_size=4)(np.ones((3, 2)))  # !


# --- awkward inputs JAX accepts: the right value ----------------------------------------------------
def _ref_lax_map(w, x):
    return float(np.sum(np.tanh(x @ w) * x[:, 0]))


@good(lambda v: np.allclose(v, [_ref_lax_map(W3, X53), _ref_lax_map(2 * W3, X53)]),
      "the per-example losses")
def vmap_in_axes_given_as_a_list():
    return secant.vmap(api.cf_lax_map, in_axes=[0, None])(np.stack([W3, 2 * W3]), X53)  # !


@good(lambda g: isinstance(g, tuple) and len(g) == 2 and np.allclose(g[1], 0.0),
      "a pair of grads, the second zero")
def argnums_tuple_with_an_unused_argument():
    return secant.grad(lambda w, b: jnp.sum(w ** 2), argnums=(0, 1))(W3, 1.0)  # !
