"""The ROS 2 package: package.xml, the ament index marker, and a real colcon build."""
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXECUTABLES = ["robot-ik-nn", "sim_node", "learner_node", "inference_node"]


def test_package_xml():
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.get("format") == "3" and root.findtext("name") == "robot_ik_nn"
    maintainer = root.find("maintainer")
    assert re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", maintainer.get("email"))
    assert root.find("export/build_type").text == "ament_python"
    deps = {e.text for e in root.findall("exec_depend")}
    assert {"rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs", "visualization_msgs",
            "diagnostic_msgs", "robot_state_publisher", "rviz2", "launch", "launch_ros"} <= deps


def test_every_message_package_the_code_imports_is_declared():
    deps = {e.text for e in ET.parse(ROOT / "package.xml").getroot().findall("exec_depend")}
    imported = set()
    for path in (ROOT / "robot_ik_nn").rglob("*.py"):
        imported |= set(re.findall(r"^from (\w+_msgs|rcl_interfaces|builtin_interfaces)\.", path.read_text(), re.M))
    assert imported and imported <= deps, imported - deps


def test_ament_index_marker_and_script_dirs():
    assert (ROOT / "resource" / "robot_ik_nn").is_file()
    cfg = (ROOT / "setup.cfg").read_text()
    assert "script_dir=$base/lib/robot_ik_nn" in cfg and "install_scripts=$base/lib/robot_ik_nn" in cfg


def _sources(dest: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    files = listed.stdout.split() if listed.returncode == 0 else []
    for name in files:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def test_colcon_build_installs_executables_and_shared_files(tmp_path):
    src = tmp_path / "ws" / "src" / "robot_ik_nn"
    _sources(src)
    assert (src / "package.xml").is_file()
    colcon = Path(sys.executable).parent / "colcon"
    assert colcon.exists(), "make test installs colcon-core and colcon-ros; colcon is missing"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([str(colcon), "build", "--base-paths", "src", "--event-handlers", "console_direct-"],
                         cwd=tmp_path / "ws", capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    install = tmp_path / "ws" / "install" / "robot_ik_nn"
    lib = install / "lib" / "robot_ik_nn"
    for exe in EXECUTABLES:
        assert (lib / exe).is_file() and os.access(lib / exe, os.X_OK), exe
    share = install / "share" / "robot_ik_nn"
    assert (share / "package.xml").is_file()
    assert {p.name for p in (share / "urdf").iterdir()} >= {"niryo_one.urdf", "inmoov_right_arm.urdf"}
    assert {p.name for p in (share / "launch").iterdir()} >= {"train.launch.py", "inference.launch.py",
                                                              "display.launch.py"}
    assert {p.name for p in (share / "config").iterdir()} >= {"train.yaml", "inference.yaml", "display.yaml",
                                                              "robot_ik_nn.rviz"}
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / "robot_ik_nn").is_file()
    # the installed package finds its shared files through the install tree
    probe = subprocess.run([sys.executable, "-c", "from robot_ik_nn.resources import share_dir; print(share_dir())"],
                           capture_output=True, text=True, timeout=60,
                           env={**env, "PYTHONPATH": str(next(install.glob("lib/python*/site-packages"))),
                                "AMENT_PREFIX_PATH": str(install)}, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()) == share
