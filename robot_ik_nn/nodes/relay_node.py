"""The bare rclpy relay of ``bench --dds-paths``: the inference node's messages without solving.

What the bench measures the node against in the same run: a node named ``inference_node`` (under
the namespace ``/bench_relay``, so that both are up side by side and each target reaches one),
started as the node is (``python -m ... --ros-args``, rclpy's events executor where there is
one, ``gc.freeze()`` once built), subscribing what the node subscribes with the same QoS
(``/joint_states``, ``~/target_path``, ``~/target_pose``) and publishing, for each target, what
the node publishes for a target it commands, in the same order and of the same types and sizes:
``joint_command`` (JointState, stamped with the target's stamp), ``arm_controller/
joint_trajectory`` (JointTrajectory, one point), ``~/joint_quaternions`` (Float64MultiArray),
``~/status`` (DiagnosticArray: "relayed", with the node's keys) and ``~/target_taken``. The joints
it commands are the arm's last ``/joint_states`` (mid-range before any): no IK, no checks.

Parameters: ``model_dir`` (the arm: its ``model.json`` and ``robot.urdf``), and for the bench's
own tests ``delay_ms`` (sleep this long in each target's callback) and ``silent`` (publish
nothing: a relay that never answers).
"""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..arm.model import ArmModel
from .common import READINGS, RELIABLE, duration_msg, spin_node, status

NAMESPACE = "/bench_relay"
DURATION_S = 0.1  # the trajectory point's time_from_start


class Relay(Node):
    def __init__(self, **kwargs):
        super().__init__("inference_node", namespace=NAMESPACE, **kwargs)
        folder = Path(self.declare_parameter("model_dir", "").value)
        self.delay = self.declare_parameter("delay_ms", 0.0).value / 1000.0
        self.silent = self.declare_parameter("silent", False).value
        if not folder.name:
            raise RuntimeError("parameter model_dir is required: the arm's model folder")
        meta = json.loads((folder / "model.json").read_text())
        arm = ArmModel.load(folder / "robot.urdf", base=meta["base"], tip=meta["tip"])
        self.arm, self.names, self.axes = arm, list(arm.joint_names), arm.axes
        self.q = np.asarray(arm.mid_range, dtype=float)
        self.count = 0
        self.command_pub = self.create_publisher(JointState, "joint_command", RELIABLE)
        self.trajectory_pub = self.create_publisher(
            JointTrajectory, "arm_controller/joint_trajectory", RELIABLE
        )
        self.quat_pub = self.create_publisher(Float64MultiArray, "~/joint_quaternions", RELIABLE)
        self.status_pub = self.create_publisher(DiagnosticArray, "~/status", RELIABLE)
        self.taken_pub = self.create_publisher(PoseStamped, "~/target_taken", RELIABLE)
        self._joint_msg = JointState(name=list(self.names))
        self._joint_msg.header.frame_id = arm.base
        self._point = JointTrajectoryPoint()
        self._traj_msg = JointTrajectory(joint_names=list(self.names), points=[self._point])
        self._quat_msg = Float64MultiArray()
        self._quat_msg.layout.dim = [
            MultiArrayDimension(label="joints", size=arm.dof, stride=arm.dof * 4),
            MultiArrayDimension(label="xyzw", size=4, stride=4),
        ]
        self.create_subscription(JointState, "/joint_states", self.on_joint_states, READINGS)
        self.create_subscription(PoseArray, "~/target_path", lambda msg: None, RELIABLE)
        self.create_subscription(PoseStamped, "~/target_pose", self.on_target, RELIABLE)
        gc.freeze()
        self.get_logger().info(f"relaying for {arm.name} ({arm.dof} joints), no solving")

    def on_joint_states(self, msg: JointState) -> None:
        given = dict(zip(msg.name, msg.position))
        if all(n in given for n in self.names):
            self.q = np.array([given[n] for n in self.names], dtype=float)

    def on_target(self, msg: PoseStamped) -> None:
        started = time.perf_counter()
        if self.delay:
            time.sleep(self.delay)
        if self.silent:
            return
        p, o = msg.pose.position, msg.pose.orientation
        _ = np.array((p.x, p.y, p.z)), np.array((o.x, o.y, o.z, o.w))  # as the node reads them
        q = self.q.copy()
        self.count += 1
        joint = self._joint_msg
        joint.position, joint.header.stamp = q.tolist(), msg.header.stamp
        self.command_pub.publish(joint)
        self._point.positions = q.tolist()
        self._point.time_from_start = duration_msg(DURATION_S)
        self.trajectory_pub.publish(self._traj_msg)
        half = q / 2.0
        quats = np.empty((self.arm.dof, 4))
        np.multiply(self.axes, np.sin(half)[:, None], out=quats[:, :3])
        np.cos(half, out=quats[:, 3])
        self._quat_msg.data = quats.ravel().tolist()
        self.quat_pub.publish(self._quat_msg)
        values = {
            "latency_ms": f"{(time.perf_counter() - started) * 1000:.3f}",
            "count_relayed": self.count,
            "pos_err_mm": "0.0000",
            "rot_err_deg": "0.0000",
            "joint_names": ",".join(self.names),
            "joints": ",".join(map(repr, q.tolist())),
            "time_from_start_s": f"{DURATION_S:.3f}",
        }
        report = DiagnosticArray()
        report.header.stamp = self.get_clock().now().to_msg()
        report.status = [
            status("inference_node: target", "ok", "relayed", values, self.arm.name)
        ]
        self.status_pub.publish(report)
        self.taken_pub.publish(msg)


def main(args=None) -> int:
    return spin_node(Relay, args)


if __name__ == "__main__":
    raise SystemExit(main())
