"""Issue 15, sixth battery (explore15o): the JAX API itself as users combine it, in
tests/user_programs/api_surface.py: lax control flow (cond of pytree operands, switch of
lambdas, while_loop and fori_loop with tuple and dict carries, scan reversed, of a length
without xs, unrolled, over a dict carry, lax.map, associative_scan, cond in scan, fori in
while), custom_jvp/custom_vjp (defjvps, nondiff_argnums, pytree arguments, closures,
stop_gradient in a rule, in scan), transforms called inside a program (linearize,
linear_transpose, vjp/jacfwd with has_aux, jvp of a pytree, value_and_grad with has_aux and
argnums tuples, jacrev of a dict output, hessian of a dict, eval_shape, checkpoint with
static_argnums and a policy, named_scope), vmap's arguments (in_axes dicts, negative axes,
out_axes tuples, axis_size, vmap of vmap, a None leaf, axis_name with psum/pmean/axis_index,
spmd_axis_name), jax.random in vmap and scan, jnp.vectorize/piecewise/select/where, tree_util
(is_leaf, tree_reduce, structure/unflatten, Partial) and lax.reduce/dot_general/conv. Each
runs through grad, hessian, grad∘grad, jit, jit∘grad, vmap, vmap∘grad, jvp and jacrev,
checked against float64 central differences, a Python loop and the eager value
(tests/user_programs/checks.py); and the bad inputs of tests/user_programs/bad_inputs_sixth.py.

The default profile runs every program through one transform, rotating over the transforms;
HYPOTHESIS_PROFILE=thorough runs every pair. `.venv/bin/python bench/user_programs.py --sixth`
prints the whole table. Below: a named regression test for each fix the battery led to.
"""
from user_programs import SIXTH, api_surface, bad_inputs_sixth, checks

PER_PROGRAM = 1

_WHY = []      # (program, its failing transforms, why)
# (program, transform) -> why it fails today; strict: a fix must remove its entry
KNOWN_FAILURES = {(name, t): why for name, ts, why in _WHY for t in ts}
KNOWN_BAD_INPUTS = {}


# a program that takes a hessian itself, under jit by default: its turn (jit∘grad, a third
# derivative, 4.4 CPU s) runs under thorough
TURNS = {"ft_hessian_dict_params": "jit"}
test_program, test_bad_input = checks.battery(SIXTH, checks.SECOND_TRANSFORMS, PER_PROGRAM,
                                              KNOWN_FAILURES, bad_inputs_sixth, KNOWN_BAD_INPUTS,
                                              api_surface.JAX_REFUSES, turns=TURNS)


def test_battery_size():
    assert len(SIXTH) >= 50 and len(bad_inputs_sixth.CASES) >= 12


# --- regression tests of what the battery found ---------------------------------------------------
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import secant  # noqa: E402
import secant.numpy as jnp  # noqa: E402
from secant import lax  # noqa: E402

W = np.array([0.3, -0.2, 0.5])
X = np.linspace(-1.0, 1.0, 15).reshape(5, 3)


_fd = checks.fd      # (float64 central differences)


def _cond_pair_or_one(w):
    return jnp.sum(lax.cond(jnp.sum(w) > 0, lambda a: (a, a), lambda a: a, w))


def test_grad_of_a_cond_whose_branches_differ_in_structure_is_refused(x64):
    """bad input cond_branches_of_different_structures: grad's generated code calls the user's
    lax.cond with a concrete predicate and skipped JAX's check that every branch returns the
    same structure, so grad of sum(cond(p, (a, a), a)) SILENTLY returned [2, 2, 2]; eager, jit
    and vmap refused it (as JAX does). Now grad refuses too, naming the branches."""
    for run in (_cond_pair_or_one, secant.grad(_cond_pair_or_one)):
        with pytest.raises(TypeError, match="same structure"):
            run(W)


def _cond_same(w):
    def yes(a):
        return jnp.sin(a)
    y = lax.cond(jnp.sum(w) > 0, yes, lambda a: a * 2, w)
    return jnp.sum(y ** 2)


def test_grad_of_a_well_formed_cond_is_not_refused(x64):
    """the check above runs on the user's own cond only, not on its derivative's (yes_vjp)"""
    for w in (W, -W):
        want = _fd(lambda v: float(np.sum((np.sin(v) if v.sum() > 0 else v * 2) ** 2)), w)
        np.testing.assert_allclose(secant.grad(_cond_same)(w), want, rtol=1e-6)


