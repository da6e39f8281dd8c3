"""Issue 15: values passed through a global (haiku's frame stack, a module-level cache).

A source transform follows values through arguments and returns only; where a differentiated
value is stored in a global (`_FRAMES.append(Frame(params))`) or handed to a function called
for its side effect (`cache(x)`) and read back elsewhere, secant traces the function instead,
following its calls into user functions, classes and objects (transformer/trace_source.py
retraced), and differentiates the trace. The trace is taken again on every call (what it reads
is Python state no identity guard watches), so a global that changes between calls changes the
answer. Checked against float64 central differences, a Python loop for vmap and eager for jit.
"""
import inspect

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp
from test_others2_modules import APPLY, HK_PARAMS, X, Y, hk_loss

RNG = np.random.default_rng(15)


# --- 1. the frame-stack program of test_others2_modules (functions, closures) ------------------
def test_haiku_like_transform_grad(x64):
    check_grad(hk_loss, HK_PARAMS, X, Y)
    check_vmap(lambda p, x: APPLY(p, x), (HK_PARAMS, X), in_axes=(None, 0))


def test_haiku_like_grad_source_says_traced(x64):
    """The innermost function the source transform refuses (apply, for this call's arguments)
    is traced: the derivative of hk_loss calls its trace's, whose first line says it was traced
    and why."""
    from secant.transformer.trace_source import retraced
    from secant.transforms import _TRACED_PER_CALL
    grad(hk_loss)(*to_snp((HK_PARAMS, X, Y)))
    apply, why = next((f, w) for f, w in _TRACED_PER_CALL.items()
                      if getattr(f, "__secant_specialises__", None) is APPLY)
    src = inspect.getsource(retraced(apply, why))
    assert src.startswith("def apply(params, args_0):\n    # traced from transform.<locals>."
                          "apply on each call: the differentiated value params passes through "
                          "_FRAMES"), src
    for line in ("params_l1_w = params['l1/w']", "matmul_args_0 = args_0 @ params_l1_w",
                 "jnp.tanh(", "[..., 0]"):
        assert line in src, (line, src)
    assert "_FRAMES" not in src.split("\n", 2)[2] and "hk_loss" not in _TRACED_PER_CALL


def test_haiku_like_vmap_of_grad_and_grad_of_grad(x64):
    xs = RNG.normal(size=(3, 5, 3))
    g = vmap(grad(hk_loss), in_axes=(None, 0, None))(*to_snp((HK_PARAMS, xs, Y)))
    for i in range(3):
        assert_trees_close(tree_index(g, i), grad(hk_loss)(*to_snp((HK_PARAMS, xs[i], Y))),
                           rtol=1e-10)

    def through_frames(s, x):       # a scalar through the frame stack: d2/ds2
        p = {"l1/w": s * W1, "l1/b": B1, "l2/w": W2, "l2/b": B2}
        return hk_loss(p, x, Y)

    s = 0.7
    d2 = grad(grad(through_frames))(s, to_snp(X))
    g1 = grad(through_frames)
    want = (float(g1(s + 1e-5, to_snp(X))) - float(g1(s - 1e-5, to_snp(X)))) / 2e-5
    np.testing.assert_allclose(float(d2), want, rtol=1e-6)
    np.testing.assert_allclose(float(g1(s, to_snp(X))),
                               float(fd_grad(through_frames, (s, to_snp(X)))), rtol=1e-6)
    np.testing.assert_allclose(float(jit(grad(grad(through_frames)))(s, to_snp(X))),
                               float(d2), rtol=1e-10)


W1, B1, W2, B2 = (HK_PARAMS[k] for k in ("l1/w", "l1/b", "l2/w", "l2/b"))


def tree_index(tree, i):
    return {k: np.asarray(v)[i] for k, v in tree.items()}


# --- 2. haiku-like modules as classes: two modules, nested transparent calls ---------------------
class _Ctx:
    def __init__(self, params):
        self.params = params
        self.path = []


