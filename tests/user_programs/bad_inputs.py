"""Bad inputs a user gives the second battery's programs (issue 15, explore15i): wrong shapes,
integer arrays to grad, a string, None, mismatched pytrees, a non-scalar output to grad, a list
of arrays where a dict is expected; and awkward inputs JAX accepts (a list of arrays to grad, a
tuple of Python floats), which must give the right value. Each bad one must raise the exception
type JAX raises there, with a message naming the user's file and line (the program's line for
an error inside it, the call's line, marked `# !`, for API misuse): judged by the error
catalogue's `classify` (tests/error_catalogue_cases.py).

bench/user_programs.py --second prints these too; tests/test_explore15i_programs.py asserts them.
"""
import inspect

import numpy as np

import secant
import secant.numpy as jnp

import error_catalogue_cases as catalogue
from user_programs import autograd_style, functorch_style, recipes, tangent_style

HERE = catalogue.os.path.abspath(__file__)
CASES = {}


def _line_of(fn, text):
    """(file, line) of the line of `fn` that contains `text`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, s in enumerate(lines) if text in s]
    assert len(hits) == 1, (fn.__name__, text, hits)
    return inspect.getsourcefile(fn), hits[0]


def classify(case):
    """The catalogue's outcome, where an error raised by Python itself inside the program
    (`None[1:]`, a list indexed by a string: JAX raises the same) names the program's line in
    the note secant adds to it ("In generated code: ... comes from FILE, line N")."""
    try:
        result = case.run()
    except Exception as e:                  # noqa: BLE001 (every exception is an outcome)
        if isinstance(case.expect, catalogue.Value):        # an awkward input JAX accepts
            return "line" if isinstance(e, secant.SecantError) else "internal", \
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        outcome, detail = catalogue._classify_error(case, e)
        noted = f"{case.file}, line {case.line}"
        expected = catalogue.exc_type(case.expect) if isinstance(case.expect, str) else None
        if outcome == "noline" and expected is not None and isinstance(e, expected) and any(
                noted in n for n in getattr(e, "__notes__", ())):
            return "correct", ""
        return outcome, detail
    if isinstance(case.expect, catalogue.Value):
        return ("correct", "") if case.expect.check(result) else \
            ("wrong", f"got {result!r}, expected {case.expect.what}")
    return "wrong", f"no error (expected {case.expect})"


def registrars(cases, task, here):
    """(bad, good): decorators that register a bad input (`bad(expect, inside=(program, text of
    its offending line))`, None: the `# !` line) and an awkward input JAX accepts (`good(check,
    what)`) in `cases`, for `task`'s battery written in the file `here`."""
    def bad(expect, inside=None):
        def deco(f):
            kw = dict(file=here)
            if inside is not None:
                path, line = _line_of(*inside)
                kw = dict(file=catalogue.os.path.abspath(path), line=line)
            cases[f.__name__] = catalogue.Case(f.__name__, task, f, expect, f, **kw)
            return f
        return deco

    def good(check, what):
        def deco(f):
            cases[f.__name__] = catalogue.Case(f.__name__, task, f,
                                               catalogue.Value(check, what), f, file=here)
            return f
        return deco
    return bad, good


bad, good = registrars(CASES, "explore15i", HERE)


W3 = np.array([0.3, -0.2, 0.5])
X43 = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


# --- API misuse: the call's line --------------------------------------------------------------
@bad("TypeError")
def int_array_to_grad():
    return secant.grad(recipes.rosenbrock)(np.arange(5))  # !


@bad("TypeError")
def string_to_grad():
    return secant.grad(recipes.rastrigin)("1.0, 2.0")  # !


@bad("TypeError")
def string_to_jit():
    return secant.jit(recipes.ackley)("abc")  # !


@bad("TypeError")
def nonscalar_output_to_grad():
    return secant.grad(lambda w: tangent_style.SCALE * w)(W3)  # !


@bad("TypeError")
def mismatched_pytrees_to_jvp():
    p = {"w1": np.ones((3, 4)), "w2": np.ones(4)}
    return secant.jvp(lambda q: functorch_style.model(q, X43), (p,), ([np.ones((3, 4)), np.ones(4)],))  # !


@bad("ValueError")
def tangent_shape_to_jvp():
    return secant.jvp(recipes.rosenbrock, (np.ones(5),), (np.ones(4),))  # !


@bad("ValueError")
def inconsistent_vmap_sizes():
    return secant.vmap(tangent_style.tg_augassign)(np.ones((3, 3)), np.ones((2, 4, 3)))  # !


@bad("ValueError")
def vmap_of_a_scalar():
    return secant.vmap(tangent_style.tg_scalar_chain)(0.7)  # !


@bad("TypeError")
def argnums_past_the_arguments():
    return secant.grad(autograd_style.ag_conv1d, argnums=2)(W3, np.ones(8))  # !


# --- bad values reaching the program: the program's line ---------------------------------------
@bad("TypeError", inside=(autograd_style.ag_einsum_chain, 'jnp.einsum("ij,jk,kl->"'))
def wrong_shapes_to_einsum():
    return secant.grad(autograd_style.ag_einsum_chain)(np.ones((4, 4)), np.ones((3, 3)))


@bad("TypeError", inside=(tangent_style.tg_if_array, "y = x @ w"))
def wrong_shapes_to_matmul_under_jit():
    return secant.jit(tangent_style.tg_if_array)(np.ones(4), X43)


@bad("TypeError", inside=(tangent_style.tg_if_array, "y = x @ w"))
def wrong_shapes_under_vmap_grad():
    return secant.vmap(secant.grad(tangent_style.tg_if_array))(np.ones((2, 4)), np.ones((2, 4, 3)))


@bad("TypeError", inside=(recipes.rosenbrock, "return jnp.sum(100.0"))
def none_to_grad():
    return secant.grad(recipes.rosenbrock)(None)


@bad("TypeError", inside=(functorch_style.ft_jacrev_penalty, "return jnp.tanh(inp @ params"))
def list_where_a_dict_is_expected():
    return secant.grad(functorch_style.ft_jacrev_penalty)([np.ones((3, 4)), np.ones(4)], X43)


@bad("TypeError", inside=(recipes.horner_coeffs, "acc = jnp.zeros_like(x)"))
def string_reaching_the_program():
    return secant.jit(recipes.horner_coeffs, static_argnums=1)(np.ones(3), "x")


# --- awkward inputs JAX accepts: the right value ----------------------------------------------------
def _list_loss(ws):
    return sum(jnp.sum(jnp.sin(w) ** 2) for w in ws)


@good(lambda g: all(np.allclose(a, np.sin(2 * w)) for a, w in zip(g, [W3, X43])),
      "a list of sin(2w)")
def list_of_arrays_to_grad():
    return secant.grad(_list_loss)([W3, X43])


@good(lambda g: isinstance(g, tuple) and np.allclose(g, [-2.0 * (1 - 0.5), 0.0]),
      "Rosenbrock's gradient at (0.5, 0.25) (on its valley y = x**2) as a tuple")
def tuple_of_floats_to_grad():
    def rosen2(p):
        x, y = p
        return 100.0 * (y - x ** 2) ** 2 + (1.0 - x) ** 2
    return secant.grad(rosen2)((0.5, 0.25))


@good(lambda v: np.allclose(v, [recipes.horner(t) for t in (0.1, 0.2, 0.3)]),
      "horner at each point")
def python_list_to_vmap():
    return secant.vmap(recipes.horner)(jnp.array([0.1, 0.2, 0.3]))
