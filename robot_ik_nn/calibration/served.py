"""A calibrated arm with compliant joints, served exactly: answers are joints TO COMMAND.

The compiled kernel solves the rigid calibrated arm (its URDF) for the joints the arm must take;
then the joints to command follow in one explicit step, ``q_cmd = q - c tau(q)`` (compliance.py),
so the arm, sagging under its own weight, lands on the joints the kernel found. Limits are
checked on the joints commanded (an answer whose command leaves them is not "solved"),
collisions on the pose the arm takes. ``forward`` takes commanded joints; ``current``,
``last`` and ``previous`` are commanded joints too (as the arm's driver reports them).
"""

from __future__ import annotations

import numpy as np

from ..ik.results import BEST_EFFORT, SOLVED
from .compliance import Compliance, torques

BEYOND = "the joints to command (sag included) leave the limits of "


class CompliantSolver:
    """A solver over a rigid calibrated arm plus each joint's compliance: this class mixed
    into the rigid solver's own class (``Solver``), so that ``isinstance(s, CompliantSolver)``
    and ``isinstance(s, Solver)`` both hold. Made by :meth:`over`. The class is put together
    there, not written ``CompliantSolver(Solver)``, because ``Solver.load`` hands a calibrated
    folder here: importing ik/solver.py from this module would make the two an import circle."""

    compliance: Compliance

    @classmethod
    def over(cls, solver, comp: Compliance) -> "CompliantSolver":
        """``solver`` (of the rigid calibrated arm) serving the compliant arm. The kernel's
        limits are drawn in by each joint's largest sag, so that the joints to command stay
        inside the arm's own limits (a sliver of the range, 0.3 deg on a soft servo, is lost
        at each end rather than an answer refused there)."""
        rigid, limits = solver, (solver.arm.lower.copy(), solver.arm.upper.copy())
        sag = sag_bound(comp, solver.arm)
        if np.any(sag > 0):
            solver = solver.with_limits(limits[0] + sag, limits[1] - sag)
        other = object.__new__(_mixed(type(solver)))
        other.__dict__.update(solver.__dict__)
        other.compliance, other.limits, other.rigid = comp, limits, rigid
        other._variants = {}
        return other

    def forward(self, q):
        """Tip positions and rotations where the arm lands when commanded ``q``."""
        q = np.asarray(q, float)
        if q.size and q.shape[-1] == self.arm.dof and np.all(np.isfinite(q)):
            q = self.compliance.effective(q)
        return super().forward(q)

    def _taken(self, q):
        return None if q is None else self.compliance.effective(np.asarray(q, float))

    def solve(self, position, quaternion=None, *, current=None, last=None, previous=None,
              free_axis=None, **kw):
        if free_axis is not None and free_axis != self.settings.free_axis:
            return self._variant(free_axis).solve(
                position, quaternion, current=current, last=last, previous=previous, **kw
            )
        got = super().solve(
            position, quaternion, current=self._taken(current), last=self._taken(last),
            previous=self._taken(previous), **kw,
        )  # fmt: skip
        for answer in got if isinstance(got, list) else [got]:
            self._to_command(answer)
        return got

    def _to_command(self, answer) -> None:
        if answer.q is None:
            return
        q = answer.q = self.compliance.command(answer.q)
        lo, hi = self.limits
        if answer.status == SOLVED and ((q < lo).any() or (q > hi).any()):
            answer.status = BEST_EFFORT
            answer.reason = BEYOND + self._outside_limits(q[None])[0]

    def _outside_limits(self, Q) -> list[str]:
        lo, hi = self.limits
        out = []
        for row in Q:
            bad = [n for n, v, a, b in zip(self.arm.joint_names, row, lo, hi) if not a <= v <= b]
            out.append(", ".join(bad))
        return out

    def solve_batch(self, positions, quaternions=None, *, current=None, warm=None,
                    free_axis=None):
        if free_axis is not None and free_axis != self.settings.free_axis:
            return self._variant(free_axis).solve_batch(
                positions, quaternions, current=current, warm=warm
            )
        result = super().solve_batch(
            positions, quaternions, current=self._taken(current), warm=self._taken(warm)
        )
        rows = np.all(np.isfinite(result.q), axis=1)
        result.q[rows] = self.compliance.command(result.q[rows])
        lo, hi = self.limits
        beyond = rows & ~np.all((result.q >= lo) & (result.q <= hi), axis=1)
        if beyond.any():
            reasons = list(result.reason)
            for i, words in zip(np.flatnonzero(beyond), self._outside_limits(result.q[beyond])):
                if result.codes[i] == 0:
                    result.codes[i] = 1
                    reasons[i] = BEYOND + words
            result.reason = reasons
        return result

    def without_network(self) -> "CompliantSolver":
        return CompliantSolver.over(self.rigid.without_network(), self.compliance)

    def __repr__(self) -> str:
        return "Compliant" + super().__repr__()


_MIXED: dict = {}


def _mixed(kind: type) -> type:
    """``CompliantSolver`` over the solver class ``kind`` (one class per kind, made once)."""
    if issubclass(kind, CompliantSolver):
        return kind
    if kind not in _MIXED:
        _MIXED[kind] = type("CompliantSolver", (CompliantSolver, kind), {"__doc__": None})
    return _MIXED[kind]


def sag_bound(comp: Compliance, arm, samples: int = 4000) -> np.ndarray:
    """Each joint's largest sag (rad), over random poses within the limits, with a quarter
    more for the poses the sample missed."""
    q = np.random.default_rng(0).uniform(arm.lower, arm.upper, (samples, arm.dof))
    return 1.25 * np.abs(comp.c) * np.abs(torques(comp.gravity, q)).max(0)


def serving(solver, folder):
    """``solver`` as a model folder serves it: compliant where the folder holds a compliance
    (calibrate's compliance.json), unchanged otherwise."""
    from .compliance import read

    comp = read(folder)
    return solver if comp is None else CompliantSolver.over(solver, comp)
