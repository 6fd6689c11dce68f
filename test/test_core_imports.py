"""The core stays importable without ROS: only nodes/ and sim.py import rclpy or pybullet."""
import pkgutil
import subprocess
import sys

import robot_ik_nn

CORE_CHECK = """
import importlib, sys
for name in {modules!r}:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('rclpy', 'pybullet'))
print(bad)
"""


def _core_modules():
    names = ["robot_ik_nn"]
    for info in pkgutil.walk_packages(robot_ik_nn.__path__, "robot_ik_nn."):
        if info.name.startswith("robot_ik_nn.nodes") or info.name == "robot_ik_nn.sim":
            continue
        names.append(info.name)
    return names


def test_importing_the_core_pulls_in_neither_rclpy_nor_pybullet():
    modules = _core_modules()
    assert "robot_ik_nn.kinematics" in modules and "robot_ik_nn.robot" in modules
    out = subprocess.run([sys.executable, "-c", CORE_CHECK.format(modules=modules)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_the_check_itself_sees_pybullet_when_sim_is_imported():
    out = subprocess.run([sys.executable, "-c", CORE_CHECK.format(modules=["robot_ik_nn.sim"])],
                         capture_output=True, text=True, timeout=120)
    assert "pybullet" in out.stdout
