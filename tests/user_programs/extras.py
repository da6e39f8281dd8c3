"""Programs that lean on JAX's wider API from inside the function: custom_jvp/custom_vjp rules,
checkpoint, stop_gradient (a TD target), value_and_grad with aux, jacfwd and hessian inside (a
change of variables, a Laplace approximation), lax.map, take_along_axis (REINFORCE), cumulative
discounted returns, a heat-equation stencil with roll, sorting (a trimmed mean), eigh (PCA),
slogdet, interp, assert statements, debug prints, try/except on a static value, generator
expressions, a flax-like module with __call__."""
import dataclasses
import functools

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax

from corpus import Case, vec

X = vec(400, 4, 3)
Y = vec(401, 4)
W3 = vec(402, 3)


@jax.custom_jvp
def safe_log(x):
    return jnp.log(x)


@safe_log.defjvp
def _safe_log_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log(x), t / x


def custom_jvp_user(w, x):
    return jnp.sum(safe_log(1.0 + jnp.exp(x @ w)))


@jax.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -5.0, 5.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def custom_vjp_user(w, x):
    """the clip (at 5) never binds here, so the rule's gradient is the plain one"""
    return jnp.sum(jnp.tanh(clip_gradient(0.1 * (x @ w))))


def checkpointed_mlp(w, x):
    @jax.checkpoint
    def block(h):
        return jnp.tanh(h * w[0]) + jnp.sin(h * w[1])
    h = x @ w
    for _ in range(2):
        h = block(h)
    return jnp.sum(h ** 2)


def td_loss(q_params, obs, rewards):
    """DQN's semi-gradient: the target uses the same parameters behind stop_gradient"""
    q = jnp.tanh(obs @ q_params)
    target = rewards[:-1] + 0.9 * jax.lax.stop_gradient(q[1:])
    return jnp.mean((q[:-1] - target) ** 2)


def td_loss_frozen(q_params, obs, rewards):
    """the reference: the target from parameters frozen at the point differentiated (W3)"""
    q = jnp.tanh(obs @ q_params)
    target = rewards[:-1] + 0.9 * jnp.tanh(obs @ W3)[1:]
    return jnp.mean((q[:-1] - target) ** 2)


def value_and_grad_aux(w, x, y):
    def loss(w):
        pred = x @ w
        return jnp.mean((pred - y) ** 2), pred
    (value, pred), g = jax.value_and_grad(loss, has_aux=True)(w)
    return value + jnp.sum(g ** 2) + 0.1 * jnp.sum(pred)


def change_of_variables(z):
    """log|det J| of a map by jacfwd inside, as in a flow written by hand"""
    def bijector(z):
        return z + 0.3 * jnp.tanh(z[::-1]) * jnp.array([1.0, 2.0])
    J = jax.jacfwd(bijector)(z)
    sign, logdet = jnp.linalg.slogdet(J)
    return jnp.sum(jax.scipy.stats.norm.logpdf(bijector(z))) + logdet


def laplace_logdet(theta, x, y):
    """the Laplace approximation's curvature: the log-determinant of a Hessian inside"""
    def nll(t):
        logits = x @ t
        return jnp.sum(jax.nn.softplus(logits) - y * logits) + 0.5 * jnp.sum(t ** 2)
    H = jax.hessian(nll)(theta)
    return nll(theta) + 0.5 * jnp.linalg.slogdet(H)[1]


LAB = (np.random.default_rng(403).uniform(size=4) > 0.5).astype(np.float64)


def lax_map_rows(w, x):
    return jnp.sum(lax.map(lambda row: jnp.sin(row @ w) * row[0], x))


ACTIONS = np.array([0, 2, 1, 1])


def reinforce(theta, obs, returns):
    logits = obs @ theta
    logp = jax.nn.log_softmax(logits, axis=-1)
    chosen = jnp.take_along_axis(logp, ACTIONS[:, None], axis=1)[:, 0]
    return -jnp.mean(chosen * returns)


