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
    'mlp_list-vmap∘jvp': 'TypeError: list indices must be integers or slices, not tuple',
    'mlp_list-vmap∘jvp∘grad': 'Python if on a batched value',
    'mlp_list-vmap∘grad∘grad': 'Python if on a batched value',
    'mlp_list-grad∘vmap∘grad': 'TypeError: list indices must be integers or slices, not tuple',
    'mlp_l2-vmap∘jvp': 'TypeError: list indices must be integers or slices, not tuple',
    'mlp_l2-vmap∘jvp∘grad': 'Python if on a batched value',
    'mlp_l2-vmap∘grad∘grad': 'Python if on a batched value',
    'mlp_l2-grad∘vmap∘grad': 'TypeError: list indices must be integers or slices, not tuple',
}
