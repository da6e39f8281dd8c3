"""Items of global or free Python containers set from Python values inside a transformed
function (a call counter, a stats dict, a memo table, a NumPy work array): a side effect run as
written, as JAX runs it while it traces. Before, each was refused as 'arrays are immutable'."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import SecantError

COUNT = [0]
STATS = {"n": 0}
MEMO = {}
WORK = np.ones(3)
FROZEN = snp.ones(3)


def counted(x):
    COUNT[0] += 1
    return snp.sin(x) * 2


def with_stats(x):
    STATS["n"] = STATS["n"] + 1
    return x * x


def memoised(x, k):
    if k not in MEMO:
        MEMO[k] = k * 2
    return x * MEMO[k]


def numpy_work(x):
    WORK[1] = 5.0
    return x * WORK.sum()


def frozen_store(x):
    FROZEN[0] = 2.0
    return x


@pytest.mark.parametrize("transform, x, expected", [
    (secant.grad, 1.0, 2 * np.cos(1.0)),
    (secant.jit, 1.0, 2 * np.sin(1.0)),
    (lambda f: secant.grad(secant.grad(f)), 1.0, -2 * np.sin(1.0)),
    (lambda f: secant.jit(secant.grad(f)), 1.0, 2 * np.cos(1.0)),
    (lambda f: secant.vmap(secant.grad(f)), np.ones(2), 2 * np.cos(np.ones(2))),
])
def test_a_global_counter_runs_as_python(transform, x, expected):
    before = COUNT[0]
    np.testing.assert_allclose(transform(counted)(x), expected, rtol=1e-6)
    assert COUNT[0] > before


def test_a_stats_dict_a_memo_and_a_closure_list():
    before = STATS["n"]
    np.testing.assert_allclose(secant.grad(with_stats)(3.0), 6.0)
    assert STATS["n"] == before + 1
    np.testing.assert_allclose(secant.grad(memoised)(1.0, 3), 6.0)
    assert MEMO == {3: 6}

    def make():
        hist = [0]

        def f(x):
            hist[0] = hist[0] + 1
            return x * x
        return f, hist
    f, hist = make()
    np.testing.assert_allclose(secant.grad(f)(3.0), 6.0)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(2.0), 4.0)
    assert hist[0] >= 2


def test_a_numpy_work_array_is_written_as_numpy_writes_it():
    np.testing.assert_allclose(secant.grad(numpy_work)(1.0), 7.0)
    np.testing.assert_allclose(WORK, [1.0, 5.0, 1.0])


def test_a_secant_array_stays_immutable_at_the_users_line():
    with pytest.raises(SecantError, match="immutable") as info:
        secant.grad(frozen_store)(1.0)
    assert "test_python_stores15.py" in str(info.value) and "FROZEN[0] = 2.0" in str(info.value)
