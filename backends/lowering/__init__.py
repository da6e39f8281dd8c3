"""StableHLO lowering, one row per primitive, one module per family (same families as primitives/).

LOWERINGS[name](body, in_avals, out_aval, *operands, **params) writes ops into `body` (an
emitter.Body) and returns the result name (a list of names for multiple-result primitives).
"""
from secant.backends.lowering.common import LOWERINGS, lowering  # noqa: F401
from secant.backends.lowering import elementwise, structural, indexing, collectives  # noqa: F401,E501
from secant.backends.lowering import conv  # noqa: F401,E402
from secant.backends.lowering import linalg_spectral  # noqa: F401,E402
from secant.backends.lowering import complex  # noqa: F401  (complex parts, fft)
from secant.backends.lowering import linalg  # noqa: F401,E402
from secant.backends.lowering import callback  # noqa: F401,E402  (host callbacks)
