"""``robot-ik-nn eval`` and ``solve``: held-out targets scored, and one target (or a path)
answered."""

from __future__ import annotations

import argparse
import json
import math

from ..arg_types import count, count0, positive
from ..arm.resources import tool_axes_text
from .common import say_if_compiling, use_threads
from .exit_codes import BEST_EFFORT, REJECTED
from .exit_codes import SOLVED as EXIT_SOLVED


def cmd_eval(args) -> int:
    from ..evaluate import evaluate, format_table

    use_threads(args.threads, torch=args.device.startswith("cuda"))
    say_if_compiling("solve_batch", "forward_batch")
    result = evaluate(
        args.model, targets=args.targets, seed=args.seed, device=args.device, batch=args.batch
    )
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def cmd_solve(args) -> int:
    from ..ik.results import SOLVED
    from ..ik.settings import IKSettings
    from ..ik.solver import Solver

    use_threads(args.threads)
    if args.order is not None and args.solutions is None:
        raise ValueError("--order orders several answers: give --solutions K too")
    args.order = args.order or "nearest"
    try:  # the settings' words name their fields; here the options are what the user gave
        settings = IKSettings(
            **({} if args.refine is None else {"iterations": args.refine}),
            free_axis=args.free_axis,
            collision_check=not args.no_collision_check,
            collision_margin=args.collision_margin,
            collision_pairs=args.collision_pairs,
        )
    except ValueError as error:
        raise ValueError(str(error).replace("IKSettings.iterations", "--refine")) from None
    if args.solutions is not None and args.refine == 0:
        raise ValueError("--solutions needs refinement: --refine 0 is the network alone")
    solver = Solver.load(args.model, settings, backend=args.backend)  # nothing compiled yet
    if args.path is not None:
        from .solve_path import solve_path

        return solve_path(args, solver)
    if args.start is not None:
        raise ValueError("--start is where a --path begins: give --path FILE too")
    say_if_compiling("solve_one", *(("solve_many",) if args.solutions is not None else ()))
    first_ms = _first_call(solver, args.quat is not None, args.solutions, args.order)
    if args.solutions is None:
        answers = [solver.solve(args.xyz, args.quat)]
    else:
        answers = solver.solve(args.xyz, args.quat, solutions=args.solutions, order=args.order)
    outs = [{**_answer_dict(solver, a), "first_call_ms": first_ms} for a in answers]
    if args.json:
        print(json.dumps(outs[0] if args.solutions is None else outs))
    else:
        for k, out in enumerate(outs):
            if args.solutions is not None:
                print(f"answer {k + 1} of {len(outs)} ({args.order} first)")
            _print_answer(out)
    # one rule for every solve (the exit codes' table, cli/__init__.py): 0 when each answer
    # asked for is solved (within the tolerances), else best effort or rejected as the first is
    # (the answer is printed all the same)
    if all(out["status"] == SOLVED for out in outs):
        return EXIT_SOLVED
    return BEST_EFFORT if outs[0]["joints"] is not None else REJECTED


def _first_call(solver, pose: bool, solutions, order) -> float:
    """The process's first solve of this kind (milliseconds), on a pose the arm takes: it loads
    the compiled code (or compiles it), so that the target's own solve is timed warm, as a
    program that keeps its solver solves (what ``microseconds`` reports)."""
    import time

    from ..arm.rotations import matrix_to_quaternion
    from .solve_path import tool_pose

    T = tool_pose(solver.arm, solver.arm.mid_range)
    quat = matrix_to_quaternion(T[None, :3, :3])[0] if pose else None
    started = time.perf_counter()
    if solutions is None:
        solver.solve(T[:3, 3], quat)
    else:
        solver.solve(T[:3, 3], quat, solutions=solutions, order=order)
    return (time.perf_counter() - started) * 1000


def _answer_dict(solver, answer) -> dict:
    from ..arm.rotations import joint_angles_to_quaternions

    q = answer.q
    quats = None if q is None else joint_angles_to_quaternions(q, solver.arm.axes)
    return {
        "status": answer.status,
        "reason": answer.reason,
        "pos_err_mm": None if q is None else answer.pos_err * 1000,
        "rot_err_deg": None if q is None else math.degrees(answer.rot_err),
        "joint_names": solver.arm.joint_names,
        "joints": None if q is None else q.tolist(),
        "joint_quaternions": None if quats is None else quats.tolist(),
        "microseconds": answer.seconds * 1e6,  # this solve's own time (the code loaded)
    }


def _print_answer(out: dict) -> None:
    print(f"{out['status']}" + (f": {out['reason']}" if out["reason"] else ""))
    if out["joints"] is not None:
        print(f"error: {out['pos_err_mm']:.4f} mm, {out['rot_err_deg']:.4f} deg")
        print(f"{'joint':>18} {'angle (rad)':>12}   quaternion (x y z w)")
        for name, a, qq in zip(out["joint_names"], out["joints"], out["joint_quaternions"]):
            print(f"{name:>18} {a:>12.6f}   " + " ".join(f"{v:+.6f}" for v in qq))
    print(
        f"answered in {out['microseconds']:.0f} us (this process's first solve, which loads the "
        f"compiled code, took {out['first_call_ms']:.0f} ms)"
    )



def register(sub) -> None:
    from ..ik.settings import ORDERS

    e = sub.add_parser("eval", help="evaluate a model folder on held-out targets")
    e.add_argument("model")
    e.add_argument("--targets", type=count, default=10000, help="held-out targets")
    e.add_argument("--seed", type=int, default=12345, help="which held-out targets")
    e.add_argument("--batch", type=count, help="targets per solver call (default: all at once)")
    e.add_argument("--device", default="cpu", help="cpu or cuda (the batched torch solver)")
    e.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    e.set_defaults(func=cmd_eval)

    s = sub.add_parser(
        "solve",
        help="joint angles and joint quaternions for one target",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="A target is a pose of the arm's tool frame in its base frame. The tool's axes "
        "(docs/arms.md draws them):\n" + tool_axes_text(),
    )
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
        type=positive,
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
        type=count0,
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
        type=count,
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
        "axis itself is aligned with the target's); the axis the tool points along, listed "
        "below per arm",
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
    s.set_defaults(func=cmd_solve)
