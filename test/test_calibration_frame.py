"""Calibration with the tracker's frame unknown (eye-to-hand): the poses are measured in a frame
mounted somewhere in the room, estimated with the arm. Judged by the true arm (a perturbed URDF
in PyBullet, seeds the code never saw) and the true tracker placement: a target the tracker
sees goes through the estimated frame to the solver, and the answer is put back through
PyBullet on the true arm and seen by the true tracker."""

import json
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration import fit as F
from robot_ik_nn.calibration import frame as frames
from robot_ik_nn.calibration.folder import calibrate
from robot_ik_nn.calibration.measurements import read_csv, to_csv
from robot_ik_nn.calibration.true_arm import perturb
from robot_ik_nn.hardware.pybullet_arm import ArmSim
from robot_ik_nn.hardware.tracker import measure
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def niryo_folder(tmp_path_factory):
    """A Niryo One model folder with an untrained network (calibrate copies it as it is): the
    answers here come from the solver without it, so no training is needed."""
    from robot_ik_nn.learn.network import IKNet, NetConfig

    arm = ArmModel.load("niryo_one")
    out = tmp_path_factory.mktemp("models") / "niryo_one"
    return model_dir.save(out, IKNet(NetConfig(dof=arm.dof, hidden=[16]), arm), arm)


def _true(arm, seed):
    true = ArmModel(perturb(arm, seed), source="<true arm>", base=arm.base, tip=arm.tip)
    true.mesh_dirs += arm.mesh_dirs
    return true


def _placement(seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, 3), rng.uniform(-math.pi, math.pi, 3)


def _tracker_from_base(xyz, rpy):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = Rotation.from_euler("xyz", rpy).as_matrix(), xyz
    return np.linalg.inv(T)


def test_unknown_tracker_frame_serves_the_true_arm(niryo_folder, tmp_path):
    arm = model_dir.read(niryo_folder).arm
    true = _true(arm, seed=31)
    xyz, rpy = _placement(32)
    q = np.random.default_rng(33).uniform(arm.lower, arm.upper, (100, arm.dof))
    rows = measure(
        true, q, 0.2, 0.1, outliers=0.05, seed=34, tracker_pose=(xyz, rpy), frame="camera"
    )
    csv = tmp_path / "poses.csv"
    csv.write_text(to_csv(rows, arm.joint_names))
    out = tmp_path / "calibrated"
    summary = calibrate(niryo_folder, csv, out, frame="unknown")
    assert summary["frame"]["tracker_frame"] == "camera"  # the name the CSV carried
    record = json.loads((out / "calibration.json").read_text())
    assert "tracker_from_base" in record["frame"] and "camera" in (out / "report.md").read_text()
    sigma = record["frame"]["sigma"]
    # the shift is determined; a turn about the first joint's axis is shared with the next
    # joints' placements (a redundancy of the per-joint parameters the prior settles)
    assert max(sigma["shift_mm"]) < 1.0 and np.all(np.isfinite(sigma["turn_deg"]))
    first = [p for p in record["parameters"] if p["name"].startswith(arm.joint_names[0] + ".")]
    assert len(first) == 8 and all(p["fixed"] and p["value"] == 0.0 for p in first)
    # the estimate is the true placement, up to what the first joint's errors moved (mm, deg)
    Fe, Ft = frames.from_record(record["frame"]), _tracker_from_base(xyz, rpy)
    assert np.linalg.norm(Fe[:3, 3] - Ft[:3, 3]) < 0.01
    assert Rotation.from_matrix(Fe[:3, :3] @ Ft[:3, :3].T).magnitude() < math.radians(3)

    # targets the true arm reaches, as the true tracker sees them
    qt = np.random.default_rng(35).uniform(arm.lower + 0.02, arm.upper - 0.02, (300, arm.dof))
    with ArmSim(true) as sim:
        P, quat = sim.forward(qt)
    seen = Rotation.from_matrix(Ft[:3, :3])
    Pt, quat_t = seen.apply(P) + Ft[:3, 3], (seen * Rotation.from_quat(quat)).as_quat()
    base_p, base_quat = frames.to_base(Fe, Pt, quat_t)
    answers = Solver.load(out).without_network().solve_batch(base_p, base_quat).q
    with ArmSim(true) as sim:
        reached, rq = sim.forward(np.nan_to_num(answers))
    pe = np.linalg.norm(seen.apply(reached) + Ft[:3, 3] - Pt, axis=1)
    re = ((seen * Rotation.from_quat(rq)) * Rotation.from_quat(quat_t).inv()).magnitude()
    ok = np.isfinite(answers).all(1) & (pe <= 1e-3) & (re <= 0.01)
    ok &= arm.within_limits(np.nan_to_num(answers))
    print(f"\nunknown frame: {ok.mean():.1%} solved, median {np.median(pe) * 1e3:.3f} mm")
    assert ok.mean() >= 0.99 and np.median(pe) <= 3e-4


def test_a_tracker_frame_that_never_matches_is_refused(niryo_folder, tmp_path, capsys):
    """A camera knocked half-way through the session: no one frame explains the poses."""
    arm = model_dir.read(niryo_folder).arm
    true = _true(arm, seed=41)
    q = np.random.default_rng(42).uniform(arm.lower, arm.upper, (60, arm.dof))
    xyz, rpy = _placement(43)
    a = measure(true, q[:30], seed=44, tracker_pose=(xyz, rpy))
    b = measure(true, q[30:], seed=45, tracker_pose=(xyz + 0.05, rpy + 0.2))
    both = a.subset(np.arange(30))
    for name in ("q", "position", "quaternion", "lines"):
        setattr(both, name, np.concatenate([getattr(a, name), getattr(b, name)]))
    csv = tmp_path / "knocked.csv"
    csv.write_text(to_csv(both, arm.joint_names))
    out = tmp_path / "out"
    from robot_ik_nn.cli import main

    argv = ["calibrate", str(niryo_folder), "--measurements", str(csv), "--out", str(out)]
    assert main(argv + ["--frame", "unknown"]) == 2
    assert "the tracker frame 'tracker' does not match the arm" in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["knocked.csv"]
    with pytest.raises(F.CalibrationError, match="frame must be one of base, unknown"):
        calibrate(niryo_folder, csv, out, frame="camera")


def test_the_frame_name_rides_in_a_csv_comment():
    arm = ArmModel.load("niryo_one")
    rows = measure(arm, np.zeros((2, arm.dof)), tracker_pose=((0.5, 0, 0), (0, 0, 1)), frame="c")
    text = to_csv(rows, arm.joint_names)
    assert text.startswith("# frame: c\n")
    back = read_csv(text, arm.joint_names)
    assert back.frame == "c" and np.allclose(back.position, rows.position)
    # a camera 0.5 m along x, turned 1 rad about z, sees the zero-pose tool there
    zero = measure(arm, np.zeros((1, arm.dof)), 0.0, 0.0)
    expect = Rotation.from_euler("z", 1.0).inv().apply(zero.position[0] - [0.5, 0, 0])
    assert np.allclose(rows.position[0], expect, atol=5e-3)  # 0.2 mm noise
    assert read_csv(to_csv(zero, arm.joint_names), arm.joint_names).frame == ""
