"""Issue 15: `m.act` of a differentiated object is read through attribute_reader
(transformer/properties.py) once ANY registered pytree class computes an attribute of that name
(a property, a cached_property, a class constant: a dataclass field's default `act: str =
"tanh"`), and as a field read otherwise. So what a program's derivative is made of depended on
which classes the process had registered: in `make test`'s worker, which imports every test file
first, tests/test_others2_training.py's MLPModule (act: str = "tanh") and test_prop15.py's
cached_property `scale` switched ctx15's `self.act` and the error catalogue's `s.scale` onto
that path, where
- jacfwd(grad) of a module holding its activation function raised "the batch size of a value
  with no arrays in it ... is unknown": the reader's derivative, batched, sized its batch by
  its first batched parameter, the function's cotangent `act_bar` (a function: no arrays).
  A batch is now sized by the first batched parameter holding an array when it runs
  (batch_size_of(act_bar, act_bar_dot, obj_dot));
- jit(grad) of a function putting a traced value in a meta field named the line reading it,
  not the line building the object (as the field read's error does): the reader's cotangent
  of the object is now written with the origin of the object's definition.

Each test registers its own class computing the name (act15o, scale15o: names no other test
reads, so the registration changes nothing elsewhere) and checks both reads: alone and after.
Without the fixes the `after` half of each test fails."""
import dataclasses
import inspect

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import grad, hessian, jacfwd, jacrev, jit, tree_util, vmap

from others15_check import fd_grad

XC = np.array([0.3, -0.5, 0.7])
W = np.array([0.4, 1.1, -0.6])


@dataclasses.dataclass
class Dense15o:
    """flax-like: its activation a meta field (pytree_node=False)."""
    w: object
    act15o: object

    def __call__(self, x):
        return self.act15o(self.w * x)


tree_util.register_dataclass(Dense15o, data_fields=["w"], meta_fields=["act15o"])


class Sequential15o:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def swish(x):
    return x * snp.tanh(x)


def loss(m):
    return snp.sum(m(XC) ** 2)


def direct(m):
    return snp.sum(m.act15o(m.w * XC) ** 2)


def sequential(w):
    return snp.sum(Sequential15o([Dense15o(w, snp.tanh), Dense15o(w, swish)])(XC))


def _tanh_hessian(w):
    """d2/dw2 of sum(tanh(w x)^2), diagonal: 2 x^2 (s^2 - 2 t^2 s), t = tanh(w x), s = 1 - t^2."""
    t = np.tanh(w * XC)
    s = 1 - t ** 2
    return np.diag(2 * XC ** 2 * (s ** 2 - 2 * t ** 2 * s))


def _fd_hessian(f, w, eps=1e-4):
    return np.stack([(fd_grad(f, (w + e,)) - fd_grad(f, (w - e,))) / (2 * eps)
                     for e in np.eye(w.size) * eps], axis=1)


TRANSFORMS = {"jacfwd(grad)": lambda f: jacfwd(grad(f)),
              "jit(jacfwd(grad))": lambda f: jit(jacfwd(grad(f))),
              "hessian": hessian, "jacrev(jacfwd)": lambda f: jacrev(jacfwd(f))}


def _w(h):
    while hasattr(h, "w"):
        h = h.w
    return np.asarray(h)


def _second_derivatives():
    out = {}
    for name, T in TRANSFORMS.items():
        out[name, "tanh"] = _w(T(loss)(Dense15o(W, snp.tanh)))
        out[name, "direct"] = _w(T(direct)(Dense15o(W, snp.tanh)))
        out[name, "swish"] = _w(T(loss)(Dense15o(W, swish)))
        out[name, "sequential"] = _w(T(sequential)(W))
    return out


def _computing(name):
    """A registered pytree class whose class constant `name` is not a field: from now on every
    `m.<name>` of a differentiated m is read through attribute_reader."""
    cls = type(f"Computes_{name}", (), {name: "tanh", "tree_flatten": lambda self: ((), None),
                                         "tree_unflatten": classmethod(lambda c, a, ch: c())})
    return tree_util.register_pytree_node_class(cls)


