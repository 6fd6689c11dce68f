"""The inference node over DDS with the test as the arm's driver: a real node in its own process,
a probe that publishes /joint_states and targets, no simulated arm."""

import time

import numpy as np
import pytest
import torch
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, PoseArray, PoseStamped
from rcl_interfaces.msg import ParameterType
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_helpers import Probe, node_process, set_parameter, stop
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.bench.measure import judge
from robot_ik_nn.ik.solver import Solver
from robot_ik_nn.nodes.common import RELIABLE

pytestmark = pytest.mark.ros

ARM = ArmModel.load("niryo_one")
NODE = "/inference_node"


@pytest.fixture(scope="module")
def driven(niryo_model):
    inference = node_process("inference_node", {"model_dir": str(niryo_model)})
    probe = Probe("driver")
    probe.listen(DiagnosticArray, f"{NODE}/status", QoSProfile(depth=100))
    probe.listen(JointTrajectory, "/arm_controller/joint_trajectory", QoSProfile(depth=100))
    best_effort = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
    probe.states = probe.node.create_publisher(JointState, "/joint_states", best_effort)
    probe.targets = probe.node.create_publisher(PoseStamped, f"{NODE}/target_pose", RELIABLE)
    probe.paths = probe.node.create_publisher(PoseArray, f"{NODE}/target_path", RELIABLE)
    try:
        probe.wait_for(
            lambda: min(
                p.get_subscription_count() for p in (probe.states, probe.targets, probe.paths)
            )
            >= 1,
            60,
            "the inference node",
        )
        yield probe, inference
    finally:
        probe.close()
        print(stop(inference)[-3000:])


def _stamped(probe, msg):
    msg.header.frame_id = "base_link"
    msg.header.stamp = probe.node.get_clock().now().to_msg()
    return msg


def _pose(p, q) -> Pose:
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
    o = pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in q)
    return pose


def verdict(probe, joints, send):
    """Publish the arm's joints, then ``send()`` a target, until the node answers; its status
    message (a first target can beat the first reading to the node, or arrive stale on a loaded
    machine, and is rightly refused: then both are sent again)."""
    before = len(probe.received[f"{NODE}/status"])
    deadline = time.time() + 60
    while time.time() < deadline:
        probe.states.publish(JointState(name=ARM.joint_names, position=[float(v) for v in joints]))
        time.sleep(0.2)  # the reading first
        send()
        until = time.time() + 5.0
        while time.time() < until:
            got = probe.received[f"{NODE}/status"][before:]
            said = [s.message for m in got for s in m.status]
            if any("no joint state yet" not in m and "stale" not in m for m in said):
                return said[-1]  # a loaded machine may take the target too late: sent again
            time.sleep(0.01)
    raise AssertionError("the inference node answered nothing in 60 s")


def test_best_effort_readings_are_heard_and_refused_ones_said_without_dying(driven):
    """A driver publishing /joint_states best effort was never heard (the node's subscription
    was reliable); one joint value beyond what the solver takes (2e6) killed the node, since only
    finiteness was checked before the solver refused it (both found by a review)."""
    probe, inference = driven
    kin = Kinematics(ARM, torch.float64)
    q = kin.sample(1, torch.Generator().manual_seed(3))
    pos, rot = kin.forward(q)
    pos, quat, q = pos[0].numpy(), matrix_to_quaternion(rot)[0].numpy(), q[0].numpy()

    def target():
        msg = _stamped(probe, PoseStamped())
        msg.pose = _pose(pos, quat)
        probe.targets.publish(msg)

    assert verdict(probe, q, target).startswith("solved")
    huge = q.copy()
    huge[5] = 2e6
    said = verdict(probe, huge, target)
    assert said.startswith("rejected") and "beyond 1e6" in said and "/joint_states" in said
    assert inference.poll() is None  # alive
    assert verdict(probe, q, target).startswith("solved")  # and serving again


def test_a_path_of_poses_becomes_one_trajectory_through_all_of_them(driven, niryo_model):
    probe, inference = driven
    solver = Solver.load(niryo_model)
    t = np.linspace(0.0, 1.0, 60)[:, None]  # a sweep clear of the limits and of itself
    q_path = np.array([0.0, -0.3, 0.2, 0.0, -0.5, 0.0]) + t * [0.6, 0.3, -0.3, 0.4, 0.3, 0.5]
    P, R = solver.forward(q_path)
    Q = matrix_to_quaternion(R)
    trajectories = probe.received["/arm_controller/joint_trajectory"]
    before = len(trajectories)

    def path(poses):
        def send():  # stamped as it is sent
            msg = _stamped(probe, PoseArray())
            msg.poses = poses
            probe.paths.publish(msg)

        return send

    said = verdict(probe, q_path[0], path([_pose(p, q) for p, q in zip(P, Q)]))
    assert said.startswith("solved: path of 60 poses"), said
    probe.wait_for(lambda: len(trajectories) > before, 10, "the path's trajectory")
    traj = trajectories[-1]
    q = np.array([pt.positions for pt in traj.points])
    t = np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in traj.points])
    assert q.shape == (60, ARM.dof) and np.all(np.diff(t) > 0)
    assert np.abs(np.diff(np.vstack([q_path[0], q]), axis=0)).max() <= 0.2
    solved, _, _ = judge(solver.forward, ARM, q, P, R)
    assert solved.all()
    poses = [_pose(p, q) for p, q in zip(P[:5], Q[:5])]
    poses[3].position.x = float("nan")
    said = verdict(probe, q_path[0], path(poses))
    assert said.startswith("rejected: pose 3 of 5:") and "not finite" in said, said
    assert inference.poll() is None


def test_a_streamed_answer_past_jump_threshold_is_refused(driven):
    """jump_threshold: an answer that moves a joint further than it from the last one commanded
    is refused and said so, not commanded; one within it is commanded."""
    probe, _ = driven
    solver = Solver(ARM)
    a = np.array([0.2, -0.3, 0.2, 0.1, -0.5, 0.1])
    turned = a + [0.9, 0.0, 0.0, 0.0, 0.0, 0.0]  # the base turned: no answer lies near a's
    near = a + [0.05, 0.0, 0.0, 0.0, 0.0, 0.0]

    def target(q):
        p, R = solver.forward(q)
        quat = matrix_to_quaternion(R)[0]

        def send():
            msg = _stamped(probe, PoseStamped())
            msg.pose = _pose(p[0], quat)
            probe.targets.publish(msg)

        return send

    double = ParameterType.PARAMETER_DOUBLE
    assert verdict(probe, a, target(a)).startswith("solved")  # no threshold yet: commanded
    assert set_parameter(probe, "jump_threshold", 0.5, double).successful
    try:
        said = verdict(probe, a, target(turned))
        assert said.startswith("rejected") and "a jump: the answer moves joint_1 0.9" in said
        assert "jump_threshold 0.5 rad" in said
        assert verdict(probe, a, target(near)).startswith("solved")
    finally:
        set_parameter(probe, "jump_threshold", 0.0, double)
