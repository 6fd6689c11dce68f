"""Torch kinematics against PyBullet and against finite differences."""

import numpy as np
import pytest
import torch
from fk_oracle import BulletFK

from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import quaternion_to_matrix, rotation_angle, rotation_error_vector
from robot_ik_nn.hardware.pybullet_arm import ArmSim

ARMS = ["niryo_one", "inmoov_right_arm", "franka_panda", "kuka_iiwa"]


@pytest.mark.parametrize("name", ARMS)
def test_forward_kinematics_matches_pybullet_on_1000_configurations(name):
    arm = ArmModel.load(name)
    kin = Kinematics(arm, torch.float64)
    q = kin.sample(1000, torch.Generator().manual_seed(7))
    pos, rot = kin.forward(q)
    with ArmSim(arm) as sim:
        pb_pos, pb_quat = sim.forward(q.numpy())
    pos_err = np.linalg.norm(pos.numpy() - pb_pos, axis=-1)
    rot_err = rotation_angle(rot, quaternion_to_matrix(torch.from_numpy(pb_quat))).numpy()
    assert pos_err.max() <= 1e-6, pos_err.max()
    assert rot_err.max() <= 1e-6, rot_err.max()
    # the poses really vary: this is not a comparison of constants
    assert pos.std(0).min() > 0.01


def test_niryo_one_zero_pose(niryo):
    pos, rot = Kinematics(niryo, torch.float64).forward(torch.zeros(6, dtype=torch.float64))
    with BulletFK.of(niryo) as fk:  # the URDF as PyBullet reads it
        expected_p, expected_R = fk.fk(np.zeros(6))
    np.testing.assert_allclose(pos.numpy(), expected_p, atol=1e-6)
    np.testing.assert_allclose(rot.numpy(), expected_R, atol=1e-6)
    np.testing.assert_allclose(rot.numpy(), np.eye(3), atol=1e-9)  # every rpy of the chain is 0


def test_inmoov_zero_pose_hangs_the_arm_down(inmoov):
    arm = ArmModel.load("inmoov_right_arm", tip="r_hand_link")
    pos, _ = Kinematics(arm, torch.float64).forward(torch.zeros(5, dtype=torch.float64))
    with BulletFK.of(arm) as fk:
        expected, _ = fk.fk(np.zeros(5))
        shoulder, _ = BulletFK(arm.source, arm.base, arm.joints[0].child, []).fk([])
    np.testing.assert_allclose(pos.numpy(), expected, atol=1e-6)
    # hanging down: the hand well below the shoulder, barely aside of it
    drop = shoulder - pos.numpy()
    assert drop[2] > 0.2 and np.hypot(drop[0], drop[1]) < 0.5 * drop[2], drop


def test_the_cuda_broadcast_products_on_the_cpu(panda):
    """On CUDA Kinematics writes its 3x3 products out as broadcast multiply-sums (_mm, _mv);
    elsewhere they are torch.matmul. The CPU suite runs that branch here once."""
    from robot_ik_nn.arm import kinematics

    plain = Kinematics(panda, torch.float64)
    written_out = Kinematics(panda, torch.float64)
    written_out._mm, written_out._mv = kinematics._mm, kinematics._mv
    assert plain._mm is torch.matmul  # the CPU's own branch differs
    q = plain.sample(200, torch.Generator().manual_seed(5))
    for a, b in zip(plain.jacobian(q), written_out.jacobian(q)):
        torch.testing.assert_close(b, a, atol=1e-12, rtol=0)
    pos, rot = written_out.forward(q[:20])
    with BulletFK.of(panda) as fk:
        expected_p, expected_R = fk.fk_batch(q[:20].numpy())
    np.testing.assert_allclose(pos.numpy(), expected_p, atol=1e-6)
    np.testing.assert_allclose(rot.numpy(), expected_R, atol=1e-6)


