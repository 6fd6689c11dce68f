"""A ROS 2 client of the inference node, without the ros2 command line: optionally resume the arm
node, send one target pose, print the joint command the node answers with, optionally stop.

    robot-ik-nn launch deploy arm:=niryo_one model_dir:=models/niryo_one dry_run:=true  # a shell
    python examples/ros_client.py --resume --xyz 0.25 0 0.2 --quat 0 0.7071068 0 0.7071068
"""

import argparse
import sys
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--xyz", nargs=3, type=float, default=[0.25, 0.0, 0.2])
parser.add_argument("--quat", nargs=4, type=float, default=[0.0, 0.7071068, 0.0, 0.7071068])
parser.add_argument("--frame", default="base_link", help="the arm's base link")
parser.add_argument("--resume", action="store_true", help="call /arm_node/resume first")
parser.add_argument("--stop", action="store_true", help="call /arm_node/stop at the end")
args = parser.parse_args()

rclpy.init()
node = rclpy.create_node("target_client")
commands, said = [], []
node.create_subscription(JointState, "/joint_command", commands.append, 10)
node.create_subscription(DiagnosticArray, "/inference_node/status",
                         lambda m: said.extend(s.message for s in m.status), 10)
targets = node.create_publisher(PoseStamped, "/inference_node/target_pose", 10)


def call(service):  # a std_srvs/Trigger service of the arm node: resume or stop
    client = node.create_client(Trigger, service)
    if not client.wait_for_service(timeout_sec=60.0):  # a node just started may take a while
        sys.exit(f"{service} was not offered in 60 s: is the arm node running?")
    future = client.call_async(Trigger.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
    print(service, "->", future.result().message)


if args.resume:
    call("/arm_node/resume")
deadline = time.monotonic() + 60.0
while not commands and time.monotonic() < deadline:  # sent again until answered: the node
    msg = PoseStamped()  # refuses a target stamped too long ago, or before it knows the arm
    msg.header.frame_id, msg.header.stamp = args.frame, node.get_clock().now().to_msg()
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = args.xyz
    o.x, o.y, o.z, o.w = args.quat
    targets.publish(msg)
    until = time.monotonic() + 1.0
    while not commands and time.monotonic() < until:
        rclpy.spin_once(node, timeout_sec=0.05)
if not commands:
    sys.exit(f"no joint command in 60 s; the node said: {said[-1:] or 'nothing'}")
until = time.monotonic() + 5.0  # the node's verdict follows its command
while not said and time.monotonic() < until:
    rclpy.spin_once(node, timeout_sec=0.05)
print("status:", said[-1] if said else "-")
print("joints (rad):", " ".join(f"{v:.6f}" for v in commands[0].position))
if args.stop:
    call("/arm_node/stop")
node.destroy_node()
rclpy.shutdown()
