"""sim_node: the PyBullet arm as a ROS 2 node, the stand-in for real hardware.

Subscribes ``joint_command`` (sensor_msgs/JointState) and ``<controller>/joint_trajectory``
(trajectory_msgs/JointTrajectory); steps the simulation in position control at ``rate`` Hz;
publishes ``/joint_states``, ``~/end_effector_pose`` (PoseStamped) and ``~/markers``
(MarkerArray: the reached pose, and the last target heard on ``target_pose``).
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from ..arm.model import ArmModel
from ..sim import ArmSim
from . import markers
from .common import RELIABLE, declare, live_parameters, spin_node
from .trajectory import TrajectoryFollower


class SimNode(Node):
    def __init__(self, **kwargs):
        super().__init__("sim_node", **kwargs)
        robot = declare(
            self, "robot", "niryo_one", "built-in arm name or URDF path", read_only=True
        )
        base = declare(self, "base_link", "", "base link ('' = the URDF's root)", read_only=True)
        tip = declare(self, "tip_link", "", "tip link ('' = the only leaf)", read_only=True)
        self.rate = declare(
            self,
            "rate",
            50.0,
            "simulation and /joint_states rate (Hz)",
            read_only=True,
            lo=1.0,
            hi=1000.0,
        )
        substeps = declare(
            self, "substeps", 4, "physics steps per tick", read_only=True, lo=1, hi=100
        )
        controller = declare(
            self,
            "controller",
            "arm_controller",
            "trajectory topic prefix: <controller>/joint_trajectory",
            read_only=True,
        )
        gui = declare(
            self, "gui", False, "open the PyBullet window (needs a display)", read_only=True
        )
        initial = declare(
            self,
            "initial_joints",
            [0.0],
            "joint values at start ([0.0] = all zero)",
            read_only=True,
        )
        self.marker_every = declare(
            self, "marker_period", 0.1, "seconds between marker updates", lo=0.01, hi=10.0
        )
        live_parameters(self, {"marker_period": "marker_every"})

        self.arm = ArmModel.load(robot, base=base or None, tip=tip or None)
        self.sim = ArmSim(self.arm, gui=gui, time_step=1.0 / (self.rate * substeps))
        self.substeps = substeps
        if len(initial) == self.arm.dof:
            self.sim.set_joints(initial)
        self.frame = self.arm.base
        self.follower = TrajectoryFollower(self.arm.joint_names)
        self.target = None
        self._last_markers = 0.0

        self.joint_pub = self.create_publisher(JointState, "/joint_states", RELIABLE)
        self.pose_pub = self.create_publisher(PoseStamped, "~/end_effector_pose", RELIABLE)
        self.marker_pub = self.create_publisher(MarkerArray, "~/markers", RELIABLE)
        self.create_subscription(JointState, "joint_command", self.on_command, RELIABLE)
        self.create_subscription(
            JointTrajectory, f"{controller}/joint_trajectory", self.on_trajectory, RELIABLE
        )
        self.create_subscription(PoseStamped, "target_pose", self.on_target, RELIABLE)
        self.create_timer(1.0 / self.rate, self.tick)
        self.get_logger().info(
            f"simulating {self.arm.name} ({self.arm.dof} joints) at {self.rate:g} Hz; "
            f"trajectories on {controller}/joint_trajectory"
        )

    # -- inputs -----------------------------------------------------------------------------------
    def _ordered(self, names, values) -> np.ndarray | None:
        given = dict(zip(names, values))
        missing = [n for n in self.arm.joint_names if n not in given]
        if missing:
            self.get_logger().warning(
                f"command without joints {missing}: ignored", throttle_duration_sec=2.0
            )
            return None
        q = np.array([given[n] for n in self.arm.joint_names], dtype=float)
        if not np.all(np.isfinite(q)):
            self.get_logger().warning(
                "command with non-finite values: ignored", throttle_duration_sec=2.0
            )
            return None
        return np.clip(
            q, self.arm.lower, self.arm.upper
        )  # like a real controller: never past a limit

    def on_command(self, msg: JointState) -> None:
        q = self._ordered(msg.name, msg.position)
        if q is not None:
            self.follower.clear()
            self.sim.command(q)

    def on_trajectory(self, msg: JointTrajectory) -> None:
        if not self.follower.load(msg, self.sim.get_joints(), self._now()):
            self.get_logger().warning(
                "trajectory without all joints or with bad values: ignored",
                throttle_duration_sec=2.0,
            )

    def on_target(self, msg: PoseStamped) -> None:
        self.target = msg

    # -- the loop ---------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def tick(self) -> None:
        now = self._now()
        goal = self.follower.sample(now)
        if goal is not None:
            q = self._ordered(self.arm.joint_names, goal)
            if q is not None:
                self.sim.command(q)
        self.sim.step(self.substeps)
        stamp = self.get_clock().now().to_msg()
        state = JointState(
            name=self.arm.joint_names,
            position=self.sim.get_joints().tolist(),
            velocity=self.sim.get_velocities().tolist(),
        )
        state.header.stamp = stamp
        self.joint_pub.publish(state)
        pos, quat = self.sim.end_effector_pose()
        pose = markers.pose_stamped(pos, quat, self.frame, stamp)
        self.pose_pub.publish(pose)
        if now - self._last_markers >= self.marker_every:
            self._last_markers = now
            self.marker_pub.publish(
                markers.reached_and_target(pose, self.target, self.frame, stamp, self.arm.reach)
            )

    def close(self) -> None:
        self.sim.close()


def main(args=None) -> int:
    return spin_node(SimNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
