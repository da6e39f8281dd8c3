"""secant.nn's activations, softmax family, logsumexp, one_hot and standardize (written in
secant.numpy and differentiated through their sources: secant/nn/__init__.py)."""
import numpy as np
import scipy.special as sp

import secant.numpy as snp
import secant.nn as nn
from tests.library_cases import Case


def wide(rng, shape, dtype):
    """Uniform in (-8, 8): both sides of every kink (0, +-1, +-3, 6)."""
    return rng.uniform(-8, 8, shape).astype(dtype)


def labels(rng, shape, dtype):
    return rng.integers(-1, 5, shape)      # -1: out of range, all zeros


def _erf(x):
    return sp.erf(x)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _relu6(x):
    return np.clip(x, 0, 6)


CASES = [
    Case("nn.relu", nn.relu, lambda x: np.maximum(x, 0), [(3, 4)], wide),
    Case("nn.relu6", nn.relu6, _relu6, [(3, 4)], wide),
    Case("nn.sigmoid", nn.sigmoid, sp.expit, [(3, 4)], wide),
    Case("nn.softplus", nn.softplus, lambda x: np.logaddexp(x, 0), [(3, 4)], wide),
    Case("nn.soft_sign", nn.soft_sign, lambda x: x / (np.abs(x) + 1), [(5,)]),
    Case("nn.log_sigmoid", nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0), [(3, 4)], wide),
    Case("nn.silu", nn.silu, lambda x: x * sp.expit(x), [(3, 4)], wide),
    Case("nn.swish", nn.swish, lambda x: x * sp.expit(x), [(5,)]),
    Case("nn.gelu", nn.gelu,
         lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
         [(3, 4)], wide, id="tanh"),
    Case("nn.gelu", lambda x: nn.gelu(x, approximate=False),
         lambda x: x * (1 + _erf(x / np.sqrt(2))) / 2, [(3, 4)], wide, id="erf"),
    Case("nn.elu", nn.elu, _elu, [(3, 4)], wide),
    Case("nn.elu", lambda x: nn.elu(x, 0.5), lambda x: _elu(x, 0.5), [(5,)], id="alpha"),
    Case("nn.celu", lambda x: nn.celu(x, 1.5),
         lambda x: np.maximum(x, 0) + 1.5 * np.expm1(np.minimum(x, 0) / 1.5), [(3, 4)], wide),
    Case("nn.selu", nn.selu, lambda x: SELU_SCALE * _elu(x, SELU_ALPHA), [(3, 4)], wide),
    Case("nn.leaky_relu", nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x), [(3, 4)]),
    Case("nn.leaky_relu", lambda x: nn.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x),
         [(5,)], id="slope"),
    Case("nn.hard_tanh", nn.hard_tanh, lambda x: np.clip(x, -1, 1), [(3, 4)],
         lambda rng, s, d: rng.uniform(-2, 2, s).astype(d)),
    Case("nn.hard_sigmoid", nn.hard_sigmoid, lambda x: _relu6(x + 3) / 6, [(3, 4)], wide),
    Case("nn.hard_silu", nn.hard_silu, lambda x: x * _relu6(x + 3) / 6, [(3, 4)], wide),
    Case("nn.hard_swish", nn.hard_swish, lambda x: x * _relu6(x + 3) / 6, [(3, 4)], wide),
    Case("nn.mish", nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0)), [(3, 4)], wide),
    Case("nn.squareplus", nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2, [(3, 4)], wide),
    Case("nn.sparse_plus", nn.sparse_plus,
         lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)), [(3, 4)],
         lambda rng, s, d: rng.uniform(-2, 2, s).astype(d)),
    Case("nn.glu", nn.glu, lambda x: x[:, :2] * sp.expit(x[:, 2:]), [(3, 4)]),
    Case("nn.glu", lambda x: nn.glu(x, axis=0), lambda x: x[:2] * sp.expit(x[2:]), [(4, 3)],
         id="axis0"),
    Case("nn.softmax", nn.softmax, _softmax, [(3, 4)], wide),
    Case("nn.softmax", lambda x: nn.softmax(x, axis=0), lambda x: _softmax(x, 0), [(3, 4)],
         id="axis0"),
    Case("nn.softmax", lambda x: nn.softmax(x, axis=(0, 2)), lambda x: _softmax(x, (0, 2)),
         [(2, 3, 2)], id="axes"),
    Case("nn.log_softmax", nn.log_softmax, lambda x: np.log(_softmax(x)), [(3, 4)], wide),
    Case("nn.log_softmax", lambda x: nn.log_softmax(x, axis=0), lambda x: np.log(_softmax(x, 0)),
         [(3, 4)], id="axis0"),
    Case("nn.logsumexp", nn.logsumexp, sp.logsumexp, [(3, 4)], wide),
    Case("nn.logsumexp", lambda x: nn.logsumexp(x, axis=1, keepdims=True),
         lambda x: sp.logsumexp(x, axis=1, keepdims=True), [(3, 4)], id="keepdims"),
    Case("nn.logsumexp", lambda a, b: nn.logsumexp(a, axis=0, b=b),
         lambda a, b: sp.logsumexp(a, axis=0, b=b), [(3, 4), (3, 4)],
         lambda rng, s, d: rng.uniform(0.5, 2, s).astype(d), id="b"),
    Case("nn.standardize", nn.standardize,
         lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
         [(3, 4)], rtol=1e-5),
    Case("nn.standardize", lambda x: nn.standardize(x, axis=0, epsilon=0.1),
         lambda x: (x - x.mean(0, keepdims=True)) / np.sqrt(x.var(0, keepdims=True) + 0.1),
         [(3, 4)], id="axis0"),
    Case("nn.one_hot", lambda x: nn.one_hot(x, 5),
         lambda x: (x[..., None] == np.arange(5)).astype(np.float32), [(2, 3)], labels,
         differentiable=False),
    Case("nn.one_hot", lambda x: nn.one_hot(x, 4, axis=0, dtype=snp.int32),
         lambda x: np.moveaxis(x[..., None] == np.arange(4), -1, 0).astype(np.int32), [(2, 3)],
         labels, differentiable=False, id="axis0"),
]
