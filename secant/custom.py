"""secant.custom_vjp and secant.custom_jvp, as JAX's: a function with derivative rules of the
user's own. Called directly (eagerly or under jit) it runs the function; grad and jvp of code
that calls it go through short generated functions that call the rules by name
(ad/custom_rules.py), e.g. `f_vjp` calls `f_fwd` then `f_bwd`. secant.custom_vmap (at the end)
does the same for a batching rule (batching/custom_rules.py)."""
import contextvars
import functools
import inspect
import weakref

from secant.backends.errors import SecantTypeError, UnsupportedError, where

# custom_jvp functions whose body already ran, with its Python side effects, in the forward pass
# of the caller whose derivative runs their rule now (ad/custom_checks.custom_jvp_rule_checked):
# called in that rule, such a function runs its body's replay, without the effects, so that
# the body's effects run once per call, as in JAX (which runs the rule, not the body, there)
_BODY_RAN = contextvars.ContextVar("secant_custom_body_ran", default=frozenset())
_BODY_REPLAYS = weakref.WeakKeyDictionary()


def _body_replay(custom, staged):
    """custom's body without its Python side effects (transforms.py replay mode); the body
    itself where it has none or no transform reads it."""
    key = (staged, custom.fun)
    cached = _BODY_REPLAYS.get(custom)
    if cached is not None and cached[0] == key:
        return cached[1]
    from secant.backends.errors import SecantError
    from secant.transforms import _is_library, _Recursive, generate
    sub = None
    if "__secant_batch_of__" in custom.__dict__:
        sub = _batched_replay(custom, staged)
        _BODY_REPLAYS[custom] = (key, sub)
        return sub
    if not _is_library(custom.fun):     # (secant's own functions have no effects)
        try:
            sub = generate(custom.fun, tuple(range(len(custom.params()))), "replay",
                           staged=staged)
        except (SecantError, TypeError, ValueError):
            pass
    if isinstance(sub, _Recursive) or not getattr(sub, "__secant_effects__", False):
        sub = custom.fun
    _BODY_REPLAYS[custom] = (key, sub)
    return sub


def _batched_from(custom, customs):
    """Whether `custom` is the batched function vmap made of one of `customs` (or of such a
    batched one: nested vmaps; transforms.py _batched_custom)."""
    while True:
        custom = custom.__dict__.get("__secant_batch_of__", (None,))[0]
        if custom is None:
            return False
        if custom in customs:
            return True


def _batched_replay(custom, staged):
    """The replay of a batched custom function (transforms.py _batched_custom): vmap of its
    unbatched function's replay, with the same batching; its function itself where that
    function's body has no effects."""
    of, wrt, batch = custom.__dict__["__secant_batch_of__"]
    replay = _body_replay(of, staged)
    if replay is of.fun:
        return custom.fun
    from secant.transforms import generate
    return generate(replay, wrt, "vmap", staged=staged, batch=batch)


def body_ran(customs):
    """A context in which the custom functions `customs` run their body's replay when called."""
    return _BodyRan(customs)


class _BodyRan:
    def __init__(self, customs):
        self.customs = frozenset(customs)

    def __enter__(self):
        self.token = _BODY_RAN.set(_BODY_RAN.get() | self.customs)

    def __exit__(self, *exc):
        _BODY_RAN.reset(self.token)


