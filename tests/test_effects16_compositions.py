"""Python side effects under compositions of transforms (issue 15, effects16).

JAX traces f once per call of a composed transform, so a callee of f that appends to a list,
bumps a counter or prints runs exactly as often as in one call of f: never more (a derivative's
recompute replaying it) and never fewer (an effect lost). Every pair of {grad, value_and_grad,
jvp, vjp, vmap, jacfwd, jacrev, hessian} (and a sample of the triples; the thorough profile runs
every triple) is checked on three functions with effects: the exact count, and the value against
nested float64 central differences of a NumPy twin. Under jit effects run once per trace."""
import itertools
import os

import numpy as np
import pytest

import secant.numpy as jnp
from secant import (custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jit, jvp,
                    value_and_grad, vjp, vmap)

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
NAMES = ("grad", "value_and_grad", "jvp", "vjp", "vmap", "jacfwd", "jacrev", "hessian")
X = np.array([0.3, -0.5, 0.7])


# --- three functions with effects, each running them twice per call ---------------------------
LOG = []


def logged_sin(x):
    LOG.append("sin")
    return jnp.sin(x) * 2.0


def appends(x):                     # a helper appending to a global list, called twice
    y = logged_sin(x)
    return jnp.sum(logged_sin(y * x) ** 2)


def appends_np(x):
    y = np.sin(x) * 2.0
    return np.sum((np.sin(y * x) * 2.0) ** 2)


class Counter:
    def __init__(self):
        self.calls = 0

    def tick(self):
        self.calls += 1


COUNTER = Counter()


def scaled(x, c):
    c.tick()                        # a method bumping the counter
    return jnp.tanh(x) * 1.5


def counts(x):
    COUNTER.calls += 1              # an attribute update in f itself
    h = scaled(x * x, COUNTER)
    return jnp.sum(h * jnp.cos(x))


def counts_np(x):
    return np.sum(np.tanh(x * x) * 1.5 * np.cos(x))


def shout(x):
    print("shout")
    return jnp.exp(-x * x)


def prints(x):                      # print in f and in a helper
    print("prints")
    return jnp.sum(shout(x) * x)


def prints_np(x):
    return np.sum(np.exp(-x * x) * x)


def loops(x):                       # an effect in a Python loop's body (run twice)
    y = x
    for i in range(2):
        LOG.append(i)
        y = jnp.cos(y) * x
    return jnp.sum(y)


def loops_np(x):
    y = x
    for _ in range(2):
        y = np.cos(y) * x
    return np.sum(y)


class Layer:                        # a callable object bumping its own count
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return jnp.tanh(x)


LAYER = Layer()


def layered(x):
    return jnp.sum(LAYER(x) + LAYER(x * x))


def layered_np(x):
    return np.sum(np.tanh(x) + np.tanh(x * x))


FUNCTIONS = {"appends": (appends, appends_np, lambda capsys: len(LOG)),
             "counts": (counts, counts_np, lambda capsys: COUNTER.calls),
             "prints": (prints, prints_np,
                        lambda capsys: len(capsys.readouterr().out.splitlines())),
             "loops": (loops, loops_np, lambda capsys: len(LOG)),
             "layered": (layered, layered_np, lambda capsys: LAYER.calls)}


def _reset(capsys):
    LOG.clear()
    COUNTER.calls = LAYER.calls = 0
    capsys.readouterr()


# --- the transforms, each of a function of one array, and their finite-difference twins -------
def _scalar(g, inner):
    return g if inner else (lambda x: jnp.sum(g(x)))