_STACK = []


class Module:
    def __init__(self, name):
        self.name = name

    def param(self, pname, shape):
        ctx = _STACK[-1]
        return ctx.params["/".join(ctx.path + [self.name, pname])]

    def scope(self, fn, *args):     # nested names, as hk.Module's name scope
        _STACK[-1].path.append(self.name)
        try:
            return fn(*args)
        finally:
            _STACK[-1].path.pop()


def affine(x, w, b):
    return x @ w + b


class Linear(Module):
    def __init__(self, size, name):
        super().__init__(name)
        self.size = size

    def __call__(self, x):
        return affine(x, self.param("w", (x.shape[-1], self.size)), self.param("b", (self.size,)))


class Block(Module):
    def __init__(self, width, name, act=jnp.tanh):
        super().__init__(name)
        self.width = width
        self.act = act

    def __call__(self, x):
        return self.scope(self.body, x)

    def body(self, x):
        h = self.act(Linear(self.width, "inner")(x))
        return x + Linear(x.shape[-1], "outer")(h)      # residual


def model(x):
    h = Block(4, "block1")(x)
    h = Block(2, "block2", act=jnp.sin)(h)
    return Linear(1, "head")(h)[:, 0]


def apply_model(params, x):
    _STACK.append(_Ctx(params))
    try:
        return model(x)
    finally:
        _STACK.pop()


def model_loss(params, x, y):
    return jnp.sum((apply_model(params, x) - y) ** 2) / x.shape[0]


def _model_params():
    shapes = {"block1/inner/w": (3, 4), "block1/inner/b": (4,), "block1/outer/w": (4, 3),
              "block1/outer/b": (3,), "block2/inner/w": (3, 2), "block2/inner/b": (2,),
              "block2/outer/w": (2, 3), "block2/outer/b": (3,), "head/w": (3, 1), "head/b": (1,)}
    return {k: 0.5 * RNG.normal(size=s) for k, s in shapes.items()}


MODEL_PARAMS = _model_params()


def numpy_model(p, x):
    def block(x, n, act):
        h = act(x @ p[f"{n}/inner/w"] + p[f"{n}/inner/b"])
        return x + h @ p[f"{n}/outer/w"] + p[f"{n}/outer/b"]
    h = block(block(x, "block1", np.tanh), "block2", np.sin)
    return (h @ p["head/w"] + p["head/b"])[:, 0]


def test_modules_as_classes_eager_and_grad(x64):
    depth = len(_STACK)
    np.testing.assert_allclose(apply_model(*to_snp((MODEL_PARAMS, X))),
                               numpy_model(MODEL_PARAMS, X), rtol=1e-12)
    check_grad(model_loss, MODEL_PARAMS, X, Y)
    assert len(_STACK) == depth


def test_modules_as_classes_trace_reads_as_the_model(x64):
    """The trace names the parameters by their keys and the activations as the user's module
    spells them (an activation passed as a default argument too)."""
    from secant.transformer.trace_source import retraced
    from secant.transforms import _TRACED_PER_CALL
    grad(model_loss)(*to_snp((MODEL_PARAMS, X, Y)))
    src = inspect.getsource(retraced(apply_model, _TRACED_PER_CALL[apply_model]))
    assert "# traced from apply_model on each call: the differentiated value params passes " \
           "through _STACK" in src
    for line in ("params_block1_inner_w = params['block1/inner/w']",
                 "tanh_plus_matmul_x = jnp.tanh(plus_matmul_x)", "jnp.sin(", "[:, 0]"):
        assert line in src, (line, src)
    assert "_STACK" not in src.split("\n", 2)[2] and "Block" not in src


def test_modules_as_classes_vmap_of_grad(x64):
    xs = RNG.normal(size=(2, 5, 3))
    check_vmap(lambda x: grad(model_loss)(to_snp(MODEL_PARAMS), x, to_snp(Y)), (xs,))


