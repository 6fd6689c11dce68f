"""The planners ``solve_path`` (path.py) turns to where tracking a path steps over
``max_step``: over the sampled self-motion of an arm with room to spare, and over the branches
of answers. Both lay answers out in layers along the path and take the cheapest way through
them (layers.py)."""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from . import walk
from .layers import begin, distinct, finite, links, walk_samples, way_back
from .layout import HI, LO, parts
from .selfmotion import self_motion
from .several_answers import manipulability

# A sample of the swept self-motion that LM cannot finish from its last answer just ends (no
# seeds around it): the next sweep, SWEEP_EVERY targets on, lays the stretch out again. With the
# 64 seeds of a held joint's samples, the walk was 38 us per sample and target on Panda path 1177
# (samples at a limit that end try them all), without them 4 us.
SWEEP_TRIES = 0
# Where the path passes a singular pose (a 7-joint arm's elbow straight) two stretches of
# self-motion meet, and the swept samples may all leave on the one that later ends (iiwa 1247
# at target 76 of 1000: the path's own joints 0.17 rad from every sample, then 4 rad). Where a
# swept sample's manipulability (sqrt det J J^T) is below NEAR_SINGULAR, the sweep is seeded
# again from NUDGES copies of the most singular sample shaken by up to SHAKE rad (LM onto the
# target from each), so the other stretch's samples join the layer. On the iiwa's 24 slowest
# paths of 500, 0.005 left 1409 on the wrong stretch (its own joints' least 0.0011, at target
# 56), 0.01 none; adding the target's distinct answers (solutions=8) as seeds did not help.
NEAR_SINGULAR = 0.01
# The swept and walked samples' LM stops once the error is this fraction of the tolerances (the
# solver's own stop_fraction is 0.01): near a singular pose the last of those iterations are the
# slow ones. The way found is polished afterwards (walk.polish) down to the solver's own stop. On
# the iiwa's five slowest spline paths of 500, 3.8 s of CPU for the five against 5.0 (max 0.95 s
# against 1.22), the same ways found.
PLAN_STOP_FRACTION = 0.3
NUDGES = 8
SHAKE = 0.1


