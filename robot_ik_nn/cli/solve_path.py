"""``robot-ik-nn solve MODEL --path FILE``: a whole path of targets answered (ik/path.py's
solve_path), read from a file, its start checked against the first target before anything is
compiled or solved."""

from __future__ import annotations

import json
import sys

from .common import say_if_compiling
from .exit_codes import BEST_EFFORT, REJECTED
from .exit_codes import SOLVED as EXIT_SOLVED


def solve_path(args, solver) -> int:
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
    say_if_compiling()
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


def tool_pose(arm, q):
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
    T = tool_pose(arm, start)
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
