"""Several distinct answers for one target, compiled, and the orders they are returned in.

The search seeds the same limit-aware LM as the single answer (policy.py): the warm starts first
(the previous answer and the arm's joints, so that ``nearest`` finds the answer beside the arm
even on a 7-joint arm, whose answers form a continuum), then the network's candidates (each
head tends to learn its own branch: elbow up or down, wrist flipped or not), mid-range without a
network, then uniformly random joints. Every answer within tolerance
is compared with those kept so far: it is new when some joint differs by more than
``threshold`` (radians; metres for a prismatic joint; continuous joints compared modulo 2 pi).
The search stops when ``k`` distinct answers are kept, after ``attempts`` seeds, or once
``patience`` seeds in a row brought nothing new (the solver passes a quarter of ``attempts``, at
least 20; a brute-force search passes ``attempts``: it never stops early). Continuous joints of
every answer are turned by whole turns to lie within pi of the freshest warm start, as the single
answer's are (``policy._beside``): the arm is never sent most of a turn for a small move.

Orders (``ORDERS``): ``nearest`` to a reference (the arm's joints; mid-range without them),
``mid_range`` (farthest from the limits first: joints normalised by their half range), and
``manipulability`` (sqrt det(J J^T), most dexterous first).
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from . import candidates, network_backends, verdicts
from .collision import checks, free
from .forward import fk, quat_to_matrix
from .kernel import (
    LAM_FAR,
    LAM_NEAR,
    LAM_TRACK,
    clamp,
    refine,
    restart_seed,
    start_stream,
    weighted,
)
from .layout import (
    CONTINUOUS,
    ITERS,
    POS_TOL,
    RESTART_ITERS,
    ROT_TOL,
    ROT_W,
    TYPE,
    WORK_ROWS,
    collision_parts,
    parts,
    views,
)
from .policy import _beside, _mid_range, verdict
from .results import STATUS, Answer
from .settings import ORDERS


@njit(cache=True)
def joint_gap(chain, a, b):
    """The largest joint difference between ``a`` and ``b`` (continuous joints modulo 2 pi)."""
    gap = 0.0
    for j in range(a.shape[0]):
        d = abs(a[j] - b[j])
        if chain[j, TYPE] == CONTINUOUS:
            d = d % (2 * math.pi)
            d = min(d, 2 * math.pi - d)
        gap = max(gap, d)
    return gap


@njit(cache=True)
def solve_many(
    model,
    netw,
    pt,
    quat,
    has_quat,
    cur,
    has_cur,
    warm,
    seed,
    has_seed,
    attempts,
    patience,
    threshold,
    sols,
    errs,
    scratch,
):
    """Up to ``len(sols)`` distinct answers into ``sols`` (their errors into ``errs``); returns
    (status, why, count): count answers within tolerance (and free, with a collision model), or
    (count 0) the best effort in ``sols[0]``: the closest free pose found, else the closest
    colliding one (why: verdicts.COLLIDES). Status 0 solved, 1 best effort, 2 rejected.
    ``warm`` (S, dof): warm starts, the freshest first, tried before any other seed.
    ``seed``: the network's candidates when computed outside the kernel (``has_seed``), as in
    policy.py."""
    chain, cfg, meta, sizes = parts(model)
    n, k = sols.shape[1], sols.shape[0]
    ws = views(scratch, n, int(model[7]), max(int(model[2]), 1))
    code = verdict(cfg, pt, quat, has_quat)
    if 0 < code < verdicts.REJECTS:
        sols[:, :] = np.nan
        return 2, code, 0
    start_stream(cfg, pt, quat, has_quat, ws[15])
    best, Rt, netq = ws[1], ws[12], ws[16]
    q = np.empty(n)  # not ws[0]: refine works in that one
    if has_quat:
        quat_to_matrix(quat, Rt)
    w, pos_tol, rot_tol = cfg[ROT_W], cfg[POS_TOL], cfg[ROT_TOL]
    have_net = has_seed or candidates.applies(cfg, sizes, has_quat)
    col = collision_parts(model)
    checking = checks(col)
    heads = netq.shape[0] if have_net else 0
    iters = max(int(cfg[ITERS]), int(cfg[RESTART_ITERS]))
    count, best_score, bpe, bre = 0, np.inf, np.nan, np.nan
    fallback, fb_score, fpe, fre, hit = np.empty(n), np.inf, np.nan, np.nan, False
    last_new, n_warm = 0, warm.shape[0]
    for attempt in range(n_warm + max(attempts, heads + 1)):
        a = attempt - n_warm
        if a < 0:  # as in tracking (policy.py): damping kept up, no wander along the self-motion
            q[:] = warm[attempt]
            clamp(chain, q)
            pe, re, _ = refine(chain, cfg, q, pt, Rt, has_quat, iters, ws, LAM_TRACK, LAM_TRACK)
        else:
            if a < heads:
                if a == 0:
                    candidates.ranked(
                        model, netw, pt, Rt, has_quat, cur, has_cur, seed, has_seed, q, ws
                    )
                q[:] = netq[candidates.next_best(ws[17])]
            elif a == 0:
                _mid_range(chain, q)
            else:
                restart_seed(chain, best, False, q, ws[15])
            lam = LAM_NEAR if a < heads else LAM_FAR  # kernel.py: the first damping
            pe, re, _ = refine(chain, cfg, q, pt, Rt, has_quat, iters, ws, lam)
        exact, score = verdicts.reached(pe, re, pos_tol, rot_tol), weighted(pe, re, w)
        # as in policy.py: an answer that collides is no solution, and the best effort is the
        # closest free pose; only when nothing free turned up, the closest colliding one, said so
        if exact or (count == 0 and score < best_score):
            ok = not checking or free(chain, col, q)
            if exact and ok:
                clamp(chain, q)
                if n_warm > 0:
                    _beside(chain, q, warm[0])
                new = True
                for s in range(count):
                    if joint_gap(chain, q, sols[s]) <= threshold:
                        new = False
                        break
                if new:
                    sols[count], errs[count, 0], errs[count, 1] = q, pe, re
                    count, last_new = count + 1, attempt
                    if count == k:
                        break
            elif ok:  # a closer free pose, while nothing is solved
                best_score, bpe, bre = score, pe, re
                best[:] = q
            elif count == 0 and not ok:
                hit = hit or exact
                if score < fb_score:
                    fb_score, fpe, fre = score, pe, re
                    fallback[:] = q
        if count > 0 and attempt - last_new >= patience:
            break
    if count == 0:
        if best_score == np.inf and fb_score < np.inf:
            best[:] = fallback
            bpe, bre, hit = fpe, fre, True
        sols[0], errs[0, 0], errs[0, 1] = best, bpe, bre
        if n_warm > 0:
            _beside(chain, sols[0], warm[0])
        missed = verdicts.NOT_FOUND if code == verdicts.OK else code
        return 1, verdicts.COLLIDES if hit else missed, 0
    return 0, verdicts.OK, count


@njit(cache=True)
def manipulability(model, Q, out):
    """sqrt(det(J J^T)) of each row of ``Q`` (the position rows alone for a 3-joint arm)."""
    chain = parts(model)[0]
    n = Q.shape[1]
    p, R, J, work = np.empty(3), np.empty((3, 3)), np.empty((6, n)), np.empty((WORK_ROWS, n))
    for i in range(Q.shape[0]):
        fk(chain, Q[i], p, R, J, work, True)
        rows = 6 if n >= 6 else 3
        Jr = J[:rows]
        out[i] = math.sqrt(max(np.linalg.det(Jr @ Jr.T), 0.0))


def order(model, chain_lo, chain_hi, continuous, Q, how: str, reference=None) -> np.ndarray:
    """The indices of the answers ``Q`` (m, dof) in the order ``how`` (one of ORDERS)."""
    if how not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}; got {how!r}")
    if len(Q) <= 1:
        return np.arange(len(Q))
    if how == "manipulability":
        m = np.empty(len(Q))
        manipulability(model, np.ascontiguousarray(Q, dtype=float), m)
        return np.argsort(-m, kind="stable")
    mid = np.where(continuous, 0.0, (chain_lo + chain_hi) / 2)
    if how == "mid_range":
        half = np.where(continuous, math.pi, (chain_hi - chain_lo) / 2)
        return np.argsort(np.abs((Q - mid) / half).max(axis=1), kind="stable")
    ref = mid if reference is None else np.asarray(reference, dtype=float)
    d = Q - ref
    d = np.where(continuous, (d + math.pi) % (2 * math.pi) - math.pi, d)
    return np.argsort(np.linalg.norm(d, axis=1), kind="stable")


MOST = 100_000  # answers one call may ask for (each takes a row, allocated up front)


def solve_several(
    solver, pt, quat, has_quat, current, last, k, how, started, patience=None
) -> list:
    """``Solver.solve(..., solutions=k, order=how)``: the search above, then the order, as
    ``Answer`` objects (one item, the best effort or the rejection, when nothing is solved).
    ``current`` and ``last``: checked joint arrays, or None."""
    if not _whole(k) or not 1 <= k <= MOST:
        raise ValueError(f"solutions must be a whole number from 1 to {MOST:,}; got {k!r}")
    if patience is not None and (not _whole(patience) or patience < 1):
        raise ValueError(f"patience must be a whole number of at least 1; got {patience!r}")
    if how not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}; got {how!r}")
    if not solver.settings.refines:
        raise ValueError(
            "several answers are found by refinement, and iterations is 0 (the network "
            "alone): ask for one answer, or set iterations"
        )
    n = solver.arm.dof
    has_cur = current is not None
    if has_cur:
        solver._cur[:] = current
    rotation = quat if has_quat else None
    has_seed = solver._outside and network_backends.one_seed(solver, pt, rotation, current)
    fresh = [w for w in (last, current) if w is not None]
    if len(fresh) == 2 and np.array_equal(fresh[0], fresh[1]):
        fresh = fresh[:1]
    warm = np.array(fresh, dtype=float).reshape(len(fresh), n)
    sols, errs = np.zeros((int(k), n)), np.zeros((int(k), 2))
    attempts = max(solver.settings.solution_attempts, int(k))
    status, why, count = solve_many(
        solver._model,
        solver._netw,
        pt,
        quat,
        has_quat,
        solver._cur,
        has_cur,
        warm,
        solver._seed,
        has_seed,
        attempts,
        patience if patience is not None else max(20, attempts // 4),
        solver.settings.solution_threshold,
        sols,
        errs,
        np.zeros(len(solver._scratch)),
    )
    seconds = time.perf_counter() - started
    if status != 0:
        q = None if status == 2 else sols[0].copy()
        pe, re = (np.nan, np.nan) if status == 2 else (errs[0, 0], errs[0, 1])
        collides = solver._collides(q)
        reason = solver._reason(status, why, pt, quat if has_quat else None, pe, re, collides)
        return [Answer(q, STATUS[status], pe, re, reason, seconds, 0, collides)]
    rank = order(
        solver._model,
        solver.arm.lower,
        solver.arm.upper,
        solver.arm.continuous,
        sols[:count],
        how,
        current,
    )
    return [
        Answer(sols[i].copy(), STATUS[0], errs[i, 0], errs[i, 1], "", seconds, 0) for i in rank
    ]


def _whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
