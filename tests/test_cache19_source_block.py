"""transformer/parse._def_block (issue 19): a def's block read from indentation, without
tokenize, is inspect.getblock's exactly, or None (getblock decides) where indentation alone is
not sure: text cut inside a bracket or a string, a trailing comment, tabs."""
import inspect

import pytest

from secant.transformer.parse import _def_block

FOLLOWER = "x = 1\n"
CASES = {
    "plain": ("def f(x):\n    y = x + 1\n    return y\n", True),
    "one line": ("def f(x): return x\n", True),
    "blank lines inside": ("def f(x):\n    y = x\n\n\n    return y\n\n\n", True),
    "comment at column 0 inside": ("def f(x):\n    y = x\n# note\n    return y\n", None),
    "nested def": ("def f(x):\n    def g(v):\n        return v\n    return g(x)\n", True),
    "async": ("async def f(x):\n    return x\n", True),
    "indented": ("    def f(self, x):\n        return x\n", True),
    "header over lines": ("def f(\n    x,\n):\n    return x\n", None),
    "string at column 0": ('def f(x):\n    s = """\nabc\n"""\n    return x\n', None),
    "bracket at column 0": ("def f(x):\n    y = (x +\n1)\n    return y\n", None),
    "backslash": ("def f(x):\n    y = x + \\\n1\n    return y\n", None),
    "trailing comment": ("def f(x):\n    return x\n    # done\n", None),
    "tabs": ("def f(x):\n\treturn x\n", None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_def_block_is_getblock(name):
    source, fast = CASES[name]
    for follow in ("", FOLLOWER, "\n" + FOLLOWER, "# a comment\n" + FOLLOWER):
        if source.startswith(" ") and follow:
            follow = "    " + follow.replace("\n", "\n    ").rstrip(" ")
        lines = (source + follow).splitlines(keepends=True)
        got = _def_block(lines, 0)
        want = inspect.getblock(lines)
        if fast:
            assert got == want, (follow, got, want)
        elif got is not None:
            assert got == want, (follow, got, want)
