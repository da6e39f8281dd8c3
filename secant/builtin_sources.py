"""The sources transforms read for Python builtins and standard-library helpers that user
numeric code calls on traced values (issue 15, section 3): each computes what the builtin
does, in Python the transforms follow (indexing, comprehensions, `**`), so grad, jvp and vmap
of it need no rules of their own. A call that reads no traced value runs the builtin itself
(transformer/normalize.py); only one that moves or computes traced values reads these.

`SOURCES` maps each builtin to its source (builtins accept no attributes, so they are looked
up here, where secant/numpy/composite.py marks its own functions)."""
import builtins as _builtins
import itertools as _itertools
import math as _math

import secant.numpy as _snp

__secant_by_source__ = True      # transforms read this module like user code


def pow(base, exp, mod=None):
    if mod is not None:
        raise TypeError("pow() with a modulus takes integers, whose derivative is not defined: "
                        "compute pow(base, exp, mod) from static values")
    return base ** exp


def divmod(a, b):
    return a // b, a % b


def round(number, ndigits=None):
    if ndigits is None:
        return _snp.round(number)
    return _snp.round(number, ndigits)


def prod(iterable, *, start=1):
    out = start
    for v in iterable:
        out = out * v
    return out


def max(first, *rest):
    out = first
    for v in rest:
        out = _snp.where(v > out, v, out)
    return out


def min(first, *rest):
    out = first
    for v in rest:
        out = _snp.where(v < out, v, out)
    return out


def reversed(seq):
    return [seq[i] for i in _builtins.range(_builtins.len(seq) - 1, -1, -1)]


def sorted(iterable, key=None, reverse=False):
    items = [v for v in iterable]
    if key is None:
        order = _builtins.sorted(_builtins.range(_builtins.len(items)),
                                 key=items.__getitem__, reverse=reverse)
    else:
        ks = [key(v) for v in items]
        order = _builtins.sorted(_builtins.range(_builtins.len(ks)), key=ks.__getitem__,
                                 reverse=reverse)
    return [items[i] for i in order]


def chain(*iterables):
    return [v for it in iterables for v in it]


def pairwise(iterable):
    items = [v for v in iterable]
    return [(items[i], items[i + 1]) for i in _builtins.range(_builtins.len(items) - 1)]


def combinations(iterable, r):
    items = [v for v in iterable]
    return [_builtins.tuple(items[i] for i in idx)
            for idx in _itertools.combinations(_builtins.range(_builtins.len(items)), r)]


def permutations(iterable, r=None):
    items = [v for v in iterable]
    return [_builtins.tuple(items[i] for i in idx)
            for idx in _itertools.permutations(_builtins.range(_builtins.len(items)), r)]


def product(*iterables, repeat=1):
    pools = [[v for v in it] for _ in _builtins.range(repeat) for it in iterables]
    return [_builtins.tuple(pools[k][i] for k, i in _builtins.enumerate(idx))
            for idx in _itertools.product(*[_builtins.range(_builtins.len(p)) for p in pools])]


def compress(data, selectors):
    return [d for d, s in zip(data, selectors) if s]


def zip_longest(*iterables, fillvalue=None):
    lists = [[v for v in it] for it in iterables]
    n = _builtins.max([_builtins.len(items) for items in lists])
    return [_builtins.tuple(items[k] if k < _builtins.len(items) else fillvalue
                            for items in lists) for k in _builtins.range(n)]


def from_iterable(iterables):
    return [v for it in iterables for v in it]


def islice(iterable, *args):
    items = [v for v in iterable]
    return [items[i] for i in _builtins.range(*_builtins.slice(*args).indices(
        _builtins.len(items)))]


def starmap(function, iterable):
    return [function(*args) for args in iterable]


SOURCES = {_math.prod: prod, _builtins.divmod: divmod, _builtins.round: round, _builtins.max: max, _builtins.min: min, _builtins.pow: pow, _builtins.reversed: reversed, _builtins.sorted: sorted,
           _itertools.chain: chain, _itertools.pairwise: pairwise,
           _itertools.combinations: combinations, _itertools.permutations: permutations,
           _itertools.product: product, _itertools.compress: compress,
           _itertools.chain.from_iterable: from_iterable, _itertools.zip_longest: zip_longest, _itertools.islice: islice, _itertools.starmap: starmap}


# what generated code runs in the builtin's place: reversed(xs) returns an iterator, its source
# a list its derivative indexes; max(a, b) of arrays (one per example under vmap) is elementwise
for _source, _name in ((reversed, "reversed_list"), (chain, "chain_list"),
                       (pairwise, "pairwise_list"), (combinations, "combinations_list"),
                       (starmap, "starmap_list"), (permutations, "permutations_list"),
                       (product, "product_list"), (compress, "compress_list"),
                       (from_iterable, "from_iterable_list"), (zip_longest, "zip_longest_list"), (islice, "islice_list"), (max, "max_first"), (min, "min_first")):
    _source.__secant_runs_as__ = _name


def source_for_builtin(obj):
    """The source transforms read for the builtin `obj`, or None."""
    try:
        return SOURCES.get(obj)
    except TypeError:       # (an unhashable callee)
        return None
