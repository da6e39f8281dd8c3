"""Issue 15: constructs test_random_programs2's generator kept switched off (try_raises,
lambda_list, meta_range), each named here: every transform gives Python's (and JAX's) answer,
checked against float64 central differences and a Python loop (test_random_programs2's
check_chain), or refuses clearly where JAX refuses."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
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


LAMBDA_LISTS_OTHERWISE = {
    "passed_to_a_helper": ["fs = [lambda t: snp.cos(t), lambda t: t * v0]",
                           "v1 = _apply_all(fs, v0)"],
    "appended_to": ["fs = [lambda t: snp.cos(t), lambda t: t * v0]", "fs.append(snp.sin)",
                    "v1 = sum(fn(v0) for fn in fs)"],
}
_APPLY_ALL = "def _apply_all(fs, x):\n    return sum(g(x) for g in fs)\n\n\ndef f(v0):"


@pytest.mark.parametrize("case", list(LAMBDA_LISTS_OTHERWISE))
def test_a_list_of_lambdas_passed_to_a_helper_or_appended_to_gives_pythons_answer(x64, case):
    """Passed to a helper or changed (fs.append): kept as a list of Closure objects (frozen15m;
    refused before, 'closes over v0'), every transform gives Python's answer: against float64
    central differences and a Python loop over the batch."""
    source = _program(LAMBDA_LISTS_OTHERWISE[case]).replace("def f(v0):", _APPLY_ALL)
    for names in CHAINS + (["grad", "jacfwd"], ["vmap", "vmap"]):
        check_chain(source, (3,), names)


READ_AFTER_LOOP = ["fs = [lambda t: snp.cos(t), lambda t: t * v0]", "v1 = v0",
                   "for g in fs:", "    v1 = g(v1)", "v1 = g(v1)"]


def test_a_lambda_loop_variable_read_after_the_loop_is_batched_and_differentiated_forward(x64):
    """`for g in fs: v1 = g(v1)` then `v1 = g(v1)`: g after the loop is fs's last lambda,
    which closes over v0. vmap read it as unbatched after the loop (mapped v1 over it: an
    outer product, a silent wrong value); the batched flag the body gave g now outlives the
    loop. Forward chains against float64 central differences and a Python loop."""
    source = _program(READ_AFTER_LOOP)
    for names in (["vmap"], ["jit"], ["vmap", "jit"], ["jacfwd", "jacfwd"], ["vmap", "vmap"]):
        check_chain(source, (3,), names)


@pytest.mark.parametrize("program", [
    _program(READ_AFTER_LOOP),
    _program(["h = lambda t: t * v0", "fs = [h, h]", "v1 = v0", "for g in fs:",
              "    v1 = g(v1)", "v1 = g(v1)"]),
], ids=["two_lambdas", "one_lambda_twice"])
def test_a_loop_variable_read_after_the_loop_is_differentiated_in_reverse(x64, program):
    """Reverse mode added the cotangent of g's use after the loop to every iteration's g, not
    the last one's only: a tree_map mismatch for two lambdas, and for one lambda twice a
    silently wrong gradient (6x^3 for 4x^3); then refused at the loop's line. The loop
    variable read after the loop is now carried as the names the body assigns are
    (normalize._loop): its cotangent after the loop goes to the last iteration alone
    (loop15n). Reverse chains against float64 central differences."""
    for names in (["grad"], ["jacrev"], ["jacrev", "jacfwd"], ["grad", "jit"],
                  ["grad", "vmap"], ["jacfwd", "jacrev"]):
        check_chain(program, (3,), names)
    if "fs = [h, h]" in program:    # g(t) = t * x three times: v1 = x**4, f = sum(x**5 + x**4)
        x = np.array([0.3, -0.2, 0.5])
        np.testing.assert_allclose(secant.grad(load(program))(x), 5 * x ** 4 + 4 * x ** 3,
                                   rtol=1e-12)


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


def _ranged_out(x):
    cfg = {"w": x, "n": 2}
    v = x
    for _ in range(cfg["n"]):
        v = snp.sin(v) * cfg["w"]
    return {"v": v * cfg["n"], "n": cfg["n"]}


def _while_count(x):
    def body(s):
        i, y = s
        return i + 1, snp.sin(y) * x[0] + x
    _, y = lax.while_loop(lambda s: s[0] < 3, body, (0, x))
    return snp.sum(y ** 2)


@pytest.mark.parametrize("outer", [2, 3])
def test_a_python_int_broadcast_twice_keeps_its_layout(x64, outer):
    """vmap of a vmap that broadcasts a Python int (a dict item, a loop counter): the inner
    broadcast of the outer-batched int goes behind the outer axis. With 215514c's structural
    _noted_broadcast it went in front and the outer vmap broadcast it again: vmap(hessian) of
    a while loop counting with 0 raised ShapeError (2, 3, 2) vs (2, 3, 3)."""
    x33 = np.array([[0.3, -0.2, 0.5], [0.1, 0.2, 0.3], [-0.4, 0.6, 0.2]])
    xs = np.stack([x33, 2 * x33, -x33][:outer])           # (outer, 3, 3)
    got = secant.vmap(secant.vmap(_ranged_out))(xs)
    for i in range(outer):
        for j in range(3):
            v = xs[i, j]
            for _ in range(2):
                v = np.sin(v) * xs[i, j]
            np.testing.assert_allclose(got["v"][i, j], 2 * v, rtol=1e-12)
    np.testing.assert_array_equal(got["n"], np.full((outer, 3), 2))
    xo = x33[:outer]
    jac = secant.vmap(secant.jacfwd(_while_count))(xo)
    hess = secant.vmap(secant.hessian(_while_count))(xo)
    assert jac.shape == (outer, 3) and hess.shape == (outer, 3, 3)
    for i in range(outer):
        e = 1e-5 * np.eye(3)
        fd = [(_while_count(xo[i] + d) - _while_count(xo[i] - d)) / 2e-5 for d in e]
        np.testing.assert_allclose(jac[i], fd, rtol=1e-7)
        gfd = [(secant.grad(_while_count)(xo[i] + d) - secant.grad(_while_count)(xo[i] - d))
               / 2e-5 for d in e]
        np.testing.assert_allclose(hess[i], gfd, rtol=1e-6, atol=1e-8)


def _reads_n(d):
    v = d["w"]
    for _ in range(d["n"]):
        v = snp.sin(v)
    return snp.sum(v)


def test_a_noted_int_never_leaks_to_another_value(x64):
    """The note (ad/helpers.note_broadcast_int) is on the broadcast array, not on the int (a
    Python int takes no weak reference, so the 2 in one dict never marks another 2), and the
    broadcast array is immutable: an array noted holds its int in every element. Where JAX
    refuses, so does secant: an array of 2s mapped in beside a local {'n': 2}; an item chosen
    by a batched lax.cond between two ints; and what a vmap returns: its broadcast int is an
    array like any other outside it (the note ended with that vmap), mapped again by a vmap."""
    x = np.array([[0.3, -0.2, 0.5], [0.1, 0.2, 0.3]])

    def local_and_mapped(d, x):
        cfg = {"w": x, "n": 2}
        return _reads_n(cfg) + _reads_n({"w": x, "n": d["n"]})
    with pytest.raises(secant.SecantError, match="item 'n' is an array of ints"):
        secant.vmap(local_and_mapped, in_axes=({"n": 0}, 0))({"n": np.array([2, 2])}, x)
    got = secant.vmap(local_and_mapped, in_axes=({"n": None}, 0))({"n": 3}, x)
    np.testing.assert_allclose(got, [np.sum(np.sin(np.sin(r))) + np.sum(
        np.sin(np.sin(np.sin(r)))) for r in x], rtol=1e-12)

    def chosen(x):
        c = lax.cond(x[0] > 0, lambda: {"n": 2, "w": x}, lambda: {"n": 3, "w": -x})
        return _reads_n(c) + snp.sum(x)
    with pytest.raises(secant.SecantError, match="item 'n' is an array of ints"):
        secant.vmap(chosen)(np.stack([x[0], -x[0]]))

    out = secant.vmap(lambda x: {"w": 2 * x, "n": 2})(x)
    np.testing.assert_array_equal(out["n"], [2, 2])
    with pytest.raises(secant.SecantError, match="item 'n' is an array of ints"):
        secant.vmap(_reads_n)(out)
