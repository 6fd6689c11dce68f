"""output:=action over DDS: the inference node in its own process sends FollowJointTrajectory
goals (control_msgs built from the definitions in test/interfaces) to a stand-in server in the
test's process that behaves as ros2_control's joint_trajectory_controller does: it accepts a
goal, follows the trajectory (publishing /joint_states as it goes), succeeds when the joints end
within the goal tolerance, aborts with PATH_TOLERANCE_VIOLATED when they stray further than the
path tolerance from the trajectory, and honours cancel requests."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from fk_oracle import BulletFK, matrix_to_quat
from geometry_msgs.msg import PoseStamped
from interfaces.build import BuildUnavailable, interfaces
from ros_helpers import Probe, node_process, stop
from sensor_msgs.msg import JointState
from test_moveit import Contacts

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.ik.results import SOLVED
from robot_ik_nn.nodes.common import RELIABLE

pytestmark = pytest.mark.ros

ARM = ArmModel.load("niryo_one")
TOLERANCE = 0.05  # rad: the path and goal tolerances the node is given
SPEED = 20.0  # the stand-in plays trajectories this much faster than their time_from_start


@pytest.fixture(scope="module")
def action():
    try:
        interfaces()
    except BuildUnavailable as err:
        pytest.skip(str(err))
    from control_msgs.action import FollowJointTrajectory

    return FollowJointTrajectory


class StandIn:
    """joint_trajectory_controller's behaviour, in miniature: one goal at a time (a new one
    replaces the running one), linear interpolation between the points, ``lag``: how far the
    joints fall behind the trajectory (0: they follow it exactly)."""

    def __init__(self, probe, action):
        from rclpy.action import ActionServer
        from rclpy.callback_groups import ReentrantCallbackGroup

        self.action, self.probe = action, probe
        self.q = (ARM.lower + ARM.upper) / 2
        self.lag = 0.0
        self.miss = 0.0  # rad: how far joint 0 settles from the trajectory's end
        self.accept = True  # False: every goal is rejected
        self.accept_delay = 0.0  # s: how long the controller takes to accept (or reject) a goal
        self.offered = 0  # goal requests received, before the answer to each
        self.goals, self.cancelled, self.tolerances = [], [], []
        self.timed = []  # each goal: (joints at its start, its last point, that point's time)
        self.lock = threading.Lock()
        self.states = probe.node.create_publisher(JointState, "/joint_states", RELIABLE)
        self.serve = lambda: ActionServer(
            probe.node, action, "/arm_controller/follow_joint_trajectory",
            execute_callback=self.execute,
            goal_callback=self.on_goal,
            cancel_callback=self.on_cancel,
            callback_group=ReentrantCallbackGroup(),
        )  # fmt: skip
        self.server = self.serve()
        self.timer = probe.node.create_timer(0.01, self.publish)

    def publish(self):
        with self.lock:
            q = self.q.copy()
        msg = JointState(name=ARM.joint_names, position=q.tolist())
        msg.header.stamp = self.probe.node.get_clock().now().to_msg()
        self.states.publish(msg)

    def on_goal(self, _goal):
        from rclpy.action import GoalResponse

        self.offered += 1
        time.sleep(self.accept_delay)
        return GoalResponse.ACCEPT if self.accept else GoalResponse.REJECT

    def on_cancel(self, handle):
        from rclpy.action import CancelResponse

        self.cancelled.append(handle.goal_id.uuid.tobytes())
        return CancelResponse.ACCEPT

    def execute(self, handle):
        goal = handle.request
        Result = self.action.Result
        self.goals.append(handle.goal_id.uuid.tobytes())
        self.tolerances.append(
            ({t.name: t.position for t in goal.path_tolerance},
             {t.name: t.position for t in goal.goal_tolerance})
        )  # fmt: skip
        order = [list(goal.trajectory.joint_names).index(n) for n in ARM.joint_names]
        times = [0.0] + [
            (p.time_from_start.sec + p.time_from_start.nanosec * 1e-9) / SPEED
            for p in goal.trajectory.points
        ]
        with self.lock:
            start = self.q.copy()
        points = [start] + [np.array(p.positions)[order] for p in goal.trajectory.points]
        end = goal.trajectory.points[-1].time_from_start
        self.timed.append((start, points[-1], end.sec + end.nanosec * 1e-9))
        path_tol = np.array([self.tolerances[-1][0].get(n, np.inf) for n in ARM.joint_names])
        goal_tol = np.array([self.tolerances[-1][1].get(n, np.inf) for n in ARM.joint_names])
        began = time.monotonic()
        while True:
            if handle.is_cancel_requested:
                handle.canceled()
                return Result(error_code=Result.SUCCESSFUL, error_string="cancelled")
            if not handle.is_active:  # replaced by a newer goal
                return Result(error_code=Result.SUCCESSFUL)
            t = time.monotonic() - began
            desired = _interpolate(times, points, t)
            actual = desired + self.lag * (points[-1] - start)
            with self.lock:
                self.q = actual
            error = np.abs(actual - desired)
            if np.any(error > path_tol):
                j = int(np.argmax(error - path_tol))
                handle.abort()
                return Result(
                    error_code=Result.PATH_TOLERANCE_VIOLATED,
                    error_string=f"{ARM.joint_names[j]} is {error[j]:.3f} rad off its path",
                )
            if t >= times[-1]:
                break
            time.sleep(0.005)
        if self.miss:  # the joints settle off the trajectory's end
            actual = actual + self.miss * (np.arange(len(actual)) == 0)
            with self.lock:
                self.q = actual
        if np.any(np.abs(actual - points[-1]) > goal_tol):
            handle.abort()
            return Result(error_code=Result.GOAL_TOLERANCE_VIOLATED, error_string="off the goal")
        handle.succeed()
        return Result(error_code=Result.SUCCESSFUL)


def _interpolate(times, points, t):
    if t >= times[-1]:
        return points[-1].copy()
    k = int(np.searchsorted(times, t, side="right"))
    w = (t - times[k - 1]) / max(times[k] - times[k - 1], 1e-9)
    return (1 - w) * points[k - 1] + w * points[k]


@pytest.fixture(scope="module")
def rig(action, served_model):
    from rclpy.executors import MultiThreadedExecutor

    params = {
        "model_dir": str(served_model),
        "output": "action",
        "path_tolerance": TOLERANCE,
        "goal_tolerance": TOLERANCE,
        "stale_timeout": 5.0,
    }
    node = node_process("inference_node", params)
    probe = Probe("fjt_standin")
    probe.paused.set()  # goals execute beside the timer: a executor of several threads
    probe.executor.remove_node(probe.node)
    probe.executor = MultiThreadedExecutor(num_threads=4)
    probe.executor.add_node(probe.node)
    probe.paused.clear()
    standin = StandIn(probe, action)
    probe.listen(DiagnosticArray, "/inference_node/status", 1000)
    target = probe.node.create_publisher(PoseStamped, "/inference_node/target_pose", RELIABLE)
    try:
        probe.wait_for(lambda: target.get_subscription_count() >= 1, 120, "the inference node")
        # the node's action client finds the server in its own time, and the node refuses a
        # target until the stand-in's first /joint_states reach it ("no joint state yet"): a
        # target each second until one goal succeeds; a target refused ends no goal, so each
        # try waits a while for its goal's end and then tries again
        for _ in range(120):
            before = len(goal_reports(probe))
            send(probe, target, (ARM.lower + ARM.upper) / 2)
            ended = time.monotonic() + 10.0
            while len(goal_reports(probe)) == before and time.monotonic() < ended:
                time.sleep(0.02)
            if len(goal_reports(probe)) > before and goal_reports(probe)[-1].endswith("succeeded"):
                break
            time.sleep(1.0)
        else:
            said = [s.message for m in probe.received["/inference_node/status"] for s in m.status]
            raise AssertionError(f"no goal succeeded in 120 tries; the node said {said[-3:]}")
        yield probe, standin, target
    finally:
        probe.close()
        print(stop(node)[-3000:])


def goal_reports(probe):
    return [
        s.message
        for m in probe.received["/inference_node/status"]
        for s in m.status
        if s.name == "inference_node: trajectory goal"
    ]


def send(probe, target, q):
    with BulletFK.of(ARM) as fk:
        p, R = fk.fk(q)
    msg = PoseStamped()
    msg.header.frame_id = ARM.base
    msg.header.stamp = probe.node.get_clock().now().to_msg()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quat(R))
    target.publish(msg)


def reachable(rng, n):
    """Joints uniform inside the limits that PyBullet's contact query finds free."""
    contacts = Contacts(ARM)
    lo, hi = ARM.lower + 0.05, ARM.upper - 0.05
    out = []
    while len(out) < n:
        q = lo + rng.random(ARM.dof) * (hi - lo)
        if not contacts.collides(ARM.joint_names, q):
            out.append(q)
    return out


