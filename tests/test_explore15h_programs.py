"""Issue 15: programs as the JAX tutorials and examples write them (tests/user_programs/), each
through grad, hessian, grad∘grad, jit, jit∘grad, vmap, vmap∘grad, jvp and jacrev, checked
against float64 central differences, a Python loop and the eager value
(tests/user_programs/checks.py). bench/user_programs.py prints the whole table.

The default profile runs every program through one transform, rotating so that every transform
meets about a ninth of the programs; HYPOTHESIS_PROFILE=thorough runs every pair.
Pairs JAX itself refuses must raise a SecantError.
"""
from user_programs import ALL, checks

PER_PROGRAM = 1

# (program, transform) -> why it fails today; strict: a fix must remove its entry
KNOWN_FAILURES = {}

test_program, _ = checks.battery(ALL, checks.TRANSFORMS, PER_PROGRAM, KNOWN_FAILURES)
