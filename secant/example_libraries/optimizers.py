"""secant.example_libraries.optimizers: first-order optimizers as (init_fun, update_fun,
get_params) triples over pytrees of parameters, with the interface of
jax.example_libraries.optimizers.

An optimizer is written for one array (`@optimizer` over `init(x0) -> state`, `update(i, g,
state) -> state`, `get_params(state) -> x`) and the decorator maps it over every leaf of a
parameter pytree; the whole state is an `OptimizerState` (a pytree: it passes through jit, and
`pack_optimizer_state` / `unpack_optimizer_state` turn it into nested Python containers and back,
for pickling). Step sizes are numbers or schedules (functions of the step number `i`).

The module sets `__secant_by_source__`: the transforms read its functions as user code.
"""
import functools
import typing
from collections import namedtuple

import secant.numpy as snp
from secant import tree_util

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["OptimizerState", "Optimizer", "JoinPoint", "optimizer", "sgd", "momentum",
           "nesterov", "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3",
           "constant", "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads",
           "pack_optimizer_state", "unpack_optimizer_state"]

# packed_state: one list of state leaves per parameter leaf; tree_def: the parameters'
# structure; subtree_defs: one state structure per parameter leaf
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda meta, children: OptimizerState(children[0], meta[0], meta[1]))

Optimizer = namedtuple("Optimizer", ["init_fn", "update_fn", "params_fn"])

# the type aliases of jax.example_libraries.optimizers' signatures (for annotations)
Params = typing.Any        # arbitrary nests of arrays
State = typing.Any         # an optimizer's internal state
Updates = Params           # gradients: the parameters' structure
Step = int
InitFn = typing.Callable[[Params], OptimizerState]
UpdateFn = typing.Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = typing.Callable[[OptimizerState], Params]
Schedule = typing.Callable[[Step], float]


def _structure(opt_state):
    """(tree_def, subtree_defs) of a state: static, whatever its leaves depend on (grad
    through an update step reads them as constants)."""
    return opt_state.tree_def, opt_state.subtree_defs


def _state_def(states_flat, tree, subtrees):
    """The structure of OptimizerState(states_flat, tree, subtrees): static."""
    return tree_util.tree_structure(OptimizerState(states_flat, tree, subtrees))


def _state(states_flat, tree, subtrees):
    """OptimizerState(states_flat, tree, subtrees), built through tree_unflatten so that the
    transforms follow its leaves."""
    return tree_util.tree_unflatten(_state_def(states_flat, tree, subtrees),
                                    tree_util.tree_leaves(states_flat))


_structure.__secant_structure__ = _state_def.__secant_structure__ = True


def _flatten_states(states):
    return [tree_util.tree_leaves(s) for s in states], _subtrees(states)


def _tree_def(tree):
    """tree_util.tree_structure(tree), static for the transforms (a batched tree has its
    examples' structure)."""
    return tree_util.tree_structure(tree)


def _subtrees(states):
    """The structure of each state: static."""
    return [tree_util.tree_structure(s) for s in states]


_subtrees.__secant_structure__ = _tree_def.__secant_structure__ = True


def optimizer(opt_maker):
    """Turns a maker of (init, update, get_params) for one array into a maker of the same
    triple for pytrees of arrays (an `Optimizer`), its state an `OptimizerState`."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat = tree_util.tree_leaves(x0_tree)
            tree = _tree_def(x0_tree)
            states = [init(x0) for x0 in x0_flat]
            states_flat = [tree_util.tree_leaves(s) for s in states]
            subtrees = _subtrees(states)
            return _state(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat = opt_state[0]
            tree, subtrees = _structure(opt_state)
            grad_flat = tree_util.tree_leaves(grad_tree)
            tree2 = _tree_def(grad_tree)
            if tree2 != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did "
                                "not match the parameter tree structure with which it was "
                                f"initialized: parameter tree {tree} and grad tree {tree2}.")
            states = [tree_util.tree_unflatten(s, leaves)
                      for s, leaves in zip(subtrees, states_flat)]
            new_states = [update(i, g, state) for g, state in zip(grad_flat, states)]
            new_states_flat = [tree_util.tree_leaves(s) for s in new_states]
            subtrees2 = _subtrees(new_states)
            for subtree, subtree2 in zip(subtrees, subtrees2):
                if subtree2 != subtree:
                    raise TypeError("optimizer update function produced an output structure "
                                    "that did not match its input structure: input "
                                    f"{subtree} and output {subtree2}.")
            return _state(new_states_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat = opt_state[0]
            tree, subtrees = _structure(opt_state)
            states = [tree_util.tree_unflatten(s, leaves)
                      for s, leaves in zip(subtrees, states_flat)]
            return tree_util.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# --- optimizers ---------------------------------------------------------------------------------

def first(state):
    """The parameters of a state (parameters, statistics...)."""
    return state[0]


def with_two_moments(x0):
    """A state of parameters and two moment estimates, both zero."""
    return x0, snp.zeros_like(x0), snp.zeros_like(x0)


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: x <- x - step_size(i) * g."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x
    return init, update, get_params


@optimizer
def momentum(step_size, mass):
    """Heavy-ball momentum: v <- mass * v + g; x <- x - step_size(i) * v."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, snp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        x = x - step_size(i) * velocity
        return x, velocity

    return init, update, first


