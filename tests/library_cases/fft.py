"""secant.numpy.fft against numpy.fft: every transform with n / s, axes and each norm, from real
and complex inputs (gradients by JAX's convention, through lax.fft's transpose rules)."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case

F, NF = snp.fft, np.fft


def _case(name, fn, ref, shape, complex_=False, id=None):
    return Case("numpy.fft." + name, fn, ref, [shape], complex=complex_, id=id)


CASES = [
    # one axis, complex and real inputs, n shorter and longer, each norm
    _case("fft", F.fft, NF.fft, (3, 5), True, "complex"),
    _case("fft", F.fft, NF.fft, (6,), False, "real"),
    _case("fft", lambda a: F.fft(a, n=7, axis=0, norm="ortho"),
          lambda a: NF.fft(a, n=7, axis=0, norm="ortho"), (4, 3), True, "n_axis_ortho"),
    _case("fft", lambda a: F.fft(a, n=3, norm="forward"),
          lambda a: NF.fft(a, n=3, norm="forward"), (2, 5), True, "truncated_forward"),
    _case("ifft", F.ifft, NF.ifft, (3, 5), True, "complex"),
    _case("ifft", lambda a: F.ifft(a, n=6, axis=0, norm="ortho"),
          lambda a: NF.ifft(a, n=6, axis=0, norm="ortho"), (4, 3), True, "n_axis_ortho"),
    _case("rfft", F.rfft, NF.rfft, (3, 6), id="even"),
    _case("rfft", F.rfft, NF.rfft, (2, 7), id="odd"),
    _case("rfft", lambda a: F.rfft(a, n=9, axis=0, norm="ortho"),
          lambda a: NF.rfft(a, n=9, axis=0, norm="ortho"), (5, 2), id="n_axis_ortho"),
    _case("irfft", F.irfft, NF.irfft, (3, 4), True, "default_n"),
    _case("irfft", lambda a: F.irfft(a, n=7), lambda a: NF.irfft(a, n=7), (2, 4), True, "odd"),
    _case("irfft", lambda a: F.irfft(a, n=4, axis=0, norm="forward"),
          lambda a: NF.irfft(a, n=4, axis=0, norm="forward"), (5, 2), True, "cut_forward"),
    _case("fft2", F.fft2, NF.fft2, (2, 3, 4), True, "complex"),
    _case("ifft2", lambda a: F.ifft2(a, s=(3, 5), norm="ortho"),
          lambda a: NF.ifft2(a, s=(3, 5), norm="ortho"), (2, 4, 4), True, "s_ortho"),
    _case("fftn", F.fftn, NF.fftn, (2, 3, 4), True, "all_axes"),
    _case("fftn", lambda a: F.fftn(a, axes=(0, 1, 2, 3)),
          lambda a: NF.fftn(a, axes=(0, 1, 2, 3)), (2, 2, 3, 2), True, "four_axes"),
    _case("ifftn", lambda a: F.ifftn(a, s=(3, 2), axes=(2, 0)),
          lambda a: NF.ifftn(a, s=(3, 2), axes=(2, 0)), (3, 2, 4), True, "s_axes"),
    _case("rfft2", F.rfft2, NF.rfft2, (2, 3, 4)),
    _case("irfft2", F.irfft2, NF.irfft2, (2, 3, 3), True),
    _case("rfftn", lambda a: F.rfftn(a, s=(4, 5), axes=(0, 2)),
          lambda a: NF.rfftn(a, s=(4, 5), axes=(0, 2)), (3, 2, 4), id="s_axes"),
    _case("rfftn", lambda a: F.rfftn(a, axes=(0, 1, 2, 3)),
          lambda a: NF.rfftn(a, axes=(0, 1, 2, 3)), (2, 3, 2, 4), id="four_axes"),
    _case("irfftn", lambda a: F.irfftn(a, s=(3, 5)), lambda a: NF.irfftn(a, s=(3, 5), axes=(-2, -1)),
          (2, 3, 3), True, "s_odd"),
    _case("irfftn", lambda a: F.irfftn(a, axes=(0, 1, 2, 3), norm="ortho"),
          lambda a: NF.irfftn(a, axes=(0, 1, 2, 3), norm="ortho"), (2, 2, 3, 3), True,
          "four_axes_ortho"),
    _case("hfft", F.hfft, NF.hfft, (2, 4), True),
    _case("hfft", lambda a: F.hfft(a, n=5, norm="ortho"),
          lambda a: NF.hfft(a, n=5, norm="ortho"), (3, 3), True, "odd_ortho"),
    _case("ihfft", F.ihfft, NF.ihfft, (2, 6)),
    _case("ihfft", lambda a: F.ihfft(a, n=5, axis=0, norm="forward"),
          lambda a: NF.ihfft(a, n=5, axis=0, norm="forward"), (4, 2), id="n_forward"),
    _case("fftshift", F.fftshift, NF.fftshift, (3, 4), True),
    _case("fftshift", lambda a: F.fftshift(a, axes=1), lambda a: NF.fftshift(a, axes=1),
          (3, 5), id="axis"),
    _case("ifftshift", F.ifftshift, NF.ifftshift, (3, 5), True),
    # no derivative to check: constants of n and d
    Case("numpy.fft.fftfreq", lambda a: F.fftfreq(5, 0.5) + 0 * a[0],
         lambda a: NF.fftfreq(5, 0.5) + 0 * a[0], [(1,)], id="n5"),
    Case("numpy.fft.rfftfreq", lambda a: F.rfftfreq(6) + 0 * a[0],
         lambda a: NF.rfftfreq(6) + 0 * a[0], [(1,)], id="n6"),
]