def _apply(name, g, inner):
    """name's transform of g (a function of x) as a function of x; inner: g is f itself (a
    scalar), else g's output is summed where the transform needs a scalar. (The transform is
    built outside the lambda that uses it: secant reads a transform built in place only of a
    named function.)"""
    if name == "grad":
        return grad(_scalar(g, inner))
    if name == "value_and_grad":
        both = value_and_grad(_scalar(g, inner))
        return lambda x: both(x)[1]
    if name == "jvp":
        return lambda x: jvp(g, (x,), (jnp.ones_like(x),))[1]
    if name == "vjp":
        def pulled(x):
            out, pullback = vjp(g, x)
            return pullback(jnp.ones_like(out))[0]
        return pulled
    if name == "vmap":
        mapped = vmap(g)
        return lambda x: mapped(x[None])[0]
    if name == "jacfwd":
        return jacfwd(g)
    if name == "jacrev":
        return jacrev(g)
    return hessian(_scalar(g, inner))


STEP = 1e-2
ORDER = {"vmap": 0, "hessian": 2}       # (every other transform: a first derivative)


def _fd(g, x, e):
    """The derivative of g at x along e, by the five-point central difference (error O(h^4),
    so that four of them nested still agree with the derivative to about 1e-7)."""
    at = lambda k: np.asarray(g(x + k * e))
    return (at(-2.0) - 8.0 * at(-1.0) + 8.0 * at(1.0) - at(2.0)) / (12.0 * STEP)


def _fd_jacobian(g, x):
    """d g(x) / dx: shape g(x).shape + x.shape."""
    return np.stack([_fd(g, x, STEP * np.eye(x.size)[i]) for i in range(x.size)], axis=-1)


def _apply_fd(name, g, inner):
    scalar = g if inner else (lambda x: np.sum(g(x)))
    if name in ("grad", "value_and_grad"):
        return lambda x: _fd_jacobian(scalar, x)
    if name == "jvp":
        return lambda x: _fd(g, x, STEP * np.ones_like(x))
    if name == "vjp":
        return lambda x: _fd_jacobian(lambda x: np.sum(g(x)), x)
    if name == "vmap":
        return g
    if name in ("jacfwd", "jacrev"):
        return lambda x: _fd_jacobian(g, x)
    return lambda x: _fd_jacobian(lambda x: _fd_jacobian(scalar, x), x)


def _composed(combo, f, f_np):
    """combo's composition of f, and its oracle: nested finite differences of f's NumPy twin
    up to fourth order; above it (too many evaluations: (4 * 3) ** order), the composition of
    the twin, which has no effects (secant on plain NumPy code)."""
    g, g_np = f, f_np
    deep = sum(ORDER.get(name, 1) for name in combo) > 4
    for k, name in enumerate(reversed(combo)):
        g = _apply(name, g, k == 0)
        g_np = _apply(name, g_np, k == 0) if deep else _apply_fd(name, g_np, k == 0)
    return g, g_np


PAIRS = list(itertools.product(NAMES, repeat=2))
TRIPLES = list(itertools.product(NAMES, repeat=3))
SAMPLE = TRIPLES if THOROUGH else TRIPLES[::37]     # (14 triples, every outer transform)


def _check(combo, fname, capsys):
    f, f_np, count = FUNCTIONS[fname]
    g, g_np = _composed(combo, f, f_np)
    _reset(capsys)
    got = g(jnp.asarray(X))
    assert count(capsys) == 2, (combo, fname)       # as one call of f
    want = np.asarray(g_np(X))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-5,
                               err_msg=str(combo))


@pytest.mark.parametrize("combo", PAIRS, ids="-".join)
def test_every_pair_runs_the_effects_once_per_call(x64, capsys, combo):
    _check(combo, "appends", capsys)


@pytest.mark.parametrize("combo", PAIRS[::5], ids="-".join)
@pytest.mark.parametrize("fname", ["counts", "prints", "loops", "layered"])
def test_pairs_on_a_counter_print_loop_and_object(x64, capsys, combo, fname):
    _check(combo, fname, capsys)


@pytest.mark.parametrize("combo", SAMPLE, ids="-".join)
def test_triples_run_the_effects_once_per_call(x64, capsys, combo):
    _check(combo, "appends" if combo[0] != "hessian" else "counts", capsys)


