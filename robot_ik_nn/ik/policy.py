"""The one solving policy, compiled: which seeds are refined, in which order, until when.

For each target: the verdict of verdicts.check (a rejected target is not solved at all); with
``iterations = 0`` the seed alone (the network's joints, else the first warm start, else
mid-range), projected into the limits and judged; otherwise, first answer within tolerance wins:

1. a warm start (the last answer, or the arm's joints) that is already within ``warm_radius``:
   tracking, where the arm is the best guess (LM damped at least kernel.LAM_TRACK, so that a
   nearly singular direction does not turn joints far; refined ``restart_iterations`` more if
   need be, then from up to NEAR_TRIES seeds around it: a joint at a limit can stall LM there,
   and a seed elsewhere risks another branch, a jump of the arm; then from seeds drawn wider,
   up to ``track_search`` rad: where the stream must jump, the smallest jump found);
2. the network's candidates (one per head): the first, in head order, whose tool lands within
   candidates.CLOSE of the target, else the closest; then the others, closest first;
3. the other warm starts; without network and warm starts, mid-range;
4. up to ``restarts`` seeds, alternately the best answer so far with its joints stuck at a limit
   and a random half of the others drawn anew (the arm kept, another wrist branch tried), and
   uniformly random joints.

When none is within tolerance the closest one is the best effort. A target outside the arm's
reach (verdicts.check) tries up to ``far_restarts`` seeds instead of ``restarts``, ending once
``far_patience`` in a row brought its closest pose no closer: it can only have a closest pose.
With warm starts, continuous joints come back within pi of the freshest one (no 2 pi jumps
while tracking).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import candidates, verdicts
from .collision import checks, free
from .forward import fk, quat_to_matrix
from .kernel import (
    LAM_FAR,
    LAM_NEAR,
    LAM_TRACK,
    clamp,
    descend,
    near_seed,
    refine,
    residual,
    restart_seed,
    secondary,
    start_stream,
    weighted,
)
from .layout import (
    CONTINUOUS,
    FAR_ITERS,
    FAR_PATIENCE,
    FAR_POLISH,
    FAR_RESTARTS,
    HI,
    ITERS,
    LO,
    OX,
    OZ,
    POS_TOL,
    QTOL,
    REACH,
    RESTART_ITERS,
    RESTARTS,
    ROT_TOL,
    ROT_W,
    TOO_FAR,
    TRACK_LIMITS,
    TRACK_SEARCH,
    TYPE,
    WARM,
    WORK_ROWS,
    collision_parts,
    parts,
    views,
)

NEAR_TRIES = 64  # seeds a rung around a warm start that LM could not finish from
NEAR_SPREAD = 0.05  # rad (m): a rung no wider than this is left out (LM from the warm start's)
# The rungs: each joint drawn within these fractions of settings.track_search of the warm start's
# (a dead end, where the stream must jump: the nearest answer found). On 500 spline paths (no
# network) the median largest step of the paths that jump fell from 4.66 to 3.84 rad on the Panda
# (262 -> 259 paths jump), 4.58 -> 3.97 on the iiwa (283 -> 282); the Niryo One's largest step
# from 4.48 to 3.07 (66 -> 65 paths); per target 11 us median either way. A first rung within
# NEAR_SPREAD, as walk.py has, helped nothing here: on 40 Panda spline paths 15 jumped with it and
# without; a stream without restarts left 1,909 of 40,000 targets unsolved with it, 1,853
# without, p99 713 against 29 us a target.
NEAR_RUNGS = (0.25, 0.5, 1.0)


@njit(cache=True)
def carried(last, previous, most, warm, ahead) -> bool:
    """A stream's warm starts ``warm`` with ``last`` moved on by its step from ``previous`` ahead
    of them, into ``ahead`` (one row more); False, ``ahead`` unfinished, where a joint moved more
    than ``most`` (IKSettings.carry_step: a new goal, not a motion to go on with)."""
    for j in range(last.shape[0]):
        step = last[j] - previous[j]
        if abs(step) > most:
            return False
        ahead[0, j] = last[j] + step
    ahead[1:] = warm
    return True


@njit(cache=True)
def verdict(cfg, pt, quat, has_quat):
    """verdicts.check with this solver's arm and settings."""
    origin = cfg[OX : OZ + 1]
    return verdicts.check(pt, quat, has_quat, origin, cfg[REACH], cfg[TOO_FAR], cfg[QTOL])


