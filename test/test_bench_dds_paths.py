"""bench --dds-paths, small: the inference node streaming two short spline paths at 200 Hz over
DDS, the client playing the arm. What must hold on any machine (no latency here: that is the
bench's JSON): every target the node speaks of, every command reaching its target by PyBullet's
forward kinematics (the path's own joints give the target), no commanded step over the node's
jump_threshold, and the counts adding up."""

import math

import numpy as np
import pytest
from fk_oracle import BulletFK, rotation_angle

from robot_ik_nn.bench.paths import spline_path
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.ros

SEED, PATHS, TARGETS = 1000, 2, 50


@pytest.mark.parametrize("threshold", [0.2, 0.02])
def test_streamed_paths_are_commanded_exactly_and_without_jumps(niryo_model, threshold):
    """0.2 rad: the bench's gate, which these paths (0.05 rad steps) never meet; 0.02 rad: below
    the paths' own steps, so the gate must refuse, and nothing over it may be commanded."""
    from robot_ik_nn.bench.dds_paths import stream_paths

    r = stream_paths(
        niryo_model,
        PATHS,
        TARGETS,
        jump_threshold=threshold,
        keep_joints=True,
        first_seed=SEED,
        relay=threshold == 0.2,  # the bare relay beside the node: once is enough
    )
    d = r["dds_paths"]
    assert d["paths_streamed"] == PATHS and d["sent"] == PATHS * TARGETS, d
    if threshold == 0.2:
        _check_relay(r)
    # a target is commanded, refused or lost (the node's ~/target_pose queue keeps 10: a stall
    # of the loaded machine over 50 ms drops some, 3 of 100 in a run beside a busy loop), never
    # two of them
    assert d["lost"] >= 0 and d["commanded"] > 0, d
    solver = Solver.load(niryo_model)  # its forward only resamples the splines, as the bench's
    arm = solver.arm
    with BulletFK.of(arm) as oracle:
        for row in d["rows"]:
            assert row["lost"] >= 0 and row["commanded"] + row["refused"] <= row["sent"], row
            q_path, _, _ = spline_path(arm, solver.forward, row["seed"], TARGETS)
            commands = row["commands"]
            assert len(commands) == row["commanded"]
            # the first command from the path's start (the node's start answer lies within
            # 0.01 rad of it), then command to command
            if commands:
                assert np.abs(np.subtract(q_path[0], commands[0][1])).max() <= threshold + 0.01
            steps = [np.abs(np.subtract(a[1], b[1])).max() for a, b in zip(commands, commands[1:])]
            assert max(steps, default=0.0) <= threshold + 1e-9, row["max_step_rad"]
            for i, q in commands:  # the node commands only what it calls solved
                p, R = oracle.fk(q)
                p_want, R_want = oracle.fk(q_path[i])
                assert np.linalg.norm(p - p_want) <= 1e-3
                assert rotation_angle(R, R_want) <= 0.01
    if threshold == 0.2:  # refusals for time (a loaded machine) may come; never a jump
        assert d["commanded_steps_over_0.2_rad"] == 0
        assert not any("a jump" in k for k in d["refusals"]), d["refusals"]
    else:  # the gate met the paths' own steps and said so
        assert d["refused"] > 0 and d["paths_with_a_refusal"] >= 1
        assert all("a jump" in k for k in d["refusals"]), d["refusals"]


def test_the_node_carries_a_streams_last_step_across_a_singular_pose(niryo_model):
    """Spline path 1079's own joints cross a singular pose at target 74: a node answering from
    its last command alone turns back onto the branch that ends at a limit, and its gate refuses
    the jump there; carrying its last step on (IKSettings.carry_step) it goes across with the path:
    nothing refused as a jump, every command on its target by PyBullet. (Mutation tried: the
    node without previous=: refused "a jump" from target 74 on, the test failed.)"""
    from robot_ik_nn.bench.dds_paths import stream_paths

    r = stream_paths(
        niryo_model, 1, 120, jump_threshold=0.2, keep_joints=True, first_seed=1079, relay=False
    )
    d = r["dds_paths"]
    assert not any("a jump" in k for k in d["refusals"]), d["refusals"]
    row = d["rows"][0]
    # some may come late on a loaded machine (refused for time, with that reason), none jump;
    # what counts is that the commands go on across the singular pose at target 74
    at = [i for i, _ in row["commands"]]
    assert at and min(at) < 70 and max(at) > 100 and len(at) >= 60, row
    solver = Solver.load(niryo_model)
    q_path, _, _ = spline_path(solver.arm, solver.forward, 1079, 120)
    with BulletFK.of(solver.arm) as oracle:
        for i, q in row["commands"]:
            p, R = oracle.fk(q)
            p_want, R_want = oracle.fk(q_path[i])
            assert np.linalg.norm(p - p_want) <= 1e-3
            assert rotation_angle(R, R_want) <= 0.01


