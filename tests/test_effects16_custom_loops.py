"""custom_vjp / custom_jvp functions called in Python loops (issue 15, effects16): the body's
Python side effects and the user's fwd rule run as often as in JAX (counted with JAX 0.10.2 on
the same programs), and the values are bwd's (a rule twice the true derivative, so a
derivative that lost the rule shows in the value).

A call in a loop's forward pass runs as written (the body once); the loop's reverse pass
replays each iteration and calls fwd there with the body's replay, without its effects, for
the residuals bwd reads (ad/reverse.py forward_pair): the body once per call and fwd once, as
in JAX. Before, the reverse pass called f's vjp, which ran fwd with the body in it again: the
body ran twice per call."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import custom_jvp, custom_vjp, grad, jacrev, vjp, vmap

X = np.array([0.3, -0.5, 0.7])
LOG, FWD, RULE = [], [], []


@custom_vjp
def f(x):
    LOG.append("body")
    return jnp.sin(x)


def f_fwd(x):
    FWD.append("fwd")
    return f(x), x


def f_bwd(x, g):            # twice the true derivative
    return (2.0 * jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)


@custom_jvp
def h(x):
    LOG.append("body")
    return jnp.sin(x)


@h.defjvp
def _h_jvp(primals, tangents):  # twice the true derivative
    RULE.append("jvp")
    (x,), (t,) = primals, tangents
    return h(x), 2.0 * jnp.cos(x) * t


def for_loop(x):
    y = x
    for i in range(3):
        y = f(y) * 1.5
    return jnp.sum(y)


def while_loop(x):
    y = x
    k = 0
    while k < 3:
        y = f(y) * 1.5
        k += 1
    return jnp.sum(y)


def nested_loops(x):
    y = x
    for i in range(2):
        for j in range(2):
            y = f(y) * 1.5 + 0.1 * y
    return jnp.sum(y)


def two_calls(x):
    y = x
    for i in range(3):
        y = f(y) + f(2.0 * y)
    return jnp.sum(y)


def _looped(x):
    y = x
    for i in range(3):
        y = f(y) * 1.5
    return y


def in_a_helper(x):
    return jnp.sum(_looped(x) * x)


def jvp_loop(x):
    y = x
    for i in range(3):
        y = h(y) * 1.5
    return jnp.sum(y)


# (the step y -> next y in NumPy, and its derivative with f's derivative bwd's 2 cos)
STEPS = {
    "for_loop": (3, lambda y: 1.5 * np.sin(y), lambda y: 3.0 * np.cos(y)),
    "while_loop": (3, lambda y: 1.5 * np.sin(y), lambda y: 3.0 * np.cos(y)),
    "jvp_loop": (3, lambda y: 1.5 * np.sin(y), lambda y: 3.0 * np.cos(y)),
    "nested_loops": (4, lambda y: 1.5 * np.sin(y) + 0.1 * y,
                     lambda y: 3.0 * np.cos(y) + 0.1),
    "two_calls": (3, lambda y: np.sin(y) + np.sin(2 * y),
                  lambda y: 2.0 * np.cos(y) + 4.0 * np.cos(2 * y)),
}
FUNCTIONS = {"for_loop": for_loop, "while_loop": while_loop, "nested_loops": nested_loops,
             "two_calls": two_calls, "in_a_helper": in_a_helper, "jvp_loop": jvp_loop}


def _rules_gradient(name, x):
    """The gradient the custom rule gives (bwd's / the jvp rule's 2 cos for f's derivative)."""
    if name == "in_a_helper":
        y, d = x, np.ones_like(x)
        for _ in range(3):
            y, d = 1.5 * np.sin(y), d * 3.0 * np.cos(y)
        return y + x * d
    n, step, dstep = STEPS[name]
    y, d = x, np.ones_like(x)
    for _ in range(n):
        y, d = step(y), d * dstep(y)
    return d


def _counted(name, transform):
    fun = FUNCTIONS[name]
    if transform == "vmap-grad":
        g, x = vmap(grad(fun)), np.stack([X, X * 0.5])
    elif transform == "grad-grad":
        inner = grad(fun)
        g, x = grad(lambda x: jnp.sum(inner(x))), X
    else:
        g = {"grad": grad(fun), "jacrev": jacrev(fun),
             "vjp": lambda x: vjp(fun, x)[1](1.0)[0]}[transform]
        x = X
    g(jnp.asarray(x) * 0.9)         # (a first call: what a first call traces is not counted)
    LOG.clear(), FWD.clear(), RULE.clear()
    got = np.asarray(g(jnp.asarray(x)))
    return (len(LOG), len(FWD), len(RULE)), got


# (body, fwd, jvp rule) runs, as JAX 0.10.2 runs them (jax.custom_vjp / custom_jvp, same code)
FIRST_ORDER = {"for_loop": (3, 3, 0), "while_loop": (3, 3, 0), "nested_loops": (4, 4, 0),
               "two_calls": (6, 6, 0), "in_a_helper": (3, 3, 0), "jvp_loop": (3, 0, 3)}


@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev", "vmap-grad"])
@pytest.mark.parametrize("name", sorted(FIRST_ORDER))
def test_a_custom_function_in_a_loop_runs_as_often_as_in_jax(x64, name, transform):
    counts, got = _counted(name, transform)
    want = _rules_gradient(name, X)
    if transform == "vmap-grad":
        want = np.stack([want, _rules_gradient(name, X * 0.5)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert counts == FIRST_ORDER[name]


def _rules_second_derivative(x):
    """d/dx of for_loop's rule gradient prod_k 3 cos(y_k), the rule's 3 cos(y) read as code
    again (its derivative -3 sin(y)) and each dy_k/dx by the rule."""
    ys, d = [], [np.ones_like(x)]
    y = x
    for _ in range(3):
        ys.append(y)
        d.append(d[-1] * 3.0 * np.cos(y))
        y = 1.5 * np.sin(y)
    total = np.zeros_like(x)
    for j in range(3):
        others = np.prod([3.0 * np.cos(ys[k]) for k in range(3) if k != j], axis=0)
        total += -3.0 * np.sin(ys[j]) * d[j] * others
    return total


@pytest.mark.parametrize("name, counts", [
    ("for_loop", (3, 9, 0)),        # JAX: (3, 6, 0): secant's vjp of fwd runs it once more
    ("while_loop", (3, 9, 0)),
    ("in_a_helper", (3, 12, 0)),    # JAX: (3, 6, 0)
    ("jvp_loop", (3, 0, 3)),        # JAX: (3, 0, 6)
])
def test_grad_of_grad_runs_the_body_once_per_call(x64, name, counts):
    """The body once per call, as in JAX (it ran 9 to 12 times); fwd still runs more often
    than in JAX (the outer derivative's vjp of fwd recomputes it)."""
    got_counts, got = _counted(name, "grad-grad")
    if name in ("for_loop", "while_loop", "jvp_loop"):
        np.testing.assert_allclose(got, _rules_second_derivative(X), rtol=1e-10)
        np.testing.assert_allclose(got[:1], [-139.702708], rtol=1e-8)    # (JAX's)
    else:
        np.testing.assert_allclose(got[:1], [-4.625077], rtol=1e-6)      # (JAX's)
    assert got_counts == counts
