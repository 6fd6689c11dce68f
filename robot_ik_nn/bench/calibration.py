"""`robot-ik-nn bench MODEL --calibration`: answers on a true arm, before and after calibration.

The true arm is the model's URDF perturbed (calibration/true_arm.py: origins 1.5 mm, axes 0.3°,
zeros 1°, a seed the fit never sees); PyBullet holds it, the simulated tracker measures it
(0.2 mm / 0.1° noise), and every answer is put back through PyBullet on it: solved means 1 mm
and 0.01 rad from the target there, the joints within limits. Rows: the nominal model; the
model calibrated from 10, 20, 50, 100 and 200 poses (``calibrate`` itself, refusals included);
100 poses of which 5 % are gross outliers (2-10 cm off); TRAC-IK and ik_LM given the calibrated
URDF (what other tools gain from it).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

POSES = (10, 20, 50, 100, 200)


def measure(
    model, targets: int = 1000, peer_targets: int = 300, seed: int = 2026, say=None
) -> dict:

    from .. import model_dir
    from ..arm.model import ArmModel
    from ..calibration.true_arm import perturb
    from ..hardware.pybullet_arm import ArmSim
    from ..ik.solver import Solver

    say = say or (lambda text: None)
    arm = model_dir.read(model).arm
    true = ArmModel(perturb(arm, seed), source="<true arm>", base=arm.base, tip=arm.tip)
    true.mesh_dirs += arm.mesh_dirs
    rng = np.random.default_rng(seed + 1)
    q = rng.uniform(arm.lower + 0.02, arm.upper - 0.02, (targets, arm.dof))
    with ArmSim(true) as sim:
        P, quat = sim.forward(q)

    def judged(answers) -> dict:
        return _on_true_arm(true, arm, answers, P[: len(answers)], quat[: len(answers)])

    out = {
        "robot": arm.name,
        "true_arm": {"seed": seed, "origin_mm": 1.5, "axis_deg": 0.3, "zero_deg": 1.0},
        "noise": {"mm": 0.2, "deg": 0.1},
        "rows": {},
    }
    say("the nominal model on the true arm")
    out["rows"]["nominal"] = judged(Solver.load(model).solve_batch(P, quat).q)
    work = Path(tempfile.mkdtemp(prefix="robot_ik_nn_calibration_bench_"))
    try:
        _rows(out, model, arm, true, work, seed, peer_targets, P, quat, judged, say)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _rows(out, model, arm, true, work, seed, peer_targets, P, quat, judged, say) -> None:
    """The calibrated rows and the peers' (see the module docstring)."""
    from scipy.spatial.transform import Rotation

    from .. import model_dir
    from ..calibration.fit import CalibrationError
    from ..calibration.folder import calibrate
    from ..calibration.measurements import to_csv
    from ..hardware.tracker import measure as track
    from ..ik.solver import Solver
    from . import peers

    cases = [(n, 0.0) for n in POSES] + [(100, 0.05)]
    calibrated_100 = None
    for n, outliers in cases:
        name = f"calibrated, {n} poses" + (", 5 % outliers" if outliers else "")
        say(name)
        poses = np.random.default_rng(seed + 2 + n).uniform(arm.lower, arm.upper, (n, arm.dof))
        rows = track(true, poses, 0.2, 0.1, outliers, seed=seed + 3 + n)
        csv = work / f"poses_{n}_{outliers}.csv"
        csv.write_text(to_csv(rows, arm.joint_names))
        folder = work / f"calibrated_{n}_{outliers}"
        started = time.perf_counter()
        try:
            summary = calibrate(model, csv, folder)
        except CalibrationError as err:
            out["rows"][name] = {"refused": str(err)}
            continue
        seconds = time.perf_counter() - started
        row = judged(Solver.load(folder).solve_batch(P, quat).q)
        row.update(calibrate_s=seconds, set_aside=len(summary["poses_set_aside"]))
        out["rows"][name] = row
        if n == 100 and not outliers:
            calibrated_100 = folder
    if calibrated_100 is not None and peer_targets > 0:
        calibrated_arm = model_dir.read(calibrated_100).arm
        for peer in ("trac_ik", "rtb_ik_lm"):
            solver, note = peers.make(peer, calibrated_arm, 0.005)
            if solver is None:
                out["rows"][peer] = {"skipped": note}
                continue
            say(f"{solver.name}, given the calibrated URDF")
            R = Rotation.from_quat(quat[:peer_targets]).as_matrix()
            answers = np.full((peer_targets, arm.dof), np.nan)
            for i in range(peer_targets):
                got = solver.solve(P[i], quat[i], R[i])
                if got is not None:
                    answers[i] = got
            out["rows"][f"{solver.name}, calibrated URDF (100 poses)"] = judged(answers)


