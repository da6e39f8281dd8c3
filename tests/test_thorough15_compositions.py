"""Regression tests from the thorough composition sweep (issue 15), each checked one layer
deep against float64 finite differences (composition_sweep_cases.check)."""
import composition_sweep_cases as cases


def test_jacfwd_of_vmap_of_hessian_through_shape_helpers(x64):
    """The batched form of a shape helper (batch_shape_vmap, under vmap of a hessian's reverse
    pass) computes shapes too: forward mode gave its tuple a tangent (AttributeError: 'tuple'
    object has no attribute 'shape')."""
    for fname in ("logsumexp", "sum_axis", "softmax"):
        cases.check(fname, ["hessian", "vmap0", "jacfwd"])


def test_hessian_of_jit_of_jacrev_of_concatenate(x64):
    """Forward mode over the batched unconcatenate's reverse loop left a loop whose body was a
    comment over an `if` it then dropped: the generated source did not parse
    (IndentationError)."""
    cases.check("concatenate", ["jacrev", "jit", "hessian"])


def test_dead_code_elimination_drops_a_loop_left_with_a_comment_only():
    from secant.transformer.walker import Line, dead_code_eliminated
    lines = [Line("for i in items:", 1, "block"), Line("# Jvp of: y = f(i)", 2, "comment"),
             Line("if i:", 2, "block"), Line("unused = i", 3), Line("", 1, "blank"),
             Line("return x", 1)]
    out = dead_code_eliminated(lines)
    assert [ln.code for ln in out if ln.kind != "blank"] == ["return x"]
