"""A calibrated arm with compliant joints, served exactly: answers are joints TO COMMAND.

The compiled kernel solves the rigid calibrated arm (its URDF) for the joints the arm must take;
then the joints to command follow in one explicit step, ``q_cmd = q - c tau(q)`` (compliance.py),
so the arm, sagging under its own weight, lands on the joints the kernel found. Collisions are
checked on the pose the arm takes. ``forward`` takes commanded joints; ``current``, ``last`` and
``previous`` are commanded joints too (as the arm's driver reports them).

Limits hold for the joints commanded, and the joints the arm takes cannot pass them either
(they are its stops): at the pose ``q`` the arm may take, on each joint, the range
``[lo + c tau(q), hi + c tau(q)]`` within ``[lo, hi]``, a range that moves with the pose. The
kernel solves within the arm's own limits; where the command leaves them (a target near a
limit) the target is solved again within the range at the pose found, warm from it, until the
command stays inside (each round cuts the overshoot by about ``c dtau/dq``, 1e-2 or less), and
the command is put on the limit it touches. One that still leaves them after ``ROUNDS`` is held
at them, judged again where that puts the tool.
"""

from __future__ import annotations

import numpy as np

from ..arm.rotations import quaternion_to_matrix, rotation_angle
from ..ik.layout import HI, LO, parts
from ..ik.results import BEST_EFFORT, SOLVED, STATUS, Answer
from ..ik.verdicts import reached
from .compliance import Compliance

ROUNDS = 4  # solves again within the range at the pose found, at most
SLACK = 1e-9  # rad (m): a command this close past a limit is put on it; further, judged again
HELD = "the joints to command (sag included) are held at the limits of "


