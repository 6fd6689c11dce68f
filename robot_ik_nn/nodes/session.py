"""The sessions: which nodes run, with which parameters (``train``, ``inference``, ``display``,
``deploy``, ``calibrate``).

One source of truth for both ways of starting them: the launch files in ``launch/`` turn
:func:`plan` into launch_ros ``Node`` actions (a ROS install with ``ros2 launch``), and
:func:`run_session` starts the same nodes with the same parameters in one process (a machine
with only the rclpy wheels: ``robot-ik-nn launch train``). Parameters come from the params file
(``ros__parameters`` layout) with the launch arguments (session_arguments.py) applied on top.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..arm.model import ArmModel, resolve_robot
from ..arm.resources import NAMED_ROBOTS, config_path, share_dir
from ..hardware import arms
from ..model_dir import ARCHIVES, ModelDirError, read, read_meta
from ..view.cli import session_command
from .session_arguments import (
    COMMON,
    SessionError,
    load_params,
    parse_assignments,
    positive,
    resolve_arguments,
    resolve_model_dir,
    truthy,
)

DRY_RUN_TTY = "/tmp/robot_ik_nn_inmoov_tty"  # a serial arm's emulated terminal in a dry run
# what the arm node's marker shows in a session with the inference node: the targets it took,
# republished after their verdicts. Never /inference_node/target_pose itself: a subscriber there
# must be the inference node, ready (inference_node.py's docstring)
TARGET_TAKEN = "/inference_node/target_taken"


@dataclass
class PlannedNode:
    executable: str
    name: str
    parameters: dict = field(default_factory=dict)
    remappings: list[tuple[str, str]] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    package: str = "robot_ik_nn"
    ends_session: bool = False  # when it exits, the whole session ends
    command: list[str] = field(default_factory=list)  # not a ROS node: a process to run

    @property
    def external(self) -> bool:
        """Not a node of this package: needs a ROS install (robot_state_publisher, rviz2)."""
        return self.package != "robot_ik_nn"


def plan(session: str, given: dict[str, str] | None = None) -> list[PlannedNode]:
    """The nodes of a session, parameters resolved, in start order."""
    args = resolve_arguments(session, given or {})
    params = load_params(args["params_file"] or config_path(f"{session}.yaml"))
    if session == "deploy":
        return _deploy(args, params)
    if session == "calibrate":
        return _calibrate(args, params)
    robot, controller = args["robot"], args["controller"]
    if session == "inference":
        args["model_dir"] = resolve_model_dir(args["model_dir"])
    own = None  # the model folder's own arm, served when no robot is given
    if session == "inference" and not robot:
        own = _model_arm(args["model_dir"])
        robot = own["robot"] if own else COMMON["robot"].default
    arm = own or {"robot": robot}  # what sim_node is given

    def node(executable, **kwargs):
        return PlannedNode(
            executable, executable, parameters=dict(params.get(executable, {})), **kwargs
        )

    nodes = []
    sim = node("sim_node")
    sim.parameters.update(**arm, controller=controller)
    if session == "train":
        learner = node("learner_node", ends_session=True)
        learner.parameters.update(robot=robot, output_dir=args["model_dir"])
        if args["minutes"]:
            learner.parameters["minutes"] = float(args["minutes"])  # checked: a number
        sim.remappings.append(("target_pose", "/learner_node/demo_target"))
        nodes += [sim, learner]
    elif session == "inference":
        inference = node("inference_node")
        inference.parameters.update(  # robot '': the model folder's own
            model_dir=args["model_dir"], controller=controller, robot="" if own else robot
        )
        sim.remappings.append(("target_pose", TARGET_TAKEN))  # the marker: not target_pose
        nodes += [inference] + ([sim] if truthy(args["use_sim"], "use_sim") else [])
        return _join_bringup(args, nodes, robot)
    else:
        nodes.append(sim)
    if truthy(args["view"], "view"):  # the browser page, a process beside the nodes (view/)
        command = session_command(session, robot, args["model_dir"], args["view_port"])
        nodes.append(PlannedNode("view", "view", command=command))
    return nodes + _display(robot, args["rviz"])


def _join_bringup(args: dict, nodes: list, robot: str) -> list[PlannedNode]:
    """The inference session beside a bringup: no robot_state_publisher of its own (use_rsp),
    sim time, the joint states' topic remapped."""
    if args["joint_states"] != "/joint_states":
        if not args["joint_states"].startswith("/"):
            raise SessionError(f"joint_states:={args['joint_states']} is not a topic: say /name")
        for spec in nodes:
            spec.remappings.append(("/joint_states", args["joint_states"]))
    use_rsp = truthy(args["use_rsp"], "use_rsp")
    if not use_rsp:  # the bringup's /robot_description is checked against the model's arm
        nodes[0].parameters["check_robot_description"] = True
    if truthy(args["view"], "view"):
        command = session_command("inference", robot, args["model_dir"], args["view_port"])
        nodes.append(PlannedNode("view", "view", command=command))
    nodes += _display(robot, args["rviz"], use_rsp=use_rsp)
    if truthy(args["use_sim_time"], "use_sim_time"):
        for spec in nodes:
            if not spec.command:
                spec.parameters["use_sim_time"] = True
    return nodes


def _model_arm(model_dir: str) -> dict | None:
    """The arm a model folder was trained on, as sim_node's parameters: its name when it is a
    named arm, else the folder's own robot.urdf, with the base and tip links; None when the
    folder cannot be read (the inference node then says why)."""
    folder = Path(model_dir)
    try:
        if folder.is_file() and folder.name.endswith(ARCHIVES):  # exported: its unpacked copy
            folder = read(folder).path
        meta = read_meta(folder)
    except ModelDirError:
        return None
    name = meta.get("robot")
    robot = name if name in NAMED_ROBOTS else str(folder / "robot.urdf")
    return {"robot": robot, "base_link": meta.get("base", ""), "tip_link": meta.get("tip", "")}


