"""The web bench (robot-ik-nn bench --web: robot_ik_nn/bench/web.py and web/bench/): on a few
targets with a tiny time budget, the harness's JSON has its structure, and every answer the
harness (or our solver itself) calls solved is solved by the tests' own PyBullet forward
kinematics (fk_oracle.py); the bench's own PyBullet counts agree with it. No timing asserts."""

import json
import shutil

import numpy as np
import pytest
from fk_oracle import BulletFK, quat_to_matrix, rotation_angle

from robot_ik_nn.bench import web
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.slow
TARGETS, BUDGET_MS, WARMUP = 50, 1.0, 5
SOLVERS = ("robot_ik_nn", "closed_chain_ik", "three_ccdik")


def _need_web():
    if shutil.which("node") is None:
        pytest.skip("node is not installed (Debian: apt-get install nodejs npm)")
    try:
        web.web_folder()
    except web.WebBenchError as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def inputs(served_model, tmp_path_factory):
    """The model file and targets from PyBullet-free joints, written as the bench writes them."""
    _need_web()
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    solver = Solver.load(served_model)
    folder = tmp_path_factory.mktemp("web_bench")
    with ArmSim(solver.arm) as sim:
        q, P, Q, R, agree = web.make_targets(solver, sim, TARGETS, seed=7)
    web.write_inputs(folder, solver, P, Q)
    return solver, folder, q, P, Q, agree


def _oracle_solved(oracle, arm, answers, P, Q, pose: bool) -> np.ndarray:
    """Solved by the tests' own PyBullet FK: 1 mm, 0.01 rad (pose), inside the limits."""
    out = np.zeros(len(answers), dtype=bool)
    for i, a in enumerate(answers):
        if a is None:
            continue
        a = np.asarray(a, dtype=float)
        inside = np.all((a >= arm.lower - 1e-9) & (a <= arm.upper + 1e-9) | arm.continuous)
        p, R = oracle.fk(a)
        ok = np.linalg.norm(p - P[i]) <= 1e-3
        if pose:
            ok = ok and rotation_angle(R, quat_to_matrix(Q[i])) <= 0.01
        out[i] = inside and ok
    return out


def test_targets_are_reachable_and_free(inputs):
    solver, folder, q, P, Q, agree = inputs
    assert agree < 1e-6  # PyBullet's tool and the package's agree on the made joints
    with BulletFK.of(solver.arm) as oracle:
        p, R = oracle.fk(q[3])
    assert np.linalg.norm(p - P[3]) < 1e-9
    assert rotation_angle(R, quat_to_matrix(Q[3])) < 1e-6
    targets = json.loads((folder / "targets.json").read_text())
    assert len(targets["positions"]) == len(targets["quaternions"]) == TARGETS


def test_node_harness_answers_pass_pybullet(inputs):
    solver, folder, _, P, Q, _ = inputs
    harness = web.run_node(folder, BUDGET_MS, WARMUP)
    assert harness["targets"] == TARGETS and harness["budget_ms"] == BUDGET_MS
    assert harness["runtime"]["kind"] == "node"
    assert set(harness["solvers"]) == set(SOLVERS)
    arm, counted = solver.arm, {}
    with BulletFK.of(arm) as oracle:
        for name, row in harness["solvers"].items():
            assert "skipped" not in row, row
            assert row["verdict"] == ("position" if name == "three_ccdik" else "pose")
            assert row["seconds"] > 0 and len(row["answers"]) == TARGETS
            pose = row["verdict"] == "pose"
            truth = _oracle_solved(oracle, arm, row["answers"], P, Q, pose)
            said = np.asarray(row["judged_solved"], dtype=bool)
            assert row["solved"] == int(said.sum())
            assert not np.any(said & ~truth), f"{name}: harness says solved, PyBullet does not"
            if row["claimed"] is not None:  # our solver's own 'solved'
                claimed = np.asarray(row["claimed"], dtype=bool)
                assert claimed.sum() > 0
                assert not np.any(claimed & ~truth), f"{name}: claimed solved, PyBullet disagrees"
            counted[name] = int(truth.sum())
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    with ArmSim(arm) as sim:  # the bench's own PyBullet judge counts what the oracle counts
        rows = web.judged(
            harness, arm, web.pybullet_fk(sim), P, np.array([quat_to_matrix(x) for x in Q]), True
        )
    assert {name: row["solved"] for name, row in rows.items()} == counted
    assert all(row["harness_solved_not_by_pybullet"] == 0 for row in rows.values())