def discounted_returns(w, rewards):
    r = rewards * jnp.tanh(w)
    discounts = 0.9 ** jnp.arange(r.shape[0])
    returns = jnp.cumsum((r * discounts)[::-1])[::-1] / discounts
    return jnp.sum(returns ** 2)


def heat_equation(u0, kappa):
    u = u0
    for _ in range(5):
        lap = jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)
        u = u + kappa[0] * lap
    return jnp.sum(u ** 2)


def trimmed_mean(w, x):
    r = jnp.sort(x @ w)
    return jnp.mean(r[1:-1] ** 2)


def pca_energy(x):
    c = x.T @ x / x.shape[0]
    evals, evecs = jnp.linalg.eigh(c + jnp.diag(jnp.array([0.0, 0.5, 1.0])))
    return evals[-1] + jnp.sum(evecs[:, -1] ** 4)


XP = np.linspace(0.0, 1.0, 5)


def interp_curve(fp, xs):
    return jnp.sum(jnp.interp(xs, XP, fp) ** 2)


def with_asserts(w, x):
    assert x.ndim == 2, "x must be a matrix"
    assert w.shape == (x.shape[1],)
    h = x @ w
    return jnp.sum(h ** 2)


def with_debug_print(w, x):
    h = jnp.tanh(x @ w)
    jax.debug.print("h = {}", h)
    return jnp.sum(h)


def try_static(w, x, mode="sum"):
    try:
        reducer = {"sum": jnp.sum, "mean": jnp.mean}[mode]
    except KeyError:
        reducer = jnp.max
    return reducer(jnp.sin(x @ w))


def generator_sum(params, x):
    return sum(jnp.sum(jnp.tanh(x @ p) ** 2) for p in params)


@dataclasses.dataclass
class Dense:
    features: int

    def __call__(self, params, x):
        return x @ params["kernel"][:, : self.features] + params["bias"][: self.features]


def flax_like(params, x):
    return jnp.sum(jax.nn.swish(Dense(2)(params, x)))


CASES = [
    Case("custom_jvp_user", custom_jvp_user, (W3, X)),
    Case("custom_vjp_user", custom_vjp_user, (W3, X)),
    Case("checkpointed_mlp", checkpointed_mlp, (W3, X)),
    Case("td_loss", td_loss, (W3, X, Y), in_axes=(None, 0, 0), ref=td_loss_frozen),
    Case("value_and_grad_aux", value_and_grad_aux, (W3, X, Y)),
    Case("change_of_variables", change_of_variables, (vec(404, 2),)),
    Case("laplace_logdet", laplace_logdet, (W3, X, LAB)),
    Case("lax_map_rows", lax_map_rows, (W3, X)),
    Case("reinforce", reinforce, (vec(405, 3, 3), X, Y)),
    Case("discounted_returns", discounted_returns, (vec(406, 5), vec(407, 5))),
    Case("heat_equation", heat_equation, (vec(408, 6), np.array([0.2]))),
    Case("trimmed_mean", trimmed_mean, (W3, X)),
    Case("pca_energy", pca_energy, (X,)),
    Case("interp_curve", interp_curve, (vec(409, 5), np.array([0.1, 0.33, 0.71, 0.9]))),
    Case("with_asserts", with_asserts, (W3, X)),
    Case("with_debug_print", with_debug_print, (W3, X)),
    Case("try_static", try_static, (W3, X)),
    Case("generator_sum", generator_sum, ([vec(410, 3), vec(411, 3)], X)),
    Case("flax_like", flax_like, ({"kernel": vec(412, 3, 3), "bias": vec(413, 3)}, X)),
]


def nested_jit(w, x):
    """a jitted helper defined inside, closing over the parameters"""
    @jax.jit
    def block(h):
        return jnp.tanh(h * w[0]) + w[1]

    @functools.partial(jax.jit, static_argnums=1)
    def power(h, n):
        return h ** n
    return jnp.sum(power(block(x @ w), 2))


CASES.append(Case("nested_jit", nested_jit, (W3, X)))