def _display(robot: str, rviz: str, use_rsp: bool = True) -> list[PlannedNode]:
    """robot_state_publisher (TF for RViz) unless the bringup has one, and, when asked, RViz
    itself: ROS-install nodes."""
    urdf_file, _ = resolve_robot(robot)
    nodes = []
    if use_rsp:
        nodes.append(
            PlannedNode(
                "robot_state_publisher",
                "robot_state_publisher",
                package="robot_state_publisher",
                parameters={"robot_description": Path(urdf_file).read_text()},
            )
        )
    if truthy(rviz, "rviz"):
        nodes.append(
            PlannedNode(
                "rviz2", "rviz2", package="rviz2", arguments=["-d", str(rviz_config(robot))]
            )
        )
    return nodes


def _deploy(args: dict, params: dict) -> list[PlannedNode]:
    """The inference node driving a real arm through arm_node; with dry_run, its emulator."""
    try:
        entry = arms.by_name(args["arm"])
    except arms.UnknownArm:
        raise SessionError(
            f"arm must be one of {', '.join(arms.names())}, not '{args['arm']}'"
        ) from None
    driver, emulator, robot = entry.driver, entry.emulator, entry.robot
    port = args["port"]
    nodes = []
    if truthy(args["dry_run"], "dry_run"):
        port = port or (DRY_RUN_TTY if entry.serial else str(entry.default_port))
        where = ["--link", port] if entry.serial else ["--port", port]
        command = ["robot-ik-nn", "emulate", emulator, "--robot", robot, *where]
        if args["calibration"]:
            command += ["--calibration", args["calibration"]]
        nodes.append(PlannedNode("emulator", f"{emulator}_emulator", command=command))
    elif entry.serial and not port:
        raise SessionError(f"arm:={entry.name} needs port:= the serial device (/dev/ttyACM0)")
    arm = PlannedNode("arm_node", "arm_node", parameters=dict(params.get("arm_node", {})))
    arm.parameters.update(
        robot=robot, driver=driver, host=args["host"], port=port,
        calibration=args["calibration"],
        start_enabled=truthy(args["start_enabled"], "start_enabled"),
    )
    inference = PlannedNode(
        "inference_node", "inference_node", parameters=dict(params.get("inference_node", {}))
    )
    inference.parameters.update(
        model_dir=args["model_dir"], robot=robot, calibration=args["calibration"]
    )
    arm.remappings.append(("target_pose", TARGET_TAKEN))
    return nodes + [arm, inference] + _display(robot, args["rviz"])


def _calibrate(args: dict, params: dict) -> list[PlannedNode]:
    """A live calibration: calibration_node moving the arm and fitting (it ends the session);
    with use_sim, sim_node (the true arm, sim_urdf) and tracker_node (the camera)."""
    own = _model_arm(args["model_dir"])
    arm = own or {"robot": COMMON["robot"].default}

    def node(executable, **kwargs):
        return PlannedNode(
            executable, executable, parameters=dict(params.get(executable, {})), **kwargs
        )

    nodes = []
    if truthy(args["use_sim"], "use_sim"):
        sim = node("sim_node")
        sim.parameters.update(**arm, controller=args["controller"])
        if args["sim_urdf"]:
            sim.parameters["sim_urdf"] = args["sim_urdf"]
        if args["sim_stiffness"]:
            stiffness = args["sim_stiffness"]
            if not (positive(stiffness) or stiffness.strip() in ("0", "0.0")):  # 0: rigid
                raise SessionError(f"sim_stiffness:={stiffness} is not a number >= 0")
            sim.parameters["sim_stiffness"] = float(stiffness)
        tracker = node("tracker_node", remappings=[("measured_pose", args["measured_pose"])])
        tracker.parameters["frame_id"] = args["frame_id"]
        nodes += [sim, tracker]
    calibration = node(
        "calibration_node",
        ends_session=True,
        remappings=[("measured_pose", args["measured_pose"])],
    )
    calibration.parameters.update(
        model_dir=args["model_dir"], out=args["out"], controller=args["controller"],
        frame_id=args["frame_id"],
    )
    if args["poses"]:
        if not (args["poses"].isdecimal() and 1 <= int(args["poses"]) <= 100):
            raise SessionError(f"poses:={args['poses']} is not a number of poses from 1 to 100")
        calibration.parameters["poses"] = int(args["poses"])
    return nodes + [calibration] + _display(arm["robot"], args["rviz"])


def rviz_config(robot: str) -> Path:
    """config/robot_ik_nn.rviz, fixed frame set to the arm's base link (a temporary copy)."""
    base = ArmModel.load(robot).base
    text = (share_dir() / "config" / "robot_ik_nn.rviz").read_text()
    text = text.replace("Fixed Frame: base_link", f"Fixed Frame: {base}")
    out = Path(tempfile.gettempdir()) / f"robot_ik_nn_{base}.rviz"
    out.write_text(text)
    return out


def run_session(session: str, items: list[str]) -> int:
    """Start a session's nodes in this process (rclpy executor) until it ends or Ctrl-C."""
    from .runner import run

    try:
        nodes = plan(session, parse_assignments(items))
    except SessionError as err:
        print(f"robot-ik-nn launch {session}: error: {err}")
        return 2
    return run(nodes)
