"""secant.device_get (jax.device_get): array leaves to NumPy, other leaves unchanged; a traced
value is an error naming the line."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def test_device_get_copies_arrays_to_numpy():
    tree = {"w": snp.arange(3.0), "n": 4, "pair": (snp.ones((2,)), "tag"), "np": np.zeros(2)}
    out = secant.device_get(tree)
    assert type(out["w"]) is np.ndarray and out["w"].dtype == np.float32
    np.testing.assert_array_equal(out["w"], [0.0, 1.0, 2.0])
    assert out["n"] == 4 and out["pair"][1] == "tag" and type(out["pair"][0]) is np.ndarray
    assert out["np"] is tree["np"]


def test_device_get_of_a_traced_value_names_the_line():
    with pytest.raises(secant.SecantError, match="(?s)device_get.*test_device_get.py"):
        secant.jit(lambda x: secant.device_get(x) + 1)(snp.ones(2))
