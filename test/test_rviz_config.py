"""config/robot_ik_nn.rviz kept honest: every topic it names is published, with the message
type its display reads, by the nodes of a running ``robot-ik-nn launch train`` session (asked of
the ROS graph, not read from the code); ``/robot_description`` comes from robot_state_publisher,
which the sessions plan (a ROS-install node: not run where only the rclpy wheels are)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.ros

RVIZ = Path(__file__).resolve().parents[1] / "config" / "robot_ik_nn.rviz"

# what each display class reads from the topic it names
DISPLAY_TYPES = {
    "rviz_default_plugins/MarkerArray": "visualization_msgs/msg/MarkerArray",
    "rviz_default_plugins/Marker": "visualization_msgs/msg/Marker",
    "rviz_default_plugins/Pose": "geometry_msgs/msg/PoseStamped",
    "rviz_default_plugins/RobotModel": "std_msgs/msg/String",
}
# published by robot_state_publisher (package robot_state_publisher), not by this package
FROM_ROBOT_STATE_PUBLISHER = {"/robot_description": "std_msgs/msg/String"}


def named_topics(path: Path = RVIZ) -> dict[str, tuple[str, str]]:
    """{topic: (display name, message type its display expects)} for every display."""
    config = yaml.safe_load(path.read_text())
    out = {}
    for display in config["Visualization Manager"]["Displays"]:
        for key in ("Topic", "Description Topic"):
            if key in display:
                kind = display["Class"]
                assert kind in DISPLAY_TYPES, f"unknown display class {kind} naming a topic"
                out[display[key]["Value"]] = (display["Name"], DISPLAY_TYPES[kind])
    return out


def test_the_config_names_the_arm_markers_and_the_network():
    topics = named_topics()
    classes = {
        d["Class"] for d in yaml.safe_load(RVIZ.read_text())["Visualization Manager"]["Displays"]
    }
    assert {"rviz_default_plugins/RobotModel", "rviz_default_plugins/TF"} <= classes
    assert {"/sim_node/markers", "/learner_node/markers", "/learner_node/network"} <= set(topics)


def test_every_named_topic_is_published_with_its_type(tmp_path):
    pytest.importorskip("rclpy")
    from ros_helpers import Probe
    from test_training_session import _session, interrupt

    from robot_ik_nn.nodes.session import plan

    expected = named_topics()
    ours = {t: v for t, v in expected.items() if t not in FROM_ROBOT_STATE_PUBLISHER}
    probe = Probe("rviz_config_probe")
    proc = _session(tmp_path / "model", minutes=5.0)
    graph: dict = {}
    try:

        def all_there():
            graph.update(dict(probe.node.get_topic_names_and_types()))
            return all(t in graph for t in ours)

        try:
            probe.wait_for(all_there, 180, f"the topics {sorted(ours)} in the ROS graph")
        except AssertionError:
            pytest.fail(f"not published: {sorted(set(ours) - set(graph))}")
    finally:
        probe.close()
        interrupt(proc)
    for topic, (display, kind) in ours.items():
        assert kind in graph[topic], f"{display}: {topic} carries {graph[topic]}, not {kind}"
    planned = {n.package: n.name for n in plan("train")}
    for topic, kind in FROM_ROBOT_STATE_PUBLISHER.items():
        if topic in expected:
            assert expected[topic][1] == kind
            assert "robot_state_publisher" in planned, f"{topic}: nobody in the session sends it"