@pytest.mark.parametrize("combo", [("grad", "jvp"), ("jacrev", "vmap"), ("vjp", "jacfwd"),
                                   ("hessian", "jacrev")], ids="-".join)
@pytest.mark.parametrize("fname", ["appends", "prints"])
def test_under_jit_the_effects_run_once_per_trace(x64, capsys, combo, fname):
    f, f_np, count = FUNCTIONS[fname]
    g, g_np = _composed(combo, f, f_np)
    _reset(capsys)
    want = g(jnp.asarray(X))
    assert count(capsys) == 2
    jitted = jit(g)
    _reset(capsys)
    got = jitted(jnp.asarray(X))
    assert count(capsys) == 2                           # the trace runs f's effects once
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
    _reset(capsys)
    jitted(jnp.asarray(X) * 0.5)
    assert count(capsys) == 0                           # a cached trace runs none


# --- known gap: a custom_jvp function's effects under reverse mode -----------------------------
@custom_jvp
def logged_sin_rule(x):
    LOG.append("rule")
    return jnp.sin(x)


@logged_sin_rule.defjvp
def _logged_sin_rule_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return logged_sin_rule(x), jnp.cos(x) * t


def ruled(x):
    return jnp.sum(logged_sin_rule(x) * logged_sin_rule(x * 2.0))


RULE_RUNS = []


@custom_jvp
def counted_rule(x):
    return jnp.sin(x)


@counted_rule.defjvp
def _counted_rule_jvp(primals, tangents):
    RULE_RUNS.append("jvp")
    (x,), (t,) = primals, tangents
    return counted_rule(x), jnp.cos(x) * t


def counted_ruled(x):
    return jnp.sum(counted_rule(x) * counted_rule(x * 2.0))


@pytest.mark.parametrize("name", ["grad", "jacrev", "jvp"])
def test_a_custom_jvp_rule_runs_once_per_call(x64, name):
    """As in JAX, once per call of the custom_jvp function (reverse mode ran it twice: once for
    its output checks, once more in the transpose's recompute)."""
    g = _apply(name, counted_ruled, True)
    g(jnp.asarray(X))
    RULE_RUNS.clear()
    got = g(jnp.asarray(X))
    assert len(RULE_RUNS) == 2
    d = np.cos(X) * np.sin(2 * X) + 2 * np.sin(X) * np.cos(2 * X)
    np.testing.assert_allclose(np.asarray(got), np.sum(d) if name == "jvp" else d, rtol=1e-12)


@custom_jvp
def logged_doubled(x):
    LOG.append("body")
    return jnp.sin(x)


@logged_doubled.defjvp
def _logged_doubled_jvp(primals, tangents):     # twice the true derivative: a recompute
    (x,), (t,) = primals, tangents              # that lost the rule shows in the value
    return logged_doubled(x), 2.0 * jnp.cos(x) * t


def doubled(x):
    return jnp.sum(logged_doubled(x) * logged_doubled(x * 2.0))


@pytest.mark.parametrize("name", ["grad", "jacrev", "jacfwd", "hessian", "jit-hessian"])
def test_a_recompute_without_the_bodys_effects_keeps_the_rule(x64, capsys, name):
    """A derivative's recompute calls a custom_jvp function with effects in its body through
    its replay (ad/reverse.py _replay), a custom_jvp function with the same rule: the rule's
    value at every order (the rule is twice the true derivative), and under jacfwd the body
    runs once per call, as in JAX (it ran 4 times, in jacfwd's replay too)."""
    g = _apply(name.removeprefix("jit-"), doubled, True)
    g = jit(g) if name.startswith("jit-") else g
    _reset(capsys)
    got = g(jnp.asarray(X))
    d = [np.sin, lambda v: 2.0 * np.cos(v), lambda v: -2.0 * np.sin(v)]   # the rule's
    if name.endswith("hessian"):
        want = np.diag(d[2](X) * d[0](2 * X) + 4 * d[1](X) * d[1](2 * X)
                       + 4 * d[0](X) * d[2](2 * X))
    else:
        want = d[1](X) * d[0](2 * X) + 2 * d[0](X) * d[1](2 * X)    # (jacfwd of a scalar too)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    if name == "jacfwd":
        assert len(LOG) == 2


