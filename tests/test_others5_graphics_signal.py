"""Issue 15, code written by others (fifth round): graphics and signal processing as users write
them with JAX: a soft rasteriser (sigmoid edge functions of a triangle over a pixel grid), ray
tracing spheres (the quadratic's root under where for misses, Lambertian shading), NeRF-style
volume rendering (transmittance by an exclusive cumprod), bilinear texture sampling with floor
and integer gathers, a pinhole camera with a Rodrigues rotation; FFT convolution, an STFT
magnitude loss (frames gathered by an index matrix, a Hann window, rfft and abs), an IIR filter
as a scan, autocorrelation by zero-padded FFT, and a log-mel energy; each under the transforms
its author would use, checked against float64 finite differences, NumPy, a Python loop and
eager."""
import numpy as np

import secant.numpy as jnp
from secant import jacfwd, jacrev, jvp, lax, nn, vmap

from others15_check import check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(5555)


# --- graphics ----------------------------------------------------------------------------------
PIX = np.stack(np.meshgrid(np.linspace(0, 1, 12), np.linspace(0, 1, 12)), -1).reshape(-1, 2)


def soft_rasterise(verts, pix, sharpness=40.0):
    def edge(a, b, p):
        return (b[0] - a[0]) * (p[..., 1] - a[1]) - (b[1] - a[1]) * (p[..., 0] - a[0])
    e0 = edge(verts[0], verts[1], pix)
    e1 = edge(verts[1], verts[2], pix)
    e2 = edge(verts[2], verts[0], pix)
    return nn.sigmoid(sharpness * e0) * nn.sigmoid(sharpness * e1) * nn.sigmoid(sharpness * e2)


def test_soft_rasteriser(x64):
    verts = np.array([[0.2, 0.2], [0.8, 0.3], [0.4, 0.85]])
    target = np.asarray(soft_rasterise(to_snp(verts + 0.05), to_snp(PIX)))
    img = soft_rasterise(to_snp(verts), to_snp(PIX))
    # the coverage integrates to about the triangle's area (0.185) over the unit square
    (ax, ay), (bx, by) = verts[1] - verts[0], verts[2] - verts[0]
    area = 0.5 * abs(ax * by - ay * bx)
    assert abs(float(jnp.mean(img)) - area) < 0.08
    loss = lambda v: jnp.mean((soft_rasterise(v, to_snp(PIX)) - to_snp(target)) ** 2)
    check_grad(loss, verts)
    check_vmap(lambda v: soft_rasterise(v, to_snp(PIX)), (verts + 0.02 * RNG.normal(size=(3, 3, 2)),))


def trace_ray(origin, direction, centre, radius, light=np.array([0.577, 0.577, 0.577])):
    oc = origin - centre
    b = jnp.dot(oc, direction)
    c = jnp.dot(oc, oc) - radius ** 2
    disc = b ** 2 - c
    hit = disc > 0
    t = -b - jnp.sqrt(jnp.where(hit, disc, 1.0))
    normal = (origin + t * direction - centre) / radius
    return jnp.where(hit, jnp.maximum(jnp.dot(normal, light), 0.0), 0.0)


def render(centre, radius, n=6):
    us = jnp.linspace(-0.5, 0.5, n)
    dirs = jnp.stack(jnp.meshgrid(us, us), -1).reshape(-1, 2)
    dirs = jnp.concatenate([dirs, jnp.ones((n * n, 1))], axis=1)
    dirs = dirs / jnp.linalg.norm(dirs, axis=1, keepdims=True)
    return vmap(trace_ray, in_axes=(None, 0, None, None))(jnp.zeros(3), dirs, centre, radius)


def test_ray_traced_sphere(x64):
    centre, radius = np.array([0.1, -0.05, 3.0]), 1.0
    img = render(to_snp(centre), radius)
    # against a loop over pixels in NumPy
    us = np.linspace(-0.5, 0.5, 6)
    light = np.array([0.577, 0.577, 0.577])
    for k, (v, u) in enumerate([(v, u) for v in us for u in us]):
        d = np.array([u, v, 1.0]) / np.linalg.norm([u, v, 1.0])
        b = -d @ centre
        disc = b ** 2 - (centre @ centre - 1.0)
        want = max((((-b - np.sqrt(disc)) * d - centre) @ light), 0.0) if disc > 0 else 0.0
        np.testing.assert_allclose(img[k], want, rtol=1e-10, atol=1e-12)
    target = np.asarray(render(to_snp(centre + 0.1), 1.1))
    loss = lambda c, r: jnp.sum((render(c, r) - to_snp(target)) ** 2)
    check_grad(loss, centre, np.array(radius))
    check_grad(loss, centre, np.array(radius), argnum=1)


def volume_render(sigmas, colors, deltas):
    alpha = 1.0 - jnp.exp(-sigmas * deltas)
    trans = jnp.cumprod(jnp.concatenate([jnp.ones(1), 1.0 - alpha[:-1] + 1e-10]))
    weights = alpha * trans
    return jnp.sum(weights[:, None] * colors, axis=0), weights