def _check_relay(r):
    """The bare relay's figures of a run: there, measured on the node's own paths (the same
    seeds, the same targets), every target it was sent answered with its stamp, and the
    done-when verdict computed from the two p99s of this run."""
    from robot_ik_nn.bench.dds_paths_figures import DONE_WHEN_MS, format_table

    d = r["dds_paths"]
    rel, w = d["relay"], d["done_when"]
    assert [row["seed"] for row in rel["rows"]] == [row["seed"] for row in d["rows"]]
    assert rel["sent"] == d["sent"] == PATHS * TARGETS, rel
    # a relay does no work a stall could pile up behind: each target sent, answered
    assert rel["commanded"] == rel["sent"] and rel["lost"] == 0, rel
    for row in rel["rows"]:  # and it said so on its ~/status, once a target
        assert row["statuses_heard"] == row["commanded"] == row["sent"], row
        assert "latency_s" not in row
    for key in ("ms_median_commanded", "ms_p99_commanded", "ms_max_commanded"):
        assert math.isfinite(rel[key]) and rel[key] > 0, rel
    assert rel["ms_median_commanded"] <= rel["ms_p99_commanded"] <= rel["ms_max_commanded"]
    assert rel["ms_p99_every_target_sent"] == rel["ms_p99_commanded"]  # none lost
    assert w["node_ms_p99"] == d["ms_p99_commanded"] and w["relay_ms_p99"] == rel[
        "ms_p99_commanded"
    ]
    assert d["node_minus_relay_ms_p99_commanded"] == w["node_ms_p99"] - w["relay_ms_p99"]
    assert w["limit_ms"] == w["relay_ms_p99"] + DONE_WHEN_MS
    assert w["latency_met"] == (w["node_ms_p99"] <= w["limit_ms"])
    assert w["no_jump_commanded"] == (d["commanded_steps_over_0.2_rad"] == 0)
    assert w["met"] == (w["latency_met"] and w["no_jump_commanded"] and w["at_200_hz"])
    table = format_table(r)
    assert "| bare relay | " in table and ("**met**" in table) == w["met"]


def test_a_relay_sleeping_5_ms_a_target_shows_in_its_figures(niryo_model):
    """The relay's figures are the relay's: with ``delay_ms:=5`` (a sleep in each target's
    callback) every target it answers took at least those 5 ms: a lower bound, not a timing
    threshold."""
    from robot_ik_nn.bench.dds_paths import stream_paths

    r = stream_paths(niryo_model, 1, TARGETS, first_seed=SEED, relay_params=("delay_ms:=5.0",))
    d = r["dds_paths"]
    rel = d["relay"]
    assert rel["params"] == ["delay_ms:=5.0"] and rel["sent"] == TARGETS
    assert rel["commanded"] > 0, rel
    assert rel["ms_median_commanded"] >= 5.0, rel  # a lower bound: the sleep itself
    assert d["commanded"] > 0 and d["sent"] == TARGETS, d  # the node streamed the same path


def test_a_relay_that_never_answers_fails_the_run(niryo_model):
    """A relay that subscribes and publishes nothing (``silent:=true``): the run stops with
    the reason, never reports figures of no answers."""
    from robot_ik_nn.bench.dds_paths import stream_paths

    with pytest.raises(RuntimeError, match="bare relay subscribed .* answered none"):
        stream_paths(niryo_model, 1, TARGETS, first_seed=SEED, relay_params=("silent:=true",))


def test_the_verdict_is_the_same_runs_p99s():
    """relay_figures on made records: the relay's row from its heard stamps, and the done-when
    verdict from the node's p99 against the relay's of the same figures."""
    from robot_ik_nn.bench.dds_paths_figures import relay_figures, relay_row

    sent = [(1.0 + i * 0.005, 1000 + i) for i in range(100)]
    heard = [(t + 0.001, [0.0], stamp) for t, stamp in sent[:99]]  # the last one lost
    said = [(t + 0.001, "relayed") for t, _ in sent[:99]]
    row = relay_row(7, 100, (sent, 2.0), heard, said)
    assert row["commanded"] == 99 and row["lost"] == 1 and row["statuses_heard"] == 99
    node = {
        "rate_hz": 200.0,
        "ms_median_commanded": 1.2,
        "ms_p99_commanded": 1.6,
        "commanded_steps_over_0.2_rad": 0,
        "rows": [{"seed": 7, "streamed": True, "ms_p99_commanded": 1.6}],
    }
    assert row["ms_p99_commanded"] == pytest.approx(1.0)  # the path's own
    f = relay_figures(node, [row])
    assert f["relay"]["lost"] == 1 and f["relay"]["ms_p99_every_target_sent"] == math.inf
    assert f["relay"]["ms_p99_commanded"] == pytest.approx(1.0)
    assert f["done_when"]["latency_met"] is False and f["done_when"]["met"] is False
    assert f["node_minus_relay_ms_p99_commanded"] == pytest.approx(0.6)
    pp = f["per_path"]  # path by path: the one path, 0.6 ms over the relay's
    assert pp["paths"] == 1 and pp["paths_node_p99_over_relay_p99_plus_limit"] == 1
    assert pp["node_minus_relay_ms_p99_commanded"][0][0] == 7
    for p99, jumps, met in ((1.4, 0, True), (1.4, 1, False)):
        row = relay_row(7, 100, (sent, 2.0), heard, said)
        f = relay_figures(
            {**node, "ms_p99_commanded": p99, "commanded_steps_over_0.2_rad": jumps}, [row]
        )
        assert f["done_when"]["met"] is met