def test_200_targets_are_followed_to_success(rig):
    probe, standin, target = rig
    standin.lag = 0.0
    rng = np.random.default_rng(7)
    followed = 0
    for k, q in enumerate(reachable(rng, 200)):
        before = len(goal_reports(probe))
        statuses = len(probe.received["/inference_node/status"])
        send(probe, target, q)
        # the verdict on the target first; then, when commanded, the goal's end
        probe.wait_for(lambda n=statuses: len(probe.received["/inference_node/status"]) > n,
                       60, f"the verdict on target {k}")  # fmt: skip
        verdict = probe.received["/inference_node/status"][statuses].status[0]
        if verdict.name != "inference_node: target" or not verdict.message.startswith(SOLVED):
            continue  # not commanded (a target the small model misses): no goal to follow
        probe.wait_for(lambda n=before: len(goal_reports(probe)) > n, 60, f"goal {k}'s result")
        report = goal_reports(probe)[before]
        assert report.endswith("succeeded"), report
        with BulletFK.of(ARM) as fk:  # the stand-in's joints put the tool on the target
            assert np.linalg.norm(fk.fk(standin.q)[0] - fk.fk(q)[0]) < 1e-3
        followed += 1
    assert followed >= 198, f"{followed} of 200 targets followed to success"
    path, goal = standin.tolerances[-1]
    assert path == dict.fromkeys(ARM.joint_names, TOLERANCE) == goal


