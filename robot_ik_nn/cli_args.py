"""The ``robot-ik-nn`` command line's arguments (cli.py holds what each command does)."""

from __future__ import annotations

import argparse
import math


def _count(text: str) -> int:
    """A whole number of at least 1 (a count of targets, steps, processes ...)."""
    return _whole(text, 1)


def _count0(text: str) -> int:
    """A whole number of at least 0."""
    return _whole(text, 0)


def port(text: str) -> int:
    """A TCP port: a whole number from 1 to 65535."""
    value = _whole(text, 1)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is at most 65535, got {value}")
    return value


def _positive(text: str) -> float:
    """A finite number above 0 (minutes, seconds, milliseconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def parser(commands: dict, description: str) -> argparse.ArgumentParser:
    """The command line's words; ``commands`` maps each sub-command to the function it runs."""
    from .ik.settings import ORDERS
    from .learn.learners import LEARNERS

    p = argparse.ArgumentParser(
        prog="robot-ik-nn",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--threads",
        type=_count,
        default=None,
        help="CPU threads for batches and training (default: all cores)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train an IK network by reward")
    t.add_argument(
        "--robot",
        default="niryo_one",
        help="niryo_one, inmoov_right_arm, franka_panda, kuka_iiwa or a URDF path",
    )
    t.add_argument("--base", help="base link (default: the URDF's root)")
    t.add_argument(
        "--tip", help="tip link (default: the only leaf; required when the tree branches)"
    )
    t.add_argument(
        "--mode",
        choices=["pose", "position"],
        default="pose",
        help="targets with an orientation (pose) or positions alone",
    )
    t.add_argument(
        "--learner",
        choices=LEARNERS,
        default="gradient",
        help="how the network learns by reward (README: Learners)",
    )
    t.add_argument("--minutes", type=_positive, help="time budget (default 5)")
    t.add_argument("--steps", type=_count, help="step budget (reproducible with --seed)")
    t.add_argument("--device", default="cpu", help="cpu or cuda")
    t.add_argument("--out", help="model folder (default models/<robot>)")
    t.add_argument(
        "--resume", action="store_true", help="continue the run in --out from its checkpoint"
    )
    t.add_argument("--force", action="store_true", help="start over even if --out holds a run")
    t.add_argument("--seed", type=int, default=0, help="random seed (targets, weights, trials)")
    t.add_argument(
        "--hidden",
        type=_count,
        nargs="+",
        default=None,
        help="hidden layer widths (default 128 128; evolution: 32 32)",
    )
    t.add_argument(
        "--heads",
        type=_count,
        default=None,
        help="candidate branches the network proposes per target (default 4; explore and "
        "evolution: 1)",
    )
    t.add_argument("--batch-size", type=_count, help="targets per step (default: the learner's)")
    t.add_argument(
        "--learn",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="learner hyper-parameters (LearnConfig), e.g. population=128 sigma=0.03",
    )
    t.add_argument(
        "--novelty", type=float, help="evolution: weight of novelty search (default 0: off)"
    )
    t.add_argument("--init", metavar="MODEL_DIR", help="start from this model's weights")
    t.add_argument(
        "--nproc", type=_count, help="train in N processes (torchrun, DistributedDataParallel)"
    )
    t.add_argument(
        "--region",
        nargs="+",
        metavar="COND",
        help="keep training targets inside bounds, e.g. --region 'y>0' 'z<0.4' (metres)",
    )
    t.add_argument(
        "--tracking", action="store_true", help="also feed the current joints to the network"
    )
    t.add_argument(
        "--checkpoint-every", type=_positive, default=30.0, help="seconds between checkpoints"
    )
    t.add_argument(
        "--eval",
        type=_count,
        nargs="?",
        const=10000,
        metavar="N",
        help="evaluate on N held-out targets when training ends",
    )
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument(
        "--view",
        action="store_true",
        help="watch it learn in the browser (no ROS): the demo attempts as the arm, the error "
        "curve, the network drawn; the page stays up after training until Ctrl-C (needs "
        "pip install .[view])",
    )
    t.add_argument("--view-port", type=port, default=8080, help="the page's port with --view")
    t.add_argument(
        "--view-host", default="127.0.0.1", help="with --view: 0.0.0.0 opens it to the network"
    )
    t.set_defaults(func=commands["train"])

    if "merge" in commands:
        m = sub.add_parser("merge", help="merge model folders of one arm into one network")
        m.add_argument("models", nargs="+", metavar="MODEL", help="two or more model folders")
        m.add_argument("--out", required=True, help="the merged model folder")
        m.add_argument("--minutes", type=_positive, help="time budget (default 3)")
        m.add_argument("--steps", type=_count, help="step budget")
        m.add_argument("--seed", type=int, default=0, help="random seed")
        m.add_argument("--fresh", action="store_true", help="start from nothing, not the best")
        m.add_argument(
            "--learn",
            nargs="+",
            default=[],
            metavar="KEY=VALUE",
            help="learner hyper-parameters (LearnConfig), as for train",
        )
        m.add_argument("--force", action="store_true", help="overwrite a run in --out")
        m.add_argument("--resume", action="store_true", help="continue the merge in --out")
        m.add_argument("--quiet", action="store_true", help="no progress bar")
        m.set_defaults(func=commands["merge"])

    e = sub.add_parser("eval", help="evaluate a model folder on held-out targets")
    e.add_argument("model")
    e.add_argument("--targets", type=_count, default=10000, help="held-out targets")
    e.add_argument("--seed", type=int, default=12345, help="which held-out targets")
    e.add_argument("--batch", type=_count, help="targets per solver call (default: all at once)")
    e.add_argument("--device", default="cpu", help="cpu or cuda (the batched torch solver)")
    e.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    e.set_defaults(func=commands["eval"])

    s = sub.add_parser("solve", help="joint angles and joint quaternions for one target")
    s.add_argument("model")
    where = s.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--xyz",
        type=float,
        nargs=3,
        metavar=("X", "Y", "Z"),
        help="the tool's position in the base frame (m)",
    )
    where.add_argument(
        "--path",
        metavar="FILE",
        help="a whole path instead: a text file, a target per line, 'x y z' or 'x y z qx qy qz "
        "qw' (spaces or commas; '#' starts a comment), answered with no joint step over "
        "--max-step where the arm has such a way (Solver.solve_path); prints CSV: target, "
        "solved, joints",
    )
    s.add_argument(
        "--start",
        type=float,
        nargs="+",
        metavar="RAD",
        help="with --path: the arm's joints where the path begins (default: an answer to the "
        "first target)",
    )
    s.add_argument(
        "--max-step",
        type=_positive,
        default=0.2,
        help="with --path: the largest joint step between two targets' answers (rad)",
    )
    s.add_argument(
        "--quat",
        type=float,
        nargs=4,
        metavar=("X", "Y", "Z", "W"),
        help="the tool's orientation (default: the position alone)",
    )
    s.add_argument(
        "--refine",
        type=_count0,
        help="refinement iterations from the first seed (default 10; 0: the network alone)",
    )
    s.add_argument(
        "--backend",
        choices=["compiled", "numpy", "onnx", "torch"],
        default="compiled",
        help="the network's forward pass (onnx: needs model.onnx, see export --onnx; torch: "
        "needs torch)",
    )
    s.add_argument(
        "--solutions",
        type=_count,
        metavar="K",
        help="up to K distinct answers (joints differing by more than the settings' "
        "solution_threshold, 0.1 rad), in --order",
    )
    s.add_argument(
        "--order",
        choices=ORDERS,
        help="with --solutions (default nearest): nearest to mid-range first, farthest from the "
        "limits first, or most dexterous first",
    )
    s.add_argument(
        "--free-axis",
        choices=["x", "y", "z"],
        default="",
        help="leave the rotation about this axis of the tool free (a symmetric tool: only the "
        "axis itself is aligned with the target's)",
    )
    s.add_argument(
        "--no-collision-check",
        action="store_true",
        help="allow answers where the arm collides with itself (checked by default)",
    )
    s.add_argument(
        "--collision-margin",
        type=float,
        default=0.0,
        metavar="M",
        help="least distance kept between the arm's surfaces (m, default 0)",
    )
    s.add_argument(
        "--collision-pairs",
        default="",
        metavar="SRDF",
        help="an SRDF whose disable_collisions are the link pairs left out (default: computed "
        "from the URDF; write one with `robot-ik-nn collisions ARM --out FILE`)",
    )
    s.add_argument("--json", action="store_true", help="one JSON object (a list with --solutions)")
    s.set_defaults(func=commands["solve"])

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
    k.add_argument("--json", action="store_true", help="the summary as one JSON object")
    k.set_defaults(func=commands["calibrate"])

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
    a.add_argument("--measure", type=_count, default=0, metavar="N", help="N measured poses")
    a.add_argument("--csv", help="where to write them (the calibrate --measurements format)")
    a.add_argument("--noise-mm", type=float, default=0.2)
    a.add_argument("--noise-deg", type=float, default=0.1)
    a.add_argument("--outliers", type=float, default=0.0, help="fraction of rows 2-10 cm off")
    a.set_defaults(func=commands["true-arm"])

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
    c.set_defaults(func=commands["collisions"])

    b = sub.add_parser(
        "bench", help="measure speed and solve rate, side by side with other solvers"
    )
    b.add_argument("model")
    b.add_argument("--targets", type=_count, default=10000, help="targets (and the largest batch)")
    b.add_argument(
        "--single-targets", type=_count, help="targets solved one at a time (default: --targets)"
    )
    b.add_argument(
        "--tracking-targets", type=_count, default=1000, help="targets along the tracking path"
    )
    b.add_argument(
        "--backends",
        nargs="+",
        choices=["compiled", "numpy", "onnx", "torch"],
        default=["compiled", "numpy", "onnx", "torch"],
        help="network backends to measure (a backend that cannot load is skipped with a note)",
    )
    b.add_argument(
        "--peers",
        action="store_true",
        help="also run TRAC-IK, roboticstoolbox's ik_LM and PyBullet's IK (pip install .[peers])",
    )
    b.add_argument(
        "--budget-ms", type=_positive, default=5.0, help="time budget per target for the peers"
    )
    b.add_argument(
        "--dds", action="store_true", help="also measure the inference node over DDS (needs rclpy)"
    )
    b.add_argument(
        "--dds-targets", type=_count, default=2000, help="targets sent at 200 Hz with --dds"
    )
    b.add_argument("--no-torch", action="store_true", help="skip the batched torch solver")
    only = b.add_mutually_exclusive_group()  # "measure only this": one at a time
    only.add_argument(
        "--solutions",
        type=_count,
        metavar="K",
        help="measure only this: K distinct answers per target against a brute-force search",
    )
    b.add_argument("--solution-targets", type=_count, default=200, help="targets for --solutions")
    only.add_argument(
        "--collisions",
        action="store_true",
        help="measure only this: the collision model against PyBullet (this arm and every "
        "arm in pybullet_data), targets from PyBullet-free joints solved with checking, the "
        "cost of checking (with --dds: the inference node too)",
    )
    only.add_argument(
        "--moveit",
        action="store_true",
        help="measure only this: ~/solve_ik (GetPositionIK) round trips over DDS, filled as "
        "MoveIt's srv_kinematics_plugin fills them (--dds-targets of them; needs moveit_msgs)",
    )
    only.add_argument(
        "--calibration",
        action="store_true",
        help="measure only this: answers on a perturbed true arm, nominal and calibrated from "
        "10-200 measured poses (and with outliers), TRAC-IK and ik_LM given the calibrated URDF",
    )
    only.add_argument(
        "--answers",
        action="store_true",
        help="measure only this: a free tool axis, targets outside the reach against a "
        "brute-force search, and tracking paths (the answers users ask for)",
    )
    only.add_argument(
        "--tracking",
        type=_count,
        metavar="N",
        help="measure only this: N paths (cubic splines through 6 random joint sets, up to "
        "--tracking-targets targets 5 mm / 0.05 rad apart), each tracked as a stream and given "
        "whole to solve_path, every answer judged by our kinematics",
    )
    b.add_argument(
        "--tracking-network",
        action="store_true",
        help="with --tracking: solve with the model's network (default: the arm alone)",
    )
    only.add_argument(
        "--hardware",
        choices=["niryo_one", "niryo_ned", "inmoov_right_arm"],
        help="measure only this: the deploy session (dry run) driving that arm's emulator "
        "through its real protocol, over DDS (needs rclpy)",
    )
    b.add_argument("--hardware-targets", type=_count, default=200, help="targets for --hardware")
    only.add_argument(
        "--cuda",
        action="store_true",
        help="measure only this: the batched torch solver on the GPU (torch with CUDA), split "
        "into network alone, first pass and restarts, median of 3 calls per batch",
    )
    b.add_argument(
        "--cuda-batches",
        type=_count,
        nargs="+",
        default=[10_000, 100_000, 1_000_000],
        help="batch sizes for --cuda",
    )
    b.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    b.add_argument(
        "--out", help="also write the JSON to this file (and the markdown table beside it)"
    )
    b.set_defaults(func=commands["bench"])

    x = sub.add_parser("export", help="pack a model folder into one .tar.gz for another machine")
    x.add_argument("model")
    x.add_argument("--out", help="archive path (default <model>.tar.gz)")
    x.add_argument(
        "--onnx",
        action="store_true",
        help="write model.onnx into the model folder (no archive unless --out is given)",
    )
    x.set_defaults(func=commands["export"])

    la = sub.add_parser(
        "launch", help="run a ROS 2 session (the launch file's nodes) in one process"
    )
    la.add_argument(
        "session", choices=["train", "inference", "display", "deploy", "calibrate"]
    )
    la.add_argument("arguments", nargs="*", metavar="name:=value")
    la.set_defaults(func=commands["launch"])

    from .view.cli import add_parser as add_view  # the browser page (robot_ik_nn/view/)

    add_view(sub)
    from .hardware.cli import add_parsers as add_hardware  # servo-template, emulate

    add_hardware(sub)
    return p
