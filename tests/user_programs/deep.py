"""Issue 15, section 4 (deep15r): the batteries' realistic programs under compositions of depth
three and four, with JAX as the oracle. Each program is a scalar loss of its first argument (an
array or a pytree: dicts, lists, tuples, NamedTuples, registered classes) from the batteries of
tests/user_programs/ (MLPs, RNNs, ODE steps, physics, probabilistic models, helpers calling
helpers, lax.cond/switch/scan/fori/while, custom_jvp/custom_vjp, closures, methods, decorators,
lambdas, transforms called inside); `COMPOSITIONS` runs it through grad^3, grad^4 (along a
line x + t v, t scalar), jacfwd(jacrev), jacrev(jacfwd), hessian, vmap(vmap) with in_axes and
out_axes, vmap(grad(grad)), vmap(hessian), jit(vmap(grad)), grad(jit(vmap)) of a reduced
output, jvp(grad), vjp of vmap, jit(jacfwd(grad)) and grad(grad(checkpoint)).

Each composition is written once, as a user writes it (`import secant as jax`): under JAX in
bench/deep_oracle.py (run with /tmp/jaxenv/bin/python, every `secant` module name being JAX's
module there; it records the outcome of every (program, composition) into deep_expected.py),
under secant in tests/test_deep15r_compositions.py. The tests never import jax."""
import numpy as np
from corpus import harness

import secant as jax
import secant.numpy as jnp

# ~60 programs, by kind (each a name in user_programs.BY_NAME)
PROGRAMS = (
    # models: MLPs, RNNs, pytree parameters
    "namedtuple_loss", "pytree_class_loss", "dataclass_config_loss", "softmax_regression",
    "mixture_density", "flax_like", "checkpointed_mlp", "mod_tied_autoencoder", "pt_layer_norm",
    "fx_apply_variables", "gru_loop",
    # lax control flow
    "cf_cond_pytree_operands", "cf_switch_lambdas", "cf_scan_reverse", "cf_scan_dict_carry",
    "cf_cond_in_scan", "cf_fori_dict_carry", "cf_associative_scan", "cf_while_tuple_carry",
    "cf_scan_unroll", "cf_lax_map",
    # custom rules
    "custom_jvp_user", "custom_vjp_user", "cr_custom_jvp_defjvps", "cr_custom_vjp_pytree",
    "cr_custom_jvp_in_scan", "jd_log1pexp", "sci_custom_jvp_softplus",
    # transforms called inside, scalar programs
    "ft_hvp_inside", "jd_hvp_fwd_over_rev", "ft_grad_inside_vmap_inside", "vm_in_axes_dict",
    "ag_tanh", "tg_scalar_chain", "newton_sqrt", "horner",
    # helpers calling helpers, closures, methods, decorators, lambdas
    "tg_nested_function", "tg_recursion", "py_forwarding_wrappers", "partial_helper",
    "closure_factory", "lambdas", "decorator_wraps", "static_class_property",
    "cls_stacked_decorators", "py_properties", "tg_lambda_map",
    # dict / list / tuple parameters, custom pytrees
    "momentum_dict", "dict_merge", "isinstance_params", "ag_mixture", "generator_sum",
    "tree_map_is_leaf", "jd_pytree_class_arg", "jd_registered_dataclass",
    # physics, ODE steps, science; probabilistic
    "nbody_energy", "lennard_jones", "spring_chain_verlet", "rk4_pendulum", "kalman_loglik",
    "kf_scan", "pde_heat_roll", "rosenbrock_nd", "gp_nll", "bayes_logpost",
    "poisson_regression", "sci_norm_logpdf", "hmc_hamiltonian",
    # RNN, ODE
    "ag_rnn", "neural_ode_scan", "neural_ode_fori", "md_verlet_fori",
    # deep15s (user_programs/deep_more.py): more of the kinds found failing
    "dm_literal_between", "dm_or_operator", "dm_in_helper", "isinst_layers",
    "isinst_dict_values", "cvjp_tuple_arg", "cvjp_dict_nondiff", "map_dict_xs",
    "map_closed_dict", "nested_helpers3",
    # gaps15t (deep_more.py): custom rules of pytrees, generators and loops at fourth order
    "cjvp_dict_arg", "cjvp_logdet_helper", "cvjp_tuple_out", "gen_zip_layers",
    "gen_dict_items", "loop_list_rebuilt",
)

T0 = 0.05                    # where the line x + t v is differentiated
TS = np.array([-0.1, 0.05, 0.2])


def direction(x):
    return harness.tangent_like(x, 11)


def _tree_add(x, t, v):
    """x + t v, leaf by leaf (x a pytree of arrays or a Python float)"""
    return jax.tree_util.tree_map(lambda a, b: a + t * b, x, v)


def along(case):
    """the program as a function of a scalar t: f(x + t v)"""
    f1, x, v = harness.bound(case), case.args[case.argnums], direction(case.args[case.argnums])

    def g(t):
        return f1(_tree_add(x, t, v))
    return g


def batch(case, n=harness.B, seed=3):
    """n perturbed copies of the differentiated argument, stacked on a new leading axis"""
    x = case.args[case.argnums]
    r = np.random.default_rng(seed)
    return harness.stack([x] + [harness._axpy(x, harness.tangent_like(x, int(r.integers(1 << 30))),
                                              0.03 * (b + 1)) for b in range(n - 1)])


def _full_axes(case, axis):
    return tuple(axis if j == case.argnums else None for j in range(len(case.args)))


