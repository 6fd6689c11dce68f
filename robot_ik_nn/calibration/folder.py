"""``robot-ik-nn calibrate MODEL --measurements FILE --out DIR``: a calibrated model folder.

The new folder holds the calibrated URDF (robot.urdf: the fitted origins and axes, readable by
any tool), the network as it was (its seeds land within millimetres of the calibrated answers,
and the solver's refinement makes them exact on the calibrated arm), calibration.json (every
parameter with its uncertainty, the poses used and set aside, the cross-validation), report.md
and calibration.png. It is written whole or not at all, and the nominal folder is never touched;
an existing folder (``--force``) is replaced in one step (a kill at any moment leaves the old
folder or the new one), keeping what it holds beside a model's own files.
Refused, with the reason and nothing written: values the measurements check names (units,
quaternion order), too few poses, a fit that does not settle within its bounds, a fit that does
not beat the nominal model on poses it never saw, or one that leaves far more error there than
the tracker's noise explains.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np

from .. import folder_swap, model_dir
from ..arm.model import ArmModel
from . import compliance
from . import fit as F
from . import frame as frames
from .measurements import Measurements, check, read_csv

UNEXPLAINED = 20  # held-out error over this many times the tracker's noise: refused
TIME_LIMIT_S = 300.0  # all the fits of one calibration (good ones take 5-25 s on two cores)


class Stopped(Exception):
    """The caller stopped calibrate (``keep_going`` said so) after the fit: nothing written."""


def calibrate(
    model,
    measurements,
    out,
    noise_mm: float = 0.2,
    noise_deg: float = 0.1,
    force: bool = False,
    say=None,
    frame: str = "base",
    sag: bool = True,
    payload_kg: float = 0.0,
    time_limit_s: float = TIME_LIMIT_S,
    keep_going=None,
) -> dict:
    """Fit, check and write the calibrated folder ``out``; returns the summary.

    ``measurements``: a CSV file (or its text), or the rows themselves (measurements.Measurements,
    joints in the arm's order: what a live session collected). ``keep_going``: called once the
    fit is done, before anything is written; False (a Ctrl-C meanwhile) raises Stopped and
    nothing is written.

    ``sag``: fit each loaded joint's compliance too (the pose-dependent term, compliance.py:
    gravity's torque from the URDF's inertials, plus ``payload_kg`` at the tool); kept, and
    written as compliance.json, only where the poses show it (an arm that does not sag gets a
    rigid folder).

    ``frame="unknown"``: the measured poses are in a tracker's frame whose pose relative to the
    arm's base is not known (eye-to-hand); it is estimated with the rest (frame.py), written
    with its uncertainty into calibration.json and the report, and the calibrated base frame is
    the one the nominal first joint's placement defines.

    The measurements are checked before any fit (measurements.check: units, quaternion order),
    and the fits together may take ``time_limit_s`` (fit.Budget). ``out`` is replaced whole
    (model_dir.write_folder): a kill at any moment leaves the old folder or the new one; what
    the old one holds beside a model's own files is kept, and named in the summary ("kept")."""
    say = say or (lambda text: None)
    source, out = Path(model), Path(out)
    if out.resolve() == source.resolve():
        raise F.CalibrationError("--out is the nominal model folder: it is never modified")
    for line in folder_swap.recover(out):  # a calibrate or train killed while replacing it
        say(line)
    if out.exists() and not force:
        raise F.CalibrationError(f"{out} exists (use --force to replace it)")
    if out.exists() and not out.is_dir():
        raise F.CalibrationError(f"--out {out} is a file, not a folder")
    if not time_limit_s > 0:
        raise F.CalibrationError(f"the time limit must be above 0 s; got {time_limit_s}")
    if not noise_mm > 0 or not noise_deg > 0:
        raise F.CalibrationError("the tracker's noise must be above 0 (--noise-mm, --noise-deg)")
    if frame not in frames.FRAMES:
        raise F.CalibrationError(
            f"frame must be one of {', '.join(frames.FRAMES)} (--frame); got {frame!r}"
        )
    if not (np.isfinite(payload_kg) and payload_kg >= 0):
        raise F.CalibrationError(
            f"the payload must be 0 kg or more (--payload-kg); got {payload_kg}"
        )
    folder = model_dir.read(source)
    arm = folder.arm
    if isinstance(measurements, Measurements):
        m = measurements
    else:
        m = read_csv(measurements, arm.joint_names)
    check(m, arm, frame)  # units, quaternion order: refused by name before any fit
    chain, elements = F.chain_of(arm)
    gravity = compliance.gravity_model(arm, payload_kg) if sag else None
    if gravity is not None and not gravity.mass.sum() > 0:
        gravity = None  # a URDF without inertials says nothing of loads
    need = F.least_poses(chain, frame)  # a compliance adds at most one per loaded joint
    if len(m) < need:
        raise F.CalibrationError(
            f"{len(m)} measured poses cannot determine {chain.size} parameters: at least {need} "
            f"are needed (add {need - len(m)}), spread over every joint's range"
        )
    noise_m, noise_rad = noise_mm / 1000.0, math.radians(noise_deg)
    say(f"fitting {chain.size} parameters to {len(m)} poses")
    budget = F.Budget(time_limit_s)
    names = F.parameter_names(arm, chain)
    result = F.fit(chain, m, noise_m, noise_rad, names, frame, gravity=gravity, budget=budget)
    if result.compliance is not None and not _sags(result, m):
        say("no joint sags beyond the noise: a rigid fit")
        gravity = None
        result = F.fit(chain, m, noise_m, noise_rad, names, frame, budget=budget)
    say("cross-validating")
    cv = F.cross_validate(
        chain, m, noise_m, noise_rad, frame=frame, gravity=gravity, budget=budget
    )
    if frame == "unknown" and cv["calibrated_mm_median"] > UNEXPLAINED * noise_mm:
        raise F.CalibrationError(
            f"the tracker frame{' ' + repr(m.frame) if m.frame else ''} does not match the arm: "
            f"after estimating it, the fit leaves {cv['calibrated_mm_median']:.3f} mm (median) "
            f"on poses it never saw, more than {UNEXPLAINED:g} times the tracker noise given "
            f"({noise_mm} mm). Check that the rows' joints and poses belong together, that every "
            "pose is in that one frame (a tracker that moved during the session does not fit), "
            "and the tracker's noise (--noise-mm); nothing written"
        )
    if cv["calibrated_mm_median"] >= cv["nominal_mm_median"]:
        raise F.CalibrationError(
            f"the fit does not beat the nominal model on poses it never saw (median "
            f"{cv['calibrated_mm_median']:.3f} mm against {cv['nominal_mm_median']:.3f} mm); "
            "nothing written. Check that the joints and poses in the file belong together and "
            f"that the poses are in the base frame ({arm.base})"
        )
    if cv["calibrated_mm_median"] > UNEXPLAINED * noise_mm:
        raise F.CalibrationError(
            f"the fit leaves {cv['calibrated_mm_median']:.3f} mm (median) on poses it never saw, "
            f"more than {UNEXPLAINED:g} times the tracker noise given ({noise_mm} mm): these "
            "measurements are not of a rigid arm like this one (joints and poses mixed up, "
            "poses in another frame, or a noisier tracker: give its noise with --noise-mm); "
            "nothing written"
        )
    text = F.calibrated_urdf(arm, result.chain, elements)
    calibrated = ArmModel(
        text, source=str(out / model_dir.URDF), base=arm.base, tip=arm.tip, name=arm.name
    )
    _check_served_exactly(calibrated, result.chain, m.q, result.compliance)
    summary = _summary(arm, calibrated, m, result, cv, noise_mm, noise_deg, source)
    if result.frame is not None:
        summary["frame"] = frames.describe(result.frame, result.frame_sigma, m.frame)
    if result.compliance is not None:
        summary["compliance"] = _compliance_summary(arm, m, result)
    if keep_going is not None and not keep_going():
        raise Stopped("stopped during the fit; nothing written")
    _write(folder, out, calibrated, summary, result.compliance)
    return summary


