"""Vendors' URDFs as they come (arm/vendor.py): what the chain does not need cannot stop them;
a real error in the chain is still refused with a message that names it."""

import re
import warnings

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel, RobotModelError
from robot_ik_nn.arm.resources import PYBULLET_DATA_ARMS as ARMS  # every arm in pybullet_data
from robot_ik_nn.arm.resources import pybullet_data_path
from robot_ik_nn.ik.settings import IKSettings
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
        ({"origin": "0 ${x} 0"}, r"joint 'j1' has <origin xyz=\"0 \$\{x\} 0\">: not numbers"),
        ({"origin": "0 nan 0.1"}, r"joint 'j1' has <origin xyz=\"0 nan 0.1\">: not finite"),
        ({"origin": "0 0"}, r"<origin xyz=\"0 0\">: 2 numbers where 3 belong"),
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


@pytest.mark.parametrize(
    "old, new, message",
    [  # urchin, which parses the file, would turn this axis into x without a word
        ('<axis xyz="0 1 0"/>', '<axis xyz="0 5e-5 0"/>', r"too short to give a direction"),
        ('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>', r"too short to give a direction"),
        ('upper="1" effort="1" velocity="1"/>\n  </joint>', 'upper="inf" effort="1" velocity="1"/>'
         "</joint>", r"joint 'j2' has <limit upper=\"inf\">: not finite"),
        ('effort="1" velocity="1"/>\n  </joint>', 'effort="1"/></joint>',
         r"joint 'j2' has a <limit> without velocity"),
        ('effort="1" velocity="1"/>\n  </joint>', 'effort="1" velocity="-1"/></joint>',
         r"joint 'j2' has a negative velocity limit"),
        ('name="j2" type="revolute"', 'name="j2" type="prismatic"', None),  # a unit axis: fine
        ('name="j2" type="revolute"', 'name="j2" type="prismatic"', r"prismatic joint 'j2' has "
         r"<axis xyz=\"0 2 0\"> of length 2; write it as a unit vector"),
    ],
)
def test_the_chain_s_numbers_are_checked_naming_the_joint(tmp_path, old, new, message):
    text = urdf()
    assert old in text
    path = tmp_path / "bad.urdf"
    if "prismatic" in new and message:
        text = text.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 2 0"/>')
    path.write_text(text.replace(old, new))
    if message is None:
        assert ArmModel.load(path).joints[1].type == "prismatic"
        return
    with pytest.raises(RobotModelError, match=message):
        ArmModel.load(path)


def test_a_prismatic_axis_written_short_is_a_unit_axis(tmp_path):
    text = urdf().replace('name="j2" type="revolute"', 'name="j2" type="prismatic"')
    path = tmp_path / "short.urdf"  # 0.99985 long: how vendors write 1/sqrt(2)
    path.write_text(text.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0.707 0.707"/>'))
    joint = ArmModel.load(path).joints[1]
    assert joint.type == "prismatic" and abs(np.linalg.norm(joint.axis) - 1) < 1e-12


def test_xacro_leftovers(tmp_path):
    ns = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'
    declared = urdf(after='<xacro:property name="pi" value="3.14"/>').replace(
        '<robot name="vendor">', f'<robot name="vendor" {ns}>'
    )
    arm, said = load(declared, tmp_path)  # a declaration alone holds no link: left out, said so
    assert arm.dof == 2 and "<xacro:property name='pi'>" in said[0]
    wrapped = declared.replace(
        "</robot>",
        '<xacro:if value="true"><link name="tool"/><joint name="t" type="fixed"><parent '
        'link="l2"/><child link="tool"/></joint></xacro:if></robot>',
    )
    path = tmp_path / "wrapped.urdf"
    path.write_text(wrapped)  # leaving the tool out would place the flange: refused
    with pytest.raises(RobotModelError, match=r"unexpanded xacro file \(it has <xacro:if>, "
                       r"<xacro:property>\): expand it first"):
        ArmModel.load(path)


def test_a_file_in_its_declared_encoding(tmp_path):
    text = urdf().replace('version="1.0"', 'version="1.0" encoding="ISO-8859-1"')
    path = tmp_path / "latin.urdf"
    path.write_bytes(text.replace('"l2"', '"outil_\u00e9"').encode("latin-1"))
    arm = ArmModel.load(path)
    assert arm.tip == "outil_\u00e9"
    path.write_bytes(text.replace('"ISO-8859-1"', '"no-such-codec"').encode())
    with pytest.raises(RobotModelError, match=r"cannot read URDF .* as no-such-codec"):
        ArmModel.load(path)


def test_unreadable_collision_geometry_is_left_out_with_a_warning(tmp_path):
    box = '<collision><geometry><box size="0.1 0.1"/></geometry></collision>'
    text = urdf().replace('<link name="l1"/>', f'<link name="l1">{box}</link>')
    arm, said = load(text, tmp_path)
    assert "link 'l1': its <collision> is unreadable" in said[0]
    solver = Solver(arm, settings=IKSettings(collision_check=True))  # without that shape
    assert solver.solve(solver.forward(np.full(2, 0.3))[0][0]).solved


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
# minute each: python scripts/vendor_arms.py (benchmarks/vendor_arms.json)
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
