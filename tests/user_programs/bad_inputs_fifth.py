"""Bad inputs a user gives the fifth battery's programs (issue 15, explore15l): integer labels
to grad, a batch of outputs or a (loss, metrics) pair without has_aux, argnums past the
arguments, in_axes that do not fit, a jvp tangent of another dtype or structure, an unhashable
static argument; and bad values reaching the programs as their authors write them (a missing
layer in a dict of dicts, a failing f-string assert, zip(strict=True) of lists of different
lengths, a kernel of the wrong shape, a reshape that does not fit, an unknown enum value, an
item assignment on a FrozenDict, a new attribute on a __slots__ class, float() of a traced
loss under jit). Each must raise the exception type JAX raises there, naming the user's file
and line (the program's line for an error inside it, the call's line, marked `# !`, for API
misuse): judged as the fourth battery's (bad_inputs_fourth.classify). And awkward inputs JAX
accepts, which must give the right value.

bench/user_programs.py --fifth prints these; tests/test_explore15l_programs.py asserts them.
"""
import numpy as np

import secant
import secant.numpy as jnp

from user_programs import bad_inputs, bad_inputs_fourth, habits as hb

HERE = bad_inputs.catalogue.os.path.abspath(__file__)
CASES = {}
bad, good = bad_inputs.registrars(CASES, "explore15l", HERE)


classify = bad_inputs_fourth.classify

W33 = np.eye(3) * 0.5
X63 = np.linspace(-1.0, 1.0, 18).reshape(6, 3)
Y6 = np.linspace(0.0, 1.0, 6)


# --- API misuse: the call's line --------------------------------------------------------------
@bad("TypeError")
def grad_wrt_the_labels():
    return secant.grad(hb.pt_log_softmax_by_hand, argnums=2)(W33, X63, hb.LABELS)  # !


@bad("TypeError")
def grad_of_per_example_outputs():
    return secant.grad(hb._per_example)(W33, X63)  # !


@bad("TypeError")
def grad_of_loss_and_metrics_without_has_aux():
    return secant.grad(hb._metrics)(W33, X63)  # !


@bad("TypeError")
def argnums_past_the_arguments():
    return secant.grad(hb.sci_eigh_sym, argnums=1)(W33)  # !


@bad("ValueError")
def in_axes_longer_than_the_arguments():
    return secant.vmap(hb.pt_layer_norm, in_axes=(0, None, 0))(np.stack([W33, W33]), X63)  # !


@bad("ValueError")
def vmap_sizes_disagree():
    return secant.vmap(hb.pt_transpose_gram)(np.ones((2, 3, 3)), np.ones((3, 6, 3)))  # !


@bad("TypeError")
def jvp_tangent_of_another_dtype():
    return secant.jvp(hb.sci_eigh_sym, (W33,), (W33.astype(np.float32),))  # !


@bad("TypeError")
def jvp_tangent_of_another_structure():
    p = {"w": W33, "b": np.zeros(3)}
    return secant.jvp(lambda q: hb.pt_flatten_ravel(q, X63), (p,), ((W33, np.zeros(3)),))  # !


@bad("ValueError")
def unhashable_static_argument():
    return secant.jit(hb._remat_repeat, static_argnums=(2,))(W33, X63, [2])  # !


# --- bad values reaching the program: the program's line ---------------------------------------
@bad("KeyError", inside=(hb.fx_dict_of_dicts, 'out = _dense(params["dense2"], h)'))
def missing_layer_in_the_params():
    params = {"dense1": {"kernel": np.ones((3, 4)), "bias": np.zeros(4)},
              "Dense_1": {"kernel": np.ones((4, 2)), "bias": np.zeros(2)}}
    return secant.grad(hb.fx_dict_of_dicts)(params, X63)


@bad("AssertionError", inside=(hb.py_fstring_asserts,
                               'assert w.ndim == 2, f"expected a matrix, got shape {w.shape}"'))
def failed_fstring_assert_under_grad():
    return secant.grad(hb.py_fstring_asserts)(np.ones(3), X63)


