"""Vendors' URDFs as they come (arm/vendor.py): what the chain does not need cannot stop them;
a real error in the chain is still refused with a message that names it."""

import re
import warnings

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel, RobotModelError
from robot_ik_nn.arm.resources import pybullet_data_path
from robot_ik_nn.bench.vendor_arms import ARMS  # every arm URDF in pybullet_data
from robot_ik_nn.ik.solver import Solver

CHAIN = """<link name="base"/><link name="l1"/><link name="l2"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="{origin}" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>{extra}</joint>
  <joint name="j2" type="revolute"><parent link="{parent}"/><child link="{child}"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>"""


def urdf(*, before="", origin="0 0 0.1", extra="", parent="l1", child="l2", after=""):
    body = CHAIN.format(origin=origin, extra=extra, parent=parent, child=child)
    return f'{before}<?xml version="1.0"?>\n<robot name="vendor">{body}{after}</robot>'


TRANSMISSION = """<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>
  <joint name="{joint}"><hardwareInterface>PositionJointInterface</hardwareInterface></joint>
  <actuator name="m1"><mechanicalReduction>reduction</mechanicalReduction></actuator>
</transmission>"""


def load(text, tmp_path):
    path = tmp_path / "vendor.urdf"
    path.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arm = ArmModel.load(path)
    return arm, [str(w.message) for w in caught]


def test_a_broken_transmission_is_left_out_with_a_warning(tmp_path):
    arm, said = load(urdf(after=TRANSMISSION.format(joint="no_such_joint")), tmp_path)
    assert arm.joint_names == ["j1", "j2"]
    assert len(said) == 1 and "'no_such_joint', which the file does not have" in said[0]
    # a transmission of a real joint, with an unexpanded reduction: left out without a word
    arm, said = load(urdf(after=TRANSMISSION.format(joint="j1")), tmp_path)
    assert arm.dof == 2 and not said
    assert "transmission" not in arm.urdf_text


def test_extension_elements_and_unreadable_optional_parts(tmp_path):
    gazebo = '<gazebo reference="l1"><material>Gazebo/Orange</material></gazebo><ros2_control/>'
    inertial = '<inertial><mass value="${m}"/><inertia ixx="${i}" ixy="0" iyy="1"/>'
    text = urdf(
        before="\n\n",  # blank lines before the declaration
        after=gazebo,
        extra='<dynamics damping="${d}"/><safety_controller soft_lower_limit="x"/>',
    ).replace('<link name="l1"/>', f'<link name="l1">{inertial}</inertial></link>')
    arm, said = load(text, tmp_path)
    assert arm.dof == 2 and len(said) == 1
    assert "link 'l1': its <inertial> is unreadable" in said[0]
    assert "joint 'j1': its <dynamics> is unreadable" in said[0]
    reference = ArmModel(urdf())
    assert arm.fingerprint == reference.fingerprint  # the chain is the same chain


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"origin": "0 ${x} 0"}, r"joint 'j1' has <origin xyz=\"0 \$\{x\} 0\">, which is not"),
        ({"child": "nowhere"}, "invalid child link name nowhere"),
        ({"parent": "l1", "child": "base"}, "the joints form a cycle: "),
        ({"after": "<joint"}, "malformed URDF"),
    ],
)
def test_a_real_error_in_the_chain_is_still_refused(tmp_path, kwargs, message):
    path = tmp_path / "bad.urdf"
    path.write_text(urdf(**kwargs))
    with pytest.raises(RobotModelError, match=message):
        ArmModel.load(path)




@pytest.mark.parametrize("relative", sorted(ARMS))
def test_every_arm_in_pybullet_data_loads_and_solves(relative):
    path = pybullet_data_path() / relative
    assert len(re.findall(r'type="(revolute|continuous)"', path.read_text())) >= 6
    arm = ArmModel.load(path, tip=ARMS[relative])
    assert arm.dof >= 6
    solver = Solver(arm)
    q = arm.lower + (arm.upper - arm.lower) * np.random.default_rng(0).random((5, arm.dof))
    P, _ = solver.forward(q)
    assert solver.solve_batch(P).solved.all()  # positions alone: every arm reaches them


# one file per vendor family here (the others differ in limits or mass only); every arm, one
# minute each: python -m robot_ik_nn.bench.vendor_arms (benchmarks/vendor_arms.json)
@pytest.mark.parametrize(
    "relative", ["kuka_iiwa/model.urdf", "xarm/xarm6_with_gripper.urdf", "franka_panda/panda.urdf"]
)
def test_vendor_arms_train_and_evaluate(relative, tmp_path):
    from robot_ik_nn.evaluate import evaluate
    from robot_ik_nn.learn.training import TrainConfig, Trainer

    config = TrainConfig(robot=str(pybullet_data_path() / relative), tip=ARMS[relative],
                         steps=20, minutes=None, out=str(tmp_path / "m"), hidden=[32, 32])
    Trainer(config, progress=False).run()
    result = evaluate(tmp_path / "m", targets=100)
    assert result["targets"] == 100 and result["refined"]["solve_rate"] >= 0.9, result
