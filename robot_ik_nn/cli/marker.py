"""``robot-ik-nn marker``: an ArUco marker to print for the camera tracker, at its true size."""

from __future__ import annotations


def cmd_marker(args) -> int:
    from ..calibration.camera import write_marker_file

    path = write_marker_file(
        args.out, args.id, args.size_mm, args.dictionary, args.margin_mm, args.px_per_mm
    )
    how = (
        "print it at 100 % (no fit to page)"
        if path.suffix.lower() == ".pdf"
        else f"{args.px_per_mm:g} px per mm, written in the file as its DPI"
    )
    print(
        f"wrote {path}: {args.dictionary} id {args.id}, {args.size_mm:g} mm from black edge to "
        f"black edge, in a white margin of {args.margin_mm:g} mm; {how}; measure the printed "
        "square and give the tracker that size"
    )
    return 0


def _non_negative(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more, got {text}")
    return value


def register(sub) -> None:
    from ..arg_types import count, count0, positive

    m = sub.add_parser(
        "marker", help="write a printable ArUco marker (PDF or PNG) at its true size"
    )
    m.add_argument("--id", type=count0, required=True, help="the marker's id in its dictionary")
    m.add_argument(
        "--size-mm", type=positive, required=True, help="the black square's edge on paper (mm)"
    )
    m.add_argument("--out", required=True, help="marker.pdf or marker.png")
    m.add_argument("--dictionary", default="DICT_4X4_50", help="OpenCV's ArUco dictionary")
    m.add_argument(
        "--margin-mm", type=_non_negative, default=10.0, help="the white margin around it (mm)"
    )
    m.add_argument(
        "--px-per-mm", type=count, default=12, help="PNG only: pixels per mm (12: 305 DPI)"
    )
    m.set_defaults(func=cmd_marker)
