"""`robot-ik-nn bench MODEL --answers`: the answers users ask for, measured.

- ``free_axis``: reachable targets (forward kinematics of random joints) turned by a random angle
  about the tool's own z axis, so that most can only be reached with that angle left free;
  solved with ``free_axis="z"`` and judged again here: tool position within 1 mm and tool z axis
  within 0.01 rad of the target's, joints in their limits.
- ``unreachable``: positions beyond the arm's reach bound (1.05 to 1.9 times it from the first
  joint, inside ``reach_margin`` so that they are not refused as a slip of units), with random
  orientations for a pose model. Every answer must be a best effort (or a rejection) whose
  reason says "outside the reach"; its closest pose is compared with a brute-force search, the
  same compiled policy given ``brute_restarts`` seeds: the gap is our weighted error (position
  plus ``rot_weight`` times rotation, metres) less the brute force's.
- ``tracking``: several smooth paths of targets about 5 mm apart, each answer warm-started from
  the last: every target solved, and the largest step of any joint between two answers, beside
  the largest step of the joints that made the path. A path whose own joints step more than
  ``own_step`` (0.1 rad) between two targets passes near a singularity, where 5 mm of the tool
  can take more than 0.2 rad of some joint whatever the solver: it is set aside (and listed).
  Each path is also given whole to ``solve_path`` (known beforehand, planned where tracking
  jumps): every target solved, and its largest joint step.
"""

from __future__ import annotations

import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion, quaternion_to_matrix
from ..evaluate import held_out_targets
from ..ik.path import tracked
from .measure import judge, one_cpu, progress_bar, tracking_path


def measure(model, targets: int = 10000, unreachable: int = 1000, paths: int = 8, **kw) -> dict:
    from ..ik.solver import Solver

    say = kw.get("say") or (lambda text: None)
    solver = Solver.load(model)
    say("free axis")
    out = {"robot": solver.arm.name, "free_axis": free_axis(solver, targets)}
    say("unreachable targets and a brute-force search")
    out["unreachable"] = outside_reach(solver, unreachable, kw.get("brute_restarts", 10000))
    say("tracking")
    out["tracking"] = tracking(solver, paths)
    return out


def free_axis(solver, n: int, seed: int = 21) -> dict:
    arm = solver.arm
    _, P, R = held_out_targets(arm, n, seed)
    angle = np.random.default_rng(seed).uniform(-np.pi, np.pi, n)
    c, s = np.cos(angle), np.sin(angle)
    turn = np.zeros((n, 3, 3))
    turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1], turn[:, 2, 2] = c, -s, s, c, 1
    R = R @ turn  # about the tool's own z axis
    Q = matrix_to_quaternion(R)
    fixed = solver.solve_batch(P, Q)
    result = solver.solve_batch(P, Q, free_axis="z")
    p, r = solver.forward(np.nan_to_num(result.q))
    pe = np.linalg.norm(p - P, axis=1)
    axis_err = np.arccos(np.clip(np.einsum("bi,bi->b", r[:, :, 2], R[:, :, 2]), -1.0, 1.0))
    ok = result.solved & (pe <= 1e-3) & (axis_err <= 0.01) & arm.within_limits(result.q)
    return {
        "targets": n,
        "solved": int(ok.sum()),
        "solve_rate": float(ok.mean()),
        "reported_solved_but_not": int(np.sum(result.solved & ~ok)),
        "solve_rate_with_the_angle_fixed": float(fixed.solved.mean()),
        "batch_seconds": result.seconds,
    }


