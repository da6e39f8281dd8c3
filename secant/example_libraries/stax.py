"""secant.example_libraries.stax: layers as (init_fun, apply_fun) pairs, with the interface of
jax.example_libraries.stax.

`init_fun(rng, input_shape)` returns `(output_shape, params)` (a -1 in input_shape, the batch,
stays -1); `apply_fun(params, inputs, **kwargs)` computes the layer (`rng=` reaches Dropout;
serial and parallel split it between their layers). Parameters are drawn as JAX's stax draws
them (the same keys split the same way, the same initializers), so a secant.random key gives
the parameters jax.random's key gives.

The module sets `__secant_by_source__`: grad, jvp and vmap read these apply functions as they
read user code, so `grad(loss)` of a model built here is generated source like any other.
"""
import functools
import operator

import numpy as np

import secant.numpy as snp
from secant import lax, random
from secant.backends.errors import SecantValueError
from secant.lax_windows_sources import _conv_transpose_padding
from secant.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                       softplus, standardize)
from secant.nn.initializers import glorot_normal, normal, ones, zeros

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["Dense", "GeneralConv", "Conv", "Conv1DTranspose", "GeneralConvTranspose",
           "ConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax",
           "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool",
           "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum", "FanInConcat",
           "Dropout", "serial", "parallel", "shape_dependent",
           "glorot", "randn", "normal", "glorot_normal", "ones", "zeros", "logsoftmax",
           "relu", "log_softmax", "softmax", "softplus", "sigmoid", "elu", "leaky_relu", "selu",
           "gelu", "standardize"]

glorot = glorot_normal      # stax's old names for the initializers
randn = normal
logsoftmax = log_softmax


