"""`m.p` of an object whose class is known only when the code runs (m a parameter), where p may
be computed (a property or cached_property of a pytree class) or a class-level constant rather
than a field. Read as a field, the transforms would run the getter on the tangent or batched
object, or read the class's constant as the tangent (a wrong value). The canonical form then
writes the read as `dynamic_call(attribute_reader(m, 'p'), m)`: attribute_reader picks, when it
runs, the getter (user code, differentiated and batched as any callee known only at run time),
a function returning the class's constant, or a field read."""
import ast
import copy
import dataclasses
import functools
import inspect
import sys
import textwrap
import types
import weakref

from secant import tree_util
from secant.backends.errors import SecantTypeError, where


def _classes():
    """The pytree classes with attributes of their own: registered ones and namedtuples."""
    seen, todo = set(tree_util._node_types), list(tuple.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen and hasattr(cls, "_fields") and \
                (getattr(cls, "__module__", None) or "").split(".")[0] not in _NOT_PASSED:
            seen.add(cls)
        todo.extend(cls.__subclasses__())
    return seen


# packages whose namedtuples never reach a transformed function (jax, a benchmark's oracle: its
# ResourceEnv computes `shape`, and importing jax changed every vmap's x.shape reads)
_NOT_PASSED = ("jax", "jaxlib")


def _computed(cls, name):
    """Whether cls.name is a getter (a property's, a user descriptor's) or a class-level
    constant, not a field."""
    static = inspect.getattr_static(cls, name, None)
    if static is None:
        return False
    if isinstance(static, (property, functools.cached_property)) or _user_descriptor(static):
        return True
    # a namedtuple's fields are descriptors; methods, classmethods are called, not read
    return not (hasattr(static, "__get__") or callable(static) or name in _init_fields(cls))


def _init_fields(cls):
    """The fields every object of dataclass `cls` holds in its __dict__, set by the __init__
    dataclasses generated (a default, `act: str = "tanh"`, is a class attribute too, but a
    field: never read from the class). None of them for a class whose __init__ is not such
    one (its own, or a subclass's)."""
    owner = next((k for k in cls.__mro__ if "__init__" in vars(k)), None)
    params = vars(owner).get("__dataclass_params__") if owner is not None else None
    if params is None or not params.init:
        return ()
    return {f.name for f in dataclasses.fields(owner)}


def _user_descriptor(static):
    """Whether `static` (what a class holds) is an object of a user class with __get__: a
    descriptor that computes the attribute (a function, a namedtuple's or a slot's field
    descriptor are not)."""
    kind = type(static)
    return hasattr(kind, "__get__") and not isinstance(static, types.FunctionType) and \
        user_module(kind.__module__)


def _user_getattr(cls):
    """cls's own __getattr__ (user code computing the attributes no field or class holds), or
    None."""
    hook = inspect.getattr_static(cls, "__getattr__", None)
    return hook if isinstance(hook, types.FunctionType) and user_module(hook.__module__) \
        else None


def has_getattr_hook(cls):
    """Whether the user's class `cls` answers attributes it lacks with its own __getattr__."""
    return _user_getattr(cls) is not None


def has_attr(obj, name):
    """hasattr(obj, name) for secant's own probes (is it an array: `shape`, `dtype`), never
    running the user's __getattr__: a hook that computes any name (`self._table[name]`) would
    raise its own KeyError, or answer a name it does not hold (JAX's checks of a pytree
    leaf run no user hook). Such an object has the attribute its own __dict__ or its class
    holds."""
    cls = type(obj)
    if cls in _UNHOOKED or not _hooked(cls):
        return hasattr(obj, name)
    return inspect.getattr_static(obj, name, _MISSING) is not _MISSING


def get_attr(obj, name, default=None):
    """getattr(obj, name, default) for secant's own probes, never running the user's
    __getattr__ (has_attr)."""
    cls = type(obj)
    if cls in _UNHOOKED or not _hooked(cls):
        return getattr(obj, name, default)
    return getattr(obj, name) if has_attr(obj, name) else default


# (probes of types, shapes, dtypes: constants for a derivative of the code that calls them)
has_attr.__secant_static_query__ = get_attr.__secant_static_query__ = True
has_attr.__secant_type_test__ = True        # (a bool: `has_attr(x, "shape") and ...` is one)
_MISSING = object()


def copy_object(obj):
    """copy.copy(obj), for secant's own copies of the user's objects (a cotangent built from
    the object's zeros): copy.copy asks the new, empty object for __setstate__, which runs
    the user's __getattr__ there (`self._table[name]`, `_table` not yet set: it recurses, plain
    Python's copy.copy too). Such an object is copied as copy.copy does, its state set
    without asking it."""
    cls = type(obj)
    if cls in _UNHOOKED or not _hooked(cls) or has_attr(obj, "__copy__") or \
            has_attr(obj, "__setstate__"):
        return copy.copy(obj)
    func, args, state, *_ = cls.__reduce_ex__(obj, 4) + (None,)
    out = func(*args)
    state, slots = state if isinstance(state, tuple) else (state, None)
    if state:
        object.__getattribute__(out, "__dict__").update(state)
    for name, value in (slots or {}).items():
        object.__setattr__(out, name, value)
    return out


@functools.lru_cache(maxsize=None)
def _named_in(hook):
    """The attribute names a user __getattr__ may compute: the names its code writes as
    strings (`if name == "total"`, `name in ("a", "b")`); read by attribute_reader when
    the code runs (a field of the object stays a field read)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(hook)))
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    return frozenset(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                     and isinstance(n.value, str) and n.value.isidentifier())


def _names_computed_by(cls):
    """The attributes objects of cls may compute: getters and class constants of its classes
    (_computed), and the names its __getattr__ names."""
    hook = _user_getattr(cls)
    return {name for klass in cls.__mro__ if klass not in (object, tuple) for name in vars(klass)
            if not name.startswith("__") and _computed(cls, name)} | (
        _named_in(hook) | _LEARNED.get(cls, set()) if hook is not None else set())


def computes(cls, name):
    """Whether objects of cls compute `name` (a getter, a class constant: _names_computed_by)."""
    return name in _names_computed_by(cls)


def may_be_computed(name):
    """Whether `m.name` may read a getter or a class constant of some pytree class (checked at
    transform time; attribute_reader decides for the object when it runs)."""
    return name in _computed_names()


_computed_cache = [None, frozenset()]       # (the classes' stamp, the names they compute)


def _computed_names():
    stamp = _stamp()
    if _computed_cache[0] != stamp:
        names = set().union(*map(_names_computed_by, _classes()), *_LEARNED.values())
        _computed_cache[:] = [stamp, frozenset(names)]
    return _computed_cache[1]


def _stamp():
    """Changes when a pytree class may have been added (registered, or a namedtuple made)."""
    return len(tree_util._node_types), len(tree_util._later), len(tuple.__subclasses__()), \
        _learned[0]


# class -> the names its own __getattr__ was found computing from the name when the code ran
# (`return self._table[name] * self.scale`: no name its code writes): read through its code
# from then on (the stamp changes: code that read them as fields is generated again)
_LEARNED = weakref.WeakKeyDictionary()
_learned = [0]


def learn_computed(cls, name):
    """Records that cls's own __getattr__ computes `name` (_hook_computes)."""
    names = _LEARNED.setdefault(cls, set())
    if name not in names:
        names.add(name)
        _learned[0] += 1


def reads_computed(gen, args):
    """Whether an argument of a call of `gen` (or an item of a list, tuple or dict argument)
    is an object whose own __getattr__ computes a name gen reads as a plain field (its
    PlainReads guard's names), found before the call runs: learned (learn_computed), so the
    caller generates gen again, reading it through the class's code."""
    objects = None
    for a in args:
        if type(a) in _UNHOOKED:        # (arrays, numbers: at once, on every call)
            continue
        for obj in a.values() if type(a) is dict else a if type(a) in (list, tuple) else (a,):
            if _hooked(type(obj)):
                objects = (objects or []) + [obj]
    if not objects:
        return False
    names = set()
    for guard in getattr(gen, "__secant_guards__", ()):
        if type(guard) is PlainReads:
            names |= guard.names | guard.queries
    found = False
    for obj in objects:
        for name in names:
            if not has_attr(obj, name) \
                    and name not in _named_in(_user_getattr(type(obj))) \
                    and _hook_computes(obj, name):
                learn_computed(type(obj), name)
                found = True
    return found


_hooked_types = weakref.WeakKeyDictionary()
_UNHOOKED = set()       # types without a user __getattr__ (containers aside), met so far


def _hooked(cls):
    try:
        return _hooked_types[cls]
    except KeyError:
        pass
    except TypeError:
        return False
    out = _hooked_types[cls] = _user_getattr(cls) is not None
    if not out and cls not in (dict, list, tuple) and len(_UNHOOKED) < 256:
        _UNHOOKED.add(cls)
    return out


class PlainReads:
    """The guard of generated code that reads `m.p` as a field (p a getter or constant of no
    pytree class when it was transformed, nor of a user class its function reaches): it no
    longer holds once a class registered since computes p, or a class its function reaches now
    (defined after it, `Reach`) computes one of `reached` (the reads of objects whose class the
    code meets only when it runs), and the code is generated again (secant/transforms.py
    _current). `queries`: x.shape / x.ndim of batched values written as array queries, which
    only the classes the function reaches decide (transformer/normalize.py computes_query)."""

    def __init__(self, names, reach=None, reached=(), queries=()):
        self.names, self.stamp = frozenset(names), _stamp()
        self.queries = frozenset(queries)
        self.reach, self.reached = reach, frozenset(reached) | self.queries

    def holds(self):
        now = _stamp()
        if now != self.stamp:
            if any(may_be_computed(n) for n in self.names):
                return False
            self.stamp = now
        if self.reach is not None and self.reached and self.reach.changed():
            again = Reach(self.reach.roots)
            if self.reached & again.names:
                return False
            self.reach = again
        return True


class Reach:
    """The user classes a function reaches when it is transformed: through its globals and
    closure cells, and those of the user functions, classes (their methods) and modules found
    there, and `names`, the attributes they compute (a getter or class constant: _computed).
    An object built inside the function (`p = mk(a)`, mk making a Pair) is met by the pytree
    registry only when the code runs, after the transform read `p.norm2`: its class is found
    here instead. `changed()`: a globals dict or a cell it went through has changed since (a
    class defined after the function), which the guard checks before each call."""

    def __init__(self, roots):
        self.roots = roots          # (globals dict, cells)
        self.dicts, self.cells, classes = [], [], set()
        seen, todo = set(), []

        def through(d):
            if id(d) not in seen:
                seen.add(id(d))
                self.dicts.append((d, len(d)))
                todo.extend(d.values())

        def cells(closure):
            for cell in closure or ():
                try:
                    value = cell.cell_contents
                except ValueError:          # (empty: a class defined after the function)
                    self.cells.append((cell, _EMPTY))
                    continue
                if isinstance(value, _LEADS):       # (a counter's cell: not followed)
                    self.cells.append((cell, value))
                todo.append(value)

        through(roots[0])
        cells(roots[1])
        while todo and len(seen) < _REACH_LIMIT:
            value = todo.pop()
            if id(value) in seen:
                continue
            if isinstance(value, (types.MethodType, functools.partial)):
                todo.append(getattr(value, "__func__", None) or value.func)
            elif isinstance(value, types.FunctionType):
                seen.add(id(value))
                if user_module(value.__module__):
                    through(value.__globals__)
                    cells(value.__closure__)
            elif isinstance(value, type):
                seen.add(id(value))
                if user_module(value.__module__):
                    classes.add(value)
                    for klass in value.__mro__:
                        for v in vars(klass).values():
                            v = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
                            if isinstance(v, types.FunctionType):
                                todo.append(v)
            elif isinstance(value, types.ModuleType):
                seen.add(id(value))
                if user_module(value.__name__):
                    through(vars(value))
            elif user_module(type(value).__module__):     # (a global model: its class)
                todo.append(type(value))
        self.names = frozenset(set().union(*map(_names_computed_by, classes)))

    def changed(self):
        return any(len(d) != n for d, n in self.dicts) or any(
            _contents(cell) is not value for cell, value in self.cells)


_EMPTY = object()
_LEADS = (type, types.FunctionType, types.ModuleType, types.MethodType, functools.partial)
_REACH_LIMIT = 2000     # (objects walked: a program's own modules, never a library's)


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


@functools.lru_cache(maxsize=None)
def user_module(name):
    """Whether module `name` is the user's own: not secant's, the standard library's or an
    installed package's."""
    root = (name or "").split(".")[0]
    if root in ("secant", "builtins", "__main__") or root in sys.stdlib_module_names:
        return root == "__main__"
    path = getattr(sys.modules.get(root), "__file__", None) or ""
    return "site-packages" not in path and "dist-packages" not in path


@functools.lru_cache(maxsize=None)
def _field_reader(name):
    from secant.transforms import load_generated
    from secant.backends.errors import register_internal_file
    made = load_generated(f"def read_{name}(obj):\n    return obj.{name}\n", f"read_{name}",
                          {}, {})
    register_internal_file(made.__code__.co_filename)   # (an error in it names the user's line)
    return made


@functools.lru_cache(maxsize=None)
def _constant_reader(name):
    from secant.transforms import load_generated
    from secant.backends.errors import register_internal_file
    made = load_generated(f"def class_{name}(obj):\n    return type(obj).{name}\n",
                          f"class_{name}", {}, {})
    register_internal_file(made.__code__.co_filename)
    return made


@functools.lru_cache(maxsize=None)
def _hook_reader(name):
    from secant.transforms import load_generated
    from secant.backends.errors import register_internal_file
    made = load_generated(f"def getattr_{name}(obj):\n    return type(obj).__getattr__(obj, "
                          f"{name!r})\n", f"getattr_{name}", {}, {})
    register_internal_file(made.__code__.co_filename)
    return made


_descriptor_readers = {}        # (id(descriptor), name) -> (descriptor, its reader get_<name>)


def _descriptor_reader(name, descriptor):
    from secant.transforms import load_generated
    from secant.backends.errors import register_internal_file
    made = _descriptor_readers.get((id(descriptor), name))
    if made is None or made[0] is not descriptor:
        made = (descriptor, load_generated(
            f"def get_{name}(obj):\n    return descriptor.__get__(obj, type(obj))\n",
            f"get_{name}", {"descriptor": descriptor}, {}))
        register_internal_file(made[1].__code__.co_filename)
        _descriptor_readers[id(descriptor), name] = made
    return made[1]


def computed_how(obj, name):
    """What computes obj.name that is no field ('a property', 'a descriptor', 'computed by
    __getattr__'), or None (a field, a method, a class constant)."""
    static = inspect.getattr_static(type(obj), name, None)
    if isinstance(static, (property, functools.cached_property)):
        return "a property"
    if _user_descriptor(static) and (hasattr(type(static), "__set__")
                                     or name not in getattr(obj, "__dict__", {})):
        return "a descriptor"
    hook = _user_getattr(type(obj)) if static is None else None
    if hook is None or name in getattr(obj, "__dict__", {}):
        return None
    if name in _named_in(hook) or name in _LEARNED.get(type(obj), ()):
        return "computed by __getattr__"    # (a hook that delegates every name to a field's
    if _hook_computes(obj, name):           # object reads fields: read as one)
        learn_computed(type(obj), name)     # (read through its code from the next call)
        return "computed by __getattr__ from the name"
    return None                             # object reads fields: read as one)


def _hook_computes(obj, name):
    """Whether obj's own __getattr__, for a name its code does not write (`return
    self._table[name] * self.scale`: the name looked up in a dict), computes obj.name rather
    than delegating it to a field (`getattr(self._inner, name)`, `self._table[name]`, which
    return obj's own arrays): run once here, the value it returns is not made of obj's leaves
    (its pytree leaves and its fields' items, by identity). A name it does not answer
    (AttributeError) is no computed one."""
    try:
        value = getattr(obj, name)
    except AttributeError:
        return False
    if callable(value):
        return False
    own = {id(leaf) for leaf in tree_util.tree_leaves(obj)}
    fields = getattr(obj, "__dict__", None)
    if type(fields) is dict:
        own |= {id(leaf) for leaf in tree_util.tree_leaves(fields)}
    return any(id(leaf) not in own for leaf in tree_util.tree_leaves(value)
               if not isinstance(leaf, (bool, int, float, complex, str)))


def attribute_reader(obj, name):
    """The function `obj.name` is read by: the property's getter, the cached_property's
    function, a user descriptor's __get__, a read of the class's constant, the class's
    __getattr__ (a name no field or class holds), or a field read."""
    static = inspect.getattr_static(type(obj), name, None)
    how = computed_how(obj, name)
    if how == "a descriptor":
        return _descriptor_reader(name, static)
    if how is not None and how.startswith("computed by __getattr__") and name.isidentifier():
        return _hook_reader(name)
    if isinstance(static, property):
        if static.fget is None:
            raise AttributeError(f"property {name!r} of {type(obj).__name__} has no getter")
        return static.fget
    if isinstance(static, functools.cached_property):
        return static.func
    if static is not None and not hasattr(static, "__get__") and not callable(static) and \
            name not in getattr(obj, "__dict__", {}):
        return _constant_reader(name)
    if not name.isidentifier():
        raise SecantTypeError(f"cannot differentiate or batch getattr(m, {name!r}) of a "
                              f"{type(obj).__name__}: not an attribute name{where()}")
    return _field_reader(name)



attribute_reader.__secant_static_query__ = True     # (it picks a function: a constant)
