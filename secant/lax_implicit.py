"""lax.custom_root and lax.custom_linear_solve, with JAX's implicit derivatives.

Their value is what the user's `solve` returns. Their derivatives never follow solve's
iterations: as in JAX they come from the implicit function theorem, calling the user's
tangent_solve / solve / transpose_solve.

The transforms see a call `lax.custom_root(f, guess, solve, tangent_solve)` whose `f` closes
over followed values (`lambda y: y ** 2 - x`) as a call of `root_of(f_lifted, (x,), consts,
guess, solve, tangent_solve, has_aux)` (transformer/normalize.py `implicit_call`): f lifted to
take its free locals as parameters, the followed ones passed as the tuple `closed`, the others
as `consts`. `root_of` and `linear_solve_of` are custom functions with rules of their own:

    custom_root:   y* = solve(f, guess);   y*_dot = -tangent_solve(df/dy at y*, df/dclosed . dot)
                   closed_bar = -(df/dclosed)^T lam,  lam the transpose of tangent_solve at y*_bar
    linear_solve:  x = solve(A, b);        x_dot = solve(A, b_dot - A_dot x)
                   b_bar = lam = transpose_solve(A^T, x_bar),   closed_bar = -(dA/dclosed x)^T lam

The rules run as Python when the generated derivative calls them; df/dy and df/dclosed are the
generated jvp and vjp of `f` itself. vmap of any of them runs one solve of the batch, as JAX's
batching rule (the user's solve read batched; the rules' twins below vmapped), or one call per
example where secant cannot read the solve batched (Implicit.batched). A derivative of the
rules (second order and up) differentiates them written as source (`_root_vjp_at`,
`_linear_solve_vjp_at`), as JAX differentiates its rules: custom_linear_solve's jvp and
transpose are custom_linear_solves again (the transpose with A^T's products and the two solves
swapped)."""
import functools
import inspect
import types

import numpy as np

import secant
from secant import tree_util
from secant.backends import function_cache
from secant.custom import _Custom

__secant_by_source__ = True      # the adapters below are read by the transforms like user code


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root of f: solve(f, initial_guess) (with has_aux, solve returns (root, aux))."""
    return root_of(f, (), (), initial_guess, solve, tangent_solve, has_aux)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """The solution x of matvec(x) = b: solve(matvec, b) (with has_aux, (x, aux))."""
    return linear_solve_of(matvec, (), (), b, solve, transpose_solve, symmetric, has_aux)


custom_root.__secant_implicit__ = ("f", "initial_guess")
custom_linear_solve.__secant_implicit__ = ("matvec", "b")


# --- the values ---------------------------------------------------------------------------------
def custom_root_value(f, closed, consts, initial_guess, solve, tangent_solve, has_aux):
    out = solve(_bound(f, closed, consts), initial_guess)
    _check_like(out[0] if has_aux and _pair(out) else out, initial_guess, has_aux,
                "custom_root", "initial_guess")
    return out


def custom_linear_solve_value(matvec, closed, consts, b, solve, transpose_solve, symmetric, has_aux):
    out = solve(_bound(matvec, closed, consts), b)
    _check_like(out[0] if has_aux and _pair(out) else out, b, has_aux, "custom_linear_solve",
                "b")
    return out


def _pair(out):
    return isinstance(out, (tuple, list)) and len(out) == 2


def _check_like(out, ref, has_aux, what, name):
    from secant.backends.errors import SecantTypeError, where
    if tree_util.tree_structure(out) != tree_util.tree_structure(ref):
        aux = " (with has_aux: (solution, aux))" if has_aux else ""
        raise SecantTypeError(f"{what}: solve must return a value with the structure of {name}"
                              f"{aux}, got {tree_util.tree_structure(out)} for "
                              f"{tree_util.tree_structure(ref)}{where()}")


# --- f with its closure: adapters the transforms read -------------------------------------------
def _bound(f, closed, consts):
    """f as the user wrote it: a function of its first argument alone."""
    if not closed and not consts:
        return f
    at = _at(f, len(closed), len(consts))
    return functools.partial(at, closed=closed, consts=consts)


@functools.lru_cache(maxsize=None)
def _at(f, n_closed, n_consts):
    """`def f_at(y, closed, consts): return f(y, closed[0], ..., consts[0], ...)`: generated
    source, so the transforms differentiate it in y or in closed."""
    from secant.transforms import load_generated
    name = f"{getattr(f, '__name__', 'f')}_at"
    if not name.isidentifier() or name.startswith("<"):
        name = "f_at"
    args = ["y"] + [f"closed[{i}]" for i in range(n_closed)] + \
        [f"consts[{i}]" for i in range(n_consts)]
    source = f"def {name}(y, closed, consts):\n    return fn_({', '.join(args)})\n"
    return load_generated(source, name, globals(), {"fn_": f})


def _derivative(f, closed, consts, wrt, mode):
    """The generated jvp or vjp of f_at with respect to its parameters `wrt` (0: y, 1: closed,
    2: consts)."""
    from secant.transforms import generate
    return generate(_at(f, len(closed), len(consts)), list(wrt), mode)


def _closure_tangent(f, y, closed, consts, closed_dot, consts_dot):
    """d f_at(y, closed, consts) along the closure's tangents (None: no tangent)."""
    dots = [(i, d) for i, d in ((1, closed_dot), (2, consts_dot)) if d is not None]
    if not dots:
        return None
    return _derivative(f, closed, consts, [i for i, _ in dots], "jvp")(
        y, closed, consts, *[d for _, d in dots])[1]


