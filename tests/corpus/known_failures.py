"""(case, composition) pairs of the corpus that fail today, each with a short reason; a reason
starting "WRONG:" is a silently wrong value, the worst defect.

tests/test_corpus.py marks each one xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/corpus_report.py --write-known tests/corpus/known_failures.py
    git diff tests/corpus/known_failures.py
"""
# flake8: noqa: E501

KNOWN_FAILURES = {
    'tree_map_is_leaf-grad∘grad': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-vjp∘grad': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-jit∘grad∘grad': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-grad∘grad∘jit': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-vmap∘grad∘grad': "SecantValueError: tree_map: tree 2 does not match the first tree's structure PyTreeDef((*,",
    'tree_map_is_leaf-grad∘vmap∘grad': 'ValueError: too many values to unpack (expected 1)',
    'lib_snp_abs-grad∘grad∘grad∘grad': 'reverse-over-reverse through a loop',
    'lib_snp_abs-jit∘grad∘grad∘grad∘grad': 'reverse-over-reverse through a loop',
    'inplace_set-vmap∘vjp': "TypeError: 'Array' object does not support item assignment",
    'inplace_set-grad∘grad': "TypeError: 'Array' object does not support item assignment",
    'inplace_set-vjp∘grad': "TypeError: 'Array' object does not support item assignment",
    'inplace_set-grad∘grad∘jit': "TypeError: 'Array' object does not support item assignment",
    'inplace_add_loop-vmap∘vjp': "TypeError: 'Array' object does not support item assignment",
    'inplace_add_loop-grad∘grad': "TypeError: 'Array' object does not support item assignment",
    'inplace_add_loop-vjp∘grad': "TypeError: 'Array' object does not support item assignment",
    'inplace_add_loop-grad∘grad∘jit': "TypeError: 'Array' object does not support item assignment",
    'append_loop_python_sum-vmap∘vjp': 'SecantValueError: axis 1 is out of bounds for an array of dimension 1',
    'rnn_loop-vmap∘vmap': 'SecantTypeError: matmul: contracting dimensions differ: (2, 3, 3, 3) @ (2, 3, 2, 1) (3 vs ',
    'newton_sqrt_while-grad∘vmap-sum': "SecantValueError: tree_map: tree 2 does not match the first tree's structure PyTreeDef((*,",
    'newton_sqrt_while-vmap∘vjp': "SourceError: vmap of while_loop_vjp: secant cannot see the loop's condition",
    'newton_sqrt_while-jit∘grad∘vmap-sum': "SecantValueError: tree_map: tree 2 does not match the first tree's structure PyTreeDef((*,",
    'newton_sqrt_while-grad∘vmap∘grad': 'second order through generated Lambda',
}
