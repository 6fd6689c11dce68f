"""ArmModel: chain extraction, limits, fingerprint and the errors bad input gets."""

import math

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel, RobotModelError
from robot_ik_nn.arm.resources import pybullet_data_path

PANDA = pybullet_data_path() / "franka_panda" / "panda.urdf"

TWO_JOINT = """<?xml version="1.0"?>
<robot name="two">
  <link name="a"/><link name="b"/><link name="c"/>
  <joint name="j1" type="{t1}"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="2"/></joint>
  <joint name="j2" type="{t2}"><parent link="b"/><child link="c"/><origin xyz="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="2"/></joint>
</robot>"""


def test_niryo_one_joints_limits_and_velocities():
    arm = ArmModel.load("niryo_one")
    assert arm.joint_names == [f"joint_{i}" for i in range(1, 7)]
    assert (arm.base, arm.tip) == ("base_link", "tool_link")
    np.testing.assert_allclose(
        arm.lower, [-3.05433, -1.5708, -1.397485, -3.05433, -1.74533, -2.57436]
    )
    np.testing.assert_allclose(
        arm.upper, [3.05433, 0.640187, math.pi / 2, 3.05433, 1.91986, 2.57436]
    )
    np.testing.assert_allclose(arm.velocity_limits, [2.2, 2.0, 2.0, 2.0, 2.5, 3.14])
    np.testing.assert_allclose(arm.axes, np.tile([0, 0, 1.0], (6, 1)))


def test_inmoov_right_arm_chain():
    arm = ArmModel.load("inmoov_right_arm")
    assert arm.joint_names == [
        "r_shoulder_out",
        "r_shoulder_lift",
        "r_upper_arm_roll",
        "r_elbow_flex",
        "r_wrist_roll",
    ]
    assert (arm.base, arm.tip) == ("torso_link", "r_tool_link")
    np.testing.assert_allclose(arm.axes[0], [1, 0, 0])


def test_explicit_base_and_tip_make_a_sub_chain():
    arm = ArmModel.load("niryo_one", base="arm_link", tip="wrist_link")
    assert arm.joint_names == ["joint_3", "joint_4", "joint_5"]


def test_panda_needs_a_tip_because_its_hand_branches():
    with pytest.raises(RobotModelError, match="branches at 'panda_hand'.*panda_leftfinger"):
        ArmModel.load(PANDA)
    arm = ArmModel.load(PANDA, tip="panda_hand")
    assert arm.dof == 7
    assert ArmModel.load("franka_panda").fingerprint == arm.fingerprint


def test_fingerprint_is_stable_and_sees_geometry(tmp_path):
    a = ArmModel.load("niryo_one")
    b = ArmModel.load("niryo_one")
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 64
    text = a.urdf_text.replace('xyz="0.210 0 0"', 'xyz="0.211 0 0"')
    moved = ArmModel(text, source="moved.urdf")
    assert moved.fingerprint != a.fingerprint
    text = a.urdf_text.replace('velocity="2.2"', 'velocity="2.3"')
    assert ArmModel(text).fingerprint != a.fingerprint
    # comments and whitespace do not matter
    assert (
        ArmModel(a.urdf_text.replace("<robot", "<!-- hi -->\n<robot", 1)).fingerprint
        == a.fingerprint
    )


def test_continuous_and_prismatic_joints():
    arm = ArmModel(TWO_JOINT.format(t1="continuous", t2="prismatic"))
    assert [j.type for j in arm.joints] == ["continuous", "prismatic"]
    assert arm.lower[0] == -math.pi and arm.upper[0] == math.pi
    assert arm.within_limits(np.array([[10.0, 0.5], [0.0, 1.5]])).tolist() == [True, False]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: ArmModel.load(tmp / "nope.urdf"), "URDF file not found"),
        (lambda tmp: ArmModel("<robot name='x'><link name='a'></robot>"), "malformed URDF"),
        (
            lambda tmp: ArmModel.load("niryo_one", tip="gripper_link"),
            "unknown tip link 'gripper_link'",
        ),
        (lambda tmp: ArmModel.load("niryo_one", base="nowhere"), "unknown base link 'nowhere'"),
        (
            lambda tmp: ArmModel.load("niryo_one", base="wrist_link", tip="arm_link"),
            "'arm_link' is not below base link 'wrist_link'",
        ),
        (
            lambda tmp: ArmModel.load("niryo_one", base="hand_link", tip="tool_link"),
            "has no movable joint",
        ),
        (lambda tmp: ArmModel(TWO_JOINT.format(t1="revolute", t2="floating")), "'floating'"),
        (lambda tmp: ArmModel(TWO_JOINT.format(t1="revolute", t2="planar")), "'planar'"),
        (  # urchin's words named no joint
            lambda tmp: ArmModel(
                TWO_JOINT.format(t1="revolute", t2="prismatic").replace(
                    '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="2"/>',
                    '<axis xyz="0 1 0"/>',
                )
            ),
            "joint 'j2' is prismatic but has no <limit>",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(tmp_path, make, message):
    with pytest.raises(RobotModelError, match=message):
        make(tmp_path)


def test_describe_records_what_a_model_folder_needs():
    info = ArmModel.load("niryo_one").describe()
    assert info["robot"] == "niryo_one" and info["tip"] == "tool_link"
    assert info["fingerprint"] == ArmModel.load("niryo_one").fingerprint
    assert len(info["lower"]) == len(info["velocity_limits"]) == 6