def _closure_cotangents(f, y, closed, consts, y_bar, wrt):
    """{1: closed_bar, 2: consts_bar} for the positions in wrt: the vjp of f_at at y_bar."""
    wrt = [i for i in wrt if i in (1, 2)]
    if not wrt:
        return {}
    bars = _derivative(f, closed, consts, wrt, "vjp")(y_bar, y, closed, consts)
    return dict(zip(wrt, bars if len(wrt) > 1 else (bars,)))


def _apply(solve, g, r):
    return solve(g, r)


def _transpose(solve, g, r_like, r_bar):
    """The transpose of the linear map r -> solve(g, r), applied to r_bar: the vjp of the
    user's solve where secant can write it, else (a solve that, say, takes a Jacobian of g)
    r_bar's products with the map's columns, one solve per entry of r."""
    from secant.backends.errors import SecantError
    from secant.transforms import generate
    try:
        transposed = generate(_apply, [2], "vjp")
        return transposed(r_bar, solve, g, r_like)
    except SecantError:
        pass
    import secant.numpy as snp
    leaves, tree = tree_util.tree_flatten(r_like)
    sizes = [int(np.size(leaf)) for leaf in leaves]
    flat_bar = _flat(r_bar)
    entries = []
    for k in range(sum(sizes)):
        basis = snp.zeros(sum(sizes), dtype=flat_bar.dtype).at[k].set(1)
        column = _flat(solve(g, _unflat(basis, leaves, tree)))
        entries.append(snp.sum(flat_bar * column))
    return _unflat(snp.stack(entries), leaves, tree)


def _flat(tree):
    import secant.numpy as snp
    return snp.concatenate([snp.ravel(leaf) for leaf in tree_util.tree_leaves(tree)])


def _unflat(vector, leaves, tree):
    import secant.numpy as snp
    out, start = [], 0
    for leaf in leaves:
        n = int(np.size(leaf))
        out.append(snp.reshape(vector[start:start + n], np.shape(leaf)).astype(
            snp.result_type(leaf)))
        start += n
    return tree.unflatten(out)


def _neg(tree):
    return tree_util.tree_map(lambda t: -t, tree)


def _zeros(tree):
    import secant.numpy as snp
    return tree_util.tree_map(snp.zeros_like, tree)


def _sub(a, b):
    return tree_util.tree_map(lambda x, y: x - y, a, b)


# --- the rules ----------------------------------------------------------------------------------
def _root_jvp(f, closed, consts, initial_guess, solve, tangent_solve, has_aux, closed_dot,
              consts_dot, initial_guess_dot):
    """(out, out_dot): y*_dot = -tangent_solve(df/dy at y*, df/dclosure . closure_dot); the
    guess has no effect on the root."""
    out = custom_root_value(f, closed, consts, initial_guess, solve, tangent_solve, has_aux)
    root = out[0] if has_aux else out
    rhs = _closure_tangent(f, root, closed, consts, closed_dot, consts_dot)
    root_dot = _zeros(root) if rhs is None else \
        _neg(tangent_solve(_linearised(f, root, closed, consts), rhs))
    return out, ((root_dot, _zeros(out[1])) if has_aux else root_dot)


