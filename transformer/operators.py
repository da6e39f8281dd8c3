"""Operators on objects of the user's own classes (`Vec(a) - Vec(b)`, `2.0 * v`, `abs(v)`,
`v @ w`): Python calls the class's __sub__, __rmul__, __abs__, __matmul__, so the transforms
must too.

Which function an operator calls depends on its operands' types, known only when the code runs,
and one function is generated for all argument types. So where an operand may be such an
object (a parameter given one, an object the code builds from a class that overloads operators,
what an overloaded operator returned), the normaliser writes the operator as a call of a
function known only at run time,

    d = dynamic_call(binary_method(a, b, 'sub'), a, b)

and `binary_method` answers as Python does: the left operand's __sub__, else the right one's
__rsub__ (first, for a right operand of a subclass that overrides it), else operator.sub for
arrays and numbers (an op with its rule). The function it returns is read like any other
callee (secant/transforms.py _dispatch), in the form of it that knows which of its parameters
are such objects (`objects_form`), so that its own operators dispatch in turn. Operands that
are arrays keep their plain operators and rules: only a value that may be an object gets this
call.
"""
import inspect
import operator
import types

from secant.backends.function_cache import FunctionCache
from secant.backends import once

# Python operator (gast node name) -> the name of its method (`__sub__`, `__rsub__`)
BINARY = {"Add": "add", "Sub": "sub", "Mult": "mul", "Div": "truediv", "Pow": "pow",
          "MatMult": "matmul", "FloorDiv": "floordiv", "Mod": "mod"}
UNARY = {"USub": "neg", "UAdd": "pos"}
IN_PLACE = tuple(f"i{n}" for n in BINARY.values())     # `v += w`: "iadd"

_LIBRARIES = ("secant", "numpy", "builtins", "jax", "jaxlib")
_forms = FunctionCache("operator_forms")


def has_operators(cls):
    """Whether `cls` is a user class (not secant's, NumPy's, a builtin) that defines an
    arithmetic operator (or `v[i]`, __getitem__) in Python."""
    if not isinstance(cls, type) or (cls.__module__ or "").split(".")[0] in _LIBRARIES:
        return False
    return any(inspect.isfunction(getattr(cls, f"__{n}__", None))
               for n in (*BINARY.values(), *IN_PLACE, *UNARY.values(), "abs", "getitem"))


def may_build_one(fn):
    """Whether the user function `fn` names a class with operators (a global or a closure
    cell): what it returns may be an object of it (`def make(x): return Vec(x)`)."""
    if not inspect.isfunction(fn) or (fn.__module__ or "").split(".")[0] in _LIBRARIES:
        return False
    cells = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
    return any(has_operators(fn.__globals__.get(n)) for n in fn.__code__.co_names) or \
        any(map(has_operators, cells))


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def is_operator_object(x):
    return has_operators(type(x))


def _method(cls, name):
    f = getattr(cls, name, None) if has_operators(cls) else None
    return f if inspect.isfunction(f) else None


def binary_method(x, y, name):
    """The function Python calls for `x <op> y` (op's method `name`: "sub"), called as
    f(x, y): x's __sub__, else y's __rsub__ (swapped); operator.sub where neither operand's
    class overloads it in Python."""
    if name in IN_PLACE:        # v += w: v's __iadd__, else what v + w calls
        f = _method(type(x), f"__{name}__")
        if f is None:
            return binary_method(x, y, name[1:])
        return objects_form(f, (is_operator_object(x), is_operator_object(y)))
    tx, ty = type(x), type(y)
    left, right = _method(tx, f"__{name}__"), _method(ty, f"__r{name}__")
    if right is not None and ty is not tx and issubclass(ty, tx) and \
            right is not _method(tx, f"__r{name}__"):
        left = None                     # a subclass's reflected method goes first
    if left is not None:
        return objects_form(left, (is_operator_object(x), is_operator_object(y)))
    if right is not None:
        return _swapped(objects_form(right, (is_operator_object(y), is_operator_object(x))))
    if name == "getitem" and isinstance(x, (tuple, list, dict)):
        return _item()      # (an operator's result that is a container: its item)
    return getattr(operator, name)


