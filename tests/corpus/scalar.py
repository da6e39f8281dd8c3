"""Scalar-to-scalar functions: grad to the 4th order (section 4 of issue 15), with closed forms
where finite differences of a kinked function would not do."""
import numpy as np

import secant.numpy as snp

from corpus import Case

FLAG = True


def pow5(x):
    return x ** 5


def sin(x):
    return snp.sin(x)


def exp_sin(x):
    return snp.exp(snp.sin(x))


def rational(x):
    return 1.0 / (1.0 + x ** 2)


def tanh_times_x(x):
    return snp.tanh(x) * x


def log1p_square(x):
    return snp.log1p(x * x)


def abs_times_x(x):
    return snp.abs(x) * x


def where_piecewise(x):
    return snp.where(x > 0.0, x ** 3, x ** 2)


def _inner(x):
    return snp.sin(x) * x


def _outer(x):
    return _inner(x) ** 2 + snp.cos(_inner(x))


def helper_chain(x):
    return _outer(x)


def if_no_else_scalar(x):
    y = snp.exp(x)
    if FLAG:
        y = y * snp.sin(x)
    return y


def loop_scalar(x):
    for i in range(3):
        x = snp.sin(x) + 0.5 * x
    return x


def softplus_sqrt(x):
    return snp.sqrt(1.0 + snp.logaddexp(x, 0.0))


def python_float_ops(x):
    c = float(np.cos(0.3))
    return c * x ** 3 - 2.0 * x + abs(-1.5) * x ** 2


def numpy_ufunc_scalar(x):
    return np.sin(x) * np.exp(x)


def sigmoid(x):
    return 1.0 / (1.0 + snp.exp(-x))


CASES = [
    Case("pow5", pow5, (0.7,), closed={4: lambda x: 120.0 * x}),
    Case("sin", sin, (0.4,), closed={4: lambda x: np.sin(x)}),
    Case("exp_sin", exp_sin, (0.3,)),
    Case("rational", rational, (0.5,)),
    Case("tanh_times_x", tanh_times_x, (0.6,)),
    Case("log1p_square", log1p_square, (0.8,)),
    Case("abs_times_x", abs_times_x, (0.7,), closed={2: lambda x: 2.0, 3: lambda x: 0.0,
                                                     4: lambda x: 0.0}),
    Case("where_piecewise", where_piecewise, (0.6,),
         closed={2: lambda x: 6.0 * x, 3: lambda x: 6.0, 4: lambda x: 0.0}),
    Case("helper_chain", helper_chain, (0.5,)),
    Case("if_no_else_scalar", if_no_else_scalar, (0.4,)),
    Case("loop_scalar", loop_scalar, (0.9,)),
    Case("softplus_sqrt", softplus_sqrt, (0.2,)),
    Case("python_float_ops", python_float_ops, (0.5,)),
    Case("numpy_ufunc_scalar", numpy_ufunc_scalar, (0.3,)),
    Case("sigmoid", sigmoid, (0.25,)),
]
