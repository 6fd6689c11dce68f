"""The inference session joining a MoveIt / ros2_control bringup: no second
robot_state_publisher (use_rsp:=false), the bringup's /robot_description checked against the
model's arm over DDS, sim time, the joint states' topic remapped, model_dir resolved."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from ros_helpers import Probe, node_process, stop
from std_msgs.msg import String
from test_session import _stand_in_launch

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.nodes import session_arguments
from robot_ik_nn.nodes.common import RELIABLE
from robot_ik_nn.nodes.robot_description import LATCHED
from robot_ik_nn.nodes.session import plan
from robot_ik_nn.nodes.session_arguments import ARGUMENTS, SessionError

pytestmark = pytest.mark.ros

ROOT = Path(__file__).resolve().parent.parent


def names(nodes):
    return [n.name for n in nodes]


def test_use_rsp_false_plans_no_robot_state_publisher(served_model):
    own = plan("inference", {"model_dir": str(served_model)})
    assert "robot_state_publisher" in names(own)
    beside = plan("inference", {"model_dir": str(served_model), "use_rsp": "false"})
    assert "robot_state_publisher" not in names(beside)
    assert names(beside) == [n for n in names(own) if n != "robot_state_publisher"]
    assert beside[0].parameters["check_robot_description"] is True
    assert "check_robot_description" not in own[0].parameters
    with pytest.raises(SessionError, match="use_rsp:=maybe is not a switch"):
        plan("inference", {"use_rsp": "maybe"})


def test_the_launch_file_starts_no_robot_state_publisher_with_use_rsp_false(
    served_model, monkeypatch
):
    _stand_in_launch(monkeypatch)
    path = ROOT / "launch" / "inference.launch.py"
    spec = importlib.util.spec_from_file_location("inference_launch_file", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (opaque,) = [
        a for a in module.generate_launch_description().args[0]
        if type(a).__name__ == "OpaqueFunction"
    ]  # fmt: skip
    given = {name: arg.default for name, arg in ARGUMENTS["inference"].items()}
    for use_rsp, count in (("true", 1), ("false", 0)):
        given.update(model_dir=str(served_model), use_rsp=use_rsp)
        actions = opaque.kwargs["function"](given, *opaque.kwargs["args"])
        packages = [a.kwargs.get("package") for a in actions if type(a).__name__ == "Node"]
        assert packages.count("robot_state_publisher") == count, (use_rsp, packages)


def test_sim_time_and_the_joint_states_topic_reach_every_node(served_model):
    nodes = plan("inference", {"model_dir": str(served_model), "use_sim_time": "true",
                               "joint_states": "/bringup/joint_states"})  # fmt: skip
    assert all(n.parameters.get("use_sim_time") is True for n in nodes)
    for n in nodes:
        if n.package == "robot_ik_nn":
            assert ("/joint_states", "/bringup/joint_states") in n.remappings, n.name
    default = plan("inference", {"model_dir": str(served_model)})
    assert all("use_sim_time" not in n.parameters for n in default)
    assert all(("/joint_states", "/joint_states") not in n.remappings for n in default)
    with pytest.raises(SessionError, match="is not a topic"):
        plan("inference", {"model_dir": str(served_model), "joint_states": "joint states"})


def test_model_dir_resolved_from_the_share_or_an_absolute_path(tmp_path, monkeypatch):
    share = tmp_path / "share"
    (share / "models" / "mine").mkdir(parents=True)
    monkeypatch.setattr(session_arguments, "share_dir", lambda: share)
    monkeypatch.chdir(tmp_path)
    assert session_arguments.resolve_model_dir("models/mine") == str(share / "models" / "mine")
    (tmp_path / "models" / "mine").mkdir(parents=True)  # the working directory comes first
    assert session_arguments.resolve_model_dir("models/mine") == str(tmp_path / "models" / "mine")
    assert session_arguments.resolve_model_dir(str(share)) == str(share)
    with pytest.raises(SessionError, match="does not exist"):
        session_arguments.resolve_model_dir(str(tmp_path / "nowhere"))
    with pytest.raises(SessionError, match="does not exist"):
        plan("inference", {"model_dir": str(tmp_path / "nowhere")})


@pytest.mark.ros
def test_the_bringups_robot_description_is_checked_over_dds(served_model):
    """With check_robot_description, a target is refused while /robot_description is another
    arm's, and judged on its own merits once the model's arm is published."""
    node = node_process(
        "inference_node", {"model_dir": str(served_model), "check_robot_description": True}
    )
    probe = Probe("bringup")
    try:
        probe.listen(DiagnosticArray, "/inference_node/status", 100)
        description = probe.node.create_publisher(String, "/robot_description", LATCHED)
        target = probe.node.create_publisher(PoseStamped, "/inference_node/target_pose",
                                             RELIABLE)  # fmt: skip
        probe.wait_for(lambda: target.get_subscription_count() >= 1, 120, "the inference node")

        def verdict():
            before = len(probe.received["/inference_node/status"])
            msg = PoseStamped()
            msg.header.frame_id = "base_link"
            msg.header.stamp = probe.node.get_clock().now().to_msg()
            msg.pose.position.x, msg.pose.position.z = 0.2, 0.3
            msg.pose.orientation.w = 1.0
            target.publish(msg)
            probe.wait_for(
                lambda: len(probe.received["/inference_node/status"]) > before, 30, "a verdict"
            )
            return probe.received["/inference_node/status"][before].status[0].message

        def until(fits, what):
            for _ in range(100):  # the description travels beside the targets: a few may pass
                said = verdict()
                if fits(said):
                    return said
            raise AssertionError(f"no verdict {what}; the last: {said}")

        until(lambda s: "no /robot_description received yet" in s, "before a description")
        description.publish(String(data=ArmModel.load("franka_panda").urdf_text))
        until(lambda s: "/robot_description is not" in s, "naming the other arm")
        description.publish(String(data=(Path(served_model) / "robot.urdf").read_text()))
        said = until(lambda s: "robot_description" not in s, "without the description")
        assert "joint state" in said, said  # judged on its merits: no arm's joints here
    finally:
        probe.close()
        print(stop(node)[-3000:])
