"""The sessions: which nodes run, with which parameters (``train``, ``inference``, ``display``).

One source of truth for both ways of starting them: the launch files in ``launch/`` turn
:func:`plan` into launch_ros ``Node`` actions (a ROS install with ``ros2 launch``), and
:func:`run_session` starts the same nodes with the same parameters in one process (a machine
with only the rclpy wheels: ``robot-ik-nn launch train``). Parameters come from the params file
(``ros__parameters`` layout) with the launch arguments applied on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .arm.resources import config_path, share_dir


@dataclass(frozen=True)
class Argument:
    default: str
    description: str


COMMON = {
    "robot": Argument(
        "niryo_one", "arm: niryo_one, inmoov_right_arm, franka_panda, kuka_iiwa or a URDF path"
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
}

ARGUMENTS = {
    "train": {
        **COMMON,
        "minutes": Argument("", "training budget in minutes; '' = the params file's"),
    },
    "inference": {**COMMON, "use_sim": Argument("true", "run sim_node as the stand-in arm")},
    "display": {**COMMON},
}


@dataclass
class PlannedNode:
    executable: str
    name: str
    parameters: dict = field(default_factory=dict)
    remappings: list[tuple[str, str]] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    package: str = "robot_ik_nn"
    ends_session: bool = False  # when it exits, the whole session ends

    @property
    def external(self) -> bool:
        """Not a node of this package: needs a ROS install (robot_state_publisher, rviz2)."""
        return self.package != "robot_ik_nn"


class SessionError(ValueError):
    pass


def _truthy(value: str) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


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
    return {name: str(given.get(name, arg.default)) for name, arg in known.items()}


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


def plan(session: str, given: dict[str, str] | None = None) -> list[PlannedNode]:
    """The nodes of a session, parameters resolved, in start order."""
    from .arm.model import resolve_robot

    args = resolve_arguments(session, given or {})
    params = load_params(args["params_file"] or config_path(f"{session}.yaml"))
    robot, controller = args["robot"], args["controller"]

    def node(executable, **kwargs):
        return PlannedNode(
            executable, executable, parameters=dict(params.get(executable, {})), **kwargs
        )

    nodes = []
    sim = node("sim_node")
    sim.parameters.update(robot=robot, controller=controller)
    if session == "train":
        learner = node("learner_node", ends_session=True)
        learner.parameters.update(robot=robot, output_dir=args["model_dir"])
        if args["minutes"]:
            learner.parameters["minutes"] = float(args["minutes"])
        sim.remappings.append(("target_pose", "/learner_node/demo_target"))
        nodes += [sim, learner]
    elif session == "inference":
        inference = node("inference_node")
        inference.parameters.update(
            model_dir=args["model_dir"], controller=controller, robot=robot
        )
        sim.remappings.append(("target_pose", "/inference_node/target_pose"))
        nodes += [inference] + ([sim] if _truthy(args["use_sim"]) else [])
    else:
        nodes.append(sim)
    urdf_file, _ = resolve_robot(robot)
    nodes.append(
        PlannedNode(
            "robot_state_publisher",
            "robot_state_publisher",
            package="robot_state_publisher",
            parameters={"robot_description": Path(urdf_file).read_text()},
        )
    )
    if _truthy(args["rviz"]):
        nodes.append(
            PlannedNode(
                "rviz2", "rviz2", package="rviz2", arguments=["-d", str(rviz_config(robot))]
            )
        )
    return nodes


def rviz_config(robot: str) -> Path:
    """config/robot_ik_nn.rviz, fixed frame set to the arm's base link (a temporary copy)."""
    import tempfile

    from .arm.model import ArmModel

    base = ArmModel.load(robot).base
    text = (share_dir() / "config" / "robot_ik_nn.rviz").read_text()
    text = text.replace("Fixed Frame: base_link", f"Fixed Frame: {base}")
    out = Path(tempfile.gettempdir()) / f"robot_ik_nn_{base}.rviz"
    out.write_text(text)
    return out


def parse_assignments(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise SessionError(f"expected name:=value, got '{item}'")
        out[name] = value
    return out


def run_session(session: str, items: list[str]) -> int:
    """Start a session's nodes in this process (rclpy executor) until it ends or Ctrl-C."""
    from .nodes.runner import run

    try:
        nodes = plan(session, parse_assignments(items))
    except SessionError as err:
        print(f"robot-ik-nn launch {session}: error: {err}")
        return 2
    return run(nodes)