@optimizer
def nesterov(step_size, mass):
    """Nesterov momentum: v <- mass * v + g; x <- x - step_size(i) * (mass * v + g)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, snp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        x = x - step_size(i) * (mass * velocity + g)
        return x, velocity

    return init, update, first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum: g is scaled by 1/sqrt(sum of g**2 so far) (0 where that is 0)."""
    step_size = make_schedule(step_size)

    init = with_two_moments

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + snp.square(g)
        g_sq_inv_sqrt = snp.where(g_sq > 0, 1. / snp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        return x, g_sq, m

    return init, update, first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: a <- gamma * a + (1 - gamma) * g**2; x <- x - step_size(i) * g / sqrt(a + eps)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, snp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + snp.square(g) * (1. - gamma)
        x = x - step_size(i) * g / snp.sqrt(avg_sq_grad + eps)
        return x, avg_sq_grad

    return init, update, first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum: m <- momentum * m + step_size(i) * g / sqrt(a + eps); x <- x - m."""
    step_size = make_schedule(step_size)

    init = with_two_moments

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + snp.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / snp.sqrt(avg_sq_grad + eps)
        x = x - mom
        return x, avg_sq_grad, mom

    return init, update, first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba), with bias-corrected moment estimates."""
    step_size = make_schedule(step_size)

    init = with_two_moments

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * snp.square(g) + b2 * v
        mhat = m / (1 - snp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - snp.asarray(b2, m.dtype) ** (i + 1))
        x = x - step_size(i) * mhat / (snp.sqrt(vhat) + eps)
        return x, m, v

    return init, update, first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm (u <- max(b2 * u, |g|))."""
    step_size = make_schedule(step_size)

    init = with_two_moments

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = snp.maximum(b2 * u, snp.abs(g))
        x = x - (step_size(i) / (1 - snp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, first


class _Shape:
    """sm3's record of a parameter's shape: static pytree data (no leaves), so the state passes
    through jit and get_params can reshape under it (JAX keeps the ints as leaves)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def __eq__(self, other):
        return isinstance(other, _Shape) and other.shape == self.shape

    def __hash__(self):
        return hash(self.shape)

    def __repr__(self):
        return f"_Shape({self.shape})"


tree_util.register_pytree_node(_Shape, lambda s: ((), s.shape), lambda shape, _: _Shape(shape))


def _along(ndim, v, axis):
    """v (1-d) as an array of `ndim` axes, its entries along `axis`."""
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return snp.reshape(v, tuple(shape))


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al. 2019): one accumulator per axis and index, their minimum standing in
    for Adagrad's per-entry sum of squares; with momentum."""
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = _Shape(snp.shape(x0))
        x0 = snp.atleast_1d(x0)
        vs = [snp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, snp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        g = snp.reshape(g, x.shape)
        accum = _along(x.ndim, vs[0], 0)
        for axis in range(1, x.ndim):
            accum = snp.minimum(accum, _along(x.ndim, vs[axis], axis))
        accum = accum + snp.square(g)
        accum_inv_sqrt = snp.where(accum > 0, 1. / snp.sqrt(accum), 0)
        m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [snp.max(accum, axis=tuple(a for a in range(x.ndim) if a != axis))
              for axis in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return snp.reshape(x, x_shape.shape)
    return init, update, get_params


# --- learning-rate schedules --------------------------------------------------------------------
def constant(step_size):
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * snp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    def schedule(step_num):
        step_num = snp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """values[0] up to boundaries[0], values[1] up to boundaries[1], ..., values[-1] after."""
    boundaries = snp.array(boundaries)
    values = snp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[snp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule):
    """A schedule as it is; a number as the constant schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if snp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# --- utilities ------------------------------------------------------------------------------
def l2_norm(tree):
    """The l2 norm of all the leaves of `tree` together."""
    leaves = tree_util.tree_leaves(tree)
    total = 0.
    for x in leaves:
        total = total + snp.vdot(x, x)
    return snp.sqrt(total)


def clip_grads(grad_tree, max_norm):
    """The gradients scaled so their l2 norm is at most max_norm."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(
        lambda g: snp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a parameter leaf's own state subtree hangs in an unpacked optimizer state."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An OptimizerState as nested Python containers (JoinPoints at the parameter leaves), for
    pickling; pack_optimizer_state inverts it."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tree_util.tree_unflatten(s, leaves)
                for s, leaves in zip(subtree_defs, states_flat)]
    return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """The OptimizerState of a pytree made by unpack_optimizer_state."""
    sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state expects a pytree from unpack_optimizer_state "
                        "(JoinPoint objects at its leaves)")
    states_flat, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
