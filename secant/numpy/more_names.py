"""More of jax.numpy (names bench/jax_api_coverage.txt still listed), written with
secant.numpy's ops and read by the transforms as source (`__secant_by_source__`): copy,
astype, unique_values / unique_counts / unique_inverse, setxor1d, put,
put_along_axis, place, poly, polydiv, sort_complex, spacing, bitwise_count, fromfunction,
kaiser, einsum_path, mask_indices, isdtype, block. As in JAX, the in-place NumPy functions (put,
put_along_axis, place) need inplace=False and return the updated array."""
import collections

import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant.backends.errors import SecantTypeError, SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["copy", "astype", "unique_values", "unique_counts", "unique_inverse",
           "setxor1d", "put", "put_along_axis", "place", "poly", "polydiv",
           "sort_complex", "spacing", "bitwise_count", "fromfunction", "kaiser", "einsum_path",
           "mask_indices", "isdtype", "block", "unique_all", "histogramdd", "histogram2d"]

UniqueCountsResult = collections.namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", "values inverse_indices")
UniqueAllResult = collections.namedtuple("UniqueAllResult",
                                         "values indices inverse_indices counts")


# --- copying -------------------------------------------------------------------------------------
def copy(a, order=None):
    """A copy of a (secant arrays are immutable: the same values)."""
    return snp.array(a, copy=True)


def astype(x, dtype, /, *, copy=False, device=None):
    return snp.asarray(x).astype(dtype)


# --- sets ----------------------------------------------------------------------------------------
def unique_values(x, /, *, size=None, fill_value=None):
    return snp.unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    values, counts = snp.unique(snp.ravel(x), return_counts=True, size=size,
                                fill_value=fill_value)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    values, inverse = snp.unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return UniqueInverseResult(values, snp.reshape(inverse, snp.shape(x)))


def unique_all(x, /, *, size=None, fill_value=None):
    """The array API's unique_all: the sorted unique values, the first index of each in the
    flattened x, the index of each element's value (x's shape), and the counts."""
    values, indices, inverse, counts = snp.unique(snp.ravel(x), return_index=True,
                                                  return_inverse=True, return_counts=True,
                                                  size=size, fill_value=fill_value)
    return UniqueAllResult(values, indices, snp.reshape(inverse, snp.shape(x)), counts)


# --- histograms ----------------------------------------------------------------------------------
def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """(counts, [edges per dimension]) of the N points `sample` (N x D), as JAX's: bins an int
    (each dimension), one int or edge array per dimension; differentiable in weights."""
    sample = snp.asarray(sample)
    if not snp.issubdtype(sample.dtype, snp.inexact):
        sample = sample.astype(snp.result_type(float))
    if weights is not None and np.shape(weights) != np.shape(sample)[:1]:
        raise SecantValueError(f"should have one weight for each sample.{where()}")
    n_dims = np.shape(sample)[1]
    if range is not None and len(range) != n_dims:
        raise SecantValueError(f"For sample.shape={np.shape(sample)}, range must be a sequence "
                               f"of {n_dims} pairs or Nones; got range={range!r}{where()}")
    per_dim = list(bins) if isinstance(bins, (list, tuple)) or np.ndim(bins) > 0 else \
        [bins] * n_dims
    if len(per_dim) != n_dims:
        raise SecantValueError(f"should be a bin for each dimension.{where()}")
    slots, edges_by_dim, nbins = [], [], []
    for i in _range(n_dims):
        column = sample[:, i]
        edges = snp.histogram_bin_edges(column, per_dim[i], None if range is None else range[i],
                                        weights)
        slot = snp.searchsorted(edges, column, side="right")
        slots.append(snp.where(column == edges[-1], slot - 1, slot))   # the last bin closed
        edges_by_dim.append(edges)
        nbins.append(np.shape(edges)[0] + 1)
    flat = snp.ravel_multi_index(tuple(slots), tuple(nbins), mode="clip")
    hist = snp.reshape(snp.bincount(flat, weights, length=int(np.prod(nbins))), tuple(nbins))
    hist = hist[(slice(1, -1),) * n_dims]
    if density:
        hist = hist.astype(sample.dtype)
        hist = hist / snp.sum(hist)
        for i in _range(n_dims):
            shape = [1] * n_dims
            shape[i] = -1
            hist = hist / snp.reshape(snp.diff(edges_by_dim[i]), tuple(shape))
    return hist, edges_by_dim


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """(counts, x edges, y edges): histogramdd of the points (x, y)."""
    if not isinstance(bins, (list, tuple)) and np.ndim(bins) == 1 and len(bins) != 2:
        # one edge array for both
        bins = [snp.asarray(bins), snp.asarray(bins)]
    hist, edges = histogramdd(snp.stack([snp.asarray(x), snp.asarray(y)], axis=1), bins, range,
                              weights, density)
    return hist, edges[0], edges[1]


