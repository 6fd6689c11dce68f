"""``robot-ik-nn train --view``: watching it learn in the browser without ROS.

The command runs as a user runs it and its page is opened in headless chromium (the helpers of
test_view.py): the network drawn with one point per neuron and redrawn as the weights change,
the error curve growing, the arm's demo attempts (each drawn arm's tool as far from the demo
target as the panel says), the final word once the budget is spent, the page up until Ctrl-C
and the model folder written. Without a browser: the feed itself on a trainer in this process.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("viser", reason="the page needs viser: pip install .[view]")
pytest.importorskip("yourdfpy", reason="the page needs yourdfpy: pip install .[view]")

from browser_helpers import Browser  # noqa: E402
from test_view import DRAWN_ATOL, PROBE, _free_port, _panel_joints, page_joints  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NEURONS = "__ikProbe.points('/arm/base/network/neurons')"
# the error curve's points: viser registers every uPlot chart under its testpoints
CURVE = (
    "Object.values((window.__viserTestpoints || {}).uplots || {})"
    ".map(t => t.chart.data[0].length).reduce((a, b) => Math.max(a, b), 0)"
)
BUDGET_S = 30  # the training's budget: long enough for the page to see several refreshes


class Command:
    """``robot-ik-nn ARGS`` in its own process, its output collected line by line."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "robot_ik_nn.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env=_env(),
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for_line(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.1)
        pytest.fail(f"no line {prefix!r} from robot-ik-nn:\n{self.output[-3000:]}")

    def interrupt(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"robot-ik-nn did not stop on SIGINT:\n{self.output[-3000:]}")
        self.reader.join(10)
        return self.proc.returncode


def _env() -> dict:
    import os

    return dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")


def _attempt(browser, arm):
    """The demo attempt the page shows: its status line, the joints drawn, the panel's joints,
    the demo target's position and the error the panel gives (mm); read twice over, until the
    status did not change meanwhile (a new attempt can land mid-read)."""
    for _ in range(20):
        status = browser.eval("__ikProbe.field('status').value")
        drawn = page_joints(browser, arm)
        panel = _panel_joints(browser, arm.dof)
        target = browser.eval(
            "window.__viserMutable.nodeRefFromName['/arm/base/demo_target'].position.toArray()"
        )
        errors = browser.eval("__ikProbe.field('error').value")
        if browser.eval("__ikProbe.field('status').value") == status:
            return status, drawn, panel, np.array(target), errors
    pytest.fail("the demo attempts changed faster than the page could be read")


def test_train_view_shows_the_network_the_curve_and_the_demo_attempts(tmp_path):
    from robot_ik_nn import model_dir
    from robot_ik_nn.arm.model import ArmModel
    from robot_ik_nn.ik.solver import Solver
    from robot_ik_nn.learn.network import weight_matrices

    arm = ArmModel.load("niryo_one")
    solver = Solver(arm)
    out = tmp_path / "model"
    port = _free_port()
    with Browser.start() as browser:  # chromium starts while the command does (or: skip)
        command = Command(
            "--threads", "1", "train", "--view", "--view-port", str(port),
            "--robot", "niryo_one", "--mode", "position", "--hidden", "32", "32",
            "--minutes", f"{BUDGET_S / 60:.4f}", "--out", str(out), "--quiet",
        )  # fmt: skip
        try:
            ready = command.wait_for_line("view ready", 180)
            assert ready.strip() == f"view ready: http://127.0.0.1:{port}"
            browser.open(f"http://127.0.0.1:{port}")
            browser.wait_for(
                "window.__viserMutable && Object.keys(window.__viserMutable.nodeRefFromName)"
                ".some(k => k.endsWith('/tool_link'))",
                timeout=120,
            )
            assert browser.eval(PROBE) is True

            # the network: one point per neuron, redrawn with new colours as it learns
            browser.wait_for(f"{NEURONS} && {NEURONS}.count > 0", 30)
            neurons = browser.eval(f"{NEURONS}.count")
            first = browser.eval(f"{NEURONS}.colors")
            browser.wait_for(f"{NEURONS}.colors !== {first!r}", 20)
            assert browser.eval(f"{NEURONS}.count") == neurons

            # the demo attempts: the arm moves, and its tool is where the panel says it is
            attempts = [_attempt(browser, arm)]
            while len(attempts) < 2:
                browser.wait_for(
                    f"__ikProbe.field('status').value !== {attempts[-1][0]!r}", timeout=20
                )
                attempts.append(_attempt(browser, arm))
            for status, drawn, panel, target, errors in attempts:
                assert re.fullmatch(r"demo attempt \d+ \(step \d+\)", status), status
                np.testing.assert_allclose(drawn, panel, atol=DRAWN_ATOL)
                P, _ = solver.forward(drawn)
                shown = float(re.fullmatch(r"([\d.]+) mm", errors).group(1))
                assert abs(np.linalg.norm(P[0] - target) * 1000 - shown) < 0.5, (errors, P, target)
            (_, q1, _, t1, _), (_, q2, _, t2, _) = attempts
            assert np.abs(q1 - q2).max() > 1e-3, "the arm did not move between two attempts"
            assert np.linalg.norm(t1 - t2) > 1e-3, "the demo target did not move"

            # the error curve: a point every 50 steps
            browser.wait_for(f"{CURVE} >= 2", 30)

            # the budget spent: the final word, the page still up until Ctrl-C
            browser.wait_for(
                "__ikProbe.field('training').value.startsWith('finished: model saved to')",
                BUDGET_S + 60,
            )
            assert str(out) in browser.eval("__ikProbe.field('training').value")
            command.wait_for_line("view: training finished", 30)
            points = browser.eval(CURVE)
            time.sleep(1.0)
            assert command.proc.poll() is None, "the page closed before Ctrl-C"
            assert browser.eval(CURVE) == points >= 2
        finally:
            code = command.interrupt()
    assert code == 0, command.output[-3000:]
    assert f"model saved to {out}" in command.output
    sizes = [w.shape[0] for w in weight_matrices(model_dir.load(out).net)]
    assert neurons == 3 + sum(sizes) == 3 + 32 + 32 + 2 * arm.dof * 4  # position mode, 4 heads


