"""`robot-ik-nn bench MODEL --tracking N`: paths and streams, measured.

Each path is made from the arm's own smooth joint motion across its whole joint space: a cubic
spline through six uniformly random joint sets (clipped to the limits), resampled so that from
one target to the next the tool moves at most ``step_m`` (5 mm) and no joint of the path's own
moves more than ``own_step`` (0.05 rad): a jump-free answer always exists (the path's own
joints), and a step of the answers over 0.2 rad is the solver's doing. A path has up to
``targets`` targets (the spline's first ones).

Each path is solved twice:

- as a stream, target by target with ``solve(current=, last=, previous=)`` from the path's first
  joints
  (teleoperation, visual servoing, the inference node's ``~/target_pose``: no look ahead);
- given whole to ``solve_path`` from the same joints.

For both: every target judged solved by the arm's forward kinematics (position within 1 mm,
rotation within 0.01 rad, joints inside the limits; test_kinematics holds that FK to PyBullet's),
the paths with a joint step over 0.2 rad between two answers (the first from the start), the
largest step, and the time: per target for the stream, per path (and per 1,000 targets) whole.
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy.interpolate import CubicSpline

from ..arm.rotations import matrix_to_quaternion
from ..ik.layers import links, polished, walk_samples
from ..ik.path import tracked
from ..ik.selfmotion import self_motion
from ..ik.several_answers import manipulability
from .measure import judge, one_cpu, progress_bar

JUMP = 0.2  # rad: a step of any joint over this between two answers is a jump


def spline_path(arm, fk, seed: int, targets: int = 1000, step_m=0.005, own_step=0.05, knots=6):
    """Joints (n, dof), tool positions (n, 3) and rotations (n, 3, 3) of one path: see the
    module's docstring. Deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    q_knots = arm.lower + (arm.upper - arm.lower) * rng.random((knots, arm.dof))
    spline = CubicSpline(np.arange(knots), q_knots)
    t = np.linspace(0.0, knots - 1, 200 * (knots - 1) + 1)
    dense = np.clip(spline(t), arm.lower, arm.upper)
    p, _ = fk(dense)
    # the path's own measure: a unit is 5 mm of the tool or 0.05 rad of a joint, the larger
    unit = np.maximum(
        np.linalg.norm(np.diff(p, axis=0), axis=1) / step_m,
        np.abs(np.diff(dense, axis=0)).max(axis=1) / own_step,
    )
    along = np.concatenate([[0.0], np.cumsum(unit)])
    at = np.arange(0.0, along[-1], 1.0)[:targets]
    where = np.interp(at, along, np.arange(len(dense)))
    lo = np.minimum(where.astype(int), len(dense) - 2)
    frac = (where - lo)[:, None]
    q = dense[lo] * (1 - frac) + dense[lo + 1] * frac
    P, R = fk(q)
    return q, P, R


def streamed(solver, P, Q, start):
    """Each target solved from the last answer, as a stream (ik/path.py ``tracked``): answers
    (NaN rows: none) and the seconds of each call."""
    seconds = np.empty(len(P))
    q, _ = tracked(solver, P, Q, start, seconds)
    return q, seconds


def _step(start, q) -> float:
    """The largest joint step between two answers, the first from ``start`` (inf where a target
    has no answer)."""
    steps = np.abs(np.diff(np.vstack([start, q]), axis=0)).max(axis=1)
    return float(np.where(np.isnan(steps), np.inf, steps).max())


def _summary(rows, key, seconds_key) -> dict:
    steps = np.array([r[key]["max_joint_step_rad"] for r in rows])
    seconds = np.array([r[key][seconds_key] for r in rows])
    over = steps > JUMP
    return {
        "paths_with_a_step_over_0.2_rad": int(over.sum()),
        "paths_with_a_step_over_0.2_rad_pct": float(over.mean() * 100),
        "max_joint_step_rad": float(steps.max()),
        "unsolved_targets": int(sum(r["targets"] - r[key]["solved"] for r in rows)),
        "paths_not_all_solved": int(sum(r[key]["solved"] < r["targets"] for r in rows)),
        f"{seconds_key}_median": float(np.median(seconds)),
        f"{seconds_key}_p99": float(np.percentile(seconds, 99)),
        f"{seconds_key}_max": float(seconds.max()),
    }