# --- layers with parameters ------------------------------------------------------------------
def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully connected layer: inputs @ W + b, W of shape (in_dim, out_dim)."""
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return snp.dot(inputs, W) + b
    return init_fun, apply_fun


def _dims(spec_triple):
    lhs_spec, rhs_spec, out_spec = spec_triple
    return lhs_spec, rhs_spec, out_spec


def _kernel_shape(rhs_spec, out_chan, in_chan, filter_shape):
    """The kernel's shape in the layout rhs_spec ('HWIO', 'OIHW', ...)."""
    spatial = iter(filter_shape)
    return tuple(out_chan if c == "O" else in_chan if c == "I" else next(spatial)
                 for c in rhs_spec)


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """A convolution with layouts given by dimension_numbers, e.g. ('NHWC', 'HWIO', 'NHWC')."""
    lhs_spec, rhs_spec, out_spec = _dims(dimension_numbers)
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides is not None else one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, out_chan, input_shape[lhs_spec.index("C")],
                                     filter_shape)
        output_shape = lax.conv_general_shape_tuple(input_shape, kernel_shape, strides,
                                                    padding, dimension_numbers)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        W = W_init(k1, kernel_shape)
        b = b_init(k2, bias_shape)
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        out = lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                       dimension_numbers=dimension_numbers)
        return out + b
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def _conv_transpose_shape(input_shape, kernel_shape, strides, padding, dimension_numbers):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out = [0] * len(out_spec)
    out[out_spec.index("N")] = input_shape[lhs_spec.index("N")]
    out[out_spec.index("C")] = kernel_shape[rhs_spec.index("O")]
    spatial_in = [c for c in lhs_spec if c not in "NC"]
    spatial_k = [c for c in rhs_spec if c not in "IO"]
    spatial_out = [c for c in out_spec if c not in "NC"]
    for j, (ci, ck, co) in enumerate(zip(spatial_in, spatial_k, spatial_out)):
        n, k, s = input_shape[lhs_spec.index(ci)], kernel_shape[rhs_spec.index(ck)], strides[j]
        pad = padding if isinstance(padding, str) else tuple(padding[j])
        lo, hi = _conv_transpose_padding(k, s, pad)
        out[out_spec.index(co)] = (n - 1) * s + 1 + lo + hi - k + 1
    return tuple(out)


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A transposed convolution (lax.conv_transpose) with layouts given by dimension_numbers."""
    lhs_spec, rhs_spec, out_spec = _dims(dimension_numbers)
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides is not None else one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, out_chan, input_shape[lhs_spec.index("C")],
                                     filter_shape)
        output_shape = _conv_transpose_shape(input_shape, kernel_shape, strides, padding,
                                             dimension_numbers)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        W = W_init(k1, kernel_shape)
        b = b_init(k2, bias_shape)
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        out = lax.conv_transpose(inputs, W, strides, padding,
                                 dimension_numbers=dimension_numbers)
        return out + b
    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalises over `axis` with the batch's own statistics (no running averages, as JAX's
    stax), then scales by gamma and shifts by beta (parameters over the other axes)."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        z = standardize(x, axis, epsilon=epsilon)
        return affine(z, beta, gamma, axis)
    # chosen here, not by an `if` in apply_fun: the unused parameter is () (no leaves)
    affine = {(True, True): _scale_shift, (True, False): _shift, (False, True): _scale,
              (False, False): _neither}[bool(center), bool(scale)]
    return init_fun, apply_fun


# gamma and beta with the normalised axes put back (as size 1)
def _scale_shift(z, beta, gamma, axis):
    return snp.expand_dims(gamma, axis) * z + snp.expand_dims(beta, axis)


def _shift(z, beta, gamma, axis):
    return z + snp.expand_dims(beta, axis)


def _scale(z, beta, gamma, axis):
    return snp.expand_dims(gamma, axis) * z


def _neither(z, beta, gamma, axis):
    return z


# --- elementwise layers ----------------------------------------------------------------------
def elementwise(fun, **fun_kwargs):
    """A layer without parameters applying fun(inputs, **fun_kwargs)."""
    layer_fun = functools.partial(fun, **fun_kwargs) if fun_kwargs else fun

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return layer_fun(inputs)
    return init_fun, apply_fun


Tanh = elementwise(snp.tanh)
Relu = elementwise(relu)
Exp = elementwise(snp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# --- pooling -----------------------------------------------------------------------------------
def _window_shape(input_shape, window, strides, padding):
    """The pooled shape (JAX's: a -1 batch becomes 0, as jax's stax gives)."""
    pads = lax.padtype_to_pads(input_shape, window, strides, padding)
    return tuple(max(0, (d + lo + hi - w) // s + 1)
                 for d, w, s, (lo, hi) in zip(input_shape, window, strides, pads))


def _pooling_layer(reducer, init_val, rescale_by_window=False):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        window_shape = tuple(window_shape)
        strides = tuple(strides) if strides is not None else (1,) * len(window_shape)
        if spec is None:        # NHWC: the batch first, the channels last
            non_spatial = (0, len(window_shape) + 1)
        else:
            non_spatial = (spec.index("N"), spec.index("C"))
        for i in sorted(non_spatial):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            return _window_shape(input_shape, window_shape, strides, padding), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            if rescale_by_window:
                ones_ = snp.ones(inputs.shape, dtype=inputs.dtype)
                sizes = lax.reduce_window(ones_, 0., lax.add, window_shape, strides, padding)
                out = out / sizes
            return out
        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -np.inf)
SumPool = _pooling_layer(lax.add, 0.)
AvgPool = _pooling_layer(lax.add, 0., rescale_by_window=True)


# --- reshaping and plumbing -------------------------------------------------------------------
def _flatten_init(rng, input_shape):
    return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()


def _flatten_apply(params, inputs, **kwargs):
    return snp.reshape(inputs, (inputs.shape[0], -1))


Flatten = (_flatten_init, _flatten_apply)


def _identity_init(rng, input_shape):
    return input_shape, ()


def _identity_apply(params, inputs, **kwargs):
    return inputs


Identity = (_identity_init, _identity_apply)


def FanOut(num):
    """A layer giving `num` copies of its input (to feed `parallel`)."""
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum_init(rng, input_shape):
    return input_shape[0], ()


def _fan_in_sum_apply(params, inputs, **kwargs):
    total = inputs[0]
    for x in inputs[1:]:
        total = total + x
    return total


FanInSum = (_fan_in_sum_init, _fan_in_sum_apply)


def FanInConcat(axis=-1):
    """A layer concatenating its inputs (a list, from `parallel`) along `axis`."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return snp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Keeps each input with probability `rate` (JAX's stax: rate is the KEEP rate) and scales
    kept ones by 1/rate in mode 'train'; the identity otherwise. Needs `rng=` in train mode."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, rng=None, **kwargs):
        if rng is None:
            raise SecantValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
                "is, instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, "
                "inputs, rng)` where `rng` is a PRNG key (e.g. from `secant.random.key`).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return snp.where(keep, inputs / rate, 0)
        return inputs
    return init_fun, apply_fun


# --- combinators -------------------------------------------------------------------------------
def serial(*layers):
    """The layers one after another; params is a list with one entry per layer."""
    nlayers = len(layers)
    init_funs = tuple(layer[0] for layer in layers)
    apply_funs = tuple(layer[1] for layer in layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, rng=None, **kwargs):
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for i in range(nlayers):
            inputs = apply_funs[i](params[i], inputs, rng=rngs[i], **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side: the input is a sequence with one entry per layer, and so are
    the outputs and params."""
    nlayers = len(layers)
    init_funs = tuple(layer[0] for layer in layers)
    apply_funs = tuple(layer[1] for layer in layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        shapes, params = [], []
        for i in range(nlayers):
            shape, param = init_funs[i](rngs[i], input_shape[i])
            shapes.append(shape)
            params.append(param)
        return tuple(shapes), tuple(params)

    def apply_fun(params, inputs, rng=None, **kwargs):
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        outs = []
        for i in range(nlayers):
            outs.append(apply_funs[i](params[i], inputs[i], rng=rngs[i], **kwargs))
        return outs
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built from the shape of its input: make_layer(input_shape) -> (init, apply)."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
