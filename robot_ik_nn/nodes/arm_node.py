"""arm_node: one arm, simulated or real, behind a driver (hardware/driver.py) and the bridge that
keeps it safe (hardware/bridge.py). ``sim_node`` is this node with the PyBullet driver.

Subscribes ``joint_command`` (sensor_msgs/JointState) and ``<controller>/joint_trajectory``
(trajectory_msgs/JointTrajectory); publishes ``/joint_states``, ``~/end_effector_pose``
(PoseStamped, from the joints read back), ``~/markers`` (reached pose and the last target heard on
``target_pose``: the sessions remap it to the inference node's ``~/target_taken``, never to
its ``~/target_pose``) and ``~/status`` (DiagnosticArray: connected, enabled, holding and why);
services ``~/stop`` and ``~/resume`` (std_srvs/Trigger). A real arm does not move after start-up
until ``~/resume`` is called or ``start_enabled`` is true, and holds when no command came within
``watchdog_timeout`` seconds (stream commands to it: the inference node's ``stream``). Commands
and trajectories stamped before the last ``~/resume`` (or start-up) or the last loss of the arm
are refused by the bridge: an old goal is never replayed, however often it is repeated (a zero
stamp counts as now).

With the PyBullet driver, ``sim_urdf`` makes the simulated arm another URDF than the model's (a
"true" arm, calibration/true_arm.py) and ``sim_stiffness`` turns on soft joints that sag under
gravity (hardware/true_arm_driver.py); ``~/true_tool_pose`` (PoseStamped) is then where the
simulated tool really is, what a tracker sees (nodes/tracker_node.py).
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from ..arm.model import ArmModel
from ..arm.rotations import matrix_to_quaternion
from ..hardware.bridge import Bridge, BridgeConfig
from ..hardware.drivers import driver_kinds, make_driver
from ..ik.solver import Solver
from . import markers
from .common import RELIABLE, declare, live_parameters, spin_node, status
from .trajectory import TrajectoryFollower

SIMULATED = {"driver": "pybullet", "watchdog_timeout": 0.0, "start_enabled": True}
REAL = {"driver": "niryo_one_tcp", "watchdog_timeout": 0.5, "start_enabled": False}


class ArmNode(Node):
    def __init__(self, node_name: str = "arm_node", defaults: dict = REAL, **kwargs):
        super().__init__(node_name, **kwargs)
        ro = {"read_only": True}
        robot = declare(self, "robot", "niryo_one", "built-in arm name or URDF path", **ro)
        base = declare(self, "base_link", "", "base link ('' = the URDF's root)", **ro)
        tip = declare(self, "tip_link", "", "tip link ('' = the only leaf)", **ro)
        kind = declare(self, "driver", defaults["driver"],
                       f"one of {', '.join(driver_kinds())}", **ro)
        host = declare(self, "host", "127.0.0.1", "the arm's address (TCP drivers)", **ro)
        port = declare(self, "port", "", "TCP port or serial device ('' = the driver's)", **ro)
        calibration = declare(self, "calibration", "", "inmoov_serial: calibration YAML", **ro)
        self.rate = declare(self, "rate", 50.0, "command and /joint_states rate (Hz)",
                            lo=1.0, hi=1000.0, **ro)
        watchdog = declare(self, "watchdog_timeout", defaults["watchdog_timeout"],
                           "hold when no command came within this many seconds (0 = never)",
                           lo=0.0, hi=60.0, **ro)
        enabled = declare(self, "start_enabled", defaults["start_enabled"],
                          "move on commands from start-up (else only after ~/resume)", **ro)
        scale = declare(self, "velocity_scale", 1.0, "share of the URDF's velocity limits",
                        lo=0.01, hi=1.0, **ro)
        controller = declare(self, "controller", "arm_controller",
                             "trajectory topic prefix: <controller>/joint_trajectory "
                             "('' = take joint_command only)", **ro)
        gui = declare(self, "gui", False, "pybullet: open the window (needs a display)", **ro)
        initial = declare(self, "initial_joints", [0.0],
                          "pybullet: joint values at start ([0.0] = all zero)", **ro)
        sim_urdf = declare(self, "sim_urdf", "", "pybullet: the arm simulated, when not the "
                           "model's (a URDF path or a built-in name; '' = robot)", **ro)
        stiffness = declare(self, "sim_stiffness", 0.0, "pybullet: soft joints that sag under "
                            "gravity, this stiff (N m/rad; 0 = rigid)", lo=0.0, hi=1e9, **ro)
        self.marker_every = declare(self, "marker_period", 0.1, "seconds between marker updates",
                                    lo=0.01, hi=10.0)
        live_parameters(self, {"marker_period": "marker_every"})

        self.arm = ArmModel.load(robot, base=base or None, tip=tip or None)
        if kind == "pybullet":
            driver = self._sim_driver(sim_urdf, stiffness, gui=gui, initial=initial)
        else:
            driver = make_driver(kind, self.arm, host=host, port=port, calibration=calibration)
        self.true_pose = getattr(driver, "tool_pose", None)  # the simulated tool, where it is
        self.bridge = Bridge(driver, BridgeConfig(rate=self.rate, watchdog=watchdog,
                                                  start_enabled=enabled, velocity_scale=scale))
        self.fk = Solver(self.arm)
        self.follower = TrajectoryFollower(self.arm.joint_names)
        self.target = None
        self._last_markers = self._last_status = 0.0
        self._last_read = None
        self._reported = None
        self._decided_at = None  # when the trajectory being followed was decided (bridge clock)

        self.joint_pub = self.create_publisher(JointState, "/joint_states", RELIABLE)
        self.pose_pub = self.create_publisher(PoseStamped, "~/end_effector_pose", RELIABLE)
        self.marker_pub = self.create_publisher(MarkerArray, "~/markers", RELIABLE)
        self.status_pub = self.create_publisher(DiagnosticArray, "~/status", RELIABLE)
        if self.true_pose is not None:
            self.true_pub = self.create_publisher(PoseStamped, "~/true_tool_pose", RELIABLE)
        self.create_subscription(JointState, "joint_command", self.on_command, RELIABLE)
        if controller:
            self.create_subscription(
                JointTrajectory, f"{controller}/joint_trajectory", self.on_trajectory, RELIABLE
            )
        self.create_subscription(PoseStamped, "target_pose", self.on_target, RELIABLE)
        self.create_service(Trigger, "~/stop", self.on_stop)
        self.create_service(Trigger, "~/resume", self.on_resume)
        self.create_timer(1.0 / self.rate, self.tick)
        self.bridge.start()
        self.get_logger().info(
            f"{self.arm.name} ({self.arm.dof} joints) through {driver.describe()} at "
            f"{self.rate:g} Hz; {'enabled' if enabled else 'holding until ~/resume'}; "
            f"watchdog {watchdog:g} s"
            + (f"; trajectories on {controller}/joint_trajectory" if controller else "")
        )

    def _sim_driver(self, sim_urdf: str, stiffness: float, **options):
        from ..hardware.true_arm_driver import TrueArmDriver

        arm = self.arm
        sim_arm = ArmModel.load(sim_urdf, base=arm.base, tip=arm.tip) if sim_urdf else arm
        physics = {"stiffness": stiffness} if stiffness > 0 else {}
        return TrueArmDriver(arm, sim_arm, physics, **options)

    # -- inputs -----------------------------------------------------------------------------------
    def _give(self, names, values, decided=None) -> bool:
        given = dict(zip(names, values))
        missing = [n for n in self.arm.joint_names if n not in given]
        why = (f"command without joints {missing}" if missing
               else self.bridge.command([given[n] for n in self.arm.joint_names], decided))
        if why:
            self.get_logger().warning(f"command refused: {why}", throttle_duration_sec=2.0)
        return not why

    def _decided(self, stamp):
        """When a message's goal was decided, on the bridge's clock (None: unstamped, now). The
        bridge refuses goals decided before its last ~/resume or loss of the arm, however often
        they are repeated (an inference node streams a goal, stamped with its target's stamp,
        until the arm gets there)."""
        seconds = stamp.sec + stamp.nanosec * 1e-9
        return None if seconds <= 0.0 else self.bridge.clock() - (self._now() - seconds)

    def on_command(self, msg: JointState) -> None:
        self.follower.clear()
        self._give(msg.name, msg.position, self._decided(msg.header.stamp))

    def on_trajectory(self, msg: JointTrajectory) -> None:
        decided = self._decided(msg.header.stamp)
        self._decided_at = self.bridge.clock() if decided is None else decided
        current = self.bridge.joints
        if current is None or not self.follower.load(msg, current, self._now()):
            self.get_logger().warning(
                "trajectory without all joints, with bad values, or no joints read yet: ignored",
                throttle_duration_sec=2.0,
            )

    def on_target(self, msg: PoseStamped) -> None:
        self.target = msg

    def on_stop(self, _request, response):
        self.follower.clear()
        self.bridge.stop()
        response.success, response.message = True, "holding; call ~/resume to move again"
        self._publish_status(force=True)
        return response

    def on_resume(self, _request, response):
        self.follower.clear()  # a trajectory heard while holding is not followed now
        self.bridge.resume()
        response.success = True
        response.message = "moving on fresh commands" + (
            "" if self.bridge.connected else " (once the arm is reachable again)"
        )
        self._publish_status(force=True)
        return response

    # -- the loop ---------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def tick(self) -> None:
        now = self._now()
        goal = self.follower.sample(now)
        if goal is not None:
            taken = self._give(self.arm.joint_names, goal, self._decided_at)
            # past its end, the last point is given until the arm holds it (the arm can lag
            # the trajectory's timing: a slower velocity_scale, a stale joint state at its
            # planning), unless the bridge refuses it
            if now - self.follower.start > self.follower.times[-1] and (
                not taken or self.bridge.reached(goal)
            ):
                self.follower.clear()  # the watchdog judges the arm from here
        self._publish_status()
        joints, read = self.bridge.joints, self.bridge.read_time
        if joints is None or read == self._last_read:
            return
        self._last_read = read
        stamp = self.get_clock().now().to_msg()
        velocities = self.bridge.velocities
        state = JointState(name=self.arm.joint_names, position=joints.tolist(),
                           velocity=[] if velocities is None else velocities.tolist())
        state.header.stamp = stamp
        self.joint_pub.publish(state)
        P, R = self.fk.forward(joints)
        pose = markers.pose_stamped(P[0], matrix_to_quaternion(R[0]), self.arm.base, stamp)
        self.pose_pub.publish(pose)
        if self.true_pose is not None:
            self._publish_true_pose()
        if now - self._last_markers >= self.marker_every:
            self._last_markers = now
            self.marker_pub.publish(
                markers.reached_and_target(pose, self.target, self.arm.base, stamp,
                                           self.arm.reach)
            )

    def _publish_true_pose(self) -> None:
        seen = self.true_pose()
        if seen is None:
            return
        p, q, _ = seen
        stamp = self.get_clock().now().to_msg()
        self.true_pub.publish(markers.pose_stamped(p, q, self.arm.base, stamp))

    def _publish_status(self, force: bool = False) -> None:
        state = self.bridge.state()
        key = (state["level"], state["message"])
        now = self._now()
        if not force and key == self._reported and now - self._last_status < 0.5:
            return
        self._reported, self._last_status = key, now
        level = ("ok", "warn", "error")[state["level"]]
        values = {k: v for k, v in state.items() if k not in ("level", "message")}
        msg = DiagnosticArray(status=[status(f"{self.get_name()}: arm", level, state["message"],
                                             values, hardware_id=state["driver"])])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(msg)

    def close(self) -> None:
        self.bridge.close()


def main(args=None) -> int:
    return spin_node(ArmNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
