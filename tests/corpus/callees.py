"""Section 2 of issue 15: callees that are not plain names, library functions passed directly,
signatures with *args, **kwargs, keyword-only and positional-only parameters, decorators,
closures, lambdas."""
import functools
import operator

import numpy as np

import secant
import secant.numpy as snp

from corpus import Case, _helpers as hp, vec


def getattr_literal(x):
    return snp.sum(getattr(snp, "sin")(x) * x)


ACTIVATION = "tanh"


def getattr_global_name(x):
    act = getattr(snp, ACTIVATION)
    return snp.sum(act(x) ** 2)


def module_attr(x):
    return snp.sum(hp.softplus(x))


def module_sub_attr(x):
    return snp.sum(hp.act.gelu(x))


def full_module_path(x):
    return snp.sum(secant.numpy.sin(x) * secant.numpy.exp(x))


def _square(x):
    return x * x


FNS = {"sin": snp.sin, "square": _square}


def dict_of_fns(x):
    return snp.sum(FNS["square"](x) + FNS["sin"](x))


def list_of_fns(x):
    acc = 0.0
    for fn in [snp.sin, snp.cos, _square]:
        acc = acc + snp.sum(fn(x))
    return acc


class Dense:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def apply(self, x):
        return snp.tanh(x @ self.w + self.b)

    def __call__(self, x):
        return self.apply(x)

    @staticmethod
    def activation(x):
        return snp.logaddexp(x, 0.0)

    @classmethod
    def scale(cls, x):
        return cls.FACTOR * x

    FACTOR = 1.5


LAYER = Dense(vec(20, 3, 2), vec(21, 2))


class Model:
    def __init__(self):
        self.layer1 = Dense(vec(22, 3, 4), vec(23, 4))
        self.layer2 = Dense(vec(24, 4, 2), vec(25, 2))

    def __call__(self, x):
        return snp.sum(self.layer2(self.layer1(x)))

    def loss(self, x):
        h = self.layer1.apply(x)
        return snp.mean(self.layer2.apply(h) ** 2)


MODEL = Model()


def method_call(x):
    return snp.sum(LAYER.apply(x))


def callable_object(x):
    return snp.sum(LAYER(x) ** 2)


def static_and_class_methods(x):
    return snp.sum(Dense.activation(x) + Dense.scale(x))


def method_via_self_layers(x):
    return MODEL.loss(x)


def _power_sum(x, p):
    return snp.sum(x ** p)


CUBE_SUM = functools.partial(_power_sum, p=3)


def partial_callee(x):
    return CUBE_SUM(x) + functools.partial(_power_sum, p=2)(x)


def operator_callees(x):
    return snp.sum(operator.mul(x, snp.sin(x)) + operator.add(x, 1.0) ** 2)


def reduce_operator(x):
    return snp.sum(functools.reduce(operator.mul, [x, x, snp.cos(x)]))


def _scaled_norm(x, *, scale=2.0):
    return scale * snp.sum(x * x)


def keyword_only(x):
    return _scaled_norm(x) + _scaled_norm(x, scale=0.5)


def _total(*xs):
    return sum(snp.sum(v) for v in xs)


def star_args(x):
    return _total(x, x * x, snp.sin(x))


def _weighted(x, **kw):
    return kw["w"] * snp.sum(x ** 2) + kw.get("b", 0.0)


def star_kwargs(x):
    return _weighted(x, w=3.0, b=1.0)


def _posonly(x, y, /, z=1.0):
    return snp.sum(x * y) + z


def positional_only(x):
    return _posonly(x, snp.cos(x))


def _with_defaults(x, p=2, c=0.5):
    return snp.sum(c * x ** p)


def default_args(x):
    return _with_defaults(x) + _with_defaults(x, 3)


