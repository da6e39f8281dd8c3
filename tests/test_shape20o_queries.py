"""vmap writes a batched `x.shape` / `x.ndim` as the array query, or as example_shape(x) /
example_ndim(x) (which refuse a batched object whose class computes them), decided by the
classes the function reaches (its globals, closure cells and what they reach), never by the
classes loaded in the process (issue 20: generated source depends on the function alone). An
object of a class the function cannot reach, passed to it, is refused when the call runs
(batching/helpers.py check_queried): never read through the class's getter (a wrong shape)."""
import collections
import importlib.util
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util
from secant.backends.errors import SecantTypeError
from secant.codegen.program import program_source

RNG = np.random.default_rng(20)

USER_MODULE = '''
import secant.numpy as snp


def scale(x):
    return x * x.shape[0] + x.ndim


def first_rows(xs):
    return [x * x.shape[-1] for x in xs]


def rows(x):
    return snp.ones(2) * x.shape[0]
'''

CALLER_MODULE = '''
import collections

import shape20o_user


class Cells(collections.namedtuple("Cells", "w")):
    shape = (5, 6)


def through(x):
    return shape20o_user.rows(Cells(x))
'''


def _load(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def user_module(tmp_path):
    """A module of the user's that reaches no class computing shape or ndim."""
    yield _load(tmp_path, "shape20o_user", USER_MODULE)
    sys.modules.pop("shape20o_user", None)


@pytest.fixture
def grid_class():
    """A pytree class whose shape and ndim are properties, registered for the test only, that
    the user's module does not reach."""
    class Grid:
        def __init__(self, w):
            self.w = w

        @property
        def shape(self):
            return (7,)

        @property
        def ndim(self):
            return 5

    tree_util.register_pytree_node(Grid, lambda g: ((g.w,), None), lambda aux, ch: Grid(*ch))
    yield Grid
    tree_util._node_types.discard(Grid)


def test_an_unreached_class_leaves_the_array_query(x64, user_module, grid_class):
    """Grid, registered and computing shape, is no class scale reaches: x.shape[1] as written
    (before: example_shape(x)[0], wherever any class in the process computed shape)."""
    text = secant.source(secant.vmap(user_module.scale))
    assert "x.shape[1]" in text and "x.ndim - 1" in text, text
    assert "example_shape" not in text and "example_ndim" not in text, text
    xs = RNG.normal(size=(3, 4))
    want = [user_module.scale(x) for x in xs]
    np.testing.assert_allclose(secant.vmap(user_module.scale)(snp.asarray(xs)), want, rtol=1e-12)


def test_an_unreached_class_passed_in_is_refused(x64, user_module, grid_class):
    """A Grid passed to scale: its getter read off the batched object would give (7,)[1:];
    the call's arguments hold a class computing shape, so that call's code reads it through
    example_shape (secant/batch.py _computed_in), which refuses it; so for one in a list."""
    with pytest.raises(SecantTypeError, match=r"\.shape of a batched Grid"):
        secant.vmap(user_module.scale)(grid_class(snp.ones((2, 3))))
    with pytest.raises(SecantTypeError, match=r"\.shape of a batched Grid"):
        secant.vmap(user_module.first_rows)([snp.ones((2, 3)), grid_class(snp.ones((2, 3)))])
    xs = [RNG.normal(size=(2, 3)), RNG.normal(size=(2, 5))]
    got = secant.vmap(user_module.first_rows)([snp.asarray(x) for x in xs])
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g, x * x.shape[-1], rtol=1e-12)


class Tiles(collections.namedtuple("Tiles", "w")):
    """A namedtuple of this module with a class constant `shape`: every function of the module
    reaches it."""
    shape = (2, 2)


def area(x):
    return snp.ones(2) * x.shape[0]


def test_a_reached_class_reads_through_the_helper(x64):
    """area's module holds Tiles (its shape a class constant): example_shape(x)[0], which reads
    an array's shape and refuses a batched Tiles."""
    text = secant.source(secant.vmap(area))
    assert "example_shape(x)[0]" in text, text
    xs = RNG.normal(size=(3, 4, 2))
    np.testing.assert_allclose(secant.vmap(area)(snp.asarray(xs)), [[4, 4]] * 3, rtol=1e-12)
    with pytest.raises(SecantTypeError, match=r"\.shape of a batched Tiles"):
        secant.vmap(area)(Tiles(snp.ones((3, 4))))


def test_a_class_the_module_defines_later_makes_it_again(x64, user_module):
    """A class computing shape defined in scale's module after vmap(scale) was generated: the
    guard (properties.PlainReads, by Reach) sees the module change and the code is generated
    again, reading x.shape through example_shape."""
    batched = secant.vmap(user_module.scale)
    xs = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(batched(snp.asarray(xs)), [x * 3 + 1 for x in xs], rtol=1e-12)
    assert "example_shape" not in secant.source(batched)
    exec("import collections\n"
         "class Late(collections.namedtuple('Late', 'w')):\n"
         "    shape = (9,)\n", vars(user_module))
    np.testing.assert_allclose(batched(snp.asarray(xs)), [x * 3 + 1 for x in xs], rtol=1e-12)
    assert "example_shape(x)[0]" in secant.source(secant.vmap(user_module.scale))
    with pytest.raises(SecantTypeError, match=r"\.shape of a batched Late"):
        batched(user_module.Late(snp.ones((2, 3))))


def test_a_callee_reads_through_the_helper_where_its_caller_reaches_the_class(
        x64, user_module, tmp_path):
    """through (its module defines Cells, shape a class constant) passes a batched Cells to rows
    of a module that does not reach Cells: rows' batched form for that caller reads x.shape
    through example_shape (BatchOptions.computed), which refuses the Cells; read as the array
    query it would answer 6, the constant's second entry, silently. rows batched alone keeps
    x.shape[1]."""
    caller = _load(tmp_path, "shape20o_caller", CALLER_MODULE)
    try:
        assert "x.shape[1]" in secant.source(secant.vmap(user_module.rows))
        text = program_source(secant.vmap(caller.through))
        assert "example_shape(x)[0]" in text and "x.shape[1]" not in text, text
        with pytest.raises(SecantTypeError, match=r"\.shape of a batched Cells"):
            secant.vmap(caller.through)(snp.ones((3, 4)))
    finally:
        sys.modules.pop("shape20o_caller", None)