def _on_true_arm(true, arm, answers, P, quat) -> dict:
    """The answers put through PyBullet on the true arm: solved (1 mm, 0.01 rad, within the
    limits) and the position errors."""
    from scipy.spatial.transform import Rotation

    from ..hardware.pybullet_arm import ArmSim

    answered = np.all(np.isfinite(answers), axis=1)
    with ArmSim(true) as sim:
        reached, rq = sim.forward(np.nan_to_num(answers))
    pe = np.linalg.norm(reached - P, axis=1)
    re = (Rotation.from_quat(rq) * Rotation.from_quat(quat).inv()).magnitude()
    ok = answered & (pe <= 1e-3) & (re <= 0.01) & arm.within_limits(np.nan_to_num(answers))
    return {
        "targets": len(answers),
        "solved_on_the_true_arm": float(ok.mean()),
        "mm_median": float(np.median(pe[answered]) * 1e3) if answered.any() else float("nan"),
        "mm_p95": float(np.percentile(pe[answered], 95) * 1e3) if answered.any() else float("nan"),
    }


def format_table(r: dict) -> str:
    lines = [
        f"{r['robot']}: a true arm (origins {r['true_arm']['origin_mm']} mm, axes "
        f"{r['true_arm']['axis_deg']} deg, zeros {r['true_arm']['zero_deg']} deg off), measured "
        f"with {r['noise']['mm']} mm / {r['noise']['deg']} deg noise; answers judged on it",
        "",
        "| model | solved on the true arm | median (mm) | p95 (mm) | calibrate (s) |",
        "|---|---|---|---|---|",
    ]
    for name, row in r["rows"].items():
        if "refused" in row or "skipped" in row:
            lines.append(f"| {name} | {row.get('refused') or row.get('skipped')} | | | |")
            continue
        secs = f"{row['calibrate_s']:.1f}" if "calibrate_s" in row else ""
        lines.append(
            f"| {name} | {row['solved_on_the_true_arm'] * 100:.1f} % of {row['targets']:,} | "
            f"{row['mm_median']:.3f} | {row['mm_p95']:.3f} | {secs} |"
        )
    return "\n".join(lines)


def picture(r: dict, path) -> None:
    """The median error against the number of poses, the nominal model's beside it (PNG)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    points = [(n, r["rows"].get(f"calibrated, {n} poses", {})) for n in POSES]
    points = [(n, row["mm_median"]) for n, row in points if "mm_median" in row]
    fig = Figure(figsize=(5.5, 3.2), dpi=100)
    ax = fig.add_subplot()
    if points:
        ax.plot([n for n, _ in points], [v for _, v in points], "o-", label="calibrated")
    ax.axhline(r["rows"]["nominal"]["mm_median"], color="gray", ls="--", label="nominal URDF")
    ax.axhline(1.0, color="red", lw=0.8, label="1 mm: solved")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([n for n, _ in points], [str(n) for n, _ in points])
    ax.minorticks_off()
    ax.set_xlabel("measured poses")
    ax.set_ylabel("median tool error on the true arm (mm)")
    ax.set_title(f"{r['robot']}: calibration from measured poses")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