def scaled_output(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


@scaled_output
def decorated_wraps(x):
    return snp.sum(snp.sin(x))


def times(k):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return k * fn(*args, **kwargs)
        return wrapper
    return deco


@times(3.0)
def decorated_with_args(x):
    return snp.sum(x ** 3)


def calls_decorated(x):
    return decorated_wraps(x) + decorated_with_args(x)


def make_scaled_sin(c):
    def scaled_sin(x):
        return c * snp.sum(snp.sin(x))
    return scaled_sin


closure_sin = make_scaled_sin(2.5)


def make_affine(w, b):
    def affine(x):
        return snp.sum(snp.tanh(x @ w + b))
    return affine


closure_affine = make_affine(vec(26, 3, 2), vec(27, 2))


square = lambda x: x * x  # noqa: E731
cube, quart = (lambda x: x ** 3), (lambda x: x ** 4)  # noqa: E731
long_lambda = (lambda x:  # noqa: E731
               snp.sin(x)
               * snp.exp(-x))


def lambdas_in_body(x):
    return snp.sum(square(x) + cube(x) - quart(x))


_jitted_helper = secant.jit(lambda x: snp.sum(snp.tanh(x) * x))


def jitted_callee(x):
    return _jitted_helper(x) * 2.0


@secant.custom_jvp
def log1pexp(x):
    return snp.log(1.0 + snp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return log1pexp(x), (1.0 - 1.0 / (1.0 + snp.exp(x))) * x_dot


def custom_jvp_callee(x):
    return snp.sum(log1pexp(x) * x)


CASES = [
    Case("getattr_literal", getattr_literal, (vec(30, 3),)),
    Case("getattr_global_name", getattr_global_name, (vec(31, 3),)),
    Case("module_attr", module_attr, (vec(32, 3),)),
    Case("module_sub_attr", module_sub_attr, (vec(33, 3),)),
    Case("full_module_path", full_module_path, (vec(34, 3),)),
    Case("dict_of_fns", dict_of_fns, (vec(35, 3),)),
    Case("list_of_fns", list_of_fns, (vec(36, 3),)),
    Case("method_call", method_call, (vec(37, 3),)),
    Case("callable_object", callable_object, (vec(38, 3),)),
    Case("static_and_class_methods", static_and_class_methods, (vec(39, 3),)),
    Case("method_via_self_layers", method_via_self_layers, (vec(40, 3),)),
    Case("bound_method_direct", MODEL.loss, (vec(41, 3),)),
    Case("callable_object_direct", MODEL, (vec(42, 3),)),
    Case("partial_callee", partial_callee, (vec(43, 3),)),
    Case("partial_direct", CUBE_SUM, (vec(44, 3),)),
    Case("operator_callees", operator_callees, (vec(45, 3),)),
    Case("reduce_operator", reduce_operator, (vec(46, 3),)),
    Case("keyword_only", keyword_only, (vec(47, 3),)),
    Case("star_args", star_args, (vec(48, 3),)),
    Case("star_kwargs", star_kwargs, (vec(49, 3),)),
    Case("positional_only", positional_only, (vec(50, 3),)),
    Case("default_args", default_args, (vec(51, 3),)),
    Case("decorated_wraps", decorated_wraps, (vec(52, 3),)),
    Case("decorated_with_args", decorated_with_args, (vec(53, 3),)),
    Case("calls_decorated", calls_decorated, (vec(54, 3),)),
    Case("closure_sin", closure_sin, (vec(55, 3),)),
    Case("closure_affine", closure_affine, (vec(56, 3),)),
    Case("lambda_square", square, (0.6,)),
    Case("lambda_pair_first", cube, (0.6,)),
    Case("lambda_pair_second", quart, (0.6,)),
    Case("lambda_multiline", long_lambda, (0.6,)),
    Case("lambdas_in_body", lambdas_in_body, (vec(57, 3),)),
    Case("jitted_callee", jitted_callee, (vec(58, 3),)),
    Case("custom_jvp_callee", custom_jvp_callee, (vec(59, 3),)),
    Case("lib_snp_sum", snp.sum, (vec(60, 3),)),
    Case("lib_snp_mean", snp.mean, (vec(61, 2, 3),)),
    Case("lib_snp_sin", snp.sin, (0.4,)),
    Case("lib_np_sin", np.sin, (0.4,)),
    Case("lib_snp_abs", snp.abs, (0.7,)),
]