def test_nerf_volume_rendering(x64):
    n = 10
    sigmas, colors = RNG.uniform(0, 2, size=n), RNG.uniform(size=(n, 3))
    deltas = np.full(n, 0.2)
    rgb, w = volume_render(to_snp(sigmas), to_snp(colors), to_snp(deltas))
    np.testing.assert_allclose(np.sum(w), 1 - np.exp(-np.sum(sigmas * deltas)), rtol=1e-8)
    loss = lambda s, c: jnp.sum((volume_render(s, c, to_snp(deltas))[0] - 0.5) ** 2)
    check_grad(loss, sigmas, colors)
    check_grad(loss, sigmas, colors, argnum=1)
    rays = (RNG.uniform(0, 2, size=(4, n)), RNG.uniform(size=(4, n, 3)))
    check_vmap(lambda s, c: volume_render(s, c, to_snp(deltas)), rays)


def bilinear(texture, uv):
    h, w = texture.shape
    x, y = uv[0] * (w - 1), uv[1] * (h - 1)
    x0, y0 = jnp.floor(x).astype(jnp.int32), jnp.floor(y).astype(jnp.int32)
    x0, y0 = jnp.clip(x0, 0, w - 2), jnp.clip(y0, 0, h - 2)
    fx, fy = x - x0, y - y0
    return ((1 - fx) * (1 - fy) * texture[y0, x0] + fx * (1 - fy) * texture[y0, x0 + 1]
            + (1 - fx) * fy * texture[y0 + 1, x0] + fx * fy * texture[y0 + 1, x0 + 1])


def test_bilinear_texture_sampling(x64):
    tex = RNG.normal(size=(5, 6))
    uvs = RNG.uniform(0.05, 0.95, size=(7, 2))
    sample = vmap(bilinear, in_axes=(None, 0))
    # a linear texture is reproduced exactly
    lin = np.add.outer(np.arange(5) * 0.3, np.arange(6) * -0.7)
    np.testing.assert_allclose(sample(to_snp(lin), to_snp(uvs)),
                               uvs[:, 1] * 4 * 0.3 - uvs[:, 0] * 5 * 0.7, rtol=1e-10)
    check_grad(lambda t, uv: jnp.sum(sample(t, uv) ** 2), tex, uvs)
    check_grad(lambda t, uv: jnp.sum(sample(t, uv) ** 2), tex, uvs, argnum=1)
    check_vmap(lambda uv: bilinear(to_snp(tex), uv), (uvs,))


def rodrigues(omega):
    theta = jnp.sqrt(jnp.sum(omega ** 2))
    k = omega / theta
    kx = jnp.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return jnp.eye(3) + jnp.sin(theta) * kx + (1 - jnp.cos(theta)) * kx @ kx


def project(pose, points, focal=1.2):
    cam = points @ rodrigues(pose[:3]).T + pose[3:]
    return focal * cam[:, :2] / cam[:, 2:3]


def test_pinhole_camera_pose_jacobian(x64):
    pose = np.array([0.1, -0.2, 0.05, 0.0, 0.1, 4.0])
    points = RNG.normal(size=(5, 3))
    r = np.asarray(rodrigues(to_snp(pose[:3])))
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, rtol=1e-12)
    j_f = jacfwd(project)(to_snp(pose), to_snp(points))
    j_r = jacrev(project)(to_snp(pose), to_snp(points))
    np.testing.assert_allclose(j_f, j_r, rtol=1e-10, atol=1e-12)
    t = RNG.normal(size=6)
    np.testing.assert_allclose(np.tensordot(np.asarray(j_f), t, 1),
                               fd_jvp(lambda p: project(p, to_snp(points)), (to_snp(pose),), (t,)),
                               rtol=1e-6, atol=1e-8)
    # bundle-adjustment style reprojection loss
    obs = np.asarray(project(to_snp(pose + 0.01), to_snp(points)))
    check_grad(lambda p, x: jnp.sum((project(p, x) - to_snp(obs)) ** 2), pose, points)


# --- signal processing -------------------------------------------------------------------------
def fft_convolve(x, k):
    n = x.shape[0] + k.shape[0] - 1
    return jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n)


def test_fft_convolution(x64):
    x, k = RNG.normal(size=16), RNG.normal(size=5)
    np.testing.assert_allclose(fft_convolve(to_snp(x), to_snp(k)), np.convolve(x, k),
                               rtol=1e-10, atol=1e-12)
    target = RNG.normal(size=20)
    loss = lambda k, x: jnp.sum((fft_convolve(x, k) - to_snp(target)) ** 2)
    check_grad(loss, k, x)
    check_grad(loss, k, x, argnum=1)
    check_vmap(lambda x: fft_convolve(x, to_snp(k)), (RNG.normal(size=(3, 16)),))