class _Custom:
    __secant_custom__ = True        # transforms differentiate calls of it with its rules

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise SecantTypeError(f"{type(self).__name__} expects a function, got {fun!r} of "
                                  f"type {type(fun).__name__}{where()}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.__globals__ = fun.__globals__      # the user's module, where rules are named
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        self.__signature__ = inspect.signature(fun)
        params = self.params()
        for i in self.nondiff_argnums:
            if not 0 <= i < len(params):
                raise SecantTypeError(f"nondiff_argnums {i} is out of range for {fun.__name__} "
                                      f"with {len(params)} positional parameters{where()}")

    def params(self):
        sig = inspect.signature(self.fun)
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        # (a batched form's caller's batch size, `*, batch_size=None`, is left at its default:
        # secant/transforms.py _with_size)
        # (vmap of vmap of one: the inner vmap's size too, `*, batch_size=None,
        # batch_size_2=None`)
        sizes = size_params(self.fun)
        params = [p for p in sig.parameters.values() if p.name not in sizes]
        if any(p.kind not in kinds for p in params):
            raise SecantTypeError(f"{type(self).__name__} functions take positional parameters "
                                  f"only; {self.fun.__name__} has {sig}{where()}")
        return [p.name for p in params]

    def __call__(self, *args, **kwargs):
        ran = _BODY_RAN.get()
        if ran and (self in ran or _batched_from(self, ran)):   # (its body's effects ran
            from secant.backends.tracer import active_trace     # already)
            return _body_replay(self, active_trace() is not None)(*args, **kwargs)
        return self.fun(*args, **kwargs)

    def __getattr__(self, name):    # stacked: custom_vjp(custom_vmap(f)).def_vmap is f's
        if name.startswith("__") or name == "fun":
            raise AttributeError(name)
        return getattr(self.fun, name)

    def __get__(self, obj, objtype=None):       # as a method: bind like a function
        return self if obj is None else functools.partial(self, obj)


def _check_rules(method, **rules):
    for name, rule in rules.items():
        if not callable(rule):
            raise SecantTypeError(f"{method} expects a function for {name}, got {rule!r}{where()}")


class custom_vjp(_Custom):
    """`f = custom_vjp(f)`; `f.defvjp(f_fwd, f_bwd)`: f_fwd(*args) returns (out, residuals),
    f_bwd(*nondiff_args, residuals, out_cotangent) returns a tuple with one cotangent per
    differentiable argument."""

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        _check_rules("defvjp", fwd=fwd, bwd=bwd)
        self.fwd, self.bwd = fwd, bwd
        return self


class custom_jvp(_Custom):
    """`f = custom_jvp(f)`; `@f.defjvp def f_jvp(primals, tangents): return out, out_dot`
    (nondiff arguments come first, as in JAX), or `f.defjvps(jvp_x, jvp_y, ...)` with one
    `jvp(x_dot, ans, *args)` per argument (None: no dependence)."""

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp):
        _check_rules("defjvp", jvp=jvp)
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        from secant.ad.custom_rules import jvp_rule_from_parts
        from secant.transforms import load_generated
        params = self.params()
        diff = [p for i, p in enumerate(params) if i not in self.nondiff_argnums]
        if len(jvps) != len(diff):
            raise SecantTypeError(f"defjvps of {self.__name__} takes one rule per differentiable "
                                  f"argument ({len(diff)}), got {len(jvps)}{where()}")
        source, name, free = jvp_rule_from_parts(self, params, jvps)
        self.jvp = load_generated(source, name, self.fun.__globals__, free)



class custom_vmap(_Custom):
    """`f = custom_vmap(f)`; `@f.def_vmap def f_vmap_rule(axis_size, in_batched, *args)`
    returning `(out, out_batched)`, as JAX's custom_batching.custom_vmap: under vmap the
    generated batched code calls the rule by name (batching/custom_rules.py) with the batched
    arguments' batch axis in front and one flag per argument; outputs the rule marks unbatched
    are broadcast. Called directly (eagerly or under jit) it runs f. Forward mode differentiates
    f's body; reverse mode is refused, as in JAX (stack it under custom_vjp for a gradient)."""

    def __init__(self, fun):
        super().__init__(fun)
        self.vmap_rule = None

    def def_vmap(self, vmap_rule):
        self.vmap_rule = vmap_rule
        return vmap_rule