def unary_method(x, name):
    """The function Python calls for `-x` (`name` "neg"), `+x` ("pos") or `abs(x)` ("abs")."""
    f = _method(type(x), f"__{name}__")
    return objects_form(f, (True,)) if f is not None else getattr(operator, name)


# binary_method(a, b, 'sub')(a, b): its operands passed again (transformer/normalize.py), and
# what it returns depends on their types only: a constant for every transform
for _f in (binary_method, unary_method):
    _f.__secant_dispatcher__ = _f.__secant_static_query__ = True


def objects_form(fn, objects):
    """`fn` (a copy of it) whose parameters at the positions where `objects` is true hold user
    objects with operators: the normaliser reads their operators as binary_method calls. A flag
    "list" marks a list or tuple of such objects (`ds = [Dual(a, b), ...]`): its items are read
    as written (`ds[0]`), each item such an object (__secant_object_lists__)."""
    fn = getattr(fn, "__secant_answers__", fn)     # (the derivative a retry wrapper answers for)
    params = list(inspect.signature(fn).parameters)
    names = frozenset(p for p, o in zip(params, objects) if o)
    lists = frozenset(p for p, o in zip(params, objects) if o == "list")
    if not names:
        return fn
    def make():
        copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        copy.__kwdefaults__ = fn.__kwdefaults__
        copy.__qualname__, copy.__module__, copy.__doc__ = \
            fn.__qualname__, fn.__module__, fn.__doc__
        copy.__secant_objects__ = names
        if lists:
            copy.__secant_object_lists__ = lists
        return fn, copy
    return once.build(_forms, ("objects", fn, names, lists), make,
                      valid=lambda hit: hit[0] is fn)[1]


def carry_objects(fn, gen, params=None):
    """Mark `gen`, a function made from `fn` (its desugared or functionalised form, a transform
    of it), with the parameters of fn's that hold user objects or lists of them, those of
    `params` where given."""
    for attr in ("__secant_objects__", "__secant_object_lists__"):
        names = getattr(fn, attr, None)
        if names:
            setattr(gen, attr, names if params is None else names & set(params))


def _item():
    """`def item(x, i): return x[i]`, source the transforms read: `(v + w)[1]` where v's
    __add__ returned a tuple, list or dict (a container's item, not an array op)."""
    return _generated("item", "def item(x, i):\n    return x[i]\n", {})


def _generated(key, source, free):
    """The function `source` defines (its free names `free`), made once per `key`, with a
    source the transforms read as a user function's."""
    def make():
        from secant.codegen import loader
        from secant.transformer.parse import FunctionSource
        from secant.transformer import gast_parse
        name = source.split("(")[0][4:]
        gen = loader.load(source, name, {}, free)
        gen.__secant_source__ = FunctionSource(
            gen, gast_parse.parse(source).body[0], gen.__code__.co_filename, 1,
            source.splitlines(), {}, free)
        return key, gen
    return once.build(_forms, key, make, valid=lambda hit: hit[0] == key)[1]


def _swapped(fn):
    """`def rsub_swapped(x, y): return rsub_(y, x)`: a reflected method called as f(x, y)."""
    name = fn.__name__.strip("_") + "_swapped"
    return _generated(("swapped", fn), f"def {name}(x, y):\n    return {name}_(y, x)\n",
                      {f"{name}_": fn})


def objects_in(fn, args):
    """`fn` in the form that knows which of `args` (its positional arguments) are user
    objects with operators; `fn` itself where none is."""
    if not isinstance(fn, types.FunctionType) or any(k.startswith("__secant") for k in vars(
            fn)) or not any(map(is_operator_object, args)):
        return fn       # (not a user function: a transform's wrapper reads its own form)
    return objects_form(fn, [is_operator_object(a) for a in args])
