"""Issue 20 (lean20g): a value assigned before a loop and rebound in it keeps the user's name in
grad's source: `y = x`, `y_stack`, `for y in reversed(y_stack):`, `y_bar`, not `y_1`,
`y_1_stack`, `y_1_bar` (codegen/naming.py versions_dropped: a version `y_1` of the user's `y`,
transformer/normalize.py's record, is written `y` where no `y` is left in the code, with the
names built from it). A consistent renaming of the function's own names to names it does not
mention: every composition of the derivative is checked against float64 central differences or
a loop, and the renaming's refusals (a parameter, a free name, an attribute or keyword, a name
taken) leave the source as it was."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.codegen.naming import versions_dropped
from test_lean20y_reversed import test_gradients_and_second_order_match_differences as \
    second_order_checks
from test_lean20y_reversed import test_vmap_and_jit_of_grad_match_a_loop as vmap_jit_checks

sin_y_1 = 0.25      # a global named as a name built from y's version would be (glob below)


def rebound(x, n):
    y = x
    for i in range(n):
        y = snp.sin(y) * x
    return snp.sum(y * y)


def rebound_twice(x, n):
    """Two loops rebinding y: its versions y_1 and y_2 (y itself before both)."""
    y = x * 0.5
    for i in range(n):
        y = snp.sin(y) + x
    z = y
    for i in range(n):
        y = snp.cos(y) * z
    return snp.sum(y)


def glob(x, n):
    """A global named like sin(y_1)'s temporary: y_1 keeps its name (a free name is never
    renamed), the value the global's."""
    y = x
    for i in range(n):
        y = snp.sin(y) * x + sin_y_1
    return snp.sum(y * y)


def accumulated(x, n):
    total = 0.0
    for i in range(n):
        total = total + snp.sin(x * i)
    return snp.sum(total)


PROGRAMS = [rebound, rebound_twice, glob, accumulated]


def _source(f):
    return secant.source(secant.grad(f))


def test_the_users_names_are_kept():
    src = _source(rebound)
    assert "    y = x\n    y_stack = []\n" in src, src
    assert "    for y in reversed(y_stack):\n        sin_y = snp.sin(y)\n" in src, src
    assert "y_1" not in src and "y_bar = " in src, src
    src = _source(accumulated)
    assert "    total = 0.0\n" in src and "total_1" not in src, src
    src = _source(glob)
    assert "y_1" in src and "sin_y_1 = snp.sin" not in src, src     # (the global read as is)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_compositions_match_differences(x64, f):
    """grad, hessian, jacfwd(grad), jacrev(grad), grad of an item and jvp of grad against
    float64 central differences (lean20y's checks)."""
    second_order_checks(x64, f)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_and_jit_of_grad_match_a_loop(x64, f):
    vmap_jit_checks(x64, f)


def scalar_rebound(x):
    y = x * 0.5
    for i in range(3):
        y = snp.sin(y) * x + 0.1 * i
    return y * y


def test_grad_to_the_fourth_order(x64):
    x, eps = 0.4, 1e-5
    orders = [scalar_rebound]
    for _ in range(4):
        orders.append(secant.grad(orders[-1]))
    for k in range(1, 5):
        lower = orders[k - 1]
        want = (float(lower(x + eps)) - float(lower(x - eps))) / (2 * eps)
        np.testing.assert_allclose(float(orders[k](x)), want, rtol=1e-5, atol=1e-7,
                                   err_msg=f"order {k}")
    assert "for y in reversed(y_stack):" in secant.source(orders[1])
    np.testing.assert_allclose(float(secant.jit(orders[3])(x)), float(orders[3](x)),
                               rtol=1e-10)


SOURCE = '''def f_grad(x, g):
    y_1 = x
    y_1_stack = []
    for i in range(3):
        y_1_stack.append(y_1)
        sin_y_1 = snp.sin(y_1)  # y_1 in a comment
        y_1 = sin_y_1 * x
    note = 'y_1'
    return y_1 + g
'''


