"""The ROS 2 package: package.xml, the ament index marker, and a real colcon build."""

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros

ROOT = Path(__file__).resolve().parent.parent
EXECUTABLES = ["robot-ik-nn", "sim_node", "learner_node", "inference_node"]


def test_package_xml():
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.get("format") == "3" and root.findtext("name") == "robot_ik_nn"
    maintainer = root.find("maintainer")
    assert re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", maintainer.get("email"))
    assert root.find("export/build_type").text == "ament_python"
    deps = {e.text for e in root.findall("exec_depend")}
    assert {
        "rclpy",
        "std_msgs",
        "sensor_msgs",
        "geometry_msgs",
        "trajectory_msgs",
        "visualization_msgs",
        "diagnostic_msgs",
        "robot_state_publisher",
        "rviz2",
        "launch",
        "launch_ros",
    } <= deps


def test_every_message_package_the_code_imports_is_declared():
    deps = {e.text for e in ET.parse(ROOT / "package.xml").getroot().findall("exec_depend")}
    imported = set()
    for path in (ROOT / "robot_ik_nn").rglob("*.py"):
        imported |= set(
            re.findall(
                r"^from (\w+_msgs|rcl_interfaces|builtin_interfaces)\.", path.read_text(), re.M
            )
        )
    assert imported and imported <= deps, imported - deps


def test_ament_index_marker_and_script_dirs():
    assert (ROOT / "resource" / "robot_ik_nn").is_file()
    cfg = (ROOT / "setup.cfg").read_text()
    assert (
        "script_dir=$base/lib/robot_ik_nn" in cfg
        and "install_scripts=$base/lib/robot_ik_nn" in cfg
    )


# What a colcon workspace needs of this package when git cannot say what is tracked (a copy).
PACKAGE_PARTS = [
    "package.xml",
    "setup.py",
    "setup.cfg",
    "LICENSE",
    "README.md",
    "resource",
    "robot_ik_nn",
    "launch",
    "urdf",
    "config",
]


def _listed_files() -> list[str] | None:
    """The tracked and not-ignored files, or None outside a git work tree."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    files = [name for name in listed.stdout.split("\0") if name]
    return files if listed.returncode == 0 and files else None


def _sources(dest: Path) -> None:
    files = _listed_files()
    if files is None:
        files = [
            str(path.relative_to(ROOT))
            for part in PACKAGE_PARTS
            for path in (
                [ROOT / part] if (ROOT / part).is_file() else sorted((ROOT / part).rglob("*"))
            )
            if path.is_file() and "__pycache__" not in path.parts
        ]
    for name in files:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _colcon_importable() -> bool:
    return (
        subprocess.run(
            [sys.executable, "-c", "import colcon_core.command, colcon_ros"],
            capture_output=True,
            timeout=60,
        ).returncode
        == 0
    )


def test_colcon_build_installs_executables_and_shared_files(tmp_path):
    src = tmp_path / "ws" / "src" / "robot_ik_nn"
    _sources(src)
    assert (src / "package.xml").is_file()
    # a failure, not a skip: `make test` installs colcon-core and colcon-ros (the [test] extra)
    assert _colcon_importable(), (
        f"colcon-core / colcon-ros are not importable from {sys.executable}"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    # colcon runs setup.py with the interpreter it runs under: this venv's, not the PATH's colcon
    colcon = [
        sys.executable,
        "-c",
        "import sys; from colcon_core.command import main; sys.exit(main())",
    ]
    run = subprocess.run(
        [*colcon, "build", "--base-paths", "src", "--event-handlers", "console_direct-"],
        cwd=tmp_path / "ws",
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    install = tmp_path / "ws" / "install" / "robot_ik_nn"
    lib = install / "lib" / "robot_ik_nn"
    for exe in EXECUTABLES:
        assert (lib / exe).is_file() and os.access(lib / exe, os.X_OK), exe
    share = install / "share" / "robot_ik_nn"
    assert (share / "package.xml").is_file()
    assert {p.name for p in (share / "urdf").iterdir()} >= {
        "niryo_one.urdf",
        "inmoov_right_arm.urdf",
    }
    assert {p.name for p in (share / "launch").iterdir()} >= {
        "train.launch.py",
        "inference.launch.py",
        "display.launch.py",
    }
    assert {p.name for p in (share / "config").iterdir()} >= {
        "train.yaml",
        "inference.yaml",
        "display.yaml",
        "robot_ik_nn.rviz",
    }
    # every launch file and config the source has is installed, whatever gets added later
    for folder, patterns in (
        ("launch", ["*.py"]),
        ("config", ["*.yaml", "*.rviz"]),
        ("urdf", ["*.urdf"]),
    ):
        expected = {p.name for pattern in patterns for p in (ROOT / folder).glob(pattern)}
        installed = (
            {p.name for p in (share / folder).iterdir()} if (share / folder).is_dir() else set()
        )
        assert expected <= installed, (folder, expected - installed)
    assert (
        install / "share" / "ament_index" / "resource_index" / "packages" / "robot_ik_nn"
    ).is_file()
    # the installed package finds its shared files through the install tree
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from robot_ik_nn.arm.resources import share_dir; print(share_dir())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **env,
            "PYTHONPATH": str(next(install.glob("lib/python*/site-packages"))),
            "AMENT_PREFIX_PATH": str(install),
        },
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()) == share


def test_one_version_everywhere():
    """package.xml, setup.py and robot_ik_nn.__version__ name the same release."""
    import robot_ik_nn

    xml = ET.parse(ROOT / "package.xml").getroot().findtext("version")
    setup = re.search(r'version="([^"]+)"', (ROOT / "setup.py").read_text()).group(1)
    assert xml == setup == robot_ik_nn.__version__, (xml, setup, robot_ik_nn.__version__)
