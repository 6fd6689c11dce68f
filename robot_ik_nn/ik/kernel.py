"""The compiled IK kernel (numba, float64): the weighted pose residual (on forward.py's
kinematics) and Levenberg-Marquardt projected onto the joint limits, on one configuration at a
time; restart seeds from a reproducible random stream. policy.py composes these into the
solving policy; layout.py says how an arm, the settings and the network are laid out in the flat
arrays the kernel reads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .forward import axis_error, fk, rotation_error
from .layout import (
    CONTINUOUS,
    FREE,
    HI,
    LO,
    POS_TOL,
    RNG_HI,
    RNG_LO,
    ROT_TOL,
    ROT_W,
    STOP,
    TWO_PI,
    TYPE,
)
from .verdicts import reached

# LM's first damping: small where the seed is likely near an answer (a network's candidate, a
# warm start other than a tracked one, below: Gauss-Newton steps finish it in two or three),
# larger for mid-range and random seeds, whose first full steps overshoot. Chosen over 10,000
# random targets on four arms (Niryo One, Panda, iiwa, InMoov): against 1e-3 everywhere, the mean
# iterations per target fell by 22-43 %; without network, the four arms' time summed was least
# with 1e-2 (1e-3: 15 % more, 1e-1: 2 %).
LAM_NEAR, LAM_FAR = 1e-5, 1e-2
# From a warm start (tracking) LM's damping starts at and never falls below LAM_TRACK: damped
# least squares, which leaves the directions the arm moves in well (singular values above ~0.01)
# alone and slows the nearly singular ones, where a Gauss-Newton step buys a fraction of a
# millimetre with a large turn of two joints (a wrist near alignment). On 704 paths of 1,000
# targets 5 mm apart (Panda and iiwa), paths with a step over 0.2 rad between two answers fell
# from 63 to 41 (floor 3e-5: 49; 3e-4: 41; starting at 1e-9 with no floor: 112); the iiwa's LM
# iterations per tracked target rose from 2.1 to 2.8 on average (median 2 either way).
LAM_TRACK = 1e-4


@njit(cache=True)
def residual(chain, cfg, q, pt, Rt, has_rot, e, J, ws, want_jac):
    """Weighted pose residual ``e`` (target - reached; rows 3..5 the rotation times rot_weight)
    and, with ``want_jac``, its Jacobian. Returns (cost, position error, rotation error)."""
    p, R, work = ws[9], ws[10], ws[11]
    fk(chain, q, p, R, J, work, want_jac)
    e[0], e[1], e[2] = pt[0] - p[0], pt[1] - p[1], pt[2] - p[2]
    pe = math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    if not has_rot:
        return pe * pe, pe, 0.0
    w, free = cfg[ROT_W], int(cfg[FREE]) - 1
    if free < 0:
        re = rotation_error(R, Rt, e, 3)
    else:  # only the free axis's direction counts: turning about it changes nothing
        re = axis_error(R, Rt, free, e, 3)
        if want_jac:
            ax, ay, az = R[0, free], R[1, free], R[2, free]
            for j in range(q.shape[0]):
                along = ax * J[3, j] + ay * J[4, j] + az * J[5, j]
                J[3, j] -= along * ax
                J[4, j] -= along * ay
                J[5, j] -= along * az
    for i in range(3, 6):
        e[i] *= w
        if want_jac:
            for j in range(q.shape[0]):
                J[i, j] *= w
    return pe * pe + (w * re) ** 2, pe, re


@njit(cache=True)
def weighted(pe, re, w):
    """The weighted error answers are ranked by (metres): the norm of the residual that LM
    minimises, so that the best answer found is the one the refinement was after."""
    return math.sqrt(pe * pe + (w * re) ** 2)


@njit(cache=True)
def clamp(chain, q):
    """Limited joints into their limits (less the margin), continuous ones wrapped to [-pi, pi)."""
    for j in range(q.shape[0]):
        if chain[j, TYPE] == CONTINUOUS:
            q[j] = (q[j] + math.pi) % TWO_PI - math.pi
        else:
            q[j] = min(max(q[j], chain[j, LO]), chain[j, HI])


@njit(cache=True)
def _cholesky_solve(A, b, k, x):
    """Solve A x = b for the symmetric positive definite k x k top-left block of ``A`` (its
    lower triangle is overwritten by the factor, with the reciprocals of its diagonal on the
    diagonal: products instead of divisions on the critical path)."""
    for a in range(k):
        for c in range(a + 1):
            acc = A[a, c]
            for j in range(c):
                acc -= A[a, j] * A[c, j]
            A[a, c] = 1.0 / math.sqrt(max(acc, 1e-300)) if a == c else acc * A[c, c]
    for a in range(k):
        acc = b[a]
        for j in range(a):
            acc -= A[a, j] * x[j]
        x[a] = acc * A[a, a]
    for a in range(k - 1, -1, -1):
        acc = x[a]
        for j in range(a + 1, k):
            acc -= A[j, a] * x[j]
        x[a] = acc * A[a, a]


@njit(cache=True)
def _damped_step(J, e, m, n, lam, H, rhs, step):
    """The Levenberg step (J^T J + lam I)^-1 J^T e, solved in the smaller of the two equivalent
    forms: n x n, or m x m as J^T (J J^T + lam I)^-1 e when the arm has more joints than the
    residual has rows (a 7-joint arm, or any arm on a position-only target)."""
    if m < n:
        for a in range(m):
            for b in range(a + 1):
                acc = 0.0
                for j in range(n):
                    acc += J[a, j] * J[b, j]
                H[a, b] = acc
            H[a, a] += lam
        _cholesky_solve(H, e, m, rhs)
        for j in range(n):
            acc = 0.0
            for r in range(m):
                acc += J[r, j] * rhs[r]
            step[j] = acc
        return
    for a in range(n):
        acc = 0.0
        for r in range(m):
            acc += J[r, a] * e[r]
        rhs[a] = acc
        for b in range(a + 1):
            acc = 0.0
            for r in range(m):
                acc += J[r, a] * J[r, b]
            H[a, b] = acc
        H[a, a] += lam
    _cholesky_solve(H, rhs, n, step)


@njit(cache=True)
def refine(chain, cfg, q, pt, Rt, has_rot, iterations, ws, lam=LAM_FAR, floor=1e-9):
    """Levenberg-Marquardt from ``q`` (changed in place), projected onto the limits after each
    step. Each trial point is linearised once: an accepted step's Jacobian is the next one's.
    Stops when the error is far inside the tolerance, or when no step helps any more.
    Returns (position error, rotation error) at the final ``q`` and the iterations used.
    ``lam``: the first damping (LAM_NEAR for a seed likely near an answer, else LAM_FAR);
    ``floor``: the least it falls to (LAM_TRACK from a warm start).

    A joint at a limit that the error pulls beyond it is held there, out of the step, instead of
    clipped after it: a clipped step is no longer the one LM chose, often stops descending, and
    LM creeps along the limit or stalls (answers near a limit, closest poses). Holding them cut
    the mean iterations per target by 18-43 % on the Niryo One, the Panda and the iiwa."""
    clamp(chain, q)
    cost, pe, re = residual(chain, cfg, q, pt, Rt, has_rot, ws[4], ws[6], ws, True)
    return descend(chain, cfg, q, pt, Rt, has_rot, iterations, ws, cost, pe, re, lam, floor)


@njit(cache=True)
def descend(chain, cfg, q, pt, Rt, has_rot, iterations, ws, cost, pe, re, lam=LAM_FAR, floor=1e-9):
    """:func:`refine` from a ``q`` inside the limits whose residual (``cost``, ``pe``, ``re``)
    and Jacobian are already in ``ws[4]`` and ``ws[6]`` (residual's ``e`` and ``J``)."""
    n = q.shape[0]
    q_new, step, rhs, e, e_new = ws[0], ws[2], ws[3], ws[4], ws[5]
    J, J_new, H = ws[6], ws[7], ws[8]
    m = 6 if has_rot else 3
    used = 0
    for _ in range(iterations):
        if cost <= cfg[STOP] or lam >= 1e3:
            break
        used += 1
        for j in range(n):  # joints pressing on a limit are held out of the step
            at_lo, at_hi = q[j] <= chain[j, LO], q[j] >= chain[j, HI]
            if chain[j, TYPE] == CONTINUOUS or not (at_lo or at_hi):
                continue
            g = 0.0  # the error's pull on this joint, computed only for one at a limit
            for r in range(m):
                g += J[r, j] * e[r]
            if (at_lo and g < 0.0) or (at_hi and g > 0.0):
                for r in range(m):
                    J[r, j] = 0.0
        _damped_step(J, e, m, n, lam, H, rhs, step)
        for a in range(n):
            q_new[a] = q[a] + step[a]
        clamp(chain, q_new)
        c_new, pe_new, re_new = residual(
            chain, cfg, q_new, pt, Rt, has_rot, e_new, J_new, ws, True
        )
        if c_new < cost:
            cost, pe, re = c_new, pe_new, re_new
            q[:] = q_new
            e[:] = e_new
            J[:, :] = J_new
            lam = max(lam / 3.0, floor)
        else:
            lam = min(lam * 10.0, 1e4)
    return pe, re, used


# -- random numbers (splitmix64: reproducible, one state per target) ------------------------------
@njit(cache=True)
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def start_stream(cfg, pt, quat, has_quat, state):
    """The random state for one target, from the settings' ``rng_seed`` and the target's own
    numbers: the same target draws the same numbers alone or anywhere in a batch, and different
    targets draw different ones. For targets the verdict accepted (within a few reaches of the
    arm, so that their numbers scaled by 2**40 fit an int64)."""
    z = np.uint64(cfg[RNG_HI]) * np.uint64(2**32) + np.uint64(cfg[RNG_LO])
    for k in range(7 if has_quat else 3):
        v = pt[k] if k < 3 else quat[k - 3]
        z = _mix(z + np.uint64(0x9E3779B97F4A7C15) + np.uint64(np.int64(v * 1099511627776.0)))
    state[0] = z


@njit(cache=True)
def _uniform(state):
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = _mix(state[0])
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def restart_seed(chain, best, partial, out, state):
    """Uniformly random joints, or (``partial``) ``best`` with its joints stuck at a limit and a
    random half of the others drawn anew."""
    for j in range(out.shape[0]):
        lo, hi = chain[j, LO], chain[j, HI]
        if chain[j, TYPE] == CONTINUOUS:
            lo, hi = -math.pi, math.pi
        fresh = lo + _uniform(state) * (hi - lo)
        if not partial:
            out[j] = fresh
            continue
        stuck = abs(best[j] - lo) < 1e-9 or abs(best[j] - hi) < 1e-9
        out[j] = fresh if stuck or _uniform(state) < 0.5 else best[j]


@njit(cache=True)
def near_seed(chain, base, spread, out, state):
    """``base`` with every joint moved by a uniformly random amount within ``spread``, into the
    limits: a seed on the same branch as ``base``."""
    for j in range(out.shape[0]):
        out[j] = base[j] + spread * (2.0 * _uniform(state) - 1.0)
    clamp(chain, out)


# -- tracking: the self-motion spent on secondary goals -------------------------------------------
# LM iterations back onto the target after a null-space step: the step leaves the target only to
# second order (micrometres for 0.01 rad), which one or two Gauss-Newton steps remove; 4 bounds
# the cost of a step that went wrong (then the answer before the step is kept).
ACCEPT_ITERS = 4


@njit(cache=True)
def secondary(chain, cfg, q, pt, Rt, has_rot, ws, weight):
    """Spend the arm's self-motion (a redundant arm, or a free tool axis) on keeping away from the
    joint limits, without leaving the target: the descent of sum(x_j^2) (x_j: joint j's place in
    its range, -1 at the lower limit, 1 at the upper) projected onto the Jacobian's null space,
    scaled so that no joint moves more than ``weight`` times the largest |x_j| (rad), then LM back
    onto the target (damped as in tracking). ``q`` (exact on entry) changes only when the moved
    joints are exact too. On 20 spline paths (bench/paths.py), streamed paths with a step over
    0.2 rad: Panda 17 -> 6 (x_j^4's descent: 9; weight 0.03: 7, 0.1: 7), iiwa 13 -> 9.
    Returns (position error, rotation error, LM iterations, moved)."""
    n = q.shape[0]
    m = 6 if has_rot else 3
    if n <= m - (1 if has_rot and cfg[FREE] > 0 else 0):  # no self-motion but at singular poses,
        return 0.0, 0.0, 0, False  # where moving along it changes branch (InMoov: 0 -> 1 of 30)
    e, J, H, rhs, step, d = ws[4], ws[6], ws[8], ws[3], ws[2], ws[0]
    cost, pe, re = residual(chain, cfg, q, pt, Rt, has_rot, e, J, ws, True)
    pull = 0.0
    for j in range(n):
        d[j] = 0.0
        if chain[j, TYPE] == CONTINUOUS:
            continue
        half = 0.5 * (chain[j, HI] - chain[j, LO])
        if half <= 1e-9:
            continue
        x = (q[j] - 0.5 * (chain[j, HI] + chain[j, LO])) / half
        d[j] = -x
        pull = max(pull, abs(d[j]))
    if pull < 1e-6:
        return pe, re, 0, False
    keep = q.copy()
    Jd = np.empty(6)
    for r in range(m):
        acc = 0.0
        for j in range(n):
            acc += J[r, j] * d[j]
        Jd[r] = acc
    _damped_step(J, Jd, m, n, 1e-9, H, rhs, step)  # d's part in the Jacobian's row space
    biggest = 0.0
    for j in range(n):
        d[j] -= step[j]
        biggest = max(biggest, abs(d[j]))
    if biggest < 1e-4 * pull:  # no self-motion here (a 6-joint arm on a full pose)
        return pe, re, 0, False
    scale = weight * pull / biggest
    for j in range(n):
        q[j] += scale * d[j]
    pe2, re2, used = refine(chain, cfg, q, pt, Rt, has_rot, ACCEPT_ITERS, ws, LAM_TRACK, LAM_TRACK)
    if reached(pe2, re2, cfg[POS_TOL], cfg[ROT_TOL]):
        return pe2, re2, used, True
    q[:] = keep
    return pe, re, used, False
