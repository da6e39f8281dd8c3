"""Catalogue cases (tests/error_catalogue_cases.py) that fail today, each with its outcome; a reason
starting "WRONG:" is an invalid input accepted or a wrong value.

tests/test_error_catalogue.py marks each xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/error_catalogue_report.py --write-known tests/error_catalogue_known.py
    git diff tests/error_catalogue_known.py
"""
# flake8: noqa: E501

KNOWN_FAILURES = {
    'shape-lax_add_dtypes-grad': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned 3.0',
    'shape-lax_add_dtypes-vmap': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned [ 9. 12.]',
    'shape-lax_add_dtypes-jit-grad': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned 3.0',
    'shape-lax_add_dtypes-vmap-grad': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned [3. 3.]',
    'shape-lax_dot_rank-grad': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned 8.0',
    'shape-lax_dot_rank-vmap': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned [16. 24.]',
    'shape-lax_dot_rank-jit-grad': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned 8.0',
    'shape-lax_dot_rank-vmap-grad': 'WRONG: not fixed yet: wrong: no error (expected TypeError); returned [8. 8.]',
    'tracer-and_of_comparisons-vmap': 'not fixed yet: line: SecantValueError: the truth value of an array of shape (2,) is ambiguous: use .any() or .all() |   at error_catalogue_cases.py:412 |     return snp.where((x > 0) and (x < 3), x, -',
    'tracer-and_of_comparisons-vmap-jit': 'not fixed yet: line: SecantValueError: the truth value of an array of shape (2,) is ambiguous: use .any() or .all() |   at error_catalogue_cases.py:412 |     return snp.where((x > 0) and (x < 3), x, -',
    'tracer-assert_traced-vmap': 'not fixed yet: line: SecantValueError: the truth value of an array of shape (2,) is ambiguous: use .any() or .all() |   at error_catalogue_cases.py:417 |     assert x > 0  # !',
    'tracer-assert_traced-vmap-jit': 'not fixed yet: line: SecantValueError: the truth value of an array of shape (2,) is ambiguous: use .any() or .all() |   at error_catalogue_cases.py:417 |     assert x > 0  # !',
    'tracer-list_index_traced-vmap': 'not fixed yet: line: SecantTypeError: only integer scalar arrays can be converted to an index |   at error_catalogue_cases.py:437 |     return x * table[(x > 2).astype(snp.int32)]  # !',
    'tracer-list_index_traced-vmap-jit': 'not fixed yet: line: SecantTypeError: only integer scalar arrays can be converted to an index |   at error_catalogue_cases.py:437 |     return x * table[(x > 2).astype(snp.int32)]  # !',
    'tracer-boolean_mask-vmap': 'not fixed yet: line: _OutOfBoundsError: too many indices for array: array is 2-dimensional, but 3 were indexed |   at error_catalogue_cases.py:459 |     return snp.sum(v[v > 2.0])  # !',
    'tracer-boolean_mask-vmap-jit': 'not fixed yet: line: _OutOfBoundsError: too many indices for array: array is 2-dimensional, but 3 were indexed |   at error_catalogue_cases.py:459 |     return snp.sum(v[v > 2.0])  # !',
    'tracer-nonzero_no_size-vmap': 'not fixed yet: line: SourceError: secant has no batching rule for snp.nonzero: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:46',
    'tracer-nonzero_no_size-vmap-jit': 'not fixed yet: line: SourceError: secant has no batching rule for snp.nonzero: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:46',
    'tracer-arange_traced-vmap': 'not fixed yet: line: SourceError: secant has no batching rule for snp.arange: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:470',
    'tracer-arange_traced-vmap-jit': 'not fixed yet: line: SourceError: secant has no batching rule for snp.arange: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:470',
    'tracer-zeros_traced_shape-vmap': 'not fixed yet: line: SourceError: secant has no batching rule for snp.zeros: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:476:',
    'tracer-zeros_traced_shape-vmap-jit': 'not fixed yet: line: SourceError: secant has no batching rule for snp.zeros: it is not a numpy/secant.numpy function with a rule, nor a Python function with source |   at error_catalogue_cases.py:476:',
}
