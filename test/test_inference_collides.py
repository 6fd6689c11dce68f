"""inference_node with accept_best_effort over DDS: a best effort may be commanded, never one
whose joints collide (safety.not_commanded, driven here end to end)."""

import time

import numpy as np
import pytest
import torch
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_helpers import Probe, node_process, publish_until, stop
from sensor_msgs.msg import JointState

from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.hardware.pybullet_arm import ArmSim
from robot_ik_nn.ik.settings import IKSettings
from robot_ik_nn.ik.solver import Solver
from robot_ik_nn.nodes.common import RELIABLE

pytestmark = pytest.mark.ros

TARGET = "/inference_node/target_pose"
MARGIN = 0.1  # m kept between the arm's surfaces: most poses of the Niryo One collide then
NODE = {  # search_ms 0: the node's search is exactly its restarts, as the test's solver's is
    "collision_margin": MARGIN, "restarts": 20, "search_ms": 0.0, "accept_best_effort": True,
}  # fmt: skip


def pose_msg(probe, pos, quat, frame="base_link"):
    msg = PoseStamped()
    msg.header.frame_id, msg.header.stamp = frame, probe.node.get_clock().now().to_msg()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in pos)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in quat)
    return msg


def statuses(probe):
    return [s.message for m in probe.received["/inference_node/status"] for s in m.status]


def test_accept_best_effort_never_commands_a_pose_that_collides(niryo_model):
    arm = ArmModel.load("niryo_one")
    kin = Kinematics(arm, torch.float64)
    sim = node_process("sim_node", {"rate": 50.0}, "target_pose:=" + TARGET)
    inference = node_process("inference_node", {"model_dir": str(niryo_model), **NODE})
    probe = Probe("collides_probe")
    deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    probe.listen(JointState, "/joint_command", deep)
    probe.listen(DiagnosticArray, "/inference_node/status", deep)
    probe.listen(JointState, "/joint_states", RELIABLE)
    probe.publisher = probe.node.create_publisher(PoseStamped, TARGET, RELIABLE)
    try:
        probe.wait_for(lambda: probe.publisher.get_subscription_count() >= 2, 60, "the nodes")
        probe.wait_for(lambda: probe.received["/joint_states"], 30, "the sim's joints")
        current = np.array(probe.received["/joint_states"][-1].position)  # nothing moves it
        # the node's search, here: its settings, its warm start (the arm's joints, no last)
        solver = Solver.load(
            niryo_model,
            IKSettings(margin=0.02, collision_check=True, collision_margin=MARGIN, restarts=20),
        )
        for seed in range(200):  # a target whose only answers found collide
            q = kin.sample(1, torch.Generator().manual_seed(seed))
            pos, rot = kin.forward(q)
            pos, quat = pos[0].numpy(), matrix_to_quaternion(rot)[0].numpy()
            answer = solver.solve(pos, quat, current=current)
            if answer.status == "best_effort" and answer.collides:
                break
        else:
            raise AssertionError("no target among 200 whose answer collides")
        with ArmSim(arm) as bullet:  # PyBullet agrees: the answer's links are within MARGIN
            bullet.set_joints(answer.q)
            assert bullet.self_collisions(MARGIN)

        refused = "a pose that collides is never commanded"
        deadline = time.time() + 60  # sent again until its verdict comes: a first target may
        while not any(refused in m for m in statuses(probe)):  # beat the joints to the node
            assert not probe.received["/joint_command"], "a pose that collides was commanded"
            assert time.time() < deadline, f"no verdict on the target: {statuses(probe)[-3:]}"
            probe.publisher.publish(pose_msg(probe, pos, quat))
            again = time.time() + 2.0
            while time.time() < again and not any(refused in m for m in statuses(probe)):
                if probe.received["/joint_command"]:
                    break
                time.sleep(0.01)
        said = [m for m in statuses(probe) if refused in m]
        assert said[0].startswith("best_effort: collides"), said[0]
        # the node answers in order: once a marker sent last has its verdict, nothing of the
        # colliding target is still on its way
        publish_until(
            probe,
            lambda: probe.publisher.publish(pose_msg(probe, pos, quat, frame="marker")),
            "/inference_node/status",
        )
        probe.wait_for(lambda: any("'marker'" in m for m in statuses(probe)), 60, "the marker")
        assert probe.received["/joint_command"] == [], "a pose that collides was commanded"
        # and with accept_best_effort the node does command: a target it answers free of
        # collision is served
        for seed in range(1000, 1200):
            q = kin.sample(1, torch.Generator().manual_seed(seed))
            good_pos, rot = kin.forward(q)
            good_pos, good_quat = good_pos[0].numpy(), matrix_to_quaternion(rot)[0].numpy()
            if not solver.solve(good_pos, good_quat, current=current).collides:
                break
        publish_until(
            probe,
            lambda: probe.publisher.publish(pose_msg(probe, good_pos, good_quat)),
            "/joint_command",
            60,
        )
        commanded = np.array(probe.received["/joint_command"][0].position)
        assert not solver.collisions.in_collision(commanded)
        assert inference.poll() is None
    finally:
        probe.close()
        print((stop(inference) + stop(sim))[-3000:])