def _linearised(f, root, closed, consts):
    jvp_y = _derivative(f, closed, consts, [0], "jvp")
    return lambda t: jvp_y(root, closed, consts, t)[1]


def _root_vjp(out_bar, f, closed, consts, initial_guess, solve, tangent_solve, has_aux, wrt):
    """The cotangents of the arguments at positions wrt: the closure's -(df/dclosure)^T lam,
    lam the transposed tangent_solve applied to the root's cotangent; the guess's zeros."""
    out = custom_root_value(f, closed, consts, initial_guess, solve, tangent_solve, has_aux)
    root = out[0] if has_aux else out
    root_bar = out_bar[0] if has_aux else out_bar
    bars = {3: _zeros(initial_guess)}
    if 1 in wrt or 2 in wrt:
        lam = _transpose(tangent_solve, _linearised(f, root, closed, consts), root, root_bar)
        bars.update(_closure_cotangents(f, root, closed, consts, _neg(lam), wrt))
    return tuple(bars[i] for i in wrt)


def _linear_solve_jvp(matvec, closed, consts, b, solve, transpose_solve, symmetric, has_aux,
                      closed_dot, consts_dot, b_dot):
    """(out, out_dot): x_dot = solve(A, b_dot - A_dot x)."""
    out = custom_linear_solve_value(matvec, closed, consts, b, solve, transpose_solve,
                                    symmetric, has_aux)
    x = out[0] if has_aux else out
    rhs = _zeros(b) if b_dot is None else b_dot
    a_dot_x = _closure_tangent(matvec, x, closed, consts, closed_dot, consts_dot)
    if a_dot_x is not None:
        rhs = _sub(rhs, a_dot_x)
    x_dot = solve(_bound(matvec, closed, consts), rhs)
    if has_aux:
        return out, (x_dot[0], _zeros(out[1]))
    return out, x_dot


def _linear_solve_vjp(out_bar, matvec, closed, consts, b, solve, transpose_solve, symmetric,
                      has_aux, wrt):
    """The cotangents of the arguments at positions wrt: b's lam = transpose_solve(A^T,
    x_bar), the closure's -(d(A x)/dclosure)^T lam."""
    from secant.backends.errors import SecantTypeError, where
    if transpose_solve is None and not symmetric:
        raise SecantTypeError("transpose_solve required for backwards mode automatic "
                              "differentiation of custom_linear_solve" + where())
    out = custom_linear_solve_value(matvec, closed, consts, b, solve, transpose_solve,
                                    symmetric, has_aux)
    x = out[0] if has_aux else out
    x_bar = out_bar[0] if has_aux else out_bar
    if symmetric:
        lam = solve(_bound(matvec, closed, consts), x_bar)
    else:
        vjp_y = _derivative(matvec, closed, consts, [0], "vjp")
        lam = transpose_solve(lambda u: vjp_y(u, x, closed, consts), x_bar)
    if has_aux:
        lam = lam[0]
    bars = {3: lam, **_closure_cotangents(matvec, x, closed, consts, _neg(lam), wrt)}
    return tuple(bars[i] for i in wrt)


# --- the rules differentiated (second order and up) ---------------------------------------------
# A derivative of a rule above (grad(grad(f)), jacfwd(grad(f)), ...) differentiates the rule as
# JAX does: the transforms read `_root_jvp_again` / `_root_vjp_again`, which call the rule as
# source (`_root_vjp_at` ... below) made for this f, solve and tangent_solve: the root from
# root_of itself (its derivative is the implicit one again, never solve's iterations), df/dy
# and df/dclosure by jvp / vjp of f, lam by vjp of the user's tangent_solve. f and
# tangent_solve are the copy's globals, not parameters: secant follows df_dy, a function
# closing over the root, into a tangent_solve it knows (never into one passed as a value).
f = solve = tangent_solve = has_aux = f_at = wrt = None    # (each copy's own: _root_rule_at)