@njit(cache=True)
def _mid_range(chain, q):
    for j in range(q.shape[0]):
        q[j] = 0.0 if chain[j, TYPE] == CONTINUOUS else (chain[j, LO] + chain[j, HI]) / 2


@njit(cache=True)
def _beside(chain, q, near):
    """Continuous joints of ``q`` turned by whole turns to lie within pi of ``near`` (the arm's
    last joints): the same pose, without a 2 pi jump where the angle crosses pi."""
    for j in range(q.shape[0]):
        if chain[j, TYPE] == CONTINUOUS:
            q[j] = near[j] + (q[j] - near[j] + np.pi) % (2 * np.pi) - np.pi


@njit(cache=True)
def solve_target(model, netw, pt, quat, has_quat, warm, cur, has_cur, seed, has_seed, q, ws):
    """Solve one target into ``q``; returns (status, why, position error, rotation error,
    LM iterations).

    ``warm`` (S, dof): warm starts, the freshest first; ``cur``: the arm's joints (a tracking
    network's input); ``seed`` (heads, dof): the network's candidates when computed outside the
    kernel (``has_seed``), else the compiled network runs here, and only when it is needed.
    Status 0 solved, 1 best effort, 2 rejected; ``why`` is a targets code."""
    chain, cfg, meta, sizes = parts(model)
    code = verdict(cfg, pt, quat, has_quat)
    if 0 < code < verdicts.REJECTS:
        q[:] = np.nan
        return 2, code, np.nan, np.nan, 0
    missed = verdicts.NOT_FOUND if code == verdicts.OK else code  # the why of a best effort
    start_stream(cfg, pt, quat, has_quat, ws[15])
    best, Rt, netq, scores = ws[1], ws[12], ws[16], ws[17]
    if has_quat:
        quat_to_matrix(quat, Rt)
    w, pos_tol, rot_tol, iters = cfg[ROT_W], cfg[POS_TOL], cfg[ROT_TOL], int(cfg[ITERS])
    heads, n_warm = netq.shape[0], warm.shape[0]
    have_net = has_seed or candidates.applies(cfg, sizes, has_quat)
    col = collision_parts(model)
    checking = checks(col)
    if iters == 0:  # the seed alone: projected into the limits, never refined
        if have_net:
            candidates.ranked(model, netw, pt, Rt, has_quat, cur, has_cur, seed, has_seed, q, ws)
            q[:] = netq[candidates.next_best(scores)]
        elif n_warm > 0:
            q[:] = warm[0]
        else:
            _mid_range(chain, q)
        clamp(chain, q)
        _, pe, re = residual(chain, cfg, q, pt, Rt, has_quat, ws[4], ws[6], ws, False)
        if verdicts.reached(pe, re, pos_tol, rot_tol):
            if not checking or free(chain, col, q):
                return 0, verdicts.OK, pe, re, 0
            return 1, verdicts.COLLIDES, pe, re, 0
        return 1, missed, pe, re, 0
    best_score, bpe, bre, total = np.inf, np.nan, np.nan, 0
    # with a collision model: answers that collide are not solutions, and the best effort is the
    # closest free pose; only when nothing free turned up, the closest colliding one, said so
    fallback = np.empty(q.shape[0]) if checking else best  # not written to unless checking
    fb_score, fpe, fre, hit = np.inf, 0.0, 0.0, False
    if checking:
        _mid_range(chain, best)
    first_warm, restarts, restart_iters = 0, int(cfg[RESTARTS]), int(cfg[RESTART_ITERS])
    far, stale, patience = code == verdicts.OUT_OF_REACH, 0, int(cfg[FAR_PATIENCE])
    if far:  # only a closest pose: seeds refined longer, until they stop bringing it closer
        restarts, iters = int(cfg[FAR_RESTARTS]), max(iters, int(cfg[FAR_ITERS]))
        restart_iters = iters
    net_end = 1 + (heads if have_net else 0)
    for attempt in range(net_end + 1 + n_warm + restarts):
        if attempt == 0:  # 1. tracking: a warm start already close to the target
            if n_warm == 0:
                continue
            q[:] = warm[0]
            clamp(chain, q)
            cost, pe, re = residual(chain, cfg, q, pt, Rt, has_quat, ws[4], ws[6], ws, True)
            if weighted(pe, re, w) >= cfg[WARM]:
                continue
            # the wider seeds stand in for seeds anywhere: none without restarts (a planner's
            # stream that only asks whether LM continues)
            first_warm, wide = 1, cfg[TRACK_SEARCH] if restarts > 0 else 0.0
            pe, re, used = descend(
                chain, cfg, q, pt, Rt, has_quat, iters, ws, cost, pe, re, LAM_TRACK, LAM_TRACK
            )
            if not verdicts.reached(pe, re, pos_tol, rot_tol):  # near a limit LM converges
                # slowly, and every other seed risks another branch (a jump of the arm): go on
                # from here first
                pe, re, more = refine(
                    chain, cfg, q, pt, Rt, has_quat, restart_iters, ws, LAM_FAR, LAM_TRACK
                )
                used += more
            for k in range(NEAR_TRIES * len(NEAR_RUNGS)):  # stuck all the same: seeds
                if verdicts.reached(pe, re, pos_tol, rot_tol):  # around it, the nearest ones first
                    break
                spread = NEAR_RUNGS[k // NEAR_TRIES] * wide
                if spread <= NEAR_SPREAD:  # none without restarts (wide 0)
                    continue
                near_seed(chain, warm[0], spread, q, ws[15])
                pe, re, more = refine(
                    chain, cfg, q, pt, Rt, has_quat, restart_iters, ws, LAM_FAR, LAM_TRACK
                )
                used += more
            if cfg[TRACK_LIMITS] > 0.0 and verdicts.reached(pe, re, pos_tol, rot_tol):
                # the self-motion, if any, kept away from the limits (kernel.secondary)
                pe2, re2, more, moved = secondary(
                    chain, cfg, q, pt, Rt, has_quat, ws, cfg[TRACK_LIMITS]
                )
                used += more
                if moved:
                    pe, re = pe2, re2
        elif attempt < net_end:  # 2. the network's candidates, closest first
            if attempt == 1:
                cost, pe, re = candidates.first(
                    model, netw, pt, Rt, has_quat, cur, has_cur, seed, has_seed, q, ws
                )
                pe, re, used = descend(
                    chain, cfg, q, pt, Rt, has_quat, iters, ws, cost, pe, re, LAM_NEAR
                )
            else:
                candidates.following(model, pt, Rt, has_quat, q, ws)
                pe, re, used = refine(chain, cfg, q, pt, Rt, has_quat, iters, ws, LAM_NEAR)
        elif attempt == net_end:  # 3. without network or warm start: mid-range
            if have_net or n_warm > 0:
                continue
            _mid_range(chain, q)
            pe, re, used = refine(chain, cfg, q, pt, Rt, has_quat, iters, ws)
        elif attempt <= net_end + n_warm:  # 3. the other warm starts
            k = attempt - net_end - 1
            if k < first_warm:
                continue
            q[:] = warm[k]
            pe, re, used = refine(chain, cfg, q, pt, Rt, has_quat, iters, ws, LAM_NEAR)
        else:  # 4. restarts: alternately partial (from the best so far) and uniformly random
            if far and stale >= patience:  # a closest pose no restart has improved for a while
                break
            stale += 1
            k = attempt - net_end - 1 - n_warm
            restart_seed(chain, best, k % 2 == 0 and code == verdicts.OK, q, ws[15])
            pe, re, used = refine(chain, cfg, q, pt, Rt, has_quat, restart_iters, ws)
        total += used
        exact, score = verdicts.reached(pe, re, pos_tol, rot_tol), weighted(pe, re, w)
        if not (exact or score < best_score):
            continue
        if not checking or free(chain, col, q):
            if exact:
                if n_warm > 0:
                    _beside(chain, q, warm[0])
                return 0, verdicts.OK, pe, re, total
            if score < best_score - 1e-7:  # closer by more than a tenth of a micrometre
                stale = 0
            best_score, bpe, bre = score, pe, re
            best[:] = q
        else:
            hit = hit or exact
            if score < fb_score:
                fb_score, fpe, fre = score, pe, re
                fallback[:] = q
    if code == verdicts.OUT_OF_REACH and best_score < np.inf:
        # a closest pose often leans on limits: each joint at one limit tries the other one,
        # pass after pass while that brings the pose closer
        better = True
        while better:
            better = False
            for j in range(q.shape[0]):
                at_lo, at_hi = best[j] - chain[j, LO] < 1e-9, chain[j, HI] - best[j] < 1e-9
                if chain[j, TYPE] == CONTINUOUS or not (at_lo or at_hi):
                    continue
                q[:] = best
                q[j] = chain[j, HI] if at_lo else chain[j, LO]
                pe, re, used = refine(chain, cfg, q, pt, Rt, has_quat, restart_iters, ws)
                total += used
                if weighted(pe, re, w) < best_score - 1e-6 and (
                    not checking or free(chain, col, q)
                ):
                    best_score, bpe, bre, better = weighted(pe, re, w), pe, re, True
                    best[:] = q
        # far from the target the Gauss-Newton model is poor and LM creeps: refine on
        q[:] = best
        pe, re, used = refine(chain, cfg, q, pt, Rt, has_quat, int(cfg[FAR_POLISH]), ws)
        total += used
        if weighted(pe, re, w) < best_score and (
            not checking or free(chain, col, q)
        ):
            best_score, bpe, bre = weighted(pe, re, w), pe, re
            best[:] = q
    if best_score == np.inf and fb_score < np.inf:
        best[:] = fallback
        bpe, bre, hit = fpe, fre, True
    q[:] = best
    if n_warm > 0:
        _beside(chain, q, warm[0])
    return 1, verdicts.COLLIDES if hit else missed, bpe, bre, total


@njit(cache=True)
def solve_one(model, netw, pt, quat, has_quat, warm, cur, has_cur, seed, has_seed, scratch, q):
    """One target into ``q`` (dof) for a caller that keeps its scratch buffers; returns
    solve_target's (status, why, position error, rotation error, LM iterations)."""
    n = int(model[0])
    ws = views(scratch, n, int(model[7]), max(int(model[2]), 1))
    return solve_target(model, netw, pt, quat, has_quat, warm, cur, has_cur, seed, has_seed, q, ws)


@njit(cache=True, parallel=True)
def solve_batch(
    model,
    netw,
    P,
    Q,
    has_quat,
    warm,
    cur,
    has_cur,
    seeds,
    has_seed,
    chunks,
    scratch_len,
    q,
    info,
):
    """Every target of a batch, in parallel over ``chunks`` slices; each target's random numbers
    come from the settings' seed and the target alone (kernel.start_stream), so its answer does
    not depend on the number of threads, nor on the other targets in the batch."""
    B, n = P.shape[0], q.shape[1]
    width = max(int(model[2]), 1)
    for c in prange(chunks):
        scratch = np.empty(scratch_len)
        ws = views(scratch, n, int(model[7]), width)
        for i in range(c * B // chunks, (c + 1) * B // chunks):
            status, why, pe, re, its = solve_target(
                model,
                netw,
                P[i],
                Q[i],
                has_quat,
                warm[i],
                cur[i],
                has_cur,
                seeds[i],
                has_seed,
                q[i],
                ws,
            )
            info[i, 0], info[i, 1], info[i, 2], info[i, 3], info[i, 4] = status, why, pe, re, its


@njit(cache=True, parallel=True)
def forward_batch(model, Q, P, R, chunks):
    """Tip positions (B, 3) and rotations (B, 3, 3) for joints ``Q`` (B, dof), in parallel."""
    chain = parts(model)[0]
    B, n = Q.shape
    for c in prange(chunks):
        J, work = np.empty((6, n)), np.empty((WORK_ROWS, n))
        for i in range(c * B // chunks, (c + 1) * B // chunks):
            fk(chain, Q[i], P[i], R[i], J, work, False)