def _fori_dict(w, x):
    def body(i, c):
        h = jnp.tanh(x @ c["w"])
        return {"w": c["w"] - 0.1 * (x.T @ h), "loss": c["loss"] + jnp.sum(h ** 2)}
    out = lax.fori_loop(0, 3, body, {"w": w, "loss": 0.0})
    return out["loss"] + jnp.sum(out["w"])


def _scan_dict(w, x):
    def step(c, xt):
        h = jnp.tanh(xt * c["w"] + c["b"])
        return {"w": c["w"] * 0.9 + 0.1 * h, "b": c["b"] + jnp.mean(h)}, h
    c, hs = lax.scan(step, {"w": w, "b": jnp.zeros(())}, x)
    return jnp.sum(c["w"]) + c["b"] + jnp.sum(hs ** 2)


def _cond_dict_operand(w, x):
    def yes(ops):
        a, d = ops
        return jnp.sum(jnp.tanh(d["x"] @ a)) + d["s"]
    return lax.cond(jnp.sum(w) > -9.0, yes, yes, (w, {"x": x, "s": jnp.sum(w ** 2)}))


@pytest.mark.parametrize("f", [_fori_dict, _scan_dict, _cond_dict_operand])
def test_jvp_and_hessian_of_a_dict_carry_with_an_item_that_becomes_differentiated(x64, f):
    """cf_fori_dict_carry, cf_scan_dict_carry (jvp, hessian), cf_cond_pytree_operands
    (hessian): a dict carry or operand whose item starts without a tangent ({"loss": 0.0},
    x under hessian) had its tangent written {'w': w_dot} only, and the body's jvp read
    c_dot['loss']: KeyError. A carry's and an operand's tangent now has every item (zeros)."""
    v = np.array([1.0, -0.5, 0.25])
    _, got = secant.jvp(lambda w: f(w, X), (W,), (v,))
    want = float(_fd(lambda w: float(f(w, X)), W) @ v)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    hv = secant.hessian(lambda w: f(w, X))(W) @ v
    want_hv = (np.asarray(secant.grad(f)(W + 1e-5 * v, X)) -
               np.asarray(secant.grad(f)(W - 1e-5 * v, X))) / 2e-5
    np.testing.assert_allclose(hv, want_hv, rtol=1e-5, atol=1e-7)


def _newton_cube_root(w):
    s = jnp.sum(w * w) + 0.5

    def body(c):
        t, k = c
        return t - (t ** 3 + t - s) / (3 * t ** 2 + 1), k + 1
    t, _ = lax.while_loop(lambda c: c[1] < 6, body, (jnp.ones(()), 0))
    return t + jnp.sum(w)


