"""(case, composition) pairs of the corpus that fail today, each with a short reason; a reason
starting "WRONG:" is a silently wrong value, the worst defect.

tests/test_corpus.py marks each one xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/corpus_report.py --write-known tests/corpus/known_failures.py
    git diff tests/corpus/known_failures.py
"""
# flake8: noqa: E501

KNOWN_FAILURES = {
    'list_indexed-vmap∘jvp∘grad': 'Python if on a batched value',
    'list_indexed-vmap∘grad∘grad': 'Python if on a batched value',
    'star_unpack-vmap∘jvp∘grad': 'Python if on a batched value',
    'star_unpack-vmap∘grad∘grad': 'Python if on a batched value',
    'layers_hidden_last-vmap∘jvp': 'TypeError: list indices must be integers or slices, not tuple',
    'layers_hidden_last-vmap∘jvp∘grad': 'Python if on a batched value',
    'layers_hidden_last-vmap∘grad∘grad': 'Python if on a batched value',
    'layers_hidden_last-grad∘vmap∘grad': 'TypeError: list indices must be integers or slices, not tuple',
    'tree_map_is_leaf-grad∘grad': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-vjp∘grad': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-jit∘grad∘grad': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-grad∘grad∘jit': 'ValueError: too many values to unpack (expected 1)',
    'tree_map_is_leaf-vmap∘grad∘grad': "SecantValueError: tree_map: tree 2 does not match the first tree's structure PyTreeDef((*,",
    'tree_map_is_leaf-grad∘vmap∘grad': 'ValueError: too many values to unpack (expected 1)',
    'mlp_list-vmap∘jvp': 'TypeError: list indices must be integers or slices, not tuple',
    'mlp_list-vmap∘jvp∘grad': 'Python if on a batched value',
    'mlp_list-vmap∘grad∘grad': 'Python if on a batched value',
    'mlp_list-grad∘vmap∘grad': 'TypeError: list indices must be integers or slices, not tuple',
    'mlp_l2-vmap∘jvp': 'TypeError: list indices must be integers or slices, not tuple',
    'mlp_l2-vmap∘jvp∘grad': 'Python if on a batched value',
    'mlp_l2-vmap∘grad∘grad': 'Python if on a batched value',
    'mlp_l2-grad∘vmap∘grad': 'TypeError: list indices must be integers or slices, not tuple',
    'newton_sqrt_while-grad∘vmap-sum': "SecantValueError: tree_map: tree 2 does not match the first tree's structure PyTreeDef((*,",
    'newton_sqrt_while-vmap∘vjp': "SourceError: vmap of while_loop_vjp: secant cannot see the loop's condition",
    'newton_sqrt_while-jit∘grad∘vmap-sum': "SecantValueError: tree_map: tree 2 does not match the first tree's structure PyTreeDef((*,",
    'newton_sqrt_while-grad∘vmap∘grad': 'second order through generated Lambda',
}
