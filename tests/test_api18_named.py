"""jax.named_scope and jax.named_call: their names appear in jit's StableHLO locations
(`loc("scope/inner"("file":line:col))`), nested scopes joined by "/"; values are unchanged,
the module compiles and runs, and grad / vmap read the function itself."""
import re

import numpy as np
import pytest

import secant
import secant.numpy as snp


def layer(x):
    return snp.tanh(x) * 2


def model(x):
    with secant.named_scope("encoder"):
        y = snp.sin(x)
        with secant.named_scope("inner"):
            y = y * 3
    z = secant.named_call(layer, name="my_layer")(y)
    return z + 1


def expected(x):
    return np.tanh(np.sin(x) * 3) * 2 + 1


X = np.linspace(-1, 1, 4).astype(np.float32)


def locations(text):
    return {op: scope for op, scope in
            re.findall(r'"?stablehlo\.(\w+)"?.*loc\("([^"]*)"\("', text)}


def test_named_scopes_name_the_ops_in_stablehlo():
    text = secant.jit(model).lower(X).as_text()
    named = locations(text)
    assert named["sine"] == "encoder"
    assert named["tanh"] == "my_layer"
    assert re.search(r'stablehlo\.multiply .*loc\("encoder/inner"\(".*":\d+:\d+\)\)', text)
    assert re.search(r'stablehlo\.add .*loc\(".*test_api18_named\.py":\d+:\d+\)', text)
    np.testing.assert_allclose(secant.jit(model)(X), expected(X), rtol=1e-6)


def test_named_call_default_name_and_transforms():
    text = secant.jit(secant.named_call(layer)).lower(X).as_text()
    assert locations(text)["tanh"] == "layer"
    np.testing.assert_allclose(model(X), expected(X), rtol=1e-6)
    g = secant.grad(lambda x: snp.sum(model(x)))(X)
    eps = 1e-3
    fd = [(expected(X + eps * e).sum() - expected(X - eps * e).sum()) / (2 * eps)
          for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-2)
    np.testing.assert_allclose(secant.jit(secant.grad(lambda x: snp.sum(model(x))))(X), g,
                               rtol=1e-5)
    np.testing.assert_allclose(secant.vmap(model)(X), expected(X), rtol=1e-6)


def test_named_scope_name_must_be_a_string():
    with pytest.raises(secant.SecantTypeError, match="must be a string"):
        with secant.named_scope(3):
            pass
