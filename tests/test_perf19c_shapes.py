"""transformer/shapes.py's fixpoint works a name out again only when a name it read changed
(issue 19: the rounds re-read every definition, and the symbol sets of a long model grow with
it). It must find what working out every name on every round finds: checked here against that
plain iteration, on every Shapes analysis grad, jvp and vmap build for programs with loops,
branches, carried accumulators, reductions and Python-number counters."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.transformer.shapes import UNKNOWN, Shapes


class _EveryRound(Shapes):
    """The analysis as it was: every name worked out again on every round."""

    def _solve(self):
        for _ in range(20):
            changed = False
            for name, defs in self.defs.items():
                if name in self.static:
                    continue
                new = self._alternatives(name, defs)
                if (self.alts.get(name, frozenset()), self.active.get(name, frozenset())) != new:
                    self.alts[name], self.active[name] = new
                    changed = True
            if not changed:
                return
        for name in self.defs:
            self.alts[name] = self.active[name] = UNKNOWN


def model(x, y, w):
    for k in range(2):
        h = snp.tanh(x @ w + y)
        z = h - snp.max(h, axis=-1, keepdims=True)
        logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
        acc = snp.zeros_like(x)
        for i in range(3):
            acc = acc + snp.sin(x * i)
        q, p = x, h
        for _ in range(2):
            p = p - 0.05 * q
            q = q + 0.05 * p
        x = snp.tanh(q + 0.1 * acc) + 0.001 * snp.sum(logp)
    return snp.sum(x)


def branches(x, y):
    s = 0.0
    n = x.shape[0]
    i = 0
    while i < 3:
        if s > 1.0:
            s = s + snp.sum(x * y) / n
        else:
            s = s * 0.5 + snp.mean(snp.exp(x))
        i = i + 1
    t = x
    for j in range(2):
        t = t * y + s
    return snp.sum(t) + s


def carried(x, y):
    a = x
    b = 1.0
    for _ in range(3):
        a, b = a * b + y, snp.sum(a) * 0.5
        c = a - snp.mean(a, axis=0)
        a = snp.where(c > 0, c, a)
    return snp.sum(a * b)


CASES = [(model, (np.ones((2, 3)) * 0.3, np.ones(3) * 0.2, np.eye(3) * 0.5)),
         (branches, (np.linspace(0.1, 0.5, 4), np.linspace(0.2, 0.9, 4))),
         (carried, (np.linspace(0.1, 0.5, 4), np.linspace(-0.3, 0.4, 4)))]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_fixpoint_finds_what_every_round_finds(f, args, monkeypatch, x64):
    built = []
    init = Shapes.__init__

    def recording(self, fn):
        init(self, fn)
        built.append((self, fn))
    monkeypatch.setattr(Shapes, "__init__", recording)
    monkeypatch.setattr(_EveryRound, "__init__", init)
    g = secant.grad(f, argnums=tuple(range(len(args))))(*args)
    secant.jvp(f, args, args)
    secant.vmap(f, in_axes=(0,) + (None,) * (len(args) - 1))(
        *((np.stack([args[0], args[0] * 0.5]),) + args[1:]))
    assert built, "no shape analysis was built"
    for got, fn in built:
        want = _EveryRound(fn)
        assert got.static == want.static
        assert got.alts == want.alts
        assert got.active == want.active
        assert got.local == want.local
    # the values themselves: the gradient against central differences (float64)
    eps = 1e-6
    for k, a in enumerate(args):
        a = np.asarray(a, dtype=np.float64)
        fd = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up, down = a.copy(), a.copy()
            up[idx] += eps
            down[idx] -= eps
            hi = f(*(args[:k] + (up,) + args[k + 1:]))
            lo = f(*(args[:k] + (down,) + args[k + 1:]))
            fd[idx] = (float(hi) - float(lo)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g[k], dtype=np.float64), fd, rtol=1e-6, atol=1e-8)
