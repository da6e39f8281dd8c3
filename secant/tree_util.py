"""Pytrees as in JAX: tuples, lists, dicts, None, namedtuples and registered classes are nodes;
everything else is a leaf. Flattening runs in jaxlib's C++ registry (a private instance, so an
imported jax never clashes), which keeps jit dispatch fast."""
import dataclasses
from collections.abc import Mapping
import functools
import threading
import types

from secant.backends import runtime
from secant.backends.errors import SecantTypeError, SecantValueError, defined_at, where

_registry = runtime.new_pytree_registry()
PyTreeDef = runtime.PyTreeDef
DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey = (
    runtime.DictKey, runtime.SequenceKey, runtime.GetAttrKey, runtime.FlattenedIndexKey)
_node_types = set()         # the classes registered below (transformer/objects.py reads them)


def registry():
    return _registry


def _read_plain_before(cls, flatten, unflatten):
    """Whether `cls` was read by secant as a plain class (plain_object: a pytree of its
    __dict__) before the user registers it now; its registration then wins, as in JAX where
    the user's registration is the only one: jaxlib's registry takes each class once, so the
    plain registration dispatches (_plain_or_later_flatten) to the user's functions from now
    on, and every transform, trace and compiled program built while it was plain is dropped
    (a structure flattened before keeps its plain aux data, _PlainKeys, and is rebuilt so)."""
    if cls not in _plain_types:
        return False
    with _plain_lock:
        _later[cls] = (flatten, unflatten)
        _plain_types.discard(cls)
    from secant.api import clear_caches
    from secant.backends import function_cache
    function_cache.clear_all()
    clear_caches()
    return True


_later = {}     # a class read plain, then registered: its (flatten, unflatten)


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """flatten_func(x) -> (children, aux_data); unflatten_func(aux_data, children) -> x."""
    flatten = _checked_flatten(nodetype, flatten_func, flatten_func)
    if _read_plain_before(nodetype, flatten, unflatten_func):
        return nodetype
    _node_types.add(nodetype)
    _registry.register_node(nodetype, flatten, unflatten_func)
    return nodetype


