"""`python -m secant run`: the sci18 names resolve for a JAX program (jax.tree, Partial,
custom_gradient, lax.top_k, jnp.vectorize, experimental.ode.odeint, scipy.optimize.minimize),
with values checked against NumPy."""
import json
import subprocess
import sys
import textwrap

import numpy as np


def test_jax_program_uses_the_new_names(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent("""
        import json
        import jax
        import jax.numpy as jnp
        import jax.tree
        from jax.tree_util import Partial, tree_all, keystr, tree_leaves_with_path
        from jax import lax
        from jax.experimental.ode import odeint
        from jax.scipy.optimize import minimize

        params = {"w": jnp.array([1.0, 2.0]), "b": jnp.array(0.5)}
        doubled = jax.tree.map(lambda p: 2 * p, params)

        def f(a, x):
            return jnp.sum(a * x)

        @jax.custom_gradient
        def clipped(x):
            return x, lambda g: jnp.clip(g, -1.0, 1.0)

        values, indices = lax.top_k(jnp.array([3.0, 1.0, 4.0, 1.5]), 2)
        dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
        print("RESULT " + json.dumps({
            "leaves": [float(jnp.sum(v)) for v in jax.tree.leaves(doubled)],
            "all": bool(tree_all([True, 1])),
            "paths": [keystr(p) for p, _ in tree_leaves_with_path(params)],
            "partial": float(jax.jit(lambda p, x: p(x))(Partial(f, jnp.array([1.0, 3.0])),
                                                         jnp.array([2.0, 1.0]))),
            "partial_grad": [float(v) for v in jax.grad(
                lambda a: Partial(f, a)(jnp.array([2.0, 1.0])))(jnp.array([1.0, 3.0]))],
            "clipped": float(jax.grad(lambda x: 5.0 * clipped(x))(2.0)),
            "top_k": [[float(v) for v in values], [int(i) for i in indices]],
            "dot": [float(v) for v in dot(jnp.ones((2, 3)), jnp.arange(3.0))],
            "ode": float(odeint(lambda y, t, k: -k * y, 1.0, jnp.array([0.0, 1.0]), 0.5)[-1]),
            "min": [float(v) for v in minimize(lambda x: jnp.sum((x - 2.0) ** 2),
                                                jnp.zeros(2), method="BFGS").x]}))
        """))
    proc = subprocess.run([sys.executable, "-m", "secant", "run", str(path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][0]
    r = json.loads(line[len("RESULT "):])
    assert r["leaves"] == [1.0, 6.0]                # (dict keys sorted: b, w)
    assert r["all"] is True
    assert r["paths"] == ["['b']", "['w']"]
    assert r["partial"] == 5.0 and r["partial_grad"] == [2.0, 1.0]
    assert r["clipped"] == 1.0                      # the rule's clip, not the true 5.0
    assert r["top_k"] == [[4.0, 3.0], [2, 0]]
    np.testing.assert_allclose(r["dot"], [3.0, 3.0])
    np.testing.assert_allclose(r["ode"], np.exp(-0.5), rtol=1e-5)
    np.testing.assert_allclose(r["min"], [2.0, 2.0], rtol=1e-5)
