"""Command line: print or save the derivative source of a function in a file.

    python -m secant grad FILE.py:FUNC [--argnums 0,1] [--stage STAGE] [--out OUT.py]

prints `secant.source(secant.grad(FUNC, argnums), stage)`; with --out it writes a standalone
module (secant.save_source) instead. `value_and_grad` works the same way.

    python -m secant run [--show-source DIR] SCRIPT.py [ARGS...]

runs a JAX program unchanged, with `import jax` resolved to secant (secant/jax_compat.py);
--show-source writes the source of every transform it takes to DIR (secant/source_log.py).
"""
import argparse
import importlib.util
import os
import sys


def _fail(message):
    print(f"secant: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _load(target):
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func:
        _fail(f"expected FILE.py:FUNC, got {target!r}")
    if not os.path.isfile(path):
        _fail(f"no such file: {path}")
    name = "_secant_cli_" + "".join(c if c.isalnum() else "_"
                                    for c in os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None:
        _fail(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # so inspect can find the module's source
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)      # the file's own imports of its neighbours
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        _fail(_syntax_error(e, path))
    except Exception as e:      # the file's own top-level code failed: show its frames only
        _fail(_import_error(e, path))
    obj = module
    for part in func.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n, v in vars(module).items()
                            if callable(v) and not n.startswith("_")
                            and getattr(v, "__module__", None) == name)
            _fail(f"{path} has no function {func!r}"
                  + (f"; its functions are: {', '.join(public)}" if public else ""))
        obj = getattr(obj, part)
    if not callable(obj):
        _fail(f"{path}:{func} is a {type(obj).__name__}, not a function")
    return obj


def _syntax_error(e, path):
    """`FILE:LINE:COL: syntax error: MSG`, then the line and a caret, as a compiler prints it."""
    where = f"{e.filename or path}:{e.lineno}" + (f":{e.offset}" if e.offset else "")
    message = f"{where}: {type(e).__name__}: {e.msg}"
    if e.text:
        line = e.text.rstrip("\n")
        stripped = line.lstrip()
        message += "\n    " + stripped
        if e.offset:
            caret = max(0, e.offset - 1 - (len(line) - len(stripped)))
            message += "\n    " + " " * caret + "^"
    return message


def _import_error(e, path):
    """An exception raised while the file ran: its type, message and the file's own lines."""
    import traceback
    here = os.path.abspath(path)
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.abspath(f.filename) == here]
    lines = "".join(traceback.format_list(frames)).rstrip("\n")
    head = f"importing {path} raised {type(e).__name__}: {e}"
    return head + ("\n" + lines if lines else "")


def _argnums(text):
    try:
        nums = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}")
    if not nums:
        raise argparse.ArgumentTypeError("expected at least one argument number")
    return nums[0] if len(nums) == 1 else nums


def run(argv):
    parser = argparse.ArgumentParser(
        prog="python -m secant run",
        description="Run a JAX program unchanged, with `import jax` resolved to secant.")
    parser.add_argument("--show-source", metavar="DIR",
                        help="write the generated source of every transform the program takes "
                             "to DIR, one file per function, with DIR/index.txt")
    parser.add_argument("script", metavar="SCRIPT.py", help="the program")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.script):
        _fail(f"no such file: {args.script}")
    from secant import jax_compat
    log = None
    if args.show_source:
        from secant import source_log
        log = source_log.record(args.show_source)
    try:
        status = jax_compat.run_program(args.script, args.args)
    except SyntaxError as e:
        _fail(_syntax_error(e, args.script))
    if log is not None:
        print(f"secant: wrote the source of {len(log.entries)} generated functions to "
              f"{args.show_source} (index: {os.path.join(args.show_source, 'index.txt')})",
              file=sys.stderr)
    return status


def main(argv=None):
    from secant.transforms import STAGES
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"]:         # (its own parser: the program's arguments pass through)
        return run(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m secant",
        description="Print (or save) the source code secant generates for a derivative.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run a JAX program with `import jax` resolved to secant",
                   add_help=False)
    for command, help_text in (("grad", "the gradient of a scalar function"),
                               ("value_and_grad", "the value and gradient of a function")):
        p = sub.add_parser(command, help=help_text,
                           description=f"Print the source of secant.{command}(FUNC).")
        p.add_argument("target", metavar="FILE.py:FUNC",
                       help="the file and the name of the function in it")
        p.add_argument("--argnums", type=_argnums, default=0,
                       help="positions of the arguments to differentiate, e.g. 0,1 (default 0)")
        p.add_argument("--has-aux", action="store_true",
                       help="the function returns (output, aux)")
        p.add_argument("--stage", default="generated", choices=STAGES,
                       help="a step of the pipeline to print instead of the result: the source "
                            "read, its functionalised or normalised form (default: generated)")
        p.add_argument("--out", metavar="OUT.py",
                       help="write a standalone module there instead of printing the source")
    args = parser.parse_args(argv)

    import secant
    from secant.codegen.save import save_source

    fn = _load(args.target)
    transform = getattr(secant, args.command)
    try:
        derivative = transform(fn, argnums=args.argnums, has_aux=args.has_aux)
    except secant.SecantError as e:
        _fail(str(e))
    if args.out:
        try:
            save_source(derivative, args.out)
        except secant.SecantError as e:
            _fail(str(e))
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(secant.source(derivative, stage=args.stage))
    return 0


if __name__ == "__main__":
    sys.exit(main())
