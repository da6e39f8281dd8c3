"""A corpus of functions written the way users write JAX code, the yardstick of issue 15.

Each theme module (containers, callees, syntax, models, scalar) holds plain functions and a
list `CASES` of `Case` records: the function, example float64 inputs, the argument to
differentiate, and what the harness (tests/test_corpus.py, bench/corpus_report.py) may ask of
it. `ALL` is every case, in module order; `BY_NAME` finds one by its id.
"""
import dataclasses
from typing import Any, Callable, Optional

import numpy as np


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable
    args: tuple
    argnums: int = 0                 # the argument differentiated (a pytree of float arrays)
    in_axes: Any = None              # vmap's in_axes; None: 0 for args[argnums], None elsewhere
    vmappable: bool = True           # False: vmap of it is not meaningful (e.g. prints per call)
    ref: Optional[Callable] = None   # an eager reference for fn when fn itself cannot run eagerly
    closed: dict = dataclasses.field(default_factory=dict)   # order n -> d^n f/dx^n (scalar x)
    note: str = ""

    @property
    def axes(self):
        if self.in_axes is not None:
            return tuple(self.in_axes)
        return tuple(0 if i == self.argnums else None for i in range(len(self.args)))

    @property
    def scalar(self):
        """A scalar-to-scalar function: it gets grad to the 4th order."""
        return len(self.args) == 1 and isinstance(self.args[0], float)

    @property
    def eager(self):
        return self.ref if self.ref is not None else self.fn


def rng(seed):
    return np.random.default_rng(seed)


def vec(seed, *shape, scale=1.0):
    """float64 example input of `shape`, deterministic per seed, entries in about [-scale, scale]."""
    return scale * rng(seed).uniform(-1.0, 1.0, size=shape)


def pos(seed, *shape):
    """float64 example input with entries in [0.5, 1.5] (logs, square roots)."""
    return rng(seed).uniform(0.5, 1.5, size=shape)


def _collect():
    from corpus import callees, containers, models, scalar, syntax
    cases = []
    for mod in (containers, callees, syntax, models, scalar):
        cases.extend(mod.CASES)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate corpus case names: {sorted(dup)}"
    return cases


ALL = _collect()
BY_NAME = {c.name: c for c in ALL}