def test_second_order_of_a_while_loop_closing_over_a_name_s(x64):
    """cf_while_convergence (grad∘grad, hessian): the reverse pass of a while loop recomputes
    each step's carry in `lax.while_loop(lambda s: ..., lambda s: (body(s[0], <closed>), ...))`;
    the lambda's own parameter `s` hid the user's `s` the body closes over, so body got the
    (carry, count) pair for it. The lambda's parameter is now a fresh name."""
    v = np.array([1.0, 0.5, -0.3])
    gg = secant.grad(lambda w: jnp.sum(secant.grad(_newton_cube_root)(w) * v))(W)
    want = (np.asarray(secant.grad(_newton_cube_root)(W + 1e-5 * v)) -
            np.asarray(secant.grad(_newton_cube_root)(W - 1e-5 * v))) / 2e-5
    np.testing.assert_allclose(gg, want, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(secant.hessian(_newton_cube_root)(W) @ v, want, rtol=1e-5,
                               atol=1e-8)


def _jacfwd_aux(w, x):
    def f(v):
        z = jnp.tanh(x @ v)
        return z, jnp.sum(z)
    jac, s = secant.jacfwd(f, has_aux=True)(w)
    return jnp.sum(jac ** 2) + s


def test_jacfwd_with_has_aux_of_a_nested_def_inside_a_transformed_program(x64):
    """ft_jacfwd_has_aux: jacfwd(f, has_aux=True) of a nested def closing over x had no
    source form, so grad's code called it as a dynamic call named `fn`, bound to nothing
    (TypeError: 'object' object is not callable); vmap and jvp refused it. jacfwd with has_aux
    now has a source form (the vmapped jvp with its aux, once), as without."""
    def ref(w):
        z = np.tanh(X @ w)
        jac = (1 - z ** 2)[:, None] * X
        return np.sum(jac ** 2) + np.sum(z)
    want = _fd(ref, W)
    for run in (secant.grad(_jacfwd_aux), secant.jit(secant.grad(_jacfwd_aux))):
        np.testing.assert_allclose(run(W, X), want, rtol=1e-6, atol=1e-9)
    ws = np.stack([W, 2 * W])
    np.testing.assert_allclose(secant.vmap(_jacfwd_aux, in_axes=(0, None))(ws, X),
                               [ref(W), ref(2 * W)], rtol=1e-12)
    jac, aux = secant.jacfwd(lambda v: (jnp.tanh(X @ v), jnp.sum(v)), has_aux=True)(W)
    np.testing.assert_allclose(jac, (1 - np.tanh(X @ W) ** 2)[:, None] * X, rtol=1e-12)
    np.testing.assert_allclose(aux, np.sum(W), rtol=1e-12)


def _jvp_of_a_nested_def(w, x):
    def f(p):
        return jnp.sum(jnp.sin(x @ p["a"]) * p["b"])
    y, dy = secant.jvp(f, ({"a": w, "b": jnp.ones(5)},), ({"a": jnp.ones(3), "b": x[:, 0]},))
    return y + dy ** 2


def test_jvp_of_a_nested_def_inside_a_transformed_program(x64):
    """ft_jvp_pytree: secant.jvp(f, primals, tangents) of a nested def (closing over x) inside
    a program was refused by every transform but jit ("secant cannot see which function f
    is here"); a lambda was read. The def is now lifted as a lambda is, its free locals held
    fixed (zero tangents)."""
    def ref(w):
        y = np.sum(np.sin(X @ w))
        dy = np.sum(np.cos(X @ w) * (X @ np.ones(3))) + np.sum(np.sin(X @ w) * X[:, 0])
        return y + dy ** 2
    want = _fd(ref, W)
    for run in (secant.grad(_jvp_of_a_nested_def),
                secant.jit(secant.grad(_jvp_of_a_nested_def))):
        np.testing.assert_allclose(run(W, X), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.vmap(_jvp_of_a_nested_def, in_axes=(0, None))(
        np.stack([W, -W]), X), [ref(W), ref(-W)], rtol=1e-12)


def _vjp_with_aux(w, x):
    def f(v):
        z = x @ v
        return jnp.tanh(z), {"z": z}
    y, pull, aux = secant.vjp(f, w, has_aux=True)
    (g,) = pull(jnp.ones_like(y))
    return jnp.sum(g * w) + jnp.sum(aux["z"] ** 2)


def test_vjp_with_has_aux_inside_a_transformed_program(x64):
    """ft_vjp_has_aux: `y, pull, aux = vjp(f, w, has_aux=True)` inside a program was refused
    by every transform but jit (no derivative of secant.vjp); without has_aux it was read as
    `y = f(w)` and pull(ct) as vjp_pullback(f, 1)(w, ct). With has_aux now: `y, aux = f(w)`,
    pull of f's first output."""
    def ref(w):
        z = X @ w
        g = X.T @ (1 - np.tanh(z) ** 2)
        return np.sum(g * w) + np.sum(z ** 2)
    want = _fd(ref, W)
    for run in (secant.grad(_vjp_with_aux), secant.jit(secant.grad(_vjp_with_aux))):
        np.testing.assert_allclose(run(W, X), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.vmap(_vjp_with_aux, in_axes=(0, None))(
        np.stack([W, -W]), X), [ref(W), ref(-W)], rtol=1e-12)


def _transposed(w, x):
    f_t = secant.linear_transpose(lambda v: x @ v, jnp.zeros(3))
    (back,) = f_t(jnp.tanh(x @ w))
    return jnp.sum(back * w)


def test_linear_transpose_inside_a_transformed_program(x64):
    """ft_linear_transpose: `f_t = linear_transpose(f, a)` then f_t(ct) inside a program was
    refused by every transform (the transposed function had no rule); it is now read as the
    pullback of f, vjp_pullback(f, 1)(a, ct), as vjp's is."""
    def ref(w):
        return np.sum((X.T @ np.tanh(X @ w)) * w)
    want = _fd(ref, W)
    np.testing.assert_allclose(secant.grad(_transposed)(W, X), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.vmap(_transposed, in_axes=(0, None))(
        np.stack([W, -W]), X), [ref(W), ref(-W)], rtol=1e-12)


def _transposed_sine(w, x):
    f_t = secant.linear_transpose(lambda v: x @ jnp.sin(v), jnp.zeros(3))
    (back,) = f_t(jnp.tanh(x @ w))
    return jnp.sum(back * w)


def _transposed_affine(w, x):
    f_t = secant.linear_transpose(lambda v: x @ v + x[:, 0], jnp.zeros(3))
    (back,) = f_t(jnp.tanh(x @ w))
    return jnp.sum(back * w)


def test_linear_transpose_under_jit(x64):
    """ft_linear_transpose under jit was a TracerArrayConversionError: the check that f is
    linear compared its pullback at zero and at another point, values jit does not have (f
    closes over the traced x). Under jit the check is now structural: f's pullback, traced at
    an unknown input, reads nothing of it (api_extras.py _check_linear_traced); a nonlinear f
    is refused clearly, never passed."""
    def ref(w):
        return np.sum((X.T @ np.tanh(X @ w)) * w)
    np.testing.assert_allclose(secant.jit(_transposed)(W, X), ref(W), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(_transposed_affine)(W, X), ref(W), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(_transposed))(W, X), _fd(ref, W),
                               rtol=1e-6, atol=1e-9)
    for run in (_transposed_sine, secant.jit(_transposed_sine)):
        with pytest.raises(secant.SecantError, match="linear") as info:
            run(W, X)
        assert __file__ in str(info.value)


