"""Calibration (robot_ik_nn/calibration/) judged by the true arm it never sees: a perturbed URDF
put into PyBullet, measured by the simulated tracker (hardware/tracker.py) with noise and gross
outliers, and every calibrated answer put back through PyBullet on the true arm."""

import hashlib
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration import fit as F
from robot_ik_nn.calibration.folder import calibrate
from robot_ik_nn.calibration.measurements import MeasurementError, read_csv, to_csv
from robot_ik_nn.calibration.true_arm import joint_frame, perturb
from robot_ik_nn.hardware.pybullet_arm import ArmSim
from robot_ik_nn.hardware.tracker import measure
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.slow


def _true(arm, seed, **sizes):
    text = perturb(arm, seed, **sizes)
    true = ArmModel(text, source="<true arm>", base=arm.base, tip=arm.tip)
    true.mesh_dirs += arm.mesh_dirs
    return true


def _on_the_true_arm(solver, true, n, seed):
    """(solved fraction, position errors) of ``solver``'s answers to targets the true arm
    reaches, judged by PyBullet on the true arm."""
    arm = solver.arm
    q = np.random.default_rng(seed).uniform(arm.lower + 0.02, arm.upper - 0.02, (n, arm.dof))
    with ArmSim(true) as sim:
        P, quat = sim.forward(q)
        result = solver.solve_batch(P, quat)
        reached, rq = sim.forward(np.nan_to_num(result.q))
    pe = np.linalg.norm(reached - P, axis=1)
    re = (Rotation.from_quat(rq) * Rotation.from_quat(quat).inv()).magnitude()
    ok = np.all(np.isfinite(result.q), axis=1) & (pe <= 1e-3) & (re <= 0.01)
    return (ok & arm.within_limits(np.nan_to_num(result.q))).mean(), pe


def _digest(folder):
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()
    }


def test_the_true_arm_is_off_by_the_stated_sizes():
    arm = ArmModel.load("niryo_one")
    true = ArmModel(perturb(arm, 3), source="<t>", base=arm.base, tip=arm.tip)
    import xml.etree.ElementTree as ET

    a = {j.get("name"): j for j in ET.fromstring(arm.urdf_text).iter("joint")}
    b = {j.get("name"): j for j in ET.fromstring(true.urdf_text).iter("joint")}
    for name in arm.joint_names:
        pa, Ra, xa = joint_frame(a[name])
        pb, Rb, xb = joint_frame(b[name])
        assert np.linalg.norm(pb - pa) == pytest.approx(0.0015, abs=1e-9)
        tilt = math.acos(min(1.0, float(xa @ (Ra.T @ Rb @ xb))))
        assert tilt == pytest.approx(math.radians(0.3), abs=1e-6)  # the axis, seen from outside
        turn = Rotation.from_matrix(Ra.T @ Rb).magnitude()
        assert turn == pytest.approx(math.radians(1.0), abs=1e-6)  # the zero, about the axis


