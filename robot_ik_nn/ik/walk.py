"""A planner's samples walked along a path in one compiled call (path.py's planners, through
layers.walk_samples): each sample tracked target by target by the kernel's LM, damped as in
tracking, ending where it misses, steps too far or collides."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .collision import checks, free
from .forward import quat_to_matrix
from .kernel import LAM_FAR, LAM_TRACK, near_seed, refine, start_stream
from .layout import (
    CONTINUOUS,
    ITERS,
    POS_TOL,
    RESTART_ITERS,
    ROT_TOL,
    TWO_PI,
    TYPE,
    collision_parts,
    parts,
    views,
)
from .verdicts import reached

# A walked sample that LM cannot finish from the last answer tries seeds around it, as a stream
# does (policy.NEAR_TRIES, NEAR_SPREAD): without them the planner lost the way on Niryo One spline
# paths 1031 and 1364 (of 500) that it found with them.
WALK_NEAR_TRIES, WALK_NEAR_SPREAD = 64, 0.05
# A walked sample's LM starts from its last answer moved on by its last step (a path's targets
# follow each other smoothly), and from the last answer itself where that misses or lands over a
# step away. Fewer iterations (the planners' walks, iiwa 1087: 1.14 -> 0.75 s CPU), and near a
# singular pose the samples keep to their branch: Niryo One 1031 and 1364, which the walk lost
# and only the full policy's tracking (2.5-3.7 s) found, are found by the walk (0.2-0.3 s).
WALK_PREDICT = True
# The walk's LM lets its damping fall to WALK_FLOOR, not to tracking's LAM_TRACK (a stream keeps
# that: it commits to one answer and must not leap along the arm's weak directions; a walked
# sample that leaps over ``max_step`` just ends, its stretch swept again at the next mark). Near a
# singular pose (the iiwa's arm held straight) LAM_TRACK's floor held LM to 7.7 iterations a
# target on iiwa spline path 1354 (1.7 s CPU for the path), this one to 1.6 (0.8 s).
WALK_FLOOR = 1e-9


@njit(cache=True)
def walk(model, P, Q, has_quat, ks, q0, max_step, scratch, out, tries, before):
    """Each row of ``q0`` (S, dof) tracked through targets ``ks`` in order (a planner's samples
    along a path, path.py): from the last answer, LM damped as in tracking (where that misses,
    up to ``tries`` seeds around the last answer), one answer per target into ``out``
    (len(ks), S, dof); ``before`` (S, dof): each row's answer to the target before (the row
    itself where none), for the first step's prediction (WALK_PREDICT). A sample that misses a
    target, steps over ``max_step`` on any joint or collides (with a collision model) ends
    there: its later rows are NaN. One compiled call for a whole stretch of a path, instead of
    a batch call per target."""
    chain, cfg, _, _ = parts(model)
    col = collision_parts(model)
    checking = checks(col)
    n = q0.shape[1]
    ws = views(scratch, n, int(model[7]), max(int(model[2]), 1))
    Rt, q = ws[12], np.empty(n)
    iters = int(cfg[ITERS]) + int(cfg[RESTART_ITERS])
    out[:, :, :] = np.nan
    for s in range(q0.shape[0]):
        prev = q0[s]
        for t in range(ks.shape[0]):
            k = ks[t]
            if has_quat:
                quat_to_matrix(Q[k], Rt)
            pe, re = np.inf, np.inf
            back = before[s] if t == 0 else (q0[s] if t == 1 else out[t - 2, s])
            if WALK_PREDICT and (t > 0 or np.any(back != prev)):  # the step before, again:
                for j in range(n):  # LM has less to do
                    q[j] = 2.0 * prev[j] - back[j]
                pe, re, _ = refine(
                    chain, cfg, q, P[k], Rt, has_quat, iters, ws, LAM_TRACK, WALK_FLOOR
                )
                for j in range(n):  # an answer over a step away: from the last answer instead
                    gap = q[j] - prev[j]
                    if chain[j, TYPE] == CONTINUOUS:
                        gap = (gap + math.pi) % TWO_PI - math.pi
                    if abs(gap) > max_step:
                        pe = np.inf
            if not reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):
                q[:] = prev
                pe, re, _ = refine(
                    chain, cfg, q, P[k], Rt, has_quat, iters, ws, LAM_TRACK, WALK_FLOOR
                )
            if not reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):  # stuck: seeds around it, as
                start_stream(cfg, P[k], Q[k], has_quat, ws[15])  # a stream does
                for _ in range(tries):
                    near_seed(chain, prev, WALK_NEAR_SPREAD, q, ws[15])
                    pe, re, _ = refine(
                        chain, cfg, q, P[k], Rt, has_quat, iters, ws, LAM_FAR, LAM_TRACK
                    )
                    if reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):
                        break
            if not reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):
                break
            far = False
            for j in range(n):
                if chain[j, TYPE] == CONTINUOUS:  # no 2 pi jump where the angle crosses pi
                    q[j] = prev[j] + (q[j] - prev[j] + math.pi) % TWO_PI - math.pi
                far = far or abs(q[j] - prev[j]) > max_step
            if far or (checking and not free(chain, col, q)):
                break
            out[t, s] = q
            prev = out[t, s]


@njit(cache=True)
def polish(model, P, Q, has_quat, q, scratch):
    """Each row of ``q`` (n, dof; NaN rows skipped) refined in place onto its target of ``P``,
    ``Q`` down to the model's own stopping error, LM damped as in tracking (it stays where it
    is): a planner's samples walked with a looser stop (path_planners.PLAN_STOP_FRACTION) made
    as exact as a solved answer. A row LM cannot keep within the tolerances (or, with a
    collision model, free) stays as it was."""
    chain, cfg, _, _ = parts(model)
    col = collision_parts(model)
    checking = checks(col)
    n = q.shape[1]
    ws = views(scratch, n, int(model[7]), max(int(model[2]), 1))
    Rt, trial = ws[12], np.empty(n)
    iters = int(cfg[ITERS])
    for i in range(q.shape[0]):
        if not np.all(np.isfinite(q[i])):
            continue
        if has_quat:
            quat_to_matrix(Q[i], Rt)
        trial[:] = q[i]
        pe, re, _ = refine(chain, cfg, trial, P[i], Rt, has_quat, iters, ws, LAM_TRACK, LAM_TRACK)
        if reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):
            if not checking or free(chain, col, trial):
                q[i] = trial
