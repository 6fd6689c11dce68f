"""Beside a bringup (use_rsp:=false): the /robot_description its robot_state_publisher publishes
is checked against the arm the model serves. A different arm (its joints, limits or links from
base to tip) refuses every target with the reason, until a matching description comes."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..arm.model import ArmModel, RobotModelError

# robot_state_publisher's own QoS for the description: latched for late joiners
LATCHED = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


def description_problem(arm, text: str) -> str:
    """Why URDF ``text`` is not ``arm`` ("" when it is)."""
    try:
        other = ArmModel(text, source="/robot_description", base=arm.base, tip=arm.tip)
    except (RobotModelError, ValueError, KeyError) as err:
        return f"/robot_description is not {arm.name}'s URDF from {arm.base} to {arm.tip}: {err}"
    if other.fingerprint != arm.fingerprint:
        return (
            f"/robot_description is another arm than the model's ({arm.base} -> {arm.tip}: "
            f"fingerprint {other.fingerprint[:12]}, the model's {arm.fingerprint[:12]}); "
            "targets refused"
        )
    return ""


def check_robot_description(node) -> None:
    """Subscribe ``node`` (with ``arm`` and ``description_problem`` attributes) to the bringup's
    /robot_description; targets are refused until one matching the arm arrives."""
    node.description_problem = "no /robot_description received yet (use_rsp:=false)"

    def on_description(msg):
        node.description_problem = description_problem(node.arm, msg.data)
        if node.description_problem:
            node.get_logger().error(node.description_problem)
        else:
            node.get_logger().info("/robot_description matches the model's arm")

    node.create_subscription(String, "/robot_description", on_description, LATCHED)
