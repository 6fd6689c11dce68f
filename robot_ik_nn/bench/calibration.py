"""`robot-ik-nn bench MODEL --calibration`: answers on a true arm, before and after calibration.

The true arm is the model's URDF perturbed (calibration/true_arm.py: origins 1.5 mm, axes 0.3°,
zeros 1°, a seed the fit never sees); PyBullet holds it, the simulated tracker measures it
(0.2 mm / 0.1° noise), and every answer is put back through PyBullet on it: solved means 1 mm
and 0.01 rad from the target there, the joints within limits. Rows: the nominal model; the
model calibrated from 10, 20, 50, 100 and 200 poses (``calibrate`` itself, refusals included);
100 poses of which 5 % are gross outliers (2-10 cm off); TRAC-IK and ik_LM given the calibrated
URDF (what other tools gain from it).

Then the same on a sagging true arm (rows "sagging arm: ..."): the perturbed URDF with its loaded
joints held by a finite stiffness (``sag_deg`` at each joint's largest load, 0.3° by default) in
PyBullet's physics (ArmSim.forward_held), measured and judged physics-on: the answers are
commanded and the arm settles where its servos meet its weight. Rows with the pose-dependent
term (calibrate's default: each joint's compliance) and without it (``sag=False``), and the
single-target median solve time with the compliance served and without it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

POSES = (10, 20, 50, 100, 200)


def measure(
    model,
    targets: int = 1000,
    peer_targets: int = 300,
    seed: int = 2026,
    say=None,
    sag_deg: float = 0.3,
    poses=POSES,
) -> dict:

    from .. import model_dir
    from ..arm.model import ArmModel
    from ..calibration.true_arm import perturb
    from ..hardware.pybullet_arm import ArmSim
    from ..hardware.tracker import sag_stiffness
    from ..ik.solver import Solver

    say = say or (lambda text: None)
    arm = model_dir.read(model).arm
    inmoov = "inmoov" in arm.name
    zero_deg, noise = (2.5, (0.3, 0.15)) if inmoov else (1.0, (0.2, 0.1))
    text = perturb(arm, seed, zero_rad=np.radians(zero_deg))
    true = ArmModel(text, source="<true arm>", base=arm.base, tip=arm.tip)
    true.mesh_dirs += arm.mesh_dirs
    rng = np.random.default_rng(seed + 1)
    q = rng.uniform(arm.lower + 0.02, arm.upper - 0.02, (targets, arm.dof))
    out = {
        "robot": arm.name,
        "true_arm": {"seed": seed, "origin_mm": 1.5, "axis_deg": 0.3, "zero_deg": zero_deg},
        "noise": {"mm": noise[0], "deg": noise[1]},
        "rows": {},
    }
    stiff = None
    if sag_deg > 0:
        stiff = sag_stiffness(arm, sag_deg)
        out["true_arm"]["sag_deg"] = sag_deg
        out["true_arm"]["stiffness_Nm_per_rad"] = [float(k) for k in stiff]
    work = Path(tempfile.mkdtemp(prefix="robot_ik_nn_calibration_bench_"))
    try:
        for label, K in (("", None), ("sagging arm: ", stiff)):
            if label and K is None:
                continue
            with ArmSim(true, stiffness=K) as sim:
                P, quat = sim.forward(q) if K is None else sim.forward_held(q)[:2]

            def judged(answers, P=P, quat=quat, K=K) -> dict:
                n = len(answers)
                return _on_true_arm(true, arm, answers, P[:n], quat[:n], K)

            say(f"{label}the nominal model on the true arm")
            out["rows"][label + "nominal"] = judged(Solver.load(model).solve_batch(P, quat).q)
            case = (label, K, noise, work, seed, peer_targets, P, quat, judged, say, poses)
            _rows(out, model, arm, true, *case)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _rows(out, model, arm, true, label, K, noise, work, seed, peer_targets, P, quat, judged,
          say, poses) -> None:
    """The calibrated rows and the peers' (see the module docstring)."""
    from scipy.spatial.transform import Rotation

    from .. import model_dir
    from ..calibration.fit import CalibrationError
    from ..calibration.folder import calibrate
    from ..calibration.measurements import to_csv
    from ..hardware.tracker import measure as track
    from ..ik.solver import Solver
    from . import peers

    cases = [(n, 0.0, True) for n in poses] + [(100, 0.05, True)]
    if K is not None:
        cases.append((100, 0.0, False))
    calibrated_100 = None
    for n, outliers, sag in cases:
        name = label + f"calibrated, {n} poses" + (", 5 % outliers" if outliers else "")
        name += "" if sag else ", without the pose-dependent term"
        say(name)
        poses = np.random.default_rng(seed + 2 + n).uniform(arm.lower, arm.upper, (n, arm.dof))
        rows = track(true, poses, *noise, outliers, seed=seed + 3 + n, stiffness=K)
        csv = work / f"poses_{label[:3]}{n}_{outliers}.csv"
        csv.write_text(to_csv(rows, arm.joint_names))
        folder = work / f"calibrated_{label[:3]}{n}_{outliers}_{sag}"
        started = time.perf_counter()
        try:
            summary = calibrate(model, csv, folder, *noise, sag=sag)
        except CalibrationError as err:
            out["rows"][name] = {"refused": str(err)}
            continue
        seconds = time.perf_counter() - started
        served = Solver.load(folder)
        row = judged(served.solve_batch(P, quat).q)
        row.update(calibrate_s=seconds, set_aside=len(summary["poses_set_aside"]))
        if summary.get("compliance"):
            row["sag_deg_fitted"] = [c["sag_deg_at_largest_load"] for c in summary["compliance"]]
        out["rows"][name] = row
        if n == 100 and not outliers and sag:
            calibrated_100 = folder
            if getattr(served, "rigid", None) is not None:
                out[label + "single_target_ms"] = _single_times(served, P, quat)
    if calibrated_100 is not None and peer_targets > 0:
        calibrated_arm = model_dir.read(calibrated_100).arm
        for peer in ("trac_ik", "rtb_ik_lm"):
            solver, note = peers.make(peer, calibrated_arm, 0.005)
            if solver is None:
                out["rows"][label + peer] = {"skipped": note}
                continue
            say(f"{solver.name}, given the calibrated URDF")
            R = Rotation.from_quat(quat[:peer_targets]).as_matrix()
            answers = np.full((peer_targets, arm.dof), np.nan)
            for i in range(peer_targets):
                got = solver.solve(P[i], quat[i], R[i])
                if got is not None:
                    answers[i] = got
            out["rows"][f"{label}{solver.name}, calibrated URDF (100 poses)"] = judged(answers)


