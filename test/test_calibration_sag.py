"""The pose-dependent term: a true arm whose loaded joints sag under gravity (PyBullet physics,
joints held by a finite stiffness: hardware/pybullet_arm.py forward_held), calibrated with each
joint's compliance (calibration/compliance.py) and served as joints to command
(calibration/served.py). Judged by PyBullet: its inverse dynamics for the loads, its physics for
where the commanded arm lands."""

import math

import numpy as np
import pytest
from fk_oracle import BulletFK, rotation_angle
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


def _judged(answers, true, K, P, quat, arm, each=False):
    with ArmSim(true, stiffness=K) as sim:
        reached, rq, _ = sim.forward_held(np.nan_to_num(answers))
    pe = np.linalg.norm(reached - P, axis=1)
    re = (Rotation.from_quat(rq) * Rotation.from_quat(quat).inv()).magnitude()
    ok = np.isfinite(answers).all(1) & (pe <= 1e-3) & (re <= 0.01)
    ok &= arm.within_limits(np.nan_to_num(answers))
    return (ok if each else ok.mean()), pe


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


def test_targets_near_the_limits_are_commanded_inside_them():
    """Issue 41, item 11: the InMoov arm with 0.8 deg of sag (origins 2 mm, axes 0.5 deg, zeros
    2.5 deg off). The solver is served the true arm's parameters (its perturbed URDF and its
    stiffness over its own gravity model: what a perfect fit gives) so that only the limit
    handling is judged; 1,000 targets are where PyBullet's physics-on true arm settles when
    commanded joints drawn inside its limits, a joint in six put exactly on a limit. The joints
    answered are commanded to that arm in turn: >= 99.5 % land within 1 mm / 0.01 rad, and no
    answer (solved or not) commands a joint outside the arm's limits. One target at a time as
    well, over the rows with a joint on a limit."""
    arm = ArmModel.load("inmoov_right_arm")
    text = perturb(arm, 71, 0.002, math.radians(0.5), math.radians(2.5))
    true = ArmModel(text, source="<true arm>", base=arm.base, tip=arm.tip)
    K = sag_stiffness(arm, 0.8)
    comp = C.Compliance(C.gravity_model(true), np.where(np.isfinite(K), 1 / K, 0.0))
    solver = CompliantSolver.over(Solver(true), comp)
    rng = np.random.default_rng(72)
    q = rng.uniform(arm.lower, arm.upper, (1000, arm.dof))
    pin = rng.random(q.shape) < 1 / 6
    q = np.where(pin, np.where(rng.random(q.shape) < 0.5, arm.lower, arm.upper), q)
    with ArmSim(true, stiffness=K) as sim:
        P, quat, _ = sim.forward_held(q)
    batch = solver.solve_batch(P, quat).q
    edge = np.flatnonzero(pin.any(1))[:150]
    one = [solver.solve(P[i], quat[i]) for i in edge]
    single = np.array([a.q if a.q is not None else np.full(arm.dof, np.nan) for a in one])
    answers = np.concatenate([batch, single])
    solved, pe = _judged(answers, true, K, np.concatenate([P, P[edge]]),
                         np.concatenate([quat, quat[edge]]), arm, each=True)  # fmt: skip
    print(
        f"\nnear the limits: {solved[:1000].mean():.1%} of 1,000 solved (largest miss "
        f"{pe[:1000].max() * 1e3:.3f} mm), one at a time {solved[1000:].mean():.1%} of "
        f"{len(edge)}"
    )
    answered = np.isfinite(answers).all(1)
    assert arm.within_limits(answers[answered], tol=0.0).all()
    assert solved[:1000].mean() >= 0.995 and solved[1000:].mean() >= 0.995


def test_commands_held_at_the_limits_are_judged_where_they_land():
    """A sag large enough (10 deg at the largest load) that solving again at the pose found
    does not always settle within served.ROUNDS: whatever the answer, its command is inside the
    limits and the errors it reports are those of the pose the commanded arm takes, measured
    by PyBullet (fk_oracle) at the joints it takes; every target whose joints the arm takes
    lie inside the limits (the stops) is solved. Batch and one at a time."""
    arm = ArmModel.load("niryo_one")
    gravity = C.gravity_model(arm)
    q = np.random.default_rng(3).uniform(arm.lower, arm.upper, (400, arm.dof))
    load = np.abs(C.torques(gravity, q)).max(0)
    c = np.where(load > 0.05 * load.max(), np.radians(10) / np.maximum(load, 1e-9), 0.0)
    comp = C.Compliance(gravity, c)
    solver = CompliantSolver.over(Solver(arm), comp)
    rng = np.random.default_rng(4)
    q = rng.uniform(arm.lower, arm.upper, (300, arm.dof))
    pin = rng.random(q.shape) < 0.2
    q = np.where(pin, np.where(rng.random(q.shape) < 0.5, arm.lower, arm.upper), q)
    taken = comp.effective(q)
    with BulletFK.of(arm) as fk:
        p, R = fk.fk_batch(taken)
        quat = Rotation.from_matrix(R).as_quat()
        batch = solver.solve_batch(p, quat)
        some = np.flatnonzero(pin.any(1))[:60]
        one = [solver.solve(p[i], quat[i]) for i in some]
        answered = [(batch.q[i], batch.pos_err[i], batch.rot_err[i], i) for i in range(len(q))]
        answered += [(a.q, a.pos_err, a.rot_err, i) for a, i in zip(one, some)]
        for got, pe, re, i in answered:
            assert got is not None and np.isfinite(got).all()
            assert arm.within_limits(got[None], tol=0.0)[0]
            hit, turned = fk.fk(comp.effective(got))
            assert abs(np.linalg.norm(hit - p[i]) - pe) < 1e-6
            assert abs(rotation_angle(turned[None], R[i][None])[0] - re) < 1e-6
    reachable = arm.within_limits(taken)
    assert batch.solved[reachable].mean() >= 0.995
    assert np.mean([a.solved for a, i in zip(one, some) if reachable[i]]) >= 0.995
