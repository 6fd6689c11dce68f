"""Joints for a whole Cartesian path known beforehand, with no step between two answers over
``max_step`` where the arm has such a path (``Solver.solve_path``).

Tracking one target at a time (``solve(..., current=, last=)``) cannot look ahead. On a 7-joint
arm a pose leaves one-dimensional room, the self-motion, and the tracked answers drift along it;
they can reach a joint limit that the path later needs them past, where the only answer left is
a jump (docs/design_notes.md: "Tracking a redundant arm without jumps"). On any arm, where the
path crosses a singular pose (a wrist held straight) two branches of answers meet, and tracking
may leave on the one that later ends at a limit. Given the whole path, this plans instead:

1. Track from ``start`` target by target. Without a step over ``max_step``, that is the answer.
2. On an arm with self-motion, sample it: at the first target and every ``every`` targets after
   it, the answers with one joint (``joint``; by default the third, then each other in turn
   until a way is found: where the held joint's value folds back along the self-motion, a
   stretch is cut short) held at values ``spacing`` apart, walked outwards from the tracked
   answers (each refined from the last, so one stretch of self-motion at a time).
   Every sample is tracked on to the next target, all in one batch call per target; a sample
   that misses its target or steps over ``max_step`` ends there.
   The cheapest way through these layers from ``start`` to the last target (dynamic
   programming: a step over ``max_step`` is forbidden, each step costs its squared joint
   distance).
3. Otherwise (no self-motion, or no way found over it) the branches: every ``every`` targets
   the distinct answers (``solutions=8``) and the tracked one, each tracked forwards to the next
   such target and backwards to the one before, and the cheapest way through them all, which
   can change branch where a forward and a backward track meet.

ROS-Industrial's Descartes plans over sampled answers in the same way; here the samples are
tracked along the path, so neighbours stay neighbours and the layers stay small.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .inputs import joints, rows
from .layout import HI, LO, parts


@dataclass
class PathAnswer:
    """The joints for every target of a path (``q`` (n, dof); NaN rows where a target was
    rejected), each target's ``solved``, the largest joint step between two answers (the first
    from ``start``) and where it is, whether planning was needed, and why a step over
    ``max_step`` is left ("" when none is)."""

    q: np.ndarray
    solved: np.ndarray
    max_step: float
    at: int
    planned: bool
    reason: str
    seconds: float

    @property
    def ok(self) -> bool:
        return bool(self.solved.all()) and not self.reason


def solve_path(
    solver,
    positions,
    quaternions=None,
    *,
    start,
    max_step: float = 0.2,
    joint: int | None = None,
    spacing: float = 0.05,
    every: int = 25,
) -> PathAnswer:
    """See the module's docstring. ``joint``: the joint held to sample the self-motion (default
    the third, the upper arm's turn on the usual 7-joint arms, then the others)."""
    started = time.perf_counter()
    n_dof = solver.arm.dof
    P = rows(positions, (3,), "positions")
    Q = rows(quaternions, (4,), "quaternions", len(P)) if quaternions is not None else None
    start = joints(start, (n_dof,), "start")
    if len(P) == 0:
        raise ValueError("a path needs at least one target; got none")
    if not (np.isfinite(max_step) and max_step > 0):
        raise ValueError(f"max_step must be a finite number of radians above 0; got {max_step}")
    if not (np.isfinite(spacing) and 0 < spacing < max_step):
        raise ValueError(f"spacing must lie between 0 and max_step ({max_step}); got {spacing}")
    if not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be a whole number of targets, at least 1; got {every}")
    if joint is None:  # the third first, then the others: a fold of one joint can hide a way
        held = [min(2, n_dof - 1)] + [j for j in range(n_dof) if j != min(2, n_dof - 1)]
    elif isinstance(joint, (int, np.integer)) and 0 <= joint < n_dof:
        held = [int(joint)]
    else:
        raise ValueError(f"joint must be a joint's index from 0 to {n_dof - 1}; got {joint!r}")
    task = 6 if Q is not None else 3  # the numbers a target fixes (free_axis leaves more room)
    q, solved = tracked(solver, P, Q, start)
    step, at = _largest_step(start, q)
    planned = False
    jumps = step > max_step and solved.all()
    for joint in held if jumps and n_dof > task else []:
        path = _Planner(solver, P, Q, joint, spacing, max_step).plan(start, q[0], every)
        if path is not None:
            q, planned = path, True
            step, at = _largest_step(start, q)
            break
    if jumps and not planned:  # the branches: where two meet, a way can change from one to another
        path = _branches(solver, P, Q, start, q, every, max_step)
        if path is not None:
            q, planned = path, True
            step, at = _largest_step(start, q)
    reason = ""
    if step > max_step:
        reason = (
            f"no path found without a step over {max_step} rad: the largest, {step:.3f} rad, "
            f"is to target {at}"
        )
    return PathAnswer(q, solved, step, at, planned, reason, time.perf_counter() - started)