def test_vmap_takes_spmd_axis_name(x64):
    """vm_spmd_axis_name: vmap(f, spmd_axis_name="data") (a sharding hint in JAX, no change of
    value on one device) was refused by every transform ('unexpected keyword argument')."""
    f = secant.vmap(lambda r: jnp.tanh(r @ W), spmd_axis_name="data")
    np.testing.assert_allclose(f(X), np.tanh(X @ W), rtol=1e-12)
    with pytest.raises(TypeError):
        secant.vmap(jnp.sin, spmd_axis_name=3)


def test_an_unbound_axis_name_is_a_name_error(x64):
    """bad input psum_over_an_axis_no_vmap_binds: JAX raises NameError for a collective over
    an axis name nothing binds; secant raised a ValueError (still one, for older callers)."""
    with pytest.raises(NameError, match="unbound axis name"):
        secant.vmap(lambda r: r / lax.psum(r, "batch"), axis_name="rows")(X)
    with pytest.raises(ValueError):
        secant.jit(lambda w: w * lax.axis_index("i"))(W)


# --- threads: the battery's programs from 4 threads at once -------------------------------------
_THREADED = ("cf_cond_in_scan", "cf_scan_dict_carry", "cr_custom_jvp_defjvps",
             "cr_custom_vjp_pytree", "vm_axis_name_psum", "rn_split_in_vmap",
             "tu_tree_map_is_leaf", "ft_linearize")
_THREAD_TRANSFORMS = ("grad", "jit", "jit∘grad", "vmap")


def _fresh(case):
    """case with its function behind a wrapper made now: a new function object (a fresh
    closure), which secant generates and compiles for anew."""
    import dataclasses
    fn = case.fn

    def fresh(w, x):
        return fn(w, x)
    return dataclasses.replace(case, fn=fresh)


def test_the_programs_from_four_threads_at_once_match_one_thread(x64):
    """Four threads run grad, jit, jit∘grad and vmap of the same programs at once, each in its
    own order, two with the programs' own functions (one function, its derivatives generated
    and its jit caches filled by several threads at once) and two with fresh closures of them:
    no error, and every result equal to the single-threaded one computed afterwards."""
    import threading
    from user_programs import BY_NAME
    cases = [BY_NAME[n] for n in _THREADED]
    pairs = [(c, t) for c in cases for t in _THREAD_TRANSFORMS]
    barrier = threading.Barrier(4, timeout=60)
    results, errors = [dict() for _ in range(4)], []

    def work(k):
        try:
            barrier.wait()
            order = pairs[k * 7 % len(pairs):] + pairs[:k * 7 % len(pairs)]
            for case, t in order:
                run = _fresh(case) if k >= 2 else case
                got, _ = checks.SECOND_TRANSFORMS[t][2](run)
                results[k][case.name, t] = checks.harness.as_np(got)
        except BaseException as e:      # noqa: BLE001 (re-raised below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    if errors:
        raise errors[0]
    for case, t in pairs:
        want, _ = checks.SECOND_TRANSFORMS[t][2](case)
        want = checks.harness.as_np(want)
        for k in range(4):
            got = results[k][case.name, t]
            for g, w in zip(secant.tree_util.tree_leaves(got), secant.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14,
                                           err_msg=f"{case.name} / {t}, thread {k}")