def test_second_derivatives_of_a_module_holding_a_function_whatever_is_registered(x64):
    want_swish = _fd_hessian(lambda w: loss(Dense15o(w, swish)), W)
    want_sequential = _fd_hessian(sequential, W)
    np.testing.assert_allclose(_fd_hessian(lambda w: loss(Dense15o(w, snp.tanh)), W),
                               _tanh_hessian(W), atol=1e-6)
    for when in ("alone", "after"):
        if when == "after":
            _computing("act15o")
            assert "attribute_reader(m, 'act15o')" in secant.source(grad(direct))
        got = _second_derivatives()
        for (name, case), value in got.items():
            want = want_swish if case == "swish" else want_sequential if case == "sequential" \
                else _tanh_hessian(W)
            np.testing.assert_allclose(value, want, rtol=1e-6, atol=1e-6,
                                       err_msg=f"{when}: {name} of {case}")


@dataclasses.dataclass(frozen=True)
class Meta15o:
    w: object
    scale15o: object


tree_util.register_dataclass(Meta15o, data_fields=["w"], meta_fields=["scale15o"])


@dataclasses.dataclass(frozen=True)
class Leaves15o:
    w: object
    k: object


tree_util.register_dataclass(Leaves15o, data_fields=["w", "k"], meta_fields=[])


def replaced(x):
    s = dataclasses.replace(Meta15o(x, 1.0), scale15o=x[1])
    return snp.sum(s.w * s.scale15o)


def from_a_leaf(b):
    s = Meta15o(b.w, b.k)
    return snp.sum(s.w * s.scale15o)


def _building_line(fn):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, t in enumerate(lines) if "s = " in t)


def test_a_traced_value_in_aux_data_names_the_line_building_the_object_whatever_is_registered():
    """jit(grad): the SecantTypeError names the line putting the traced value in the meta
    field, whether `s.scale15o` is read as a field or through attribute_reader."""
    v = np.array([0.1, 0.2, 0.3])
    for when in ("alone", "after"):
        if when == "after":
            _computing("scale15o")
        for fn, arg in ((replaced, v), (from_a_leaf, Leaves15o(v, 0.5))):
            with pytest.raises(secant.SecantTypeError, match="keeps scale15o in its aux data") \
                    as info:
                jit(grad(fn))(arg)
            line = f"test_order15_computed_names.py:{_building_line(fn)}\n"
            assert line in str(info.value), f"{when}, {fn.__name__}: {info.value}"


def test_vmap_of_grad_of_a_module_holding_a_function_after(x64):
    """vmap(grad) on the attribute_reader path: against a Python loop of float64 central
    differences."""
    _computing("act15o")
    ws = np.stack([W, 2 * W, -W])
    got = _w(vmap(grad(loss))(Dense15o(ws, swish)))
    want = np.stack([fd_grad(lambda w: loss(Dense15o(w, swish)), (w,)) for w in ws])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@dataclasses.dataclass
class Defaults15o:
    """flax-like: a field's default (`act: str = "tanh"`) is a class attribute too; every
    object holds the field (dataclasses' __init__ sets it), so it is no class constant."""
    w: object
    s15o: object = 2.0


tree_util.register_dataclass(Defaults15o, data_fields=["w", "s15o"], meta_fields=[])


@dataclasses.dataclass(init=False)
class OwnInit15o:
    """Its own __init__, which need not set the field: its default may be read from the class."""
    w: object
    kind15o: float = 1.0

    def __init__(self, w):
        self.w = w


tree_util.register_dataclass(OwnInit15o, data_fields=["w"], meta_fields=[])


def test_a_dataclass_field_default_is_no_class_constant(x64):
    """A registered dataclass's field default no longer sends every `m.<field>` of the program
    through attribute_reader (tests/test_others2_training.py's MLPModule did so for `.act` in
    make test's worker); a class whose own __init__ may leave the field unset still does."""
    def f(m):
        return snp.sum(snp.tanh(m.w) * m.s15o)

    def g(m):
        return snp.sum(m.w * m.kind15o)

    assert "attribute_reader" not in secant.source(grad(f))
    got = grad(f)(Defaults15o(W, 3.0))
    np.testing.assert_allclose(got.w, 3 * (1 - np.tanh(W) ** 2))
    np.testing.assert_allclose(got.s15o, np.sum(np.tanh(W)))
    assert "attribute_reader(m, 'kind15o')" in secant.source(grad(g))
    np.testing.assert_allclose(grad(g)(OwnInit15o(W)).w, np.ones(3))
