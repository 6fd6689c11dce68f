"""The inference node's parameters: name -> (default, description, options). LIVE ones may change
while the node runs (it keeps them as attributes of the same name); the others are read-only."""

from __future__ import annotations

from ..ik.network_forward import BACKENDS
from ..ik.settings import ORDERS, IKSettings

CHOICES = 8  # distinct answers searched when the `choose` parameter asks for an order
RO = {"read_only": True}
_IK = IKSettings()
PARAMETERS = {
    "model_dir": ("", "model folder to serve (required)", RO),
    "robot": (
        "",
        "arm this node commands ('' = the model's own robot.urdf); its fingerprint must match "
        "the model's",
        RO,
    ),
    "controller": ("arm_controller", "trajectory topic prefix: <controller>/joint_trajectory", RO),
    "output": (
        "topic",
        "'topic': trajectories on <controller>/joint_trajectory; 'action': goals to "
        "<controller>/follow_joint_trajectory (control_msgs FollowJointTrajectory), each goal's "
        "end on ~/status, a new target pre-empting the running goal, ~/stop cancelling it",
        RO,
    ),
    "path_tolerance": (
        0.0,
        "output action: each joint's path tolerance in the goal (rad or m; 0: the controller's)",
        {"lo": 0.0, "hi": 3.2},
    ),
    "goal_tolerance": (
        0.0,
        "output action: each joint's goal tolerance in the goal (rad or m; 0: the controller's)",
        {"lo": 0.0, "hi": 3.2},
    ),
    "goal_time_tolerance": (
        0.0,
        "output action: the goal's goal_time_tolerance (s; 0: the controller's)",
        {"lo": 0.0, "hi": 60.0},
    ),
    "calibration": (
        "",
        "InMoov: the servo calibration YAML the arm node drives with; answers stay inside its "
        "servo ranges ('' = the URDF's limits alone)",
        RO,
    ),
    "frame_id": ("", "frame targets must be given in ('' = the arm's base link)", RO),
    "check_robot_description": (
        False,
        "beside a bringup (use_rsp:=false): targets are refused until the /robot_description "
        "it publishes is the model's arm",
        RO,
    ),
    "group_name": (
        "",
        "~/solve_ik (GetPositionIK): the MoveIt planning group answered ('' = any); another "
        "group gets INVALID_GROUP_NAME",
        RO,
    ),
    "stale_timeout": (0.2, "reject targets stamped longer ago (s)", {"lo": 0.001, "hi": 60.0}),
    "future_tolerance": (
        0.05,
        "reject targets stamped further in the future (s)",
        {"lo": 0.0, "hi": 10.0},
    ),
    "joint_limit_margin": (
        0.02,
        "kept from every joint limit (rad or m)",
        {**RO, "lo": 0.0, "hi": 0.5},
    ),
    "speed_scale": (
        1.0,
        "fraction of the URDF velocity limits used",
        {**RO, "lo": 0.01, "hi": 1.0},
    ),
    "min_duration": (0.0, "shortest trajectory time_from_start (s)", {"lo": 0.0, "hi": 60.0}),
    "stream": (
        False,
        "joint_command carries rate-limited setpoints (for controllers that do not "
        "interpolate) instead of the solution; the last one is repeated until /joint_states "
        "shows the arm there (a watchdog's heartbeat)",
        RO,
    ),
    "stream_hold": (
        5.0,
        "with stream: seconds the goal is repeated at most while the arm gets there",
        {"lo": 0.0, "hi": 60.0},
    ),
    "stream_rate": (100.0, "setpoint rate with stream (Hz)", {**RO, "lo": 1.0, "hi": 1000.0}),
    "joint_state_timeout": (
        0.5,
        "joint states older than this are not trusted (s)",
        {"lo": 0.01, "hi": 60.0},
    ),
    "refine_iterations": (
        _IK.iterations,
        "refinement iterations from the first seed (0: the network alone, nothing more)",
        {**RO, "lo": 0, "hi": 1000},
    ),
    "restarts": (
        _IK.restarts,
        "restart seeds for a target not yet solved",
        {**RO, "lo": 0, "hi": 100000},
    ),
    "search_ms": (
        5.0,
        "a target inside the reach whose answers all collide (or that has none) is refused "
        "after about this long: the restarts are cut to fit, measured at start (ms; 0: the "
        "restarts alone)",
        {**RO, "lo": 0.0, "hi": 10000.0},
    ),
    "collision_check": (
        True,
        "answers that put the arm into collision with itself are no solutions",
        RO,
    ),
    "collision_margin": (
        0.0,
        "with collision_check: the least distance kept between the arm's surfaces (m)",
        {**RO, "lo": 0.0, "hi": 0.2},
    ),
    "collision_pairs": (
        "",
        "with collision_check: an SRDF whose disable_collisions are the link pairs left out "
        "('' = computed from the URDF; `robot-ik-nn collisions ARM --out FILE` writes one)",
        RO,
    ),
    "free_axis": (
        "",
        "'x', 'y' or 'z': the rotation about this tool axis is left free ('' none)",
        RO,
    ),
    "backend": ("compiled", f"the network's forward pass: {', '.join(BACKENDS)}", RO),
    "accept_best_effort": (
        False,
        "also command answers that miss the 1 mm / 0.01 rad tolerance (never one that collides)",
        {},
    ),
    "path_max_step": (
        0.2,
        "~/target_path: the largest step of any joint between two answers of a path (rad)",
        {"lo": 0.01, "hi": 3.2},
    ),
    "jump_threshold": (
        0.0,
        "~/target_pose: an answer that moves a joint more than this from the last one commanded "
        "is refused, not commanded (rad; 0: no limit). A stream cannot look ahead, and tracking "
        "can jump where ~/target_path, given the whole path, would not. With it, restarts "
        "(whose far answers it would refuse) only where no other answer is found",
        {"lo": 0.0, "hi": 6.3},
    ),
    "choose": (
        "",
        "which answer to command when a target has several: '' the first found (fastest); "
        f"{', '.join(ORDERS)}: the first of up to {CHOICES} distinct answers in that order "
        "(nearest: to the arm's joints; about a millisecond)",
        {},
    ),
}
LIVE = [name for name, (_, _, options) in PARAMETERS.items() if not options.get("read_only")]