@pytest.mark.parametrize("name", ["grad", "value_and_grad"])
def test_a_custom_jvp_functions_effects_run_once_per_call(x64, name):
    """As in JAX (2 for this program under grad): the caller's forward pass takes a custom_jvp
    function's value from its checked rule (f_fwd), whose vjp neither checks nor runs the rule
    again, and the transpose recomputes the rule's replay, without effects (the body ran in the
    caller's forward pass, in the rule in f_vjp's checks, and in the transpose: 6)."""
    g = _apply(name, ruled, True)
    _reset(_NoCapsys())
    got = g(jnp.asarray(X))
    assert len(LOG) == 2
    d = np.cos(X) * np.sin(2 * X) + 2 * np.sin(X) * np.cos(2 * X)
    np.testing.assert_allclose(np.asarray(got), d, rtol=1e-12)


class _NoCapsys:
    def readouterr(self):
        return None


@pytest.mark.parametrize("name", ["jacrev", "vjp", "hessian"])
def test_a_custom_jvp_functions_effects_run_once_per_call_under_vjp(x64, capsys, name):
    """As in JAX (2): the forward pass of vjp and jacrev runs the user's function as written
    (the body once per call); the vjp of each call checks the rule's outputs with the body in
    the rule as its replay, without effects (it ran the body again: jacrev 4, vjp 4, hessian
    8), and a recompute's rule is the rule's replay."""
    g = _apply(name, ruled, True)
    _reset(capsys)
    g(jnp.asarray(X))
    assert len(LOG) == 2


def doubled_in_a_helper(x):         # a helper calling the custom_jvp function twice
    return logged_doubled(x) * logged_doubled(x * 2.0)


def calls_doubled(x):
    return jnp.sum(doubled_in_a_helper(x) * x)


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jacrev", "jacfwd",
                                  "hessian", "jit-grad", "jit-hessian"])
def test_a_custom_jvp_function_in_a_helper_runs_its_body_once_per_call(x64, capsys, name):
    """As in JAX (2 for this program, under every transform): the caller's primal pass calls
    the helper as written (the body runs), and the helper's vjp recomputes its value with the
    body's replay and checks the rule with the body in it as its replay (it ran the body again:
    grad 4, jacrev 4, vjp 4, hessian 10). The value is the rule's (twice the true derivative)
    at every order."""
    g = _apply(name.removeprefix("jit-"), calls_doubled, True)
    g = jit(g) if name.startswith("jit-") else g
    _reset(capsys)
    got = g(jnp.asarray(X))
    assert len(LOG) == 2
    d = [np.sin, lambda v: 2.0 * np.cos(v), lambda v: -2.0 * np.sin(v)]   # the rule's
    x, y = X, 2 * X
    if name.endswith("hessian"):
        want = np.diag(x * (d[2](x) * d[0](y) + 4 * d[1](x) * d[1](y) + 4 * d[0](x) * d[2](y))
                       + 2 * d[1](x) * d[0](y) + 4 * d[0](x) * d[1](y))
    else:
        want = x * (d[1](x) * d[0](y) + 2 * d[0](x) * d[1](y)) + d[0](x) * d[0](y)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@custom_vjp
def logged_vjp_doubled(x):
    LOG.append("body")
    return jnp.sin(x)


def _logged_vjp_doubled_fwd(x):
    return logged_vjp_doubled(x), x


def _logged_vjp_doubled_bwd(x, g):          # twice the true derivative
    return (2.0 * jnp.cos(x) * g,)


logged_vjp_doubled.defvjp(_logged_vjp_doubled_fwd, _logged_vjp_doubled_bwd)


