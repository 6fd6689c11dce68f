"""The calibration fit's rotation helpers (calibration/chain.py) against scipy's Rotation, an
independent implementation, on random inputs including angles near 0 and near a half turn; the
batched forward kinematics the fit runs against PyBullet on the URDF each parameter set writes."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from fk_oracle import BulletFK
from scipy.spatial.transform import Rotation

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration import chain as C
from robot_ik_nn.calibration import fit as F


def _rotvecs(rng, n=400):
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angles = np.concatenate(
        [
            rng.uniform(0, np.pi, n // 4),
            10.0 ** rng.uniform(-12, -2, n // 4),  # near 0
            np.pi - 10.0 ** rng.uniform(-12, -2, n // 4),  # near a half turn
            [0.0, np.pi, 1e-300, np.pi - 1e-16] + [1e-3] * (n // 4 - 4),  # the edges
        ]
    )
    return axis * angles[:, None]


def test_rotvec_matrices_agree_with_scipy():
    v = _rotvecs(np.random.default_rng(0))
    ours = C.rotvec_matrices(v)
    assert np.abs(ours - Rotation.from_rotvec(v).as_matrix()).max() < 1e-12
    assert C.rotvec_matrices(v[7]).shape == (3, 3)
    assert np.abs(C.rotvec_matrices(v[7]) - ours[7]).max() == 0


def test_matrix_rotvecs_agree_with_scipy_and_invert_rodrigues():
    v = _rotvecs(np.random.default_rng(1))
    R = Rotation.from_rotvec(v).as_matrix()
    ours = C.matrix_rotvecs(R)
    theirs = Rotation.from_matrix(R).as_rotvec()
    # scipy takes the same sign at a half turn (w >= 0, the largest component first)
    assert np.abs(ours - theirs).max() < 1e-12
    assert np.abs(Rotation.from_rotvec(ours).as_matrix() - R).max() < 1e-12
    small = np.linalg.norm(v, axis=1) < 1e-2  # near 0 the answer keeps its relative precision
    assert np.all(np.abs(ours - v)[small] <= 1e-12 * np.linalg.norm(v[small], axis=1)[:, None])


def test_perpendiculars_are_an_orthonormal_frame_with_the_axis():
    a = np.random.default_rng(3).normal(size=(50, 3))
    a[:3] = np.eye(3)  # the URDF's usual axes
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    chain = C.Chain([], np.zeros((50, 3)), np.zeros((50, 3, 3)), a, np.zeros(50, bool),
                    np.eye(4), None, np.eye(4))
    u, v = chain.perpendiculars
    for x, y in ((a, u), (a, v), (u, v)):
        assert np.abs((x * y).sum(1)).max() < 1e-15
    assert np.abs(np.linalg.norm(u, axis=1) - 1).max() < 1e-15
    assert np.abs(np.cross(u, v) - a).max() < 1e-15  # right-handed: u x v = a


@pytest.mark.parametrize("name", ["niryo_one", "kuka_iiwa"])
def test_batched_forward_is_pybullet_on_each_moved_urdf(name, tmp_path):
    """K parameter vectors at once (placements + forward_placed, what the fit's residuals and
    Jacobian run) against PyBullet on the URDF each vector writes (calibrated_urdf)."""
    arm = ArmModel.load(name)
    chain, elements = F.chain_of(arm)
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(3, chain.size)) * 0.03
    q = rng.uniform(arm.lower, arm.upper, (8, arm.dof))
    p, R = C.forward_placed(chain, *C.placements(chain, theta), q)
    assert p.shape == (3, 8, 3) and R.shape == (3, 8, 3, 3)
    for k in range(len(theta)):
        root = ET.fromstring(F.calibrated_urdf(arm, F.moved(chain, theta[k]), elements))
        for link in root.iter("link"):  # the meshes are not needed for kinematics
            for part in link.findall("visual") + link.findall("collision"):
                link.remove(part)
        path = tmp_path / f"{k}.urdf"
        path.write_text(ET.tostring(root, encoding="unicode"))
        with BulletFK(path, arm.base, arm.tip, arm.joint_names) as fk:
            bp, bR = fk.fk_batch(q)
        assert np.abs(p[k] - bp).max() < 1e-6  # PyBullet: ~1e-7 on the nominal arm itself
        assert np.abs(R[k] - bR).max() < 1e-6
