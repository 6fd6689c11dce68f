"""sim_node: the PyBullet arm as a ROS 2 node, the stand-in for real hardware.

It is arm_node (arm_node.py) with the PyBullet driver, enabled from start-up and without a
watchdog (a simulated arm is where a single command should simply be followed); every topic,
service and parameter is arm_node's. To simulate an arm that is not the model's (a "true" arm
to calibrate against), give ``sim_urdf`` (and ``sim_stiffness`` for soft joints that sag):

    sim_node --ros-args -p robot:=niryo_one -p sim_urdf:=/tmp/true_niryo.urdf
"""

from __future__ import annotations

from .arm_node import SIMULATED, ArmNode
from .common import spin_node


class SimNode(ArmNode):
    def __init__(self, **kwargs):
        super().__init__("sim_node", SIMULATED, **kwargs)


def main(args=None) -> int:
    return spin_node(SimNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
