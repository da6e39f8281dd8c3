"""secant.numpy.vectorize under the transforms: each rule is a vectorize again, so every
composition (grad of grad, vmap of grad, jit of them) goes through the same three rules.

A call `vf(x, y)` of `vf = snp.vectorize(f, signature=...)` is read as the call of a custom
function with one parameter per argument (`VectorizedCall`, one per number of arguments; the
excluded positions are its nondiff arguments), whose rules are:

- vmap: the same vectorize with one more level (secant/numpy/vectorize.py `Vectorized`): each
  batched argument's batch axis becomes the outermost loop axis, as a size-1 axis for the
  unbatched ones, so it broadcasts like the other loop axes;
- jvp: `vectorize(f_jvp_call)(x, y, x_dot)`, f's generated jvp vectorized with the tangents'
  core dimensions those of their primals (its outputs: the outputs and their tangents);
- vjp: `vectorize(f_vjp)(out_bar, x, y)`, f's generated vjp vectorized, each cotangent then
  summed back to its argument's shape over the loop axes the argument was broadcast along:

      def f_vjp(out_bar, x0, x1):
          x0_bar, x1_bar = f_vjp_vectorized(out_bar, x0, x1)
          return unbroadcast(x0_bar, x0), unbroadcast(x1_bar, x1)

Reverse mode of a vectorize inside a vmap is the vjp one level in, vmapped. A call's keyword
arguments are read by position when they name the function's next parameters in order (others
are refused: pass them positionally).
"""
from secant.backends.errors import UnsupportedError, where
from secant.custom import _Custom
from secant.numpy.vectorize import Vectorized


