"""Writing StableHLO text: types, constants, and a function body builder used by the lowerings."""
import re

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

    def text(self, tail=()):
        """The body's ops, each computed once and only when used (`prune`) by a later line: a
        region's `stablehlo.return`, or `tail` (a function's `return`, written last)."""
        lines = self.lines + list(tail)
        return "\n".join(prune(lines) if PRUNE else lines)


# --- the body as written: one op per distinct computation, none whose result is unused ---------
# A trace writes what the generated Python computes, and derivatives of loops replay their
# primal (a reverse loop recomputes the forward body, the next order replays that reverse loop):
# the same op on the same operands, or an op nobody reads, many times over (issue 19: the 4th
# derivative of two nested loops was 6.7 MB of StableHLO, most of it repeated or dead, and XLA
# parses and verifies all of it before its own CSE/DCE). Each body is pruned when written, its
# nested regions first (they are written into their op's text before the op is).
PRUNE = True        # (off: the body as traced; bench/ compares the two)
_DEF = re.compile(r"\s*(%[\w]+)(?::(\d+))? = ")
_USE = re.compile(r"%[\w]+")
_INNER_DEF = re.compile(r"(%[\w]+)(?::\d+)? = |(%[\w]+): ")
_LOC_TAIL = re.compile(r" loc\(.*$", re.M)
# ops that must run though their results are unused, or must not be merged with their twin
# (a host callback, a random draw, a collective, a barrier XLA must not see through)
_KEEP = re.compile(r"custom_call|has_side_effect|outfeed|infeed|stablehlo\.send|stablehlo\.recv|"
                   r"after_all|stablehlo\.rng\b|\"stablehlo\.rng\"|all_reduce|all_gather|"
                   r"all_to_all|reduce_scatter|collective|optimization_barrier|replica_id|"
                   r"partition_id")


def prune(lines):
    """`lines` (a body's ops, in order) without the ops whose results nothing reads, and with an
    op that repeats an earlier one (same text on the same operands, names defined inside its
    regions aside) replaced by the earlier one's results."""
    renamed, seen, out = {}, {}, []

    def rename(m):
        name = m.group(0)
        return renamed.get(name, name)

    for line in lines:
        if renamed:
            line = _USE.sub(rename, line)
        m = _DEF.match(line)
        if m is None or _KEEP.search(line):
            out.append((None if m is None else m.group(1), line, True))
            continue
        key = _key(line, m.end())
        first = seen.get(key)
        if first is not None:
            renamed[m.group(1)] = first
            continue
        seen[key] = m.group(1)
        out.append((m.group(1), line, False))
    live, kept = set(), []
    for name, line, keep in reversed(out):
        if keep or name in live:
            live.update(_USE.findall(line))
            kept.append(line)
    kept.reverse()
    return kept


def _key(line, start):
    """What an op computes: its text after `%r = ` without locations, the names its own
    regions define numbered in order (two copies of a loop then read the same)."""
    rest = _LOC_TAIL.sub("", line[start:])
    inner = {}
    for m in _INNER_DEF.finditer(rest):
        name = m.group(1) or m.group(2)
        inner.setdefault(name, f"%_{len(inner)}")
    if not inner:
        return rest
    return _USE.sub(lambda m: inner.get(m.group(0), m.group(0)), rest)
