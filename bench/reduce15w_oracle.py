"""Records JAX's outcomes of tests/reduce15w_cases.py into tests/reduce15w_expected.py:
    /tmp/jaxenv/bin/python bench/reduce15w_oracle.py"""
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as onp

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "tests"))
import reduce15w_cases as C

head = f"# recorded by bench/reduce15w_oracle.py (jax {jax.__version__}, x64): do not edit"
out = [head, "nan = float('nan')", "GRADS = {"]
for name, f in {**C.cases(jnp), **C.tie_cases(jnp)}.items():
    out.append(f"    {name!r}: ({float(f(C.X))!r}, "
               f"{onp.asarray(jax.grad(f)(C.X)).tolist()!r}),")
out.append("}")
out.append("DTYPES = {")
for name, f in C.dtype_cases(jnp).items():
    v = jax.jit(f)(C.X)
    out.append(f"    {name!r}: ({str(v.dtype)!r}, {onp.asarray(v, float).tolist()!r}),")
out.append("}")
text = "\n".join(out) + "\n"
(pathlib.Path(__file__).parents[1] / "tests" / "reduce15w_expected.py").write_text(text)
print(text)
