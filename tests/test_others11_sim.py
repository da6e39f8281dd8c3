"""Issue 15, code written by others (eleventh round): samplers, solvers and simulators as
blackjax, diffrax, jaxopt, evosax, brax and gymnax write them on top of JAX. An HMC kernel
(NamedTuple state, velocity Verlet integrator built by a factory, momentum drawn from a split
key, Metropolis accept by lax.cond, inference loop by lax.scan over keys), an adaptive
Bogacki-Shampine solver whose Butcher tableau lives in class attributes and whose PID-free step
controller runs in lax.while_loop (differentiated forward, and in reverse through a bounded
fori_loop), jaxopt's implicit differentiation (custom_vjp around a fixed-point iteration, the
adjoint solved by another fixed point), an OpenES-style evolution strategy (antithetic
population, vmap of the fitness, centred ranks by argsort of argsort), a brax-like physics
state threaded with `.replace` through lax.scan, and a gymnax-like environment (reset/step with
lax.cond auto-reset, vmap over environments). Checked against float64 central differences,
closed forms, NumPy written out, a Python loop for vmap and eager for jit."""
import dataclasses
import functools
import threading
from typing import Any, NamedTuple

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jacfwd, jit, lax, random, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad


# --------------------------------------------------------------------------------------------
# blackjax-like HMC


class HMCState(NamedTuple):
    position: Any
    logdensity: Any
    logdensity_grad: Any


class IntegratorState(NamedTuple):
    position: Any
    momentum: Any
    logdensity: Any
    logdensity_grad: Any


class HMCInfo(NamedTuple):
    acceptance_rate: Any
    is_accepted: Any
    energy: Any


def velocity_verlet(logdensity_fn, inverse_mass):
    value_and_grad = secant.value_and_grad(logdensity_fn)

    def one_step(state, step_size):
        momentum = tree_util.tree_map(lambda m, g: m + 0.5 * step_size * g,
                                      state.momentum, state.logdensity_grad)
        position = tree_util.tree_map(lambda p, m: p + step_size * inverse_mass * m,
                                      state.position, momentum)
        logdensity, logdensity_grad = value_and_grad(position)
        momentum = tree_util.tree_map(lambda m, g: m + 0.5 * step_size * g, momentum, logdensity_grad)
        return IntegratorState(position, momentum, logdensity, logdensity_grad)

    return one_step


def hmc_init(position, logdensity_fn):
    logdensity, logdensity_grad = secant.value_and_grad(logdensity_fn)(position)
    return HMCState(position, logdensity, logdensity_grad)


def build_kernel(integrator=velocity_verlet):
    def kernel(rng_key, state, logdensity_fn, step_size, inverse_mass, num_integration_steps):
        key_momentum, key_accept = random.split(rng_key)
        momentum = random.normal(key_momentum, jnp.shape(state.position)) / jnp.sqrt(inverse_mass)
        step = integrator(logdensity_fn, inverse_mass)
        start = IntegratorState(state.position, momentum, state.logdensity, state.logdensity_grad)
        end = lax.fori_loop(0, num_integration_steps, lambda _, s: step(s, step_size), start)

        def energy(s):
            return -s.logdensity + 0.5 * jnp.sum(inverse_mass * s.momentum ** 2)

        delta = energy(start) - energy(end)
        p_accept = jnp.minimum(1.0, jnp.exp(delta))
        do_accept = random.uniform(key_accept) < p_accept
        proposal = HMCState(end.position, end.logdensity, end.logdensity_grad)
        new_state = lax.cond(do_accept, lambda _: proposal, lambda _: state, operand=None)
        return new_state, HMCInfo(p_accept, do_accept, energy(end))

    return kernel


class SamplingAlgorithm(NamedTuple):
    init: Any
    step: Any


class hmc:
    """blackjax's top-level API: a class whose __new__ returns the init/step pair."""
    init = staticmethod(hmc_init)
    build_kernel = staticmethod(build_kernel)

    def __new__(cls, logdensity_fn, step_size, inverse_mass, num_integration_steps):
        kernel = cls.build_kernel()

        def init_fn(position):
            return cls.init(position, logdensity_fn)

        def step_fn(rng_key, state):
            return kernel(rng_key, state, logdensity_fn, step_size, inverse_mass, num_integration_steps)

        return SamplingAlgorithm(init_fn, step_fn)


