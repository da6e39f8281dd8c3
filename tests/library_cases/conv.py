"""lax.conv_general_dilated and its wrappers, lax.reduce_window and nn's pooling, against a
direct loop reference (tests/library_cases/conv.py's own, independent of the im2col eager
implementation)."""
import itertools

import numpy as np

import secant.nn as nn
from secant import lax
from tests.library_cases import Case


def _specs(dimension_numbers, ndim):
    if dimension_numbers is None:
        return tuple(range(ndim)), tuple(range(ndim)), tuple(range(ndim))
    lhs, rhs, out = dimension_numbers

    def perm(spec, a, b):
        spatial = sorted((i for i, c in enumerate(spec) if c not in (a, b)),
                         key=lambda i: rhs.index(spec[i]))
        return (spec.index(a), spec.index(b)) + tuple(spatial)
    return perm(lhs, "N", "C"), perm(rhs, "O", "I"), perm(out, "N", "C")


def same_pads(sizes, windows, strides):
    out = []
    for n, k, s in zip(sizes, windows, strides):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        out.append((total // 2, total - total // 2))
    return out


def ref_conv(x, w, strides, padding, lhs_dilation=None, rhs_dilation=None,
             dimension_numbers=None, feature_group_count=1, batch_group_count=1):
    """out[n, o, y] = sum_{c, k} xpad[n, g*C + c, y*s + k*d] * w[o, c, k] with explicit loops."""
    ls, rs, os_ = _specs(dimension_numbers, x.ndim)
    x = np.transpose(x, ls)
    w = np.transpose(w, rs)
    sp = x.ndim - 2
    lhs_dilation = lhs_dilation or (1,) * sp
    rhs_dilation = rhs_dilation or (1,) * sp
    if isinstance(padding, str):
        win = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dilation)]
        padding = [(0, 0)] * sp if padding == "VALID" else same_pads(x.shape[2:], win, strides)
    # dilate and pad the input by hand
    dil = [(n - 1) * d + 1 for n, d in zip(x.shape[2:], lhs_dilation)]
    xd = np.zeros(x.shape[:2] + tuple(dil), x.dtype)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dilation)] = x
    padded_shape = [n + lo + hi for n, (lo, hi) in zip(dil, padding)]
    xp = np.zeros(x.shape[:2] + tuple(padded_shape), x.dtype)
    for idx in itertools.product(*[range(n) for n in dil]):
        target = tuple(i + lo for i, (lo, _) in zip(idx, padding))
        if all(0 <= t < p for t, p in zip(target, padded_shape)):
            xp[(slice(None), slice(None)) + target] = xd[(slice(None), slice(None)) + idx]
    k_span = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dilation)]
    out_sp = [(p - k) // s + 1 for p, k, s in zip(padded_shape, k_span, strides)]
    G, B = feature_group_count, batch_group_count
    N, C, O = x.shape[0] // B, w.shape[1], w.shape[0]
    groups = max(G, B)
    out = np.zeros((N, O) + tuple(out_sp), np.result_type(x, w))
    for n, o in itertools.product(range(N), range(O)):
        grp = o // (O // groups)
        nn_ = n + grp * N if B > 1 else n
        for y in itertools.product(*[range(m) for m in out_sp]):
            total = 0
            for c in range(C):
                cc = c + grp * C if G > 1 else c
                for k in itertools.product(*[range(m) for m in w.shape[2:]]):
                    pos = tuple(yy * s + kk * d for yy, s, kk, d in zip(y, strides, k,
                                                                        rhs_dilation))
                    total += xp[(nn_, cc) + pos] * w[(o, c) + k]
            out[(n, o) + y] = total
    return np.transpose(out, np.argsort(os_))


def ref_reduce_window(x, kind, window, strides, padding, base=None, wdil=None):
    nd = x.ndim
    base = base or (1,) * nd
    wdil = wdil or (1,) * nd
    init = {"sum": 0.0, "max": -np.inf, "min": np.inf}[kind]
    dil = [(n - 1) * b + 1 for n, b in zip(x.shape, base)]
    span = [(k - 1) * d + 1 for k, d in zip(window, wdil)]
    if isinstance(padding, str):
        padding = [(0, 0)] * nd if padding == "VALID" else same_pads(dil, span, strides)
    xd = np.full(dil, init)
    xd[tuple(slice(None, None, b) for b in base)] = x
    xp = np.pad(xd, padding, constant_values=init)
    out_shape = [(p - k) // s + 1 for p, k, s in zip(xp.shape, span, strides)]
    out = np.empty(out_shape)
    red = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    for y in itertools.product(*[range(m) for m in out_shape]):
        vals = [xp[tuple(yy * s + kk * d for yy, s, kk, d in zip(y, strides, k, wdil))]
                for k in itertools.product(*[range(m) for m in window])]
        out[y] = red(vals)
    return out


NHWC = ("NHWC", "HWIO", "NHWC")
CGD = lax.conv_general_dilated

CASES = [
    Case("lax.conv_general_dilated", lambda x, w: CGD(x, w, (1, 1), "VALID"),
         lambda x, w: ref_conv(x, w, (1, 1), "VALID"), [(2, 3, 5, 4), (2, 3, 3, 2)],
         id="nchw-valid"),
    Case("lax.conv_general_dilated", lambda x, w: CGD(x, w, (2, 1), "SAME", rhs_dilation=(1, 2)),
         lambda x, w: ref_conv(x, w, (2, 1), "SAME", rhs_dilation=(1, 2)),
         [(1, 2, 5, 6), (3, 2, 3, 2)], id="same-strided-atrous"),
    Case("lax.conv_general_dilated",
         lambda x, w: CGD(x, w, (1, 2), ((1, 0), (2, -1)), lhs_dilation=(2, 1),
                          dimension_numbers=NHWC),
         lambda x, w: ref_conv(x, w, (1, 2), ((1, 0), (2, -1)), lhs_dilation=(2, 1),
                               dimension_numbers=NHWC),
         [(2, 3, 5, 2), (2, 3, 2, 3)], id="nhwc-explicit-lhs-dilated"),
    Case("lax.conv_general_dilated",
         lambda x, w: CGD(x, w, (1,), "SAME", feature_group_count=2),
         lambda x, w: ref_conv(x, w, (1,), "SAME", feature_group_count=2),
         [(2, 4, 6), (4, 2, 3)], id="feature-groups"),
    Case("lax.conv_general_dilated",
         lambda x, w: CGD(x, w, (2,), "VALID", batch_group_count=2),
         lambda x, w: ref_conv(x, w, (2,), "VALID", batch_group_count=2),
         [(4, 2, 7), (4, 2, 3)], id="batch-groups"),
    Case("lax.conv_general_dilated",
         lambda x, w: CGD(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "HWIO", "NHWC")),
         lambda x, w: ref_conv(x, w, (1, 1), "SAME",
                               dimension_numbers=("NCHW", "HWIO", "NHWC")),
         # (values only: the harness's complex loss needs snp.real of complex arrays, which
         # this branch does not have yet)
         [(1, 2, 4, 3), (2, 2, 2, 3)], differentiable=False, complex=True,
         id="complex-mixed-layouts"),
    Case("lax.conv", lambda x, w: lax.conv(x, w, (1, 2), "SAME"),
         lambda x, w: ref_conv(x, w, (1, 2), "SAME"), [(2, 2, 4, 5), (3, 2, 2, 2)]),
    Case("lax.conv_with_general_padding",
         lambda x, w: lax.conv_with_general_padding(x, w, (1, 1), ((0, 1), (1, 1)), (1, 2),
                                                    (2, 1)),
         lambda x, w: ref_conv(x, w, (1, 1), ((0, 1), (1, 1)), (1, 2), (2, 1)),
         [(1, 2, 4, 3), (2, 2, 2, 2)]),
    Case("lax.conv_transpose",
         lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME"),
         None, [(1, 3, 3, 2), (3, 3, 2, 2)], id="same"),
    Case("lax.conv_transpose",
         lambda x, w: lax.conv_transpose(x, w, (2,), "VALID", dimension_numbers=("NCH", "OIH",
                                                                                  "NCH"),
                                         transpose_kernel=True),
         None, [(2, 3, 4), (3, 2, 3)], id="valid-transpose-kernel"),
    Case("lax.reduce_window", lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 3), (1, 2),
                                                          "SAME"),
         lambda x: ref_reduce_window(x, "sum", (2, 3), (1, 2), "SAME"), [(4, 7)], id="sum"),
    Case("lax.reduce_window", lambda x: lax.reduce_window(x, -np.inf, lax.max, (1, 3, 3),
                                                          (1, 2, 2), "VALID"),
         lambda x: ref_reduce_window(x, "max", (1, 3, 3), (1, 2, 2), "VALID"), [(2, 5, 6)],
         id="max"),
    Case("lax.reduce_window", lambda x: lax.reduce_window(x, np.inf, lax.min, (2, 2), (1, 1),
                                                          ((1, 0), (0, 2)),
                                                          window_dilation=(1, 2)),
         lambda x: ref_reduce_window(x, "min", (2, 2), (1, 1), ((1, 0), (0, 2)),
                                     wdil=(1, 2)), [(4, 5)], id="min-explicit-dilated"),
    Case("lax.reduce_window", lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (1,),
                                                          "VALID", base_dilation=(2,)),
         lambda x: ref_reduce_window(x, "sum", (2,), (1,), "VALID", base=(2,)), [(5,)],
         id="sum-base-dilated"),
    Case("nn.max_pool", lambda x: nn.max_pool(x, (2, 2), (2, 2), "SAME"),
         lambda x: ref_reduce_window(x, "max", (1, 2, 2, 1), (1, 2, 2, 1), "SAME"),
         [(2, 5, 4, 2)]),
    Case("nn.avg_pool", lambda x: nn.avg_pool(x, (3,), padding=((1, 1),)),
         lambda x: ref_reduce_window(x, "sum", (1, 3, 1), (1, 1, 1), ((0, 0), (1, 1), (0, 0)))
         / 3, [(2, 5, 3)]),
    Case("nn.sum_pool", lambda x: nn.sum_pool(x, (2, 2)),
         lambda x: ref_reduce_window(x, "sum", (1, 2, 2, 1), (1, 1, 1, 1), "VALID"),
         [(1, 3, 3, 2)]),
]
