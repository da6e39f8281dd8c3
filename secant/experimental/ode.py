"""secant.experimental.ode.odeint, as jax.experimental.ode.odeint: the adaptive Dormand-Prince
(dopri5) solver of `dy/dt = func(y, t, *args)` returning y at each time of `t` (t[0] is the
time of y0; ys[0] is y0). Steps are chosen by the error estimate against rtol/atol (at most
mxstep per interval, none longer than hmax); outputs between steps come from the 4th-order
interpolant, as JAX's. y0 may be a pytree of arrays, raveled into one array as JAX does.

Reverse mode is JAX's adjoint method (a custom_vjp): the cotangent runs backwards in time with
the augmented system (y, y_bar, t_bar, args_bar), itself solved by odeint; so grad costs one
backward solve, not a derivative of every solver step. The rules are code the transforms read,
so derivatives of the gradient differentiate them, as JAX does (grad of grad); forward mode,
which JAX's odeint refuses, solves the sensitivity equations (jvp, hessian, jacfwd of grad).
Under vmap each example is solved with its own steps, in every composition."""
import functools
import inspect
import math

import secant.numpy as snp
from secant import lax, tree_util
from secant.backends.errors import SecantTypeError, UnsupportedError, where
from secant.custom import _Custom, custom_jvp, custom_vjp, custom_vmap
import secant
from secant.transforms import load_generated

__secant_by_source__ = True      # transforms read odeint like user code (its call of _odeint:
                                 # a custom_vjp, differentiated by its rules)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=snp.inf, hmax=snp.inf):
    if not callable(func):
        raise SecantTypeError(f"odeint expects a function func(y, t, *args), got {func!r}"
                              f"{where()}")
    for arg in tree_util.tree_leaves(args):
        if callable(arg) or isinstance(arg, str):
            raise SecantTypeError(f"The contents of odeint *args must be arrays or scalars, but "
                                  f"got {arg!r}{where()}")
    # the state (an array or a pytree of them) raveled into one array, as JAX's odeint does: its
    # structure, its leaves' shapes and dtypes, and the raveled dtype (static queries)
    leaves = tree_util.tree_leaves(y0)
    shapes = [snp.shape(v) for v in leaves]
    dtypes = [snp.result_type(v) for v in leaves]
    spec = _state_spec(tree_util.tree_structure(y0), shapes, dtypes)
    ys = _odeint(_packed(func, len(args), spec), rtol, atol, mxstep, hmax, _flat((y0,), spec[-1]),
                 snp.asarray(t), args)
    return _unravel(ys, spec)


# a function passed as func that reads the caller's locals is called with them as trailing
# arguments (transformer/desugar.py, JAX's closure_convert): grad flows through *args' rule
odeint.__secant_closure_args__ = 0


def _state_spec(treedef, shapes, dtypes):
    """A state's structure, its leaves' shapes and dtypes, and the dtype of the state raveled
    into one array (their result type), as one hashable value."""
    dtype = snp.result_type(*dtypes) if dtypes else snp.float32
    return treedef, tuple(tuple(s) for s in shapes), tuple(dtypes), dtype


_state_spec.__secant_static_query__ = True      # (of Python values: a constant)


def _unravel(flat, spec):
    """The raveled state `flat` (its last axis: the leaves one after the other) as the pytree
    `spec` describes (odeint's), any leading axes (the times) kept on every leaf."""
    treedef, shapes, dtypes, _ = spec
    lead = snp.shape(flat)[:-1]
    parts = []
    start = 0
    for shape, dtype in zip(shapes, dtypes):
        size = math.prod(shape)
        parts.append(snp.reshape(flat[..., start:start + size], lead + shape).astype(dtype))
        start = start + size
    return tree_util.tree_unflatten(treedef, parts)


