"""secant.numpy.vectorize, as jax.numpy.vectorize: a function of core arrays (scalars, or the
core shapes of a gufunc `signature` such as "(n),(n)->()") applied over the broadcast leading
axes of its arguments by nested secant.vmap, one per loop axis. `excluded` names arguments
(positions or keywords) passed as they are. It runs eagerly and under jit; grad, jvp and vmap
of it (and of code calling it) use its own rules (secant/vectorize_rules.py): the vectorized
derivative or batched call of the core function, so every composition stays a vectorize."""
import re

import numpy as np

from secant.backends.errors import SecantTypeError, SecantValueError, where

_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_SIGNATURE = re.compile(rf"^{_CORE}(?:,{_CORE})*->{_CORE}(?:,{_CORE})*$")


def _parse(signature):
    """'(n),(n)->()' -> ([('n',), ('n',)], [()]), as NumPy's gufunc signatures."""
    text = re.sub(r"\s+", "", signature)
    if not _SIGNATURE.match(text):
        raise SecantValueError(f"vectorize: not a valid gufunc signature: {signature!r}{where()}")
    ins, outs = text.split("->")
    dims = lambda part: [tuple(re.findall(_DIM, c)) for c in re.findall(_CORE, part)]  # noqa: E731
    return dims(ins), dims(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    if not callable(pyfunc):
        raise SecantTypeError(f"vectorize expects a function, got {pyfunc!r}{where()}")
    excluded = frozenset(excluded)
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise SecantTypeError(f"vectorize: excluded holds positions (int) and keyword names "
                              f"(str), got {sorted(map(repr, excluded))}{where()}")
    return Vectorized(pyfunc, excluded, signature)


class Vectorized:
    """vectorize(pyfunc) as a function. `levels` (for vmap of it, secant/vectorize_rules.py):
    one tuple per enclosing vmap, outermost first, of each positional argument's batch axis
    (None: unbatched at that vmap); a call moves each batch axis in front (a size-1 axis for an
    unbatched argument), so the batch axes are the outermost loop axes of the result."""

    def __init__(self, pyfunc, excluded, signature, levels=()):
        self.pyfunc, self.excluded, self.signature = pyfunc, frozenset(excluded), signature
        self.parsed = _parse(signature) if signature is not None else None
        self.levels = tuple(levels)
        # (not functools.wraps: a transform must never read pyfunc in its place, nor this one)
        self.__name__ = self.__qualname__ = \
            f"vectorize({getattr(pyfunc, '__name__', 'function')})"
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.calls = {}         # (secant/vectorize_rules.py: its custom function per call shape)

    def __repr__(self):
        return f"<secant.numpy.{self.__name__}>"

    def __call__(self, *args, **kwargs):
        import secant.numpy as snp
        from secant.batch import vmap
        excluded, parsed, signature = self.excluded, self.parsed, self.signature
        fixed = {i: a for i, a in enumerate(args) if i in excluded}
        fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}
        names = [k for k in kwargs if k not in excluded]
        mapped = [i for i in range(len(args)) if i not in excluded]
        arrays = [snp.asarray(args[i]) for i in mapped] + [snp.asarray(kwargs[k]) for k in names]
        cores = parsed[0] if parsed else [()] * len(arrays)
        if len(cores) != len(arrays):
            raise SecantTypeError(f"vectorize: the signature {signature!r} has {len(cores)} "
                                  f"inputs, the call passes {len(arrays)} arrays{where()}")
        if self.levels:
            arrays = _leading_levels(arrays, [[level[i] for level in self.levels]
                                              for i in mapped], cores)
        sizes, loops = {}, []
        for a, core in zip(arrays, cores):
            if a.ndim < len(core):
                raise SecantValueError(f"vectorize: an input of shape {a.shape} has fewer axes "
                                       f"than its core dimensions {core}{where()}")
            for d, n in zip(core, a.shape[a.ndim - len(core):]):
                if sizes.setdefault(d, n) != n:
                    raise SecantValueError(f"vectorize: inconsistent size for core dimension "
                                           f"{d!r}: {sizes[d]} and {n}{where()}")
            loops.append(a.shape[:a.ndim - len(core)])
        try:
            loop = np.broadcast_shapes(*loops)
        except ValueError:
            raise SecantValueError(f"vectorize: the loop axes {loops} do not broadcast"
                                   f"{where()}") from None

        fn = _core_function(self.pyfunc, len(args), fixed, fixed_kw, names)
        for _ in loop:
            fn = vmap(fn)
        lifted = [snp.broadcast_to(a, loop + a.shape[a.ndim - len(core):])
                  for a, core in zip(arrays, cores)]
        out = fn(*lifted)
        if parsed:
            _check_outputs(out, parsed[1], sizes, signature, len(loop))
        return out


