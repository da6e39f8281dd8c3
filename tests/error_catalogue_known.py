"""Catalogue cases (tests/error_catalogue_cases.py) that fail today, each with its outcome; a reason
starting "WRONG:" is an invalid input accepted or a wrong value.

tests/test_error_catalogue.py marks each xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/error_catalogue_report.py --write-known tests/error_catalogue_known.py
    git diff tests/error_catalogue_known.py
"""
# flake8: noqa: E501

KNOWN_FAILURES = {
    'shape-inner_mismatch-grad': 'not fixed yet: line: SourceError: secant does not know the derivative of snp.inner: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.',
    'shape-inner_mismatch-vmap': 'not fixed yet: line: SourceError: secant has no batching rule for snp.inner: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:236:',
    'shape-inner_mismatch-jit-grad': 'not fixed yet: line: SourceError: secant does not know the derivative of snp.inner: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.',
    'shape-inner_mismatch-vmap-grad': 'not fixed yet: line: SourceError: secant does not know the derivative of snp.inner: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.',
    'shape-vstack_mismatch-grad': 'not fixed yet: line: SourceError: secant does not know the derivative of snp.vstack: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases',
    'shape-vstack_mismatch-vmap': 'not fixed yet: line: SourceError: secant has no batching rule for snp.vstack: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:291',
    'shape-vstack_mismatch-jit-grad': 'not fixed yet: line: SourceError: secant does not know the derivative of snp.vstack: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases',
    'shape-vstack_mismatch-vmap-grad': 'not fixed yet: line: SourceError: secant does not know the derivative of snp.vstack: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases',
}
