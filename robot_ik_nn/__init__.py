"""robot_ik_nn: a neural network learns a robot arm's inverse kinematics by reward.

The core (robot, kinematics, learners, solver, safety) imports neither rclpy nor pybullet;
``robot_ik_nn.sim`` wraps PyBullet and ``robot_ik_nn.nodes`` holds the ROS 2 nodes.
"""

__version__ = "0.1.0"