def vjp_doubled(x):
    return jnp.sum(logged_vjp_doubled(x) * logged_vjp_doubled(x * 2.0))


def _vjp_doubled_count(name, capsys):
    g = _apply(name.removeprefix("jit-"), vjp_doubled, True)
    g(jnp.asarray(X) * 0.5)     # (the first call of a custom_vjp function under reverse mode
    g = jit(g) if name.startswith("jit-") else g    # traces it abstractly once, for fwd's
    _reset(capsys)                                  # output check; under jit: one trace)
    got = g(jnp.asarray(X))
    d = 2.0 * np.cos(X) * np.sin(2 * X) + 2 * np.sin(X) * 2.0 * np.cos(2 * X)     # bwd's
    np.testing.assert_allclose(np.asarray(got), d, rtol=1e-12)
    return len(LOG)


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jacrev", "jit-grad"])
def test_a_custom_vjp_functions_body_runs_once_per_call(x64, capsys, name):
    """As in JAX (2: once per call, in fwd): the caller's forward pass keeps fwd's residuals
    (`y, y_res = f_fwd(x)`) for bwd in its reverse pass (grad); a recompute (the pullback of
    vjp and jacrev, whose forward pass ran the body as written) runs fwd with the body's
    replay in it (ad/custom_checks.body_replayed). It was 4: the primal pass ran the body and
    the vjp of each call ran fwd, the body in it again."""
    assert _vjp_doubled_count(name, capsys) == 2


def vjp_doubled_in_a_helper(x):    # a helper calling the custom_vjp function twice
    return logged_vjp_doubled(x) * logged_vjp_doubled(x * 2.0)


def calls_vjp_doubled(x):
    return jnp.sum(vjp_doubled_in_a_helper(x) * x)


FWD_RUNS = []


@custom_vjp
def counted_fwd(x):
    LOG.append("body")
    return jnp.sin(x)


def _counted_fwd_fwd(x):
    FWD_RUNS.append("fwd")
    return counted_fwd(x), x


def _counted_fwd_bwd(x, g):                 # twice the true derivative
    return (2.0 * jnp.cos(x) * g,)


counted_fwd.defvjp(_counted_fwd_fwd, _counted_fwd_bwd)


def counted_fwd_twice(x):
    return jnp.sum(counted_fwd(x) * counted_fwd(x * 2.0))


def _custom_vjp_count(name, fun, capsys):
    """(body runs, fwd runs, value) of name's transform of fun at X, after a first call."""
    if name.removeprefix("jit-") == "vmap-grad":
        g = vmap(grad(fun))
        x = np.stack([X, X * 0.5])
    elif name == "jacrev-jacrev":
        g, x = jacrev(jacrev(fun)), X
    else:
        g, x = _apply(name.removeprefix("jit-"), fun, True), X
    g(jnp.asarray(x) * 0.5)     # (under jit: the effects run once, as jit traces the call)
    g = jit(g) if name.startswith("jit-") else g
    _reset(capsys)
    FWD_RUNS.clear()
    got = np.asarray(g(jnp.asarray(x)))
    return len(LOG), len(FWD_RUNS), got


def _bwds_gradient(x, in_a_helper):
    """The gradient bwd's rule (2 cos, twice the true derivative) gives."""
    s1, s2, d1, d2 = np.sin(x), np.sin(2 * x), 2.0 * np.cos(x), 2.0 * np.cos(2 * x)
    inner = d1 * s2 + 2 * s1 * d2
    return x * inner + s1 * s2 if in_a_helper else inner


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jacrev", "jit-grad",
                                  "vmap-grad", "jit-vmap-grad"])