def _solve_flat(func, rtol, atol, mxstep, hmax, y0, ts):
    ts = ts.astype(y0.dtype) if snp.issubdtype(y0.dtype, snp.floating) else ts

    def interval(carry, target_t):
        def going(state):
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def step(state):
            i, y, f, t, dt, last_t, coeffs = state
            next_y, next_f, next_y_error, k = _dopri5_step(func, y, f, t, dt)
            next_t = t + dt
            ratio = _error_ratio(next_y_error, rtol, atol, y, next_y)
            new_coeffs = _interpolant(y, next_y, k, dt)
            dt = snp.clip(_optimal_step(dt, ratio), 0.0, hmax)
            accept = ratio <= 1.0
            return (i + 1, snp.where(accept, next_y, y), snp.where(accept, next_f, f),
                    snp.where(accept, next_t, t), dt, snp.where(accept, t, last_t),
                    snp.where(accept, new_coeffs, coeffs))
        y, f, t, dt, last_t, coeffs = carry
        _, y, f, t, dt, last_t, coeffs = lax.while_loop(
            going, step, (0, y, f, t, dt, last_t, coeffs))
        relative = (target_t - last_t) / (t - last_t)
        y_target = _horner(coeffs, relative.astype(coeffs.dtype))
        return (y, f, t, dt, last_t, coeffs), y_target

    f0 = func(y0, ts[0])
    dt = snp.clip(_initial_step(func, ts[0], y0, 4, rtol, atol, f0), 0.0, hmax)
    coeffs = snp.stack([y0] * 5)
    _, ys = lax.scan(interval, (y0, f0, ts[0], dt, ts[0], coeffs), ts[1:])
    return snp.concatenate([y0[None], ys])


