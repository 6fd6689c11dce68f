"""Joints for a whole Cartesian path known beforehand, with no step between two answers over
``max_step`` where the arm has such a path (``Solver.solve_path``).

Tracking one target at a time (``solve(..., current=, last=)``) cannot look ahead. On a 7-joint
arm a pose leaves one-dimensional room, the self-motion, and the tracked answers drift along it;
they can reach a joint limit that the path later needs them past, where the only answer left is
a jump (docs/design_notes.md: "Tracking a redundant arm without jumps"). On any arm, where the
path crosses a singular pose (a wrist held straight) two branches of answers meet, and tracking
may leave on the one that later ends at a limit. Given the whole path, this plans instead
(path_planners.py):

1. Track from ``start`` target by target. Without a step over ``max_step``, that is the answer.
   On an arm with self-motion, the streams with the self-motion weighed otherwise
   (``STREAM_WEIGHTS``, IKSettings.track_limits) next: a stream costs a few milliseconds.
2. On an arm with self-motion, sample it: every few targets (``SWEEP_EVERY``: 6, then 4 where
   that finds no way), the answers along each stretch of self-motion that holds a sample,
   ``spacing`` apart (swept by continuation in one compiled call, selfmotion.py; with ``joint``,
   that joint held at values ``spacing`` apart instead). Between two sweeps every sample is
   walked on target by target, in one compiled call (walk.walk); a sample that misses its
   target, steps over ``max_step`` or collides ends there. The cheapest way through these
   layers from ``start`` to the last target (dynamic programming: a step over ``max_step`` is
   forbidden, each step costs its squared joint distance, layers.py), polished onto the targets.
3. Otherwise (no self-motion, or no way found over it) the branches: every ``every`` targets
   the distinct answers (``solutions=8``) and the tracked one (and, with self-motion, the
   stretches through them), each tracked forwards to the next such target and backwards to
   the one before, and the cheapest way through them all, which can change branch where a
   forward and a backward track meet.

ROS-Industrial's Descartes plans over sampled answers in the same way; here the samples are
tracked along the path, so neighbours stay neighbours and the layers stay small.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from .inputs import joints, rows
from .layers import polished
from .path_planners import SelfMotionPlanner, branches


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
    spacing: float = 0.1,
    every: int = 25,
) -> PathAnswer:
    """See the module's docstring. ``joint``: a joint held to sample the self-motion with
    (default none: the self-motion swept); ``spacing``: the samples' spacing along it (rad);
    ``every``: targets between the branch planner's (and a held joint's) samplings."""
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
    if joint is not None and not (isinstance(joint, (int, np.integer)) and 0 <= joint < n_dof):
        raise ValueError(f"joint must be a joint's index from 0 to {n_dof - 1}; got {joint!r}")
    # the numbers a target fixes: a free tool axis leaves one more for the self-motion
    task = 3 if Q is None else (5 if solver.settings.free_axis else 6)
    q, solved = tracked(solver, P, Q, start)
    step, at = _largest_step(start, q)
    planned = False
    jumps = step > max_step and solved.all()
    streams = [q]  # every stream's answers: more stretches of self-motion to sample
    for weight in STREAM_WEIGHTS if jumps and n_dof > task else ():
        if weight == solver.settings.track_limits:
            continue  # another stream, the self-motion weighed otherwise: as cheap as the first
        other, done = tracked(solver.with_settings(track_limits=weight), P, Q, start)
        streams.append(other)
        other_step, other_at = _largest_step(start, other)
        if done.all() and other_step <= max_step:
            q, solved, step, at, planned, jumps = other, done, other_step, other_at, True, False
            break
    walker = None
    if jumps and n_dof > task:  # the self-motion swept, or with ``joint``, sampled with it held
        walker = SelfMotionPlanner(solver, P, Q, joint, spacing, max_step)
        for sweeps in SWEEP_EVERY if joint is None else (every,):  # coarser first
            path = walker.plan(start, np.stack(streams, 1), sweeps)
            if path is not None:  # its samples walked with a looser stop: made exact
                q, planned, jumps = polished(solver, P, Q, path), True, False
                break
    # the branches: where two meet, a way can change from one to another; on an arm with
    # self-motion first without it, then with the stretches through the branches' answers;
    # without, tracked by the compiled walk, then held closer to each target, then by the full
    # policy
    if walker is not None:
        tries = ((solver, None, False), (solver, walker, False))
    else:
        tight = solver.with_settings(
            pos_tol=solver.settings.pos_tol * TIGHTER, rot_tol=solver.settings.rot_tol * TIGHTER
        )
        tries = ((solver, None, False), (tight, None, False), (solver, None, True))
    for by, through, onward in tries if jumps else ():
        path = branches(by, P, Q, start, q, every, max_step, through, onward)
        if path is not None:
            q, planned = path, True
            break
    step, at = _largest_step(start, q)
    reason = ""
    if step > max_step:
        reason = (
            f"no path found without a step over {max_step} rad: the largest, {step:.3f} rad, "
            f"is to target {at}"
        )
    return PathAnswer(q, solved, step, at, planned, reason, time.perf_counter() - started)


# The streams tried before planning, by their self-motion weight (IKSettings.track_limits): on 20
# Panda spline paths the paths that jumped were 6 (0.01), 7 (0.03), 7 (0.1), 17 (0), but not the
# same ones: 4 jumped in all four, so planning ran on 4 paths instead of 6.
STREAM_WEIGHTS = (0.01, 0.03, 0.1, 0.0)
# Targets between two sweeps of the self-motion, tried in turn: a way moves along the self-motion
# only where the samples are swept (between sweeps each is walked on alone), at most max_step per
# sweep, while the path's own joints may move 0.05 rad a target along it. On Panda path 1177 25
# lost the way at target 125; 2 and 4 found it, 4 in half the time. 6 first: on the 282 iiwa and
# 259 Panda paths of bench --tracking 500 that plan (with the network) it found a way on all
# but iiwa 1444 (at its start its own joints move along the self-motion 0.3 rad between sweeps,
# 0.02 s lost there), in 65 s of CPU against 79 (iiwa) and 45 against 54 (Panda); iiwa 1389,
# which 4 alone lost (to the branches, 1.19 s), it planned.
SWEEP_EVERY = (6, 4)
# Near a singular pose an answer within the tolerances (1 mm, 0.01 rad) can lie far from the
# exact one along the direction the arm hardly moves the tool in: tracked target by target such
# answers drift onto the branch beside and jump back later (Niryo One 1209: 0.33 rad at target
# 482 of 1000, tracked by the compiled walk and by the full policy alike). The branches tracked
# with the tolerances TIGHTER times as tight stay on theirs; their answers meet the solver's own.
TIGHTER = 0.01


def tracked(solver, P, Q, start, seconds=None):
    """Each target solved from the last answer (the first from ``start``), as a stream is, its
    last step carried on (``previous=``, IKSettings.carry_step): the answers (NaN rows where
    rejected) and whether each was solved. ``seconds`` (n,): each call's time written there."""
    q = np.full((len(P), solver.arm.dof), np.nan)
    solved = np.zeros(len(P), bool)
    last, previous, clock = start, None, time.perf_counter
    for i in range(len(P)):
        began = clock() if seconds is not None else 0.0
        answer = solver.solve(
            P[i], None if Q is None else Q[i], current=last, last=last, previous=previous
        )
        if seconds is not None:
            seconds[i] = clock() - began
        solved[i] = answer.solved
        if answer.q is not None:
            previous, last = last, answer.q
            q[i] = last
    return q, solved


