"""``robot-ik-nn calibrate`` (a calibrated model folder from measured tool poses) and
``true-arm`` (a perturbed arm to calibrate against in simulation)."""

from __future__ import annotations

import json
import sys

from ..arg_types import count


def cmd_calibrate(args) -> int:
    if args.measurements is None or args.out is None:
        if args.model == "inmoov":
            raise ValueError(
                "the servo calibration template moved: robot-ik-nn servo-template inmoov "
                "[--out FILE.yaml]; calibrate fits measured tool poses: calibrate MODEL "
                "--measurements FILE.csv --out DIR"
            )
        raise ValueError("calibrate needs --measurements FILE.csv and --out DIR")
    from ..calibration.folder import calibrate

    def say(text):
        if not args.json:
            print(f"calibrate: {text}", file=sys.stderr, flush=True)

    summary = calibrate(
        args.model,
        args.measurements,
        args.out,
        args.noise_mm,
        args.noise_deg,
        args.force,
        say,
        frame=args.frame,
        sag=not args.rigid,
        payload_kg=args.payload_kg,
        time_limit_s=args.time_limit,
    )
    if args.json:
        print(json.dumps(summary))
        return 0
    cv = summary["cross_validation"]
    print(
        f"wrote {args.out}: {summary['poses_used']} of {summary['poses']} poses used "
        f"({len(summary['poses_set_aside'])} set aside as gross outliers); on held-out poses "
        f"the tool is {cv['calibrated_mm_median']:.3f} mm from its measured place (median), "
        f"{cv['nominal_mm_median']:.3f} mm with the nominal URDF. Report: {args.out}/report.md"
    )
    if summary.get("kept"):
        print(f"kept from the folder it replaced: {', '.join(summary['kept'])}")
    if summary.get("compliance"):
        sags = ", ".join(
            f"{c['joint']} {c['sag_deg_at_largest_load']:.2f} deg"
            for c in summary["compliance"]
            if abs(c["sag_deg_at_largest_load"]) >= 0.01
        )
        print(f"joints that sag under load (at the largest load measured): {sags or 'none'}")
    return 0


def cmd_true_arm(args) -> int:
    import math
    from pathlib import Path

    from ..arm.model import ArmModel
    from ..calibration.measurements import to_csv
    from ..calibration.true_arm import perturb
    from ..model_dir import atomic_write

    if args.measure and not args.csv:
        raise ValueError("--measure N writes its rows to --csv FILE: give it")
    if not (math.isfinite(args.sag_deg) and args.sag_deg >= 0):
        raise ValueError(f"--sag-deg must be 0 or more; got {args.sag_deg}")
    if args.sag_deg and not args.measure:
        raise ValueError(
            "--sag-deg is a property of the measured arm, not of its URDF: give --measure N "
            "--csv FILE too"
        )
    arm = ArmModel.load(args.robot)
    text = perturb(
        arm,
        args.seed,
        args.origin_mm / 1000,
        math.radians(args.axis_deg),
        math.radians(args.zero_deg),
    )
    atomic_write(Path(args.out), text.encode())
    print(
        f"wrote {args.out}: {arm.name} with origins {args.origin_mm} mm, axes "
        f"{args.axis_deg} deg, zeros {args.zero_deg} deg off (seed {args.seed})"
    )
    if args.measure:
        import numpy as np

        from ..hardware.tracker import measure, sag_stiffness

        true = ArmModel(text, source=str(Path(args.out).resolve()), base=arm.base, tip=arm.tip)
        true.mesh_dirs += arm.mesh_dirs
        q = np.random.default_rng(args.seed + 1).uniform(
            arm.lower, arm.upper, (args.measure, arm.dof)
        )
        stiffness = sag_stiffness(true, args.sag_deg) if args.sag_deg else None
        rows = measure(
            true,
            q,
            args.noise_mm,
            args.noise_deg,
            args.outliers,
            seed=args.seed,
            stiffness=stiffness,
        )
        atomic_write(Path(args.csv), to_csv(rows, arm.joint_names).encode())
        sagging = ""
        if stiffness is not None:
            soft = [n for n, k in zip(arm.joint_names, stiffness) if np.isfinite(k)]
            sagging = (
                f", held by a stiffness under which {', '.join(soft)} sag up to "
                f"{args.sag_deg} deg at their largest load (gravity, PyBullet physics-on)"
            )
        print(f"wrote {args.csv}: {args.measure} measured poses of it{sagging}")
    return 0


def register(sub) -> None:
    k = sub.add_parser(
        "calibrate",
        help="fit the arm you have from measured tool poses: a calibrated model folder",
    )
    k.add_argument("model", help="the nominal model folder (never modified)")
    k.add_argument(
        "--measurements",
        metavar="CSV",
        help="joints then x,y,z,qx,qy,qz,qw per row: the measured tool pose in the base frame",
    )
    k.add_argument("--out", help="the calibrated model folder to write")
    k.add_argument("--noise-mm", type=float, default=0.2, help="the tracker's position noise")
    k.add_argument("--noise-deg", type=float, default=0.1, help="its orientation noise")
    k.add_argument("--force", action="store_true", help="replace an existing --out")
    k.add_argument(
        "--frame",
        choices=("base", "unknown"),
        default="base",
        help="the frame the measured poses are in: the arm's base, or a tracker's frame whose "
        "pose is unknown (eye-to-hand: estimated with the rest)",
    )
    k.add_argument(
        "--rigid",
        action="store_true",
        help="fit the geometry only, no joint compliance (the pose-dependent sag under load)",
    )
    k.add_argument(
        "--payload-kg", type=float, default=0.0, help="a load carried at the tool (sag model)"
    )
    k.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds all the fits may take together (refused, nothing written, beyond)",
    )
    k.add_argument("--json", action="store_true", help="the summary as one JSON object")
    k.set_defaults(func=cmd_calibrate)

    a = sub.add_parser(
        "true-arm",
        help="a perturbed copy of an arm's URDF (origins, axes, joint zeros) to calibrate "
        "against in simulation, and measured poses of it",
    )
    a.add_argument("robot", help="an arm's name or URDF path")
    a.add_argument("--out", required=True, help="the perturbed URDF to write")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--origin-mm", type=float, default=1.5, help="each joint origin moved by")
    a.add_argument("--axis-deg", type=float, default=0.3, help="each joint axis tilted by")
    a.add_argument("--zero-deg", type=float, default=1.0, help="each joint's zero off by")
    a.add_argument("--measure", type=count, default=0, metavar="N", help="N measured poses")
    a.add_argument("--csv", help="where to write them (the calibrate --measurements format)")
    a.add_argument("--noise-mm", type=float, default=0.2)
    a.add_argument("--noise-deg", type=float, default=0.1)
    a.add_argument("--outliers", type=float, default=0.0, help="fraction of rows 2-10 cm off")
    a.add_argument(
        "--sag-deg",
        type=float,
        default=0.0,
        metavar="DEG",
        help="with --measure: the arm's loaded joints held by a stiffness under which each sags "
        "this much at its largest gravity load (a soft-servo arm, PyBullet physics-on); 0: rigid",
    )
    a.set_defaults(func=cmd_true_arm)
