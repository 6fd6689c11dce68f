"""The sessions: which nodes run, with which parameters (``train``, ``inference``, ``display``,
``deploy``, ``calibrate``).

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

from ..arm.resources import config_path, share_dir


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
        "arm": Argument("niryo_one", "the real arm: niryo_one, niryo_ned or inmoov_right_arm"),
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
# deploy's arm -> (driver, emulator, URDF)
DEPLOY_ARMS = {
    "niryo_one": ("niryo_one_tcp", "niryo_one", "niryo_one"),
    "niryo_ned": ("niryo_ned", "niryo_ned", "niryo_ned2"),
    "inmoov_right_arm": ("inmoov_serial", "inmoov_serial", "inmoov_right_arm"),
}
DRY_RUN_TTY = "/tmp/robot_ik_nn_inmoov_tty"  # the emulated servo board's terminal in a dry run


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


class SessionError(ValueError):
    pass


def _truthy(value: str, name: str) -> bool:
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
        ("minutes", lambda v: v == "" or _positive(v), "a number of minutes above 0"),
    ):
        if name in args and not fits(args[name]):
            raise SessionError(f"{name}:={args[name]} is not {what}")
    return args


def _positive(text: str) -> bool:
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
        sim.remappings.append(("target_pose", "/inference_node/target_pose"))
        nodes += [inference] + ([sim] if _truthy(args["use_sim"], "use_sim") else [])
        return _join_bringup(args, nodes, robot)
    else:
        nodes.append(sim)
    if _truthy(args["view"], "view"):  # the browser page, a process beside the nodes (view/)
        from ..view.cli import session_command

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
    use_rsp = _truthy(args["use_rsp"], "use_rsp")
    if not use_rsp:  # the bringup's /robot_description is checked against the model's arm
        nodes[0].parameters["check_robot_description"] = True
    if _truthy(args["view"], "view"):
        from ..view.cli import session_command

        command = session_command("inference", robot, args["model_dir"], args["view_port"])
        nodes.append(PlannedNode("view", "view", command=command))
    nodes += _display(robot, args["rviz"], use_rsp=use_rsp)
    if _truthy(args["use_sim_time"], "use_sim_time"):
        for spec in nodes:
            if not spec.command:
                spec.parameters["use_sim_time"] = True
    return nodes


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


def _model_arm(model_dir: str) -> dict | None:
    """The arm a model folder was trained on, as sim_node's parameters: its name when it is a
    named arm, else the folder's own robot.urdf, with the base and tip links; None when the
    folder cannot be read (the inference node then says why)."""
    from ..arm.resources import NAMED_ROBOTS
    from ..model_dir import ARCHIVES, ModelDirError, read, read_meta

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
    from ..arm.model import resolve_robot

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
    if _truthy(rviz, "rviz"):
        nodes.append(
            PlannedNode(
                "rviz2", "rviz2", package="rviz2", arguments=["-d", str(rviz_config(robot))]
            )
        )
    return nodes


def _deploy(args: dict, params: dict) -> list[PlannedNode]:
    """The inference node driving a real arm through arm_node; with dry_run, its emulator."""
    if args["arm"] not in DEPLOY_ARMS:
        raise SessionError(f"arm must be one of {', '.join(DEPLOY_ARMS)}, not '{args['arm']}'")
    driver, emulator, robot = DEPLOY_ARMS[args["arm"]]
    port = args["port"]
    nodes = []
    if _truthy(args["dry_run"], "dry_run"):
        port = port or (DRY_RUN_TTY if driver == "inmoov_serial" else "40001")
        where = ["--link", port] if driver == "inmoov_serial" else ["--port", port]
        command = ["robot-ik-nn", "emulate", emulator, "--robot", robot, *where]
        if args["calibration"]:
            command += ["--calibration", args["calibration"]]
        nodes.append(PlannedNode("emulator", f"{emulator}_emulator", command=command))
    elif driver == "inmoov_serial" and not port:
        raise SessionError("arm:=inmoov_right_arm needs port:= the serial device (/dev/ttyACM0)")
    arm = PlannedNode("arm_node", "arm_node", parameters=dict(params.get("arm_node", {})))
    arm.parameters.update(
        robot=robot, driver=driver, host=args["host"], port=port,
        calibration=args["calibration"],
        start_enabled=_truthy(args["start_enabled"], "start_enabled"),
    )
    inference = PlannedNode(
        "inference_node", "inference_node", parameters=dict(params.get("inference_node", {}))
    )
    inference.parameters.update(
        model_dir=args["model_dir"], robot=robot, calibration=args["calibration"]
    )
    arm.remappings.append(("target_pose", "/inference_node/target_pose"))
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
    if _truthy(args["use_sim"], "use_sim"):
        sim = node("sim_node")
        sim.parameters.update(**arm, controller=args["controller"])
        if args["sim_urdf"]:
            sim.parameters["sim_urdf"] = args["sim_urdf"]
        if args["sim_stiffness"]:
            stiffness = args["sim_stiffness"]
            if not (_positive(stiffness) or stiffness.strip() in ("0", "0.0")):  # 0: rigid
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
    import tempfile

    from ..arm.model import ArmModel

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
    from .runner import run

    try:
        nodes = plan(session, parse_assignments(items))
    except SessionError as err:
        print(f"robot-ik-nn launch {session}: error: {err}")
        return 2
    return run(nodes)
