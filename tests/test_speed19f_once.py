"""What speed19f reads once instead of again (issue 19: transformation time), checked for the
answers the repeated reads gave: declared_global's file scan, the tree _def_block parsed for
function_source, the Normaliser's one walk (a generator still refused at its line), the getter
facts cached per code object, and the dead-code pass's per-text answers."""
import importlib.util
import textwrap

import gast
import pytest

import secant
from secant.transformer import gast_parse, global_writes, parse, walker


def _module(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("text, declared", [
    ("calls = 0\ndef f(x):\n    return x\n", frozenset()),
    ("calls = 0\ndef f(x):\n    global calls\n    calls += 1\n    return x\n",
     frozenset({"calls"})),
    ("# the global state lives elsewhere\ndef f(x):\n    return x\n", frozenset()),
    ("s = 'global calls'\ndef f(x):\n    return x\n", frozenset()),
])
def test_declared_global_reads_the_statements(tmp_path, text, declared):
    mod = _module(tmp_path, f"m{abs(hash(text))}", text)
    assert global_writes.declared_global(vars(mod)) == declared


def test_function_source_tree_is_a_fresh_parse(tmp_path):
    mod = _module(tmp_path, "src_tree", """
        def f(x, y=2.0):
            z = x * y  # a comment
            return z + 1.0
    """)
    parse._source_lines.pop(mod.f.__code__, None)
    got = parse.function_source(mod.f)
    text = textwrap.dedent("".join(parse._source_of(mod.f)[0]))
    want = gast_parse.parse(text).body[0]
    parse._bind_defaults(mod.f, want)
    want.decorator_list = []
    assert gast.dump(got.node, include_attributes=True) == \
        gast.dump(want, include_attributes=True)
    again = parse.function_source(mod.f)        # (a tree of its own each time)
    assert again.node is not got.node
    assert gast.dump(again.node) == gast.dump(got.node)


def test_generator_refused_at_its_line(tmp_path):
    mod = _module(tmp_path, "gen_mod", """
        def f(x):
            y = x * 2.0
            yield y
    """)
    with pytest.raises(secant.SecantError) as e:
        secant.grad(mod.f)(1.0)
    assert "generators and coroutines cannot be transformed" in str(e.value)
    assert "gen_mod.py:4" in str(e.value)


def test_getter_inlined_per_function(tmp_path):
    """Two getters with the same code shape but different bodies, and a function that is not
    a getter: each read as itself (the cache is per code object)."""
    mod = _module(tmp_path, "getters", """
        import secant.numpy as snp

        def rows(a):
            return a.shape[0]

        def cols(a):
            return a.shape[1]

        def loss(a):
            out = 0.0
            for i in range(rows(a)):
                for j in range(cols(a)):
                    out = out + a[i, j] ** 2 * (i + 1)
            return out
    """)
    import numpy as np
    a = np.arange(6.0).reshape(2, 3)
    g = np.asarray(secant.grad(mod.loss)(a))
    want = 2 * a * (np.arange(2.0) + 1)[:, None]
    np.testing.assert_allclose(g, want, rtol=1e-6)


@pytest.mark.parametrize("code, kept, kills", [
    ("return x", True, True),
    ("@f.defjvp", True, True),
    ("out.append(y)", True, True),
    ("y = x + 1", False, True),
    ("y += x", False, False),
    ("buf[i] = x", False, False),
    ("y = x\nz = y", False, False),
])
def test_dead_code_line_facts(code, kept, kills):
    assert walker._effect(code) == (kept, kills)
    assert walker._kills(code) == kills