def _checked_flatten(nodetype, flatten_func, shown):
    """flatten_func, its result checked: a pair (children, aux_data), else an error naming the
    user's flatten function and the line that flattened."""
    def flatten(x):
        out = flatten_func(x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise SecantValueError(
                f"the flatten function of the pytree node type {nodetype.__name__}, "
                f"{defined_at(shown)}, must return a pair (children, aux_data), as in JAX, but "
                f"returned {_short_repr(out)}{where()}")
        return out
    return flatten


def _short_repr(x, n=80):
    text = repr(x)
    return text if len(text) <= n else text[:n - 3] + "..."


def register_pytree_node_class(cls):
    """Class decorator: the class defines tree_flatten(self) and classmethod tree_unflatten."""
    flatten = _checked_flatten(cls, lambda x: x.tree_flatten(), getattr(cls, "tree_flatten", cls))
    if _read_plain_before(cls, flatten, cls.tree_unflatten):
        return cls
    _node_types.add(cls)
    _registry.register_node(cls, flatten, cls.tree_unflatten)
    return cls


def register_dataclass(cls, data_fields=None, meta_fields=None, drop_fields=()):
    """As JAX's: without data_fields, a dataclass's fields are its data but those marked
    `dataclasses.field(metadata=dict(static=True))` (or named in meta_fields), which are aux
    data (static under jit), less drop_fields."""
    if data_fields is None:
        if not dataclasses.is_dataclass(cls):
            raise SecantTypeError(f"{cls.__name__} is not a dataclass; give data_fields and meta_fields")
        fields = [f for f in dataclasses.fields(cls) if f.name not in drop_fields]
        if meta_fields is None:
            meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        meta_fields = tuple(meta_fields)
        data_fields = tuple(f.name for f in fields if f.name not in meta_fields)
    data, meta = tuple(data_fields), tuple(meta_fields or ())
    if _read_plain_before(
            cls, lambda x: ([getattr(x, k) for k in data], tuple(getattr(x, k) for k in meta)),
            lambda aux, children: cls(**dict(zip(data, children)), **dict(zip(meta, aux)))):
        return cls                  # (as jaxlib's dataclass node: built by cls(**fields))
    _registry.register_dataclass_node(cls, list(data_fields), list(meta_fields or ()))
    _node_types.add(cls)
    return cls


def plain_object(x):
    """Whether `x` is an object of a plain user class (not registered, its fields in its
    __dict__: a model or distribution built from a class known only at run time) that secant
    reads as a pytree of its fields, registering its class (as equinox and JAX's
    register_dataclass do: the fields its children, in sorted order, their names its aux data;
    an object rebuilt without running __init__). False for anything else."""
    cls = type(x)
    if cls in _node_types:
        return cls in _plain_types
    if cls in _not_plain:
        return False
    if plain_refusal(cls, read=True) is not None \
            or not isinstance(getattr(x, "__dict__", None), dict):
        _not_plain.add(cls)
        return False
    with _plain_lock:
        if cls not in _node_types:
            _registry.register_node(cls, _plain_or_later_flatten,
                                    functools.partial(_plain_or_later_unflatten, cls))
            _plain_types.add(cls)
            _node_types.add(cls)
    return True


_plain_types = set()
_not_plain = set()          # (classes asked about once: an array's on every zero)
_plain_lock = threading.Lock()


def _plain_class(cls):
    """Whether objects of `cls` can be built and written field by field (their __init__ read
    as the fields it sets, m.w = v as a new object): no __setattr__ of its own either."""
    return plain_refusal(cls) is None


def plain_refusal(cls, read=False):
    """Why objects of class `cls` cannot be read as their fields (None when they can): its
    fields not in an instance __dict__ (__slots__, a C extension type), or attribute access of
    its own (__getattr__, __setattr__, __getattribute__), or not a user's class at all.

    read=True: whether they can be read as a pytree of their fields only (plain_object:
    flattened as vars(x), rebuilt as object.__new__ + its __dict__, as JAX's register_dataclass
    rebuilds without __init__): a __setattr__ of the class's own is allowed there (flax's
    Module guards, records or binds what is assigned; the fields it kept are what vars reads,
    and the rebuilt object holds the same __dict__). Reads through the default
    __getattribute__ find those fields, so only __getattr__ / __getattribute__ refuse. Writes
    (m.w = v, its __init__ read as its fields) must run that __setattr__: _plain_class."""
    import types
    if not isinstance(cls, type) or (cls.__module__ or "").split(".")[0] in (
            "secant", "numpy", "builtins", "jaxlib", "functools", "abc"):
        return "it is not a user's class"
    if issubclass(cls, (tuple, list, dict, type, types.FunctionType, types.MethodType,
                        functools.partial, BaseException)) or hasattr(cls, "__array__") \
            or hasattr(cls, "shape"):
        return "it is a container, array or function type"
    if not getattr(cls, "__dictoffset__", 0):
        return "its objects keep no __dict__ (__slots__, or a type written in C)"
    if hasattr(cls, "__getattr__") or (cls.__setattr__ is not object.__setattr__ and not read
                                       and not _frozen_dataclass(cls)) \
            or cls.__getattribute__ is not object.__getattribute__:
        return "it defines its own attribute access (__getattr__, __setattr__ or " \
            "__getattribute__)"
    return None


def _frozen_dataclass(cls):
    """A @dataclass(frozen=True): its __setattr__ and __delattr__ are the ones dataclasses
    writes, which only refuse (its __init__ and dataclasses.replace build through
    object.__setattr__), so its objects read as their fields as any plain class's."""
    params = getattr(cls, "__dataclass_params__", None)
    return params is not None and params.frozen and all(
        "FrozenInstanceError" in getattr(getattr(cls, name), "__code__",
                                         types.SimpleNamespace(co_freevars=())).co_freevars
        for name in ("__setattr__", "__delattr__"))


class _PlainKeys(tuple):
    """The aux data of a plain class's node: its field names, sorted. A type of its own, equal
    to no other, so a structure flattened while the class was read plain never equals one of
    the user's registration made later (_read_plain_before)."""
    __slots__ = ()

    def __eq__(self, other):
        return type(other) is _PlainKeys and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


def _plain_flatten(x):
    keys = _PlainKeys(sorted(vars(x)))
    return [vars(x)[k] for k in keys], keys


def _plain_unflatten(cls, keys, children):
    out = object.__new__(cls)
    out.__dict__.update(zip(keys, children))
    return out


def _plain_or_later_flatten(x):
    later = _later.get(type(x))
    return _plain_flatten(x) if later is None else later[0](x)


def _plain_or_later_unflatten(cls, aux, children):
    later = _later.get(cls)
    if later is None or type(aux) is _PlainKeys:
        return _plain_unflatten(cls, aux, children)
    return later[1](aux, children)


def plain_structure(cls, fields, assigned=False):
    """The structure of an object of plain class `cls` whose fields are the dict `fields`.
    assigned: built for `m.w = v` (ad/helpers.py object_of), which a __setattr__ of cls's own
    would have run: refused for such a class, naming the user's line."""
    if assigned and isinstance(cls, type) and plain_refusal(cls) is not None:
        raise SecantTypeError(f"secant cannot set a field of an object of {cls.__name__} as a "
                              f"new object: {plain_refusal(cls)}; use object.__setattr__ or a "
                              f"class without its own __setattr__{where()}")
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    if not plain_object(obj):
        raise SecantTypeError(f"secant cannot read an object of {cls.__name__} as its fields"
                              f"{where()}")
    return tree_structure(obj)


plain_structure.__secant_static_query__ = True    # (reads the fields' structure: a constant)


def is_node_type(cls):
    """Whether instances of class `cls` are pytree nodes: a namedtuple or a registered class."""
    return cls in _node_types or isinstance(cls, type) and issubclass(cls, tuple) \
        and hasattr(cls, "_fields")


def tree_flatten(tree, is_leaf=None):
    return _registry.flatten(tree, is_leaf)


def tree_unflatten(treedef, leaves):
    try:
        return treedef.unflatten(leaves)
    except ValueError as e:     # too few or too many leaves: named at the user's line
        raise SecantValueError(f"{e}{where()}") from None


def tree_leaves(tree, is_leaf=None):
    return _registry.flatten(tree, is_leaf)[0]


def tree_leaves_as(tree, treedef, strict=False):
    """`tree` flattened up to the structure `treedef`: its subtrees where treedef has leaves
    (tree_map's trees, as transformer/desugar.py writes tree_map inside a transformed
    function; the first one too when tree_map has an is_leaf).

    strict (the user's tree_map, as desugar writes it): a list where treedef has a tuple (or
    the reverse) is refused, as JAX refuses it. Otherwise (a derivative's own reading of a
    cotangent) it is read as treedef's kind: a cotangent of a list unpacked comes as a tuple."""
    if strict:
        return _flatten_up_to(treedef, tree, None)
    try:
        return treedef.flatten_up_to(tree)
    except (ValueError, TypeError):
        like = treedef.unflatten([_PathLeaf() for _ in range(treedef.num_leaves)])
        return _flatten_up_to(treedef, kinds_as(tree, like), 2)


def kinds_as(b, a):
    """b with each plain list or tuple where a has a tuple or list of its length made a's kind
    (through dicts, lists and tuples; b itself where nothing differs): the cotangents of one
    list may come as a list and as a tuple (`x, y = layers` differentiated builds a tuple)."""
    kinds = (type(a), type(b))
    if kinds in ((list, tuple), (tuple, list), (list, list), (tuple, tuple)) \
            and len(a) == len(b):
        items = [kinds_as(v, u) for u, v in zip(a, b)]
        same = type(a) is type(b) and all(x is v for x, v in zip(items, b))
        return b if same else type(a)(items)
    if kinds == (dict, dict) and a.keys() == b.keys():
        items = {k: kinds_as(b[k], a[k]) for k in b}
        return b if all(items[k] is b[k] for k in b) else items
    if kinds[0] is dict and kinds[1] in _node_types and isinstance(b, Mapping) \
            and set(a) == set(b):       # the cotangent of d[k] where the user's Mapping's
        return {k: kinds_as(b[k], a[k]) for k in a}     # __getitem__ wrapped the dict's item
    if kinds[1] in (list, tuple) and kinds[0] in _node_types and not isinstance(a, tuple):
        return _as_container(b, a)      # `u, v = make(x)` of the user's container
    return b


def item_leaves(tree, indices):
    """Where the items tree[i] (i in indices) of a container of the user's class (its own
    __getitem__) lie among tree's leaves: i -> (their positions in tree's flattening, the
    item's structure), read on the object rebuilt from stand-in leaves; None where an item is
    computed from them (no leaf of the tree) or tree has no such item."""
    leaves, treedef = tree_flatten(tree)
    marks = [_PathLeaf() for _ in leaves]
    at = {id(m): k for k, m in enumerate(marks)}
    try:
        rebuilt = treedef.unflatten(marks)
        items = {i: tree_flatten(rebuilt[i]) for i in indices}
    except Exception:       # (no __getitem__, or one that computes)
        return None
    if not all(id(m) in at for got, _ in items.values() for m in got):
        return None
    return {i: ([at[id(m)] for m in got], d) for i, (got, d) in items.items()}


def _as_container(b, a):
    """The items b (a tuple or list: the cotangents of `u, v = obj` item by item) as a's own
    class, where each leaf of `a` is part of exactly one of a's items (else b)."""
    try:
        same_length = len(a) == len(b)
    except Exception:       # (no __len__, or one that fails)
        return b
    places = item_leaves(a, range(len(b))) if same_length else None
    if places is None:
        return b
    out = [None] * len(tree_leaves(a))
    for (at, d), item in zip(places.values(), b):
        try:
            values = d.flatten_up_to(kinds_as(item, d.unflatten([_PathLeaf()] * len(at))))
        except (ValueError, TypeError):
            return b
        for k, v in zip(at, values):
            if out[k] is not None:
                return b
            out[k] = (v,)
    if any(v is None for v in out):
        return b
    return tree_structure(a).unflatten([v[0] for v in out])


def tree_structure(tree, is_leaf=None):
    return _registry.flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef):
    return treedef.num_nodes == 1