def _root_vjp_at(out_bar, closed, consts, initial_guess):
    out = root_of(f, closed, consts, initial_guess, solve, tangent_solve, has_aux)
    root, root_bar = out, out_bar
    if has_aux:
        root, root_bar = out[0], out_bar[0]
    df_dy = lambda t: secant.jvp(lambda y: f_at(y, closed, consts), (root,), (t,))[1]
    lam = secant.vjp(lambda r: tangent_solve(df_dy, r), root)[1](root_bar)[0]
    consts_bar = None
    if 2 in wrt:
        closed_bar, consts_bar = secant.vjp(lambda c, k: f_at(root, c, k), closed, consts)[1](
            _neg(lam))
    else:
        closed_bar = secant.vjp(lambda c: f_at(root, c, consts), closed)[1](_neg(lam))[0]
    bars = (closed_bar, consts_bar, _zeros(initial_guess))
    return tuple(bars[i - 1] for i in wrt)


def _root_jvp_at(closed, consts, initial_guess, closed_dot, consts_dot):
    out = root_of(f, closed, consts, initial_guess, solve, tangent_solve, has_aux)
    root = out
    if has_aux:
        root = out[0]
    df_dy = lambda t: secant.jvp(lambda y: f_at(y, closed, consts), (root,), (t,))[1]
    if wrt == (True, False):        # (which of the closure's tangents it has)
        rhs = secant.jvp(lambda c: f_at(root, c, consts), (closed,), (closed_dot,))[1]
        root_dot = _neg(tangent_solve(df_dy, rhs))
    elif wrt == (False, True):
        rhs = secant.jvp(lambda k: f_at(root, closed, k), (consts,), (consts_dot,))[1]
        root_dot = _neg(tangent_solve(df_dy, rhs))
    elif wrt == (True, True):
        rhs = secant.jvp(lambda c, k: f_at(root, c, k), (closed, consts),
                         (closed_dot, consts_dot))[1]
        root_dot = _neg(tangent_solve(df_dy, rhs))
    else:                           # (the guess's tangent has no effect on the root)
        root_dot = _zeros(root)
    if has_aux:
        return out, (root_dot, _zeros(out[1]))
    return out, root_dot


def _root_rule_at(mode, f, n_closed, n_consts, solve, tangent_solve, has_aux, wrt):
    """custom_root's jvp or vjp rule as source, a copy of `_root_jvp_at` / `_root_vjp_at`
    whose globals are this f, solve, tangent_solve, has_aux and wrt (the vjp's positions; the
    jvp's (has closed_dot, has consts_dot)); one per distinct function (a lambda written in
    the call, made anew each time, is the same function: its derivative is made once)."""
    key = (mode, _same(f), n_closed, n_consts, _same(solve), _same(tangent_solve), has_aux, wrt)
    at = _RULES_AT.get(key)
    if at is None:
        at = _copy(_root_jvp_at if mode == "jvp" else _root_vjp_at, f=f, solve=solve,
                   tangent_solve=tangent_solve, has_aux=has_aux, wrt=wrt,
                   f_at=_at(f, n_closed, n_consts))
        _RULES_AT[key] = at
    return at


_RULES_AT = {}


def _copy(template, **names):
    """A copy of the function `template` of this module whose globals `names` are these."""
    at = types.FunctionType(template.__code__, {**globals(), **names}, template.__name__)
    at.__qualname__ = template.__qualname__
    return at


def _same(fn):
    """What makes two function objects the same function: its code and globals where it holds
    nothing else (no closure, defaults or attributes), else the object itself."""
    if inspect.isfunction(fn) and not fn.__closure__ and not fn.__defaults__ and \
            not fn.__kwdefaults__ and not (fn.__dict__.keys() - {function_cache.ATTR}):
        return fn.__code__, id(fn.__globals__)
    return fn


def _root_jvp_again(f, closed, consts, initial_guess, solve, tangent_solve, has_aux,
                    closed_dot, consts_dot, initial_guess_dot):
    at = _root_rule_at("jvp", f, len(closed), len(consts), solve, tangent_solve, has_aux,
                       (closed_dot is not None, consts_dot is not None))
    return at(closed, consts, initial_guess, closed_dot, consts_dot)


def _root_vjp_again(out_bar, f, closed, consts, initial_guess, solve, tangent_solve, has_aux,
                    wrt):
    at = _root_rule_at("vjp", f, len(closed), len(consts), solve, tangent_solve, has_aux, wrt)
    return at(out_bar, closed, consts, initial_guess)


