"""`robot-ik-nn launch train`: the training session in one process, watched over DDS."""

import json
import signal
import subprocess
import sys

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_helpers import Probe, _die_with_parent
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from robot_ik_nn import model_dir

pytestmark = pytest.mark.ros

DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def _session(out, minutes):
    cmd = [
        sys.executable,
        "-m",
        "robot_ik_nn.cli",
        "launch",
        "train",
        f"model_dir:={out}",
        f"minutes:={minutes}",
    ]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_die_with_parent,
    )


def interrupt(proc, timeout: float = 120.0) -> str:
    """Ctrl-C the session and return its output; one that will not end fails the test with every
    thread's stack (the CLI prints them on SIGUSR1)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        try:
            output = proc.communicate(timeout=5)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            output = proc.communicate()[0]
        pytest.fail(f"the session did not end within {timeout:g} s of Ctrl-C:\n{output[-6000:]}")


@pytest.fixture()
def probe():
    p = Probe("session_probe")
    p.listen(DiagnosticArray, "/learner_node/metrics", DEEP)
    p.listen(JointState, "/joint_command", DEEP)
    p.listen(PoseStamped, "/learner_node/demo_target", DEEP)
    p.listen(MarkerArray, "/learner_node/markers", DEEP)
    p.listen(MarkerArray, "/sim_node/markers", DEEP)
    yield p
    p.close()


def _messages(probe):
    return [s.message for m in probe.received["/learner_node/metrics"] for s in m.status]


def test_one_minute_session_publishes_metrics_and_demos_and_leaves_a_model(probe, tmp_path):
    out = tmp_path / "session_model"
    proc = _session(out, 1)
    output, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, output[-3000:]
    messages = _messages(probe)
    assert sum(m.startswith("step ") for m in messages) >= 10, messages[-5:]
    assert any(m.startswith("finished: model saved to") for m in messages)
    values = {
        v.key: v.value
        for m in probe.received["/learner_node/metrics"]
        for s in m.status
        for v in s.values
    }
    assert {"step", "pos_mm", "rot_deg", "reward", "lr"} <= set(values)
    assert len(probe.received["/joint_command"]) >= 10  # a demo every 3 s for a minute
    assert (
        len(probe.received["/learner_node/demo_target"])
        == len(probe.received["/learner_node/markers"])
        >= 10
    )
    assert probe.received["/sim_node/markers"], "the simulator shows reached pose and target"
    loaded = model_dir.load(out)
    assert loaded.meta["training"]["interrupted"] is False
    # the budget of a minute was spent (the trainer stops once its time reaches the budget);
    # how far past it the last step and checkpoint ran depends on the machine's load alone
    assert loaded.meta["training"]["seconds"] >= 60.0
    # the network improved over the minute
    first = next(
        float({v.key: v.value for v in s.values}["pos_mm"])
        for m in probe.received["/learner_node/metrics"]
        for s in m.status
        if s.message.startswith("step ")
    )
    assert loaded.meta["training"]["final_network"]["pos_mm_median"] < first / 3


def test_sigint_midway_saves_a_loadable_model(probe, tmp_path):
    out = tmp_path / "interrupted"
    proc = _session(out, 5)
    probe.wait_for(
        lambda: sum(m.startswith("step ") for m in _messages(probe)) >= 3, 120, "training metrics"
    )
    output = interrupt(proc)
    assert proc.returncode in (0, 130), output[-3000:]
    loaded = model_dir.load(out)
    assert loaded.meta["training"]["interrupted"] is True
    assert loaded.meta["training"]["steps"] > 0
    assert json.loads((out / "model.json").read_text())["robot"] == "niryo_one"
