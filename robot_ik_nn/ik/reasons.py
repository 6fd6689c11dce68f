"""The words for a verdict and for an answer: why a target was refused, why an answer is a
best effort and how close it came. Worded only when read: a batch's reasons are :class:`Reasons`,
each row worded on first access.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Sequence
from functools import partial

import numpy as np

from .verdicts import (
    COLLIDES,
    FREE_INSTEAD,
    NOT_FOUND,
    NOT_UNIT,
    OK,
    ORIENTATION_NOT_FINITE,
    OUT_OF_REACH,
    POSITION_NOT_FINITE,
    TOO_FAR,
)


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


def reason_text(status: int, code: int, pos_err, rot_err, position=None, quaternion=None, **arm):
    """The reason for any answer: a rejection's, or a best effort's (why, and how close it came);
    "" when solved. ``arm``: reach, origin, arm_name and quat_tolerance, as for :func:`reason`."""
    if status == 0:
        return ""
    text = reason(code, position, quaternion, **arm)
    return text if status == 2 else f"{text}; {closest_reached(pos_err, rot_err)}"


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


def reason_context(arm, origin, quat_tolerance: float) -> dict:
    """What a reason says of the arm (the ``**arm`` of :func:`reason_text`)."""
    return dict(
        reach=arm.reach, origin=origin, arm_name=arm.name, quat_tolerance=quat_tolerance
    )


def batch_reasons(codes, why, pos_err, rot_err, P, Q, said: dict, collides=None) -> Reasons:
    """A batch's reasons, worded when read from copies of what they need (the caller may reuse
    its arrays, or edit the result's; the solver is not kept). ``said``: :func:`reason_context`;
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
    q = None if Q is None else Q[i]
    return reason_text(int(codes[i]), code, pe[i], re[i], P[i], q, **said)


def _solved(i: int) -> str:
    return ""