def _fixed(case):
    return tuple(None if j == case.argnums else a for j, a in enumerate(case.args))


def _with(case, x):
    return tuple(x if j == case.argnums else a for j, a in enumerate(case.args))


def grad3(case):
    return jax.grad(jax.grad(jax.grad(along(case))))(T0)


def grad4(case):
    return jax.grad(jax.grad(jax.grad(jax.grad(along(case)))))(T0)


def jacfwd_jacrev(case):
    return jax.jacfwd(jax.jacrev(harness.bound(case)))(case.args[case.argnums])


def jacrev_jacfwd(case):
    return jax.jacrev(jax.jacfwd(harness.bound(case)))(case.args[case.argnums])


def hessian(case):
    return jax.hessian(harness.bound(case))(case.args[case.argnums])


def vmap_vmap(case):
    xs = harness.stack([batch(case, 2, seed=s) for s in (4, 5, 6)])      # (3, 2, ...)
    return jax.vmap(jax.vmap(harness.bound(case)))(xs)


def vmap_vmap_axes(case):
    """the inner vmap over axis 0 of x with in_axes=(0, None, ...), the outer over axis 1 with
    out_axes=1: out[i, j] = f(xs[i, j])"""
    xs = harness.stack([batch(case, 2, seed=s) for s in (4, 5, 6)])      # (3, 2, ...)
    inner = jax.vmap(case.fn, in_axes=_full_axes(case, 0))
    return jax.vmap(inner, in_axes=_full_axes(case, 1), out_axes=1)(*_with(case, xs))


def vmap_grad_grad(case):
    return jax.vmap(jax.grad(jax.grad(along(case))))(TS)


def vmap_hessian(case):
    return jax.vmap(jax.hessian(harness.bound(case)))(batch(case))


def jit_vmap_grad(case):
    return jax.jit(jax.vmap(jax.grad(harness.bound(case))))(batch(case))


def grad_jit_vmap(case):
    f1 = harness.bound(case)

    def total(xs):
        return jnp.sum(jax.jit(jax.vmap(f1))(xs) * np.array([1.0, -0.5, 0.25]))
    return jax.grad(total)(batch(case))


def jvp_grad(case):
    x = case.args[case.argnums]
    return jax.jvp(jax.grad(harness.bound(case)), (x,), (direction(x),))


def vjp_vmap(case):
    out, pullback = jax.vjp(jax.vmap(harness.bound(case)), batch(case))
    return out, pullback(np.array([0.5, -1.0, 2.0]))


def jit_jacfwd_grad(case):
    return jax.jit(jax.jacfwd(jax.grad(harness.bound(case))))(case.args[case.argnums])


def grad_grad_checkpoint(case):
    return jax.grad(jax.grad(jax.checkpoint(along(case))))(T0)


COMPOSITIONS = {f.__name__: f for f in (
    grad3, grad4, jacfwd_jacrev, jacrev_jacfwd, hessian, vmap_vmap, vmap_vmap_axes,
    vmap_grad_grad, vmap_hessian, jit_vmap_grad, grad_jit_vmap, jvp_grad, vjp_vmap,
    jit_jacfwd_grad, grad_grad_checkpoint)}


def outcome(case, name, runner=None):
    """("value", [(dtype, shape, values)]) of each leaf of the composition's result, or
    ("raises", [exception class names, most derived first]); `runner(thunk)` runs it (the
    oracle's runs it under one jit)"""
    try:
        run = lambda: COMPOSITIONS[name](case)
        value = run() if runner is None else runner(run)
    except Exception as e:                      # noqa: BLE001 -- recorded, then compared
        return ("raises", [c.__name__ for c in type(e).__mro__
                           if c not in (Exception, BaseException, object)])
    leaves = []
    for leaf in jax.tree_util.tree_leaves(value):
        arr = np.asarray(leaf)
        leaves.append((str(arr.dtype), arr.shape, arr.astype(np.float64).tolist()))
    return ("value", leaves)


def judge(expected, got, rtol=1e-7, atol=1e-9):
    """'.' same as JAX, 'j' both refuse; 'R' secant refuses (SecantError) where JAX gives a
    value, 'E' an internal error, 'X' secant gives a value where JAX raises, 'W' a different
    structure, shape, dtype or value; and why."""
    if got[0] == "raises":
        if expected[0] == "raises":
            ok = "SecantError" in got[1] or expected[1][0] in got[1] or got[1][0] in expected[1]
            return ("j", "") if ok else ("E", f"JAX raises {expected[1][0]}, secant {got[1][0]}")
        return ("R" if "SecantError" in got[1] else "E", f"secant raises {got[1][0]}")
    if expected[0] == "raises":
        return "X", f"JAX raises {expected[1][0]}, secant gives a value"
    if len(expected[1]) != len(got[1]):
        return "W", f"{len(got[1])} leaves, JAX {len(expected[1])}"
    for k, ((edt, esh, eva), (gdt, gsh, gva)) in enumerate(zip(expected[1], got[1])):
        if tuple(esh) != tuple(gsh) or edt != gdt:
            return "W", f"leaf {k}: {gdt}{tuple(gsh)}, JAX {edt}{tuple(esh)}"
        e, g = np.asarray(eva, dtype=np.float64), np.asarray(gva, dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        if not np.allclose(g, e, rtol=rtol, atol=atol * scale, equal_nan=True):
            return "W", (f"leaf {k}: {np.array2string(g.ravel()[:4], precision=8)}, JAX "
                         f"{np.array2string(e.ravel()[:4], precision=8)}")
    return ".", ""