def measure(model, paths: int, targets: int = 1000, network: bool = False, say=None, bar=True):
    """``paths`` spline paths of up to ``targets`` targets, streamed and whole. ``network``:
    with the model's network (else the arm alone, seeded by warm starts and restarts)."""
    from ..ik.solver import Solver

    solver = Solver.load(model)
    pose = solver.mode == "pose"
    if not network:
        solver = solver.without_network()
    arm = solver.arm
    (say or (lambda text: None))(f"{paths} spline paths of up to {targets} targets ({arm.name})")
    shown = progress_bar(paths, f"tracking paths ({arm.name})") if bar else None
    rows = []
    q0, P0, R0 = spline_path(arm, solver.forward, 0, 20)  # compiled before anything is timed
    Q0 = matrix_to_quaternion(R0) if pose else None
    solver.solve(P0[1], None if Q0 is None else Q0[1], current=q0[0])
    solver.solve(P0[2], None if Q0 is None else Q0[2], current=q0[1], last=q0[1], previous=q0[0])
    walk_samples(solver, P0, Q0, [1, 2], q0[:2], 0.2)  # the planners' compiled walk
    walk_samples(solver, P0, Q0, [1, 2], q0[:2], 0.2, 0)  # and sweep
    self_motion(solver, P0[0], None if Q0 is None else Q0[0], q0[:1], 0.1, 0.2)
    polished(solver, P0, Q0, q0)  # a planned way made exact
    links(q0[:3], q0[:2], np.zeros(2), 0.2)  # and the layers linked
    manipulability(solver._model, np.ascontiguousarray(q0[:2]), np.empty(2))  # reseeding
    solver.solve(P0[1], None if Q0 is None else Q0[1], solutions=8)  # the branches' answers
    solver.with_settings(restarts=0).solve_batch(
        P0[:2], None if Q0 is None else Q0[:2], current=q0[:2], warm=q0[:2, None, :]
    )  # and the branches tracked by the full policy
    load = os.getloadavg()[0]  # on a shared machine the times read high: said beside them
    with one_cpu():  # the stream and the whole path on one CPU, as on a robot's computer
        for seed in range(paths):
            q_path, P, R = spline_path(arm, solver.forward, 1000 + seed, targets)
            Q = matrix_to_quaternion(R) if pose else None
            start = q_path[0]
            q, seconds = streamed(solver, P, Q, start)
            ok, _, _ = judge(solver.forward, arm, q, P, R if pose else None)
            cpu = time.process_time()
            plan = solver.solve_path(P, Q, start=start)
            cpu = time.process_time() - cpu
            whole, _, _ = judge(solver.forward, arm, plan.q, P, R if pose else None)
            rows.append(
                {
                    "seed": 1000 + seed,
                    "targets": len(P),
                    "path_max_joint_step_rad": _step(start, q_path),
                    "streamed": {
                        "solved": int(ok.sum()),
                        "max_joint_step_rad": _step(start, q),
                        "seconds": float(seconds.sum()),
                        "us_median_per_target": float(np.median(seconds) * 1e6),
                        "us_p99_per_target": float(np.percentile(seconds, 99) * 1e6),
                    },
                    "whole": {
                        "solved": int(whole.sum()),
                        "max_joint_step_rad": _step(start, plan.q),
                        "planned": bool(plan.planned),
                        "seconds": float(plan.seconds),
                        "cpu_seconds": float(cpu),
                        "seconds_per_1000_targets": float(plan.seconds * 1000 / len(P)),
                    },
                }
            )
            if shown is not None:
                shown.update()
    if shown is not None:
        shown.close()
    stream = _summary(rows, "streamed", "seconds")
    us = np.array([r["streamed"]["us_median_per_target"] for r in rows])
    stream["us_median_per_target"] = float(np.median(us))
    stream["us_p99_per_target_worst_path"] = float(
        max(r["streamed"]["us_p99_per_target"] for r in rows)
    )
    given = _summary(rows, "whole", "seconds")
    per_1000 = np.array([r["whole"]["seconds_per_1000_targets"] for r in rows])
    given.update(
        {
            "seconds_per_1000_targets_median": float(np.median(per_1000)),
            "seconds_per_1000_targets_p99": float(np.percentile(per_1000, 99)),
            "seconds_per_1000_targets_max": float(per_1000.max()),
            "paths_planned": int(sum(r["whole"]["planned"] for r in rows)),
            "cpu_seconds_median": float(np.median([r["whole"]["cpu_seconds"] for r in rows])),
            "cpu_seconds_max": float(max(r["whole"]["cpu_seconds"] for r in rows)),
        }
    )
    return {
        "robot": arm.name,
        "network": solver.backend,
        "settings": solver.settings.to_dict(),
        "load_average": {"start": load, "end": os.getloadavg()[0], "cpus": os.cpu_count()},
        "tracking": {
            "paths": len(rows),
            "targets_max": targets,
            "targets_median": float(np.median([r["targets"] for r in rows])),
            "path_max_joint_step_rad": float(max(r["path_max_joint_step_rad"] for r in rows)),
            "streamed": stream,
            "whole": given,
            "rows": rows,
        },
    }


