"""secant.scipy.spatial.transform: jax.scipy.spatial.transform's Rotation and Slerp (SciPy's
conventions: unit quaternions (x, y, z, w), scalar last; rotation vectors; Euler angles, lower
case axes extrinsic, upper case intrinsic). A Rotation holds `quat`, (4,) for one rotation or
(N, 4) for several, and is a pytree. Written with secant.numpy's ops over the last
axis and read by the transforms as source (`__secant_by_source__`): grad, jvp and vmap follow
from the ops' rules."""
import re

import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.backends.errors import SecantTypeError, SecantValueError, UnsupportedError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["Rotation", "Slerp"]


def _norm(v):
    return snp.sqrt(snp.sum(v * v, axis=-1))


def _compose(p, q):
    """The quaternion product p q (rotate by q, then p), over the last axis."""
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    return snp.concatenate([pw * qv + qw * pv + snp.cross(pv, qv),
                            pw * qw - snp.sum(pv * qv, axis=-1, keepdims=True)], axis=-1)


def _as_matrix(q):
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [snp.stack([x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      axis=-1),
            snp.stack([2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
                      axis=-1),
            snp.stack([2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w],
                      axis=-1)]
    return snp.stack(rows, axis=-2)


def _from_rotvec(rotvec):
    angle = _norm(rotvec)[..., None]
    a2 = angle * angle
    small = 0.5 - a2 / 48 + a2 * a2 / 3840
    large = snp.sin(angle / 2) / snp.where(angle > 1e-3, angle, 1.0)
    scale = snp.where(angle <= 1e-3, small, large)
    return snp.concatenate([scale * rotvec, snp.cos(angle / 2)], axis=-1)


def _as_rotvec(q):
    q = snp.where(q[..., 3:] < 0, -q, q)       # w >= 0: angles in [0, pi]
    angle = (2.0 * snp.arctan2(_norm(q[..., :3]), q[..., 3]))[..., None]
    a2 = angle * angle
    small = 2 + a2 / 12 + 7 * a2 * a2 / 2880
    large = angle / snp.sin(snp.where(angle > 1e-3, angle, 1.0) / 2)
    return snp.where(angle <= 1e-3, small, large) * q[..., :3]


def _from_matrix(m):
    """The quaternion of each rotation matrix (..., 3, 3) (Shepperd's method, SciPy's)."""
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    decision = snp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
    choice = snp.argmax(decision, axis=-1)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        parts = [None] * 4
        parts[i] = 1 - trace + 2 * m[..., i, i]
        parts[j] = m[..., j, i] + m[..., i, j]
        parts[k] = m[..., k, i] + m[..., i, k]
        parts[3] = m[..., k, j] - m[..., j, k]
        candidates.append(snp.stack(parts, axis=-1))
    candidates.append(snp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                 m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
    quat = candidates[3]
    for i in range(3):
        quat = snp.where((choice == i)[..., None], candidates[i], quat)
    return quat / _norm(quat)[..., None]


def _elementary(axis, angle):
    """The quaternion of a rotation by angle (...) about basis axis 0, 1 or 2."""
    zero = snp.zeros_like(angle)
    half = angle / 2
    parts = [zero, zero, zero, snp.cos(half)]
    parts[axis] = snp.sin(half)
    return snp.stack(parts, axis=-1)


def _euler_axes(seq):
    if len(seq) < 1 or len(seq) > 3:
        raise SecantValueError(f"Expected axis specification to be a non-empty string of upto "
                               f"3 characters, got {seq}{where()}")
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
    if not intrinsic and not extrinsic:
        raise SecantValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', "
                               f"'Y', 'Z'], got {seq}{where()}")
    for i in range(len(seq) - 1):
        if seq[i] == seq[i + 1]:
            raise SecantValueError(f"Expected consecutive axes to be different, got {seq}"
                                   f"{where()}")
    return ["xyz".index(c) for c in seq.lower()], intrinsic


def _euler_from_quat(q, axes, extrinsic):
    """Euler angles (..., 3) of quaternions (SciPy's, after Bernardes and Viollet)."""
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = float((i - j) * (j - k) * (k - i) // 2)
    eps = 1e-7
    if symmetric:
        a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
    else:
        a = q[..., 3] - q[..., j]
        b = q[..., i] + q[..., k] * sign
        c = q[..., j] + q[..., 3]
        d = q[..., k] * sign - q[..., i]
    middle = 2 * snp.arctan2(snp.hypot(c, d), snp.hypot(a, b))
    half_sum = snp.arctan2(b, a)
    half_diff = snp.arctan2(d, c)
    gimbal_pi = snp.abs(middle - np.pi) <= eps
    gimbal_zero = snp.abs(middle) <= eps
    regular = ~(gimbal_pi | gimbal_zero)
    # (JAX's slots: angle 0 holds the degenerate cases' angle; the first and third angles of
    # the sequence are slots 0 and 2 extrinsically, 2 and 0 intrinsically)
    slot0 = snp.where(gimbal_zero, 2 * half_sum, 2 * half_diff * (-1.0 if extrinsic else 1.0))
    slot2 = snp.zeros_like(middle)
    if extrinsic:
        slot0 = snp.where(regular, half_sum - half_diff, slot0)
        slot2 = snp.where(regular, half_sum + half_diff, slot2)
        if not symmetric:
            slot2 = slot2 * sign
    else:
        slot2 = snp.where(regular, half_sum - half_diff, slot2)
        slot0 = snp.where(regular, half_sum + half_diff, slot0)
        if not symmetric:
            slot0 = slot0 * sign
    if not symmetric:
        middle = middle - np.pi / 2
    first, third = slot0, slot2
    angles = snp.stack([first, middle, third], axis=-1)
    return (angles + np.pi) % (2 * np.pi) - np.pi


class Rotation:
    """Rotations in 3 dimensions (jax.scipy.spatial.transform.Rotation): `quat`, (4,) for one
    rotation, (N, 4) for N. A pytree (its leaf: quat)."""

    def __init__(self, quat):
        self.quat = quat

    def __repr__(self):
        return f"Rotation(quat={self.quat!r})"

    @classmethod
    def concatenate(cls, rotations):
        return Rotation(snp.concatenate([snp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq, angles, degrees=False):
        axes, intrinsic = _euler_axes(seq)
        angles = snp.asarray(angles)
        if degrees:
            angles = snp.deg2rad(angles)
        if snp.ndim(angles) == 0:
            angles = snp.reshape(angles, (1,))
        result = _elementary(axes[0], angles[..., 0])
        for n in range(1, len(axes)):
            quat = _elementary(axes[n], angles[..., n])
            result = _compose(result, quat) if intrinsic else _compose(quat, result)
        return Rotation(result)

    @classmethod
    def from_matrix(cls, matrix):
        return Rotation(_from_matrix(snp.asarray(matrix)))

    @classmethod
    def from_mrp(cls, mrp):
        mrp = snp.asarray(mrp)
        plus_1 = snp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
        return Rotation(snp.concatenate([2 * mrp, 2 - plus_1], axis=-1) / plus_1)

    @classmethod
    def from_quat(cls, quat):
        quat = snp.asarray(quat)
        return Rotation(quat / _norm(quat)[..., None])

    @classmethod
    def from_rotvec(cls, rotvec, degrees=False):
        rotvec = snp.asarray(rotvec)
        return Rotation(_from_rotvec(snp.deg2rad(rotvec) if degrees else rotvec))

    @classmethod
    def identity(cls, num=None, dtype=float):
        quat = snp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return Rotation(quat if num is None else snp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num=None):
        raise UnsupportedError(f"Rotation.random is not implemented (as in JAX){where()}")

    def __getitem__(self, indexer):
        if self.single:
            raise SecantTypeError(f"Single rotation is not subscriptable.{where()}")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise SecantTypeError(f"Single rotation has no len().{where()}")
        return snp.shape(self.quat)[0]

    def __mul__(self, other):
        return Rotation(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse=False):
        """The vectors (..., 3) rotated (by the inverse rotation when inverse)."""
        m = self.as_matrix()
        if inverse:
            m = snp.swapaxes(m, -1, -2)
        return snp.squeeze(m @ snp.asarray(vectors)[..., None], -1)

    def as_euler(self, seq, degrees=False):
        axes, intrinsic = _euler_axes(seq)
        if len(axes) != 3:
            raise SecantValueError(f"Expected 3 axes, got {seq}.{where()}")
        angles = _euler_from_quat(self.quat, axes, not intrinsic)
        return snp.rad2deg(angles) if degrees else angles

    def as_matrix(self):
        return _as_matrix(self.quat)

    def as_mrp(self):
        sign = snp.where(self.quat[..., 3:] < 0, -1.0, 1.0)
        return sign * self.quat[..., :3] / (1.0 + sign * self.quat[..., 3:])

    def as_rotvec(self, degrees=False):
        rotvec = _as_rotvec(self.quat)
        return snp.rad2deg(rotvec) if degrees else rotvec

    def as_quat(self, canonical=False, scalar_first=False):
        quat = self.quat
        if canonical:
            quat = snp.where(quat[..., 3:] < 0, -quat, quat)
        if scalar_first:
            quat = snp.concatenate([quat[..., 3:], quat[..., :3]], axis=-1)
        return quat

    def inv(self):
        return Rotation(self.quat * snp.array([-1.0, -1.0, -1.0, 1.0], dtype=self.quat.dtype))

    def magnitude(self):
        return 2.0 * snp.arctan2(_norm(self.quat[..., :3]), snp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The rotation minimising the weighted sum of squared chordal distances (the top
        eigenvector of the quaternions' weighted scatter matrix)."""
        quat = snp.atleast_2d(self.quat)
        w = snp.ones(snp.shape(quat)[0], quat.dtype) if weights is None else \
            snp.asarray(weights, dtype=quat.dtype)
        if snp.ndim(w) != 1 or snp.shape(w)[0] != snp.shape(quat)[0]:
            raise SecantValueError(f"Expected `weights` to have one value per rotation, got "
                                   f"shape {snp.shape(w)} for {snp.shape(quat)[0]} rotations"
                                   f"{where()}")
        scatter = snp.dot(w[None, :] * quat.T, quat)
        _, vectors = snp.linalg.eigh(scatter)
        return Rotation(vectors[:, -1])

    @property
    def single(self):
        return snp.ndim(self.quat) == 1


class Slerp:
    """Spherical linear interpolation of rotations (jax.scipy.spatial.transform.Slerp):
    `Slerp.init(times, rotations)`, then `slerp(times)`. A pytree."""

    def __init__(self, times, timedelta, rotations, rotvecs):
        self.times, self.timedelta, self.rotations, self.rotvecs = \
            times, timedelta, rotations, rotvecs

    @classmethod
    def init(cls, times, rotations):
        if not isinstance(rotations, Rotation):
            raise SecantTypeError(f"`rotations` must be a `Rotation` instance.{where()}")
        if rotations.single or len(rotations) == 1:
            raise SecantValueError(f"`rotations` must be a sequence of at least 2 rotations."
                                   f"{where()}")
        times = snp.asarray(times, dtype=rotations.quat.dtype)
        if snp.ndim(times) != 1:
            raise SecantValueError(f"Expected times to be specified in a 1 dimensional array, "
                                   f"got {snp.ndim(times)} dimensions.{where()}")
        if snp.shape(times)[0] != len(rotations):
            raise SecantValueError(f"Expected number of rotations to be equal to number of "
                                   f"timestamps given, got {len(rotations)} rotations and "
                                   f"{snp.shape(times)[0]} timestamps.{where()}")
        timedelta = snp.diff(times)
        new_rotations = Rotation(rotations.quat[:-1])
        rotvecs = (new_rotations.inv() * Rotation(rotations.quat[1:])).as_rotvec()
        return Slerp(times, timedelta, new_rotations, rotvecs)

    def __call__(self, times):
        times = snp.asarray(times, dtype=self.times.dtype)
        if snp.ndim(times) > 1:
            raise SecantValueError(f"`times` must be at most 1-dimensional.{where()}")
        single = snp.ndim(times) == 0
        times = snp.atleast_1d(times)
        ind = snp.maximum(snp.searchsorted(self.times, times) - 1, 0)
        alpha = (times - self.times[ind]) / self.timedelta[ind]
        result = Rotation(self.rotations.quat[ind]) * \
            Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return Rotation(result.quat[0]) if single else result


tree_util.register_pytree_node(Rotation, lambda r: ((r.quat,), None),
                               lambda _, children: Rotation(children[0]))
tree_util.register_pytree_node(
    Slerp, lambda s: ((s.times, s.timedelta, s.rotations, s.rotvecs), None),
    lambda _, children: Slerp(*children))
