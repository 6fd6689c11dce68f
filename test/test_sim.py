"""The PyBullet wrapper and the package's own URDFs."""

import subprocess
import sys

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.hardware.pybullet_arm import ArmSim

LOAD = """
import warnings; warnings.simplefilter("error")
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.hardware.pybullet_arm import ArmSim
arm = ArmModel.load({robot!r})
ArmSim(arm).close()
print("loaded", arm.dof)
"""


def _load_output(robot: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", LOAD.format(robot=robot)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


@pytest.mark.parametrize("robot", ["niryo_one", "inmoov_right_arm"])
def test_package_urdfs_load_without_warnings(robot):
    out = _load_output(robot)
    assert "loaded" in out
    assert "warning" not in out.lower(), out


def test_warning_detection_works_on_a_urdf_without_inertials(tmp_path):
    urdf = tmp_path / "bare.urdf"
    urdf.write_text(
        '<robot name="bare"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
        '<parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'
    )
    assert "warning" in _load_output(str(urdf)).lower()


def test_niryo_zero_pose_in_pybullet():
    with ArmSim("niryo_one") as sim:
        pos, quat = sim.end_effector_pose()
    np.testing.assert_allclose(pos, [0.2452, 0, 0.4175], atol=5e-4)
    assert abs(abs(quat[3]) - 1) < 1e-9


def test_set_and_get_joints_and_bad_values():
    with ArmSim("niryo_one") as sim:
        q = np.array([0.1, -0.2, 0.3, -0.4, 0.5, -0.6])
        sim.set_joints(q)
        np.testing.assert_allclose(sim.get_joints(), q)
        with pytest.raises(ValueError, match="6 joints, got 5"):
            sim.set_joints(q[:5])
        with pytest.raises(ValueError, match="finite"):
            sim.set_joints([np.nan] * 6)


def test_position_control_moves_toward_the_command_within_velocity_limits():
    with ArmSim("niryo_one") as sim:
        goal = np.array([0.8, -0.5, 0.6, 1.0, -0.7, 1.2])
        sim.command(goal)
        sim.step(24)  # 0.1 s
        early = sim.get_joints()
        # no joint moved faster than its velocity limit (small slack for the controller)
        assert np.all(np.abs(early) <= sim.arm.velocity_limits * 0.1 * 1.05 + 1e-3)
        sim.step(240 * 3)
        np.testing.assert_allclose(sim.get_joints(), goal, atol=2e-3)


def test_self_collision_query():
    with ArmSim("niryo_one") as sim:
        assert sim.self_collisions() == []
        # the elbow folded shut: the forearm lies in the arm
        sim.set_joints([0, -1.57, -1.39, 0, 0, 0])
        assert ("arm_link", "forearm_link") in sim.self_collisions()
        assert sim.in_self_collision()
        # stretched out: clear of itself
        sim.set_joints([0, -1.2, 1.0, 0, 0, 0])
        assert not sim.in_self_collision()


def test_tip_pose_is_relative_to_a_chosen_base():
    arm = ArmModel.load("niryo_one", base="shoulder_link")
    with ArmSim(arm) as sim:
        pos, _ = sim.end_effector_pose()
    np.testing.assert_allclose(pos, [0.2452, 0, 0.4175 - 0.103], atol=5e-4)


def test_snapshot_writes_a_png(tmp_path):
    with ArmSim("niryo_one") as sim:
        sim.set_joints([0.5, -0.3, 0.2, 0, 0.4, 0])
        path = sim.snapshot(tmp_path / "arm.png", width=160, height=120)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    img = matplotlib.image.imread(path)
    assert img.shape[:2] == (120, 160)
    assert img[..., :3].std() > 0.01  # not a blank picture: the arm is in it


MESH_ARM = """<?xml version="1.0"?>
<robot name="meshy">
  <link name="a"><inertial><mass value="1"/>
  <inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial>
    <visual><geometry><mesh filename="meshes/cube.obj" scale="0.05 0.05 0.05"/></geometry></visual>
    <collision><geometry><mesh filename="meshes/cube.obj" scale="0.05 0.05 0.05"/></geometry>
    </collision></link>
  <link name="b"><inertial><mass value="1"/>
  <inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial>
    <visual><geometry><mesh filename="meshes/cube.obj" scale="0.05 0.05 0.05"/></geometry>
    </visual></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.2"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_model_folder_of_a_mesh_urdf_finds_its_meshes_where_it_was_trained(tmp_path):
    import shutil
    import warnings

    import torch

    from robot_ik_nn import model_dir
    from robot_ik_nn.arm.resources import pybullet_data_path
    from robot_ik_nn.learn.network import IKNet, NetConfig

    src = tmp_path / "arm"
    (src / "meshes").mkdir(parents=True)
    shutil.copy(pybullet_data_path() / "cube.obj", src / "meshes" / "cube.obj")
    (src / "meshy.urdf").write_text(MESH_ARM)
    arm = ArmModel.load(src / "meshy.urdf")
    torch.manual_seed(0)
    model_dir.save(tmp_path / "model", IKNet.for_arm(arm, NetConfig(1, "position", [8])), arm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the meshes are found: no shape goes missing
        with ArmSim(model_dir.load(tmp_path / "model").arm) as sim:
            assert sim.forward(np.array([[0.5]]))[0].shape == (1, 3)
    shutil.rmtree(
        src
    )  # moved to a machine without the meshes: the arm still loads, shapes left out
    with pytest.warns(UserWarning, match="no shapes for links"):
        with ArmSim(model_dir.load(tmp_path / "model").arm) as sim:
            pos, _ = sim.forward(np.array([[0.0]]))
    np.testing.assert_allclose(pos[0], [0, 0, 0.2], atol=1e-6)
