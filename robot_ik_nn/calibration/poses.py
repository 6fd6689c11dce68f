"""Where a live calibration moves the arm, and the gate every move passes.

:class:`MoveGate` judges a goal and the straight joint path to it: inside the joint limits with
a margin, no self-collision and nothing below the table plane (the compiled collision model
with the plane as an obstacle), the tool inside the workspace box, and a duration no shorter
than the joint speed limits (scaled) allow (safety.gate_command).

:func:`plan_poses` chooses the poses the project's way, as the explore learner's schedule does:
random joints first, their share fading (``epsilon``) as the network's own proposals take over,
for targets spread over the workspace (farthest-point sampled from reachable poses), so the
measurements cover where the arm will be used. Every planned pose passes the gate on its own;
:func:`visiting_order` then orders them for short moves whose paths pass it too.

No ROS, no pybullet, no torch: numpy and the compiled solver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ik.collision import for_arm
from ..safety import JointBounds, gate_command

PATH_STEP = 0.05  # rad (m): the largest joint step between two checked points of a path


@dataclass(frozen=True)
class Workspace:
    table_z: float = 0.0  # the table's height in the base frame; the arm keeps above it
    box_min: tuple = (-1.0, -1.0, 0.0)  # the tool stays inside this box (base frame, m)
    box_max: tuple = (1.0, 1.0, 1.0)

    def __post_init__(self):
        lo, hi = np.asarray(self.box_min, float), np.asarray(self.box_max, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(np.r_[lo, hi])):
            raise ValueError(f"workspace box: min and max are 3 finite numbers each, got "
                             f"{list(self.box_min)} and {list(self.box_max)}")
        if np.any(lo >= hi):
            raise ValueError(f"workspace box: min {lo.tolist()} is not below max {hi.tolist()}")
        if not math.isfinite(self.table_z):
            raise ValueError("table_z must be a finite height (m)")


class MoveGate:
    def __init__(self, solver, workspace: Workspace, margin: float = 0.05,
                 speed_scale: float = 0.5, collision_margin: float = 0.005):
        self.arm, self.workspace = solver.arm, workspace
        self.forward = solver.forward
        self.bounds = JointBounds.from_arm(self.arm, margin=margin, speed_scale=speed_scale)
        plane = ((0.0, 0.0, 1.0), float(workspace.table_z))
        self.collisions = for_arm(self.arm, collision_margin).with_obstacles(planes=[plane])
        self.lo, self.hi = np.asarray(workspace.box_min), np.asarray(workspace.box_max)

    def why_not(self, Q) -> str:
        """Why joint rows ``Q`` (N, dof) may not be visited ("" when every row may)."""
        Q = np.atleast_2d(np.asarray(Q, float))
        if not all(self.bounds.inside(q) for q in Q):
            return "outside the joint limits less the margin"
        P, _ = self.forward(Q)
        outside = np.any((P < self.lo) | (P > self.hi), axis=1)
        if outside.any():
            p = P[int(np.argmax(outside))]
            return (f"the tool would leave the workspace box (at {np.round(p, 3).tolist()} m; "
                    f"box {self.lo.tolist()} .. {self.hi.tolist()})")
        hits = self.collisions.in_collision_batch(Q)
        if hits.any():
            return "a self-collision or a link below the table plane (z = " \
                f"{self.workspace.table_z} m) on the way"
        return ""

    def path(self, start, goal) -> np.ndarray:
        """Points of the straight joint path from ``start`` to ``goal``, both included."""
        start, goal = np.asarray(start, float), np.asarray(goal, float)
        n = max(1, int(np.ceil(np.max(np.abs(goal - start)) / PATH_STEP)))
        return start + np.linspace(0.0, 1.0, n + 1)[:, None] * (goal - start)

    def move(self, current, goal):
        """(the command to ``goal``, "") when the move passes, or (None, why not)."""
        why = self.why_not(self.path(current, goal)[1:])
        if why:
            return None, why
        command = gate_command(goal, current, self.bounds)
        if command is None:
            return None, "the safety gate refused the goal (limits or speeds)"
        return command, ""

    def travel(self, a, b) -> float:
        """Seconds to move from ``a`` to ``b`` at the scaled speed limits."""
        return float(np.max(np.abs(np.asarray(b) - np.asarray(a)) / self.bounds.velocity))


@dataclass(frozen=True)
class Pose:
    q: np.ndarray
    source: str  # "random" or "network"


def epsilon(k: int, total: int, decay_until: float = 0.5, end: float = 0.1) -> float:
    """The share of random joints at pose ``k`` of ``total``: 1 at first, fading linearly to
    ``end`` by ``decay_until`` of the way (the explore learner's schedule)."""
    f = min(1.0, k / max(1.0, decay_until * total))
    return 1.0 + (end - 1.0) * f


def _random_free(gate: MoveGate, rng, count: int, tries: int = 200) -> np.ndarray:
    lo, hi = gate.bounds.lo, gate.bounds.hi
    out = []
    for _ in range(tries):
        Q = rng.uniform(lo, hi, size=(max(64, 4 * count), len(lo)))
        P, _ = gate.forward(Q)
        inside = np.all((P >= gate.lo) & (P <= gate.hi), axis=1)
        Q = Q[inside]
        Q = Q[~gate.collisions.in_collision_batch(Q)] if len(Q) else Q
        out.extend(Q)
        if len(out) >= count:
            return np.array(out[:count])
    raise ValueError(
        f"only {len(out)} of {count} random joint sets keep the tool inside the workspace box "
        f"{gate.lo.tolist()} .. {gate.hi.tolist()} clear of the table and of the arm itself: "
        "give a larger box or a lower table"
    )


def _spread(P: np.ndarray, count: int, rng) -> np.ndarray:
    """Indices of ``count`` rows of ``P`` chosen far from each other (farthest-point)."""
    chosen = [int(rng.integers(len(P)))]
    gap = np.linalg.norm(P - P[chosen[0]], axis=1)
    while len(chosen) < min(count, len(P)):
        k = int(np.argmax(gap))
        chosen.append(k)
        gap = np.minimum(gap, np.linalg.norm(P - P[k], axis=1))
    return np.array(chosen)


def plan_poses(solver, gate: MoveGate, count: int, seed: int = 0, decay_until: float = 0.5,
               end: float = 0.1) -> list[Pose]:
    """``count`` poses: random joints or the network's proposal for a spread target, by the
    schedule :func:`epsilon`; a proposal the gate refuses is replaced by random joints."""
    rng = np.random.default_rng(seed)
    kinds = [rng.random() < epsilon(k, count, decay_until, end) for k in range(count)]
    n_net = kinds.count(False)
    poses = [Pose(q, "random") for q in _random_free(gate, rng, count - n_net)]
    if n_net and solver.network is not None:
        reachable = _random_free(gate, rng, 20 * n_net)
        P, R = solver.forward(reachable)
        pick = _spread(P, n_net, rng)
        seeds = solver.network_seeds(P[pick], R[pick])  # (n_net, heads, dof)
        for k in range(len(pick)):
            heads = seeds[k]
            Ph, _ = solver.forward(heads)
            for h in np.argsort(np.linalg.norm(Ph - P[pick[k]], axis=1)):
                if not gate.why_not(heads[h]):
                    poses.append(Pose(heads[h].copy(), "network"))
                    break
    short = count - len(poses)
    if short > 0:
        poses += [Pose(q, "random") for q in _random_free(gate, rng, short)]
    return poses


def visiting_order(gate: MoveGate, start, poses: list[Pose]) -> list[Pose]:
    """The poses in a short order: from ``start``, the nearest (in travel time) whose straight
    path passes the gate, then on from there; poses no path reaches come last."""
    left, out, at = list(poses), [], np.asarray(start, float)
    while left:
        times = [gate.travel(at, p.q) for p in left]
        for k in np.argsort(times):
            if not gate.why_not(gate.path(at, left[k].q)[1:]):
                break
        else:
            out += left
            break
        out.append(left.pop(int(k)))
        at = out[-1].q
    return out