def test_feed_draws_demos_and_curves_a_trainer_in_this_process(tmp_path):
    """The feed without a browser: every drawing and attempt counted, the drawn arm the
    network's answer for the demo target, metric rows on the curve and to the callback that
    was there before, the final word."""
    import torch

    from robot_ik_nn.learn.training import TrainConfig, Trainer
    from robot_ik_nn.view.learning import LearningView
    from robot_ik_nn.view.training import TrainingFeed, build_page

    rows = []
    trainer = Trainer(
        TrainConfig(
            robot="niryo_one", mode="position", steps=150, minutes=None,
            hidden=[16, 16], out=str(tmp_path / "feed"),
        ),
        progress=False,
        on_metrics=rows.append,
    )  # fmt: skip
    page = build_page(trainer.arm, port=_free_port())
    try:
        view = LearningView(page, "the network")
        assert not page.handle.visible and not page.mode.visible
        feed = TrainingFeed(view, trainer, period=0.1)
        feed.demo()  # the untrained network's attempt, checked against the network itself
        with torch.no_grad():
            target = torch.tensor(np.asarray(view.demo.position)[None], dtype=torch.float32)
            expected = trainer.net(target)
        np.testing.assert_allclose(page.q, expected[0].numpy(), atol=1e-6)
        assert page.status.value == "demo attempt 1 (step 0)" and view.attempts == 1
        assert re.fullmatch(r"[\d.]+ mm", page.errors.value)  # position mode: no degrees

        feed.start()
        time.sleep(0.5)
        path = trainer.run()
        feed.finish(path)
        feed.close()
        assert feed.errors == []
        assert feed.drawings >= 2 and view.network.drawings == feed.drawings
        assert feed.attempts >= 2 and view.attempts == feed.attempts
        assert [r["step"] for r in rows] == [50, 100, 150]  # the callback already there
        assert view.curve.steps == [50.0, 100.0, 150.0] and feed.rows == 3
        assert view.curve.status.value == f"finished: model saved to {path}"
        assert trainer.on_metrics == rows.append  # given back on close
    finally:
        page.close()


def test_feed_in_pose_mode_and_tracking(tmp_path):
    """A pose network gets the target's orientation, a tracking one the arm's joints."""
    import torch

    from robot_ik_nn.learn.training import TrainConfig, Trainer
    from robot_ik_nn.view.learning import LearningView
    from robot_ik_nn.view.page import wxyz_to_xyzw
    from robot_ik_nn.view.training import TrainingFeed, build_page

    trainer = Trainer(
        TrainConfig(
            robot="niryo_one", mode="pose", steps=1, minutes=None, hidden=[8],
            tracking=True, out=str(tmp_path / "pose"),
        ),
        progress=False,
    )  # fmt: skip
    page = build_page(trainer.arm, port=_free_port())
    try:
        from robot_ik_nn.arm.rotations import quaternion_to_matrix

        feed = TrainingFeed(LearningView(page), trainer)
        for _ in range(2):
            before = torch.tensor(page.q, dtype=torch.float32)[None]
            feed.demo()
            demo = feed.view.demo
            rot = torch.tensor(quaternion_to_matrix(wxyz_to_xyzw(demo.wxyz)), dtype=torch.float32)
            with torch.no_grad():
                target = torch.tensor(np.asarray(demo.position)[None], dtype=torch.float32)
                expected = trainer.net(target, rot[None], before)
            np.testing.assert_allclose(page.q, expected[0].numpy(), atol=1e-5)
            assert re.fullmatch(r"[\d.]+ mm, [\d.]+ deg", page.errors.value)
        assert feed.errors == [] and feed.attempts == 2
    finally:
        page.close()


def test_the_feed_imports_no_torch_until_it_is_built():
    """``robot-ik-nn view`` serves without torch; view/training.py keeps it that way."""
    code = (
        "import sys; import robot_ik_nn.view.training, robot_ik_nn.view.learning; "
        "print(sorted(m for m in ('rclpy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_train_view_without_viser_names_the_extra(tmp_path):
    """Refused before any training, with the install command."""
    code = (
        "import sys; sys.modules['viser'] = None; from robot_ik_nn.cli import main; "
        f"sys.exit(main(['train', '--view', '--steps', '1', '--out', {str(tmp_path / 'm')!r}]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "pip install .[view]" in out.stderr
    assert not (tmp_path / "m").exists()
