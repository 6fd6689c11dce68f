"""The quaternion head, the joint-limit squash and the symmetry about the first joint."""

import math

import numpy as np
import pytest
import torch

from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import quaternions_to_joint_angles
from robot_ik_nn.learn.network import IKNet, NetConfig

CONTINUOUS_ARM = """<robot name="c"><link name="a"/><link name="b"/><link name="c"/>
  <joint name="spin" type="continuous"><parent link="a"/><child link="b"/>
  <axis xyz="0 0 1"/></joint>
  <joint name="bend" type="revolute"><parent link="b"/><child link="c"/><origin xyz="0.2 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="2" effort="1" velocity="1"/></joint></robot>"""


@pytest.mark.parametrize("mode", ["pose", "position"])
def test_head_gives_unit_quaternions_about_each_axis_and_angles_inside_limits(niryo, mode):
    torch.manual_seed(0)
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, mode, [64, 64]))
    with torch.no_grad():  # push the head far out so the squash is exercised at the limits
        net.head.weight.mul_(200.0)
    kin = Kinematics(niryo)
    pos, rot = kin.forward(kin.sample(2000, torch.Generator().manual_seed(0)))
    pos = pos + torch.randn(pos.shape) * 0.5  # off the workspace too
    sc, psi = net.propose(pos, rot)
    quats = net.head_quaternions(sc)
    torch.testing.assert_close(torch.linalg.norm(quats, dim=-1), torch.ones(2000, niryo.dof))
    vec = quats[..., :3]
    # the vector part is parallel to the joint axis
    assert torch.linalg.norm(torch.linalg.cross(vec, net.axes.expand_as(vec)), dim=-1).max() < 1e-6
    q = net.pairs_to_angles(sc, psi)
    assert np.all(niryo.within_limits(q.detach().numpy(), tol=1e-6))
    assert (q.max(0).values - q.min(0).values).min() > 0.5  # really spread over the range


def test_angles_to_pairs_inverts_pairs_to_angles(niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "pose", [32]))
    kin = Kinematics(niryo)
    q = kin.sample(500, torch.Generator().manual_seed(1))
    psi = (torch.rand(500) * 2 - 1) * math.pi
    back = net.pairs_to_angles(net.angles_to_pairs(q, psi), psi)
    torch.testing.assert_close(back, q, atol=1e-5, rtol=0)


def test_continuous_joint_reads_the_quaternion_angle():
    arm = ArmModel(CONTINUOUS_ARM)
    net = IKNet(NetConfig(2, "position", [8], yaw_symmetry=False), arm)
    angle = torch.tensor([2.5, -3.0])
    sc = torch.stack([torch.sin(angle / 2), torch.cos(angle / 2)], -1)[:, None, :].expand(2, 2, 2)
    q = net.pairs_to_angles(sc, torch.zeros(2))
    torch.testing.assert_close(q[:, 0], angle)
    # and the head's quaternion for it is the joint's quaternion of that angle
    torch.testing.assert_close(
        quaternions_to_joint_angles(net.head_quaternions(sc)[:, :1], net.axes[:1]), angle[:, None]
    )


@pytest.mark.parametrize("robot", ["niryo_one", "franka_panda"])
def test_turning_the_target_about_joint_1_only_turns_joint_1(robot):
    arm = ArmModel.load(robot)
    net = IKNet.for_arm(arm, NetConfig(arm.dof, "pose", [64, 64]))
    assert net.config.yaw_symmetry
    kin = Kinematics(arm, torch.float64)
    q = kin.sample(200, torch.Generator().manual_seed(2))
    pos, rot = kin.forward(q)
    turned = q.clone()
    turned[:, 0] += 0.3
    pos2, rot2 = kin.forward(turned)  # the same targets turned 0.3 rad about joint 1
    with torch.no_grad():
        a, b = net(pos.float(), rot.float()), net(pos2.float(), rot2.float())
    inside = (a[:, 0] > arm.lower[0] + 1e-3) & (a[:, 0] + 0.3 < arm.upper[0] - 1e-3)
    assert inside.sum() > 10
    torch.testing.assert_close(b[:, 1:], a[:, 1:], atol=2e-4, rtol=0)
    torch.testing.assert_close(b[inside, 0], a[inside, 0] + 0.3, atol=2e-4, rtol=0)


def test_no_symmetry_for_a_first_joint_with_a_narrow_range(inmoov):
    # the InMoov shoulder turns 1.22 rad: it cannot face most targets, so nothing is factored out
    net = IKNet.for_arm(inmoov, NetConfig(inmoov.dof, "pose", [8]))
    assert not net.config.yaw_symmetry
    assert net.config.to_dict()["yaw_symmetry"] is False


def test_pose_network_needs_orientation(niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "pose", [8]))
    with pytest.raises(ValueError, match="orientation"):
        net(torch.zeros(1, 3))


def test_tracking_network_takes_the_current_joints(niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "position", [16], tracking=True))
    assert net.config.in_features == 3 + niryo.dof
    out = net(torch.zeros(2, 3) + 0.2, current=torch.zeros(2, niryo.dof))
    assert out.shape == (2, niryo.dof)
    # no current joints: the network assumes the arm rests at mid-range
    mid = torch.tensor(niryo.mid_range, dtype=torch.float32).expand(2, -1)
    torch.testing.assert_close(
        net(torch.zeros(2, 3) + 0.2), net(torch.zeros(2, 3) + 0.2, current=mid)
    )
    assert not torch.allclose(out, net(torch.zeros(2, 3) + 0.2, current=mid))
