"""What a target is allowed to be, and when an answer reaches it: one validation and one
acceptance rule, compiled, the same everywhere.

Every path (the compiled solver for one target or a batch, the torch solver, the inference
node's safety gate, the CLI) judges a target with :func:`check` (compiled, so the compiled
solver calls the very same code inside its own loop); the same target gets the same verdict
everywhere. reasons.py words a verdict; results.py holds the answers.

A target is rejected when its position is not finite, or its orientation is not finite or not a
unit quaternion (|norm - 1| > ``quat_tolerance``; a quaternion within it is normalised), or it
lies farther from the arm's first joint than ``reach_margin`` times the arm's reach bound (a slip
of units: millimetres sent as metres). A target beyond the reach bound itself (ArmModel.reach:
the sum of the link lengths, so nothing beyond it can be reached) but not that far is outside
the reach: its answer is the closest pose found, a best effort that says so.

An answer is within tolerance ("solved", before any collision check) when :func:`reached`: its
position error is at most ``pos_tol`` and its rotation error at most ``rot_tol``; NaN errors never
are. The compiled policy, the several answers, the walks, the self-motion and the calibrated
arm's answers call :func:`reached`; the torch solver and the bench's judge (its own forward
kinematics) call :func:`reached_all`, the same rule on arrays. This is the only place the rule is
written (web/src has its JavaScript twin).
"""

from __future__ import annotations

import math

from numba import njit

# why: 0 = fine; 1..4 = why a target was rejected; 5 = outside the reach (a best effort: the
# closest pose); 10 = inside the reach bound, but no answer within tolerance was found; 11 = the
# answers found within tolerance collide (with the arm itself or an obstacle)
OK, POSITION_NOT_FINITE, ORIENTATION_NOT_FINITE, NOT_UNIT, TOO_FAR = 0, 1, 2, 3, 4
OUT_OF_REACH, NOT_FOUND, COLLIDES = 5, 10, 11
FREE_INSTEAD = 12  # COLLIDES, said of a best effort that is itself collision-free (solver.py)
REJECTS = OUT_OF_REACH  # codes from 1 up to (not including) this are rejections


@njit(cache=True)
def reached(pe, re, pos_tol, rot_tol):
    """Whether an answer with position error ``pe`` and rotation error ``re`` is within the
    tolerances (the acceptance rule; False for NaN errors)."""
    return pe <= pos_tol and re <= rot_tol


def reached_all(pe, re, pos_tol, rot_tol):
    """:func:`reached` elementwise, on numpy arrays or torch tensors alike (a boolean mask)."""
    return (pe <= pos_tol) & (re <= rot_tol)


@njit(cache=True)
def check(p, quat, has_quat, origin, max_reach, too_far, quat_tolerance):
    """The verdict on one target: 0 when it may be solved, OUT_OF_REACH when only its closest
    pose can be, else (1 up to REJECTS) the code of the first problem."""
    for i in range(3):
        if not math.isfinite(p[i]):
            return POSITION_NOT_FINITE
    if has_quat:
        for i in range(4):
            if not math.isfinite(quat[i]):
                return ORIENTATION_NOT_FINITE
        norm = math.sqrt(quat[0] ** 2 + quat[1] ** 2 + quat[2] ** 2 + quat[3] ** 2)
        if not abs(norm - 1.0) <= quat_tolerance:
            return NOT_UNIT
    d = math.sqrt((p[0] - origin[0]) ** 2 + (p[1] - origin[1]) ** 2 + (p[2] - origin[2]) ** 2)
    if d > too_far:
        return TOO_FAR
    if d > max_reach:
        return OUT_OF_REACH
    return OK


@njit(cache=True)
def check_all(P, Q, has_quat, origin, max_reach, too_far, quat_tolerance, out):
    for i in range(P.shape[0]):
        out[i] = check(P[i], Q[i], has_quat, origin, max_reach, too_far, quat_tolerance)
