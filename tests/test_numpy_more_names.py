"""secant/numpy/more_names.py's static helpers and errors (the array functions are library
cases: tests/library_cases/numpy_more_names.py), and jax.numpy's dtype names."""
import numpy as np
import pytest

import secant.numpy as snp


def test_static_helpers_match_numpy():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    assert snp.einsum_path("ij,jk->ik", a, b)[0] == np.einsum_path("ij,jk->ik", a, b)[0]
    for got, want in zip(snp.mask_indices(3, snp.triu, 1), np.mask_indices(3, np.triu, 1)):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert snp.isdtype(snp.float32, "real floating") and not snp.isdtype(snp.int32, "bool")
    assert snp.isdtype(np.int8, ("integral", "bool"))


def test_dtype_names():
    assert snp.double(1.5).dtype == np.float64 or snp.double(1.5).dtype == np.float32
    assert snp.bool(1).dtype == np.bool_
    assert np.dtype(snp.single) == np.float32 and np.dtype(snp.csingle) == np.complex64
    assert snp.generic is np.generic and snp.object_ is np.object_


def test_in_place_functions_need_inplace_false():
    with pytest.raises(ValueError, match="(?s)inplace=False.*test_numpy_more_names.py"):
        snp.put(snp.zeros(3), 0, 1.0)
    with pytest.raises(ValueError, match="inplace=False"):
        snp.put_along_axis(snp.zeros((2, 2)), np.zeros((2, 1), int), 1.0, axis=1)
    with pytest.raises(ValueError, match="inplace=False"):
        snp.place(snp.zeros(3), np.ones(3, bool), 1.0)
