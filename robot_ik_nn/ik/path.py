"""Joints for a whole Cartesian path known beforehand, with no step between two answers over
``max_step`` where the arm has such a path (``Solver.solve_path``).

Tracking one target at a time (``solve(..., current=, last=)``) cannot look ahead. On a 7-joint
arm a pose leaves one-dimensional room, the self-motion, and the tracked answers drift along it;
they can reach a joint limit that the path later needs them past, where the only answer left is
a jump (docs/design_notes.md: "Tracking a redundant arm without jumps"). On any arm, where the
path crosses a singular pose (a wrist held straight) two branches of answers meet, and tracking
may leave on the one that later ends at a limit. Given the whole path, this plans instead:

1. Track from ``start`` target by target. Without a step over ``max_step``, that is the answer.
   On an arm with self-motion, the streams with the self-motion weighed otherwise
   (``STREAM_WEIGHTS``, IKSettings.track_limits) next: a stream costs a few milliseconds, a plan
   up to a second.
2. On an arm with self-motion, sample it: at the first target and every ``every`` targets after
   it, the answers with one joint (``joint``; by default the third, then each other in turn
   until a way is found: where the held joint's value folds back along the self-motion, a
   stretch is cut short) held at values ``spacing`` apart, walked outwards from the tracked
   answers (each refined from the last, so one stretch of self-motion at a time).
   Every sample is walked on target by target, a stretch between two samplings in one compiled
   call (kernel.walk); a sample that misses its target, steps over ``max_step`` or collides
   ends there.
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
from scipy.spatial import cKDTree

from . import kernel
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
    # the numbers a target fixes: a free tool axis leaves one more for the self-motion
    task = 3 if Q is None else (5 if solver.settings.free_axis else 6)
    q, solved = tracked(solver, P, Q, start)
    step, at = _largest_step(start, q)
    planned = False
    jumps = step > max_step and solved.all()
    for weight in STREAM_WEIGHTS if jumps and n_dof > task else ():
        if weight == solver.settings.track_limits:
            continue  # another stream, the self-motion weighed otherwise: as cheap as the first
        other, done = tracked(solver.with_settings(track_limits=weight), P, Q, start)
        other_step, other_at = _largest_step(start, other)
        if done.all() and other_step <= max_step:
            q, solved, step, at, planned, jumps = other, done, other_step, other_at, True, False
            break
    planners = {}  # each holds the solvers it rebuilt with its joint held: built once
    for joint in held if jumps and n_dof > task else []:
        planners[joint] = _Planner(solver, P, Q, joint, spacing, max_step)
        path = planners[joint].plan(start, q[0], every)
        if path is not None:
            q, planned = path, True
            step, at = _largest_step(start, q)
            break
    if jumps and not planned:  # the branches: where two meet, a way can change from one to another
        walker = planners.get(held[0]) if n_dof > task else None
        path = _branches(solver, P, Q, start, q, every, max_step, walker)
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


# The streams tried before planning, by their self-motion weight (IKSettings.track_limits): on 20
# Panda spline paths the paths that jumped were 6 (0.01), 7 (0.03), 7 (0.1), 17 (0), but not the
# same ones: 4 jumped in all four, so planning ran on 4 paths instead of 6.
STREAM_WEIGHTS = (0.01, 0.03, 0.1, 0.0)


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
        # a sample that misses just ends; samples keep to their own stretch of self-motion
        self.fast = solver.with_settings(restarts=0, track_limits=0.0)
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
            while 0 <= i < len(self.grid):  # a step each: a miss ends the stretch at once
                q = walk_samples(self.held(i), self.P, self.Q, [k], q[None], self.max_step)[0, 0]
                if not np.isfinite(q).all():
                    break
                out.append(q)
                i += sign
        return out

    def samples(self, k: int, through: np.ndarray) -> np.ndarray:
        """Samples of every stretch of self-motion at target ``k`` that holds one of
        ``through`` (in their place), and those of ``through`` whose walk found nothing."""
        found, kept = [], []
        walked_so_far = np.zeros((0, through.shape[1]))  # ``found`` as one array, for the test
        for q in through:
            if len(walked_so_far) and np.abs(walked_so_far - q).max(axis=1).min() <= (
                2 * self.spacing
            ):
                continue  # on a stretch already walked
            walked = self.walk(k, q)
            if walked:  # the array rebuilt once per walk, not once per row tested (on the iiwa
                found += walked  # that was a third of a branch plan's time)
                walked_so_far = np.array(found)
            else:
                kept.append(q)
        return np.array(found + kept).reshape(-1, through.shape[1])

    def plan(self, start, first, every: int) -> np.ndarray | None:
        """Joints for every target, or None when the samples hold no way through.
        ``first``: the tracked answer to the first target (within ``max_step`` of ``start``).
        Between two marks (``every`` targets apart) each sample is walked on alone, in one
        compiled call for the stretch (kernel.walk): its way there is itself, one row per
        target; at a mark the samples of the self-motion through those that arrived are linked
        to the targets before (the cheapest way to each, within a step)."""
        n, max_step = len(self.P), self.max_step
        layer = self.samples(0, first[None])
        layer, cost = _begin(layer, start, max_step)
        first_layer, blocks = layer, []
        a = 0
        while a < n - 1:
            b = min(a + every, n - 1)
            walked = walk_samples(self.fast, self.P, self.Q, range(a + 1, b + 1), layer, max_step)
            alive = np.flatnonzero(np.all(np.isfinite(walked[-1]), axis=1))
            way = np.concatenate([layer[alive][None], walked[:, alive]])  # targets a .. b
            before = cost[alive] + (np.diff(way[:-1], axis=0) ** 2).sum(axis=(0, 2))
            arrived = way[-1]
            new = self.samples(b, arrived) if b % every == 0 and len(arrived) else arrived
            kept, parent, cost = _links(new, way[-2], before, max_step)
            if not len(kept):
                return None
            layer = new[kept]
            blocks.append((a, way[1:-1], alive, parent, layer))
            a = b
        if not blocks:  # a path of one target
            return first_layer[[int(np.argmin(cost))]]
        q = np.empty((n, first_layer.shape[1]))
        j = int(np.argmin(cost))
        for a, way, alive, parent, layer in reversed(blocks):
            q[a + 1 + len(way)] = layer[j]
            i = parent[j]
            q[a + 1 : a + 1 + len(way)] = way[:, i]
            j = alive[i]
        q[0] = first_layer[j]
        return q


def walk_samples(fast, P, Q, ks, q, max_step):
    """Rows ``q`` (S, dof) tracked through targets ``ks`` (kernel.walk, with ``fast``'s arm and
    settings): (len(ks), S, dof), NaN from where a sample ended."""
    ks = np.asarray(ks, dtype=np.int64)
    out = np.empty((len(ks), len(q), fast.arm.dof))
    if len(ks) and len(q):
        quats = np.zeros((len(P), 4)) if Q is None else np.ascontiguousarray(Q, dtype=float)
        kernel.walk(
            fast._model,
            np.ascontiguousarray(P, dtype=float),
            quats,
            Q is not None,
            ks,
            np.ascontiguousarray(q, dtype=float),
            float(max_step),
            fast._scratch,
            out,
        )
    return out


def _onward(fast, P, Q, k, q, max_step):
    """Answers ``q`` tracked on to target ``k`` in one batch call (``fast``: no restarts), less
    those that miss it or step over ``max_step``."""
    if not len(q):
        return q
    batch = fast.solve_batch(
        np.repeat(P[k][None], len(q), 0),
        None if Q is None else np.repeat(Q[k][None], len(q), 0),
        current=q,
        warm=q[:, None, :],
    )
    return batch.q[batch.solved & (np.abs(batch.q - q).max(axis=1) <= max_step)]


def _near(rows, q, tolerance) -> bool:
    """Whether joints ``q`` lie within ``tolerance`` (every joint) of one of ``rows``."""
    return bool(rows) and np.abs(np.array(rows) - q).max(axis=1).min() <= tolerance


def _apart(q, tolerance):
    """``q`` less the rows within ``tolerance`` (every joint) of a row kept before them."""
    kept = []
    for row in q:
        if not _near(kept, row, tolerance):
            kept.append(row)
    return np.array(kept).reshape(-1, q.shape[1])


def _begin(layer, start, max_step):
    """The answers of the first layer a way can begin at (within a step of the arm's joints
    ``start``), and each one's cost."""
    gap = np.abs(layer - start)
    reached = gap.max(axis=1) <= max_step
    return layer[reached], (gap[reached] ** 2).sum(axis=1)