def tracked(solver, P, Q, start):
    """Each target solved from the last answer (the first from ``start``), as a stream is:
    the answers (NaN rows where rejected) and whether each was solved."""
    q = np.full((len(P), solver.arm.dof), np.nan)
    solved = np.zeros(len(P), bool)
    last = start
    for i in range(len(P)):
        answer = solver.solve(P[i], None if Q is None else Q[i], current=last, last=last)
        solved[i] = answer.solved
        if answer.q is not None:
            q[i] = last = answer.q
    return q, solved


def _largest_step(start, q) -> tuple[float, int]:
    steps = np.abs(np.diff(np.vstack([start, q]), axis=0)).max(axis=1)
    steps = np.where(np.isnan(steps), np.inf, steps)
    at = int(np.argmax(steps))
    return float(steps[at]), at


class _Planner:
    def __init__(self, solver, P, Q, joint, spacing, max_step):
        self.fast = solver.with_settings(restarts=0)  # a sample that misses just ends
        self.P, self.Q, self.joint, self.max_step = P, Q, joint, max_step
        lo, hi = solver.arm.lower[joint], solver.arm.upper[joint]
        self.grid = np.arange(lo + 1e-6, hi, spacing)
        self.spacing, self._held = spacing, {}

    def held(self, i: int):
        """The solver with the joint held at grid value ``i`` (its range shrunk to a point)."""
        if i not in self._held:
            other = self.fast._rebuilt()
            chain = parts(other._model)[0]
            chain[self.joint, LO] = self.grid[i] - 1e-9
            chain[self.joint, HI] = self.grid[i] + 1e-9
            self._held[i] = other
        return self._held[i]

    def quat(self, k):
        return None if self.Q is None else self.Q[k]

    def walk(self, k: int, q0) -> list:
        """The stretch of self-motion through ``q0`` at target ``k``, a sample per grid value."""
        i0 = int(np.argmin(np.abs(self.grid - q0[self.joint])))
        out = []
        for i, sign in ((i0, 1), (i0 - 1, -1)):
            q = q0
            while 0 <= i < len(self.grid):
                answer = self.held(i).solve(self.P[k], self.quat(k), current=q, last=q)
                if not answer.solved or np.abs(answer.q - q).max() > self.max_step:
                    break
                q = answer.q
                out.append(q)
                i += sign
        return out

    def samples(self, k: int, through: np.ndarray) -> np.ndarray:
        """Samples of every stretch of self-motion at target ``k`` that holds one of
        ``through`` (in their place), and those of ``through`` whose walk found nothing."""
        found, kept = [], []
        for q in through:
            if found and np.abs(np.array(found) - q).max(axis=1).min() <= 2 * self.spacing:
                continue  # on a stretch already walked
            walked = self.walk(k, q)
            found += walked
            if not walked:
                kept.append(q)
        return np.array(found + kept).reshape(-1, through.shape[1])

    def plan(self, start, first, every: int) -> np.ndarray | None:
        """Joints for every target, or None when the samples hold no way through.
        ``first``: the tracked answer to the first target (within ``max_step`` of ``start``)."""
        n, max_step = len(self.P), self.max_step
        layer = self.samples(0, first[None])
        # the arm is at the start: a way begins at an answer within a step of it
        gap = np.abs(layer - start)
        cost = np.where(gap.max(axis=1) <= max_step, (gap**2).sum(axis=1), np.inf)
        reached = np.isfinite(cost)  # only what a way from the start reaches is carried on
        layer, cost = layer[reached], cost[reached]
        layers, parents = [layer], []
        for k in range(1, n):
            prev = layers[-1]
            batch = self.fast.solve_batch(
                np.repeat(self.P[k][None], len(prev), 0),
                None if self.Q is None else np.repeat(self.Q[k][None], len(prev), 0),
                current=prev,
                warm=prev[:, None, :],
            )
            on = batch.solved & (np.abs(batch.q - prev).max(axis=1) <= max_step)
            layer = batch.q[on]
            if k % every == 0 and len(layer):
                layer = self.samples(k, layer)
            if not len(layer):
                return None
            gap = np.abs(layer[:, None] - prev[None])  # (new, old, dof)
            total = np.where(
                gap.max(axis=2) <= max_step, cost[None] + (gap**2).sum(axis=2), np.inf
            )
            parent = np.argmin(total, axis=1)
            cost = total[np.arange(len(layer)), parent]
            reached = np.isfinite(cost)
            if not reached.any():
                return None
            layer, cost, parent = layer[reached], cost[reached], parent[reached]
            layers.append(layer)
            parents.append(parent)
        j = int(np.argmin(cost))
        q = np.empty((n, len(start)))
        for k in range(n - 1, -1, -1):
            q[k] = layers[k][j]
            if k > 0:
                j = parents[k - 1][j]
        return q


