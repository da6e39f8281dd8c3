"""One exception hierarchy, and the helpers that point an error at the user's own line."""
import contextlib
import linecache
import os
import sys

_INTERNAL_DIRS = set()
# code file name -> whether its frames are not the user's (user_frame's test, once per name: it
# runs for every traced op; issue 19); cleared when the internal files or folders change
_not_user_files = {}


def register_internal_dir(module_file):
    """Frames from files under this module's directory are secant's own, not the user's."""
    _INTERNAL_DIRS.add(os.path.dirname(os.path.abspath(module_file)) + os.sep)
    _not_user_files.clear()


register_internal_dir(__file__)
_CONTEXTLIB = contextlib.__file__     # the frame of a `with` over one of secant's generators


class SecantError(Exception):
    """Root of every error secant raises on purpose."""


# Each class also subclasses the builtin JAX raises in the same situation, so an `except
# TypeError` / `except ValueError` / `except jax.errors.X` written against JAX catches secant's.
class SecantTypeError(SecantError, TypeError):
    """Shape or dtype mismatch, wrong argument kinds: a TypeError, as in JAX."""


class SecantValueError(SecantError, ValueError):
    """A value out of range or inconsistent with another argument."""


class UnboundAxisNameError(SecantValueError, NameError):
    """A collective (psum, pmean, axis_index) names an axis no enclosing vmap or pmap binds:
    JAX raises NameError ("unbound axis name"); a ValueError too, as secant raised before."""


class ShapeError(SecantTypeError, SecantValueError):
    """Arrays whose shapes do not fit together (broadcasting, concatenate, reshape, contraction).
    JAX raises TypeError from lax's shape rules and ValueError from jax.numpy's own checks (even
    for one function: jnp.add of (3,) and (4,) is a TypeError, of (2, 3) and (4,) a ValueError);
    NumPy raises ValueError. This is both, so either `except` catches it."""


class ConcretizationTypeError(SecantError, TypeError):
    """A traced value was used where Python needs a concrete one (bool(), int(), shapes): JAX's
    jax.errors.ConcretizationTypeError."""


ConcretizationError = ConcretizationTypeError     # secant's earlier name


class TracerBoolConversionError(ConcretizationTypeError):
    """bool() of a traced value (`if x > 0:` where secant cannot rewrite the branch, `a and b`)."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """int()/__index__ of a traced value (range(n), list[i] with a traced n or i). In JAX this is
    a TypeError beside ConcretizationTypeError; here it is also one (catchable by both)."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value converted to a NumPy array (np.asarray(x), a NumPy function of x)."""


class NonConcreteBooleanIndexError(ConcretizationTypeError, IndexError):
    """x[mask] with a traced boolean mask: the result's shape would depend on its values. An
    IndexError as in JAX, and a ConcretizationTypeError as secant raised it before."""


class KeyReuseError(SecantTypeError):
    """JAX's name for a PRNG key used twice (raised there only under jax_debug_key_reuse). secant
    does not check key reuse; the name exists so code written against JAX imports it."""


class UnexpectedTracerError(SecantError, TypeError):
    """A traced value used outside the trace that made it: after its jit finished (it escaped
    through a global, a closure or a list), or outside the loop/branch body that made it; as
    jax.errors.UnexpectedTracerError (a TypeError there too)."""


class UnsupportedError(SecantError, NotImplementedError):
    """A feature secant does not support (yet): named clearly instead of failing deep inside."""


_ORIGINS = {}     # generated file name -> {generated line: (user file, user line)}


def register_origins(filename, mapping):
    """Lines of generated code that stand for a user line (errors then name the user's line)."""
    _ORIGINS[filename] = dict(mapping)


def origins_of(filename):
    """{generated line: (user file, user line)} of one generated file (empty if none)."""
    return dict(_ORIGINS.get(filename, {}))


def origin(filename, line):
    """(file, line) of the user's source behind a location, generated or not."""
    return _ORIGINS.get(filename, {}).get(line, (filename, line))


_INTERNAL_FILES = set()     # generated code (`<secant: ...>`) of secant's own functions


def register_internal_file(filename):
    """Generated code made from one of secant's own functions (vmap of secant.numpy.sin): its
    frames are secant's, not the user's."""
    _INTERNAL_FILES.add(os.path.abspath(filename))
    _not_user_files.clear()