# the Dormand-Prince tableau: nodes, stages, 5th-order weights, error weights
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0]
_BETA = [[1 / 5],
         [3 / 40, 9 / 40],
         [44 / 45, -56 / 15, 32 / 9],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
         [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
_C_SOL = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0]
_C_ERROR = [35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0]
_C_MID = [6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2,
          -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
          -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]


def _dopri5_step(func, y0, f0, t0, dt):
    h = dt.astype(f0.dtype)
    k = [f0]
    for alpha, beta in zip(_ALPHA, _BETA):
        yi = y0 + h * sum(b * ki for b, ki in zip(beta, k))
        k.append(func(yi, t0 + dt * alpha))
    k = snp.stack(k)
    y1 = h * snp.dot(snp.asarray(_C_SOL, f0.dtype), k) + y0
    y1_error = h * snp.dot(snp.asarray(_C_ERROR, f0.dtype), k)
    return y1, k[-1], y1_error, k


def _interpolant(y0, y1, k, dt):
    """The coefficients of the 4th-order polynomial through the step (for snp.polyval)."""
    h = dt.astype(y0.dtype)
    y_mid = y0 + h * snp.dot(snp.asarray(_C_MID, y0.dtype), k)
    dy0, dy1 = k[0], k[-1]
    a = -2.0 * h * dy0 + 2.0 * h * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * h * dy0 - 3.0 * h * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * h * dy0 + h * dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return snp.stack([a, b, c, h * dy0, y0])


def _horner(coeffs, x):
    """The polynomial with coefficients coeffs[0] (highest power) .. coeffs[-1] at x."""
    out = coeffs[0]
    for i in range(1, coeffs.shape[0]):
        out = out * x + coeffs[i]
    return out


def _initial_step(func, t0, y0, order, rtol, atol, f0):
    """Hairer, Norsett and Wanner, Solving ODEs I, Sec. II.4 (as JAX's)."""
    scale = atol + snp.abs(y0) * rtol
    d0 = snp.linalg.norm(y0 / scale)
    d1 = snp.linalg.norm(f0 / scale)
    h0 = snp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = func(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = snp.linalg.norm((f1 - f0) / scale) / h0
    h1 = snp.where((d1 <= 1e-15) & (d2 <= 1e-15), snp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / snp.maximum(d1, d2)) ** (1.0 / (order + 1.0)))
    return snp.minimum(100.0 * h0, h1)


def _error_ratio(error, rtol, atol, y0, y1):
    tolerance = atol + rtol * snp.maximum(snp.abs(y0), snp.abs(y1))
    return snp.sqrt(snp.mean((error / tolerance) ** 2))


def _optimal_step(last_step, ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
    dfactor = snp.where(ratio < 1, 1.0, dfactor)
    factor = snp.minimum(ifactor, snp.maximum(ratio ** (-1.0 / order) * safety, dfactor))
    return snp.where(ratio == 0, last_step * ifactor, last_step * factor)


# --- vmap: one solve per example ----------------------------------------------------------------
def _per_example(fn, each=None):
    """`fn` (the solve, its forward pass or its adjoint pass) as a custom_vmap function whose
    batching rule solves each example on its own, with its own adaptive steps (lax.map: a loop
    eagerly, one scan under jit), as JAX's batched while loops do; so vmap of odeint, and vmap of
    its gradient, equal a Python loop over the examples. The solver settings (func, rtol, atol,
    mxstep, hmax) are never batched. `each` (a name in this module, default fn's): what the rule
    calls per example, whose derivative a derivative of the rule (vmap inside a derivative:
    vmap(hessian)) is; for the solve, the custom_vjp function whose rules differentiate it."""
    batched_fn = custom_vmap(fn)
    rule = _BatchedAgain(_per_example_rule(fn, each or fn.__name__))
    rule.__secant_out_batched__ = True      # (every output batched: its caller reads no flags)
    batched_fn.def_vmap(rule)
    return batched_fn


def _per_example_rule(fn, each):
    """The batching rule of fn, as code the transforms read (a derivative of it differentiates
    its body: one call of `each` per example):

        def solve_vmap_rule(axis_size, in_batched, func, rtol, atol, mxstep, hmax, y0, ts,
                            args):
            settings_unbatched(in_batched)
            def one(i):
                return _odeint(func, rtol, atol, mxstep, hmax, example_of(y0, i, in_batched[5]),
                               example_of(ts, i, in_batched[6]), example_of(args, i, in_batched[7]))
            return lax.map(one, snp.arange(axis_size)), True
    """
    params = list(inspect.signature(fn).parameters)
    name = f"{fn.__name__.lstrip('_')}_vmap_rule"
    call = ", ".join(params[:5] + [f"example_of({p}, i, in_batched[{k}])"
                                   for k, p in enumerate(params[5:], 5)])
    source = (f"def {name}(axis_size, in_batched, {', '.join(params)}):\n"
              f"    settings_unbatched(in_batched)\n"
              f"    def one(i):\n"
              f"        return {each}({call})\n"
              f"    return lax.map(one, snp.arange(axis_size)), True\n")
    return load_generated(source, name, globals(), {})


def settings_unbatched(in_batched):
    if any(in_batched[:5]):
        raise UnsupportedError("vmap over odeint's func, rtol, atol, mxstep or hmax is not "
                               "supported; map over y0, t or the extra arguments" + where())


settings_unbatched.__secant_constant__ = True       # (a check of static flags: no derivative)


def example_of(tree, i, batched):
    """Example i of a batched argument of the solve (an unbatched one: itself)."""
    if batched:
        tree = tree_util.tree_map(lambda v: v[i], tree)
    return tree


def _map_examples(fn, settings, arrays, batched, size):
    """fn(*settings, *arrays) once per example of the arrays batched (lax.map), stacked."""
    def one(i):
        return fn(*settings, *[tree_util.tree_map(lambda v: v[i], a) if b else a
                               for a, b in zip(arrays, batched)])
    return lax.map(one, snp.arange(size))


class _BatchedAgain(_Custom):
    """A per-example batching rule that another vmap batches (vmap of vmap of odeint): it runs
    once per example of the outer batch too, so each solve keeps its own steps. A derivative of
    it is that of its body, one call per example of the function whose rules differentiate the
    solve."""

    def generate_rule(self, mode, params, wrt, staged, batch):
        from secant.transforms import example_axes, generate
        if mode != "vmap":
            return generate(self.fun, wrt, mode, staged=staged)
        axes = example_axes(batch, len(params), wrt, "odeint's batching rule")
        rule = self.fun

        def batched(*args):
            args = [a if ax in (None, 0) else
                    tree_util.tree_map(lambda v, ax=ax: snp.moveaxis(v, ax, 0), a)
                    for a, ax in zip(args, axes)]
            size = snp.shape(tree_util.tree_leaves(
                [a for a, ax in zip(args, axes) if ax is not None])[0])[0]
            out = _map_examples(lambda *a: rule(*a)[0], (), args,
                                [ax is not None for ax in axes], size)
            return out, True
        batched.__name__ = f"{rule.__name__}_vmap"
        batched.__signature__ = inspect.signature(rule)
        out = _BatchedAgain(batched)
        out.__secant_out_batched__ = True       # (every output batched)
        return out


def _differentiable_per_example(fn):
    """_per_example(fn), whose derivatives are those of fn's body (fn: a rule of the custom_vjp,
    written in code the transforms read)."""
    batched_fn = _per_example(fn)
    batched_fn.reverse_by_body = True
    return batched_fn


# --- reverse mode: the adjoint method, in code the transforms read -------------------------------
# (so that a derivative of the gradient differentiates the rules, as JAX does: the forward rule
# calls the custom_vjp function itself, and the backward rule's solve is odeint again)
def _solve(func, rtol, atol, mxstep, hmax, y0, ts, args):
    """The solve of the raveled state, func(y, t, args) (_packed)."""
    y0 = snp.asarray(y0)

    def flat_func(y, t):
        return snp.ravel(func(snp.reshape(y, y0.shape), t, args))
    ys = _solve_flat(flat_func, rtol, atol, mxstep, hmax, snp.ravel(y0), ts)
    return snp.reshape(ys, (ts.shape[0],) + y0.shape)


_odeint = custom_vjp(_per_example(_solve, "_odeint"), nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, args)
    return ys, (ys, ts, args)


def _packed(func, k, spec):
    """func(y, t, *args) for k arguments, of the state raveled into one array as odeint solves it
    (`spec`: the state's structure), as a function of (y, t, args) written out (the transforms
    read a call of it where the number of arguments is not known):

        def packed(y, t, args):
            return _flat((func(_unravel(y, spec), t, args[0], args[1]),), spec[-1])

    One per func, k and spec (an unhashable callable object: one per call)."""
    return _packed_source(func, k, spec) if _hashable(func) else \
        _packed_source.__wrapped__(func, k, spec)


def _hashable(obj):
    try:
        hash(obj)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _packed_source(func, k, spec):
    call = f"func({', '.join(['_unravel(y, spec)', 't'] + [f'args[{j}]' for j in range(k)])})"
    source = f"def packed(y, t, args):\n    return _flat(({call},), spec[-1])\n"
    return load_generated(source, "packed", {}, {"func": func, "spec": spec,
                                                 "_unravel": _unravel, "_flat": _flat})


_packed.__secant_constant__ = True      # (a function: no derivative)


def _augmented(func, shape, state, minus_t, args):
    """The system with its adjoint, as one flat state (y, y_bar, t0_bar, args_bar): time runs
    backwards (the solver's t is -t)."""
    n = math.prod(shape)
    y = snp.reshape(state[:n], shape)
    y_bar = snp.reshape(state[n:2 * n], shape)
    y_dot, vjp_fn = secant.vjp(func, y, -minus_t, args)
    y_bar_dot, t_bar_dot, args_bar_dot = vjp_fn(y_bar)
    return _flat((-y_dot, y_bar_dot, t_bar_dot, args_bar_dot), state.dtype)


@functools.lru_cache(maxsize=256)
def _augmented_of(func, shape):
    """_augmented for func (_packed) and the state's shape, as a function of (state, minus_t,
    args) that reads no local of the caller (written out: odeint's func)."""
    source = "def augmented(state, minus_t, args):\n" \
             "    return _augmented(func, shape, state, minus_t, args)\n"
    return load_generated(source, "augmented", {}, {"_augmented": _augmented, "func": func,
                                                    "shape": shape})


_augmented_of.__secant_constant__ = True


def _odeint_bwd(func, rtol, atol, mxstep, hmax, res, g):
    """_odeint_bwd with the augmented state (y, y_bar, t0_bar, args_bar) as one flat array."""
    ys, ts, args = res
    shape = snp.shape(ys)[1:]
    n = snp.size(ys[0])
    augmented = _augmented_of(func, shape)

    def back(carry, step):      # (from time i to time i - 1)
        y_bar, t0_bar, args_bar = carry
        y_i, t_i, t_before, g_i, g_before = step
        t_bar = snp.sum(func(y_i, t_i, args) * g_i)
        t0_bar = t0_bar - t_bar
        state = _flat((y_i, y_bar, t0_bar, args_bar), ys.dtype)
        state = odeint(augmented, state, snp.stack([-t_i, -t_before]), args, rtol=rtol,
                       atol=atol, mxstep=mxstep, hmax=hmax)[1]
        y_bar = snp.reshape(state[n:2 * n], shape) + g_before
        return (y_bar, state[2 * n], state[2 * n + 1:]), t_bar

    start = (g[-1], snp.zeros((), ys.dtype), snp.zeros_like(_flat(args, ys.dtype)))
    # the times from the last to the second, each with the one before (slices, not an index:
    # a derivative of the scan reads no differentiated index, at any order)
    steps = (ys[:0:-1], ts[:0:-1], ts[-2::-1], g[:0:-1], g[-2::-1])
    (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(back, start, steps)
    ts_bar = snp.concatenate([snp.reshape(t0_bar, (1,)), rev_ts_bar[::-1]]).astype(ts.dtype)
    return y_bar, ts_bar, _unflat(args_bar, args)


def _flat(parts, dtype):
    """The leaves of `parts` (a tuple of arrays and pytrees: a list's cotangent comes back a
    tuple in a third derivative) raveled into one array of dtype (empty for no leaves: odeint
    with no extra arguments)."""
    leaves = tree_util.tree_leaves(parts)
    if len(leaves) == 0:
        return snp.zeros(0, dtype)
    return snp.concatenate([snp.ravel(v).astype(dtype) for v in leaves])


def _unflat(flat, like):
    """`like`'s pytree with its leaves read from flat in order (the inverse of _flat)."""
    leaves = tree_util.tree_leaves(like)
    parts = []
    start = 0
    for leaf in leaves:
        size = snp.size(leaf)
        parts.append(snp.reshape(flat[start:start + size], snp.shape(leaf)))
        start = start + size
    return tree_util.tree_unflatten(tree_util.tree_structure(like), parts)


_odeint.defvjp(_differentiable_per_example(_odeint_fwd),
                     _differentiable_per_example(_odeint_bwd))


# --- forward mode (beyond JAX, whose odeint refuses jvp): the sensitivity equations ---------------
def _sensitivity(func, shape, state, t, args):
    """The system with its tangent, as one flat state (y, y_dot): d y_dot/dt = J_y f y_dot +
    J_args f args_dot (args: the pair (args, args_dot))."""
    n = math.prod(shape)
    y = snp.reshape(state[:n], shape)
    y_dot = snp.reshape(state[n:], shape)
    args, args_dot = args
    f, f_dot = secant.jvp(func, (y, t, args), (y_dot, snp.zeros_like(t), args_dot))
    return _flat((f, f_dot), state.dtype)


@functools.lru_cache(maxsize=256)
def _sensitivity_of(func, shape):
    """_sensitivity for func (_packed) and the state's shape, as odeint's func."""
    source = "def sensitivity(state, t, args):\n" \
             "    return _sensitivity(func, shape, state, t, args)\n"
    return load_generated(source, "sensitivity", {}, {"_sensitivity": _sensitivity,
                                                      "func": func, "shape": shape})


_sensitivity_of.__secant_constant__ = True


def _odeint_jvp(func, rtol, atol, mxstep, hmax, primals, tangents):
    """ys and their tangent: y_dot(t) solves the sensitivity equations from y0_dot (less f at
    t0 times t0's tangent), and each output moves with its time's tangent."""
    y0, ts, args = primals
    y0_dot, ts_dot, args_dot = tangents
    y0 = snp.asarray(y0)
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, args)
    args_dot = _unflat(_flat((args_dot,), y0.dtype), args)
    start = _flat((y0, y0_dot - func(y0, ts[0], args) * ts_dot[0]), y0.dtype)
    states = odeint(_sensitivity_of(func, y0.shape), start, ts, (args, args_dot), rtol=rtol,
                    atol=atol, mxstep=mxstep, hmax=hmax)
    n = snp.size(y0)
    moved = lax.map(lambda i: func(ys[i], ts[i], args) * ts_dot[i], snp.arange(ts.shape[0]))
    ys_dot = snp.reshape(states[:, n:], ys.shape) + moved
    return ys, ys_dot


_odeint.jvp_twin = custom_jvp(_odeint.fun, nondiff_argnums=(0, 1, 2, 3, 4))
_odeint.jvp_twin.defjvp(_odeint_jvp)