# custom_linear_solve's rules as source, as JAX's (its jvp and transpose are linear solves
# again): x_dot = linear_solve(A, b_dot - A_dot x); lam = linear_solve(A^T, x_bar) with
# transpose_solve and solve swapped (A^T's products: the vjp of matvec); closed_bar = -(d(A
# x)/dclosed)^T lam. Each copy's globals are this matvec (f, f_at, f_t: A^T's products),
# solve, transpose_solve, symmetric, has_aux and wrt (_linear_rule_at).
transpose_solve = symmetric = f_t = None


def _linear_solve_jvp_at(closed, consts, b, closed_dot, consts_dot, b_dot):
    out = linear_solve_of(f, closed, consts, b, solve, transpose_solve, symmetric, has_aux)
    x = out
    if has_aux:
        x = out[0]
    rhs = _zeros(b)
    if wrt[2]:                      # (which tangents it has: closed, consts, b)
        rhs = b_dot
    if wrt[0] and wrt[1]:
        rhs = _sub(rhs, secant.jvp(lambda c, k: f_at(x, c, k), (closed, consts),
                                   (closed_dot, consts_dot))[1])
    elif wrt[0]:
        rhs = _sub(rhs, secant.jvp(lambda c: f_at(x, c, consts), (closed,), (closed_dot,))[1])
    elif wrt[1]:
        rhs = _sub(rhs, secant.jvp(lambda k: f_at(x, closed, k), (consts,), (consts_dot,))[1])
    x_dot = linear_solve_of(f, closed, consts, rhs, solve, transpose_solve, symmetric, has_aux)
    if has_aux:
        return out, (x_dot[0], _zeros(out[1]))
    return out, x_dot


def _linear_solve_vjp_at(out_bar, closed, consts, b):
    out = linear_solve_of(f, closed, consts, b, solve, transpose_solve, symmetric, has_aux)
    x, x_bar = out, out_bar
    if has_aux:
        x, x_bar = out[0], out_bar[0]
    if symmetric:
        lam = linear_solve_of(f, closed, consts, x_bar, solve, transpose_solve, symmetric,
                              has_aux)
    else:
        lam = linear_solve_of(f_t, (closed,), (consts,), x_bar, transpose_solve, solve,
                              symmetric, has_aux)
    if has_aux:
        lam = lam[0]
    closed_bar = None
    consts_bar = None
    if 1 in wrt and 2 in wrt:
        closed_bar, consts_bar = secant.vjp(lambda c, k: f_at(x, c, k), closed, consts)[1](
            _neg(lam))
    elif 1 in wrt:
        closed_bar = secant.vjp(lambda c: f_at(x, c, consts), closed)[1](_neg(lam))[0]
    elif 2 in wrt:
        consts_bar = secant.vjp(lambda k: f_at(x, closed, k), consts)[1](_neg(lam))[0]
    bars = (closed_bar, consts_bar, lam)
    return tuple(bars[i - 1] for i in wrt)


def _transposed_at(u, closed, consts):
    return secant.vjp(lambda y: f_at(y, closed, consts), u)[1](u)[0]


@functools.lru_cache(maxsize=None)
def _transposed(f, n_closed, n_consts):
    """A^T's products for matvec f: `_transposed_at(u, closed, consts)`, the vjp of f in y
    (linear: at any y), a copy whose f_at is f's; the transposed solve passes it (closed,)
    and (consts,)."""
    return _copy(_transposed_at, f_at=_at(f, n_closed, n_consts))


def _linear_rule_at(mode, f, n_closed, n_consts, solve, transpose_solve, symmetric, has_aux,
                    wrt):
    """custom_linear_solve's jvp or vjp rule as source, a copy of `_linear_solve_jvp_at` /
    `_linear_solve_vjp_at` for this matvec and these solves (as _root_rule_at)."""
    from secant.backends.errors import SecantTypeError, where
    if mode == "vjp" and transpose_solve is None and not symmetric:
        raise SecantTypeError("transpose_solve required for backwards mode automatic "
                              "differentiation of custom_linear_solve" + where())
    key = ("linear", mode, _same(f), n_closed, n_consts, _same(solve), _same(transpose_solve),
           symmetric, has_aux, wrt)
    at = _RULES_AT.get(key)
    if at is None:
        at = _copy(_linear_solve_jvp_at if mode == "jvp" else _linear_solve_vjp_at, f=f,
                   solve=solve, transpose_solve=transpose_solve, symmetric=symmetric,
                   has_aux=has_aux, wrt=wrt, f_at=_at(f, n_closed, n_consts),
                   f_t=None if symmetric else _transposed(f, n_closed, n_consts))
        _RULES_AT[key] = at
    return at


