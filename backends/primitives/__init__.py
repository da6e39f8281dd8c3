"""The primitive registry's contents, one module per family. Importing this package registers all."""
from secant.backends.primitives import elementwise, structural, indexing, collectives  # noqa: F401,E501
from secant.backends.primitives import conv  # noqa: F401,E402
from secant.backends.primitives import linalg_spectral  # noqa: F401,E402
from secant.backends.primitives import complex  # noqa: F401  (complex parts, fft)
from secant.backends.primitives import linalg  # noqa: F401,E402
from secant.backends.primitives import callback  # noqa: F401,E402  (host callbacks)
from secant.backends.primitives.common import broadcast_shapes, type_error  # noqa: F401