def test_calibrate_niryo_one_from_100_poses_with_outliers(niryo_model, tmp_path):
    """The Done-when figures on a rigid true arm: <= 100 poses, 0.2 mm / 0.1 deg noise, 5 %
    gross outliers (2-10 cm): >= 99 % solved on the true arm, median <= 0.3 mm."""
    arm = model_dir.read(niryo_model).arm
    true = _true(arm, seed=11)
    q = np.random.default_rng(5).uniform(arm.lower, arm.upper, (100, arm.dof))
    rows = measure(true, q, 0.2, 0.1, outliers=0.05, seed=6)
    csv = tmp_path / "poses.csv"
    csv.write_text(to_csv(rows, arm.joint_names))
    before = _digest(niryo_model)
    out = tmp_path / "calibrated"
    summary = calibrate(niryo_model, csv, out)
    assert _digest(niryo_model) == before  # the nominal folder is never touched
    assert len(summary["poses_set_aside"]) >= 3  # the outliers were found...
    assert summary["poses_used"] >= 90  # ...and little else
    assert summary["cross_validation"]["calibrated_mm_median"] < 0.5
    for name in ("report.md", "calibration.json", "robot.urdf", "model.json"):
        assert (out / name).is_file()
    solved, pe = _on_the_true_arm(Solver.load(out), true, 300, 7)
    nominal_solved, nominal_pe = _on_the_true_arm(Solver.load(niryo_model), true, 300, 7)
    print(
        f"\ncalibrated: {solved:.1%} solved, median {np.median(pe) * 1e3:.3f} mm; nominal: "
        f"{nominal_solved:.1%}, median {np.median(nominal_pe) * 1e3:.3f} mm"
    )
    assert solved >= 0.99 and np.median(pe) <= 3e-4
    assert np.median(nominal_pe) > 3e-3  # the true arm was far enough off to matter
    # the calibrated URDF keeps the nominal axes (a tilt is written into the origins), so a
    # reader that takes only x, y, z axes gets it right: roboticstoolbox's FK agrees with ours
    import io
    import xml.etree.ElementTree as ET

    axes = {
        j.get("name"): j.find("axis").get("xyz")
        for j in ET.fromstring((out / "robot.urdf").read_text()).iter("joint")
        if j.find("axis") is not None
    }
    nominal_axes = {
        j.get("name"): j.find("axis").get("xyz")
        for j in ET.fromstring(arm.urdf_text).iter("joint")
        if j.find("axis") is not None
    }
    assert all(
        np.allclose(np.array(axes[k].split(), float), np.array(v.split(), float))
        for k, v in nominal_axes.items()
    )
    # the nominal arm opens the calibrated folder (drivers pass it), and gets the calibrated one
    opened = model_dir.read(out, arm=arm)
    assert opened.arm.fingerprint == summary["calibrated_fingerprint"] != arm.fingerprint
    rtb = pytest.importorskip("roboticstoolbox")
    from roboticstoolbox.models.URDF.URDFRobot import URDF_file

    from robot_ik_nn.bench.peers import _without_shapes

    calibrated = model_dir.read(out).arm
    links, name, _ = URDF_file(io.StringIO(_without_shapes(calibrated.urdf_text)))
    ets = rtb.Robot(links, name=name).ets(start=arm.base, end=arm.tip)
    for qq in q[:5]:
        p_ours, _ = Solver(calibrated).forward(qq)
        assert np.linalg.norm(ets.fkine(qq).A[:3, 3] - p_ours[0]) < 1e-9


def test_inmoov_arm_geometry_fit_serves_the_true_arm():
    """InMoov: 0.3 mm / 0.15 deg noise, zeros 2.5 deg off; the fitted URDF served by the
    solver without a network."""
    arm = ArmModel.load("inmoov_right_arm")
    true = _true(arm, seed=12, zero_rad=math.radians(2.5))
    q = np.random.default_rng(8).uniform(arm.lower, arm.upper, (100, arm.dof))
    rows = measure(true, q, 0.3, 0.15, outliers=0.05, seed=9)
    chain, elements = F.chain_of(arm)
    result = F.fit(chain, rows, 3e-4, math.radians(0.15), F.parameter_names(arm, chain))
    text = F.calibrated_urdf(arm, result.chain, elements)
    calibrated = ArmModel(text, source="<calibrated>", base=arm.base, tip=arm.tip)
    solved, pe = _on_the_true_arm(Solver(calibrated), true, 300, 10)
    _, nominal_pe = _on_the_true_arm(Solver(arm), true, 300, 10)
    assert solved >= 0.99 and np.median(pe) <= 3e-4, (solved, np.median(pe))
    assert np.median(nominal_pe) > 1e-2