class VectorizedCall(_Custom):
    """A vectorized function called with n positional arguments, as the transforms see it."""

    def __init__(self, vec, n):
        from secant.transforms import load_generated
        params = ", ".join(f"x{i}" for i in range(n))
        fun = load_generated(f"def vectorized({params}):\n    return vectorized_({params})\n",
                             "vectorized", {}, {"vectorized_": vec})
        fun.__name__ = fun.__qualname__ = _name(vec)
        super().__init__(fun, tuple(i for i in vec.excluded if isinstance(i, int) and i < n))
        self.vec, self.n = vec, n
        self.caller = None

    def generate_rule(self, mode, params, wrt, staged, batch):
        bad = [params[i] for i in wrt if i in self.nondiff_argnums]
        if bad:
            raise UnsupportedError(f"{self.vec.__name__}: cannot {_verb(mode)} its excluded "
                                   f"argument {bad[0]} (excluded arguments are passed as they "
                                   f"are){where()}")
        if mode == "vmap":
            return self.batched(params, wrt, batch)
        if mode == "jvp":
            return self.jvp(wrt, staged)
        if mode == "vjp":
            return self.vjp(wrt, staged)
        raise UnsupportedError(f"{mode} of {self.vec.__name__}{where()}")

    def batched(self, params, wrt, batch):
        from secant.transforms import example_axes
        level = example_axes(batch, len(params), wrt, self.vec.__name__)
        vec = self.vec
        out = call_of(Vectorized(vec.pyfunc, vec.excluded, vec.signature,
                                 (level,) + vec.levels), self.n)
        out.__secant_out_batched__ = True
        return out

    def jvp(self, wrt, staged):
        from secant.transforms import _make_jvp_call, _op_function, generate
        vec = self.vec
        gen = generate(_op_function(vec.pyfunc), wrt, "jvp", staged=staged)
        core = _make_jvp_call(gen, len(wrt), self.n, ())
        signature = None
        if vec.parsed is not None:
            ins, outs = _mapped_cores(vec, self.n)
            signature = _signature(ins + [ins[_mapped_index(vec, i)] for i in wrt],
                                   outs + outs)
        levels = tuple(level + tuple(level[i] for i in wrt) for level in vec.levels)
        if vec.parsed is None or len(vec.parsed[1]) == 1:
            return call_of(Vectorized(core, vec.excluded, signature, levels), self.n + len(wrt))
        return self.jvp_of_outputs(core, signature, levels, len(vec.parsed[1]), len(wrt))

    def jvp_of_outputs(self, core, signature, levels, k, m):
        """The jvp of a vectorize with k > 1 outputs: the core's (outputs, tangents) pair
        flattened to the 2k outputs its signature names, vectorized, then paired again."""
        from secant.transforms import load_generated
        name = _name(self.vec)
        params = ", ".join(f"x{i}" for i in range(self.n + m))
        flat = load_generated(f"def {name}_jvp_flat({params}):\n"
                              f"    out, out_dot = {name}_jvp_core({params})\n"
                              f"    return (*out, *out_dot)\n", f"{name}_jvp_flat", {},
                              {f"{name}_jvp_core": core})
        inner = call_of(Vectorized(flat, self.vec.excluded, signature, levels), self.n + m)
        return load_generated(f"def {name}_jvp({params}):\n"
                              f"    both = {name}_jvp_vectorized({params})\n"
                              f"    return tuple(both[:{k}]), tuple(both[{k}:])\n",
                              f"{name}_jvp", {}, {f"{name}_jvp_vectorized": inner})

    def vjp(self, wrt, staged):
        from secant.ad.helpers import unbroadcast
        from secant.transforms import _op_function, generate, load_generated
        vec = self.vec
        if vec.levels:
            return self.vjp_of_batched(wrt, staged)
        signature = None
        if vec.parsed is not None:
            ins, outs = _mapped_cores(vec, self.n)
            signature = _signature(outs + ins, [ins[_mapped_index(vec, i)] for i in wrt])
        k = len(vec.parsed[1]) if vec.parsed is not None else 1
        gen = generate(_op_function(vec.pyfunc), wrt, "vjp", staged=staged)
        name = _name(vec)
        params = [f"x{i}" for i in range(self.n)]
        if k > 1:       # one cotangent per output: the vectorized vjp takes them apart
            bars_in = ", ".join(f"out{j}_bar" for j in range(k))
            gen = load_generated(f"def {name}_vjp_core({bars_in}, {', '.join(params)}):\n"
                                 f"    return {name}_vjp_outputs(({bars_in},), "
                                 f"{', '.join(params)})\n", f"{name}_vjp_core", {},
                                 {f"{name}_vjp_outputs": gen})
        excluded = {i + k for i in vec.excluded if isinstance(i, int)}
        inner = call_of(Vectorized(gen, excluded, signature), self.n + k)
        bars = [f"{params[i]}_bar" for i in wrt]
        given = "out_bar" if k == 1 else ", ".join(f"out_bar[{j}]" for j in range(k))
        source = (f"def {name}_vjp(out_bar, {', '.join(params)}):\n"
                  f"    {', '.join(bars)} = {name}_vjp_vectorized({given}, "
                  f"{', '.join(params)})\n"
                  f"    return {', '.join(f'unbroadcast({b}, {params[i]})' for b, i in zip(bars, wrt))}\n")
        return load_generated(source, f"{name}_vjp", {},
                              {f"{name}_vjp_vectorized": inner, "unbroadcast": unbroadcast})


    def vjp_of_batched(self, wrt, staged):
        """Reverse mode of a vectorize inside a vmap: the vjp of the call one level in, vmapped
        over the outermost level (out_bar's batch axis in front, each cotangent at its
        argument's batch axis; an unbatched argument's summed over the batch)."""
        import secant.numpy as snp
        from secant.batch import vmap
        from secant.transforms import generate, load_generated
        vec = self.vec
        level = vec.levels[0]
        inner = call_of(Vectorized(vec.pyfunc, vec.excluded, vec.signature, vec.levels[1:]),
                        self.n)
        axes = [0 if level[i] is None else level[i] for i in wrt]
        batched = vmap(generate(inner, wrt, "vjp", staged=staged), in_axes=(0,) + level,
                       out_axes=axes[0] if len(wrt) == 1 else tuple(axes))
        name = f"{_name(vec)}_vmap"
        params = [f"x{i}" for i in range(self.n)]
        bars = [f"{params[i]}_bar" for i in wrt]
        results = [b if level[i] is not None else f"snp.sum({b}, 0)" for b, i in zip(bars, wrt)]
        source = (f"def {name}_vjp(out_bar, {', '.join(params)}):\n"
                  f"    {', '.join(bars)} = {name}_vjp_batched(out_bar, {', '.join(params)})\n"
                  f"    return {', '.join(results)}\n")
        return load_generated(source, f"{name}_vjp", {},
                              {f"{name}_vjp_batched": batched, "snp": snp})


