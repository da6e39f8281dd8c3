"""A helper module the corpus reaches as `mod.fn` (and `mod.sub.fn`)."""
import types

import secant.numpy as snp


def softplus(x):
    return snp.log1p(snp.exp(x))


def gelu(x):
    return 0.5 * x * (1.0 + snp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


act = types.SimpleNamespace(gelu=gelu, softplus=softplus)
