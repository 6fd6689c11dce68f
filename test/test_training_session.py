"""`robot-ik-nn launch train`: the training session in one process, watched over DDS."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_helpers import Probe, _die_with_parent
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from robot_ik_nn import model_dir

pytestmark = pytest.mark.ros

DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
ROOT = Path(__file__).resolve().parents[1]
STEPS = 150  # the budget of the whole session below; a row on ~/metrics every LOG_EVERY steps
LOG_EVERY = 10


def _session(out, **learner):
    """``launch train`` with the session's own params file, the learner's entries replaced by
    ``learner`` (written beside ``out``)."""
    params = yaml.safe_load((ROOT / "config" / "train.yaml").read_text())
    params["learner_node"]["ros__parameters"].update(learner)
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(params))
    cmd = [
        sys.executable,
        "-m",
        "robot_ik_nn.cli",
        "launch",
        "train",
        f"model_dir:={out}",
        f"params_file:={path}",
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


def test_a_whole_session_publishes_metrics_and_demos_and_leaves_a_model(probe, tmp_path):
    out = tmp_path / "session_model"
    # a budget of steps (the same on any machine) instead of a minute; demos every 0.2 s
    proc = _session(out, minutes=0.0, steps=STEPS, log_every=LOG_EVERY, demo_period=0.2)
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
    assert len(probe.received["/joint_command"]) >= 10  # a demo every 0.2 s while it trains
    assert (
        len(probe.received["/learner_node/demo_target"])
        == len(probe.received["/learner_node/markers"])
        >= 10
    )
    assert probe.received["/sim_node/markers"], "the simulator shows reached pose and target"
    loaded = model_dir.load(out)
    assert loaded.meta["training"]["interrupted"] is False
    # the budget was spent, to the step (the trainer stops once it reaches the budget)
    assert loaded.meta["training"]["steps"] == loaded.meta["training"]["budget_steps"] == STEPS
    # the network improved over the session, from the first row on ~/metrics
    first = next(
        float({v.key: v.value for v in s.values}["pos_mm"])
        for m in probe.received["/learner_node/metrics"]
        for s in m.status
        if s.message.startswith("step ")
    )
    assert loaded.meta["training"]["final_network"]["pos_mm_median"] < first / 3


def test_sigint_midway_saves_a_loadable_model(probe, tmp_path):
    out = tmp_path / "interrupted"
    proc = _session(out, minutes=5.0, log_every=LOG_EVERY)  # Ctrl-C after 3 rows: 30 steps
    probe.wait_for(
        lambda: sum(m.startswith("step ") for m in _messages(probe)) >= 3, 120, "training metrics"
    )
    output = interrupt(proc)
    assert proc.returncode in (0, 130), output[-3000:]
    loaded = model_dir.load(out)
    assert loaded.meta["training"]["interrupted"] is True
    assert loaded.meta["training"]["steps"] > 0
    assert json.loads((out / "model.json").read_text())["robot"] == "niryo_one"
