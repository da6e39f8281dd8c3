"""Writing StableHLO text: types, constants, and a function body builder used by the lowerings."""
import numpy as np

from secant.backends import dtypes


def tensor_type(shape, dtype):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtypes.ir_name(dtype)}>"


def ttype(aval):
    return tensor_type(aval.shape, aval.dtype)


def _scalar_literal(v, dtype):
    """A readable literal when it round-trips exactly, else the element's bits in hex."""
    dt = np.dtype(dtype)
    if dt == dtypes.bool_:
        return "true" if v else "false"
    if dt.kind in "iu":
        return str(int(v))
    if dt.kind == "f" or dt == dtypes.bfloat16:
        f = float(v)
        if np.isfinite(f):
            s = repr(f)
            if "e" in s and "." not in s.split("e")[0]:
                s = s.replace("e", ".0e")
            if np.array(float(s), dtype=dt) == np.array(v, dtype=dt):
                return s
        return "0x" + np.array(v, dtype=dt).tobytes()[::-1].hex().upper()
    return None


def dense_literal(value, dtype):
    """`dense<...>` for a NumPy value: a splat literal when all elements agree, else raw hex bytes."""
    a = np.asarray(value, dtype=dtype)
    flat = a.reshape(-1)
    if flat.size and np.all(flat == flat[0]):   # NaN != NaN: NaN splats take the hex path
        lit = _scalar_literal(flat[0], a.dtype)
        if lit is not None:
            return f"dense<{lit}>"
    if flat.size == 0:
        return "dense<>" if a.ndim else "dense<0>"
    data = np.ascontiguousarray(a).tobytes()
    return f'dense<"0x{data.hex().upper()}">'


class Namer:
    """SSA names shared by a function and the regions nested in it (names must be unique)."""

    def __init__(self):
        self.count = 0

    def fresh(self, prefix=""):
        n = self.count
        self.count += 1
        return f"%{prefix}{n}"


class Body:
    """The body of one function or region: lines of ops, each tagged with the current location."""

    def __init__(self, namer=None, indent="    "):
        self.namer = namer or Namer()
        self.lines = []
        self.indent = indent
        self.loc = ""

    def fresh(self):
        return self.namer.fresh()

    def line(self, text):
        self.lines.append(self.indent + text + self.loc)

    def op(self, text):
        """Emit `%r = <text>` and return %r."""
        r = self.fresh()
        self.line(f"{r} = {text}")
        return r

    def op_multi(self, text, n):
        """Emit `%r:n = <text>` and return the names %r#0 .. %r#(n-1)."""
        r = self.fresh()
        self.line(f"{r}:{n} = {text}")
        return [f"{r}#{i}" for i in range(n)]

    # --- helpers every lowering uses -----------------------------------------------------------
    def constant(self, value, dtype, shape=None):
        a = np.asarray(value, dtype=dtype)
        if shape is not None and a.shape != tuple(shape):
            a = np.broadcast_to(a, shape)
        return self.op(f"stablehlo.constant {dense_literal(a, dtype)} : {tensor_type(a.shape, dtype)}")

    def broadcast_to(self, name, aval, shape):
        """NumPy-style broadcast of `name` (of `aval`) to `shape`; no op when already that shape."""
        shape = tuple(shape)
        if aval.shape == shape:
            return name
        dims = list(range(len(shape) - aval.ndim, len(shape)))
        if any(a != 1 and a != s for a, s in zip(aval.shape, (shape[d] for d in dims))):
            raise ValueError(f"cannot broadcast {aval.shape} to {shape}")
        # size-1 input dims broadcast to any size: broadcast_in_dim expands them itself.
        return self.op(f"stablehlo.broadcast_in_dim {name}, dims = {dims} : "
                       f"({ttype(aval)}) -> {tensor_type(shape, aval.dtype)}")

    def convert(self, name, aval, dtype):
        if aval.dtype == np.dtype(dtype):
            return name
        return self.op(f"stablehlo.convert {name} : ({ttype(aval)}) -> {tensor_type(aval.shape, dtype)}")

    def reshape(self, name, aval, shape):
        if aval.shape == tuple(shape):
            return name
        return self.op(f"stablehlo.reshape {name} : ({ttype(aval)}) -> {tensor_type(shape, aval.dtype)}")

    def text(self):
        return "\n".join(self.lines)
