"""How lean secant's gradients are (issue 20): for each function of bench/lean_functions.py,

- statements of secant.source(secant.grad(f)) (with the generated derivatives of the helpers it
  calls) against the hand-written NumPy gradient in bench/handwritten_grads.py, and their ratio
  (the issue's target is <= 1.3x); statements are counted with ast, not lines;
- operations of both (calls, binary, unary and comparison operators, augmented assignments):
  the generated code names one operation per line where a person nests expressions, so the
  statement ratio also counts how the work is spelled; the operation ratio counts the work;
- StableHLO ops of secant.jit(secant.grad(f)) against jax.jit(jax.grad(f)) when jax is
  importable (both texts counted by the same function);
- then the peak memory of the eager gradient of a 10,000-step loop and of a loop over 10,000
  rows against the hand-written ones (bench/memory.py).

    .venv/bin/python bench/lean.py

jax is a benchmark-only dependency: without it the jax column is left out. Not a test.

The two rows above 1.3x (lean20v's reading, every line of each read):

- gaussian_loglik, 3 against 1: `exp_log_sigma` is read by z's line and by the return, z by the
  return twice (grad_seed_like(z): its dtype; `* z`: its value), so neither folds (ad/fold.py
  folds a value read once). The hand-written line never forms z nor exp(log_sigma): it writes
  (x - mu) / exp(2 * log_sigma), an identity of exp (e^a e^a = e^2a) and the unit seed
  multiplied away. One line would need exp(log_sigma) computed twice or that rewriting.
- softmax_xent, 4 against 3: z is read twice by logp's line, logp_bar twice by the return, and
  logp by logp_bar's line (grad_seed_like(labels, logp): its dtype; unbroadcast(..., logp): its
  shape) and by the return's exp(logp). The hand-written gradient computes the softmax
  e / sum(e), not the loss's log-softmax, so it has no logp. Redirecting logp's dtype and shape
  reads to logits (shapes.same_shape; transformer/dtype_flow.py gives logp logits' dtype)
  leaves logp read once, but it is the user's named value: folding it into the return
  (exp(z - log(sum(exp(z))))) reads worse and fold.py folds cotangents and temporaries only.
"""
import ast
import inspect
import re
import textwrap
import tracemalloc

import numpy as np

import secant
from secant.codegen.program import program
import handwritten_grads as hand
import lean_functions as funcs
from timing import import_jax


def count_statements(source):
    """Statements of every function in `source`, its nested statements included (a nested
    def's once), the `def` lines and docstrings not."""
    return sum(1 for n in _nodes(source) if isinstance(n, ast.stmt))


def _nodes(source):
    """The nodes of every function's body in `source`, each function's once (a nested def's
    under its own def, not its enclosing one's), the `def` lines and docstrings not."""
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            stack = list(body)
            while stack:
                n = stack.pop()
                if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield n
                    stack.extend(ast.iter_child_nodes(n))


_OPERATIONS = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare, ast.AugAssign)


def count_operations(source):
    """Operations in every function of `source`: calls, binary, unary and comparison operators,
    augmented assignments (`g += t`), wherever nested in an expression; the `def` lines and
    docstrings not counted. Subscripts, attributes and literals are not operations."""
    return sum(1 for n in _nodes(source) if isinstance(n, _OPERATIONS))


def generated_sources(fn):
    """The source of a generated function and of the generated functions it reaches through its
    closure (a helper's derivative, a loop body's), each once, under the name its caller uses
    (secant/codegen/program.py)."""
    return [text for _, text in program(fn)]


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
    print("      operations (calls and operators, ast) of the same two")
    head = (f"  {'':<17}{'statements':^20}  {'operations':^20}\n"
            f"  {'function':<17}{'secant':>7}{'hand':>6}{'ratio':>7}  {'secant':>7}{'hand':>6}"
            f"{'ratio':>7}   {'hlo secant':>10}")
    print(head + (f"{'hlo jax':>9}{'ratio':>7}" if jax else ""))
    ratios, op_ratios, hlo_ratios = [], [], []
    for name in funcs.NAMES:
        f = getattr(funcs, name)
        g = secant.grad(f)
        sources = generated_sources(g)
        hand_source = inspect.getsource(getattr(hand, name))
        ours = sum(count_statements(s) for s in sources)
        theirs = count_statements(hand_source)
        ops_ours = sum(count_operations(s) for s in sources)
        ops_theirs = count_operations(hand_source)
        ratios.append(ours / theirs)
        op_ratios.append(ops_ours / ops_theirs)
        args = funcs.inputs(name, rng)
        static = static_argnums(name)
        ops = count_ops(secant.jit(g, static_argnums=static).lower(*args).as_text())
        line = (f"  {name:<17}{ours:7d}{theirs:6d}{ours / theirs:6.2f}x  {ops_ours:7d}"
                f"{ops_theirs:6d}{ops_ours / ops_theirs:6.2f}x   {ops:10d}")
        if jax:
            jf = jax.jit(jax.grad(written_with(jnp, jax.lax, name)), static_argnums=static)
            jops = count_ops(jf.lower(*args).as_text())
            line += f"{jops:9d}{ops / jops:6.2f}x"
            if name not in funcs.LOOPS + ("while_loop",):
                hlo_ratios.append(ops / jops)
        print(line)
    if jax:
        print(f"  (jax traces the Python loops {funcs.LOOP_STEPS} times: its HLO is unrolled)")
        hlo = np.exp(np.mean(np.log(hlo_ratios)))
        print(f"  geometric mean StableHLO ratio secant/jax {hlo:.2f}x over the "
              f"{len(hlo_ratios)} functions without a Python loop")
    print(f"  geometric mean statement ratio {np.exp(np.mean(np.log(ratios))):.2f}x "
          f"(issue target <= 1.3x), worst {max(ratios):.2f}x")
    print(f"  geometric mean operation ratio {np.exp(np.mean(np.log(op_ratios))):.2f}x, "
          f"worst {max(op_ratios):.2f}x")
    print("memory: tracemalloc peak of one eager gradient call (result included), "
          "bench/memory.py")
    import memory  # (which imports this module's written_with)
    tracemalloc.start()
    memory.loops(("python_loop",))
    memory.row_loop()
    tracemalloc.stop()


if __name__ == "__main__":
    main()
