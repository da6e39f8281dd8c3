"""Generated source depends on the function alone, never on the process's history (issue 20,
determinism): a fixed set of programs -- bench/lean.py's ten gradients and the golden cases'
gradients, vmaps and jvps -- is generated in fresh processes under two PYTHONHASHSEEDs (a set of
strings iterated into the emitted order would differ), and again in this process after many
other transforms with the references dropped and the garbage collected, with every function's
cached derivatives cleared (a cache keyed by the id of a dead object would hit for a new one at
its address; a cache handed out and changed would answer the next function with a changed
value). The texts must be identical.

    .venv/bin/python tests/test_nondet20_sources.py    # prints the fixed set's sources (JSON)
"""
import gc
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sources():
    """{case: the program text (the generated function and every generated function it
    calls)} of the fixed set, generated now."""
    for path in (ROOT / "tests", ROOT / "bench"):    # (tests/ first: its user_programs)
        if str(path) not in sys.path:
            sys.path.append(str(path))
    import lean_functions as L
    import secant
    from golden import functions as G
    from secant.codegen.program import program_source
    makers = {f"lean_grad_{name}": (lambda name=name: secant.grad(getattr(L, name)))
              for name in L.NAMES}
    makers.update({
        "grad_polynomial": lambda: secant.grad(G.polynomial),
        "grad_mlp_loss": lambda: secant.grad(G.mlp_loss),
        "grad_softmax_cross_entropy": lambda: secant.grad(G.softmax_cross_entropy),
        "grad_with_helper": lambda: secant.grad(G.with_helper, argnums=(0, 1)),
        "grad_static_branch": lambda: secant.grad(G.static_branch, argnums=(0, 1)),
        "grad_static_loop": lambda: secant.grad(G.static_loop, argnums=(0, 1)),
        "vmap_polynomial": lambda: secant.vmap(G.polynomial),
        "vmap_softmax_cross_entropy": lambda: secant.vmap(G.softmax_cross_entropy),
        "vmap_with_helper": lambda: secant.vmap(G.with_helper, in_axes=(None, None, 0)),
        "vmap_grad_mlp_loss": lambda: secant.vmap(secant.grad(G.mlp_loss),
                                                  in_axes=(None, 0, 0)),
        "jvp_polynomial": lambda: secant.jvp_fn(G.polynomial, argnums=0),
        "jvp_mlp_loss": lambda: secant.jvp_fn(G.mlp_loss, argnums=0),
        "jvp_with_helper": lambda: secant.jvp_fn(G.with_helper, argnums=(0, 1)),
    })
    return {case: program_source(make()) for case, make in makers.items()}


def _in_fresh_process(seed, *options):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    done = subprocess.run([sys.executable, __file__, *options], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def fresh():
    """The fixed set's sources from two fresh processes, PYTHONHASHSEED 0 and 4242."""
    return _in_fresh_process(0), _in_fresh_process(4242)


def _differences(want, got):
    import difflib
    out = []
    for case in sorted(set(want) | set(got)):
        if want.get(case) != got.get(case):
            out.append(f"--- {case}\n" + "\n".join(difflib.unified_diff(
                (want.get(case) or "").splitlines(), (got.get(case) or "").splitlines(),
                lineterm="", n=1)))
    return "\n".join(out)


def test_sources_do_not_depend_on_the_hash_seed(fresh):
    first, second = fresh
    assert len(first) == 23
    assert first == second, _differences(first, second)


def transform_each(case):
    """grad, vmap and jvp of a user program (tests/user_programs) run; how many ran (what a
    program refuses is no matter here)."""
    import contextlib
    import io

    import secant
    ran = 0
    for kind in ("grad", "vmap", "jvp"):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                if kind == "grad":
                    secant.grad(case.fn, case.argnums)(*case.args)
                elif kind == "vmap":
                    args = [np.stack([a, a]) if axis == 0 else a
                            for a, axis in zip(case.args, case.axes)]
                    secant.vmap(case.fn, in_axes=case.axes)(*args)
                else:
                    secant.jvp(case.fn, case.args, case.args)
            ran += 1
        except Exception:
            pass
    return ran


def _churn():
    """Many other functions transformed and dropped, the garbage collected between them: every
    6th user program of the first battery under grad, vmap and jvp."""
    from user_programs import ALL
    ran = 0
    for case in ALL[::6]:
        ran += transform_each(case)
        gc.collect()
    return ran


def test_sources_do_not_depend_on_what_ran_before(fresh):
    """In this process (after whatever ran before it, and the churn), each function's cached
    derivatives cleared: generated anew, the texts are the fresh processes'."""
    from secant.backends import function_cache
    want = fresh[0]
    assert sources() == want, _differences(want, sources())
    assert _churn() > 20
    function_cache.clear_all()
    gc.collect()
    got = sources()
    assert got == want, _differences(want, got)


def test_sources_do_not_depend_on_unrelated_classes(fresh):
    """A namedtuple with a class constant `shape` that no function of the set reaches: vmap
    still writes a batched x.shape as the array query (decided by the classes the function
    reaches, transformer/normalize.py computes_query)."""
    got = _in_fresh_process(0, "--unrelated-class")
    assert got == fresh[0], _differences(fresh[0], got)


if __name__ == "__main__":
    if "--unrelated-class" in sys.argv:
        import collections

        class Unrelated(collections.namedtuple("Unrelated", "a b")):
            """A namedtuple of no function of the fixed set, with a class constant `shape`."""
            shape = (2,)
    json.dump(sources(), sys.stdout)