def _branches(solver, P, Q, start, tracked_q, every: int, max_step: float, k: int = 8):
    """A way along the branches of answers, for an arm without self-motion (or where sampling
    it found none). Its answers to a pose are isolated, on branches that meet at singular poses
    (a wrist straight): crossing one, tracking can leave on either branch, and the one it takes
    may end at a joint limit further on. Here every ``every`` targets the distinct answers
    (``solutions=k``) and the tracked one are taken, each tracked forwards to the next such
    target and backwards to the one before; where a forward and a backward track meet (at the
    singular pose) the cheapest way can change branch. None when it finds no way through."""
    fast = solver.with_settings(restarts=0)
    n, dof = len(P), len(start)
    marks = sorted(set(range(0, n, every)) | {n - 1})
    points = [[] for _ in range(n)]

    def quat(i):
        return None if Q is None else Q[i]

    def track(q, ks):
        for i in ks:
            if not len(q):
                return
            batch = fast.solve_batch(
                np.repeat(P[i][None], len(q), 0),
                None if Q is None else np.repeat(Q[i][None], len(q), 0),
                current=q,
                warm=q[:, None, :],
            )
            on = batch.solved & (np.abs(batch.q - q).max(axis=1) <= max_step)
            q = batch.q[on]
            points[i].append(q)

    samples = {}
    for m in marks:
        found = [a.q for a in solver.solve(P[m], quat(m), solutions=k) if a.status == "solved"]
        if np.all(np.isfinite(tracked_q[m])):
            found.append(tracked_q[m])
        samples[m] = np.array(found).reshape(-1, dof)
        points[m].append(samples[m])
    for a, b in zip(marks[:-1], marks[1:]):
        track(samples[a], range(a + 1, b + 1))  # forwards
        track(samples[b], range(b - 1, a - 1, -1))  # and backwards
    layers = [np.concatenate(p) for p in points]
    gap = np.abs(layers[0] - start)
    cost = np.where(gap.max(axis=1) <= max_step, (gap**2).sum(axis=1), np.inf)
    parents = []
    for i in range(1, n):
        gap = np.abs(layers[i][:, None] - layers[i - 1][None])  # (new, old, dof)
        total = np.where(gap.max(axis=2) <= max_step, cost[None] + (gap**2).sum(axis=2), np.inf)
        if not len(total) or not np.isfinite(total).any():
            return None
        parents.append(np.argmin(total, axis=1))
        cost = total[np.arange(len(total)), parents[-1]]
    j = int(np.argmin(cost))
    if not np.isfinite(cost[j]):
        return None
    q = np.empty((n, dof))
    for i in range(n - 1, -1, -1):
        q[i] = layers[i][j]
        if i > 0:
            j = parents[i - 1][j]
    return q