_range = range      # (histogramdd's parameter `range` shadows the builtin)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values in exactly one of ar1 and ar2."""
    if size is not None:
        return _setxor1d_size(snp.ravel(snp.asarray(ar1)), snp.ravel(snp.asarray(ar2)),
                              assume_unique, size, fill_value)
    if not assume_unique:
        ar1 = snp.unique(ar1)
        ar2 = snp.unique(ar2)
    aux = snp.sort(snp.concatenate([snp.ravel(ar1), snp.ravel(ar2)]))
    if snp.size(aux) == 0:
        return aux
    differs = aux[1:] != aux[:-1]
    edge = snp.ones((1,), dtype=bool)
    flag = snp.concatenate([edge, differs, edge])
    alone = flag[1:] & flag[:-1]      # equal to neither neighbour: in exactly one array
    return aux[alone]


def _setxor1d_size(ar1, ar2, assume_unique, size, fill_value):
    """setxor1d's first `size` values, padded (by default with the smallest value kept, as
    JAX's): static shapes, so it works under jit, grad and vmap."""
    aux = snp.sort(snp.concatenate([ar1, ar2]))
    if snp.size(aux) == 0:
        return snp.zeros((size,), aux.dtype)
    edge = snp.ones((1,), dtype=bool)
    if assume_unique:
        flag = snp.concatenate([edge, aux[1:] != aux[:-1], edge])
        alone = flag[1:] & flag[:-1]      # equal to neither neighbour: in exactly one array
    else:       # a value's first place in the sorted values, when only one array holds it
        first = snp.concatenate([edge, aux[1:] != aux[:-1]])
        alone = first & (snp.isin(aux, ar1) != snp.isin(aux, ar2))
    if fill_value is None:
        fill_value = snp.where(snp.any(alone), snp.min(snp.where(alone, aux, aux[-1])),
                               snp.zeros((), aux.dtype))
    # the k-th value kept goes to slot k; the others to slot `size`, dropped
    slots = snp.where(alone, snp.cumsum(alone) - 1, size)
    fill = snp.full((size,), fill_value, dtype=aux.dtype)
    return fill.at[slots].set(aux, mode="drop")


# --- updates that NumPy makes in place -----------------------------------------------------------
def _not_in_place(name, inplace):
    if inplace:
        raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place (secant arrays are "
                         f"immutable, as JAX's): pass inplace=False to get the updated array"
                         + where())


def put(a, ind, v, mode=None, *, inplace=True):
    """a's flat elements `ind` set to v (repeated as needed); out-of-range indices are
    clipped (mode 'clip'), wrapped ('wrap') or, by default, dropped, as JAX's."""
    _not_in_place("put", inplace)
    flat = snp.ravel(a)
    ind = snp.ravel(snp.asarray(ind))
    v = snp.ravel(snp.asarray(v, dtype=flat.dtype))
    v = snp.resize(v, snp.shape(ind))
    n = snp.size(flat)
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = snp.clip(ind, 0, n - 1)
    elif mode not in (None, "raise", "fill"):
        raise ValueError(f"put: mode must be one of 'raise', 'wrap', 'clip' or 'fill', got "
                         f"{mode!r}" + where())
    return snp.reshape(flat.at[ind].set(v, mode=None if mode in ("wrap", "clip") else "drop"),
                       snp.shape(a))


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """arr with arr[..., indices, ...] (along `axis`, the other axes broadcast as in
    take_along_axis) set to values."""
    _not_in_place("put_along_axis", inplace)
    arr = snp.asarray(arr)
    shape = snp.shape(arr)
    if axis is None:
        return snp.reshape(put_along_axis(snp.ravel(arr), snp.ravel(indices), values, 0,
                                          inplace=False, mode=mode), shape)
    axis = axis % len(shape)
    indices = snp.asarray(indices)
    full = shape[:axis] + snp.shape(indices)[axis:axis + 1] + shape[axis + 1:]
    grids = np.indices(full, sparse=True)       # the other axes' positions (static)
    index = grids[:axis] + (snp.broadcast_to(indices, full),) + grids[axis + 1:]
    return arr.at[index].set(snp.broadcast_to(values, full), mode=mode)


