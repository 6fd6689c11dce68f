"""``robot-ik-nn bench``: speed and solve rate, side by side with other solvers; each mode
measures, then one block writes the JSON (and its markdown) and prints the table."""

from __future__ import annotations

import json
import sys

from ..arg_types import count, count0, positive
from ..hardware.arms import names as real_arm_names
from .common import use_threads


def cmd_bench(args) -> int:
    use_threads(args.threads)

    def say(text):
        if not args.json:
            print(f"measuring: {text}", file=sys.stderr, flush=True)

    measured = _measure(args, say)
    if measured is None:
        return 2
    result, markdown, table, code = measured
    _write(args.out, result, markdown)
    if args.calibration and args.out:
        from pathlib import Path

        from ..bench import calibration

        calibration.picture(result, Path(args.out).with_suffix(".png"))
    print(json.dumps(result, indent=2) if args.json else table)
    return code


def _measure(args, say):
    """The mode asked for: (result, its markdown, its table, exit code), or None when the mode
    cannot run here (said on stderr)."""
    if args.hardware:
        from ..bench import hardware

        result = hardware.measure(args.model, args.hardware, args.hardware_targets, say=say)
        table = hardware.format_table(result)
        return result, table, table, 0 if result["reached"] == result["targets"] else 1
    if args.collisions:
        from ..bench import collisions

        result = collisions.measure(args.model, say=say)
        if args.dds:
            from ..bench.dds import dds_latency

            say("the inference node over DDS, collision checking on")
            result["dds"] = dds_latency(args.model, targets=args.dds_targets)
        return _same(result, collisions.format_table(result))
    if args.moveit:
        from ..bench import moveit

        try:
            result = moveit.moveit_round_trips(args.model, targets=args.dds_targets)
        except ImportError as err:  # moveit_msgs: a ROS install with MoveIt
            print(f"robot-ik-nn bench --moveit: {err}", file=sys.stderr)
            return None
        return _same(result, moveit.format_table(result))
    if args.calibration:
        from ..bench import calibration

        return _same(calibration.measure(args.model, say=say), calibration.format_table)
    if args.answers:
        from ..bench import answers

        return _same(answers.measure(args.model, say=say), answers.format_table)
    if args.tracking:
        from ..bench import paths

        result = paths.measure(
            args.model, args.tracking, args.tracking_targets, args.tracking_network, say
        )
        return _same(result, paths.format_table)
    if args.dds_paths:
        from ..bench import dds_paths, dds_paths_figures

        result = dds_paths.stream_paths(args.model, args.dds_paths, args.tracking_targets, say=say)
        return _same(result, dds_paths_figures.format_table)
    if args.web:
        from ..bench import web

        try:
            result = web.measure(
                args.model, args.targets or 5000, args.budget_ms, args.web_warmup, say=say
            )
        except web.WebBenchError as err:
            print(f"robot-ik-nn bench --web: {err}", file=sys.stderr)
            return None
        return _same(result, web.format_table)
    if args.cuda:
        from ..bench import cuda

        result = cuda.measure(args.model, args.cuda_batches, say=say)
        return result, cuda.markdown(result), cuda.format_table(result), 0
    if args.solutions:
        from ..bench import solutions

        result = solutions.completeness(
            args.model, k=args.solutions, targets=args.solution_targets, say=say
        )
        return _same(result, solutions.format_table)
    from .. import bench

    result = bench.run(
        args.model,
        targets=args.targets or 10000,
        single_targets=args.single_targets,
        peers=args.peers,
        budget_ms=args.budget_ms,
        tracking_targets=args.tracking_targets,
        backends=args.backends,
        torch_batched=not args.no_torch,
        progress=say,
    )
    if args.dds:
        from ..bench.dds import dds_latency

        say("the inference node over DDS")
        result["dds"] = dds_latency(args.model, targets=args.dds_targets)
    return result, bench.markdown(result), bench.format_table(result), 0


def _same(result: dict, table) -> tuple:
    """A mode whose markdown is its table (``table``: the text, or the function making it)."""
    text = table(result) if callable(table) else table
    return result, text, text, 0


def _write(out, result: dict, markdown: str) -> None:
    """The bench's JSON into ``out`` and its markdown beside it (``.md``)."""
    from pathlib import Path

    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=2) + "\n")
        Path(out).with_suffix(".md").write_text(markdown + "\n")


def register(sub) -> None:
    b = sub.add_parser(
        "bench", help="measure speed and solve rate, side by side with other solvers"
    )
    b.add_argument("model")
    b.add_argument(
        "--targets",
        type=count,
        help="targets (and the largest batch; default 10,000, with --web 5,000)",
    )
    b.add_argument(
        "--single-targets", type=count, help="targets solved one at a time (default: --targets)"
    )
    b.add_argument(
        "--tracking-targets", type=count, default=1000, help="targets along the tracking path"
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
        "--budget-ms", type=positive, default=5.0, help="time budget per target for the peers"
    )
    b.add_argument(
        "--dds", action="store_true", help="also measure the inference node over DDS (needs rclpy)"
    )
    b.add_argument(
        "--dds-targets", type=count, default=2000, help="targets sent at 200 Hz with --dds"
    )
    b.add_argument("--no-torch", action="store_true", help="skip the batched torch solver")
    only = b.add_mutually_exclusive_group()  # "measure only this": one at a time
    only.add_argument(
        "--solutions",
        type=count,
        metavar="K",
        help="measure only this: K distinct answers per target against a brute-force search",
    )
    b.add_argument("--solution-targets", type=count, default=200, help="targets for --solutions")
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
        type=count,
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
        "--dds-paths",
        type=count,
        metavar="N",
        help="measure only this: the inference node over DDS (needs rclpy) streaming N "
        "--tracking paths (up to --tracking-targets targets) at 200 Hz as teleoperation would, "
        "jump_threshold 0.2 rad, the arm following its commands: refusals, commanded steps over "
        "0.2 rad, target -> command latency; the same paths to a bare rclpy relay (the node's "
        "messages, no solving) in the same run, its latency beside the node's",
    )
    only.add_argument(
        "--hardware",
        choices=real_arm_names(),
        help="measure only this: the deploy session (dry run) driving that arm's emulator "
        "through its real protocol, over DDS (needs rclpy)",
    )
    b.add_argument("--hardware-targets", type=count, default=200, help="targets for --hardware")
    only.add_argument(
        "--cuda",
        action="store_true",
        help="measure only this: the batched torch solver on the GPU (torch with CUDA), split "
        "into network alone, first pass and restarts, median of 3 calls per batch",
    )
    b.add_argument(
        "--cuda-batches",
        type=count,
        nargs="+",
        default=[10_000, 100_000, 1_000_000],
        help="batch sizes for --cuda",
    )
    only.add_argument(
        "--web",
        action="store_true",
        help="measure only this: IK in a web page: this package's JavaScript solver, "
        "closed-chain-ik and three.js's CCDIKSolver on the same targets (from PyBullet-free "
        "joints), the peers with --budget-ms per target, in Node and headless chromium, judged "
        "by PyBullet's FK, beside the native solver in the same run (needs node, chromium and "
        "web/node_modules)",
    )
    b.add_argument(
        "--web-warmup", type=count0, default=50, help="with --web: targets solved before timing"
    )
    b.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    b.add_argument(
        "--out", help="also write the JSON to this file (and the markdown table beside it)"
    )
    b.set_defaults(func=cmd_bench)
