"""What a target is allowed to be, and what an answer says: one validation, one result type.

Every path (the compiled solver for one target or a batch, the batched torch solver, the
inference node's safety gate, the CLI) judges a target with :func:`check` (compiled, so the
compiled solver calls the very same code inside its own loop) and words a refusal with
:func:`reason`; the same target gets the same verdict everywhere.

A target is rejected when its position is not finite, or its orientation is not finite or not a
unit quaternion (|norm - 1| > ``quat_tolerance``; a quaternion within it is normalised), or it
lies farther from the arm's first joint than ``reach_margin`` times the arm's reach bound (a slip
of units: millimetres sent as metres). A target beyond the reach bound itself (ArmModel.reach:
the sum of the link lengths, so nothing beyond it can be reached) but not that far is outside
the reach: its answer is the closest pose found, a best effort that says so.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
from numba import njit

SOLVED, BEST_EFFORT, REJECTED = "solved", "best_effort", "rejected"
STATUS = (SOLVED, BEST_EFFORT, REJECTED)  # indexed by the kernel's status codes 0, 1, 2

# why: 0 = fine; 1..4 = why a target was rejected; 5 = outside the reach (a best effort: the
# closest pose); 10 = inside the reach bound, but no answer within tolerance was found; 11 = the
# answers found within tolerance collide (with the arm itself or an obstacle)
OK, POSITION_NOT_FINITE, ORIENTATION_NOT_FINITE, NOT_UNIT, TOO_FAR = 0, 1, 2, 3, 4
OUT_OF_REACH, NOT_FOUND, COLLIDES = 5, 10, 11
FREE_INSTEAD = 12  # COLLIDES, said of a best effort that is itself collision-free (solver.py)
REJECTS = OUT_OF_REACH  # codes from 1 up to (not including) this are rejections


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


def reason(
    code: int,
    position=None,
    quaternion=None,
    *,
    reach: float = math.nan,
    origin=(0.0, 0.0, 0.0),
    arm_name: str = "the arm",
    quat_tolerance: float | None = None,
) -> str:
    """The words for a verdict (only ever computed for the few targets that need them)."""
    if code == OK:
        return ""
    p = np.asarray(position, dtype=float) if position is not None else None
    if code == POSITION_NOT_FINITE:
        return f"position is not finite: {p.tolist()}"
    if code == ORIENTATION_NOT_FINITE:
        return f"orientation is not finite: {np.asarray(quaternion, dtype=float).tolist()}"
    if code == NOT_UNIT:
        with np.errstate(over="ignore"):
            norm = float(np.linalg.norm(np.asarray(quaternion, dtype=float)))
        within = "" if quat_tolerance is None else f"; within {quat_tolerance:g} of 1 is taken"
        return f"orientation quaternion is not unit length (norm {norm:.6g}{within}; x y z w)"
    if code in (OUT_OF_REACH, TOO_FAR):
        dist = math.hypot(*(p - np.asarray(origin, dtype=float)))  # no overflow for 1e300
        far = f"{dist:.3f}" if dist < 1e6 else f"{dist:.3g}"
        return (
            f"{'outside the reach' if code == OUT_OF_REACH else 'far outside the reach'}: "
            f"the position is {far} m from the arm's first joint; {arm_name} reaches at "
            f"most {reach:.3f} m" + ("" if code == OUT_OF_REACH else " (positions are in metres)")
        )
    if code == NOT_FOUND:
        return "not found: no answer within tolerance (the target is inside the reach bound)"
    if code == COLLIDES:
        return "collides: no collision-free answer was found within tolerance"
    if code == FREE_INSTEAD:
        return (
            "not found: the answers within tolerance collide; this is the closest "
            "collision-free pose found"
        )
    return f"unknown verdict {code}"


def closest_reached(pos_err: float, rot_err: float) -> str:
    return f"closest reached: {pos_err * 1000:.2f} mm, {math.degrees(rot_err):.2f} deg"


def words(status: int, code: int, pos_err, rot_err, position=None, quaternion=None, **arm):
    """The reason for any answer: a rejection's, or a best effort's (why, and how close it came);
    "" when solved. ``arm``: reach, origin, arm_name and quat_tolerance, as for :func:`reason`."""
    if status == 0:
        return ""
    text = reason(code, position, quaternion, **arm)
    return text if status == 2 else f"{text}; {closest_reached(pos_err, rot_err)}"


@dataclass
class Answer:
    """One target's answer. ``q`` is None when the target was rejected."""

    q: np.ndarray | None
    status: str
    pos_err: float  # m (NaN when rejected)
    rot_err: float  # rad (0 for a position-only target, NaN when rejected)
    reason: str = ""  # why it was rejected or not solved; "" when solved
    seconds: float = math.nan  # time spent solving it
    iterations: int = 0  # Levenberg-Marquardt iterations spent, restarts included
    collides: bool = False  # a best effort whose joints collide (a solver checking collisions)

    @property
    def solved(self) -> bool:
        return self.status == SOLVED