def _linear_solve_jvp_again(matvec, closed, consts, b, solve, transpose_solve, symmetric,
                            has_aux, closed_dot, consts_dot, b_dot):
    at = _linear_rule_at("jvp", matvec, len(closed), len(consts), solve, transpose_solve,
                         symmetric, has_aux,
                         (closed_dot is not None, consts_dot is not None, b_dot is not None))
    return at(closed, consts, b, closed_dot, consts_dot, b_dot)


def _linear_solve_vjp_again(out_bar, matvec, closed, consts, b, solve, transpose_solve,
                            symmetric, has_aux, wrt):
    at = _linear_rule_at("vjp", matvec, len(closed), len(consts), solve, transpose_solve,
                         symmetric, has_aux, wrt)
    return at(out_bar, closed, consts, b)


# --- vmap: one solve of the batch --------------------------------------------------------------
# As JAX batches linear_solve_p: the solve itself run on the batch (vmap reads the user's solve
# with matvec's batched operands: the same iteration on batched vectors; a batched while_loop
# runs until every example stops, each frozen at its own step), the result a custom function
# with the same implicit rules, batched in turn. Where secant cannot read the solve that way,
# one solve per example (Implicit.batched's loop).
def _value_at(closed, consts, start):       # (start: b, or custom_root's initial_guess)
    return solve(lambda y: f_at(y, closed, consts), start)


_NATIVE_FAILED = set()


def _native_value(of, axes):
    """The value of `of` (root_of or linear_solve_of) batched at `axes` (one per parameter)
    by vmap of its solve, or None where the loop is used."""
    if of.fun not in (custom_root_value, custom_linear_solve_value):
        return None
    import secant.numpy as snp
    from secant.backends.errors import SecantError

    def value(*args):
        fn, closed, consts, start, solve_ = args[:5]
        has_aux_ = args[-1]
        example = start if axes[3] is None else tree_util.tree_map(
            lambda leaf: snp.take(leaf, 0, axis=axes[3]), start)
        for_batch = getattr(solve_, "__secant_for_batch__", None)
        key, solve_b = for_batch(example) if for_batch is not None else (_same(solve_), solve_)
        key = ("value", _same(fn), len(closed), len(consts), key, tuple(axes[1:4]))
        if key in _NATIVE_FAILED:
            return None
        at = _RULES_AT.get(key)
        if at is None:
            at = secant.vmap(_copy(_value_at, solve=solve_b, f_at=_at(fn, len(closed),
                                                                      len(consts))),
                             in_axes=tuple(axes[1:4]))
            if key[4] is not None:
                _RULES_AT[key] = at
        try:
            out = at(closed, consts, start)
        except SecantError:         # (secant cannot read this solve batched: the loop)
            if key[4] is not None:
                _NATIVE_FAILED.add(key)
            return None
        head = out[0] if has_aux_ and _pair(out) else out
        _check_like(head, start, has_aux_, of.what, "initial_guess" if of is root_of else "b")
        return out
    return value


