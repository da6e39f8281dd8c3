"""Bad inputs a user gives the fourth battery's programs (issue 15, explore15k): grad of an
integer argument, a vector output or a (loss, aux) pair without has_aux, argnums past the
arguments, a string or None for an array, in_axes that do not fit, batches of different
sizes, a jvp tangent of another dtype, an unhashable static argument; and bad values
reaching the programs (a missing key, mismatched shapes, a failing shape assert, a `match`
with no case, a NumPy table indexed by a traced index under jit, a Python `if` on a traced
value under jit). Each must raise the exception type JAX raises there, naming the user's file
and line (the program's line for an error inside it, the call's line, marked `# !`, for API
misuse): judged as the second battery's (bad_inputs.classify). And awkward inputs JAX
accepts, which must give the right value.

bench/user_programs.py --fourth prints these; tests/test_explore15k_programs.py asserts them.
"""
import traceback

import numpy as np

import secant
import secant.numpy as jnp

from user_programs import bad_inputs, domains as dm

HERE = bad_inputs.catalogue.os.path.abspath(__file__)
CASES = {}
bad, good = bad_inputs.registrars(CASES, "explore15k", HERE)


def classify(case):
    """bad_inputs.classify, where a Python error raised in the user's own code as it runs (jit
    traces the program itself) also names the line by its traceback's innermost frame, as
    Python and JAX show it."""
    outcome, detail = bad_inputs.classify(case)
    if outcome != "noline":
        return outcome, detail
    try:
        case.run()
    except Exception as e:                  # noqa: BLE001 (the outcome above)
        frames = traceback.extract_tb(e.__traceback__)
        where = (frames[-1].filename, frames[-1].lineno) if frames else None
        expected = bad_inputs.catalogue.exc_type(case.expect)
        if expected is not None and isinstance(e, expected) and where == (case.file, case.line):
            return "correct", ""
    return outcome, detail

W3 = np.array([0.3, -0.2, 0.5])
W33 = np.eye(3) * 0.5
X63 = np.linspace(-1.0, 1.0, 18).reshape(6, 3)
Y6 = np.linspace(0.0, 1.0, 6)


# --- API misuse: the call's line --------------------------------------------------------------
@bad("TypeError")
def grad_wrt_the_actions():
    return secant.grad(dm.rl_reinforce, argnums=2)(W33, dm.OBS, dm.ACTIONS, dm.RETURNS)  # !


@bad("TypeError", inside=(dm.forward_kinematics, "return jnp.stack([x, y])"))
def grad_of_the_arm_position():
    return secant.grad(dm.forward_kinematics)(W3)  # !


@bad("TypeError")
def grad_of_loss_and_state_without_has_aux():
    state = {"mean": np.zeros(4), "var": np.ones(4)}
    params = {"w": np.ones((3, 4)) * 0.1, "gamma": np.ones(4), "beta": np.zeros(4)}
    return secant.grad(dm._bn_loss)(params, state, X63)  # !


@bad("TypeError")
def argnums_past_the_arguments():
    return secant.grad(dm.interp_query, argnums=1)(dm.XQ)  # !


@bad("TypeError")
def string_spots_to_grad():
    return secant.grad(dm.fin_put_erf)("100.0")  # !


@bad("TypeError", inside=(dm.forward_kinematics, "for length, t in zip(LINKS, theta):"))
def none_to_jit():
    return secant.jit(dm.rb_fk_3link)(None)


@bad("TypeError", inside=(dm.forward_kinematics, "for length, t in zip(LINKS, theta):"))
def none_to_grad():
    return secant.grad(dm.rb_fk_3link)(None)


@bad("ValueError")
def in_axes_longer_than_the_arguments():
    return secant.vmap(dm.pde_heat_roll, in_axes=(0, 0))(np.ones((2, 12)))  # !


@bad("ValueError")
def in_axes_past_the_rank():
    return secant.vmap(dm.sig_frames, in_axes=1)(np.ones(16))  # !


@bad("ValueError")
def vmap_sizes_disagree():
    return secant.vmap(dm.loss_huber_where, in_axes=(0, 0, None))(np.ones((2, 3)),  # !
                                                                   np.ones((3, 6, 3)), Y6)


@bad("TypeError")
def jvp_tangent_of_another_dtype():
    return secant.jvp(dm.rb_fk_3link, (W3,), (W3.astype(np.float32),))  # !


@bad("ValueError")
def unhashable_static_argument():
    return dm._rollout(X63, W33, n_steps=jnp.array([3]))  # !


# --- bad values reaching the program: the program's line ---------------------------------------
@bad("KeyError", inside=(dm.mdn_nll, 'out = h @ params["w2"]'))
def missing_key_in_the_mdn_params():
    return secant.grad(dm.mdn_nll)({"w1": np.ones((3, 4)), "W2": np.ones((4, 9))}, X63, Y6)


@bad("TypeError", inside=(dm.gn_segment_sum, "msgs = jnp.tanh(h[SENDERS] @ w)"))
def message_weights_of_the_wrong_shape():
    return secant.grad(dm.gn_segment_sum)(np.ones((4, 4)), dm.NODES)


@bad("TypeError", inside=(dm.rl_gae, "deltas = rewards + gamma * next_values * (1.0 - dones) - values"))
def dones_of_another_length():
    return secant.jit(secant.grad(dm.rl_gae))(np.ones(6), np.ones(6), np.zeros(5))


@bad("AssertionError", inside=(dm.st_assert_shapes, 'assert x.shape == (6, 3), f"x has shape {x.shape}"'))
def failed_shape_assert_under_grad():
    return secant.grad(dm.st_assert_shapes)(W3, np.ones((5, 3)), np.ones(5))


@bad("ValueError", inside=(dm.st_match, 'raise ValueError("bad shape")'))
def no_case_matches():
    return secant.vmap(secant.grad(dm.st_match), in_axes=(0, None))(np.ones((2, 3, 3)),
                                                                     np.ones((6, 4)))


def _table_lookup(xq):
    i = jnp.searchsorted(dm.XP, xq)
    return jnp.sum(dm.FP[i] * xq)


@bad("TracerArrayConversionError", inside=(_table_lookup, "return jnp.sum(dm.FP[i] * xq)"))
def numpy_table_indexed_under_jit():
    return secant.jit(_table_lookup)(dm.XQ)


def _in_band(x):
    if -1.0 < jnp.sum(x) < 1.0:
        return jnp.sum(x ** 2)
    return jnp.sum(x)


@bad("ConcretizationTypeError", inside=(_in_band, "if -1.0 < jnp.sum(x) < 1.0:"))
def chained_comparison_of_a_traced_value():
    return secant.jit(_in_band)(W3)


# --- awkward inputs JAX accepts: the right value ----------------------------------------------------
@good(lambda g: isinstance(g, dict) and set(g) == {"w", "b"}
      and np.allclose(g["b"], 2 * np.mean(X63 @ W3 + 0.5 - Y6)), "grads of both merged keys")
def dict_merge_overriding_a_default():
    return secant.grad(dm.st_dict_merge)({"w": W3, "b": 0.5}, X63, Y6)


@good(lambda v: np.allclose(v, np.mean((np.tanh(X63 @ W33) - X63) ** 2)),
      "the partial's loss value")
def tree_partial_through_jit():
    loss_fn = secant.tree_util.Partial(dm._mse_to, X63)
    return secant.jit(dm._apply_loss)(loss_fn, W33, X63)
