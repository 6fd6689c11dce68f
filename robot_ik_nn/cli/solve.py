"""``robot-ik-nn eval`` and ``solve``: held-out targets scored, and one target (or a path)
answered."""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..arg_types import count, count0, positive
from ..arm.resources import tool_axes_text
from .common import use_threads
from .exit_codes import BEST_EFFORT, REJECTED
from .exit_codes import SOLVED as EXIT_SOLVED


def cmd_eval(args) -> int:
    from ..evaluate import evaluate, format_table

    use_threads(args.threads, torch=args.device.startswith("cuda"))
    _say_if_compiling("solve_batch", "forward_batch")
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
        return _solve_path(args, solver)
    if args.start is not None:
        raise ValueError("--start is where a --path begins: give --path FILE too")
    _say_if_compiling("solve_one", *(("solve_many",) if args.solutions is not None else ()))
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

    T = _tool_pose(solver.arm, solver.arm.mid_range)
    quat = matrix_to_quaternion(T[None, :3, :3])[0] if pose else None
    started = time.perf_counter()
    if solutions is None:
        solver.solve(T[:3, 3], quat)
    else:
        solver.solve(T[:3, 3], quat, solutions=solutions, order=order)
    return (time.perf_counter() - started) * 1000


def _say_if_compiling(*names: str) -> None:
    """One line before a first call compiles (ik/numba_cache.py): the compiled entries
    ``names`` (default every one a path may call) that numba's cache does not hold yet."""
    from ..ik import numba_cache

    wanted = [d for d in numba_cache.entries() if not names or d.__name__ in names]
    if numba_cache.uncached(wanted):
        print(numba_cache.warm_up_line(wanted), file=sys.stderr, flush=True)


def _solve_path(args, solver) -> int:
    """``solve --path FILE``: joints for every target of the file, as CSV."""
    import numpy as np

    from ..ik.inputs import near_limits

    if args.quat is not None or args.solutions is not None:
        raise ValueError(
            "--path takes each target's orientation from the file: leave out "
            "--quat and --solutions"
        )
    P, Q = _read_path(args.path)
    if args.start is not None:
        start = np.asarray(args.start)
        if start.shape != (solver.arm.dof,):
            raise ValueError(
                f"--start needs {solver.arm.dof} joint values for {solver.arm.name}; "
                f"got {len(start)}"
            )
        near_limits(start, solver.arm, "--start")
        far = _too_far(solver, start, P[0], None if Q is None else Q[0], args.max_step)
        if far:  # said before anything is solved (or compiled): no planning can mend it
            print(f"robot-ik-nn solve: rejected: {far}", file=sys.stderr)
            return REJECTED
    _say_if_compiling()
    if args.start is None:
        first = solver.solve(P[0], None if Q is None else Q[0])
        if first.q is None:
            print(
                f"robot-ik-nn solve: rejected: {args.path}: the first target has no answer "
                f"({first.reason})",
                file=sys.stderr,
            )
            return REJECTED
        start = first.q
    path = solver.solve_path(P, Q, start=start, max_step=args.max_step)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": path.ok,
                    "reason": path.reason,
                    "max_step_rad": path.max_step,
                    "at": path.at,
                    "planned": path.planned,
                    "seconds": path.seconds,
                    "joint_names": solver.arm.joint_names,
                    "solved": path.solved.tolist(),
                    "joints": [None if not np.all(np.isfinite(q)) else q.tolist() for q in path.q],
                }
            )
        )
    else:
        print(
            f"# {len(P)} targets, {int(path.solved.sum())} solved, largest joint step "
            f"{path.max_step:.4f} rad (to target {path.at})"
            + (", planned where tracking would jump" if path.planned else "")
            + f", {path.seconds:.2f} s"
        )
        if path.reason:
            print(f"# {path.reason}")
        print("target,solved," + ",".join(solver.arm.joint_names))
        for k, (q, ok) in enumerate(zip(path.q, path.solved)):
            print(f"{k},{int(ok)}," + ",".join(f"{v:.6f}" for v in q))
    return EXIT_SOLVED if path.ok else BEST_EFFORT


