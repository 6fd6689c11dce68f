"""``robot-ik-nn collisions``: the link pairs checked for self-collision, as an SRDF to edit."""

from __future__ import annotations

import json


def cmd_collisions(args) -> int:
    from pathlib import Path

    from ..arm.model import ArmModel
    from ..ik.collision import CollisionModel

    if (Path(args.robot) / "model.json").is_file():  # a model folder: the arm it was trained for
        from .. import model_dir

        arm = model_dir.read(args.robot).arm
    else:
        arm = ArmModel.load(args.robot, base=args.base, tip=args.tip)
    model = CollisionModel.from_arm(arm, margin=args.margin, srdf=args.pairs)
    srdf = model.to_srdf(arm.name)
    if args.out:
        from ..model_dir import atomic_write

        atomic_write(Path(args.out), srdf.encode())
    if args.json:
        print(
            json.dumps(
                {
                    **model.describe(),
                    "checked": sorted(model.enabled_link_pairs),
                    "left_out": [[a, b, why] for (a, b), why in sorted(model.disabled.items())],
                }
            )
        )
        return 0
    print(
        f"{arm.name}: {len(model.shapes)} collision shapes on {len(set(model.shape_links))} "
        f"links, margin {model.margin} m"
    )
    print(f"checked ({len(model.enabled_link_pairs)} link pairs):")
    for a, b in sorted(model.enabled_link_pairs):
        print(f"  {a} - {b}")
    print(f"left out ({len(model.disabled)}; edit the SRDF to change this):")
    for (a, b), why in sorted(model.disabled.items(), key=lambda kv: (kv[1], kv[0])):
        print(f"  {a} - {b}: {why}")
    if args.out:
        print(
            f"written: {args.out} (use it: solve --collision-pairs {args.out}, "
            "IKSettings(collision_pairs=...), or the inference node's collision_pairs)"
        )
    return 0



def register(sub) -> None:
    c = sub.add_parser(
        "collisions",
        help="the link pairs checked for self-collision and those left out, as an SRDF to edit",
    )
    c.add_argument("robot", help="an arm's name, a URDF path or a model folder")
    c.add_argument("--base", help="base link (default: the URDF's root)")
    c.add_argument("--tip", help="tip link (default: the only leaf)")
    c.add_argument("--margin", type=float, default=0.0, help="distance kept between surfaces (m)")
    c.add_argument("--pairs", help="read the pairs left out from this SRDF instead of sampling")
    c.add_argument("--out", help="write the pairs left out here as an SRDF (disable_collisions)")
    c.add_argument("--json", action="store_true", help="one JSON object")
    c.set_defaults(func=cmd_collisions)