# --- the custom functions the transforms call ---------------------------------------------------
class Implicit(_Custom):
    """A function with derivative rules that run as Python (`jvp_rule(*args, *dots)` -> (out,
    out_dot), a dot None where an argument has none; `vjp_rule(out_bar, *args)` -> the
    cotangents of the differentiable arguments) and a batching rule that loops over the
    examples. A rule is itself an Implicit function without rules: vmap of a derivative loops
    too; a derivative of a derivative differentiates the rule's `differentiable` twin (a
    function of the rule's signature the transforms read as source), or is refused."""

    def __init__(self, fun, nondiff_argnums=(), jvp_rule=None, vjp_rule=None, what="",
                 differentiable=None):
        super().__init__(fun, nondiff_argnums)
        self.what = what or fun.__name__
        jvp_rule, jvp_source = jvp_rule if isinstance(jvp_rule, tuple) else (jvp_rule, None)
        vjp_rule, vjp_source = vjp_rule if isinstance(vjp_rule, tuple) else (vjp_rule, None)
        self.jvp_rule = jvp_rule and Implicit(jvp_rule, what=f"the derivative of {self.what}",
                                              differentiable=jvp_source)
        self.vjp_rule = vjp_rule and Implicit(vjp_rule, what=f"the derivative of {self.what}",
                                              differentiable=vjp_source)
        self.differentiable = differentiable    # (a rule: its source twin, or None: refused)

    def batched(self, params, wrt, batch):
        """vmap of this function: an Implicit function that runs this one (and its rules) on
        the batch, the batched arguments at their in_axes: its solve read batched
        (_native_value), a rule's twin and the rules' twins vmapped, or, where secant cannot
        read them so, once per example; every output batched at 0, the cotangent of an
        unbatched argument summed over the examples."""
        import inspect

        import secant.numpy as snp
        in_axes = dict(batch.in_axes)
        axes = [in_axes.get(i, 0) if i in wrt else None for i in range(len(params))]
        diff = [i for i in range(len(params)) if i not in self.nondiff_argnums]

        def size_of(args):
            for a, axis in zip(args, axes):
                for leaf in () if axis is None else tree_util.tree_leaves(a):
                    return snp.shape(leaf)[axis]
            return int(batch.axis_size)

        def example(args, k, arg_axes):
            return [a if axis is None else
                    tree_util.tree_map(lambda leaf: snp.take(leaf, k, axis=axis), a)
                    for a, axis in zip(args, arg_axes)]

        def stack(outs):
            return tree_util.tree_map(lambda *xs: snp.stack(xs), *outs)

        native = _native_value(self, axes)
        if native is None and self.differentiable is not None:      # a rule: vmap of its twin
            native = _or_none(_vmapped(self, axes))

        def value(*args):
            out = None if native is None else native(*args)
            if out is not None:
                return out
            return stack([self.fun(*example(args, k, axes)) for k in range(size_of(args))])

        jvp_twin = vjp_twin = None
        if self.jvp_rule is not None and self.jvp_rule.differentiable is not None:
            jvp_twin = _vmapped(self.jvp_rule, axes + [axes[i] for i in diff])
        if self.vjp_rule is not None and self.vjp_rule.differentiable is not None:
            vjp_twin = _vmapped_vjp(self.vjp_rule, axes)
        vjp_native = vjp_twin and _or_none(vjp_twin)
        jvp_native = jvp_twin and _or_none(jvp_twin)

        def jvp_rule(*args):
            out = None if jvp_native is None else jvp_native(*args)
            if out is not None:
                return out
            primals, dots = args[:len(params)], args[len(params):]
            dot_axes = [axes[i] for i in diff]
            outs = [self.jvp_rule.fun(*example(primals, k, axes), *example(dots, k, dot_axes))
                    for k in range(size_of(primals))]
            return stack([o for o, _ in outs]), stack([d for _, d in outs])

        def vjp_rule(out_bar, *args):
            bars = None if vjp_native is None else vjp_native(out_bar, *args)
            if bars is not None:
                return bars
            args, wrt_ = args[:-1], args[-1]
            bars = [self.vjp_rule.fun(tree_util.tree_map(lambda b: b[k], out_bar),
                                      *example(args, k, axes), wrt_)
                    for k in range(size_of(args))]
            return tuple(stack([b[j] for b in bars]) if axes[i] is not None else
                         tree_util.tree_map(lambda *xs: sum(xs[1:], xs[0]),
                                            *[b[j] for b in bars])
                         for j, i in enumerate(wrt_))

        value.__name__ = f"{self.fun.__name__}_vmap"
        for fn, of in ((value, self), (jvp_rule, self.jvp_rule), (vjp_rule, self.vjp_rule)):
            if of is not None:
                fn.__signature__ = inspect.signature(of.fun)
        out = Implicit(value, self.nondiff_argnums,
                       self.jvp_rule and (jvp_rule, jvp_twin),
                       self.vjp_rule and (vjp_rule, vjp_twin),
                       self.what,
                       self.differentiable and _vmapped(self, axes))   # (a rule batched)
        out.__secant_out_batched__ = True       # (every output batched, the rules' too)
        return out

    def generate_rule(self, mode, params, wrt, staged, batch):
        """The generated function transforms call for this function (secant/transforms.py)."""
        from secant.backends.errors import UnsupportedError, where
        from secant.transforms import load_generated
        if mode == "vmap":
            return self.batched(params, wrt, batch)
        rule = self.jvp_rule if mode == "jvp" else self.vjp_rule if mode == "vjp" else None
        if rule is None and self.differentiable is not None:    # a rule, differentiated
            from secant.transforms import generate
            return generate(self.differentiable, wrt, mode, staged=staged)
        if rule is None:
            raise UnsupportedError(f"secant has no {mode} of {self.what} (a derivative of "
                                   "lax.custom_root / lax.custom_linear_solve's derivative)"
                                   + where())
        base = self.what.replace("lax.", "")
        diff = [i for i in range(len(params)) if i not in self.nondiff_argnums]
        args = ", ".join(params)
        if mode == "jvp":
            dots = {i: f"{params[i]}_dot" for i in wrt}
            name = f"{base}_jvp"
            passed = ", ".join(dots.get(i, "None") for i in diff)
            source = (f"def {name}({', '.join(params + list(dots.values()))}):\n"
                      f"    # {self.what}: its derivative by the implicit function theorem\n"
                      f"    return {base}_jvp_rule({args}, {passed})\n")
        else:
            name = f"{base}_vjp"
            bars = [f"{params[i]}_bar" for i in wrt]
            source = (f"def {name}(out_bar, {args}):\n"
                      f"    # {self.what}: its derivative by the implicit function theorem\n"
                      f"    {', '.join(bars)}{',' if len(bars) == 1 else ''} = "
                      f"{base}_vjp_rule(out_bar, {args}, {tuple(wrt)!r})\n"
                      f"    return {', '.join(bars)}\n")
        return load_generated(source, name, self.fun.__globals__, {f"{base}_{mode}_rule": rule})


