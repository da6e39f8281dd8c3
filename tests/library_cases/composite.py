"""Functions differentiated through their sources (secant/numpy/sources.py)."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case

CASES = [
    Case("numpy.roll", lambda a: snp.roll(a, 1), lambda a: np.roll(a, 1), [(3, 4)], id="flat"),
    Case("numpy.roll", lambda a: snp.roll(a, (1, -2), (0, 1)),
         lambda a: np.roll(a, (1, -2), (0, 1)), [(3, 4)], id="axes"),
]