def _sags(result, m) -> bool:
    """Whether some joint's fitted compliance is both determined (4 sigma) and felt (its sag at
    the largest load in the poses over 0.01 deg)."""
    comp, sigma = result.compliance, result.compliance_sigma
    load = np.abs(compliance.torques(comp.gravity, m.q)).max(0)
    felt = np.abs(comp.c) * load > math.radians(0.01)
    return bool(np.any((np.abs(comp.c) > 4 * sigma) & felt))


def _compliance_summary(arm, m, result) -> list:
    comp = result.compliance
    load = np.abs(compliance.torques(comp.gravity, m.q)).max(0)
    return [
        {
            "joint": name,
            "c_rad_per_Nm": float(c),
            "sigma_rad_per_Nm": float(s),
            "largest_load_Nm": float(t),
            "sag_deg_at_largest_load": float(np.degrees(c * t)),
        }
        for name, c, s, t in zip(arm.joint_names, comp.c, result.compliance_sigma, load)
    ]


def _check_served_exactly(calibrated: ArmModel, chain, q, comp=None) -> None:
    """The calibrated URDF (and compliance), as the solver serves them, give the fitted poses."""
    from ..ik.solver import Solver
    from .served import CompliantSolver

    solver = Solver(calibrated)
    if comp is not None:
        solver = CompliantSolver.over(solver, comp)
    p, R = solver.forward(q)
    fp, fR = F.forward(chain, q if comp is None else comp.effective(q))
    gap = max(np.abs(p - fp).max(), np.abs(R - fR).max())
    if gap > 1e-9:
        raise RuntimeError(
            f"the calibrated URDF misses the fit by {gap:.2e}: a bug, not your data"
        )