def place(arr, mask, vals, *, inplace=True):
    """arr with its elements where `mask` is true (in order) set to the successive vals
    (repeated as needed)."""
    _not_in_place("place", inplace)
    flat_mask = snp.ravel(snp.asarray(mask, dtype=bool))
    vals = snp.ravel(snp.asarray(vals, dtype=snp.result_type(arr)))
    # the k-th True takes vals[k % len(vals)]
    k = snp.cumsum(flat_mask) - 1
    fill = snp.take(vals, k % snp.size(vals), mode="clip")
    return snp.reshape(snp.where(flat_mask, fill, snp.ravel(arr)), snp.shape(arr))


# --- polynomials ---------------------------------------------------------------------------------
def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (of a square matrix: of
    its characteristic polynomial), highest power first; real when the roots come in
    conjugate pairs of a real input, as NumPy's."""
    z = snp.asarray(seq_of_zeros)
    if snp.ndim(z) == 2 and snp.shape(z)[0] == snp.shape(z)[1] and snp.shape(z)[0] != 0:
        z = snp.linalg.eigvals(z)
    elif snp.ndim(z) != 1:
        raise SecantValueError("poly: input must be 1d or a non-empty square 2d array"
                               + where())
    coefs = snp.ones((1,), dtype=snp.result_type(z, 1.0))
    zero = snp.zeros((1,), dtype=coefs.dtype)
    for i in range(snp.shape(z)[0]):            # times (x - z_i)
        coefs = snp.concatenate([coefs, zero]) - z[i] * snp.concatenate([zero, coefs])
    if coefs.dtype.kind == "c" and snp.asarray(seq_of_zeros).dtype.kind != "c":
        coefs = snp.real(coefs)     # a real matrix's eigenvalues: conjugate pairs
    return coefs


def polydiv(u, v, *, trim_leading_zeros=False):
    """(quotient, remainder) of the polynomial division u / v (highest power first); the
    remainder keeps u's length unless trim_leading_zeros (which needs concrete values)."""
    u = snp.asarray(u) * 1.0
    v = snp.asarray(v) * 1.0
    m, n = snp.shape(u)[0] - 1, snp.shape(v)[0] - 1
    scale = 1.0 / v[0]
    q = snp.zeros((max(m - n + 1, 1),), dtype=snp.result_type(u, v))
    r = u
    for k in range(0, m - n + 1):
        d = scale * r[k]
        q = q.at[k].set(d)
        r = r.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        r = snp.trim_zeros(r, trim="f")
    return q, r


# --- elementwise ---------------------------------------------------------------------------------
def sort_complex(a):
    """a sorted (real part, then imaginary part), as complex."""
    a = snp.asarray(a)
    a = a.astype(snp.result_type(a, snp.complex64))
    by_imag = snp.argsort(snp.imag(a), axis=-1, stable=True)
    real = snp.take_along_axis(snp.real(a), by_imag, axis=-1)
    order = snp.take_along_axis(by_imag, snp.argsort(real, axis=-1, stable=True), axis=-1)
    return snp.take_along_axis(a, order, axis=-1)


def spacing(x, /):
    """The distance from x to the next representable value away from zero (negative for
    negative x), as NumPy's."""
    x = lax.stop_gradient(snp.asarray(x) * 1.0)     # (piecewise constant: derivative 0)
    return snp.nextafter(x, snp.where(snp.signbit(x), -snp.inf, snp.inf)) - x


