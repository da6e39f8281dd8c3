"""scipy.special.erfcx (exp(x^2) erfc(x)) against SciPy across its three regions and out to
1e9 and -26 (inf below, as SciPy), and its derivative against the closed form."""
import numpy as np
import scipy.special as ss

import secant
from secant.scipy import special


def test_values_and_derivative(x64):
    x = np.array([-26.0, -5.0, -1.0, -0.5, 0.0, 0.3, 0.99, 1.0, 2.0, 8.0, 30.0, 1e3, 1e9])
    np.testing.assert_allclose(np.asarray(special.erfcx(x)), ss.erfcx(x), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(secant.jit(special.erfcx)(x)), ss.erfcx(x), rtol=1e-14)
    assert np.isinf(float(special.erfcx(-30.0))) and float(special.erfcx(np.inf)) == 0.0
    xs = x[1:-2]
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(special.erfcx))(xs)),
                               2 * xs * ss.erfcx(xs) - 2 / np.sqrt(np.pi), rtol=1e-9,
                               atol=1e-15)
