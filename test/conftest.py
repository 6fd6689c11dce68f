"""Shared fixtures. Every test run gets its own ROS_DOMAIN_ID so parallel runs don't cross-talk."""
import os

import pytest
import torch

os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
os.environ.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "1")
torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def niryo():
    from robot_ik_nn.robot import ArmModel

    return ArmModel.load("niryo_one")


@pytest.fixture(scope="session")
def inmoov():
    from robot_ik_nn.robot import ArmModel

    return ArmModel.load("inmoov_right_arm")


@pytest.fixture(scope="session")
def panda():
    from robot_ik_nn.robot import ArmModel

    return ArmModel.load("franka_panda")


@pytest.fixture(scope="session")
def niryo_model(tmp_path_factory):
    """A small Niryo One pose network, trained for a few seconds, shared by the node tests."""
    from robot_ik_nn.training import Trainer, TrainConfig

    out = tmp_path_factory.mktemp("models") / "niryo_one"
    Trainer(TrainConfig(robot="niryo_one", steps=1500, minutes=None, out=str(out), hidden=[128, 128]),
            progress=False).run()
    return out


@pytest.fixture(scope="session", autouse=True)
def _ros_context_closed_at_exit():
    """Tests that spin rclpy share the default context; shut it down once, at the end."""
    yield
    import sys

    if "rclpy" in sys.modules:
        import rclpy

        if rclpy.ok():
            rclpy.shutdown()