def tree_map(f, tree, *rest, is_leaf=None):
    leaves, treedef = _registry.flatten(tree, is_leaf)
    others = [_flatten_up_to(treedef, r, i + 2) for i, r in enumerate(rest)]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def _flatten_up_to(treedef, tree, position):
    try:
        return treedef.flatten_up_to(tree)
    except (ValueError, TypeError) as e:
        which = "a tree" if position is None else f"tree {position}"
        raise SecantValueError(
            f"tree_map: {which} does not match the first tree's structure {treedef}: "
            f"{e}{where()}") from None


def tree_reduce(function, tree, initializer=None, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is None:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def all_leaves(iterable):
    return all(treedef_is_leaf(tree_structure(x)) for x in iterable)


def tree_flatten_with_path(tree, is_leaf=None):
    return _registry.flatten_with_path(tree, is_leaf)


class _PathLeaf:
    """A stand-in leaf: treedef_paths flattens a structure filled with these."""
    __slots__ = ()


def treedef_paths(treedef):
    """The key paths of a structure's leaves, in flatten order (tree_map_with_path as the
    transforms read it: transformer/desugar.py)."""
    path_leaves, _ = _registry.flatten_with_path(
        treedef.unflatten([_PathLeaf() for _ in range(treedef.num_leaves)]))
    return [p for p, _ in path_leaves]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    path_leaves, treedef = _registry.flatten_with_path(tree, is_leaf)
    others = [_flatten_up_to(treedef, r, i + 2) for i, r in enumerate(rest)]
    return treedef.unflatten(f(p, x, *xs) for (p, x), *xs in zip(path_leaves, *others))


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """An outer tree of inner trees as an inner tree of outer trees (JAX's: the leaves read
    in order, their count checked)."""
    leaves = tree_leaves(pytree_to_transpose)
    order = transpose_order(outer_treedef, inner_treedef, tree_structure(pytree_to_transpose))
    return transpose_structure(outer_treedef, inner_treedef).unflatten(leaves[k] for k in order)


def transpose_structure(outer_treedef, inner_treedef):
    """The structure tree_transpose returns (transformer/desugar.py writes tree_transpose with
    it and transpose_order, for the transforms)."""
    return inner_treedef.compose(outer_treedef)


def transpose_order(outer_treedef, inner_treedef, treedef):
    """The leaves of a tree of structure `treedef` (an outer_treedef of inner_treedefs) in the
    order tree_transpose returns them; JAX's TypeError when their count differs."""
    n, m = outer_treedef.num_leaves, inner_treedef.num_leaves
    if treedef.num_leaves != n * m:
        raise SecantTypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
    return [i * m + j for j in range(m) for i in range(n)]


def keystr(path, *, simple=False, separator=""):
    """A key path as text: `['a'][0]`; simple=True writes the bare keys (`a/0` with
    separator "/")."""
    if not simple:
        return separator.join(str(k) for k in path)
    return separator.join(str(_bare_key(k)) for k in path)


def _bare_key(k):
    for attr in ("key", "idx", "name"):     # DictKey, SequenceKey / FlattenedIndexKey, GetAttrKey
        if hasattr(k, attr):
            return getattr(k, attr)
    return k


def tree_leaves_with_path(tree, is_leaf=None):
    """[(key path, leaf), ...] in tree_leaves' order."""
    return _registry.flatten_with_path(tree, is_leaf)[0]


def tree_all(tree, *, is_leaf=None):
    """Whether every leaf is truthy (as Python's all over tree_leaves)."""
    return all(tree_leaves(tree, is_leaf))


class Partial(functools.partial):
    """functools.partial as a pytree, as jax.tree_util.Partial: its arguments are the leaves and
    the function the static part, so a Partial passes through jit, vmap and grad as a value
    (`jit(apply)(Partial(f, w), x)`)."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial) and not isinstance(func, Partial):
            args, kwargs = func.args + args, {**func.keywords, **kwargs}
            func = func.func        # (a plain partial unwrapped: its function stays static)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))


# --- the rest of jax.tree_util's names ----------------------------------------------------------
KeyEntry = object       # (typing aliases in JAX: a key path is a tuple of these)
KeyPath = tuple


def default_registry():
    """The registry secant's pytree functions use (jaxlib's C++ one, a private instance)."""
    return _registry


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """As register_pytree_node, with flatten_with_keys(x) -> ([(key, child), ...], aux_data)
    giving the key paths (tree_flatten_with_path, keystr) of its children."""
    def flatten(x):
        if flatten_func is not None:
            return flatten_func(x)
        pairs, aux = flatten_with_keys(x)
        return [child for _, child in pairs], aux
    checked = _checked_flatten(nodetype, flatten, flatten_with_keys)
    if _read_plain_before(nodetype, checked, unflatten_func):
        return nodetype         # (its key paths then numbered: read plain, registered without)
    _node_types.add(nodetype)
    _registry.register_node(nodetype, checked, unflatten_func, flatten_with_keys)
    return nodetype


def register_pytree_with_keys_class(cls):
    """Class decorator: cls.tree_flatten_with_keys(self) and the classmethod tree_unflatten
    (cls.tree_flatten too, when it defines one)."""
    return register_pytree_with_keys(
        cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
        (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None)


def register_static(cls):
    """Class decorator: instances of cls are pytree nodes with no children (the whole value is
    static: passed through jit's cache key and unchanged by tree_map)."""
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


def is_tree_node(tree, is_leaf=None):
    """Whether `tree` is an internal node of a pytree (a container or registered class), not a
    leaf."""
    if is_leaf is not None and is_leaf(tree):
        return False
    return _registry.flatten_one_level(tree) is not None


def _one_level(out, tree):
    if out is None:
        raise SecantValueError(f"can't tree-flatten type: {type(tree)}{where()}")
    items, data = out
    return list(items), data


def flatten_one_level(tree):
    """(children, node_data) of a node's top level; a leaf is a ValueError, as in JAX."""
    return _one_level(_registry.flatten_one_level(tree), tree)


def flatten_one_level_with_keys(tree):
    """([(key, child), ...], node_data) of a node's top level."""
    return _one_level(_registry.flatten_one_level_with_keys(tree), tree)


def treedef_children(treedef):
    """The treedefs of a treedef's top-level children."""
    return treedef.children()


def treedef_tuple(treedefs):
    """The treedef of a tuple whose children have the given treedefs."""
    return tree_structure(tuple(td.unflatten([0] * td.num_leaves) for td in treedefs))


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """prefix_tree with each of its leaves repeated over the subtree of full_tree it stands
    for (so the result has full_tree's structure)."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = _flatten_up_to(prefix_def, full_tree, 2)
    return prefix_def.unflatten(tree_map(lambda _, leaf=leaf: leaf, sub, is_leaf=is_leaf)
                                for leaf, sub in zip(prefix_leaves, subtrees))


def tree_reduce_associative(operation, tree, *, identity=None, is_leaf=None):
    """The leaves combined by an associative `operation` (identity for no leaves; without one,
    an error)."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is None:
            raise SecantValueError("tree_reduce_associative: the tree has no leaves and no "
                                   "identity was given" + where())
        return identity
    while len(leaves) > 1:     # pairwise, in rounds (the order of JAX's balanced reduction)
        pairs = [operation(leaves[i], leaves[i + 1]) for i in range(0, len(leaves) - 1, 2)]
        leaves = pairs + leaves[len(leaves) - len(leaves) % 2:]
    return leaves[0]