def test_a_broken_path_tolerance_is_reported(rig):
    probe, standin, target = rig
    standin.lag = 0.5  # the joints fall behind by half the move: far beyond 0.05 rad
    try:
        before = len(goal_reports(probe))
        send(probe, target, ARM.lower + 0.3 * (ARM.upper - ARM.lower))
        probe.wait_for(lambda: len(goal_reports(probe)) > before, 60, "the goal's end")
        report = goal_reports(probe)[before]
        assert "aborted (PATH_TOLERANCE_VIOLATED)" in report and "off its path" in report
    finally:
        standin.lag = 0.0


def test_a_new_target_pre_empts_the_running_goal(rig):
    global SPEED
    probe, standin, target = rig
    SPEED = 0.5  # slow: the first goal is still running when the second target comes
    try:
        before, goals = len(goal_reports(probe)), len(standin.goals)
        send(probe, target, ARM.lower + 0.8 * (ARM.upper - ARM.lower))
        probe.wait_for(lambda: len(standin.goals) > goals, 60, "the first goal")
        first = standin.goals[goals]
        SPEED = 20.0
        send(probe, target, ARM.lower + 0.5 * (ARM.upper - ARM.lower))
        probe.wait_for(lambda: len(goal_reports(probe)) >= before + 2, 60, "both goals' ends")
        assert first in standin.cancelled
        ends = goal_reports(probe)[before:]
        assert any("cancelled" in e for e in ends) and any("succeeded" in e for e in ends), ends
    finally:
        SPEED = 20.0


def test_stop_cancels_the_running_goal(rig):
    from std_srvs.srv import Trigger

    global SPEED
    probe, standin, target = rig
    SPEED = 0.5
    try:
        before, goals = len(goal_reports(probe)), len(standin.goals)
        send(probe, target, ARM.lower + 0.2 * (ARM.upper - ARM.lower))
        probe.wait_for(lambda: len(standin.goals) > goals, 60, "the goal")
        client = probe.node.create_client(Trigger, "/inference_node/stop")
        assert client.wait_for_service(10)
        future = client.call_async(Trigger.Request())
        probe.wait_for(future.done, 10, "~/stop")
        assert future.result().success
        probe.wait_for(lambda: len(goal_reports(probe)) > before, 60, "the goal's end")
        assert "cancelled" in goal_reports(probe)[before]
        assert standin.goals[goals] in standin.cancelled
    finally:
        SPEED = 20.0


