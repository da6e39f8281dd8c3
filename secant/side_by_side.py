"""`secant.show(f)`: a function secant wrote, each line beside the line of yours it comes from.

Every generated line that stands for a user line is in the origin map (codegen/loader.py
registers it; errors use it to name your line). This module reads that map: one row per
generated line, the user line it comes from on the left (written once, where a run of rows from
the same line starts), the generated line on the right. In Jupyter the rows are an HTML table,
rows from the same user line in the same colour; in a terminal, `print(secant.show(f))` gives
the same rows as two text columns.
"""
import html
import linecache

from secant.backends import errors
from secant.backends.errors import SecantTypeError, where

# pale colours, one per user line (cycled): readable behind dark text in light and dark themes
_PALETTE = ("#fde2e2", "#e2f0fd", "#e5f8e1", "#fdf3d8", "#efe4fb", "#dcf5f3", "#fbe6f4",
            "#eeeeee")


class Row:
    """One generated line, and the user line it comes from (None for secant's own lines)."""
    __slots__ = ("gen_line", "gen_text", "user_line", "user_text", "first")

    def __init__(self, gen_line, gen_text, user_line, user_text, first):
        self.gen_line, self.gen_text = gen_line, gen_text
        self.user_line, self.user_text = user_line, user_text
        self.first = first      # the first row of a run from this user line: the left shows it

    def __repr__(self):
        return f"Row({self.gen_line}, {self.gen_text!r}, {self.user_line}, {self.user_text!r})"


class SideBySide:
    """What `show` returns: `.rows` (one per generated line), `.user_file`, `.title`; shown as
    an HTML table in Jupyter (`_repr_html_`) and as text by `str()`."""

    def __init__(self, title, user_file, rows):
        self.title, self.user_file, self.rows = title, user_file, rows

    def user_lines(self):
        """The user lines the generated code comes from, in order of first use."""
        return list(dict.fromkeys(r.user_line for r in self.rows if r.user_line is not None))

    def __str__(self):
        width = max([len(r.user_text) for r in self.rows if r.first] + [len("yours")]) + 8
        out = [f"{self.title}", f"{'yours':<{width}}| generated"]
        for r in self.rows:
            left = f"{r.user_line:>4}  {r.user_text}" if r.first else ""
            out.append(f"{left:<{width}}| {r.gen_text}".rstrip())
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self):
        colour = {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(self.user_lines())}
        cell = "padding:0 0.8em;font-family:monospace;white-space:pre;text-align:left"
        out = ['<table class="secant-show" style="border-collapse:collapse">',
               f'<caption style="text-align:left">{html.escape(self.title)}</caption>',
               f'<tr><th style="{cell}">yours ({html.escape(self.user_file)})</th>'
               f'<th style="{cell}">generated</th></tr>']
        for r in self.rows:
            bg = f"background:{colour[r.user_line]};" if r.user_line is not None else ""
            line = "" if r.user_line is None else f' data-user-line="{r.user_line}"'
            left = (f"{r.user_line:>4}  {html.escape(r.user_text)}" if r.first else "")
            out.append(f'<tr{line} data-gen-line="{r.gen_line}" style="{bg}">'
                       f'<td class="user" style="{cell}">{left}</td>'
                       f'<td class="gen" style="{cell}">{html.escape(r.gen_text)}</td></tr>')
        out.append("</table>")
        return "\n".join(out)


def show(fn):
    """The source secant generated for `fn` (grad, value_and_grad, vjp, jvp_fn, vmap, hessian,
    jacfwd, jacrev, jit of any of them), each line beside the line of yours it comes from."""
    from secant.transforms import _unwrap
    gen = _unwrap(fn)
    if getattr(fn, "__secant_generated__", None) is None and gen is fn or not hasattr(
            gen, "__code__"):
        raise SecantTypeError(
            f"secant.show expects a function a transform wrote (secant.grad(f), secant.vmap(f), "
            f"...), got {fn!r}; secant.source(f) prints any function's source" + where())
    filename = gen.__code__.co_filename
    lines = linecache.getlines(filename)
    origins = errors.origins_of(filename)
    files = {f for f, _ in origins.values()}
    user_file = files.pop() if len(files) == 1 else "several files"
    indent = _common_indent(linecache.getlines(f)[n - 1] for f, n in origins.values())
    rows, previous = [], None
    for number, text in enumerate(lines, start=1):
        at = origins.get(number)
        user_text = None
        if at is not None:
            user_text = linecache.getline(*at).rstrip()[indent:]
        rows.append(Row(number, text.rstrip("\n"), at and at[1], user_text,
                        at is not None and at != previous))
        previous = at or previous       # a comment or blank line does not end a run
    return SideBySide(f"{getattr(gen, '__name__', 'generated')}: generated by secant",
                      user_file, rows)


def _common_indent(lines):
    widths = [len(s) - len(s.lstrip()) for s in lines if s.strip()]
    return min(widths) if widths else 0