def _summary(arm, calibrated, m, result, cv, noise_mm, noise_deg, source) -> dict:
    params = []
    fixed = result.fixed if result.fixed is not None else np.zeros(len(result.theta), bool)
    for name, value, sigma, held in zip(result.names, result.theta, result.sigma, fixed):
        unit = "mm" if ".origin." in name else "deg"
        k = 1000.0 if unit == "mm" else math.degrees(1.0)
        prior = F.PRIOR["origin_m"] if unit == "mm" else F.PRIOR["turn_rad"]
        params.append(
            {
                "name": name,
                "value": float(value * k),
                "sigma": float(sigma * k),
                "unit": unit,
                # an uncertainty near the prior's spread: the poses do not tell this one apart
                # from others (a shift along parallel axes); the prior holds it near nominal
                "determined": bool(sigma < 0.3 * prior) and not held,
                # held at nominal: with an unknown tracker frame, the first joint's placement
                # defines the base frame (the frame's estimate takes what it would have moved)
                "fixed": bool(held),
            }
        )
    return {
        "nominal_model": str(source.resolve()),
        "nominal_fingerprint": arm.fingerprint,
        "calibrated_fingerprint": calibrated.fingerprint,
        "poses": len(m),
        "poses_used": int(len(result.used)),
        "poses_set_aside": [int(m.lines[i]) for i in result.rejected],
        "noise_assumed": {"mm": noise_mm, "deg": noise_deg},
        "cross_validation": cv,
        "parameters": params,
    }


def _write(folder, out: Path, calibrated: ArmModel, summary: dict, comp) -> None:
    meta = dict(folder.meta)
    meshes = folder.meta.get("urdf_source") or str(folder.arm.source)  # where meshes are found
    meta.update(calibrated.describe())
    meta["urdf_source"] = meshes
    meta["calibration"] = {
        k: summary[k]
        for k in (
            "nominal_model",
            "nominal_fingerprint",
            "poses",
            "poses_used",
            "cross_validation",
        )
    }
    if "frame" in summary:
        meta["calibration"]["frame"] = summary["frame"]
    if comp is not None:
        meta["calibration"]["compliance"] = compliance.FILE

    def fill(work: Path) -> None:
        shutil.copyfile(folder.path / model_dir.WEIGHTS, work / model_dir.WEIGHTS)
        (work / model_dir.URDF).write_text(calibrated.urdf_text)
        (work / "calibration.json").write_text(json.dumps(summary, indent=2) + "\n")
        if comp is not None:  # what the solver reads (calibration/served.py)
            record = comp.to_dict(calibrated.joint_names)
            (work / compliance.FILE).write_text(json.dumps(record, indent=2) + "\n")
        (work / model_dir.REPORT).write_text(report(summary))
        png = _picture(summary)
        if png is not None:
            (work / "calibration.png").write_bytes(png)
        (work / model_dir.META).write_text(json.dumps(meta, indent=2) + "\n")

    # whole: the old folder stays until the new one is complete, then the two swap in one step;
    # what the old one holds beside a model's own files is kept (and named in the summary)
    summary["kept"] = model_dir.write_folder(out, fill)