def test_measure_writes_every_figure(served_model, tmp_path):
    """The whole bench in Node alone (chromium: test_web_bench_page), on a handful of targets."""
    _need_web()
    result = web.measure(
        served_model, targets=20, budget_ms=BUDGET_MS, warmup=2, runtimes=["node"]
    )
    for key in ("targets", "budget_ms", "native", "node", "date", "commit", "machine", "packages"):
        assert key in result, key
    assert result["native"]["targets"] == 20 and result["native"]["solved_per_s"] > 0
    rows = result["node"]["solvers"]
    assert set(rows) == set(SOLVERS)
    for row in rows.values():
        assert "answers" not in row and 0.0 <= row["solve_rate"] <= 1.0
        assert row["harness_solved_not_by_pybullet"] == 0
    ratios = result["node"]["ratios"]
    assert ratios["web_over_native"] == pytest.approx(
        rows["robot_ik_nn"]["solved_per_s"] / result["native"]["solved_per_s"]
    )
    # the second timed pass on the same targets: the same answers (nothing carried from one
    # solve to the next), so its solved/s is given, and only for this package's solver
    again = rows["robot_ik_nn"]["second_pass"]
    assert again["same_answers"] == 20 and again["seconds"] > 0
    assert again["solved_per_s"] == pytest.approx(rows["robot_ik_nn"]["solved"] / again["seconds"])
    assert ratios["second_pass_over_native"] == pytest.approx(
        again["solved_per_s"] / result["native"]["solved_per_s"]
    )
    assert rows["closed_chain_ik"]["second_pass"] is None
    text = web.format_table(result)
    assert "closed-chain-ik" in text and "CCDIKSolver" in text
    assert "timed again on the same targets" in text


@pytest.mark.browser
def test_web_bench_page(inputs):
    """The same harness bundled into a page and run in headless chromium; its answers judged
    by PyBullet (skips without chromium)."""
    try:
        web.chromium_path()
    except web.WebBenchError as err:
        pytest.skip(str(err))
    solver, folder, _, P, Q, _ = inputs
    web.build_page(folder)
    harness = web.run_chromium(folder, BUDGET_MS, WARMUP)
    assert harness["runtime"]["kind"] == "browser" and "Chrom" in harness["runtime"]["browser"]
    with BulletFK.of(solver.arm) as oracle:
        for name, row in harness["solvers"].items():
            truth = _oracle_solved(
                oracle, solver.arm, row["answers"], P, Q, row["verdict"] == "pose"
            )
            said = np.asarray(row["judged_solved"], dtype=bool)
            assert not np.any(said & ~truth), f"{name} in chromium: solved, PyBullet disagrees"
    assert harness["solvers"]["robot_ik_nn"]["solved"] > 0


def _need_crowd():
    from robot_ik_nn.web.folder import WebFolderError, check_dist, default_dist

    try:
        web.chromium_path()
        check_dist(default_dist())
    except (web.WebBenchError, WebFolderError) as err:
        pytest.skip(str(err))


@pytest.mark.browser
def test_crowd_timings_come_back_from_the_exported_page(served_model):
    """bench --web's crowd: the exported crowd page runs in headless chromium and posts one IK
    time per frame (no timing asserted: only that every frame after the warm-up is counted,
    finite and not negative, and that the slowest frame's work is reported)."""
    _need_crowd()
    from robot_ik_nn.bench.web_crowd import WARMUP, format_crowd, run_crowd

    solver = Solver.load(served_model)
    crowd = run_crowd(served_model, solver, arms=10, frames=12)
    assert crowd["arms"] == 10 and crowd["frames"] >= 12
    assert 0 <= crowd["ik_ms_median"] <= crowd["ik_ms_max"] < float("inf")
    assert crowd["warmup_frames_left_out"] == WARMUP and crowd["iterations_of_slowest_frame"] > 0
    assert "10 arms" in format_crowd(crowd)


@pytest.mark.browser
def test_a_page_that_fails_posts_its_error(served_model, tmp_path):
    """The crowd page without its model file posts the page's own message, and bench says it."""
    _need_crowd()
    from robot_ik_nn.web.folder import write_web_folder

    folder, _ = write_web_folder(served_model, tmp_path / "site")
    (folder / "model.web.json").unlink()
    with pytest.raises(web.WebBenchError, match="crowd page failed: .*model"):
        web.page_result(folder, "crowd.html?n=2&frames=3&post=/result", 120, "crowd")


def test_a_crowd_built_before_its_sources_are_changed_is_refused(tmp_path):
    """bench --web measures the built crowd page (web/dist): sources newer than it are named."""
    import os

    from robot_ik_nn.bench.web_crowd import stale_dist

    dist, src = tmp_path / "dist", tmp_path / "web"
    for folder in (dist, src / "src", src / "pages"):
        folder.mkdir(parents=True)
    (dist / "crowd.js").write_text("built")
    for name in ("src/kernel.js", "pages/crowd.js"):
        (src / name).write_text("source")
    os.utime(dist / "crowd.js", (2_000, 2_000))
    os.utime(src / "src/kernel.js", (1_000, 1_000))  # older than the build: fine
    os.utime(src / "pages/crowd.js", (1_000, 1_000))
    assert stale_dist(dist, src) == []
    os.utime(src / "src/kernel.js", (3_000, 3_000))  # changed after the build
    assert stale_dist(dist, src) == ["src/kernel.js"]
