"""robot-ik-nn bench: the figures it reports are measured, consistent and complete."""

import json
import subprocess
import sys

from robot_ik_nn import bench, model_dir


def test_bench_measures_everything_it_claims(niryo_model):
    loaded = model_dir.load(niryo_model)
    result = bench.run(
        loaded, targets=400, serving_targets=60, reference_targets=40, batches=(1, 400)
    )
    assert result["robot"] == "niryo_one" and result["machine"]["torch_threads"] >= 1
    assert result["network_alone"]["answers_per_s"] > 1000
    rows = {r["batch"]: r for r in result["batched_solver"]}
    assert set(rows) == {1, 400}
    assert (
        rows[400]["solve_rate"] >= 0.97
        and rows[400]["solutions_per_s"] > rows[1]["solutions_per_s"]
    )
    assert result["serving"]["tracking"]["solve_rate"] == 1.0
    assert (
        0 < result["serving"]["tracking"]["ms_median"] <= result["serving"]["tracking"]["ms_p99"]
    )
    # PyBullet's own IK is the weak reference the anchors describe: far from always solved
    assert 0 <= result["pybullet_ik"]["solve_rate"] < rows[400]["solve_rate"]
    assert "batched solver" in bench.format_table(result)


def test_bench_cli_writes_json(niryo_model, tmp_path):
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
            "--serving-targets",
            "20",
            "--reference-targets",
            "0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert "pybullet_ik" not in data and data["batched_solver"][-1]["batch"] == 200
    assert "solutions/s" in run.stdout