def test_bad_measurements_are_named_by_line(tmp_path):
    names = ArmModel.load("niryo_one").joint_names
    head = ",".join(names + ["x", "y", "z", "qx", "qy", "qz", "qw"])
    good = ",".join(["0"] * 6 + ["0.1", "0", "0.2", "0", "0", "0", "1"])
    for text, said in [
        ("a,b\n" + good, "expected the columns joint_1,joint_2"),
        (f"{head}\n{good}\n0,0\n", r":3: 2 values where the header has 13"),
        (f"{head}\n{good}\n" + good.replace("0.1", "x1"), r":3: not a number"),
        (f"{head}\n" + good.replace(",1", ",2"), r":2: the quaternion .* has norm 2.000000"),
        (f"{head}\n" + good.replace("0.1", "nan"), ":2: a value that is not finite"),
        (f"{head}\n", "a header and no rows"),
    ]:
        with pytest.raises(MeasurementError, match=said):
            read_csv(text + "\n", names)
    with pytest.raises(MeasurementError, match="cannot read the measurements"):
        read_csv(str(tmp_path / "missing.csv"), names)
    m = read_csv(f"# a comment\n{head}\n{good}\n", names)
    assert len(m) == 1 and m.lines[0] == 3


def test_refusals_write_nothing(niryo_model, tmp_path):
    arm = model_dir.read(niryo_model).arm
    true = _true(arm, seed=13)
    q = np.random.default_rng(1).uniform(arm.lower, arm.upper, (60, arm.dof))
    rows = measure(true, q, 0.2, 0.1, seed=2)
    few = tmp_path / "few.csv"
    few.write_text(to_csv(rows.subset(np.arange(5)), arm.joint_names))
    out = tmp_path / "out"
    with pytest.raises(F.CalibrationError, match=r"5 measured poses cannot .*\(add 13\)"):
        calibrate(niryo_model, few, out)
    # joints and poses that do not belong together (rows shuffled): no fit beats the nominal
    mixed = rows.subset(np.arange(60))
    order = np.random.default_rng(3).permutation(60)
    mixed.position, mixed.quaternion = mixed.position[order], mixed.quaternion[order]
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text(to_csv(mixed, arm.joint_names))
    with pytest.raises(F.CalibrationError, match="not of a rigid arm like this one"):
        calibrate(niryo_model, shuffled, out)
    # an arm that is its URDF: nothing to gain, and the fit says so rather than overfit
    exact = measure(arm, q, 0.2, 0.1, seed=4)
    same = tmp_path / "same.csv"
    same.write_text(to_csv(exact, arm.joint_names))
    with pytest.raises(F.CalibrationError, match="does not beat the nominal model"):
        calibrate(niryo_model, same, out)
    with pytest.raises(F.CalibrationError, match="never modified"):
        calibrate(niryo_model, few, niryo_model)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_the_command_line(niryo_model, tmp_path, capsys):
    import json

    from robot_ik_nn.cli import main

    true, csv = tmp_path / "true.urdf", tmp_path / "poses.csv"
    assert (
        main(
            [
                "true-arm",
                "niryo_one",
                "--out",
                str(true),
                "--seed",
                "4",
                "--measure",
                "60",
                "--csv",
                str(csv),
            ]
        )
        == 0
    )
    arm = model_dir.read(niryo_model).arm
    assert len(read_csv(str(csv), arm.joint_names)) == 60
    capsys.readouterr()
    out = tmp_path / "calibrated"
    assert (
        main(
            [
                "calibrate",
                str(niryo_model),
                "--measurements",
                str(csv),
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    said = json.loads(capsys.readouterr().out)
    assert said["poses"] == 60 and said["cross_validation"]["calibrated_mm_median"] < 0.5
    assert (
        main(["calibrate", str(niryo_model), "--measurements", str(csv), "--out", str(out)]) == 2
    )  # exists: refused
    assert "exists (use --force" in capsys.readouterr().err
    assert main(["calibrate", "inmoov"]) == 2  # the old servo template's form says where it went
    assert "robot-ik-nn servo-template inmoov" in capsys.readouterr().err
    template = tmp_path / "servos.yaml"
    assert main(["servo-template", "inmoov", "--out", str(template)]) == 0 and template.is_file()