def test_stop_before_the_controller_accepts_cancels_the_goal(rig):
    """~/stop while the goal is sent and not yet accepted (a stop pressed right after a target)
    cancels that goal as soon as the controller accepts it: the arm must not go."""
    from std_srvs.srv import Trigger

    global SPEED
    probe, standin, target = rig
    SPEED, standin.accept_delay = 0.5, 2.0
    try:
        before, offered, goals = len(goal_reports(probe)), standin.offered, len(standin.goals)
        send(probe, target, ARM.lower + 0.7 * (ARM.upper - ARM.lower))
        probe.wait_for(lambda: standin.offered > offered, 60, "the goal's request")
        client = probe.node.create_client(Trigger, "/inference_node/stop")
        assert client.wait_for_service(10)
        future = client.call_async(Trigger.Request())
        probe.wait_for(future.done, 10, "~/stop")
        assert future.result().success, future.result().message
        probe.wait_for(lambda: len(goal_reports(probe)) > before, 60, "the goal's end")
        assert "cancelled" in goal_reports(probe)[before]
        assert standin.goals[goals] in standin.cancelled
    finally:
        SPEED, standin.accept_delay = 20.0, 0.0


def _urdf_velocity_limits() -> np.ndarray:
    """Each joint's velocity limit as the URDF file says it (rad/s), read here."""
    import xml.etree.ElementTree as ET

    joints = {j.get("name"): j for j in ET.parse(ARM.source).getroot().iter("joint")}
    return np.array([float(joints[n].find("limit").get("velocity")) for n in ARM.joint_names])


def _follow(probe, standin, target, q, timeout: float = 60.0) -> str:
    """Send the pose at ``q`` once the stand-in's joints have settled; how its goal ended."""
    time.sleep(0.3)  # the stand-in's settled joints reach the node before the target does
    before = len(goal_reports(probe))
    send(probe, target, q)
    probe.wait_for(lambda: len(goal_reports(probe)) > before, timeout, "the goal's end")
    return goal_reports(probe)[before]


def test_time_from_start_lets_every_joint_keep_to_its_velocity_limit(rig):
    """Each goal's point is timed so that the joint with the farthest way at its URDF
    velocity limit just makes it from where the arm was (speed_scale 1, min_duration 0)."""
    probe, standin, target = rig
    velocity = _urdf_velocity_limits()
    checked = 0
    for q in reachable(np.random.default_rng(17), 6):
        if not _follow(probe, standin, target, q).endswith("succeeded"):
            continue
        start, end, seconds = standin.timed[-1]
        assert seconds == pytest.approx(np.max(np.abs(end - start) / velocity), abs=1e-6)
        checked += 1
    assert checked >= 5


def test_a_rejected_goal_is_reported(rig):
    probe, standin, target = rig
    standin.accept = False
    try:
        report = _follow(probe, standin, target, ARM.lower + 0.4 * (ARM.upper - ARM.lower))
        assert "rejected by arm_controller/follow_joint_trajectory" in report, report
    finally:
        standin.accept = True


def test_a_goal_ending_outside_its_goal_tolerance_is_reported(rig):
    probe, standin, target = rig
    standin.miss = 4 * TOLERANCE
    try:
        report = _follow(probe, standin, target, ARM.lower + 0.6 * (ARM.upper - ARM.lower))
        assert "aborted (GOAL_TOLERANCE_VIOLATED)" in report, report
    finally:
        standin.miss = 0.0
    assert _follow(probe, standin, target, ARM.lower + 0.55 * (ARM.upper - ARM.lower)).endswith(
        "succeeded"
    )


def test_no_server_is_reported_and_nothing_is_sent(rig):
    """Without a FollowJointTrajectory server the node says so for each commanded target (its
    action client finds the server gone in its own time); with one back, goals flow again."""
    probe, standin, target = rig
    standin.server.destroy()
    report, q = "", ARM.lower + 0.45 * (ARM.upper - ARM.lower)
    try:
        for _ in range(30):  # a goal sent before the client saw the server go gets no answer
            try:
                report = _follow(probe, standin, target, q, 5.0)
            except AssertionError:
                continue
            if "no FollowJointTrajectory server" in report:
                break
        assert report == (
            "no FollowJointTrajectory server on arm_controller/follow_joint_trajectory; not sent"
        )
    finally:
        standin.server = standin.serve()
    for _ in range(60):
        if _follow(probe, standin, target, ARM.lower + 0.5 * (ARM.upper - ARM.lower)).endswith(
            "succeeded"
        ):
            break
    else:
        raise AssertionError("no goal succeeded once the server was back")
