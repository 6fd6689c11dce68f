"""The network drawn: the pure drawing (view/network_drawing.py), its markers on the learner
node's ``~/network`` during a real ``robot-ik-nn launch train`` session, and what drawing costs
the training."""

from __future__ import annotations

import statistics
import threading
import time

import numpy as np
import pytest

from robot_ik_nn.view.network_drawing import draw, infrared

pytestmark = pytest.mark.ros

PERIOD = 3.0  # the learner node's network_period default


def test_infrared_palette_runs_dark_blue_red_yellow_white():
    cold, warm, hot, white = infrared([0.0, 0.35, 0.7, 1.0])
    assert cold[2] > cold[0] and cold[2] > cold[1] and cold.sum() < 0.5  # dark blue
    assert warm[0] > 0.7 and warm[1] < 0.1  # red
    assert hot[0] > 0.9 and hot[1] > 0.7 and hot[2] < 0.1  # yellow
    np.testing.assert_allclose(white, 1.0)
    brightness = infrared(np.linspace(0, 1, 50)).sum(axis=1)
    assert np.all(np.diff(brightness) > 0)  # hotter is always brighter
    np.testing.assert_allclose(infrared([-1.0, 2.0]), infrared([0.0, 1.0]))


def test_drawing_places_every_neuron_and_the_strongest_connections():
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=(16, 5)), rng.normal(size=(16, 16)), rng.normal(size=(8, 16))]
    weights[1][3, 7] = 50.0  # one connection far stronger than the rest
    d = draw(weights, top=40)
    assert d.sizes == [5, 16, 16, 8]
    assert d.positions.shape == (45, 3) and d.colors.shape == (45, 3)
    assert len(np.unique(d.positions.round(9), axis=0)) == 45  # no two neurons on one spot
    xs = [np.unique(d.positions[d.layer == k, 0]) for k in range(4)]
    assert all(len(x) == 1 for x in xs) and np.all(np.diff([x[0] for x in xs]) > 0)
    for k in range(4):  # the hottest neuron of every layer is white
        assert d.heat[d.layer == k].max() == pytest.approx(1.0)
    assert len(d.edges) == 40
    assert np.all(d.layer[d.edges[:, 1]] == d.layer[d.edges[:, 0]] + 1)  # next layer only
    strongest = np.argmax(np.abs(d.edge_weights))
    assert d.edge_weights[strongest] == 50.0
    assert tuple(d.edges[strongest]) == (5 + 7, 5 + 16 + 3)  # layer 1 neuron 7 -> layer 2 neuron 3
    flat = np.sort(np.concatenate([np.abs(w).ravel() for w in weights]))[::-1]
    np.testing.assert_allclose(np.sort(np.abs(d.edge_weights))[::-1], flat[:40])
    # a neuron whose incoming weights grow gets hotter
    weights[0][2] *= 10
    assert draw(weights).heat[5 + 2] > d.heat[5 + 2]
    with pytest.raises(ValueError, match="do not chain"):
        draw([np.zeros((4, 3)), np.zeros((2, 5))])


def _neurons(msg):
    return [m for m in msg.markers if m.ns == "neurons"]


def test_network_is_published_during_a_training_session(tmp_path):
    pytest.importorskip("rclpy")
    from ros_helpers import Probe
    from test_training_session import DEEP, _session, interrupt
    from visualization_msgs.msg import MarkerArray

    from robot_ik_nn import model_dir
    from robot_ik_nn.nodes.network_markers import weight_matrices

    probe = Probe("network_probe")
    try:
        probe.listen(MarkerArray, "/learner_node/network", DEEP)
        out = tmp_path / "session_model"
        proc = _session(out, minutes=5.0)
        try:
            probe.wait_for(
                lambda: len(probe.received["/learner_node/network"]) >= 3,
                180,
                "three drawings of the network",
            )
        finally:
            output = interrupt(proc)
        assert proc.returncode in (0, 130), output[-3000:]
        drawings = probe.received["/learner_node/network"]
    finally:
        probe.close()
    sizes = [w.shape[1] for w in weight_matrices(model_dir.load(out).net)[:1]]
    sizes += [w.shape[0] for w in weight_matrices(model_dir.load(out).net)]
    for msg in drawings:
        neurons = _neurons(msg)
        assert len(neurons) == sum(sizes)  # one marker per neuron
        assert sorted(m.id for m in neurons) == list(range(sum(sizes)))
        assert all(m.type == m.SPHERE and m.header.frame_id == "base_link" for m in neurons)
        lines = [m for m in msg.markers if m.ns == "connections"]
        assert len(lines) == 1 and len(lines[0].points) == 2 * 300
    colours = [
        np.array([(m.color.r, m.color.g, m.color.b) for m in _neurons(msg)]) for msg in drawings
    ]
    changed = [np.abs(b - a).max() for a, b in zip(colours[1:], colours[2:])]
    assert max(changed) > 1e-4, "the colours did not change between two refreshes"