def _gauss_logdensity(x, mu=np.asarray([1.0, -1.0]), prec=np.asarray([2.0, 0.5])):
    return -0.5 * jnp.sum(prec * (x - mu) ** 2)


def inference_loop(rng_key, kernel, initial_state, num_samples):
    @jit
    def one_step(state, rng_key):
        state, info = kernel(rng_key, state)
        return state, (state, info)

    keys = random.split(rng_key, num_samples)
    _, (states, infos) = lax.scan(one_step, initial_state, keys)
    return states, infos


def test_hmc_inference_loop_against_a_python_loop(x64):
    algo = hmc(_gauss_logdensity, step_size=0.3, inverse_mass=jnp.ones(2), num_integration_steps=5)
    state = algo.init(jnp.zeros(2))
    states, infos = inference_loop(random.PRNGKey(3), algo.step, state, 40)
    keys = random.split(random.PRNGKey(3), 40)
    s = state
    for i in range(40):
        s, info = algo.step(keys[i], s)
        np.testing.assert_allclose(states.position[i], s.position, rtol=1e-10, atol=1e-12)
        assert bool(infos.is_accepted[i]) == bool(info.is_accepted)
    acc = np.asarray(infos.acceptance_rate)
    assert acc.mean() > 0.5 and np.all((acc >= 0) & (acc <= 1))
    # leapfrog on a Gaussian: the energy error is O(step_size ** 2), and HMC moves
    assert np.unique(np.asarray(states.position)[:, 0]).size > 20


def test_hmc_chains_by_vmap_and_the_gradient_of_a_step(x64):
    algo = hmc(_gauss_logdensity, step_size=0.2, inverse_mass=jnp.asarray([1.0, 2.0]),
               num_integration_steps=4)
    keys = random.split(random.PRNGKey(0), 4)
    positions = np.asarray([[0.0, 0.0], [1.0, 1.0], [-1.0, 0.5], [2.0, -2.0]])

    def step_from(key, position):
        return algo.step(key, algo.init(position))[0].position

    check_vmap(step_from, (keys, positions))

    # the trajectory's end is smooth in the start (accept decision fixed by the key)
    def end_position(position, key):
        s = algo.init(position)
        s, info = algo.step(key, s)
        return jnp.sum(s.position ** 2) + info.energy

    for k in keys[:2]:
        check_grad(end_position, positions[1], k)


# --------------------------------------------------------------------------------------------
# diffrax-like adaptive Runge-Kutta


@dataclasses.dataclass(frozen=True)
class ButcherTableau:
    c: tuple
    a_lower: tuple
    b_sol: tuple
    b_error: tuple


class AbstractRungeKutta:
    tableau: ButcherTableau
    order: int

    def step(self, terms, t0, t1, y0, args):
        dt = t1 - t0
        tab = self.tableau
        ks = [terms(t0, y0, args)]
        for c, a_row in zip(tab.c, tab.a_lower):
            yi = y0 + dt * sum(a * k for a, k in zip(a_row, ks))
            ks.append(terms(t0 + c * dt, yi, args))
        y1 = y0 + dt * sum(b * k for b, k in zip(tab.b_sol, ks))
        y_error = dt * sum(b * k for b, k in zip(tab.b_error, ks))
        return y1, y_error


class Bosh3(AbstractRungeKutta):
    tableau = ButcherTableau(
        c=(1 / 2, 3 / 4, 1.0),
        a_lower=((1 / 2,), (0.0, 3 / 4), (2 / 9, 1 / 3, 4 / 9)),
        b_sol=(2 / 9, 1 / 3, 4 / 9, 0.0),
        b_error=(2 / 9 - 7 / 24, 1 / 3 - 1 / 4, 4 / 9 - 1 / 3, -1 / 8))
    order = 3


class ODETerm:
    def __init__(self, vector_field):
        self.vector_field = vector_field

    def __call__(self, t, y, args):
        return self.vector_field(t, y, args)


