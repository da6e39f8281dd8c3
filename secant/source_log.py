"""`secant run --show-source DIR`: the generated source of every transform a program takes.

`record(folder)` hooks the one place transforms build their functions (transforms.generate) and
jit's tracing: each function generated for the program's own code is written to
`DIR/<name>.py` (once), and `DIR/index.txt` lists, one line each, the function, the transform,
the user's file:line of its `def` and the generated file.
"""
import inspect
import linecache
import os
import re

from secant.backends.errors import _is_internal, def_line, origin

_MODES = {"grad": "grad", "value_and_grad": "value_and_grad", "vjp": "vjp (reverse mode)",
          "vjp_given_out": "vjp (reverse mode)",
          "vjp_out": "vjp (reverse mode) given its output", "vmap": "vmap"}


class SourceLog:
    """Writes each generated function once; `entries` holds the index rows."""

    def __init__(self, folder):
        self.folder = os.path.abspath(folder)
        os.makedirs(self.folder, exist_ok=True)
        self.entries = []
        self._seen = set()
        self._files = set()
        self._names = {}    # id(generated function) -> (name written under, it, its own text)
        self._index = os.path.join(self.folder, "index.txt")
        with open(self._index, "w") as fh:
            fh.write("# function | transform | defined at | generated source\n")

    # --- hooks ------------------------------------------------------------------------------------
    def on_generate(self, fn, mode, wrt, staged, gen):
        user = _user_def(fn)
        if user is None:        # secant's own functions (a library op's derivative)
            return
        transform = _MODES.get(mode, "jvp (forward mode)" if "jvp" in mode else mode)
        names = _params(fn, wrt)
        if names:
            transform += (" batched in " if mode == "vmap" else " with respect to ") + names
        if staged:
            transform += ", as jit traces it"
        try:
            text = inspect.getsource(gen)
        except (OSError, TypeError):
            return
        gen_name, text = self._named(gen, text)
        self._write(getattr(fn, "__name__", "f"), transform, user, gen_name, text)

    def _named(self, gen, text):
        """(the name `gen` is written under, its text calling the functions written before under
        theirs): a second derivative of one function, for other arguments, is named by what it
        differentiates or batches (`_layer_vjp_w`, as its caller binds it), never a second
        `def _layer_vjp` its caller calls by another name."""
        from secant.codegen.save import _rename
        name = gen.__name__
        same = [n for n, g, t in self._names.values() if g.__name__ == name and t == text]
        if same:            # (its text written already, by another transform: one name)
            name = same[0]
        else:
            wrt = getattr(gen, "__secant_wrt_names__", ())
            written = {n for n, _, _ in self._names.values()}
            if name in written and wrt:
                name = f"{name}_{'_'.join(wrt)}"
            base, k = name, 1
            while name in written:
                k += 1
                name = f"{base}_{k}"
        self._names[id(gen)] = (name, gen, text)      # (held: ids stay unique)
        info = getattr(gen, "__secant_source__", None)
        calls = {n: self._names[id(v)][0] for n, v in (info.closure if info else {}).items()
                 if id(v) in self._names and self._names[id(v)][1] is v}
        return name, _rename(text, {**calls, gen.__name__: name})

    def on_jit(self, jitted):
        fun = jitted._fun
        user = _user_def(fun)
        if user is None:
            return
        from secant.transforms import source
        try:
            text = source(jitted)
        except Exception:       # (a callable without readable source: nothing to show)
            return
        self._write(getattr(fun, "__name__", "f"), "jit (the source jit traces)", user,
                    getattr(fun, "__name__", "f") + "_jit", text)

    # --- files ------------------------------------------------------------------------------------
    def _write(self, name, transform, user, gen_name, text):
        key = (name, transform, user, text)
        if key in self._seen:
            return
        self._seen.add(key)
        base = re.sub(r"\W", "_", gen_name) or "f"
        filename, k = base + ".py", 1
        while filename in self._files:
            k += 1
            filename = f"{base}_{k}.py"
        self._files.add(filename)
        where = f"{_shown(user[0])}:{user[1]}"
        with open(os.path.join(self.folder, filename), "w") as fh:
            fh.write(f"# {transform} of {name}, defined at {where}\n{text}")
        row = (name, transform, where, filename)
        self.entries.append(row)
        with open(self._index, "a") as fh:
            fh.write(" | ".join(row) + "\n")


def _shown(path):
    """A path as the index shows it: relative to the working folder when inside it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _params(fn, wrt):
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ""
    return ", ".join(params[i] for i in wrt if i < len(params))


def _user_def(fn):
    """(file, line) of the `def` of a user's function behind `fn`, or None for secant's own."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    file, line = origin(*def_line(code))
    if file == code.co_filename and file.startswith("<"):
        # generated code (a derivative differentiated again): the user's function it comes
        # from, by the origins of its lines
        file, line = _generated_origin(code)
    if file is None or _is_internal(os.path.abspath(file)) or file.startswith("<"):
        return None
    return file, line


def _generated_origin(code):
    """(file, line of the def) of the user's function whose lines generated `code`."""
    lines = sorted({origin(code.co_filename, n)
                    for n in range(code.co_firstlineno, code.co_firstlineno + 400)}
                   - {(code.co_filename, n) for n in range(code.co_firstlineno,
                                                            code.co_firstlineno + 400)})
    lines = [(f, n) for f, n in lines if not f.startswith("<")]
    if not lines:
        return None, None
    file, line = lines[0]
    indent = None
    for n in range(line, 0, -1):        # the `def` the first mapped line is in
        text = linecache.getline(file, n)
        stripped = text.lstrip()
        if indent is None:
            indent = len(text) - len(stripped)
        if stripped.startswith(("def ", "async def ")) and len(text) - len(stripped) < indent:
            return file, n
    return file, line


def record(folder):
    """Start writing the program's generated sources to `folder`; returns the SourceLog."""
    from secant import api, transforms
    log = SourceLog(folder)
    transforms.GENERATE_HOOKS.append(log.on_generate)
    api.JIT_HOOKS.append(log.on_jit)
    return log


def stop(log):
    from secant import api, transforms
    transforms.GENERATE_HOOKS[:] = [h for h in transforms.GENERATE_HOOKS
                                    if getattr(h, "__self__", None) is not log]
    api.JIT_HOOKS[:] = [h for h in api.JIT_HOOKS if getattr(h, "__self__", None) is not log]
