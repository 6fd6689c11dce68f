"""What every benchmark row is made of: targets, one judge, timing loops, one CPU.

Every answer, ours and the peers', is judged here by the forward kinematics the caller passes
(the package's compiled ones, or PyBullet's), never by the errors a solver reports: solved =
within IKSettings' default tolerances (1 mm, 0.01 rad) by the one acceptance rule
(ik/verdicts.reached_all), every joint inside its limits.
"""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np

from ..arm.rotations import rotation_angle
from ..ik.settings import IKSettings
from ..ik.verdicts import reached_all


@contextlib.contextmanager
def one_cpu():
    """Pin this process to one CPU (single-target rows: one thread for every solver, TRAC-IK's
    two internal threads included), with BLAS on one thread (its pool would fight for the CPU)."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(cpus)})
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(1)
    try:
        with limits:
            yield
    finally:
        os.sched_setaffinity(0, cpus)


def judge(
    fk, arm, q, P, R, pos_tol: float = IKSettings.pos_tol, rot_tol: float = IKSettings.rot_tol
):
    """(solved mask, position errors, rotation errors) of answers ``q`` (NaN rows: no answer)."""
    q = np.asarray(q, dtype=float)
    answered = np.all(np.isfinite(q), axis=1)
    pe, re = np.full(len(q), np.inf), np.full(len(q), np.inf)
    if answered.any():
        p_q, r_q = fk(q[answered])
        pe[answered] = np.linalg.norm(p_q - P[answered], axis=1)
        re[answered] = rotation_angle(r_q, R[answered]) if R is not None else 0.0
    within = reached_all(pe, re, pos_tol, rot_tol)
    solved = answered & within & arm.within_limits(np.nan_to_num(q))
    return solved, pe, re


def one_at_a_time(solve, P, Q, R, dof: int) -> tuple[np.ndarray, np.ndarray]:
    """Call ``solve(p, quat, R)`` per target: (answers (B, dof), NaN for none; seconds (B,))."""
    answers, seconds = np.full((len(P), dof), np.nan), np.empty(len(P))
    solve(P[0], None if Q is None else Q[0], None if R is None else R[0])  # warm up
    clock = time.perf_counter
    for i in range(len(P)):
        started = clock()
        q = solve(P[i], None if Q is None else Q[i], None if R is None else R[i])
        seconds[i] = clock() - started
        if q is not None:
            answers[i] = q
    return answers, seconds


def row(solved: np.ndarray, seconds: np.ndarray, **extra) -> dict:
    """The figures of one solver on one set of targets (times in microseconds)."""
    us = seconds * 1e6
    return {
        "targets": len(us),
        "solved": int(solved.sum()),
        "solve_rate": float(solved.mean()),
        "us_median": float(np.median(us)),
        "us_p99": float(np.percentile(us, 99)),
        "us_mean": float(us.mean()),
        "solved_per_s": float(solved.sum() / seconds.sum()),
        **extra,
    }


def tracking_path(arm, fk, n: int, step_m: float = 0.005, seed: int = 3):
    """``n`` targets along a smooth joint-space path whose tool moves about ``step_m`` per target
    (a target stream at 200 Hz), with the joints that made each one."""
    rng = np.random.default_rng(seed)
    span = arm.upper - arm.lower
    start = arm.lower + span * (0.25 + 0.5 * rng.random(arm.dof))
    direction = rng.standard_normal(arm.dof) * span
    t = np.linspace(0.0, 1.0, 1001)[:, None]
    dense = start + 0.25 * np.sin(np.pi * t) * direction / np.linalg.norm(
        direction
    ) * np.linalg.norm(span)
    dense = np.clip(dense, arm.lower, arm.upper)
    p, _ = fk(dense)
    along = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(p, axis=0), axis=1))])
    length = max(along[-1], step_m)
    travelled = length - np.abs(np.arange(n) * step_m % (2 * length) - length)  # there and back
    picks = np.interp(travelled, along, np.arange(len(along)))
    q = np.array([np.interp(picks, np.arange(len(dense)), dense[:, j]) for j in range(arm.dof)]).T
    P, R = fk(q)
    return q, P, R


def progress_bar(total: int, desc: str, unit: str = "path"):
    """A tqdm bar for a long measurement, or None where tqdm is not installed (the base install
    has none: the bar is a nicety)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True)