def _draw_once(net) -> float:
    """The CPU seconds one drawing takes this thread: the weights copied, drawn, made markers
    (CPU time: what a loaded machine's other processes cannot inflate)."""
    from robot_ik_nn.nodes.network_markers import to_markers, weight_matrices

    started = time.thread_time()
    to_markers(draw(weight_matrices(net)), "base_link", None)
    return time.thread_time() - started


def _trainer(tmp_path, name: str, steps: int):
    """The learner node's trainer with config/train.yaml's network (128, 128; 4 heads)."""
    from robot_ik_nn.learn.training import TrainConfig, Trainer

    config = TrainConfig(
        robot="niryo_one", steps=steps, minutes=None, out=str(tmp_path / name), hidden=[128, 128]
    )
    return Trainer(config, progress=False)


def _interleaved_cpu(trainer, draw_every: int, window: int = 30, windows: int = 8):
    """This process's CPU seconds per training step in alternate windows of ``window`` steps
    without and with a drawing every ``draw_every`` steps, in one training run (so the run's
    warm-up and the machine's state fall on both alike), and the drawings made."""
    from robot_ik_nn.nodes.network_markers import to_markers, weight_matrices

    drawing_on, stop, drawn = threading.Event(), threading.Event(), [0]

    def drawing():
        last = trainer.step
        while not stop.is_set():
            if not drawing_on.is_set() or trainer.step < last + draw_every:
                time.sleep(0.001)
                continue
            last = trainer.step
            with trainer.lock:  # as NetworkMarkers.publish does
                weights = weight_matrices(trainer.net)
            to_markers(draw(weights), "base_link", None)
            drawn[0] += 1

    runner = threading.Thread(target=trainer.run, daemon=True)
    runner.start()
    painter = threading.Thread(target=drawing, daemon=True)
    painter.start()
    cpu = {False: [], True: []}
    try:
        for k in range(windows):
            on = k % 2 == 1
            drawing_on.set() if on else drawing_on.clear()
            step = trainer.step
            while trainer.step < step + 1:  # a step boundary: whole steps in every window
                time.sleep(0.001)
            step, started = trainer.step, time.process_time()
            while trainer.step < step + window and runner.is_alive():
                time.sleep(0.001)
            cpu[on].append((time.process_time() - started, trainer.step - step))
    finally:
        stop.set()
        trainer.stop.set()
        runner.join()
        painter.join()
    per_step = {on: sum(c for c, _ in w) / sum(n for _, n in w) for on, w in cpu.items()}
    return per_step[False], per_step[True], sum(n for _, n in cpu[True]), drawn[0]


def test_drawing_costs_under_five_percent_of_training(tmp_path):
    """Measured in CPU seconds, two ways: one drawing against the 3 s between drawings (the
    trainer's share of the CPU over those 3 s is at least one core's), and the extra CPU per
    training step with a drawing every few steps against none, in one run, per drawing."""
    trainer = _trainer(tmp_path, "interleaved", 100_000)  # stopped after the windows
    _draw_once(trainer.net)
    once = statistics.median(_draw_once(trainer.net) for _ in range(5))
    share = once / PERIOD
    plain, busy, steps, drawn = _interleaved_cpu(trainer, draw_every=3)
    extra = max(0.0, busy - plain) * steps / drawn  # CPU seconds a drawing cost the process
    lost_at_period = extra / PERIOD
    print(
        f"\nnetwork drawing: {once * 1000:.1f} ms CPU per drawing = {share:.2%} of a {PERIOD:g} s "
        f"period; training {plain * 1000:.1f} ms CPU per step without drawing, "
        f"{busy * 1000:.1f} with {drawn} drawings over {steps} steps: {extra * 1000:.1f} ms per "
        f"drawing, {lost_at_period:.2%} of a {PERIOD:g} s period"
    )
    assert drawn >= 8, "too few drawings to judge"
    assert share <= 0.05
    assert lost_at_period <= 0.05
