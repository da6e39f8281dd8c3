"""secant.numpy shape functions (reshape, transpose, joining, splitting, flipping, sorting...)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import SecantError, SecantTypeError, SecantValueError
from numpy_api_checks import check, data


@pytest.mark.parametrize("shape,new", [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((12,), (3, -1)),
                                       ((), (1, 1)), ((4, 1), (4,))])
def test_reshape_and_ravel(shape, new):
    x = data(shape)
    check(lambda a: snp.reshape(a, new), lambda a: np.reshape(a, new), x)
    check(lambda a: a.reshape(new), lambda a: a.reshape(new), x)
    check(snp.ravel, np.ravel, x)


def test_reshape_errors_name_the_problem():
    x = snp.zeros((2, 3))
    with pytest.raises(SecantTypeError, match="cannot reshape"):
        snp.reshape(x, (4, 2))
    with pytest.raises(SecantValueError, match="-1"):
        snp.reshape(x, (-1, -1))
    with pytest.raises(SecantError):
        snp.reshape(x, (3, 2), order="F")


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose(axes):
    x = data((2, 3, 4))
    check(lambda a: snp.transpose(a, axes), lambda a: np.transpose(a, axes), x)


def test_transpose_method_forms():
    x = data((2, 3, 4))
    check(lambda a: a.T, lambda a: a.T, x)
    check(lambda a: a.transpose(2, 0, 1), lambda a: a.transpose(2, 0, 1), x)
    check(lambda a: a.mT, lambda a: np.swapaxes(a, -1, -2), x)
    check(lambda a: snp.matrix_transpose(a), lambda a: np.swapaxes(a, -1, -2), x)
    with pytest.raises(SecantValueError):
        snp.transpose(snp.asarray(x), (0, 0, 1))


@pytest.mark.parametrize("src,dst", [(0, -1), (-1, 0), ((0, 1), (2, 0)), (1, 1)])
def test_moveaxis_swapaxes_rollaxis(src, dst):
    x = data((2, 3, 4))
    check(lambda a: snp.moveaxis(a, src, dst), lambda a: np.moveaxis(a, src, dst), x)
    check(lambda a: snp.swapaxes(a, 0, -1), lambda a: np.swapaxes(a, 0, -1), x)
    check(lambda a: snp.rollaxis(a, 2, 0), lambda a: np.rollaxis(a, 2, 0), x)


@pytest.mark.parametrize("axis", [None, 0, 2, (0, 2), -1])
def test_squeeze(axis):
    x = data((1, 3, 1))
    check(lambda a: snp.squeeze(a, axis), lambda a: np.squeeze(a, axis), x)


def test_squeeze_rejects_non_unit_axis():
    with pytest.raises(SecantValueError, match="size is not 1"):
        snp.squeeze(snp.zeros((2, 3)), 0)
    with pytest.raises(SecantValueError, match="out of bounds"):
        snp.squeeze(snp.zeros((1, 3)), 5)


@pytest.mark.parametrize("axis", [0, -1, 1, (0, 2), (-1, 0)])
def test_expand_dims(axis):
    x = data((2, 3))
    check(lambda a: snp.expand_dims(a, axis), lambda a: np.expand_dims(a, axis), x)


def test_broadcasting_functions():
    x, y = data((3, 1)), data((4,))
    check(lambda a: snp.broadcast_to(a, (2, 3, 5)), lambda a: np.broadcast_to(a, (2, 3, 5)), x)
    check(lambda a, b: snp.broadcast_arrays(a, b), lambda a, b: np.broadcast_arrays(a, b), x, y)
    assert snp.broadcast_shapes((3, 1), (4,), ()) == (3, 4)
    with pytest.raises(SecantValueError):
        snp.broadcast_to(snp.zeros((3,)), (4,))
    with pytest.raises(SecantValueError):
        snp.broadcast_shapes((3,), (4,))


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.float32),
                                    (np.int8, np.int16), (np.bool_, np.int32)])
def test_concatenate_promotes(dtypes):
    x, y = data((2, 3), dtypes[0]), data((4, 3), dtypes[1])
    check(lambda a, b: snp.concatenate([a, b]), lambda a, b: np.concatenate([a, b]), x, y)
    check(lambda a, b: snp.concatenate((a, b.T), axis=None),
          lambda a, b: np.concatenate((a, b.T), axis=None), x, y)


def test_concatenate_axes_and_errors():
    x, y = data((2, 3)), data((2, 5))
    check(lambda a, b: snp.concatenate([a, b, a], axis=-1),
          lambda a, b: np.concatenate([a, b, a], axis=-1), x, y)
    with pytest.raises(SecantValueError, match="differ outside axis"):
        snp.concatenate([snp.asarray(x), snp.asarray(y)], axis=0)
    assert snp.concatenate([snp.arange(3), 1.5 * snp.ones(2)]).dtype == np.float32


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_family(axis):
    x, y = data((2, 3)), data((2, 3))
    check(lambda a, b: snp.stack([a, b], axis), lambda a, b: np.stack([a, b], axis), x, y)
    for name in ["vstack", "hstack", "dstack", "column_stack"]:
        check(lambda a, b: getattr(snp, name)([a, b]), lambda a, b: getattr(np, name)([a, b]),
              x, y)


def test_stack_of_vectors_and_scalars():
    v, w = data((3,)), data((3,))
    for name in ["vstack", "hstack", "dstack", "column_stack"]:
        check(lambda a, b: getattr(snp, name)((a, b)), lambda a, b: getattr(np, name)((a, b)),
              v, w)
    check(lambda a: snp.stack([a, a + 1]), lambda a: np.stack([a, a + 1]), np.float32(2))


@pytest.mark.parametrize("spec", [3, [1, 4], [-2], [0, 0, 6]])
def test_split(spec):
    x = data((6, 4))
    check(lambda a: snp.split(a, spec), lambda a: np.split(a, spec), x)
    check(lambda a: snp.array_split(a, 4, axis=0), lambda a: np.array_split(a, 4, axis=0), x)
    check(lambda a: snp.hsplit(a, 2), lambda a: np.hsplit(a, 2), x)
    check(lambda a: snp.vsplit(a, [2]), lambda a: np.vsplit(a, [2]), x)


def test_split_unequal_raises():
    with pytest.raises(SecantValueError, match="equal division"):
        snp.split(snp.zeros(5), 2)


def test_atleast():
    for shape in [(), (3,), (2, 3), (2, 3, 4)]:
        x = data(shape)
        for name in ["atleast_1d", "atleast_2d", "atleast_3d"]:
            check(getattr(snp, name), getattr(np, name), x, jit=False)
    x = data((3,))
    check(lambda a: snp.atleast_3d(a), np.atleast_3d, x)
    assert len(snp.atleast_2d(1.0, snp.zeros(3))) == 2


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_flip(axis):
    x = data((3, 4, 2))
    check(lambda a: snp.flip(a, axis), lambda a: np.flip(a, axis), x)


def test_fliplr_flipud_rot90():
    x = data((3, 4))
    check(snp.fliplr, np.fliplr, x)
    check(snp.flipud, np.flipud, x)
    for k in range(-1, 4):
        check(lambda a: snp.rot90(a, k), lambda a: np.rot90(a, k), x)


@pytest.mark.parametrize("shift,axis", [(1, None), (-2, 0), (5, 1), ((1, 2), (0, 1)), (0, 0),
                                        (7, -1)])
def test_roll(shift, axis):
    x = data((3, 4))
    check(lambda a: snp.roll(a, shift, axis), lambda a: np.roll(a, shift, axis), x)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 1, 2), (0, 2)])
def test_tile(reps):
    x = data((2, 3), np.int32)
    check(lambda a: snp.tile(a, reps), lambda a: np.tile(a, reps), x)


@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), (2, -1), ([1, 0, 2], 1), (0, 0)])
def test_repeat(repeats, axis):
    x = data((2, 3))
    check(lambda a: snp.repeat(a, repeats, axis), lambda a: np.repeat(a, repeats, axis), x)
    check(lambda a: a.repeat(repeats, axis), lambda a: a.repeat(repeats, axis), x, jit=False)


def test_pad_constant():
    x = data((2, 3), np.int32)
    check(lambda a: snp.pad(a, 1), lambda a: np.pad(a, 1), x)
    check(lambda a: snp.pad(a, ((0, 2), (1, 0)), constant_values=7),
          lambda a: np.pad(a, ((0, 2), (1, 0)), constant_values=7), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_argsort(dtype, axis):
    x = data((4, 5), dtype, -3, 3)       # small range: many ties, so stability matters
    check(lambda a: snp.sort(a, axis), lambda a: np.sort(a, axis), x)
    check(lambda a: snp.argsort(a, axis), lambda a: np.argsort(a, axis, kind="stable"), x,
          dtype=np.int32)


def test_sort_nan_last_and_descending():
    x = np.array([3.0, np.nan, -1.0, 2.0, 2.0, np.nan, 0.0], np.float32)
    check(snp.sort, np.sort, x)
    check(snp.argsort, lambda a: np.argsort(a, kind="stable"), x, dtype=np.int32)
    y = np.array([1, 3, 2, 3, 1], np.int32)
    check(lambda a: snp.sort(a, descending=True), lambda a: np.sort(a)[::-1], y)
    # stable descending: equal elements keep their original order
    check(lambda a: snp.argsort(a, descending=True),
          lambda a: np.argsort(-a, kind="stable"), y, dtype=np.int32)
    check(lambda a: a.sort(), np.sort, y)


def test_shape_queries_and_real_parts():
    x = snp.zeros((2, 3))
    assert snp.shape(x) == (2, 3) and snp.ndim(x) == 2 and snp.size(x) == 6
    assert snp.size(x, -1) == 3 and snp.shape(1.0) == () and snp.ndim([[1, 2]]) == 2
    v = data((2, 3))
    check(snp.real, np.real, v)
    check(snp.imag, np.imag, v)
    check(snp.conjugate, np.conjugate, v)
    check(lambda a: a.real + a.imag, lambda a: a.real + a.imag, v)


def test_shapes_of_traced_values_are_static():
    def f(a):
        n = snp.size(a)
        return snp.reshape(a, (n,)) * snp.ndim(a)
    check(f, lambda a: a.reshape(-1) * a.ndim, data((2, 3)))


def test_bad_axis_names_the_user_line():
    with pytest.raises(SecantValueError, match="test_numpy_shape.py"):
        snp.flip(snp.zeros((2, 3)), 3)
    with pytest.raises(SecantValueError, match="out of bounds"):
        secant.jit(lambda a: snp.moveaxis(a, 0, 4))(np.zeros((2, 3), np.float32))
