"""Driving a real arm: inference_node -> arm_node (the arm's driver and the bridge that keeps it
safe), robot_state_publisher and RViz; with dry_run:=true, the arm's emulator instead of the arm.

    ros2 launch robot_ik_nn deploy.launch.py arm:=niryo_one host:=10.10.10.10 \\
        model_dir:=models/niryo_one
    ros2 launch robot_ik_nn deploy.launch.py arm:=inmoov_right_arm port:=/dev/ttyACM0 \\
        calibration:=my_inmoov.yaml model_dir:=models/inmoov_right_arm
"""

from robot_ik_nn.nodes.launch_description import describe


def generate_launch_description():
    return describe("deploy")
