"""robot-ik-nn bench: every figure it reports is measured, judged by our own kinematics, and
complete; peers run on the same targets (or are skipped with a note saying why)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from robot_ik_nn import bench
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.bench.measure import judge, tracking_path
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.slow


def test_bench_measures_everything_it_claims(niryo_model):
    result = bench.run(
        niryo_model,
        targets=300,
        single_targets=120,
        tracking_targets=60,
        batches=(10, 300),
        backends=("compiled", "numpy"),
        peers=True,
        budget_ms=50.0,  # never the limit for a solver that works: no timing in the test
    )
    assert (
        result["robot"] == "niryo_one"
        and result["heads"] == 2
        and result["machine"]["threads"] >= 1
    )
    assert set(result["network"]) == {"compiled", "numpy"}
    assert all(r["answers_per_s"] > 0 for r in result["network"].values())  # no speed claim
    single = result["single"]
    assert set(single) == {"compiled", "numpy", "without network"}
    for row in single.values():
        assert row["targets"] == 120 and row["solve_rate"] >= 0.98
        assert row["us_median"] > 0 and np.isfinite(row["us_p99"]) and row["solved_per_s"] > 0
    assert result["network_gain"]["compiled"] == pytest.approx(
        single["compiled"]["solved_per_s"] / single["without network"]["solved_per_s"]
    )
    assert (
        result["tracking"]["solve_rate"] == 1.0 and result["tracking"]["max_joint_step_rad"] < 0.2
    )
    assert [r["batch"] for r in result["batched"]] == [10, 300]
    assert all(r["solve_rate"] >= 0.98 for r in result["batched"])
    for name in ("trac_ik", "rtb_ik_lm", "pybullet_ik"):  # installed by make test ([peers])
        peer = result["peers"][name]
        assert isinstance(peer, dict), peer
        assert peer["targets"] == 120 and peer["solved_per_s"] > 0
        assert result["ratios"][name] == pytest.approx(
            single["compiled"]["solved_per_s"] / peer["solved_per_s"]
        )
    # PyBullet's own IK is the weak reference the anchors describe; the C++ LM solves most
    assert result["peers"]["pybullet_ik"]["solve_rate"] < single["compiled"]["solve_rate"]
    assert result["peers"]["rtb_ik_lm"]["solve_rate"] > 0.9
    assert result["peers"]["trac_ik"]["solve_rate"] > 0.9
    text = bench.format_table(result)
    assert "one target at a time" in text and "TRAC-IK" in text and "batch 300" in text
    assert "| robot_ik_nn, compiled network + compiled LM |" in bench.markdown(result)


def test_the_judge_trusts_no_solver():
    arm = ArmModel.load("niryo_one")
    fk = Solver(arm).forward
    q = arm.mid_range[None].repeat(4, 0)
    P, R = fk(q)
    wrong = q.copy()
    wrong[1, 0] += 0.01  # about 2 mm off at the tool
    wrong[2, 1] = arm.upper[1] + 0.1  # reaches somewhere, but outside the limits
    wrong[3] = np.nan  # no answer
    solved, pe, _ = judge(fk, arm, wrong, P, R)
    assert solved.tolist() == [True, False, False, False] and pe[0] == 0 and pe[1] > 1e-3


def test_the_tracking_path_moves_in_small_steps():
    arm = ArmModel.load("niryo_one")
    fk = Solver(arm).forward
    q, P, _ = tracking_path(arm, fk, 300, step_m=0.005)
    steps = np.linalg.norm(np.diff(P, axis=0), axis=1)
    assert steps.max() < 0.0075 and np.median(steps) > 0.004
    assert np.all(arm.within_limits(q))


def test_bench_cli_writes_json_and_markdown(niryo_model, tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "robot_ik_nn.cli",
            "bench",
            str(niryo_model),
            "--targets",
            "200",
            "--tracking-targets",
            "20",
            "--backends",
            "compiled",
            "--no-torch",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert "peers" not in data
    assert [row["batch"] for row in data["batched"]] == [100, 200]  # 1,000 and 10,000: once
    assert "solved/s" in run.stdout and "measuring:" in run.stderr
    assert out.with_suffix(".md").read_text().startswith("### niryo_one")


def test_bench_cuda_splits_the_batched_solver_and_judges_it(niryo_model):
    """bench --cuda's measurement, run here on the CPU (CI has no GPU); the CLI refuses plainly
    where torch sees no CUDA device."""
    import torch

    from robot_ik_nn.bench import cuda

    result = cuda.measure(niryo_model, sizes=(150, 300), device="cpu", calls=1)
    rows = {(row["part"], row["batch"]): row for row in result["rows"]}
    assert set(rows) == {(part, n) for part in cuda.PARTS for n in (150, 300)}
    full, alone = rows["full", 300], rows["network alone", 300]
    assert full["solve_rate"] >= 0.99 and alone["solve_rate"] < full["solve_rate"]
    assert rows["first pass (no restarts)", 300]["solve_rate"] <= full["solve_rate"]
    assert all(r["seconds"] > 0 and len(r["seconds_all"]) == 1 for r in result["rows"])
    assert "| full | 300 |" in cuda.markdown(result)
    if not torch.cuda.is_available():
        run = subprocess.run(
            [sys.executable, "-m", "robot_ik_nn.cli", "bench", str(niryo_model), "--cuda"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 2 and "no CUDA device" in run.stderr


def test_bench_tracking_judges_streamed_and_whole_paths(niryo_model, tmp_path):
    out = tmp_path / "tracking.json"
    run = subprocess.run(
        [sys.executable, "-m", "robot_ik_nn.cli", "bench", str(niryo_model), "--tracking", "2"]
        + ["--tracking-targets", "60", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    r = json.loads(out.read_text())
    t = r["tracking"]
    assert r["network"] == "none" and t["paths"] == len(t["rows"]) == 2
    assert t["path_max_joint_step_rad"] <= 0.05 + 1e-9  # a jump-free answer exists
    for row in t["rows"]:
        assert row["targets"] == 60
        assert row["streamed"]["solved"] == row["whole"]["solved"] == 60
        assert row["whole"]["max_joint_step_rad"] <= 0.2  # the path's own joints are a way
    for key in ("streamed", "whole"):
        over = sum(row[key]["max_joint_step_rad"] > 0.2 for row in t["rows"])
        assert t[key]["paths_with_a_step_over_0.2_rad"] == over
        assert t[key]["unsolved_targets"] == 0
    per_1000 = [row["whole"]["seconds_per_1000_targets"] for row in t["rows"]]
    assert t["whole"]["seconds_per_1000_targets_p99"] == pytest.approx(np.percentile(per_1000, 99))
    cpu = [row["whole"]["cpu_seconds"] for row in t["rows"]]
    assert t["whole"]["cpu_seconds_max"] == max(cpu) and r["load_average"]["cpus"] >= 1
    assert "| whole (`solve_path`) | 0 (0.0 %)" in out.with_suffix(".md").read_text()
    assert "the whole paths' CPU time" in out.with_suffix(".md").read_text()


def test_bench_collisions_judges_by_pybullet_and_the_node_over_dds(niryo_model, tmp_path):
    """bench --collisions (small counts) with --dds: the figures it claims are there and hold
    what they say; the answers it calls solved are free by PyBullet, which it asked itself."""
    from robot_ik_nn.bench import collisions
    from robot_ik_nn.bench.dds import dds_latency

    r = collisions.measure(niryo_model, targets=60, compare_n=80)
    m, a = r["model_vs_pybullet"], r["answers"]
    assert m["configurations"] == 80 and m["false_negatives"] == 0
    assert m["pybullet_in_collision"] > 0  # the comparison met contacts
    assert a["targets_from_pybullet_free_joints"] == 60 and a["solved"] >= 59
    assert a["solved_in_collision_by_pybullet"] == 0 and a["reported_solved_but_not_by_fk"] == 0
    assert set(r["pybullet_data_arms"]) >= {"franka_panda/panda.urdf", "xarm/xarm6_robot.urdf"}
    assert all(v["false_negatives"] == 0 for v in r["pybullet_data_arms"].values())
    assert r["cost"]["targets"] == 60 and r["cost"]["us_median_with"] > 0
    d = dds_latency(niryo_model, targets=40, rate_hz=100.0)
    assert d["sent"] == 40 and d["answered"] >= 39, d
    every = d["ms_p99_of_every_target_sent"]  # a target never commanded counts as slowest
    assert every == d["ms_p99"] if d["answered"] == 40 else every == float("inf")
    assert "commanded" in collisions.format_table({**r, "dds": d})


def test_bench_calibration_judges_on_the_true_arm(niryo_model, tmp_path):
    from robot_ik_nn.bench import calibration

    # the rigid true arm alone (sag_deg=0): the sagging rows had no assert here, and calibrating
    # a sagging arm is judged on the true arm by test_calibration_sag.py
    r = calibration.measure(niryo_model, targets=100, peer_targets=0, sag_deg=0)
    assert not any(name.startswith("sagging") for name in r["rows"])
    rows = r["rows"]
    assert "refused" in rows["calibrated, 10 poses"]  # fewer poses than it needs, said so
    assert rows["nominal"]["solved_on_the_true_arm"] < 0.2
    for n in (20, 50, 100, 200):
        assert rows[f"calibrated, {n} poses"]["solved_on_the_true_arm"] >= 0.98
    assert rows["calibrated, 100 poses, 5 % outliers"]["mm_median"] < 0.3
    calibration.picture(r, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