def _single_times(served, P, quat, n: int = 300) -> dict:
    """Median milliseconds of one ``solve`` with the compliance served and without it (the
    same rigid calibrated solver underneath), over the same targets, alternating."""
    rigid = served.rigid
    for s in (served, rigid):
        s.solve(P[0], quat[0])  # compiled before it is timed
    times = {"compensated": [], "rigid": []}
    for i in range(min(n, len(P))):
        for key, s in (("compensated", served), ("rigid", rigid)):
            started = time.perf_counter()
            s.solve(P[i], quat[i])
            times[key].append(time.perf_counter() - started)
    out = {k: float(np.median(v) * 1e3) for k, v in times.items()}
    out["ratio"] = out["compensated"] / out["rigid"]
    return out


def _on_true_arm(true, arm, answers, P, quat, K=None) -> dict:
    """The answers put through PyBullet on the true arm (physics-on with stiffness ``K``: the
    answers commanded, the arm settled): solved (1 mm, 0.01 rad, within the limits) and the
    position errors."""
    from scipy.spatial.transform import Rotation

    from ..hardware.pybullet_arm import ArmSim

    answered = np.all(np.isfinite(answers), axis=1)
    with ArmSim(true, stiffness=K) as sim:
        if K is None:
            reached, rq = sim.forward(np.nan_to_num(answers))
        else:
            reached, rq, _ = sim.forward_held(np.nan_to_num(answers))
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
    sag = r["true_arm"].get("sag_deg")
    lines = [
        f"{r['robot']}: a true arm (origins {r['true_arm']['origin_mm']} mm, axes "
        f"{r['true_arm']['axis_deg']} deg, zeros {r['true_arm']['zero_deg']} deg off"
        + (f"; the sagging arm's loaded joints also sag up to {sag} deg under gravity, "
           "PyBullet physics-on" if sag else "")
        + f"), measured with {r['noise']['mm']} mm / {r['noise']['deg']} deg noise; answers "
        "judged on it",
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
    for key, t in r.items():
        if key.endswith("single_target_ms"):
            lines += [
                "",
                f"{key.replace('single_target_ms', '')}one target, median: "
                f"{t['compensated']:.3f} ms with the compliance served, {t['rigid']:.3f} ms "
                f"without ({t['ratio']:.2f}x)",
            ]
    return "\n".join(lines)


def picture(r: dict, path) -> None:
    """The median error against the number of poses, the nominal model's beside it (PNG)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.2), dpi=100)
    ax = fig.add_subplot()
    ticks = set()
    for label, style in (("", "o-"), ("sagging arm: ", "s-")):
        points = [(n, r["rows"].get(f"{label}calibrated, {n} poses", {})) for n in POSES]
        points = [(n, row["mm_median"]) for n, row in points if "mm_median" in row]
        ticks.update(n for n, _ in points)
        if points:
            ax.plot(
                [n for n, _ in points],
                [v for _, v in points],
                style,
                label=f"calibrated{', sagging arm' if label else ''}",
            )
    points = [(n, None) for n in sorted(ticks)]
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
