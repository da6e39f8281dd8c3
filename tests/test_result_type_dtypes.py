"""snp.result_type of dtype objects (a dtype equal to a Python type is not that type: once
taken for the Python float, a weak type)."""
import numpy as np

import secant.numpy as snp


def test_result_type_of_dtypes(x64):
    assert snp.result_type(np.dtype("float64"), np.dtype("float32")) == np.float64
    assert snp.result_type(np.dtype("float32"), np.dtype("int32")) == np.float32
    assert snp.result_type(float, np.dtype("float32")) == np.float32     # (weak: a Python float)
    assert snp.result_type(np.dtype("float64")) == np.float64