def format_table(r: dict) -> str:
    """The markdown (and terminal) summary of one arm."""
    t = r["tracking"]
    s, w = t["streamed"], t["whole"]
    return (
        f"## {r['robot']} (network: {r['network']})\n\n"
        f"{t['paths']} paths, cubic splines through 6 random joint sets, 5 mm / 0.05 rad "
        f"steps (median {t['targets_median']:.0f} targets, at most {t['targets_max']}; the "
        f"path's own joints step at most {t['path_max_joint_step_rad']:.3f} rad)\n\n"
        "| | paths with a step > 0.2 rad | largest step (rad) | unsolved targets | "
        "time per path, median / p99 / max (s) | per target / per 1,000 targets |\n"
        "|---|---|---|---|---|---|\n"
        "| streamed (`solve(current=, last=, previous=)`) | "
        f"{s['paths_with_a_step_over_0.2_rad']} "
        f"({s['paths_with_a_step_over_0.2_rad_pct']:.1f} %) | {s['max_joint_step_rad']:.3f} | "
        f"{s['unsolved_targets']} | {s['seconds_median']:.3f} / {s['seconds_p99']:.3f} / "
        f"{s['seconds_max']:.3f} | median {s['us_median_per_target']:.1f} µs per target |\n"
        f"| whole (`solve_path`) | {w['paths_with_a_step_over_0.2_rad']} "
        f"({w['paths_with_a_step_over_0.2_rad_pct']:.1f} %) | {w['max_joint_step_rad']:.3f} | "
        f"{w['unsolved_targets']} | {w['seconds_median']:.3f} / {w['seconds_p99']:.3f} / "
        f"{w['seconds_max']:.3f} | median {w['seconds_per_1000_targets_median']:.3f} s, max "
        f"{w['seconds_per_1000_targets_max']:.3f} s; {w['paths_planned']} planned |\n"
        + _load_line(r, w)
    )


def _load_line(r: dict, w: dict) -> str:
    """The machine's load beside the times (older results carry none)."""
    if "load_average" not in r or "cpu_seconds_max" not in w:
        return ""
    load = r["load_average"]
    return (
        f"\nLoad average {load['start']:.1f} at the start, {load['end']:.1f} at the end, "
        f"on {load['cpus']} CPUs; the whole paths' CPU time, median / max: "
        f"{w['cpu_seconds_median']:.3f} / {w['cpu_seconds_max']:.3f} s\n"
    )
