"""tracker_node: plays the camera. It hears where the simulated tool really is
(``/sim_node/true_tool_pose``: the true arm's tool as PyBullet puts it, sag included, not the
model's forward kinematics) and publishes ``measured_pose`` (geometry_msgs/PoseStamped) in its
own ``frame_id``, mounted at ``mount`` (x y z roll pitch yaw in the arm's base frame), as a
marker tracker would: ``rate`` frames a second, each stamped with the moment it shows and sent
``latency`` s later, with noise (``noise_mm``, ``noise_deg``), a share ``drop`` of frames lost and
a share ``outliers`` centimetres off (``outlier_min_m`` .. ``outlier_max_m``). The model of it is
hardware/tracker_stream.py.
"""

from __future__ import annotations

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.time import Time

from ..hardware.tracker_stream import TrackerConfig, TrackerStream
from . import markers
from .common import RELIABLE, declare, now_seconds, spin_node, stamp_seconds

RELEASE_PERIOD = 0.01  # s: how often frames whose latency has passed are sent


class TrackerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("tracker_node", **kwargs)
        ro = {"read_only": True}
        mount = declare(self, "mount", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                        "the tracker in the arm's base frame: x y z (m) roll pitch yaw (rad)",
                        **ro)
        self.frame_id = declare(self, "frame_id", "tracker", "the frame of the poses sent", **ro)
        config = TrackerConfig(
            mount=tuple(mount),
            noise_mm=declare(self, "noise_mm", 0.2, "position noise, per axis (mm)", **ro),
            noise_deg=declare(self, "noise_deg", 0.1, "orientation noise (deg)", **ro),
            rate=declare(self, "rate", 30.0, "frames a second", **ro),
            latency=declare(self, "latency", 0.05, "s from a frame to its message", **ro),
            drop=declare(self, "drop", 0.02, "share of frames lost", **ro),
            outliers=declare(self, "outliers", 0.01, "share of frames centimetres off", **ro),
            outlier_m=(declare(self, "outlier_min_m", 0.02, "an outlier is this far off...", **ro),
                       declare(self, "outlier_max_m", 0.10, "...up to this (m)", **ro)),
            seed=declare(self, "seed", 0, "noise, drops and outliers seed", **ro),
        )
        self.stream = TrackerStream(config)  # refuses bad settings, naming them
        self.pub = self.create_publisher(PoseStamped, "measured_pose", RELIABLE)
        self.create_subscription(PoseStamped, "/sim_node/true_tool_pose", self.on_truth, RELIABLE)
        self.create_timer(1.0 / config.rate, lambda: self.stream.take(now_seconds(self)))
        self.create_timer(RELEASE_PERIOD, self.release)
        self.get_logger().info(
            f"measuring the simulated tool in frame {self.frame_id} at {config.rate:g} Hz, "
            f"{config.latency * 1000:g} ms late, noise {config.noise_mm} mm / "
            f"{config.noise_deg} deg, {config.drop:.0%} dropped, {config.outliers:.0%} outliers")

    def on_truth(self, msg: PoseStamped) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        self.stream.observe(stamp_seconds(msg.header.stamp), [p.x, p.y, p.z],
                            [o.x, o.y, o.z, o.w])

    def release(self) -> None:
        for frame in self.stream.due(now_seconds(self)):
            stamp = Time(nanoseconds=int(round(frame.stamp * 1e9))).to_msg()
            self.pub.publish(markers.pose_stamped(frame.position, frame.quaternion,
                                                  self.frame_id, stamp))


def main(args=None) -> int:
    return spin_node(TrackerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
