"""Looking at an arm: sim_node, robot_state_publisher and RViz.

ros2 launch robot_ik_nn display.launch.py robot:=inmoov_right_arm rviz:=true
"""

from robot_ik_nn.nodes.launch_description import describe


def generate_launch_description():
    return describe("display")