class StepSizeController(NamedTuple):
    rtol: float
    atol: float

    def adapt(self, y0, y1, y_error, dt, order):
        scale = self.atol + self.rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
        err = jnp.sqrt(jnp.mean((y_error / scale) ** 2))
        factor = jnp.clip(0.9 * (1.0 / jnp.maximum(err, 1e-10)) ** (1.0 / order), 0.2, 5.0)
        return err <= 1.0, dt * factor


class SolverState(NamedTuple):
    t: Any
    y: Any
    dt: Any
    n_steps: Any


def diffeqsolve(term, solver, t0, t1, dt0, y0, args, controller, max_steps=None):
    def body(state):
        dt = jnp.minimum(state.dt, t1 - state.t)
        y1, y_error = solver.step(term, state.t, state.t + dt, state.y, args)
        accept, dt_next = controller.adapt(state.y, y1, y_error, dt, solver.order)
        t = jnp.where(accept, state.t + dt, state.t)
        y = jnp.where(accept, y1, state.y)
        return SolverState(t, y, dt_next, state.n_steps + 1)

    init = SolverState(jnp.asarray(t0, dtype=float), y0, jnp.asarray(dt0, dtype=float), 0)
    if max_steps is None:
        final = lax.while_loop(lambda s: s.t < t1, body, init)
    else:       # diffrax's RecursiveCheckpointAdjoint: a bounded loop, reverse-differentiable
        final = lax.fori_loop(0, max_steps, lambda _, s: lax.cond(s.t < t1, body, lambda s: s, s),
                              init)
    return final


def _decay(t, y, args):
    k, w = args["k"], args["w"]
    return -k * y + jnp.sin(w * t)


def _exact(k, w, y0, t):
    # y' = -k y + sin(w t): y = (y0 + w / (k^2 + w^2)) e^{-kt} + (k sin wt - w cos wt) / (k^2 + w^2)
    d = k ** 2 + w ** 2
    return (y0 + w / d) * np.exp(-k * t) + (k * np.sin(w * t) - w * np.cos(w * t)) / d


def test_adaptive_bosh3_against_the_closed_form_and_its_sensitivity(x64):
    y0 = jnp.asarray([1.0, 0.5, -0.3])
    args = {"k": jnp.asarray(0.8), "w": jnp.asarray(2.0)}
    solve = functools.partial(diffeqsolve, ODETerm(_decay), Bosh3(), 0.0, 2.0, 0.1,
                              controller=StepSizeController(1e-9, 1e-9))
    sol = solve(y0, args)
    np.testing.assert_allclose(sol.y, _exact(0.8, 2.0, np.asarray(y0), 2.0), rtol=1e-7)
    assert 20 < int(sol.n_steps) < 2000
    np.testing.assert_allclose(jit(solve)(y0, args).y, sol.y, rtol=1e-12)
    # forward sensitivity through the while_loop (jacfwd), against the closed form's
    jac = jacfwd(lambda k: solve(y0, {"k": k, "w": args["w"]}).y)(args["k"])
    eps = 1e-5
    want = (_exact(0.8 + eps, 2.0, np.asarray(y0), 2.0) - _exact(0.8 - eps, 2.0, np.asarray(y0), 2.0)) / (2 * eps)
    np.testing.assert_allclose(jac, want, rtol=1e-5)


def test_bounded_solver_reverse_mode_and_vmap_over_initial_conditions(x64):
    args = {"k": jnp.asarray(0.8), "w": jnp.asarray(2.0)}
    solve = functools.partial(diffeqsolve, ODETerm(_decay), Bosh3(), 0.0, 1.0, 0.05,
                              controller=StepSizeController(1e-6, 1e-6), max_steps=64)

    def loss(args, y0):
        return jnp.sum(solve(y0, args).y ** 2)

    y0 = jnp.asarray([1.0, -0.5])
    g = check_grad(loss, args, y0, rtol=1e-4, atol=1e-6)
    # against the closed form's derivative in k (the adaptive solution is within 1e-5 of it)
    eps = 1e-6
    exact_loss = lambda k: np.sum(_exact(k, 2.0, np.asarray(y0), 1.0) ** 2)     # noqa: E731
    np.testing.assert_allclose(g["k"], (exact_loss(0.8 + eps) - exact_loss(0.8 - eps)) / (2 * eps),
                               rtol=1e-3)
    check_vmap(lambda y: solve(y, args).y, (np.asarray([[1.0, 0.0], [0.5, 2.0], [-1.0, 1.0]]),))


