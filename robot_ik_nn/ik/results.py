"""What an answer says: one target's :class:`Answer`, a batch's :class:`BatchResult`, and the
three statuses every solver gives (solved, best effort, rejected).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .reasons import Reasons

SOLVED, BEST_EFFORT, REJECTED = "solved", "best_effort", "rejected"
STATUS = (SOLVED, BEST_EFFORT, REJECTED)  # indexed by the kernel's status codes 0, 1, 2


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
