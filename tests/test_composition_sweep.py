"""Every composition of depth 1, 2 and 3 of {grad (of a sum), jvp, vmap (in_axes (0, None)),
vmap (in_axes 0), jit, jacfwd, jacrev, hessian} over small functions written as users write them
(tests/composition_sweep_cases.py), each checked one layer deep against float64 finite
differences, a Python loop (vmap) or eager (jit).

The default profile runs a representative subset (every function at depth 1, each pair of
transforms over three functions, one function for every eighth triple); HYPOTHESIS_PROFILE=
thorough runs the whole product. A case either gives the right value or, where listed in XFAIL
(strict), a clear refusal; in the thorough profile a case outside the table passes only with the
right value or one of the known refusals (KNOWN), never with a wrong value or an internal error.
"""
import itertools
import os

import numpy as np
import pytest

import secant
from secant.backends.errors import SecantError
from secant.transformer.parse import SourceError

import composition_sweep_cases as cases

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
FUNCS = list(cases.FUNCTIONS)
TRANSFORMS = list(cases.TRANSFORMS)


def _default_cases():
    out = [(f, (t,)) for t in TRANSFORMS for f in FUNCS]
    for k, pair in enumerate(itertools.product(TRANSFORMS, repeat=2)):
        out += [(FUNCS[(3 * k + j) % len(FUNCS)], pair) for j in range(3)]
    for k, triple in enumerate(itertools.product(TRANSFORMS, repeat=3)):
        if k % 8 == 0:
            out.append((FUNCS[(k // 8) % len(FUNCS)], triple))
    return out


def _all_cases():
    return [(f, chain) for d in (1, 2, 3) for chain in itertools.product(TRANSFORMS, repeat=d)
            for f in FUNCS]


CASES = _all_cases() if THOROUGH else _default_cases()

# Known refusals (clear errors, never a value): the message they raise -> why.
KNOWN = {
    "cannot see which function lambda": "secant.jvp(lambda y: g(y, w), ...) inside a "
    "transformed function: a lambda passed to secant.jvp is not resolved (a named function is)",
    "nested three deep": "a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)",
    "tree_util.tree_map": "a batching helper (broadcast_batch, batch_second) maps over a pytree "
    "with tree_util.tree_map, which no transform reads",
    "ImportFrom": "a derivative helper imports inside its body (read by a second transform)",
    "BoolOp": "a helper's `a and b` on flags, read by vmap",
    "IfExp": "a helper's `x if c else y` inside a comprehension (add_at, fields_of), read by "
    "a second transform",
    "Lambda in generated code": "second-order reverse mode through lax.fori_loop's lambda",
    "lax.fori_loop, lax.scan or lax.map (second order)": "second-order reverse mode through "
    "lax.scan / fori_loop",
    "snp.split": "unconcatenate calls snp.split, which has no derivative or batching rule",
    "for loop over a batched array": "a Python for over a list that is batched (vmap with the "
    "list of parameters batched, or a derivative's loop over a batched list)",
    "*args or **kwargs": "a generated helper with *args read by another transform",
    "derivative of list": "list(x) of a traced value in a helper (add_at), read by a transform",
    "batching rule for list": "list(x) of a batched value in a helper (add_at), read by vmap",
    "only Python functions defined with def or lambda": "vmap of a Jacobian of containers",
    "derivative of g:": "grad / jvp of a Jacobian whose argument or output is a container",
}


def _refusal(exc):
    if not isinstance(exc, (SecantError, SourceError)):
        return None
    text = str(exc)
    return next((why for key, why in KNOWN.items() if key in text), None)


def _xfail(fname, chain):
    return XFAIL.get((fname, "/".join(chain)))


@pytest.mark.parametrize("fname,chain", CASES, ids=[f"{f}-{'/'.join(c)}" for f, c in CASES])
def test_composition(x64, fname, chain):
    reason = _xfail(fname, chain)
    if reason is not None:
        try:
            cases.check(fname, list(chain))
        except AssertionError:
            raise
        except Exception as e:      # noqa: BLE001
            pytest.xfail(f"{reason}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
        pytest.fail(f"XPASS(strict): {fname} {'/'.join(chain)} now works; drop it from XFAIL")
    try:
        cases.check(fname, list(chain))
    except AssertionError:
        raise
    except Exception as e:      # noqa: BLE001
        why = _refusal(e) if THOROUGH else None
        if why is None:
            raise
        pytest.xfail(why)


def test_vmap_of_vmap_of_dot_with_none_axes(x64):
    """The issue's repro: the outer vmap reads dot_batched (a helper with `x if c else y`)."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3)
    f = secant.vmap(secant.vmap(lambda a, b: cases.snp.dot(a, b), (0, None)), (None, 0))
    np.testing.assert_allclose(np.asarray(f(a, b)), b @ a.T)


def test_jacfwd_of_vmapped_softmax(x64):
    """Was silently wrong: the per-example max's axes, written `z.ndim - 1` without
    parentheses, were not read back whole for an unbatched value."""
    cases.check("softmax", ["vmap", "jacfwd"])
    cases.check("softmax", ["vmap0", "jacfwd"])


def test_vmap_of_vmap_through_flat_examples(x64):
    cases.check("sum_axis", ["vmap", "vmap"])
    cases.check("reshape_transpose", ["vmap0", "vmap"])


def test_grad_of_jacrev(x64):
    """A Jacobian has a source form, which grad reads."""
    cases.check("chain", ["jacrev", "grad"])
    cases.check("softmax", ["jacrev", "vmap"])


# (function, chain innermost first) -> why it fails (strict: a pass must remove the entry)
XFAIL = {
    ('list_params', 'vmap0'): "a Python for over a list that is batched (vmap with the list of parameters batched, or a derivative's loop over a batched list)",
    ('concatenate', 'jacrev'): 'unconcatenate calls snp.split, which has no derivative or batching rule',
    ('concatenate', 'hessian'): 'internal: SecantTypeError: mul got incompatible shapes for broadcasting: (3, 7), (3,)',
    ('concatenate', 'grad/jacrev'): 'unconcatenate calls snp.split, which has no derivative or batching rule',
    ('at_set', 'grad/hessian'): "internal: SyntaxError: duplicate argument 'a_dot' in function definition (<secant: unreduce_jvp_jvp>, line 1)",
    ('list_append', 'grad/hessian'): "a helper's `x if c else y` inside a comprehension (add_at, fields_of), read by a second transform",
    ('mlp', 'jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('chain', 'jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('log_tanh', 'jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('dot_matrix', 'jvp/jvp'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('matmul_tanh', 'jvp/jvp'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('sum_axis', 'jvp/jvp'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('mean_max', 'jvp/vmap'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('slices', 'jvp/vmap'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('where', 'jvp/vmap'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('static_if', 'jvp/vmap0'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('python_loop', 'jvp/vmap0'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('scan', 'jvp/vmap0'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('list_params', 'jvp/jacfwd'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('dict_params', 'jvp/jacfwd'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('softmax', 'jvp/jacfwd'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('logsumexp', 'jvp/jacrev'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('concatenate', 'jvp/jacrev'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('stack', 'jvp/jacrev'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('reshape_transpose', 'jvp/hessian'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('at_set', 'jvp/hessian'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('list_append', 'jvp/hessian'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('concatenate', 'vmap/jacrev'): 'unconcatenate calls snp.split, which has no derivative or batching rule',
    ('list_append', 'vmap0/grad'): "a helper's `x if c else y` inside a comprehension (add_at, fields_of), read by a second transform",
    ('cond', 'vmap0/jacfwd'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('list_params', 'vmap0/jacfwd'): "a Python for over a list that is batched (vmap with the list of parameters batched, or a derivative's loop over a batched list)",
    ('concatenate', 'vmap0/hessian'): 'internal: SecantTypeError: mul got incompatible shapes for broadcasting: (14, 0, 7), (2, 1)',
    ('concatenate', 'jit/hessian'): 'internal: SecantTypeError: mul got incompatible shapes for broadcasting: (3, 7), (3,)',
    ('reshape_transpose', 'jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('at_set', 'jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('list_append', 'jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('conditional_expression', 'jacfwd/jvp'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('mlp', 'jacfwd/jvp'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('chain', 'jacfwd/jvp'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('log_tanh', 'jacfwd/vmap'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('dot_matrix', 'jacfwd/vmap'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('matmul_tanh', 'jacfwd/vmap'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('sum_axis', 'jacfwd/vmap0'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('mean_max', 'jacfwd/vmap0'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('slices', 'jacfwd/vmap0'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('softmax', 'jacfwd/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('logsumexp', 'jacfwd/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('concatenate', 'jacfwd/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('at_set', 'jacrev/grad'): 'a derivative helper imports inside its body (read by a second transform)',
    ('list_append', 'jacrev/jvp'): 'a derivative helper imports inside its body (read by a second transform)',
    ('dict_params', 'jacrev/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('softmax', 'jacrev/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('logsumexp', 'jacrev/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('concatenate', 'hessian/grad'): 'internal: SourceError: secant does not know the derivative of concatenate_vjp_jvp: it is not a numpy/secant.numpy',
    ('stack', 'hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('reshape_transpose', 'hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('at_set', 'hessian/jvp'): 'a derivative helper imports inside its body (read by a second transform)',
    ('list_append', 'hessian/jvp'): 'a derivative helper imports inside its body (read by a second transform)',
    ('conditional_expression', 'hessian/jvp'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('mlp', 'hessian/vmap'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('chain', 'hessian/vmap'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('log_tanh', 'hessian/vmap'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('dot_matrix', 'hessian/vmap0'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('matmul_tanh', 'hessian/vmap0'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('sum_axis', 'hessian/vmap0'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('mean_max', 'hessian/jit'): 'internal: ValueError: The truth value of an array with more than one element is ambiguous. Use a.any() or a.all(',
    ('static_if', 'hessian/jacfwd'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('python_loop', 'hessian/jacfwd'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('scan', 'hessian/jacfwd'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('fori', 'hessian/jacrev'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('cond', 'hessian/jacrev'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('helper_call', 'hessian/jacrev'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('list_params', 'hessian/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('dict_params', 'hessian/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('softmax', 'hessian/hessian'): 'a Jacobian of a Jacobian of a Jacobian (_Jacobian._run_nested)',
    ('log_tanh', 'grad/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('dot_matrix', 'grad/vmap/grad'): 'a derivative helper imports inside its body (read by a second transform)',
    ('matmul_tanh', 'grad/vmap0/grad'): 'a derivative helper imports inside its body (read by a second transform)',
    ('mean_max', 'grad/jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('slices', 'grad/jacrev/grad'): "a helper's `x if c else y` inside a comprehension (add_at, fields_of), read by a second transform",
    ('where', 'grad/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('static_if', 'jvp/grad/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('python_loop', 'jvp/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('scan', 'jvp/vmap/grad'): 'a generated helper with *args read by another transform',
    ('fori', 'jvp/vmap0/grad'): 'a generated helper with *args read by another transform',
    ('cond', 'jvp/jit/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('helper_call', 'jvp/jacfwd/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('list_params', 'jvp/jacrev/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('dict_params', 'jvp/hessian/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('logsumexp', 'vmap/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('at_set', 'vmap/jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('list_append', 'vmap/jacrev/grad'): "a helper's `x if c else y` inside a comprehension (add_at, fields_of), read by a second transform",
    ('conditional_expression', 'vmap/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('chain', 'vmap0/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('dot_matrix', 'vmap0/vmap0/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('sum_axis', 'vmap0/jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('slices', 'vmap0/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('static_if', 'jit/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('scan', 'jit/vmap0/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('fori', 'jit/jit/grad'): 'grad / jvp of a Jacobian whose argument or output is a container',
    ('cond', 'jit/jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('list_params', 'jit/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('dict_params', 'jacfwd/grad/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('softmax', 'jacfwd/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('logsumexp', 'jacfwd/vmap/grad'): 'grad / jvp of a Jacobian whose argument or output is a container',
    ('concatenate', 'jacfwd/vmap0/grad'): 'grad / jvp of a Jacobian whose argument or output is a container',
    ('stack', 'jacfwd/jit/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('reshape_transpose', 'jacfwd/jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('at_set', 'jacfwd/jacrev/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('list_append', 'jacfwd/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('mlp', 'jacrev/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('matmul_tanh', 'jacrev/jacfwd/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('sum_axis', 'jacrev/jacrev/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('mean_max', 'jacrev/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('slices', 'hessian/grad/grad'): 'a derivative helper imports inside its body (read by a second transform)',
    ('where', 'hessian/jvp/grad'): 'secant.jvp(lambda y: g(y, w), ...) inside a transformed function: a lambda passed to secant.jvp is not resolved (a named function is)',
    ('static_if', 'hessian/vmap/grad'): 'grad / jvp of a Jacobian whose argument or output is a container',
    ('python_loop', 'hessian/vmap0/grad'): 'grad / jvp of a Jacobian whose argument or output is a container',
    ('scan', 'hessian/jit/grad'): 'second-order reverse mode through lax.scan / fori_loop',
    ('fori', 'hessian/jacfwd/grad'): "second-order reverse mode through lax.fori_loop's lambda",
    ('cond', 'hessian/jacrev/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
    ('helper_call', 'hessian/hessian/grad'): 'a batching helper (broadcast_batch, batch_second) maps over a pytree with tree_util.tree_map, which no transform reads',
}