# --------------------------------------------------------------------------------------------
# jaxopt-like implicit differentiation


class OptStep(NamedTuple):
    params: Any
    state: Any


def fixed_point_solve(T, x0, theta, maxiter=200, tol=1e-12):
    def cond(c):
        x, x_prev, i = c
        return (jnp.max(jnp.abs(x - x_prev)) > tol) & (i < maxiter)

    def body(c):
        x, _, i = c
        return T(x, theta), x, i + 1

    x, _, it = lax.while_loop(cond, body, (T(x0, theta), x0, 1))
    return x, it


def custom_fixed_point(T):
    """jaxopt's implicit_diff: x*(theta) = T(x*, theta); its vjp solves u = v + (dT/dx)^T u by
    the same fixed-point iteration, then returns (dT/dtheta)^T u."""
    @secant.custom_vjp
    def solve(x0, theta):
        return fixed_point_solve(T, x0, theta)[0]

    def fwd(x0, theta):
        x = solve(x0, theta)
        return x, (x, theta)

    def bwd(res, v):
        x, theta = res
        _, vjp_x = secant.vjp(lambda x: T(x, theta), x)
        u, _ = fixed_point_solve(lambda u, _: v + vjp_x(u)[0], v, None)
        _, vjp_theta = secant.vjp(lambda th: T(x, th), theta)
        return jnp.zeros_like(x), vjp_theta(u)[0]

    solve.defvjp(fwd, bwd)
    return solve


class FixedPointIteration:
    def __init__(self, fixed_point_fun, implicit_diff=True):
        self.fixed_point_fun = fixed_point_fun
        self._solve = custom_fixed_point(fixed_point_fun) if implicit_diff else \
            (lambda x0, theta: fixed_point_solve(fixed_point_fun, x0, theta)[0])

    def run(self, init_params, hyperparams):
        x = self._solve(init_params, hyperparams)
        return OptStep(params=x, state={"error": jnp.max(jnp.abs(self.fixed_point_fun(x, hyperparams) - x))})


def _ridge_T(w, theta):
    """A gradient step of ridge regression, a contraction: its fixed point is the ridge solution."""
    X, y, lam = theta["X"], theta["y"], theta["lam"]
    g = X.T @ (X @ w - y) + lam * w
    return w - 0.05 * g


def test_implicit_differentiation_of_a_fixed_point_against_the_closed_form(x64):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    solver = FixedPointIteration(_ridge_T)

    def val_loss(lam):
        theta = {"X": jnp.asarray(X), "y": jnp.asarray(y), "lam": lam}
        w = solver.run(jnp.zeros(3), theta).params
        return jnp.sum((X @ w - y) ** 2) + jnp.sum(w)

    def closed(lam):
        w = np.linalg.solve(X.T @ X + lam * np.eye(3), X.T @ y)
        return np.sum((X @ w - y) ** 2) + np.sum(w)

    np.testing.assert_allclose(val_loss(jnp.asarray(0.7)), closed(0.7), rtol=1e-9)
    eps = 1e-6
    want = (closed(0.7 + eps) - closed(0.7 - eps)) / (2 * eps)
    np.testing.assert_allclose(grad(val_loss)(jnp.asarray(0.7)), want, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(val_loss))(jnp.asarray(0.7)), want, rtol=1e-6)
    # per-lambda hypergradients by vmap against a loop
    check_vmap(grad(val_loss), (np.asarray([0.1, 0.7, 2.0]),))
    state = solver.run(jnp.zeros(3), {"X": jnp.asarray(X), "y": jnp.asarray(y), "lam": 0.7}).state
    assert float(state["error"]) < 1e-10