def _links(layer, prev, cost, max_step):
    """The cheapest way on to each answer of ``layer`` from the layer before (``prev``, its
    ways' costs ``cost``): a step over ``max_step`` on any joint is forbidden, a step costs its
    squared length. Returns the answers reached (indices), each one's parent in ``prev`` and
    cost; pairs within a step are found by a k-d tree, so a layer of thousands stays cheap."""
    none = np.zeros(0, int)
    if not len(layer) or not len(prev):
        return none, none, np.zeros(0)
    pairs = cKDTree(layer).sparse_distance_matrix(
        cKDTree(prev), max_step, p=np.inf, output_type="ndarray"
    )
    new, old = pairs["i"], pairs["j"]
    total = cost[old] + ((layer[new] - prev[old]) ** 2).sum(axis=1)
    order = np.lexsort((total, new))  # by answer, the cheapest first
    new, old, total = new[order], old[order], total[order]
    first = np.r_[True, new[1:] != new[:-1]] if len(new) else np.zeros(0, bool)
    return new[first], old[first], total[first]


def _way_back(layers, parents, cost) -> np.ndarray | None:
    """The cheapest way, followed back from its last answer through the parents (None when
    no way begins: a path of one target whose answers all lie over a step from the start)."""
    if not len(cost):
        return None
    j = int(np.argmin(cost))
    q = np.empty((len(layers), layers[0].shape[1]))
    for k in range(len(layers) - 1, -1, -1):
        q[k] = layers[k][j]
        if k > 0:
            j = parents[k - 1][j]
    return q


