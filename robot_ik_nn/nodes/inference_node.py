"""inference_node: target poses in, safe joint commands out.

Loads a model folder without torch (refusing a wrong fingerprint or a corrupt file: the node
exits non-zero with the reason) and solves with the compiled IK core (robot_ik_nn.ik). For each
``~/target_pose`` (geometry_msgs/PoseStamped) it solves IK, passes the answer through the safety
gate (safety.py) and publishes:

- ``joint_command`` (sensor_msgs/JointState, radians): the solution, or with ``stream`` the
  rate-limited setpoints toward it, stamped with the target's stamp (an arm node refuses goals
  decided before its last ``~/resume`` or loss of the arm);
- ``<controller>/joint_trajectory`` (trajectory_msgs/JointTrajectory): one point, reached no
  faster than the joint velocity limits allow from the current joints;
- ``~/joint_quaternions`` (std_msgs/Float64MultiArray, n_joints x 4, x y z w);
- ``~/status`` (diagnostic_msgs/DiagnosticArray): solved / best effort / rejected, errors, latency;
- ``~/target_taken`` (PoseStamped): the target itself, after its verdict (the arm node's marker).

Start-up: the solver is compiled (a minute or more on the first start after an install; loaded
from numba's cache later) before any topic or service is offered, and ``~/target_pose`` is
subscribed last. A subscriber on it is this node, ready to answer: a client waits for one before
it sends (``robot-ik-nn send`` and ``ros2 topic pub`` do), and every target it sends then gets a
verdict. No other node takes that topic (the arm node's marker is fed from ``~/target_taken``):
a second subscriber there would look ready while this node compiled, and the targets sent to it
would be lost without a word.

``~/solve_ik`` (moveit_msgs/srv/GetPositionIK, where moveit_msgs is installed) answers MoveIt's
IK queries without commanding anything (nodes/moveit_service.py).

Targets that fail a check get a reason on ``~/status`` and a throttled log line, and nothing is
published for them. Without new targets the node publishes nothing new.
"""

from __future__ import annotations

import gc
import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..arm.model import ArmModel
from ..ik.inputs import joints
from ..ik.results import REJECTED, SOLVED, STATUS
from ..ik.settings import ORDERS, IKSettings
from ..ik.solver import Solver
from ..safety import (
    JointBounds,
    check_target,
    gate_command,
    not_commanded,
    start_of_stream,
    stream_step,
)
from .common import (
    READINGS,
    RELIABLE,
    declare,
    duration_msg,
    live_parameters,
    now_seconds,
    spin_node,
    stamp_seconds,
)
from .inference_parameters import CHOICES, LIVE, PARAMETERS
from .inference_status import StatusReports
from .moveit_service import offer_solve_ik
from .path_target import serve_path
from .robot_description import check_robot_description
from .trajectory_action import TrajectoryAction

STREAM_GAP_S = 0.25  # s: targets this close in time make a stream, whose last step is carried


def goes_on(stamp: float, last_stamp, last_gap: float) -> bool:
    """Whether a target stamped ``stamp`` goes on a stream (its joints' last step carried on,
    IKSettings.carry_step): it came within STREAM_GAP_S of the last commanded target, and that
    one within STREAM_GAP_S of the one before (``last_gap``). A target after a pause, or goals
    sent one by one, are no motion to carry on."""
    if last_stamp is None:
        return False
    return stamp - last_stamp <= STREAM_GAP_S and last_gap <= STREAM_GAP_S


