"""Regression tests from the thorough composition sweep (issue 15), each checked one layer
deep against float64 finite differences (composition_sweep_cases.check)."""
import composition_sweep_cases as cases


def test_jacfwd_of_vmap_of_hessian_through_shape_helpers(x64):
    """The batched form of a shape helper (batch_shape_vmap, under vmap of a hessian's reverse
    pass) computes shapes too: forward mode gave its tuple a tangent (AttributeError: 'tuple'
    object has no attribute 'shape')."""
    for fname in ("logsumexp", "sum_axis", "softmax"):
        cases.check(fname, ["hessian", "vmap0", "jacfwd"])

