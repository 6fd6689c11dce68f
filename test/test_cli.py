"""The robot-ik-nn command line, run as a user runs it."""

import json
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "robot_ik_nn.cli", "--threads", "2", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "niryo"
    run = cli(
        "train",
        "--robot",
        "niryo_one",
        "--steps",
        "150",
        "--hidden",
        "64",
        "64",
        "--out",
        str(out),
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    assert f"model saved to {out}" in run.stdout
    return out


def test_eval_json_has_the_promised_keys(trained):
    run = cli("eval", str(trained), "--targets", "300", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["robot"] == "niryo_one" and result["mode"] == "pose" and result["targets"] == 300
    for key in ("pos_mm_median", "pos_mm_p99", "rot_deg_median"):
        assert result["network"][key] > 0
    refined = result["refined"]
    assert refined["solved"] + refined["best_effort"] + refined["rejected"] == 300
    assert refined["solve_rate"] == refined["solved"] / 300 >= 0.9
    # solved means within 1 mm and 0.01 rad: the median answer is, and refining beats the network
    assert 0 < refined["pos_mm_median"] <= 1.0 and refined["rot_deg_median"] <= 0.573
    assert refined["pos_mm_median"] < result["network"]["pos_mm_median"]
    assert refined["solutions_per_s"] * refined["seconds"] == pytest.approx(300)


def test_eval_table_for_people(trained):
    run = cli("eval", str(trained), "--targets", "200")
    assert run.returncode == 0, run.stderr
    assert "network alone" in run.stdout and "solved (1 mm, 0.01 rad)" in run.stdout


def test_solve_prints_joints_and_quaternions(trained):
    """The printed joints, put through PyBullet's forward kinematics, reach the target; the
    printed error is that one's; each joint's quaternion is (axis sin(q/2), cos(q/2)) about its
    axis as the URDF writes it."""
    from fk_oracle import BulletFK, matrix_to_quat, rotation_angle, urdf_axes

    from robot_ik_nn.arm.model import ArmModel

    arm = ArmModel.load("niryo_one")
    with BulletFK.of(arm) as fk:
        p, R = fk.fk([0.3, -0.4, 0.5, -0.6, 0.7, -0.8])  # a pose the arm takes, no joint at 0
        xyz, quat = [f"{v:.17g}" for v in p], [f"{v:.17g}" for v in matrix_to_quat(R)]
        run = cli("solve", str(trained), "--xyz", *xyz, "--quat", *quat, "--json")
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)
        assert out["status"] == "solved" and out["joint_names"] == arm.joint_names
        # the solve's own time (timed warm) and the process's first call (which loads the
        # compiled code) are reported apart; no duration is asserted (a loaded machine)
        assert out["microseconds"] > 0 and out["first_call_ms"] > 0, out
        q = np.array(out["joints"])
        reached_p, reached_R = fk.fk(q)
    pos_err, rot_err = np.linalg.norm(reached_p - p), rotation_angle(reached_R, R)
    assert pos_err <= 1e-3 and rot_err <= 0.01, (pos_err, rot_err)
    assert out["pos_err_mm"] == pytest.approx(pos_err * 1000, abs=1e-3)  # PyBullet: ~1e-7 m
    assert out["rot_err_deg"] == pytest.approx(np.degrees(rot_err), abs=1e-3)
    assert np.all(q >= arm.lower) and np.all(q <= arm.upper)
    axes = urdf_axes(arm.source, arm.joint_names)
    expected = np.hstack([axes * np.sin(q / 2)[:, None], np.cos(q / 2)[:, None]])
    np.testing.assert_allclose(out["joint_quaternions"], expected, atol=1e-12)


def test_solve_with_a_free_tool_axis_and_outside_the_reach(trained):
    from robot_ik_nn.arm.rotations import matrix_to_quaternion
    from robot_ik_nn.ik.solver import Solver

    solver = Solver.load(trained)
    p, R = solver.forward(solver.arm.mid_range + 0.3)
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # 90 deg about tool z
    quat = matrix_to_quaternion((R[0] @ turn)[None])[0]
    target = ["--xyz", *map(str, p[0]), "--quat", *map(str, quat)]
    run = cli("solve", str(trained), *target, "--free-axis", "z", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["status"] == "solved" and out["pos_err_mm"] < 1.0
    _, reached = solver.forward(np.array(out["joints"]))
    assert reached[0][:, 2] @ R[0][:, 2] > np.cos(0.01)  # the tool's z axis on the target's
    far = solver.origin + [0.0, 0.0, 1.5 * solver.arm.reach]
    run = cli("solve", str(trained), "--xyz", *map(str, far), "--json")
    out = json.loads(run.stdout)
    assert out["status"] == "best_effort" and out["reason"].startswith("outside the reach")
    assert run.returncode == 3  # one rule: a best effort exits 3, printed anyway


def test_solve_rejects_a_bad_target_with_exit_code_4(trained):
    run = cli("solve", str(trained), "--xyz", "3", "0", "0", "--quat", "0", "0", "0", "1")
    assert run.returncode == 4 and "rejected" in run.stdout and "reaches at most" in run.stdout


def test_exit_codes_are_one_table_in_help_and_docs():
    """The codes the commands return (cli.EXIT_CODES) are the rows of docs/cli.md's table and
    of --help's epilog, the same codes and words; usage errors keep argparse's 2."""
    import re
    from pathlib import Path

    from robot_ik_nn import cli as commands

    docs = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    table = docs.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [tuple(cell.strip() for cell in line.strip("|").split(" | ", 1))
            for line in table.splitlines() if re.match(r"\| \d+ \|", line)]  # fmt: skip
    assert rows == [(str(code), text) for code, text in commands.EXIT_CODES]
    codes = [code for code, _ in commands.EXIT_CODES]
    assert len(set(codes)) == len(codes) and commands.USAGE == 2
    assert len({commands.SOLVED, commands.BEST_EFFORT, commands.REJECTED, commands.HELD,
                commands.NO_ANSWER, commands.USAGE}) == 6  # fmt: skip
    helped = " ".join(commands.parser().format_help().split())
    for code, text in commands.EXIT_CODES:
        assert f"{code} {text}" in helped, (code, text)


def test_view_usage_errors(trained):
    run = cli("view", str(trained), "--port", "99999", timeout=60)
    assert run.returncode == 2 and "a TCP port is at most 65535" in run.stderr, run.stderr
    run = cli("view", str(trained), "--robot", "niryo_one", timeout=60)
    assert run.returncode == 2 and "not both (a model knows its arm)" in run.stderr, run.stderr


def test_order_without_solutions_is_refused(trained):
    run = cli("solve", str(trained), "--xyz", "0.25", "0", "0.2", "--order", "nearest")
    assert run.returncode == 2 and "give --solutions K too" in run.stderr, run.stderr
    xyz = ["--xyz", "0.25", "0", "0.2"]
    run = cli("solve", str(trained), *xyz, "--refine", "1000000")  # was: IKSettings.iterations
    assert run.returncode == 2 and "--refine must be an integer in [0, 100000]" in run.stderr
    run = cli("solve", str(trained), *xyz, "--refine", "0", "--solutions", "2")
    assert run.returncode == 2 and "--solutions needs refinement" in run.stderr, run.stderr


def test_export_names_the_file_it_cannot_write(trained, tmp_path):
    (tmp_path / "a_file").write_text("")
    out = tmp_path / "a_file" / "m.tar.gz"  # below a file: no folder can be made there
    run = cli("export", str(trained), "--out", str(out))
    assert run.returncode == 2 and f"cannot write {out}" in run.stderr, run.stderr


def test_eval_refuses_a_device_it_cannot_use(trained):
    run = cli("eval", str(trained), "--targets", "10", "--device", "foo")
    assert run.returncode == 2 and "device 'foo': eval runs on cpu" in run.stderr, run.stderr


def test_errors_name_the_problem(tmp_path):
    for command in ("eval", "bench"):
        run = cli(command, str(tmp_path / "missing"))
        assert run.returncode == 2 and "model folder not found" in run.stderr, run.stderr
    run = cli("train", "--robot", "no_such_arm.urdf", "--steps", "1", "--out", str(tmp_path / "x"))
    assert run.returncode == 2 and "URDF file not found" in run.stderr
    run = cli(
        "train",
        "--robot",
        "franka_panda",
        "--tip",
        "nowhere",
        "--steps",
        "1",
        "--out",
        str(tmp_path / "x"),
    )
    assert run.returncode == 2 and "unknown tip link 'nowhere'" in run.stderr
    out = ["--out", str(tmp_path / "y")]
    for words, said in [
        (["eval", str(tmp_path), "--targets", "0"], "--targets: must be at least 1, got 0"),
        (["train", "--eval", "-3", "--steps", "2", *out], "--eval: must be at least 1"),
        (["train", "--minutes", "0", *out], "--minutes: must be a finite number above 0"),
        (["train", "--minutes", "nan", *out], "--minutes: must be a finite number above 0"),
        (["train", "--checkpoint-every", "-5", *out], "--checkpoint-every: must be a finite"),
        # a port past 65535 reached the page's thread, whose traceback left training hung
        (["train", "--view", "--view-port", "99999", *out], "a TCP port is at most 65535"),
        # NaN never ran out: the peers' loops went on for ever
        (["bench", str(tmp_path), "--budget-ms", "nan"], "--budget-ms: must be a finite"),
        (["bench", str(tmp_path), "--answers", "--cuda"], "not allowed with argument"),
        (["emulate", "niryo_one", "--faults", "-3"], "--faults: must be at least 0"),
        (["train", "--resume", "--force", *out], "--resume continues the run in --out and"),
        (["train", "--steps", "2", "--learn", "batch_size=-4", *out], "must be at least 1"),
        (["train", "--learn", "mutation_rate=2", *out], "must be a fraction from 0 to 1"),
        (["train", "--nproc", "2", "--robot", "nosuch", *out], "URDF file not found: nosuch"),
        (["train", "--nproc", "2", "--learner", "explore", *out], "runs in one process"),
    ]:
        run = cli(*words)
        assert run.returncode == 2 and said in run.stderr, (words, run.stderr)
        assert "Traceback" not in run.stderr and not (tmp_path / "y").exists()


def test_solve_path_answers_a_file_of_targets(trained, tmp_path):
    from robot_ik_nn.arm.rotations import matrix_to_quaternion
    from robot_ik_nn.bench.measure import tracking_path
    from robot_ik_nn.ik.solver import Solver

    solver = Solver.load(trained)
    q_path, P, R = tracking_path(solver.arm, solver.forward, 40, seed=101)
    poses = tmp_path / "poses.csv"
    poses.write_text(
        "# x, y, z, qx, qy, qz, qw\n"
        + "".join(",".join(map(str, [*p, *q])) + "\n" for p, q in zip(P, matrix_to_quaternion(R)))
    )
    run = cli("solve", str(trained), "--path", str(poses), "--start", *map(str, q_path[0]))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("# 40 targets, 40 solved") and lines[1].startswith("target,solved,")
    table = np.loadtxt(lines[2:], delimiter=",")
    assert table.shape == (40, 8) and (table[:, 0] == np.arange(40)).all() and table[:, 1].all()
    reached, turned = solver.forward(table[:, 2:])
    assert np.linalg.norm(reached - P, axis=1).max() < 1e-3  # 6 decimals printed: ~1e-6 rad
    steps = np.abs(np.diff(np.vstack([q_path[0], table[:, 2:]]), axis=0))
    assert steps.max() <= 0.2
    positions = tmp_path / "positions.txt"  # positions alone, no --start: the first answer
    positions.write_text("".join(" ".join(map(str, p)) + "\n" for p in P))
    out = json.loads(cli("solve", str(trained), "--path", str(positions), "--json").stdout)
    assert out["ok"] and len(out["joints"]) == 40 and all(out["solved"])
    assert out["max_step_rad"] <= 0.2 and out["joint_names"] == solver.arm.joint_names


def test_solve_path_refuses_a_bad_file_by_line(trained, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0.2 0 0.3\n\n0.2 0.01 0.3 1\n")
    run = cli("solve", str(trained), "--path", str(bad))
    assert run.returncode == 2 and f"{bad}, line 3: a target is 3 numbers" in run.stderr
    bad.write_text("0.2 0 zero\n")
    assert "line 1: not numbers" in cli("solve", str(trained), "--path", str(bad)).stderr
    bad.write_text("# nothing\n")
    assert "holds no targets" in cli("solve", str(trained), "--path", str(bad)).stderr
    run = cli("solve", str(trained), "--path", str(bad), "--quat", "0", "0", "0", "1")
    assert run.returncode == 2 and "leave out --quat" in run.stderr
    run = cli("solve", str(trained), "--xyz", "0.2", "0", "0.3", "--start", "0")
    assert run.returncode == 2 and "--start is where a --path begins" in run.stderr
    good = tmp_path / "good.txt"
    good.write_text("0.2 0 0.3\n")
    degrees = ["0", "30", "-20", "0", "45", "0"]  # joint_2 at 30 lies far past its 0.64 rad
    run = cli("solve", str(trained), "--path", str(good), "--start", *degrees)
    assert run.returncode == 2 and "joint_2 = 30 lies outside its limits" in run.stderr, run.stderr
    assert "degrees given?" in run.stderr


def test_solve_path_refuses_a_far_start_at_once(trained, tmp_path):
    """A --start whose tool lies farther from the first target than one step of --max-step a
    joint can move it is refused before anything is solved (exit 4, nothing printed on stdout),
    with the distance: PyBullet's, between the tool there and the first target."""
    from fk_oracle import BulletFK, matrix_to_quat

    from robot_ik_nn.arm.model import ArmModel

    first = np.array([-1.4, 0.3, -0.5, 0.2, -0.6, 0.4])
    start = first + [2.8, 0, 0, 0, 0, 0]  # joint_1 turned: the tool on the other side
    with BulletFK.of(ArmModel.load("niryo_one")) as fk:
        targets = [fk.fk(q) for q in (first, first + 0.01)]
        gap = np.linalg.norm(fk.fk(start)[0] - targets[0][0])
    path = tmp_path / "path.txt"
    path.write_text("".join(" ".join(map(str, [*p, *matrix_to_quat(R)])) + "\n"
                            for p, R in targets))  # fmt: skip
    run = cli("solve", str(trained), "--path", str(path), "--start", *map(str, start), timeout=300)
    assert run.returncode == 4 and run.stdout == "", run.stdout + run.stderr
    assert "too far from the path's first target" in run.stderr, run.stderr
    said = run.stderr.split("the tool there is ", 1)[1]
    assert abs(float(said.split(" mm")[0]) - gap * 1000) <= 1, (run.stderr, gap)


def test_export_onnx_writes_model_onnx_that_answers_as_the_compiled_network(trained, tmp_path):
    """``export MODEL --onnx``: model.onnx in the folder, and the onnx backend's answers those of
    the compiled one (README: both within 1e-12 rad of the float64 torch network)."""
    from robot_ik_nn.arm.rotations import matrix_to_quaternion, wrap_angle
    from robot_ik_nn.evaluate import held_out_targets
    from robot_ik_nn.ik.settings import IKSettings
    from robot_ik_nn.ik.solver import Solver

    folder = tmp_path / "niryo"
    folder.mkdir()
    for f in trained.iterdir():
        if f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    assert not (folder / "model.onnx").exists()
    run = cli("export", str(folder), "--onnx")
    assert run.returncode == 0, run.stderr
    assert (folder / "model.onnx").is_file() and f"wrote {folder / 'model.onnx'}" in run.stdout
    _, P, R = held_out_targets(Solver.load(folder).arm, 300, seed=8)
    Q = matrix_to_quaternion(R)
    for settings in (IKSettings(iterations=0), IKSettings()):  # the network alone, then refined
        onnx = Solver.load(folder, settings, backend="onnx").solve_batch(P, Q)
        compiled = Solver.load(folder, settings).solve_batch(P, Q)
        assert np.array_equal(onnx.solved, compiled.solved)
        gap = np.abs(wrap_angle(onnx.q - compiled.q)).max()
        print(f"\niterations {settings.iterations}: onnx vs compiled, largest gap {gap:.2g} rad")
        assert gap <= 2e-12, gap