class Reasons(Sequence):
    """A batch's reasons, each worded when first read (``write(i)``, "" for a solved row).

    Wording one takes a few microseconds of Python; a batch of a million best efforts (the
    network alone, a sweep of targets partly out of reach) spent longer wording reasons than
    solving, for words that are mostly never read. Reads like a list of strings and equals
    one; it pickles as one, and ``tolist()`` gives one (for ``json.dumps``, say).
    """

    def __init__(self, n: int, write):
        self._n, self._write, self._said = int(n), write, {}
        self._parts = [self]  # what chain() splices: a chain of chains stays one level deep

    @classmethod
    def chain(cls, parts: list) -> "Reasons":
        """The reasons of several batches, one after another (lists or Reasons)."""
        flat = [q for p in parts for q in (p._parts if isinstance(p, Reasons) else [p])]
        starts = np.cumsum([0] + [len(p) for p in flat]).tolist()

        def write(i):
            k = bisect.bisect_right(starts, i) - 1
            return flat[k][i - starts[k]]

        joined = cls(starts[-1], write)
        joined._parts = flat
        return joined

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        i = j = operator.index(i)
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError(f"reason {i} of a batch of {self._n}")
        if len(self._parts) > 1:  # a chain: the parts keep what they have worded
            return self._write(j)
        if j not in self._said:
            self._said[j] = self._write(j)
        return self._said[j]

    def tolist(self) -> list[str]:
        return list(self)

    def __eq__(self, other) -> bool:
        if not isinstance(other, (list, Reasons)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __add__(self, other) -> list:
        return list(self) + list(other)

    def __radd__(self, other) -> list:
        return list(other) + list(self)

    def __reduce__(self):
        return (list, (list(self),))

    def __repr__(self) -> str:
        return repr(list(self))


def arm_words(arm, origin, quat_tolerance: float) -> dict:
    """What a reason says of the arm (the ``**arm`` of :func:`words`)."""
    return dict(
        reach=arm.reach, origin=origin, arm_name=arm.name, quat_tolerance=quat_tolerance
    )


def batch_reasons(codes, why, pos_err, rot_err, P, Q, said: dict, collides=None) -> Reasons:
    """A batch's reasons, worded when read from copies of what they need (the caller may reuse
    its arrays, or edit the result's; the solver is not kept). ``said``: :func:`arm_words`;
    ``collides``: per row, whether a best effort's joints collide (None: no collision model)."""
    if not np.any(codes):
        return Reasons(len(codes), _solved)
    kept = [np.array(a, copy=True) for a in (codes, why, pos_err, rot_err, P)]
    extra = [None if a is None else np.array(a, copy=True) for a in (Q, collides)]
    return Reasons(len(codes), partial(_row_words, said, *kept, *extra))


def _row_words(said, codes, why, pe, re, P, Q, collides, i: int) -> str:
    if codes[i] == 0:
        return ""
    code = int(why[i])
    if code == COLLIDES and collides is not None and not collides[i]:
        code = FREE_INSTEAD
    return words(int(codes[i]), code, pe[i], re[i], P[i], None if Q is None else Q[i], **said)


def _solved(i: int) -> str:
    return ""


@dataclass
class BatchResult:
    """A batch's answers, numpy throughout. Rejected rows have NaN joints and errors."""

    q: np.ndarray  # (B, dof)
    codes: np.ndarray  # (B,) int8: 0 solved, 1 best effort, 2 rejected
    pos_err: np.ndarray  # (B,)
    rot_err: np.ndarray  # (B,)
    reason: Sequence[str]  # a list, or Reasons (worded when read)
    seconds: float = math.nan
    iterations: np.ndarray | None = None  # (B,) LM iterations per target, restarts included
    collides: np.ndarray | None = None  # (B,) bool: best efforts whose joints collide

    @property
    def status(self) -> list[str]:
        return [STATUS[c] for c in self.codes]

    @property
    def solved(self) -> np.ndarray:
        return self.codes == 0

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: int) -> Answer:
        """Target ``i``'s answer (its time is the batch's, so ``seconds`` is NaN)."""
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"a batch is indexed one target at a time, not by {i!r}")
        rejected = self.codes[i] == 2
        return Answer(
            None if rejected else self.q[i].copy(),
            STATUS[self.codes[i]],
            float(self.pos_err[i]),
            float(self.rot_err[i]),
            self.reason[i],
            iterations=0 if self.iterations is None else int(self.iterations[i]),
            collides=self.collides is not None and bool(self.collides[i]),
        )

    def summary(self) -> dict:
        """Counts and error percentiles (mm, deg); rejected targets are left out of the errors."""
        ok = self.codes != 2
        out = {
            "targets": len(self),
            "solved": int(np.sum(self.codes == 0)),
            "best_effort": int(np.sum(self.codes == 1)),
            "rejected": int(np.sum(~ok)),
        }
        if ok.any():
            pe, re = self.pos_err[ok] * 1000, np.degrees(self.rot_err[ok])
            out.update(
                pos_mm_median=float(np.median(pe)),
                pos_mm_p99=float(np.percentile(pe, 99)),
                rot_deg_median=float(np.median(re)),
                rot_deg_p99=float(np.percentile(re, 99)),
            )
        return out

    @classmethod
    def concatenate(cls, parts: list["BatchResult"]) -> "BatchResult":
        its = (
            None
            if any(p.iterations is None for p in parts)
            else np.concatenate([p.iterations for p in parts])
        )
        collides = (
            None
            if any(p.collides is None for p in parts)
            else np.concatenate([p.collides for p in parts])
        )
        return cls(
            np.concatenate([p.q for p in parts]),
            np.concatenate([p.codes for p in parts]),
            np.concatenate([p.pos_err for p in parts]),
            np.concatenate([p.rot_err for p in parts]),
            Reasons.chain([p.reason for p in parts]),
            sum(p.seconds for p in parts),
            its,
            collides,
        )
