"""The command line's hardware words: ``servo-template`` (a servo calibration file to start from)
and ``emulate`` (an emulated arm speaking a real protocol, for dry runs)."""

from __future__ import annotations

import sys
from pathlib import Path


def cmd_servo_template(args) -> int:
    from ..arm.model import ArmModel
    from ..model_dir import atomic_write
    from .calibration import load_calibration, template

    arm = ArmModel.load(args.robot or "inmoov_right_arm")
    text = template(arm)
    load_calibration(text, arm)  # what we write, we can read back
    if args.out in (None, "-"):
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    if out.exists() and not args.force:
        print(
            f"robot-ik-nn servo-template: {out} exists (use --force to replace it)",
            file=sys.stderr,
        )
        return 2
    atomic_write(out, text.encode())
    print(f"wrote {out}: check every servo's range, gain and offset on your arm before moving it")
    return 0


def register(sub) -> None:
    from .emulators import add_parser as add_emulate

    c = sub.add_parser(
        "servo-template",
        help="write a commented servo calibration file to start from (InMoov: each servo's "
        "range, gain and offset)",
    )
    c.add_argument("arm", choices=["inmoov"], help="the servo-driven arm")
    c.add_argument("--robot", default="", help="its URDF (default: inmoov_right_arm)")
    c.add_argument("--out", help="file to write (default: print it)")
    c.add_argument("--force", action="store_true", help="replace an existing file")
    c.set_defaults(func=cmd_servo_template)
    add_emulate(sub)
