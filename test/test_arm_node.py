"""The arm node with a watchdog, over DDS: a trajectory the arm cannot keep up with is still
followed to its end (its last point given until the arm holds it), and the status says so."""

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from ros_helpers import Probe, node_process, stop
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_ik_nn.nodes.common import RELIABLE

pytestmark = pytest.mark.ros

JOINTS = [f"joint_{i}" for i in range(1, 7)]  # the Niryo One's


def test_a_trajectory_faster_than_the_arm_is_followed_to_its_end():
    # a real arm's watchdog (0.3 s) and a quarter of the URDF's speed: the 0.1 s trajectory
    # below takes the arm about 1.6 s; the node used to stop giving its last point at 0.1 s,
    # and the watchdog then held the arm short of it
    params = {"driver": "pybullet", "watchdog_timeout": 0.3, "velocity_scale": 0.25,
              "start_enabled": True}
    proc = node_process("arm_node", params)
    probe = Probe("arm_node_probe")
    try:
        probe.listen(JointState, "/joint_states", RELIABLE)
        probe.listen(DiagnosticArray, "/arm_node/status", 100)
        pub = probe.node.create_publisher(
            JointTrajectory, "/arm_controller/joint_trajectory", RELIABLE
        )
        probe.wait_for(lambda: pub.get_subscription_count() >= 1 and probe.received.get(
            "/joint_states"), 60, "the arm node's joint states and trajectory subscription")
        goal = [0.3, -0.4, 0.5, -0.6, 0.7, -0.8]
        msg = JointTrajectory(joint_names=JOINTS)
        msg.points = [JointTrajectoryPoint(positions=goal, time_from_start=Duration(
            nanosec=100_000_000))]
        pub.publish(msg)

        def there():
            last = probe.received["/joint_states"][-1].position
            return np.abs(np.array(last) - goal).max() < 1e-3

        probe.wait_for(there, 10, "the arm at the trajectory's last point")
        # then holding it; once the watchdog runs out, "at the goal", not "short of the goal"
        probe.wait_for(
            lambda: probe.received["/arm_node/status"][-1].status[0].message
            == "holding: at the goal", 5, "the status to say the arm holds the goal")
    finally:
        probe.close()
        stop(proc)
