"""Bad inputs a user gives the third battery's programs (issue 15, explore15j): grad of an
integer or non-scalar output, integer and string arguments, in_axes that do not fit the
arguments, jvp's primals not in a tuple, has_aux on a function returning one value, a
custom_vjp backward rule returning too few cotangents, and bad values reaching the programs
(a missing key, mismatched shapes, batches of different sizes to lax.scan, an ODE state that
does not fit its vector field). Each must raise the exception type JAX raises there, naming
the user's file and line (the program's line for an error inside it, the call's line, marked
`# !`, for API misuse): judged as the second battery's (bad_inputs.classify). And awkward
inputs JAX accepts, which must give the right value.

bench/user_programs.py --third prints these; tests/test_explore15j_programs.py asserts them.
"""
import numpy as np

import secant
import secant.numpy as jnp

from user_programs import bad_inputs, classroom, jaxdocs_style as jd, modules_style as ms
from user_programs import science_third as sci

HERE = bad_inputs.catalogue.os.path.abspath(__file__)
CASES = {}
bad, good = bad_inputs.registrars(CASES, "explore15j", HERE)
classify = bad_inputs.classify

W3 = np.array([0.3, -0.2, 0.5])
X53 = np.linspace(-1.0, 1.0, 15).reshape(5, 3)
Y5 = np.linspace(0.0, 1.0, 5)


def _params():
    return {"w1": np.ones((3, 4)) * 0.1, "b1": np.zeros(4), "w2": np.ones(4) * 0.2}


# --- API misuse: the call's line --------------------------------------------------------------
@bad("TypeError")
def grad_of_an_int_output():
    return secant.grad(lambda w: jnp.argmax(w))(W3)  # !


@bad("TypeError")
def grad_of_a_vector_output():
    return secant.grad(lambda w: jnp.sin(w) * w)(W3)  # !


@bad("TypeError")
def int_argnum_to_grad():
    return secant.grad(jd.jd_state_namedtuple, argnums=1)(W3, np.ones((5, 3), int), Y5)  # !


@bad("TypeError")
def string_to_grad_of_a_module():
    return secant.grad(ms.mod_tied_autoencoder)("weights", X53)  # !


@bad("ValueError")
def in_axes_longer_than_the_arguments():
    return secant.vmap(jd.jd_counter_state, in_axes=(0, 0))(np.ones((2, 3)))  # !


@bad("ValueError")
def in_axes_past_the_rank():
    return secant.vmap(sci.ising_mean_field, in_axes=2)(np.ones((2, 6)))  # !


@bad("ValueError")
def vmap_sizes_disagree():
    return secant.vmap(jd.jd_per_example_grads, in_axes=(None, 0, 0))(W3, X53, np.ones(4))  # !


@bad("TypeError")
def jvp_primals_not_a_tuple():
    return secant.jvp(jd.jd_log1pexp, W3, W3)  # !


@bad("TypeError")
def has_aux_without_aux():
    return secant.value_and_grad(sci.implicit_heat, has_aux=True)(np.ones(6))  # !


@bad("TypeError")
def jit_of_a_string():
    return secant.jit(classroom.cls_getattr_np)("x")  # !


# --- bad values reaching the program: the program's line ---------------------------------------
@bad("KeyError", inside=(ms._mlp_loss, 'h = jnp.tanh(x @ params["w1"] + params["b1"])'))
def missing_key_in_params():
    p = _params()
    del p["b1"]
    return secant.grad(ms.opt_sgd_momentum)(p, X53, Y5)


@bad("TypeError", inside=(sci.node_odeint, "return jnp.tanh(w @ y) - 0.1 * y"))
def ode_state_that_does_not_fit():
    return secant.grad(sci.node_odeint)(np.ones((3, 3)))


@bad("ValueError", inside=(ms.train_scan_batches, "w, losses = lax.scan(step, w, (xb, yb))"))
def scan_batches_of_different_counts():
    return secant.grad(ms.train_scan_batches)(W3, np.ones((3, 4, 3)), np.ones((2, 4)))


@bad("TypeError", inside=(sci.gp_hyper_nll, "alpha = sla.cho_solve((c, low), y)"))
def gp_targets_of_the_wrong_length():
    return secant.jit(secant.grad(sci.gp_hyper_nll))(np.zeros(3), np.linspace(-1, 1, 6),
                                                     np.ones(5))


@bad("TypeError", inside=(jd.jd_tree_transpose, "cols = tree_util.tree_transpose(outer, inner, rows)"))
def tree_transpose_of_the_wrong_structure():
    return secant.grad(jd.jd_tree_transpose)([{"a": W3, "b": W3}, {"a": W3, "b": W3}])


# --- awkward inputs JAX accepts: the right value ----------------------------------------------------
@good(lambda g: isinstance(g, dict) and set(g) == {"w", "b"} and g["b"] is None
      and np.allclose(g["w"], 2 * np.ones(3)), "a dict whose None leaf stays None")
def none_leaf_to_grad():
    return secant.grad(lambda p: jnp.sum(2.0 * p["w"]))({"w": W3, "b": None})


@good(lambda v: np.allclose(v, [classroom.cls_dual_numbers(t) for t in (0.1, 0.2)]),
      "the dual-number program at each point")
def vmap_of_dual_numbers():
    return secant.vmap(classroom.cls_dual_numbers)(jnp.array([0.1, 0.2]))
