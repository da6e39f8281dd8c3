"""The corpus of issue 15 (tests/corpus/) through every transform and composition.

Each test is one (case, composition), id `<case>-<composition>` (e.g. `mlp_dict-jit∘grad`),
checked against float64 finite differences, a Python loop (vmap) or the eager value (jit) by
tests/corpus/harness.py. The pairs that fail today are listed in
tests/corpus/known_failures.py and marked xfail(strict=True): a fix that makes one pass fails
its test until the entry is removed. A known refusal that starts returning a wrong value fails
too, and so does a known wrong value that starts raising.

Profiles: the default runs every case through each transform and each pair, and the triples and
fourth-order compositions on REPRESENTATIVE cases, plus the jit-outermost pairs on them (jit
compiles cost most); HYPOTHESIS_PROFILE=thorough runs everything on every case.
`bench/corpus_report.py` prints the pass counts per composition.
"""
import contextlib
import io
import os

import pytest

from corpus import ALL, harness
from corpus.known_failures import KNOWN_FAILURES

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"

# one or two of each theme, passing and failing ones
REPRESENTATIVE = {
    "mean_of_bare_list", "stack_of_list", "walrus_scalar",
    "getattr_literal", "method_call", "partial_callee", "decorated_wraps", "closure_affine",
    "lambda_pair_second",
    "early_return_traced", "break_static", "ifexp_traced", "list_comprehension", "dict_methods",
    "inplace_set", "append_loop", "recursion_static",
    "mlp_dict", "mlp_list", "rnn_loop", "rnn_scan", "leapfrog_springs",
    "gaussian_loglik", "softmax_xent", "attention", "helper_heavy_block", "newton_sqrt_while",
    "pow5", "sin", "exp_sin", "where_piecewise", "helper_chain", "loop_scalar",
    "if_no_else_scalar",
}


def _in_default_profile(case, name):
    order = harness.COMPOSITIONS[name][0]
    if order == 1:
        return True
    if order == 2 and not name.startswith("jit∘"):
        return True
    return case.name in REPRESENTATIVE


def _params():
    for case in ALL:
        for name in harness.applicable(case):
            if not (THOROUGH or _in_default_profile(case, name)):
                continue
            test_id = f"{case.name}-{name}"
            reason = KNOWN_FAILURES.get(test_id)
            marks = []
            if reason is not None:
                wrong = reason.startswith("WRONG")
                marks.append(pytest.mark.xfail(
                    strict=True, reason=reason,
                    raises=harness.WrongValue if wrong else Exception))
            yield pytest.param(case, name, reason, id=test_id, marks=marks)


class KnownRefusal(Exception):
    """A known failure's error, re-raised with a one-frame traceback (cheap for pytest to
    report; thousands of xfails otherwise cost more than the transforms)."""


@pytest.mark.parametrize("case, name, known", list(_params()))
def test_corpus(x64, case, name, known):
    try:
        with contextlib.redirect_stdout(io.StringIO()):      # print_inside prints
            harness.run(case, name)
    except harness.WrongValue as e:
        if known is not None and not known.startswith("WRONG"):
            pytest.fail(f"known to raise ({known}) but now returns a WRONG value: {e}")
        if known is None:
            raise
        raise harness.WrongValue(str(e)) from None
    except Exception as e:                          # noqa: BLE001
        if known is None:
            raise                                   # a new failure: its full traceback
        first = (str(e).strip().splitlines() or [""])[0]
        raise KnownRefusal(f"{type(e).__name__}: {first}") from None


def test_known_failures_name_real_pairs():
    """Every KNOWN_FAILURES entry names a (case, composition) of the corpus."""
    ids = {f"{c.name}-{n}" for c in ALL for n in harness.applicable(c)}
    stale = sorted(set(KNOWN_FAILURES) - ids)
    assert not stale, f"entries for no (case, composition): {stale[:10]}"


def test_corpus_size():
    assert len(ALL) >= 80
    assert sum(c.scalar for c in ALL) >= 10       # those get grad to the 4th order


def test_harness_catches_wrong_values(x64):
    """The references are not vacuous: a deliberately wrong gradient is caught."""
    case = next(c for c in ALL if c.name == "pow5")
    got = harness.fd_grad(case.fn, case.args, 0)
    harness.check(got, 5 * 0.7 ** 4, rtol=1e-5, atol=1e-6)
    with pytest.raises(harness.WrongValue):
        harness.check(got, 4 * 0.7 ** 4)
    assert abs(harness.nth_ref(case, 3) - 60 * 0.7 ** 2) < 1e-6      # 13-point stencil
    assert abs(harness.fd_nth(case.fn, 0.7, 4) - 120 * 0.7) < 1e-5