# --- 3. a module-level dict cache, written by one function and read back by another --------------
_CACHE = {}


def encode(x, w):
    _CACHE["h"] = jnp.tanh(x @ w)


def decode(v):
    return jnp.sum(_CACHE["h"] * v)


def cached_loss(w, x, v):
    encode(x, w)
    return decode(v)


def test_module_level_cache(x64):
    w, x, v = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3)), RNG.normal(size=(4, 2))
    g = check_grad(cached_loss, w, x, v)
    h = np.tanh(x @ w)
    np.testing.assert_allclose(g, x.T @ ((1 - h ** 2) * v), rtol=1e-10)
    check_vmap(grad(cached_loss), (w, RNG.normal(size=(3, 4, 3)), v), in_axes=(None, 0, None))
    hess = jit(secant.hessian(lambda s: cached_loss(s * w, x, v)))(0.3)
    gs = grad(lambda s: cached_loss(s * w, x, v))
    np.testing.assert_allclose(float(hess), (float(gs(0.3 + 1e-5)) - float(gs(0.3 - 1e-5)))
                               / 2e-5, rtol=1e-6)


# --- 4. the global changes between calls: the answer follows it --------------------------------
_SETTINGS = {"act": "tanh", "gain": 1.0}


def act_layer(x):
    h = _STACK[-1].params["w"] * x
    if _SETTINGS["act"] == "tanh":
        return _SETTINGS["gain"] * jnp.tanh(h)
    return _SETTINGS["gain"] * jnp.sin(h)


def settings_loss(params, x):
    _STACK.append(_Ctx(params))
    try:
        return jnp.sum(act_layer(x))
    finally:
        _STACK.pop()


def test_global_changes_between_calls(x64):
    """Eagerly and under jit: jit's compiled program asks the trace's guard before each call
    (a changed trace: traced and compiled again), never a stale program."""
    w, x = RNG.normal(size=3), RNG.normal(size=3)
    g = grad(settings_loss)
    jg = jit(grad(settings_loss))
    try:
        for act, gain, d in (("tanh", 1.0, lambda h: 1 - np.tanh(h) ** 2),
                             ("sin", 1.0, np.cos), ("sin", 2.5, np.cos),
                             ("tanh", 0.5, lambda h: 1 - np.tanh(h) ** 2)):
            _SETTINGS.update(act=act, gain=gain)
            got = g(*to_snp(({"w": w}, x)))["w"]
            np.testing.assert_allclose(got, gain * d(w * x) * x, rtol=1e-12)
            assert_trees_close(got, fd_grad(settings_loss, to_snp(({"w": w}, x)))["w"])
            for _ in range(2):      # (the second call: jit's warm path)
                np.testing.assert_allclose(jg(*to_snp(({"w": w}, x)))["w"], got, rtol=1e-12)
    finally:
        _SETTINGS.update(act="tanh", gain=1.0)


# --- what a trace cannot follow is refused, naming the line ----------------------------------------
def branchy_layer(x):
    h = _STACK[-1].params["w"] * x
    if jnp.sum(h) > 0:          # a Python branch on a traced value
        return h
    return -h


def branchy_loss(params, x):
    _STACK.append(_Ctx(params))
    try:
        return jnp.sum(branchy_layer(x))
    finally:
        _STACK.pop()


def test_untraceable_refused(x64):
    depth = len(_STACK)
    with pytest.raises(secant.SecantError, match=r"Python branch[\s\S]*test_traced_globals15"):
        grad(branchy_loss)(*to_snp(({"w": np.ones(3)}, np.ones(3))))
    assert len(_STACK) == depth


def doubled_settings_loss(params, x):       # a plain caller of the traced function
    return 2.0 * settings_loss(params, x)