def is_internal_file(filename):
    """Whether `filename` is secant's (its own modules, or generated code registered by
    register_internal_file)."""
    return _is_internal(os.path.abspath(filename))


def _is_internal(filename):
    return filename in _INTERNAL_FILES or any(filename.startswith(d) for d in _INTERNAL_DIRS)


def user_frame():
    """The innermost frame that belongs to user code (not secant, not importlib)."""
    f = sys._getframe(1)
    known = _not_user_files
    while f is not None:
        fn = f.f_code.co_filename
        not_user = known.get(fn)
        if not_user is None:
            not_user = _is_internal(os.path.abspath(fn)) or fn.startswith("<frozen") \
                or fn == _CONTEXTLIB
            if fn.startswith("<") or os.path.isabs(fn):    # (a relative name: the working folder)
                known[fn] = not_user
        if not not_user:
            return f
        f = f.f_back
    return None


def user_location():
    """(filename, lineno) of the user's line that is running now, or (None, None); generated
    code that stands for one of secant's own helpers (a helper's derivative) is passed over for
    the generated code of the user's function that called it."""
    f = user_frame()
    unmapped = None, None       # (a generated line that maps to no line of the user's: named
    while f is not None:        # only where no frame further out does)
        fn, line = origin(f.f_code.co_filename, f.f_lineno)
        if not _is_internal(os.path.abspath(fn)):
            if not fn.startswith("<secant"):
                return fn, line
            if unmapped[0] is None:
                unmapped = fn, line
        f = f.f_back
        while f is not None and (_is_internal(os.path.abspath(f.f_code.co_filename))
                                 or f.f_code.co_filename.startswith("<frozen")):
            f = f.f_back
    return unmapped


def defined_at(fn):
    """`name (file:line)` of a user's function (its def line), for messages about what it
    returned."""
    fn = getattr(fn, "__secant_rule_of__", fn)     # (a rule secant wrapped: the user's)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", type(fn).__name__)
    if code is None:
        return name
    fn_, line = origin(*def_line(code))
    return f"{name} ({fn_}:{line})"


def def_line(code):
    """(file, line) of a function's `def` (past its decorators: co_firstlineno is the first)."""
    line = code.co_firstlineno
    if code.co_name != "<lambda>" and linecache.getline(code.co_filename, line).lstrip() \
            .startswith("@"):
        for i in range(line + 1, line + 20):
            if linecache.getline(code.co_filename, i).lstrip().startswith(("def ", "async def ")):
                return code.co_filename, i
    return code.co_filename, line


def where():
    """' at FILE:LINE\\n    <source line>' for error messages, or '' when no user frame is found."""
    fn, line = user_location()
    if fn is None:
        return ""
    src = linecache.getline(fn, line).strip()
    return f"\n  at {fn}:{line}" + (f"\n    {src}" if src else "")


def called_at():
    """'\\n  called at FILE:LINE\\n    <source line>': the user's line as written (not generated
    code) that called what runs now, where where() names another (the line of generated code's
    origin: a derivative's return); '' otherwise. An error in a transformed function's result
    (grad of a non-scalar output) names both, JAX's traceback the call."""
    at = user_location()
    f = user_frame()
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith("<secant") and not _is_internal(os.path.abspath(fn)) and \
                origin(fn, f.f_lineno) == (fn, f.f_lineno):
            if (fn, f.f_lineno) == at:
                return ""
            src = linecache.getline(fn, f.f_lineno).strip()
            return f"\n  called at {fn}:{f.f_lineno}" + (f"\n    {src}" if src else "")
        f = f.f_back
    return ""


def named_at_call(fn):
    """`fn` (a public API function) whose own call with arguments it does not take (an unknown
    keyword, too many positional arguments) raises Python's TypeError message, as JAX's does,
    as a SecantTypeError naming the user's line."""
    import functools

    @functools.wraps(fn)
    def api(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            tb = e.__traceback__
            if isinstance(e, SecantError) or tb is None or tb.tb_next is not None:
                raise           # (raised inside fn: its own message)
            raise SecantTypeError(f"{e}{where()}") from None
    return api
