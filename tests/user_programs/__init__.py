"""Programs written the way JAX tutorials and examples write them (issue 15, explore15h): JAX
101 pytrees and functional state, a Gaussian process, Bayesian logistic regression with HMC and
Langevin steps, a normalizing flow, a neural ODE, a transformer block, an LSTM, a Kalman filter,
physics, finance, optimizers written by hand, and a spread of Python styles.

Each theme module holds plain functions and a list `CASES` of `corpus.Case` records (the corpus
of tests/corpus/ judges them the same way); `checks.TRANSFORMS` names what each is run through.
bench/user_programs.py prints the pass table; tests/test_explore15h_programs.py asserts it.
"""


def _collect():
    from user_programs import extras, models, more, science, styles, tricky
    cases = []
    for mod in (models, science, styles, extras, more, tricky):
        cases.extend(mod.CASES)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate program names: {sorted(dup)}"
    return cases


def _collect_second():
    """The second battery (explore15i): programs after other AD libraries' tests (autograd,
    Tangent, functorch), optimisation test functions and numerical recipes."""
    from user_programs import autograd_style, functorch_style, recipes, tangent_style
    cases = []
    for mod in (autograd_style, tangent_style, functorch_style, recipes):
        cases.extend(mod.CASES)
    return cases


def _collect_third():
    """The third battery (explore15j): the JAX documentation's own examples (stateful
    computations, the autodiff cookbook, pytrees), module systems and optimizers written by
    hand, training loops in lax.scan, science (Gaussian processes, flows, Monte Carlo, odeint,
    Ising and molecular dynamics in fori_loop) and classroom code (dual numbers, a tape)."""
    import importlib
    mods = ("jaxdocs_style", "modules_style", "science_third", "classroom")
    cases = []
    for name in mods:
        try:
            mod = importlib.import_module("user_programs." + name)
        except ModuleNotFoundError as e:
            if e.name != "user_programs." + name:
                raise
            continue
        cases.extend(mod.CASES)
    return cases


def _collect_fourth():
    """The fourth battery (explore15k): domains the first three left out (reinforcement
    learning, finance, robotics and graphics, graph networks, PDEs, signal, Kalman, EM, VAE,
    diffusion, ranking, interpolation, optimal transport, contrastive losses) and Python
    styles (match, the walrus, generators, dataclass factories, partial(jit, static_argnames))."""
    from user_programs import domains
    return list(domains.CASES)


def _collect_fifth():
    """The fifth battery (explore15l): programs sorted by how their authors write code
    (PyTorch habits, optax-like optimisers, flax-like modules, scipy-style science, Python
    idioms) rather than by domain."""
    from user_programs import habits
    return list(habits.CASES)


def _collect_sixth():
    """The sixth battery (explore15o): the JAX API itself as users combine it (lax control
    flow, custom rules, transforms called inside, vmap's arguments, jax.random, tree_util)."""
    from user_programs import api_surface
    return list(api_surface.CASES)


def _collect_deep():
    """Programs of the kinds the deep compositions battery found failing (deep15s: dict
    merges, isinstance on parameters, custom_vjp of pytrees, lax.map over pytrees, helpers
    calling helpers), run by deep.py only."""
    from user_programs import deep_more
    return list(deep_more.CASES)


ALL = _collect()
SECOND = _collect_second()
THIRD = _collect_third()
FOURTH = _collect_fourth()
FIFTH = _collect_fifth()
SIXTH = _collect_sixth()
DEEP = _collect_deep()
BY_NAME = {c.name: c for c in ALL + SECOND + THIRD + FOURTH + FIFTH + SIXTH + DEEP}
_names = [c.name for c in ALL + SECOND + THIRD + FOURTH + FIFTH + SIXTH + DEEP]
assert len(BY_NAME) == len(_names), \
    f"duplicate program names: {sorted({n for n in _names if _names.count(n) > 1})}"
