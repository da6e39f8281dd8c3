"""issue 15 (lib15e): jax.numpy's packbits / unpackbits (values against NumPy for every axis,
bit order and count, eagerly, under jit and under vmap against a loop) and the arrays made from
host data (frombuffer, fromstring, from_dlpack, load / save: values and JAX's 32-bit dtypes;
a constant of a differentiated function; fromiter / fromfile refused, as JAX refuses them)."""
import io

import numpy as np
import pytest

import secant
import secant.numpy as snp

rng = np.random.default_rng(15)
A = rng.integers(0, 3, size=(3, 13))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_and_unpackbits_against_numpy(axis, bitorder):
    want = np.packbits(A, axis=axis, bitorder=bitorder)
    for packed in (snp.packbits(A, axis=axis, bitorder=bitorder),
                   secant.jit(lambda a: snp.packbits(a, axis=axis, bitorder=bitorder))(A)):
        assert packed.dtype == np.uint8
        np.testing.assert_array_equal(np.asarray(packed), want)
    for count in (None, 5, 20, -3):
        bits = np.unpackbits(want, axis=axis, count=count, bitorder=bitorder)
        got = snp.unpackbits(want, axis=axis, count=count, bitorder=bitorder)
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(np.asarray(got), bits)
        jitted = secant.jit(lambda p: snp.unpackbits(p, axis=axis, count=count,
                                                     bitorder=bitorder))(want)
        np.testing.assert_array_equal(np.asarray(jitted), bits)


def test_packbits_of_booleans_and_numpy_spelling_under_vmap():
    np.testing.assert_array_equal(np.asarray(snp.packbits(A > 1)), np.packbits(A > 1))

    def pack_row(row):
        return np.packbits(row > 0, bitorder="little")     # NumPy's name, as users write it
    np.testing.assert_array_equal(np.asarray(secant.vmap(pack_row)(A)),
                                  np.stack([np.packbits(r > 0, bitorder="little") for r in A]))
    packed = np.packbits(A, axis=1)

    def unpack_row(row):
        return snp.unpackbits(row, count=10)
    np.testing.assert_array_equal(np.asarray(secant.vmap(unpack_row)(packed)),
                                  np.stack([np.unpackbits(r, count=10) for r in packed]))


def test_bit_functions_refuse_what_jax_refuses():
    with pytest.raises(secant.SecantTypeError, match="integer or boolean"):
        snp.packbits(np.ones(3))
    with pytest.raises(secant.SecantTypeError, match="uint8"):
        snp.unpackbits(np.ones(3, np.int32))
    with pytest.raises(secant.SecantValueError, match="'little' or 'big'"):
        snp.packbits(A, bitorder="middle")


def test_arrays_from_bytes_and_text():
    raw = np.arange(5, dtype=np.float64).tobytes()
    x = snp.frombuffer(raw)
    assert x.dtype == np.float32            # 64-bit values become 32-bit, as in JAX
    np.testing.assert_array_equal(np.asarray(x), np.arange(5.0))
    np.testing.assert_array_equal(np.asarray(snp.frombuffer(b"\x01\x02\x03\x04", np.uint8,
                                                            count=2, offset=1)), [2, 3])
    ints = snp.fromstring("1 2 3", dtype=int, sep=" ")
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ints), [1, 2, 3])
    np.testing.assert_allclose(np.asarray(snp.fromstring("0.1, 0.2", sep=",")), [0.1, 0.2],
                               rtol=1e-7)
    source = np.arange(4.0, dtype=np.float32)
    copied = snp.from_dlpack(source)
    source[0] = 9.0                         # (secant's array is a copy: immutable)
    np.testing.assert_array_equal(np.asarray(copied), [0.0, 1.0, 2.0, 3.0])


def test_load_restores_arrays_and_bfloat16():
    f = io.BytesIO()
    snp.save(f, np.asarray(snp.array([2.0, 4.0, 6.0], dtype=snp.bfloat16)))
    f.seek(0)
    loaded = snp.load(f)
    assert isinstance(loaded, secant.Array) and loaded.dtype == snp.bfloat16
    np.testing.assert_array_equal(np.asarray(loaded, np.float32), [2.0, 4.0, 6.0])


def test_a_buffer_read_inside_transformed_functions_is_a_constant():
    weights = np.array([1.0, -2.0, 0.5]).tobytes()

    def f(x):
        return snp.sum(snp.sin(x) * snp.frombuffer(weights))
    x = np.array([0.3, 0.1, -0.7], np.float32)
    w = np.frombuffer(weights)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), np.cos(x) * w, rtol=1e-6)
    np.testing.assert_allclose(float(secant.jit(f)(x)), np.sum(np.sin(x) * w), rtol=1e-6)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)),
                               [np.sum(np.sin(r) * w) for r in xs], rtol=1e-6)


@pytest.mark.parametrize("name", ["fromiter", "fromfile"])
def test_impure_constructors_are_refused_as_in_jax(name):
    with pytest.raises(secant.SecantError, match="not pure") as info:
        getattr(snp, name)(iter([1, 2]), int)
    assert isinstance(info.value, NotImplementedError)
    assert "test_lib15e_numpy.py" in str(info.value)


def clipped_add(x, y):
    return snp.minimum(x + y, 10.0)


