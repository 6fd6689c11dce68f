"""A live calibration: calibration_node moves the arm through poses, a tracker measures its
tool, and the fit writes a calibrated model folder; with use_sim, sim_node plays the arm (a true
arm from sim_urdf) and tracker_node the camera. Ends when the folder is written (or refused).

    ros2 launch robot_ik_nn calibrate.launch.py model_dir:=models/niryo_one \\
        out:=models/niryo_one_calibrated sim_urdf:=/tmp/true_niryo.urdf
"""

from robot_ik_nn.nodes.launch_description import describe


def generate_launch_description():
    return describe("calibrate")