def report(s: dict) -> str:
    cv = s["cross_validation"]
    lines = [
        "# Calibration",
        "",
        f"From {s['poses']} measured poses ({s['poses_used']} used; set aside as gross "
        f"outliers: {len(s['poses_set_aside'])}, lines {s['poses_set_aside'] or '-'}), "
        f"tracker noise assumed {s['noise_assumed']['mm']} mm / {s['noise_assumed']['deg']} deg.",
        "",
        f"Tool-pose error on poses each fit never saw ({cv['folds']}-fold cross-validation, "
        f"{cv['held_out_poses']} poses; the measurement noise is in these figures):",
        "",
        "| model | median (mm) | p95 (mm) | median (deg) |",
        "|---|---|---|---|",
        f"| nominal URDF | {cv['nominal_mm_median']:.3f} | {cv['nominal_mm_p95']:.3f} | "
        f"{cv['nominal_deg_median']:.3f} |",
        f"| calibrated | {cv['calibrated_mm_median']:.3f} | {cv['calibrated_mm_p95']:.3f} | "
        f"{cv['calibrated_deg_median']:.3f} |",
        "",
        'Each parameter with its uncertainty; "prior": the poses cannot tell it apart from '
        "others (a shift along parallel axes, say), so the fit keeps it near the nominal value "
        "and the tool pose depends only on what it shares with them.",
        "",
    ]
    if "frame" in s:
        fr, sg = s["frame"]["tracker_from_base"], s["frame"]["sigma"]
        lines[-1:-1] = [
            "",
            f"The tracker's frame ({s['frame']['tracker_frame']}) was estimated with the arm: "
            f"the base seen from it at xyz {', '.join(f'{v:.4f}' for v in fr['xyz_m'])} m, "
            f"quaternion {', '.join(f'{v:.5f}' for v in fr['quaternion_xyzw'])} (x y z w); "
            f"uncertainty (1 sigma) {', '.join(f'{v:.3f}' for v in sg['shift_mm'])} mm and "
            f"{', '.join(f'{v:.4f}' for v in sg['turn_deg'])} deg. The calibrated base frame is "
            "the one the nominal first joint's placement defines (its parameters are held: "
            "fixed); a turn about that joint's axis is shared with the next joints' placements, "
            "so its uncertainty there is the prior's. Give the solver targets measured by the "
            "tracker through this transform (robot_ik_nn.calibration.frame.to_base).",
        ]
    if "compliance" in s:
        lines += [
            "",
            "Joint compliance (the pose-dependent term: each joint sags by its compliance times "
            "gravity's torque about it; served: the solver answers joints to command):",
            "",
            "| joint | compliance (rad/N m) | 1 sigma | largest load (N m) | sag there (deg) |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {c['joint']} | {c['c_rad_per_Nm']:.3g} | {c['sigma_rad_per_Nm']:.2g} | "
            f"{c['largest_load_Nm']:.3f} | {c['sag_deg_at_largest_load']:.3f} |"
            for c in s["compliance"]
        ]
        lines.append("")
    lines += ["| parameter | value | uncertainty (1 sigma) | |", "|---|---|---|---|"]
    for p in s["parameters"]:
        lines.append(
            f"| {p['name']} | {p['value']:+.3f} {p['unit']} | {p['sigma']:.3f} {p['unit']} | "
            f"{'fixed' if p.get('fixed') else '' if p['determined'] else 'prior'} |"
        )
    return "\n".join(lines) + "\n"


def _picture(s: dict) -> bytes | None:
    try:
        import matplotlib
    except ImportError:  # the base install: the report says it in words
        return None
    import io

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    cv = s["cross_validation"]
    fig = Figure(figsize=(5, 3), dpi=100)
    ax = fig.add_subplot()
    names = ["nominal", "calibrated"]
    ax.bar(names, [cv["nominal_mm_median"], cv["calibrated_mm_median"]], label="median")
    ax.bar(names, [cv["nominal_mm_p95"], cv["calibrated_mm_p95"]], alpha=0.3, label="p95")
    ax.set_ylabel("tool position error on held-out poses (mm)")
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
