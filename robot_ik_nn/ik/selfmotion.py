"""The self-motion of one target, swept (compiled): the answers an arm with room to spare (a
7-joint arm on a pose, or any arm with a free tool axis) reaches the target with, one every
``spacing`` radians along the curve they lie on. The planner (path.py) lays these out at its
marks along a path.

A sweep follows the curve by continuation: from an exact answer, a step of ``spacing`` (its
largest joint) along the Jacobian's null space, in the direction nearest the step before, then
LM back onto the target. Holding one joint at values ``spacing`` apart (the planner's earlier
way) needs a solver per held value and stops where the held joint's value folds back along the
curve; the tangent does not fold, so one sweep walks a whole stretch, until a joint limit, a
collision, a miss, or the curve closes on itself.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .collision import checks, free
from .forward import quat_to_matrix
from .kernel import LAM_TRACK, _damped_step, refine, residual
from .layout import (
    CONTINUOUS,
    HI,
    ITERS,
    LO,
    POS_TOL,
    ROT_TOL,
    TYPE,
    collision_parts,
    parts,
    views,
)
from .verdicts import reached


@njit(cache=True)
def _null(J, m, n, v, ws, out):
    """``v`` projected onto the null space of ``J``'s first ``m`` rows: v - J+ J v."""
    Jv, H, rhs, step = np.empty(6), ws[8], ws[3], ws[2]
    for r in range(m):
        acc = 0.0
        for j in range(n):
            acc += J[r, j] * v[j]
        Jv[r] = acc
    _damped_step(J, Jv, m, n, 1e-9, H, rhs, step)
    for j in range(n):
        out[j] = v[j] - step[j]


@njit(cache=True)
def _largest(v):
    biggest = 0.0
    for j in range(v.shape[0]):
        biggest = max(biggest, abs(v[j]))
    return biggest


@njit(cache=True)
def _at_a_limit(chain, q) -> bool:
    for j in range(q.shape[0]):
        if chain[j, TYPE] != CONTINUOUS and (q[j] <= chain[j, LO] or q[j] >= chain[j, HI]):
            return True
    return False


@njit(cache=True)
def _revisits(out, upto, q, within, skip) -> bool:
    """Whether ``q`` lies within ``within`` (every joint) of one of ``out``'s first ``upto``
    rows other than row ``skip`` (the one it stepped from)."""
    for r in range(upto):
        if r == skip:
            continue
        near = True
        for j in range(q.shape[0]):
            if abs(out[r, j] - q[j]) > within:
                near = False
                break
        if near:
            return True
    return False


@njit(cache=True)
def sweep(model, p, quat, has_quat, seeds, spacing, max_step, most, scratch, out, done=0):
    """The answers along the self-motion through each exact row of ``seeds`` (S, dof), both
    ways, into ``out`` (rows from ``done``: the first ``done`` rows were swept before, and count
    as swept; the seeds themselves included): a row every ``spacing`` (its largest joint step
    from the row before, never over ``max_step``). A seed within ``0.75 spacing`` of a row
    already swept is on a stretch already walked and is skipped. At most ``most`` rows in all
    (``out`` must hold them). Returns how many rows ``out`` holds."""
    chain, cfg, _, _ = parts(model)
    col = collision_parts(model)
    checking = checks(col)
    n = seeds.shape[1]
    ws = views(scratch, n, int(model[7]), max(int(model[2]), 1))
    Rt = ws[12]
    if has_quat:
        quat_to_matrix(quat, Rt)
    iters = int(cfg[ITERS])
    m = 6 if has_quat else 3
    q, prev, t, v, t0 = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    count = done
    for s in range(seeds.shape[0]):
        if count >= most:
            break
        if _revisits(out, count, seeds[s], 0.75 * spacing, -1):
            continue  # on a stretch already swept
        q[:] = seeds[s]
        pe, re, _ = refine(chain, cfg, q, p, Rt, has_quat, iters, ws, LAM_TRACK, LAM_TRACK)
        if not reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):
            continue
        out[count] = q
        count += 1
        first = count - 1
        # the first direction: the null space's largest column (a joint's own turn projected)
        residual(chain, cfg, q, p, Rt, has_quat, ws[4], ws[6], ws, True)
        best = 0.0
        for j0 in range(n):
            for j in range(n):
                v[j] = 0.0
            v[j0] = 1.0
            _null(ws[6], m, n, v, ws, ws[1])
            size = _largest(ws[1])
            if size > best:
                best = size
                t0[:] = ws[1]
        if best < 1e-6:
            continue  # no self-motion here
        looped = False
        for sign in (1.0, -1.0):
            if looped:
                break  # the first way round came back: nothing left the other way
            prev[:] = out[first]
            last = first
            for j in range(n):
                v[j] = sign * t0[j] / best
            while count < most:
                for j in range(n):
                    q[j] = prev[j] + spacing * v[j]
                pe, re, _ = refine(chain, cfg, q, p, Rt, has_quat, iters, ws, LAM_TRACK, LAM_TRACK)
                if not reached(pe, re, cfg[POS_TOL], cfg[ROT_TOL]):
                    break
                moved = 0.0
                for j in range(n):
                    moved = max(moved, abs(q[j] - prev[j]))
                if moved > max_step:
                    break  # thrown off the curve
                if checking and not free(chain, col, q):
                    break
                if moved < 0.25 * spacing:  # held at a limit: the stretch ends here, its end
                    if moved > 1e-3 * spacing:  # kept (a way may run along the limit)
                        out[count] = q
                        count += 1
                    break
                closed = 0.0
                for j in range(n):
                    closed = max(closed, abs(q[j] - out[first, j]))
                if sign > 0 and count - first > 2 and closed < spacing:
                    looped = True
                    break  # round the loop and back
                if _revisits(out, count, q, 0.5 * spacing, last):
                    break  # back onto itself (turned at a limit) or onto a stretch swept before
                out[count] = q
                count += 1
                # the next direction: the step just taken, projected onto the null space here
                # (refine left q's Jacobian in ws[6], less the columns of joints it held at a
                # limit: computed again only then)
                if _at_a_limit(chain, q):
                    residual(chain, cfg, q, p, Rt, has_quat, ws[4], ws[6], ws, True)
                for j in range(n):
                    v[j] = q[j] - prev[j]
                _null(ws[6], m, n, v, ws, t)
                size = _largest(t)
                if size < 1e-3 * moved:
                    break
                for j in range(n):
                    v[j] = t[j] / size
                prev[:] = q
                last = count - 1
    return count


def self_motion(solver, p, quat, seeds, spacing, max_step, most=4000, swept=None) -> np.ndarray:
    """The rows of :func:`sweep` for one target (``quat`` None: a position alone). ``swept``:
    rows of an earlier sweep of the same target, kept first and not swept again (the stretches
    through ``seeds`` that they lie on are not walked twice)."""
    seeds = np.ascontiguousarray(np.asarray(seeds, dtype=float).reshape(-1, solver.arm.dof))
    out = np.empty((most, solver.arm.dof))
    done = 0
    if swept is not None and len(swept):
        done = min(len(swept), most)
        out[:done] = np.asarray(swept, dtype=float).reshape(-1, solver.arm.dof)[:done]
    has = quat is not None
    count = sweep(
        solver._model,
        np.ascontiguousarray(p, dtype=float),
        np.ascontiguousarray(quat if has else np.zeros(4), dtype=float),
        has,
        seeds,
        float(spacing),
        float(max_step),
        int(most),
        solver._scratch,
        out,
        done,
    )
    return out[:count].copy()
