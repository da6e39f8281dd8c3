"""How lean secant's gradients are (issue 20): for each function of bench/lean_functions.py,

- statements of secant.source(secant.grad(f)) (with the generated derivatives of the helpers it
  calls) against the hand-written NumPy gradient in bench/handwritten_grads.py, and their ratio
  (the issue's target is <= 1.3x); statements are counted with ast, not lines;
- StableHLO ops of secant.jit(secant.grad(f)) against jax.jit(jax.grad(f)) when jax is
  importable (both texts counted by the same function).

    .venv/bin/python bench/lean.py

jax is a benchmark-only dependency: without it the jax column is left out. Not a test."""
import ast
import inspect
import re
import textwrap

import numpy as np

import secant
from secant import transforms
import handwritten_grads as hand
import lean_functions as funcs
from timing import import_jax


def count_statements(source):
    """Statements of every function in `source`, its nested statements included, the `def`
    lines and docstrings not."""
    count = 0
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            count += sum(1 for stmt in body for n in ast.walk(stmt)
                         if isinstance(n, ast.stmt) and not isinstance(n, ast.FunctionDef))
    return count


def generated_sources(fn, seen=None):
    """The source of a generated function and of the generated functions it reaches through its
    closure (a helper's derivative, a loop body's), each once."""
    seen = set() if seen is None else seen
    target = transforms._unwrap(fn) if getattr(fn, "__secant_generated__", None) else fn
    if id(target) in seen:
        return []
    seen.add(id(target))
    out = [secant.source(fn)]
    if inspect.isfunction(target):
        for value in inspect.getclosurevars(target).nonlocals.values():
            if inspect.isfunction(value) and getattr(value, "__secant_source__", None):
                out += generated_sources(value, seen)
    return out


_OP = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_]+\.[a-z_]+)')


def count_ops(text):
    """Operations in a StableHLO module's text (any dialect: stablehlo, chlo, func calls and
    returns), the module and function headers not counted."""
    ops = 0
    for line in text.splitlines():
        m = _OP.match(line)
        if m and m.group(1) not in ("func.func", "builtin.module"):
            ops += 1
    return ops


def written_with(np_like, lax_like, name):
    """The function `name` written against another NumPy and lax (jax.numpy and jax.lax,
    autograd.numpy): the same source, executed with those modules as snp and lax."""
    env = dict(funcs.__dict__, snp=np_like, lax=lax_like)
    for fn in (funcs._affine, funcs._layer, funcs._mse, getattr(funcs, name)):
        exec(compile(textwrap.dedent(inspect.getsource(fn)), funcs.__file__, "exec"), env)
    return env[name]


def static_argnums(name):
    return (1,) if name in funcs.LOOPS + ("while_loop",) else ()


def main():
    jax, jnp = import_jax()
    rng = np.random.default_rng(0)
    print("lean: statements of the generated gradient (ast, with its helpers' derivatives) vs "
          "the hand-written one;")
    print("      StableHLO ops of jit(grad(f)), secant vs jax" +
          ("" if jax else " (jax not importable: left out)"))
    head = f"  {'function':<17}{'secant':>7}{'hand':>6}{'ratio':>7}   {'hlo secant':>10}"
    print(head + (f"{'hlo jax':>9}{'ratio':>7}" if jax else ""))
    ratios = []
    for name in funcs.NAMES:
        f = getattr(funcs, name)
        g = secant.grad(f)
        ours = sum(count_statements(s) for s in generated_sources(g))
        theirs = count_statements(inspect.getsource(getattr(hand, name)))
        ratios.append(ours / theirs)
        args = funcs.inputs(name, rng)
        static = static_argnums(name)
        ops = count_ops(secant.jit(g, static_argnums=static).lower(*args).as_text())
        line = f"  {name:<17}{ours:7d}{theirs:6d}{ours / theirs:6.2f}x   {ops:10d}"
        if jax:
            jf = jax.jit(jax.grad(written_with(jnp, jax.lax, name)), static_argnums=static)
            jops = count_ops(jf.lower(*args).as_text())
            line += f"{jops:9d}{ops / jops:6.2f}x"
        print(line)
    if jax:
        print(f"  (jax traces the Python loops {funcs.LOOP_STEPS} times: its HLO is unrolled)")
    print(f"  geometric mean statement ratio {np.exp(np.mean(np.log(ratios))):.2f}x "
          f"(issue target <= 1.3x), worst {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
