"""ROS 2: the sessions, the nodes (thin rclpy glue over the core) and the launch descriptions.

Importing this package imports nothing; each node module needs rclpy, ``session`` does not.

session.py              which nodes a session runs, with which parameters (the one plan)
session_arguments.py    its launch arguments, checked, and the params file
launch_description.py   that plan as launch_ros actions, for the files in launch/
runner.py               that plan run in one process, on one rclpy executor
common.py               QoS, declared parameters, messages, running a node
sim_node.py             the PyBullet arm as a node
arm_node.py             one arm, simulated or real, behind a driver and the bridge
learner_node.py         a training run as a node
inference_node.py       target poses in, safe joint commands out
inference_parameters.py the inference node's parameters
inference_status.py     the inference node's ~/status verdicts and its log
path_target.py          the inference node's ~/target_path
moveit_service.py       ~/solve_ik (moveit_msgs GetPositionIK)
trajectory.py           following a JointTrajectory in the simulator
trajectory_action.py    commands sent as a FollowJointTrajectory action
tracker_node.py         the simulated camera: the true tool pose
calibration_node.py     a live calibration session
robot_description.py    /robot_description beside a bringup
markers.py              RViz markers and poses
network_markers.py      the learner's network drawn for RViz
view_link.py            the browser page connected to ROS
client.py               a client of a running session (robot-ik-nn send, resume, stop)
relay_node.py           bench --dds-paths: the inference node's messages without solving
"""
