"""lax.custom_root and lax.custom_linear_solve: their values, eagerly and under jit.

The value is what the user's `solve` returns (JAX's). Their derivatives in JAX are implicit
(the solve is differentiated through the implicit function theorem, calling tangent_solve /
transpose_solve, never through solve's iterations); secant's transforms have no rule for them
yet, so grad, jvp and vmap of code that calls them raise a clear error (secant never
differentiates the iterations instead)."""
from secant import tree_util


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root of f: solve(f, initial_guess) (with has_aux, solve returns (root, aux))."""
    del tangent_solve       # used by the implicit derivative (not available in secant yet)
    out = solve(f, initial_guess)
    if has_aux:
        root, aux = out
        _check_like(root, initial_guess, "custom_root", "initial_guess")
        return root, aux
    _check_like(out, initial_guess, "custom_root", "initial_guess")
    return out


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """The solution x of matvec(x) = b: solve(matvec, b) (with has_aux, (x, aux))."""
    del transpose_solve, symmetric      # for the implicit derivative
    out = solve(matvec, b)
    if has_aux:
        x, aux = out
        _check_like(x, b, "custom_linear_solve", "b")
        return x, aux
    _check_like(out, b, "custom_linear_solve", "b")
    return out


def _check_like(out, ref, what, name):
    from secant.backends.errors import SecantTypeError, where
    if tree_util.tree_structure(out) != tree_util.tree_structure(ref):
        raise SecantTypeError(f"{what}: solve must return a value with the structure of {name}, "
                              f"got {tree_util.tree_structure(out)} for "
                              f"{tree_util.tree_structure(ref)}{where()}")