def _fold(values):
    acc = values[0]
    out = [acc]
    for v in values[1:]:
        acc = min(acc + v, 10.0)
        out.append(acc)
    return np.array(out)


CLIPPED = snp.frompyfunc(clipped_add, 2, 1, identity=0.0)
X = np.arange(6.0).reshape(2, 3)


def test_frompyfunc_calls_under_every_transform():
    np.testing.assert_allclose(np.asarray(CLIPPED(X, 4.0)), np.minimum(X + 4.0, 10.0))
    np.testing.assert_allclose(np.asarray(secant.jit(lambda a: CLIPPED(a, 4.0))(X)),
                               np.minimum(X + 4.0, 10.0))
    np.testing.assert_allclose(np.asarray(secant.grad(lambda a: snp.sum(CLIPPED(a, 4.0)))(X)),
                               (X + 4.0 < 10.0).astype(float))
    np.testing.assert_allclose(np.asarray(secant.vmap(lambda a: CLIPPED(a, 1.0))(X)), X + 1.0)
    assert (CLIPPED.nin, CLIPPED.nout, CLIPPED.identity) == (2, 1, 0.0)
    with pytest.raises(secant.SecantTypeError, match="takes 2 positional arguments"):
        CLIPPED(X)


def test_frompyfunc_methods_fold_the_function():
    np.testing.assert_allclose(np.asarray(CLIPPED.reduce(X, axis=1)),
                               [_fold(r)[-1] for r in X])
    np.testing.assert_allclose(np.asarray(CLIPPED.accumulate(X, axis=1)),
                               np.stack([_fold(r) for r in X]))
    np.testing.assert_allclose(np.asarray(CLIPPED.outer(np.arange(2.0), np.arange(3.0))),
                               np.minimum(np.add.outer(np.arange(2.0), np.arange(3.0)), 10.0))
    np.testing.assert_allclose(np.asarray(CLIPPED.at(np.zeros(3), np.array([0, 0, 2]), 6.0,
                                                     inplace=False)), [10.0, 0.0, 6.0])
    np.testing.assert_allclose(np.asarray(CLIPPED.reduceat(np.arange(6.0), np.array([0, 2]))),
                               [1.0, 10.0])
    np.testing.assert_allclose(np.asarray(secant.jit(lambda a: CLIPPED.reduce(a, axis=1))(X)),
                               [_fold(r)[-1] for r in X])
    with pytest.raises(secant.SecantValueError, match="binary ufuncs"):
        snp.frompyfunc(snp.sin, 1, 1).reduce(X)


def test_grad_of_a_frompyfunc_reduction():
    """grad, jvp and vmap of a frompyfunc ufunc's methods (gaps15q): the methods are read as
    source, their fold calling the ufunc, a vectorize known only at run time (its rules)."""
    g = secant.grad(lambda a: CLIPPED.reduce(a))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0, 1.0])


def _sin_times(x, y):
    return snp.sin(x) * y


SIN_TIMES = snp.frompyfunc(_sin_times, 2, 1)
POINT = np.array([0.5, 0.7, 1.1])
METHODS = {
    "reduce": lambda a: SIN_TIMES.reduce(a),
    "accumulate": lambda a: snp.sum(SIN_TIMES.accumulate(a) ** 2),
    "outer": lambda a: snp.sum(SIN_TIMES.outer(a, a[::-1])),
    "at": lambda a: snp.sum(SIN_TIMES.at(a, np.array([0, 0, 2]), a[1], inplace=False) ** 2),
    "reduceat": lambda a: snp.sum(SIN_TIMES.reduceat(a, np.array([0, 2])) ** 2),
    "clipped_at": lambda a: snp.sum(CLIPPED.at(a * 3.0, np.array([0, 0, 2]), 6.0,
                                               inplace=False)),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_frompyfunc_methods_under_grad_jvp_vmap_and_hessian(x64, name):
    """Against float64 central differences and a Python loop."""
    from central_differences import grad_fd, hessian_fd
    f = METHODS[name]
    expected = grad_fd(f, POINT)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(POINT)), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(POINT)), expected, rtol=1e-6,
                               atol=1e-8)
    t = np.array([0.3, -0.2, 0.5])
    value, tangent = secant.jvp(f, (POINT,), (t,))
    np.testing.assert_allclose(np.asarray(value), np.asarray(f(POINT)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tangent), expected @ t, rtol=1e-6, atol=1e-8)
    xs = np.stack([POINT, POINT * 0.8, POINT + 0.1])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)), [np.asarray(f(x)) for x in xs],
                               rtol=1e-12)
    for x, g in zip(xs, np.asarray(secant.vmap(secant.grad(f))(xs))):
        np.testing.assert_allclose(g, grad_fd(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.hessian(f)(POINT)), hessian_fd(f, POINT),
                               rtol=1e-4, atol=1e-5)


def test_hessian_of_a_frompyfunc_reduction_is_jaxs(x64):
    """jax.hessian(lambda a: jnp.frompyfunc(f, 2, 1).reduce(a))(POINT), recorded (jax 0.10.2)."""
    expected = [[-0.48527387, 0.80479486, 0.58003776],
                [0.80479486, -0.08326668, 0.4526801],
                [0.58003776, 0.4526801, 0.0]]
    np.testing.assert_allclose(np.asarray(secant.hessian(METHODS["reduce"])(POINT)), expected,
                               rtol=1e-6, atol=1e-7)