def _or_none(fn):
    """fn, or None where secant cannot generate it (then, and on later calls: the caller's
    loop over the examples)."""
    from secant.backends.errors import SecantError
    failed = []

    def attempt(*args):
        if failed:
            return None
        try:
            return fn(*args)
        except SecantError:
            failed.append(True)
            return None
    return attempt


def _vmapped(rule, axes):
    """The differentiable twin of a batched rule: vmap of the rule's own twin, its arguments at
    `axes` (one per parameter of the rule), every output batched at 0."""
    from secant.transforms import load_generated
    params = rule.params()
    name = f"{rule.differentiable.__name__}_vmap"
    source = (f"def {name}({', '.join(params)}):\n"
              f"    return secant.vmap(twin, in_axes={tuple(axes)!r})({', '.join(params)})\n")
    return load_generated(source, name, globals(), {"twin": rule.differentiable,
                                                    "secant": secant})


def _vmapped_vjp(rule, axes):
    """The differentiable twin of a batched vjp rule: vmap of the rule's own twin (out_bar
    batched at 0, the arguments at `axes`), an unbatched argument's cotangent summed over the
    batch (_summed)."""
    from secant.transforms import load_generated
    params = rule.params()
    name = f"{rule.differentiable.__name__}_vmap"
    in_axes = tuple([0] + list(axes) + [None])
    source = (f"def {name}({', '.join(params)}):\n"
              f"    bars = secant.vmap(twin, in_axes={in_axes!r})({', '.join(params)})\n"
              f"    return _summed(bars, {params[-1]}, {tuple(axes)!r})\n")
    return load_generated(source, name, globals(), {"twin": rule.differentiable,
                                                    "secant": secant, "_summed": _summed})


def _summed(bars, wrt, axes):
    """The cotangents `bars` of the arguments at positions wrt, each of an argument unbatched
    (its axis None) summed over the batch."""
    out = []
    for bar, i in zip(bars, wrt):
        if axes[i] is None:
            bar = tree_util.tree_map(_sum0, bar)
        out.append(bar)
    return tuple(out)


def _sum0(x):
    import secant.numpy as snp
    return snp.sum(x, axis=0)


root_of = Implicit(custom_root_value, (0, 4, 5, 6), (_root_jvp, _root_jvp_again),
                   (_root_vjp, _root_vjp_again), "custom_root")
linear_solve_of = Implicit(custom_linear_solve_value, (0, 4, 5, 6, 7),
                           (_linear_solve_jvp, _linear_solve_jvp_again),
                           (_linear_solve_vjp, _linear_solve_vjp_again), "custom_linear_solve")