def test_global_changes_between_calls_under_a_caller_and_vmap(x64):
    """The caller's derivative calls the trace's derivative: the trace's guard is the caller's
    too, so the change is seen there as well; and by vmap of it."""
    w, xs = RNG.normal(size=3), RNG.normal(size=(4, 3))
    g = grad(doubled_settings_loss)
    gv = vmap(grad(doubled_settings_loss), in_axes=(None, 0))
    try:
        for act, d in (("tanh", lambda h: 1 - np.tanh(h) ** 2), ("sin", np.cos),
                       ("tanh", lambda h: 1 - np.tanh(h) ** 2)):
            _SETTINGS["act"] = act
            got = g(*to_snp(({"w": w}, xs[0])))["w"]
            np.testing.assert_allclose(got, 2 * d(w * xs[0]) * xs[0], rtol=1e-12)
            np.testing.assert_allclose(gv(*to_snp(({"w": w}, xs)))["w"],
                                       2 * d(w * xs) * xs, rtol=1e-12)
            np.testing.assert_allclose(jit(gv)(*to_snp(({"w": w}, xs)))["w"],
                                       2 * d(w * xs) * xs, rtol=1e-12)
    finally:
        _SETTINGS.update(act="tanh", gain=1.0)


def read_z():
    return _CACHE["z"]


def store_and_read(w, x):       # the store in the function itself, the read in a callee
    _CACHE["z"] = x @ w
    return jnp.sum(jnp.sin(read_z()) ** 2)


def test_store_in_a_global_dict_then_read_by_a_callee(x64):
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3))
    g = check_grad(store_and_read, w, x)
    z = x @ w
    np.testing.assert_allclose(g, x.T @ (2 * np.sin(z) * np.cos(z)), rtol=1e-10)


# --- a value kept across calls is never read back as this call's --------------------------------
_MEMO = {}


def memo_features(x, w):
    if "f" not in _MEMO:            # memoised across calls: the second trace would read the
        _MEMO["f"] = jnp.tanh(x @ w)    # first one's value
    return _MEMO["f"]


def memo_loss(w, x):
    return jnp.sum(memo_features(x, w))


def test_a_value_memoised_across_calls_is_refused(x64):
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3))
    try:
        with pytest.raises(secant.SecantError, match=r"reads a value traced by an earlier "
                           r"trace of memo_features \(kept in a global"):
            grad(memo_loss)(*to_snp((w, x)))
    finally:
        _MEMO.clear()


def test_a_traced_value_left_in_a_global_is_dead_after_the_trace(x64):
    """As JAX's leaked tracer: the cache holds the trace's value, which eager code must not
    read as an array (never a silently wrong value)."""
    w, x, v = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3)), RNG.normal(size=(4, 2))
    grad(cached_loss)(*to_snp((w, x, v)))
    with pytest.raises(secant.SecantError, match=r"used after that trace ended at .*"
                       r"test_traced_globals15.py:\d+"):
        decode(to_snp(v))
    encode(*to_snp((x, w)))         # written again eagerly: an array again
    np.testing.assert_allclose(decode(to_snp(v)), np.sum(np.tanh(x @ w) * v), rtol=1e-12)


