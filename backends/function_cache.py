"""A cache keyed by Python functions that lives as long as they do.

The transforms cache what they build for a user function (its desugared form, its derivative,
its staged form) by the function object. In a plain dict those entries kept every function
ever transformed alive, and with it everything it closes over: `grad(lambda p: loss(p, batch))`
written in a training loop kept every batch (measured: 20 closures over 8 MB arrays, +150 MB a
round, never freed). A WeakKeyDictionary does not help, since what is cached refers back to the
function (a derivative names its source). So an entry is stored on the function it belongs to,
in its `__dict__` (as `_secant_cache`): it becomes garbage with the function, cycles included.

`FunctionCache` reads like a dict (get, [], in, pop, clear, keys/values/items, len). A key is
a function, or a tuple whose first function item owns it; any other key is kept in a plain dict
of its own, as before. The stored key is the whole key (owner included), so a wrapper that
copied the function's `__dict__` (functools.wraps) never reads the wrapped function's entries.
"""
import types
import weakref

# (not "__secant..."-prefixed: those name a transform's own marks, transformer/operators.py)
ATTR = "_secant_cache"


def _owner(key):
    if type(key) is types.FunctionType:
        return key
    if type(key) is tuple:
        for k in key:
            if type(k) is types.FunctionType:
                return k
    return None


_ALL = weakref.WeakSet()        # every FunctionCache (clear_all)


def clear_all():
    """Drop every transform's cached forms (a class registered as a pytree after secant read
    it as a plain class: what was built for it assumed the plain structure)."""
    for cache in list(_ALL):
        cache.clear()


class FunctionCache:
    def __init__(self, name):
        _ALL.add(self)
        self._name = name
        self._owners = weakref.WeakSet()     # the functions holding entries of this cache
        self._plain = {}                    # keys with no function in them

    def _table(self, key, create=False):
        owner = _owner(key)
        if owner is None:
            return self._plain
        tables = owner.__dict__.get(ATTR)
        if tables is None:
            if not create:
                return None
            tables = owner.__dict__[ATTR] = {}
        table = tables.get(self._name)
        if table is None and create:
            table = tables[self._name] = {}
            self._owners.add(owner)
        return table

    def get(self, key, default=None):
        table = self._table(key)
        return default if table is None else table.get(key, default)

    def __getitem__(self, key):
        table = self._table(key)
        if table is None:
            raise KeyError(key)
        return table[key]

    def __setitem__(self, key, value):
        self._table(key, create=True)[key] = value

    def __contains__(self, key):
        table = self._table(key)
        return table is not None and key in table

    def pop(self, key, *default):
        table = self._table(key)
        if table is None:
            if default:
                return default[0]
            raise KeyError(key)
        return table.pop(key, *default)

    def _tables(self):
        tables = [self._plain]
        for owner in list(self._owners):
            table = owner.__dict__.get(ATTR, {}).get(self._name)
            if table is not None:
                tables.append(table)
        return tables

    def items(self):
        return [kv for table in self._tables() for kv in list(table.items())]

    def keys(self):
        return [k for k, _ in self.items()]

    def values(self):
        return [v for _, v in self.items()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return sum(len(t) for t in self._tables())

    def clear(self):
        for table in self._tables():
            table.clear()


# --- what a function's cached forms were built from -------------------------------------------
# A derivative writes the function's defaults into its own signature and reads its code once:
# `f.__defaults__ = (3.0,)`, `f.__kwdefaults__ = {...}` or `f.__code__ = g.__code__` after a
# transform made every cached form of f stale (grad(f) answered for the old default: a silently
# wrong value). Each function's tables keep the stamp they were built for (its code, defaults
# and keyword defaults, by identity); a function whose stamp changed has them all dropped.
_STAMP = "stamp"        # (a key of the function's tables dict that no FunctionCache is named)


def _stamp(fn):
    kw = fn.__kwdefaults__
    return (fn.__code__, fn.__defaults__, kw, tuple(kw.values()) if kw else ())


def _same_stamp(old, fn):
    code, defaults, kw, kw_values = old
    if fn.__code__ is not code or fn.__defaults__ is not defaults:
        return False
    now = fn.__kwdefaults__
    if now is not kw:
        return False
    return not now or len(now) == len(kw_values) and all(
        a is b for a, b in zip(now.values(), kw_values))


def fresh(fn):
    """Drop every cached form of the plain function `fn` (each FunctionCache's entries it owns)
    if its code, defaults or keyword defaults changed since they were built (then True); note
    them now."""
    tables = fn.__dict__.get(ATTR)
    if tables is None:
        fn.__dict__[ATTR] = {_STAMP: _stamp(fn)}
        return False
    old = tables.get(_STAMP)
    if old is None:         # (what it holds was built from what fn is now)
        tables[_STAMP] = _stamp(fn)
        return False
    if _same_stamp(old, fn):
        return False
    tables.clear()
    tables[_STAMP] = _stamp(fn)
    return True


class Stamp:
    """The guard of what was generated from a function (or a derivative calling one): it holds
    while the function's code, defaults and keyword defaults are the ones it was built for."""
    __slots__ = ("fn", "stamp")

    def __init__(self, fn):
        self.fn = weakref.ref(fn)
        self.stamp = _stamp(fn)

    def holds(self):
        fn = self.fn()
        return fn is None or _same_stamp(self.stamp, fn)