def call_of(vec, n):
    """The VectorizedCall of `vec` with n positional arguments (one per pair, so a transform's
    cache finds it again)."""
    hit = vec.calls.get(n)
    if hit is None:
        hit = vec.calls[n] = VectorizedCall(vec, n)
    return hit


def _call_gen(vec, n_args, kw_names):
    """How a transform reads a call of a vectorized function (secant/transforms.py,
    transformer/normalize.py: `__secant_call_gen__`): a function calling its VectorizedCall.
    Keyword arguments that name the function's next positional parameters, in order, are
    passed by position (an excluded name becomes that position)."""
    kw_names = tuple(kw_names)
    if kw_names:
        vec = _keywords_by_position(vec, n_args, kw_names)
    key = ("caller", n_args, kw_names)
    hit = vec.calls.get(key)
    if hit is None:         # (a function calling it: what grad(vf) itself reads)
        from secant.transforms import load_generated
        custom = call_of(vec, n_args + len(kw_names))
        name = _name(vec)
        params = ", ".join([f"x{i}" for i in range(n_args)] + list(kw_names))
        hit = vec.calls[key] = load_generated(
            f"def {name}({params}):\n    return {name}_({params})\n", name, {},
            {f"{name}_": custom})
    return hit


def _keywords_by_position(vec, n_args, kw_names):
    import inspect
    try:
        params = list(inspect.signature(vec.pyfunc).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[n_args:n_args + len(kw_names)]]
    if names != list(kw_names) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                      for p in params[:n_args + len(kw_names)]):
        raise UnsupportedError(f"{vec.__name__} is transformed for calls whose keyword "
                               f"arguments name its next positional parameters in order; pass "
                               f"{', '.join(kw_names)} by position{where()}")
    key = ("by_position", n_args, kw_names)
    hit = vec.calls.get(key)
    if hit is None:
        excluded = {n_args + kw_names.index(e) if e in kw_names else e for e in vec.excluded}
        hit = vec.calls[key] = Vectorized(vec.pyfunc, excluded, vec.signature, vec.levels)
    return hit


Vectorized.__secant_call_gen__ = _call_gen


def _name(vec):
    name = getattr(vec.pyfunc, "__name__", "")
    return f"{name}_vectorized" if name.isidentifier() else "vectorized"


def _verb(mode):
    return {"vmap": "batch", "jvp": "differentiate", "vjp": "differentiate"}.get(mode, mode)


def _mapped_cores(vec, n):
    """The signature's core dimensions of the mapped (not excluded) positional arguments."""
    ins, outs = vec.parsed
    if len(ins) != n - sum(1 for i in range(n) if i in vec.excluded):
        raise UnsupportedError(f"vectorize: the signature {vec.signature!r} has {len(ins)} "
                               f"inputs, the call passes a different number of arrays{where()}")
    return list(ins), list(outs)


def _mapped_index(vec, i):
    return i - sum(1 for j in range(i) if j in vec.excluded)


def _signature(ins, outs):
    core = lambda dims: "(" + ",".join(dims) + ")"      # noqa: E731
    return ",".join(map(core, ins)) + "->" + ",".join(map(core, outs))