def test_the_renaming_and_its_refusals():
    out = versions_dropped(SOURCE, {"y_1"})
    assert "y_1" not in out.replace("# y_1", "").replace("'y_1'", ""), out
    assert "    y = x\n    y_stack = []\n" in out and "return y + g" in out, out
    assert "sin_y = snp.sin(y)  # y_1 in a comment" in out and "note = 'y_1'" in out, out
    # refused: the user's name is taken, a name built from it is a parameter, an attribute
    # or a keyword argument, a free name (a global), or the renamed name is taken
    for old, new in [("    note = 'y_1'", "    y = 2"),
                     ("x, g", "x, y_1_bar"), ("note = 'y_1'", "note = x.y_1"),
                     ("note = 'y_1'", "note = f(y_1=3)"), ("note = 'y_1'", "note = y_1_scale"),
                     ("note = 'y_1'", "note = y_stack")]:
        src = SOURCE.replace(old, new)
        assert versions_dropped(src, {"y_1"}) == src, (old, new)
    # a name that is no version of the user's (a constant's digits: x_times_2) is not given
    src = SOURCE.replace("y_1", "x_times_2")
    assert versions_dropped(src, {"y_1"}) == src


def test_continuation_rows_stay_aligned():
    """A statement continued under an open bracket (a chain of operators, a call's arguments)
    keeps its rows aligned when a name before the bracket gets shorter."""
    src = ("def f(x):\n    y_1 = x\n    y_1_bar = (snp.sin(y_1)\n"
           "               + f(y_1, g(y_1,\n                          y_1)))\n"
           "    return y_1_bar\n")
    assert versions_dropped(src, {"y_1"}) == (
        "def f(x):\n    y = x\n    y_bar = (snp.sin(y)\n"
        "             + f(y, g(y,\n                      y)))\n    return y_bar\n")


TRICKY = '''def f(x, y_1):
    s = "a ( [ { 'q' # no comment"  # a comment ( [
    t = f"{x!r:>{y_1}} (" + rb'\\'(' + """two
rows ( [ y_1 """ + \'\'\'y_1 \'\'\'
    n = 1e5 + 0x1f + 1_000j + .5e-3 + 1 .real if x else 2
    u = (x,
         y_1)[0] ** 2 == x.e5 \\
        and not x
    return s, t, n, u
'''


@pytest.mark.parametrize("src", [SOURCE, TRICKY], ids=["generated", "tricky"])
def test_the_token_scan_reads_what_tokenize_reads(src):
    """versions_dropped's regex scan of a source (codegen/naming.py _WORD_OR_STRING, _tokens:
    issue 19, tokenize took most of its time) finds tokenize's names and strings, each row's
    first token and every bracket where tokenize finds them."""
    import io
    import re
    import tokenize

    from secant.codegen import naming
    words, quoted, firsts, brackets = {}, set(), {}, []
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME:
            words[tok.string] = words.get(tok.string, 0) + 1
        elif tok.type == tokenize.STRING:
            quoted.update(re.findall(r"\w+", tok.string))
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                        tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        firsts.setdefault(tok.start[0], tok.start[1])
        if tok.type == tokenize.OP and tok.string in "()[]{}":
            brackets.append((tok.start, tok.string))
    got_words, got_quoted = {}, set()
    for m in naming._WORD_OR_STRING.finditer(src):
        if m.lastgroup == "w":
            got_words[m.group()] = got_words.get(m.group(), 0) + 1
        elif m.lastgroup == "s":
            got_quoted.update(re.findall(r"\w+", m.group()))
    got_firsts, got_brackets = {}, []
    for kind, text, (row, col) in naming._tokens(src):
        got_firsts.setdefault(row, col)
        if kind == "o" and text in "()[]{}":
            got_brackets.append(((row, col), text))
    assert (got_words, got_quoted) == (words, quoted)
    assert (got_firsts, got_brackets) == (firsts, brackets)
    if src is TRICKY:       # (x.e5 and 1 .real read names; 1e5 none; a string's rows read)
        assert "e5" in words and "real" in words and "rows" in quoted
