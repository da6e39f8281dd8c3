"""issue 15 (lib15e): jax.scipy.spatial.transform's Rotation and Slerp
(secant/scipy/spatial/transform.py): every constructor and conversion against SciPy's (Euler
sequences extrinsic and intrinsic, gimbal lock included), apply, composition, inverse,
magnitude, mean, Slerp; under jit; gradients against float64 central differences; vmap against
a loop."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SciPyRotation
from scipy.spatial.transform import Slerp as SciPySlerp

import secant
import secant.numpy as snp
from secant.scipy.spatial.transform import Rotation, Slerp
from tests.central_differences import weighted_fd

rng = np.random.default_rng(15)
Q = rng.normal(size=(5, 4))
Q /= np.linalg.norm(Q, axis=1, keepdims=True)
THEIRS = SciPyRotation.from_quat(Q)
V = rng.normal(size=(5, 3))


def close(got, want, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=atol)


def test_conversions_against_scipy(x64):
    OURS = Rotation.from_quat(Q)           # (made under x64: float64)
    close(OURS.as_matrix(), THEIRS.as_matrix())
    close(OURS.as_rotvec(), THEIRS.as_rotvec())
    close(OURS.as_rotvec(degrees=True), THEIRS.as_rotvec(degrees=True), atol=1e-10)
    close(OURS.as_mrp(), THEIRS.as_mrp())
    close(OURS.as_quat(canonical=True, scalar_first=True),
          THEIRS.as_quat(canonical=True, scalar_first=True))
    close(Rotation.from_matrix(THEIRS.as_matrix()).as_matrix(), THEIRS.as_matrix())
    close(Rotation.from_rotvec(THEIRS.as_rotvec()).as_matrix(), THEIRS.as_matrix())
    close(Rotation.from_mrp(THEIRS.as_mrp()).as_matrix(), THEIRS.as_matrix())
    close(Rotation.identity(3).as_matrix(), np.tile(np.eye(3), (3, 1, 1)))
    close(Rotation.from_rotvec(np.array([1e-5, 0.0, 0.0])).as_rotvec(), [1e-5, 0.0, 0.0])


@pytest.mark.parametrize("seq", ["xyz", "ZXY", "zxz", "XYX", "yzx", "ZYZ"])
def test_euler_angles_against_scipy(seq, x64):
    OURS = Rotation.from_quat(Q)
    angles = rng.uniform(-1, 1, size=(5, 3))
    close(Rotation.from_euler(seq, angles).as_matrix(),
          SciPyRotation.from_euler(seq, angles).as_matrix())
    close(Rotation.from_euler(seq, np.rad2deg(angles), degrees=True).as_matrix(),
          SciPyRotation.from_euler(seq, angles).as_matrix())
    close(OURS.as_euler(seq), THEIRS.as_euler(seq), atol=1e-10)
    middle = np.pi / 2 if seq[0].lower() != seq[2].lower() else 0.0      # gimbal lock
    locked = SciPyRotation.from_euler(seq, [[0.3, middle, 0.2]])
    with pytest.warns(UserWarning):
        want = locked.as_euler(seq)
    got = Rotation.from_quat(locked.as_quat()).as_euler(seq)
    close(np.cos(np.asarray(got)), np.cos(want), atol=1e-7)         # (the same angles, mod 2 pi)
    close(np.sin(np.asarray(got)), np.sin(want), atol=1e-7)


def test_apply_compose_inverse_magnitude_mean_and_slerp(x64):
    OURS = Rotation.from_quat(Q)
    close(OURS.apply(V), THEIRS.apply(V))
    close(OURS.apply(V, inverse=True), THEIRS.apply(V, inverse=True))
    close((OURS * OURS[::-1]).as_matrix(), (THEIRS * THEIRS[::-1]).as_matrix())
    close((OURS * OURS.inv()).magnitude(), np.zeros(5), atol=1e-7)
    close(OURS.magnitude(), THEIRS.magnitude())
    close(OURS.mean(np.arange(1.0, 6.0)).as_matrix(), THEIRS.mean(np.arange(1.0, 6.0)).as_matrix())
    assert len(OURS) == 5 and OURS[0].single and not OURS.single
    close(Rotation.concatenate([OURS[0], OURS[1:]]).as_quat(), Q)
    times = np.array([0.0, 0.3, 1.7, 3.9, 4.0])
    ours, theirs = Slerp.init(np.arange(5.0), OURS), SciPySlerp(np.arange(5.0), THEIRS)
    close(ours(times).as_matrix(), theirs(times).as_matrix())
    close(ours(2.5).as_matrix(), theirs(2.5).as_matrix())
    with pytest.raises(secant.SecantTypeError, match="no len"):
        len(OURS[0])
    with pytest.raises(secant.SecantValueError, match="consecutive axes"):
        Rotation.from_euler("xxy", np.zeros(3))


def test_jit_gradients_and_vmap(x64):
    def rotated(v):
        return Rotation.from_rotvec(v).apply(np.array([1.0, -2.0, 0.5]))

    def rotated_ref(v):
        return SciPyRotation.from_rotvec(v).apply(np.array([1.0, -2.0, 0.5]))
    v = np.array([0.1, 0.7, -0.3])
    close(secant.jit(rotated)(v), rotated_ref(v))
    g0, w = weighted_fd(rotated_ref, v)
    g = secant.grad(lambda x: snp.sum(rotated(x) * w))(v)
    close(g, g0, atol=1e-8)

    def euler(q):
        return Rotation.from_quat(q).as_euler("zyx")
    g0, w = weighted_fd(lambda q: SciPyRotation.from_quat(q).as_euler("zyx"), Q[0])
    g = secant.grad(lambda q: snp.sum(euler(q) * w))(Q[0])
    close(g, g0, atol=1e-7)
    got = secant.vmap(lambda v: Rotation.from_rotvec(v).as_matrix())(V)
    close(got, np.stack([SciPyRotation.from_rotvec(v).as_matrix() for v in V]))
