"""secant.numpy.vectorize, as jax.numpy.vectorize: a function of core arrays (scalars, or the
core shapes of a gufunc `signature` such as "(n),(n)->()") applied over the broadcast leading
axes of its arguments by nested secant.vmap, one per loop axis. `excluded` names arguments
(positions or keywords) passed as they are. It runs eagerly and under jit; grad and vmap of
code that calls it are errors naming the call (they would need its shapes before the call)."""
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
    parsed = _parse(signature) if signature is not None else None

    def wrapped(*args, **kwargs):
        import secant.numpy as snp
        from secant.batch import vmap
        fixed = {i: a for i, a in enumerate(args) if i in excluded}
        fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}
        names = [k for k in kwargs if k not in excluded]
        arrays = [snp.asarray(a) for i, a in enumerate(args) if i not in excluded] + \
            [snp.asarray(kwargs[k]) for k in names]
        cores = parsed[0] if parsed else [()] * len(arrays)
        if len(cores) != len(arrays):
            raise SecantTypeError(f"vectorize: the signature {signature!r} has {len(cores)} "
                                  f"inputs, the call passes {len(arrays)} arrays{where()}")
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

        fn = _core_function(pyfunc, len(args), fixed, fixed_kw, names)
        for _ in loop:
            fn = vmap(fn)
        lifted = [snp.broadcast_to(a, loop + a.shape[a.ndim - len(core):])
                  for a, core in zip(arrays, cores)]
        out = fn(*lifted)
        if parsed:
            _check_outputs(out, parsed[1], sizes, signature, len(loop))
        return out
    # (not functools.wraps: a transform must never read pyfunc in its place, nor this source)
    wrapped.__name__ = wrapped.__qualname__ = \
        f"vectorize({getattr(pyfunc, '__name__', 'function')})"
    wrapped.__doc__ = getattr(pyfunc, "__doc__", None)
    return wrapped


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
