"""The page connected to ROS (``view:=true`` on the launch sessions, ``robot-ik-nn view --ros``),
in a real headless browser: a target typed in the page reaches the inference node and the
simulated arm gets there; a training session's page shows the network drawn and the error curve
(the README's picture of it)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("viser", reason="the page needs viser: pip install .[view]")
pytest.importorskip("rclpy", reason="--ros needs rclpy")

from browser_helpers import Browser  # noqa: E402
from ros_helpers import Probe, _die_with_parent  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from test_view import (  # noqa: E402
    DRAWN_ATOL,
    PROBE,
    _free_port,
    _panel_joints,
    page_joints,
    page_target,
    screenshot_folder,
    type_into,
)

pytestmark = [pytest.mark.browser, pytest.mark.ros]

ROOT = Path(__file__).resolve().parents[1]


def _launch(session: str, port: int, *items: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "robot_ik_nn.cli", "launch", session, "view:=true"]
    cmd += [f"view_port:={port}", *items]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        preexec_fn=_die_with_parent,
    )


def _stop(proc) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    return output


def _open(browser, url: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while True:  # the page's process starts beside the nodes: retry until it answers
        browser.open(url)
        try:
            browser.wait_for(
                "window.__viserMutable && Object.keys(window.__viserMutable.nodeRefFromName)"
                ".some(k => k.endsWith('/tool_link'))",
                timeout=10,
            )
            break
        except TimeoutError:
            if time.monotonic() > deadline:
                raise
    assert browser.eval(PROBE) is True


@pytest.fixture(scope="module")
def trained(request):
    import os

    folder = os.environ.get("ROBOT_IK_NN_VIEW_MODEL")
    return Path(folder) if folder else request.getfixturevalue("niryo_model")


def test_a_target_typed_in_the_page_drives_the_simulated_arm(trained):
    from robot_ik_nn.arm.rotations import quaternion_to_matrix, rotation_angle
    from robot_ik_nn.ik.solver import Solver

    arm = Solver.load(trained).arm
    solver = Solver(arm)
    port = _free_port()
    probe = Probe("view_ros_probe")
    probe.listen(JointState, "/joint_states")
    proc = _launch("inference", port, f"model_dir:={trained}")
    try:
        with Browser.start() as browser:
            _open(browser, f"http://127.0.0.1:{port}")
            browser.wait_for(
                "__ikProbe.field('status').value === 'arm connected (/joint_states)'", 120
            )
            old = float(browser.eval("__ikProbe.field('target xyz (m)', 0).value"))
            type_into(browser, "target xyz (m)", 0, f"{old - 0.04:.4f}")
            p, quat = page_target(browser)
            R = quaternion_to_matrix(quat)

            def reached():
                if not probe.received["/joint_states"]:
                    return False
                msg = probe.received["/joint_states"][-1]
                by_name = dict(zip(msg.name, msg.position))
                q = np.array([by_name[n] for n in arm.joint_names])
                P, Rq = solver.forward(q)
                return np.linalg.norm(P[0] - p) <= 1e-3 and float(rotation_angle(Rq[0], R)) <= 0.01

            probe.wait_for(reached, 60, "the simulated arm at the page's target")
            browser.wait_for("__ikProbe.field('status').value === 'solved'", 30)

            def settled():  # the last ten states within 10 micro-radians of each other
                states = [
                    [dict(zip(m.name, m.position))[n] for n in arm.joint_names]
                    for m in probe.received["/joint_states"][-10:]
                ]
                return len(states) == 10 and np.ptp(states, axis=0).max() < 1e-5

            probe.wait_for(settled, 30, "the simulated arm settled")
            time.sleep(0.5)  # the page draws the settled states too
            # the page draws the arm of one of the latest joint states (the simulated arm
            # still creeps by micro-radians, so which one depends on when each side looked)
            drawn = page_joints(browser, arm)
            time.sleep(1.0)  # the probe may be a message or two behind the page
            latest = [dict(zip(m.name, m.position)) for m in probe.received["/joint_states"]]
            gaps = [np.abs(drawn - [m[n] for n in arm.joint_names]).max() for m in latest[-300:]]
            # 4x the page test's bound: here the arm is still settling (the bridge steps it
            # toward the goal each period) while the page and the probe each sample the states
            bound = 4 * DRAWN_ATOL
            assert min(gaps) <= bound, f"page {drawn} vs /joint_states: {min(gaps):.2e} rad"
            panel = _panel_joints(browser, arm.dof)
            assert (
                min(np.abs(panel - [m[n] for n in arm.joint_names]).max() for m in latest[-300:])
                <= 1e-6
            )
    finally:
        output = _stop(proc)
        print(output[-4000:])  # shown when the test fails
        probe.close()
    assert "view ready" in output, output[-3000:]


def test_training_session_page_shows_the_network_and_the_error_curve(tmp_path):
    port = _free_port()
    proc = _launch("train", port, f"model_dir:={tmp_path / 'model'}", "minutes:=5")
    try:
        with Browser.start() as browser:
            _open(browser, f"http://127.0.0.1:{port}")
            neurons = "__ikProbe.points('/arm/base/network/neurons')"
            browser.wait_for(f"{neurons} && {neurons}.count > 100", 180)
            first = browser.eval(f"{neurons}.colors")
            browser.wait_for(  # the next drawing, 3 s later: the weights have changed
                f"{neurons}.colors !== {first!r}", 30
            )
            browser.wait_for("document.querySelectorAll('.uplot .u-over').length > 0", 30)
            time.sleep(4.0)  # a few more points on the curve
            browser.eval(
                "Array.from(document.querySelectorAll('button')).filter(b => b.closest("
                "'.mantine-Notification-root')).forEach(b => b.click()); true"
            )
            time.sleep(1.0)
            (screenshot_folder(tmp_path) / "view_training.png").write_bytes(browser.screenshot())
    finally:
        output = _stop(proc)
    assert "view ready" in output, output[-3000:]


def test_ctrl_c_on_the_ros_page_is_quiet():
    """``view --ros`` on Ctrl-C: rclpy's handler shut the context down under the spinning
    thread, which printed ExternalShutdownException's traceback (found by a walkthrough)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "robot_ik_nn.cli", "view", "--ros", "--robot", "niryo_one",
         "--port", str(_free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        preexec_fn=_die_with_parent,
    )
    try:
        line = ""
        while not line.startswith("view ready"):
            line = proc.stdout.readline()
            assert line, "robot-ik-nn view --ros ended before it was ready"
        time.sleep(1.0)  # the spinning thread at work
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in output, output