def test_a_custom_vjp_function_in_a_helper_runs_its_body_once_per_call(x64, capsys, name):
    """As in JAX (2 for this program): the caller's primal pass calls the helper as written
    (the body runs), and the helper's vjp, recomputing, calls fwd with the body's replay in it
    (it ran the body again in fwd: 4 under each; under vmap(grad) the batched fwd ran the
    batched body until vmap read fwd's call as a rule of its own, secant/custom.py
    body_ran_rule). The value is bwd's."""
    runs, _, got = _custom_vjp_count(name, calls_vjp_doubled, capsys)
    want = _bwds_gradient(X, True)
    if name.endswith("vmap-grad"):
        want = np.stack([want, _bwds_gradient(X * 0.5, True)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert runs == 2


@pytest.mark.parametrize("name", ["grad", "vjp", "jacrev", "vmap-grad", "jacrev-jacrev"])
def test_a_custom_vjp_functions_fwd_runs_once_per_call(x64, capsys, name):
    """The body runs once per call, in fwd or as written, as in JAX (2 for this program; it
    was 4, and 14 under jacrev(jacrev)), and fwd as often: once per call (jacrev(jacrev): 2,
    where JAX runs it 4 times, in both of its reverse passes; it was 12). The values are
    bwd's, differentiated again as code under jacrev(jacrev): 16 c1 c2 - 10 s1 s2 on the
    diagonal (c1 = cos x, c2 = cos 2x, ...)."""
    runs, fwds, got = _custom_vjp_count(name, counted_fwd_twice, capsys)
    if name == "jacrev-jacrev":
        c1, c2, s1, s2 = np.cos(X), np.cos(2 * X), np.sin(X), np.sin(2 * X)
        np.testing.assert_allclose(got, np.diag(16 * c1 * c2 - 10 * s1 * s2), rtol=1e-12,
                                   atol=1e-12)
    else:
        want = _bwds_gradient(X, False)
        want = np.stack([want, _bwds_gradient(X * 0.5, False)]) if name == "vmap-grad" else want
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (runs, fwds) == (2, 2)


def counted_ruled_in_a_helper(x):       # a helper calling the custom_jvp function twice
    return counted_rule(x) * counted_rule(x * 2.0)


def calls_counted_ruled(x):
    return jnp.sum(counted_ruled_in_a_helper(x) * x)


@pytest.mark.parametrize("case", ["jacrev-jacrev", "jacrev-jacfwd", "helper-jacrev-jacrev",
                                  "helper-jacrev-jacfwd"])
def test_a_custom_jvp_rule_under_a_jacobian_of_a_jacobian(x64, case):
    """The outer Jacobian of a Jacobian taken by rows (jacrev of a Jacobian) runs the vjp of
    the inner one's derivative once, batched over the rows (as JAX's vmap of the pullback),
    not once per row: the rule runs 6 times for this program under jacrev(jacrev) (it ran 18;
    JAX 4: secant's vjp of the vjp runs the rule once more per call), 10 in a helper (it ran
    30; JAX 4), and 2 under jacrev(jacfwd) (it ran 6; JAX 4). The value: the Hessian, closed
    form."""
    helper = case.startswith("helper-")
    outer, inner = case.removeprefix("helper-").split("-")
    fun = calls_counted_ruled if helper else counted_ruled
    t = {"jacrev": jacrev, "jacfwd": jacfwd}
    g = t[outer](t[inner](fun))
    g(jnp.asarray(X) * 0.5)
    RULE_RUNS.clear()
    got = np.asarray(g(jnp.asarray(X)))
    c1, c2, s1, s2 = np.cos(X), np.cos(2 * X), np.sin(X), np.sin(2 * X)
    h1, h2 = c1 * s2 + 2 * s1 * c2, 4 * c1 * c2 - 5 * s1 * s2   # (sin x sin 2x)', ''
    np.testing.assert_allclose(got, np.diag(2 * h1 + X * h2 if helper else h2), rtol=1e-12,
                               atol=1e-12)
    assert len(RULE_RUNS) == {"jacrev-jacrev": 6, "jacrev-jacfwd": 2,
                              "helper-jacrev-jacrev": 10, "helper-jacrev-jacfwd": 2}[case]