@pytest.mark.parametrize("name", ARMS)
def test_jacobian_matches_finite_differences(name):
    arm = ArmModel.load(name)
    kin = Kinematics(arm, torch.float64)
    q = kin.sample(50, torch.Generator().manual_seed(3))
    pos, rot, J = kin.jacobian(q)
    eps = 1e-6
    for i in range(arm.dof):
        dq = torch.zeros_like(q)
        dq[:, i] = eps
        p_plus, r_plus = kin.forward(q + dq)
        p_minus, r_minus = kin.forward(q - dq)
        dp = (p_plus - p_minus) / (2 * eps)
        # angular velocity: the rotation vector from the minus to the plus pose, over 2 eps
        dw = rotation_error_vector(r_minus, r_plus) / (2 * eps)
        np.testing.assert_allclose(J[:, :3, i].numpy(), dp.numpy(), atol=1e-7)
        np.testing.assert_allclose(J[:, 3:, i].numpy(), dw.numpy(), atol=1e-7)


def test_prismatic_and_continuous_joints_against_pybullet(slider_arm):
    arm = slider_arm
    kin = Kinematics(arm, torch.float64)
    q = kin.sample(200, torch.Generator().manual_seed(1))
    q[:, 0] *= 3  # continuous joints go round more than once
    pos, rot = kin.forward(q)
    with ArmSim(arm) as sim:
        pb_pos, pb_quat = sim.forward(q.numpy())
    assert np.abs(pos.numpy() - pb_pos).max() < 1e-6
    assert rotation_angle(rot, quaternion_to_matrix(torch.from_numpy(pb_quat))).max() < 1e-6
    _, _, J = kin.jacobian(q)
    eps = 1e-6
    dq = torch.zeros_like(q)
    dq[:, 1] = eps
    dp = (kin.forward(q + dq)[0] - kin.forward(q - dq)[0]) / (2 * eps)
    np.testing.assert_allclose(J[:, :3, 1].numpy(), dp.numpy(), atol=1e-7)
    assert torch.all(J[:, 3:, 1] == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batch_shapes_dtypes_and_gradients(niryo, dtype):
    kin = Kinematics(niryo, dtype)
    q = kin.sample(24).reshape(2, 3, 4, 6).requires_grad_(True)
    pos, rot = kin.forward(q)
    assert pos.shape == (2, 3, 4, 3) and rot.shape == (2, 3, 4, 3, 3) and pos.dtype == dtype
    pos.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="expected 6 joint values"):
        kin.forward(torch.zeros(3, 5, dtype=dtype))


@pytest.mark.cuda  # skipped without CUDA; make test-gpu fails instead (conftest.py)
def test_cuda_matches_cpu(niryo):
    cpu = Kinematics(niryo, torch.float64)
    gpu = cpu.to(device="cuda")
    q = cpu.sample(1000)
    p_cpu, r_cpu = cpu.forward(q)
    p_gpu, r_gpu = gpu.forward(q.cuda())
    assert torch.allclose(p_cpu, p_gpu.cpu(), atol=1e-12) and torch.allclose(
        r_cpu, r_gpu.cpu(), atol=1e-12
    )


def test_clamp_wraps_continuous_and_clamps_limited():
    arm = ArmModel("""<robot name="r"><link name="a"/><link name="b"/><link name="c"/>
      <joint name="j1" type="continuous"><parent link="a"/><child link="b"/>
      <axis xyz="0 0 1"/></joint>
      <joint name="j2" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""")
    kin = Kinematics(arm, torch.float64)
    out = kin.clamp(torch.tensor([[4.0, 3.0], [-4.0, -3.0]], dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), [[4.0 - 2 * np.pi, 1.0], [2 * np.pi - 4.0, -1.0]])


def test_rotation_error_vector_near_pi():
    axis = torch.tensor([[0.0, 0.6, 0.8]], dtype=torch.float64)
    for angle in (0.3, 3.0, np.pi - 1e-7):
        q = torch.cat(
            [axis * np.sin(angle / 2), torch.tensor([[np.cos(angle / 2)]], dtype=torch.float64)],
            -1,
        )
        R = quaternion_to_matrix(q)
        v = rotation_error_vector(torch.eye(3, dtype=torch.float64)[None], R)
        np.testing.assert_allclose(v.numpy(), (axis * angle).numpy(), atol=1e-6)
