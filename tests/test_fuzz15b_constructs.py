"""Issue 15: constructs test_random_programs2's generator kept switched off (try_raises,
lambda_list, meta_range), each named here: every transform gives Python's (and JAX's) answer,
checked against float64 central differences and a Python loop (test_random_programs2's
check_chain), or refuses clearly where JAX refuses."""
import numpy as np
import pytest

import secant
from test_random_programs import load
from test_random_programs2 import _program, check_chain

CHAINS = (["grad"], ["jit"], ["vmap"], ["grad", "jit"], ["vmap", "jit"], ["jacrev", "jacfwd"],
          ["jacfwd", "jacfwd"], ["grad", "vmap"], ["jacrev"])


def test_a_static_try_body_that_raises_takes_its_handler(x64):
    """`try: c = float('x')` / `except ValueError: c = -0.3`: grad and vmap ran the body
    inline and the ValueError propagated (jit was right). The body reads no local (so no
    traced value): it runs in a small function of its own, with its handlers, and its
    outcome picks the handler (desugar._static_try)."""
    source = _program(["try:", "    c = float('x')", "except ValueError:", "    c = -0.3",
                       "v1 = c * snp.sin(v0)"])
    for names in CHAINS:
        check_chain(source, (3,), names)


def test_a_static_try_with_two_handlers_else_and_finally(x64):
    """The second handler, the else: block (when the body does not raise) and finally:."""
    source = _program(["try:", "    c = float(NAME)", "except TypeError:", "    c = 2.0",
                       "except ValueError:", "    c = -0.3", "else:", "    c = c * 0.5",
                       "finally:", "    d = 0.4", "v1 = c * snp.sin(v0) + d * v0"])
    for text, c in (("'x'", -0.3), ("None", 2.0), ("'0.6'", 0.3)):
        f = load(source.replace("FLAG = ", f"NAME = {text}\nFLAG = "))
        x = np.array([0.3, -0.2, 0.5])
        v1 = c * np.sin(x) + 0.4 * x
        np.testing.assert_allclose(secant.jit(f)(x), np.sum(v1 * x + v1), rtol=1e-12)
        want = (1 + x) * (c * np.cos(x) + 0.4) + v1
        for got in (secant.grad(f)(x), secant.jit(secant.grad(f))(x),
                    secant.vjp(f, x)[1](np.float64(1.0))[0]):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(secant.jvp(f, (x,), (np.ones(3),))[1], np.sum(want),
                                   rtol=1e-12)
        xs = np.stack([x, -x])
        np.testing.assert_allclose(secant.vmap(f)(xs), [f(x), f(-x)], rtol=1e-12)
        np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(f)))(xs),
                                   np.stack([secant.grad(f)(x), secant.grad(f)(-x)]),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.diag(secant.hessian(f)(x)),
                                   (1 + x) * (-c * np.sin(x)) + 2 * (c * np.cos(x) + 0.4),
                                   rtol=1e-10)


def test_a_static_try_body_that_raises_an_unhandled_error_raises_it(x64):
    f = load(_program(["try:", "    c = float('x')", "except KeyError:", "    c = -0.3",
                       "v1 = c * snp.sin(v0)"]))
    for t in (secant.grad, secant.vmap, secant.jit):
        with pytest.raises(ValueError, match="could not convert"):
            t(f)(np.ones((2, 3)) if t is secant.vmap else np.ones(3))


LAMBDA_LISTS = {
    "generator": ["fs = [lambda t: snp.cos(t), lambda t: t * v0]",
                  "v1 = sum(fn(v0) for fn in fs)"],
    "loop": ["fs = (lambda t: t * v0, snp.tanh, lambda t, s=0.5: s * snp.sin(t))", "v1 = v0",
             "for g in fs:", "    v1 = v1 + 0.5 * g(v1)"],
    "index_len": ["fs = [lambda t: snp.sin(t) * v0, lambda t: snp.tanh(v0) * t]",
                  "v1 = fs[0](v0) - fs[-1](v0 * 0.5) * len(fs)",
                  "v1 = v1 + snp.sum(snp.stack([h(v1) for h in fs]), axis=0)"],
}


@pytest.mark.parametrize("case", list(LAMBDA_LISTS))
def test_a_list_of_lambdas_closing_over_a_traced_value(x64, case):
    """`fs = [lambda t: snp.cos(t), lambda t: t * v0]` then `sum(fn(v0) for fn in fs)`:
    grad and vmap refused 'this lambda closes over v0 ... used here as a value' (a lambda
    was followed where called or passed, not stored). A list or tuple of functions bound once
    and only iterated, indexed with constants or measured is resolved element by element
    (transformer/function_lists.py)."""
    source = _program(LAMBDA_LISTS[case])
    for names in CHAINS + (["grad", "jacfwd"], ["grad", "vmap", "jit"], ["vmap", "vmap"]):
        check_chain(source, (3,), names)