def stft_magnitude(signal, n_fft=16, hop=4):
    n_frames = 1 + (signal.shape[0] - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(n_frames)[:, None]
    window = 0.5 - 0.5 * jnp.cos(2 * jnp.pi * jnp.arange(n_fft) / n_fft)
    frames = signal[idx] * window
    return jnp.abs(jnp.fft.rfft(frames, axis=-1))


def spectral_loss(signal, target):
    s, t = stft_magnitude(signal), stft_magnitude(target)
    convergence = jnp.linalg.norm(t - s) / jnp.linalg.norm(t)
    log_mag = jnp.mean(jnp.abs(jnp.log(s + 1e-3) - jnp.log(t + 1e-3)))
    return convergence + log_mag


def test_stft_magnitude_loss(x64):
    t = np.arange(48) / 48
    target = np.sin(2 * np.pi * 5 * t) + 0.3 * np.sin(2 * np.pi * 11 * t)
    signal = target + 0.2 * RNG.normal(size=48)
    mag = stft_magnitude(to_snp(signal))
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)
    want = np.stack([np.abs(np.fft.rfft(signal[i * 4:i * 4 + 16] * win)) for i in range(9)])
    np.testing.assert_allclose(mag, want, rtol=1e-10, atol=1e-12)
    check_grad(spectral_loss, signal, target, rtol=1e-5, atol=1e-6)
    check_vmap(stft_magnitude, (RNG.normal(size=(3, 48)),))


def iir_filter(coeffs, x):
    b0, b1, a1, a2 = coeffs[0], coeffs[1], coeffs[2], coeffs[3]

    def step(state, xt):
        x_prev, y1, y2 = state
        y = b0 * xt + b1 * x_prev - a1 * y1 - a2 * y2
        return (xt, y, y1), y

    _, y = lax.scan(step, (0.0, 0.0, 0.0), x)
    return y


def test_iir_filter_scan(x64):
    coeffs = np.array([0.3, 0.2, -0.5, 0.2])
    x = RNG.normal(size=20)
    y = np.zeros(20)
    for t in range(20):
        y[t] = (0.3 * x[t] + 0.2 * (x[t - 1] if t else 0) + 0.5 * (y[t - 1] if t else 0)
                - 0.2 * (y[t - 2] if t > 1 else 0))
    np.testing.assert_allclose(iir_filter(to_snp(coeffs), to_snp(x)), y, rtol=1e-10, atol=1e-12)
    check_grad(lambda c, x: jnp.sum(iir_filter(c, x) ** 2), coeffs, x)
    check_grad(lambda c, x: jnp.sum(iir_filter(c, x) ** 2), coeffs, x, argnum=1)
    check_vmap(iir_filter, (coeffs, RNG.normal(size=(3, 20))), in_axes=(None, 0))
    tangent = RNG.normal(size=4)
    _, got = jvp(lambda c: iir_filter(c, to_snp(x)), (to_snp(coeffs),), (to_snp(tangent),))
    np.testing.assert_allclose(got, fd_jvp(lambda c: iir_filter(c, to_snp(x)),
                                           (to_snp(coeffs),), (tangent,)), rtol=1e-6, atol=1e-8)


def autocorrelation(x):
    n = x.shape[0]
    f = jnp.fft.fft(x - jnp.mean(x), 2 * n)
    acf = jnp.fft.ifft(f * jnp.conj(f))[:n].real
    return acf / acf[0]


def test_autocorrelation_by_fft(x64):
    x = np.cumsum(RNG.normal(size=24)) * 0.3
    xc = x - x.mean()
    want = np.correlate(xc, xc, "full")[23:]
    np.testing.assert_allclose(autocorrelation(to_snp(x)), want / want[0], rtol=1e-9,
                               atol=1e-12)
    # integrated autocorrelation time, differentiated in the chain
    tau = lambda x: 1 + 2 * jnp.sum(autocorrelation(x)[1:6])
    check_grad(tau, x)
    check_vmap(autocorrelation, (RNG.normal(size=(3, 24)),))


def log_mel_energy(signal, filterbank):
    power = jnp.abs(jnp.fft.rfft(signal)) ** 2
    return jnp.log(filterbank @ power + 1e-6)


def test_log_mel_energy(x64):
    signal = RNG.normal(size=32)
    freqs = np.arange(17)
    centres = np.array([2.0, 5.0, 9.0, 13.0])
    fb = np.maximum(0, 1 - np.abs(freqs[None, :] - centres[:, None]) / 3.0)
    np.testing.assert_allclose(log_mel_energy(to_snp(signal), to_snp(fb)),
                               np.log(fb @ np.abs(np.fft.rfft(signal)) ** 2 + 1e-6), rtol=1e-10)
    check_grad(lambda s: jnp.sum(log_mel_energy(s, to_snp(fb))), signal)
    check_grad(lambda f: jnp.sum(log_mel_energy(to_snp(signal), f)), fb)
    check_vmap(log_mel_energy, (RNG.normal(size=(3, 32)), fb), in_axes=(0, None))
