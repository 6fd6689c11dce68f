"""Where the package's shared files (urdf/, config/, launch/) live at run time.

The same code runs from a source checkout, a pip install and a colcon workspace, and each
puts the files somewhere else. Set ``ROBOT_IK_NN_SHARE`` to force a folder.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

PACKAGE = "robot_ik_nn"

# Arms that can be named instead of given as a path: the package's own URDFs, and third-party
# arms shipped with pybullet_data (path inside it, default tip link).
BUILTIN_ROBOTS = ("niryo_one", "inmoov_right_arm", "niryo_ned2")
PYBULLET_ROBOTS = {
    "franka_panda": ("franka_panda/panda.urdf", "panda_hand"),
    "kuka_iiwa": ("kuka_iiwa/model.urdf", None),
}
NAMED_ROBOTS = BUILTIN_ROBOTS + tuple(PYBULLET_ROBOTS)

# every arm in pybullet_data (legged robots and cars are not arms), with its tip where the tree
# branches (a gripper's fingers)
PYBULLET_DATA_ARMS = {
    "kuka_iiwa/model.urdf": None,
    "kuka_iiwa/model_for_sdf.urdf": None,
    "kuka_iiwa/model_free_base.urdf": None,
    "kuka_iiwa/model_vr_limits.urdf": None,
    "xarm/xarm6_robot.urdf": None,
    "xarm/xarm6_robot_white.urdf": None,
    "xarm/xarm6_with_gripper.urdf": "xarm_gripper_base_link",
    "franka_panda/panda.urdf": "panda_hand",
}

# Each named arm's tool frame (docs/arms.md draws them): the tool axis that points the way the
# tool points (its approach axis, what a symmetric tool frees: free_axis), and the tool axis the
# last joint turns about. test_tool_axes checks the second against PyBullet's own joint frames.
TOOL_AXES = {
    "niryo_one": ("x", "x"),
    "niryo_ned2": ("x", "x"),
    "inmoov_right_arm": ("-z", "z"),
    "franka_panda": ("z", "z"),
    "kuka_iiwa": ("z", "z"),
}


def tool_axes_text() -> str:
    """One line per named arm: which tool axis points the way the tool points."""
    return "\n".join(
        f"  {name:<17} the tool points along its {approach} axis; the last joint turns about "
        f"tool {last}" + ("  (free_axis x, not z)" if approach == "x" else "")
        for name, (approach, last) in TOOL_AXES.items()
    )


def _candidates() -> list[Path]:
    found = []
    if os.environ.get("ROBOT_IK_NN_SHARE"):
        found.append(Path(os.environ["ROBOT_IK_NN_SHARE"]))
    found.append(Path(__file__).resolve().parents[2])  # source checkout / editable install
    try:  # colcon workspace or a ROS install
        from ament_index_python.packages import get_package_share_directory

        found.append(Path(get_package_share_directory(PACKAGE)))
    except Exception:  # noqa: BLE001 - not installed through ament: fall through
        pass
    found.append(Path(sys.prefix) / "share" / PACKAGE)  # data_files of a plain pip install
    return found


@lru_cache(maxsize=None)
def share_dir() -> Path:
    """The folder holding ``urdf/`` and ``config/``."""
    for candidate in _candidates():
        if (candidate / "urdf" / "niryo_one.urdf").is_file():
            return candidate
    raise FileNotFoundError(
        "cannot find robot_ik_nn's shared files (urdf/, config/); searched: "
        + ", ".join(str(c) for c in _candidates())
        + ". Set ROBOT_IK_NN_SHARE to the folder that holds urdf/."
    )


def urdf_path(name: str) -> Path:
    return share_dir() / "urdf" / f"{name}.urdf"


def config_path(name: str) -> Path:
    return share_dir() / "config" / name


def pybullet_data_path() -> Path | None:
    """pybullet_data's folder (third-party arms such as the Franka Panda), or None."""
    try:
        import pybullet_data
    except ImportError:
        return None
    return Path(pybullet_data.getDataPath())


def find_mesh(filename: str, dirs) -> Path | None:
    """A URDF's mesh file name (``package://pkg/...``, ``file://``, relative or absolute) -> the
    file it names, looked for in ``dirs`` (and each one's parent, with and without the package
    name's first folder), or None. The one lookup every reader of meshes uses."""
    name = filename.replace("package://", "").replace("file://", "")
    if not name:
        return None
    if Path(name).is_absolute():
        return Path(name) if Path(name).is_file() else None
    tails = [Path(name)] + ([Path(*Path(name).parts[1:])] if len(Path(name).parts) > 1 else [])
    for d in dirs:
        for base in (Path(d), Path(d).parent):
            for tail in tails:
                if (base / tail).is_file():
                    return (base / tail).resolve()
    return None
