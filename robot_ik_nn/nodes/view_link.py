"""The browser page (robot_ik_nn/view/) connected to ROS: ``robot-ik-nn view --ros``, and
``view:=true`` on the launch sessions. rclpy glue only, here in nodes/ with the rest of it; the
page imports it lazily, for ``--ros`` alone.

The arm is drawn from ``/joint_states`` (the simulated or the real arm); the handle publishes
its pose to the inference node's ``~/target_pose``; the inference node's ``~/status`` fills the
panel. With ``learning``, the learner node's ``~/network`` drawing, ``~/metrics`` (the error
curve) and ``~/demo_target`` are shown too.
"""

from __future__ import annotations

import threading

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from ..view.learning import LearningView
from ..view.page import xyzw_to_wxyz
from .common import RELIABLE, shut_down_under_spin


class RosLink:
    def __init__(
        self,
        page,
        *,
        inference: str = "/inference_node",
        learner: str = "/learner_node",
        joint_states: str = "/joint_states",
        learning: bool = False,
    ):
        if not rclpy.ok():
            rclpy.init()
        self.page, self.arm = page, page.solver.arm
        self.node = node = Node("view_node")
        self.joint_states = 0  # messages drawn so far
        self.target_pub = node.create_publisher(PoseStamped, f"{inference}/target_pose", RELIABLE)
        node.create_subscription(JointState, joint_states, self._on_joints, RELIABLE)
        node.create_subscription(DiagnosticArray, f"{inference}/status", self._on_status, RELIABLE)
        self.learning = None
        if learning:  # no inference node to send targets to: the learner node's page
            self.learning = LearningView(page, "the learner node")
            node.create_subscription(MarkerArray, f"{learner}/network", self._on_network, 2)
            node.create_subscription(
                DiagnosticArray, f"{learner}/metrics", self._on_metrics, RELIABLE
            )
            node.create_subscription(PoseStamped, f"{learner}/demo_target", self._on_demo, 10)
        page.follow = self.send_target
        page.mode.visible = False  # the inference node answers, with its own settings
        page.status.value, page.errors.value, page.timing.value = (
            "waiting for /joint_states",
            "-",
            "",
        )
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(node)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, name="view_ros", daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        try:
            while not self._stop.is_set() and rclpy.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except ExternalShutdownException:  # Ctrl-C: rclpy's handler shut the context down
            pass
        except Exception:  # noqa: BLE001
            if not shut_down_under_spin():  # the same Ctrl-C, caught building the wait set
                raise

    # -- from the page to ROS ---------------------------------------------------------------------
    def send_target(self, position, quaternion) -> None:
        msg = PoseStamped()
        msg.header.frame_id = self.arm.base
        msg.header.stamp = self.node.get_clock().now().to_msg()
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in position)
        o.x, o.y, o.z, o.w = (float(v) for v in quaternion)
        self.target_pub.publish(msg)

    # -- from ROS to the page ---------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        by_name = dict(zip(msg.name, msg.position))
        if not all(name in by_name for name in self.arm.joint_names):
            return
        q = np.array([by_name[name] for name in self.arm.joint_names])
        if self.page.q is not None and self.joint_states and np.allclose(q, self.page.q, 0, 1e-7):
            return
        self.page.show_joints(q)
        if not self.joint_states:
            self.page.status.value = "arm connected (/joint_states)"
        self.joint_states += 1

    def _on_status(self, msg: DiagnosticArray) -> None:
        for s in msg.status:
            values = {v.key: v.value for v in s.values}
            self.page.show_status(
                s.message,
                values.get("pos_err_mm"),
                values.get("rot_err_deg"),
                values.get("latency_ms"),
            )

    def _on_network(self, msg: MarkerArray) -> None:
        self.learning.show_markers(msg)

    def _on_metrics(self, msg: DiagnosticArray) -> None:
        for s in msg.status:
            values = {v.key: v.value for v in s.values}
            if "step" in values and "pos_mm" in values:
                self.learning.add_metrics(
                    float(values["step"]), float(values["pos_mm"]), s.message
                )
            elif s.message:
                self.learning.set_status(s.message)

    def _on_demo(self, msg: PoseStamped) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        self.learning.show_demo((p.x, p.y, p.z), xyzw_to_wxyz((o.x, o.y, o.z, o.w)))

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.executor.remove_node(self.node)
        self.node.destroy_node()
        rclpy.try_shutdown()