def _largest_step(start, q) -> tuple[float, int]:
    steps = np.abs(np.diff(np.vstack([start, q]), axis=0)).max(axis=1)
    steps = np.where(np.isnan(steps), np.inf, steps)
    at = int(np.argmax(steps))
    return float(steps[at]), at


def warm_up(solver) -> None:
    """Make every compiled call ``solve_path`` can make once (compiled, or loaded from numba's
    cache), so that a first path costs what a second does: a path of two targets, the base
    turned by 0.4 of its range between them, that no way crosses within ``max_step`` 0.02 rad,
    so every stage runs and fails in turn (the tracking and its streams, the self-motion's
    sweeps, walks and layers, the branches and the full policy's batch), then a polish and a
    batch of the kind a planned way and ``solve_batch`` take. ``Solver.warm_up`` calls it."""
    arm = solver.arm
    mid = np.asarray(arm.mid_range, dtype=float)
    far = mid.copy()
    far[0] += 0.4 * min(float(arm.upper[0] - arm.lower[0]), 2 * np.pi)
    both = np.stack([mid, far])
    P, R = solver.forward(both)
    Q = matrix_to_quaternion(R)
    solve_path(solver, P, Q, start=mid, max_step=0.02, spacing=0.01, every=1)
    polished(solver, P, Q, both)
    solver.solve_batch(P, Q, current=both, warm=both[:, None])