def outside_reach(solver, n: int, brute_restarts: int, seed: int = 5) -> dict:
    arm, s = solver.arm, solver.settings
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal((n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    P = solver.origin + direction * arm.reach * rng.uniform(1.05, 1.9, (n, 1))
    Q = None
    if solver.mode == "pose":
        Q = rng.standard_normal((n, 4))
        Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    with one_cpu():
        solver.solve(P[0], None if Q is None else Q[0])
        answers, seconds = [], np.empty(n)
        for i in range(n):
            started = time.perf_counter()
            answers.append(solver.solve(P[i], None if Q is None else Q[i]))
            seconds[i] = time.perf_counter() - started
    brute = solver.with_settings(
        far_restarts=brute_restarts, far_patience=brute_restarts
    ).solve_batch(P, Q)
    quats = [None] * n if Q is None else list(Q)
    ours = np.array([_score(solver, a.q, P[i], quats[i]) for i, a in enumerate(answers)])
    theirs = np.array([_score(solver, brute.q[i], P[i], quats[i]) for i in range(n)])
    gap = ours - theirs
    said = ["outside the reach" in a.reason for a in answers]
    return {
        "targets": n,
        "solved": sum(a.status == "solved" for a in answers),
        "best_effort": sum(a.status == "best_effort" for a in answers),
        "rejected": sum(a.status == "rejected" for a in answers),
        "reason_says_outside_the_reach": int(sum(said)),
        "brute_restarts": brute_restarts,
        "far_restarts": s.far_restarts,
        "far_patience": s.far_patience,
        "gap_to_brute_force_mm_max": float(np.nanmax(gap) * 1000),
        "gap_to_brute_force_mm_median": float(np.nanmedian(gap) * 1000),
        "within_1mm_of_brute_force": int(np.sum(gap <= 1e-3)),
        "us_median": float(np.median(seconds) * 1e6),
        "us_p99": float(np.percentile(seconds, 99) * 1e6),
    }


def _score(solver, q, p, quat) -> float:
    """The weighted error every path ranks answers by, from our own forward kinematics."""
    if q is None or not np.all(np.isfinite(q)):
        return np.nan
    R = None if quat is None else quaternion_to_matrix(np.asarray(quat)[None])
    _, pe, re = judge(solver.forward, solver.arm, np.asarray(q)[None], p[None], R)
    return float(solver.settings.score(pe[0], re[0]))


def tracking(solver, paths: int, n: int = 1000, own_step: float = 0.1, bar=False) -> dict:
    arm, pose = solver.arm, solver.mode == "pose"
    rows, set_aside, seed = [], [], 100
    shown = progress_bar(paths, f"tracking paths ({arm.name})") if bar else None
    while len(rows) < paths:
        q_path, P, R = tracking_path(arm, solver.forward, n, seed=seed)
        seed += 1
        own = float(np.max(np.abs(np.diff(q_path, axis=0))))  # the joints that made the path
        if own > own_step:  # through a singularity: no answer could follow it in small steps
            set_aside.append({"path": seed - 1, "path_max_joint_step_rad": own})
            continue
        Q = matrix_to_quaternion(R) if pose else None
        answers, _ = tracked(solver, P, Q, q_path[0])  # as a stream: no look ahead
        solved, _, _ = judge(solver.forward, arm, answers, P, R if pose else None)
        step = float(np.nanmax(np.abs(np.diff(answers, axis=0))))
        plan = solver.solve_path(P, Q, start=q_path[0])  # the same path, known beforehand
        judged, _, _ = judge(solver.forward, arm, plan.q, P, R if pose else None)
        rows.append(
            {
                "path": seed - 1,
                "solved": int(solved.sum()),
                "max_joint_step_rad": step,
                "path_max_joint_step_rad": own,
                "solve_path": {
                    "solved": int(plan.solved.sum()),
                    "solved_by_our_judge": int(judged.sum()),
                    "max_joint_step_rad": plan.max_step,
                    "planned": plan.planned,
                    "seconds": plan.seconds,
                },
            }
        )
        if shown is not None:
            shown.update()
    if shown is not None:
        shown.close()
    planned = [r["solve_path"] for r in rows]
    return {
        "targets_per_path": n,
        "paths": rows,
        "path_max_own_step_rad": own_step,
        "set_aside": set_aside,
        "all_solved": all(r["solved"] == n for r in rows),
        "max_joint_step_rad": max(r["max_joint_step_rad"] for r in rows),
        "paths_with_a_step_over_0.2_rad": sum(r["max_joint_step_rad"] > 0.2 for r in rows),
        "solve_path": {
            "all_solved": all(r["solved_by_our_judge"] == n for r in planned),
            "max_joint_step_rad": max(r["max_joint_step_rad"] for r in planned),
            "paths_with_a_step_over_0.2_rad": sum(
                r["max_joint_step_rad"] > 0.2 for r in planned
            ),
            "paths_planned": sum(r["planned"] for r in planned),
            "seconds_max": max(r["seconds"] for r in planned),
            "seconds_median_planned": float(
                np.median([r["seconds"] for r in planned if r["planned"]] or [np.nan])
            ),
        },
    }


def format_table(r: dict) -> str:
    f, u = r["free_axis"], r["unreachable"]
    return (
        f"{r['robot']}\n"
        f"  free z axis: {f['solve_rate'] * 100:.2f} % of {f['targets']:,} solved "
        f"({f['solve_rate_with_the_angle_fixed'] * 100:.1f} % with the angle fixed)\n"
        f"  outside the reach: {u['targets']} targets, {u['solved']} solved, "
        f"{u['best_effort']} best effort, {u['rejected']} rejected, "
        f"{u['reason_says_outside_the_reach']} say so; closest pose within 1 mm of a "
        f"{u['brute_restarts']:,}-seed brute force: {u['within_1mm_of_brute_force']} "
        f"(largest gap {u['gap_to_brute_force_mm_max']:.3f} mm), median {u['us_median']:.0f} µs\n"
        + _tracking_lines(r["tracking"], each=True)
    )


def _paths(count: int) -> str:
    return f"{count} path" + ("" if count == 1 else "s")


def _tracking_lines(t: dict, each: bool) -> str:
    w, over = t["solve_path"], t.get("paths_with_a_step_over_0.2_rad")
    streamed = (
        "largest joint step per path "
        + ", ".join(
            f"{p['max_joint_step_rad']:.3f} (path's own {p['path_max_joint_step_rad']:.3f})"
            for p in t["paths"]
        )
        + " rad"
        if each
        else f"{_paths(over)} with a joint step over 0.2 rad, the largest "
        f"{t['max_joint_step_rad']:.3f} rad"
    )
    whole = (
        f"largest joint step {w['max_joint_step_rad']:.3f} rad"
        if each
        else f"{_paths(w['paths_with_a_step_over_0.2_rad'])} with a joint step over 0.2 rad, "
        f"the largest {w['max_joint_step_rad']:.3f} rad"
    )
    return (
        f"  tracking: {len(t['paths'])} paths of {t['targets_per_path']} targets 5 mm apart "
        f"({len(t['set_aside'])} set aside: their own joints step over "
        f"{t['path_max_own_step_rad']} rad)\n"
        f"    as a stream (solve with current=, last=): all solved: {t['all_solved']}, "
        f"{streamed}\n"
        f"    known beforehand (solve_path): all solved: {w['all_solved']}, {whole}, "
        f"{w['paths_planned']} planned where tracking would jump (at most "
        f"{w['seconds_max']:.1f} s a path)"
    )
