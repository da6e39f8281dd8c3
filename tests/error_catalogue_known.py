"""Catalogue cases (tests/error_catalogue_cases.py) that fail today, each with its outcome; a reason
starting "WRONG:" is an invalid input accepted or a wrong value.

tests/test_error_catalogue.py marks each xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/error_catalogue_report.py --write-known tests/error_catalogue_known.py
    git diff tests/error_catalogue_known.py
"""
# flake8: noqa: E501

KNOWN_FAILURES = {
}