class body_ran_rule(_Custom):
    """`rule(*args)` (a custom_vjp function's fwd) run where the caller's forward pass ran the
    body of `custom` already (ad/custom_checks.body_replayed), as vmap reads such a call
    (transformer/normalize.py): its batched function runs the batched rule with `custom` and
    the batched functions vmap makes of it running their body's replay, so that under
    vmap(grad) too the body's effects run once per call, as in JAX."""

    def __init__(self, rule, custom):
        super().__init__(rule)
        self.custom = custom

    def __call__(self, *args, **kwargs):
        with body_ran((self.custom,)):
            return self.fun(*args, **kwargs)

    def generate_rule(self, mode, params, wrt, staged, batch):
        from secant.transforms import generate, load_generated
        inner = generate(self.fun, wrt, mode, staged=staged, batch=batch)
        if mode != "vmap":
            return inner
        args = ", ".join(params)
        name = f"{inner.__name__}_ran"
        gen = load_generated(
            f"def {name}({args}):\n"
            f"    # {self.custom.__name__}'s body ran in the caller's forward pass: in "
            f"{inner.__name__}, its replay (no effects)\n"
            f"    return body_replayed({inner.__name__}, {args}, custom={self.custom.__name__})\n",
            name, self.fun.__globals__,
            {inner.__name__: inner, self.custom.__name__: self.custom,
             "body_replayed": _body_replayed()})
        gen.__secant_out_batched__ = inner.__secant_out_batched__
        return gen


def ran_rule(rule, custom):
    """The body_ran_rule of `rule` for `custom` (one per pair, kept on `custom`, so that a
    transform's caches keyed by the callee find it again), or None where `rule` is no plain
    function."""
    if not inspect.isfunction(rule) or not isinstance(custom, _Custom):
        return None
    table = custom.__dict__.setdefault("_secant_ran_rules", {})
    made = table.get(rule)
    if made is None:
        try:
            made = body_ran_rule(rule, custom)
        except SecantTypeError:
            return None
        table[rule] = made
    return made


def _body_replayed():
    from secant.ad.custom_checks import body_replayed
    return body_replayed


class checkpoint(_Custom):
    """`secant.checkpoint(f)` (also `secant.remat`), as jax.checkpoint: reverse mode keeps only
    f's arguments from the forward pass and recomputes f's intermediates when it needs them.
    A transform's generated code calls `f_checkpoint_vjp`, which says so in a comment and
    passes the arguments through `lax.optimization_barrier` first (prevent_cse=True), so that
    under jit XLA cannot merge the recomputation back into the forward pass. Every other
    transform, and a direct call, sees f itself."""

    def __init__(self, fun, prevent_cse=True, policy=None):
        if policy is not None and not getattr(policy, "__secant_policy__", False):
            # (secant.checkpoint_policies' are accepted: a policy changes memory, not values,
            # and secant recomputes every intermediate whatever it says)
            raise UnsupportedError("checkpoint policies written by hand (functions of JAX's "
                                   "primitives) are not supported: use one of "
                                   "secant.checkpoint_policies, or none; every intermediate of "
                                   "a checkpointed function is recomputed" + where())
        super().__init__(fun)
        self.prevent_cse = bool(prevent_cse)


def make_checkpoint(fun=None, *, prevent_cse=True, policy=None, static_argnums=()):
    """secant.checkpoint / secant.remat: `checkpoint(f)`, `@checkpoint`, or
    `checkpoint(prevent_cse=False)(f)`. static_argnums is accepted for JAX's signature: the
    transforms read non-array arguments as Python values already."""
    if fun is None:
        return functools.partial(make_checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums)
    return checkpoint(fun, prevent_cse, policy)


make_checkpoint.__secant_factory__ = "checkpoint"   # `checkpoint(f)(x)` written in place


def size_params(fun):
    """The batch sizes a batched form takes from its callers (`*, batch_size=None`; under vmap
    of vmap the inner one's too, `batch_size_2=None`), or ()."""
    if getattr(fun, "__secant_size_param__", None) is None:
        return ()
    return tuple(p.name for p in inspect.signature(fun).parameters.values()
                 if p.kind == p.KEYWORD_ONLY and p.default is None)
