"""Serving a model: inference_node, optionally sim_node as the stand-in arm (use_sim),
robot_state_publisher and RViz.

    ros2 launch robot_ik_nn inference.launch.py model_dir:=models/niryo_one use_sim:=false \\
        controller:=niryo_one_follow_joint_trajectory_controller
"""

from robot_ik_nn.nodes.launch_description import describe


def generate_launch_description():
    return describe("inference")