def _tool_pose(arm, q):
    """The tool's pose (4x4, base frame) at joints ``q``, in numpy: nothing compiled."""
    import numpy as np

    T = np.eye(4)
    for joint, value in zip(arm.joints, q):
        move = np.eye(4)
        if joint.type == "prismatic":
            move[:3, 3] = joint.axis * value
        else:  # Rodrigues: a turn by ``value`` about the unit axis
            x, y, z = joint.axis
            K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
            move[:3, :3] += np.sin(value) * K + (1.0 - np.cos(value)) * (K @ K)
        T = T @ joint.origin @ move
    return T @ arm.tip_offset


def _too_far(solver, start, position, quat, max_step: float) -> str:
    """Why no answer to the path's first target lies within ``max_step`` of ``start`` (every
    joint moving at most that much), or "" when one may: a turn of joint j by ``max_step``
    moves the tool at most ``max_step`` times the longest the chain beyond j can be, and turns
    it by at most ``max_step``; a slide moves it at most ``max_step``. The tool at ``start``
    farther from the target than all of that together, plus the tolerances, is refused at
    once, before any solve (planning could only find the same step)."""
    import numpy as np

    arm, settings = solver.arm, solver.settings
    # each joint's link to the next, with a slide at its longest: the chain beyond joint i is
    # at most the links after it and the tool's offset long
    links = np.array([
        np.linalg.norm(j.origin[:3, 3])
        + (max(abs(j.lower), abs(j.upper)) if j.type == "prismatic" else 0.0)
        for j in arm.joints
    ])  # fmt: skip
    beyond = np.append(np.cumsum(links[::-1])[::-1][1:], 0.0)
    beyond += np.linalg.norm(arm.tip_offset[:3, 3])
    turns = np.array([j.type != "prismatic" for j in arm.joints])
    reach = max_step * float(np.sum(np.where(turns, beyond, 1.0)))
    T = _tool_pose(arm, start)
    gap = float(np.linalg.norm(np.asarray(position) - T[:3, 3]))
    far = f"{gap * 1000:.0f} mm from it", f"moves it at most {reach * 1000:.0f} mm"
    if gap <= reach + settings.pos_tol:
        if quat is None or settings.free_axis:  # a free axis: the turn about it is free
            return ""
        from ..arm.rotations import quaternion_to_matrix

        R = quaternion_to_matrix(np.asarray(quat, dtype=float)[None])[0]
        angle = float(np.arccos(np.clip((np.trace(T[:3, :3].T @ R) - 1.0) / 2.0, -1.0, 1.0)))
        most = max_step * int(turns.sum())
        if angle <= most + settings.rot_tol:
            return ""
        far = f"turned {angle:.2f} rad from it", f"turns it at most {most:.2f} rad"
    return (
        f"--start is too far from the path's first target: the tool there is {far[0]}, and one "
        f"step of at most --max-step {max_step:g} rad per joint {far[1]}. Start nearer the "
        "first target, or leave out --start (an answer to the first target)"
    )


def _read_path(name: str):
    """(positions (n, 3), quaternions (n, 4) or None) from a path file (see ``--path``)."""
    import numpy as np

    try:
        lines = open(name, encoding="utf-8").read().splitlines()
    except OSError as error:
        raise ValueError(f"--path: cannot read {name}: {error.strerror}") from None
    rows = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].replace(",", " ").split()
        if not line:
            continue
        try:
            values = [float(v) for v in line]
        except ValueError:
            raise ValueError(f"{name}, line {number}: not numbers: {' '.join(line)}") from None
        if len(values) not in (3, 7) or (rows and len(values) != len(rows[0])):
            raise ValueError(
                f"{name}, line {number}: a target is 3 numbers (x y z) or 7 (x y z qx qy qz "
                f"qw), the same on every line; got {len(values)}"
            )
        rows.append(values)
    if not rows:
        raise ValueError(f"--path: {name} holds no targets")
    a = np.array(rows)
    return a[:, :3], (a[:, 3:] if a.shape[1] == 7 else None)


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
