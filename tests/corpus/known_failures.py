"""(case, composition) pairs of the corpus that fail today, each with a short reason; a reason
starting "WRONG:" is a silently wrong value, the worst defect.

tests/test_corpus.py marks each one xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/corpus_report.py --write-known tests/corpus/known_failures.py
    git diff tests/corpus/known_failures.py
"""
# flake8: noqa: E501

KNOWN_FAILURES = {
}