def test_implicit_gradient_in_the_data_matches_unrolled(x64):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(8, 2)), rng.normal(size=8)
    implicit = FixedPointIteration(_ridge_T)

    def loss(X, solver):
        w = solver.run(jnp.zeros(2), {"X": X, "y": jnp.asarray(y), "lam": 0.5}).params
        return jnp.sum(w ** 2)

    g = grad(loss)(jnp.asarray(X), implicit)
    assert_trees_close(g, fd_grad(lambda X: loss(X, implicit), (jnp.asarray(X),)), rtol=1e-5, atol=1e-8)


# --------------------------------------------------------------------------------------------
# evosax-like OpenES


@dataclasses.dataclass(frozen=True)
class ESState:
    mean: Any
    sigma: Any
    best_fitness: Any

    def replace(self, **kw):
        return dataclasses.replace(self, **kw)


tree_util.register_dataclass(ESState, data_fields=["mean", "sigma", "best_fitness"], meta_fields=[])


def centered_rank(fitness):
    ranks = jnp.argsort(jnp.argsort(fitness)).astype(fitness.dtype)
    return ranks / (fitness.shape[0] - 1) - 0.5


def z_score(fitness):
    return (fitness - jnp.mean(fitness)) / (jnp.std(fitness) + 1e-8)


