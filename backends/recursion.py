"""A user function whose recursion never ends under jit or vmap, named instead of a
RecursionError from deep inside secant.

Under jit a Python `if` on a traced value becomes `lax.cond`, which traces both branches: a
function that recurses in one branch is traced again, inside itself, forever. Under vmap a
batched condition runs both branches for every example, with the same result. Eagerly the same
function stops (its condition turns false); JAX refuses the traced `if` outright. When such a
recursion exhausts Python's stack, `recursion_error` reads the traceback (through the origin
map, so generated frames count as the user's lines) and says which function recursed, on
which condition, at which call.
"""
import collections
import os
import traceback

from secant.backends.errors import SecantError, _is_internal, origin

# secant's control flow that runs both branches of a traced or batched condition
_BRANCHING = {"cond", "switch", "while_loop", "_cond", "_switch", "select_branches"}


class TracedRecursionError(SecantError):
    """A user function that recurses on a traced (or batched) value: it cannot end."""


def _user(filename):
    return not filename.startswith(("<frozen", "<string>")) and not _is_internal(
        os.path.abspath(filename))


def recursion_error(exc, how):
    """The TracedRecursionError for a RecursionError `exc` out of a jit trace (`how` = "jit")
    or a vmapped call ("vmap"), or None when the frames do not show a user function calling
    itself through a staged or batched condition (the user's own unbounded recursion, which
    stays Python's RecursionError)."""
    frames = []
    for fr in traceback.extract_tb(exc.__traceback__):
        file, line = origin(fr.filename, fr.lineno)
        name = fr.name[:-5] if fr.name.endswith("_vmap") else fr.name
        frames.append((file, line, name, _user(file)))
    counts = collections.Counter((f, ln, n) for f, ln, n, user in frames if user)
    repeated = {k for k, c in counts.items() if c >= 3}
    if not repeated:
        return None
    # the recursing function: the outermost repeated user frame
    first = next(i for i, (f, ln, n, u) in enumerate(frames) if (f, ln, n) in repeated)
    file, cond_line, fn_name = frames[first][:3]
    # its next entry, and the user line that called it (the recursive call)
    again = next((i for i in range(first + 1, len(frames))
                  if frames[i][2] == fn_name and frames[i][0] == file and frames[i][3]), None)
    if again is None:
        return None
    cycle = frames[first:again]
    call = next((fr for fr in reversed(cycle) if fr[3]), frames[first])
    if how == "jit":    # through lax.cond & co., which trace both branches
        branched = any(not u and n in _BRANCHING for _, _, n, u in cycle)
    else:               # through a branch of a batched `if` (a function of its own)
        branched = any(u and n != fn_name for _, _, n, u in cycle)
    if not branched:
        return None
    where = f"{file}:{cond_line}"
    if how == "jit":
        why = (f"the condition at {where} depends on a traced value, so jit traces both of its "
               f"branches (lax.cond) and the recursive call traces {fn_name} again. Make the "
               "condition static (a Python value, or static_argnums) or write the recursion as "
               "a loop (lax.while_loop / fori_loop)")
    else:
        why = (f"if the condition at {where} depends on a batched value, vmap runs both of its "
               f"branches for every example and the recursive call runs {fn_name} again. Make "
               "the condition unbatched (in_axes=None for what it reads) or write the recursion "
               "as a loop (lax.while_loop)")
    text = _line_text(file, call[1])
    return TracedRecursionError(
        f"{fn_name} recurses without end under {how}: {why}\n  at {file}:{call[1]}"
        + (f"\n    {text}" if text else ""))


def _line_text(file, line):
    import linecache
    return linecache.getline(file, line).strip()
