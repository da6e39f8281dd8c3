"""jit of a fresh closure per step (secant/jit_closures.py, issue 19): a new function of the code
and kinds of values of one traced before runs that one's program with its own closed-over
arrays, without a trace; each closure's values give its own result, and whatever a template
cannot stand for (a closed-over array read as a Python value, a scalar, a global rebound, an
object) is traced as before."""
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import api, jit_closures

RNG = np.random.default_rng(19)
P = np.array([0.3, -0.2, 0.5], np.float32)
BATCHES = [RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(6)]


def loss(p, batch):
    return snp.sum(snp.tanh(batch @ p) ** 2)


def loss_grad(p, batch):     # closed form
    h = np.tanh(batch.astype(np.float64) @ p)
    return batch.T @ (2 * h * (1 - h ** 2))


def _traces():
    return api.stats["traces"]


@pytest.fixture(autouse=True)
def _fresh():
    secant.clear_caches()
    yield
    secant.clear_caches()


def test_fresh_closures_under_jit_grad_trace_twice_and_get_their_own_values():
    before = _traces()
    for b in BATCHES:
        g = secant.jit(secant.grad(lambda p: loss(p, b)))(P)  # noqa: B023 (the pattern)
        np.testing.assert_allclose(g, loss_grad(P, b), rtol=2e-5, atol=1e-6)
    # the first traced as before, the second made the template, the rest traced nothing
    assert _traces() - before == 2
    assert jit_closures.stats["hits"] >= len(BATCHES) - 2


@pytest.mark.parametrize("transform", ["jit", "value_and_grad"])
def test_plain_closures_and_value_and_grad(transform):
    before = _traces()
    for b in BATCHES:
        if transform == "jit":
            out = secant.jit(lambda p: snp.tanh(b @ p))(P)      # noqa: B023
            np.testing.assert_allclose(out, np.tanh(b @ P), rtol=1e-5)
        else:
            v, g = secant.jit(secant.value_and_grad(lambda p: loss(p, b)))(P)  # noqa: B023
            np.testing.assert_allclose(v, np.sum(np.tanh(b @ P) ** 2), rtol=1e-5)
            np.testing.assert_allclose(g, loss_grad(P, b), rtol=2e-5, atol=1e-6)
    assert _traces() - before == 2


def test_device_arrays_tuples_and_dicts_in_cells():
    before = _traces()
    for b in BATCHES:
        xy = (secant.device_put(b), {"y": b[:, 0] * 2.0})

        def f(p):
            x, d = xy
            return snp.sum((x @ p - d["y"]) ** 2)
        want = 2 * b.T.astype(np.float64) @ (b @ P - 2 * b[:, 0])
        np.testing.assert_allclose(secant.jit(secant.grad(f))(P), want, rtol=2e-5, atol=1e-5)
    assert _traces() - before == 2


def test_python_scalars_are_each_closures_own():
    x = np.array([0.5, 1.0, 2.0], np.float32)
    for s in (1.0, 2.0, 1.0, 2.0, 3.0, 3.0, 0.0, -0.0, 2, True):
        out = secant.jit(lambda v: 1.0 / (v * 0.0 + s))(x)     # noqa: B023
        with np.errstate(divide="ignore"):
            want = 1.0 / (x * 0.0 + np.float32(s))
        np.testing.assert_array_equal(out, want.astype(np.float32))   # (inf and -inf)


def test_a_closed_over_array_read_as_a_python_value_is_traced_each_time():
    x = np.array([0.5, 1.0, 2.0], np.float32)
    for b in BATCHES:
        def f(v):
            if float(b[0, 0]) > 0:          # (concrete: no template can stand for it)
                return v * float(b[0, 1])
            return v - b[1, :]
        want = x * b[0, 1] if b[0, 0] > 0 else x - b[1, :]
        np.testing.assert_allclose(secant.jit(f)(x), want, rtol=1e-6)


def test_a_global_a_callee_reads_rebound_between_steps():
    x = np.array([0.5, 1.0, 2.0], np.float32)
    for scale in (1.0, 2.0, 3.0, 3.0, 4.0):
        globals()["SCALE"] = scale
        for b in BATCHES[:2]:
            g = secant.jit(secant.grad(lambda p: _scaled(p, b)))(x)    # noqa: B023
            np.testing.assert_allclose(g, scale * loss_grad(x, b), rtol=2e-5, atol=1e-6)
            g = secant.jit(secant.grad(lambda p: loss(p, b) * SCALE))(x)  # noqa: B023
            np.testing.assert_allclose(g, scale * loss_grad(x, b), rtol=2e-5, atol=1e-6)


SCALE = 1.0


def _scaled(p, batch):
    return loss(p, batch) * SCALE


class _Config:
    scale = 1.0


def _deep1(p, b):
    return _deep2(p, b)


def _deep2(p, b):
    return _deep3(p, b)


def _deep3(p, b):
    return _deep4(p, b)


def _deep4(p, b):
    return _deep5(p, b)


def _deep5(p, b):
    return loss(p, b) * _Config.scale * SCALE


