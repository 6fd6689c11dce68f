"""inference_node with stream: rate-limited setpoints for controllers that do not interpolate.

Its own module, so that the nodes of test_inference_node.py are gone when these start.
"""

import time

import numpy as np
import pytest
import torch
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_helpers import Probe, node_process, publish_until, stop
from sensor_msgs.msg import JointState
from test_inference_node import ARM, KIN, TARGET, pose_msg
from trajectory_msgs.msg import JointTrajectory

from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.nodes.common import RELIABLE

pytestmark = pytest.mark.ros

TRAJECTORY = "/arm_controller/joint_trajectory"


def test_stream_mode_sends_rate_limited_setpoints_ending_at_the_solution(niryo_model):
    sim = node_process(
        "sim_node", {"rate": 100.0}, "joint_command:=/unused"
    )  # the sim only reports states
    inference = node_process(
        "inference_node",
        {
            "model_dir": str(niryo_model),
            "stream": "true",
            "stream_rate": 100.0,
            "speed_scale": 0.5,
            "stream_hold": 0.0,  # this arm never moves: no repeating the goal until it does
        },
    )
    probe = Probe("stream_probe")
    try:
        deep = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)
        probe.listen(JointState, "/joint_command", deep)
        probe.listen(JointState, "/joint_states", RELIABLE)
        probe.listen(JointTrajectory, TRAJECTORY, deep)
        pub = probe.node.create_publisher(PoseStamped, TARGET, RELIABLE)
        probe.wait_for(
            lambda: pub.get_subscription_count() >= 1 and probe.received["/joint_states"],
            60,
            "nodes",
        )
        # the sim's commands go elsewhere: it holds still, near where it started
        start = np.array(probe.received["/joint_states"][-1].position)
        q_goal = torch.tensor(start) + torch.tensor(
            [0.5, -0.3, 0.4, 0.6, -0.5, 0.7], dtype=torch.float64
        )
        pos, rot = KIN.forward(KIN.clamp(q_goal))
        publish_until(
            probe,
            lambda: pub.publish(pose_msg(probe, pos.numpy(), matrix_to_quaternion(rot).numpy())),
            "/joint_command",
        )
        # the stream ends at the solution (the trajectory's one point: the goal), however long
        # a loaded machine takes to get there
        def at_the_goal():
            goals, sent = (probe.received[t] for t in (TRAJECTORY, "/joint_command"))
            return bool(goals and sent) and (
                list(sent[-1].position) == list(goals[-1].points[0].positions)
            )

        probe.wait_for(at_the_goal, 120, "the stream to reach the solution")
        assert len(probe.received["/joint_command"]) > 20, "not a stream of setpoints"
        setpoints = np.array([m.position for m in probe.received["/joint_command"]])
        steps = np.abs(np.diff(setpoints, axis=0))
        limit = 0.5 * ARM.velocity_limits / 100.0
        assert np.all(steps <= limit * (1 + 1e-6) + 1e-9), steps.max(0) / limit
        # the first setpoint is one step from where the node saw the arm: one of the states the
        # sim published (it settles for a moment after it starts, so not always the first one)
        states = np.array([m.position for m in probe.received["/joint_states"]])
        first = np.abs(setpoints[0] - states) <= limit * (1 + 1e-6) + 1e-9
        assert np.any(np.all(first, axis=1)), np.abs(setpoints[0] - states).min(0) / limit
        final = setpoints[-1]
        p_final, r_final = KIN.forward(torch.tensor(final))
        assert float(torch.linalg.norm(p_final - pos)) <= 1e-3
        count = len(probe.received["/joint_command"])
        time.sleep(0.5)  # no load can make a message appear that was never sent
        assert (
            len(probe.received["/joint_command"]) == count
        )  # holding: nothing new without new targets
    finally:
        probe.close()
        print(stop(inference)[-2000:])
        stop(sim)


def test_targets_sent_one_by_one_with_pauses_are_not_carried_on(served_model):
    """Three targets along a line in joint space, each sent after a pause longer than
    STREAM_GAP_S (goals sent one by one, not a stream): the third is solved from the answer to
    the second alone, not from it moved on by the step from the first (which on this line is
    where the third's answer lies). Judged against the solver's own answer each way, given the
    joints the node commanded and the ones the (still) arm reported."""
    from fk_oracle import BulletFK, matrix_to_quat

    from robot_ik_nn.ik.settings import IKSettings
    from robot_ik_nn.ik.solver import Solver
    from robot_ik_nn.nodes.inference_node import STREAM_GAP_S

    sim = node_process(  # the arm holds still: the node's commands go elsewhere
        "sim_node",
        {"rate": 50.0},
        "joint_command:=/unused",
        f"{TRAJECTORY}:=/unused_trajectory",
    )
    inference = node_process("inference_node", {"model_dir": str(served_model)})
    probe = Probe("one_by_one_probe")
    try:
        probe.listen(JointState, "/joint_command", RELIABLE)
        probe.listen(JointState, "/joint_states", RELIABLE)
        pub = probe.node.create_publisher(PoseStamped, TARGET, RELIABLE)
        states = probe.received["/joint_states"]
        probe.wait_for(
            lambda: pub.get_subscription_count() >= 1
            and len(states) > 2
            and states[-1].position.tolist() == states[-2].position.tolist(),
            120,
            "the inference node, and the arm at rest",
        )
        current = np.array(states[-1].position)
        step = np.array([0.05, -0.04, 0.05, 0.06, -0.05, 0.06])  # within carry_step (0.2 rad)
        answers = []
        with BulletFK.of(ARM) as fk:
            for k in (1, 2, 3):
                pos, rot = fk.fk(current + k * step)
                publish_until(
                    probe,
                    lambda p=pos, r=rot: pub.publish(pose_msg(probe, p, matrix_to_quat(r))),
                    "/joint_command",
                )
                time.sleep(2 * STREAM_GAP_S)  # a pause: no stream; any repeat has come by now
                answers.append(np.array(probe.received["/joint_command"][-1].position))
        assert np.abs(np.array(states[-1].position) - current).max() < 1e-9  # it held still
        solver = Solver.load(served_model, IKSettings(margin=0.02, collision_check=True))
        quat = matrix_to_quat(rot)
        alone = solver.solve(pos, quat, current=current, last=answers[1])
        carried = solver.solve(pos, quat, current=current, last=answers[1], previous=answers[0])
        assert alone.solved and carried.solved
        assert np.abs(alone.q - carried.q).max() > 1e-9  # the two can be told apart here
        assert np.abs(answers[2] - alone.q).max() <= 1e-12, "solved from a carried step"
    finally:
        probe.close()
        print(stop(inference)[-2000:])
        stop(sim)
