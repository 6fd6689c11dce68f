"""A session's launch arguments: the ones each session declares (``ARGUMENTS``, which the launch
files declare too), checked and resolved, and the params file they point to. session.py plans the
nodes from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..arm.resources import share_dir
from ..hardware import arms


@dataclass(frozen=True)
class Argument:
    default: str
    description: str


COMMON = {
    "robot": Argument(
        "niryo_one",
        "arm: niryo_one, inmoov_right_arm, franka_panda, kuka_iiwa or a URDF path (inference: "
        "the model folder's own arm unless given)",
    ),
    "params_file": Argument(
        "", "YAML parameters (ros__parameters layout); '' = config/<session>.yaml"
    ),
    "rviz": Argument("false", "start RViz with config/robot_ik_nn.rviz"),
    "controller": Argument(
        "arm_controller", "trajectory topic prefix: <controller>/joint_trajectory"
    ),
    "model_dir": Argument(
        "models/niryo_one", "model folder (written by train, served by inference)"
    ),
    "view": Argument("false", "the browser page beside the session (robot-ik-nn view --ros)"),
    "view_port": Argument("8080", "the page's port: http://127.0.0.1:<view_port>"),
}

ARGUMENTS = {
    "train": {
        **COMMON,
        "minutes": Argument("", "training budget in minutes; '' = the params file's"),
    },
    "inference": {
        **COMMON,
        # '' rather than a name: ros2 launch passes every declared argument, given or not
        "robot": Argument("", "arm as above; '' = the model folder's own arm"),
        "model_dir": Argument(
            "models/niryo_one",
            "model folder to serve: an absolute path, or relative to the working directory or "
            "to the package's share folder",
        ),
        "use_sim": Argument("true", "run sim_node as the stand-in arm"),
        # joining a bringup that already has the robot
        "use_rsp": Argument(
            "true",
            "start robot_state_publisher; false beside a bringup that has one (the node then "
            "checks the model against the /robot_description it publishes)",
        ),
        "use_sim_time": Argument("false", "every node of the session on the /clock topic"),
        "joint_states": Argument("/joint_states", "the topic the arm's joint states come on"),
    },
    "display": {**COMMON},
    "deploy": {
        "arm": Argument("niryo_one", f"the real arm: {', '.join(arms.names())}"),
        "model_dir": COMMON["model_dir"],
        "host": Argument("127.0.0.1", "the arm's address (Niryo One, Ned)"),
        "port": Argument("", "TCP port or serial device; '' = the driver's (40001; InMoov: none)"),
        "calibration": Argument("", "InMoov: the servo calibration YAML (robot-ik-nn calibrate)"),
        "dry_run": Argument("false", "start the arm's emulator and drive it instead of the arm"),
        "start_enabled": Argument("false", "move on targets at once (else after ~/resume)"),
        "params_file": COMMON["params_file"],
        "rviz": COMMON["rviz"],
    },
    "calibrate": {
        "model_dir": COMMON["model_dir"],
        "out": Argument("models/niryo_one_calibrated", "the calibrated model folder to write"),
        "controller": COMMON["controller"],
        "measured_pose": Argument(
            "/measured_pose", "the tracker's PoseStamped topic (aruco_ros, vrpn_mocap...)"
        ),
        "frame_id": Argument("tracker", "the frame_id the tracker's poses carry"),
        "poses": Argument("", "poses to measure (at most 100); '' = the params file's"),
        "use_sim": Argument(
            "true", "the simulated arm (sim_node) and the simulated tracker (tracker_node)"
        ),
        "sim_urdf": Argument("", "use_sim: the true arm simulated ('' = the model's own)"),
        "sim_stiffness": Argument("", "use_sim: soft joints that sag ('' = the params file's)"),
        "params_file": COMMON["params_file"],
        "rviz": COMMON["rviz"],
    },
}


def __getattr__(name: str):
    if name == "DEPLOY_ARMS":  # the old name, kept: deploy's arm -> (driver, emulator, URDF)
        return {e.name: (e.driver, e.emulator, e.robot) for e in arms.arms()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SessionError(ValueError):
    pass


def truthy(value: str, name: str) -> bool:
    """A switch as launch files write it; anything else (``rviz:=maybe``) is refused."""
    word = str(value).strip().lower()
    if word not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        raise SessionError(f"{name}:={value} is not a switch: say {name}:=true or {name}:=false")
    return word in ("1", "true", "yes", "on")


def resolve_arguments(session: str, given: dict[str, str]) -> dict[str, str]:
    if session not in ARGUMENTS:
        raise SessionError(f"unknown session '{session}'; choose one of {', '.join(ARGUMENTS)}")
    known = ARGUMENTS[session]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise SessionError(
            f"unknown argument(s) {', '.join(unknown)} for {session}; "
            f"arguments are: {', '.join(known)}"
        )
    args = {name: str(given.get(name, arg.default)) for name, arg in known.items()}
    for name, fits, what in (
        ("view_port", lambda v: v.isascii() and v.isdecimal() and 1 <= int(v) <= 65535,
         "a port from 1 to 65535"),
        ("minutes", lambda v: v == "" or positive(v), "a number of minutes above 0"),
    ):
        if name in args and not fits(args[name]):
            raise SessionError(f"{name}:={args[name]} is not {what}")
    return args


def positive(text: str) -> bool:
    try:
        return 0 < float(text) < float("inf")
    except ValueError:
        return False


def load_params(path: str | Path) -> dict[str, dict]:
    """``{node_name: {parameter: value}}`` from a ROS 2 params file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as err:
        raise SessionError(f"params file not found: {path}") from err
    except yaml.YAMLError as err:
        raise SessionError(f"params file {path} is not valid YAML: {err}") from err
    out = {}
    for node, section in data.items():
        if not isinstance(section, dict) or "ros__parameters" not in section:
            raise SessionError(f"params file {path}: '{node}' has no ros__parameters section")
        out[node.lstrip("/")] = dict(section["ros__parameters"] or {})
    return out


def resolve_model_dir(text: str) -> str:
    """A model folder as launch arguments give it: an absolute path, else relative to the
    working directory, else to the package's share folder (an installed package's models/).
    A relative one found in neither stays as given: the node names what is missing."""
    path = Path(text).expanduser()
    if path.is_absolute():
        if not path.exists():
            raise SessionError(f"model_dir:={text} does not exist")
        return str(path)
    if path.exists():
        return str(path.resolve())
    try:
        shared = share_dir() / path
    except FileNotFoundError:
        return text
    return str(shared) if shared.exists() else text


def parse_assignments(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise SessionError(f"expected name:=value, got '{item}'")
        out[name] = value
    return out
