"""The pose-dependent term: a true arm whose loaded joints sag under gravity (PyBullet physics,
joints held by a finite stiffness: hardware/pybullet_arm.py forward_held), calibrated with each
joint's compliance (calibration/compliance.py) and served as joints to command
(calibration/served.py). Judged by PyBullet: its inverse dynamics for the loads, its physics for
where the commanded arm lands."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration import compliance as C
from robot_ik_nn.calibration.folder import calibrate
from robot_ik_nn.calibration.measurements import to_csv
from robot_ik_nn.calibration.served import CompliantSolver
from robot_ik_nn.calibration.true_arm import perturb
from robot_ik_nn.hardware.pybullet_arm import ArmSim
from robot_ik_nn.hardware.tracker import measure, sag_stiffness
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def niryo_folder(tmp_path_factory):
    """A Niryo One model folder with an untrained network: answers here come from the solver
    without it (no training needed)."""
    from robot_ik_nn.learn.network import IKNet, NetConfig

    arm = ArmModel.load("niryo_one")
    out = tmp_path_factory.mktemp("models") / "niryo_one"
    return model_dir.save(out, IKNet(NetConfig(dof=arm.dof, hidden=[16]), arm), arm)


@pytest.mark.parametrize("robot", ["niryo_one", "inmoov_right_arm", "franka_panda"])
def test_gravity_torques_are_pybullets(robot):
    """The compliance model's loads, from the URDF's inertials, against PyBullet's inverse
    dynamics (its holding torques are the opposite of gravity's)."""
    arm = ArmModel.load(robot)
    q = np.random.default_rng(1).uniform(arm.lower, arm.upper, (50, arm.dof))
    with ArmSim(arm) as sim:
        holding = sim.gravity_torques(q)
    ours = C.torques(C.gravity_model(arm), q)
    assert np.abs(holding).max() > 0.5
    assert np.allclose(ours, -holding, atol=1e-9 * np.abs(holding).max())


def test_soft_joints_settle_where_stiffness_meets_load():
    arm = ArmModel.load("niryo_one")
    K = sag_stiffness(arm, 0.3)
    assert np.isinf(K[0]) and np.isfinite(K[1:3]).all()  # the vertical first joint carries none
    q = np.random.default_rng(2).uniform(arm.lower, arm.upper, (20, arm.dof))
    with ArmSim(arm, stiffness=K) as sim:
        _, _, took = sim.forward_held(q)
        holding = sim.gravity_torques(took)
        rigid_p, _ = sim.forward(q)
        held_p, _, _ = sim.forward_held(q)
        _, _, stepped = sim.forward_held(q[:3], from_statics=False)  # physics alone, from q
    assert np.abs(stepped - took[:3]).max() < 1e-6  # the same rest either way
    soft = np.isfinite(K)
    # statics where the arm came to rest: the servo's pull holds the load
    assert np.allclose(K[soft] * (q - took)[:, soft], holding[:, soft], atol=1e-5)
    assert np.abs((took - q)[:, ~soft]).max() < 1e-5  # rigid joints stay put
    sag = np.degrees(np.abs(took - q)).max(0)
    assert 0.15 < sag[1] <= 0.31 and 0.15 < sag[2] <= 0.31, sag  # ~0.3 deg at the most
    assert np.median(np.linalg.norm(held_p - rigid_p, axis=1)) > 2e-4  # the tool felt it
    # the compliance model reproduces the physics from its own loads
    comp = C.Compliance(C.gravity_model(arm), np.where(soft, 1 / K, 0.0))
    assert np.abs(comp.effective(q) - took).max() < 1e-5
    assert np.abs(comp.command(comp.effective(q)) - q).max() < 1e-12


def _judged(answers, true, K, P, quat, arm):
    with ArmSim(true, stiffness=K) as sim:
        reached, rq, _ = sim.forward_held(np.nan_to_num(answers))
    pe = np.linalg.norm(reached - P, axis=1)
    re = (Rotation.from_quat(rq) * Rotation.from_quat(quat).inv()).magnitude()
    ok = np.isfinite(answers).all(1) & (pe <= 1e-3) & (re <= 0.01)
    return (ok & arm.within_limits(np.nan_to_num(answers))).mean(), pe


def test_calibrate_a_sagging_arm_and_serve_joints_to_command(niryo_folder, tmp_path):
    """Done-when on a true arm with sag as well as origins, axes and zeros off: 100 poses,
    0.2 mm / 0.1 deg noise, 5 % gross outliers; answers commanded to the physics-on arm."""
    arm = model_dir.read(niryo_folder).arm
    true = ArmModel(perturb(arm, 51), source="<true arm>", base=arm.base, tip=arm.tip)
    K = sag_stiffness(arm, 0.3)
    q = np.random.default_rng(52).uniform(arm.lower, arm.upper, (100, arm.dof))
    rows = measure(true, q, 0.2, 0.1, outliers=0.05, seed=53, stiffness=K)
    csv = tmp_path / "poses.csv"
    csv.write_text(to_csv(rows, arm.joint_names))
    out = tmp_path / "calibrated"
    summary = calibrate(niryo_folder, csv, out)
    assert (out / C.FILE).is_file() and "Joint compliance" in (out / "report.md").read_text()
    sag = {c["joint"]: c["sag_deg_at_largest_load"] for c in summary["compliance"]}
    assert 0.2 < sag["joint_2"] < 0.4 and 0.2 < sag["joint_3"] < 0.4, sag
    solver = Solver.load(out).without_network()
    assert isinstance(solver, CompliantSolver)
    qt = np.random.default_rng(54).uniform(arm.lower + 0.02, arm.upper - 0.02, (200, arm.dof))
    with ArmSim(true, stiffness=K) as sim:
        P, quat, _ = sim.forward_held(qt)
    solved, pe = _judged(solver.solve_batch(P, quat).q, true, K, P, quat, arm)
    rigid = Solver(solver.rigid.arm)  # the same calibrated URDF, without the compliance
    rigid_solved, rigid_pe = _judged(rigid.solve_batch(P, quat).q, true, K, P, quat, arm)
    print(
        f"\nsagging arm: {solved:.1%} solved, median {np.median(pe) * 1e3:.3f} mm; its rigid "
        f"part alone: {rigid_solved:.1%}, median {np.median(rigid_pe) * 1e3:.3f} mm"
    )
    assert solved >= 0.99 and np.median(pe) <= 3e-4
    assert np.median(rigid_pe) > 2 * np.median(pe)  # the compliance is what closes the gap


def test_served_answers_are_joints_to_command(niryo_folder, tmp_path):
    """A compliance large enough to see (3 deg sag): every entry answers commanded joints whose
    effective pose hits the target; limits are judged on the commanded joints; an exported
    folder keeps it."""
    arm = ArmModel.load("niryo_one")
    gravity = C.gravity_model(arm)
    comp = C.Compliance(gravity, np.array([0, 0.02, 0.05, 0.5, 0.5, 0]))
    solver = CompliantSolver.over(Solver(arm), comp)
    q = np.random.default_rng(3).uniform(arm.lower + 0.1, arm.upper - 0.1, (30, arm.dof))
    p, R = Solver(arm).forward(comp.effective(q))
    quat = Rotation.from_matrix(R).as_quat()
    assert np.allclose(solver.forward(q)[0], p, atol=1e-12)
    batch = solver.solve_batch(p, quat, current=q)
    hit, _ = Solver(arm).forward(comp.effective(batch.q))
    assert batch.solved.mean() > 0.9
    assert np.abs(hit - p)[batch.solved].max() < 1e-3
    assert np.abs(batch.q - comp.effective(batch.q))[batch.solved].max() > 1e-3  # they differ
    one = solver.solve(p[0], quat[0], current=q[0])
    assert one.status == "solved" and np.allclose(solver.forward(one.q)[0][0], p[0], atol=1e-3)
    # a stream's joints (current, last, previous) are commanded ones too: the kernel is given
    # the effective ones, all three (the carried step between two commanded joints otherwise)
    near = q[0] + 0.01
    pn, Rn = Solver(arm).forward(comp.effective(near))
    qn = Rotation.from_matrix(Rn).as_quat()
    streamed = solver.solve(pn[0], qn[0], current=q[0], last=q[0], previous=q[0] - 0.01)
    eff = comp.effective
    rigid = Solver.solve(solver, pn[0], qn[0], current=eff(q[0]), last=eff(q[0]),
                         previous=eff(q[0] - 0.01))  # fmt: skip
    assert streamed.status == "solved"
    np.testing.assert_array_equal(streamed.q, comp.command(rigid.q))
    several = solver.solve(p[1], quat[1], solutions=3)
    for answer in several:
        assert np.linalg.norm(solver.forward(answer.q)[0][0] - p[1]) < 1e-3
    assert isinstance(solver.with_settings(pos_tol=1e-4), CompliantSolver)
    # a target whose effective joints sit at joint_2's limit: the command would pass it
    edge = arm.mid_range.copy()
    edge[1] = arm.lower[1] + 1e-4
    pe, Re = Solver(arm).forward(edge)
    answer = solver.solve(pe[0], Rotation.from_matrix(Re[0]).as_quat(), current=edge)
    if answer.q is not None:
        assert arm.within_limits(answer.q[None])[0] or answer.status != "solved"
    # a calibrated folder carries it, and its export too
    folder = tmp_path / "calibrated"
    (folder).mkdir()
    for name in ("model.json", "model.safetensors", "robot.urdf"):
        (folder / name).write_bytes((niryo_folder / name).read_bytes())
    import json

    (folder / C.FILE).write_text(json.dumps(comp.to_dict(arm.joint_names)))
    archive = model_dir.export(folder)
    served = Solver.load(archive)
    assert isinstance(served, CompliantSolver)
    assert np.allclose(served.forward(q)[0], p, atol=1e-12)
    assert not isinstance(Solver.load(niryo_folder), CompliantSolver)


def test_a_rigid_arm_gets_a_rigid_folder(niryo_folder, tmp_path, capsys):
    """No sag in the measurements: the compliance is not kept (no compliance.json)."""
    arm = model_dir.read(niryo_folder).arm
    text = perturb(arm, 61, zero_rad=math.radians(1.0))
    true = ArmModel(text, source="<t>", base=arm.base, tip=arm.tip)
    q = np.random.default_rng(62).uniform(arm.lower, arm.upper, (60, arm.dof))
    csv = tmp_path / "poses.csv"
    csv.write_text(to_csv(measure(true, q, seed=63), arm.joint_names))
    summary = calibrate(niryo_folder, csv, tmp_path / "out")
    assert "compliance" not in summary and not (tmp_path / "out" / C.FILE).exists()
    assert not isinstance(Solver.load(tmp_path / "out"), CompliantSolver)
    from robot_ik_nn.cli import main

    argv = ["calibrate", str(niryo_folder), "--measurements", str(csv), "--out"]
    assert main(argv + [str(tmp_path / "rigid"), "--rigid", "--json"]) == 0
    assert not (tmp_path / "rigid" / C.FILE).exists()
    assert main(argv + [str(tmp_path / "bad"), "--payload-kg", "-1"]) == 2
    assert "the payload must be 0 kg or more" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
