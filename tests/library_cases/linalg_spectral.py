"""numpy.linalg's spectral family (secant/numpy/linalg_spectral.py). Outputs that are only
defined up to a sign or phase per column (eigenvectors, singular vectors) are checked through
gauge-invariant functions of them: |v|^2, projectors V f(w) V^H, the polar factor U Vh.

Complex inputs and eig/eigvals (complex results even for real input) included."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case, spd, well_conditioned


la = snp.linalg


def _h(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def _np_h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _sqrtm(a):
    w, v = la.eigh(a)
    return (v * snp.sqrt(w)[..., None, :]) @ _h(v)


def _np_sqrtm(a):
    w, v = np.linalg.eigh(a)
    return (v * np.sqrt(w)[..., None, :]) @ _np_h(v)


def _polar(a):
    u, s, vh = la.svd(a, full_matrices=False)
    return u @ vh


def _np_polar(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u @ vh


def _rebuild(a):
    u, s, vh = la.svd(a, full_matrices=False)
    return (u * s[..., None, :]) @ vh


def _eig_rebuild(a):
    w, v = la.eig(a)
    return (v * w[..., None, :]) @ la.pinv(v)


def _norms(order):
    # (a closure, not a default argument: grad of `lambda a, o=o: ...` is wrong, see the report)
    return (lambda a: la.matrix_norm_spectral(a, order, (0, 2), True),
            lambda a: np.linalg.norm(a, order, (0, 2), True))


CASES = []
for _cplx in (False, True):
    _k = "complex" if _cplx else "real"
    CASES += [
        Case("numpy.linalg.eigvalsh", la.eigvalsh, np.linalg.eigvalsh, [(4, 4)], spd,
             complex=_cplx, id=_k),
        Case("numpy.linalg.eigh", lambda a: la.eigh(a)[0], lambda a: np.linalg.eigh(a)[0],
             [(3, 3)], spd, complex=_cplx, id="values-" + _k),
        Case("numpy.linalg.eigh", lambda a: snp.abs(la.eigh(a)[1]) ** 2,
             lambda a: np.abs(np.linalg.eigh(a)[1]) ** 2, [(3, 3)], spd, complex=_cplx,
             id="vectors-squared-" + _k),
        Case("numpy.linalg.eigh", _sqrtm, _np_sqrtm, [(3, 3)], spd, complex=_cplx,
             id="sqrtm-" + _k),
        Case("numpy.linalg.svd", lambda a: la.svd(a, compute_uv=False),
             lambda a: np.linalg.svd(a, compute_uv=False), [(4, 3)], complex=_cplx,
             id="values-tall-" + _k),
        Case("numpy.linalg.svdvals", la.svdvals, lambda a: np.linalg.svd(a, compute_uv=False),
             [(2, 5)], complex=_cplx, id="wide-" + _k),
        Case("numpy.linalg.svd", _polar, _np_polar, [(4, 3)], complex=_cplx,
             id="polar-tall-" + _k),
        Case("numpy.linalg.svd", _polar, _np_polar, [(3, 5)], complex=_cplx,
             id="polar-wide-" + _k),
        Case("numpy.linalg.svd", _rebuild, lambda a: a, [(3, 4)], complex=_cplx,
             id="rebuild-" + _k),
        Case("numpy.linalg.svd", lambda a: snp.abs(la.svd(a, full_matrices=False)[0]) ** 2,
             lambda a: np.abs(np.linalg.svd(a, full_matrices=False)[0]) ** 2, [(4, 3)],
             complex=_cplx, id="u-squared-" + _k),
        Case("numpy.linalg.svd", lambda a: snp.abs(la.svd(a)[2]) ** 2,
             lambda a: np.abs(np.linalg.svd(a)[2]) ** 2, [(3, 3)], complex=_cplx,
             id="vh-squared-full-square-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a)[0], lambda a: np.linalg.qr(a)[0], [(4, 3)],
             complex=_cplx, id="q-tall-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a)[1], lambda a: np.linalg.qr(a)[1], [(4, 3)],
             complex=_cplx, id="r-tall-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a, "complete")[0],
             lambda a: np.linalg.qr(a, "complete")[0], [(3, 3)], complex=_cplx,
             id="q-complete-square-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a, "r"), lambda a: np.linalg.qr(a, "r"),
             [(3, 3)], complex=_cplx, id="r-mode-" + _k),
        Case("numpy.linalg.pinv", la.pinv, np.linalg.pinv, [(4, 3)], complex=_cplx,
             id="tall-" + _k),
        Case("numpy.linalg.pinv", la.pinv, np.linalg.pinv, [(2, 4)], complex=_cplx,
             id="wide-" + _k),
        Case("numpy.linalg.eigvals", lambda a: snp.sum(la.eigvals(a) ** 2, axis=-1),
             lambda a: np.sum(np.linalg.eigvals(a.astype(complex)) ** 2, axis=-1), [(3, 3)], well_conditioned,
             complex=_cplx, id="power-sum-" + _k),
        Case("numpy.linalg.eig", lambda a: snp.prod(la.eig(a)[0], axis=-1),
             lambda a: np.prod(np.linalg.eig(a.astype(complex))[0], axis=-1), [(3, 3)], well_conditioned,
             complex=_cplx, id="det-" + _k),
        Case("numpy.linalg.eig", _eig_rebuild, lambda a: a, [(3, 3)], well_conditioned,
             complex=_cplx, id="vectors-rebuild-" + _k),
        Case("numpy.linalg.eig", lambda a: snp.abs(la.eig(a)[1]) ** 2,
             lambda a: np.abs(np.linalg.eig(a.astype(complex))[1]) ** 2, [(3, 3)],
             well_conditioned, complex=_cplx, id="vectors-squared-" + _k),
        Case("numpy.linalg.svd", lambda a: la.svd(a)[1], lambda a: np.linalg.svd(a)[1],
             [(4, 2)], complex=_cplx, id="values-of-full-tall-" + _k),
        Case("numpy.linalg.svd", lambda a: snp.abs(la.svd(a)[0][..., :2]) ** 2,
             lambda a: np.abs(np.linalg.svd(a)[0][..., :2]) ** 2, [(4, 2)], complex=_cplx,
             id="full-u-leading-columns-" + _k),
        Case("numpy.linalg.svd", lambda a: snp.abs(la.svd(a)[2][..., :2, :]) ** 2,
             lambda a: np.abs(np.linalg.svd(a)[2][..., :2, :]) ** 2, [(2, 4)], complex=_cplx,
             id="full-vh-leading-rows-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a)[0], lambda a: np.linalg.qr(a)[0], [(2, 4)],
             complex=_cplx, id="q-wide-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a)[1], lambda a: np.linalg.qr(a)[1], [(2, 4)],
             complex=_cplx, id="r-wide-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a, "complete")[0][..., :2],
             lambda a: np.linalg.qr(a, "complete")[0][..., :2], [(4, 2)], complex=_cplx,
             id="q-complete-tall-leading-" + _k),
        Case("numpy.linalg.qr", lambda a: la.qr(a, "complete")[1],
             lambda a: np.linalg.qr(a, "complete")[1], [(4, 2)], complex=_cplx,
             id="r-complete-tall-" + _k),
        Case("numpy.linalg.lstsq", lambda a, b: la.lstsq(a, b)[0],
             lambda a, b: np.linalg.lstsq(a, b)[0], [(5, 3), (5, 2)], complex=_cplx,
             id="x-" + _k),
        Case("numpy.linalg.lstsq", lambda a, b: la.lstsq(a, b)[1],
             lambda a, b: np.linalg.lstsq(a, b)[1], [(5, 3), (5,)], complex=_cplx,
             id="residuals-" + _k),
        Case("numpy.linalg.lstsq", lambda a, b: la.lstsq(a, b)[3],
             lambda a, b: np.linalg.lstsq(a, b)[3], [(3, 4), (3,)], complex=_cplx,
             id="s-" + _k),
        Case("numpy.linalg.matrix_rank", la.matrix_rank, np.linalg.matrix_rank, [(4, 3)],
             differentiable=False, complex=_cplx, id=_k),
    ]
    for _ord in (2, -2, "nuc"):
        CASES.append(Case("numpy.linalg.matrix_norm_spectral", *_norms(_ord), [(3, 2, 4)],
                          complex=_cplx, id=f"{_ord}-{_k}"))