class CompliantSolver:
    """A solver over a rigid calibrated arm plus each joint's compliance: this class mixed
    into the rigid solver's own class (``Solver``), so that ``isinstance(s, CompliantSolver)``
    and ``isinstance(s, Solver)`` both hold. Made by :meth:`over`. The class is put together
    there, not written ``CompliantSolver(Solver)``, because ``Solver.load`` hands a calibrated
    folder here: importing ik/solver.py from this module would make the two an import circle."""

    compliance: Compliance

    @classmethod
    def over(cls, solver, comp: Compliance) -> "CompliantSolver":
        """``solver`` (of the rigid calibrated arm, within the arm's own limits) serving the
        compliant arm; the commands held inside those limits target by target (see above)."""
        other = object.__new__(_mixed(type(solver)))
        other.__dict__.update(solver.__dict__)
        other.compliance, other.rigid = comp, solver
        other._variants = {}
        other._ranges()
        return other

    def _build(self) -> None:
        super()._build()
        self._ranges()

    def _ranges(self) -> None:
        """The range each command keeps to (the kernel's: the limits less the margin; none for a
        continuous joint), and no kernel per pose yet (:meth:`_held` makes one)."""
        chain = parts(self._model)[0][:-1]
        free = self.arm.continuous
        lo, hi = np.where(free, -np.inf, chain[:, LO]), np.where(free, np.inf, chain[:, HI])
        self.commanded_range, self._ranged = (lo, hi), None

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
        if isinstance(got, list):
            return [self._commanded(a, position, quaternion) for a in got]
        return self._commanded(got, position, quaternion)

    def solve_batch(self, positions, quaternions=None, *, current=None, warm=None,
                    free_axis=None):
        if free_axis is not None and free_axis != self.settings.free_axis:
            return self._variant(free_axis).solve_batch(
                positions, quaternions, current=current, warm=warm
            )
        result = super().solve_batch(
            positions, quaternions, current=self._taken(current), warm=self._taken(warm)
        )
        taken = result.q.copy()
        rows = np.all(np.isfinite(taken), axis=1)
        result.q[rows] = self.compliance.command(taken[rows])
        beyond = np.flatnonzero(rows & (self._past(result.q) > SLACK))
        if beyond.size:  # near a limit: one at a time, as solve does
            P = np.asarray(positions, float).reshape(-1, 3)
            Q = None if quaternions is None else np.asarray(quaternions, float).reshape(-1, 4)
            reasons = list(result.reason)
            for i in beyond:
                a = Answer(taken[i], STATUS[result.codes[i]], result.pos_err[i],
                           result.rot_err[i], reasons[i])  # fmt: skip
                a = self._commanded(a, P[i], None if Q is None else Q[i])
                result.q[i], result.codes[i], reasons[i] = a.q, STATUS.index(a.status), a.reason
                result.pos_err[i], result.rot_err[i] = a.pos_err, a.rot_err
                if result.iterations is not None:
                    result.iterations[i] = a.iterations
            result.reason = reasons
        return result

    def _past(self, Q) -> np.ndarray:
        """How far past its range each row of commands ``Q`` goes, at most (0 inside)."""
        lo, hi = self.commanded_range
        return np.maximum(np.max(np.maximum(lo - Q, Q - hi), axis=-1), 0.0)

    def _commanded(self, answer: Answer, position, quaternion) -> Answer:
        """``answer`` (the kernel's: the joints the arm takes) with the joints to command,
        inside the limits: solved again where they leave them (:meth:`_held`)."""
        if answer.q is None:
            return answer
        command = self.compliance.command(answer.q)
        if self._past(command) > SLACK:
            answer, command = self._held(answer, command, position, quaternion)
        past = self._past(command)
        answer.q = np.clip(command, *self.commanded_range)
        if past > SLACK:  # the rounds did not settle: the tool where the limits leave it
            pe, re = answer.pos_err, answer.rot_err = self._errors(answer.q, position, quaternion)
            if not reached(pe, re, self.settings.pos_tol, self.settings.rot_tol):
                lo, hi = self.commanded_range
                at = np.asarray(self.arm.joint_names)[(answer.q <= lo) | (answer.q >= hi)]
                answer.status = BEST_EFFORT
                answer.reason = f"{HELD}{', '.join(at)}: {pe * 1e3:.3f} mm, {re:.4f} rad off"
            else:
                answer.status, answer.reason = SOLVED, ""
        return answer

    def _held(self, answer: Answer, command, position, quaternion):
        """The target solved again, warm from ``answer``, within the range the limits leave the
        arm at the pose found, ``[lo + c tau(q), hi + c tau(q)]`` within ``[lo, hi]``, until its
        command stays inside (``ROUNDS`` at most): the answer and its command."""
        if self._ranged is None:  # the rigid solver, with a buffer of its own for the ranges
            self._ranged = object.__new__(type(self.rigid))
            self._ranged.__dict__.update(self.__dict__)
            self._ranged._model = self._model.copy()
        ranged, lo, hi = self._ranged, *self.commanded_range
        chain = parts(ranged._model)[0][:-1]
        spent = answer.iterations
        for _ in range(ROUNDS):
            sag = answer.q - command  # c tau(q): the load at the pose found
            chain[:, LO] = np.where(np.isfinite(lo), lo + np.maximum(sag, 0.0), chain[:, LO])
            chain[:, HI] = np.where(np.isfinite(hi), hi + np.minimum(sag, 0.0), chain[:, HI])
            again = ranged.solve(position, quaternion, last=answer.q)
            if again.q is None:
                break
            spent += again.iterations
            answer, command = again, self.compliance.command(again.q)
            if self._past(command) <= SLACK:
                break
        answer.iterations = spent
        return answer, command

    def _errors(self, q, position, quaternion) -> tuple[float, float]:
        """Position and rotation errors (m, rad) of the tool commanded ``q``, as the kernel
        measures them (a free axis: the angle between that axis and the target's)."""
        p, R = self.forward(q)
        pe = float(np.linalg.norm(p[0] - np.asarray(position, float)))
        if quaternion is None:
            return pe, 0.0
        target, axis = quaternion_to_matrix(quaternion), self.settings.free_axis
        if not axis:
            return pe, float(rotation_angle(R[0], target))
        k = "xyz".index(axis)
        return pe, float(np.arccos(np.clip(R[0][:, k] @ target[:, k], -1.0, 1.0)))

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


def serving(solver, folder):
    """``solver`` as a model folder serves it: compliant where the folder holds a compliance
    (calibrate's compliance.json), unchanged otherwise."""
    from .compliance import read

    comp = read(folder)
    return solver if comp is None else CompliantSolver.over(solver, comp)
