"""The corpus of issue 15 (tests/corpus/) through every transform and composition.

Each test is one (case, composition), id `<case>-<composition>` (e.g. `mlp_dict-jit∘grad`),
checked against float64 finite differences, a Python loop (vmap) or the eager value (jit) by
tests/corpus/harness.py. The pairs that fail today are listed in
tests/corpus/known_failures.py and marked xfail(strict=True): a fix that makes one pass fails
its test until the entry is removed. A known refusal that starts returning a wrong value fails
too, and so does a known wrong value that starts raising.

Profiles: the default runs every case through each transform, REPRESENTATIVE cases through each
pair and a spread of the triples and fourth-order compositions, the others through a few pairs
(each composition on several cases: _default_pairs); HYPOTHESIS_PROFILE=thorough runs every
composition on every case.
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


# compositions of order 2 a case outside REPRESENTATIVE runs by default (jit-outermost ones only
# on REPRESENTATIVE: jit compiles cost most), and of order 3 and 4 a REPRESENTATIVE case runs
SECOND_ORDER_PER_CASE = 4
HIGHER_ORDER_PER_CASE = 4


def _default_pairs():
    """{(case name, composition)} of the default profile: every case through each transform,
    each REPRESENTATIVE case through each pair; the other cases through SECOND_ORDER_PER_CASE
    pairs and the REPRESENTATIVE ones through HIGHER_ORDER_PER_CASE triples and fourth-order
    compositions, each time the ones that have met the fewest cases so far, so that every
    composition runs on several cases (thorough runs every applicable pair)."""
    met = dict.fromkeys(harness.COMPOSITIONS, 0)
    out = set()

    def fewest(case, names, k):
        for name in sorted(names, key=lambda n: met[n])[:k]:
            met[name] += 1
            out.add((case.name, name))

    for case in ALL:
        names = harness.applicable(case)
        order = {n: harness.COMPOSITIONS[n][0] for n in names}
        out.update((case.name, n) for n in names if order[n] == 1)
        if case.name in REPRESENTATIVE:
            out.update((case.name, n) for n in names if order[n] == 2)
            fewest(case, [n for n in names if order[n] > 2], HIGHER_ORDER_PER_CASE)
        else:
            fewest(case, [n for n in names if order[n] == 2 and not n.startswith("jit∘")],
                   SECOND_ORDER_PER_CASE)
    return out


def _params():
    default = None if THOROUGH else _default_pairs()
    for case in ALL:
        for name in harness.applicable(case):
            if default is not None and (case.name, name) not in default:
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