class OpenES:
    def __init__(self, popsize, num_dims, lrate=0.1, shaper=centered_rank):
        self.popsize, self.num_dims, self.lrate, self.shaper = popsize, num_dims, lrate, shaper

    def initialize(self, mean, sigma):
        return ESState(mean=mean, sigma=sigma, best_fitness=jnp.asarray(jnp.inf))

    @functools.partial(jit, static_argnums=(0,))
    def ask(self, rng, state):
        z_plus = random.normal(rng, (self.popsize // 2, self.num_dims))
        z = jnp.concatenate([z_plus, -z_plus])
        return state.mean + state.sigma * z, z

    def tell(self, z, fitness, state):
        shaped = self.shaper(fitness)
        grad_est = z.T @ shaped / (self.popsize * state.sigma)
        return state.replace(mean=state.mean - self.lrate * grad_est,
                             best_fitness=jnp.minimum(state.best_fitness, jnp.min(fitness)))


def _sphere(x):
    return jnp.sum((x - 1.5) ** 2)


def test_open_es_against_numpy_and_it_converges(x64):
    es = OpenES(popsize=16, num_dims=3)
    state = es.initialize(jnp.zeros(3), 0.3)
    rng = random.PRNGKey(0)
    m_np = np.zeros(3)
    for gen in range(60):
        rng, k = random.split(rng)
        x, z = es.ask(k, state)
        fitness = vmap(_sphere)(x)
        np.testing.assert_allclose(fitness, [float(_sphere(xi)) for xi in x], rtol=1e-12)
        state = es.tell(z, fitness, state)
        f_np = np.sum((np.asarray(x) - 1.5) ** 2, axis=1)
        ranks = np.argsort(np.argsort(f_np)) / 15 - 0.5
        m_np = m_np - 0.1 * np.asarray(z).T @ ranks / (16 * 0.3)
    np.testing.assert_allclose(state.mean, m_np, rtol=1e-10, atol=1e-12)
    assert float(_sphere(state.mean)) < 0.05


def test_es_generation_differentiated_with_a_smooth_shaper(x64):
    """With z-scored fitness the ES update is smooth: the mean after two generations,
    differentiated in the start mean and in sigma (the same keys)."""
    es = OpenES(popsize=8, num_dims=2, shaper=z_score)
    keys = random.split(random.PRNGKey(1), 2)

    def run(mean, sigma):
        state = es.initialize(mean, sigma)
        for k in keys:
            z = jnp.concatenate([random.normal(k, (4, 2)), -random.normal(k, (4, 2))])
            x = state.mean + state.sigma * z
            state = es.tell(z, vmap(_sphere)(x), state)
        return jnp.sum(state.mean ** 2)

    check_grad(run, np.asarray([0.2, -0.4]), 0.3)
    check_grad(run, np.asarray([0.2, -0.4]), 0.3, argnum=1)


# --------------------------------------------------------------------------------------------
# brax-like physics state


def struct(cls):
    cls = dataclasses.dataclass(frozen=True)(cls)
    cls.replace = lambda self, **kw: dataclasses.replace(self, **kw)
    tree_util.register_dataclass(cls, data_fields=[f.name for f in dataclasses.fields(cls)], meta_fields=[])
    return cls


@struct
class PipelineState:
    q: Any
    qd: Any


@struct
class EnvState:
    pipeline_state: Any
    obs: Any
    reward: Any
    metrics: dict


class Spring:
    """A chain of masses on springs: a brax Env-like class (reset, step, pipeline_step)."""

    def __init__(self, n, dt=0.05, stiffness=4.0, damping=0.1):
        self.n, self.dt, self.k, self.c = n, dt, stiffness, damping

    def pipeline_step(self, ps, action):
        q_left = jnp.concatenate([jnp.zeros(1), ps.q[:-1]])
        q_right = jnp.concatenate([ps.q[1:], ps.q[-1:]])
        force = self.k * (q_left - 2 * ps.q + q_right) - self.c * ps.qd + action
        qd = ps.qd + self.dt * force
        return ps.replace(q=ps.q + self.dt * qd, qd=qd)

    def reset(self, q0):
        ps = PipelineState(q=q0, qd=jnp.zeros_like(q0))
        return EnvState(ps, self._obs(ps), jnp.asarray(0.0), {"energy": self._energy(ps)})

    def step(self, state, action):
        ps = self.pipeline_step(state.pipeline_state, action)
        reward = -jnp.sum(ps.q ** 2) - 0.01 * jnp.sum(action ** 2)
        metrics = dict(state.metrics)
        metrics.update(energy=self._energy(ps))
        return state.replace(pipeline_state=ps, obs=self._obs(ps), reward=reward, metrics=metrics)

    def _obs(self, ps):
        return jnp.concatenate([ps.q, ps.qd])

    def _energy(self, ps):
        return 0.5 * jnp.sum(ps.qd ** 2) + 0.5 * self.k * jnp.sum(jnp.diff(ps.q) ** 2)


def _rollout(env, q0, actions):
    def body(state, a):
        state = env.step(state, a)
        return state, state.reward
    final, rewards = lax.scan(body, env.reset(q0), actions)
    return jnp.sum(rewards), final


def test_brax_like_rollout_against_numpy_and_differentiated(x64):
    env = Spring(3)
    rng = np.random.default_rng(0)
    q0, actions = rng.normal(size=3) * 0.5, rng.normal(size=(12, 3)) * 0.3
    total, final = jit(functools.partial(_rollout, env))(jnp.asarray(q0), jnp.asarray(actions))
    q, qd, want = q0.copy(), np.zeros(3), 0.0
    for a in actions:
        lap = np.concatenate([[0.0], q[:-1]]) - 2 * q + np.concatenate([q[1:], q[-1:]])
        qd = qd + 0.05 * (4.0 * lap - 0.1 * qd + a)
        q = q + 0.05 * qd
        want += -np.sum(q ** 2) - 0.01 * np.sum(a ** 2)
    np.testing.assert_allclose(total, want, rtol=1e-12)
    np.testing.assert_allclose(final.pipeline_state.q, q, rtol=1e-12)
    assert set(final.metrics) == {"energy"}
    # gradient of the return in the actions (trajectory optimisation) and the start
    check_grad(lambda acts, q0: _rollout(env, q0, acts)[0], actions, q0)
    check_grad(lambda acts, q0: _rollout(env, q0, acts)[0], actions, q0, argnum=1)
    # a batch of environments by vmap, against a loop
    check_vmap(lambda q0: _rollout(env, q0, jnp.asarray(actions))[0], (rng.normal(size=(4, 3)),))


# --------------------------------------------------------------------------------------------
# gymnax-like environment


class EnvParams(NamedTuple):
    max_speed: float = 8.0
    max_torque: float = 2.0
    dt: float = 0.05
    g: float = 10.0
    max_steps: int = 20


class PendulumState(NamedTuple):
    theta: Any
    theta_dot: Any
    time: Any


def angle_normalize(x):
    return ((x + jnp.pi) % (2 * jnp.pi)) - jnp.pi


class Pendulum:
    @property
    def default_params(self):
        return EnvParams()

    def reset_env(self, key, params):
        high = jnp.asarray([jnp.pi, 1.0])
        s = random.uniform(key, (2,), minval=-high, maxval=high)
        state = PendulumState(theta=s[0], theta_dot=s[1], time=0)
        return self.get_obs(state), state

    def step_env(self, key, state, action, params):
        u = jnp.clip(action, -params.max_torque, params.max_torque)
        cost = angle_normalize(state.theta) ** 2 + 0.1 * state.theta_dot ** 2 + 0.001 * u ** 2
        new_dot = state.theta_dot + (3 * params.g / 2 * jnp.sin(state.theta) + 3.0 * u) * params.dt
        new_dot = jnp.clip(new_dot, -params.max_speed, params.max_speed)
        new_theta = state.theta + new_dot * params.dt
        state = PendulumState(new_theta, new_dot, state.time + 1)
        done = state.time >= params.max_steps
        return self.get_obs(state), state, -cost, done

    def step(self, key, state, action, params=None):
        params = self.default_params if params is None else params
        key, key_reset = random.split(key)
        obs_st, state_st, reward, done = self.step_env(key, state, action, params)
        obs_re, state_re = self.reset_env(key_reset, params)
        state = lax.cond(done, lambda: state_re, lambda: state_st)
        obs = lax.cond(done, lambda: obs_re, lambda: obs_st)
        return obs, state, reward, done

    def get_obs(self, state):
        return jnp.asarray([jnp.cos(state.theta), jnp.sin(state.theta), state.theta_dot])


def _policy(params, obs):
    return jnp.tanh(obs @ params["w"] + params["b"]) * 2.0


def _episode_return(env, params, key, n_steps=30):
    key, key_reset = random.split(key)
    obs, state = env.reset_env(key_reset, env.default_params)

    def body(carry, k):
        obs, state = carry
        obs, state, reward, done = env.step(k, state, _policy(params, obs))
        return (obs, state), reward

    _, rewards = lax.scan(body, (obs, state), random.split(key, n_steps))
    return jnp.sum(rewards)


def test_gymnax_like_rollouts_vmapped_over_environments(x64):
    env = Pendulum()
    params = {"w": jnp.asarray([0.3, -0.2, 0.1]), "b": jnp.asarray(0.05)}
    keys = random.split(random.PRNGKey(4), 5)
    returns = check_vmap(lambda k: _episode_return(env, params, k), (keys,))
    assert np.all(np.asarray(returns) < 0)
    # the auto-reset happened (30 steps > max_steps 20): a step by hand crosses it
    _, state = env.reset_env(keys[0], env.default_params)
    state = state._replace(time=19)
    _, after, _, done = env.step(keys[1], state, jnp.asarray(0.0))
    assert bool(done) and int(after.time) == 0


def test_policy_gradient_through_the_simulator(x64):
    env = Pendulum()
    params = {"w": np.asarray([0.3, -0.2, 0.1]), "b": np.asarray(0.05)}
    keys = random.split(random.PRNGKey(4), 3)

    def mean_return(params):
        return jnp.mean(vmap(lambda k: _episode_return(env, params, k, n_steps=15))(keys))

    check_grad(mean_return, params, rtol=1e-4, atol=1e-6)


def test_jitted_rollouts_from_threads(x64):
    """Several threads call the same jitted, vmapped rollout (a data-collection worker pool)."""
    env = Pendulum()
    params = {"w": jnp.asarray([0.3, -0.2, 0.1]), "b": jnp.asarray(0.05)}
    collect = jit(vmap(lambda k: _episode_return(env, params, k, n_steps=10)))
    key_sets = [random.split(random.PRNGKey(i), 3) for i in range(4)]
    want = [np.asarray(collect(ks)) for ks in key_sets]
    got = [None] * 4

    def worker(i):
        got[i] = np.asarray(collect(key_sets[i]))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