def _branches(solver, P, Q, start, tracked_q, every: int, max_step: float, walker, k: int = 8):
    """A way along the branches of answers, for an arm without self-motion, or where
    sampling its self-motion one held joint at a time found none. Without self-motion the
    answers to a pose are isolated, on branches that meet at singular poses (a wrist straight):
    crossing one, tracking can leave on either branch, and the one it takes may end at a joint
    limit further on. Here every ``every`` targets the distinct answers (``solutions=k``) and
    the tracked one are taken (with ``walker``, the stretches of self-motion through them too),
    each tracked forwards to the next such target and backwards to the one before; where a
    forward and a backward track meet (at the singular pose, or beside a limit the path presses
    on) the cheapest way can change from one to the other. None when it finds no way through."""
    fast = solver.with_settings(restarts=0, track_limits=0.0)
    n, dof = len(P), len(start)
    marks = sorted(set(range(0, n, every)) | {n - 1})
    points = [[] for _ in range(n)]

    def quat(i):
        return None if Q is None else Q[i]

    def track(q, ks, keep_last):
        """``q`` tracked through targets ``ks`` by the full policy (a batch call per target: on
        the Niryo One the compiled walk lost ways this finds, paths 1031 and 1364 of 500), each
        target's survivors kept as its points (the last's only with ``keep_last``); returns
        those that arrive at the last."""
        for t, i in enumerate(ks):
            q = _onward(fast, P, Q, i, q, max_step)
            if keep_last or t < len(ks) - 1:
                points[i].append(q)
        return q

    def sample(m, arrived):
        """The answers at target ``m``: the distinct ones, the tracked one and the forward
        tracks arriving there (so that a way goes on through every mark)."""
        found = [a.q for a in solver.solve(P[m], quat(m), solutions=k) if a.status == "solved"]
        found = np.array(found + [tracked_q[m]] + list(arrived)).reshape(-1, dof)
        found = _apart(found[np.all(np.isfinite(found), axis=1)], 1e-3)
        if walker is not None:  # and, on an arm with self-motion, the stretches through them
            found = walker.samples(m, found)
        points[m].append(found)
        return found

    here = sample(marks[0], [])
    for a, b in zip(marks[:-1], marks[1:]):
        arrived = track(here, list(range(a + 1, b + 1)), False)  # forwards (b: sampled next)
        here = sample(b, arrived)
        track(here, list(range(b - 1, a - 1, -1)), True)  # and backwards
    layer, cost = _begin(np.concatenate(points[0]), start, max_step)
    layers, parents = [layer], []
    for i in range(1, n):
        layer = np.concatenate(points[i])
        kept, parent, cost = _links(layer, layers[-1], cost, max_step)
        if not len(kept):
            return None
        layers.append(layer[kept])
        parents.append(parent)
    return _way_back(layers, parents, cost)