def test_a_module_or_class_attribute_or_a_deep_callees_global_rebound_between_steps():
    """SILENT WRONG VALUE (fixed): the template of a closure reading `config.scale` (a
    module's attribute), `_Config.scale` (a class's) or a global five calls down was keyed
    by the module's, class's or callee's identity, so the third fresh closure ran the second's
    program with the old scale. Each attribute the code names is now part of the key."""
    x = np.array([0.5, 1.0, 2.0], np.float32)
    module = sys.modules[__name__]
    for scale in (1.0, 2.0, 3.0, 4.0):
        globals()["SCALE"] = 1.0
        _Config.scale = scale
        b = BATCHES[0]
        g = secant.jit(secant.grad(lambda p: loss(p, b) * module.SCALE * _Config.scale))(x)
        np.testing.assert_allclose(g, scale * loss_grad(x, b), rtol=2e-5, atol=1e-6)
        module.SCALE = scale
        _Config.scale = 1.0
        g = secant.jit(secant.grad(lambda p: loss(p, b) * module.SCALE))(x)
        np.testing.assert_allclose(g, scale * loss_grad(x, b), rtol=2e-5, atol=1e-6)
        g = secant.jit(secant.grad(lambda p: _deep1(p, b)))(x)
        np.testing.assert_allclose(g, scale * loss_grad(x, b), rtol=2e-5, atol=1e-6)
    globals()["SCALE"] = 1.0


class _Model:
    def __init__(self, w):
        self.w = w


def test_an_object_in_a_cell_is_traced_each_time():
    m = _Model(BATCHES[0])
    for b in BATCHES:
        m.w = b             # (the same object, other values: no key can tell)
        out = secant.jit(lambda p: snp.tanh(m.w @ p))(P)
        np.testing.assert_allclose(out, np.tanh(b @ P), rtol=1e-5)


def test_a_closure_that_changes_its_cell_or_list_is_traced_as_before():
    x = np.array([0.5, 1.0, 2.0], np.float32)
    seen = []
    for b in BATCHES[:4]:
        acc = [b[0]]

        def f(v):
            acc.append(v)           # (a side effect on the user's list, at each trace)
            return v * acc[0]
        np.testing.assert_allclose(secant.jit(f)(x), x * b[0], rtol=1e-6)
        seen.append(len(acc))
    assert seen == [2, 2, 2, 2]     # each closure's own list got its trace's append


_TRACED = []
_COUNT = 0


def _appender():
    def f(x):
        _TRACED.append(1)           # (a global list: each fresh function's trace appends)
        return x * 2.0
    return f


def _counter():
    def f(x):
        global _COUNT
        _COUNT += 1
        return x * 2.0
    return f


def test_side_effects_of_each_fresh_functions_trace_are_kept():
    """A fresh function is traced, as JAX's jit does (one trace cache per function): what its
    trace does to a global list or a global is done for each, never skipped by a template."""
    global _COUNT
    for _ in range(4):
        _TRACED.clear()
        _COUNT = 0
        np.testing.assert_allclose(secant.jit(_appender())(1.0), 2.0)
        np.testing.assert_allclose(secant.jit(_counter())(1.0), 2.0)
        assert _TRACED == [1] and _COUNT == 1


def test_other_shapes_and_dtypes_get_their_own_programs():
    for shape, dt in [((4, 3), np.float32), ((5, 3), np.float32), ((4, 3), np.float32),
                      ((5, 3), np.float32), ((4, 3), np.int32), ((4, 3), np.int32)]:
        b = RNG.standard_normal(shape).astype(dt) if dt is np.float32 else \
            RNG.integers(-3, 3, shape).astype(dt)
        out = secant.jit(lambda p: snp.sum(b @ p))(P)        # noqa: B023
        np.testing.assert_allclose(out, np.sum(b.astype(np.float64) @ P), rtol=1e-5)


def test_templates_keep_no_closures_arrays():
    arrays = []
    for b in BATCHES[:4]:
        arr = secant.device_put(b)
        arrays.append(arr)
        g = secant.jit(secant.grad(lambda p: loss(p, arr)))(P)   # noqa: B023
        np.testing.assert_allclose(g, loss_grad(P, b), rtol=2e-5, atol=1e-6)
    assert jit_closures._templates
    ids = {id(a) for a in arrays} | {id(b) for b in BATCHES}
    for tpl in jit_closures._templates.values():
        kept = list(tpl.compiled.consts) + list(tpl.holds)
        assert not any(id(x) in ids for x in kept)


def test_the_closure_cache_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(jit_closures, "enabled", [False])
    before = _traces()
    for b in BATCHES[:4]:
        np.testing.assert_allclose(secant.jit(lambda p: snp.tanh(b @ p))(P),  # noqa: B023
                                   np.tanh(b @ P), rtol=1e-5)
    assert _traces() - before == 4


BUFFER = np.ones(3, np.float32)


def test_a_global_numpy_array_written_in_place_between_steps():
    """SILENT WRONG VALUE (fixed): a global NumPy array was keyed by identity and its values
    copied into the template's program, so a replay buffer written in place between steps
    kept its first values for every later fresh closure. JAX traces each fresh function, so
    reads it anew: a writable global NumPy array now gives no key (traced as before)."""
    x = np.array([0.5, 1.0, 2.0], np.float32)
    for step in range(4):
        BUFFER[:] = step + 1.0
        out = secant.jit(lambda p: snp.sum(p * BUFFER))(x)
        np.testing.assert_allclose(out, (step + 1.0) * 3.5, rtol=1e-6)