def test_the_resolved_list_reads_as_its_elements():
    f = load(_program(LAMBDA_LISTS["loop"]))
    text = "\n".join(ln for ln in secant.source(secant.grad(f)).splitlines()
                     if not ln.strip().startswith("#"))     # (comments quote the user's lines)
    assert "fs_0(" in text and "snp.tanh(" in text and "fs_2" in text, text
    assert " g(" not in text and "fs[" not in text, text


@pytest.mark.parametrize("body", [
    ["fs = [lambda t: snp.cos(t), lambda t: t * v0]", "v1 = _apply_all(fs, v0)"],
    ["fs = [lambda t: snp.cos(t), lambda t: t * v0]", "fs.append(snp.sin)",
     "v1 = sum(fn(v0) for fn in fs)"],
    ["fs = [lambda t: snp.cos(t), lambda t: t * v0]", "v1 = v0",
     "for g in fs:", "    v1 = g(v1)", "v1 = g(v1)"],
])
def test_a_list_of_lambdas_used_otherwise_is_still_refused_clearly(x64, body):
    """Passed to a helper, changed, or its loop variable read after the loop: left as
    written, and refused clearly (never a wrong value)."""
    source = _program(body).replace("def f(v0):", "def _apply_all(fs, x):\n"
                                    "    return sum(g(x) for g in fs)\n\n\ndef f(v0):")
    f = load(source)
    x = np.array([0.3, -0.2, 0.5])
    for t in (secant.grad, secant.vmap):
        with pytest.raises(secant.SecantError, match="closes over v0"):
            t(f)(np.stack([x, -x]) if t is secant.vmap else x)


META_RANGE = {
    "local_dict": ["cfg = {'w': v0, 'n': 2}", "v1 = v0", "for _ in range(cfg['n']):",
                   "    v1 = snp.sin(v1) * cfg['w']"],
    "arithmetic": ["cfg = {'w': v0 * 0.5, 'n': 3}", "v1 = v0", "for _ in range(cfg['n'] - 1):",
                   "    v1 = snp.sin(v1) * cfg['w'] + 0.1"],
    "meta_field": ["m = Model(v0, 0.3, power=3)", "v1 = m.energy(v0)"],
}


@pytest.mark.parametrize("case", list(META_RANGE))
def test_range_of_an_int_item_beside_batched_values(x64, case):
    """`cfg = {'w': v0, 'n': 2}; for _ in range(cfg['n'])`: vmap refused 'the item n is an
    array of ints' (the batched dict holds the int broadcast), though JAX's vmap keeps the
    dict's int a Python int. broadcast_batch notes the int it broadcasts
    (ad/helpers.note_broadcast_int) and static_item reads it back."""
    source = _program(META_RANGE[case])
    for names in CHAINS + (["vmap", "vmap"], ["grad", "vmap", "jit"], ["vmap", "jacrev"],
                           ["jacfwd", "vmap"]):
        check_chain(source, (3,), names)


def _ranged(d):
    import secant.numpy as snp
    v = d["w"]
    for _ in range(d["n"]):
        v = snp.sin(v) * d["w"]
    return snp.sum(v)


def test_vmap_of_a_dict_input_with_an_int_as_jax_does(x64):
    """vmap(f)(d) with d = {'w': batched, 'n': ...}: in_axes None for 'n' (a Python int)
    works, as in JAX; 'n' batched (an array of ints mapped over) is refused clearly, as JAX
    raises TracerIntegerConversionError; a Python int mapped over axis 0 is refused as JAX
    refuses it (rank 0); under jit the int is traced and refused, as JAX's jit does."""
    x = np.array([0.3, -0.2, 0.5])
    xs = np.stack([x, 2 * x])
    want = [_ranged({"w": x, "n": 2}), _ranged({"w": 2 * x, "n": 2})]
    got = secant.vmap(_ranged, in_axes=({"w": 0, "n": None},))({"w": xs, "n": 2})
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(secant.SecantError, match="item 'n'"):     # jit traces the int: JAX
        secant.jit(secant.vmap(_ranged, in_axes=({"w": 0, "n": None},)))({"w": xs, "n": 2})
    grads = secant.vmap(secant.grad(_ranged), in_axes=({"w": 0, "n": None},))({"w": xs, "n": 2})
    fd = [[(_ranged({"w": xi + 1e-6 * e, "n": 2}) - _ranged({"w": xi - 1e-6 * e, "n": 2}))
           / 2e-6 for e in np.eye(3)] for xi in xs]
    np.testing.assert_allclose(grads["w"], fd, rtol=1e-6)
    with pytest.raises(secant.SecantError, match="an array of ints .*batched.*in_axes None"):
        secant.vmap(_ranged)({"w": xs, "n": np.array([2, 2])})
    with pytest.raises(secant.SecantError, match="rank should be at least 1"):
        secant.vmap(_ranged)({"w": xs, "n": 2})
