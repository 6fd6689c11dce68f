"""The inference node's /joint_states over DDS: a real node in its own process, a probe in the
test, no simulated arm (the probe is the arm's driver)."""

import time

import torch
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_helpers import Probe, node_process, stop
from sensor_msgs.msg import JointState

from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.nodes.common import RELIABLE

ARM = ArmModel.load("niryo_one")
TARGET = "/inference_node/target_pose"


def test_best_effort_readings_are_heard_and_refused_ones_said_without_dying(niryo_model):
    """A driver publishing /joint_states best effort was never heard (the node's subscription
    was reliable); one joint value beyond what the solver takes (2e6) killed the node, since only
    finiteness was checked before the solver refused it (both found by a review)."""
    inference = node_process("inference_node", {"model_dir": str(niryo_model)})
    probe = Probe("driver")
    probe.listen(DiagnosticArray, "/inference_node/status", QoSProfile(depth=100))
    best_effort = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
    states = probe.node.create_publisher(JointState, "/joint_states", best_effort)
    targets = probe.node.create_publisher(PoseStamped, TARGET, RELIABLE)
    kin = Kinematics(ARM, torch.float64)
    q = kin.sample(1, torch.Generator().manual_seed(3))
    pos, rot = kin.forward(q)
    pos, quat = pos[0].numpy(), matrix_to_quaternion(rot)[0].numpy()

    def verdict(joints):
        """Publish the joints, then the target, until the node answers; its status message."""
        before = len(probe.received["/inference_node/status"])
        deadline = time.time() + 60
        while time.time() < deadline:
            states.publish(
                JointState(name=ARM.joint_names, position=[float(v) for v in joints])
            )
            time.sleep(0.2)  # the reading first
            msg = PoseStamped()
            msg.header.frame_id = "base_link"
            msg.header.stamp = probe.node.get_clock().now().to_msg()
            p, o = msg.pose.position, msg.pose.orientation
            p.x, p.y, p.z = (float(v) for v in pos)
            o.x, o.y, o.z, o.w = (float(v) for v in quat)
            targets.publish(msg)
            until = time.time() + 1.0
            while time.time() < until:
                got = probe.received["/inference_node/status"][before:]
                said = [s.message for m in got for s in m.status]
                if any("no joint state yet" not in m for m in said):
                    return said[-1]
                time.sleep(0.01)
        raise AssertionError("the inference node answered no target in 60 s")

    try:
        probe.wait_for(
            lambda: states.get_subscription_count() >= 1 and targets.get_subscription_count() >= 1,
            60,
            "the inference node",
        )
        assert verdict(q[0].numpy()).startswith("solved")
        huge = q[0].numpy().copy()
        huge[5] = 2e6
        said = verdict(huge)
        assert said.startswith("rejected") and "beyond 1e6" in said and "/joint_states" in said
        assert inference.poll() is None  # alive
        assert verdict(q[0].numpy()).startswith("solved")  # and serving again
    finally:
        probe.close()
        out = stop(inference)
        print(out[-3000:])