@bad("ValueError", inside=(hb.py_zip_strict, "for w, b in zip(ws, bs, strict=True):"))
def zip_strict_of_three_layers_and_two_biases():
    return secant.grad(hb.py_zip_strict)([W33, W33, W33], X63)


@bad("TypeError", inside=(hb.pt_transpose_gram, "h = jnp.tanh(x @ w)"))
def kernel_of_the_wrong_shape():
    return secant.jit(secant.grad(hb.pt_transpose_gram))(np.ones((4, 4)), X63)


@bad("TypeError", inside=(hb.pt_swapaxes_attention, "xb = x.reshape(2, 3, 3)"))
def reshape_that_does_not_fit():
    return secant.grad(hb.pt_swapaxes_attention)(W33, np.ones((5, 3)))


def _act_by_name(w, x, name):
    act = hb.Activation(name)
    return jnp.sum(hb._activate(x @ w, act))


@bad("ValueError", inside=(_act_by_name, "act = hb.Activation(name)"))
def unknown_enum_value():
    return secant.grad(_act_by_name)(W33, X63, "relu")


def _overwrite_frozen(params, x):
    variables = hb.FrozenDict({"params": params})
    variables["params"] = params
    return jnp.sum(x @ variables["params"]["kernel"])


@bad("TypeError", inside=(_overwrite_frozen, 'variables["params"] = params'))
def item_assignment_on_a_frozen_dict():
    return secant.grad(_overwrite_frozen)({"kernel": W33}, X63)


def _new_slot(w, x):
    lin = hb.SlotLinear(w, 0.0)
    lin.scale = 2.0
    return jnp.sum(lin(x))


@bad("AttributeError", inside=(_new_slot, "lin.scale = 2.0"))
def new_attribute_on_a_slots_class():
    return secant.grad(_new_slot)(W33, X63)


def _logged_loss(w, x):
    loss = jnp.mean((x @ w) ** 2)
    print(f"loss {float(loss):.3f}")
    return loss


@bad("ConcretizationTypeError", inside=(_logged_loss, 'print(f"loss {float(loss):.3f}")'))
def float_of_a_traced_loss_under_jit():
    return secant.jit(_logged_loss)(W33, X63)


# --- awkward inputs JAX accepts: the right value ----------------------------------------------------
def _seq_ref(params, x):
    for p in params:
        x = x @ p["kernel"] + p["bias"]
        x = x / (1 + np.exp(-x))
    return np.mean(x ** 2)


_LAYERS = ({"kernel": W33, "bias": np.full(3, 0.1)}, {"kernel": W33.T, "bias": np.zeros(3)})


@good(lambda v: np.allclose(v, _seq_ref(_LAYERS, X63)), "the tuple of layers' loss")
def tuple_of_layers_where_a_list_was_written():
    return secant.jit(hb.fx_sequential)(_LAYERS, X63)  # !


@good(lambda g: isinstance(g, hb.FrozenDict) and np.allclose(
    g["dense1"]["bias"], secant.grad(hb.fx_dict_of_dicts)(
        {"dense1": {"kernel": np.ones((3, 4)) * 0.1, "bias": np.zeros(4)},
         "dense2": {"kernel": np.ones((4, 2)) * 0.1, "bias": np.zeros(2)}}, X63)["dense1"]["bias"]),
      "a FrozenDict of grads equal to the dict's")
def frozen_dict_params_to_grad():
    params = hb.FrozenDict({"dense1": {"kernel": np.ones((3, 4)) * 0.1, "bias": np.zeros(4)},
                            "dense2": {"kernel": np.ones((4, 2)) * 0.1, "bias": np.zeros(2)}})
    return secant.grad(hb.fx_dict_of_dicts)(params, X63)  # !


@good(lambda g: isinstance(g, list) and len(g) == 2 and np.allclose(
    np.asarray(g, dtype=float), secant.grad(hb.sci_rk4_loop)(np.array([2.0, 0.3]))),
      "a list of two grads, the array's")
def list_of_python_floats_to_grad():
    return secant.grad(hb.sci_rk4_loop)([2.0, 0.3])  # !