def bitwise_count(x, /):
    """The number of 1 bits in |x| (integers), as uint8."""
    x = snp.asarray(x)
    if not snp.issubdtype(x.dtype, snp.integer):
        raise SecantTypeError(f"bitwise_count: integer input required, got {x.dtype}"
                              + where())
    bits = x.dtype.itemsize * 8
    u = snp.abs(x).astype(f"uint{bits}") if snp.issubdtype(x.dtype, snp.signedinteger) \
        else x
    count = (u & 1).astype(snp.uint8)
    for shift in range(1, bits):
        count = count + ((u >> shift) & 1).astype(snp.uint8)
    return count


# --- from functions and shapes -------------------------------------------------------------------
def fromfunction(function, shape, *, dtype=float, **kwargs):
    """function(*grids) with grids the index arrays of `shape` (in dtype)."""
    grids = snp.indices(tuple(shape), dtype=dtype)
    return function(*[grids[i] for i in range(len(shape))], **kwargs)


def kaiser(M, beta):
    """The Kaiser window of M points: i0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / i0(beta)."""
    if M == 1:
        return snp.ones((1,)) * 1.0
    n = snp.arange(0, M) * 1.0
    alpha = (M - 1) / 2.0
    return snp.i0(beta * snp.sqrt(1 - ((n - alpha) / alpha) ** 2)) / snp.i0(beta * 1.0)


def einsum_path(subscripts, *operands, optimize="greedy"):
    """NumPy's contraction order for these operand shapes (static: it reads shapes only)."""
    placeholders = [np.empty(snp.shape(o)) for o in operands]
    return np.einsum_path(subscripts, *placeholders, optimize=optimize)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices (rows, cols) where mask_func(ones((n, n)), k) is non-zero (a static
    pattern: mask_func is e.g. triu or tril)."""
    mask = np.asarray(mask_func(np.ones((n, n), dtype=np.int32), k)) != 0
    rows, cols = np.nonzero(mask)
    return snp.asarray(rows[:size] if size else rows), snp.asarray(cols[:size] if size else cols)


def isdtype(dtype, kind):
    """Whether dtype is of `kind` (a dtype, a kind name such as 'real floating', or a tuple of
    them), as the array API's isdtype."""
    return np.isdtype(np.dtype(dtype), kind)


# --- assembling ----------------------------------------------------------------------------------
def block(arrays):
    """NumPy's block: nested lists of arrays, the innermost concatenated along the last axis,
    the next along the one before, ..., each promoted to the nesting depth's rank. The nesting
    is planned from the structure alone (static), then the leaves concatenated level by level."""
    leaves = tree_util.tree_leaves(arrays)
    depth, levels = _block_plan(tree_util.tree_structure(arrays))
    rank = max([depth] + [snp.ndim(leaves[i]) for i in range(len(leaves))])
    items = [snp.expand_dims(x, tuple(range(rank - snp.ndim(x)))) for x in leaves]
    for axis, groups in levels:
        items = [snp.concatenate([items[i] for i in group], axis=axis) for group in groups]
    return items[0]


def _list_depth(node):
    """How deep a nest of lists is (a leaf: 0), checked as NumPy's block checks it."""
    if isinstance(node, tuple) or node is None:
        raise SecantTypeError(f"block: {type(node).__name__} found where a list or an array was "
                              "expected; only lists can be used to arrange blocks" + where())
    if not isinstance(node, list):
        return 0
    if not node:
        raise SecantValueError("block: arrays cannot be empty lists" + where())
    depths = [_list_depth(child) for child in node]
    if any(d != depths[0] for d in depths):
        raise SecantValueError(f"block: mismatched list depths {depths}" + where())
    return depths[0] + 1


def _block_plan(treedef):
    """(depth, levels) of nested lists of this structure: each level, innermost first, the axis
    it concatenates along and the groups of positions in the level below that it joins."""
    top = tree_util.tree_unflatten(treedef, list(range(treedef.num_leaves)))
    depth = _list_depth(top)
    layers, layer = [], [top]
    while layer and isinstance(layer[0], list):     # the lists at each height, top first
        layers.append(layer)
        layer = [child for node in layer for child in node]
    levels = []
    for height, layer in enumerate(reversed(layers), start=1):
        starts = np.cumsum([0] + [len(node) for node in layer])
        levels.append((-height, [list(range(a, b)) for a, b in zip(starts[:-1], starts[1:])]))
    return depth, levels