def _leading_levels(arrays, axes, cores):
    """Each array with one leading axis per level (its batch axis moved there, or a size-1
    axis), then its loop axes padded with size-1 axes to the longest loop, so that loop axes
    broadcast as in the unbatched call and the levels' axes lead the result."""
    import secant.numpy as snp
    n_levels = len(axes[0]) if axes else 0
    out = []
    for a, level_axes in zip(arrays, axes):
        for k, ax in enumerate(level_axes):
            a = snp.expand_dims(a, k) if ax is None else \
                snp.moveaxis(a, k + ax % (a.ndim - k), k)
        out.append(a)
    loop_ranks = [a.ndim - n_levels - len(c) for a, c in zip(out, cores)]
    longest = max(loop_ranks, default=0)
    return [snp.reshape(a, a.shape[:n_levels] + (1,) * (longest - r) + a.shape[n_levels:])
            for a, r in zip(out, loop_ranks)]


def _core_function(pyfunc, n_args, fixed, fixed_kw, names):
    """pyfunc with the excluded arguments filled in, as a function of the mapped ones only
    (x0, x1, ...: positional, then the keywords'), generated so vmap reads it as user code."""
    from secant.transforms import load_generated
    if not fixed and not fixed_kw and not names:
        return pyfunc
    params, call, free = [], [], {"pyfunc": pyfunc}
    for i in range(n_args):
        if i in fixed:
            free[f"excluded{i}"] = fixed[i]
            call.append(f"excluded{i}")
        else:
            params.append(f"x{i}")
            call.append(f"x{i}")
    for k in fixed_kw:
        free[f"excluded_{k}"] = fixed_kw[k]
        call.append(f"{k}=excluded_{k}")
    for j, k in enumerate(names):
        params.append(f"kw{j}")
        call.append(f"{k}=kw{j}")
    source = (f"def vectorized({', '.join(params)}):\n"
              f"    return pyfunc({', '.join(call)})\n")
    return load_generated(source, "vectorized", {}, free)


def _check_outputs(out, cores, sizes, signature, n_loop):
    outs = out if len(cores) > 1 else (out,)
    if len(cores) > 1 and (not isinstance(out, tuple) or len(out) != len(cores)):
        raise SecantValueError(f"vectorize: the function must return {len(cores)} outputs for "
                               f"the signature {signature!r}{where()}")
    for o, core in zip(outs, cores):
        shape = np.shape(o)[n_loop:]
        if len(shape) != len(core) or any(sizes.setdefault(d, n) != n
                                          for d, n in zip(core, shape)):
            raise SecantValueError(f"vectorize: an output of shape {shape} does not match its "
                                   f"core dimensions {core} in {signature!r}{where()}")


# `vectorize(f, ...)(x)` written in place in code a transform reads: made as the code makes it
# (its function named or a lambda, its other arguments literals), then read through its rules
# (secant/vectorize_rules.py) as a vectorize built outside would be
vectorize.__secant_factory__ = True