class SelfMotionPlanner:
    """Samples of the self-motion at marks along the path, walked on between them, and the
    cheapest way through them (``plan``). ``joint`` None: each mark's samples are swept along
    the self-motion (selfmotion.py), ``spacing`` apart; a joint's index: that joint held at
    values ``spacing`` apart instead (a solver per value, a sample walked per call; a stretch
    ends where the joint's value folds back), as asked for by ``solve_path(joint=)``."""

    def __init__(self, solver, P, Q, joint, spacing, max_step):
        # a sample that misses just ends; samples keep to their own stretch of self-motion
        self.fast = solver.with_settings(
            restarts=0, track_limits=0.0, stop_fraction=PLAN_STOP_FRACTION
        )
        self.P, self.Q, self.joint, self.max_step = P, Q, joint, max_step
        self.spacing, self._held = spacing, {}
        self.tries = SWEEP_TRIES if joint is None else walk.WALK_NEAR_TRIES
        if joint is not None:
            lo, hi = solver.arm.lower[joint], solver.arm.upper[joint]
            self.grid = np.arange(lo + 1e-6, hi, spacing)

    def quat(self, k):
        return None if self.Q is None else self.Q[k]

    def held(self, i: int):
        """The solver with the joint held at grid value ``i`` (its range shrunk to a point)."""
        if i not in self._held:
            other = self.fast._rebuilt()
            chain = parts(other._model)[0]
            chain[self.joint, LO] = self.grid[i] - 1e-9
            chain[self.joint, HI] = self.grid[i] + 1e-9
            self._held[i] = other
        return self._held[i]

    def near_singular(self, k: int, found: np.ndarray) -> np.ndarray:
        """Seeds for the other stretch where a row of ``found`` (swept at target ``k``) lies
        near a singular pose (NEAR_SINGULAR): the most singular row shaken (deterministic in
        ``k``); none elsewhere."""
        if not len(found):
            return found
        m = np.empty(len(found))
        manipulability(self.fast._model, np.ascontiguousarray(found), m)
        i = int(np.argmin(m))
        if m[i] >= NEAR_SINGULAR:
            return found[:0]
        shake = np.random.default_rng(k).uniform(-SHAKE, SHAKE, (NUDGES, found.shape[1]))
        arm = self.fast.arm
        return np.clip(found[i] + shake, arm.lower, arm.upper)

    def walk(self, k: int, q0) -> list:
        """The stretch of self-motion through ``q0`` at target ``k``, a sample per grid value
        of the held joint."""
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
        ``through`` (in their place), and those of ``through`` that lie on none."""
        if self.joint is None:
            found = self_motion(
                self.fast, self.P[k], self.quat(k), through, self.spacing, self.max_step
            )
            other = self.near_singular(k, found)
            if len(other):  # the stretches through the other seeds too (those swept kept)
                found = self_motion(
                    self.fast,
                    self.P[k],
                    self.quat(k),
                    other,
                    self.spacing,
                    self.max_step,
                    swept=found,
                )
            return found if len(found) else through
        found, kept, trees = [], [], []  # a k-d tree per stretch walked: no row tested twice
        for q in through:
            if any(tree.query(q, p=np.inf)[0] <= 2 * self.spacing for tree in trees):
                continue  # on a stretch already walked
            walked = self.walk(k, q)
            if walked:
                found += walked
                trees.append(cKDTree(np.array(walked)))
            else:
                kept.append(q)
        return np.array(found + kept).reshape(-1, through.shape[1])

    def plan(self, start, streams, every: int) -> np.ndarray | None:
        """Joints for every target, or None when the samples hold no way through.
        ``streams`` (n, S, dof): the tracked answers to every target (the first within
        ``max_step`` of ``start``), of one stream or several. Between two marks (``every``
        targets apart) each sample is walked on alone, in one compiled call for the stretch
        (walk.walk): its way there is itself, one row per target; at a mark the samples of
        the self-motion through those that arrived and through the streams' answers there
        are linked to the targets before (the cheapest way to each, within a step). The
        streams' stretches keep a way that arrived samples lose: where the path crosses a
        singular pose two stretches meet, and the walked samples may all leave on one."""
        n, max_step = len(self.P), self.max_step
        layer = self.samples(0, np.vstack([start, finite(streams[0])]))  # start: its stretch
        layer, cost = begin(layer, start, max_step)
        first_layer, blocks = layer, []
        a = 0
        while a < n - 1:
            b = min(a + every, n - 1)
            ks = range(a + 1, b + 1)
            walked = walk_samples(self.fast, self.P, self.Q, ks, layer, max_step, self.tries)
            alive = np.flatnonzero(np.all(np.isfinite(walked[-1]), axis=1))
            way = np.concatenate([layer[alive][None], walked[:, alive]])  # targets a .. b
            before = cost[alive] + (np.diff(way[:-1], axis=0) ** 2).sum(axis=(0, 2))
            arrived = way[-1]
            if b % every == 0 or b == n - 1:
                new = self.samples(b, np.vstack([arrived, finite(streams[b])]))
            else:
                new = arrived
            kept, parent, cost = links(new, way[-2], before, max_step)
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


def branches(
    solver, P, Q, start, tracked_q, every: int, max_step: float, walker, onward=False, k=8
):
    """A way along the branches of answers, for an arm without self-motion, or where
    sampling its self-motion found none. Without self-motion the answers to a pose are
    isolated, on branches that meet at singular poses (a wrist straight): crossing one, tracking
    can leave on either branch, and the one it takes may end at a joint limit further on. Here
    every ``every`` targets the distinct answers (``solutions=k``) and the tracked one are taken
    (with ``walker``, a SelfMotionPlanner, the stretches of self-motion through them too), each
    tracked forwards to the next such target and backwards to the one before, in one compiled
    call (walk.walk) per stretch; where a forward and a backward track meet (at the singular
    pose, or beside a limit the path presses on) the cheapest way can change from one to the
    other. ``onward``: tracked by the full policy instead, a batch call per target (on the
    Niryo One the compiled walk loses ways this finds, paths 1031 and 1364 of 500; it takes up
    to 15 s where the walk takes 4). None when it finds no way through."""
    fast = solver.with_settings(restarts=0, track_limits=0.0)
    # with self-motion, a track that ends is not the branch's last: its stretch was sampled
    tries = walk.WALK_NEAR_TRIES if walker is None else SWEEP_TRIES
    n, dof = len(P), len(start)
    marks = sorted(set(range(0, n, every)) | {n - 1})
    points = [[] for _ in range(n)]

    def track(q, ks, keep_last, before=None):
        """``q`` tracked through targets ``ks`` (``before``: each row's answer to the target
        before, where known), each target's survivors kept as its points (the last's only with
        ``keep_last``); returns those that arrive at the last, and their answers before."""
        if onward:
            for t, i in enumerate(ks):
                q = _onward(fast, P, Q, i, q, max_step)
                if keep_last or t < len(ks) - 1:
                    points[i].append(q)
            return q, q
        walked = walk_samples(fast, P, Q, ks, q, max_step, tries, before)
        for t, i in enumerate(ks):
            if keep_last or t < len(ks) - 1:
                points[i].append(finite(walked[t]))
        arrived = np.all(np.isfinite(walked[-1]), axis=1)
        last = walked[-2] if len(ks) > 1 else q
        return walked[-1][arrived], last[arrived]

    def sample(m, arrived):
        """The answers at target ``m``: the distinct ones, the tracked one and the forward
        tracks arriving there (so that a way goes on through every mark)."""
        quat = None if Q is None else Q[m]
        found = [a.q for a in solver.solve(P[m], quat, solutions=k) if a.status == "solved"]
        found = np.array(found + [tracked_q[m]] + list(arrived)).reshape(-1, dof)
        found = distinct(finite(found), 1e-3)
        swept = found if walker is None else walker.samples(m, found)
        points[m].append(swept)
        return found, swept  # on an arm with self-motion, its stretches through them too

    def previous(rows, arrived, last):
        """Each of ``rows``' answer to the target before: an arrived track's, else itself
        (a walk from it predicts its first step from the track's last)."""
        known = {row.tobytes(): q for row, q in zip(arrived, last)}
        return np.array([known.get(row.tobytes(), row) for row in rows]).reshape(rows.shape)

    here, swept = sample(marks[0], [])
    before = swept
    for a, b in zip(marks[:-1], marks[1:]):
        # forwards (b: sampled next), each track's first step predicted from its last
        arrived, last = track(swept, list(range(a + 1, b + 1)), False, before)
        here, swept = sample(b, arrived)
        before = previous(swept, arrived, last)
        track(here, list(range(b - 1, a - 1, -1)), True)  # and backwards, the answers alone
    layer, cost = begin(distinct(np.concatenate(points[0]), 1e-3), start, max_step)
    layers, parents = [layer], []
    for i in range(1, n):
        layer = distinct(np.concatenate(points[i]), 1e-3)  # a forward and a backward track on
        kept, parent, cost = links(layer, layers[-1], cost, max_step)  # one branch: one point
        if not len(kept):
            return None
        layers.append(layer[kept])
        parents.append(parent)
    return way_back(layers, parents, cost)