def test_other_transforms_of_the_frame_stack(x64):
    """value_and_grad, jvp, vjp, jacrev and jacfwd of a function whose parameters pass through
    the frame stack: against float64 central differences."""
    from others15_check import fd_jvp
    p, x, y = to_snp((HK_PARAMS, X, Y))
    value, g = secant.value_and_grad(hk_loss)(p, x, y)
    np.testing.assert_allclose(float(value), float(hk_loss(p, x, y)), rtol=1e-14)
    assert_trees_close(g, fd_grad(hk_loss, (p, x, y)))
    t = {k: RNG.normal(size=np.shape(a)) for k, a in HK_PARAMS.items()}
    want = fd_jvp(lambda q: APPLY(q, x), (p,), (t,))
    out, tangent = secant.jvp(lambda q: APPLY(q, x), (p,), (to_snp(t),))
    np.testing.assert_allclose(out, APPLY(p, x), rtol=1e-14)
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)
    ct = RNG.normal(size=5)
    _, pullback = secant.vjp(lambda q: APPLY(q, x), p)
    assert_trees_close(pullback(to_snp(ct))[0],
                       fd_grad(lambda q: jnp.sum(APPLY(q, x) * ct), (p,)))
    for jac in (secant.jacrev, secant.jacfwd):
        J = jac(lambda q: APPLY(q, x))(p)
        np.testing.assert_allclose(sum(np.tensordot(np.asarray(J[k]), t[k], axes=np.ndim(t[k]))
                                       for k in J), want, rtol=1e-6, atol=1e-8)


def test_apply_with_star_args_transformed_directly(x64):
    """haiku's apply(params, *args) itself, as users pass it: vmap(apply, in_axes=(0, None))
    and jacrev(apply) (the trace of apply specialised to the call's arguments)."""
    from others15_check import fd_jvp
    stacked = {k: np.stack([v, -0.5 * v, 2 * v]) for k, v in HK_PARAMS.items()}
    check_vmap(APPLY, (stacked, X), in_axes=(0, None))
    p, x = to_snp((HK_PARAMS, X))
    t = {k: RNG.normal(size=np.shape(a)) for k, a in HK_PARAMS.items()}
    want = fd_jvp(lambda q: APPLY(q, x), (p,), (t,))
    J = secant.jacrev(APPLY)(p, x)
    np.testing.assert_allclose(sum(np.tensordot(np.asarray(J[k]), t[k], axes=np.ndim(t[k]))
                                   for k in J), want, rtol=1e-6, atol=1e-8)


_LOG = []


def logging_loss(params, x):
    _STACK.append(_Ctx(params))
    try:
        h = jnp.sum(jnp.tanh(_STACK[-1].params["w"] * x))
        _LOG.append(f"loss {h:.3f}")    # a traced value formatted: no number to write
        return h
    finally:
        _STACK.pop()


def test_user_code_failing_on_a_traced_value_keeps_the_refusal(x64):
    """The trace fails inside the user's code (a Python TypeError from formatting a traced
    value): a SecantError naming the store into the global and why the trace failed, never
    the bare TypeError, and the frame stack left as it was."""
    depth = len(_STACK)
    with pytest.raises(secant.SecantError, match=r"stores the differentiated value params in "
                       r"_STACK[\s\S]*trace cannot be taken either: TypeError"):
        grad(logging_loss)(*to_snp(({"w": np.ones(3)}, np.ones(3))))
    assert len(_STACK) == depth
    _LOG.clear()


def test_jit_and_vmap_keep_the_frame_stack_balanced(x64):
    """try: return f(*args) / finally: _FRAMES.pop() under jit and vmap (which read the
    desugared source): the finally block runs before the return (it was dropped: each call left
    a frame holding its params on the stack), and the answers agree with eager."""
    from test_others2_modules import _FRAMES
    p, x = to_snp((HK_PARAMS, X))
    depth, depth2 = len(_FRAMES), len(_STACK)
    want = APPLY(p, x)
    np.testing.assert_allclose(jit(APPLY)(p, x), want, rtol=1e-12)
    np.testing.assert_allclose(vmap(APPLY, in_axes=(None, 0))(p, x), want, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(APPLY, in_axes=(None, 0)))(p, x), want, rtol=1e-12)
    w, xs = RNG.normal(size=3), RNG.normal(size=(4, 3))
    np.testing.assert_allclose(vmap(settings_loss, in_axes=(None, 0))(*to_snp(({"w": w}, xs))),
                               np.tanh(w * xs).sum(axis=1), rtol=1e-12)
    assert (len(_FRAMES), len(_STACK)) == (depth, depth2)
