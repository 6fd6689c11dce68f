"""A training session: sim_node (the PyBullet arm), learner_node (the trainer) and
robot_state_publisher, optionally RViz. Ends when the training budget is spent.

    ros2 launch robot_ik_nn train.launch.py robot:=niryo_one model_dir:=models/niryo_one rviz:=true
"""

from robot_ik_nn.nodes.launch_description import describe


def generate_launch_description():
    return describe("train")
