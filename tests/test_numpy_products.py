"""secant.numpy products: dot, matmul, inner, outer, tensordot, einsum, kron, cross, trace."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import SecantError, SecantTypeError, SecantValueError
from numpy_api_checks import check, data

DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 5, 3), (3, 4)),
              ((2, 3), (5, 3, 4)), ((), (3, 2))]


@pytest.mark.parametrize("sa,sb", DOT_SHAPES)
def test_dot(sa, sb):
    check(snp.dot, np.dot, data(sa), data(sb))


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
                 ((1, 2, 3), (6, 3, 4)), ((4, 1, 2, 3), (5, 3, 2)), ((3,), (5, 3, 4)),
                 ((5, 2, 3), (3,))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb):
    check(snp.matmul, np.matmul, data(sa), data(sb))
    check(lambda a, b: a @ b, lambda a, b: a @ b, data(sa), data(sb), jit=False)


@pytest.mark.parametrize("dtypes", [(np.int32, np.int32), (np.int8, np.int8),
                                    (np.int32, np.float32), (np.bool_, np.bool_),
                                    (np.float16, np.float16)])
def test_product_dtypes(dtypes):
    a, b = data((2, 3), dtypes[0], -3, 3), data((3, 4), dtypes[1], -3, 3)
    tol = 1e-2 if np.float16 in dtypes else 2e-5
    check(snp.matmul, np.matmul, a, b, rtol=tol, atol=tol)
    check(snp.dot, np.dot, a, b, rtol=tol, atol=tol)


def test_matmul_errors():
    with pytest.raises(SecantTypeError, match="contracting"):
        snp.matmul(snp.ones((2, 3)), snp.ones((4, 2)))
    with pytest.raises(SecantValueError):
        snp.matmul(snp.ones(3), 2.0)
    with pytest.raises(SecantTypeError, match="not aligned"):
        snp.dot(snp.ones((2, 3)), snp.ones((2, 3)))


def test_vdot_inner_outer_vecdot():
    a, b = data((2, 3)), data((2, 3))
    check(snp.vdot, np.vdot, a, b)
    check(snp.inner, np.inner, a, b)
    check(snp.inner, np.inner, data((3,)), data((4, 3)))
    check(snp.inner, np.inner, np.float32(2.0), data((4, 3)))
    check(snp.outer, np.outer, data((3,)), data((2, 2)))
    check(snp.vecdot, lambda x, y: np.sum(x * y, -1), a, b)
    check(lambda x, y: snp.vecdot(x, y, axis=0), lambda x, y: np.sum(x * y, 0), a, data((2, 1)))


@pytest.mark.parametrize("sa,sb,axes", [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1),
                                        ((2, 3), (4, 5), 0), ((2, 3, 4), (4, 3), ([1, 2], [1, 0])),
                                        ((3, 4), (4, 3), (-1, 0)), ((2, 3), (2, 3), [[0, 1],
                                                                                     [0, 1]])])
def test_tensordot(sa, sb, axes):
    check(lambda a, b: snp.tensordot(a, b, axes), lambda a, b: np.tensordot(a, b, axes),
          data(sa), data(sb))


def test_tensordot_mismatch():
    with pytest.raises(SecantTypeError, match="do not match"):
        snp.tensordot(snp.ones((2, 3)), snp.ones((2, 3)), 1)


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("i,i->", [(3,), (3,)]), ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("ij->j", [(2, 3)]), ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,j->i", [(2, 3), (3,)]), ("ab,cd->abcd", [(2, 3), (4, 1)]), ("iij->ji", [(3, 3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("i,i,i->i", [(3,), (3,), (3,)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (5, 3, 4)]), ("...ij,jk", [(6, 5, 2, 3), (3, 4)]),
    ("i...->...", [(3, 2, 4)]), ("...ij,...jk->...ik", [(1, 2, 3), (6, 3, 4)]),
    ("ij,ij->", [(2, 3), (2, 3)]), ("bi,bi->b", [(4, 3), (4, 3)]), ("ijk->kji", [(2, 3, 4)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM)
def test_einsum(spec, shapes):
    arrays = [data(s) for s in shapes]
    check(lambda *xs: snp.einsum(spec, *xs), lambda *xs: np.einsum(spec, *xs), *arrays)


def test_einsum_dtypes_and_errors():
    a, b = data((2, 3), np.int32), data((3,), np.float32)
    check(lambda x, y: snp.einsum("ij,j->i", x, y), lambda x, y: np.einsum("ij,j->i", x, y), a, b)
    check(lambda x: snp.einsum("ij->i", x), lambda x: np.einsum("ij->i", x), a)
    big = np.full((2, 100), 100, np.int8)
    out = snp.einsum("ij,kj->ik", big, big, preferred_element_type=np.int32)
    assert out.dtype == np.int32 and int(out.sum()) == 4 * 100 * 100 * 100
    with pytest.raises(SecantValueError, match="sizes"):
        snp.einsum("ij,jk->ik", snp.ones((2, 3)), snp.ones((4, 5)))
    with pytest.raises(SecantValueError, match="appears in no input"):
        snp.einsum("ij->ik", snp.ones((2, 3)))
    with pytest.raises(SecantValueError, match="operand"):
        snp.einsum("ij,jk->ik", snp.ones((2, 3)))
    with pytest.raises(SecantValueError, match="rank"):
        snp.einsum("ijk->i", snp.ones((2, 3)))


def test_einsum_traces_to_one_dot_general():
    text = secant.jit(lambda x, y: snp.einsum("bij,bjk->bik", x, y)).lower(
        data((5, 2, 3)), data((5, 3, 4))).as_text()
    assert text.count("stablehlo.dot_general") == 1


@pytest.mark.parametrize("sa,sb", [((3,), (2,)), ((2, 3), (3, 3)), ((3,), (4, 3)), ((2, 2), (2,)),
                                   ((2, 3, 2), (3, 2))])
def test_kron(sa, sb):
    check(snp.kron, np.kron, data(sa), data(sb))


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("sa,sb,kw", [((3,), (3,), {}), ((4, 3), (4, 3), {}), ((4, 3), (3,), {}),
                                      ((3, 4), (3, 4), {"axis": 0}),
                                      ((3, 4), (4, 3), {"axisa": 0, "axisc": 0}),
                                      ((2,), (2,), {}), ((5, 2), (5, 3), {})])
def test_cross(sa, sb, kw):
    check(lambda a, b: snp.cross(a, b, **kw), lambda a, b: np.cross(a, b, **kw), data(sa),
          data(sb))
    with pytest.raises(SecantValueError, match="2 or 3"):
        snp.cross(snp.ones(4), snp.ones(4))


@pytest.mark.parametrize("offset,axes", [(0, (0, 1)), (1, (0, 1)), (-1, (1, 2)), (0, (2, 0))])
def test_trace(offset, axes):
    x = data((3, 4, 5))
    check(lambda a: snp.trace(a, offset, *axes), lambda a: np.trace(a, offset, *axes), x)
    check(lambda a: a.trace(offset, *axes), lambda a: a.trace(offset, *axes), x, jit=False)
    xi = data((3, 3), np.int8)
    check(snp.trace, np.trace, xi, dtype=np.int32)
    with pytest.raises(SecantError):
        snp.trace(snp.ones((2, 2)), axis1=0, axis2=0)