class InferenceNode(StatusReports, Node):
    def __init__(self, **kwargs):
        super().__init__("inference_node", **kwargs)
        p = {
            name: declare(self, name, default, text, **options)
            for name, (default, text, options) in PARAMETERS.items()
        }
        for name in LIVE:
            setattr(self, name, p[name])
        live_parameters(self, {name: name for name in LIVE}, {"choose": self._choice_problem})
        path, self.stream = p["model_dir"], p["stream"]
        controller, margin, backend = p["controller"], p["joint_limit_margin"], p["backend"]
        if not path:
            raise RuntimeError("parameter model_dir is required: the model folder to serve")
        self._no_refinement = p["refine_iterations"] == 0
        if self._choice_problem(self.choose):
            raise RuntimeError(f"parameter choose: {self._choice_problem(self.choose)}")
        arm = ArmModel.load(p["robot"]) if p["robot"] else None
        settings = IKSettings(
            iterations=p["refine_iterations"],
            restarts=p["restarts"],
            margin=margin,
            collision_check=p["collision_check"],
            collision_margin=p["collision_margin"],
            collision_pairs=p["collision_pairs"],
            free_axis=p["free_axis"],
        )
        # refuses a wrong arm or a corrupt file, with the reason
        self.solver = Solver.load(path, settings, backend=backend, arm=arm)
        if p["calibration"]:  # answers the arm node's bridge will take: inside the servo ranges
            from ..hardware.calibration import load_calibration

            servos = load_calibration(p["calibration"], self.solver.arm)
            lo, hi = zip(*(s.joint_range() for s in servos))
            self.solver = self.solver.with_limits(lo, hi)
        if p["search_ms"] > 0:  # a target with no answer is refused in bounded time
            self.solver = self.solver.with_search_time(p["search_ms"] / 1000.0)
        # with a jump threshold, an answer farther than it from the last one commanded is
        # refused anyway: where tracking is stuck (the arm at the end of its branch) the
        # restarts' search for the nearest answer (2.1 ms a target on the iiwa) would only find
        # one to refuse while a 200 Hz stream queues behind it. Tracking, the seeds around the
        # last answer and the network's come first, without restarts; the whole search only
        # where they find no answer at all
        self.near_solver = self.solver.with_settings(restarts=0)
        self.arm = self.solver.arm
        self.names = self.arm.joint_names
        self.frames = {p["frame_id"] or self.arm.base}
        self.bounds = JointBounds.from_arm(self.arm, margin=margin, speed_scale=p["speed_scale"])
        self.axes = self.arm.axes  # (dof, 3)
        self.current = None  # (joints, receive time)
        self.joint_problem = ""  # why the last /joint_states message was not usable
        self.last_solution = None
        self.previous_solution = None  # the one before: a stream's last step (IKSettings)
        self.last_stamp, self.last_gap = None, math.inf  # its target's stamp, and the gap before
        self.setpoint = None
        self.stream_goal = None
        self.stream_arrived = None  # when the stream's setpoint reached its goal
        self.goal_stamp = None  # the target's stamp: every command toward its goal carries it
        self.stream_dt = 1.0 / p["stream_rate"]
        self.counts = dict.fromkeys(STATUS, 0)
        self.warned_at, self.unwarned = -math.inf, 0  # the last refusal logged; those since
        # every compiled entry a target, a path or MoveIt's query can take, compiled (or loaded
        # from numba's cache) before any topic or service is offered: none waits on a compile,
        # and a subscriber on ~/target_pose means this node answers (module docstring)
        warm_up = self.solver.warm_up(say=self.get_logger().info)

        self.command_pub = self.create_publisher(JointState, "joint_command", RELIABLE)
        self.trajectory_pub = self.create_publisher(
            JointTrajectory, f"{controller}/joint_trajectory", RELIABLE
        )
        self.action = None  # output:=action: goals to ros2_control's trajectory controller
        if p["output"] not in ("topic", "action"):
            raise RuntimeError(f"parameter output is 'topic' or 'action', not {p['output']!r}")
        if p["output"] == "action":
            self.action = TrajectoryAction(
                self, f"{controller}/follow_joint_trajectory", self.report_goal
            )
        self.quat_pub = self.create_publisher(Float64MultiArray, "~/joint_quaternions", RELIABLE)
        self.status_pub = self.create_publisher(DiagnosticArray, "~/status", RELIABLE)
        self.taken_pub = self.create_publisher(PoseStamped, "~/target_taken", RELIABLE)
        # the messages of every target, their fixed parts filled once: publish() serialises a
        # message before it returns, so one object per topic is reused (less Python per target)
        self._joint_msg = JointState(name=list(self.names))
        self._joint_msg.header.frame_id = self.arm.base
        self._point = JointTrajectoryPoint()
        self._traj_msg = JointTrajectory(joint_names=list(self.names), points=[self._point])
        self._quat_msg = Float64MultiArray()
        self._quat_msg.layout.dim = [
            MultiArrayDimension(label="joints", size=self.arm.dof, stride=self.arm.dof * 4),
            MultiArrayDimension(label="xyzw", size=4, stride=4),
        ]
        self.create_subscription(JointState, "/joint_states", self.on_joint_states, READINGS)
        self.create_subscription(
            PoseArray, "~/target_path", lambda msg: serve_path(self, msg), RELIABLE
        )
        if self.stream:
            self.create_timer(self.stream_dt, self.on_stream_tick)
        self.description_problem = ""  # the bringup's /robot_description is another arm
        if p["check_robot_description"]:
            check_robot_description(self)
        # MoveIt's srv_kinematics_plugin: answers only, never a command
        self.ik_service = offer_solve_ik(self, self.solver, p["group_name"], self.frames)
        # last: a subscriber here is this node with everything ready (the module docstring)
        self.create_subscription(PoseStamped, "~/target_pose", self.take_target, RELIABLE)
        gc.freeze()  # what exists now lives as long as the node: no collections of it (no pauses)
        self.get_logger().info(
            f"serving {path} for {self.arm.name} ({self.arm.dof} joints, {self.solver.mode} mode, "
            f"{backend} network); targets in frame "
            f"{next(iter(self.frames))}; trajectories on {controller}/joint_trajectory"
            + (f"; streaming setpoints at {p['stream_rate']:g} Hz" if self.stream else "")
            + f"; solver compiled (or loaded from numba's cache) in {warm_up:.1f} s"
        )

    # -- inputs -----------------------------------------------------------------------------------
    def on_joint_states(self, msg: JointState) -> None:
        given = dict(zip(msg.name, msg.position))
        missing = [n for n in self.names if n not in given]
        if missing:  # kept for the reason a target gets, should no usable state follow
            self.joint_problem = f"the last /joint_states lacked {', '.join(missing)}"
            return
        try:  # the solver's own check of joint values: what it would refuse is not kept
            q = joints([given[n] for n in self.names], (self.arm.dof,), "/joint_states")
        except ValueError as error:  # where the arm is is unknown until a usable reading
            self.current, self.joint_problem = None, f"the last {error}"
            return
        self.current, self.joint_problem = (q, time.monotonic()), ""

    def _current_joints(self):
        why = f"; {self.joint_problem}" if self.joint_problem else ""
        if self.current is None:
            what = "no usable joint state" if self.joint_problem else "no joint state yet"
            return None, f"{what} on /joint_states for joints {', '.join(self.names)}{why}"
        q, at = self.current
        if time.monotonic() - at > self.joint_state_timeout:
            return None, f"joint states are stale (last {time.monotonic() - at:.2f} s ago){why}"
        return q, ""

    def _choice_problem(self, value) -> str:
        if value not in ("", *ORDERS):
            return f"must be '' or one of {', '.join(ORDERS)}"
        if value and self._no_refinement:
            return (
                "several answers need refinement, and refine_iterations is 0 (the network alone)"
            )
        return ""

    def take_target(self, msg: PoseStamped) -> None:
        """A target on ~/target_pose: its verdict (on_target), then the target itself on
        ~/target_taken for the arm node's marker, off the way to the command."""
        self.on_target(msg)
        self.taken_pub.publish(msg)

    def on_target(self, msg: PoseStamped) -> None:
        started = time.perf_counter()
        p, o = msg.pose.position, msg.pose.orientation
        # one float64 array each: checked by the gate, then handed to the solver as they are
        position, quat = np.array((p.x, p.y, p.z)), np.array((o.x, o.y, o.z, o.w))
        stamp = stamp_seconds(msg.header.stamp)
        reason = check_target(
            position,
            quat,
            msg.header.frame_id,
            stamp,
            now_seconds(self),
            self.frames,
            self.stale_timeout,
            self.future_tolerance,
            self.solver.settings.quat_tolerance,
        )
        reason = reason or self.description_problem
        current, why = self._current_joints() if not reason else (None, "")
        reason = reason or why
        if reason:
            return self.report(REJECTED, reason, started)
        if self.choose:
            answer = self.solver.solve(
                position, quat, current=current, last=self.last_solution,
                solutions=CHOICES, order=self.choose,
            )[0]  # fmt: skip
        else:
            near = self.jump_threshold and self.last_solution is not None
            last = self.last_solution
            on = goes_on(stamp, self.last_stamp, self.last_gap)
            previous = self.previous_solution if on else None
            answer = (self.near_solver if near else self.solver).solve(
                position, quat, current=current, last=last, previous=previous
            )
            if near and answer.status != SOLVED:  # none near: the whole search, as without
                answer = self.solver.solve(
                    position, quat, current=current, last=last, previous=previous
                )
        why = not_commanded(answer, self.accept_best_effort)
        if why:
            return self.report(answer.status, why, started, answer)
        why = self._jump(answer.q)
        if why:  # solved, but not to be commanded
            return self.report(REJECTED, why, started, answer)
        age = now_seconds(self) - stamp
        if age > self.stale_timeout:  # the answer came too late to act on (and the joints too)
            return self.report(
                REJECTED,
                f"answered too late: the target is {age * 1000:.0f} ms old "
                f"(stale_timeout {self.stale_timeout * 1000:.0f} ms); not commanded",
                started,
                answer,
            )
        command = gate_command(answer.q, current, self.bounds, self.min_duration)
        if command is None:
            return self.report(
                REJECTED,
                "the safety gate refused the solution (outside the joint limits "
                "with margin, or not finite)",
                started,
                answer,
            )
        self.previous_solution, self.last_solution = self.last_solution, command.positions
        gap = math.inf if self.last_stamp is None else stamp - self.last_stamp
        self.last_stamp, self.last_gap = stamp, gap
        self.goal_stamp = msg.header.stamp  # an arm node refuses goals from before ~/resume
        self.publish(command, current)
        self.report(answer.status, answer.reason, started, answer, command.duration)

    def _jump(self, q) -> str:
        """Why answer ``q`` is a jump from the last one commanded ("" when it is not)."""
        if not self.jump_threshold or self.last_solution is None or q is None:
            return ""
        step = np.abs(np.asarray(q) - self.last_solution)
        if step.max() <= self.jump_threshold:
            return ""
        return (
            f"a jump: the answer moves {self.names[int(np.argmax(step))]} {step.max():.3f} rad "
            f"from the last one commanded (jump_threshold {self.jump_threshold} rad); not "
            "commanded (send the whole path to ~/target_path to plan around it)"
        )

    # -- outputs ----------------------------------------------------------------------------------
    def publish(self, command, current) -> None:
        # joint_command first: it is what a streaming controller waits for
        if self.stream:
            if self.stream_goal is None or self.setpoint is None:
                self.setpoint = start_of_stream(current, self.bounds)
            self.stream_goal, self.stream_arrived = command.positions, None
            self.on_stream_tick()
        else:
            self._send_joints(command.positions)
        positions, duration = command.positions.tolist(), duration_msg(command.duration)
        if self.action is not None:  # a goal of its own: the action client keeps it
            traj = JointTrajectory(joint_names=self.names)
            traj.points = [JointTrajectoryPoint(positions=positions, time_from_start=duration)]
            self.action.send(
                traj, self.path_tolerance, self.goal_tolerance, self.goal_time_tolerance
            )
        else:
            self._point.positions, self._point.time_from_start = positions, duration
            self.trajectory_pub.publish(self._traj_msg)  # header.stamp zero: start now
        half = command.positions / 2.0  # joint quaternions: (axis sin(q/2), cos(q/2)), x y z w
        quats = np.empty((self.arm.dof, 4))
        np.multiply(self.axes, np.sin(half)[:, None], out=quats[:, :3])
        np.cos(half, out=quats[:, 3])
        self._quat_msg.data = quats.ravel().tolist()
        self.quat_pub.publish(self._quat_msg)

    def _send_joints(self, q) -> None:
        msg = self._joint_msg  # names and frame filled once
        msg.position = np.asarray(q, dtype=float).tolist()
        msg.header.stamp = self.goal_stamp or self.get_clock().now().to_msg()
        self.command_pub.publish(msg)

    def on_stream_tick(self) -> None:
        if self.stream_goal is None:
            return  # holding: nothing new to say
        if self.stream_arrived is not None:  # the goal sent: repeat it until the arm is there
            current, _ = self._current_joints()
            there = current is not None and np.max(np.abs(current - self.stream_goal)) <= 1e-3
            if there or time.monotonic() - self.stream_arrived > self.stream_hold:
                self.stream_goal = self.stream_arrived = None
            else:
                self._send_joints(self.stream_goal)
            return
        nxt = stream_step(self.setpoint, self.stream_goal, self.bounds, self.stream_dt)
        if nxt is None:
            self.get_logger().error("stream stopped: the safety gate refused the next setpoint")
            self.stream_goal = None
            return
        self._send_joints(nxt)
        self.setpoint = nxt
        if np.array_equal(nxt, self.stream_goal):
            self.stream_arrived = time.monotonic()


def main(args=None) -> int:
    return spin_node(InferenceNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
