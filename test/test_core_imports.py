"""The boundaries, each checked in a fresh interpreter: the core imports neither rclpy nor
pybullet (only nodes/ and hardware/ do; learn/ needs torch but neither), and serving (ik/,
safety, reading a model folder, the arm) imports no torch either."""

import pkgutil
import subprocess
import sys

import robot_ik_nn

CHECK = """
import importlib, sys
for name in {modules!r}:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m.split('.')[0] in {forbidden!r})
print(sorted(set(m.split('.')[0] for m in bad)))
"""
SERVING = [
    "robot_ik_nn.ik",
    "robot_ik_nn.ik.solver",
    "robot_ik_nn.ik.kernel",
    "robot_ik_nn.ik.layout",
    "robot_ik_nn.ik.policy",
    "robot_ik_nn.ik.network_forward",
    "robot_ik_nn.ik.verdicts",
    "robot_ik_nn.ik.reasons",
    "robot_ik_nn.ik.results",
    "robot_ik_nn.ik.network_backends",
    "robot_ik_nn.ik.several_answers",
    "robot_ik_nn.ik.settings",
    "robot_ik_nn.ik.onnx_layers",
    "robot_ik_nn.ik.collision",
    "robot_ik_nn.calibration.fit",
    "robot_ik_nn.calibration.folder",
    "robot_ik_nn.calibration.measurements",
    "robot_ik_nn.calibration.true_arm",
    "robot_ik_nn.safety",
    "robot_ik_nn.model_dir",
    "robot_ik_nn.arm.model",
    "robot_ik_nn.arm.rotations",
    "robot_ik_nn.evaluate",
    "robot_ik_nn.bench",
    "robot_ik_nn.cli",
]


def _core_modules():
    names = ["robot_ik_nn"]
    for info in pkgutil.walk_packages(robot_ik_nn.__path__, "robot_ik_nn."):
        if info.name.startswith(("robot_ik_nn.nodes", "robot_ik_nn.hardware")):
            continue  # rclpy lives in nodes/; pybullet and vendor clients in hardware/
        names.append(info.name)
    return names


def _imported(modules, forbidden) -> list:
    out = subprocess.run(
        [sys.executable, "-c", CHECK.format(modules=modules, forbidden=forbidden)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip())


def test_importing_the_core_pulls_in_neither_rclpy_nor_pybullet():
    modules = _core_modules()
    assert "robot_ik_nn.ik.kernel" in modules and "robot_ik_nn.arm.model" in modules
    assert "robot_ik_nn.learn.training" in modules  # learn/: torch, but no rclpy or pybullet
    assert "robot_ik_nn.learn.learners.explore" in modules  # pybullet only once it runs
    assert _imported(modules, ("rclpy", "pybullet", "pyniryo", "serial")) == []


def test_serving_imports_no_torch():
    assert _imported(SERVING, ("torch", "rclpy", "pybullet")) == []


def test_the_checks_themselves_see_what_they_look_for():
    assert _imported(["robot_ik_nn.hardware.pybullet_arm"], ("pybullet",)) == ["pybullet"]
    assert _imported(["robot_ik_nn.ik.torch_solver"], ("torch",)) == ["torch"]
